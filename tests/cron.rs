//! Scheduled jobs. In process, with a clock moved by hand: a job created through the tool in a
//! Telegram chat delivers at its time and not before; `[SILENT]` output is not delivered; bad
//! schedules are refused. Through the real binary: a run whose output was stored before a kill
//! is delivered exactly once after restart, and missed runs follow the grace policy.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use hermes::agent::Agent;
use hermes::config::{Config, Secret};
use hermes::cron::{CronControl, ManualClock};
use hermes::gateway::Gateway;
use hermes::llm::OpenAiProvider;
use hermes::store::{CronStore, Store};
use hermes_telegram::{TelegramAdapter, TelegramSettings};
use serde_json::json;
use support::WAIT;
use support::daemon::{ALICE, TOKEN, World};
use support::llm::{FakeLlm, RecordedRequest, Reply};
use support::telegram::{FakeTelegram, Fault};
use tokio_util::sync::CancellationToken;

const MINUTE: i64 = 60_000;

fn scheduled(req: &RecordedRequest) -> bool {
    req.system_text()
        .is_some_and(|s| s.contains("This is a scheduled job"))
}

struct InProcess {
    tg: FakeTelegram,
    llm: FakeLlm,
    clock: Arc<ManualClock>,
    control: CronControl,
    store: Store,
    shutdown: CancellationToken,
    _home: tempfile::TempDir,
}

async fn in_process() -> InProcess {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let tg = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    let home = tempfile::tempdir().unwrap();
    let mut config = Config {
        home: home.path().to_owned(),
        ..Default::default()
    };
    config.llm.base_url = llm.base_url();
    config.llm.api_key = Secret::new("sk-test");
    config.telegram.allowed_users = vec![ALICE.to_string()];
    // Alice runs this bot: her jobs may post to the home channel she sets.
    config.access.operators = vec![format!("telegram:{ALICE}")];
    config.agent.timezone = Some("Europe/Berlin".into());
    let clock = Arc::new(ManualClock::new(
        "2026-11-29T10:00:00Z"
            .parse::<jiff::Timestamp>()
            .unwrap()
            .as_millisecond(),
    ));
    let control = CronControl {
        clock: clock.clone(),
        wake: Default::default(),
    };
    let store = Store::open_in_memory().unwrap();
    let provider = Arc::new(
        OpenAiProvider::new(&hermes::llm::ProviderSettings::from_config(&config.llm)).unwrap(),
    );
    let agent = Agent::with_cron(&config, provider, store.clone(), control.clone()).unwrap();
    let adapter = Arc::new(TelegramAdapter::new(TelegramSettings {
        token: TOKEN.into(),
        api_url: tg.api_url().parse().unwrap(),
        poll_timeout_secs: 1,
        webhook: None,
    }));
    let gateway = Gateway::new(config, store.clone(), agent, vec![adapter]);
    let shutdown = CancellationToken::new();
    tokio::spawn(gateway.run(shutdown.clone()));
    tg.wait_calls("getupdates", 1, WAIT).await;
    InProcess {
        tg,
        llm,
        clock,
        control,
        store,
        shutdown,
        _home: home,
    }
}

impl InProcess {
    /// Move the clock and let the scheduler look.
    async fn advance(&self, ms: i64) {
        self.clock.advance(ms);
        self.control.wake.notify_one();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_made_in_chat_delivers_there_at_its_time_and_silent_runs_stay_quiet() {
    let p = in_process().await;
    p.llm.push(Reply::tool_calls(vec![
        ("cronjob", json!({"action": "create", "schedule": "30m", "prompt": "Remind Alice to stretch.", "name": "stretch"})),
        ("cronjob", json!({"action": "create", "schedule": "every 1h", "prompt": "Check the news; only report big events.", "name": "news"})),
        ("cronjob", json!({"action": "create", "schedule": "soon", "prompt": "x"})),
    ]));
    p.llm.push(Reply::text("Done: I'll remind you."));
    p.llm.set_default(|req| {
        let text = req.last_user_text().unwrap_or_default();
        if text.contains("stretch") {
            Reply::text("Time to stretch!")
        } else {
            Reply::text("Nothing new. [SILENT]")
        }
    });
    p.tg.private_text(
        ALICE,
        "Alice",
        "remind me in 30 minutes to stretch, and watch the news hourly",
    );
    p.tg.wait_sent(1, WAIT).await;
    let results: Vec<String> = p.llm.requests()[1].tool_result_texts();
    assert!(results[0].starts_with("Created"), "{results:?}");
    assert!(
        results[2].starts_with("error: invalid arguments: invalid schedule `soon`"),
        "{results:?}"
    );

    p.advance(29 * MINUTE).await;
    assert!(
        !p.llm.requests().iter().any(scheduled),
        "nothing runs before its time"
    );
    p.advance(2 * MINUTE).await;
    let sent = p.tg.wait_sent(2, WAIT).await;
    assert_eq!(sent[1].chat_id, ALICE);
    assert!(
        sent[1].visible_text.starts_with("⏰ stretch"),
        "{}",
        sent[1].visible_text
    );
    assert!(sent[1].visible_text.ends_with("Time to stretch!"));

    // The hourly job answered [SILENT]: stored, not delivered.
    p.advance(30 * MINUTE).await;
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let runs = p.store.cron_runs(2, 5).await.unwrap();
        if runs.first().is_some_and(|r| r.status == "silent") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the hourly job never ran: {runs:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(p.tg.sent().len(), 2, "silent output is not delivered");
    // The one-off job is done; the hourly one is scheduled an hour later.
    let jobs = p.store.cron_list(None).await.unwrap();
    assert_eq!(jobs[0].next_run_at, None);
    assert_eq!(jobs[1].next_run_at, Some(jobs[1].anchor_at + 120 * MINUTE));
    p.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sethome_makes_a_chat_the_platform_target() {
    let p = in_process().await;
    p.tg.private_text(ALICE, "Alice", "/sethome");
    let sent = p.tg.wait_sent(1, WAIT).await;
    assert!(
        sent[0].visible_text.contains("home channel"),
        "{}",
        sent[0].visible_text
    );
    p.llm.push(Reply::tool_call(
        "cronjob",
        json!({"action": "create", "schedule": "10m", "prompt": "Say hi", "deliver": ["telegram", "local"]}),
    ));
    p.llm.push(Reply::text("ok"));
    p.llm.set_default(|_| Reply::text("hi from the schedule"));
    p.tg.private_text(ALICE, "Alice", "schedule a hello");
    p.tg.wait_sent(2, WAIT).await;
    p.advance(11 * MINUTE).await;
    let sent = p.tg.wait_sent(3, WAIT).await;
    assert!(sent[2].visible_text.ends_with("hi from the schedule"));
    p.shutdown.cancel();
}

/// Create a job through the CLI of the daemon's home, due `secs_from_now`.
fn add_job(w: &World, schedule: &str) {
    let (status, out, err) = w.run(&[
        "cron",
        "add",
        "--schedule",
        schedule,
        "--prompt",
        "Say the word BANANA",
        "--name",
        "fruit",
        "--deliver",
        &format!("telegram:{ALICE}"),
    ]);
    assert!(status.success(), "{out}{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_run_is_delivered_exactly_once_after_a_kill() {
    let mut w = World::new("").await;
    w.llm.set_default(|_| Reply::text("BANANA"));
    w.tg.fail_always("sendMessage", Some(Fault::DropConnection));
    let mut daemon = w.start().await;
    add_job(&w, "2s");
    // The run happened and its output is stored: a send of it was attempted.
    w.tg.wait_calls("sendmessage", 1, WAIT).await;
    daemon.kill();
    w.tg.fail_always("sendMessage", None);
    let _daemon = w.start().await;
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert!(
        sent[0].visible_text.ends_with("BANANA"),
        "{}",
        sent[0].visible_text
    );
    w.tg.private_text(ALICE, "Alice", "sentinel");
    let sent = w.tg.wait_sent(2, WAIT).await;
    assert_eq!(sent.len(), 2, "delivered once: {sent:?}");
    let runs = w.llm.requests().iter().filter(|r| scheduled(r)).count();
    assert_eq!(runs, 1, "the run was not repeated");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missed_runs_follow_the_grace_policy() {
    let mut w = World::new("[cron]\nmissed_grace_secs = 3600\n").await;
    w.llm.set_default(|_| Reply::text("BANANA"));
    add_job(&w, "every 1h");
    add_job(&w, "every 1h");
    // Job 1 was due 30 minutes ago (within grace), job 2 five hours ago (beyond).
    let store = hermes::store::SqliteStore::open(
        &w.home.path().join("hermes.db"),
        hermes::store::Durability::Normal,
    )
    .unwrap();
    let now = hermes_adapter::now_millis();
    store
        .call(move |c| {
            c.execute(
                "UPDATE cron_jobs SET next_run_at = ?1 WHERE id = 1",
                [now - 30 * MINUTE],
            )?;
            c.execute(
                "UPDATE cron_jobs SET next_run_at = ?1 WHERE id = 2",
                [now - 300 * MINUTE],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let _daemon = w.start().await;
    w.tg.wait_sent(1, WAIT).await;
    let deadline = std::time::Instant::now() + WAIT;
    let (late, missed) = loop {
        let late = store.cron_runs(1, 5).await.unwrap();
        let missed = store.cron_runs(2, 5).await.unwrap();
        if late.first().is_some_and(|r| r.status == "ok") && !missed.is_empty() {
            break (late, missed);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "runs: {late:?} {missed:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(late.len(), 1);
    assert_eq!(missed[0].status, "skipped");
    assert!(
        missed[0]
            .output
            .as_deref()
            .unwrap_or_default()
            .contains("missed")
    );
    assert_eq!(
        w.tg.sent().len(),
        1,
        "only the run within the grace window was delivered"
    );
    let next = store
        .cron_get(2)
        .await
        .unwrap()
        .unwrap()
        .next_run_at
        .unwrap();
    assert!(next > now, "the skipped job moved on to its next time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_refuses_bad_schedules_and_targets_clearly() {
    let w = World::new("").await;
    let (status, _, err) = w.run(&["cron", "add", "--schedule", "every 5s", "--prompt", "x"]);
    assert!(!status.success());
    assert!(
        err.contains("invalid schedule `every 5s`: repeating jobs must be at least 1 minute apart"),
        "{err}"
    );
    let (status, _, err) = w.run(&["cron", "add", "--schedule", "0 8 * * 9", "--prompt", "x"]);
    assert!(!status.success());
    assert!(err.contains("weekday 9 is outside 0-7"), "{err}");
    let (status, _, err) = w.run(&[
        "cron",
        "add",
        "--schedule",
        "1h",
        "--prompt",
        "x",
        "--deliver",
        "icq",
    ]);
    assert!(!status.success());
    assert!(err.contains("`icq` is not a delivery target"), "{err}");
    let (status, out, _) = w.run(&["cron", "list"]);
    assert!(status.success());
    assert_eq!(out, "No scheduled jobs.\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_skill_curation_job_exists_when_configured() {
    let mut w = World::new("[cron]\nskill_curation = \"0 3 * * 0\"\n").await;
    let daemon = w.start().await;
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let (_, out, _) = w.run(&["cron", "list"]);
        if out.contains("skill-curation — `0 3 * * 0`") {
            assert!(out.contains("to local"), "{out}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no curation job: {out}\n{}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
