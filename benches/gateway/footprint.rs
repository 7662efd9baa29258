//! Footprint of the running daemon: time from spawn to ready (first getUpdates poll seen by the
//! fake, and `/readyz` answering 200), idle RSS with Telegram alone and with every finished
//! adapter enabled against its fake (Telegram, Discord, Slack Socket Mode, Email against the
//! local Dovecot), and RSS after many sessions and after their eviction.

use std::time::{Duration, Instant};

use crate::load::rss_kib;
use crate::support::daemon::{Daemon, TOKEN, World};
use crate::support::discord::FakeDiscord;
use crate::support::email::{ENV_FILE, MailWorld};
use crate::support::slack::{self as fake_slack, FakeSlack};
use crate::sut::{self, Running, Target};

/// Startup figures, milliseconds (median of several fresh starts).
#[derive(Debug, Default, Clone)]
pub struct Startup {
    pub first_poll_ms: f64,
    pub ready_ms: Option<f64>,
    pub runs: usize,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

async fn readyz(admin: &str) -> bool {
    match reqwest::get(format!("{admin}/readyz")).await {
        Ok(r) => r.status().is_success(),
        Err(_) => false,
    }
}

/// Spawn-to-first-poll (and, for hermes, spawn-to-`/readyz`) of `target`, fresh state each run.
pub async fn startup(target: Target, runs: usize, opts: &crate::Options) -> Startup {
    let (mut polls, mut readies) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let mut w = sut::world(Duration::ZERO).await;
        let t0 = Instant::now();
        let running = sut::start(target, &mut w, opts).await;
        // The fake records the call when it arrives; its timestamp is the first poll.
        let first = w.tg.calls_of("getupdates")[0].at;
        polls.push(first.saturating_duration_since(t0).as_secs_f64() * 1e3);
        if target == Target::Hermes {
            let admin = w.admin_url().await;
            let deadline = Instant::now() + Duration::from_secs(20);
            while !readyz(&admin).await && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            readies.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        drop(running);
    }
    Startup {
        first_poll_ms: median(polls),
        ready_ms: (!readies.is_empty()).then(|| median(readies)),
        runs,
    }
}

/// Idle RSS (KiB) of `target` with Telegram alone, after `settle`.
pub async fn idle_telegram(target: Target, settle: Duration, opts: &crate::Options) -> u64 {
    let mut w = sut::world(Duration::ZERO).await;
    let running = sut::start(target, &mut w, opts).await;
    tokio::time::sleep(settle).await;
    let pids = running.pids();
    pids.iter().map(|p| rss_kib(*p)).sum()
}

/// Idle RSS (KiB) of hermes with Telegram, Discord, Slack and Email connected; `None` with the
/// reason when the mail servers are not running.
pub async fn idle_all_adapters(settle: Duration) -> Result<u64, String> {
    if std::fs::metadata(ENV_FILE).is_err() && std::env::var("EMAIL_TEST_ENV").is_err() {
        return Err(format!(
            "mail servers not running ({ENV_FILE} missing): run `.ci/mail-servers` as root"
        ));
    }
    let mut mw = MailWorld::new(sut::HERMES_CONFIG).await;
    let w: &mut World = &mut mw.w;
    let dc = FakeDiscord::start(TOKEN).await;
    let slack = FakeSlack::start().await;
    w.set_env("HERMES_LOG", "info");
    sut::pass_env(w);
    w.set_env("TELEGRAM_BOT_TOKEN", TOKEN);
    w.set_env("DISCORD_BOT_TOKEN", TOKEN);
    w.set_env("DISCORD_API_URL", &dc.api_url());
    w.set_env("SLACK_BOT_TOKEN", fake_slack::BOT_TOKEN);
    w.set_env("SLACK_APP_TOKEN", fake_slack::APP_TOKEN);
    w.set_env("SLACK_API_URL", &slack.api_url());
    let daemon: Daemon = w.spawn(&["gateway"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let tg = !w.tg.calls_of("getupdates").is_empty();
        let discord = dc.connected() && dc.identifies() > 0;
        let sl = slack.connections() > 0;
        let email = daemon.log().contains("email: IMAP connected");
        if tg && discord && sl && email {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "not every adapter connected (telegram {tg}, discord {discord}, slack {sl}, email {email})"
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(settle).await;
    Ok(rss_kib(daemon.pid()))
}

/// RSS (KiB) of hermes: idle, peak, after `n` users sent one message each, and after their
/// sessions were evicted (lanes retire after 15 idle seconds here).
#[derive(Debug, Default, Clone)]
pub struct Sessions {
    pub n: usize,
    pub idle_kib: u64,
    pub loaded_kib: u64,
    pub evicted_kib: u64,
    pub per_session_kib: f64,
    pub answered: usize,
    pub fill_secs: f64,
}

async fn active_sessions(admin: &str) -> Option<u64> {
    let body = reqwest::get(format!("{admin}/status"))
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    v["active_sessions"].as_u64()
}

pub async fn sessions(n: usize, opts: &crate::Options) -> Sessions {
    let mut w = sut::world(Duration::ZERO).await;
    let config = sut::HERMES_CONFIG.replace(
        "busy_mode = \"queue\"\n",
        "busy_mode = \"queue\"\nsession_idle_minutes = 0.25\n",
    );
    std::fs::write(w.home.path().join("config.toml"), config).expect("config");
    w.set_env("HERMES_LOG", "warn");
    let running = sut::start(Target::Hermes, &mut w, opts).await;
    let pid = running.pids()[0];
    let admin = w.admin_url().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = rss_kib(pid);
    let t = Instant::now();
    for u in 0..n {
        w.tg.private_text(
            1_000_000 + u as i64,
            "User",
            &format!("hello from user {u}"),
        );
    }
    let deadline = Instant::now() + Duration::from_secs(600);
    while w.tg.sent_since(0).len() < n && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let fill_secs = t.elapsed().as_secs_f64();
    let answered = w.tg.sent_since(0).len();
    let loaded = rss_kib(pid);
    let deadline = Instant::now() + Duration::from_secs(120);
    while active_sessions(&admin).await.unwrap_or(0) > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // Freed memory is handed back to the system within 30 s.
    tokio::time::sleep(Duration::from_secs(32)).await;
    let evicted = rss_kib(pid);
    drop::<Running>(running);
    Sessions {
        n,
        idle_kib: idle,
        loaded_kib: loaded,
        evicted_kib: evicted,
        per_session_kib: (loaded as f64 - idle as f64) / n as f64,
        answered,
        fill_secs,
    }
}
