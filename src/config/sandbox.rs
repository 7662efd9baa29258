//! `[tools.sandbox]`: where the terminal's commands run (bubblewrap, the host or another host
//! over SSH) and the limits each command gets there.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// Which sandbox the terminal uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxBackend {
    /// Bubblewrap when `bwrap` is installed and works here, else the host (with a warning).
    #[default]
    Auto,
    /// On the host, as the daemon's user, behind the Landlock fence only.
    None,
    /// Bubblewrap; refuses to run commands when it does not work.
    Bwrap,
    /// Another host over SSH (`[tools.sandbox.ssh]`), with the system's OpenSSH client.
    Ssh,
    /// A Docker container per session (`[tools.sandbox.docker]`).
    Docker,
}

/// `[tools.sandbox.docker]`: the containers the terminal's commands run in.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct DockerConfig {
    /// dockerd's socket; none: `DOCKER_HOST`, else `/var/run/docker.sock`.
    pub socket: Option<PathBuf>,
    /// The image every session's container starts from; it must be on the machine already
    /// (nothing is pulled).
    pub image: String,
    /// CPU cores one container may use.
    pub cpus: f64,
}

impl Default for DockerConfig {
    fn default() -> Self {
        DockerConfig {
            socket: None,
            image: "debian:stable-slim".into(),
            cpus: 1.0,
        }
    }
}

/// `[tools.sandbox.ssh]`: the host the terminal's commands run on.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SshConfig {
    /// Host name or address (required for `backend = "ssh"`).
    pub host: String,
    pub port: u16,
    /// Remote user (required).
    pub user: String,
    /// Private key to log in with; none: the keys of the daemon's user and its agent.
    pub identity_file: Option<PathBuf>,
    /// The host's key, in `known_hosts` form; default `$HERMES_HOME/ssh/known_hosts`. A host
    /// that is not in it is refused unless `trust_new_host_keys`.
    pub known_hosts: Option<PathBuf>,
    /// Accept and remember the key of a host seen for the first time (never a changed key).
    pub trust_new_host_keys: bool,
    /// Where the workspaces live on the remote host (relative to the remote user's home, or
    /// absolute); each person gets `<root>/<platform>/<id>` there.
    pub root: String,
    pub connect_timeout_secs: u64,
    /// Seconds between keep-alive probes; three missed ones drop the connection.
    pub keepalive_secs: u64,
}

impl Default for SshConfig {
    fn default() -> Self {
        SshConfig {
            host: String::new(),
            port: 22,
            user: String::new(),
            identity_file: None,
            known_hosts: None,
            trust_new_host_keys: false,
            root: "hermes-workspaces".into(),
            connect_timeout_secs: 10,
            keepalive_secs: 15,
        }
    }
}

/// `[tools.sandbox]`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    pub backend: SandboxBackend,
    /// Let sandboxed commands use the network (off: a network namespace of their own, with
    /// nothing in it).
    pub network: bool,
    /// Address space of one command, in MB.
    pub memory_mb: u64,
    /// Processes one command may run at once (a pids cgroup where the machine offers one, else
    /// `RLIMIT_NPROC`, which binds only a daemon not running as root).
    pub max_processes: u64,
    /// Largest file one command may write, in MB.
    pub max_file_mb: u64,
    /// CPU seconds one command may use.
    pub cpu_secs: u64,
    /// Size of a sandboxed command's private `/tmp` (memory), in MB.
    pub tmp_mb: u64,
    /// The remote host of `backend = "ssh"`.
    pub ssh: SshConfig,
    /// The containers of `backend = "docker"`.
    pub docker: DockerConfig,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            backend: SandboxBackend::Auto,
            network: false,
            memory_mb: 4096,
            max_processes: 256,
            max_file_mb: 1024,
            cpu_secs: 600,
            tmp_mb: 512,
            ssh: SshConfig::default(),
            docker: DockerConfig::default(),
        }
    }
}

impl SandboxConfig {
    pub(super) fn validate(&self, file: Option<&Path>) -> Result<(), ConfigError> {
        for (key, value) in [
            ("tools.sandbox.memory_mb", self.memory_mb),
            ("tools.sandbox.max_processes", self.max_processes),
            ("tools.sandbox.max_file_mb", self.max_file_mb),
            ("tools.sandbox.cpu_secs", self.cpu_secs),
            ("tools.sandbox.tmp_mb", self.tmp_mb),
        ] {
            if value == 0 {
                return Err(ConfigError::invalid(file, key, "must be at least 1".into()));
            }
        }
        if self.backend == SandboxBackend::Docker {
            if self.docker.image.trim().is_empty() {
                return Err(ConfigError::invalid(
                    file,
                    "tools.sandbox.docker.image",
                    "is required with tools.sandbox.backend = \"docker\"".into(),
                ));
            }
            if !(self.docker.cpus > 0.0 && self.docker.cpus.is_finite()) {
                return Err(ConfigError::invalid(
                    file,
                    "tools.sandbox.docker.cpus",
                    "must be more than 0".into(),
                ));
            }
        }
        if self.backend == SandboxBackend::Ssh {
            let ssh = &self.ssh;
            for (key, value) in [
                ("tools.sandbox.ssh.host", &ssh.host),
                ("tools.sandbox.ssh.user", &ssh.user),
                ("tools.sandbox.ssh.root", &ssh.root),
            ] {
                if value.trim().is_empty() {
                    return Err(ConfigError::invalid(
                        file,
                        key,
                        "is required with tools.sandbox.backend = \"ssh\"".into(),
                    ));
                }
            }
            if ssh.host.starts_with('-') || ssh.user.starts_with('-') {
                return Err(ConfigError::invalid(
                    file,
                    "tools.sandbox.ssh.host",
                    "a host or user cannot start with `-`".into(),
                ));
            }
            if ssh.connect_timeout_secs == 0 || ssh.keepalive_secs == 0 {
                return Err(ConfigError::invalid(
                    file,
                    "tools.sandbox.ssh.connect_timeout_secs",
                    "timeouts must be at least 1 second".into(),
                ));
            }
        }
        Ok(())
    }
}
