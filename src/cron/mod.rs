//! Scheduled agent work: jobs on a schedule, run as agent turns without a person, their output
//! delivered through the outbox exactly once per scheduled time.

mod clock;
pub mod jobs;
pub mod schedule;
mod tool;

pub use clock::{Clock, CronControl, ManualClock, SystemClock};
pub use schedule::{CronExpr, Schedule, ScheduleError};
pub use tool::CronTool;
