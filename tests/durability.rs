//! Nothing lost, nothing doubled: the real daemon killed (SIGKILL) or stopped (SIGTERM) at the
//! moments that matter, then restarted, with the fakes counting what reached the chat.

use crate::support;

use std::time::{Duration, Instant};

use hermes::store::Store;
use support::WAIT;
use support::daemon::{ALICE, World};
use support::llm::{Gate, Reply};
use support::telegram::{Fault, visible};

/// Wait until the daemon's database shows `n` sent replies.
async fn wait_marked_sent(w: &World, n: u64) {
    let store = Store::open(&w.home.path().join("hermes.db")).unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let stats = store.outbox_stats().await.unwrap();
        if stats.sent >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "outbox never marked {n} sent: {stats:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_storing_before_answering_answers_exactly_once_after_restart() {
    let mut w = World::new("").await;
    let hang = Gate::new();
    w.llm
        .push(Reply::text("never delivered").after(hang.clone()));
    let mut daemon = w.start().await;
    let update = w.tg.private_text(ALICE, "Alice", "remember me");
    // The model call proves the message was stored and its turn started.
    w.llm.wait_requests(1, WAIT).await;
    w.tg.wait_confirmed(update.update_id, WAIT).await;
    daemon.kill();
    assert!(w.tg.sent().is_empty());

    let _daemon = w.start().await;
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].visible_text, "echo: remember me");
    hang.open();
    w.tg.private_text(ALICE, "Alice", "sentinel");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(visible(&sent), ["echo: remember me", "echo: sentinel"]);
    // The resumed turn did not store the user's message twice.
    let last = w.llm.requests().pop().unwrap();
    let mentions = last
        .messages()
        .iter()
        .filter(|m| m["content"] == "remember me")
        .count();
    assert_eq!(mentions, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_with_the_reply_in_the_outbox_sends_it_exactly_once_after_restart() {
    let mut w = World::new("").await;
    w.tg.fail_always("sendMessage", Some(Fault::DropConnection));
    let mut daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "hold this");
    // The answer exists (a send was attempted) but never reached the chat.
    w.tg.wait_calls("sendmessage", 1, WAIT).await;
    daemon.kill();
    w.tg.fail_always("sendMessage", None);
    assert!(w.tg.sent().is_empty());

    let _daemon = w.start().await;
    w.tg.wait_sent(1, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "sentinel");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(visible(&sent), ["echo: hold this", "echo: sentinel"]);
    assert_eq!(
        w.llm.requests().len(),
        2,
        "the stored answer was sent, not asked for again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_sending_sends_nothing_again() {
    let mut w = World::new("").await;
    let mut daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "once");
    w.tg.wait_sent(1, WAIT).await;
    wait_marked_sent(&w, 1).await;
    daemon.kill();

    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "sentinel");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(visible(&sent), ["echo: once", "echo: sentinel"]);
    assert_eq!(w.llm.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_the_running_turn_finish_and_exits_cleanly() {
    let mut w = World::new("").await;
    let gate = Gate::new();
    w.llm
        .push(Reply::text("finished before exit").after(gate.clone()));
    let mut daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "long task");
    w.llm.wait_requests(1, WAIT).await;
    let opener = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        gate.open();
    });
    let status = tokio::task::spawn_blocking(move || daemon.terminate(WAIT))
        .await
        .unwrap();
    opener.await.unwrap();
    assert!(status.success(), "exit status {status:?}");
    let sent = w.tg.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].visible_text, "finished before exit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_past_the_grace_period_keeps_the_message_for_the_next_start() {
    let mut w = World::new("[gateway]\nshutdown_grace_secs = 1\n").await;
    let hang = Gate::new();
    w.llm.push(Reply::text("too late").after(hang.clone()));
    let mut daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "slow one");
    w.llm.wait_requests(1, WAIT).await;
    let status = tokio::task::spawn_blocking(move || daemon.terminate(WAIT))
        .await
        .unwrap();
    assert!(status.success(), "exit status {status:?}");
    assert!(w.tg.sent().is_empty());

    let _daemon = w.start().await;
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].visible_text, "echo: slow one");
    hang.open();
}
