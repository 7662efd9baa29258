//! Scheduled jobs and their runs. A run is claimed by inserting `(job, scheduled time)`, which is
//! unique: one scheduled time runs at most once, whatever restarts happen. A run's output and
//! its deliveries (outbox rows) are written in one transaction.

use async_trait::async_trait;
use hermes_adapter::{ChatId, Outbound, Platform, ThreadId, UserId};
use serde::{Deserialize, Serialize};

use super::Result;

/// Where a job was created: its default delivery target and origin session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobOrigin {
    pub platform: Platform,
    pub chat: ChatId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<ThreadId>,
    /// The session the job was created in (`session = origin` runs there).
    pub session_key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserId>,
}

/// A scheduled job.
#[derive(Debug, Clone, PartialEq)]
pub struct CronJob {
    pub id: i64,
    pub name: String,
    /// As written (`every 2h`, `0 8 * * 1-5`, …).
    pub schedule: String,
    pub timezone: String,
    pub prompt: String,
    pub skills: Vec<String>,
    /// Runs in the origin session instead of its own `cron:<id>` session.
    pub in_origin_session: bool,
    pub origin: Option<JobOrigin>,
    /// Whose job it is (the creating session's owner); `None` for jobs made from the shell.
    pub owner: Option<String>,
    /// Targets: `origin`, `local`, a platform (its home channel), `platform:chat[:thread]`.
    pub deliver: Vec<String>,
    pub enabled: bool,
    pub timeout_secs: u64,
    /// Start of a repeating schedule.
    pub anchor_at: i64,
    /// `None`: no further run (a one-off that has run).
    pub next_run_at: Option<i64>,
    pub last_run_at: Option<i64>,
    pub created_at: i64,
}

/// One run of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronRun {
    pub id: i64,
    pub job_id: i64,
    pub scheduled_at: i64,
    pub started_at: i64,
    pub finished_at: Option<i64>,
    /// running, ok, silent, failed, skipped.
    pub status: String,
    pub output: Option<String>,
}

/// The scheduler's jobs and runs: the `cronjob` tool and `hermes cron` edit them, the scheduler
/// claims and finishes runs.
#[async_trait]
pub trait CronStore: Send + Sync {
    /// Store a new job (its `id` and `created_at` are assigned).
    async fn cron_create(&self, j: CronJob) -> Result<CronJob>;

    /// Save the editable fields of a job.
    async fn cron_update(&self, j: CronJob) -> Result<()>;

    async fn cron_get(&self, id: i64) -> Result<Option<CronJob>>;

    /// Jobs of one owner, or all (`None`), oldest first.
    async fn cron_list(&self, owner: Option<String>) -> Result<Vec<CronJob>>;

    async fn cron_delete(&self, id: i64) -> Result<bool>;

    /// Enabled jobs due at `now`.
    async fn cron_due(&self, now: i64) -> Result<Vec<CronJob>>;

    /// When the next enabled job is due.
    async fn cron_next_due(&self) -> Result<Option<i64>>;

    /// Claim the run of `job` at `scheduled`, moving the job on to `next`. `None` if that
    /// scheduled time was claimed before (it never runs twice).
    async fn cron_claim(
        &self,
        job_id: i64,
        scheduled: i64,
        next: Option<i64>,
    ) -> Result<Option<i64>>;

    /// Record a run that did not happen (missed while the daemon was down) and move on.
    async fn cron_skip(
        &self,
        job_id: i64,
        scheduled: i64,
        next: Option<i64>,
        why: String,
    ) -> Result<()>;

    /// Finish a run: its status and output, and the deliveries, in one transaction.
    async fn cron_finish(
        &self,
        run_id: i64,
        status: &'static str,
        output: String,
        replies: Vec<(Platform, Outbound)>,
    ) -> Result<()>;

    /// Runs left `running` by a crash: marked failed (they are not re-run, so a job with side
    /// effects never acts twice for one scheduled time). Returns how many.
    async fn cron_mark_interrupted(&self) -> Result<usize>;

    /// The latest runs of a job, newest first.
    async fn cron_runs(&self, job_id: i64, limit: usize) -> Result<Vec<CronRun>>;
}
