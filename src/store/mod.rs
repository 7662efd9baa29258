//! Durable state, behind role traits: the inbox, the outbox, sessions and their history,
//! settings, scheduled jobs, search and housekeeping. Each consumer takes the role it needs
//! (`Arc<dyn Inbox>`, `&dyn Settings`…) or the whole [`Store`]; a backend implements every role.
//! SQLite (`sqlite/`) is the one backend today; `suite/` is the behaviour every backend must
//! show, written once.

mod cron;
pub mod fence;
mod inbox;
mod leases;
mod maintenance;
mod outbox;
#[cfg(feature = "postgres")]
mod postgres;
mod search;
mod sessions;
mod settings;
mod sqlite;
#[cfg(test)]
pub(crate) mod suite;

use std::path::Path;
use std::sync::Arc;

pub use cron::{CronJob, CronRun, CronStore, JobOrigin};
pub use inbox::{Inbox, InboxOutcome, InboxRow, InboxStatus};
pub use leases::{Beat, Held, Leases, ProcessInfo, ProcessRow, receive_lease, session_lease};
pub use maintenance::{Maintenance, Pruned};
pub use outbox::{Outbox, OutboxRow, OutboxStats};
#[cfg(feature = "postgres")]
pub use postgres::{CopyReport, PgStore};
pub use search::{
    FoundMessage, HITS_PER_SESSION, Search, SearchScope, SessionHits, SessionSummary,
};
pub use sessions::{
    IMPORTED_SCOPE, ImportedSession, SessionRow, SessionStats, Sessions, StoredMessage, TurnCommit,
    TurnRecord,
};
pub use settings::{Settings, key_scope};
pub use sqlite::SqliteStore;
pub use sqlite::search::search_terms;

/// A store failure. The message is safe to log (no message bodies, no secrets).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A PostgreSQL error: the server's message and SQLSTATE, or the connection's failure.
    #[error("database error: {0}")]
    Postgres(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("cannot open the database at {path}: {reason}")]
    Open { path: String, reason: String },
    #[error("the database thread has stopped")]
    Closed,
    /// A group of writes could not be committed (disk full, I/O error): none of them is stored.
    #[error("the database could not commit: {0}")]
    Commit(String),
    /// A write under a lease this process no longer holds (see [`fence`]): refused, nothing
    /// stored.
    #[error("write refused: {0}")]
    Fenced(String),
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Corrupt(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// Every role at once: what a backend implements.
pub trait Backend:
    Inbox + Outbox + Sessions + Settings + CronStore + Search + Maintenance + Leases + 'static
{
}

impl<T> Backend for T where
    T: Inbox + Outbox + Sessions + Settings + CronStore + Search + Maintenance + Leases + 'static
{
}

/// The store in use: a cheap handle to one backend, which dereferences to every role, and hands
/// out each role on its own for consumers that need only that.
#[derive(Clone)]
pub struct Store(Arc<dyn Backend>);

/// What a committed write survives (SQLite's `synchronous` in WAL mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Survives a crash of the process (the OS still has the write); a power loss or kernel
    /// panic may lose the last moments of commits (never corrupts the database).
    #[default]
    Normal,
    /// Survives a power loss too: every commit waits for the disk (slower writes).
    Full,
}

impl Store {
    /// A store over `backend`.
    pub fn new(backend: impl Backend) -> Store {
        Store(Arc::new(backend))
    }

    /// Open (creating if needed) the SQLite database at `path` and bring its schema up to date,
    /// with the default durability ([`Durability::Normal`]).
    pub fn open(path: &Path) -> Result<Store> {
        Self::open_with(path, Durability::Normal)
    }

    /// Open the SQLite database at `path` with `durability`.
    pub fn open_with(path: &Path, durability: Durability) -> Result<Store> {
        SqliteStore::open(path, durability).map(Store::new)
    }

    /// A private in-memory SQLite database (unit tests, benchmarks).
    pub fn open_in_memory() -> Result<Store> {
        SqliteStore::open_in_memory().map(Store::new)
    }

    pub fn inbox(&self) -> Arc<dyn Inbox> {
        self.0.clone()
    }

    pub fn outbox(&self) -> Arc<dyn Outbox> {
        self.0.clone()
    }

    pub fn sessions(&self) -> Arc<dyn Sessions> {
        self.0.clone()
    }

    pub fn settings(&self) -> Arc<dyn Settings> {
        self.0.clone()
    }

    pub fn cron(&self) -> Arc<dyn CronStore> {
        self.0.clone()
    }

    pub fn leases(&self) -> Arc<dyn Leases> {
        self.0.clone()
    }

    pub fn search(&self) -> Arc<dyn Search> {
        self.0.clone()
    }
}

impl std::ops::Deref for Store {
    type Target = dyn Backend;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}
