//! What is said about a candidate tag, shared by the strategies (which read tags) and the
//! evaluation (which judges them): a tag's sort [`Key`] and version [`Rank`], its
//! [`Verdict`], the image metadata a registry gives ([`Meta`]) and the [`Choice`] made.
//! Plain data: this module imports no other module of the crate.

use std::cmp::Ordering;

use jiff::Timestamp;
use semver::Version;

use imagebump_model::platform::Platform;

/// How a version is ordered: its first three parts (and pre-release), then the fourth part,
/// then the revision. A constraint judges `version` alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rank {
    pub version: Version,
    pub fourth: u64,
    pub revision: u64,
}

impl Rank {
    pub fn of(version: Version) -> Rank {
        Rank {
            version,
            fourth: 0,
            revision: 0,
        }
    }
}

impl Ord for Rank {
    fn cmp(&self, other: &Self) -> Ordering {
        rank_order(
            (&self.version, self.fourth, self.revision),
            (&other.version, other.fourth, other.revision),
        )
    }
}

/// How two ranks compare, given as their parts (a version, its fourth part, its revision):
/// the first three parts and the fourth, then the pre-release, then the revision.
pub(crate) fn rank_order(a: (&Version, u64, u64), b: (&Version, u64, u64)) -> Ordering {
    let ((va, fa, ra), (vb, fb, rb)) = (a, b);
    (va.major, va.minor, va.patch, fa)
        .cmp(&(vb.major, vb.minor, vb.patch, fb))
        .then_with(|| va.pre.cmp(&vb.pre))
        .then_with(|| ra.cmp(&rb))
}

impl PartialOrd for Rank {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A tag's sort key under one strategy. Keys of one evaluation are all the same variant.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Key<'t> {
    /// A version (with its fourth part and revision); then "same `v` spelling as the
    /// current tag"; then the tag text.
    Version(Rank, bool, &'t str),
    /// An integer as its digits without leading zeros (compared by length, then text).
    Number(usize, &'t str, &'t str),
    /// Text (a regex group or the whole tag), then the tag.
    Text(&'t str, &'t str),
}

impl Key<'_> {
    /// Is `self` a higher value than `other`, ignoring spelling?
    pub(crate) fn above(&self, other: &Key) -> bool {
        match (self, other) {
            (Key::Version(a, ..), Key::Version(b, ..)) => a > b,
            (Key::Number(la, a, _), Key::Number(lb, b, _)) => (la, a) > (lb, b),
            (Key::Text(a, _), Key::Text(b, _)) => a > b,
            _ => false,
        }
    }

    /// The version a constraint is checked against, if the key has one.
    pub(crate) fn version(&self) -> Option<&Version> {
        match self {
            Key::Version(r, ..) => Some(&r.version),
            _ => None,
        }
    }
}

/// Is `tag` one that cosign (or the OCI referrers tag schema) names after a digest:
/// `sha256-<64 hex>` with an optional `.sig`, `.att` or `.sbom`?
pub fn is_artifact_tag(tag: &str) -> bool {
    let Some(rest) = tag.strip_prefix("sha256-") else {
        return false;
    };
    let hex = rest
        .strip_suffix(".sig")
        .or_else(|| rest.strip_suffix(".att"))
        .or_else(|| rest.strip_suffix(".sbom"))
        .unwrap_or(rest);
    hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Why a tag was or was not chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Chosen,
    /// Passed every filter, ranked below the chosen tag.
    Ranked,
    /// Passed the tag filters; its metadata was not needed because a better tag qualified.
    Unexamined,
    Current,
    NotAllowed,
    /// A tag cosign and other tools store next to an image (`sha256-<hex>.sig`, `.att`,
    /// `.sbom`, the referrers fallback `sha256-<hex>`): never a version of the image.
    Artifact,
    Ignored(String),
    NotAVersion,
    NotAnInteger,
    NoMatch,
    Prerelease,
    OtherVariant,
    /// Another shape: calendar or not, four parts or not, another prefix or separator.
    OtherShape,
    OtherPrecision,
    OutsideConstraint,
    NotNewer,
    /// `platforms:` lists a platform the image lacks (the platforms, joined).
    WrongPlatform(String),
    /// Lacks a platform the current version offers (the platforms, joined).
    LacksPlatform(String),
    /// `digest`: of the image, only platforms the repository does not run changed (those
    /// that did, joined; empty when only the index itself did).
    OnlyOtherPlatforms(String),
    TooYoung(String),
    OlderBuild,
    SameImage,
    NoBuildDate,
    NoMetadata(String),
    /// A reviewer rejected this version (a closed pull request, a revert).
    Rejected(String),
    /// `verify`: its signature did not verify (unsigned, another key, another digest).
    Unverified(String),
}

impl Verdict {
    pub fn kept(&self) -> bool {
        matches!(
            self,
            Verdict::Chosen | Verdict::Ranked | Verdict::Unexamined
        )
    }
}

/// One build inside an image: a single-platform manifest, or one entry of an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Build {
    pub platform: Option<Platform>,
    pub created: Option<Timestamp>,
    /// The digest of this platform's image manifest (an index entry's, or a single
    /// image's own), when known.
    pub digest: Option<String>,
}

/// Why a tag's metadata could not be read, as the caller that asked the registry words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct MetaUnavailable {
    pub reason: String,
}

impl MetaUnavailable {
    pub fn new(reason: impl Into<String>) -> MetaUnavailable {
        MetaUnavailable {
            reason: reason.into(),
        }
    }
}

/// What the registry says about one tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// The manifest (or index) digest the tag points to.
    pub digest: String,
    /// Empty when only the digest was asked for.
    pub builds: Vec<Build>,
}

impl Meta {
    /// The requested platforms the image does not have.
    pub fn missing_platforms<'p>(&self, wanted: &'p [Platform]) -> Vec<&'p Platform> {
        wanted
            .iter()
            .filter(|w| {
                !self
                    .builds
                    .iter()
                    .any(|b| b.platform.as_ref().is_some_and(|p| p.satisfies(w)))
            })
            .collect()
    }

    /// The build date: the newest `created` among the builds of the requested platforms
    /// (all builds when none are requested).
    pub fn created(&self, wanted: &[Platform]) -> Option<Timestamp> {
        self.builds
            .iter()
            .filter(|b| {
                wanted.is_empty()
                    || b.platform
                        .as_ref()
                        .is_some_and(|p| wanted.iter().any(|w| p.satisfies(w)))
            })
            .filter_map(|b| b.created)
            .max()
    }
}

/// What a policy decided for one reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Move to this tag (and digest, when known).
    Update { tag: String, digest: Option<String> },
    /// Nothing newer qualifies.
    Current,
    /// The policy cannot judge this reference (the reason says why).
    Skip(String),
}

/// A tag and its verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate<'t> {
    pub tag: &'t str,
    pub verdict: Verdict,
}
