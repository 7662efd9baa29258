//! Delivery helpers: what the model sees of an inbound message, and how an answer becomes
//! outbox rows that fit the platform.

use hermes_adapter::{ChatKind, Message, Outbound, Platform};

use super::Shared;
use super::chunk::chunk_markdown;

/// Largest image passed to the model.
const MAX_IMAGE_BYTES: u64 = 10 * 1024 * 1024;
/// Images per message passed to the model.
const MAX_IMAGES: usize = 4;

/// Fetch the images of `msg` for a vision model (at most a few, each size-capped).
pub async fn images(
    shared: &Shared,
    msg: &Message,
) -> Vec<(
    hermes_adapter::Attachment,
    Result<crate::llm::Image, String>,
)> {
    use base64::Engine;
    let Some(adapter) = shared.adapter(msg.platform) else {
        return Vec::new();
    };
    let is_image = |a: &&hermes_adapter::Attachment| {
        a.kind == hermes_adapter::AttachmentKind::Image
            || a.mime.as_deref().is_some_and(|m| m.starts_with("image/"))
    };
    let mut out = Vec::new();
    for a in msg.attachments.iter().filter(is_image).take(MAX_IMAGES) {
        let result = match adapter.fetch_attachment(a, MAX_IMAGE_BYTES).await {
            Ok(bytes) => Ok(crate::llm::Image {
                // The bytes know best (Telegram calls every photo JPEG).
                mime: sniff(&bytes)
                    .map(str::to_owned)
                    .or_else(|| a.mime.clone().filter(|m| m.starts_with("image/")))
                    .unwrap_or_else(|| "image/jpeg".to_owned()),
                base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
            }),
            Err(hermes_adapter::SendError::TooLong) => {
                Err(format!("larger than {} MB", MAX_IMAGE_BYTES / 1024 / 1024))
            }
            Err(e) => Err(e.to_string()),
        };
        out.push((a.clone(), result));
    }
    out
}

/// Voice and audio attachments of a message (at most a few), each as its transcript.
pub async fn transcripts(
    shared: &Shared,
    transcriber: &crate::llm::Transcriber,
    msg: &Message,
) -> Vec<(hermes_adapter::Attachment, Result<String, String>)> {
    let Some(adapter) = shared.adapter(msg.platform) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for a in msg
        .attachments
        .iter()
        .filter(|a| is_audio(a))
        .take(MAX_RECORDINGS)
    {
        let name = a.name.clone().unwrap_or_else(|| "voice.ogg".to_owned());
        let mime = a.mime.clone().unwrap_or_else(|| "audio/ogg".to_owned());
        let result = match adapter.fetch_attachment(a, transcriber.max_bytes()).await {
            Ok(bytes) => transcriber.transcribe(bytes, &name, &mime).await,
            Err(hermes_adapter::SendError::TooLong) => Err(format!(
                "longer than the {} MB the transcription takes",
                transcriber.max_bytes() / 1024 / 1024
            )),
            Err(e) => Err(format!("cannot download it: {e}")),
        };
        out.push((a.clone(), result));
    }
    out
}

/// Recordings per message transcribed.
const MAX_RECORDINGS: usize = 3;

/// Whether an attachment is a recording (a voice note or an audio file).
pub fn is_audio(a: &hermes_adapter::Attachment) -> bool {
    matches!(
        a.kind,
        hermes_adapter::AttachmentKind::Voice | hermes_adapter::AttachmentKind::Audio
    ) || a.mime.as_deref().is_some_and(|m| m.starts_with("audio/"))
}

/// The image type from its first bytes.
pub(crate) fn sniff(bytes: &[u8]) -> Option<&'static str> {
    Some(match bytes {
        [0x89, b'P', b'N', b'G', ..] => "image/png",
        [0xFF, 0xD8, 0xFF, ..] => "image/jpeg",
        [b'G', b'I', b'F', ..] => "image/gif",
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'E',
            b'B',
            b'P',
            ..,
        ] => "image/webp",
        _ => return None,
    })
}

/// The user message text the model sees: group messages carry the sender's name, attachments
/// are listed, and a reply shows what it answers.
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
            "\n[attached {:?} file \"{name}\"{}]",
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

/// Outbox rows for `text` to a chat (and thread), chunked to the platform's limit; empty when
/// no adapter for the platform is running.
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
    let chunks = chunk_markdown(text, caps.max_message_len, caps.length_unit);
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
