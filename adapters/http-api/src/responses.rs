//! The Responses API: `POST /v1/responses`, whole or streamed as OpenAI's response events, with
//! the state held here: `previous_response_id` or `conversation` continue a conversation (its
//! history is the same as a chat's), and `GET /v1/responses/{id}` reads a response again.
//!
//! A response id carries its conversation (`resp_<hex of the chat>_<random>`), so a
//! `previous_response_id` continues it across restarts; it continues the conversation where it
//! is now (not a branch from that response). The responses themselves are kept in memory for
//! `GET` (the last [`crate::kept::KEEP`], for the daemon's life).

use std::collections::VecDeque;
use std::convert::Infallible;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event as Sse, KeepAlive};
use axum::response::{IntoResponse, Response};
use hermes_adapter::{ChatId, TokenUsage, now_millis};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::ask::{Answer, ask, busy, chat_of, checked_name, compose};
use crate::state::{Api, Caller, check_model, random_id};
use crate::waiting::Event;
use crate::wire::ApiError;

#[derive(Debug, Deserialize)]
struct CreateRequest {
    model: String,
    input: Value,
    #[serde(default)]
    instructions: Option<String>,
    #[serde(default)]
    previous_response_id: Option<String>,
    /// A conversation's name, or `{"id": name}`.
    #[serde(default)]
    conversation: Option<Value>,
    #[serde(default)]
    stream: bool,
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<String> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// A new response id in `chat`.
fn response_id(chat: &ChatId) -> String {
    format!("resp_{}_{}", hex(chat.as_str()), random_id())
}

/// The conversation a response id of `key` is in; `None` for anything else.
fn chat_of_response(key: &str, id: &str) -> Option<ChatId> {
    let (chat, _) = id.strip_prefix("resp_")?.rsplit_once('_')?;
    let chat = unhex(chat)?;
    chat.strip_prefix(&format!("{key}:"))?;
    Some(chat.into())
}

fn not_found(what: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        format!("{what} not found"),
    )
}

/// The text of one input item (`content` as a string or as parts with `text`).
fn item_text(item: &Value) -> String {
    match &item["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// What the agent is told: the last user input, the instructions, and for a new conversation
/// the earlier input items as its context.
fn text_of(request: &CreateRequest, continued: bool) -> Result<String, ApiError> {
    let (earlier, said): (Vec<&Value>, String) = match &request.input {
        Value::String(s) => (Vec::new(), s.clone()),
        Value::Array(items) => {
            let last = items
                .last()
                .filter(|i| i["role"] == "user")
                .ok_or_else(|| ApiError::invalid("the last input item must be the user's"))?;
            (items[..items.len() - 1].iter().collect(), item_text(last))
        }
        _ => {
            return Err(ApiError::invalid(
                "`input` is a string or a list of messages",
            ));
        }
    };
    if said.trim().is_empty() {
        return Err(ApiError::invalid("the input has no text"));
    }
    let instructions: Vec<String> = request
        .instructions
        .iter()
        .filter(|i| !i.trim().is_empty())
        .cloned()
        .collect();
    let turns: Vec<(String, String)> = earlier
        .iter()
        .filter(|i| i["role"] == "user" || i["role"] == "assistant")
        .map(|i| (i["role"].as_str().unwrap_or("").to_owned(), item_text(i)))
        .collect();
    Ok(compose(&instructions, &turns, !continued, &said))
}

/// What a response says of itself.
struct Made {
    id: String,
    item: String,
    created: i64,
    model: String,
    previous: Option<String>,
    conversation: Option<String>,
}

impl Made {
    fn message(&self, text: &str, status: &str) -> Value {
        json!({
            "type": "message", "id": self.item, "status": status, "role": "assistant",
            "content": if status == "completed" || !text.is_empty() {
                json!([{"type": "output_text", "text": text, "annotations": []}])
            } else {
                json!([])
            },
        })
    }

    fn response(&self, status: &str, text: Option<&str>, usage: Option<TokenUsage>) -> Value {
        let u = usage.unwrap_or_default();
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "model": self.model,
            "output": text.map_or_else(Vec::new, |t| vec![self.message(t, "completed")]),
            "usage": {
                "input_tokens": u.prompt_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": u.completion_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": u.prompt_tokens + u.completion_tokens,
            },
            "previous_response_id": self.previous,
            "conversation": self.conversation.as_ref().map(|c| json!({"id": c})),
            "error": null,
            "incomplete_details": null,
            "instructions": null,
            "metadata": {},
            "parallel_tool_calls": false,
            "tool_choice": "auto",
            "tools": [],
            "text": {"format": {"type": "text"}},
        })
    }
}

pub(crate) async fn create(
    State(api): State<Api>,
    axum::Extension(Caller(key)): axum::Extension<Caller>,
    body: Bytes,
) -> Response {
    match start(&api, &key, &body).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

pub(crate) async fn fetch(
    State(api): State<Api>,
    axum::Extension(Caller(key)): axum::Extension<Caller>,
    Path(id): Path<String>,
) -> Response {
    match api.responses.get(&key, &id) {
        Some(r) => axum::Json(r).into_response(),
        None => not_found(&format!("response {id}")).into_response(),
    }
}

async fn start(api: &Api, key: &str, body: &[u8]) -> Result<Response, ApiError> {
    let request: CreateRequest = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid(format!("the body is not a response request: {e}")))?;
    check_model(&api.settings, &request.model)?;
    let named = match &request.conversation {
        None => None,
        Some(Value::String(name)) => Some(checked_name(name)?),
        Some(Value::Object(o)) => match o.get("id").and_then(Value::as_str) {
            Some(name) => Some(checked_name(name)?),
            None => {
                return Err(ApiError::invalid(
                    "`conversation` is a name or {\"id\": name}",
                ));
            }
        },
        Some(_) => {
            return Err(ApiError::invalid(
                "`conversation` is a name or {\"id\": name}",
            ));
        }
    };
    let chat = match (&request.previous_response_id, &named) {
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid(
                "give previous_response_id or conversation, not both",
            ));
        }
        (Some(previous), None) => chat_of_response(key, previous)
            .ok_or_else(|| not_found(&format!("previous response {previous}")))?,
        (None, name) => chat_of(key, name.as_deref()),
    };
    let continued = request.previous_response_id.is_some() || named.is_some();
    let text = text_of(&request, continued)?;
    let made = Made {
        id: response_id(&chat),
        item: format!("msg_{}", random_id()),
        created: now_millis() / 1000,
        model: request.model.clone(),
        previous: request.previous_response_id.clone(),
        conversation: named.clone(),
    };
    let answer = ask(api, key, chat, named, text).await?;
    if request.stream {
        return Ok(stream(api.clone(), key.to_owned(), answer, made));
    }
    let mut answer = answer;
    loop {
        match answer.next().await {
            Some(Event::Done { text, usage }) => {
                let response = made.response("completed", Some(&text), usage);
                api.responses.keep(key, &response);
                return Ok(axum::Json(response).into_response());
            }
            Some(_) => {}
            None => return Err(busy(api.settings.request_timeout)),
        }
    }
}

/// The response as OpenAI's events: created, the message and its text part added, text
/// deltas, the text, part and message done, completed.
fn stream(api: Api, key: String, answer: Answer, made: Made) -> Response {
    let mut seq = 0u64;
    let mut event = |kind: &str, body: Value| numbered(&mut seq, kind, body);
    let mut queued = VecDeque::new();
    queued.push_back(event(
        "response.created",
        json!({"response": made.response("in_progress", None, None)}),
    ));
    queued.push_back(event(
        "response.in_progress",
        json!({"response": made.response("in_progress", None, None)}),
    ));
    queued.push_back(event(
        "response.output_item.added",
        json!({"output_index": 0, "item": made.message("", "in_progress")}),
    ));
    queued.push_back(event(
        "response.content_part.added",
        json!({"item_id": made.item, "output_index": 0, "content_index": 0,
               "part": {"type": "output_text", "text": "", "annotations": []}}),
    ));
    let state = (answer, queued, false, seq);
    let events = futures_util::stream::unfold(
        state,
        move |(mut a, mut queued, mut ended, mut seq)| {
            let (api, key) = (api.clone(), key.clone());
            let item = made.item.clone();
            let done_made = Made {
                id: made.id.clone(),
                item: made.item.clone(),
                created: made.created,
                model: made.model.clone(),
                previous: made.previous.clone(),
                conversation: made.conversation.clone(),
            };
            async move {
                let mut event = |kind: &str, body: Value| numbered(&mut seq, kind, body);
                loop {
                    if let Some(e) = queued.pop_front() {
                        return Some((Ok::<_, Infallible>(e), (a, queued, ended, seq)));
                    }
                    if ended {
                        return None;
                    }
                    match a.next().await {
                        Some(Event::Delta(delta)) => {
                            queued.push_back(event(
                            "response.output_text.delta",
                            json!({"item_id": item, "output_index": 0, "content_index": 0, "delta": delta}),
                        ));
                        }
                        Some(Event::Note(note)) => {
                            queued.push_back(Sse::default().event("hermes.note").data(note));
                        }
                        Some(Event::Done { text: whole, usage }) => {
                            // The deltas add up to the answer; where the model started over they
                            // do not, and the done events carry the answer itself.
                            let part =
                                json!({"type": "output_text", "text": whole, "annotations": []});
                            queued.push_back(event(
                            "response.output_text.done",
                            json!({"item_id": item, "output_index": 0, "content_index": 0, "text": whole}),
                        ));
                            queued.push_back(event(
                            "response.content_part.done",
                            json!({"item_id": item, "output_index": 0, "content_index": 0, "part": part}),
                        ));
                            queued.push_back(event(
                            "response.output_item.done",
                            json!({"output_index": 0, "item": done_made.message(&whole, "completed")}),
                        ));
                            let response = done_made.response("completed", Some(&whole), usage);
                            api.responses.keep(&key, &response);
                            queued.push_back(event(
                                "response.completed",
                                json!({"response": response}),
                            ));
                            ended = true;
                        }
                        None => {
                            let mut failed = done_made.response("failed", None, None);
                            failed["error"] =
                                busy(api.settings.request_timeout).body()["error"].clone();
                            queued.push_back(event("response.failed", json!({"response": failed})));
                            ended = true;
                        }
                    }
                }
            }
        },
    );
    axum::response::Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// One event of the stream, numbered in order.
fn numbered(seq: &mut u64, kind: &str, mut body: Value) -> Sse {
    body["type"] = json!(kind);
    body["sequence_number"] = json!(*seq);
    *seq += 1;
    Sse::default().event(kind).data(body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_id_names_its_conversation_to_its_key_only() {
        let chat: ChatId = "editor:release notes".into();
        let id = response_id(&chat);
        assert_eq!(chat_of_response("editor", &id), Some(chat));
        assert_eq!(chat_of_response("other", &id), None, "another key's");
        assert_eq!(chat_of_response("editor", "resp_zz_1"), None);
        assert_eq!(chat_of_response("editor", "nonsense"), None);
    }
}
