//! The outbox: every reply is written here before it is sent and marked sent after.
//!
//! Rows of one chat go out strictly in order (only the oldest pending row of a chat is ever
//! due), so the chunks of a long answer cannot overtake each other, while different chats do not
//! wait for each other. The idempotency key is unique: writing the same reply twice is a no-op.

use async_trait::async_trait;
use hermes_adapter::{Outbound, Platform};

use super::Result;

/// A reply waiting to be sent.
#[derive(Debug, Clone)]
pub struct OutboxRow {
    pub id: i64,
    pub platform: Platform,
    pub outbound: Outbound,
    /// Failed attempts so far.
    pub attempts: u32,
    /// When it was queued.
    pub queued_at: i64,
}

/// Counts by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutboxStats {
    pub pending: u64,
    pub sent: u64,
    pub failed: u64,
    /// Rows set aside because they could not be decoded.
    pub poisoned: u64,
}

impl OutboxRow {
    /// A row from its stored columns; fails on what cannot be read (set aside as poisoned).
    pub(crate) fn decode(
        id: i64,
        platform: &str,
        payload: &str,
        attempts: u32,
        queued_at: i64,
    ) -> Result<OutboxRow> {
        Ok(OutboxRow {
            id,
            platform: platform.parse().map_err(super::StoreError::Corrupt)?,
            outbound: serde_json::from_str(payload)?,
            attempts,
            queued_at,
        })
    }
}

/// The outbox role: the lanes and commands queue, the pump sends.
#[async_trait]
pub trait Outbox: Send + Sync {
    /// Queue replies for sending.
    async fn outbox_enqueue(&self, items: Vec<(Platform, Outbound)>) -> Result<()>;

    /// The oldest pending row of each chat, if it is due at `now`, oldest first, except the
    /// platforms in `skip`. On a shared store the rows are claimed for process `me` (another
    /// process takes them only once `me` is no longer live, or after a claim time longer than any one send).
    async fn outbox_due(
        &self,
        me: &str,
        now: i64,
        limit: usize,
        skip: &[Platform],
    ) -> Result<Vec<OutboxRow>>;

    /// When the next chat head becomes due (milliseconds), if any row is pending.
    async fn outbox_next_due(&self) -> Result<Option<i64>>;

    async fn outbox_mark_sent(&self, id: i64, sent_id: String) -> Result<()>;

    /// Record a failed attempt and when to try again.
    async fn outbox_retry_at(&self, id: i64, at: i64, error: String) -> Result<()>;

    /// Push a row back without counting an attempt (the platform asked us to wait).
    async fn outbox_defer(&self, id: i64, at: i64, reason: String) -> Result<()>;

    /// Give up on a row; it stays in the table for inspection.
    async fn outbox_mark_failed(&self, id: i64, error: String) -> Result<()>;

    /// The platform id of the sent message with this idempotency key, once it was sent.
    async fn outbox_sent_id(&self, key: &str) -> Result<Option<String>>;

    async fn outbox_stats(&self) -> Result<OutboxStats>;
}
