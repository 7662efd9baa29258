//! Tools doing real work through the real binary: parallel-safe calls run together, writes to
//! one file run in order, the workspace cannot be left, each person has their own workspace (an
//! operator sees them all), and a subagent's summary comes back.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use serde_json::json;
use support::WAIT;
use support::daemon::{ALICE, BOB, World};
use support::llm::Reply;
use tokio::sync::Barrier;

/// A page server where each request waits (up to 5 s) for a second one to arrive: the page
/// says whether it was fetched together with another.
async fn rendezvous_server() -> String {
    let barrier = Arc::new(Barrier::new(2));
    let app = Router::new().route(
        "/{page}",
        get(move || {
            let barrier = barrier.clone();
            async move {
                let together = tokio::time::timeout(Duration::from_secs(5), barrier.wait()).await.is_ok();
                axum::response::Html(format!(
                    "<html><body><h1>Page</h1><p>{}</p><script>var hidden = 1;</script></body></html>",
                    if together { "fetched together" } else { "fetched alone" }
                ))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_parallel_safe_calls_run_concurrently() {
    let mut w = World::new("[tools]\nweb_allow_private = true\n").await;
    let site = rendezvous_server().await;
    w.llm.push(Reply::tool_calls(vec![
        ("web_fetch", json!({"url": format!("{site}/a")})),
        ("web_fetch", json!({"url": format!("{site}/b")})),
    ]));
    w.llm.push(Reply::text("fetched both"));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "read both pages");
    w.tg.wait_sent(1, WAIT).await;
    let results = w.llm.requests()[1].tool_result_texts();
    assert_eq!(results.len(), 2);
    for r in &results {
        assert!(r.contains("fetched together"), "{r}");
        assert!(!r.contains("hidden"), "scripts are not text: {r}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_addresses_are_refused_by_default() {
    let mut w = World::new("").await;
    let site = rendezvous_server().await;
    w.llm.push(Reply::tool_call(
        "web_fetch",
        json!({"url": format!("{site}/a")}),
    ));
    w.llm.push(Reply::text("could not"));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "read my router page");
    w.tg.wait_sent(1, WAIT).await;
    let results = w.llm.requests()[1].tool_result_texts();
    assert!(results[0].starts_with("error:"), "{}", results[0]);
    assert!(
        results[0].contains("loopback") || results[0].contains("private"),
        "{}",
        results[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_to_one_file_run_in_order_inside_the_workspace() {
    let mut w = World::new("").await;
    w.llm.push(Reply::tool_calls(vec![
        (
            "write_file",
            json!({"path": "notes/todo.txt", "content": "one\n"}),
        ),
        (
            "patch_file",
            json!({"path": "notes/todo.txt", "old_text": "one", "new_text": "two"}),
        ),
        ("read_file", json!({"path": "../hermes.db"})),
    ]));
    w.llm.push(Reply::text("written"));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "take a note");
    w.tg.wait_sent(1, WAIT).await;
    let written = std::fs::read_to_string(
        w.workspace_of("telegram", &ALICE.to_string())
            .join("notes/todo.txt"),
    )
    .unwrap();
    assert_eq!(written, "two\n");
    let results = w.llm.requests()[1].tool_result_texts();
    assert!(!results[0].starts_with("error"), "{}", results[0]);
    assert!(!results[1].starts_with("error"), "{}", results[1]);
    assert!(
        results[2].starts_with("error"),
        "escaping the workspace must fail: {}",
        results[2]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegate_task_returns_the_subagents_summary() {
    let mut w = World::new("").await;
    w.llm.push(Reply::tool_call(
        "delegate_task",
        json!({"task": "find the answer", "context": "it is 42"}),
    ));
    w.llm.push(Reply::text("The answer is 42."));
    w.llm.push(Reply::text("My helper found: 42."));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "delegate it");
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].visible_text, "My helper found: 42.");
    let reqs = w.llm.requests();
    let sub = &reqs[1];
    assert!(sub.system_text().unwrap().contains("subagent"));
    assert!(sub.last_user_text().unwrap().contains("it is 42"));
    assert!(!sub.tool_names().contains(&"delegate_task".to_owned()));
    assert!(reqs[2].tool_result_texts()[0].contains("The answer is 42."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_person_has_a_workspace_and_an_operator_sees_them_all() {
    let mut w = World::new("[access]\noperators = [\"telegram:222\"]\n").await;
    // A file of the one shared workspace of earlier versions.
    let root = w.home.path().join("workspace");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("old-notes.txt"), "from before").unwrap();
    w.llm.push(Reply::tool_calls(vec![
        (
            "write_file",
            json!({"path": "mine.txt", "content": "alice's"}),
        ),
        ("read_file", json!({"path": "old-notes.txt"})),
        ("list_dir", json!({"path": "."})),
    ]));
    w.llm.push(Reply::text("noted"));
    w.llm.push(Reply::tool_calls(vec![
        ("read_file", json!({"path": "old-notes.txt"})),
        ("read_file", json!({"path": "telegram/111/mine.txt"})),
    ]));
    w.llm.push(Reply::text("read"));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "write it down");
    w.tg.wait_sent(1, WAIT).await;
    w.tg.private_text(BOB, "Bob", "what is there?");
    w.tg.wait_sent(2, WAIT).await;
    let alice = w.llm.requests()[1].tool_result_texts();
    assert!(!alice[0].starts_with("error"), "{}", alice[0]);
    assert!(
        alice[1].starts_with("error") && !alice[1].contains("from before"),
        "a person does not see the old shared workspace: {}",
        alice[1]
    );
    assert!(
        alice[2].contains("mine.txt") && !alice[2].contains("old-notes"),
        "{}",
        alice[2]
    );
    assert_eq!(
        std::fs::read_to_string(w.workspace_of("telegram", "111").join("mine.txt")).unwrap(),
        "alice's"
    );
    let bob = w.llm.requests()[3].tool_result_texts();
    assert!(bob[0].contains("from before"), "{}", bob[0]);
    assert!(bob[1].contains("alice's"), "{}", bob[1]);
}
