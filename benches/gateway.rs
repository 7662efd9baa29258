//! The gateway benchmark (issue 12): the real release binary against the fakes of
//! `tests/support`, side by side with the floor the fakes impose (a minimal echo gateway) and,
//! with `--compare`, NousResearch's hermes-agent driven through the same fakes in the same run.
//!
//! ```sh
//! cargo bench --bench gateway                 # full run, ~10 minutes
//! cargo bench --bench gateway -- --quick      # smaller scenarios, ~3 minutes
//! cargo bench --bench gateway -- --compare    # also hermes-agent (benches/hermes-agent/setup)
//! cargo bench --bench gateway -- --defaults   # e2e with hermes's default configuration
//! cargo bench --bench gateway -- --soak 60    # an hour at 50 msg/s: RSS and fds over time
//! cargo bench --bench gateway -- --only e2e,startup --json /tmp/out.json
//! ```
//!
//! Prints a table and writes JSON (`target/bench/gateway.json` unless `--json PATH`). Sections:
//! `e2e` (throughput, latency, overhead, CPU per message, stranded/duplicated messages),
//! `startup`, `idle` (RSS), `sessions` (RSS after many sessions and after eviction), `store`
//! (inbox/outbox writes), `search` (session_search over 1,000,000 messages), `prompt`.
//! Not a test: it asserts nothing but reports every stranded or duplicated message.

#[path = "../tests/support/mod.rs"]
mod support;

#[allow(dead_code)]
#[path = "session_search.rs"]
mod session_search;

#[path = "gateway/footprint.rs"]
mod footprint;
#[path = "gateway/load.rs"]
mod load;
#[path = "gateway/prompt.rs"]
mod prompt;
#[path = "gateway/report.rs"]
mod report;
#[path = "gateway/soak.rs"]
mod soak;
#[path = "gateway/storage.rs"]
mod storage;
#[path = "gateway/sut.rs"]
mod sut;

use std::time::Duration;

use load::Spec;
use report::Report;
use sut::Target;

/// Command-line options (after `--`).
#[derive(Debug, Clone)]
pub struct Options {
    pub quick: bool,
    pub compare: bool,
    /// hermes with its default configuration in `e2e` (not the raised caps).
    pub defaults: bool,
    /// `--soak MINUTES`: only the soak, this long.
    pub soak: Option<f64>,
    pub json: Option<String>,
    pub only: Option<Vec<String>>,
    pub agent_venv: String,
}

impl Options {
    fn parse() -> Options {
        let mut o = Options {
            quick: false,
            compare: false,
            defaults: false,
            soak: None,
            json: None,
            only: None,
            agent_venv: std::env::var("HERMES_AGENT_VENV")
                .unwrap_or_else(|_| "/opt/hermes-agent-venv".into()),
        };
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--quick" => o.quick = true,
                "--compare" => o.compare = true,
                "--defaults" => o.defaults = true,
                "--soak" => o.soak = args.next().and_then(|m| m.parse().ok()),
                "--json" => o.json = args.next(),
                "--only" => {
                    o.only = args
                        .next()
                        .map(|s| s.split(',').map(str::to_owned).collect())
                }
                "--agent-venv" => o.agent_venv = args.next().unwrap_or_default(),
                // cargo bench passes --bench to harness-less benches.
                "--bench" => {}
                other => eprintln!("ignoring unknown argument {other:?}"),
            }
        }
        o
    }

    fn wants(&self, section: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|l| l.iter().any(|s| s == section))
    }
}

/// The load scenarios: (users, LLM latency ms, messages per user full / quick).
const SCENARIOS: [(usize, u64, usize, usize); 6] = [
    (1, 0, 300, 50),
    (1, 200, 25, 5),
    (50, 0, 40, 10),
    (50, 200, 10, 3),
    (500, 0, 6, 2),
    (500, 200, 3, 1),
];

fn spec_for(target: Target, s: (usize, u64, usize, usize), quick: bool) -> Spec {
    let (users, ms, full, short) = s;
    let mut per_user = if quick { short } else { full };
    if target == Target::Agent {
        // hermes-agent answers a few messages per second: keep its runs to about a minute.
        per_user = match users {
            1 => per_user.min(if ms == 0 { 20 } else { 5 }),
            50 => per_user.min(2),
            _ => 1,
        };
    }
    Spec {
        users,
        per_user,
        llm_delay: Duration::from_millis(ms),
    }
}

fn progress(what: &str) {
    eprintln!("[bench] {what}");
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let opts = Options::parse();
    if let Some(minutes) = opts.soak {
        progress(&format!("soak for {minutes} minutes at 50 msg/s"));
        soak::run(minutes).await;
        return;
    }
    let mut targets = vec![Target::Hermes, Target::Floor];
    let mut report = Report::new(&opts);
    if opts.compare {
        if sut::agent_available(&opts) {
            targets.push(Target::Agent);
        } else {
            let note = format!(
                "--compare: hermes-agent not installed at {} (run benches/hermes-agent/setup)",
                opts.agent_venv
            );
            eprintln!("{note}");
            report.note(note);
        }
    }
    let agent = targets.contains(&Target::Agent);
    report.note(if opts.defaults {
        "e2e: hermes with its default configuration (busy mode, caps)".to_owned()
    } else {
        "e2e: hermes with busy_mode = queue, 1024 turns, 1024 model calls".to_owned()
    });

    if opts.wants("e2e") {
        for (i, s) in SCENARIOS.iter().enumerate() {
            for &target in &targets {
                let spec = spec_for(target, *s, opts.quick);
                progress(&format!(
                    "e2e {}: {} ({} messages)",
                    target.label(),
                    spec.name(),
                    spec.total()
                ));
                let mut w = sut::world_with(spec.llm_delay, opts.defaults).await;
                let running = sut::start(target, &mut w, &opts).await;
                let timeout = Duration::from_secs(if target == Target::Agent { 240 } else { 120 });
                let base = 10_000 + 1_000 * i as i64;
                let out = load::drive(&w.tg, &spec, base, &running.pids(), timeout).await;
                drop(running);
                report.scenario(target, &spec, out);
            }
        }
    }

    if opts.wants("startup") {
        let runs = if opts.quick { 3 } else { 7 };
        progress("startup hermes");
        let s = footprint::startup(Target::Hermes, runs, &opts).await;
        report.startup(Target::Hermes, s);
        progress("startup hermes, every adapter and two MCP servers");
        report.startup_everything(
            footprint::startup_everything(if opts.quick { 2 } else { 5 }).await,
        );
        if agent {
            progress("startup hermes-agent");
            let s = footprint::startup(Target::Agent, if opts.quick { 1 } else { 3 }, &opts).await;
            report.startup(Target::Agent, s);
        }
    }

    if opts.wants("idle") {
        let settle = Duration::from_secs(if opts.quick { 2 } else { 5 });
        progress("idle RSS, Telegram only");
        let kib = footprint::idle_telegram(Target::Hermes, settle, &opts).await;
        report.idle(Target::Hermes, kib);
        progress("idle RSS, every adapter");
        report.idle_all(footprint::idle_all_adapters(settle).await);
        progress("idle RSS, Matrix only");
        report.idle_matrix(footprint::idle_matrix(settle).await);
        if agent {
            progress("idle RSS hermes-agent, Telegram only");
            let kib = footprint::idle_telegram(Target::Agent, settle * 2, &opts).await;
            report.idle(Target::Agent, kib);
        }
    }

    if opts.wants("sessions") {
        let n = if opts.quick { 2_000 } else { 10_000 };
        progress(&format!(
            "RSS after {n} sessions and after eviction (~2 minutes)"
        ));
        report.sessions(footprint::sessions(n, &opts).await);
    }

    if opts.wants("store") {
        let n = if opts.quick { 5_000 } else { 20_000 };
        progress(&format!("store writes ({n} each)"));
        report.writes(storage::writes(n, 50).await);
    }

    if opts.wants("search") {
        let n = session_search::messages_from_env(if opts.quick { 100_000 } else { 1_000_000 });
        progress(&format!("session_search over {n} messages"));
        report.search(session_search::run(n).await);
    }

    if opts.wants("prompt") {
        for &target in targets.iter().filter(|t| **t != Target::Floor) {
            progress(&format!("prompt size {}", target.label()));
            match prompt::conversation(target, &opts).await {
                Ok(c) => report.prompt(target, c),
                Err(e) => report.note(e),
            }
        }
    }

    report.finish(&opts);
}
