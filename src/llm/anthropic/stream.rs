//! Assembling a streamed Anthropic answer (`"stream": true`) from its events: `message_start`
//! (model, input usage), `content_block_start` / `_delta` / `_stop` (text forwarded as it
//! comes, tool input collected from `input_json_delta` fragments), `message_delta` (stop
//! reason, output usage), and `message_stop`, which ends the answer. An `error` event fails
//! it; `ping` and event types added later are ignored, as the API asks of clients.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::response::{WireUsage, arguments, error_event, stop_reason};
use crate::llm::sse::{Flow, SseEvent};
use crate::llm::{ChatResponse, DeltaSink, LlmError, ToolCall};

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: Start,
    },
    ContentBlockStart {
        index: usize,
        content_block: StartBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    MessageDelta {
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Error,
    /// `ping`, `content_block_stop`, and anything new.
    #[serde(other)]
    Ignored,
}

#[derive(Deserialize)]
struct Start {
    #[serde(default)]
    model: String,
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StartBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    /// Thinking, signatures, citations.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

enum Block {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

/// The answer so far.
#[derive(Default)]
pub(super) struct StreamState {
    model: String,
    blocks: BTreeMap<usize, Block>,
    stop: Option<String>,
    usage: WireUsage,
}

impl StreamState {
    /// Takes one SSE event; text deltas go to `deltas` at once.
    pub(super) fn on_event(
        &mut self,
        event: SseEvent,
        deltas: &DeltaSink,
    ) -> Result<Flow, LlmError> {
        if event.event == "error" {
            return Err(error_event(&event.data));
        }
        let parsed: Event = serde_json::from_str(&event.data).map_err(|e| {
            LlmError::Malformed(format!(
                "a streamed `{}` event is not valid: {e}",
                event.event
            ))
        })?;
        match parsed {
            Event::MessageStart { message } => {
                if !message.model.is_empty() {
                    self.model = message.model;
                }
                self.usage.update(message.usage);
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = match content_block {
                    StartBlock::Text { text } => {
                        send(deltas, &text);
                        Block::Text(text)
                    }
                    StartBlock::ToolUse { id, name } => Block::Tool {
                        id,
                        name,
                        json: String::new(),
                    },
                    StartBlock::Other => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            Event::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => {
                    let block = self
                        .blocks
                        .entry(index)
                        .or_insert_with(|| Block::Text(String::new()));
                    if let Block::Text(acc) = block {
                        send(deltas, &text);
                        acc.push_str(&text);
                    }
                }
                BlockDelta::InputJsonDelta { partial_json } => match self.blocks.get_mut(&index) {
                    Some(Block::Tool { json, .. }) => json.push_str(&partial_json),
                    _ => {
                        return Err(LlmError::Malformed(format!(
                            "tool input for block {index}, which is no tool call"
                        )));
                    }
                },
                BlockDelta::Other => {}
            },
            Event::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop = delta.stop_reason;
                }
                if let Some(usage) = usage {
                    self.usage.update(usage);
                }
            }
            Event::MessageStop => return Ok(Flow::Done),
            // An `error` type under another event name.
            Event::Error => return Err(error_event(&event.data)),
            Event::Ignored => {}
        }
        Ok(Flow::More)
    }

    /// The complete answer, once `message_stop` was seen.
    pub(super) fn finish(self) -> Result<ChatResponse, LlmError> {
        let mut content = String::new();
        let mut tool_calls = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                Block::Text(text) => content.push_str(&text),
                Block::Tool { id, name, json } => {
                    // No fragments means no arguments. Otherwise normalize like a plain
                    // answer's `input`; text that is not JSON is kept for the tool to report.
                    let arguments = if json.trim().is_empty() {
                        "{}".to_owned()
                    } else {
                        serde_json::from_str::<Value>(&json).map_or(json, |input| arguments(&input))
                    };
                    tool_calls.push(ToolCall {
                        id,
                        name,
                        arguments,
                    });
                }
                Block::Other => {}
            }
        }
        Ok(ChatResponse {
            content,
            tool_calls,
            finish: stop_reason(self.stop.as_deref()),
            usage: self.usage.into(),
            model: self.model,
        })
    }
}

fn send(deltas: &DeltaSink, text: &str) {
    if !text.is_empty() {
        let _ = deltas.send(text.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::sync::mpsc;

    use super::*;
    use crate::llm::{FinishReason, Usage};

    /// Feeds `(event name, data)` pairs and returns the answer and the deltas sent.
    fn run(events: Vec<(&str, Value)>) -> (Result<ChatResponse, LlmError>, Vec<String>) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut state = StreamState::default();
        let mut done = false;
        for (name, data) in events {
            let event = SseEvent {
                event: name.into(),
                data: data.to_string(),
            };
            match state.on_event(event, &tx) {
                Ok(Flow::More) => {}
                Ok(Flow::Done) => {
                    done = true;
                    break;
                }
                Err(e) => return (Err(e), Vec::new()),
            }
        }
        assert!(done, "no message_stop");
        drop(tx);
        let mut sent = Vec::new();
        while let Ok(d) = rx.try_recv() {
            sent.push(d);
        }
        (state.finish(), sent)
    }

    fn start() -> (&'static str, Value) {
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude-x",
                   "content": [], "usage": {"input_tokens": 20, "output_tokens": 1,
                   "cache_creation_input_tokens": 30, "cache_read_input_tokens": 400}}}),
        )
    }

    fn block_start(index: usize, block: Value) -> (&'static str, Value) {
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": block}),
        )
    }

    fn block_delta(index: usize, delta: Value) -> (&'static str, Value) {
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    }

    fn stop(index: usize) -> (&'static str, Value) {
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        )
    }

    fn end(reason: &str, output: u64) -> Vec<(&'static str, Value)> {
        vec![
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": reason},
                       "usage": {"output_tokens": output}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ]
    }

    #[test]
    fn text_is_forwarded_and_usage_combines_start_and_delta() {
        let mut events = vec![
            start(),
            ("ping", json!({"type": "ping"})),
            block_start(0, json!({"type": "text", "text": ""})),
            block_delta(0, json!({"type": "text_delta", "text": "Hello"})),
            block_delta(0, json!({"type": "text_delta", "text": " there"})),
            stop(0),
            ("future_event", json!({"type": "future_event", "x": 1})),
        ];
        events.extend(end("end_turn", 12));
        let (resp, sent) = run(events);
        let resp = resp.unwrap();
        assert_eq!(sent, vec!["Hello", " there"]);
        assert_eq!(resp.content, "Hello there");
        assert_eq!(resp.finish, FinishReason::Stop);
        assert_eq!(resp.model, "claude-x");
        assert_eq!(
            resp.usage,
            Usage {
                prompt_tokens: 450,
                completion_tokens: 12,
                cached_tokens: 400,
                cache_write_tokens: 30
            }
        );
    }

    #[test]
    fn tool_input_is_assembled_from_fragments_per_block() {
        let mut events = vec![
            start(),
            block_start(0, json!({"type": "thinking", "thinking": ""})),
            block_delta(0, json!({"type": "thinking_delta", "thinking": "hmm"})),
            stop(0),
            block_start(1, json!({"type": "text", "text": ""})),
            block_delta(1, json!({"type": "text_delta", "text": "Checking."})),
            stop(1),
            block_start(
                2,
                json!({"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {}}),
            ),
            block_delta(
                2,
                json!({"type": "input_json_delta", "partial_json": "{\"path\": "}),
            ),
            block_delta(
                2,
                json!({"type": "input_json_delta", "partial_json": "\"a.md\"}"}),
            ),
            stop(2),
            block_start(
                3,
                json!({"type": "tool_use", "id": "toolu_b", "name": "current_time", "input": {}}),
            ),
            block_delta(3, json!({"type": "input_json_delta", "partial_json": ""})),
            stop(3),
        ];
        events.extend(end("tool_use", 40));
        let (resp, sent) = run(events);
        let resp = resp.unwrap();
        assert_eq!(sent, vec!["Checking."]);
        assert_eq!(resp.content, "Checking.");
        assert_eq!(resp.finish, FinishReason::ToolCalls);
        assert_eq!(
            resp.tool_calls,
            vec![
                ToolCall {
                    id: "toolu_a".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a.md"}"#.into()
                },
                ToolCall {
                    id: "toolu_b".into(),
                    name: "current_time".into(),
                    arguments: "{}".into()
                },
            ]
        );
    }

    #[test]
    fn error_events_and_bad_events_fail_the_answer() {
        let overloaded = (
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        );
        let (resp, _) = run(vec![start(), overloaded]);
        assert_eq!(
            resp.unwrap_err(),
            LlmError::Unavailable("overloaded_error: Overloaded".into())
        );
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut state = StreamState::default();
        let bad = SseEvent {
            event: "content_block_delta".into(),
            data: "{\"type\": \"content_block_delta\", \"ind".into(),
        };
        assert!(matches!(
            state.on_event(bad, &tx),
            Err(LlmError::Malformed(_))
        ));
        let (resp, _) = run(vec![
            start(),
            block_start(0, json!({"type": "text", "text": ""})),
            block_delta(0, json!({"type": "input_json_delta", "partial_json": "{"})),
        ]);
        assert!(matches!(resp, Err(LlmError::Malformed(_))));
    }
}
