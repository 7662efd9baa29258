//! The gateway listener, on twilight-gateway: one shard of `discord.shards` per call (servers are
//! split over shards by Discord, direct messages come on shard 0). Its session is kept in the
//! store after every READY and as events are handled, so a restarted daemon RESUMEs it and Discord replays
//! what was posted while it was down. A task polls the shard (which heartbeats, reconnects and
//! resumes by itself) and forwards each frame; this loop stores events in the order they arrived
//! (retrying while the inbox is unavailable, since Discord will not send them again), answers
//! button presses after that, reports liveness from what it last received, and on a session it
//! could not resume catches up on recent chats over REST (`catch_up.rs`).
//!
//! The sequence number kept is the last event this loop finished with, never one the shard
//! received but this loop had not stored: a resume replays from there, and a replayed event the
//! inbox already has is a no-op.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use hermes_adapter::{AdapterError, InboundSink};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serenity::all::{GuildChannel, Interaction, Message as DiscordMessage};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use twilight_gateway::{
    CloseFrame, ConfigBuilder, Intents, Message as Frame, Session, Shard, ShardId,
};

use crate::channels::Place;
use crate::receive::{store_button, store_message};
use crate::shard::ShardOf;
use crate::{BotIdentity, DiscordAdapter, catch_up};

/// How often the session is saved (when it moved) and liveness reported.
const TICK: Duration = Duration::from_secs(5);
/// Longest silence (no frame at all) still counted as alive, whatever the heartbeat interval.
const MIN_SILENCE: Duration = Duration::from_secs(10);

/// A gateway session to resume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Saved {
    pub id: String,
    pub seq: u64,
    pub resume_url: String,
}

/// What the shard's task forwards.
enum Forwarded {
    Text(String),
    /// The connection closed (the shard reconnects by itself unless the code is fatal).
    Closed(Option<u16>),
    /// The shard gave up: closed with a code it cannot reconnect after.
    Ended(Option<u16>),
}

/// One gateway payload, its data left raw until its type is known.
#[derive(Deserialize)]
struct Payload<'a> {
    op: u8,
    #[serde(default)]
    s: Option<u64>,
    #[serde(default)]
    t: Option<&'a str>,
    #[serde(borrow, default)]
    d: Option<&'a RawValue>,
}

fn intents(message_content: bool) -> Intents {
    let mut intents = Intents::GUILDS | Intents::GUILD_MESSAGES | Intents::DIRECT_MESSAGES;
    if message_content {
        intents |= Intents::MESSAGE_CONTENT;
    }
    intents
}

/// Why the gateway closed for good, from its close code.
fn fatal(code: Option<u16>) -> AdapterError {
    match code {
        Some(4004) => AdapterError::Unauthorized("Discord rejected the bot token".into()),
        Some(4011) => AdapterError::Fatal(
            "Discord requires sharding for this bot (it is in too many servers): set discord.shards to the number Discord recommends (GET /gateway/bot)".into(),
        ),
        Some(4010) => AdapterError::Fatal(
            "Discord refused the shard: discord.shards must be the same on every process and no more than the bot's servers need".into(),
        ),
        Some(4014) => AdapterError::Fatal(
            "Discord refused the Message Content intent: enable it for the bot in the developer portal (Bot > Privileged Gateway Intents) or set discord.message_content = false".into(),
        ),
        Some(code) => AdapterError::Fatal(format!("Discord closed the gateway with code {code}")),
        None => AdapterError::Transient("Discord gateway closed".into()),
    }
}

/// Poll the shard and forward every frame until it gives up or the receiver is gone.
async fn pump(mut shard: Shard, tx: mpsc::UnboundedSender<Forwarded>) {
    let mut last_close = None;
    while let Some(item) = shard.next().await {
        let forwarded = match item {
            Ok(Frame::Text(text)) => Forwarded::Text(text),
            Ok(Frame::Close(frame)) => {
                last_close = frame.as_ref().map(|f| f.code);
                Forwarded::Closed(last_close)
            }
            Err(e) => {
                tracing::warn!(error = %e, "Discord gateway: cannot connect or read; retrying");
                continue;
            }
        };
        if tx.send(forwarded).is_err() {
            return;
        }
    }
    let _ = tx.send(Forwarded::Ended(last_close));
}

/// Receive until `shutdown`, or until Discord closes the gateway for good.
pub(crate) async fn run(
    adapter: &DiscordAdapter,
    me: BotIdentity,
    shard_of: ShardOf,
    sink: Arc<dyn InboundSink>,
    shutdown: CancellationToken,
) -> Result<(), AdapterError> {
    let url = match &adapter.settings.gateway_url {
        Some(u) => u.as_str().trim_end_matches('/').to_owned(),
        None => adapter.rest.gateway_url().await.map_err(|e| {
            AdapterError::Transient(format!("cannot ask Discord for its gateway: {e}"))
        })?,
    };
    let saved: Option<Saved> = sink
        .recall(&shard_of.session_key())
        .await
        .and_then(|s| serde_json::from_str(&s).ok());
    let mut config = ConfigBuilder::new(
        adapter.settings.token.clone(),
        intents(adapter.settings.message_content),
    )
    .proxy_url(url);
    if let Some(s) = &saved {
        tracing::info!(session = %s.id, seq = s.seq, shard = %shard_of, "Discord: resuming the gateway session of the last run");
        config = config
            .session(Session::new(s.seq, s.id.clone()))
            .resume_url(s.resume_url.clone());
    }
    let shard = Shard::with_config(
        ShardId::new(u32::from(shard_of.index), u32::from(shard_of.total)),
        config.build(),
    );
    let sender = shard.sender();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let pump = tokio::spawn(pump(shard, tx));
    let mut state = State {
        shard: shard_of,
        session: saved.clone(),
        kept: saved,
        link: Link::default(),
        last_frame: Instant::now(),
        heartbeat_every: None,
    };
    let mut tick = tokio::time::interval(TICK);
    let result = loop {
        tokio::select! {
            _ = shutdown.cancelled() => break Ok(()),
            frame = rx.recv() => match frame {
                None => break Err(AdapterError::Transient("Discord gateway task ended".into())),
                Some(Forwarded::Ended(code)) => break Err(fatal(code)),
                Some(Forwarded::Closed(code)) => {
                    if matches!(code, Some(4004 | 4010..=4014)) {
                        continue; // the shard ends next; reported then
                    }
                    if let Some(outage) = state.link.closed(code) {
                        tracing::warn!("Discord {outage}");
                        sink.disconnected(&outage);
                    }
                }
                Some(Forwarded::Text(text)) => {
                    state.last_frame = Instant::now();
                    if !handle(adapter, &me, sink.as_ref(), &mut state, &text, &shutdown).await {
                        break Ok(());
                    }
                }
            },
            _ = tick.tick() => {
                state.keep(sink.as_ref()).await;
                let allowed = state.heartbeat_every.map_or(MIN_SILENCE, |h| (h * 2).max(MIN_SILENCE));
                if state.last_frame.elapsed() < allowed && state.link.up {
                    sink.heartbeat();
                }
            }
        }
    };
    // Close so that the session can be resumed by the next run, and keep where it stood.
    let _ = sender.close(CloseFrame::RESUME);
    tokio::time::sleep(Duration::from_millis(100)).await;
    pump.abort();
    state.keep(sink.as_ref()).await;
    result
}

/// What the loop knows of its session and connection.
struct State {
    shard: ShardOf,
    /// The live session, with the last sequence number handled.
    session: Option<Saved>,
    /// What was last kept in the store.
    kept: Option<Saved>,
    link: Link,
    last_frame: Instant,
    heartbeat_every: Option<Duration>,
}

impl State {
    /// Keep the session in the store when it moved.
    async fn keep(&mut self, sink: &dyn InboundSink) {
        if self.session == self.kept {
            return;
        }
        let Some(s) = &self.session else {
            return;
        };
        let Ok(json) = serde_json::to_string(s) else {
            return;
        };
        match sink.remember(&self.shard.session_key(), &json).await {
            Ok(()) => self.kept = self.session.clone(),
            Err(e) => tracing::warn!(error = %e, "cannot keep the Discord gateway session"),
        }
    }

    fn handled(&mut self, seq: Option<u64>) {
        if let (Some(s), Some(seq)) = (self.session.as_mut(), seq) {
            s.seq = s.seq.max(seq);
        }
    }
}

/// The data of a READY.
#[derive(Deserialize)]
struct Ready {
    session_id: String,
    resume_gateway_url: String,
}

#[derive(Deserialize)]
struct Hello {
    heartbeat_interval: u64,
}

/// The type and raw data of a dispatch frame (`op` 0), for the fuzz targets.
pub(crate) fn parse_payload(text: &str) -> Option<(&str, &str)> {
    let p = serde_json::from_str::<Payload<'_>>(text).ok()?;
    Some((
        p.t.filter(|_| p.op == 0)?,
        p.d.map_or("null", RawValue::get),
    ))
}

/// Handle one frame. `false`: shut down meanwhile.
async fn handle(
    adapter: &DiscordAdapter,
    me: &BotIdentity,
    sink: &dyn InboundSink,
    state: &mut State,
    text: &str,
    shutdown: &CancellationToken,
) -> bool {
    let Ok(p) = serde_json::from_str::<Payload<'_>>(text) else {
        tracing::warn!("Discord gateway: a frame that is not a gateway payload; skipped");
        return true;
    };
    let data = p.d.map_or("null", RawValue::get);
    match (p.op, p.t) {
        (10, _) => {
            if let Ok(h) = serde_json::from_str::<Hello>(data) {
                state.heartbeat_every = Some(Duration::from_millis(h.heartbeat_interval));
            }
        }
        (11, _) => sink.heartbeat(),
        (0, Some("READY")) => {
            let Ok(ready) = serde_json::from_str::<Ready>(data) else {
                tracing::warn!("Discord gateway: a READY without its session");
                return true;
            };
            tracing::info!(session = %ready.session_id, shard = %state.shard, "Discord gateway ready (new session)");
            state.session = Some(Saved {
                id: ready.session_id,
                seq: p.s.unwrap_or(0),
                resume_url: ready.resume_gateway_url,
            });
            state.keep(sink).await;
            session_up(sink, state);
            // Whatever was posted while no session was live is not replayed: fetch it.
            if !catch_up::recent(adapter, me, state.shard, sink, shutdown).await {
                return false;
            }
        }
        (0, Some("RESUMED")) => {
            tracing::info!("Discord gateway session resumed");
            session_up(sink, state);
        }
        (0, Some("MESSAGE_CREATE")) => match serde_json::from_str::<DiscordMessage>(data) {
            Ok(msg) => {
                if !store_message(adapter, me, sink, &msg, shutdown).await {
                    return false;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "Discord gateway: a message that cannot be read; skipped")
            }
        },
        (0, Some("INTERACTION_CREATE")) => match serde_json::from_str::<Interaction>(data) {
            Ok(Interaction::Component(press)) => {
                if !store_button(adapter, sink, &press, shutdown).await {
                    return false;
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "Discord gateway: an interaction that cannot be read; skipped")
            }
        },
        (0, Some("THREAD_CREATE")) => {
            if let Ok(thread) = serde_json::from_str::<GuildChannel>(data) {
                adapter
                    .channels
                    .remember(thread.id.get(), Place::of(&thread));
                adapter.remember_thread(thread.id.get());
            }
        }
        _ => {}
    }
    if p.op == 0 {
        state.handled(p.s);
    }
    true
}

fn session_up(sink: &dyn InboundSink, state: &mut State) {
    if let Some(outage) = state.link.session() {
        tracing::warn!("Discord {outage}");
        sink.disconnected(&outage);
    }
    if state.link.sessions > 1 {
        tracing::info!("Discord gateway back after an outage");
    }
    sink.heartbeat();
}

/// What the listener knows of its connection, to report each outage once.
#[derive(Debug, Default)]
struct Link {
    /// Sessions that became live in this run; every one after the first followed an outage.
    sessions: u32,
    outage_reported: bool,
    /// A session is live (READY or RESUMED since the last close).
    up: bool,
}

impl Link {
    /// The connection closed; `Some(reason)` when it is the start of an outage.
    fn closed(&mut self, code: Option<u16>) -> Option<String> {
        self.up = false;
        if self.outage_reported {
            return None;
        }
        self.outage_reported = true;
        Some(match code {
            Some(c) => format!("gateway disconnected (close code {c}); reconnecting"),
            None => "gateway disconnected; reconnecting".to_owned(),
        })
    }

    /// A session became live (READY or RESUMED); `Some(reason)` for an outage not reported yet.
    fn session(&mut self) -> Option<String> {
        self.sessions += 1;
        self.up = true;
        let unreported = self.sessions > 1 && !self.outage_reported;
        self.outage_reported = false;
        unreported.then(|| "gateway disconnected; reconnected".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_outage_is_reported_once() {
        let mut link = Link::default();
        assert_eq!(link.session(), None, "the first session is no outage");
        // A close, then the resume: one report.
        assert!(link.closed(Some(1006)).is_some());
        assert_eq!(
            link.closed(None),
            None,
            "a failed reconnect is the same outage"
        );
        assert_eq!(link.session(), None);
        // A drop and resume between two closes seen: reported when the session is back.
        assert!(link.session().is_some());
        assert_eq!(link.sessions, 3);
    }

    #[test]
    fn message_content_is_asked_for_only_when_configured() {
        assert!(intents(true).contains(Intents::MESSAGE_CONTENT));
        assert!(!intents(false).contains(Intents::MESSAGE_CONTENT));
        assert!(intents(false).contains(Intents::DIRECT_MESSAGES));
    }

    #[test]
    fn fatal_close_codes_say_what_to_do() {
        assert!(matches!(fatal(Some(4004)), AdapterError::Unauthorized(_)));
        assert!(fatal(Some(4014)).to_string().contains("Message Content"));
        assert!(fatal(Some(4011)).to_string().contains("discord.shards"));
        assert!(matches!(fatal(None), AdapterError::Transient(_)));
    }

    #[test]
    fn the_kept_sequence_is_the_last_handled_and_never_goes_back() {
        let mut state = State {
            shard: ShardOf::new(0, 1),
            session: Some(Saved {
                id: "s".into(),
                seq: 5,
                resume_url: "ws://x".into(),
            }),
            kept: None,
            link: Link::default(),
            last_frame: Instant::now(),
            heartbeat_every: None,
        };
        state.handled(Some(7));
        state.handled(Some(6));
        state.handled(None);
        assert_eq!(state.session.as_ref().unwrap().seq, 7);
    }
}
