//! Context compression: when a prompt would fill too much of the model's window, the middle of
//! the session is summarised by the auxiliary model; the first messages and the most recent ones
//! stay verbatim. The summary is stored with the session, so later turns (and restarts) build
//! their prompt from head + summary + tail. A tool call is never separated from its result.

use serde::{Deserialize, Serialize};

use super::Agent;
use crate::llm::{ChatMessage, ChatRequest, Role, ToolSchema, complete_with_retry};
use crate::store::{StoreError, StoredMessage};

const SUMMARY: &str = "summary";
/// Characters of one message given to the summariser.
const MAX_MESSAGE_CHARS: usize = 1500;

/// A stored summary of a session's middle.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Summary {
    /// Last message id of the verbatim head.
    head_end: i64,
    /// Last message id the summary covers.
    upto: i64,
    text: String,
}

/// What a compression did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compressed {
    pub messages: usize,
}

/// Rough token count of a prompt: characters / 4, plus a little per message.
pub fn estimate_tokens(messages: &[ChatMessage], tools: &[ToolSchema]) -> u64 {
    let text: usize = messages
        .iter()
        .map(|m| {
            m.content.len()
                + m.tool_calls
                    .iter()
                    .map(|c| c.arguments.len() + c.name.len())
                    .sum::<usize>()
                + 16
        })
        .sum();
    let schemas: usize = tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
        .sum();
    ((text + schemas) / 4) as u64
}

/// Index where a verbatim tail may start at or before `at`: never on a tool result, so each
/// result keeps the assistant message that called it.
fn tail_start(messages: &[StoredMessage], mut at: usize) -> usize {
    while at > 0 && messages[at].message.role == Role::Tool {
        at -= 1;
    }
    at
}

/// Length of the head: `keep` messages, extended so that it does not end inside a tool round.
fn head_len(messages: &[StoredMessage], keep: usize) -> usize {
    let mut n = keep.min(messages.len());
    while n < messages.len()
        && (messages[n].message.role == Role::Tool
            || n > 0
                && messages[n - 1].message.role == Role::Assistant
                && !messages[n - 1].message.tool_calls.is_empty())
    {
        n += 1;
    }
    n
}

/// A conversation as plain text for a summariser or a reviewer, each message cut to a length.
pub(crate) fn transcript(messages: &[ChatMessage]) -> String {
    let cut = |s: &str| -> String {
        if s.chars().count() > MAX_MESSAGE_CHARS {
            format!("{}…", s.chars().take(MAX_MESSAGE_CHARS).collect::<String>())
        } else {
            s.to_owned()
        }
    };
    let mut out = String::new();
    for m in messages {
        match m.role {
            Role::User => out.push_str(&format!("USER: {}\n", cut(&m.content))),
            Role::Assistant => {
                if !m.content.trim().is_empty() {
                    out.push_str(&format!("ASSISTANT: {}\n", cut(&m.content)));
                }
                for c in &m.tool_calls {
                    out.push_str(&format!(
                        "ASSISTANT called {}({})\n",
                        c.name,
                        cut(&c.arguments)
                    ));
                }
            }
            Role::Tool => out.push_str(&format!(
                "RESULT of {}: {}\n",
                m.tool_name.as_deref().unwrap_or("tool"),
                cut(&m.content)
            )),
            Role::System => {}
        }
    }
    out
}

const INSTRUCTIONS: &str = "You compress conversation history. Summarise the conversation segment below for an \
assistant who will continue the conversation without seeing it: the user's goals, facts and preferences they \
stated, decisions made, work done (tools used and their key results: file paths, numbers, commands, errors), \
and open questions or next steps. Short bullet points, at most 400 words. Never invent anything.";

impl Agent {
    async fn summary(&self, session_id: i64) -> Result<Option<Summary>, StoreError> {
        Ok(self
            .store
            .setting(&format!("sid:{session_id}"), SUMMARY)
            .await?
            .and_then(|v| serde_json::from_str(&v).ok()))
    }

    /// The conversation of a session as the model sees it: the verbatim head, the summary of
    /// the middle (once there is one), and the most recent messages.
    pub(crate) async fn conversation(
        &self,
        session_id: i64,
    ) -> Result<Vec<ChatMessage>, StoreError> {
        let limit = self.config.agent.history_messages;
        let Some(summary) = self.summary(session_id).await? else {
            let stored = self.store.history(session_id, limit).await?;
            return Ok(stored.into_iter().map(|m| m.message).collect());
        };
        let head = self
            .store
            .history_between(session_id, 0, summary.head_end)
            .await?;
        let tail = self
            .store
            .history_after(session_id, summary.upto, limit)
            .await?;
        let mut out: Vec<ChatMessage> = head.into_iter().map(|m| m.message).collect();
        out.push(ChatMessage::user(format!(
            "[Summary of the earlier part of this conversation, written when it grew long]\n{}",
            summary.text
        )));
        out.extend(tail.into_iter().map(|m| m.message));
        Ok(out)
    }

    /// Whether a prompt is over the compression threshold.
    pub(crate) fn needs_compression(&self, messages: &[ChatMessage], tools: &[ToolSchema]) -> bool {
        let budget =
            self.config.llm.context_window as f64 * self.config.agent.compression_threshold;
        estimate_tokens(messages, tools) as f64 > budget
    }

    /// Summarise the middle of a session (everything between the head and the last messages not
    /// yet summarised). `None` when there is nothing to compress.
    pub async fn compress(&self, session_id: i64) -> Result<Option<Compressed>, StoreError> {
        let cfg = &self.config.agent;
        let prior = self.summary(session_id).await?;
        let (head_end, after) = match &prior {
            Some(p) => (p.head_end, p.upto),
            None => {
                let head = self
                    .store
                    .history_head(session_id, cfg.compression_keep_first + 16)
                    .await?;
                let n = head_len(&head, cfg.compression_keep_first);
                let end = if n == 0 { 0 } else { head[n - 1].id };
                (end, end)
            }
        };
        let rest = self
            .store
            .history_after(session_id, after, usize::MAX >> 1)
            .await?;
        if rest.len() <= cfg.compression_keep_last {
            return Ok(None);
        }
        let start = tail_start(&rest, rest.len() - cfg.compression_keep_last);
        let middle = &rest[..start];
        if middle.is_empty() {
            return Ok(None);
        }
        let mut input = String::new();
        if let Some(p) = &prior {
            input.push_str("Summary of what came before:\n");
            input.push_str(&p.text);
            input.push_str("\n\nThen:\n");
        }
        let middle_messages: Vec<ChatMessage> = middle.iter().map(|m| m.message.clone()).collect();
        input.push_str(&transcript(&middle_messages));
        let request = ChatRequest {
            model: self
                .config
                .llm
                .auxiliary_model
                .clone()
                .unwrap_or_else(|| self.config.llm.model.clone()),
            messages: vec![ChatMessage::system(INSTRUCTIONS), ChatMessage::user(input)],
            tools: Vec::new(),
            max_output_tokens: Some(1024),
        };
        let text = match complete_with_retry(self.provider.as_ref(), &request, self.retry).await {
            Ok(r) if !r.content.trim().is_empty() => r.content,
            Ok(_) => {
                tracing::warn!(
                    session_id,
                    "the summariser returned nothing; history not compressed"
                );
                return Ok(None);
            }
            Err(e) => {
                tracing::warn!(session_id, error = %e, "cannot summarise the history; not compressed");
                return Ok(None);
            }
        };
        let summary = Summary {
            head_end,
            upto: middle[middle.len() - 1].id,
            text,
        };
        let json =
            serde_json::to_string(&summary).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.store
            .set_setting(&format!("sid:{session_id}"), SUMMARY, &json)
            .await?;
        tracing::info!(session_id, messages = middle.len(), "history compressed");
        Ok(Some(Compressed {
            messages: middle.len(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn stored(id: i64, m: ChatMessage) -> StoredMessage {
        StoredMessage {
            id,
            message: m,
            created_at: 0,
        }
    }

    fn asking(id: &str) -> ChatMessage {
        let mut m = ChatMessage::assistant("");
        m.tool_calls = vec![ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: "{}".into(),
        }];
        m
    }

    #[test]
    fn an_empty_head_is_allowed() {
        let msgs = vec![
            stored(1, ChatMessage::user("a")),
            stored(2, ChatMessage::assistant("b")),
        ];
        assert_eq!(head_len(&msgs, 0), 0);
        assert_eq!(head_len(&[], 0), 0);
    }

    fn result(id: &str) -> ChatMessage {
        ChatMessage::tool_result(
            &ToolCall {
                id: id.into(),
                name: "t".into(),
                arguments: "{}".into(),
            },
            "r",
        )
    }

    #[test]
    fn boundaries_never_split_a_tool_round() {
        let msgs = vec![
            stored(1, ChatMessage::user("a")),
            stored(2, asking("x")),
            stored(3, result("x")),
            stored(4, result("x")),
            stored(5, ChatMessage::assistant("done")),
            stored(6, ChatMessage::user("b")),
        ];
        assert_eq!(
            head_len(&msgs, 2),
            4,
            "the head takes the results of its call"
        );
        assert_eq!(head_len(&msgs, 1), 1);
        assert_eq!(
            tail_start(&msgs, 3),
            1,
            "the tail starts at the call, not its result"
        );
        assert_eq!(tail_start(&msgs, 5), 5);
    }

    #[test]
    fn transcript_shows_calls_and_cuts_long_texts() {
        let long = "x".repeat(2000);
        let t = transcript(&[ChatMessage::user(long), asking("c"), result("c")]);
        assert!(t.starts_with(&format!("USER: {}…\n", "x".repeat(MAX_MESSAGE_CHARS))));
        assert!(t.contains("ASSISTANT called t({})\nRESULT of t: r\n"));
    }
}
