//! Built-in scheduled jobs: the optional skill-curation job (`cron.skill_curation`), which asks
//! the agent now and then to review the skills it used most and improve them.

use jiff::tz::TimeZone;

use crate::cron::jobs::first_run;
use crate::gateway::Shared;
use crate::store::{CronJob, StoreError};

pub(crate) const OWNER: &str = "builtin";
const CURATION: &str = "skill-curation";
const CURATION_PROMPT: &str = "Curate your skills. Call skills_list to see them with their usage counts, then \
look closely (skill_view) at the ones used most. Where a skill is outdated, incomplete, unclear or contradicted by \
what later work showed, patch it with skill_manage; merge near-duplicates; never delete a skill someone relies on. \
Answer with a short account of what you changed, or exactly [SILENT] if nothing needed changing.";

/// Create, update or remove the built-in jobs to match the configuration.
pub(crate) async fn ensure(shared: &Shared) -> Result<(), StoreError> {
    let existing = shared
        .store
        .cron_list(Some(OWNER.to_owned()))
        .await?
        .into_iter()
        .find(|j| j.name == CURATION);
    let wanted = shared
        .config()
        .cron
        .skill_curation
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    match (existing, wanted) {
        (Some(job), None) => {
            shared.store.cron_delete(job.id).await?;
        }
        (Some(job), Some(schedule)) if job.schedule == schedule => {}
        (existing, Some(schedule)) => {
            let tz_name = shared
                .config()
                .agent
                .timezone
                .clone()
                .unwrap_or_else(|| "UTC".into());
            let tz = TimeZone::get(&tz_name).unwrap_or(TimeZone::UTC);
            let (_, anchor, next) = match first_run(
                &schedule,
                &tz,
                shared.agent().cron.clock.now_ms(),
            ) {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(error = %e, "cron.skill_curation: invalid schedule; the curation job is off");
                    return Ok(());
                }
            };
            if let Some(old) = existing {
                shared.store.cron_delete(old.id).await?;
            }
            shared
                .store
                .cron_create(CronJob {
                    id: 0,
                    name: CURATION.into(),
                    schedule,
                    timezone: tz_name,
                    prompt: CURATION_PROMPT.into(),
                    skills: Vec::new(),
                    in_origin_session: false,
                    origin: None,
                    owner: Some(OWNER.into()),
                    deliver: vec!["local".into()],
                    enabled: true,
                    timeout_secs: 900,
                    anchor_at: anchor,
                    next_run_at: next,
                    last_run_at: None,
                    created_at: 0,
                })
                .await?;
        }
        (None, None) => {}
    }
    Ok(())
}
