//! Unit tests of the event -> Message rules on Slack's JSON shapes.

use serde_json::{Value, json};

use super::*;

fn me() -> BotIdentity {
    BotIdentity {
        user_id: "UBOT".into(),
        bot_id: Some("BBOT".into()),
        team_id: "T1".into(),
        name: "hermes".into(),
    }
}

fn settings() -> SlackSettings {
    SlackSettings {
        bot_token: String::new(),
        mode: crate::SlackMode::Socket {
            app_token: String::new(),
        },
        api_url: "http://127.0.0.1:1/api".into(),
        allowed_channels: vec![],
        allowed_teams: vec!["T1".into()],
        reply_in_thread: true,
        socket_idle: std::time::Duration::from_secs(30),
    }
}

fn rules(reply_in_thread: bool) -> Rules {
    Rules::new(&SlackSettings {
        reply_in_thread,
        ..settings()
    })
}

fn callback(event: Value) -> SlackPushEventCallback {
    serde_json::from_value(json!({
        "type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": "Ev1",
        "event_time": 1_700_000_000, "event": event
    }))
    .unwrap()
}

fn convert(event: Value, rules: &Rules) -> Option<Message> {
    event_message(&callback(event), &me(), rules)
}

#[test]
fn direct_message_is_direct_and_keyed_by_ts() {
    let m = convert(
        json!({"type": "message", "channel": "D1", "channel_type": "im", "user": "U1",
               "text": "hello &amp; welcome", "ts": "1700000000.000100", "client_msg_id": "c1"}),
        &rules(true),
    )
    .unwrap();
    assert_eq!(m.trigger, Trigger::Direct);
    assert_eq!(m.chat.kind, ChatKind::Direct);
    assert_eq!(
        (m.id.as_str(), m.chat.id.as_str()),
        ("1700000000.000100", "D1")
    );
    assert_eq!(m.text, "hello & welcome");
    assert_eq!(m.thread, None);
    assert_eq!(m.sent_at, 1_700_000_000_000);
}

#[test]
fn channel_chatter_is_skipped_and_a_mention_starts_a_thread() {
    let r = rules(true);
    assert!(
        convert(
            json!({"type": "message", "channel": "C1", "channel_type": "channel", "user": "U1",
                   "text": "lunch?", "ts": "1.1"}),
            &r
        )
        .is_none()
    );
    let mention = json!({"type": "app_mention", "channel": "C1", "user": "U1",
                         "text": "<@UBOT> what now?", "ts": "2.2"});
    let m = convert(mention, &r).unwrap();
    assert_eq!(m.trigger, Trigger::Mention);
    assert_eq!(m.text, "what now?");
    assert_eq!(m.thread.as_ref().map(|t| t.as_str()), Some("2.2"));
    // The message event of the same mention is the same inbox row.
    let same = convert(
        json!({"type": "message", "channel": "C1", "channel_type": "channel", "user": "U1",
               "text": "<@UBOT> what now?", "ts": "2.2"}),
        &r,
    )
    .unwrap();
    assert_eq!((same.id, same.trigger), (m.id, Trigger::Mention));
    // A later message in that thread, without a mention, is for the bot too.
    let follow = convert(
        json!({"type": "message", "channel": "C1", "channel_type": "channel", "user": "U2",
               "text": "and then?", "ts": "3.3", "thread_ts": "2.2"}),
        &r,
    )
    .unwrap();
    assert_eq!(follow.trigger, Trigger::ReplyToBot);
    assert_eq!(follow.thread.as_ref().map(|t| t.as_str()), Some("2.2"));
    // Another thread is not.
    assert!(
        convert(
            json!({"type": "message", "channel": "C1", "channel_type": "channel", "user": "U2",
                   "text": "unrelated", "ts": "4.4", "thread_ts": "1.1"}),
            &r
        )
        .is_none()
    );
}

#[test]
fn without_reply_in_thread_a_mention_is_answered_in_the_channel() {
    let m = convert(
        json!({"type": "app_mention", "channel": "C1", "user": "U1", "text": "<@UBOT> hi", "ts": "5.5"}),
        &rules(false),
    )
    .unwrap();
    assert_eq!(m.thread, None);
}

#[test]
fn bots_own_messages_edits_and_joins_are_skipped() {
    let r = rules(true);
    for event in [
        json!({"type": "message", "channel": "D1", "channel_type": "im", "user": "UBOT", "text": "me", "ts": "1.0"}),
        json!({"type": "message", "channel": "D1", "channel_type": "im", "bot_id": "B9", "text": "bot", "ts": "1.1"}),
        json!({"type": "message", "subtype": "bot_message", "channel": "D1", "channel_type": "im", "bot_id": "B9", "text": "bot", "ts": "1.2"}),
        json!({"type": "message", "subtype": "channel_join", "channel": "C1", "channel_type": "channel", "user": "U1", "text": "<@U1> joined", "ts": "1.3"}),
        json!({"type": "message", "subtype": "message_changed", "channel": "D1", "channel_type": "im", "ts": "1.4",
               "message": {"type": "message", "user": "U1", "text": "edited", "ts": "1.0"}}),
        json!({"type": "reaction_added", "user": "U1", "reaction": "+1", "event_ts": "1.5",
               "item": {"type": "message", "channel": "C1", "ts": "1.0"}}),
    ] {
        assert!(convert(event.clone(), &r).is_none(), "{event}");
    }
}

#[test]
fn other_workspaces_and_channels_are_ignored() {
    let r = Rules::new(&SlackSettings {
        allowed_channels: vec!["C1".into()],
        ..settings()
    });
    let mut cb = callback(
        json!({"type": "app_mention", "channel": "C1", "user": "U1", "text": "<@UBOT> x", "ts": "1.0"}),
    );
    assert!(event_message(&cb, &me(), &r).is_some());
    cb.team_id = SlackTeamId("T2".into());
    assert!(event_message(&cb, &me(), &r).is_none());
    let other = callback(
        json!({"type": "app_mention", "channel": "C2", "user": "U1", "text": "<@UBOT> x", "ts": "1.0"}),
    );
    assert!(event_message(&other, &me(), &r).is_none());
    // Direct messages are not restricted by channel.
    let dm = callback(
        json!({"type": "message", "channel": "D9", "channel_type": "im", "user": "U1", "text": "x", "ts": "1.0"}),
    );
    assert!(event_message(&dm, &me(), &r).is_some());
}

#[test]
fn files_become_attachments() {
    let m = convert(
        json!({"type": "message", "subtype": "file_share", "channel": "D1", "channel_type": "im", "user": "U1",
               "text": "look", "ts": "1.0",
               "files": [{"id": "F1", "name": "cat.png", "mimetype": "image/png",
                          "url_private_download": "https://files.slack.com/files-pri/T1-F1/download/cat.png"}]}),
        &rules(true),
    )
    .unwrap();
    assert_eq!(m.attachments.len(), 1);
    assert_eq!(m.attachments[0].kind, AttachmentKind::Image);
    assert!(m.attachments[0].locator.ends_with("cat.png"));
}

#[test]
fn button_press_and_slash_command() {
    let r = rules(true);
    let ev: SlackInteractionEvent = serde_json::from_value(json!({
        "type": "block_actions", "team": {"id": "T1", "domain": "t"},
        "user": {"id": "U1", "username": "ann", "name": "ann", "team_id": "T1"},
        "api_app_id": "A1", "trigger_id": "111.222",
        "container": {"type": "message", "message_ts": "9.9", "channel_id": "C1", "is_ephemeral": false},
        "channel": {"id": "C1", "name": "general"},
        "message": {"type": "message", "user": "UBOT", "text": "Permission needed", "ts": "9.9", "thread_ts": "8.8"},
        "actions": [{"type": "button", "action_id": "hermes_0_0", "block_id": "b", "value": "ap:7:o",
                     "text": {"type": "plain_text", "text": "Allow"}, "action_ts": "10.0"}]
    }))
    .unwrap();
    let m = action_message(&ev, &r).unwrap();
    assert_eq!(
        m.trigger,
        Trigger::Button {
            data: "ap:7:o".into()
        }
    );
    assert_eq!(m.id.as_str(), "act:111.222");
    assert_eq!(m.thread.as_ref().map(|t| t.as_str()), Some("8.8"));
    assert_eq!(m.sender.id.as_str(), "U1");

    let cmd: SlackCommandEvent = serde_json::from_value(json!({
        "team_id": "T1", "channel_id": "D1", "user_id": "U1", "command": "/hermes", "text": "new",
        "response_url": "https://hooks.slack.com/commands/1", "trigger_id": "333.444"
    }))
    .unwrap();
    let m = command_message(&cmd, &r).unwrap();
    assert_eq!(
        (m.text.as_str(), m.trigger.clone()),
        ("/new", Trigger::Command)
    );
    assert_eq!(m.chat.kind, ChatKind::Direct);
}

#[test]
fn slack_markup_is_read_as_text() {
    assert_eq!(
        plain_text(
            "<@UBOT> ask <@U2|bob> in <#C1|general> about <https://e.org|this> &lt;3",
            "UBOT"
        ),
        "ask @bob in #general about this (https://e.org) <3"
    );
}
