//! The daemon's Prometheus metrics: counters bumped where things happen (one process-wide set),
//! gauges filled from the live state when `/metrics` is scraped.

use std::sync::LazyLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::conversation::Usage;

/// Label of per-platform series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PlatformLabel {
    pub platform: &'static str,
}

/// Label of per-MCP-server series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ServerLabel {
    pub server: String,
}

/// Label of per-model series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ModelLabel {
    pub endpoint: String,
    pub model: String,
}

/// Label of series split by what happened.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    pub kind: &'static str,
}

/// Every metric the daemon exports.
pub struct Metrics {
    registry: Registry,
    pub messages_in: Family<PlatformLabel, Counter>,
    pub messages_duplicate: Family<PlatformLabel, Counter>,
    pub messages_out: Family<PlatformLabel, Counter>,
    pub send_failures: Family<PlatformLabel, Counter>,
    pub turns: Family<KindLabel, Counter>,
    pub turn_seconds: Histogram,
    pub llm_tokens: Family<KindLabel, Counter>,
    pub llm_errors: Family<KindLabel, Counter>,
    /// Tasks that panicked and were restarted, by task (`lane`, `outbox`, `adapter`).
    pub task_panics: Family<KindLabel, Counter>,
    pub inbox_open: Gauge,
    pub outbox_pending: Gauge,
    pub outbox_failed: Gauge,
    pub active_sessions: Gauge,
    pub running_turns: Gauge,
    pub store_bytes: Gauge,
    pub adapter_up: Family<PlatformLabel, Gauge>,
    pub adapter_restarts: Family<PlatformLabel, Gauge>,
    pub mcp_server_up: Family<ServerLabel, Gauge>,
    pub mcp_server_tools: Family<ServerLabel, Gauge>,
    pub llm_concurrency_limit: Family<ModelLabel, Gauge>,
    pub llm_in_flight: Family<ModelLabel, Gauge>,
    pub uptime_seconds: Gauge,
    pub resident_bytes: Gauge,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// The process's metrics.
pub fn metrics() -> &'static Metrics {
    &METRICS
}

impl Metrics {
    fn new() -> Self {
        let mut r = <Registry>::with_prefix("hermes");
        let m = Metrics {
            messages_in: Family::default(),
            messages_duplicate: Family::default(),
            messages_out: Family::default(),
            send_failures: Family::default(),
            turns: Family::default(),
            // 50 ms .. ~7 min.
            turn_seconds: Histogram::new(exponential_buckets(0.05, 2.0, 14)),
            llm_tokens: Family::default(),
            llm_errors: Family::default(),
            task_panics: Family::default(),
            inbox_open: Gauge::default(),
            outbox_pending: Gauge::default(),
            outbox_failed: Gauge::default(),
            active_sessions: Gauge::default(),
            running_turns: Gauge::default(),
            store_bytes: Gauge::default(),
            adapter_up: Family::default(),
            mcp_server_up: Family::default(),
            mcp_server_tools: Family::default(),
            llm_concurrency_limit: Family::default(),
            llm_in_flight: Family::default(),
            adapter_restarts: Family::default(),
            uptime_seconds: Gauge::default(),
            resident_bytes: Gauge::default(),
            registry: Registry::default(),
        };
        r.register(
            "messages_received",
            "Inbound messages stored, per platform",
            m.messages_in.clone(),
        );
        r.register(
            "messages_duplicate",
            "Redelivered inbound messages recognised and ignored",
            m.messages_duplicate.clone(),
        );
        r.register(
            "messages_sent",
            "Replies the platform accepted, per platform",
            m.messages_out.clone(),
        );
        r.register(
            "send_failures",
            "Send attempts that failed (retried or given up), per platform",
            m.send_failures.clone(),
        );
        r.register("turns", "Agent turns by outcome", m.turns.clone());
        r.register(
            "turn_duration_seconds",
            "Wall time of agent turns",
            m.turn_seconds.clone(),
        );
        r.register(
            "llm_tokens",
            "Tokens reported by the model provider, by kind",
            m.llm_tokens.clone(),
        );
        r.register(
            "llm_errors",
            "Model calls that failed after retries, by kind",
            m.llm_errors.clone(),
        );
        r.register(
            "task_panics",
            "Tasks that panicked, were logged and restarted, by task",
            m.task_panics.clone(),
        );
        r.register(
            "inbox_open",
            "Inbound messages stored but not yet answered",
            m.inbox_open.clone(),
        );
        r.register(
            "outbox_pending",
            "Replies waiting to be sent",
            m.outbox_pending.clone(),
        );
        r.register(
            "outbox_failed",
            "Replies given up on",
            m.outbox_failed.clone(),
        );
        r.register(
            "active_sessions",
            "Sessions with a lane in memory",
            m.active_sessions.clone(),
        );
        r.register(
            "running_turns",
            "Agent turns running now",
            m.running_turns.clone(),
        );
        r.register(
            "store_bytes",
            "Size of the SQLite database and its WAL",
            m.store_bytes.clone(),
        );
        r.register(
            "adapter_up",
            "1 when the platform listener is connected",
            m.adapter_up.clone(),
        );
        r.register(
            "adapter_restarts",
            "Listener restarts since start, per platform",
            m.adapter_restarts.clone(),
        );
        r.register(
            "mcp_server_up",
            "1 when the MCP server is connected",
            m.mcp_server_up.clone(),
        );
        r.register(
            "mcp_server_tools",
            "Tools the MCP server offers (after the allow and exclude lists)",
            m.mcp_server_tools.clone(),
        );
        r.register(
            "llm_concurrency_limit",
            "Model calls allowed at once, per endpoint and model (adaptive unless fixed in the config)",
            m.llm_concurrency_limit.clone(),
        );
        r.register(
            "llm_requests_in_flight",
            "Model calls running now, per endpoint and model",
            m.llm_in_flight.clone(),
        );
        r.register(
            "uptime_seconds",
            "Seconds since the daemon started",
            m.uptime_seconds.clone(),
        );
        r.register(
            "resident_memory_bytes",
            "Resident set size of the process",
            m.resident_bytes.clone(),
        );
        Metrics { registry: r, ..m }
    }

    /// The OpenMetrics text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::error!(error = %e, "cannot encode metrics");
        }
        out
    }

    pub fn platform(family: &Family<PlatformLabel, Counter>, platform: &'static str) -> Counter {
        family.get_or_create(&PlatformLabel { platform }).clone()
    }

    /// Count a model call's usage.
    pub fn record_usage(&self, usage: &Usage) {
        for (kind, n) in [
            ("prompt", usage.prompt_tokens),
            ("completion", usage.completion_tokens),
            ("cache_read", usage.cached_tokens),
            ("cache_write", usage.cache_write_tokens),
        ] {
            if n > 0 {
                self.llm_tokens.get_or_create(&KindLabel { kind }).inc_by(n);
            }
        }
    }

    /// Count a model call that failed for good.
    pub fn record_llm_error(&self, kind: &'static str) {
        self.llm_errors.get_or_create(&KindLabel { kind }).inc();
    }

    /// Count a task that panicked (and was restarted).
    pub fn record_panic(&self, task: &'static str) {
        self.task_panics
            .get_or_create(&KindLabel { kind: task })
            .inc();
    }

    /// Count a finished turn.
    pub fn record_turn(&self, outcome: &'static str, seconds: f64) {
        self.turns.get_or_create(&KindLabel { kind: outcome }).inc();
        self.turn_seconds.observe(seconds);
    }
}

/// Resident set size of this process in bytes (Linux), 0 where unknown.
pub fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * page_size())
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as u64 } else { 4096 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_appear_in_the_exposition() {
        let m = metrics();
        Metrics::platform(&m.messages_in, "telegram").inc();
        m.record_usage(&Usage {
            prompt_tokens: 7,
            completion_tokens: 3,
            ..Usage::default()
        });
        m.record_turn("answered", 0.2);
        let text = m.render();
        assert!(
            text.contains("hermes_messages_received_total{platform=\"telegram\"}"),
            "{text}"
        );
        assert!(
            text.contains("hermes_llm_tokens_total{kind=\"prompt\"}"),
            "{text}"
        );
        assert!(
            text.contains("hermes_turn_duration_seconds_bucket"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"));
        assert!(resident_bytes() > 1_000_000);
    }
}
