//! The `semver` strategy: tags read as versions, with imagebump's variant rule.
//!
//! A tag is a version when it is an optional `v`, one to three numeric parts, an optional
//! `-suffix` and an optional `+build`; the `v` is spelling, not version (`1.2.0` may move to
//! `v1.3.0`; between equal versions the current spelling wins). The suffix is a pre-release when it is a pre-release
//! word (`rc`, `alpha`, `beta`, `pre`, `preview`, `dev`, `snapshot`, then digits or dots);
//! any other suffix (`alpine`, `bookworm`, `debian-12`) is a *variant*. A reference only
//! moves to tags of the same variant and the same precision (a current `1.2` moves to `1.3`,
//! not `1.3.0`; never to a shorter tag such as `2`, which is a moving alias). Only when the
//! registry lists no tag at all of the current precision and variant does it move to longer
//! tags; that keeps repeated runs convergent (`0.9` → `0.11`, then stays, even if `1.0.0`
//! exists). Pre-releases are never chosen. Never downgrades.

use std::cmp::Ordering;
use std::sync::LazyLock;

use regex::Regex;
use semver::{Prerelease, Version};

use super::Choice;

static PRE_WORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(alpha|beta|rc|pre|preview|dev|snapshot)[0-9.]*$").expect("static regex")
});

/// A tag read as a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagVersion {
    pub v_prefix: bool,
    /// Number of numeric parts written (1 to 3).
    pub precision: usize,
    pub version: Version,
    /// A non-pre-release suffix such as `alpine`.
    pub variant: Option<String>,
}

impl TagVersion {
    pub fn parse(tag: &str) -> Option<TagVersion> {
        let (v_prefix, rest) = match tag.strip_prefix('v') {
            Some(r) => (true, r),
            None => (false, tag),
        };
        let rest = rest.split_once('+').map_or(rest, |(r, _)| r);
        let (numbers, suffix) = match rest.split_once('-') {
            Some((n, s)) if !s.is_empty() => (n, Some(s)),
            Some(_) => return None,
            None => (rest, None),
        };
        let parts: Vec<u64> = numbers
            .split('.')
            .map(|p| {
                if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                    None
                } else {
                    p.parse().ok()
                }
            })
            .collect::<Option<_>>()?;
        if parts.is_empty() || parts.len() > 3 {
            return None;
        }
        let mut version = Version::new(
            parts[0],
            *parts.get(1).unwrap_or(&0),
            *parts.get(2).unwrap_or(&0),
        );
        let mut variant = None;
        if let Some(s) = suffix {
            if PRE_WORD.is_match(s) {
                version.pre = Prerelease::new(&s.to_ascii_lowercase()).ok()?;
            } else {
                variant = Some(s.to_string());
            }
        }
        Some(TagVersion {
            v_prefix,
            precision: parts.len(),
            version,
            variant,
        })
    }

    pub fn is_prerelease(&self) -> bool {
        !self.version.pre.is_empty()
    }
}

pub fn cannot_judge(current: &str) -> Option<String> {
    match TagVersion::parse(current) {
        Some(_) => None,
        None => Some(format!(
            "current tag {current:?} is not a version (semver strategy)"
        )),
    }
}

pub fn choose(current: &str, tags: &[String]) -> Choice {
    let Some(cur) = TagVersion::parse(current) else {
        return Choice::Skip(cannot_judge(current).unwrap_or_default());
    };
    let series: Vec<(TagVersion, &String)> = tags
        .iter()
        .filter_map(|t| TagVersion::parse(t).map(|v| (v, t)))
        .filter(|(v, _)| !v.is_prerelease() && v.variant == cur.variant)
        .collect();
    // Precision belongs to the tag series: while the registry publishes tags of the current
    // precision, stay in it (so repeated runs converge); longer tags only when it does not.
    let same_precision = series.iter().any(|(v, _)| v.precision == cur.precision);
    let best = series
        .into_iter()
        .filter(|(v, _)| v.version > cur.version)
        .filter(|(v, _)| {
            if same_precision {
                v.precision == cur.precision
            } else {
                v.precision > cur.precision
            }
        })
        .max_by(|(a, at), (b, bt)| {
            a.version
                .cmp(&b.version)
                .then_with(|| (a.v_prefix == cur.v_prefix).cmp(&(b.v_prefix == cur.v_prefix)))
                .then_with(|| at.cmp(bt))
        });
    match best {
        Some((_, tag)) => Choice::Update(tag.clone()),
        None => Choice::Current,
    }
}

/// Order two tags as versions (used for "never downgrade" checks by other stages).
pub fn compare(a: &str, b: &str) -> Option<Ordering> {
    Some(
        TagVersion::parse(a)?
            .version
            .cmp(&TagVersion::parse(b)?.version),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(current: &str, tags: &[&str]) -> Choice {
        choose(
            current,
            &tags.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
        )
    }

    fn update(t: &str) -> Choice {
        Choice::Update(t.into())
    }

    #[test]
    fn parses_versions() {
        let v = TagVersion::parse("v1.2").unwrap();
        assert!(v.v_prefix);
        assert_eq!(v.precision, 2);
        assert_eq!(v.version, Version::new(1, 2, 0));
        assert_eq!(
            TagVersion::parse("1.2.3-alpine")
                .unwrap()
                .variant
                .as_deref(),
            Some("alpine")
        );
        assert!(TagVersion::parse("1.2.3-rc.1").unwrap().is_prerelease());
        assert!(TagVersion::parse("1.2.3-RC1").unwrap().is_prerelease());
        assert_eq!(
            TagVersion::parse("01.002.3").unwrap().version,
            Version::new(1, 2, 3)
        );
        for bad in [
            "latest",
            "main",
            "sha-abc1234",
            "1.2.3.4",
            "1..2",
            "v",
            "1.2-",
            "x1.2",
        ] {
            assert_eq!(TagVersion::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn highest_stable_above_current() {
        let tags = ["1.2.0", "1.3.0", "2.0.0", "2.1.0-rc.1", "latest", "1.1.0"];
        assert_eq!(pick("1.2.0", &tags), update("2.0.0"));
        assert_eq!(pick("2.0.0", &tags), Choice::Current);
    }

    #[test]
    fn variants_stay_variants() {
        let tags = [
            "1.25.3-alpine",
            "1.27.0",
            "1.27.0-alpine",
            "1.26.0-bookworm",
        ];
        assert_eq!(pick("1.25.3-alpine", &tags), update("1.27.0-alpine"));
        assert_eq!(
            pick("1.25.3", &["1.26.0-alpine", "1.25.4"]),
            update("1.25.4")
        );
        assert_eq!(pick("1.25.3", &["1.26.0-alpine"]), Choice::Current);
    }

    #[test]
    fn precision_is_kept_when_possible() {
        assert_eq!(pick("1.2", &["1.3", "1.3.1", "1.4.0"]), update("1.3"));
        assert_eq!(pick("1.2", &["1.3.1", "1.4.0"]), update("1.4.0"));
        assert_eq!(pick("1.2.0", &["2", "1.3"]), Choice::Current);
    }

    #[test]
    fn repeated_runs_converge() {
        let tags = ["0.9", "0.10", "0.11", "1.0.0"];
        assert_eq!(pick("0.9", &tags), update("0.11"));
        assert_eq!(pick("0.11", &tags), Choice::Current);
    }

    #[test]
    fn v_prefix_is_spelling() {
        assert_eq!(pick("v1.2.0", &["1.9.0", "v1.3.0"]), update("1.9.0"));
        assert_eq!(pick("1.2.0", &["v1.9.0", "1.3.0"]), update("v1.9.0"));
        assert_eq!(pick("1.2.0", &["v1.9.0", "1.9.0"]), update("1.9.0"));
        assert_eq!(pick("v1.2.0", &["v1.9.0", "1.9.0"]), update("v1.9.0"));
    }

    #[test]
    fn never_downgrades_and_skips_non_versions() {
        assert_eq!(pick("3.0.0", &["1.0.0", "2.9.9"]), Choice::Current);
        assert!(matches!(pick("latest", &["1.0.0"]), Choice::Skip(_)));
    }

    #[test]
    fn prerelease_current_moves_to_its_release() {
        assert_eq!(
            pick("1.2.0-rc.1", &["1.2.0", "1.2.0-rc.2"]),
            update("1.2.0")
        );
    }

    #[test]
    fn equal_versions_prefer_the_greater_spelling() {
        assert_eq!(pick("1.0.0", &["1.1.0", "01.1.0"]), update("1.1.0"));
    }
}
