//! Catching up after a gateway session that could not be resumed (the saved one had expired, or
//! there was none): what was posted to the chats the bot heard from in the last day, after the
//! last message stored from each, is fetched over REST and stored like live events (the inbox
//! recognises what it already has). Bounded: the 200 most recent chats, 100 messages each.
//! A chat nobody had written in before the outage is not known, so a first message posted
//! while no session was live can only come back through a RESUME. A shard of several catches up
//! on the chats it carries (their server's shard; direct messages on shard 0).

use std::time::Duration;

use hermes_adapter::{InboundSink, now_millis};
use tokio_util::sync::CancellationToken;

use crate::receive::store_message;
use crate::shard::ShardOf;
use crate::{BotIdentity, DiscordAdapter};

/// How far back chats are looked at.
const WITHIN: Duration = Duration::from_secs(24 * 3600);
/// Most chats caught up on.
const CHATS: usize = 200;
/// Most messages fetched per chat.
const PER_CHAT: u8 = 100;

/// Catch up on recent chats. `false`: shut down meanwhile.
pub(crate) async fn recent(
    adapter: &DiscordAdapter,
    me: &BotIdentity,
    shard: ShardOf,
    sink: &dyn InboundSink,
    shutdown: &CancellationToken,
) -> bool {
    let since = now_millis() - WITHIN.as_millis() as i64;
    let chats = sink.recent_chats(since, CHATS).await;
    let mut fetched = 0;
    for seen in &chats {
        let channel = seen
            .thread
            .as_ref()
            .map_or(seen.chat.as_str(), |t| t.as_str());
        let (Ok(channel), Ok(after)) = (channel.parse::<u64>(), seen.last.as_str().parse::<u64>())
        else {
            continue;
        };
        // Another shard's chat (or one whose server cannot be told now: shard 0 takes it).
        if shard.total > 1 {
            let guild = adapter.channels.guild_of(&adapter.rest, channel).await;
            if !shard.carries(guild.flatten()) {
                continue;
            }
        }
        let messages = match adapter.rest.messages_after(channel, after, PER_CHAT).await {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(channel, error = %e, "Discord catch-up: cannot read a channel; skipped");
                continue;
            }
        };
        for msg in &messages {
            if shutdown.is_cancelled() || !store_message(adapter, me, sink, msg, shutdown).await {
                return false;
            }
        }
        fetched += messages.len();
    }
    if fetched > 0 {
        tracing::info!(
            fetched,
            chats = chats.len(),
            "Discord: caught up on messages posted while no gateway session was live"
        );
    }
    true
}
