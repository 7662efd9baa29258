//! Configuration reload (`SIGHUP`): the new file is validated first and refused whole if it is
//! broken (the running configuration stays); otherwise allowlists and gateway settings apply at
//! once, adapters whose settings changed restart, and the others keep running undisturbed.
//!
//! When the model, an API key, tools, policy, memory or skills settings changed, a new agent is
//! built from the new configuration (sharing the scheduler's clock) and serves every turn that
//! starts afterwards; turns already running finish with the agent they began with. Only the cron
//! section, the admin endpoint and the turn limit still need a restart, and are named in the log.

use std::collections::BTreeSet;
use std::sync::Arc;

use hermes_adapter::{Adapter, Platform};

use super::{notify, status};
use crate::agent::Agent;
use crate::config::Config;
use crate::cron::CronControl;
use crate::gateway::adapters::supervisor::Supervisors;
use crate::gateway::intake::authz::Authorizer;
use crate::gateway::{InForce, Shared};

/// Builds the adapters a configuration enables.
pub type AdapterFactory = dyn Fn(&Config) -> Result<Vec<Arc<dyn Adapter>>, String> + Send + Sync;

/// Builds the agent a configuration describes, on the running scheduler's clock.
pub type AgentFactory = dyn Fn(&Config, CronControl) -> Result<Agent, String> + Send + Sync;

/// How to load the configuration again and build the adapters it names.
pub struct Reloader {
    /// Read and validate the configuration file and environment.
    pub load: Box<dyn Fn() -> Result<Config, String> + Send + Sync>,
    /// The adapters a configuration enables.
    pub adapters: Box<AdapterFactory>,
    /// The agent a configuration describes.
    pub agent: Box<AgentFactory>,
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
            Ok(adapters) => match new_agent(shared, reloader, &new) {
                Ok(agent) => {
                    swap(shared, new, adapters, agent, supervisors).await;
                    None
                }
                Err(e) => Some(e),
            },
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

/// A new agent when `new` changes what the agent is built from (`None` when nothing did).
fn new_agent(
    shared: &Shared,
    reloader: &Reloader,
    new: &Config,
) -> Result<Option<(Agent, Vec<&'static str>)>, String> {
    let changed = agent_changes(&shared.config(), new);
    if changed.is_empty() {
        return Ok(None);
    }
    let agent = (reloader.agent)(new, shared.agent().cron.clone())?;
    Ok(Some((agent, changed)))
}

async fn swap(
    shared: &Arc<Shared>,
    new: Config,
    adapters: Vec<Arc<dyn Adapter>>,
    agent: Option<(Agent, Vec<&'static str>)>,
    supervisors: &mut Supervisors,
) {
    let old = shared.in_force();
    let agent = match agent {
        Some((agent, changed)) => {
            tracing::info!(sections = ?changed, model = %new.llm.model, "the agent was rebuilt; new turns use it");
            Arc::new(agent.with_mcp(shared.mcp.clone()))
        }
        None => old.agent.clone(),
    };
    let old = &old.config;
    if old.mcp != new.mcp {
        tracing::info!(
            "MCP servers changed: added ones start, removed ones stop, changed ones restart"
        );
        shared.mcp.reload(&new.mcp);
    }
    let later = restart_only_changes(old, &new);
    if !later.is_empty() {
        tracing::warn!(sections = ?later, "these settings changed and take effect at the next restart");
    }
    let before: BTreeSet<Platform> = shared.adapter_platforms().into_iter().collect();
    let mut restarted = Vec::new();
    let mut kept = Vec::new();
    for adapter in &adapters {
        let p = adapter.platform();
        let changed = old.platform(p).is_none_or(|s| s.adapter_changed(old, &new));
        if before.contains(&p) && !changed {
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
    shared.put_in_force(InForce {
        authz: Arc::new(Authorizer::from_config(&new)),
        config: Arc::new(new),
        agent,
    });
    tracing::info!(?restarted, ?kept, ?stopped, "configuration reloaded");
}

/// The names of the `sections` that differ between two configurations.
fn differing(old: &Config, new: &Config, sections: &[Section]) -> Vec<&'static str> {
    sections
        .iter()
        .filter(|(_, differ)| differ(old, new))
        .map(|(name, _)| *name)
        .collect()
}

/// A configuration section by name, and whether it differs between two configurations.
type Section = (&'static str, fn(&Config, &Config) -> bool);

/// Sections the agent is built from (the keys too: tools keep secrets out of their reach).
fn agent_changes(old: &Config, new: &Config) -> Vec<&'static str> {
    let sections: [Section; 7] = [
        ("llm", |a, b| a.llm != b.llm),
        ("agent", |a, b| a.agent != b.agent),
        ("tools", |a, b| a.tools != b.tools),
        ("policy", |a, b| a.policy != b.policy),
        ("memory", |a, b| a.memory != b.memory),
        ("skills", |a, b| a.skills != b.skills),
        ("keys", |a, b| a.secrets() != b.secrets()),
    ];
    differing(old, new, &sections)
}

/// Sections the scheduler and the endpoints were built from, which a reload cannot change.
fn restart_only_changes(old: &Config, new: &Config) -> Vec<&'static str> {
    let sections: [Section; 5] = [
        ("cron", |a, b| a.cron != b.cron),
        ("store", |a, b| a.store != b.store),
        ("admin", |a, b| a.admin != b.admin),
        ("gateway.max_concurrent_turns", |a, b| {
            a.gateway.max_concurrent_turns != b.gateway.max_concurrent_turns
        }),
        ("gateway.turns_per_person / messages_per_minute", |a, b| {
            (a.gateway.turns_per_person, a.gateway.messages_per_minute)
                != (b.gateway.turns_per_person, b.gateway.messages_per_minute)
        }),
    ];
    differing(old, new, &sections)
}
