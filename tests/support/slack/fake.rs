//! Fake Slack for integration tests: the Web API (`api`), the Socket Mode websocket, and a
//! client that signs and POSTs Events API requests to the daemon's listener.
//!
//! Socket Mode as Slack runs it: `apps.connections.open` hands out a `ws://` URL; each connection
//! starts with `hello`; events, interactions and slash commands arrive in envelopes with an
//! `envelope_id` the app must ack (`{"envelope_id": …}`); an envelope not acked is delivered
//! again on the next connection. Tests can ask for a `disconnect` (refresh_requested), close the
//! socket, or make it go silent (it stops reading, so even pings go unanswered).
//!
//! Deviations on purpose: `redeliver` resends an envelope on demand (Slack does so only on
//! timeouts); channels and users need no setup (`D<user>` is a user's DM channel).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use futures_util::{SinkExt, StreamExt};
use hmac::{KeyInit, Mac};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message as Frame;

use super::api::{BOT_USER, Call, Fault, Posted, SharedFile, TEAM};
use super::api::{Shared, WebState};
use crate::support::http;
use crate::support::wait_for;

pub const SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
/// Users on the Slack allowlist of every test daemon.
pub const ALICE: &str = "U0ALICE";
pub const BOB: &str = "U0BOB";
/// Not on the allowlist.
pub const MALLORY: &str = "U0MALLORY";
pub const CHANNEL: &str = "C0GENERAL";

/// The DM channel of `user` with the bot.
pub fn dm_channel(user: &str) -> String {
    format!("D{}", user.trim_start_matches('U'))
}

enum Cmd {
    Frame(String),
    Close,
    Silent,
}

#[derive(Default)]
struct SockState {
    conn: Option<mpsc::UnboundedSender<Cmd>>,
    connections: usize,
    /// Envelopes sent and not acknowledged, in order, with their frames.
    unacked: Vec<(String, Value)>,
    acked: Vec<String>,
    next_id: u64,
}

/// What an inbound helper sent.
#[derive(Clone, Debug)]
pub struct Sent {
    pub ts: String,
    pub envelope_id: String,
    pub event_id: String,
}

/// Handle to a running fake Slack. Cheap to clone.
#[derive(Clone)]
pub struct FakeSlack {
    web: Shared,
    sock: Arc<Mutex<SockState>>,
    port: u16,
}

impl FakeSlack {
    pub async fn start() -> FakeSlack {
        let ws = TcpListener::bind("127.0.0.1:0").await.expect("bind ws");
        let ws_port = ws.local_addr().expect("addr").port();
        let mut state = WebState {
            ws_port,
            ..WebState::default()
        };
        for (id, name) in [(ALICE, "Alice"), (BOB, "Bob"), (MALLORY, "Mallory")] {
            state.users.insert(id.to_owned(), name.to_owned());
        }
        let web: Shared = Arc::new(Mutex::new(state));
        let app = Router::new()
            .fallback(super::api::handle)
            .with_state(web.clone());
        let port = http::serve(app, "fake slack").await;
        web.lock().unwrap_or_else(|e| e.into_inner()).http_port = port;
        let fake = FakeSlack {
            web,
            sock: Arc::default(),
            port,
        };
        let f = fake.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = ws.accept().await {
                let f = f.clone();
                tokio::spawn(async move { f.connection(stream).await });
            }
        });
        fake
    }

    fn web(&self) -> MutexGuard<'_, WebState> {
        self.web.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn sock(&self) -> MutexGuard<'_, SockState> {
        self.sock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `http://127.0.0.1:PORT/api` (for `SLACK_API_URL`).
    pub fn api_url(&self) -> String {
        format!("http://127.0.0.1:{}/api", self.port)
    }
    /// A URL of a file the bot may download.
    pub fn add_file(&self, name: &str, bytes: impl Into<Vec<u8>>) -> String {
        self.web().files.insert(name.to_owned(), bytes.into());
        format!("http://127.0.0.1:{}/files/{name}", self.port)
    }

    /// Queue a fault for the next call of `method` (e.g. "chat.postMessage").
    pub fn fail_next(&self, method: &str, fault: Fault) {
        self.web()
            .faults
            .entry(method.to_owned())
            .or_default()
            .push_back(fault);
    }

    pub fn posted(&self) -> Vec<Posted> {
        self.web().posted.clone()
    }
    /// Files the bot shared.
    pub fn shared_files(&self) -> Vec<SharedFile> {
        self.web().shared_files.clone()
    }
    pub fn updates(&self) -> Vec<Posted> {
        self.web().updates.clone()
    }
    pub fn calls_of(&self, method: &str) -> Vec<Call> {
        self.web()
            .calls
            .iter()
            .filter(|c| c.method == method)
            .cloned()
            .collect()
    }
    /// Websocket connections accepted so far.
    pub fn connections(&self) -> usize {
        self.sock().connections
    }
    pub fn acked(&self) -> Vec<String> {
        self.sock().acked.clone()
    }
    pub fn unacked(&self) -> usize {
        self.sock().unacked.len()
    }

    fn describe(&self) -> String {
        let web = self.web();
        let posted: Vec<String> = web
            .posted
            .iter()
            .map(|m| {
                format!(
                    "  {} {} (thread {:?}): {:?}",
                    m.channel, m.ts, m.thread_ts, m.text
                )
            })
            .collect();
        let calls: Vec<String> = web
            .calls
            .iter()
            .rev()
            .take(20)
            .rev()
            .map(|c| format!("  {} -> {} {}", c.method, c.status, c.params))
            .collect();
        let sock = self.sock();
        format!(
            "posted ({}):\n{}\nlast calls:\n{}\nconnections {}, acked {:?}, unacked {:?}",
            posted.len(),
            posted.join("\n"),
            calls.join("\n"),
            sock.connections,
            sock.acked,
            sock.unacked.iter().map(|(id, _)| id).collect::<Vec<_>>()
        )
    }

    pub async fn wait<T>(
        &self,
        timeout: Duration,
        what: &str,
        check: impl Fn(&FakeSlack) -> Option<T>,
    ) -> T {
        let what = format!("fake slack: {what}");
        wait_for(timeout, &what, || check(self), || self.describe()).await
    }

    /// Waits until at least `n` messages were posted; returns all posted so far.
    pub async fn wait_posted(&self, n: usize, timeout: Duration) -> Vec<Posted> {
        self.wait(timeout, &format!("{n} posted messages"), |f| {
            let p = f.posted();
            (p.len() >= n).then_some(p)
        })
        .await
    }

    /// Waits until a Socket Mode connection beyond the first `n` is up (hello sent).
    pub async fn wait_connections(&self, n: usize, timeout: Duration) {
        self.wait(timeout, &format!("{n} socket connections"), |f| {
            (f.connections() >= n).then_some(())
        })
        .await
    }

    pub async fn wait_acked(&self, envelope_id: &str, timeout: Duration) {
        self.wait(timeout, &format!("ack of {envelope_id}"), |f| {
            f.acked().iter().any(|a| a == envelope_id).then_some(())
        })
        .await
    }

    // --- Socket Mode server ---

    async fn connection(&self, stream: tokio::net::TcpStream) {
        let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
            return;
        };
        let (tx, mut rx) = mpsc::unbounded_channel();
        let pending = {
            let mut s = self.sock();
            s.conn = Some(tx.clone());
            s.connections += 1;
            s.unacked
                .iter()
                .map(|(_, f)| f.to_string())
                .collect::<Vec<_>>()
        };
        let hello = json!({"type": "hello", "num_connections": 1,
            "debug_info": {"host": "applink-fake", "build_number": 1, "approximate_connection_time": 18060},
            "connection_info": {"app_id": "A0APP"}});
        if ws
            .send(Frame::Text(hello.to_string().into()))
            .await
            .is_err()
        {
            return;
        }
        // Envelopes never acked are delivered again on a new connection.
        for frame in pending {
            let _ = ws.send(Frame::Text(frame.into())).await;
        }
        loop {
            tokio::select! {
                cmd = rx.recv() => match cmd {
                    Some(Cmd::Frame(f)) => {
                        if ws.send(Frame::Text(f.into())).await.is_err() {
                            break;
                        }
                    }
                    Some(Cmd::Close) | None => {
                        let _ = ws.close(None).await;
                        break;
                    }
                    Some(Cmd::Silent) => {
                        // Hold the socket without reading it: no frames, no pongs.
                        while let Some(cmd) = rx.recv().await {
                            if matches!(cmd, Cmd::Close) {
                                break;
                            }
                        }
                        break;
                    }
                },
                msg = ws.next() => match msg {
                    Some(Ok(Frame::Text(t))) => {
                        let v: Value = serde_json::from_str(t.as_str()).unwrap_or_default();
                        if let Some(id) = v["envelope_id"].as_str() {
                            let mut s = self.sock();
                            s.unacked.retain(|(u, _)| u != id);
                            s.acked.push(id.to_owned());
                        }
                    }
                    Some(Ok(Frame::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => {}
                },
            }
        }
        let mut s = self.sock();
        if s.conn.as_ref().is_some_and(|c| c.same_channel(&tx)) {
            s.conn = None;
        }
    }

    fn to_current(&self, cmd: Cmd) {
        if let Some(c) = &self.sock().conn {
            let _ = c.send(cmd);
        }
    }

    /// Ask the app to reconnect (`disconnect`, reason `refresh_requested`).
    pub fn disconnect(&self) {
        let frame = json!({"type": "disconnect", "reason": "refresh_requested",
            "debug_info": {"host": "applink-fake"}});
        self.to_current(Cmd::Frame(frame.to_string()));
    }
    /// Close the current socket.
    pub fn close_socket(&self) {
        self.to_current(Cmd::Close);
    }
    /// The current socket stays open but sends and answers nothing.
    pub fn go_silent(&self) {
        self.to_current(Cmd::Silent);
    }

    /// Send an envelope of `kind` on the current connection (or the next one).
    pub fn envelope(&self, kind: &str, payload: Value) -> String {
        let mut s = self.sock();
        s.next_id += 1;
        let id = format!("e{:04}-7c4d-4a0b-9f1e-fake", s.next_id);
        let frame = json!({"type": kind, "envelope_id": id, "payload": payload,
            "accepts_response_payload": kind != "events_api", "retry_attempt": 0, "retry_reason": ""});
        s.unacked.push((id.clone(), frame.clone()));
        if let Some(c) = &s.conn {
            let _ = c.send(Cmd::Frame(frame.to_string()));
        }
        id
    }

    /// Re-send an acked envelope's payload under a new envelope id (a redelivery after a
    /// reconnect, with the same event inside).
    pub fn resend_payload(&self, payload: Value) -> String {
        self.envelope("events_api", payload)
    }

    // --- payload builders (shared by Socket Mode and the Events API) ---

    fn next_ts(&self) -> String {
        self.web().next_ts()
    }

    /// Record a person's message in the channel's history (what `conversations.history` reads).
    fn record(&self, event: &Value) {
        let mut m = event.clone();
        if let Some(o) = m.as_object_mut() {
            for k in ["event_ts", "channel_type", "team"] {
                o.remove(k);
            }
            o.insert("type".into(), json!("message"));
        }
        self.web().history.push(m);
    }

    /// Slack gives up on the events it could not deliver (after its retries): envelopes not
    /// acknowledged are never sent again. What they carried stays in the channels' history.
    pub fn give_up_undelivered(&self) -> usize {
        let mut s = self.sock();
        let n = s.unacked.len();
        s.unacked.clear();
        n
    }

    /// An `event_callback` around `event`, with a fresh `event_id`.
    pub fn callback(&self, event: Value) -> Value {
        let n = {
            let mut s = self.sock();
            s.next_id += 1;
            s.next_id
        };
        json!({"token": "legacy-verification-token", "team_id": TEAM, "api_app_id": "A0APP",
            "event": event, "type": "event_callback", "event_id": format!("Ev{n:08}"),
            "event_time": 1_700_000_200, "authed_users": [BOT_USER]})
    }

    /// A direct message event: `(callback, ts)`.
    pub fn dm_event(&self, user: &str, text: &str) -> (Value, String) {
        let ts = self.next_ts();
        let ev = json!({"type": "message", "channel": dm_channel(user), "user": user, "text": text,
            "ts": ts, "event_ts": ts, "client_msg_id": format!("cm-{ts}"), "channel_type": "im", "team": TEAM});
        self.record(&ev);
        (self.callback(ev), ts)
    }

    /// An `app_mention` of the bot: `(callback, ts)`.
    pub fn mention_event(
        &self,
        channel: &str,
        user: &str,
        text: &str,
        thread: Option<&str>,
    ) -> (Value, String) {
        let ts = self.next_ts();
        let mut ev = json!({"type": "app_mention", "channel": channel, "user": user,
            "text": format!("<@{BOT_USER}> {text}"), "ts": ts, "event_ts": ts,
            "client_msg_id": format!("cm-{ts}"), "team": TEAM});
        if let Some(t) = thread {
            ev["thread_ts"] = json!(t);
        }
        self.record(&ev);
        (self.callback(ev), ts)
    }

    /// A channel message (no mention): `(callback, ts)`.
    pub fn channel_event(
        &self,
        channel: &str,
        user: &str,
        text: &str,
        thread: Option<&str>,
    ) -> (Value, String) {
        let ts = self.next_ts();
        let mut ev = json!({"type": "message", "channel": channel, "user": user, "text": text,
            "ts": ts, "event_ts": ts, "client_msg_id": format!("cm-{ts}"), "channel_type": "channel", "team": TEAM});
        if let Some(t) = thread {
            ev["thread_ts"] = json!(t);
        }
        self.record(&ev);
        (self.callback(ev), ts)
    }

    /// A `block_actions` payload: `user` pressed the button with `value` under `shown`.
    pub fn block_action(&self, user: &str, shown: &Posted, value: &str) -> Value {
        let trigger = self.next_ts();
        let mut message = json!({"type": "message", "user": BOT_USER, "bot_id": "BBOT",
            "text": shown.text, "ts": shown.ts});
        if let Some(t) = &shown.thread_ts {
            message["thread_ts"] = json!(t);
        }
        json!({"type": "block_actions", "team": {"id": TEAM, "domain": "hermes-test"},
            "user": {"id": user, "username": user.to_lowercase(), "name": user.to_lowercase(), "team_id": TEAM},
            "api_app_id": "A0APP", "token": "legacy", "trigger_id": format!("{trigger}.trig"),
            "container": {"type": "message", "message_ts": shown.ts, "channel_id": shown.channel, "is_ephemeral": false},
            "channel": {"id": shown.channel, "name": "chan"}, "message": message,
            "response_url": "https://hooks.slack.com/actions/T/1/x",
            "actions": [{"type": "button", "action_id": "hermes_0_0", "block_id": "b1", "value": value,
                "text": {"type": "plain_text", "text": "pressed"}, "action_ts": trigger}]})
    }

    /// A slash command payload (`/hermes <text>`).
    pub fn slash_payload(&self, user: &str, channel: &str, text: &str) -> Value {
        let trigger = self.next_ts();
        json!({"token": "legacy", "team_id": TEAM, "team_domain": "hermes-test", "channel_id": channel,
            "channel_name": "directmessage", "user_id": user, "user_name": user.to_lowercase(),
            "command": "/hermes", "text": text, "api_app_id": "A0APP",
            "response_url": "https://hooks.slack.com/commands/T/1/x", "trigger_id": format!("{trigger}.trig")})
    }

    // --- Socket Mode shortcuts ---

    fn send_event(&self, (cb, ts): (Value, String)) -> Sent {
        let event_id = cb["event_id"].as_str().unwrap_or_default().to_owned();
        let envelope_id = self.envelope("events_api", cb);
        Sent {
            ts,
            envelope_id,
            event_id,
        }
    }
    pub fn dm(&self, user: &str, text: &str) -> Sent {
        self.send_event(self.dm_event(user, text))
    }
    pub fn mention(&self, channel: &str, user: &str, text: &str, thread: Option<&str>) -> Sent {
        self.send_event(self.mention_event(channel, user, text, thread))
    }
    pub fn channel_message(
        &self,
        channel: &str,
        user: &str,
        text: &str,
        thread: Option<&str>,
    ) -> Sent {
        self.send_event(self.channel_event(channel, user, text, thread))
    }
    pub fn press(&self, user: &str, shown: &Posted, value: &str) -> String {
        let payload = self.block_action(user, shown, value);
        self.envelope("interactive", payload)
    }
    pub fn slash(&self, user: &str, channel: &str, text: &str) -> String {
        let payload = self.slash_payload(user, channel, text);
        self.envelope("slash_commands", payload)
    }
}

/// Signs and POSTs Events API requests to the daemon's listener.
#[derive(Clone)]
pub struct EventsClient {
    pub url: String,
    http: reqwest::Client,
}

/// `v0=hex(HMAC-SHA256(secret, "v0:{ts}:{body}"))`.
pub fn sign(secret: &str, ts: i64, body: &str) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("hmac key");
    mac.update(format!("v0:{ts}:{body}").as_bytes());
    let bytes = mac.finalize().into_bytes();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("v0={hex}")
}

pub fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl EventsClient {
    pub fn new(listen: &str) -> EventsClient {
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        EventsClient {
            url: format!("http://{listen}/slack/events"),
            http: reqwest::Client::new(),
        }
    }

    /// POST `body` with the given timestamp and signature; `(status, body, elapsed)`.
    pub async fn post_raw(
        &self,
        body: &str,
        content_type: &str,
        ts: i64,
        signature: &str,
        retry: Option<u32>,
    ) -> (u16, String, Duration) {
        let started = Instant::now();
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", content_type)
            .header("x-slack-request-timestamp", ts.to_string())
            .header("x-slack-signature", signature)
            .body(body.to_owned());
        if let Some(n) = retry {
            req = req
                .header("x-slack-retry-num", n.to_string())
                .header("x-slack-retry-reason", "http_timeout");
        }
        let resp = req.send().await.expect("POST to the events listener");
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        (status, text, started.elapsed())
    }

    /// A correctly signed JSON event; its status, or `None` when nothing listens (the daemon is
    /// down).
    pub async fn try_post_json(&self, body: &Value, retry: Option<u32>) -> Option<u16> {
        let body = body.to_string();
        let ts = now_unix();
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("x-slack-request-timestamp", ts.to_string())
            .header("x-slack-signature", sign(SIGNING_SECRET, ts, &body))
            .body(body);
        if let Some(n) = retry {
            req = req
                .header("x-slack-retry-num", n.to_string())
                .header("x-slack-retry-reason", "http_error");
        }
        Some(req.send().await.ok()?.status().as_u16())
    }

    /// A correctly signed JSON event; `(status, body, elapsed)`.
    pub async fn post_json(&self, body: &Value, retry: Option<u32>) -> (u16, String, Duration) {
        let body = body.to_string();
        let ts = now_unix();
        let sig = sign(SIGNING_SECRET, ts, &body);
        self.post_raw(&body, "application/json", ts, &sig, retry)
            .await
    }

    /// A correctly signed form (`payload=` interactions, slash commands).
    pub async fn post_form(&self, pairs: &[(&str, String)]) -> (u16, String, Duration) {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())))
            .finish();
        let ts = now_unix();
        let sig = sign(SIGNING_SECRET, ts, &body);
        self.post_raw(&body, "application/x-www-form-urlencoded", ts, &sig, None)
            .await
    }
}
