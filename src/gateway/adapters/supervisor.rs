//! Adapter supervision: run each listener, restart it with backoff when it fails, and restart it
//! when it is connected but silent for too long (a listener that "looks healthy" but receives
//! nothing is the most common failure users report). An adapter whose listener is in parts
//! (Discord shards) has one supervised task per part.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use hermes_adapter::{Adapter, AdapterError, InboundSink, Platform};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::health::{HealthBoard, Listener, ListenerState};
use super::receive_lease::{Leaving, ReceiveGate};
use crate::gateway::Shared;

/// Restart timing.
#[derive(Debug, Clone, Copy)]
pub struct SupervisorPolicy {
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// After another client took the updates (Telegram 409).
    pub conflict_backoff: Duration,
    /// After the platform rejected the credentials.
    pub unauthorized_backoff: Duration,
    /// A listener without a heartbeat for this long is restarted.
    pub silence_limit: Duration,
    /// A run that lasted this long resets the backoff.
    pub stable_after: Duration,
}

impl Default for SupervisorPolicy {
    fn default() -> Self {
        SupervisorPolicy {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            conflict_backoff: Duration::from_secs(35),
            unauthorized_backoff: Duration::from_secs(300),
            silence_limit: Duration::from_secs(150),
            stable_after: Duration::from_secs(60),
        }
    }
}

/// The running supervisors, one per adapter; each can be stopped on its own (reload).
pub(crate) struct Supervisors {
    policy: SupervisorPolicy,
    running: HashMap<Platform, (CancellationToken, Vec<JoinHandle<()>>)>,
}

impl Supervisors {
    pub fn new(policy: SupervisorPolicy) -> Self {
        Supervisors {
            policy,
            running: HashMap::new(),
        }
    }

    /// Supervise `adapter` (each part of its listener) until it is stopped or intake ends.
    pub fn start(&mut self, shared: &Arc<Shared>, adapter: Arc<dyn Adapter>) {
        let platform = adapter.platform();
        let token = shared.intake.child_token();
        let parts = adapter.receive_parts().max(1);
        let tasks = (0..parts)
            .map(|part| {
                let listener = Listener {
                    platform,
                    part,
                    parts,
                };
                let gate = ReceiveGate::new(shared, listener, adapter.receives_alone());
                let run = Run {
                    adapter: adapter.clone(),
                    listener,
                    sink: shared.sink_for(listener),
                    health: shared.health.clone(),
                    policy: self.policy,
                };
                tokio::spawn(supervise_leased(run, gate, token.clone()))
            })
            .collect();
        self.running.insert(platform, (token, tasks));
    }

    /// Stop the listener of `platform` and wait for it.
    pub async fn stop(&mut self, platform: Platform) {
        if let Some((token, tasks)) = self.running.remove(&platform) {
            token.cancel();
            for task in tasks {
                let _ = task.await;
            }
        }
    }

    /// Wait for every supervisor (after intake was cancelled).
    pub async fn join_all(&mut self) {
        for (_, (_, tasks)) in self.running.drain() {
            for task in tasks {
                let _ = task.await;
            }
        }
    }
}

/// How long a cancelled listener has to return before it is dropped.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// What one supervised listener runs with.
#[derive(Clone)]
pub struct Run {
    pub adapter: Arc<dyn Adapter>,
    pub listener: Listener,
    pub sink: Arc<dyn InboundSink>,
    pub health: Arc<HealthBoard>,
    pub policy: SupervisorPolicy,
}

/// Supervise `run`'s listener, holding its receiving lease first where `gate` says one is
/// needed (one process of a deployment receives; the others stand by for its lease).
async fn supervise_leased(run: Run, gate: Option<ReceiveGate>, shutdown: CancellationToken) {
    let Some(gate) = gate else {
        return supervise(run, shutdown).await;
    };
    while let Some(lease) = gate.acquire(&run.health, &shutdown).await {
        let run_token = shutdown.child_token();
        let listening = supervise(run.clone(), run_token.clone());
        tokio::pin!(listening);
        tokio::select! {
            _ = &mut listening => {
                gate.release(lease).await;
                return;
            }
            leaving = gate.leaving(lease) => {
                // Stop receiving, then stand by again: taken over while this process was
                // paused or cut off, or passed to a process that holds fewer parts.
                run_token.cancel();
                listening.await;
                if let Leaving::Surplus = leaving {
                    gate.release(lease).await;
                }
            }
        }
    }
}

/// Run a listener until `shutdown`, restarting it as needed.
pub async fn supervise(run: Run, shutdown: CancellationToken) {
    let Run {
        adapter,
        listener,
        sink,
        health,
        policy,
    } = run;
    let mut backoff = policy.initial_backoff;
    while !shutdown.is_cancelled() {
        health.set_state(listener, ListenerState::Starting, None);
        let run_token = shutdown.child_token();
        let watchdog = tokio::spawn(watch_silence(
            listener,
            health.clone(),
            policy.silence_limit,
            run_token.clone(),
        ));
        let started = Instant::now();
        let run =
            AssertUnwindSafe(adapter.run_part(listener.part, sink.clone(), run_token.clone()))
                .catch_unwind();
        tokio::pin!(run);
        // A listener stuck on a deaf connection may not notice it was cancelled: after a grace
        // period it is dropped (with its connections) rather than waited for.
        let abandoned = async {
            run_token.cancelled().await;
            tokio::time::sleep(STOP_GRACE).await;
        };
        let finished = tokio::select! {
            r = &mut run => Some(r),
            _ = abandoned => None,
        };
        let Some(finished) = finished else {
            tracing::warn!(%listener, grace = ?STOP_GRACE, "listener did not stop when asked; dropped");
            watchdog.abort();
            if shutdown.is_cancelled() {
                break;
            }
            health.set_state(
                listener,
                ListenerState::Restarting,
                Some("listener went silent".to_owned()),
            );
            tokio::select! {
                _ = tokio::time::sleep(policy.initial_backoff) => {}
                _ = shutdown.cancelled() => break,
            }
            continue;
        };
        // A panic in the listener is a failure like any other: logged, counted, restarted.
        let result = match finished {
            Ok(result) => result,
            Err(panic) => {
                crate::metrics::metrics().record_panic("adapter");
                Err(AdapterError::Fatal(format!(
                    "the listener panicked: {}",
                    crate::gateway::panic_message(&panic)
                )))
            }
        };
        watchdog.abort();
        if shutdown.is_cancelled() {
            break;
        }
        if started.elapsed() >= policy.stable_after {
            backoff = policy.initial_backoff;
        }
        let (delay, error) = match result {
            Ok(()) if run_token.is_cancelled() => {
                tracing::warn!(%listener, silent_for = ?policy.silence_limit, "listener went silent; restarting it");
                (
                    policy.initial_backoff,
                    Some("listener went silent".to_owned()),
                )
            }
            Ok(()) => {
                tracing::warn!(%listener, "listener stopped by itself; restarting it");
                (backoff, Some("listener stopped".to_owned()))
            }
            Err(AdapterError::Conflict(msg)) => {
                tracing::error!(%listener, "another process is receiving this bot's updates (is a second hermes running with the same token?): {msg}; retrying in {:?}", policy.conflict_backoff);
                (policy.conflict_backoff, Some(format!("conflict: {msg}")))
            }
            Err(AdapterError::Unauthorized(msg)) => {
                tracing::error!(%listener, "the platform rejected the credentials ({msg}); check the token; retrying in {:?}", policy.unauthorized_backoff);
                (
                    policy.unauthorized_backoff,
                    Some(format!("unauthorized: {msg}")),
                )
            }
            Err(e) => {
                tracing::warn!(%listener, error = %e, retry_in = ?backoff, "listener failed; restarting it");
                (backoff, Some(e.to_string()))
            }
        };
        health.set_state(listener, ListenerState::Restarting, error);
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = shutdown.cancelled() => break,
        }
        backoff = (backoff * 2).min(policy.max_backoff);
    }
    health.set_state(listener, ListenerState::Stopped, None);
}

async fn watch_silence(
    listener: Listener,
    health: Arc<HealthBoard>,
    limit: Duration,
    run: CancellationToken,
) {
    let tick = (limit / 4).max(Duration::from_millis(50));
    loop {
        tokio::time::sleep(tick).await;
        if health.silence(listener).is_some_and(|s| s > limit) {
            run.cancel();
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use async_trait::async_trait;
    use hermes_adapter::{
        Capabilities, Delivery, LengthUnit, Message, Outbound, Platform, SendError, SentId,
        SinkError,
    };

    use super::*;

    /// Fails twice, then goes silent (never heartbeats) until cancelled.
    struct Flaky {
        runs: AtomicU32,
    }

    #[async_trait]
    impl Adapter for Flaky {
        fn platform(&self) -> Platform {
            Platform::Telegram
        }
        fn capabilities(&self) -> Capabilities {
            Capabilities {
                max_message_len: 10,
                length_unit: LengthUnit::Chars,
                edit: false,
                typing: false,
                buttons: false,
                threads: false,
                attachments: false,
                free_edits: false,
            }
        }
        async fn run(
            &self,
            _: Arc<dyn InboundSink>,
            stop: CancellationToken,
        ) -> Result<(), AdapterError> {
            if self.runs.fetch_add(1, Ordering::SeqCst) < 2 {
                return Err(AdapterError::Transient("connection reset".into()));
            }
            stop.cancelled().await;
            Ok(())
        }
        async fn send(&self, _: &Outbound) -> Result<SentId, SendError> {
            Err(SendError::Unsupported)
        }
        async fn probe(&self) -> Result<String, AdapterError> {
            Ok(String::new())
        }
    }

    struct NullSink;

    #[async_trait]
    impl InboundSink for NullSink {
        async fn deliver(&self, _: Message) -> Result<Delivery, SinkError> {
            Ok(Delivery::Stored)
        }
        fn heartbeat(&self) {}
    }

    #[tokio::test(start_paused = true)]
    async fn failed_and_silent_listeners_are_restarted() {
        let adapter = Arc::new(Flaky {
            runs: AtomicU32::new(0),
        });
        let health = Arc::new(HealthBoard::default());
        let shutdown = CancellationToken::new();
        let policy = SupervisorPolicy {
            silence_limit: Duration::from_secs(10),
            ..SupervisorPolicy::default()
        };
        let run = Run {
            adapter: adapter.clone(),
            listener: Listener::whole(Platform::Telegram),
            sink: Arc::new(NullSink),
            health: health.clone(),
            policy,
        };
        let task = tokio::spawn(supervise(run, shutdown.clone()));
        tokio::time::sleep(Duration::from_secs(40)).await;
        // Two failures, then at least one silent run that the watchdog ended.
        assert!(
            adapter.runs.load(Ordering::SeqCst) >= 4,
            "runs: {}",
            adapter.runs.load(Ordering::SeqCst)
        );
        let (_, h) = health.snapshot().remove(0);
        assert!(h.restarts >= 3);
        shutdown.cancel();
        task.await.unwrap();
        assert_eq!(health.snapshot()[0].1.state, ListenerState::Stopped);
    }
}
