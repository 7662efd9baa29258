//! `search_files`: find lines (or file names) matching a pattern across the workspace, skipping
//! what `.gitignore` excludes, hidden files and binaries.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ignore::overrides::{Override, OverrideBuilder};
use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::disk::{MAX_FILE_BYTES, blocking, cut_line, looks_binary, plural};
use super::walk::{Budget, Entry, entries};
use super::{Intent, Workspace, Workspaces};
use crate::tools::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};

const MAX_MATCHES: usize = 200;
const MAX_LINE_CHARS: usize = 300;
/// Time the walk may take; below the tool's timeout so that partial results are returned.
const WALK_TIME: Duration = Duration::from_secs(15);

/// Searches file contents and names inside the workspace.
pub struct SearchFiles {
    spec: ToolSpec,
    workspaces: Arc<Workspaces>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// What to look for: a regular expression (Rust syntax, e.g. "fn \\w+_test"), or plain text
    /// when `literal` is true.
    pattern: String,
    /// Treat `pattern` as plain text rather than a regular expression. Default false.
    #[serde(default)]
    literal: bool,
    /// Match regardless of letter case. Default false.
    #[serde(default)]
    ignore_case: bool,
    /// Directory or file to search, relative to the workspace root. Default: the whole workspace.
    #[serde(default)]
    path: Option<String>,
    /// Only search files whose path matches this glob, e.g. "*.rs" or "docs/**/*.md". A glob
    /// without "/" matches the file name at any depth; one with "/" is relative to the workspace
    /// root.
    #[serde(default)]
    glob: Option<String>,
    /// "content" (default) lists matching lines as `path:line: text`; "names" lists files whose
    /// path (relative to the workspace root) matches the pattern.
    #[serde(default)]
    mode: Mode,
    /// Also search hidden files and directories (names starting with "."). Default false.
    #[serde(default)]
    include_hidden: bool,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Mode {
    #[default]
    Content,
    Names,
}

impl SearchFiles {
    pub fn new(workspaces: Arc<Workspaces>) -> Self {
        SearchFiles {
            spec: ToolSpec {
                name: "search_files",
                description: "Search the workspace for a regular expression (or plain text with \
                    `literal: true`). In the default \"content\" mode it returns matching lines as \
                    `path:line: text`, ready for read_file with an offset; in \"names\" mode it \
                    returns the paths of files whose path matches, to find a file by name. Narrow \
                    it with `path` (a subdirectory) and `glob` (e.g. \"*.py\"). Files excluded by \
                    .gitignore or .ignore, hidden files (unless `include_hidden`), binary files \
                    and files over 10 MB are skipped. At most 200 matches are returned, lines are \
                    cut at 300 characters, and the answer says when results were cut.",
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
impl Tool for SearchFiles {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        if args.pattern.is_empty() {
            return Err(ToolError::InvalidArguments("`pattern` is empty".into()));
        }
        let source = if args.literal {
            regex::escape(&args.pattern)
        } else {
            args.pattern.clone()
        };
        let regex = RegexBuilder::new(&source)
            .case_insensitive(args.ignore_case)
            .multi_line(true)
            .crlf(true)
            .build()
            .map_err(|e| {
                ToolError::InvalidArguments(format!(
                    "`pattern` is not a valid regular expression ({e}); fix it, or set `literal` \
                     to true to search for the text as written"
                ))
            })?;
        let ws = self.workspaces.open(ctx).await?;
        let budget = Budget::new(ctx.cancel.clone(), WALK_TIME);
        blocking(move || {
            let start = ws.resolve(args.path.as_deref().unwrap_or("."), Intent::Read)?;
            let glob = args
                .glob
                .as_deref()
                .map(|g| build_glob(&ws, g))
                .transpose()?;
            let search = Search {
                ws: &ws,
                regex: &regex,
                glob: glob.as_ref(),
                mode: args.mode,
                budget: &budget,
            };
            Ok(search.run(&start, args.include_hidden))
        })
        .await
    }
}

/// A glob matcher with gitignore semantics, relative to the workspace root. It filters the
/// walk's results rather than being handed to the walker as an override, because overrides take
/// precedence over ignore rules and would resurrect ignored and hidden files.
fn build_glob(ws: &Workspace, glob: &str) -> Result<Override, ToolError> {
    let bad = |e: ignore::Error| {
        ToolError::InvalidArguments(format!("`glob` {glob:?} is not a valid glob ({e})"))
    };
    let mut builder = OverrideBuilder::new(ws.root());
    builder.add(glob).map_err(bad)?;
    builder.build().map_err(bad)
}

struct Search<'a> {
    ws: &'a Workspace,
    regex: &'a Regex,
    glob: Option<&'a Override>,
    mode: Mode,
    budget: &'a Budget,
}

/// What a search found and what it had to leave out.
#[derive(Default)]
struct Found {
    lines: Vec<String>,
    files: usize,
    truncated: bool,
    too_large: usize,
    unreadable: usize,
    stopped: Option<&'static str>,
}

impl Search<'_> {
    fn run(&self, start: &Path, include_hidden: bool) -> String {
        let mut found = Found::default();
        for item in entries(self.ws, start, include_hidden, None) {
            if let Some(why) = self.budget.exhausted() {
                found.stopped = Some(why);
                break;
            }
            let Ok((_, entry)) = item else {
                found.unreadable += 1;
                continue;
            };
            let Some(file) = self.searchable(&entry) else {
                continue;
            };
            let name = self.ws.display(&entry.path);
            if self
                .glob
                .is_some_and(|g| g.matched(&entry.path, false).is_ignore())
            {
                continue;
            }
            if self.mode == Mode::Names {
                if self.regex.is_match(&name) {
                    found.lines.push(name);
                }
            } else {
                self.search_file(&file, &name, &mut found);
            }
            if found.lines.len() > MAX_MATCHES {
                found.lines.truncate(MAX_MATCHES);
                found.truncated = true;
                break;
            }
        }
        self.report(start, found)
    }

    /// The file to read for a walk entry: the entry itself if it is a regular file, the target
    /// of a symbolic link if that is a regular file inside the workspace, else nothing.
    fn searchable(&self, entry: &Entry) -> Option<std::path::PathBuf> {
        if entry.meta.is_file() {
            return Some(entry.path.clone());
        }
        if !entry.meta.is_symlink() {
            return None;
        }
        let disk = self.ws.disk();
        let target = disk.canonicalize(&entry.path).ok()?;
        (target.starts_with(self.ws.root()) && disk.stat(&target).is_ok_and(|m| m.is_file()))
            .then_some(target)
    }

    fn search_file(&self, file: &Path, name: &str, found: &mut Found) {
        let disk = self.ws.disk();
        match disk.stat(file) {
            Ok(meta) if meta.len > MAX_FILE_BYTES => {
                found.too_large += 1;
                return;
            }
            Ok(_) => {}
            Err(_) => {
                found.unreadable += 1;
                return;
            }
        }
        let Ok(bytes) = disk.read(file) else {
            found.unreadable += 1;
            return;
        };
        if looks_binary(&bytes) {
            return;
        }
        let text = String::from_utf8_lossy(&bytes);
        if !self.regex.is_match(&text) {
            return;
        }
        let before = found.lines.len();
        for (i, line) in text.lines().enumerate() {
            if self.regex.is_match(line) {
                found.lines.push(format!(
                    "{name}:{}: {}",
                    i + 1,
                    cut_line(line, MAX_LINE_CHARS)
                ));
                if found.lines.len() > MAX_MATCHES {
                    break;
                }
            }
        }
        if found.lines.len() > before {
            found.files += 1;
        }
    }

    fn report(&self, start: &Path, found: Found) -> String {
        let mut out = found.lines.join("\n");
        let what = match self.mode {
            Mode::Content => "matching lines",
            Mode::Names => "matching file names",
        };
        let mut notes = Vec::new();
        if found.lines.is_empty() {
            notes.push(format!(
                "no {what} in `{}` (files excluded by .gitignore, hidden files and binary files \
                 were not searched)",
                self.ws.display(start)
            ));
        } else if found.truncated {
            notes.push(format!(
                "showing the first {MAX_MATCHES} {what}; there are more, so narrow the search \
                 with `path`, `glob` or a more specific pattern"
            ));
        } else if self.mode == Mode::Content {
            notes.push(format!(
                "{} in {}",
                plural(found.lines.len(), "matching line"),
                plural(found.files, "file")
            ));
        } else {
            notes.push(plural(found.lines.len(), "matching file"));
        }
        if let Some(why) = found.stopped {
            notes.push(format!(
                "the search stopped early ({why}); results are incomplete, so narrow it with \
                 `path` or `glob`"
            ));
        }
        if found.too_large > 0 {
            notes.push(format!(
                "{} over 10 MB skipped",
                plural(found.too_large, "file")
            ));
        }
        if found.unreadable > 0 {
            notes.push(format!(
                "unreadable files or directories skipped: {}",
                found.unreadable
            ));
        }
        for note in notes {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!("[{note}]"));
        }
        out
    }
}

#[cfg(test)]
mod tests;
