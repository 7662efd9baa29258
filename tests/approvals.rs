//! Confirmations answered from the chat, end to end through the real binary: a `system` tool at
//! level `auto` asks with buttons; Allow runs it, Deny or silence refuses it and the model is
//! told; a typed "yes" approves; another user's press does nothing; two confirmations in one
//! turn are asked one after another.

use crate::support;

use serde_json::json;
use support::daemon::{ALICE, BOB, GROUP, World};
use support::llm::{RecordedRequest, Reply};
use support::{Buttons, WAIT, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_runs_the_confirmed_call_and_the_answer_arrives() {
    let mut w = World::new("").await;
    w.llm.echo_tool_results();
    w.llm.push(Reply::tool_call(
        "terminal",
        json!({"command": "echo approved-$((40 + 2))"}),
    ));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "run the thing");
    let request = w.tg.wait_sent(1, WAIT).await.remove(0);
    assert!(
        request.visible_text.contains("Permission needed: terminal"),
        "{}",
        request.visible_text
    );
    assert!(
        request.visible_text.contains("echo approved-$((40 + 2))"),
        "the full command is shown"
    );
    let labels: Vec<String> = request.buttons().into_iter().map(|(l, _)| l).collect();
    assert_eq!(labels.len(), 4, "{labels:?}");
    w.tg.callback_query(
        ALICE,
        ALICE,
        request.message_id,
        &request.button("Allow once"),
    );
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert!(
        sent[1].visible_text.contains("approved-42"),
        "{}",
        sent[1].visible_text
    );
    // The request was updated to show the decision, and its buttons are gone.
    let marked = || {
        w.tg.edits()
            .iter()
            .any(|e| e.message_id == request.message_id && e.visible_text.contains("Allowed once"))
            .then_some(())
    };
    let edits = || format!("edits: {:?}", w.tg.edits());
    wait_for(WAIT, "the request marked allowed", marked, edits).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_refuses_the_call_and_the_model_is_told() {
    let mut w = World::new("").await;
    w.llm.echo_tool_results();
    w.llm.push(Reply::tool_call(
        "terminal",
        json!({"command": "echo should-not-run"}),
    ));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "run it");
    let request = w.tg.wait_sent(1, WAIT).await.remove(0);
    w.tg.callback_query(ALICE, ALICE, request.message_id, &request.button("Deny"));
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert!(
        sent[1].visible_text.contains("the user denied"),
        "{}",
        sent[1].visible_text
    );
    assert!(!sent[1].visible_text.contains("should-not-run\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_answer_in_time_is_a_denial() {
    let mut w = World::new("[policy]\napproval_timeout_secs = 1\n").await;
    w.llm.echo_tool_results();
    w.llm.push(Reply::tool_call(
        "terminal",
        json!({"command": "echo too-late"}),
    ));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "run it");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert!(
        sent[0].visible_text.contains("within 1 s"),
        "{}",
        sent[0].visible_text
    );
    assert!(
        sent[1].visible_text.contains("did not confirm"),
        "{}",
        sent[1].visible_text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_yes_approves() {
    let mut w = World::new("").await;
    w.llm.echo_tool_results();
    w.llm.push(Reply::tool_call(
        "terminal",
        json!({"command": "echo by-reply"}),
    ));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "run it");
    w.tg.wait_sent(1, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "yes");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert!(
        sent[1].visible_text.contains("by-reply"),
        "{}",
        sent[1].visible_text
    );
    assert_eq!(
        w.llm.requests().len(),
        2,
        "the yes went to the waiting turn, not to the model"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_press_does_nothing() {
    let mut w = World::new("[policy]\napproval_timeout_secs = 3\n").await;
    w.llm.echo_tool_results();
    w.llm.push(Reply::tool_call(
        "terminal",
        json!({"command": "echo bobs-wish"}),
    ));
    let _daemon = w.start().await;
    w.tg.group_mention(GROUP, ALICE, "Alice", "run it");
    let request = w.tg.wait_sent(1, WAIT).await.remove(0);
    let press = w.tg.callback_query(
        BOB,
        GROUP,
        request.message_id,
        &request.button("Allow once"),
    );
    assert!(press.callback_query_id.is_some());
    // Bob may talk to the bot, but only Alice can approve Alice's request: it times out.
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert!(
        sent[1].visible_text.contains("did not confirm"),
        "{}",
        sent[1].visible_text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_confirmations_in_one_turn_are_asked_one_after_another() {
    let mut w = World::new("").await;
    w.llm.push(Reply::tool_calls(vec![
        ("terminal", json!({"command": "echo first"})),
        ("terminal", json!({"command": "echo second"})),
    ]));
    w.llm.set_default(|req: &RecordedRequest| {
        let all = req.tool_result_texts();
        Reply::text(format!("results: {}", all.join(" | ")))
    });
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "run both");
    let first = w.tg.wait_sent(1, WAIT).await.remove(0);
    assert!(first.visible_text.contains("echo first"));
    w.tg.callback_query(ALICE, ALICE, first.message_id, &first.button("Allow once"));
    let second = w.tg.wait_sent(2, WAIT).await.remove(1);
    assert!(
        second.visible_text.contains("echo second"),
        "{}",
        second.visible_text
    );
    w.tg.callback_query(ALICE, ALICE, second.message_id, &second.button("Deny"));
    let answer = w.tg.wait_sent(3, WAIT).await.remove(2);
    assert!(
        answer.visible_text.contains("first"),
        "{}",
        answer.visible_text
    );
    assert!(
        answer.visible_text.contains("denied"),
        "{}",
        answer.visible_text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_for_the_session_stops_asking_and_safe_asks_for_everything() {
    let mut w = World::new("").await;
    w.llm.echo_tool_results();
    w.llm
        .push(Reply::tool_call("terminal", json!({"command": "echo one"})));
    w.llm.push(Reply::text("first done"));
    w.llm
        .push(Reply::tool_call("terminal", json!({"command": "echo two"})));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "first");
    let request = w.tg.wait_sent(1, WAIT).await.remove(0);
    w.tg.callback_query(ALICE, ALICE, request.message_id, &request.button("session"));
    w.tg.wait_sent(2, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "second");
    let sent = w.tg.wait_sent(3, WAIT).await;
    assert!(
        sent[2].visible_text.contains("tool said: exit code: 0"),
        "ran without asking: {}",
        sent[2].visible_text
    );

    w.tg.private_text(ALICE, "Alice", "/permissions safe");
    let sent = w.tg.wait_sent(4, WAIT).await;
    assert!(
        sent[3].visible_text.contains("Level: safe"),
        "{}",
        sent[3].visible_text
    );
    w.llm.push(Reply::tool_call("current_time", json!({})));
    w.tg.private_text(ALICE, "Alice", "what time is it?");
    let sent = w.tg.wait_sent(5, WAIT).await;
    assert!(
        sent[4]
            .visible_text
            .contains("Permission needed: current_time"),
        "{}",
        sent[4].visible_text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_command_is_shown_in_full_with_the_buttons_under_the_last_part() {
    let mut w = World::new("").await;
    w.llm.echo_tool_results();
    let long = format!("echo {}done", "word ".repeat(1200));
    w.llm
        .push(Reply::tool_call("terminal", json!({"command": long})));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "run the long one");
    let parts = w.tg.wait_sent(2, WAIT).await;
    assert!(parts[0].buttons().is_empty());
    let shown: String = parts.iter().map(|m| m.visible_text.as_str()).collect();
    assert_eq!(
        shown.matches("word").count(),
        1200,
        "nothing of the command is cut"
    );
    w.tg.callback_query(
        ALICE,
        ALICE,
        parts[1].message_id,
        &parts[1].button("Allow once"),
    );
    let sent = w.tg.wait_sent(3, WAIT).await;
    assert!(
        sent[2].visible_text.contains("word word"),
        "{}",
        sent[2].visible_text
    );
}
