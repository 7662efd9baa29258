//! Leases: which process of a deployment holds which role (a session's turns, a platform's one
//! receiving connection), and the fencing token that proves it at every commit.
//!
//! Every process registers itself and renews that registration on a heartbeat; a lease is held
//! by a process for as long as its registration is live, so one heartbeat keeps all of a
//! process's leases, and they all pass to others at once `takeover` after it stopped beating
//! (killed, paused, cut off). Each time a lease changes hands its token grows; a write made under
//! a lease carries the token ([`super::fence`]) and is refused once the token moved on, so a
//! process that lost its lease while paused cannot write a stale turn.
//!
//! A SQLite store serves one process: it grants every lease and fences nothing
//! ([`Leases::shared`] is false). PostgreSQL implements them for real.

use async_trait::async_trait;

use super::Result;

/// Who this process is, for the deployment's table.
#[derive(Debug, Clone)]
pub struct ProcessInfo {
    /// Unique per process run: `host:pid:random`.
    pub id: String,
    pub host: String,
    pub pid: u32,
    pub version: String,
}

impl ProcessInfo {
    /// This process, with a fresh id.
    pub fn current() -> ProcessInfo {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_else(|_| "localhost".into());
        let mut salt = [0u8; 3];
        let _ = getrandom::fill(&mut salt);
        let pid = std::process::id();
        ProcessInfo {
            id: format!("{host}:{pid}:{:02x}{:02x}{:02x}", salt[0], salt[1], salt[2]),
            host,
            pid,
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// What a heartbeat found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Beat {
    /// The registration had expired before this beat renewed it: other processes may have
    /// taken this one's leases meanwhile.
    pub lapsed: bool,
}

/// One process of the deployment, as `hermes status` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ProcessRow {
    pub id: String,
    pub host: String,
    pub pid: i64,
    pub version: String,
    pub started_at: i64,
    pub beat_at: i64,
    /// Whether its registration is live now.
    pub live: bool,
    /// The non-session leases it holds (`receive:telegram`…).
    pub roles: Vec<String>,
    /// How many sessions it is running a turn for.
    pub sessions: u64,
}

/// A lease and its token, as held by this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub name: String,
    pub token: i64,
}

/// The leases role.
#[async_trait]
pub trait Leases: Send + Sync {
    /// Whether several processes share this store (leases mean something).
    fn shared(&self) -> bool;

    /// Register this process or renew its registration for `ttl_ms`.
    async fn process_beat(&self, me: &ProcessInfo, ttl_ms: i64) -> Result<Beat>;

    /// End this process's registration and give back its leases (a graceful stop).
    async fn process_leave(&self, me: &str) -> Result<()>;

    /// Take lease `name` for `me` when it is free or its holder is no longer live (or renew it
    /// when `me` holds it). `Some(token)` when `me` holds it now.
    async fn lease_take(&self, name: &str, me: &str) -> Result<Option<i64>>;

    /// Whether `me` still holds `name` with `token`.
    async fn lease_held(&self, name: &str, me: &str, token: i64) -> Result<bool>;

    /// Give lease `name` back, if `me` still holds it with `token`.
    async fn lease_release(&self, name: &str, me: &str, token: i64) -> Result<()>;

    /// The live process holding lease `name`, if any.
    async fn lease_holder(&self, name: &str) -> Result<Option<String>>;

    /// Hand inbox row `id` (still `new`) to process `to`'s router: the process that runs the
    /// row's session, where the turn waiting for an answer (or to be stopped) lives. Should
    /// `to` vanish, the row passes on like any claimed row.
    async fn inbox_hand(&self, id: i64, to: &str) -> Result<()>;

    /// The processes registered in the last `recent_ms`, newest first, with their roles.
    async fn deployment(&self, recent_ms: i64) -> Result<Vec<ProcessRow>>;

    /// Until `stop`, wake `signal` whenever any process stores an inbox row (a shared store's
    /// notification channel), so that every process's router may claim it.
    fn watch_inbox(
        &self,
        _signal: std::sync::Arc<tokio::sync::Notify>,
        _stop: tokio_util::sync::CancellationToken,
    ) {
    }
}

/// The name of the lease on a session's turns.
pub fn session_lease(key: &hermes_adapter::SessionKey) -> String {
    format!("session:{key}")
}

/// The name of the lease on a platform's receiving connection, or on part `part` of `parts`
/// of it (a Discord shard).
pub fn receive_lease(platform: hermes_adapter::Platform, part: u16, parts: u16) -> String {
    if parts > 1 {
        format!("receive:{platform} {part}/{parts}")
    } else {
        format!("receive:{platform}")
    }
}
