//! What the sandbox tests share: processes on the host by command line or pid (alive, resident
//! memory), waiting for one to be gone, and the check that the daemon still answers after a
//! command was stopped.

use std::time::{Duration, Instant};

use super::WAIT;
use super::daemon::{ALICE, World};
use super::llm::Reply;

/// Whether process `pid` runs (a zombie does not).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z"))
}

/// `VmRSS` of `pid` in KiB (0 if it is gone).
pub fn rss_kib(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Command lines of the host's processes containing `needle`.
pub fn running(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle) && !c.contains("cmdline"))
        .collect()
}

/// Wait (up to 10 s) until no process on the host has `needle` in its command line.
pub async fn wait_gone(needle: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !running(needle).is_empty() {
        assert!(
            Instant::now() < deadline,
            "{what} still running after the call: {:?}",
            running(needle)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Wait until a condition holds (up to 20 s), saying what was awaited when it does not.
pub async fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// After the `answered`-th reply to Alice went out, a new message still gets an answer.
pub async fn still_answers(w: &World, answered: usize) {
    w.tg.wait_sent(answered, WAIT).await;
    w.llm.set_default(|_| Reply::text("still here"));
    w.tg.private_text(ALICE, "Alice", "ping");
    let sent = w.tg.wait_sent(answered + 1, WAIT).await;
    assert!(
        sent.iter().any(|m| m.visible_text == "still here"),
        "{sent:?}"
    );
}

/// The fake model's port on 127.0.0.1 (a server the network namespace must keep out).
pub fn model_port(w: &World) -> String {
    w.llm
        .base_url()
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .trim_end_matches("/v1")
        .to_owned()
}

/// The number a command printed as `processes=N` (a fork bomb test counts what is left).
pub fn processes_counted(output: &str) -> usize {
    output
        .split("processes=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in:\n{output}"))
}
