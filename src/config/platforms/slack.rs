//! `[slack]`: the tokens, how events come in (Socket Mode or the Events API), who is heard, and
//! the adapter built from them.

use std::path::Path;
use std::sync::Arc;

use hermes_adapter::{Adapter, Platform};
use serde::{Deserialize, Serialize};

use super::PlatformSection;
use crate::config::env::list;
use crate::config::validate::check_http_url;
use crate::config::{Config, ConfigError, EnvSource, Secret};

/// The Slack adapter. It runs when enabled with a bot token and either an app-level token
/// (Socket Mode) or a signing secret (Events API over HTTP).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SlackConfig {
    /// Off switch.
    pub enabled: bool,
    /// Bot token (`xoxb-…`). Env: `SLACK_BOT_TOKEN`.
    pub bot_token: Secret,
    /// App-level token (`xapp-…`, scope `connections:write`): receive through Socket Mode.
    /// Env: `SLACK_APP_TOKEN`.
    pub app_token: Secret,
    /// Signing secret: receive through the Events API on `events_listen` (used when no app
    /// token is set). Env: `SLACK_SIGNING_SECRET`.
    pub signing_secret: Secret,
    /// Address the Events API listener binds. Env: `SLACK_EVENTS_LISTEN`.
    pub events_listen: String,
    /// Web API base (a proxy). Env: `SLACK_API_URL`.
    pub api_url: String,
    /// Slack user ids (`U…`) allowed to talk to the bot. Env: `SLACK_ALLOWED_USERS`.
    pub allowed_users: Vec<String>,
    /// Slack user ids of the operators (served too; see `[access]`). Env: `SLACK_OPERATORS`.
    pub operators: Vec<String>,
    /// Channel ids the bot answers in; empty: every channel it is invited to. Direct messages
    /// are governed by the user allowlist only.
    pub allowed_channels: Vec<String>,
    /// Workspace ids (`T…`) whose events are accepted; empty: any.
    pub allowed_teams: Vec<String>,
    /// Answer a channel mention in a thread under it (shared by everyone in the thread).
    pub reply_in_thread: bool,
    /// A Socket Mode connection that receives nothing (not even a ping) for this many seconds
    /// is replaced and the adapter reported unhealthy meanwhile.
    pub socket_idle_secs: u64,
}

impl Default for SlackConfig {
    fn default() -> Self {
        SlackConfig {
            enabled: true,
            bot_token: Secret::default(),
            app_token: Secret::default(),
            signing_secret: Secret::default(),
            events_listen: "127.0.0.1:3000".into(),
            api_url: "https://slack.com/api".into(),
            allowed_users: Vec::new(),
            operators: Vec::new(),
            allowed_channels: Vec::new(),
            allowed_teams: Vec::new(),
            reply_in_thread: true,
            socket_idle_secs: 30,
        }
    }
}

impl SlackConfig {
    /// Which way events come in, in words (for summaries).
    pub fn mode(&self) -> &'static str {
        if !self.app_token.is_empty() {
            "Socket Mode"
        } else if !self.signing_secret.is_empty() {
            "Events API"
        } else {
            "no receiver (set SLACK_APP_TOKEN or SLACK_SIGNING_SECRET)"
        }
    }
}

impl PlatformSection for SlackConfig {
    fn platform(&self) -> Platform {
        Platform::Slack
    }

    fn is_active(&self) -> bool {
        self.enabled && !self.bot_token.is_empty()
    }

    fn how_to_enable(&self) -> &'static str {
        "SLACK_BOT_TOKEN (with SLACK_APP_TOKEN or SLACK_SIGNING_SECRET)"
    }

    fn allowed_users(&self) -> Vec<String> {
        self.allowed_users.clone()
    }

    fn operators(&self) -> Vec<String> {
        self.operators.clone()
    }

    fn secrets(&self) -> Vec<&str> {
        vec![
            self.bot_token.expose(),
            self.app_token.expose(),
            self.signing_secret.expose(),
        ]
    }

    /// `SLACK_*`: tokens, the signing secret, the listener, the API base and the allowlist.
    fn overlay(&mut self, env: &dyn EnvSource) -> Result<(), ConfigError> {
        if let Some(v) = env.var("SLACK_BOT_TOKEN") {
            self.bot_token = Secret::new(v.trim());
        }
        if let Some(v) = env.var("SLACK_APP_TOKEN") {
            self.app_token = Secret::new(v.trim());
        }
        if let Some(v) = env.var("SLACK_SIGNING_SECRET") {
            self.signing_secret = Secret::new(v.trim());
        }
        if let Some(v) = env.var("SLACK_EVENTS_LISTEN") {
            self.events_listen = v.trim().to_owned();
        }
        if let Some(v) = env.var("SLACK_API_URL") {
            self.api_url = v.trim().trim_end_matches('/').to_owned();
        }
        if let Some(v) = env.var("SLACK_ALLOWED_USERS") {
            self.allowed_users = list(&v);
        }
        if let Some(v) = env.var("SLACK_OPERATORS") {
            self.operators = list(&v);
        }
        Ok(())
    }

    fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        let bad = |key: &str, problem: String| Err(ConfigError::invalid(file, key, problem));
        check_http_url(&self.api_url).or_else(|p| bad("slack.api_url", p))?;
        if self.events_listen.parse::<std::net::SocketAddr>().is_err() {
            return bad(
                "slack.events_listen",
                format!(
                    "`{}` is not an address with a port (for example \"127.0.0.1:3000\")",
                    self.events_listen
                ),
            );
        }
        if self.socket_idle_secs < 5 {
            return bad("slack.socket_idle_secs", "must be at least 5".into());
        }
        if self.is_active() && self.app_token.is_empty() && self.signing_secret.is_empty() {
            return bad(
                "slack.app_token",
                "a bot token is set but nothing receives events: set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (Events API)".into(),
            );
        }
        if !self.app_token.is_empty() && !self.app_token.expose().starts_with("xapp-") {
            return bad(
                "slack.app_token",
                "is not an app-level token (it starts with `xapp-`; create one under Basic Information > App-Level Tokens)".into(),
            );
        }
        for (key, ids) in [
            ("slack.allowed_users", &self.allowed_users),
            ("slack.operators", &self.operators),
        ] {
            if let Some(id) = ids
                .iter()
                .find(|id| !id.chars().all(|c| c.is_ascii_alphanumeric()) || id.starts_with('@'))
            {
                return bad(
                    key,
                    format!(
                        "`{id}` is not a Slack user id (like U012AB3CD; names can change, ids do not)"
                    ),
                );
            }
        }
        Ok(())
    }

    fn summary(&self) -> String {
        if self.is_active() {
            format!(
                "on, {}, {} allowed user(s)",
                self.mode(),
                self.allowed_users.len()
            )
        } else {
            "off (set SLACK_BOT_TOKEN)".to_owned()
        }
    }

    fn adapter_changed(&self, old: &Config, new: &Config) -> bool {
        super::differ(&old.slack, &new.slack, |c| {
            c.allowed_users.clear();
            c.operators.clear();
        })
    }

    fn build(&self, _config: &Config) -> Result<Arc<dyn Adapter>, String> {
        #[cfg(feature = "slack")]
        {
            use hermes_slack::{SlackAdapter, SlackMode, SlackSettings};
            let mode = if !self.app_token.is_empty() {
                SlackMode::Socket {
                    app_token: self.app_token.expose().to_owned(),
                }
            } else {
                SlackMode::Events {
                    signing_secret: self.signing_secret.expose().to_owned(),
                    listen: self
                        .events_listen
                        .parse()
                        .map_err(|e| format!("slack.events_listen: {e}"))?,
                }
            };
            Ok(Arc::new(SlackAdapter::new(SlackSettings {
                bot_token: self.bot_token.expose().to_owned(),
                mode,
                api_url: self.api_url.clone(),
                allowed_channels: self.allowed_channels.clone(),
                allowed_teams: self.allowed_teams.clone(),
                reply_in_thread: self.reply_in_thread,
                socket_idle: std::time::Duration::from_secs(self.socket_idle_secs),
            })?))
        }
        #[cfg(not(feature = "slack"))]
        Err(super::left_out("slack", "SLACK_BOT_TOKEN"))
    }
}
