//! The closed-loop load driver: N users each send a message through the fake Telegram, wait
//! for its answer, then send the next. Measures throughput, latency (update offered -> reply
//! posted, both timestamps taken by the fake), CPU of the system under test, and checks that
//! every message was answered exactly once.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::support::telegram::FakeTelegram;

/// One load scenario.
#[derive(Clone, Debug)]
pub struct Spec {
    pub users: usize,
    pub per_user: usize,
    /// The fake LLM's latency per call.
    pub llm_delay: Duration,
}

impl Spec {
    pub fn total(&self) -> usize {
        self.users * self.per_user
    }
    pub fn name(&self) -> String {
        format!(
            "{} users, LLM {} ms",
            self.users,
            self.llm_delay.as_millis()
        )
    }
}

/// What one scenario measured.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub sent: usize,
    pub answered: usize,
    /// Answers beyond the first to one message.
    pub duplicates: usize,
    /// Messages never answered before the deadline.
    pub stranded: usize,
    /// Replies that matched no message (e.g. notices).
    pub other_replies: usize,
    pub elapsed: Duration,
    pub latencies: Vec<Duration>,
    /// CPU seconds (user + system) of the system under test during the run.
    pub cpu_secs: Option<f64>,
}

impl Outcome {
    pub fn throughput(&self) -> f64 {
        self.answered as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
    /// The `p`-quantile (0..=1) of the latencies, in milliseconds.
    pub fn quantile_ms(&self, p: f64) -> f64 {
        quantile_ms(&self.latencies, p)
    }
    pub fn cpu_ms_per_message(&self) -> Option<f64> {
        self.cpu_secs
            .map(|c| c * 1e3 / (self.answered.max(1) as f64))
    }
}

/// The `p`-quantile of `v` (nearest rank) in milliseconds; NaN when empty.
pub fn quantile_ms(v: &[Duration], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort();
    let i = ((s.len() as f64 - 1.0) * p).round() as usize;
    s[i].as_secs_f64() * 1e3
}

/// CPU seconds (utime + stime) a process has used so far, from `/proc/<pid>/stat`.
pub fn cpu_secs(pid: i32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some(ticks as f64 / hz)
}

/// Resident memory of a process in KiB (`VmRSS`), 0 if unknown.
pub fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The text user `u` sends as message `k`; the echo of it identifies the answer.
fn text(u: usize, k: usize) -> String {
    format!("hello number [{u}:{k}]")
}

fn token(u: usize, k: usize) -> String {
    format!("[{u}:{k}]")
}

/// The `[u:k]` token in a reply, if any.
fn found_token(text: &str) -> Option<&str> {
    let start = text.rfind('[')?;
    let end = start + text[start..].find(']')?;
    Some(&text[start..=end])
}

/// Drive `spec` against whatever answers the fake Telegram; users are Telegram ids
/// `user_base + index`. `pids` are the processes whose CPU time is counted.
pub async fn drive(
    tg: &FakeTelegram,
    spec: &Spec,
    user_base: i64,
    pids: &[i32],
    timeout: Duration,
) -> Outcome {
    let mut cursor = tg.sent_since(0).len();
    let cpu = || -> Option<f64> {
        if pids.is_empty() {
            return None;
        }
        pids.iter().map(|p| cpu_secs(*p)).sum()
    };
    let cpu_before = cpu();
    let mut outstanding: Vec<Option<(usize, Instant)>> = vec![None; spec.users];
    let mut answered_tokens: HashSet<String> = HashSet::new();
    let mut out = Outcome::default();
    let started = Instant::now();
    let mut last_reply = started;
    let send = |u: usize, k: usize, out: &mut Outcome| {
        let at = Instant::now();
        tg.private_text(user_base + u as i64, "User", &text(u, k));
        out.sent += 1;
        Some((k, at))
    };
    for (u, slot) in outstanding.iter_mut().enumerate() {
        *slot = send(u, 0, &mut out);
    }
    let total = spec.total();
    let deadline = started + timeout;
    while out.answered < total && Instant::now() < deadline {
        let new = tg.sent_since(cursor);
        cursor += new.len();
        if new.is_empty() {
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        }
        for m in new {
            let u = m.chat_id - user_base;
            if u < 0 || u as usize >= spec.users {
                out.other_replies += 1;
                continue;
            }
            let u = u as usize;
            let text = &m.visible_text;
            match outstanding[u] {
                Some((k, at)) if text.contains(&token(u, k)) => {
                    answered_tokens.insert(token(u, k));
                    out.answered += 1;
                    out.latencies.push(m.at.saturating_duration_since(at));
                    last_reply = last_reply.max(m.at);
                    outstanding[u] = None;
                    if k + 1 < spec.per_user {
                        outstanding[u] = send(u, k + 1, &mut out);
                    }
                }
                _ if found_token(text).is_some_and(|t| answered_tokens.contains(t)) => {
                    out.duplicates += 1;
                }
                _ => out.other_replies += 1,
            }
        }
    }
    out.elapsed = last_reply.saturating_duration_since(started);
    let cpu_after = cpu();
    out.cpu_secs = cpu_before.zip(cpu_after).map(|(b, a)| a - b);
    // A short grace period catches late duplicates.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for m in tg.sent_since(cursor) {
        if found_token(&m.visible_text).is_some_and(|t| answered_tokens.contains(t)) {
            out.duplicates += 1;
        }
    }
    out.stranded = out.sent - out.answered;
    out
}

/// `pid` and its descendants, from `/proc/<pid>/task/*/children`.
pub fn process_tree(pid: i32) -> Vec<i32> {
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        let tasks = std::fs::read_dir(format!("/proc/{p}/task"))
            .into_iter()
            .flatten();
        for t in tasks.flatten() {
            let children = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            out.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<i32>().ok()),
            );
        }
        i += 1;
    }
    out
}
