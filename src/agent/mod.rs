//! The agent: one turn of the LLM/tool loop over a session's history.
//!
//! A turn loads the session's history, calls the model, runs the tools it asks for, appends their
//! results (errors too, as data for the model) and repeats until the model answers without tool
//! calls or the iteration budget is spent. Tool rounds are stored as they happen; the final
//! answer is returned to the caller, which commits it together with the replies and the inbox
//! rows in one transaction (see `store::TurnCommit`).

mod prompt;
mod turn;

use std::sync::Arc;

use jiff::tz::TimeZone;

pub use prompt::{Setting, repair_history, system_prompt};
pub use turn::{TurnControl, TurnInput, TurnOutcome, TurnReport};

use crate::config::Config;
use crate::llm::{Provider, RetryPolicy};
use crate::store::Store;
use crate::tools::{CurrentTime, ToolRegistry};

/// Everything a turn needs that does not change between turns.
pub struct Agent {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) tools: ToolRegistry,
    pub(crate) store: Store,
    pub(crate) model: String,
    pub(crate) max_output_tokens: Option<u32>,
    pub(crate) max_iterations: u32,
    pub(crate) history_messages: usize,
    pub(crate) tool_output_max_chars: usize,
    pub(crate) extra_prompt: Option<String>,
    pub(crate) timezone: TimeZone,
    pub(crate) retry: RetryPolicy,
}

impl Agent {
    /// An agent with the built-in tools, configured from `config`.
    pub fn new(config: &Config, provider: Arc<dyn Provider>, store: Store) -> Agent {
        let mut tools = ToolRegistry::new();
        tools.register(Arc::new(CurrentTime::default()));
        let timezone = config
            .agent
            .timezone
            .as_deref()
            .and_then(|tz| TimeZone::get(tz).ok())
            .unwrap_or_else(TimeZone::system);
        Agent {
            provider,
            tools,
            store,
            model: config.llm.model.clone(),
            max_output_tokens: config.llm.max_output_tokens,
            max_iterations: config.agent.max_iterations,
            history_messages: config.agent.history_messages,
            tool_output_max_chars: config.agent.tool_output_max_chars,
            extra_prompt: config.agent.system_prompt.clone(),
            timezone,
            retry: RetryPolicy {
                max_retries: config.llm.max_retries,
                ..RetryPolicy::default()
            },
        }
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }

    pub fn store(&self) -> &Store {
        &self.store
    }
}
