//! [`Outbound`]: one reply for an adapter to render and send.

use serde::{Deserialize, Serialize};

use crate::message::{ChatId, MessageId, ThreadId};

/// A button under a message (approvals, choices). `data` comes back as
/// [`crate::Trigger::Button`] when pressed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Button {
    pub label: String,
    pub data: String,
}

/// One message to send. The text is markdown as the agent wrote it and already fits the
/// platform's length limit (the core chunks by [`crate::Capabilities`]); the adapter renders it
/// (Telegram HTML, Slack mrkdwn, …) and falls back to plain text when the platform rejects the
/// formatting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outbound {
    pub chat: ChatId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<ThreadId>,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<MessageId>,
    /// Rows of buttons, for platforms whose capabilities include buttons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buttons: Vec<Vec<Button>>,
    /// Unique per logical message; the outbox never sends two rows with one key.
    pub idempotency_key: String,
    /// Deliver by replacing the text of this earlier message of the bot (a streamed preview)
    /// instead of sending a new one; if that fails, the message is sent new.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit_of: Option<String>,
}

impl Outbound {
    pub fn text(chat: ChatId, text: impl Into<String>, idempotency_key: impl Into<String>) -> Self {
        Outbound {
            chat,
            thread: None,
            text: text.into(),
            reply_to: None,
            buttons: Vec::new(),
            idempotency_key: idempotency_key.into(),
            edit_of: None,
        }
    }
}
