//! Semantic checks of a loaded configuration, with errors that name the key.

use hermes_adapter::Platform;

use super::{Config, ConfigError};

impl Config {
    /// Semantic checks the types cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let file = self.source.as_deref();
        let bad = |key: &str, problem: String| Err(ConfigError::invalid(file, key, problem));
        check_http_url(&self.llm.base_url).or_else(|p| bad("llm.base_url", p))?;
        for (i, f) in self.llm.fallback.iter().enumerate() {
            if let Some(url) = &f.base_url {
                check_http_url(url).or_else(|p| bad(&format!("llm.fallback[{i}].base_url"), p))?;
            }
            if f.model.trim().is_empty() {
                return bad(
                    &format!("llm.fallback[{i}].model"),
                    "must not be empty".into(),
                );
            }
        }
        if self.admin.enabled && self.admin.listen.parse::<std::net::SocketAddr>().is_err() {
            return bad(
                "admin.listen",
                format!(
                    "`{}` is not an address with a port (for example \"127.0.0.1:8790\")",
                    self.admin.listen
                ),
            );
        }
        if self.llm.model.trim().is_empty() {
            return bad(
                "llm.model",
                "must not be empty (for example \"gpt-4o-mini\")".into(),
            );
        }
        if self.llm.max_concurrent_requests == 0 {
            return bad("llm.max_concurrent_requests", "must be at least 1".into());
        }
        if self.agent.max_iterations == 0 {
            return bad("agent.max_iterations", "must be at least 1".into());
        }
        if !(0.1..=0.95).contains(&self.agent.compression_threshold) {
            return bad(
                "agent.compression_threshold",
                "must be between 0.1 and 0.95".into(),
            );
        }
        if self.agent.history_messages < 2 {
            return bad("agent.history_messages", "must be at least 2".into());
        }
        if let Some(tz) = &self.agent.timezone
            && jiff::tz::TimeZone::get(tz).is_err()
        {
            return bad(
                "agent.timezone",
                format!("unknown time zone `{tz}` (use an IANA name such as \"Europe/Berlin\")"),
            );
        }
        if self.gateway.max_concurrent_turns == 0 {
            return bad("gateway.max_concurrent_turns", "must be at least 1".into());
        }
        if self.gateway.session_idle_minutes.is_nan() || self.gateway.session_idle_minutes <= 0.0 {
            return bad("gateway.session_idle_minutes", "must be above 0".into());
        }
        if self.gateway.send_max_attempts == 0 {
            return bad("gateway.send_max_attempts", "must be at least 1".into());
        }
        for entry in &self.gateway.allowed_users {
            if let Some((platform, id)) = entry.split_once(':')
                && (platform.parse::<hermes_adapter::Platform>().is_err() || id.is_empty())
            {
                return bad(
                    "gateway.allowed_users",
                    format!("`{entry}` is not `platform:id` or a bare user id"),
                );
            }
        }
        let known = |set: &String| super::TOOLSETS.iter().any(|(name, _)| name == set);
        let sets = self
            .tools
            .toolsets
            .iter()
            .map(|s| ("tools.toolsets".to_owned(), s));
        let per_platform = self.tools.platforms.iter().flat_map(|(p, sets)| {
            sets.iter()
                .map(move |s| (format!("tools.platforms.{p}"), s))
        });
        if let Some((key, set)) = sets.chain(per_platform).find(|(_, s)| !known(s)) {
            let names: Vec<&str> = super::TOOLSETS.iter().map(|(n, _)| *n).collect();
            return bad(
                &key,
                format!("unknown toolset `{set}` (known: {})", names.join(", ")),
            );
        }
        if let Some(tool) = self.policy.tools.keys().find(|t| !super::is_builtin(t)) {
            return bad("policy.tools", format!("unknown tool `{tool}`"));
        }
        if self.policy.approval_timeout_secs == 0 {
            return bad("policy.approval_timeout_secs", "must be at least 1".into());
        }
        let hours = std::iter::once(self.sessions.daily_at_hour)
            .chain(self.sessions.by.values().filter_map(|o| o.daily_at_hour));
        if hours.into_iter().any(|h| h > 23) {
            return bad(
                "sessions.daily_at_hour",
                "must be an hour from 0 to 23".into(),
            );
        }
        if let Some(key) = self.sessions.by.keys().find(|k| {
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
        if self.tools.max_concurrent_subagents == 0 {
            return bad(
                "tools.max_concurrent_subagents",
                "must be at least 1".into(),
            );
        }
        for platform in self.platforms() {
            platform.validate(file)?;
        }
        Ok(())
    }
}

/// An http(s) URL with a host, or what is wrong with it.
pub(super) fn check_http_url(value: &str) -> Result<(), String> {
    match reqwest::Url::parse(value) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        Ok(_) => Err(format!("`{value}` must be an http:// or https:// URL")),
        Err(e) => Err(format!("`{value}` is not a URL: {e}")),
    }
}
