//! hermes-agent's `memories/MEMORY.md` and `USER.md` (one pair for its one user) into ours (a
//! pair per person): each person the import knows of gets the entries they do not have yet.

use std::path::Path;

use crate::memory::{Kind, MemoryFiles};

/// The entries of one of hermes-agent's memory files (`§` lines between entries, as ours).
pub(super) fn read_entries(file: &Path) -> std::io::Result<Vec<String>> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(text
            .split("\n§\n")
            .flat_map(|e| e.split("\n§"))
            .map(|e| e.trim().trim_start_matches('§').trim())
            .filter(|e| !e.is_empty())
            .map(str::to_owned)
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Add to `owner`'s file of `kind` the `entries` it lacks; how many were added.
pub(super) fn merge(
    files: &MemoryFiles,
    owner: &str,
    kind: Kind,
    entries: &[String],
) -> std::io::Result<usize> {
    files.update(owner, kind, |have| {
        let before = have.len();
        for e in entries {
            if !have.contains(e) {
                have.push(e.clone());
            }
        }
        have.len() - before
    })
}

/// How many of `entries` `owner`'s file of `kind` lacks (for `--dry-run`).
pub(super) fn missing(
    files: &MemoryFiles,
    owner: &str,
    kind: Kind,
    entries: &[String],
) -> std::io::Result<usize> {
    let have = files.entries(owner, kind)?;
    Ok(entries.iter().filter(|e| !have.contains(e)).count())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryLimits;

    #[test]
    fn entries_are_split_like_hermes_agent_and_merged_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("MEMORY.md");
        std::fs::write(&file, "Server is marmoset-7\n§\nUses metric\n").unwrap();
        let entries = read_entries(&file).unwrap();
        assert_eq!(entries, ["Server is marmoset-7", "Uses metric"]);
        let files = MemoryFiles::new(dir.path().join("memory"), MemoryLimits::default());
        files
            .write("telegram:1", Kind::Memory, &["Uses metric".to_owned()])
            .unwrap();
        assert_eq!(
            missing(&files, "telegram:1", Kind::Memory, &entries).unwrap(),
            1
        );
        assert_eq!(
            merge(&files, "telegram:1", Kind::Memory, &entries).unwrap(),
            1
        );
        assert_eq!(
            merge(&files, "telegram:1", Kind::Memory, &entries).unwrap(),
            0
        );
        assert_eq!(
            files.entries("telegram:1", Kind::Memory).unwrap(),
            ["Uses metric", "Server is marmoset-7"]
        );
    }
}
