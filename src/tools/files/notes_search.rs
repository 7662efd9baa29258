//! `notes_search`: find the person's notes about something. Notes are the plain-text and
//! Markdown files under `notes/` in their workspace (written by them, synced in, or saved by
//! the agent with `write_file`); a note matches when every search term appears in it or in its
//! path, in any letter case, and its lines holding a term are shown with their numbers.
//!
//! It reads through the same [`Workspace`] as the other file tools: the folder is resolved
//! inside the caller's workspace, symbolic links that lead out are not followed, and ignore
//! rules, hidden files and binaries are skipped by the shared walk. The output is bounded (files,
//! lines per file, characters per line) and says what it left out.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::disk::{MAX_FILE_BYTES, blocking, cut_line, looks_binary, plural};
use super::walk::{Budget, entries};
use super::{Intent, Workspace, Workspaces};
use crate::tools::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};

/// The notes folder, relative to the caller's workspace.
pub const NOTES_DIR: &str = "notes";
/// File name extensions searched (any case).
const NOTE_EXTENSIONS: &[&str] = &["md", "markdown", "txt", "text", "org", "rst"];
const MAX_FILES: usize = 20;
const MAX_LINES_PER_FILE: usize = 8;
const MAX_LINE_CHARS: usize = 240;
const MAX_TERMS: usize = 10;
/// Time the walk may take; below the tool's timeout so that partial results are returned.
const WALK_TIME: Duration = Duration::from_secs(15);

/// Searches the notes folder of the caller's workspace.
pub struct NotesSearch {
    spec: ToolSpec,
    workspaces: Arc<Workspaces>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Words to look for, e.g. "dentist appointment". A note matches when it contains all of
    /// them (in its text or its file name), in any letter case.
    query: String,
}

impl NotesSearch {
    pub fn new(workspaces: Arc<Workspaces>) -> Self {
        NotesSearch {
            spec: ToolSpec {
                name: "notes_search",
                description: "Search the person's notes: the plain-text and Markdown files \
                    (.md, .txt, .org, .rst) in the `notes/` folder of their workspace. Give a \
                    few words; a note matches when it contains all of them (in its text or file \
                    name), ignoring letter case. Returns each matching note's path with its \
                    lines that contain a word, as `line: text`, best matches first (at most 20 \
                    notes, 8 lines each); read a whole note with read_file.",
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
impl Tool for NotesSearch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        let mut terms: Vec<String> = Vec::new();
        for term in args.query.split_whitespace().map(str::to_lowercase) {
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
        if terms.is_empty() {
            return Err(ToolError::InvalidArguments("`query` is empty".into()));
        }
        if terms.len() > MAX_TERMS {
            return Err(ToolError::InvalidArguments(format!(
                "`query` has {} words; use at most {MAX_TERMS} key words",
                terms.len()
            )));
        }
        let ws = self.workspaces.open(ctx).await?;
        let budget = Budget::new(ctx.cancel.clone(), WALK_TIME);
        blocking(move || {
            if ws.disk().lstat(&ws.root().join(NOTES_DIR)).is_err() {
                return Ok(format!(
                    "There is no `{NOTES_DIR}/` folder in this workspace yet, so there are no \
                     notes to search. Notes are plain-text or Markdown files in `{NOTES_DIR}/` \
                     (write_file can create one)."
                ));
            }
            let dir = ws.resolve(NOTES_DIR, Intent::Read)?;
            Ok(search(&ws, &dir, &terms, &budget))
        })
        .await
    }
}

/// One matching note.
struct Note {
    name: String,
    /// `(line number, text)` of the lines holding a term.
    lines: Vec<(usize, String)>,
    /// How many lines hold a term (all of them, shown or not).
    hits: usize,
}

/// Notes under `dir` holding every term, best first, rendered.
fn search(ws: &Workspace, dir: &Path, terms: &[String], budget: &Budget) -> String {
    let mut notes = Vec::new();
    let mut stopped = None;
    let mut skipped = 0;
    for item in entries(ws, dir, false, None) {
        if let Some(why) = budget.exhausted() {
            stopped = Some(why);
            break;
        }
        let Ok((_, entry)) = item else {
            skipped += 1;
            continue;
        };
        let is_note = entry
            .path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| NOTE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()));
        if !is_note || !(entry.meta.is_file() || entry.meta.is_symlink()) {
            continue;
        }
        let name = ws.display(&entry.path);
        // A link is followed only when it stays in the workspace, like every file tool's path.
        let Ok(file) = ws.resolve(&name, Intent::Read) else {
            skipped += 1;
            continue;
        };
        match read_note(ws, &file, name, terms) {
            Ok(Some(note)) => notes.push(note),
            Ok(None) => {}
            Err(()) => skipped += 1,
        }
    }
    notes.sort_by(|a, b| b.hits.cmp(&a.hits).then_with(|| a.name.cmp(&b.name)));
    render(notes, terms, stopped, skipped)
}

/// The note at `file` if it holds every term; `Err` when it cannot be read.
fn read_note(
    ws: &Workspace,
    file: &Path,
    name: String,
    terms: &[String],
) -> Result<Option<Note>, ()> {
    let disk = ws.disk();
    let meta = disk.stat(file).map_err(|_| ())?;
    if !meta.is_file() || meta.len > MAX_FILE_BYTES {
        return Err(());
    }
    let bytes = disk.read(file).map_err(|_| ())?;
    if looks_binary(&bytes) {
        return Ok(None);
    }
    let text = String::from_utf8_lossy(&bytes);
    let lower = text.to_lowercase();
    let lower_name = name.to_lowercase();
    if !terms
        .iter()
        .all(|t| lower.contains(t.as_str()) || lower_name.contains(t.as_str()))
    {
        return Ok(None);
    }
    let mut note = Note {
        name,
        lines: Vec::new(),
        hits: 0,
    };
    for (i, line) in text.lines().enumerate() {
        let lower = line.to_lowercase();
        if terms.iter().any(|t| lower.contains(t.as_str())) {
            note.hits += 1;
            if note.lines.len() < MAX_LINES_PER_FILE {
                note.lines
                    .push((i + 1, cut_line(line.trim_end(), MAX_LINE_CHARS)));
            }
        }
    }
    Ok(Some(note))
}

fn render(
    mut notes: Vec<Note>,
    terms: &[String],
    stopped: Option<&'static str>,
    skipped: usize,
) -> String {
    let query = terms.join(" ");
    let mut out = if notes.is_empty() {
        format!("No note in `{NOTES_DIR}/` contains all of: {query}")
    } else {
        format!(
            "{} in `{NOTES_DIR}/` containing all of: {query}\n",
            plural(notes.len(), "note")
        )
    };
    let more_files = notes.len().saturating_sub(MAX_FILES);
    notes.truncate(MAX_FILES);
    for note in &notes {
        out.push_str(&format!("\n{}\n", note.name));
        if note.lines.is_empty() {
            out.push_str("  (the words are in its file name)\n");
        }
        for (number, text) in &note.lines {
            out.push_str(&format!("  {number}: {text}\n"));
        }
        if note.hits > note.lines.len() {
            out.push_str(&format!(
                "  [{} in this note]\n",
                plural(note.hits - note.lines.len(), "more matching line")
            ));
        }
    }
    let mut notes_left = Vec::new();
    if more_files > 0 {
        notes_left.push(format!(
            "{} not shown; add words to narrow the search",
            plural(more_files, "more matching note")
        ));
    }
    if let Some(why) = stopped {
        notes_left.push(format!(
            "the search stopped early ({why}); results are incomplete"
        ));
    }
    if skipped > 0 {
        notes_left.push(format!(
            "{} could not be read (too large, unreadable, or a link leading out of the \
             workspace)",
            plural(skipped, "file")
        ));
    }
    for note in notes_left {
        out.push_str(&format!("\n[{note}]"));
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use std::fs;

    use serde_json::json;

    use super::*;

    fn tool(files: &[(&str, &str)]) -> (tempfile::TempDir, NotesSearch) {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let path = dir.path().join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, content).unwrap();
        }
        let ws = Arc::new(Workspaces::new(dir.path()).unwrap());
        (dir, NotesSearch::new(ws))
    }

    async fn search(t: &NotesSearch, query: &str) -> Result<String, ToolError> {
        t.call(json!({ "query": query }), &ToolContext::for_tests())
            .await
    }

    #[tokio::test]
    async fn notes_holding_every_term_are_listed_best_first_with_their_lines() {
        let (_d, t) = tool(&[
            (
                "notes/health.md",
                "# Health\nDentist on Tuesday, 3pm\nbring the X-ray\nDENTIST bill paid\ntuesday reminder\n",
            ),
            (
                "notes/2026/november.txt",
                "call the dentist\nTuesday: gym\n",
            ),
            ("notes/shopping.md", "dentist floss\n"),
            ("notes/picture.png", "dentist tuesday"),
            ("notes/.hidden.md", "dentist tuesday\n"),
            ("elsewhere.md", "dentist tuesday\n"),
        ]);
        let out = search(&t, "Tuesday  dentist").await.unwrap();
        assert_eq!(
            out,
            "2 notes in `notes/` containing all of: tuesday dentist\n\
             \nnotes/health.md\n  2: Dentist on Tuesday, 3pm\n  4: DENTIST bill paid\n  5: tuesday reminder\n\
             \nnotes/2026/november.txt\n  1: call the dentist\n  2: Tuesday: gym"
        );
    }

    #[tokio::test]
    async fn file_names_count_and_long_results_are_bounded() {
        let many: String = (0..20).map(|i| format!("rent paid {i}\n")).collect();
        let long = format!("rent {}", "x".repeat(400));
        let (_d, t) = tool(&[
            ("notes/rent.md", "paid on the 1st\n"),
            ("notes/ledger.md", many.as_str()),
            ("notes/long.txt", long.as_str()),
        ]);
        let out = search(&t, "rent").await.unwrap();
        assert!(
            out.starts_with("3 notes in `notes/` containing all of: rent\n\nnotes/ledger.md\n"),
            "{out}"
        );
        assert!(
            out.contains("  8: rent paid 7\n  [12 more matching lines in this note]\n"),
            "{out}"
        );
        assert!(
            out.contains("notes/rent.md\n  (the words are in its file name)"),
            "{out}"
        );
        assert!(out.contains("… [165 more characters]"), "{out}");
    }

    #[tokio::test]
    async fn a_missing_folder_and_no_match_are_said_plainly() {
        let (_d, t) = tool(&[("todo.md", "dentist\n")]);
        let out = search(&t, "dentist").await.unwrap();
        assert!(out.starts_with("There is no `notes/` folder"), "{out}");
        let (_d, t) = tool(&[("notes/a.md", "dentist\n")]);
        assert_eq!(
            search(&t, "dentist tuesday").await.unwrap(),
            "No note in `notes/` contains all of: dentist tuesday"
        );
        assert!(matches!(
            search(&t, "  ").await,
            Err(ToolError::InvalidArguments(_))
        ));
    }

    #[tokio::test]
    async fn links_leading_out_of_the_workspace_are_not_followed() {
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret.md"), "dentist secret\n").unwrap();
        let (d, t) = tool(&[("notes/mine.md", "dentist mine\n")]);
        std::os::unix::fs::symlink(
            outside.path().join("secret.md"),
            d.path().join("notes/leak.md"),
        )
        .unwrap();
        let out = search(&t, "dentist").await.unwrap();
        assert!(
            out.contains("notes/mine.md") && !out.contains("secret"),
            "{out}"
        );
        assert!(out.contains("1 file could not be read"), "{out}");
        // The notes folder itself cannot be a way out either.
        let (d, t) = tool(&[]);
        std::os::unix::fs::symlink(outside.path(), d.path().join("notes")).unwrap();
        let e = search(&t, "dentist").await.unwrap_err().to_string();
        assert!(!e.contains("dentist secret"), "{e}");
    }
}
