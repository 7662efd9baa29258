//! The adapter's own short notes to a sender, written without the agent: attachments refused by
//! the size cap, or a whole mail too large to read.
//!
//! Only authenticated senders get one (a note to a forged `From:` would be backscatter), and at
//! most one per mail: the listener sends it only after the mail was stored as new and recorded
//! as handled, so a mail read again after a crash or redelivered gets none.

use hermes_adapter::Outbound;

use crate::parse::{Parsed, Screened};

const MB: u64 = 1024 * 1024;

/// The note about the attachments of `parsed` that were larger than `limit`, if any.
pub fn refused_attachments(parsed: &Parsed, limit: u64) -> Option<Outbound> {
    if parsed.refused.is_empty() {
        return None;
    }
    let list: Vec<String> = parsed
        .refused
        .iter()
        .map(|(n, s)| format!("- {n} ({} MB)", s / MB))
        .collect();
    let text = format!(
        "Your message was received, but these attachments were not read because they are larger than the {} MB limit:\n\n{}\n",
        limit / MB,
        list.join("\n")
    );
    let mut out = Outbound::text(
        parsed.message.chat.id.clone(),
        text,
        format!("refused:{}", parsed.message.id),
    );
    out.thread = parsed.message.thread.clone();
    Some(out)
}

/// The note about a mail of `size` bytes that was not read because it is above `max`.
pub fn too_large(screened: &Screened, size: u64, max: u64) -> Outbound {
    let text = format!(
        "Your message was not read: it is {} MB, larger than the {} MB this agent accepts. \
         Please send it again without the large attachments.\n",
        size.div_ceil(MB),
        max / MB
    );
    let mut out = Outbound::text(
        screened.from.clone().into(),
        text,
        format!("too-large:{}", screened.thread.message_id),
    );
    out.thread = Some(screened.thread.to_thread());
    out
}
