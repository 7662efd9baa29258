//! `Search` in SQLite: FTS5 word and trigram indexes, read newest first.
//!
//! History search: find earlier conversations by what was said in them, with the messages around
//! each match, and read on from there. Also the operator's listing and export of sessions.
//!
//! Only the user-visible conversation is searched: `user` and `assistant` messages. Tool results
//! (file contents, web pages, command output) are the agent's working material, often long and
//! repetitive; were they searchable, a common word would match mostly tool output and push the
//! conversation out of the results. Neither index holds them: the trigram index's content table
//! is the view `messages_visible`, the word index's `messages_words`. Context around a match
//! follows the same rule, and skips assistant messages that only called tools.
//!
//! Results are ordered by recency, not by relevance: "what did we decide about X" usually means
//! the latest time X came up, and recency needs no scoring of every match. Matches are read
//! newest first and the scan stops as soon as it has found enough sessions, so a common word
//! costs no more than a rare one.
//!
//! Privacy: a [`SearchScope::Owner`] search only ever reads sessions whose `owner` equals it
//! (see `SessionKey::owner`); the filter is part of every query, never applied afterwards. The
//! word index also holds each message's owner as a token, so a person's search walks only their
//! own matches (see migration 8).

pub(in crate::store) mod listing;
mod pending;
pub(in crate::store) mod query;

use async_trait::async_trait;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use super::SqliteStore;
use super::sessions::{decode_session, decode_stored_message, session_row, stored_message_row};
use crate::conversation::Role;
use crate::store::SessionRow;
use crate::store::{
    FoundMessage, HITS_PER_SESSION, Result, Search, SearchScope, SessionHits, SessionSummary,
    StoreError, StoredMessage,
};
use listing::{SUMMARY, decode, summary, summary_of};
use query::{Combine, Query};

pub(super) use pending::index_pending;
pub use query::terms as search_terms;

/// Terms shorter than three characters cannot use the trigram index; they are found with
/// `LIKE`, which reads every candidate row, so it only looks at the most recent this many
/// messages (by id).
const LIKE_WINDOW: i64 = 200_000;

impl SearchScope {
    fn owner(&self) -> Value {
        match self {
            SearchScope::Owner(o) => Value::Text(o.clone()),
            SearchScope::All => Value::Null,
        }
    }
}

#[async_trait]
impl Search for SqliteStore {
    async fn search_messages(
        &self,
        query: &str,
        scope: SearchScope,
        limit_sessions: usize,
        context: usize,
    ) -> Result<Vec<SessionHits>> {
        let query = Query::parse(query);
        self.call(move |c| {
            if query.terms.is_empty() || limit_sessions == 0 {
                return Ok(Vec::new());
            }
            index_pending(c)?;
            let mut found = find(c, &query, Combine::All, &scope, limit_sessions)?;
            if found.is_empty() && query.terms.len() > 1 {
                found = find(c, &query, Combine::Any, &scope, limit_sessions)?;
            }
            // Newest sessions first.
            found.sort_by_key(|(session, _)| std::cmp::Reverse(*session));
            found
                .into_iter()
                .map(|(session_id, hits)| {
                    Ok(SessionHits {
                        session: session(c, session_id)?,
                        excerpts: excerpts(c, session_id, &hits, context)?,
                    })
                })
                .collect()
        })
        .await
    }

    async fn messages_after(
        &self,
        session_id: i64,
        after_message_id: i64,
        limit: usize,
    ) -> Result<Vec<FoundMessage>> {
        self.call(move |c| visible(c, session_id, after_message_id, false, limit))
            .await
    }

    async fn session_of_message(
        &self,
        message_id: i64,
        scope: SearchScope,
    ) -> Result<Option<SessionRow>> {
        self.call(move |c| {
            let id: Option<i64> = c
                .query_row(
                    "SELECT s.id FROM messages m JOIN sessions s ON s.id = m.session_id
                     WHERE m.id = ?1 AND (?2 IS NULL OR s.owner = ?2)",
                    params![message_id, scope.owner()],
                    |r| r.get(0),
                )
                .optional()?;
            id.map(|id| session(c, id)).transpose()
        })
        .await
    }

    async fn sessions_list(&self, limit: usize, offset: usize) -> Result<Vec<SessionSummary>> {
        self.call(move |c| {
            c.prepare_cached(&format!(
                "{SUMMARY} ORDER BY s.updated_at DESC, s.id DESC LIMIT ?1 OFFSET ?2"
            ))?
            .query_map(params![limit as i64, offset as i64], summary)?
            .map(|raw| decode(raw?))
            .collect()
        })
        .await
    }

    async fn session_summary(&self, id: i64) -> Result<Option<SessionSummary>> {
        self.call(move |c| summary_of(c, id)).await
    }

    async fn session_messages(&self, id: i64) -> Result<Option<Vec<StoredMessage>>> {
        self.call(move |c| {
            let exists = c
                .prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")?
                .exists([id])?;
            if !exists {
                return Ok(None);
            }
            c.prepare_cached(
                "SELECT id, role, content, tool_calls, tool_call_id, tool_name, created_at
                 FROM messages WHERE session_id = ?1 ORDER BY id",
            )?
            .query_map([id], stored_message_row)?
            .map(|raw| decode_stored_message(raw?))
            .collect::<Result<Vec<_>>>()
            .map(Some)
        })
        .await
    }

    async fn chat_has_session(
        &self,
        platform: hermes_adapter::Platform,
        chat: &hermes_adapter::ChatId,
    ) -> Result<bool> {
        let chat = chat.as_str().to_owned();
        self.call(move |c| {
            Ok(
                c.prepare_cached("SELECT 1 FROM sessions WHERE platform = ?1 AND chat_id = ?2")?
                    .exists(params![platform.as_str(), chat])?,
            )
        })
        .await
    }
}

/// Matching message ids grouped by session, in the order the sessions were first met (newest
/// match first).
type Found = Vec<(i64, Vec<i64>)>;

/// Read matches newest first until `limit_sessions` sessions are found (and a further one seen),
/// keeping at most [`HITS_PER_SESSION`] per session.
fn find(
    c: &Connection,
    query: &Query,
    how: Combine,
    scope: &SearchScope,
    limit_sessions: usize,
) -> Result<Found> {
    let (sql, args) = candidates(query, how, scope);
    let mut stmt = c.prepare_cached(&sql)?;
    let mut rows = stmt.query(params_from_iter(args))?;
    let mut found: Found = Vec::new();
    while let Some(row) = rows.next()? {
        let (id, session): (i64, i64) = (row.get(0)?, row.get(1)?);
        match found.iter().position(|(s, _)| *s == session) {
            Some(i) if found[i].1.len() < HITS_PER_SESSION => found[i].1.push(id),
            Some(_) => {}
            None if found.len() == limit_sessions => break,
            None => found.push((session, vec![id])),
        }
    }
    Ok(found)
}

/// SQL yielding `(message id, session id)` of matches in scope, newest first, and its arguments.
///
/// The index query is the outer loop (`CROSS JOIN` fixes the order) and walks its matches in
/// descending rowid order, so the caller can stop reading early.
fn candidates(query: &Query, how: Combine, scope: &SearchScope) -> (String, Vec<Value>) {
    let visible = "m.role IN ('user', 'assistant')";
    let mut args = vec![scope.owner()];
    if !query.cjk {
        // The owner's token narrows the index's own walk; the join checks the owner again.
        let words = format!("content : ({})", query.fts(how));
        args.push(Value::Text(match scope {
            SearchScope::Owner(owner) => format!("owner : {} AND {words}", owner_token(owner)),
            SearchScope::All => words,
        }));
        let sql = "SELECT m.id, m.session_id FROM messages_fts
             CROSS JOIN messages m ON m.id = messages_fts.rowid
             CROSS JOIN sessions s ON s.id = m.session_id
             WHERE messages_fts MATCH ?2 AND (?1 IS NULL OR s.owner = ?1)
             ORDER BY messages_fts.rowid DESC"
            .to_owned();
        return (sql, args);
    }
    // Trigram index for the long terms, short ones filtered with LIKE. With `Any`, a message
    // matching only a short term must be found too, so then every term goes through LIKE.
    let short = query.short_patterns();
    let (trigram, patterns) = match query.trigram(how) {
        Some(expr) if how == Combine::All || short.is_empty() => (Some(expr), short),
        _ => (None, query.all_patterns()),
    };
    let likes = (0..patterns.len())
        .map(|i| format!("m.content LIKE ?{} ESCAPE '\\'", i + 3))
        .collect::<Vec<_>>()
        .join(how.sql());
    let likes = if likes.is_empty() {
        "1".to_owned()
    } else {
        format!("({likes})")
    };
    let sql = if let Some(expr) = trigram {
        args.push(Value::Text(expr));
        format!(
            "SELECT m.id, m.session_id FROM messages_trigram
             CROSS JOIN messages m ON m.id = messages_trigram.rowid
             CROSS JOIN sessions s ON s.id = m.session_id
             WHERE messages_trigram MATCH ?2 AND {likes} AND (?1 IS NULL OR s.owner = ?1)
             ORDER BY messages_trigram.rowid DESC"
        )
    } else {
        // Only LIKE: bounded to the most recent LIKE_WINDOW messages. An owner's search walks
        // that owner's sessions (few rows); the operator's walks the window by id.
        args.push(Value::Integer(LIKE_WINDOW));
        let floor = "m.id > (SELECT COALESCE(MAX(id), 0) FROM messages) - ?2";
        match scope {
            SearchScope::Owner(_) => format!(
                "SELECT m.id, m.session_id FROM sessions s
                 CROSS JOIN messages m ON m.session_id = s.id
                 WHERE s.owner = ?1 AND {floor} AND {visible} AND {likes}
                 ORDER BY m.id DESC"
            ),
            SearchScope::All => format!(
                "SELECT m.id, m.session_id FROM messages m
                 WHERE ?1 IS NULL AND {floor} AND {visible} AND {likes}
                 ORDER BY m.id DESC"
            ),
        }
    };
    args.extend(patterns.into_iter().map(Value::Text));
    (sql, args)
}

/// The word index's token for an owner: `o` and the owner's bytes in hex, as migration 8's
/// triggers write it (`'o' || hex(owner)`); one token for the `unicode61` tokenizer.
fn owner_token(owner: &str) -> String {
    use std::fmt::Write;
    owner.bytes().fold(String::from("o"), |mut t, b| {
        let _ = write!(t, "{b:02X}");
        t
    })
}

fn session(c: &Connection, id: i64) -> Result<SessionRow> {
    c.prepare_cached("SELECT id, key, created_at, updated_at, model FROM sessions WHERE id = ?1")?
        .query_row([id], session_row)
        .optional()?
        .map(decode_session)
        .transpose()?
        .ok_or_else(|| StoreError::Corrupt(format!("session {id} vanished during a search")))
}

/// Up to `limit` visible messages of a session strictly after (or, `backwards`, at or before)
/// message `from`, oldest first.
fn visible(
    c: &Connection,
    session_id: i64,
    from: i64,
    backwards: bool,
    limit: usize,
) -> Result<Vec<FoundMessage>> {
    let sql = if backwards {
        "SELECT id, role, content, created_at FROM messages
         WHERE session_id = ?1 AND id <= ?2 AND role IN ('user', 'assistant') AND content != ''
         ORDER BY id DESC LIMIT ?3"
    } else {
        "SELECT id, role, content, created_at FROM messages
         WHERE session_id = ?1 AND id > ?2 AND role IN ('user', 'assistant') AND content != ''
         ORDER BY id LIMIT ?3"
    };
    let mut out = c
        .prepare_cached(sql)?
        .query_map(params![session_id, from, limit as i64], |r| {
            Ok((r.get(0)?, r.get::<_, String>(1)?, r.get(2)?, r.get(3)?))
        })?
        .map(|raw| {
            let (id, role, content, created_at) = raw?;
            Ok(FoundMessage {
                id,
                role: Role::parse(&role)
                    .ok_or_else(|| StoreError::Corrupt(format!("message role `{role}`")))?,
                content,
                created_at,
                hit: false,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if backwards {
        out.reverse();
    }
    Ok(out)
}

/// The context windows around `hits` in one session, overlapping or touching ones merged.
fn excerpts(
    c: &Connection,
    session_id: i64,
    hits: &[i64],
    context: usize,
) -> Result<Vec<Vec<FoundMessage>>> {
    let mut hits = hits.to_vec();
    hits.sort_unstable();
    let mut around = Vec::with_capacity(hits.len());
    for &hit in &hits {
        around.push((
            visible(c, session_id, hit, true, context + 2)?,
            visible(c, session_id, hit, false, context)?,
        ));
    }
    Ok(crate::store::search::merge_windows(&hits, around, context))
}

#[cfg(test)]
mod tests;
