//! Matrix delivery guarantees through the real binary against a real Synapse: a daemon killed
//! (SIGKILL) and started again answers every message exactly once, including those sent while
//! it was down; a daemon whose homeserver restarts recovers and keeps serving; the bot stays one
//! device across restarts.
//!
//! Needs Synapse: run `.ci/synapse` first (`.ci/run` does it). The homeserver-restart test starts
//! its own private Synapse (same script, another port and data directory), so restarting it does
//! not disturb tests running in parallel.

use crate::matrix_support as matrix;
use crate::support;

use std::time::Duration;

use matrix::{MatrixWorld, Synapse};
use support::http::free_port;
use support::llm::{Gate, Reply};
use support::{LONG_WAIT, WAIT, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_daemon_neither_repeats_nor_skips_messages() {
    let mut mw = MatrixWorld::new("").await;
    let mut daemon = mw.start().await;
    let alice = mw.person(&mw.alice).await;
    let room = alice.create_dm(&mw.bot, true).await;
    alice.wait_joined(&room, &mw.bot, WAIT).await;
    alice.say(&room, "one").await;
    alice
        .wait_from(&room, &mw.bot, 1, WAIT, || mw.w.logs())
        .await;
    let device = std::fs::read_to_string(mw.w.home.path().join("matrix/session.json")).unwrap();

    daemon.kill();
    alice.say(&room, "two, while you were away").await;
    alice.say(&room, "three, still away").await;
    let _daemon = mw.start().await;
    // Both messages reach the model (the core may take them in one turn: they arrive together).
    let seen_by_model = |text: &str| {
        mw.w.llm
            .requests()
            .iter()
            .any(|r| r.messages().iter().any(|m| m.to_string().contains(text)))
    };
    let both = || {
        (seen_by_model("two, while you were away") && seen_by_model("three, still away"))
            .then_some(())
    };
    let what = "both messages sent while it was down to reach the model";
    wait_for(WAIT, what, both, || format!("logs:\n{}", mw.w.logs())).await;
    // A sentinel: once it is answered, nothing else is coming.
    alice.say(&room, "sentinel").await;
    let answered = || {
        let seen = alice.seen_from(&room, &mw.bot);
        seen.iter()
            .any(|a| a.body().contains("echo: sentinel"))
            .then_some(())
    };
    let logs = || format!("logs:\n{}", mw.w.logs());
    wait_for(WAIT, "the answer to the sentinel", answered, logs).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // One answer per answered turn, none doubled, the sentinel last. (A turn interrupted by the
    // next message made a model call but answers nothing: its messages are answered together.)
    let answers = alice.seen_from(&room, &mw.bot);
    let turns = mw.w.llm.requests().len();
    assert_eq!(answers.len(), mw.w.logged("turn answered"), "{answers:?}");
    assert!((3..=4).contains(&answers.len()), "{answers:?}");
    assert!(answers.len() <= turns, "{answers:?}");
    assert!(answers.last().unwrap().body().contains("sentinel"));
    let mut bodies: Vec<&str> = answers.iter().map(|a| a.body()).collect();
    bodies.dedup();
    assert_eq!(
        bodies.len(),
        answers.len(),
        "an answer was sent twice: {answers:?}"
    );
    // The same device (and keys) after the restart: no second login.
    let after = std::fs::read_to_string(mw.w.home.path().join("matrix/session.json")).unwrap();
    assert_eq!(device, after);
    assert_eq!(mw.w.logs().matches("matrix: new login").count(), 1);
    assert_eq!(mw.w.logs().matches("matrix: session restored").count(), 1);
    let devices = alice
        .client
        .encryption()
        .get_user_devices(&mw.bot)
        .await
        .unwrap();
    assert_eq!(devices.devices().count(), 1, "the bot made a new device");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_messages_while_down_than_one_sync_carries_all_reach_the_model() {
    // Once: a sync that came back `limited` (more than its 100 events) was logged and the
    // older events skipped. Now they are fetched back to the previous sync.
    let mut mw = MatrixWorld::new("").await;
    let mut daemon = mw.start().await;
    let alice = mw.person(&mw.alice).await;
    let room = alice.create_dm(&mw.bot, false).await;
    alice.wait_joined(&room, &mw.bot, WAIT).await;
    alice.say(&room, "before").await;
    alice
        .wait_from(&room, &mw.bot, 1, WAIT, || mw.w.logs())
        .await;
    daemon.kill();
    for i in 0..150 {
        alice.say(&room, &format!("while away {i:03}")).await;
    }
    let _daemon = mw.start().await;
    let all_seen = || {
        let seen: std::collections::HashSet<String> =
            mw.w.llm
                .requests()
                .iter()
                .flat_map(|r| r.user_texts())
                .collect();
        (0..150)
            .all(|i| {
                seen.iter()
                    .any(|t| t.contains(&format!("while away {i:03}")))
            })
            .then_some(())
    };
    wait_for(
        LONG_WAIT,
        "all 150 messages to reach the model",
        all_seen,
        || format!("logs:\n{}", mw.w.logs()),
    )
    .await;
    assert!(mw.w.logs().contains("a sync left events out; fetched them"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_storing_before_answering_answers_exactly_once_after_restart() {
    let mut mw = MatrixWorld::new("").await;
    let hang = Gate::new();
    mw.w.llm
        .push(Reply::text("never delivered").after(hang.clone()));
    let mut daemon = mw.start().await;
    let alice = mw.person(&mw.alice).await;
    let room = alice.create_dm(&mw.bot, false).await;
    alice.wait_joined(&room, &mw.bot, WAIT).await;
    alice.say(&room, "remember me").await;
    // The model call proves the message was stored and its turn started.
    mw.w.llm.wait_requests(1, WAIT).await;
    daemon.kill();
    hang.open();
    assert!(alice.seen_from(&room, &mw.bot).is_empty());

    let _daemon = mw.start().await;
    let answers = alice
        .wait_from(&room, &mw.bot, 1, WAIT, || mw.w.logs())
        .await;
    assert!(
        answers[0].body().contains("echo: remember me"),
        "{answers:?}"
    );
    alice.say(&room, "sentinel").await;
    alice
        .wait_from(&room, &mw.bot, 2, WAIT, || mw.w.logs())
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(alice.seen_from(&room, &mw.bot).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_homeserver_restart_is_survived() {
    let shared = Synapse::get();
    let data = tempfile::tempdir().unwrap();
    let port = free_port();
    let synapse = Synapse::start_private(&shared.script, data.path(), port);
    struct Stop(Synapse);
    impl Drop for Stop {
        fn drop(&mut self) {
            self.0.stop_private();
        }
    }
    let _stop = Stop(synapse.clone());
    let mut mw = MatrixWorld::on(synapse.clone(), "").await;
    let _daemon = mw.start().await;
    let alice = mw.person(&mw.alice).await;
    let room = alice.create_dm(&mw.bot, false).await;
    alice.wait_joined(&room, &mw.bot, WAIT).await;
    alice.say(&room, "before the restart").await;
    alice
        .wait_from(&room, &mw.bot, 1, WAIT, || mw.w.logs())
        .await;

    let before = mw.connected_count();
    synapse.stop_private();
    tokio::time::sleep(Duration::from_secs(2)).await;
    Synapse::start_private(&shared.script, data.path(), port);
    mw.wait_connected(before, LONG_WAIT).await;
    assert!(
        mw.w.logs().contains("matrix: sync failed"),
        "the outage went unnoticed"
    );
    alice.say(&room, "after the restart").await;
    let answers = alice
        .wait_from(&room, &mw.bot, 2, WAIT, || mw.w.logs())
        .await;
    assert!(
        answers[1].body().contains("after the restart"),
        "{answers:?}"
    );
}
