//! [`Workspace`]: the one directory the file tools may touch, and the path resolution that keeps
//! them inside it.
//!
//! Every path the model gives goes through [`Workspace::resolve`], which walks it one component
//! at a time the way the kernel would: `.` is skipped, `..` goes to the parent of the directory
//! reached so far, and a symbolic link is replaced by its canonical target. The walk is refused
//! the moment it leaves the root, so `../x`, `a/../../x`, an absolute path elsewhere and a link
//! (file or directory, last component or in the middle) whose target lies outside are all
//! rejected, while links that stay inside work. Components that do not exist yet (a file about to
//! be written, its new parent directories) are appended lexically: nothing on disk can redirect
//! them until they are created.
//!
//! # Limits
//!
//! This is a check followed by a use, not a capability-based open (`openat2` with
//! `RESOLVE_BENEATH`, `cap-std`). A process that swaps a directory for a symlink between
//! [`Workspace::resolve`] and the tool's `open` can still redirect that one operation. The guard
//! is meant for the model's mistakes and for paths planted by prompt injection, not for a hostile
//! local process racing the daemon; such a process could as well edit the files directly. Hard
//! links are indistinguishable from ordinary files and are not detected.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::disk::{Disk, Local};
use crate::tools::ToolError;

/// What the caller will do with a resolved path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// The path must exist.
    Read,
    /// The path may be missing (it will be created); its missing parents are created inside the
    /// root.
    Write,
}

/// The root directory of the file tools, canonicalized once, and the disk it is on.
#[derive(Debug, Clone)]
pub struct Workspace {
    disk: Arc<dyn Disk>,
    root: PathBuf,
    /// The root as configured, made absolute but not canonical, so that an absolute path the
    /// user sees in their configuration (`/tmp/ws/a` where `/tmp` is a link) is accepted too.
    given: PathBuf,
}

impl Workspace {
    /// Use `root` as the workspace, creating it if it does not exist.
    pub fn new(root: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(root)?;
        Ok(Workspace {
            disk: Arc::new(Local),
            root: root.canonicalize()?,
            given: std::path::absolute(root)?,
        })
    }

    /// The workspace at `root` on `disk` (another host's), which must be canonical there.
    pub fn on(disk: Arc<dyn Disk>, root: PathBuf) -> Self {
        Workspace {
            disk,
            given: root.clone(),
            root,
        }
    }

    /// A workspace at `root` as given, with no disk access: only for working out paths from
    /// their text ([`Workspace::lexical`]), never for [`Workspace::resolve`].
    pub(super) fn unchecked(root: &Path) -> Self {
        Workspace {
            disk: Arc::new(Local),
            root: root.to_owned(),
            given: root.to_owned(),
        }
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The disk the workspace is on.
    pub fn disk(&self) -> &dyn Disk {
        &*self.disk
    }

    /// Turn a path from the model into an absolute path inside the workspace, or explain why not.
    ///
    /// The result is canonical up to its last existing component. For [`Intent::Read`] the whole
    /// path exists; for [`Intent::Write`] the rest is a plain list of names to create.
    pub fn resolve(&self, user_path: &str, intent: Intent) -> Result<PathBuf, ToolError> {
        let relative = self.relative_part(user_path)?;
        let mut cur = self.root.clone();
        let mut cur_is_dir = true;
        // Names below `cur` that do not exist (yet).
        let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
        // The user's path up to the current component, for messages.
        let mut walked = PathBuf::new();

        for component in relative.components() {
            match component {
                Component::CurDir => continue,
                Component::Prefix(_) | Component::RootDir => {
                    return Err(invalid(format!("`{user_path}` is not a relative path")));
                }
                Component::ParentDir => {
                    if missing.pop().is_some() {
                        walked.push("..");
                        continue;
                    }
                    if !cur_is_dir {
                        return Err(not_a_dir(&walked));
                    }
                    walked.push("..");
                    if cur == self.root {
                        return Err(outside(user_path));
                    }
                    cur.pop();
                    cur_is_dir = true;
                }
                Component::Normal(name) => {
                    walked.push(name);
                    if !missing.is_empty() {
                        missing.push(name);
                        continue;
                    }
                    if !cur_is_dir {
                        return Err(not_a_dir(walked.parent().unwrap_or(Path::new(""))));
                    }
                    let next = cur.join(name);
                    match self.disk.lstat(&next) {
                        Ok(meta) if meta.is_symlink() => {
                            let target = self.disk.canonicalize(&next).map_err(|_| {
                                ToolError::Failed(format!(
                                    "`{}` is a symbolic link whose target does not exist",
                                    walked.display()
                                ))
                            })?;
                            if !target.starts_with(&self.root) {
                                return Err(invalid(format!(
                                    "`{}` is a symbolic link to a place outside the workspace; \
                                     only paths inside the workspace can be used",
                                    walked.display()
                                )));
                            }
                            cur_is_dir = self.disk.stat(&target).is_ok_and(|m| m.is_dir());
                            cur = target;
                        }
                        Ok(meta) => {
                            cur_is_dir = meta.is_dir();
                            cur = next;
                        }
                        Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(name),
                        Err(e) => {
                            return Err(ToolError::Failed(format!(
                                "cannot access `{}`: {e}",
                                walked.display()
                            )));
                        }
                    }
                }
            }
        }

        if missing.is_empty() {
            return Ok(cur);
        }
        match intent {
            Intent::Read => Err(ToolError::Failed(format!(
                "`{user_path}` does not exist; use list_dir or search_files to find the right path"
            ))),
            Intent::Write => Ok(missing.into_iter().fold(cur, |p, name| p.join(name))),
        }
    }

    /// The file named by a call's `path` argument, worked out without touching the disk (for
    /// [`crate::tools::Tool::writes`]).
    pub fn path_argument(&self, args: &serde_json::Value) -> Vec<PathBuf> {
        args.get("path")
            .and_then(serde_json::Value::as_str)
            .and_then(|p| self.lexical(p))
            .into_iter()
            .collect()
    }

    /// Where `user_path` points, worked out from the text alone (no file system access), or
    /// `None` if it leaves the workspace. Used to name the files a call will write before it runs;
    /// [`Workspace::resolve`] remains the check.
    pub fn lexical(&self, user_path: &str) -> Option<PathBuf> {
        let relative = self.relative_part(user_path).ok()?;
        let mut out = self.root.clone();
        for component in relative.components() {
            match component {
                Component::Normal(name) => out.push(name),
                Component::ParentDir if out != self.root => {
                    out.pop();
                }
                Component::CurDir => {}
                _ => return None,
            }
        }
        Some(out)
    }

    /// `abs` relative to the root, for messages to the model (`.` for the root itself).
    pub fn display(&self, abs: &Path) -> String {
        match abs.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.to_string_lossy().replace('\\', "/"),
            Err(_) => abs.display().to_string(),
        }
    }

    /// Check the raw text and turn an absolute path into one relative to the root.
    fn relative_part<'a>(&self, user_path: &'a str) -> Result<&'a Path, ToolError> {
        if user_path.contains('\0') {
            return Err(invalid("the path contains a NUL character".to_owned()));
        }
        if user_path.trim().is_empty() {
            return Err(invalid(
                "the path is empty; use \".\" for the workspace root".to_owned(),
            ));
        }
        let path = Path::new(user_path);
        if !path.is_absolute() {
            return Ok(path);
        }
        path.strip_prefix(&self.root)
            .or_else(|_| path.strip_prefix(&self.given))
            .map_err(|_| {
                invalid(format!(
                    "`{user_path}` is outside the workspace; use a path relative to the \
                     workspace root"
                ))
            })
    }
}

fn invalid(message: String) -> ToolError {
    ToolError::InvalidArguments(message)
}

fn not_a_dir(path: &Path) -> ToolError {
    ToolError::Failed(format!("`{}` is a file, not a directory", path.display()))
}

fn outside(user_path: &str) -> ToolError {
    invalid(format!(
        "`{user_path}` leads outside the workspace; use a path relative to the workspace root \
         without going above it"
    ))
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn setup() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(&dir.path().join("ws")).unwrap();
        fs::create_dir_all(ws.root().join("a/b")).unwrap();
        fs::write(ws.root().join("a/b/c.txt"), "hi").unwrap();
        fs::create_dir(dir.path().join("outside")).unwrap();
        fs::write(dir.path().join("outside/secret"), "s").unwrap();
        (dir, ws)
    }

    fn err_text(r: Result<PathBuf, ToolError>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn new_creates_a_missing_root() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(&dir.path().join("x/y")).unwrap();
        assert!(ws.root().is_dir());
        assert!(ws.root().is_absolute());
    }

    #[test]
    fn dot_dot_escapes_are_refused() {
        let (_d, ws) = setup();
        for p in ["../x", "a/../../x", "..", "a/b/../../../outside/secret"] {
            for intent in [Intent::Read, Intent::Write] {
                let e = err_text(ws.resolve(p, intent));
                assert!(e.contains("leads outside the workspace"), "{p}: {e}");
            }
        }
    }

    #[test]
    fn absolute_paths_outside_are_refused() {
        let (d, ws) = setup();
        let e = err_text(ws.resolve("/etc/passwd", Intent::Read));
        assert_eq!(
            e,
            "invalid arguments: `/etc/passwd` is outside the workspace; use a path relative to \
             the workspace root"
        );
        let sibling = d.path().join("outside/secret");
        let e = err_text(ws.resolve(sibling.to_str().unwrap(), Intent::Write));
        assert!(e.contains("is outside the workspace"), "{e}");
    }

    #[test]
    fn nul_and_empty_paths_are_refused() {
        let (_d, ws) = setup();
        assert!(err_text(ws.resolve("a\0b", Intent::Read)).contains("NUL"));
        assert!(err_text(ws.resolve(" ", Intent::Read)).contains("the path is empty"));
    }

    #[test]
    fn paths_inside_resolve_to_canonical_absolute_paths() {
        let (_d, ws) = setup();
        let file = ws.root().join("a/b/c.txt");
        assert_eq!(ws.resolve("a/b/c.txt", Intent::Read).unwrap(), file);
        assert_eq!(ws.resolve("./a/x/../b/c.txt", Intent::Write).unwrap(), file);
        assert_eq!(ws.resolve("a/b/../b/c.txt", Intent::Read).unwrap(), file);
        assert_eq!(ws.resolve(".", Intent::Read).unwrap(), ws.root());
        let abs = file.to_str().unwrap().to_owned();
        assert_eq!(ws.resolve(&abs, Intent::Read).unwrap(), file);
        assert_eq!(ws.display(&file), "a/b/c.txt");
        assert_eq!(ws.display(ws.root()), ".");
    }

    #[test]
    fn missing_paths_are_errors_to_read_but_fine_to_write() {
        let (_d, ws) = setup();
        let e = err_text(ws.resolve("a/new/f.txt", Intent::Read));
        assert!(e.contains("`a/new/f.txt` does not exist"), "{e}");
        assert_eq!(
            ws.resolve("a/new/f.txt", Intent::Write).unwrap(),
            ws.root().join("a/new/f.txt")
        );
        let e = err_text(ws.resolve("a/b/c.txt/under", Intent::Write));
        assert!(e.contains("`a/b/c.txt` is a file, not a directory"), "{e}");
    }

    #[test]
    fn lexical_paths_name_the_target_without_io() {
        let (_d, ws) = setup();
        assert_eq!(ws.lexical("x/../y/z"), Some(ws.root().join("y/z")));
        assert_eq!(ws.lexical("../y"), None);
        assert_eq!(ws.lexical("/etc/passwd"), None);
    }

    #[cfg(unix)]
    mod links {
        use std::os::unix::fs::symlink;

        use super::*;

        #[test]
        fn directory_link_to_outside_is_refused_for_read_and_write() {
            let (d, ws) = setup();
            symlink(d.path().join("outside"), ws.root().join("out")).unwrap();
            for (p, intent) in [
                ("out/secret", Intent::Read),
                ("out/new.txt", Intent::Write),
                ("out", Intent::Read),
                ("out/../a", Intent::Read),
            ] {
                let e = err_text(ws.resolve(p, intent));
                assert!(
                    e.contains("`out` is a symbolic link to a place outside the workspace"),
                    "{p}: {e}"
                );
            }
        }

        #[test]
        fn file_link_to_outside_is_refused() {
            let (d, ws) = setup();
            symlink(d.path().join("outside/secret"), ws.root().join("a/s")).unwrap();
            for intent in [Intent::Read, Intent::Write] {
                let e = err_text(ws.resolve("a/s", intent));
                assert!(
                    e.contains("`a/s` is a symbolic link to a place outside"),
                    "{e}"
                );
            }
        }

        #[test]
        fn dangling_link_is_refused_for_write() {
            let (d, ws) = setup();
            symlink(d.path().join("outside/nothing"), ws.root().join("dangle")).unwrap();
            let e = err_text(ws.resolve("dangle", Intent::Write));
            assert!(e.contains("whose target does not exist"), "{e}");
            assert!(!d.path().join("outside/nothing").exists());
        }

        #[test]
        fn links_inside_the_workspace_are_followed() {
            let (_d, ws) = setup();
            symlink(ws.root().join("a/b"), ws.root().join("short")).unwrap();
            symlink(ws.root().join("a/b/c.txt"), ws.root().join("c-link")).unwrap();
            let file = ws.root().join("a/b/c.txt");
            assert_eq!(ws.resolve("short/c.txt", Intent::Read).unwrap(), file);
            assert_eq!(ws.resolve("c-link", Intent::Write).unwrap(), file);
            // `..` after a link goes to the parent of its target, as the kernel does.
            assert_eq!(ws.resolve("short/../b/c.txt", Intent::Read).unwrap(), file);
        }

        #[test]
        fn a_linked_root_accepts_absolute_paths_through_the_link() {
            let d = tempfile::tempdir().unwrap();
            fs::create_dir(d.path().join("real")).unwrap();
            symlink(d.path().join("real"), d.path().join("alias")).unwrap();
            let ws = Workspace::new(&d.path().join("alias")).unwrap();
            fs::write(ws.root().join("f"), "x").unwrap();
            let via_alias = d.path().join("alias/f");
            assert_eq!(
                ws.resolve(via_alias.to_str().unwrap(), Intent::Read)
                    .unwrap(),
                ws.root().join("f")
            );
        }
    }
}
