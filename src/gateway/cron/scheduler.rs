//! The scheduler: wakes when a job is due (or jobs changed), claims each due run once —
//! `(job, scheduled time)` is unique in the store — and hands it to the runner. Runs missed while
//! the daemon was down are made once at start if they are recent enough, otherwise skipped and
//! recorded.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;

use super::run as cron_run;
use crate::cron::jobs::schedule_of;
use crate::gateway::Shared;
use crate::store::CronJob;

/// Longest sleep between two looks at the jobs (jobs added from the shell are seen this late;
/// the look is one indexed query).
const MAX_IDLE: Duration = Duration::from_secs(5);

pub(crate) async fn run(shared: Arc<Shared>) {
    match shared.store.cron_mark_interrupted().await {
        Ok(0) => {}
        Ok(n) => tracing::warn!(
            runs = n,
            "scheduled runs were interrupted by the last stop; marked failed"
        ),
        Err(e) => tracing::error!(error = %e, "cannot read scheduled runs"),
    }
    if let Err(e) = super::builtin::ensure(&shared).await {
        tracing::error!(error = %e, "cannot set up the built-in jobs");
    }
    let control = shared.agent().cron.clone();
    loop {
        let wake = control.wake.notified();
        let now = control.clock.now_ms();
        match shared.store.cron_due(now).await {
            Ok(due) => {
                for job in due {
                    start(&shared, job, now).await;
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot read scheduled jobs"),
        }
        let wait = match shared.store.cron_next_due().await {
            Ok(Some(at)) => Duration::from_millis(
                (at - control.clock.now_ms()).clamp(0, MAX_IDLE.as_millis() as i64) as u64,
            ),
            _ => MAX_IDLE,
        };
        tokio::select! {
            _ = wake => {}
            _ = tokio::time::sleep(wait.max(Duration::from_millis(20))) => {}
            _ = shared.draining.cancelled() => return,
        }
    }
}

/// Claim and start the due run of `job`, or skip it if it was missed by too much.
async fn start(shared: &Arc<Shared>, job: CronJob, now: i64) {
    let Some(scheduled) = job.next_run_at else {
        return;
    };
    let schedule = match schedule_of(&job) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(job = job.id, error = %e, "a stored job has an invalid schedule; pausing it");
            let mut paused = job.clone();
            paused.enabled = false;
            let _ = shared.store.cron_update(paused).await;
            return;
        }
    };
    let anchor = Timestamp::from_millisecond(job.anchor_at).unwrap_or(Timestamp::UNIX_EPOCH);
    let after = Timestamp::from_millisecond(now.max(scheduled)).unwrap_or(anchor);
    let next = schedule
        .next_after(after, anchor)
        .map(|t| t.as_millisecond());
    let late_ms = now - scheduled;
    if late_ms > shared.config().cron.missed_grace_secs as i64 * 1000 {
        let why = format!(
            "missed: the daemon was down when it was due ({} min late)",
            late_ms / 60_000
        );
        tracing::warn!(job = job.id, "{why}; skipped");
        if let Err(e) = shared.store.cron_skip(job.id, scheduled, next, why).await {
            tracing::error!(job = job.id, error = %e, "cannot record a skipped run");
        }
        return;
    }
    match shared.store.cron_claim(job.id, scheduled, next).await {
        Ok(Some(run_id)) => {
            tracing::info!(job = job.id, run = run_id, "scheduled job starting");
            let shared = shared.clone();
            tokio::spawn(async move { cron_run::run(&shared, job, run_id, scheduled).await });
        }
        Ok(None) => tracing::debug!(job = job.id, "run already claimed; moved on"),
        Err(e) => tracing::error!(job = job.id, error = %e, "cannot claim a scheduled run"),
    }
}
