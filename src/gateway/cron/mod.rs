//! Scheduled jobs in the daemon: the scheduler claims each due run once (`scheduler`), a run is
//! an agent turn without a person whose output is delivered with it in one transaction (`run`),
//! and the built-in jobs are kept in place (`builtin`). Schedules, the clock and the `cronjob`
//! tool are `crate::cron`.

pub(crate) mod builtin;
pub(crate) mod run;
pub(crate) mod scheduler;
