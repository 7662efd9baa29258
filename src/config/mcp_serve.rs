//! `[mcp.serve]`: hermes as an MCP server to other agents (`/mcp` on the admin listener and
//! `hermes mcp serve` over stdio): who may use it, what it may reach, and whether it may act.

use std::path::Path;

use hermes_adapter::{ChatId, Platform};
use serde::{Deserialize, Serialize};

use super::{ConfigError, Secret};

/// `[mcp.serve]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServeConfig {
    /// The bearer token a client must send (`Authorization: Bearer …`); without one the service
    /// is off. Env: `HERMES_MCP_TOKEN`.
    pub token: Secret,
    /// Let clients act: `message_send` and `approval_answer`. Off: read only.
    pub allow_send: bool,
    /// The chats a client may read and write, as `platform:chat` or `platform:*`; none: every
    /// chat hermes holds a conversation in.
    pub chats: Vec<String>,
}

/// One entry of `chats`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reach {
    Platform(Platform),
    Chat(Platform, ChatId),
}

fn parse(entry: &str) -> Result<Reach, String> {
    let (platform, chat) = entry
        .split_once(':')
        .ok_or_else(|| format!("`{entry}` is not `platform:chat` or `platform:*`"))?;
    let platform: Platform = platform
        .trim()
        .parse()
        .map_err(|e| format!("`{entry}`: {e}"))?;
    match chat.trim() {
        "" => Err(format!(
            "`{entry}` names no chat (use `{platform}:*` for all)"
        )),
        "*" => Ok(Reach::Platform(platform)),
        chat => Ok(Reach::Chat(platform, chat.into())),
    }
}

impl McpServeConfig {
    /// Whether the service is on (a token is set).
    pub fn enabled(&self) -> bool {
        !self.token.is_empty()
    }

    /// Whether `chats` lists this chat (or its whole platform). With no list, `None`: the
    /// caller decides (every chat hermes holds a conversation in).
    pub fn lists(&self, platform: Platform, chat: &ChatId) -> Option<bool> {
        if self.chats.is_empty() {
            return None;
        }
        Some(
            self.chats
                .iter()
                .filter_map(|e| parse(e).ok())
                .any(|r| match r {
                    Reach::Platform(p) => p == platform,
                    Reach::Chat(p, c) => p == platform && &c == chat,
                }),
        )
    }

    pub(super) fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        for entry in &self.chats {
            parse(entry).map_err(|e| ConfigError::invalid(file, "mcp.serve.chats", e))?;
        }
        if !self.token.is_empty() && self.token.expose().len() < 16 {
            return Err(ConfigError::invalid(
                file,
                "mcp.serve.token",
                "is shorter than 16 characters; use a long random token (`openssl rand -hex 32`)"
                    .into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chats_name_a_platform_or_one_chat() {
        let serve = McpServeConfig {
            chats: vec!["telegram:111".into(), "slack:*".into()],
            ..McpServeConfig::default()
        };
        assert_eq!(serve.lists(Platform::Telegram, &"111".into()), Some(true));
        assert_eq!(serve.lists(Platform::Telegram, &"222".into()), Some(false));
        assert_eq!(serve.lists(Platform::Slack, &"C1".into()), Some(true));
        assert_eq!(
            McpServeConfig::default().lists(Platform::Slack, &"C1".into()),
            None
        );
        for bad in ["telegram", "nowhere:1", "telegram:"] {
            let serve = McpServeConfig {
                chats: vec![bad.into()],
                ..McpServeConfig::default()
            };
            let e = serve.validate(None).unwrap_err().to_string();
            assert!(e.contains("mcp.serve.chats"), "{bad}: {e}");
        }
    }
}
