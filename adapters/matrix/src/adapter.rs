//! The adapter itself (built with the default `sdk` feature): the settings, the login kept across
//! restarts, and the [`Adapter`] implementation on matrix-sdk's client.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hermes_adapter::{
    Adapter, AdapterError, Attachment, Capabilities, ChatId, InboundSink, LengthUnit, Outbound,
    Platform, SendError, SentId, ThreadId,
};
use matrix_sdk::media::{MediaFormat, MediaRequestParameters};
use matrix_sdk::ruma::{OwnedRoomId, OwnedUserId};
use matrix_sdk::{Client, Room, RoomState};
use tokio::sync::{Mutex, OnceCell};
use tokio_util::sync::CancellationToken;

use crate::login::{logout, password_login, whoami};
use crate::outbound;
use crate::state::{StateDir, Undecryptable};

/// Matrix clients accept far more, but long events are slow to render; reference gateways
/// split at about 16000 characters.
pub const MAX_MESSAGE_LEN: usize = 16_000;

/// How the bot logs in.
#[derive(Clone)]
pub enum Credentials {
    Password(String),
    AccessToken(String),
}

/// How to reach the homeserver and whom to serve.
#[derive(Clone)]
pub struct MatrixSettings {
    /// Client-server API base, e.g. `https://matrix.example.org`.
    pub homeserver: url::Url,
    /// The bot's user id (`@hermes:example.org`); with a password, the login name.
    pub user_id: String,
    pub credentials: Credentials,
    /// Users whose invites are accepted (full user ids); `*` accepts everybody's.
    pub allowed_inviters: Vec<String>,
    /// Where the session, the sync token and matrix-sdk's store live (`$HERMES_HOME/matrix`).
    pub state_dir: PathBuf,
    /// Long-poll timeout of one `/sync`.
    pub sync_timeout: Duration,
    /// The device's name, shown to users in their device lists.
    pub device_name: String,
}

impl std::fmt::Debug for MatrixSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatrixSettings")
            .field("homeserver", &self.homeserver.as_str())
            .field("user_id", &self.user_id)
            .field("credentials", &"***")
            .field("state_dir", &self.state_dir)
            .finish_non_exhaustive()
    }
}

/// The Matrix adapter.
pub struct MatrixAdapter {
    pub(crate) settings: MatrixSettings,
    pub(crate) state: StateDir,
    pub(crate) client: OnceCell<Client>,
    /// Encrypted events waiting for keys (mirrors `undecryptable.json`).
    pub(crate) pending: Mutex<Vec<Undecryptable>>,
}

impl MatrixAdapter {
    pub fn new(settings: MatrixSettings) -> Self {
        let state = StateDir::new(&settings.state_dir);
        MatrixAdapter {
            pending: Mutex::new(state.undecryptable()),
            state,
            settings,
            client: OnceCell::new(),
        }
    }

    pub(crate) fn homeserver(&self) -> String {
        self.settings
            .homeserver
            .as_str()
            .trim_end_matches('/')
            .to_owned()
    }

    pub(crate) fn me(client: &Client) -> Result<OwnedUserId, AdapterError> {
        client
            .user_id()
            .map(ToOwned::to_owned)
            .ok_or_else(|| AdapterError::Fatal("matrix: no user id after login".into()))
    }

    pub(crate) fn may_invite(&self, inviter: &str) -> bool {
        self.settings
            .allowed_inviters
            .iter()
            .any(|a| a == "*" || a.eq_ignore_ascii_case(inviter))
    }

    pub(crate) fn room(&self, client: &Client, chat: &ChatId) -> Result<Room, SendError> {
        let id: OwnedRoomId = chat
            .as_str()
            .try_into()
            .map_err(|_| SendError::NotFound(format!("`{chat}` is not a Matrix room id")))?;
        match client.get_room(&id) {
            Some(r) if r.state() == RoomState::Joined => Ok(r),
            Some(_) => Err(SendError::Forbidden(format!("not joined to {chat}"))),
            None => Err(SendError::NotFound(format!("unknown room {chat}"))),
        }
    }

    pub(crate) async fn send_client(&self) -> Result<&Client, SendError> {
        self.client().await.map_err(|e| match e {
            AdapterError::Transient(m) => SendError::Transient(m),
            other => SendError::Permanent(other.to_string()),
        })
    }
}

#[async_trait]
impl Adapter for MatrixAdapter {
    fn platform(&self) -> Platform {
        Platform::Matrix
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            max_message_len: MAX_MESSAGE_LEN,
            length_unit: LengthUnit::Chars,
            edit: true,
            typing: true,
            buttons: false,
            threads: true,
            attachments: true,
            free_edits: false,
        }
    }

    async fn run(
        &self,
        sink: Arc<dyn InboundSink>,
        shutdown: CancellationToken,
    ) -> Result<(), AdapterError> {
        self.listen(sink, shutdown).await
    }

    async fn send(&self, out: &Outbound) -> Result<SentId, SendError> {
        let client = self.send_client().await?;
        let room = self.room(client, &out.chat)?;
        if let Some(id) = &out.edit_of {
            let content = outbound::edit_content(id, &out.text)?;
            if room.send(content).await.is_ok() {
                return Ok(SentId(id.clone()));
            }
        }
        // A transaction id from the idempotency key: the homeserver drops a retried send it has.
        let txn = outbound::transaction_id(&out.idempotency_key);
        if let Some(file) = &out.file {
            return outbound::send_file(&room, out, file, txn).await.map(SentId);
        }
        let content = outbound::content(out);
        let r = room
            .send(content)
            .with_transaction_id(txn)
            .await
            .map_err(|e| outbound::classify(&e))?;
        Ok(SentId(r.response.event_id.to_string()))
    }

    fn max_upload_bytes(&self) -> u64 {
        outbound::MAX_UPLOAD_BYTES
    }

    async fn edit(&self, chat: &ChatId, id: &SentId, text: &str) -> Result<(), SendError> {
        let client = self.send_client().await?;
        let room = self.room(client, chat)?;
        let content = outbound::edit_content(&id.0, text)?;
        room.send(content)
            .await
            .map(|_| ())
            .map_err(|e| outbound::classify(&e))
    }

    async fn typing(&self, chat: &ChatId, _thread: Option<&ThreadId>) -> Result<(), SendError> {
        let client = self.send_client().await?;
        let room = self.room(client, chat)?;
        room.typing_notice(true)
            .await
            .map_err(|e| outbound::classify(&e))
    }

    async fn fetch_attachment(
        &self,
        attachment: &Attachment,
        max_bytes: u64,
    ) -> Result<Vec<u8>, SendError> {
        if attachment.size.is_some_and(|s| s > max_bytes) {
            return Err(SendError::TooLong);
        }
        let source = serde_json::from_str(&attachment.locator)
            .map_err(|e| SendError::Permanent(format!("bad attachment locator: {e}")))?;
        let client = self.send_client().await?;
        let request = MediaRequestParameters {
            source,
            format: MediaFormat::File,
        };
        let bytes = tokio::time::timeout(
            Duration::from_secs(120),
            client.media().get_media_content(&request, false),
        )
        .await
        .map_err(|_| SendError::Transient("download timed out".into()))?
        .map_err(|e| outbound::classify(&e))?;
        if bytes.len() as u64 > max_bytes {
            return Err(SendError::TooLong);
        }
        Ok(bytes)
    }

    async fn probe(&self) -> Result<String, AdapterError> {
        let hs = self.homeserver();
        let token = match (&self.state.session(), &self.settings.credentials) {
            (Some(s), _) if s.homeserver == hs && s.user_id == self.settings.user_id => {
                s.access_token.clone()
            }
            (_, Credentials::AccessToken(t)) => t.clone(),
            (_, Credentials::Password(password)) => {
                // Not logged in yet: check the password with a login whose device is removed
                // again right away (the gateway makes its own at its first start).
                let token = password_login(&hs, &self.settings.user_id, password).await?;
                let who = whoami(&hs, &token).await;
                logout(&hs, &token).await;
                let (user, _) = who?;
                return Ok(format!("{user} (password accepted; not logged in yet)"));
            }
        };
        let (user, device) = whoami(&hs, &token).await?;
        Ok(format!(
            "{user} (device {})",
            device.as_deref().unwrap_or("none")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_debug_hides_the_credentials() {
        let s = MatrixSettings {
            homeserver: "http://127.0.0.1:1".parse().unwrap(),
            user_id: "@bot:localhost".into(),
            credentials: Credentials::Password("hunter2".into()),
            allowed_inviters: vec![],
            state_dir: "/tmp/x".into(),
            sync_timeout: Duration::from_secs(30),
            device_name: "hermes".into(),
        };
        assert!(!format!("{s:?}").contains("hunter2"));
    }

    #[test]
    fn invites_follow_the_allowlist() {
        let mut s = MatrixSettings {
            homeserver: "http://127.0.0.1:1".parse().unwrap(),
            user_id: "@bot:localhost".into(),
            credentials: Credentials::AccessToken("t".into()),
            allowed_inviters: vec!["@alice:localhost".into()],
            state_dir: std::env::temp_dir().join("hermes-matrix-unused"),
            sync_timeout: Duration::from_secs(30),
            device_name: "hermes".into(),
        };
        let a = MatrixAdapter::new(s.clone());
        assert!(a.may_invite("@alice:localhost"));
        assert!(!a.may_invite("@mallory:localhost"));
        s.allowed_inviters = vec!["*".into()];
        assert!(MatrixAdapter::new(s).may_invite("@anyone:localhost"));
    }
}
