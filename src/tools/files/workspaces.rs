//! [`Workspaces`]: one workspace per person under the workspace root, and which one a tool call
//! works in.
//!
//! | who | workspace |
//! |---|---|
//! | a person (direct messages, their own session in a group) | `<root>/<platform>/<person>` |
//! | a shared session (a thread, a group set to one session per chat) | `<root>/<platform>/+<chat>` or `+<chat>+<thread>` |
//! | an operator in their own session | `<root>` itself: every person's workspace, and the files of the one shared workspace of earlier versions |
//!
//! Names are escaped so that any user or chat id is one safe directory name: bytes outside
//! `[A-Za-z0-9._@-]` become `%XX`, a leading `.` too (no `.`, `..` or hidden names), and a name
//! longer than [`MAX_NAME`] keeps its start and gets a hash of the whole. `+` is always escaped
//! in ids, so a shared session's directory never collides with a person's.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hermes_adapter::SessionScope;

use super::{Remote, Workspace};
use crate::policy::Role;
use crate::tools::{ToolContext, ToolError};

/// Longest directory name written for one id (file systems allow 255 bytes).
pub const MAX_NAME: usize = 120;

/// The workspace root and the rule that gives each call its directory under it.
#[derive(Debug, Clone)]
pub struct Workspaces {
    root: PathBuf,
    /// Why the file tools may not work here (the terminal's host cannot be used): every call is
    /// refused with it.
    refusal: Option<String>,
    /// The host the workspaces are on, when it is not this one.
    remote: Option<Arc<dyn Remote>>,
}

impl Workspaces {
    /// The workspaces under `root`, which is created if missing.
    pub fn new(root: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(root)?;
        Ok(Workspaces {
            root: root.canonicalize()?,
            refusal: None,
            remote: None,
        })
    }

    /// Workspaces under `root` as given, without touching the disk (when the root cannot be
    /// created now; [`Workspaces::open`] then reports why at each call).
    pub fn unchecked(root: &Path) -> Self {
        Workspaces {
            root: std::path::absolute(root).unwrap_or_else(|_| root.to_owned()),
            refusal: None,
            remote: None,
        }
    }

    /// Keep the workspaces on another host, in the same layout under its own root (where the
    /// terminal runs: a file tool never works on other files than the terminal sees).
    pub fn on(mut self, remote: Arc<dyn Remote>) -> Self {
        self.remote = Some(remote);
        self
    }

    /// Refuse every file tool call with `why` (their files would not be the terminal's).
    pub fn refusing(mut self, why: impl Into<String>) -> Self {
        self.refusal = Some(why.into());
        self
    }

    /// The root (canonical, unless it could not be created).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file named by a call's `path` argument, worked out from the text alone, relative to
    /// the caller's workspace (for [`crate::tools::Tool::writes`], which orders the writes of one
    /// turn, all in one workspace).
    pub fn path_argument(&self, args: &serde_json::Value) -> Vec<PathBuf> {
        let here = Workspace::unchecked(Path::new(""));
        here.path_argument(args)
    }

    /// The directory a call works in (see the module's table); not created.
    pub fn dir_for(&self, ctx: &ToolContext) -> PathBuf {
        let key = &ctx.session;
        let platform = key.platform.as_str();
        match &key.scope {
            SessionScope::Direct { .. } | SessionScope::Group { user: Some(_), .. }
                if ctx.role == Role::Operator =>
            {
                self.root.clone()
            }
            SessionScope::Direct { user, .. }
            | SessionScope::Group {
                user: Some(user), ..
            } => self.root.join(platform).join(escape(user.as_str())),
            SessionScope::Group {
                chat,
                thread,
                user: None,
            } => {
                let mut name = format!("+{}", escape(chat.as_str()));
                if let Some(thread) = thread {
                    name.push('+');
                    name.push_str(&escape(thread.as_str()));
                }
                self.root.join(platform).join(name)
            }
        }
    }

    /// The workspace of a call, created if missing (mode 0700: nobody else on the machine reads
    /// a person's files).
    pub async fn open(&self, ctx: &ToolContext) -> Result<Workspace, ToolError> {
        if let Some(why) = &self.refusal {
            return Err(ToolError::Failed(why.clone()));
        }
        let dir = self.dir_for(ctx);
        if let Some(remote) = &self.remote {
            let below = dir.strip_prefix(&self.root).unwrap_or(Path::new(""));
            let (disk, root) = remote.open(below).await.map_err(ToolError::Failed)?;
            return Ok(Workspace::on(disk, root));
        }
        super::disk::blocking(move || {
            create_private(&dir)
                .and_then(|()| Workspace::new(&dir))
                .map_err(|e| {
                    ToolError::Failed(format!(
                        "the workspace {} is not available ({e})",
                        dir.display()
                    ))
                })
        })
        .await
    }
}

/// `mkdir -p` with mode 0700 for what it creates.
fn create_private(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// One id as one directory name (see the module's documentation).
pub fn escape(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for (i, b) in id.bytes().enumerate() {
        let keep =
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'@' | b'-') || (b == b'.' && i > 0);
        if keep {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    if out.is_empty() {
        out.push('%');
    }
    if out.len() > MAX_NAME {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(id.as_bytes());
        let mut cut = MAX_NAME - 17;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push('~');
        for b in &digest[..8] {
            let _ = write!(out, "{b:02x}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_adapter::{Platform, SessionKey};

    fn ctx(session: SessionKey, role: Role) -> ToolContext {
        ToolContext {
            session,
            role,
            ..ToolContext::for_tests()
        }
    }

    fn group(chat: &str, thread: Option<&str>, user: Option<&str>) -> SessionKey {
        SessionKey {
            platform: Platform::Discord,
            scope: SessionScope::Group {
                chat: chat.into(),
                thread: thread.map(Into::into),
                user: user.map(Into::into),
            },
        }
    }

    #[test]
    fn each_person_and_each_shared_session_has_its_own_directory() {
        let ws = Workspaces::unchecked(Path::new("/w"));
        let user = |key| ws.dir_for(&ctx(key, Role::User));
        let dm = user(SessionKey::direct(Platform::Telegram, "42"));
        assert_eq!(dm, Path::new("/w/telegram/42"));
        // The same person in a group of their own session: the same workspace.
        assert_eq!(
            user(group("g1", None, Some("7"))),
            Path::new("/w/discord/7")
        );
        assert_eq!(user(group("g1", None, None)), Path::new("/w/discord/+g1"));
        assert_eq!(
            user(group("g1", Some("t9"), None)),
            Path::new("/w/discord/+g1+t9")
        );
        // An operator in their own session works at the root; in a shared one, in its workspace.
        let op = |key| ws.dir_for(&ctx(key, Role::Operator));
        assert_eq!(
            op(SessionKey::direct(Platform::Telegram, "1")),
            Path::new("/w")
        );
        assert_eq!(op(group("g1", None, None)), Path::new("/w/discord/+g1"));
    }

    #[test]
    fn names_are_escaped_into_one_safe_component() {
        assert_eq!(escape("8123456"), "8123456");
        assert_eq!(escape("@alice:example.org"), "@alice%3Aexample.org");
        assert_eq!(escape("a@b.c"), "a@b.c");
        assert_eq!(escape(".."), "%2E.");
        assert_eq!(escape("../x"), "%2E.%2Fx");
        assert_eq!(escape("+g"), "%2Bg");
        assert_eq!(escape(""), "%");
        assert_eq!(escape("é"), "%C3%A9");
        let long = "x".repeat(500);
        let cut = escape(&long);
        assert_eq!(cut.len(), MAX_NAME);
        assert_ne!(cut, escape(&"x".repeat(501)), "long ids stay distinct");
        for id in ["a/b", "a\0b", "a b", "%41", "~"] {
            let e = escape(id);
            assert!(
                !e.contains('/') && !e.contains('\0') && e != id,
                "{id} -> {e}"
            );
        }
    }

    #[tokio::test]
    async fn a_workspace_is_created_private_on_first_use() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let ws = Workspaces::new(root.path()).unwrap();
        let opened = ws
            .open(&ctx(SessionKey::direct(Platform::Slack, "U1"), Role::User))
            .await
            .unwrap();
        assert!(opened.root().ends_with("slack/U1"));
        let mode = std::fs::metadata(opened.root())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
