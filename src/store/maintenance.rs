//! Retention: finished inbox rows (kept to recognise redelivered messages) and finished outbox
//! rows (kept as a delivery log) are deleted once old; the conversation history stays.
//!
//! The newest row of each table is never deleted: SQLite gives a new row the highest id plus
//! one, so an emptied table would hand out ids again, and inbox ids are referenced by the
//! history and by reply idempotency keys.

use async_trait::async_trait;

use super::Result;

/// Rows deleted by one pruning pass.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    pub inbox: usize,
    pub outbox: usize,
}

/// Housekeeping and health.
#[async_trait]
pub trait Maintenance: Send + Sync {
    /// Delete finished rows received or created before `before` (ms since the epoch).
    async fn prune_delivery_log(&self, before: i64) -> Result<Pruned>;

    /// Answer a trivial query: the store is reachable and working (readiness checks).
    async fn ping(&self) -> Result<()>;
}
