//! Settings of the daemon as a service: the admin HTTP endpoint (health, readiness, metrics,
//! status) and the housekeeping that keeps the store bounded.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// The admin HTTP endpoint: `/healthz`, `/readyz`, `/metrics`, `/status`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdminConfig {
    /// Off switch.
    pub enabled: bool,
    /// Address to listen on. Port 0 picks a free port, written to `$HERMES_HOME/admin.addr`.
    /// Beyond loopback a `token` is required. Env: `HERMES_ADMIN_LISTEN`.
    pub listen: String,
    /// When set, every path but `/healthz` needs `Authorization: Bearer <token>` (`hermes
    /// status` sends it). Required when `listen` is not a loopback address.
    /// Env: `HERMES_ADMIN_TOKEN`.
    pub token: super::Secret,
    /// `/readyz` fails when an adapter has shown no sign of life for this long.
    pub ready_max_silence_secs: u64,
}

impl Default for AdminConfig {
    fn default() -> Self {
        AdminConfig {
            enabled: true,
            listen: "127.0.0.1:8790".into(),
            token: super::Secret::default(),
            ready_max_silence_secs: 150,
        }
    }
}

/// `[store]`: the database.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// `sqlite` (default: `$HERMES_HOME/hermes.db`, one process) or `postgres` (a shared
    /// database: several gateway processes, one set of conversations).
    pub backend: StoreBackend,
    /// What a committed SQLite write survives: `normal` (default) a crash of the daemon, `full`
    /// a power loss or kernel panic as well (each commit waits for the disk).
    pub synchronous: Synchronous,
    /// The PostgreSQL URL, `postgres://user:password@host:5432/hermes`. Env:
    /// `HERMES_DATABASE_URL`.
    pub url: super::Secret,
    /// Most PostgreSQL connections this process holds.
    pub pool_size: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            backend: StoreBackend::Sqlite,
            synchronous: Synchronous::Normal,
            url: super::Secret::default(),
            pool_size: 16,
        }
    }
}

/// `[leases]`: how the processes sharing a PostgreSQL store hand roles over.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LeasesConfig {
    /// A process that stopped beating this long ago is gone: another takes its receiving
    /// roles, its sessions and the rows it claimed. It beats every third of this.
    pub takeover_secs: f64,
}

impl Default for LeasesConfig {
    fn default() -> Self {
        LeasesConfig {
            takeover_secs: 15.0,
        }
    }
}

impl LeasesConfig {
    /// The takeover time in milliseconds (at least one second).
    pub fn takeover_ms(&self) -> i64 {
        (self.takeover_secs.clamp(1.0, 3600.0) * 1000.0) as i64
    }
}

/// Which database holds the state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreBackend {
    #[default]
    Sqlite,
    Postgres,
}

impl StoreConfig {
    /// A PostgreSQL backend has its URL (and this build has the backend); a pool has room.
    pub(super) fn validate(
        &self,
        file: Option<&std::path::Path>,
    ) -> Result<(), super::ConfigError> {
        let bad = |key: &str, problem: &str| {
            Err(super::ConfigError::invalid(file, key, problem.to_owned()))
        };
        if self.backend != StoreBackend::Postgres {
            return Ok(());
        }
        if !cfg!(feature = "postgres") {
            return bad(
                "store.backend",
                "this hermes was built without the `postgres` feature",
            );
        }
        let url = self.url.expose();
        if url.is_empty() {
            return bad(
                "store.url",
                "set the PostgreSQL URL (or HERMES_DATABASE_URL) for backend = \"postgres\"",
            );
        }
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return bad("store.url", "must start with postgres:// or postgresql://");
        }
        if self.pool_size < 2 {
            return bad("store.pool_size", "must be at least 2");
        }
        Ok(())
    }
}

/// SQLite's `synchronous` in WAL mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    /// Survives a crash of the process; a power loss may lose the last commits (not the
    /// database).
    #[default]
    Normal,
    /// Survives a power loss: every commit is on disk before it returns.
    Full,
}

/// How long finished rows are kept.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionConfig {
    /// Answered or ignored inbound messages (their ids guard against redelivery) and sent or
    /// failed replies are deleted after this many days. The conversation history is kept.
    pub delivery_log_days: u32,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            delivery_log_days: 7,
        }
    }
}

impl AdminConfig {
    /// The listen address, when the endpoint is on.
    pub(super) fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        let bad = |key: &str, problem: String| Err(ConfigError::invalid(file, key, problem));
        if !self.enabled {
            return Ok(());
        }
        let Ok(addr) = self.listen.parse::<std::net::SocketAddr>() else {
            return bad(
                "admin.listen",
                format!(
                    "`{}` is not an address with a port (for example \"127.0.0.1:8790\")",
                    self.listen
                ),
            );
        };
        if !addr.ip().is_loopback() && self.token.is_empty() {
            return bad(
                "admin.token",
                format!(
                    "the admin endpoint listens beyond loopback ({addr}): set a token \
                     (HERMES_ADMIN_TOKEN) so that only who has it reads /status and /metrics"
                ),
            );
        }
        Ok(())
    }
}
