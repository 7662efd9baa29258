//! People on Matrix (Alice, Bob): real matrix-sdk clients with their own SQLite stores, so they
//! can encrypt and read the bot's encrypted answers, recording every room message they see.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use matrix_sdk::config::{RequestConfig, SyncSettings};
use matrix_sdk::ruma::api::client::room::create_room::v3::{Request as CreateRoom, RoomPreset};
use matrix_sdk::ruma::events::room::message::{
    OriginalSyncRoomMessageEvent, RoomMessageEventContent,
};
use matrix_sdk::ruma::{OwnedEventId, OwnedRoomId, OwnedUserId, UserId};
use matrix_sdk::{Client, Room};
use serde_json::Value;

use super::{PASSWORD, Synapse};
use crate::support::wait_for;

/// A person on Matrix: a logged-in client syncing in the background, recording every room
/// message it sees (decrypted where it could).
pub struct Person {
    pub client: Client,
    pub id: OwnedUserId,
    seen: Arc<Mutex<Vec<Seen>>>,
    sync: tokio::task::JoinHandle<()>,
    _store: tempfile::TempDir,
}

/// A room message a [`Person`] saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub room: OwnedRoomId,
    pub sender: OwnedUserId,
    pub event_id: OwnedEventId,
    /// The (decrypted) content as JSON.
    pub content: Value,
}

impl Seen {
    pub fn body(&self) -> &str {
        self.content["body"].as_str().unwrap_or_default()
    }
}

impl Person {
    pub async fn login(synapse: &Synapse, id: &UserId) -> Person {
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let store = tempfile::tempdir().expect("tempdir");
        let client = Client::builder()
            .homeserver_url(&synapse.url)
            .sqlite_store(store.path(), None)
            .request_config(RequestConfig::short_retry())
            .build()
            .await
            .expect("client");
        client
            .matrix_auth()
            .login_username(id, PASSWORD)
            .initial_device_display_name("test")
            .send()
            .await
            .expect("login");
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let sink = seen.clone();
        client.add_event_handler(move |ev: OriginalSyncRoomMessageEvent, room: Room| {
            let sink = sink.clone();
            async move {
                sink.lock().unwrap().push(Seen {
                    room: room.room_id().to_owned(),
                    sender: ev.sender.clone(),
                    event_id: ev.event_id.clone(),
                    content: serde_json::to_value(&ev.content).unwrap_or_default(),
                });
            }
        });
        // One sync before returning, so the device's keys are uploaded.
        client
            .sync_once(SyncSettings::default())
            .await
            .expect("first sync");
        let c = client.clone();
        let sync = tokio::spawn(async move {
            let settings = SyncSettings::default().timeout(Duration::from_secs(2));
            loop {
                if c.sync(settings.clone()).await.is_err() {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        });
        Person {
            client,
            id: id.to_owned(),
            seen,
            sync,
            _store: store,
        }
    }

    /// A direct chat with `other` (plain or end-to-end encrypted), `other` invited.
    pub async fn create_dm(&self, other: &UserId, encrypted: bool) -> Room {
        if encrypted {
            return self.client.create_dm(other).await.expect("create dm");
        }
        let mut req = CreateRoom::new();
        req.invite = vec![other.to_owned()];
        req.is_direct = true;
        req.preset = Some(RoomPreset::TrustedPrivateChat);
        self.client.create_room(req).await.expect("create room")
    }

    /// A group room with `invite` invited.
    pub async fn create_group(&self, invite: &[&UserId], name: &str) -> Room {
        let mut req = CreateRoom::new();
        req.invite = invite.iter().map(|u| (*u).to_owned()).collect();
        req.name = Some(name.to_owned());
        req.preset = Some(RoomPreset::PrivateChat);
        self.client.create_room(req).await.expect("create room")
    }

    /// Join a room this person was invited to.
    pub async fn join(&self, room: &Room) {
        self.client
            .join_room_by_id(room.room_id())
            .await
            .expect("join");
    }

    /// Wait until `user` has joined `room` (as this person's client sees it).
    pub async fn wait_joined(&self, room: &Room, user: &UserId, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let r = self.client.get_room(room.room_id()).expect("room");
            if let Ok(Some(m)) = r.get_member_no_sync(user).await
                && *m.membership() == matrix_sdk::ruma::events::room::member::MembershipState::Join
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{user} never joined {}",
                room.room_id()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Send a text message; returns its event id.
    pub async fn say(&self, room: &Room, text: &str) -> OwnedEventId {
        self.send(room, RoomMessageEventContent::text_plain(text))
            .await
    }

    pub async fn send(&self, room: &Room, content: RoomMessageEventContent) -> OwnedEventId {
        let room = self.client.get_room(room.room_id()).expect("room");
        room.send(content).await.expect("send").response.event_id
    }

    /// Every message seen in `room` from `sender`.
    pub fn seen_from(&self, room: &Room, sender: &UserId) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.room == room.room_id() && s.sender == sender)
            .cloned()
            .collect()
    }

    /// Wait until `n` messages from `sender` were seen in `room`; returns them.
    pub async fn wait_from(
        &self,
        room: &Room,
        sender: &UserId,
        n: usize,
        timeout: Duration,
        logs: impl Fn() -> String,
    ) -> Vec<Seen> {
        let check = || {
            let seen = self.seen_from(room, sender);
            (seen.len() >= n).then_some(seen)
        };
        let describe = || {
            let seen = self.seen_from(room, sender);
            let saw = seen.len();
            format!(
                "saw {saw} message(s) from {sender}: {seen:?}\ndaemon logs:\n{}",
                logs()
            )
        };
        wait_for(
            timeout,
            &format!("{n} message(s) from {sender}"),
            check,
            describe,
        )
        .await
    }
}

impl Drop for Person {
    fn drop(&mut self) {
        self.sync.abort();
    }
}
