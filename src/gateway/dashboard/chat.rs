//! The dashboard's chat: talk to the agent from the browser, through the HTTP API like any other
//! client (the dashboard runs in the core and the API is an adapter it must not reach into; an
//! HTTP call to the API's own listener keeps one door for API turns, with its keys, fair share,
//! lanes and confirmations). The conversation is the signed-in key's `dashboard` conversation
//! (the admin talks as the first operator key); its history is read from the store. With
//! JavaScript the answer streams in (the API's SSE passed through); without, the form waits and
//! the page reloads with the answer.

use std::sync::{Arc, OnceLock};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use hermes_adapter::{ChatId, GroupSessions, Platform, SessionKey, SessionScope};
use serde_json::json;

use super::html::{csrf_field, empty, esc, page};
use super::pages::bubbles;
use super::{Login, checked_form, stale};
use crate::config::Config;
use crate::gateway::Shared;

/// The conversation the dashboard talks in.
const CONVERSATION: &str = "dashboard";
/// Messages of the conversation shown above the form.
const SHOWN: usize = 60;

/// The API key the signed-in browser talks as: its own, or for the admin the first operator key.
fn speaker(config: &Config, login: &Login) -> Option<(String, String)> {
    let usable = |(name, k): (&String, &crate::config::ApiKeyConfig)| {
        (!k.token.is_empty()).then(|| (name.clone(), k.token.expose().to_owned()))
    };
    if !config.api.enabled {
        return None;
    }
    match login.who.strip_prefix("api:") {
        Some(own) => config.api.keys.get_key_value(own).and_then(usable),
        None => config
            .api
            .keys
            .iter()
            .filter(|(_, k)| k.operator)
            .find_map(usable),
    }
}

/// Where the API listens, as a URL this process can call (a wildcard address becomes loopback).
fn api_base(config: &Config) -> Option<String> {
    let addr: std::net::SocketAddr = config.api.listen.parse().ok()?;
    let ip = match addr.ip() {
        std::net::IpAddr::V4(v4) if v4.is_unspecified() => "127.0.0.1".to_owned(),
        std::net::IpAddr::V6(v6) if v6.is_unspecified() => "[::1]".to_owned(),
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => format!("[{v6}]"),
    };
    Some(format!("http://{ip}:{}", addr.port()))
}

/// The session the API gives key `name`'s dashboard conversation.
fn session_of(config: &Config, name: &str) -> SessionKey {
    let per_chat = config.gateway.group_sessions == GroupSessions::PerChat;
    SessionKey {
        platform: Platform::Api,
        scope: SessionScope::Group {
            chat: ChatId::from(format!("{name}:{CONVERSATION}")),
            thread: None,
            user: (!per_chat).then(|| name.into()),
        },
    }
}

fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(std::time::Duration::from_secs(5))
            .build()
            .unwrap_or_default()
    })
}

pub(crate) async fn chat(
    State(shared): State<Arc<Shared>>,
    axum::Extension(login): axum::Extension<Login>,
) -> Response {
    let config = shared.config();
    let Some((name, _)) = speaker(&config, &login) else {
        let body = empty(
            "The chat talks to the agent through the HTTP API, which has no operator key yet: \
             add [api.keys.<name>] with token_env and operator = true, then reload the daemon.",
        );
        return page("Chat", "/chat", &login, &body).into_response();
    };
    let history = match shared
        .store
        .session_current(&session_of(&config, &name))
        .await
    {
        Ok(Some(s)) => shared.store.history(s.id, SHOWN).await.unwrap_or_default(),
        _ => Vec::new(),
    };
    let said = if history.is_empty() {
        "<p class=\"empty\" id=\"chat-empty\">Say something to start. The agent answers here with \
         the same tools, memory and confirmations as in a chat.</p>"
            .to_owned()
    } else {
        bubbles(&history)
    };
    let body = format!(
        "<p class=\"meta\">As <code>api:{}</code>, conversation <code>{CONVERSATION}</code> · \
         confirmations show under <a href=\"/approvals\">Approvals</a></p>\
         <div class=\"transcript\" id=\"chat-log\">{said}</div>\
         <form method=\"post\" action=\"/chat/send\" class=\"chat\" id=\"chat-form\">{}\
         <textarea name=\"text\" rows=\"2\" required placeholder=\"Message the agent\"></textarea>\
         <button>Send</button></form>",
        esc(&name),
        csrf_field(&login)
    );
    page("Chat", "/chat", &login, &body).into_response()
}

/// The API's error message, or its status.
async fn refusal(response: reqwest::Response) -> String {
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    body["error"]["message"]
        .as_str()
        .map_or_else(|| format!("the API answered {status}"), str::to_owned)
}

pub(crate) async fn send(
    State(shared): State<Arc<Shared>>,
    axum::Extension(login): axum::Extension<Login>,
    body: Bytes,
) -> Response {
    let Some(fields) = checked_form(&body, &login) else {
        return stale();
    };
    let text = fields.get("text").map(|t| t.trim()).unwrap_or_default();
    if text.is_empty() {
        return (StatusCode::BAD_REQUEST, "say something\n").into_response();
    }
    let streamed = fields.get("stream").is_some_and(|s| s == "1");
    let config = shared.config();
    let (Some((name, token)), Some(base)) = (speaker(&config, &login), api_base(&config)) else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "the HTTP API has no operator key\n",
        )
            .into_response();
    };
    let request = json!({
        "model": "hermes",
        "messages": [{"role": "user", "content": text}],
        "user": CONVERSATION,
        "stream": streamed,
    });
    let sent = client()
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(token)
        .json(&request)
        .send()
        .await;
    let response = match sent {
        Ok(r) if r.status().is_success() => r,
        Ok(r) => {
            let status =
                StatusCode::from_u16(r.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
            return (status, format!("{}\n", refusal(r).await)).into_response();
        }
        Err(e) => {
            tracing::warn!(error = %e, "dashboard chat: the HTTP API did not answer");
            return (
                StatusCode::BAD_GATEWAY,
                "the HTTP API did not answer; is the api platform running? (hermes status)\n",
            )
                .into_response();
        }
    };
    tracing::info!(key = %name, who = %login.who, streamed, "dashboard: a chat message");
    if streamed {
        return (
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            Body::from_stream(response.bytes_stream()),
        )
            .into_response();
    }
    // Without JavaScript: the answer is in the conversation once the API has answered.
    let _ = response.bytes().await;
    Redirect::to("/chat").into_response()
}
