//! The receiving lease of one listener, held by its supervisor around it: on a shared store one
//! process of the deployment receives (a long poll, a socket, a mailbox, a device) while the
//! others stand by and take over when it stops beating. A listener in parts (Discord shards)
//! has a lease per part, and each process holds at most its fair share of them, giving up its
//! highest parts when another process joins, so the parts spread over the deployment.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::health::{HealthBoard, Listener, ListenerState};
use crate::gateway::Shared;
use crate::gateway::cluster::Cluster;
use crate::store::{Store, receive_lease};

/// The receiving lease of one listener, held around it by its supervisor.
pub(crate) struct ReceiveGate {
    cluster: Arc<Cluster>,
    store: Store,
    listener: Listener,
    name: String,
}

/// Why a held lease ends.
pub(crate) enum Leaving {
    /// Another process took it over (this one was paused or cut off).
    TakenOver,
    /// This process holds more parts than its share: it gives this one to another process.
    Surplus,
}

impl ReceiveGate {
    /// A gate for `listener`, or `None` where no lease is needed (a store of one process, or a
    /// platform that pushes to every process).
    pub fn new(shared: &Shared, listener: Listener, alone: bool) -> Option<ReceiveGate> {
        if !(shared.cluster.shared && alone) {
            return None;
        }
        if listener.parts > 1 {
            shared.cluster.spread_parts();
        }
        Some(ReceiveGate {
            cluster: shared.cluster.clone(),
            store: shared.store.clone(),
            listener,
            name: receive_lease(listener.platform, listener.part, listener.parts),
        })
    }

    fn set_receiving(&self, held: bool) {
        let l = self.listener;
        self.cluster.set_receiving(l.platform, l.part, held);
    }

    /// Wait until this process holds the lease; `None` at shutdown.
    pub async fn acquire(&self, health: &HealthBoard, shutdown: &CancellationToken) -> Option<i64> {
        let l = self.listener;
        let mut told = false;
        loop {
            let taken = if self.cluster.reserve_part(l.platform, l.part, l.parts) {
                let taken = self.store.lease_take(&self.name, &self.cluster.me.id).await;
                if !matches!(taken, Ok(Some(_))) {
                    self.set_receiving(false);
                }
                taken
            } else {
                Ok(None) // this process holds its share of the parts
            };
            match taken {
                Ok(Some(token)) => {
                    tracing::info!(listener = %l, token, "this process receives now");
                    return Some(token);
                }
                Ok(None) if !told => {
                    tracing::info!(listener = %l, "another process receives; standing by to take over");
                    health.set_state(
                        l,
                        ListenerState::Standby,
                        Some("another process receives".into()),
                    );
                    told = true;
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(listener = %l, error = %e, "cannot take the receiving lease")
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(self.cluster.beat_every()) => {}
                _ = shutdown.cancelled() => return None,
            }
        }
    }

    /// Resolves when the lease with `token` should no longer be this process's, checked every
    /// beat: taken over while this one was paused or cut off, or one part too many.
    pub async fn leaving(&self, token: i64) -> Leaving {
        let l = self.listener;
        loop {
            tokio::time::sleep(self.cluster.beat_every()).await;
            if let Ok(false) = self
                .store
                .lease_held(&self.name, &self.cluster.me.id, token)
                .await
            {
                tracing::warn!(listener = %l, "another process took over receiving; this listener stops");
                self.set_receiving(false);
                return Leaving::TakenOver;
            }
            if self.cluster.surplus_part(l.platform, l.part, l.parts) {
                tracing::info!(listener = %l, "more processes share the listener's parts now; this one passes to another");
                return Leaving::Surplus;
            }
        }
    }

    /// Give the lease back (the listener stopped, or passes to another process).
    pub async fn release(&self, token: i64) {
        let _ = self
            .store
            .lease_release(&self.name, &self.cluster.me.id, token)
            .await;
        self.set_receiving(false);
    }
}
