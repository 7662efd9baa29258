//! What a session's container looks like: the spec, its deterministic name, and the locked-down
//! create request built from it.
//!
//! The settings are the sandbox: no network unless asked for, a read-only root filesystem with a
//! private tmpfs `/tmp`, the person's workspace the only writable host directory, every capability
//! dropped, no privilege gain through setuid binaries, and cgroup limits on processes, memory
//! (no swap beyond it) and CPU. PID 1 is a small `/bin/sh` loop that reaps orphans and survives
//! the `kill -KILL -1` that ends every call, so the container stays usable between calls.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use bollard::models::{ContainerCreateBody, HostConfig, Mount, MountType};

use crate::DockerError;

/// Label carrying the daemon instance, so a restarted daemon can find and reap its containers.
pub const LABEL_INSTANCE: &str = "hermes.instance";
/// Label carrying the session key string the container belongs to.
pub const LABEL_SESSION: &str = "hermes.session";
/// Label carrying the settings the container was created with; a change replaces the container.
pub(crate) const LABEL_SPEC: &str = "hermes.spec";

/// PID 1 of every container: reaps whatever is reparented to it (the shell's `wait` collects any
/// child) and restarts its own `sleep` when the end-of-call kill takes it. PID 1 itself ignores
/// signals from inside the container, so `kill -KILL -1` leaves it alone.
pub(crate) const KEEPER: &str = "while :; do sleep 2147483647 & wait; done";

/// One session's container: what to run, where the workspace comes from, and its limits.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerSpec {
    /// The container's name, deterministic from the session: see [`container_name`].
    pub name: String,
    /// The image, which must already be on the machine (`docker pull` or `docker import`).
    pub image: String,
    /// The daemon instance, stored in the `hermes.instance` label.
    pub instance: String,
    /// The session key string, stored in the `hermes.session` label.
    pub session: String,
    /// The host directory bind-mounted read-write at `mount_at`. Commands run as its owner
    /// (uid:gid), so files they write belong to the same user on the host.
    pub workspace: PathBuf,
    /// Where the workspace appears inside, e.g. `/workspace`; also the container's working dir.
    pub mount_at: String,
    /// Whether the container gets Docker's default network; `false` means network mode `none`.
    pub network: bool,
    /// Memory limit in MiB; swap is not allowed beyond it, and `/tmp` may use half of it.
    pub memory_mb: u64,
    /// Maximum number of processes (and threads) alive at once.
    pub pids: i64,
    /// CPU limit in cores, e.g. `1.0` or `0.5`.
    pub cpus: f64,
    /// Largest file a process may write, in MiB (`RLIMIT_FSIZE`): the workspace is a host
    /// directory, so this is what keeps one command from filling the host's disk with one file.
    pub max_file_mb: u64,
    /// CPU seconds one process may use (`RLIMIT_CPU`).
    pub cpu_secs: u64,
}

/// The container name for `session` of daemon `instance`: `hermes-<instance>-<session>`, each
/// part escaped so that any two different (instance, session) pairs give different names.
///
/// Letters, digits and `.` are kept; every other byte becomes `_` and two hex digits (`_` itself
/// is `_5f`, `-` is `_2d`), so the escaped parts never contain the `-` that separates them.
///
/// ```
/// assert_eq!(
///     hermes_docker::container_name("prod", "telegram:42"),
///     "hermes-prod-telegram_3a42"
/// );
/// ```
pub fn container_name(instance: &str, session: &str) -> String {
    format!("hermes-{}-{}", escape(instance), escape(session))
}

fn escape(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for byte in part.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'.' {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("_{byte:02x}"));
        }
    }
    out
}

/// The uid:gid commands run as: the workspace's owner, so that without `CAP_DAC_OVERRIDE` (all
/// capabilities are dropped) they can still write there, and what they write is the owner's.
pub(crate) fn workspace_user(workspace: &Path) -> Result<String, DockerError> {
    let bad = |reason: String| DockerError::Workspace {
        path: workspace.to_owned(),
        reason,
    };
    if !workspace.is_absolute() {
        return Err(bad("the path must be absolute".into()));
    }
    let meta = std::fs::metadata(workspace).map_err(|e| bad(e.to_string()))?;
    if !meta.is_dir() {
        return Err(bad("it is not a directory".into()));
    }
    Ok(format!("{}:{}", meta.uid(), meta.gid()))
}

/// Checks what dockerd would refuse with a less readable message.
pub(crate) fn validate(spec: &ContainerSpec) -> Result<(), DockerError> {
    let invalid = |what, reason: &str| {
        Err(DockerError::Invalid {
            what,
            reason: reason.to_owned(),
        })
    };
    let mut chars = spec.name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)) {
        return invalid(
            "container name",
            "it must match [a-zA-Z0-9][a-zA-Z0-9_.-]* (use container_name)",
        );
    }
    if spec.image.is_empty() {
        return invalid("image", "it is empty");
    }
    if !spec.mount_at.starts_with('/') || spec.mount_at == "/" || spec.mount_at.contains(':') {
        return invalid(
            "mount point",
            "it must be an absolute path below / without ':'",
        );
    }
    if spec.memory_mb < 8 {
        return invalid("memory limit", "it must be at least 8 MiB");
    }
    if spec.pids < 8 {
        return invalid("process limit", "it must be at least 8");
    }
    if !(spec.cpus.is_finite() && spec.cpus >= 0.01) {
        return invalid("CPU limit", "it must be at least 0.01 cores");
    }
    Ok(())
}

/// The settings a container was made with, compared on `ensure` to decide whether to replace it.
pub(crate) fn fingerprint(spec: &ContainerSpec, user: &str) -> String {
    format!(
        "v2 image={} workspace={} mount={} network={} memory_mb={} pids={} cpus={} fsize_mb={} \
         cpu_secs={} user={}",
        spec.image,
        spec.workspace.display(),
        spec.mount_at,
        spec.network,
        spec.memory_mb,
        spec.pids,
        spec.cpus,
        spec.max_file_mb,
        spec.cpu_secs,
        user
    )
}

/// One rlimit, soft and hard alike.
fn limit(name: &str, value: u64) -> bollard::models::ResourcesUlimits {
    let value = i64::try_from(value).unwrap_or(i64::MAX);
    bollard::models::ResourcesUlimits {
        name: Some(name.to_owned()),
        soft: Some(value),
        hard: Some(value),
    }
}

/// The create request for `spec`, running as `user`.
pub(crate) fn create_body(spec: &ContainerSpec, user: &str) -> ContainerCreateBody {
    let memory = i64::try_from(spec.memory_mb.saturating_mul(1024 * 1024)).unwrap_or(i64::MAX);
    let tmp_mb = (spec.memory_mb / 2).max(1);
    let labels = HashMap::from([
        (LABEL_INSTANCE.to_owned(), spec.instance.clone()),
        (LABEL_SESSION.to_owned(), spec.session.clone()),
        (LABEL_SPEC.to_owned(), fingerprint(spec, user)),
    ]);
    let host_config = HostConfig {
        network_mode: Some(if spec.network { "default" } else { "none" }.to_owned()),
        readonly_rootfs: Some(true),
        // tmpfs pages count against the memory limit: cap /tmp at half of it, so filling /tmp
        // ends in "No space left on device" rather than an out-of-memory kill of everything.
        tmpfs: Some(HashMap::from([(
            "/tmp".to_owned(),
            format!("rw,nosuid,nodev,exec,size={tmp_mb}m,mode=1777"),
        )])),
        mounts: Some(vec![Mount {
            target: Some(spec.mount_at.clone()),
            source: Some(spec.workspace.to_string_lossy().into_owned()),
            typ: Some(MountType::BIND),
            read_only: Some(false),
            ..Default::default()
        }]),
        cap_drop: Some(vec!["ALL".to_owned()]),
        security_opt: Some(vec!["no-new-privileges".to_owned()]),
        pids_limit: Some(spec.pids),
        memory: Some(memory),
        memory_swap: Some(memory),
        nano_cpus: Some((spec.cpus * 1e9) as i64),
        ulimits: Some(vec![
            limit("fsize", spec.max_file_mb.saturating_mul(1024 * 1024)),
            limit("cpu", spec.cpu_secs),
        ]),
        init: Some(false),
        ..Default::default()
    };
    ContainerCreateBody {
        image: Some(spec.image.clone()),
        user: Some(user.to_owned()),
        entrypoint: Some(vec!["/bin/sh".into(), "-c".into(), KEEPER.into()]),
        cmd: Some(Vec::new()),
        working_dir: Some(spec.mount_at.clone()),
        labels: Some(labels),
        // PID 1 ignores SIGTERM, so a stop would only wait out the timeout: nothing in here
        // needs a graceful stop.
        stop_signal: Some("SIGKILL".to_owned()),
        host_config: Some(host_config),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ContainerSpec {
        ContainerSpec {
            name: container_name("i", "s"),
            image: "busybox".into(),
            instance: "i".into(),
            session: "s".into(),
            workspace: "/srv/ws".into(),
            mount_at: "/workspace".into(),
            network: false,
            memory_mb: 256,
            pids: 64,
            cpus: 0.5,
            max_file_mb: 64,
            cpu_secs: 60,
        }
    }

    #[test]
    fn names_are_valid_docker_names() {
        let name = container_name("prod-1", "discord:guild/42:thread_7 ✓");
        assert!(validate(&ContainerSpec { name, ..spec() }).is_ok());
    }

    #[test]
    fn different_sessions_never_share_a_name() {
        let pairs = [
            ("a-b", "c"),
            ("a", "b-c"),
            ("a_2d", "b"),
            ("a-", "b"),
            ("a", "_2db"),
            ("a", "-b"),
            ("", "a-b"),
            ("a.b", "c"),
            ("a", "b.c"),
        ];
        let names: std::collections::HashSet<_> =
            pairs.iter().map(|(i, s)| container_name(i, s)).collect();
        assert_eq!(names.len(), pairs.len());
    }

    #[test]
    fn a_bad_name_is_refused_before_dockerd_sees_it() {
        let err = validate(&ContainerSpec {
            name: "-x".into(),
            ..spec()
        })
        .unwrap_err();
        assert!(err.to_string().contains("container name"), "{err}");
    }

    #[test]
    fn network_is_none_unless_opted_in() {
        let mode = |network| {
            create_body(&ContainerSpec { network, ..spec() }, "0:0")
                .host_config
                .and_then(|h| h.network_mode)
        };
        assert_eq!(mode(false).as_deref(), Some("none"));
        assert_eq!(mode(true).as_deref(), Some("default"));
    }

    #[test]
    fn a_changed_limit_changes_the_fingerprint() {
        let a = fingerprint(&spec(), "0:0");
        let b = fingerprint(
            &ContainerSpec {
                memory_mb: 512,
                ..spec()
            },
            "0:0",
        );
        assert_ne!(a, b);
    }
}
