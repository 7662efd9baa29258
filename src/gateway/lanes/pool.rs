//! The session pool: one lane per active session, created on demand and dropped when idle,
//! under a global cap on concurrent turns.
//!
//! A lane holds no messages itself: the inbox (rows `queued` for its session key) is its queue,
//! so memory stays flat however many messages wait, and a restart loses nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dashmap::DashMap;
use hermes_adapter::{SessionKey, UserId};
use tokio::sync::Semaphore;

use super::lane::{self, Lane};
use crate::config::BusyMode;
use crate::gateway::Shared;

/// All lanes.
pub(crate) struct SessionPool {
    lanes: DashMap<SessionKey, Arc<Lane>>,
    /// Lanes retired since the last [`SessionPool::take_retired`].
    retired: AtomicUsize,
    pub turns: Arc<Semaphore>,
    max_turns: u32,
}

impl SessionPool {
    pub fn new(max_concurrent_turns: usize) -> Self {
        let max = max_concurrent_turns.clamp(1, Semaphore::MAX_PERMITS) as u32;
        SessionPool {
            lanes: DashMap::new(),
            retired: AtomicUsize::new(0),
            turns: Arc::new(Semaphore::new(max as usize)),
            max_turns: max,
        }
    }

    /// Row `inbox_id` was queued for `key`: wake (or start) its lane. `from` is its sender and
    /// whether it may interrupt: in interrupt mode it stops a running turn of the same person
    /// that does not include it yet (another member's message in a shared session waits for a
    /// turn of its own).
    pub async fn notify(
        &self,
        shared: &Arc<Shared>,
        key: &SessionKey,
        inbox_id: i64,
        from: Option<(&UserId, bool)>,
    ) {
        let Some((sender, may_interrupt)) = from else {
            self.lane_for(shared, key);
            return;
        };
        let lane = self.lane_for(shared, key);
        if may_interrupt && shared.config().gateway.busy_mode == BusyMode::Interrupt {
            let state = lane.state.lock().await;
            if let Some(control) = &state.control
                && inbox_id > state.max_included
                && state.requester.as_ref().is_none_or(|r| r == sender)
            {
                tracing::debug!(session = %key, "newer message: interrupting the running turn");
                control.interrupt.cancel();
            }
        }
    }

    /// Wake the lane of `key`, starting it if it is not running.
    fn lane_for(&self, shared: &Arc<Shared>, key: &SessionKey) -> Arc<Lane> {
        let entry = self.lanes.entry(key.clone()).or_insert_with(|| {
            let lane = Arc::new(Lane::new(key.clone()));
            tokio::spawn(lane::supervise(shared.clone(), lane.clone()));
            lane
        });
        entry.pending.store(true, Ordering::SeqCst);
        entry.wake.notify_one();
        entry.clone()
    }

    pub fn get(&self, key: &SessionKey) -> Option<Arc<Lane>> {
        self.lanes.get(key).map(|l| l.clone())
    }

    /// Remove an idle lane unless a notification arrived meanwhile. Returns whether it retired.
    pub fn retire(&self, lane: &Arc<Lane>) -> bool {
        let retired = self
            .lanes
            .remove_if(&lane.key, |_, l| {
                Arc::ptr_eq(l, lane) && !l.pending.load(Ordering::SeqCst)
            })
            .is_some();
        if retired {
            self.retired.fetch_add(1, Ordering::Relaxed);
        }
        retired
    }

    /// How many lanes retired since the last call.
    pub fn take_retired(&self) -> usize {
        self.retired.swap(0, Ordering::Relaxed)
    }

    /// Give back the table's spare capacity after a burst of sessions.
    pub fn shrink(&self) {
        self.lanes.shrink_to_fit();
    }

    pub fn active_lanes(&self) -> usize {
        self.lanes.len()
    }

    pub fn running_turns(&self) -> usize {
        self.max_turns as usize - self.turns.available_permits()
    }

    /// Wait until no turn is running (all permits are back).
    pub async fn wait_turns_done(&self) {
        if let Ok(all) = self.turns.acquire_many(self.max_turns).await {
            drop(all);
        }
    }
}
