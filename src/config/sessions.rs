//! The `[sessions]` section: when conversations start over by themselves.

use std::collections::HashMap;
use std::path::Path;

use hermes_adapter::Platform;
use serde::{Deserialize, Serialize};

use super::ConfigError;

/// When a conversation starts over by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ResetMode {
    /// Never (default): only `/new` starts over.
    #[default]
    None,
    /// Every day at `daily_at_hour`.
    Daily,
    /// After `idle_minutes` without a message.
    Idle,
    /// Whichever comes first.
    Both,
}

/// A reset policy, complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResetPolicy {
    pub mode: ResetMode,
    pub daily_at_hour: u8,
    pub idle_minutes: u64,
}

/// Overrides of the reset policy for a platform and/or chat kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ResetOverride {
    pub reset: Option<ResetMode>,
    pub daily_at_hour: Option<u8>,
    pub idle_minutes: Option<u64>,
}

/// Session lifetime.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionsConfig {
    /// `none`, `daily`, `idle` or `both`.
    pub reset: ResetMode,
    /// Local hour (agent.timezone) of the daily reset.
    pub daily_at_hour: u8,
    /// Minutes without a message before an idle reset.
    pub idle_minutes: u64,
    /// Overrides by `direct` / `group`, by platform (`telegram`), or both (`telegram.group`);
    /// the most specific wins.
    pub by: HashMap<String, ResetOverride>,
}

impl Default for SessionsConfig {
    fn default() -> Self {
        SessionsConfig {
            reset: ResetMode::None,
            daily_at_hour: 4,
            idle_minutes: 1440,
            by: HashMap::new(),
        }
    }
}

impl SessionsConfig {
    /// Hours of the day and override keys that name a chat kind or a platform.
    pub(super) fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        let bad = |key: &str, problem: String| Err(ConfigError::invalid(file, key, problem));
        let hours = std::iter::once(self.daily_at_hour)
            .chain(self.by.values().filter_map(|o| o.daily_at_hour));
        if hours.into_iter().any(|h| h > 23) {
            return bad(
                "sessions.daily_at_hour",
                "must be an hour from 0 to 23".into(),
            );
        }
        if let Some(key) = self.by.keys().find(|k| {
            let mut parts = k.split('.');
            let first = parts.next().unwrap_or_default();
            let second = parts.next();
            let kind_ok = |s: &str| matches!(s, "direct" | "group");
            let known = match second {
                None => kind_ok(first) || first.parse::<Platform>().is_ok(),
                Some(kind) => first.parse::<Platform>().is_ok() && kind_ok(kind),
            };
            !known || parts.next().is_some()
        }) {
            return bad(
                "sessions.by",
                format!("`{key}` is not `direct`, `group`, a platform, or `platform.direct|group`"),
            );
        }
        Ok(())
    }

    /// The policy for sessions on `platform` in chats of `kind`.
    pub fn policy(&self, platform: Platform, kind: hermes_adapter::ChatKind) -> ResetPolicy {
        let kind = match kind {
            hermes_adapter::ChatKind::Direct => "direct",
            _ => "group",
        };
        let mut p = ResetPolicy {
            mode: self.reset,
            daily_at_hour: self.daily_at_hour,
            idle_minutes: self.idle_minutes,
        };
        for key in [
            kind.to_owned(),
            platform.to_string(),
            format!("{platform}.{kind}"),
        ] {
            if let Some(o) = self.by.get(&key) {
                p.mode = o.reset.unwrap_or(p.mode);
                p.daily_at_hour = o.daily_at_hour.unwrap_or(p.daily_at_hour);
                p.idle_minutes = o.idle_minutes.unwrap_or(p.idle_minutes);
            }
        }
        p
    }
}
