//! The operator's view of stored sessions: a page of the session list, one session's header,
//! and every message of a session for export. Not scoped: only the command line uses these.

use hermes_adapter::SessionKey;
use rusqlite::{Connection, OptionalExtension, params};

use super::super::sessions::{decode_stored_message, stored_message_row};
use super::super::{Result, Store, StoreError, StoredMessage};

/// A session as the list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    pub id: i64,
    pub key: SessionKey,
    pub created_at: i64,
    pub updated_at: i64,
    /// When `/new` or a reset policy ended it; `None` while it is the key's active session.
    pub ended_at: Option<i64>,
    /// Every stored message, tool calls and results included.
    pub messages: u64,
}

const SUMMARY: &str = "SELECT s.id, s.key, s.created_at, s.updated_at, s.ended_at,
        (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)
    FROM sessions s";

fn summary(r: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, String, i64, i64, Option<i64>, i64)> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
    ))
}

fn decode(raw: (i64, String, i64, i64, Option<i64>, i64)) -> Result<SessionSummary> {
    let (id, key, created_at, updated_at, ended_at, messages) = raw;
    Ok(SessionSummary {
        id,
        key: key
            .parse()
            .map_err(|e: hermes_adapter::ParseSessionKeyError| {
                StoreError::Corrupt(format!("session {id}: {e}"))
            })?,
        created_at,
        updated_at,
        ended_at,
        messages: messages as u64,
    })
}

fn summary_of(c: &Connection, id: i64) -> Result<Option<SessionSummary>> {
    c.prepare_cached(&format!("{SUMMARY} WHERE s.id = ?1"))?
        .query_row([id], summary)
        .optional()?
        .map(decode)
        .transpose()
}

impl Store {
    /// Up to `limit` sessions, most recently active first, skipping the first `offset`.
    pub async fn sessions_list(&self, limit: usize, offset: usize) -> Result<Vec<SessionSummary>> {
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

    /// One session's summary, `None` if there is no session `id`.
    pub async fn session_summary(&self, id: i64) -> Result<Option<SessionSummary>> {
        self.call(move |c| summary_of(c, id)).await
    }

    /// Every message of session `id` in order, tool calls and results included; `None` if there
    /// is no such session.
    pub async fn session_messages(&self, id: i64) -> Result<Option<Vec<StoredMessage>>> {
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
}

#[cfg(test)]
mod tests {
    use hermes_adapter::Platform;

    use super::*;
    use crate::conversation::ChatMessage;

    async fn session_with(store: &Store, user: &str, texts: &[&str]) -> i64 {
        let s = store
            .session_active(&SessionKey::direct(Platform::Telegram, user))
            .await
            .unwrap();
        let msgs = texts
            .iter()
            .enumerate()
            .map(|(i, t)| match i % 2 {
                0 => ChatMessage::user(*t),
                _ => ChatMessage::assistant(*t),
            })
            .collect();
        store.append_messages(s.id, msgs).await.unwrap();
        s.id
    }

    #[tokio::test]
    async fn sessions_are_listed_and_exported() {
        let store = Store::open_in_memory().unwrap();
        let first = session_with(&store, "1", &["one", "two"]).await;
        let second = session_with(&store, "2", &["three"]).await;
        let list = store.sessions_list(10, 0).await.unwrap();
        let ids: Vec<(i64, u64)> = list.iter().map(|s| (s.id, s.messages)).collect();
        assert_eq!(ids, [(second, 1), (first, 2)]);
        assert_eq!(list[1].key, SessionKey::direct(Platform::Telegram, "1"));
        assert_eq!(store.sessions_list(10, 1).await.unwrap()[0].id, first);
        let msgs = store.session_messages(first).await.unwrap().unwrap();
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[1].message, ChatMessage::assistant("two"));
        assert_eq!(store.session_messages(999).await.unwrap(), None);
        assert_eq!(store.session_summary(999).await.unwrap(), None);
    }
}
