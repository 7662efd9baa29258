//! The contract between the hermes core and its platform adapters.
//!
//! Everything that crosses from a platform SDK into the daemon, or back, is a type of this crate:
//! an inbound [`Message`], the [`SessionKey`] the core derives from it, an [`Outbound`] reply, and
//! the [`Adapter`] trait each platform crate implements. Adapters never import the core and the
//! core never imports a platform SDK.
//!
//! The one rule that makes every adapter loss-free: an adapter hands each inbound event to
//! [`InboundSink::deliver`] and acknowledges it to its platform (Telegram offset, IMAP `\Seen`,
//! Slack envelope ack, Matrix sync token) only after `deliver` returned `Ok`, which means the event
//! is durably stored or was recognised as a duplicate.

mod adapter;
mod message;
mod outbound;
mod secrets;
mod session_key;

pub use adapter::{
    Adapter, AdapterError, Capabilities, Delivery, InboundSink, LengthUnit, SeenChat, SendError,
    SentId, SinkError,
};
pub use message::{
    Attachment, AttachmentKind, Chat, ChatId, ChatKind, Message, MessageId, Platform, ReplyRef,
    Sender, ThreadId, Trigger, UserId,
};
pub use outbound::{Button, MAX_CAPTION_CHARS, Outbound, OutboundFile, TokenUsage, keys};
pub use secrets::{register_secret, scrub};
pub use session_key::{GroupSessions, ParseSessionKeyError, SessionKey, SessionScope};

/// Milliseconds since the Unix epoch, the one timestamp unit that crosses this boundary.
pub type UnixMillis = i64;

/// Current time in [`UnixMillis`].
pub fn now_millis() -> UnixMillis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
