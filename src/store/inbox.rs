//! The inbox: every inbound message, stored before its platform is told it was received.
//!
//! Unique on (platform, chat, message id), so a redelivered message is recognised and dropped.
//! Status flow: `new` (stored) -> `queued` (authorized, waiting in its session lane) -> `done`;
//! or `new` -> `ignored` (not authorized, not addressed to the bot). Rows left `new` or `queued`
//! by a crash are picked up again at the next start.

use hermes_adapter::{Message, SessionKey, now_millis};
use rusqlite::{OptionalExtension, Transaction, params};

use super::{Result, Store, StoreError};

/// Where a message is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboxStatus {
    New,
    Queued,
    Done,
    Ignored,
}

impl InboxStatus {
    fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "new" => InboxStatus::New,
            "queued" => InboxStatus::Queued,
            "done" => InboxStatus::Done,
            "ignored" => InboxStatus::Ignored,
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

const COLUMNS: &str = "id, payload, status, session_key, outcome";

/// Raw columns: id, payload, status, session key, outcome.
type RawRow = (i64, String, String, Option<String>, Option<String>);

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
}

fn decode(raw: RawRow) -> Result<InboxRow> {
    let (id, payload, status, key, outcome) = raw;
    Ok(InboxRow {
        id,
        message: serde_json::from_str(&payload)?,
        status: InboxStatus::parse(&status)?,
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

/// Mark rows finished inside an open transaction.
pub(super) fn finish(tx: &Transaction<'_>, ids: &[i64], outcome: InboxOutcome) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "UPDATE inbox SET status = 'done', outcome = ?2, processed_at = ?3 WHERE id = ?1",
    )?;
    let now = now_millis();
    for id in ids {
        stmt.execute(params![id, outcome.as_str(), now])?;
    }
    Ok(())
}

impl Store {
    /// Store a message. `Some(id)` when new, `None` when the same platform message is already
    /// in the inbox.
    pub async fn inbox_insert(&self, msg: &Message) -> Result<Option<i64>> {
        let payload = serde_json::to_string(msg)?;
        let (platform, chat, id) = (
            msg.platform.as_str(),
            msg.chat.id.0.clone(),
            msg.id.0.clone(),
        );
        self.call(move |c| {
            let n = c.execute(
                "INSERT OR IGNORE INTO inbox (platform, chat_id, message_id, payload, received_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![platform, chat, id, payload, now_millis()],
            )?;
            Ok((n == 1).then(|| c.last_insert_rowid()))
        })
        .await
    }

    /// Rows still `new` with an id above `after`, oldest first.
    pub async fn inbox_new(&self, after: i64, limit: usize) -> Result<Vec<InboxRow>> {
        self.call(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM inbox WHERE status = 'new' AND id > ?1 ORDER BY id LIMIT ?2"
            ))?;
            let raws = stmt
                .query_map(params![after, limit as i64], row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            raws.into_iter().map(decode).collect()
        })
        .await
    }

    /// Hand a row to its session lane.
    pub async fn inbox_queue(&self, id: i64, key: &SessionKey) -> Result<()> {
        let key = key.to_string();
        self.call(move |c| {
            c.execute(
                "UPDATE inbox SET status = 'queued', session_key = ?2 WHERE id = ?1",
                params![id, key],
            )?;
            Ok(())
        })
        .await
    }

    /// Drop a row without processing it (unauthorized, not addressed).
    pub async fn inbox_ignore(&self, id: i64, outcome: InboxOutcome) -> Result<()> {
        self.call(move |c| {
            c.execute(
                "UPDATE inbox SET status = 'ignored', outcome = ?2, processed_at = ?3 WHERE id = ?1",
                params![id, outcome.as_str(), now_millis()],
            )?;
            Ok(())
        })
        .await
    }

    /// Finish rows without a reply of their own (e.g. cancelled by `/stop`).
    pub async fn inbox_finish(&self, ids: Vec<i64>, outcome: InboxOutcome) -> Result<()> {
        self.call(move |c| {
            let tx = c.transaction()?;
            finish(&tx, &ids, outcome)?;
            tx.commit()?;
            Ok(())
        })
        .await
    }

    /// Sessions that have queued rows (to restart their lanes after a restart).
    pub async fn inbox_queued_sessions(&self) -> Result<Vec<SessionKey>> {
        self.call(|c| {
            let mut stmt = c.prepare(
                "SELECT session_key FROM inbox WHERE status = 'queued'
                 GROUP BY session_key ORDER BY MIN(id)",
            )?;
            let keys = stmt
                .query_map([], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            keys.into_iter()
                .map(|k| {
                    k.parse()
                        .map_err(|e: hermes_adapter::ParseSessionKeyError| {
                            StoreError::Corrupt(e.to_string())
                        })
                })
                .collect()
        })
        .await
    }

    /// Queued rows of one session, oldest first.
    pub async fn inbox_queued_for(&self, key: &SessionKey, limit: usize) -> Result<Vec<InboxRow>> {
        let key = key.to_string();
        self.call(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM inbox WHERE status = 'queued' AND session_key = ?1
                 ORDER BY id LIMIT ?2"
            ))?;
            let raws = stmt
                .query_map(params![key, limit as i64], row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            raws.into_iter().map(decode).collect()
        })
        .await
    }

    /// One row by id.
    pub async fn inbox_get(&self, id: i64) -> Result<Option<InboxRow>> {
        self.call(move |c| {
            c.query_row(
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

    /// Rows not yet finished (`new` + `queued`), for `/status` and `doctor`.
    pub async fn inbox_open_count(&self) -> Result<u64> {
        self.call(|c| {
            Ok(c.query_row(
                "SELECT COUNT(*) FROM inbox WHERE status IN ('new', 'queued')",
                [],
                |r| r.get::<_, i64>(0),
            )? as u64)
        })
        .await
    }
}
