//! Request bodies for the Anthropic Messages API: system prompt, alternating user/assistant
//! turns of content blocks, tools, and prompt-cache breakpoints.
//!
//! Anthropic wants strictly alternating roles, tool results as `tool_result` blocks inside a
//! user turn right after the assistant's `tool_use` blocks, and no empty text blocks. The
//! provider-neutral history does not have that shape, so consecutive messages that land in
//! the same role (several tool results, a tool result followed by the user's next message) are
//! merged into one turn, and messages with nothing to say are dropped.
//!
//! Prompt caching: a `cache_control` breakpoint caches everything before and including its
//! block (order: tools, system, messages). Four at most are allowed; we place
//! - on the last tool and the last system block: the stable prefix, shared by every turn;
//! - on the last block of the last user turn: this request's whole prefix, read back by the
//!   next request;
//! - on the last block of the user turn before it: the breakpoint the previous request wrote,
//!   so that request's cache entry is hit exactly even when more blocks were added since than
//!   the API's look-back covers (an agent iteration adds an assistant turn and a tool-result
//!   turn, so this is where the previous request's last breakpoint was).

use serde_json::{Value, json};

use crate::llm::{ChatMessage, ChatRequest, Role};

/// `max_tokens` is required by the API; used when the request sets none.
pub(super) const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Request body for `POST /v1/messages`.
pub(super) fn request_body(req: &ChatRequest) -> Value {
    let mut body = json!({
        "model": req.model,
        "max_tokens": req.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": turns(&req.messages),
    });
    let system: Vec<Value> = req
        .messages
        .iter()
        .filter(|m| m.role == Role::System && !m.content.is_empty())
        .map(|m| text_block(&m.content))
        .collect();
    if !system.is_empty() {
        body["system"] = with_breakpoint_on_last(system);
    }
    if !req.tools.is_empty() {
        let tools = req.tools.iter().map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        );
        body["tools"] = with_breakpoint_on_last(tools.collect());
    }
    body
}

/// The same body for a streamed answer.
pub(super) fn stream_body(req: &ChatRequest) -> Value {
    let mut body = request_body(req);
    body["stream"] = json!(true);
    body
}

fn cache_control() -> Value {
    json!({"type": "ephemeral"})
}

fn with_breakpoint_on_last(mut blocks: Vec<Value>) -> Value {
    if let Some(last) = blocks.last_mut() {
        last["cache_control"] = cache_control();
    }
    Value::Array(blocks)
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

struct Turn {
    role: &'static str,
    blocks: Vec<Value>,
}

/// The conversation as alternating turns, with the two message breakpoints placed.
fn turns(messages: &[ChatMessage]) -> Vec<Value> {
    let mut turns: Vec<Turn> = Vec::new();
    for m in messages {
        let (role, blocks) = match m.role {
            Role::System => continue,
            Role::User => ("user", user_blocks(m)),
            Role::Tool => ("user", vec![tool_result_block(m)]),
            Role::Assistant => ("assistant", assistant_blocks(m)),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.blocks.extend(blocks),
            _ => turns.push(Turn { role, blocks }),
        }
    }
    let user_turns = turns.iter_mut().rev().filter(|t| t.role == "user");
    for turn in user_turns.take(2) {
        if let Some(last) = turn.blocks.last_mut() {
            last["cache_control"] = cache_control();
        }
    }
    turns
        .into_iter()
        .map(|t| json!({"role": t.role, "content": t.blocks}))
        .collect()
}

/// Images first (Anthropic recommends images before the question about them), then the text.
fn user_blocks(m: &ChatMessage) -> Vec<Value> {
    let mut blocks: Vec<Value> = m
        .images
        .iter()
        .map(|i| {
            json!({"type": "image",
                   "source": {"type": "base64", "media_type": i.mime, "data": i.base64}})
        })
        .collect();
    if !m.content.is_empty() {
        blocks.push(text_block(&m.content));
    }
    blocks
}

fn assistant_blocks(m: &ChatMessage) -> Vec<Value> {
    let mut blocks = Vec::new();
    if !m.content.is_empty() {
        blocks.push(text_block(&m.content));
    }
    blocks.extend(m.tool_calls.iter().map(|c| {
        // `input` must be an object. Arguments the model wrote badly were already reported
        // back to it by the tool's result; sending `{}` keeps the transcript acceptable.
        let input = serde_json::from_str::<Value>(&c.arguments)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input})
    }));
    blocks
}

fn tool_result_block(m: &ChatMessage) -> Value {
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": m.tool_call_id.as_deref().unwrap_or_default(),
    });
    if !m.content.is_empty() {
        block["content"] = json!(m.content);
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Image, ToolCall, ToolSchema};

    fn req(messages: Vec<ChatMessage>) -> ChatRequest {
        ChatRequest {
            model: "claude-x".into(),
            messages,
            tools: vec![],
            max_output_tokens: None,
        }
    }

    fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    fn asks(calls: Vec<ToolCall>) -> ChatMessage {
        let mut m = ChatMessage::assistant("");
        m.tool_calls = calls;
        m
    }

    fn tool(name: &str) -> ToolSchema {
        ToolSchema {
            name: name.into(),
            description: format!("{name} tool"),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }

    /// Every block carrying `cache_control`, as (where, index) pairs.
    fn breakpoints(body: &Value) -> Vec<String> {
        let mut out = Vec::new();
        let mut scan = |label: &str, blocks: &Value| {
            for (i, b) in blocks.as_array().into_iter().flatten().enumerate() {
                if b.get("cache_control").is_some() {
                    assert_eq!(b["cache_control"], json!({"type": "ephemeral"}));
                    out.push(format!("{label}[{i}]"));
                }
            }
        };
        scan("tools", &body["tools"]);
        scan("system", &body["system"]);
        for (n, m) in body["messages"].as_array().unwrap().iter().enumerate() {
            scan(&format!("messages[{n}]"), &m["content"]);
        }
        out
    }

    #[test]
    fn system_goes_top_level_and_max_tokens_defaults() {
        let body = request_body(&req(vec![
            ChatMessage::system("You are hermes."),
            ChatMessage::system("Today is Monday."),
            ChatMessage::user("hi"),
        ]));
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(
            body["system"],
            json!([
                {"type": "text", "text": "You are hermes."},
                {"type": "text", "text": "Today is Monday.", "cache_control": {"type": "ephemeral"}},
            ])
        );
        assert_eq!(body["messages"].as_array().unwrap().len(), 1);
        assert_eq!(body["messages"][0]["role"], "user");
        assert!(body.get("tools").is_none());
        assert!(body.get("stream").is_none());
        let mut r = req(vec![ChatMessage::user("hi")]);
        r.max_output_tokens = Some(300);
        assert_eq!(request_body(&r)["max_tokens"], 300);
        assert!(request_body(&r).get("system").is_none());
        assert_eq!(stream_body(&r)["stream"], true);
    }

    #[test]
    fn tool_results_are_merged_into_one_user_turn_with_the_next_message() {
        let (a, b) = (call("toolu_1", "a", "{}"), call("toolu_2", "b", "{}"));
        let body = request_body(&req(vec![
            ChatMessage::user("do both"),
            asks(vec![a.clone(), b.clone()]),
            ChatMessage::tool_result(&a, "A done"),
            ChatMessage::tool_result(&b, ""),
            ChatMessage::user("and now?"),
            ChatMessage::user("hello?"),
        ]));
        let msgs = body["messages"].as_array().unwrap();
        let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        let last = msgs[2]["content"].as_array().unwrap();
        assert_eq!(last.len(), 4);
        assert_eq!(
            last[0],
            json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "A done"})
        );
        assert_eq!(
            last[1],
            json!({"type": "tool_result", "tool_use_id": "toolu_2"})
        );
        assert_eq!(last[2]["text"], "and now?");
        assert_eq!(last[3]["text"], "hello?");
    }

    #[test]
    fn empty_messages_are_dropped_and_their_neighbours_merged() {
        let body = request_body(&req(vec![
            ChatMessage::user("one"),
            ChatMessage::assistant(""),
            ChatMessage::user("two"),
            ChatMessage::assistant("a"),
            ChatMessage::assistant("b"),
        ]));
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[0]["content"].as_array().unwrap().len(), 2);
        assert_eq!(msgs[1]["role"], "assistant");
        assert_eq!(
            msgs[1]["content"],
            json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
        );
    }

    #[test]
    fn tool_use_input_is_the_parsed_arguments_or_an_empty_object() {
        let mut m = asks(vec![
            call("toolu_1", "read_file", r#"{"path": "notes.md"}"#),
            call("toolu_2", "broken", r#"{"path": "no"#),
            call("toolu_3", "scalar", "42"),
        ]);
        m.content = "Let me look.".into();
        let body = request_body(&req(vec![ChatMessage::user("look"), m]));
        let blocks = body["messages"][1]["content"].as_array().unwrap();
        assert_eq!(blocks[0], json!({"type": "text", "text": "Let me look."}));
        assert_eq!(
            blocks[1],
            json!({"type": "tool_use", "id": "toolu_1", "name": "read_file",
                   "input": {"path": "notes.md"}})
        );
        assert_eq!(blocks[2]["input"], json!({}));
        assert_eq!(blocks[3]["input"], json!({}));
    }

    #[test]
    fn images_come_before_the_text_as_base64_sources() {
        let mut m = ChatMessage::user("what is this?");
        m.images = vec![Image {
            mime: "image/webp".into(),
            base64: "UklGRg==".into(),
        }];
        let body = request_body(&req(vec![m]));
        assert_eq!(
            body["messages"][0]["content"],
            json!([
                {"type": "image", "source": {"type": "base64", "media_type": "image/webp",
                                             "data": "UklGRg=="}},
                {"type": "text", "text": "what is this?", "cache_control": {"type": "ephemeral"}},
            ])
        );
    }

    #[test]
    fn tools_carry_input_schema_and_the_last_one_a_breakpoint() {
        let mut r = req(vec![ChatMessage::user("hi")]);
        r.tools = vec![tool("a"), tool("b")];
        let body = request_body(&r);
        assert_eq!(
            body["tools"][0],
            json!({"name": "a", "description": "a tool",
                   "input_schema": {"type": "object", "properties": {}}})
        );
        assert_eq!(
            body["tools"][1]["cache_control"],
            json!({"type": "ephemeral"})
        );
    }

    #[test]
    fn breakpoints_sit_on_tools_system_and_the_last_two_user_turns() {
        let c = call("toolu_1", "a", "{}");
        let mut r = req(vec![
            ChatMessage::system("sys"),
            ChatMessage::user("first"),
            ChatMessage::assistant("ok"),
            ChatMessage::user("second"),
            asks(vec![c.clone()]),
            ChatMessage::tool_result(&c, "done"),
        ]);
        r.tools = vec![tool("a"), tool("b"), tool("c")];
        let body = request_body(&r);
        assert_eq!(
            breakpoints(&body),
            ["tools[2]", "system[0]", "messages[2][0]", "messages[4][0]"]
        );

        // Fewer places, fewer breakpoints; never more than four.
        let body = request_body(&req(vec![ChatMessage::user("only")]));
        assert_eq!(breakpoints(&body), ["messages[0][0]"]);
        let mut long = vec![ChatMessage::system("a"), ChatMessage::system("b")];
        for i in 0..10 {
            long.push(ChatMessage::user(format!("u{i}")));
            long.push(ChatMessage::assistant(format!("a{i}")));
        }
        let mut r = req(long);
        r.tools = vec![tool("x")];
        assert_eq!(breakpoints(&request_body(&r)).len(), 4);
    }

    #[test]
    fn the_previous_request_is_a_byte_identical_prefix_of_the_next() {
        let c = call("toolu_1", "a", "{\"q\":1}");
        let mut history = vec![ChatMessage::system("sys"), ChatMessage::user("go")];
        let mut r = req(history.clone());
        r.tools = vec![tool("a")];
        let first = request_body(&r);
        history.push(asks(vec![c.clone()]));
        history.push(ChatMessage::tool_result(&c, "result"));
        r.messages = history;
        let second = request_body(&r);
        assert_eq!(first["tools"].to_string(), second["tools"].to_string());
        assert_eq!(first["system"].to_string(), second["system"].to_string());
        let n = first["messages"].as_array().unwrap().len();
        let prefix = Value::Array(second["messages"].as_array().unwrap()[..n].to_vec());
        assert_eq!(first["messages"].to_string(), prefix.to_string());
    }
}
