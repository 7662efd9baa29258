//! Runs the real `hermes` binary as a child process against the fakes, with its own state
//! directory, and kills or stops it on demand.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::llm::FakeLlm;
use super::telegram::FakeTelegram;
use super::wait::WAIT;

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
        self.runs += 1;
        let daemon = Daemon::spawn(self.home.path(), &self.env, &["gateway"], self.runs);
        let deadline = Instant::now() + WAIT;
        while !ready() {
            assert!(
                Instant::now() < deadline,
                "daemon never became ready ({what}); log:\n{}",
                daemon.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        daemon
    }

    /// Start `hermes gateway` and wait until it polls Telegram.
    pub async fn start(&mut self) -> Daemon {
        let polls_before = self.tg.calls_of("getupdates").len();
        self.runs += 1;
        let daemon = Daemon::spawn(self.home.path(), &self.env, &["gateway"], self.runs);
        let deadline = Instant::now() + WAIT;
        while self.tg.calls_of("getupdates").len() <= polls_before {
            assert!(
                Instant::now() < deadline,
                "daemon did not start polling; log:\n{}",
                daemon.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        daemon
    }

    /// The running daemon's admin endpoint (`http://127.0.0.1:PORT`), once it is listening.
    pub async fn admin_url(&self) -> String {
        let file = self.home.path().join("admin.addr");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(addr) = std::fs::read_to_string(&file)
                && !addr.trim().is_empty()
            {
                return format!("http://{}", addr.trim());
            }
            assert!(Instant::now() < deadline, "no admin endpoint");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Start `hermes <args>` in the background (e.g. with global flags before `gateway`).
    pub fn spawn(&mut self, args: &[&str]) -> Daemon {
        self.runs += 1;
        Daemon::spawn(self.home.path(), &self.env, args, self.runs)
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
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HERMES_HOME", home)
        .env(
            "HERMES_LOG",
            "debug,hyper=info,reqwest=info,h2=info,rustls=info",
        )
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    cmd
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
