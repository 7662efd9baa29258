//! The connection to another host, with the system's OpenSSH client (`tools.sandbox.backend =
//! "ssh"`): the terminal runs its commands there (`terminal/ssh.rs`) and the file tools work on
//! its files over SFTP (`sftp.rs`).
//!
//! Why OpenSSH rather than a Rust SSH library: it is the client operators already trust and
//! configure, it verifies host keys against a `known_hosts` file exactly as they expect, and its
//! connection multiplexing gives one authenticated connection per host, kept alive
//! (`ServerAliveInterval`) and reopened by the next call when it drops, without any crypto code
//! in the daemon.
//!
//! One master connection (outside any command's cgroup, kept in the background by
//! `ControlPersist`) is started on first use and again whenever its socket stops answering;
//! each command and each SFTP session is a client on it.

mod sftp;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use sftp::SftpFiles;

use crate::config::SshConfig;

/// A remote host and the local files the client uses for it.
#[derive(Debug)]
pub struct SshTarget {
    pub config: SshConfig,
    pub program: PathBuf,
    pub known_hosts: PathBuf,
    /// The master connection's socket.
    pub control: PathBuf,
    master: tokio::sync::Mutex<()>,
}

impl SshTarget {
    /// The target of `config`, its local files under `home/ssh` (made 0700).
    pub fn new(config: &SshConfig, home: &Path) -> Result<Self, String> {
        let program = ["/usr/bin/ssh", "/usr/local/bin/ssh", "/bin/ssh"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .ok_or("the OpenSSH client (ssh) is not installed")?;
        let dir = home.join("ssh");
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let known_hosts = config
            .known_hosts
            .clone()
            .unwrap_or_else(|| dir.join("known_hosts"));
        // Socket paths are short (about 100 bytes at most): a hash names the connection.
        let id = {
            use sha2::Digest;
            let d = sha2::Sha256::digest(
                format!("{}@{}:{}", config.user, config.host, config.port).as_bytes(),
            );
            d[..8]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        Ok(SshTarget {
            config: config.clone(),
            program,
            known_hosts,
            control: dir.join(format!("cm-{id}")),
            master: tokio::sync::Mutex::new(()),
        })
    }

    /// `user@host:port`, for messages.
    pub fn name(&self) -> String {
        format!(
            "{}@{}:{}",
            self.config.user, self.config.host, self.config.port
        )
    }

    /// The options every invocation shares: no user configuration, no prompts, host keys
    /// checked against our `known_hosts`, timeouts and keep-alive, the master's socket.
    fn options(&self, master: bool) -> Vec<OsString> {
        let c = &self.config;
        let strict = if c.trust_new_host_keys {
            "accept-new"
        } else {
            "yes"
        };
        let mut o: Vec<OsString> = Vec::new();
        let mut opt = |s: String| {
            o.push("-o".into());
            o.push(s.into());
        };
        opt("BatchMode=yes".into());
        opt(format!("StrictHostKeyChecking={strict}"));
        opt(format!("UserKnownHostsFile={}", self.known_hosts.display()));
        opt("GlobalKnownHostsFile=/dev/null".into());
        opt("UpdateHostKeys=no".into());
        opt(format!("ConnectTimeout={}", c.connect_timeout_secs));
        opt(format!("ServerAliveInterval={}", c.keepalive_secs));
        opt("ServerAliveCountMax=3".into());
        opt(format!("ControlPath={}", self.control.display()));
        opt(format!(
            "ControlMaster={}",
            if master { "yes" } else { "no" }
        ));
        opt("ControlPersist=600".into());
        opt("ForwardAgent=no".into());
        opt("ClearAllForwardings=yes".into());
        opt("LogLevel=ERROR".into());
        if let Some(identity) = &c.identity_file {
            opt("IdentitiesOnly=yes".into());
            o.push("-i".into());
            o.push(identity.into());
        }
        let mut all: Vec<OsString> = vec!["-F".into(), "none".into()];
        all.extend(o);
        all.extend([
            "-p".into(),
            c.port.to_string().into(),
            "-l".into(),
            c.user.clone().into(),
        ]);
        all
    }

    /// Make sure a master connection answers on the socket, starting one if not. Its error is
    /// what `ssh` said (a refused host key, a refused login, an unreachable host).
    pub async fn ensure_master(&self) -> Result<(), String> {
        let _one_at_a_time = self.master.lock().await;
        if std::os::unix::net::UnixStream::connect(&self.control).is_ok() {
            return Ok(());
        }
        let _ = std::fs::remove_file(&self.control);
        // The master runs `true` and stays in the background (ControlPersist) holding whatever
        // it was given: its messages go to a file, its standard streams nowhere.
        let log = self.control.with_extension("log");
        let _ = std::fs::remove_file(&log);
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(self.options(true))
            .arg("-E")
            .arg(&log)
            .args(["-T", "--"])
            .arg(&self.config.host)
            .arg("true")
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true);
        let wait = Duration::from_secs(self.config.connect_timeout_secs + 5);
        let status = tokio::time::timeout(wait, command.status())
            .await
            .map_err(|_| format!("no answer from {} within {wait:?}", self.name()))?
            .map_err(|e| format!("cannot run {}: {e}", self.program.display()))?;
        if status.success() {
            Ok(())
        } else {
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            Err(match said.trim() {
                "" => format!("ssh exited with {status}"),
                said => said.to_owned(),
            })
        }
    }

    /// Close the master connection (at stop: it would otherwise linger for `ControlPersist`).
    pub async fn close(&self) {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(self.options(false))
            .args(["-O", "exit", "--"])
            .arg(&self.config.host)
            .env_clear()
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true);
        let _ = tokio::time::timeout(Duration::from_secs(5), command.status()).await;
    }

    /// The `ssh` arguments of one call: a client of the master, no terminal, the wrapper
    /// script as the remote command.
    pub fn call_args(&self, script: &str) -> Vec<OsString> {
        let mut a = self.options(false);
        a.extend(["-T".into(), "--".into(), self.config.host.clone().into()]);
        a.push(format!("exec sh -c {}", quote(script)).into());
        a
    }
}

impl SshTarget {
    /// The `ssh` arguments of an SFTP session: a client of the master asking for the `sftp`
    /// subsystem.
    pub fn sftp_args(&self) -> Vec<OsString> {
        let mut a = self.options(false);
        a.extend([
            "-T".into(),
            "-s".into(),
            "--".into(),
            self.config.host.clone().into(),
            "sftp".into(),
        ]);
        a
    }
}

/// `text` as one single-quoted shell word.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}
