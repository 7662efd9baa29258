//! OpenAI-compatible chat completions (`POST {base}/chat/completions`): OpenAI, OpenRouter,
//! Ollama, vLLM, llama.cpp, DeepSeek, GLM, Kimi… selected by base URL.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::ProviderSettings;
use super::{ChatRequest, ChatResponse, FinishReason, LlmError, Provider, Role, ToolCall, Usage};
use crate::config::Secret;

/// A provider speaking the OpenAI chat-completions protocol.
pub struct OpenAiProvider {
    http: reqwest::Client,
    base_url: String,
    key: Secret,
    /// Caps requests in flight across all sessions.
    permits: Semaphore,
}

impl OpenAiProvider {
    pub fn new(settings: &ProviderSettings) -> Result<Self, LlmError> {
        Ok(OpenAiProvider {
            http: settings.http_client()?,
            base_url: settings.base_url.trim_end_matches('/').to_owned(),
            key: settings.api_key.clone(),
            permits: Semaphore::new(settings.max_concurrent_requests.max(1)),
        })
    }

    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        let req = self.http.post(format!("{}{path}", self.base_url));
        if self.key.is_empty() {
            req
        } else {
            req.bearer_auth(self.key.expose())
        }
    }

    fn network_error(&self, e: &reqwest::Error) -> LlmError {
        if e.is_timeout() {
            LlmError::Timeout
        } else {
            // reqwest errors carry the URL, never the headers; scrub anyway.
            LlmError::Unavailable(self.key.scrub(&without_url(e)))
        }
    }
}

fn without_url(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    if let Some(url) = e.url() {
        text = text.replace(url.as_str(), url.host_str().unwrap_or("provider"));
    }
    text
}

/// Request body in the chat-completions format.
pub(crate) fn request_body(req: &ChatRequest) -> Value {
    let messages: Vec<Value> = req
        .messages
        .iter()
        .map(|m| {
            let mut v = json!({ "role": m.role.as_str(), "content": m.content });
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
        })
        .collect();
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

#[derive(Deserialize)]
struct WireUsage {
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

/// Parse a successful chat-completions body.
pub(crate) fn parse_completion(body: &str) -> Result<ChatResponse, LlmError> {
    let c: Completion =
        serde_json::from_str(body).map_err(|e| LlmError::Malformed(e.to_string()))?;
    let choice = c
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| LlmError::Malformed("no choices in the answer".into()))?;
    let finish = match choice.finish_reason.as_deref() {
        None | Some("stop") => FinishReason::Stop,
        Some("tool_calls") | Some("function_call") => FinishReason::ToolCalls,
        Some("length") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    };
    let usage = c.usage.map_or(Usage::default(), |u| Usage {
        prompt_tokens: u.prompt_tokens,
        completion_tokens: u.completion_tokens,
        cached_tokens: u.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
        cache_write_tokens: 0,
    });
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
        finish,
        usage,
        model: c.model,
    })
}

/// The provider's own error message from an error body, shortened.
fn error_message(body: &str) -> String {
    let v: Option<Value> = serde_json::from_str(body).ok();
    let msg = v
        .as_ref()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("error"))
                .or_else(|| v.get("message"))
        })
        .and_then(|m| m.as_str().map(str::to_owned))
        .unwrap_or_else(|| body.chars().take(200).collect());
    msg.chars().take(300).collect()
}

fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let v = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let secs: f64 = v.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

pub(crate) fn classify(
    status: StatusCode,
    headers: &reqwest::header::HeaderMap,
    body: &str,
) -> LlmError {
    let msg = format!("HTTP {}: {}", status.as_u16(), error_message(body));
    match status.as_u16() {
        429 => LlmError::RateLimited {
            retry_after: retry_after(headers),
        },
        401 | 403 => LlmError::Unauthorized(msg),
        408 => LlmError::Timeout,
        500..=599 => LlmError::Unavailable(msg),
        _ => LlmError::Rejected(msg),
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn describe(&self) -> String {
        let host = reqwest::Url::parse(&self.base_url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        format!("openai-compatible @ {host}")
    }

    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| LlmError::Unavailable("shutting down".into()))?;
        let resp = self
            .post("/chat/completions")
            .json(&request_body(req))
            .send()
            .await
            .map_err(|e| self.network_error(&e))?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = resp.text().await.map_err(|e| self.network_error(&e))?;
        if !status.is_success() {
            return Err(classify(status, &headers, &self.key.scrub(&body)));
        }
        parse_completion(&body)
    }

    async fn probe(&self) -> Result<String, LlmError> {
        let mut req = self.http.get(format!("{}/models", self.base_url));
        if !self.key.is_empty() {
            req = req.bearer_auth(self.key.expose());
        }
        let resp = req.send().await.map_err(|e| self.network_error(&e))?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = resp.text().await.map_err(|e| self.network_error(&e))?;
        if !status.is_success() {
            return Err(classify(status, &headers, &self.key.scrub(&body)));
        }
        let count = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| v.get("data").and_then(Value::as_array).map(Vec::len));
        Ok(match count {
            Some(n) => format!("{} answers ({n} models listed)", self.describe()),
            None => format!("{} answers", self.describe()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ChatMessage, ToolSchema};

    #[test]
    fn request_carries_tool_calls_and_results() {
        let call = ToolCall {
            id: "c1".into(),
            name: "current_time".into(),
            arguments: "{\"timezone\":\"UTC\"}".into(),
        };
        let mut asked = ChatMessage::assistant("");
        asked.tool_calls = vec![call.clone()];
        let req = ChatRequest {
            model: "m".into(),
            messages: vec![
                ChatMessage::user("time?"),
                asked,
                ChatMessage::tool_result(&call, "noon"),
            ],
            tools: vec![ToolSchema {
                name: "current_time".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
            max_output_tokens: Some(100),
        };
        let body = request_body(&req);
        assert_eq!(body["messages"][1]["content"], Value::Null);
        assert_eq!(
            body["messages"][1]["tool_calls"][0]["function"]["name"],
            "current_time"
        );
        assert_eq!(body["messages"][2]["tool_call_id"], "c1");
        assert_eq!(body["tools"][0]["function"]["name"], "current_time");
        assert_eq!(body["max_tokens"], 100);
    }

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
    fn errors_are_classified() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert(reqwest::header::RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(
            classify(StatusCode::TOO_MANY_REQUESTS, &h, "{}"),
            LlmError::RateLimited {
                retry_after: Some(Duration::from_secs(2))
            }
        );
        let none = reqwest::header::HeaderMap::new();
        let e = classify(
            StatusCode::BAD_REQUEST,
            &none,
            r#"{"error":{"message":"unknown model"}}"#,
        );
        assert_eq!(e, LlmError::Rejected("HTTP 400: unknown model".into()));
        assert!(matches!(
            classify(StatusCode::UNAUTHORIZED, &none, ""),
            LlmError::Unauthorized(_)
        ));
        assert!(matches!(
            classify(StatusCode::BAD_GATEWAY, &none, "<html>"),
            LlmError::Unavailable(_)
        ));
    }
}
