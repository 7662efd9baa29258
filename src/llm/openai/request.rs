//! Request bodies in the chat-completions format: messages, tool calls and results, images as
//! content parts, tools, and the streaming options.
//!
//! The body borrows from the request and is serialised straight into the HTTP body: no JSON tree
//! is built per call (copying every message of the history into one was the largest allocation
//! on a turn's path).

use serde::Serialize;

use crate::llm::{ChatMessage, ChatRequest, Role, ToolCall, ToolSchema};

/// A chat-completions request body.
#[derive(Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    messages: Vec<Message<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct Tool<'a> {
    r#type: &'static str,
    function: &'a ToolSchema,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: Content<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<Call<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

/// A plain string, `null` (an assistant message that only calls tools), or content parts.
#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(&'a str),
    Null,
    Parts(Vec<Part<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: Url },
}

#[derive(Serialize)]
struct Url {
    url: String,
}

#[derive(Serialize)]
struct Call<'a> {
    id: &'a str,
    r#type: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    arguments: &'a str,
}

/// Request body in the chat-completions format.
pub(super) fn request_body(req: &ChatRequest) -> Body<'_> {
    Body {
        model: &req.model,
        messages: req.messages.iter().map(message).collect(),
        tools: req
            .tools
            .iter()
            .map(|t| Tool {
                r#type: "function",
                function: t,
            })
            .collect(),
        max_tokens: req.max_output_tokens,
        stream: None,
        stream_options: None,
    }
}

/// The body of a streamed request: the same, with usage reported in a final chunk.
pub(super) fn stream_body(req: &ChatRequest) -> Body<'_> {
    Body {
        stream: Some(true),
        stream_options: Some(StreamOptions {
            include_usage: true,
        }),
        ..request_body(req)
    }
}

fn message(m: &ChatMessage) -> Message<'_> {
    let calls = m.role == Role::Assistant && !m.tool_calls.is_empty();
    Message {
        role: m.role.as_str(),
        content: if calls && m.content.is_empty() {
            Content::Null
        } else {
            content(m)
        },
        tool_calls: if calls {
            m.tool_calls.iter().map(call).collect()
        } else {
            Vec::new()
        },
        tool_call_id: m.tool_call_id.as_deref(),
    }
}

fn call(c: &ToolCall) -> Call<'_> {
    Call {
        id: &c.id,
        r#type: "function",
        function: Function {
            name: &c.name,
            arguments: &c.arguments,
        },
    }
}

/// A plain string, or for a user message with images an array of parts: the text first, then
/// each image as a `data:` URL.
fn content(m: &ChatMessage) -> Content<'_> {
    if m.images.is_empty() || m.role != Role::User {
        return Content::Text(&m.content);
    }
    let mut parts = vec![Part::Text { text: &m.content }];
    parts.extend(m.images.iter().map(|i| Part::ImageUrl {
        image_url: Url {
            url: format!("data:{};base64,{}", i.mime, i.base64),
        },
    }));
    Content::Parts(parts)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::llm::Image;

    fn request_body(r: &ChatRequest) -> Value {
        serde_json::to_value(super::request_body(r)).unwrap()
    }

    fn stream_body(r: &ChatRequest) -> Value {
        serde_json::to_value(super::stream_body(r)).unwrap()
    }

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
