//! The SQLite backend: one database (WAL) on a dedicated thread. Async callers send it closures
//! and await the result, so SQLite never blocks the runtime (invariant 5). Nothing outside this
//! folder writes SQL; each file implements one role of `crate::store` for [`SqliteStore`].
//!
//! **Group commit.** The jobs waiting when the thread comes round run in one transaction (each
//! job's own transaction is a savepoint inside it), and every caller hears its result only after
//! that transaction committed: a write is acknowledged only once it is durable, as before, but
//! the WAL is written once for the whole group instead of once per job. If the commit fails,
//! every caller of the group gets the error.
//!
//! **Search indexing** is batched the same way: messages reach the full-text indexes about once
//! a second and before every search, not in the transaction that wrote them.

mod cron;
mod inbox;
mod leases;
pub(super) mod migrations;
mod outbox;
mod retention;
pub(super) mod search;
mod sessions;
mod settings;

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::{Durability, Result, StoreError};

/// Statements through the connection's cache: parsed once, then reused on every call (the
/// plain `execute`/`query_row` parse the SQL each time, a good part of a short write's cost).
pub(super) trait Cached {
    fn exec<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize>;
    fn one<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: rusqlite::Params,
        F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>;
}

impl Cached for Connection {
    fn exec<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    fn one<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: rusqlite::Params,
        F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    {
        self.prepare_cached(sql)?.query_row(params, f)
    }
}

/// Tells the caller its result; given the commit's error if the group's commit failed.
type Reply = Box<dyn FnOnce(Option<StoreError>) + Send>;
type Job = Box<dyn FnOnce(&mut Connection) -> Reply + Send>;

/// Most jobs committed together.
const MAX_GROUP: usize = 64;

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
        // Every statement of the hot paths stays parsed.
        conn.set_prepared_statement_cache_capacity(128);
        migrations::apply(&mut conn)?;
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("hermes-store".into())
            .spawn(move || serve(&mut conn, &rx))
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
            let result = f(conn);
            Box::new(move |failed: Option<StoreError>| {
                let _ = tx.send(match failed {
                    Some(e) => Err(e),
                    None => result,
                });
            })
        });
        self.jobs.send(job).map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }
}

/// How often the store thread brings the full-text indexes up to date (searches do it first
/// anyway; see `search::index_pending`).
const INDEX_EVERY: Duration = Duration::from_secs(1);

/// The store thread: run jobs until every handle is gone, the ones waiting together in one
/// transaction; between groups, index new messages about once a second.
fn serve(conn: &mut Connection, rx: &mpsc::Receiver<Job>) {
    let mut indexed = Instant::now();
    // Jobs ran since the last indexing (otherwise there is nothing to index: wait for a job).
    let mut dirty = true;
    loop {
        if dirty && indexed.elapsed() >= INDEX_EVERY {
            match search::index_pending(conn) {
                Ok(_) => dirty = false,
                Err(e) => tracing::warn!(error = %e, "cannot index new messages for search"),
            }
            indexed = Instant::now();
        }
        let next = if dirty {
            rx.recv_timeout(INDEX_EVERY.saturating_sub(indexed.elapsed()))
        } else {
            rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected)
        };
        let first = match next {
            Ok(job) => job,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let _ = search::index_pending(conn);
                return;
            }
        };
        dirty = true;
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        if group.len() == 1 || conn.execute_batch("BEGIN IMMEDIATE").is_err() {
            // Alone (or the group cannot begin): each job in its own transaction.
            for job in group {
                job(conn)(None);
            }
            continue;
        }
        let replies: Vec<Reply> = group.into_iter().map(|job| job(conn)).collect();
        match conn.execute_batch("COMMIT") {
            Ok(()) => replies.into_iter().for_each(|reply| reply(None)),
            Err(e) => {
                tracing::error!(error = %e, jobs = replies.len(), "a group of store writes could not be committed");
                let _ = conn.execute_batch("ROLLBACK");
                for reply in replies {
                    reply(Some(StoreError::Commit(e.to_string())));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
