//! Parsing an Anthropic Messages answer, and the pieces the streamed one shares: stop reasons,
//! usage with its cache fields, and the error types of `{"type":"error"}` bodies.

use serde::Deserialize;
use serde_json::Value;

use crate::llm::{ChatResponse, FinishReason, LlmError, ToolCall, Usage};

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    model: String,
    content: Vec<Block>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// Thinking, server tool results and whatever comes next: not part of the answer text.
    #[serde(other)]
    Other,
}

/// `usage` as the API reports it. Streamed answers report it in pieces (`message_start`, then
/// `message_delta`), so every field is optional and later values replace earlier ones.
#[derive(Deserialize, Default, Debug, Clone, Copy)]
pub(super) struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    pub(super) fn update(&mut self, later: WireUsage) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
    }
}

impl From<WireUsage> for Usage {
    /// Anthropic's `input_tokens` excludes cached tokens; ours includes them.
    fn from(u: WireUsage) -> Usage {
        let read = u.cache_read_input_tokens.unwrap_or(0);
        let written = u.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            prompt_tokens: u.input_tokens.unwrap_or(0) + read + written,
            completion_tokens: u.output_tokens.unwrap_or(0),
            cached_tokens: read,
            cache_write_tokens: written,
        }
    }
}

pub(super) fn stop_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        None | Some("end_turn") | Some("stop_sequence") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens") | Some("model_context_window_exceeded") => FinishReason::Length,
        Some("refusal") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

/// A `tool_use` input as our arguments text (compact JSON).
pub(super) fn arguments(input: &Value) -> String {
    input.to_string()
}

/// Parse a successful `POST /v1/messages` body.
pub(super) fn parse_message(body: &str) -> Result<ChatResponse, LlmError> {
    let m: Message = serde_json::from_str(body).map_err(|e| LlmError::Malformed(e.to_string()))?;
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    for block in m.content {
        match block {
            Block::Text { text } => content.push_str(&text),
            Block::ToolUse { id, name, input } => tool_calls.push(ToolCall {
                id,
                name,
                arguments: arguments(&input),
            }),
            Block::Other => {}
        }
    }
    Ok(ChatResponse {
        content,
        tool_calls,
        finish: stop_reason(m.stop_reason.as_deref()),
        usage: m.usage.into(),
        model: m.model,
    })
}

/// The error of an `{"type":"error","error":{"type","message"}}` body sent where an answer was
/// expected (a streamed `error` event), by its error type.
pub(super) fn error_event(data: &str) -> LlmError {
    let v: Value = serde_json::from_str(data).unwrap_or_default();
    let kind = v.pointer("/error/type").and_then(Value::as_str);
    let message: String = v
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or("no message")
        .chars()
        .take(300)
        .collect();
    let msg = format!("{}: {message}", kind.unwrap_or("error"));
    match kind {
        Some("rate_limit_error") => LlmError::RateLimited { retry_after: None },
        Some("authentication_error") | Some("permission_error") => LlmError::Unauthorized(msg),
        Some("invalid_request_error") | Some("not_found_error") | Some("request_too_large") => {
            LlmError::Rejected(msg)
        }
        Some("timeout_error") => LlmError::Timeout,
        // overloaded_error, api_error, and anything new: worth another try.
        _ => LlmError::Unavailable(msg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_blocks_join_and_tool_use_becomes_a_call() {
        let body = r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-x",
            "content":[{"type":"thinking","thinking":"hmm","signature":"s"},
                       {"type":"text","text":"Let me "},{"type":"text","text":"check."},
                       {"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"a.md"}}],
            "stop_reason":"tool_use","stop_sequence":null,
            "usage":{"input_tokens":10,"output_tokens":7,"cache_creation_input_tokens":100,
                     "cache_read_input_tokens":1000}}"#;
        let r = parse_message(body).unwrap();
        assert_eq!(r.content, "Let me check.");
        assert_eq!(r.model, "claude-x");
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(
            r.tool_calls,
            vec![ToolCall {
                id: "toolu_1".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"a.md"}"#.into()
            }]
        );
        assert_eq!(
            r.usage,
            Usage {
                prompt_tokens: 1110,
                completion_tokens: 7,
                cached_tokens: 1000,
                cache_write_tokens: 100
            }
        );
    }

    #[test]
    fn missing_cache_fields_and_stop_reasons() {
        let body = r#"{"model":"m","content":[{"type":"text","text":"hi"}],
            "stop_reason":"max_tokens","usage":{"input_tokens":3,"output_tokens":1,
            "cache_creation_input_tokens":null}}"#;
        let r = parse_message(body).unwrap();
        assert_eq!(r.finish, FinishReason::Length);
        assert_eq!(r.usage.prompt_tokens, 3);
        assert_eq!(r.usage.cache_write_tokens, 0);
        assert_eq!(stop_reason(Some("end_turn")), FinishReason::Stop);
        assert_eq!(stop_reason(Some("refusal")), FinishReason::ContentFilter);
        assert_eq!(
            stop_reason(Some("pause_turn")),
            FinishReason::Other("pause_turn".into())
        );
        assert!(matches!(
            parse_message(r#"{"content": [{"type":"text"#),
            Err(LlmError::Malformed(_))
        ));
    }

    #[test]
    fn error_events_are_classified_by_type() {
        let ev = |kind: &str| {
            error_event(&format!(
                r#"{{"type":"error","error":{{"type":"{kind}","message":"m"}}}}"#
            ))
        };
        assert_eq!(
            ev("overloaded_error"),
            LlmError::Unavailable("overloaded_error: m".into())
        );
        assert_eq!(
            ev("rate_limit_error"),
            LlmError::RateLimited { retry_after: None }
        );
        assert!(matches!(
            ev("authentication_error"),
            LlmError::Unauthorized(_)
        ));
        assert!(matches!(ev("invalid_request_error"), LlmError::Rejected(_)));
        assert!(matches!(error_event("garbage"), LlmError::Unavailable(_)));
    }
}
