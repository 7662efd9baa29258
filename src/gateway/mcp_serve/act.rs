//! The acting tools, offered only with `mcp.serve.allow_send`: `message_send` (to a chat within
//! reach, through the outbox, once per idempotency key) and `approval_answer`.

use std::time::Duration;

use hermes_adapter::{Platform, ThreadId};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{Service, answer, refuse, store_failed};
use crate::gateway::outbound::replies::to_chat;
use crate::policy::Answer;

/// Longest message a client may send (it is chunked to the platform's limit).
const MAX_TEXT_CHARS: usize = 20_000;
/// Longest idempotency key.
const MAX_KEY_CHARS: usize = 200;
/// How long `message_send` waits to report the platform's message id.
const SENT_WAIT: Duration = Duration::from_secs(10);
/// Where the keys used so far are remembered, with what each sent.
const KEYS_SCOPE: &str = "mcp-send";

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct SendArgs {
    /// telegram, discord, slack, email or matrix.
    platform: String,
    /// The chat's id, as `conversations_list` shows it.
    chat: String,
    /// The message (markdown; long ones are split to the platform's limit).
    text: String,
    /// Unique per message you mean to send: a repeated call with the same key sends nothing
    /// again and reports the first one.
    idempotency_key: String,
    /// Post in this thread of the chat.
    thread: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct AnswerArgs {
    /// The confirmation's id from `approvals_list`.
    id: String,
    /// once (run this call), session (and this tool for the rest of the conversation), always
    /// (and this tool from now on), or deny.
    answer: String,
}

#[tool_router(router = act_tools, vis = "pub(super)")]
impl Service {
    /// Send a message to a chat.
    #[tool(
        description = "Send a message to a chat hermes is in (platform + chat id from conversations_list), through hermes' outbox: it is delivered even across a restart, and exactly once per idempotency_key (repeat a call with the same key safely).",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = true
        )
    )]
    async fn message_send(
        &self,
        Parameters(args): Parameters<SendArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let platform: Platform = match args.platform.trim().parse() {
            Ok(p) => p,
            Err(e) => return refuse(e.to_string()),
        };
        let key = args.idempotency_key.trim();
        if key.is_empty() || key.chars().count() > MAX_KEY_CHARS {
            return refuse(format!(
                "idempotency_key must be 1-{MAX_KEY_CHARS} characters"
            ));
        }
        if args.text.trim().is_empty() {
            return refuse("the text is empty");
        }
        if args.text.chars().count() > MAX_TEXT_CHARS {
            return refuse(format!(
                "the text is longer than {MAX_TEXT_CHARS} characters; send it in parts"
            ));
        }
        let chat: hermes_adapter::ChatId = args.chat.trim().into();
        let listed = self.shared.config().mcp.serve.lists(platform, &chat);
        let reachable = match listed {
            Some(listed) => listed,
            None => match self.shared.store.chat_has_session(platform, &chat).await {
                Ok(known) => known,
                Err(e) => return store_failed(e),
            },
        };
        if !reachable {
            return refuse(format!(
                "{platform} chat {chat} is out of reach: hermes holds no conversation there{}",
                if listed.is_some() {
                    " listed in mcp.serve.chats"
                } else {
                    ""
                }
            ));
        }
        if self.shared.adapter(platform).is_none() {
            return refuse(format!("no {platform} adapter is running in this hermes"));
        }
        let thread = args.thread.as_deref().map(|t| ThreadId::from(t.trim()));
        // What the key is for: a repeat must be the same message to the same chat.
        let fingerprint = {
            let mut h = Sha256::new();
            for part in [
                platform.as_str(),
                chat.as_str(),
                thread.as_ref().map_or("", |t| t.as_str()),
                args.text.as_str(),
            ] {
                h.update(part.len().to_le_bytes());
                h.update(part.as_bytes());
            }
            hex(&h.finalize())
        };
        let store = &self.shared.store;
        let repeat = match store.setting(KEYS_SCOPE, key).await {
            Ok(Some(earlier)) if earlier != fingerprint => {
                return refuse(format!(
                    "idempotency_key `{key}` was used for another message; use a new key for a new message"
                ));
            }
            Ok(earlier) => earlier.is_some(),
            Err(e) => return store_failed(e),
        };
        let rows = to_chat(
            &self.shared,
            platform,
            &chat,
            thread.as_ref(),
            &args.text,
            &format!("mcp:{key}"),
        );
        let keys: Vec<String> = rows
            .iter()
            .map(|(_, o)| o.idempotency_key.clone())
            .collect();
        if !repeat && let Err(e) = store.set_setting(KEYS_SCOPE, key, &fingerprint).await {
            return store_failed(e);
        }
        // Rows already queued under these keys are kept as they are (the outbox's keys are
        // unique), so a repeat never sends twice.
        if let Err(e) = store.outbox_enqueue(rows).await {
            return store_failed(e);
        }
        self.shared.outbox_signal.notify_one();
        tracing::info!(%platform, chat = %chat, key, repeat, parts = keys.len(), "MCP client sent a message");
        let mut sent = Vec::new();
        let deadline = tokio::time::Instant::now() + SENT_WAIT;
        for k in &keys {
            loop {
                match store.outbox_sent_id(k).await {
                    Ok(Some(id)) => {
                        sent.push(id);
                        break;
                    }
                    Ok(None) if tokio::time::Instant::now() < deadline => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    Ok(None) => break,
                    Err(e) => return store_failed(e),
                }
            }
        }
        let status = if sent.len() == keys.len() {
            "sent"
        } else {
            "queued"
        };
        answer(json!({
            "status": status,
            "repeat": repeat,
            "parts": keys.len(),
            "message_ids": sent,
            "note": if status == "queued" {
                "not confirmed by the platform yet; the outbox keeps trying"
            } else {
                ""
            },
        }))
    }

    /// Answer a confirmation.
    #[tool(
        description = "Answer a tool call waiting for confirmation (id from approvals_list): once runs this call, session allows the tool for the rest of that conversation, always allows it from now on, deny refuses. The person who was asked sees the answer.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            open_world_hint = false
        )
    )]
    async fn approval_answer(
        &self,
        Parameters(args): Parameters<AnswerArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let given = match args.answer.trim().to_ascii_lowercase().as_str() {
            "once" | "allow" | "yes" => Answer::Once,
            "session" => Answer::Session,
            "always" => Answer::Always,
            "deny" | "no" => Answer::Deny,
            other => {
                return refuse(format!(
                    "`{other}` is not an answer: once, session, always or deny"
                ));
            }
        };
        let id = args.id.trim();
        let unknown = || {
            refuse(format!(
                "no confirmation {id} is waiting (answered, timed out, or out of reach)"
            ))
        };
        let Some(pending) = self.shared.approvals.all().into_iter().find(|p| p.id == id) else {
            return unknown();
        };
        let chat = self.chat_of(&pending.session).await;
        if !self.reaches(pending.session.platform, chat.as_ref()) {
            return unknown();
        }
        match self
            .shared
            .approvals
            .resolve_as_operator(id, |p| p.session == pending.session, given)
        {
            Ok(resolved) => {
                tracing::info!(approval = %id, tool = %resolved.subject, answer = ?given, "confirmation answered by an MCP client");
                answer(json!({"id": id, "tool": resolved.subject, "answer": args.answer.trim()}))
            }
            Err(_) => unknown(),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
