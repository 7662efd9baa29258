//! Catching up after the listener was down: Slack retries an event it could not deliver only a
//! few times over minutes and then drops it, so when the listener starts, what was posted to the
//! chats the bot heard from in the last day, after the last message stored from each, is read
//! back (`conversations.history` for a direct or channel chat, `conversations.replies` for a
//! thread) and stored like live events; the inbox recognises what it already has, so a message
//! that also arrives live, or is read again at the next start, is answered once. Bounded: the
//! 200 most recent chats, the last 100 messages of each. A chat nobody had written in before the
//! outage is not known, so its first message can only come back through Slack's own retries.

use std::time::Duration;

use hermes_adapter::now_millis;
use tokio_util::sync::CancellationToken;

use crate::inbound::{Context, history_message};
use crate::web::ts_after;

/// How far back chats are looked at.
const WITHIN: Duration = Duration::from_secs(24 * 3600);
/// Most chats caught up on.
const CHATS: usize = 200;
/// Most messages read per chat.
const PER_CHAT: u16 = 100;

/// Catch up on recent chats.
pub(crate) async fn recent(ctx: &Context<'_>, shutdown: &CancellationToken) {
    let since = now_millis() - WITHIN.as_millis() as i64;
    let chats = ctx.sink.recent_chats(since, CHATS).await;
    // Where to read: each chat or thread after its last stored message; and a channel whose
    // mentions are answered in threads, after the newest of those threads' roots (a new mention
    // at the top of the channel while down).
    let mut reads: Vec<(&str, Option<&str>, &str)> = Vec::new();
    let mut roots: Vec<(&str, &str)> = Vec::new();
    for seen in &chats {
        let channel = seen.chat.as_str();
        let thread = seen.thread.as_ref().map(|t| t.as_str());
        reads.push((channel, thread, seen.last.as_str()));
        if let Some(root) = thread {
            match roots.iter_mut().find(|(c, _)| *c == channel) {
                Some((_, newest)) if ts_after(root, newest) => *newest = root,
                Some(_) => {}
                None => roots.push((channel, root)),
            }
        }
    }
    for (channel, root) in roots {
        if !reads.iter().any(|(c, t, _)| *c == channel && t.is_none()) {
            reads.push((channel, None, root));
        }
    }
    let mut read = 0;
    for (channel, thread, after) in reads {
        let messages = match ctx.web.history(channel, thread, after, PER_CHAT).await {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(channel, error = ?e, "Slack catch-up: cannot read a chat; skipped");
                continue;
            }
        };
        for m in &messages {
            if shutdown.is_cancelled() {
                return;
            }
            let Some(msg) = history_message(channel, m, ctx.me, ctx.rules) else {
                continue;
            };
            if let Err(e) = ctx.deliver(msg).await {
                tracing::warn!(error = %e, "Slack catch-up stopped: the inbox is unavailable");
                return;
            }
            read += 1;
        }
    }
    if read > 0 {
        tracing::info!(
            messages = read,
            chats = chats.len(),
            "Slack: read back what was posted while the listener was down (what the inbox already had is skipped)"
        );
    }
}
