//! Trust boundaries through the real binary: operators and users, a panicking lane, an
//! unreadable inbox row, one person's flood beside another's single message.

use crate::support;

use std::time::{Duration, Instant};

use hermes::store::SqliteStore;
use support::daemon::{ALICE, BOB, World};
use support::llm::Reply;
use support::{LONG_WAIT, WAIT, wait_for};

/// Alice runs this bot; Bob is a user.
const ALICE_OPERATES: &str = "[access]\noperators = [\"telegram:111\"]\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_full_access_is_refused_while_an_operators_works() {
    let mut w = World::new(ALICE_OPERATES).await;
    let _daemon = w.start().await;
    let steps: [(i64, &str, &[&str]); 6] = [
        (BOB, "/permissions full-access", &["Only an operator"]),
        (BOB, "/whoami", &["user", "level: auto"]),
        // Within the ceiling a user still chooses.
        (BOB, "/permissions safe", &["Level: safe"]),
        (ALICE, "/permissions full-access", &["Level: full-access"]),
        (ALICE, "/whoami", &["operator", "full-access"]),
        (BOB, "/sethome", &["Only an operator"]),
    ];
    for (n, (who, text, expected)) in steps.into_iter().enumerate() {
        let name = if who == ALICE { "Alice" } else { "Bob" };
        w.tg.private_text(who, name, text);
        let answer = w.tg.wait_sent(n + 1, WAIT).await.remove(n).visible_text;
        for e in expected {
            assert!(answer.contains(e), "{name} {text}: {answer}");
        }
    }
    assert!(w.llm.requests().is_empty(), "commands call no model");
}

#[cfg(feature = "failpoints")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lane_that_panics_answers_the_next_message() {
    let mut w = World::new("").await;
    // The first turn panics inside the lane; nothing else does.
    w.set_env("FAILPOINTS", "lane-turn=1*panic(injected)");
    w.llm
        .set_default(|r| Reply::text(format!("echo: {}", r.last_user_text().unwrap_or_default())));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "first");
    let apology = w.tg.wait_sent(1, WAIT).await.remove(0);
    assert!(
        apology.visible_text.contains("something went wrong"),
        "{}",
        apology.visible_text
    );
    w.tg.private_text(ALICE, "Alice", "second");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(sent[1].visible_text, "echo: second");
    assert_eq!(
        w.llm.requests().len(),
        1,
        "the panicked turn is not retried"
    );
    assert!(w.logs().contains("the session lane panicked"));
    assert!(w.logs().contains("injected"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_inbox_row_does_not_stop_the_message_behind_it() {
    let mut w = World::new("").await;
    w.llm
        .set_default(|r| Reply::text(format!("echo: {}", r.last_user_text().unwrap_or_default())));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "hello");
    w.tg.wait_sent(1, WAIT).await;
    // A row no hermes can read (a corrupt payload, or one a newer version wrote).
    let store = SqliteStore::open(
        &w.home.path().join("hermes.db"),
        hermes::store::Durability::Normal,
    )
    .unwrap();
    store
        .call(|c| {
            c.execute(
                "INSERT INTO inbox (platform, chat_id, message_id, payload, received_at)
                 VALUES ('telegram', '111', 'corrupt', '{\"from\": \"the future\"}', 0)",
                [],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    w.tg.private_text(ALICE, "Alice", "after the bad one");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(sent[1].visible_text, "echo: after the bad one");
    let (status, out, err) = w.run(&["status"]);
    assert!(status.success(), "{out}{err}");
    assert!(out.contains("poisoned:  1"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_persons_flood_neither_delays_another_nor_loses_a_message() {
    let mut w = World::new("").await;
    w.llm.set_default(|r| {
        Reply::text(format!("echo: {}", r.last_user_text().unwrap_or_default()))
            .delayed(Duration::from_millis(40))
    });
    let _daemon = w.start().await;
    let started = Instant::now();
    for i in 0..200 {
        w.tg.private_text(BOB, "Bob", &format!("flood {i}"));
        if i == 100 {
            w.tg.private_text(ALICE, "Alice", "just one question");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let alice_answered = || {
        w.tg.sent_to(ALICE)
            .iter()
            .any(|m| m.visible_text == "echo: just one question")
            .then(Instant::now)
    };
    let at = wait_for(WAIT, "Alice's answer", alice_answered, || {
        format!("sent: {:?}", w.tg.sent().len())
    })
    .await;
    // Bob is told once to slow down; every one of his messages is answered or waiting, none
    // dropped: the last one reaches the model.
    let bob_last = || {
        w.llm
            .requests()
            .iter()
            .any(|r| r.last_user_text().is_some_and(|t| t.contains("flood 199")))
            .then_some(())
    };
    wait_for(
        LONG_WAIT,
        "Bob's last message to reach the model",
        bob_last,
        || w.logs(),
    )
    .await;
    let bob_done = Instant::now();
    assert!(
        at < bob_done,
        "Alice's answer came before Bob's flood was through ({:?} vs {:?} after the start)",
        at - started,
        bob_done - started
    );
    let slow =
        w.tg.sent_to(BOB)
            .iter()
            .filter(|m| m.visible_text.contains("writing faster than I can answer"))
            .count();
    assert_eq!(slow, 1, "told once this minute");
    // Every flood message was stored, none ignored, and all are answered in the end.
    let store = SqliteStore::open(
        &w.home.path().join("hermes.db"),
        hermes::store::Durability::Normal,
    )
    .unwrap();
    let counts = || async {
        store
            .call(|c| {
                Ok(c.query_row(
                    "SELECT COUNT(*), SUM(status IN ('new', 'queued')), SUM(status = 'ignored')
                     FROM inbox",
                    [],
                    |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, i64>(1)?,
                            r.get::<_, i64>(2)?,
                        ))
                    },
                )?)
            })
            .await
            .unwrap()
    };
    let deadline = Instant::now() + LONG_WAIT;
    let (total, open, ignored) = loop {
        let (total, open, ignored) = counts().await;
        if open == 0 || Instant::now() > deadline {
            break (total, open, ignored);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(total, 201, "all 201 messages stored");
    assert_eq!(ignored, 0, "none dropped");
    assert_eq!(open, 0, "all answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminal_reads_neither_the_daemons_environment_nor_its_state() {
    // Reading the daemon's /proc entries asks for approval; at full access (an operator's
    // choice) it runs straight away, and still finds nothing. On the host, not in bubblewrap
    // (tests/sandbox.rs): the fence and the daemon's own guard are what is tested here.
    let mut w = World::new(&format!(
        "{ALICE_OPERATES}\n[tools.sandbox]\nbackend = \"none\"\n"
    ))
    .await;
    w.llm.echo_tool_results();
    let home = w.home.path().display().to_string();
    let command = format!(
        "tr '\\0' '\\n' < /proc/$PPID/environ; head -c 16 {home}/hermes.db; \
         echo done"
    );
    w.llm.push(Reply::tool_call(
        "terminal",
        serde_json::json!({ "command": command }),
    ));
    let _daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "/permissions full-access");
    w.tg.wait_sent(1, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "look around");
    // What the command printed, as the model received it (before any scrubbing of replies).
    let seen = w.llm.tool_output_seen_by(2, WAIT).await;
    // Tool output is scrubbed of registered secrets, so a leak would read `NAME=***`: every
    // credential variable the command could see must be empty.
    for name in ["TELEGRAM_BOT_TOKEN", "OPENAI_API_KEY"] {
        for line in seen.lines().filter(|l| l.starts_with(&format!("{name}="))) {
            assert_eq!(
                line,
                format!("{name}="),
                "{name} reached the terminal:\n{seen}"
            );
        }
    }
    assert!(seen.contains("done"), "the command ran:\n{seen}");
    assert!(!seen.contains(support::daemon::TOKEN), "{seen}");
    assert!(
        !seen.contains("SQLite format"),
        "the database was read:\n{seen}"
    );
    if hermes::tools::terminal::fence_active() {
        assert!(seen.contains("Permission denied"), "{seen}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_loris_on_the_events_listener_is_cut_off_while_telegram_keeps_answering() {
    use support::slack::{Mode, SlackWorld};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut sw = SlackWorld::new("", Mode::Events).await;
    sw.w.set_env("TELEGRAM_BOT_TOKEN", support::daemon::TOKEN);
    let _daemon = sw.start().await;
    // More connections than the listener takes (64), each sending half a request head.
    let mut slow = Vec::new();
    for _ in 0..80 {
        let mut s = tokio::net::TcpStream::connect(&sw.listen).await.unwrap();
        let _ = s
            .write_all(b"POST /slack/events HTTP/1.1\r\nHost: x\r\n")
            .await;
        slow.push(s);
    }
    let began = Instant::now();
    sw.w.tg.private_text(ALICE, "Alice", "still there?");
    let reply = sw.w.tg.wait_sent(1, WAIT).await.remove(0);
    assert_eq!(reply.visible_text, "echo: still there?");
    // Every slow connection is closed: the ones over the cap at once, the others when their
    // head is late (10 s).
    for s in &mut slow {
        let mut buf = [0u8; 64];
        match tokio::time::timeout(Duration::from_secs(20), s.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => {}
            Ok(Ok(n)) => {
                // A 408 or 400 before closing is fine too; then it must close.
                let rest = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await;
                assert!(
                    matches!(rest, Ok(Ok(0) | Err(_))),
                    "answered {n} bytes and stayed open"
                );
            }
            Err(_) => panic!("a slow connection was still open after 20 s"),
        }
    }
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
    // The listener serves again: a signed event is stored and answered.
    let (event, _) = sw.slack.dm_event(support::slack::ALICE, "after the flood");
    let (status, body, _) = sw.events().post_json(&event, None).await;
    assert_eq!(status, 200, "{body}");
    let posted = sw.slack.wait_posted(1, WAIT).await;
    assert_eq!(posted[0].text, "echo: after the flood");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_cannot_post_to_a_chat_its_owner_cannot_write_to() {
    use hermes::store::CronStore;
    let mut w = World::new(ALICE_OPERATES).await;
    // Bob, a user, asks for a job posting into Alice's chat, and for one in his own chat.
    w.llm.push(Reply::tool_calls(vec![
        (
            "cronjob",
            serde_json::json!({"action": "create", "schedule": "every 1h", "prompt": "spam",
                "deliver": [format!("telegram:{ALICE}")]}),
        ),
        (
            "cronjob",
            serde_json::json!({"action": "create", "schedule": "5s", "prompt": "say hi", "name": "hi"}),
        ),
    ]));
    w.llm.push(Reply::text("Done."));
    w.llm.set_default(|_| Reply::text("hi from the job"));
    let _daemon = w.start().await;
    w.tg.private_text(BOB, "Bob", "schedule things");
    w.tg.wait_sent(1, WAIT).await;
    let results = w.llm.requests()[1].tool_result_texts();
    assert!(
        results[0].contains("a job of yours delivers only to this chat"),
        "{results:?}"
    );
    assert!(results[1].starts_with("Created"), "{results:?}");
    // His own job is then pointed at Alice's chat behind the tool's back (a row from an older
    // version, an edited database): the run still does not post there.
    let store = SqliteStore::open(
        &w.home.path().join("hermes.db"),
        hermes::store::Durability::Normal,
    )
    .unwrap();
    let target = serde_json::json!([format!("telegram:{ALICE}")]).to_string();
    let changed = store
        .call(move |c| {
            Ok(c.execute(
                "UPDATE cron_jobs SET deliver = ?1 WHERE name = 'hi'",
                [target],
            )?)
        })
        .await
        .unwrap();
    assert_eq!(changed, 1);
    assert_eq!(
        store.cron_list(None).await.unwrap().len(),
        1,
        "the job aimed at Alice's chat was not created"
    );
    let deadline = Instant::now() + LONG_WAIT;
    let run = loop {
        let runs = store.cron_runs(1, 5).await.unwrap();
        if let Some(run) = runs.into_iter().find(|r| r.finished_at.is_some()) {
            break run;
        }
        assert!(Instant::now() < deadline, "the job never ran");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let output = run.output.unwrap_or_default();
    assert!(
        output.contains("delivers only to the chat it was made in"),
        "{output}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        w.tg.sent().iter().all(|m| m.chat_id != ALICE),
        "nothing reached Alice: {:?}",
        w.tg.sent()
    );
}
