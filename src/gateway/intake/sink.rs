//! The inbound sink each adapter delivers to: store in the inbox, then wake the router. Only
//! after this returns may an adapter acknowledge a message to its platform.

use std::sync::Arc;

use async_trait::async_trait;
use hermes_adapter::{Delivery, InboundSink, Message, Platform, SeenChat, SinkError, UnixMillis};
use tokio::sync::Notify;

use crate::gateway::adapters::health::{HealthBoard, Listener, ListenerState};
use crate::metrics::{Metrics, metrics};
use crate::store::{Inbox, Settings};

/// Longest text kept from one inbound message; the rest is cut with a note (bounded memory,
/// bounded prompts).
pub const MAX_INBOUND_CHARS: usize = 32_000;

/// Longest name, subject or quoted reply kept, and most attachments listed: every row is
/// stored before its sender is authorized, so nothing a stranger sends makes one unbounded.
const MAX_FIELD_CHARS: usize = 1_000;
const MAX_ATTACHMENTS: usize = 20;

/// Cut the fields besides the text to their bounds.
fn bound(msg: &mut Message) {
    let cut = |s: &mut String| {
        if s.chars().count() > MAX_FIELD_CHARS {
            *s = s.chars().take(MAX_FIELD_CHARS).collect::<String>() + "…";
        }
    };
    cut(&mut msg.sender.display_name);
    if let Some(h) = msg.sender.handle.as_mut() {
        cut(h);
    }
    if let Some(s) = msg.subject.as_mut() {
        cut(s);
    }
    if let Some(t) = msg.reply_to.as_mut().and_then(|r| r.text.as_mut()) {
        cut(t);
    }
    msg.attachments.truncate(MAX_ATTACHMENTS);
    for a in &mut msg.attachments {
        if let Some(n) = a.name.as_mut() {
            cut(n);
        }
    }
}

/// The sink of one listener (an adapter, or one part of it).
pub struct AdapterSink {
    pub platform: Platform,
    /// Whose health the deliveries and heartbeats show.
    pub listener: Listener,
    pub inbox: Arc<dyn Inbox>,
    /// Where what the adapter keeps across restarts lives (scope `adapter:<platform>`).
    pub settings: Arc<dyn Settings>,
    pub inbox_signal: Arc<Notify>,
    pub health: Arc<HealthBoard>,
}

#[async_trait]
impl InboundSink for AdapterSink {
    async fn deliver(&self, mut msg: Message) -> Result<Delivery, SinkError> {
        if msg.platform != self.platform {
            return Err(SinkError(format!(
                "{} adapter delivered a {} message",
                self.platform, msg.platform
            )));
        }
        if msg.text.chars().count() > MAX_INBOUND_CHARS {
            let total = msg.text.chars().count();
            msg.text = msg.text.chars().take(MAX_INBOUND_CHARS).collect();
            msg.text.push_str(&format!(
                "\n[message cut: {} of {total} characters were not kept]",
                total - MAX_INBOUND_CHARS
            ));
        }
        bound(&mut msg);
        self.health.heartbeat(self.listener);
        match self.inbox.inbox_insert(&msg).await {
            Ok(Some(id)) => {
                Metrics::platform(&metrics().messages_in, self.platform.as_str()).inc();
                tracing::debug!(platform = %msg.platform, chat = %msg.chat.id, message = %msg.id, inbox = id, "stored inbound message");
                self.inbox_signal.notify_one();
                Ok(Delivery::Stored)
            }
            Ok(None) => {
                Metrics::platform(&metrics().messages_duplicate, self.platform.as_str()).inc();
                tracing::debug!(platform = %msg.platform, chat = %msg.chat.id, message = %msg.id, "duplicate inbound message ignored");
                Ok(Delivery::Duplicate)
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot store an inbound message; it will be redelivered");
                Err(SinkError(e.to_string()))
            }
        }
    }

    fn heartbeat(&self) {
        self.health.heartbeat(self.listener);
    }

    fn attention(&self, note: &str) {
        self.health.note(self.listener, note.to_owned());
    }

    fn disconnected(&self, reason: &str) {
        self.health.set_state(
            self.listener,
            ListenerState::Restarting,
            Some(reason.to_owned()),
        );
    }

    async fn recall(&self, key: &str) -> Option<String> {
        let scope = format!("adapter:{}", self.platform);
        self.settings
            .setting(&scope, key)
            .await
            .map_err(|e| tracing::warn!(platform = %self.platform, key, error = %e, "cannot read what the adapter kept"))
            .ok()
            .flatten()
    }

    async fn remember(&self, key: &str, value: &str) -> Result<(), SinkError> {
        let scope = format!("adapter:{}", self.platform);
        self.settings
            .set_setting(&scope, key, value)
            .await
            .map_err(|e| SinkError(e.to_string()))
    }

    async fn recent_chats(&self, since: UnixMillis, limit: usize) -> Vec<SeenChat> {
        self.inbox
            .inbox_recent_chats(self.platform, since, limit)
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(platform = %self.platform, error = %e, "cannot list the chats to catch up on");
                Vec::new()
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_a_stranger_controls_is_bounded() {
        let mut msg = crate::store::suite::message("1", "m1", "hi");
        let huge = "x".repeat(100_000);
        msg.sender.display_name = huge.clone();
        msg.subject = Some(huge.clone());
        msg.reply_to = Some(hermes_adapter::ReplyRef {
            id: "m0".into(),
            to_bot: false,
            text: Some(huge.clone()),
        });
        msg.attachments = (0..1000)
            .map(|i| hermes_adapter::Attachment {
                kind: hermes_adapter::AttachmentKind::Document,
                mime: None,
                name: Some(format!("{i}{huge}")),
                size: None,
                locator: i.to_string(),
            })
            .collect();
        bound(&mut msg);
        let stored = serde_json::to_string(&msg).unwrap();
        assert!(stored.len() < 40_000, "{} bytes", stored.len());
        assert_eq!(msg.attachments.len(), MAX_ATTACHMENTS);
        assert_eq!(msg.sender.display_name.chars().count(), MAX_FIELD_CHARS + 1);
    }
}
