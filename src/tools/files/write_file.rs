//! `write_file`: create a file in the workspace or replace its whole content, atomically.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::disk::{MAX_FILE_BYTES, blocking, human_size, io_error, plural};
use super::{Intent, Workspaces};
use crate::tools::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};

/// Writes whole files inside the workspace.
pub struct WriteFile {
    spec: ToolSpec,
    workspaces: Arc<Workspaces>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The file, relative to the workspace root, e.g. "notes/todo.md". Missing parent
    /// directories are created.
    path: String,
    /// The complete new content of the file.
    content: String,
}

impl WriteFile {
    pub fn new(workspaces: Arc<Workspaces>) -> Self {
        WriteFile {
            spec: ToolSpec {
                name: "write_file",
                description: "Create a file in the workspace, or replace everything in an \
                    existing one, with `content`. Missing parent directories are created. To \
                    change part of an existing file use patch_file instead: it cannot lose the \
                    rest of the file. The write is atomic (other readers see the old or the new \
                    file, never half of it). Content is limited to 10 MB.",
                category: Category::Write,
                parallel_safe: false,
                parameters: schema_of::<Args>(),
                timeout: Duration::from_secs(20),
                max_output_chars: 1_000,
            },
            workspaces,
        }
    }
}

#[async_trait]
impl Tool for WriteFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn writes(&self, args: &Value) -> Vec<PathBuf> {
        self.workspaces.path_argument(args)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        if args.content.len() as u64 > MAX_FILE_BYTES {
            return Err(ToolError::InvalidArguments(format!(
                "content is {}, more than the {} limit",
                human_size(args.content.len() as u64),
                human_size(MAX_FILE_BYTES)
            )));
        }
        let ws = self.workspaces.open(ctx).await?;
        blocking(move || {
            let path = ws.resolve(&args.path, Intent::Write)?;
            let name = ws.display(&path);
            let existed = match ws.disk().stat(&path) {
                Ok(meta) if meta.is_dir() => {
                    return Err(ToolError::Failed(format!(
                        "`{name}` is a directory; give a file path"
                    )));
                }
                Ok(_) => true,
                Err(_) => false,
            };
            if let Some(parent) = path.parent() {
                ws.disk()
                    .create_dirs(parent)
                    .map_err(|e| io_error("create the directories for", &name, &e))?;
            }
            ws.disk()
                .replace(&path, args.content.as_bytes())
                .map_err(|e| io_error("write", &name, &e))?;
            Ok(format!(
                "{} `{name}`: {}, {}",
                if existed { "replaced" } else { "created" },
                plural(args.content.len(), "byte"),
                plural(args.content.lines().count(), "line"),
            ))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use serde_json::json;

    use super::*;

    /// A workspace `ws` inside a fresh directory, so escapes land somewhere we can check.
    struct Dirs {
        outer: tempfile::TempDir,
        ws: std::path::PathBuf,
    }

    impl Dirs {
        fn path(&self) -> &std::path::Path {
            &self.ws
        }
    }

    fn tool() -> (Dirs, WriteFile) {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        let workspace = Arc::new(Workspaces::new(&ws).unwrap());
        (Dirs { outer, ws }, WriteFile::new(workspace))
    }

    async fn write(t: &WriteFile, args: Value) -> Result<String, ToolError> {
        t.call(args, &ToolContext::for_tests()).await
    }

    #[tokio::test]
    async fn creates_parent_directories_and_reports_size() {
        let (d, t) = tool();
        let out = write(&t, json!({"path": "a/b/c.txt", "content": "one\ntwo\n"}))
            .await
            .unwrap();
        assert_eq!(out, "created `a/b/c.txt`: 8 bytes, 2 lines");
        assert_eq!(
            fs::read_to_string(d.path().join("a/b/c.txt")).unwrap(),
            "one\ntwo\n"
        );
        let out = write(&t, json!({"path": "a/b/c.txt", "content": "x"}))
            .await
            .unwrap();
        assert_eq!(out, "replaced `a/b/c.txt`: 1 byte, 1 line");
        // Only the target is left in the directory: the temporary file was renamed over it.
        let names: Vec<_> = fs::read_dir(d.path().join("a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["c.txt"]);
    }

    #[tokio::test]
    async fn escapes_and_directories_are_refused() {
        let (d, t) = tool();
        for path in ["../x.txt", "a/../../x.txt", "/tmp/hermes-write-test.txt"] {
            let err = write(&t, json!({"path": path, "content": "x"}))
                .await
                .unwrap_err();
            assert!(err.to_string().contains("outside the workspace"), "{err}");
        }
        assert!(!d.outer.path().join("x.txt").exists());
        fs::create_dir(d.path().join("dir")).unwrap();
        let err = write(&t, json!({"path": "dir", "content": "x"}))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "`dir` is a directory; give a file path");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn writing_through_a_link_to_outside_is_refused() {
        let (d, t) = tool();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("victim"), "keep").unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("victim"), d.path().join("v")).unwrap();
        for path in ["out/new.txt", "out/victim", "v"] {
            let err = write(&t, json!({"path": path, "content": "x"}))
                .await
                .unwrap_err();
            assert!(err.to_string().contains("outside the workspace"), "{err}");
        }
        assert_eq!(
            fs::read_to_string(outside.path().join("victim")).unwrap(),
            "keep"
        );
        assert!(!outside.path().join("new.txt").exists());
    }

    #[test]
    fn writes_names_the_target_file() {
        let (_d, t) = tool();
        assert_eq!(
            t.writes(&json!({"path": "a/./b.txt"})),
            vec![PathBuf::from("a/b.txt")]
        );
        assert_eq!(
            t.writes(&json!({"path": "a/../b.txt"})),
            vec![PathBuf::from("b.txt")]
        );
        assert!(t.writes(&json!({"path": "../b.txt"})).is_empty());
    }
}
