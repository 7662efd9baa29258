//! Per-listener health: whether each receiving connection (a platform's listener, or one part of
//! it such as a Discord shard) is up, when it last showed signs of life, how often it was
//! restarted and why.

use std::time::Duration;

use tokio::time::Instant;

use dashmap::DashMap;
use hermes_adapter::Platform;

/// One receiving connection: a platform's listener, or part `part` of `parts` of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Listener {
    pub platform: Platform,
    pub part: u16,
    pub parts: u16,
}

impl Listener {
    /// The whole listener of `platform` (one part).
    pub fn whole(platform: Platform) -> Listener {
        Listener {
            platform,
            part: 0,
            parts: 1,
        }
    }
}

impl std::fmt::Display for Listener {
    /// `discord`, or `discord 1/4` for part 1 of 4.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.parts > 1 {
            write!(f, "{} {}/{}", self.platform, self.part, self.parts)
        } else {
            write!(f, "{}", self.platform)
        }
    }
}

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

/// Health of all listeners, shared by the supervisors, the sinks and `/status`.
#[derive(Debug, Default)]
pub struct HealthBoard {
    adapters: DashMap<Listener, AdapterHealth>,
}

impl HealthBoard {
    pub fn set_state(&self, listener: Listener, state: ListenerState, error: Option<String>) {
        let mut entry = self
            .adapters
            .entry(listener)
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

    pub fn heartbeat(&self, listener: Listener) {
        if let Some(mut h) = self.adapters.get_mut(&listener) {
            h.last_heartbeat = Some(Instant::now());
            if h.state != ListenerState::Up {
                h.state = ListenerState::Up;
                h.since = Instant::now();
            }
        }
    }

    /// Record a problem that is not an outage (shown as the last error, state unchanged).
    pub fn note(&self, listener: Listener, note: String) {
        if let Some(mut h) = self.adapters.get_mut(&listener) {
            h.last_error = Some(note);
        }
    }

    /// Time since the last sign of life (or since the listener started, if none yet).
    pub fn silence(&self, listener: Listener) -> Option<Duration> {
        self.adapters
            .get(&listener)
            .map(|h| h.last_heartbeat.unwrap_or(h.since).elapsed())
    }

    /// Every listener's health, in platform and part order.
    pub fn snapshot(&self) -> Vec<(Listener, AdapterHealth)> {
        let mut all: Vec<_> = self
            .adapters
            .iter()
            .map(|e| (*e.key(), e.value().clone()))
            .collect();
        all.sort_by_key(|(p, _)| *p);
        all
    }
}
