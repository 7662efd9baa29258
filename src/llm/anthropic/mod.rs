//! Anthropic Messages API (`POST {base}/messages`, base ending in `/v1`): Claude models with
//! prompt caching, plain and streamed (server-sent events) answers.
//!
//! Requests are mapped in `request` (alternating turns, tool blocks, cache breakpoints),
//! answers parsed in `response` and assembled from streams in `stream`. Transport, error
//! classification and SSE framing are shared with the OpenAI-compatible provider.

mod request;
mod response;
mod stream;

use async_trait::async_trait;
use reqwest::StatusCode;
use serde_json::Value;

use super::http;
use super::limit::{self, Concurrency};
use super::{ChatRequest, ChatResponse, DeltaSink, LlmError, Provider, ProviderSettings};
use crate::config::Secret;

/// The API version hermes speaks (`anthropic-version` header).
const API_VERSION: &str = "2023-06-01";

/// A provider speaking the Anthropic Messages API.
pub struct AnthropicProvider {
    http: reqwest::Client,
    base_url: String,
    key: Secret,
    /// How many calls per model run at once.
    concurrency: Concurrency,
}

impl AnthropicProvider {
    pub fn new(settings: &ProviderSettings) -> Result<Self, LlmError> {
        Ok(AnthropicProvider {
            http: settings.http_client()?,
            base_url: settings.base_url.trim_end_matches('/').to_owned(),
            key: settings.api_key.clone(),
            concurrency: settings.concurrency,
        })
    }

    fn headers(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let req = req.header("anthropic-version", API_VERSION);
        if self.key.is_empty() {
            req
        } else {
            req.header("x-api-key", self.key.expose())
        }
    }

    async fn post_messages(&self, body: &Value) -> Result<reqwest::Response, LlmError> {
        let url = format!("{}/messages", self.base_url);
        http::send(&self.key, self.headers(self.http.post(url)).json(body)).await
    }

    async fn complete_now(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let resp = self.post_messages(&request::request_body(req)).await?;
        response::parse_message(&http::text(&self.key, resp).await?)
    }

    async fn stream_now(
        &self,
        req: &ChatRequest,
        deltas: &DeltaSink,
    ) -> Result<ChatResponse, LlmError> {
        let resp = self.post_messages(&request::stream_body(req)).await?;
        let mut state = stream::StreamState::default();
        http::read_stream(&self.key, resp, |event| state.on_event(event, deltas)).await?;
        state.finish()
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn describe(&self) -> String {
        let host = reqwest::Url::parse(&self.base_url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        format!("anthropic @ {host}")
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

    /// `GET /v1/models`. A proxy without that endpoint answers 404, which still proves the
    /// server is there.
    async fn probe(&self) -> Result<String, LlmError> {
        let Some(body) = self.model_list().await? else {
            return Ok(format!("{} answers (no model list)", self.describe()));
        };
        let count = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| v.get("data").and_then(Value::as_array).map(Vec::len));
        Ok(match count {
            Some(n) => format!("{} answers ({n} models listed)", self.describe()),
            None => format!("{} answers", self.describe()),
        })
    }

    /// A proxy without the endpoint (404) keeps no list: empty.
    async fn models(&self) -> Result<Vec<String>, LlmError> {
        match self.model_list().await? {
            Some(body) => super::model_ids(&body),
            None => Ok(Vec::new()),
        }
    }
}

impl AnthropicProvider {
    /// The body of `GET /v1/models`; `None` when the server has no such endpoint (404).
    async fn model_list(&self) -> Result<Option<String>, LlmError> {
        let req = self.headers(self.http.get(format!("{}/models", self.base_url)));
        let resp = req
            .send()
            .await
            .map_err(|e| http::network_error(&self.key, &e))?;
        if resp.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let resp = http::check(&self.key, resp).await?;
        http::text(&self.key, resp).await.map(Some)
    }
}
