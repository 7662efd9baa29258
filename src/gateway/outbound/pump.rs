//! The outbox pump: sends due replies, one at a time per chat and concurrently across chats,
//! waits out `retry_after`, retries transient failures with backoff, and marks each row sent or
//! failed. A reply is marked sent only after the platform accepted it.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use hermes_adapter::{SendError, now_millis};
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

/// Send until `stop`; in-flight sends are finished before returning.
pub(crate) async fn run(shared: Arc<Shared>, stop: CancellationToken) {
    let mut in_flight: JoinSet<i64> = JoinSet::new();
    let mut busy: HashSet<i64> = HashSet::new();
    loop {
        let signal = shared.outbox_signal.notified();
        if busy.len() < MAX_IN_FLIGHT {
            match shared
                .store
                .outbox_due(now_millis(), MAX_IN_FLIGHT * 2)
                .await
            {
                Ok(rows) => {
                    for row in rows {
                        if busy.len() >= MAX_IN_FLIGHT {
                            break;
                        }
                        if busy.insert(row.id) {
                            let shared = shared.clone();
                            in_flight.spawn(async move {
                                let id = row.id;
                                send_one(&shared, row).await;
                                id
                            });
                        }
                    }
                }
                Err(e) => tracing::error!(error = %e, "cannot read the outbox"),
            }
        }
        let wait = match shared.store.outbox_next_due().await {
            Ok(Some(at)) => Duration::from_millis(
                (at - now_millis()).clamp(0, MAX_IDLE.as_millis() as i64) as u64,
            ),
            _ => MAX_IDLE,
        };
        // A due head that is being sent right now must not spin the loop.
        let wait = wait.max(Duration::from_millis(if busy.is_empty() {
            50
        } else {
            250
        }));
        tokio::select! {
            Some(done) = in_flight.join_next(), if !in_flight.is_empty() => {
                if let Ok(id) = done {
                    busy.remove(&id);
                }
            }
            _ = signal => {}
            _ = tokio::time::sleep(wait) => {}
            _ = stop.cancelled() => break,
        }
    }
    while in_flight.join_next().await.is_some() {}
}

/// At shutdown: send what is due, one by one, until nothing is due or the deadline passes.
pub(crate) async fn flush(shared: &Arc<Shared>, deadline: tokio::time::Instant) {
    loop {
        let rows = match shared.store.outbox_due(now_millis(), MAX_IN_FLIGHT).await {
            Ok(rows) if !rows.is_empty() => rows,
            _ => return,
        };
        for row in rows {
            if tokio::time::timeout_at(deadline, send_one(shared, row))
                .await
                .is_err()
            {
                tracing::warn!("replies still unsent at shutdown; they are sent at the next start");
                return;
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
    match adapter.edit(&out.chat, &sent, &out.text).await {
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

async fn send_one(shared: &Shared, row: OutboxRow) {
    let Some(adapter) = shared.adapter(row.platform) else {
        let msg = format!("no {} adapter is running", row.platform);
        tracing::error!(outbox = row.id, "{msg}; reply marked failed");
        let _ = shared.store.outbox_mark_failed(row.id, msg).await;
        return;
    };
    let result =
        match tokio::time::timeout(SEND_TIMEOUT, deliver(adapter.as_ref(), &row.outbound)).await {
            Ok(r) => r,
            Err(_) => Err(SendError::Transient(format!(
                "no answer within {SEND_TIMEOUT:?}"
            ))),
        };
    let store = &shared.store;
    let counter = match &result {
        Ok(_) => &metrics().messages_out,
        Err(_) => &metrics().send_failures,
    };
    Metrics::platform(counter, row.platform.as_str()).inc();
    let outcome = match result {
        Ok(sent) => {
            tracing::debug!(outbox = row.id, platform = %row.platform, chat = %row.outbound.chat, "reply sent");
            store.outbox_mark_sent(row.id, sent.0).await
        }
        Err(SendError::RetryAfter(wait)) => {
            tracing::info!(outbox = row.id, platform = %row.platform, ?wait, "rate limited; waiting before resending");
            let at = now_millis() + wait.as_millis() as i64;
            store
                .outbox_defer(row.id, at, format!("rate limited for {wait:?}"))
                .await
        }
        Err(e)
            if e.is_retryable() && row.attempts + 1 < shared.config().gateway.send_max_attempts =>
        {
            let wait = backoff(row.attempts);
            tracing::warn!(outbox = row.id, platform = %row.platform, error = %e, ?wait, "send failed; will retry");
            store
                .outbox_retry_at(
                    row.id,
                    now_millis() + wait.as_millis() as i64,
                    e.to_string(),
                )
                .await
        }
        Err(e) => {
            tracing::error!(outbox = row.id, platform = %row.platform, chat = %row.outbound.chat, error = %e, "reply could not be delivered; marked failed");
            store.outbox_mark_failed(row.id, e.to_string()).await
        }
    };
    if let Err(e) = outcome {
        tracing::error!(outbox = row.id, error = %e, "cannot record the send result");
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
