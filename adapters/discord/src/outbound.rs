//! [`Outbound`] -> REST calls: messages (Discord markdown, replies, buttons as message
//! components, auto-created threads), edits, the typing indicator and interaction callbacks.
//!
//! A [`SentId`] is the message id, prefixed with `channel/` when the message went to a thread
//! rather than to the chat itself, so that an edit finds it again.

use hermes_adapter::{ChatId, Outbound, SendError, SentId, ThreadId};
use serde_json::{Value, json};
use serenity::builder::CreateAttachment;
use serenity::http::{LightMethod, Multipart, MultipartUpload, Request, Route};
use serenity::model::channel::Message as DiscordMessage;
use serenity::model::id::{ChannelId, InteractionId, MessageId};

use crate::channels::Place;
use crate::format::to_discord_markdown;
use crate::rest::Rest;
use crate::{DiscordAdapter, MAX_MESSAGE_LEN};

/// Discord's limits on message components.
const MAX_BUTTON_ROWS: usize = 5;
const MAX_BUTTONS_PER_ROW: usize = 5;
const MAX_CUSTOM_ID: usize = 100;
const MAX_LABEL: usize = 80;
/// Longest thread name Discord accepts.
const MAX_THREAD_NAME: usize = 100;
/// "A thread has already been created for this message".
const THREAD_ALREADY_CREATED: &str = "code 160004";
/// Secondary (grey) button style.
const BUTTON_STYLE: u8 = 2;
/// Largest upload to a server without boosts (and to DMs).
pub(crate) const MAX_UPLOAD_BYTES: u64 = 10 * 1024 * 1024;

fn snowflake(raw: &str, what: &str) -> Result<u64, SendError> {
    raw.parse::<u64>()
        .ok()
        .filter(|id| *id != 0)
        .ok_or_else(|| SendError::Permanent(format!("`{raw}` is not a Discord {what} id")))
}

fn components(out: &Outbound) -> Result<Option<Value>, SendError> {
    if out.buttons.is_empty() {
        return Ok(None);
    }
    if out.buttons.len() > MAX_BUTTON_ROWS
        || out.buttons.iter().any(|r| r.len() > MAX_BUTTONS_PER_ROW)
    {
        return Err(SendError::Permanent(format!(
            "Discord shows at most {MAX_BUTTON_ROWS} rows of {MAX_BUTTONS_PER_ROW} buttons"
        )));
    }
    let mut rows = Vec::with_capacity(out.buttons.len());
    for row in &out.buttons {
        let mut buttons = Vec::with_capacity(row.len());
        for b in row {
            if b.data.is_empty() || b.data.len() > MAX_CUSTOM_ID {
                return Err(SendError::Permanent(format!(
                    "button data `{}` must be 1 to {MAX_CUSTOM_ID} characters on Discord",
                    b.data
                )));
            }
            let label: String = b.label.chars().take(MAX_LABEL).collect();
            buttons.push(
                json!({"type": 2, "style": BUTTON_STYLE, "label": label, "custom_id": b.data}),
            );
        }
        rows.push(json!({"type": 1, "components": buttons}));
    }
    Ok(Some(Value::Array(rows)))
}

/// The payload of a new message.
fn payload(out: &Outbound, target: u64) -> Result<Value, SendError> {
    let mut content = to_discord_markdown(&out.text);
    if content.chars().count() > MAX_MESSAGE_LEN {
        content = out.text.clone();
    }
    if content.chars().count() > MAX_MESSAGE_LEN {
        return Err(SendError::TooLong);
    }
    // No @everyone, @here or role pings from the model's text; the asker is notified of the reply.
    let mut body = json!({
        "content": content,
        "allowed_mentions": {"parse": [], "replied_user": true},
    });
    if let Some(reply) = &out.reply_to
        && out.thread.as_ref().map(ThreadId::as_str) != Some(reply.as_str())
    {
        body["message_reference"] = json!({
            "message_id": reply.as_str(),
            "channel_id": target.to_string(),
            "fail_if_not_exists": false,
        });
    }
    if let Some(rows) = components(out)? {
        body["components"] = rows;
    }
    // A resend of the same outbox row (after a crash between the send and its record) carries
    // the same nonce, and Discord returns the message it already made instead of a second one.
    if !out.idempotency_key.is_empty() {
        body["nonce"] = json!(nonce(&out.idempotency_key));
        body["enforce_nonce"] = json!(true);
    }
    Ok(body)
}

/// A stable nonce for an idempotency key: FNV-1a, 64 bits in hex (Discord takes 25 characters).
fn nonce(key: &str) -> String {
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:016x}")
}

fn thread_name(text: &str) -> String {
    let first = text
        .lines()
        .map(|l| l.trim_matches(|c: char| c.is_whitespace() || "#*_`>-".contains(c)))
        .find(|l| !l.is_empty())
        .unwrap_or("hermes");
    first.chars().take(MAX_THREAD_NAME).collect()
}

/// Make sure the thread an answer goes to exists: an auto-thread is started from the message
/// that asked (whose id the thread takes) the first time something is sent to it.
async fn ensure_thread(
    a: &DiscordAdapter,
    chat: u64,
    thread: u64,
    text: &str,
) -> Result<(), SendError> {
    if a.thread_known(thread) {
        return Ok(());
    }
    let body = json!({"name": thread_name(text), "auto_archive_duration": 1440});
    let req = Request::new(
        Route::ChannelMessageThreads {
            channel_id: ChannelId::new(chat),
            message_id: MessageId::new(thread),
        },
        LightMethod::Post,
    )
    .body(Some(body.to_string().into_bytes()));
    match a.rest.call(req).await {
        Ok(_) => {
            tracing::debug!(chat, thread, "started a thread for the answer");
            let owner = a.identity().map(|me| me.id);
            a.channels.remember(
                thread,
                Place::Thread {
                    parent: chat,
                    owner,
                },
            );
        }
        // Already started (a resent answer), or not a message of the chat: an existing thread.
        Err(SendError::Permanent(m)) if m.contains(THREAD_ALREADY_CREATED) => {}
        Err(SendError::NotFound(_)) => {}
        Err(e) => return Err(e),
    }
    a.remember_thread(thread);
    Ok(())
}

pub(crate) async fn send(a: &DiscordAdapter, out: &Outbound) -> Result<SentId, SendError> {
    let chat = snowflake(out.chat.as_str(), "channel")?;
    let thread = out
        .thread
        .as_ref()
        .map(|t| snowflake(t.as_str(), "thread"))
        .transpose()?;
    if let Some(t) = thread {
        ensure_thread(a, chat, t, &out.text).await?;
    }
    let target = thread.unwrap_or(chat);
    let mut body = payload(out, target)?;
    let req = Request::new(
        Route::ChannelMessages {
            channel_id: ChannelId::new(target),
        },
        LightMethod::Post,
    );
    let req = match &out.file {
        // The file as `files[0]`, the message as `payload_json` naming it.
        Some(f) => {
            let bytes = tokio::fs::read(&f.path).await.map_err(|e| {
                SendError::Permanent(format!("the file `{}` to send is gone: {e}", f.name))
            })?;
            body["attachments"] = json!([{"id": 0, "filename": f.name}]);
            req.multipart(Some(Multipart {
                upload: MultipartUpload::Attachments(vec![CreateAttachment::bytes(
                    bytes,
                    f.name.clone(),
                )]),
                fields: Vec::new(),
                payload_json: Some(body.to_string()),
            }))
        }
        None => req.body(Some(body.to_string().into_bytes())),
    };
    let sent: DiscordMessage = a.rest.json(req).await?;
    Ok(SentId(if target == chat {
        sent.id.get().to_string()
    } else {
        format!("{target}/{}", sent.id.get())
    }))
}

pub(crate) async fn edit(
    rest: &Rest,
    chat: &ChatId,
    id: &SentId,
    text: &str,
) -> Result<(), SendError> {
    let (channel, message) = match id.0.split_once('/') {
        Some((c, m)) => (snowflake(c, "channel")?, snowflake(m, "message")?),
        None => (
            snowflake(chat.as_str(), "channel")?,
            snowflake(&id.0, "message")?,
        ),
    };
    let mut content = to_discord_markdown(text);
    if content.chars().count() > MAX_MESSAGE_LEN {
        content = text.to_owned();
    }
    if content.chars().count() > MAX_MESSAGE_LEN {
        return Err(SendError::TooLong);
    }
    // Replacing the text also removes buttons (an answered request keeps none).
    let body = json!({"content": content, "components": []});
    let req = Request::new(
        Route::ChannelMessage {
            channel_id: ChannelId::new(channel),
            message_id: MessageId::new(message),
        },
        LightMethod::Patch,
    )
    .body(Some(body.to_string().into_bytes()));
    a_call(rest, req).await
}

async fn a_call(rest: &Rest, req: Request<'_>) -> Result<(), SendError> {
    rest.call(req).await.map(|_| ())
}

pub(crate) async fn typing(
    a: &DiscordAdapter,
    chat: &ChatId,
    thread: Option<&ThreadId>,
) -> Result<(), SendError> {
    let chat = snowflake(chat.as_str(), "channel")?;
    // An auto-thread that is not started yet: show it where the question was asked.
    let target = thread
        .and_then(|t| t.as_str().parse::<u64>().ok())
        .filter(|t| a.thread_known(*t))
        .unwrap_or(chat);
    let req = Request::new(
        Route::ChannelTyping {
            channel_id: ChannelId::new(target),
        },
        LightMethod::Post,
    );
    a_call(&a.rest, req).await
}

/// Acknowledge a button press without changing the message (type 6, deferred update); the
/// answer, if any, follows as a normal message.
pub(crate) async fn acknowledge(
    rest: &Rest,
    interaction: InteractionId,
    token: &str,
) -> Result<(), SendError> {
    let req = Request::new(
        Route::InteractionResponse {
            interaction_id: interaction,
            token,
        },
        LightMethod::Post,
    )
    .body(Some(json!({"type": 6}).to_string().into_bytes()));
    a_call(rest, req).await
}

#[cfg(test)]
mod tests {
    use hermes_adapter::Button;

    use super::*;

    #[test]
    fn a_reply_references_the_message_and_pings_nobody_else() {
        let mut out = Outbound::text("10".into(), "**hi**", "k");
        out.reply_to = Some("55".into());
        let body = payload(&out, 10).unwrap();
        assert_eq!(body["content"], "**hi**");
        assert_eq!(body["message_reference"]["message_id"], "55");
        assert_eq!(body["allowed_mentions"]["parse"], json!([]));
        assert!(body.get("components").is_none());
        // The same row sent again carries the same nonce; another row another one.
        assert_eq!(body["enforce_nonce"], true);
        assert_eq!(body["nonce"], payload(&out, 10).unwrap()["nonce"]);
        let other = Outbound::text("10".into(), "**hi**", "k2");
        assert_ne!(body["nonce"], payload(&other, 10).unwrap()["nonce"]);
        assert!(body["nonce"].as_str().unwrap().len() <= 25);
    }

    #[test]
    fn the_starter_of_an_auto_thread_is_not_replied_to() {
        let mut out = Outbound::text("10".into(), "hi", "k");
        out.reply_to = Some("55".into());
        out.thread = Some("55".into());
        assert!(
            payload(&out, 55)
                .unwrap()
                .get("message_reference")
                .is_none()
        );
    }

    #[test]
    fn buttons_become_action_rows() {
        let mut out = Outbound::text("10".into(), "allow?", "k");
        let b = |l: &str, d: &str| Button {
            label: l.into(),
            data: d.into(),
        };
        out.buttons = vec![vec![b("Yes", "ap:1:o"), b("No", "ap:1:d")]];
        let body = payload(&out, 10).unwrap();
        assert_eq!(body["components"][0]["type"], 1);
        assert_eq!(
            body["components"][0]["components"][1]["custom_id"],
            "ap:1:d"
        );
        out.buttons = vec![vec![b("x", &"d".repeat(101))]];
        assert!(matches!(payload(&out, 10), Err(SendError::Permanent(_))));
    }

    #[test]
    fn too_long_text_is_refused_before_sending() {
        let out = Outbound::text("10".into(), "x".repeat(2001), "k");
        assert_eq!(payload(&out, 10), Err(SendError::TooLong));
    }

    #[test]
    fn thread_names_come_from_the_first_line() {
        assert_eq!(thread_name("## Plan for today\nmore"), "Plan for today");
        assert_eq!(thread_name("   \n"), "hermes");
        assert_eq!(thread_name(&"y".repeat(300)).len(), 100);
    }
}
