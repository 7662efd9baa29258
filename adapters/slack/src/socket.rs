//! Socket Mode: `apps.connections.open`, then one websocket at a time, read here so that every
//! envelope is stored before its `envelope_id` is acknowledged.
//!
//! Why not slack-morphism's `SlackClientSocketModeListener`: it acks from inside its own tasks
//! once a callback returns, reconnects on its own schedule, and tells its owner nothing about a
//! connection that stays open but receives nothing. Here the loop is explicit:
//!
//! - every frame (event, `hello`, ping, pong) is a sign of life reported to the supervisor; the
//!   adapter pings every third of `idle`, so a live connection is never quiet for long;
//! - nothing at all for `idle` means the connection is deaf: `run` fails, the supervisor records
//!   the adapter as unhealthy and restarts it, which opens a new connection;
//! - `disconnect` (Slack's `refresh_requested`, `warning`, …) and a closed socket open a new
//!   connection right away; a connection that closes before `hello` counts as a failure, so a
//!   server that keeps refusing is retried with the supervisor's backoff, not in a tight loop;
//! - an envelope whose message cannot be stored is not acked and the connection is dropped:
//!   Slack delivers it again on the next connection, and the inbox's key makes the redelivery
//!   of anything already stored a no-op.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use hermes_adapter::AdapterError;
use serde::Deserialize;
use slack_morphism::prelude::*;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message as Frame;
use tokio_util::sync::CancellationToken;

use crate::inbound::Context;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// How one connection ended.
enum End {
    Shutdown,
    /// Open a new connection now.
    Reconnect(String),
}

/// Receive until `shutdown`, opening a new connection whenever Slack asks for one.
pub(crate) async fn run(
    ctx: &Context<'_>,
    app_token: &str,
    idle: Duration,
    ready: &tokio::sync::Notify,
    shutdown: &CancellationToken,
) -> Result<(), AdapterError> {
    loop {
        let url = tokio::select! {
            r = ctx.web.connections_open(app_token) => r?,
            _ = shutdown.cancelled() => return Ok(()),
        };
        let connected = tokio::select! {
            r = tokio::time::timeout(CONNECT_TIMEOUT, tokio_tungstenite::connect_async(url.as_str())) => r,
            _ = shutdown.cancelled() => return Ok(()),
        };
        let ws = match connected {
            Ok(Ok((ws, _))) => ws,
            Ok(Err(e)) => {
                return Err(AdapterError::Transient(format!(
                    "cannot open the Socket Mode websocket: {e}"
                )));
            }
            Err(_) => {
                return Err(AdapterError::Transient(
                    "the Socket Mode websocket did not open in time".into(),
                ));
            }
        };
        match session(ctx, ws, idle, ready, shutdown).await? {
            End::Shutdown => return Ok(()),
            End::Reconnect(reason) => {
                tracing::info!(%reason, "Slack Socket Mode: opening a new connection");
            }
        }
    }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn session(
    ctx: &Context<'_>,
    ws: Ws,
    idle: Duration,
    ready: &tokio::sync::Notify,
    shutdown: &CancellationToken,
) -> Result<End, AdapterError> {
    let (mut write, mut read) = ws.split();
    let mut ping = tokio::time::interval_at(Instant::now() + idle / 3, idle / 3);
    let mut last_frame = Instant::now();
    let mut hello = false;
    let closed = |hello: bool, why: String| {
        if hello {
            Ok(End::Reconnect(why))
        } else {
            Err(AdapterError::Transient(format!(
                "Socket Mode connection closed before hello: {why}"
            )))
        }
    };
    loop {
        let frame = tokio::select! {
            f = read.next() => f,
            _ = ping.tick() => {
                if let Err(e) = write.send(Frame::Ping(Vec::new().into())).await {
                    return closed(hello, format!("ping failed: {e}"));
                }
                continue;
            }
            _ = tokio::time::sleep_until(last_frame + idle) => {
                return Err(AdapterError::Transient(format!(
                    "Slack Socket Mode connection received nothing for {}s (no events, pings or pongs); replacing it",
                    idle.as_secs()
                )));
            }
            _ = shutdown.cancelled() => {
                let _ = write.send(Frame::Close(None)).await;
                return Ok(End::Shutdown);
            }
        };
        last_frame = Instant::now();
        let text = match frame {
            None => return closed(hello, "the server closed the connection".into()),
            Some(Err(e)) => return closed(hello, format!("websocket error: {e}")),
            Some(Ok(Frame::Close(_))) => {
                return closed(hello, "the server closed the connection".into());
            }
            Some(Ok(Frame::Text(text))) => text,
            Some(Ok(_)) => {
                // Ping (answered by tungstenite), pong, binary: signs of life.
                ctx.sink.heartbeat();
                continue;
            }
        };
        ctx.sink.heartbeat();
        let envelope: Envelope = match serde_json::from_str(text.as_str()) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "skipping a Socket Mode frame that is not an envelope");
                continue;
            }
        };
        match envelope.kind.as_str() {
            "hello" => {
                if !hello {
                    tracing::info!(
                        connections = envelope.num_connections.unwrap_or(1),
                        "Slack connected (Socket Mode)"
                    );
                }
                hello = true;
                ready.notify_one();
            }
            "disconnect" => {
                let reason = envelope.reason.unwrap_or_else(|| "unknown".into());
                return Ok(End::Reconnect(format!("Slack asked: {reason}")));
            }
            "events_api" => match payload::<SlackPushEventCallback>(envelope.payload) {
                Some(cb) => ctx.push_event(&cb).await?,
                None => tracing::warn!("skipping an events_api envelope hermes cannot read"),
            },
            "interactive" => match payload::<SlackInteractionEvent>(envelope.payload) {
                Some(ev) => ctx.interaction(&ev).await?,
                None => tracing::debug!("skipping an interaction hermes does not handle"),
            },
            "slash_commands" => match payload::<SlackCommandEvent>(envelope.payload) {
                Some(ev) => ctx.command(&ev).await?,
                None => tracing::warn!("skipping a slash command hermes cannot read"),
            },
            other => tracing::debug!(kind = other, "skipping a Socket Mode envelope type"),
        }
        let envelope_id = envelope.envelope_id;
        if let Some(id) = envelope_id {
            let ack = serde_json::json!({ "envelope_id": id }).to_string();
            if let Err(e) = write.send(Frame::Text(ack.into())).await {
                // Stored already: the redelivery will be recognised.
                return closed(hello, format!("ack failed: {e}"));
            }
        }
    }
}

/// A Socket Mode frame. slack-morphism models these (`SlackSocketModeEvent`) but does not export
/// the type, so the envelope is read here and its payload with the SDK's public event models.
#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
    envelope_id: Option<String>,
    payload: Option<serde_json::Value>,
    reason: Option<String>,
    num_connections: Option<u32>,
}

/// The payload as `T`; `None` (logged by the caller) when it does not fit, which a redelivery
/// would not change.
fn payload<T: serde::de::DeserializeOwned>(payload: Option<serde_json::Value>) -> Option<T> {
    serde_json::from_value(payload?)
        .map_err(|e| tracing::debug!(error = %e, "unreadable Socket Mode payload"))
        .ok()
}
