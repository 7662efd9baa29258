//! Footprint measurements of the real daemon (not assertions: numbers for issue notes and the
//! README). Run against a release build:
//!
//! ```sh
//! cargo build --release
//! HERMES_TEST_BIN=target/release/hermes cargo test --test e2e footprint:: -- --ignored --nocapture
//! ```

use crate::support;

use std::time::{Duration, Instant};

use support::daemon::{ALICE, BOB, World};
use support::sandboxed::rss_kib;

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

/// Session lanes in the daemon's memory, from its admin endpoint.
async fn active_sessions(admin: &str) -> u64 {
    let body = reqwest::get(format!("{admin}/status"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["active_sessions"].as_u64().unwrap()
}

/// Largest RSS seen while `done` is false, sampled every 50 ms.
fn sample_peak(
    pid: i32,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut peak = 0;
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            peak = peak.max(rss_kib(pid));
            std::thread::sleep(Duration::from_millis(50));
        }
        peak
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement; run explicitly with --ignored"]
async fn ten_thousand_users_then_eviction() {
    let mut w = World::new(
        "[gateway]\nbusy_mode = \"queue\"\nmax_concurrent_turns = 16\nsession_idle_minutes = 0.25\n",
    )
    .await;
    w.set_env("HERMES_ALLOW_ALL_USERS", "true");
    w.set_env("HERMES_LOG", "warn");
    let daemon = w.start().await;
    let admin = w.admin_url().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let idle = rss_kib(daemon.pid());
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let peak = sample_peak(daemon.pid(), done.clone());
    let n = 10_000;
    let t = Instant::now();
    for u in 0..n {
        w.tg.private_text(10_000 + u, "User", &format!("hello from user {u}"));
    }
    w.tg.wait_sent(n as usize, Duration::from_secs(900)).await;
    let elapsed = t.elapsed();
    let after_load = rss_kib(daemon.pid());
    let active_loaded = active_sessions(&admin).await;
    // Lanes retire after 15 idle seconds.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if active_sessions(&admin).await == 0 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // The memory of retired lanes is handed back within 30 s.
    tokio::time::sleep(Duration::from_secs(35)).await;
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let peak = peak.join().unwrap();
    let after = rss_kib(daemon.pid());
    println!("binary: {}", support::daemon::binary());
    println!(
        "{n} users, one message each: answered in {elapsed:?} ({:.0}/s)",
        n as f64 / elapsed.as_secs_f64()
    );
    println!(
        "RSS idle {idle} KiB, peak {peak} KiB, right after the load {after_load} KiB ({active_loaded} sessions in memory), after eviction {after} KiB"
    );
}
