//! The `[llm]` section: which provider, which models, fallbacks and prices.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use super::Secret;
use super::validate::check_http_url;

/// Which API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp, …).
    #[default]
    Openai,
    /// Anthropic Messages API.
    Anthropic,
}

impl ProviderKind {
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::Openai => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com/v1",
        }
    }
}

/// Another provider tried when the main one keeps failing.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FallbackConfig {
    #[serde(default)]
    pub provider: ProviderKind,
    /// Default: the provider kind's public endpoint.
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub api_key: Secret,
    /// Environment variable holding the key (instead of `api_key` in the file).
    #[serde(default)]
    pub api_key_env: Option<String>,
    pub model: String,
}

/// Prices of a model in US dollars per million tokens, for `/usage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cache_read: Option<f64>,
    #[serde(default)]
    pub cache_write: Option<f64>,
}

/// The language model provider.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// `openai` (any OpenAI-compatible API) or `anthropic`.
    pub provider: ProviderKind,
    /// Base URL of the API, up to and including `/v1`. Env: `OPENAI_BASE_URL`.
    pub base_url: String,
    /// API key. Env: `OPENAI_API_KEY` (`ANTHROPIC_API_KEY` for anthropic).
    pub api_key: Secret,
    /// Model name. Env: `HERMES_MODEL`.
    pub model: String,
    /// Whole-request timeout.
    pub request_timeout_secs: u64,
    /// Retries after a 429, 5xx or network failure, honouring `Retry-After`.
    pub max_retries: u32,
    /// Model calls in flight at once, per model, across all sessions. Unset (the default): a
    /// limit that follows the provider's answers (halved on 429/overload, grown on success).
    pub max_concurrent_requests: Option<usize>,
    /// Upper bound on tokens the model may write in one response (unset: provider default;
    /// Anthropic requires one and gets 8192).
    pub max_output_tokens: Option<u32>,
    /// Model that writes summaries when a long conversation is compressed (default: `model`).
    pub auxiliary_model: Option<String>,
    /// The model's context window in tokens; history is compressed at half of it.
    pub context_window: u64,
    /// Stream answers into the chat as they are written (one message, edited ~once a second).
    pub streaming: bool,
    /// The model accepts images: photos users send are passed to it.
    pub vision: bool,
    /// Other models `/model` may switch a session to (same provider).
    pub models: Vec<String>,
    /// Providers tried in order when the main one keeps failing.
    pub fallback: Vec<FallbackConfig>,
    /// Prices per model for `/usage` (`[llm.prices."gpt-4o-mini"] input = 0.15 output = 0.6`).
    pub prices: HashMap<String, Price>,
    #[serde(skip)]
    pub(crate) base_url_explicit: bool,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            provider: ProviderKind::Openai,
            base_url: ProviderKind::Openai.default_base_url().into(),
            api_key: Secret::default(),
            model: "gpt-4o-mini".into(),
            request_timeout_secs: 120,
            max_retries: 3,
            max_concurrent_requests: None,
            max_output_tokens: None,
            auxiliary_model: None,
            context_window: 128_000,
            streaming: false,
            vision: false,
            models: Vec::new(),
            fallback: Vec::new(),
            prices: HashMap::new(),
            base_url_explicit: false,
        }
    }
}

impl LlmConfig {
    /// Checks the types cannot express, with errors that name the key.
    pub(super) fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        let bad = |key: &str, problem: String| Err(ConfigError::invalid(file, key, problem));
        check_http_url(&self.base_url).or_else(|p| bad("llm.base_url", p))?;
        for (i, f) in self.fallback.iter().enumerate() {
            if let Some(url) = &f.base_url {
                check_http_url(url).or_else(|p| bad(&format!("llm.fallback[{i}].base_url"), p))?;
            }
            if f.model.trim().is_empty() {
                return bad(
                    &format!("llm.fallback[{i}].model"),
                    "must not be empty".into(),
                );
            }
        }
        if self.model.trim().is_empty() {
            return bad(
                "llm.model",
                "must not be empty (for example \"gpt-4o-mini\")".into(),
            );
        }
        if self.max_concurrent_requests == Some(0) {
            return bad("llm.max_concurrent_requests", "must be at least 1".into());
        }
        Ok(())
    }

    /// A provider is configured when there is a key, or a base URL was set explicitly (local
    /// servers such as Ollama or llama.cpp need no key).
    pub fn is_configured(&self) -> bool {
        !self.api_key.is_empty() || self.base_url_explicit
    }
}
