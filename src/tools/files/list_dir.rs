//! `list_dir`: the entries of a workspace directory, a few levels deep, with file sizes.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::disk::{blocking, human_size};
use super::walk::{Budget, Entry, entries};
use super::{Intent, Workspace, Workspaces};
use crate::tools::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};

const MAX_ENTRIES: usize = 500;
const MAX_DEPTH: usize = 3;
/// Time the walk may take; below the tool's timeout so that partial results are returned.
const WALK_TIME: Duration = Duration::from_secs(15);

/// Lists directories inside the workspace.
pub struct ListDir {
    spec: ToolSpec,
    workspaces: Arc<Workspaces>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Directory to list, relative to the workspace root. Default "." (the root).
    #[serde(default)]
    path: Option<String>,
    /// How many levels to descend: 1 (default) lists only the directory's own entries, 3 at
    /// most.
    #[serde(default)]
    depth: Option<usize>,
    /// Also list hidden entries (names starting with "."). Default false.
    #[serde(default)]
    include_hidden: bool,
}

impl ListDir {
    pub fn new(workspaces: Arc<Workspaces>) -> Self {
        ListDir {
            spec: ToolSpec {
                name: "list_dir",
                description: "List a directory of the workspace: one entry per line as a path \
                    relative to the workspace root (usable directly in the other file tools), \
                    directories ending in `/`, files with their size. `depth` (1-3, default 1) \
                    also lists subdirectories' contents. Entries excluded by .gitignore or \
                    .ignore and hidden ones (unless `include_hidden`) are left out. At most 500 \
                    entries; to find files by name in a large tree use search_files with \
                    mode \"names\".",
                category: Category::Read,
                parallel_safe: true,
                parameters: schema_of::<Args>(),
                timeout: Duration::from_secs(20),
                max_output_chars: 30_000,
            },
            workspaces,
        }
    }
}

#[async_trait]
impl Tool for ListDir {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        let depth = args.depth.unwrap_or(1);
        if !(1..=MAX_DEPTH).contains(&depth) {
            return Err(ToolError::InvalidArguments(format!(
                "`depth` must be 1, 2 or 3, not {depth}"
            )));
        }
        let ws = self.workspaces.open(ctx).await?;
        let budget = Budget::new(ctx.cancel.clone(), WALK_TIME);
        blocking(move || {
            let user_path = args.path.as_deref().unwrap_or(".");
            let dir = ws.resolve(user_path, Intent::Read)?;
            let name = ws.display(&dir);
            if !ws.disk().stat(&dir).is_ok_and(|m| m.is_dir()) {
                return Err(ToolError::Failed(format!(
                    "`{name}` is a file, not a directory; use read_file to read it"
                )));
            }
            let mut lines = Vec::new();
            let mut truncated = false;
            let mut stopped = None;
            let mut unreadable = 0;
            for item in entries(&ws, &dir, args.include_hidden, Some(depth)) {
                if let Some(why) = budget.exhausted() {
                    stopped = Some(why);
                    break;
                }
                match item {
                    Ok((0, _)) => {}
                    Ok(_) if lines.len() == MAX_ENTRIES => {
                        truncated = true;
                        break;
                    }
                    Ok((_, entry)) => lines.push(describe(&ws, &entry)),
                    Err(_) => unreadable += 1,
                }
            }
            let mut notes = Vec::new();
            if lines.is_empty() {
                notes.push(format!("`{name}` has no entries to show"));
            } else if truncated {
                notes.push(format!(
                    "showing the first {MAX_ENTRIES} entries; list a subdirectory or use a \
                     smaller depth"
                ));
            } else {
                let n = lines.len();
                notes.push(format!("{n} {}", if n == 1 { "entry" } else { "entries" }));
            }
            if !args.include_hidden {
                notes.push("hidden and .gitignore'd entries not shown".into());
            }
            if let Some(why) = stopped {
                notes.push(format!("listing stopped early ({why}); it is incomplete"));
            }
            if unreadable > 0 {
                notes.push(format!("unreadable entries skipped: {unreadable}"));
            }
            lines.push(format!("[{}]", notes.join("; ")));
            Ok(lines.join("\n"))
        })
        .await
    }
}

/// One line for an entry: `dir/`, `file  (12.0 KB)` or `link -> target`.
fn describe(ws: &Workspace, entry: &Entry) -> String {
    let name = ws.display(&entry.path);
    let meta = entry.meta;
    if meta.is_dir() {
        return format!("{name}/");
    }
    if !meta.is_symlink() {
        return format!("{name}  ({})", human_size(meta.len));
    }
    match ws.disk().canonicalize(&entry.path) {
        Ok(target) if target.starts_with(ws.root()) => {
            let is_dir = ws.disk().stat(&target).is_ok_and(|m| m.is_dir());
            let slash = if is_dir { "/" } else { "" };
            format!("{name} -> {}{slash}", ws.display(&target))
        }
        Ok(_) => format!("{name} -> (outside the workspace, not accessible)"),
        Err(_) => format!("{name} -> (missing target)"),
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use serde_json::json;

    use super::*;

    fn tool() -> (tempfile::TempDir, ListDir) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, size) in [
            ("b.txt", 1536),
            ("a/one.rs", 10),
            ("a/deep/two.rs", 0),
            ("a/deep/deeper/three.rs", 3),
            ("a/deep/deeper/deepest/four.rs", 4),
            ("target/out.bin", 1),
            (".env", 1),
        ] {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "x".repeat(size)).unwrap();
        }
        fs::write(root.join(".gitignore"), "target/\n").unwrap();
        let ws = Arc::new(Workspaces::new(root).unwrap());
        (dir, ListDir::new(ws))
    }

    async fn list(t: &ListDir, args: Value) -> Result<String, ToolError> {
        t.call(args, &ToolContext::for_tests()).await
    }

    #[tokio::test]
    async fn lists_one_level_sorted_with_sizes() {
        let (_d, t) = tool();
        let out = list(&t, json!({})).await.unwrap();
        assert_eq!(
            out,
            "a/\nb.txt  (1.5 KB)\n[2 entries; hidden and .gitignore'd entries not shown]"
        );
    }

    #[tokio::test]
    async fn depth_descends_and_is_bounded() {
        let (_d, t) = tool();
        let out = list(&t, json!({"path": "a", "depth": 3})).await.unwrap();
        assert_eq!(
            out,
            "a/deep/\na/deep/deeper/\na/deep/deeper/deepest/\na/deep/deeper/three.rs  (3 B)\n\
             a/deep/two.rs  (0 B)\na/one.rs  (10 B)\n\
             [6 entries; hidden and .gitignore'd entries not shown]"
        );
        for depth in [0, 4] {
            let err = list(&t, json!({"depth": depth})).await.unwrap_err();
            assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
        }
    }

    #[tokio::test]
    async fn hidden_entries_on_request_and_ignored_dirs_by_name() {
        let (_d, t) = tool();
        let out = list(&t, json!({"include_hidden": true})).await.unwrap();
        assert_eq!(
            out,
            ".env  (1 B)\n.gitignore  (8 B)\na/\nb.txt  (1.5 KB)\n[4 entries]"
        );
        let out = list(&t, json!({"path": "target"})).await.unwrap();
        assert!(out.starts_with("target/out.bin  (1 B)\n"), "{out}");
    }

    #[tokio::test]
    async fn files_and_escapes_are_refused() {
        let (_d, t) = tool();
        let err = list(&t, json!({"path": "b.txt"})).await.unwrap_err();
        assert!(err.to_string().contains("use read_file"), "{err}");
        let err = list(&t, json!({"path": "a/../.."})).await.unwrap_err();
        assert!(err.to_string().contains("outside the workspace"), "{err}");
    }

    #[tokio::test]
    async fn long_listings_are_capped() {
        let (d, t) = tool();
        fs::create_dir(d.path().join("many")).unwrap();
        for i in 0..MAX_ENTRIES + 5 {
            fs::write(d.path().join(format!("many/{i:04}")), "").unwrap();
        }
        let out = list(&t, json!({"path": "many"})).await.unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), MAX_ENTRIES + 1);
        assert_eq!(lines[MAX_ENTRIES - 1], "many/0499  (0 B)");
        assert!(lines[MAX_ENTRIES].starts_with("[showing the first 500 entries"));
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn links_show_where_they_point_without_being_followed() {
        let (d, t) = tool();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("out")).unwrap();
        std::os::unix::fs::symlink(d.path().join("a"), d.path().join("c")).unwrap();
        let out = list(&t, json!({"depth": 2})).await.unwrap();
        assert!(out.contains("\nc -> a/\n"), "{out}");
        assert!(
            out.contains("\nout -> (outside the workspace, not accessible)\n"),
            "{out}"
        );
        assert!(!out.contains("c/one.rs"), "{out}");
    }
}
