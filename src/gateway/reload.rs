//! Configuration reload (`SIGHUP`): the new file is validated first and refused whole if it is
//! broken (the running configuration stays); otherwise allowlists and gateway settings apply at
//! once, adapters whose settings changed restart, and the others keep running undisturbed.
//!
//! The agent (model provider, tools, policy matrix, memory, skills, cron) is built once at start;
//! changes there are named in the log as taking effect at the next restart.

use std::collections::BTreeSet;
use std::sync::Arc;

use hermes_adapter::{Adapter, Platform};

use super::supervisor::Supervisors;
use super::{Authorizer, Shared, notify, status};
use crate::config::Config;

/// Builds the adapters a configuration enables.
pub type AdapterFactory = dyn Fn(&Config) -> Result<Vec<Arc<dyn Adapter>>, String> + Send + Sync;

/// How to load the configuration again and build the adapters it names.
pub struct Reloader {
    /// Read and validate the configuration file and environment.
    pub load: Box<dyn Fn() -> Result<Config, String> + Send + Sync>,
    /// The adapters a configuration enables.
    pub adapters: Box<AdapterFactory>,
    /// One `()` per reload request.
    pub signal: tokio::sync::mpsc::Receiver<()>,
}

/// Reload once.
pub(crate) async fn apply(
    shared: &Arc<Shared>,
    reloader: &Reloader,
    supervisors: &mut Supervisors,
) {
    notify::reloading();
    tracing::info!("reloading the configuration");
    let outcome = match (reloader.load)() {
        Ok(new) => match (reloader.adapters)(&new) {
            Ok(adapters) => {
                swap(shared, new, adapters, supervisors).await;
                None
            }
            Err(e) => Some(e),
        },
        Err(e) => Some(e),
    };
    if let Some(e) = &outcome {
        tracing::error!(
            "configuration reload refused; the running configuration stays in force: {e}"
        );
    }
    *shared
        .reload_error
        .write()
        .unwrap_or_else(|e| e.into_inner()) = outcome;
    notify::ready(&status::report(shared).await.one_line());
}

async fn swap(
    shared: &Arc<Shared>,
    new: Config,
    adapters: Vec<Arc<dyn Adapter>>,
    supervisors: &mut Supervisors,
) {
    let old = shared.config();
    let later = restart_only_changes(&old, &new);
    if !later.is_empty() {
        tracing::warn!(sections = ?later, "these settings changed and take effect at the next restart");
    }
    let before: BTreeSet<Platform> = shared.adapter_platforms().into_iter().collect();
    let mut restarted = Vec::new();
    let mut kept = Vec::new();
    for adapter in &adapters {
        let p = adapter.platform();
        if before.contains(&p) && old.platform_fingerprint(p) == new.platform_fingerprint(p) {
            kept.push(p);
            continue;
        }
        supervisors.stop(p).await;
        shared
            .adapters
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(p, adapter.clone());
        supervisors.start(shared, adapter.clone());
        restarted.push(p);
    }
    let now: BTreeSet<Platform> = adapters.iter().map(|a| a.platform()).collect();
    let mut stopped = Vec::new();
    for p in before.difference(&now) {
        supervisors.stop(*p).await;
        shared
            .adapters
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(p);
        stopped.push(*p);
    }
    *shared.authz.write().unwrap_or_else(|e| e.into_inner()) =
        Arc::new(Authorizer::from_config(&new));
    *shared.config.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(new);
    tracing::info!(?restarted, ?kept, ?stopped, "configuration reloaded");
}

/// Sections the running agent and endpoints were built from, which a reload cannot change.
fn restart_only_changes(old: &Config, new: &Config) -> Vec<&'static str> {
    let mut changed = Vec::new();
    let mut check = |name: &'static str, a: String, b: String| {
        if a != b {
            changed.push(name);
        }
    };
    // Secrets print redacted, so a changed key alone is not noticed here (it needs a restart
    // like the rest of `llm`).
    check("llm", format!("{:?}", old.llm), format!("{:?}", new.llm));
    check(
        "agent",
        format!("{:?}", old.agent),
        format!("{:?}", new.agent),
    );
    check(
        "tools",
        format!("{:?}", old.tools),
        format!("{:?}", new.tools),
    );
    check(
        "policy",
        format!("{:?}", old.policy),
        format!("{:?}", new.policy),
    );
    check(
        "memory",
        format!("{:?}", old.memory),
        format!("{:?}", new.memory),
    );
    check(
        "skills",
        format!("{:?}", old.skills),
        format!("{:?}", new.skills),
    );
    check("cron", format!("{:?}", old.cron), format!("{:?}", new.cron));
    check(
        "admin",
        format!("{:?}", old.admin),
        format!("{:?}", new.admin),
    );
    check(
        "gateway.max_concurrent_turns",
        old.gateway.max_concurrent_turns.to_string(),
        new.gateway.max_concurrent_turns.to_string(),
    );
    changed
}
