//! One policy applied to one current tag and a repository's tags, keeping every
//! candidate's verdict so the choice can be explained (`imagebump tags`).
//!
//! The steps, cheapest first: tag filters (`allowTags`, `ignoreTags`), the strategy's reading
//! of the tag (version, integer, pattern), the constraint, "never downgrade"; then, only
//! when the policy needs it, image metadata (`platforms`, `minAge`, `newest-build`) for the
//! survivors, best first and only as deep as needed. The resolve stage fetches what
//! [`Evaluation::wanted`] asks for and hands it back through [`Evaluation::supply`].

use std::cmp::Ordering;

use jiff::Timestamp;
use semver::Version;

use super::filters::format_age;
use super::semver::{Series, TagVersion};
use super::{alphabetical, numeric, Policy, SemverMode, Strategy};
use crate::registry::manifest::Platform;

/// How many candidates' metadata is asked for at once when walking best-first.
const WALK_BATCH: usize = 4;

/// A tag's sort key under one strategy. Keys of one evaluation are all the same variant.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Key<'t> {
    /// A version; then "same `v` spelling as the current tag"; then the tag text.
    Version(Version, bool, &'t str),
    /// An integer as its digits without leading zeros (compared by length, then text).
    Number(usize, &'t str, &'t str),
    /// Text (a regex group or the whole tag), then the tag.
    Text(&'t str, &'t str),
}

impl Key<'_> {
    /// Is `self` a higher value than `other`, ignoring spelling?
    fn above(&self, other: &Key) -> bool {
        match (self, other) {
            (Key::Version(a, ..), Key::Version(b, ..)) => a > b,
            (Key::Number(la, a, _), Key::Number(lb, b, _)) => (la, a) > (lb, b),
            (Key::Text(a, _), Key::Text(b, _)) => a > b,
            _ => false,
        }
    }

    /// The version a constraint is checked against, if the key has one.
    fn version(&self) -> Option<&Version> {
        match self {
            Key::Version(v, ..) => Some(v),
            _ => None,
        }
    }
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
    Ignored(String),
    NotAVersion,
    NotAnInteger,
    NoMatch,
    Prerelease,
    OtherVariant,
    OtherPrecision,
    OutsideConstraint,
    NotNewer,
    WrongPlatform(String),
    TooYoung(String),
    OlderBuild,
    SameImage,
    NoBuildDate,
    NoMetadata(String),
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

pub struct Evaluation<'t> {
    pub(super) policy: Policy,
    pub(super) current: String,
    pub(super) current_digest: Option<String>,
    pub(super) candidates: Vec<Candidate<'t>>,
    pub(super) keys: Vec<Option<Key<'t>>>,
    /// Survivors of the tag filters, best first.
    pub(super) order: Vec<usize>,
    pub(super) meta: Vec<Option<Result<Meta, String>>>,
    /// Index of the current tag in the list, if the registry lists it.
    pub(super) current_index: Option<usize>,
    pub(super) skip: Option<String>,
    pub(super) warnings: Vec<String>,
    pub(super) now: Timestamp,
    pub(super) decided: Option<Choice>,
}

impl<'t> Evaluation<'t> {
    /// Why `policy` cannot judge `current` at all (no registry work needed to know).
    pub fn precheck(policy: &Policy, current: &str) -> Option<String> {
        let ok = match policy.strategy {
            Strategy::Semver => TagVersion::parse_in(policy.semver_mode, current).is_some(),
            Strategy::Numeric => numeric::key(current).is_some(),
            Strategy::Regex => policy
                .pattern
                .as_ref()
                .is_some_and(|p| p.key(current).is_ok()),
            Strategy::Digest | Strategy::Alphabetical | Strategy::NewestBuild => true,
        };
        if ok {
            return None;
        }
        Some(match policy.strategy {
            Strategy::Semver => {
                format!("current tag {current:?} is not a version (semver strategy)")
            }
            Strategy::Numeric => {
                format!("current tag {current:?} is not an integer (numeric strategy)")
            }
            _ => format!("current tag {current:?} does not match the pattern (regex strategy)"),
        })
    }

    /// Run the tag filters. `tags` is the repository's tag list (for `digest`, any list
    /// holding the current tag).
    pub fn new(
        policy: &Policy,
        current: &'t str,
        current_digest: Option<&str>,
        tags: &'t [String],
    ) -> Evaluation<'t> {
        let mut e = Evaluation {
            policy: policy.clone(),
            current: current.to_string(),
            current_digest: current_digest.map(str::to_string),
            candidates: Vec::with_capacity(tags.len()),
            keys: Vec::with_capacity(tags.len()),
            order: Vec::new(),
            meta: Vec::new(),
            current_index: None,
            skip: Self::precheck(policy, current),
            warnings: Vec::new(),
            now: Timestamp::now(),
            decided: None,
        };
        if e.skip.is_some() {
            return e;
        }
        let series = match policy.strategy {
            Strategy::Semver => Series::new(policy.semver_mode, current, tags),
            _ => None,
        };
        let current_key = e.key_of(series.as_ref(), current, true).ok();
        for tag in tags {
            let (verdict, key) = if tag == current {
                e.current_index = Some(e.candidates.len());
                (Verdict::Current, None)
            } else {
                match e.judge(series.as_ref(), tag, current_key.as_ref()) {
                    Ok(key) => (Verdict::Ranked, Some(key)),
                    Err(v) => (v, None),
                }
            };
            if verdict.kept() {
                e.order.push(e.candidates.len());
            }
            e.candidates.push(Candidate { tag, verdict });
            e.keys.push(key);
        }
        if policy.strategy == Strategy::Digest {
            e.order = e.current_index.into_iter().collect();
        } else {
            let keys = &e.keys;
            e.order.sort_by(|&a, &b| keys[b].cmp(&keys[a]));
        }
        e.meta = vec![None; e.candidates.len()];
        e
    }

    fn key_of(
        &self,
        series: Option<&Series>,
        tag: &'t str,
        is_current: bool,
    ) -> Result<Key<'t>, Verdict> {
        let p = &self.policy;
        match p.strategy {
            Strategy::Semver => match series {
                Some(s) if is_current => Ok(s.current_key(tag)),
                Some(s) => s.judge(tag, self.allows_prerelease()),
                None => Err(Verdict::NotAVersion),
            },
            Strategy::Numeric => numeric::key(tag).ok_or(Verdict::NotAnInteger),
            Strategy::Regex => match &p.pattern {
                Some(pattern) => pattern.key(tag),
                None => Err(Verdict::NoMatch),
            },
            Strategy::Alphabetical | Strategy::NewestBuild | Strategy::Digest => {
                Ok(alphabetical::key(tag))
            }
        }
    }

    fn allows_prerelease(&self) -> bool {
        self.policy
            .constraint
            .as_ref()
            .is_some_and(|c| c.has_prerelease())
    }

    fn judge(
        &self,
        series: Option<&Series>,
        tag: &'t str,
        current: Option<&Key<'t>>,
    ) -> Result<Key<'t>, Verdict> {
        let p = &self.policy;
        if p.strategy == Strategy::Digest {
            return Err(Verdict::NotNewer);
        }
        if let Some(allow) = &p.allow {
            if !allow.allows(tag) {
                return Err(Verdict::NotAllowed);
            }
        }
        if let Some(glob) = p.ignore_tags.as_ref().and_then(|i| i.matching(tag)) {
            return Err(Verdict::Ignored(glob.to_string()));
        }
        let key = self.key_of(series, tag, false)?;
        if let (Some(c), Some(v)) = (&p.constraint, key.version()) {
            if !v.pre.is_empty() && !c.has_prerelease() {
                return Err(Verdict::Prerelease);
            }
            if !c.matches(v) {
                return Err(Verdict::OutsideConstraint);
            }
        } else if key.version().is_some_and(|v| !v.pre.is_empty()) && !self.allows_prerelease() {
            return Err(Verdict::Prerelease);
        }
        // newest-build orders by build date, so "newer" is decided with the metadata.
        if p.strategy != Strategy::NewestBuild && !p.allow_downgrade {
            if let Some(cur) = current {
                if !key.above(cur) {
                    return Err(Verdict::NotNewer);
                }
            }
        }
        Ok(key)
    }

    /// Use `now` instead of the clock for `minAge` (tests).
    pub fn set_now(&mut self, now: Timestamp) {
        self.now = now;
    }

    /// Candidates whose metadata is still needed, as (index, tag); empty when the
    /// evaluation can decide.
    pub fn wanted(&self) -> Vec<(usize, &'t str)> {
        if self.skip.is_some() || self.decided.is_some() {
            return Vec::new();
        }
        let unknown = |i: &usize| self.meta[*i].is_none();
        let at = |i: usize| (i, self.candidates[i].tag);
        match self.policy.strategy {
            Strategy::Digest => self.order.iter().copied().filter(unknown).map(at).collect(),
            Strategy::NewestBuild => self
                .order
                .iter()
                .copied()
                .chain(self.current_index)
                .filter(unknown)
                .map(at)
                .collect(),
            _ if !self.policy.needs_metadata() => Vec::new(),
            _ => {
                let mut out = Vec::new();
                for &i in &self.order {
                    match &self.meta[i] {
                        None => {
                            out.push(at(i));
                            if out.len() == WALK_BATCH {
                                break;
                            }
                        }
                        Some(Ok(m)) if out.is_empty() && self.meta_verdict(m).is_none() => break,
                        Some(_) => {}
                    }
                }
                out
            }
        }
    }

    /// Whether `wanted` needs full metadata (`false`: a digest is enough).
    pub fn wants_builds(&self) -> bool {
        self.policy.strategy != Strategy::Digest || self.policy.needs_metadata()
    }

    pub fn supply(&mut self, index: usize, meta: Result<Meta, String>) {
        if let Some(slot) = self.meta.get_mut(index) {
            *slot = Some(meta);
        }
    }

    /// Why `m` fails the metadata filters (`platforms`, `minAge`), if it does.
    pub(super) fn meta_verdict(&self, m: &Meta) -> Option<Verdict> {
        let p = &self.policy;
        if !p.platforms.is_empty() {
            let missing = m.missing_platforms(&p.platforms);
            if !missing.is_empty() {
                let names: Vec<String> = missing.iter().map(|p| p.to_string()).collect();
                return Some(Verdict::WrongPlatform(names.join(", ")));
            }
        }
        if let Some(min) = p.min_age {
            let Some(created) = m.created(&p.platforms) else {
                return Some(Verdict::NoBuildDate);
            };
            let age = self.now.duration_since(created);
            let age = std::time::Duration::try_from(age).unwrap_or_default();
            if age < min {
                return Some(Verdict::TooYoung(format_age(age)));
            }
        }
        None
    }

    /// Decide, once [`Evaluation::wanted`] is empty. Idempotent.
    pub fn decide(&mut self) -> Choice {
        if let Some(c) = &self.decided {
            return c.clone();
        }
        let choice = match (&self.skip, self.policy.strategy) {
            (Some(reason), _) => Choice::Skip(reason.clone()),
            (None, Strategy::NewestBuild) => self.decide_newest_build(),
            (None, Strategy::Digest) => self.decide_digest(),
            (None, _) => self.decide_ranked(),
        };
        self.decided = Some(choice.clone());
        choice
    }

    fn decide_ranked(&mut self) -> Choice {
        let mut chosen: Option<usize> = None;
        for pos in 0..self.order.len() {
            let i = self.order[pos];
            let verdict = if chosen.is_some() {
                if self.meta[i].is_some() || !self.policy.needs_metadata() {
                    Verdict::Ranked
                } else {
                    Verdict::Unexamined
                }
            } else if !self.policy.needs_metadata() {
                Verdict::Chosen
            } else {
                match &self.meta[i] {
                    None => Verdict::Unexamined,
                    Some(Err(e)) => Verdict::NoMetadata(e.clone()),
                    Some(Ok(m)) => self.meta_verdict(m).unwrap_or(Verdict::Chosen),
                }
            };
            if verdict == Verdict::Chosen {
                chosen = Some(i);
            }
            self.candidates[i].verdict = verdict;
        }
        match chosen {
            Some(i) => Choice::Update {
                tag: self.candidates[i].tag.to_string(),
                digest: self.digest_of(i),
            },
            None => Choice::Current,
        }
    }

    pub(super) fn digest_of(&self, i: usize) -> Option<String> {
        match &self.meta[i] {
            Some(Ok(m)) => Some(m.digest.clone()),
            _ => None,
        }
    }

    /// Non-fatal notes (ties, exact constraints).
    pub fn warnings(&self) -> impl Iterator<Item = &String> {
        self.policy.warnings.iter().chain(&self.warnings)
    }

    /// Every candidate, best first: the ranked ones in order, then the others by tag.
    pub fn candidates(&self) -> Vec<&Candidate<'t>> {
        let mut ranked: Vec<bool> = vec![false; self.candidates.len()];
        let mut out: Vec<&Candidate> = Vec::with_capacity(self.candidates.len());
        let mut order = self.order.clone();
        if self.policy.strategy == Strategy::NewestBuild {
            // After the decision, rank by verdict (chosen first), keeping the name order.
            order.sort_by_key(|&i| !matches!(self.candidates[i].verdict, Verdict::Chosen));
        }
        for i in order {
            ranked[i] = true;
            out.push(&self.candidates[i]);
        }
        let mut rest: Vec<&Candidate> = self
            .candidates
            .iter()
            .enumerate()
            .filter(|(i, _)| !ranked[*i])
            .map(|(_, c)| c)
            .collect();
        rest.sort_by(|a, b| match (&a.verdict, &b.verdict) {
            (Verdict::Current, _) => Ordering::Less,
            (_, Verdict::Current) => Ordering::Greater,
            _ => b.tag.cmp(a.tag),
        });
        out.extend(rest);
        out
    }

    /// A sentence saying why `c` was (not) chosen.
    pub fn reason(&self, c: &Candidate) -> String {
        let p = &self.policy;
        match &c.verdict {
            Verdict::Chosen => "chosen".into(),
            Verdict::Ranked => "passed every filter, ranked below the chosen tag".into(),
            Verdict::Unexamined => {
                "passed the tag filters; not examined further (a better tag qualified)".into()
            }
            Verdict::Current => "the current tag".into(),
            Verdict::NotAllowed => format!(
                "not matched by allowTags {}",
                p.spec.allow_tags.as_deref().unwrap_or_default()
            ),
            Verdict::Ignored(g) => format!("matches ignoreTags {g:?}"),
            Verdict::NotAVersion => "not a version".into(),
            Verdict::NotAnInteger => "not an integer".into(),
            Verdict::NoMatch => "does not match the pattern".into(),
            Verdict::Prerelease => "pre-release (the constraint has no pre-release part)".into(),
            Verdict::OtherVariant => {
                let cur = TagVersion::parse(&self.current).and_then(|v| v.variant);
                match cur {
                    Some(v) => format!("other variant (the current tag is -{v})"),
                    None => "a variant (the current tag has none)".into(),
                }
            }
            Verdict::OtherPrecision => {
                let parts = TagVersion::parse(&self.current).map_or(0, |v| v.precision);
                format!("other precision (the current tag has {parts} numeric part(s))")
            }
            Verdict::OutsideConstraint => format!(
                "outside the constraint {}",
                p.constraint.as_ref().map_or("", |c| c.as_str())
            ),
            Verdict::NotNewer => match p.strategy {
                Strategy::Digest => "not followed (digest follows the current tag)".into(),
                _ => "not newer than the current tag".into(),
            },
            Verdict::WrongPlatform(missing) => format!("no image for {missing}"),
            Verdict::TooYoung(age) => format!(
                "built {age} ago, younger than minAge {}",
                p.spec.min_age.as_deref().unwrap_or_default()
            ),
            Verdict::OlderBuild => "built no later than the current tag's image".into(),
            Verdict::SameImage => "same image as the current tag".into(),
            Verdict::NoBuildDate => "the image has no build date (created)".into(),
            Verdict::NoMetadata(e) => format!("metadata unavailable: {e}"),
        }
    }

    pub fn semver_mode(&self) -> SemverMode {
        self.policy.semver_mode
    }
}

/// Run an evaluation that needs no metadata (tests and offline use).
pub fn choose_offline<'t>(policy: &Policy, current: &'t str, tags: &'t [String]) -> Choice {
    let mut e = Evaluation::new(policy, current, None, tags);
    e.decide()
}
