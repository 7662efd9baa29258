//! `Outbox` in SQLite: the `outbox` table, unique on the idempotency key; only the oldest
//! pending row of a chat is ever due.

use super::Cached;
use async_trait::async_trait;
use hermes_adapter::{Outbound, Platform, now_millis};
use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteStore;
use crate::store::{Outbox, OutboxRow, OutboxStats, Result, StoreError};

/// Insert replies inside an open transaction; rows whose key exists are skipped.
pub(super) fn insert(tx: &Connection, items: &[(Platform, Outbound)]) -> Result<()> {
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

/// Set aside a row that cannot be decoded, so the chat's later replies go out.
fn poison(c: &rusqlite::Connection, id: i64, why: &StoreError) -> Result<()> {
    tracing::error!(outbox = id, error = %why, "an outbox row cannot be read; it is set aside as poisoned");
    c.exec(
        "UPDATE outbox SET status = 'poisoned', last_error = ?2 WHERE id = ?1",
        params![id, why.to_string()],
    )?;
    Ok(())
}

#[async_trait]
impl Outbox for SqliteStore {
    async fn outbox_enqueue(&self, items: Vec<(Platform, Outbound)>) -> Result<()> {
        self.call(move |c| {
            let tx = c.savepoint()?;
            insert(&tx, &items)?;
            tx.commit()?;
            Ok(())
        })
        .await
    }

    async fn outbox_due(
        &self,
        _me: &str,
        now: i64,
        limit: usize,
        _skip: &[Platform],
    ) -> Result<Vec<OutboxRow>> {
        self.call(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT o.id, o.platform, o.payload, o.attempts, o.created_at FROM outbox o
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
                        r.get::<_, i64>(4)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut rows = Vec::with_capacity(raws.len());
            for (id, platform, payload, attempts, queued_at) in raws {
                match OutboxRow::decode(id, &platform, &payload, attempts, queued_at) {
                    Ok(row) => rows.push(row),
                    Err(e) => poison(c, id, &e)?,
                }
            }
            Ok(rows)
        })
        .await
    }

    async fn outbox_next_due(&self) -> Result<Option<i64>> {
        self.call(|c| {
            Ok(c.one(
                "SELECT MIN(o.next_attempt_at) FROM outbox o
                 JOIN (SELECT MIN(id) AS id FROM outbox WHERE status = 'pending'
                       GROUP BY platform, chat_id) head ON head.id = o.id",
                [],
                |r| r.get::<_, Option<i64>>(0),
            )?)
        })
        .await
    }

    async fn outbox_mark_sent(&self, id: i64, sent_id: String) -> Result<()> {
        self.call(move |c| {
            c.exec(
                "UPDATE outbox SET status = 'sent', sent_id = ?2, sent_at = ?3, last_error = NULL
                 WHERE id = ?1",
                params![id, sent_id, now_millis()],
            )?;
            Ok(())
        })
        .await
    }

    async fn outbox_retry_at(&self, id: i64, at: i64, error: String) -> Result<()> {
        self.call(move |c| {
            c.exec(
                "UPDATE outbox SET attempts = attempts + 1, next_attempt_at = ?2, last_error = ?3
                 WHERE id = ?1",
                params![id, at, error],
            )?;
            Ok(())
        })
        .await
    }

    async fn outbox_defer(&self, id: i64, at: i64, reason: String) -> Result<()> {
        self.call(move |c| {
            c.exec(
                "UPDATE outbox SET next_attempt_at = ?2, last_error = ?3 WHERE id = ?1",
                params![id, at, reason],
            )?;
            Ok(())
        })
        .await
    }

    async fn outbox_mark_failed(&self, id: i64, error: String) -> Result<()> {
        self.call(move |c| {
            c.exec(
                "UPDATE outbox SET status = 'failed', attempts = attempts + 1, last_error = ?2
                 WHERE id = ?1",
                params![id, error],
            )?;
            Ok(())
        })
        .await
    }

    async fn outbox_sent_id(&self, key: &str) -> Result<Option<String>> {
        let key = key.to_owned();
        self.call(move |c| {
            Ok(c.one(
                "SELECT sent_id FROM outbox WHERE idempotency_key = ?1 AND status = 'sent'",
                [key],
                |r| r.get::<_, Option<String>>(0),
            )
            .optional()?
            .flatten())
        })
        .await
    }

    async fn outbox_stats(&self) -> Result<OutboxStats> {
        self.call(|c| {
            let mut stats = OutboxStats::default();
            let mut stmt = c.prepare("SELECT status, COUNT(*) FROM outbox GROUP BY status")?;
            let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
            for r in rows {
                let (status, n) = r?;
                match status.as_str() {
                    "pending" => stats.pending = n as u64,
                    "sent" => stats.sent = n as u64,
                    "poisoned" => stats.poisoned = n as u64,
                    _ => stats.failed = n as u64,
                }
            }
            Ok(stats)
        })
        .await
    }
}
