//! Language model providers behind one trait, with retries that honour `Retry-After`.
//!
//! Two wire protocols: OpenAI-compatible chat completions (`openai`) and the Anthropic Messages
//! API (`anthropic`), both plain and streamed. [`build`] picks one from the configured
//! [`ProviderKind`](crate::config::ProviderKind).

mod anthropic;
mod http;
pub mod limit;
mod openai;
mod retry;
mod sse;
mod transcribe;
mod types;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

pub use anthropic::AnthropicProvider;
/// Reading `Retry-After` and a service's own error message, for the tools' API clients too.
pub(crate) use http::{error_message, retry_after};
pub use openai::OpenAiProvider;
pub use transcribe::Transcriber;

pub use crate::conversation::{ChatMessage, Image, Role, ToolCall, Usage};
pub use retry::{RetryPolicy, call_with_retry, complete_with_retry};
pub use types::{ChatRequest, ChatResponse, FinishReason, ToolSchema};

/// Where a streaming call sends the answer's text as it arrives (text deltas, in order). Two
/// values are signals, not text: [`DELTA_RESET`] (an attempt failed; discard what it sent) and
/// [`DELTA_SEGMENT_END`] (the text so far led to tool calls; what follows is a new message).
pub type DeltaSink = tokio::sync::mpsc::UnboundedSender<String>;

/// Signal on a [`DeltaSink`]: discard the text of the current attempt.
pub const DELTA_RESET: &str = "";
/// Signal on a [`DeltaSink`]: the current message is complete; a new one follows.
pub const DELTA_SEGMENT_END: &str = "\u{0}";

/// Why a model call failed. Messages are safe to show to users and logs: no keys, no bodies.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// 429: the provider asked us to slow down.
    #[error("the model provider is rate limiting us")]
    RateLimited { retry_after: Option<Duration> },
    /// 5xx, overloaded, connection failure.
    #[error("the model provider is unavailable: {0}")]
    Unavailable(String),
    /// The request took longer than the configured timeout.
    #[error("the model provider did not answer in time")]
    Timeout,
    /// 401/403: the key is wrong or lacks access.
    #[error("the model provider rejected the credentials: {0}")]
    Unauthorized(String),
    /// Any other 4xx: the request itself is wrong (unknown model, context too long…).
    #[error("the model provider rejected the request: {0}")]
    Rejected(String),
    /// The answer could not be understood.
    #[error("the model provider sent an answer hermes cannot read: {0}")]
    Malformed(String),
}

impl LlmError {
    /// The failure's kind, as metrics and logs name it.
    pub fn kind(&self) -> &'static str {
        match self {
            LlmError::RateLimited { .. } => "rate_limited",
            LlmError::Unavailable(_) => "unavailable",
            LlmError::Timeout => "timeout",
            LlmError::Unauthorized(_) => "unauthorized",
            LlmError::Rejected(_) => "rejected",
            LlmError::Malformed(_) => "malformed",
        }
    }

    /// Whether retrying the same request may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Unavailable(_)
                | LlmError::Timeout
                | LlmError::Malformed(_)
        )
    }
}

/// How to reach one provider endpoint.
#[derive(Debug, Clone)]
pub struct ProviderSettings {
    /// Base URL up to and including `/v1`.
    pub base_url: String,
    pub api_key: crate::config::Secret,
    /// Whole-request timeout (a streamed answer may take this long in total).
    pub timeout: Duration,
    /// Requests in flight at once, per model.
    pub concurrency: limit::Concurrency,
}

impl ProviderSettings {
    /// Connection settings of the main provider a configuration names.
    pub fn from_config(c: &crate::config::LlmConfig) -> Self {
        ProviderSettings {
            base_url: c.base_url.clone(),
            api_key: c.api_key.clone(),
            timeout: Duration::from_secs(c.request_timeout_secs),
            concurrency: limit::Concurrency::from_config(c.max_concurrent_requests),
        }
    }

    /// The HTTP client every provider uses: rustls, the timeouts, a user agent.
    pub fn http_client(&self) -> Result<reqwest::Client, LlmError> {
        reqwest::Client::builder()
            .timeout(self.timeout)
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("hermes/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Unavailable(format!("cannot build the HTTP client: {e}")))
    }
}

/// A chat-completions capable model provider.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Short name for logs and `/status` (`openai-compatible @ host`).
    fn describe(&self) -> String;

    /// One model call, no retries.
    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError>;

    /// One model call that also sends the answer's text to `deltas` as it arrives. The returned
    /// response is complete (text, tool calls, usage). Providers without streaming send the
    /// whole text once.
    async fn stream(
        &self,
        req: &ChatRequest,
        deltas: &DeltaSink,
    ) -> Result<ChatResponse, LlmError> {
        let resp = self.complete(req).await?;
        if !resp.content.is_empty() {
            let _ = deltas.send(resp.content.clone());
        }
        Ok(resp)
    }

    /// Cheap reachability check for `hermes doctor` (lists models or similar).
    async fn probe(&self) -> Result<String, LlmError>;

    /// The model ids the provider offers this key (`GET {base}/models`), sorted; empty when
    /// the endpoint keeps no list. `hermes setup` verifies a key with it and offers the list.
    async fn models(&self) -> Result<Vec<String>, LlmError> {
        Ok(Vec::new())
    }
}

/// The `id`s of a `/models` answer (`{"data": [{"id": …}, …]}`, the shape OpenAI-compatible
/// servers and Anthropic share), sorted and without repeats.
pub(crate) fn model_ids(body: &str) -> Result<Vec<String>, LlmError> {
    let value: serde_json::Value = serde_json::from_str(body)
        .map_err(|e| LlmError::Malformed(format!("the model list is not JSON: {e}")))?;
    let mut ids: Vec<String> = value
        .get("data")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| LlmError::Malformed("the model list has no `data` array".into()))?
        .iter()
        .filter_map(|m| m.get("id")?.as_str().map(str::to_owned))
        .collect();
    ids.sort();
    ids.dedup();
    Ok(ids)
}

/// The provider for `kind`, reached with `settings`.
///
/// ```no_run
/// # fn main() -> Result<(), hermes::llm::LlmError> {
/// use hermes::config::{ProviderKind, Secret};
/// use hermes::llm::{ProviderSettings, build};
///
/// let settings = ProviderSettings {
///     base_url: ProviderKind::Anthropic.default_base_url().into(),
///     api_key: Secret::new("sk-ant-…"),
///     timeout: std::time::Duration::from_secs(120),
///     concurrency: hermes::llm::limit::Concurrency::Adaptive,
/// };
/// let provider = build(ProviderKind::Anthropic, &settings)?;
/// assert!(provider.describe().starts_with("anthropic @"));
/// # Ok(())
/// # }
/// ```
pub fn build(
    kind: crate::config::ProviderKind,
    settings: &ProviderSettings,
) -> Result<Arc<dyn Provider>, LlmError> {
    use crate::config::ProviderKind;
    Ok(match kind {
        ProviderKind::Openai => Arc::new(OpenAiProvider::new(settings)?),
        ProviderKind::Anthropic => Arc::new(AnthropicProvider::new(settings)?),
    })
}
