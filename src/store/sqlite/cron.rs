//! `CronStore` in SQLite: jobs in `cron_jobs`, runs in `cron_runs`, unique on
//! `(job, scheduled time)` so one scheduled time runs at most once; a run's output and its
//! deliveries are written in one transaction.

use super::Cached;
use async_trait::async_trait;
use hermes_adapter::{Outbound, Platform, now_millis};
use rusqlite::{OptionalExtension, params};

use super::{SqliteStore, outbox};
use crate::store::{CronJob, CronRun, CronStore, Result, StoreError};

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

#[async_trait]
impl CronStore for SqliteStore {
    async fn cron_create(&self, mut j: CronJob) -> Result<CronJob> {
        self.call(move |c| {
            let (skills, origin, deliver) = encode(&j)?;
            j.created_at = now_millis();
            c.exec(
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

    async fn cron_update(&self, j: CronJob) -> Result<()> {
        self.call(move |c| {
            let (skills, origin, deliver) = encode(&j)?;
            c.exec(
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

    async fn cron_get(&self, id: i64) -> Result<Option<CronJob>> {
        self.call(move |c| {
            Ok(c.one(
                &format!("SELECT {JOB_COLUMNS} FROM cron_jobs WHERE id = ?1"),
                [id],
                job,
            )
            .optional()?)
        })
        .await
    }

    async fn cron_list(&self, owner: Option<String>) -> Result<Vec<CronJob>> {
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

    async fn cron_delete(&self, id: i64) -> Result<bool> {
        self.call(move |c| Ok(c.exec("DELETE FROM cron_jobs WHERE id = ?1", [id])? == 1))
            .await
    }

    async fn cron_due(&self, now: i64) -> Result<Vec<CronJob>> {
        self.call(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {JOB_COLUMNS} FROM cron_jobs
                 WHERE enabled = 1 AND next_run_at IS NOT NULL AND next_run_at <= ?1 ORDER BY next_run_at"
            ))?;
            Ok(stmt.query_map([now], job)?.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn cron_next_due(&self) -> Result<Option<i64>> {
        self.call(|c| {
            Ok(c.one(
                "SELECT MIN(next_run_at) FROM cron_jobs WHERE enabled = 1",
                [],
                |r| r.get::<_, Option<i64>>(0),
            )?)
        })
        .await
    }

    async fn cron_claim(
        &self,
        job_id: i64,
        scheduled: i64,
        next: Option<i64>,
    ) -> Result<Option<i64>> {
        self.call(move |c| {
            let tx = c.savepoint()?;
            let now = now_millis();
            let claimed = tx.exec(
                "INSERT OR IGNORE INTO cron_runs (job_id, scheduled_at, started_at, status)
                 VALUES (?1, ?2, ?3, 'running')",
                params![job_id, scheduled, now],
            )? == 1;
            let run_id = claimed.then(|| tx.last_insert_rowid());
            tx.exec(
                "UPDATE cron_jobs SET next_run_at = ?2, last_run_at = CASE WHEN ?3 THEN ?4 ELSE last_run_at END
                 WHERE id = ?1",
                params![job_id, next, claimed, scheduled],
            )?;
            tx.commit()?;
            Ok(run_id)
        })
        .await
    }

    async fn cron_skip(
        &self,
        job_id: i64,
        scheduled: i64,
        next: Option<i64>,
        why: String,
    ) -> Result<()> {
        self.call(move |c| {
            let tx = c.savepoint()?;
            let now = now_millis();
            tx.exec(
                "INSERT OR IGNORE INTO cron_runs (job_id, scheduled_at, started_at, finished_at, status, output)
                 VALUES (?1, ?2, ?3, ?3, 'skipped', ?4)",
                params![job_id, scheduled, now, why],
            )?;
            tx.exec("UPDATE cron_jobs SET next_run_at = ?2 WHERE id = ?1", params![job_id, next])?;
            tx.commit()?;
            Ok(())
        })
        .await
    }

    async fn cron_finish(
        &self,
        run_id: i64,
        status: &'static str,
        output: String,
        replies: Vec<(Platform, Outbound)>,
    ) -> Result<()> {
        self.call(move |c| {
            let tx = c.savepoint()?;
            outbox::insert(&tx, &replies)?;
            let n = tx.exec(
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

    async fn cron_mark_interrupted(&self) -> Result<usize> {
        self.call(|c| {
            Ok(c.exec(
                "UPDATE cron_runs SET status = 'failed', finished_at = ?1,
                     output = 'interrupted: the daemon stopped during this run'
                 WHERE status = 'running'",
                [now_millis()],
            )?)
        })
        .await
    }

    async fn cron_runs(&self, job_id: i64, limit: usize) -> Result<Vec<CronRun>> {
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
