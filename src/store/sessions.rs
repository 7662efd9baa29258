//! Sessions, their message history, and turn records.
//!
//! A session key has at most one active session (`ended_at IS NULL`); `/new` ends it and the next
//! message starts a fresh one, while the old history stays searchable. A turn's results (the
//! assistant's answer, its replies in the outbox, its inbox rows marked done, its usage) are
//! committed in one transaction, so a crash either keeps all of them or none.

use async_trait::async_trait;
use hermes_adapter::{ChatId, Outbound, Platform, SessionKey};

use super::inbox::InboxOutcome;
use super::{Result, StoreError};
use crate::conversation::{ChatMessage, Role, ToolCall, Usage};

/// A conversation with the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub id: i64,
    pub key: SessionKey,
    pub created_at: i64,
    /// Last time a message was added.
    pub updated_at: i64,
    /// The model chosen with `/model`, if any.
    pub model: Option<String>,
}

/// A message as stored, with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    pub id: i64,
    pub message: ChatMessage,
    pub created_at: i64,
}

/// Totals of one session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionStats {
    pub messages: u64,
    pub turns: u64,
    pub usage: Usage,
}

/// What one agent turn did, for the `turns` table.
#[derive(Debug, Clone)]
pub struct TurnRecord {
    pub started_at: i64,
    pub iterations: u32,
    pub usage: Usage,
    pub model: String,
    pub outcome: InboxOutcome,
}

/// Everything a finished turn writes, atomically.
#[derive(Debug, Clone)]
pub struct TurnCommit {
    pub session_id: i64,
    /// New messages to append (the final answer; tool rounds are appended as they happen).
    pub messages: Vec<ChatMessage>,
    pub replies: Vec<(Platform, Outbound)>,
    pub inbox_ids: Vec<i64>,
    pub record: TurnRecord,
}

/// The settings scope that remembers imported conversations: name = the conversation's origin,
/// value = the id of the session it became.
pub const IMPORTED_SCOPE: &str = "imported";

/// A finished conversation brought over from another system (`hermes import`), with its own
/// times, stored as an ended session so that history search finds it.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedSession {
    /// Where it came from, unique per conversation (`hermes-agent:<its session id>`); a
    /// conversation of the same origin is never stored twice.
    pub origin: String,
    pub key: SessionKey,
    /// The chat it was held in, when known.
    pub chat: Option<ChatId>,
    /// Milliseconds since the epoch, as for every stored time.
    pub created_at: i64,
    pub ended_at: i64,
    pub end_reason: String,
    /// The messages in order, each with the time it was said.
    pub messages: Vec<(ChatMessage, i64)>,
}

/// Sessions and their history: the lanes open and commit turns, the agent reads and appends.
#[async_trait]
pub trait Sessions: Send + Sync {
    /// The active session of `key`, created if there is none.
    async fn session_active(&self, key: &SessionKey) -> Result<SessionRow>;

    /// The active session of `key`, if it has one (never creates one).
    async fn session_current(&self, key: &SessionKey) -> Result<Option<SessionRow>>;

    /// End the active session of `key` (if any) and start a new one.
    async fn session_reset(&self, key: &SessionKey, reason: &str) -> Result<SessionRow>;

    /// Store an ended session with its messages and their original times, and remember its
    /// origin in [`IMPORTED_SCOPE`], all in one transaction: `Some(id)` of the new session, or
    /// `None` (nothing written) when that origin was imported before.
    async fn import_session(&self, session: ImportedSession) -> Result<Option<i64>>;

    /// Append messages to a session (tool rounds as they happen).
    async fn append_messages(&self, session_id: i64, msgs: Vec<ChatMessage>) -> Result<()>;

    /// Append the user messages of inbox rows; a row already appended (a turn re-run after a
    /// crash) is not appended twice.
    async fn append_inbox_messages(
        &self,
        session_id: i64,
        items: Vec<(Option<i64>, String)>,
    ) -> Result<()>;

    /// Write a finished turn atomically: messages, replies, inbox rows done, usage.
    async fn commit_turn(&self, commit: TurnCommit) -> Result<()>;

    /// Message and token totals of a session.
    async fn session_stats(&self, session_id: i64) -> Result<SessionStats>;

    /// Choose the model of a session (`None`: back to the configured one).
    async fn set_session_model(&self, session_id: i64, model: Option<String>) -> Result<()>;

    /// The last `limit` messages of a session, oldest first.
    async fn history(&self, session_id: i64, limit: usize) -> Result<Vec<StoredMessage>>;

    /// The last `limit` messages of a session with an id above `after`, oldest first.
    async fn history_after(
        &self,
        session_id: i64,
        after: i64,
        limit: usize,
    ) -> Result<Vec<StoredMessage>>;

    /// The first `limit` messages of a session.
    async fn history_head(&self, session_id: i64, limit: usize) -> Result<Vec<StoredMessage>>;

    /// Messages with `after < id <= upto`, oldest first.
    async fn history_between(
        &self,
        session_id: i64,
        after: i64,
        upto: i64,
    ) -> Result<Vec<StoredMessage>>;
}

/// The columns `id, key, created_at, updated_at, model` of a `sessions` row, before decoding.
pub(crate) type RawSession = (i64, String, i64, i64, Option<String>);

pub(crate) fn decode_session(raw: RawSession) -> Result<SessionRow> {
    Ok(SessionRow {
        id: raw.0,
        key: raw
            .1
            .parse()
            .map_err(|e: hermes_adapter::ParseSessionKeyError| {
                StoreError::Corrupt(e.to_string())
            })?,
        created_at: raw.2,
        updated_at: raw.3,
        model: raw.4,
    })
}

/// The columns `id, role, content, tool_calls, tool_call_id, tool_name, created_at` of a
/// `messages` row, before decoding.
pub(crate) type RawMessage = (
    i64,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
);

pub(crate) fn decode_stored_message(raw: RawMessage) -> Result<StoredMessage> {
    let (id, role, content, calls, call_id, name, created_at) = raw;
    let tool_calls: Vec<ToolCall> = match calls {
        Some(json) => serde_json::from_str(&json)?,
        None => Vec::new(),
    };
    Ok(StoredMessage {
        id,
        message: ChatMessage {
            role: Role::parse(&role)
                .ok_or_else(|| StoreError::Corrupt(format!("message role `{role}`")))?,
            content,
            tool_calls,
            tool_call_id: call_id,
            tool_name: name,
            images: Vec::new(),
        },
        created_at,
    })
}
