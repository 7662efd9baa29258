//! Telegram adapter for hermes, on teloxide's `Bot` API client.
//!
//! Receiving is long polling with `getUpdates`, driven here rather than by teloxide's
//! dispatcher so that the offset — Telegram's acknowledgement — only moves past an update after
//! the inbox has stored it. A crash between the two means Telegram sends the update again and
//! the inbox recognises it. Another poller on the same token (HTTP 409) is reported as
//! [`AdapterError::Conflict`] so the supervisor backs off instead of fighting over updates.
//!
//! Webhook mode (`webhook`) receives the same updates by HTTP POST instead, for deployments
//! behind a reverse proxy or a load balancer; they go through the same conversion and the same
//! inbox rule (stored before Telegram is answered).
//!
//! The Bot API URL is configurable (`telegram.api_url`) for a local Bot API server, a proxy, or
//! the test fake.

mod format;
#[doc(hidden)]
pub mod fuzzing;
mod inbound;
mod outbound;
mod webhook;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use hermes_adapter::{
    Adapter, AdapterError, Attachment, Capabilities, ChatId, Delivery, InboundSink, LengthUnit,
    Outbound, Platform, SendError, SentId, ThreadId,
};
use teloxide::net::Download;
use teloxide::payloads::{GetUpdatesSetters, SendChatActionSetters};
use teloxide::prelude::Requester;
use teloxide::types::{AllowedUpdate, BotCommand, ChatAction, MessageId, Update};
use teloxide::{ApiError, Bot, RequestError};
use tokio_util::sync::CancellationToken;

pub use format::to_telegram_html;
pub use inbound::BotIdentity;
use inbound::Inbound;
pub use webhook::{MAX_BODY_BYTES, SECRET_HEADER, WebhookSettings};

/// The update kinds hermes asks for, when polling and when registering a webhook alike.
const ALLOWED_UPDATES: [AllowedUpdate; 2] = [AllowedUpdate::Message, AllowedUpdate::CallbackQuery];

/// Telegram counts message length in UTF-16 code units of the visible text.
pub const MAX_MESSAGE_LEN: usize = 4096;

/// How to reach the Bot API.
#[derive(Clone)]
pub struct TelegramSettings {
    /// Token from @BotFather.
    pub token: String,
    /// Bot API base URL, e.g. `https://api.telegram.org`.
    pub api_url: url::Url,
    /// Long-poll timeout in seconds.
    pub poll_timeout_secs: u32,
    /// Receive by webhook instead of long polling.
    pub webhook: Option<WebhookSettings>,
}

impl std::fmt::Debug for TelegramSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramSettings")
            .field("token", &"***")
            .field("api_url", &self.api_url.as_str())
            .field("poll_timeout_secs", &self.poll_timeout_secs)
            .field("webhook", &self.webhook)
            .finish()
    }
}

/// The Telegram adapter.
pub struct TelegramAdapter {
    bot: Bot,
    poll_timeout: u32,
    me: RwLock<Option<BotIdentity>>,
    webhook: Option<webhook::Webhook>,
}

impl TelegramAdapter {
    pub fn new(settings: TelegramSettings) -> Self {
        // teloxide's client gives up on any request after 17 s; a long poll waits up to
        // `poll_timeout`, so with the default client every quiet poll failed as a network error
        // (and the listener restarted with a growing backoff). The client waits longer.
        let client = teloxide::net::default_reqwest_settings()
            .timeout(std::time::Duration::from_secs(
                u64::from(settings.poll_timeout_secs) + 15,
            ))
            .build();
        let bot = match client {
            Ok(client) => Bot::with_client(settings.token, client),
            Err(e) => {
                tracing::warn!(error = %e, "cannot build the Telegram HTTP client with a long-poll timeout; using the default one");
                Bot::new(settings.token)
            }
        };
        TelegramAdapter {
            bot: bot.set_api_url(settings.api_url),
            poll_timeout: settings.poll_timeout_secs,
            me: RwLock::new(None),
            webhook: settings.webhook.map(webhook::Webhook::new),
        }
    }

    /// Who the bot is (after the listener started).
    pub fn identity(&self) -> Option<BotIdentity> {
        self.me.read().ok().and_then(|m| m.clone())
    }

    async fn get_me(&self) -> Result<BotIdentity, AdapterError> {
        let me = self
            .bot
            .get_me()
            .await
            .map_err(|e| listener_error(e, "getMe"))?;
        Ok(BotIdentity {
            id: me.user.id.0,
            username: me.username().to_owned(),
        })
    }

    async fn poll(&self, offset: Option<i32>) -> Result<Vec<Update>, RequestError> {
        let mut req = self
            .bot
            .get_updates()
            .timeout(self.poll_timeout)
            .allowed_updates(ALLOWED_UPDATES);
        if let Some(o) = offset {
            req = req.offset(o);
        }
        req.await
    }

    /// Long polling until `shutdown`: the offset moves past an update only once it is stored.
    async fn poll_updates(
        &self,
        sink: &dyn InboundSink,
        me: &BotIdentity,
        shutdown: &CancellationToken,
    ) -> Result<(), AdapterError> {
        let mut offset: Option<i32> = None;
        loop {
            let polled = tokio::select! {
                r = self.poll(offset) => r,
                _ = shutdown.cancelled() => return Ok(()),
            };
            let (updates, max_id) = match polled {
                Ok(updates) => (updates, None),
                Err(RequestError::InvalidJson { raw, .. }) => salvage(&raw),
                Err(RequestError::RetryAfter(s)) => {
                    tracing::warn!(wait = ?s.duration(), "getUpdates rate limited");
                    tokio::select! {
                        _ = tokio::time::sleep(s.duration()) => continue,
                        _ = shutdown.cancelled() => return Ok(()),
                    }
                }
                Err(e) => return Err(listener_error(e, "getUpdates")),
            };
            sink.heartbeat();
            for update in &updates {
                deliver(&self.bot, sink, update, me).await?;
                offset = Some(offset.unwrap_or(0).max(update.id.as_offset()));
            }
            if let Some(max) = max_id {
                // Skip past unparseable updates too; they were logged.
                offset = Some(offset.unwrap_or(0).max(max + 1));
            }
        }
    }
}

/// Hand one update to the sink. `Ok(())` means it is stored (or a copy, or skipped): the offset
/// may move past it, the webhook request may be answered 200.
async fn deliver(
    bot: &Bot,
    sink: &dyn InboundSink,
    update: &Update,
    me: &BotIdentity,
) -> Result<(), AdapterError> {
    let (msg, callback) = match inbound::convert(update, me) {
        Inbound::Message(m) => (m, None),
        Inbound::Button(m, id) => (m, Some(id)),
        Inbound::Skip => return Ok(()),
    };
    let delivered = sink.deliver(msg).await.map_err(|e| {
        AdapterError::Transient(format!(
            "inbox unavailable, not acknowledging update {}: {e}",
            update.id.0
        ))
    })?;
    if let Some(id) = callback
        && delivered == Delivery::Stored
        && let Err(e) = bot.answer_callback_query(id).await
    {
        tracing::debug!(error = %outbound::classify(e), "answerCallbackQuery failed");
    }
    Ok(())
}

/// Updates from a body teloxide could not parse as a whole: every element that parses on its
/// own, and the highest update id seen, so one malformed update cannot block the queue.
fn salvage(raw: &str) -> (Vec<Update>, Option<i32>) {
    let Ok(body) = serde_json::from_str::<serde_json::Value>(raw) else {
        return (Vec::new(), None);
    };
    let items = body
        .get("result")
        .and_then(|r| r.as_array())
        .cloned()
        .unwrap_or_default();
    let mut max_id = None;
    let mut updates = Vec::new();
    for item in items {
        if let Some(id) = item.get("update_id").and_then(|v| v.as_i64()) {
            max_id = max_id.max(Some(id as i32));
        }
        // Parse from text: teloxide's update parser borrows keys and rejects an owned Value.
        match serde_json::from_str::<Update>(&item.to_string()) {
            Ok(u) => updates.push(u),
            Err(e) => {
                tracing::warn!(error = %e, "skipping a Telegram update that cannot be parsed")
            }
        }
    }
    (updates, max_id)
}

/// Why a listener call (`call`: getUpdates, setWebhook…) failed, for the supervisor.
fn listener_error(e: RequestError, call: &str) -> AdapterError {
    match e {
        RequestError::Api(ApiError::TerminatedByOtherGetUpdates) => {
            AdapterError::Conflict("terminated by another getUpdates request".into())
        }
        RequestError::Api(ApiError::InvalidToken) => {
            AdapterError::Unauthorized("invalid bot token".into())
        }
        RequestError::Api(ApiError::CantGetUpdates) => {
            AdapterError::Fatal("a webhook is set for this bot (another process in webhook mode?) while this one is in polling mode (telegram.mode)".into())
        }
        RequestError::Network(e) => AdapterError::Transient(format!(
            "network: {}",
            outbound::without_url(e.to_string(), e.url())
        )),
        other => AdapterError::Transient(format!("{call}: {}", outbound::classify(other))),
    }
}

#[async_trait]
impl Adapter for TelegramAdapter {
    fn platform(&self) -> Platform {
        Platform::Telegram
    }

    /// Long polling allows one consumer; webhooks reach every process behind the balancer.
    fn receives_alone(&self) -> bool {
        self.webhook.is_none()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            max_message_len: MAX_MESSAGE_LEN,
            length_unit: LengthUnit::Utf16,
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
        let me = tokio::select! {
            r = self.get_me() => r?,
            _ = shutdown.cancelled() => return Ok(()),
        };
        tracing::info!(bot = %me.username, "Telegram connected");
        if let Ok(mut slot) = self.me.write() {
            *slot = Some(me.clone());
        }
        let commands = [
            ("new", "Start a new conversation"),
            ("stop", "Stop the current answer"),
            ("status", "Session, model and health"),
            ("help", "What I can do"),
        ]
        .map(|(c, d)| BotCommand::new(c, d));
        if let Err(e) = self.bot.set_my_commands(commands).await {
            tracing::debug!(error = %outbound::classify(e), "setMyCommands failed");
        }
        if let Some(hook) = &self.webhook {
            return hook.run(self.bot.clone(), me, sink, &shutdown).await;
        }
        // Long polling does not work while a webhook is set.
        if let Err(e) = self.bot.delete_webhook().await {
            tracing::warn!(error = %outbound::classify(e), "deleteWebhook failed");
        }
        sink.heartbeat();
        self.poll_updates(sink.as_ref(), &me, &shutdown).await
    }

    async fn send(&self, out: &Outbound) -> Result<SentId, SendError> {
        outbound::send(&self.bot, out).await
    }

    fn max_upload_bytes(&self) -> u64 {
        outbound::MAX_UPLOAD_BYTES
    }

    async fn edit(&self, chat: &ChatId, id: &SentId, text: &str) -> Result<(), SendError> {
        outbound::edit(&self.bot, chat.as_str(), &id.0, text).await
    }

    async fn typing(&self, chat: &ChatId, thread: Option<&ThreadId>) -> Result<(), SendError> {
        let mut req = self
            .bot
            .send_chat_action(outbound::chat_id(chat.as_str())?, ChatAction::Typing);
        if let Some(t) = thread.and_then(|t| t.as_str().parse::<i32>().ok()) {
            req = req.message_thread_id(teloxide::types::ThreadId(MessageId(t)));
        }
        req.await.map(|_| ()).map_err(outbound::classify)
    }

    async fn fetch_attachment(
        &self,
        attachment: &Attachment,
        max_bytes: u64,
    ) -> Result<Vec<u8>, SendError> {
        if attachment.size.is_some_and(|s| s > max_bytes) {
            return Err(SendError::TooLong);
        }
        let file = self
            .bot
            .get_file(teloxide::types::FileId(attachment.locator.clone()))
            .await
            .map_err(outbound::classify)?;
        if u64::from(file.meta.size) > max_bytes {
            return Err(SendError::TooLong);
        }
        let mut bytes = Vec::with_capacity(file.meta.size as usize);
        tokio::time::timeout(
            Duration::from_secs(120),
            self.bot.download_file(&file.path, &mut bytes),
        )
        .await
        .map_err(|_| SendError::Transient("download timed out".into()))?
        .map_err(|e| SendError::Transient(format!("download failed: {e}")))?;
        Ok(bytes)
    }

    async fn probe(&self) -> Result<String, AdapterError> {
        let me = self.get_me().await?;
        let mut about = format!("@{} (id {})", me.username, me.id);
        if let Some(hook) = &self.webhook {
            about.push_str(&format!("; {}", hook.describe(&self.bot).await));
        }
        Ok(about)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn salvage_keeps_good_updates_and_skips_bad_ones() {
        let raw = r#"{"ok":true,"result":[
            {"update_id":7,"message":{"message_id":1,"date":0,"chat":{"id":1,"type":"private"},"text":"hi"}},
            {"update_id":8,"garbage":true,"message":42},
            "not even an object"
        ]}"#;
        let (updates, max) = salvage(raw);
        assert_eq!(max, Some(8));
        assert_eq!(updates.first().map(|u| u.id.0), Some(7));
    }

    #[test]
    fn settings_debug_hides_the_token() {
        let s = TelegramSettings {
            token: "123:secret".into(),
            api_url: "http://127.0.0.1:1".parse().unwrap(),
            poll_timeout_secs: 30,
            webhook: None,
        };
        assert!(!format!("{s:?}").contains("secret"));
    }
}
