//! `[slack]`: the Slack adapter's configuration.

use serde::Deserialize;

use super::Secret;

/// The Slack adapter. It runs when enabled with a bot token and either an app-level token
/// (Socket Mode) or a signing secret (Events API over HTTP).
#[derive(Debug, Clone, Deserialize)]
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
            allowed_channels: Vec::new(),
            allowed_teams: Vec::new(),
            reply_in_thread: true,
            socket_idle_secs: 30,
        }
    }
}

impl SlackConfig {
    pub fn is_active(&self) -> bool {
        self.enabled && !self.bot_token.is_empty()
    }

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
