//! Reading a session's messages for prompts and compression: the newest window, the head, a
//! range.

use rusqlite::{Connection, params};

use super::sessions::{decode_stored_message, stored_message_row};
use super::{Result, Store, StoredMessage};

const COLUMNS: &str = "id, role, content, tool_calls, tool_call_id, tool_name, created_at";

fn query(c: &Connection, sql: &str, args: impl rusqlite::Params) -> Result<Vec<StoredMessage>> {
    let mut stmt = c.prepare_cached(sql)?;
    let rows = stmt.query_map(args, stored_message_row)?;
    rows.map(|raw| decode_stored_message(raw?)).collect()
}

impl Store {
    /// The last `limit` messages of a session, oldest first.
    pub async fn history(&self, session_id: i64, limit: usize) -> Result<Vec<StoredMessage>> {
        self.history_after(session_id, 0, limit).await
    }

    /// The last `limit` messages of a session with an id above `after`, oldest first.
    pub async fn history_after(
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

    /// The first `limit` messages of a session.
    pub async fn history_head(&self, session_id: i64, limit: usize) -> Result<Vec<StoredMessage>> {
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

    /// Messages with `after < id <= upto`, oldest first.
    pub async fn history_between(
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
