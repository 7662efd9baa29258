//! Reading and writing the memory files: entries, caps, atomic writes, the prompt snapshot.

use std::path::{Path, PathBuf};

/// Which file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The agent's own notes: conventions, facts about the environment, lessons learned.
    Memory,
    /// What the agent knows about the user: name, preferences, circumstances.
    User,
}

impl Kind {
    pub fn file_name(self) -> &'static str {
        match self {
            Kind::Memory => "MEMORY.md",
            Kind::User => "USER.md",
        }
    }
}

/// Size caps in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryLimits {
    pub memory_chars: usize,
    pub user_chars: usize,
}

impl Default for MemoryLimits {
    fn default() -> Self {
        MemoryLimits {
            memory_chars: 2200,
            user_chars: 1375,
        }
    }
}

impl MemoryLimits {
    pub fn of(&self, kind: Kind) -> usize {
        match kind {
            Kind::Memory => self.memory_chars,
            Kind::User => self.user_chars,
        }
    }
}

const SEPARATOR: &str = "\n§\n";

/// The memory files of all owners, under one directory.
#[derive(Debug, Clone)]
pub struct MemoryFiles {
    root: PathBuf,
    pub limits: MemoryLimits,
}

/// `owner` as a directory name: bytes outside `[A-Za-z0-9_-]` percent-encoded, so different
/// owners never share a directory and no owner can name a path outside the root.
fn dir_name(owner: &str) -> String {
    let mut out = String::with_capacity(owner.len());
    for b in owner.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl MemoryFiles {
    pub fn new(root: impl Into<PathBuf>, limits: MemoryLimits) -> Self {
        MemoryFiles {
            root: root.into(),
            limits,
        }
    }

    /// The memory files a configuration describes, under `$HERMES_HOME/memory`.
    pub fn from_config(config: &crate::config::Config) -> Self {
        MemoryFiles::new(
            config.home.join("memory"),
            MemoryLimits {
                memory_chars: config.memory.memory_chars,
                user_chars: config.memory.user_chars,
            },
        )
    }

    pub fn path(&self, owner: &str, kind: Kind) -> PathBuf {
        self.root.join(dir_name(owner)).join(kind.file_name())
    }

    /// The entries of one file (empty when it does not exist).
    pub fn entries(&self, owner: &str, kind: Kind) -> std::io::Result<Vec<String>> {
        match std::fs::read_to_string(self.path(owner, kind)) {
            Ok(text) => Ok(split(&text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// Read one file's entries, let `edit` change them, and write them back if it did, with no
    /// other edit in between (the memory tool of a turn and the background review of the same
    /// person run at the same time).
    pub fn update<R>(
        &self,
        owner: &str,
        kind: Kind,
        edit: impl FnOnce(&mut Vec<String>) -> R,
    ) -> std::io::Result<R> {
        static EDITING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one_at_a_time = EDITING.lock().unwrap_or_else(|p| p.into_inner());
        let mut entries = self.entries(owner, kind)?;
        let before = entries.clone();
        let out = edit(&mut entries);
        if entries != before {
            self.write(owner, kind, &entries)?;
        }
        Ok(out)
    }

    /// Replace the entries of one file, atomically (a temporary file of its own, renamed).
    pub fn write(&self, owner: &str, kind: Kind, entries: &[String]) -> std::io::Result<()> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let path = self.path(owner, kind);
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(
            ".{}.{}.{}.tmp",
            kind.file_name(),
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&tmp, join(entries))?;
        std::fs::rename(&tmp, &path)
    }

    /// The block frozen into the system prompt at session start, or `None` when both files are
    /// empty.
    pub fn snapshot(&self, owner: &str) -> std::io::Result<Option<String>> {
        let notes = self.entries(owner, Kind::Memory)?;
        let user = self.entries(owner, Kind::User)?;
        if notes.is_empty() && user.is_empty() {
            return Ok(None);
        }
        let mut out = String::from("## Your memory (from earlier conversations)\n");
        let section = |out: &mut String, title: &str, entries: &[String]| {
            if !entries.is_empty() {
                out.push_str(&format!("\n### {title}\n"));
                for e in entries {
                    out.push_str(&format!("- {}\n", e.replace('\n', "\n  ")));
                }
            }
        };
        section(&mut out, "About the user (USER.md)", &user);
        section(&mut out, "Your notes (MEMORY.md)", &notes);
        Ok(Some(out))
    }
}

fn split(text: &str) -> Vec<String> {
    text.split(SEPARATOR.trim())
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_owned)
        .collect()
}

fn join(entries: &[String]) -> String {
    let mut s = entries.join(SEPARATOR);
    s.push('\n');
    s
}

/// Characters the entries take in the file.
pub(super) fn size(entries: &[String]) -> usize {
    join(entries).chars().count().saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_map_to_distinct_safe_directories() {
        assert_eq!(dir_name("telegram:8123456"), "telegram%3A8123456");
        assert_eq!(dir_name("../etc"), "%2E%2E%2Fetc");
        assert_ne!(dir_name("a:b_c"), dir_name("a_b:c"));
    }

    #[test]
    fn entries_round_trip_and_make_a_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let files = MemoryFiles::new(dir.path(), MemoryLimits::default());
        assert_eq!(files.snapshot("cli:me").unwrap(), None);
        let entries = vec![
            "Prefers metric units".to_owned(),
            "Has a cat\nnamed Mia".to_owned(),
        ];
        files.write("cli:me", Kind::User, &entries).unwrap();
        assert_eq!(files.entries("cli:me", Kind::User).unwrap(), entries);
        let snap = files.snapshot("cli:me").unwrap().unwrap();
        assert!(
            snap.contains("- Prefers metric units\n- Has a cat\n  named Mia\n"),
            "{snap}"
        );
        assert!(!snap.contains("Your notes"));
        assert_eq!(
            size(&entries),
            "Prefers metric units\n§\nHas a cat\nnamed Mia"
                .chars()
                .count()
        );
    }

    #[test]
    fn concurrent_edits_of_one_file_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let files = MemoryFiles::new(dir.path(), MemoryLimits::default());
        std::thread::scope(|scope| {
            for t in 0..8 {
                let files = &files;
                scope.spawn(move || {
                    for i in 0..25 {
                        files
                            .update("cli:me", Kind::Memory, |e| e.push(format!("note {t}-{i}")))
                            .unwrap();
                    }
                });
            }
        });
        assert_eq!(files.entries("cli:me", Kind::Memory).unwrap().len(), 200);
    }
}
