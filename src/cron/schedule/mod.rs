//! Schedules: `30m` (once, that long after creation), `every 2h` (repeating), a 5-field cron
//! expression evaluated in a time zone, or an ISO timestamp (once).
//!
//! Cron expressions follow Vixie cron: minute hour day-of-month month day-of-week; `*`, lists,
//! ranges, steps (`*/15`, `1-5/2`), month and weekday names; Sunday is 0 or 7; when both day
//! fields are restricted, either matching is enough. Across daylight-saving changes: a local time
//! skipped by the clock change runs at the first instant after the gap; a local time that occurs
//! twice runs once, at its first occurrence. The time-zone database is jiff's, already in the
//! binary (a cron crate would bring chrono and a second copy of it).

use std::fmt;
use std::time::Duration;

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan, ZonedDateTime};

/// When a job runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    /// Once, at this instant (`30m` from creation, or an ISO timestamp).
    Once(Timestamp),
    /// Repeatedly, this long apart.
    Every(Duration),
    /// On a cron expression in a time zone.
    Cron(Box<CronExpr>),
}

/// A parsed 5-field cron expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronExpr {
    pub source: String,
    minutes: u64,
    hours: u32,
    days: u32,
    months: u16,
    weekdays: u8,
    days_restricted: bool,
    weekdays_restricted: bool,
    pub tz: TimeZone,
}

/// A schedule that cannot be understood, with what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid schedule `{input}`: {reason}")]
pub struct ScheduleError {
    pub input: String,
    pub reason: String,
}

fn err(input: &str, reason: impl Into<String>) -> ScheduleError {
    ScheduleError {
        input: input.to_owned(),
        reason: reason.into(),
    }
}

const HELP: &str = "use a delay like `30m` or `2h`, `every 15m`, a 5-field cron expression like \
    `0 8 * * 1-5`, or a date and time like `2026-12-24T18:00`";

/// `90s`, `30m`, `2h`, `1d`, `1h30m`.
fn parse_duration(s: &str) -> Option<Duration> {
    let mut total = 0u64;
    let mut number = String::new();
    let mut any = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let n: u64 = number.parse().ok()?;
        number.clear();
        total += n * match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 604_800,
            _ => return None,
        };
        any = true;
    }
    (number.is_empty() && any && total > 0).then(|| Duration::from_secs(total))
}

impl Schedule {
    /// Parse `input`, relative to `now` and in `tz` (for cron and local timestamps).
    pub fn parse(input: &str, now: Timestamp, tz: &TimeZone) -> Result<Schedule, ScheduleError> {
        let s = input.trim();
        if s.is_empty() {
            return Err(err(input, HELP));
        }
        let lower = s.to_ascii_lowercase();
        let delay = lower.strip_prefix("in ").unwrap_or(&lower).replace(' ', "");
        if let Some(d) = parse_duration(&delay) {
            let at = now
                .checked_add(jiff::SignedDuration::try_from(d).map_err(|_| err(input, "too long"))?)
                .map_err(|_| err(input, "too far in the future"))?;
            return Ok(Schedule::Once(at));
        }
        if let Some(rest) = lower.strip_prefix("every ") {
            let d = parse_duration(&rest.replace(' ', ""))
                .ok_or_else(|| err(input, "`every` needs an interval like `15m`, `2h` or `1d`"))?;
            if d < Duration::from_secs(60) {
                return Err(err(input, "repeating jobs must be at least 1 minute apart"));
            }
            return Ok(Schedule::Every(d));
        }
        if s.split_whitespace().count() == 5 {
            return CronExpr::parse(s, tz.clone()).map(|c| Schedule::Cron(Box::new(c)));
        }
        if let Ok(t) = s.parse::<Timestamp>() {
            return Ok(Schedule::Once(t));
        }
        if let Ok(dt) = s.replace(' ', "T").parse::<DateTime>() {
            let z = dt
                .to_zoned_datetime(tz.clone())
                .map_err(|e| err(input, format!("not a valid local time: {e}")))?;
            return Ok(Schedule::Once(z.timestamp()));
        }
        Err(err(input, HELP))
    }

    /// The first run strictly after `after`; `anchor` is when a repeating schedule started
    /// (its runs are `anchor + k × interval`). `None`: no further run.
    pub fn next_after(&self, after: Timestamp, anchor: Timestamp) -> Option<Timestamp> {
        match self {
            Schedule::Once(at) => (*at > after).then_some(*at),
            Schedule::Every(d) => {
                let step = d.as_millis() as i64;
                let elapsed = after.as_millisecond() - anchor.as_millisecond();
                let k = if elapsed < 0 { 1 } else { elapsed / step + 1 };
                Timestamp::from_millisecond(anchor.as_millisecond() + k * step).ok()
            }
            Schedule::Cron(c) => c.next_after(after),
        }
    }

    pub fn repeats(&self) -> bool {
        !matches!(self, Schedule::Once(_))
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::Once(t) => write!(f, "once at {t}"),
            Schedule::Every(d) => write!(f, "every {}", humanize(*d)),
            Schedule::Cron(c) => write!(
                f,
                "cron `{}` ({})",
                c.source,
                c.tz.iana_name().unwrap_or("local")
            ),
        }
    }
}

fn humanize(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// Parse one field into a bit set over `min..=max`.
fn field(
    input: &str,
    text: &str,
    what: &str,
    min: u32,
    max: u32,
    names: &[&str],
) -> Result<(u64, bool), ScheduleError> {
    let value = |v: &str| -> Result<u32, ScheduleError> {
        let lower = v.to_ascii_lowercase();
        if let Some(i) = names.iter().position(|n| *n == lower) {
            return Ok(i as u32 + if what == "month" { 1 } else { 0 });
        }
        let n: u32 = v
            .parse()
            .map_err(|_| err(input, format!("`{v}` is not a valid {what}")))?;
        let top = if what == "weekday" { 7 } else { max };
        if n < min || n > top {
            return Err(err(input, format!("{what} {n} is outside {min}-{top}")));
        }
        Ok(if what == "weekday" && n == 7 { 0 } else { n })
    };
    let mut bits = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => {
                let step: u32 = s.parse().map_err(|_| {
                    err(
                        input,
                        format!("step `{s}` in the {what} field is not a number"),
                    )
                })?;
                if step == 0 {
                    return Err(err(input, format!("step 0 in the {what} field")));
                }
                (r, step)
            }
            None => (part, 1),
        };
        let (lo, hi) = if range == "*" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a)?, value(b)?)
        } else {
            let v = value(range)?;
            (v, if step > 1 { max } else { v })
        };
        if lo > hi {
            return Err(err(
                input,
                format!("range {lo}-{hi} in the {what} field runs backwards"),
            ));
        }
        let mut v = lo;
        while v <= hi {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok((bits, text != "*"))
}

impl CronExpr {
    pub fn parse(source: &str, tz: TimeZone) -> Result<CronExpr, ScheduleError> {
        let f: Vec<&str> = source.split_whitespace().collect();
        let [m, h, dom, mon, dow] = f.as_slice() else {
            return Err(err(
                source,
                "a cron expression has 5 fields: minute hour day month weekday",
            ));
        };
        let (minutes, _) = field(source, m, "minute", 0, 59, &[])?;
        let (hours, _) = field(source, h, "hour", 0, 23, &[])?;
        let (days, days_restricted) = field(source, dom, "day of month", 1, 31, &[])?;
        let (months, _) = field(source, mon, "month", 1, 12, &MONTHS)?;
        let (weekdays, weekdays_restricted) = field(source, dow, "weekday", 0, 6, &DAYS)?;
        Ok(CronExpr {
            source: source.to_owned(),
            minutes,
            hours: hours as u32,
            days: days as u32,
            months: months as u16,
            weekdays: weekdays as u8,
            days_restricted,
            weekdays_restricted,
            tz,
        })
    }

    fn day_matches(&self, d: Date) -> bool {
        let dom = self.days & (1 << d.day()) != 0;
        let dow = self.weekdays & (1 << d.weekday().to_sunday_zero_offset()) != 0;
        match (self.days_restricted, self.weekdays_restricted) {
            (true, true) => dom || dow,
            (true, false) => dom,
            (false, true) => dow,
            (false, false) => true,
        }
    }

    /// The first matching instant strictly after `after` (searching at most 5 years ahead).
    pub fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        let start: ZonedDateTime = after.to_zoned_datetime(self.tz.clone());
        let mut date = start.date();
        let last = date.checked_add(5.years()).ok()?;
        while date <= last {
            if self.months & (1 << date.month()) != 0 && self.day_matches(date) {
                for hour in 0..24i8 {
                    if self.hours & (1 << hour) == 0 {
                        continue;
                    }
                    for minute in 0..60i8 {
                        if self.minutes & (1 << minute) == 0 {
                            continue;
                        }
                        let civil = date.to_datetime(Time::constant(hour, minute, 0, 0));
                        // Compatible disambiguation: a gap moves forward, a fold takes the
                        // earlier instant.
                        let Ok(z) = civil.to_zoned_datetime(self.tz.clone()) else {
                            continue;
                        };
                        let t = z.timestamp();
                        if t > after {
                            return Some(t);
                        }
                    }
                }
            }
            date = date.tomorrow().ok()?;
        }
        None
    }
}

#[cfg(test)]
mod tests;
