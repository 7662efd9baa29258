//! Language model providers behind one trait, with retries that honour `Retry-After`.

mod openai;
mod retry;
mod types;

use std::time::Duration;

use async_trait::async_trait;

pub use openai::OpenAiProvider;
pub use retry::{RetryPolicy, complete_with_retry};
pub use types::{
    ChatMessage, ChatRequest, ChatResponse, FinishReason, Role, ToolCall, ToolSchema, Usage,
};

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

/// A chat-completions capable model provider.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Short name for logs and `/status` (`openai-compatible @ host`).
    fn describe(&self) -> String;

    /// One model call, no retries.
    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError>;

    /// Cheap reachability check for `hermes doctor` (lists models or similar).
    async fn probe(&self) -> Result<String, LlmError>;
}
