//! Slack events -> [`Message`]: which events the bot looks at, the trigger by Slack's rules, the
//! thread a reply belongs in, and the id that makes every copy of one event the same inbox row.
//!
//! Rules: direct messages (`message.im`) always; in channels only an `app_mention` (or a message
//! that mentions the bot), or a message in a thread the bot is part of (it was mentioned there or
//! posted there; threads with a message stored in the last week are recalled from the inbox when
//! the listener starts, so a follow-up after a restart is still heard). Bots, the bot itself, edits, deletions, joins and
//! other housekeeping subtypes are skipped. Button presses (`block_actions`) and the `/hermes`
//! slash command become [`Trigger::Button`] and [`Trigger::Command`] messages.
//!
//! Ids: a message is keyed by its `ts` within its channel, so the `message` and `app_mention`
//! events of one message, and every redelivery of either, are one inbox row. Button presses and
//! slash commands are keyed by their `trigger_id`, which a redelivery repeats.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use hermes_adapter::{
    AdapterError, Attachment, AttachmentKind, Chat, ChatKind, Delivery, InboundSink, Message,
    Platform, ReplyRef, Sender, Trigger,
};
use slack_morphism::prelude::*;

use crate::SlackSettings;
use crate::web::{BotIdentity, Web};

/// Threads remembered as ones the bot is part of.
const MAX_THREADS: usize = 10_000;
/// Display names cached.
const MAX_NAMES: usize = 5_000;

/// A thread: channel id and the thread's root `ts`.
type ThreadKey = (String, String);
/// Threads the bot is part of, oldest first, and the same as a set.
type Threads = (VecDeque<ThreadKey>, HashSet<ThreadKey>);

/// The adapter's inbound rules and what it remembers between events.
#[derive(Clone)]
pub(crate) struct Rules {
    inner: Arc<RulesInner>,
}

struct RulesInner {
    allowed_channels: HashSet<String>,
    allowed_teams: HashSet<String>,
    reply_in_thread: bool,
    threads: Mutex<Threads>,
    names: Mutex<HashMap<String, String>>,
}

impl Rules {
    pub fn new(settings: &SlackSettings) -> Self {
        Rules {
            inner: Arc::new(RulesInner {
                allowed_channels: settings.allowed_channels.iter().cloned().collect(),
                allowed_teams: settings.allowed_teams.iter().cloned().collect(),
                reply_in_thread: settings.reply_in_thread,
                threads: Mutex::default(),
                names: Mutex::default(),
            }),
        }
    }

    fn team_allowed(&self, team: &str) -> bool {
        self.inner.allowed_teams.is_empty() || self.inner.allowed_teams.contains(team)
    }

    /// Direct messages are governed by the user allowlist alone.
    fn channel_allowed(&self, channel: &str, direct: bool) -> bool {
        direct
            || self.inner.allowed_channels.is_empty()
            || self.inner.allowed_channels.contains(channel)
    }

    /// Remember that the bot takes part in this thread.
    pub fn joined_thread(&self, channel: &str, thread_ts: &str) {
        let key = (channel.to_owned(), thread_ts.to_owned());
        let Ok(mut guard) = self.inner.threads.lock() else {
            return;
        };
        let (order, set) = &mut *guard;
        if set.insert(key.clone()) {
            order.push_back(key);
            if order.len() > MAX_THREADS
                && let Some(old) = order.pop_front()
            {
                set.remove(&old);
            }
        }
    }

    /// Recall the threads of the last `days` days from the inbox: every thread a stored channel
    /// message belongs to is one the bot takes part in (only such messages are stored).
    pub async fn recall_threads(&self, sink: &dyn InboundSink, days: i64) -> usize {
        let since = hermes_adapter::now_millis() - days * 24 * 3600 * 1000;
        let seen = sink.recent_chats(since, MAX_THREADS).await;
        let mut n = 0;
        // Oldest first, so the most recent are the last to be forgotten.
        for s in seen.iter().rev() {
            if let Some(t) = &s.thread {
                self.joined_thread(s.chat.as_str(), t.as_str());
                n += 1;
            }
        }
        n
    }

    fn in_thread(&self, channel: &str, thread_ts: &str) -> bool {
        self.inner
            .threads
            .lock()
            .is_ok_and(|g| g.1.contains(&(channel.to_owned(), thread_ts.to_owned())))
    }

    fn cached_name(&self, user: &str) -> Option<String> {
        self.inner.names.lock().ok()?.get(user).cloned()
    }

    fn cache_name(&self, user: &str, name: &str) {
        if let Ok(mut names) = self.inner.names.lock() {
            if names.len() >= MAX_NAMES {
                names.clear();
            }
            names.insert(user.to_owned(), name.to_owned());
        }
    }
}

/// Everything a listener needs to turn an event into a stored message.
pub(crate) struct Context<'a> {
    pub me: &'a BotIdentity,
    pub rules: &'a Rules,
    pub web: &'a Web,
    pub sink: &'a dyn InboundSink,
}

impl Context<'_> {
    /// Store one Events API callback. `Ok` means it may be acknowledged (stored, a duplicate,
    /// or not for us).
    pub async fn push_event(&self, cb: &SlackPushEventCallback) -> Result<(), AdapterError> {
        match event_message(cb, self.me, self.rules) {
            Some(msg) => self.deliver(msg).await,
            None => Ok(()),
        }
    }

    /// Store one interaction (a button press).
    pub async fn interaction(&self, ev: &SlackInteractionEvent) -> Result<(), AdapterError> {
        match action_message(ev, self.rules) {
            Some(msg) => self.deliver(msg).await,
            None => Ok(()),
        }
    }

    /// Store one slash command.
    pub async fn command(&self, ev: &SlackCommandEvent) -> Result<(), AdapterError> {
        match command_message(ev, self.rules) {
            Some(msg) => self.deliver(msg).await,
            None => Ok(()),
        }
    }

    pub(crate) async fn deliver(&self, mut msg: Message) -> Result<(), AdapterError> {
        let user = msg.sender.id.as_str().to_owned();
        let name = match self.rules.cached_name(&user) {
            Some(n) => Some(n),
            None => {
                let n = self.web.user_name(&user).await;
                if let Some(n) = &n {
                    self.rules.cache_name(&user, n);
                }
                n
            }
        };
        if let Some(name) = name {
            msg.sender.display_name = name;
        }
        let (chat, id) = (msg.chat.id.clone(), msg.id.clone());
        match self.sink.deliver(msg).await {
            Ok(Delivery::Stored) => Ok(()),
            Ok(Delivery::Duplicate) => {
                tracing::debug!(%chat, message = %id, "Slack redelivered an event already stored");
                Ok(())
            }
            Err(e) => Err(AdapterError::Transient(format!(
                "inbox unavailable, not acknowledging the event: {e}"
            ))),
        }
    }
}

/// The message of an event callback, or `None` if the bot should not look at it.
pub(crate) fn event_message(
    cb: &SlackPushEventCallback,
    me: &BotIdentity,
    rules: &Rules,
) -> Option<Message> {
    if !rules.team_allowed(&cb.team_id.0) {
        tracing::debug!(team = %cb.team_id.0, "ignoring an event from a workspace not allowed");
        return None;
    }
    match &cb.event {
        SlackEventCallbackBody::Message(ev) => message_event(ev, me, rules),
        SlackEventCallbackBody::AppMention(ev) => {
            let parts = Parts {
                user: &ev.user.0,
                channel: &ev.channel.0,
                channel_type: None,
                ts: &ev.origin.ts.0,
                thread_ts: ev.origin.thread_ts.as_ref().map(|t| t.0.as_str()),
                content: Some(&ev.content),
            };
            build(parts, me, rules, true)
        }
        SlackEventCallbackBody::Unknown(v) => {
            tracing::debug!(kind = %v["type"], "ignoring a Slack event type hermes does not handle");
            None
        }
        _ => None,
    }
}

/// The fields of a message event that decide what to do with it.
struct Parts<'a> {
    user: &'a str,
    channel: &'a str,
    channel_type: Option<&'a str>,
    ts: &'a str,
    thread_ts: Option<&'a str>,
    content: Option<&'a SlackMessageContent>,
}

fn message_event(ev: &SlackMessageEvent, me: &BotIdentity, rules: &Rules) -> Option<Message> {
    // Edits, deletions, joins, topic changes, bot posts: nothing to answer. A message with
    // files, a thread reply also sent to the channel, and `/me` are ordinary messages.
    match &ev.subtype {
        None
        | Some(SlackMessageEventType::FileShare)
        | Some(SlackMessageEventType::ThreadBroadcast)
        | Some(SlackMessageEventType::MeMessage) => {}
        Some(other) => {
            tracing::debug!(subtype = ?other, "ignoring a Slack message subtype");
            return None;
        }
    }
    if ev.sender.bot_id.is_some() {
        return None;
    }
    let parts = Parts {
        user: ev.sender.user.as_ref()?.0.as_str(),
        channel: ev.origin.channel.as_ref()?.0.as_str(),
        channel_type: ev.origin.channel_type.as_ref().map(|t| t.0.as_str()),
        ts: &ev.origin.ts.0,
        thread_ts: ev.origin.thread_ts.as_ref().map(|t| t.0.as_str()),
        content: ev.content.as_ref(),
    };
    build(parts, me, rules, false)
}

/// A message read back from `conversations.history` / `replies` (catching up), under the same
/// rules as a live event. Those carry no channel or channel type: `channel` is where it was read.
pub(crate) fn history_message(
    channel: &str,
    m: &SlackHistoryMessage,
    me: &BotIdentity,
    rules: &Rules,
) -> Option<Message> {
    match &m.subtype {
        None
        | Some(SlackMessageEventType::FileShare)
        | Some(SlackMessageEventType::ThreadBroadcast)
        | Some(SlackMessageEventType::MeMessage) => {}
        Some(_) => return None,
    }
    if m.sender.bot_id.is_some() {
        return None;
    }
    let parts = Parts {
        user: m.sender.user.as_ref()?.0.as_str(),
        channel,
        channel_type: None,
        ts: &m.origin.ts.0,
        thread_ts: m.origin.thread_ts.as_ref().map(|t| t.0.as_str()),
        content: Some(&m.content),
    };
    build(parts, me, rules, false)
}

fn is_direct(channel: &str, channel_type: Option<&str>) -> bool {
    match channel_type {
        Some(t) => t == "im",
        None => channel.starts_with('D'),
    }
}

fn build(p: Parts<'_>, me: &BotIdentity, rules: &Rules, app_mention: bool) -> Option<Message> {
    if p.user == me.user_id {
        return None;
    }
    let direct = is_direct(p.channel, p.channel_type);
    if !rules.channel_allowed(p.channel, direct) {
        tracing::debug!(channel = %p.channel, "ignoring a channel not in slack.allowed_channels");
        return None;
    }
    let raw = p
        .content
        .and_then(|c| c.text.as_deref())
        .unwrap_or_default();
    let mentioned = app_mention || mentions(raw, &me.user_id);
    // A thread's root has `thread_ts == ts`; only replies are "in" a thread.
    let thread_ts = p.thread_ts.filter(|t| *t != p.ts);
    let trigger = if direct {
        Trigger::Direct
    } else if mentioned {
        Trigger::Mention
    } else if thread_ts.is_some_and(|t| rules.in_thread(p.channel, t)) {
        Trigger::ReplyToBot
    } else {
        return None;
    };
    let thread = match thread_ts {
        Some(t) => Some(t.to_owned()),
        None if !direct && rules.inner.reply_in_thread => Some(p.ts.to_owned()),
        None => None,
    };
    if !direct && let Some(t) = &thread {
        rules.joined_thread(p.channel, t);
    }
    Some(Message {
        platform: Platform::Slack,
        id: p.ts.into(),
        chat: Chat {
            id: p.channel.into(),
            kind: if direct {
                ChatKind::Direct
            } else {
                ChatKind::Group
            },
            title: None,
        },
        thread: thread.map(Into::into),
        sender: Sender {
            id: p.user.into(),
            display_name: p.user.to_owned(),
            handle: None,
            is_bot: false,
        },
        text: plain_text(raw, &me.user_id),
        attachments: p.content.map(attachments).unwrap_or_default(),
        reply_to: None,
        sent_at: ts_millis(p.ts),
        subject: None,
        topic: None,
        trigger,
    })
}

fn mentions(text: &str, user: &str) -> bool {
    text.contains(&format!("<@{user}>")) || text.contains(&format!("<@{user}|"))
}

fn attachments(content: &SlackMessageContent) -> Vec<Attachment> {
    let Some(files) = &content.files else {
        return Vec::new();
    };
    files
        .iter()
        .filter_map(|f| {
            let url = f.url_private_download.as_ref().or(f.url_private.as_ref())?;
            let mime = f.mimetype.as_ref().map(|m| m.0.clone());
            let kind = match mime.as_deref() {
                Some(m) if m.starts_with("image/") => AttachmentKind::Image,
                Some(m) if m.starts_with("audio/") => AttachmentKind::Audio,
                Some(m) if m.starts_with("video/") => AttachmentKind::Video,
                _ => AttachmentKind::Document,
            };
            Some(Attachment {
                kind,
                mime,
                name: f.name.clone().or_else(|| f.title.clone()),
                size: None,
                locator: url.to_string(),
            })
        })
        .collect()
}

/// A button press as a message, keyed by its `trigger_id`.
pub(crate) fn action_message(ev: &SlackInteractionEvent, rules: &Rules) -> Option<Message> {
    let SlackInteractionEvent::BlockActions(ev) = ev else {
        return None;
    };
    if !rules.team_allowed(&ev.team.id.0) {
        return None;
    }
    let user = ev.user.as_ref()?;
    let data = ev.actions.as_ref()?.iter().find_map(|a| a.value.clone())?;
    let (channel, message_ts) = match &ev.container {
        SlackInteractionActionContainer::Message(c) => (
            ev.channel
                .as_ref()
                .map(|c| c.id.0.clone())
                .or_else(|| c.channel_id.as_ref().map(|c| c.0.clone()))?,
            c.message_ts.0.clone(),
        ),
        _ => return None,
    };
    let direct = channel.starts_with('D');
    if !rules.channel_allowed(&channel, direct) {
        return None;
    }
    let shown = ev.message.as_ref();
    let thread = shown
        .and_then(|m| m.origin.thread_ts.as_ref())
        .map(|t| t.0.clone())
        .filter(|t| *t != message_ts);
    Some(Message {
        platform: Platform::Slack,
        id: format!("act:{}", ev.trigger_id.0).into(),
        chat: Chat {
            id: channel.into(),
            kind: if direct {
                ChatKind::Direct
            } else {
                ChatKind::Group
            },
            title: None,
        },
        thread: thread.map(Into::into),
        sender: Sender {
            id: user.id.0.clone().into(),
            display_name: user
                .name
                .clone()
                .or_else(|| user.username.clone())
                .unwrap_or_else(|| user.id.0.clone()),
            handle: user.username.clone(),
            is_bot: false,
        },
        text: data.clone(),
        attachments: Vec::new(),
        reply_to: Some(ReplyRef {
            id: message_ts.into(),
            to_bot: true,
            text: shown.and_then(|m| m.content.text.clone()),
        }),
        sent_at: hermes_adapter::now_millis(),
        subject: None,
        topic: None,
        trigger: Trigger::Button { data },
    })
}

/// `/hermes new` as the chat command `/new` (`/hermes` alone: `/help`).
pub(crate) fn command_message(ev: &SlackCommandEvent, rules: &Rules) -> Option<Message> {
    if !rules.team_allowed(&ev.team_id.0) {
        return None;
    }
    let channel = ev.channel_id.0.clone();
    let direct = channel.starts_with('D');
    if !rules.channel_allowed(&channel, direct) {
        return None;
    }
    let arg = ev.text.as_deref().unwrap_or_default().trim();
    let arg = arg.trim_start_matches('/');
    let text = if arg.is_empty() {
        "/help".to_owned()
    } else {
        format!("/{arg}")
    };
    Some(Message {
        platform: Platform::Slack,
        id: format!("cmd:{}", ev.trigger_id.0).into(),
        chat: Chat {
            id: channel.into(),
            kind: if direct {
                ChatKind::Direct
            } else {
                ChatKind::Group
            },
            title: ev.channel_name.clone(),
        },
        thread: None,
        sender: Sender {
            id: ev.user_id.0.clone().into(),
            display_name: ev.user_id.0.clone(),
            handle: None,
            is_bot: false,
        },
        text,
        attachments: Vec::new(),
        reply_to: None,
        sent_at: hermes_adapter::now_millis(),
        subject: None,
        topic: None,
        trigger: Trigger::Command,
    })
}

/// `1712345678.000200` -> milliseconds.
fn ts_millis(ts: &str) -> i64 {
    ts.parse::<f64>()
        .map(|s| (s * 1000.0) as i64)
        .unwrap_or_else(|_| hermes_adapter::now_millis())
}

/// Slack's message text as a person reads it: the bot's own mention removed, other mentions,
/// channels and links written out, `&amp; &lt; &gt;` decoded.
pub(crate) fn plain_text(text: &str, bot_user: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find('>') else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let token = &after[..end];
        let (target, label) = match token.split_once('|') {
            Some((t, l)) => (t, Some(l)),
            None => (token, None),
        };
        if let Some(user) = target.strip_prefix('@') {
            if user != bot_user {
                out.push('@');
                out.push_str(label.unwrap_or(user));
            }
        } else if let Some(channel) = target.strip_prefix('#') {
            out.push('#');
            out.push_str(label.unwrap_or(channel));
        } else if let Some(special) = target.strip_prefix('!') {
            out.push('@');
            out.push_str(label.unwrap_or(special.split('^').next().unwrap_or(special)));
        } else {
            match label {
                Some(l) if l != target => {
                    out.push_str(l);
                    out.push_str(" (");
                    out.push_str(target);
                    out.push(')');
                }
                _ => out.push_str(target),
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    let decoded = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let tidy = decoded
        .split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>();
    // Keep line structure; only collapse the spaces a removed mention leaves.
    if decoded.contains('\n') {
        decoded.trim().to_owned()
    } else {
        tidy.join(" ")
    }
}

#[cfg(test)]
mod tests;
