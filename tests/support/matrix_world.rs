//! A daemon with Matrix alone, against the real Synapse that `.ci/synapse` starts on 127.0.0.1,
//! and people (Alice, Bob) as real matrix-sdk clients with their own SQLite stores, so they can
//! encrypt and read the bot's encrypted answers.
//!
//! Each world registers its own fresh users (bot, alice, bob, mallory) through the open
//! registration API, so tests run in parallel on one Synapse without seeing each other.
//!
//! Locally: `.ci/synapse` (installs Synapse from PyPI into a venv on first use), then
//! `cargo nextest run --test matrix_conversation --test matrix_delivery`.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
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

use crate::support::daemon::{Daemon, World};

/// Where `.ci/synapse` writes its settings.
pub const ENV_FILE: &str = "/tmp/hermes-synapse/env";

/// A running Synapse.
#[derive(Debug, Clone)]
pub struct Synapse {
    pub url: String,
    pub port: u16,
    pub data: PathBuf,
    /// `.ci/synapse`, to start a private instance.
    pub script: PathBuf,
}

impl Synapse {
    /// The shared instance; panics with instructions when it is not running.
    pub fn get() -> Synapse {
        let path = std::env::var("MATRIX_TEST_ENV").unwrap_or_else(|_| ENV_FILE.to_owned());
        let s = Synapse::from_env_file(&path);
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", s.port)).is_ok(),
            "Synapse is not answering on 127.0.0.1:{}: run `.ci/synapse` (.ci/run does it)",
            s.port
        );
        s
    }

    fn from_env_file(path: &str) -> Synapse {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
            panic!(
                "Synapse not running ({path}: {e}): start it with `.ci/synapse` (installs it into a venv on first use; .ci/run does it)"
            )
        });
        let vars: HashMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
        Synapse {
            url: vars["MATRIX_TEST_HOMESERVER"].to_owned(),
            port: vars["MATRIX_TEST_PORT"].parse().expect("port"),
            data: PathBuf::from(vars["MATRIX_TEST_DATA"]),
            script: PathBuf::from(vars["MATRIX_TEST_SCRIPT"]),
        }
    }

    /// Start a private Synapse in `data` on `port` (or restart it, keeping its database).
    pub fn start_private(script: &std::path::Path, data: &std::path::Path, port: u16) -> Synapse {
        let out = std::process::Command::new(script)
            .arg("start")
            .arg(data)
            .arg(port.to_string())
            .output()
            .expect("run .ci/synapse");
        assert!(
            out.status.success(),
            ".ci/synapse start failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Synapse::from_env_file(&data.join("env").display().to_string())
    }

    /// Stop a private Synapse started with [`start_private`](Self::start_private).
    pub fn stop_private(&self) {
        let _ = std::process::Command::new(&self.script)
            .arg("stop")
            .arg(&self.data)
            .output();
    }

    /// Register a fresh user; returns its full user id (password: `secret-pw`).
    pub async fn register(&self, localpart: &str) -> OwnedUserId {
        let http = reqwest::Client::new();
        let r = http
            .post(format!("{}/_matrix/client/v3/register", self.url))
            .json(&serde_json::json!({
                "username": localpart,
                "password": PASSWORD,
                "auth": {"type": "m.login.dummy"},
                "inhibit_login": true,
            }))
            .send()
            .await
            .expect("register");
        let status = r.status();
        let body: Value = r.json().await.unwrap_or_default();
        assert!(status.is_success(), "register {localpart}: {status} {body}");
        body["user_id"]
            .as_str()
            .expect("user_id")
            .try_into()
            .expect("user id")
    }
}

pub const PASSWORD: &str = "secret-pw";

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
        let deadline = Instant::now() + timeout;
        loop {
            let seen = self.seen_from(room, sender);
            if seen.len() >= n {
                return seen;
            }
            assert!(
                Instant::now() < deadline,
                "saw {} message(s) from {sender}, expected {n}: {seen:?}\ndaemon logs:\n{}",
                seen.len(),
                logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Person {
    fn drop(&mut self) {
        self.sync.abort();
    }
}

/// A world whose daemon talks to Matrix only.
pub struct MatrixWorld {
    pub w: World,
    pub synapse: Synapse,
    pub bot: OwnedUserId,
    pub alice: OwnedUserId,
    pub bob: OwnedUserId,
    /// Not on the allowlist.
    pub mallory: OwnedUserId,
}

pub fn unique(tag: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        % 1_000_000_000;
    format!(
        "{tag}{}x{t}x{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

impl MatrixWorld {
    pub async fn new(config: &str) -> MatrixWorld {
        Self::on(Synapse::get(), config).await
    }

    /// A world on a given Synapse (a private one, for tests that restart it).
    pub async fn on(synapse: Synapse, config: &str) -> MatrixWorld {
        let mut w = World::new(config).await;
        let bot = synapse.register(&unique("bot")).await;
        let alice = synapse.register(&unique("alice")).await;
        let bob = synapse.register(&unique("bob")).await;
        let mallory = synapse.register(&unique("mallory")).await;
        w.unset_env("TELEGRAM_BOT_TOKEN");
        for (k, v) in [
            ("MATRIX_HOMESERVER", synapse.url.clone()),
            ("MATRIX_USER_ID", bot.to_string()),
            ("MATRIX_PASSWORD", PASSWORD.to_owned()),
            ("MATRIX_ALLOWED_USERS", format!("{alice},{bob}")),
        ] {
            w.set_env(k, &v);
        }
        MatrixWorld {
            w,
            synapse,
            bot,
            alice,
            bob,
            mallory,
        }
    }

    pub fn connected_count(&self) -> usize {
        count_in_logs(self.w.home.path(), "matrix: sync connected")
    }

    /// Start the daemon and wait until its first sync is through.
    pub async fn start(&mut self) -> Daemon {
        let before = self.connected_count();
        let home = self.w.home.path().to_path_buf();
        self.w
            .start_when("a Matrix sync", move || {
                count_in_logs(&home, "matrix: sync connected") > before
            })
            .await
    }

    /// Wait until the daemon logs another successful sync after an outage.
    pub async fn wait_connected(&self, before: usize, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.connected_count() <= before {
            assert!(
                Instant::now() < deadline,
                "no new Matrix sync; logs:\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Every daemon log of this world, concatenated.
    pub fn logs(&self) -> String {
        let mut names: Vec<_> = std::fs::read_dir(self.w.home.path())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("daemon-"))
            })
            .collect();
        names.sort();
        names
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n---- restart ----\n")
    }

    pub async fn person(&self, id: &UserId) -> Person {
        Person::login(&self.synapse, id).await
    }
}

pub fn count_in_logs(home: &std::path::Path, needle: &str) -> usize {
    std::fs::read_dir(home)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("daemon-"))
        .map(|e| {
            std::fs::read_to_string(e.path())
                .unwrap_or_default()
                .matches(needle)
                .count()
        })
        .sum()
}
