//! `POST /v1/chat/completions`: the answer whole, or as `chat.completion.chunk` events ending
//! in `[DONE]`.

use std::collections::VecDeque;
use std::convert::Infallible;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as Sse, KeepAlive};
use axum::response::{IntoResponse, Response};
use hermes_adapter::now_millis;
use serde_json::json;

use crate::ask::{Answer, ask, busy, chat_of, compose, conversation_name};
use crate::state::{Api, Caller, check_model, random_id};
use crate::waiting::Event;
use crate::wire::{self, ApiError, ChatRequest};

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
    let turns: Vec<(String, String)> = earlier
        .iter()
        .filter(|m| m.role == "user" || m.role == "assistant")
        .map(|m| (m.role.clone(), m.text()))
        .collect();
    Ok(compose(&instructions, &turns, !named, &said))
}

pub(crate) async fn chat_completions(
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

/// The request's names for the answer it gets.
struct Named {
    id: String,
    created: i64,
    model: String,
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
    check_model(&api.settings, &request.model)?;
    let name = conversation_name(headers, request.user.as_deref())?;
    let text = text_of(&request, name.is_some())?;
    let chat = chat_of(key, name.as_deref());
    let answer = ask(api, key, chat, name, text).await?;
    let named = Named {
        id: format!("chatcmpl-{}", random_id()),
        created: now_millis() / 1000,
        model: request.model.clone(),
    };
    if request.stream {
        let usage = request.stream_options.is_some_and(|o| o.include_usage);
        Ok(stream(answer, named, usage, api.settings.request_timeout))
    } else {
        whole(answer, named, api.settings.request_timeout).await
    }
}

async fn whole(
    mut answer: Answer,
    n: Named,
    timeout: std::time::Duration,
) -> Result<Response, ApiError> {
    loop {
        match answer.next().await {
            Some(Event::Done { text, usage }) => {
                let body = wire::completion(&n.id, n.created, &n.model, &text, usage);
                return Ok(axum::Json(body).into_response());
            }
            Some(_) => {}
            None => return Err(busy(timeout)),
        }
    }
}

/// The answer as `chat.completion.chunk` events, then `[DONE]`.
fn stream(answer: Answer, n: Named, include_usage: bool, timeout: std::time::Duration) -> Response {
    let role = wire::chunk(
        &n.id,
        n.created,
        &n.model,
        json!({"role": "assistant", "content": ""}),
        None,
    );
    let queued = VecDeque::from([Sse::default().data(role.to_string())]);
    let state = (answer, queued, false);
    let events = futures_util::stream::unfold(state, move |(mut a, mut queued, mut ended)| {
        let n = (n.id.clone(), n.created, n.model.clone());
        async move {
            let (id, created, model) = (&n.0, n.1, &n.2);
            loop {
                if let Some(e) = queued.pop_front() {
                    return Some((Ok::<_, Infallible>(e), (a, queued, ended)));
                }
                if ended {
                    return None;
                }
                let data = |v: serde_json::Value| Sse::default().data(v.to_string());
                match a.next().await {
                    Some(Event::Delta(text)) => queued.push_back(data(wire::chunk(
                        id,
                        created,
                        model,
                        json!({"content": text}),
                        None,
                    ))),
                    Some(Event::Note(text)) => {
                        queued.push_back(Sse::default().event("hermes.note").data(text));
                    }
                    Some(Event::Done { usage, .. }) => {
                        queued.push_back(data(wire::chunk(
                            id,
                            created,
                            model,
                            json!({}),
                            Some("stop"),
                        )));
                        if include_usage {
                            queued.push_back(data(wire::usage_chunk(id, created, model, usage)));
                        }
                        queued.push_back(Sse::default().data("[DONE]"));
                        ended = true;
                    }
                    None => {
                        queued.push_back(data(busy(timeout).body()));
                        queued.push_back(Sse::default().data("[DONE]"));
                        ended = true;
                    }
                }
            }
        }
    });
    axum::response::Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}
