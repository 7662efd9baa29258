//! Scheduled jobs and their runs. A run is claimed by inserting `(job, scheduled time)`, which is
//! unique: one scheduled time runs at most once, whatever restarts happen. A run's output and
//! its deliveries (outbox rows) are written in one transaction.

use hermes_adapter::{ChatId, Outbound, Platform, ThreadId, UserId, now_millis};
use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{Result, Store, StoreError, outbox};

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

const JOB_COLUMNS: &str = "id, name, schedule, timezone, prompt, skills, session, origin, owner, deliver, \
     enabled, timeout_secs, anchor_at, next_run_at, last_run_at, created_at";

fn job(r: &rusqlite::Row<'_>) -> rusqlite::Result<CronJob> {
    let json = |i: usize| -> rusqlite::Result<String> { r.get(i) };
    Ok(CronJob {
        id: r.get(0)?,
        name: r.get(1)?,
        schedule: r.get(2)?,
        timezone: r.get(3)?,
        prompt: r.get(4)?,
        skills: serde_json::from_str(&json(5)?).unwrap_or_default(),
        in_origin_session: r.get::<_, String>(6)? == "origin",
        origin: r
            .get::<_, Option<String>>(7)?
            .and_then(|o| serde_json::from_str(&o).ok()),
        owner: r.get(8)?,
        deliver: serde_json::from_str(&json(9)?).unwrap_or_default(),
        enabled: r.get(10)?,
        timeout_secs: r.get::<_, i64>(11)?.max(1) as u64,
        anchor_at: r.get(12)?,
        next_run_at: r.get(13)?,
        last_run_at: r.get(14)?,
        created_at: r.get(15)?,
    })
}

fn run(r: &rusqlite::Row<'_>) -> rusqlite::Result<CronRun> {
    Ok(CronRun {
        id: r.get(0)?,
        job_id: r.get(1)?,
        scheduled_at: r.get(2)?,
        started_at: r.get(3)?,
        finished_at: r.get(4)?,
        status: r.get(5)?,
        output: r.get(6)?,
    })
}

fn encode(j: &CronJob) -> Result<(String, Option<String>, String)> {
    Ok((
        serde_json::to_string(&j.skills)?,
        j.origin.as_ref().map(serde_json::to_string).transpose()?,
        serde_json::to_string(&j.deliver)?,
    ))
}

impl Store {
    /// Store a new job (its `id` and `created_at` are assigned).
    pub async fn cron_create(&self, mut j: CronJob) -> Result<CronJob> {
        self.call(move |c| {
            let (skills, origin, deliver) = encode(&j)?;
            j.created_at = now_millis();
            c.execute(
                "INSERT INTO cron_jobs (name, schedule, timezone, prompt, skills, session, origin, owner,
                     deliver, enabled, timeout_secs, anchor_at, next_run_at, last_run_at, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                params![
                    j.name,
                    j.schedule,
                    j.timezone,
                    j.prompt,
                    skills,
                    if j.in_origin_session { "origin" } else { "isolated" },
                    origin,
                    j.owner,
                    deliver,
                    j.enabled,
                    j.timeout_secs as i64,
                    j.anchor_at,
                    j.next_run_at,
                    j.last_run_at,
                    j.created_at
                ],
            )?;
            j.id = c.last_insert_rowid();
            Ok(j)
        })
        .await
    }

    /// Save the editable fields of a job.
    pub async fn cron_update(&self, j: CronJob) -> Result<()> {
        self.call(move |c| {
            let (skills, origin, deliver) = encode(&j)?;
            c.execute(
                "UPDATE cron_jobs SET name = ?2, schedule = ?3, timezone = ?4, prompt = ?5, skills = ?6,
                     session = ?7, origin = ?8, deliver = ?9, enabled = ?10, timeout_secs = ?11,
                     anchor_at = ?12, next_run_at = ?13
                 WHERE id = ?1",
                params![
                    j.id,
                    j.name,
                    j.schedule,
                    j.timezone,
                    j.prompt,
                    skills,
                    if j.in_origin_session { "origin" } else { "isolated" },
                    origin,
                    deliver,
                    j.enabled,
                    j.timeout_secs as i64,
                    j.anchor_at,
                    j.next_run_at
                ],
            )?;
            Ok(())
        })
        .await
    }

    pub async fn cron_get(&self, id: i64) -> Result<Option<CronJob>> {
        self.call(move |c| {
            Ok(c.query_row(
                &format!("SELECT {JOB_COLUMNS} FROM cron_jobs WHERE id = ?1"),
                [id],
                job,
            )
            .optional()?)
        })
        .await
    }

    /// Jobs of one owner, or all (`None`), oldest first.
    pub async fn cron_list(&self, owner: Option<String>) -> Result<Vec<CronJob>> {
        self.call(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {JOB_COLUMNS} FROM cron_jobs WHERE ?1 IS NULL OR owner = ?1 ORDER BY id"
            ))?;
            Ok(stmt
                .query_map([owner], job)?
                .collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    pub async fn cron_delete(&self, id: i64) -> Result<bool> {
        self.call(move |c| Ok(c.execute("DELETE FROM cron_jobs WHERE id = ?1", [id])? == 1))
            .await
    }

    /// Enabled jobs due at `now`.
    pub async fn cron_due(&self, now: i64) -> Result<Vec<CronJob>> {
        self.call(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {JOB_COLUMNS} FROM cron_jobs
                 WHERE enabled = 1 AND next_run_at IS NOT NULL AND next_run_at <= ?1 ORDER BY next_run_at"
            ))?;
            Ok(stmt.query_map([now], job)?.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    /// When the next enabled job is due.
    pub async fn cron_next_due(&self) -> Result<Option<i64>> {
        self.call(|c| {
            Ok(c.query_row(
                "SELECT MIN(next_run_at) FROM cron_jobs WHERE enabled = 1",
                [],
                |r| r.get::<_, Option<i64>>(0),
            )?)
        })
        .await
    }

    /// Claim the run of `job` at `scheduled`, moving the job on to `next`. `None` if that
    /// scheduled time was claimed before (it never runs twice).
    pub async fn cron_claim(
        &self,
        job_id: i64,
        scheduled: i64,
        next: Option<i64>,
    ) -> Result<Option<i64>> {
        self.call(move |c| {
            let tx = c.transaction()?;
            let now = now_millis();
            let claimed = tx.execute(
                "INSERT OR IGNORE INTO cron_runs (job_id, scheduled_at, started_at, status)
                 VALUES (?1, ?2, ?3, 'running')",
                params![job_id, scheduled, now],
            )? == 1;
            let run_id = claimed.then(|| tx.last_insert_rowid());
            tx.execute(
                "UPDATE cron_jobs SET next_run_at = ?2, last_run_at = CASE WHEN ?3 THEN ?4 ELSE last_run_at END
                 WHERE id = ?1",
                params![job_id, next, claimed, scheduled],
            )?;
            tx.commit()?;
            Ok(run_id)
        })
        .await
    }

    /// Record a run that did not happen (missed while the daemon was down) and move on.
    pub async fn cron_skip(
        &self,
        job_id: i64,
        scheduled: i64,
        next: Option<i64>,
        why: String,
    ) -> Result<()> {
        self.call(move |c| {
            let tx = c.transaction()?;
            let now = now_millis();
            tx.execute(
                "INSERT OR IGNORE INTO cron_runs (job_id, scheduled_at, started_at, finished_at, status, output)
                 VALUES (?1, ?2, ?3, ?3, 'skipped', ?4)",
                params![job_id, scheduled, now, why],
            )?;
            tx.execute("UPDATE cron_jobs SET next_run_at = ?2 WHERE id = ?1", params![job_id, next])?;
            tx.commit()?;
            Ok(())
        })
        .await
    }

    /// Finish a run: its status and output, and the deliveries, in one transaction.
    pub async fn cron_finish(
        &self,
        run_id: i64,
        status: &'static str,
        output: String,
        replies: Vec<(Platform, Outbound)>,
    ) -> Result<()> {
        self.call(move |c| {
            let tx = c.transaction()?;
            outbox::insert(&tx, &replies)?;
            let n = tx.execute(
                "UPDATE cron_runs SET status = ?2, output = ?3, finished_at = ?4 WHERE id = ?1",
                params![run_id, status, output, now_millis()],
            )?;
            if n != 1 {
                return Err(StoreError::Corrupt(format!("cron run {run_id} is missing")));
            }
            tx.commit()?;
            Ok(())
        })
        .await
    }

    /// Runs left `running` by a crash: marked failed (they are not re-run, so a job with side
    /// effects never acts twice for one scheduled time). Returns how many.
    pub async fn cron_mark_interrupted(&self) -> Result<usize> {
        self.call(|c| {
            Ok(c.execute(
                "UPDATE cron_runs SET status = 'failed', finished_at = ?1,
                     output = 'interrupted: the daemon stopped during this run'
                 WHERE status = 'running'",
                [now_millis()],
            )?)
        })
        .await
    }

    /// The latest runs of a job, newest first.
    pub async fn cron_runs(&self, job_id: i64, limit: usize) -> Result<Vec<CronRun>> {
        self.call(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT id, job_id, scheduled_at, started_at, finished_at, status, output
                 FROM cron_runs WHERE job_id = ?1 ORDER BY scheduled_at DESC LIMIT ?2",
            )?;
            Ok(stmt
                .query_map(params![job_id, limit as i64], run)?
                .collect::<rusqlite::Result<_>>()?)
        })
        .await
    }
}
