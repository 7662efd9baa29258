//! The Matrix adapter end to end through the real binary, against a real Synapse on 127.0.0.1,
//! with Alice and Bob as matrix-sdk clients: invites, direct chats, group rooms where the bot
//! answers only when addressed, encrypted rooms, and threads.
//!
//! Needs Synapse: run `.ci/synapse` first (`.ci/run` does it). Without it these tests fail with
//! that instruction; they never skip silently.

use crate::matrix_support as matrix;
use crate::support;

use std::time::Duration;

use matrix::MatrixWorld;
use matrix_sdk::ruma::events::Mentions;
use matrix_sdk::ruma::events::relation::Thread;
use matrix_sdk::ruma::events::room::member::MembershipState;
use matrix_sdk::ruma::events::room::message::{
    AddMentions, ForwardThread, Relation, ReplyMetadata, RoomMessageEventContent,
};
use support::WAIT;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alice_invites_the_bot_to_a_direct_chat_and_gets_an_answer() {
    let mut mw = MatrixWorld::new("").await;
    let _d = mw.start().await;
    let alice = mw.person(&mw.alice).await;
    let room = alice.create_dm(&mw.bot, false).await;
    alice.wait_joined(&room, &mw.bot, WAIT).await;
    alice.say(&room, "What is 2+2?").await;
    let answers = alice
        .wait_from(&room, &mw.bot, 1, WAIT, || mw.w.logs())
        .await;
    let a = &answers[0];
    assert!(a.body().contains("echo: What is 2+2?"), "{a:?}");
    assert_eq!(a.content["format"], "org.matrix.custom.html", "{a:?}");
    assert!(
        a.content["formatted_body"]
            .as_str()
            .unwrap()
            .contains("echo:")
    );
    let reqs = mw.w.llm.requests();
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].last_user_text().unwrap().contains("What is 2+2?"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_group_room_the_bot_answers_only_when_mentioned() {
    let mut mw = MatrixWorld::new("").await;
    let _d = mw.start().await;
    let alice = mw.person(&mw.alice).await;
    let bob = mw.person(&mw.bob).await;
    let room = alice.create_group(&[&mw.bot, &mw.bob], "planning").await;
    bob.join(&room).await;
    alice.wait_joined(&room, &mw.bob, WAIT).await;
    alice.wait_joined(&room, &mw.bot, WAIT).await;
    alice.say(&room, "just chatting with bob").await;
    bob.say(&room, "sure, lunch at noon").await;
    // Addressed three ways: m.mentions, the user id in the text, a reply to the bot.
    let mut mention = RoomMessageEventContent::text_plain("hey there, first question")
        .add_mentions(Mentions::with_user_ids([mw.bot.clone()]));
    mention.mentions.as_mut().unwrap().room = false;
    alice.send(&room, mention).await;
    let answers = alice
        .wait_from(&room, &mw.bot, 1, WAIT, || mw.w.logs())
        .await;
    assert!(answers[0].body().contains("first question"), "{answers:?}");
    bob.say(&room, &format!("{}: second question", mw.bot))
        .await;
    let answers = alice
        .wait_from(&room, &mw.bot, 2, WAIT, || mw.w.logs())
        .await;
    assert!(answers[1].body().contains("second question"), "{answers:?}");
    let reply = RoomMessageEventContent::text_plain("third, as a reply").make_reply_to(
        ReplyMetadata::new(&answers[1].event_id, &mw.bot, None),
        ForwardThread::No,
        AddMentions::No,
    );
    alice.send(&room, reply).await;
    let answers = alice
        .wait_from(&room, &mw.bot, 3, WAIT, || mw.w.logs())
        .await;
    assert!(
        answers[2].body().contains("third, as a reply"),
        "{answers:?}"
    );
    // Only the three addressed messages reached the model.
    let asked: Vec<String> =
        mw.w.llm
            .requests()
            .iter()
            .filter_map(|r| r.last_user_text())
            .collect();
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert!(
        !asked
            .iter()
            .any(|t| t.contains("just chatting") && !t.contains("first question")),
        "{asked:?}"
    );
    assert!(
        !asked
            .iter()
            .any(|t| t.contains("lunch at noon") && !t.contains("question"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_encrypted_direct_chat_is_answered_encrypted() {
    let mut mw = MatrixWorld::new("").await;
    let _d = mw.start().await;
    let alice = mw.person(&mw.alice).await;
    let room = alice.create_dm(&mw.bot, true).await;
    alice.wait_joined(&room, &mw.bot, WAIT).await;
    let room = alice.client.get_room(room.room_id()).unwrap();
    assert!(room.latest_encryption_state().await.unwrap().is_encrypted());
    alice.say(&room, "a secret question").await;
    let answers = alice
        .wait_from(&room, &mw.bot, 1, WAIT, || mw.w.logs())
        .await;
    assert!(
        answers[0].body().contains("echo: a secret question"),
        "{answers:?}"
    );
    // What the server holds is ciphertext; Alice's client decrypted it.
    let fetched = room.event(&answers[0].event_id, None).await.unwrap();
    assert!(
        fetched.encryption_info().is_some(),
        "the answer was not encrypted"
    );
    let wire = reqwest::Client::new()
        .get(format!(
            "{}/_matrix/client/v3/rooms/{}/event/{}",
            mw.synapse.url,
            room.room_id(),
            answers[0].event_id
        ))
        .bearer_auth(alice.client.access_token().unwrap())
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap();
    assert_eq!(wire["type"], "m.room.encrypted", "{wire}");
    assert!(!wire.to_string().contains("secret question"));
    assert!(
        mw.w.llm.requests()[0]
            .last_user_text()
            .unwrap()
            .contains("a secret question")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_reply_is_answered_inside_the_thread() {
    let mut mw = MatrixWorld::new("").await;
    let _d = mw.start().await;
    let alice = mw.person(&mw.alice).await;
    let bob = mw.person(&mw.bob).await;
    let room = alice.create_group(&[&mw.bot, &mw.bob], "threads").await;
    bob.join(&room).await;
    alice.wait_joined(&room, &mw.bob, WAIT).await;
    alice.wait_joined(&room, &mw.bot, WAIT).await;
    let root = alice
        .say(&room, &format!("{}: the root message", mw.bot))
        .await;
    let answers = alice
        .wait_from(&room, &mw.bot, 1, WAIT, || mw.w.logs())
        .await;
    // In a group the answer replies to the message that asked, outside any thread.
    let rel = &answers[0].content["m.relates_to"];
    assert_eq!(
        rel["m.in_reply_to"]["event_id"],
        root.as_str(),
        "{answers:?}"
    );
    assert!(rel.get("rel_type").is_none(), "{answers:?}");
    let mut in_thread =
        RoomMessageEventContent::text_plain(format!("{}: inside the thread", mw.bot));
    in_thread.relates_to = Some(Relation::Thread(Thread::plain(root.clone(), root.clone())));
    let asked = bob.send(&room, in_thread).await;
    let answers = alice
        .wait_from(&room, &mw.bot, 2, WAIT, || mw.w.logs())
        .await;
    let rel = &answers[1].content["m.relates_to"];
    assert_eq!(rel["rel_type"], "m.thread", "{answers:?}");
    assert_eq!(rel["event_id"], root.as_str());
    assert_eq!(rel["m.in_reply_to"]["event_id"], asked.as_str());
    assert!(answers[1].body().contains("inside the thread"));
    // The thread is its own conversation: the model did not see Alice's talk outside it.
    let last = mw.w.llm.requests().last().unwrap().messages();
    assert!(
        !last
            .iter()
            .any(|m| m.to_string().contains("the root message")),
        "{last:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invite_from_someone_not_allowed_is_ignored() {
    let mut mw = MatrixWorld::new("").await;
    let _d = mw.start().await;
    let mallory = mw.person(&mw.mallory).await;
    let theirs = mallory.create_dm(&mw.bot, false).await;
    mallory.say(&theirs, "let me in").await;
    // A sentinel from Alice: once it is answered, the bot has seen Mallory's invite too.
    let alice = mw.person(&mw.alice).await;
    let room = alice.create_dm(&mw.bot, false).await;
    alice.wait_joined(&room, &mw.bot, WAIT).await;
    alice.say(&room, "sentinel").await;
    alice
        .wait_from(&room, &mw.bot, 1, WAIT, || mw.w.logs())
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let theirs = mallory.client.get_room(theirs.room_id()).unwrap();
    let bot = theirs.get_member_no_sync(&mw.bot).await.unwrap().unwrap();
    assert_eq!(
        *bot.membership(),
        MembershipState::Invite,
        "the bot joined Mallory's room"
    );
    let asked = mw.w.llm.requests();
    assert_eq!(asked.len(), 1);
    assert!(!asked[0].last_user_text().unwrap().contains("let me in"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_the_agent_sends_arrives_encrypted_and_readable() {
    use matrix_sdk::ruma::events::room::message::MessageType;
    let mut mw = MatrixWorld::new("").await;
    let ws = mw.w.workspace_of("matrix", mw.alice.as_str());
    std::fs::write(ws.join("report.csv"), "month,total\nmay,42\n").unwrap();
    mw.w.llm.push(support::llm::Reply::tool_call(
        "send_file",
        serde_json::json!({"path": "report.csv", "caption": "the **numbers**"}),
    ));
    mw.w.llm.push(support::llm::Reply::text("Here it is."));
    let _d = mw.start().await;
    let alice = mw.person(&mw.alice).await;
    let room = alice.create_dm(&mw.bot, true).await;
    alice.wait_joined(&room, &mw.bot, WAIT).await;
    let room = alice.client.get_room(room.room_id()).unwrap();
    alice.say(&room, "the report please").await;
    let seen = alice
        .wait_from(&room, &mw.bot, 2, WAIT, || mw.w.logs())
        .await;
    let file = seen
        .iter()
        .find(|s| s.content["msgtype"] == "m.file")
        .unwrap_or_else(|| panic!("no file among {seen:?}"));
    assert_eq!(file.content["filename"], "report.csv", "{:?}", file.content);
    assert_eq!(file.content["body"], "the **numbers**");
    assert!(
        file.content.get("file").is_some(),
        "an encrypted room gets an encrypted upload: {:?}",
        file.content
    );
    let content: RoomMessageEventContent = serde_json::from_value(file.content.clone()).unwrap();
    let MessageType::File(f) = content.msgtype else {
        panic!("not a file: {:?}", file.content);
    };
    let bytes = alice
        .client
        .media()
        .get_file(&f, false)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(bytes, b"month,total\nmay,42\n");
    assert!(seen.iter().any(|s| s.body() == "Here it is."), "{seen:?}");
}
