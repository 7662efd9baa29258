//! The fake Slack's Web API (`/api/<method>`): request decoding (query, JSON or form body, bearer
//! token), the methods the adapter calls, Slack's error envelope `{"ok":false,"error":…}`, and
//! injected faults (429 with `Retry-After`, API errors, HTTP statuses). Files are served under
//! `/files/<name>` to the bot token only.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::support::chat::Buttons;
use crate::support::http::parse_pairs;

pub const BOT_TOKEN: &str = "xoxb-test-bot-token";
pub const APP_TOKEN: &str = "xapp-test-app-token";
pub const BOT_USER: &str = "UBOT";
pub const TEAM: &str = "T0TEAM";

/// A failure injected into the next call of one method.
#[derive(Clone, Debug)]
pub enum Fault {
    /// HTTP 429 with `Retry-After: N` and `{"ok":false,"error":"ratelimited"}`.
    RetryAfter(u64),
    /// HTTP 200 with `{"ok":false,"error":CODE}`.
    Error(String),
    /// That HTTP status with an empty body.
    Status(u16),
    /// The call is carried out, but its answer comes only after this long (a process killed
    /// meanwhile never learns that its message was posted).
    Stall(std::time::Duration),
}

/// One Web API request.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: String,
    pub params: Value,
    pub token: Option<String>,
    pub status: u16,
    pub at: Instant,
}

/// A file the bot shared (files.getUploadURLExternal, the upload, files.completeUploadExternal).
#[derive(Clone, Debug)]
pub struct SharedFile {
    pub channel: String,
    pub thread_ts: Option<String>,
    pub name: String,
    pub bytes: Vec<u8>,
    pub comment: Option<String>,
}

/// A message the bot posted (or, in `updates`, an edit).
#[derive(Clone, Debug)]
pub struct Posted {
    pub channel: String,
    pub ts: String,
    pub thread_ts: Option<String>,
    pub text: String,
    pub blocks: Value,
    pub at: Instant,
}

impl Buttons for Posted {
    /// `(label, value)` of every button in the message's actions blocks.
    fn buttons(&self) -> Vec<(String, String)> {
        let blocks = self.blocks.as_array().cloned().unwrap_or_default();
        blocks
            .iter()
            .filter(|b| b["type"] == "actions")
            .flat_map(|b| b["elements"].as_array().cloned().unwrap_or_default())
            .map(|e| {
                (
                    e["text"]["text"].as_str().unwrap_or_default().to_owned(),
                    e["value"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }
}

#[derive(Default)]
pub struct WebState {
    pub calls: Vec<Call>,
    pub posted: Vec<Posted>,
    pub updates: Vec<Posted>,
    pub faults: HashMap<String, VecDeque<Fault>>,
    pub users: HashMap<String, String>,
    pub files: HashMap<String, Vec<u8>>,
    pub next_ts: u64,
    pub next_ticket: u64,
    /// Port of the Socket Mode websocket server.
    pub ws_port: u16,
    /// Port of this HTTP server (upload URLs point at it).
    pub http_port: u16,
    /// Uploads by file id: the name asked for, and the bytes once uploaded.
    pub uploads: HashMap<String, (String, Option<Vec<u8>>)>,
    pub shared_files: Vec<SharedFile>,
    /// Every message posted in the workspace, people's and the bot's, oldest first, each with
    /// its `channel` (what `conversations.history` / `replies` read).
    pub history: Vec<Value>,
}

impl WebState {
    /// A fresh message timestamp: the current second and a counter, so every `ts` is unique,
    /// later ones compare greater, and they are near the clock like Slack's.
    pub fn next_ts(&mut self) -> String {
        self.next_ts += 1;
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        format!("{secs}.{:06}", self.next_ts)
    }
}

/// Slack timestamps as numbers, for ordering.
fn ts_key(ts: &str) -> (u64, u64) {
    let (s, f) = ts.split_once('.').unwrap_or((ts, "0"));
    (
        s.parse().unwrap_or(0),
        format!("{f:0<6}").parse().unwrap_or(0),
    )
}

pub type Shared = Arc<Mutex<WebState>>;

fn lock(st: &Shared) -> std::sync::MutexGuard<'_, WebState> {
    st.lock().unwrap_or_else(|e| e.into_inner())
}

fn ok(mut body: Value) -> Response {
    body["ok"] = json!(true);
    axum::Json(body).into_response()
}

fn err(code: &str) -> Response {
    axum::Json(json!({"ok": false, "error": code})).into_response()
}

/// Every request to the fake's HTTP port.
pub async fn handle(
    State(st): State<Shared>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    if let Some(name) = path.strip_prefix("/files/") {
        let st = lock(&st);
        return match (token.as_deref(), st.files.get(name)) {
            (Some(BOT_TOKEN), Some(bytes)) => bytes.clone().into_response(),
            (Some(BOT_TOKEN), None) => StatusCode::NOT_FOUND.into_response(),
            _ => StatusCode::FORBIDDEN.into_response(),
        };
    }
    if let Some(id) = path.strip_prefix("/upload/") {
        let mut st = lock(&st);
        return match st.uploads.get_mut(id) {
            Some((_, bytes)) => {
                *bytes = Some(body.to_vec());
                "OK - 1".into_response()
            }
            None => StatusCode::NOT_FOUND.into_response(),
        };
    }
    let Some(method) = path.strip_prefix("/api/").map(str::to_owned) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mut params = Map::new();
    if let Some(q) = uri.query() {
        parse_pairs(q, &mut params);
    }
    let ctype = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if ctype.starts_with("application/json") {
        if let Ok(Value::Object(m)) = serde_json::from_slice(&body) {
            params.extend(m);
        }
    } else {
        parse_pairs(&String::from_utf8_lossy(&body), &mut params);
    }
    let params = Value::Object(params);
    let stall = {
        let mut s = lock(&st);
        let queue = s.faults.get_mut(&method);
        match queue.as_ref().and_then(|q| q.front()) {
            Some(Fault::Stall(d)) => {
                let d = *d;
                queue.and_then(VecDeque::pop_front);
                Some(d)
            }
            _ => None,
        }
    };
    let (status, response) = answer(&st, &method, &params, token.as_deref());
    if let Some(d) = stall {
        tokio::time::sleep(d).await;
    }
    lock(&st).calls.push(Call {
        method,
        params,
        token,
        status,
        at: Instant::now(),
    });
    response
}

fn answer(st: &Shared, method: &str, p: &Value, token: Option<&str>) -> (u16, Response) {
    let mut s = lock(st);
    if let Some(fault) = s.faults.get_mut(method).and_then(VecDeque::pop_front) {
        return match fault {
            Fault::RetryAfter(secs) => (
                429,
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    [("retry-after", secs.to_string())],
                    axum::Json(json!({"ok": false, "error": "ratelimited"})),
                )
                    .into_response(),
            ),
            Fault::Error(code) => (200, err(&code)),
            Fault::Stall(_) => unreachable!("taken before the call"),
            Fault::Status(code) => (
                code,
                StatusCode::from_u16(code)
                    .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
                    .into_response(),
            ),
        };
    }
    if method == "apps.connections.open" {
        return match token {
            Some(APP_TOKEN) => {
                s.next_ticket += 1;
                let url = format!(
                    "ws://127.0.0.1:{}/link/?ticket={}",
                    s.ws_port, s.next_ticket
                );
                (200, ok(json!({ "url": url })))
            }
            Some(t) if t.starts_with("xoxb-") => (200, err("not_allowed_token_type")),
            _ => (200, err("invalid_auth")),
        };
    }
    if token != Some(BOT_TOKEN) {
        return (
            200,
            err(if token.is_none() {
                "not_authed"
            } else {
                "invalid_auth"
            }),
        );
    }
    let r = match method {
        "auth.test" => ok(json!({
            "url": "https://hermes-test.slack.com/", "team": "Hermes Test", "user": "hermes",
            "team_id": TEAM, "user_id": BOT_USER, "bot_id": "BBOT", "is_enterprise_install": false
        })),
        "chat.postMessage" | "chat.update" => match message(&mut s, method, p) {
            Ok(r) => r,
            Err(code) => err(code),
        },
        "files.getUploadURLExternal" => {
            let name = p["filename"].as_str().unwrap_or_default().to_owned();
            let length = p["length"].as_str().and_then(|l| l.parse::<u64>().ok());
            if name.is_empty() || length.is_none_or(|l| l == 0) {
                err("invalid_arguments")
            } else {
                let id = format!("F{:08}", s.uploads.len() + 1);
                let url = format!("http://127.0.0.1:{}/upload/{id}", s.http_port);
                s.uploads.insert(id.clone(), (name, None));
                ok(json!({"upload_url": url, "file_id": id}))
            }
        }
        "files.completeUploadExternal" => complete_upload(&mut s, p),
        "users.info" => {
            let id = p["user"].as_str().unwrap_or_default();
            match s.users.get(id) {
                Some(name) => ok(json!({"user": {
                    "id": id, "team_id": TEAM, "name": name.to_lowercase(), "real_name": name,
                    "profile": {"display_name": name, "real_name": name}
                }})),
                None => err("user_not_found"),
            }
        }
        "conversations.history" | "conversations.replies" => read_history(&s, method, p),
        "conversations.info" => {
            let id = p["channel"].as_str().unwrap_or_default();
            ok(
                json!({"channel": {"id": id, "name": format!("chan-{id}"), "is_im": id.starts_with('D')}}),
            )
        }
        _ => err("unknown_method"),
    };
    (200, r)
}

/// `conversations.history` (a channel's top-level messages, newest first) and
/// `conversations.replies` (a thread, its root first), after `oldest`, at most `limit`, with
/// metadata only when `include_all_metadata` asks for it.
fn read_history(s: &WebState, method: &str, p: &Value) -> Response {
    let Some(channel) = p["channel"].as_str() else {
        return err("channel_not_found");
    };
    let oldest = ts_key(p["oldest"].as_str().unwrap_or("0"));
    let limit = p["limit"]
        .as_str()
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(100)
        .clamp(1, 999);
    let metadata = p["include_all_metadata"] == "true";
    let in_channel = s.history.iter().filter(|m| m["channel"] == channel);
    let mut found: Vec<Value> = if method == "conversations.replies" {
        let Some(root) = p["ts"].as_str() else {
            return err("thread_not_found");
        };
        in_channel
            .filter(|m| m["ts"] == root || m["thread_ts"] == root)
            .filter(|m| m["ts"] == root || ts_key(m["ts"].as_str().unwrap_or("0")) > oldest)
            .cloned()
            .collect()
    } else {
        let mut top: Vec<Value> = in_channel
            .filter(|m| m["thread_ts"].is_null() || m["thread_ts"] == m["ts"])
            .filter(|m| ts_key(m["ts"].as_str().unwrap_or("0")) > oldest)
            .cloned()
            .collect();
        top.reverse();
        top
    };
    let has_more = found.len() > limit;
    found.truncate(limit);
    for m in &mut found {
        if let Some(o) = m.as_object_mut() {
            o.remove("channel");
            if !metadata {
                o.remove("metadata");
            }
        }
    }
    ok(json!({"messages": found, "has_more": has_more}))
}

/// `files.completeUploadExternal`: every file must have been uploaded; each is shared in the
/// channel (and thread).
fn complete_upload(s: &mut WebState, p: &Value) -> Response {
    let files: Vec<Value> = match &p["files"] {
        Value::String(text) => serde_json::from_str(text).unwrap_or_default(),
        Value::Array(a) => a.clone(),
        _ => Vec::new(),
    };
    let Some(channel) = p["channel_id"].as_str().map(str::to_owned) else {
        return err("invalid_channel");
    };
    if files.is_empty() {
        return err("invalid_arguments");
    }
    let mut done = Vec::new();
    for f in &files {
        let id = f["id"].as_str().unwrap_or_default();
        let Some((name, Some(bytes))) = s.uploads.get(id).cloned() else {
            return err("file_not_found");
        };
        s.shared_files.push(SharedFile {
            channel: channel.clone(),
            thread_ts: p["thread_ts"].as_str().map(str::to_owned),
            name: name.clone(),
            bytes,
            comment: p["initial_comment"].as_str().map(str::to_owned),
        });
        done.push(json!({"id": id, "name": name, "title": f["title"]}));
    }
    ok(json!({ "files": done }))
}

/// `chat.postMessage` / `chat.update` with Slack's checks on text and blocks.
fn message(s: &mut WebState, method: &str, p: &Value) -> Result<Response, &'static str> {
    let channel = p["channel"]
        .as_str()
        .filter(|c| !c.is_empty())
        .ok_or("channel_not_found")?;
    let text = p["text"].as_str().unwrap_or_default().to_owned();
    let blocks = match &p["blocks"] {
        Value::String(s) => serde_json::from_str(s).map_err(|_| "invalid_blocks_format")?,
        other => other.clone(),
    };
    if text.is_empty() && blocks.is_null() {
        return Err("no_text");
    }
    if text.chars().count() > 40_000 {
        return Err("msg_too_long");
    }
    for b in blocks.as_array().into_iter().flatten() {
        let t = b["text"]["text"].as_str().unwrap_or_default();
        if b["type"] == "section" && (t.is_empty() || t.chars().count() > 3000) {
            return Err("invalid_blocks");
        }
    }
    let thread_ts = p["thread_ts"].as_str().map(str::to_owned);
    let ts = if method == "chat.update" {
        let ts = p["ts"].as_str().ok_or("message_not_found")?.to_owned();
        if !s.posted.iter().any(|m| m.ts == ts && m.channel == channel) {
            return Err("message_not_found");
        }
        ts
    } else {
        s.next_ts()
    };
    let posted = Posted {
        channel: channel.to_owned(),
        ts: ts.clone(),
        thread_ts: thread_ts.clone(),
        text: text.clone(),
        blocks,
        at: Instant::now(),
    };
    let mut msg =
        json!({"type": "message", "text": text, "user": BOT_USER, "bot_id": "BBOT", "ts": ts});
    if let Some(t) = &thread_ts {
        msg["thread_ts"] = json!(t);
    }
    if method == "chat.update" {
        s.updates.push(posted);
        for m in s.history.iter_mut().filter(|m| m["ts"] == ts.as_str()) {
            m["text"] = json!(text);
        }
    } else {
        s.posted.push(posted);
        let mut stored = msg.clone();
        stored["channel"] = json!(channel);
        // Sent as a JSON object, or as a JSON string in a form body.
        stored["metadata"] = match &p["metadata"] {
            Value::String(text) => serde_json::from_str(text).unwrap_or(Value::Null),
            other => other.clone(),
        };
        s.history.push(stored);
    }
    Ok(ok(json!({"channel": channel, "ts": ts, "message": msg})))
}
