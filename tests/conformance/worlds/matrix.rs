//! Matrix against the real Synapse: people are plain client-server API users (a hundred of
//! them cost nothing), each with a direct room the bot joined; what the bot said is read by a
//! second device of the bot's own account (one incremental sync over every room). The daemon
//! reaches Synapse through a proxy that can make its connection deaf.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::conformance::world::{Injected, Platform, Said};
use crate::matrix_support::{MatrixWorld, PASSWORD};
use crate::support::WAIT;
use crate::support::daemon::{Daemon, World, unique};
use crate::support::proxy::SilentProxy;

/// A Matrix account and its access token.
#[derive(Clone)]
struct Account {
    id: String,
    token: String,
}

/// What the bot's second device has read so far.
#[derive(Default)]
struct Reader {
    since: Option<String>,
    said: Vec<(i64, Said)>,
}

pub struct Matrix {
    mw: MatrixWorld,
    http: reqwest::Client,
    people: Vec<Account>,
    stranger: Account,
    /// Each person's direct room with the bot.
    dms: Vec<String>,
    /// A room of the bot and persons 0 and 1.
    group: String,
    /// The bot's own account on another device.
    reader: Account,
    read: tokio::sync::Mutex<Reader>,
    /// Rooms the bot is known to have joined.
    joined: Mutex<Vec<bool>>,
    proxy: SilentProxy,
    txn: AtomicU64,
}

impl Matrix {
    fn url(&self, path: &str) -> String {
        format!("{}/_matrix/client/v3{path}", self.mw.synapse.url)
    }

    async fn call(&self, who: &Account, method: reqwest::Method, path: &str, body: Value) -> Value {
        let r = self
            .http
            .request(method, self.url(path))
            .bearer_auth(&who.token)
            .json(&body)
            .send()
            .await
            .expect("synapse");
        let status = r.status();
        let v: Value = r.json().await.unwrap_or_default();
        assert!(status.is_success(), "{path}: {status} {v}");
        v
    }

    async fn create_room(&self, who: &Account, invite: &[&str], direct: bool) -> String {
        let body = json!({"preset": "private_chat", "is_direct": direct, "invite": invite});
        let v = self
            .call(who, reqwest::Method::POST, "/createRoom", body)
            .await;
        v["room_id"].as_str().expect("room id").to_owned()
    }

    async fn say(&self, who: &Account, room: &str, content: Value) {
        let txn = self.txn.fetch_add(1, Ordering::SeqCst);
        let path = format!("/rooms/{}/send/m.room.message/t{txn}", urlencode(room));
        self.call(who, reqwest::Method::PUT, &path, content).await;
    }

    async fn bot_joined(&self, who: &Account, room: &str) -> bool {
        let path = format!("/rooms/{}/joined_members", urlencode(room));
        let r = self
            .http
            .get(self.url(&path))
            .bearer_auth(&who.token)
            .send()
            .await;
        match r {
            Ok(r) => r.json::<Value>().await.unwrap_or_default()["joined"]
                .get(self.mw.bot.as_str())
                .is_some(),
            Err(_) => false,
        }
    }
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Register `localpart` and log it in.
async fn register(http: &reqwest::Client, base: &str, localpart: String) -> Account {
    let r = http
        .post(format!("{base}/_matrix/client/v3/register"))
        .json(&json!({"username": localpart, "password": PASSWORD,
                      "auth": {"type": "m.login.dummy"}}))
        .send()
        .await
        .expect("register");
    let v: Value = r.json().await.unwrap_or_default();
    Account {
        id: v["user_id"].as_str().expect("user id").to_owned(),
        token: v["access_token"].as_str().expect("token").to_owned(),
    }
}

/// Log in as `user` on a new device.
async fn login(http: &reqwest::Client, base: &str, user: &str) -> Account {
    let r = http
        .post(format!("{base}/_matrix/client/v3/login"))
        .json(&json!({"type": "m.login.password", "password": PASSWORD,
                      "identifier": {"type": "m.id.user", "user": user},
                      "initial_device_display_name": "conformance reader"}))
        .send()
        .await
        .expect("login");
    let v: Value = r.json().await.unwrap_or_default();
    Account {
        id: user.to_owned(),
        token: v["access_token"].as_str().expect("token").to_owned(),
    }
}

impl Platform for Matrix {
    const NAME: &'static str = "matrix";
    // Each send's transaction id is its outbox key: the homeserver drops a resend it has.
    const EXACTLY_ONCE: bool = true;
    const MAX_LEN: Option<usize> = Some(hermes_matrix::MAX_MESSAGE_LEN);
    // The sync long-poll is the rhythm: 3 s here, so 8 s of nothing is deafness.
    const DEAF_CONFIG: &'static str =
        "[gateway]\nlistener_silence_secs = 8\n[matrix]\nsync_timeout_secs = 3\n";

    async fn new(config: &str, people: usize) -> Self {
        let mut mw = MatrixWorld::new(config).await;
        let http = reqwest::Client::new();
        let base = mw.synapse.url.clone();
        let tag = unique("p");
        let accounts = futures_util::future::join_all(
            (0..people).map(|i| register(&http, &base, format!("{tag}x{i}"))),
        )
        .await;
        let stranger = register(&http, &base, format!("{tag}stranger")).await;
        let allowed: Vec<&str> = accounts.iter().map(|a| a.id.as_str()).collect();
        mw.w.set_env("MATRIX_ALLOWED_USERS", &allowed.join(","));
        let proxy = SilentProxy::start(mw.synapse.port).await;
        mw.w.set_env(
            "MATRIX_HOMESERVER",
            &format!("http://127.0.0.1:{}", proxy.port),
        );
        let reader = login(&http, &base, mw.bot.as_str()).await;
        let mut world = Matrix {
            mw,
            http,
            people: accounts,
            stranger,
            dms: Vec::new(),
            group: String::new(),
            reader,
            read: tokio::sync::Mutex::default(),
            joined: Mutex::default(),
            proxy,
            txn: AtomicU64::new(0),
        };
        let bot = world.mw.bot.to_string();
        let mut dms = Vec::new();
        for who in &world.people {
            dms.push(world.create_room(who, &[&bot], true).await);
        }
        let second = world.people.get(1).map(|a| a.id.clone());
        let mut invite = vec![bot.as_str()];
        invite.extend(second.as_deref());
        world.group = world.create_room(&world.people[0], &invite, false).await;
        if let Some(second) = world.people.get(1) {
            let path = format!("/rooms/{}/join", urlencode(&world.group));
            world
                .call(second, reqwest::Method::POST, &path, json!({}))
                .await;
        }
        *world.joined.lock().unwrap() = vec![false; dms.len() + 1];
        world.dms = dms;
        world
    }
    fn world(&self) -> &World {
        &self.mw.w
    }

    async fn start(&mut self) -> Daemon {
        let daemon = self.mw.start().await;
        // The first start joins the rooms it was invited to: wait for every one.
        let rooms: Vec<(usize, String)> = self
            .dms
            .iter()
            .cloned()
            .chain([self.group.clone()])
            .enumerate()
            .collect();
        for (i, room) in rooms {
            if self.joined.lock().unwrap()[i] {
                continue;
            }
            // A direct room's person, or for the group its creator.
            let owner = self.people.get(i).unwrap_or(&self.people[0]).clone();
            let deadline = std::time::Instant::now() + WAIT;
            while !self.bot_joined(&owner, &room).await {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the bot never joined {room}:\n{}",
                    daemon.log()
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            self.joined.lock().unwrap()[i] = true;
        }
        daemon
    }

    async fn dm(&self, who: usize, text: &str) {
        let body = json!({"msgtype": "m.text", "body": text});
        self.say(&self.people[who], &self.dms[who], body).await;
    }
    async fn stranger_dm(&self, text: &str) {
        // The bot does not join a stranger's room; the message stays unheard.
        let room = self
            .create_room(&self.stranger, &[self.mw.bot.as_str()], true)
            .await;
        let body = json!({"msgtype": "m.text", "body": text});
        self.say(&self.stranger, &room, body).await;
    }
    async fn group(&self, who: usize, text: &str, mention: bool) -> Injected {
        let bot = self.mw.bot.as_str();
        let body = if mention {
            json!({"msgtype": "m.text", "body": format!("{bot}: {text}"),
                   "m.mentions": {"user_ids": [bot]}})
        } else {
            json!({"msgtype": "m.text", "body": text})
        };
        self.say(&self.people[who], &self.group, body).await;
        Ok(())
    }
    async fn said(&self) -> Vec<Said> {
        let mut read = self.read.lock().await;
        let filter = json!({"room": {"timeline": {"limit": 1000, "senders": [self.mw.bot.as_str()],
                                                  "types": ["m.room.message"]},
                                     "state": {"types": []}, "ephemeral": {"types": []},
                                     "account_data": {"types": []}},
                            "presence": {"types": []}, "account_data": {"types": []}});
        let mut query = format!("/sync?timeout=0&filter={}", urlencode(&filter.to_string()));
        if let Some(since) = &read.since {
            query.push_str(&format!("&since={}", urlencode(since)));
        }
        let Ok(r) = self
            .http
            .get(self.url(&query))
            .bearer_auth(&self.reader.token)
            .send()
            .await
        else {
            return read.said.iter().map(|(_, s)| s.clone()).collect();
        };
        let v: Value = r.json().await.unwrap_or_default();
        if std::env::var("DEBUG_MATRIX_READER").is_ok() {
            eprintln!("READER {}", v["rooms"]["join"]);
        }
        if let Some(joined) = v["rooms"]["join"].as_object() {
            for (room, update) in joined {
                for e in update["timeline"]["events"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    read.said.push((
                        e["origin_server_ts"].as_i64().unwrap_or(0),
                        Said {
                            place: room.clone(),
                            text: e["content"]["body"].as_str().unwrap_or_default().to_owned(),
                            identity: e["event_id"].as_str().map(str::to_owned),
                        },
                    ));
                }
            }
        }
        if let Some(next) = v["next_batch"].as_str() {
            read.since = Some(next.to_owned());
        }
        read.said.sort_by_key(|(ts, _)| *ts);
        read.said.iter().map(|(_, s)| s.clone()).collect()
    }

    fn rate_limit_next_send(&self, _secs: u64) -> Injected {
        Err("a real homeserver cannot be told to rate-limit the next send")
    }
    fn reject_format_next_send(&self) -> Injected {
        Err("Matrix carries a plain body beside the HTML; nothing rejects its formatting")
    }
    fn go_silent(&self) -> Injected {
        self.proxy.go_silent();
        Ok(())
    }
}
