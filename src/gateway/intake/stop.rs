//! Stopping a session: its running turn cancelled and its queued messages finished as stopped
//! (`/stop`, `/new`, and a `/profile` switch).

use std::sync::Arc;

use hermes_adapter::SessionKey;

use crate::gateway::Shared;
use crate::store::InboxOutcome;

/// What stopping found: a running turn, and how many waiting messages were dropped.
pub(super) struct Stopped {
    pub(super) was_running: bool,
    pub(super) discarded: usize,
}

impl Stopped {
    pub(super) fn note(&self) -> String {
        match self.discarded {
            0 => String::new(),
            1 => " 1 waiting message was dropped.".to_owned(),
            n => format!(" {n} waiting messages were dropped."),
        }
    }
}

/// Cancel the session's running turn and finish its queued messages as stopped.
pub(super) async fn stop_session(shared: &Arc<Shared>, key: &SessionKey) -> Stopped {
    let lane = shared.pool.get(key);
    let guard = match &lane {
        Some(lane) => Some(lane.state.lock().await),
        None => None,
    };
    let was_running = guard
        .as_ref()
        .and_then(|s| s.control.as_ref())
        .is_some_and(|c| {
            c.stop.cancel();
            true
        });
    let queued = shared
        .store
        .inbox_queued_for(key, 10_000)
        .await
        .unwrap_or_default();
    // Rows of the running turn are finished by the turn itself.
    let included = guard.as_ref().map_or(0, |s| {
        if s.control.is_some() {
            s.max_included
        } else {
            0
        }
    });
    let ids: Vec<i64> = queued
        .iter()
        .map(|r| r.id)
        .filter(|id| *id > included)
        .collect();
    let discarded = ids.len();
    if !ids.is_empty()
        && let Err(e) = shared.store.inbox_finish(ids, InboxOutcome::Stopped).await
    {
        tracing::error!(error = %e, "cannot drop queued messages");
    }
    drop(guard);
    Stopped {
        was_running,
        discarded,
    }
}
