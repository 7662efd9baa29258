//! Answers streamed into the chat, through the real binary: one message edited as the model
//! writes — at most about once a second — whose final text is the answer, sent exactly once,
//! also when an edit is rate limited; a tool call starts a new message.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::daemon::{ALICE, World};
use support::llm::Reply;
use support::telegram::Fault;
use support::{WAIT, wait_for};

fn answer() -> String {
    (1..=30)
        .map(|i| format!("Sentence number {i} of a streamed answer."))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Wait until the chat shows `text` in message `id` (an edit or the original send).
async fn wait_shown(w: &World, id: i64, text: &str) {
    let last = || {
        w.tg.edits()
            .into_iter()
            .rfind(|e| e.message_id == id)
            .map(|e| e.visible_text)
    };
    let shown = || (last().as_deref() == Some(text)).then_some(());
    let what = format!("message {id} to show the answer");
    wait_for(WAIT, &what, shown, || format!("last: {:?}", last())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_streams_into_one_message_edited_about_once_a_second() {
    let mut w = World::new("[llm]\nstreaming = true\n").await;
    w.llm
        .push(Reply::text(answer()).chunk_delay(Duration::from_millis(25)));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "tell me a lot");
    let preview = w.tg.wait_sent(1, WAIT).await.remove(0);
    assert!(
        answer().starts_with(preview.visible_text.trim_end_matches('…')),
        "{}",
        preview.visible_text
    );
    wait_shown(&w, preview.message_id, &answer()).await;
    let edits = w.tg.edits();
    assert!(
        edits.len() >= 2,
        "the text grew in place: {} edits",
        edits.len()
    );
    for pair in edits.windows(2) {
        let gap = pair[1].at.duration_since(pair[0].at);
        assert!(gap >= Duration::from_millis(900), "edits {gap:?} apart");
    }
    // Exactly one message: no second send of the final text.
    w.tg.private_text(ALICE, "Alice", "sentinel");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1].visible_text, "echo: sentinel");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_edit_is_waited_out_and_nothing_is_posted_twice() {
    let mut w = World::new("[llm]\nstreaming = true\n").await;
    w.llm
        .push(Reply::text(answer()).chunk_delay(Duration::from_millis(25)));
    w.tg.fail_next("editMessageText", Fault::RetryAfter(2));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "tell me a lot");
    let preview = w.tg.wait_sent(1, WAIT).await.remove(0);
    wait_shown(&w, preview.message_id, &answer()).await;
    let statuses: Vec<u16> =
        w.tg.calls_of("editmessagetext")
            .iter()
            .map(|c| c.status)
            .collect();
    assert!(statuses.contains(&429), "{statuses:?}");
    w.tg.private_text(ALICE, "Alice", "sentinel");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(
        sent.len(),
        2,
        "the answer was never sent as a second message"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_starts_a_new_message() {
    let mut w = World::new("[llm]\nstreaming = true\n").await;
    w.llm.push(Reply::text_and_tool_calls(
        "Let me check the time.",
        vec![("current_time", json!({}))],
    ));
    w.llm
        .push(Reply::text("It is late.").chunk_delay(Duration::from_millis(20)));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "what time is it?");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(sent[0].visible_text, "Let me check the time.");
    assert!(
        "It is late.".starts_with(sent[1].visible_text.as_str()),
        "{}",
        sent[1].visible_text
    );
    if sent[1].visible_text != "It is late." {
        wait_shown(&w, sent[1].message_id, "It is late.").await;
    }
}
