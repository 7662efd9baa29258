//! `Inbox` in PostgreSQL: the `inbox` table, unique on (platform, chat, message id), so a
//! redelivered message (or one received by two processes behind a balancer) is stored once.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use hermes_adapter::{Message, Outbound, Platform, SessionKey, now_millis};
use tokio_postgres::Row;

use super::{PgStore, outbox};
use crate::store::{Inbox, InboxOutcome, InboxRow, Result};

const COLUMNS: &str = "id, payload, status, session_key, outcome";

fn decode(r: &Row) -> Result<InboxRow> {
    InboxRow::decode(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4))
}

/// Decode rows; one that cannot be decoded is set aside as `poisoned` (with the reason in
/// `outcome`) and skipped, so it never blocks the rows behind it.
async fn decode_or_poison(c: &impl GenericClient, rows: Vec<Row>) -> Result<Vec<InboxRow>> {
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        match decode(&r) {
            Ok(row) => out.push(row),
            Err(e) => {
                let id: i64 = r.get(0);
                tracing::error!(inbox = id, error = %e, "an inbox row cannot be read; it is set aside as poisoned");
                c.execute(
                    "UPDATE inbox SET status = 'poisoned', outcome = $2, processed_at = $3 WHERE id = $1",
                    &[&id, &format!("unreadable: {e}"), &now_millis()],
                )
                .await?;
            }
        }
    }
    Ok(out)
}

/// Mark rows finished (inside the caller's transaction).
pub(super) async fn finish(
    tx: &impl GenericClient,
    ids: &[i64],
    outcome: InboxOutcome,
) -> Result<()> {
    tx.execute(
        "UPDATE inbox SET status = 'done', outcome = $2, processed_at = $3 WHERE id = ANY($1)",
        &[&ids, &outcome.as_str(), &now_millis()],
    )
    .await?;
    Ok(())
}

#[async_trait]
impl Inbox for PgStore {
    async fn inbox_insert(&self, msg: &Message) -> Result<Option<i64>> {
        let payload = serde_json::to_string(msg)?;
        let c = self.client().await?;
        // Every process's router is told (at commit) that a row waits to be claimed.
        let row = c
            .query_opt(
                "WITH stored AS (
                     INSERT INTO inbox (platform, chat_id, message_id, payload, received_at)
                     VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (platform, chat_id, message_id) DO NOTHING RETURNING id)
                 SELECT id, pg_notify('hermes_inbox', id::TEXT) FROM stored",
                &[
                    &msg.platform.as_str(),
                    &msg.chat.id.0,
                    &msg.id.0,
                    &payload,
                    &now_millis(),
                ],
            )
            .await?;
        Ok(row.map(|r| r.get(0)))
    }

    async fn inbox_new(&self, me: &str, _after: i64, limit: usize) -> Result<Vec<InboxRow>> {
        let c = self.client().await?;
        // Unclaimed rows, rows handed to this process (`to:<me>`, by a router that found this
        // process running their session), or rows whose claimer is gone. Rows this process
        // claimed are its router's, which keeps the ones it could not route yet.
        let mut rows = c
            .query(
                &format!(
                    "UPDATE inbox SET claimed_by = $1 WHERE id IN (
                         SELECT i.id FROM inbox i
                          WHERE i.status = 'new'
                            AND (i.claimed_by IS NULL
                                 OR i.claimed_by = 'to:' || $1
                                 OR (i.claimed_by <> $1 AND NOT EXISTS (
                                       SELECT 1 FROM processes p
                                        WHERE p.id = regexp_replace(i.claimed_by, '^to:', '')
                                          AND p.expires_at > hermes_now())))
                          ORDER BY i.id LIMIT $2 FOR UPDATE SKIP LOCKED)
                     RETURNING {COLUMNS}"
                ),
                &[&me, &(limit as i64)],
            )
            .await?;
        rows.sort_by_key(|r| r.get::<_, i64>(0));
        decode_or_poison(&c, rows).await
    }

    async fn inbox_queue(&self, id: i64, key: &SessionKey) -> Result<()> {
        self.update(
            "UPDATE inbox SET status = 'queued', session_key = $2 WHERE id = $1",
            &[&id, &key.to_string()],
        )
        .await
    }

    async fn inbox_ignore(&self, id: i64, outcome: InboxOutcome) -> Result<()> {
        self.update(
            "UPDATE inbox SET status = 'ignored', outcome = $2, processed_at = $3 WHERE id = $1",
            &[&id, &outcome.as_str(), &now_millis()],
        )
        .await
    }

    async fn inbox_finish(&self, ids: Vec<i64>, outcome: InboxOutcome) -> Result<()> {
        let c = self.client().await?;
        finish(&c, &ids, outcome).await
    }

    async fn inbox_queued_sessions(&self) -> Result<Vec<SessionKey>> {
        let c = self.client().await?;
        // Sessions a live process is running are left to it.
        let keys = c
            .query(
                &format!(
                    "SELECT i.session_key FROM inbox i WHERE i.status = 'queued'
                        AND NOT EXISTS (SELECT 1 FROM leases l
                                         WHERE l.name = 'session:' || i.session_key
                                           AND l.holder IS NOT NULL AND {})
                      GROUP BY i.session_key ORDER BY MIN(i.id)",
                    super::leases::HOLDER_LIVE
                ),
                &[],
            )
            .await?;
        let mut out = Vec::with_capacity(keys.len());
        for r in keys {
            let k: String = r.get(0);
            match k.parse::<SessionKey>() {
                Ok(key) => out.push(key),
                Err(e) => {
                    tracing::error!(error = %e, "queued inbox rows with an unreadable session key are set aside as poisoned");
                    c.execute(
                        "UPDATE inbox SET status = 'poisoned', outcome = $2
                         WHERE status = 'queued' AND session_key = $1",
                        &[&k, &format!("unreadable session key: {e}")],
                    )
                    .await?;
                }
            }
        }
        Ok(out)
    }

    async fn inbox_queued_for(&self, key: &SessionKey, limit: usize) -> Result<Vec<InboxRow>> {
        let c = self.client().await?;
        let rows = c
            .query(
                &format!(
                    "SELECT {COLUMNS} FROM inbox WHERE status = 'queued' AND session_key = $1
                     ORDER BY id LIMIT $2"
                ),
                &[&key.to_string(), &(limit as i64)],
            )
            .await?;
        decode_or_poison(&c, rows).await
    }

    async fn inbox_get(&self, id: i64) -> Result<Option<InboxRow>> {
        let c = self.client().await?;
        c.query_opt(
            &format!("SELECT {COLUMNS} FROM inbox WHERE id = $1"),
            &[&id],
        )
        .await?
        .map(|r| decode(&r))
        .transpose()
    }

    async fn inbox_recent_chats(
        &self,
        platform: Platform,
        since: i64,
        limit: usize,
    ) -> Result<Vec<hermes_adapter::SeenChat>> {
        let c = self.client().await?;
        // The last message stored from each chat and thread, newest first.
        let rows = c
            .query(
                "SELECT chat_id, thread, message_id, received_at FROM (
                     SELECT DISTINCT ON (chat_id, thread) chat_id, thread, message_id,
                            received_at, id
                       FROM (SELECT chat_id, payload::jsonb ->> 'thread' AS thread, message_id,
                                    received_at, id
                               FROM inbox WHERE platform = $1 AND received_at >= $2) m
                      ORDER BY chat_id, thread, id DESC) last
                  ORDER BY id DESC LIMIT $3",
                &[&platform.as_str(), &since, &(limit as i64)],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| hermes_adapter::SeenChat {
                chat: hermes_adapter::ChatId(r.get(0)),
                thread: r.get::<_, Option<String>>(1).map(hermes_adapter::ThreadId),
                last: hermes_adapter::MessageId(r.get(2)),
                at: r.get(3),
            })
            .collect())
    }

    async fn inbox_poisoned_count(&self) -> Result<u64> {
        self.count("SELECT COUNT(*) FROM inbox WHERE status = 'poisoned'")
            .await
    }

    async fn inbox_open_count(&self) -> Result<u64> {
        self.count("SELECT COUNT(*) FROM inbox WHERE status IN ('new', 'queued')")
            .await
    }

    async fn reply_and_finish(
        &self,
        inbox_ids: Vec<i64>,
        outcome: InboxOutcome,
        replies: Vec<(Platform, Outbound)>,
    ) -> Result<()> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        outbox::insert(&tx, &replies).await?;
        finish(&tx, &inbox_ids, outcome).await?;
        tx.commit().await?;
        Ok(())
    }
}

impl PgStore {
    /// The one number a `COUNT(*)` query gives.
    pub(super) async fn count(&self, sql: &str) -> Result<u64> {
        let n: i64 = self.client().await?.query_one(sql, &[]).await?.get(0);
        Ok(n as u64)
    }
}
