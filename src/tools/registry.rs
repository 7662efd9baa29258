//! [`ToolRegistry`]: the tools of one agent, their schemas for the model, and safe execution
//! (argument parsing, timeout, cancellation, output cap: a failing tool is data for the model,
//! never a crash of the turn).

use std::sync::Arc;

use serde_json::Value;

use super::{Tool, ToolContext, ToolError};
use crate::llm::{ToolCall, ToolSchema};

/// The tools available to an agent, in registration order (kept stable so the prompt prefix is
/// byte-identical across turns).
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a tool. Panics on a duplicate name: that is a programming error.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let name = tool.spec().name;
        assert!(self.get(name).is_none(), "tool `{name}` registered twice");
        self.tools.push(tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.spec().name == name)
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.spec().name).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Schemas of the tools named in `enabled`, in registration order.
    pub fn schemas_of(&self, enabled: &[&str]) -> Vec<ToolSchema> {
        self.tools
            .iter()
            .filter(|t| enabled.contains(&t.spec().name))
            .map(|t| {
                let s = t.spec();
                ToolSchema {
                    name: s.name.to_owned(),
                    description: s.description.to_owned(),
                    parameters: s.parameters.clone(),
                }
            })
            .collect()
    }

    /// Run one call and return the text the model sees: the result, cut to `max_chars`, or
    /// `error: …`, with every registered secret scrubbed (an MCP server or a web page may echo one).
    pub async fn execute(&self, call: &ToolCall, ctx: &ToolContext, max_chars: usize) -> String {
        let max_chars = self
            .get(&call.name)
            .map_or(max_chars, |t| max_chars.min(t.spec().max_output_chars));
        let outcome = self.try_execute(call, ctx).await;
        let text = match outcome {
            Ok(text) => text,
            Err(e) => {
                tracing::debug!(tool = %call.name, error = %e, "tool call failed");
                format!("error: {e}")
            }
        };
        cap(hermes_adapter::scrub(&text), max_chars)
    }

    async fn try_execute(&self, call: &ToolCall, ctx: &ToolContext) -> Result<String, ToolError> {
        let tool = self
            .get(&call.name)
            .ok_or_else(|| ToolError::Unknown(call.name.clone()))?;
        let raw = if call.arguments.trim().is_empty() {
            "{}"
        } else {
            &call.arguments
        };
        let args: Value = serde_json::from_str(raw)
            .map_err(|e| ToolError::InvalidArguments(format!("not valid JSON ({e})")))?;
        if !args.is_object() {
            return Err(ToolError::InvalidArguments(
                "arguments must be a JSON object".into(),
            ));
        }
        let timeout = tool.spec().timeout;
        tokio::select! {
            r = tokio::time::timeout(timeout, tool.call(args, ctx)) => {
                r.map_err(|_| ToolError::TimedOut(timeout))?
            }
            _ = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
        }
    }
}

/// Cut `text` to about `max` characters, keeping the beginning and the end (where errors and
/// summaries usually are) and saying how much was left out in between.
fn cap(text: String, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text;
    }
    let head = max / 2;
    let tail = max - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(total - tail).collect();
    format!(
        "{start}\n[… output cut: {} of {total} characters omitted …]\n{end}",
        total - max
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use async_trait::async_trait;
    use serde_json::json;

    use super::*;
    use crate::tools::{Category, ToolSpec};

    struct Echo(ToolSpec);

    #[async_trait]
    impl Tool for Echo {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        async fn call(&self, args: Value, _: &ToolContext) -> Result<String, ToolError> {
            if args.get("sleep").is_some() {
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            Ok(args.to_string())
        }
    }

    fn registry() -> ToolRegistry {
        let mut r = ToolRegistry::new();
        r.register(Arc::new(Echo(ToolSpec {
            name: "echo",
            description: "echoes",
            category: Category::Read,
            parallel_safe: true,
            parameters: json!({"type": "object"}),
            timeout: Duration::from_secs(5),
            max_output_chars: 1000,
        })));
        r
    }

    fn ctx() -> ToolContext {
        ToolContext::for_tests()
    }

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: "1".into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    #[tokio::test]
    async fn bad_calls_become_errors_for_the_model() {
        let r = registry();
        assert_eq!(
            r.execute(&call("echo", r#"{"a":1}"#), &ctx(), 100).await,
            r#"{"a":1}"#
        );
        assert_eq!(r.execute(&call("echo", ""), &ctx(), 100).await, "{}");
        assert!(
            r.execute(&call("nope", "{}"), &ctx(), 100)
                .await
                .starts_with("error: no tool named `nope`")
        );
        assert!(
            r.execute(&call("echo", "{oops"), &ctx(), 100)
                .await
                .starts_with("error: invalid arguments: not valid JSON")
        );
        assert!(
            r.execute(&call("echo", "[1]"), &ctx(), 100)
                .await
                .contains("must be a JSON object")
        );
    }

    #[tokio::test(start_paused = true)]
    async fn slow_tools_time_out() {
        let out = registry()
            .execute(&call("echo", r#"{"sleep":1}"#), &ctx(), 100)
            .await;
        assert_eq!(out, "error: timed out after 5s");
    }

    #[test]
    fn long_output_keeps_head_and_tail_with_a_note() {
        let out = cap(format!("{}{}", "a".repeat(25), "z".repeat(25)), 10);
        assert_eq!(
            out,
            "aaaaa\n[… output cut: 40 of 50 characters omitted …]\nzzzzz"
        );
        assert_eq!(cap("short".into(), 10), "short");
    }
}
