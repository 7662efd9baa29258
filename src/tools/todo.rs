//! `todo`: the task list the model keeps for a session, so long work stays on track across
//! iterations and restarts.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};
use crate::store::{Settings, key_scope};

const MAX_ITEMS: usize = 50;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Status {
    Pending,
    InProgress,
    Completed,
    Cancelled,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Item {
    /// Short stable id, e.g. "1" or "tests".
    id: String,
    /// What to do, one line.
    content: String,
    status: Status,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Items to write. Omit to just read the list.
    #[serde(default)]
    todos: Option<Vec<Item>>,
    /// true: update items by id and keep the others; false (default): replace the whole list.
    #[serde(default)]
    merge: bool,
}

/// The per-session task list.
pub struct Todo {
    spec: ToolSpec,
    store: Arc<dyn Settings>,
}

impl Todo {
    pub fn new(store: Arc<dyn Settings>) -> Self {
        Todo {
            store,
            spec: ToolSpec {
                name: "todo",
                description: "Keep a task list for multi-step work in this conversation. Write the \
                    plan as items (pending / in_progress / completed / cancelled), keep exactly one \
                    in_progress, and update it as you go; call without arguments to read it. \
                    Use it for tasks of 3 or more steps; skip it for simple questions.",
                category: Category::Read,
                parallel_safe: false,
                parameters: schema_of::<Args>(),
                timeout: Duration::from_secs(10),
                max_output_chars: 10_000,
            },
        }
    }
}

fn render(items: &[Item]) -> String {
    if items.is_empty() {
        return "The task list is empty.".into();
    }
    let done = items
        .iter()
        .filter(|i| i.status == Status::Completed)
        .count();
    let mut out = format!("Task list ({done}/{} done):\n", items.len());
    for i in items {
        let mark = match i.status {
            Status::Pending => "[ ]",
            Status::InProgress => "[>]",
            Status::Completed => "[x]",
            Status::Cancelled => "[-]",
        };
        out.push_str(&format!("{mark} {}. {}\n", i.id, i.content));
    }
    out
}

#[async_trait]
impl Tool for Todo {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        let scope = key_scope(&ctx.session);
        let stored = self
            .store
            .setting(&scope, "todos")
            .await
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let mut items: Vec<Item> = stored
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default();
        let Some(new) = args.todos else {
            return Ok(render(&items));
        };
        if args.merge {
            for n in new {
                match items.iter_mut().find(|i| i.id == n.id) {
                    Some(existing) => *existing = n,
                    None => items.push(n),
                }
            }
        } else {
            items = new;
        }
        if items.len() > MAX_ITEMS {
            return Err(ToolError::InvalidArguments(format!(
                "at most {MAX_ITEMS} items; drop completed ones or merge steps"
            )));
        }
        let json = serde_json::to_string(&items).map_err(|e| ToolError::Failed(e.to_string()))?;
        self.store
            .set_setting(&scope, "todos", &json)
            .await
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        Ok(render(&items))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn the_list_is_replaced_merged_and_read_back() {
        let tool = Todo::new(crate::store::Store::open_in_memory().unwrap().settings());
        let ctx = ToolContext::for_tests();
        let out = tool
            .call(
                json!({"todos": [
                    {"id": "1", "content": "read the logs", "status": "in_progress"},
                    {"id": "2", "content": "fix the bug", "status": "pending"}
                ]}),
                &ctx,
            )
            .await
            .unwrap();
        assert!(out.starts_with("Task list (0/2 done)"), "{out}");
        tool.call(json!({"merge": true, "todos": [{"id": "1", "content": "read the logs", "status": "completed"}]}), &ctx)
            .await
            .unwrap();
        let out = tool.call(json!({}), &ctx).await.unwrap();
        assert_eq!(
            out,
            "Task list (1/2 done):\n[x] 1. read the logs\n[ ] 2. fix the bug\n"
        );
        let err = tool
            .call(
                json!({"todos": [{"id": "1", "content": "x", "status": "maybe"}]}),
                &ctx,
            )
            .await;
        assert!(matches!(err, Err(ToolError::InvalidArguments(_))));
    }
}
