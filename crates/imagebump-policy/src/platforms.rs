//! Multi-arch safety: which platforms a candidate must offer, and whether a `digest` move
//! changes an image the repository runs.
//!
//! Without `platforms:`, a candidate must offer every platform the current version offers
//! (its index's entries, attestation entries left out by the manifest reader; a single
//! image's config platform): a newer tag that drops `linux/arm64` would break the arm64
//! nodes. With `platforms:`, those are what the repository runs and only they are required.
//! `platforms: [any]` requires nothing. Plain data and pure functions; the evaluation asks
//! for the current version's metadata and the resolve stage fetches it.

use imagebump_model::platform::Platform;

use crate::candidate::Meta;
use crate::{Policy, PolicyError, Strategy};

/// The word of `platforms: [any]`.
const ANY: &str = "any";

/// Is `word` the opt-out `any`?
pub fn is_any(word: &str) -> bool {
    word.trim() == ANY
}

/// Whether `platforms` is `[any]`; `any` among platforms is an error (it would mean both
/// "these" and "none").
pub(crate) fn compile_any(platforms: Option<&[String]>) -> Result<bool, PolicyError> {
    let Some(list) = platforms else {
        return Ok(false);
    };
    match (list.iter().any(|p| is_any(p)), list.len()) {
        (false, _) => Ok(false),
        (true, 1) => Ok(true),
        (true, _) => Err(PolicyError::new(
            "platforms",
            "`any` stands alone: it requires no platform at all",
        )
        .hint("platforms: [any], or list the platforms the repository runs")),
    }
}

/// Why the current version's metadata is not there to compare with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    /// No registry to ask (`imagebump tags --tags-from`, a classic Helm repository).
    NoRegistry,
    /// The registry did not give it (a deleted tag, a pinned digest that is gone):
    /// the words say why.
    Missing(String),
    /// Reading it failed (registry down, refused): the reference is not judged, since a
    /// candidate might lack a platform it offers.
    Failed(String),
}

/// What is known of the current version's image, for the platform rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Current {
    /// Not needed: `platforms: [any]`, no current tag, a chart, or (`digest` strategy)
    /// nothing pinned yet.
    Off,
    /// To be fetched ([`crate::evaluate::Evaluation::wanted_current`]).
    Pending,
    /// Read: the image's metadata and the platforms it offers.
    Read { meta: Meta, offered: Vec<Platform> },
    /// Could not be read: nothing is required beyond `platforms:`.
    Unread,
}

impl Current {
    /// What an evaluation of `policy` for `current` (pinned at `current_digest`) needs:
    /// the current tag's image, unless `platforms` says what runs; for `digest`, the
    /// pinned image (compared when the tag moves), when one is pinned.
    pub(crate) fn initial(policy: &Policy, current: &str, current_digest: Option<&str>) -> Current {
        if policy.any_platform || current.is_empty() {
            return Current::Off;
        }
        let wanted = match policy.strategy {
            Strategy::Digest => current_digest.is_some(),
            _ => policy.platforms.is_empty(),
        };
        match wanted {
            true => Current::Pending,
            false => Current::Off,
        }
    }

    /// The platforms of `meta` a candidate must offer (none of `platforms:` is set: those
    /// are checked instead).
    pub(crate) fn required(&self) -> &[Platform] {
        match self {
            Current::Read { offered, .. } => offered,
            _ => &[],
        }
    }

    /// The required platforms `candidate` lacks, joined for a sentence, if any.
    pub(crate) fn missing_in(&self, candidate: &Meta) -> Option<String> {
        let missing = candidate.missing_platforms(self.required());
        (!missing.is_empty()).then(|| join(missing.iter().copied()))
    }
}

/// The platforms `meta` offers, each once, in its order (a set sees the repeats, so the
/// cost is linear in the builds).
pub fn offered(meta: &Meta) -> Vec<Platform> {
    let mut seen: std::collections::HashSet<&Platform> = std::collections::HashSet::new();
    meta.builds
        .iter()
        .filter_map(|b| b.platform.as_ref())
        .filter(|p| seen.insert(*p))
        .cloned()
        .collect()
}

/// Whether each platform of `run` has the same image (per-platform manifest digest) in
/// `old` and in `new`. A platform one of them lacks is a change.
pub fn same_for(run: &[Platform], old: &Meta, new: &Meta) -> bool {
    let image = |m: &Meta, w: &Platform| {
        m.builds
            .iter()
            .find(|b| b.platform.as_ref().is_some_and(|p| p.satisfies(w)))
            .and_then(|b| b.digest.clone())
    };
    run.iter().all(|w| match (image(old, w), image(new, w)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    })
}

/// The platforms whose image differs between `old` and `new` (added, removed, or another
/// digest), each once: `new`'s order, then those only `old` has.
pub fn changed(old: &Meta, new: &Meta) -> Vec<Platform> {
    let digest_for = |m: &Meta, p: &Platform| {
        m.builds
            .iter()
            .find(|b| b.platform.as_ref() == Some(p))
            .map(|b| b.digest.clone())
    };
    let mut out: Vec<Platform> = Vec::new();
    let mut seen: std::collections::HashSet<Platform> = std::collections::HashSet::new();
    for (from, to) in [(new, old), (old, new)] {
        for p in offered(from) {
            if digest_for(from, &p) != digest_for(to, &p) && seen.insert(p.clone()) {
                out.push(p);
            }
        }
    }
    out
}

/// Platforms as a sentence shows them: `linux/arm64, linux/s390x`.
pub fn join<'a>(platforms: impl IntoIterator<Item = &'a Platform>) -> String {
    platforms
        .into_iter()
        .map(Platform::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidate::Build;

    fn meta(entries: &[(&str, &str)]) -> Meta {
        Meta {
            digest: "sha256:index".into(),
            builds: entries
                .iter()
                .map(|(p, d)| Build {
                    platform: Some(p.parse().unwrap()),
                    created: None,
                    digest: Some((*d).into()),
                })
                .collect(),
        }
    }

    fn platforms(list: &[&str]) -> Vec<Platform> {
        list.iter().map(|p| p.parse().unwrap()).collect()
    }

    #[test]
    fn any_stands_alone() {
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(!compile_any(None).unwrap());
        assert!(!compile_any(Some(&list(&["linux/amd64"]))).unwrap());
        assert!(compile_any(Some(&list(&["any"]))).unwrap());
        let err = compile_any(Some(&list(&["any", "linux/amd64"]))).unwrap_err();
        assert_eq!(err.key, "platforms");
        assert_eq!(
            err.message,
            "`any` stands alone: it requires no platform at all"
        );
    }

    #[test]
    fn a_candidate_lacking_an_offered_platform_is_named() {
        let current = meta(&[("linux/amd64", "a"), ("linux/arm64/v8", "b")]);
        let read = Current::Read {
            offered: offered(&current),
            meta: current,
        };
        assert_eq!(
            read.missing_in(&meta(&[("linux/amd64", "c"), ("linux/s390x", "d")])),
            Some("linux/arm64/v8".into())
        );
        // An entry without a variant is arm64's default one, v8.
        assert_eq!(
            read.missing_in(&meta(&[("linux/arm64", "c"), ("linux/amd64", "d")])),
            None
        );
        assert_eq!(Current::Unread.missing_in(&meta(&[])), None);
    }

    #[test]
    fn only_the_run_platforms_images_count() {
        let old = meta(&[
            ("linux/amd64", "a"),
            ("linux/arm64", "b"),
            ("linux/s390x", "c"),
        ]);
        let new = meta(&[
            ("linux/amd64", "a"),
            ("linux/arm64", "b"),
            ("linux/s390x", "x"),
        ]);
        let run = platforms(&["linux/amd64", "linux/arm64"]);
        assert!(same_for(&run, &old, &new));
        assert_eq!(join(&changed(&old, &new)), "linux/s390x");
        assert!(!same_for(&platforms(&["linux/s390x"]), &old, &new));
        // A run platform newly offered, or dropped, is a change.
        let added = meta(&[("linux/amd64", "a")]);
        assert!(!same_for(&platforms(&["linux/arm64"]), &added, &new));
        assert_eq!(join(&changed(&added, &new)), "linux/arm64, linux/s390x");
        assert_eq!(join(&changed(&new, &added)), "linux/arm64, linux/s390x");
    }
}
