//! `[gateway]`: who is served everywhere, what a busy session does with a new message, how
//! sessions and delivery are bounded.

use std::path::Path;

use hermes_adapter::{GroupSessions, Platform};
use serde::{Deserialize, Serialize};

use super::ConfigError;

/// What happens to a message that arrives while its session is busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BusyMode {
    /// Stop the running turn at the next safe point and answer everything received so far in
    /// one new turn.
    #[default]
    Interrupt,
    /// Answer each message in order, one turn each.
    Queue,
}

/// The daemon: who is served, how sessions and delivery behave.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct GatewayConfig {
    /// Users allowed on every platform: `platform:id` or a bare id. Env: `HERMES_ALLOWED_USERS`
    /// (comma-separated).
    pub allowed_users: Vec<String>,
    /// Serve everyone who can reach the bot. Env: `HERMES_ALLOW_ALL_USERS=true`.
    pub allow_all_users: bool,
    pub busy_mode: BusyMode,
    pub group_sessions: GroupSessions,
    /// Agent turns running at once across all sessions. A turn waiting for the model costs
    /// little, so the default is sized for hundreds of people at once; the model calls
    /// themselves are paced by `llm.max_concurrent_requests` (adaptive by default).
    pub max_concurrent_turns: usize,
    /// Turns one person may have running at once, across all their sessions and threads.
    pub turns_per_person: usize,
    /// Messages a person may send per minute before the rest queue without interrupting the
    /// running turn (they are told once to slow down; nothing is dropped).
    pub messages_per_minute: u32,
    /// An idle session's lane is dropped from memory after this long (its history stays stored).
    /// Fractions are allowed (`0.5` = 30 s).
    pub session_idle_minutes: f64,
    /// On SIGTERM/SIGINT, how long running turns may take to finish before the daemon exits
    /// (unfinished work is resumed on the next start).
    pub shutdown_grace_secs: u64,
    /// Attempts to send one outbound message before it is marked failed.
    pub send_max_attempts: u32,
    /// While the model provider is down (unavailable, rate limiting, timing out), messages wait
    /// and are retried; after this many minutes of failures the user is told it failed.
    pub outage_patience_minutes: u64,
    /// A platform listener that has received nothing (no event, no acknowledged heartbeat, no
    /// answered poll) for this long is deaf however open its connection looks: it is restarted
    /// and counted. Above every platform's normal rhythm (Telegram's 30 s long poll, Discord's
    /// ~41 s heartbeat, Slack's pings, IMAP IDLE's refresh, Matrix's 30 s sync).
    pub listener_silence_secs: u64,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            allowed_users: Vec::new(),
            allow_all_users: false,
            busy_mode: BusyMode::default(),
            group_sessions: GroupSessions::default(),
            max_concurrent_turns: 256,
            turns_per_person: 2,
            messages_per_minute: 20,
            session_idle_minutes: 60.0,
            shutdown_grace_secs: 20,
            send_max_attempts: 8,
            outage_patience_minutes: 60,
            listener_silence_secs: 150,
        }
    }
}

impl GatewayConfig {
    /// Limits above zero and allowlist entries that name a platform.
    pub(super) fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        let bad = |key: &str, problem: String| Err(ConfigError::invalid(file, key, problem));
        if self.max_concurrent_turns == 0 {
            return bad("gateway.max_concurrent_turns", "must be at least 1".into());
        }
        if self.turns_per_person == 0 {
            return bad("gateway.turns_per_person", "must be at least 1".into());
        }
        if self.messages_per_minute == 0 {
            return bad("gateway.messages_per_minute", "must be at least 1".into());
        }
        if self.session_idle_minutes.is_nan() || self.session_idle_minutes <= 0.0 {
            return bad("gateway.session_idle_minutes", "must be above 0".into());
        }
        if self.send_max_attempts == 0 {
            return bad("gateway.send_max_attempts", "must be at least 1".into());
        }
        if self.listener_silence_secs < 5 {
            return bad("gateway.listener_silence_secs", "must be at least 5".into());
        }
        for entry in &self.allowed_users {
            // A bare Matrix id (`@alice:example.org`) has a colon of its own.
            let bare_matrix = entry.trim().starts_with('@');
            if let Some((platform, id)) = entry.split_once(':')
                && !bare_matrix
                && (platform.parse::<hermes_adapter::Platform>().is_err() || id.is_empty())
            {
                return bad(
                    "gateway.allowed_users",
                    format!("`{entry}` is not `platform:id` or a bare user id"),
                );
            }
        }
        Ok(())
    }

    /// The global allowlist's ids for `platform`: its `platform:id` entries, and the bare ids
    /// that `looks_like` takes for one of its ids (an address, a `@user:server`).
    pub fn allowed_on(&self, platform: Platform, looks_like: impl Fn(&str) -> bool) -> Vec<String> {
        self.allowed_users
            .iter()
            .map(|e| e.trim())
            .filter_map(|e| match e.split_once(':') {
                Some((p, id)) if p.parse::<Platform>().is_ok() => {
                    (p.parse::<Platform>() == Ok(platform)).then(|| id.trim().to_owned())
                }
                _ => looks_like(e).then(|| e.to_owned()),
            })
            .collect()
    }
}
