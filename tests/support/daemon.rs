//! Runs the real `hermes` binary as a child process against the fakes, with its own state
//! directory, and kills or stops it on demand.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::llm::FakeLlm;
use super::telegram::FakeTelegram;
use super::wait::{WAIT, wait_for};

pub const TOKEN: &str = "123456:TEST-token-abcdef";
/// Users on the Telegram allowlist of every test daemon.
pub const ALICE: i64 = 111;
pub const BOB: i64 = 222;
/// Not on the allowlist.
pub const MALLORY: i64 = 666;
pub const GROUP: i64 = -100_777;

/// A state directory and the fakes one daemon talks to.
pub struct World {
    pub tg: FakeTelegram,
    pub llm: FakeLlm,
    pub home: tempfile::TempDir,
    env: Vec<(String, String)>,
    runs: usize,
}

impl World {
    /// Start the fakes; `config` is written to `$HERMES_HOME/config.toml`.
    pub async fn new(config: &str) -> World {
        let tg = FakeTelegram::start(TOKEN).await;
        let llm = FakeLlm::start().await;
        let home = tempfile::tempdir().expect("tempdir");
        std::fs::write(home.path().join("config.toml"), config).expect("write config");
        let env = vec![
            ("TELEGRAM_BOT_TOKEN".into(), TOKEN.into()),
            ("TELEGRAM_API_URL".into(), tg.api_url()),
            ("TELEGRAM_ALLOWED_USERS".into(), format!("{ALICE},{BOB}")),
            ("OPENAI_BASE_URL".into(), llm.base_url()),
            ("OPENAI_API_KEY".into(), "sk-test-key".into()),
            ("HERMES_MODEL".into(), "test-model".into()),
            // Daemons of parallel tests must not fight over one admin port.
            ("HERMES_ADMIN_LISTEN".into(), "127.0.0.1:0".into()),
        ];
        World {
            tg,
            llm,
            home,
            env,
            runs: 0,
        }
    }

    /// Add or replace an environment variable for daemons started later.
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.into(), value.into()));
    }

    /// Remove an environment variable for daemons started later (e.g. `TELEGRAM_BOT_TOKEN`, to
    /// run a daemon with another platform alone).
    pub fn unset_env(&mut self, key: &str) {
        self.env.retain(|(k, _)| k != key);
    }

    /// Start `hermes gateway` and wait until `ready` says its platform is connected.
    pub async fn start_when(&mut self, what: &str, ready: impl Fn() -> bool) -> Daemon {
        let daemon = self.spawn(&["gateway"]);
        let what = format!("the daemon to be ready ({what})");
        wait_for(WAIT, &what, || ready().then_some(()), || log_of(&daemon)).await;
        daemon
    }

    /// Start `hermes gateway` and wait until it polls Telegram.
    pub async fn start(&mut self) -> Daemon {
        let polls_before = self.tg.calls_of("getupdates").len();
        let tg = self.tg.clone();
        self.start_when("polling Telegram", move || {
            tg.calls_of("getupdates").len() > polls_before
        })
        .await
    }

    /// Start `hermes gateway` and wait until its log shows `needle` once more than before
    /// (a platform that says in the log when it is connected).
    pub async fn start_logging(&mut self, needle: &str) -> Daemon {
        let before = self.logged(needle);
        let home = self.home.path().to_path_buf();
        self.start_when(needle, move || count_in_logs(&home, needle) > before)
            .await
    }

    /// The running daemon's admin endpoint (`http://127.0.0.1:PORT`), once it is listening.
    pub async fn admin_url(&self) -> String {
        let file = self.home.path().join("admin.addr");
        let addr = wait_for(
            WAIT,
            "the admin endpoint",
            || {
                let addr = std::fs::read_to_string(&file).ok()?;
                (!addr.trim().is_empty()).then(|| addr.trim().to_owned())
            },
            || self.logs(),
        )
        .await;
        format!("http://{addr}")
    }

    /// The daemon's `/metrics` text.
    pub async fn metrics(&self) -> String {
        let url = format!("{}/metrics", self.admin_url().await);
        reqwest::get(url)
            .await
            .expect("metrics")
            .text()
            .await
            .expect("metrics body")
    }

    /// The workspace of `user` on `platform` (`$HERMES_HOME/workspace/<platform>/<user>`, the
    /// name escaped as the daemon does), created if missing.
    pub fn workspace_of(&self, platform: &str, user: &str) -> PathBuf {
        let dir = self
            .home
            .path()
            .join("workspace")
            .join(platform)
            .join(hermes::tools::files::escape_name(user));
        std::fs::create_dir_all(&dir).expect("create the workspace");
        dir
    }

    /// Every daemon log of this world (one per start), oldest first, concatenated.
    pub fn logs(&self) -> String {
        let mut names: Vec<_> = daemon_logs(self.home.path()).collect();
        names.sort();
        names
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n---- restart ----\n")
    }

    /// How many times `needle` appears in this world's daemon logs, over every start.
    pub fn logged(&self, needle: &str) -> usize {
        count_in_logs(self.home.path(), needle)
    }

    /// Wait until the logs show `needle` more than `before` times (e.g. another connection
    /// after an outage).
    pub async fn wait_logged(&self, needle: &str, before: usize, timeout: Duration) {
        let what = format!("`{needle}` in the log more than {before} time(s)");
        let check = || (self.logged(needle) > before).then_some(());
        wait_for(timeout, &what, check, || format!("logs:\n{}", self.logs())).await;
    }

    /// Start `hermes <args>` in the background (e.g. with global flags before `gateway`).
    pub fn spawn(&mut self, args: &[&str]) -> Daemon {
        self.runs += 1;
        Daemon::spawn(self.home.path(), &self.env, args, self.runs)
    }

    /// Another program (a client the test drives) with this world's environment, which the
    /// `hermes` commands it starts inherit.
    pub fn command_for(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        with_env(&mut cmd, self.home.path(), &self.env);
        cmd
    }

    /// Run `hermes <args>` to completion.
    pub fn run(&self, args: &[&str]) -> (ExitStatus, String, String) {
        let out = command(self.home.path(), &self.env, args)
            .output()
            .expect("run hermes");
        (
            out.status,
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

/// The log files (`daemon-N.log`) of every daemon started in `home`.
fn daemon_logs(home: &Path) -> impl Iterator<Item = PathBuf> {
    let entries = std::fs::read_dir(home).into_iter().flatten().flatten();
    entries.map(|e| e.path()).filter(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("daemon-"))
    })
}

fn count_in_logs(home: &Path, needle: &str) -> usize {
    daemon_logs(home)
        .map(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .matches(needle)
                .count()
        })
        .sum()
}

fn log_of(daemon: &Daemon) -> String {
    format!("log:\n{}", daemon.log())
}

/// A name no other world uses, in this run or an earlier one: `tag`, this process, the time
/// and a counter (accounts on the shared mail servers and Synapse).
pub fn unique(tag: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        % 1_000_000_000;
    format!(
        "{tag}{}x{t}x{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// The binary under test: this build's, or `HERMES_TEST_BIN` (to measure a release build).
pub fn binary() -> String {
    std::env::var("HERMES_TEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_hermes").to_owned())
}

/// [`binary`] with symbolic links resolved (as the binary sees its own path).
pub fn binary_canonical() -> String {
    std::fs::canonicalize(binary())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| binary())
}

fn command(home: &Path, env: &[(String, String)], args: &[&str]) -> Command {
    let mut cmd = Command::new(binary());
    cmd.args(args);
    with_env(&mut cmd, home, env);
    cmd
}

/// Give `cmd` the environment a daemon of this world runs with (and nothing else).
fn with_env(cmd: &mut Command, home: &Path, env: &[(String, String)]) {
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HERMES_HOME", home)
        .env(
            "HERMES_LOG",
            "debug,hyper=info,reqwest=info,h2=info,rustls=info",
        )
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
}

/// A running `hermes` process. Killed when dropped.
pub struct Daemon {
    child: Option<Child>,
    log: PathBuf,
}

impl Daemon {
    fn spawn(home: &Path, env: &[(String, String)], args: &[&str], run: usize) -> Daemon {
        let log = home.join(format!("daemon-{run}.log"));
        let file = std::fs::File::create(&log).expect("log file");
        let child = command(home, env, args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("spawn hermes");
        Daemon {
            child: Some(child),
            log,
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    /// SIGKILL: no chance to clean up.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Wait until this daemon's log shows `needle` at least `count` times.
    pub async fn wait_log(&self, needle: &str, count: usize, timeout: Duration) {
        let what = format!("`{needle}` in the log {count} time(s)");
        let check = || (self.log().matches(needle).count() >= count).then_some(());
        wait_for(timeout, &what, check, || log_of(self)).await;
    }

    /// Send `signal` (e.g. `libc::SIGHUP`).
    pub fn signal(&self, signal: i32) {
        // SAFETY: sending a signal to our own child process.
        unsafe {
            libc::kill(self.pid(), signal);
        }
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }

    /// SIGTERM, then wait for the exit (at most `timeout`).
    pub fn terminate(&mut self, timeout: Duration) -> ExitStatus {
        let mut child = self.child.take().expect("daemon already stopped");
        // SAFETY: sending a signal to our own child process.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!(
                    "daemon did not exit within {timeout:?} of SIGTERM; log:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}
