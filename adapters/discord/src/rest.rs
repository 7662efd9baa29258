//! The REST side: serenity's `Http` pointed at the configured base, one place that executes a
//! request and turns Discord's answers (429 `retry_after`, JSON error codes) into
//! [`SendError`] classes for the outbox, and attachment downloads with a size cap.

use std::sync::Arc;
use std::time::Duration;

use hermes_adapter::SendError;
use serde::de::DeserializeOwned;
use serenity::http::{Http, HttpBuilder, HttpError, LightMethod, Request, Route};
use serenity::model::id::ChannelId;
use serenity::model::user::CurrentUser;

/// Discord's error code for "Invalid Form Body" (a field too long, among others).
const INVALID_FORM_BODY: isize = 50035;

/// How a 401 answer starts (the listener reports it as rejected credentials).
pub(crate) const TOKEN_REJECTED: &str = "the bot token was rejected";

/// How long a REST call may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) struct Rest {
    pub(crate) http: Arc<Http>,
    client: reqwest::Client,
    /// The REST base when it is not Discord itself (serenity's rate limiter is then off).
    proxy: Option<String>,
}

impl Rest {
    pub(crate) fn new(token: &str, api_url: &url::Url) -> Rest {
        let client = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .use_rustls_tls()
            .build()
            .unwrap_or_default();
        let base = api_url.as_str().trim_end_matches('/').to_owned();
        let proxy = (base != crate::DEFAULT_API_URL).then_some(base);
        Rest {
            http: Arc::new(build_http(token, proxy.as_deref(), client.clone())),
            client,
            proxy,
        }
    }

    /// Whether 429s reach us (proxy mode) rather than being waited out by serenity.
    pub(crate) fn rate_limits_are_ours(&self) -> bool {
        self.http.ratelimiter.is_none()
    }

    pub(crate) async fn current_user(&self) -> Result<CurrentUser, SendError> {
        self.http
            .get_current_user()
            .await
            .map_err(classify_serenity)
    }

    /// Execute `req`; a non-success answer becomes a classified error.
    pub(crate) async fn call(&self, req: Request<'_>) -> Result<reqwest::Response, SendError> {
        if !self.rate_limits_are_ours() {
            return self.http.request(req).await.map_err(classify_serenity);
        }
        let built = req
            .build(&self.client, self.http.token(), self.proxy.as_deref())
            .map_err(classify_serenity)?
            .build()
            .map_err(network)?;
        let response = self.client.execute(built).await.map_err(network)?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(classify_response(response).await)
    }

    /// Where the gateway is (`GET /gateway/bot`).
    pub(crate) async fn gateway_url(&self) -> Result<String, SendError> {
        #[derive(serde::Deserialize)]
        struct Gateway {
            url: String,
        }
        let req = Request::new(Route::GatewayBot, LightMethod::Get);
        let g: Gateway = self.json(req).await?;
        Ok(g.url.trim_end_matches('/').to_owned())
    }

    /// Up to `limit` messages of `channel` posted after message `after`, oldest first.
    pub(crate) async fn messages_after(
        &self,
        channel: u64,
        after: u64,
        limit: u8,
    ) -> Result<Vec<serenity::model::channel::Message>, SendError> {
        let req = Request::new(
            Route::ChannelMessages {
                channel_id: ChannelId::new(channel),
            },
            LightMethod::Get,
        )
        .params(Some(vec![
            ("after", after.to_string()),
            ("limit", limit.to_string()),
        ]));
        let mut messages: Vec<serenity::model::channel::Message> = self.json(req).await?;
        messages.sort_by_key(|m| m.id);
        Ok(messages)
    }

    /// Execute `req` and parse the JSON answer.
    pub(crate) async fn json<T: DeserializeOwned>(&self, req: Request<'_>) -> Result<T, SendError> {
        let bytes = self.call(req).await?.bytes().await.map_err(network)?;
        serde_json::from_slice(&bytes)
            .map_err(|e| SendError::Transient(format!("unreadable answer from Discord: {e}")))
    }

    /// Download an attachment from Discord's CDN (no credentials are sent), refusing more than
    /// `max_bytes`.
    pub(crate) async fn download(&self, url: &str, max_bytes: u64) -> Result<Vec<u8>, SendError> {
        let parsed = url::Url::parse(url)
            .map_err(|_| SendError::Permanent("attachment has no valid URL".into()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(SendError::Permanent("attachment URL is not http(s)".into()));
        }
        let mut response = self
            .client
            .get(parsed)
            .timeout(Duration::from_secs(120))
            .send()
            .await
            .map_err(network)?;
        if !response.status().is_success() {
            return Err(classify(
                response.status().as_u16(),
                0,
                "download failed",
                false,
                None,
            ));
        }
        if response.content_length().is_some_and(|n| n > max_bytes) {
            return Err(SendError::TooLong);
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(network)? {
            if (bytes.len() + chunk.len()) as u64 > max_bytes {
                return Err(SendError::TooLong);
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }
}

fn build_http(token: &str, proxy: Option<&str>, client: reqwest::Client) -> Http {
    let builder = HttpBuilder::new(token).client(client);
    match proxy {
        // serenity's limiter ignores the proxy setting: it must be off for the proxy to apply.
        Some(base) => builder.proxy(base).ratelimiter_disabled(true).build(),
        None => builder.build(),
    }
}

/// reqwest errors print the request URL (an interaction callback URL holds its token).
pub(crate) fn network(e: reqwest::Error) -> SendError {
    SendError::Transient(format!("network: {}", e.without_url()))
}

/// A failed answer read by ourselves: status, `Retry-After` / `retry_after`, Discord's code.
async fn classify_response(response: reqwest::Response) -> SendError {
    let status = response.status().as_u16();
    let header_wait = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok());
    let body: serde_json::Value = match response.bytes().await {
        Ok(b) => serde_json::from_slice(&b).unwrap_or_default(),
        Err(_) => serde_json::Value::Null,
    };
    let body_wait = body.get("retry_after").and_then(|v| v.as_f64());
    let code = body.get("code").and_then(|v| v.as_i64()).unwrap_or(0) as isize;
    let message = body
        .get("message")
        .and_then(|v| v.as_str())
        .unwrap_or("no message")
        .to_owned();
    let too_long = body
        .get("errors")
        .is_some_and(|e| e.to_string().contains("BASE_TYPE_MAX_LENGTH"));
    classify(
        status,
        code,
        &message,
        too_long,
        wait(body_wait, header_wait),
    )
}

/// The wait a 429 asks for: the body's value (millisecond precision) before the header's (rounded
/// up to whole seconds), at most an hour (more is nonsense from a proxy, and must never
/// overflow a `Duration`).
fn wait(body: Option<f64>, header: Option<f64>) -> Option<Duration> {
    body.or(header)
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Duration::from_secs_f64(s.min(3600.0)))
}

pub(crate) fn classify_serenity(e: serenity::Error) -> SendError {
    match e {
        serenity::Error::Http(HttpError::UnsuccessfulRequest(r)) => {
            let too_long = r
                .error
                .errors
                .iter()
                .any(|e| e.code == "BASE_TYPE_MAX_LENGTH");
            classify(
                r.status_code.as_u16(),
                r.error.code,
                &r.error.message,
                too_long,
                None,
            )
        }
        serenity::Error::Http(HttpError::Request(e)) => network(e),
        serenity::Error::Json(e) => {
            SendError::Transient(format!("unreadable answer from Discord: {e}"))
        }
        other => SendError::Permanent(other.to_string()),
    }
}

/// Map an HTTP status and Discord error code to the outbox's classes.
pub(crate) fn classify(
    status: u16,
    code: isize,
    message: &str,
    too_long: bool,
    retry_after: Option<Duration>,
) -> SendError {
    let what = format!("{message} (HTTP {status}, code {code})");
    match status {
        429 => SendError::RetryAfter(retry_after.unwrap_or(Duration::from_secs(1))),
        401 => SendError::Permanent(format!("{TOKEN_REJECTED}: {what}")),
        403 => SendError::Forbidden(what),
        404 => SendError::NotFound(what),
        400 if code == INVALID_FORM_BODY && too_long => SendError::TooLong,
        408 | 500..=599 => SendError::Transient(what),
        _ => SendError::Permanent(what),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_classified() {
        assert_eq!(
            classify(
                429,
                0,
                "slow down",
                false,
                Some(Duration::from_millis(1500))
            ),
            SendError::RetryAfter(Duration::from_millis(1500))
        );
        assert!(matches!(
            classify(403, 50013, "Missing Permissions", false, None),
            SendError::Forbidden(_)
        ));
        assert!(matches!(
            classify(404, 10003, "Unknown Channel", false, None),
            SendError::NotFound(_)
        ));
        assert_eq!(
            classify(400, 50035, "Invalid Form Body", true, None),
            SendError::TooLong
        );
        assert!(matches!(
            classify(400, 50035, "Invalid Form Body", false, None),
            SendError::Permanent(_)
        ));
        assert!(matches!(
            classify(502, 0, "Bad Gateway", false, None),
            SendError::Transient(_)
        ));
    }

    #[test]
    fn huge_or_broken_waits_never_panic() {
        assert_eq!(wait(Some(1e20), None), Some(Duration::from_secs(3600)));
        assert_eq!(wait(None, Some(2.0)), Some(Duration::from_secs(2)));
        assert_eq!(wait(Some(f64::NAN), None), None);
        assert_eq!(wait(Some(-1.0), None), None);
    }

    #[test]
    fn the_default_base_keeps_serenitys_rate_limiter() {
        let real = Rest::new("t", &crate::DEFAULT_API_URL.parse().unwrap());
        assert!(!real.rate_limits_are_ours());
        let proxied = Rest::new("t", &"http://127.0.0.1:9".parse().unwrap());
        assert!(proxied.rate_limits_are_ours());
        assert_eq!(proxied.proxy.as_deref(), Some("http://127.0.0.1:9"));
    }
}
