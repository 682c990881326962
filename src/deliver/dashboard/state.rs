//! What the dashboard's boxes decided, kept as refs under [`super::NAMESPACE`]:
//! `stop-all`, `lift/<source>` (a closed pull request's or a revert's rejections lifted),
//! `approve/<image>/<major>` (a major version let through `approveMajors`).

use std::collections::{BTreeMap, BTreeSet};

use super::boxes::{is_image, is_source, Key};
use super::NAMESPACE;

/// The decisions kept between runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    pub stop_all: bool,
    /// Sources whose rejections are lifted: `pr-12`, `revert-<sha>`.
    pub lifted: BTreeSet<String>,
    /// (image, major) pairs approved.
    pub approved: BTreeSet<(String, u64)>,
}

/// The decisions this run follows: the kept ones, and "Run now", which holds for one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decided {
    pub state: State,
    pub run_now: bool,
}

impl State {
    /// The state the refs `names` record (names outside the namespace, or not imagebump's
    /// spelling, are ignored).
    pub fn from_refs(names: &[String]) -> State {
        let mut state = State::default();
        for name in names {
            let Some(rest) = name.strip_prefix(NAMESPACE) else {
                continue;
            };
            if rest == "stop-all" {
                state.stop_all = true;
            } else if let Some(source) = rest.strip_prefix("lift/").filter(|s| is_source(s)) {
                state.lifted.insert(source.to_string());
            } else if let Some(approved) = rest.strip_prefix("approve/").and_then(approval) {
                state.approved.insert(approved);
            }
        }
        state
    }

    /// The refs that record this state.
    pub fn refs(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        if self.stop_all {
            out.insert(format!("{NAMESPACE}stop-all"));
        }
        for source in &self.lifted {
            out.insert(format!("{NAMESPACE}lift/{source}"));
        }
        for (image, major) in &self.approved {
            out.insert(format!(
                "{NAMESPACE}approve/{}/{major}",
                image.replace(':', "%3A")
            ));
        }
        out
    }

    /// The decisions after the boxes `ticks` (taken from a trusted editor): a box says
    /// what its key is now; a lift, once ticked, stays (its box goes away).
    pub fn ticked(&self, ticks: &BTreeMap<Key, bool>) -> Decided {
        let mut state = self.clone();
        let mut run_now = false;
        for (key, on) in ticks {
            match key {
                Key::StopAll => state.stop_all = *on,
                Key::RunNow => run_now = *on,
                Key::Lift(source) if *on => {
                    state.lifted.insert(source.clone());
                }
                Key::Lift(_) => {}
                Key::Approve { image, major } => {
                    let pair = (image.clone(), *major);
                    if *on {
                        state.approved.insert(pair);
                    } else {
                        state.approved.remove(&pair);
                    }
                }
            }
        }
        Decided { state, run_now }
    }
}

/// `<image>/<major>` of an `approve/` ref.
fn approval(rest: &str) -> Option<(String, u64)> {
    let (image, major) = rest.rsplit_once('/')?;
    let image = image.replace("%3A", ":");
    is_image(&image).then_some(())?;
    Some((image, major.parse().ok()?))
}

/// The major version a tag starts with (`v17.2-alpine` → 17); `None` when it starts with
/// no number.
pub fn major_of(tag: &str) -> Option<u64> {
    let t = tag.strip_prefix(['v', 'V']).unwrap_or(tag);
    let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    t.get(..end)
        .filter(|d| !d.is_empty() && d.len() < 19)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_round_trip() {
        let state = State {
            stop_all: true,
            lifted: ["pr-12".to_string(), "revert-1a2b3c".to_string()].into(),
            approved: [("localhost:5000/pg".to_string(), 17)].into(),
        };
        let names: Vec<String> = state.refs().into_iter().collect();
        assert_eq!(
            names,
            vec![
                "refs/imagebump/dashboard/approve/localhost%3A5000/pg/17",
                "refs/imagebump/dashboard/lift/pr-12",
                "refs/imagebump/dashboard/lift/revert-1a2b3c",
                "refs/imagebump/dashboard/stop-all",
            ]
        );
        assert_eq!(State::from_refs(&names), state);
        let junk = vec![
            format!("{NAMESPACE}lift/main"),
            format!("{NAMESPACE}approve/X/1"),
        ];
        assert_eq!(State::from_refs(&junk), State::default());
    }

    #[test]
    fn ticks_change_the_state() {
        let before = State {
            stop_all: true,
            approved: [("web".to_string(), 3)].into(),
            ..State::default()
        };
        let ticks: BTreeMap<Key, bool> = [
            (Key::StopAll, false),
            (Key::RunNow, true),
            (Key::Lift("pr-4".into()), true),
            (Key::Lift("pr-5".into()), false),
            (
                Key::Approve {
                    image: "web".into(),
                    major: 3,
                },
                false,
            ),
            (
                Key::Approve {
                    image: "db".into(),
                    major: 17,
                },
                true,
            ),
        ]
        .into();
        let after = before.ticked(&ticks);
        assert!(after.run_now);
        assert!(!after.state.stop_all);
        assert_eq!(after.state.lifted, ["pr-4".to_string()].into());
        assert_eq!(after.state.approved, [("db".to_string(), 17)].into());
    }

    #[test]
    fn majors() {
        assert_eq!(major_of("17.2-alpine"), Some(17));
        assert_eq!(major_of("v3"), Some(3));
        assert_eq!(major_of("latest"), None);
        assert_eq!(major_of("99999999999999999999"), None);
    }
}
