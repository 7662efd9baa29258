//! [`SftpFiles`]: the file tools' disk on the SSH host, over SFTP on the master connection.
//!
//! One SFTP session per host (`ssh -s … sftp`, a client of the master the terminal uses too)
//! serves every call; a session whose connection failed is replaced by the next call. Requests
//! time out after [`REQUEST_SECS`], so a host that stops answering gives the model an error
//! rather than a hung tool. Files are replaced atomically (a temporary file beside the target,
//! then OpenSSH's `posix-rename@openssh.com`), as on the local disk. The SFTP protocol itself is
//! `russh-sftp`'s: it speaks the protocol over any byte stream, here the client's pipes.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use async_trait::async_trait;
use russh_sftp::client::RawSftpSession;
use russh_sftp::client::error::Error as SftpError;
use russh_sftp::protocol::{FileAttributes, OpenFlags, Packet, StatusCode};

use super::SshTarget;
use crate::tools::files::{Disk, Kind, Meta, Remote};

/// How long one SFTP request may take.
const REQUEST_SECS: u64 = 15;
/// Bytes asked for or sent in one request (well under OpenSSH's 256 KiB packets).
const CHUNK: usize = 32 * 1024;

/// The SSH host's files, one session kept for every call.
pub struct SftpFiles {
    target: Arc<SshTarget>,
    session: tokio::sync::Mutex<Option<Arc<Session>>>,
}

impl fmt::Debug for SftpFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SftpFiles")
            .field("host", &self.target.name())
            .finish_non_exhaustive()
    }
}

/// One SFTP session: the `ssh` client carrying it and the protocol on its pipes.
struct Session {
    raw: RawSftpSession,
    /// Set when a request failed for want of a connection: the next call starts a new session.
    broken: AtomicBool,
    client: std::sync::Mutex<tokio::process::Child>,
}

impl Session {
    /// Whether the session can serve another call: no request lost its connection and the
    /// client still runs (it ends with the master, when the server went away).
    fn usable(&self) -> bool {
        !self.broken.load(Ordering::Relaxed)
            && self
                .client
                .lock()
                .map(|mut c| matches!(c.try_wait(), Ok(None)))
                .unwrap_or(false)
    }
}

impl SftpFiles {
    pub fn new(target: Arc<SshTarget>) -> Self {
        SftpFiles {
            target,
            session: tokio::sync::Mutex::new(None),
        }
    }

    /// The session, started (after the master connection) when there is none that works.
    async fn session(&self) -> Result<Arc<Session>, String> {
        let mut slot = self.session.lock().await;
        if let Some(s) = slot.as_ref().filter(|s| s.usable()) {
            return Ok(s.clone());
        }
        *slot = None;
        self.target.ensure_master().await?;
        let mut client = tokio::process::Command::new(&self.target.program)
            .args(self.target.sftp_args())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.target.program.display()))?;
        let (Some(stdin), Some(stdout)) = (client.stdin.take(), client.stdout.take()) else {
            return Err("the ssh client has no pipes".into());
        };
        let raw = RawSftpSession::new(tokio::io::join(stdout, stdin));
        raw.set_timeout(REQUEST_SECS);
        raw.init()
            .await
            .map_err(|e| format!("the host does not offer SFTP (sshd's `Subsystem sftp`): {e}"))?;
        let session = Arc::new(Session {
            raw,
            broken: AtomicBool::new(false),
            client: std::sync::Mutex::new(client),
        });
        *slot = Some(session.clone());
        Ok(session)
    }
}

#[async_trait]
impl Remote for SftpFiles {
    async fn open(&self, below: &Path) -> Result<(Arc<dyn Disk>, PathBuf), String> {
        let session = self
            .session()
            .await
            .map_err(|e| format!("cannot reach {} over SSH: {e}", self.target.name()))?;
        let root = PathBuf::from(&self.target.config.root);
        let disk = Arc::new(SftpDisk {
            session,
            runtime: tokio::runtime::Handle::current(),
            host: self.target.name(),
        });
        let dir = root.join(below);
        let worker = disk.clone();
        tokio::task::spawn_blocking(move || {
            worker.create_dirs(&dir)?;
            worker.canonicalize(&dir)
        })
        .await
        .map_err(|e| e.to_string())?
        .map(|root| (disk as Arc<dyn Disk>, root))
        .map_err(|e| format!("cannot open the workspace on {}: {e}", self.target.name()))
    }
}

/// The disk of one session; blocking calls run its requests on the runtime.
struct SftpDisk {
    session: Arc<Session>,
    runtime: tokio::runtime::Handle,
    host: String,
}

impl fmt::Debug for SftpDisk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SftpDisk")
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

impl SftpDisk {
    fn raw(&self) -> &RawSftpSession {
        &self.session.raw
    }

    /// Run one request's future to its end (from a blocking thread), its error as an
    /// [`io::Error`]; a failed connection marks the session for replacement.
    fn run<T>(&self, work: impl Future<Output = Result<T, SftpError>>) -> io::Result<T> {
        self.runtime.block_on(work).map_err(|e| self.error(e))
    }

    fn error(&self, e: SftpError) -> io::Error {
        match e {
            SftpError::Status(s) => {
                let kind = match s.status_code {
                    StatusCode::NoSuchFile => io::ErrorKind::NotFound,
                    StatusCode::PermissionDenied => io::ErrorKind::PermissionDenied,
                    _ => io::ErrorKind::Other,
                };
                let said = s.error_message.trim();
                io::Error::new(
                    kind,
                    if said.is_empty() {
                        s.status_code.to_string()
                    } else {
                        said.to_owned()
                    },
                )
            }
            other => {
                self.session.broken.store(true, Ordering::Relaxed);
                io::Error::other(format!(
                    "the SFTP connection to {} failed ({other}); the next call reconnects",
                    self.host
                ))
            }
        }
    }

    /// Read the whole file behind an open handle.
    async fn read_handle(&self, handle: &str) -> Result<Vec<u8>, SftpError> {
        let mut out = Vec::new();
        loop {
            match self
                .raw()
                .read(handle, out.len() as u64, CHUNK as u32)
                .await
            {
                Ok(data) if data.data.is_empty() => return Ok(out),
                Ok(data) => out.extend_from_slice(&data.data),
                Err(SftpError::Status(s)) if s.status_code == StatusCode::Eof => return Ok(out),
                Err(e) => return Err(e),
            }
        }
    }

    /// Write the temporary file `tmp` and rename it over `path`.
    async fn replace_via(&self, tmp: &str, path: &str, bytes: &[u8]) -> Result<(), SftpError> {
        let mut attrs = FileAttributes::empty();
        // An existing file keeps its permissions; a new one gets the server's default.
        if let Ok(existing) = self.raw().stat(path).await {
            attrs.permissions = existing.attrs.permissions.map(|p| p & 0o7777);
        }
        let flags = OpenFlags::WRITE | OpenFlags::CREATE | OpenFlags::EXCLUDE;
        let handle = self.raw().open(tmp, flags, attrs).await?.handle;
        let written = async {
            for (i, chunk) in bytes.chunks(CHUNK).enumerate() {
                self.raw()
                    .write(handle.as_str(), (i * CHUNK) as u64, chunk.to_vec())
                    .await?;
            }
            // Flushed to the remote disk where the server can (OpenSSH's fsync extension).
            let _ = self.raw().fsync(handle.as_str()).await;
            Ok::<(), SftpError>(())
        }
        .await;
        let closed = self.raw().close(handle.as_str()).await;
        written?;
        closed?;
        self.posix_rename(tmp, path).await
    }

    /// `rename(2)` on the server, replacing `to`: plain SFTP renames refuse an existing target.
    async fn posix_rename(&self, from: &str, to: &str) -> Result<(), SftpError> {
        let mut data = Vec::with_capacity(8 + from.len() + to.len());
        for s in [from, to] {
            data.extend_from_slice(&(s.len() as u32).to_be_bytes());
            data.extend_from_slice(s.as_bytes());
        }
        match self
            .raw()
            .extended("posix-rename@openssh.com", data)
            .await?
        {
            Packet::Status(s) if s.status_code == StatusCode::Ok => Ok(()),
            Packet::Status(s) => Err(SftpError::Status(s)),
            _ => Err(SftpError::UnexpectedPacket),
        }
    }
}

/// A path as the protocol's string.
fn text(path: &Path) -> io::Result<String> {
    path.to_str().map(str::to_owned).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not valid UTF-8", path.display()),
        )
    })
}

fn meta(attrs: &FileAttributes) -> Meta {
    let kind = if attrs.is_symlink() {
        Kind::Symlink
    } else if attrs.is_dir() {
        Kind::Dir
    } else if attrs.is_regular() {
        Kind::File
    } else {
        Kind::Other
    };
    Meta {
        kind,
        len: attrs.size.unwrap_or(0),
    }
}

impl Disk for SftpDisk {
    fn lstat(&self, path: &Path) -> io::Result<Meta> {
        let path = text(path)?;
        self.run(self.raw().lstat(path)).map(|a| meta(&a.attrs))
    }

    fn stat(&self, path: &Path) -> io::Result<Meta> {
        let path = text(path)?;
        self.run(self.raw().stat(path)).map(|a| meta(&a.attrs))
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let path = text(path)?;
        // OpenSSH resolves a missing path too; canonicalize(3) must not.
        self.run(self.raw().stat(path.as_str()))?;
        let name = self.run(self.raw().realpath(path))?;
        name.files
            .first()
            .map(|f| PathBuf::from(&f.filename))
            .ok_or_else(|| io::Error::other("the server named no path"))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let path = text(path)?;
        self.run(async {
            let handle = self
                .raw()
                .open(path, OpenFlags::READ, FileAttributes::empty())
                .await?
                .handle;
            let read = self.read_handle(&handle).await;
            let _ = self.raw().close(handle).await;
            read
        })
    }

    fn replace(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(io::Error::other("no file name"));
        };
        let tmp = dir.join(format!(
            ".{}.{}-{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let (tmp, path) = (text(&tmp)?, text(path)?);
        let done = self.run(self.replace_via(&tmp, &path, bytes));
        if done.is_err() {
            let _ = self.run(self.raw().remove(tmp.as_str()));
        }
        done
    }

    fn create_dirs(&self, path: &Path) -> io::Result<()> {
        let mut at = PathBuf::new();
        for part in path.components() {
            at.push(part);
            match self.stat(&at) {
                Ok(m) if m.is_dir() => continue,
                Ok(_) => {
                    return Err(io::Error::other(format!(
                        "{} is not a directory",
                        at.display()
                    )));
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            let mut attrs = FileAttributes::empty();
            attrs.permissions = Some(0o700);
            let dir = text(&at)?;
            self.run(self.raw().mkdir(dir, attrs))?;
        }
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<(OsString, Meta)>> {
        let dir = text(dir)?;
        self.run(async {
            let handle = self.raw().opendir(dir).await?.handle;
            let mut out = Vec::new();
            let listed = loop {
                match self.raw().readdir(handle.as_str()).await {
                    Ok(name) => out.extend(
                        name.files
                            .into_iter()
                            .filter(|f| f.filename != "." && f.filename != "..")
                            .map(|f| (OsString::from(f.filename), meta(&f.attrs))),
                    ),
                    Err(SftpError::Status(s)) if s.status_code == StatusCode::Eof => break Ok(()),
                    Err(e) => break Err(e),
                }
            };
            let _ = self.raw().close(handle).await;
            listed.map(|()| out)
        })
    }

    fn is_remote(&self) -> bool {
        true
    }
}
