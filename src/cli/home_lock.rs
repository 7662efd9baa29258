//! The home's lock file (`$HERMES_HOME/hermes.lock`): a running daemon holds a shared lock on it
//! for its whole life, `hermes restore` an exclusive one while it writes. So a restore sees a
//! daemon running on its target home (and refuses), and a daemon does not start in the middle of
//! a restore. The lock is the kernel's (`flock`): a killed daemon leaves the file behind but not
//! the lock.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

/// The lock file of `home`.
pub(super) fn path(home: &Path) -> PathBuf {
    home.join("hermes.lock")
}

/// Why the home's lock could not be had.
#[derive(Debug)]
pub(super) enum Refused {
    /// Another process holds it (a daemon, or a restore).
    Held,
    /// The file could not be created or opened.
    Io(std::io::Error),
}

/// Open (creating it, and the home, if needed) the lock file of `home`.
fn open(home: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(home)?;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path(home))
}

/// The daemon's hold on `home`, released when the returned file is dropped (or the process ends).
pub(super) fn shared(home: &Path) -> Result<File, Refused> {
    let file = open(home).map_err(Refused::Io)?;
    match file.try_lock_shared() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(Refused::Held),
        Err(TryLockError::Error(e)) => Err(Refused::Io(e)),
    }
}

/// The restore's hold on `home`: refused while any daemon holds its shared lock.
pub(super) fn exclusive(home: &Path) -> Result<File, Refused> {
    let file = open(home).map_err(Refused::Io)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(Refused::Held),
        Err(TryLockError::Error(e)) => Err(Refused::Io(e)),
    }
}

/// Whether some process holds `home`'s lock now, without creating anything: a home without a
/// lock file has no daemon started by this version.
pub(super) fn is_held(home: &Path) -> std::io::Result<bool> {
    let file = match std::fs::OpenOptions::new().read(true).open(path(home)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    match file.try_lock() {
        Ok(()) => Ok(false),
        Err(TryLockError::WouldBlock) => Ok(true),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_s_shared_lock_keeps_a_restore_out_and_lets_another_reader_in() {
        let home = tempfile::tempdir().unwrap();
        assert!(!is_held(home.path()).unwrap());
        let daemon = shared(home.path()).unwrap();
        assert!(is_held(home.path()).unwrap());
        assert!(matches!(exclusive(home.path()), Err(Refused::Held)));
        let other = shared(home.path()).unwrap();
        drop((daemon, other));
        let restore = exclusive(home.path()).unwrap();
        assert!(matches!(shared(home.path()), Err(Refused::Held)));
        drop(restore);
        assert!(!is_held(home.path()).unwrap());
    }
}
