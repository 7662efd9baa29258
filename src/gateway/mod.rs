//! The daemon: adapters in, agent turns, replies out.
//!
//! ```text
//! adapter ─deliver─> inbox ─router─> (authz, commands) ─> session lane ─> agent turn
//!                                                                            │
//! adapter <─send── outbox pump <── outbox <──────── commit (answer + replies + inbox done)
//! ```
//!
//! Tasks: one supervisor per adapter, the router, one lane per active session (created on
//! demand, dropped when idle), and the outbox pump. Shutdown stops intake first, lets running
//! turns finish within the grace period, flushes due replies, and leaves everything else stored
//! for the next start.

mod authz;
pub mod chunk;
mod commands;
mod cron_builtin;
mod cron_run;
mod delivery;
mod health;
mod interaction;
mod lane;
mod outbox_pump;
mod resets;
mod reviews;
mod router;
mod scheduler;
mod session_pool;
mod sink;
mod skills_chat;
mod stream_view;
mod supervisor;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hermes_adapter::{Adapter, InboundSink, Platform};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use authz::Authorizer;
pub use health::{AdapterHealth, HealthBoard, ListenerState};
pub use supervisor::SupervisorPolicy;

use crate::agent::Agent;
use crate::config::Config;
use crate::policy::{ApprovalBook, Book};
use crate::store::Store;
use session_pool::SessionPool;

/// State shared by the gateway's tasks.
pub(crate) struct Shared {
    pub config: Config,
    pub store: Store,
    pub agent: Agent,
    pub adapters: HashMap<Platform, Arc<dyn Adapter>>,
    pub health: Arc<HealthBoard>,
    pub authz: Authorizer,
    pub inbox_signal: Arc<Notify>,
    pub outbox_signal: Notify,
    pub pool: SessionPool,
    /// Confirmations waiting for a user's answer.
    pub approvals: ApprovalBook,
    /// `clarify` questions waiting for a user's answer.
    pub questions: Book<interaction::Reply>,
    /// Bounds background reviews running at once.
    pub reviews: tokio::sync::Semaphore,
    pub started: Instant,
    /// Cancelled first at shutdown: adapters stop receiving, the router stops routing.
    pub intake: CancellationToken,
    /// Lanes start no new turns.
    pub draining: CancellationToken,
    /// The grace period is over: running turns are cancelled and resumed at the next start.
    pub hard_stop: CancellationToken,
}

/// The running daemon.
pub struct Gateway {
    shared: Arc<Shared>,
    policy: SupervisorPolicy,
}

impl Gateway {
    pub fn new(
        config: Config,
        store: Store,
        agent: Agent,
        adapters: Vec<Arc<dyn Adapter>>,
    ) -> Self {
        let authz = Authorizer::from_config(&config);
        for a in &adapters {
            if authz.nobody_on(a.platform()) {
                tracing::warn!(platform = %a.platform(), "nobody is allowed to use this platform yet: set {}_ALLOWED_USERS or HERMES_ALLOWED_USERS", a.platform().as_str().to_uppercase());
            }
        }
        let pool = SessionPool::new(config.gateway.max_concurrent_turns);
        let shared = Arc::new(Shared {
            adapters: adapters.into_iter().map(|a| (a.platform(), a)).collect(),
            authz,
            config,
            store,
            agent,
            health: Arc::new(HealthBoard::default()),
            inbox_signal: Arc::new(Notify::new()),
            outbox_signal: Notify::new(),
            pool,
            approvals: ApprovalBook::default(),
            questions: Book::default(),
            reviews: reviews::limit(),
            started: Instant::now(),
            intake: CancellationToken::new(),
            draining: CancellationToken::new(),
            hard_stop: CancellationToken::new(),
        });
        Gateway {
            shared,
            policy: SupervisorPolicy::default(),
        }
    }

    /// Override restart timing (tests).
    pub fn with_supervisor_policy(mut self, policy: SupervisorPolicy) -> Self {
        self.policy = policy;
        self
    }

    pub fn health(&self) -> Arc<HealthBoard> {
        self.shared.health.clone()
    }

    /// Run until `shutdown` is cancelled, then shut down gracefully.
    pub async fn run(self, shutdown: CancellationToken) {
        let shared = self.shared;
        let mut tasks = tokio::task::JoinSet::new();
        for adapter in shared.adapters.values() {
            let sink: Arc<dyn InboundSink> = Arc::new(sink::AdapterSink {
                platform: adapter.platform(),
                store: shared.store.clone(),
                inbox_signal: shared.inbox_signal.clone(),
                health: shared.health.clone(),
            });
            tasks.spawn(supervisor::supervise(
                adapter.clone(),
                sink,
                shared.health.clone(),
                self.policy,
                shared.intake.clone(),
            ));
        }
        tasks.spawn(router::run(shared.clone()));
        if shared.config.cron.enabled {
            tasks.spawn(scheduler::run(shared.clone()));
        }
        let pump_stop = CancellationToken::new();
        let pump = tokio::spawn(outbox_pump::run(shared.clone(), pump_stop.clone()));
        tracing::info!(adapters = ?shared.adapters.keys().collect::<Vec<_>>(), "gateway running");

        shutdown.cancelled().await;
        let grace = Duration::from_secs(shared.config.gateway.shutdown_grace_secs);
        let deadline = tokio::time::Instant::now() + grace;
        tracing::info!(
            ?grace,
            "shutting down: intake stopped, letting running turns finish"
        );
        shared.intake.cancel();
        shared.draining.cancel();
        if tokio::time::timeout_at(deadline, shared.pool.wait_turns_done())
            .await
            .is_err()
        {
            tracing::warn!(
                "turns still running at the end of the grace period; they resume at the next start"
            );
            shared.hard_stop.cancel();
            let _ =
                tokio::time::timeout(Duration::from_secs(3), shared.pool.wait_turns_done()).await;
        }
        while tasks.join_next().await.is_some() {}
        pump_stop.cancel();
        let _ = pump.await;
        let flush_deadline = deadline.max(tokio::time::Instant::now() + Duration::from_secs(2));
        outbox_pump::flush(&shared, flush_deadline).await;
        tracing::info!("gateway stopped");
    }
}
