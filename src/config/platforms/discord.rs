//! `[discord]`: the bot token, who is heard, where the bot answers, and the adapter built from
//! them.

use std::path::Path;
use std::sync::Arc;

use hermes_adapter::{Adapter, Platform};
use serde::{Deserialize, Serialize};

use super::PlatformSection;
use crate::config::env::list;
use crate::config::validate::check_http_url;
use crate::config::{Config, ConfigError, EnvSource, Secret};

/// The Discord adapter.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct DiscordConfig {
    /// Off switch; Discord runs when this is true and a token is set.
    pub enabled: bool,
    /// Bot token from the developer portal (Bot > Token). Env: `DISCORD_BOT_TOKEN`.
    pub bot_token: Secret,
    /// Discord user ids (snowflakes, as strings) allowed to talk to the bot.
    /// Env: `DISCORD_ALLOWED_USERS`.
    pub allowed_users: Vec<String>,
    /// Discord user ids of the operators (served too; see `[access]`). Env: `DISCORD_OPERATORS`.
    pub operators: Vec<String>,
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
    /// Gateway shards the bot's servers are split over: 1 below Discord's limit (2,500
    /// servers), else the number `GET /gateway/bot` recommends. The same on every process of a
    /// deployment, where the shards spread over the processes. Env: `DISCORD_SHARDS`.
    pub shards: u16,
}

impl Default for DiscordConfig {
    fn default() -> Self {
        DiscordConfig {
            enabled: true,
            bot_token: Secret::default(),
            allowed_users: Vec::new(),
            operators: Vec::new(),
            allowed_roles: Vec::new(),
            allowed_guilds: Vec::new(),
            api_url: "https://discord.com".into(),
            gateway_url: None,
            free_response_channels: Vec::new(),
            require_mention: true,
            auto_thread: false,
            message_content: true,
            shards: 1,
        }
    }
}

impl DiscordConfig {
    /// Parsed id lists for the adapter (validated before).
    pub fn ids(list: &[String]) -> Vec<u64> {
        list.iter()
            .filter_map(|id| id.trim().parse().ok())
            .collect()
    }
}

impl PlatformSection for DiscordConfig {
    fn platform(&self) -> Platform {
        Platform::Discord
    }

    fn is_active(&self) -> bool {
        self.enabled && !self.bot_token.is_empty()
    }

    fn how_to_enable(&self) -> &'static str {
        "DISCORD_BOT_TOKEN (from the Discord developer portal)"
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

    /// Apply the `DISCORD_*` environment variables.
    fn overlay(&mut self, env: &dyn EnvSource) -> Result<(), ConfigError> {
        if let Some(v) = env.var("DISCORD_BOT_TOKEN") {
            self.bot_token = Secret::new(v.trim());
        }
        for (var, list_of) in [
            ("DISCORD_ALLOWED_USERS", &mut self.allowed_users),
            ("DISCORD_OPERATORS", &mut self.operators),
            ("DISCORD_ALLOWED_ROLES", &mut self.allowed_roles),
            ("DISCORD_ALLOWED_GUILDS", &mut self.allowed_guilds),
        ] {
            if let Some(v) = env.var(var) {
                let ids = list(&v);
                if let Some(bad) = ids.iter().find(|id| !is_snowflake(id)) {
                    return Err(ConfigError::env(
                        var,
                        format!(
                            "`{bad}` is not a numeric Discord id (comma-separated ids expected; turn on Developer Mode and use Copy ID)"
                        ),
                    ));
                }
                *list_of = ids;
            }
        }
        if let Some(v) = env.var("DISCORD_API_URL") {
            self.api_url = v.trim().trim_end_matches('/').to_owned();
        }
        if let Some(v) = env.var("DISCORD_GATEWAY_URL") {
            self.gateway_url = Some(v.trim().to_owned());
        }
        if let Some(v) = env.var("DISCORD_SHARDS") {
            self.shards = v.trim().parse().map_err(|_| {
                ConfigError::env(
                    "DISCORD_SHARDS",
                    format!(
                        "`{}` is not a number of shards (1 to {MAX_SHARDS})",
                        v.trim()
                    ),
                )
            })?;
        }
        Ok(())
    }

    /// Check the URLs and every id list.
    fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        check_http_url(&self.api_url)
            .map_err(|p| ConfigError::invalid(file, "discord.api_url", p))?;
        for (key, list) in [
            ("discord.allowed_users", &self.allowed_users),
            ("discord.operators", &self.operators),
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
        if !(1..=MAX_SHARDS).contains(&self.shards) {
            return Err(ConfigError::invalid(
                file,
                "discord.shards",
                format!(
                    "{} shards: between 1 and {MAX_SHARDS} (1 unless Discord asks for sharding)",
                    self.shards
                ),
            ));
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

    fn summary(&self) -> String {
        if self.is_active() {
            format!("on, {} allowed user(s)", self.allowed_users.len())
        } else {
            "off (set DISCORD_BOT_TOKEN)".to_owned()
        }
    }

    fn adapter_changed(&self, old: &Config, new: &Config) -> bool {
        super::differ(&old.discord, &new.discord, |c| {
            c.allowed_users.clear();
            c.operators.clear();
        })
    }

    fn build(&self, _config: &Config) -> Result<Arc<dyn Adapter>, String> {
        #[cfg(feature = "discord")]
        {
            let api_url = self
                .api_url
                .parse()
                .map_err(|e| format!("discord.api_url: {e}"))?;
            let gateway_url = self
                .gateway_url
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(|e| format!("discord.gateway_url: {e}"))?;
            Ok(Arc::new(hermes_discord::DiscordAdapter::new(
                hermes_discord::DiscordSettings {
                    token: self.bot_token.expose().to_owned(),
                    api_url,
                    gateway_url,
                    allowed_guilds: Self::ids(&self.allowed_guilds),
                    allowed_roles: Self::ids(&self.allowed_roles),
                    free_response_channels: Self::ids(&self.free_response_channels),
                    require_mention: self.require_mention,
                    auto_thread: self.auto_thread,
                    message_content: self.message_content,
                    shards: self.shards,
                },
            )))
        }
        #[cfg(not(feature = "discord"))]
        Err(super::left_out("discord", "DISCORD_BOT_TOKEN"))
    }
}

/// Most gateway shards accepted (far beyond any bot's needs; a typo guard).
const MAX_SHARDS: u16 = 4096;

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
    fn shards_come_from_the_file_or_the_environment_and_are_bounded() {
        let mut c = DiscordConfig::default();
        assert_eq!(c.shards, 1);
        c.overlay(&[("DISCORD_SHARDS", " 4 ")]).unwrap();
        assert_eq!(c.shards, 4);
        c.validate(None).unwrap();
        let e = c.overlay(&[("DISCORD_SHARDS", "four")]).unwrap_err();
        assert_eq!(e.key, "DISCORD_SHARDS");
        for bad in [0, MAX_SHARDS + 1] {
            c.shards = bad;
            assert_eq!(c.validate(None).unwrap_err().key, "discord.shards");
        }
    }

    #[test]
    fn a_reload_restarts_discord_only_when_its_settings_change() {
        let with = |c: &DiscordConfig| Config {
            discord: c.clone(),
            ..Default::default()
        };
        let changed = |a: &DiscordConfig, b: &DiscordConfig| a.adapter_changed(&with(a), &with(b));
        let base = DiscordConfig::default();
        let mut users = base.clone();
        users.allowed_users = vec!["5".into()];
        assert!(!changed(&base, &users), "the allowlist is the core's");
        let mut threads = base.clone();
        threads.auto_thread = true;
        assert!(changed(&base, &threads));
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
