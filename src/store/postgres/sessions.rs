//! `Sessions` in PostgreSQL: `sessions` (one active per key, by a unique partial index),
//! `messages` (the history; indexed for search by GIN indexes) and `turns`; a turn's results
//! are committed in one transaction.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use hermes_adapter::{SessionKey, now_millis};
use tokio_postgres::Row;

use super::{PgStore, inbox, outbox};
use crate::conversation::{ChatMessage, Usage};
use crate::store::sessions::{decode_session, decode_stored_message};
use crate::store::{
    IMPORTED_SCOPE, ImportedSession, Result, SessionRow, SessionStats, Sessions, StoredMessage,
    TurnCommit,
};

/// The session columns [`session`] reads.
pub(super) const SESSION: &str = "id, key, created_at, updated_at, model";
/// The message columns [`message`] reads.
pub(super) const MESSAGE: &str =
    "id, role, content, tool_calls, tool_call_id, tool_name, created_at";

pub(super) fn session(r: &Row) -> Result<SessionRow> {
    decode_session((r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
}

pub(super) fn message(r: &Row) -> Result<StoredMessage> {
    decode_stored_message((
        r.get(0),
        r.get(1),
        r.get(2),
        r.get(3),
        r.get(4),
        r.get(5),
        r.get(6),
    ))
}

async fn active(c: &impl GenericClient, key: &str) -> Result<Option<SessionRow>> {
    c.query_opt(
        &format!("SELECT {SESSION} FROM sessions WHERE key = $1 AND ended_at IS NULL"),
        &[&key],
    )
    .await?
    .map(|r| session(&r))
    .transpose()
}

/// A new active session of `key`; `None` when another process created one meanwhile (the
/// unique index on active keys refused this one).
async fn create(c: &impl GenericClient, key: &SessionKey) -> Result<Option<SessionRow>> {
    let now = now_millis();
    let row = c
        .query_opt(
            "INSERT INTO sessions (key, platform, owner, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $4)
             ON CONFLICT (key) WHERE ended_at IS NULL DO NOTHING RETURNING id",
            &[&key.to_string(), &key.platform.as_str(), &key.owner(), &now],
        )
        .await?;
    Ok(row.map(|r| SessionRow {
        id: r.get(0),
        key: key.clone(),
        created_at: now,
        updated_at: now,
        model: None,
    }))
}

/// Inside a write's transaction: refuse it when the running task's fence (the lane's session
/// lease) moved on. The lease row is locked until the commit, so it cannot change hands while
/// this write lands.
async fn fenced(tx: &impl GenericClient) -> Result<()> {
    let Some(fence) = crate::store::fence::current() else {
        return Ok(());
    };
    let token = tx
        .query_opt(
            "SELECT token FROM leases WHERE name = $1 AND holder IS NOT NULL FOR SHARE",
            &[&fence.lease],
        )
        .await?
        .map(|r| r.get(0));
    crate::store::fence::check(&fence, token)
}

async fn append(
    tx: &impl GenericClient,
    session_id: i64,
    msg: &ChatMessage,
    inbox_id: Option<i64>,
) -> Result<()> {
    append_at(tx, session_id, msg, inbox_id, now_millis()).await
}

/// Append `msg` as said at `now` (milliseconds).
async fn append_at(
    tx: &impl GenericClient,
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
    tx.execute(
        "INSERT INTO messages
             (session_id, role, content, tool_calls, tool_call_id, tool_name, inbox_id, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (inbox_id) DO NOTHING",
        &[
            &session_id,
            &msg.role.as_str(),
            &msg.content,
            &calls,
            &msg.tool_call_id,
            &msg.tool_name,
            &inbox_id,
            &now,
        ],
    )
    .await?;
    tx.execute(
        "UPDATE sessions SET updated_at = $2 WHERE id = $1",
        &[&session_id, &now],
    )
    .await?;
    Ok(())
}

#[async_trait]
impl Sessions for PgStore {
    async fn session_active(&self, key: &SessionKey) -> Result<SessionRow> {
        let c = self.client().await?;
        let text = key.to_string();
        // Two processes may open the same session at once: one insert wins, both read it.
        loop {
            if let Some(s) = active(&c, &text).await? {
                return Ok(s);
            }
            if let Some(s) = create(&c, key).await? {
                return Ok(s);
            }
        }
    }

    async fn session_current(&self, key: &SessionKey) -> Result<Option<SessionRow>> {
        let c = self.client().await?;
        active(&c, &key.to_string()).await
    }

    async fn session_reset(&self, key: &SessionKey, reason: &str) -> Result<SessionRow> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        tx.execute(
            "UPDATE sessions SET ended_at = $2, end_reason = $3 WHERE key = $1 AND ended_at IS NULL",
            &[&key.to_string(), &now_millis(), &reason],
        )
        .await?;
        // The update holds the old row's lock until commit; the new active row cannot collide.
        let row = create(&tx, key).await?.ok_or_else(|| {
            crate::store::StoreError::Postgres("a session of this key was opened meanwhile".into())
        })?;
        tx.commit().await?;
        Ok(row)
    }

    async fn import_session(&self, s: ImportedSession) -> Result<Option<i64>> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        // The marker goes in first: a second import of the same origin, even a concurrent one,
        // finds it (or waits on its row) and writes nothing.
        let claimed = tx
            .execute(
                "INSERT INTO settings (scope, name, value, updated_at) VALUES ($1, $2, '', $3)
                 ON CONFLICT (scope, name) DO NOTHING",
                &[&IMPORTED_SCOPE, &s.origin, &now_millis()],
            )
            .await?;
        if claimed == 0 {
            return Ok(None);
        }
        let chat = s.chat.as_ref().map(|c| c.as_str().to_owned());
        let id: i64 = tx
            .query_one(
                "INSERT INTO sessions
                     (key, platform, owner, created_at, updated_at, ended_at, end_reason, chat_id)
                 VALUES ($1, $2, $3, $4, $4, $5, $6, $7) RETURNING id",
                &[
                    &s.key.to_string(),
                    &s.key.platform.as_str(),
                    &s.key.owner(),
                    &s.created_at,
                    &s.ended_at,
                    &s.end_reason,
                    &chat,
                ],
            )
            .await?
            .get(0);
        for (m, at) in &s.messages {
            append_at(&tx, id, m, None, *at).await?;
        }
        tx.execute(
            "UPDATE settings SET value = $3 WHERE scope = $1 AND name = $2",
            &[&IMPORTED_SCOPE, &s.origin, &id.to_string()],
        )
        .await?;
        tx.commit().await?;
        Ok(Some(id))
    }

    async fn append_messages(&self, session_id: i64, msgs: Vec<ChatMessage>) -> Result<()> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        fenced(&tx).await?;
        for m in &msgs {
            append(&tx, session_id, m, None).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn append_inbox_messages(
        &self,
        session_id: i64,
        items: Vec<(Option<i64>, String)>,
    ) -> Result<()> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        fenced(&tx).await?;
        for (inbox_id, text) in &items {
            append(&tx, session_id, &ChatMessage::user(text.clone()), *inbox_id).await?;
        }
        if let Some(inbox_id) = items.iter().rev().find_map(|(id, _)| *id) {
            tx.execute(
                "UPDATE sessions SET chat_id = i.chat_id FROM inbox i
                  WHERE sessions.id = $1 AND i.id = $2",
                &[&session_id, &inbox_id],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn commit_turn(&self, commit: TurnCommit) -> Result<()> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        fenced(&tx).await?;
        for m in &commit.messages {
            append(&tx, commit.session_id, m, None).await?;
        }
        outbox::insert(&tx, &commit.replies).await?;
        inbox::finish(&tx, &commit.inbox_ids, commit.record.outcome).await?;
        let r = &commit.record;
        tx.execute(
            "INSERT INTO turns (session_id, started_at, finished_at, iterations, prompt_tokens,
                 completion_tokens, cached_tokens, cache_write_tokens, model, outcome)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            &[
                &commit.session_id,
                &r.started_at,
                &now_millis(),
                &(r.iterations as i32),
                &(r.usage.prompt_tokens as i64),
                &(r.usage.completion_tokens as i64),
                &(r.usage.cached_tokens as i64),
                &(r.usage.cache_write_tokens as i64),
                &r.model,
                &r.outcome.as_str(),
            ],
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn session_stats(&self, session_id: i64) -> Result<SessionStats> {
        let c = self.client().await?;
        let messages: i64 = c
            .query_one(
                "SELECT COUNT(*) FROM messages WHERE session_id = $1",
                &[&session_id],
            )
            .await?
            .get(0);
        let r = c
            .query_one(
                "SELECT COUNT(*), COALESCE(SUM(prompt_tokens), 0)::BIGINT,
                        COALESCE(SUM(completion_tokens), 0)::BIGINT,
                        COALESCE(SUM(cached_tokens), 0)::BIGINT,
                        COALESCE(SUM(cache_write_tokens), 0)::BIGINT
                   FROM turns WHERE session_id = $1",
                &[&session_id],
            )
            .await?;
        let n = |i: usize| r.get::<_, i64>(i) as u64;
        Ok(SessionStats {
            messages: messages as u64,
            turns: n(0),
            usage: Usage {
                prompt_tokens: n(1),
                completion_tokens: n(2),
                cached_tokens: n(3),
                cache_write_tokens: n(4),
            },
        })
    }

    async fn set_session_model(&self, session_id: i64, model: Option<String>) -> Result<()> {
        self.update(
            "UPDATE sessions SET model = $2 WHERE id = $1",
            &[&session_id, &model],
        )
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
        let mut out = self
            .messages(
                &format!(
                    "SELECT {MESSAGE} FROM messages WHERE session_id = $1 AND id > $2
                     ORDER BY id DESC LIMIT $3"
                ),
                &[&session_id, &after, &(limit as i64)],
            )
            .await?;
        out.reverse();
        Ok(out)
    }

    async fn history_head(&self, session_id: i64, limit: usize) -> Result<Vec<StoredMessage>> {
        self.messages(
            &format!("SELECT {MESSAGE} FROM messages WHERE session_id = $1 ORDER BY id LIMIT $2"),
            &[&session_id, &(limit as i64)],
        )
        .await
    }

    async fn history_between(
        &self,
        session_id: i64,
        after: i64,
        upto: i64,
    ) -> Result<Vec<StoredMessage>> {
        self.messages(
            &format!(
                "SELECT {MESSAGE} FROM messages WHERE session_id = $1 AND id > $2 AND id <= $3
                 ORDER BY id"
            ),
            &[&session_id, &after, &upto],
        )
        .await
    }
}

impl PgStore {
    /// Messages a query selecting [`MESSAGE`] returns.
    pub(super) async fn messages(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<StoredMessage>> {
        let c = self.client().await?;
        c.query(sql, params).await?.iter().map(message).collect()
    }
}
