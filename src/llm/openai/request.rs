//! Request bodies in the chat-completions format: messages, tool calls and results, images as
//! content parts, tools, and the streaming options.

use serde_json::{Value, json};

use crate::llm::{ChatMessage, ChatRequest, Role};

/// Request body in the chat-completions format.
pub(super) fn request_body(req: &ChatRequest) -> Value {
    let messages: Vec<Value> = req.messages.iter().map(message).collect();
    let mut body = json!({ "model": req.model, "messages": messages });
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": t}))
            .collect();
    }
    if let Some(max) = req.max_output_tokens {
        body["max_tokens"] = json!(max);
    }
    body
}

/// The body of a streamed request: the same, with usage reported in a final chunk.
pub(super) fn stream_body(req: &ChatRequest) -> Value {
    let mut body = request_body(req);
    body["stream"] = json!(true);
    body["stream_options"] = json!({ "include_usage": true });
    body
}

fn message(m: &ChatMessage) -> Value {
    let mut v = json!({ "role": m.role.as_str(), "content": content(m) });
    if m.role == Role::Assistant && !m.tool_calls.is_empty() {
        if m.content.is_empty() {
            v["content"] = Value::Null;
        }
        v["tool_calls"] = m
            .tool_calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                       "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
    }
    if let Some(id) = &m.tool_call_id {
        v["tool_call_id"] = json!(id);
    }
    v
}

/// A plain string, or for a user message with images an array of parts: the text first, then
/// each image as a `data:` URL.
fn content(m: &ChatMessage) -> Value {
    if m.images.is_empty() || m.role != Role::User {
        return json!(m.content);
    }
    let mut parts = vec![json!({"type": "text", "text": m.content})];
    parts.extend(m.images.iter().map(|i| {
        let url = format!("data:{};base64,{}", i.mime, i.base64);
        json!({"type": "image_url", "image_url": {"url": url}})
    }));
    Value::Array(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Image, ToolCall, ToolSchema};

    fn req(messages: Vec<ChatMessage>) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages,
            tools: vec![],
            max_output_tokens: None,
        }
    }

    #[test]
    fn request_carries_tool_calls_and_results() {
        let call = ToolCall {
            id: "c1".into(),
            name: "current_time".into(),
            arguments: "{\"timezone\":\"UTC\"}".into(),
        };
        let mut asked = ChatMessage::assistant("");
        asked.tool_calls = vec![call.clone()];
        let mut r = req(vec![
            ChatMessage::user("time?"),
            asked,
            ChatMessage::tool_result(&call, "noon"),
        ]);
        r.tools = vec![ToolSchema {
            name: "current_time".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }];
        r.max_output_tokens = Some(100);
        let body = request_body(&r);
        assert_eq!(body["messages"][1]["content"], Value::Null);
        assert_eq!(
            body["messages"][1]["tool_calls"][0]["function"]["name"],
            "current_time"
        );
        assert_eq!(body["messages"][2]["tool_call_id"], "c1");
        assert_eq!(body["tools"][0]["function"]["name"], "current_time");
        assert_eq!(body["max_tokens"], 100);
        assert!(body.get("stream").is_none());
    }

    #[test]
    fn user_images_become_content_parts_and_plain_messages_stay_strings() {
        let mut look = ChatMessage::user("what is this?");
        look.images = vec![
            Image {
                mime: "image/png".into(),
                base64: "iVBORw0K".into(),
            },
            Image {
                mime: "image/jpeg".into(),
                base64: "/9j/4AAQ".into(),
            },
        ];
        let body = request_body(&req(vec![
            ChatMessage::system("be brief"),
            ChatMessage::user("hello"),
            look,
        ]));
        assert_eq!(body["messages"][0]["content"], "be brief");
        assert_eq!(body["messages"][1]["content"], "hello");
        assert_eq!(
            body["messages"][2]["content"],
            json!([
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
            ])
        );
    }

    #[test]
    fn stream_body_asks_for_usage() {
        let body = stream_body(&req(vec![ChatMessage::user("hi")]));
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
    }
}
