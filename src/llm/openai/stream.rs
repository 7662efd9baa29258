//! Assembling a streamed chat-completions answer (`"stream": true`) from its chunks: text
//! deltas are forwarded as they come, tool calls are put together from index-keyed fragments
//! (id and name first, argument pieces after, several calls interleaved), usage comes from the
//! last chunk (`stream_options.include_usage`), and `data: [DONE]` ends the answer.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::response::{WireUsage, finish_reason};
use crate::llm::sse::{Flow, SseEvent};
use crate::llm::{ChatResponse, DeltaSink, LlmError, ToolCall, Usage};

// Every field is optional and null-tolerant: servers differ in what they repeat per chunk.
#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Option<Vec<ChunkChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// The answer so far.
#[derive(Default)]
pub(super) struct StreamState {
    content: String,
    calls: BTreeMap<usize, PartialCall>,
    finish: Option<String>,
    usage: Option<Usage>,
    model: String,
}

impl StreamState {
    /// Takes one SSE event; text deltas go to `deltas` at once.
    pub(super) fn on_event(
        &mut self,
        event: SseEvent,
        deltas: &DeltaSink,
    ) -> Result<Flow, LlmError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(Flow::Done);
        }
        if data.is_empty() {
            return Ok(Flow::More);
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| LlmError::Malformed(format!("a streamed chunk is not valid: {e}")))?;
        if let Some(err) = chunk.error {
            let msg = err
                .get("message")
                .and_then(Value::as_str)
                .or(err.as_str())
                .unwrap_or("no message");
            let msg: String = msg.chars().take(300).collect();
            return Err(LlmError::Unavailable(format!(
                "the answer stream broke off: {msg}"
            )));
        }
        if let Some(model) = chunk.model.filter(|m| !m.is_empty()) {
            self.model = model;
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into());
        }
        // One answer is asked for (n = 1): other choices would be someone else's text.
        let choices = chunk.choices.unwrap_or_default();
        for choice in choices.into_iter().filter(|c| c.index.unwrap_or(0) == 0) {
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(reason);
            }
            let Some(delta) = choice.delta else { continue };
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                self.content.push_str(&text);
                let _ = deltas.send(text);
            }
            for (position, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
                // Servers that send each call whole in one chunk may leave out `index`.
                let partial = self
                    .calls
                    .entry(call.index.unwrap_or(position))
                    .or_default();
                if let Some(id) = call.id.filter(|id| !id.is_empty()) {
                    partial.id = id;
                }
                let Some(function) = call.function else {
                    continue;
                };
                // The name comes whole (some servers repeat it on every fragment).
                if let Some(name) = function.name.filter(|n| !n.is_empty())
                    && partial.name.is_empty()
                {
                    partial.name = name;
                }
                if let Some(args) = function.arguments {
                    partial.arguments.push_str(&args);
                }
            }
        }
        Ok(Flow::More)
    }

    /// The complete answer, once `[DONE]` was seen.
    pub(super) fn finish(self) -> Result<ChatResponse, LlmError> {
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (index, call) in self.calls {
            if call.name.is_empty() {
                return Err(LlmError::Malformed(format!(
                    "streamed tool call {index} has no name"
                )));
            }
            let id = if call.id.is_empty() {
                format!("call_{index}")
            } else {
                call.id
            };
            tool_calls.push(ToolCall {
                id,
                name: call.name,
                arguments: call.arguments,
            });
        }
        Ok(ChatResponse {
            content: self.content,
            tool_calls,
            finish: finish_reason(self.finish.as_deref()),
            usage: self.usage.unwrap_or_default(),
            model: self.model,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::sync::mpsc;

    use super::*;
    use crate::llm::FinishReason;

    /// Feeds `chunks` (JSON values, then `[DONE]`) and returns the answer and the deltas sent.
    fn run(chunks: Vec<Value>) -> (Result<ChatResponse, LlmError>, Vec<String>) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut state = StreamState::default();
        let mut events: Vec<String> = chunks.iter().map(Value::to_string).collect();
        events.push("[DONE]".into());
        for data in events {
            let event = SseEvent {
                event: "message".into(),
                data,
            };
            match state.on_event(event, &tx) {
                Ok(Flow::More) => {}
                Ok(Flow::Done) => break,
                Err(e) => return (Err(e), Vec::new()),
            }
        }
        drop(tx);
        let mut sent = Vec::new();
        while let Ok(d) = rx.try_recv() {
            sent.push(d);
        }
        (state.finish(), sent)
    }

    fn delta(d: Value) -> Value {
        json!({"model": "gpt-x", "choices": [{"index": 0, "delta": d, "finish_reason": null}]})
    }

    #[test]
    fn text_deltas_are_forwarded_and_joined() {
        let (resp, sent) = run(vec![
            delta(json!({"role": "assistant", "content": ""})),
            delta(json!({"content": "Hel"})),
            delta(json!({"content": "lo"})),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": null}),
            json!({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2,
                   "prompt_tokens_details": {"cached_tokens": 5}}}),
        ]);
        let resp = resp.unwrap();
        assert_eq!(sent, vec!["Hel", "lo"]);
        assert_eq!(resp.content, "Hello");
        assert_eq!(resp.finish, FinishReason::Stop);
        assert_eq!(resp.model, "gpt-x");
        assert_eq!(
            resp.usage,
            Usage {
                prompt_tokens: 9,
                completion_tokens: 2,
                cached_tokens: 5,
                cache_write_tokens: 0
            }
        );
    }

    #[test]
    fn interleaved_tool_call_fragments_are_assembled_by_index() {
        let call = |i: usize, id: Option<&str>, name: Option<&str>, args: &str| {
            let mut c = json!({"index": i, "function": {"arguments": args}});
            if let Some(id) = id {
                c["id"] = json!(id);
                c["type"] = json!("function");
            }
            if let Some(name) = name {
                c["function"]["name"] = json!(name);
            }
            delta(json!({"tool_calls": [c]}))
        };
        let (resp, sent) = run(vec![
            call(0, Some("call_a"), Some("read_file"), ""),
            call(1, Some("call_b"), Some("current_time"), ""),
            call(0, None, None, "{\"pa"),
            call(1, None, None, "{\"tz\":"),
            call(0, None, Some("read_file"), "th\":\"x\"}"),
            call(1, None, None, "\"UTC\"}"),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ]);
        let resp = resp.unwrap();
        assert!(sent.is_empty());
        assert_eq!(resp.finish, FinishReason::ToolCalls);
        assert_eq!(
            resp.tool_calls,
            vec![
                ToolCall {
                    id: "call_a".into(),
                    name: "read_file".into(),
                    arguments: "{\"path\":\"x\"}".into()
                },
                ToolCall {
                    id: "call_b".into(),
                    name: "current_time".into(),
                    arguments: "{\"tz\":\"UTC\"}".into()
                },
            ]
        );
    }

    #[test]
    fn whole_calls_without_index_or_id_still_parse() {
        let (resp, _) = run(vec![delta(json!({"tool_calls": [
            {"function": {"name": "a", "arguments": "{}"}},
            {"function": {"name": "b", "arguments": "{\"x\":1}"}},
        ]}))]);
        let calls = resp.unwrap().tool_calls;
        assert_eq!(calls[0].id, "call_0");
        assert_eq!(calls[1].name, "b");
        assert_eq!(calls[1].arguments, "{\"x\":1}");
    }

    #[test]
    fn bad_chunks_and_error_chunks_fail_the_answer() {
        let (tx, _rx) = mpsc::unbounded_channel();
        let ev = |data: &str| SseEvent {
            event: "message".into(),
            data: data.into(),
        };
        let mut state = StreamState::default();
        assert!(matches!(
            state.on_event(ev("{\"choices\": [{\"delta\": {\"content"), &tx),
            Err(LlmError::Malformed(_))
        ));
        let mut state = StreamState::default();
        let got = state.on_event(ev(r#"{"error": {"message": "upstream died"}}"#), &tx);
        assert_eq!(
            got,
            Err(LlmError::Unavailable(
                "the answer stream broke off: upstream died".into()
            ))
        );
        let (resp, _) = run(vec![delta(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
        )]);
        assert!(matches!(resp, Err(LlmError::Malformed(_))));
    }
}
