//! `hermes sessions`: the operator's view of stored conversations: list them, show one, search
//! all of them, export one as JSON lines.

use std::process::ExitCode;

use clap::Subcommand;
use jiff::tz::TimeZone;
use serde::Serialize;

use super::{Outcome, emit, exit_code};
use crate::config::Config;
use crate::llm::{Role, ToolCall};
use crate::store::{SearchScope, SessionSummary, Store, StoredMessage, search_terms};

/// Tool results longer than this are cut in `show` (`export` has them whole).
const TOOL_RESULT_CHARS: usize = 500;

#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// List sessions, most recently active first.
    List {
        /// How many sessions to list.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Skip this many of the most recent sessions first.
        #[arg(long, default_value_t = 0)]
        offset: usize,
    },
    /// Show every message of one session (tool results shortened).
    Show {
        /// The session id, as `hermes sessions list` shows it.
        id: i64,
    },
    /// Search the user and assistant messages of every session, newest sessions first.
    Search {
        /// Words to look for (all of them; if no message has all, any); "a quoted phrase"
        /// matches as written.
        #[arg(required = true, num_args = 1..)]
        query: Vec<String>,
        /// How many sessions to show.
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Print every message of a session as JSON lines on standard output: id, role, content,
    /// tool_calls, tool_call_id, tool_name, created_at (milliseconds since the Unix epoch).
    Export {
        /// The session id, as `hermes sessions list` shows it.
        id: i64,
    },
}

pub(super) async fn sessions(config: Config, action: SessionsAction) -> ExitCode {
    let store = match super::open_store(&config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hermes: {e}");
            return ExitCode::FAILURE;
        }
    };
    let tz = config
        .agent
        .timezone
        .as_deref()
        .and_then(|tz| TimeZone::get(tz).ok())
        .unwrap_or_else(TimeZone::system);
    let result = match action {
        SessionsAction::List { limit, offset } => list(&store, limit, offset, &tz).await,
        SessionsAction::Show { id } => show(&store, id, &tz).await,
        SessionsAction::Search { query, limit } => {
            search(&store, &query.join(" "), limit, &tz).await
        }
        SessionsAction::Export { id } => export(&store, id).await,
    };
    exit_code(result)
}

fn date(ms: i64, tz: &TimeZone) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| {
            t.to_zoned_datetime(tz.clone())
                .strftime("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|_| "?".into())
}

fn unknown(id: i64) -> String {
    format!("there is no session {id}; `hermes sessions list` shows the ids")
}

async fn list(store: &Store, limit: usize, offset: usize, tz: &TimeZone) -> Outcome {
    let sessions = store
        .sessions_list(limit, offset)
        .await
        .map_err(|e| e.to_string())?;
    if sessions.is_empty() {
        return emit("No sessions.\n");
    }
    emit(&list_table(&sessions, tz))
}

fn list_table(sessions: &[SessionSummary], tz: &TimeZone) -> String {
    let mut out = format!(
        "{:>6}  {:<16}  {:<16}  {:>6}  {:<16}  KEY\n",
        "ID", "STARTED", "LAST ACTIVE", "MSGS", "ENDED"
    );
    for s in sessions {
        let ended = s.ended_at.map_or("active".into(), |t| date(t, tz));
        out.push_str(&format!(
            "{:>6}  {:<16}  {:<16}  {:>6}  {:<16}  {}\n",
            s.id,
            date(s.created_at, tz),
            date(s.updated_at, tz),
            s.messages,
            ended,
            s.key
        ));
    }
    out
}

async fn show(store: &Store, id: i64, tz: &TimeZone) -> Outcome {
    let summary = store
        .session_summary(id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| unknown(id))?;
    let messages = store
        .session_messages(id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| unknown(id))?;
    let mut out = format!(
        "Session {id} ({}), started {}, {} messages{}\n\n",
        summary.key,
        date(summary.created_at, tz),
        summary.messages,
        summary
            .ended_at
            .map_or(String::new(), |t| format!(", ended {}", date(t, tz)))
    );
    for m in &messages {
        out.push_str(&show_line(m, tz));
    }
    emit(&out)
}

fn show_line(m: &StoredMessage, tz: &TimeZone) -> String {
    let msg = &m.message;
    let head = format!(
        "[#{}] {} {}",
        m.id,
        date(m.created_at, tz),
        msg.role.as_str()
    );
    let mut out = String::new();
    match msg.role {
        Role::Tool => {
            let chars = msg.content.chars().count();
            let mut text: String = msg.content.chars().take(TOOL_RESULT_CHARS).collect();
            if chars > TOOL_RESULT_CHARS {
                text.push_str(&format!("… ({chars} characters; `export` has all)"));
            }
            let name = msg.tool_name.as_deref().unwrap_or("?");
            out.push_str(&format!("{head} {name}: {text}\n"));
        }
        _ => {
            if !msg.content.is_empty() || msg.tool_calls.is_empty() {
                out.push_str(&format!("{head}: {}\n", msg.content));
            }
            for call in &msg.tool_calls {
                out.push_str(&format!("{head} calls {}({})\n", call.name, call.arguments));
            }
        }
    }
    out
}

async fn search(store: &Store, query: &str, limit: usize, tz: &TimeZone) -> Outcome {
    let terms = search_terms(query);
    if terms.is_empty() {
        return Err(format!("`{query}` has no words to search for"));
    }
    let found = store
        .search_messages(query, SearchScope::All, limit, 5)
        .await
        .map_err(|e| e.to_string())?;
    if found.is_empty() {
        return emit("No session matches.\n");
    }
    let mut out = String::from("Newest sessions first; * marks a match.\n");
    out.push_str(&crate::tools::render_hits(
        &found,
        &terms,
        tz,
        None,
        usize::MAX,
    ));
    out.push_str("\n`hermes sessions show <id>` shows a whole session.\n");
    emit(&out)
}

/// One exported message; every line has every key, `null` or `[]` when unused.
#[derive(Serialize)]
struct ExportLine<'a> {
    id: i64,
    role: &'static str,
    content: &'a str,
    tool_calls: &'a [ToolCall],
    tool_call_id: Option<&'a str>,
    tool_name: Option<&'a str>,
    created_at: i64,
}

fn export_line(m: &StoredMessage) -> String {
    let line = ExportLine {
        id: m.id,
        role: m.message.role.as_str(),
        content: &m.message.content,
        tool_calls: &m.message.tool_calls,
        tool_call_id: m.message.tool_call_id.as_deref(),
        tool_name: m.message.tool_name.as_deref(),
        created_at: m.created_at,
    };
    // Serializing strings, numbers and a list of plain structs cannot fail.
    serde_json::to_string(&line).unwrap_or_default()
}

async fn export(store: &Store, id: i64) -> Outcome {
    let messages = store
        .session_messages(id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| unknown(id))?;
    let mut out = String::new();
    for m in &messages {
        out.push_str(&export_line(m));
        out.push('\n');
    }
    emit(&out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ChatMessage;

    #[test]
    fn export_lines_carry_every_field() {
        let call = ToolCall {
            id: "c1".into(),
            name: "current_time".into(),
            arguments: "{}".into(),
        };
        let mut asked = ChatMessage::assistant("");
        asked.tool_calls = vec![call.clone()];
        let line = |id, message| {
            export_line(&StoredMessage {
                id,
                message,
                created_at: 1_700_000_000_000,
            })
        };
        assert_eq!(
            line(1, ChatMessage::user("hi \"there\"\n")),
            r#"{"id":1,"role":"user","content":"hi \"there\"\n","tool_calls":[],"tool_call_id":null,"tool_name":null,"created_at":1700000000000}"#
        );
        assert_eq!(
            line(2, asked),
            r#"{"id":2,"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"current_time","arguments":"{}"}],"tool_call_id":null,"tool_name":null,"created_at":1700000000000}"#
        );
        assert_eq!(
            line(3, ChatMessage::tool_result(&call, "12:00")),
            r#"{"id":3,"role":"tool","content":"12:00","tool_calls":[],"tool_call_id":"c1","tool_name":"current_time","created_at":1700000000000}"#
        );
    }

    #[test]
    fn show_cuts_tool_results_and_lists_calls() {
        let call = ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
        };
        let mut asked = ChatMessage::assistant("");
        asked.tool_calls = vec![call.clone()];
        let tz = TimeZone::UTC;
        let at = |id, message| StoredMessage {
            id,
            message,
            created_at: 0,
        };
        assert_eq!(
            show_line(&at(1, asked), &tz),
            "[#1] 1970-01-01 00:00 assistant calls read_file({\"path\":\"a\"})\n"
        );
        let out = show_line(
            &at(2, ChatMessage::tool_result(&call, "x".repeat(600))),
            &tz,
        );
        assert!(
            out.ends_with("… (600 characters; `export` has all)\n"),
            "{out}"
        );
        assert!(
            out.starts_with("[#2] 1970-01-01 00:00 tool read_file: xxx"),
            "{out}"
        );
    }
}
