//! Running one model response's tool calls: each checked against the policy (confirmations
//! asked one after another, in the model's order), then executed in waves — consecutive
//! parallel-safe calls that write no common file run together, everything else alone, in order.

use std::path::PathBuf;

use futures_util::future::join_all;
use serde_json::Value;

use super::run::Run;
use crate::llm::{ChatMessage, ToolCall, Usage};
use crate::policy::Decision;
use crate::tools::ConfirmRequest;

/// A call after the policy check: allowed, or refused with the reason the model will read.
struct Planned<'c> {
    call: &'c ToolCall,
    refusal: Option<String>,
    parallel: bool,
    writes: Vec<PathBuf>,
}

impl Run<'_> {
    pub(crate) async fn dispatch(&mut self, asked: &ChatMessage) -> Vec<ChatMessage> {
        let mut plan = Vec::with_capacity(asked.tool_calls.len());
        for call in &asked.tool_calls {
            let args: Option<Value> = serde_json::from_str(if call.arguments.trim().is_empty() {
                "{}"
            } else {
                &call.arguments
            })
            .ok()
            .filter(Value::is_object);
            let tool = self
                .tools
                .get(&call.name)
                .filter(|_| self.enabled.contains(&call.name.as_str()))
                .cloned();
            let refusal = match (&tool, &args) {
                (None, _) if self.tools.get(&call.name).is_some() => Some(format!(
                    "error: the tool `{}` is not available here",
                    call.name
                )),
                (Some(_), Some(args)) => self.permit(call, args).await.err(),
                // Unknown tools and unreadable arguments are reported by the registry.
                _ => None,
            };
            plan.push(Planned {
                call,
                parallel: refusal.is_some()
                    || tool.as_ref().is_some_and(|t| t.spec().parallel_safe),
                writes: match (tool, &args, &refusal) {
                    (Some(t), Some(a), None) => t.writes(a),
                    _ => Vec::new(),
                },
                refusal,
            });
        }

        let mut results = Vec::with_capacity(plan.len());
        let mut i = 0;
        while i < plan.len() {
            let mut end = i + 1;
            if plan[i].parallel {
                let mut written: Vec<&PathBuf> = plan[i].writes.iter().collect();
                while end < plan.len()
                    && plan[end].parallel
                    && !plan[end].writes.iter().any(|w| written.contains(&w))
                {
                    written.extend(plan[end].writes.iter());
                    end += 1;
                }
            }
            let wave = join_all(plan[i..end].iter().map(|p| self.execute(p))).await;
            for (p, (text, usage, iterations)) in plan[i..end].iter().zip(wave) {
                self.extra_usage += usage;
                self.extra_iterations += iterations;
                results.push(ChatMessage::tool_result(p.call, text));
            }
            i = end;
        }
        results
    }

    async fn execute(&self, p: &Planned<'_>) -> (String, Usage, u32) {
        if let Some(refusal) = &p.refusal {
            return (refusal.clone(), Usage::default(), 0);
        }
        if p.call.name == "delegate_task" {
            return self.agent.run_subagent(p.call, self).await;
        }
        let max = self.agent.config.agent.tool_output_max_chars;
        (
            self.tools.execute(p.call, &self.ctx, max).await,
            Usage::default(),
            0,
        )
    }

    /// The policy decision for one call, asking the user when it says confirm.
    async fn permit(&mut self, call: &ToolCall, args: &Value) -> Result<(), String> {
        let Some(tool) = self.tools.get(&call.name) else {
            return Ok(());
        };
        let spec = tool.spec();
        let danger = tool.danger(args);
        let level = self.perms.level;
        match self.agent.matrix.decide(
            level,
            spec.name,
            spec.category,
            danger.is_some(),
            self.perms.granted(spec.name),
        ) {
            Decision::Auto => Ok(()),
            Decision::Deny => Err(format!(
                "error: denied by policy: `{}` is not allowed at permission level {level}. Do not retry; tell the user if it matters.",
                spec.name
            )),
            Decision::Confirm => {
                let Some(person) = self.interaction.clone() else {
                    return Err(format!(
                        "error: denied: `{}` needs a person's confirmation and nobody can confirm here (background task or subagent)",
                        spec.name
                    ));
                };
                let request = ConfirmRequest {
                    tool: spec.name.to_owned(),
                    category: spec.category,
                    arguments: serde_json::to_string_pretty(args)
                        .unwrap_or_else(|_| call.arguments.clone()),
                    level,
                    reason: danger.unwrap_or_else(|| {
                        format!(
                            "{} tools need confirmation at level {level}",
                            spec.category.as_str()
                        )
                    }),
                };
                match person.confirm(&request).await {
                    Some(answer) if answer.allows() => {
                        if let Err(e) = self
                            .perms
                            .remember(&*self.agent.store, spec.name, answer)
                            .await
                        {
                            tracing::warn!(error = %e, "cannot store a permission grant");
                        }
                        Ok(())
                    }
                    Some(_) => Err(format!(
                        "error: the user denied this `{}` call. Do not retry it; ask what they want instead.",
                        spec.name
                    )),
                    None => Err(format!(
                        "error: denied: the user did not confirm this `{}` call in time (no answer counts as no).",
                        spec.name
                    )),
                }
            }
        }
    }
}
