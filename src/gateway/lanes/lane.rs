//! A session lane's task: take the session's queued messages in order, run one agent turn at a
//! time, and commit each turn's answer, replies and inbox rows together.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::FutureExt;
use hermes_adapter::SessionKey;
use std::panic::AssertUnwindSafe;
use tokio::sync::{Mutex, Notify};
use tracing::Instrument;

use super::turn::{Outage, run_turn};
use crate::agent::TurnControl;
use crate::config::BusyMode;
use crate::gateway::Shared;
use crate::gateway::outbound::replies::replies;
use crate::store::fence::{self, Fence};
use crate::store::{InboxOutcome, InboxRow};

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

impl Lane {
    /// A lane for `key`, not woken yet.
    pub fn new(key: SessionKey) -> Lane {
        Lane {
            key,
            wake: Notify::new(),
            pending: AtomicBool::new(false),
            state: Mutex::new(LaneState::default()),
            outage: Outage::default(),
        }
    }
}

/// What the lane is doing now.
#[derive(Default)]
pub(crate) struct LaneState {
    /// The running turn's controls.
    pub control: Option<TurnControl>,
    /// Highest inbox id included in the running turn.
    pub max_included: i64,
    /// Who the running turn answers.
    pub requester: Option<hermes_adapter::UserId>,
}

/// The wait before the lane asks a store that did not answer again.
const STORE_WAIT: Duration = Duration::from_secs(1);

/// Sleep `wait`; `true` when the gateway began draining meanwhile.
async fn pause(shared: &Shared, wait: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(wait) => false,
        _ = shared.draining.cancelled() => true,
    }
}

/// Messages answered together in one turn at most (interrupt mode); the rest wait their turn.
const MAX_BATCH: usize = 20;

/// Run the lane's loop; a panic in it is logged, counted, and answered: the messages of the turn
/// that broke get an apology and are marked failed (so they are not retried into the same
/// panic), and the loop starts again for the messages behind them.
pub(crate) async fn supervise(shared: Arc<Shared>, lane: Arc<Lane>) {
    loop {
        let ran = AssertUnwindSafe(run(shared.clone(), lane.clone()))
            .catch_unwind()
            .await;
        let Err(panic) = ran else { return };
        crate::metrics::metrics().record_panic("lane");
        tracing::error!(session = %lane.key, panic = %crate::gateway::panic_message(&panic), "the session lane panicked; its turn is answered as failed and the lane restarts");
        fail_running_turn(&shared, &lane).await;
        if shared.draining.is_cancelled() {
            return;
        }
    }
}

/// After a panic mid-turn: answer the turn's messages with an apology and mark them failed.
async fn fail_running_turn(shared: &Arc<Shared>, lane: &Lane) {
    let max = {
        let mut state = lane.state.lock().await;
        state.control = None;
        std::mem::take(&mut state.max_included)
    };
    let rows = match shared.store.inbox_queued_for(&lane.key, MAX_BATCH).await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::error!(session = %lane.key, error = %e, "cannot read the inbox after a panic");
            return;
        }
    };
    let rows: Vec<_> = rows.into_iter().filter(|r| r.id <= max).collect();
    let Some(last) = rows.last() else { return };
    let note = "⚠️ Sorry, something went wrong on my side while answering this. It was logged for the operator; please try again.";
    let replies = replies(
        shared,
        &last.message,
        note,
        &format!("{}:{}", hermes_adapter::keys::CRASH, last.id),
    );
    let ids = rows.iter().map(|r| r.id).collect();
    match shared
        .store
        .reply_and_finish(ids, InboxOutcome::Failed, replies)
        .await
    {
        Ok(()) => shared.outbox_signal.notify_one(),
        Err(e) => tracing::error!(session = %lane.key, error = %e, "cannot record the failed turn"),
    }
}

/// The leading messages of one author: a turn answers one person, who alone confirms its tool
/// calls and whose grants alone apply (in a shared thread the next member's messages get a turn
/// of their own).
fn one_author(mut rows: Vec<InboxRow>) -> Vec<InboxRow> {
    if let Some(first) = rows.first().map(|r| r.message.sender.id.clone()) {
        let end = rows
            .iter()
            .position(|r| r.message.sender.id != first)
            .unwrap_or(rows.len());
        rows.truncate(end);
    }
    rows
}

/// The lane's loop, under the session's lease (on a shared store another process may be
/// running this session: the lane then retires and leaves the messages to it). The lease is
/// given back whenever the session has nothing queued, and when the lane ends.
pub(crate) async fn run(shared: Arc<Shared>, lane: Arc<Lane>) {
    let mut lease = None;
    run_leased(&shared, &lane, &mut lease).await;
    if let Some(fence) = lease {
        shared.cluster.release(&shared.store, &fence).await;
    }
}

/// The lane's loop. Ends when the session has been idle long enough, when another process runs
/// the session, or when the gateway drains.
async fn run_leased(shared: &Arc<Shared>, lane: &Arc<Lane>, lease: &mut Option<Fence>) {
    let idle = Duration::from_secs_f64(
        shared
            .config()
            .gateway
            .session_idle_minutes
            .clamp(0.001, 1e6)
            * 60.0,
    );
    loop {
        if shared.draining.is_cancelled() {
            return;
        }
        lane.pending.store(false, Ordering::SeqCst);
        let next = match shared.store.inbox_queued_for(&lane.key, 1).await {
            Ok(rows) => rows
                .into_iter()
                .next()
                .map(|r| (r.message.platform, r.message.sender.id)),
            Err(e) => {
                tracing::error!(session = %lane.key, error = %e, "cannot read the inbox; retrying");
                tokio::time::sleep(Duration::from_secs(2)).await;
                continue;
            }
        };
        let Some(person) = next else {
            if let Some(fence) = lease.take() {
                // Nothing queued: let any process run the session's next message (and look
                // once more, for a message queued while the lease was still held here). A
                // release the store did not take is tried again: no other process takes a
                // session from a live one.
                if !shared.cluster.release(&shared.store, &fence).await {
                    *lease = Some(fence);
                    if pause(shared, STORE_WAIT).await {
                        return;
                    }
                }
                continue;
            }
            tokio::select! {
                _ = lane.wake.notified() => continue,
                _ = shared.draining.cancelled() => return,
                _ = tokio::time::sleep(idle) => {
                    if shared.pool.retire(lane) {
                        tracing::debug!(session = %lane.key, "idle session lane retired");
                        crate::gateway::sandbox::session_ended(shared, &lane.key);
                        return;
                    }
                    continue;
                }
            }
        };
        if lease.is_none() {
            match shared.cluster.take_session(&shared.store, &lane.key).await {
                Ok(Some(fence)) => *lease = Some(fence),
                Err(e) => {
                    // The store cannot tell (it may even have given the lease): keep trying.
                    tracing::warn!(session = %lane.key, error = %e, "cannot take the session's lease; retrying");
                    if pause(shared, STORE_WAIT).await {
                        return;
                    }
                    continue;
                }
                Ok(None) => {
                    // Another live process runs this session and takes its queued messages.
                    if shared.pool.retire(lane) {
                        tracing::debug!(session = %lane.key, "another process runs this session");
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            }
        }
        // The person's own slot first (they cannot hold every global slot with many threads),
        // then one of the daemon's.
        let own = tokio::select! {
            biased;
            _ = shared.draining.cancelled() => return,
            p = shared.shares.turn_slot(&person) => p,
        };
        let permit = tokio::select! {
            biased;
            _ = shared.draining.cancelled() => return,
            p = shared.pool.turns.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
        };
        if shared.draining.is_cancelled() {
            return;
        }
        let limit = match shared.config().gateway.busy_mode {
            BusyMode::Queue => 1,
            BusyMode::Interrupt => MAX_BATCH,
        };
        let (rows, control) = {
            let mut state = lane.state.lock().await;
            let rows = match shared.store.inbox_queued_for(&lane.key, limit).await {
                Ok(rows) => one_author(rows),
                Err(e) => {
                    tracing::error!(session = %lane.key, error = %e, "cannot read the inbox");
                    continue;
                }
            };
            let control = TurnControl {
                interrupt: tokio_util::sync::CancellationToken::new(),
                stop: shared.hard_stop.child_token(),
            };
            state.max_included = rows.last().map_or(0, |r| r.id);
            state.requester = rows.last().map(|r| r.message.sender.id.clone());
            state.control = Some(control.clone());
            (rows, control)
        };
        let mut retry_in = None;
        if let (Some(last), Some(fence)) = (rows.last().map(|r| r.id), lease.clone()) {
            let span = tracing::info_span!("turn", session = %lane.key, inbox = last);
            let turn = run_turn(shared, &lane.key, &lane.outage, rows, control);
            retry_in = fence::scope(fence, turn.instrument(span)).await;
        }
        if retry_in.is_some()
            && let Some(fence) = lease.as_ref()
            && shared.cluster.holds(&shared.store, fence).await == Some(false)
        {
            // Taken over while this process was paused or cut off: its writes were refused,
            // and the session's messages are the new holder's.
            tracing::warn!(session = %lane.key, "the session was taken over by another process; this lane leaves it");
            *lease = None;
            lane.state.lock().await.control = None;
            drop((permit, own));
            if shared.pool.retire(lane) {
                return;
            }
            continue;
        }
        lane.state.lock().await.control = None;
        drop((permit, own));
        if let Some(wait) = retry_in {
            // The provider is down: wait (without holding a turn slot), then try again.
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = shared.draining.cancelled() => return,
            }
        }
    }
}
