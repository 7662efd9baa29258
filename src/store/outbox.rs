//! The outbox: every reply is written here before it is sent and marked sent after.
//!
//! Rows of one chat go out strictly in order (only the oldest pending row of a chat is ever
//! due), so the chunks of a long answer cannot overtake each other, while different chats do not
//! wait for each other. The idempotency key is unique: writing the same reply twice is a no-op.

use hermes_adapter::{Outbound, Platform, now_millis};
use rusqlite::{OptionalExtension, Transaction, params};

use super::{Result, Store, StoreError};

/// A reply waiting to be sent.
#[derive(Debug, Clone)]
pub struct OutboxRow {
    pub id: i64,
    pub platform: Platform,
    pub outbound: Outbound,
    /// Failed attempts so far.
    pub attempts: u32,
}

/// Counts by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutboxStats {
    pub pending: u64,
    pub sent: u64,
    pub failed: u64,
}

/// Insert replies inside an open transaction; rows whose key exists are skipped.
pub(super) fn insert(tx: &Transaction<'_>, items: &[(Platform, Outbound)]) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT OR IGNORE INTO outbox
             (idempotency_key, platform, chat_id, payload, next_attempt_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
    )?;
    let now = now_millis();
    for (platform, out) in items {
        stmt.execute(params![
            out.idempotency_key,
            platform.as_str(),
            out.chat.0,
            serde_json::to_string(out)?,
            now
        ])?;
    }
    Ok(())
}

impl Store {
    /// Queue replies for sending.
    pub async fn outbox_enqueue(&self, items: Vec<(Platform, Outbound)>) -> Result<()> {
        self.call(move |c| {
            let tx = c.transaction()?;
            insert(&tx, &items)?;
            tx.commit()?;
            Ok(())
        })
        .await
    }

    /// The oldest pending row of each chat, if it is due at `now`, oldest first.
    pub async fn outbox_due(&self, now: i64, limit: usize) -> Result<Vec<OutboxRow>> {
        self.call(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT o.id, o.platform, o.payload, o.attempts FROM outbox o
                 JOIN (SELECT MIN(id) AS id FROM outbox WHERE status = 'pending'
                       GROUP BY platform, chat_id) head ON head.id = o.id
                 WHERE o.next_attempt_at <= ?1 ORDER BY o.id LIMIT ?2",
            )?;
            let raws = stmt
                .query_map(params![now, limit as i64], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, u32>(3)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            raws.into_iter()
                .map(|(id, platform, payload, attempts)| {
                    Ok(OutboxRow {
                        id,
                        platform: platform.parse().map_err(StoreError::Corrupt)?,
                        outbound: serde_json::from_str(&payload)?,
                        attempts,
                    })
                })
                .collect()
        })
        .await
    }

    /// When the next chat head becomes due (milliseconds), if any row is pending.
    pub async fn outbox_next_due(&self) -> Result<Option<i64>> {
        self.call(|c| {
            Ok(c.query_row(
                "SELECT MIN(o.next_attempt_at) FROM outbox o
                 JOIN (SELECT MIN(id) AS id FROM outbox WHERE status = 'pending'
                       GROUP BY platform, chat_id) head ON head.id = o.id",
                [],
                |r| r.get::<_, Option<i64>>(0),
            )?)
        })
        .await
    }

    pub async fn outbox_mark_sent(&self, id: i64, sent_id: String) -> Result<()> {
        self.call(move |c| {
            c.execute(
                "UPDATE outbox SET status = 'sent', sent_id = ?2, sent_at = ?3, last_error = NULL
                 WHERE id = ?1",
                params![id, sent_id, now_millis()],
            )?;
            Ok(())
        })
        .await
    }

    /// Record a failed attempt and when to try again.
    pub async fn outbox_retry_at(&self, id: i64, at: i64, error: String) -> Result<()> {
        self.call(move |c| {
            c.execute(
                "UPDATE outbox SET attempts = attempts + 1, next_attempt_at = ?2, last_error = ?3
                 WHERE id = ?1",
                params![id, at, error],
            )?;
            Ok(())
        })
        .await
    }

    /// Push a row back without counting an attempt (the platform asked us to wait).
    pub async fn outbox_defer(&self, id: i64, at: i64, reason: String) -> Result<()> {
        self.call(move |c| {
            c.execute(
                "UPDATE outbox SET next_attempt_at = ?2, last_error = ?3 WHERE id = ?1",
                params![id, at, reason],
            )?;
            Ok(())
        })
        .await
    }

    /// Give up on a row; it stays in the table for inspection.
    pub async fn outbox_mark_failed(&self, id: i64, error: String) -> Result<()> {
        self.call(move |c| {
            c.execute(
                "UPDATE outbox SET status = 'failed', attempts = attempts + 1, last_error = ?2
                 WHERE id = ?1",
                params![id, error],
            )?;
            Ok(())
        })
        .await
    }

    /// The platform id of the sent message with this idempotency key, once it was sent.
    pub async fn outbox_sent_id(&self, key: &str) -> Result<Option<String>> {
        let key = key.to_owned();
        self.call(move |c| {
            Ok(c.query_row(
                "SELECT sent_id FROM outbox WHERE idempotency_key = ?1 AND status = 'sent'",
                [key],
                |r| r.get::<_, Option<String>>(0),
            )
            .optional()?
            .flatten())
        })
        .await
    }

    pub async fn outbox_stats(&self) -> Result<OutboxStats> {
        self.call(|c| {
            let mut stats = OutboxStats::default();
            let mut stmt = c.prepare("SELECT status, COUNT(*) FROM outbox GROUP BY status")?;
            let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
            for r in rows {
                let (status, n) = r?;
                match status.as_str() {
                    "pending" => stats.pending = n as u64,
                    "sent" => stats.sent = n as u64,
                    _ => stats.failed = n as u64,
                }
            }
            Ok(stats)
        })
        .await
    }
}
