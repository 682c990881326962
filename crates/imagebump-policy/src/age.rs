//! The clock `minAge` judges a candidate by: the image's build date (`created`) when it is
//! plausible, else the time imagebump first saw the tag in its repository, as recorded in
//! the manifest repository (`refs/imagebump/first-seen/…`). A tag never recorded is first
//! seen now: a cold start never counts as old.
//!
//! A record can only make a tag younger: when both a plausible build date and a record are
//! known, the later of the two counts (a record pushed by hand with an early time cannot
//! shorten the wait of an image whose build date says it is young).

use jiff::Timestamp;

use imagebump_model::duration::format_age;

/// 2000-01-01T00:00:00Z: a build date before it is a reproducible build's fixed date
/// (`SOURCE_DATE_EPOCH=0`, 1970), not a release date.
const Y2000: i64 = 946_684_800;

/// A build date that says when the image was built: after 2000 and not after `now`.
pub fn plausible(created: Timestamp, now: Timestamp) -> bool {
    created.as_second() >= Y2000 && created <= now
}

/// Where a candidate's age counts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The image's build date (`created`), plausible and no earlier than any record.
    Built(Timestamp),
    /// When imagebump first saw the tag, as the repository records it.
    FirstSeen(Timestamp),
    /// No plausible build date and no record: first seen by this run, age zero. A run that
    /// delivers records it.
    SeenNow(Timestamp),
}

impl Clock {
    /// The clock for an image built at `created` (if known) whose tag was first seen at
    /// `recorded` (if recorded), judged at `now`.
    pub fn of(created: Option<Timestamp>, recorded: Option<Timestamp>, now: Timestamp) -> Clock {
        let built = created.filter(|c| plausible(*c, now));
        match (built, recorded) {
            (Some(b), Some(r)) if r > b => Clock::FirstSeen(r),
            (Some(b), _) => Clock::Built(b),
            (None, Some(r)) => Clock::FirstSeen(r),
            (None, None) => Clock::SeenNow(now),
        }
    }

    /// The time the age counts from.
    pub fn since(&self) -> Timestamp {
        match self {
            Clock::Built(t) | Clock::FirstSeen(t) | Clock::SeenNow(t) => *t,
        }
    }

    /// `built` or `firstSeen`, as the JSON reports name the clock.
    pub fn name(&self) -> &'static str {
        match self {
            Clock::Built(_) => "built",
            Clock::FirstSeen(_) | Clock::SeenNow(_) => "firstSeen",
        }
    }

    /// The age at `now`; `None` for a time after `now` (a record written in the future).
    pub fn age(&self, now: Timestamp) -> Option<std::time::Duration> {
        std::time::Duration::try_from(now.duration_since(self.since())).ok()
    }

    /// "built 3d ago", "first seen 3d ago", "first seen now (no earlier record)", "first
    /// seen in the future (…)".
    pub fn describe(&self, now: Timestamp) -> String {
        let what = match self {
            Clock::Built(_) => "built",
            Clock::FirstSeen(_) => "first seen",
            Clock::SeenNow(_) => return "first seen now (no earlier record)".into(),
        };
        match self.age(now) {
            Some(age) => format!("{what} {} ago", format_age(age)),
            None => format!("{what} in the future ({})", self.since()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn the_clock_is_the_build_date_when_plausible_else_the_first_sighting() {
        let now = ts("2026-12-07T12:00:00Z");
        let built = ts("2026-12-01T12:00:00Z");
        let seen = ts("2026-12-05T12:00:00Z");
        let early = ts("2026-11-01T00:00:00Z");
        let reproducible = ts("1970-01-01T00:00:01Z");
        let future = ts("2027-01-01T00:00:00Z");
        let rows = [
            (Some(built), None, Clock::Built(built), "built 6d ago"),
            // A record later than the build date: the later counts.
            (
                Some(built),
                Some(seen),
                Clock::FirstSeen(seen),
                "first seen 2d ago",
            ),
            // An earlier record cannot make a young image old.
            (
                Some(built),
                Some(early),
                Clock::Built(built),
                "built 6d ago",
            ),
            (
                Some(reproducible),
                Some(seen),
                Clock::FirstSeen(seen),
                "first seen 2d ago",
            ),
            (
                Some(reproducible),
                None,
                Clock::SeenNow(now),
                "first seen now (no earlier record)",
            ),
            (
                None,
                Some(early),
                Clock::FirstSeen(early),
                "first seen 36d12h ago",
            ),
            (
                None,
                None,
                Clock::SeenNow(now),
                "first seen now (no earlier record)",
            ),
            // A build date in the future is a wrong clock, not a date.
            (
                Some(future),
                None,
                Clock::SeenNow(now),
                "first seen now (no earlier record)",
            ),
            (
                None,
                Some(future),
                Clock::FirstSeen(future),
                "first seen in the future (2027-01-01T00:00:00Z)",
            ),
        ];
        for (created, recorded, want, said) in rows {
            let got = Clock::of(created, recorded, now);
            assert_eq!(got, want, "{created:?} {recorded:?}");
            assert_eq!(got.describe(now), said);
        }
        assert_eq!(
            Clock::SeenNow(now).age(now),
            Some(std::time::Duration::ZERO)
        );
        assert!(plausible(ts("2000-01-01T00:00:00Z"), now));
        assert!(!plausible(ts("1999-12-31T23:59:59Z"), now));
        assert!(plausible(now, now));
    }
}
