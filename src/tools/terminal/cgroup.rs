//! A pids cgroup per command where the machine offers one: the process limit the kernel keeps
//! even for root (`RLIMIT_NPROC` does not bind uid 0), and the list of everything the command
//! started, so that all of it is killed when the call ends, wherever it moved (`setsid`, double
//! forks, `nohup … &`).
//!
//! The daemon uses the cgroup v1 `pids` hierarchy when it is mounted and writable (as root), or
//! its own cgroup v2 when the `pids` controller is delegated to it (systemd `Delegate=yes`) and
//! can be enabled below it. Each call gets `hermes-tools.<daemon pid>/<n>` under the daemon's
//! own cgroup; the command joins it before it runs (it writes `0` to `cgroup.procs` in the
//! forked child, so nothing escapes between fork and join), and the group is emptied and
//! removed when the call ends. Groups a crashed daemon left behind are emptied at start.

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Where this daemon's call groups are made.
#[derive(Debug)]
pub struct Cgroups {
    base: PathBuf,
    next: AtomicU64,
}

/// The daemon's call-group parent, found once; `None` when the machine offers none.
pub fn get() -> Option<&'static Cgroups> {
    static FOUND: OnceLock<Option<Cgroups>> = OnceLock::new();
    FOUND
        .get_or_init(|| match Cgroups::detect() {
            Ok(found) => Some(found),
            Err(why) => {
                tracing::debug!("terminal: no pids cgroup for commands: {why}");
                None
            }
        })
        .as_ref()
}

/// One line for the start-up log and `hermes doctor`.
pub fn describe() -> String {
    match get() {
        Some(c) => format!(
            "terminal processes: a pids cgroup per command under {}",
            c.base.display()
        ),
        None => "terminal processes: no pids cgroup here (cgroup v1 `pids` not writable, v2 \
                 not delegated); the process limit binds only a daemon not running as root"
            .to_owned(),
    }
}

impl Cgroups {
    fn detect() -> io::Result<Self> {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo")?;
        let own = std::fs::read_to_string("/proc/self/cgroup")?;
        let (dir, v2) = own_pids_dir(&mounts, &own)
            .ok_or_else(|| io::Error::other("no pids controller is mounted"))?;
        if v2 {
            enable_pids_below(&dir)?;
        }
        sweep(&dir);
        let base = dir.join(format!("hermes-tools.{}", std::process::id()));
        std::fs::create_dir_all(&base)?;
        if v2 {
            enable_pids_below(&base)?;
        }
        let probe = Cgroups {
            base,
            next: AtomicU64::new(0),
        };
        // Prove the whole path works (create, limit, remove) before relying on it.
        drop(probe.group(8)?);
        Ok(probe)
    }

    /// A fresh group for one command, allowing `max_pids` processes at once.
    pub fn group(&self, max_pids: u64) -> io::Result<CallGroup> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let dir = self.base.join(n.to_string());
        std::fs::create_dir(&dir)?;
        let made = CallGroup {
            procs: CString::new(
                dir.join("cgroup.procs")
                    .into_os_string()
                    .into_encoded_bytes(),
            )
            .map_err(io::Error::other)?,
            dir,
        };
        std::fs::write(made.dir.join("pids.max"), max_pids.to_string())?;
        Ok(made)
    }
}

/// The cgroup of one command; emptied and removed when dropped.
#[derive(Debug)]
pub struct CallGroup {
    dir: PathBuf,
    procs: CString,
}

impl CallGroup {
    /// What the forked child uses to join the group.
    pub fn joiner(&self) -> Joiner {
        Joiner {
            procs: self.procs.clone(),
        }
    }

    /// How many processes are in the group now.
    pub fn members(&self) -> usize {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|p| p.lines().count())
            .unwrap_or(0)
    }

    /// Kill everything in the group until it stays empty (a fork racing the kill is caught by
    /// the next round); returns how many processes were killed.
    pub fn kill_all(&self) -> usize {
        kill_members(&self.dir)
    }
}

/// The way into a [`CallGroup`], for the child between `fork` and `exec`.
#[derive(Debug)]
pub struct Joiner {
    procs: CString,
}

impl Joiner {
    /// Move the calling process into the group. Safe between `fork` and `exec`: it only opens,
    /// writes and closes (no allocation).
    pub fn join_self(&self) -> io::Result<()> {
        // SAFETY: `procs` is a valid NUL-terminated path; the buffer outlives the write.
        unsafe {
            let fd = libc::open(self.procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let written = libc::write(fd, b"0".as_ptr().cast(), 1);
            let error = io::Error::last_os_error();
            libc::close(fd);
            if written != 1 {
                return Err(error);
            }
        }
        Ok(())
    }
}

impl Drop for CallGroup {
    fn drop(&mut self) {
        self.kill_all();
        // A killed process leaves the group when the kernel has reaped it; give it a moment.
        for _ in 0..40 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        tracing::warn!(group = %self.dir.display(), "terminal: a command's cgroup could not be removed");
    }
}

fn kill_members(dir: &Path) -> usize {
    let mut killed = 0;
    for _ in 0..100 {
        let members: Vec<i32> = std::fs::read_to_string(dir.join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .filter(|&p: &i32| p > 0 && p != std::process::id() as i32)
            .collect();
        if members.is_empty() {
            break;
        }
        for pid in members {
            // SAFETY: plain kill(2).
            if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                killed += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    killed
}

/// Empty and remove the call groups of daemons that are gone (a crash leaves them behind).
fn sweep(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("hermes-tools."))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only checks that the process exists.
        if pid == std::process::id() as i32 || unsafe { libc::kill(pid, 0) } == 0 {
            continue;
        }
        let parent = entry.path();
        for group in std::fs::read_dir(&parent).into_iter().flatten().flatten() {
            if group.path().is_dir() {
                kill_members(&group.path());
                let _ = std::fs::remove_dir(group.path());
            }
        }
        let _ = std::fs::remove_dir(&parent);
    }
}

/// Enable the pids controller for the children of the v2 cgroup `dir`.
fn enable_pids_below(dir: &Path) -> io::Result<()> {
    std::fs::write(dir.join("cgroup.subtree_control"), "+pids")
}

/// The daemon's own directory in the pids hierarchy, and whether it is cgroup v2.
fn own_pids_dir(mountinfo: &str, own: &str) -> Option<(PathBuf, bool)> {
    let mut v2_mount = None;
    for line in mountinfo.lines() {
        // `id parent major:minor root mount-point options … - fstype source super-options`
        let (before, after) = line.split_once(" - ")?;
        let mount_point = before.split(' ').nth(4)?;
        let mut rest = after.split(' ');
        let fstype = rest.next()?;
        let super_options = rest.nth(1).unwrap_or("");
        if fstype == "cgroup" && super_options.split(',').any(|o| o == "pids") {
            let path = own.lines().find_map(|l| {
                let mut parts = l.splitn(3, ':');
                let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
                controllers.split(',').any(|c| c == "pids").then_some(path)
            })?;
            return Some((join_cgroup(mount_point, path), false));
        }
        if fstype == "cgroup2" && v2_mount.is_none() {
            v2_mount = Some(mount_point.to_owned());
        }
    }
    let mount = v2_mount?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = join_cgroup(&mount, path);
    let controllers = std::fs::read_to_string(dir.join("cgroup.controllers")).ok()?;
    controllers
        .split_whitespace()
        .any(|c| c == "pids")
        .then_some((dir, true))
}

fn join_cgroup(mount: &str, path: &str) -> PathBuf {
    Path::new(mount).join(path.trim().trim_start_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v1_pids_hierarchy_is_found_from_mountinfo() {
        let mounts = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
                      35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                      39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n\
                      41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        let own = "8:pids:/user.slice\n4:memory:/x\n0::/\n";
        assert_eq!(
            own_pids_dir(mounts, own),
            Some((PathBuf::from("/sys/fs/cgroup/pids/user.slice"), false))
        );
    }

    #[test]
    fn a_group_limits_and_ends_what_joined_it() {
        let Some(cgroups) = get() else {
            // Not every machine offers one; `tests/sandbox.rs` insists where CI runs.
            eprintln!("skipped: {}", describe());
            return;
        };
        let group = cgroups.group(4).unwrap();
        let mut command = std::process::Command::new("/bin/sh");
        command.args([
            "-c",
            "for i in 1 2 3 4 5 6; do sleep 30 & done; wait; echo finished",
        ]);
        let join = group.joiner();
        // SAFETY: join_self only opens, writes and closes.
        unsafe {
            use std::os::unix::process::CommandExt;
            command.pre_exec(move || join.join_self());
        }
        let mut child = command
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let members = std::fs::read_to_string(group.dir.join("cgroup.procs")).unwrap();
        let count = members.lines().count();
        assert!((2..=4).contains(&count), "pids.max holds: {members}");
        assert!(group.kill_all() >= 2);
        let status = child.wait().unwrap();
        assert!(!status.success());
        let dir = group.dir.clone();
        drop(group);
        assert!(!dir.exists(), "the group is removed");
    }
}
