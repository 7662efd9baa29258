//! [`McpTool`]: one tool of an MCP server, as the agent's other tools are: a spec for the model
//! (the server's description and input schema, the permission category its annotations give)
//! and a call that goes to the server.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::server::{CallError, Listed, Server};
use crate::policy::Category;
use crate::tools::{Tool, ToolContext, ToolError, ToolSpec};

/// Output kept for the model from one call (the agent's own cap applies too).
const MAX_OUTPUT_CHARS: usize = 30_000;

/// A tool of an MCP server.
pub struct McpTool {
    spec: ToolSpec,
    server: Arc<Server>,
    /// The server's own name for it.
    remote: String,
}

impl McpTool {
    /// `listed` of `server`, named `name` before the model.
    pub fn new(name: &str, listed: &Listed, server: Arc<Server>) -> Self {
        let hints = listed.annotations.as_ref();
        let read_only = hints.and_then(|a| a.read_only_hint) == Some(true);
        let category = server.config.category.unwrap_or(if read_only {
            Category::Read
        } else if hints.and_then(|a| a.destructive_hint) == Some(true) {
            Category::System
        } else {
            Category::Write
        });
        let said = listed
            .description
            .as_deref()
            .or(listed.title.as_deref())
            .unwrap_or("")
            .trim();
        let description = format!(
            "{}{}(from the MCP server `{}`)",
            said,
            if said.is_empty() { "" } else { " " },
            server.name
        );
        let mut parameters = Value::Object((*listed.input_schema).clone());
        if let Some(obj) = parameters.as_object_mut() {
            obj.remove("$schema");
            obj.entry("type").or_insert_with(|| "object".into());
            obj.entry("properties")
                .or_insert_with(|| Value::Object(Default::default()));
        }
        McpTool {
            spec: ToolSpec {
                name: intern(name),
                description: intern(&description),
                category,
                parallel_safe: read_only,
                parameters,
                // The server's own timeout ends the call first, with its message.
                timeout: Duration::from_secs(server.config.timeout_secs + 5),
                max_output_chars: MAX_OUTPUT_CHARS,
            },
            remote: listed.name.to_string(),
            server,
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let arguments = match args {
            Value::Object(map) => map,
            Value::Null => Default::default(),
            other => {
                return Err(ToolError::InvalidArguments(format!(
                    "the arguments must be an object, not {other}"
                )));
            }
        };
        match self.server.call(&self.remote, arguments, &ctx.cancel).await {
            Ok(result) => super::content::text_of(result).map_err(ToolError::Failed),
            Err(CallError::Cancelled) => Err(ToolError::Cancelled),
            Err(CallError::Failed(why)) => Err(ToolError::Failed(why)),
        }
    }
}

/// One `'static` copy of each distinct text (tool specs name their tools with `&'static str`);
/// MCP tools are few and their texts change rarely, so the copies stay few.
fn intern(text: &str) -> &'static str {
    static TEXTS: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut texts = TEXTS.lock().unwrap_or_else(|e| e.into_inner());
    let texts = texts.get_or_insert_with(HashSet::new);
    if let Some(known) = texts.get(text) {
        return known;
    }
    let leaked: &'static str = Box::leak(text.to_owned().into_boxed_str());
    texts.insert(leaked);
    leaked
}
