//! `CronStore` in PostgreSQL: jobs in `cron_jobs`, runs in `cron_runs`, unique on
//! `(job, scheduled time)`, so one scheduled time runs at most once across every process; a
//! run's output and its deliveries are written in one transaction.

use async_trait::async_trait;
use hermes_adapter::{Outbound, Platform, now_millis};
use tokio_postgres::Row;

use super::{PgStore, outbox};
use crate::store::{CronJob, CronRun, CronStore, Result, StoreError};

const JOB_COLUMNS: &str = "id, name, schedule, timezone, prompt, skills, session, origin, owner, \
     deliver, enabled, timeout_secs, anchor_at, next_run_at, last_run_at, created_at";

fn job(r: &Row) -> CronJob {
    CronJob {
        id: r.get(0),
        name: r.get(1),
        schedule: r.get(2),
        timezone: r.get(3),
        prompt: r.get(4),
        skills: serde_json::from_str(r.get(5)).unwrap_or_default(),
        in_origin_session: r.get::<_, &str>(6) == "origin",
        origin: r
            .get::<_, Option<&str>>(7)
            .and_then(|o| serde_json::from_str(o).ok()),
        owner: r.get(8),
        deliver: serde_json::from_str(r.get(9)).unwrap_or_default(),
        enabled: r.get(10),
        timeout_secs: r.get::<_, i64>(11).max(1) as u64,
        anchor_at: r.get(12),
        next_run_at: r.get(13),
        last_run_at: r.get(14),
        created_at: r.get(15),
    }
}

fn run(r: &Row) -> CronRun {
    CronRun {
        id: r.get(0),
        job_id: r.get(1),
        scheduled_at: r.get(2),
        started_at: r.get(3),
        finished_at: r.get(4),
        status: r.get(5),
        output: r.get(6),
    }
}

/// The JSON columns of a job: skills, origin, deliveries.
fn encode(j: &CronJob) -> Result<(String, Option<String>, String)> {
    Ok((
        serde_json::to_string(&j.skills)?,
        j.origin.as_ref().map(serde_json::to_string).transpose()?,
        serde_json::to_string(&j.deliver)?,
    ))
}

fn session_of(j: &CronJob) -> &'static str {
    if j.in_origin_session {
        "origin"
    } else {
        "isolated"
    }
}

#[async_trait]
impl CronStore for PgStore {
    async fn cron_create(&self, mut j: CronJob) -> Result<CronJob> {
        let (skills, origin, deliver) = encode(&j)?;
        j.created_at = now_millis();
        let c = self.client().await?;
        j.id = c
            .query_one(
                "INSERT INTO cron_jobs (name, schedule, timezone, prompt, skills, session, origin,
                     owner, deliver, enabled, timeout_secs, anchor_at, next_run_at, last_run_at,
                     created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
                 RETURNING id",
                &[
                    &j.name,
                    &j.schedule,
                    &j.timezone,
                    &j.prompt,
                    &skills,
                    &session_of(&j),
                    &origin,
                    &j.owner,
                    &deliver,
                    &j.enabled,
                    &(j.timeout_secs as i64),
                    &j.anchor_at,
                    &j.next_run_at,
                    &j.last_run_at,
                    &j.created_at,
                ],
            )
            .await?
            .get(0);
        Ok(j)
    }

    async fn cron_update(&self, j: CronJob) -> Result<()> {
        let (skills, origin, deliver) = encode(&j)?;
        self.update(
            "UPDATE cron_jobs SET name = $2, schedule = $3, timezone = $4, prompt = $5,
                 skills = $6, session = $7, origin = $8, deliver = $9, enabled = $10,
                 timeout_secs = $11, anchor_at = $12, next_run_at = $13
             WHERE id = $1",
            &[
                &j.id,
                &j.name,
                &j.schedule,
                &j.timezone,
                &j.prompt,
                &skills,
                &session_of(&j),
                &origin,
                &deliver,
                &j.enabled,
                &(j.timeout_secs as i64),
                &j.anchor_at,
                &j.next_run_at,
            ],
        )
        .await
    }

    async fn cron_get(&self, id: i64) -> Result<Option<CronJob>> {
        let c = self.client().await?;
        let row = c
            .query_opt(
                &format!("SELECT {JOB_COLUMNS} FROM cron_jobs WHERE id = $1"),
                &[&id],
            )
            .await?;
        Ok(row.as_ref().map(job))
    }

    async fn cron_list(&self, owner: Option<String>) -> Result<Vec<CronJob>> {
        let c = self.client().await?;
        let rows = c
            .query(
                &format!(
                    "SELECT {JOB_COLUMNS} FROM cron_jobs
                     WHERE $1::TEXT IS NULL OR owner = $1 ORDER BY id"
                ),
                &[&owner],
            )
            .await?;
        Ok(rows.iter().map(job).collect())
    }

    async fn cron_delete(&self, id: i64) -> Result<bool> {
        let c = self.client().await?;
        Ok(c.execute("DELETE FROM cron_jobs WHERE id = $1", &[&id])
            .await?
            == 1)
    }

    async fn cron_due(&self, now: i64) -> Result<Vec<CronJob>> {
        let c = self.client().await?;
        let rows = c
            .query(
                &format!(
                    "SELECT {JOB_COLUMNS} FROM cron_jobs
                     WHERE enabled AND next_run_at IS NOT NULL AND next_run_at <= $1
                     ORDER BY next_run_at"
                ),
                &[&now],
            )
            .await?;
        Ok(rows.iter().map(job).collect())
    }

    async fn cron_next_due(&self) -> Result<Option<i64>> {
        let c = self.client().await?;
        let row = c
            .query_one("SELECT MIN(next_run_at) FROM cron_jobs WHERE enabled", &[])
            .await?;
        Ok(row.get(0))
    }

    async fn cron_claim(
        &self,
        job_id: i64,
        scheduled: i64,
        next: Option<i64>,
    ) -> Result<Option<i64>> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        // The unique (job, time) row is the claim: of several processes, one inserts it.
        let run_id: Option<i64> = tx
            .query_opt(
                "INSERT INTO cron_runs (job_id, scheduled_at, started_at, status)
                 VALUES ($1, $2, $3, 'running')
                 ON CONFLICT (job_id, scheduled_at) DO NOTHING RETURNING id",
                &[&job_id, &scheduled, &now_millis()],
            )
            .await?
            .map(|r| r.get(0));
        tx.execute(
            "UPDATE cron_jobs SET next_run_at = $2,
                 last_run_at = CASE WHEN $3 THEN $4 ELSE last_run_at END
             WHERE id = $1",
            &[&job_id, &next, &run_id.is_some(), &scheduled],
        )
        .await?;
        tx.commit().await?;
        Ok(run_id)
    }

    async fn cron_skip(
        &self,
        job_id: i64,
        scheduled: i64,
        next: Option<i64>,
        why: String,
    ) -> Result<()> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        tx.execute(
            "INSERT INTO cron_runs (job_id, scheduled_at, started_at, finished_at, status, output)
             VALUES ($1, $2, $3, $3, 'skipped', $4)
             ON CONFLICT (job_id, scheduled_at) DO NOTHING",
            &[&job_id, &scheduled, &now_millis(), &why],
        )
        .await?;
        tx.execute(
            "UPDATE cron_jobs SET next_run_at = $2 WHERE id = $1",
            &[&job_id, &next],
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn cron_finish(
        &self,
        run_id: i64,
        status: &'static str,
        output: String,
        replies: Vec<(Platform, Outbound)>,
    ) -> Result<()> {
        let mut c = self.client().await?;
        let tx = c.transaction().await?;
        outbox::insert(&tx, &replies).await?;
        let n = tx
            .execute(
                "UPDATE cron_runs SET status = $2, output = $3, finished_at = $4 WHERE id = $1",
                &[&run_id, &status, &output, &now_millis()],
            )
            .await?;
        if n != 1 {
            return Err(StoreError::Corrupt(format!("cron run {run_id} is missing")));
        }
        tx.commit().await?;
        Ok(())
    }

    async fn cron_mark_interrupted(&self) -> Result<usize> {
        let c = self.client().await?;
        let n = c
            .execute(
                "UPDATE cron_runs SET status = 'failed', finished_at = $1,
                     output = 'interrupted: the daemon stopped during this run'
                 WHERE status = 'running'",
                &[&now_millis()],
            )
            .await?;
        Ok(n as usize)
    }

    async fn cron_runs(&self, job_id: i64, limit: usize) -> Result<Vec<CronRun>> {
        let c = self.client().await?;
        let rows = c
            .query(
                "SELECT id, job_id, scheduled_at, started_at, finished_at, status, output
                 FROM cron_runs WHERE job_id = $1 ORDER BY scheduled_at DESC LIMIT $2",
                &[&job_id, &(limit as i64)],
            )
            .await?;
        Ok(rows.iter().map(run).collect())
    }
}
