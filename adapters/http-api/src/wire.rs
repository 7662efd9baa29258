//! The bodies of the OpenAI API as far as hermes speaks it: a chat completion request, its
//! answer whole or as `chat.completion.chunk` events, the model list, and errors in OpenAI's
//! shape (`{"error": {"message", "type", "code"}}`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hermes_adapter::TokenUsage;
use serde::Deserialize;
use serde_json::{Value, json};

/// `POST /v1/chat/completions`, the fields hermes reads (others are accepted and ignored).
#[derive(Debug, Deserialize)]
pub(crate) struct ChatRequest {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    #[serde(default)]
    pub stream: bool,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// Names the conversation (server-side history) unless `X-Hermes-Session` does.
    #[serde(default)]
    pub user: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ChatMessage {
    pub role: String,
    #[serde(default)]
    pub content: Option<Value>,
}

impl ChatMessage {
    /// The text of the content: a string, or the text parts of a list.
    pub fn text(&self) -> String {
        match &self.content {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }
}

/// An error as OpenAI sends it.
pub(crate) struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub kind: &'static str,
    pub code: Option<&'static str>,
    /// Seconds for a `Retry-After` header.
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            kind,
            code: None,
            retry_after: None,
        }
    }

    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    pub fn code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
    }

    pub fn body(&self) -> Value {
        json!({"error": {"message": self.message, "type": self.kind, "code": self.code, "param": null}})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}

pub(crate) fn usage(u: Option<TokenUsage>) -> Value {
    let u = u.unwrap_or_default();
    json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
    })
}

/// The whole answer.
pub(crate) fn completion(
    id: &str,
    created: i64,
    model: &str,
    text: &str,
    u: Option<TokenUsage>,
) -> Value {
    json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "logprobs": null,
            "finish_reason": "stop",
        }],
        "usage": usage(u),
    })
}

/// One streamed event: `delta` (and `finish_reason` on the last).
pub(crate) fn chunk(
    id: &str,
    created: i64,
    model: &str,
    delta: Value,
    finish: Option<&str>,
) -> Value {
    json!({
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
    })
}

/// The usage event after the last chunk (`stream_options.include_usage`).
pub(crate) fn usage_chunk(id: &str, created: i64, model: &str, u: Option<TokenUsage>) -> Value {
    json!({
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [],
        "usage": usage(u),
    })
}

/// `GET /v1/models`.
pub(crate) fn models(names: &[String]) -> Value {
    let data: Vec<Value> = names
        .iter()
        .map(|n| json!({"id": n, "object": "model", "created": 0, "owned_by": "hermes"}))
        .collect();
    json!({"object": "list", "data": data})
}
