//! `hermes gateway`: the daemon in the foreground.

use std::process::ExitCode;
use std::sync::Arc;

use hermes_adapter::Adapter;
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::config::Config;
use crate::gateway::{Gateway, Reloader};

/// The adapters the configuration enables (and this build includes).
pub(super) fn adapters(config: &Config) -> Result<Vec<Arc<dyn Adapter>>, String> {
    config
        .platforms()
        .into_iter()
        .filter(|p| p.is_active())
        .map(|p| p.build(config))
        .collect()
}

/// How to turn any platform on, for "nothing is configured".
pub(super) fn how_to_enable(config: &Config) -> String {
    let ways: Vec<&str> = config
        .platforms()
        .iter()
        .map(|p| p.how_to_enable())
        .collect();
    ways.join(", or ")
}

pub(super) async fn gateway(config: Config, path: Option<std::path::PathBuf>) -> ExitCode {
    let provider = match super::provider(&config) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let adapters = match adapters(&config) {
        Ok(a) if a.is_empty() => {
            let sections: Vec<String> = config
                .platforms()
                .iter()
                .map(|p| format!("[{}]", p.platform()))
                .collect();
            eprintln!(
                "hermes: no messaging platform configured: set {}, or the {} section of the config file",
                how_to_enable(&config),
                sections.join(" / ")
            );
            return ExitCode::from(2);
        }
        Ok(a) => a,
        Err(e) => {
            eprintln!("hermes: {e}");
            return ExitCode::from(2);
        }
    };
    let fence = crate::tools::terminal::describe_fence(&crate::agent::terminal_fence(&config));
    if crate::tools::terminal::fence_active() {
        tracing::info!("{fence}");
    } else {
        tracing::warn!("{fence}");
    }
    let sandbox = crate::tools::terminal::resolve_sandbox(&config.tools.sandbox, &config.home);
    let said = crate::tools::terminal::describe_sandbox(&sandbox, &config.tools.sandbox);
    match sandbox {
        crate::tools::terminal::SandboxResolved::Host(_)
        | crate::tools::terminal::SandboxResolved::Broken(_) => tracing::warn!("{said}"),
        _ => tracing::info!("{said}"),
    }
    tracing::info!("{}", crate::tools::terminal::describe_cgroup());
    // Held until the process ends: `hermes restore` refuses to write under a running daemon.
    let _home_lock = match super::home_lock::shared(&config.home) {
        Ok(file) => Some(file),
        Err(super::home_lock::Refused::Held) => {
            eprintln!(
                "hermes: a restore is writing to {}; start the daemon once it has finished",
                config.home.display()
            );
            return ExitCode::FAILURE;
        }
        Err(super::home_lock::Refused::Io(e)) => {
            tracing::warn!(error = %e, "cannot lock {}; a restore would not see this daemon", super::home_lock::path(&config.home).display());
            None
        }
    };
    let store = match super::open_store(&config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hermes: {e}");
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(home = %config.home.display(), model = %config.llm.model, provider = %provider.describe(), "starting hermes gateway {}", env!("CARGO_PKG_VERSION"));
    let agent = match Agent::new(&config, provider, store.clone()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("hermes: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (reload_tx, reload_rx) = tokio::sync::mpsc::channel(1);
    let reloader = Reloader {
        load: Box::new(move || {
            super::load_config(path.as_deref()).map_err(|e| format!("configuration error: {e}"))
        }),
        adapters: Box::new(self::adapters),
        agent: {
            let store = store.clone();
            Box::new(move |config, cron| {
                let provider = super::build_provider(config).map_err(|(message, _)| message)?;
                Agent::with_cron(config, provider, store.clone(), cron)
                    .map_err(|e| format!("cannot build the agent: {e}"))
            })
        },
        signal: reload_rx,
    };
    let gateway = Gateway::new(config, store, agent, adapters).with_reloader(reloader);
    let shutdown = CancellationToken::new();
    tokio::spawn(watch_signals(shutdown.clone()));
    tokio::spawn(watch_reload(reload_tx));
    gateway.run(shutdown).await;
    ExitCode::SUCCESS
}

/// Each SIGHUP asks for a configuration reload (several quick ones coalesce).
async fn watch_reload(reload: tokio::sync::mpsc::Sender<()>) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hup) = signal(SignalKind::hangup()) else {
        tracing::error!("cannot install the SIGHUP handler; reloads are unavailable");
        return;
    };
    while hup.recv().await.is_some() {
        tracing::info!("SIGHUP received");
        let _ = reload.try_send(());
    }
}

/// First SIGINT/SIGTERM: graceful shutdown. A second one: exit at once (work is stored and
/// resumes at the next start).
async fn watch_signals(shutdown: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received"),
        _ = int.recv() => tracing::info!("SIGINT received"),
    }
    shutdown.cancel();
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    tracing::warn!("second signal: exiting now; unfinished work resumes at the next start");
    std::process::exit(130);
}
