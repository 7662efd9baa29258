//! The Events API over HTTP: an axum listener that verifies each request's v0 signature with
//! slack-morphism's verifier (HMAC-SHA256 over `v0:{timestamp}:{body}` with the signing secret,
//! compared in constant time; timestamps more than five minutes off are refused), answers the
//! `url_verification` challenge, stores events, button presses (`payload=` forms) and slash
//! commands (`command=` forms), and only then answers 200. A request that fails verification is
//! answered 401 and nothing of it is stored; one that cannot be stored is answered 500 so Slack
//! retries it (its `X-Slack-Retry-Num` copies are recognised by the inbox).
//!
//! Connections are bounded (count, header and request time, body size checked before buffering)
//! by `hermes-listener`, so a slow or flooding client cannot hold the port.
//!
//! Any path is accepted, so the Request URL, Interactivity URL and slash command URL configured
//! in the Slack app can all point at the same listener.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hermes_adapter::{AdapterError, InboundSink};
use slack_morphism::prelude::*;
use slack_morphism::signature_verifier::SlackEventSignatureVerifier;
use tokio_util::sync::CancellationToken;

use crate::inbound::{Context, Rules};
use crate::web::BotIdentity;
use crate::web::Web;

/// How often the running listener reports itself alive (it cannot know whether Slack reaches
/// it; being bound and serving is what it can tell).
const ALIVE_EVERY: Duration = Duration::from_secs(20);

struct HttpState {
    me: BotIdentity,
    rules: Rules,
    web: Web,
    sink: Arc<dyn InboundSink>,
    verifier: SlackEventSignatureVerifier,
}

/// Serve the Events API on `listen` until `shutdown`.
pub(crate) async fn run(
    me: BotIdentity,
    rules: Rules,
    web: Web,
    sink: Arc<dyn InboundSink>,
    signing_secret: &str,
    listen: SocketAddr,
    shutdown: &CancellationToken,
) -> Result<(), AdapterError> {
    let listener = tokio::net::TcpListener::bind(listen).await.map_err(|e| {
        AdapterError::Transient(format!("cannot listen on {listen} for Slack events: {e}"))
    })?;
    tracing::info!(%listen, "Slack connected (Events API)");
    sink.heartbeat();
    let state = Arc::new(HttpState {
        me,
        rules,
        web,
        sink: sink.clone(),
        verifier: SlackEventSignatureVerifier::new(&SlackSigningSecret::new(
            signing_secret.to_owned(),
        )),
    });
    let app = Router::new().fallback(handle).with_state(state);
    // Slack's payloads are small and it waits 3 s for an answer; anyone holding connections
    // open or sending slowly is cut off (see hermes-listener).
    hermes_listener::serve_alive(
        listener,
        app,
        hermes_listener::Limits::default(),
        shutdown.clone(),
        "slack-events",
        ALIVE_EVERY,
        || sink.heartbeat(),
    )
    .await;
    Ok(())
}

fn status(code: StatusCode, text: &'static str) -> Response {
    (code, text).into_response()
}

async fn handle(
    State(st): State<Arc<HttpState>>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if method != Method::POST {
        return status(StatusCode::METHOD_NOT_ALLOWED, "POST only");
    }
    let header_str = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(ts), Some(signature)) = (
        header_str(SlackEventSignatureVerifier::SLACK_SIGNED_TIMESTAMP),
        header_str(SlackEventSignatureVerifier::SLACK_SIGNED_HASH_HEADER),
    ) else {
        tracing::warn!("rejected a request without Slack signature headers");
        return status(StatusCode::UNAUTHORIZED, "missing signature");
    };
    let Ok(body) = std::str::from_utf8(&body) else {
        return status(StatusCode::BAD_REQUEST, "body is not UTF-8");
    };
    if let Err(e) = st.verifier.verify(signature, body, ts) {
        tracing::warn!(error = %e, "rejected a Slack request: bad signature or stale timestamp");
        return status(StatusCode::UNAUTHORIZED, "invalid signature");
    }
    if let Some(retry) = header_str("x-slack-retry-num") {
        tracing::debug!(
            retry,
            reason = header_str("x-slack-retry-reason").unwrap_or_default(),
            "Slack retried a request"
        );
    }
    let ctx = Context {
        me: &st.me,
        rules: &st.rules,
        web: &st.web,
        sink: st.sink.as_ref(),
    };
    let content_type = header_str(header::CONTENT_TYPE.as_str()).unwrap_or_default();
    let stored = if content_type.starts_with("application/x-www-form-urlencoded") {
        let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes())
            .into_owned()
            .collect();
        if let Some(payload) = form.get("payload") {
            match serde_json::from_str::<SlackInteractionEvent>(payload) {
                Ok(ev) => ctx.interaction(&ev).await,
                Err(e) => {
                    tracing::warn!(error = %e, "skipping an interaction hermes cannot read");
                    Ok(())
                }
            }
        } else if form.contains_key("command") {
            let fields = serde_json::to_value(&form).unwrap_or_default();
            match serde_json::from_value::<SlackCommandEvent>(fields) {
                Ok(ev) => ctx.command(&ev).await,
                Err(e) => {
                    tracing::warn!(error = %e, "skipping a slash command hermes cannot read");
                    Ok(())
                }
            }
        } else {
            return status(StatusCode::BAD_REQUEST, "unknown form");
        }
    } else {
        match serde_json::from_str::<SlackPushEvent>(body) {
            Ok(SlackPushEvent::UrlVerification(v)) => {
                return axum::Json(serde_json::json!({ "challenge": v.challenge })).into_response();
            }
            Ok(SlackPushEvent::EventCallback(cb)) => ctx.push_event(&cb).await,
            Ok(SlackPushEvent::AppRateLimited(_)) => {
                tracing::warn!("Slack reports that this app is rate limited for events");
                Ok(())
            }
            Err(e) => {
                // Retrying will not make it readable: acknowledge it.
                tracing::warn!(error = %e, "skipping a Slack event hermes cannot read");
                Ok(())
            }
        }
    };
    match stored {
        Ok(()) => StatusCode::OK.into_response(),
        Err(e) => {
            tracing::error!(error = %e, "cannot store a Slack event; Slack will retry it");
            status(StatusCode::INTERNAL_SERVER_ERROR, "not stored")
        }
    }
}
