//! `Inbox` in SQLite: the `inbox` table, unique on (platform, chat, message id), so a
//! redelivered message is recognised and dropped.

use super::Cached;
use async_trait::async_trait;
use hermes_adapter::{Message, Outbound, Platform, SessionKey, now_millis};
use rusqlite::{Connection, OptionalExtension, params};

use super::{SqliteStore, outbox};
use crate::store::{Inbox, InboxOutcome, InboxRow, Result};

const COLUMNS: &str = "id, payload, status, session_key, outcome";

/// Raw columns: id, payload, status, session key, outcome.
type RawRow = (i64, String, String, Option<String>, Option<String>);

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
}

fn decode(raw: RawRow) -> Result<InboxRow> {
    let (id, payload, status, key, outcome) = raw;
    InboxRow::decode(id, &payload, &status, key, outcome)
}

/// Decode rows; one that cannot be decoded is set aside as `poisoned` (with the reason in
/// `outcome`) and skipped, so it never blocks the rows behind it.
fn decode_or_poison(c: &rusqlite::Connection, raws: Vec<RawRow>) -> Result<Vec<InboxRow>> {
    let mut rows = Vec::with_capacity(raws.len());
    for raw in raws {
        let id = raw.0;
        match decode(raw) {
            Ok(row) => rows.push(row),
            Err(e) => {
                tracing::error!(inbox = id, error = %e, "an inbox row cannot be read; it is set aside as poisoned");
                c.exec(
                    "UPDATE inbox SET status = 'poisoned', outcome = ?2, processed_at = ?3 WHERE id = ?1",
                    params![id, format!("unreadable: {e}"), now_millis()],
                )?;
            }
        }
    }
    Ok(rows)
}

/// Mark rows finished inside an open transaction.
pub(super) fn finish(tx: &Connection, ids: &[i64], outcome: InboxOutcome) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "UPDATE inbox SET status = 'done', outcome = ?2, processed_at = ?3 WHERE id = ?1",
    )?;
    let now = now_millis();
    for id in ids {
        stmt.execute(params![id, outcome.as_str(), now])?;
    }
    Ok(())
}

#[async_trait]
impl Inbox for SqliteStore {
    async fn inbox_insert(&self, msg: &Message) -> Result<Option<i64>> {
        let payload = serde_json::to_string(msg)?;
        let (platform, chat, id) = (
            msg.platform.as_str(),
            msg.chat.id.0.clone(),
            msg.id.0.clone(),
        );
        self.call(move |c| {
            let n = c.exec(
                "INSERT OR IGNORE INTO inbox (platform, chat_id, message_id, payload, received_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![platform, chat, id, payload, now_millis()],
            )?;
            Ok((n == 1).then(|| c.last_insert_rowid()))
        })
        .await
    }

    async fn inbox_new(&self, _me: &str, after: i64, limit: usize) -> Result<Vec<InboxRow>> {
        self.call(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM inbox WHERE status = 'new' AND id > ?1 ORDER BY id LIMIT ?2"
            ))?;
            let raws = stmt
                .query_map(params![after, limit as i64], row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            decode_or_poison(c, raws)
        })
        .await
    }

    async fn inbox_queue(&self, id: i64, key: &SessionKey) -> Result<()> {
        let key = key.to_string();
        self.call(move |c| {
            c.exec(
                "UPDATE inbox SET status = 'queued', session_key = ?2 WHERE id = ?1",
                params![id, key],
            )?;
            Ok(())
        })
        .await
    }

    async fn inbox_ignore(&self, id: i64, outcome: InboxOutcome) -> Result<()> {
        self.call(move |c| {
            c.exec(
                "UPDATE inbox SET status = 'ignored', outcome = ?2, processed_at = ?3 WHERE id = ?1",
                params![id, outcome.as_str(), now_millis()],
            )?;
            Ok(())
        })
        .await
    }

    async fn inbox_finish(&self, ids: Vec<i64>, outcome: InboxOutcome) -> Result<()> {
        self.call(move |c| {
            let tx = c.savepoint()?;
            finish(&tx, &ids, outcome)?;
            tx.commit()?;
            Ok(())
        })
        .await
    }

    async fn inbox_queued_sessions(&self) -> Result<Vec<SessionKey>> {
        self.call(|c| {
            let mut stmt = c.prepare(
                "SELECT session_key FROM inbox WHERE status = 'queued'
                 GROUP BY session_key ORDER BY MIN(id)",
            )?;
            let keys = stmt
                .query_map([], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut out = Vec::with_capacity(keys.len());
            for k in keys {
                match k.parse::<SessionKey>() {
                    Ok(key) => out.push(key),
                    Err(e) => {
                        tracing::error!(error = %e, "queued inbox rows with an unreadable session key are set aside as poisoned");
                        c.exec(
                            "UPDATE inbox SET status = 'poisoned', outcome = ?2
                             WHERE status = 'queued' AND session_key = ?1",
                            params![k, format!("unreadable session key: {e}")],
                        )?;
                    }
                }
            }
            Ok(out)
        })
        .await
    }

    async fn inbox_queued_for(&self, key: &SessionKey, limit: usize) -> Result<Vec<InboxRow>> {
        let key = key.to_string();
        self.call(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM inbox WHERE status = 'queued' AND session_key = ?1
                 ORDER BY id LIMIT ?2"
            ))?;
            let raws = stmt
                .query_map(params![key, limit as i64], row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            decode_or_poison(c, raws)
        })
        .await
    }

    async fn inbox_get(&self, id: i64) -> Result<Option<InboxRow>> {
        self.call(move |c| {
            c.one(
                &format!("SELECT {COLUMNS} FROM inbox WHERE id = ?1"),
                [id],
                row,
            )
            .optional()?
            .map(decode)
            .transpose()
        })
        .await
    }

    async fn inbox_recent_chats(
        &self,
        platform: Platform,
        since: i64,
        limit: usize,
    ) -> Result<Vec<hermes_adapter::SeenChat>> {
        let platform = platform.as_str();
        self.call(move |c| {
            // SQLite's MAX() picks the other bare columns from the row holding the maximum:
            // the last message stored from each chat and thread.
            let mut stmt = c.prepare_cached(
                "SELECT chat_id, json_extract(payload, '$.thread') AS thread, message_id,
                        received_at, MAX(id) AS last
                   FROM inbox WHERE platform = ?1 AND received_at >= ?2
                  GROUP BY chat_id, thread ORDER BY last DESC LIMIT ?3",
            )?;
            let rows = stmt
                .query_map(params![platform, since, limit as i64], |r| {
                    Ok(hermes_adapter::SeenChat {
                        chat: hermes_adapter::ChatId(r.get(0)?),
                        thread: r.get::<_, Option<String>>(1)?.map(hermes_adapter::ThreadId),
                        last: hermes_adapter::MessageId(r.get(2)?),
                        at: r.get(3)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .await
    }

    async fn inbox_poisoned_count(&self) -> Result<u64> {
        self.call(|c| {
            Ok(c.one(
                "SELECT COUNT(*) FROM inbox WHERE status = 'poisoned'",
                [],
                |r| r.get::<_, i64>(0),
            )? as u64)
        })
        .await
    }

    async fn inbox_open_count(&self) -> Result<u64> {
        self.call(|c| {
            Ok(c.one(
                "SELECT COUNT(*) FROM inbox WHERE status IN ('new', 'queued')",
                [],
                |r| r.get::<_, i64>(0),
            )? as u64)
        })
        .await
    }

    async fn reply_and_finish(
        &self,
        inbox_ids: Vec<i64>,
        outcome: InboxOutcome,
        replies: Vec<(Platform, Outbound)>,
    ) -> Result<()> {
        self.call(move |c| {
            let tx = c.savepoint()?;
            outbox::insert(&tx, &replies)?;
            finish(&tx, &inbox_ids, outcome)?;
            tx.commit()?;
            Ok(())
        })
        .await
    }
}
