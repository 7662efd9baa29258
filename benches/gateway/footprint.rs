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

/// The fakes of a daemon with every adapter but Matrix enabled (Email against the local
/// Dovecot); kept alive as long as the daemon runs.
struct Everything {
    mw: MailWorld,
    dc: FakeDiscord,
    slack: FakeSlack,
}

impl Everything {
    /// `Err` with the reason when the mail servers are not running.
    async fn new(config: &str) -> Result<Everything, String> {
        if std::fs::metadata(ENV_FILE).is_err() && std::env::var("EMAIL_TEST_ENV").is_err() {
            return Err(format!(
                "mail servers not running ({ENV_FILE} missing): run `.ci/mail-servers` as root"
            ));
        }
        let mut mw = MailWorld::new(config).await;
        let dc = FakeDiscord::start(TOKEN).await;
        let slack = FakeSlack::start().await;
        let w: &mut World = &mut mw.w;
        w.set_env("HERMES_LOG", "info");
        sut::pass_env(w);
        w.set_env("TELEGRAM_BOT_TOKEN", TOKEN);
        w.set_env("DISCORD_BOT_TOKEN", TOKEN);
        w.set_env("DISCORD_API_URL", &dc.api_url());
        w.set_env("SLACK_BOT_TOKEN", fake_slack::BOT_TOKEN);
        w.set_env("SLACK_APP_TOKEN", fake_slack::APP_TOKEN);
        w.set_env("SLACK_API_URL", &slack.api_url());
        Ok(Everything { mw, dc, slack })
    }

    /// Wait until every adapter is connected.
    async fn connected(&self, daemon: &Daemon) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let tg = !self.mw.w.tg.calls_of("getupdates").is_empty();
            let discord = self.dc.connected() && self.dc.identifies() > 0;
            let sl = self.slack.connections() > 0;
            let email = daemon.log().contains("email: IMAP connected");
            if tg && discord && sl && email {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "not every adapter connected (telegram {tg}, discord {discord}, slack {sl}, email {email})"
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Idle RSS (KiB) of hermes with Telegram, Discord, Slack and Email connected; `None` with the
/// reason when the mail servers are not running.
pub async fn idle_all_adapters(settle: Duration) -> Result<u64, String> {
    let mut e = Everything::new(sut::HERMES_CONFIG).await?;
    let daemon: Daemon = e.mw.w.spawn(&["gateway"]);
    e.connected(&daemon).await?;
    tokio::time::sleep(settle).await;
    Ok(rss_kib(daemon.pid()))
}

/// MCP servers of the startup measurement: the Python SDK's server of `tests/mcp/` and the npm
/// reference server, both over stdio (installed by `.ci/mcp-tools`).
fn mcp_servers() -> Result<String, String> {
    let py = std::path::Path::new("/opt/hermes-mcp-venv/bin/python");
    let js = std::path::Path::new(
        "/opt/hermes-mcp-npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    if !py.is_file() || !js.is_file() {
        return Err("MCP servers not installed: run `.ci/mcp-tools`".into());
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/server.py");
    Ok(format!(
        "[mcp.servers.py]\ncommand = \"{}\"\nargs = [\"{script}\"]\n\n\
         [mcp.servers.everything]\ncommand = \"node\"\nargs = [\"{}\", \"stdio\"]\n",
        py.display(),
        js.display()
    ))
}

/// Spawn to first `getUpdates` (median of `runs` fresh starts) with Telegram, Discord, Slack and
/// Email enabled and two MCP servers configured.
pub async fn startup_everything(runs: usize) -> Result<Startup, String> {
    let config = format!("{}\n{}", sut::HERMES_CONFIG, mcp_servers()?);
    let mut polls = Vec::new();
    for _ in 0..runs {
        let mut e = Everything::new(&config).await?;
        let t0 = Instant::now();
        let daemon: Daemon = e.mw.w.spawn(&["gateway"]);
        let deadline = Instant::now() + Duration::from_secs(30);
        while e.mw.w.tg.calls_of("getupdates").is_empty() {
            if Instant::now() > deadline {
                return Err("no getUpdates within 30 s".into());
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let first = e.mw.w.tg.calls_of("getupdates")[0].at;
        polls.push(first.saturating_duration_since(t0).as_secs_f64() * 1e3);
        e.connected(&daemon).await?;
        // The MCP servers came up too (their tools are offered from then on).
        let deadline = Instant::now() + Duration::from_secs(30);
        while daemon.log().matches("MCP server connected").count() < 2 {
            if Instant::now() > deadline {
                return Err(format!(
                    "the MCP servers did not connect:\n{}",
                    daemon.log()
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        drop(daemon);
    }
    Ok(Startup {
        first_poll_ms: median(polls),
        ready_ms: None,
        runs,
    })
}

/// Idle RSS (KiB) of hermes with Matrix alone, logged in to the local Synapse of `.ci/synapse`
/// (a fresh bot account) and synced; `Err` with the reason when Synapse is not running.
pub async fn idle_matrix(settle: Duration) -> Result<u64, String> {
    const SYNAPSE_ENV: &str = "/tmp/hermes-synapse/env";
    let env = std::fs::read_to_string(SYNAPSE_ENV)
        .map_err(|_| format!("Synapse not running ({SYNAPSE_ENV} missing): run `.ci/synapse`"))?;
    let url = env
        .lines()
        .find_map(|l| l.strip_prefix("MATRIX_TEST_HOMESERVER="))
        .ok_or("no homeserver in the Synapse settings")?
        .to_owned();
    let localpart = crate::support::daemon::unique("benchbot");
    let password = "secret-pw";
    let r = reqwest::Client::new()
        .post(format!("{url}/_matrix/client/v3/register"))
        .json(
            &serde_json::json!({"username": localpart, "password": password,
            "auth": {"type": "m.login.dummy"}, "inhibit_login": true}),
        )
        .send()
        .await
        .map_err(|e| format!("Synapse at {url}: {e}"))?;
    let body: serde_json::Value = r.json().await.unwrap_or_default();
    let user = body["user_id"]
        .as_str()
        .ok_or_else(|| format!("cannot register a bot on Synapse: {body}"))?
        .to_owned();
    let mut w = World::new(sut::HERMES_CONFIG).await;
    w.set_env("HERMES_LOG", "info");
    sut::pass_env(&mut w);
    w.unset_env("TELEGRAM_BOT_TOKEN");
    w.set_env("MATRIX_HOMESERVER", &url);
    w.set_env("MATRIX_USER_ID", &user);
    w.set_env("MATRIX_PASSWORD", password);
    let daemon = w.start_logging("matrix: sync connected").await;
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
    // The daemon forgets a person's rate window a minute after their message and trims the
    // heap on its next 30-second round: all of it is back 90 s after the last answer.
    let since_last = t.elapsed().as_secs_f64() - fill_secs;
    tokio::time::sleep(Duration::from_secs_f64((92.0 - since_last).max(32.0))).await;
    let evicted = rss_kib(pid);
    // `HERMES_BENCH_HOLD_SECS=N`: keep the daemon alive N seconds longer, to look inside it
    // (`/proc/<pid>/smaps`, `gdb -p <pid> -ex 'call (void)malloc_stats()'`).
    if let Some(secs) = std::env::var("HERMES_BENCH_HOLD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        eprintln!("[bench] holding the daemon (pid {pid}) for {secs} s");
        tokio::time::sleep(Duration::from_secs(secs)).await;
    }
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
