//! When new updates may be proposed: `schedule` (5-field cron expressions read as windows of
//! minutes), `timezone` (an IANA name, from the time zone database built into the binary)
//! and `freeze` (date ranges). Pure: "now" is always passed in.
//!
//! The database is jiff's bundled copy, never the host's `/usr/share/zoneinfo`: the
//! container image has none, every host judges a zone the same way, and a name written in
//! the repository never becomes a path that is read.

use std::fmt::Write as _;

use jiff::civil::{Date, DateTime};
use jiff::tz::{TimeZone, TimeZoneDatabase};
use jiff::{Timestamp, Zoned};

use imagebump_model::policy::{Freeze, PolicySpec};

use crate::PolicyError;

/// At most this many cron expressions in one `schedule`, and this many ranges in one
/// `freeze`: each is judged once per policy and run, and the lists are written by hand.
const MAX_ENTRIES: usize = 32;
/// The longest cron expression and freeze reason accepted, in characters.
const MAX_TEXT: usize = 200;
/// How far ahead the next window is looked for: a window that comes less often (`* * 29 2
/// *` from a March) or never (`* * 31 2 *`) is reported as "no window opens in the next
/// four years".
const LOOKAHEAD_DAYS: i32 = 366 * 4;

/// One field of a cron expression: the values it matches, as bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Field {
    bits: u64,
    /// Written starting with `*` (`*`, `*/2`). Day of month and day of week are joined by
    /// "or" only when both are restricted, that is neither starts with `*` (as cron does).
    any: bool,
}

impl Field {
    fn has(self, v: u8) -> bool {
        self.bits
            .checked_shr(u32::from(v))
            .is_some_and(|b| b & 1 == 1)
    }
}

/// Names of months and days, as cron accepts them (`jan`, `mon`), lowercase.
const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// A field's range of values and its names (the first name is `min`).
struct Kind {
    what: &'static str,
    min: u8,
    max: u8,
    names: &'static [&'static str],
}

const MINUTE: Kind = Kind {
    what: "minute",
    min: 0,
    max: 59,
    names: &[],
};
const HOUR: Kind = Kind {
    what: "hour",
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Kind = Kind {
    what: "day of month",
    min: 1,
    max: 31,
    names: &[],
};
const MONTH: Kind = Kind {
    what: "month",
    min: 1,
    max: 12,
    names: &MONTHS,
};
// 7 is Sunday too, as in cron; folded onto 0 once parsed.
const DOW: Kind = Kind {
    what: "day of week",
    min: 0,
    max: 7,
    names: &DAYS,
};

/// A parsed 5-field cron expression, read as the set of minutes it matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    text: String,
    minute: Field,
    hour: Field,
    dom: Field,
    month: Field,
    dow: Field,
}

impl Cron {
    /// `minute hour day-of-month month day-of-week`, each `*`, a value, a range `a-b`, a
    /// step `*/n` or `a-b/n`, or a comma list of those; months and days also by name.
    pub fn parse(text: &str) -> Result<Cron, String> {
        if text.chars().count() > MAX_TEXT {
            return Err(format!("longer than {MAX_TEXT} characters"));
        }
        let parts: Vec<&str> = text.split_whitespace().collect();
        let [m, h, dom, mon, dow] = parts.as_slice() else {
            return Err(format!(
                "{:?} has {} fields, a schedule has 5: minute hour day-of-month month day-of-week",
                text,
                parts.len()
            ));
        };
        let mut dow = field(dow, &DOW)?;
        if dow.has(7) {
            dow.bits = (dow.bits | 1) & !(1 << 7);
        }
        Ok(Cron {
            text: parts.join(" "),
            minute: field(m, &MINUTE)?,
            hour: field(h, &HOUR)?,
            dom: field(dom, &DOM)?,
            month: field(mon, &MONTH)?,
            dow,
        })
    }

    /// The expression as written (blanks collapsed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Does the day match (month, then day of month and day of week as cron joins them)?
    fn day(&self, d: Date) -> bool {
        let (dom, dow) = (self.dom.has(day_of_month(d)), self.dow.has(weekday(d)));
        self.month.has(month(d))
            && match (self.dom.any, self.dow.any) {
                (false, false) => dom || dow,
                _ => dom && dow,
            }
    }

    /// Does the window hold this wall-clock minute?
    pub fn matches(&self, t: DateTime) -> bool {
        self.day(t.date()) && self.hour.has(hour(t)) && self.minute.has(minute(t))
    }

    /// The first minute of `day` at or after `from` (a time of that day) in the window that
    /// exists in `tz` (a minute a clock change skips is not in any window).
    fn first_in_day(&self, day: Date, from: Option<DateTime>, tz: &TimeZone) -> Option<Zoned> {
        if !self.day(day) {
            return None;
        }
        (0..24u8)
            .filter(|h| self.hour.has(*h))
            .flat_map(|h| {
                (0..60u8)
                    .filter(|m| self.minute.has(*m))
                    .map(move |m| (h, m))
            })
            .filter_map(|(h, m)| Some(day.at(i8::try_from(h).ok()?, i8::try_from(m).ok()?, 0, 0)))
            .filter(|t| from.is_none_or(|f| *t >= f))
            .find_map(|t| existing(t, tz))
    }
}

/// `t` in `tz`, unless the clocks skip it (a spring-forward gap).
fn existing(t: DateTime, tz: &TimeZone) -> Option<Zoned> {
    let z = t.to_zoned(tz.clone()).ok()?;
    (z.datetime() == t).then_some(z)
}

fn month(d: Date) -> u8 {
    u8::try_from(d.month()).unwrap_or(0)
}

fn day_of_month(d: Date) -> u8 {
    u8::try_from(d.day()).unwrap_or(0)
}

fn weekday(d: Date) -> u8 {
    u8::try_from(d.weekday().to_sunday_zero_offset()).unwrap_or(0)
}

fn hour(t: DateTime) -> u8 {
    u8::try_from(t.hour()).unwrap_or(u8::MAX)
}

fn minute(t: DateTime) -> u8 {
    u8::try_from(t.minute()).unwrap_or(u8::MAX)
}

/// One comma-separated field.
fn field(text: &str, kind: &Kind) -> Result<Field, String> {
    let mut f = Field {
        bits: 0,
        any: text.starts_with('*'),
    };
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (r, Some(s)),
            None => (part, None),
        };
        let step = match step {
            None => 1,
            Some(s) => match s.parse::<u8>() {
                Ok(n) if n > 0 => n,
                _ => return Err(format!("{}: bad step {s:?} in {text:?}", kind.what)),
            },
        };
        let (lo, hi) = match range.split_once('-') {
            _ if range == "*" => (kind.min, kind.max),
            Some((a, b)) => (value(a, kind, text)?, value(b, kind, text)?),
            // `5/15`: from 5 to the end, as cron reads it.
            None if step > 1 => (value(range, kind, text)?, kind.max),
            None => (value(range, kind, text)?, value(range, kind, text)?),
        };
        if lo > hi {
            return Err(format!("{}: range {range:?} runs backwards", kind.what));
        }
        for v in (lo..=hi).step_by(usize::from(step)) {
            f.bits |= 1u64.checked_shl(u32::from(v)).unwrap_or(0);
        }
    }
    Ok(f)
}

fn value(text: &str, kind: &Kind, field: &str) -> Result<u8, String> {
    let by_name = kind
        .names
        .iter()
        .position(|n| n.eq_ignore_ascii_case(text))
        .and_then(|i| u8::try_from(i).ok())
        .map(|i| i.saturating_add(kind.min));
    match by_name.or_else(|| text.parse::<u8>().ok()) {
        Some(v) if (kind.min..=kind.max).contains(&v) => Ok(v),
        _ => Err(format!(
            "{}: {text:?} in {field:?} is not a value from {} to {}",
            kind.what, kind.min, kind.max
        )),
    }
}

/// A freeze with its dates read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frozen {
    pub from: Date,
    pub until: Date,
    pub reason: Option<String>,
}

/// A policy's `schedule`, `timezone` and `freeze`, compiled.
#[derive(Debug, Clone)]
pub struct Calendar {
    pub windows: Vec<Cron>,
    pub zone_name: String,
    pub zone: TimeZone,
    pub freezes: Vec<Frozen>,
}

/// Why a run at some instant proposes nothing new under a calendar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Closed {
    /// Inside a freeze: its reason, its last day, and when updates may come next.
    Frozen {
        until: Date,
        reason: Option<String>,
        next: Option<Zoned>,
    },
    /// Outside every window; when the next one opens.
    OutsideSchedule { next: Option<Zoned> },
}

impl Calendar {
    /// `None` when the spec sets no window and no freeze (a `timezone` alone is checked).
    pub fn compile(spec: &PolicySpec) -> Result<Option<Calendar>, PolicyError> {
        let zone_name = spec.timezone.clone().unwrap_or_else(|| "UTC".to_string());
        let zone = zone(&zone_name)?;
        let windows = spec.schedule.as_deref().unwrap_or_default();
        if windows.len() > MAX_ENTRIES {
            return Err(PolicyError::new(
                "schedule",
                format!("more than {MAX_ENTRIES} windows"),
            ));
        }
        let windows = windows
            .iter()
            .map(|w| Cron::parse(w))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|m| {
                PolicyError::new("schedule", format!("invalid cron expression: {m}")).hint(
                    "5 fields: minute hour day-of-month month day-of-week, e.g. \"* 6-9 * * 1-5\"",
                )
            })?;
        let freezes = freezes(spec.freeze.as_deref().unwrap_or_default())?;
        Ok(
            (!windows.is_empty() || !freezes.is_empty()).then_some(Calendar {
                windows,
                zone_name,
                zone,
                freezes,
            }),
        )
    }

    /// Why nothing new is proposed at `now` (`None`: it may be). `ignore_schedule` lifts the
    /// windows, never a freeze.
    pub fn closed(&self, now: Timestamp, ignore_schedule: bool) -> Option<Closed> {
        let here = now.to_zoned(self.zone.clone());
        let windows = !ignore_schedule && !self.windows.is_empty();
        if let Some(f) = self.freeze_at(here.date()) {
            let next = self.next_open(&here, windows);
            let (until, reason) = (f.until, f.reason.clone());
            return Some(Closed::Frozen {
                until,
                reason,
                next,
            });
        }
        if windows && !self.in_window(here.datetime()) {
            let next = self.next_open(&here, true);
            return Some(Closed::OutsideSchedule { next });
        }
        None
    }

    fn freeze_at(&self, day: Date) -> Option<&Frozen> {
        self.freezes
            .iter()
            .find(|f| f.from <= day && day <= f.until)
    }

    fn in_window(&self, t: DateTime) -> bool {
        self.windows.iter().any(|w| w.matches(t))
    }

    /// The first minute from `here` on that is in no freeze and, with `windows`, in a
    /// window; day by day.
    fn next_open(&self, here: &Zoned, windows: bool) -> Option<Zoned> {
        let start = here.datetime();
        let mut day = here.date();
        for _ in 0..LOOKAHEAD_DAYS {
            let from = (day == start.date()).then_some(start);
            if self.freeze_at(day).is_none() {
                let found = match windows {
                    true => self
                        .windows
                        .iter()
                        .filter_map(|w| w.first_in_day(day, from, &self.zone))
                        .min(),
                    false => day.to_zoned(self.zone.clone()).ok(),
                };
                if found.is_some() {
                    return found;
                }
            }
            day = day.tomorrow().ok()?;
        }
        None
    }

    /// `* 6-9 * * 1-5` or `` `a`, `b` ``, the windows as written, for reasons.
    pub fn windows_text(&self) -> String {
        let mut out = String::new();
        for (i, w) in self.windows.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let _ = write!(out, "{sep}`{}`", w.as_str());
        }
        out
    }
}

/// The zone named `name` in the bundled database.
fn zone(name: &str) -> Result<TimeZone, PolicyError> {
    let known = name.chars().count() <= MAX_TEXT;
    known
        .then(|| TimeZoneDatabase::bundled().get(name).ok())
        .flatten()
        .ok_or_else(|| {
            PolicyError::new("timezone", format!("unknown time zone {name:?}"))
                .hint("an IANA time zone name such as Europe/Berlin, America/New_York or UTC")
        })
}

fn freezes(list: &[Freeze]) -> Result<Vec<Frozen>, PolicyError> {
    if list.len() > MAX_ENTRIES {
        return Err(PolicyError::new(
            "freeze",
            format!("more than {MAX_ENTRIES} ranges"),
        ));
    }
    let hint = "{from: 2026-12-14, until: 2026-12-18, reason: release week}";
    let date = |s: &str| {
        s.parse::<Date>().map_err(|e| {
            PolicyError::new("freeze", format!("{s:?} is not a date (YYYY-MM-DD): {e}")).hint(hint)
        })
    };
    list.iter()
        .map(|f| {
            let (from, until) = (date(&f.from)?, date(&f.until)?);
            if from > until {
                let m = format!(
                    "{from} is after {until}: a freeze runs from its first day to its last"
                );
                return Err(PolicyError::new("freeze", m).hint(hint));
            }
            if f.reason
                .as_ref()
                .is_some_and(|r| r.chars().count() > MAX_TEXT)
            {
                let m = format!("a reason is longer than {MAX_TEXT} characters");
                return Err(PolicyError::new("freeze", m));
            }
            Ok(Frozen {
                from,
                until,
                reason: f.reason.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calendar(windows: &[&str], zone: &str, freeze: &[(&str, &str, Option<&str>)]) -> Calendar {
        let spec = PolicySpec {
            schedule: Some(windows.iter().map(|w| w.to_string()).collect()),
            timezone: Some(zone.to_string()),
            freeze: Some(
                freeze
                    .iter()
                    .map(|(from, until, reason)| Freeze {
                        from: from.to_string(),
                        until: until.to_string(),
                        reason: reason.map(str::to_string),
                    })
                    .collect(),
            ),
            ..Default::default()
        };
        Calendar::compile(&spec).unwrap().unwrap()
    }

    fn at(utc: &str) -> Timestamp {
        utc.parse().unwrap()
    }

    /// What a run at `utc` is told: `open`, or the verdict with its next opening in the
    /// calendar's zone as `%Y-%m-%d %H:%M %Z`.
    fn verdict(c: &Calendar, utc: &str, ignore_schedule: bool) -> String {
        let show = |n: &Option<Zoned>| match n {
            Some(z) => z.strftime("%Y-%m-%d %H:%M %Z").to_string(),
            None => "never".into(),
        };
        match c.closed(at(utc), ignore_schedule) {
            None => "open".into(),
            Some(Closed::OutsideSchedule { next }) => format!("outside, next {}", show(&next)),
            Some(Closed::Frozen {
                until,
                reason,
                next,
            }) => {
                format!("frozen until {until} ({reason:?}), next {}", show(&next))
            }
        }
    }

    #[test]
    fn weekday_mornings_in_berlin() {
        let c = calendar(&["* 6-9 * * 1-5"], "Europe/Berlin", &[]);
        // Monday 2026-12-07, 18:00 CET.
        assert_eq!(
            verdict(&c, "2026-12-07T17:00:00Z", false),
            "outside, next 2026-12-08 06:00 CET"
        );
        assert_eq!(verdict(&c, "2026-12-08T05:00:00Z", false), "open");
        assert_eq!(verdict(&c, "2026-12-08T08:59:59Z", false), "open");
        assert_eq!(
            verdict(&c, "2026-12-08T09:00:00Z", false),
            "outside, next 2026-12-09 06:00 CET"
        );
        // Friday 10:00 CET: the next window is Monday's.
        assert_eq!(
            verdict(&c, "2026-12-11T09:00:00Z", false),
            "outside, next 2026-12-14 06:00 CET"
        );
        // Before the window on the same day.
        assert_eq!(
            verdict(&c, "2026-12-08T04:30:00Z", false),
            "outside, next 2026-12-08 06:00 CET"
        );
        assert_eq!(verdict(&c, "2026-12-07T17:00:00Z", true), "open");
    }

    #[test]
    fn spring_forward_in_berlin_skips_the_missing_hour() {
        // 2026-03-29: 02:00 CET becomes 03:00 CEST; no 02:xx exists that day.
        let two = calendar(&["* 2 * * *"], "Europe/Berlin", &[]);
        assert_eq!(
            verdict(&two, "2026-03-29T00:30:00Z", false),
            "outside, next 2026-03-30 02:00 CEST"
        );
        let two_three = calendar(&["* 2-3 * * *"], "Europe/Berlin", &[]);
        assert_eq!(
            verdict(&two_three, "2026-03-29T00:59:00Z", false),
            "outside, next 2026-03-29 03:00 CEST"
        );
        // 01:00 UTC is 03:00 CEST.
        assert_eq!(verdict(&two_three, "2026-03-29T01:00:00Z", false), "open");
        let half_past = calendar(&["30 2 * * *"], "Europe/Berlin", &[]);
        assert_eq!(
            verdict(&half_past, "2026-03-28T02:00:00Z", false),
            "outside, next 2026-03-30 02:30 CEST"
        );
    }

    #[test]
    fn fall_back_in_berlin_opens_the_repeated_hour_twice() {
        // 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:xx happens twice.
        let c = calendar(&["* 2 * * *"], "Europe/Berlin", &[]);
        assert_eq!(
            verdict(&c, "2026-10-24T23:59:00Z", false),
            "outside, next 2026-10-25 02:00 CEST"
        );
        assert_eq!(verdict(&c, "2026-10-25T00:30:00Z", false), "open");
        assert_eq!(verdict(&c, "2026-10-25T01:30:00Z", false), "open");
        assert_eq!(
            verdict(&c, "2026-10-25T02:00:00Z", false),
            "outside, next 2026-10-26 02:00 CET"
        );
    }

    #[test]
    fn freezes_hold_whole_days_in_the_zone_and_outlast_run_now() {
        let release = Some("release week");
        let c = calendar(
            &["* 6-9 * * 1-5"],
            "Europe/Berlin",
            &[("2026-12-14", "2026-12-18", release)],
        );
        let frozen = "frozen until 2026-12-18 (Some(\"release week\"))";
        // Monday 08:00 CET, in a window, but frozen; the next window is after the weekend.
        assert_eq!(
            verdict(&c, "2026-12-14T07:00:00Z", false),
            format!("{frozen}, next 2026-12-21 06:00 CET")
        );
        // Running now despite the schedule does not lift a freeze.
        assert_eq!(
            verdict(&c, "2026-12-14T07:00:00Z", true),
            format!("{frozen}, next 2026-12-19 00:00 CET")
        );
        // 2026-12-13 23:30 CET is before the freeze (22:30 UTC), 2026-12-18 23:30 CET inside.
        assert_eq!(verdict(&c, "2026-12-13T22:30:00Z", true), "open");
        assert!(verdict(&c, "2026-12-18T22:30:00Z", true).starts_with("frozen"));
        assert_eq!(verdict(&c, "2026-12-18T23:00:00Z", true), "open");
        let no_window = calendar(&[], "UTC", &[("2026-12-14", "2026-12-14", None)]);
        assert_eq!(
            verdict(&no_window, "2026-12-14T12:00:00Z", false),
            "frozen until 2026-12-14 (None), next 2026-12-15 00:00 UTC"
        );
    }

    #[test]
    fn cron_fields_read_as_cron_does() {
        let c = |s: &str| Cron::parse(s).unwrap();
        let t = |s: &str| s.parse::<DateTime>().unwrap();
        // 2026-12-01 is a Tuesday, 2026-12-07 a Monday, 2026-12-06 a Sunday.
        let first_or_monday = c("0 0 1 * mon");
        assert!(first_or_monday.matches(t("2026-12-01T00:00")));
        assert!(first_or_monday.matches(t("2026-12-07T00:00")));
        assert!(!first_or_monday.matches(t("2026-12-08T00:00")));
        // Only the day of week restricted: both must match (the day of month is `*`).
        assert!(!c("* * * * 1").matches(t("2026-12-08T10:00")));
        assert!(c("* * * * 7").matches(t("2026-12-06T10:00")));
        assert!(c("* * * * sun").matches(t("2026-12-06T10:00")));
        let steps = c("*/15 9-17/4 * jan-feb,dec *");
        assert!(steps.matches(t("2026-12-08T13:45")));
        assert!(!steps.matches(t("2026-12-08T14:45")));
        assert!(!steps.matches(t("2026-11-08T13:45")));
        assert!(c("5/20 * * * *").matches(t("2026-12-08T13:45")));
        // A field starting with `*` is not restricted: odd days that are Mondays.
        let odd_mondays = c("0 0 */2 * 1");
        assert!(odd_mondays.matches(t("2026-12-07T00:00")));
        assert!(!odd_mondays.matches(t("2026-12-14T00:00")));
        assert!(!odd_mondays.matches(t("2026-12-01T00:00")));
        assert_eq!(c("  *  6-9 * *   1-5 ").as_str(), "* 6-9 * * 1-5");
    }

    #[test]
    fn bad_cron_expressions_say_what_is_wrong() {
        let e = |s: &str| Cron::parse(s).unwrap_err();
        assert_eq!(e("* 6-9 * *"), "\"* 6-9 * *\" has 4 fields, a schedule has 5: minute hour day-of-month month day-of-week");
        assert_eq!(
            e("60 * * * *"),
            "minute: \"60\" in \"60\" is not a value from 0 to 59"
        );
        assert_eq!(e("* 9-6 * * *"), "hour: range \"9-6\" runs backwards");
        assert_eq!(e("*/0 * * * *"), "minute: bad step \"0\" in \"*/0\"");
        assert_eq!(
            e("* * 0 * *"),
            "day of month: \"0\" in \"0\" is not a value from 1 to 31"
        );
        assert_eq!(
            e("* * * * funday"),
            "day of week: \"funday\" in \"funday\" is not a value from 0 to 7"
        );
        assert!(e(&"1,".repeat(150)).starts_with("longer than"));
    }

    #[test]
    fn bad_settings_are_errors_on_their_key() {
        let spec = |yaml: &str| yaml_serde::from_str::<PolicySpec>(yaml).unwrap();
        let err = |yaml: &str| Calendar::compile(&spec(yaml)).unwrap_err();
        let e = err("timezone: Europe/Berlinn\n");
        assert_eq!(
            (e.key, e.message.as_str()),
            ("timezone", "unknown time zone \"Europe/Berlinn\"")
        );
        assert_eq!(err("timezone: ../../etc/passwd\n").key, "timezone");
        let e = err("schedule: ['* 25 * * *']\n");
        assert_eq!(
            (e.key, e.message.as_str()),
            (
                "schedule",
                "invalid cron expression: hour: \"25\" in \"25\" is not a value from 0 to 23"
            )
        );
        let e = err("freeze: [{from: 2026-12-18, until: 2026-12-14}]\n");
        assert_eq!(
            (e.key, e.message.as_str()),
            (
                "freeze",
                "2026-12-18 is after 2026-12-14: a freeze runs from its first day to its last"
            )
        );
        assert_eq!(
            err("freeze: [{from: 2026-13-01, until: 2026-12-14}]\n").key,
            "freeze"
        );
        assert!(Calendar::compile(&spec("timezone: Asia/Tokyo\n"))
            .unwrap()
            .is_none());
        // Lists are capped: each entry is judged once per policy and run.
        let many = format!("schedule: [{}]\n", vec!["'* * * * *'"; 33].join(", "));
        assert_eq!(err(&many).message, "more than 32 windows");
        let freeze = "{from: 2026-01-01, until: 2026-01-02}";
        let many = format!("freeze: [{}]\n", vec![freeze; 33].join(", "));
        assert_eq!(err(&many).message, "more than 32 ranges");
        let long = format!(
            "freeze: [{{from: 2026-01-01, until: 2026-01-02, reason: {}}}]\n",
            "x".repeat(201)
        );
        assert_eq!(err(&long).message, "a reason is longer than 200 characters");
    }
}
