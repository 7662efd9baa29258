//! Directory walks shared by `search_files` and `list_dir`: the same ignore rules, hidden-file
//! policy, symlink handling and time budget for both.
//!
//! Ignore files (`.gitignore`, `.ignore`, `.git/info/exclude`) apply whether or not the workspace
//! is a git repository, but only those inside the workspace: files above the root belong to
//! someone else (a dotfiles repository in `$HOME` with `*` in its `.gitignore` would otherwise
//! hide everything), and so does the daemon user's global git configuration.
//!
//! To honour the ignore files between the root and a subdirectory the model asks for, the walk
//! starts at the root and is narrowed to that subdirectory. A subdirectory that is itself ignored
//! (`target/`) is still walked when asked for by name, from itself, as ripgrep does with
//! explicit paths.
//!
//! Symbolic links are never followed by the walk; callers decide per entry with
//! [`Workspace::resolve`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ignore::{DirEntry, WalkBuilder};
use tokio_util::sync::CancellationToken;

use super::Workspace;

/// The entries under `start` (a canonical path inside `ws`), sorted by name, depth first, with
/// their depth below `start` (0 for `start` itself). `max_depth` counts from `start`.
pub fn entries(
    ws: &Workspace,
    start: &Path,
    include_hidden: bool,
    max_depth: Option<usize>,
) -> impl Iterator<Item = Result<(usize, DirEntry), ignore::Error>> {
    let root = ws.root();
    let below_root = start
        .strip_prefix(root)
        .map_or(0, |rel| rel.components().count());
    let (walk, start_depth) = if below_root == 0 {
        (
            configured(root, include_hidden)
                .max_depth(max_depth)
                .build(),
            0,
        )
    } else if is_visible(root, start, include_hidden) {
        let builder = narrowed(root, start, include_hidden)
            .max_depth(max_depth.map(|d| d + below_root))
            .build();
        (builder, below_root)
    } else {
        (
            configured(start, include_hidden)
                .max_depth(max_depth)
                .build(),
            0,
        )
    };
    let start = start.to_path_buf();
    walk.filter_map(move |item| match item {
        Ok(entry) if entry.path().starts_with(&start) => {
            Some(Ok((entry.depth().saturating_sub(start_depth), entry)))
        }
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    })
}

/// A walker with our policy, starting at `start`.
fn configured(start: &Path, include_hidden: bool) -> WalkBuilder {
    let mut builder = WalkBuilder::new(start);
    builder
        .hidden(!include_hidden)
        .parents(false)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| e.file_name() != ".git");
    builder
}

/// A walker from `root` that only enters `start` and the directories leading to it.
fn narrowed(root: &Path, start: &Path, include_hidden: bool) -> WalkBuilder {
    let mut builder = configured(root, include_hidden);
    let start: Arc<PathBuf> = Arc::new(start.to_path_buf());
    builder.filter_entry(move |e| {
        e.file_name() != ".git" && (e.path().starts_with(&*start) || start.starts_with(e.path()))
    });
    builder
}

/// Whether the walk from `root` reaches `start`, i.e. neither it nor a directory above it is
/// ignored or hidden.
fn is_visible(root: &Path, start: &Path, include_hidden: bool) -> bool {
    let depth = start
        .strip_prefix(root)
        .map_or(0, |rel| rel.components().count());
    narrowed(root, start, include_hidden)
        .max_depth(Some(depth))
        .build()
        .filter_map(Result::ok)
        .any(|e| e.path() == start)
}

/// When a long walk must stop: the turn was cancelled or the time is up. The tool's own timeout
/// abandons the future but cannot stop a blocking thread, so the thread checks this itself.
#[derive(Debug, Clone)]
pub struct Budget {
    cancel: CancellationToken,
    deadline: Instant,
}

impl Budget {
    pub fn new(cancel: CancellationToken, time: Duration) -> Self {
        Budget {
            cancel,
            deadline: Instant::now() + time,
        }
    }

    /// Why the walk must stop now, if it must.
    pub fn exhausted(&self) -> Option<&'static str> {
        if self.cancel.is_cancelled() {
            Some("cancelled")
        } else if Instant::now() >= self.deadline {
            Some("out of time")
        } else {
            None
        }
    }
}
