//! `[tools.sandbox]`: where the terminal's commands run (bubblewrap or the host) and the limits
//! each command gets there.

use std::path::Path;

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
        Ok(())
    }
}
