//! One agent turn: the model/tool loop with its budget and its safe points.

use futures_util::future::join_all;
use tokio_util::sync::CancellationToken;

use super::Agent;
use super::prompt::{Setting, repair_history, system_prompt};
use crate::llm::{ChatMessage, ChatRequest, LlmError, Usage, complete_with_retry};
use crate::store::{SessionRow, StoreError};
use crate::tools::ToolContext;

/// How a turn can be stopped from outside.
#[derive(Debug, Clone, Default)]
pub struct TurnControl {
    /// A newer message arrived: stop at the next safe point (an in-flight model call is
    /// abandoned; a running tool finishes).
    pub interrupt: CancellationToken,
    /// `/stop` or shutdown: stop now, cancelling running tools too.
    pub stop: CancellationToken,
}

/// What to run a turn on.
pub struct TurnInput<'a> {
    pub session: &'a SessionRow,
    pub setting: Setting,
    /// New user messages: (inbox row id, text as the model should see it). Appended to the
    /// history unless already there (a turn re-run after a crash). Messages without an inbox
    /// row (the terminal chat) have no id.
    pub new_messages: Vec<(Option<i64>, String)>,
    pub control: TurnControl,
}

/// How a turn ended.
#[derive(Debug)]
pub enum TurnOutcome {
    /// The model answered.
    Answered(String),
    /// Stopped at a safe point by an interrupt or `/stop`.
    Cancelled,
    /// The iteration budget ran out; the text says so.
    BudgetExhausted(String),
    /// The provider failed after retries.
    Failed(LlmError),
}

/// The outcome with what it cost.
#[derive(Debug)]
pub struct TurnReport {
    pub outcome: TurnOutcome,
    pub usage: Usage,
    /// Model calls made.
    pub iterations: u32,
}

impl Agent {
    /// Run one turn. Store failures abort it (the inbox rows stay queued and are retried).
    pub async fn run_turn(&self, input: TurnInput<'_>) -> Result<TurnReport, StoreError> {
        let session = input.session;
        if !input.new_messages.is_empty() {
            self.store
                .append_inbox_messages(session.id, input.new_messages)
                .await?;
        }
        let stored = self
            .store
            .history(session.id, self.history_messages)
            .await?;
        let mut messages = vec![ChatMessage::system(system_prompt(
            input.setting,
            self.extra_prompt.as_deref(),
        ))];
        messages.extend(repair_history(
            stored.into_iter().map(|m| m.message).collect(),
        ));

        let ctx = ToolContext {
            session: session.key.clone(),
            timezone: self.timezone.clone(),
            cancel: input.control.stop.clone(),
        };
        let control = &input.control;
        let mut usage = Usage::default();
        let report = |outcome, usage, iterations| {
            Ok(TurnReport {
                outcome,
                usage,
                iterations,
            })
        };

        for iteration in 1..=self.max_iterations {
            if control.interrupt.is_cancelled() || control.stop.is_cancelled() {
                return report(TurnOutcome::Cancelled, usage, iteration - 1);
            }
            let request = ChatRequest {
                model: session.model.clone().unwrap_or_else(|| self.model.clone()),
                messages: messages.clone(),
                tools: self.tools.schemas(),
                max_output_tokens: self.max_output_tokens,
            };
            let response = tokio::select! {
                r = complete_with_retry(self.provider.as_ref(), &request, self.retry) => r,
                _ = control.interrupt.cancelled() => return report(TurnOutcome::Cancelled, usage, iteration),
                _ = control.stop.cancelled() => return report(TurnOutcome::Cancelled, usage, iteration),
            };
            let response = match response {
                Ok(r) => r,
                Err(e) => return report(TurnOutcome::Failed(e), usage, iteration),
            };
            usage += response.usage;
            if response.tool_calls.is_empty() {
                let text = if response.content.trim().is_empty() {
                    "(The model returned an empty answer. Try rephrasing, or /new to start over.)"
                        .to_owned()
                } else {
                    response.content
                };
                return report(TurnOutcome::Answered(text), usage, iteration);
            }

            let mut asked = ChatMessage::assistant(response.content);
            asked.tool_calls = response.tool_calls;
            self.store
                .append_messages(session.id, vec![asked.clone()])
                .await?;
            tracing::debug!(session = %session.key, tools = ?asked.tool_calls.iter().map(|c| &c.name).collect::<Vec<_>>(), "running tool calls");
            let results = self.run_tools(&asked, &ctx).await;
            self.store
                .append_messages(session.id, results.clone())
                .await?;
            messages.push(asked);
            messages.extend(results);
        }
        report(
            TurnOutcome::BudgetExhausted(format!(
                "I stopped after {} steps without finishing. Reply \"continue\" to let me go on, or \
                 /new to start over.",
                self.max_iterations
            )),
            usage,
            self.max_iterations,
        )
    }

    /// Run the calls of one model response: concurrently when every tool involved is
    /// parallel-safe, otherwise one after another in the order the model gave.
    async fn run_tools(&self, asked: &ChatMessage, ctx: &ToolContext) -> Vec<ChatMessage> {
        let max = self.tool_output_max_chars;
        let all_parallel = asked.tool_calls.iter().all(|c| {
            self.tools
                .get(&c.name)
                .is_some_and(|t| t.spec().parallel_safe)
        });
        if all_parallel {
            let outputs = join_all(
                asked
                    .tool_calls
                    .iter()
                    .map(|c| self.tools.execute(c, ctx, max)),
            )
            .await;
            asked
                .tool_calls
                .iter()
                .zip(outputs)
                .map(|(c, out)| ChatMessage::tool_result(c, out))
                .collect()
        } else {
            let mut results = Vec::with_capacity(asked.tool_calls.len());
            for c in &asked.tool_calls {
                results.push(ChatMessage::tool_result(
                    c,
                    self.tools.execute(c, ctx, max).await,
                ));
            }
            results
        }
    }
}
