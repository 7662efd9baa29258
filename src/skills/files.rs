//! The files of one skill folder: paths confined to it, text files read with a size cap, and the
//! listing shown with a skill's body. Works the same for embedded (bundled) and on-disk skills.
//!
//! A path is checked twice. First its text: it must be relative and may not contain `..` at all
//! (nothing in a skill needs it), so `../x`, `a/../../x` and `/etc/passwd` are refused before the
//! disk is touched. Then, on disk, its canonical form must stay inside the skill's canonical
//! folder, which refuses a symbolic link pointing out. As in the file tools' workspace, this is a
//! check followed by a use: it guards against the model's mistakes and planted paths, not
//! against a local process racing the daemon.

use std::io;
use std::path::{Component, Path, PathBuf};

use include_dir::{Dir, DirEntry};

/// Largest file of a skill that is read (or written by `skill_manage`).
pub const MAX_FILE_BYTES: u64 = 200 * 1024;

/// Most files listed for one skill.
const MAX_LISTED: usize = 200;

/// Why a file of a skill cannot be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error(
        "`{0}` is outside the skill folder; use a path inside it, such as `references/notes.md`"
    )]
    Outside(String),
    #[error("`{0}` is a symbolic link to a place outside the skill folder; it cannot be used")]
    LinkOutside(String),
    #[error("`{0}` is not a usable path: {1}")]
    Invalid(String, &'static str),
    #[error("`{0}` does not exist in this skill; viewing the skill without a path lists its files")]
    NotFound(String),
    #[error("`{0}` is a directory; name a file inside it")]
    IsDir(String),
    #[error("`{path}` is {size} bytes, more than the {max} bytes a skill file may have")]
    TooLarge { path: String, size: u64, max: u64 },
    #[error("`{0}` is not a text file (it is not UTF-8 or contains NUL bytes)")]
    NotText(String),
    #[error("cannot access `{0}`: {1}")]
    Io(String, String),
}

/// For the model: a path it chose badly is an invalid argument; anything else a failure.
impl From<FileError> for crate::tools::ToolError {
    fn from(e: FileError) -> Self {
        match e {
            FileError::Outside(_) | FileError::LinkOutside(_) | FileError::Invalid(..) => {
                crate::tools::ToolError::InvalidArguments(e.to_string())
            }
            _ => crate::tools::ToolError::Failed(e.to_string()),
        }
    }
}

/// A file of a skill, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// Relative to the skill folder, `/`-separated.
    pub path: String,
    pub bytes: u64,
}

/// `rel` as a clean relative path (no `.`, no `..`, not absolute), or why not.
pub fn relative(rel: &str) -> Result<PathBuf, FileError> {
    if rel.contains('\0') {
        return Err(FileError::Invalid(
            rel.into(),
            "it contains a NUL character",
        ));
    }
    if rel.trim().is_empty() {
        return Err(FileError::Invalid(rel.into(), "it is empty"));
    }
    let mut out = PathBuf::new();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(FileError::Outside(rel.into()));
            }
        }
    }
    if out.as_os_str().is_empty() {
        return Err(FileError::IsDir(rel.into()));
    }
    Ok(out)
}

/// Whether `rel` (already [`relative`]) names the skill's own `SKILL.md`, in any letter case.
pub fn is_skill_md(rel: &Path) -> bool {
    rel.to_str()
        .is_some_and(|s| s.eq_ignore_ascii_case("SKILL.md"))
}

fn io_error(rel: &str, e: &io::Error) -> FileError {
    if e.kind() == io::ErrorKind::NotFound {
        return FileError::NotFound(rel.into());
    }
    FileError::Io(rel.into(), e.to_string())
}

/// The canonical path of existing file `rel` inside `root`, refusing links out (also when the
/// rest of the path does not exist, so nothing is learnt about what lies outside).
pub fn resolve_existing(root: &Path, rel: &str) -> Result<PathBuf, FileError> {
    let target = resolve_for_write(root, rel)?;
    let root = root.canonicalize().map_err(|e| io_error(".", &e))?;
    let real = target.canonicalize().map_err(|e| io_error(rel, &e))?;
    if !real.starts_with(&root) {
        return Err(FileError::LinkOutside(rel.into()));
    }
    Ok(real)
}

/// Where `rel` inside `root` may be written: the path itself (it may not exist yet), after
/// checking that its deepest existing part stays inside `root`.
pub fn resolve_for_write(root: &Path, rel: &str) -> Result<PathBuf, FileError> {
    let clean = relative(rel)?;
    let root = root.canonicalize().map_err(|e| io_error(".", &e))?;
    let target = root.join(&clean);
    let mut probe = target.clone();
    while std::fs::symlink_metadata(&probe).is_err() && probe != root {
        probe.pop();
    }
    let real = probe
        .canonicalize()
        .map_err(|_| FileError::LinkOutside(rel.into()))?;
    if !real.starts_with(&root) {
        return Err(FileError::LinkOutside(rel.into()));
    }
    if probe != target && !real.is_dir() {
        return Err(FileError::Invalid(
            rel.into(),
            "a part of it is a file, not a directory",
        ));
    }
    Ok(target)
}

/// Check `bytes` of `rel` as a readable text file.
pub fn text(rel: &str, bytes: Vec<u8>) -> Result<String, FileError> {
    let size = bytes.len() as u64;
    if size > MAX_FILE_BYTES {
        return Err(FileError::TooLarge {
            path: rel.into(),
            size,
            max: MAX_FILE_BYTES,
        });
    }
    if bytes.contains(&0) {
        return Err(FileError::NotText(rel.into()));
    }
    String::from_utf8(bytes).map_err(|_| FileError::NotText(rel.into()))
}

/// Read text file `rel` of the on-disk skill folder `root`.
pub fn read_disk(root: &Path, rel: &str) -> Result<String, FileError> {
    let path = resolve_existing(root, rel)?;
    let meta = std::fs::metadata(&path).map_err(|e| io_error(rel, &e))?;
    if meta.is_dir() {
        return Err(FileError::IsDir(rel.into()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(FileError::TooLarge {
            path: rel.into(),
            size: meta.len(),
            max: MAX_FILE_BYTES,
        });
    }
    text(rel, std::fs::read(&path).map_err(|e| io_error(rel, &e))?)
}

/// Read text file `rel` of the embedded skill folder `dir`.
pub fn read_embedded(dir: &Dir<'static>, rel: &str) -> Result<String, FileError> {
    let clean = relative(rel)?;
    let full = dir.path().join(&clean);
    match dir.get_entry(&full) {
        Some(DirEntry::File(f)) => text(rel, f.contents().to_vec()),
        Some(DirEntry::Dir(_)) => Err(FileError::IsDir(rel.into())),
        None => Err(FileError::NotFound(rel.into())),
    }
}

/// The files of on-disk skill folder `root` except `SKILL.md`, sorted; hidden names (temporary
/// files) and links leading out are left out.
pub fn list_disk(root: &Path) -> Vec<SkillFile> {
    let Ok(root) = root.canonicalize() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut pending = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let Ok(real) = path.canonicalize() else {
                continue;
            };
            let Ok(meta) = std::fs::metadata(&real) else {
                continue;
            };
            let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
            if !real.starts_with(&root) {
                continue;
            }
            if meta.is_dir() {
                // Links to folders inside are not followed: they would list files twice.
                if !is_link {
                    pending.push(path);
                }
            } else if let Ok(rel) = path.strip_prefix(&root) {
                out.push(SkillFile {
                    path: rel.to_string_lossy().replace('\\', "/"),
                    bytes: meta.len(),
                });
            }
        }
    }
    finish(out)
}

/// The files of embedded skill folder `dir` except `SKILL.md`, sorted.
pub fn list_embedded(dir: &Dir<'static>) -> Vec<SkillFile> {
    let mut out = Vec::new();
    let mut pending = vec![dir];
    while let Some(d) = pending.pop() {
        for entry in d.entries() {
            match entry {
                DirEntry::Dir(sub) => pending.push(sub),
                DirEntry::File(f) => {
                    if let Ok(rel) = f.path().strip_prefix(dir.path()) {
                        out.push(SkillFile {
                            path: rel.to_string_lossy().replace('\\', "/"),
                            bytes: f.contents().len() as u64,
                        });
                    }
                }
            }
        }
    }
    finish(out)
}

fn finish(mut files: Vec<SkillFile>) -> Vec<SkillFile> {
    files.retain(|f| f.path != "SKILL.md");
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files.truncate(MAX_LISTED);
    files
}
