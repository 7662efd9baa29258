//! Asking the agent for one request: its conversation (a named one, or one of its own), one
//! request per conversation at a time, the message delivered to the inbox like a chat's, and
//! the events the core sends back until the answer or the timeout.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use hermes_adapter::{Chat, ChatId, ChatKind, Message, Platform, Sender, Trigger, now_millis};
use tokio::sync::{OwnedMutexGuard, mpsc};

use crate::state::{Api, random_id};
use crate::waiting::{Event, Waiting};
use crate::wire::ApiError;

/// Longest conversation name (`user`, `X-Hermes-Session`, `conversation`).
const MAX_NAME: usize = 128;

/// A conversation name as given, or why it is refused.
pub(crate) fn conversation_name(
    headers: &HeaderMap,
    user: Option<&str>,
) -> Result<Option<String>, ApiError> {
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

/// The text the agent is told: the caller's instructions, for a conversation not held here the
/// earlier `(role, text)` turns as its context, then what was said.
pub(crate) fn compose(
    instructions: &[String],
    earlier: &[(String, String)],
    with_context: bool,
    said: &str,
) -> String {
    let mut text = String::new();
    if !instructions.is_empty() {
        text.push_str(&format!(
            "[Instructions from the API caller]\n{}\n\n",
            instructions.join("\n")
        ));
    }
    if with_context && !earlier.is_empty() {
        let turns: Vec<String> = earlier.iter().map(|(r, t)| format!("{r}: {t}")).collect();
        text.push_str(&format!(
            "[The conversation so far]\n{}\n\n[The new message]\n",
            turns.join("\n")
        ));
    }
    text.push_str(said);
    text
}

/// Check a conversation name given in the body (`conversation` of the Responses API).
pub(crate) fn checked_name(name: &str) -> Result<String, ApiError> {
    let mut headers = HeaderMap::new();
    headers.remove("x-hermes-session");
    conversation_name(&headers, Some(name))?
        .ok_or_else(|| ApiError::invalid("the conversation name is empty"))
}

/// The chat of `key`'s conversation `name`, or of a new one of its own.
pub(crate) fn chat_of(key: &str, name: Option<&str>) -> ChatId {
    let conversation = name.map_or_else(|| format!("~{}", random_id()), str::to_owned);
    ChatId::from(format!("{key}:{conversation}"))
}

/// Stops listening to a conversation when the request ends, however it ends.
struct Listening {
    waiting: Arc<Waiting>,
    chat: ChatId,
    turn: Option<OwnedMutexGuard<()>>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.waiting.forget(&self.chat);
        // Let the next request of the conversation in, then drop its lock when nobody waits
        // (a conversation of one request's own would otherwise leave an entry for ever).
        drop(self.turn.take());
        self.waiting.release(&self.chat);
    }
}

/// One of a key's requests in flight, counted until it ends.
struct InFlight {
    counts: Arc<dashmap::DashMap<String, usize>>,
    key: String,
}

impl InFlight {
    /// Count one more request of `key`, unless it has `max` already.
    fn enter(api: &Api, key: &str) -> Result<InFlight, ApiError> {
        let mut n = api.in_flight.entry(key.to_owned()).or_insert(0);
        if *n >= api.settings.requests_per_key {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_exceeded",
                format!(
                    "this key has {} requests waiting already (api.requests_per_key); try again when one is answered",
                    *n
                ),
            )
            .code("rate_limit_exceeded")
            .retry_after(2));
        }
        *n += 1;
        Ok(InFlight {
            counts: api.in_flight.clone(),
            key: key.to_owned(),
        })
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(mut n) = self.counts.get_mut(&self.key) {
            *n = n.saturating_sub(1);
        }
    }
}

/// A request waiting for its answer.
pub(crate) struct Answer {
    deadline: tokio::time::Instant,
    events: mpsc::UnboundedReceiver<Event>,
    _listening: Listening,
    _counted: InFlight,
}

impl Answer {
    /// The next event, `None` at the timeout.
    pub async fn next(&mut self) -> Option<Event> {
        tokio::time::timeout_at(self.deadline, self.events.recv())
            .await
            .ok()
            .flatten()
    }
}

/// Say `text` as `key` in `chat` (named `title`), and listen for the answer.
pub(crate) async fn ask(
    api: &Api,
    key: &str,
    chat: ChatId,
    title: Option<String>,
    text: String,
) -> Result<Answer, ApiError> {
    let counted = InFlight::enter(api, key)?;
    let timeout = api.settings.request_timeout;
    let turn = tokio::time::timeout(timeout, api.waiting.turn_of(&chat).lock_owned())
        .await
        .map_err(|_| busy(timeout))?;
    let events = api.waiting.listen(&chat);
    let listening = Listening {
        waiting: api.waiting.clone(),
        chat: chat.clone(),
        turn: Some(turn),
    };
    let message = Message {
        platform: Platform::Api,
        id: random_id().into(),
        chat: Chat {
            id: chat.clone(),
            kind: ChatKind::Group,
            title,
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
        topic: None,
        trigger: Trigger::Mention,
    };
    deliver(api, message).await?;
    Ok(Answer {
        deadline: tokio::time::Instant::now() + timeout,
        events,
        _listening: listening,
        _counted: counted,
    })
}

/// Hand `message` to the inbox.
pub(crate) async fn deliver(api: &Api, message: Message) -> Result<(), ApiError> {
    api.sink.deliver(message).await.map(drop).map_err(|e| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            e.to_string(),
        )
    })
}

pub(crate) fn busy(timeout: Duration) -> ApiError {
    ApiError::new(
        StatusCode::GATEWAY_TIMEOUT,
        "timeout",
        format!(
            "no answer within {} s (api.request_timeout_secs)",
            timeout.as_secs()
        ),
    )
}
