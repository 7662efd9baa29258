//! The [`Adapter`] trait, what a platform can do ([`Capabilities`]), and how things fail.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::message::{Attachment, ChatId, Message, Platform, ThreadId};
use crate::outbound::Outbound;

/// How a platform counts the length of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LengthUnit {
    /// UTF-16 code units (Telegram).
    Utf16,
    /// Unicode scalar values (Discord, Slack).
    Chars,
    /// UTF-8 bytes.
    Bytes,
}

impl LengthUnit {
    /// Length of `s` in this unit.
    pub fn len(self, s: &str) -> usize {
        match self {
            LengthUnit::Utf16 => s.encode_utf16().count(),
            LengthUnit::Chars => s.chars().count(),
            LengthUnit::Bytes => s.len(),
        }
    }

    /// Length of one character in this unit.
    pub fn char_len(self, c: char) -> usize {
        match self {
            LengthUnit::Utf16 => c.len_utf16(),
            LengthUnit::Chars => 1,
            LengthUnit::Bytes => c.len_utf8(),
        }
    }
}

/// What a platform supports; the core adapts delivery to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Longest message the platform accepts, in `length_unit`.
    pub max_message_len: usize,
    pub length_unit: LengthUnit,
    pub edit: bool,
    pub typing: bool,
    pub buttons: bool,
    pub threads: bool,
    pub attachments: bool,
    /// Editing costs nothing (no rate limit, nothing posted: the HTTP API's previews are the
    /// response's stream): answers are always streamed, and previews edited at once.
    pub free_edits: bool,
}

/// The platform's id of a message the bot sent.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SentId(pub String);

/// Why a send failed, classified so the outbox knows what to do next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The platform asked us to wait (HTTP 429 `retry_after`).
    #[error("rate limited: retry after {0:?}")]
    RetryAfter(Duration),
    /// The message exceeds the platform's length limit.
    #[error("message too long")]
    TooLong,
    /// The platform rejected the formatting and the plain-text fallback failed too.
    #[error("formatting rejected: {0}")]
    BadFormat(String),
    /// The bot may not write there (blocked, kicked, no permission).
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The chat or message does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// A network failure or server error; worth retrying with backoff.
    #[error("transient failure: {0}")]
    Transient(String),
    /// Any other refusal that retrying will not fix.
    #[error("permanent failure: {0}")]
    Permanent(String),
    /// The adapter does not implement this operation.
    #[error("not supported by this platform")]
    Unsupported,
}

impl SendError {
    /// Whether sending the same thing again later can succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, SendError::RetryAfter(_) | SendError::Transient(_))
    }
}

/// Why an adapter's listener stopped. The supervisor restarts it with a delay chosen by kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdapterError {
    /// The platform rejected the credentials; restarting soon will not help.
    #[error("credentials rejected: {0}")]
    Unauthorized(String),
    /// Another client consumes this account's events (Telegram 409); wait before polling again.
    #[error("another client is consuming these updates: {0}")]
    Conflict(String),
    /// A network or server failure.
    #[error("{0}")]
    Transient(String),
    /// Anything else.
    #[error("{0}")]
    Fatal(String),
}

/// What [`InboundSink::deliver`] did with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Newly stored; it will be processed.
    Stored,
    /// Already in the inbox (a redelivery); nothing more happens.
    Duplicate,
}

/// The inbox could not store a message; the adapter must not acknowledge it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("inbox unavailable: {0}")]
pub struct SinkError(pub String);

/// Where an adapter hands inbound messages.
#[async_trait]
pub trait InboundSink: Send + Sync {
    /// Store `msg` durably. Returns only once it is in the inbox (or known as a duplicate); the
    /// adapter acknowledges it to the platform only after an `Ok`.
    async fn deliver(&self, msg: Message) -> Result<Delivery, SinkError>;

    /// The listener is connected and working (a poll returned, a heartbeat was acknowledged),
    /// even if no message arrived. A listener that stops calling this is restarted.
    fn heartbeat(&self);

    /// The listener lost its connection and its SDK is reconnecting by itself (a gateway
    /// websocket that resumes on its own), so `run` keeps going. Health shows the outage until
    /// the next [`heartbeat`](Self::heartbeat).
    fn disconnected(&self, _reason: &str) {}

    /// The listener works but something needs attention (Matrix messages waiting for their
    /// encryption keys); shown with the adapter's health without counting as an outage.
    fn attention(&self, _note: &str) {}

    /// What this adapter kept under `key` with [`remember`](Self::remember), across restarts
    /// of the daemon (a gateway session to resume, a cursor); `None` if nothing was kept or it
    /// cannot be read.
    async fn recall(&self, _key: &str) -> Option<String> {
        None
    }

    /// Keep `value` under `key` for this adapter, durably (it survives a SIGKILL once this
    /// returns `Ok`).
    async fn remember(&self, _key: &str, _value: &str) -> Result<(), SinkError> {
        Ok(())
    }

    /// The chats (and threads) of this platform a message was stored from since `since`, each
    /// with the last message stored from it, most recent first and at most `limit`: where to
    /// look for messages posted while the listener was not connected. Empty if unknown.
    async fn recent_chats(&self, _since: crate::UnixMillis, _limit: usize) -> Vec<SeenChat> {
        Vec::new()
    }
}

/// A chat a message was stored from, with the last one stored ([`InboundSink::recent_chats`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenChat {
    pub chat: crate::ChatId,
    pub thread: Option<crate::ThreadId>,
    /// The platform's id of the last message stored from this chat (and thread).
    pub last: crate::MessageId,
    /// When that message was stored.
    pub at: crate::UnixMillis,
}

/// A messaging platform.
#[async_trait]
pub trait Adapter: Send + Sync + 'static {
    fn platform(&self) -> Platform;

    fn capabilities(&self) -> Capabilities;

    /// Receive messages until `shutdown` is cancelled (then return `Ok`) or the listener fails.
    /// Called again by the supervisor after a failure.
    async fn run(
        &self,
        sink: Arc<dyn InboundSink>,
        shutdown: CancellationToken,
    ) -> Result<(), AdapterError>;

    /// How many independent receiving connections the listener is made of (Discord's gateway
    /// shards): each runs through [`Adapter::run_part`] under its own supervisor and, on a store
    /// shared by several processes, its own lease, so the parts spread over the processes.
    fn receive_parts(&self) -> u16 {
        1
    }

    /// Receive on part `part` (below [`Adapter::receive_parts`]) until `shutdown`, like
    /// [`Adapter::run`]; an adapter of one part is all of it.
    async fn run_part(
        &self,
        _part: u16,
        sink: Arc<dyn InboundSink>,
        shutdown: CancellationToken,
    ) -> Result<(), AdapterError> {
        self.run(sink, shutdown).await
    }

    /// Whether one process of a deployment alone may receive for this bot at a time (a long
    /// poll, a socket, a mailbox, a device): the supervisor then holds a lease first. `false`
    /// where the platform pushes to every process (webhooks, an HTTP API).
    fn receives_alone(&self) -> bool {
        true
    }

    /// Send one message.
    async fn send(&self, out: &Outbound) -> Result<SentId, SendError>;

    /// Replace the text of a message the bot sent.
    async fn edit(&self, _chat: &ChatId, _id: &SentId, _text: &str) -> Result<(), SendError> {
        Err(SendError::Unsupported)
    }

    /// Deliver an outbox row that replaces the message it names (`out.edit_of`, a streamed
    /// preview becoming the answer). By default an [`Adapter::edit`] of that message with the
    /// row's text; an adapter that needs the rest of the row (its idempotency key, its usage)
    /// overrides this.
    async fn replace(&self, out: &Outbound) -> Result<(), SendError> {
        let Some(id) = &out.edit_of else {
            return Err(SendError::NotFound("no message to replace".into()));
        };
        self.edit(&out.chat, &SentId(id.clone()), &out.text).await
    }

    /// Show "typing…" in a chat for a few seconds.
    async fn typing(&self, _chat: &ChatId, _thread: Option<&ThreadId>) -> Result<(), SendError> {
        Ok(())
    }

    /// Largest file this adapter sends ([`crate::Outbound::file`]); 0 when it sends no files.
    fn max_upload_bytes(&self) -> u64 {
        0
    }

    /// Download an attachment's bytes, refusing files over `max_bytes`.
    async fn fetch_attachment(
        &self,
        _attachment: &Attachment,
        _max_bytes: u64,
    ) -> Result<Vec<u8>, SendError> {
        Err(SendError::Unsupported)
    }

    /// Check the credentials and connection without receiving anything (`hermes doctor`);
    /// returns a one-line description of the account on success.
    async fn probe(&self) -> Result<String, AdapterError>;
}
