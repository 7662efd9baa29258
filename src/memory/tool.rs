//! The `memory` tool: add, replace and remove entries of MEMORY.md and USER.md, within their caps.

use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::store::{Kind, MemoryFiles, size};
use crate::tools::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Action {
    Add,
    Replace,
    Remove,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Target {
    /// Your own notes (MEMORY.md).
    Memory,
    /// What you know about the user (USER.md).
    User,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    action: Action,
    target: Target,
    /// The new entry (add, replace): one fact or note, short and self-contained.
    #[serde(default)]
    content: Option<String>,
    /// Unique text of the entry to replace or remove.
    #[serde(default)]
    old_text: Option<String>,
}

/// Edits the caller's memory files.
pub struct MemoryTool {
    spec: ToolSpec,
    files: MemoryFiles,
}

impl MemoryTool {
    pub fn new(files: MemoryFiles) -> Self {
        MemoryTool {
            spec: ToolSpec {
                name: "memory",
                description: "Save durable knowledge across conversations. target \"user\" (USER.md): \
                    facts about the user worth knowing next time (name, preferences, projects, \
                    circumstances). target \"memory\" (MEMORY.md): your own notes (conventions, \
                    environment facts, lessons learned). Save only what will matter later, one fact \
                    per entry; never secrets. Both files are small (about 2200 and 1375 \
                    characters): replace or remove stale entries instead of piling up. What you \
                    save appears in your instructions from the next conversation on.",
                category: Category::Write,
                parallel_safe: false,
                parameters: schema_of::<Args>(),
                timeout: Duration::from_secs(10),
                max_output_chars: 4_000,
            },
            files,
        }
    }
}

fn kind(t: Target) -> Kind {
    match t {
        Target::Memory => Kind::Memory,
        Target::User => Kind::User,
    }
}

/// Apply one edit to `entries`; errors are written for the model.
fn edit(
    entries: &mut Vec<String>,
    args: &Args,
    file: &str,
    cap: usize,
) -> Result<String, ToolError> {
    let content = || {
        args.content
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .ok_or_else(|| {
                ToolError::InvalidArguments("`content` is required for this action".into())
            })
    };
    let find = |entries: &[String]| -> Result<usize, ToolError> {
        let needle = args
            .old_text
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                ToolError::InvalidArguments("`old_text` is required for this action".into())
            })?;
        let hits: Vec<usize> = entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.contains(needle))
            .map(|(i, _)| i)
            .collect();
        match hits.as_slice() {
            [one] => Ok(*one),
            [] => Err(ToolError::Failed(format!(
                "no entry of {file} contains `{needle}`"
            ))),
            many => Err(ToolError::Failed(format!(
                "{} entries of {file} contain `{needle}`; give more of the entry's text",
                many.len()
            ))),
        }
    };
    let done = match args.action {
        Action::Add => {
            let c = content()?;
            if entries.iter().any(|e| e == c) {
                return Ok(format!("{file} already has this entry"));
            }
            entries.push(c.to_owned());
            "added"
        }
        Action::Replace => {
            let at = find(entries)?;
            entries[at] = content()?.to_owned();
            "replaced"
        }
        Action::Remove => {
            let at = find(entries)?;
            entries.remove(at);
            "removed"
        }
    };
    let used = size(entries);
    if used > cap {
        return Err(ToolError::Failed(format!(
            "{file} would be {used} characters, over its limit of {cap}; nothing was saved. \
             Remove or shorten entries first (replace several with one summary)."
        )));
    }
    Ok(format!(
        "{done}; {file} now has {} entries, {used}/{cap} characters",
        entries.len()
    ))
}

#[async_trait]
impl Tool for MemoryTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        let files = self.files.clone();
        let owner = ctx.session.owner();
        tokio::task::spawn_blocking(move || {
            let kind = kind(args.target);
            let file = kind.file_name();
            let io = |e: std::io::Error| ToolError::Failed(format!("cannot access {file}: {e}"));
            let limit = files.limits.of(kind);
            files
                .update(&owner, kind, |entries| {
                    // A refused edit leaves the file as it was.
                    let unchanged = entries.clone();
                    let out = edit(entries, &args, file, limit);
                    if out.is_err() {
                        *entries = unchanged;
                    }
                    out
                })
                .map_err(io)?
        })
        .await
        .map_err(|e| ToolError::Failed(format!("memory update failed: {e}")))?
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::memory::MemoryLimits;

    fn tool(dir: &std::path::Path) -> MemoryTool {
        MemoryTool::new(MemoryFiles::new(
            dir,
            MemoryLimits {
                memory_chars: 60,
                user_chars: 40,
            },
        ))
    }

    #[tokio::test]
    async fn entries_are_added_replaced_and_removed_within_the_caps() {
        let dir = tempfile::tempdir().unwrap();
        let t = tool(dir.path());
        let ctx = ToolContext::for_tests();
        let call = |v| t.call(v, &ctx);
        let out = call(json!({"action": "add", "target": "user", "content": "Name: Ann"}))
            .await
            .unwrap();
        assert_eq!(out, "added; USER.md now has 1 entries, 9/40 characters");
        call(json!({"action": "add", "target": "user", "content": "Likes tea"}))
            .await
            .unwrap();
        let err = call(json!({"action": "add", "target": "user", "content": "Lives in a very long street name"}))
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("over its limit of 40; nothing was saved"),
            "{err}"
        );
        call(json!({"action": "replace", "target": "user", "old_text": "tea", "content": "Likes coffee"}))
            .await
            .unwrap();
        let err = call(json!({"action": "remove", "target": "user", "old_text": "Likes"})).await;
        assert!(err.is_ok(), "one entry contains `Likes`");
        let err = call(json!({"action": "remove", "target": "user", "old_text": "nothing"}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("no entry of USER.md"), "{err}");
        let files = MemoryFiles::new(dir.path(), MemoryLimits::default());
        assert_eq!(
            files.entries("cli:test", Kind::User).unwrap(),
            ["Name: Ann"]
        );
        assert!(
            call(json!({"action": "add", "target": "memory"}))
                .await
                .is_err()
        );
    }
}
