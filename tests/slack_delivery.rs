//! End to end through the real binary: how replies reach Slack (chunks with code intact, mrkdwn,
//! the plain-text fallback, rate limits) and how the Socket Mode listener survives a closed,
//! refreshed or silent connection and a daemon killed mid-turn without losing or doubling a
//! message.

use crate::support;

use std::time::Duration;

use support::WAIT;
use support::chat::assert_in_order;
use support::llm::{Gate, PNG, PNG_DATA_URL, Reply};
use support::slack::{ALICE, BOB, CHANNEL, Fault, dm_channel};
use support::slack::{Mode, SlackWorld};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_answer_arrives_in_chunks_under_the_limit_with_code_intact() {
    let mut sw = SlackWorld::new("", Mode::Socket).await;
    let code: Vec<String> = (0..150)
        .map(|i| format!("    let value_{i:03} = compute({i}) * 2; // step {i}"))
        .collect();
    let mut answer = String::from("Here is **the plan**.\n\n");
    for i in 0..40 {
        answer.push_str(&format!(
            "Paragraph {i}: the quick brown fox jumps over the lazy dog again and again.\n\n"
        ));
    }
    answer.push_str(&format!(
        "```rust\nfn main() {{\n{}\n}}\n```\n\n",
        code.join("\n")
    ));
    while answer.chars().count() < 12_000 {
        answer.push_str("Closing words to make it long enough. ");
    }
    sw.w.llm.push(Reply::text(answer));
    let _daemon = sw.start().await;
    sw.slack.dm(ALICE, "the long version please");
    sw.slack.wait_posted(1, WAIT).await;
    sw.slack.dm(ALICE, "sentinel");
    let mut posted = sw
        .slack
        .wait(WAIT, "the sentinel's answer", |f| {
            let p = f.posted();
            p.last()
                .is_some_and(|m| m.text == "echo: sentinel")
                .then_some(p)
        })
        .await;
    posted.pop();
    assert!(
        posted.len() >= 3,
        "12,000 characters need at least 3 messages"
    );
    for m in &posted {
        assert!(
            m.text.chars().count() <= 4100,
            "chunk of {} chars",
            m.text.chars().count()
        );
        assert_eq!(
            m.text.matches("```").count() % 2,
            0,
            "a code fence was split: {}",
            m.text
        );
        assert_eq!(m.channel, dm_channel(ALICE));
    }
    assert!(
        posted[0].text.starts_with("Here is *the plan*."),
        "mrkdwn bold"
    );
    let all: String = posted
        .iter()
        .map(|m| m.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert_in_order(&all, &code);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_blocks_are_resent_as_plain_text() {
    let mut sw = SlackWorld::new("", Mode::Socket).await;
    sw.w.llm.push(Reply::text("Use **bold** & `code` here."));
    sw.slack
        .fail_next("chat.postMessage", Fault::Error("invalid_blocks".into()));
    let _daemon = sw.start().await;
    sw.slack.dm(ALICE, "format something");
    let posted = sw.slack.wait_posted(1, WAIT).await;
    assert_eq!(posted[0].text, "Use **bold** &amp; `code` here.");
    let calls = sw.slack.calls_of("chat.postMessage");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].params["text"], "Use *bold* &amp; `code` here.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_waited_out_then_sent_once() {
    let mut sw = SlackWorld::new("", Mode::Socket).await;
    sw.slack.fail_next("chat.postMessage", Fault::RetryAfter(2));
    let _daemon = sw.start().await;
    sw.slack.dm(ALICE, "hi");
    let posted = sw.slack.wait_posted(1, WAIT).await;
    assert_eq!(posted[0].text, "echo: hi");
    let calls = sw.slack.calls_of("chat.postMessage");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].status, 429);
    let waited = calls[1].at.duration_since(calls[0].at);
    assert!(waited >= Duration::from_secs(2), "resent after {waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_socket_or_refresh_reconnects_and_nothing_is_lost() {
    let mut sw = SlackWorld::new("", Mode::Socket).await;
    let _daemon = sw.start().await;
    sw.slack.wait_connections(1, WAIT).await;
    // Slack asks for a refresh: a new connection, then the event on it is answered.
    sw.slack.disconnect();
    sw.slack.wait_connections(2, WAIT).await;
    sw.slack.dm(ALICE, "after refresh");
    sw.slack.wait_posted(1, WAIT).await;
    // The socket closes with an event in flight: it is redelivered on the new connection.
    sw.slack.close_socket();
    sw.slack.dm(ALICE, "during the outage");
    sw.slack.wait_connections(3, WAIT).await;
    let posted = sw.slack.wait_posted(2, WAIT).await;
    assert_eq!(posted[1].text, "echo: during the outage");
    sw.slack.dm(ALICE, "sentinel");
    sw.slack.wait_posted(3, WAIT).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(sw.slack.posted().len(), 3, "{:?}", sw.slack.posted());
    assert_eq!(sw.slack.unacked(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_socket_is_replaced_and_reported() {
    let mut sw = SlackWorld::new("[slack]\nsocket_idle_secs = 5\n", Mode::Socket).await;
    let daemon = sw.start().await;
    sw.slack.wait_connections(1, WAIT).await;
    sw.slack.go_silent();
    // Events sent while deaf wait unacked and arrive on the next connection.
    sw.slack.dm(ALICE, "are you there?");
    sw.slack.wait_connections(2, WAIT).await;
    let posted = sw.slack.wait_posted(1, WAIT).await;
    assert_eq!(posted[0].text, "echo: are you there?");
    let log = daemon.log();
    assert!(log.contains("received nothing for 5s"), "{log}");
    assert!(
        log.contains("listener failed"),
        "reported as a failure: {log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_turn_answers_exactly_once_after_restart() {
    let mut sw = SlackWorld::new("", Mode::Socket).await;
    let gate = Gate::new();
    sw.w.llm
        .push(Reply::text("never delivered").after(gate.clone()));
    let mut daemon = sw.start().await;
    let sent = sw.slack.dm(ALICE, "survive this");
    sw.slack.wait_acked(&sent.envelope_id, WAIT).await;
    sw.w.llm.wait_requests(1, WAIT).await;
    daemon.kill();
    let _daemon = sw.start().await;
    let posted = sw.slack.wait_posted(1, WAIT).await;
    assert_eq!(posted[0].text, "echo: survive this");
    gate.open();
    sw.slack.dm(ALICE, "sentinel");
    sw.slack.wait_posted(2, WAIT).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(sw.slack.posted().len(), 2, "{:?}", sw.slack.posted());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_image_is_downloaded_with_the_bot_token_for_a_vision_model() {
    let mut sw = SlackWorld::new("[llm]\nvision = true\n", Mode::Socket).await;
    let url = sw.slack.add_file("cat.png", PNG.to_vec());
    let _daemon = sw.start().await;
    let (mut cb, _) = sw.slack.dm_event(ALICE, "what is in this picture?");
    cb["event"]["subtype"] = serde_json::json!("file_share");
    cb["event"]["files"] = serde_json::json!([{"id": "F1", "name": "cat.png", "mimetype": "image/png",
        "url_private": url, "url_private_download": url}]);
    sw.slack.envelope("events_api", cb);
    sw.slack.wait_posted(1, WAIT).await;
    let req = sw.w.llm.requests().pop().unwrap();
    let url = req
        .image_url()
        .expect("an image part (the fake serves files to the bot token only)");
    assert_eq!(url, PNG_DATA_URL);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_slack_gave_up_delivering_while_down_is_read_back_at_start() {
    // Slack retries an undelivered event a few times and then drops it. Once, messages posted
    // while the daemon was down longer than that were never answered; now the chats the bot
    // heard from are read back when the listener starts.
    let mut sw = SlackWorld::new("", Mode::Socket).await;
    let mut daemon = sw.start().await;
    sw.slack.dm(ALICE, "hello");
    let root = sw.slack.mention(CHANNEL, BOB, "plan the trip", None).ts;
    sw.slack.wait_posted(2, WAIT).await;
    // A reply can reach Slack before the fake has read the ack written just before it.
    let deadline = std::time::Instant::now() + WAIT;
    while sw.slack.unacked() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the two events never acked"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    daemon.kill();
    sw.slack.dm(ALICE, "posted while you were away");
    sw.slack
        .channel_message(CHANNEL, BOB, "and the hotel?", Some(&root));
    sw.slack.mention(CHANNEL, BOB, "a new question", None);
    sw.slack
        .channel_message(CHANNEL, BOB, "chatter, not for the bot", None);
    assert_eq!(sw.slack.give_up_undelivered(), 4);
    let mut daemon = sw.start().await;
    let posted = sw.slack.wait_posted(5, WAIT).await;
    let texts: Vec<&str> = posted.iter().map(|p| p.text.as_str()).collect();
    assert!(
        texts.contains(&"echo: posted while you were away"),
        "{texts:?}"
    );
    let in_thread = posted
        .iter()
        .find(|p| p.text == "echo: Bob: and the hotel?")
        .expect("the thread follow-up answered");
    assert_eq!(in_thread.thread_ts.as_deref(), Some(root.as_str()));
    assert!(texts.contains(&"echo: Bob: a new question"), "{texts:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sw.slack.posted().len(), 5, "{texts:?}");
    assert_eq!(sw.w.llm.requests().len(), 5);
    // The next start reads the same history again and answers nothing twice.
    let status = daemon.terminate(WAIT);
    assert!(status.success(), "{status:?}");
    let _daemon = sw.start().await;
    sw.slack.dm(ALICE, "sentinel");
    sw.slack.wait_posted(6, WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sw.slack.posted().len(), 6, "{:?}", sw.slack.posted());
    assert_eq!(sw.w.llm.requests().len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_slack_took_just_before_a_kill_is_not_posted_again() {
    // Slack has no idempotency key: a reply posted by a process killed before it heard the
    // answer was posted a second time after the restart. Now each post carries its outbox key
    // in its metadata and a reply that may have gone out is looked for first.
    let mut sw = SlackWorld::new("", Mode::Socket).await;
    sw.slack
        .fail_next("chat.postMessage", Fault::Stall(Duration::from_secs(60)));
    let mut daemon = sw.start().await;
    sw.slack.dm(ALICE, "only once");
    sw.slack.wait_posted(1, WAIT).await;
    daemon.kill();
    let _daemon = sw.start().await;
    sw.slack.dm(ALICE, "sentinel");
    let posted = sw.slack.wait_posted(2, WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let texts: Vec<String> = sw.slack.posted().into_iter().map(|p| p.text).collect();
    assert_eq!(texts, ["echo: only once", "echo: sentinel"], "{posted:?}");
    assert!(!sw.slack.calls_of("conversations.history").is_empty());
}
