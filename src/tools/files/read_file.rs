//! `read_file`: a text file from the workspace as numbered lines, a window at a time.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::disk::{blocking, cut_line, read_text};
use super::{Intent, Workspaces};
use crate::tools::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};

const DEFAULT_LIMIT: usize = 400;
const MAX_LIMIT: usize = 2000;
const MAX_LINE_CHARS: usize = 2000;
const MAX_OUTPUT_CHARS: usize = 30_000;
/// Room kept for the footer, so that it survives the registry's output cap.
const FOOTER_ROOM: usize = 300;

/// Reads text files inside the workspace.
pub struct ReadFile {
    spec: ToolSpec,
    workspaces: Arc<Workspaces>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The file, relative to the workspace root, e.g. "src/main.rs".
    path: String,
    /// First line to show, counting from 1. Default 1.
    #[serde(default)]
    offset: Option<usize>,
    /// How many lines to show. Default 400, at most 2000.
    #[serde(default)]
    limit: Option<usize>,
}

impl ReadFile {
    pub fn new(workspaces: Arc<Workspaces>) -> Self {
        ReadFile {
            spec: ToolSpec {
                name: "read_file",
                description: "Read a text file from the workspace. Each line comes back prefixed \
                    with its number and `| ` (e.g. `  12| fn main() {`); the prefix is not part of \
                    the file, so leave it out when you copy text into patch_file. Shows 400 lines \
                    from `offset` (default 1) unless `limit` says otherwise (at most 2000); the \
                    last line says how many lines the file has and which offset to read on from. \
                    Lines longer than 2000 characters are cut. Files over 10 MB and binary files \
                    are refused: use search_files to find what you need in them.",
                category: Category::Read,
                parallel_safe: true,
                parameters: schema_of::<Args>(),
                timeout: Duration::from_secs(20),
                max_output_chars: MAX_OUTPUT_CHARS,
            },
            workspaces,
        }
    }
}

#[async_trait]
impl Tool for ReadFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        let offset = args.offset.unwrap_or(1);
        if offset == 0 {
            return Err(ToolError::InvalidArguments(
                "`offset` counts from 1 (the first line)".into(),
            ));
        }
        let limit = match args.limit {
            Some(0) => {
                return Err(ToolError::InvalidArguments(
                    "`limit` must be at least 1".into(),
                ));
            }
            Some(n) => n.min(MAX_LIMIT),
            None => DEFAULT_LIMIT,
        };
        let ws = self.workspaces.open(ctx).await?;
        blocking(move || {
            let path = ws.resolve(&args.path, Intent::Read)?;
            let bytes = read_text(&ws, &path)?;
            let text = String::from_utf8_lossy(&bytes);
            let mut out = render(&ws.display(&path), &text, offset, limit)?;
            if matches!(text, std::borrow::Cow::Owned(_)) {
                out.push_str("\n[the file is not valid UTF-8; undecodable bytes show as �]");
            }
            Ok(out)
        })
        .await
    }
}

/// Lines `offset..offset + limit` of `text`, numbered, with a footer on how to read on.
fn render(name: &str, text: &str, offset: usize, limit: usize) -> Result<String, ToolError> {
    let total = text.lines().count();
    if total == 0 {
        return Ok(format!("[`{name}` is empty]"));
    }
    if offset > total {
        return Err(ToolError::InvalidArguments(format!(
            "offset {offset} is past the end of `{name}`, which has {total} lines"
        )));
    }
    let last_wanted = (offset - 1 + limit).min(total);
    let width = last_wanted.to_string().len().max(4);
    let mut out = String::new();
    let mut last_shown = offset - 1;
    for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        let numbered = format!("{:>width$}| {}\n", i + 1, cut_line(line, MAX_LINE_CHARS));
        if last_shown >= offset && out.len() + numbered.len() > MAX_OUTPUT_CHARS - FOOTER_ROOM {
            break;
        }
        out.push_str(&numbered);
        last_shown = i + 1;
    }
    let range = format!("lines {offset}-{last_shown} of {total}");
    let footer = if last_shown == total {
        format!("[{range}; end of file]")
    } else if last_shown < last_wanted {
        format!(
            "[{range}; stopped early to keep the output short; continue with offset={}]",
            last_shown + 1
        )
    } else {
        format!("[{range}; continue with offset={}]", last_shown + 1)
    };
    out.push_str(&footer);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::fs;

    use serde_json::json;

    use super::*;

    fn tool() -> (tempfile::TempDir, ReadFile) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Arc::new(Workspaces::new(dir.path()).unwrap());
        let lines: Vec<String> = (1..=1000).map(|i| format!("line {i}")).collect();
        fs::write(dir.path().join("long.txt"), lines.join("\n") + "\n").unwrap();
        (dir, ReadFile::new(ws))
    }

    async fn read(t: &ReadFile, args: Value) -> Result<String, ToolError> {
        t.call(args, &ToolContext::for_tests()).await
    }

    #[tokio::test]
    async fn default_window_is_400_numbered_lines() {
        let (_d, t) = tool();
        let out = read(&t, json!({"path": "long.txt"})).await.unwrap();
        assert!(out.starts_with("   1| line 1\n   2| line 2\n"), "{out}");
        assert!(out.contains(" 400| line 400\n"));
        assert!(!out.contains("line 401"));
        assert!(out.ends_with("[lines 1-400 of 1000; continue with offset=401]"));
    }

    #[tokio::test]
    async fn offset_and_limit_pick_a_range() {
        let (_d, t) = tool();
        let out = read(&t, json!({"path": "long.txt", "offset": 998, "limit": 10}))
            .await
            .unwrap();
        assert_eq!(
            out,
            " 998| line 998\n 999| line 999\n1000| line 1000\n[lines 998-1000 of 1000; end of file]"
        );
        let err = read(&t, json!({"path": "long.txt", "offset": 1001}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("offset 1001 is past the end"));
        let err = read(&t, json!({"path": "long.txt", "offset": 0}))
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments(_)));
    }

    #[tokio::test]
    async fn limit_is_capped_at_2000_and_output_stays_short() {
        let (d, t) = tool();
        let lines: Vec<String> = (1..=3000).map(|i| format!("{i:0>60}")).collect();
        fs::write(d.path().join("wide.txt"), lines.join("\n")).unwrap();
        let out = read(&t, json!({"path": "wide.txt", "limit": 5000}))
            .await
            .unwrap();
        assert!(out.len() <= MAX_OUTPUT_CHARS, "{}", out.len());
        assert!(
            out.contains("stopped early to keep the output short; continue with offset="),
            "{}",
            &out[out.len() - 200..]
        );
    }

    #[tokio::test]
    async fn long_lines_are_cut() {
        let (d, t) = tool();
        fs::write(d.path().join("one.txt"), "x".repeat(2500)).unwrap();
        let out = read(&t, json!({"path": "one.txt"})).await.unwrap();
        assert!(out.contains("… [500 more characters]"), "{out}");
    }

    #[tokio::test]
    async fn binary_big_and_missing_files_are_refused_with_a_reason() {
        let (d, t) = tool();
        fs::write(d.path().join("bin"), b"\x7fELF\0\0\x01").unwrap();
        let err = read(&t, json!({"path": "bin"})).await.unwrap_err();
        assert!(
            err.to_string().contains("`bin` looks like a binary file"),
            "{err}"
        );

        let big = fs::File::create(d.path().join("big.log")).unwrap();
        big.set_len(super::super::disk::MAX_FILE_BYTES + 1).unwrap();
        let err = read(&t, json!({"path": "big.log"})).await.unwrap_err();
        assert!(
            err.to_string().contains("more than the 10.0 MB limit"),
            "{err}"
        );

        let err = read(&t, json!({"path": "nope.txt"})).await.unwrap_err();
        assert!(
            err.to_string().contains("`nope.txt` does not exist"),
            "{err}"
        );

        fs::create_dir(d.path().join("sub")).unwrap();
        let err = read(&t, json!({"path": "sub"})).await.unwrap_err();
        assert!(err.to_string().contains("is a directory; use list_dir"));
    }

    #[tokio::test]
    async fn crlf_and_empty_files_read_cleanly() {
        let (d, t) = tool();
        fs::write(d.path().join("dos.txt"), "a\r\nb\r\n").unwrap();
        fs::write(d.path().join("empty.txt"), "").unwrap();
        let out = read(&t, json!({"path": "dos.txt"})).await.unwrap();
        assert_eq!(out, "   1| a\n   2| b\n[lines 1-2 of 2; end of file]");
        let out = read(&t, json!({"path": "empty.txt"})).await.unwrap();
        assert_eq!(out, "[`empty.txt` is empty]");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn reading_through_a_link_to_outside_is_refused() {
        let (d, t) = tool();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("out")).unwrap();
        let err = read(&t, json!({"path": "out/secret"})).await.unwrap_err();
        assert!(err.to_string().contains("outside the workspace"), "{err}");
        let err = read(&t, json!({"path": "/etc/passwd"})).await.unwrap_err();
        assert!(err.to_string().contains("outside the workspace"), "{err}");
    }
}
