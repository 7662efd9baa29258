//! `[telegram]`: the bot token, who is heard, the Bot API server, and the adapter built from
//! them.

use std::path::Path;
use std::sync::Arc;

use hermes_adapter::{Adapter, Platform};
use serde::{Deserialize, Serialize};

use super::PlatformSection;
use crate::config::env::list;
use crate::config::validate::check_http_url;
use crate::config::{Config, ConfigError, EnvSource, Secret};

/// The Telegram adapter.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelegramConfig {
    /// Off switch; Telegram runs when this is true and a token is set.
    pub enabled: bool,
    /// Token from @BotFather. Env: `TELEGRAM_BOT_TOKEN`.
    pub bot_token: Secret,
    /// Telegram user ids allowed to talk to the bot. Env: `TELEGRAM_ALLOWED_USERS`.
    pub allowed_users: Vec<String>,
    /// Telegram user ids of the operators (served too; see `[access]`). Env: `TELEGRAM_OPERATORS`.
    pub operators: Vec<String>,
    /// Bot API server (a local Bot API server or a proxy). Env: `TELEGRAM_API_URL`.
    pub api_url: String,
    /// Long-poll timeout of getUpdates.
    pub poll_timeout_secs: u32,
}

impl Default for TelegramConfig {
    fn default() -> Self {
        TelegramConfig {
            enabled: true,
            bot_token: Secret::default(),
            allowed_users: Vec::new(),
            operators: Vec::new(),
            api_url: "https://api.telegram.org".into(),
            poll_timeout_secs: 30,
        }
    }
}

impl PlatformSection for TelegramConfig {
    fn platform(&self) -> Platform {
        Platform::Telegram
    }

    fn is_active(&self) -> bool {
        self.enabled && !self.bot_token.is_empty()
    }

    fn how_to_enable(&self) -> &'static str {
        "TELEGRAM_BOT_TOKEN (from @BotFather)"
    }

    fn allowed_users(&self) -> Vec<String> {
        self.allowed_users.clone()
    }

    fn operators(&self) -> Vec<String> {
        self.operators.clone()
    }

    fn secrets(&self) -> Vec<&str> {
        vec![self.bot_token.expose()]
    }

    fn overlay(&mut self, env: &dyn EnvSource) -> Result<(), ConfigError> {
        if let Some(v) = env.var("TELEGRAM_BOT_TOKEN") {
            self.bot_token = Secret::new(v.trim());
        }
        for (var, ids_of) in [
            ("TELEGRAM_ALLOWED_USERS", &mut self.allowed_users),
            ("TELEGRAM_OPERATORS", &mut self.operators),
        ] {
            if let Some(v) = env.var(var) {
                let ids = list(&v);
                if let Some(bad) = ids.iter().find(|id| id.parse::<i64>().is_err()) {
                    return Err(ConfigError::env(
                        var,
                        format!(
                            "`{bad}` is not a numeric Telegram user id (comma-separated ids expected)"
                        ),
                    ));
                }
                *ids_of = ids;
            }
        }
        if let Some(v) = env.var("TELEGRAM_API_URL") {
            self.api_url = v.trim().trim_end_matches('/').to_owned();
        }
        Ok(())
    }

    fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        let bad = |key: &str, problem: String| Err(ConfigError::invalid(file, key, problem));
        check_http_url(&self.api_url).or_else(|p| bad("telegram.api_url", p))?;
        if self.poll_timeout_secs > 50 {
            return bad(
                "telegram.poll_timeout_secs",
                "must be at most 50 (Telegram caps long polls)".into(),
            );
        }
        for (key, ids) in [
            ("telegram.allowed_users", &self.allowed_users),
            ("telegram.operators", &self.operators),
        ] {
            if let Some(id) = ids.iter().find(|id| id.parse::<i64>().is_err()) {
                return bad(
                    key,
                    format!(
                        "`{id}` is not a numeric Telegram user id (usernames can change hands; ask @userinfobot for your id)"
                    ),
                );
            }
        }
        Ok(())
    }

    fn summary(&self) -> String {
        if self.is_active() {
            format!("on, {} allowed user(s)", self.allowed_users.len())
        } else {
            "off (set TELEGRAM_BOT_TOKEN)".to_owned()
        }
    }

    fn adapter_changed(&self, old: &Config, new: &Config) -> bool {
        super::differ(&old.telegram, &new.telegram, |c| {
            c.allowed_users.clear();
            c.operators.clear();
        })
    }

    fn build(&self, _config: &Config) -> Result<Arc<dyn Adapter>, String> {
        #[cfg(feature = "telegram")]
        {
            let api_url = self
                .api_url
                .parse()
                .map_err(|e| format!("telegram.api_url: {e}"))?;
            Ok(Arc::new(hermes_telegram::TelegramAdapter::new(
                hermes_telegram::TelegramSettings {
                    token: self.bot_token.expose().to_owned(),
                    api_url,
                    poll_timeout_secs: self.poll_timeout_secs,
                },
            )))
        }
        #[cfg(not(feature = "telegram"))]
        Err(super::left_out("telegram", "TELEGRAM_BOT_TOKEN"))
    }
}
