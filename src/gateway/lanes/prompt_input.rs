//! What the model sees of the inbound messages a turn answers: the text (with the sender's name
//! in groups, the quoted reply, the attachments listed), voice messages transcribed, documents
//! read (`documents`), images for vision models, and an explicit `/skill` directive.

use hermes_adapter::{ChatKind, Message};

use crate::agent::NewMessage;
use crate::gateway::outbound::outgoing::sniff;
use crate::gateway::{InForce, Shared};
use crate::store::InboxRow;

/// The turn's user messages: the text the model sees, and (for vision models) the images.
pub(crate) async fn new_messages(
    shared: &Shared,
    now: &InForce,
    rows: &[InboxRow],
) -> Vec<NewMessage> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let mut text = match super::skills_chat::explicit(shared, &now.config, &row.message).await {
            Some(directive) => {
                let mut with_skill = row.message.clone();
                with_skill.text = directive;
                user_content(&with_skill)
            }
            None if is_plan(&row.message) => {
                // `/plan <request>`: the model reads the request (the turn plans it first).
                let mut request = row.message.clone();
                request.text = row
                    .message
                    .command()
                    .map(|(_, arg)| arg.to_owned())
                    .filter(|a| !a.is_empty())
                    .unwrap_or_else(|| "Plan what I asked above.".to_owned());
                user_content(&request)
            }
            None => user_content(&row.message),
        };
        let mut images = Vec::new();
        let transcriber = now.agent.transcriber.clone();
        if let Some(t) = &transcriber {
            for (attachment, result) in transcripts(shared, t, &row.message).await {
                let name = attachment.name.as_deref().unwrap_or("voice message");
                match result {
                    Ok(said) if said.is_empty() => {
                        text.push_str(&format!("\n[\"{name}\": no speech recognised]"))
                    }
                    Ok(said) => text.push_str(&format!("\n[\"{name}\", transcribed: {said}]")),
                    Err(e) => {
                        text.push_str(&format!("\n[\"{name}\" could not be transcribed: {e}]"))
                    }
                }
            }
        }
        let read = super::documents::read_all(shared, &now.config.documents, &row.message).await;
        for (_, block) in &read {
            text.push('\n');
            text.push_str(block);
        }
        let opened = |a: &hermes_adapter::Attachment| {
            (transcriber.is_some() && is_audio(a)) || read.iter().any(|(done, _)| done == a)
        };
        let unopened = row.message.attachments.iter().any(|a| !opened(a));
        if unopened && !now.config.llm.vision {
            text.push_str("\n[You cannot open attachments here; say so if the user needs you to.]");
        }
        if now.config.llm.vision {
            for (attachment, result) in fetch_images(shared, &row.message).await {
                match result {
                    Ok(image) => images.push(image),
                    Err(e) => text.push_str(&format!(
                        "\n[the image \"{}\" could not be loaded: {e}]",
                        attachment.name.as_deref().unwrap_or("photo")
                    )),
                }
            }
        }
        out.push(NewMessage {
            inbox_id: Some(row.id),
            text,
            images,
        });
    }
    out
}

/// Whether `msg` is `/plan <request>` (plan first, act on approval).
pub fn is_plan(msg: &Message) -> bool {
    msg.command().is_some_and(|(name, _)| name == "plan")
}

/// Largest image passed to the model.
const MAX_IMAGE_BYTES: u64 = 10 * 1024 * 1024;
/// Images per message passed to the model.
const MAX_IMAGES: usize = 4;

/// Fetch the images of `msg` for a vision model (at most a few, each size-capped).
pub async fn fetch_images(
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
            // The error reaches the prompt: no token in a URL it quotes.
            Err(e) => Err(hermes_adapter::scrub(&e.to_string())),
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
            Err(e) => Err(hermes_adapter::scrub(&format!("cannot download it: {e}"))),
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
