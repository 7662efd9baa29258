//! Memory that lasts, through the real binary: what the agent saves with the `memory` tool
//! appears in the system prompt of the next session (and not before: the prefix of a running
//! session never changes), within the caps.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::daemon::{ALICE, World};
use support::llm::{Reply, reviewing};
use support::{WAIT, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_memory_reaches_the_next_sessions_prompt_and_the_prefix_stays_stable() {
    let mut w = World::new("[memory]\nuser_chars = 60\n").await;
    w.llm.push(Reply::tool_calls(vec![
        ("memory", json!({"action": "add", "target": "user", "content": "Name: Alice, prefers tea"})),
        ("memory", json!({"action": "add", "target": "user", "content": "Lives on a street with a remarkably long name"})),
    ]));
    w.llm.push(Reply::text("Noted."));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "I'm Alice and I like tea");
    w.tg.wait_sent(1, WAIT).await;
    let results: Vec<String> = w.llm.requests()[1].tool_result_texts();
    assert!(results[0].starts_with("added"), "{results:?}");
    assert!(results[1].contains("over its limit of 60"), "{results:?}");

    w.tg.private_text(ALICE, "Alice", "same session");
    w.tg.wait_sent(2, WAIT).await;
    let reqs = w.llm.requests();
    let first = reqs[0].system_text().unwrap();
    assert_eq!(
        reqs[2].system_text().unwrap(),
        first,
        "the prefix of a session is byte-identical"
    );
    assert!(!first.contains("prefers tea"));

    w.tg.private_text(ALICE, "Alice", "/new");
    w.tg.wait_sent(3, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "do you know me?");
    w.tg.wait_sent(4, WAIT).await;
    let prompt = w.llm.requests().pop().unwrap().system_text().unwrap();
    assert!(prompt.contains("Name: Alice, prefers tea"), "{prompt}");
    assert!(
        !prompt.contains("remarkably long"),
        "the entry over the cap was not saved"
    );
    let file = w.home.path().join("memory/telegram%3A111/USER.md");
    assert_eq!(
        std::fs::read_to_string(file).unwrap(),
        "Name: Alice, prefers tea\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_search_finds_earlier_conversations_of_the_same_person_only() {
    let mut w = World::new("").await;
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "the zebra password is Mango");
    w.tg.wait_sent(1, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "我的猫叫小白，很可爱");
    w.tg.wait_sent(2, WAIT).await;
    w.tg.private_text(support::daemon::BOB, "Bob", "my zebra password is Kiwi");
    w.tg.wait_sent(3, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "/new");
    w.tg.wait_sent(4, WAIT).await;
    w.llm.push(Reply::tool_calls(vec![
        ("session_search", json!({"query": "zebra password"})),
        ("session_search", json!({"query": "小白"})),
        ("session_search", json!({"query": "\"NEAR( * zebra AND"})),
    ]));
    w.llm.push(Reply::text("found it"));
    w.tg.private_text(ALICE, "Alice", "what was my zebra password?");
    w.tg.wait_sent(5, WAIT).await;
    let results: Vec<String> = w.llm.requests().pop().unwrap().tool_result_texts();
    assert!(
        results[0].contains("the zebra password is Mango"),
        "{}",
        results[0]
    );
    assert!(
        !results[0].contains("Kiwi"),
        "Bob's conversation must never show: {}",
        results[0]
    );
    assert!(results[1].contains("我的猫叫小白"), "{}", results[1]);
    assert!(
        !results[2].starts_with("error"),
        "operators typed by a user never error: {}",
        results[2]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_enough_tool_work_a_silent_review_saves_memory() {
    let mut w = World::new("[memory]\nreview_interval = 2\n[skills]\nreview_interval = 0\n").await;
    w.llm.push(Reply::tool_call("current_time", json!({})));
    w.llm.push(Reply::tool_call(
        "current_time",
        json!({"timezone": "Asia/Tokyo"}),
    ));
    w.llm.push(Reply::text("It is evening in Tokyo."));
    w.llm.set_default(|req| {
        if reviewing(req) && req.tool_results().is_empty() {
            Reply::tool_call(
                "memory",
                json!({"action": "add", "target": "user", "content": "Travels to Tokyo often"}),
            )
        } else if reviewing(req) {
            Reply::text("Saved one fact.")
        } else {
            Reply::text("ok")
        }
    });
    let _daemon = w.start().await;
    w.tg.private_text(
        ALICE,
        "Alice",
        "I fly to Tokyo again tomorrow, what time is it there?",
    );
    w.tg.wait_sent(1, WAIT).await;
    let file = w.home.path().join("memory/telegram%3A111/USER.md");
    let saved = || file.exists().then_some(());
    wait_for(WAIT, "the review to save the memory", saved, String::new).await;
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "Travels to Tokyo often\n"
    );
    let reqs = w.llm.requests();
    let review = reqs.iter().position(reviewing).unwrap();
    assert!(review >= 3, "the review came after the turn");
    assert!(
        reqs[review]
            .last_user_text()
            .unwrap()
            .contains("fly to Tokyo"),
        "it read the conversation"
    );
    assert_eq!(reqs[review].tool_names(), ["memory"]);
    // The user saw only the answer.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(w.tg.sent().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_with_nothing_to_save_writes_nothing() {
    let mut w = World::new("[memory]\nreview_interval = 1\n[skills]\nreview_interval = 0\n").await;
    w.llm.push(Reply::tool_call("current_time", json!({})));
    w.llm.push(Reply::text("noon"));
    w.llm.set_default(|req| {
        if reviewing(req) {
            Reply::text("Nothing to save.")
        } else {
            Reply::text("ok")
        }
    });
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "time?");
    w.tg.wait_sent(1, WAIT).await;
    w.llm.wait_request("a review", WAIT, reviewing).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !w.home.path().join("memory").exists(),
        "nothing was written"
    );
    assert_eq!(w.tg.sent().len(), 1);
}
