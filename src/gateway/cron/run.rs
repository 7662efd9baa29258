//! Running one scheduled job: an agent turn without a person (confirmations are denied), bounded
//! by the job's timeout; the output and its deliveries are stored in one transaction with an
//! idempotency key of (job, scheduled time), so a restart never delivers a run twice. An answer
//! containing `[SILENT]` is stored and not delivered.

use std::sync::Arc;
use std::time::Duration;

use hermes_adapter::{ChatId, ChatKind, Platform, SessionKey, ThreadId};
use serde::{Deserialize, Serialize};

use crate::agent::{NewMessage, Setting, TurnControl, TurnInput, TurnOutcome};
use crate::gateway::Shared;
use crate::gateway::outbound::replies::to_chat;
use crate::llm::ChatMessage;
use crate::policy::Role;
use crate::store::CronJob;
use crate::tools::ChatRef;

/// A platform's home channel (`/sethome`), where jobs delivering to the platform post.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Home {
    pub chat: ChatId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<ThreadId>,
}

pub(crate) async fn home(shared: &Shared, platform: Platform) -> Option<Home> {
    let raw = shared
        .store
        .setting("home", platform.as_str())
        .await
        .ok()??;
    serde_json::from_str(&raw).ok()
}

pub(crate) async fn set_home(
    shared: &Shared,
    platform: Platform,
    home: &Home,
) -> Result<(), crate::store::StoreError> {
    let json = serde_json::to_string(home)
        .map_err(|e| crate::store::StoreError::Corrupt(e.to_string()))?;
    shared
        .store
        .set_setting("home", platform.as_str(), &json)
        .await
}

/// Where `target` points: `None` for `local`; an error text when it cannot be resolved or its
/// owner may not post there. A user's job delivers only to the chat it was made in (and
/// `local`); an operator's goes wherever the operator points it.
async fn resolve(
    shared: &Shared,
    job: &CronJob,
    role: Role,
    target: &str,
) -> Result<Option<(Platform, ChatId, Option<ThreadId>)>, String> {
    let place = match target {
        "local" => return Ok(None),
        "origin" => job
            .origin
            .as_ref()
            .map(|o| (o.platform, o.chat.clone(), o.thread.clone()))
            .ok_or_else(|| "the job has no origin chat".to_owned())?,
        t => match crate::cron::jobs::parse_target(t)? {
            (platform, Some(chat), thread) => (platform, chat, thread),
            (platform, None, _) => home(shared, platform)
                .await
                .map(|h| (platform, h.chat, h.thread))
                .ok_or_else(|| format!("no home channel is set for {platform} (an operator sends /sethome in the chat that should get this)"))?,
        },
    };
    let origin = job.origin.as_ref().map(|o| (o.platform, &o.chat));
    if !role.is_operator() && origin != Some((place.0, &place.1)) {
        return Err(
            "a user's job delivers only to the chat it was made in (or local); ask an operator for other chats"
                .into(),
        );
    }
    Ok(Some(place))
}

/// The run's user message: the skills it loads, then its prompt.
async fn prompt(shared: &Shared, job: &CronJob) -> String {
    let mut text = String::new();
    if !job.skills.is_empty() {
        let sources = crate::skills::SkillSources::for_home(&shared.config().home);
        let library =
            tokio::task::spawn_blocking(move || crate::skills::SkillLibrary::load(&sources))
                .await
                .ok();
        for name in &job.skills {
            match library.as_ref().and_then(|l| l.get(name)) {
                Some(skill) => text.push_str(&format!(
                    "<skill name=\"{name}\">\n{}\n</skill>\n\n",
                    skill.body.trim()
                )),
                None => text.push_str(&format!(
                    "[The skill \"{name}\" this job asks for is not available.]\n\n"
                )),
            }
        }
    }
    text.push_str(&format!(
        "[Scheduled job #{} \"{}\" ({})]\n{}",
        job.id, job.name, job.schedule, job.prompt
    ));
    text
}

/// The role of a job's owner: jobs made from the shell (no owner) and the built-in ones are the
/// operator's; a user's job runs as that user, and as nobody once they are no longer served.
pub(crate) fn owner_role(shared: &Shared, job: &CronJob) -> Option<Role> {
    let Some(owner) = &job.owner else {
        return Some(Role::Operator);
    };
    if owner == super::builtin::OWNER {
        return Some(Role::Operator);
    }
    let key: SessionKey = owner.parse().ok()?;
    let hermes_adapter::SessionScope::Direct { user, .. } = &key.scope else {
        return Some(Role::User);
    };
    shared.authz().role(key.platform, user)
}

/// Run job `job` (claimed as run `run_id` for `scheduled`) and store its output and deliveries.
/// A job whose owner is no longer served is skipped; a run takes one of the daemon's turn slots
/// like any conversation.
pub(crate) async fn run(shared: &Arc<Shared>, job: CronJob, run_id: i64, scheduled: i64) {
    let Some(role) = owner_role(shared, &job) else {
        tracing::warn!(job = job.id, owner = ?job.owner, "scheduled job skipped: its owner is no longer allowed");
        let why = "not run: its owner is no longer allowed to use the bot".to_owned();
        if let Err(e) = shared
            .store
            .cron_finish(run_id, "skipped", why, vec![])
            .await
        {
            tracing::error!(job = job.id, error = %e, "cannot store the job's output");
        }
        return;
    };
    let permit = tokio::select! {
        p = shared.pool.turns.clone().acquire_owned() => p.ok(),
        _ = shared.hard_stop.cancelled() => None,
    };
    let (status, output, deliver) = run_turn(shared, &job, role).await;
    drop(permit);
    finish(
        shared,
        &job,
        role,
        (run_id, scheduled),
        (status, output, deliver),
    )
    .await;
}

/// The job's turn: its status (`ok`, `silent`, `failed`), output, and whether to deliver it.
async fn run_turn(shared: &Arc<Shared>, job: &CronJob, role: Role) -> (&'static str, String, bool) {
    let key = match (&job.origin, job.in_origin_session) {
        (Some(o), true) => o
            .session_key
            .parse()
            .unwrap_or_else(|_| SessionKey::direct(Platform::Cron, job.id.to_string())),
        _ => SessionKey::direct(Platform::Cron, job.id.to_string()),
    };
    let session = match shared.store.session_active(&key).await {
        Err(e) => return ("failed", format!("storage error: {e}"), true),
        Ok(session) => session,
    };
    let control = TurnControl {
        interrupt: Default::default(),
        stop: shared.hard_stop.child_token(),
    };
    let input = TurnInput {
        session: &session,
        setting: Setting {
            platform: Platform::Cron,
            chat: ChatKind::Direct,
        },
        new_messages: vec![NewMessage {
            inbox_id: None,
            text: prompt(shared, job).await,
            images: Vec::new(),
        }],
        control: control.clone(),
        // Nobody is present: no session or standing grants apply, confirmations are denied.
        requester: None,
        role,
        interaction: None,
        deltas: None,
        chat: job.origin.as_ref().map(|o| ChatRef {
            platform: o.platform,
            chat: o.chat.clone(),
            thread: o.thread.clone(),
            user: o.user.clone(),
        }),
        late_notice: Default::default(),
        plan: false,
    };
    let turn = tokio::time::timeout(
        Duration::from_secs(job.timeout_secs),
        shared.agent().run_turn(input),
    )
    .await;
    let outcome = match turn {
        Err(_) => {
            control.stop.cancel();
            Err(format!("timed out after {} s", job.timeout_secs))
        }
        Ok(Err(e)) => Err(format!("storage error: {e}")),
        Ok(Ok(report)) => match report.outcome {
            TurnOutcome::Answered(t) | TurnOutcome::BudgetExhausted(t) => Ok(t),
            TurnOutcome::Failed(e) => Err(e.to_string()),
            TurnOutcome::Cancelled => Err("cancelled by shutdown".into()),
        },
    };
    match outcome {
        Ok(text) => {
            if let Err(e) = shared
                .store
                .append_messages(session.id, vec![ChatMessage::assistant(text.clone())])
                .await
            {
                tracing::warn!(job = job.id, error = %e, "cannot store the job's answer in its session");
            }
            if text.contains("[SILENT]") {
                ("silent", text, false)
            } else {
                ("ok", text, true)
            }
        }
        Err(why) => ("failed", why, !shared.hard_stop.is_cancelled()),
    }
}

/// Store the run's output with its deliveries, in one transaction.
async fn finish(
    shared: &Arc<Shared>,
    job: &CronJob,
    role: Role,
    (run_id, scheduled): (i64, i64),
    (status, output, deliver): (&'static str, String, bool),
) {
    let body = match status {
        "failed" => format!(
            "⚠️ Scheduled job #{} ({}) failed: {output}",
            job.id, job.name
        ),
        _ => format!("⏰ {}\n\n{output}", job.name),
    };
    let mut replies = Vec::new();
    let mut notes = Vec::new();
    if deliver {
        for (i, target) in job.deliver.iter().enumerate() {
            match resolve(shared, job, role, target).await {
                Ok(Some((platform, chat, thread))) => {
                    let key = format!("cron:{}:{scheduled}:{i}", job.id);
                    let rows = to_chat(shared, platform, &chat, thread.as_ref(), &body, &key);
                    if rows.is_empty() {
                        notes.push(format!("{target}: no {platform} adapter is running"));
                    }
                    replies.extend(rows);
                }
                Ok(None) => {}
                Err(why) => notes.push(format!("{target}: {why}")),
            }
        }
    }
    let mut stored = output;
    if !notes.is_empty() {
        tracing::warn!(job = job.id, problems = ?notes, "some deliveries of a scheduled job are impossible");
        stored.push_str(&format!("\n\n[not delivered to: {}]", notes.join("; ")));
    }
    let has_replies = !replies.is_empty();
    match shared
        .store
        .cron_finish(run_id, status, stored, replies)
        .await
    {
        Ok(()) => {
            tracing::info!(job = job.id, run = run_id, status, "scheduled job finished");
            if has_replies {
                shared.outbox_signal.notify_one();
            }
        }
        Err(e) => {
            tracing::error!(job = job.id, run = run_id, error = %e, "cannot store the job's output")
        }
    }
}
