//! The notification channel: one connection outside the pool that `LISTEN`s for stored inbox
//! rows (`pg_notify('hermes_inbox', …)` in `inbox_insert`) and wakes this process's router, so
//! that a message received by one process is claimed by whichever router gets to it first. It
//! reconnects after the database restarts, and wakes the router once on every (re)connect for
//! what was stored while it was not listening.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::Notify;
use tokio_postgres::{AsyncMessage, NoTls};
use tokio_util::sync::CancellationToken;

/// Listen until `stop`, reconnecting with a bounded backoff.
pub(super) async fn run(
    config: Arc<tokio_postgres::Config>,
    signal: Arc<Notify>,
    stop: CancellationToken,
) {
    let mut backoff = Duration::from_millis(250);
    while !stop.is_cancelled() {
        match config.connect(NoTls).await {
            Ok((client, mut connection)) => {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let driver = tokio::spawn(async move {
                    let mut messages =
                        futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                    while let Some(message) = messages.next().await {
                        match message {
                            Ok(AsyncMessage::Notification(_)) => {
                                if tx.send(()).is_err() {
                                    return;
                                }
                            }
                            Ok(_) => {}
                            Err(e) => {
                                tracing::warn!(error = %e, "the notification connection failed");
                                return;
                            }
                        }
                    }
                });
                match client.batch_execute("LISTEN hermes_inbox").await {
                    Ok(()) => {
                        backoff = Duration::from_millis(250);
                        signal.notify_one();
                        loop {
                            tokio::select! {
                                got = rx.recv() => match got {
                                    Some(()) => signal.notify_one(),
                                    None => break,
                                },
                                _ = stop.cancelled() => break,
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot listen for stored messages"),
                }
                driver.abort();
            }
            Err(e) => tracing::debug!(error = %e, "cannot open the notification connection"),
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stop.cancelled() => return,
        }
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}
