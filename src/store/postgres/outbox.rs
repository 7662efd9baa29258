//! `Outbox` in PostgreSQL: the `outbox` table, unique on the idempotency key; only the oldest
//! pending row of a chat is ever due.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use hermes_adapter::{Outbound, Platform, now_millis};

use super::PgStore;
use crate::store::{Outbox, OutboxRow, OutboxStats, Result, StoreError};

/// Insert replies (inside the caller's transaction); rows whose key exists are skipped.
pub(super) async fn insert(tx: &impl GenericClient, items: &[(Platform, Outbound)]) -> Result<()> {
    let stmt = tx
        .prepare(
            "INSERT INTO outbox
                 (idempotency_key, platform, chat_id, payload, next_attempt_at, created_at)
             VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (idempotency_key) DO NOTHING",
        )
        .await?;
    let now = now_millis();
    for (platform, out) in items {
        let payload = serde_json::to_string(out)?;
        tx.execute(
            &stmt,
            &[
                &out.idempotency_key,
                &platform.as_str(),
                &out.chat.0,
                &payload,
                &now,
            ],
        )
        .await?;
    }
    Ok(())
}

/// How long a claimed row is withheld from other live processes: longer than any one send.
const CLAIM_MS: i64 = 90_000;

/// The head (oldest pending row) of every chat.
const HEADS: &str = "SELECT DISTINCT ON (platform, chat_id) id FROM outbox
                      WHERE status = 'pending' ORDER BY platform, chat_id, id";

#[async_trait]
impl Outbox for PgStore {
    async fn outbox_enqueue(&self, items: Vec<(Platform, Outbound)>) -> Result<()> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        insert(&tx, &items).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn outbox_due(
        &self,
        me: &str,
        now: i64,
        limit: usize,
        skip: &[Platform],
    ) -> Result<Vec<OutboxRow>> {
        let c = self.client().await?;
        let skip: Vec<&str> = skip.iter().map(|p| p.as_str()).collect();
        // Claimed for this process: withheld from the others while it lives (or for CLAIM_MS),
        // so a reply is sent by one process; a dead claimer's rows are due at once.
        let mut rows = c
            .query(
                &format!(
                    "UPDATE outbox SET claimed_by = $1, next_attempt_at = $2 + $5 WHERE id IN (
                         SELECT o.id FROM outbox o
                          WHERE o.id IN ({HEADS}) AND o.platform <> ALL($4)
                            AND (o.next_attempt_at <= $2
                                 OR (o.claimed_by IS NOT NULL AND o.claimed_by <> $1
                                     AND NOT EXISTS (
                                       SELECT 1 FROM processes p
                                        WHERE p.id = o.claimed_by AND p.expires_at > hermes_now())))
                          ORDER BY o.id LIMIT $3 FOR UPDATE SKIP LOCKED)
                     RETURNING id, platform, payload, attempts, created_at"
                ),
                &[&me, &now, &(limit as i64), &skip, &CLAIM_MS],
            )
            .await?;
        rows.sort_by_key(|r| r.get::<_, i64>(0));
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let (id, attempts): (i64, i32) = (r.get(0), r.get(3));
            let decoded = OutboxRow::decode(id, r.get(1), r.get(2), attempts as u32, r.get(4));
            match decoded {
                Ok(row) => out.push(row),
                Err(e) => {
                    tracing::error!(outbox = id, error = %e, "an outbox row cannot be read; it is set aside as poisoned");
                    c.execute(
                        "UPDATE outbox SET status = 'poisoned', last_error = $2 WHERE id = $1",
                        &[&id, &e.to_string()],
                    )
                    .await?;
                }
            }
        }
        Ok(out)
    }

    async fn outbox_next_due(&self) -> Result<Option<i64>> {
        let c = self.client().await?;
        let row = c
            .query_one(
                &format!("SELECT MIN(next_attempt_at) FROM outbox WHERE id IN ({HEADS})"),
                &[],
            )
            .await?;
        Ok(row.get(0))
    }

    async fn outbox_mark_sent(&self, id: i64, sent_id: String) -> Result<()> {
        self.update(
            "UPDATE outbox SET status = 'sent', sent_id = $2, sent_at = $3, last_error = NULL,
                    claimed_by = NULL
             WHERE id = $1",
            &[&id, &sent_id, &now_millis()],
        )
        .await
    }

    async fn outbox_retry_at(&self, id: i64, at: i64, error: String) -> Result<()> {
        self.update(
            "UPDATE outbox SET attempts = attempts + 1, next_attempt_at = $2, last_error = $3,
                    claimed_by = NULL
             WHERE id = $1",
            &[&id, &at, &error],
        )
        .await
    }

    async fn outbox_defer(&self, id: i64, at: i64, reason: String) -> Result<()> {
        self.update(
            "UPDATE outbox SET next_attempt_at = $2, last_error = $3, claimed_by = NULL
             WHERE id = $1",
            &[&id, &at, &reason],
        )
        .await
    }

    async fn outbox_mark_failed(&self, id: i64, error: String) -> Result<()> {
        self.update(
            "UPDATE outbox SET status = 'failed', attempts = attempts + 1, last_error = $2
             WHERE id = $1",
            &[&id, &error],
        )
        .await
    }

    async fn outbox_sent_id(&self, key: &str) -> Result<Option<String>> {
        let c = self.client().await?;
        let row = c
            .query_opt(
                "SELECT sent_id FROM outbox WHERE idempotency_key = $1 AND status = 'sent'",
                &[&key],
            )
            .await?;
        Ok(row.and_then(|r| r.get(0)))
    }

    async fn outbox_stats(&self) -> Result<OutboxStats> {
        let c = self.client().await?;
        let mut stats = OutboxStats::default();
        for r in c
            .query("SELECT status, COUNT(*) FROM outbox GROUP BY status", &[])
            .await?
        {
            let (status, n): (String, i64) = (r.get(0), r.get(1));
            match status.as_str() {
                "pending" => stats.pending = n as u64,
                "sent" => stats.sent = n as u64,
                "poisoned" => stats.poisoned = n as u64,
                "failed" => stats.failed = n as u64,
                other => return Err(StoreError::Corrupt(format!("outbox status `{other}`"))),
            }
        }
        Ok(stats)
    }
}

impl PgStore {
    /// Run one statement that changes rows and returns nothing.
    pub(super) async fn update(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<()> {
        self.client().await?.execute(sql, params).await?;
        Ok(())
    }
}
