//! Unit tests of schedule parsing and next-run computation.

use super::*;

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn berlin() -> TimeZone {
    TimeZone::get("Europe/Berlin").unwrap()
}

fn next(sched: &Schedule, after: &str) -> String {
    sched
        .next_after(at(after), at(after))
        .map(|t| t.to_string())
        .unwrap_or_default()
}

#[test]
fn delays_intervals_and_timestamps() {
    let now = at("2026-11-29T10:00:00Z");
    let tz = berlin();
    assert_eq!(
        Schedule::parse("30m", now, &tz).unwrap(),
        Schedule::Once(at("2026-11-29T10:30:00Z"))
    );
    assert_eq!(
        Schedule::parse("in 1h30m", now, &tz).unwrap(),
        Schedule::Once(at("2026-11-29T11:30:00Z"))
    );
    assert_eq!(
        Schedule::parse("every 2h", now, &tz).unwrap(),
        Schedule::Every(Duration::from_secs(7200))
    );
    assert_eq!(
        Schedule::parse("2026-12-24T18:00:00+01:00", now, &tz).unwrap(),
        Schedule::Once(at("2026-12-24T17:00:00Z"))
    );
    // A local date-time is read in the job's zone.
    assert_eq!(
        Schedule::parse("2026-12-24 18:00", now, &tz).unwrap(),
        Schedule::Once(at("2026-12-24T17:00:00Z"))
    );
    let every = Schedule::Every(Duration::from_secs(7200));
    let anchor = at("2026-11-29T10:00:00Z");
    assert_eq!(
        every.next_after(at("2026-11-29T10:00:00Z"), anchor),
        Some(at("2026-11-29T12:00:00Z"))
    );
    assert_eq!(
        every.next_after(at("2026-11-29T13:59:00Z"), anchor),
        Some(at("2026-11-29T14:00:00Z"))
    );
    let once = Schedule::Once(at("2026-11-29T10:30:00Z"));
    assert_eq!(
        once.next_after(at("2026-11-29T10:30:00Z"), anchor),
        None,
        "a once job runs once"
    );
}

#[test]
fn bad_schedules_say_what_is_expected() {
    let now = at("2026-11-29T10:00:00Z");
    for bad in [
        "",
        "soon",
        "every",
        "every 10s",
        "0 25 * * *",
        "*/0 * * * *",
        "5-1 * * * *",
        "0 8 * * funday",
        "1 2 3 4",
        "2026-02-30T10:00",
    ] {
        let e = Schedule::parse(bad, now, &berlin()).unwrap_err();
        assert!(!e.reason.is_empty(), "{bad}");
    }
    let e = Schedule::parse("0 25 * * *", now, &berlin()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid schedule `0 25 * * *`: hour 25 is outside 0-23"
    );
}

#[test]
fn cron_fields_lists_ranges_steps_and_names() {
    let tz = TimeZone::UTC;
    let weekdays = Schedule::Cron(Box::new(
        CronExpr::parse("0 8 * * mon-fri", tz.clone()).unwrap(),
    ));
    // Saturday 2026-11-28 -> Monday 2026-11-30 08:00.
    assert_eq!(
        next(&weekdays, "2026-11-28T09:00:00Z"),
        "2026-11-30T08:00:00Z"
    );
    let quarter = Schedule::Cron(Box::new(
        CronExpr::parse("*/15 9-10 * * *", tz.clone()).unwrap(),
    ));
    assert_eq!(
        next(&quarter, "2026-11-29T09:50:00Z"),
        "2026-11-29T10:00:00Z"
    );
    assert_eq!(
        next(&quarter, "2026-11-29T10:45:00Z"),
        "2026-11-30T09:00:00Z"
    );
    // Day-of-month and weekday both restricted: either matches (Vixie cron).
    let either = Schedule::Cron(Box::new(
        CronExpr::parse("0 0 1 * sun", tz.clone()).unwrap(),
    ));
    assert_eq!(
        next(&either, "2026-11-28T00:00:00Z"),
        "2026-11-29T00:00:00Z"
    );
    assert_eq!(
        next(&either, "2026-11-29T00:00:00Z"),
        "2026-12-01T00:00:00Z"
    );
    let sunday7 = CronExpr::parse("0 12 * * 7", tz.clone()).unwrap();
    assert_eq!(
        sunday7.next_after(at("2026-11-28T00:00:00Z")).unwrap(),
        at("2026-11-29T12:00:00Z")
    );
    let leap = CronExpr::parse("0 0 29 feb *", tz).unwrap();
    assert_eq!(
        leap.next_after(at("2026-11-29T00:00:00Z")).unwrap(),
        at("2028-02-29T00:00:00Z")
    );
}

#[test]
fn cron_in_a_time_zone_across_daylight_saving_changes() {
    let daily = CronExpr::parse("30 2 * * *", berlin()).unwrap();
    // 2027-03-28: clocks jump from 02:00 to 03:00 in Berlin; 02:30 does not exist that day
    // and the job runs right after the gap (03:30 CEST = 01:30 UTC).
    assert_eq!(
        daily.next_after(at("2027-03-27T02:00:00Z")).unwrap(),
        at("2027-03-28T01:30:00Z")
    );
    // 2026-10-25: 02:30 happens twice (CEST, then CET): the job runs once, at the first.
    let first = daily.next_after(at("2026-10-24T02:00:00Z")).unwrap();
    assert_eq!(first, at("2026-10-25T00:30:00Z"));
    assert_eq!(daily.next_after(first).unwrap(), at("2026-10-26T01:30:00Z"));
    // 08:00 local stays 08:00 local on both sides of the change.
    let morning = CronExpr::parse("0 8 * * *", berlin()).unwrap();
    assert_eq!(
        morning.next_after(at("2026-10-24T08:00:00Z")).unwrap(),
        at("2026-10-25T07:00:00Z")
    );
    assert_eq!(
        morning.next_after(at("2026-10-23T08:00:00Z")).unwrap(),
        at("2026-10-24T06:00:00Z")
    );
}
