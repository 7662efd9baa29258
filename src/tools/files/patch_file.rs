//! `patch_file`: replace an exact piece of text in a workspace file, refusing when the piece is
//! missing or ambiguous and saying how to fix the call.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::disk::{blocking, io_error, plural, read_text};
use super::{Intent, Workspaces};
use crate::tools::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};

/// Hunk headers listed in the summary before the rest are only counted.
const MAX_HUNKS_SHOWN: usize = 20;
/// Line numbers listed when `old_text` is ambiguous.
const MAX_LINES_LISTED: usize = 20;

/// Edits files inside the workspace by exact text replacement.
pub struct PatchFile {
    spec: ToolSpec,
    workspaces: Arc<Workspaces>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The file to change, relative to the workspace root.
    path: String,
    /// The exact text to replace, whitespace and indentation included, as it appears in the
    /// file (without read_file's line-number prefixes).
    old_text: String,
    /// The text to put in its place (empty to delete it).
    new_text: String,
    /// Replace every occurrence instead of requiring exactly one. Default false.
    #[serde(default)]
    replace_all: bool,
}

impl PatchFile {
    pub fn new(workspaces: Arc<Workspaces>) -> Self {
        PatchFile {
            spec: ToolSpec {
                name: "patch_file",
                description: "Change part of a text file in the workspace: replace `old_text`, \
                    which must appear in the file exactly (same whitespace and indentation, \
                    without read_file's `  12| ` prefixes), with `new_text`. By default \
                    `old_text` must occur exactly once; include a few surrounding lines to make it \
                    unique, or set `replace_all` to change every occurrence. Read the file first. \
                    The write is atomic; the answer lists the changed line ranges.",
                category: Category::Write,
                parallel_safe: false,
                parameters: schema_of::<Args>(),
                timeout: Duration::from_secs(20),
                max_output_chars: 4_000,
            },
            workspaces,
        }
    }
}

#[async_trait]
impl Tool for PatchFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn writes(&self, args: &Value) -> Vec<PathBuf> {
        self.workspaces.path_argument(args)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        if args.old_text.is_empty() {
            return Err(ToolError::InvalidArguments(
                "`old_text` is empty; to create a file or replace all of it use write_file".into(),
            ));
        }
        if args.old_text == args.new_text {
            return Err(ToolError::InvalidArguments(
                "`old_text` and `new_text` are the same; there is nothing to change".into(),
            ));
        }
        let ws = self.workspaces.open(ctx).await?;
        blocking(move || {
            let path = ws.resolve(&args.path, Intent::Read)?;
            let name = ws.display(&path);
            let content = String::from_utf8(read_text(&ws, &path)?).map_err(|_| {
                ToolError::Failed(format!(
                    "`{name}` is not valid UTF-8, so it cannot be patched safely; use write_file \
                     to replace it whole"
                ))
            })?;
            let patched = apply(
                &name,
                &content,
                &args.old_text,
                &args.new_text,
                args.replace_all,
            )?;
            ws.disk()
                .replace(&path, patched.content.as_bytes())
                .map_err(|e| io_error("write", &name, &e))?;
            Ok(patched.summary)
        })
        .await
    }
}

/// A file's new content and what to tell the model about the change.
#[derive(Debug)]
struct Patched {
    content: String,
    summary: String,
}

/// Replace `old` with `new` in `content` under the tool's rules.
fn apply(
    name: &str,
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Patched, ToolError> {
    let mut old = old.to_owned();
    let mut new = new.to_owned();
    let mut note = "";
    // read_file shows lines without their `\r`; match a CRLF file the way the model saw it.
    if !content.contains(old.as_str()) && content.contains("\r\n") && !old.contains('\r') {
        old = old.replace('\n', "\r\n");
        new = new.replace("\r\n", "\n").replace('\n', "\r\n");
        note = " (line endings converted to the file's CRLF)";
    }
    let starts: Vec<usize> = content
        .match_indices(old.as_str())
        .map(|(i, _)| i)
        .collect();
    if starts.is_empty() {
        return Err(ToolError::Failed(not_found(name, content, &old)));
    }
    let lines = line_numbers(content, &starts);
    if starts.len() > 1 && !replace_all {
        let mut listed: Vec<String> = lines
            .iter()
            .take(MAX_LINES_LISTED)
            .map(ToString::to_string)
            .collect();
        if lines.len() > MAX_LINES_LISTED {
            listed.push("…".into());
        }
        return Err(ToolError::Failed(format!(
            "`old_text` occurs {} times in `{name}` (at lines {}); include more of the \
             surrounding lines in `old_text` so that it matches once, or set `replace_all` to \
             true to change every occurrence",
            starts.len(),
            listed.join(", ")
        )));
    }

    let shift = new.matches('\n').count() as isize - old.matches('\n').count() as isize;
    let hunks: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(i, &line)| {
            let new_start = line.saturating_add_signed(shift * i as isize);
            format!("@@ -{line},{} +{new_start},{} @@", span(&old), span(&new))
        })
        .collect();
    let content = content.replace(old.as_str(), &new);
    let total_lines = content.lines().count();
    let mut summary = format!(
        "patched `{name}`: {}{note}; the file now has {}",
        plural(starts.len(), "replacement"),
        plural(total_lines, "line")
    );
    for hunk in hunks.iter().take(MAX_HUNKS_SHOWN) {
        summary.push('\n');
        summary.push_str(hunk);
    }
    if hunks.len() > MAX_HUNKS_SHOWN {
        summary.push_str(&format!("\n… and {} more", hunks.len() - MAX_HUNKS_SHOWN));
    }
    Ok(Patched { content, summary })
}

/// How many lines `text` covers: a final line without its newline counts.
fn span(text: &str) -> usize {
    text.matches('\n').count() + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// The 1-based line number of each byte offset in `starts` (ascending).
fn line_numbers(content: &str, starts: &[usize]) -> Vec<usize> {
    let mut line = 1;
    let mut from = 0;
    starts
        .iter()
        .map(|&at| {
            line += content[from..at].matches('\n').count();
            from = at;
            line
        })
        .collect()
}

/// Why `old` was not found, with the closest thing the file has, so the next call can succeed.
fn not_found(name: &str, content: &str, old: &str) -> String {
    let wanted: Vec<&str> = old
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .collect();
    let file: Vec<&str> = content.lines().collect();
    let advice = "read_file the region and copy the text exactly, including whitespace and \
                  indentation";
    let mut message = format!("`old_text` was not found in `{name}`");
    let Some(first) = wanted.first().copied() else {
        return format!("{message}; it is only whitespace, which cannot be matched reliably");
    };
    let window = wanted.len();
    let loose = (0..file.len().saturating_sub(window - 1)).find(|&start| {
        file[start..start + window]
            .iter()
            .map(|l| l.trim())
            .eq(wanted.iter().copied())
    });
    if let Some(start) = loose {
        message.push_str(&format!(
            ". It matches lines {}-{} if leading and trailing whitespace is ignored, so the \
             indentation or trailing spaces differ",
            start + 1,
            start + window
        ));
    } else {
        let candidates: Vec<String> = file
            .iter()
            .enumerate()
            .filter(|(_, l)| l.trim() == first)
            .take(3)
            .map(|(i, _)| (i + 1).to_string())
            .collect();
        if candidates.is_empty() {
            message.push_str(&format!(
                ". Not even its first line (`{first}`) is in the file"
            ));
        } else {
            message.push_str(&format!(
                ". Its first line is at line {}, but the lines after it differ",
                candidates.join(", ")
            ));
        }
    }
    format!("{message}; {advice}")
}

#[cfg(test)]
mod tests {
    use std::fs;

    use serde_json::json;

    use super::*;

    fn tool(content: &str) -> (tempfile::TempDir, PatchFile) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f.rs"), content).unwrap();
        let ws = Arc::new(Workspaces::new(dir.path()).unwrap());
        (dir, PatchFile::new(ws))
    }

    async fn patch(t: &PatchFile, args: Value) -> Result<String, ToolError> {
        t.call(args, &ToolContext::for_tests()).await
    }

    fn read(d: &tempfile::TempDir) -> String {
        fs::read_to_string(d.path().join("f.rs")).unwrap()
    }

    const SOURCE: &str = "fn a() {\n    one();\n}\n\nfn b() {\n    one();\n}\n";

    #[tokio::test]
    async fn a_unique_match_is_replaced_and_summarised() {
        let (d, t) = tool(SOURCE);
        let out = patch(
            &t,
            json!({"path": "f.rs", "old_text": "fn b() {\n    one();", "new_text": "fn b() {\n    two();\n    three();"}),
        )
        .await
        .unwrap();
        assert_eq!(
            out,
            "patched `f.rs`: 1 replacement; the file now has 8 lines\n@@ -5,2 +5,3 @@"
        );
        assert_eq!(
            read(&d),
            "fn a() {\n    one();\n}\n\nfn b() {\n    two();\n    three();\n}\n"
        );
    }

    #[tokio::test]
    async fn ambiguous_text_names_the_lines_and_changes_nothing() {
        let (d, t) = tool(SOURCE);
        let err = patch(
            &t,
            json!({"path": "f.rs", "old_text": "one();", "new_text": "two();"}),
        )
        .await
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`old_text` occurs 2 times in `f.rs` (at lines 2, 6); include more of the \
             surrounding lines in `old_text` so that it matches once, or set `replace_all` to \
             true to change every occurrence"
        );
        assert_eq!(read(&d), SOURCE);
    }

    #[tokio::test]
    async fn replace_all_changes_every_occurrence() {
        let (d, t) = tool(SOURCE);
        let out = patch(
            &t,
            json!({"path": "f.rs", "old_text": "    one();\n", "new_text": "", "replace_all": true}),
        )
        .await
        .unwrap();
        assert_eq!(
            out,
            "patched `f.rs`: 2 replacements; the file now has 5 lines\n@@ -2,1 +2,0 @@\n@@ -6,1 +5,0 @@"
        );
        assert_eq!(read(&d), "fn a() {\n}\n\nfn b() {\n}\n");
    }

    #[tokio::test]
    async fn missing_text_explains_what_differs() {
        let (d, t) = tool(SOURCE);
        let wrong_indent =
            json!({"path": "f.rs", "old_text": "fn b() {\n  one();\n}", "new_text": "x"});
        let err = patch(&t, wrong_indent).await.unwrap_err().to_string();
        assert!(
            err.starts_with(
                "`old_text` was not found in `f.rs`. It matches lines 5-7 if leading and \
                 trailing whitespace is ignored"
            ),
            "{err}"
        );
        assert!(err.ends_with("copy the text exactly, including whitespace and indentation"));

        let later_differs =
            json!({"path": "f.rs", "old_text": "fn a() {\n    six();", "new_text": "x"});
        let err = patch(&t, later_differs).await.unwrap_err().to_string();
        assert!(
            err.contains("Its first line is at line 1, but the lines after it differ"),
            "{err}"
        );

        let absent = json!({"path": "f.rs", "old_text": "fn zed()", "new_text": "x"});
        let err = patch(&t, absent).await.unwrap_err().to_string();
        assert!(err.contains("Not even its first line (`fn zed()`) is in the file"));
        assert_eq!(read(&d), SOURCE);
    }

    #[tokio::test]
    async fn crlf_files_match_text_copied_from_read_file() {
        let (d, t) = tool("a\r\nb\r\nc\r\n");
        let out = patch(
            &t,
            json!({"path": "f.rs", "old_text": "a\nb", "new_text": "a\nB\nb"}),
        )
        .await
        .unwrap();
        assert!(out.contains("line endings converted"), "{out}");
        assert_eq!(read(&d), "a\r\nB\r\nb\r\nc\r\n");
    }

    #[tokio::test]
    async fn pointless_or_escaping_calls_are_refused() {
        let (_d, t) = tool(SOURCE);
        for args in [
            json!({"path": "f.rs", "old_text": "", "new_text": "x"}),
            json!({"path": "f.rs", "old_text": "a", "new_text": "a"}),
            json!({"path": "../f.rs", "old_text": "a", "new_text": "b"}),
        ] {
            let err = patch(&t, args).await.unwrap_err();
            assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
        }
        let err = patch(
            &t,
            json!({"path": "g.rs", "old_text": "a", "new_text": "b"}),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("`g.rs` does not exist"));
    }

    #[test]
    fn line_numbers_count_from_one() {
        assert_eq!(line_numbers("a\nb\nc", &[0, 2, 4]), vec![1, 2, 3]);
    }
}
