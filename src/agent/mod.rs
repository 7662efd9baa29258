//! The agent: one turn of the LLM/tool loop over a session's history.
//!
//! A turn loads the session's history, calls the model, runs the tools it asks for — each call
//! checked against the permission policy, confirmations asked in the chat one after another —
//! appends their results (errors too, as data for the model) and repeats until the model answers
//! without tool calls or a budget (iterations, tokens, wall clock) is spent. Tool rounds are
//! stored as they happen; the final answer is returned to the caller, which commits it together
//! with the replies and the inbox rows in one transaction (see `store::TurnCommit`).

mod compress;
mod dispatch;
mod model_call;
mod outcome;
pub mod permissions;
mod prompt;
mod review;
mod run;
pub mod snapshots;
pub(crate) mod subagent;
mod toolbox;
pub use toolbox::terminal_fence;
mod plan;
mod turn;

use std::sync::Arc;

use jiff::tz::TimeZone;
use tokio::sync::Semaphore;

pub use crate::tools::{ConfirmRequest, Interaction};
pub use compress::{Compressed, estimate_tokens};
pub use outcome::{TurnControl, TurnOutcome, TurnReport};
pub use permissions::Permissions;
pub use prompt::{Setting, repair_history, system_prompt, system_prompt_with};
pub use review::{NOTHING_TO_SAVE, ReviewKind};
pub use turn::{NewMessage, PROFILE_SETTING, TurnInput};

use crate::config::Config;
use crate::llm::{Provider, RetryPolicy};
use crate::policy::PolicyMatrix;
use crate::store::Store;
use crate::tools::ToolRegistry;

/// Everything a turn needs that does not change between turns.
pub struct Agent {
    pub(crate) config: Arc<Config>,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) tools: ToolRegistry,
    pub(crate) store: Store,
    pub(crate) matrix: PolicyMatrix,
    pub(crate) memory: crate::memory::MemoryFiles,
    pub(crate) timezone: TimeZone,
    pub(crate) retry: RetryPolicy,
    /// Providers tried after `provider` fails.
    pub(crate) fallbacks: Vec<model_call::Fallback>,
    /// The scheduler's clock and doorbell (shared with the `cronjob` tool).
    pub(crate) cron: crate::cron::CronControl,
    /// Caps subagents running at once across the daemon.
    pub(crate) subagents: Semaphore,
    /// Speech to text for voice messages, when configured.
    pub(crate) transcriber: Option<crate::llm::Transcriber>,
    /// Where the terminal runs (none for an agent given its tools).
    pub(crate) sandbox: Option<crate::tools::terminal::SandboxResolved>,
    /// The MCP servers whose tools sessions get (owned by the gateway: it outlives reloads).
    pub(crate) mcp: Option<Arc<crate::mcp::McpHub>>,
}

impl Agent {
    /// An agent with the built-in tools, configured from `config`. Fails when the tools'
    /// workspace cannot be created.
    pub fn new(
        config: &Config,
        provider: Arc<dyn Provider>,
        store: Store,
    ) -> std::io::Result<Agent> {
        Self::with_cron(config, provider, store, crate::cron::CronControl::default())
    }

    /// An agent whose scheduled jobs follow `cron`'s clock (tests move it by hand).
    pub fn with_cron(
        config: &Config,
        provider: Arc<dyn Provider>,
        store: Store,
        cron: crate::cron::CronControl,
    ) -> std::io::Result<Agent> {
        let (tools, sandbox) = toolbox::builtin(config, &store, &cron)?;
        let mut agent = Self::with_tools(config, provider, store, tools);
        agent.cron = cron;
        agent.sandbox = Some(sandbox);
        Ok(agent)
    }

    /// An agent with a given set of tools (tests, embedding).
    pub fn with_tools(
        config: &Config,
        provider: Arc<dyn Provider>,
        store: Store,
        tools: ToolRegistry,
    ) -> Agent {
        let timezone = config
            .agent
            .timezone
            .as_deref()
            .and_then(|tz| TimeZone::get(tz).ok())
            .unwrap_or_else(TimeZone::system);
        Agent {
            matrix: PolicyMatrix::with_overrides(&config.policy.matrix, &config.policy.tools),
            memory: crate::memory::MemoryFiles::from_config(config),
            subagents: Semaphore::new(config.tools.max_concurrent_subagents.max(1)),
            transcriber: config.transcription().and_then(|endpoint| {
                crate::llm::Transcriber::new(endpoint)
                    .inspect_err(|e| tracing::warn!("voice messages will not be transcribed: {e}"))
                    .ok()
            }),
            fallbacks: model_call::fallbacks(config),
            cron: crate::cron::CronControl::default(),
            sandbox: None,
            mcp: None,
            config: Arc::new(config.clone()),
            provider,
            tools,
            store,
            timezone,
            retry: RetryPolicy {
                max_retries: config.llm.max_retries,
                ..RetryPolicy::default()
            },
        }
    }

    /// Give sessions the tools of `hub`'s MCP servers.
    pub fn with_mcp(mut self, hub: Arc<crate::mcp::McpHub>) -> Self {
        self.mcp = Some(hub);
        self
    }

    pub fn model(&self) -> &str {
        &self.config.llm.model
    }

    /// Where the terminal runs (none for an agent given its tools).
    pub fn sandbox(&self) -> Option<&crate::tools::terminal::SandboxResolved> {
        self.sandbox.as_ref()
    }

    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn config(&self) -> &Config {
        &self.config
    }
}

#[cfg(test)]
mod tests;
