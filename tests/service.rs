//! The daemon as a service, black-box: the admin endpoint (health, readiness, metrics, status),
//! `hermes status`, the systemd notify protocol with its watchdog, SIGHUP reloads (good and
//! broken files), JSON logs, and the systemd units (verified by `systemd-analyze`).

use crate::support;

use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};

use support::daemon::{ALICE, MALLORY, World};
use support::{LONG_WAIT, WAIT};

async fn get(url: &str) -> (u16, String) {
    let r = reqwest::get(url).await.expect("admin endpoint answers");
    (r.status().as_u16(), r.text().await.unwrap_or_default())
}

/// The value of the first sample line starting with `series` (name plus labels).
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_endpoint_reports_health_readiness_metrics_and_status() {
    let mut w = World::new("").await;
    let daemon = w.start().await;
    let admin = w.admin_url().await;
    assert_eq!(get(&format!("{admin}/healthz")).await, (200, "ok\n".into()));
    let (code, body) = get(&format!("{admin}/readyz")).await;
    assert_eq!(code, 200, "{body}");
    // A page reaching it by DNS rebinding names its own host: refused without a token.
    let rebound = reqwest::Client::new()
        .get(format!("{admin}/status"))
        .header("host", "rebind.example:8790")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status().as_u16(), 403);
    assert!(body.contains("telegram: ready"), "{body}");

    w.tg.private_text(ALICE, "Alice", "hello");
    w.tg.wait_sent(1, WAIT).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (code, metrics) = get(&format!("{admin}/metrics")).await;
    assert_eq!(code, 200);
    let m = |s: &str| sample(&metrics, s).unwrap_or_else(|| panic!("no {s} in\n{metrics}"));
    assert_eq!(
        m("hermes_messages_received_total{platform=\"telegram\"}"),
        1.0
    );
    assert_eq!(m("hermes_messages_sent_total{platform=\"telegram\"}"), 1.0);
    assert_eq!(m("hermes_turns_total{kind=\"answered\"}"), 1.0);
    assert_eq!(m("hermes_turn_duration_seconds_count"), 1.0);
    assert!(m("hermes_llm_tokens_total{kind=\"prompt\"}") > 0.0);
    assert_eq!(m("hermes_active_sessions"), 1.0);
    assert_eq!(m("hermes_inbox_open"), 0.0);
    assert_eq!(m("hermes_adapter_up{platform=\"telegram\"}"), 1.0);
    assert!(m("hermes_store_bytes") > 0.0);
    assert!(m("hermes_resident_memory_bytes") > 1e6);

    let (status, out, err) = w.run(&["status"]);
    assert!(status.success(), "{out}{err}");
    assert!(out.contains("ready"), "{out}");
    assert!(out.contains("telegram:  up"), "{out}");
    assert!(out.contains("1 in memory"), "{out}");
    let (status, out, _) = w.run(&["status", "--json"]);
    assert!(status.success());
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["pid"], daemon.pid());
    assert_eq!(json["adapters"][0]["platform"], "telegram");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_token_guards_everything_but_health_and_is_required_beyond_loopback() {
    let mut w = World::new("").await;
    // Beyond loopback without a token: the configuration is refused, naming what to set.
    w.set_env("HERMES_ADMIN_LISTEN", "0.0.0.0:0");
    let (status, out, err) = w.run(&["config", "check"]);
    assert!(!status.success(), "{out}");
    assert!(
        err.contains("admin.token") && err.contains("HERMES_ADMIN_TOKEN"),
        "{err}"
    );

    w.set_env("HERMES_ADMIN_LISTEN", "127.0.0.1:0");
    w.set_env("HERMES_ADMIN_TOKEN", "admin-secret-1234");
    let _daemon = w.start().await;
    let admin = w.admin_url().await;
    assert_eq!(get(&format!("{admin}/healthz")).await.0, 200);
    for path in ["status", "metrics", "readyz"] {
        assert_eq!(get(&format!("{admin}/{path}")).await.0, 401, "/{path}");
    }
    let authed = reqwest::Client::new()
        .get(format!("{admin}/status"))
        .bearer_auth("admin-secret-1234")
        .send()
        .await
        .unwrap();
    assert_eq!(authed.status().as_u16(), 200);
    let wrong = reqwest::Client::new()
        .get(format!("{admin}/metrics"))
        .bearer_auth("admin-secret-123")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    // `hermes status` sends the token it is configured with.
    let (status, out, err) = w.run(&["status"]);
    assert!(status.success(), "{out}{err}");
    w.set_env("HERMES_ADMIN_TOKEN", "");
    let (status, _, err) = w.run(&["status"]);
    assert!(!status.success());
    assert!(err.contains("HERMES_ADMIN_TOKEN"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_fails_while_the_platform_is_unreachable_and_status_says_why() {
    let mut w = World::new("[admin]\nready_max_silence_secs = 1\n").await;
    let _daemon = w.start().await;
    let admin = w.admin_url().await;
    w.tg.fail_always(
        "getupdates",
        Some(support::telegram::Fault::ServerError(502)),
    );
    let deadline = Instant::now() + WAIT;
    let body = loop {
        let (code, body) = get(&format!("{admin}/readyz")).await;
        if code == 503 {
            break body;
        }
        assert!(Instant::now() < deadline, "still ready: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(body.contains("telegram: not ready"), "{body}");
    // Liveness is another matter: the process is fine.
    assert_eq!(get(&format!("{admin}/healthz")).await.0, 200);
    let (status, out, _) = w.run(&["status"]);
    assert_eq!(status.code(), Some(1), "not ready exits 1: {out}");
    assert!(out.contains("NOT READY"), "{out}");

    w.tg.fail_always("getupdates", None);
    let deadline = Instant::now() + LONG_WAIT;
    while get(&format!("{admin}/readyz")).await.0 != 200 {
        assert!(Instant::now() < deadline, "never ready again");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_without_a_daemon_says_so() {
    let w = World::new("[admin]\nlisten = \"127.0.0.1:1\"\n").await;
    let (status, _, err) = w.run(&["status"]);
    assert_eq!(status.code(), Some(3));
    assert!(err.contains("not running"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_applies_a_good_file_refuses_a_broken_one_and_restarts_only_changed_adapters() {
    let mut w = World::new("").await;
    let daemon = w.start().await;
    let admin = w.admin_url().await;
    let config = w.home.path().join("config.toml");

    // Mallory is not allowed yet.
    w.tg.private_text(MALLORY, "Mallory", "hi?");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(w.tg.sent_to(MALLORY).is_empty());

    // Allow Mallory: applied without restarting Telegram.
    let polls = w.tg.calls_of("getupdates").len();
    std::fs::write(&config, "[gateway]\nallowed_users = [\"telegram:666\"]\n").unwrap();
    daemon.signal(libc::SIGHUP);
    daemon.wait_log("configuration reloaded", 1, WAIT).await;
    assert!(
        daemon.log().contains("restarted=[] kept=[Telegram]"),
        "{}",
        daemon.log()
    );
    w.tg.private_text(MALLORY, "Mallory", "now?");
    let sent = w.tg.wait_sent(1, WAIT).await;
    assert_eq!(sent[0].chat_id, MALLORY);
    assert!(w.tg.calls_of("getupdates").len() > polls);

    // A broken file is refused whole; the running configuration stays.
    std::fs::write(&config, "[gateway\nallowed_users = []\n").unwrap();
    daemon.signal(libc::SIGHUP);
    daemon
        .wait_log("configuration reload refused", 1, WAIT)
        .await;
    let (_, status) = get(&format!("{admin}/status")).await;
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    let why = status["reload_error"].as_str().unwrap();
    assert!(why.contains("config.toml"), "{why}");
    w.tg.private_text(MALLORY, "Mallory", "still there?");
    w.tg.wait_sent(2, WAIT).await;

    // A changed adapter setting restarts that adapter; the error clears.
    std::fs::write(
        &config,
        "[gateway]\nallowed_users = [\"telegram:666\"]\n[telegram]\npoll_timeout_secs = 5\n",
    )
    .unwrap();
    daemon.signal(libc::SIGHUP);
    daemon.wait_log("configuration reloaded", 2, WAIT).await;
    assert!(
        daemon.log().contains("restarted=[Telegram] kept=[]"),
        "{}",
        daemon.log()
    );
    let (_, status) = get(&format!("{admin}/status")).await;
    assert!(status.contains("\"reload_error\":null"), "{status}");
    w.tg.private_text(MALLORY, "Mallory", "and now?");
    w.tg.wait_sent(3, WAIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_with_a_new_model_and_key_rebuilds_the_agent_for_the_next_turn() {
    let file =
        |model: &str, key: &str| format!("[llm]\nmodel = \"{model}\"\napi_key = \"{key}\"\n");
    let mut w = World::new(&file("model-a", "sk-first-key")).await;
    w.unset_env("HERMES_MODEL");
    w.unset_env("OPENAI_API_KEY");
    let daemon = w.start().await;
    w.tg.private_text(ALICE, "Alice", "one");
    w.tg.wait_sent(1, WAIT).await;

    std::fs::write(
        w.home.path().join("config.toml"),
        file("model-b", "sk-rotated-key"),
    )
    .unwrap();
    daemon.signal(libc::SIGHUP);
    daemon.wait_log("the agent was rebuilt", 1, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "two");
    w.tg.wait_sent(2, WAIT).await;

    let requests = w.llm.requests();
    let last = requests.last().unwrap();
    assert_eq!(requests[0].model(), Some("model-a"));
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-first-key")
    );
    assert_eq!(last.model(), Some("model-b"));
    assert_eq!(last.header("authorization"), Some("Bearer sk-rotated-key"));
    let log = daemon.log();
    assert!(log.contains("sections=[\"llm\", \"keys\"]"), "{log}");
    assert!(
        !log.contains("sk-rotated-key"),
        "the key stays out of the log"
    );
    assert!(!log.contains("take effect at the next restart"), "{log}");
}

/// Messages systemd would receive on `NOTIFY_SOCKET`.
struct NotifySocket {
    socket: UnixDatagram,
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

impl NotifySocket {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify.sock");
        let socket = UnixDatagram::bind(&path).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        NotifySocket {
            socket,
            _dir: dir,
            path,
        }
    }

    /// Read datagrams until one contains `line` as a whole line.
    async fn wait_for(&self, line: &str) -> String {
        let deadline = Instant::now() + WAIT;
        let mut seen = Vec::new();
        loop {
            let mut buf = [0u8; 4096];
            if let Ok(n) = self.socket.recv(&mut buf) {
                let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
                if msg.lines().any(|l| l == line) {
                    return msg;
                }
                seen.push(msg);
            }
            assert!(Instant::now() < deadline, "no {line}; got {seen:?}");
            tokio::task::yield_now().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn systemd_hears_ready_watchdog_reloading_and_stopping() {
    let notify = NotifySocket::new();
    let mut w = World::new("").await;
    w.set_env("NOTIFY_SOCKET", notify.path.to_str().unwrap());
    w.set_env("WATCHDOG_USEC", "1000000");
    let mut daemon = w.start().await;
    let ready = notify.wait_for("READY=1").await;
    assert!(ready.contains("STATUS=telegram"), "{ready}");
    let ping = notify.wait_for("WATCHDOG=1").await;
    assert!(ping.contains("STATUS="), "{ping}");
    daemon.signal(libc::SIGHUP);
    notify.wait_for("RELOADING=1").await;
    notify.wait_for("READY=1").await;
    let status = std::thread::spawn(move || daemon.terminate(WAIT));
    notify.wait_for("STOPPING=1").await;
    assert!(status.join().unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_per_line() {
    let mut w = World::new("").await;
    w.set_env("HERMES_LOG", "info");
    let mut daemon = w.spawn(&["--log-format", "json", "gateway"]);
    daemon.wait_log("gateway running", 1, WAIT).await;
    w.tg.private_text(ALICE, "Alice", "a secret plan");
    w.tg.wait_sent(1, WAIT).await;
    daemon.terminate(WAIT);
    let log = daemon.log();
    let mut messages = Vec::new();
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(
            v["level"].is_string() && v["timestamp"].is_string(),
            "{line}"
        );
        messages.push(v["message"].as_str().unwrap_or_default().to_owned());
    }
    assert!(
        messages.iter().any(|m| m == "gateway running"),
        "{messages:?}"
    );
    assert!(!log.contains("a secret plan"), "message text only at debug");
}

/// `systemd-analyze verify` on a unit as `hermes gateway unit` prints it for this binary: no
/// error and no warning (unknown keys are only warnings, so stderr must be empty).
fn verify_unit(w: &World, user: bool) {
    let args: &[&str] = if user {
        &["gateway", "unit", "--user"]
    } else {
        &["gateway", "unit"]
    };
    verify(w, args, "hermes.service", user);
}

/// `systemd-analyze verify` on what `hermes <args>` prints, written as `file`.
fn verify(w: &World, args: &[&str], file: &str, user: bool) -> String {
    let (status, unit, err) = w.run(args);
    assert!(status.success(), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file);
    std::fs::write(&path, &unit).unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new("systemd-analyze");
    if user {
        cmd.arg("--user");
    }
    let out = cmd
        .arg("verify")
        .arg(&path)
        .env("XDG_RUNTIME_DIR", runtime.path())
        .output()
        .expect("systemd-analyze is installed (.ci/run installs systemd)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "{stderr}\n{unit}"
    );
    unit
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_systemd_units_pass_systemd_analyze_verify() {
    let w = World::new("").await;
    verify_unit(&w, false);
    verify_unit(&w, true);
    // The template for several processes of one deployment, verified as an instance of it.
    let template = verify(
        &w,
        &["gateway", "unit", "--template"],
        "hermes@2.service",
        false,
    );
    assert!(
        template.contains(
            "EnvironmentFile=-/etc/hermes/hermes.env\nEnvironmentFile=-/etc/hermes/hermes-%i.env\n"
        ),
        "{template}"
    );
    assert!(template.contains("Description=hermes AI agent gateway, process %i"));
    assert!(template.contains(&format!(
        "ExecStart={} --config /etc/hermes/config.toml gateway",
        support::daemon::binary_canonical()
    )));
    let (status, out, _) = w.run(&["gateway", "install", "--user", "--dry-run"]);
    assert!(status.success(), "{out}");
    assert!(out.contains("would write "), "{out}");
    assert!(
        out.contains("would run: systemctl --user enable --now hermes.service"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "ExecStart={} gateway",
            support::daemon::binary_canonical()
        )),
        "{out}"
    );
}
