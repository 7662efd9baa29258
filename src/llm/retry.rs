//! Retrying model calls: exponential backoff with jitter, honouring the provider's
//! `Retry-After`, bounded in attempts and in how long one wait may be.

use std::time::Duration;

use super::{ChatRequest, ChatResponse, DeltaSink, LlmError, Provider};

/// How often and how long to retry.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff; doubled each retry.
    pub base_delay: Duration,
    /// A `Retry-After` longer than this is not waited out: the call fails at once.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    fn backoff(&self, retry: u32) -> Duration {
        let exp = self.base_delay.saturating_mul(1 << retry.min(10));
        // Up to 25% jitter so many sessions do not retry in lockstep.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let jitter = exp.mul_f64(f64::from(nanos % 1000) / 4000.0);
        (exp + jitter).min(self.max_delay)
    }
}

/// Call the provider, retrying retryable failures per `policy`.
pub async fn complete_with_retry(
    provider: &dyn Provider,
    req: &ChatRequest,
    policy: RetryPolicy,
) -> Result<ChatResponse, LlmError> {
    call_with_retry(provider, req, policy, None, &|_| {}).await
}

/// Call the provider (streaming the text to `deltas` when given), retrying retryable failures
/// per `policy`. `on_retry` hears about each failure that is retried. Before a streamed retry an
/// empty delta is sent: whoever shows the text must discard what the failed attempt sent.
pub async fn call_with_retry(
    provider: &dyn Provider,
    req: &ChatRequest,
    policy: RetryPolicy,
    deltas: Option<&DeltaSink>,
    on_retry: &(dyn Fn(&LlmError) + Sync),
) -> Result<ChatResponse, LlmError> {
    let mut retry = 0;
    loop {
        let attempt = match deltas {
            Some(d) => provider.stream(req, d).await,
            None => provider.complete(req).await,
        };
        match attempt {
            Ok(resp) => return Ok(resp),
            Err(err) if err.is_retryable() && retry < policy.max_retries => {
                let wait = match &err {
                    LlmError::RateLimited {
                        retry_after: Some(after),
                    } => {
                        if *after > policy.max_delay {
                            return Err(err);
                        }
                        *after
                    }
                    _ => policy.backoff(retry),
                };
                tracing::warn!(error = %err, retry = retry + 1, wait_ms = wait.as_millis() as u64, "model call failed; retrying");
                on_retry(&err);
                if let Some(d) = deltas {
                    let _ = d.send(super::DELTA_RESET.to_owned());
                }
                tokio::time::sleep(wait).await;
                retry += 1;
            }
            Err(err) => return Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;

    use super::*;
    use crate::llm::{FinishReason, Usage};

    struct Scripted(Mutex<Vec<Result<ChatResponse, LlmError>>>);

    #[async_trait]
    impl Provider for Scripted {
        fn describe(&self) -> String {
            "scripted".into()
        }
        async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
            self.0.lock().unwrap().remove(0)
        }
        async fn probe(&self) -> Result<String, LlmError> {
            Ok(String::new())
        }
    }

    fn ok() -> Result<ChatResponse, LlmError> {
        Ok(ChatResponse {
            content: "fine".into(),
            tool_calls: vec![],
            finish: FinishReason::Stop,
            usage: Usage::default(),
            model: "m".into(),
        })
    }

    fn req() -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![],
            tools: vec![],
            max_output_tokens: None,
        }
    }

    fn fast() -> RetryPolicy {
        RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_secs(5),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn retries_honour_retry_after() {
        let p = Scripted(Mutex::new(vec![
            Err(LlmError::RateLimited {
                retry_after: Some(Duration::from_secs(3)),
            }),
            ok(),
        ]));
        let start = tokio::time::Instant::now();
        assert_eq!(
            complete_with_retry(&p, &req(), fast())
                .await
                .unwrap()
                .content,
            "fine"
        );
        assert!(start.elapsed() >= Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_after_the_budget_and_on_permanent_errors() {
        let p = Scripted(Mutex::new(vec![
            Err(LlmError::Unavailable("500".into())),
            Err(LlmError::Unavailable("500".into())),
            Err(LlmError::Unavailable("502".into())),
            ok(),
        ]));
        assert_eq!(
            complete_with_retry(&p, &req(), fast()).await.unwrap_err(),
            LlmError::Unavailable("502".into())
        );
        let p = Scripted(Mutex::new(vec![
            Err(LlmError::Unauthorized("bad key".into())),
            ok(),
        ]));
        assert!(matches!(
            complete_with_retry(&p, &req(), fast()).await,
            Err(LlmError::Unauthorized(_))
        ));
        let p = Scripted(Mutex::new(vec![
            Err(LlmError::RateLimited {
                retry_after: Some(Duration::from_secs(600)),
            }),
            ok(),
        ]));
        assert!(matches!(
            complete_with_retry(&p, &req(), fast()).await,
            Err(LlmError::RateLimited { .. })
        ));
    }
}
