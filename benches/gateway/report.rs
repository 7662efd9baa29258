//! The bench's results: collected as rows (one metric, a value per system), printed as a
//! Markdown table with hermes's figures as ratios to hermes-agent's, and written as JSON with
//! the machine it ran on.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::footprint::{Sessions, Startup};
use crate::load::{Outcome, Spec, quantile_ms};
use crate::prompt::Conversation;
use crate::session_search::Summary;
use crate::storage::Writes;
use crate::sut::Target;

/// Whether a larger value is better (throughput) or worse (latency, memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

#[derive(Clone, Debug)]
pub struct Row {
    pub metric: String,
    pub unit: &'static str,
    pub better: Better,
    pub hermes: Option<f64>,
    pub floor: Option<f64>,
    pub agent: Option<f64>,
}

pub struct Report {
    rows: Vec<Row>,
    scenarios: Vec<Value>,
    notes: Vec<String>,
    extra: serde_json::Map<String, Value>,
    stranded: usize,
    duplicated: usize,
    started: std::time::SystemTime,
}

fn set(row: &mut Row, target: Target, v: f64) {
    match target {
        Target::Hermes => row.hermes = Some(v),
        Target::Floor => row.floor = Some(v),
        Target::Agent => row.agent = Some(v),
    }
}

impl Report {
    pub fn new(_opts: &crate::Options) -> Report {
        Report {
            rows: Vec::new(),
            scenarios: Vec::new(),
            notes: Vec::new(),
            extra: serde_json::Map::new(),
            stranded: 0,
            duplicated: 0,
            started: std::time::SystemTime::now(),
        }
    }

    pub fn note(&mut self, s: String) {
        self.notes.push(s);
    }

    fn put(&mut self, metric: &str, unit: &'static str, better: Better, target: Target, v: f64) {
        if !v.is_finite() {
            return;
        }
        if let Some(row) = self.rows.iter_mut().find(|r| r.metric == metric) {
            set(row, target, v);
            return;
        }
        let mut row = Row {
            metric: metric.to_owned(),
            unit,
            better,
            hermes: None,
            floor: None,
            agent: None,
        };
        set(&mut row, target, v);
        self.rows.push(row);
    }

    pub fn scenario(&mut self, target: Target, spec: &Spec, out: Outcome) {
        let name = spec.name();
        let delay_ms = spec.llm_delay.as_secs_f64() * 1e3;
        let overhead: Vec<std::time::Duration> = out
            .latencies
            .iter()
            .map(|l| l.saturating_sub(spec.llm_delay))
            .collect();
        let (p50, p95, p99) = (
            out.quantile_ms(0.5),
            out.quantile_ms(0.95),
            out.quantile_ms(0.99),
        );
        let (o50, o99) = (quantile_ms(&overhead, 0.5), quantile_ms(&overhead, 0.99));
        eprintln!(
            "[bench]   {}: {} of {} answered in {:.2} s, {:.1} msg/s, p50 {p50:.1} ms, p99 {p99:.1} ms, \
             CPU/msg {:?} ms, {} stranded, {} duplicated, {} other replies",
            target.label(),
            out.answered,
            out.sent,
            out.elapsed.as_secs_f64(),
            out.throughput(),
            out.cpu_ms_per_message(),
            out.stranded,
            out.duplicates,
            out.other_replies
        );
        use Better::*;
        self.put(
            &format!("{name}: throughput"),
            "msg/s",
            Higher,
            target,
            out.throughput(),
        );
        self.put(&format!("{name}: latency p50"), "ms", Lower, target, p50);
        self.put(&format!("{name}: latency p95"), "ms", Lower, target, p95);
        self.put(&format!("{name}: latency p99"), "ms", Lower, target, p99);
        if delay_ms > 0.0 {
            self.put(&format!("{name}: overhead p50"), "ms", Lower, target, o50);
            self.put(&format!("{name}: overhead p99"), "ms", Lower, target, o99);
        }
        if let Some(cpu) = out.cpu_ms_per_message() {
            self.put(
                &format!("{name}: CPU per message"),
                "ms",
                Lower,
                target,
                cpu,
            );
        }
        self.put(
            &format!("{name}: stranded + duplicated"),
            "msgs",
            Lower,
            target,
            (out.stranded + out.duplicates) as f64,
        );
        self.stranded += out.stranded;
        self.duplicated += out.duplicates;
        if out.stranded + out.duplicates > 0 {
            self.notes.push(format!(
                "{} / {name}: {} stranded, {} duplicated of {} messages",
                target.label(),
                out.stranded,
                out.duplicates,
                out.sent
            ));
        }
        self.scenarios.push(json!({
            "target": target.label(), "users": spec.users, "per_user": spec.per_user,
            "llm_delay_ms": delay_ms, "sent": out.sent, "answered": out.answered,
            "stranded": out.stranded, "duplicated": out.duplicates,
            "other_replies": out.other_replies, "elapsed_s": out.elapsed.as_secs_f64(),
            "throughput_msg_s": out.throughput(), "latency_ms": {"p50": p50, "p95": p95, "p99": p99},
            "overhead_ms": {"p50": o50, "p99": o99}, "cpu_s": out.cpu_secs,
            "cpu_ms_per_message": out.cpu_ms_per_message(),
        }));
    }

    pub fn startup(&mut self, target: Target, s: Startup) {
        self.extra.insert(
            format!("startup_{}", target.label()),
            json!({"runs": s.runs, "first_poll_ms": s.first_poll_ms, "ready_ms": s.ready_ms}),
        );
        self.put(
            "startup: spawn to first poll",
            "ms",
            Better::Lower,
            target,
            s.first_poll_ms,
        );
        if let Some(r) = s.ready_ms {
            self.put(
                "startup: spawn to /readyz 200",
                "ms",
                Better::Lower,
                target,
                r,
            );
        }
    }

    pub fn idle(&mut self, target: Target, kib: u64) {
        let mib = kib as f64 / 1024.0;
        self.put("idle RSS, Telegram only", "MiB", Better::Lower, target, mib);
    }

    pub fn idle_all(&mut self, r: Result<u64, String>) {
        match r {
            Ok(kib) => self.put(
                "idle RSS, Telegram+Discord+Slack+Email",
                "MiB",
                Better::Lower,
                Target::Hermes,
                kib as f64 / 1024.0,
            ),
            Err(e) => self.notes.push(format!("idle RSS with every adapter: {e}")),
        }
    }

    pub fn idle_matrix(&mut self, r: Result<u64, String>) {
        match r {
            Ok(kib) => self.put(
                "idle RSS, Matrix only",
                "MiB",
                Better::Lower,
                Target::Hermes,
                kib as f64 / 1024.0,
            ),
            Err(e) => self.notes.push(format!("idle RSS with Matrix: {e}")),
        }
    }

    pub fn startup_everything(&mut self, r: Result<Startup, String>) {
        match r {
            Ok(s) => {
                self.extra.insert(
                    "startup_everything".into(),
                    json!({"runs": s.runs, "first_poll_ms": s.first_poll_ms}),
                );
                self.put(
                    "startup: first poll, every adapter + 2 MCP servers",
                    "ms",
                    Better::Lower,
                    Target::Hermes,
                    s.first_poll_ms,
                );
            }
            Err(e) => self
                .notes
                .push(format!("startup with every adapter and MCP servers: {e}")),
        }
    }

    pub fn sessions(&mut self, s: Sessions) {
        let n = s.n;
        let t = Target::Hermes;
        self.put(
            &format!("RSS idle before {n} sessions"),
            "MiB",
            Better::Lower,
            t,
            s.idle_kib as f64 / 1024.0,
        );
        self.put(
            &format!("RSS with {n} sessions"),
            "MiB",
            Better::Lower,
            t,
            s.loaded_kib as f64 / 1024.0,
        );
        self.put(
            &format!("RSS after evicting {n} sessions"),
            "MiB",
            Better::Lower,
            t,
            s.evicted_kib as f64 / 1024.0,
        );
        self.put(
            "RSS per session",
            "KiB",
            Better::Lower,
            t,
            s.per_session_kib,
        );
        if s.answered < n {
            self.notes
                .push(format!("sessions: only {} of {n} answered", s.answered));
        }
        self.extra.insert(
            "sessions".into(),
            json!({"n": n, "answered": s.answered, "fill_s": s.fill_secs,
                   "idle_kib": s.idle_kib, "loaded_kib": s.loaded_kib, "evicted_kib": s.evicted_kib}),
        );
    }

    pub fn writes(&mut self, w: Writes) {
        self.extra.insert(
            "store_writes".into(),
            json!({"n": w.n, "tasks": w.tasks, "inbox_seq": w.inbox_seq,
                   "inbox_concurrent": w.inbox_concurrent, "outbox_seq": w.outbox_seq,
                   "outbox_concurrent": w.outbox_concurrent}),
        );
        let t = Target::Hermes;
        self.put(
            "store: inbox_insert, 1 writer",
            "writes/s",
            Better::Higher,
            t,
            w.inbox_seq,
        );
        let c = format!("{} writers", w.tasks);
        self.put(
            &format!("store: inbox_insert, {c}"),
            "writes/s",
            Better::Higher,
            t,
            w.inbox_concurrent,
        );
        self.put(
            "store: outbox_enqueue, 1 writer",
            "writes/s",
            Better::Higher,
            t,
            w.outbox_seq,
        );
        self.put(
            &format!("store: outbox_enqueue, {c}"),
            "writes/s",
            Better::Higher,
            t,
            w.outbox_concurrent,
        );
    }

    pub fn search(&mut self, s: Summary) {
        let m = s.messages;
        let t = Target::Hermes;
        self.put(
            &format!("session_search over {m} msgs: p50"),
            "ms",
            Better::Lower,
            t,
            s.p50_ms,
        );
        self.put(
            &format!("session_search over {m} msgs: p99"),
            "ms",
            Better::Lower,
            t,
            s.p99_ms,
        );
        self.extra.insert(
            "search".into(),
            json!({"messages": m, "searches": s.searches, "p50_ms": s.p50_ms, "p99_ms": s.p99_ms,
                   "max_ms": s.max_ms, "db_mib": s.db_mib, "fill": s.fill}),
        );
    }

    pub fn prompt(&mut self, target: Target, c: Conversation) {
        let Some(first) = c.turns.first() else { return };
        let b = Better::Lower;
        self.put(
            "prompt: first turn request",
            "bytes",
            b,
            target,
            first.main_bytes as f64,
        );
        self.put(
            "prompt: first turn (bytes/4)",
            "tokens",
            b,
            target,
            first.est_tokens() as f64,
        );
        self.put(
            "prompt: system prompt",
            "bytes",
            b,
            target,
            first.system_bytes as f64,
        );
        self.put(
            "prompt: tools offered",
            "tools",
            b,
            target,
            first.tools as f64,
        );
        let n = c.turns.len() as f64;
        let all: usize = c.turns.iter().map(|t| t.all_bytes).sum();
        let calls: usize = c.turns.iter().map(|t| t.calls).sum();
        self.put(
            "prompt: bytes per turn (all calls)",
            "bytes",
            b,
            target,
            all as f64 / n,
        );
        self.put(
            "prompt: LLM calls per turn",
            "calls",
            b,
            target,
            calls as f64 / n,
        );
        let turns: Vec<Value> = c
            .turns
            .iter()
            .map(|t| {
                json!({"calls": t.calls, "main_bytes": t.main_bytes, "all_bytes": t.all_bytes,
                       "tools": t.tools, "system_bytes": t.system_bytes, "messages": t.messages})
            })
            .collect();
        self.extra
            .insert(format!("prompt_{}", target.label()), json!(turns));
    }

    fn table(&self) -> String {
        let has_agent = self.rows.iter().any(|r| r.agent.is_some());
        let fmt = |v: Option<f64>| match v {
            None => "—".to_owned(),
            Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
            Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
            Some(v) => format!("{v:.2}"),
        };
        let mut out = String::from("| metric | unit | hermes | floor (echo) |");
        if has_agent {
            out.push_str(" hermes-agent | hermes vs agent |");
        }
        out.push_str("\n|---|---|---:|---:|");
        if has_agent {
            out.push_str("---:|---:|");
        }
        out.push('\n');
        for r in &self.rows {
            out.push_str(&format!(
                "| {} | {} | {} | {} |",
                r.metric,
                r.unit,
                fmt(r.hermes),
                fmt(r.floor)
            ));
            if has_agent {
                let ratio = match (r.hermes, r.agent) {
                    (Some(h), Some(a)) if h > 0.0 && a > 0.0 => match r.better {
                        Better::Higher => format!("{:.1}× more", h / a),
                        Better::Lower => format!("{:.1}× less", a / h),
                    },
                    _ => "—".to_owned(),
                };
                out.push_str(&format!(" {} | {ratio} |", fmt(r.agent)));
            }
            out.push('\n');
        }
        out
    }

    pub fn finish(self, opts: &crate::Options) {
        let machine = machine();
        println!("\n## hermes gateway benchmark\n");
        println!("machine: {}", machine["summary"].as_str().unwrap_or(""));
        println!("{}", self.table());
        println!(
            "stranded messages: {}, duplicated messages: {} (over every scenario and system)",
            self.stranded, self.duplicated
        );
        for n in &self.notes {
            println!("note: {n}");
        }
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                json!({"metric": r.metric, "unit": r.unit,
                       "better": if r.better == Better::Higher { "higher" } else { "lower" },
                       "hermes": r.hermes, "floor": r.floor, "hermes_agent": r.agent})
            })
            .collect();
        let started = self
            .started
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let doc = json!({
            "started_unix": started, "quick": opts.quick, "compare": opts.compare,
            "machine": machine, "rows": rows, "scenarios": self.scenarios,
            "stranded": self.stranded, "duplicated": self.duplicated,
            "details": self.extra, "notes": self.notes,
        });
        let path = opts
            .json
            .clone()
            .map(PathBuf::from)
            .unwrap_or_else(|| out_dir().join("gateway.json"));
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        match std::fs::write(&path, text) {
            Ok(()) => println!("JSON written to {}", path.display()),
            Err(e) => eprintln!("could not write {}: {e}", path.display()),
        }
    }
}

/// `target/bench` (or `$CARGO_TARGET_DIR/bench`): the JSON and hermes-agent's log.
pub fn out_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
        .join("bench")
}

/// nproc, CPU model and memory of this machine.
fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let summary = format!(
        "{nproc} CPUs ({model}), {:.1} GiB RAM",
        mem_kib as f64 / (1 << 20) as f64
    );
    json!({"nproc": nproc, "cpu": model, "mem_kib": mem_kib, "summary": summary})
}
