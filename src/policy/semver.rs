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
//! exists). Pre-releases are chosen only when the constraint has a pre-release part (as in
//! Masterminds). Never downgrades (unless `allowDowngrade`).
//!
//! `semverMode: masterminds` reads tags as argocd-image-updater does: every suffix is a
//! pre-release, and precision does not matter.

use std::sync::LazyLock;

use regex::Regex;
use semver::{Prerelease, Version};

use super::evaluate::{Key, Verdict};
use super::SemverMode;

// why: a constant pattern; every unit test reading a pre-release tag (`1.2.3-rc.1`) compiles
// it, so a typo fails the tests rather than a run.
#[allow(clippy::expect_used)]
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
        let mut version = match *parts.as_slice() {
            [major] => Version::new(major, 0, 0),
            [major, minor] => Version::new(major, minor, 0),
            [major, minor, patch] => Version::new(major, minor, patch),
            _ => return None,
        };
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

    /// Read `tag` the way `mode` does: in Masterminds mode every suffix is a pre-release.
    pub fn parse_in(mode: SemverMode, tag: &str) -> Option<TagVersion> {
        match mode {
            SemverMode::Variant => TagVersion::parse(tag),
            SemverMode::Masterminds => {
                let version = super::constraint::parse_version(tag)?;
                let numbers = tag.trim_start_matches('v');
                let numbers = numbers.split(['-', '+']).next().unwrap_or_default();
                Some(TagVersion {
                    v_prefix: tag.starts_with('v'),
                    precision: numbers.split('.').count(),
                    version,
                    variant: None,
                })
            }
        }
    }

    pub fn is_prerelease(&self) -> bool {
        !self.version.pre.is_empty()
    }
}

/// How the `semver` strategy reads tags, given the current tag and the whole list.
pub struct Series {
    mode: SemverMode,
    current: TagVersion,
    /// Variant mode: the registry lists tags of the current precision and variant, so
    /// candidates must have that precision (otherwise they must be longer).
    same_precision: bool,
}

impl Series {
    /// `None` when the current tag is not a version in this mode.
    pub fn new(mode: SemverMode, current: &str, tags: &[String]) -> Option<Series> {
        let current = TagVersion::parse_in(mode, current)?;
        let same_precision = mode == SemverMode::Variant
            && tags.iter().any(|t| {
                TagVersion::parse(t).is_some_and(|v| {
                    !v.is_prerelease()
                        && v.variant == current.variant
                        && v.precision == current.precision
                })
            });
        Some(Series {
            mode,
            current,
            same_precision,
        })
    }

    pub fn current(&self) -> &TagVersion {
        &self.current
    }

    /// The tag's sort key, or why it is not a candidate of this series. Pre-releases are
    /// judged here only when `allow_pre` is false (the constraint has no pre-release part).
    pub fn judge<'t>(&self, tag: &'t str, allow_pre: bool) -> Result<Key<'t>, Verdict> {
        let v = TagVersion::parse_in(self.mode, tag).ok_or(Verdict::NotAVersion)?;
        if self.mode == SemverMode::Variant {
            if v.variant != self.current.variant {
                return Err(Verdict::OtherVariant);
            }
            let precision_ok = if self.same_precision {
                v.precision == self.current.precision
            } else {
                v.precision > self.current.precision
            };
            if !precision_ok {
                return Err(Verdict::OtherPrecision);
            }
        }
        if v.is_prerelease() && !allow_pre {
            return Err(Verdict::Prerelease);
        }
        Ok(Key::Version(
            v.version,
            v.v_prefix == self.current.v_prefix,
            tag,
        ))
    }

    /// The current tag's key, for "never downgrade".
    pub fn current_key<'t>(&self, tag: &'t str) -> Key<'t> {
        Key::Version(self.current.version.clone(), true, tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::policy::evaluate::{choose_offline, Choice};
    use crate::policy::Policy;

    fn pick(current: &str, tags: &[&str]) -> Choice {
        choose_offline(
            &Policy::default(),
            current,
            &tags.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
        )
    }

    fn update(t: &str) -> Choice {
        Choice::Update {
            tag: t.into(),
            digest: None,
        }
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
