//! Bot API method implementations and request handling behind `fake::FakeTelegram`:
//! state, parameter decoding, fault injection, the `getUpdates` long poll and the send/edit
//! checks Telegram performs.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::to_bytes;
use axum::extract::{ConnectInfo, Request, State as AxState};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

use super::fake::{
    BOT_ID, BOT_USERNAME, Call, CallbackAnswer, ChatAction, Fault, Inbound, SentFile, SentMessage,
};
use super::html::{utf16_len, visible_text};
use crate::support::http::{ConnCtl, parse_multipart, parse_pairs, pct_decode};

const CONFLICT: &str = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running";
const WEBHOOK_ACTIVE: &str = "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first";
const DEFAULT_EXCLUDED: &[&str] = &["chat_member", "message_reaction", "message_reaction_count"];

pub(super) struct StoredMsg {
    pub(super) json: Value,
    pub(super) raw_text: String,
    pub(super) parse_mode: Option<String>,
}

#[derive(Default)]
pub(super) struct St {
    pub(super) token: String,
    pub(super) pending: VecDeque<Value>,
    pub(super) redeliver: VecDeque<Value>,
    pub(super) history: HashMap<i64, Value>,
    pub(super) next_update_id: i64,
    pub(super) confirmed_below: i64,
    pub(super) allowed: Option<Vec<String>>,
    pub(super) poll_gen: u64,
    /// A long poll that neither returns nor answers (the connection stays open but deaf).
    pub(super) silent_gen: Option<u64>,
    pub(super) next_msg_id: HashMap<i64, i64>,
    pub(super) messages: HashMap<(i64, i64), StoredMsg>,
    pub(super) chats: HashMap<i64, Value>,
    pub(super) callback_ids: HashSet<String>,
    pub(super) next_callback: u64,
    pub(super) files: HashMap<String, Vec<u8>>,
    pub(super) faults: HashMap<String, VecDeque<Fault>>,
    pub(super) always: HashMap<String, Fault>,
    pub(super) sent: Vec<SentMessage>,
    pub(super) edits: Vec<SentMessage>,
    pub(super) calls: Vec<Call>,
    pub(super) actions: Vec<ChatAction>,
    pub(super) answers: Vec<CallbackAnswer>,
    pub(super) sent_files: Vec<SentFile>,
    pub(super) commands: Value,
    /// What `setWebhook` registered (`webhook.rs`), and the POSTs made to it.
    pub(super) webhook: Option<super::webhook::Webhook>,
    pub(super) webhook_posts: Vec<super::webhook::WebhookPost>,
}

pub(super) struct Inner {
    pub(super) st: Mutex<St>,
    pub(super) notify: Notify,
}

struct ApiErr(u16, String, Option<u64>);
type ApiResult = Result<Value, ApiErr>;

fn bad(desc: &str) -> ApiErr {
    ApiErr(400, format!("Bad Request: {desc}"), None)
}

pub(super) fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

pub(super) fn bot_user() -> Value {
    json!({"id": BOT_ID, "is_bot": true, "first_name": "Hermes", "username": BOT_USERNAME})
}

pub(super) fn user(user_id: i64, first_name: &str) -> Value {
    json!({"id": user_id, "is_bot": false, "first_name": first_name,
           "username": format!("user{user_id}"), "language_code": "en"})
}

pub(super) fn group_chat(chat_id: i64, forum: bool) -> Value {
    let mut c =
        json!({"id": chat_id, "type": "supergroup", "title": format!("Test group {chat_id}")});
    if forum {
        c["is_forum"] = json!(true);
    }
    c
}

fn p_i64(p: &Value, k: &str) -> Option<i64> {
    p.get(k)
        .and_then(|v| v.as_i64().or_else(|| v.as_str()?.trim().parse().ok()))
}

fn p_str(p: &Value, k: &str) -> Option<String> {
    match p.get(k)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        v => Some(v.to_string()),
    }
}

fn p_bool(p: &Value, k: &str) -> bool {
    p.get(k)
        .is_some_and(|v| v.as_bool().unwrap_or(v.as_str() == Some("true")))
}

impl St {
    pub(super) fn chat(&self, chat_id: i64) -> Value {
        self.chats.get(&chat_id).cloned().unwrap_or_else(|| {
            if chat_id > 0 {
                json!({"id": chat_id, "type": "private", "first_name": "User"})
            } else {
                group_chat(chat_id, false)
            }
        })
    }

    pub(super) fn next_mid(&mut self, chat_id: i64) -> i64 {
        let n = self.next_msg_id.entry(chat_id).or_insert(1000);
        *n += 1;
        *n - 1
    }

    pub(super) fn remember(&mut self, msg: &Value, parse_mode: Option<String>) {
        let (Some(chat_id), Some(mid)) = (msg["chat"]["id"].as_i64(), msg["message_id"].as_i64())
        else {
            return;
        };
        self.chats
            .entry(chat_id)
            .or_insert_with(|| msg["chat"].clone());
        let next = self.next_msg_id.entry(chat_id).or_insert(1000);
        *next = (*next).max(mid + 1);
        let raw_text = msg["text"]
            .as_str()
            .or(msg["caption"].as_str())
            .unwrap_or("")
            .into();
        let mut json = msg.clone();
        if let Some(o) = json.as_object_mut() {
            o.remove("reply_to_message");
        }
        self.messages.insert(
            (chat_id, mid),
            StoredMsg {
                json,
                raw_text,
                parse_mode,
            },
        );
    }

    pub(super) fn push(&mut self, mut update: Value) -> Inbound {
        let id = update["update_id"].as_i64().unwrap_or(self.next_update_id);
        update["update_id"] = json!(id);
        self.next_update_id = self.next_update_id.max(id + 1);
        let mut message_id = 0;
        let mut callback_query_id = None;
        for key in [
            "message",
            "edited_message",
            "channel_post",
            "edited_channel_post",
        ] {
            if update[key].is_object() {
                message_id = update[key]["message_id"].as_i64().unwrap_or(0);
                self.remember(&update[key].clone(), None);
            }
        }
        if let Some(cq) = update["callback_query"].as_object() {
            message_id = cq
                .get("message")
                .and_then(|m| m["message_id"].as_i64())
                .unwrap_or(0);
            callback_query_id = cq.get("id").and_then(Value::as_str).map(str::to_string);
            self.callback_ids.extend(callback_query_id.clone());
        }
        self.history.insert(id, update.clone());
        let pos = self
            .pending
            .iter()
            .position(|u| u["update_id"].as_i64() > Some(id));
        self.pending
            .insert(pos.unwrap_or(self.pending.len()), update);
        Inbound {
            update_id: id,
            message_id,
            callback_query_id,
        }
    }

    fn confirm(&mut self, offset: i64) {
        if offset > 0 {
            self.pending
                .retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
            self.confirmed_below = self.confirmed_below.max(offset);
        } else if offset < 0 {
            let keep = offset.unsigned_abs() as usize;
            while self.pending.len() > keep {
                let dropped = self.pending.pop_front();
                let id = dropped.and_then(|u| u["update_id"].as_i64()).unwrap_or(0);
                self.confirmed_below = self.confirmed_below.max(id + 1);
            }
        }
    }

    fn deliverable(&mut self, limit: usize) -> Vec<Value> {
        let allowed = self.allowed.clone();
        let ok = |u: &Value| {
            let kind = u
                .as_object()
                .and_then(|o| o.keys().find(|k| *k != "update_id").cloned());
            let kind = kind.unwrap_or_default();
            match &allowed {
                Some(list) => list.contains(&kind),
                None => !DEFAULT_EXCLUDED.contains(&kind.as_str()),
            }
        };
        self.pending.retain(ok);
        let mut out: Vec<Value> = self.redeliver.drain(..).collect();
        out.extend(
            self.pending
                .iter()
                .take(limit.saturating_sub(out.len()))
                .cloned(),
        );
        out
    }

    fn take_fault(&mut self, method: &str, params: &Value) -> Option<Fault> {
        let has_pm = p_str(params, "parse_mode").is_some_and(|s| !s.is_empty());
        let applies = |f: &Fault| has_pm || !matches!(f, Fault::CantParseEntities);
        if let Some(q) = self.faults.get_mut(method)
            && q.front().is_some_and(applies)
        {
            return q.pop_front();
        }
        self.always.get(method).filter(|f| applies(f)).cloned()
    }

    /// Checks text for sendMessage/editMessageText; returns the visible text.
    fn check_text(text: &str, pm: Option<&str>, too_long: &str) -> Result<String, ApiErr> {
        if text.is_empty() {
            return Err(bad("message text is empty"));
        }
        let visible = visible_text(text, pm).map_err(|reason| match reason {
            r if r.starts_with("unsupported parse_mode") => bad("unsupported parse_mode"),
            r => bad(&format!("can't parse entities: {r}")),
        })?;
        if visible.trim().is_empty() {
            return Err(bad("message text is empty"));
        }
        if utf16_len(&visible) > 4096 {
            return Err(bad(too_long));
        }
        Ok(visible)
    }

    fn chat_id(params: &Value) -> Result<i64, ApiErr> {
        match p_str(params, "chat_id") {
            None => Err(bad("chat_id is empty")),
            Some(s) => s.trim().parse().map_err(|_| bad("chat not found")),
        }
    }

    fn send_message(&mut self, p: &Value) -> ApiResult {
        let chat_id = Self::chat_id(p)?;
        let text = p_str(p, "text").unwrap_or_default();
        let parse_mode = p_str(p, "parse_mode").filter(|s| !s.is_empty());
        let visible = Self::check_text(&text, parse_mode.as_deref(), "message is too long")?;
        let (mid, reply_to, thread_id, reply_markup, msg) = self.new_bot_message(chat_id, p)?;
        let mut msg = msg;
        msg["text"] = json!(visible);
        self.remember(&msg, parse_mode.clone());
        if let Some(m) = self.messages.get_mut(&(chat_id, mid)) {
            m.raw_text = text.clone();
        }
        self.sent.push(SentMessage {
            chat_id,
            message_id: mid,
            text,
            parse_mode,
            visible_text: visible,
            reply_to,
            thread_id,
            reply_markup,
            at: Instant::now(),
        });
        Ok(msg)
    }

    /// Common part of every bot-sent message: id, chat, reply and thread handling.
    #[allow(clippy::type_complexity)]
    fn new_bot_message(
        &mut self,
        chat_id: i64,
        p: &Value,
    ) -> Result<(i64, Option<i64>, Option<i64>, Option<Value>, Value), ApiErr> {
        let rp = p.get("reply_parameters").filter(|v| v.is_object());
        let reply_to = rp
            .and_then(|r| p_i64(r, "message_id"))
            .or(p_i64(p, "reply_to_message_id"));
        let lenient = rp.is_some_and(|r| p_bool(r, "allow_sending_without_reply"))
            || p_bool(p, "allow_sending_without_reply");
        let replied = reply_to.and_then(|r| self.messages.get(&(chat_id, r)));
        if reply_to.is_some() && replied.is_none() && !lenient {
            return Err(bad("message to be replied not found"));
        }
        let replied = replied.map(|m| m.json.clone());
        let thread_id = p_i64(p, "message_thread_id");
        let reply_markup = p.get("reply_markup").filter(|v| !v.is_null()).cloned();
        let mid = self.next_mid(chat_id);
        let mut msg = json!({"message_id": mid, "from": bot_user(), "chat": self.chat(chat_id),
                             "date": now_unix()});
        if let Some(r) = replied {
            msg["reply_to_message"] = r;
        }
        if let Some(t) = thread_id {
            msg["message_thread_id"] = json!(t);
            msg["is_topic_message"] = json!(true);
        }
        if let Some(m) = reply_markup
            .as_ref()
            .filter(|m| m.get("inline_keyboard").is_some())
        {
            msg["reply_markup"] = m.clone();
        }
        Ok((mid, reply_to, thread_id, reply_markup, msg))
    }

    fn edit_message_text(&mut self, p: &Value) -> ApiResult {
        if p.get("inline_message_id").is_some() {
            return Ok(json!(true));
        }
        let chat_id = Self::chat_id(p)?;
        let mid =
            p_i64(p, "message_id").ok_or_else(|| bad("message identifier is not specified"))?;
        let text = p_str(p, "text").unwrap_or_default();
        let parse_mode = p_str(p, "parse_mode").filter(|s| !s.is_empty());
        let visible = Self::check_text(&text, parse_mode.as_deref(), "MESSAGE_TOO_LONG")?;
        let reply_markup = p.get("reply_markup").filter(|v| !v.is_null()).cloned();
        let stored = self.messages.get_mut(&(chat_id, mid));
        let stored = stored.ok_or_else(|| bad("message to edit not found"))?;
        if stored.json["from"]["id"].as_i64() != Some(BOT_ID) {
            return Err(bad("message can't be edited"));
        }
        let old_markup = stored.json.get("reply_markup").cloned();
        if stored.raw_text == text && stored.parse_mode == parse_mode && old_markup == reply_markup
        {
            return Err(bad(
                "message is not modified: specified new message content and reply \
                            markup are exactly the same as a current content and reply markup of the message",
            ));
        }
        stored.raw_text.clone_from(&text);
        stored.parse_mode.clone_from(&parse_mode);
        let msg = &mut stored.json;
        msg["text"] = json!(visible);
        msg["edit_date"] = json!(now_unix());
        if let Some(o) = msg.as_object_mut() {
            o.remove("reply_markup");
        }
        if let Some(m) = reply_markup
            .as_ref()
            .filter(|m| m.get("inline_keyboard").is_some())
        {
            msg["reply_markup"] = m.clone();
        }
        let msg = msg.clone();
        self.edits.push(SentMessage {
            chat_id,
            message_id: mid,
            text,
            parse_mode,
            visible_text: visible,
            reply_to: None,
            thread_id: msg["message_thread_id"].as_i64(),
            reply_markup,
            at: Instant::now(),
        });
        Ok(msg)
    }

    fn send_file(&mut self, method: &str, p: &Value) -> ApiResult {
        let chat_id = Self::chat_id(p)?;
        let field = if method == "sendphoto" {
            "photo"
        } else {
            "document"
        };
        let mut file = p.get(field);
        if let Some(name) = file
            .and_then(Value::as_str)
            .and_then(|s| s.strip_prefix("attach://"))
        {
            file = p.get(name);
        }
        let (file_name, size) = match file {
            Some(Value::Object(f)) => (
                f.get("file_name")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                f.get("size").and_then(Value::as_u64).unwrap_or(0) as usize,
            ),
            Some(Value::String(id)) => (None, self.files.get(id).map_or(0, Vec::len)),
            _ => return Err(bad(&format!("there is no {field} in the request"))),
        };
        let caption = p_str(p, "caption");
        let parse_mode = p_str(p, "parse_mode").filter(|s| !s.is_empty());
        if let Some(c) = &caption {
            let visible = visible_text(c, parse_mode.as_deref())
                .map_err(|r| bad(&format!("can't parse entities: {r}")))?;
            if utf16_len(&visible) > 1024 {
                return Err(bad("message caption is too long"));
            }
        }
        let (mid, _, _, _, mut msg) = self.new_bot_message(chat_id, p)?;
        let file_id = format!("sent_{chat_id}_{mid}");
        let file =
            json!({"file_id": file_id, "file_unique_id": format!("u{file_id}"), "file_size": size});
        if field == "photo" {
            let mut photo = file;
            photo["width"] = json!(640);
            photo["height"] = json!(480);
            msg["photo"] = json!([photo]);
        } else {
            let mut doc = file;
            doc["file_name"] = json!(file_name.clone().unwrap_or_else(|| "file".into()));
            msg["document"] = doc;
        }
        if let Some(c) = &caption {
            msg["caption"] = json!(c);
        }
        self.remember(&msg, parse_mode);
        let at = Instant::now();
        let method = method.to_string();
        self.sent_files.push(SentFile {
            method,
            chat_id,
            message_id: mid,
            file_name,
            size,
            caption,
            at,
        });
        Ok(msg)
    }

    fn dispatch(&mut self, method: &str, p: &Value) -> ApiResult {
        match method {
            "getme" => Ok(json!({"id": BOT_ID, "is_bot": true, "first_name": "Hermes",
                "username": BOT_USERNAME, "can_join_groups": true,
                "can_read_all_group_messages": false, "supports_inline_queries": false,
                "can_connect_to_business": false, "has_main_web_app": false})),
            "getwebhookinfo" => Ok(self.webhook_info()),
            "setwebhook" => self
                .set_webhook(p)
                .map_err(|(code, d)| ApiErr(code, d, None)),
            "deletewebhook" => {
                self.webhook = None;
                if p_bool(p, "drop_pending_updates") {
                    let last = self.pending.back().and_then(|u| u["update_id"].as_i64());
                    self.confirm(last.map_or(0, |id| id + 1));
                }
                Ok(json!(true))
            }
            "setmycommands" => {
                let cmds = p.get("commands").cloned().unwrap_or(json!([]));
                for c in cmds
                    .as_array()
                    .ok_or_else(|| bad("can't parse commands JSON object"))?
                {
                    let name = c["command"].as_str().unwrap_or("");
                    let ok = |ch: char| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_';
                    if name.is_empty() || name.len() > 32 || !name.chars().all(ok) {
                        return Err(bad("BOT_COMMAND_INVALID"));
                    }
                    let desc_len = c["description"].as_str().map_or(0, |d| d.chars().count());
                    if !(1..=256).contains(&desc_len) {
                        return Err(bad("command description is empty"));
                    }
                }
                self.commands = cmds;
                Ok(json!(true))
            }
            "getmycommands" => Ok(if self.commands.is_null() {
                json!([])
            } else {
                self.commands.clone()
            }),
            "sendmessage" => self.send_message(p),
            "editmessagetext" => self.edit_message_text(p),
            "senddocument" | "sendphoto" => self.send_file(method, p),
            "sendchataction" => {
                const ACTIONS: &str = "typing upload_photo record_video upload_video record_voice \
                    upload_voice upload_document choose_sticker find_location record_video_note upload_video_note";
                let chat_id = Self::chat_id(p)?;
                let action = p_str(p, "action").unwrap_or_default();
                if !ACTIONS.split(' ').any(|a| a == action) {
                    return Err(bad("wrong parameter action in request"));
                }
                let (thread_id, at) = (p_i64(p, "message_thread_id"), Instant::now());
                self.actions.push(ChatAction {
                    chat_id,
                    action,
                    thread_id,
                    at,
                });
                Ok(json!(true))
            }
            "answercallbackquery" => {
                let id = p_str(p, "callback_query_id").unwrap_or_default();
                if !self.callback_ids.remove(&id) {
                    return Err(bad(
                        "query is too old and response timeout expired or query id is invalid",
                    ));
                }
                self.answers.push(CallbackAnswer {
                    callback_query_id: id,
                    text: p_str(p, "text"),
                    show_alert: p_bool(p, "show_alert"),
                    at: Instant::now(),
                });
                Ok(json!(true))
            }
            "getfile" => {
                let id = p_str(p, "file_id").unwrap_or_default();
                let size = self
                    .files
                    .get(&id)
                    .ok_or_else(|| bad("invalid file_id"))?
                    .len();
                Ok(
                    json!({"file_id": id, "file_unique_id": format!("u{id}"), "file_size": size,
                          "file_path": format!("documents/{id}")}),
                )
            }
            _ => Err(ApiErr(404, "Not Found".into(), None)),
        }
    }
}

fn error_response(ApiErr(code, desc, retry_after): ApiErr) -> Response {
    let mut body = json!({"ok": false, "error_code": code, "description": desc});
    if let Some(r) = retry_after {
        body["parameters"] = json!({"retry_after": r});
    }
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(body)).into_response()
}

pub(super) async fn handle(
    AxState(inner): AxState<Arc<Inner>>,
    ConnectInfo(conn): ConnectInfo<ConnCtl>,
    req: Request,
) -> Response {
    let (parts, body) = req.into_parts();
    let path = pct_decode(parts.uri.path(), false);
    let token = inner
        .st
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .token
        .clone();
    let unauthorized = || error_response(ApiErr(401, "Unauthorized".into(), None));
    let not_found = || error_response(ApiErr(404, "Not Found".into(), None));
    if let Some(rest) = path.strip_prefix("/file/bot") {
        let Some(file_path) = rest
            .strip_prefix(token.as_str())
            .and_then(|r| r.strip_prefix('/'))
        else {
            return unauthorized();
        };
        let st = inner.st.lock().unwrap_or_else(|e| e.into_inner());
        let file = file_path
            .strip_prefix("documents/")
            .and_then(|id| st.files.get(id));
        return match file {
            Some(bytes) => (
                [(header::CONTENT_TYPE, "application/octet-stream")],
                bytes.clone(),
            )
                .into_response(),
            None => not_found(),
        };
    }
    let Some((tok, method)) = path.strip_prefix("/bot").and_then(|r| r.split_once('/')) else {
        return not_found();
    };
    if tok != token {
        return unauthorized();
    }
    let method = method.trim_end_matches('/').to_ascii_lowercase();
    let mut params = Map::new();
    parse_pairs(parts.uri.query().unwrap_or(""), &mut params);
    let ct = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let bytes = to_bytes(body, 64 << 20).await.unwrap_or_default();
    if ct.starts_with("multipart/form-data") {
        parse_multipart(&ct, &bytes, &mut params);
    } else if ct.starts_with("application/x-www-form-urlencoded") {
        parse_pairs(&String::from_utf8_lossy(&bytes), &mut params);
    } else if let Ok(Value::Object(o)) = serde_json::from_slice::<Value>(&bytes) {
        params.extend(o);
    }
    let params = Value::Object(params);
    let (idx, fault) = {
        let mut st = inner.st.lock().unwrap_or_else(|e| e.into_inner());
        let call = Call {
            method: method.clone(),
            params: params.clone(),
            at: Instant::now(),
            status: 0,
        };
        st.calls.push(call);
        (st.calls.len() - 1, st.take_fault(&method, &params))
    };
    let result = match fault {
        Some(Fault::Delay(d)) => {
            tokio::time::sleep(d).await;
            None
        }
        Some(Fault::DropConnection) => {
            conn.kill();
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
        Some(Fault::RetryAfter(s)) => Some(Err(ApiErr(
            429,
            format!("Too Many Requests: retry after {s}"),
            Some(s),
        ))),
        Some(Fault::Conflict) => Some(Err(ApiErr(409, CONFLICT.into(), None))),
        Some(Fault::CantParseEntities) => Some(Err(bad(
            "can't parse entities: Can't find end of the entity starting at byte offset 0",
        ))),
        Some(Fault::ServerError(code)) => {
            Some(Err(ApiErr(code, "Internal Server Error".into(), None)))
        }
        Some(Fault::Api(code, desc)) => Some(Err(ApiErr(code, desc, None))),
        None => None,
    };
    let result = match result {
        Some(r) => r,
        None if method == "getupdates" => get_updates(&inner, &params).await,
        None => {
            let r = inner
                .st
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .dispatch(&method, &params);
            inner.notify.notify_waiters();
            r
        }
    };
    let response = match result {
        Ok(v) if method == "getupdates" => raw_json(json!({"ok": true, "result": v})),
        Ok(v) => axum::Json(json!({"ok": true, "result": v})).into_response(),
        Err(e) => error_response(e),
    };
    inner.st.lock().unwrap_or_else(|e| e.into_inner()).calls[idx].status =
        response.status().as_u16();
    response
}

/// Text in an update that goes over the wire as invalid UTF-8 (bytes FF FE), as a broken proxy
/// or server might send it.
pub const INVALID_UTF8: &str = "\u{FFFF}invalid-utf8\u{FFFF}";

/// `body` as JSON bytes, with every [`INVALID_UTF8`] replaced by invalid UTF-8.
fn raw_json(body: Value) -> Response {
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    let marker = INVALID_UTF8.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(marker) {
            out.extend_from_slice(b"\xff\xfe");
            i += marker.len();
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    ([(header::CONTENT_TYPE, "application/json")], out).into_response()
}

async fn get_updates(inner: &Inner, p: &Value) -> ApiResult {
    let offset = p_i64(p, "offset").unwrap_or(0);
    let limit = p_i64(p, "limit").unwrap_or(100).clamp(1, 100) as usize;
    let timeout = Duration::from_secs(p_i64(p, "timeout").unwrap_or(0).max(0) as u64);
    let deadline = tokio::time::Instant::now() + timeout;
    let my_gen = {
        let mut st = inner.st.lock().unwrap_or_else(|e| e.into_inner());
        if st.webhook.is_some() {
            return Err(ApiErr(409, WEBHOOK_ACTIVE.into(), None));
        }
        if let Some(list) = p.get("allowed_updates").and_then(Value::as_array) {
            let list: Vec<String> = list
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
            st.allowed = (!list.is_empty()).then_some(list);
        }
        st.confirm(offset);
        st.poll_gen += 1;
        st.poll_gen
    };
    inner.notify.notify_waiters();
    loop {
        let notified = inner.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let deaf = {
            let mut st = inner.st.lock().unwrap_or_else(|e| e.into_inner());
            if st.poll_gen != my_gen {
                return Err(ApiErr(409, CONFLICT.into(), None));
            }
            let deaf = st.silent_gen == Some(my_gen);
            if !deaf {
                let ups = st.deliverable(limit);
                if !ups.is_empty() || tokio::time::Instant::now() >= deadline {
                    return Ok(Value::Array(ups));
                }
            }
            deaf
        };
        if deaf {
            // Hold the request open until a newer poll replaces it.
            notified.as_mut().await;
            continue;
        }
        tokio::select! {
            _ = &mut notified => {}
            _ = tokio::time::sleep_until(deadline) => {}
        }
    }
}
