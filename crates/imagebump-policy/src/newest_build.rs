//! The `newest-build` strategy: the candidate whose image was built last (the config blob's
//! `created`; for an index, the newest among the requested platforms). Equal dates go to the
//! greatest tag name, with a warning; identical dates everywhere (reproducible builds) are
//! reported instead of guessed at.

use std::collections::BTreeSet;

use jiff::Timestamp;

use crate::candidate::Verdict;
use crate::strategy::Strategy;

/// Orders by build date, which only the metadata tells: every tag is a candidate, and its
/// key (the tag) only orders the candidates whose metadata is asked for first.
pub struct NewestBuild;

impl Strategy for NewestBuild {}

/// A candidate as newest-build sees it, in the evaluation's order: its index and tag, and
/// its image's build date and digest, or why it has none that counts.
#[derive(Debug, Clone)]
pub struct Examined<'a> {
    pub index: usize,
    pub tag: &'a str,
    pub build: Result<(Timestamp, &'a str), Verdict>,
}

/// The current tag's image: its build date, when it has one, and its digest.
#[derive(Debug, Clone, Copy)]
pub struct Baseline<'a> {
    pub created: Option<Timestamp>,
    pub digest: &'a str,
}

/// Every candidate image has the one build date: newest-build cannot order them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("all {candidates} candidate images{} have the same build date {created} (reproducible builds?), so newest-build cannot order them; use semver, numeric or a regex on the tag instead", if *.with_current { " and the current image" } else { "" })]
pub struct SameBuildDate {
    pub candidates: usize,
    /// The current image has that date too.
    pub with_current: bool,
    pub created: Timestamp,
}

/// What newest-build decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The verdict of every examined candidate, by index.
    pub verdicts: Vec<(usize, Verdict)>,
    /// The chosen candidate's index (`None`: nothing newer), or why the builds cannot be
    /// ordered at all.
    pub chosen: Result<Option<usize>, SameBuildDate>,
    /// The candidates best first, to explain the choice: the dated ones newest first (the
    /// name order the filters left means nothing here), then those dropped for their
    /// metadata. Empty when `chosen` is an error.
    pub order: Vec<usize>,
    /// Ties on the newest build date.
    pub warnings: Vec<String>,
}

/// A candidate with a build date.
struct Dated<'a> {
    created: Timestamp,
    index: usize,
    tag: &'a str,
    digest: &'a str,
}

/// The newest build among `examined` newer than the current one (`baseline`; any build
/// with `allow_downgrade`).
pub fn decide(
    examined: &[Examined],
    baseline: Option<Baseline>,
    allow_downgrade: bool,
) -> Decision {
    let mut verdicts = Vec::new();
    let mut dated = Vec::new();
    for e in examined {
        match &e.build {
            Err(v) => verdicts.push((e.index, v.clone())),
            Ok((created, digest)) => dated.push(Dated {
                created: *created,
                index: e.index,
                tag: e.tag,
                digest,
            }),
        }
    }
    if let Some(why) = reproducible(&dated, baseline) {
        return Decision {
            verdicts,
            chosen: Err(why),
            order: Vec::new(),
            warnings: Vec::new(),
        };
    }
    // Newest first; equal dates: greatest tag name first.
    dated.sort_by(|a, b| b.created.cmp(&a.created).then_with(|| b.tag.cmp(a.tag)));
    let mut warnings = Vec::new();
    let chosen = rank_dated(
        &dated,
        baseline,
        allow_downgrade,
        &mut verdicts,
        &mut warnings,
    );
    let undated = examined.iter().filter(|e| e.build.is_err());
    let order = dated
        .iter()
        .map(|d| d.index)
        .chain(undated.map(|e| e.index))
        .collect();
    Decision {
        verdicts,
        chosen: Ok(chosen),
        order,
        warnings,
    }
}

/// Why the dated candidates cannot be ordered: several images, one build date for all
/// (and for the current image, when its date is known).
fn reproducible(dated: &[Dated], baseline: Option<Baseline>) -> Option<SameBuildDate> {
    let mut digests: BTreeSet<&str> = dated.iter().map(|d| d.digest).collect();
    let (created, with_current) = match baseline {
        Some(Baseline {
            created: Some(t),
            digest,
        }) => {
            digests.insert(digest);
            (t, true)
        }
        _ => (dated.first()?.created, false),
    };
    if digests.len() < 2 || dated.iter().any(|d| d.created != created) {
        return None;
    }
    Some(SameBuildDate {
        candidates: dated.len(),
        with_current,
        created,
    })
}

/// Each dated candidate's verdict, newest first (pushed to `verdicts`), and the chosen one.
fn rank_dated(
    dated: &[Dated],
    baseline: Option<Baseline>,
    allow_downgrade: bool,
    verdicts: &mut Vec<(usize, Verdict)>,
    warnings: &mut Vec<String>,
) -> Option<usize> {
    let mut chosen = None;
    for (pos, d) in dated.iter().enumerate() {
        let verdict = match baseline {
            _ if chosen.is_some() => Verdict::Ranked,
            Some(b) if b.digest == d.digest => Verdict::SameImage,
            Some(Baseline {
                created: Some(t), ..
            }) if !allow_downgrade && d.created <= t => Verdict::OlderBuild,
            _ => {
                let ties: Vec<&str> = dated
                    .iter()
                    .skip(pos.saturating_add(1))
                    .take_while(|o| o.created == d.created)
                    .map(|o| o.tag)
                    .collect();
                if !ties.is_empty() {
                    warnings.push(format!(
                        "tags {:?} and {} share the newest build date {}; chose the greatest name (narrow the candidates with allowTags)",
                        d.tag,
                        ties.iter().map(|t| format!("{t:?}")).collect::<Vec<_>>().join(", "),
                        d.created
                    ));
                }
                Verdict::Chosen
            }
        };
        if verdict == Verdict::Chosen {
            chosen = Some(d.index);
        }
        verdicts.push((d.index, verdict));
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    fn dated<'a>(index: usize, tag: &'a str, t: i64, digest: &'a str) -> Examined<'a> {
        Examined {
            index,
            tag,
            build: Ok((at(t), digest)),
        }
    }

    #[test]
    fn the_newest_build_above_the_current_one_is_chosen() {
        let examined = [
            dated(0, "a", 10, "sha256:a"),
            dated(1, "b", 30, "sha256:b"),
            Examined {
                index: 2,
                tag: "c",
                build: Err(Verdict::NoBuildDate),
            },
            dated(3, "d", 5, "sha256:d"),
        ];
        let baseline = Baseline {
            created: Some(at(20)),
            digest: "sha256:x",
        };
        let d = decide(&examined, Some(baseline), false);
        assert_eq!(d.chosen, Ok(Some(1)));
        assert_eq!(d.order, [1, 0, 3, 2]);
        assert_eq!(
            d.verdicts,
            [
                (2, Verdict::NoBuildDate),
                (1, Verdict::Chosen),
                (0, Verdict::Ranked),
                (3, Verdict::Ranked)
            ]
        );
        assert!(d.warnings.is_empty());
    }

    #[test]
    fn older_builds_and_the_same_image_are_not_chosen() {
        let examined = [dated(0, "a", 10, "sha256:a"), dated(1, "b", 30, "sha256:x")];
        let baseline = Baseline {
            created: Some(at(20)),
            digest: "sha256:x",
        };
        let d = decide(&examined, Some(baseline), false);
        assert_eq!(d.chosen, Ok(None));
        assert_eq!(
            d.verdicts,
            [(1, Verdict::SameImage), (0, Verdict::OlderBuild)]
        );
    }

    #[test]
    fn ties_go_to_the_greatest_name_with_a_warning() {
        let examined = [dated(0, "a", 10, "sha256:a"), dated(1, "b", 10, "sha256:b")];
        let d = decide(&examined, None, false);
        // Two images, one date, no current date: nothing can be ordered.
        assert!(d
            .chosen
            .unwrap_err()
            .to_string()
            .starts_with("all 2 candidate images have"));
        let examined = [
            dated(0, "a", 10, "sha256:a"),
            dated(1, "b", 10, "sha256:b"),
            dated(2, "c", 5, "sha256:c"),
        ];
        let d = decide(&examined, None, false);
        assert_eq!(d.chosen, Ok(Some(1)));
        assert_eq!(d.warnings.len(), 1);
        assert!(d.warnings[0].starts_with("tags \"b\" and \"a\" share"));
    }
}
