//! What the daemon reports about itself: the status behind `/status`, `/readyz`, `/metrics`,
//! systemd's `STATUS=` line and `hermes status`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::gateway::Shared;
use hermes_adapter::Platform;

use crate::gateway::adapters::health::{AdapterHealth, Listener, ListenerState};
use crate::metrics::{Metrics, PlatformLabel, metrics};

/// One adapter's state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdapterStatus {
    pub platform: String,
    /// `starting`, `up`, `restarting` or `stopped`.
    pub state: String,
    /// Seconds since the last sign of life (an event, a finished poll, a heartbeat).
    pub silent_secs: u64,
    pub restarts: u32,
    pub last_error: Option<String>,
    /// Connected and heard from recently enough.
    pub ready: bool,
    /// A listener in parts (Discord shards): each part's state here, `0 up, 1 standby, …`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<String>,
}

/// The daemon's state at one moment.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatusReport {
    pub version: String,
    pub pid: u32,
    pub uptime_secs: u64,
    /// Every adapter ready.
    pub ready: bool,
    pub adapters: Vec<AdapterStatus>,
    pub active_sessions: u64,
    pub running_turns: u64,
    pub inbox_open: u64,
    pub outbox_pending: u64,
    pub outbox_failed: u64,
    /// Inbox and outbox rows set aside because they could not be read.
    #[serde(default)]
    pub poisoned: u64,
    pub store_bytes: u64,
    pub resident_bytes: u64,
    pub model: String,
    /// The last `SIGHUP` reload's error, while the old configuration stays in force.
    pub reload_error: Option<String>,
    /// Where the terminal runs (the line `hermes doctor` prints).
    #[serde(default)]
    pub sandbox: Option<String>,
    /// The sandbox's containers: `name session state`.
    #[serde(default)]
    pub containers: Vec<String>,
    /// The MCP servers: `name: state`.
    #[serde(default)]
    pub mcp: Vec<McpServerLine>,
    /// Model calls allowed and running at once, per endpoint and model.
    #[serde(default)]
    pub llm_limits: Vec<crate::llm::limit::LimitStatus>,
    /// On a shared store: every process of the deployment seen in the last ten minutes.
    #[serde(default)]
    pub deployment: Vec<ProcessLine>,
}

/// One process of a deployment on a shared store.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProcessLine {
    /// `host:pid:salt`.
    pub id: String,
    pub version: String,
    /// The process that answered this report.
    pub this: bool,
    /// Its heartbeat is current (it holds its roles and sessions).
    pub live: bool,
    /// Seconds since its last heartbeat, by the database's clock.
    pub beat_secs: u64,
    /// The roles it holds (`receive:telegram`…).
    pub roles: Vec<String>,
    /// Sessions whose turns it runs now.
    pub sessions: u64,
}

/// One MCP server in the report.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct McpServerLine {
    pub name: String,
    pub state: String,
    pub up: bool,
    pub tools: usize,
}

impl StatusReport {
    /// One line for systemd's `STATUS=`.
    pub fn one_line(&self) -> String {
        let adapters: Vec<String> = self
            .adapters
            .iter()
            .map(|a| format!("{} {}", a.platform, a.state))
            .collect();
        format!(
            "{}; {} sessions, {} turns running, {} waiting, {} replies pending",
            if adapters.is_empty() {
                "no adapters".to_owned()
            } else {
                adapters.join(", ")
            },
            self.active_sessions,
            self.running_turns,
            self.inbox_open,
            self.outbox_pending
        )
    }
}

fn state_name(state: ListenerState) -> &'static str {
    match state {
        ListenerState::Starting => "starting",
        ListenerState::Up => "up",
        ListenerState::Restarting => "restarting",
        ListenerState::Stopped => "stopped",
        ListenerState::Standby => "standby",
    }
}

/// Gather the report (and refresh the gauges with it).
pub(crate) async fn report(shared: &Shared) -> StatusReport {
    let max_silence = Duration::from_secs(shared.config().admin.ready_max_silence_secs);
    let health = shared.health.snapshot();
    let adapters: Vec<AdapterStatus> = shared
        .adapter_platforms()
        .into_iter()
        .map(|platform| {
            let parts: Vec<_> = health
                .iter()
                .filter(|(l, _)| l.platform == platform)
                .collect();
            adapter_status(platform, &parts, max_silence)
        })
        .collect();
    let store = &shared.store;
    let inbox_open = store.inbox_open_count().await.unwrap_or_default();
    let outbox = store.outbox_stats().await.unwrap_or_default();
    let poisoned = store.inbox_poisoned_count().await.unwrap_or_default() + outbox.poisoned;
    let db = shared.config().database_path();
    let store_bytes = ["", "-wal"]
        .iter()
        .filter_map(|suffix| {
            let mut p = db.clone().into_os_string();
            p.push(suffix);
            std::fs::metadata(p).ok().map(|m| m.len())
        })
        .sum();
    let (sandbox, containers) = crate::gateway::sandbox::report(shared).await;
    let report = StatusReport {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        pid: std::process::id(),
        uptime_secs: shared.started.elapsed().as_secs(),
        ready: adapters.iter().all(|a| a.ready),
        adapters,
        active_sessions: shared.pool.active_lanes() as u64,
        running_turns: shared.pool.running_turns() as u64,
        inbox_open,
        outbox_pending: outbox.pending,
        outbox_failed: outbox.failed,
        poisoned,
        store_bytes,
        resident_bytes: crate::metrics::resident_bytes(),
        model: shared.agent().model().to_owned(),
        reload_error: shared.reload_error(),
        sandbox,
        containers,
        mcp: shared
            .mcp
            .status()
            .into_iter()
            .map(|s| McpServerLine {
                up: matches!(s.state, crate::mcp::State::Ready(_)),
                state: s.state.describe(),
                name: s.name,
                tools: s.tools,
            })
            .collect(),
        llm_limits: crate::llm::limit::snapshot(),
        deployment: deployment(shared).await,
    };
    refresh_gauges(metrics(), &report);
    report
}

/// One platform's line from its listener's parts (most have one): standby only when every
/// part is, otherwise the worst state of the parts this process runs.
fn adapter_status(
    platform: Platform,
    parts: &[&(Listener, AdapterHealth)],
    max_silence: Duration,
) -> AdapterStatus {
    let silent = |h: &AdapterHealth| h.last_heartbeat.unwrap_or(h.since).elapsed();
    let ready = |h: &AdapterHealth| {
        h.state == ListenerState::Up && silent(h) <= max_silence
            || h.state == ListenerState::Standby
    };
    let running: Vec<&AdapterHealth> = parts
        .iter()
        .map(|(_, h)| h)
        .filter(|h| h.state != ListenerState::Standby)
        .collect();
    let rank = |s: ListenerState| match s {
        ListenerState::Up => 0,
        ListenerState::Standby => 1,
        ListenerState::Starting => 2,
        ListenerState::Restarting => 3,
        ListenerState::Stopped => 4,
    };
    let state = match (parts.is_empty(), running.is_empty()) {
        (true, _) => ListenerState::Starting,
        (false, true) => ListenerState::Standby,
        (false, false) => running
            .iter()
            .map(|h| h.state)
            .max_by_key(|s| rank(*s))
            .unwrap_or(ListenerState::Starting),
    };
    AdapterStatus {
        platform: platform.as_str().to_owned(),
        state: state_name(state).to_owned(),
        silent_secs: running
            .iter()
            .map(|h| silent(h))
            .max()
            .unwrap_or_default()
            .as_secs(),
        restarts: parts.iter().map(|(_, h)| h.restarts).sum(),
        last_error: running
            .iter()
            .copied()
            .chain(parts.iter().map(|(_, h)| h))
            .find_map(|h| h.last_error.clone()),
        ready: !parts.is_empty() && parts.iter().all(|(_, h)| ready(h)),
        parts: (parts.len() > 1).then(|| {
            parts
                .iter()
                .map(|(l, h)| format!("{} {}", l.part, state_name(h.state)))
                .collect::<Vec<_>>()
                .join(", ")
        }),
    }
}

/// The deployment's processes as the shared store has them (empty with one process).
async fn deployment(shared: &Shared) -> Vec<ProcessLine> {
    if !shared.cluster.shared {
        return Vec::new();
    }
    let rows = match shared.store.deployment(DEPLOYMENT_WINDOW_MS).await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the deployment from the shared store");
            return Vec::new();
        }
    };
    let newest = rows.iter().map(|r| r.beat_at).max().unwrap_or_default();
    let now = hermes_adapter::now_millis().max(newest);
    rows.into_iter()
        .map(|r| ProcessLine {
            this: r.id == shared.cluster.me.id,
            beat_secs: ((now - r.beat_at).max(0) / 1000) as u64,
            id: r.id,
            version: r.version,
            live: r.live,
            roles: r.roles,
            sessions: r.sessions,
        })
        .collect()
}

/// How far back `hermes status` lists processes (a stopped one shows as gone for this long).
const DEPLOYMENT_WINDOW_MS: i64 = 10 * 60 * 1000;

fn refresh_gauges(m: &Metrics, r: &StatusReport) {
    let set = |g: &prometheus_client::metrics::gauge::Gauge, v: u64| {
        g.set(v.min(i64::MAX as u64) as i64);
    };
    set(&m.inbox_open, r.inbox_open);
    set(&m.outbox_pending, r.outbox_pending);
    set(&m.outbox_failed, r.outbox_failed);
    set(&m.active_sessions, r.active_sessions);
    set(&m.running_turns, r.running_turns);
    set(&m.store_bytes, r.store_bytes);
    set(&m.resident_bytes, r.resident_bytes);
    set(&m.uptime_seconds, r.uptime_secs);
    for s in &r.mcp {
        let label = crate::metrics::ServerLabel {
            server: s.name.clone(),
        };
        m.mcp_server_up.get_or_create(&label).set(i64::from(s.up));
        m.mcp_server_tools
            .get_or_create(&label)
            .set(s.tools.min(i64::MAX as usize) as i64);
    }
    for l in &r.llm_limits {
        let label = crate::metrics::ModelLabel {
            endpoint: l.endpoint.clone(),
            model: l.model.clone(),
        };
        let n = |v: usize| v.min(i64::MAX as usize) as i64;
        m.llm_concurrency_limit
            .get_or_create(&label)
            .set(n(l.limit));
        m.llm_in_flight.get_or_create(&label).set(n(l.in_flight));
    }
    for a in &r.adapters {
        let Ok(platform) = a.platform.parse::<hermes_adapter::Platform>() else {
            continue;
        };
        let label = PlatformLabel {
            platform: platform.as_str(),
        };
        m.adapter_up
            .get_or_create(&label)
            .set(i64::from(a.state == "up"));
        m.adapter_restarts
            .get_or_create(&label)
            .set(i64::from(a.restarts));
    }
}
