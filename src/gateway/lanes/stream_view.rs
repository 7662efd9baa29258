//! Streaming an answer into the chat: the text appears in one message that is edited as the
//! model writes (at most about once a second, waiting out rate limits), a new message starts
//! after a tool call, and the final answer replaces the last preview through the outbox — so it
//! is delivered exactly like any other reply and never posted twice.
//!
//! Previews are sent directly through the adapter, not the outbox: they are a view, not a
//! promise. A crash mid-stream leaves a partial preview behind; the re-run turn streams into a
//! new message.

use std::sync::Arc;
use std::time::Duration;

use hermes_adapter::{Adapter, Message, Outbound, SendError, SentId};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::llm::{DELTA_RESET, DELTA_SEGMENT_END, DeltaSink};

/// Time between two edits of one preview.
const EDIT_EVERY: Duration = Duration::from_secs(1);

/// The preview of the message being written.
struct Preview {
    text: String,
    sent: Option<SentId>,
    /// Text the chat shows now.
    shown: String,
    /// No edits before this (rate limits, the 1 s pace).
    next_edit: Instant,
}

/// Start showing a streamed answer in the chat of `to`. Returns the sink for the agent and a
/// task that ends when the sink is dropped, with the id of the last preview message (the one
/// the final answer should replace).
pub(crate) fn start(
    adapter: Arc<dyn Adapter>,
    to: &Message,
) -> (DeltaSink, JoinHandle<Option<SentId>>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let limit = adapter
        .capabilities()
        .max_message_len
        .saturating_sub(2)
        .max(16);
    let unit = adapter.capabilities().length_unit;
    let pace = if adapter.capabilities().free_edits {
        Duration::ZERO
    } else {
        EDIT_EVERY
    };
    let (chat, thread) = (to.chat.id.clone(), to.thread.clone());
    let task = tokio::spawn(async move {
        let mut p = Preview {
            text: String::new(),
            sent: None,
            shown: String::new(),
            next_edit: Instant::now(),
        };
        let show = |p: &Preview| -> String {
            // While streaming, a preview longer than one message shows its beginning.
            let mut out = String::new();
            let mut len = 0;
            for c in p.text.chars() {
                len += unit.char_len(c);
                if len > limit {
                    out.push('…');
                    break;
                }
                out.push(c);
            }
            out
        };
        loop {
            let wait = p
                .next_edit
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(10));
            let delta = tokio::select! {
                d = rx.recv() => d,
                _ = tokio::time::sleep(wait), if p.text.trim() != p.shown.trim() => {
                    let text = show(&p);
                    refresh(adapter.as_ref(), pace, &mut p, &chat, &thread, text).await;
                    continue;
                }
            };
            match delta.as_deref() {
                None => {
                    // The final answer replaces the preview next: keep to the pace.
                    if p.sent.is_some() {
                        tokio::time::sleep_until(p.next_edit).await;
                    }
                    return p.sent;
                }
                Some(DELTA_RESET) => p.text.clear(),
                Some(DELTA_SEGMENT_END) => {
                    // The text before a tool call stays in the chat as it is: show all of it
                    // now (best effort; a rate limit may leave it shorter).
                    let last = show(&p);
                    if last.trim() != p.shown.trim() {
                        p.next_edit = Instant::now();
                        refresh(adapter.as_ref(), pace, &mut p, &chat, &thread, last).await;
                    }
                    p = Preview {
                        text: String::new(),
                        sent: None,
                        shown: String::new(),
                        next_edit: Instant::now(),
                    };
                }
                Some(text) => p.text.push_str(text),
            }
        }
    });
    (tx, task)
}

/// Show `text`: send the preview if there is none yet, else edit it — unless the pace or a
/// rate limit says wait.
async fn refresh(
    adapter: &dyn Adapter,
    pace: Duration,
    p: &mut Preview,
    chat: &hermes_adapter::ChatId,
    thread: &Option<hermes_adapter::ThreadId>,
    text: String,
) {
    if text.trim().is_empty() || Instant::now() < p.next_edit {
        return;
    }
    let result = match &p.sent {
        None => {
            let mut out = Outbound::text(chat.clone(), text.clone(), String::new());
            out.thread = thread.clone();
            adapter.send(&out).await.map(|id| p.sent = Some(id))
        }
        Some(id) => adapter.edit(chat, id, &text).await,
    };
    match result {
        Ok(()) => {
            p.shown = text;
            p.next_edit = Instant::now() + pace;
        }
        Err(SendError::RetryAfter(wait)) => {
            tracing::debug!(?wait, "preview rate limited");
            p.next_edit = Instant::now() + wait;
        }
        Err(e) => {
            tracing::debug!(error = %e, "preview update failed");
            p.next_edit = Instant::now() + pace;
        }
    }
}
