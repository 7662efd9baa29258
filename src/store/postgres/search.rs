//! `Search` in PostgreSQL: history search over the GIN indexes of migration 8, with the same
//! behaviour as SQLite's (`../sqlite/search/`): user-visible messages only, words in every
//! script with spaces (`to_tsvector('simple')`, each term a phrase query, so nothing a person
//! types is an operator), substrings through the trigram index for Chinese, Japanese and Korean
//! (terms under three characters within the most recent messages only), newest matches first,
//! read in pages until enough sessions are found. A person's search only ever joins their own
//! sessions (`owner`), inside the query.

use async_trait::async_trait;
use tokio_postgres::types::ToSql;

use super::PgStore;
use super::sessions::{MESSAGE, SESSION, message, session};
use crate::conversation::Role;
use crate::store::sqlite::search::listing::{Raw, decode};
use crate::store::sqlite::search::query::{is_cjk, like_pattern, terms};
use crate::store::{
    FoundMessage, HITS_PER_SESSION, Result, Search, SearchScope, SessionHits, SessionRow,
    SessionSummary, StoreError, StoredMessage,
};

/// Matches read per page, newest first.
const PAGE: i64 = 500;
/// Characters of a message the word index holds (PostgreSQL refuses a text search vector over
/// 1 MB; the index expression and the query must be the same).
const WORDS_INDEXED: i32 = 200_000;
/// Terms under three characters are matched with `LIKE` over this many most recent messages.
const LIKE_WINDOW: i64 = 200_000;

const SUMMARY: &str = "SELECT s.id, s.key, s.created_at, s.updated_at, s.ended_at,
        (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id), s.chat_id
    FROM sessions s";

fn summary(r: &tokio_postgres::Row) -> Result<SessionSummary> {
    let raw: Raw = (
        r.get(0),
        r.get(1),
        r.get(2),
        r.get(3),
        r.get(4),
        r.get(5),
        r.get(6),
    );
    decode(raw)
}

fn owner(scope: &SearchScope) -> Option<&str> {
    match scope {
        SearchScope::Owner(o) => Some(o),
        SearchScope::All => None,
    }
}

/// Matching message ids grouped by session, in the order the sessions were first met.
type Found = Vec<(i64, Vec<i64>)>;

impl PgStore {
    /// Read matches newest first, a page at a time, until `limit_sessions` sessions are found
    /// (and a further one seen), keeping at most [`HITS_PER_SESSION`] per session.
    async fn find(
        &self,
        terms: &[String],
        all: bool,
        scope: &SearchScope,
        limit_sessions: usize,
    ) -> Result<Found> {
        let cjk = terms.iter().any(|t| t.chars().any(is_cjk));
        let join = if all { " AND " } else { " OR " };
        // $1 owner, $2 cursor, $3 page; the terms from $4.
        let mut params: Vec<Box<dyn ToSql + Sync + Send>> = Vec::new();
        let condition = if cjk {
            let likes: Vec<String> = (0..terms.len())
                .map(|i| format!("m.content LIKE ${}", i + 4))
                .collect();
            params.extend(
                terms
                    .iter()
                    .map(|t| Box::new(like_pattern(t)) as Box<dyn ToSql + Sync + Send>),
            );
            // As in SQLite: without a term the trigram index can look up (three characters or
            // more), or when any short term alone may match, only the recent messages are read.
            let short = |t: &String| t.chars().count() < 3;
            let bounded = terms.iter().all(short) || (!all && terms.iter().any(short));
            let window = if bounded {
                format!(" AND m.id > (SELECT COALESCE(MAX(id), 0) FROM messages) - {LIKE_WINDOW}")
            } else {
                String::new()
            };
            format!("({}){window}", likes.join(join))
        } else {
            let phrases: Vec<String> = (0..terms.len())
                .map(|i| format!("phraseto_tsquery('simple', ${})", i + 4))
                .collect();
            params.extend(
                terms
                    .iter()
                    .map(|t| Box::new(t.clone()) as Box<dyn ToSql + Sync + Send>),
            );
            let combined = phrases.join(if all { " && " } else { " || " });
            format!("to_tsvector('simple', left(m.content, {WORDS_INDEXED})) @@ ({combined})")
        };
        let sql = format!(
            "SELECT m.id, m.session_id FROM messages m JOIN sessions s ON s.id = m.session_id
              WHERE m.role IN ('user', 'assistant') AND ($1::TEXT IS NULL OR s.owner = $1)
                AND m.id < $2 AND {condition}
              ORDER BY m.id DESC LIMIT $3"
        );
        let c = self.client().await?;
        let stmt = c.prepare(&sql).await?;
        let who = owner(scope).map(str::to_owned);
        let mut cursor = i64::MAX;
        let mut found: Found = Vec::new();
        loop {
            let mut args: Vec<&(dyn ToSql + Sync)> = vec![&who, &cursor, &PAGE];
            args.extend(params.iter().map(|p| &**p as &(dyn ToSql + Sync)));
            let rows = c.query(&stmt, &args).await?;
            let n = rows.len() as i64;
            for row in rows {
                let (id, session): (i64, i64) = (row.get(0), row.get(1));
                cursor = id;
                match found.iter().position(|(s, _)| *s == session) {
                    Some(i) if found[i].1.len() < HITS_PER_SESSION => found[i].1.push(id),
                    Some(_) => {}
                    None if found.len() == limit_sessions => return Ok(found),
                    None => found.push((session, vec![id])),
                }
            }
            if n < PAGE {
                return Ok(found);
            }
        }
    }

    async fn session_by_id(&self, id: i64) -> Result<SessionRow> {
        let c = self.client().await?;
        c.query_opt(
            &format!("SELECT {SESSION} FROM sessions WHERE id = $1"),
            &[&id],
        )
        .await?
        .map(|r| session(&r))
        .transpose()?
        .ok_or_else(|| StoreError::Corrupt(format!("session {id} vanished during a search")))
    }

    /// Up to `limit` visible messages of a session strictly after (or, `backwards`, at or
    /// before) message `from`, oldest first.
    async fn visible(
        &self,
        session_id: i64,
        from: i64,
        backwards: bool,
        limit: usize,
    ) -> Result<Vec<FoundMessage>> {
        let sql = if backwards {
            "SELECT id, role, content, created_at FROM messages
             WHERE session_id = $1 AND id <= $2 AND role IN ('user', 'assistant') AND content <> ''
             ORDER BY id DESC LIMIT $3"
        } else {
            "SELECT id, role, content, created_at FROM messages
             WHERE session_id = $1 AND id > $2 AND role IN ('user', 'assistant') AND content <> ''
             ORDER BY id LIMIT $3"
        };
        let c = self.client().await?;
        let mut out = c
            .query(sql, &[&session_id, &from, &(limit as i64)])
            .await?
            .iter()
            .map(|r| {
                let role: &str = r.get(1);
                Ok(FoundMessage {
                    id: r.get(0),
                    role: Role::parse(role)
                        .ok_or_else(|| StoreError::Corrupt(format!("message role `{role}`")))?,
                    content: r.get(2),
                    created_at: r.get(3),
                    hit: false,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        if backwards {
            out.reverse();
        }
        Ok(out)
    }

    async fn excerpts(
        &self,
        session_id: i64,
        hits: &[i64],
        context: usize,
    ) -> Result<Vec<Vec<FoundMessage>>> {
        let mut hits = hits.to_vec();
        hits.sort_unstable();
        let mut around = Vec::with_capacity(hits.len());
        for &hit in &hits {
            around.push((
                self.visible(session_id, hit, true, context + 2).await?,
                self.visible(session_id, hit, false, context).await?,
            ));
        }
        Ok(crate::store::search::merge_windows(&hits, around, context))
    }
}

#[async_trait]
impl Search for PgStore {
    async fn search_messages(
        &self,
        query: &str,
        scope: SearchScope,
        limit_sessions: usize,
        context: usize,
    ) -> Result<Vec<SessionHits>> {
        let terms = terms(query);
        if terms.is_empty() || limit_sessions == 0 {
            return Ok(Vec::new());
        }
        let mut found = self.find(&terms, true, &scope, limit_sessions).await?;
        if found.is_empty() && terms.len() > 1 {
            found = self.find(&terms, false, &scope, limit_sessions).await?;
        }
        found.sort_by_key(|(session, _)| std::cmp::Reverse(*session));
        let mut out = Vec::with_capacity(found.len());
        for (session_id, hits) in found {
            out.push(SessionHits {
                session: self.session_by_id(session_id).await?,
                excerpts: self.excerpts(session_id, &hits, context).await?,
            });
        }
        Ok(out)
    }

    async fn messages_after(
        &self,
        session_id: i64,
        after_message_id: i64,
        limit: usize,
    ) -> Result<Vec<FoundMessage>> {
        self.visible(session_id, after_message_id, false, limit)
            .await
    }

    async fn session_of_message(
        &self,
        message_id: i64,
        scope: SearchScope,
    ) -> Result<Option<SessionRow>> {
        let c = self.client().await?;
        let who = owner(&scope);
        let id: Option<i64> = c
            .query_opt(
                "SELECT s.id FROM messages m JOIN sessions s ON s.id = m.session_id
                 WHERE m.id = $1 AND ($2::TEXT IS NULL OR s.owner = $2)",
                &[&message_id, &who],
            )
            .await?
            .map(|r| r.get(0));
        match id {
            Some(id) => self.session_by_id(id).await.map(Some),
            None => Ok(None),
        }
    }

    async fn sessions_list(&self, limit: usize, offset: usize) -> Result<Vec<SessionSummary>> {
        let c = self.client().await?;
        c.query(
            &format!("{SUMMARY} ORDER BY s.updated_at DESC, s.id DESC LIMIT $1 OFFSET $2"),
            &[&(limit as i64), &(offset as i64)],
        )
        .await?
        .iter()
        .map(summary)
        .collect()
    }

    async fn session_summary(&self, id: i64) -> Result<Option<SessionSummary>> {
        let c = self.client().await?;
        c.query_opt(&format!("{SUMMARY} WHERE s.id = $1"), &[&id])
            .await?
            .map(|r| summary(&r))
            .transpose()
    }

    async fn session_messages(&self, id: i64) -> Result<Option<Vec<StoredMessage>>> {
        let c = self.client().await?;
        if c.query_opt("SELECT 1 FROM sessions WHERE id = $1", &[&id])
            .await?
            .is_none()
        {
            return Ok(None);
        }
        let rows = c
            .query(
                &format!("SELECT {MESSAGE} FROM messages WHERE session_id = $1 ORDER BY id"),
                &[&id],
            )
            .await?;
        rows.iter()
            .map(message)
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    async fn chat_has_session(
        &self,
        platform: hermes_adapter::Platform,
        chat: &hermes_adapter::ChatId,
    ) -> Result<bool> {
        let c = self.client().await?;
        Ok(c.query_opt(
            "SELECT 1 FROM sessions WHERE platform = $1 AND chat_id = $2 LIMIT 1",
            &[&platform.as_str(), &chat.as_str()],
        )
        .await?
        .is_some())
    }
}
