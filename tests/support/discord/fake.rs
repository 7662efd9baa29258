//! Fake Discord for integration tests: the gateway websocket v10 (HELLO, IDENTIFY -> READY,
//! HEARTBEAT/ACK, RESUME -> replay + RESUMED, INVALID_SESSION, sequence numbers) with control
//! calls to inject MESSAGE_CREATE / INTERACTION_CREATE, redeliver an event, and drop the
//! connection; the REST calls live in `api`.
//!
//! Shards as Discord has them: `set_shards(n)` makes IDENTIFY require `shard: [i, n]` (close 4011
//! without it, 4010 with another count); a server's events go to shard `(guild_id >> 22) % n`,
//! direct messages to shard 0; each shard has its own session.
//!
//! Deviations from the real service, on purpose: one session per shard; events
//! dispatched while no connection is live are kept for a RESUME (as Discord does) but not
//! delivered after a new IDENTIFY; `redeliver` exists only here; there is no zlib compression
//! (the bot asks for it in IDENTIFY, Discord then compresses only if the URL asks for it).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message as Ws, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::api::{
    self, APPLICATION_ID, BOT_ID, CHANNEL, GUILD, St, bot_user, lock, member, message, snowflake,
    text_channel, user,
};
use crate::support::chat::Buttons;
use crate::support::wait_for;

/// Heartbeat interval announced in HELLO. Short, so a dead socket is noticed quickly.
const HEARTBEAT_MS: u64 = 1500;

/// A failure injected into the next call of one REST operation.
#[derive(Clone, Debug)]
pub enum Fault {
    /// 429 with `retry_after` (seconds, fractional) in the body and the `X-RateLimit-*` headers.
    RateLimited(f64),
    /// That status with Discord's `{"message", "code"}` body.
    Status(u16, u64, String),
}

/// A message the bot posted (or, in `edits()`, the state after an edit).
#[derive(Clone, Debug)]
pub struct SentMessage {
    pub channel_id: u64,
    pub id: u64,
    pub content: String,
    /// `message_reference.message_id`: the message this one replies to.
    pub reference: Option<u64>,
    pub components: Value,
    pub allowed_mentions: Value,
    /// `(file name, size)` of each file uploaded with the message.
    pub files: Vec<(String, usize)>,
    pub at: Instant,
}

impl Buttons for SentMessage {
    /// `(label, custom_id)` of every button under the message.
    fn buttons(&self) -> Vec<(String, String)> {
        self.components
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|row| row["components"].as_array().cloned().unwrap_or_default())
            .map(|b| {
                (
                    b["label"].as_str().unwrap_or_default().to_owned(),
                    b["custom_id"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }
}

/// Every REST request received.
#[derive(Clone, Debug)]
pub struct Call {
    pub op: String,
    pub method: String,
    pub path: String,
    pub status: u16,
    pub at: Instant,
}

enum Out {
    Text(String),
    Close(u16),
    Kill,
    /// Keep the socket open but send and answer nothing more on it.
    Silent,
}

#[derive(Default)]
struct Slot {
    session: Option<Session>,
    conn: Option<mpsc::UnboundedSender<Out>>,
}

impl DiscordState {
    /// The shard events of server `guild` go to (`None`: a direct message, shard 0).
    fn shard_of(&self, guild: Option<u64>) -> usize {
        guild.map_or(0, |g| ((g >> 22) % self.shards.len() as u64) as usize)
    }
}

struct Session {
    id: String,
    seq: u64,
    /// Dispatches of this session, for replay on RESUME (bounded).
    log: VecDeque<(u64, String)>,
}

/// Shared state of the fake.
pub struct DiscordState {
    pub token: String,
    pub ws_url: String,
    pub counter: u64,
    pub channels: HashMap<u64, Value>,
    pub messages: HashMap<u64, Value>,
    /// `(channel, nonce)` → the message created with it (`enforce_nonce`).
    pub nonces: HashMap<(u64, String), u64>,
    pub sent: Vec<SentMessage>,
    pub edits: Vec<SentMessage>,
    pub typing: Vec<u64>,
    pub callbacks: Vec<(u64, u64)>,
    pub threads_created: Vec<(u64, u64, String)>,
    pub interaction_tokens: HashMap<u64, String>,
    pub calls: Vec<Call>,
    pub faults: HashMap<String, VecDeque<Fault>>,
    /// Per shard: its session, and its live connection (identified or resumed), if any.
    shards: Vec<Slot>,
    pub identifies: usize,
    pub resumes: usize,
    pub intents: u64,
    pub heartbeats: usize,
    /// Attachment bytes served under `/attachments/{name}` (the CDN).
    pub files: HashMap<String, Vec<u8>>,
}

/// Dispatch an event (op 0) in the current session of the shard that carries it (by its
/// `guild_id`): numbered, logged for RESUME, and sent if a connection is live.
pub(super) fn dispatch_to(st: &St, t: &str, d: Value) -> u64 {
    let guild = d["guild_id"].as_str().and_then(|g| g.parse().ok());
    let shard = lock(st).shard_of(guild);
    dispatch_on(st, shard, t, d)
}

/// Dispatch an event on shard `shard`.
fn dispatch_on(st: &St, shard: usize, t: &str, d: Value) -> u64 {
    let mut s = lock(st);
    let Some(slot) = s.shards.get_mut(shard) else {
        return 0;
    };
    let Some(session) = slot.session.as_mut() else {
        return 0;
    };
    session.seq += 1;
    let seq = session.seq;
    let text = json!({"op": 0, "t": t, "s": seq, "d": d}).to_string();
    session.log.push_back((seq, text.clone()));
    if session.log.len() > 1000 {
        session.log.pop_front();
    }
    if let Some(conn) = &slot.conn {
        let _ = conn.send(Out::Text(text));
    }
    seq
}

/// The fake Discord: REST and gateway on one port.
pub struct FakeDiscord {
    st: St,
    port: u16,
}

impl FakeDiscord {
    pub async fn start(token: &str) -> FakeDiscord {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let mut channels = HashMap::new();
        channels.insert(CHANNEL, text_channel(CHANNEL));
        let st: St = Arc::new(Mutex::new(DiscordState {
            token: token.to_owned(),
            ws_url: format!("ws://127.0.0.1:{port}/gateway"),
            counter: 0,
            channels,
            messages: HashMap::new(),
            nonces: HashMap::new(),
            sent: Vec::new(),
            edits: Vec::new(),
            typing: Vec::new(),
            callbacks: Vec::new(),
            threads_created: Vec::new(),
            interaction_tokens: HashMap::new(),
            calls: Vec::new(),
            faults: HashMap::new(),
            shards: vec![Slot::default()],
            identifies: 0,
            resumes: 0,
            intents: 0,
            heartbeats: 0,
            files: HashMap::new(),
        }));
        let app: Router = api::router(st.clone()).merge(
            Router::new()
                .route("/gateway", get(upgrade))
                // twilight connects to `{url}/?v=10&encoding=json`.
                .route("/gateway/", get(upgrade))
                .route("/attachments/{name}", get(cdn))
                .with_state(st.clone()),
        );
        tokio::spawn(async move {
            axum::serve(listener, app).await.expect("fake discord");
        });
        FakeDiscord { st, port }
    }

    /// The REST base to configure (`DISCORD_API_URL`).
    pub fn api_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, DiscordState> {
        lock(&self.st)
    }

    pub fn fail_next(&self, op: &str, fault: Fault) {
        self.state()
            .faults
            .entry(op.into())
            .or_default()
            .push_back(fault);
    }

    pub fn sent(&self) -> Vec<SentMessage> {
        self.state().sent.clone()
    }
    pub fn edits(&self) -> Vec<SentMessage> {
        self.state().edits.clone()
    }
    pub fn typing(&self) -> Vec<u64> {
        self.state().typing.clone()
    }
    pub fn callbacks(&self) -> Vec<(u64, u64)> {
        self.state().callbacks.clone()
    }
    pub fn threads_created(&self) -> Vec<(u64, u64, String)> {
        self.state().threads_created.clone()
    }
    pub fn calls_of(&self, op: &str) -> Vec<Call> {
        self.state()
            .calls
            .iter()
            .filter(|c| c.op == op)
            .cloned()
            .collect()
    }
    pub fn identifies(&self) -> usize {
        self.state().identifies
    }
    pub fn resumes(&self) -> usize {
        self.state().resumes
    }
    pub fn intents(&self) -> u64 {
        self.state().intents
    }
    pub fn heartbeats(&self) -> usize {
        self.state().heartbeats
    }
    pub fn connected(&self) -> bool {
        self.state().shards.iter().any(|slot| slot.conn.is_some())
    }

    /// Split the bot's servers over `n` shards (before the bot connects).
    pub fn set_shards(&self, n: usize) {
        self.state().shards = (0..n.max(1)).map(|_| Slot::default()).collect();
    }

    /// Which shards have a live connection now.
    pub fn shards_connected(&self) -> Vec<bool> {
        self.state()
            .shards
            .iter()
            .map(|slot| slot.conn.is_some())
            .collect()
    }

    /// A server whose events come on shard `shard` of `of`, with one text channel; returns
    /// `(guild, channel)`.
    pub fn guild_on_shard(&self, shard: u64, of: u64) -> (u64, u64) {
        let guild = ((1000 * of + shard) << 22) | 7;
        let channel = guild + 1;
        let mut c = text_channel(channel);
        c["guild_id"] = json!(guild.to_string());
        self.state().channels.insert(channel, c);
        (guild, channel)
    }

    /// `@bot text` in `channel` of server `guild`.
    pub fn mention_in(
        &self,
        guild: u64,
        channel: u64,
        user_id: u64,
        name: &str,
        text: &str,
    ) -> (u64, u64) {
        let mut m = self.new_message(channel, user_id, name, &format!("<@{BOT_ID}> {text}"));
        m["guild_id"] = json!(guild.to_string());
        m["member"] = member(&[]);
        m["mentions"] = json!([bot_user()]);
        self.post(m)
    }

    /// From `user`: `@bot <round> on shard <k>` in the channel of each of `servers` (the
    /// `(guild, channel)` of [`FakeDiscord::guild_on_shard`] for shard k), then `<round> in a DM`.
    pub fn ask_every_shard(&self, servers: &[(u64, u64)], user: u64, name: &str, round: &str) {
        for (k, (guild, channel)) in servers.iter().enumerate() {
            self.mention_in(
                *guild,
                *channel,
                user,
                name,
                &format!("{round} on shard {k}"),
            );
        }
        self.dm(user, name, &format!("{round} in a DM"));
    }

    /// Wait until a session is live (after IDENTIFY or RESUME) `n` times in total.
    pub async fn wait_sessions(&self, n: usize, timeout: Duration) {
        wait_for(
            timeout,
            "gateway sessions",
            || {
                let s = self.state();
                (s.shards[0].conn.is_some() && s.identifies + s.resumes >= n).then_some(())
            },
            || {
                format!(
                    "identifies {}, resumes {}",
                    self.identifies(),
                    self.resumes()
                )
            },
        )
        .await;
    }

    /// Close the live connection: with a close frame (`Some(code)`, e.g. 4000 is resumable),
    /// or abruptly (`None`).
    pub fn drop_connection(&self, code: Option<u16>) {
        for slot in &mut self.state().shards {
            if let Some(conn) = slot.conn.take() {
                let _ = conn.send(code.map_or(Out::Kill, Out::Close));
            }
        }
    }

    /// The live connection stays open but deaf: no events, no heartbeat acknowledgements. What
    /// is dispatched meanwhile is kept for a RESUME.
    pub fn go_silent(&self) {
        for slot in &mut self.state().shards {
            if let Some(conn) = slot.conn.take() {
                let _ = conn.send(Out::Silent);
            }
        }
    }

    /// The gateway URL that `GET /gateway` announces (default: this fake's own).
    pub fn announce_gateway(&self, url: &str) {
        self.state().ws_url = url.to_owned();
    }

    /// This fake's own gateway URL.
    pub fn gateway_url(&self) -> String {
        format!("ws://127.0.0.1:{}/gateway", self.port)
    }

    /// Forget the session, so a RESUME is refused (op 9) and the bot must IDENTIFY again.
    pub fn invalidate_session(&self) {
        for slot in &mut self.state().shards {
            slot.session = None;
        }
    }

    /// Dispatch any event in the current session; returns its sequence number.
    pub fn dispatch(&self, t: &str, d: Value) -> u64 {
        dispatch_to(&self.st, t, d)
    }

    /// Send an earlier dispatch again, as a new event with the same payload (a redelivery).
    pub fn redeliver(&self, seq: u64) -> u64 {
        let event = {
            let s = self.state();
            s.shards[0]
                .session
                .as_ref()
                .and_then(|sess| sess.log.iter().find(|(q, _)| *q == seq).cloned())
        };
        let (_, text) = event.expect("no such event");
        let v: Value = serde_json::from_str(&text).unwrap();
        self.dispatch(v["t"].as_str().unwrap(), v["d"].clone())
    }

    fn new_message(&self, channel: u64, author: u64, name: &str, content: &str) -> Value {
        let id = snowflake(&mut self.state());
        message(id, channel, user(author, name, false), content)
    }

    fn post(&self, msg: Value) -> (u64, u64) {
        let id: u64 = msg["id"].as_str().unwrap().parse().unwrap();
        self.state().messages.insert(id, msg.clone());
        (id, self.dispatch("MESSAGE_CREATE", msg))
    }

    /// The DM channel of a user (created on first use).
    pub fn dm_channel(&self, user_id: u64) -> u64 {
        let channel = user_id + 1;
        let recipient = user(user_id, "someone", false);
        self.state()
            .channels
            .entry(channel)
            .or_insert_with(|| api::dm_channel(channel, &recipient));
        channel
    }

    /// A direct message from `user_id`; returns `(message id, sequence number)`.
    pub fn dm(&self, user_id: u64, name: &str, text: &str) -> (u64, u64) {
        let channel = self.dm_channel(user_id);
        self.post(self.new_message(channel, user_id, name, text))
    }

    /// A direct message with one attachment served by the fake CDN.
    pub fn dm_with_file(
        &self,
        user_id: u64,
        name: &str,
        text: &str,
        file: &str,
        mime: &str,
        bytes: &[u8],
    ) -> (u64, u64) {
        let channel = self.dm_channel(user_id);
        let mut m = self.new_message(channel, user_id, name, text);
        let url = format!("{}/attachments/{file}", self.api_url());
        let id = snowflake(&mut self.state());
        m["attachments"] = json!([{"id": id.to_string(), "filename": file, "size": bytes.len(),
            "url": url, "proxy_url": url, "content_type": mime}]);
        self.state().files.insert(file.to_owned(), bytes.to_vec());
        self.post(m)
    }

    /// A message in a server channel (or thread), mentioning nobody.
    pub fn guild_text(&self, channel: u64, user_id: u64, name: &str, text: &str) -> (u64, u64) {
        let mut m = self.new_message(channel, user_id, name, text);
        m["guild_id"] = json!(GUILD.to_string());
        m["member"] = member(&[]);
        self.post(m)
    }

    /// `@bot text` in a server channel (or thread).
    pub fn mention(&self, channel: u64, user_id: u64, name: &str, text: &str) -> (u64, u64) {
        let mut m = self.new_message(channel, user_id, name, &format!("<@{BOT_ID}> {text}"));
        m["guild_id"] = json!(GUILD.to_string());
        m["member"] = member(&[]);
        m["mentions"] = json!([bot_user()]);
        self.post(m)
    }

    /// A press of the button `custom_id` under the bot's message `message_id`.
    pub fn press(&self, user_id: u64, name: &str, message_id: u64, custom_id: &str) -> u64 {
        let (id, token, shown) = {
            let mut s = self.state();
            let id = snowflake(&mut s);
            let token = format!("interaction-token-{id}");
            s.interaction_tokens.insert(id, token.clone());
            let shown = s
                .messages
                .get(&message_id)
                .cloned()
                .expect("no such message");
            (id, token, shown)
        };
        let channel: u64 = shown["channel_id"].as_str().unwrap().parse().unwrap();
        let guild = self
            .state()
            .channels
            .get(&channel)
            .and_then(|c| c.get("guild_id").cloned());
        let mut d = json!({
            "id": id.to_string(), "application_id": APPLICATION_ID.to_string(), "type": 3,
            "data": {"custom_id": custom_id, "component_type": 2},
            "channel_id": channel.to_string(), "token": token, "version": 1, "message": shown,
            "app_permissions": "0", "locale": "en-US", "entitlements": [],
            "authorizing_integration_owners": {"0": GUILD.to_string()},
            "attachment_size_limit": 26_214_400,
        });
        let who = user(user_id, name, false);
        match guild {
            Some(g) => {
                let mut m = member(&[]);
                m["user"] = who;
                m["permissions"] = json!("0");
                d["member"] = m;
                d["guild_id"] = g;
                d["guild_locale"] = json!("en-US");
                d["context"] = json!(0);
            }
            None => {
                d["user"] = who;
                d["context"] = json!(1);
            }
        }
        self.dispatch("INTERACTION_CREATE", d);
        id
    }
}

async fn cdn(
    State(st): State<St>,
    axum::extract::Path(name): axum::extract::Path<String>,
) -> Response {
    use axum::response::IntoResponse;
    let mut s = lock(&st);
    s.calls.push(Call {
        op: "cdn".into(),
        method: "GET".into(),
        path: format!("/attachments/{name}"),
        status: 200,
        at: Instant::now(),
    });
    match s.files.get(&name) {
        Some(bytes) => bytes.clone().into_response(),
        None => axum::http::StatusCode::NOT_FOUND.into_response(),
    }
}

async fn upgrade(State(st): State<St>, ws: WebSocketUpgrade) -> Response {
    ws.on_upgrade(move |socket| connection(st, socket))
}

fn ready(st: &St, shard: usize) -> u64 {
    let (session, total) = {
        let mut s = lock(st);
        let id = format!("session-{}", snowflake(&mut s));
        s.shards[shard].session = Some(Session {
            id: id.clone(),
            seq: 0,
            log: VecDeque::new(),
        });
        (id, s.shards.len())
    };
    let url = lock(st).ws_url.clone();
    dispatch_on(
        st,
        shard,
        "READY",
        json!({
            "v": 10, "user": bot_user(), "guilds": [{"id": GUILD.to_string(), "unavailable": true}],
            "session_id": session, "resume_gateway_url": url, "shard": [shard, total],
            "application": {"id": APPLICATION_ID.to_string(), "flags": 0},
        }),
    )
}

/// The shard an IDENTIFY asks for, or the close code refusing it.
fn identified_shard(st: &St, d: &Value) -> Result<usize, (u16, &'static str)> {
    let total = lock(st).shards.len();
    match d["shard"]
        .as_array()
        .map(|a| (a[0].as_u64(), a[1].as_u64()))
    {
        None if total == 1 => Ok(0),
        None => Err((4011, "Sharding required.")),
        Some((Some(i), Some(n))) if n as usize == total && (i as usize) < total => Ok(i as usize),
        Some(_) => Err((4010, "Invalid shard.")),
    }
}

/// One websocket connection: HELLO, then IDENTIFY or RESUME, heartbeats, and dispatches.
async fn connection(st: St, mut socket: WebSocket) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Out>();
    let hello = json!({"op": 10, "d": {"heartbeat_interval": HEARTBEAT_MS}}).to_string();
    if socket.send(Ws::Text(hello.into())).await.is_err() {
        return;
    }
    let mut silent = false;
    // The shard this connection identified or resumed as.
    let mut shard = 0;
    loop {
        tokio::select! {
            out = rx.recv() => match out {
                Some(Out::Silent) => silent = true,
                Some(Out::Text(_)) if silent => {}
                Some(Out::Text(t)) => {
                    if socket.send(Ws::Text(t.into())).await.is_err() {
                        break;
                    }
                }
                Some(Out::Close(code)) => {
                    let _ = socket.send(Ws::Close(Some(CloseFrame { code, reason: "".into() }))).await;
                    break;
                }
                Some(Out::Kill) | None => break,
            },
            incoming = socket.recv() => {
                let Some(Ok(Ws::Text(text))) = incoming else {
                    match incoming {
                        Some(Ok(_)) => continue,
                        _ => break,
                    }
                };
                if silent {
                    continue;
                }
                let Ok(v) = serde_json::from_str::<Value>(text.as_str()) else {
                    let _ = socket.send(Ws::Close(Some(CloseFrame { code: 4002, reason: "Error while decoding payload.".into() }))).await;
                    break;
                };
                match v["op"].as_u64() {
                    Some(1) => {
                        lock(&st).heartbeats += 1;
                        if socket.send(Ws::Text(json!({"op": 11}).to_string().into())).await.is_err() {
                            break;
                        }
                    }
                    Some(2) => {
                        let ok = v["d"]["token"].as_str() == Some(&format!("Bot {}", lock(&st).token)) ||
                            v["d"]["token"].as_str() == Some(lock(&st).token.as_str());
                        if !ok {
                            let _ = socket.send(Ws::Close(Some(CloseFrame { code: 4004, reason: "Authentication failed.".into() }))).await;
                            break;
                        }
                        shard = match identified_shard(&st, &v["d"]) {
                            Ok(shard) => shard,
                            Err((code, reason)) => {
                                let _ = socket.send(Ws::Close(Some(CloseFrame { code, reason: reason.into() }))).await;
                                break;
                            }
                        };
                        {
                            let mut s = lock(&st);
                            s.identifies += 1;
                            s.intents = v["d"]["intents"].as_u64().unwrap_or(0);
                            s.shards[shard].conn = Some(tx.clone());
                        }
                        ready(&st, shard);
                    }
                    Some(6) => {
                        let wanted = v["d"]["session_id"].as_str().unwrap_or_default().to_owned();
                        let after = v["d"]["seq"].as_u64().unwrap_or(0);
                        let replay = {
                            let mut s = lock(&st);
                            let found = s.shards.iter().position(|slot| slot.session.as_ref().is_some_and(|sess| sess.id == wanted));
                            match found {
                                Some(i) => {
                                    shard = i;
                                    let slot = &mut s.shards[i];
                                    let events: Vec<String> = slot.session.as_ref().map(|sess| sess.log.iter().filter(|(q, _)| *q > after).map(|(_, t)| t.clone()).collect()).unwrap_or_default();
                                    slot.conn = Some(tx.clone());
                                    s.resumes += 1;
                                    Some(events)
                                }
                                None => None,
                            }
                        };
                        match replay {
                            Some(events) => {
                                // Replayed in order, ahead of anything dispatched meanwhile.
                                for e in events {
                                    if socket.send(Ws::Text(e.into())).await.is_err() {
                                        break;
                                    }
                                }
                                dispatch_on(&st, shard, "RESUMED", json!({}));
                            }
                            None => {
                                let invalid = json!({"op": 9, "d": false}).to_string();
                                let _ = socket.send(Ws::Text(invalid.into())).await;
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    let mut s = lock(&st);
    if let Some(slot) = s.shards.get_mut(shard)
        && slot.conn.as_ref().is_some_and(|c| c.same_channel(&tx))
    {
        slot.conn = None;
    }
}
