//! Fake Telegram Bot API server (axum) for integration tests: long-polling `getUpdates`,
//! message sending with Telegram's formatting/length checks, files, and injectable faults
//! (429 retry_after, 409 conflict, can't-parse-entities, 5xx, dropped connections, delays).
//! The method implementations live in `api`, the formatting parser in `html`, webhook
//! registration and delivery in `webhook`.
//!
//! Deviations from the real server, on purpose: `getUpdates` ignores update kinds outside
//! `allowed_updates` at delivery time (the real server filters when updates are created);
//! `redeliver` exists only here; chats never seen are treated as existing (private for positive
//! ids, supergroup for negative ids). Note that teloxide sleeps 10 s after any 5xx answer.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::api::{Inner, St, bot_user, group_chat, now_unix, user};
use super::html::utf16_len;
use crate::support::chat::Buttons;
use crate::support::http;
use crate::support::wait_for;

pub const BOT_ID: i64 = 999;
pub const BOT_USERNAME: &str = "hermes_test_bot";

/// A failure injected into the next call(s) of one method.
#[derive(Clone, Debug)]
pub enum Fault {
    /// 429 "Too Many Requests: retry after N" with `parameters.retry_after`.
    RetryAfter(u64),
    /// 409 "Conflict: terminated by other getUpdates request; ...".
    Conflict,
    /// 400 can't parse entities; only applies to (and is only consumed by) calls with a parse_mode.
    CantParseEntities,
    /// That HTTP status with description "Internal Server Error".
    ServerError(u16),
    /// The connection is closed without any response.
    DropConnection,
    /// The call is answered normally after this delay.
    Delay(Duration),
    /// Any other API error, e.g. `Api(403, "Forbidden: bot was blocked by the user".into())`.
    Api(u16, String),
}

/// A successful sendMessage (or, in `edits()`, a successful editMessageText).
#[derive(Clone, Debug)]
pub struct SentMessage {
    pub chat_id: i64,
    pub message_id: i64,
    pub text: String,
    pub parse_mode: Option<String>,
    pub visible_text: String,
    pub reply_to: Option<i64>,
    pub thread_id: Option<i64>,
    pub reply_markup: Option<Value>,
    pub at: Instant,
}

impl Buttons for SentMessage {
    /// `(label, callback data)` of the inline keyboard.
    fn buttons(&self) -> Vec<(String, String)> {
        let rows = self
            .reply_markup
            .as_ref()
            .and_then(|r| r["inline_keyboard"].as_array().cloned())
            .unwrap_or_default();
        rows.iter()
            .flat_map(|row| row.as_array().cloned().unwrap_or_default())
            .map(|b: Value| {
                (
                    b["text"].as_str().unwrap_or_default().to_owned(),
                    b["callback_data"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }
}

/// The visible texts of sent messages, for comparing with a list.
pub fn visible(sent: &[SentMessage]) -> Vec<&str> {
    sent.iter().map(|m| m.visible_text.as_str()).collect()
}

/// Every request received. `status` is 0 while in flight or when no response was sent.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: String,
    pub params: Value,
    pub at: Instant,
    pub status: u16,
}

#[derive(Clone, Debug)]
pub struct ChatAction {
    pub chat_id: i64,
    pub action: String,
    pub thread_id: Option<i64>,
    pub at: Instant,
}

#[derive(Clone, Debug)]
pub struct CallbackAnswer {
    pub callback_query_id: String,
    pub text: Option<String>,
    pub show_alert: bool,
    pub at: Instant,
}

/// A successful sendDocument / sendPhoto.
#[derive(Clone, Debug)]
pub struct SentFile {
    pub method: String,
    pub chat_id: i64,
    pub message_id: i64,
    pub file_name: Option<String>,
    pub size: usize,
    pub caption: Option<String>,
    pub at: Instant,
}

/// What an inbound helper queued.
#[derive(Clone, Debug)]
pub struct Inbound {
    pub update_id: i64,
    /// The message id (for a callback query: the message carrying the button; 0 if none).
    pub message_id: i64,
    pub callback_query_id: Option<String>,
}

/// Handle to a running fake Telegram server. Cheap to clone.
#[derive(Clone)]
pub struct FakeTelegram {
    inner: Arc<Inner>,
    port: u16,
}

impl FakeTelegram {
    /// Binds 127.0.0.1:0 and serves the Bot API for `token` in a spawned task.
    pub async fn start(token: &str) -> FakeTelegram {
        let st = St {
            token: token.to_string(),
            next_update_id: 1,
            ..St::default()
        };
        let inner = Arc::new(Inner {
            st: Mutex::new(st),
            notify: Notify::new(),
        });
        let app = Router::new()
            .fallback(super::api::handle)
            .with_state(inner.clone());
        let port = http::serve(app, "fake telegram").await;
        FakeTelegram { inner, port }
    }

    pub(super) fn st(&self) -> MutexGuard<'_, St> {
        self.inner.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `http://127.0.0.1:PORT` (for `Bot::set_api_url`).
    pub fn api_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
    pub fn bot_id(&self) -> i64 {
        BOT_ID
    }
    pub fn bot_username(&self) -> &'static str {
        BOT_USERNAME
    }

    /// Queues a fault for the next call of `method` (case-insensitive). FIFO, one per call.
    pub fn fail_next(&self, method: &str, fault: Fault) {
        let mut st = self.st();
        st.faults
            .entry(method.to_ascii_lowercase())
            .or_default()
            .push_back(fault);
    }
    /// Applies `fault` to every call of `method` until cleared with `None`.
    pub fn fail_always(&self, method: &str, fault: Option<Fault>) {
        let method = method.to_ascii_lowercase();
        let mut st = self.st();
        match fault {
            Some(f) => st.always.insert(method, f),
            None => st.always.remove(&method),
        };
    }

    /// Registers a downloadable file (getFile path `documents/<file_id>`).
    pub fn add_file(&self, file_id: &str, bytes: impl Into<Vec<u8>>) {
        self.st().files.insert(file_id.to_string(), bytes.into());
    }

    /// Queues an update (assigning `update_id` if missing) and wakes long polls.
    pub fn push_update(&self, update: Value) -> Inbound {
        let r = self.st().push(update);
        self.inner.notify.notify_waiters();
        r
    }

    /// Re-queues an already pushed update exactly as it was; it is delivered once on the next
    /// getUpdates regardless of offset (duplicate delivery, which the real server never does).
    pub fn redeliver(&self, update_id: i64) {
        let mut st = self.st();
        let u = st.history.get(&update_id).cloned();
        st.redeliver
            .push_back(u.unwrap_or_else(|| panic!("redeliver: no update {update_id}")));
        drop(st);
        self.inner.notify.notify_waiters();
    }

    fn push_message(
        &self,
        chat: Value,
        from: Value,
        text: &str,
        entities: Value,
        extra: Value,
    ) -> Inbound {
        let chat_id = chat["id"].as_i64().unwrap_or(0);
        let mid = self.st().next_mid(chat_id);
        let mut msg = json!({"message_id": mid, "from": from, "chat": chat, "date": now_unix(), "text": text});
        if entities.as_array().is_some_and(|e| !e.is_empty()) {
            msg["entities"] = entities;
        }
        if let (Some(m), Value::Object(x)) = (msg.as_object_mut(), extra) {
            m.extend(x);
        }
        self.push_update(json!({"message": msg}))
    }

    /// A private-chat text message (chat id == user id).
    pub fn private_text(&self, user_id: i64, first_name: &str, text: &str) -> Inbound {
        let chat = json!({"id": user_id, "type": "private", "first_name": first_name,
                          "username": format!("user{user_id}")});
        self.push_message(chat, user(user_id, first_name), text, json!([]), json!({}))
    }

    /// A supergroup text message (chat_id should be negative).
    pub fn group_text(&self, chat_id: i64, user_id: i64, first_name: &str, text: &str) -> Inbound {
        self.push_message(
            group_chat(chat_id, false),
            user(user_id, first_name),
            text,
            json!([]),
            json!({}),
        )
    }

    /// A message in forum topic `thread_id` of a forum supergroup.
    pub fn forum_text(
        &self,
        chat_id: i64,
        thread_id: i64,
        user_id: i64,
        first_name: &str,
        text: &str,
    ) -> Inbound {
        let extra = json!({"message_thread_id": thread_id, "is_topic_message": true});
        self.push_message(
            group_chat(chat_id, true),
            user(user_id, first_name),
            text,
            json!([]),
            extra,
        )
    }

    /// `"<text_before_mention> @hermes_test_bot"` with a `mention` entity.
    pub fn group_mention(
        &self,
        chat_id: i64,
        user_id: i64,
        first_name: &str,
        text_before_mention: &str,
    ) -> Inbound {
        let sep = if text_before_mention.is_empty() {
            ""
        } else {
            " "
        };
        let prefix = format!("{text_before_mention}{sep}");
        let mention = format!("@{BOT_USERNAME}");
        let text = format!("{prefix}{mention}");
        let ent = json!([{"type": "mention", "offset": utf16_len(&prefix), "length": utf16_len(&mention)}]);
        self.push_message(
            group_chat(chat_id, false),
            user(user_id, first_name),
            &text,
            ent,
            json!({}),
        )
    }

    /// A group message replying to the bot's message `bot_message_id`.
    pub fn group_reply_to_bot(
        &self,
        chat_id: i64,
        user_id: i64,
        text: &str,
        bot_message_id: i64,
    ) -> Inbound {
        let replied = self
            .st()
            .messages
            .get(&(chat_id, bot_message_id))
            .map(|m| m.json.clone());
        let replied = replied.unwrap_or_else(|| {
            json!({"message_id": bot_message_id, "from": bot_user(), "chat": group_chat(chat_id, false),
                   "date": now_unix(), "text": "…"})
        });
        let extra = json!({"reply_to_message": replied});
        self.push_message(
            group_chat(chat_id, false),
            user(user_id, "Tester"),
            text,
            json!([]),
            extra,
        )
    }

    /// A group command such as `/help@hermes_test_bot args` with a `bot_command` entity.
    pub fn group_command(&self, chat_id: i64, user_id: i64, command: &str) -> Inbound {
        let cmd = command.split_whitespace().next().unwrap_or("");
        let ent = json!([{"type": "bot_command", "offset": 0, "length": utf16_len(cmd)}]);
        self.push_message(
            group_chat(chat_id, false),
            user(user_id, "Tester"),
            command,
            ent,
            json!({}),
        )
    }

    /// A button press on message `message_id` in `chat_id`.
    pub fn callback_query(
        &self,
        user_id: i64,
        chat_id: i64,
        message_id: i64,
        data: &str,
    ) -> Inbound {
        let mut st = self.st();
        st.next_callback += 1;
        let id = format!(
            "{}{:04}",
            4_000_000_000u64 + user_id.unsigned_abs(),
            st.next_callback
        );
        let msg = st
            .messages
            .get(&(chat_id, message_id))
            .map(|m| m.json.clone());
        let msg = msg.unwrap_or_else(|| {
            json!({"message_id": message_id, "from": bot_user(), "chat": st.chat(chat_id),
                   "date": now_unix(), "text": "…"})
        });
        drop(st);
        self.push_update(
            json!({"callback_query": {"id": id, "from": user(user_id, "Tester"),
            "message": msg, "chat_instance": format!("ci{chat_id}"), "data": data}}),
        )
    }

    pub fn sent(&self) -> Vec<SentMessage> {
        self.st().sent.clone()
    }
    /// The long poll in progress stays open but never returns (a deaf connection); the next
    /// getUpdates works again.
    pub fn go_silent(&self) {
        let mut st = self.st();
        st.silent_gen = Some(st.poll_gen);
    }
    /// Sent messages from the `from`th on (a cursor for load drivers that poll).
    pub fn sent_since(&self, from: usize) -> Vec<SentMessage> {
        self.st()
            .sent
            .get(from..)
            .map(<[_]>::to_vec)
            .unwrap_or_default()
    }
    pub fn sent_to(&self, chat_id: i64) -> Vec<SentMessage> {
        self.sent()
            .into_iter()
            .filter(|m| m.chat_id == chat_id)
            .collect()
    }
    pub fn edits(&self) -> Vec<SentMessage> {
        self.st().edits.clone()
    }
    /// Edits from the `from`th on (a cursor, like [`FakeTelegram::sent_since`]).
    pub fn edits_since(&self, from: usize) -> Vec<SentMessage> {
        self.st()
            .edits
            .get(from..)
            .map(<[_]>::to_vec)
            .unwrap_or_default()
    }
    pub fn calls(&self) -> Vec<Call> {
        self.st().calls.clone()
    }
    /// Calls of `method` (case-insensitive).
    pub fn calls_of(&self, method: &str) -> Vec<Call> {
        let m = method.to_ascii_lowercase();
        self.calls().into_iter().filter(|c| c.method == m).collect()
    }
    pub fn chat_actions(&self) -> Vec<ChatAction> {
        self.st().actions.clone()
    }
    pub fn callback_answers(&self) -> Vec<CallbackAnswer> {
        self.st().answers.clone()
    }
    pub fn sent_files(&self) -> Vec<SentFile> {
        self.st().sent_files.clone()
    }
    /// The last command list set with setMyCommands (`[]` if none).
    pub fn commands(&self) -> Value {
        let c = self.st().commands.clone();
        if c.is_null() { json!([]) } else { c }
    }
    /// Updates queued and not yet confirmed by an offset.
    pub fn pending_updates(&self) -> usize {
        let st = self.st();
        st.pending.len() + st.redeliver.len()
    }

    fn describe(&self) -> String {
        let st = self.st();
        let sent: Vec<String> = st
            .sent
            .iter()
            .map(|m| format!("  chat {} #{}: {:?}", m.chat_id, m.message_id, m.text))
            .collect();
        let calls: Vec<String> = st
            .calls
            .iter()
            .rev()
            .take(30)
            .rev()
            .map(|c| format!("  {} -> {} {}", c.method, c.status, c.params))
            .collect();
        format!(
            "sent messages ({}):\n{}\nconfirmed below update id {}; pending update ids {:?}\nlast calls:\n{}",
            st.sent.len(),
            sent.join("\n"),
            st.confirmed_below,
            st.pending
                .iter()
                .map(|u| u["update_id"].as_i64().unwrap_or(0))
                .collect::<Vec<_>>(),
            calls.join("\n")
        )
    }

    pub(super) async fn wait<T>(
        &self,
        timeout: Duration,
        what: &str,
        mut check: impl FnMut(&St) -> Option<T>,
    ) -> T {
        let what = format!("fake telegram: {what}");
        wait_for(timeout, &what, || check(&self.st()), || self.describe()).await
    }

    /// Waits until at least `n` messages were sent successfully; returns all sent so far.
    pub async fn wait_sent(&self, n: usize, timeout: Duration) -> Vec<SentMessage> {
        self.wait(timeout, &format!("{n} sent messages"), |st| {
            (st.sent.len() >= n).then(|| st.sent.clone())
        })
        .await
    }
    /// Waits until at least `n` calls of `method` arrived (any outcome); returns them.
    pub async fn wait_calls(&self, method: &str, n: usize, timeout: Duration) -> Vec<Call> {
        let m = method.to_ascii_lowercase();
        self.wait(timeout, &format!("{n} calls of {m}"), |st| {
            let v: Vec<Call> = st.calls.iter().filter(|c| c.method == m).cloned().collect();
            (v.len() >= n).then_some(v)
        })
        .await
    }
    /// Waits until a getUpdates with offset > `update_id` arrived.
    pub async fn wait_confirmed(&self, update_id: i64, timeout: Duration) {
        self.wait(
            timeout,
            &format!("confirmation of update {update_id}"),
            |st| (st.confirmed_below > update_id).then_some(()),
        )
        .await
    }
}
