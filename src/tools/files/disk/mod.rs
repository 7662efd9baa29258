//! The disk the file tools work on ([`Disk`]: this machine's, or a remote host's over SFTP) and
//! what they share on it: reading a text file with the size and binary checks, and running that
//! blocking work off the async runtime.

mod local;

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

pub use local::{Local, write_atomically};

use super::Workspace;
use crate::tools::ToolError;

/// What kind of thing a path names (a link is not followed unless asked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// A device, socket or pipe.
    Other,
}

/// The little the file tools need to know about a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub kind: Kind,
    pub len: u64,
}

impl Meta {
    pub fn is_dir(&self) -> bool {
        self.kind == Kind::Dir
    }
    pub fn is_file(&self) -> bool {
        self.kind == Kind::File
    }
    pub fn is_symlink(&self) -> bool {
        self.kind == Kind::Symlink
    }
}

/// The file system under a workspace. Blocking: the tools call it inside [`blocking`]. Every
/// path is absolute on that disk. Errors keep their [`io::ErrorKind`] (`NotFound`,
/// `PermissionDenied`) so that the tools word them for the model.
pub trait Disk: Send + Sync + fmt::Debug {
    /// The path itself, a link not followed.
    fn lstat(&self, path: &Path) -> io::Result<Meta>;
    /// What the path leads to, links followed.
    fn stat(&self, path: &Path) -> io::Result<Meta>;
    /// The absolute path with every link resolved; the path must exist.
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;
    /// A whole file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Replace (or create) the file so that readers see either the old or the new content,
    /// never a half-written file; an existing file keeps its permissions.
    fn replace(&self, path: &Path, bytes: &[u8]) -> io::Result<()>;
    /// `mkdir -p`.
    fn create_dirs(&self, path: &Path) -> io::Result<()>;
    /// A directory's entries (not `.` or `..`) with what [`Disk::lstat`] says of each, in no
    /// particular order.
    fn list(&self, dir: &Path) -> io::Result<Vec<(OsString, Meta)>>;
    /// Whether this disk is on another host (its paths mean nothing here).
    fn is_remote(&self) -> bool {
        false
    }
}

/// Workspaces on another host (where the terminal runs its commands).
#[async_trait::async_trait]
pub trait Remote: Send + Sync + fmt::Debug {
    /// The host's disk and the canonical path there of the workspace at `below` (its path under
    /// the workspace root, the same layout as here), created (mode 0700) if missing. The error
    /// says why the host cannot be used now.
    async fn open(&self, below: &Path) -> Result<(std::sync::Arc<dyn Disk>, PathBuf), String>;
}

/// Largest file the tools read or write whole.
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// How much of a file's start is checked for NUL bytes to call it binary.
const BINARY_PROBE: usize = 8 * 1024;

/// Run blocking file system work on tokio's blocking pool.
pub async fn blocking<T, F>(work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::Failed(format!("the file operation did not finish: {e}")))?
}

/// Whether `bytes` (a file's start) looks like binary data: git's heuristic, a NUL byte early on.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(BINARY_PROBE)].contains(&0)
}

/// The bytes of the regular text file at `path` (resolved inside `ws`), or an error naming it
/// and saying what to do instead.
pub fn read_text(ws: &Workspace, path: &Path) -> Result<Vec<u8>, ToolError> {
    let name = ws.display(path);
    let meta = ws
        .disk()
        .stat(path)
        .map_err(|e| io_error("read", &name, &e))?;
    if meta.is_dir() {
        return Err(ToolError::Failed(format!(
            "`{name}` is a directory; use list_dir to see its contents"
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::Failed(format!(
            "`{name}` is not a regular file (a device, socket or pipe)"
        )));
    }
    if meta.len > MAX_FILE_BYTES {
        return Err(ToolError::Failed(format!(
            "`{name}` is {}, more than the {} limit for whole-file tools; use search_files to \
             find the lines you need in it",
            human_size(meta.len),
            human_size(MAX_FILE_BYTES)
        )));
    }
    let bytes = ws
        .disk()
        .read(path)
        .map_err(|e| io_error("read", &name, &e))?;
    if looks_binary(&bytes) {
        return Err(ToolError::Failed(format!(
            "`{name}` looks like a binary file (it contains NUL bytes); only text files can be \
             read or edited"
        )));
    }
    Ok(bytes)
}

/// An I/O failure on `name`, worded for the model.
pub fn io_error(verb: &str, name: &str, e: &io::Error) -> ToolError {
    let reason = match e.kind() {
        io::ErrorKind::NotFound => "it does not exist".to_owned(),
        io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => e.to_string(),
    };
    ToolError::Failed(format!("cannot {verb} `{name}`: {reason}"))
}

/// A size for people and models: `512 B`, `3.4 KB`, `12.0 MB`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `n` and `word`, with an `s` unless `n` is 1: `1 line`, `3 lines`.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// `line` cut to `max` characters, with a note saying how much was dropped.
pub fn cut_line(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        None => line.to_owned(),
        Some((at, _)) => {
            let rest = line[at..].chars().count();
            format!("{}… [{rest} more characters]", &line[..at])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1536), "1.5 KB");
        assert_eq!(human_size(10 * 1024 * 1024), "10.0 MB");
        assert_eq!(plural(1, "line"), "1 line");
        assert_eq!(plural(0, "line"), "0 lines");
    }

    #[test]
    fn long_lines_are_cut_on_a_character_boundary() {
        assert_eq!(cut_line("héllo", 10), "héllo");
        assert_eq!(cut_line("héllo", 2), "hé… [3 more characters]");
    }

    #[test]
    fn binary_means_a_nul_in_the_first_8_kb() {
        assert!(looks_binary(b"ab\0c"));
        assert!(!looks_binary(b"plain text"));
        let mut late = vec![b'a'; BINARY_PROBE];
        late.push(0);
        assert!(!looks_binary(&late));
    }
}
