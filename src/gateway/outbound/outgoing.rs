//! Files the agent sends to a chat: each is copied under `$HERMES_HOME/outgoing/` before its
//! outbox row is queued, so a retry after a crash or an outage still finds it (the agent may have
//! changed or deleted the original), and copies older than the delivery log's retention are
//! removed with it.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hermes_adapter::OutboundFile;

/// Where the copies live.
pub(crate) fn dir(home: &Path) -> PathBuf {
    home.join("outgoing")
}

/// Copy `src` for the outbox row `key` (one folder per row, named after the key, so a replayed
/// turn overwrites its own copy instead of adding another). Refuses anything but a regular file,
/// and files over `max_bytes`.
pub(crate) fn stage(
    home: &Path,
    key: &str,
    src: &Path,
    max_bytes: u64,
) -> Result<OutboundFile, String> {
    let meta = std::fs::metadata(src).map_err(|e| format!("cannot read the file: {e}"))?;
    if !meta.is_file() {
        return Err("only regular files can be sent (not folders or devices)".into());
    }
    if meta.len() == 0 {
        return Err("the file is empty".into());
    }
    if meta.len() > max_bytes {
        return Err(format!(
            "the file has {} and this platform takes at most {}: compress or split it",
            human(meta.len()),
            human(max_bytes)
        ));
    }
    let name = src
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "file".to_owned());
    let folder = dir(home).join(folder_name(key));
    std::fs::create_dir_all(&folder).map_err(|e| format!("cannot stage the file: {e}"))?;
    let path = folder.join(&name);
    let size = std::fs::copy(src, &path).map_err(|e| format!("cannot stage the file: {e}"))?;
    let mime = mime_of(&name, &path);
    Ok(OutboundFile {
        path,
        name,
        mime,
        size,
    })
}

/// A folder name for an idempotency key: safe characters only, unique per key.
fn folder_name(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Remove staged copies older than `age`; returns how many folders went.
pub(crate) fn prune(home: &Path, age: Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(dir(home)) else {
        return 0;
    };
    let cutoff = SystemTime::now() - age;
    let mut removed = 0;
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t < cutoff);
        if old && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The media type: the first bytes for pictures and PDFs, else the extension.
fn mime_of(name: &str, path: &Path) -> String {
    let mut head = [0u8; 16];
    let n = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    if let Some(m) = sniff(&head[..n]) {
        return m.to_owned();
    }
    if head[..n].starts_with(b"%PDF-") {
        return "application/pdf".to_owned();
    }
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "txt" | "log" => "text/plain",
        "md" => "text/markdown",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "json" => "application/json",
        "xml" => "application/xml",
        "yaml" | "yml" => "application/yaml",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        "tar" => "application/x-tar",
        "svg" => "image/svg+xml",
        "mp3" => "audio/mpeg",
        "ogg" | "oga" => "audio/ogg",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        _ => "application/octet-stream",
    }
    .to_owned()
}

fn human(bytes: u64) -> String {
    if bytes >= 1024 * 1024 {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    } else {
        format!("{} KB", bytes.div_ceil(1024))
    }
}

/// The image type from its first bytes.
pub(crate) fn sniff(bytes: &[u8]) -> Option<&'static str> {
    Some(match bytes {
        [0x89, b'P', b'N', b'G', ..] => "image/png",
        [0xFF, 0xD8, 0xFF, ..] => "image/jpeg",
        [b'G', b'I', b'F', ..] => "image/gif",
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'E',
            b'B',
            b'P',
            ..,
        ] => "image/webp",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_staged_copy_outlives_the_original_and_knows_its_type() {
        let home = tempfile::tempdir().unwrap();
        let src = home.path().join("chart.png");
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend_from_slice(&[0; 100]);
        std::fs::write(&src, &png).unwrap();
        let f = stage(home.path(), "file:42:1", &src, 1 << 20).unwrap();
        std::fs::remove_file(&src).unwrap();
        assert_eq!(std::fs::read(&f.path).unwrap(), png);
        assert_eq!(
            (f.name.as_str(), f.mime.as_str(), f.size),
            ("chart.png", "image/png", 108)
        );
        assert!(f.is_image());
        assert!(f.path.starts_with(dir(home.path()).join("file_42_1")));

        let notes = home.path().join("notes.md");
        std::fs::write(&notes, "# hi").unwrap();
        let f = stage(home.path(), "file:42:2", &notes, 1 << 20).unwrap();
        assert_eq!(f.mime, "text/markdown");
        assert!(!f.is_image());
    }

    #[test]
    fn refuses_folders_empty_and_oversized_files_with_a_reason() {
        let home = tempfile::tempdir().unwrap();
        let err = stage(home.path(), "k", home.path(), 10).unwrap_err();
        assert!(err.contains("regular files"), "{err}");
        let empty = home.path().join("empty");
        std::fs::write(&empty, "").unwrap();
        assert!(
            stage(home.path(), "k", &empty, 10)
                .unwrap_err()
                .contains("empty")
        );
        let big = home.path().join("big.bin");
        std::fs::write(&big, vec![1u8; 3 * 1024 * 1024]).unwrap();
        let err = stage(home.path(), "k", &big, 2 * 1024 * 1024).unwrap_err();
        assert!(err.contains("3.0 MB") && err.contains("2.0 MB"), "{err}");
        assert!(!dir(home.path()).join("k").exists(), "nothing staged");
    }

    #[test]
    fn pruning_removes_only_old_copies() {
        let home = tempfile::tempdir().unwrap();
        let src = home.path().join("a.txt");
        std::fs::write(&src, "x").unwrap();
        stage(home.path(), "one", &src, 10).unwrap();
        assert_eq!(prune(home.path(), Duration::from_secs(3600)), 0);
        assert_eq!(prune(home.path(), Duration::ZERO), 1);
        assert!(!dir(home.path()).join("one").exists());
    }
}
