//! Bad input, black-box: invalid UTF-8 on the wire, a 10 MB message, a tool that prints
//! 100,000 lines. No crash, a clear log line, and other conversations carry on.

use crate::support;

use support::daemon::{ALICE, BOB, World};
use support::llm::Reply;
use support::telegram::INVALID_UTF8;
use support::{LONG_WAIT, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_from_the_platform_blocks_nothing() {
    let mut w = World::new("").await;
    let mut daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", &format!("broken {INVALID_UTF8} bytes"));
    w.tg.private_text(BOB, "Bob", "fine");
    let bob_answered = || (!w.tg.sent_to(BOB).is_empty()).then_some(());
    wait_for(LONG_WAIT, "Bob's answer", bob_answered, || daemon.log()).await;
    assert_eq!(w.tg.sent_to(BOB)[0].visible_text, "echo: fine");
    // Alice's message arrives with the broken bytes replaced, or is skipped with a log line
    // (her turn runs beside Bob's: wait for one or the other).
    let alice_done = || {
        (!w.tg.sent_to(ALICE).is_empty() || daemon.log().contains("cannot be parsed")).then_some(())
    };
    wait_for(LONG_WAIT, "Alice's answer or the skip", alice_done, || {
        daemon.log()
    })
    .await;
    let alice = w.tg.sent_to(ALICE);
    assert!(
        alice.iter().all(|m| m.visible_text.contains('\u{FFFD}'))
            && (!alice.is_empty() || daemon.log().contains("cannot be parsed")),
        "{alice:?}\n{}",
        daemon.log()
    );
    w.tg.private_text(ALICE, "Alice", "after");
    let after = || {
        let alice = w.tg.sent_to(ALICE);
        alice
            .iter()
            .any(|m| m.visible_text == "echo: after")
            .then_some(())
    };
    wait_for(LONG_WAIT, "the answer to `after`", after, || daemon.log()).await;
    assert!(daemon.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_megabyte_message_is_cut_and_answered_and_others_carry_on() {
    let mut w = World::new("").await;
    let mut daemon = w.start().await;
    let huge = "word ".repeat(2 * 1024 * 1024);
    w.tg.private_text(ALICE, "Alice", &huge);
    w.tg.private_text(BOB, "Bob", "small");
    let both = || (!w.tg.sent_to(BOB).is_empty() && !w.tg.sent_to(ALICE).is_empty()).then_some(());
    wait_for(LONG_WAIT, "answers to Alice and Bob", both, || daemon.log()).await;
    let asked = w
        .llm
        .requests()
        .into_iter()
        .filter_map(|r| r.last_user_text())
        .find(|t| t.starts_with("word"))
        .expect("Alice's turn reached the model");
    assert!(
        asked.len() < 40_000,
        "{} bytes sent to the model",
        asked.len()
    );
    assert!(
        asked.contains("[message cut:"),
        "the model is told it was cut"
    );
    assert!(daemon.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_lines_of_tool_output_reach_the_model_capped() {
    let mut w = World::new("[policy.platforms]\ntelegram = \"full-access\"\n").await;
    w.llm.push(Reply::tool_call(
        "terminal",
        serde_json::json!({"command": "seq 1 100000"}),
    ));
    w.llm.push(Reply::text("counted"));
    let mut daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "count for me");
    let sent = w.tg.wait_sent(1, LONG_WAIT).await;
    assert_eq!(sent[0].visible_text, "counted");
    let results = w.llm.requests()[1].tool_results();
    let (_, output) = &results[0];
    assert!(
        output.len() < 80_000,
        "{} bytes of tool output",
        output.len()
    );
    assert!(
        output.contains("\n2\n") && output.contains("100000"),
        "head and tail kept"
    );
    assert!(daemon.is_running());
}
