//! The `[discord]` section: the bot token, who is heard, and where the bot answers.

use std::path::Path;

use serde::Deserialize;

use super::{ConfigError, EnvSource, Secret};

/// The Discord adapter.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DiscordConfig {
    /// Off switch; Discord runs when this is true and a token is set.
    pub enabled: bool,
    /// Bot token from the developer portal (Bot > Token). Env: `DISCORD_BOT_TOKEN`.
    pub bot_token: Secret,
    /// Discord user ids (snowflakes, as strings) allowed to talk to the bot.
    /// Env: `DISCORD_ALLOWED_USERS`.
    pub allowed_users: Vec<String>,
    /// In servers, only members holding one of these role ids are heard (on top of the user
    /// allowlist); empty: no role needed. Env: `DISCORD_ALLOWED_ROLES`.
    pub allowed_roles: Vec<String>,
    /// Server (guild) ids the bot answers in; empty: every server it was added to. DMs are not
    /// affected. Env: `DISCORD_ALLOWED_GUILDS`.
    pub allowed_guilds: Vec<String>,
    /// REST base URL (a proxy, or a test fake); the gateway URL is asked from it.
    /// Env: `DISCORD_API_URL`.
    pub api_url: String,
    /// Gateway websocket URL (`wss://…`); unset: the one `api_url` announces.
    /// Env: `DISCORD_GATEWAY_URL`.
    pub gateway_url: Option<String>,
    /// Channel ids where every message is for the bot, no mention needed.
    pub free_response_channels: Vec<String>,
    /// In server channels, answer only when mentioned, replied to, or in the bot's own thread.
    pub require_mention: bool,
    /// Answer a mention in a channel inside a new thread started from that message.
    pub auto_thread: bool,
    /// Ask for the privileged Message Content intent (enable it in the developer portal), needed
    /// to read follow-ups in threads and free-response channels that do not mention the bot.
    pub message_content: bool,
}

impl Default for DiscordConfig {
    fn default() -> Self {
        DiscordConfig {
            enabled: true,
            bot_token: Secret::default(),
            allowed_users: Vec::new(),
            allowed_roles: Vec::new(),
            allowed_guilds: Vec::new(),
            api_url: "https://discord.com".into(),
            gateway_url: None,
            free_response_channels: Vec::new(),
            require_mention: true,
            auto_thread: false,
            message_content: true,
        }
    }
}

impl DiscordConfig {
    pub fn is_active(&self) -> bool {
        self.enabled && !self.bot_token.is_empty()
    }

    /// Apply the `DISCORD_*` environment variables.
    pub(super) fn overlay(&mut self, env: &dyn EnvSource) -> Result<(), ConfigError> {
        if let Some(v) = env.var("DISCORD_BOT_TOKEN") {
            self.bot_token = Secret::new(v.trim());
        }
        for (var, list) in [
            ("DISCORD_ALLOWED_USERS", &mut self.allowed_users),
            ("DISCORD_ALLOWED_ROLES", &mut self.allowed_roles),
            ("DISCORD_ALLOWED_GUILDS", &mut self.allowed_guilds),
        ] {
            if let Some(v) = env.var(var) {
                let ids: Vec<String> = v
                    .split([',', ' ', '\n'])
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
                if let Some(bad) = ids.iter().find(|id| !is_snowflake(id)) {
                    return Err(ConfigError::env(
                        var,
                        format!(
                            "`{bad}` is not a numeric Discord id (comma-separated ids expected; turn on Developer Mode and use Copy ID)"
                        ),
                    ));
                }
                *list = ids;
            }
        }
        if let Some(v) = env.var("DISCORD_API_URL") {
            self.api_url = v.trim().trim_end_matches('/').to_owned();
        }
        if let Some(v) = env.var("DISCORD_GATEWAY_URL") {
            self.gateway_url = Some(v.trim().to_owned());
        }
        Ok(())
    }

    /// Check every id list; the URL is checked with the other URLs.
    pub(super) fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        for (key, list) in [
            ("discord.allowed_users", &self.allowed_users),
            ("discord.allowed_roles", &self.allowed_roles),
            ("discord.allowed_guilds", &self.allowed_guilds),
            (
                "discord.free_response_channels",
                &self.free_response_channels,
            ),
        ] {
            if let Some(id) = list.iter().find(|id| !is_snowflake(id)) {
                return Err(ConfigError::invalid(
                    file,
                    key,
                    format!(
                        "`{id}` is not a numeric Discord id (turn on Developer Mode in Discord and use Copy ID)"
                    ),
                ));
            }
        }
        if let Some(url) = &self.gateway_url {
            match url::Url::parse(url) {
                Ok(u) if matches!(u.scheme(), "ws" | "wss") && u.host().is_some() => {}
                _ => {
                    return Err(ConfigError::invalid(
                        file,
                        "discord.gateway_url",
                        format!("`{url}` must be a ws:// or wss:// URL"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Feed the settings the adapter is built from (not the user allowlist, which the core
    /// applies) to `h`, so a reload restarts the adapter only when they change.
    pub(super) fn hash_settings(&self, h: &mut impl std::hash::Hasher) {
        use std::hash::Hash;
        (
            self.enabled,
            self.bot_token.expose(),
            &self.api_url,
            &self.gateway_url,
        )
            .hash(h);
        (
            &self.allowed_roles,
            &self.allowed_guilds,
            &self.free_response_channels,
        )
            .hash(h);
        (self.require_mention, self.auto_thread, self.message_content).hash(h);
    }

    /// Parsed id lists for the adapter (validated before).
    pub fn ids(list: &[String]) -> Vec<u64> {
        list.iter()
            .filter_map(|id| id.trim().parse().ok())
            .collect()
    }
}

fn is_snowflake(id: &str) -> bool {
    id.trim().parse::<u64>().is_ok_and(|n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_overrides_and_checks_ids() {
        let mut c = DiscordConfig::default();
        let env = [
            ("DISCORD_BOT_TOKEN", " tok "),
            ("DISCORD_ALLOWED_USERS", "111, 222"),
            ("DISCORD_API_URL", "http://127.0.0.1:9/"),
        ];
        c.overlay(&env).unwrap();
        assert!(c.is_active());
        assert_eq!(c.bot_token.expose(), "tok");
        assert_eq!(c.allowed_users, ["111", "222"]);
        assert_eq!(c.api_url, "http://127.0.0.1:9");
        let bad = [("DISCORD_ALLOWED_ROLES", "admins")];
        let e = c.overlay(&bad).unwrap_err();
        assert_eq!(e.key, "DISCORD_ALLOWED_ROLES");
    }

    #[test]
    fn gateway_urls_are_websockets() {
        let mut c = DiscordConfig::default();
        c.overlay(&[("DISCORD_GATEWAY_URL", "wss://gw.example")])
            .unwrap();
        c.validate(None).unwrap();
        c.gateway_url = Some("https://gw.example".into());
        assert_eq!(c.validate(None).unwrap_err().key, "discord.gateway_url");
    }

    #[test]
    fn a_reload_restarts_discord_only_when_its_settings_change() {
        let fp = |c: &DiscordConfig| {
            let config = super::super::Config {
                discord: c.clone(),
                ..Default::default()
            };
            config.platform_fingerprint(hermes_adapter::Platform::Discord)
        };
        let base = DiscordConfig::default();
        let mut users = base.clone();
        users.allowed_users = vec!["5".into()];
        assert_eq!(fp(&base), fp(&users), "the allowlist is the core's");
        let mut threads = base.clone();
        threads.auto_thread = true;
        assert_ne!(fp(&base), fp(&threads));
    }

    #[test]
    fn names_are_not_ids() {
        let c = DiscordConfig {
            allowed_users: vec!["@alice".into()],
            ..DiscordConfig::default()
        };
        let e = c.validate(None).unwrap_err();
        assert_eq!(e.key, "discord.allowed_users");
        assert_eq!(DiscordConfig::ids(&["5".into(), "x".into()]), [5]);
    }
}
