//! The REST half of the fake Discord (`/api/v10/...`): the calls the bot makes, Discord's error
//! envelopes (`{"message","code"}`, 429 with `retry_after` and `X-RateLimit-*` headers), and the
//! JSON objects (users, channels, messages) shared with the gateway half.

// Handlers return the finished error response early; its size does not matter in a test fake.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use serde_json::{Value, json};

use super::fake::{Call, DiscordState, Fault, SentMessage};

pub const BOT_ID: u64 = 900_000_000_000_000_001;
pub const BOT_NAME: &str = "hermes-test";
pub const APPLICATION_ID: u64 = 900_000_000_000_000_002;
/// The bot's managed role in the test server.
pub const BOT_ROLE: u64 = 900_000_000_000_000_003;
pub const GUILD: u64 = 800_000_000_000_000_001;
/// A text channel of the test server.
pub const CHANNEL: u64 = 800_000_000_000_000_002;
/// Discord's epoch (2015-01-01T00:00:00Z) in Unix milliseconds.
const EPOCH_MS: u64 = 1_420_070_400_000;

pub type St = Arc<Mutex<DiscordState>>;

pub fn lock(st: &St) -> std::sync::MutexGuard<'_, DiscordState> {
    st.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fresh snowflake: creation time in the top bits, a counter below.
pub fn snowflake(st: &mut DiscordState) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(EPOCH_MS);
    st.counter += 1;
    ((now - EPOCH_MS) << 22) | (st.counter & 0x3f_ffff)
}

pub fn user(id: u64, name: &str, bot: bool) -> Value {
    json!({
        "id": id.to_string(), "username": name, "discriminator": "0", "global_name": null,
        "avatar": null, "bot": bot, "public_flags": 0,
    })
}

pub fn bot_user() -> Value {
    let mut u = user(BOT_ID, BOT_NAME, true);
    u["verified"] = json!(true);
    u["mfa_enabled"] = json!(false);
    u["flags"] = json!(0);
    u
}

/// A guild member object for `user` (as embedded in MESSAGE_CREATE, without `user`).
pub fn member(roles: &[u64]) -> Value {
    json!({
        "roles": roles.iter().map(u64::to_string).collect::<Vec<_>>(),
        "joined_at": "2024-01-01T00:00:00.000000+00:00", "deaf": false, "mute": false,
        "flags": 0, "nick": null, "pending": false,
    })
}

pub fn text_channel(id: u64) -> Value {
    json!({"id": id.to_string(), "type": 0, "guild_id": GUILD.to_string(), "name": "general",
           "position": 0, "permission_overwrites": [], "nsfw": false, "parent_id": null})
}

pub fn dm_channel(id: u64, recipient: &Value) -> Value {
    json!({"id": id.to_string(), "type": 1, "recipients": [recipient], "last_message_id": null})
}

pub fn thread_channel(id: u64, parent: u64, owner: u64, name: &str) -> Value {
    json!({
        "id": id.to_string(), "type": 11, "guild_id": GUILD.to_string(), "name": name,
        "parent_id": parent.to_string(), "owner_id": owner.to_string(), "position": 0,
        "permission_overwrites": [], "nsfw": false, "message_count": 0, "member_count": 1,
        "thread_metadata": {"archived": false, "auto_archive_duration": 1440,
            "archive_timestamp": "2024-05-01T10:00:00.000000+00:00", "locked": false},
    })
}

/// A message object as the API returns it and MESSAGE_CREATE carries it.
pub fn message(id: u64, channel: u64, author: Value, content: &str) -> Value {
    json!({
        "id": id.to_string(), "channel_id": channel.to_string(), "author": author,
        "content": content, "timestamp": "2024-05-01T10:00:00.000000+00:00",
        "edited_timestamp": null, "tts": false, "mention_everyone": false, "mentions": [],
        "mention_roles": [], "attachments": [], "embeds": [], "pinned": false, "type": 0,
        "flags": 0, "components": [],
    })
}

fn error(status: u16, code: u64, message: &str) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        axum::Json(json!({"message": message, "code": code})),
    )
        .into_response()
}

fn fault_response(fault: Fault) -> Response {
    match fault {
        Fault::RateLimited(secs) => {
            let mut r = (
                StatusCode::TOO_MANY_REQUESTS,
                axum::Json(
                    json!({"message": "You are being rate limited.", "retry_after": secs, "global": false}),
                ),
            )
                .into_response();
            let h = r.headers_mut();
            let ceil = secs.ceil().to_string();
            h.insert("retry-after", ceil.parse().unwrap());
            h.insert("x-ratelimit-limit", "5".parse().unwrap());
            h.insert("x-ratelimit-remaining", "0".parse().unwrap());
            h.insert(
                "x-ratelimit-reset-after",
                format!("{secs:.3}").parse().unwrap(),
            );
            h.insert("x-ratelimit-bucket", "fake-bucket".parse().unwrap());
            h.insert("x-ratelimit-scope", "user".parse().unwrap());
            r
        }
        Fault::Status(status, code, message) => error(status, code, &message),
    }
}

/// Record the call, check the token, apply an injected fault. `Err` is the response to give.
fn admit(
    st: &St,
    op: &str,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Result<(), Response> {
    let mut s = lock(st);
    let authorized = op == "callback"
        || headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v == format!("Bot {}", s.token));
    let fault = s.faults.get_mut(op).and_then(|q| q.pop_front());
    let status = match (&fault, authorized) {
        (_, false) => 401,
        (Some(Fault::RateLimited(_)), _) => 429,
        (Some(Fault::Status(code, ..)), _) => *code,
        (None, true) => 200,
    };
    s.calls.push(Call {
        op: op.to_owned(),
        method: method.to_string(),
        path: path.to_owned(),
        status,
        at: Instant::now(),
    });
    if !authorized {
        return Err(error(401, 0, "401: Unauthorized"));
    }
    match fault {
        Some(f) => Err(fault_response(f)),
        None => Ok(()),
    }
}

fn parse_id(raw: &str) -> Result<u64, Response> {
    raw.parse()
        .map_err(|_| error(404, 10003, "Unknown Channel"))
}

async fn gateway(State(st): State<St>, method: Method, headers: HeaderMap) -> Response {
    if let Err(r) = admit(&st, "gateway", &method, "/gateway", &headers) {
        return r;
    }
    let url = lock(&st).ws_url.clone();
    axum::Json(json!({"url": url})).into_response()
}

async fn gateway_bot(State(st): State<St>, method: Method, headers: HeaderMap) -> Response {
    if let Err(r) = admit(&st, "gateway", &method, "/gateway/bot", &headers) {
        return r;
    }
    let url = lock(&st).ws_url.clone();
    axum::Json(json!({"url": url, "shards": 1, "session_start_limit":
        {"total": 1000, "remaining": 999, "reset_after": 14_400_000, "max_concurrency": 1}}))
    .into_response()
}

async fn me(State(st): State<St>, method: Method, headers: HeaderMap) -> Response {
    if let Err(r) = admit(&st, "me", &method, "/users/@me", &headers) {
        return r;
    }
    axum::Json(bot_user()).into_response()
}

async fn get_channel(
    State(st): State<St>,
    Path(id): Path<String>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = admit(
        &st,
        "get_channel",
        &method,
        &format!("/channels/{id}"),
        &headers,
    ) {
        return r;
    }
    let id = match parse_id(&id) {
        Ok(id) => id,
        Err(r) => return r,
    };
    match lock(&st).channels.get(&id) {
        Some(c) => axum::Json(c.clone()).into_response(),
        None => error(404, 10003, "Unknown Channel"),
    }
}

/// `GET /channels/{id}/messages?after=&limit=`: the `limit` (default 50, at most 100) messages
/// right after `after`, newest first, as Discord returns them.
async fn list_messages(
    State(st): State<St>,
    Path(id): Path<String>,
    axum::extract::Query(q): axum::extract::Query<HashMap<String, String>>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = admit(
        &st,
        "list_messages",
        &method,
        &format!("/channels/{id}/messages"),
        &headers,
    ) {
        return r;
    }
    let id = match parse_id(&id) {
        Ok(id) => id,
        Err(r) => return r,
    };
    let s = lock(&st);
    if !s.channels.contains_key(&id) {
        return error(404, 10003, "Unknown Channel");
    }
    let after: u64 = q.get("after").and_then(|a| a.parse().ok()).unwrap_or(0);
    let limit: usize = q
        .get("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(50)
        .clamp(1, 100);
    let mut found: Vec<(u64, Value)> = s
        .messages
        .iter()
        .filter(|(mid, m)| **mid > after && m["channel_id"].as_str() == Some(&id.to_string()))
        .map(|(mid, m)| (*mid, m.clone()))
        .collect();
    found.sort_by_key(|(mid, _)| *mid);
    found.truncate(limit);
    found.reverse();
    axum::Json(found.into_iter().map(|(_, m)| m).collect::<Vec<_>>()).into_response()
}

async fn get_member(
    State(st): State<St>,
    Path((guild, uid)): Path<(String, String)>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = admit(
        &st,
        "get_member",
        &method,
        &format!("/guilds/{guild}/members/{uid}"),
        &headers,
    ) {
        return r;
    }
    let roles = if uid == BOT_ID.to_string() {
        vec![BOT_ROLE]
    } else {
        vec![]
    };
    let mut m = member(&roles);
    m["user"] = if uid == BOT_ID.to_string() {
        bot_user()
    } else {
        user(uid.parse().unwrap_or(1), "someone", false)
    };
    axum::Json(m).into_response()
}

async fn create_message(
    State(st): State<St>,
    Path(channel): Path<String>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(r) = admit(
        &st,
        "create_message",
        &method,
        &format!("/channels/{channel}/messages"),
        &headers,
    ) {
        return r;
    }
    let channel = match parse_id(&channel) {
        Ok(id) => id,
        Err(r) => return r,
    };
    // With files, the JSON travels as the `payload_json` part of a multipart form.
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let mut files = Vec::new();
    let body = if ct.starts_with("multipart/form-data") {
        let mut parts = serde_json::Map::new();
        crate::support::http::parse_multipart(&ct, &body, &mut parts);
        for (name, part) in &parts {
            if name.starts_with("files[") {
                let file_name = part["file_name"].as_str().unwrap_or_default().to_owned();
                files.push((file_name, part["size"].as_u64().unwrap_or(0) as usize));
            }
        }
        match parts.get("payload_json") {
            Some(Value::String(p)) => Bytes::from(p.clone()),
            Some(other) => Bytes::from(other.to_string()),
            None => Bytes::new(),
        }
    } else {
        body
    };
    let Ok(req) = serde_json::from_slice::<Value>(&body) else {
        return error(400, 50109, "The request body contains invalid JSON.");
    };
    let content = req["content"].as_str().unwrap_or_default().to_owned();
    if content.chars().count() > 2000 {
        return (StatusCode::BAD_REQUEST, axum::Json(json!({"message": "Invalid Form Body", "code": 50035,
            "errors": {"content": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}]}}})))
            .into_response();
    }
    if content.is_empty() && files.is_empty() {
        return error(400, 50006, "Cannot send an empty message");
    }
    let mut s = lock(&st);
    if !s.channels.contains_key(&channel) {
        return error(404, 10003, "Unknown Channel");
    }
    // Like Discord: with `enforce_nonce`, a nonce seen before returns that message again.
    let nonce = req["nonce"].as_str().map(|n| (channel, n.to_owned()));
    if req["enforce_nonce"] == json!(true)
        && let Some(key) = &nonce
        && let Some(id) = s.nonces.get(key)
        && let Some(existing) = s.messages.get(id)
    {
        return axum::Json(existing.clone()).into_response();
    }
    let id = snowflake(&mut s);
    if let Some(key) = nonce {
        s.nonces.insert(key, id);
    }
    let reference = req["message_reference"]["message_id"]
        .as_str()
        .and_then(|m| m.parse().ok());
    let mut msg = message(id, channel, bot_user(), &content);
    msg["components"] = req.get("components").cloned().unwrap_or(json!([]));
    s.sent.push(SentMessage {
        channel_id: channel,
        id,
        content,
        reference,
        components: msg["components"].clone(),
        allowed_mentions: req.get("allowed_mentions").cloned().unwrap_or(Value::Null),
        files,
        at: Instant::now(),
    });
    s.messages.insert(id, msg.clone());
    drop(s);
    axum::Json(msg).into_response()
}

async fn edit_message(
    State(st): State<St>,
    Path((channel, mid)): Path<(String, String)>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(r) = admit(
        &st,
        "edit_message",
        &method,
        &format!("/channels/{channel}/messages/{mid}"),
        &headers,
    ) {
        return r;
    }
    let (Ok(channel), Ok(mid)) = (parse_id(&channel), mid.parse::<u64>()) else {
        return error(404, 10008, "Unknown Message");
    };
    let req: Value = serde_json::from_slice(&body).unwrap_or_default();
    let mut s = lock(&st);
    let Some(msg) = s
        .messages
        .get_mut(&mid)
        .filter(|m| m["channel_id"].as_str().and_then(|c| c.parse::<u64>().ok()) == Some(channel))
    else {
        return error(404, 10008, "Unknown Message");
    };
    if let Some(c) = req["content"].as_str() {
        msg["content"] = json!(c);
    }
    if let Some(c) = req.get("components") {
        msg["components"] = c.clone();
    }
    let msg = msg.clone();
    s.edits.push(SentMessage {
        channel_id: channel,
        id: mid,
        content: msg["content"].as_str().unwrap_or_default().to_owned(),
        reference: None,
        components: msg["components"].clone(),
        allowed_mentions: Value::Null,
        files: Vec::new(),
        at: Instant::now(),
    });
    axum::Json(msg).into_response()
}

async fn typing(
    State(st): State<St>,
    Path(channel): Path<String>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = admit(
        &st,
        "typing",
        &method,
        &format!("/channels/{channel}/typing"),
        &headers,
    ) {
        return r;
    }
    let Ok(channel) = parse_id(&channel) else {
        return error(404, 10003, "Unknown Channel");
    };
    let mut s = lock(&st);
    if !s.channels.contains_key(&channel) {
        return error(404, 10003, "Unknown Channel");
    }
    s.typing.push(channel);
    StatusCode::NO_CONTENT.into_response()
}

async fn start_thread(
    State(st): State<St>,
    Path((channel, mid)): Path<(String, String)>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(r) = admit(
        &st,
        "start_thread",
        &method,
        &format!("/channels/{channel}/messages/{mid}/threads"),
        &headers,
    ) {
        return r;
    }
    let (Ok(channel), Ok(mid)) = (parse_id(&channel), mid.parse::<u64>()) else {
        return error(404, 10008, "Unknown Message");
    };
    let req: Value = serde_json::from_slice(&body).unwrap_or_default();
    let name = req["name"].as_str().unwrap_or("thread").to_owned();
    let thread = {
        let mut s = lock(&st);
        if s.channels.contains_key(&mid) {
            return error(
                400,
                160004,
                "A thread has already been created for this message",
            );
        }
        if !s.messages.get(&mid).is_some_and(|m| {
            m["channel_id"].as_str().and_then(|c| c.parse::<u64>().ok()) == Some(channel)
        }) {
            return error(404, 10008, "Unknown Message");
        }
        let thread = thread_channel(mid, channel, BOT_ID, &name);
        s.channels.insert(mid, thread.clone());
        s.threads_created.push((channel, mid, name));
        thread
    };
    let mut event = thread.clone();
    event["newly_created"] = json!(true);
    super::fake::dispatch_to(&st, "THREAD_CREATE", event);
    (StatusCode::CREATED, axum::Json(thread)).into_response()
}

async fn callback(
    State(st): State<St>,
    Path((id, token)): Path<(String, String)>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(r) = admit(
        &st,
        "callback",
        &method,
        &format!("/interactions/{id}/***/callback"),
        &headers,
    ) {
        return r;
    }
    let req: Value = serde_json::from_slice(&body).unwrap_or_default();
    let mut s = lock(&st);
    let Some(expected) = id
        .parse::<u64>()
        .ok()
        .and_then(|i| s.interaction_tokens.get(&i).cloned())
    else {
        return error(404, 10062, "Unknown interaction");
    };
    if expected != token {
        return error(401, 50027, "Invalid Webhook Token");
    }
    let id: u64 = id.parse().unwrap_or(0);
    if s.callbacks.iter().any(|(i, _)| *i == id) {
        return error(400, 40060, "Interaction has already been acknowledged.");
    }
    s.callbacks.push((id, req["type"].as_u64().unwrap_or(0)));
    StatusCode::NO_CONTENT.into_response()
}

pub fn router(st: St) -> Router {
    Router::new()
        .route("/api/v10/gateway", get(gateway))
        .route("/api/v10/gateway/bot", get(gateway_bot))
        .route("/api/v10/users/@me", get(me))
        .route("/api/v10/channels/{id}", get(get_channel))
        .route(
            "/api/v10/channels/{id}/messages",
            post(create_message).get(list_messages),
        )
        .route("/api/v10/channels/{id}/messages/{mid}", patch(edit_message))
        .route("/api/v10/channels/{id}/typing", post(typing))
        .route(
            "/api/v10/channels/{id}/messages/{mid}/threads",
            post(start_thread),
        )
        .route("/api/v10/guilds/{guild}/members/{user}", get(get_member))
        .route(
            "/api/v10/interactions/{id}/{token}/callback",
            post(callback),
        )
        .with_state(st)
}
