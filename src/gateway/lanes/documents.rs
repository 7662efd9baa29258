//! The documents attached to a message, read into the text the model sees: each one's text with
//! its name and type, within the per-file and per-message limits of `[documents]`, and a clear
//! note for one that is too large, damaged, encrypted or a scan. A message that is nothing but
//! files over the size limit is refused before any turn (see [`refusal`]).

use std::time::Duration;

use hermes_adapter::{Attachment, AttachmentKind, Message, SendError};
use hermes_documents::{Format, Wanted};

use crate::config::DocumentsConfig;
use crate::gateway::Shared;
use crate::tools::documents;
use crate::tools::files::human_size;

/// Whether `a` may be a document: not a picture, recording, video or sticker, and a name or
/// type a document has (or no name at all: the bytes decide).
pub fn is_document(a: &Attachment) -> bool {
    let media = matches!(
        a.kind,
        AttachmentKind::Image
            | AttachmentKind::Audio
            | AttachmentKind::Voice
            | AttachmentKind::Video
            | AttachmentKind::Sticker
    ) || a.mime.as_deref().is_some_and(|m| {
        ["image/", "audio/", "video/"]
            .iter()
            .any(|p| m.starts_with(p))
    });
    !media
        && (Format::detect(a.name.as_deref(), a.mime.as_deref(), &[]).is_some()
            || a.name.is_none()
            || a.kind == AttachmentKind::Document)
}

fn name_of(a: &Attachment) -> String {
    a.name.clone().unwrap_or_else(|| "document".to_owned())
}

/// The note to send instead of a turn when `msg` is only documents over the size limit (no
/// text, nothing else attached): no model call for a file that will not be read.
pub fn refusal(config: &DocumentsConfig, msg: &Message) -> Option<String> {
    if !config.enabled || !msg.text.trim().is_empty() || msg.attachments.is_empty() {
        return None;
    }
    let max = config.max_bytes();
    let too_large: Vec<String> = msg
        .attachments
        .iter()
        .map(|a| match a.size {
            Some(size) if size > max && is_document(a) => {
                Some(format!("\"{}\" ({})", name_of(a), human_size(size)))
            }
            _ => None,
        })
        .collect::<Option<_>>()?;
    Some(format!(
        "📎 I did not read {}: I read documents up to {}. Send a smaller file, or the part \
         you need (a few pages, one sheet, the text pasted).",
        too_large.join(", "),
        human_size(max)
    ))
}

/// Each document of `msg` (in order) with its block for the turn's user message: its text, or
/// why it was not read. Pictures and recordings are not documents (vision and transcription
/// take those).
pub async fn read_all(
    shared: &Shared,
    config: &DocumentsConfig,
    msg: &Message,
) -> Vec<(Attachment, String)> {
    if !config.enabled {
        return Vec::new();
    }
    let Some(adapter) = shared.adapter(msg.platform) else {
        return Vec::new();
    };
    let max = config.max_bytes();
    let mut budget = config.max_chars_per_message;
    let mut out = Vec::new();
    for (i, a) in msg
        .attachments
        .iter()
        .filter(|a| is_document(a))
        .enumerate()
    {
        let name = name_of(a);
        let block = if i >= config.max_per_message {
            format!(
                "[document \"{name}\" was not read: at most {} documents per message are read]",
                config.max_per_message
            )
        } else if budget < 1_000 {
            format!(
                "[document \"{name}\" was not read: the message's documents already fill the {} \
                 characters read per message]",
                config.max_chars_per_message
            )
        } else {
            match a.size {
                Some(size) if size > max => too_large(&name, size, max),
                _ => match adapter.fetch_attachment(a, max).await {
                    Ok(bytes) => read_one(config, &name, a, bytes, &mut budget).await,
                    Err(SendError::TooLong) => too_large(&name, a.size.unwrap_or(max + 1), max),
                    Err(e) => format!(
                        "[document \"{name}\" could not be downloaded: {}]",
                        hermes_adapter::scrub(&e.to_string())
                    ),
                },
            }
        };
        out.push((a.clone(), block));
    }
    out
}

fn too_large(name: &str, size: u64, max: u64) -> String {
    format!(
        "[document \"{name}\" ({}) was not read: larger than the {} limit for documents; tell \
         the user]",
        human_size(size),
        human_size(max)
    )
}

/// One downloaded document as its block, spending its characters from `budget`.
async fn read_one(
    config: &DocumentsConfig,
    name: &str,
    a: &Attachment,
    bytes: Vec<u8>,
    budget: &mut usize,
) -> String {
    let Some(format) = Format::detect(Some(name), a.mime.as_deref(), &bytes) else {
        return format!(
            "[attached file \"{name}\" is not a document I can read (binary data, an archive or \
             an unknown format)]"
        );
    };
    let mut limits = config.limits();
    limits.max_chars = limits.max_chars.min(*budget);
    let timeout = Duration::from_secs(config.timeout_secs.max(1));
    match documents::read(bytes, format, limits, Wanted::default(), timeout).await {
        Ok(doc) => {
            *budget = budget.saturating_sub(doc.text.chars().count());
            documents::render(name, &doc)
        }
        Err(why) => format!(
            "[document \"{name}\" ({}) could not be read: {why}. Tell the user; do not guess \
             its content]",
            format.label()
        ),
    }
}
