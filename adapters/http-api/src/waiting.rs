//! The requests waiting for their answers, one per conversation at a time: what the core sends
//! a conversation while its request waits becomes that request's events. A preview (streamed
//! text, sent and edited directly) becomes deltas; the answer (an outbox row keyed as one, see
//! [`hermes_adapter::keys`]) ends the request; anything else (a confirmation being asked, a
//! note) is a note. A message with buttons (a confirmation, a question with choices) is also
//! kept as a prompt its key can answer (`/v1/hermes/approvals`) until it is settled.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use dashmap::DashMap;
use hermes_adapter::{Button, ChatId, Outbound, SentId, TokenUsage, keys};
use tokio::sync::{Mutex, mpsc};

/// What a waiting request hears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// More of the answer's text.
    Delta(String),
    /// Something said meanwhile that is not the answer (a confirmation asked, a note).
    Note(String),
    /// The whole answer, and the tokens its turn used.
    Done {
        text: String,
        usage: Option<TokenUsage>,
    },
}

struct Waiter {
    events: mpsc::UnboundedSender<Event>,
    /// The preview being streamed: its id and the text shown so far.
    preview: Option<(SentId, String)>,
    /// Text streamed so far (all previews).
    streamed: bool,
    /// The answer's parts so far.
    answer: String,
}

/// Something the agent asked with buttons, waiting for the key's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prompt {
    /// The wait's id (from the buttons' data, `<kind>:<id>:<choice>`).
    pub id: String,
    pub chat: ChatId,
    pub text: String,
    pub buttons: Vec<Button>,
    sent: SentId,
}

/// The waiting requests, by conversation.
#[derive(Default)]
pub(crate) struct Waiting {
    waiters: DashMap<ChatId, Waiter>,
    prompts: DashMap<String, Prompt>,
    turns: DashMap<ChatId, Arc<Mutex<()>>>,
    next_id: AtomicU64,
}

impl Waiting {
    /// The lock a request holds while it waits: one request per conversation at a time (a
    /// second one waits for the first to be answered, so answers never cross).
    pub fn turn_of(&self, chat: &ChatId) -> Arc<Mutex<()>> {
        self.turns.entry(chat.clone()).or_default().clone()
    }

    /// Forget `chat`'s lock once no request holds or waits for it.
    pub fn release(&self, chat: &ChatId) {
        self.turns
            .remove_if(chat, |_, lock| Arc::strong_count(lock) == 1);
    }

    /// Listen to `chat` (before its message is delivered, so nothing said is missed).
    pub fn listen(&self, chat: &ChatId) -> mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.waiters.insert(
            chat.clone(),
            Waiter {
                events: tx,
                preview: None,
                streamed: false,
                answer: String::new(),
            },
        );
        rx
    }

    /// Stop listening (answered, timed out, or the client went away). A question asked in the
    /// conversation goes with it (a confirmation stays until the core settles it).
    pub fn forget(&self, chat: &ChatId) {
        self.waiters.remove(chat);
        self.prompts
            .retain(|_, p| &p.chat != chat || !p.buttons.iter().any(|b| b.data.starts_with("cl:")));
    }

    fn new_id(&self) -> SentId {
        SentId(format!(
            "api-{}",
            self.next_id.fetch_add(1, Ordering::Relaxed) + 1
        ))
    }

    /// The prompts waiting in the conversations of `key`, oldest first.
    pub fn prompts_of(&self, key: &str) -> Vec<Prompt> {
        let mine = format!("{key}:");
        let mut out: Vec<Prompt> = self
            .prompts
            .iter()
            .filter(|p| p.chat.as_str().starts_with(&mine))
            .map(|p| p.clone())
            .collect();
        out.sort_by(|a, b| {
            a.sent
                .0
                .len()
                .cmp(&b.sent.0.len())
                .then(a.sent.0.cmp(&b.sent.0))
        });
        out
    }

    /// Take prompt `id` of `key` to answer it.
    pub fn take_prompt(&self, key: &str, id: &str) -> Option<Prompt> {
        let mine = format!("{key}:");
        self.prompts
            .remove_if(id, |_, p| p.chat.as_str().starts_with(&mine))
            .map(|(_, p)| p)
    }

    /// Put back a prompt taken by mistake (an answer that was not one of its choices).
    pub fn restore_prompt(&self, prompt: Prompt) {
        self.prompts.insert(prompt.id.clone(), prompt);
    }

    /// Something the core sends to a conversation.
    pub fn send(&self, out: &Outbound) -> SentId {
        let id = self.new_id();
        let buttons: Vec<Button> = out.buttons.iter().flatten().cloned().collect();
        if let Some(wait) = buttons
            .first()
            .and_then(|b| b.data.split(':').nth(1))
            .map(str::to_owned)
        {
            self.prompts.insert(
                wait.clone(),
                Prompt {
                    id: wait,
                    chat: out.chat.clone(),
                    text: out.text.clone(),
                    buttons,
                    sent: id.clone(),
                },
            );
        }
        let mut done = false;
        if let Some(mut w) = self.waiters.get_mut(&out.chat) {
            if out.idempotency_key.is_empty() {
                // A new preview: the model is writing (again, after a tool call).
                let separator = if w.streamed { "\n\n" } else { "" };
                let _ = w
                    .events
                    .send(Event::Delta(format!("{separator}{}", out.text)));
                w.preview = Some((id.clone(), out.text.clone()));
                w.streamed = true;
            } else if keys::answers(&out.idempotency_key) {
                let delta = match (&out.edit_of, &w.preview) {
                    // The answer replaces the last preview: only what it adds is new.
                    (Some(of), Some((shown_id, shown))) if of == &shown_id.0 => out
                        .text
                        .strip_prefix(shown.as_str())
                        .unwrap_or_default()
                        .to_owned(),
                    _ if w.streamed || !w.answer.is_empty() => format!("\n\n{}", out.text),
                    _ => out.text.clone(),
                };
                if !delta.is_empty() {
                    let _ = w.events.send(Event::Delta(delta));
                }
                w.streamed = true;
                w.preview = None;
                if !w.answer.is_empty() {
                    w.answer.push_str("\n\n");
                }
                w.answer.push_str(&out.text);
                if keys::last_part(&out.idempotency_key) {
                    let text = std::mem::take(&mut w.answer);
                    let _ = w.events.send(Event::Done {
                        text,
                        usage: out.usage,
                    });
                    done = true;
                }
            } else {
                let _ = w.events.send(Event::Note(out.text.clone()));
            }
        }
        if done {
            self.waiters.remove(&out.chat);
        }
        id
    }

    /// A preview's new text: what it adds is streamed. (An edit of a prompt settles it.)
    pub fn edit(&self, chat: &ChatId, id: &SentId, text: &str) {
        self.prompts.retain(|_, p| &p.sent != id);
        let Some(mut w) = self.waiters.get_mut(chat) else {
            return;
        };
        let Some((shown_id, shown)) = &w.preview else {
            return;
        };
        if shown_id != id {
            return;
        }
        // A preview that was rewritten (the model started over) cannot be taken back: only
        // text that extends what was streamed is sent on.
        let delta = text.strip_prefix(shown.as_str()).map(str::to_owned);
        let next = (shown_id.clone(), text.to_owned());
        w.preview = Some(next);
        if let Some(delta) = delta.filter(|d| !d.is_empty()) {
            let _ = w.events.send(Event::Delta(delta));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(text: &str, key: &str) -> Outbound {
        Outbound::text("k:c".into(), text, key)
    }

    #[test]
    fn previews_stream_and_the_answer_ends_with_what_it_adds() {
        let w = Waiting::default();
        let chat: ChatId = "k:c".into();
        let mut rx = w.listen(&chat);
        let p = w.send(&out("Hel", ""));
        w.edit(&chat, &p, "Hello wor");
        w.send(&out("Asking for confirmation", "ap:1"));
        let mut answer = out("Hello world.", "turn:7:1/1");
        answer.edit_of = Some(p.0.clone());
        answer.usage = Some(TokenUsage {
            prompt_tokens: 10,
            completion_tokens: 3,
        });
        w.send(&answer);
        let mut got = Vec::new();
        while let Ok(e) = rx.try_recv() {
            got.push(e);
        }
        assert_eq!(
            got,
            [
                Event::Delta("Hel".into()),
                Event::Delta("lo wor".into()),
                Event::Note("Asking for confirmation".into()),
                Event::Delta("ld.".into()),
                Event::Done {
                    text: "Hello world.".into(),
                    usage: answer.usage
                }
            ]
        );
        // Nobody waits any more: a late row is simply not heard.
        w.send(&out("late", "turn:8:1/1"));
        assert!(rx.try_recv().is_err());
    }

    #[tokio::test]
    async fn a_conversation_lock_is_forgotten_once_nobody_holds_or_waits_for_it() {
        let w = Waiting::default();
        let chat: ChatId = "k:~once".into();
        let held = w.turn_of(&chat).lock_owned().await;
        let waiting = w.turn_of(&chat);
        w.release(&chat);
        assert_eq!(w.turns.len(), 1, "held and waited for: kept");
        drop(held);
        drop(waiting);
        w.release(&chat);
        assert_eq!(w.turns.len(), 0, "nobody left: forgotten");
    }

    #[test]
    fn a_long_answer_ends_with_its_last_part_and_other_chats_are_apart() {
        let w = Waiting::default();
        let (a, b): (ChatId, ChatId) = ("k:a".into(), "k:b".into());
        let mut ra = w.listen(&a);
        let mut rb = w.listen(&b);
        let mut first = out("one", "turn:1:1/2");
        first.chat = a.clone();
        w.send(&first);
        let mut second = out("two", "turn:1:2/2");
        second.chat = a.clone();
        w.send(&second);
        let mut events = Vec::new();
        while let Ok(e) = ra.try_recv() {
            events.push(e);
        }
        assert_eq!(
            events.last(),
            Some(&Event::Done {
                text: "one\n\ntwo".into(),
                usage: None
            })
        );
        assert!(rb.try_recv().is_err(), "b heard nothing");
    }
}
