//! Running one shell command: its own process group, a cleared environment, stdin closed, output
//! captured up to a cap, and the whole group (the shell and everything it started) stopped on
//! timeout, cancellation, when the future is dropped, and when the shell exits leaving background
//! processes behind.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long processes get between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);
/// How long output is still read after the shell exited while background processes hold the
/// pipes open.
const LINGER: Duration = Duration::from_millis(300);
const POLL: Duration = Duration::from_millis(25);
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// What to run.
pub(super) struct Spec<'a> {
    pub command: &'a str,
    pub workdir: &'a Path,
    pub env: Vec<(String, OsString)>,
    pub timeout: Duration,
    pub max_output_bytes: usize,
    /// Applied in the child before `/bin/sh` starts (see `fence.rs`).
    pub fence: Option<landlock::RulesetCreated>,
    /// Run inside bubblewrap (see `sandbox.rs`).
    pub sandbox: Option<Wrapped>,
    /// The pids cgroup the command joins before it starts (`cgroup.rs`), where there is one.
    pub cgroup: Option<super::cgroup::CallGroup>,
}

/// A command run through another program (bubblewrap, ssh): its path, its arguments, and the
/// limits set on it before it starts.
pub(super) struct Wrapped {
    pub program: std::path::PathBuf,
    pub args: Vec<OsString>,
    pub limits: Vec<(libc::__rlimit_resource_t, u64)>,
    /// `args` are followed by `-- /bin/sh -c <command>` (bubblewrap); otherwise they already
    /// carry the command (ssh).
    pub shell_after: bool,
    /// Standard input is a pipe held open until the call ends (the remote side of ssh ends the
    /// command when it closes), instead of `/dev/null`.
    pub hold_stdin: bool,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Ending {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
}

#[derive(Debug)]
pub(super) struct Finished {
    pub ending: Ending,
    /// Standard output and error interleaved as they arrived, cut in the middle past the cap.
    pub output: String,
    /// The shell exited but processes it started in the background were still running and were
    /// stopped.
    pub stopped_leftovers: bool,
}

/// Run `spec.command` with `/bin/sh -c` and wait for it, its timeout, or `cancel`.
pub(super) async fn run(spec: Spec<'_>, cancel: &CancellationToken) -> io::Result<Finished> {
    let (mut command, limits, hold_stdin) = match spec.sandbox {
        Some(w) => {
            let mut c = Command::new(&w.program);
            c.args(&w.args);
            if w.shell_after {
                c.args(["--", "/bin/sh", "-c"]).arg(spec.command);
            }
            (c, w.limits, w.hold_stdin)
        }
        None => {
            let mut c = Command::new("/bin/sh");
            c.arg("-c").arg(spec.command);
            (c, Vec::new(), false)
        }
    };
    command
        .current_dir(spec.workdir)
        .env_clear()
        .envs(spec.env)
        .stdin(if hold_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // Without a cgroup, a variable of its own marks what the command starts (`leftovers.rs`).
    let marker = spec.cgroup.is_none().then(super::leftovers::new_marker);
    if let Some(marker) = &marker {
        command.env(super::leftovers::VARIABLE, marker);
    }
    let mut fence = spec.fence;
    let joiner = spec.cgroup.as_ref().map(super::cgroup::CallGroup::joiner);
    // SAFETY: runs in the forked child before exec and only makes system calls: the cgroup
    // join (open, write, close), prctl to drop CAP_SYS_PTRACE, setrlimit, then (restrict_self)
    // prctl(PR_SET_NO_NEW_PRIVS) and landlock_restrict_self; nothing is allocated on the way
    // to success.
    unsafe {
        command.pre_exec(move || {
            if let Some(joiner) = &joiner {
                joiner.join_self()?;
            }
            drop_ptrace();
            for (resource, value) in &limits {
                let limit = libc::rlimit {
                    rlim_cur: *value,
                    rlim_max: *value,
                };
                if libc::setrlimit(*resource, &limit) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            match fence.take() {
                Some(f) => f.restrict_self().map(drop).map_err(io::Error::other),
                None => Ok(()),
            }
        });
    }
    let mut child = command.spawn()?;
    // Held until the call is over; dropping it tells the remote side to stop (ssh).
    let _stdin = child.stdin.take();
    // The shell leads a new process group whose id is its pid.
    let mut group = Group {
        pgid: child.id().and_then(|id| i32::try_from(id).ok()),
        cgroup: spec.cgroup,
        marker,
    };
    let mut capture = Capture {
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        buffer: HeadTail::new(spec.max_output_bytes),
    };
    let deadline = Instant::now() + spec.timeout;
    let mut status = None;
    let mut linger_until = deadline;
    let ending = loop {
        if let Some(status) = status
            && capture.closed()
        {
            break Ending::Exited(status);
        }
        tokio::select! {
            _ = capture.read_some(), if !capture.closed() => {}
            exited = child.wait(), if status.is_none() => {
                status = Some(exited?);
                linger_until = Instant::now() + LINGER;
            }
            _ = tokio::time::sleep_until(linger_until), if status.is_some() => {
                break Ending::Exited(status.unwrap_or_default());
            }
            _ = tokio::time::sleep_until(deadline), if status.is_none() => break Ending::TimedOut,
            _ = cancel.cancelled(), if status.is_none() => break Ending::Cancelled,
        }
    };
    let stopped_leftovers = match ending {
        Ending::Exited(_) => group.alive(),
        Ending::TimedOut | Ending::Cancelled => true,
    };
    if stopped_leftovers {
        group.terminate(&mut child, &mut capture).await;
    }
    // What the killed processes wrote last; the pipes close as soon as they are gone.
    let _ = tokio::time::timeout(LINGER, async {
        while !capture.closed() {
            capture.read_some().await;
        }
    })
    .await;
    group.pgid = None;
    if let Some(marker) = group.marker.take() {
        tokio::task::spawn_blocking(move || super::leftovers::kill_marked(&marker));
    }
    if let Some(cgroup) = group.cgroup.take() {
        // Empty (anything that slipped out of the process group: `setsid`, double forks) and
        // remove it off the runtime: removal waits for the kernel to reap what was killed.
        tokio::task::spawn_blocking(move || drop(cgroup));
    }
    Ok(Finished {
        stopped_leftovers: stopped_leftovers && matches!(ending, Ending::Exited(_)),
        ending,
        output: capture.buffer.render(),
    })
}

/// Take CAP_SYS_PTRACE out of the capability bounding set, so that a command run as root cannot
/// regain it at exec: without it, the daemon's non-dumpable `/proc/<pid>/environ` is closed to
/// it (Landlock alone still lets a sandboxed process read it). Without the right to drop it (not
/// root) there is nothing to drop.
fn drop_ptrace() {
    const CAP_SYS_PTRACE: libc::c_ulong = 19;
    // SAFETY: PR_CAPBSET_DROP changes only this process's bounding set.
    unsafe {
        libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0);
    }
}

/// The command's process group and its cgroup; killed with SIGKILL if still set when dropped
/// (the tool's future was dropped: the turn was stopped or the registry's timeout fired).
struct Group {
    pgid: Option<i32>,
    cgroup: Option<super::cgroup::CallGroup>,
    /// The command's `HERMES_CALL` when there is no cgroup.
    marker: Option<String>,
}

impl Group {
    fn signal(&self, signal: libc::c_int) -> bool {
        match self.pgid {
            // SAFETY: killpg only sends a signal; a positive id never means "every process".
            Some(pgid) if pgid > 1 => unsafe { libc::killpg(pgid, signal) == 0 },
            _ => false,
        }
    }

    /// Whether any process of the group (or of the cgroup, which also holds what left the
    /// group) still exists.
    fn alive(&self) -> bool {
        self.signal(0) || self.cgroup.as_ref().is_some_and(|c| c.members() > 0)
    }

    /// SIGTERM to the group, up to [`GRACE`] for it to go away (reading output meanwhile so no
    /// process blocks on a full pipe), then SIGKILL.
    async fn terminate(&mut self, child: &mut Child, capture: &mut Capture) {
        self.signal(libc::SIGTERM);
        let give_up = Instant::now() + GRACE;
        loop {
            // Reap the shell so that it does not count as a member any more.
            let _ = child.try_wait();
            if !self.alive() || Instant::now() >= give_up {
                break;
            }
            tokio::select! {
                _ = capture.read_some(), if !capture.closed() => {}
                _ = tokio::time::sleep(POLL) => {}
            }
        }
        self.signal(libc::SIGKILL);
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill_all();
        }
        let _ = tokio::time::timeout(GRACE, child.wait()).await;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
        if let Some(marker) = &self.marker {
            super::leftovers::kill_marked(marker);
        }
    }
}

/// Both output pipes, read into one buffer in arrival order.
struct Capture {
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    buffer: HeadTail,
}

impl Capture {
    fn closed(&self) -> bool {
        self.stdout.is_none() && self.stderr.is_none()
    }

    /// Read one chunk from whichever pipe has data. Cancel-safe: a read that loses a race
    /// consumed nothing.
    async fn read_some(&mut self) {
        let mut out = [0u8; 8192];
        let mut err = [0u8; 8192];
        let (from_stdout, result) = tokio::select! {
            r = read_from(&mut self.stdout, &mut out) => (true, r),
            r = read_from(&mut self.stderr, &mut err) => (false, r),
        };
        let data = if from_stdout { &out } else { &err };
        match result {
            Ok(n) if n > 0 => self.buffer.push(&data[..n]),
            _ if from_stdout => self.stdout = None,
            _ => self.stderr = None,
        }
    }
}

async fn read_from<R: AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buf).await,
        None => std::future::pending().await,
    }
}

/// Keeps the first and the last bytes of a stream, counting what falls in between.
pub(super) struct HeadTail {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
}

impl HeadTail {
    pub(super) fn new(cap: usize) -> Self {
        HeadTail {
            head_cap: cap / 2,
            tail_cap: cap - cap / 2,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    pub(super) fn push(&mut self, data: &[u8]) {
        self.total += data.len();
        let to_head = data.len().min(self.head_cap - self.head.len());
        self.head.extend_from_slice(&data[..to_head]);
        self.tail.extend(&data[to_head..]);
        let excess = self.tail.len().saturating_sub(self.tail_cap);
        self.tail.drain(..excess);
    }

    /// The text, with a note where the middle was cut; cuts fall on character boundaries.
    pub(super) fn render(&self) -> String {
        let cut = self.total - self.head.len() - self.tail.len();
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if cut == 0 {
            return String::from_utf8_lossy(&[self.head.as_slice(), &tail].concat()).into_owned();
        }
        let head = match std::str::from_utf8(&self.head) {
            Err(e) if e.error_len().is_none() => &self.head[..e.valid_up_to()],
            _ => &self.head,
        };
        let tail_start = tail
            .iter()
            .take(3)
            .take_while(|b| (**b & 0xC0) == 0x80)
            .count();
        format!(
            "{}\n[… {cut} bytes of output cut …]\n{}",
            String::from_utf8_lossy(head),
            String::from_utf8_lossy(&tail[tail_start..])
        )
    }
}

/// Environment variables never passed to commands, even when listed: the daemon's own
/// configuration and anything named like a credential.
pub(super) fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    crate::config::names_a_credential(name)
        || ["HERMES_", "OPENAI_", "TELEGRAM_"]
            .iter()
            .any(|prefix| upper.starts_with(prefix))
}

/// The allowlisted variables the daemon has, for a command on another machine or in a
/// container, which has its own `PATH`, `HOME` and user: those are left out, as is anything
/// that looks like a secret or is not a plain variable name.
pub(super) fn remote_env(allowlist: &[String]) -> Vec<(String, String)> {
    allowlist
        .iter()
        .filter(|name| {
            !looks_secret(name)
                && !matches!(name.as_str(), "PATH" | "HOME" | "PWD" | "USER" | "LOGNAME")
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
        .filter_map(|name| Some((name.clone(), std::env::var(name).ok()?)))
        .collect()
}

/// The environment of a command: the allowlisted variables the daemon has (minus any that look
/// like secrets), a default `PATH`, `HOME` (the daemon's if allowlisted, else the workspace) and
/// `PWD`.
pub(super) fn child_env(
    allowlist: &[String],
    parent: impl Fn(&str) -> Option<OsString>,
    workspace_root: &Path,
    workdir: &Path,
) -> Vec<(String, OsString)> {
    let mut env: Vec<(String, OsString)> = allowlist
        .iter()
        .filter(|name| !looks_secret(name) && !matches!(name.as_str(), "HOME" | "PWD"))
        .filter_map(|name| Some((name.clone(), parent(name)?)))
        .collect();
    if !env.iter().any(|(name, _)| name == "PATH") {
        env.push(("PATH".into(), DEFAULT_PATH.into()));
    }
    let home = allowlist
        .iter()
        .any(|name| name == "HOME")
        .then(|| parent("HOME"))
        .flatten()
        .unwrap_or_else(|| workspace_root.into());
    env.push(("HOME".into(), home));
    env.push(("PWD".into(), workdir.into()));
    env.sort_by(|a, b| a.0.cmp(&b.0));
    env.dedup_by(|a, b| a.0 == b.0);
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_and_tail_are_kept_and_the_cut_is_counted() {
        let mut buf = HeadTail::new(10);
        buf.push(b"abc");
        assert_eq!(buf.render(), "abc");
        buf.push(b"defghijklmnop");
        buf.push(b"qrstuvwxyz");
        assert_eq!(buf.render(), "abcde\n[… 16 bytes of output cut …]\nvwxyz");
    }

    #[test]
    fn cuts_do_not_split_characters() {
        let mut buf = HeadTail::new(6);
        buf.push("ééééééé".as_bytes());
        assert_eq!(buf.render(), "é\n[… 8 bytes of output cut …]\né");
    }

    #[test]
    fn secrets_never_reach_the_environment() {
        let parent = |name: &str| -> Option<OsString> {
            Some(match name {
                "PATH" => "/opt/bin".into(),
                "HOME" => "/home/hermes".into(),
                "LANG" => "C.UTF-8".into(),
                "TELEGRAM_BOT_TOKEN"
                | "OPENAI_API_KEY"
                | "DB_PASSWORD"
                | "AWS_SECRET_ACCESS_KEY" => "hunter2".into(),
                _ => return None,
            })
        };
        let allow: Vec<String> = [
            "PATH",
            "LANG",
            "TZ",
            "TELEGRAM_BOT_TOKEN",
            "OPENAI_API_KEY",
            "DB_PASSWORD",
            "AWS_SECRET_ACCESS_KEY",
        ]
        .map(String::from)
        .to_vec();
        let env = child_env(&allow, parent, Path::new("/ws"), Path::new("/ws/sub"));
        let pairs: Vec<(&str, &str)> = env
            .iter()
            .map(|(k, v)| (k.as_str(), v.to_str().unwrap()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("HOME", "/ws"),
                ("LANG", "C.UTF-8"),
                ("PATH", "/opt/bin"),
                ("PWD", "/ws/sub")
            ]
        );
        let with_home = child_env(&["HOME".into()], parent, Path::new("/ws"), Path::new("/ws"));
        assert!(with_home.contains(&("HOME".into(), "/home/hermes".into())));
        assert!(with_home.contains(&("PATH".into(), DEFAULT_PATH.into())));
    }
}
