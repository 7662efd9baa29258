//! The Discord adapter end to end through the real binary, against the fake gateway + REST API
//! and the fake LLM: who gets answered where (DMs, mentions, replies, threads), unlisted users,
//! approval buttons and attachments.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::Buttons;
use support::daemon::TOKEN;
use support::discord::{
    self, ALICE, BOB, CHANNEL as GUILD_CHANNEL, MALLORY, start, texts, wait_sent, wait_until, world,
};
use support::llm::{PNG, PNG_DATA_URL, Reply};

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
        let msg = discord::message(
            answer + 1_000,
            GUILD_CHANNEL,
            discord::user(BOB, "bob", false),
            "and then?",
        );
        let mut msg = msg;
        msg["type"] = json!(19);
        msg["guild_id"] = json!(discord::GUILD.to_string());
        msg["member"] = discord::member(&[]);
        msg["message_reference"] = json!({"type": 0, "message_id": answer.to_string(), "channel_id": GUILD_CHANNEL.to_string()});
        msg["referenced_message"] =
            discord::message(answer, GUILD_CHANNEL, discord::bot_user(), &sent[0].content);
        (answer + 1_000, dc.dispatch("MESSAGE_CREATE", msg))
    };
    let sent = wait_sent(&dc, &daemon, 2).await;
    assert_eq!(sent[1].reference, Some(id));
    assert!(sent[1].content.contains("and then?"), "{}", sent[1].content);
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
async fn an_approval_button_works_only_for_the_user_who_was_asked() {
    let (mut w, dc) = world("").await;
    w.llm.echo_tool_results();
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
    let bobs = dc.press(BOB, "bob", request.id, &request.button("Allow once"));
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
    let alices = dc.press(ALICE, "alice", request.id, &request.button("Allow once"));
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
    assert_eq!(
        last.user_texts(),
        ["alice: plan the launch", "bob: add a budget"]
    );
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
    let (mut w, dc) = world("[llm]\nvision = true\n").await;
    let daemon = start(&mut w, &dc).await;
    dc.dm_with_file(ALICE, "alice", "what is this?", "cat.png", "image/png", PNG);
    wait_sent(&dc, &daemon, 1).await;
    let req = w.llm.requests().pop().unwrap();
    assert_eq!(req.image_url().expect("an image part"), PNG_DATA_URL);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mention_of_the_bots_role_is_answered() {
    let (mut w, dc) = world("").await;
    let daemon = start(&mut w, &dc).await;
    let id = 900_000_000_000_100_000;
    let mut msg = discord::message(
        id,
        GUILD_CHANNEL,
        discord::user(BOB, "bob", false),
        &format!("<@&{}> status report", discord::BOT_ROLE),
    );
    msg["guild_id"] = json!(discord::GUILD.to_string());
    msg["member"] = discord::member(&[]);
    msg["mention_roles"] = json!([discord::BOT_ROLE.to_string()]);
    dc.dispatch("MESSAGE_CREATE", msg);
    let sent = wait_sent(&dc, &daemon, 1).await;
    assert_eq!(sent[0].content, "echo: bob: status report");
    assert_eq!(sent[0].reference, Some(id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attachment_over_the_size_cap_is_not_downloaded() {
    let (mut w, dc) = world("[llm]\nvision = true\n").await;
    let daemon = start(&mut w, &dc).await;
    let channel = dc.dm_channel(ALICE);
    let id = 900_000_000_000_200_000;
    let mut msg = discord::message(
        id,
        channel,
        discord::user(ALICE, "alice", false),
        "huge picture",
    );
    msg["attachments"] = json!([{"id": "5", "filename": "huge.png", "size": 50_000_000,
        "url": format!("{}/attachments/huge.png", dc.api_url()),
        "proxy_url": "http://127.0.0.1:9/x", "content_type": "image/png"}]);
    dc.dispatch("MESSAGE_CREATE", msg);
    wait_sent(&dc, &daemon, 1).await;
    let text = w.llm.requests()[0].last_user_text().unwrap_or_default();
    assert!(text.contains("larger than"), "{text}");
    assert!(
        dc.calls_of("cdn").is_empty(),
        "the file was not fetched at all"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_bots_are_not_answered() {
    let (mut w, dc) = world("[gateway]\nallow_all_users = true\n").await;
    let daemon = start(&mut w, &dc).await;
    let mut msg = discord::message(
        900_000_000_000_300_000,
        GUILD_CHANNEL,
        discord::user(BOB, "other-bot", true),
        &format!("<@{}> ping", discord::BOT_ID),
    );
    msg["guild_id"] = json!(discord::GUILD.to_string());
    msg["member"] = discord::member(&[]);
    msg["mentions"] = json!([discord::bot_user()]);
    dc.dispatch("MESSAGE_CREATE", msg);
    dc.dm(ALICE, "alice", "sentinel");
    let sent = wait_sent(&dc, &daemon, 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(texts(&dc.sent()), ["echo: sentinel"]);
    assert_eq!(sent[0].channel_id, dc.dm_channel(ALICE));
    assert_eq!(w.llm.requests().len(), 1);
}
