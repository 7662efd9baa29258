//! `[cron]`: whether the daemon runs scheduled jobs, how late a missed run may still happen, and
//! the built-in skill-curation job.

use serde::{Deserialize, Serialize};

/// The scheduler.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CronConfig {
    /// Run scheduled jobs (the gateway only; `hermes cron` works either way).
    pub enabled: bool,
    /// A run missed while the daemon was down is still made at the next start if it was due at
    /// most this long ago; older ones are skipped and recorded.
    pub missed_grace_secs: u64,
    /// Schedule of the built-in skill-curation job (e.g. "0 3 * * 0"); unset: no such job.
    pub skill_curation: Option<String>,
    /// Jobs one user may have (operators are not limited).
    pub max_jobs_per_owner: usize,
}

impl Default for CronConfig {
    fn default() -> Self {
        CronConfig {
            enabled: true,
            missed_grace_secs: 3600,
            skill_curation: None,
            max_jobs_per_owner: 20,
        }
    }
}
