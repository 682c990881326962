//! Holding updates back in time: a reference whose policy's `schedule` is closed at the
//! run's start, or whose `freeze` covers that day, or every reference when all updates are
//! stopped, keeps its current version (`Outcome::Scheduled`, with why and when updates come
//! next). An update already proposed in one of imagebump's open pull requests is not new:
//! it passes, so that pull request stays current.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use arcstr::ArcStr;
use imagebump_policy::schedule::{Calendar, Closed};
use jiff::{Timestamp, Zoned};

use super::Outcome;
use crate::chunked::Chunked;
use crate::discover::ImageRef;

/// What a person says to the run beside the configuration (the dashboard's switches). Both
/// default to false.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Overrides {
    /// Run now despite the schedule: windows are lifted, freezes are not.
    pub ignore_schedule: bool,
    /// Stop all updates: nothing new is proposed at all.
    pub stop_all: bool,
}

/// The updates imagebump's open pull requests propose: (normalised image, file written).
pub type OpenUpdates = BTreeSet<(String, String)>;

/// What the gate judges by.
#[derive(Debug, Clone)]
pub struct Gate {
    /// When the run started.
    pub now: Timestamp,
    pub overrides: Overrides,
    pub open: OpenUpdates,
}

/// The reason every update is held for while all updates are stopped.
pub const STOPPED: &str = "all updates are stopped";

impl Gate {
    /// Turns the updates held back at the run's start into `Outcome::Scheduled`; returns
    /// them as (normalised image, file written).
    pub fn hold(&self, refs: &Chunked<ImageRef>, outcomes: &mut Chunked<Outcome>) -> OpenUpdates {
        // One verdict per policy: references share their compiled policy.
        let mut verdicts: HashMap<usize, Option<ArcStr>> = HashMap::new();
        let mut held = OpenUpdates::new();
        for (r, o) in refs.iter().zip(outcomes.iter_mut()) {
            let Outcome::Update { tag, .. } = &*o else {
                continue;
            };
            let why = match self.overrides.stop_all {
                true => Some(arcstr::literal!(STOPPED)),
                false if self.is_open(r) => None,
                false => {
                    let calendar = r.policy.calendar.as_ref();
                    // The address of the policy's calendar (alive as long as `refs`).
                    let key = calendar.map_or(0, |c| std::ptr::from_ref(c) as usize);
                    verdicts
                        .entry(key)
                        .or_insert_with(|| self.verdict(calendar))
                        .clone()
                }
            };
            if let Some(why) = why {
                *o = Outcome::Scheduled {
                    tag: ArcStr::clone(tag),
                    why,
                };
                held.insert((r.image.to_string(), r.written_file().to_string()));
            }
        }
        held
    }

    fn is_open(&self, r: &ImageRef) -> bool {
        !self.open.is_empty()
            && self
                .open
                .contains(&(r.image.to_string(), r.written_file().to_string()))
    }

    fn verdict(&self, calendar: Option<&Calendar>) -> Option<ArcStr> {
        let calendar = calendar?;
        let closed = calendar.closed(self.now, self.overrides.ignore_schedule)?;
        Some(reason(calendar, &closed).into())
    }
}

/// "outside schedule `* 6-9 * * 1-5` (Europe/Berlin); next window opens 2026-12-08 06:00
/// CET", or "frozen until 2026-12-18 (Europe/Berlin): release week; updates resume …".
pub fn reason(calendar: &Calendar, closed: &Closed) -> String {
    let zone = &calendar.zone_name;
    let mut out = String::new();
    let (next, opens) = match closed {
        Closed::OutsideSchedule { next } => {
            let windows = calendar.windows_text();
            let _ = write!(out, "outside schedule {windows} ({zone}); ");
            (next, "next window opens")
        }
        Closed::Frozen {
            until,
            reason,
            next,
        } => {
            let _ = write!(out, "frozen until {until} ({zone})");
            if let Some(reason) = reason {
                let _ = write!(out, ": {reason}");
            }
            out.push_str("; ");
            (next, "updates resume")
        }
    };
    match next {
        Some(at) => {
            let _ = write!(out, "{opens} {}", shown(at));
        }
        None => out.push_str("no window opens in the next four years"),
    }
    out
}

/// `2026-12-08 06:00 CET`.
fn shown(at: &Zoned) -> String {
    at.strftime("%Y-%m-%d %H:%M %Z").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::Discovery;
    use imagebump_model::config::Config;

    /// Two images in one kustomization under `defaults` (YAML), discovered, each with an
    /// update to `2.0`.
    fn two_updates(defaults: &str) -> (tempfile::TempDir, Discovery, Chunked<Outcome>) {
        let dir = crate::discover::tests::tree(&[(
            "k/kustomization.yaml",
            "images:\n- name: ghcr.io/acme/web\n  newTag: '1.0'\n- name: ghcr.io/acme/api\n  newTag: '1.0'\n",
        )]);
        let config = Config {
            defaults: imagebump_yaml::from_str(defaults).unwrap(),
            ..Config::default()
        };
        let found =
            crate::discover::discover(&crate::source::tree::Tree::disk(dir.path()), &config);
        let mut outcomes = Chunked::default();
        for _ in found.refs.iter() {
            outcomes.push(Outcome::Update {
                tag: "2.0".into(),
                digest: None,
                verified: None,
            });
        }
        (dir, found, outcomes)
    }

    /// Each reference's outcome after the gate: `update`, or why it waits.
    fn judged(defaults: &str, gate: &Gate) -> Vec<String> {
        let (_dir, found, mut outcomes) = two_updates(defaults);
        let held = gate.hold(&found.refs, &mut outcomes);
        let shown: Vec<String> = outcomes
            .iter()
            .map(|o| match o {
                Outcome::Update { tag, .. } => format!("update {tag}"),
                Outcome::Scheduled { tag, why } => format!("{tag} waits: {why}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            held.len(),
            shown.iter().filter(|s| s.contains("waits")).count()
        );
        shown
    }

    const WEEKDAY_MORNINGS: &str = "{schedule: ['* 6-9 * * 1-5'], timezone: Europe/Berlin, freeze: [{from: 2026-12-14, until: 2026-12-18, reason: release week}]}";

    fn gate(utc: &str, overrides: Overrides, open: &[(&str, &str)]) -> Gate {
        Gate {
            now: utc.parse().unwrap(),
            overrides,
            open: open
                .iter()
                .map(|(i, f)| (i.to_string(), f.to_string()))
                .collect(),
        }
    }

    #[test]
    fn outside_the_window_only_updates_of_open_pull_requests_pass() {
        let open = [("ghcr.io/acme/web", "k/kustomization.yaml")];
        let outside = gate("2026-12-08T17:00:00Z", Overrides::default(), &open);
        assert_eq!(
            judged(WEEKDAY_MORNINGS, &outside),
            [
                "update 2.0",
                "2.0 waits: outside schedule `* 6-9 * * 1-5` (Europe/Berlin); next window opens 2026-12-09 06:00 CET"
            ]
        );
        let inside = gate("2026-12-09T05:00:00Z", Overrides::default(), &[]);
        assert_eq!(
            judged(WEEKDAY_MORNINGS, &inside),
            ["update 2.0", "update 2.0"]
        );
        // No schedule: nothing waits.
        assert_eq!(judged("{}", &outside), ["update 2.0", "update 2.0"]);
    }

    #[test]
    fn run_now_lifts_the_window_but_not_a_freeze() {
        let now = Overrides {
            ignore_schedule: true,
            stop_all: false,
        };
        assert_eq!(
            judged(WEEKDAY_MORNINGS, &gate("2026-12-08T17:00:00Z", now, &[])),
            ["update 2.0", "update 2.0"]
        );
        let frozen = "2.0 waits: frozen until 2026-12-18 (Europe/Berlin): release week; updates resume 2026-12-19 00:00 CET";
        assert_eq!(
            judged(WEEKDAY_MORNINGS, &gate("2026-12-15T07:00:00Z", now, &[])),
            [frozen, frozen]
        );
        let frozen = "2.0 waits: frozen until 2026-12-18 (Europe/Berlin): release week; updates resume 2026-12-21 06:00 CET";
        let open = [("ghcr.io/acme/web", "k/kustomization.yaml")];
        assert_eq!(
            judged(
                WEEKDAY_MORNINGS,
                &gate("2026-12-15T07:00:00Z", Overrides::default(), &open)
            ),
            ["update 2.0", frozen]
        );
    }

    #[test]
    fn a_window_that_never_opens_says_so() {
        let never = "{schedule: ['* * 31 2 *']}";
        let waits = "2.0 waits: outside schedule `* * 31 2 *` (UTC); no window opens in the next four years";
        assert_eq!(
            judged(
                never,
                &gate("2026-12-08T17:00:00Z", Overrides::default(), &[])
            ),
            [waits, waits]
        );
    }

    #[test]
    fn stop_all_holds_every_update_even_of_open_pull_requests() {
        let stop = Overrides {
            ignore_schedule: true,
            stop_all: true,
        };
        let open = [("ghcr.io/acme/web", "k/kustomization.yaml")];
        let stopped = "2.0 waits: all updates are stopped";
        assert_eq!(
            judged("{}", &gate("2026-12-09T07:00:00Z", stop, &open)),
            [stopped, stopped]
        );
    }
}
