//! Slack adapter for hermes: Socket Mode or the Events API in, the Web API out, on
//! slack-morphism's Web API client and models.
//!
//! **Receiving.** With an app-level token (`xapp-…`) the adapter uses Socket Mode: it calls
//! `apps.connections.open` and reads the websocket it returns. slack-morphism's own Socket Mode
//! listener acknowledges inside its callback machinery and reconnects on its own, out of our
//! sight; so the websocket loop here is ours (`socket.rs`, tokio-tungstenite, the SDK's envelope
//! models): each envelope is stored through [`InboundSink::deliver`] *before* its `envelope_id`
//! is acknowledged, and a connection that receives nothing at all (no event, hello, ping or
//! pong) for `socket_idle` is dropped and reported as a failure — never "connected but deaf".
//! With a signing secret instead, the adapter listens for the Events API over HTTP
//! (`events_http.rs`): each request's v0 signature is verified (slack-morphism's verifier, which
//! also rejects timestamps more than five minutes off) before anything is stored, and the 200
//! goes back only after storage.
//!
//! **Duplicates.** Slack redelivers events (HTTP retries with `X-Slack-Retry-Num`, envelopes not
//! acked before a reconnect) and sends one channel message twice when the app subscribes to both
//! `message.*` and `app_mention`. Every message is therefore keyed by its channel and `ts`, which
//! all of those copies share; the inbox stores the first and recognises the rest. (`event_id`
//! would not do: the `message` and `app_mention` copies of one message carry different ones;
//! `client_msg_id` is missing on messages posted by integrations.)
//!
//! **After downtime** (`catch_up.rs`) the chats heard from in the last day are read back, since
//! Slack drops an event after a few failed deliveries. **Exactly once:** every post carries its
//! outbox key in message metadata, and a reply that may already have gone out is looked for
//! before it is sent again (`outbound.rs`).
//!
//! **Pointing it elsewhere.** `api_url` replaces `https://slack.com/api` (a proxy, or the test
//! fake); the connector accepts `http://` as well as `https://` for that reason. Socket Mode
//! connects to whatever URL `apps.connections.open` returns.

mod catch_up;
mod events_http;
mod format;
#[doc(hidden)]
pub mod fuzzing;
mod inbound;
mod outbound;
mod socket;
mod web;

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use hermes_adapter::{
    Adapter, AdapterError, Attachment, Capabilities, ChatId, InboundSink, LengthUnit, Outbound,
    Platform, SendError, SentId, ThreadId,
};
use tokio_util::sync::CancellationToken;

/// How far back the threads the bot took part in are recalled when the listener starts.
const THREAD_MEMORY_DAYS: i64 = 7;

pub use format::to_mrkdwn;
pub use web::BotIdentity;

/// Length limit handed to the core's chunker, in characters. Slack truncates `text` only at
/// 40,000 characters but recommends at most 4,000 per message: longer messages are collapsed
/// behind "Show more" and are hard to read in a thread. Block Kit sections hold 3,000 characters,
/// so a message with buttons is split into several sections (see `outbound.rs`).
pub const MAX_MESSAGE_LEN: usize = 4000;

/// How Slack events reach the adapter.
#[derive(Clone)]
pub enum SlackMode {
    /// Socket Mode with an app-level token (`xapp-…`).
    Socket { app_token: String },
    /// The Events API: Slack POSTs signed requests to this address.
    Events {
        signing_secret: String,
        listen: SocketAddr,
    },
}

/// Everything the adapter needs.
#[derive(Clone)]
pub struct SlackSettings {
    /// Bot token (`xoxb-…`).
    pub bot_token: String,
    pub mode: SlackMode,
    /// Web API base, e.g. `https://slack.com/api`.
    pub api_url: String,
    /// Channel ids the bot answers in (empty: all it is invited to). Direct messages are
    /// governed by the user allowlist only.
    pub allowed_channels: Vec<String>,
    /// Workspace (team) ids whose events are accepted (empty: any).
    pub allowed_teams: Vec<String>,
    /// Answer a channel mention in a thread under it (true) or in the channel itself.
    pub reply_in_thread: bool,
    /// A Socket Mode connection that receives nothing for this long is replaced.
    pub socket_idle: Duration,
}

impl std::fmt::Debug for SlackSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mode = match &self.mode {
            SlackMode::Socket { .. } => "socket".to_owned(),
            SlackMode::Events { listen, .. } => format!("events api on {listen}"),
        };
        f.debug_struct("SlackSettings")
            .field("bot_token", &"***")
            .field("mode", &mode)
            .field("api_url", &self.api_url)
            .field("allowed_channels", &self.allowed_channels)
            .field("allowed_teams", &self.allowed_teams)
            .field("reply_in_thread", &self.reply_in_thread)
            .field("socket_idle", &self.socket_idle)
            .finish()
    }
}

/// The Slack adapter.
pub struct SlackAdapter {
    settings: SlackSettings,
    web: web::Web,
    me: RwLock<Option<BotIdentity>>,
    rules: inbound::Rules,
}

impl SlackAdapter {
    pub fn new(settings: SlackSettings) -> Result<Self, String> {
        let web = web::Web::new(&settings.api_url, &settings.bot_token)?;
        let rules = inbound::Rules::new(&settings);
        Ok(SlackAdapter {
            settings,
            web,
            me: RwLock::new(None),
            rules,
        })
    }

    /// Who the bot is (after the listener started).
    pub fn identity(&self) -> Option<BotIdentity> {
        self.me.read().ok().and_then(|m| m.clone())
    }

    /// `auth.test`, remembered for the inbound rules.
    async fn connect(&self) -> Result<BotIdentity, AdapterError> {
        let me = self.web.auth_test().await?;
        if let Ok(mut slot) = self.me.write() {
            *slot = Some(me.clone());
        }
        Ok(me)
    }
}

#[async_trait]
impl Adapter for SlackAdapter {
    fn platform(&self) -> Platform {
        Platform::Slack
    }

    /// A Socket Mode connection is one consumer; the Events API reaches every process.
    fn receives_alone(&self) -> bool {
        matches!(self.settings.mode, SlackMode::Socket { .. })
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            max_message_len: MAX_MESSAGE_LEN,
            length_unit: LengthUnit::Chars,
            edit: true,
            // Bots have no typing indicator outside the legacy RTM API.
            typing: false,
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
            r = self.connect() => r?,
            _ = shutdown.cancelled() => return Ok(()),
        };
        let threads = self
            .rules
            .recall_threads(sink.as_ref(), THREAD_MEMORY_DAYS)
            .await;
        if threads > 0 {
            tracing::debug!(threads, "Slack: threads the bot takes part in, recalled");
        }
        let ctx = inbound::Context {
            me: &me,
            rules: &self.rules,
            web: &self.web,
            sink: sink.as_ref(),
        };
        // Catching up runs beside the listener: in Socket Mode once the first connection said
        // hello (what is posted from then on arrives live), with the Events API right away.
        let ready = tokio::sync::Notify::new();
        let listen = async {
            match &self.settings.mode {
                SlackMode::Socket { app_token } => {
                    socket::run(
                        &ctx,
                        app_token,
                        self.settings.socket_idle,
                        &ready,
                        &shutdown,
                    )
                    .await
                }
                SlackMode::Events {
                    signing_secret,
                    listen,
                } => {
                    ready.notify_one();
                    events_http::run(
                        me.clone(),
                        self.rules.clone(),
                        self.web.clone(),
                        sink.clone(),
                        signing_secret,
                        *listen,
                        &shutdown,
                    )
                    .await
                }
            }
        };
        tokio::pin!(listen);
        let catch_up = async {
            ready.notified().await;
            catch_up::recent(&ctx, &shutdown).await;
        };
        tokio::select! {
            r = &mut listen => return r,
            () = catch_up => {}
        }
        listen.await
    }

    async fn send(&self, out: &Outbound) -> Result<SentId, SendError> {
        let sent = outbound::send(&self.web, out).await?;
        if let Some(thread) = &out.thread {
            self.rules.joined_thread(out.chat.as_str(), thread.as_str());
        }
        Ok(sent)
    }

    fn max_upload_bytes(&self) -> u64 {
        outbound::MAX_UPLOAD_BYTES
    }

    async fn edit(&self, chat: &ChatId, id: &SentId, text: &str) -> Result<(), SendError> {
        outbound::edit(&self.web, chat.as_str(), &id.0, text).await
    }

    async fn typing(&self, _chat: &ChatId, _thread: Option<&ThreadId>) -> Result<(), SendError> {
        Ok(())
    }

    async fn fetch_attachment(
        &self,
        attachment: &Attachment,
        max_bytes: u64,
    ) -> Result<Vec<u8>, SendError> {
        if attachment.size.is_some_and(|s| s > max_bytes) {
            return Err(SendError::TooLong);
        }
        self.web.download(&attachment.locator, max_bytes).await
    }

    async fn probe(&self) -> Result<String, AdapterError> {
        let me = self.connect().await?;
        let mode = match &self.settings.mode {
            SlackMode::Socket { .. } => "Socket Mode".to_owned(),
            SlackMode::Events { listen, .. } => format!("Events API on {listen}"),
        };
        Ok(format!(
            "@{} (user {}, team {}), {mode}",
            me.name, me.user_id, me.team_id
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_debug_hides_the_secrets() {
        let s = SlackSettings {
            bot_token: "xoxb-secret-1".into(),
            mode: SlackMode::Socket {
                app_token: "xapp-secret-2".into(),
            },
            api_url: "http://127.0.0.1:1/api".into(),
            allowed_channels: vec![],
            allowed_teams: vec![],
            reply_in_thread: true,
            socket_idle: Duration::from_secs(30),
        };
        let text = format!("{s:?}");
        assert!(!text.contains("secret"), "{text}");
    }
}
