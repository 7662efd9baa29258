//! The inbound sink each adapter delivers to: store in the inbox, then wake the router. Only
//! after this returns may an adapter acknowledge a message to its platform.

use std::sync::Arc;

use async_trait::async_trait;
use hermes_adapter::{Delivery, InboundSink, Message, Platform, SinkError};
use tokio::sync::Notify;

use crate::gateway::adapters::health::{HealthBoard, ListenerState};
use crate::metrics::{Metrics, metrics};
use crate::store::Inbox;

/// Longest text kept from one inbound message; the rest is cut with a note (bounded memory,
/// bounded prompts).
pub const MAX_INBOUND_CHARS: usize = 32_000;

/// The sink of one adapter.
pub struct AdapterSink {
    pub platform: Platform,
    pub inbox: Arc<dyn Inbox>,
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
        self.health.heartbeat(self.platform);
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
        self.health.heartbeat(self.platform);
    }

    fn attention(&self, note: &str) {
        self.health.note(self.platform, note.to_owned());
    }

    fn disconnected(&self, reason: &str) {
        self.health.set_state(
            self.platform,
            ListenerState::Restarting,
            Some(reason.to_owned()),
        );
    }
}
