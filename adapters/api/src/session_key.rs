//! [`SessionKey`]: which conversation a message belongs to, typed rather than a joined string.
//!
//! Canonical string forms (each component escaped, so two conversations never share a key):
//!
//! | scope | form | example |
//! |---|---|---|
//! | direct message | `platform:user` | `telegram:8123456` |
//! | one user in a group | `platform:chat:user` | `telegram:-1001:8123456` |
//! | a whole group chat | `platform:chat:*` | `telegram:-1001:*` |
//! | a thread, shared | `platform:chat#thread:*` | `slack:C1#1712.5:*` |
//! | one user in a thread | `platform:chat#thread:user` | `discord:42#7:99` |
//!
//! Inside a component `\`, `:` and `#` are escaped with a backslash, and a component that is
//! exactly `*` is written `\*`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::message::{ChatId, ChatKind, Message, Platform, ThreadId, UserId};

/// How group conversations are split into sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupSessions {
    /// Each person in a group has their own session (default; nobody reads another's context).
    #[default]
    PerUser,
    /// The whole chat shares one session.
    PerChat,
}

/// Which part of a platform a session covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SessionScope {
    /// A direct chat with one person; `topic` names a conversation of its own inside it (an
    /// email thread), `None` where the chat is one conversation.
    Direct {
        user: UserId,
        topic: Option<ThreadId>,
    },
    /// Group chat; `user: None` means shared by the whole chat (or thread).
    Group {
        chat: ChatId,
        thread: Option<ThreadId>,
        user: Option<UserId>,
    },
}

/// The key of one conversation with the agent.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey {
    pub platform: Platform,
    pub scope: SessionScope,
}

impl SessionKey {
    pub fn direct(platform: Platform, user: impl Into<UserId>) -> Self {
        SessionKey {
            platform,
            scope: SessionScope::Direct {
                user: user.into(),
                topic: None,
            },
        }
    }

    /// Whether several people share this conversation (a thread, or a group set to one
    /// session per chat): levels and grants there are not any one member's to set.
    pub fn is_shared(&self) -> bool {
        matches!(self.scope, SessionScope::Group { user: None, .. })
    }

    /// Whose conversations these are, for privacy boundaries (history search, memory files):
    /// `platform:user` for a person's private chats; for a group, the group conversation itself
    /// (the key's string form, per person or shared), so nothing said in private ever surfaces
    /// in a group and a group's content stays with that group. Escaped like the key.
    pub fn owner(&self) -> String {
        match &self.scope {
            SessionScope::Direct { user, .. } => {
                let mut s = String::from(self.platform.as_str());
                s.push(':');
                escape(&mut s, user.as_str());
                s
            }
            SessionScope::Group { .. } => self.to_string(),
        }
    }

    /// The session a message belongs to: DMs per user; groups per user by default or per chat
    /// when configured; threads are shared by everyone in them.
    pub fn for_message(msg: &Message, groups: GroupSessions) -> Self {
        let scope = match msg.chat.kind {
            ChatKind::Direct => SessionScope::Direct {
                user: msg.sender.id.clone(),
                topic: msg.topic.clone(),
            },
            ChatKind::Group | ChatKind::Channel => {
                let shared = msg.thread.is_some() || groups == GroupSessions::PerChat;
                SessionScope::Group {
                    chat: msg.chat.id.clone(),
                    thread: msg.thread.clone(),
                    user: (!shared).then(|| msg.sender.id.clone()),
                }
            }
        };
        SessionKey {
            platform: msg.platform,
            scope,
        }
    }
}

fn escape(out: &mut String, component: &str) {
    if component == "*" {
        out.push_str("\\*");
        return;
    }
    for c in component.chars() {
        if matches!(c, '\\' | ':' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
}

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::from(self.platform.as_str());
        s.push(':');
        match &self.scope {
            SessionScope::Direct { user, topic } => {
                escape(&mut s, user.as_str());
                if let Some(topic) = topic {
                    s.push('#');
                    escape(&mut s, topic.as_str());
                }
            }
            SessionScope::Group { chat, thread, user } => {
                escape(&mut s, chat.as_str());
                if let Some(thread) = thread {
                    s.push('#');
                    escape(&mut s, thread.as_str());
                }
                s.push(':');
                match user {
                    Some(user) => escape(&mut s, user.as_str()),
                    None => s.push('*'),
                }
            }
        }
        f.write_str(&s)
    }
}

/// A string that is not a valid [`SessionKey`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid session key `{input}`: {reason}")]
pub struct ParseSessionKeyError {
    input: String,
    reason: &'static str,
}

/// One unescaped component and the separator that ended it.
#[derive(Debug, PartialEq)]
struct Part {
    text: String,
    star: bool,
    end: Option<char>,
}

fn split(input: &str) -> Result<Vec<Part>, &'static str> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut raw_star = false;
    let mut chars = input.chars();
    let mut raw_len = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let next = chars.next().ok_or("dangling escape at the end")?;
                cur.push(next);
                raw_len += 2;
            }
            ':' | '#' => {
                parts.push(Part {
                    star: raw_star && raw_len == 1,
                    text: std::mem::take(&mut cur),
                    end: Some(c),
                });
                raw_star = false;
                raw_len = 0;
            }
            c => {
                raw_star = c == '*' && raw_len == 0;
                cur.push(c);
                raw_len += 1;
            }
        }
    }
    parts.push(Part {
        star: raw_star && raw_len == 1,
        text: cur,
        end: None,
    });
    Ok(parts)
}

impl FromStr for SessionKey {
    type Err = ParseSessionKeyError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let err = |reason| ParseSessionKeyError {
            input: input.to_owned(),
            reason,
        };
        let parts = split(input).map_err(err)?;
        if parts.iter().any(|p| p.text.is_empty()) {
            return Err(err("empty component"));
        }
        let platform: Platform = parts[0].text.parse().map_err(|_| err("unknown platform"))?;
        if parts[0].end != Some(':') {
            return Err(err("expected `platform:` at the start"));
        }
        let user_of = |p: &Part| (!p.star).then(|| UserId(p.text.clone()));
        let scope = match parts.as_slice() {
            [_, user] if !user.star => SessionScope::Direct {
                user: UserId(user.text.clone()),
                topic: None,
            },
            [_, user, topic] if user.end == Some('#') && !user.star && !topic.star => {
                SessionScope::Direct {
                    user: UserId(user.text.clone()),
                    topic: Some(ThreadId(topic.text.clone())),
                }
            }
            [_, chat, last] if chat.end == Some(':') => SessionScope::Group {
                chat: ChatId(chat.text.clone()),
                thread: None,
                user: user_of(last),
            },
            [_, chat, thread, last] if chat.end == Some('#') && thread.end == Some(':') => {
                SessionScope::Group {
                    chat: ChatId(chat.text.clone()),
                    thread: Some(ThreadId(thread.text.clone())),
                    user: user_of(last),
                }
            }
            _ => {
                return Err(err(
                    "expected platform:user[#topic], platform:chat[#thread]:user or …:*",
                ));
            }
        };
        Ok(SessionKey { platform, scope })
    }
}

impl Serialize for SessionKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SessionKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(chat: &str, thread: Option<&str>, user: Option<&str>) -> SessionKey {
        SessionKey {
            platform: Platform::Telegram,
            scope: SessionScope::Group {
                chat: chat.into(),
                thread: thread.map(Into::into),
                user: user.map(Into::into),
            },
        }
    }

    #[test]
    fn canonical_forms() {
        assert_eq!(
            SessionKey::direct(Platform::Telegram, "8123456").to_string(),
            "telegram:8123456"
        );
        assert_eq!(
            group("-1001", None, Some("42")).to_string(),
            "telegram:-1001:42"
        );
        assert_eq!(group("-1001", None, None).to_string(), "telegram:-1001:*");
        assert_eq!(
            group("-1001", Some("7"), None).to_string(),
            "telegram:-1001#7:*"
        );
    }

    #[test]
    fn separators_inside_ids_cannot_collide() {
        let topic = |user: &str, topic: &str| SessionKey {
            platform: Platform::Telegram,
            scope: SessionScope::Direct {
                user: user.into(),
                topic: Some(topic.into()),
            },
        };
        let keys = [
            SessionKey::direct(Platform::Matrix, "@a:b.org"),
            topic("a", "b"),
            topic("a", "b:c"),
            topic("a#b", "c"),
            topic("a", "*"),
            group("a", None, Some("b")),
            group("a:b", None, None),
            group("a", None, Some("*")),
            group("a", None, None),
            group("a#b", None, Some("c")),
            group("a", Some("b"), Some("c")),
            group("a\\", Some("b"), Some("c")),
            group("*", None, Some("*")),
        ];
        let strings: Vec<String> = keys.iter().map(ToString::to_string).collect();
        for (i, a) in strings.iter().enumerate() {
            for b in &strings[i + 1..] {
                assert_ne!(a, b);
            }
        }
        for (key, s) in keys.iter().zip(&strings) {
            assert_eq!(&s.parse::<SessionKey>().unwrap(), key, "round trip of {s}");
        }
    }

    #[test]
    fn owners_keep_private_chats_and_groups_apart() {
        assert_eq!(
            SessionKey::direct(Platform::Telegram, "5").owner(),
            "telegram:5"
        );
        assert_eq!(group("-1", None, Some("5")).owner(), "telegram:-1:5");
        assert_eq!(group("-1", Some("9"), None).owner(), "telegram:-1#9:*");
        assert_ne!(
            group("5", None, None).owner(),
            SessionKey::direct(Platform::Telegram, "5").owner()
        );
    }

    #[test]
    fn malformed_keys_are_rejected() {
        for bad in [
            "",
            "telegram",
            "telegram:",
            "nope:1",
            "telegram:1:2:3",
            "telegram:a\\",
        ] {
            assert!(bad.parse::<SessionKey>().is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn threads_are_shared_and_groups_per_user_by_default() {
        use crate::message::{Chat, Sender, Trigger};
        let mut m = Message {
            platform: Platform::Telegram,
            id: "1".into(),
            chat: Chat {
                id: "-100".into(),
                kind: ChatKind::Group,
                title: None,
            },
            thread: None,
            sender: Sender {
                id: "9".into(),
                display_name: "Bo".into(),
                handle: None,
                is_bot: false,
            },
            text: String::new(),
            attachments: vec![],
            reply_to: None,
            sent_at: 0,
            subject: None,
            topic: None,
            trigger: Trigger::Mention,
        };
        assert_eq!(
            SessionKey::for_message(&m, GroupSessions::PerUser).to_string(),
            "telegram:-100:9"
        );
        assert_eq!(
            SessionKey::for_message(&m, GroupSessions::PerChat).to_string(),
            "telegram:-100:*"
        );
        m.thread = Some("5".into());
        assert_eq!(
            SessionKey::for_message(&m, GroupSessions::PerUser).to_string(),
            "telegram:-100#5:*"
        );
        // A direct chat is one conversation, unless the platform names a topic (a mail thread).
        m.chat.kind = ChatKind::Direct;
        assert_eq!(
            SessionKey::for_message(&m, GroupSessions::PerUser).to_string(),
            "telegram:9"
        );
        m.topic = Some("root@mail".into());
        let key = SessionKey::for_message(&m, GroupSessions::PerUser);
        assert_eq!(key.to_string(), "telegram:9#root@mail");
        assert_eq!(
            key.owner(),
            "telegram:9",
            "one person's, whatever the topic"
        );
    }
}
