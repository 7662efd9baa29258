//! Where a command runs: inside bubblewrap, or on the host behind the fence (`fence.rs`).
//!
//! In bubblewrap a command gets new mount, PID, IPC, UTS and cgroup namespaces and, unless the
//! network is opted in, a network namespace with nothing in it. It sees the system read-only,
//! a private `/tmp` of a fixed size, an empty read-only `/root` and `/home`, none of the daemon's private paths (an empty
//! folder, or `/dev/null`, in their place), the skills read-only and the workspace read-write;
//! every capability is dropped, it is the leader of a session of its own, and when its shell
//! ends the PID namespace ends with it, so nothing it started (`setsid`, double forks) outlives
//! the call. Resource limits (address space, file size, CPU time, processes) are set on it
//! before bubblewrap starts and inherited by everything inside.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::config::{SandboxBackend, SandboxConfig};

use super::fence::FenceSettings;

/// Files of the system a command never reads, even when the daemon runs as root.
const SYSTEM_SECRETS: &[&str] = &["/etc/shadow", "/etc/gshadow", "/etc/sudoers"];

/// What the terminal resolved its configured backend to.
#[derive(Debug, Clone)]
pub enum Resolved {
    /// Bubblewrap at this path.
    Bwrap(PathBuf),
    /// Another host over SSH.
    Ssh(std::sync::Arc<super::ssh::SshTarget>),
    /// A Docker container per session.
    #[cfg(feature = "docker")]
    Docker(std::sync::Arc<super::docker::DockerSandbox>),
    /// On the host; why (for the start-up log and `hermes doctor`).
    Host(String),
    /// `backend = "bwrap"` (or `"ssh"`) but it does not work here: every command is refused
    /// with this.
    Broken(String),
}

/// Find and try the backend `config.backend` asks for; `home` is the state directory (where
/// the SSH client keeps its files).
pub fn resolve(config: &SandboxConfig, home: &Path) -> Resolved {
    match config.backend {
        SandboxBackend::None => {
            return Resolved::Host("tools.sandbox.backend = \"none\"".into());
        }
        SandboxBackend::Ssh => {
            return match super::ssh::SshTarget::new(&config.ssh, home) {
                Ok(target) => Resolved::Ssh(std::sync::Arc::new(target)),
                Err(why) => Resolved::Broken(why),
            };
        }
        #[cfg(feature = "docker")]
        SandboxBackend::Docker => {
            return Resolved::Docker(std::sync::Arc::new(super::docker::DockerSandbox::new(
                config, home,
            )));
        }
        #[cfg(not(feature = "docker"))]
        SandboxBackend::Docker => {
            return Resolved::Broken(
                "this build of hermes has no Docker support (cargo feature `docker`)".into(),
            );
        }
        SandboxBackend::Auto | SandboxBackend::Bwrap => {}
    }
    let tried = find_bwrap()
        .ok_or_else(|| "bwrap is not installed".to_owned())
        .and_then(|bwrap| {
            let out = std::process::Command::new(&bwrap)
                .args([
                    "--ro-bind",
                    "/",
                    "/",
                    "--unshare-all",
                    "--die-with-parent",
                    "--",
                    "/bin/true",
                ])
                .stdin(std::process::Stdio::null())
                .output()
                .map_err(|e| format!("cannot run {}: {e}", bwrap.display()))?;
            if out.status.success() {
                Ok(bwrap)
            } else {
                Err(format!(
                    "bwrap does not work here: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        });
    match (tried, config.backend) {
        (Ok(bwrap), _) => Resolved::Bwrap(bwrap),
        (Err(why), SandboxBackend::Bwrap) => Resolved::Broken(why),
        (Err(why), _) => Resolved::Host(why),
    }
}

fn find_bwrap() -> Option<PathBuf> {
    ["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// One line for the start-up log and `hermes doctor`.
pub fn describe(resolved: &Resolved, config: &SandboxConfig) -> String {
    match resolved {
        Resolved::Bwrap(path) => format!(
            "terminal sandbox: bubblewrap ({}), network {}, {} MB, {} processes, files up to {} MB, {} CPU s",
            path.display(),
            if config.network { "on" } else { "off" },
            config.memory_mb,
            config.max_processes,
            config.max_file_mb,
            config.cpu_secs
        ),
        Resolved::Ssh(target) => format!(
            "terminal sandbox: ssh to {} ({}), host key checked against {}{}, workspaces in {}; \
             the file tools are off (they do not reach the remote host yet)",
            target.name(),
            target.program.display(),
            target.known_hosts.display(),
            if target.config.trust_new_host_keys {
                " (new hosts trusted on first use)"
            } else {
                ""
            },
            target.config.root
        ),
        #[cfg(feature = "docker")]
        Resolved::Docker(docker) => docker.describe(),
        Resolved::Host(why) => {
            format!("terminal sandbox: NONE, commands run on the host as the daemon's user ({why})")
        }
        Resolved::Broken(why) => {
            format!(
                "terminal sandbox: {} required but unusable, commands are refused ({why})",
                match config.backend {
                    SandboxBackend::Ssh => "ssh",
                    SandboxBackend::Docker => "docker",
                    _ => "bubblewrap",
                }
            )
        }
    }
}

/// The arguments of `bwrap` before `--` for a command in `workdir`.
pub(super) fn bwrap_args(
    fence: &FenceSettings,
    config: &SandboxConfig,
    workdir: &Path,
) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    let mut push = |args: &[&str]| a.extend(args.iter().map(OsString::from));
    // Every writable memory file system has a size: `/tmp` and `/dev/shm` are the only ones,
    // and `/dev` itself is read-only once its nodes are there.
    const MB: u64 = 1024 * 1024;
    let tmp = config.tmp_mb.saturating_mul(MB).to_string();
    let shm = (config.tmp_mb.min(64) * MB).to_string();
    push(&["--ro-bind", "/", "/", "--dev", "/dev"]);
    push(&[
        "--size",
        &shm,
        "--tmpfs",
        "/dev/shm",
        "--remount-ro",
        "/dev",
    ]);
    push(&["--proc", "/proc", "--size", &tmp, "--tmpfs", "/tmp"]);
    push(&[
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]);
    if !config.network {
        push(&["--unshare-net"]);
    }
    push(&["--die-with-parent", "--new-session", "--cap-drop", "ALL"]);
    push(&["--hostname", "hermes-sandbox"]);
    // Hidden folders become empty and read-only once everything below them is in place.
    let mut read_only: Vec<OsString> = Vec::new();
    let mut hide = |path: &Path| {
        if path.is_dir() {
            a.extend(["--tmpfs".into(), path.into()]);
            read_only.extend(["--remount-ro".into(), path.into()]);
        } else if path.exists() {
            a.extend(["--ro-bind".into(), "/dev/null".into(), path.into()]);
        }
    };
    for home in ["/root", "/home"] {
        hide(Path::new(home));
    }
    for path in &fence.private {
        hide(path);
    }
    for secret in SYSTEM_SECRETS {
        hide(Path::new(secret));
    }
    for shared in fence.shared.iter().filter(|p| p.is_dir()) {
        a.extend(["--ro-bind".into(), shared.into(), shared.into()]);
    }
    for writable in fence.writable.iter().filter(|p| p.is_dir()) {
        a.extend(["--bind".into(), writable.into(), writable.into()]);
    }
    a.extend(read_only);
    a.extend(["--chdir".into(), workdir.into()]);
    a
}

/// The limits to set on bubblewrap before it starts, as `(resource, value)`.
pub(super) fn limits(config: &SandboxConfig) -> Vec<(libc::__rlimit_resource_t, u64)> {
    const MB: u64 = 1024 * 1024;
    vec![
        (libc::RLIMIT_AS, config.memory_mb.saturating_mul(MB)),
        (libc::RLIMIT_FSIZE, config.max_file_mb.saturating_mul(MB)),
        (libc::RLIMIT_CPU, config.cpu_secs),
        (libc::RLIMIT_NPROC, config.max_processes),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_paths_are_hidden_before_the_workspace_is_bound() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let ws = home.join("workspace");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(root.path().join("config.toml"), "x").unwrap();
        let fence = FenceSettings {
            private: vec![home.clone(), root.path().join("config.toml")],
            shared: vec![],
            writable: vec![ws.clone()],
        };
        let args: Vec<String> = bwrap_args(&fence, &SandboxConfig::default(), &ws)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        let at = |needle: &[&str]| {
            args.windows(needle.len())
                .position(|w| w == needle)
                .unwrap_or_else(|| panic!("{needle:?} not in {args:?}"))
        };
        let home = home.to_str().unwrap();
        let ws = ws.to_str().unwrap();
        let config = root.path().join("config.toml");
        let hidden = at(&["--tmpfs", home]);
        at(&["--ro-bind", "/dev/null", config.to_str().unwrap()]);
        assert!(
            at(&["--bind", ws, ws]) > hidden,
            "the workspace comes back on top"
        );
        at(&["--unshare-net"]);
        at(&["--chdir", ws]);
    }
}
