//! The outbox pump: sends due replies, one at a time per chat and concurrently across chats,
//! waits out `retry_after`, retries transient failures with backoff, and marks each row sent or
//! failed. A reply is marked sent only after the platform accepted it.

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use hermes_adapter::{Platform, SendError, now_millis};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::gateway::Shared;
use crate::metrics::{Metrics, metrics};
use crate::store::OutboxRow;

/// Sends in flight at once across all chats.
const MAX_IN_FLIGHT: usize = 16;
/// One send may take this long before it counts as a transient failure.
const SEND_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest wait between two looks at the outbox.
const MAX_IDLE: Duration = Duration::from_secs(30);

/// A send's result that could not be written (the store is failing: disk full, busy). It is kept
/// here and written again, and its row is not sent again meanwhile: a send that went out is
/// never repeated because its record failed.
#[derive(Debug, Clone)]
enum Unrecorded {
    Sent(String),
    Deferred { at: i64, why: String },
    Retry { at: i64, why: String },
    Failed(String),
}

impl Unrecorded {
    async fn write(&self, store: &crate::store::Store, id: i64) -> crate::store::Result<()> {
        match self {
            Unrecorded::Sent(sent) => store.outbox_mark_sent(id, sent.clone()).await,
            Unrecorded::Deferred { at, why } => store.outbox_defer(id, *at, why.clone()).await,
            Unrecorded::Retry { at, why } => store.outbox_retry_at(id, *at, why.clone()).await,
            Unrecorded::Failed(why) => store.outbox_mark_failed(id, why.clone()).await,
        }
    }
}

/// Send until `stop`; in-flight sends are finished before returning.
pub(crate) async fn run(shared: Arc<Shared>, stop: CancellationToken) {
    let mut in_flight: JoinSet<(i64, Option<Unrecorded>)> = JoinSet::new();
    let mut busy: HashSet<i64> = HashSet::new();
    let mut unrecorded: HashMap<i64, Unrecorded> = HashMap::new();
    let mut store_backoff = Duration::from_secs(1);
    loop {
        let signal = shared.outbox_signal.notified();
        let store_failing = !write_unrecorded(&shared, &mut unrecorded, &mut busy).await;
        if store_failing {
            tracing::error!(unrecorded = unrecorded.len(), retry_in = ?store_backoff, "cannot record sent replies; sending nothing new until the store writes again");
        } else {
            store_backoff = Duration::from_secs(1);
        }
        if !store_failing && busy.len() < MAX_IN_FLIGHT {
            // On a shared store a row returned is claimed (withheld from every other process
            // while this one lives): only as many as can be sent now. Alone, the rows in
            // flight are due too, and are looked past.
            let limit = if shared.cluster.shared {
                MAX_IN_FLIGHT - busy.len()
            } else {
                MAX_IN_FLIGHT + busy.len()
            };
            match due(&shared, limit).await {
                Ok(rows) => {
                    for row in rows {
                        if busy.len() >= MAX_IN_FLIGHT {
                            break;
                        }
                        if busy.insert(row.id) {
                            let shared = shared.clone();
                            in_flight
                                .spawn(async move { (row.id, guarded_send(&shared, row).await) });
                        }
                    }
                }
                Err(e) => tracing::error!(error = %e, "cannot read the outbox"),
            }
        }
        let wait = if store_failing {
            let wait = store_backoff;
            store_backoff = (store_backoff * 2).min(MAX_IDLE);
            wait
        } else {
            match shared.store.outbox_next_due().await {
                Ok(Some(at)) => Duration::from_millis(
                    (at - now_millis()).clamp(0, MAX_IDLE.as_millis() as i64) as u64,
                ),
                _ => MAX_IDLE,
            }
        };
        // A due head that is being sent right now must not spin the loop.
        let wait = wait.max(Duration::from_millis(if busy.is_empty() {
            50
        } else {
            250
        }));
        tokio::select! {
            Some(done) = in_flight.join_next(), if !in_flight.is_empty() => {
                if let Ok((id, failed_write)) = done {
                    match failed_write {
                        Some(result) => {
                            unrecorded.insert(id, result);
                        }
                        None => {
                            busy.remove(&id);
                        }
                    }
                }
            }
            _ = signal => {}
            _ = tokio::time::sleep(wait) => {}
            _ = stop.cancelled() => break,
        }
    }
    while let Some(done) = in_flight.join_next().await {
        if let Ok((id, Some(result))) = done {
            unrecorded.insert(id, result);
        }
    }
    write_unrecorded(&shared, &mut unrecorded, &mut busy).await;
}

/// Write the results kept in memory; `false` while some still cannot be written.
async fn write_unrecorded(
    shared: &Shared,
    unrecorded: &mut HashMap<i64, Unrecorded>,
    busy: &mut HashSet<i64>,
) -> bool {
    let pending: Vec<(i64, Unrecorded)> = unrecorded.iter().map(|(i, u)| (*i, u.clone())).collect();
    for (id, result) in pending {
        match result.write(&shared.store, id).await {
            Ok(()) => {
                unrecorded.remove(&id);
                busy.remove(&id);
            }
            Err(e) => tracing::debug!(outbox = id, error = %e, "still cannot record a send"),
        }
    }
    unrecorded.is_empty()
}

/// Send a row; a panic in the adapter is caught, counted, and treated as a transient failure (the
/// row is retried with backoff, then marked failed), so its chat's later replies still go out.
async fn guarded_send(shared: &Shared, row: OutboxRow) -> Option<Unrecorded> {
    let (id, attempts, platform) = (row.id, row.attempts, row.platform);
    match AssertUnwindSafe(send_one(shared, row)).catch_unwind().await {
        Ok(unrecorded) => unrecorded,
        Err(panic) => {
            crate::metrics::metrics().record_panic("outbox");
            let why = format!(
                "the {platform} adapter panicked while sending: {}",
                crate::gateway::panic_message(&panic)
            );
            tracing::error!(outbox = id, "{why}");
            let result = if attempts + 1 < shared.config().gateway.send_max_attempts {
                let at = now_millis() + backoff(attempts).as_millis() as i64;
                Unrecorded::Retry { at, why }
            } else {
                Unrecorded::Failed(why)
            };
            result.write(&shared.store, id).await.err().map(|_| result)
        }
    }
}

/// Up to `limit` due replies this process may send (claimed for it on a shared store).
async fn due(shared: &Shared, limit: usize) -> crate::store::Result<Vec<OutboxRow>> {
    let mut skip = shared.cluster.cannot_send();
    if shared.cluster.shared {
        // Replies for a platform this process runs no adapter for are left to a process that
        // does (the processes of a deployment may differ: the HTTP API on one of them).
        let here = shared.adapter_platforms();
        skip.extend(Platform::ALL.iter().filter(|p| !here.contains(p)));
    }
    shared
        .store
        .outbox_due(&shared.cluster.me.id, now_millis(), limit, &skip)
        .await
}

/// At shutdown: send what is due, one by one, until nothing is due or the deadline passes.
pub(crate) async fn flush(shared: &Arc<Shared>, deadline: tokio::time::Instant) {
    loop {
        let rows = match due(shared, MAX_IN_FLIGHT).await {
            Ok(rows) if !rows.is_empty() => rows,
            _ => return,
        };
        for row in rows {
            let id = row.id;
            match tokio::time::timeout_at(deadline, guarded_send(shared, row)).await {
                Ok(None) => {}
                Ok(Some(result)) => {
                    // Try once more, then stop: sending on could only repeat this reply.
                    if result.write(&shared.store, id).await.is_err() {
                        tracing::error!(
                            outbox = id,
                            "cannot record a sent reply at shutdown; it may be sent again at the next start"
                        );
                        return;
                    }
                }
                Err(_) => {
                    tracing::warn!(
                        "replies still unsent at shutdown; they are sent at the next start"
                    );
                    return;
                }
            }
        }
    }
}

/// Send a row, or replace the message it names (`edit_of`); a message that cannot be edited
/// (gone, too old, unsupported) is sent new instead.
async fn deliver(
    adapter: &dyn hermes_adapter::Adapter,
    out: &hermes_adapter::Outbound,
) -> Result<hermes_adapter::SentId, SendError> {
    let Some(id) = &out.edit_of else {
        return adapter.send(out).await;
    };
    let sent = hermes_adapter::SentId(id.clone());
    match adapter.replace(out).await {
        Ok(()) => Ok(sent),
        Err(e @ (SendError::RetryAfter(_) | SendError::Transient(_))) => Err(e),
        Err(e) => {
            tracing::debug!(error = %e, "cannot replace the preview; sending the message new");
            adapter.send(out).await
        }
    }
}

/// Exponential backoff for transient send failures: 2 s, 4 s, 8 s … capped at 5 minutes.
fn backoff(attempts: u32) -> Duration {
    Duration::from_secs(2u64.saturating_pow(attempts.saturating_add(1)).min(300))
}

/// Send a row and record the result; the result that could not be recorded is returned.
async fn send_one(shared: &Shared, mut row: OutboxRow) -> Option<Unrecorded> {
    let Some(adapter) = shared.adapter(row.platform) else {
        let msg = format!("no {} adapter is running", row.platform);
        tracing::error!(outbox = row.id, "{msg}; reply marked failed");
        let result = Unrecorded::Failed(msg);
        return result
            .write(&shared.store, row.id)
            .await
            .err()
            .map(|_| result);
    };
    fail::fail_point!("outbox-send", |_| None);
    // A row tried before, or queued by an earlier process, may have gone out already.
    let started = now_millis() - shared.started.elapsed().as_millis() as i64;
    if row.attempts > 0 || row.queued_at < started {
        row.outbound.maybe_sent_since = Some(row.queued_at);
    }
    let result =
        match tokio::time::timeout(SEND_TIMEOUT, deliver(adapter.as_ref(), &row.outbound)).await {
            Ok(r) => r,
            Err(_) => Err(SendError::Transient(format!(
                "no answer within {SEND_TIMEOUT:?}"
            ))),
        };
    let counter = match &result {
        Ok(_) => &metrics().messages_out,
        Err(_) => &metrics().send_failures,
    };
    Metrics::platform(counter, row.platform.as_str()).inc();
    let record = match result {
        Ok(sent) => {
            tracing::debug!(outbox = row.id, platform = %row.platform, chat = %row.outbound.chat, "reply sent");
            Unrecorded::Sent(sent.0)
        }
        Err(SendError::RetryAfter(wait)) => {
            tracing::info!(outbox = row.id, platform = %row.platform, ?wait, "rate limited; waiting before resending");
            Unrecorded::Deferred {
                at: now_millis() + wait.as_millis() as i64,
                why: format!("rate limited for {wait:?}"),
            }
        }
        Err(e)
            if e.is_retryable() && row.attempts + 1 < shared.config().gateway.send_max_attempts =>
        {
            let wait = backoff(row.attempts);
            tracing::warn!(outbox = row.id, platform = %row.platform, error = %e, ?wait, "send failed; will retry");
            Unrecorded::Retry {
                at: now_millis() + wait.as_millis() as i64,
                why: e.to_string(),
            }
        }
        Err(e) => {
            tracing::error!(outbox = row.id, platform = %row.platform, chat = %row.outbound.chat, error = %e, "reply could not be delivered; marked failed");
            Unrecorded::Failed(e.to_string())
        }
    };
    match record.write(&shared.store, row.id).await {
        Ok(()) => None,
        Err(e) => {
            tracing::error!(outbox = row.id, error = %e, "cannot record the send result; it is kept and written again, the reply is not sent again");
            Some(record)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        assert_eq!(backoff(0), Duration::from_secs(2));
        assert_eq!(backoff(1), Duration::from_secs(4));
        assert_eq!(backoff(20), Duration::from_secs(300));
    }
}
