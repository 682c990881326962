//! The `semver` strategy: tags read as versions, with imagebump's variant rule.
//!
//! A tag is a version when it is an optional `v`, one to four numeric parts separated by
//! dots (or a dashed date such as `2026-05-01`), an optional `-suffix` and an optional
//! `+build`. Every version has a *shape*: one to three dotted parts whose first is not a
//! four-digit year are plain semantic versions, where the `v` is spelling (`1.2.0` may move
//! to `v1.3.0`; between equal versions the current spelling wins) and precision may grow
//! (below). Calendar versions (a four-digit year first: `2024.05.01`, `2026-05-01`) and
//! four-part versions (`v1.2.3.4`) only compete with tags of exactly their shape: the same
//! prefix, number of parts and separator.
//!
//! The suffix is a pre-release when it is a pre-release word (`rc`, `alpha`, `beta`, `pre`,
//! `preview`, `dev`, `snapshot`, then digits or dots); any other suffix (`alpine`,
//! `bookworm`, `debian-12`) is a *variant*. A variant whose last `-` segment is `rN`
//! (`debian-12-r10`, Bitnami's distribution and revision) is a distribution with a revision:
//! the revision orders tags of one version (`r10` above `r9`) and the distribution must
//! match like any variant. A reference only moves to tags of the same variant (with a
//! revision exactly when it has one) and the same precision (a current `1.2` moves to
//! `1.3`, not `1.3.0`; never to a shorter tag such as `2`, which is a moving alias). Only
//! when the registry lists no tag at all of the current precision and variant does it move
//! to longer tags; that keeps repeated runs convergent (`0.9` → `0.11`, then stays, even if
//! `1.0.0` exists). Pre-releases are chosen only when the constraint has a pre-release part
//! (as in Masterminds). Never downgrades (unless `allowDowngrade`).
//!
//! `semverMode: masterminds` reads tags as argocd-image-updater does: every suffix is a
//! pre-release, precision does not matter, and there are no other shapes.

use std::cmp::Ordering;
use std::sync::LazyLock;

use regex::Regex;
use semver::{Prerelease, Version};

use crate::candidate::{rank_order, Key, Rank, Verdict};
use crate::strategy::Strategy;
use crate::SemverMode;

// why: a constant pattern; every unit test reading a pre-release tag (`1.2.3-rc.1`) compiles
// it, so a typo fails the tests rather than a run.
#[allow(clippy::expect_used)]
static PRE_WORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(alpha|beta|rc|pre|preview|dev|snapshot)[0-9.]*$").expect("static regex")
});

/// How a tag's numbers are written, as far as it decides which tags compete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One to three dotted parts, the first not a four-digit year: a semantic version.
    /// The `v` is spelling and the precision rules apply.
    Semver,
    /// A calendar version or a four-part version: only exactly this shape competes.
    Exact {
        v_prefix: bool,
        parts: usize,
        calendar: bool,
        dashes: bool,
    },
}

/// A tag read as a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagVersion {
    pub v_prefix: bool,
    /// Number of numeric parts written (1 to 4).
    pub precision: usize,
    pub version: Version,
    /// The fourth numeric part (`v1.2.3.4`), 0 when there is none.
    pub fourth: u64,
    /// A non-pre-release suffix such as `alpine`; for a suffix ending in a revision
    /// (`debian-12-r10`), the distribution before it (`debian-12`; none for a bare `r3`).
    pub variant: Option<String>,
    /// The revision of a suffix ending in `-rN` (or a bare `rN`): `debian-12-r10` is 10.
    pub revision: Option<u64>,
    /// The first part is a four-digit year (`2024.05.01`, `2026-05-01`).
    pub calendar: bool,
    /// The parts are separated by dashes (`2026-05-01`).
    pub dashes: bool,
}

/// `true` for a part written as a four-digit year (1000 to 9999).
fn is_year(part: &str) -> bool {
    part.len() == 4 && part.bytes().all(|b| b.is_ascii_digit()) && !part.starts_with('0')
}

/// Numeric parts separated by `sep`, digits only, and how many there are; `None` if any
/// is empty or not a number, or there are more than four (no version has more). Read byte
/// by byte, in place: every tag of every listed repository comes here, once per reference
/// group (hundreds of thousands of tags in a large run).
fn numbers(text: &str, sep: u8) -> Option<([u64; 4], usize)> {
    let mut parts = [0u64; 4];
    let mut count = 0usize;
    let (mut value, mut digits) = (0u64, 0usize);
    for &b in text.as_bytes() {
        if b == sep {
            if digits == 0 {
                return None;
            }
            *parts.get_mut(count)? = value;
            count = count.saturating_add(1);
            (value, digits) = (0, 0);
        } else if b.is_ascii_digit() {
            value = value
                .checked_mul(10)?
                .checked_add(u64::from(b.wrapping_sub(b'0')))?;
            digits = digits.saturating_add(1);
        } else {
            return None;
        }
    }
    if digits == 0 {
        return None;
    }
    *parts.get_mut(count)? = value;
    Some((parts, count.saturating_add(1)))
}

/// `text` split at the first `sep` byte (an ASCII separator), like `split_once` without a
/// pattern searcher.
fn split_byte(text: &str, sep: u8) -> Option<(&str, &str)> {
    let at = text.bytes().position(|b| b == sep)?;
    Some((text.get(..at)?, text.get(at.saturating_add(1)..)?))
}

/// The text before the first `sep` byte, or all of it.
fn first_part(text: &str, sep: u8) -> &str {
    split_byte(text, sep).map_or(text, |(first, _)| first)
}

/// The version and fourth part of one to four numeric parts.
fn from_parts(parts: &[u64]) -> Option<(Version, u64)> {
    match *parts {
        [major] => Some((Version::new(major, 0, 0), 0)),
        [major, minor] => Some((Version::new(major, minor, 0), 0)),
        [major, minor, patch] => Some((Version::new(major, minor, patch), 0)),
        [major, minor, patch, fourth] => Some((Version::new(major, minor, patch), fourth)),
        _ => None,
    }
}

/// A suffix ending in a revision: (distribution, revision). `debian-12-r10` is
/// (`debian-12`, 10), `r3` is (none, 3).
fn split_revision(suffix: &str) -> Option<(Option<&str>, u64)> {
    let (stem, last) = match suffix.rsplit_once('-') {
        Some((stem, last)) if !stem.is_empty() => (Some(stem), last),
        Some(_) => return None,
        None => (None, suffix),
    };
    let digits = last.strip_prefix('r')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stem, digits.parse().ok()?))
}

impl TagVersion {
    pub fn parse(tag: &str) -> Option<TagVersion> {
        let (v_prefix, rest) = match tag.strip_prefix('v') {
            Some(r) => (true, r),
            None => (false, tag),
        };
        let rest = first_part(rest, b'+');
        if let Some(dated) = Self::dashed(v_prefix, rest) {
            return Some(dated);
        }
        let (text, suffix) = match split_byte(rest, b'-') {
            Some((n, s)) if !s.is_empty() => (n, Some(s)),
            Some(_) => return None,
            None => (rest, None),
        };
        let (parts, count) = numbers(text, b'.')?;
        let (version, fourth) = from_parts(parts.get(..count)?)?;
        let mut tv = TagVersion {
            v_prefix,
            precision: count,
            version,
            fourth,
            variant: None,
            revision: None,
            calendar: is_year(first_part(text, b'.')),
            dashes: false,
        };
        if let Some(s) = suffix {
            tv.read_suffix(s)?;
        }
        Some(tv)
    }

    /// A date written with dashes (`2026-05-01`, `2026-05`): a four-digit year, then one to
    /// three more numeric parts, nothing else.
    fn dashed(v_prefix: bool, text: &str) -> Option<TagVersion> {
        if !is_year(first_part(text, b'-')) {
            return None;
        }
        let (parts, count) = numbers(text, b'-')?;
        if count < 2 {
            return None;
        }
        let (version, fourth) = from_parts(parts.get(..count)?)?;
        Some(TagVersion {
            v_prefix,
            precision: count,
            version,
            fourth,
            variant: None,
            revision: None,
            calendar: true,
            dashes: true,
        })
    }

    /// Read `suffix` as a pre-release, a distribution with a revision, or a variant.
    fn read_suffix(&mut self, suffix: &str) -> Option<()> {
        if PRE_WORD.is_match(suffix) {
            self.version.pre = Prerelease::new(&suffix.to_ascii_lowercase()).ok()?;
        } else if let Some((stem, revision)) = split_revision(suffix) {
            self.variant = stem.map(str::to_string);
            self.revision = Some(revision);
        } else {
            self.variant = Some(suffix.to_string());
        }
        Some(())
    }

    /// Read `tag` the way `mode` does: in Masterminds mode every suffix is a pre-release.
    pub fn parse_in(mode: SemverMode, tag: &str) -> Option<TagVersion> {
        match mode {
            SemverMode::Variant => TagVersion::parse(tag),
            SemverMode::Masterminds => {
                let version = crate::constraint::parse_version(tag)?;
                let numbers = tag.trim_start_matches('v');
                let numbers = numbers.split(['-', '+']).next().unwrap_or_default();
                Some(TagVersion {
                    v_prefix: tag.starts_with('v'),
                    precision: numbers.split('.').count(),
                    version,
                    fourth: 0,
                    variant: None,
                    revision: None,
                    calendar: false,
                    dashes: false,
                })
            }
        }
    }

    pub fn is_prerelease(&self) -> bool {
        !self.version.pre.is_empty()
    }

    /// How the tag is ordered.
    pub fn rank(&self) -> Rank {
        Rank {
            version: self.version.clone(),
            fourth: self.fourth,
            revision: self.revision.unwrap_or(0),
        }
    }

    pub fn shape(&self) -> Shape {
        if !self.calendar && !self.dashes && self.precision <= 3 {
            return Shape::Semver;
        }
        Shape::Exact {
            v_prefix: self.v_prefix,
            parts: self.precision,
            calendar: self.calendar,
            dashes: self.dashes,
        }
    }

    /// The shape as a pattern, for explanations: `N.N.N`, `vN.N.N.N`, `YYYY-N-N`.
    pub fn pattern(&self) -> String {
        let sep = if self.dashes { "-" } else { "." };
        let first = if self.calendar { "YYYY" } else { "N" };
        let mut out = String::from(if self.v_prefix { "v" } else { "" });
        out.push_str(first);
        for _ in 1..self.precision {
            out.push_str(sep);
            out.push('N');
        }
        out
    }

    /// Same variant (or distribution), and a revision exactly when `other` has one.
    pub fn same_suffix(&self, other: &TagVersion) -> bool {
        self.variant == other.variant && self.revision.is_some() == other.revision.is_some()
    }
}

/// A repository's tags read as versions once, in list order (`None`: not a version in
/// `mode`), shared by the evaluations of all its references instead of each reading every
/// tag again. Held only while that repository is being decided.
pub struct TagVersions {
    mode: SemverMode,
    versions: Vec<Option<TagVersion>>,
    /// Each version's place among the list's versions by [`Rank`], lowest first (equal
    /// ranks share a place; `u32::MAX`: not a version): the evaluations of a repository's
    /// references sort their candidates by it instead of comparing versions again, each.
    places: Vec<u32>,
    /// The versions' indexes, highest place first (a place's versions in no set order: an
    /// evaluation sorts those few by their keys): an evaluation takes its candidates in this
    /// order instead of sorting them, each.
    best: Vec<u32>,
}

impl TagVersions {
    pub fn read(mode: SemverMode, tags: &[String]) -> TagVersions {
        let versions: Vec<Option<TagVersion>> =
            tags.iter().map(|t| TagVersion::parse_in(mode, t)).collect();
        let (places, best) = places(&versions);
        TagVersions {
            mode,
            versions,
            places,
            best,
        }
    }

    /// The places of the versions and their indexes best first (see the fields), when they
    /// were read in `mode`.
    pub fn places(&self, mode: SemverMode) -> Option<(&[u32], &[u32])> {
        (self.mode == mode).then_some((&self.places, &self.best))
    }

    /// The versions, when they were read in `mode` (`None`: read the tags themselves).
    fn in_mode(&self, mode: SemverMode) -> Option<&[Option<TagVersion>]> {
        (self.mode == mode).then_some(&self.versions)
    }

    /// The version of the `i`-th tag, when these versions were read in `mode`.
    fn get(&self, mode: SemverMode, i: usize) -> Option<Option<&TagVersion>> {
        self.in_mode(mode)
            .map(|versions| versions.get(i).and_then(Option::as_ref))
    }
}

/// Each version's place by [`Rank`], lowest first, equal ranks sharing one; `u32::MAX` for
/// a tag that is not a version.
fn places(versions: &[Option<TagVersion>]) -> (Vec<u32>, Vec<u32>) {
    // The versions by reference, sorted as their ranks would be (without making them).
    fn parts(v: &TagVersion) -> (&Version, u64, u64) {
        (&v.version, v.fourth, v.revision.unwrap_or(0))
    }
    let mut ranked: Vec<(&TagVersion, usize)> = versions
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.as_ref().map(|v| (v, i)))
        .collect();
    ranked.sort_unstable_by(|a, b| rank_order(parts(a.0), parts(b.0)));
    let mut places = vec![u32::MAX; versions.len()];
    let (mut place, mut before) = (0u32, None);
    for &(v, i) in &ranked {
        if before.is_some_and(|b| rank_order(parts(b), parts(v)) != Ordering::Equal) {
            place = place.saturating_add(1);
        }
        if let Some(p) = places.get_mut(i) {
            *p = place;
        }
        before = Some(v);
    }
    // Sorted by rank already: the highest place last.
    let best = ranked
        .iter()
        .rev()
        .filter_map(|&(_, i)| u32::try_from(i).ok())
        .collect();
    (places, best)
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
        Series::new_read(mode, current, tags, None)
    }

    /// As [`Series::new`], with the tags' versions read already.
    pub fn new_read(
        mode: SemverMode,
        current: &str,
        tags: &[String],
        read: Option<&TagVersions>,
    ) -> Option<Series> {
        let current = TagVersion::parse_in(mode, current)?;
        let same_kind = |v: &TagVersion| {
            !v.is_prerelease()
                && v.same_suffix(&current)
                && v.shape() == current.shape()
                && v.precision == current.precision
        };
        let same_precision = mode == SemverMode::Variant
            && match read.and_then(|r| r.in_mode(SemverMode::Variant)) {
                Some(versions) => versions.iter().flatten().any(same_kind),
                None => tags
                    .iter()
                    .any(|t| TagVersion::parse(t).is_some_and(|v| same_kind(&v))),
            };
        Some(Series {
            mode,
            current,
            same_precision,
        })
    }

    pub fn current(&self) -> &TagVersion {
        &self.current
    }

    /// With no current tag: the series of the newest version among `tags` that `accept`
    /// takes (the policy's constraint and filters), preferring, among equal versions, one
    /// without a variant and then the most numeric parts (`1.27.3` over `1.27.3-alpine` and
    /// `1.27`). The series' current version is below every version of that shape, so each
    /// candidate of the shape is judged as new. Returns the series and the tag it is
    /// shaped after; `None` when no tag is such a version.
    pub fn assumed(
        mode: SemverMode,
        tags: &[String],
        accept: impl Fn(&str, &TagVersion) -> bool,
    ) -> Option<(Series, &str)> {
        let newest = tags
            .iter()
            .filter_map(|t| Some((t, TagVersion::parse_in(mode, t)?)))
            .filter(|(t, v)| accept(t, v))
            .max_by(|(_, a), (_, b)| {
                a.rank()
                    .cmp(&b.rank())
                    .then(b.variant.is_some().cmp(&a.variant.is_some()))
                    .then(a.precision.cmp(&b.precision))
            })?;
        let (tag, basis) = newest;
        let floor = TagVersion {
            version: Version::new(0, 0, 0),
            fourth: 0,
            revision: basis.revision.map(|_| 0),
            ..basis
        };
        let series = Series {
            mode,
            current: floor,
            same_precision: true,
        };
        Some((series, tag.as_str()))
    }

    /// The tag's sort key, or why it is not a candidate of this series. Pre-releases are
    /// judged here only when `allow_pre` is false (the constraint has no pre-release part).
    pub fn judge<'t>(&self, tag: &'t str, allow_pre: bool) -> Result<Key<'t>, Verdict> {
        self.judge_read(tag, None, allow_pre)
    }

    /// As [`Series::judge`], with the tag's version read already when `read` has it (the
    /// tag is `read`'s `i`-th).
    pub fn judge_read<'t>(
        &self,
        tag: &'t str,
        read: Option<(&TagVersions, usize)>,
        allow_pre: bool,
    ) -> Result<Key<'t>, Verdict> {
        let parsed;
        let v = match read.and_then(|(r, i)| r.get(self.mode, i)) {
            Some(v) => v.ok_or(Verdict::NotAVersion)?,
            None => {
                parsed = TagVersion::parse_in(self.mode, tag).ok_or(Verdict::NotAVersion)?;
                &parsed
            }
        };
        if self.mode == SemverMode::Variant {
            self.same_kind(v)?;
        }
        if v.is_prerelease() && !allow_pre {
            return Err(Verdict::Prerelease);
        }
        Ok(Key::Version(
            v.rank(),
            v.v_prefix == self.current.v_prefix,
            tag,
        ))
    }

    /// Variant mode: is `v` of the current tag's shape, variant and precision?
    fn same_kind(&self, v: &TagVersion) -> Result<(), Verdict> {
        let cur = &self.current;
        if v.shape() != cur.shape() {
            return Err(Verdict::OtherShape);
        }
        if !v.same_suffix(cur) {
            return Err(Verdict::OtherVariant);
        }
        // An exact shape has its number of parts; precision only varies in semantic versions.
        let precision_ok = if self.same_precision {
            v.precision == cur.precision
        } else {
            v.precision > cur.precision
        };
        if !precision_ok {
            return Err(Verdict::OtherPrecision);
        }
        Ok(())
    }

    /// Is `tag` of the current tag's kind (shape and variant), whatever its precision? Used
    /// to rank rejected versions.
    pub fn comparable(&self, v: &TagVersion) -> bool {
        self.mode == SemverMode::Masterminds
            || (v.shape() == self.current.shape() && v.same_suffix(&self.current))
    }

    /// How this series reads tags.
    pub fn mode(&self) -> SemverMode {
        self.mode
    }

    /// The current tag's key, for "never downgrade".
    pub fn current_key<'t>(&self, tag: &'t str) -> Key<'t> {
        Key::Version(self.current.rank(), true, tag)
    }
}

/// Tags read as versions in one mode, of the current tag's series.
pub struct Semver {
    mode: SemverMode,
    /// `None` when the current tag is not a version in this mode.
    series: Option<Series>,
    /// With no current tag, the tag the series is shaped after.
    assumed: Option<String>,
    /// Made by [`Semver::assumed`]: there is no current tag to speak of.
    as_new: bool,
}

impl Semver {
    /// The strategy for `current` among `tags` (`read`: their versions, read already).
    pub fn new(
        mode: SemverMode,
        current: &str,
        tags: &[String],
        read: Option<&TagVersions>,
    ) -> Semver {
        Semver {
            mode,
            series: Series::new_read(mode, current, tags, read),
            assumed: None,
            as_new: false,
        }
    }

    /// The strategy with no current tag, every candidate judged as new: the series of
    /// [`Series::assumed`] (`None` there: nothing can be judged).
    pub fn assumed(mode: SemverMode, assumed: Option<(Series, &str)>) -> Semver {
        let (series, tag) = assumed.unzip();
        Semver {
            mode,
            series,
            assumed: tag.map(str::to_string),
            as_new: true,
        }
    }
}

impl Strategy for Semver {
    fn cannot_judge(&self, current: &str) -> Option<String> {
        if self.as_new {
            return self
                .series
                .is_none()
                .then(|| "no tag is a version the policy accepts (semver strategy)".to_string());
        }
        self.series
            .is_none()
            .then(|| format!("current tag {current:?} is not a version (semver strategy)"))
    }

    fn current_key<'t>(&self, current: &'t str) -> Option<Key<'t>> {
        Some(self.series.as_ref()?.current_key(current))
    }

    fn key<'t>(
        &self,
        tag: &'t str,
        read: Option<(&TagVersions, usize)>,
        allow_pre: bool,
    ) -> Result<Key<'t>, Verdict> {
        match &self.series {
            Some(s) => s.judge_read(tag, read, allow_pre),
            None => Err(Verdict::NotAVersion),
        }
    }

    fn rank<'t>(&self, tag: &'t str) -> Option<Key<'t>> {
        let series = self.series.as_ref()?;
        let v = TagVersion::parse_in(self.mode, tag)?;
        series
            .comparable(&v)
            .then(|| Key::Version(v.rank(), true, ""))
    }

    fn places<'r>(&self, read: &'r TagVersions) -> Option<(&'r [u32], &'r [u32])> {
        read.places(self.series.as_ref()?.mode())
    }

    fn assumed(&self) -> Option<&str> {
        self.assumed.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::candidate::Choice;
    use crate::evaluate::choose_offline;

    proptest::proptest! {
        /// The byte-wise reading of numeric parts agrees with splitting the text and
        /// parsing each part, on any text of digits, separators and other characters.
        #[test]
        fn numbers_read_in_place_as_split_and_parsed(text in "[0-9.\\-a+é]{0,24}") {
            let split: Option<Vec<u64>> = text
                .split('.')
                .map(|p| {
                    (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                        .then(|| p.parse().ok())
                        .flatten()
                })
                .collect();
            let expected = split.filter(|parts| parts.len() <= 4);
            let got = numbers(&text, b'.').map(|(parts, n)| parts[..n].to_vec());
            proptest::prop_assert_eq!(got, expected);
            let first = text.split_once('-').map_or(text.as_str(), |(f, _)| f);
            proptest::prop_assert_eq!(first_part(&text, b'-'), first);
        }
    }
    use crate::Policy;

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
            "1.2.3.4.5",
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

    /// (current, constraint, listed tags, expected choice, the chosen tag's reason).
    type Row<'a> = (
        &'a str,
        Option<&'a str>,
        &'a [&'a str],
        Option<&'a str>,
        &'a str,
    );

    /// Runs every row through the evaluation `run` and `tags` use; a row's reason is the
    /// chosen tag's, or "" when nothing moves.
    fn check_table(rows: &[Row]) {
        use crate::{PolicySource, PolicySpec};
        for (current, constraint, listed, want, why) in rows {
            let spec = PolicySpec {
                constraint: constraint.map(str::to_string),
                ..Default::default()
            };
            let p = Policy::compile(spec, PolicySource::default()).unwrap();
            let list: Vec<String> = listed.iter().map(|t| t.to_string()).collect();
            let mut e = crate::evaluate::Evaluation::new(&p, current, None, &list);
            let got = e.decide();
            let reason = e
                .candidates()
                .into_iter()
                .find(|c| c.verdict == Verdict::Chosen)
                .map(|c| e.reason(c))
                .unwrap_or_default();
            let expected = want.map_or(Choice::Current, update);
            assert_eq!(
                (got, reason.as_str()),
                (expected, *why),
                "{current} in {listed:?}"
            );
        }
    }

    #[test]
    fn parses_distributions_revisions_and_shapes() {
        let b = TagVersion::parse("15.4.0-debian-12-r10").unwrap();
        assert_eq!(
            (b.version.clone(), b.variant.as_deref(), b.revision),
            (Version::new(15, 4, 0), Some("debian-12"), Some(10))
        );
        assert_eq!(b.shape(), Shape::Semver);
        let bare = TagVersion::parse("3.18.4-r01").unwrap();
        assert_eq!((bare.variant, bare.revision), (None, Some(1)));
        // Not a revision: the variant is the whole suffix.
        for (tag, variant) in [
            ("1.2.3-debian-12-rc", "debian-12-rc"),
            ("1.2.3-r", "r"),
            ("1.2.3-debian-12-r1x", "debian-12-r1x"),
            ("1.2.3--r1", "-r1"),
        ] {
            let v = TagVersion::parse(tag).unwrap();
            assert_eq!(
                (v.variant.as_deref(), v.revision),
                (Some(variant), None),
                "{tag}"
            );
        }
        let four = TagVersion::parse("v1.2.3.4").unwrap();
        assert_eq!(
            (four.version.clone(), four.fourth),
            (Version::new(1, 2, 3), 4)
        );
        assert_eq!(four.pattern(), "vN.N.N.N");
        let dated = TagVersion::parse("2026-05-01").unwrap();
        assert_eq!(
            (dated.version.clone(), dated.variant),
            (Version::new(2026, 5, 1), None)
        );
        for (tag, pattern, exact) in [
            ("2026-05-01", "YYYY-N-N", true),
            ("2024.05.01", "YYYY.N.N", true),
            ("2024.05", "YYYY.N", true),
            ("v2024.05.01", "vYYYY.N.N", true),
            ("1.2.3.4", "N.N.N.N", true),
            ("24.04", "N.N", false),
            ("20260501", "N", false),
            ("0999.1.2", "N.N.N", false),
            ("v1.2.3", "vN.N.N", false),
        ] {
            let v = TagVersion::parse(tag).unwrap();
            assert_eq!(
                (v.pattern().as_str(), v.shape() != Shape::Semver),
                (pattern, exact),
                "{tag}"
            );
        }
        // A dash after a year that is not a date is read as before: a variant.
        assert_eq!(
            TagVersion::parse("2026-05-01-alpine")
                .unwrap()
                .variant
                .as_deref(),
            Some("05-01-alpine")
        );
    }

    const BITNAMI: &[&str] = &[
        "15.4.0-debian-12-r9",
        "15.4.0-debian-12-r10",
        "15.4.0-debian-12-r11",
        "15.4.0-debian-11-r30",
        "15.4.0",
        "15.4.1",
        "15.4.1-alpine",
        "15.4.1-debian-11-r0",
        "15.4",
        "15",
        "latest",
    ];

    #[test]
    fn bitnami_tags_move_within_their_distribution() {
        let with_newer: Vec<&str> = BITNAMI
            .iter()
            .copied()
            .chain([
                "15.4.1-debian-12-r0",
                "15.5.0-debian-12-r2",
                "16.1.0-debian-12-r0",
            ])
            .collect();
        check_table(&[
            // Only the revision moves when no newer version of this distribution exists.
            (
                "15.4.0-debian-12-r10",
                None,
                BITNAMI,
                Some("15.4.0-debian-12-r11"),
                "chosen: same version, newer revision",
            ),
            // A newer version wins over a newer revision; -r0 of it is fine.
            (
                "15.4.0-debian-12-r10",
                None,
                &with_newer,
                Some("16.1.0-debian-12-r0"),
                "chosen: newer version",
            ),
            // The constraint judges the version part.
            (
                "15.4.0-debian-12-r10",
                Some("~15.4"),
                &with_newer,
                Some("15.4.1-debian-12-r0"),
                "chosen: newer version",
            ),
            (
                "15.4.0-debian-12-r10",
                Some("<15.4.1"),
                &with_newer,
                Some("15.4.0-debian-12-r11"),
                "chosen: same version, newer revision",
            ),
            // Revisions are numbers: r10 > r9 (as text "r9" > "r10").
            (
                "15.4.0-debian-12-r9",
                None,
                &["15.4.0-debian-12-r10", "15.4.0-debian-12-r8"],
                Some("15.4.0-debian-12-r10"),
                "chosen: same version, newer revision",
            ),
            (
                "15.4.0-debian-12-r10",
                None,
                &["15.4.0-debian-12-r9", "15.4.0-debian-12-r010"],
                None,
                "",
            ),
        ]);
    }

    #[test]
    fn tags_keep_their_distribution_and_precision() {
        check_table(&[
            // Never another distribution, never a bare version, never a rolling -debian-12.
            (
                "15.4.0-debian-12-r10",
                None,
                &[
                    "16.0.0-debian-11-r1",
                    "16.0.0",
                    "16.0.0-alpine",
                    "16.0.0-debian-12",
                    "16.0.0-r3",
                ],
                None,
                "",
            ),
            // And the other way round.
            ("15.4.0", None, &["15.4.1-debian-12-r0"], None, ""),
            (
                "15.4.0-debian-12",
                None,
                &["15.4.1-debian-12-r0", "15.4.1-debian-12"],
                Some("15.4.1-debian-12"),
                "chosen",
            ),
            // A bare revision (Alpine packages' style) is a revision with no distribution.
            (
                "3.18.4-r0",
                None,
                &["3.18.4-r1", "3.18.5", "3.18.5-alpine-r0"],
                Some("3.18.4-r1"),
                "chosen: same version, newer revision",
            ),
            // Precision counts the version's parts: os-shell 12-debian-12-r33 stays at 1 part.
            (
                "12-debian-12-r33",
                None,
                &[
                    "12-debian-12-r35",
                    "12.1.0-debian-12-r0",
                    "12-debian-12-r33",
                ],
                Some("12-debian-12-r35"),
                "chosen: same version, newer revision",
            ),
            (
                "12-debian-12-r33",
                None,
                &["12.1.0-debian-12-r0"],
                Some("12.1.0-debian-12-r0"),
                "chosen: newer version",
            ),
        ]);
    }

    #[test]
    fn calendar_versions_move_within_their_shape() {
        check_table(&[
            (
                "2024.05.01",
                None,
                &[
                    "2024.05.02",
                    "2024.06.01",
                    "24.07",
                    "2024.07",
                    "2024.07.01.1",
                    "v2024.08.01",
                ],
                Some("2024.06.01"),
                "chosen",
            ),
            (
                "2026-05-01",
                None,
                &[
                    "2026-05-09",
                    "2026-05-10",
                    "2026.07.01",
                    "20260801",
                    "2026-07",
                    "2026-06-01-1",
                ],
                Some("2026-05-10"),
                "chosen",
            ),
            (
                "2026-05",
                None,
                &["2026-06", "2026-07-01"],
                Some("2026-06"),
                "chosen",
            ),
            // A variant must match within a shape too.
            (
                "2024.05.01-alpine",
                None,
                &["2024.06.01", "2024.06.01-alpine", "2024.07.01-bookworm"],
                Some("2024.06.01-alpine"),
                "chosen",
            ),
            // Two-digit years read as semantic versions: precision is kept.
            (
                "24.04",
                None,
                &["24.10", "25.04", "2025.01.01", "25.04.1"],
                Some("25.04"),
                "chosen",
            ),
            // A calendar version never competes with a semantic one.
            (
                "1.9.0",
                None,
                &["2.0.0", "2024.05.01", "2024-06-01"],
                Some("2.0.0"),
                "chosen",
            ),
            ("2024.05.01", None, &["9999.0.0-rc.1", "3.0.0"], None, ""),
            (
                "v2024.05.01",
                Some(">=2024.6"),
                &["v2024.05.09", "v2024.06.01", "2024.07.01"],
                Some("v2024.06.01"),
                "chosen",
            ),
        ]);
    }

    #[test]
    fn four_part_versions_move_within_their_shape() {
        check_table(&[
            (
                "v1.2.3.4",
                None,
                &[
                    "v1.2.3.5",
                    "v1.2.4.0",
                    "v1.3.0",
                    "1.2.5.0",
                    "v1.2.5",
                    "v1.2.5.0-rc.1",
                ],
                Some("v1.2.4.0"),
                "chosen",
            ),
            (
                "v1.2.3.9",
                None,
                &["v1.2.3.10", "v1.2.3.8"],
                Some("v1.2.3.10"),
                "chosen",
            ),
            (
                "v1.2.3.4",
                Some("~1.2"),
                &["v1.2.9.9", "v1.3.0.0"],
                Some("v1.2.9.9"),
                "chosen",
            ),
            (
                "1.2.3.4",
                None,
                &["1.2.3.5", "v1.2.3.6"],
                Some("1.2.3.5"),
                "chosen",
            ),
            ("v1.2.3", None, &["v1.2.3.1", "v1.2.4.0"], None, ""),
            // A pre-release of a four-part version sits below its release.
            (
                "v1.2.3.4",
                Some(">=1.2.3-0"),
                &["v1.2.3.5-rc.1", "v1.2.3.5"],
                Some("v1.2.3.5"),
                "chosen",
            ),
        ]);
    }
}
