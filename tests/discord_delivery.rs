//! The Discord adapter end to end through the real binary: how replies reach Discord (chunks
//! with code fences intact, 429 waited out, redelivered events answered once, nothing lost or
//! doubled across a kill) and gateway reconnects (RESUME with replay, a new IDENTIFY, health).

use crate::support;

use std::time::Duration;

use support::WAIT;
use support::daemon::{Daemon, World};
use support::discord::{
    ALICE, BOB, FakeDiscord, Fault, start, texts, wait_sent, wait_shown, wait_until, world,
};
use support::llm::{Gate, Reply};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_answer_arrives_in_two_messages_with_code_fences_intact() {
    let (mut w, dc) = world("").await;
    let mut answer = String::from("Here you go.\n\n```rust\n");
    let mut i = 0;
    while answer.chars().count() < 2400 {
        answer.push_str(&format!("let value_{i:03} = compute({i});\n"));
        i += 1;
    }
    answer.push_str("```\nDone.");
    assert!((2400..2600).contains(&answer.chars().count()));
    w.llm.push(Reply::text(answer.clone()));
    let daemon = start(&mut w, &dc).await;
    dc.dm(ALICE, "alice", "long please");
    let sent = wait_sent(&dc, &daemon, 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent_now = dc.sent();
    assert_eq!(sent_now.len(), 2, "{:?}", texts(&sent_now));
    for m in &sent {
        assert!(m.content.chars().count() <= 2000);
        assert_eq!(
            m.content.matches("```").count() % 2,
            0,
            "unbalanced fence in {}",
            m.content
        );
    }
    assert!(
        sent[1].content.starts_with("```rust"),
        "{}",
        sent[1].content
    );
    // Nothing of the code was lost.
    for n in [0, i / 2, i - 1] {
        let line = format!("let value_{n:03} = compute({n});");
        assert!(sent.iter().any(|m| m.content.contains(&line)), "{line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_send_is_waited_out_and_sent_once() {
    let (mut w, dc) = world("").await;
    dc.fail_next("create_message", Fault::RateLimited(1.5));
    let daemon = start(&mut w, &dc).await;
    dc.dm(ALICE, "alice", "hi");
    let sent = wait_sent(&dc, &daemon, 1).await;
    assert_eq!(texts(&sent), ["echo: hi"]);
    let calls = dc.calls_of("create_message");
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!((calls[0].status, calls[1].status), (429, 200));
    let waited = calls[1].at - calls[0].at;
    assert!(
        waited >= Duration::from_millis(1400),
        "retried after {waited:?}"
    );
    assert!(waited < Duration::from_secs(10), "retried after {waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivered_message_is_answered_once() {
    let (mut w, dc) = world("").await;
    let daemon = start(&mut w, &dc).await;
    let (_, seq) = dc.dm(ALICE, "alice", "once");
    wait_sent(&dc, &daemon, 1).await;
    dc.redeliver(seq);
    dc.dm(ALICE, "alice", "sentinel");
    let sent = wait_sent(&dc, &daemon, 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(texts(&dc.sent()), ["echo: once", "echo: sentinel"]);
    assert_eq!(w.llm.requests().len(), 2);
    assert_eq!(sent.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_gateway_resumes_replays_what_was_missed_and_health_shows_it() {
    let (mut w, dc) = world("").await;
    let daemon = start(&mut w, &dc).await;
    dc.dm(ALICE, "alice", "before");
    wait_sent(&dc, &daemon, 1).await;
    // A resumable close; the message posted meanwhile is replayed on RESUME.
    dc.drop_connection(Some(4000));
    dc.dm(ALICE, "alice", "during");
    wait_until(&daemon, "a RESUME", || (dc.resumes() >= 1).then_some(())).await;
    let sent = wait_sent(&dc, &daemon, 2).await;
    assert_eq!(sent[1].content, "echo: during");
    assert_eq!(dc.identifies(), 1, "resumed, not identified again");
    // An abrupt drop (no close frame) is noticed at the next heartbeat; serving goes on.
    dc.drop_connection(None);
    wait_until(&daemon, "a new gateway session", || {
        (dc.connected() && dc.identifies() + dc.resumes() >= 3).then_some(())
    })
    .await;
    dc.dm(ALICE, "alice", "/status");
    let sent = wait_sent(&dc, &daemon, 3).await;
    let status = &sent[2].content;
    assert!(status.contains("discord: up"), "{status}");
    let log = daemon.log();
    assert!(
        !status.contains("0 restarts"),
        "the outage is counted: {status}\n{log}"
    );
    assert!(log.contains("Discord gateway disconnected"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_resume_ends_in_a_new_session_that_keeps_serving() {
    let (mut w, dc) = world("").await;
    let daemon = start(&mut w, &dc).await;
    dc.invalidate_session();
    dc.drop_connection(Some(4000));
    wait_until(&daemon, "a second IDENTIFY", || {
        (dc.connected() && dc.identifies() >= 2).then_some(())
    })
    .await;
    dc.dm(ALICE, "alice", "still there?");
    let sent = wait_sent(&dc, &daemon, 1).await;
    assert_eq!(sent[0].content, "echo: still there?");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_turn_the_message_is_answered_exactly_once_after_restart() {
    let (mut w, dc) = world("").await;
    let hang = Gate::new();
    w.llm
        .push(Reply::text("never delivered").after(hang.clone()));
    let mut daemon = start(&mut w, &dc).await;
    dc.dm(ALICE, "alice", "remember me");
    // The model call proves the message was stored and its turn started.
    w.llm.wait_requests(1, WAIT).await;
    daemon.kill();
    assert!(dc.sent().is_empty());
    let daemon = start(&mut w, &dc).await;
    let sent = wait_sent(&dc, &daemon, 1).await;
    assert_eq!(sent[0].content, "echo: remember me");
    hang.open();
    dc.dm(ALICE, "alice", "sentinel");
    wait_sent(&dc, &daemon, 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(texts(&dc.sent()), ["echo: remember me", "echo: sentinel"]);
    assert_eq!(
        (dc.identifies(), dc.resumes()),
        (1, 1),
        "the restarted daemon resumed the session it kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_posted_while_the_daemon_was_down_are_replayed_by_resuming_its_session() {
    // Once lost: a restarted daemon identified anew, and Discord does not send a new session
    // what was posted before it. Now the session is kept and resumed, and Discord replays it.
    let (mut w, dc) = world("").await;
    let mut daemon = start(&mut w, &dc).await;
    dc.dm(ALICE, "alice", "before");
    wait_sent(&dc, &daemon, 1).await;
    daemon.kill();
    dc.dm(ALICE, "alice", "while you were down");
    // Bob never wrote before: only a resume brings his first message back.
    dc.dm(BOB, "bob", "first words while you were down");
    let daemon = start(&mut w, &dc).await;
    let sent = wait_sent(&dc, &daemon, 3).await;
    let mut got = texts(&sent);
    got.sort();
    assert_eq!(
        got,
        [
            "echo: before",
            "echo: first words while you were down",
            "echo: while you were down"
        ]
    );
    assert_eq!((dc.identifies(), dc.resumes()), (1, 1), "{}", daemon.log());
    dc.dm(ALICE, "alice", "sentinel");
    wait_sent(&dc, &daemon, 4).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(dc.sent().len(), 4, "nothing twice: {:?}", texts(&dc.sent()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_cannot_be_resumed_is_caught_up_on_over_rest() {
    let (mut w, dc) = world("").await;
    let mut daemon = start(&mut w, &dc).await;
    dc.dm(ALICE, "alice", "alice before");
    dc.dm(BOB, "bob", "bob before");
    wait_sent(&dc, &daemon, 2).await;
    daemon.kill();
    // Discord forgot the session (too long down): the new one starts empty, but both chats
    // are known and what was posted after the last stored message of each is fetched.
    dc.invalidate_session();
    dc.dm(ALICE, "alice", "alice while down");
    dc.dm(BOB, "bob", "bob while down");
    let daemon = start(&mut w, &dc).await;
    let sent = wait_sent(&dc, &daemon, 4).await;
    let mut got = texts(&sent[2..]);
    got.sort();
    assert_eq!(got, ["echo: alice while down", "echo: bob while down"]);
    assert_eq!(dc.identifies(), 2, "a new session");
    assert!(!dc.calls_of("list_messages").is_empty());
    assert!(
        daemon.log().contains("caught up on messages"),
        "{}",
        daemon.log()
    );
    dc.dm(ALICE, "alice", "sentinel");
    wait_sent(&dc, &daemon, 5).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(dc.sent().len(), 5, "nothing twice: {:?}", texts(&dc.sent()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_two_shards_each_catches_up_on_the_chats_it_carries_and_no_other() {
    // Two shards, a server on each and a DM (carried by shard 0). Both sessions are lost while
    // the daemon is down: each shard reads over REST only the chats whose events it carries,
    // so every chat is read once, not once per shard.
    let (mut w, dc) = world("[discord]\nshards = 2\n").await;
    dc.set_shards(2);
    let servers: Vec<(u64, u64)> = (0..2).map(|k| dc.guild_on_shard(k, 2)).collect();
    let ask = |round: &str| dc.ask_every_shard(&servers, ALICE, "alice", round);
    let mut daemon = start_shards(&mut w, &dc, 2).await;
    ask("before");
    wait_sent(&dc, &daemon, 3).await;
    daemon.kill();
    dc.invalidate_session();
    ask("while down");
    let daemon = start_shards(&mut w, &dc, 4).await;
    let sent = wait_sent(&dc, &daemon, 6).await;
    let mut got = texts(&sent[3..]);
    got.sort();
    assert_eq!(
        got,
        [
            "echo: alice: while down on shard 0",
            "echo: alice: while down on shard 1",
            "echo: while down in a DM"
        ]
    );
    assert_eq!(dc.identifies(), 4, "two new sessions: {}", daemon.log());
    let mut reads: Vec<String> = dc
        .calls_of("list_messages")
        .into_iter()
        .map(|c| c.path)
        .collect();
    reads.sort();
    let mut chats: Vec<String> = servers
        .iter()
        .map(|(_, channel)| *channel)
        .chain([dc.dm_channel(ALICE)])
        .map(|channel| format!("/channels/{channel}/messages"))
        .collect();
    chats.sort();
    assert_eq!(reads, chats, "each chat read once, by its shard");
    dc.dm(ALICE, "alice", "sentinel");
    wait_sent(&dc, &daemon, 7).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(dc.sent().len(), 7, "nothing twice: {:?}", texts(&dc.sent()));
}

/// Start the daemon and wait until every shard has a live session, `sessions` in total so far.
async fn start_shards(w: &mut World, dc: &FakeDiscord, sessions: usize) -> Daemon {
    w.start_when("every shard's gateway session", || {
        dc.shards_connected().iter().all(|live| *live) && dc.identifies() + dc.resumes() >= sessions
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_answer_is_edited_in_place_and_posted_once() {
    let (mut w, dc) = world("[llm]\nstreaming = true\n").await;
    let answer: String = (1..=30)
        .map(|i| format!("Sentence number {i} of a streamed answer."))
        .collect::<Vec<_>>()
        .join(" ");
    w.llm
        .push(Reply::text(answer.clone()).chunk_delay(Duration::from_millis(25)));
    let daemon = start(&mut w, &dc).await;
    dc.dm(ALICE, "alice", "tell me a lot");
    let preview = wait_sent(&dc, &daemon, 1).await.remove(0);
    wait_shown(&dc, &daemon, preview.id, &answer).await;
    assert!(dc.edits().len() >= 2, "{} edits", dc.edits().len());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        dc.sent().len(),
        1,
        "no second message: {:?}",
        texts(&dc.sent())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_edit_is_waited_out() {
    let (mut w, dc) = world("[llm]\nstreaming = true\n").await;
    let answer: String = (1..=30)
        .map(|i| format!("Line {i} of the answer."))
        .collect::<Vec<_>>()
        .join(" ");
    w.llm
        .push(Reply::text(answer.clone()).chunk_delay(Duration::from_millis(25)));
    dc.fail_next("edit_message", Fault::RateLimited(1.0));
    let daemon = start(&mut w, &dc).await;
    dc.dm(ALICE, "alice", "go");
    let preview = wait_sent(&dc, &daemon, 1).await.remove(0);
    wait_shown(&dc, &daemon, preview.id, &answer).await;
    let edits = dc.calls_of("edit_message");
    assert_eq!(edits[0].status, 429, "{edits:?}");
    assert_eq!(dc.sent().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_the_discord_token() {
    let (mut w, dc) = world("").await;
    let (status, stdout, stderr) = w.run(&["doctor"]);
    assert!(status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("✓ discord: hermes-test (id 900000000000000001)"),
        "{stdout}"
    );
    assert!(!stdout.contains(support::daemon::TOKEN));
    w.set_env("DISCORD_BOT_TOKEN", "wrong-token");
    let (status, stdout, _) = w.run(&["doctor"]);
    assert!(!status.success());
    assert!(
        stdout.contains("✗ discord: credentials rejected"),
        "{stdout}"
    );
    assert!(!dc.calls_of("me").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_gateway_url_wins_over_the_announced_one() {
    let (mut w, dc) = world("").await;
    dc.announce_gateway("ws://127.0.0.1:9/nowhere");
    w.set_env("DISCORD_GATEWAY_URL", &dc.gateway_url());
    let daemon = start(&mut w, &dc).await;
    dc.dm(ALICE, "alice", "through the configured gateway");
    let sent = wait_sent(&dc, &daemon, 1).await;
    assert_eq!(sent[0].content, "echo: through the configured gateway");
}
