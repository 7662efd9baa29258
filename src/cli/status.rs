//! `hermes status`: ask the running daemon's admin endpoint for its report and print it for a
//! human (or as JSON).

use std::process::ExitCode;
use std::time::Duration;

use crate::config::Config;
use crate::gateway::StatusReport;

/// The admin address: the one the running daemon wrote, else the configured one.
pub(super) fn admin_addr(config: &Config) -> String {
    std::fs::read_to_string(crate::gateway::admin_addr_file(&config.home))
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| config.admin.listen.clone())
}

/// Why the running daemon's report could not be had, and the exit code to end with.
pub(super) struct Unreachable {
    pub message: String,
    pub code: u8,
}

/// The running daemon's report, from its admin endpoint.
pub(super) async fn fetch(config: &Config) -> Result<StatusReport, Unreachable> {
    let addr = admin_addr(config);
    let fail = |message: String, code: u8| Unreachable { message, code };
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .no_proxy()
        .build()
        .map_err(|e| fail(e.to_string(), 1))?;
    let url = format!("http://{addr}/status");
    let mut request = client.get(&url);
    if !config.admin.token.is_empty() {
        request = request.bearer_auth(config.admin.token.expose());
    }
    match request.send().await {
        Ok(r) if r.status() == reqwest::StatusCode::UNAUTHORIZED => Err(fail(
            format!(
                "{url} wants the admin token: set HERMES_ADMIN_TOKEN (or admin.token) as the daemon has it"
            ),
            1,
        )),
        Ok(r) => r
            .json()
            .await
            .map_err(|e| fail(format!("{url} answered something unexpected: {e}"), 1)),
        Err(_) => Err(fail(
            format!(
                "the daemon is not running, or its admin endpoint is off (nothing answers at {addr}; see [admin] in the configuration)"
            ),
            3,
        )),
    }
}

pub(super) async fn status(config: &Config, json: bool) -> ExitCode {
    let report = match fetch(config).await {
        Ok(report) => report,
        Err(e) => {
            eprintln!("hermes: {}", e.message);
            return ExitCode::from(e.code);
        }
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print!("{}", render(&report));
    }
    if report.ready {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The report for a human.
pub(super) fn render(r: &StatusReport) -> String {
    let mut out = format!(
        "hermes {} (pid {}), up {}: {}\n",
        r.version,
        r.pid,
        duration(r.uptime_secs),
        if r.ready { "ready" } else { "NOT READY" }
    );
    out.push_str(&format!("model:     {}\n", r.model));
    for l in &r.llm_limits {
        out.push_str(&format!(
            "calls:     {} @ {}: {} running, {} allowed at once ({}{})\n",
            l.model,
            l.endpoint,
            l.in_flight,
            l.limit,
            if l.adaptive { "adaptive" } else { "fixed" },
            if l.cuts > 0 {
                format!(", lowered {} times by the provider's answers", l.cuts)
            } else {
                String::new()
            }
        ));
    }
    for a in &r.adapters {
        out.push_str(&format!(
            "{:<10} {} (last sign of life {} ago, {} restarts){}\n",
            format!("{}:", a.platform),
            a.state,
            duration(a.silent_secs),
            a.restarts,
            a.last_error
                .as_deref()
                .map(|e| format!("; last error: {e}"))
                .unwrap_or_default()
        ));
        if let Some(parts) = &a.parts {
            out.push_str(&format!("{:<10} parts here: {parts}\n", ""));
        }
    }
    out.push_str(&format!(
        "sessions:  {} in memory, {} turns running\nqueues:    {} messages waiting, {} replies pending, {} replies failed\n",
        r.active_sessions, r.running_turns, r.inbox_open, r.outbox_pending, r.outbox_failed
    ));
    out.push_str(&format!(
        "memory:    {:.1} MiB resident; store {:.1} MiB\n",
        r.resident_bytes as f64 / 1048576.0,
        r.store_bytes as f64 / 1048576.0
    ));
    if let Some(sandbox) = &r.sandbox {
        out.push_str(&format!(
            "terminal:  {}\n",
            sandbox.trim_start_matches("terminal sandbox: ")
        ));
    }
    for c in &r.containers {
        out.push_str(&format!("container: {c}\n"));
    }
    for s in &r.mcp {
        out.push_str(&format!("mcp:       {} {}\n", s.name, s.state));
    }
    if r.poisoned > 0 {
        out.push_str(&format!(
            "poisoned:  {} stored message(s) or reply(ies) could not be read and were set aside (the log names them)\n",
            r.poisoned
        ));
    }
    if !r.deployment.is_empty() {
        let live = r.deployment.iter().filter(|p| p.live).count();
        out.push_str(&format!(
            "deployment: {live} live process(es) on the shared store\n"
        ));
        for p in &r.deployment {
            let roles = p
                .roles
                .iter()
                .map(|l| l.strip_prefix("receive:").unwrap_or(l))
                .collect::<Vec<_>>();
            out.push_str(&format!(
                "  {}{}: {}, beat {} ago, {} session(s) running{}, v{}\n",
                p.id,
                if p.this { " (this)" } else { "" },
                if p.live { "live" } else { "GONE" },
                duration(p.beat_secs),
                p.sessions,
                if roles.is_empty() {
                    String::new()
                } else {
                    format!(", receives {}", roles.join(", "))
                },
                p.version
            ));
        }
    }
    if let Some(e) = &r.reload_error {
        out.push_str(&format!(
            "reload:    refused, old configuration in force: {e}\n"
        ));
    }
    out
}

fn duration(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min", secs / 60),
        3600..86400 => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
        _ => format!("{} d {} h", secs / 86400, secs % 86400 / 3600),
    }
}
