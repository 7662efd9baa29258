//! [`Outbound`] -> Bot API calls: HTML rendering with a plain-text fallback when Telegram
//! rejects the entities, threads, replies, inline keyboards, and errors classified for the
//! outbox.

use hermes_adapter::{Outbound, OutboundFile, SendError, SentId};
use teloxide::ApiError;
use teloxide::RequestError;
use teloxide::payloads::{
    EditMessageTextSetters, SendDocumentSetters, SendMessageSetters, SendPhotoSetters,
};
use teloxide::prelude::Requester;
use teloxide::types::{
    ChatId, InlineKeyboardButton, InlineKeyboardMarkup, InputFile, MessageId, ParseMode,
    ReplyParameters, ThreadId,
};

use crate::format::to_telegram_html;

/// Telegram limits callback data to 64 bytes.
const MAX_CALLBACK_DATA: usize = 64;
/// Largest file a bot may send (Bot API, multipart upload).
pub(crate) const MAX_UPLOAD_BYTES: u64 = 50 * 1024 * 1024;
/// Largest picture sent as a photo; bigger ones go as documents.
const MAX_PHOTO_BYTES: u64 = 10 * 1024 * 1024;

pub(crate) fn chat_id(raw: &str) -> Result<ChatId, SendError> {
    raw.parse::<i64>()
        .map(ChatId)
        .map_err(|_| SendError::Permanent(format!("`{raw}` is not a Telegram chat id")))
}

fn message_id(raw: &str) -> Result<MessageId, SendError> {
    raw.parse::<i32>()
        .map(MessageId)
        .map_err(|_| SendError::Permanent(format!("`{raw}` is not a Telegram message id")))
}

fn keyboard(out: &Outbound) -> Result<Option<InlineKeyboardMarkup>, SendError> {
    if out.buttons.is_empty() {
        return Ok(None);
    }
    let mut rows = Vec::with_capacity(out.buttons.len());
    for row in &out.buttons {
        let mut buttons = Vec::with_capacity(row.len());
        for b in row {
            if b.data.len() > MAX_CALLBACK_DATA {
                return Err(SendError::Permanent(format!(
                    "button data `{}` exceeds Telegram's {MAX_CALLBACK_DATA} bytes",
                    b.data
                )));
            }
            buttons.push(InlineKeyboardButton::callback(
                b.label.clone(),
                b.data.clone(),
            ));
        }
        rows.push(buttons);
    }
    Ok(Some(InlineKeyboardMarkup::new(rows)))
}

/// Send one message: HTML first; if Telegram cannot parse the entities (or the rendered text is
/// too long), the markdown source as plain text.
pub(crate) async fn send(bot: &teloxide::Bot, out: &Outbound) -> Result<SentId, SendError> {
    let chat = chat_id(out.chat.as_str())?;
    let thread = out
        .thread
        .as_ref()
        .map(|t| message_id(t.as_str()))
        .transpose()?;
    let reply = out
        .reply_to
        .as_ref()
        .map(|r| message_id(r.as_str()))
        .transpose()?;
    if let Some(file) = &out.file {
        return send_file(bot, out, file, chat, thread, reply).await;
    }
    let markup = keyboard(out)?;
    let attempt = |text: String, html: bool| {
        let mut req = bot.send_message(chat, text);
        if html {
            req = req.parse_mode(ParseMode::Html);
        }
        if let Some(t) = thread {
            req = req.message_thread_id(ThreadId(t));
        }
        if let Some(r) = reply {
            req = req.reply_parameters(reply_to(r));
        }
        if let Some(m) = markup.clone() {
            req = req.reply_markup(m);
        }
        req
    };
    match attempt(to_telegram_html(&out.text), true).await {
        Ok(m) => Ok(SentId(m.id.0.to_string())),
        Err(RequestError::Api(ApiError::CantParseEntities(reason))) => {
            tracing::warn!(%reason, "Telegram rejected the formatting; sending as plain text");
            plain(attempt(out.text.clone(), false).await)
        }
        Err(RequestError::Api(ApiError::MessageIsTooLong)) => {
            tracing::warn!("rendered message too long for Telegram; sending as plain text");
            plain(attempt(out.text.clone(), false).await)
        }
        Err(e) => Err(classify(e)),
    }
}

/// A reply to `id` that is still sent when that message was deleted meanwhile.
fn reply_to(id: MessageId) -> ReplyParameters {
    let mut params = ReplyParameters::new(id);
    params.allow_sending_without_reply = Some(true);
    params
}

/// Send a file with `out.text` as its caption: pictures as photos, the rest as documents; the
/// caption in HTML first, as plain text if Telegram rejects it.
async fn send_file(
    bot: &teloxide::Bot,
    out: &Outbound,
    file: &OutboundFile,
    chat: ChatId,
    thread: Option<MessageId>,
    reply: Option<MessageId>,
) -> Result<SentId, SendError> {
    if !file.path.is_file() {
        return Err(SendError::Permanent(format!(
            "the file `{}` to send is gone",
            file.name
        )));
    }
    let photo = file.is_image() && file.mime != "image/gif" && file.size <= MAX_PHOTO_BYTES;
    let attempt = |html: bool| {
        let input = InputFile::file(file.path.clone()).file_name(file.name.clone());
        let caption = if html {
            to_telegram_html(&out.text)
        } else {
            out.text.clone()
        };
        // The two requests have the same setters under different types.
        macro_rules! common {
            ($req:expr) => {{
                let mut req = $req;
                if !caption.trim().is_empty() {
                    req = req.caption(caption);
                    if html {
                        req = req.parse_mode(ParseMode::Html);
                    }
                }
                if let Some(t) = thread {
                    req = req.message_thread_id(ThreadId(t));
                }
                if let Some(r) = reply {
                    req = req.reply_parameters(reply_to(r));
                }
                req
            }};
        }
        async move {
            if photo {
                common!(bot.send_photo(chat, input)).await
            } else {
                common!(bot.send_document(chat, input)).await
            }
        }
    };
    match attempt(true).await {
        Ok(m) => Ok(SentId(m.id.0.to_string())),
        Err(RequestError::Api(ApiError::CantParseEntities(reason))) => {
            tracing::warn!(%reason, "Telegram rejected the caption's formatting; sending it plain");
            plain(attempt(false).await)
        }
        Err(e) => Err(classify(e)),
    }
}

fn plain(r: Result<teloxide::types::Message, RequestError>) -> Result<SentId, SendError> {
    match r {
        Ok(m) => Ok(SentId(m.id.0.to_string())),
        Err(RequestError::Api(ApiError::CantParseEntities(reason))) => {
            Err(SendError::BadFormat(reason))
        }
        Err(e) => Err(classify(e)),
    }
}

/// Replace a message's text, with the same plain-text fallback.
pub(crate) async fn edit(
    bot: &teloxide::Bot,
    chat: &str,
    id: &str,
    text: &str,
) -> Result<(), SendError> {
    let chat = chat_id(chat)?;
    let id = message_id(id)?;
    let html = bot
        .edit_message_text(chat, id, to_telegram_html(text))
        .parse_mode(ParseMode::Html)
        .await;
    match html {
        Ok(_) | Err(RequestError::Api(ApiError::MessageNotModified)) => Ok(()),
        Err(RequestError::Api(ApiError::CantParseEntities(_))) => bot
            .edit_message_text(chat, id, text)
            .await
            .map(|_| ())
            .or_else(|e| match e {
                RequestError::Api(ApiError::MessageNotModified) => Ok(()),
                e => Err(classify(e)),
            }),
        Err(e) => Err(classify(e)),
    }
}

/// Map a teloxide error to the outbox's classes.
pub(crate) fn classify(e: RequestError) -> SendError {
    match e {
        RequestError::RetryAfter(s) => SendError::RetryAfter(s.duration()),
        RequestError::Network(e) => {
            SendError::Transient(format!("network: {}", without_url(e.to_string(), e.url())))
        }
        RequestError::Io(e) => SendError::Transient(format!("I/O: {e}")),
        RequestError::InvalidJson { .. } => {
            SendError::Transient("unreadable answer from the Bot API".into())
        }
        RequestError::MigrateToChatId(to) => {
            SendError::NotFound(format!("the group moved to supergroup {}", to.0))
        }
        RequestError::Api(api) => classify_api(api),
    }
}

fn classify_api(api: ApiError) -> SendError {
    match api {
        ApiError::MessageIsTooLong => SendError::TooLong,
        ApiError::CantParseEntities(reason) => SendError::BadFormat(reason),
        ApiError::ChatNotFound | ApiError::UserNotFound | ApiError::MessageToEditNotFound => {
            SendError::NotFound(api.to_string())
        }
        ApiError::BotBlocked
        | ApiError::BotKicked
        | ApiError::BotKickedFromSupergroup
        | ApiError::BotKickedFromChannel
        | ApiError::UserDeactivated
        | ApiError::CantInitiateConversation
        | ApiError::CantTalkWithBots
        | ApiError::NotEnoughRightsToPostMessages => SendError::Forbidden(api.to_string()),
        ApiError::InvalidToken => SendError::Permanent("the bot token was rejected".into()),
        ApiError::Unknown(text) => {
            let lower = text.to_ascii_lowercase();
            if lower.starts_with("bad request") {
                SendError::Permanent(text)
            } else if lower.starts_with("forbidden") {
                SendError::Forbidden(text)
            } else if lower.starts_with("too many requests") {
                SendError::RetryAfter(std::time::Duration::from_secs(5))
            } else {
                // "Internal Server Error", "Bad Gateway" and other server-side failures.
                SendError::Transient(text)
            }
        }
        other => SendError::Permanent(other.to_string()),
    }
}

/// reqwest errors print the request URL, which contains the bot token: show only the host.
pub(crate) fn without_url(text: String, url: Option<&url::Url>) -> String {
    match url {
        Some(url) => text.replace(url.as_str(), url.host_str().unwrap_or("api")),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_errors_are_classified() {
        assert_eq!(classify_api(ApiError::MessageIsTooLong), SendError::TooLong);
        assert!(matches!(
            classify_api(ApiError::BotBlocked),
            SendError::Forbidden(_)
        ));
        assert!(matches!(
            classify_api(ApiError::ChatNotFound),
            SendError::NotFound(_)
        ));
        assert!(matches!(
            classify_api(ApiError::Unknown("Internal Server Error".into())),
            SendError::Transient(_)
        ));
        assert!(matches!(
            classify_api(ApiError::Unknown("Bad Request: something new".into())),
            SendError::Permanent(_)
        ));
    }

    #[test]
    fn long_button_data_is_refused() {
        let mut out = Outbound::text("1".into(), "pick", "k");
        out.buttons = vec![vec![hermes_adapter::Button {
            label: "x".into(),
            data: "d".repeat(65),
        }]];
        assert!(matches!(keyboard(&out), Err(SendError::Permanent(_))));
    }
}
