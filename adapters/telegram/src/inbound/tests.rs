//! Unit tests of the update -> Message conversion on Bot API JSON.

use serde_json::{Value, json};

use super::*;

fn me() -> BotIdentity {
    BotIdentity {
        id: 999,
        username: "hermes_test_bot".into(),
    }
}

fn update(message: Value) -> tg::Update {
    parse(json!({"update_id": 1, "message": message}))
}

/// Updates must be parsed from text, as the Bot API client does: teloxide's update parser
/// borrows its keys and fails on an owned `Value`.
fn parse(v: Value) -> tg::Update {
    serde_json::from_str(&v.to_string()).unwrap()
}

fn user(id: i64) -> Value {
    json!({"id": id, "is_bot": false, "first_name": "Ann", "last_name": "Lee", "username": "ann"})
}

fn group() -> Value {
    json!({"id": -1001, "type": "supergroup", "title": "Team"})
}

fn converted(u: &tg::Update) -> Message {
    match convert(u, &me()) {
        Inbound::Message(m) => m,
        other => panic!("expected a message, got {other:?}"),
    }
}

#[test]
fn private_text_is_direct() {
    let m = converted(&update(json!({
        "message_id": 5, "date": 1_700_000_000, "chat": {"id": 42, "type": "private", "first_name": "Ann"},
        "from": user(42), "text": "hello"
    })));
    assert_eq!(m.trigger, Trigger::Direct);
    assert_eq!(m.chat.kind, ChatKind::Direct);
    assert_eq!(
        (m.id.as_str(), m.chat.id.as_str(), m.sender.id.as_str()),
        ("5", "42", "42")
    );
    assert_eq!(m.sender.display_name, "Ann Lee");
    assert_eq!(m.sent_at, 1_700_000_000_000);
}

#[test]
fn group_chatter_is_ambient_and_a_mention_addresses_the_bot() {
    let plain = converted(&update(json!({
        "message_id": 6, "date": 0, "chat": group(), "from": user(42), "text": "lunch?"
    })));
    assert_eq!(plain.trigger, Trigger::Ambient);

    let text = "hey @Hermes_Test_Bot what's up";
    let m = converted(&update(json!({
        "message_id": 7, "date": 0, "chat": group(), "from": user(42), "text": text,
        "entities": [{"type": "mention", "offset": 4, "length": 16}]
    })));
    assert_eq!(m.trigger, Trigger::Mention);
    assert_eq!(m.text, "hey what's up");

    let other = converted(&update(json!({
        "message_id": 8, "date": 0, "chat": group(), "from": user(42), "text": "ask @other_bot",
        "entities": [{"type": "mention", "offset": 4, "length": 10}]
    })));
    assert_eq!(other.trigger, Trigger::Ambient);
}

#[test]
fn replies_to_the_bot_and_commands() {
    let reply = converted(&update(json!({
        "message_id": 9, "date": 0, "chat": group(), "from": user(42), "text": "and then?",
        "reply_to_message": {"message_id": 3, "date": 0, "chat": group(),
            "from": {"id": 999, "is_bot": true, "first_name": "Hermes", "username": "hermes_test_bot"},
            "text": "first answer"}
    })));
    assert_eq!(reply.trigger, Trigger::ReplyToBot);
    assert_eq!(
        reply.reply_to.unwrap().text.as_deref(),
        Some("first answer")
    );

    let cmd = converted(&update(json!({
        "message_id": 10, "date": 0, "chat": group(), "from": user(42), "text": "/new@hermes_test_bot now",
        "entities": [{"type": "bot_command", "offset": 0, "length": 20}]
    })));
    assert_eq!(cmd.trigger, Trigger::Command);
    assert_eq!(cmd.text, "/new now");

    let foreign = update(json!({
        "message_id": 11, "date": 0, "chat": group(), "from": user(42), "text": "/new@other_bot",
        "entities": [{"type": "bot_command", "offset": 0, "length": 14}]
    }));
    assert!(matches!(convert(&foreign, &me()), Inbound::Skip));
}

#[test]
fn topics_set_the_thread_and_photos_become_attachments() {
    let m = converted(&update(json!({
        "message_id": 12, "date": 0, "chat": {"id": -1002, "type": "supergroup", "title": "F", "is_forum": true},
        "from": user(42), "is_topic_message": true, "message_thread_id": 77,
        "caption": "@hermes_test_bot look", "caption_entities": [{"type": "mention", "offset": 0, "length": 16}],
        "photo": [
            {"file_id": "small", "file_unique_id": "s", "width": 90, "height": 90, "file_size": 100},
            {"file_id": "big", "file_unique_id": "b", "width": 1280, "height": 960, "file_size": 90000}
        ]
    })));
    assert_eq!(m.thread.as_ref().map(|t| t.as_str()), Some("77"));
    assert_eq!(m.trigger, Trigger::Mention);
    assert_eq!(m.text, "look");
    assert_eq!(m.attachments.len(), 1);
    assert_eq!(m.attachments[0].locator, "big");
    assert_eq!(m.attachments[0].kind, AttachmentKind::Image);
}

#[test]
fn button_presses_carry_their_data() {
    let u = parse(json!({"update_id": 2, "callback_query": {
        "id": "cq1", "from": user(42), "chat_instance": "x", "data": "approve:1",
        "message": {"message_id": 3, "date": 0, "chat": {"id": 42, "type": "private", "first_name": "Ann"},
            "from": {"id": 999, "is_bot": true, "first_name": "Hermes"}, "text": "Allow?"}
    }}));
    match convert(&u, &me()) {
        Inbound::Button(m, id) => {
            assert_eq!(id.0, "cq1");
            assert_eq!(
                m.trigger,
                Trigger::Button {
                    data: "approve:1".into()
                }
            );
            assert_eq!(m.id.as_str(), "cb:cq1");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unparseable_message_is_skipped_not_fatal() {
    // `date` must be an integer; teloxide falls back to UpdateKind::Error.
    let u = parse(json!({"update_id": 3, "message": {
        "message_id": 13, "date": "yesterday", "chat": {"id": 42, "type": "private"},
        "from": user(42), "text": "hi"
    }}));
    assert!(matches!(convert(&u, &me()), Inbound::Skip));
}

/// Found by the `telegram_update` fuzz target: lowercasing changes byte lengths (`İ` grows, `ẞ`
/// shrinks), so offsets found in the lowercased text could fall inside a character of the
/// original and panic. The mention is matched on the original text.
#[test]
fn mention_next_to_letters_whose_case_changes_length() {
    for (text, offset, stripped) in [
        ("İ @hermes_test_botẞ", 2, "İ ẞ"),
        ("İstanbul @Hermes_Test_Bot?", 9, "İstanbul ?"),
    ] {
        let m = converted(&update(json!({
            "message_id": 7, "date": 0, "chat": group(), "from": user(42), "text": text,
            "entities": [{"type": "mention", "offset": offset, "length": 16}]
        })));
        assert_eq!(m.trigger, Trigger::Mention);
        assert_eq!(m.text, stripped, "{text}");
    }
}

/// Found by the `telegram_update` fuzz target: teloxide's `parse_entities` panics on entities
/// outside the text or inside a surrogate pair; such entities are ignored. A repeated command
/// entity must not cut the rewritten text inside a character either.
#[test]
fn malformed_entities_are_ignored() {
    for entities in [
        json!([{"type": "mention", "offset": 13, "length": 20}]),
        json!([{"type": "mention", "offset": 1, "length": 2}]),
        json!([{"type": "bot_command", "offset": 0, "length": 18446744073709551615u64}]),
    ] {
        let m = converted(&update(json!({
            "message_id": 7, "date": 0, "chat": group(), "from": user(42),
            "text": "😀 is this @hermes_test_bot?", "entities": entities
        })));
        assert_eq!(m.trigger, Trigger::Ambient);
    }
    let command = json!({"type": "bot_command", "offset": 0, "length": 20});
    let m = converted(&update(json!({
        "message_id": 7, "date": 0, "chat": group(), "from": user(42),
        "text": "/new@hermes_test_bot x漢字漢字漢字", "entities": [command, command]
    })));
    assert_eq!(
        (m.trigger, m.text.as_str()),
        (Trigger::Command, "/new x漢字漢字漢字")
    );
}
