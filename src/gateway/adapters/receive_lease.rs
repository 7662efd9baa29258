//! The receiving lease of one platform, held by its supervisor around the listener: on a shared
//! store one process of the deployment receives (a long poll, a socket, a mailbox, a device)
//! while the others stand by and take over when it stops beating.

use std::sync::Arc;

use hermes_adapter::Platform;
use tokio_util::sync::CancellationToken;

use super::health::{HealthBoard, ListenerState};
use crate::gateway::Shared;
use crate::gateway::cluster::Cluster;
use crate::store::{Store, receive_lease};

/// The receiving lease of one platform, held around its listener by its supervisor.
pub(crate) struct ReceiveGate {
    cluster: Arc<Cluster>,
    store: Store,
    platform: Platform,
    name: String,
}

impl ReceiveGate {
    /// A gate for `platform`, or `None` where no lease is needed (a store of one process, or a
    /// platform that pushes to every process).
    pub fn new(shared: &Shared, platform: Platform, alone: bool) -> Option<ReceiveGate> {
        (shared.cluster.shared && alone).then(|| ReceiveGate {
            cluster: shared.cluster.clone(),
            store: shared.store.clone(),
            platform,
            name: receive_lease(platform),
        })
    }

    /// Wait until this process holds the lease; `None` at shutdown.
    pub async fn acquire(&self, health: &HealthBoard, shutdown: &CancellationToken) -> Option<i64> {
        let mut told = false;
        loop {
            match self.store.lease_take(&self.name, &self.cluster.me.id).await {
                Ok(Some(token)) => {
                    tracing::info!(platform = %self.platform, token, "this process receives now");
                    self.cluster.set_receiving(self.platform, true);
                    return Some(token);
                }
                Ok(None) if !told => {
                    tracing::info!(platform = %self.platform, "another process receives; standing by to take over");
                    health.set_state(
                        self.platform,
                        ListenerState::Standby,
                        Some("another process receives".into()),
                    );
                    told = true;
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(platform = %self.platform, error = %e, "cannot take the receiving lease")
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(self.cluster.beat_every()) => {}
                _ = shutdown.cancelled() => return None,
            }
        }
    }

    /// Resolves when the lease with `token` is no longer this process's (taken over while this
    /// one was paused or cut off), checked every beat.
    pub async fn lost(&self, token: i64) {
        loop {
            tokio::time::sleep(self.cluster.beat_every()).await;
            if let Ok(false) = self
                .store
                .lease_held(&self.name, &self.cluster.me.id, token)
                .await
            {
                tracing::warn!(platform = %self.platform, "another process took over receiving; this listener stops");
                self.cluster.set_receiving(self.platform, false);
                return;
            }
        }
    }

    /// Give the lease back (the listener stopped for good).
    pub async fn release(&self, token: i64) {
        self.cluster.set_receiving(self.platform, false);
        let _ = self
            .store
            .lease_release(&self.name, &self.cluster.me.id, token)
            .await;
    }
}
