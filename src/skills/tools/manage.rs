//! `skill_manage`: the agent writes and maintains its own skills in the user's skills directory.

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::changes::{Change, Modify, apply};
use crate::skills::files::relative;
use crate::skills::{SKILL_MD, SkillSources, check_name, forget_usage};
use crate::store::Store;
use crate::tools::files::disk::blocking;
use crate::tools::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Action {
    /// A new skill; `content` is its whole SKILL.md.
    Create,
    /// Replace `old_text` (exact, occurring once) with `new_text` in SKILL.md, or in `path`.
    Patch,
    /// Replace the whole SKILL.md with `content`.
    Edit,
    /// Write `content` to the supporting file `path` (references/, scripts/, assets/…).
    WriteFile,
    /// Remove the supporting file `path`.
    RemoveFile,
    /// Delete the skill and all its files.
    Delete,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    action: Action,
    /// The skill's name: lowercase letters, digits and hyphens, e.g. "deploy-checklist". It is
    /// also the skill's folder and the `name` in its frontmatter.
    name: String,
    /// create, edit: the whole SKILL.md; write_file: the file's text.
    #[serde(default)]
    content: Option<String>,
    /// patch: the exact text to replace; it must occur exactly once.
    #[serde(default)]
    old_text: Option<String>,
    /// patch: the replacement (empty to delete `old_text`).
    #[serde(default)]
    new_text: Option<String>,
    /// write_file, remove_file (and patch of a file other than SKILL.md): a path inside the
    /// skill's folder, e.g. "references/api.md".
    #[serde(default)]
    path: Option<String>,
}

/// Creates, changes and deletes the user's skills.
pub struct SkillManage {
    spec: ToolSpec,
    sources: SkillSources,
    store: Store,
}

impl SkillManage {
    /// Skills are written to `sources.user_dir()` only.
    pub fn new(sources: SkillSources, store: Store) -> Self {
        SkillManage {
            spec: ToolSpec {
                name: "skill_manage",
                description: "Save and maintain skills: reusable how-tos you read later with \
                    skill_view. Create one after a complex task (5+ tool calls), a tricky fix or \
                    a workflow worth repeating; patch one as soon as you find it wrong or \
                    outdated. SKILL.md is a line `---`, YAML with `name` (the skill's name) and \
                    `description` (one line: what it does and when to use it; optionally \
                    `metadata: {hermes: {tags: [...]}}` and `version`), a line `---`, then \
                    Markdown: when to use it, the steps, pitfalls, how to check the result. \
                    Actions: create, patch (exact old_text -> new_text), edit (whole SKILL.md), \
                    write_file / remove_file (supporting files such as references/x.md), delete. \
                    Invalid content is refused and nothing changes; a bundled skill is copied to \
                    your skills before its first change.",
                category: Category::Write,
                parallel_safe: false,
                parameters: schema_of::<Args>(),
                timeout: Duration::from_secs(30),
                max_output_chars: 8_000,
            },
            sources,
            store,
        }
    }
}

fn required(value: Option<String>, field: &str, action: &str) -> Result<String, ToolError> {
    value.ok_or_else(|| {
        ToolError::InvalidArguments(format!("`{field}` is required for action {action}"))
    })
}

fn change(args: Args) -> Result<Change, ToolError> {
    Ok(match args.action {
        Action::Create => Change::Create {
            content: required(args.content, "content", "create")?,
        },
        Action::Delete => Change::Delete,
        Action::Edit => Change::Modify(Modify::Edit {
            content: required(args.content, "content", "edit")?,
        }),
        Action::Patch => Change::Modify(Modify::Patch {
            path: args.path,
            old_text: required(args.old_text, "old_text", "patch")?,
            new_text: required(args.new_text, "new_text", "patch")?,
        }),
        Action::WriteFile => Change::Modify(Modify::WriteFile {
            path: required(args.path, "path", "write_file")?,
            content: required(args.content, "content", "write_file")?,
        }),
        Action::RemoveFile => Change::Modify(Modify::RemoveFile {
            path: required(args.path, "path", "remove_file")?,
        }),
    })
}

#[async_trait]
impl Tool for SkillManage {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The skill's folder (create, delete) or the file written, worked out from the arguments.
    fn writes(&self, args: &Value) -> Vec<PathBuf> {
        let Some(name) = args.get("name").and_then(Value::as_str) else {
            return Vec::new();
        };
        if check_name(name).is_err() {
            return Vec::new();
        }
        let dir = self.sources.user_dir().join(name);
        let action = args.get("action").and_then(Value::as_str).unwrap_or("");
        let path = args.get("path").and_then(Value::as_str);
        match (action, path) {
            ("create" | "delete", _) => vec![dir],
            ("edit", _) | ("patch", None) => vec![dir.join(SKILL_MD)],
            (_, Some(p)) => relative(p).map(|rel| dir.join(rel)).into_iter().collect(),
            _ => Vec::new(),
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        if !ctx.role.is_operator() {
            // Skills are shared: every user's prompt lists them. A user's turn (and whatever a
            // page or a mail put into it) must not rewrite them.
            return Err(ToolError::Failed(
                "only an operator can change the shared skills; tell the user to ask an operator (the approach can be noted in memory instead)".into(),
            ));
        }
        let args: Args = parse_args(args)?;
        let name = args.name.trim().to_owned();
        // A deleted copy of a bundled skill leaves the bundled one, whose uses still count.
        let forget = args.action == Action::Delete && self.sources.bundled(&name).is_none();
        let change = change(args)?;
        let sources = self.sources.clone();
        let skill = name.clone();
        let out = blocking(move || apply(&sources, &skill, change)).await?;
        if forget && let Err(e) = forget_usage(&*self.store, &name).await {
            tracing::warn!(skill = %name, "cannot forget the uses of a deleted skill: {e}");
        }
        Ok(out)
    }
}
