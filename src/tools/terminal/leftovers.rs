//! Finding what a command left running when the machine offers no cgroup: every command gets a
//! variable of its own (`HERMES_CALL`), inherited by everything it starts, and when the call
//! ends every process of the daemon's user that still carries it is killed, wherever it moved
//! (`setsid`, double forks, `nohup … &`). A process that clears its environment and leaves the
//! process group escapes this; the cgroup (`cgroup.rs`) and bubblewrap's PID namespace do not
//! have that hole.

use std::sync::atomic::{AtomicU64, Ordering};

/// The variable that marks a command's processes.
pub const VARIABLE: &str = "HERMES_CALL";

/// A value of [`VARIABLE`] no other command of this or another daemon carries.
pub fn new_marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// SIGKILL every process whose environment holds `VARIABLE=marker`; how many were killed.
pub fn kill_marked(marker: &str) -> usize {
    let needle = format!("{VARIABLE}={marker}");
    let mut killed = 0;
    for _ in 0..5 {
        let found: Vec<i32> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&pid| pid != std::process::id() as i32)
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
            })
            .collect();
        if found.is_empty() {
            break;
        }
        for pid in found {
            // SAFETY: plain kill(2) of a positive pid.
            if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                killed += 1;
            }
        }
    }
    killed
}
