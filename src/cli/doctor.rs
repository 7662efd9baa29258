//! `hermes config check` and `hermes doctor`: say what works and what to fix.

use std::path::Path;
use std::process::ExitCode;

use crate::config::{Config, ProcessEnv};

pub(super) fn config_check(path: Option<&Path>) -> ExitCode {
    match Config::load(path, &ProcessEnv) {
        Ok(c) => {
            println!("Configuration OK");
            for line in summary(&c) {
                println!("  {line}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hermes: configuration error: {e}");
            ExitCode::from(2)
        }
    }
}

fn summary(c: &Config) -> Vec<String> {
    let host = reqwest::Url::parse(&c.llm.base_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    let mut lines = vec![
        format!(
            "file: {}",
            c.source
                .as_ref()
                .map_or("none (environment and defaults only)".to_owned(), |p| p
                    .display()
                    .to_string())
        ),
        format!("state directory: {}", c.home.display()),
        format!(
            "model: {} at {host} ({})",
            c.llm.model,
            if c.llm.is_configured() {
                "configured"
            } else {
                "NOT configured: set OPENAI_API_KEY"
            }
        ),
        format!(
            "access: {}",
            if c.gateway.allow_all_users {
                "everyone (allow_all_users = true)".to_owned()
            } else {
                format!("{} globally allowed user(s)", c.gateway.allowed_users.len())
            }
        ),
        format!(
            "turns: busy mode {:?}, at most {} at once, {} steps each",
            c.gateway.busy_mode, c.gateway.max_concurrent_turns, c.agent.max_iterations
        ),
        format!("web search: {}", c.tools.web_search.summary()),
        format!("market data: {}", c.tools.finance.summary()),
    ];
    let platforms = c
        .platforms()
        .into_iter()
        .map(|p| format!("{}: {}", p.platform(), p.summary()));
    lines.splice(3..3, platforms);
    lines
}

struct Report {
    failed: bool,
}

impl Report {
    fn ok(&mut self, what: &str, detail: impl std::fmt::Display) {
        println!("✓ {what}: {detail}");
    }
    fn fail(&mut self, what: &str, detail: impl std::fmt::Display) {
        self.failed = true;
        println!("✗ {what}: {detail}");
    }
}

pub(super) async fn doctor(path: Option<&Path>) -> ExitCode {
    let mut r = Report { failed: false };
    let config = match super::load(path) {
        Ok(c) => {
            r.ok(
                "configuration",
                c.source
                    .as_ref()
                    .map_or("environment only".to_owned(), |p| p.display().to_string()),
            );
            c
        }
        Err(code) => return code,
    };
    match writable(&config.home) {
        Ok(()) => r.ok("state directory writable", config.home.display()),
        Err(e) => r.fail("state directory", format!("{}: {e}", config.home.display())),
    }
    r.ok(
        "terminal",
        crate::tools::terminal::describe_fence(&crate::agent::terminal_fence(&config)),
    );
    let sandbox = crate::tools::terminal::resolve_sandbox(&config.tools.sandbox, &config.home);
    let said = crate::tools::terminal::describe_sandbox(&sandbox, &config.tools.sandbox);
    match &sandbox {
        crate::tools::terminal::SandboxResolved::Broken(_) => r.fail("sandbox", said),
        #[cfg(feature = "docker")]
        crate::tools::terminal::SandboxResolved::Docker(docker) => match docker.check().await {
            Ok(()) => r.ok("sandbox", said),
            Err(e) => r.fail("sandbox", format!("{said}: {e}")),
        },
        _ => r.ok("sandbox", said),
    }
    r.ok("processes", crate::tools::terminal::describe_cgroup());
    // Optional services: said, not probed (a probe would spend the key's quota).
    r.ok("web search", config.tools.web_search.summary());
    r.ok("market data", config.tools.finance.summary());
    match super::open_store(&config).await {
        Ok(store) => {
            let open = store.inbox_open_count().await.unwrap_or(0);
            let out = store.outbox_stats().await.unwrap_or_default();
            r.ok(
                "database",
                format!(
                    "{} ({open} messages waiting, {} replies pending, {} failed)",
                    config.database_path().display(),
                    out.pending,
                    out.failed
                ),
            );
        }
        Err(e) => r.fail("database", e),
    }
    match super::provider(&config) {
        Ok(p) => match p.probe().await {
            Ok(detail) => r.ok("model provider", detail),
            Err(e) => r.fail("model provider", e),
        },
        Err(_) => r.fail("model provider", "not configured"),
    }
    match super::gateway::adapters(&config) {
        Ok(adapters) if adapters.is_empty() => r.fail(
            "platforms",
            format!(
                "none configured (set {})",
                super::gateway::how_to_enable(&config)
            ),
        ),
        Ok(adapters) => {
            for a in adapters {
                match a.probe().await {
                    Ok(detail) => r.ok(a.platform().as_str(), detail),
                    Err(e) => r.fail(a.platform().as_str(), e),
                }
            }
        }
        Err(e) => r.fail("platforms", e),
    }
    if r.failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn writable(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(".hermes-doctor-probe");
    std::fs::write(&probe, b"ok")?;
    std::fs::remove_file(probe)
}
