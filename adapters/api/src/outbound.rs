//! [`Outbound`]: one reply for an adapter to render and send.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::message::{ChatId, MessageId, ThreadId};

/// A button under a message (approvals, choices). `data` comes back as
/// [`crate::Trigger::Button`] when pressed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Button {
    pub label: String,
    pub data: String,
}

/// A file to send: a copy the gateway made for the outbox (it stays until the row is pruned),
/// so the agent may change or delete the original meanwhile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboundFile {
    pub path: PathBuf,
    /// The name the recipient sees.
    pub name: String,
    /// The media type guessed from the name and the first bytes.
    pub mime: String,
    pub size: u64,
}

impl OutboundFile {
    /// Whether platforms should show it as a picture rather than a document.
    pub fn is_image(&self) -> bool {
        matches!(
            self.mime.as_str(),
            "image/png" | "image/jpeg" | "image/gif" | "image/webp"
        )
    }
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
    /// A file sent with this message, `text` being its caption (the core keeps captions under
    /// [`MAX_CAPTION_CHARS`]). Only queued for adapters whose `max_upload_bytes` is not 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<OutboundFile>,
}

/// Longest caption the core puts on a file (Telegram allows 1024 UTF-16 units; a longer caption
/// goes out as its own message first).
pub const MAX_CAPTION_CHARS: usize = 1000;

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
            file: None,
        }
    }
}
