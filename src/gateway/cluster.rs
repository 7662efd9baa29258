//! This process as one of a deployment on a shared (PostgreSQL) store: its identity and
//! heartbeat, the receiving roles it holds, the session leases its lanes take, and the sweep that
//! picks up what a vanished process left (queued sessions, claimed rows). With a SQLite store
//! the process is alone: every lease is its own and nothing here touches the store.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_adapter::{Platform, SessionKey};
use tokio_util::sync::CancellationToken;

use super::Shared;
use crate::store::fence::Fence;
use crate::store::{ProcessInfo, Store, StoreError, session_lease};

/// This process in its deployment.
pub(crate) struct Cluster {
    pub me: ProcessInfo,
    /// Whether the store is shared with other processes.
    pub shared: bool,
    /// The takeover time: a process silent this long is gone.
    pub takeover: Duration,
    /// Receiving leases this process holds (or is taking): platform and part.
    receiving: Mutex<HashSet<(Platform, u16)>>,
    /// Live processes in the deployment at the last beat (at least this one).
    live: AtomicUsize,
    /// Whether a listener is split in parts that spread over the processes (the beat then
    /// counts the live processes).
    spreads: AtomicBool,
}

impl Cluster {
    pub fn new(store: &Store, takeover_ms: i64) -> Cluster {
        Cluster {
            me: ProcessInfo::current(),
            shared: store.shared(),
            takeover: Duration::from_millis(takeover_ms.max(1000) as u64),
            receiving: Mutex::new(HashSet::new()),
            live: AtomicUsize::new(1),
            spreads: AtomicBool::new(false),
        }
    }

    /// How often this process beats (a third of the takeover time).
    pub fn beat_every(&self) -> Duration {
        self.takeover / 3
    }

    /// Record whether this process holds the receiving lease of `platform`'s part `part`.
    pub fn set_receiving(&self, platform: Platform, part: u16, held: bool) {
        let mut set = self.receiving.lock().unwrap_or_else(|e| e.into_inner());
        if held {
            set.insert((platform, part));
        } else {
            set.remove(&(platform, part));
        }
    }

    /// A listener in `parts` parts will spread over the processes: count them on every beat.
    pub fn spread_parts(&self) {
        self.spreads.store(true, Ordering::Relaxed);
    }

    /// The parts of one of `parts` this process should hold: its fair share of the live
    /// processes, rounded up (so that the live processes together can hold every part).
    fn fair_share(&self, parts: u16) -> usize {
        let live = self.live.load(Ordering::Relaxed).max(1);
        usize::from(parts).div_ceil(live)
    }

    /// Reserve part `part` of `platform`'s `parts` before taking its lease: `false` when this
    /// process holds its fair share already (another process should take it).
    pub fn reserve_part(&self, platform: Platform, part: u16, parts: u16) -> bool {
        let mut set = self.receiving.lock().unwrap_or_else(|e| e.into_inner());
        let held = set.iter().filter(|(p, _)| *p == platform).count();
        if held >= self.fair_share(parts) && !set.contains(&(platform, part)) {
            return false;
        }
        set.insert((platform, part));
        true
    }

    /// Whether this process holds more of `platform`'s `parts` than its fair share and `part`
    /// is one to give up (the highest numbered ones go first), so that a process that joined
    /// gets some.
    pub fn surplus_part(&self, platform: Platform, part: u16, parts: u16) -> bool {
        let set = self.receiving.lock().unwrap_or_else(|e| e.into_inner());
        let mut held: Vec<u16> = set
            .iter()
            .filter(|(p, _)| *p == platform)
            .map(|(_, n)| *n)
            .collect();
        let fair = self.fair_share(parts);
        if held.len() <= fair {
            return false;
        }
        held.sort_unstable();
        held[fair..].contains(&part)
    }

    /// Platforms whose replies this process leaves to another: Matrix, unless it holds the
    /// Matrix device (its crypto store has one writer).
    pub fn cannot_send(&self) -> Vec<Platform> {
        let set = self.receiving.lock().unwrap_or_else(|e| e.into_inner());
        if self.shared && !set.iter().any(|(p, _)| *p == Platform::Matrix) {
            vec![Platform::Matrix]
        } else {
            Vec::new()
        }
    }

    /// Take the lease on `key`'s turns: `Ok(None)` while another live process runs them; an
    /// error when the store cannot tell (the lease may even have been taken: the caller keeps
    /// trying rather than leave the session, which no other process would take from a live one).
    pub async fn take_session(
        &self,
        store: &Store,
        key: &SessionKey,
    ) -> Result<Option<Fence>, StoreError> {
        let lease = session_lease(key);
        if !self.shared {
            return Ok(Some(Fence { lease, token: 0 }));
        }
        let token = store.lease_take(&lease, &self.me.id).await?;
        Ok(token.map(|token| Fence { lease, token }))
    }

    /// Whether this process still holds `fence`; `None` when the store cannot tell now.
    pub async fn holds(&self, store: &Store, fence: &Fence) -> Option<bool> {
        if !self.shared {
            return Some(true);
        }
        match store
            .lease_held(&fence.lease, &self.me.id, fence.token)
            .await
        {
            Ok(held) => Some(held),
            Err(e) => {
                tracing::warn!(lease = %fence.lease, error = %e, "cannot check a lease; kept until the store answers");
                None
            }
        }
    }

    /// Give a lease back; `false` when the store did not take the release (the caller keeps
    /// the lease and tries again: a lease left to a live process would pass to nobody).
    pub async fn release(&self, store: &Store, fence: &Fence) -> bool {
        if !self.shared {
            return true;
        }
        match store
            .lease_release(&fence.lease, &self.me.id, fence.token)
            .await
        {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(lease = %fence.lease, error = %e, "cannot give a lease back yet");
                false
            }
        }
    }
}

/// Register this process in the deployment (before it takes any role).
pub(crate) async fn join(shared: &Shared) {
    let cluster = &shared.cluster;
    if !cluster.shared {
        return;
    }
    let ttl = cluster.takeover.as_millis() as i64;
    match shared.store.process_beat(&cluster.me, ttl).await {
        Ok(_) => {
            tracing::info!(process = %cluster.me.id, "joined the deployment on the shared store")
        }
        Err(e) => tracing::error!(error = %e, "cannot register in the shared store; retrying"),
    }
}

/// Beat, and sweep up what vanished processes left, until `stop`; then leave the deployment
/// (give every lease and claim back at once rather than after the takeover time).
pub(crate) async fn run(shared: Arc<Shared>, stop: CancellationToken) {
    let cluster = shared.cluster.clone();
    if !cluster.shared {
        return;
    }
    shared
        .store
        .watch_inbox(shared.inbox_signal.clone(), stop.clone());
    let ttl = cluster.takeover.as_millis() as i64;
    let mut failing = false;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(cluster.beat_every()) => {}
            _ = stop.cancelled() => break,
        }
        match shared.store.process_beat(&cluster.me, ttl).await {
            Ok(beat) => {
                if failing {
                    tracing::info!("the shared store answers again");
                    failing = false;
                }
                if beat.lapsed {
                    tracing::warn!(process = %cluster.me.id, "this process missed its heartbeat (paused or cut off): other processes may have taken its roles and sessions; their writes from here are fenced");
                }
                if cluster.spreads.load(Ordering::Relaxed) {
                    count_live(&shared, ttl).await;
                }
                sweep(&shared).await;
            }
            Err(e) => {
                if !failing {
                    tracing::error!(error = %e, "cannot beat in the shared store; retrying");
                }
                failing = true;
            }
        }
    }
    if let Err(e) = shared.store.process_leave(&cluster.me.id).await {
        tracing::warn!(error = %e, "cannot leave the deployment; others take over when this process's heartbeat expires");
    }
}

/// Count the live processes, which sets each one's fair share of a listener's parts.
async fn count_live(shared: &Shared, ttl: i64) {
    match shared.store.deployment(ttl).await {
        Ok(rows) => {
            let live = rows.iter().filter(|r| r.live).count().max(1);
            let was = shared.cluster.live.swap(live, Ordering::Relaxed);
            if was != live {
                tracing::info!(
                    live,
                    "live processes in the deployment changed; listener parts are shared again"
                );
            }
        }
        Err(e) => tracing::warn!(error = %e, "cannot count the live processes"),
    }
}

/// Look again at what may have been left: new rows claimed by a vanished router, replies
/// claimed by a vanished pump, and sessions with queued messages that no live process runs.
async fn sweep(shared: &Arc<Shared>) {
    shared.inbox_signal.notify_one();
    shared.outbox_signal.notify_one();
    if shared.draining.is_cancelled() {
        return;
    }
    match shared.store.inbox_queued_sessions().await {
        Ok(keys) => {
            for key in keys {
                shared.pool.notify(shared, &key, 0, None).await;
            }
        }
        Err(e) => tracing::warn!(error = %e, "cannot look for sessions left by other processes"),
    }
}
