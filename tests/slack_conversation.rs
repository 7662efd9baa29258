//! End to end through the real binary with Slack alone, in Socket Mode and over the Events API:
//! who is answered and where (DMs, mentions answered in their thread, thread follow-ups),
//! signature checks, duplicates, Block Kit approvals and the `/hermes` slash command.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::llm::Reply;
use support::slack::{
    ALICE, BOB, CHANNEL, MALLORY, Posted, SIGNING_SECRET, dm_channel, now_unix, sign,
};
use support::slack::{Mode, SlackWorld};
use support::{Buttons, WAIT};

/// Deliver an event callback the way the mode does it.
async fn deliver(sw: &SlackWorld, cb: &serde_json::Value) {
    match sw.mode {
        Mode::Socket => {
            sw.slack.envelope("events_api", cb.clone());
        }
        Mode::Events => {
            let (status, body, _) = sw.events().post_json(cb, None).await;
            assert_eq!(status, 200, "{body}");
        }
    }
}

async fn press(sw: &SlackWorld, user: &str, shown: &Posted, value: &str) {
    let payload = sw.slack.block_action(user, shown, value);
    match sw.mode {
        Mode::Socket => {
            let id = sw.slack.envelope("interactive", payload);
            sw.slack.wait_acked(&id, WAIT).await;
        }
        Mode::Events => {
            let (status, _, _) = sw
                .events()
                .post_form(&[("payload", payload.to_string())])
                .await;
            assert_eq!(status, 200);
        }
    }
}

async fn dm_is_answered(mode: Mode) {
    let mut sw = SlackWorld::new("", mode).await;
    let daemon = sw.start().await;
    let (cb, _) = sw.slack.dm_event(ALICE, "hello there");
    deliver(&sw, &cb).await;
    let posted = sw.slack.wait_posted(1, WAIT).await;
    assert_eq!(posted[0].channel, dm_channel(ALICE));
    assert_eq!(posted[0].text, "echo: hello there");
    assert_eq!(posted[0].thread_ts, None);
    let reqs = sw.w.llm.requests();
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].system_text().unwrap().contains("Slack"));
    let log = daemon.log();
    assert!(log.contains("Slack connected"), "{log}");
    for secret in [
        support::slack::BOT_TOKEN,
        support::slack::APP_TOKEN,
        SIGNING_SECRET,
    ] {
        assert!(!log.contains(secret), "a secret reached the log");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socket_mode_direct_message_is_answered_with_slack_alone() {
    dm_is_answered(Mode::Socket).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_api_direct_message_is_answered_with_slack_alone() {
    dm_is_answered(Mode::Events).await;
}

async fn mention_is_answered_in_its_thread(mode: Mode) {
    let mut sw = SlackWorld::new("", mode).await;
    let _daemon = sw.start().await;
    let (chatter, _) = sw
        .slack
        .channel_event(CHANNEL, ALICE, "lunch at noon?", None);
    deliver(&sw, &chatter).await;
    let (mention, ts) = sw
        .slack
        .mention_event(CHANNEL, ALICE, "what do you think", None);
    deliver(&sw, &mention).await;
    let posted = sw.slack.wait_posted(1, WAIT).await;
    assert_eq!(posted[0].channel, CHANNEL);
    assert_eq!(posted[0].thread_ts.as_deref(), Some(ts.as_str()));
    assert_eq!(posted[0].text, "echo: Alice: what do you think");
    // Bob follows up in the thread without mentioning the bot: same thread, same conversation.
    let (follow, _) = sw
        .slack
        .channel_event(CHANNEL, BOB, "and what about tomorrow?", Some(&ts));
    deliver(&sw, &follow).await;
    let posted = sw.slack.wait_posted(2, WAIT).await;
    assert_eq!(posted[1].thread_ts.as_deref(), Some(ts.as_str()));
    let reqs = sw.w.llm.requests();
    assert_eq!(reqs.len(), 2, "chatter outside the thread reaches no model");
    assert!(!reqs[0].user_texts().iter().any(|t| t.contains("lunch")));
    let seen = reqs[1].user_texts();
    assert_eq!(
        seen,
        ["Alice: what do you think", "Bob: and what about tomorrow?"],
        "the thread is one conversation shared by its participants"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_follow_up_after_a_restart_is_still_heard() {
    // Once: the threads the bot took part in were remembered in memory only, so after a
    // restart a follow-up without a mention was dropped. Now they are recalled from the inbox.
    let mut sw = SlackWorld::new("", Mode::Socket).await;
    let mut daemon = sw.start().await;
    let (mention, ts) = sw.slack.mention_event(CHANNEL, ALICE, "start a plan", None);
    deliver(&sw, &mention).await;
    sw.slack.wait_posted(1, WAIT).await;
    daemon.kill();
    let _daemon = sw.start().await;
    let (follow, _) = sw
        .slack
        .channel_event(CHANNEL, BOB, "and the next step?", Some(&ts));
    deliver(&sw, &follow).await;
    let posted = sw.slack.wait_posted(2, WAIT).await;
    assert_eq!(posted[1].thread_ts.as_deref(), Some(ts.as_str()));
    assert_eq!(posted[1].text, "echo: Bob: and the next step?");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socket_mode_mention_is_answered_in_its_thread() {
    mention_is_answered_in_its_thread(Mode::Socket).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_api_mention_is_answered_in_its_thread() {
    mention_is_answered_in_its_thread(Mode::Events).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlisted_user_gets_no_llm_call() {
    let mut sw = SlackWorld::new("", Mode::Socket).await;
    let _daemon = sw.start().await;
    sw.slack.dm(MALLORY, "let me in");
    sw.slack.mention(CHANNEL, MALLORY, "hey bot", None);
    sw.slack.dm(ALICE, "sentinel");
    let posted = sw.slack.wait_posted(1, WAIT).await;
    assert_eq!(posted[0].channel, dm_channel(ALICE));
    let reqs = sw.w.llm.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].last_user_text().as_deref(), Some("sentinel"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_event_three_times_is_answered_once_in_socket_mode() {
    let mut sw = SlackWorld::new("", Mode::Socket).await;
    let _daemon = sw.start().await;
    let (cb, _) = sw
        .slack
        .mention_event(CHANNEL, ALICE, "only once please", None);
    // The app_mention and the message event of one message, then a redelivery.
    let mut as_message = cb.clone();
    as_message["event"]["type"] = json!("message");
    as_message["event"]["channel_type"] = json!("channel");
    as_message["event_id"] = json!("Ev-other");
    for payload in [cb.clone(), as_message, cb] {
        let id = sw.slack.envelope("events_api", payload);
        sw.slack.wait_acked(&id, WAIT).await;
    }
    sw.slack.dm(ALICE, "sentinel");
    // The channel's answer and the DM's come from two conversations' turns, in either order.
    let posted = sw.slack.wait_posted(2, WAIT).await;
    let mut answers: Vec<&str> = posted.iter().map(|p| p.text.as_str()).collect();
    answers.sort_unstable();
    assert_eq!(answers, ["echo: Alice: only once please", "echo: sentinel"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let posted_now = sw.slack.posted();
    assert_eq!(posted_now.len(), 2, "{posted_now:?}");
    assert_eq!(sw.w.llm.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_api_rejects_bad_signatures_and_stale_timestamps_and_dedupes_retries() {
    let mut sw = SlackWorld::new("", Mode::Events).await;
    let _daemon = sw.start().await;
    let events = sw.events();
    // url_verification is answered with its challenge.
    let (status, body, _) = events
        .post_json(
            &json!({"token": "t", "challenge": "abc123", "type": "url_verification"}),
            None,
        )
        .await;
    assert_eq!((status, body.contains("abc123")), (200, true), "{body}");

    let (forged, _) = sw.slack.mention_event(CHANNEL, ALICE, "forged", None);
    let body = forged.to_string();
    let now = now_unix();
    let wrong = sign("not-the-secret", now, &body);
    let (status, _, _) = events
        .post_raw(&body, "application/json", now, &wrong, None)
        .await;
    assert_eq!(status, 401, "bad signature");
    let old = now - 600;
    let stale = sign(SIGNING_SECRET, old, &body);
    let (status, _, _) = events
        .post_raw(&body, "application/json", old, &stale, None)
        .await;
    assert_eq!(status, 401, "ten-minute-old timestamp");

    let (good, ts) = sw.slack.mention_event(CHANNEL, ALICE, "genuine", None);
    for retry in [None, Some(1), Some(2)] {
        let (status, _, took) = events.post_json(&good, retry).await;
        assert_eq!(status, 200);
        assert!(took < Duration::from_secs(3), "acknowledged after {took:?}");
    }
    let posted = sw.slack.wait_posted(1, WAIT).await;
    assert_eq!(posted[0].thread_ts.as_deref(), Some(ts.as_str()));
    assert_eq!(posted[0].text, "echo: Alice: genuine");
    sw.slack.wait_posted(1, WAIT).await;
    let (sentinel, _) = sw.slack.dm_event(ALICE, "sentinel");
    events.post_json(&sentinel, None).await;
    sw.slack.wait_posted(2, WAIT).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(sw.slack.posted().len(), 2, "{:?}", sw.slack.posted());
    let reqs = sw.w.llm.requests();
    assert_eq!(
        reqs.len(),
        2,
        "the forged and stale requests stored nothing"
    );
    assert!(!reqs[0].user_texts().iter().any(|t| t.contains("forged")));
}

async fn approval_only_from_the_asked_user(mode: Mode) {
    let mut sw = SlackWorld::new("", mode).await;
    sw.w.llm.echo_tool_results();
    sw.w.llm.push(Reply::tool_call(
        "terminal",
        json!({"command": "echo approved-$((40 + 2))"}),
    ));
    let _daemon = sw.start().await;
    let (mention, ts) = sw.slack.mention_event(CHANNEL, ALICE, "run it", None);
    deliver(&sw, &mention).await;
    let request = sw.slack.wait_posted(1, WAIT).await.remove(0);
    assert!(
        request.text.contains("Permission needed"),
        "{}",
        request.text
    );
    assert_eq!(request.thread_ts.as_deref(), Some(ts.as_str()));
    let buttons = request.buttons();
    assert_eq!(buttons.len(), 4, "{buttons:?}");
    let allow = request.button("Allow once");
    // Bob may talk to the bot, but his press does not answer Alice's request.
    press(&sw, BOB, &request, &allow).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(sw.slack.posted().len(), 1, "{:?}", sw.slack.posted());
    assert!(sw.slack.updates().is_empty());
    press(&sw, ALICE, &request, &allow).await;
    let posted = sw.slack.wait_posted(2, WAIT).await;
    assert!(posted[1].text.contains("approved-42"), "{}", posted[1].text);
    assert_eq!(posted[1].thread_ts.as_deref(), Some(ts.as_str()));
    // The request now shows the decision and has no buttons left.
    let update = sw
        .slack
        .wait(WAIT, "the request to be updated", |f| {
            f.updates().into_iter().find(|u| u.ts == request.ts)
        })
        .await;
    assert!(update.text.contains("Allowed once"), "{}", update.text);
    assert!(update.buttons().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socket_mode_block_kit_approval_only_from_the_asked_user() {
    approval_only_from_the_asked_user(Mode::Socket).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_api_block_kit_approval_only_from_the_asked_user() {
    approval_only_from_the_asked_user(Mode::Events).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_command_maps_to_chat_commands() {
    let mut sw = SlackWorld::new("", Mode::Socket).await;
    let _daemon = sw.start().await;
    let id = sw.slack.slash(ALICE, &dm_channel(ALICE), "help");
    sw.slack.wait_acked(&id, WAIT).await;
    let posted = sw.slack.wait_posted(1, WAIT).await;
    assert_eq!(posted[0].channel, dm_channel(ALICE));
    assert!(posted[0].text.contains("/new"), "{}", posted[0].text);
    assert!(sw.w.llm.requests().is_empty(), "/help needs no model");
}
