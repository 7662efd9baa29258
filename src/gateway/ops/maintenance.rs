//! Housekeeping while the daemon runs: the delivery log (finished inbox and outbox rows, and the
//! copies of files sent) is pruned by age every hour, so the store stays bounded over months of uptime; and memory freed
//! by retired session lanes is handed back to the system after a burst of users.

use std::sync::Arc;
use std::time::Duration;

use hermes_adapter::now_millis;

use crate::gateway::Shared;

const EVERY: Duration = Duration::from_secs(3600);
const DAY_MS: i64 = 24 * 3600 * 1000;

pub(crate) async fn run(shared: Arc<Shared>) {
    tokio::join!(prune(shared.clone()), give_back_memory(shared));
}

/// Return freed heap to the system. glibc keeps freed memory in its arenas; without this a burst
/// of 10,000 users leaves the process near its peak size for good. Every 30 s: the lane table
/// gives back its spare capacity after many lanes retired, and the heap is trimmed when more than
/// [`TRIM_ABOVE`] of it is free (what was freed after the lanes retired counts too: a person's
/// rate window, for one, outlives their lane by a minute).
async fn give_back_memory(shared: Arc<Shared>) {
    const EVERY: Duration = Duration::from_secs(30);
    const RETIRED: usize = 100;
    let mut retired = 0;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(EVERY) => {}
            _ = shared.intake.cancelled() => return,
        }
        shared.shares.shrink(std::time::Instant::now());
        retired += shared.pool.take_retired();
        if retired >= RETIRED {
            shared.pool.shrink();
            retired = 0;
        }
        let free = free_heap();
        if free >= TRIM_ABOVE {
            let before = crate::metrics::resident_bytes();
            trim_heap();
            tracing::debug!(
                free_kib = free / 1024,
                freed_kib = before.saturating_sub(crate::metrics::resident_bytes()) / 1024,
                "returned freed memory to the system"
            );
        }
    }
}

/// Free heap worth handing back (a trim takes a few milliseconds).
const TRIM_ABOVE: usize = 4 << 20;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn free_heap() -> usize {
    // SAFETY: mallinfo2 only reads glibc's allocator statistics.
    unsafe { libc::mallinfo2() }.fordblks
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn free_heap() -> usize {
    0
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim_heap() {
    // SAFETY: malloc_trim only releases free memory at the top of glibc's heaps and arenas.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_heap() {}

async fn prune(shared: Arc<Shared>) {
    let mut wait = Duration::from_secs(60);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shared.intake.cancelled() => return,
        }
        wait = EVERY;
        let days = shared.config().retention.delivery_log_days;
        if days == 0 {
            continue;
        }
        let before = now_millis() - i64::from(days) * DAY_MS;
        match shared.store.prune_delivery_log(before).await {
            Ok(p) if p.inbox + p.outbox > 0 => {
                tracing::info!(
                    inbox = p.inbox,
                    outbox = p.outbox,
                    days,
                    "pruned the delivery log"
                )
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "cannot prune the delivery log"),
        }
        let home = shared.config().home.clone();
        let age = Duration::from_secs(u64::from(days) * 24 * 3600);
        match tokio::task::spawn_blocking(move || {
            crate::gateway::outbound::outgoing::prune(&home, age)
        })
        .await
        {
            Ok(n) if n > 0 => tracing::info!(files = n, days, "removed sent files' copies"),
            _ => {}
        }
    }
}
