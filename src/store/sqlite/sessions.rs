//! `Sessions` in SQLite: `sessions` (one active per key), `messages` (the history, indexed for
//! search by triggers) and `turns`; a turn's results are committed in one transaction.
//!
//! Sessions, their message history, and turn records.
//!
//! A session key has at most one active session (`ended_at IS NULL`); `/new` ends it and the next
//! message starts a fresh one, while the old history stays searchable. A turn's results (the
//! assistant's answer, its replies in the outbox, its inbox rows marked done, its usage) are
//! committed in one transaction, so a crash either keeps all of them or none.

use super::Cached;
use async_trait::async_trait;
use hermes_adapter::{SessionKey, now_millis};
use rusqlite::{Connection, OptionalExtension, params};

use super::{SqliteStore, inbox, outbox};
use crate::conversation::{ChatMessage, Usage};
use crate::store::sessions::{RawMessage, RawSession};
pub(super) use crate::store::sessions::{decode_session, decode_stored_message};
use crate::store::{
    IMPORTED_SCOPE, ImportedSession, Result, SessionRow, SessionStats, Sessions, StoredMessage,
    TurnCommit,
};

/// Read a [`RawSession`] from a row selecting those five columns in that order.
pub(super) fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawSession> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
}

/// Read a [`RawMessage`] from a row selecting those seven columns in that order.
pub(super) fn stored_message_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawMessage> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
    ))
}

/// The columns the history reads, in the order [`stored_message_row`] expects.
const COLUMNS: &str = "id, role, content, tool_calls, tool_call_id, tool_name, created_at";

/// Run a history query.
fn query(c: &Connection, sql: &str, args: impl rusqlite::Params) -> Result<Vec<StoredMessage>> {
    let mut stmt = c.prepare_cached(sql)?;
    let rows = stmt.query_map(args, stored_message_row)?;
    rows.map(|raw| decode_stored_message(raw?)).collect()
}

fn active(c: &Connection, key: &str) -> Result<Option<SessionRow>> {
    c.one(
        "SELECT id, key, created_at, updated_at, model FROM sessions WHERE key = ?1 AND ended_at IS NULL",
        [key],
        session_row,
    )
    .optional()?
    .map(decode_session)
    .transpose()
}

fn create(c: &Connection, key: &SessionKey) -> Result<SessionRow> {
    let now = now_millis();
    c.exec(
        "INSERT INTO sessions (key, platform, owner, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?4)",
        params![key.to_string(), key.platform.as_str(), key.owner(), now],
    )?;
    Ok(SessionRow {
        id: c.last_insert_rowid(),
        key: key.clone(),
        created_at: now,
        updated_at: now,
        model: None,
    })
}

fn append(
    tx: &Connection,
    session_id: i64,
    msg: &ChatMessage,
    inbox_id: Option<i64>,
) -> Result<()> {
    append_at(tx, session_id, msg, inbox_id, now_millis())
}

/// Append `msg` as said at `at` (milliseconds).
fn append_at(
    tx: &Connection,
    session_id: i64,
    msg: &ChatMessage,
    inbox_id: Option<i64>,
    now: i64,
) -> Result<()> {
    let calls = if msg.tool_calls.is_empty() {
        None
    } else {
        Some(serde_json::to_string(&msg.tool_calls)?)
    };
    tx.prepare_cached(
        "INSERT OR IGNORE INTO messages
             (session_id, role, content, tool_calls, tool_call_id, tool_name, inbox_id, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        session_id,
        msg.role.as_str(),
        msg.content,
        calls,
        msg.tool_call_id,
        msg.tool_name,
        inbox_id,
        now
    ])?;
    tx.prepare_cached("UPDATE sessions SET updated_at = ?2 WHERE id = ?1")?
        .execute(params![session_id, now])?;
    Ok(())
}

#[async_trait]
impl Sessions for SqliteStore {
    async fn session_active(&self, key: &SessionKey) -> Result<SessionRow> {
        let key = key.clone();
        self.call(move |c| match active(c, &key.to_string())? {
            Some(s) => Ok(s),
            None => create(c, &key),
        })
        .await
    }

    async fn session_current(&self, key: &SessionKey) -> Result<Option<SessionRow>> {
        let key = key.to_string();
        self.call(move |c| active(c, &key)).await
    }

    async fn session_reset(&self, key: &SessionKey, reason: &str) -> Result<SessionRow> {
        let (key, reason) = (key.clone(), reason.to_owned());
        self.call(move |c| {
            let tx = c.savepoint()?;
            tx.exec(
                "UPDATE sessions SET ended_at = ?2, end_reason = ?3 WHERE key = ?1 AND ended_at IS NULL",
                params![key.to_string(), now_millis(), reason],
            )?;
            let row = create(&tx, &key)?;
            tx.commit()?;
            Ok(row)
        })
        .await
    }

    async fn import_session(&self, s: ImportedSession) -> Result<Option<i64>> {
        self.call(move |c| {
            let tx = c.savepoint()?;
            let seen: Option<String> = tx
                .one(
                    "SELECT value FROM settings WHERE scope = ?1 AND name = ?2",
                    params![IMPORTED_SCOPE, s.origin],
                    |r| r.get(0),
                )
                .optional()?;
            if seen.is_some() {
                return Ok(None);
            }
            tx.exec(
                "INSERT INTO sessions
                     (key, platform, owner, created_at, updated_at, ended_at, end_reason, chat_id)
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6, ?7)",
                params![
                    s.key.to_string(),
                    s.key.platform.as_str(),
                    s.key.owner(),
                    s.created_at,
                    s.ended_at,
                    s.end_reason,
                    s.chat.as_ref().map(|c| c.as_str().to_owned())
                ],
            )?;
            let id = tx.last_insert_rowid();
            for (m, at) in &s.messages {
                append_at(&tx, id, m, None, *at)?;
            }
            tx.exec(
                "INSERT INTO settings (scope, name, value, updated_at) VALUES (?1, ?2, ?3, ?4)",
                params![IMPORTED_SCOPE, s.origin, id.to_string(), now_millis()],
            )?;
            tx.commit()?;
            Ok(Some(id))
        })
        .await
    }

    async fn append_messages(&self, session_id: i64, msgs: Vec<ChatMessage>) -> Result<()> {
        self.call(move |c| {
            let tx = c.savepoint()?;
            for m in &msgs {
                append(&tx, session_id, m, None)?;
            }
            tx.commit()?;
            Ok(())
        })
        .await
    }

    async fn append_inbox_messages(
        &self,
        session_id: i64,
        items: Vec<(Option<i64>, String)>,
    ) -> Result<()> {
        self.call(move |c| {
            let tx = c.savepoint()?;
            for (inbox_id, text) in &items {
                append(&tx, session_id, &ChatMessage::user(text.clone()), *inbox_id)?;
            }
            if let Some(inbox_id) = items.iter().rev().find_map(|(id, _)| *id) {
                tx.prepare_cached(
                    "UPDATE sessions SET chat_id = (SELECT chat_id FROM inbox WHERE id = ?2)
                      WHERE id = ?1 AND EXISTS (SELECT 1 FROM inbox WHERE id = ?2)",
                )?
                .execute(params![session_id, inbox_id])?;
            }
            tx.commit()?;
            Ok(())
        })
        .await
    }

    async fn commit_turn(&self, commit: TurnCommit) -> Result<()> {
        self.call(move |c| {
            let tx = c.savepoint()?;
            for m in &commit.messages {
                append(&tx, commit.session_id, m, None)?;
            }
            outbox::insert(&tx, &commit.replies)?;
            inbox::finish(&tx, &commit.inbox_ids, commit.record.outcome)?;
            let r = &commit.record;
            tx.exec(
                "INSERT INTO turns (session_id, started_at, finished_at, iterations, prompt_tokens,
                     completion_tokens, cached_tokens, cache_write_tokens, model, outcome)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    commit.session_id,
                    r.started_at,
                    now_millis(),
                    r.iterations,
                    r.usage.prompt_tokens as i64,
                    r.usage.completion_tokens as i64,
                    r.usage.cached_tokens as i64,
                    r.usage.cache_write_tokens as i64,
                    r.model,
                    r.outcome.as_str()
                ],
            )?;
            tx.commit()?;
            Ok(())
        })
        .await
    }

    async fn session_stats(&self, session_id: i64) -> Result<SessionStats> {
        self.call(move |c| {
            let messages: i64 = c.one(
                "SELECT COUNT(*) FROM messages WHERE session_id = ?1",
                [session_id],
                |r| r.get(0),
            )?;
            let (turns, p, comp, cached, written): (i64, i64, i64, i64, i64) = c.one(
                "SELECT COUNT(*), COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0),
                        COALESCE(SUM(cached_tokens), 0), COALESCE(SUM(cache_write_tokens), 0)
                 FROM turns WHERE session_id = ?1",
                [session_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )?;
            Ok(SessionStats {
                messages: messages as u64,
                turns: turns as u64,
                usage: Usage {
                    prompt_tokens: p as u64,
                    completion_tokens: comp as u64,
                    cached_tokens: cached as u64,
                    cache_write_tokens: written as u64,
                },
            })
        })
        .await
    }

    async fn set_session_model(&self, session_id: i64, model: Option<String>) -> Result<()> {
        self.call(move |c| {
            c.exec(
                "UPDATE sessions SET model = ?2 WHERE id = ?1",
                params![session_id, model],
            )?;
            Ok(())
        })
        .await
    }

    async fn history(&self, session_id: i64, limit: usize) -> Result<Vec<StoredMessage>> {
        self.history_after(session_id, 0, limit).await
    }

    async fn history_after(
        &self,
        session_id: i64,
        after: i64,
        limit: usize,
    ) -> Result<Vec<StoredMessage>> {
        self.call(move |c| {
            let mut out = query(
                c,
                &format!("SELECT {COLUMNS} FROM messages WHERE session_id = ?1 AND id > ?2 ORDER BY id DESC LIMIT ?3"),
                params![session_id, after, limit as i64],
            )?;
            out.reverse();
            Ok(out)
        })
        .await
    }

    async fn history_head(&self, session_id: i64, limit: usize) -> Result<Vec<StoredMessage>> {
        self.call(move |c| {
            query(
                c,
                &format!(
                    "SELECT {COLUMNS} FROM messages WHERE session_id = ?1 ORDER BY id LIMIT ?2"
                ),
                params![session_id, limit as i64],
            )
        })
        .await
    }

    async fn history_between(
        &self,
        session_id: i64,
        after: i64,
        upto: i64,
    ) -> Result<Vec<StoredMessage>> {
        self.call(move |c| {
            query(
                c,
                &format!("SELECT {COLUMNS} FROM messages WHERE session_id = ?1 AND id > ?2 AND id <= ?3 ORDER BY id"),
                params![session_id, after, upto],
            )
        })
        .await
    }
}
