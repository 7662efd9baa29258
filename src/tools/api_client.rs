//! [`ApiClient`]: the JSON client of the keyed third-party APIs that tools call (`web_search`'s
//! search engines, the finance tools' market data).
//!
//! One reqwest client with timeouts and a user agent, and one policy for failures, written for
//! the model that reads them: an HTTP 429 is waited out once when its `Retry-After` (or
//! Finnhub's `X-Ratelimit-Reset`) is short (at most [`MAX_RETRY_WAIT`]), otherwise it is an
//! error saying when to try again; a 5xx answer is retried once; a refused key names the
//! configuration key to fix; an answer that is not the documented JSON says so. The API key
//! travels in a header, and every error text is scrubbed of it all the same.

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::RequestBuilder;
use serde::de::DeserializeOwned;

use super::ToolError;
use super::web_fetch::{describe, read_capped};
use crate::config::Secret;

/// Longest `Retry-After` of a rate-limited answer that is waited out before the one retry; a
/// longer one is an error at once (the model can tell the person when to ask again).
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(5);
/// Pause before retrying a 5xx answer, or a 429 that did not say how long to wait.
const RETRY_PAUSE: Duration = Duration::from_millis(500);
/// Largest answer read; these APIs answer in kilobytes.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// A client of one service.
pub struct ApiClient {
    http: OnceLock<reqwest::Client>,
    /// The service's name in messages ("Finnhub").
    service: &'static str,
    /// The configuration key of its API key, named when the key is refused.
    key_setting: &'static str,
    key: Secret,
    timeout: Duration,
    max_retry_wait: Duration,
}

impl ApiClient {
    pub fn new(
        service: &'static str,
        key_setting: &'static str,
        key: Secret,
        timeout: Duration,
    ) -> Self {
        ApiClient {
            http: OnceLock::new(),
            service,
            key_setting,
            key,
            timeout,
            max_retry_wait: MAX_RETRY_WAIT,
        }
    }

    /// The service's name in messages.
    pub fn service(&self) -> &'static str {
        self.service
    }

    /// The key, for the one header that carries it.
    pub fn key(&self) -> &Secret {
        &self.key
    }

    fn http(&self) -> Result<&reqwest::Client, ToolError> {
        if let Some(client) = self.http.get() {
            return Ok(client);
        }
        let client = reqwest::Client::builder()
            .timeout(self.timeout)
            .connect_timeout(Duration::from_secs(10).min(self.timeout))
            .user_agent(concat!("hermes/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ToolError::Failed(format!("cannot build the HTTP client: {e}")))?;
        Ok(self.http.get_or_init(|| client))
    }

    /// Send the request `build` makes (again for a retry) and decode its JSON answer.
    pub async fn fetch<T: DeserializeOwned>(
        &self,
        build: impl Fn(&reqwest::Client) -> RequestBuilder,
    ) -> Result<T, ToolError> {
        let http = self.http()?;
        let service = self.service;
        let mut retried = false;
        loop {
            let response = build(http)
                .send()
                .await
                .map_err(|e| self.failed(format!("could not reach {service}: {}", describe(&e))))?;
            let status = response.status();
            if status.is_success() {
                let (body, cut) = read_capped(response, MAX_BODY_BYTES).await.map_err(|e| {
                    self.failed(format!(
                        "reading {service}'s answer failed: {}",
                        describe(&e)
                    ))
                })?;
                if cut {
                    return Err(self.failed(format!(
                        "{service} sent an answer larger than {} MiB, which is not what its API \
                         documents; check the configured URL",
                        MAX_BODY_BYTES / 1024 / 1024
                    )));
                }
                return serde_json::from_slice(&body).map_err(|e| {
                    self.failed(format!(
                        "{service} sent an answer that is not the JSON its API documents ({e}); \
                         the service may be having problems, try again later"
                    ))
                });
            }
            let retry_after = crate::llm::retry_after(response.headers())
                .or_else(|| rate_limit_reset(response.headers()));
            let body = response.text().await.unwrap_or_default();
            let message = crate::llm::error_message(&body);
            let code = status.as_u16();
            match code {
                429 => {
                    let wait = retry_after.unwrap_or(RETRY_PAUSE);
                    if !retried && wait <= self.max_retry_wait {
                        tracing::debug!(service, ?wait, "rate limited; waiting once");
                        tokio::time::sleep(wait).await;
                        retried = true;
                        continue;
                    }
                    let when = match retry_after {
                        Some(d) => format!("it asks to wait {} s", d.as_secs_f64().ceil()),
                        None => "it did not say for how long".to_owned(),
                    };
                    return Err(self.failed(format!(
                        "{service} is limiting the rate of requests (HTTP 429; {when}); do not \
                         retry at once: tell the person and try again later"
                    )));
                }
                500..=599 if !retried => {
                    tracing::debug!(service, code, "server error; retrying once");
                    tokio::time::sleep(RETRY_PAUSE).await;
                    retried = true;
                }
                500..=599 => {
                    return Err(self.failed(format!(
                        "{service} is failing (HTTP {code}: {message}), also on a second try; \
                         try again later"
                    )));
                }
                401 => {
                    return Err(self.failed(format!(
                        "{service} refused the API key (HTTP 401: {message}); the operator \
                         must check `{}` in the configuration",
                        self.key_setting
                    )));
                }
                403 => {
                    return Err(self.failed(format!(
                        "{service} refused access (HTTP 403: {message}): the key's plan may not \
                         cover this request, or the key (`{}`) is wrong",
                        self.key_setting
                    )));
                }
                _ => {
                    return Err(self.failed(format!(
                        "{service} refused the request (HTTP {code}: {message})"
                    )));
                }
            }
        }
    }

    /// A failure for the model, with the key masked wherever the text echoes it.
    fn failed(&self, text: String) -> ToolError {
        ToolError::Failed(self.key.scrub(&text))
    }
}

/// The wait until `X-Ratelimit-Reset` (Unix seconds), the header Finnhub sends with a 429
/// instead of `Retry-After`.
fn rate_limit_reset(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let reset: i64 = headers
        .get("x-ratelimit-reset")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let wait = reset.checked_sub(jiff::Timestamp::now().as_second())?;
    Some(Duration::from_secs(wait.clamp(0, 3600) as u64))
}

/// `base` with `params` added to its query string, encoded.
pub fn url_with_query(base: &str, params: &[(&str, &str)]) -> Result<reqwest::Url, ToolError> {
    let mut url = reqwest::Url::parse(base).map_err(|e| {
        ToolError::Failed(format!(
            "the configured API address `{base}` is not a valid URL ({e}); the operator must fix it"
        ))
    })?;
    if !params.is_empty() {
        url.query_pairs_mut().extend_pairs(params);
    }
    Ok(url)
}

/// `ts` as the person reads it, in their time zone: `2026-12-02 10:30:00 EST`.
pub fn local_time(ts: jiff::Timestamp, tz: &jiff::tz::TimeZone) -> String {
    ts.to_zoned_datetime(tz.clone())
        .strftime("%Y-%m-%d %H:%M:%S %Z")
        .to_string()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::Router;
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::get;
    use serde_json::Value;

    use super::*;

    const KEY: &str = "key-abcdef-123456";

    /// A server whose `/x` answers each request with the next of `answers` (the last repeats),
    /// counting requests.
    async fn server(answers: Vec<(u16, &'static str, &'static str)>) -> (String, Arc<AtomicUsize>) {
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        let app = Router::new().route(
            "/x",
            get(move || {
                let n = counter.fetch_add(1, Ordering::SeqCst);
                let (status, retry_after, body) = answers[n.min(answers.len() - 1)];
                async move {
                    let mut headers = HeaderMap::new();
                    if !retry_after.is_empty() {
                        headers.insert("retry-after", retry_after.parse().unwrap());
                    }
                    (StatusCode::from_u16(status).unwrap(), headers, body)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (format!("http://{addr}/x"), hits)
    }

    fn client() -> ApiClient {
        ApiClient::new(
            "Example",
            "tools.example.api_key",
            Secret::new(KEY),
            Duration::from_secs(5),
        )
    }

    async fn get_from(url: &str) -> Result<Value, ToolError> {
        client().fetch(|http| http.get(url)).await
    }

    #[tokio::test]
    async fn a_short_retry_after_is_waited_out_once() {
        let (url, hits) = server(vec![(429, "1", "slow down"), (200, "", r#"{"ok":1}"#)]).await;
        let started = std::time::Instant::now();
        assert_eq!(get_from(&url).await.unwrap()["ok"], 1);
        assert_eq!(hits.load(Ordering::SeqCst), 2);
        assert!(started.elapsed() >= Duration::from_millis(950), "it waited");
    }

    #[tokio::test]
    async fn a_long_retry_after_or_a_second_429_is_an_error_naming_the_wait() {
        let (url, hits) = server(vec![(429, "120", "")]).await;
        let e = get_from(&url).await.unwrap_err().to_string();
        assert!(e.contains("HTTP 429") && e.contains("wait 120 s"), "{e}");
        assert_eq!(
            hits.load(Ordering::SeqCst),
            1,
            "no retry when the wait is long"
        );
        let (url, hits) = server(vec![(429, "0", "")]).await;
        let e = get_from(&url).await.unwrap_err().to_string();
        assert!(e.contains("limiting the rate"), "{e}");
        assert_eq!(hits.load(Ordering::SeqCst), 2, "one retry, then the error");
    }

    #[test]
    fn finnhubs_rate_limit_reset_header_says_how_long_to_wait() {
        let mut h = reqwest::header::HeaderMap::new();
        assert_eq!(rate_limit_reset(&h), None);
        let in_a_minute = jiff::Timestamp::now().as_second() + 60;
        h.insert(
            "x-ratelimit-reset",
            in_a_minute.to_string().parse().unwrap(),
        );
        let wait = rate_limit_reset(&h).unwrap();
        assert!((58..=60).contains(&wait.as_secs()), "{wait:?}");
        h.insert("x-ratelimit-reset", "1".parse().unwrap());
        assert_eq!(rate_limit_reset(&h), Some(Duration::ZERO), "in the past");
    }

    #[tokio::test]
    async fn a_5xx_is_retried_once() {
        let (url, hits) = server(vec![(502, "", "bad gateway"), (200, "", "[1,2]")]).await;
        assert_eq!(get_from(&url).await.unwrap(), serde_json::json!([1, 2]));
        assert_eq!(hits.load(Ordering::SeqCst), 2);
        let (url, hits) = server(vec![(503, "", r#"{"error":"down for maintenance"}"#)]).await;
        let e = get_from(&url).await.unwrap_err().to_string();
        assert!(
            e.contains("HTTP 503: down for maintenance") && e.contains("second try"),
            "{e}"
        );
        assert_eq!(hits.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn malformed_json_and_refused_keys_are_clear_and_never_show_the_key() {
        let (url, _) = server(vec![(200, "", "{\"c\": 1,")]).await;
        let e = get_from(&url).await.unwrap_err().to_string();
        assert!(e.contains("not the JSON its API documents"), "{e}");
        let echo: &'static str = "{\"error\":\"Invalid API key key-abcdef-123456\"}";
        let (url, hits) = server(vec![(401, "", echo)]).await;
        let e = get_from(&url).await.unwrap_err().to_string();
        assert!(
            e.contains("tools.example.api_key") && e.contains("HTTP 401"),
            "{e}"
        );
        assert!(!e.contains(KEY), "{e}");
        assert_eq!(
            hits.load(Ordering::SeqCst),
            1,
            "a refused key is not retried"
        );
        let body = r#"{"error":"You don't have access to this resource."}"#;
        let (url, _) = server(vec![(403, "", body)]).await;
        let e = get_from(&url).await.unwrap_err().to_string();
        assert!(
            e.contains("refused access (HTTP 403: You don't have access") && e.contains("plan"),
            "{e}"
        );
    }
}
