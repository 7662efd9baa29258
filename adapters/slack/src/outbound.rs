//! [`Outbound`] -> `chat.postMessage` / `chat.update`: mrkdwn rendering with a plain-text
//! fallback when Slack rejects the message's blocks, threads, and Block Kit buttons.
//!
//! A message with buttons is sent as blocks: its text in `section` blocks of at most 3,000
//! characters (Slack's limit per section, below the 4,000 the core chunks to) and one `actions`
//! block per row of buttons, each button carrying its payload as `value`. The top-level `text`
//! stays as the notification fallback. An edit replaces the blocks with the text alone, which
//! removes the buttons of an answered request.

use hermes_adapter::{Button, Outbound, SendError, SentId};
use slack_morphism::prelude::*;

use crate::format::{escape, to_mrkdwn};
use crate::web::{Failure, Web, classify};

/// Characters Slack accepts in one section block.
const MAX_SECTION: usize = 3000;
/// Characters of a button label Slack shows.
const MAX_LABEL: usize = 75;
/// Characters of a button value.
const MAX_VALUE: usize = 2000;

/// Whether Slack refused the formatting (the blocks), so plain text is worth a try.
fn formatting_rejected(f: &Failure) -> bool {
    matches!(
        f.code(),
        Some("invalid_blocks" | "invalid_blocks_format" | "invalid_attachments")
    )
}

/// Largest file hermes uploads (Slack takes up to 1 GB; a chat is not a file store).
pub(crate) const MAX_UPLOAD_BYTES: u64 = 100 * 1024 * 1024;

/// Send one message: mrkdwn (and blocks, for buttons) first; plain text if Slack rejects that.
/// A file is shared with the text as its comment.
pub(crate) async fn send(web: &Web, out: &Outbound) -> Result<SentId, SendError> {
    if let Some(f) = &out.file {
        let bytes = tokio::fs::read(&f.path).await.map_err(|e| {
            SendError::Permanent(format!("the file `{}` to send is gone: {e}", f.name))
        })?;
        let caption = Some(to_mrkdwn(&out.text)).filter(|c| !c.trim().is_empty());
        let thread = out.thread.as_ref().map(|t| t.0.as_str());
        return web
            .upload(out.chat.as_str(), thread, &f.name, &f.mime, bytes, caption)
            .await
            .map(SentId)
            .map_err(classify);
    }
    if let Some(since) = out.maybe_sent_since
        && let Some(ts) = already_sent(web, out, since).await
    {
        tracing::info!(chat = %out.chat, ts, "Slack: this reply went out before the restart; not sending it again");
        return Ok(SentId(ts));
    }
    let request = |content: SlackMessageContent| {
        let content = content.with_metadata(SlackMessageMetadata {
            event_type: METADATA_EVENT.to_owned(),
            event_payload: Some([("key".to_owned(), out.idempotency_key.clone())].into()),
        });
        let req = SlackApiChatPostMessageRequest::new(SlackChannelId(out.chat.0.clone()), content);
        match &out.thread {
            Some(t) => req.with_thread_ts(SlackTs(t.0.clone())),
            None => req,
        }
    };
    let rendered = to_mrkdwn(&out.text);
    let content = content(&rendered, &out.buttons, false)?;
    match web.post(&request(content)).await {
        Ok(ts) => Ok(SentId(ts)),
        Err(f) if formatting_rejected(&f) => {
            tracing::warn!(
                code = f.code().unwrap_or_default(),
                "Slack rejected the formatting; sending as plain text"
            );
            let plain = SlackMessageContent::new().with_text(escape(&out.text));
            match web.post(&request(plain)).await {
                Ok(ts) => Ok(SentId(ts)),
                Err(f) if formatting_rejected(&f) => Err(SendError::BadFormat(
                    f.code().unwrap_or_default().to_owned(),
                )),
                Err(f) => Err(classify(f)),
            }
        }
        Err(f) => Err(classify(f)),
    }
}

/// The metadata event type of hermes' posts; its payload's `key` is the outbox row's key.
const METADATA_EVENT: &str = "hermes_reply";
/// How far before the row was queued its post is looked for (clocks differ).
const LOOKBACK_SECS: i64 = 60;
/// Most messages looked through.
const LOOKUP_LIMIT: u16 = 200;

/// The `ts` of a post of this reply already in the channel (or thread), if any: Slack has no
/// idempotency key, so a reply that may have gone out (an attempt without an answer, a process
/// killed after the post) is looked for by the key in its metadata before it is sent again.
/// If the lookup fails the reply is sent: a double is better than a loss.
async fn already_sent(
    web: &Web,
    out: &Outbound,
    since: hermes_adapter::UnixMillis,
) -> Option<String> {
    let oldest = format!("{}.000000", (since / 1000 - LOOKBACK_SECS).max(0));
    let thread = out.thread.as_ref().map(|t| t.as_str());
    match web
        .history(out.chat.as_str(), thread, &oldest, LOOKUP_LIMIT)
        .await
    {
        Ok(messages) => messages
            .into_iter()
            .find(|m| {
                m.content.metadata.as_ref().is_some_and(|md| {
                    md.event_type == METADATA_EVENT
                        && md
                            .event_payload
                            .as_ref()
                            .and_then(|p| p.get("key"))
                            .is_some_and(|k| *k == out.idempotency_key)
                })
            })
            .map(|m| m.origin.ts.0),
        Err(e) => {
            tracing::debug!(chat = %out.chat, error = ?e, "Slack: cannot look for an earlier post of this reply; sending it");
            None
        }
    }
}

/// Replace a message's text (and remove its buttons), with the same fallback.
pub(crate) async fn edit(web: &Web, chat: &str, ts: &str, text: &str) -> Result<(), SendError> {
    let request = |content| {
        SlackApiChatUpdateRequest::new(
            SlackChannelId(chat.to_owned()),
            content,
            SlackTs(ts.to_owned()),
        )
    };
    let rendered = to_mrkdwn(text);
    let content = content(&rendered, &[], true)?;
    match web.update(&request(content)).await {
        Ok(()) => Ok(()),
        Err(f) if formatting_rejected(&f) => {
            let plain = content_plain(text);
            web.update(&request(plain)).await.map_err(classify)
        }
        Err(f) => Err(classify(f)),
    }
}

fn content_plain(text: &str) -> SlackMessageContent {
    SlackMessageContent::new()
        .with_text(escape(text))
        .with_blocks(
            sections(&escape(text))
                .into_iter()
                .map(|s| {
                    SlackSectionBlock::new()
                        .with_text(SlackBlockText::Plain(SlackBlockPlainText::new(s)))
                        .into()
                })
                .collect(),
        )
}

/// The message content: the text alone, or (with buttons, or `blocks` for an edit) the text in
/// sections followed by the button rows.
fn content(
    mrkdwn: &str,
    buttons: &[Vec<Button>],
    blocks_for_edit: bool,
) -> Result<SlackMessageContent, SendError> {
    let text = SlackMessageContent::new().with_text(mrkdwn.to_owned());
    if buttons.is_empty() && !blocks_for_edit {
        return Ok(text);
    }
    if buttons.is_empty() && blocks_for_edit {
        // Plain `text` without blocks is what a normal message is; for an edit the blocks are
        // set so that any earlier buttons disappear.
        let blocks = sections(mrkdwn).into_iter().map(section).collect();
        return Ok(text.with_blocks(blocks));
    }
    let mut blocks: Vec<SlackBlock> = sections(mrkdwn).into_iter().map(section).collect();
    for (r, row) in buttons.iter().enumerate() {
        let mut elements = Vec::with_capacity(row.len());
        for (i, b) in row.iter().enumerate() {
            if b.data.chars().count() > MAX_VALUE {
                return Err(SendError::Permanent(format!(
                    "button data exceeds Slack's {MAX_VALUE} characters"
                )));
            }
            let label: String = b.label.chars().take(MAX_LABEL).collect();
            elements.push(SlackActionBlockElement::Button(
                SlackBlockButtonElement::new(SlackBlockPlainTextOnly::from(label))
                    .with_action_id(SlackActionId(format!("hermes_{r}_{i}")))
                    .with_value(b.data.clone()),
            ));
        }
        blocks.push(SlackActionsBlock::new(elements).into());
    }
    Ok(text.with_blocks(blocks))
}

fn section(text: String) -> SlackBlock {
    SlackSectionBlock::new()
        .with_text(SlackBlockText::MarkDown(SlackBlockMarkDownText::new(text)))
        .into()
}

/// `text` in pieces of at most [`MAX_SECTION`] characters, cut at line ends where possible.
fn sections(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut cur_len = 0;
    for line in text.split_inclusive('\n') {
        let len = line.chars().count();
        if cur_len + len > MAX_SECTION && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
            cur_len = 0;
        }
        if len > MAX_SECTION {
            let chars: Vec<char> = line.chars().collect();
            for piece in chars.chunks(MAX_SECTION) {
                out.push(piece.iter().collect());
            }
            continue;
        }
        cur.push_str(line);
        cur_len += len;
    }
    if !cur.trim().is_empty() || out.is_empty() {
        out.push(if cur.trim().is_empty() {
            " ".to_owned()
        } else {
            cur
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_split_into_sections_under_the_limit() {
        let text = "line of forty characters, more or less.\n".repeat(200);
        let parts = sections(&text);
        assert!(parts.len() >= 3);
        assert!(parts.iter().all(|p| p.chars().count() <= MAX_SECTION));
        assert_eq!(parts.concat(), text);
        let one_line = "x".repeat(7000);
        assert!(
            sections(&one_line)
                .iter()
                .all(|p| p.chars().count() <= MAX_SECTION)
        );
    }

    #[test]
    fn buttons_become_an_actions_block() {
        let buttons = vec![vec![
            Button {
                label: "Allow".into(),
                data: "ap:1:o".into(),
            },
            Button {
                label: "Deny".into(),
                data: "ap:1:d".into(),
            },
        ]];
        let c = content("*Permission needed*", &buttons, false).unwrap();
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["text"], "*Permission needed*");
        assert_eq!(json["blocks"][0]["type"], "section");
        assert_eq!(json["blocks"][1]["type"], "actions");
        assert_eq!(json["blocks"][1]["elements"][1]["value"], "ap:1:d");
        assert_eq!(json["blocks"][1]["elements"][1]["text"]["text"], "Deny");
    }
}
