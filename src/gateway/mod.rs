//! The daemon: adapters in, agent turns, replies out.
//!
//! ```text
//! adapter ─deliver─> inbox ─router─> (authz, commands) ─> session lane ─> agent turn
//!                                                                            │
//! adapter <─send── outbox pump <── outbox <──────── commit (answer + replies + inbox done)
//! ```
//!
//! The folders follow the flow: `intake/` (sink, router, authorization, commands), `lanes/`
//! (session pool, lane, turn, and what a turn sees and shows), `outbound/` (replies, chunking,
//! outbox pump); beside it `adapters/` (supervision, health), `cron/` (scheduled runs) and `ops/`
//! (admin endpoint, status, systemd, housekeeping, reload), and `sandbox.rs` (the terminal
//! sandbox's containers and connection beside the sessions). This file holds the hub they share:
//! [`Shared`], with what is in force ([`InForce`]) swapped whole by a reload.
//!
//! Tasks: one supervisor per adapter, the router, one lane per active session (created on
//! demand, dropped when idle), and the outbox pump. Shutdown stops intake first, lets running
//! turns finish within the grace period, flushes due replies, and leaves everything else stored
//! for the next start.

mod adapters;
mod cluster;
mod cron;
mod dashboard;
pub(crate) mod intake;
mod lanes;
mod mcp_serve;
mod ops;
mod outbound;
mod sandbox;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use hermes_adapter::{Adapter, InboundSink, Platform};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use adapters::health::{AdapterHealth, HealthBoard, ListenerState};
pub use adapters::supervisor::SupervisorPolicy;
pub use intake::authz::Authorizer;
pub use ops::admin::addr_file as admin_addr_file;
pub use ops::reload::Reloader;
pub use ops::status::{AdapterStatus, StatusReport};
pub use outbound::chunk;

use crate::agent::Agent;
use crate::config::Config;
use crate::policy::{ApprovalBook, Book};
use crate::store::Store;
use lanes::pool::SessionPool;

/// What is in force now: the configuration, the agent built from it and who may talk to it.
/// A reload replaces all three at once; a turn takes one snapshot at its start and keeps it, so
/// it never sees two configurations.
pub(crate) struct InForce {
    pub config: Arc<Config>,
    pub agent: Arc<Agent>,
    pub authz: Arc<Authorizer>,
}

/// The text of a caught panic's payload (tasks that panic are logged and restarted).
pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}

/// An answer to a `clarify` question: typed, or a choice button.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    Text(String),
    Choice(usize),
}

/// State shared by the gateway's tasks.
pub(crate) struct Shared {
    /// The configuration, agent and allowlists in force; `SIGHUP` replaces them together
    /// (running turns keep the snapshot they started with).
    in_force: RwLock<Arc<InForce>>,
    pub store: Store,
    adapters: RwLock<HashMap<Platform, Arc<dyn Adapter>>>,
    pub health: Arc<HealthBoard>,
    /// Why the last reload was refused (cleared by a successful one).
    reload_error: RwLock<Option<String>>,
    pub inbox_signal: Arc<Notify>,
    pub outbox_signal: Notify,
    pub pool: SessionPool,
    /// Confirmations waiting for a user's answer.
    pub approvals: ApprovalBook,
    /// `clarify` questions waiting for a user's answer.
    pub questions: Book<Reply>,
    /// Bounds background reviews running at once.
    pub reviews: tokio::sync::Semaphore,
    /// What each person may hold at once: turn slots, message rate, model-calling commands.
    pub shares: lanes::shares::Shares,
    pub started: Instant,
    /// Cancelled first at shutdown: adapters stop receiving, the router stops routing.
    pub intake: CancellationToken,
    /// Lanes start no new turns.
    pub draining: CancellationToken,
    /// The grace period is over: running turns are cancelled and resumed at the next start.
    pub hard_stop: CancellationToken,
    /// The MCP servers (they outlive reloads; the agents in force share them).
    pub mcp: Arc<crate::mcp::McpHub>,
    /// This process in its deployment (alone on SQLite).
    pub cluster: Arc<cluster::Cluster>,
}

/// The running daemon.
pub struct Gateway {
    shared: Arc<Shared>,
    policy: SupervisorPolicy,
    reloader: Option<Reloader>,
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
        let shares = lanes::shares::Shares::new(
            config.gateway.turns_per_person,
            config.gateway.messages_per_minute,
        );
        ops::notify::status("starting");
        let mcp = crate::mcp::McpHub::new(&config.mcp, &config.home);
        let agent = agent.with_mcp(mcp.clone());
        let cluster = Arc::new(cluster::Cluster::new(&store, config.leases.takeover_ms()));
        let shared = Arc::new(Shared {
            adapters: RwLock::new(adapters.into_iter().map(|a| (a.platform(), a)).collect()),
            in_force: RwLock::new(Arc::new(InForce {
                config: Arc::new(config),
                agent: Arc::new(agent),
                authz: Arc::new(authz),
            })),
            reload_error: RwLock::new(None),
            store,
            health: Arc::new(HealthBoard::default()),
            inbox_signal: Arc::new(Notify::new()),
            outbox_signal: Notify::new(),
            pool,
            approvals: ApprovalBook::default(),
            questions: Book::default(),
            reviews: lanes::reviews::limit(),
            shares,
            started: Instant::now(),
            intake: CancellationToken::new(),
            draining: CancellationToken::new(),
            hard_stop: CancellationToken::new(),
            mcp,
            cluster,
        });
        let policy = SupervisorPolicy {
            silence_limit: std::time::Duration::from_secs(
                shared.config().gateway.listener_silence_secs,
            ),
            ..SupervisorPolicy::default()
        };
        Gateway {
            shared,
            policy,
            reloader: None,
        }
    }

    /// Reload the configuration whenever `reloader` is signalled (`SIGHUP`).
    pub fn with_reloader(mut self, reloader: Reloader) -> Self {
        self.reloader = Some(reloader);
        self
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
        let Gateway {
            shared,
            policy,
            mut reloader,
        } = self;
        // Containers a crash left behind go before any session can make a new one.
        let _ = tokio::time::timeout(
            Duration::from_secs(10),
            sandbox::reap(&shared, "left by an earlier run"),
        )
        .await;
        // Registered before any role is taken, and beating until everything else stopped.
        cluster::join(&shared).await;
        let beat_stop = CancellationToken::new();
        let beat = tokio::spawn(cluster::run(shared.clone(), beat_stop.clone()));
        let mut supervisors = adapters::supervisor::Supervisors::new(policy);
        for adapter in shared.adapters_all() {
            supervisors.start(&shared, adapter);
        }
        let mut tasks = tokio::task::JoinSet::new();
        tasks.spawn(intake::router::run(shared.clone()));
        if shared.config().cron.enabled {
            tasks.spawn(cron::scheduler::run(shared.clone()));
        }
        tasks.spawn(ops::maintenance::run(shared.clone()));
        let admin = ops::admin::start(shared.clone(), |stop| {
            mcp_serve::route(shared.clone(), stop).merge(dashboard::routes())
        })
        .await;
        let pump_stop = CancellationToken::new();
        let pump = tokio::spawn(outbound::pump::run(shared.clone(), pump_stop.clone()));
        let watchdog = tokio::spawn(ops::notify::watchdog(shared.clone()));
        tracing::info!(adapters = ?shared.adapter_platforms(), "gateway running");
        ops::notify::ready(&ops::status::report(&shared).await.one_line());
        // The MCP servers start once everything else is up, in the background.
        shared.mcp.start();

        loop {
            let reload = async {
                match reloader.as_mut() {
                    Some(r) => r.signal.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => break,
                Some(()) = reload => {
                    if let Some(r) = &reloader {
                        ops::reload::apply(&shared, r, &mut supervisors).await;
                    }
                }
            }
        }
        ops::notify::stopping();
        let grace = Duration::from_secs(shared.config().gateway.shutdown_grace_secs);
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
        watchdog.abort();
        supervisors.join_all().await;
        while tasks.join_next().await.is_some() {}
        pump_stop.cancel();
        let _ = pump.await;
        let flush_deadline = deadline.max(tokio::time::Instant::now() + Duration::from_secs(2));
        outbound::pump::flush(&shared, flush_deadline).await;
        beat_stop.cancel();
        let _ = beat.await;
        sandbox::stop(&shared).await;
        shared.mcp.stop().await;
        if let Some(admin) = admin {
            admin.stop().await;
        }
        tracing::info!("gateway stopped");
    }
}

impl Shared {
    /// The configuration, agent and allowlists in force now, as one consistent snapshot.
    pub fn in_force(&self) -> Arc<InForce> {
        self.in_force
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Put a reloaded configuration, its agent and allowlists in force together.
    pub fn put_in_force(&self, next: InForce) {
        *self.in_force.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
    }

    /// The configuration in force now (one read; a turn keeps its own snapshot instead).
    pub fn config(&self) -> Arc<Config> {
        self.in_force().config.clone()
    }

    /// The agent in force now.
    pub fn agent(&self) -> Arc<Agent> {
        self.in_force().agent.clone()
    }

    /// Who may talk to the agent, per the configuration in force.
    pub fn authz(&self) -> Arc<Authorizer> {
        self.in_force().authz.clone()
    }

    /// The sink `listener`'s adapter delivers to: the inbox, then the router's doorbell.
    pub fn sink_for(&self, listener: adapters::health::Listener) -> Arc<dyn InboundSink> {
        Arc::new(intake::sink::AdapterSink {
            platform: listener.platform,
            listener,
            inbox: self.store.inbox(),
            settings: self.store.settings(),
            inbox_signal: self.inbox_signal.clone(),
            health: self.health.clone(),
        })
    }

    /// The running adapter of `platform`.
    pub fn adapter(&self, platform: Platform) -> Option<Arc<dyn Adapter>> {
        self.adapters
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&platform)
            .cloned()
    }

    pub fn adapters_all(&self) -> Vec<Arc<dyn Adapter>> {
        let mut all: Vec<_> = self
            .adapters
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        all.sort_by_key(|a| a.platform());
        all
    }

    pub fn adapter_platforms(&self) -> Vec<Platform> {
        self.adapters_all().iter().map(|a| a.platform()).collect()
    }

    pub fn reload_error(&self) -> Option<String> {
        self.reload_error
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
