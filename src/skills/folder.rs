//! Changing whole skill folders in the user's directory without ever leaving a half-made one: a
//! new folder is built under a hidden name beside its final place and renamed into it, and a
//! folder is removed by renaming it aside first. Hidden names are skipped when skills load.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use include_dir::{Dir, DirEntry};

/// A hidden sibling name for `name` in `dir`, unique in this process and across processes.
fn hidden(dir: &Path, kind: &str, name: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    dir.join(format!(
        ".{kind}-{name}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A skill folder being built; removed on drop unless committed.
#[derive(Debug)]
pub struct Staging {
    path: PathBuf,
    committed: bool,
}

impl Staging {
    /// An empty hidden folder in `user_dir` (created if missing) for skill `name`.
    pub fn new(user_dir: &Path, name: &str) -> io::Result<Staging> {
        fs::create_dir_all(user_dir)?;
        let path = hidden(user_dir, "staging", name);
        fs::create_dir(&path)?;
        Ok(Staging {
            path,
            committed: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Put the folder at `target`, replacing whatever folder is there in one step as seen by
    /// readers (the old one is renamed aside, then removed).
    pub fn commit(mut self, target: &Path) -> io::Result<()> {
        let parent = target.parent().unwrap_or(Path::new("."));
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let old = if fs::symlink_metadata(target).is_ok() {
            let aside = hidden(parent, "trash", &name);
            fs::rename(target, &aside)?;
            Some(aside)
        } else {
            None
        };
        if let Err(e) = fs::rename(&self.path, target) {
            if let Some(aside) = &old {
                let _ = fs::rename(aside, target);
            }
            return Err(e);
        }
        self.committed = true;
        if let Some(aside) = old {
            let _ = remove_tree(&aside);
        }
        sync_dir(parent);
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// Remove skill folder `path`: renamed aside first, so it disappears from the library at once
/// even if removing its files is interrupted.
pub fn remove_folder(path: &Path) -> io::Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let aside = hidden(parent, "trash", &name);
    fs::rename(path, &aside)?;
    sync_dir(parent);
    remove_tree(&aside)
}

/// Remove `path`: a link itself (never what it points to), or a folder and its contents.
fn remove_tree(path: &Path) -> io::Result<()> {
    if fs::symlink_metadata(path)?.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    }
}

fn sync_dir(dir: &Path) {
    // Makes the rename durable; not every platform can open a directory, so best effort.
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Write the files of embedded skill folder `dir` below `to`.
pub fn copy_embedded(dir: &Dir<'static>, to: &Path) -> io::Result<()> {
    copy_embedded_into(dir, dir.path(), to)
}

fn copy_embedded_into(dir: &Dir<'static>, root: &Path, to: &Path) -> io::Result<()> {
    for entry in dir.entries() {
        let rel = entry.path().strip_prefix(root).map_err(io::Error::other)?;
        let dest = to.join(rel);
        match entry {
            DirEntry::Dir(sub) => {
                fs::create_dir_all(&dest)?;
                copy_embedded_into(sub, root, to)?;
            }
            DirEntry::File(f) => fs::write(&dest, f.contents())?,
        }
    }
    Ok(())
}

/// Copy the folder `from` into the existing folder `to`. Symbolic links, `.git` and other hidden
/// entries are not copied (a link in a downloaded skill could point anywhere); their paths are
/// returned so the caller can say so.
pub fn copy_tree(from: &Path, to: &Path) -> io::Result<Vec<String>> {
    let mut skipped = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        for entry in fs::read_dir(from.join(&rel))? {
            let entry = entry?;
            let name = entry.file_name();
            let rel = rel.join(&name);
            let kind = entry.file_type()?;
            if name.to_string_lossy().starts_with('.') || kind.is_symlink() {
                skipped.push(rel.to_string_lossy().into_owned());
            } else if kind.is_dir() {
                fs::create_dir(to.join(&rel))?;
                pending.push(rel);
            } else if kind.is_file() {
                fs::copy(entry.path(), to.join(&rel))?;
            } else {
                skipped.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    skipped.sort();
    Ok(skipped)
}

/// Remove the empty folders from `start` up to (not including) `root`.
pub fn prune_empty(root: &Path, start: &Path) {
    let mut dir = start.to_path_buf();
    while dir != root && dir.starts_with(root) {
        if fs::remove_dir(&dir).is_err() {
            break;
        }
        dir.pop();
    }
}
