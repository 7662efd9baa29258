//! Long conversations stay affordable, through the real binary: past half the context window
//! the middle of the history is summarised by the auxiliary model; later requests carry the
//! first messages, the summary and the most recent messages — never a tool result without its
//! call. `/compress` does it on demand.

use crate::support;

use std::collections::HashSet;

use serde_json::json;
use support::WAIT;
use support::daemon::{ALICE, World};
use support::llm::{RecordedRequest, Reply};

const CONFIG: &str = "[llm]\ncontext_window = 4000\nauxiliary_model = \"small-model\"\n\
                      [agent]\ncompression_keep_last = 4\n[tools]\ntoolsets = [\"core\"]\n";

fn summarising(req: &RecordedRequest) -> bool {
    req.system_text()
        .is_some_and(|s| s.contains("You compress conversation history"))
}

fn answer_or_summarise(w: &World) {
    w.llm.set_default(|req: &RecordedRequest| {
        if summarising(req) {
            Reply::text("- The user sent numbered long messages about topic A.")
        } else if req
            .last_user_text()
            .is_some_and(|t| t.starts_with("message 4"))
            && req.tool_results().is_empty()
        {
            // A tool round in the middle of the conversation.
            Reply::tool_call("current_time", json!({}))
        } else {
            let last = req.last_user_text().unwrap_or_default();
            Reply::text(format!("ok {}", last.chars().take(20).collect::<String>()))
        }
    });
}

/// Every tool result follows the assistant message that called it.
fn assert_tool_rounds_whole(req: &RecordedRequest) {
    let mut called = HashSet::new();
    for m in req.messages() {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            called.insert(c["id"].as_str().unwrap().to_owned());
        }
        if m["role"] == "tool" {
            assert!(
                called.contains(m["tool_call_id"].as_str().unwrap()),
                "orphan tool result in {:?}",
                req.messages()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_conversation_is_compressed_to_head_summary_and_tail() {
    let mut w = World::new(CONFIG).await;
    answer_or_summarise(&w);
    let _daemon = w.start().await;
    for i in 0..10 {
        w.tg.private_text(
            ALICE,
            "Alice",
            &format!("message {i}: {}", "lorem ipsum dolor ".repeat(60)),
        );
        w.tg.wait_sent(i + 1, WAIT).await;
    }
    let reqs = w.llm.requests();
    let summary_req = reqs
        .iter()
        .position(summarising)
        .expect("the history was never summarised");
    assert_eq!(reqs[summary_req].model(), Some("small-model"));
    let after = &reqs[summary_req + 1];
    let texts: Vec<String> = after
        .messages()
        .iter()
        .map(|m| {
            m["content"]
                .as_str()
                .unwrap_or_default()
                .chars()
                .take(40)
                .collect()
        })
        .collect();
    assert!(
        texts[1].starts_with("message 0"),
        "the head is kept: {texts:?}"
    );
    let summary_at = texts
        .iter()
        .position(|t| t.starts_with("[Summary of the earlier part"))
        .unwrap_or_else(|| panic!("summary in the prompt: {texts:?}"));
    assert!(summary_at <= 4, "head, then the summary: {texts:?}");
    assert!(
        after
            .messages()
            .iter()
            .any(|m| m["content"].as_str().is_some_and(|c| c.contains("topic A")))
    );
    assert!(
        texts.len() < 2 * (summary_req + 1),
        "the middle is gone: {texts:?}"
    );
    for r in &reqs {
        assert_tool_rounds_whole(r);
    }
    // The latest request is built from the stored summary as well.
    let last = reqs.last().unwrap();
    assert!(
        last.messages()
            .iter()
            .any(|m| m["content"].as_str().is_some_and(|c| c.contains("topic A")))
    );
    assert!(last.last_user_text().unwrap().starts_with("message 9"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compress_on_demand() {
    let mut w = World::new("[agent]\ncompression_keep_last = 2\n").await;
    answer_or_summarise(&w);
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "/compress");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert!(
        sent[1].visible_text.starts_with("Nothing to compress"),
        "{}",
        sent[1].visible_text
    );
    for i in 0..6 {
        w.tg.private_text(ALICE, "Alice", &format!("short {i}"));
        w.tg.wait_sent(3 + i, WAIT).await;
    }
    w.tg.private_text(ALICE, "Alice", "/compress");
    let sent = w.tg.wait_sent(10, WAIT).await;
    assert!(
        sent[9].visible_text.starts_with("🗜 Done:"),
        "{}",
        sent[9].visible_text
    );
    w.tg.private_text(ALICE, "Alice", "after");
    w.tg.wait_sent(11, WAIT).await;
    let last = w.llm.requests().pop().unwrap();
    assert!(
        last.messages()
            .iter()
            .any(|m| m["content"].as_str().is_some_and(|c| c.contains("topic A")))
    );
}
