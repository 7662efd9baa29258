//! Automatic session resets: daily at an hour, after an idle period, or both, per platform and
//! chat kind. Checked when a message is about to be answered; the user is told in one line.

use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

use crate::config::{ResetMode, ResetPolicy};
use crate::store::SessionRow;

/// Why the session of a message should start over, if it should.
pub fn due(
    policy: &ResetPolicy,
    session: &SessionRow,
    now_ms: i64,
    tz: &TimeZone,
) -> Option<String> {
    let last = session.updated_at;
    let idle = matches!(policy.mode, ResetMode::Idle | ResetMode::Both)
        && now_ms - last >= policy.idle_minutes as i64 * 60_000;
    if idle {
        return Some(format!(
            "the previous one was idle for over {}",
            human_minutes(policy.idle_minutes)
        ));
    }
    if matches!(policy.mode, ResetMode::Daily | ResetMode::Both) {
        let now = Timestamp::from_millisecond(now_ms)
            .ok()?
            .to_zoned_datetime(tz.clone());
        let today = now
            .with()
            .hour(i8::try_from(policy.daily_at_hour).ok()?)
            .minute(0)
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .ok()?;
        let boundary = if now >= today {
            today
        } else {
            today.checked_sub(1.day()).ok()?
        };
        if last < boundary.timestamp().as_millisecond() {
            return Some(format!("daily reset at {:02}:00", policy.daily_at_hour));
        }
    }
    None
}

fn human_minutes(m: u64) -> String {
    match m {
        m if m % 1440 == 0 => format!("{} day(s)", m / 1440),
        m if m % 60 == 0 => format!("{} hour(s)", m / 60),
        m => format!("{m} minute(s)"),
    }
}

#[cfg(test)]
mod tests {
    use hermes_adapter::{Platform, SessionKey};

    use super::*;

    fn session(updated: &str) -> SessionRow {
        let t: Timestamp = updated.parse().unwrap();
        SessionRow {
            id: 1,
            key: SessionKey::direct(Platform::Telegram, "1"),
            created_at: 0,
            updated_at: t.as_millisecond(),
            model: None,
        }
    }

    fn at(s: &str) -> i64 {
        s.parse::<Timestamp>().unwrap().as_millisecond()
    }

    fn policy(mode: ResetMode) -> ResetPolicy {
        ResetPolicy {
            mode,
            daily_at_hour: 4,
            idle_minutes: 60,
        }
    }

    #[test]
    fn idle_and_daily_boundaries() {
        let tz = TimeZone::get("Europe/Berlin").unwrap();
        let s = session("2026-11-29T10:00:00Z");
        assert_eq!(
            due(
                &policy(ResetMode::None),
                &s,
                at("2026-12-05T10:00:00Z"),
                &tz
            ),
            None
        );
        assert_eq!(
            due(
                &policy(ResetMode::Idle),
                &s,
                at("2026-11-29T10:59:00Z"),
                &tz
            ),
            None
        );
        assert!(
            due(
                &policy(ResetMode::Idle),
                &s,
                at("2026-11-29T11:00:00Z"),
                &tz
            )
            .unwrap()
            .contains("1 hour")
        );
        // 04:00 Berlin is 03:00 UTC in winter.
        assert_eq!(
            due(
                &policy(ResetMode::Daily),
                &s,
                at("2026-11-30T02:59:00Z"),
                &tz
            ),
            None
        );
        assert_eq!(
            due(
                &policy(ResetMode::Daily),
                &s,
                at("2026-11-30T03:00:00Z"),
                &tz
            )
            .as_deref(),
            Some("daily reset at 04:00")
        );
        // Activity after today's boundary keeps the session.
        let fresh = session("2026-11-30T03:30:00Z");
        assert_eq!(
            due(
                &policy(ResetMode::Both),
                &fresh,
                at("2026-11-30T04:00:00Z"),
                &tz
            ),
            None
        );
    }
}
