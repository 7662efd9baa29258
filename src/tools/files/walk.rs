//! Directory walks shared by `search_files` and `list_dir`, on any [`Disk`] (this machine's or
//! a remote host's): the same ignore rules, hidden-file policy, symlink handling and time budget
//! for both tools and every disk.
//!
//! Ignore files (`.gitignore`, `.ignore`, `.git/info/exclude`) apply whether or not the workspace
//! is a git repository, with git's precedence (a nearer file wins; `.ignore` before
//! `.gitignore`; a `!pattern` lets an entry back in), but only those inside the workspace: files
//! above the root belong to someone else (a dotfiles repository in `$HOME` with `*` in its
//! `.gitignore` would otherwise hide everything), and so does the daemon user's global git
//! configuration. The patterns are matched by the `ignore` crate's gitignore matcher, the one
//! ripgrep uses; the walk itself is ours, because it reads directories through [`Disk`].
//!
//! To honour the ignore files between the root and a subdirectory the model asks for, the rules
//! of the directories above it are read first. A subdirectory that is itself ignored or hidden
//! (`target/`) is still walked when asked for by name, from itself, as ripgrep does with
//! explicit paths.
//!
//! Symbolic links are never followed by the walk; callers decide per entry with
//! [`Workspace::resolve`].

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use tokio_util::sync::CancellationToken;

use super::Workspace;
use super::disk::{Disk, Meta};

/// Ignore files larger than this are not read (nobody writes one by hand).
const MAX_RULES_BYTES: u64 = 1024 * 1024;

/// One entry of a walk.
#[derive(Debug, Clone)]
pub struct Entry {
    pub path: PathBuf,
    /// What the entry is, its link (if it is one) not followed.
    pub meta: Meta,
}

/// The entries under `start` (a canonical path inside `ws`), sorted by name, depth first, with
/// their depth below `start` (0 for `start` itself, which comes first whatever it is).
/// `max_depth` counts from `start`. A directory that cannot be read gives one error and is
/// skipped.
pub fn entries<'a>(
    ws: &'a Workspace,
    start: &Path,
    include_hidden: bool,
    max_depth: Option<usize>,
) -> Walk<'a> {
    let disk = ws.disk();
    let mut walk = Walk {
        disk,
        include_hidden,
        max_depth,
        above: Vec::new(),
        frames: Vec::new(),
        first: None,
        unreadable: None,
    };
    walk.above = walk.rules_above(ws.root(), start);
    walk.first = Some(match disk.lstat(start) {
        Ok(meta) => Ok(Entry {
            path: start.to_owned(),
            meta,
        }),
        Err(e) => Err(e),
    });
    walk
}

/// A walk in progress (see [`entries`]).
pub struct Walk<'a> {
    disk: &'a dyn Disk,
    include_hidden: bool,
    max_depth: Option<usize>,
    /// The rules of the directories above `start`, farthest first.
    above: Vec<Rules>,
    /// The directories being read, outermost first.
    frames: Vec<Frame>,
    /// `start` itself, until it is given out.
    first: Option<io::Result<Entry>>,
    /// A directory that could not be read, reported after its own entry.
    unreadable: Option<io::Error>,
}

/// A directory being read: its entries still to give out (the next one last) and its rules.
struct Frame {
    dir: PathBuf,
    depth: usize,
    pending: Vec<(String, Meta)>,
    rules: Rules,
}

/// The ignore files of one directory.
#[derive(Default)]
struct Rules {
    ignore: Option<Gitignore>,
    git: Option<Gitignore>,
    exclude: Option<Gitignore>,
    /// The directory holds `.git`: git's own files above it do not apply below.
    has_git: bool,
}

impl Iterator for Walk<'_> {
    type Item = io::Result<(usize, Entry)>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.unreadable.take() {
            return Some(Err(e));
        }
        if let Some(first) = self.first.take() {
            return Some(first.map(|entry| {
                if entry.meta.is_dir() && self.max_depth != Some(0) {
                    self.enter(&entry.path, 0);
                }
                (0, entry)
            }));
        }
        loop {
            let frame = self.frames.last_mut()?;
            let Some((name, meta)) = frame.pending.pop() else {
                self.frames.pop();
                continue;
            };
            let path = frame.dir.join(&name);
            let depth = frame.depth + 1;
            if name == ".git" || !self.visible(&path, &name, meta.is_dir()) {
                continue;
            }
            if meta.is_dir() && self.max_depth.is_none_or(|max| depth < max) {
                self.enter(&path, depth);
            }
            return Some(Ok((depth, Entry { path, meta })));
        }
    }
}

impl Walk<'_> {
    /// Start reading `dir`, whose entries are one level below `depth`; if it cannot be read,
    /// the next item says so.
    fn enter(&mut self, dir: &Path, depth: usize) {
        let listed = match self.disk.list(dir) {
            Ok(listed) => listed,
            Err(e) => {
                self.unreadable = Some(e);
                return;
            }
        };
        let mut pending: Vec<(String, Meta)> = listed
            .into_iter()
            .map(|(name, meta)| (name.to_string_lossy().into_owned(), meta))
            .collect();
        // Sorted by name, the next one last.
        pending.sort_by(|a, b| b.0.cmp(&a.0));
        let has = |n: &str| pending.iter().any(|(name, _)| name == n);
        let rules = Rules::read(
            self.disk,
            dir,
            has(".ignore"),
            has(".gitignore"),
            has(".git"),
        );
        self.frames.push(Frame {
            dir: dir.to_owned(),
            depth,
            pending,
            rules,
        });
    }

    /// Whether the walk shows `path`: the nearest rule that matches decides; with none, a
    /// hidden name is left out unless hidden entries were asked for.
    fn visible(&self, path: &Path, name: &str, is_dir: bool) -> bool {
        let chain = self
            .above
            .iter()
            .chain(self.frames.iter().map(|f| &f.rules));
        match decide(chain.rev(), path, is_dir) {
            Match::Ignore(_) => false,
            Match::Whitelist(_) => true,
            Match::None => self.include_hidden || !name.starts_with('.'),
        }
    }

    /// The rules of the directories from `root` down to the parent of `start`, or none when
    /// `start` is not reached from the root (it or a directory on the way is ignored or
    /// hidden): then it is walked on its own rules.
    fn rules_above(&mut self, root: &Path, start: &Path) -> Vec<Rules> {
        let Ok(below) = start.strip_prefix(root) else {
            return Vec::new();
        };
        let mut dir = root.to_path_buf();
        for name in below.components() {
            let name = name.as_os_str().to_string_lossy().into_owned();
            let exists = |n: &str| self.disk.lstat(&dir.join(n)).is_ok();
            let rules = Rules::read(
                self.disk,
                &dir,
                exists(".ignore"),
                exists(".gitignore"),
                exists(".git"),
            );
            self.above.push(rules);
            let next = dir.join(&name);
            if name == ".git" || !self.visible(&next, &name, true) {
                return Vec::new();
            }
            dir = next;
        }
        std::mem::take(&mut self.above)
    }
}

impl Rules {
    fn read(disk: &dyn Disk, dir: &Path, ignore: bool, git: bool, has_git: bool) -> Rules {
        let file =
            |present: bool, path: PathBuf| present.then(|| matcher(disk, dir, &path)).flatten();
        Rules {
            ignore: file(ignore, dir.join(".ignore")),
            git: file(git, dir.join(".gitignore")),
            exclude: file(has_git, dir.join(".git/info/exclude")),
            has_git,
        }
    }
}

/// The nearest rule matching `path`, `rules` nearest first, with git's precedence.
fn decide<'r>(rules: impl Iterator<Item = &'r Rules>, path: &Path, is_dir: bool) -> Match<()> {
    let (mut ignore, mut git, mut exclude) = (Match::None, Match::None, Match::None);
    let mut saw_git = false;
    let check = |found: &mut Match<()>, m: &Option<Gitignore>| {
        if let (true, Some(m)) = (found.is_none(), m) {
            *found = m.matched(path, is_dir).map(|_| ());
        }
    };
    for r in rules {
        check(&mut ignore, &r.ignore);
        if !saw_git {
            check(&mut git, &r.git);
            check(&mut exclude, &r.exclude);
        }
        saw_git |= r.has_git;
    }
    ignore.or(git).or(exclude)
}

/// The matcher of one ignore file for the entries below `dir`, if it can be read.
fn matcher(disk: &dyn Disk, dir: &Path, file: &Path) -> Option<Gitignore> {
    if disk.stat(file).ok()?.len > MAX_RULES_BYTES {
        return None;
    }
    let bytes = disk.read(file).ok()?;
    let mut builder = GitignoreBuilder::new(dir);
    for line in String::from_utf8_lossy(&bytes).lines() {
        // A malformed pattern is skipped, as git does.
        let _ = builder.add_line(Some(file.to_owned()), line);
    }
    builder.build().ok()
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

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    /// The paths a full walk of `ws` shows, relative to its root.
    fn shown(ws: &Workspace, hidden: bool) -> Vec<String> {
        entries(ws, ws.root(), hidden, None)
            .filter_map(Result::ok)
            .filter(|(depth, _)| *depth > 0)
            .map(|(_, e)| ws.display(&e.path))
            .collect()
    }

    #[test]
    fn ignore_files_follow_gits_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let root = ws.root().to_owned();
        for f in [
            "a.log",
            "keep.txt",
            "sub/b.log",
            "sub/keep.log",
            "sub/x.tmp",
            "sub/y.bak",
            "repo/z.secret",
            "repo/w.txt",
        ] {
            let path = root.join(f);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "x").unwrap();
        }
        fs::write(root.join(".gitignore"), "*.log\n*.tmp\n").unwrap();
        // A nearer file lets an entry back in; `.ignore` wins over `.gitignore` in one folder.
        fs::write(root.join("sub/.gitignore"), "!keep.log\n*.bak\n").unwrap();
        fs::write(root.join("sub/.ignore"), "!y.bak\n").unwrap();
        // A repository's own exclude file applies below it.
        fs::create_dir_all(root.join("repo/.git/info")).unwrap();
        fs::write(root.join("repo/.git/info/exclude"), "*.secret\n").unwrap();
        assert_eq!(
            shown(&ws, false),
            [
                "keep.txt",
                "repo",
                "repo/w.txt",
                "sub",
                "sub/keep.log",
                "sub/y.bak"
            ]
        );
        // Hidden entries on request; `.git` itself never.
        let all = shown(&ws, true);
        assert!(all.contains(&"sub/.ignore".to_owned()), "{all:?}");
        assert!(!all.iter().any(|p| p.contains(".git/")), "{all:?}");
    }

    #[test]
    fn a_subdirectory_walk_keeps_the_rules_above_unless_it_is_itself_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let root = ws.root().to_owned();
        for f in ["src/a.rs", "src/gen.rs", "target/out.rs"] {
            let path = root.join(f);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "x").unwrap();
        }
        fs::write(root.join(".gitignore"), "gen.rs\ntarget/\n").unwrap();
        let under = |sub: &str| -> Vec<String> {
            entries(&ws, &root.join(sub), false, None)
                .filter_map(Result::ok)
                .map(|(_, e)| ws.display(&e.path))
                .collect()
        };
        assert_eq!(under("src"), ["src", "src/a.rs"]);
        assert_eq!(under("target"), ["target", "target/out.rs"]);
    }
}
