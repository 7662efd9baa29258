//! Durable state in one SQLite database (WAL): sessions, messages with full-text search, the
//! inbox, the outbox and turn records.
//!
//! The connection lives on a dedicated thread; async callers send it closures and await the
//! result, so SQLite never blocks the runtime (invariant 5). The methods in `inbox.rs`,
//! `outbox.rs`, `sessions.rs` and `search/` are the narrow interface the rest of the daemon uses; nothing
//! outside this module writes SQL.

mod cron;
mod history;
mod inbox;
mod migrations;
mod outbox;
mod retention;
mod search;
mod sessions;
mod settings;

use std::path::Path;
use std::sync::mpsc;

use rusqlite::Connection;
use tokio::sync::oneshot;

pub use cron::{CronJob, CronRun, JobOrigin};
pub use inbox::{InboxOutcome, InboxRow, InboxStatus};
pub use outbox::{OutboxRow, OutboxStats};
pub use search::{FoundMessage, SearchScope, SessionHits, SessionSummary, search_terms};
pub use sessions::{SessionRow, SessionStats, StoredMessage, TurnCommit, TurnRecord};
pub use settings::key_scope;

/// A store failure. The message is safe to log (no message bodies, no secrets).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("cannot open the database at {path}: {reason}")]
    Open { path: String, reason: String },
    #[error("the database thread has stopped")]
    Closed,
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Corrupt(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// Handle to the database thread. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    jobs: mpsc::Sender<Job>,
}

impl Store {
    /// Open (creating if needed) the database at `path` and bring its schema up to date.
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Open {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
        }
        let conn = Connection::open(path).map_err(|e| StoreError::Open {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Self::start(conn)
    }

    /// A private in-memory database (unit tests, benchmarks).
    pub fn open_in_memory() -> Result<Store> {
        Self::start(Connection::open_in_memory()?)
    }

    fn start(mut conn: Connection) -> Result<Store> {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        migrations::apply(&mut conn)?;
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("hermes-store".into())
            .spawn(move || {
                for job in rx {
                    job(&mut conn);
                }
            })
            .map_err(|e| StoreError::Open {
                path: "(thread)".into(),
                reason: e.to_string(),
            })?;
        Ok(Store { jobs: tx })
    }

    /// Run `f` on the database thread and wait for its result.
    pub async fn call<R, F>(&self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let _ = tx.send(f(conn));
        });
        self.jobs.send(job).map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }
}

#[cfg(test)]
mod tests;
