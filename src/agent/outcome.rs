//! What a turn's loop is controlled by and what it returns: [`TurnControl`] in, [`TurnReport`]
//! (with its [`TurnOutcome`]) out. Shared by turns, subagents and reviews.

use tokio_util::sync::CancellationToken;

use crate::llm::{LlmError, Usage};

/// How a turn can be stopped from outside.
#[derive(Debug, Clone, Default)]
pub struct TurnControl {
    /// A newer message arrived: stop at the next safe point (an in-flight model call is
    /// abandoned; a running tool finishes; a pending confirmation is denied).
    pub interrupt: CancellationToken,
    /// `/stop` or shutdown: stop now, cancelling running tools too.
    pub stop: CancellationToken,
}

/// How a turn ended.
#[derive(Debug)]
pub enum TurnOutcome {
    /// The model answered.
    Answered(String),
    /// Stopped at a safe point by an interrupt or `/stop`.
    Cancelled,
    /// A budget (iterations, tokens, time) ran out; the text says which.
    BudgetExhausted(String),
    /// The provider failed after retries.
    Failed(LlmError),
}

/// The outcome with what it cost.
#[derive(Debug)]
pub struct TurnReport {
    pub outcome: TurnOutcome,
    pub usage: Usage,
    /// Model calls made (subagents' included).
    pub iterations: u32,
    /// Model responses that asked for tools (this run's own, not its subagents').
    pub tool_rounds: u32,
    /// Names of the tools this run called, in order, repeated as called.
    pub tools_called: Vec<String>,
    /// The model it called: the session's (`/model`), its profile's, or the configured one.
    pub model: String,
}

impl TurnReport {
    /// Nothing done yet: the start of a turn run in phases (plan mode).
    pub fn empty() -> Self {
        TurnReport {
            outcome: TurnOutcome::Cancelled,
            usage: Usage::default(),
            iterations: 0,
            tool_rounds: 0,
            tools_called: Vec::new(),
            model: String::new(),
        }
    }

    /// This report's costs plus `next`'s, with `next`'s outcome.
    pub fn then(mut self, next: TurnReport) -> Self {
        self.usage += next.usage;
        self.iterations += next.iterations;
        self.tool_rounds += next.tool_rounds;
        self.tools_called.extend(next.tools_called);
        self.outcome = next.outcome;
        self.model = next.model;
        self
    }

    pub fn with_outcome(mut self, outcome: TurnOutcome) -> Self {
        self.outcome = outcome;
        self
    }
}
