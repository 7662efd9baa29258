//! `[api]`: the OpenAI-compatible HTTP API, a platform whose people are its keys
//! (`[api.keys.<name>]`, each token from an environment variable); no key, no API.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use hermes_adapter::{Adapter, Platform};
use serde::{Deserialize, Serialize};

use super::PlatformSection;
use crate::config::{Config, ConfigError, EnvSource, Secret};

/// `[api]`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiConfig {
    /// Off switch; the API runs when this is true and a key is configured.
    pub enabled: bool,
    /// Address to listen on. Env: `HERMES_API_LISTEN`.
    pub listen: String,
    /// The keys, by name: each is one person (`api:<name>`) with its own conversations.
    pub keys: BTreeMap<String, ApiKeyConfig>,
    /// Longest a request waits for its answer (a confirmation the turn waits for included).
    pub request_timeout_secs: u64,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Browser origins allowed to call the API (CORS); none: no cross-origin calls.
    pub cors_origins: Vec<String>,
    /// Requests one key may have waiting at once; more are refused with 429 and `Retry-After`.
    pub requests_per_key: usize,
}

/// `[api.keys.<name>]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiKeyConfig {
    /// The environment variable holding the key's token (16+ characters).
    pub token_env: String,
    /// Whether the key's holder is an operator (see `[access]`); default: a user.
    pub operator: bool,
    /// The token, read from `token_env`.
    #[serde(skip)]
    pub token: Secret,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            enabled: true,
            listen: "127.0.0.1:8642".into(),
            keys: BTreeMap::new(),
            request_timeout_secs: 600,
            max_body_bytes: 4 << 20,
            cors_origins: Vec::new(),
            requests_per_key: 32,
        }
    }
}

/// Whether `name` can name a key: 1-64 letters, digits, `_`, `-` or `.`.
fn valid_key_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

impl PlatformSection for ApiConfig {
    fn platform(&self) -> Platform {
        Platform::Api
    }

    fn is_active(&self) -> bool {
        self.enabled && self.keys.values().any(|k| !k.token.is_empty())
    }

    fn how_to_enable(&self) -> &'static str {
        "[api.keys.<name>] token_env = \"VAR\" (or HERMES_API_KEY)"
    }

    fn allowed_users(&self) -> Vec<String> {
        self.keys.keys().cloned().collect()
    }

    fn operators(&self) -> Vec<String> {
        let ops = self.keys.iter().filter(|(_, k)| k.operator);
        ops.map(|(name, _)| name.clone()).collect()
    }

    fn secrets(&self) -> Vec<&str> {
        self.keys.values().map(|k| k.token.expose()).collect()
    }

    fn overlay(&mut self, env: &dyn EnvSource) -> Result<(), ConfigError> {
        if let Some(v) = env.var("HERMES_API_LISTEN") {
            self.listen = v.trim().to_owned();
        }
        if let Some(v) = env.var("HERMES_API_KEY") {
            let key = self.keys.entry("default".into()).or_default();
            key.token_env = "HERMES_API_KEY".into();
            key.token = Secret::new(v.trim());
        }
        for (name, key) in &mut self.keys {
            if key.token_env.is_empty() {
                continue;
            }
            match env.var(&key.token_env) {
                Some(v) => key.token = Secret::new(v.trim()),
                None => {
                    return Err(ConfigError::env(
                        &key.token_env,
                        format!("is named by api.keys.{name}.token_env but is not set"),
                    ));
                }
            }
        }
        Ok(())
    }

    fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        let bad = |key: &str, problem: String| Err(ConfigError::invalid(file, key, problem));
        if self.listen.parse::<SocketAddr>().is_err() {
            return bad(
                "api.listen",
                format!("`{}` is not an address:port", self.listen),
            );
        }
        if self.request_timeout_secs == 0 {
            return bad("api.request_timeout_secs", "must be at least 1".into());
        }
        if self.requests_per_key == 0 {
            return bad("api.requests_per_key", "must be at least 1".into());
        }
        if self.max_body_bytes < 1024 {
            return bad("api.max_body_bytes", "must be at least 1024".into());
        }
        let mut tokens = std::collections::HashSet::new();
        for (name, key) in &self.keys {
            let at = |k: &str| format!("api.keys.{name}.{k}");
            if !valid_key_name(name) {
                return bad(
                    &format!("api.keys.{name}"),
                    "a key name is 1-64 letters, digits, `_`, `-` or `.`".into(),
                );
            }
            if key.token_env.is_empty() {
                return bad(
                    &at("token_env"),
                    "is required: the environment variable holding the key's token".into(),
                );
            }
            if !key.token.is_empty() && key.token.expose().len() < 16 {
                return bad(
                    &at("token_env"),
                    format!(
                        "{} holds fewer than 16 characters; use a long random token (`openssl rand -hex 32`)",
                        key.token_env
                    ),
                );
            }
            if !key.token.is_empty() && !tokens.insert(key.token.expose()) {
                return bad(&at("token_env"), "another key has the same token".into());
            }
        }
        Ok(())
    }

    fn summary(&self) -> String {
        if self.is_active() {
            format!("on at {}, {} key(s)", self.listen, self.keys.len())
        } else {
            "off (add [api.keys.<name>] with token_env, or set HERMES_API_KEY)".to_owned()
        }
    }

    fn adapter_changed(&self, old: &Config, new: &Config) -> bool {
        old.api != new.api || old.llm.model != new.llm.model
    }

    fn build(&self, config: &Config) -> Result<Arc<dyn Adapter>, String> {
        #[cfg(feature = "http-api")]
        {
            let mut models = vec![config.llm.model.clone()];
            models.extend(config.llm.fallback.iter().map(|f| f.model.clone()));
            Ok(Arc::new(hermes_http_api::ApiAdapter::new(
                hermes_http_api::ApiSettings {
                    listen: self
                        .listen
                        .parse()
                        .map_err(|e| format!("api.listen: {e}"))?,
                    keys: self
                        .keys
                        .iter()
                        .filter(|(_, k)| !k.token.is_empty())
                        .map(|(n, k)| (n.clone(), k.token.expose().to_owned()))
                        .collect(),
                    models,
                    request_timeout: std::time::Duration::from_secs(self.request_timeout_secs),
                    max_body_bytes: self.max_body_bytes,
                    cors_origins: self.cors_origins.clone(),
                    requests_per_key: self.requests_per_key,
                },
            )))
        }
        #[cfg(not(feature = "http-api"))]
        {
            let _ = config;
            Err(super::left_out("http-api", "[api.keys.<name>]"))
        }
    }
}
