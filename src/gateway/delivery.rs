//! Delivery helpers: what the model sees of an inbound message, and how an answer becomes
//! outbox rows that fit the platform.

use hermes_adapter::{ChatKind, Message, Outbound, Platform};

use super::Shared;
use super::chunk::chunk_markdown;

/// The user message text the model sees: group messages carry the sender's name, attachments
/// are listed (the model cannot open them yet), and a reply shows what it answers.
pub fn user_content(msg: &Message) -> String {
    let mut text = String::new();
    if msg.chat.kind != ChatKind::Direct {
        text.push_str(&msg.sender.display_name);
        text.push_str(": ");
    }
    if let Some(reply) = &msg.reply_to
        && let Some(quoted) = reply.text.as_deref().filter(|t| !t.trim().is_empty())
    {
        let quoted: String = quoted.chars().take(500).collect();
        text.push_str("(replying to: \"");
        text.push_str(&quoted);
        text.push_str("\")\n");
    }
    text.push_str(msg.text.trim());
    for a in &msg.attachments {
        let name = a.name.as_deref().unwrap_or("unnamed");
        text.push_str(&format!(
            "\n[attached {:?} file \"{name}\"{}; you cannot open attachments yet]",
            a.kind,
            a.mime
                .as_deref()
                .map(|m| format!(", {m}"))
                .unwrap_or_default()
        ));
    }
    if text.trim().is_empty() {
        text.push_str("(empty message)");
    }
    text
}

/// Outbox rows for `text` in reply to `to`: chunked to the platform's limit, threaded, and in
/// groups replying to the message that asked. `key` makes the rows idempotent.
pub fn replies(shared: &Shared, to: &Message, text: &str, key: &str) -> Vec<(Platform, Outbound)> {
    let Some(adapter) = shared.adapters.get(&to.platform) else {
        return Vec::new();
    };
    let caps = adapter.capabilities();
    let chunks = chunk_markdown(text, caps.max_message_len, caps.length_unit);
    let n = chunks.len();
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, chunk)| {
            let mut out = Outbound::text(to.chat.id.clone(), chunk, format!("{key}:{}/{n}", i + 1));
            out.thread = to.thread.clone();
            if to.chat.kind != ChatKind::Direct && i == 0 {
                out.reply_to = Some(to.id.clone());
            }
            (to.platform, out)
        })
        .collect()
}
