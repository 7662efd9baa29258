//! `delegate_task`'s description for the model. The agent runs it itself (a subagent needs the
//! agent's provider and tools; see `agent::subagent`), so calling it through the registry is an
//! error.

use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{Category, Tool, ToolContext, ToolError, ToolSpec, schema_of};

/// Arguments of `delegate_task`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DelegateArgs {
    /// The task, complete and self-contained: the subagent sees nothing of this conversation.
    pub task: String,
    /// Facts, file paths or constraints the subagent needs.
    #[serde(default)]
    pub context: Option<String>,
    /// Restrict the subagent to these toolsets (default: the same tools as you, minus
    /// delegation and questions to the user).
    #[serde(default)]
    pub toolsets: Option<Vec<String>>,
}

pub struct DelegateTask {
    spec: ToolSpec,
}

impl Default for DelegateTask {
    fn default() -> Self {
        DelegateTask {
            spec: ToolSpec {
                name: "delegate_task",
                description: "Hand a self-contained subtask to a subagent that works on it with its \
                    own context and tools and returns a summary. Use it for research or multi-step \
                    work whose details you do not need to keep in this conversation; several \
                    delegate_task calls in one response run in parallel (up to 3 at once). The \
                    subagent sees nothing of this conversation, so put everything it needs in \
                    `task` and `context`. It cannot ask the user anything or get approvals.",
                category: Category::Read,
                parallel_safe: true,
                parameters: schema_of::<DelegateArgs>(),
                timeout: Duration::from_secs(3600),
                max_output_chars: 20_000,
            },
        }
    }
}

#[async_trait]
impl Tool for DelegateTask {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, _args: Value, _ctx: &ToolContext) -> Result<String, ToolError> {
        Err(ToolError::Failed(
            "delegate_task is run by the agent, not the registry".into(),
        ))
    }
}
