//! `delegate_task`: a subagent with its own context and budget works on a task and returns a
//! summary as the tool result. Subagents have no person to ask (their confirmations are
//! denied), cannot start subagents themselves, and at most a configured number run at once.

use super::Agent;
use super::outcome::TurnOutcome;
use super::permissions::Permissions;
use super::run::Run;
use crate::config::tools_in;
use crate::llm::{ChatMessage, ToolCall, Usage};
use crate::tools::{DelegateArgs, ToolContext};

const SUBAGENT_PROMPT: &str = "You are a focused subagent of Hermes, an AI assistant. You were given one task. \
Work on it with your tools, then answer with a concise summary of what you found or did: results, \
file paths, numbers, and anything left undone. Nobody can answer questions or approve risky \
actions for you; if something needs approval, say so in your summary instead.";

impl Agent {
    /// Run a subagent for a `delegate_task` call of `parent`; returns the tool result text, the
    /// tokens spent and the model calls made.
    pub(crate) async fn run_subagent(
        &self,
        call: &ToolCall,
        parent: &Run<'_>,
    ) -> (String, Usage, u32) {
        let none = |text: String| (text, Usage::default(), 0);
        if parent.depth >= 1 {
            return none("error: subagents cannot start subagents; do the work yourself".into());
        }
        let args: DelegateArgs = match serde_json::from_str(&call.arguments) {
            Ok(a) => a,
            Err(e) => return none(format!("error: invalid arguments: {e}")),
        };
        let _permit = tokio::select! {
            p = self.subagents.acquire() => match p {
                Ok(p) => p,
                Err(_) => return none("error: subagents are shutting down".into()),
            },
            _ = parent.control.stop.cancelled() => return none("error: cancelled".into()),
        };
        let mut enabled: Vec<&'static str> = parent
            .enabled
            .iter()
            .copied()
            .filter(|t| !matches!(*t, "delegate_task" | "clarify"))
            .collect();
        if let Some(sets) = &args.toolsets {
            let allowed = tools_in(sets);
            enabled.retain(|t| allowed.contains(t));
        }
        let mut task = args.task;
        if let Some(context) = args.context.filter(|c| !c.trim().is_empty()) {
            task.push_str("\n\nContext:\n");
            task.push_str(&context);
        }
        let messages = vec![
            ChatMessage::system(SUBAGENT_PROMPT),
            ChatMessage::user(task),
        ];
        let mut run = Run {
            agent: self,
            session_id: None,
            tools: parent.tools.clone(),
            enabled,
            ctx: ToolContext {
                interaction: None,
                ..parent.ctx.clone()
            },
            control: parent.control.clone(),
            perms: Permissions::fixed(parent.perms.level),
            interaction: None,
            depth: parent.depth + 1,
            max_iterations: self.config.tools.subagent_max_iterations,
            model: parent.model.clone(),
            extra_usage: Usage::default(),
            extra_iterations: 0,
            deltas: None,
            late_sent: parent.late_sent.clone(),
        };
        tracing::info!(tools = ?run.enabled, "subagent started");
        // Boxed: a subagent's loop is a loop inside its parent's.
        let report = match Box::pin(run.drive(messages)).await {
            Ok(r) => r,
            Err(e) => return none(format!("error: the subagent failed: {e}")),
        };
        let text = match report.outcome {
            TurnOutcome::Answered(summary) => format!("Subagent summary:\n{summary}"),
            TurnOutcome::BudgetExhausted(why) => {
                format!("The subagent stopped before finishing: {why}")
            }
            TurnOutcome::Cancelled => "error: the subagent was cancelled".to_owned(),
            TurnOutcome::Failed(e) => format!("error: the subagent could not reach the model: {e}"),
        };
        (text, report.usage, report.iterations)
    }
}
