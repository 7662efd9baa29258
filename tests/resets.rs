//! Session resets by policy, through the real binary: after the idle period the next message
//! starts a new conversation and the user is told in one line.

use crate::support;

use hermes::store::SqliteStore;
use support::WAIT;
use support::daemon::{ALICE, World};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_starts_over_and_the_user_is_told() {
    let mut w = World::new(
        "[sessions]\nreset = \"idle\"\nidle_minutes = 60\n[sessions.by.group]\nreset = \"none\"\n",
    )
    .await;
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "remember the blue door");
    w.tg.wait_sent(1, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "still here");
    w.tg.wait_sent(2, WAIT).await;
    assert_eq!(w.llm.requests()[1].user_texts().len(), 2);

    // Two hours pass without a message.
    let store = SqliteStore::open(
        &w.home.path().join("hermes.db"),
        hermes::store::Durability::Normal,
    )
    .unwrap();
    store
        .call(|c| Ok(c.execute("UPDATE sessions SET updated_at = updated_at - 7200000", [])?))
        .await
        .unwrap();
    w.tg.private_text(ALICE, "Alice", "back again");
    let sent = w.tg.wait_sent(4, WAIT).await;
    assert!(
        sent[2]
            .visible_text
            .starts_with("↻ New conversation (the previous one was idle for over 1 hour(s))"),
        "{}",
        sent[2].visible_text
    );
    assert_eq!(sent[3].visible_text, "echo: back again");
    let last = w.llm.requests().pop().unwrap();
    let users = last.user_texts();
    assert_eq!(
        users.len(),
        1,
        "the old conversation is not in the prompt: {users:?}"
    );
}
