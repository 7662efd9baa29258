//! Per-adapter health: whether each listener is up, when it last showed signs of life, how often
//! it was restarted and why.

use std::time::Duration;

use tokio::time::Instant;

use dashmap::DashMap;
use hermes_adapter::Platform;

/// What a listener is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenerState {
    Starting,
    Up,
    /// Failed or went silent; waiting to restart.
    Restarting,
    Stopped,
    /// Another process of the deployment receives for this platform; this one takes over when
    /// that one stops beating.
    Standby,
}

/// Health of one adapter.
#[derive(Debug, Clone)]
pub struct AdapterHealth {
    pub state: ListenerState,
    pub since: Instant,
    pub last_heartbeat: Option<Instant>,
    pub restarts: u32,
    pub last_error: Option<String>,
}

/// Health of all adapters, shared by the supervisor, the sinks and `/status`.
#[derive(Debug, Default)]
pub struct HealthBoard {
    adapters: DashMap<Platform, AdapterHealth>,
}

impl HealthBoard {
    pub fn set_state(&self, platform: Platform, state: ListenerState, error: Option<String>) {
        let mut entry = self
            .adapters
            .entry(platform)
            .or_insert_with(|| AdapterHealth {
                state,
                since: Instant::now(),
                last_heartbeat: None,
                restarts: 0,
                last_error: None,
            });
        if entry.state != state {
            entry.since = Instant::now();
        }
        match state {
            ListenerState::Restarting => entry.restarts += 1,
            // A new run is judged by its own heartbeats, not the previous run's.
            ListenerState::Starting => entry.last_heartbeat = None,
            _ => {}
        }
        entry.state = state;
        if error.is_some() {
            entry.last_error = error;
        }
    }

    pub fn heartbeat(&self, platform: Platform) {
        if let Some(mut h) = self.adapters.get_mut(&platform) {
            h.last_heartbeat = Some(Instant::now());
            if h.state != ListenerState::Up {
                h.state = ListenerState::Up;
                h.since = Instant::now();
            }
        }
    }

    /// Record a problem that is not an outage (shown as the last error, state unchanged).
    pub fn note(&self, platform: Platform, note: String) {
        if let Some(mut h) = self.adapters.get_mut(&platform) {
            h.last_error = Some(note);
        }
    }

    /// Time since the last sign of life (or since the listener started, if none yet).
    pub fn silence(&self, platform: Platform) -> Option<Duration> {
        self.adapters
            .get(&platform)
            .map(|h| h.last_heartbeat.unwrap_or(h.since).elapsed())
    }

    pub fn snapshot(&self) -> Vec<(Platform, AdapterHealth)> {
        let mut all: Vec<_> = self
            .adapters
            .iter()
            .map(|e| (*e.key(), e.value().clone()))
            .collect();
        all.sort_by_key(|(p, _)| *p);
        all
    }
}
