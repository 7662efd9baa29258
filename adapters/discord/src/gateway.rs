//! The gateway listener: a serenity client whose event handler only forwards events, in the
//! order they arrived, to one loop that stores each in the inbox (retrying while the inbox is
//! unavailable, since Discord will not send it again), acknowledges button presses after that,
//! and reports the connection's state to the health board.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hermes_adapter::{AdapterError, InboundSink};
use serenity::all::{
    Client, ClientBuilder, ComponentInteraction, ConnectionStage, Context, EventHandler,
    GatewayError, GatewayIntents, GuildChannel, Interaction, Message as DiscordMessage,
    RatelimitInfo, Ready, ResumedEvent, ShardStageUpdateEvent,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::channels::Place;
use crate::{BotIdentity, DiscordAdapter, inbound, outbound};

/// Events waiting to be stored; the SDK's dispatch tasks wait when it is full.
const QUEUE: usize = 256;
/// How often the connection's state is looked at (a heartbeat to the health board while it
/// is connected).
const TICK: Duration = Duration::from_secs(5);

enum Event {
    Message(Box<DiscordMessage>),
    Button(Box<ComponentInteraction>),
    Thread(Box<GuildChannel>),
    /// A session became live: READY (`true`, new session) or RESUMED.
    Session(bool),
    Stage {
        old: ConnectionStage,
        new: ConnectionStage,
    },
}

/// Forwards what the SDK dispatches into one queue, stored in queue order. serenity spawns a
/// task per event, in gateway order; two events arriving within microseconds could in principle
/// reach the queue swapped (the only ordering hermes does not control here).
struct Forward {
    tx: mpsc::Sender<Event>,
}

impl Forward {
    async fn push(&self, event: Event) {
        // Closed only when the listener stopped; the event is then of no use.
        let _ = self.tx.send(event).await;
    }
}

#[async_trait]
impl EventHandler for Forward {
    async fn message(&self, _: Context, msg: DiscordMessage) {
        self.push(Event::Message(Box::new(msg))).await;
    }

    async fn interaction_create(&self, _: Context, interaction: Interaction) {
        if let Interaction::Component(c) = interaction {
            self.push(Event::Button(Box::new(c))).await;
        }
    }

    async fn thread_create(&self, _: Context, thread: GuildChannel) {
        self.push(Event::Thread(Box::new(thread))).await;
    }

    async fn ready(&self, _: Context, ready: Ready) {
        tracing::info!(bot = %ready.user.name, guilds = ready.guilds.len(), "Discord gateway ready (new session)");
        self.push(Event::Session(true)).await;
    }

    async fn resume(&self, _: Context, _: ResumedEvent) {
        tracing::info!("Discord gateway session resumed");
        self.push(Event::Session(false)).await;
    }

    async fn shard_stage_update(&self, _: Context, update: ShardStageUpdateEvent) {
        tracing::debug!(old = ?update.old, new = ?update.new, "Discord gateway stage");
        self.push(Event::Stage {
            old: update.old,
            new: update.new,
        })
        .await;
    }

    async fn ratelimit(&self, info: RatelimitInfo) {
        tracing::warn!(path = %info.path, wait = ?info.timeout, global = info.global, "Discord rate limit: waiting");
    }
}

fn intents(message_content: bool) -> GatewayIntents {
    let mut intents =
        GatewayIntents::GUILDS | GatewayIntents::GUILD_MESSAGES | GatewayIntents::DIRECT_MESSAGES;
    if message_content {
        intents |= GatewayIntents::MESSAGE_CONTENT;
    }
    intents
}

fn gateway_error(e: serenity::Error) -> AdapterError {
    match e {
        serenity::Error::Gateway(GatewayError::InvalidAuthentication) => {
            AdapterError::Unauthorized("Discord rejected the bot token".into())
        }
        serenity::Error::Gateway(GatewayError::DisallowedGatewayIntents) => AdapterError::Fatal(
            "Discord refused the Message Content intent: enable it for the bot in the developer portal (Bot > Privileged Gateway Intents) or set discord.message_content = false".into(),
        ),
        other => AdapterError::Transient(format!("Discord gateway: {other}")),
    }
}

/// Receive until `shutdown`, or until the SDK gives up on the gateway.
pub(crate) async fn run(
    adapter: &DiscordAdapter,
    me: BotIdentity,
    sink: Arc<dyn InboundSink>,
    shutdown: CancellationToken,
) -> Result<(), AdapterError> {
    let (tx, mut rx) = mpsc::channel(QUEUE);
    let mut client: Client = ClientBuilder::new_with_http(
        adapter.rest.http_for_gateway(),
        intents(adapter.settings.message_content),
    )
    .event_handler(Forward { tx })
    .await
    .map_err(gateway_error)?;
    if let Some(url) = &adapter.settings.gateway_url {
        // The shard manager reads this shared URL when a shard connects.
        *client.ws_url.lock().await = url.as_str().trim_end_matches('/').to_owned();
    }
    let manager = client.shard_manager.clone();
    let mut gateway = tokio::spawn(async move { client.start().await });
    let mut tick = tokio::time::interval(TICK);
    let mut link = Link::default();
    let result = loop {
        tokio::select! {
            _ = shutdown.cancelled() => break Ok(()),
            ended = &mut gateway => break Err(match ended {
                Ok(Ok(())) => AdapterError::Transient("Discord gateway closed".into()),
                Ok(Err(e)) => gateway_error(e),
                Err(e) => AdapterError::Fatal(format!("Discord gateway task failed: {e}")),
            }),
            Some(event) = rx.recv() => match event {
                Event::Stage { old, new } => {
                    if let Some(outage) = link.stage(old, new) {
                        tracing::warn!("Discord {outage}");
                        sink.disconnected(&outage);
                    }
                }
                Event::Session(new_session) => {
                    if let Some(outage) = link.session() {
                        tracing::warn!("Discord {outage}");
                        sink.disconnected(&outage);
                    }
                    if link.sessions > 1 {
                        tracing::info!(resumed = !new_session, "Discord gateway back after an outage");
                    }
                    sink.heartbeat();
                }
                Event::Thread(thread) => {
                    adapter.channels.remember(thread.id.get(), Place::of(&thread));
                    adapter.remember_thread(thread.id.get());
                }
                Event::Message(msg) => {
                    if !store_message(adapter, &me, sink.as_ref(), &msg, &shutdown).await {
                        break Ok(());
                    }
                }
                Event::Button(press) => {
                    if !store_button(adapter, sink.as_ref(), &press, &shutdown).await {
                        break Ok(());
                    }
                }
            },
            _ = tick.tick() => {
                let runners = manager.runners.lock().await;
                let up = runners.values().any(|r| r.stage == ConnectionStage::Connected);
                drop(runners);
                if up {
                    sink.heartbeat();
                }
            }
        }
    };
    manager.shutdown_all().await;
    if !gateway.is_finished() {
        let _ = tokio::time::timeout(Duration::from_secs(5), gateway).await;
    }
    result
}

/// What the listener knows of its connection, to report each outage once.
#[derive(Debug, Default)]
struct Link {
    /// Sessions that became live in this run; every one after the first followed an outage.
    sessions: u32,
    outage_reported: bool,
}

impl Link {
    /// A stage change; `Some(reason)` when it is the start of an outage.
    fn stage(&mut self, old: ConnectionStage, new: ConnectionStage) -> Option<String> {
        let lost = old == ConnectionStage::Connected && new != ConnectionStage::Connected;
        if !lost || self.outage_reported {
            return None;
        }
        self.outage_reported = true;
        Some(format!("gateway disconnected ({new:?}); reconnecting"))
    }

    /// A session became live (READY or RESUMED); `Some(reason)` for an outage not reported yet
    /// (the drop and the reconnect fell between two stage updates).
    fn session(&mut self) -> Option<String> {
        self.sessions += 1;
        let unreported = self.sessions > 1 && !self.outage_reported;
        self.outage_reported = false;
        unreported.then(|| "gateway disconnected; reconnected".to_owned())
    }
}

/// Store one message, retrying while the inbox is unavailable. `false`: shut down meanwhile.
async fn store_message(
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
async fn store_button(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_outage_is_reported_once() {
        use ConnectionStage::*;
        let mut link = Link::default();
        assert_eq!(link.stage(Identifying, Connected), None);
        assert_eq!(link.session(), None, "the first session is no outage");
        // A drop seen by a stage update, then the resume: one report.
        assert!(link.stage(Connected, Resuming).is_some());
        assert_eq!(link.stage(Resuming, Connecting), None);
        assert_eq!(link.session(), None);
        // A drop and resume between two stage updates: reported when the session is back.
        assert!(link.session().is_some());
        assert_eq!(link.sessions, 3);
    }

    #[test]
    fn message_content_is_asked_for_only_when_configured() {
        assert!(intents(true).contains(GatewayIntents::MESSAGE_CONTENT));
        assert!(!intents(false).contains(GatewayIntents::MESSAGE_CONTENT));
        assert!(intents(false).contains(GatewayIntents::DIRECT_MESSAGES));
    }
}
