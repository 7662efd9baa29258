//! Plan mode through the real binary: `/plan` makes the agent plan with read-only tools and
//! show the plan with Approve / Revise / Cancel; nothing that writes runs before the approval;
//! Approve carries the plan out in the same turn, Revise plans again with the person's words,
//! Cancel ends it; a profile whose mode is `plan` plans every request.

use crate::support;

use serde_json::json;
use support::daemon::{ALICE, World};
use support::llm::Reply;
use support::{Buttons, WAIT};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_written_before_approve_and_approve_carries_the_plan_out() {
    let mut w = World::new("").await;
    // Planning: the model tries to write anyway, then proposes the plan.
    w.llm.push(Reply::tool_call(
        "write_file",
        json!({"path": "out.txt", "content": "early"}),
    ));
    w.llm.push(Reply::text(
        "1. Write out.txt with the greeting.\n2. Tell you it is done.",
    ));
    // Carrying out: the write, then the answer.
    w.llm.push(Reply::tool_call(
        "write_file",
        json!({"path": "out.txt", "content": "hello"}),
    ));
    w.llm.push(Reply::text("Done: out.txt says hello."));
    let file = w
        .workspace_of("telegram", &ALICE.to_string())
        .join("out.txt");
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "/plan write a greeting to out.txt");
    let question = w.tg.wait_sent(1, WAIT).await.remove(0);
    assert!(
        question
            .visible_text
            .contains("1. Write out.txt with the greeting."),
        "{}",
        question.visible_text
    );
    let labels: Vec<String> = question.buttons().into_iter().map(|(l, _)| l).collect();
    assert_eq!(labels, ["Approve", "Revise", "Cancel"]);
    assert!(
        !file.exists(),
        "a file was written before the plan was approved"
    );
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 2);
    assert!(
        !reqs[0].tool_names().contains(&"write_file".to_owned()),
        "{:?}",
        reqs[0].tool_names()
    );
    assert!(reqs[0].tool_names().contains(&"read_file".to_owned()));
    assert!(
        reqs[0]
            .last_user_text()
            .unwrap()
            .starts_with("write a greeting to out.txt")
    );
    assert!(reqs[0].last_user_text().unwrap().contains("[Plan mode:"));
    assert!(
        reqs[1].tool_result_texts()[0].contains("not available here"),
        "{:?}",
        reqs[1].tool_result_texts()
    );

    w.tg.callback_query(
        ALICE,
        ALICE,
        question.message_id,
        &question.button("Approve"),
    );
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(sent[1].visible_text, "Done: out.txt says hello.");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello");
    let reqs = w.llm.requests();
    assert!(reqs[2].tool_names().contains(&"write_file".to_owned()));
    let history: Vec<String> = reqs[2].messages().iter().map(|m| m.to_string()).collect();
    assert!(
        history
            .iter()
            .any(|m| m.contains("1. Write out.txt with the greeting.")),
        "the plan is in the context"
    );
    assert!(reqs[2].last_user_text().unwrap().contains("Plan approved"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revise_plans_again_with_the_persons_words_and_cancel_does_nothing() {
    let mut w = World::new("").await;
    w.llm.push(Reply::text("1. Delete the old logs."));
    w.llm.push(Reply::text("1. Archive the old logs instead."));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "/plan clean up the logs");
    let first = w.tg.wait_sent(1, WAIT).await.remove(0);
    w.tg.callback_query(ALICE, ALICE, first.message_id, &first.button("Revise"));
    let asked = w.tg.wait_sent(2, WAIT).await.remove(1);
    assert!(
        asked
            .visible_text
            .contains("What should change in the plan?"),
        "{}",
        asked.visible_text
    );
    w.tg.private_text(ALICE, "Alice", "keep them, archive instead");
    let second = w.tg.wait_sent(3, WAIT).await.remove(2);
    assert!(
        second
            .visible_text
            .contains("Archive the old logs instead."),
        "{}",
        second.visible_text
    );
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 2);
    let revised = reqs[1].last_user_text().unwrap();
    assert!(
        revised.starts_with("Revise the plan: keep them, archive instead"),
        "{revised}"
    );
    // A typed "cancel" ends it without a model call.
    w.tg.private_text(ALICE, "Alice", "cancel");
    let sent = w.tg.wait_sent(4, WAIT).await;
    assert_eq!(sent[3].visible_text, "✖ Plan cancelled; nothing was done.");
    assert_eq!(w.llm.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_profile_plans_every_request_and_a_typed_yes_approves() {
    let mut w = World::new(
        "[profiles.careful]\nmode = \"plan\"\n\n[agent]\ndefault_profile = \"careful\"\n",
    )
    .await;
    w.llm.push(Reply::text("1. Say hi."));
    w.llm.push(Reply::text("hi"));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "greet me");
    let question = w.tg.wait_sent(1, WAIT).await.remove(0);
    assert!(
        question.visible_text.contains("1. Say hi."),
        "{}",
        question.visible_text
    );
    w.tg.private_text(ALICE, "Alice", "yes");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(sent[1].visible_text, "hi");
}
