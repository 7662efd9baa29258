//! HTTP plumbing shared by the providers: sending a request and classifying a failed one,
//! reading `Retry-After`, extracting the provider's own error message, and keeping the API key
//! and URLs out of every error text.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;

use super::LlmError;
use crate::config::Secret;

/// A transport failure (connect, TLS, reset, timeout) as an `LlmError`.
pub(super) fn network_error(key: &Secret, e: &reqwest::Error) -> LlmError {
    if e.is_timeout() {
        LlmError::Timeout
    } else {
        // reqwest errors carry the URL, never the headers; scrub anyway.
        LlmError::Unavailable(key.scrub(&without_url(e)))
    }
}

fn without_url(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    if let Some(url) = e.url() {
        text = text.replace(url.as_str(), url.host_str().unwrap_or("provider"));
    }
    text
}

/// Read a streamed answer: each server-sent event of `resp` goes to `on_event`; a transport
/// failure or an error the provider sent inside the stream comes back with the key masked.
pub(super) async fn read_stream(
    key: &Secret,
    resp: reqwest::Response,
    on_event: impl FnMut(super::sse::SseEvent) -> Result<super::sse::Flow, LlmError>,
) -> Result<(), LlmError> {
    super::sse::read_events(resp.bytes_stream(), |e| network_error(key, &e), on_event)
        .await
        .map_err(|e| scrub(key, e))
}

/// `e` with the key masked in its message: for errors built from text the provider sent
/// inside an answer (a streamed error event), which `send` did not see.
pub(super) fn scrub(key: &Secret, e: LlmError) -> LlmError {
    match e {
        LlmError::Unavailable(m) => LlmError::Unavailable(key.scrub(&m)),
        LlmError::Unauthorized(m) => LlmError::Unauthorized(key.scrub(&m)),
        LlmError::Rejected(m) => LlmError::Rejected(key.scrub(&m)),
        LlmError::Malformed(m) => LlmError::Malformed(key.scrub(&m)),
        e @ (LlmError::RateLimited { .. } | LlmError::Timeout) => e,
    }
}

/// Sends `req`; a non-2xx answer becomes the classified error (body scrubbed of the key).
pub(super) async fn send(
    key: &Secret,
    req: reqwest::RequestBuilder,
) -> Result<reqwest::Response, LlmError> {
    let resp = req.send().await.map_err(|e| network_error(key, &e))?;
    check(key, resp).await
}

/// `resp` if its status is 2xx, else the classified error (body scrubbed of the key).
pub(super) async fn check(
    key: &Secret,
    resp: reqwest::Response,
) -> Result<reqwest::Response, LlmError> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let headers = resp.headers().clone();
    let body = resp.text().await.map_err(|e| network_error(key, &e))?;
    Err(classify(status, &headers, &key.scrub(&body)))
}

/// The whole body of a successful response as text.
pub(super) async fn text(key: &Secret, resp: reqwest::Response) -> Result<String, LlmError> {
    resp.text().await.map_err(|e| network_error(key, &e))
}

/// The provider's own error message from an error body, shortened. Understands OpenAI's
/// `{"error":{"message"}}`, Anthropic's `{"type":"error","error":{"type","message"}}` and the
/// `{"error":"…"}` / `{"message":"…"}` shapes of smaller servers; anything else is cut raw text.
pub(crate) fn error_message(body: &str) -> String {
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

/// Longest wait a provider's `Retry-After` is taken at (a larger value is read as this).
const MAX_RETRY_AFTER_SECS: f64 = 3600.0;

/// `Retry-After` in seconds (fractions allowed), at most an hour. HTTP dates are not honoured:
/// no provider sends them, and the caller's own backoff applies instead.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let secs: f64 = v.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0)
        .then(|| Duration::from_secs_f64(secs.min(MAX_RETRY_AFTER_SECS)))
}

/// The error for a non-2xx status. Anthropic's 529 "overloaded" falls in the 5xx range.
pub(super) fn classify(status: StatusCode, headers: &HeaderMap, body: &str) -> LlmError {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_classified() {
        let mut h = HeaderMap::new();
        h.insert(reqwest::header::RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(
            classify(StatusCode::TOO_MANY_REQUESTS, &h, "{}"),
            LlmError::RateLimited {
                retry_after: Some(Duration::from_secs(2))
            }
        );
        let none = HeaderMap::new();
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

    #[test]
    fn anthropic_error_shapes_are_classified() {
        let none = HeaderMap::new();
        let overloaded =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(
            classify(StatusCode::from_u16(529).unwrap(), &none, overloaded),
            LlmError::Unavailable("HTTP 529: Overloaded".into())
        );
        let bad = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}"#;
        assert_eq!(
            classify(StatusCode::BAD_REQUEST, &none, bad),
            LlmError::Rejected("HTTP 400: max_tokens: Field required".into())
        );
        assert!(matches!(
            classify(StatusCode::FORBIDDEN, &none, "{}"),
            LlmError::Unauthorized(_)
        ));
    }

    #[test]
    fn scrub_masks_the_key_in_every_message() {
        let key = Secret::new("sk-secret-1234");
        let e = scrub(
            &key,
            LlmError::Rejected("bad key sk-secret-1234 given".into()),
        );
        assert_eq!(e, LlmError::Rejected("bad key *** given".into()));
        assert_eq!(scrub(&key, LlmError::Timeout), LlmError::Timeout);
    }

    #[test]
    fn retry_after_accepts_fractions_and_ignores_dates() {
        let mut h = HeaderMap::new();
        h.insert(reqwest::header::RETRY_AFTER, "1.5".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(1500)));
        h.insert(
            reqwest::header::RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), None);
        h.insert(reqwest::header::RETRY_AFTER, "-3".parse().unwrap());
        assert_eq!(retry_after(&h), None);
        h.insert(reqwest::header::RETRY_AFTER, "1e20".parse().unwrap());
        assert_eq!(
            retry_after(&h),
            Some(Duration::from_secs(3600)),
            "clamped, no panic"
        );
    }
}
