//! The `/sync` loop: invites, timeline events to the inbox, encrypted events kept until their
//! keys arrive, and the sync token saved only after a whole batch is handled.

use std::sync::Arc;
use std::time::Duration;

use hermes_adapter::{AdapterError, InboundSink};
use matrix_sdk::config::{SyncSettings, SyncToken};
use matrix_sdk::deserialized_responses::{TimelineEvent, TimelineEventKind};
use matrix_sdk::ruma::api::client::filter::{FilterDefinition, RoomEventFilter, RoomFilter};
use matrix_sdk::ruma::api::client::sync::sync_events;
use matrix_sdk::ruma::events::room::encrypted::OriginalSyncRoomEncryptedEvent;
use matrix_sdk::ruma::events::room::message::SyncRoomMessageEvent;
use matrix_sdk::ruma::events::{AnySyncMessageLikeEvent, AnySyncTimelineEvent};
use matrix_sdk::ruma::serde::Raw;
use matrix_sdk::ruma::{RoomId, UInt};
use matrix_sdk::{Client, Room, RoomMemberships};
use tokio_util::sync::CancellationToken;

use crate::gap;
use crate::state::Undecryptable;
use crate::{MatrixAdapter, inbound};

/// Most encrypted events kept waiting for their keys; the oldest are given up (and logged).
const MAX_UNDECRYPTABLE: usize = 500;

impl MatrixAdapter {
    /// Join rooms we are invited to by allowed users; leave the others' invitations alone.
    async fn handle_invites(&self, client: &Client) {
        for room in client.invited_rooms() {
            let Ok(invite) = room.invite_details().await else {
                continue;
            };
            let inviter = invite.inviter_id.to_string();
            if !self.may_invite(&inviter) {
                tracing::debug!(room = %room.room_id(), %inviter, "matrix: ignoring an invite from a user not on the allowlist");
                continue;
            }
            match room.join().await {
                Ok(()) => {
                    tracing::info!(room = %room.room_id(), %inviter, "matrix: joined on invite")
                }
                Err(e) => {
                    tracing::warn!(room = %room.room_id(), error = %e, "matrix: joining failed; retrying after the next sync")
                }
            }
        }
    }

    /// Deliver one timeline event. `Err`: the inbox is down; the batch must not be acknowledged.
    async fn handle_event(
        &self,
        client: &Client,
        room: &Room,
        event: TimelineEvent,
        sink: &dyn InboundSink,
        pending: &mut Vec<Undecryptable>,
    ) -> Result<(), AdapterError> {
        let raw = match &event.kind {
            TimelineEventKind::UnableToDecrypt {
                event: raw,
                utd_info,
            } => {
                let id = event.event_id().map(|e| e.to_string()).unwrap_or_default();
                if pending.iter().any(|p| p.event_id == id) {
                    return Ok(());
                }
                let json: serde_json::Value =
                    serde_json::from_str(raw.json().get()).unwrap_or_default();
                // Only the people served may fill the queue (its cap drops the oldest): a
                // stranger in a room cannot push their genuine messages out.
                let sender = json["sender"].as_str().unwrap_or_default();
                if !self.may_invite(sender) {
                    tracing::debug!(room = %room.room_id(), event = %id, %sender, "matrix: not keeping an undecryptable event from someone not served");
                    return Ok(());
                }
                tracing::warn!(room = %room.room_id(), event = %id, reason = ?utd_info.reason, "matrix: cannot decrypt an event yet; keeping it until its room key arrives");
                pending.push(Undecryptable {
                    room_id: room.room_id().to_string(),
                    event_id: id,
                    event: json,
                    first_seen: hermes_adapter::now_millis(),
                });
                return Ok(());
            }
            _ => event.raw(),
        };
        let Ok(AnySyncTimelineEvent::MessageLike(AnySyncMessageLikeEvent::RoomMessage(
            SyncRoomMessageEvent::Original(ev),
        ))) = raw.deserialize()
        else {
            return Ok(());
        };
        let me = Self::me(client)?;
        if ev.sender == me {
            return Ok(());
        }
        // Counted from the member events in the store: the sync summary that feeds
        // `active_members_count` is only sent with lazy-loaded members.
        let direct = match room
            .members_no_sync(RoomMemberships::JOIN | RoomMemberships::INVITE)
            .await
        {
            Ok(members) => members.len() <= 2,
            Err(_) => room.active_members_count() <= 2,
        };
        let my_name = room
            .get_member_no_sync(&me)
            .await
            .ok()
            .flatten()
            .and_then(|m| m.display_name().map(str::to_owned));
        let sender_name = room
            .get_member_no_sync(&ev.sender)
            .await
            .ok()
            .flatten()
            .and_then(|m| m.display_name().map(str::to_owned));
        let replied_to_bot = match inbound::replied_event(&ev) {
            Some(id) => room
                .load_or_fetch_event(id, None)
                .await
                .ok()
                .and_then(|e| e.sender())
                .is_some_and(|s| s == me),
            None => false,
        };
        let ctx = inbound::RoomContext {
            room_id: room.room_id().as_str(),
            direct,
            title: room.name(),
            me: &me,
            my_name: my_name.as_deref(),
            sender_name,
        };
        let Some(msg) = inbound::convert(&ev, &ctx, replied_to_bot) else {
            tracing::debug!(room = %room.room_id(), event = %ev.event_id, direct, "matrix: a message not for the bot");
            return Ok(());
        };
        sink.deliver(msg).await.map_err(|e| {
            AdapterError::Transient(format!(
                "inbox unavailable, not acknowledging Matrix event {}: {e}",
                ev.event_id
            ))
        })?;
        Ok(())
    }

    /// Try the waiting encrypted events again (their keys may have arrived in this sync).
    async fn retry_undecryptable(
        &self,
        client: &Client,
        sink: &dyn InboundSink,
        pending: &mut Vec<Undecryptable>,
    ) -> Result<(), AdapterError> {
        let mut still = Vec::new();
        let mut waiting = std::mem::take(pending).into_iter();
        while let Some(p) = waiting.next() {
            let room = RoomId::parse(&p.room_id)
                .ok()
                .and_then(|id| client.get_room(&id));
            let Some(room) = room else {
                still.push(p);
                continue;
            };
            let raw: Raw<OriginalSyncRoomEncryptedEvent> =
                match Raw::from_json_string(p.event.to_string()) {
                    Ok(r) => r,
                    Err(_) => continue,
                };
            match room.decrypt_event(&raw, None).await {
                Ok(event) if !event.kind.is_utd() => {
                    tracing::info!(room = %p.room_id, event = %p.event_id, "matrix: decrypted an event once its key arrived");
                    let mut none = Vec::new();
                    if let Err(e) = self
                        .handle_event(client, &room, event, sink, &mut none)
                        .await
                    {
                        still.push(p);
                        still.extend(waiting);
                        *pending = still;
                        return Err(e);
                    }
                }
                _ => still.push(p),
            }
        }
        if still.len() > MAX_UNDECRYPTABLE {
            let drop = still.len() - MAX_UNDECRYPTABLE;
            for p in still.drain(..drop) {
                tracing::error!(room = %p.room_id, event = %p.event_id, "matrix: giving up on an event whose key never arrived");
            }
        }
        *pending = still;
        Ok(())
    }

    /// The `/sync` loop: see the crate documentation.
    pub(crate) async fn listen(
        &self,
        sink: Arc<dyn InboundSink>,
        shutdown: CancellationToken,
    ) -> Result<(), AdapterError> {
        let client = tokio::select! {
            r = self.client() => r?,
            _ = shutdown.cancelled() => return Ok(()),
        };
        let mut token = self.state.sync_token();
        // Killed after the SDK took a sync in (it keeps its own token, and answers the same
        // sync again with nothing) but before its events were handled: handle that gap first.
        if let (Some(ours), Some(sdk)) = (token.clone(), sdk_sync_token(client).await)
            && ours != sdk
        {
            let mut pending = self.pending.lock().await;
            let mut handled = 0;
            for room in client.joined_rooms() {
                for event in gap::forward(&room, &ours, &sdk).await {
                    self.handle_event(client, &room, event, sink.as_ref(), &mut pending)
                        .await?;
                    handled += 1;
                }
            }
            drop(pending);
            tracing::info!(
                handled,
                "matrix: handled the events of a sync the last run took in but did not finish"
            );
            self.state
                .save_sync_token(&sdk)
                .map_err(|e| AdapterError::Fatal(format!("matrix: saving the sync token: {e}")))?;
            token = Some(sdk);
        }
        let mut backoff = Duration::from_millis(500);
        let mut connected = false;
        loop {
            let first = token.is_none();
            let settings = SyncSettings::new()
                .filter(sync_filter())
                .timeout(if first || !connected {
                    Duration::ZERO
                } else {
                    self.settings.sync_timeout
                })
                .token(match &token {
                    Some(t) => SyncToken::Specific(t.clone()),
                    None => SyncToken::NoToken,
                });
            let synced = tokio::select! {
                r = client.sync_once(settings) => r,
                _ = shutdown.cancelled() => return Ok(()),
            };
            let response = match synced {
                Ok(r) => r,
                Err(e) => {
                    let err = sync_error(&e);
                    if matches!(err, AdapterError::Unauthorized(_)) {
                        return Err(err);
                    }
                    tracing::warn!(error = %err, retry_in = ?backoff, "matrix: sync failed");
                    sink.disconnected(&err.to_string());
                    connected = false;
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = shutdown.cancelled() => return Ok(()),
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(15));
                    continue;
                }
            };
            if !connected {
                tracing::info!("matrix: sync connected");
                connected = true;
            }
            backoff = Duration::from_millis(500);
            sink.heartbeat();
            self.handle_invites(client).await;
            let mut pending = self.pending.lock().await;
            let before = pending.clone();
            if first {
                let skipped: usize = response
                    .rooms
                    .joined
                    .values()
                    .map(|r| r.timeline.events.len())
                    .sum();
                tracing::info!(
                    skipped,
                    "matrix: first sync; earlier room history is not answered"
                );
            } else {
                for (room_id, update) in response.rooms.joined {
                    let Some(room) = client.get_room(&room_id) else {
                        continue;
                    };
                    let mut events = Vec::new();
                    if update.timeline.limited {
                        // More arrived than one sync carries: fetch the rest, oldest first.
                        let missed = match (update.timeline.prev_batch.as_deref(), token.as_deref())
                        {
                            (Some(prev), Some(since)) => gap::backward(&room, prev, since).await,
                            _ => Vec::new(),
                        };
                        tracing::info!(room = %room_id, fetched = missed.len(), "matrix: a sync left events out; fetched them");
                        events.extend(missed);
                    }
                    events.extend(update.timeline.events);
                    tracing::debug!(room = %room_id, events = events.len(), limited = update.timeline.limited, "matrix: room timeline");
                    for event in events {
                        self.handle_event(client, &room, event, sink.as_ref(), &mut pending)
                            .await?;
                    }
                }
            }
            if !pending.is_empty() {
                self.retry_undecryptable(client, sink.as_ref(), &mut pending)
                    .await?;
            }
            if *pending != before {
                if let Err(e) = self.state.save_undecryptable(&pending) {
                    return Err(AdapterError::Fatal(format!(
                        "matrix: saving undecryptable events: {e}"
                    )));
                }
                sink.attention(&if pending.is_empty() {
                    "every encrypted message decrypted".to_owned()
                } else {
                    format!(
                        "{} encrypted message(s) waiting for their room keys",
                        pending.len()
                    )
                });
            }
            drop(pending);
            self.state
                .save_sync_token(&response.next_batch)
                .map_err(|e| AdapterError::Fatal(format!("matrix: saving the sync token: {e}")))?;
            token = Some(response.next_batch);
        }
    }
}

/// The sync token the SDK keeps in its own store (it answers a sync to that token with nothing).
async fn sdk_sync_token(client: &Client) -> Option<String> {
    use matrix_sdk::store::{StateStoreDataKey, StateStoreDataValue};
    client
        .state_store()
        .get_kv_data(StateStoreDataKey::SyncToken)
        .await
        .ok()
        .flatten()
        .and_then(StateStoreDataValue::into_sync_token)
}

/// The sync filter: enough timeline per room that a short outage needs no back-pagination.
fn sync_filter() -> sync_events::v3::Filter {
    let mut timeline = RoomEventFilter::default();
    timeline.limit = Some(UInt::from(100u32));
    let mut room = RoomFilter::default();
    room.timeline = timeline;
    let mut def = FilterDefinition::default();
    def.room = room;
    sync_events::v3::Filter::FilterDefinition(def)
}

fn sync_error(e: &matrix_sdk::Error) -> AdapterError {
    match e.client_api_error_kind() {
        Some(matrix_sdk::ruma::api::error::ErrorKind::UnknownToken(_)) => {
            AdapterError::Unauthorized(format!(
                "the saved Matrix access token was revoked ({e}); delete the matrix/ state directory to log in again"
            ))
        }
        _ => AdapterError::Transient(format!("matrix sync: {e}")),
    }
}
