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
    /// Address to listen on. It has no authentication: keep it on loopback (or behind a proxy
    /// that adds some). Port 0 picks a free port, written to `$HERMES_HOME/admin.addr`.
    /// Env: `HERMES_ADMIN_LISTEN`.
    pub listen: String,
    /// `/readyz` fails when an adapter has shown no sign of life for this long.
    pub ready_max_silence_secs: u64,
}

impl Default for AdminConfig {
    fn default() -> Self {
        AdminConfig {
            enabled: true,
            listen: "127.0.0.1:8790".into(),
            ready_max_silence_secs: 150,
        }
    }
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
        if self.enabled && self.listen.parse::<std::net::SocketAddr>().is_err() {
            return bad(
                "admin.listen",
                format!(
                    "`{}` is not an address with a port (for example \"127.0.0.1:8790\")",
                    self.listen
                ),
            );
        }
        Ok(())
    }
}
