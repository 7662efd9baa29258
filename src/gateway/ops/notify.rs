//! systemd integration (`Type=notify`): `READY=1` once the store is open and the adapters are
//! started, `STATUS=` with adapter health, `WATCHDOG=1` only while the daemon's core answers,
//! `RELOADING=1` around a reload and `STOPPING=1` at shutdown. Without `NOTIFY_SOCKET` (not run
//! by systemd) every call does nothing.

use std::sync::Arc;
use std::time::Duration;

use sd_notify::NotifyState;

use super::status;
use crate::gateway::Shared;

fn send(states: &[NotifyState]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!(error = %e, "cannot notify systemd");
    }
}

pub(crate) fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

pub(crate) fn status(status: &str) {
    send(&[NotifyState::Status(status)]);
}

pub(crate) fn reloading() {
    let mut states = vec![NotifyState::Reloading];
    if let Ok(now) = NotifyState::monotonic_usec_now() {
        states.push(now);
    }
    send(&states);
}

pub(crate) fn stopping() {
    send(&[NotifyState::Stopping, NotifyState::Status("stopping")]);
}

/// Ping systemd's watchdog at half its interval while the core is healthy: the store answers a
/// query in time and the runtime runs this task. A wedged store or a starved runtime stops the
/// pings, and systemd restarts the service. Also refreshes `STATUS=`.
pub(crate) async fn watchdog(shared: Arc<Shared>) {
    let interval = sd_notify::watchdog_enabled();
    let every = interval.map_or(Duration::from_secs(30), |d| d / 2);
    if let Some(d) = interval {
        tracing::info!(interval = ?d, "systemd watchdog enabled");
    }
    loop {
        tokio::time::sleep(every).await;
        let healthy =
            tokio::time::timeout(every.max(Duration::from_millis(100)), shared.store.ping())
                .await
                .is_ok_and(|r| r.is_ok());
        let line = status::report(&shared).await.one_line();
        if !healthy {
            tracing::error!("the store does not answer; withholding the watchdog ping");
            status(&format!("store not answering; {line}"));
            continue;
        }
        if interval.is_some() {
            send(&[NotifyState::Watchdog, NotifyState::Status(&line)]);
        } else {
            status(&line);
        }
    }
}
