//! OpenAI-compatible chat completions (`POST {base}/chat/completions`): OpenAI, OpenRouter,
//! Ollama, vLLM, llama.cpp, DeepSeek, GLM, Kimi… selected by base URL. Plain and streamed
//! (`"stream": true`, server-sent events) answers.

mod request;
mod response;
mod stream;

use async_trait::async_trait;
use serde_json::Value;

use super::http;
use super::limit::{self, Concurrency};
use super::{ChatRequest, ChatResponse, DeltaSink, LlmError, Provider, ProviderSettings};
use crate::config::Secret;

/// A provider speaking the OpenAI chat-completions protocol.
pub struct OpenAiProvider {
    http: reqwest::Client,
    base_url: String,
    key: Secret,
    /// How many calls per model run at once.
    concurrency: Concurrency,
}

impl OpenAiProvider {
    pub fn new(settings: &ProviderSettings) -> Result<Self, LlmError> {
        Ok(OpenAiProvider {
            http: settings.http_client()?,
            base_url: settings.base_url.trim_end_matches('/').to_owned(),
            key: settings.api_key.clone(),
            concurrency: settings.concurrency,
        })
    }

    fn authorized(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if self.key.is_empty() {
            req
        } else {
            req.bearer_auth(self.key.expose())
        }
    }

    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.authorized(self.http.post(format!("{}{path}", self.base_url)))
    }

    async fn complete_now(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let body = request::request_body(req);
        let resp = http::send(&self.key, self.post("/chat/completions").json(&body)).await?;
        response::parse_completion(&http::text(&self.key, resp).await?)
    }

    async fn stream_now(
        &self,
        req: &ChatRequest,
        deltas: &DeltaSink,
    ) -> Result<ChatResponse, LlmError> {
        let body = request::stream_body(req);
        let resp = http::send(&self.key, self.post("/chat/completions").json(&body)).await?;
        if is_json(&resp) {
            let answer = response::parse_completion(&http::text(&self.key, resp).await?)?;
            if !answer.content.is_empty() {
                let _ = deltas.send(answer.content.clone());
            }
            return Ok(answer);
        }
        let mut state = stream::StreamState::default();
        http::read_stream(&self.key, resp, |event| state.on_event(event, deltas)).await?;
        state.finish()
    }
}

/// Whether a response is one JSON document rather than an event stream (servers that ignore
/// `"stream": true` answer that way).
fn is_json(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
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
        let call = self.complete_now(req);
        limit::within(&self.base_url, &req.model, self.concurrency, call).await
    }

    async fn stream(
        &self,
        req: &ChatRequest,
        deltas: &DeltaSink,
    ) -> Result<ChatResponse, LlmError> {
        let call = self.stream_now(req, deltas);
        limit::within(&self.base_url, &req.model, self.concurrency, call).await
    }

    async fn probe(&self) -> Result<String, LlmError> {
        let req = self.authorized(self.http.get(format!("{}/models", self.base_url)));
        let resp = http::send(&self.key, req).await?;
        let body = http::text(&self.key, resp).await?;
        let count = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| v.get("data").and_then(Value::as_array).map(Vec::len));
        Ok(match count {
            Some(n) => format!("{} answers ({n} models listed)", self.describe()),
            None => format!("{} answers", self.describe()),
        })
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        let req = self.authorized(self.http.get(format!("{}/models", self.base_url)));
        let resp = http::send(&self.key, req).await?;
        super::model_ids(&http::text(&self.key, resp).await?)
    }
}
