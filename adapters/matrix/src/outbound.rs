//! [`Outbound`] -> a Matrix `m.room.message`: HTML `formatted_body` with the plain `body`, a reply
//! relation to the message answered, the `m.thread` relation when the answer belongs in a thread,
//! and `m.replace` edits for streamed previews; files as `m.image`/`m.file` uploads (encrypted in
//! encrypted rooms by matrix-sdk) with the text as caption. matrix-sdk errors are classified as
//! [`SendError`]s.

use std::time::Duration;

use hermes_adapter::{Outbound, SendError};
use matrix_sdk::ruma::OwnedEventId;
use matrix_sdk::ruma::api::error::{ErrorKind, RetryAfter};
use matrix_sdk::ruma::events::relation::{InReplyTo, Reply, Thread};
use matrix_sdk::ruma::events::room::message::{
    Relation, ReplacementMetadata, RoomMessageEventContent,
};

use crate::format;

/// The content of a new message for `out`.
pub fn content(out: &Outbound) -> RoomMessageEventContent {
    let (plain, html) = format::render(&out.text);
    let mut content = RoomMessageEventContent::text_html(plain, html);
    let reply_to = out
        .reply_to
        .as_ref()
        .and_then(|id| OwnedEventId::try_from(id.as_str()).ok());
    let thread = out
        .thread
        .as_ref()
        .and_then(|id| OwnedEventId::try_from(id.as_str()).ok());
    content.relates_to = match (thread, reply_to) {
        (Some(root), Some(answered)) => Some(Relation::Thread(Thread::reply(root, answered))),
        // Thread-unaware clients show the answer as a reply to the root.
        (Some(root), None) => Some(Relation::Thread(Thread::plain(root.clone(), root))),
        (None, Some(answered)) => Some(Relation::Reply(Reply::new(InReplyTo::new(answered)))),
        (None, None) => None,
    };
    content
}

/// Largest file hermes uploads (Synapse's default `max_upload_size` is 50 MB).
pub const MAX_UPLOAD_BYTES: u64 = 50 * 1024 * 1024;

/// Upload `out.file` to `room` and send it, in the thread of `out` when it has one.
pub async fn send_file(
    room: &matrix_sdk::Room,
    out: &Outbound,
    file: &hermes_adapter::OutboundFile,
    txn: matrix_sdk::ruma::OwnedTransactionId,
) -> Result<String, SendError> {
    use matrix_sdk::attachment::AttachmentConfig;
    use matrix_sdk::room::reply::{EnforceThread, Reply as SdkReply};
    use matrix_sdk::ruma::events::room::message::{
        AddMentions, ReplyWithinThread, TextMessageEventContent,
    };

    let bytes = tokio::fs::read(&file.path).await.map_err(|e| {
        SendError::Permanent(format!("the file `{}` to send is gone: {e}", file.name))
    })?;
    let mime: mime::Mime = file.mime.parse().unwrap_or(mime::APPLICATION_OCTET_STREAM);
    let mut config = AttachmentConfig::new().txn_id(txn);
    if !out.text.trim().is_empty() {
        let (plain, html) = format::render(&out.text);
        config = config.caption(Some(TextMessageEventContent::html(plain, html)));
    }
    let root = out
        .thread
        .as_ref()
        .and_then(|id| OwnedEventId::try_from(id.as_str()).ok());
    if let Some(root) = root {
        config = config.reply(Some(SdkReply {
            event_id: root,
            enforce_thread: EnforceThread::Threaded(ReplyWithinThread::No),
            add_mentions: AddMentions::No,
        }));
    }
    let sent = room
        .send_attachment(file.name.clone(), &mime, bytes, config)
        .await
        .map_err(|e| classify(&e))?;
    Ok(sent.event_id.to_string())
}

/// The content that replaces the text of the bot's message `id` (an `m.replace` edit).
pub fn edit_content(id: &str, text: &str) -> Result<RoomMessageEventContent, SendError> {
    let target = OwnedEventId::try_from(id)
        .map_err(|_| SendError::NotFound(format!("`{id}` is not a Matrix event id")))?;
    let (plain, html) = format::render(text);
    Ok(RoomMessageEventContent::text_html(plain, html)
        .make_replacement(ReplacementMetadata::new(target, None)))
}

/// Classify a matrix-sdk failure.
pub fn classify(e: &matrix_sdk::Error) -> SendError {
    if let Some(api) = e.as_client_api_error() {
        let status = api.status_code.as_u16();
        let kind = api.error_kind();
        if let Some(ErrorKind::LimitExceeded(limit)) = kind {
            let wait = match &limit.retry_after {
                Some(RetryAfter::Delay(d)) => *d,
                _ => Duration::from_secs(1),
            };
            return SendError::RetryAfter(wait);
        }
        let text = format!("HTTP {status}: {kind:?}");
        return match (status, kind) {
            (429, _) => SendError::RetryAfter(Duration::from_secs(1)),
            (403, _) => SendError::Forbidden(text),
            (404, _) => SendError::NotFound(text),
            (413, _) | (_, Some(ErrorKind::TooLarge)) => SendError::TooLong,
            (s, _) if s >= 500 => SendError::Transient(text),
            _ => SendError::Permanent(text),
        };
    }
    match e {
        matrix_sdk::Error::Http(_) => SendError::Transient(e.to_string()),
        other => SendError::Permanent(other.to_string()),
    }
}

/// The transaction id of the send of outbox row `key`: the same for every attempt (the
/// homeserver answers a retry with the event it already made), made of URL-safe characters
/// whatever the key holds (a session key's escapes and colons were refused with a 404), and
/// short: 128 bits of its SHA-256, in hex.
pub fn transaction_id(key: &str) -> matrix_sdk::ruma::OwnedTransactionId {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(key.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("hermes-{hex}").into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(c: &RoomMessageEventContent) -> serde_json::Value {
        serde_json::to_value(c).unwrap()
    }

    #[test]
    fn messages_carry_html_and_plain_bodies() {
        let out = Outbound::text("!r:localhost".into(), "**hi**", "k1");
        let j = json(&content(&out));
        assert_eq!(j["msgtype"], "m.text");
        assert_eq!(j["body"], "**hi**");
        assert_eq!(j["format"], "org.matrix.custom.html");
        assert_eq!(j["formatted_body"], "<p><strong>hi</strong></p>");
        assert!(j.get("m.relates_to").is_none());
    }

    #[test]
    fn replies_and_threads_are_related() {
        let mut out = Outbound::text("!r:localhost".into(), "answer", "k1");
        out.reply_to = Some("$q".into());
        let j = json(&content(&out));
        assert_eq!(j["m.relates_to"]["m.in_reply_to"]["event_id"], "$q");
        out.thread = Some("$root".into());
        let j = json(&content(&out));
        assert_eq!(j["m.relates_to"]["rel_type"], "m.thread");
        assert_eq!(j["m.relates_to"]["event_id"], "$root");
        assert_eq!(j["m.relates_to"]["m.in_reply_to"]["event_id"], "$q");
    }

    #[test]
    fn edits_replace_the_earlier_message() {
        let j = json(&edit_content("$prev", "better").unwrap());
        assert_eq!(j["m.relates_to"]["rel_type"], "m.replace");
        assert_eq!(j["m.relates_to"]["event_id"], "$prev");
        assert_eq!(j["m.new_content"]["body"], "better");
        assert!(edit_content("nope", "x").is_err());
    }

    #[test]
    fn transaction_ids_are_stable_url_safe_and_distinct() {
        let key = r"outage:matrix:@p\:localhost:17961967:1/1";
        let a = transaction_id(key);
        assert_eq!(a, transaction_id(key), "the same for every attempt");
        assert_ne!(a, transaction_id("turn:1:1/1"));
        assert!(
            a.as_str()
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-'),
            "{a}"
        );
        assert_eq!(a.as_str().len(), "hermes-".len() + 32);
    }
}
