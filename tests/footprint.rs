//! Footprint measurements of the real daemon (not assertions: numbers for issue notes and the
//! README). Run against a release build:
//!
//! ```sh
//! cargo build --release
//! HERMES_TEST_BIN=target/release/hermes cargo test --test footprint -- --ignored --nocapture
//! ```

mod support;

use std::time::{Duration, Instant};

use support::daemon::{ALICE, BOB, World};

fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement; run explicitly with --ignored"]
async fn idle_and_loaded_rss() {
    let mut w = World::new("[gateway]\nbusy_mode = \"queue\"\n").await;
    let started = Instant::now();
    let daemon = w.start().await;
    let ready = started.elapsed();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let idle = rss_kib(daemon.pid());
    let n = 500;
    let t = Instant::now();
    for i in 0..n {
        let user = if i % 2 == 0 { ALICE } else { BOB };
        w.tg.private_text(user, "User", &format!("message number {i}"));
    }
    w.tg.wait_sent(n, Duration::from_secs(300)).await;
    let elapsed = t.elapsed();
    let loaded = rss_kib(daemon.pid());
    println!("binary: {}", support::daemon::binary());
    println!("ready (spawn to first getUpdates): {ready:?}");
    println!("idle RSS with Telegram connected: {idle} KiB");
    println!(
        "{n} messages answered in {elapsed:?} ({:.0}/s); RSS after: {loaded} KiB",
        n as f64 / elapsed.as_secs_f64()
    );
}
