//! Matrix adapter for hermes, on matrix-sdk with end-to-end encryption and its SQLite store.
//!
//! Receiving is a `/sync` loop driven here (`Client::sync_once`) rather than matrix-sdk's
//! `sync()` with event handlers, so that the sync token — Matrix's acknowledgement — moves past
//! a batch only after every message in it is stored in the inbox (or, when it cannot be
//! decrypted yet, saved for a later attempt). The token lives in our own file (see [`state`]);
//! matrix-sdk saves its own before any handler ran, so it is never used. A crash replays the last
//! batch, and the inbox drops what it already has (unique on the event id).
//!
//! The login is kept across restarts: the device id and access token are saved beside the
//! store, so the bot stays one device with one set of encryption keys. Encrypted rooms work like
//! any other: matrix-sdk decrypts during the sync, shares our room keys when we send, and events
//! whose key has not arrived yet are kept and decrypted again after later syncs.
//!
//! The homeserver URL is configurable (`matrix.homeserver`); plain `http://` works for loopback.

mod format;
mod inbound;
mod outbound;
pub mod state;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hermes_adapter::{
    Adapter, AdapterError, Attachment, Capabilities, ChatId, InboundSink, LengthUnit, Outbound,
    Platform, SendError, SentId, ThreadId,
};
use matrix_sdk::authentication::matrix::MatrixSession;
use matrix_sdk::config::{RequestConfig, SyncSettings, SyncToken};
use matrix_sdk::deserialized_responses::{TimelineEvent, TimelineEventKind};
use matrix_sdk::media::{MediaFormat, MediaRequestParameters};
use matrix_sdk::ruma::api::client::filter::{FilterDefinition, RoomEventFilter, RoomFilter};
use matrix_sdk::ruma::api::client::sync::sync_events;
use matrix_sdk::ruma::events::room::encrypted::OriginalSyncRoomEncryptedEvent;
use matrix_sdk::ruma::events::room::message::SyncRoomMessageEvent;
use matrix_sdk::ruma::events::{AnySyncMessageLikeEvent, AnySyncTimelineEvent};
use matrix_sdk::ruma::serde::Raw;
use matrix_sdk::ruma::{OwnedRoomId, OwnedUserId, RoomId, UInt};
use matrix_sdk::{Client, Room, RoomState, SessionMeta, SessionTokens};
use tokio::sync::{Mutex, OnceCell};
use tokio_util::sync::CancellationToken;

use state::{SavedSession, StateDir, Undecryptable};

/// Matrix clients accept far more, but long events are slow to render; reference gateways
/// split at about 16000 characters.
pub const MAX_MESSAGE_LEN: usize = 16_000;

/// Most encrypted events kept waiting for their keys; the oldest are given up (and logged).
const MAX_UNDECRYPTABLE: usize = 500;

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
    settings: MatrixSettings,
    state: StateDir,
    client: OnceCell<Client>,
    /// Encrypted events waiting for keys (mirrors `undecryptable.json`).
    pending: Mutex<Vec<Undecryptable>>,
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

    fn homeserver(&self) -> String {
        self.settings
            .homeserver
            .as_str()
            .trim_end_matches('/')
            .to_owned()
    }

    /// The logged-in client: the saved session restored, or a new login saved.
    async fn client(&self) -> Result<&Client, AdapterError> {
        self.client.get_or_try_init(|| self.connect()).await
    }

    async fn connect(&self) -> Result<Client, AdapterError> {
        let io = |e: std::io::Error| {
            AdapterError::Fatal(format!(
                "matrix state directory {}: {e}",
                self.settings.state_dir.display()
            ))
        };
        self.state.create().map_err(io)?;
        let hs = self.homeserver();
        let saved = self
            .state
            .session()
            .filter(|s| s.homeserver == hs && s.user_id == self.settings.user_id);
        if saved.is_none() {
            // A new login is a new device: the old device's store must not be reused.
            self.state.reset().map_err(io)?;
        }
        let client = self.build_client().await?;
        let session = match saved {
            Some(s) => {
                tracing::info!(user = %s.user_id, device = %s.device_id, "matrix: session restored");
                s
            }
            None => {
                let s = self.login(&client).await?;
                tracing::info!(user = %s.user_id, device = %s.device_id, "matrix: new login, new device");
                s
            }
        };
        let restore = MatrixSession {
            meta: SessionMeta {
                user_id: session.user_id.as_str().try_into().map_err(|e| {
                    AdapterError::Fatal(format!("matrix user id `{}`: {e}", session.user_id))
                })?,
                device_id: session.device_id.as_str().into(),
            },
            tokens: SessionTokens {
                access_token: session.access_token.clone(),
                refresh_token: None,
            },
        };
        if client.session_meta().is_none() {
            client
                .restore_session(restore)
                .await
                .map_err(|e| AdapterError::Transient(format!("matrix: restoring the session: {e}")))?;
        }
        Ok(client)
    }

    async fn build_client(&self) -> Result<Client, AdapterError> {
        Client::builder()
            .homeserver_url(self.homeserver())
            .sqlite_store(self.state.store(), None)
            .request_config(
                RequestConfig::new()
                    .timeout(Duration::from_secs(30))
                    .retry_limit(2),
            )
            .build()
            .await
            .map_err(|e| AdapterError::Transient(format!("matrix client: {e}")))
    }

    /// Log in with the configured credentials and save the session.
    async fn login(&self, client: &Client) -> Result<SavedSession, AdapterError> {
        let session = match &self.settings.credentials {
            Credentials::Password(password) => {
                let r = client
                    .matrix_auth()
                    .login_username(&self.settings.user_id, password)
                    .initial_device_display_name(&self.settings.device_name)
                    .send()
                    .await
                    .map_err(|e| login_error("login", &e))?;
                SavedSession {
                    homeserver: self.homeserver(),
                    user_id: self.settings.user_id.clone(),
                    device_id: r.device_id.to_string(),
                    access_token: r.access_token,
                }
            }
            Credentials::AccessToken(token) => {
                let (user, device) = whoami(&self.homeserver(), token).await?;
                let device = device.ok_or_else(|| {
                    AdapterError::Unauthorized(
                        "this access token has no device; use MATRIX_PASSWORD, or a token from a login".into(),
                    )
                })?;
                if user != self.settings.user_id {
                    return Err(AdapterError::Unauthorized(format!(
                        "the access token belongs to {user}, not MATRIX_USER_ID {}",
                        self.settings.user_id
                    )));
                }
                SavedSession {
                    homeserver: self.homeserver(),
                    user_id: user,
                    device_id: device,
                    access_token: token.clone(),
                }
            }
        };
        self.state.save_session(&session).map_err(|e| {
            AdapterError::Fatal(format!("matrix: saving the session: {e}"))
        })?;
        Ok(session)
    }

    fn me(client: &Client) -> Result<OwnedUserId, AdapterError> {
        client
            .user_id()
            .map(ToOwned::to_owned)
            .ok_or_else(|| AdapterError::Fatal("matrix: no user id after login".into()))
    }

    fn may_invite(&self, inviter: &str) -> bool {
        self.settings
            .allowed_inviters
            .iter()
            .any(|a| a == "*" || a.eq_ignore_ascii_case(inviter))
    }

    /// Join rooms we are invited to by allowed users; leave the others' invitations alone.
    async fn handle_invites(&self, client: &Client) {
        for room in client.invited_rooms() {
            let Ok(invite) = room.invite_details().await else {
                continue;
            };
            let inviter = invite.inviter_id.to_string();
            if !self.may_invite(&inviter) {
                tracing::debug!(room = %room.room_id(), %inviter, "matrix: ignoring an invite from a user not on the allowlist");
                continue;
            }
            match room.join().await {
                Ok(()) => tracing::info!(room = %room.room_id(), %inviter, "matrix: joined on invite"),
                Err(e) => tracing::warn!(room = %room.room_id(), error = %e, "matrix: joining failed; retrying after the next sync"),
            }
        }
    }

    /// Deliver one timeline event. `Err`: the inbox is down; the batch must not be acknowledged.
    async fn handle_event(
        &self,
        client: &Client,
        room: &Room,
        event: TimelineEvent,
        sink: &dyn InboundSink,
        pending: &mut Vec<Undecryptable>,
    ) -> Result<(), AdapterError> {
        let raw = match &event.kind {
            TimelineEventKind::UnableToDecrypt { event: raw, utd_info } => {
                let id = event.event_id().map(|e| e.to_string()).unwrap_or_default();
                if pending.iter().any(|p| p.event_id == id) {
                    return Ok(());
                }
                tracing::warn!(room = %room.room_id(), event = %id, reason = ?utd_info.reason, "matrix: cannot decrypt an event yet; keeping it until its room key arrives");
                pending.push(Undecryptable {
                    room_id: room.room_id().to_string(),
                    event_id: id,
                    event: serde_json::from_str(raw.json().get()).unwrap_or_default(),
                    first_seen: hermes_adapter::now_millis(),
                });
                return Ok(());
            }
            _ => event.raw(),
        };
        let Ok(AnySyncTimelineEvent::MessageLike(AnySyncMessageLikeEvent::RoomMessage(
            SyncRoomMessageEvent::Original(ev),
        ))) = raw.deserialize()
        else {
            return Ok(());
        };
        let me = Self::me(client)?;
        if ev.sender == me {
            return Ok(());
        }
        let direct = room.active_members_count() <= 2;
        let my_name = room
            .get_member_no_sync(&me)
            .await
            .ok()
            .flatten()
            .and_then(|m| m.display_name().map(str::to_owned));
        let sender_name = room
            .get_member_no_sync(&ev.sender)
            .await
            .ok()
            .flatten()
            .and_then(|m| m.display_name().map(str::to_owned));
        let replied_to_bot = match inbound::replied_event(&ev) {
            Some(id) => room
                .load_or_fetch_event(id, None)
                .await
                .ok()
                .and_then(|e| e.sender())
                .is_some_and(|s| s == me),
            None => false,
        };
        let ctx = inbound::RoomContext {
            room_id: room.room_id().as_str(),
            direct,
            title: room.name(),
            me: &me,
            my_name: my_name.as_deref(),
            sender_name,
        };
        let Some(msg) = inbound::convert(&ev, &ctx, replied_to_bot) else {
            return Ok(());
        };
        sink.deliver(msg).await.map_err(|e| {
            AdapterError::Transient(format!(
                "inbox unavailable, not acknowledging Matrix event {}: {e}",
                ev.event_id
            ))
        })?;
        Ok(())
    }

    /// Try the waiting encrypted events again (their keys may have arrived in this sync).
    async fn retry_undecryptable(
        &self,
        client: &Client,
        sink: &dyn InboundSink,
        pending: &mut Vec<Undecryptable>,
    ) -> Result<(), AdapterError> {
        let mut still = Vec::new();
        let mut waiting = std::mem::take(pending).into_iter();
        while let Some(p) = waiting.next() {
            let room = RoomId::parse(&p.room_id)
                .ok()
                .and_then(|id| client.get_room(&id));
            let Some(room) = room else {
                still.push(p);
                continue;
            };
            let raw: Raw<OriginalSyncRoomEncryptedEvent> =
                match Raw::from_json_string(p.event.to_string()) {
                    Ok(r) => r,
                    Err(_) => continue,
                };
            match room.decrypt_event(&raw, None).await {
                Ok(event) if !event.kind.is_utd() => {
                    tracing::info!(room = %p.room_id, event = %p.event_id, "matrix: decrypted an event once its key arrived");
                    let mut none = Vec::new();
                    if let Err(e) = self
                        .handle_event(client, &room, event, sink, &mut none)
                        .await
                    {
                        still.push(p);
                        still.extend(waiting);
                        *pending = still;
                        return Err(e);
                    }
                }
                _ => still.push(p),
            }
        }
        if still.len() > MAX_UNDECRYPTABLE {
            let drop = still.len() - MAX_UNDECRYPTABLE;
            for p in still.drain(..drop) {
                tracing::error!(room = %p.room_id, event = %p.event_id, "matrix: giving up on an event whose key never arrived");
            }
        }
        *pending = still;
        Ok(())
    }

    fn room(&self, client: &Client, chat: &ChatId) -> Result<Room, SendError> {
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

    async fn send_client(&self) -> Result<&Client, SendError> {
        self.client().await.map_err(|e| match e {
            AdapterError::Transient(m) => SendError::Transient(m),
            other => SendError::Permanent(other.to_string()),
        })
    }
}

/// The sync filter: enough timeline per room that a short outage needs no back-pagination.
fn sync_filter() -> sync_events::v3::Filter {
    let mut timeline = RoomEventFilter::default();
    timeline.limit = Some(UInt::from(100u32));
    let mut room = RoomFilter::default();
    room.timeline = timeline;
    let mut def = FilterDefinition::default();
    def.room = room;
    sync_events::v3::Filter::FilterDefinition(def)
}

/// `GET /account/whoami` with `token`: the user id and device id it belongs to.
async fn whoami(homeserver: &str, token: &str) -> Result<(String, Option<String>), AdapterError> {
    let r = http()?
        .get(format!("{homeserver}/_matrix/client/v3/account/whoami"))
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| AdapterError::Transient(format!("matrix whoami: {}", e.without_url())))?;
    let status = r.status();
    let body: serde_json::Value = r.json().await.unwrap_or_default();
    if status.as_u16() == 401 || status.as_u16() == 403 {
        return Err(AdapterError::Unauthorized(format!(
            "matrix access token rejected: {}",
            body["errcode"].as_str().unwrap_or("")
        )));
    }
    if !status.is_success() {
        return Err(AdapterError::Transient(format!("matrix whoami: HTTP {status}")));
    }
    let user = body["user_id"].as_str().unwrap_or_default().to_owned();
    Ok((user, body["device_id"].as_str().map(str::to_owned)))
}

/// `POST /login` with a password; returns the access token.
async fn password_login(homeserver: &str, user: &str, password: &str) -> Result<String, AdapterError> {
    let body = serde_json::json!({
        "type": "m.login.password",
        "identifier": {"type": "m.id.user", "user": user},
        "password": password,
        "initial_device_display_name": "hermes doctor",
    });
    let r = http()?
        .post(format!("{homeserver}/_matrix/client/v3/login"))
        .json(&body)
        .send()
        .await
        .map_err(|e| AdapterError::Transient(format!("matrix login: {}", e.without_url())))?;
    let status = r.status();
    let body: serde_json::Value = r.json().await.unwrap_or_default();
    match body["access_token"].as_str() {
        Some(t) if status.is_success() => Ok(t.to_owned()),
        _ if matches!(status.as_u16(), 401 | 403) => Err(AdapterError::Unauthorized(format!(
            "matrix login as {user} refused: {}",
            body["errcode"].as_str().unwrap_or("")
        ))),
        _ => Err(AdapterError::Transient(format!("matrix login: HTTP {status}"))),
    }
}

/// `POST /logout`: ends the session and deletes its device.
async fn logout(homeserver: &str, token: &str) {
    if let Ok(http) = http() {
        let _ = http
            .post(format!("{homeserver}/_matrix/client/v3/logout"))
            .bearer_auth(token)
            .json(&serde_json::json!({}))
            .send()
            .await;
    }
}

fn http() -> Result<reqwest::Client, AdapterError> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .map_err(|e| AdapterError::Fatal(format!("http client: {e}")))
}

fn login_error(what: &str, e: &matrix_sdk::Error) -> AdapterError {
    match e.as_client_api_error().map(|a| a.status_code.as_u16()) {
        Some(401 | 403) => AdapterError::Unauthorized(format!("matrix {what}: {e}")),
        _ => AdapterError::Transient(format!("matrix {what}: {e}")),
    }
}

fn sync_error(e: &matrix_sdk::Error) -> AdapterError {
    match e.client_api_error_kind() {
        Some(matrix_sdk::ruma::api::error::ErrorKind::UnknownToken(_)) => {
            AdapterError::Unauthorized(format!(
                "the saved Matrix access token was revoked ({e}); delete the matrix/ state directory to log in again"
            ))
        }
        _ => AdapterError::Transient(format!("matrix sync: {e}")),
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
        }
    }

    async fn run(
        &self,
        sink: Arc<dyn InboundSink>,
        shutdown: CancellationToken,
    ) -> Result<(), AdapterError> {
        let client = tokio::select! {
            r = self.client() => r?,
            _ = shutdown.cancelled() => return Ok(()),
        };
        let mut token = self.state.sync_token();
        let mut backoff = Duration::from_millis(500);
        let mut connected = false;
        loop {
            let first = token.is_none();
            let settings = SyncSettings::new()
                .filter(sync_filter())
                .timeout(if first || !connected {
                    Duration::ZERO
                } else {
                    self.settings.sync_timeout
                })
                .token(match &token {
                    Some(t) => SyncToken::Specific(t.clone()),
                    None => SyncToken::NoToken,
                });
            let synced = tokio::select! {
                r = client.sync_once(settings) => r,
                _ = shutdown.cancelled() => return Ok(()),
            };
            let response = match synced {
                Ok(r) => r,
                Err(e) => {
                    let err = sync_error(&e);
                    if matches!(err, AdapterError::Unauthorized(_)) {
                        return Err(err);
                    }
                    tracing::warn!(error = %err, retry_in = ?backoff, "matrix: sync failed");
                    sink.disconnected(&err.to_string());
                    connected = false;
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = shutdown.cancelled() => return Ok(()),
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(15));
                    continue;
                }
            };
            if !connected {
                tracing::info!("matrix: sync connected");
                connected = true;
            }
            backoff = Duration::from_millis(500);
            sink.heartbeat();
            self.handle_invites(client).await;
            let mut pending = self.pending.lock().await;
            let before = pending.clone();
            if first {
                let skipped: usize = response
                    .rooms
                    .joined
                    .values()
                    .map(|r| r.timeline.events.len())
                    .sum();
                tracing::info!(skipped, "matrix: first sync; earlier room history is not answered");
            } else {
                for (room_id, update) in response.rooms.joined {
                    let Some(room) = client.get_room(&room_id) else {
                        continue;
                    };
                    if update.timeline.limited {
                        tracing::warn!(room = %room_id, "matrix: more than 100 events arrived in one room since the last sync; older ones are not answered");
                    }
                    for event in update.timeline.events {
                        self.handle_event(client, &room, event, sink.as_ref(), &mut pending)
                            .await?;
                    }
                }
            }
            if !pending.is_empty() {
                self.retry_undecryptable(client, sink.as_ref(), &mut pending)
                    .await?;
            }
            if *pending != before {
                if let Err(e) = self.state.save_undecryptable(&pending) {
                    return Err(AdapterError::Fatal(format!(
                        "matrix: saving undecryptable events: {e}"
                    )));
                }
                sink.attention(&if pending.is_empty() {
                    "every encrypted message decrypted".to_owned()
                } else {
                    format!(
                        "{} encrypted message(s) waiting for their room keys",
                        pending.len()
                    )
                });
            }
            drop(pending);
            self.state
                .save_sync_token(&response.next_batch)
                .map_err(|e| AdapterError::Fatal(format!("matrix: saving the sync token: {e}")))?;
            token = Some(response.next_batch);
        }
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
        let content = outbound::content(out);
        // The idempotency key as transaction id: the homeserver drops a retried send it has.
        let txn: matrix_sdk::ruma::OwnedTransactionId = out.idempotency_key.as_str().into();
        let r = room
            .send(content)
            .with_transaction_id(txn)
            .await
            .map_err(|e| outbound::classify(&e))?;
        Ok(SentId(r.response.event_id.to_string()))
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
