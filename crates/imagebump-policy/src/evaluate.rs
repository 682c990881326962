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

use crate::age::Clock;
use crate::candidate::{is_artifact_tag, Candidate, Choice, Key, Meta, MetaUnavailable, Verdict};
use crate::newest_build::{Baseline, Examined};
use crate::platforms::{Current, Unread};
use crate::semver::{TagVersion, TagVersions};
use crate::strategy;
use crate::{digest, newest_build, Policy, SemverMode, Strategy};

/// How many candidates' metadata is asked for at once when walking best-first.
const WALK_BATCH: usize = 4;

/// The tags of `kept` (each key with its tag's index) best first; equal keys (a tag listed
/// twice) in listing order. With the places of the repository's versions (read once for
/// all its references: the order of their ranks, which lead their keys) and their indexes
/// best first, the candidates are taken in that order, and only a place's few versions
/// (`1.2` and `v1.2`) are sorted by their keys.
fn best_first(kept: &[(Key, usize)], ranked: Option<(&[u32], &[u32])>) -> Vec<usize> {
    let ranked = ranked.filter(|(places, _)| {
        kept.iter()
            .all(|(_, i)| places.get(*i).is_some_and(|&x| x != u32::MAX))
    });
    let Some((places, best)) = ranked else {
        return sorted_by_key(kept);
    };
    // Where each candidate tag is in `kept`.
    let mut at = vec![usize::MAX; places.len()];
    for (n, (_, i)) in kept.iter().enumerate() {
        if let Some(a) = at.get_mut(*i) {
            *a = n;
        }
    }
    let mut order: Vec<usize> = Vec::with_capacity(kept.len());
    let mut runs = false;
    for &i in best {
        let i = i as usize;
        if at.get(i).is_some_and(|&n| n != usize::MAX) {
            runs |= order
                .last()
                .is_some_and(|&j| places.get(j) == places.get(i));
            order.push(i);
        }
    }
    if runs {
        // A place's versions by their keys (the same rank, spelled apart), best first.
        let key = |i: usize| at.get(i).and_then(|&n| kept.get(n)).map(|k| &k.0);
        for run in order.chunk_by_mut(|a, b| places.get(*a) == places.get(*b)) {
            run.sort_by(|a, b| key(*b).cmp(&key(*a)).then(a.cmp(b)));
        }
    }
    order
}

/// Pass two of an evaluation: every tag in listing order, ranked unless `judged` (in
/// listing order) says otherwise.
fn listed(tags: &[String], judged: Vec<(usize, Verdict)>) -> Vec<Candidate<'_>> {
    let mut judged = judged.into_iter().peekable();
    tags.iter()
        .enumerate()
        .map(|(i, tag)| {
            let verdict = match judged.next_if(|(j, _)| *j == i) {
                Some((_, v)) => v,
                None => Verdict::Ranked,
            };
            Candidate { tag, verdict }
        })
        .collect()
}

/// The tags of `kept` best first by their keys alone; equal keys in listing order.
fn sorted_by_key(kept: &[(Key, usize)]) -> Vec<usize> {
    let mut by: Vec<usize> = (0..kept.len()).collect();
    by.sort_unstable_by(|&a, &b| {
        let (x, y) = (kept.get(a), kept.get(b));
        let (kx, ky) = (x.map(|k| &k.0), y.map(|k| &k.0));
        ky.cmp(&kx)
            .then_with(|| x.map(|k| k.1).cmp(&y.map(|k| k.1)))
    });
    by.into_iter()
        .filter_map(|n| kept.get(n).map(|k| k.1))
        .collect()
}

pub struct Evaluation<'t> {
    policy: Policy,
    current: String,
    current_digest: Option<String>,
    candidates: Vec<Candidate<'t>>,
    /// Survivors of the tag filters, best first.
    order: Vec<usize>,
    /// Metadata supplied so far, by candidate index: only the few candidates walked
    /// (a repository may list a million tags).
    meta: std::collections::HashMap<usize, Result<Meta, MetaUnavailable>>,
    /// Index of the current tag in the list, if the registry lists it.
    current_index: Option<usize>,
    skip: Option<String>,
    /// How the policy's strategy reads tags (kept to rank rejected versions).
    reader: Box<dyn strategy::Strategy>,
    warnings: Vec<String>,
    now: Timestamp,
    /// When each tag was first seen, as the repository records it (`minAge`).
    first_seen: std::collections::BTreeMap<String, Timestamp>,
    decided: Option<Choice>,
    /// Candidates refused by `verify`, best first (each was the best left when refused).
    unverified: Vec<usize>,
    /// The current version's image, whose platforms every candidate must offer (without
    /// `platforms:`), and which `digest` compares per platform (with it).
    current_image: Current,
    /// The metadata filters' verdict of each candidate whose metadata was read, made once
    /// when it is supplied (and again when what it depends on is set): walking the
    /// candidates reads it, so the walk costs one judgement per candidate.
    judged: std::collections::HashMap<usize, Option<Verdict>>,
    /// How many times the metadata filters judged a candidate (tests: the walk's cost).
    #[cfg(test)]
    verdict_calls: std::cell::Cell<usize>,
}

impl<'t> Evaluation<'t> {
    /// Why `policy` cannot judge `current` at all (no registry work needed to know).
    pub fn precheck(policy: &Policy, current: &str) -> Option<String> {
        strategy::of(policy, current, &[], None).cannot_judge(current)
    }

    /// Run the tag filters. `tags` is the repository's tag list (for `digest`, any list
    /// holding the current tag).
    pub fn new(
        policy: &Policy,
        current: &'t str,
        current_digest: Option<&str>,
        tags: &'t [String],
    ) -> Evaluation<'t> {
        Evaluation::new_read(policy, current, current_digest, tags, None)
    }

    /// As [`Evaluation::new`], with the tags' versions read already (once for all the
    /// references of a repository).
    pub fn new_read(
        policy: &Policy,
        current: &'t str,
        current_digest: Option<&str>,
        tags: &'t [String],
        read: Option<&TagVersions>,
    ) -> Evaluation<'t> {
        let reader = strategy::of(policy, current, tags, read);
        Evaluation::with_reader(
            policy,
            (current, current_digest),
            (tags, read),
            reader,
            false,
        )
    }

    /// With no current tag: every candidate is judged as new. Under `semver`, the
    /// candidates are the versions of the shape of the newest one the constraint and the
    /// filters accept ([`Evaluation::assumed`] says which); other strategies judge every
    /// tag as they would above any current one.
    pub fn judged_as_new(policy: &Policy, tags: &'t [String]) -> Evaluation<'t> {
        let reader: Box<dyn strategy::Strategy> = match policy.strategy {
            Strategy::Semver => {
                let pre = policy
                    .constraint
                    .as_ref()
                    .is_some_and(|c| c.has_prerelease());
                let accept = |tag: &str, v: &crate::semver::TagVersion| {
                    accepts(policy, tag, &v.version, pre)
                };
                let assumed = crate::semver::Series::assumed(policy.semver_mode, tags, accept);
                Box::new(crate::semver::Semver::assumed(policy.semver_mode, assumed))
            }
            _ => strategy::of(policy, "", tags, None),
        };
        Evaluation::with_reader(policy, ("", None), (tags, None), reader, true)
    }

    /// The tag whose shape is assumed when there is no current tag
    /// ([`Evaluation::judged_as_new`]).
    pub fn assumed(&self) -> Option<&str> {
        self.reader.assumed()
    }

    /// The evaluation with its strategy `reader`; `as_new`: there is no current tag, and
    /// every candidate is judged as new.
    fn with_reader(
        policy: &Policy,
        (current, current_digest): (&'t str, Option<&str>),
        (tags, read): (&'t [String], Option<&TagVersions>),
        reader: Box<dyn strategy::Strategy>,
        as_new: bool,
    ) -> Evaluation<'t> {
        let mut e = Evaluation {
            policy: policy.clone(),
            current: current.to_string(),
            current_digest: current_digest.map(str::to_string),
            candidates: Vec::new(),
            order: Vec::new(),
            meta: std::collections::HashMap::new(),
            current_index: None,
            // Judged as new: only a semver series that could not be assumed cannot judge.
            skip: match (as_new, policy.strategy) {
                (true, Strategy::Semver) | (false, _) => reader.cannot_judge(current),
                (true, _) => None,
            },
            reader,
            warnings: Vec::new(),
            now: Timestamp::now(),
            first_seen: std::collections::BTreeMap::new(),
            decided: None,
            unverified: Vec::new(),
            current_image: Current::Off,
            judged: std::collections::HashMap::new(),
            #[cfg(test)]
            verdict_calls: std::cell::Cell::new(0),
        };
        if !as_new {
            e.current_image = Current::initial(policy, current, current_digest);
        }
        if e.skip.is_some() {
            return e;
        }
        // No current tag: nothing to be newer than.
        let current_key = (!as_new).then(|| e.reader.current_key(current)).flatten();
        // Pass one: the survivors' sort keys (kept only while they are sorted) and the
        // verdicts of the rest. The candidates are built afterwards, so a million tags never
        // hold keys and candidates at once. Sized once: a vector grown by doubling would
        // hold two copies.
        let mut kept = Vec::with_capacity(tags.len());
        let mut judged: Vec<(usize, Verdict)> = Vec::new();
        for (i, tag) in tags.iter().enumerate() {
            if tag == current {
                e.current_index = Some(i);
                judged.push((i, Verdict::Current));
                continue;
            }
            match e.judge((tag, read.map(|r| (r, i))), current_key.as_ref()) {
                Ok(key) => kept.push((key, i)),
                Err(v) => judged.push((i, v)),
            }
        }
        if policy.strategy == Strategy::Digest {
            e.order = e.current_index.into_iter().collect();
        } else {
            let places = read.and_then(|r| e.reader.places(r));
            e.order = best_first(&kept, places);
        }
        drop(kept);
        e.candidates = listed(tags, judged);
        e
    }

    /// `tag`'s rank under the strategy, ignoring the filters, to compare a candidate with a
    /// rejected version; `None` when the strategy cannot rank it (newest-build, digest, a
    /// version of another variant).
    fn rank<'a>(&self, tag: &'a str) -> Option<Key<'a>> {
        self.reader.rank(tag)
    }

    fn allows_prerelease(&self) -> bool {
        self.policy
            .constraint
            .as_ref()
            .is_some_and(|c| c.has_prerelease())
    }

    /// `tag`'s key, or why it is not a candidate; `read`: its version read already (it is
    /// that list's `i`-th tag).
    fn judge(
        &self,
        (tag, read): (&'t str, Option<(&TagVersions, usize)>),
        current: Option<&Key<'t>>,
    ) -> Result<Key<'t>, Verdict> {
        let p = &self.policy;
        if p.strategy == Strategy::Digest {
            return Err(Verdict::NotNewer);
        }
        if is_artifact_tag(tag) {
            return Err(Verdict::Artifact);
        }
        if let Some(allow) = &p.allow {
            if !allow.allows(tag) {
                return Err(Verdict::NotAllowed);
            }
        }
        if let Some(glob) = p.ignore_tags.as_ref().and_then(|i| i.matching(tag)) {
            return Err(Verdict::Ignored(glob.to_string()));
        }
        let key = self.reader.key(tag, read, self.allows_prerelease())?;
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

    /// Drop the tags a reviewer rejected (a pull request closed without merging, a revert of
    /// imagebump's commit): `rejected` maps a tag to why. Call before deciding.
    pub fn reject(&mut self, rejected: &std::collections::BTreeMap<String, String>) {
        if rejected.is_empty() {
            return;
        }
        // A "no" to version V is a no to moving there at all: every candidate up to V in
        // V's major line is held back with it, and only a version above every rejected one
        // is proposed. A no to a major update (17.2) is not one to the minors of the line in
        // git (16.x): those come in their own pull request.
        let ceilings: Vec<(Key, &str, &str)> = rejected
            .iter()
            .filter_map(|(tag, why)| Some((self.rank(tag)?, tag.as_str(), why.as_str())))
            .collect();
        let semver = self.policy.strategy == Strategy::Semver;
        let line = |tag: &str| {
            semver
                .then(|| crate::constraint::parse_version(tag))
                .flatten()
                .map(|v| crate::constraint::major_line(&v))
        };
        let same_line = |a: &str, b: &str| match (line(a), line(b)) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        let mut held = Vec::new();
        for (pos, &i) in self.order.iter().enumerate() {
            let Some(c) = self.candidates.get(i) else {
                continue;
            };
            let why = match rejected.get(c.tag) {
                Some(why) => why.clone(),
                None => {
                    let Some(rank) = self.rank(c.tag) else {
                        continue;
                    };
                    let covers =
                        |(k, tag, _): &&(Key, &str, &str)| !rank.above(k) && same_line(c.tag, tag);
                    match ceilings.iter().find(covers) {
                        Some((_, tag, why)) => {
                            format!("{why} (it proposed {tag}; a no covers every version up to it)")
                        }
                        None => continue,
                    }
                }
            };
            held.push((pos, i, why));
        }
        for (_, i, why) in &held {
            if let Some(c) = self.candidates.get_mut(*i) {
                c.verdict = Verdict::Rejected(why.clone());
            }
        }
        let gone: std::collections::HashSet<usize> = held.iter().map(|(pos, ..)| *pos).collect();
        let mut pos = 0usize;
        self.order.retain(|_| {
            let keep = !gone.contains(&pos);
            pos = pos.saturating_add(1);
            keep
        });
    }

    /// Use `now` instead of the clock for `minAge` (tests).
    pub fn set_now(&mut self, now: Timestamp) {
        self.now = now;
        self.rejudge();
    }

    /// Candidates whose metadata is still needed, as (index, tag); empty when the
    /// evaluation can decide.
    pub fn wanted(&self) -> Vec<(usize, &'t str)> {
        if self.skip.is_some() || self.decided.is_some() {
            return Vec::new();
        }
        // The current version's platforms come first: they decide what candidates need.
        if self.current_image == Current::Pending && self.policy.strategy != Strategy::Digest {
            return Vec::new();
        }
        let unknown = |i: &usize| !self.meta.contains_key(i);
        let at = |i: usize| Some((i, self.tag_of(i)?));
        match self.policy.strategy {
            Strategy::Digest => self
                .order
                .iter()
                .copied()
                .filter(unknown)
                .filter_map(at)
                .collect(),
            Strategy::NewestBuild => self
                .order
                .iter()
                .copied()
                .chain(self.current_index)
                .filter(unknown)
                .filter_map(at)
                .collect(),
            _ if !self.needs_metadata() => Vec::new(),
            _ => {
                // Only the current version's platforms to check: a candidate rarely lacks
                // one, so one at a time (the fewest requests).
                let batch = match self.policy.needs_metadata() {
                    true => WALK_BATCH,
                    false => 1,
                };
                let mut out = Vec::new();
                for &i in &self.order {
                    match self.meta.get(&i) {
                        None => {
                            out.extend(at(i));
                            if out.len() == batch {
                                break;
                            }
                        }
                        Some(Ok(m)) if out.is_empty() && self.verdict_of(i, m).is_none() => break,
                        Some(_) => {}
                    }
                }
                out
            }
        }
    }

    /// Whether `wanted` needs full metadata (`false`: a digest is enough).
    pub fn wants_builds(&self) -> bool {
        self.policy.strategy != Strategy::Digest
            || self.policy.needs_metadata()
            || self.current_image == Current::Pending
    }

    /// Whether candidates need metadata: the policy's filters, or the platforms the current
    /// version offers.
    fn needs_metadata(&self) -> bool {
        self.policy.needs_metadata() || !self.current_image.required().is_empty()
    }

    /// The current version's reference (a tag; for `digest`, the pinned digest once the
    /// tag points elsewhere) whose metadata is wanted before any candidate's, if it is.
    pub fn wanted_current(&self) -> Option<&str> {
        if self.current_image != Current::Pending || self.skip.is_some() {
            return None;
        }
        if self.policy.strategy != Strategy::Digest {
            // No candidate left after the tag filters: nothing to compare (no request).
            return (!self.order.is_empty()).then_some(self.current.as_str());
        }
        let now = self.current_index.and_then(|i| self.meta.get(&i))?;
        match now {
            Ok(m) if self.current_digest.as_deref() != Some(m.digest.as_str()) => {
                self.current_digest.as_deref()
            }
            _ => None,
        }
    }

    /// The metadata of [`Evaluation::wanted_current`], or why there is none: then nothing
    /// is required beyond `platforms:` (with a warning saying so when the registry
    /// answered).
    pub fn supply_current(&mut self, meta: Result<Meta, Unread>) {
        self.current_image = match meta {
            Ok(meta) => Current::Read {
                offered: crate::platforms::offered(&meta),
                meta,
            },
            Err(Unread::NoRegistry) => Current::Unread,
            Err(Unread::Failed(why)) => {
                self.skip = Some(format!("the current version's platforms: {why}"));
                Current::Unread
            }
            Err(Unread::Missing(why)) => {
                self.warnings.push(format!(
                    "the current version's platforms are not compared ({why}); list the platforms the repository runs in `platforms`"
                ));
                Current::Unread
            }
        };
        self.rejudge();
    }

    /// Leave the current version's platforms out (a Helm chart has none).
    pub fn ignore_current_platforms(&mut self) {
        self.current_image = Current::Off;
        self.rejudge();
    }

    pub fn supply(&mut self, index: usize, meta: Result<Meta, MetaUnavailable>) {
        if index < self.candidates.len() {
            self.meta.insert(index, meta);
            self.judge_meta(index);
        }
    }

    /// Judge candidate `index`'s metadata by the filters once, and keep the verdict.
    fn judge_meta(&mut self, index: usize) {
        let verdict = match self.meta.get(&index) {
            Some(Ok(m)) => self.meta_verdict(index, m),
            _ => return,
        };
        self.judged.insert(index, verdict);
    }

    /// Judge again every candidate whose metadata was read: what the verdicts depend on (the
    /// clock, the first sightings, the current version's platforms) changed.
    fn rejudge(&mut self) {
        self.judged.clear();
        let read: Vec<usize> = self.meta.keys().copied().collect();
        for i in read {
            self.judge_meta(i);
        }
    }

    /// The kept verdict of candidate `i` (whose metadata is `m`), judged now if none is kept.
    fn verdict_of(&self, i: usize, m: &Meta) -> Option<Verdict> {
        match self.judged.get(&i) {
            Some(v) => v.clone(),
            None => self.meta_verdict(i, m),
        }
    }

    /// Why `m` fails the metadata filters (`platforms`, `minAge`), if it does.
    fn meta_verdict(&self, i: usize, m: &Meta) -> Option<Verdict> {
        #[cfg(test)]
        self.verdict_calls
            .set(self.verdict_calls.get().saturating_add(1));
        let p = &self.policy;
        if !p.platforms.is_empty() {
            let missing = m.missing_platforms(&p.platforms);
            if !missing.is_empty() {
                let names: Vec<String> = missing.iter().map(|p| p.to_string()).collect();
                return Some(Verdict::WrongPlatform(names.join(", ")));
            }
        } else if let Some(missing) = self.current_image.missing_in(m) {
            return Some(Verdict::LacksPlatform(missing));
        }
        if let Some(min) = p.min_age {
            return self.age_verdict(i, m, min);
        }
        None
    }

    /// Why candidate `i` (whose metadata is `m`) is younger than `min`, if it is, by its
    /// [`Clock`].
    fn age_verdict(&self, i: usize, m: &Meta, min: std::time::Duration) -> Option<Verdict> {
        let Some(clock) = self.clock_of(i, m) else {
            return Some(Verdict::NoBuildDate);
        };
        match clock.age(self.now) {
            Some(age) if age >= min => None,
            _ => Some(Verdict::TooYoung(clock.describe(self.now))),
        }
    }

    /// The clock `minAge` judges candidate `i` by. `digest` follows one tag whose image
    /// changes, so a sighting of the tag says nothing of the image: it needs a plausible
    /// build date (`None` without one).
    fn clock_of(&self, i: usize, m: &Meta) -> Option<Clock> {
        let created = m.created(&self.policy.platforms);
        if self.policy.strategy == Strategy::Digest {
            return created
                .filter(|c| crate::age::plausible(*c, self.now))
                .map(Clock::Built);
        }
        let recorded = self.tag_of(i).and_then(|t| self.first_seen.get(t)).copied();
        Some(Clock::of(created, recorded, self.now))
    }

    /// The first sightings recorded for this repository's tags (tag → time): `minAge`
    /// counts from them for images without a plausible build date.
    pub fn set_first_seen(&mut self, recorded: std::collections::BTreeMap<String, Timestamp>) {
        self.first_seen = recorded;
        self.rejudge();
    }

    /// The clock `minAge` judged each candidate by whose metadata was read, in listing
    /// order (empty without `minAge`).
    pub fn clocks(&self) -> Vec<(&'t str, Clock)> {
        self.clocks_at()
            .into_iter()
            .map(|(_, t, c)| (t, c))
            .collect()
    }

    /// [`Evaluation::clocks`] with each candidate's index.
    fn clocks_at(&self) -> Vec<(usize, &'t str, Clock)> {
        if self.policy.min_age.is_none() {
            return Vec::new();
        }
        let mut out: Vec<(usize, &'t str, Clock)> = self
            .meta
            .iter()
            .filter_map(|(&i, m)| {
                let m = m.as_ref().ok()?;
                Some((i, self.tag_of(i)?, self.clock_of(i, m)?))
            })
            .collect();
        out.sort_by_key(|(i, ..)| *i);
        out
    }

    /// The clocks of the candidates `minAge` held back (younger than it), in listing order.
    pub fn held_clocks(&self) -> Vec<(&'t str, Clock)> {
        self.clocks_at()
            .into_iter()
            .filter(|(i, ..)| {
                self.candidates
                    .get(*i)
                    .is_some_and(|c| matches!(c.verdict, Verdict::TooYoung(_)))
            })
            .map(|(_, t, c)| (t, c))
            .collect()
    }

    /// The candidates held back as first seen by this run (no plausible build date, no
    /// record): what a run that delivers records. A candidate ranked below the chosen one
    /// needed no clock and is not recorded.
    pub fn unrecorded(&self) -> Vec<&'t str> {
        self.clocks_at()
            .into_iter()
            .filter(|(i, _, c)| {
                matches!(c, Clock::SeenNow(_))
                    && self
                        .candidates
                        .get(*i)
                        .is_some_and(|c| matches!(c.verdict, Verdict::TooYoung(_)))
            })
            .map(|(_, t, _)| t)
            .collect()
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
            let Some(&i) = self.order.get(pos) else {
                break;
            };
            let verdict = if chosen.is_some() {
                if self.meta.contains_key(&i) || !self.needs_metadata() {
                    Verdict::Ranked
                } else {
                    Verdict::Unexamined
                }
            } else if !self.needs_metadata() {
                Verdict::Chosen
            } else {
                match self.meta.get(&i) {
                    None => Verdict::Unexamined,
                    Some(Err(e)) => Verdict::NoMetadata(e.reason.clone()),
                    Some(Ok(m)) => self.verdict_of(i, m).unwrap_or(Verdict::Chosen),
                }
            };
            if verdict == Verdict::Chosen {
                chosen = Some(i);
            }
            self.set_verdict(i, verdict);
        }
        self.choice_for(chosen)
    }

    /// `digest`: follow the current tag, through its metadata.
    fn decide_digest(&mut self) -> Choice {
        let Some(i) = self.current_index else {
            return digest::unlisted(&self.current);
        };
        let meta = self.meta.get(&i).cloned();
        let (verdict, choice) =
            digest::follow(&self.current, self.current_digest.as_deref(), meta, |m| {
                self.verdict_of(i, m)
                    .or_else(|| self.unchanged_where_run(m))
            });
        if let Some(v) = verdict {
            self.set_verdict(i, v);
        }
        choice
    }

    /// `digest` with `platforms:`: the tag's new image `m` when, of the pinned image, only
    /// platforms the repository does not run changed (their per-platform digests compared).
    fn unchanged_where_run(&self, m: &Meta) -> Option<Verdict> {
        let Current::Read { meta: old, .. } = &self.current_image else {
            return None;
        };
        let run = &self.policy.platforms;
        let moved = self.current_digest.as_deref() != Some(m.digest.as_str());
        (moved && !run.is_empty() && crate::platforms::same_for(run, old, m)).then(|| {
            Verdict::OnlyOtherPlatforms(crate::platforms::join(&crate::platforms::changed(old, m)))
        })
    }

    /// `newest-build`: the candidates' build dates, as their metadata gives them, ordered
    /// by `newest_build::decide`.
    fn decide_newest_build(&mut self) -> Choice {
        let baseline = self
            .current_index
            .and_then(|i| self.meta.get(&i))
            .and_then(|m| m.as_ref().ok())
            .map(|m| Baseline {
                created: m.created(&self.policy.platforms),
                digest: &m.digest,
            });
        let examined: Vec<Examined> = self
            .order
            .iter()
            .map(|&i| Examined {
                index: i,
                tag: self.tag_of(i).unwrap_or_default(),
                build: self.build_of(i),
            })
            .collect();
        let decision = newest_build::decide(&examined, baseline, self.policy.allow_downgrade);
        for (i, v) in decision.verdicts {
            self.set_verdict(i, v);
        }
        match decision.chosen {
            Err(why) => Choice::Skip(why.to_string()),
            Ok(chosen) => {
                self.warnings.extend(decision.warnings);
                self.order = decision.order;
                self.choice_for(chosen)
            }
        }
    }

    /// Candidate `i`'s build date and digest, or why it has none that counts (no metadata,
    /// refused by the metadata filters, no build date).
    fn build_of(&self, i: usize) -> Result<(Timestamp, &str), Verdict> {
        match self.meta.get(&i) {
            None => Err(Verdict::NoMetadata("not fetched".into())),
            Some(Err(e)) => Err(Verdict::NoMetadata(e.reason.clone())),
            Some(Ok(m)) => match self.verdict_of(i, m) {
                Some(v) => Err(v),
                None => m
                    .created(&self.policy.platforms)
                    .map(|t| (t, m.digest.as_str()))
                    .ok_or(Verdict::NoBuildDate),
            },
        }
    }

    /// `Update` to candidate `chosen`, or `Current` when none was chosen.
    fn choice_for(&self, chosen: Option<usize>) -> Choice {
        match chosen.and_then(|i| Some((i, self.tag_of(i)?))) {
            Some((i, tag)) => Choice::Update {
                tag: tag.to_string(),
                digest: self.digest_of(i),
            },
            None => Choice::Current,
        }
    }

    /// The tag of candidate `i`; `order`, `meta` and `current_index` only hold indices of
    /// `candidates`, so `None` does not happen.
    fn tag_of(&self, i: usize) -> Option<&'t str> {
        self.candidates.get(i).map(|c| c.tag)
    }

    /// Records candidate `i`'s verdict (an index from `order`, `meta` or `current_index`).
    fn set_verdict(&mut self, i: usize, verdict: Verdict) {
        if let Some(c) = self.candidates.get_mut(i) {
            c.verdict = verdict;
        }
    }

    fn digest_of(&self, i: usize) -> Option<String> {
        match self.meta.get(&i) {
            Some(Ok(m)) => Some(m.digest.clone()),
            _ => None,
        }
    }

    /// The candidate the last decision chose, if any.
    pub fn chosen(&self) -> Option<usize> {
        self.candidates
            .iter()
            .position(|c| c.verdict == Verdict::Chosen)
    }

    /// Drop candidate `i`, the one chosen, because its signature did not verify (`why`):
    /// the next [`Evaluation::decide`] picks the next best (`digest` follows one tag, so
    /// nothing). Call [`Evaluation::wanted`] again first: the next best may need metadata.
    pub fn refuse(&mut self, i: usize, why: String) {
        self.set_verdict(i, Verdict::Unverified(why));
        self.order.retain(|&j| j != i);
        self.unverified.push(i);
        self.decided = match self.policy.strategy {
            Strategy::Digest => Some(Choice::Current),
            _ => None,
        };
    }

    /// Why the newest candidate a reviewer said no to is held back, if any was: what a
    /// report shows for a reference left where it is because of a rejection.
    pub fn held_back(&self) -> Option<String> {
        let newest = self
            .candidates
            .iter()
            .filter_map(|c| match &c.verdict {
                Verdict::Rejected(why) => Some((self.rank(c.tag), c.tag, why)),
                _ => None,
            })
            .max_by(|a, b| a.0.cmp(&b.0))?;
        Some(format!("{} held back: {}", newest.1, newest.2))
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
        // Refused by `verify`: they ranked above every candidate still in the order.
        order.splice(0..0, self.unverified.iter().copied());
        if self.policy.strategy == Strategy::NewestBuild {
            // After the decision, rank by verdict (chosen first), keeping the name order.
            order.sort_by_key(|&i| {
                !matches!(
                    self.candidates.get(i).map(|c| &c.verdict),
                    Some(Verdict::Chosen)
                )
            });
        }
        for i in order {
            if let (Some(r), Some(c)) = (ranked.get_mut(i), self.candidates.get(i)) {
                *r = true;
                out.push(c);
            }
        }
        let mut rest: Vec<&Candidate> = self
            .candidates
            .iter()
            .zip(&ranked)
            .filter(|(_, &r)| !r)
            .map(|(c, _)| c)
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
            Verdict::Chosen => self.chosen_reason(c.tag),
            Verdict::Ranked => "passed every filter, ranked below the chosen tag".into(),
            Verdict::Unexamined => {
                "passed the tag filters; not examined further (a better tag qualified)".into()
            }
            Verdict::Current => "the current tag".into(),
            Verdict::NotAllowed => format!(
                "not matched by allowTags {}",
                p.spec.allow_tags.as_deref().unwrap_or_default()
            ),
            Verdict::Artifact => {
                "a signature, attestation or SBOM stored as a tag (sha256-<digest>…), not an image version".into()
            }
            Verdict::Ignored(g) => format!("matches ignoreTags {g:?}"),
            Verdict::NotAVersion => "not a version".into(),
            Verdict::NotAnInteger => "not an integer".into(),
            Verdict::NoMatch => "does not match the pattern".into(),
            Verdict::Prerelease => "pre-release (the constraint has no pre-release part)".into(),
            Verdict::OtherVariant => self.other_variant(c.tag),
            Verdict::OtherShape => {
                let pattern = |t: &str| TagVersion::parse(t).map(|v| v.pattern());
                let (basis, named) = self.basis();
                format!(
                    "another shape ({}, {} {})",
                    pattern(c.tag).unwrap_or_default(),
                    named.trim_start_matches("the ").trim_end_matches(" tag"),
                    pattern(basis).unwrap_or_default()
                )
            }
            Verdict::OtherPrecision => {
                let (basis, named) = self.basis();
                let parts = TagVersion::parse(basis).map_or(0, |v| v.precision);
                format!("other precision ({named} has {parts} numeric part(s))")
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
            Verdict::LacksPlatform(missing) => match p.strategy {
                Strategy::Digest => format!("lacks {missing} that the pinned image offers"),
                _ => format!("lacks {missing} that {} offers", self.current),
            },
            Verdict::OnlyOtherPlatforms(changed) => {
                let run = crate::platforms::join(&p.platforms);
                match changed.is_empty() {
                    true => format!("only the index changed; the images for {run} are the same"),
                    false => format!("only {changed} changed; the images for {run} are the same"),
                }
            }
            Verdict::TooYoung(when) => format!(
                "{when}, younger than minAge {}",
                p.spec.min_age.as_deref().unwrap_or_default()
            ),
            Verdict::OlderBuild => "built no later than the current tag's image".into(),
            Verdict::SameImage => "same image as the current tag".into(),
            Verdict::NoBuildDate => "the image has no build date (created)".into(),
            Verdict::NoMetadata(e) => format!("metadata unavailable: {e}"),
            Verdict::Rejected(why) => format!("rejected: {why}"),
            Verdict::Unverified(why) => format!("not verified: {why}"),
        }
    }

    /// "chosen", and for a current tag with a revision (`-debian-12-r10`) whether the
    /// version or only the revision moves.
    fn chosen_reason(&self, tag: &str) -> String {
        let (Some(cur), Some(new)) = (TagVersion::parse(&self.current), TagVersion::parse(tag))
        else {
            return "chosen".into();
        };
        if self.policy.semver_mode != SemverMode::Variant
            || self.policy.strategy != Strategy::Semver
            || cur.revision.is_none()
        {
            return "chosen".into();
        }
        let same = (&new.version, new.fourth) == (&cur.version, cur.fourth);
        let how = match (same, new.rank().cmp(&cur.rank())) {
            (true, Ordering::Greater) => "same version, newer revision",
            (true, _) => "same version, older revision",
            (false, Ordering::Greater) => "newer version",
            (false, _) => "older version",
        };
        format!("chosen: {how}")
    }

    /// Why a tag of another variant is not a candidate; for a tag with a revision
    /// (`15.4.0-debian-12-r10`) the variant is its distribution.
    /// The tag the candidates' shape is judged against, and what to call it: the current
    /// tag, or the one assumed when there is none.
    fn basis(&self) -> (&str, &'static str) {
        match self.assumed() {
            Some(tag) if self.current.is_empty() => (tag, "the assumed tag"),
            _ => (&self.current, "the current tag"),
        }
    }

    fn other_variant(&self, tag: &str) -> String {
        let (basis, named) = self.basis();
        let Some(cur) = TagVersion::parse(basis) else {
            return "other variant".into();
        };
        let new = TagVersion::parse(tag);
        let name = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".into());
        let short = named.trim_start_matches("the ").trim_end_matches(" tag");
        match (&cur.revision, new) {
            (Some(_), Some(new)) if new.variant != cur.variant => format!(
                "another distribution ({}, {short} {})",
                name(&new.variant),
                name(&cur.variant)
            ),
            (Some(r), _) => format!("no revision ({named} has -r{r})"),
            (None, Some(new)) if new.revision.is_some() && new.variant == cur.variant => {
                format!("a revision ({named} has none)")
            }
            (None, _) => match cur.variant {
                Some(v) => format!("other variant ({named} is -{v})"),
                None => format!("a variant ({named} has none)"),
            },
        }
    }

    pub fn semver_mode(&self) -> SemverMode {
        self.policy.semver_mode
    }
}

/// Run an evaluation that needs no metadata (tests and offline use).
/// Does `policy` take `tag` (version `v`) as a candidate at all: not a signature artifact,
/// allowed, not ignored, no pre-release unless `pre`, inside the constraint.
fn accepts(policy: &Policy, tag: &str, v: &semver::Version, pre: bool) -> bool {
    !is_artifact_tag(tag)
        && policy.allow.as_ref().is_none_or(|a| a.allows(tag))
        && policy
            .ignore_tags
            .as_ref()
            .is_none_or(|i| i.matching(tag).is_none())
        && (pre || v.pre.is_empty())
        && policy.constraint.as_ref().is_none_or(|c| c.matches(v))
}

pub fn choose_offline<'t>(policy: &Policy, current: &'t str, tags: &'t [String]) -> Choice {
    let mut e = Evaluation::new(policy, current, None, tags);
    e.decide()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidate::Build;
    use crate::{PolicySource, PolicySpec, Strategy};
    use proptest::prelude::{prop_assert, prop_assert_eq, proptest};

    fn policy(spec: PolicySpec) -> Policy {
        Policy::compile(spec, PolicySource::default()).unwrap()
    }

    fn tags(t: &[&str]) -> Vec<String> {
        t.iter().map(|s| s.to_string()).collect()
    }

    /// Versions of equal rank spelled apart (`v1.2.0`, `1.2.0`), listed twice, or of
    /// another variant are ordered by the repository's places as by their keys: the same
    /// order, read once or read each time, in both modes.
    #[test]
    fn equal_ranks_keep_their_order_when_read_once() {
        let list = tags(&[
            "v1.2.0",
            "1.2.0",
            "1.1.0",
            "1.3.0-rc.1",
            "v1.3.0",
            "1.3.0",
            "1.2.0",
            "1.4.0-alpine",
            "1.10.0",
            "v1.10.0",
            "2.0",
        ]);
        for mode in [SemverMode::Variant, SemverMode::Masterminds] {
            let p = policy(PolicySpec {
                semver_mode: Some(mode),
                ..Default::default()
            });
            for current in ["1.1.0", "v1.1.0", "1.0"] {
                let read = TagVersions::read(mode, &list);
                let once = Evaluation::new_read(&p, current, None, &list, Some(&read));
                let each = Evaluation::new(&p, current, None, &list);
                assert_eq!(once.order, each.order, "{mode:?} {current}");
                assert!(!once.order.is_empty(), "{mode:?} {current}");
            }
        }
    }

    fn update(t: &str, d: Option<&str>) -> Choice {
        Choice::Update {
            tag: t.into(),
            digest: d.map(str::to_string),
        }
    }

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn image(digest: &str, builds: &[(&str, &str)]) -> Meta {
        Meta {
            digest: digest.into(),
            builds: builds
                .iter()
                .map(|(p, c)| Build {
                    platform: Some(p.parse().unwrap()),
                    created: Some(ts(c)),
                    digest: None,
                })
                .collect(),
        }
    }

    /// Drive an evaluation with metadata from `meta` (tag → Meta); returns the choice, the
    /// tags asked for in order, and the evaluation for inspection.
    fn run<'t>(
        p: &Policy,
        current: &'t str,
        list: &'t [String],
        meta: &dyn Fn(&str) -> Option<Meta>,
    ) -> (Choice, Vec<String>, Evaluation<'t>) {
        let mut e = Evaluation::new(p, current, None, list);
        e.set_now(ts("2026-11-21T00:00:00Z"));
        let mut asked = Vec::new();
        loop {
            // The current version's image, not counted among the candidates asked for.
            if let Some(r) = e.wanted_current().map(str::to_string) {
                let found = meta(&r).ok_or_else(|| Unread::Missing(format!("{r}: no such tag")));
                e.supply_current(found);
                continue;
            }
            let wanted = e.wanted();
            if wanted.is_empty() {
                break;
            }
            for (i, tag) in wanted {
                asked.push(tag.to_string());
                let found =
                    meta(tag).ok_or_else(|| MetaUnavailable::new(format!("{tag}: no such tag")));
                e.supply(i, found);
            }
        }
        (e.decide(), asked, e)
    }

    /// cosign's signature, attestation and SBOM tags, and the referrers fallback tag, are
    /// never candidates: under `alphabetical`, `sha256-…` sorts above every version.
    #[test]
    fn signature_and_attestation_tags_are_never_candidates() {
        let hex = "ab".repeat(32);
        let list = tags(&[
            "v1.0.0",
            "v1.1.0",
            &format!("sha256-{hex}.sig"),
            &format!("sha256-{hex}.att"),
            &format!("sha256-{hex}.sbom"),
            &format!("sha256-{hex}"),
        ]);
        let alpha = policy(PolicySpec {
            strategy: Some(Strategy::Alphabetical),
            ..Default::default()
        });
        let (choice, _, e) = run(&alpha, "v1.0.0", &list, &|_| None);
        assert_eq!(choice, update("v1.1.0", None));
        let artifacts = e
            .candidates()
            .iter()
            .filter(|c| c.verdict == Verdict::Artifact)
            .count();
        assert_eq!(artifacts, 4);
        // Not 64 hex digits: an ordinary tag.
        assert!(!is_artifact_tag("sha256-abc.sig"));
        assert!(!is_artifact_tag(&format!("sha256-{}.sig", "AB".repeat(32))));
    }

    /// A no to V holds back V and everything between the current version and V; a version
    /// above V is still proposed; a newest-build rejection holds back that tag only.
    #[test]
    fn a_rejection_covers_every_version_up_to_it() {
        let rejected = |tag: &str| {
            std::collections::BTreeMap::from([(
                tag.to_string(),
                "pull request #7 was closed".to_string(),
            )])
        };
        let semver = policy(PolicySpec::default());
        let list = tags(&["3.11.4", "3.11.5", "3.11.6", "3.12.0-rc.1"]);
        let mut e = Evaluation::new(&semver, "3.11.3", None, &list);
        e.reject(&rejected("3.11.6"));
        assert_eq!(e.decide(), Choice::Current);
        assert_eq!(
            e.held_back().as_deref(),
            Some("3.11.6 held back: pull request #7 was closed")
        );
        let below = e
            .candidates()
            .into_iter()
            .find(|c| c.tag == "3.11.4")
            .unwrap();
        assert_eq!(
            below.verdict,
            Verdict::Rejected(
                "pull request #7 was closed (it proposed 3.11.6; a no covers every version up to it)".into()
            )
        );
        let list = tags(&["3.11.4", "3.11.6", "3.11.7"]);
        let mut e = Evaluation::new(&semver, "3.11.3", None, &list);
        e.reject(&rejected("3.11.6"));
        assert_eq!(e.decide(), update("3.11.7", None));

        let numeric = policy(PolicySpec {
            strategy: Some(Strategy::Numeric),
            ..Default::default()
        });
        let list = tags(&["101", "102", "103"]);
        let mut e = Evaluation::new(&numeric, "100", None, &list);
        e.reject(&rejected("102"));
        assert_eq!(e.decide(), update("103", None));
        let mut e = Evaluation::new(&numeric, "100", None, &list);
        e.reject(&rejected("103"));
        assert_eq!(e.decide(), Choice::Current);
    }

    /// A no to a major update (17.2, from 16.1) holds back its own major line only: the
    /// minors of the line in git are still proposed, and below 1.0 the minor is the line.
    #[test]
    fn a_rejected_major_holds_back_its_own_major_line_only() {
        let rejected =
            |tag: &str| std::collections::BTreeMap::from([(tag.to_string(), "closed".to_string())]);
        let semver = policy(PolicySpec::default());
        let list = tags(&["16.5-alpine", "17.0-alpine", "17.2-alpine"]);
        let mut e = Evaluation::new(&semver, "16.1-alpine", None, &list);
        e.reject(&rejected("17.2-alpine"));
        assert_eq!(e.decide(), update("16.5-alpine", None));
        let list = tags(&["0.4.1", "0.5.0", "0.5.2"]);
        let mut e = Evaluation::new(&semver, "0.4.0", None, &list);
        e.reject(&rejected("0.5.2"));
        assert_eq!(e.decide(), update("0.4.1", None));
    }

    fn newest_build() -> PolicySpec {
        PolicySpec {
            strategy: Some(Strategy::NewestBuild),
            ..Default::default()
        }
    }

    #[test]
    fn newest_build_picks_the_latest_created_and_never_goes_back() {
        let p = policy(newest_build());
        let list = tags(&["main-a", "main-b", "zzz-old"]);
        let meta = |t: &str| {
            Some(match t {
                "main-a" => image("sha256:a", &[("linux/amd64", "2026-01-01T00:00:00Z")]),
                "main-b" => image("sha256:b", &[("linux/amd64", "2026-03-01T00:00:00Z")]),
                "zzz-old" => image("sha256:z", &[("linux/amd64", "2025-01-01T00:00:00Z")]),
                _ => return None,
            })
        };
        let (choice, asked, _) = run(&p, "main-a", &list, &meta);
        assert_eq!(choice, update("main-b", Some("sha256:b")));
        // Every candidate and the current tag, each once.
        assert_eq!(asked.len(), 3);
        let (choice, _, e) = run(&p, "main-b", &list, &meta);
        assert_eq!(choice, Choice::Current);
        let reasons: Vec<String> = e.candidates().iter().map(|c| e.reason(c)).collect();
        assert!(reasons.contains(&"built no later than the current tag's image".to_string()));
    }

    #[test]
    fn newest_build_ties_go_to_the_greatest_name_with_a_warning() {
        let p = policy(newest_build());
        let list = tags(&["1.2", "1.2.3", "old"]);
        let meta = |t: &str| {
            Some(match t {
                "1.2" | "1.2.3" => image("sha256:n", &[("linux/amd64", "2026-02-01T00:00:00Z")]),
                "old" => image("sha256:o", &[("linux/amd64", "2026-01-01T00:00:00Z")]),
                _ => return None,
            })
        };
        let (choice, _, e) = run(&p, "old", &list, &meta);
        assert_eq!(choice, update("1.2.3", Some("sha256:n")));
        let w: Vec<&String> = e.warnings().collect();
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("\"1.2.3\" and \"1.2\" share the newest build date"),
            "{w:?}"
        );
    }

    #[test]
    fn newest_build_detects_reproducible_builds() {
        let p = policy(newest_build());
        let list = tags(&["a", "b", "c"]);
        let meta = |t: &str| {
            Some(image(
                &format!("sha256:{t}"),
                &[("linux/amd64", "1970-01-01T00:00:01Z")],
            ))
        };
        let (choice, _, _) = run(&p, "a", &list, &meta);
        match choice {
            Choice::Skip(why) => assert!(why.contains("same build date"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn newest_build_uses_the_requested_platforms_date() {
        let p = policy(PolicySpec {
            platforms: Some(vec!["linux/arm64".into()]),
            ..newest_build()
        });
        let list = tags(&["multi", "single"]);
        let meta = |t: &str| {
            Some(match t {
                // amd64 built last, but arm64 (the one asked for) earlier than `single`.
                "multi" => image(
                    "sha256:index",
                    &[
                        ("linux/amd64", "2026-05-01T00:00:00Z"),
                        ("linux/arm64", "2026-02-01T00:00:00Z"),
                    ],
                ),
                "single" => image("sha256:s", &[("linux/arm64", "2026-03-01T00:00:00Z")]),
                _ => return None,
            })
        };
        let (choice, _, _) = run(&p, "none", &list, &meta);
        assert_eq!(choice, update("single", Some("sha256:s")));
        let p_amd = policy(PolicySpec {
            platforms: Some(vec!["linux/amd64".into()]),
            ..newest_build()
        });
        let (choice, _, e) = run(&p_amd, "none", &list, &meta);
        assert_eq!(choice, update("multi", Some("sha256:index")));
        let single = e
            .candidates()
            .into_iter()
            .find(|c| c.tag == "single")
            .unwrap();
        assert_eq!(e.reason(single), "no image for linux/amd64");
    }

    #[test]
    fn metadata_filters_walk_best_first_only_as_deep_as_needed() {
        let p = policy(PolicySpec {
            min_age: Some("7d".into()),
            ..Default::default()
        });
        let list = tags(&[
            "1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0",
        ]);
        let meta = |t: &str| {
            let created = if t >= "1.5.0" {
                "2026-11-20T00:00:00Z"
            } else {
                "2026-10-01T00:00:00Z"
            };
            Some(image(&format!("sha256:{t}"), &[("linux/amd64", created)]))
        };
        let (choice, asked, e) = run(&p, "1.0.0", &list, &meta);
        assert_eq!(choice, update("1.4.0", Some("sha256:1.4.0")));
        // One batch of four, best first, and nothing below.
        assert_eq!(asked, ["1.6.0", "1.5.0", "1.4.0", "1.3.0"]);
        let young = e
            .candidates()
            .into_iter()
            .find(|c| c.tag == "1.6.0")
            .unwrap();
        assert_eq!(e.reason(young), "built 1d ago, younger than minAge 7d");
        let below = e
            .candidates()
            .into_iter()
            .find(|c| c.tag == "1.2.0")
            .unwrap();
        assert_eq!(below.verdict, Verdict::Unexamined);
    }

    /// An index `digest` of (platform, entry digest) pairs.
    fn index(digest: &str, entries: &[(&str, &str)]) -> Meta {
        Meta {
            digest: digest.into(),
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

    /// Each candidate's reason, best first (as `imagebump tags` prints them).
    fn reasons(e: &Evaluation) -> Vec<String> {
        e.candidates()
            .into_iter()
            .map(|c| format!("{}: {}", c.tag, e.reason(c)))
            .collect()
    }

    /// Walking many candidates that each lack a platform judges each one once: the cost is
    /// linear in the candidates walked, not quadratic.
    #[test]
    fn walking_candidates_judges_each_once() {
        let n = 300;
        let list: Vec<String> = (0..=n).map(|v| format!("1.{v}.0")).collect();
        let meta = |t: &str| {
            Some(match t {
                "1.0.0" => index("sha256:old", &[("linux/amd64", "a"), ("linux/arm64", "b")]),
                _ => index("sha256:new", &[("linux/amd64", "a")]),
            })
        };
        let (choice, asked, e) = run(&Policy::default(), "1.0.0", &list, &meta);
        assert_eq!(choice, Choice::Current);
        assert_eq!(asked.len(), n);
        // Once each when supplied; deciding reads the stored verdicts.
        assert_eq!(e.verdict_calls.get(), n);
    }

    #[test]
    fn a_candidate_must_offer_every_platform_the_current_version_offers() {
        let list = tags(&["1.0.0", "1.1.0", "1.2.0", "1.3.0"]);
        let meta = |t: &str| {
            Some(match t {
                "1.3.0" => index("sha256:13", &[("linux/amd64", "a3")]),
                "1.2.0" => index(
                    "sha256:12",
                    &[("linux/amd64", "a2"), ("linux/arm64/v8", "b2")],
                ),
                _ => index("sha256:old", &[("linux/amd64", "a"), ("linux/arm64", "b")]),
            })
        };
        let (choice, asked, e) = run(&Policy::default(), "1.0.0", &list, &meta);
        assert_eq!(choice, update("1.2.0", Some("sha256:12")));
        // One at a time, only as deep as needed.
        assert_eq!(asked, ["1.3.0", "1.2.0"]);
        assert_eq!(
            reasons(&e),
            [
                "1.3.0: lacks linux/arm64 that 1.0.0 offers",
                "1.2.0: chosen",
                "1.1.0: passed the tag filters; not examined further (a better tag qualified)",
                "1.0.0: the current tag",
            ]
        );
        assert_eq!(e.warnings().count(), 0);
        // `platforms` says what runs: only amd64 is required.
        let amd64 = policy(PolicySpec {
            platforms: Some(vec!["linux/amd64".into()]),
            ..Default::default()
        });
        let (choice, ..) = run(&amd64, "1.0.0", &list, &meta);
        assert_eq!(choice, update("1.3.0", Some("sha256:13")));
        // `any`: nothing is required and no metadata is asked for.
        let any = policy(PolicySpec {
            platforms: Some(vec!["any".into()]),
            ..Default::default()
        });
        let (choice, asked, e) = run(&any, "1.0.0", &list, &|_| None);
        assert_eq!((choice, asked), (update("1.3.0", None), vec![]));
        assert_eq!(e.wanted_current(), None);
    }

    #[test]
    fn an_unreadable_current_version_requires_nothing_and_says_so() {
        let list = tags(&["1.0.0", "1.1.0"]);
        let (choice, asked, e) = run(&Policy::default(), "1.0.0", &list, &|_| None);
        assert_eq!((choice, asked), (update("1.1.0", None), vec![]));
        let warnings: Vec<&String> = e.warnings().collect();
        assert_eq!(
            warnings,
            ["the current version's platforms are not compared (1.0.0: no such tag); list the platforms the repository runs in `platforms`"]
        );
        // No registry at all (a tag list file): nothing said.
        let mut e = Evaluation::new(&Policy::default(), "1.0.0", None, &list);
        assert_eq!(e.wanted_current(), Some("1.0.0"));
        assert!(e.wanted().is_empty(), "the current version comes first");
        e.supply_current(Err(Unread::NoRegistry));
        assert_eq!(e.decide(), update("1.1.0", None));
        assert_eq!(e.warnings().count(), 0);
        // A failure to read it (not a missing image): the reference is not judged.
        let mut e = Evaluation::new(&Policy::default(), "1.0.0", None, &list);
        e.supply_current(Err(Unread::Failed("1.0.0: HTTP 500".into())));
        assert!(e.wanted().is_empty());
        assert_eq!(
            e.decide(),
            Choice::Skip("the current version's platforms: 1.0.0: HTTP 500".into())
        );
        // A chart has no platforms: nothing is asked for.
        let mut e = Evaluation::new(&Policy::default(), "1.0.0", None, &list);
        e.ignore_current_platforms();
        assert_eq!((e.wanted_current(), e.wanted()), (None, vec![]));
        // Nothing above the current tag: its image is not read either.
        let e = Evaluation::new(&Policy::default(), "1.1.0", None, &list);
        assert_eq!(e.wanted_current(), None);
        // A single image: its config's platform.
        let single = |t: &str| {
            Some(match t {
                "1.0.0" => image("sha256:a", &[("linux/arm64", "2026-01-01T00:00:00Z")]),
                _ => image("sha256:b", &[("linux/amd64", "2026-01-01T00:00:00Z")]),
            })
        };
        let (choice, _, e) = run(&Policy::default(), "1.0.0", &list, &single);
        assert_eq!(choice, Choice::Current);
        assert_eq!(reasons(&e)[0], "1.1.0: lacks linux/arm64 that 1.0.0 offers");
    }

    #[test]
    fn digest_moves_only_when_an_image_the_repository_runs_changed() {
        let runs = |platforms: Option<&[&str]>| {
            policy(PolicySpec {
                strategy: Some(Strategy::Digest),
                platforms: platforms.map(|l| l.iter().map(|p| p.to_string()).collect()),
                ..Default::default()
            })
        };
        let old = index("sha256:old", &[("linux/amd64", "a"), ("linux/s390x", "s")]);
        let s390x = index("sha256:new", &[("linux/amd64", "a"), ("linux/s390x", "t")]);
        let amd64 = index("sha256:new", &[("linux/amd64", "b"), ("linux/s390x", "s")]);
        let lost = index("sha256:new", &[("linux/amd64", "b")]);
        let list = tags(&["latest"]);
        let follow = |p: &Policy, now: &Meta| {
            let mut e = Evaluation::new(p, "latest", Some("sha256:old"), &list);
            assert_eq!(e.wanted_current(), None, "the tag first");
            assert!(e.wants_builds());
            e.supply(0, Ok(now.clone()));
            assert_eq!(e.wanted_current(), Some("sha256:old"));
            e.supply_current(Ok(old.clone()));
            assert!(e.wanted().is_empty());
            let choice = e.decide();
            (choice, reasons(&e).remove(0))
        };
        let moved = update("latest", Some("sha256:new"));
        let amd = runs(Some(&["linux/amd64"]));
        assert_eq!(
            follow(&amd, &s390x),
            (
                Choice::Current,
                "latest: only linux/s390x changed; the images for linux/amd64 are the same".into()
            )
        );
        assert_eq!(
            follow(&amd, &amd64),
            (moved.clone(), "latest: chosen".into())
        );
        // Without `platforms`, any change counts, but not the loss of a platform.
        assert_eq!(
            follow(&runs(None), &s390x),
            (moved, "latest: chosen".into())
        );
        assert_eq!(
            follow(&runs(None), &lost),
            (
                Choice::Current,
                "latest: lacks linux/s390x that the pinned image offers".into()
            )
        );
        // The same digest: nothing more is asked for.
        let mut same = Evaluation::new(&amd, "latest", Some("sha256:old"), &list);
        same.supply(0, Ok(old.clone()));
        assert_eq!(same.wanted_current(), None);
        assert_eq!(same.decide(), Choice::Current);
        // Nothing pinned yet: a HEAD is enough.
        let first = Evaluation::new(&runs(None), "latest", None, &list);
        assert!(!first.wants_builds());
        assert_eq!(first.wanted_current(), None);
    }

    #[test]
    fn min_age_counts_from_the_first_sighting_without_a_plausible_build_date() {
        let p = policy(PolicySpec {
            min_age: Some("7d".into()),
            ..Default::default()
        });
        let list = tags(&["1.0.0", "1.1.0", "1.2.0", "1.3.0"]);
        // 1.3.0 and 1.2.0 are reproducible builds (1970), 1.1.0 has no date at all.
        let meta = |t: &str| {
            Some(match t {
                "1.1.0" => Meta {
                    digest: "sha256:1.1.0".into(),
                    builds: vec![Build {
                        platform: Some("linux/amd64".parse().unwrap()),
                        created: None,
                        digest: None,
                    }],
                },
                "1.3.0" | "1.2.0" => image(
                    &format!("sha256:{t}"),
                    &[("linux/amd64", "1970-01-01T00:00:00Z")],
                ),
                _ => image("sha256:old", &[("linux/amd64", "2026-01-01T00:00:00Z")]),
            })
        };
        // A cold start: nothing recorded, nothing is old, every candidate is to record.
        let (choice, _, e) = run(&p, "1.0.0", &list, &meta);
        assert_eq!(choice, Choice::Current);
        assert_eq!(e.unrecorded(), ["1.1.0", "1.2.0", "1.3.0"]);
        let why = |e: &Evaluation, tag: &str| {
            let c = e.candidates().into_iter().find(|c| c.tag == tag).unwrap();
            e.reason(c)
        };
        assert_eq!(
            why(&e, "1.3.0"),
            "first seen now (no earlier record), younger than minAge 7d"
        );
        // Recorded 8 days (1.2.0) and 2 days (1.3.0) before: 1.2.0 is old enough.
        let mut e = Evaluation::new(&p, "1.0.0", None, &list);
        e.set_now(ts("2026-11-21T00:00:00Z"));
        e.set_first_seen(
            [
                ("1.3.0".to_string(), ts("2026-11-19T00:00:00Z")),
                ("1.2.0".to_string(), ts("2026-11-13T00:00:00Z")),
            ]
            .into(),
        );
        e.supply_current(Ok(meta("1.0.0").unwrap()));
        while !e.wanted().is_empty() {
            for (i, t) in e.wanted() {
                e.supply(i, Ok(meta(t).unwrap()));
            }
            e.decide();
        }
        assert_eq!(e.decide(), update("1.2.0", Some("sha256:1.2.0")));
        assert_eq!(
            why(&e, "1.3.0"),
            "first seen 2d ago, younger than minAge 7d"
        );
        assert_eq!(e.unrecorded(), Vec::<&str>::new());
        let held: Vec<&str> = e.held_clocks().iter().map(|(t, _)| *t).collect();
        assert_eq!(held, ["1.3.0"]);
        let clocks: Vec<(&str, &str)> = e.clocks().iter().map(|(t, c)| (*t, c.name())).collect();
        // 1.1.0 is read in the same batch: ranked below the chosen tag, not recorded.
        assert_eq!(
            clocks,
            [
                ("1.1.0", "firstSeen"),
                ("1.2.0", "firstSeen"),
                ("1.3.0", "firstSeen")
            ]
        );
    }

    #[test]
    fn digest_with_min_age_refuses_an_image_without_a_plausible_date() {
        // `digest` follows one tag: a 1970 image is refused, never counted as old.
        let meta = image("sha256:b", &[("linux/amd64", "1970-01-01T00:00:00Z")]);
        let d = policy(PolicySpec {
            strategy: Some(Strategy::Digest),
            min_age: Some("7d".into()),
            ..Default::default()
        });
        let latest = tags(&["latest"]);
        let mut e = Evaluation::new(&d, "latest", Some("sha256:a"), &latest);
        e.set_first_seen([("latest".to_string(), ts("2020-01-01T00:00:00Z"))].into());
        e.supply(0, Ok(meta));
        assert_eq!(e.decide(), Choice::Current);
    }

    #[test]
    fn digest_follows_the_current_tag() {
        let p = policy(PolicySpec {
            strategy: Some(Strategy::Digest),
            ..Default::default()
        });
        let list = tags(&["latest"]);
        let meta = |_: &str| {
            Some(Meta {
                digest: "sha256:new".into(),
                builds: vec![],
            })
        };
        let mut e = Evaluation::new(&p, "latest", Some("sha256:old"), &list);
        // A pinned digest: a new image is compared with it, so the tag's manifest is read.
        assert!(e.wants_builds());
        let wanted = e.wanted();
        assert_eq!(wanted, vec![(0, "latest")]);
        e.supply(0, Ok(meta("latest").unwrap()));
        assert_eq!(e.decide(), update("latest", Some("sha256:new")));
        let mut same = Evaluation::new(&p, "latest", Some("sha256:new"), &list);
        same.supply(0, Ok(meta("latest").unwrap()));
        assert_eq!(same.decide(), Choice::Current);
    }

    #[test]
    fn every_reason_is_explained() {
        let p = policy(PolicySpec {
            constraint: Some("<2".into()),
            allow_tags: Some("regexp:^[0-9]".into()),
            ignore_tags: Some(vec!["*.9".into()]),
            ..Default::default()
        });
        let list = tags(&[
            "1.2.0",
            "1.3.0",
            "1.4.0",
            "1.1.0",
            "2.0.0",
            "1.5.0-rc.1",
            "1.5.0-alpine",
            "1.5",
            "latest",
            "1.9.9",
            "x1",
        ]);
        let mut e = Evaluation::new(&p, "1.2.0", None, &list);
        assert_eq!(e.decide(), update("1.4.0", None));
        let got: Vec<(String, bool, String)> = e
            .candidates()
            .into_iter()
            .map(|c| (c.tag.to_string(), c.verdict.kept(), e.reason(c)))
            .collect();
        let want = [
            ("1.4.0", true, "chosen"),
            (
                "1.3.0",
                true,
                "passed every filter, ranked below the chosen tag",
            ),
            ("1.2.0", false, "the current tag"),
            ("x1", false, "not matched by allowTags regexp:^[0-9]"),
            ("latest", false, "not matched by allowTags regexp:^[0-9]"),
            ("2.0.0", false, "outside the constraint <2"),
            ("1.9.9", false, "matches ignoreTags \"*.9\""),
            (
                "1.5.0-rc.1",
                false,
                "pre-release (the constraint has no pre-release part)",
            ),
            (
                "1.5.0-alpine",
                false,
                "a variant (the current tag has none)",
            ),
            (
                "1.5",
                false,
                "other precision (the current tag has 3 numeric part(s))",
            ),
            ("1.1.0", false, "not newer than the current tag"),
        ];
        let want: Vec<(String, bool, String)> = want
            .iter()
            .map(|(t, k, r)| (t.to_string(), *k, r.to_string()))
            .collect();
        assert_eq!(got, want);
    }

    /// Every candidate's reason, best first, as `imagebump tags` prints them.
    fn explained(spec: PolicySpec, current: &str, listed: &[&str]) -> Vec<String> {
        let p = policy(spec);
        let list = tags(listed);
        let mut e = Evaluation::new(&p, current, None, &list);
        e.decide();
        e.candidates()
            .into_iter()
            .map(|c| format!("{} {}: {}", c.tag, c.verdict.kept(), e.reason(c)))
            .collect()
    }

    /// (current, constraint, listed tags, every verdict best first).
    type ReasonRow<'a> = (&'a str, Option<&'a str>, &'a [&'a str], &'a [&'a str]);

    #[test]
    fn distributions_revisions_and_shapes_are_explained() {
        let rows: &[ReasonRow] = &[
            (
                "15.4.0-debian-12-r10",
                Some("~15.4"),
                &[
                    "15.4.0-debian-12-r9",
                    "15.4.0-debian-12-r11",
                    "15.4.0-debian-11-r3",
                    "15.4.1",
                    "15.4.1-alpine",
                    "15.4.1-debian-12",
                    "15.4.0-debian-12-r10",
                    "15.5.0-debian-12-r0",
                    "15.4.0-debian-12-r12",
                ],
                &[
                    "15.4.0-debian-12-r12 true: chosen: same version, newer revision",
                    "15.4.0-debian-12-r11 true: passed every filter, ranked below the chosen tag",
                    "15.4.0-debian-12-r10 false: the current tag",
                    "15.5.0-debian-12-r0 false: outside the constraint ~15.4",
                    "15.4.1-debian-12 false: no revision (the current tag has -r10)",
                    "15.4.1-alpine false: another distribution (alpine, current debian-12)",
                    "15.4.1 false: another distribution (none, current debian-12)",
                    "15.4.0-debian-12-r9 false: not newer than the current tag",
                    "15.4.0-debian-11-r3 false: another distribution (debian-11, current debian-12)",
                ],
            ),
            (
                "15.4.0-debian-12",
                None,
                &["15.4.1-debian-12-r0", "15.4.1-debian-12"],
                &[
                    "15.4.1-debian-12 true: chosen",
                    "15.4.1-debian-12-r0 false: a revision (the current tag has none)",
                ],
            ),
            (
                "2026-05-01",
                None,
                &["2026-05-10", "2026.06.01", "2026-06", "20260701", "2026-04-30"],
                &[
                    "2026-05-10 true: chosen",
                    "20260701 false: another shape (N, current YYYY-N-N)",
                    "2026.06.01 false: another shape (YYYY.N.N, current YYYY-N-N)",
                    "2026-06 false: another shape (YYYY-N, current YYYY-N-N)",
                    "2026-04-30 false: not newer than the current tag",
                ],
            ),
            (
                "v1.2.3.4",
                None,
                &["v1.2.3.5", "v1.2.4", "1.2.4.0"],
                &[
                    "v1.2.3.5 true: chosen",
                    "v1.2.4 false: another shape (vN.N.N, current vN.N.N.N)",
                    "1.2.4.0 false: another shape (N.N.N.N, current vN.N.N.N)",
                ],
            ),
        ];
        for (current, constraint, listed, want) in rows {
            let spec = PolicySpec {
                constraint: constraint.map(str::to_string),
                ..Default::default()
            };
            assert_eq!(explained(spec, current, listed), *want, "{current}");
        }
    }

    #[test]
    fn downgrades_only_when_allowed() {
        let list = tags(&["1.4.0", "1.4.2", "2.1.0"]);
        let spec = PolicySpec {
            constraint: Some("~1.4".into()),
            ..Default::default()
        };
        assert_eq!(
            choose_offline(&policy(spec.clone()), "2.0.0", &list),
            Choice::Current
        );
        let p = policy(PolicySpec {
            allow_downgrade: Some(true),
            ..spec
        });
        assert_eq!(choose_offline(&p, "2.0.0", &list), update("1.4.2", None));
    }

    #[test]
    fn masterminds_mode_reads_every_suffix_as_a_pre_release() {
        let list = tags(&["1.2.0-alpine", "1.3.0-alpine", "1.3.0", "1.3"]);
        let strict = PolicySpec {
            semver_mode: Some(SemverMode::Masterminds),
            ..Default::default()
        };
        // Masterminds: `1.3` is 1.3.0 too; equal versions go to the greater spelling.
        assert_eq!(
            choose_offline(&policy(strict.clone()), "1.2.0", &list),
            update("1.3.0", None)
        );
        // Suffixes are pre-releases: only a constraint with a pre-release admits them.
        let pre = policy(PolicySpec {
            constraint: Some(">=1.2.0-0".into()),
            ..strict
        });
        assert_eq!(
            choose_offline(&pre, "1.2.0-alpine", &list),
            update("1.3.0", None)
        );
        // The variant rule instead keeps -alpine with -alpine.
        assert_eq!(
            choose_offline(&Policy::default(), "1.2.0-alpine", &list),
            update("1.3.0-alpine", None)
        );
    }

    fn version_tag() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::strategy::Strategy as _;
        (
            0u64..4,
            0u64..6,
            0u64..6,
            proptest::option::of("alpine|rc\\.[0-9]|debian-1[12]-r[0-9]{1,2}"),
        )
            .prop_map(|(a, b, c, s)| match s {
                Some(s) => format!("{a}.{b}.{c}-{s}"),
                None => format!("{a}.{b}.{c}"),
            })
    }

    /// A [`version_tag`], with or without a leading `v`.
    fn spelled_tag() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::strategy::Strategy as _;
        (proptest::bool::ANY, version_tag()).prop_map(|(v, t)| if v { format!("v{t}") } else { t })
    }

    proptest! {
        /// Reading a repository's versions once and sharing them judges every tag as
        /// reading each tag in each evaluation does, in both semver modes (and a read in
        /// the other mode is not used).
        #[test]
        fn versions_read_once_judge_as_read_each_time(
            // Spelled with and without `v`: versions of one rank, one place, ordered by
            // their keys.
            list in proptest::collection::vec(spelled_tag(), 1..30),
            current in version_tag(),
            constraint in proptest::sample::select(vec!["*", "^1", "~2.3", ">=1.2 <3"]),
        ) {
            for mode in [SemverMode::Variant, SemverMode::Masterminds] {
                let p = policy(PolicySpec {
                    constraint: Some(constraint.into()),
                    semver_mode: Some(mode),
                    ..Default::default()
                });
                for read_mode in [SemverMode::Variant, SemverMode::Masterminds] {
                    let read = TagVersions::read(read_mode, &list);
                    let once = Evaluation::new_read(&p, &current, None, &list, Some(&read));
                    let each = Evaluation::new(&p, &current, None, &list);
                    let verdicts = |e: &Evaluation| e.candidates.iter().map(|c| c.verdict.clone()).collect::<Vec<_>>();
                    prop_assert_eq!(verdicts(&once), verdicts(&each));
                    prop_assert_eq!(&once.order, &each.order);
                }
            }
        }

        /// The chosen tag satisfies the constraint, is above the current version, and is
        /// the highest such tag of the current variant.
        #[test]
        fn chosen_satisfies_constraint_and_beats_current(
            list in proptest::collection::vec(version_tag(), 1..30),
            current in version_tag(),
            constraint in proptest::sample::select(vec!["*", "^1", "~2.3", ">=1.2 <3", "1.x || 3.x", "<=2.1.4"]),
        ) {
            let p = policy(PolicySpec { constraint: Some(constraint.into()), ..Default::default() });
            let c = crate::constraint::Constraint::parse(constraint).unwrap();
            let cur = crate::semver::TagVersion::parse(&current).unwrap();
            if let Choice::Update { tag, .. } = choose_offline(&p, &current, &list) {
                let v = crate::semver::TagVersion::parse(&tag).unwrap();
                prop_assert!(c.matches(&v.version), "{tag} outside {constraint}");
                prop_assert!(v.rank() > cur.rank(), "{tag} not above {current}");
                prop_assert_eq!(&v.variant, &cur.variant);
                prop_assert_eq!(v.revision.is_some(), cur.revision.is_some());
                prop_assert!(!v.is_prerelease());
                let better = list.iter().filter_map(|t| crate::semver::TagVersion::parse(t))
                    .filter(|o| o.same_suffix(&cur) && !o.is_prerelease() && c.matches(&o.version))
                    .any(|o| o.rank() > v.rank());
                prop_assert!(!better, "a higher qualifying tag than {tag} exists in {list:?}");
            }
        }
    }
}
