//! What the adapter keeps in its state directory besides matrix-sdk's SQLite store:
//!
//! - `session.json`: the homeserver, user id, device id and access token of the login, so a
//!   restart restores the same device (and its encryption keys) instead of logging in again;
//! - `sync_token`: the `next_batch` of the last sync whose events are all stored in the inbox.
//!   This, not matrix-sdk's own token (which it saves before we have handled anything), is where
//!   the next sync starts, so a crash replays events (the inbox drops the duplicates) and never
//!   skips them;
//! - `undecryptable.json`: encrypted events that could not be decrypted yet, kept until their
//!   room key arrives, so moving the sync token past them loses nothing.
//!
//! Every file is written to a temporary name and renamed over the old one, with mode 0600.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The login to restore.
#[derive(Clone, Serialize, Deserialize)]
pub struct SavedSession {
    pub homeserver: String,
    pub user_id: String,
    pub device_id: String,
    pub access_token: String,
}

impl std::fmt::Debug for SavedSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SavedSession")
            .field("homeserver", &self.homeserver)
            .field("user_id", &self.user_id)
            .field("device_id", &self.device_id)
            .field("access_token", &"***")
            .finish()
    }
}

/// An encrypted event waiting for its room key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Undecryptable {
    pub room_id: String,
    pub event_id: String,
    /// The event as received (JSON), decrypted again when keys arrive.
    pub event: serde_json::Value,
    /// When it was first seen (Unix milliseconds).
    pub first_seen: i64,
}

/// The adapter's files under one directory.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        StateDir { dir: dir.into() }
    }

    /// matrix-sdk's SQLite state and crypto store.
    pub fn store(&self) -> PathBuf {
        self.dir.join("store")
    }

    pub fn create(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        restrict(&self.dir, 0o700)
    }

    pub fn session(&self) -> Option<SavedSession> {
        read_json(&self.dir.join("session.json"))
    }

    pub fn save_session(&self, s: &SavedSession) -> std::io::Result<()> {
        write_atomic(
            &self.dir.join("session.json"),
            serde_json::to_vec_pretty(s)?.as_slice(),
        )
    }

    /// Forget the login and the store that belongs to its device (a new login makes a new
    /// device, whose keys must not mix with the old one's).
    pub fn reset(&self) -> std::io::Result<()> {
        for f in ["session.json", "sync_token", "undecryptable.json"] {
            match std::fs::remove_file(self.dir.join(f)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        match std::fs::remove_dir_all(self.store()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    pub fn sync_token(&self) -> Option<String> {
        std::fs::read_to_string(self.dir.join("sync_token"))
            .ok()
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
    }

    pub fn save_sync_token(&self, token: &str) -> std::io::Result<()> {
        write_atomic(&self.dir.join("sync_token"), token.as_bytes())
    }

    pub fn undecryptable(&self) -> Vec<Undecryptable> {
        read_json(&self.dir.join("undecryptable.json")).unwrap_or_default()
    }

    pub fn save_undecryptable(&self, list: &[Undecryptable]) -> std::io::Result<()> {
        write_atomic(
            &self.dir.join("undecryptable.json"),
            serde_json::to_vec(list)?.as_slice(),
        )
    }
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    let bytes = std::fs::read(path).ok()?;
    match serde_json::from_slice(&bytes) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "matrix: ignoring an unreadable state file");
            None
        }
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        restrict(&tmp, 0o600)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

#[cfg(unix)]
fn restrict(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn restrict(_: &Path, _: u32) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_round_trip_and_reset_forgets_them() {
        let tmp = std::env::temp_dir().join(format!("hermes-matrix-state-{}", std::process::id()));
        let dir = StateDir::new(&tmp);
        dir.create().unwrap();
        assert!(dir.session().is_none() && dir.sync_token().is_none());
        let s = SavedSession {
            homeserver: "http://127.0.0.1:1".into(),
            user_id: "@bot:localhost".into(),
            device_id: "DEV".into(),
            access_token: "secret-token".into(),
        };
        dir.save_session(&s).unwrap();
        dir.save_sync_token("s72_1").unwrap();
        let u = Undecryptable {
            room_id: "!r:localhost".into(),
            event_id: "$e".into(),
            event: serde_json::json!({"type": "m.room.encrypted"}),
            first_seen: 1,
        };
        dir.save_undecryptable(std::slice::from_ref(&u)).unwrap();
        assert_eq!(dir.session().unwrap().device_id, "DEV");
        assert_eq!(dir.sync_token().as_deref(), Some("s72_1"));
        assert_eq!(dir.undecryptable(), vec![u]);
        assert!(!format!("{:?}", dir.session().unwrap()).contains("secret-token"));
        dir.reset().unwrap();
        assert!(dir.session().is_none() && dir.sync_token().is_none());
        assert!(dir.undecryptable().is_empty());
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
