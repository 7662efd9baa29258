//! The model/tool loop shared by turns and subagents, with its budgets and safe points.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::outcome::{TurnControl, TurnOutcome, TurnReport};
use super::prompt::repair_history;
use super::{Agent, Interaction, Permissions};
use std::sync::atomic::{AtomicBool, Ordering};

use super::model_call::LATE_NOTICE;
use crate::llm::{ChatMessage, ChatRequest, DeltaSink, Usage};
use crate::store::StoreError;
use crate::tools::ToolContext;

/// One run of the loop: a turn (depth 0, stored) or a subagent (depth 1, not stored).
pub(crate) struct Run<'a> {
    pub agent: &'a Agent,
    /// Where tool rounds are stored; `None` for subagents.
    pub session_id: Option<i64>,
    /// The tools it knows (the agent's, plus its session's MCP tools).
    pub tools: std::borrow::Cow<'a, crate::tools::ToolRegistry>,
    /// Tools this run may call.
    pub enabled: Vec<&'static str>,
    pub ctx: ToolContext,
    pub control: TurnControl,
    pub perms: Permissions,
    pub interaction: Option<Arc<dyn Interaction>>,
    pub depth: u8,
    pub max_iterations: u32,
    pub model: String,
    /// Spent by subagents of this run.
    pub extra_usage: Usage,
    pub extra_iterations: u32,
    /// Where the answer's text goes while it is written (streaming into the chat).
    pub deltas: Option<DeltaSink>,
    /// The "answer will be late" note was sent this turn.
    pub late_sent: Arc<AtomicBool>,
}

impl Run<'_> {
    /// Loop until the model answers without tool calls, a budget runs out, or the turn is
    /// cancelled.
    pub async fn drive(
        &mut self,
        mut messages: Vec<ChatMessage>,
    ) -> Result<TurnReport, StoreError> {
        let mut schemas = self.tools.schemas_of(&self.enabled);
        let limits = &self.agent.config.agent;
        let deadline = Instant::now() + Duration::from_secs(limits.max_turn_secs.max(1));
        let mut usage = Usage::default();
        let mut iteration = 0;
        let mut compressed = false;
        let mut tool_rounds = 0;
        let mut tools_called = Vec::new();
        let outcome = loop {
            if self.control.interrupt.is_cancelled() || self.control.stop.is_cancelled() {
                break TurnOutcome::Cancelled;
            }
            if iteration >= self.max_iterations {
                break TurnOutcome::BudgetExhausted(format!(
                    "I stopped after {} steps without finishing. Reply \"continue\" to let me go on, or /new to start over.",
                    self.max_iterations
                ));
            }
            let spent = usage.prompt_tokens
                + usage.completion_tokens
                + self.extra_usage.prompt_tokens
                + self.extra_usage.completion_tokens;
            if spent >= limits.max_turn_tokens {
                break TurnOutcome::BudgetExhausted(format!(
                    "I stopped: this task used {spent} tokens, over the limit of {} per turn. Reply \"continue\" to go on.",
                    limits.max_turn_tokens
                ));
            }
            if let Some(session_id) = self.session_id
                && !compressed
                && self.agent.needs_compression(&messages, &schemas)
            {
                // Once per turn: if the recent messages alone are too big, compressing again
                // would not help.
                compressed = true;
                if self.agent.compress(session_id).await?.is_some() {
                    let system = messages.swap_remove(0);
                    messages = vec![system];
                    messages.extend(repair_history(self.agent.conversation(session_id).await?));
                }
            }
            iteration += 1;
            // The request borrows the conversation and the tools for the call and gives them
            // back (copying the whole history into every call was a turn's largest allocation).
            let request = ChatRequest {
                model: self.model.clone(),
                messages: std::mem::take(&mut messages),
                tools: std::mem::take(&mut schemas),
                max_output_tokens: self.agent.config.llm.max_output_tokens,
            };
            let late = || self.late();
            let response = tokio::select! {
                r = self.agent.call_model(&request, self.deltas.as_ref(), &late) => r,
                _ = self.control.interrupt.cancelled() => break TurnOutcome::Cancelled,
                _ = self.control.stop.cancelled() => break TurnOutcome::Cancelled,
                _ = tokio::time::sleep_until(deadline) => break out_of_time(limits.max_turn_secs),
            };
            (messages, schemas) = (request.messages, request.tools);
            let response = match response {
                Ok(r) => r,
                Err(e) => break TurnOutcome::Failed(e),
            };
            usage += response.usage;
            if response.tool_calls.is_empty() {
                let text = if response.content.trim().is_empty() {
                    "(The model returned an empty answer. Try rephrasing, or /new to start over.)"
                        .to_owned()
                } else {
                    response.content
                };
                break TurnOutcome::Answered(text);
            }
            if let Some(d) = &self.deltas {
                // The text so far was a preamble to tool calls: the next text is a new message.
                let _ = d.send(crate::llm::DELTA_SEGMENT_END.to_owned());
            }
            let mut asked = ChatMessage::assistant(response.content);
            asked.tool_calls = response.tool_calls;
            tool_rounds += 1;
            tools_called.extend(asked.tool_calls.iter().map(|c| c.name.clone()));
            if let Some(id) = self.session_id {
                self.agent
                    .store
                    .append_messages(id, vec![asked.clone()])
                    .await?;
            }
            let results = self.dispatch(&asked).await;
            if let Some(id) = self.session_id {
                self.agent
                    .store
                    .append_messages(id, results.clone())
                    .await?;
            }
            messages.push(asked);
            messages.extend(results);
            if Instant::now() >= deadline {
                break out_of_time(limits.max_turn_secs);
            }
        };
        usage += self.extra_usage;
        Ok(TurnReport {
            outcome,
            usage,
            iterations: iteration + self.extra_iterations,
            tool_rounds,
            tools_called,
            model: self.model.clone(),
        })
    }
}

impl Run<'_> {
    /// Tell the user, once per turn, that the answer will be late.
    fn late(&self) {
        if self.late_sent.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(person) = self.interaction.clone() {
            tokio::spawn(async move { person.notify(LATE_NOTICE).await });
        }
    }
}

fn out_of_time(secs: u64) -> TurnOutcome {
    TurnOutcome::BudgetExhausted(format!(
        "I stopped: this task ran for {} minutes, the limit per turn. Reply \"continue\" to go on.",
        secs.div_ceil(60)
    ))
}
