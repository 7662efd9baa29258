//! `hermes cron`: scheduled jobs from the shell — list, add, remove, pause, resume, run now.
//! The running gateway picks changes up within 5 seconds.

use std::process::ExitCode;

use clap::Subcommand;
use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::{Outcome, emit, exit_code};
use crate::config::Config;
use crate::cron::jobs::{
    MAX_TIMEOUT_SECS, check_targets, describe, first_run, pinned, run_now, set_enabled,
};
use crate::store::{CronJob, Store};

#[derive(Debug, Subcommand)]
pub enum CronAction {
    /// List every job with its schedule, next run and targets (`--runs` adds recent runs).
    List {
        #[arg(long)]
        runs: bool,
    },
    /// Add a job.
    Add {
        /// `30m` (once, from now), `every 2h`, a 5-field cron expression, or a date and time.
        #[arg(long)]
        schedule: String,
        /// What the agent should do at each run.
        #[arg(long)]
        prompt: String,
        #[arg(long)]
        name: Option<String>,
        /// Delivery target (repeatable): local, a platform (its home channel, see /sethome),
        /// or platform:chat[:thread].
        #[arg(long = "deliver", default_value = "local")]
        deliver: Vec<String>,
        /// IANA time zone for cron expressions and local times (default: agent.timezone).
        #[arg(long)]
        timezone: Option<String>,
        /// Skill to load for each run (repeatable).
        #[arg(long = "skill")]
        skills: Vec<String>,
        /// Seconds one run may take.
        #[arg(long, default_value_t = 600)]
        timeout: u64,
    },
    /// Remove a job.
    Remove { id: i64 },
    /// Pause a job (it keeps its settings).
    Pause { id: i64 },
    /// Resume a paused job from its next scheduled time.
    Resume { id: i64 },
    /// Run a job once, now (the running gateway starts it within 5 seconds).
    Run { id: i64 },
}

pub(super) async fn cron(config: Config, action: CronAction) -> ExitCode {
    let store = match super::open_store(&config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hermes: {e}");
            return ExitCode::FAILURE;
        }
    };
    exit_code(run(&config, &store, action).await)
}

async fn job(store: &Store, id: i64) -> Result<CronJob, String> {
    store
        .cron_get(id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("there is no job #{id}; `hermes cron list` shows them"))
}

async fn run(config: &Config, store: &Store, action: CronAction) -> Outcome {
    let now = hermes_adapter::now_millis();
    match action {
        CronAction::List { runs } => {
            let jobs = store.cron_list(None).await.map_err(|e| e.to_string())?;
            if jobs.is_empty() {
                return emit("No scheduled jobs.\n");
            }
            let mut out = String::new();
            for j in &jobs {
                out.push_str(&describe(j));
                out.push('\n');
                if runs {
                    for r in store.cron_runs(j.id, 5).await.map_err(|e| e.to_string())? {
                        let at = Timestamp::from_millisecond(r.scheduled_at)
                            .map(|t| t.to_string())
                            .unwrap_or_default();
                        let output: String =
                            r.output.unwrap_or_default().chars().take(100).collect();
                        out.push_str(&format!(
                            "    {at} {}: {}\n",
                            r.status,
                            output.replace('\n', " ")
                        ));
                    }
                }
            }
            emit(&out)
        }
        CronAction::Add {
            schedule,
            prompt,
            name,
            deliver,
            timezone,
            skills,
            timeout,
        } => {
            let tz_name = timezone
                .or_else(|| config.agent.timezone.clone())
                .unwrap_or_else(|| "UTC".into());
            let tz = TimeZone::get(&tz_name).map_err(|_| {
                format!("unknown time zone `{tz_name}` (use an IANA name such as Europe/Berlin)")
            })?;
            let (parsed, anchor, next) =
                first_run(&schedule, &tz, now).map_err(|e| e.to_string())?;
            let schedule = pinned(&parsed, schedule);
            check_targets(&deliver)?;
            if deliver.iter().any(|d| d == "origin") {
                return Err(
                    "`origin` only exists for jobs made in a chat; use a platform or platform:chat"
                        .into(),
                );
            }
            if !(1..=MAX_TIMEOUT_SECS).contains(&timeout) {
                return Err(format!("--timeout must be 1 to {MAX_TIMEOUT_SECS} seconds"));
            }
            let job = store
                .cron_create(CronJob {
                    id: 0,
                    name: name.unwrap_or_else(|| prompt.chars().take(40).collect()),
                    schedule,
                    timezone: tz_name,
                    prompt,
                    skills,
                    in_origin_session: false,
                    origin: None,
                    owner: None,
                    deliver,
                    enabled: true,
                    timeout_secs: timeout,
                    anchor_at: anchor,
                    next_run_at: next,
                    last_run_at: None,
                    created_at: 0,
                })
                .await
                .map_err(|e| e.to_string())?;
            emit(&format!("Added ({parsed}): {}\n", describe(&job)))
        }
        CronAction::Remove { id } => {
            let j = job(store, id).await?;
            store.cron_delete(id).await.map_err(|e| e.to_string())?;
            emit(&format!("Removed #{} ({}).\n", j.id, j.name))
        }
        CronAction::Pause { id } | CronAction::Resume { id } => {
            let resume = matches!(action, CronAction::Resume { .. });
            let mut j = job(store, id).await?;
            set_enabled(&mut j, resume, now).map_err(|e| e.to_string())?;
            store
                .cron_update(j.clone())
                .await
                .map_err(|e| e.to_string())?;
            emit(&format!(
                "{}: {}\n",
                if resume { "Resumed" } else { "Paused" },
                describe(&j)
            ))
        }
        CronAction::Run { id } => {
            let mut j = job(store, id).await?;
            run_now(&mut j, now);
            store
                .cron_update(j.clone())
                .await
                .map_err(|e| e.to_string())?;
            emit(&format!(
                "Job #{} is due now; the running gateway starts it within 5 seconds.\n",
                j.id
            ))
        }
    }
}
