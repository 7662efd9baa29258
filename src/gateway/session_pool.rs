//! The session pool: one lane per active session, created on demand and dropped when idle,
//! under a global cap on concurrent turns.
//!
//! A lane holds no messages itself: the inbox (rows `queued` for its session key) is its queue,
//! so memory stays flat however many messages wait, and a restart loses nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use dashmap::DashMap;
use hermes_adapter::SessionKey;
use tokio::sync::{Mutex, Notify, Semaphore};

use super::Shared;
use super::lane;
use crate::agent::TurnControl;
use crate::config::BusyMode;

/// One session's lane.
pub(crate) struct Lane {
    pub key: SessionKey,
    /// Wakes the lane's task when rows were queued for it.
    pub wake: Notify,
    /// Set by every notification; cleared before the lane looks for work. A lane only retires
    /// while it is clear, so a notification can never be lost to a retiring lane.
    pub pending: AtomicBool,
    pub state: Mutex<LaneState>,
    /// The model provider's failures while this lane's messages wait for it.
    pub outage: Outage,
}

/// A provider outage as one lane sees it.
#[derive(Default)]
pub(crate) struct Outage {
    /// Consecutive turns that failed for a transient provider reason.
    pub failures: std::sync::atomic::AtomicU32,
    /// When the first of them failed (ms since the epoch).
    pub since: std::sync::atomic::AtomicI64,
    /// The user was told the answer will be late.
    pub noticed: Arc<AtomicBool>,
}

/// What the lane is doing now.
#[derive(Default)]
pub(crate) struct LaneState {
    /// The running turn's controls.
    pub control: Option<TurnControl>,
    /// Highest inbox id included in the running turn.
    pub max_included: i64,
}

/// All lanes.
pub(crate) struct SessionPool {
    lanes: DashMap<SessionKey, Arc<Lane>>,
    pub turns: Arc<Semaphore>,
    max_turns: u32,
}

impl SessionPool {
    pub fn new(max_concurrent_turns: usize) -> Self {
        let max = max_concurrent_turns.clamp(1, Semaphore::MAX_PERMITS) as u32;
        SessionPool {
            lanes: DashMap::new(),
            turns: Arc::new(Semaphore::new(max as usize)),
            max_turns: max,
        }
    }

    /// Row `inbox_id` was queued for `key`: wake (or start) its lane, and in interrupt mode stop
    /// a running turn that does not include it yet.
    pub async fn notify(&self, shared: &Arc<Shared>, key: &SessionKey, inbox_id: i64) {
        let lane = {
            let entry = self.lanes.entry(key.clone()).or_insert_with(|| {
                let lane = Arc::new(Lane {
                    key: key.clone(),
                    wake: Notify::new(),
                    pending: AtomicBool::new(false),
                    state: Mutex::new(LaneState::default()),
                    outage: Outage::default(),
                });
                tokio::spawn(lane::run(shared.clone(), lane.clone()));
                lane
            });
            entry.pending.store(true, Ordering::SeqCst);
            entry.wake.notify_one();
            entry.clone()
        };
        if shared.config().gateway.busy_mode == BusyMode::Interrupt {
            let state = lane.state.lock().await;
            if let Some(control) = &state.control
                && inbox_id > state.max_included
            {
                tracing::debug!(session = %key, "newer message: interrupting the running turn");
                control.interrupt.cancel();
            }
        }
    }

    pub fn get(&self, key: &SessionKey) -> Option<Arc<Lane>> {
        self.lanes.get(key).map(|l| l.clone())
    }

    /// Remove an idle lane unless a notification arrived meanwhile. Returns whether it retired.
    pub fn retire(&self, lane: &Arc<Lane>) -> bool {
        self.lanes
            .remove_if(&lane.key, |_, l| {
                Arc::ptr_eq(l, lane) && !l.pending.load(Ordering::SeqCst)
            })
            .is_some()
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
