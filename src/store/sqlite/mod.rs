//! The SQLite backend: one database (WAL) on a dedicated thread. Async callers send it closures
//! and await the result, so SQLite never blocks the runtime (invariant 5). Nothing outside this
//! folder writes SQL; each file implements one role of `crate::store` for [`SqliteStore`].

mod cron;
mod inbox;
pub(super) mod migrations;
mod outbox;
mod retention;
pub(super) mod search;
mod sessions;
mod settings;

use std::path::Path;
use std::sync::mpsc;

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::{Result, StoreError};

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// Handle to the database thread. Cheap to clone.
#[derive(Clone)]
pub struct SqliteStore {
    jobs: mpsc::Sender<Job>,
}

impl SqliteStore {
    /// Open (creating if needed) the database at `path` and bring its schema up to date.
    pub fn open(path: &Path) -> Result<SqliteStore> {
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
    pub fn open_in_memory() -> Result<SqliteStore> {
        Self::start(Connection::open_in_memory()?)
    }

    fn start(mut conn: Connection) -> Result<SqliteStore> {
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
        Ok(SqliteStore { jobs: tx })
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
