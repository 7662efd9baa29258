//! The operator's listing of sessions in SQLite: the query behind `sessions_list` and
//! `session_summary`.

use rusqlite::{Connection, OptionalExtension};

use crate::store::{Result, SessionSummary, StoreError};

pub(super) const SUMMARY: &str = "SELECT s.id, s.key, s.created_at, s.updated_at, s.ended_at,
        (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id), s.chat_id
    FROM sessions s";

/// A summary row as read: id, key, created, updated, ended, message count, chat.
pub(in crate::store) type Raw = (i64, String, i64, i64, Option<i64>, i64, Option<String>);

pub(super) fn summary(r: &rusqlite::Row<'_>) -> rusqlite::Result<Raw> {
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

pub(in crate::store) fn decode(raw: Raw) -> Result<SessionSummary> {
    let (id, key, created_at, updated_at, ended_at, messages, chat) = raw;
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
        chat: chat.map(Into::into),
    })
}

pub(super) fn summary_of(c: &Connection, id: i64) -> Result<Option<SessionSummary>> {
    c.prepare_cached(&format!("{SUMMARY} WHERE s.id = ?1"))?
        .query_row([id], summary)
        .optional()?
        .map(decode)
        .transpose()
}
