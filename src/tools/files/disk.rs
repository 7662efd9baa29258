//! The disk side shared by the file tools: reading a text file with the size and binary checks,
//! replacing a file atomically, and running that blocking work off the async runtime.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Workspace;
use crate::tools::ToolError;

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
    let meta = fs::metadata(path).map_err(|e| io_error("read", &name, &e))?;
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
    if meta.len() > MAX_FILE_BYTES {
        return Err(ToolError::Failed(format!(
            "`{name}` is {}, more than the {} limit for whole-file tools; use search_files to \
             find the lines you need in it",
            human_size(meta.len()),
            human_size(MAX_FILE_BYTES)
        )));
    }
    let bytes = fs::read(path).map_err(|e| io_error("read", &name, &e))?;
    if looks_binary(&bytes) {
        return Err(ToolError::Failed(format!(
            "`{name}` looks like a binary file (it contains NUL bytes); only text files can be \
             read or edited"
        )));
    }
    Ok(bytes)
}

/// Replace (or create) the file at `path` with `bytes` so that readers see either the old or the
/// new content, never a half-written file: write a temporary file beside it, flush it to disk,
/// rename it over the target. An existing file keeps its permissions.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other("no parent directory"))?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("no file name"))?;
    let tmp = dir.join(format!(
        ".{}.{}-{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        if let Ok(existing) = fs::metadata(path) {
            file.set_permissions(existing.permissions())?;
        }
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
        return result;
    }
    // Make the rename itself durable; not every platform can open a directory, so best effort.
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
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

    #[test]
    fn atomic_write_keeps_permissions_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.sh");
        write_atomically(&path, b"one").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        }
        write_atomically(&path, b"two").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "two");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o755);
        }
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }
}
