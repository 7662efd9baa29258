//! Job rules shared by the `cronjob` tool, `hermes cron` and the dashboard: parsing a schedule
//! into the first run, pausing, resuming and running now, checking delivery targets,
//! describing a job.

use hermes_adapter::{ChatId, Platform, ThreadId};
use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::schedule::{Schedule, ScheduleError};
use crate::store::CronJob;

/// Longest a job may run.
pub const MAX_TIMEOUT_SECS: u64 = 3600;

/// A job's schedule, parsed in its zone.
pub fn schedule_of(job: &CronJob) -> Result<Schedule, ScheduleError> {
    let tz = TimeZone::get(&job.timezone).unwrap_or(TimeZone::UTC);
    let created = Timestamp::from_millisecond(job.created_at).unwrap_or(Timestamp::UNIX_EPOCH);
    Schedule::parse(&job.schedule, created, &tz)
}

/// `job` paused (it keeps its settings) or resumed from its next scheduled time after `now_ms`.
pub fn set_enabled(job: &mut CronJob, enabled: bool, now_ms: i64) -> Result<(), ScheduleError> {
    job.enabled = enabled;
    if enabled {
        let schedule = schedule_of(job)?;
        let now = Timestamp::from_millisecond(now_ms).unwrap_or(Timestamp::UNIX_EPOCH);
        let anchor = Timestamp::from_millisecond(job.anchor_at).unwrap_or(now);
        job.next_run_at = schedule.next_after(now, anchor).map(|t| t.as_millisecond());
    }
    Ok(())
}

/// `job` due at `now_ms`: the running gateway's scheduler starts it at its next look.
pub fn run_now(job: &mut CronJob, now_ms: i64) {
    job.enabled = true;
    job.next_run_at = Some(now_ms);
}

/// The first run of `schedule` created at `now`: (schedule, anchor, first run).
pub fn first_run(
    text: &str,
    tz: &TimeZone,
    now_ms: i64,
) -> Result<(Schedule, i64, Option<i64>), ScheduleError> {
    let now = Timestamp::from_millisecond(now_ms).unwrap_or(Timestamp::UNIX_EPOCH);
    let schedule = Schedule::parse(text, now, tz)?;
    if let Schedule::Once(at) = &schedule
        && *at <= now
    {
        return Err(ScheduleError {
            input: text.to_owned(),
            reason: format!("{at} is in the past"),
        });
    }
    let next = schedule.next_after(now, now).map(|t| t.as_millisecond());
    Ok((schedule, now_ms, next))
}

/// The schedule text to store: a one-off given as a delay (`30m`) becomes the instant it
/// means, so it never moves however often it is read again.
pub fn pinned(parsed: &Schedule, text: String) -> String {
    match parsed {
        Schedule::Once(at) => at.to_string(),
        _ => text,
    }
}

/// A `platform[:chat[:thread]]` target: the platform, and the chat and thread when named. Matrix
/// room ids hold a colon themselves (`matrix:!room:server`), and its threads are event ids
/// (`$…`), so there the thread is the part after the last `:$`.
pub fn parse_target(t: &str) -> Result<(Platform, Option<ChatId>, Option<ThreadId>), String> {
    let (platform, rest) = match t.split_once(':') {
        Some((p, rest)) => (p, Some(rest)),
        None => (t, None),
    };
    let platform: Platform = platform.parse()?;
    let Some(rest) = rest.filter(|r| !r.is_empty()) else {
        return Ok((platform, None, None));
    };
    let (chat, thread) = match platform {
        Platform::Matrix => match rest.rfind(":$") {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        },
        _ => match rest.split_once(':') {
            Some((chat, thread)) => (chat, Some(thread)),
            None => (rest, None),
        },
    };
    if chat.is_empty()
        || thread.is_some_and(|t| t.is_empty() || (platform != Platform::Matrix && t.contains(':')))
    {
        return Err(format!("`{t}` is not platform:chat[:thread]"));
    }
    Ok((platform, Some(chat.into()), thread.map(Into::into)))
}

/// Check delivery targets: `origin`, `local`, a platform (its home channel), or
/// `platform:chat[:thread]`.
pub fn check_targets(targets: &[String]) -> Result<(), String> {
    if targets.is_empty() {
        return Err(
            "give at least one delivery target (origin, local, a platform, or platform:chat)"
                .into(),
        );
    }
    for t in targets {
        if t == "origin" || t == "local" {
            continue;
        }
        let platform = t.split(':').next().unwrap_or_default();
        match platform.parse::<Platform>() {
            Ok(Platform::Cron) | Ok(Platform::Cli) | Err(_) => {
                return Err(format!(
                    "`{t}` is not a delivery target: use origin, local, a platform name (its home channel, see /sethome) or platform:chat[:thread]"
                ));
            }
            Ok(_) => {}
        }
        if t.ends_with(':') {
            return Err(format!("`{t}` is not platform:chat[:thread]"));
        }
        parse_target(t)?;
    }
    Ok(())
}

/// One line about a job, for lists.
pub fn describe(job: &CronJob) -> String {
    let next = match (job.enabled, job.next_run_at) {
        (false, _) => "paused".to_owned(),
        (true, None) => "done".to_owned(),
        (true, Some(ms)) => {
            let tz = TimeZone::get(&job.timezone).unwrap_or(TimeZone::UTC);
            Timestamp::from_millisecond(ms)
                .map(|t| {
                    format!(
                        "next {}",
                        t.to_zoned_datetime(tz).strftime("%Y-%m-%d %H:%M %Z")
                    )
                })
                .unwrap_or_default()
        }
    };
    let prompt: String = job.prompt.chars().take(80).collect();
    format!(
        "#{} {} — `{}` ({}), {next}, to {}: {prompt}",
        job.id,
        job.name,
        job.schedule,
        job.timezone,
        job.deliver.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_checked() {
        let ok = [
            "origin",
            "local",
            "telegram",
            "telegram:-100",
            "slack:C1:123.4",
        ]
        .map(String::from);
        assert!(check_targets(&ok).is_ok());
        for bad in ["", "icq", "cron", "telegram:", "telegram:a:b:c"] {
            assert!(check_targets(&[bad.to_owned()]).is_err(), "{bad}");
        }
        assert!(check_targets(&[]).is_err());
    }

    #[test]
    fn past_one_off_times_are_refused() {
        let now = "2026-11-29T10:00:00Z"
            .parse::<Timestamp>()
            .unwrap()
            .as_millisecond();
        let e = first_run("2026-11-01T10:00:00Z", &TimeZone::UTC, now).unwrap_err();
        assert!(e.reason.contains("in the past"));
        let (_, anchor, next) = first_run("every 1h", &TimeZone::UTC, now).unwrap();
        assert_eq!((anchor, next), (now, Some(now + 3_600_000)));
    }
}
