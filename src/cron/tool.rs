//! The `cronjob` tool: the agent creates, lists, changes, pauses and removes scheduled jobs
//! from a conversation ("remind me in 30 minutes", "every weekday at 8, brief me").

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use jiff::tz::TimeZone;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::clock::CronControl;
use super::jobs::{
    MAX_TIMEOUT_SECS, check_targets, describe, first_run, parse_target, pinned, schedule_of,
};
use crate::store::{CronJob, CronStore, JobOrigin};
use crate::tools::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Action {
    Create,
    List,
    Update,
    Pause,
    Resume,
    Remove,
    /// Run now (once), whatever the schedule says.
    Run,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    action: Action,
    /// The job (update, pause, resume, remove, run).
    #[serde(default)]
    id: Option<i64>,
    /// create/update: `30m` (once, from now), `every 2h`, a 5-field cron expression like
    /// `0 8 * * 1-5`, or a date and time like `2026-12-24T18:00`.
    #[serde(default)]
    schedule: Option<String>,
    /// create/update: what to do at each run, written as an instruction to yourself (you will
    /// not see this conversation then).
    #[serde(default)]
    prompt: Option<String>,
    /// A short name.
    #[serde(default)]
    name: Option<String>,
    /// Where the output goes: "origin" (this chat, default), "local" (kept, not sent), a
    /// platform name (its home channel), or "platform:chat[:thread]".
    #[serde(default)]
    deliver: Option<Vec<String>>,
    /// Skills to load for each run.
    #[serde(default)]
    skills: Option<Vec<String>>,
    /// IANA time zone for cron expressions and local times (default: the user's).
    #[serde(default)]
    timezone: Option<String>,
    /// "isolated" (default: the job's own conversation) or "origin" (this conversation).
    #[serde(default)]
    session: Option<String>,
    /// Seconds one run may take (default 600, at most 3600).
    #[serde(default)]
    timeout_secs: Option<u64>,
}

/// Manages the scheduled jobs of the calling conversation's owner.
pub struct CronTool {
    spec: ToolSpec,
    store: Arc<dyn CronStore>,
    control: CronControl,
    default_tz: String,
    /// Jobs one user may have; operators are not limited.
    max_jobs: usize,
}

impl CronTool {
    pub fn new(
        store: Arc<dyn CronStore>,
        control: CronControl,
        default_tz: String,
        max_jobs: usize,
    ) -> Self {
        CronTool {
            spec: ToolSpec {
                name: "cronjob",
                description: "Schedule work for later or on a repeat: reminders (\"in 30 minutes \
                    remind me…\"), recurring briefings (\"every weekday at 8…\"), periodic checks. \
                    Each run is a turn of yours without the user present: write `prompt` as a \
                    complete instruction; nobody can answer questions or approve actions then. \
                    Output is delivered to this chat by default; a run whose answer contains \
                    [SILENT] delivers nothing. Actions: create, list, update, pause, resume, \
                    remove, run (now).",
                category: Category::Write,
                parallel_safe: false,
                parameters: schema_of::<Args>(),
                timeout: Duration::from_secs(10),
                max_output_chars: 8_000,
            },
            store,
            control,
            default_tz,
            max_jobs,
        }
    }

    /// A user's job delivers only to the chat it is made in (or `local`); an operator's anywhere.
    fn check_reach(deliver: &[String], ctx: &ToolContext) -> Result<(), ToolError> {
        if ctx.role.is_operator() {
            return Ok(());
        }
        let here = ctx.chat.as_ref();
        let outside = deliver.iter().find(|t| {
            let own = match t.as_str() {
                "origin" | "local" => true,
                t => match (parse_target(t), here) {
                    (Ok((p, Some(chat), _)), Some(c)) => p == c.platform && chat == c.chat,
                    _ => false,
                },
            };
            !own
        });
        match outside {
            Some(t) => Err(ToolError::Failed(format!(
                "`{t}`: a job of yours delivers only to this chat (origin) or nowhere (local); only an operator's jobs post elsewhere"
            ))),
            None => Ok(()),
        }
    }

    async fn job(&self, id: Option<i64>, owner: &str) -> Result<CronJob, ToolError> {
        let id = id.ok_or_else(|| {
            ToolError::InvalidArguments("`id` is required (see action list)".into())
        })?;
        match self.store.cron_get(id).await.map_err(failed)? {
            Some(j) if j.owner.as_deref() == Some(owner) => Ok(j),
            _ => Err(ToolError::Failed(format!(
                "there is no job #{id} of yours; action list shows them"
            ))),
        }
    }

    async fn create(&self, a: Args, ctx: &ToolContext) -> Result<String, ToolError> {
        let schedule = a
            .schedule
            .ok_or_else(|| ToolError::InvalidArguments("`schedule` is required".into()))?;
        let prompt = a
            .prompt
            .filter(|p| !p.trim().is_empty())
            .ok_or_else(|| ToolError::InvalidArguments("`prompt` is required".into()))?;
        let tz_name = a.timezone.unwrap_or_else(|| self.default_tz.clone());
        let tz = zone(&tz_name)?;
        let (parsed, anchor, next) = first_run(&schedule, &tz, self.control.clock.now_ms())
            .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        let schedule = pinned(&parsed, schedule);
        let deliver = a.deliver.unwrap_or_else(|| vec!["origin".into()]);
        check_targets(&deliver).map_err(ToolError::InvalidArguments)?;
        Self::check_reach(&deliver, ctx)?;
        if !ctx.role.is_operator() {
            let owned = self
                .store
                .cron_list(Some(ctx.session.owner()))
                .await
                .map_err(failed)?
                .len();
            if owned >= self.max_jobs {
                return Err(ToolError::Failed(format!(
                    "you have {owned} scheduled jobs, the most a user may have ({}); remove one first (action list shows them)",
                    self.max_jobs
                )));
            }
        }
        let origin = ctx.chat.as_ref().map(|c| JobOrigin {
            platform: c.platform,
            chat: c.chat.clone(),
            thread: c.thread.clone(),
            session_key: ctx.session.to_string(),
            user: c.user.clone(),
        });
        if origin.is_none() && deliver.iter().any(|d| d == "origin") {
            return Err(ToolError::InvalidArguments(
                "there is no chat here to deliver to; give `deliver` targets".into(),
            ));
        }
        let job = CronJob {
            id: 0,
            name: a.name.unwrap_or_else(|| prompt.chars().take(40).collect()),
            schedule,
            timezone: tz_name,
            prompt,
            skills: a.skills.unwrap_or_default(),
            in_origin_session: a.session.as_deref() == Some("origin"),
            origin,
            owner: Some(ctx.session.owner()),
            deliver,
            enabled: true,
            timeout_secs: timeout(a.timeout_secs)?,
            anchor_at: anchor,
            next_run_at: next,
            last_run_at: None,
            created_at: 0,
        };
        let job = self.store.cron_create(job).await.map_err(failed)?;
        self.control.wake.notify_one();
        Ok(format!("Created ({parsed}): {}", describe(&job)))
    }

    async fn update(&self, a: Args, ctx: &ToolContext) -> Result<String, ToolError> {
        let mut job = self.job(a.id, &ctx.session.owner()).await?;
        if let Some(p) = a.prompt {
            job.prompt = p;
        }
        if let Some(n) = a.name {
            job.name = n;
        }
        if let Some(d) = a.deliver {
            check_targets(&d).map_err(ToolError::InvalidArguments)?;
            Self::check_reach(&d, ctx)?;
            job.deliver = d;
        }
        if let Some(s) = a.skills {
            job.skills = s;
        }
        if let Some(t) = a.timeout_secs {
            job.timeout_secs = timeout(Some(t))?;
        }
        if let Some(s) = a.session {
            job.in_origin_session = s == "origin";
        }
        if a.schedule.is_some() || a.timezone.is_some() {
            let tz_name = a.timezone.unwrap_or_else(|| job.timezone.clone());
            let schedule = a.schedule.unwrap_or_else(|| job.schedule.clone());
            let (parsed, anchor, next) =
                first_run(&schedule, &zone(&tz_name)?, self.control.clock.now_ms())
                    .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
            let schedule = pinned(&parsed, schedule);
            (job.schedule, job.timezone, job.anchor_at, job.next_run_at) =
                (schedule, tz_name, anchor, next);
        }
        self.store.cron_update(job.clone()).await.map_err(failed)?;
        self.control.wake.notify_one();
        Ok(format!("Updated: {}", describe(&job)))
    }
}

fn failed(e: crate::store::StoreError) -> ToolError {
    ToolError::Failed(e.to_string())
}

fn zone(name: &str) -> Result<TimeZone, ToolError> {
    TimeZone::get(name).map_err(|_| {
        ToolError::InvalidArguments(format!(
            "unknown time zone `{name}` (use an IANA name such as Europe/Berlin)"
        ))
    })
}

fn timeout(secs: Option<u64>) -> Result<u64, ToolError> {
    match secs.unwrap_or(600) {
        s @ 1..=MAX_TIMEOUT_SECS => Ok(s),
        s => Err(ToolError::InvalidArguments(format!(
            "timeout_secs must be 1 to {MAX_TIMEOUT_SECS}, not {s}"
        ))),
    }
}

#[async_trait]
impl Tool for CronTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let a: Args = parse_args(args)?;
        let owner = ctx.session.owner();
        match a.action {
            Action::Create => self.create(a, ctx).await,
            Action::Update => self.update(a, ctx).await,
            Action::List => {
                let jobs = self.store.cron_list(Some(owner)).await.map_err(failed)?;
                if jobs.is_empty() {
                    return Ok("No scheduled jobs.".into());
                }
                Ok(jobs.iter().map(describe).collect::<Vec<_>>().join("\n"))
            }
            Action::Pause | Action::Resume => {
                let mut job = self.job(a.id, &owner).await?;
                job.enabled = matches!(a.action, Action::Resume);
                if job.enabled {
                    let now = jiff::Timestamp::from_millisecond(self.control.clock.now_ms())
                        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
                    let anchor = jiff::Timestamp::from_millisecond(job.anchor_at).unwrap_or(now);
                    let schedule =
                        schedule_of(&job).map_err(|e| ToolError::Failed(e.to_string()))?;
                    job.next_run_at = schedule.next_after(now, anchor).map(|t| t.as_millisecond());
                }
                self.store.cron_update(job.clone()).await.map_err(failed)?;
                self.control.wake.notify_one();
                Ok(format!(
                    "{}: {}",
                    if job.enabled { "Resumed" } else { "Paused" },
                    describe(&job)
                ))
            }
            Action::Remove => {
                let job = self.job(a.id, &owner).await?;
                self.store.cron_delete(job.id).await.map_err(failed)?;
                Ok(format!("Removed job #{} ({}).", job.id, job.name))
            }
            Action::Run => {
                let mut job = self.job(a.id, &owner).await?;
                job.next_run_at = Some(self.control.clock.now_ms());
                job.enabled = true;
                self.store.cron_update(job.clone()).await.map_err(failed)?;
                self.control.wake.notify_one();
                Ok(format!(
                    "Job #{} runs now; its output follows as usual.",
                    job.id
                ))
            }
        }
    }
}
