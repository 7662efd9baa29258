//! Runs the real `hermes` binary as a child process against the fakes, with its own state
//! directory, and kills or stops it on demand.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::fake_llm::FakeLlm;
use super::fake_telegram::FakeTelegram;

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

    /// Remove an environment variable for daemons started later (e.g. run without Telegram).
    pub fn unset_env(&mut self, key: &str) {
        self.env.retain(|(k, _)| k != key);
    }

    /// Start `hermes gateway` without waiting for any platform; the caller waits for its own.
    pub fn spawn(&mut self) -> Daemon {
        self.runs += 1;
        Daemon::spawn(self.home.path(), &self.env, &["gateway"], self.runs)
    }

    /// Start `hermes gateway` and wait until it polls Telegram.
    pub async fn start(&mut self) -> Daemon {
        let polls_before = self.tg.calls_of("getupdates").len();
        self.runs += 1;
        let daemon = Daemon::spawn(self.home.path(), &self.env, &["gateway"], self.runs);
        let deadline = Instant::now() + Duration::from_secs(20);
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
