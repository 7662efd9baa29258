//! The HTTP side: API keys (one person each), `GET /v1/models`, `POST /v1/chat/completions`
//! whole or streamed (server-sent events ending in `[DONE]`), errors in OpenAI's shape.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::sse::{Event as Sse, KeepAlive};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hermes_adapter::{
    Chat, ChatId, ChatKind, InboundSink, Message, Platform, Sender, Trigger, now_millis,
};
use serde_json::json;
use tokio::sync::{OwnedMutexGuard, mpsc};

use crate::ApiSettings;
use crate::waiting::{Event, Waiting};
use crate::wire::{self, ApiError, ChatRequest};

/// Longest conversation name (`user` or `X-Hermes-Session`).
const MAX_NAME: usize = 128;

#[derive(Clone)]
struct Api {
    settings: Arc<ApiSettings>,
    waiting: Arc<Waiting>,
    sink: Arc<dyn InboundSink>,
}

/// The key a request was made with (its name: the person).
#[derive(Clone)]
struct Caller(String);

pub(crate) fn router(
    settings: Arc<ApiSettings>,
    waiting: Arc<Waiting>,
    sink: Arc<dyn InboundSink>,
) -> Router {
    let api = Api {
        settings,
        waiting,
        sink,
    };
    Router::new()
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat_completions))
        .route_layer(axum::middleware::from_fn_with_state(
            api.clone(),
            authorized,
        ))
        .fallback(|| async {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "invalid_request_error",
                "no such endpoint",
            )
            .code("unknown_url")
        })
        .layer(axum::middleware::from_fn_with_state(api.clone(), cors))
        .with_state(api)
}

/// The key's name, if the request carries one of the configured keys.
async fn authorized(State(api): State<Api>, mut request: Request, next: Next) -> Response {
    let name = api
        .settings
        .keys
        .iter()
        .find(|(_, token)| hermes_listener::bearer::carries(request.headers(), token))
        .map(|(name, _)| name.clone());
    match name {
        Some(name) => {
            request.extensions_mut().insert(Caller(name));
            next.run(request).await
        }
        None => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "Incorrect API key provided: send one of this hermes' [api.keys] as Authorization: Bearer <key>",
        )
        .code("invalid_api_key")
        .into_response(),
    }
}

/// CORS for the configured origins only; a preflight is answered here.
async fn cors(State(api): State<Api>, request: Request, next: Next) -> Response {
    let origin = request
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .filter(|o| api.settings.cors_origins.iter().any(|a| a == o))
        .map(str::to_owned);
    let preflight = request.method() == Method::OPTIONS;
    let mut response = if preflight && origin.is_some() {
        StatusCode::NO_CONTENT.into_response()
    } else {
        next.run(request).await
    };
    if let Some(origin) = origin.and_then(|o| HeaderValue::from_str(&o).ok()) {
        let h = response.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(header::VARY, HeaderValue::from_static("Origin"));
        h.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static("authorization, content-type, x-hermes-session"),
        );
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST, OPTIONS"),
        );
    }
    response
}

/// The configured models and `hermes` (the default).
fn model_names(settings: &ApiSettings) -> Vec<String> {
    let mut names = vec!["hermes".to_owned()];
    for m in &settings.models {
        if !names.contains(m) {
            names.push(m.clone());
        }
    }
    names
}

async fn models(State(api): State<Api>) -> Response {
    axum::Json(wire::models(&model_names(&api.settings))).into_response()
}

/// A random id (hex), for messages and completions.
fn random_id() -> String {
    let mut bytes = [0u8; 12];
    if getrandom::fill(&mut bytes).is_err() {
        bytes[..8].copy_from_slice(&now_millis().to_be_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A conversation name as given, or why it is refused.
fn conversation_name(headers: &HeaderMap, user: Option<&str>) -> Result<Option<String>, ApiError> {
    let given = headers
        .get("x-hermes-session")
        .and_then(|v| v.to_str().ok())
        .or(user)
        .map(str::trim)
        .filter(|n| !n.is_empty());
    match given {
        Some(n) if n.chars().count() > MAX_NAME || n.chars().any(char::is_control) => {
            Err(ApiError::invalid(format!(
                "a conversation name (user, X-Hermes-Session) is at most {MAX_NAME} printable characters"
            )))
        }
        other => Ok(other.map(str::to_owned)),
    }
}

/// What the agent is told: the last user message, and for a conversation without a name (no
/// history here) the request's earlier messages as its context.
fn text_of(request: &ChatRequest, named: bool) -> Result<String, ApiError> {
    let last = request
        .messages
        .last()
        .filter(|m| m.role == "user")
        .ok_or_else(|| ApiError::invalid("the last message must be the user's (role \"user\")"))?;
    let said = last.text();
    if said.trim().is_empty() {
        return Err(ApiError::invalid("the last user message has no text"));
    }
    let earlier = &request.messages[..request.messages.len() - 1];
    let instructions: Vec<String> = earlier
        .iter()
        .filter(|m| m.role == "system" || m.role == "developer")
        .map(|m| m.text())
        .filter(|t| !t.trim().is_empty())
        .collect();
    let mut text = String::new();
    if !instructions.is_empty() {
        text.push_str(&format!(
            "[Instructions from the API caller]\n{}\n\n",
            instructions.join("\n")
        ));
    }
    let turns: Vec<String> = earlier
        .iter()
        .filter(|m| m.role == "user" || m.role == "assistant")
        .map(|m| format!("{}: {}", m.role, m.text()))
        .collect();
    if !named && !turns.is_empty() {
        text.push_str(&format!(
            "[The conversation so far]\n{}\n\n[The new message]\n",
            turns.join("\n")
        ));
    }
    text.push_str(&said);
    Ok(text)
}

async fn chat_completions(
    State(api): State<Api>,
    axum::Extension(Caller(key)): axum::Extension<Caller>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match start(&api, &key, &headers, &body).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

/// Stops listening to a conversation when the request ends, however it ends.
struct Listening {
    waiting: Arc<Waiting>,
    chat: ChatId,
    _turn: OwnedMutexGuard<()>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.waiting.forget(&self.chat);
    }
}

async fn start(
    api: &Api,
    key: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let request: ChatRequest = serde_json::from_slice(body).map_err(|e| {
        ApiError::invalid(format!("the body is not a chat completion request: {e}"))
    })?;
    if !model_names(&api.settings).contains(&request.model) {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!(
                "The model `{}` does not exist here; GET /v1/models lists them (`hermes` is the default)",
                request.model
            ),
        )
        .code("model_not_found"));
    }
    let name = conversation_name(headers, request.user.as_deref())?;
    let text = text_of(&request, name.is_some())?;
    let conversation = name.clone().unwrap_or_else(|| format!("~{}", random_id()));
    let chat = ChatId::from(format!("{key}:{conversation}"));
    let timeout = api.settings.request_timeout;
    let turn = tokio::time::timeout(timeout, api.waiting.turn_of(&chat).lock_owned())
        .await
        .map_err(|_| busy(timeout))?;
    let events = api.waiting.listen(&chat);
    let listening = Listening {
        waiting: api.waiting.clone(),
        chat: chat.clone(),
        _turn: turn,
    };
    let message = Message {
        platform: Platform::Api,
        id: random_id().into(),
        chat: Chat {
            id: chat,
            kind: ChatKind::Group,
            title: name,
        },
        thread: None,
        sender: Sender {
            id: key.into(),
            display_name: key.to_owned(),
            handle: None,
            is_bot: false,
        },
        text,
        attachments: Vec::new(),
        reply_to: None,
        sent_at: now_millis(),
        subject: None,
        trigger: Trigger::Mention,
    };
    api.sink.deliver(message).await.map_err(|e| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            e.to_string(),
        )
    })?;
    let answer = Answer {
        id: format!("chatcmpl-{}", random_id()),
        created: now_millis() / 1000,
        model: request.model.clone(),
        deadline: tokio::time::Instant::now() + timeout,
        events,
        _listening: listening,
    };
    if request.stream {
        let usage = request.stream_options.is_some_and(|o| o.include_usage);
        Ok(stream(answer, usage))
    } else {
        whole(answer).await
    }
}

fn busy(timeout: std::time::Duration) -> ApiError {
    ApiError::new(
        StatusCode::GATEWAY_TIMEOUT,
        "timeout",
        format!(
            "no answer within {} s (api.request_timeout_secs)",
            timeout.as_secs()
        ),
    )
}

/// A request waiting for its answer.
struct Answer {
    id: String,
    created: i64,
    model: String,
    deadline: tokio::time::Instant,
    events: mpsc::UnboundedReceiver<Event>,
    _listening: Listening,
}

impl Answer {
    async fn next(&mut self) -> Option<Event> {
        tokio::time::timeout_at(self.deadline, self.events.recv())
            .await
            .ok()
            .flatten()
    }
}

async fn whole(mut answer: Answer) -> Result<Response, ApiError> {
    loop {
        match answer.next().await {
            Some(Event::Done { text, usage }) => {
                let body =
                    wire::completion(&answer.id, answer.created, &answer.model, &text, usage);
                return Ok(axum::Json(body).into_response());
            }
            Some(_) => {}
            None => {
                let timeout = answer.deadline - tokio::time::Instant::now();
                return Err(busy(answer.deadline.elapsed().max(timeout)));
            }
        }
    }
}

/// The answer as `chat.completion.chunk` events, then `[DONE]`.
fn stream(answer: Answer, include_usage: bool) -> Response {
    let role = wire::chunk(
        &answer.id,
        answer.created,
        &answer.model,
        json!({"role": "assistant", "content": ""}),
        None,
    );
    let queued = VecDeque::from([Sse::default().data(role.to_string())]);
    let state = (answer, queued, false);
    let events =
        futures_util::stream::unfold(state, move |(mut a, mut queued, mut ended)| async move {
            loop {
                if let Some(e) = queued.pop_front() {
                    return Some((Ok::<_, Infallible>(e), (a, queued, ended)));
                }
                if ended {
                    return None;
                }
                let data = |v: serde_json::Value| Sse::default().data(v.to_string());
                match a.next().await {
                    Some(Event::Delta(text)) => {
                        queued.push_back(data(wire::chunk(
                            &a.id,
                            a.created,
                            &a.model,
                            json!({"content": text}),
                            None,
                        )));
                    }
                    Some(Event::Note(text)) => {
                        queued.push_back(Sse::default().event("hermes.note").data(text));
                    }
                    Some(Event::Done { usage, .. }) => {
                        queued.push_back(data(wire::chunk(
                            &a.id,
                            a.created,
                            &a.model,
                            json!({}),
                            Some("stop"),
                        )));
                        if include_usage {
                            queued.push_back(data(wire::usage_chunk(
                                &a.id, a.created, &a.model, usage,
                            )));
                        }
                        queued.push_back(Sse::default().data("[DONE]"));
                        ended = true;
                    }
                    None => {
                        let e = ApiError::new(
                            StatusCode::GATEWAY_TIMEOUT,
                            "timeout",
                            "no answer in time (api.request_timeout_secs)",
                        );
                        queued.push_back(data(e.body()));
                        queued.push_back(Sse::default().data("[DONE]"));
                        ended = true;
                    }
                }
            }
        });
    axum::response::Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}
