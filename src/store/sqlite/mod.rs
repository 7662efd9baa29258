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

use super::{Durability, Result, StoreError};

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// Handle to the database thread. Cheap to clone.
#[derive(Clone)]
pub struct SqliteStore {
    jobs: mpsc::Sender<Job>,
}

impl SqliteStore {
    /// Open (creating if needed) the database at `path` and bring its schema up to date.
    /// The folders it creates are 0700 and the database 0600 (SQLite gives its WAL and shared
    /// memory files the database's mode): it holds every conversation.
    pub fn open(path: &Path, durability: Durability) -> Result<SqliteStore> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
        let failed = |e: std::io::Error| StoreError::Open {
            path: path.display().to_string(),
            reason: e.to_string(),
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(failed)?;
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .map_err(failed)?;
        // A database from before (or copied in) is tightened too; not ours to change: leave it.
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
        let conn = Connection::open(path).map_err(|e| StoreError::Open {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Self::start(conn, durability)
    }

    /// A private in-memory database (tests, benchmarks).
    pub fn open_in_memory() -> Result<SqliteStore> {
        Self::start(Connection::open_in_memory()?, Durability::Normal)
    }

    fn start(mut conn: Connection, durability: Durability) -> Result<SqliteStore> {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        let synchronous = match durability {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        };
        conn.pragma_update(None, "synchronous", synchronous)?;
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
