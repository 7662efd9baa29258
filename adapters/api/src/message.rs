//! The inbound [`Message`]: one event from any platform, normalized.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::UnixMillis;

/// Declares [`Platform`] from one table: each row is a variant, its name in configuration and
/// session keys, and how the agent refers to it in a sentence.
macro_rules! platforms {
    ($($(#[$doc:meta])* $variant:ident = $name:literal, $title:literal;)*) => {
        /// The messaging platforms hermes speaks. `Cli` is the local terminal (`hermes chat`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "lowercase")]
        pub enum Platform {
            $($(#[$doc])* $variant,)*
        }

        impl Platform {
            pub const ALL: &[Platform] = &[$(Platform::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Platform::$variant => $name,)*
                }
            }

            /// How the agent names the platform in a sentence ("You are talking on …").
            pub fn title(self) -> &'static str {
                match self {
                    $(Platform::$variant => $title,)*
                }
            }
        }
    };
}

platforms! {
    Telegram = "telegram", "Telegram";
    Discord = "discord", "Discord";
    Slack = "slack", "Slack";
    Email = "email", "email";
    Matrix = "matrix", "Matrix";
    /// The OpenAI-compatible HTTP API (each key one person).
    Api = "api", "the HTTP API";
    Cli = "cli", "the terminal";
    /// Scheduled jobs: their sessions live here; nothing is delivered to it.
    Cron = "cron", "a schedule";
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Platform {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Platform::ALL
            .iter()
            .copied()
            .find(|p| p.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let names: Vec<&str> = Platform::ALL.iter().map(|p| p.as_str()).collect();
                format!(
                    "unknown platform `{s}` (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }
    };
}

string_id!(
    /// The platform's own id of a message, unique within its chat.
    MessageId
);
string_id!(
    /// The platform's id of a chat: a DM, a group, a channel, a mailbox thread, a room.
    ChatId
);
string_id!(
    /// The platform's id of a thread inside a chat (Telegram topic, Slack thread_ts, Discord thread).
    ThreadId
);
string_id!(
    /// The platform's stable id of a user (never a display name or handle, which can change).
    UserId
);

/// What kind of conversation a chat is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatKind {
    /// One person and the bot.
    Direct,
    /// Several people (Telegram group/supergroup, Discord guild channel, Slack channel, Matrix room).
    Group,
    /// A broadcast channel where the bot reads posts.
    Channel,
}

/// The chat a message belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chat {
    pub id: ChatId,
    pub kind: ChatKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Who sent a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sender {
    pub id: UserId,
    pub display_name: String,
    /// `@handle` without the `@`, where the platform has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    #[serde(default)]
    pub is_bot: bool,
}

/// What kind of attachment a message carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttachmentKind {
    Image,
    Audio,
    Voice,
    Video,
    Document,
    Sticker,
    Other,
}

/// A file attached to a message. The bytes are fetched on demand through
/// [`crate::Adapter::fetch_attachment`] with the `locator`, which is the adapter's own reference
/// (Telegram `file_id`, a URL, an IMAP part path) and is opaque to the core.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    pub kind: AttachmentKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    pub locator: String,
}

/// The message an inbound message answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyRef {
    pub id: MessageId,
    /// True when the message replied to was sent by this bot.
    #[serde(default)]
    pub to_bot: bool,
    /// Text of the message replied to, when the platform includes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// Why the bot should look at a message. Each adapter decides this with its platform's rules
/// (entities, mentions, reply chains); the core decides once, for everybody, what to do with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Trigger {
    /// A direct (private) message to the bot.
    Direct,
    /// The bot was mentioned in a group.
    Mention,
    /// A reply to one of the bot's messages.
    ReplyToBot,
    /// A chat command addressed to this bot (`/new`, `/help@thisbot`).
    Command,
    /// A button the bot showed was pressed; `data` is the button's payload.
    Button { data: String },
    /// Group chatter not addressed to the bot.
    Ambient,
}

impl Trigger {
    /// Whether the bot was addressed at all (everything but ambient chatter).
    pub fn addressed(&self) -> bool {
        !matches!(self, Trigger::Ambient)
    }
}

/// One inbound event from any platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub platform: Platform,
    /// The platform's own id of this message; with `platform` and `chat.id` it is the
    /// deduplication key of the inbox.
    pub id: MessageId,
    pub chat: Chat,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<ThreadId>,
    pub sender: Sender,
    /// The text as the user wrote it (commands normalized: `/new@thisbot` becomes `/new`).
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<ReplyRef>,
    pub sent_at: UnixMillis,
    /// Email subject line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// A conversation of its own inside a direct chat, where the platform has such a thing: an
    /// email thread, named by the `Message-ID` of its first mail. A direct chat's messages with
    /// different topics are different sessions (answered each on their own); `None` where a
    /// direct chat is one conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<ThreadId>,
    pub trigger: Trigger,
}

impl Message {
    /// The chat command in this message, lowercased and without the slash, with its argument
    /// text: `"/Model gpt-5"` gives `Some(("model", "gpt-5"))`.
    pub fn command(&self) -> Option<(String, &str)> {
        let text = self.text.trim_start();
        let rest = text.strip_prefix('/')?;
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let name = &rest[..end];
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return None;
        }
        Some((name.to_ascii_lowercase(), rest[end..].trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(text: &str) -> Message {
        Message {
            platform: Platform::Telegram,
            id: "1".into(),
            chat: Chat {
                id: "5".into(),
                kind: ChatKind::Direct,
                title: None,
            },
            thread: None,
            sender: Sender {
                id: "5".into(),
                display_name: "Ann".into(),
                handle: None,
                is_bot: false,
            },
            text: text.into(),
            attachments: vec![],
            reply_to: None,
            sent_at: 0,
            subject: None,
            topic: None,
            trigger: Trigger::Direct,
        }
    }

    #[test]
    fn command_is_split_from_its_argument() {
        assert_eq!(
            msg("/Model  gpt-5 ").command(),
            Some(("model".into(), "gpt-5"))
        );
        assert_eq!(msg("/new").command(), Some(("new".into(), "")));
        assert_eq!(msg("hello /new").command(), None);
        assert_eq!(msg("/ not a command").command(), None);
        assert_eq!(msg("/etc/passwd is a path").command(), None);
    }

    #[test]
    fn message_round_trips_through_json() {
        let mut m = msg("hi");
        m.trigger = Trigger::Button { data: "ok".into() };
        let back: Message = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn platform_parses_case_insensitively() {
        assert_eq!("Telegram".parse::<Platform>(), Ok(Platform::Telegram));
        assert!("icq".parse::<Platform>().is_err());
    }
}
