//! The `newest-build` strategy: the candidate whose image was built last (the config blob's
//! `created`; for an index, the newest among the requested platforms). Equal dates go to the
//! greatest tag name, with a warning; identical dates everywhere (reproducible builds) are
//! reported instead of guessed at.

use std::collections::BTreeSet;

use jiff::Timestamp;

use super::evaluate::{Choice, Evaluation, Verdict};

impl Evaluation<'_> {
    pub(super) fn decide_newest_build(&mut self) -> Choice {
        let platforms = self.policy.platforms.clone();
        let baseline = self
            .current_index
            .and_then(|i| self.meta.get(&i))
            .and_then(|m| m.as_ref().ok())
            .map(|m| (m.created(&platforms), m.digest.clone()));
        let mut dated: Vec<(Timestamp, usize)> = Vec::new();
        let mut digests = BTreeSet::new();
        for pos in 0..self.order.len() {
            let Some(&i) = self.order.get(pos) else {
                break;
            };
            let verdict = match self.meta.get(&i) {
                None => Some(Verdict::NoMetadata("not fetched".into())),
                Some(Err(e)) => Some(Verdict::NoMetadata(e.clone())),
                Some(Ok(m)) => match self.meta_verdict(m) {
                    Some(v) => Some(v),
                    None => match m.created(&platforms) {
                        None => Some(Verdict::NoBuildDate),
                        Some(t) => {
                            dated.push((t, i));
                            digests.insert(m.digest.clone());
                            None
                        }
                    },
                },
            };
            if let Some(v) = verdict {
                self.set_verdict(i, v);
            }
        }
        if let Some((Some(t), d)) = &baseline {
            digests.insert(d.clone());
            if digests.len() > 1 && dated.iter().all(|(c, _)| c == t) {
                return self.reproducible(*t, dated.len(), true);
            }
        } else if let Some(&(first, _)) = dated.first() {
            if digests.len() > 1 && dated.iter().all(|(c, _)| *c == first) {
                return self.reproducible(first, dated.len(), false);
            }
        }
        // Newest first; equal dates: greatest tag name first.
        dated.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then_with(|| self.tag_of(b.1).cmp(&self.tag_of(a.1)))
        });
        let mut chosen = None;
        for (pos, &(created, i)) in dated.iter().enumerate() {
            let digest = self.digest_of(i);
            let verdict = match &baseline {
                _ if chosen.is_some() => Verdict::Ranked,
                Some((_, d)) if Some(d) == digest.as_ref() => Verdict::SameImage,
                Some((Some(t), _)) if !self.policy.allow_downgrade && created <= *t => {
                    Verdict::OlderBuild
                }
                _ => {
                    let ties: Vec<&str> = dated
                        .iter()
                        .skip(pos.saturating_add(1))
                        .take_while(|(c, _)| *c == created)
                        .filter_map(|&(_, j)| self.tag_of(j))
                        .collect();
                    if !ties.is_empty() {
                        self.warnings.push(format!(
                            "tags {:?} and {} share the newest build date {created}; chose the greatest name (narrow the candidates with allowTags)",
                            self.tag_of(i).unwrap_or_default(),
                            ties.iter().map(|t| format!("{t:?}")).collect::<Vec<_>>().join(", ")
                        ));
                    }
                    Verdict::Chosen
                }
            };
            if verdict == Verdict::Chosen {
                chosen = Some(i);
            }
            self.set_verdict(i, verdict);
        }
        // Explain best first: the dated candidates newest first (the name order the filters
        // left means nothing here), then those dropped for their metadata.
        let mut is_dated = vec![false; self.candidates.len()];
        for &(_, i) in &dated {
            if let Some(d) = is_dated.get_mut(i) {
                *d = true;
            }
        }
        let undated = self
            .order
            .iter()
            .copied()
            .filter(|&i| is_dated.get(i) != Some(&true));
        self.order = dated.iter().map(|&(_, i)| i).chain(undated).collect();
        self.choice_for(chosen)
    }

    fn reproducible(&mut self, created: Timestamp, n: usize, and_current: bool) -> Choice {
        let current = if and_current {
            " and the current image"
        } else {
            ""
        };
        Choice::Skip(format!(
            "all {n} candidate images{current} have the same build date {created} (reproducible builds?), so newest-build cannot order them; use semver, numeric or a regex on the tag instead"
        ))
    }
}
