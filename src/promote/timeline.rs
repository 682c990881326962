//! Pure: from the values a file held after each base-branch commit to the versions an
//! environment has run (from when, until when, reverted or not), and which of them have
//! soaked long enough to be promoted (docs/promotion.md).

use std::collections::BTreeMap;

/// One first-parent commit that changed the value, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub sha: String,
    /// Committer time (seconds since the epoch): when the value reached the branch.
    pub time: i64,
    /// A `git revert` commit (`Revert "…"`, `This reverts commit …`).
    pub revert: bool,
    /// The tag after the commit; `None`: no value (file or key absent).
    pub tag: Option<String>,
}

/// A stretch of time one version was there without a break.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub tag: String,
    /// The commit that brought it, and its committer time.
    pub since_sha: String,
    pub since: i64,
    /// History is cut before it: it was there since `since` at least.
    pub cut: bool,
    /// The commit that replaced it, and its time; `None`: it is there now.
    pub until: Option<(String, i64)>,
    /// It was replaced by a revert commit, or by a version that was there before it.
    pub reverted: bool,
}

/// The versions of one image in one environment, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    pub segments: Vec<Segment>,
}

/// Whether a version that ran in the source may be promoted, as of "now".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// In the source without a break for `soak` (since its last arrival: `since`).
    Ready { since: i64, sha: String },
    /// Not long enough yet: this many seconds to go.
    Soaking { remaining: i64 },
    /// Reverted in the source (by this commit): never promoted from there.
    Reverted { sha: String },
}

/// Is this commit message one of `git revert`'s?
pub fn is_revert(subject: &str, body: &str) -> bool {
    subject.starts_with("Revert \"") || body.contains("This reverts commit ")
}

impl Timeline {
    /// The segments of `start` (the value before the first change, known since `start.1`,
    /// by commit `start.2`, `cut` when history does not say when it came) and `changes`.
    pub fn build(start: Option<(String, i64, String, bool)>, changes: &[Change]) -> Timeline {
        let mut segments: Vec<Segment> = Vec::new();
        if let Some((tag, since, sha, cut)) = start {
            segments.push(Segment {
                tag,
                since_sha: sha,
                since,
                cut,
                until: None,
                reverted: false,
            });
        }
        for c in changes {
            let open = segments
                .last()
                .filter(|s| s.until.is_none())
                .map(|s| s.tag.clone());
            if open == c.tag {
                continue;
            }
            // Back to a version that was there before this one: this one is rolled back.
            let returned = c
                .tag
                .as_ref()
                .is_some_and(|t| segments_before(&segments, t));
            if let Some(last) = segments.last_mut().filter(|s| s.until.is_none()) {
                last.until = Some((c.sha.clone(), c.time));
                last.reverted = c.revert || returned;
            }
            if let Some(tag) = &c.tag {
                segments.push(Segment {
                    tag: tag.clone(),
                    since_sha: c.sha.clone(),
                    since: c.time,
                    cut: false,
                    until: None,
                    reverted: false,
                });
            }
        }
        Timeline { segments }
    }

    /// The version there now, and its segment.
    pub fn current(&self) -> Option<&Segment> {
        self.segments.last().filter(|s| s.until.is_none())
    }

    /// Each version's verdict at `now` for a soak of `soak` seconds. A version counts by
    /// its last arrival: reverted there → `Reverted`; otherwise ready when any of its
    /// stretches not ended by a revert lasted `soak` (a later, forward move does not undo
    /// what it proved), else soaking.
    pub fn verdicts(&self, now: i64, soak: i64) -> BTreeMap<String, Verdict> {
        let mut out = BTreeMap::new();
        for s in &self.segments {
            let end = s.until.as_ref().map_or(now, |(_, t)| *t);
            let lasted = end.saturating_sub(s.since).max(0);
            let prior_ready = matches!(out.get(&s.tag), Some(Verdict::Ready { .. }));
            let verdict = if s.reverted {
                Verdict::Reverted {
                    sha: s
                        .until
                        .as_ref()
                        .map(|(sha, _)| sha.clone())
                        .unwrap_or_default(),
                }
            } else if lasted >= soak || prior_ready {
                Verdict::Ready {
                    since: s.since,
                    sha: s.since_sha.clone(),
                }
            } else {
                Verdict::Soaking {
                    remaining: soak.saturating_sub(lasted),
                }
            };
            out.insert(s.tag.clone(), verdict);
        }
        out
    }

    /// The first arrival of `tag`: when it first reached this environment.
    pub fn first_arrival(&self, tag: &str) -> Option<&Segment> {
        self.segments.iter().find(|s| s.tag == tag)
    }

    /// The last arrival of `tag`.
    pub fn arrival(&self, tag: &str) -> Option<&Segment> {
        self.segments.iter().rev().find(|s| s.tag == tag)
    }
}

/// Some segment before the open one holds `tag`.
fn segments_before(segments: &[Segment], tag: &str) -> bool {
    let n = segments.len().saturating_sub(1);
    segments.iter().take(n).any(|s| s.tag == tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(sha: &str, time: i64, tag: Option<&str>, revert: bool) -> Change {
        Change {
            sha: sha.into(),
            time,
            revert,
            tag: tag.map(str::to_string),
        }
    }

    const H: i64 = 3600;

    #[test]
    fn versions_soak_from_their_arrival_and_rollbacks_are_reverts() {
        let t = Timeline::build(
            Some(("1.0.0".into(), 0, "a".into(), true)),
            &[
                change("b", 10 * H, Some("1.1.0"), false),
                change("c", 20 * H, Some("1.2.0"), false),
                // Back to 1.1.0: 1.2.0 was rolled back.
                change("d", 21 * H, Some("1.1.0"), false),
                change("e", 30 * H, Some("1.3.0"), false),
                change("f", 31 * H, Some("1.1.0"), true),
                change("g", 40 * H, Some("1.4.0"), false),
            ],
        );
        assert_eq!(t.segments.len(), 7);
        assert!(t.segments[0].cut);
        let v = t.verdicts(41 * H, 2 * H);
        assert_eq!(
            v["1.0.0"],
            Verdict::Ready {
                since: 0,
                sha: "a".into()
            }
        );
        assert_eq!(
            v["1.1.0"],
            Verdict::Ready {
                since: 31 * H,
                sha: "f".into()
            }
        );
        assert_eq!(v["1.2.0"], Verdict::Reverted { sha: "d".into() });
        assert_eq!(v["1.3.0"], Verdict::Reverted { sha: "f".into() });
        assert_eq!(v["1.4.0"], Verdict::Soaking { remaining: H });
        assert_eq!(
            t.verdicts(42 * H, 2 * H)["1.4.0"],
            Verdict::Ready {
                since: 40 * H,
                sha: "g".into()
            }
        );
        assert_eq!(t.current().unwrap().tag, "1.4.0");
        // A commit that changes something else leaves the stretch whole.
        let same = Timeline::build(
            None,
            &[
                change("a", 0, Some("1"), false),
                change("b", H, Some("1"), false),
            ],
        );
        assert_eq!(same.segments.len(), 1);
        // Removed, then back: not a revert.
        let gone = Timeline::build(
            None,
            &[
                change("a", 0, Some("1"), false),
                change("b", H, None, false),
            ],
        );
        assert_eq!(gone.segments[0].until, Some(("b".into(), H)));
        assert!(gone.current().is_none());
    }
}
