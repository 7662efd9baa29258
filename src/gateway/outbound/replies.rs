//! How an answer becomes outbox rows that fit the platform: chunked to its length limit,
//! threaded, and in groups replying to the message that asked.

use hermes_adapter::{ChatKind, Message, Outbound, Platform};

use super::chunk::chunk_markdown;
use crate::gateway::Shared;

/// Outbox rows for `text` in reply to `to`: chunked to the platform's limit, threaded, and in
/// groups replying to the message that asked. `key` makes the rows idempotent.
pub fn replies(shared: &Shared, to: &Message, text: &str, key: &str) -> Vec<(Platform, Outbound)> {
    let mut rows = to_chat(
        shared,
        to.platform,
        &to.chat.id,
        to.thread.as_ref(),
        text,
        key,
    );
    if to.chat.kind != ChatKind::Direct
        && let Some((_, first)) = rows.first_mut()
    {
        first.reply_to = Some(to.id.clone());
    }
    rows
}

/// Outbox rows for `text` to a chat (and thread), registered secrets scrubbed, chunked to the
/// platform's limit; empty when no adapter for the platform is running.
pub fn to_chat(
    shared: &Shared,
    platform: Platform,
    chat: &hermes_adapter::ChatId,
    thread: Option<&hermes_adapter::ThreadId>,
    text: &str,
    key: &str,
) -> Vec<(Platform, Outbound)> {
    let Some(adapter) = shared.adapter(platform) else {
        return Vec::new();
    };
    let caps = adapter.capabilities();
    // A secret the model was shown or guessed never leaves in a reply.
    let text = hermes_adapter::scrub(text);
    let chunks = chunk_markdown(&text, caps.max_message_len, caps.length_unit);
    let n = chunks.len();
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, chunk)| {
            let mut out = Outbound::text(chat.clone(), chunk, format!("{key}:{}/{n}", i + 1));
            out.thread = thread.cloned();
            (platform, out)
        })
        .collect()
}
