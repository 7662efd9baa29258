//! Unit tests of the gateway event -> Message conversion on Discord JSON: triggers, mentions,
//! threads, guild and role rules, attachments.

use serde_json::{Value, json};

use super::*;

const ME: u64 = 900;
const ALICE: u64 = 111;
const GUILD: u64 = 5000;
const CHANNEL: u64 = 6000;
const BOT_ROLE: u64 = 7000;

fn settings() -> DiscordSettings {
    DiscordSettings {
        token: "t".into(),
        api_url: crate::DEFAULT_API_URL.parse().unwrap(),
        gateway_url: None,
        allowed_guilds: vec![],
        allowed_roles: vec![],
        free_response_channels: vec![],
        require_mention: true,
        auto_thread: false,
        message_content: true,
        shards: 1,
    }
}

fn user(id: u64, name: &str, bot: bool) -> Value {
    json!({"id": id.to_string(), "username": name, "global_name": null, "discriminator": "0",
           "avatar": null, "bot": bot})
}

/// A MESSAGE_CREATE payload as Discord sends it; `guild` adds `guild_id` and `member`.
fn raw(id: u64, channel: u64, author: u64, content: &str, guild: bool) -> Value {
    let mut m = json!({
        "id": id.to_string(), "channel_id": channel.to_string(), "author": user(author, "alice", false),
        "content": content, "timestamp": "2024-05-01T10:00:00.000000+00:00", "edited_timestamp": null,
        "tts": false, "mention_everyone": false, "mentions": [], "mention_roles": [],
        "attachments": [], "embeds": [], "pinned": false, "type": 0, "flags": 0, "components": [],
    });
    if guild {
        m["guild_id"] = json!(GUILD.to_string());
        m["member"] = json!({"roles": [], "joined_at": "2024-01-01T00:00:00+00:00", "deaf": false,
                             "mute": false, "flags": 0, "nick": "Ali"});
    }
    m
}

fn parse(v: Value) -> DiscordMessage {
    serde_json::from_value(v).expect("a valid message")
}

fn convert(v: Value, place: Place, s: &DiscordSettings) -> Option<Message> {
    message(&parse(v), ME, place, &[BOT_ROLE], s)
}

#[test]
fn a_direct_message_is_direct_and_keyed_by_its_channel() {
    let m = convert(
        raw(1, 42, ALICE, "hello", false),
        Place::Direct,
        &settings(),
    )
    .unwrap();
    assert_eq!(m.trigger, Trigger::Direct);
    assert_eq!(m.chat.kind, ChatKind::Direct);
    assert_eq!(m.chat.id.as_str(), "42");
    assert_eq!(m.sender.id.as_str(), "111");
    assert_eq!(m.text, "hello");
    let cmd = convert(raw(2, 42, ALICE, "/new", false), Place::Direct, &settings()).unwrap();
    assert_eq!(cmd.trigger, Trigger::Command);
}

#[test]
fn server_chatter_is_ambient_and_a_mention_addresses_the_bot() {
    let s = settings();
    let chatter = convert(raw(1, CHANNEL, ALICE, "lunch?", true), Place::Channel, &s).unwrap();
    assert_eq!(chatter.trigger, Trigger::Ambient);
    assert_eq!(chatter.chat.kind, ChatKind::Group);
    assert_eq!(chatter.sender.display_name, "Ali");

    let mut v = raw(
        2,
        CHANNEL,
        ALICE,
        "<@900> what do you think of <@222>?",
        true,
    );
    v["mentions"] = json!([user(ME, "hermes", true), user(222, "bob", false)]);
    let m = convert(v, Place::Channel, &s).unwrap();
    assert_eq!(m.trigger, Trigger::Mention);
    assert_eq!(m.text, "what do you think of @bob?");
    assert_eq!(m.thread, None);
}

#[test]
fn a_mention_of_the_bots_role_addresses_it() {
    let mut v = raw(3, CHANNEL, ALICE, "<@&7000> help", true);
    v["mention_roles"] = json!([BOT_ROLE.to_string()]);
    let m = convert(v, Place::Channel, &settings()).unwrap();
    assert_eq!(m.trigger, Trigger::Mention);
    assert_eq!(m.text, "help");
    let mut other = raw(4, CHANNEL, ALICE, "<@&1> help", true);
    other["mention_roles"] = json!(["1"]);
    assert_eq!(
        convert(other, Place::Channel, &settings()).unwrap().trigger,
        Trigger::Ambient
    );
}

#[test]
fn a_reply_to_the_bot_addresses_it() {
    let mut v = raw(5, CHANNEL, ALICE, "and then?", true);
    let mut earlier = raw(4, CHANNEL, ME, "first answer", true);
    earlier["author"] = user(ME, "hermes", true);
    v["type"] = json!(19);
    v["message_reference"] =
        json!({"type": 0, "message_id": "4", "channel_id": CHANNEL.to_string()});
    v["referenced_message"] = earlier;
    let m = convert(v, Place::Channel, &settings()).unwrap();
    assert_eq!(m.trigger, Trigger::ReplyToBot);
    let reply = m.reply_to.unwrap();
    assert!(reply.to_bot);
    assert_eq!(reply.text.as_deref(), Some("first answer"));
}

#[test]
fn a_thread_the_bot_owns_is_a_shared_conversation_without_mentions() {
    let own = Place::Thread {
        parent: CHANNEL,
        owner: Some(ME),
    };
    let m = convert(raw(6, 8000, ALICE, "more please", true), own, &settings()).unwrap();
    assert_eq!(m.trigger, Trigger::Mention);
    assert_eq!(m.chat.id.as_str(), CHANNEL.to_string());
    assert_eq!(m.thread.as_ref().map(|t| t.as_str()), Some("8000"));
    let key = hermes_adapter::SessionKey::for_message(&m, Default::default());
    assert_eq!(key.to_string(), "discord:6000#8000:*");

    let foreign = Place::Thread {
        parent: CHANNEL,
        owner: Some(ALICE),
    };
    let m = convert(raw(7, 8001, ALICE, "chat", true), foreign, &settings()).unwrap();
    assert_eq!(m.trigger, Trigger::Ambient);
}

#[test]
fn free_response_channels_and_auto_threads() {
    let mut s = settings();
    s.free_response_channels = vec![CHANNEL];
    s.auto_thread = true;
    let m = convert(raw(9, CHANNEL, ALICE, "anyone?", true), Place::Channel, &s).unwrap();
    assert_eq!(m.trigger, Trigger::Mention);
    // The answer goes to a thread started from the message (same id).
    assert_eq!(m.thread.as_ref().map(|t| t.as_str()), Some("9"));
    let cmd = convert(raw(10, CHANNEL, ALICE, "/status", true), Place::Channel, &s).unwrap();
    assert_eq!(cmd.trigger, Trigger::Command);
    assert_eq!(cmd.thread, None);
}

#[test]
fn own_messages_system_messages_and_filtered_servers_are_dropped() {
    let s = settings();
    assert!(convert(raw(1, CHANNEL, ME, "mine", true), Place::Channel, &s).is_none());
    let mut join = raw(2, CHANNEL, ALICE, "", true);
    join["type"] = json!(7);
    assert!(convert(join, Place::Channel, &s).is_none());
    let mut other_guild = settings();
    other_guild.allowed_guilds = vec![1];
    assert!(
        convert(
            raw(3, CHANNEL, ALICE, "hi", true),
            Place::Channel,
            &other_guild
        )
        .is_none()
    );
    // DMs pass the server filters.
    assert!(convert(raw(4, 42, ALICE, "hi", false), Place::Direct, &other_guild).is_some());
    let mut roles = settings();
    roles.allowed_roles = vec![77];
    assert!(convert(raw(5, CHANNEL, ALICE, "hi", true), Place::Channel, &roles).is_none());
    let mut v = raw(6, CHANNEL, ALICE, "hi", true);
    v["member"]["roles"] = json!(["77"]);
    assert!(convert(v, Place::Channel, &roles).is_some());
}

#[test]
fn attachments_are_listed_with_their_url_and_size() {
    let mut v = raw(11, 42, ALICE, "look", false);
    v["attachments"] = json!([{"id": "1", "filename": "cat.png", "size": 1234,
        "url": "https://cdn.example/cat.png", "proxy_url": "https://media.example/cat.png",
        "content_type": "image/png", "width": 10, "height": 10}]);
    let m = convert(v, Place::Direct, &settings()).unwrap();
    assert_eq!(m.attachments.len(), 1);
    assert_eq!(m.attachments[0].kind, AttachmentKind::Image);
    assert_eq!(m.attachments[0].size, Some(1234));
    assert_eq!(m.attachments[0].locator, "https://cdn.example/cat.png");
}

#[test]
fn snowflakes_carry_their_creation_time() {
    // 175928847299117063 is Discord's documented example: 2016-04-30 11:18:25.796 UTC.
    assert_eq!(snowflake_time(175_928_847_299_117_063), 1_462_015_105_796);
}
