//! `session_search`: find earlier conversations with the same user (or in the same shared chat)
//! by what was said in them, and read on from a result. Plain full-text search, no model call.
//!
//! The scope is always the calling session's owner (`SessionKey::owner`), so nothing the model
//! asks for can reach another person's or another chat's history; a message id from elsewhere
//! reads as unknown.

use std::time::Duration;

use async_trait::async_trait;
use jiff::tz::TimeZone;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};
use crate::store::{FoundMessage, SearchScope, SessionHits, SessionRow, Store, search_terms};

/// Messages shown around each match.
const CONTEXT: usize = 5;
const DEFAULT_SESSIONS: usize = 5;
const MAX_SESSIONS: usize = 10;
const DEFAULT_READ: usize = 20;
const MAX_READ: usize = 50;
/// Characters of one message shown; longer ones are cut (around the match for a hit).
const MESSAGE_CHARS: usize = 500;
/// Sessions stop being added to the output past this many characters.
const OUTPUT_BUDGET: usize = 16_000;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Words to look for, e.g. "flight Lisbon". Every word must appear in a message; if no
    /// message has them all, any of them may. "A quoted phrase" must appear as written.
    /// Chinese, Japanese and Korean work too.
    #[serde(default)]
    query: Option<String>,
    /// Instead of searching: a message id from an earlier result (the number after `#`); returns
    /// the messages that follow it in that conversation.
    #[serde(default)]
    read_from: Option<i64>,
    /// With `query`: conversations to return (default 5, at most 10). With `read_from`:
    /// messages to return (default 20, at most 50).
    #[serde(default)]
    limit: Option<usize>,
}

/// Full-text search over the caller's earlier conversations.
pub struct SessionSearch {
    spec: ToolSpec,
    store: Store,
}

impl SessionSearch {
    pub fn new(store: Store) -> Self {
        SessionSearch {
            store,
            spec: ToolSpec {
                name: "session_search",
                description: "Search earlier conversations with this user (in a shared group \
                    chat: that chat's) for what was said, when the user refers to something from \
                    before that is not in the current context (\"the book you recommended last \
                    month\"). Returns matching messages with the messages around them, newest \
                    conversations first. Only user and assistant messages are searched, not tool \
                    output. To see more of a conversation, call again with `read_from` set to a \
                    message id from the result.",
                category: Category::Read,
                parallel_safe: true,
                parameters: schema_of::<Args>(),
                timeout: Duration::from_secs(15),
                max_output_chars: OUTPUT_BUDGET + 4_000,
            },
        }
    }

    async fn search(
        &self,
        query: &str,
        limit: usize,
        ctx: &ToolContext,
    ) -> Result<String, ToolError> {
        let terms = search_terms(query);
        if terms.is_empty() {
            return Err(ToolError::InvalidArguments(
                "`query` has no words to search for; give words or a \"quoted phrase\"".into(),
            ));
        }
        let scope = SearchScope::Owner(ctx.session.owner());
        let found = self
            .store
            .search_messages(query, scope, limit, CONTEXT)
            .await
            .map_err(failed)?;
        if found.is_empty() {
            return Ok(format!(
                "No earlier conversation mentions {}. Try other or fewer words, or the words \
                 in the language the conversation was in.",
                quoted(&terms)
            ));
        }
        let current = self
            .store
            .session_current(&ctx.session)
            .await
            .map_err(failed)?;
        let mut out = format!(
            "Conversations matching {}, newest first (* marks a match):\n",
            quoted(&terms)
        );
        out.push_str(&render_hits(
            &found,
            &terms,
            &ctx.timezone,
            current.map(|s| s.id),
            OUTPUT_BUDGET,
        ));
        out.push_str(
            "\nTo read on in a conversation, call session_search with {\"read_from\": <message id>} \
             (e.g. the last id of an excerpt).",
        );
        Ok(out)
    }

    async fn read_on(
        &self,
        from: i64,
        limit: usize,
        ctx: &ToolContext,
    ) -> Result<String, ToolError> {
        let scope = SearchScope::Owner(ctx.session.owner());
        let session = self
            .store
            .session_of_message(from, scope)
            .await
            .map_err(failed)?
            .ok_or_else(|| {
                ToolError::InvalidArguments(format!(
                    "there is no message #{from} in this user's conversations; use an id shown \
                     in an earlier session_search result"
                ))
            })?;
        let mut messages = self
            .store
            .messages_after(session.id, from, limit + 1)
            .await
            .map_err(failed)?;
        let more = messages.len() > limit;
        messages.truncate(limit);
        let mut out = format!(
            "{}; messages after #{from}:\n",
            header(&session, &ctx.timezone, None)
        );
        for m in &messages {
            out.push_str(&line(m, &[]));
        }
        match messages.last() {
            Some(last) if more => out.push_str(&format!(
                "To read on, call session_search with {{\"read_from\": {}}}.",
                last.id
            )),
            _ => out.push_str("End of this conversation."),
        }
        Ok(out)
    }
}

#[async_trait]
impl Tool for SessionSearch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        match (args.query, args.read_from) {
            (Some(_), Some(_)) => Err(ToolError::InvalidArguments(
                "give either `query` (to search) or `read_from` (to read on), not both".into(),
            )),
            (Some(query), None) => {
                let limit = args
                    .limit
                    .unwrap_or(DEFAULT_SESSIONS)
                    .clamp(1, MAX_SESSIONS);
                self.search(&query, limit, ctx).await
            }
            (None, Some(from)) => {
                let limit = args.limit.unwrap_or(DEFAULT_READ).clamp(1, MAX_READ);
                self.read_on(from, limit, ctx).await
            }
            (None, None) => Err(ToolError::InvalidArguments(
                "give `query` (words to look for) or `read_from` (a message id from an earlier \
                 result)"
                    .into(),
            )),
        }
    }
}

fn failed(e: crate::store::StoreError) -> ToolError {
    ToolError::Failed(format!("the history cannot be searched right now: {e}"))
}

fn quoted(terms: &[String]) -> String {
    terms
        .iter()
        .map(|t| format!("\"{t}\""))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Search results as text: per session a header, then its excerpts as `[#id] role: text`
/// lines, `*` before a match, `…` between excerpts. Sessions past `budget` characters are left
/// out with a note. `current` is the caller's own session, labelled as such.
pub(crate) fn render_hits(
    found: &[SessionHits],
    terms: &[String],
    tz: &TimeZone,
    current: Option<i64>,
    budget: usize,
) -> String {
    let mut out = String::new();
    for (shown, s) in found.iter().enumerate() {
        if out.len() > budget {
            out.push_str(&format!(
                "\n({} more conversations matched; search with more specific words to see them.)\n",
                found.len() - shown
            ));
            break;
        }
        out.push('\n');
        out.push_str(&header(&s.session, tz, current));
        out.push('\n');
        for (i, excerpt) in s.excerpts.iter().enumerate() {
            if i > 0 {
                out.push_str("…\n");
            }
            for m in excerpt {
                out.push_str(&line(m, terms));
            }
        }
    }
    out
}

fn header(s: &SessionRow, tz: &TimeZone, current: Option<i64>) -> String {
    let date = jiff::Timestamp::from_millisecond(s.created_at)
        .map(|t| {
            t.to_zoned_datetime(tz.clone())
                .strftime("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|_| "unknown date".into());
    let this = if current == Some(s.id) {
        " (this conversation)"
    } else {
        ""
    };
    format!("Session {} ({}), started {date}{this}", s.id, s.key)
}

fn line(m: &FoundMessage, terms: &[String]) -> String {
    let text = clip(&m.content, if m.hit { terms } else { &[] }, MESSAGE_CHARS);
    let mark = if m.hit { "* " } else { "" };
    format!("{mark}[#{}] {}: {text}\n", m.id, m.role.as_str())
}

/// `text` on one line, at most `max` characters; when it must be cut and a term only appears
/// later, the part around the term's first appearance.
fn clip(text: &str, terms: &[String], max: usize) -> String {
    let chars: Vec<char> = text
        .split_whitespace()
        .flat_map(|w| w.chars().chain([' ']))
        .collect();
    let chars = &chars[..chars.len().saturating_sub(1)];
    if chars.len() <= max {
        return chars.iter().collect();
    }
    let lower: Vec<char> = chars.iter().map(|c| fold(*c)).collect();
    let at = terms
        .iter()
        .filter_map(|t| {
            let t: Vec<char> = t.chars().map(fold).collect();
            lower
                .windows(t.len().max(1))
                .position(|w| w == t.as_slice())
        })
        .min()
        .unwrap_or(0);
    let start = if at + 40 < max {
        0
    } else {
        at.saturating_sub(max / 3).min(chars.len() - max)
    };
    let end = (start + max).min(chars.len());
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(&chars[start..end]);
    if end < chars.len() {
        out.push('…');
    }
    out
}

fn fold(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

#[cfg(test)]
mod tests;
