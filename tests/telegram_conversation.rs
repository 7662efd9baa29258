//! End to end through the real binary: who gets answered on Telegram, concurrency and order of
//! turns, and a tool call, against the fake Bot API and the fake LLM.

use crate::support;

use serde_json::json;
use support::WAIT;
use support::daemon::{ALICE, BOB, GROUP, MALLORY, World};
use support::llm::{Gate, Reply};
use support::telegram::visible;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_message_is_answered_in_its_chat() {
    let mut w = World::new("").await;
    let daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "hello there");
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].chat_id, ALICE);
    assert_eq!(sent[0].visible_text, "echo: hello there");
    assert_eq!(sent[0].parse_mode.as_deref(), Some("HTML"));
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-test-key"));
    assert_eq!(reqs[0].model(), Some("test-model"));
    assert!(
        reqs[0]
            .system_text()
            .unwrap()
            .contains("private chat on Telegram")
    );
    assert!(reqs[0].tool_names().contains(&"current_time".to_owned()));
    // The typing indicator was shown while the turn ran.
    assert!(
        w.tg.chat_actions()
            .iter()
            .any(|a| a.chat_id == ALICE && a.action == "typing")
    );
    // Even at debug level (the tests' setting), no secret reaches the log.
    let log = daemon.log();
    assert!(log.contains("Telegram connected"), "{log}");
    assert!(
        !log.contains(support::daemon::TOKEN),
        "bot token in the log"
    );
    assert!(!log.contains("sk-test-key"), "API key in the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_message_without_mention_gets_no_reply_and_no_llm_call() {
    let mut w = World::new("").await;
    let _daemon = w.start().await;
    w.tg.group_text(GROUP, ALICE, "Alice", "lunch at noon?");
    // Everything is routed in order, so once the mention is answered the chatter was seen.
    w.tg.group_mention(GROUP, ALICE, "Alice", "what do you think");
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].chat_id, GROUP);
    assert_eq!(sent[0].visible_text, "echo: Alice: what do you think");
    // In a group the answer replies to the message that asked.
    assert!(sent[0].reply_to.is_some());
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 1, "only the mention reaches the model");
    assert!(!reqs[0].user_texts().iter().any(|t| t.contains("lunch")));
    assert!(reqs[0].system_text().unwrap().contains("group chat"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_to_the_bot_and_commands_address_it_in_groups() {
    let mut w = World::new("").await;
    let _daemon = w.start().await;
    w.tg.group_mention(GROUP, BOB, "Bob", "first");
    let first = w.tg.wait_sent(1, WAIT).await;
    w.tg.group_reply_to_bot(GROUP, BOB, "and then?", first[0].message_id);
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert!(
        sent[1].visible_text.contains("and then?"),
        "{}",
        sent[1].visible_text
    );
    w.tg.group_command(GROUP, BOB, "/help@hermes_test_bot");
    let sent = w.tg.wait_sent(3, WAIT).await;
    assert!(
        sent[2].visible_text.contains("/new"),
        "{}",
        sent[2].visible_text
    );
    assert_eq!(
        w.llm.requests().len(),
        2,
        "/help is answered without the model"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlisted_user_gets_no_llm_call() {
    let mut w = World::new("").await;
    let _daemon = w.start().await;
    w.tg.private_text(MALLORY, "Mallory", "let me in");
    w.tg.group_mention(GROUP, MALLORY, "Mallory", "hey bot");
    w.tg.private_text(ALICE, "Alice", "sentinel");
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].chat_id, ALICE);
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].last_user_text().as_deref(), Some("sentinel"));
    assert!(w.tg.sent_to(MALLORY).is_empty() && w.tg.sent_to(GROUP).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_all_serves_unlisted_users() {
    let mut w = World::new("[gateway]\nallow_all_users = true\n").await;
    let _daemon = w.start().await;
    w.tg.private_text(MALLORY, "Mallory", "hi");
    assert_eq!(w.tg.wait_sent(1, WAIT).await[0].chat_id, MALLORY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_users_are_served_concurrently() {
    let mut w = World::new("").await;
    let gate = Gate::new();
    let g = gate.clone();
    w.llm.set_default(move |req| {
        Reply::text(format!(
            "echo: {}",
            req.last_user_text().unwrap_or_default()
        ))
        .after(g.clone())
    });
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "from alice");
    w.tg.private_text(BOB, "Bob", "from bob");
    // Both model calls are in flight at once: neither user waits for the other.
    w.llm.wait_requests(2, WAIT).await;
    assert_eq!(w.llm.in_flight(), 2);
    gate.open();
    let sent = w.tg.wait_sent(2, WAIT).await;
    let alice = sent.iter().find(|m| m.chat_id == ALICE).unwrap();
    let bob = sent.iter().find(|m| m.chat_id == BOB).unwrap();
    assert_eq!(alice.visible_text, "echo: from alice");
    assert_eq!(bob.visible_text, "echo: from bob");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_messages_are_answered_in_order_in_queue_mode() {
    let mut w = World::new("[gateway]\nbusy_mode = \"queue\"\n").await;
    let gate = Gate::new();
    w.llm.push(Reply::text("answer one").after(gate.clone()));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "one");
    w.llm.wait_requests(1, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "two");
    let third = w.tg.private_text(ALICE, "Alice", "three");
    w.tg.wait_confirmed(third.update_id, WAIT).await;
    gate.open();
    let sent = w.tg.wait_sent(3, WAIT).await;
    assert_eq!(visible(&sent), ["answer one", "echo: two", "echo: three"]);
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 3);
    // Each turn sees the earlier ones.
    assert_eq!(reqs[2].user_texts(), ["one", "two", "three"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_arriving_mid_turn_interrupt_it_and_none_is_dropped() {
    let mut w = World::new("").await;
    let (first, second) = (Gate::new(), Gate::new());
    w.llm
        .push(Reply::text("stale answer to one").after(first.clone()));
    w.llm
        .push(Reply::text("answer to everything").after(second.clone()));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "one");
    w.llm.wait_requests(1, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "two");
    let third = w.tg.private_text(ALICE, "Alice", "three");
    w.tg.wait_confirmed(third.update_id, WAIT).await;
    second.open();
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_ne!(sent[0].visible_text, "stale answer to one");
    // Whatever the interleaving, the answering turn saw all three messages, in order.
    let last = w.llm.requests().pop().unwrap();
    assert_eq!(last.user_texts(), ["one", "two", "three"]);
    first.open();
    w.tg.private_text(ALICE, "Alice", "sentinel");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(sent.len(), 2, "exactly one answer for the burst: {sent:?}");
    assert_eq!(sent[1].visible_text, "echo: sentinel");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_runs_and_the_final_answer_reaches_the_chat() {
    let mut w = World::new("").await;
    w.llm.push(Reply::tool_call(
        "current_time",
        json!({"timezone": "Asia/Tokyo"}),
    ));
    w.llm.push(Reply::text("It is **late** in Tokyo."));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "what time is it in Tokyo?");
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].visible_text, "It is late in Tokyo.");
    assert!(sent[0].text.contains("<b>late</b>"), "{}", sent[0].text);
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 2);
    let results = reqs[1].tool_results();
    assert_eq!(results.len(), 1);
    assert!(
        results[0].1.contains("time zone Asia/Tokyo"),
        "{}",
        results[0].1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_tool_call_is_reported_to_the_model_not_fatal() {
    let mut w = World::new("").await;
    w.llm.push(Reply::tool_call(
        "current_time",
        json!({"timezone": "Mars/Olympus"}),
    ));
    w.llm.push(Reply::tool_call("launch_rockets", json!({})));
    w.llm.push(Reply::text("Sorry, I could not do that."));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "time on mars?");
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].visible_text, "Sorry, I could not do that.");
    let reqs = w.llm.requests();
    assert!(
        reqs[1].tool_results()[0]
            .1
            .starts_with("error: invalid arguments: unknown time zone")
    );
    assert!(
        reqs[2].tool_results()[1]
            .1
            .contains("no tool named `launch_rockets`")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_survives_a_restart_and_new_starts_over() {
    let mut w = World::new("").await;
    let mut daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "my name is Alice");
    w.tg.wait_sent(1, WAIT).await;
    daemon.terminate(WAIT);
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "what is my name?");
    w.tg.wait_sent(2, WAIT).await;
    let reqs = w.llm.requests();
    assert_eq!(
        reqs[1].user_texts(),
        ["my name is Alice", "what is my name?"]
    );
    w.tg.private_text(ALICE, "Alice", "/new");
    let sent = w.tg.wait_sent(3, WAIT).await;
    assert!(
        sent[2].visible_text.contains("new conversation"),
        "{}",
        sent[2].visible_text
    );
    w.tg.private_text(ALICE, "Alice", "fresh start");
    w.tg.wait_sent(4, WAIT).await;
    assert_eq!(w.llm.requests()[2].user_texts(), ["fresh start"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_cancels_the_running_turn_and_the_next_message_is_answered() {
    let mut w = World::new("").await;
    let gate = Gate::new();
    w.llm
        .push(Reply::text("answer nobody wants").after(gate.clone()));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "start a long job");
    w.llm.wait_requests(1, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "/stop");
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert!(
        sent[0].visible_text.starts_with("⏹ Stopped."),
        "{}",
        sent[0].visible_text
    );
    gate.open();
    w.tg.private_text(ALICE, "Alice", "sentinel");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[1].visible_text, "echo: sentinel");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_reports_session_model_and_adapter_health() {
    let mut w = World::new("").await;
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "hi");
    w.tg.wait_sent(1, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "/status");
    let sent = w.tg.wait_sent(2, WAIT).await;
    let status = &sent[1].visible_text;
    assert!(status.contains("Session: telegram:111"), "{status}");
    assert!(status.contains("2 messages, 1 turns"), "{status}");
    assert!(status.contains("Model: test-model"), "{status}");
    assert!(status.contains("telegram: up"), "{status}");
    assert_eq!(w.llm.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_switches_per_session_and_usage_shows_tokens_and_cost() {
    let mut w = World::new(
        "[llm]\nmodels = [\"big-model\"]\n[llm.prices.\"big-model\"]\ninput = 1000.0\noutput = 2000.0\n",
    )
    .await;
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "/model");
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert!(
        sent[0].visible_text.starts_with("Model: test-model"),
        "{}",
        sent[0].visible_text
    );
    assert!(sent[0].visible_text.contains("big-model"));
    w.tg.private_text(ALICE, "Alice", "/model nonexistent");
    w.tg.private_text(ALICE, "Alice", "/model big-model");
    let sent = w.tg.wait_sent(3, WAIT).await;
    assert!(
        sent[1].visible_text.starts_with("Unknown model"),
        "{}",
        sent[1].visible_text
    );
    w.llm.push(Reply::text("big answer").with_usage(1000, 500));
    w.tg.private_text(ALICE, "Alice", "think hard");
    w.tg.wait_sent(4, WAIT).await;
    assert_eq!(w.llm.requests()[0].model(), Some("big-model"));
    w.tg.private_text(ALICE, "Alice", "/usage");
    let sent = w.tg.wait_sent(5, WAIT).await;
    let usage = &sent[4].visible_text;
    assert!(usage.contains("1 turns, 1000 tokens in"), "{usage}");
    assert!(usage.contains("500 tokens out"), "{usage}");
    assert!(
        usage.contains("Estimated cost: $2.0000 (big-model)"),
        "{usage}"
    );
}
