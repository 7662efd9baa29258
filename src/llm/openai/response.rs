//! Parsing a (non-streamed) chat-completions answer, and the pieces the streamed one shares:
//! finish reasons and usage.

use serde::Deserialize;

use crate::llm::{ChatResponse, FinishReason, LlmError, ToolCall, Usage};

#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    model: String,
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: WireMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<WireToolCall>,
}

#[derive(Deserialize)]
struct WireToolCall {
    id: String,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

/// `usage` of an answer or of the last streamed chunk.
#[derive(Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Usage {
        Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            cached_tokens: u.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
            cache_write_tokens: 0,
        }
    }
}

/// `finish_reason` as a [`FinishReason`]; a missing one means the model simply stopped.
pub(super) fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        None | Some("stop") => FinishReason::Stop,
        Some("tool_calls") | Some("function_call") => FinishReason::ToolCalls,
        Some("length") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

/// Parse a successful chat-completions body.
pub(super) fn parse_completion(body: &str) -> Result<ChatResponse, LlmError> {
    let c: Completion =
        serde_json::from_str(body).map_err(|e| LlmError::Malformed(e.to_string()))?;
    let choice = c
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| LlmError::Malformed("no choices in the answer".into()))?;
    Ok(ChatResponse {
        content: choice.message.content.unwrap_or_default(),
        tool_calls: choice
            .message
            .tool_calls
            .into_iter()
            .map(|t| ToolCall {
                id: t.id,
                name: t.function.name,
                arguments: t.function.arguments,
            })
            .collect(),
        finish: finish_reason(choice.finish_reason.as_deref()),
        usage: c.usage.map(Usage::from).unwrap_or_default(),
        model: c.model,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_with_tool_calls_parses() {
        let body = r#"{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,
            "tool_calls":[{"id":"c1","type":"function","function":{"name":"t","arguments":"{}"}}]},
            "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":7,"completion_tokens":3,
            "prompt_tokens_details":{"cached_tokens":4}}}"#;
        let r = parse_completion(body).unwrap();
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(r.tool_calls[0].name, "t");
        assert_eq!(
            r.usage,
            Usage {
                prompt_tokens: 7,
                completion_tokens: 3,
                cached_tokens: 4,
                cache_write_tokens: 0,
            }
        );
        assert!(matches!(
            parse_completion("{not json"),
            Err(LlmError::Malformed(_))
        ));
        assert!(matches!(
            parse_completion(r#"{"choices":[]}"#),
            Err(LlmError::Malformed(_))
        ));
    }

    #[test]
    fn finish_reasons_map() {
        assert_eq!(finish_reason(None), FinishReason::Stop);
        assert_eq!(finish_reason(Some("length")), FinishReason::Length);
        assert_eq!(
            finish_reason(Some("content_filter")),
            FinishReason::ContentFilter
        );
        assert_eq!(
            finish_reason(Some("eos")),
            FinishReason::Other("eos".into())
        );
    }
}
