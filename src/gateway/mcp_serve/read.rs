//! The reading tools: `conversations_list`, `conversation_read`, `messages_search` and
//! `approvals_list`. Everything out of the client's reach looks like it does not exist.

use hermes_adapter::{Platform, SessionScope};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Service, answer, refuse, store_failed, time};
use crate::conversation::Role;
use crate::store::{SearchScope, SessionSummary};

/// Sessions read at most per `conversations_list` call while filtering (by platform, reach).
const SCAN: usize = 5_000;

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct ListArgs {
    /// How many conversations (1-100, default 20), most recently active first.
    limit: Option<usize>,
    /// Skip this many (the `next_offset` of the previous page).
    offset: Option<usize>,
    /// Only this platform's: telegram, discord, slack, email or matrix.
    platform: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct ReadArgs {
    /// The conversation's `id` from `conversations_list` or `messages_search`.
    conversation_id: i64,
    /// How many messages (1-200, default 50): the latest, or those after `after_message_id`.
    limit: Option<usize>,
    /// Read on after this message id (oldest first from there).
    after_message_id: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct SearchArgs {
    /// Words or a phrase; every word must match, else any may.
    query: String,
    /// How many conversations (1-20, default 5), newest first.
    limit: Option<usize>,
    /// Messages shown before and after each match (0-5, default 2).
    context: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct NoArgs {}

/// A conversation as the tools show it.
fn conversation(s: &SessionSummary, chat: Option<&hermes_adapter::ChatId>) -> Value {
    let (kind, thread) = match &s.key.scope {
        SessionScope::Direct { topic, .. } => {
            ("direct", topic.as_ref().map(|t| t.as_str().to_owned()))
        }
        SessionScope::Group { thread, user, .. } => (
            match (thread, user) {
                (Some(_), _) => "thread",
                (None, None) => "group",
                (None, Some(_)) => "group (one person)",
            },
            thread.as_ref().map(|t| t.as_str().to_owned()),
        ),
    };
    let person = match &s.key.scope {
        SessionScope::Direct { user, .. }
        | SessionScope::Group {
            user: Some(user), ..
        } => Some(user.as_str().to_owned()),
        SessionScope::Group { user: None, .. } => None,
    };
    json!({
        "id": s.id,
        "key": s.key.to_string(),
        "platform": s.key.platform.as_str(),
        "chat": chat.map(|c| c.as_str()),
        "thread": thread,
        "kind": kind,
        "person": person,
        "active": s.ended_at.is_none(),
        "messages": s.messages,
        "started": time(s.created_at),
        "last_activity": time(s.updated_at),
    })
}

/// The chat of a listed session: its stored one, or a group's from its key.
fn chat_in(s: &SessionSummary) -> Option<hermes_adapter::ChatId> {
    match &s.key.scope {
        SessionScope::Group { chat, .. } => Some(chat.clone()),
        SessionScope::Direct { .. } => s.chat.clone(),
    }
}

fn role(r: Role) -> &'static str {
    match r {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
        Role::Tool => "tool",
    }
}

#[tool_router(router = read_tools, vis = "pub(super)")]
impl Service {
    /// The conversations hermes holds, most recently active first.
    #[tool(
        description = "List the conversations hermes holds on its platforms (Telegram, Discord, Slack, email, Matrix), most recently active first: id, platform, chat, kind (direct, group, thread), the person, message count, last activity. Page with offset.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn conversations_list(
        &self,
        Parameters(args): Parameters<ListArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let limit = args.limit.unwrap_or(20).clamp(1, 100);
        let platform = match args.platform.as_deref().map(str::parse::<Platform>) {
            Some(Ok(p)) => Some(p),
            Some(Err(e)) => return refuse(e.to_string()),
            None => None,
        };
        let mut offset = args.offset.unwrap_or(0);
        let mut out = Vec::new();
        let mut scanned = 0;
        let more = loop {
            let page = match self.shared.store.sessions_list(100, offset).await {
                Ok(p) => p,
                Err(e) => return store_failed(e),
            };
            let full = page.len() == 100;
            for s in page {
                offset += 1;
                scanned += 1;
                let chat = chat_in(&s);
                if platform.is_none_or(|p| p == s.key.platform)
                    && self.reaches(s.key.platform, chat.as_ref())
                {
                    out.push(conversation(&s, chat.as_ref()));
                    if out.len() == limit {
                        break;
                    }
                }
            }
            if out.len() == limit || !full || scanned >= SCAN {
                break full || out.len() == limit;
            }
        };
        answer(json!({
            "conversations": out,
            "next_offset": more.then_some(offset),
        }))
    }

    /// One conversation's messages.
    #[tool(
        description = "Read one conversation: what the people said and what hermes answered (tool calls left out), oldest first. Without after_message_id: the latest messages; with it: the ones after that message.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn conversation_read(
        &self,
        Parameters(args): Parameters<ReadArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let limit = args.limit.unwrap_or(50).clamp(1, 200);
        let store = &self.shared.store;
        let unknown = || refuse(format!("there is no conversation {}", args.conversation_id));
        let summary = match store.session_summary(args.conversation_id).await {
            Ok(Some(s)) => s,
            Ok(None) => return unknown(),
            Err(e) => return store_failed(e),
        };
        let chat = chat_in(&summary);
        if !self.reaches(summary.key.platform, chat.as_ref()) {
            return unknown();
        }
        let messages: Vec<Value> = match args.after_message_id {
            Some(after) => match store.messages_after(summary.id, after, limit).await {
                Ok(found) => found
                    .iter()
                    .map(|m| json!({"id": m.id, "role": role(m.role), "text": m.content, "at": time(m.created_at)}))
                    .collect(),
                Err(e) => return store_failed(e),
            },
            None => match store.history(summary.id, limit * 4).await {
                Ok(all) => {
                    let visible: Vec<Value> = all
                        .iter()
                        .filter(|m| {
                            matches!(m.message.role, Role::User | Role::Assistant)
                                && !m.message.content.trim().is_empty()
                        })
                        .map(|m| json!({"id": m.id, "role": role(m.message.role), "text": m.message.content, "at": time(m.created_at)}))
                        .collect();
                    let skip = visible.len().saturating_sub(limit);
                    visible.into_iter().skip(skip).collect()
                }
                Err(e) => return store_failed(e),
            },
        };
        answer(json!({
            "conversation": conversation(&summary, chat.as_ref()),
            "messages": messages,
        }))
    }

    /// Search what was said.
    #[tool(
        description = "Search every conversation hermes holds for words or a phrase (any language). Returns the conversations where it was said, newest first, with the matching messages (hit: true) and the messages around them.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn messages_search(
        &self,
        Parameters(args): Parameters<SearchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        if args.query.trim().is_empty() {
            return refuse("the query is empty");
        }
        let limit = args.limit.unwrap_or(5).clamp(1, 20);
        let context = args.context.unwrap_or(2).min(5);
        // Sessions out of reach are dropped after the search; ask for more to fill the page.
        let found = match self
            .shared
            .store
            .search_messages(&args.query, SearchScope::All, limit * 4, context)
            .await
        {
            Ok(f) => f,
            Err(e) => return store_failed(e),
        };
        let mut out = Vec::new();
        for hits in found {
            let chat = self.chat_of(&hits.session.key).await;
            if !self.reaches(hits.session.key.platform, chat.as_ref()) {
                continue;
            }
            let excerpts: Vec<Vec<Value>> = hits
                .excerpts
                .iter()
                .map(|run| {
                    run.iter()
                        .map(|m| json!({"id": m.id, "role": role(m.role), "text": m.content, "at": time(m.created_at), "hit": m.hit}))
                        .collect()
                })
                .collect();
            out.push(json!({
                "conversation_id": hits.session.id,
                "key": hits.session.key.to_string(),
                "platform": hits.session.key.platform.as_str(),
                "chat": chat.as_ref().map(|c| c.as_str()),
                "excerpts": excerpts,
            }));
            if out.len() == limit {
                break;
            }
        }
        answer(json!({ "results": out }))
    }

    /// Confirmations waiting for an answer.
    #[tool(
        description = "The tool calls waiting for a person's confirmation right now: id, tool, what it would do, the conversation, who asked, how long it has waited. Answer one with approval_answer (when this hermes allows acting).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn approvals_list(
        &self,
        Parameters(_): Parameters<NoArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let now = hermes_adapter::now_millis();
        let mut out = Vec::new();
        for p in self.shared.approvals.all() {
            let chat = self.chat_of(&p.session).await;
            if !self.reaches(p.session.platform, chat.as_ref()) {
                continue;
            }
            out.push(json!({
                "id": p.id,
                "tool": p.subject,
                "detail": hermes_adapter::scrub(&p.detail),
                "conversation": p.session.to_string(),
                "platform": p.session.platform.as_str(),
                "chat": chat.as_ref().map(|c| c.as_str()),
                "requester": p.requester.as_str(),
                "waiting_secs": (now - p.opened_at).max(0) / 1000,
            }));
        }
        answer(json!({ "approvals": out }))
    }
}
