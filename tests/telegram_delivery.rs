//! End to end through the real binary: how replies reach Telegram — chunking at the limit with
//! code fences intact, the plain-text fallback, rate limits, network failures and redelivered
//! updates.

use crate::support;

use std::time::Duration;

use support::WAIT;
use support::chat::assert_in_order;
use support::daemon::{ALICE, World};
use support::llm::Reply;
use support::telegram::utf16_len;
use support::telegram::{Fault, visible};

/// A 10,000-character answer: prose, a long code block, more prose.
fn long_answer() -> (String, Vec<String>) {
    let code: Vec<String> = (0..120)
        .map(|i| format!("    let value_{i:03} = compute({i}) * 2; // step {i}"))
        .collect();
    let mut text = String::from("Here is the plan.\n\n");
    for i in 0..30 {
        text.push_str(&format!(
            "Paragraph {i}: the quick brown fox jumps over the lazy dog again and again.\n\n"
        ));
    }
    text.push_str("```rust\nfn main() {\n");
    text.push_str(&code.join("\n"));
    text.push_str("\n}\n```\n\n");
    while text.chars().count() < 10_000 {
        text.push_str("Closing words to make it long enough. ");
    }
    (text, code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_answer_arrives_in_chunks_under_the_limit_with_code_intact() {
    let mut w = World::new("").await;
    let (answer, code) = long_answer();
    w.llm.push(Reply::text(answer.clone()));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "give me the long version");
    // Replies of one chat go out in order, so the sentinel's answer comes after every chunk.
    w.tg.wait_sent(1, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "sentinel");
    let mut sent = loop {
        let sent = w.tg.sent();
        if sent
            .last()
            .is_some_and(|m| m.visible_text == "echo: sentinel")
        {
            break sent;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    sent.pop();
    assert!(
        sent.len() >= 3,
        "10,000 characters need at least 3 messages, got {}",
        sent.len()
    );
    for m in &sent {
        assert!(
            utf16_len(&m.visible_text) <= 4096,
            "chunk of {} units",
            utf16_len(&m.visible_text)
        );
        assert_eq!(
            m.parse_mode.as_deref(),
            Some("HTML"),
            "every chunk keeps its formatting"
        );
        assert_eq!(
            m.text.matches("<pre>").count(),
            m.text.matches("</pre>").count()
        );
    }
    // Every code line arrives whole, in order, inside a code block.
    let all: String = sent
        .iter()
        .map(|m| m.visible_text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert_in_order(&all, &code);
    let code_chunks: Vec<_> = sent.iter().filter(|m| m.text.contains("value_0")).collect();
    assert!(code_chunks.iter().all(|m| m.text.contains("<pre>")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_formatting_is_resent_as_plain_text() {
    let mut w = World::new("").await;
    let answer = "Use **bold** and `code` here.";
    w.llm.push(Reply::text(answer));
    w.tg.fail_next("sendMessage", Fault::CantParseEntities);
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "format something");
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].parse_mode, None);
    assert_eq!(sent[0].text, answer);
    let calls = w.tg.calls_of("sendmessage");
    assert_eq!(
        calls.iter().map(|c| c.status).collect::<Vec<_>>(),
        [400, 200]
    );
    assert_eq!(w.tg.sent().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_waited_out_then_sent_once() {
    let mut w = World::new("").await;
    w.tg.fail_next("sendMessage", Fault::RetryAfter(2));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "hi");
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].visible_text, "echo: hi");
    let calls = w.tg.calls_of("sendmessage");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].status, 429);
    let waited = calls[1].at.duration_since(calls[0].at);
    assert!(
        waited >= Duration::from_secs(2),
        "resent after {waited:?}, before retry_after"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_is_retried() {
    let mut w = World::new("").await;
    w.tg.fail_next("sendMessage", Fault::DropConnection);
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "hi");
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].visible_text, "echo: hi");
    assert_eq!(w.tg.sent().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_update_delivered_twice_is_answered_once() {
    let mut w = World::new("").await;
    let _daemon = w.start().await;
    let first = w.tg.private_text(ALICE, "Alice", "only once please");
    w.tg.wait_sent(1, WAIT).await;
    w.tg.redeliver(first.update_id);
    w.tg.private_text(ALICE, "Alice", "sentinel");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(visible(&sent), ["echo: only once please", "echo: sentinel"]);
    assert_eq!(w.llm.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_outage_is_told_to_the_user_and_the_daemon_keeps_going() {
    // No patience: the failure is reported at once and the message is not retried by itself.
    let mut w =
        World::new("[llm]\nmax_retries = 1\n[gateway]\noutage_patience_minutes = 0\n").await;
    w.llm.push(Reply::error(
        500,
        serde_json::json!({"error": {"message": "boom", "type": "server_error"}}),
    ));
    w.llm.push(Reply::error(
        500,
        serde_json::json!({"error": {"message": "boom", "type": "server_error"}}),
    ));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "are you there?");
    let sent = w.tg.wait_sent(2, WAIT).await;
    // A note while retrying, then what went wrong and what to do.
    assert!(
        sent[0].visible_text.starts_with("⏳"),
        "{}",
        sent[0].visible_text
    );
    assert!(
        sent[1].visible_text.contains("unavailable"),
        "{}",
        sent[1].visible_text
    );
    assert!(
        sent.iter().all(|m| !m.visible_text.contains("boom")),
        "no raw provider errors in chat"
    );
    w.tg.private_text(ALICE, "Alice", "try again");
    let sent = w.tg.wait_sent(3, WAIT).await;
    assert_eq!(sent[2].visible_text, "echo: try again");
    // The failed message stayed in the history the model sees.
    let last = w.llm.requests().pop().unwrap();
    assert!(
        last.messages()
            .iter()
            .any(|m| m["content"] == "are you there?")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn during_a_provider_outage_messages_wait_and_are_answered_after_it_with_one_notice() {
    let mut w = World::new("[llm]\nmax_retries = 1\n").await;
    for _ in 0..4 {
        w.llm.push(Reply::error(
            503,
            serde_json::json!({"error": {"message": "overloaded", "type": "server_error"}}),
        ));
    }
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "are you there?");
    // Two turns fail (two calls each); the third, 5 s later, gets through.
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert!(
        sent[0].visible_text.starts_with("⏳"),
        "{}",
        sent[0].visible_text
    );
    assert_eq!(sent[1].visible_text, "echo: are you there?");
    assert_eq!(w.llm.requests().len(), 5);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        w.tg.sent().len(),
        2,
        "one notice, one answer: {:?}",
        w.tg.sent()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_update_is_skipped_and_later_messages_still_flow() {
    let mut w = World::new("").await;
    let _daemon = w.start().await;
    let bad =
        w.tg.push_update(serde_json::json!({"message": {"message_id": "not a number", "chat": 5}}));
    w.tg.private_text(ALICE, "Alice", "after the garbage");
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].visible_text, "echo: after the garbage");
    // The bad update was acknowledged too, so it cannot block the queue.
    w.tg.wait_confirmed(bad.update_id, WAIT).await;
}
