//! Discord adapter for hermes: the gateway websocket (twilight-gateway) for inbound events, the
//! REST API (serenity) for replies and catch-up.
//!
//! # What the bot looks at
//!
//! Direct messages always. In servers, a message is addressed to the bot when it mentions the
//! bot (its user, or a role the bot has), replies to one of the bot's messages, is posted in a
//! thread the bot owns, or is posted in a channel listed in `free_response_channels`
//! (or anywhere, with `require_mention = false`). Everything else is delivered as ambient
//! chatter, which the core ignores. The bot's own messages are dropped here; other bots' are
//! marked as such and ignored by the core. `allowed_guilds` and `allowed_roles` narrow who is
//! heard in servers; the user allowlist itself lives in the core like every platform's.
//!
//! Reading the text of messages that do not mention the bot (follow-ups in its threads,
//! free-response channels) needs the privileged *Message Content* intent, enabled for the bot in
//! the developer portal; without it Discord closes the gateway with code 4014 and the adapter
//! says so. Set `message_content = false` to run without it (mentions and DMs still work).
//!
//! # Delivery rules
//!
//! Discord has no acknowledgement for gateway events: what the SDK received is gone if it is not
//! stored. Events are therefore handed to the inbox in the order they arrived, one at a time,
//! and a storage failure is retried rather than skipped. A button press is acknowledged to
//! Discord (the interaction callback) only after it is stored. Events replayed after a RESUME
//! carry the same message ids and are recognised by the inbox.
//!
//! # Pointing it elsewhere (proxies, tests)
//!
//! `discord.api_url` (env `DISCORD_API_URL`, default `https://discord.com`) replaces the REST
//! base: requests go to `{api_url}/api/v10/...`. The gateway URL is whatever that base answers
//! to `GET /api/v10/gateway`, so a proxy or a fake decides where the websocket connects, unless
//! `discord.gateway_url` (env `DISCORD_GATEWAY_URL`, `ws://` or `wss://`) names it. With the
//! default URL serenity's own rate limiter waits out Discord's buckets; with any other URL
//! serenity disables its limiter (it cannot route it through the proxy), so a 429 comes back to
//! hermes as [`SendError::RetryAfter`] with Discord's `retry_after`, and the outbox waits.
//! # The gateway
//!
//! The websocket is twilight-gateway's (serenity's client cannot resume a session it did not
//! start): reconnects, RESUME and heartbeats are its own. The session (id, sequence number of
//! the last event stored, resume URL) is kept in the store, so a restarted daemon resumes it and
//! Discord replays what was posted meanwhile; when it cannot, recent chats are caught up on over
//! REST. Liveness is what was last received (events, heartbeat acknowledgements), not an open
//! socket. serenity stays for REST and the message model.

mod catch_up;
mod channels;
mod format;
#[doc(hidden)]
pub mod fuzzing;
mod gateway;
mod inbound;
mod outbound;
mod receive;
mod rest;
mod shard;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, RwLock};

use async_trait::async_trait;
use hermes_adapter::{
    Adapter, AdapterError, Attachment, Capabilities, ChatId, InboundSink, LengthUnit, Outbound,
    Platform, SendError, SentId, ThreadId,
};
use tokio_util::sync::CancellationToken;

pub use format::to_discord_markdown;

use channels::Channels;
use rest::Rest;

/// Discord counts message length in characters (Unicode scalar values).
pub const MAX_MESSAGE_LEN: usize = 2000;

/// The REST base of the real Discord.
pub const DEFAULT_API_URL: &str = "https://discord.com";

/// How to reach Discord and whom to hear.
#[derive(Clone)]
pub struct DiscordSettings {
    /// Bot token from the developer portal (without the `Bot ` prefix; it is added).
    pub token: String,
    /// REST base URL, [`DEFAULT_API_URL`] unless behind a proxy.
    pub api_url: url::Url,
    /// Gateway websocket URL; `None`: the one the REST base announces.
    pub gateway_url: Option<url::Url>,
    /// Servers the bot answers in; empty: every server it was added to.
    pub allowed_guilds: Vec<u64>,
    /// In servers, only members with one of these roles are heard; empty: no role needed.
    pub allowed_roles: Vec<u64>,
    /// Channels where every message is addressed to the bot, no mention needed.
    pub free_response_channels: Vec<u64>,
    /// In server channels, answer only when addressed (mention, reply, own thread).
    pub require_mention: bool,
    /// Answer a mention in a channel inside a new thread started from the message.
    pub auto_thread: bool,
    /// Ask for the privileged Message Content intent.
    pub message_content: bool,
    /// Gateway shards the bot's servers are split over (1: one connection for everything);
    /// each is a part of the listener ([`Adapter::receive_parts`]).
    pub shards: u16,
}

impl std::fmt::Debug for DiscordSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscordSettings")
            .field("token", &"***")
            .field("api_url", &self.api_url.as_str())
            .field(
                "gateway_url",
                &self.gateway_url.as_ref().map(url::Url::as_str),
            )
            .field("allowed_guilds", &self.allowed_guilds)
            .field("allowed_roles", &self.allowed_roles)
            .field("free_response_channels", &self.free_response_channels)
            .field("require_mention", &self.require_mention)
            .field("auto_thread", &self.auto_thread)
            .field("message_content", &self.message_content)
            .field("shards", &self.shards)
            .finish()
    }
}

/// Who the bot is, learned from `GET /users/@me`.
#[derive(Debug, Clone)]
pub struct BotIdentity {
    pub id: u64,
    pub name: String,
}

/// The Discord adapter.
pub struct DiscordAdapter {
    settings: DiscordSettings,
    rest: Rest,
    channels: Channels,
    me: RwLock<Option<BotIdentity>>,
    /// Threads known to exist, so an auto-thread is created only once.
    threads: Mutex<HashSet<u64>>,
}

impl DiscordAdapter {
    pub fn new(settings: DiscordSettings) -> Self {
        let rest = Rest::new(&settings.token, &settings.api_url);
        DiscordAdapter {
            settings,
            rest,
            channels: Channels::default(),
            me: RwLock::new(None),
            threads: Mutex::new(HashSet::new()),
        }
    }

    /// Who the bot is (after the listener started).
    pub fn identity(&self) -> Option<BotIdentity> {
        self.me.read().ok().and_then(|m| m.clone())
    }

    async fn get_me(&self) -> Result<BotIdentity, AdapterError> {
        let user = self.rest.current_user().await.map_err(|e| match e {
            SendError::Permanent(m) if m.starts_with(rest::TOKEN_REJECTED) => {
                AdapterError::Unauthorized(m)
            }
            other => AdapterError::Transient(other.to_string()),
        })?;
        Ok(BotIdentity {
            id: user.id.get(),
            name: user.name.clone(),
        })
    }

    fn thread_known(&self, id: u64) -> bool {
        self.threads
            .lock()
            .map(|t| t.contains(&id))
            .unwrap_or(false)
    }

    fn remember_thread(&self, id: u64) {
        if let Ok(mut t) = self.threads.lock() {
            if t.len() >= channels::MAX_ENTRIES {
                t.clear();
            }
            t.insert(id);
        }
    }
}

#[async_trait]
impl Adapter for DiscordAdapter {
    fn platform(&self) -> Platform {
        Platform::Discord
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            max_message_len: MAX_MESSAGE_LEN,
            length_unit: LengthUnit::Chars,
            edit: true,
            typing: true,
            buttons: true,
            threads: true,
            attachments: true,
            free_edits: false,
        }
    }

    async fn run(
        &self,
        sink: Arc<dyn InboundSink>,
        shutdown: CancellationToken,
    ) -> Result<(), AdapterError> {
        self.run_part(0, sink, shutdown).await
    }

    fn receive_parts(&self) -> u16 {
        self.settings.shards.max(1)
    }

    /// Shard `part` of [`DiscordSettings::shards`]: its own gateway connection and session.
    async fn run_part(
        &self,
        part: u16,
        sink: Arc<dyn InboundSink>,
        shutdown: CancellationToken,
    ) -> Result<(), AdapterError> {
        let me = tokio::select! {
            r = self.get_me() => r?,
            _ = shutdown.cancelled() => return Ok(()),
        };
        let shard = shard::ShardOf::new(part, self.receive_parts());
        tracing::info!(bot = %me.name, id = me.id, %shard, "Discord connected");
        if let Ok(mut slot) = self.me.write() {
            *slot = Some(me.clone());
        }
        gateway::run(self, me, shard, sink, shutdown).await
    }

    async fn send(&self, out: &Outbound) -> Result<SentId, SendError> {
        outbound::send(self, out).await
    }

    fn max_upload_bytes(&self) -> u64 {
        outbound::MAX_UPLOAD_BYTES
    }

    async fn edit(&self, chat: &ChatId, id: &SentId, text: &str) -> Result<(), SendError> {
        outbound::edit(&self.rest, chat, id, text).await
    }

    async fn typing(&self, chat: &ChatId, thread: Option<&ThreadId>) -> Result<(), SendError> {
        outbound::typing(self, chat, thread).await
    }

    async fn fetch_attachment(
        &self,
        attachment: &Attachment,
        max_bytes: u64,
    ) -> Result<Vec<u8>, SendError> {
        if attachment.size.is_some_and(|s| s > max_bytes) {
            return Err(SendError::TooLong);
        }
        self.rest.download(&attachment.locator, max_bytes).await
    }

    async fn probe(&self) -> Result<String, AdapterError> {
        let me = self.get_me().await?;
        Ok(format!("{} (id {})", me.name, me.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_debug_hides_the_token() {
        let s = DiscordSettings {
            token: "secret-token".into(),
            api_url: DEFAULT_API_URL.parse().unwrap(),
            gateway_url: None,
            allowed_guilds: vec![],
            allowed_roles: vec![],
            free_response_channels: vec![],
            require_mention: true,
            auto_thread: false,
            message_content: true,
            shards: 1,
        };
        assert!(!format!("{s:?}").contains("secret"));
    }
}
