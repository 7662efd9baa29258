//! `[telegram]`: the bot token, who is heard, the Bot API server, how updates come in (long
//! polling or a webhook), and the adapter built from them.

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
    /// How updates come in: `polling` (getUpdates; works behind NAT, one process per bot) or
    /// `webhook` (Telegram POSTs them to `webhook_url`). Env: `TELEGRAM_MODE`.
    pub mode: TelegramMode,
    /// Webhook mode: the public URL Telegram POSTs updates to, e.g.
    /// `https://bot.example.com/telegram`. HTTPS on port 443, 80, 88 or 8443 (Telegram's
    /// rule); plain http only for a loopback host (tests, a local Bot API server). Its path is
    /// the path served on `webhook_listen`. Env: `TELEGRAM_WEBHOOK_URL`.
    pub webhook_url: String,
    /// Webhook mode: the address the listener binds, usually behind a reverse proxy that
    /// terminates TLS for `webhook_url`. Env: `TELEGRAM_WEBHOOK_LISTEN`.
    pub webhook_listen: String,
    /// Webhook mode: the secret Telegram sends back in `X-Telegram-Bot-Api-Secret-Token` with
    /// every update (1-256 of `A-Z a-z 0-9 _ -`); requests without it are refused. Empty: a
    /// random one per process start (fine for one process; several processes behind one load
    /// balancer need the same configured secret). Env: `TELEGRAM_WEBHOOK_SECRET`.
    pub webhook_secret: Secret,
}

/// How the Telegram adapter receives updates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TelegramMode {
    /// Long polling with getUpdates.
    #[default]
    Polling,
    /// Telegram POSTs updates to `webhook_url`.
    Webhook,
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
            mode: TelegramMode::Polling,
            webhook_url: String::new(),
            webhook_listen: "127.0.0.1:8443".into(),
            webhook_secret: Secret::default(),
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
        vec![self.bot_token.expose(), self.webhook_secret.expose()]
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
        if let Some(v) = env.var("TELEGRAM_MODE") {
            self.mode = match v.trim() {
                "polling" => TelegramMode::Polling,
                "webhook" => TelegramMode::Webhook,
                other => {
                    return Err(ConfigError::env(
                        "TELEGRAM_MODE",
                        format!("`{other}` is not a mode (\"polling\" or \"webhook\")"),
                    ));
                }
            };
        }
        if let Some(v) = env.var("TELEGRAM_WEBHOOK_URL") {
            self.webhook_url = v.trim().to_owned();
        }
        if let Some(v) = env.var("TELEGRAM_WEBHOOK_LISTEN") {
            self.webhook_listen = v.trim().to_owned();
        }
        if let Some(v) = env.var("TELEGRAM_WEBHOOK_SECRET") {
            self.webhook_secret = Secret::new(v.trim());
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
        if self.webhook_listen.parse::<std::net::SocketAddr>().is_err() {
            return bad(
                "telegram.webhook_listen",
                format!(
                    "`{}` is not an address with a port (for example \"127.0.0.1:8443\")",
                    self.webhook_listen
                ),
            );
        }
        if self.mode == TelegramMode::Webhook && self.webhook_url.trim().is_empty() {
            return bad(
                "telegram.webhook_url",
                "webhook mode needs the public HTTPS URL Telegram should POST updates to (for example \"https://bot.example.com/telegram\")".into(),
            );
        }
        if !self.webhook_url.trim().is_empty() {
            check_webhook_url(&self.webhook_url).or_else(|p| bad("telegram.webhook_url", p))?;
        }
        let secret = self.webhook_secret.expose();
        if !secret.is_empty()
            && (secret.len() > 256
                || !secret
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        {
            // The value itself is never echoed.
            return bad(
                "telegram.webhook_secret",
                "must be 1-256 characters of A-Z, a-z, 0-9, `_` and `-` (Telegram's rule)".into(),
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
            let mode = match self.mode {
                TelegramMode::Polling => "polling",
                TelegramMode::Webhook => "webhook",
            };
            format!("on, {mode}, {} allowed user(s)", self.allowed_users.len())
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
            let webhook = match self.mode {
                TelegramMode::Polling => None,
                TelegramMode::Webhook => Some(hermes_telegram::WebhookSettings {
                    url: self
                        .webhook_url
                        .trim()
                        .parse()
                        .map_err(|e| format!("telegram.webhook_url: {e}"))?,
                    listen: self
                        .webhook_listen
                        .parse()
                        .map_err(|e| format!("telegram.webhook_listen: {e}"))?,
                    secret: (!self.webhook_secret.is_empty())
                        .then(|| self.webhook_secret.expose().to_owned()),
                }),
            };
            Ok(Arc::new(hermes_telegram::TelegramAdapter::new(
                hermes_telegram::TelegramSettings {
                    token: self.bot_token.expose().to_owned(),
                    api_url,
                    poll_timeout_secs: self.poll_timeout_secs,
                    webhook,
                },
            )))
        }
        #[cfg(not(feature = "telegram"))]
        Err(super::left_out("telegram", "TELEGRAM_BOT_TOKEN"))
    }
}

/// A URL Telegram can deliver webhooks to, or what is wrong with it: HTTPS on one of the ports
/// Telegram allows, or plain http to a loopback host (tests, a local Bot API server).
fn check_webhook_url(value: &str) -> Result<(), String> {
    let url =
        reqwest::Url::parse(value.trim()).map_err(|e| format!("`{value}` is not a URL: {e}"))?;
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => return Err(format!("`{value}` has no host")),
    };
    if url.fragment().is_some() || url.query().is_some() {
        return Err(format!("`{value}` must not have a query or a fragment"));
    }
    match url.scheme() {
        "https" if loopback => Ok(()),
        "https" => match url.port_or_known_default() {
            Some(443 | 80 | 88 | 8443) => Ok(()),
            _ => Err(format!(
                "`{value}`: Telegram delivers webhooks only to ports 443, 80, 88 and 8443"
            )),
        },
        "http" if loopback => Ok(()),
        "http" => Err(format!(
            "`{value}`: Telegram delivers webhooks only over HTTPS (put a TLS-terminating reverse proxy in front of webhook_listen)"
        )),
        _ => Err(format!("`{value}` must be an https:// URL")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_urls_must_be_https_on_telegrams_ports_unless_loopback() {
        for good in [
            "https://bot.example.com/telegram",
            "https://bot.example.com:8443/hook",
            "http://127.0.0.1:9000/telegram",
            "http://localhost:9000/",
        ] {
            assert_eq!(check_webhook_url(good), Ok(()), "{good}");
        }
        for (bad, says) in [
            ("http://bot.example.com/telegram", "only over HTTPS"),
            ("https://bot.example.com:9443/telegram", "ports 443"),
            ("ftp://127.0.0.1/x", "https://"),
            ("bot.example.com/telegram", "not a URL"),
            ("https://bot.example.com/t?x=1", "query"),
        ] {
            let err = check_webhook_url(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
