//! The inbox: every inbound message, stored before its platform is told it was received.
//!
//! Unique on (platform, chat, message id), so a redelivered message is recognised and dropped.
//! Status flow: `new` (stored) -> `queued` (authorized, waiting in its session lane) -> `done`;
//! or `new` -> `ignored` (not authorized, not addressed to the bot). Rows left `new` or `queued`
//! by a crash are picked up again at the next start.

use async_trait::async_trait;
use hermes_adapter::{Message, Outbound, Platform, SessionKey};

use super::{Result, StoreError};

/// Where a message is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboxStatus {
    New,
    Queued,
    Done,
    Ignored,
    /// It could not be decoded (a corrupt payload, or a variant a newer hermes wrote); set aside
    /// so the rows behind it go on.
    Poisoned,
}

impl InboxStatus {
    /// The status from its stored name.
    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "new" => InboxStatus::New,
            "queued" => InboxStatus::Queued,
            "done" => InboxStatus::Done,
            "ignored" => InboxStatus::Ignored,
            "poisoned" => InboxStatus::Poisoned,
            other => return Err(StoreError::Corrupt(format!("inbox status `{other}`"))),
        })
    }
}

/// How a message was finally handled (recorded for `/status` and debugging).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboxOutcome {
    /// Answered by an agent turn.
    Replied,
    /// Its turn was interrupted by a newer message, which was answered together with it.
    Interrupted,
    /// Cancelled by `/stop` or `/new`.
    Stopped,
    /// The turn failed; the user was told why.
    Failed,
    /// A chat command, answered directly.
    Command,
    /// The sender is not allowed.
    Unauthorized,
    /// Group chatter not addressed to the bot.
    NotAddressed,
    /// Refused before any turn (a file over the limits, nothing else in the message); the
    /// sender was told why.
    Refused,
}

impl InboxOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            InboxOutcome::Replied => "replied",
            InboxOutcome::Interrupted => "interrupted",
            InboxOutcome::Stopped => "stopped",
            InboxOutcome::Failed => "failed",
            InboxOutcome::Command => "command",
            InboxOutcome::Unauthorized => "unauthorized",
            InboxOutcome::NotAddressed => "not_addressed",
            InboxOutcome::Refused => "refused",
        }
    }
}

/// One stored inbound message.
#[derive(Debug, Clone)]
pub struct InboxRow {
    pub id: i64,
    pub message: Message,
    pub status: InboxStatus,
    pub session_key: Option<SessionKey>,
    pub outcome: Option<String>,
}

impl InboxRow {
    /// A row from its stored columns: the message as JSON, the status, the session key, the
    /// outcome. Fails on what cannot be read (the backends then set the row aside as
    /// poisoned).
    pub(crate) fn decode(
        id: i64,
        payload: &str,
        status: &str,
        key: Option<String>,
        outcome: Option<String>,
    ) -> Result<InboxRow> {
        Ok(InboxRow {
            id,
            message: serde_json::from_str(payload)?,
            status: InboxStatus::parse(status)?,
            session_key: key
                .map(|k| {
                    k.parse()
                        .map_err(|e: hermes_adapter::ParseSessionKeyError| {
                            StoreError::Corrupt(e.to_string())
                        })
                })
                .transpose()?,
            outcome,
        })
    }
}

/// The inbox role: the sink stores, the router routes, the lanes take their queued rows.
#[async_trait]
pub trait Inbox: Send + Sync {
    /// Store a message. `Some(id)` when new, `None` when the same platform message is already
    /// in the inbox.
    async fn inbox_insert(&self, msg: &Message) -> Result<Option<i64>>;

    /// Rows still `new` for process `me` to route, oldest first: with one process, those with
    /// an id above its cursor `after`; on a shared store, rows nobody claimed (or whose claimer
    /// is no longer live), claimed for `me` (each row is routed by one process).
    async fn inbox_new(&self, me: &str, after: i64, limit: usize) -> Result<Vec<InboxRow>>;

    /// Hand a row to its session lane.
    async fn inbox_queue(&self, id: i64, key: &SessionKey) -> Result<()>;

    /// Drop a row without processing it (unauthorized, not addressed).
    async fn inbox_ignore(&self, id: i64, outcome: InboxOutcome) -> Result<()>;

    /// Finish rows without a reply of their own (e.g. cancelled by `/stop`).
    async fn inbox_finish(&self, ids: Vec<i64>, outcome: InboxOutcome) -> Result<()>;

    /// Sessions that have queued rows (to restart their lanes after a restart).
    async fn inbox_queued_sessions(&self) -> Result<Vec<SessionKey>>;

    /// Queued rows of one session, oldest first.
    async fn inbox_queued_for(&self, key: &SessionKey, limit: usize) -> Result<Vec<InboxRow>>;

    /// One row by id.
    async fn inbox_get(&self, id: i64) -> Result<Option<InboxRow>>;

    /// Rows not yet finished (`new` + `queued`), for `/status` and `doctor`.
    async fn inbox_open_count(&self) -> Result<u64>;

    /// Rows set aside because they could not be decoded, for `hermes status`.
    async fn inbox_poisoned_count(&self) -> Result<u64>;

    /// The chats (and threads) of `platform` a message was stored from since `since`, each
    /// with the last message stored from it, most recent first, at most `limit`: where an
    /// adapter looks for what was posted while it was not connected.
    async fn inbox_recent_chats(
        &self,
        platform: Platform,
        since: i64,
        limit: usize,
    ) -> Result<Vec<hermes_adapter::SeenChat>>;

    /// Finish inbox rows with direct replies (chat commands, error notices), atomically.
    async fn reply_and_finish(
        &self,
        inbox_ids: Vec<i64>,
        outcome: InboxOutcome,
        replies: Vec<(Platform, Outbound)>,
    ) -> Result<()>;
}
