//! Matrix room messages -> [`Message`]: the sender, the room, the thread, attachments, and the
//! trigger by Matrix conventions. A room with two members (the bot and one person) is a direct
//! chat; in any other room the bot is addressed by an `m.mentions` entry, its user id or display
//! name in the text (or a mention pill in the HTML body), or a reply to one of its messages.
//! Notices (`m.notice`, what bots send), edits and the bot's own messages are skipped.

use hermes_adapter::{
    Attachment, AttachmentKind, Chat, ChatKind, Message, Platform, ReplyRef, Sender, Trigger,
};
use ruma::UserId;
use ruma::events::room::MediaSource;
use ruma::events::room::message::{MessageType, OriginalSyncRoomMessageEvent, Relation};

/// What the adapter knows about the room and the bot when converting an event.
#[derive(Debug, Clone)]
pub struct RoomContext<'a> {
    pub room_id: &'a str,
    /// Two members (joined or invited), the bot being one of them.
    pub direct: bool,
    pub title: Option<String>,
    pub me: &'a UserId,
    /// The bot's display name in this room, if it has one.
    pub my_name: Option<&'a str>,
    /// The sender's display name in this room.
    pub sender_name: Option<String>,
}

/// The event this message replies to (`m.in_reply_to`), also inside a thread.
pub fn replied_event(ev: &OriginalSyncRoomMessageEvent) -> Option<&ruma::EventId> {
    match ev.content.relates_to.as_ref()? {
        Relation::Reply(r) => Some(&r.in_reply_to.event_id),
        Relation::Thread(t) if !t.is_falling_back => t.in_reply_to.as_ref().map(|r| &*r.event_id),
        _ => None,
    }
}

/// Convert a room message. `replied_to_bot` says whether the message it replies to (see
/// [`replied_event`]) was sent by the bot. `None`: not for the agent.
pub fn convert(
    ev: &OriginalSyncRoomMessageEvent,
    room: &RoomContext<'_>,
    replied_to_bot: bool,
) -> Option<Message> {
    if ev.sender == room.me {
        return None;
    }
    let thread = match &ev.content.relates_to {
        Some(Relation::Replacement(_)) => return None,
        Some(Relation::Thread(t)) => Some(t.event_id.to_string().into()),
        _ => None,
    };
    let (mut text, attachments) = match &ev.content.msgtype {
        MessageType::Text(t) => (t.body.clone(), Vec::new()),
        MessageType::Emote(e) => (
            format!(
                "* {} {}",
                room.sender_name.as_deref().unwrap_or(ev.sender.as_str()),
                e.body
            ),
            Vec::new(),
        ),
        MessageType::Image(i) => media(
            &i.body,
            AttachmentKind::Image,
            &i.source,
            i.info.as_ref().and_then(|x| x.mimetype.clone()),
            i.info.as_ref().and_then(|x| x.size.map(u64::from)),
            i.filename.clone(),
        ),
        MessageType::File(f) => media(
            &f.body,
            AttachmentKind::Document,
            &f.source,
            f.info.as_ref().and_then(|x| x.mimetype.clone()),
            f.info.as_ref().and_then(|x| x.size.map(u64::from)),
            f.filename.clone(),
        ),
        MessageType::Audio(a) => media(
            &a.body,
            AttachmentKind::Audio,
            &a.source,
            a.info.as_ref().and_then(|x| x.mimetype.clone()),
            a.info.as_ref().and_then(|x| x.size.map(u64::from)),
            a.filename.clone(),
        ),
        MessageType::Video(v) => media(
            &v.body,
            AttachmentKind::Video,
            &v.source,
            v.info.as_ref().and_then(|x| x.mimetype.clone()),
            v.info.as_ref().and_then(|x| x.size.map(u64::from)),
            v.filename.clone(),
        ),
        // Notices are what bots send; answering them makes loops.
        _ => return None,
    };
    let reply_to = replied_event(ev).map(|id| ReplyRef {
        id: id.to_string().into(),
        to_bot: replied_to_bot,
        text: None,
    });
    if reply_to.is_some() {
        text = strip_reply_fallback(&text);
    }
    let html = match &ev.content.msgtype {
        MessageType::Text(t) => t.formatted.as_ref().map(|f| f.body.as_str()),
        _ => None,
    };
    let mentioned = ev
        .content
        .mentions
        .as_ref()
        .is_some_and(|m| m.user_ids.contains(room.me))
        || names_me(&text, html, room);
    let trigger = if room.direct {
        if text.trim_start().starts_with('/') {
            Trigger::Command
        } else {
            Trigger::Direct
        }
    } else if mentioned {
        Trigger::Mention
    } else if replied_to_bot {
        Trigger::ReplyToBot
    } else {
        Trigger::Ambient
    };
    if mentioned {
        text = strip_leading_mention(&text, room);
    }
    Some(Message {
        platform: Platform::Matrix,
        id: ev.event_id.to_string().into(),
        chat: Chat {
            id: room.room_id.into(),
            kind: if room.direct {
                ChatKind::Direct
            } else {
                ChatKind::Group
            },
            title: room.title.clone(),
        },
        thread,
        sender: Sender {
            id: ev.sender.to_string().into(),
            display_name: room
                .sender_name
                .clone()
                .unwrap_or_else(|| ev.sender.localpart().to_owned()),
            handle: Some(ev.sender.localpart().to_owned()),
            is_bot: false,
        },
        text,
        attachments,
        reply_to,
        sent_at: i64::from(ev.origin_server_ts.0),
        subject: None,
        topic: None,
        trigger,
    })
}

fn media(
    body: &str,
    kind: AttachmentKind,
    source: &MediaSource,
    mime: Option<String>,
    size: Option<u64>,
    filename: Option<String>,
) -> (String, Vec<Attachment>) {
    // With a separate `filename`, `body` is a caption; otherwise it is the file name.
    let (caption, name) = match filename {
        Some(f) if f != body => (body.to_owned(), Some(f)),
        _ => (String::new(), Some(body.to_owned())),
    };
    let locator = serde_json::to_string(source).unwrap_or_default();
    (
        caption,
        vec![Attachment {
            kind,
            mime,
            name,
            size,
            locator,
        }],
    )
}

/// Whether the text names the bot: its user id, a matrix.to pill for it in the HTML, or its
/// display name as a word.
fn names_me(text: &str, html: Option<&str>, room: &RoomContext<'_>) -> bool {
    let me = room.me.as_str();
    if text.contains(me) || html.is_some_and(|h| h.contains(&format!("matrix.to/#/{me}"))) {
        return true;
    }
    let Some(name) = room.my_name.filter(|n| !n.trim().is_empty()) else {
        return false;
    };
    let lower = text.to_lowercase();
    let name = name.to_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find(&name) {
        let start = from + at;
        let end = start + name.len();
        let before = lower[..start].chars().next_back();
        let after = lower[end..].chars().next();
        if !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric) {
            return true;
        }
        from = end;
    }
    false
}

/// Remove an address at the start (`hermes: hi`, `@bot:example.org hi`).
fn strip_leading_mention(text: &str, room: &RoomContext<'_>) -> String {
    let trimmed = text.trim_start();
    let mut candidates = vec![room.me.as_str().to_owned()];
    if let Some(n) = room.my_name {
        candidates.push(n.to_owned());
    }
    for c in candidates {
        if trimmed.len() >= c.len()
            && trimmed.is_char_boundary(c.len())
            && trimmed[..c.len()].eq_ignore_ascii_case(&c)
        {
            let rest = trimmed[c.len()..].trim_start_matches([':', ',']).trim();
            if !rest.is_empty() {
                return rest.to_owned();
            }
        }
    }
    text.trim().to_owned()
}

/// Remove the quoted fallback older clients put before a reply (`> <@a:b> text` lines and the
/// blank line after them).
fn strip_reply_fallback(text: &str) -> String {
    if !text.starts_with("> ") {
        return text.to_owned();
    }
    let mut lines = text.lines().skip_while(|l| l.starts_with('>'));
    let rest: Vec<&str> = lines.by_ref().collect();
    let joined = rest.join("\n");
    let out = joined.trim_start_matches('\n').to_owned();
    if out.is_empty() { text.to_owned() } else { out }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruma::events::room::message::RoomMessageEventContent;
    use ruma::serde::Raw;

    fn event(content: serde_json::Value) -> OriginalSyncRoomMessageEvent {
        let raw = serde_json::json!({
            "type": "m.room.message",
            "event_id": "$ev1",
            "sender": "@alice:localhost",
            "origin_server_ts": 1_700_000_000_000u64,
            "content": content,
        });
        Raw::<OriginalSyncRoomMessageEvent>::from_json_string(raw.to_string())
            .unwrap()
            .deserialize()
            .unwrap()
    }

    fn room<'a>(me: &'a UserId, direct: bool) -> RoomContext<'a> {
        RoomContext {
            room_id: "!room:localhost",
            direct,
            title: None,
            me,
            my_name: Some("Hermes"),
            sender_name: Some("Alice".into()),
        }
    }

    fn text(body: &str) -> serde_json::Value {
        serde_json::json!({"msgtype": "m.text", "body": body})
    }

    #[test]
    fn direct_room_messages_are_direct() {
        let me = UserId::parse("@bot:localhost").unwrap();
        let m = convert(&event(text("hello")), &room(&me, true), false).unwrap();
        assert_eq!(m.trigger, Trigger::Direct);
        assert_eq!(m.chat.kind, ChatKind::Direct);
        assert_eq!(m.sender.id.as_str(), "@alice:localhost");
        assert_eq!(m.id.as_str(), "$ev1");
        assert_eq!(m.text, "hello");
    }

    #[test]
    fn group_messages_need_a_mention() {
        let me = UserId::parse("@bot:localhost").unwrap();
        let r = room(&me, false);
        assert_eq!(
            convert(&event(text("hi all")), &r, false).unwrap().trigger,
            Trigger::Ambient
        );
        // Not a word on its own: no mention.
        assert_eq!(
            convert(&event(text("hermeses everywhere")), &r, false)
                .unwrap()
                .trigger,
            Trigger::Ambient
        );
        let by_name = convert(&event(text("Hermes: what time is it?")), &r, false).unwrap();
        assert_eq!(by_name.trigger, Trigger::Mention);
        assert_eq!(by_name.text, "what time is it?");
        let by_id = convert(&event(text("@bot:localhost hi")), &r, false).unwrap();
        assert_eq!(
            (by_id.trigger, by_id.text.as_str()),
            (Trigger::Mention, "hi")
        );
        let mut c = text("hey you");
        c["m.mentions"] = serde_json::json!({"user_ids": ["@bot:localhost"]});
        assert_eq!(
            convert(&event(c), &r, false).unwrap().trigger,
            Trigger::Mention
        );
        let mut reply = text("> <@bot:localhost> earlier\n\nand now?");
        reply["m.relates_to"] = serde_json::json!({"m.in_reply_to": {"event_id": "$bot1"}});
        let m = convert(&event(reply), &r, true).unwrap();
        assert_eq!(m.trigger, Trigger::ReplyToBot);
        assert_eq!(m.text, "and now?");
        assert_eq!(m.reply_to.unwrap().id.as_str(), "$bot1");
    }

    #[test]
    fn thread_messages_carry_the_thread_root() {
        let me = UserId::parse("@bot:localhost").unwrap();
        let mut c = text("in a thread");
        c["m.relates_to"] = serde_json::json!({
            "rel_type": "m.thread", "event_id": "$root",
            "is_falling_back": true, "m.in_reply_to": {"event_id": "$root"}
        });
        let m = convert(&event(c), &room(&me, true), false).unwrap();
        assert_eq!(m.thread.unwrap().as_str(), "$root");
    }

    #[test]
    fn own_messages_notices_and_edits_are_skipped() {
        let me = UserId::parse("@alice:localhost").unwrap();
        assert!(convert(&event(text("mine")), &room(&me, true), false).is_none());
        let me = UserId::parse("@bot:localhost").unwrap();
        let notice = serde_json::json!({"msgtype": "m.notice", "body": "beep"});
        assert!(convert(&event(notice), &room(&me, true), false).is_none());
        let edit = RoomMessageEventContent::text_plain("new").make_replacement(
            ruma::events::room::message::ReplacementMetadata::new("$ev0".try_into().unwrap(), None),
        );
        let edit = serde_json::to_value(&edit).unwrap();
        assert!(convert(&event(edit), &room(&me, true), false).is_none());
    }

    #[test]
    fn images_become_attachments() {
        let me = UserId::parse("@bot:localhost").unwrap();
        let c = serde_json::json!({
            "msgtype": "m.image", "body": "cat.png", "url": "mxc://localhost/abc",
            "info": {"mimetype": "image/png", "size": 1234}
        });
        let m = convert(&event(c), &room(&me, true), false).unwrap();
        assert_eq!(m.attachments.len(), 1);
        let a = &m.attachments[0];
        assert_eq!(a.kind, AttachmentKind::Image);
        assert_eq!(a.mime.as_deref(), Some("image/png"));
        assert_eq!(a.size, Some(1234));
        assert!(a.locator.contains("mxc://localhost/abc"));
    }
}
