//! hermes-agent's conversations (`state.db`, SQLite) read into [`ImportedSession`]s: each
//! session keyed as hermes would key it (so that its person's `session_search` finds it), with
//! its user and assistant messages and their original times. Tool rounds are left out: they are
//! not searched, and their calls named hermes-agent's tools.

use std::path::Path;

use hermes_adapter::{Platform, SessionKey, SessionScope};
use rusqlite::{Connection, OpenFlags, params};

use crate::conversation::ChatMessage;
use crate::store::ImportedSession;

/// The prefix hermes-agent puts before JSON-encoded (multimodal) message content.
const JSON_CONTENT: &str = "\u{0}json:";

/// What was read: the sessions to import, and what was left out and why.
#[derive(Debug, Default)]
pub(super) struct History {
    pub sessions: Vec<ImportedSession>,
    /// Sessions of a platform or kind hermes has no place for, by their `source`.
    pub skipped: Vec<String>,
    /// Sessions without a user or assistant message.
    pub empty: usize,
}

/// One row of hermes-agent's `sessions`.
struct Row {
    id: String,
    source: String,
    user_id: Option<String>,
    chat_id: Option<String>,
    chat_type: Option<String>,
    thread_id: Option<String>,
    started_at: f64,
    ended_at: Option<f64>,
    end_reason: Option<String>,
}

/// Read every session of hermes-agent's `state.db`. `local_user` keys its terminal sessions
/// (ours are `cli:<user>`).
pub(super) fn read(db: &Path, local_user: &str) -> Result<History, String> {
    let c = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("cannot open {}: {e}", db.display()))?;
    let schema = |e: rusqlite::Error| {
        format!(
            "{} is not a hermes-agent state.db this import understands ({e})",
            db.display()
        )
    };
    let active = has_column(&c, "messages", "active").map_err(schema)?;
    let mut stmt = c
        .prepare(
            "SELECT id, source, user_id, chat_id, chat_type, thread_id, started_at, ended_at,
                    end_reason
               FROM sessions ORDER BY started_at, id",
        )
        .map_err(schema)?;
    let rows: Vec<Row> = stmt
        .query_map([], |r| {
            Ok(Row {
                id: r.get(0)?,
                source: r.get(1)?,
                user_id: r.get(2)?,
                chat_id: r.get(3)?,
                chat_type: r.get(4)?,
                thread_id: r.get(5)?,
                started_at: r.get(6)?,
                ended_at: r.get(7)?,
                end_reason: r.get(8)?,
            })
        })
        .and_then(|rows| rows.collect())
        .map_err(schema)?;
    let sql = format!(
        "SELECT role, content, timestamp FROM messages
          WHERE session_id = ?1 AND role IN ('user', 'assistant'){}
          ORDER BY timestamp, id",
        if active { " AND active = 1" } else { "" }
    );
    let mut messages = c.prepare(&sql).map_err(schema)?;
    let mut out = History::default();
    for row in rows {
        let Some((key, chat)) = key_of(&row, local_user) else {
            out.skipped.push(row.source.clone());
            continue;
        };
        let said: Vec<(ChatMessage, i64)> = messages
            .query_map(params![row.id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, f64>(2)?,
                ))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(schema)?
            .into_iter()
            .filter_map(|(role, content, at)| {
                let text = text_of(content.as_deref().unwrap_or(""));
                if text.trim().is_empty() {
                    return None;
                }
                let message = match role.as_str() {
                    "user" => ChatMessage::user(text),
                    _ => ChatMessage::assistant(text),
                };
                Some((message, millis(at)))
            })
            .collect();
        let (Some(first), Some(last)) = (said.first(), said.last()) else {
            out.empty += 1;
            continue;
        };
        let created_at = millis(row.started_at).min(first.1);
        let ended_at = row.ended_at.map(millis).unwrap_or(last.1).max(last.1);
        out.sessions.push(ImportedSession {
            origin: format!("hermes-agent:{}", row.id),
            key,
            chat: chat.map(Into::into),
            created_at,
            ended_at,
            end_reason: match row.end_reason {
                Some(r) => format!("imported from hermes-agent ({r})"),
                None => "imported from hermes-agent".into(),
            },
            messages: said,
        });
    }
    Ok(out)
}

fn has_column(c: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    let mut stmt = c.prepare(&format!("PRAGMA table_info({table})"))?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(names.iter().any(|n| n == column))
}

/// Seconds (hermes-agent's REAL timestamps) to our milliseconds.
fn millis(secs: f64) -> i64 {
    (secs * 1000.0).round() as i64
}

/// The text of stored content: plain, or the text parts of JSON-encoded multimodal content.
fn text_of(content: &str) -> String {
    let Some(json) = content.strip_prefix(JSON_CONTENT) else {
        return content.to_owned();
    };
    let parts: Vec<serde_json::Value> = match serde_json::from_str(json) {
        Ok(serde_json::Value::Array(parts)) => parts,
        Ok(serde_json::Value::String(s)) => return s,
        _ => return String::new(),
    };
    parts
        .iter()
        .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The session key hermes gives the conversation of `row`, and its chat; `None` for sessions
/// hermes has no place for (platforms it does not serve, cron runs, subagents).
fn key_of(row: &Row, local_user: &str) -> Option<(SessionKey, Option<String>)> {
    let nonempty = |v: &Option<String>| v.clone().filter(|s| !s.trim().is_empty());
    if row.source == "cli" {
        return Some((SessionKey::direct(Platform::Cli, local_user), None));
    }
    let platform = match row.source.as_str() {
        "telegram" => Platform::Telegram,
        "discord" => Platform::Discord,
        "slack" => Platform::Slack,
        "email" => Platform::Email,
        "matrix" => Platform::Matrix,
        _ => return None,
    };
    let user = nonempty(&row.user_id);
    let chat = nonempty(&row.chat_id);
    let direct = matches!(row.chat_type.as_deref(), None | Some("dm"));
    if direct {
        let user = user.or_else(|| chat.clone())?;
        return Some((SessionKey::direct(platform, user), chat));
    }
    let chat_id = chat.clone()?;
    let thread = nonempty(&row.thread_id);
    // Threads are shared by everyone in them; elsewhere in a group each person has their own
    // session (hermes' default, and hermes-agent's).
    let user = if thread.is_some() { None } else { Some(user?) };
    let key = SessionKey {
        platform,
        scope: SessionScope::Group {
            chat: chat_id.as_str().into(),
            thread: thread.map(|t| t.as_str().into()),
            user: user.map(|u| u.as_str().into()),
        },
    };
    Some((key, chat))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(source: &str, chat_type: &str, user: &str, chat: &str, thread: Option<&str>) -> Row {
        Row {
            id: "s".into(),
            source: source.into(),
            user_id: Some(user.into()),
            chat_id: Some(chat.into()),
            chat_type: Some(chat_type.into()),
            thread_id: thread.map(Into::into),
            started_at: 0.0,
            ended_at: None,
            end_reason: None,
        }
    }

    #[test]
    fn sessions_are_keyed_as_hermes_keys_them() {
        let (key, chat) = key_of(&row("telegram", "dm", "111", "111", None), "ann").unwrap();
        assert_eq!(key.to_string(), "telegram:111");
        assert_eq!(key.owner(), "telegram:111");
        assert_eq!(chat.as_deref(), Some("111"));
        let (key, _) = key_of(&row("discord", "group", "7", "99", None), "ann").unwrap();
        assert_eq!(key.to_string(), "discord:99:7");
        let (key, _) = key_of(&row("slack", "thread", "U1", "C1", Some("17.5")), "ann").unwrap();
        assert_eq!(key.to_string(), "slack:C1#17.5:*");
        let (key, _) = key_of(&row("cli", "dm", "", "", None), "ann").unwrap();
        assert_eq!(key.to_string(), "cli:ann");
        assert!(key_of(&row("whatsapp", "dm", "1", "1", None), "ann").is_none());
        assert!(key_of(&row("cron", "dm", "1", "1", None), "ann").is_none());
    }

    #[test]
    fn multimodal_content_keeps_its_text() {
        let stored = format!(
            "{JSON_CONTENT}{}",
            r#"[{"type":"text","text":"look at this"},{"type":"image_url","image_url":{"url":"x"}}]"#
        );
        assert_eq!(text_of(&stored), "look at this");
        assert_eq!(text_of("plain"), "plain");
    }
}
