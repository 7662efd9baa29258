//! Housekeeping while the daemon runs: the delivery log (finished inbox and outbox rows) is
//! pruned by age every hour, so the store stays bounded over months of uptime.

use std::sync::Arc;
use std::time::Duration;

use hermes_adapter::now_millis;

use super::Shared;

const EVERY: Duration = Duration::from_secs(3600);
const DAY_MS: i64 = 24 * 3600 * 1000;

pub(crate) async fn run(shared: Arc<Shared>) {
    let mut wait = Duration::from_secs(60);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shared.intake.cancelled() => return,
        }
        wait = EVERY;
        let days = shared.config().retention.delivery_log_days;
        if days == 0 {
            continue;
        }
        let before = now_millis() - i64::from(days) * DAY_MS;
        match shared.store.prune_delivery_log(before).await {
            Ok(p) if p.inbox + p.outbox > 0 => {
                tracing::info!(
                    inbox = p.inbox,
                    outbox = p.outbox,
                    days,
                    "pruned the delivery log"
                )
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "cannot prune the delivery log"),
        }
    }
}
