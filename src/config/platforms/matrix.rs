//! `[matrix]`: the bot's Matrix account, its homeserver, who may talk to it, and the adapter
//! built from them.

use std::path::Path;
use std::sync::Arc;

use hermes_adapter::{Adapter, Platform};
use serde::{Deserialize, Serialize};

use super::PlatformSection;
use crate::config::env::list;
use crate::config::{Config, ConfigError, EnvSource, Secret};

/// The Matrix adapter. It runs when enabled with a homeserver, a user id and a password or an
/// access token. The login (device id and token) is kept in `$HERMES_HOME/matrix`, so the bot
/// stays one device, with one set of encryption keys, across restarts.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct MatrixConfig {
    /// Off switch.
    pub enabled: bool,
    /// Client-server API base URL (`https://matrix.example.org`). Env: `MATRIX_HOMESERVER`.
    pub homeserver: String,
    /// The bot's full user id (`@hermes:example.org`). Env: `MATRIX_USER_ID`.
    pub user_id: String,
    /// Password, used once to log in (the session is saved). Env: `MATRIX_PASSWORD`.
    pub password: Secret,
    /// An access token from an earlier login instead of a password. Env: `MATRIX_ACCESS_TOKEN`.
    pub access_token: Secret,
    /// Full user ids (`@alice:example.org`) allowed to talk to the bot and to invite it to
    /// rooms. Env: `MATRIX_ALLOWED_USERS` (comma-separated).
    pub allowed_users: Vec<String>,
    /// Full user ids of the operators (served too; see `[access]`). Env: `MATRIX_OPERATORS`.
    pub operators: Vec<String>,
    /// The device name users see in their device lists.
    pub device_name: String,
    /// Long-poll timeout of one `/sync`, in seconds.
    pub sync_timeout_secs: u64,
}

impl Default for MatrixConfig {
    fn default() -> Self {
        MatrixConfig {
            enabled: true,
            homeserver: String::new(),
            user_id: String::new(),
            password: Secret::default(),
            access_token: Secret::default(),
            allowed_users: Vec::new(),
            operators: Vec::new(),
            device_name: "hermes".into(),
            sync_timeout_secs: 30,
        }
    }
}

impl PlatformSection for MatrixConfig {
    fn platform(&self) -> Platform {
        Platform::Matrix
    }

    fn is_active(&self) -> bool {
        self.enabled
            && !self.homeserver.is_empty()
            && !self.user_id.is_empty()
            && (!self.password.is_empty() || !self.access_token.is_empty())
    }

    fn how_to_enable(&self) -> &'static str {
        "MATRIX_HOMESERVER with MATRIX_USER_ID and MATRIX_PASSWORD"
    }

    fn allowed_users(&self) -> Vec<String> {
        self.allowed_users.clone()
    }

    fn operators(&self) -> Vec<String> {
        self.operators.clone()
    }

    fn secrets(&self) -> Vec<&str> {
        vec![self.password.expose(), self.access_token.expose()]
    }

    /// `MATRIX_*` variables over the file's values.
    fn overlay(&mut self, env: &dyn EnvSource) -> Result<(), ConfigError> {
        let text = |name: &str| env.var(name).map(|v| v.trim().to_owned());
        if let Some(v) = text("MATRIX_HOMESERVER") {
            self.homeserver = v.trim_end_matches('/').to_owned();
        }
        if let Some(v) = text("MATRIX_USER_ID") {
            self.user_id = v;
        }
        if let Some(v) = text("MATRIX_PASSWORD") {
            self.password = Secret::new(v);
        }
        if let Some(v) = text("MATRIX_ACCESS_TOKEN") {
            self.access_token = Secret::new(v);
        }
        if let Some(v) = text("MATRIX_ALLOWED_USERS") {
            self.allowed_users = list(&v);
        }
        if let Some(v) = text("MATRIX_OPERATORS") {
            self.operators = list(&v);
        }
        Ok(())
    }

    fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        let bad = |key: &str, problem: String| Err(ConfigError::invalid(file, key, problem));
        if !self.homeserver.is_empty()
            && !matches!(
                url::Url::parse(&self.homeserver),
                Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some()
            )
        {
            return bad(
                "matrix.homeserver",
                format!(
                    "`{}` is not an http(s) URL (for example \"https://matrix.example.org\")",
                    self.homeserver
                ),
            );
        }
        if !self.user_id.is_empty() && !is_user_id(&self.user_id) {
            return bad(
                "matrix.user_id",
                format!(
                    "`{}` is not a full Matrix user id (like \"@hermes:example.org\")",
                    self.user_id
                ),
            );
        }
        if let Some(id) = self
            .allowed_users
            .iter()
            .chain(&self.operators)
            .find(|id| !is_user_id(id))
        {
            return bad(
                "matrix.allowed_users",
                format!("`{id}` is not a full Matrix user id (like \"@alice:example.org\")"),
            );
        }
        if self.enabled
            && !self.homeserver.is_empty()
            && self.password.is_empty()
            && self.access_token.is_empty()
        {
            return bad(
                "matrix.password",
                "a homeserver is set but no way to log in: set MATRIX_PASSWORD or MATRIX_ACCESS_TOKEN".into(),
            );
        }
        if self.sync_timeout_secs == 0 || self.sync_timeout_secs > 120 {
            return bad(
                "matrix.sync_timeout_secs",
                "must be between 1 and 120".into(),
            );
        }
        Ok(())
    }

    fn summary(&self) -> String {
        if self.is_active() {
            format!(
                "on, {} on {}, {} allowed user(s)",
                self.user_id,
                self.homeserver,
                self.allowed_users.len()
            )
        } else {
            "off (set MATRIX_HOMESERVER, MATRIX_USER_ID and MATRIX_PASSWORD)".to_owned()
        }
    }

    /// The adapter accepts invites from the people the bot serves, so the allowlists count.
    fn adapter_changed(&self, old: &Config, new: &Config) -> bool {
        old.matrix != new.matrix || inviters(old) != inviters(new)
    }

    fn build(&self, config: &Config) -> Result<Arc<dyn Adapter>, String> {
        #[cfg(feature = "matrix")]
        {
            use hermes_matrix::{Credentials, MatrixAdapter, MatrixSettings};
            let credentials = if self.password.is_empty() {
                Credentials::AccessToken(self.access_token.expose().to_owned())
            } else {
                Credentials::Password(self.password.expose().to_owned())
            };
            Ok(Arc::new(MatrixAdapter::new(MatrixSettings {
                homeserver: self
                    .homeserver
                    .parse()
                    .map_err(|e| format!("matrix.homeserver: {e}"))?,
                user_id: self.user_id.clone(),
                credentials,
                allowed_inviters: inviters(config),
                state_dir: config.home.join("matrix"),
                sync_timeout: std::time::Duration::from_secs(self.sync_timeout_secs),
                device_name: self.device_name.clone(),
            })))
        }
        #[cfg(not(feature = "matrix"))]
        {
            let _ = config;
            Err(super::left_out("matrix", "MATRIX_HOMESERVER"))
        }
    }
}

/// Whose invites are accepted: the people the bot serves, from the Matrix allowlist and the
/// global one's Matrix ids (`matrix:@a:b` or a bare `@a:b`), and the operators; `*` when
/// everyone is served.
fn inviters(config: &Config) -> Vec<String> {
    if config.gateway.allow_all_users {
        return vec!["*".into()];
    }
    let global = config
        .gateway
        .allowed_on(Platform::Matrix, |e| e.starts_with('@'));
    config
        .matrix
        .allowed_users
        .iter()
        .chain(&config.matrix.operators)
        .cloned()
        .chain(global)
        .chain(config.access.operators_on(Platform::Matrix))
        .collect()
}

/// `@localpart:server`.
fn is_user_id(id: &str) -> bool {
    id.strip_prefix('@')
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(local, server)| !local.is_empty() && !server.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_comes_from_the_environment() {
        let env = [
            ("MATRIX_HOMESERVER", "https://matrix.example.org/"),
            ("MATRIX_USER_ID", "@hermes:example.org"),
            ("MATRIX_PASSWORD", "pw"),
            (
                "MATRIX_ALLOWED_USERS",
                "@alice:example.org, @bob:example.org",
            ),
        ];
        let mut c = MatrixConfig::default();
        assert!(!c.is_active());
        c.overlay(&env).unwrap();
        c.validate(None).unwrap();
        assert!(c.is_active());
        assert_eq!(c.homeserver, "https://matrix.example.org");
        assert_eq!(c.allowed_users.len(), 2);
    }

    #[test]
    fn bad_values_name_their_key() {
        let mut c = MatrixConfig {
            homeserver: "matrix.example.org".into(),
            ..MatrixConfig::default()
        };
        let e = c.validate(None).unwrap_err().to_string();
        assert!(e.contains("matrix.homeserver"), "{e}");
        c.homeserver = "https://m.example.org".into();
        c.password = Secret::new("pw");
        c.user_id = "hermes".into();
        assert!(
            c.validate(None)
                .unwrap_err()
                .to_string()
                .contains("matrix.user_id")
        );
        c.user_id = "@hermes:example.org".into();
        c.allowed_users = vec!["alice".into()];
        assert!(
            c.validate(None)
                .unwrap_err()
                .to_string()
                .contains("matrix.allowed_users")
        );
        c.allowed_users.clear();
        c.password = Secret::default();
        assert!(
            c.validate(None)
                .unwrap_err()
                .to_string()
                .contains("MATRIX_PASSWORD")
        );
    }
}
