//! Telegram updates -> [`Message`]: the sender, the chat, attachments, and the trigger by
//! Telegram's rules (private chat; in groups a mention, a reply to the bot, or a command for this
//! bot; everything else is ambient chatter).

use std::ops::Range;

use hermes_adapter::{
    Attachment, AttachmentKind, Chat, ChatKind, Message, Platform, ReplyRef, Sender, Trigger,
};
use teloxide::types::{self as tg, MessageEntityKind, UpdateKind};

/// Who the bot is, learned from `getMe`.
#[derive(Debug, Clone)]
pub struct BotIdentity {
    pub id: u64,
    pub username: String,
}

/// What to do with one update.
#[derive(Debug)]
pub enum Inbound {
    Message(Message),
    /// A button press; the callback query must be answered once the message is stored.
    Button(Message, tg::CallbackQueryId),
    /// Not for us (edits, channel posts, other update kinds).
    Skip,
}

/// Convert an update.
pub fn convert(update: &tg::Update, me: &BotIdentity) -> Inbound {
    match &update.kind {
        UpdateKind::Message(m) => match message(m, me) {
            Some(msg) => Inbound::Message(msg),
            None => Inbound::Skip,
        },
        UpdateKind::CallbackQuery(q) => match button(q) {
            Some(msg) => Inbound::Button(msg, q.id.clone()),
            None => Inbound::Skip,
        },
        UpdateKind::Error(_) => {
            // teloxide keeps nothing of an update it cannot parse, so the sender cannot be told.
            tracing::warn!(
                update = update.id.0,
                "skipping a Telegram update hermes cannot read"
            );
            Inbound::Skip
        }
        _ => Inbound::Skip,
    }
}

fn chat_of(chat: &tg::Chat) -> Chat {
    Chat {
        id: chat.id.0.to_string().into(),
        kind: if chat.is_private() {
            ChatKind::Direct
        } else if chat.is_channel() {
            ChatKind::Channel
        } else {
            ChatKind::Group
        },
        title: chat.title().map(str::to_owned),
    }
}

fn sender_of(user: &tg::User) -> Sender {
    let mut name = user.first_name.clone();
    if let Some(last) = &user.last_name {
        name.push(' ');
        name.push_str(last);
    }
    Sender {
        id: user.id.0.to_string().into(),
        display_name: name,
        handle: user.username.clone(),
        is_bot: user.is_bot,
    }
}

fn attachments(m: &tg::Message) -> Vec<Attachment> {
    let mut out = Vec::new();
    let mut push = |kind, file: &tg::FileMeta, mime: Option<String>, name: Option<String>| {
        out.push(Attachment {
            kind,
            mime,
            name,
            size: Some(u64::from(file.size)),
            locator: file.id.0.clone(),
        });
    };
    if let Some(sizes) = m.photo()
        && let Some(largest) = sizes.iter().max_by_key(|p| p.width * p.height)
    {
        push(
            AttachmentKind::Image,
            &largest.file,
            Some("image/jpeg".into()),
            None,
        );
    }
    if let Some(d) = m.document() {
        push(
            AttachmentKind::Document,
            &d.file,
            d.mime_type.as_ref().map(ToString::to_string),
            d.file_name.clone(),
        );
    }
    if let Some(v) = m.voice() {
        push(
            AttachmentKind::Voice,
            &v.file,
            v.mime_type.as_ref().map(ToString::to_string),
            None,
        );
    }
    if let Some(a) = m.audio() {
        push(
            AttachmentKind::Audio,
            &a.file,
            a.mime_type.as_ref().map(ToString::to_string),
            a.file_name.clone(),
        );
    }
    if let Some(v) = m.video() {
        push(
            AttachmentKind::Video,
            &v.file,
            v.mime_type.as_ref().map(ToString::to_string),
            v.file_name.clone(),
        );
    }
    if let Some(s) = m.sticker() {
        push(AttachmentKind::Sticker, &s.file, None, s.emoji.clone());
    }
    out
}

/// Decide the trigger and normalize the text (`/cmd@thisbot` -> `/cmd`, the bot's own mention
/// removed). Returns `None` for a command addressed to another bot.
fn trigger(
    m: &tg::Message,
    text: &str,
    me: &BotIdentity,
    is_private: bool,
) -> Option<(Trigger, String)> {
    let raw = text;
    let entities = m
        .entities()
        .or_else(|| m.caption_entities())
        .unwrap_or_default();
    let mention = format!("@{}", me.username);
    let mut command = false;
    let mut mentioned = false;
    let mut text = raw.to_owned();
    for e in entities {
        // Not teloxide's `parse_entities`: it panics on offsets outside the text.
        let Some(range) = byte_range(raw, e.offset, e.length) else {
            continue;
        };
        let covered = &raw[range.clone()];
        match &e.kind {
            MessageEntityKind::BotCommand if range.start == 0 && !command => {
                match covered.split_once('@') {
                    Some((name, target)) if target.eq_ignore_ascii_case(&me.username) => {
                        text = format!("{name}{}", &raw[range.end..]);
                        command = true;
                    }
                    Some(_) => return None,
                    None => command = true,
                }
            }
            MessageEntityKind::Mention if covered.eq_ignore_ascii_case(&mention) => {
                mentioned = true
            }
            MessageEntityKind::TextMention { user } if user.id.0 == me.id => mentioned = true,
            _ => {}
        }
    }
    if mentioned {
        text = strip_mention(&text, &mention);
    }
    let replied_to_bot = m
        .reply_to_message()
        .and_then(|r| r.from.as_ref())
        .is_some_and(|u| u.id.0 == me.id);
    let trigger = if is_private {
        if command {
            Trigger::Command
        } else {
            Trigger::Direct
        }
    } else if command {
        Trigger::Command
    } else if mentioned {
        Trigger::Mention
    } else if replied_to_bot {
        Trigger::ReplyToBot
    } else {
        Trigger::Ambient
    };
    Some((trigger, text))
}

/// The bytes of `text` that an entity covers; Telegram counts `offset` and `length` in UTF-16
/// units. `None` unless both ends fall on character boundaries within the text.
fn byte_range(text: &str, offset: usize, length: usize) -> Option<Range<usize>> {
    let end = offset.checked_add(length)?;
    let (mut start_byte, mut units) = (None, 0);
    for (at, c) in text.char_indices().chain([(text.len(), '\0')]) {
        if units == offset {
            start_byte = Some(at);
        }
        if units == end {
            return Some(start_byte?..at);
        }
        if units > end {
            return None;
        }
        units += c.len_utf16();
    }
    None
}

/// Remove `@botname` (ASCII case-insensitively, as Telegram usernames are ASCII) from the text
/// and tidy the spaces it leaves. Matched on the text itself: lowercasing can change the length
/// of other characters (`İ`, `ẞ`), so offsets in a lowercased copy do not fit the original.
fn strip_mention(text: &str, mention: &str) -> String {
    let needle = mention.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut rest, mut at) = (0, 0);
    // A match starts at `@` and ends after whole UTF-8 sequences: both are character boundaries.
    while let Some(n) = text.as_bytes()[at..]
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
    {
        out.push_str(&text[rest..at + n]);
        (rest, at) = (at + n + needle.len(), at + n + needle.len());
    }
    out.push_str(&text[rest..]);
    let cleaned = out.split_whitespace().collect::<Vec<_>>().join(" ");
    if cleaned.is_empty() {
        text.trim().to_owned()
    } else {
        cleaned
    }
}

fn message(m: &tg::Message, me: &BotIdentity) -> Option<Message> {
    let from = m.from.as_ref()?;
    let raw_text = m.text().or_else(|| m.caption()).unwrap_or_default();
    let (trigger, text) = trigger(m, raw_text, me, m.chat.is_private())?;
    let reply_to = m.reply_to_message().map(|r| ReplyRef {
        id: r.id.0.to_string().into(),
        to_bot: r.from.as_ref().is_some_and(|u| u.id.0 == me.id),
        text: r.text().or_else(|| r.caption()).map(str::to_owned),
    });
    Some(Message {
        platform: Platform::Telegram,
        id: m.id.0.to_string().into(),
        chat: chat_of(&m.chat),
        thread: m
            .is_topic_message
            .then(|| m.thread_id.map(|t| t.0.0.to_string().into()))
            .flatten(),
        sender: sender_of(from),
        text,
        attachments: attachments(m),
        reply_to,
        sent_at: m.date.timestamp_millis(),
        subject: None,
        topic: None,
        trigger,
    })
}

fn button(q: &tg::CallbackQuery) -> Option<Message> {
    let shown = q.message.as_ref()?;
    let data = q.data.clone().unwrap_or_default();
    let regular = shown.regular_message();
    Some(Message {
        platform: Platform::Telegram,
        // Callback query ids are unique, so a redelivered press is recognised.
        id: format!("cb:{}", q.id.0).into(),
        chat: chat_of(shown.chat()),
        thread: regular
            .filter(|m| m.is_topic_message)
            .and_then(|m| m.thread_id.map(|t| t.0.0.to_string().into())),
        sender: sender_of(&q.from),
        text: data.clone(),
        attachments: Vec::new(),
        reply_to: Some(ReplyRef {
            id: shown.id().0.to_string().into(),
            to_bot: true,
            text: regular.and_then(|m| m.text()).map(str::to_owned),
        }),
        sent_at: hermes_adapter::now_millis(),
        subject: None,
        topic: None,
        trigger: Trigger::Button { data },
    })
}

#[cfg(test)]
mod tests;
