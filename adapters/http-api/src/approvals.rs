//! `/v1/hermes/approvals`: what the agent asked a key with buttons (a confirmation of a tool
//! call, a question with choices) while one of its requests waits, and the answer to it. An
//! answer is delivered like a button pressed in a chat: the core checks it is the requester's
//! and that the wait is still open.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hermes_adapter::{Chat, ChatKind, Message, Platform, Sender, Trigger, now_millis};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::ask::deliver;
use crate::state::{Api, Caller, random_id};
use crate::wire::ApiError;

#[derive(Debug, Deserialize)]
struct AnswerBody {
    /// A button's label, or for a confirmation once, session, always or deny.
    answer: String,
}

pub(crate) async fn list(
    State(api): State<Api>,
    axum::Extension(Caller(key)): axum::Extension<Caller>,
) -> Response {
    let prompts: Vec<Value> = api
        .waiting
        .prompts_of(&key)
        .into_iter()
        .map(|p| {
            let conversation = p
                .chat
                .as_str()
                .split_once(':')
                .map_or("", |(_, c)| c)
                .to_owned();
            json!({
                "id": p.id,
                "conversation": conversation,
                "text": p.text,
                "answers": p.buttons.iter().map(|b| b.label.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    axum::Json(json!({"object": "list", "data": prompts})).into_response()
}

/// The button data an answer stands for.
fn pick(buttons: &[hermes_adapter::Button], answer: &str) -> Option<String> {
    let answer = answer.trim().to_lowercase();
    let code = match answer.as_str() {
        "once" | "allow" | "yes" => Some("o"),
        "session" => Some("s"),
        "always" => Some("a"),
        "deny" | "no" => Some("d"),
        _ => None,
    };
    buttons
        .iter()
        .find(|b| {
            b.label.trim().to_lowercase() == answer
                || (b.data.starts_with("ap:")
                    && code.is_some_and(|c| b.data.rsplit(':').next() == Some(c)))
        })
        .map(|b| b.data.clone())
}

pub(crate) async fn answer(
    State(api): State<Api>,
    axum::Extension(Caller(key)): axum::Extension<Caller>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let Ok(given) = serde_json::from_slice::<AnswerBody>(&body) else {
        return ApiError::invalid(
            "the body is {\"answer\": \"once\" | \"session\" | \"always\" | \"deny\" | a choice}",
        )
        .into_response();
    };
    let Some(prompt) = api.waiting.take_prompt(&key, &id) else {
        return ApiError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!("nothing is waiting for an answer as {id} (answered, timed out, or not yours)"),
        )
        .into_response();
    };
    let Some(data) = pick(&prompt.buttons, &given.answer) else {
        let choices: Vec<&str> = prompt.buttons.iter().map(|b| b.label.as_str()).collect();
        // Not taken: it can still be answered.
        let error = ApiError::invalid(format!(
            "`{}` is not one of the answers: {}",
            given.answer,
            choices.join(", ")
        ));
        api.waiting.restore_prompt(prompt);
        return error.into_response();
    };
    let message = Message {
        platform: Platform::Api,
        id: random_id().into(),
        chat: Chat {
            id: prompt.chat.clone(),
            kind: ChatKind::Group,
            title: None,
        },
        thread: None,
        sender: Sender {
            id: key.as_str().into(),
            display_name: key.clone(),
            handle: None,
            is_bot: false,
        },
        text: given.answer.clone(),
        attachments: Vec::new(),
        reply_to: None,
        sent_at: now_millis(),
        subject: None,
        topic: None,
        trigger: Trigger::Button { data },
    };
    match deliver(&api, message).await {
        Ok(()) => axum::Json(json!({"id": id, "answer": given.answer, "status": "delivered"}))
            .into_response(),
        Err(e) => e.into_response(),
    }
}
