//! Calling the model: the configured provider with retries, then each fallback in turn, with
//! one short note to the user when the answer is going to be late.

use std::sync::Arc;

use super::Agent;
use crate::config::Config;
use crate::llm::{self, ChatRequest, ChatResponse, DeltaSink, LlmError, Provider, call_with_retry};

/// A provider tried after the main one, with its own model.
pub(crate) struct Fallback {
    pub provider: Arc<dyn Provider>,
    pub model: String,
}

/// The fallbacks `config` names; ones that cannot be built are reported and skipped.
pub(crate) fn fallbacks(config: &Config) -> Vec<Fallback> {
    config
        .llm
        .fallback
        .iter()
        .filter_map(|f| {
            let settings = llm::ProviderSettings {
                base_url: f.base_url.clone().unwrap_or_else(|| f.provider.default_base_url().to_owned()),
                api_key: f.api_key.clone(),
                timeout: std::time::Duration::from_secs(config.llm.request_timeout_secs),
                concurrency: llm::limit::Concurrency::from_config(config.llm.max_concurrent_requests),
            };
            match llm::build(f.provider, &settings) {
                Ok(provider) => Some(Fallback {
                    provider,
                    model: f.model.clone(),
                }),
                Err(e) => {
                    tracing::error!(model = %f.model, error = %e, "fallback provider unusable; skipped");
                    None
                }
            }
        })
        .collect()
}

/// Failures worth trying another provider for (not: a request the provider found wrong).
fn fail_over(e: &LlmError) -> bool {
    !matches!(e, LlmError::Rejected(_))
}

/// The note the user gets, once per turn, when the answer will be late.
pub(crate) const LATE_NOTICE: &str = "⏳ The model provider is slow or failing right now; I'm still trying — the answer may take a little longer.";

impl Agent {
    /// One model call through the provider chain. `late` is called when a retry or a fallback
    /// means the answer will take longer than usual.
    pub(crate) async fn call_model(
        &self,
        request: &ChatRequest,
        deltas: Option<&DeltaSink>,
        late: &(dyn Fn() + Sync),
    ) -> Result<ChatResponse, LlmError> {
        let result = self.call_chain(request, deltas, late).await;
        let m = crate::metrics::metrics();
        match &result {
            Ok(r) => m.record_usage(&r.usage),
            Err(e) => m.record_llm_error(e.kind()),
        }
        result
    }

    async fn call_chain(
        &self,
        request: &ChatRequest,
        deltas: Option<&DeltaSink>,
        late: &(dyn Fn() + Sync),
    ) -> Result<ChatResponse, LlmError> {
        let on_retry = |_: &LlmError| late();
        let first = call_with_retry(
            self.provider.as_ref(),
            request,
            self.retry,
            deltas,
            &on_retry,
        )
        .await;
        let mut err = match first {
            Ok(r) => return Ok(r),
            Err(e) if fail_over(&e) && !self.fallbacks.is_empty() => e,
            Err(e) => return Err(e),
        };
        for f in &self.fallbacks {
            tracing::warn!(error = %err, fallback = %f.provider.describe(), model = %f.model, "model provider failed; trying the fallback");
            late();
            if let Some(d) = deltas {
                let _ = d.send(llm::DELTA_RESET.to_owned());
            }
            let req = ChatRequest {
                model: f.model.clone(),
                ..request.clone()
            };
            match call_with_retry(f.provider.as_ref(), &req, self.retry, deltas, &on_retry).await {
                Ok(r) => return Ok(r),
                Err(e) if fail_over(&e) => err = e,
                Err(e) => return Err(e),
            }
        }
        Err(err)
    }
}
