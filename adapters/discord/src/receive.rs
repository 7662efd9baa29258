//! Storing what Discord sent (live from the gateway, or fetched when catching up): a message
//! converted and handed to the inbox, retried while the inbox is unavailable (Discord will not
//! send it again); a button press stored, then acknowledged.

use std::time::Duration;

use hermes_adapter::InboundSink;
use serenity::all::{ComponentInteraction, Message as DiscordMessage};
use tokio_util::sync::CancellationToken;

use crate::channels::Place;
use crate::{BotIdentity, DiscordAdapter, inbound, outbound};

/// Store one message, retrying while the inbox is unavailable. `false`: shut down meanwhile.
pub(crate) async fn store_message(
    adapter: &DiscordAdapter,
    me: &BotIdentity,
    sink: &dyn InboundSink,
    msg: &DiscordMessage,
    shutdown: &CancellationToken,
) -> bool {
    if msg.author.id.get() == me.id {
        return true;
    }
    let place = adapter
        .channels
        .place(&adapter.rest, msg.channel_id, msg.guild_id)
        .await;
    if let Place::Thread { .. } = place {
        adapter.remember_thread(msg.channel_id.get());
    }
    let roles = match msg.guild_id {
        Some(g) if !msg.mention_roles.is_empty() => {
            adapter.channels.bot_roles(&adapter.rest, g, me.id).await
        }
        _ => Vec::new(),
    };
    let Some(converted) = inbound::message(msg, me.id, place, &roles, &adapter.settings) else {
        return true;
    };
    deliver(sink, converted, shutdown).await.is_some()
}

/// Store a button press, then acknowledge it to Discord. `false`: shut down meanwhile.
pub(crate) async fn store_button(
    adapter: &DiscordAdapter,
    sink: &dyn InboundSink,
    press: &ComponentInteraction,
    shutdown: &CancellationToken,
) -> bool {
    let place = adapter
        .channels
        .place(&adapter.rest, press.channel_id, press.guild_id)
        .await;
    let Some(converted) = inbound::button(press, place, &adapter.settings) else {
        return true;
    };
    if deliver(sink, converted, shutdown).await.is_none() {
        return false;
    }
    if let Err(e) = outbound::acknowledge(&adapter.rest, press.id, &press.token).await {
        tracing::debug!(error = %e, "cannot acknowledge a Discord button press");
    }
    true
}

/// Hand a message to the inbox until it is stored; `None` if shut down first.
async fn deliver(
    sink: &dyn InboundSink,
    msg: hermes_adapter::Message,
    shutdown: &CancellationToken,
) -> Option<hermes_adapter::Delivery> {
    let mut wait = Duration::from_millis(250);
    loop {
        match sink.deliver(msg.clone()).await {
            Ok(d) => return Some(d),
            Err(e) => {
                tracing::error!(error = %e, message = %msg.id, retry_in = ?wait, "cannot store a Discord message; retrying (Discord does not send it again)");
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = shutdown.cancelled() => return None,
                }
                wait = (wait * 2).min(Duration::from_secs(30));
            }
        }
    }
}
