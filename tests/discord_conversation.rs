//! The Discord adapter end to end through the real binary, against the fake gateway + REST API
//! and the fake LLM: the shared conformance expectations (DM answered, chatter ignored without
//! an LLM call, mention answered as a reply, long answers in fence-safe chunks, 429 waited out,
//! unlisted users ignored, a redelivered event answered once), approval buttons, threads, and
//! gateway reconnects.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::daemon::{Daemon, TOKEN, World};
use support::discord_api::{BOT_ID, CHANNEL as GUILD_CHANNEL};
use support::fake_discord::{FakeDiscord, Fault, SentMessage};
use support::fake_llm::{RecordedRequest, Reply};

const WAIT: Duration = Duration::from_secs(20);
const ALICE: u64 = 111_111_111_111_111_111;
const BOB: u64 = 222_222_222_222_222_222;
const MALLORY: u64 = 666_666_666_666_666_666;

/// A world where hermes runs with Discord alone (no Telegram configured).
async fn world(config: &str) -> (World, FakeDiscord) {
    let mut w = World::new(config).await;
    let dc = FakeDiscord::start(TOKEN).await;
    for key in [
        "TELEGRAM_BOT_TOKEN",
        "TELEGRAM_API_URL",
        "TELEGRAM_ALLOWED_USERS",
    ] {
        w.unset_env(key);
    }
    w.set_env("DISCORD_BOT_TOKEN", TOKEN);
    w.set_env("DISCORD_API_URL", &dc.api_url());
    w.set_env("DISCORD_ALLOWED_USERS", &format!("{ALICE},{BOB}"));
    (w, dc)
}

/// Start the daemon and wait until its gateway session is live.
async fn start(w: &mut World, dc: &FakeDiscord) -> Daemon {
    let before = dc.identifies() + dc.resumes();
    let daemon = w.spawn();
    let deadline = Instant::now() + WAIT;
    while !(dc.connected() && dc.identifies() + dc.resumes() > before) {
        assert!(
            Instant::now() < deadline,
            "no gateway session; log:\n{}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    daemon
}

async fn wait_until<T>(daemon: &Daemon, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; log:\n{}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn wait_sent(dc: &FakeDiscord, daemon: &Daemon, n: usize) -> Vec<SentMessage> {
    wait_until(daemon, &format!("{n} message(s) from the bot"), || {
        let sent = dc.sent();
        (sent.len() >= n).then_some(sent)
    })
    .await
}

fn texts(sent: &[SentMessage]) -> Vec<&str> {
    sent.iter().map(|m| m.content.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_message_is_answered_in_the_dm() {
    let (mut w, dc) = world("").await;
    let daemon = start(&mut w, &dc).await;
    dc.dm(ALICE, "alice", "hello there");
    let sent = wait_sent(&dc, &daemon, 1).await;
    assert_eq!(sent[0].channel_id, dc.dm_channel(ALICE));
    assert_eq!(sent[0].content, "echo: hello there");
    assert_eq!(sent[0].reference, None, "no reply quote in a DM");
    assert_eq!(sent[0].allowed_mentions["parse"], json!([]));
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 1);
    assert!(
        reqs[0].system_text().unwrap().contains("on Discord"),
        "{}",
        reqs[0].system_text().unwrap()
    );
    assert!(dc.typing().contains(&dc.dm_channel(ALICE)));
    // Guild messages, DMs and the (privileged) message content intent were asked for.
    let intents = dc.intents();
    assert_eq!(intents & (1 << 9), 1 << 9, "GUILD_MESSAGES");
    assert_eq!(intents & (1 << 12), 1 << 12, "DIRECT_MESSAGES");
    assert_eq!(intents & (1 << 15), 1 << 15, "MESSAGE_CONTENT");
    let log = daemon.log();
    assert!(log.contains("Discord connected"), "{log}");
    assert!(!log.contains(TOKEN), "bot token in the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_chatter_is_ignored_and_a_mention_is_answered_as_a_reply() {
    let (mut w, dc) = world("").await;
    let daemon = start(&mut w, &dc).await;
    dc.guild_text(GUILD_CHANNEL, ALICE, "alice", "lunch at noon?");
    let (asked, _) = dc.mention(GUILD_CHANNEL, ALICE, "alice", "what do you think");
    let sent = wait_sent(&dc, &daemon, 1).await;
    assert_eq!(sent[0].channel_id, GUILD_CHANNEL);
    assert_eq!(sent[0].content, "echo: alice: what do you think");
    assert_eq!(sent[0].reference, Some(asked));
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 1, "only the mention reaches the model");
    assert!(!reqs[0].last_user_text().unwrap().contains("lunch"));
    // A reply to the bot's answer addresses it without a mention.
    let mut reply = json!({});
    reply["content"] = json!("and then?");
    let (id, _) = {
        let answer = sent[0].id;
        let msg = support::discord_api::message(
            answer + 1_000,
            GUILD_CHANNEL,
            support::discord_api::user(BOB, "bob", false),
            "and then?",
        );
        let mut msg = msg;
        msg["type"] = json!(19);
        msg["guild_id"] = json!(support::discord_api::GUILD.to_string());
        msg["member"] = support::discord_api::member(&[]);
        msg["message_reference"] = json!({"type": 0, "message_id": answer.to_string(), "channel_id": GUILD_CHANNEL.to_string()});
        msg["referenced_message"] = support::discord_api::message(
            answer,
            GUILD_CHANNEL,
            support::discord_api::bot_user(),
            &sent[0].content,
        );
        (answer + 1_000, dc.dispatch("MESSAGE_CREATE", msg))
    };
    let sent = wait_sent(&dc, &daemon, 2).await;
    assert_eq!(sent[1].reference, Some(id));
    assert!(sent[1].content.contains("and then?"), "{}", sent[1].content);
}

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
async fn an_unlisted_user_gets_nothing_and_costs_no_llm_call() {
    let (mut w, dc) = world("").await;
    let daemon = start(&mut w, &dc).await;
    dc.dm(MALLORY, "mallory", "let me in");
    dc.mention(GUILD_CHANNEL, MALLORY, "mallory", "hey bot");
    dc.dm(ALICE, "alice", "sentinel");
    let sent = wait_sent(&dc, &daemon, 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(dc.sent().len(), 1, "{:?}", texts(&dc.sent()));
    assert_eq!(sent[0].channel_id, dc.dm_channel(ALICE));
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].last_user_text().as_deref(), Some("sentinel"));
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

/// The model answers with what the last tool returned.
fn echo_tool_results(w: &World) {
    w.llm.set_default(|req: &RecordedRequest| {
        let last = req
            .tool_results()
            .last()
            .map(|(_, text)| text.clone())
            .unwrap_or_default();
        Reply::text(format!("tool said: {last}"))
    });
}

fn button(m: &SentMessage, label: &str) -> String {
    m.buttons()
        .into_iter()
        .find(|(l, _)| l.contains(label))
        .unwrap_or_else(|| panic!("no `{label}` button in {m:?}"))
        .1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_button_works_only_for_the_user_who_was_asked() {
    let (mut w, dc) = world("").await;
    echo_tool_results(&w);
    w.llm.push(Reply::tool_call(
        "terminal",
        json!({"command": "echo approved-$((40 + 2))"}),
    ));
    let daemon = start(&mut w, &dc).await;
    dc.mention(GUILD_CHANNEL, ALICE, "alice", "run the thing");
    let request = wait_sent(&dc, &daemon, 1).await.remove(0);
    assert!(
        request.content.contains("Permission needed: `terminal`"),
        "{}",
        request.content
    );
    assert_eq!(request.buttons().len(), 4, "{:?}", request.buttons());
    // Bob (allowed to use the bot, but not the one asked) presses Allow: nothing runs.
    let bobs = dc.press(BOB, "bob", request.id, &button(&request, "Allow once"));
    wait_until(&daemon, "Bob's press acknowledged", || {
        dc.callbacks()
            .iter()
            .any(|(id, _)| *id == bobs)
            .then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(dc.sent().len(), 1, "{:?}", texts(&dc.sent()));
    // Alice's press approves.
    let alices = dc.press(ALICE, "alice", request.id, &button(&request, "Allow once"));
    let sent = wait_sent(&dc, &daemon, 2).await;
    assert!(
        sent[1].content.contains("approved-42"),
        "{}",
        sent[1].content
    );
    assert!(
        dc.callbacks().contains(&(alices, 6)),
        "{:?}",
        dc.callbacks()
    );
    assert!(
        !daemon.log().contains("interaction-token-"),
        "interaction token in the log"
    );
    // The request was updated to show the decision, without its buttons.
    wait_until(&daemon, "the request marked allowed", || {
        dc.edits()
            .iter()
            .any(|e| {
                e.id == request.id && e.content.contains("Allowed once") && e.buttons().is_empty()
            })
            .then_some(())
    })
    .await;
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
    assert_eq!(BOT_ID, support::discord_api::BOT_ID);
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
async fn with_auto_thread_a_mention_opens_a_thread_its_members_share() {
    let (mut w, dc) = world("[discord]\nauto_thread = true\n").await;
    let daemon = start(&mut w, &dc).await;
    let (asked, _) = dc.mention(GUILD_CHANNEL, ALICE, "alice", "plan the launch");
    let sent = wait_sent(&dc, &daemon, 1).await;
    // The thread was started from the message (a thread takes its starter's id).
    let threads = dc.threads_created();
    assert_eq!(threads.len(), 1, "{threads:?}");
    assert_eq!((threads[0].0, threads[0].1), (GUILD_CHANNEL, asked));
    assert_eq!(sent[0].channel_id, asked, "answered inside the thread");
    assert_eq!(sent[0].content, "echo: alice: plan the launch");
    // In the bot's thread, no mention is needed, and everyone shares one conversation.
    dc.guild_text(asked, BOB, "bob", "add a budget");
    let sent = wait_sent(&dc, &daemon, 2).await;
    assert_eq!(sent[1].channel_id, asked);
    let reqs = w.llm.requests();
    let last = reqs.last().unwrap();
    let users: Vec<String> = last
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(users, ["alice: plan the launch", "bob: add a budget"]);
    // Chatter in the parent channel is still ignored, and no second thread is made.
    dc.guild_text(GUILD_CHANNEL, ALICE, "alice", "unrelated");
    dc.guild_text(asked, ALICE, "alice", "sentinel");
    wait_sent(&dc, &daemon, 3).await;
    assert_eq!(w.llm.requests().len(), 3);
    assert_eq!(dc.threads_created().len(), 1);
    assert!(dc.typing().contains(&asked));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_image_reaches_a_vision_model() {
    const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4];
    let (mut w, dc) = world("[llm]\nvision = true\n").await;
    let daemon = start(&mut w, &dc).await;
    dc.dm_with_file(ALICE, "alice", "what is this?", "cat.png", "image/png", PNG);
    wait_sent(&dc, &daemon, 1).await;
    let req = w.llm.requests().pop().unwrap();
    let user = req
        .messages()
        .into_iter()
        .rfind(|m| m["role"] == "user")
        .unwrap();
    let parts = user["content"].as_array().expect("content parts").clone();
    let image = parts
        .iter()
        .find(|p| p["type"] == "image_url")
        .expect("an image part");
    assert_eq!(
        image["image_url"]["url"],
        "data:image/png;base64,iVBORw0KGgoBAgME"
    );
}
