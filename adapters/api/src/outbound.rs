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
    /// The tokens of the turn this answer ends, for platforms that report them (the HTTP API's
    /// `usage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// Set by the outbox when this message may already have reached the platform: an earlier
    /// attempt ended without a clear answer, or the process that tried it died. The time it was
    /// queued, from which an adapter that can look at what it already sent (Slack) searches for
    /// it before sending again. Never stored.
    #[serde(skip)]
    pub maybe_sent_since: Option<crate::UnixMillis>,
}

/// Tokens one turn used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// The idempotency keys of the rows that answer a message, `<kind>:<id>:<part>/<parts>`: the
/// agent's answer, a command's reply, the notice of a crashed turn. A platform that pairs each
/// request with its answer (the HTTP API) tells them from everything else said meanwhile (a
/// confirmation asked, a note) by these.
pub mod keys {
    /// The agent's answer to a turn (`turn:<inbox id>`).
    pub const TURN: &str = "turn";
    /// A command's reply (`cmd:<inbox id>`).
    pub const COMMAND: &str = "cmd";
    /// The notice that a turn crashed (`panic:<inbox id>`).
    pub const CRASH: &str = "panic";

    /// Whether a row with this key answers a message.
    pub fn answers(key: &str) -> bool {
        key.split_once(':')
            .is_some_and(|(kind, _)| [TURN, COMMAND, CRASH].contains(&kind))
    }

    /// Whether it is the last part of its answer (`…:n/n`, or a key without parts).
    pub fn last_part(key: &str) -> bool {
        let Some((_, parts)) = key.rsplit_once(':') else {
            return true;
        };
        match parts.split_once('/') {
            Some((i, n)) => i == n || i.parse::<u32>().ok() >= n.parse::<u32>().ok(),
            None => true,
        }
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn answers_and_their_last_parts() {
            assert!(super::answers("turn:12:1/1") && super::answers("cmd:3:1/2"));
            assert!(!super::answers("ap:ff01") && !super::answers("") && !super::answers("note:x"));
            assert!(super::last_part("turn:12:2/2") && !super::last_part("turn:12:1/2"));
        }
    }
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
            usage: None,
            maybe_sent_since: None,
        }
    }
}
