//! The resolve stage: ask the registries, once per distinct repository, and apply each
//! reference's policy to the answer. References that share an image, a policy and a
//! current tag are evaluated once.

pub mod first_seen;
pub mod metadata;
pub mod release;
pub mod schedule;
pub mod signed;
pub mod unheard;

use arcstr::ArcStr;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use futures::stream::{self, StreamExt};

use crate::chunked::Chunked;
use crate::discover::ImageRef;
use crate::progress::Progress;
use crate::registry::client::{Client, TagList};
use crate::registry::{Error, Registries};
use imagebump_model::name::{ImageName, DOCKER_HUB};
use imagebump_model::Problem;
use imagebump_policy::candidate::{Choice, Meta, MetaUnavailable};
use imagebump_policy::evaluate::Evaluation;
use imagebump_policy::platforms::Unread;
use imagebump_policy::semver::TagVersions;
use imagebump_policy::Policy;
use metadata::{MetaCache, Need};

/// What the run decided for one reference. Its strings are shared by the references
/// decided alike (a group's members), so an outcome per reference costs no copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Update {
        tag: ArcStr,
        digest: Option<ArcStr>,
        /// `verify`: the digest verified and who signed it. Boxed: rare, and one outcome is
        /// kept per reference to the end of the run.
        verified: Option<Box<crate::verify::Verified>>,
    },
    UpToDate,
    /// Newer versions exist, but a reviewer said no to them (a closed pull request, a
    /// revert): why.
    Rejected(ArcStr),
    /// A `pin` policy or marker holds it where it is.
    Pinned(ArcStr),
    /// The policy could not judge it (e.g. the current tag is not a version).
    Skipped(ArcStr),
    /// imagebump does not manage it (discovery said why).
    Unmanaged(crate::discover::Unmanaged),
    /// The registry could not be asked.
    Failed(ArcStr),
    /// `tag` would be proposed, but not at this time: outside the policy's `schedule`,
    /// inside a `freeze`, or all updates are stopped (`why`, with when they come next).
    Scheduled {
        tag: ArcStr,
        why: ArcStr,
    },
}

#[derive(Debug, Default)]
pub struct Resolved {
    /// One outcome per reference, in the order of the input. In chunks: made as discovery's
    /// passing allocations are given back, in the room they leave (`chunked.rs`).
    pub outcomes: Chunked<Outcome>,
    pub problems: Vec<Problem>,
    /// Notes that are not errors (ties between build dates, exact constraints).
    pub warnings: Vec<Problem>,
    pub repositories: usize,
    /// The updates held back in time (`Outcome::Scheduled`), as (normalised image, file
    /// written): set by [`schedule::Gate::hold`].
    pub waiting: BTreeSet<(String, String)>,
    /// `minAge`'s first sightings: tags first seen now, records of tags not listed, and the
    /// clock of each chosen update.
    pub sightings: first_seen::Sightings,
}

/// What `minAge` counts from besides build dates: the first sightings recorded, and the
/// time the run judges at.
#[derive(Debug, Clone, Copy)]
pub struct Clocks<'a> {
    pub first_seen: &'a first_seen::FirstSeen,
    pub now: jiff::Timestamp,
}

fn current(r: &ImageRef) -> &str {
    r.tag.as_deref().unwrap_or_default()
}

/// Above this many tags needing metadata in one evaluation, the run warns: each costs a
/// manifest request, and `allowTags` usually narrows them to a handful.
const MANY_CANDIDATES: usize = 100;

/// Where an evaluation gets image metadata from: a registry client and the run's cache, or
/// nowhere (`imagebump tags --tags-from`).
pub type MetaSource<'a> = Option<(&'a Client, &'a MetaCache)>;

/// Feed `eval` the metadata it asks for until it can decide. Returns the metadata errors.
pub async fn settle(
    eval: &mut Evaluation<'_>,
    image: &ImageName,
    policy: &Policy,
    source: MetaSource<'_>,
    concurrency: usize,
) -> Vec<String> {
    let mut errors = Vec::new();
    let need = Need {
        builds: eval.wants_builds(),
        created: policy.needs_created(),
        platforms: &policy.platforms,
    };
    let key = image.to_string();
    let mut warned = false;
    loop {
        if let Some(reference) = eval.wanted_current().map(str::to_string) {
            let read = current_meta(image, &reference, source, need).await;
            if let Err(Unread::Failed(e)) = &read {
                errors.push(e.clone());
            }
            eval.supply_current(read);
            continue;
        }
        let wanted = eval.wanted();
        if wanted.is_empty() {
            return errors;
        }
        if wanted.len() > MANY_CANDIDATES && !warned {
            warned = true;
            tracing::warn!(
                "{image}: the policy needs image metadata for {} tags; narrow the candidates with allowTags",
                wanted.len()
            );
        }
        let Some((client, cache)) = source else {
            let why = "image metadata needs a registry (a tag list file has names only)";
            for (i, _) in wanted {
                eval.supply(i, Err(MetaUnavailable::new(why)));
            }
            errors.push(why.to_string());
            continue;
        };
        let fetched: Vec<_> = stream::iter(wanted)
            .map(|(i, tag)| {
                let key = &key;
                async move {
                    let meta = cache
                        .tag_meta(client, key, &image.repository, tag, need)
                        .await
                        .map_err(|e| MetaUnavailable::new(format!("{tag}: {e}")));
                    (i, meta)
                }
            })
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
        for (i, meta) in fetched {
            if let Err(e) = &meta {
                errors.push(e.to_string());
            }
            eval.supply(i, meta);
        }
    }
}

/// The metadata of the current version's `reference` (a tag, or a pinned digest), as
/// [`Evaluation::wanted_current`] asks: not found (a deleted tag, a digest the registry
/// does not hold) is [`Unread::Missing`]; any other failure is [`Unread::Failed`].
async fn current_meta(
    image: &ImageName,
    reference: &str,
    source: MetaSource<'_>,
    need: Need<'_>,
) -> Result<Meta, Unread> {
    let Some((client, cache)) = source else {
        return Err(Unread::NoRegistry);
    };
    let key = image.to_string();
    match cache
        .tag_meta(client, &key, &image.repository, reference, need)
        .await
    {
        Ok(meta) => Ok(meta),
        Err(metadata::MetaError::Registry(Error::NotFound { .. })) => Err(Unread::Missing(
            format!("{reference}: not found in the registry"),
        )),
        // Docker Hub's pull allowance is used up (the gate's words, as `unheard` reads
        // them): the check is left out rather than every update held back. Any other
        // registry announcing an exhausted allowance, or skipped for failing, is an error
        // for the reference: its headers alone never switch the check off.
        Err(metadata::MetaError::Registry(e @ Error::Skipped { .. }))
            if is_docker_hub_pull_limit(&e) =>
        {
            Err(Unread::Missing(format!("{reference}: {e}")))
        }
        Err(e) => Err(Unread::Failed(format!("{reference}: {e}"))),
    }
}

/// Whether `e` is Docker Hub's own pull limit (the host `docker.io` names, or its API host
/// `registry-1.docker.io`), the one skip that leaves the platform check out.
fn is_docker_hub_pull_limit(e: &Error) -> bool {
    match e {
        Error::Skipped { host, reason } => {
            (host == DOCKER_HUB || host == DOCKER_HUB_API) && reason.contains("pull limit")
        }
        _ => false,
    }
}

/// Docker Hub's registry API host.
const DOCKER_HUB_API: &str = "registry-1.docker.io";

/// The identity of one evaluation: references agreeing on all of it get the same answer.
/// (The policy is keyed by its settings; its compiled regexes are not hashable.)
type GroupKey<'a> = (
    &'a ImageName,
    &'a imagebump_model::policy::PolicySpec,
    &'a str,
    Option<&'a str>,
    Option<&'a Held>,
    // The tags of a promoted reference (src/promote): its candidates instead of the registry's.
    Option<&'a Vec<String>>,
    // A Helm chart: no platforms to compare.
    bool,
);

/// One version reviewers rejected (a closed pull request, a revert), and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub tag: String,
    /// The file the rejected change wrote to; `None`: wherever the image is.
    pub file: Option<String>,
    pub why: String,
}

/// Versions reviewers rejected, per image.
pub type Rejections = HashMap<ImageName, Vec<Rejection>>;

/// The rejected versions that hold for one reference: tag → why.
type Held = BTreeMap<String, String>;

/// The rejections that hold where `r` is: those of its image made at a file its update
/// writes (or recorded without a file). `None` when there are none.
fn held_for(r: &ImageRef, rejections: &Rejections) -> Option<Held> {
    let list = rejections.get(&r.image)?;
    let here = |file: &str| {
        r.touched_files().contains(&file) || *r.file == *file || r.writes_to() == Some(file)
    };
    let mut held = Held::new();
    for x in list.iter().filter(|x| x.file.as_deref().is_none_or(here)) {
        held.entry(x.tag.clone()).or_insert_with(|| x.why.clone());
    }
    (!held.is_empty()).then_some(held)
}

/// Resolve every managed reference. At most `concurrency` requests are in flight overall
/// (each registry also has its own bound). Rejected versions are never chosen.
pub async fn resolve(
    refs: &Chunked<ImageRef>,
    registries: &Registries,
    concurrency: usize,
    rejections: &Rejections,
    progress: &Progress,
) -> Resolved {
    let none = BTreeMap::new();
    let first_seen = first_seen::FirstSeen::default();
    let clocks = Clocks {
        first_seen: &first_seen,
        now: jiff::Timestamp::now(),
    };
    resolve_with(
        refs,
        registries,
        (concurrency, clocks),
        rejections,
        &none,
        progress,
        None,
    )
    .await
}

/// As [`resolve`], with the candidate tags of promoted references (by index) given instead
/// of listed from their registry (src/promote), the tag lists `early` started while
/// discovery was still reading, and `minAge`'s first sightings (`clocks`).
pub async fn resolve_with(
    refs: &Chunked<ImageRef>,
    registries: &Registries,
    (concurrency, clocks): (usize, Clocks<'_>),
    rejections: &Rejections,
    promoted: &BTreeMap<usize, Vec<String>>,
    progress: &Progress,
    early: Option<EarlyLists>,
) -> Resolved {
    let aside = set_aside(refs);
    let asks = survey(pending(refs, &aside), promoted, rejections);
    let mut out = Resolved {
        repositories: asks.users.len(),
        ..Default::default()
    };
    let groups = group(pending(refs, &aside), promoted, &asks.held);
    let cache = MetaCache::new(registries.disk_cache());
    let shared = Shared {
        registries,
        cache: &cache,
        budget: tokio::sync::Semaphore::new(TAG_BUDGET as usize),
        concurrency,
        verifier: crate::verify::Verifier::new(),
        repositories: tokio::sync::Semaphore::new(concurrency.max(1)),
        clocks,
    };
    progress.stage(
        "listing and choosing tags",
        asks.listed.len().saturating_add(groups.len()),
    );
    let by_list = by_repository(groups);
    let (decided, lists) = decide_as_lists_arrive(
        by_list,
        asks.listed,
        &asks.indexed,
        &shared,
        progress,
        early,
    )
    .await;
    let silent = |host: &str| !registries.heard(host);
    let unheard = report_lists(&lists, &asks.users, &silent, &mut out.problems);
    drop(lists);
    let mut outcomes = make_outcomes(refs, decided, &mut out);
    pin_digests(
        refs,
        &mut outcomes,
        registries,
        &cache,
        concurrency,
        &mut out.problems,
    )
    .await;
    out.outcomes = outcomes;
    let (summary, lines) = unheard.problems();
    report_skipped(registries, unheard.hosts(), &mut out.problems);
    out.problems.extend(lines);
    out.problems.sort_by(|a, b| a.location.cmp(&b.location));
    // First: it explains the lines after it.
    out.problems.splice(0..0, summary);
    out.warnings.sort_by(|a, b| a.location.cmp(&b.location));
    out.warnings.dedup();
    out
}

/// Which references are set aside (not managed, pinned, not judged): a byte each while the
/// tag lists come in, their outcomes made at the end with the others', so that no list of
/// outcomes is held at the run's resident peak.
fn set_aside(refs: &Chunked<ImageRef>) -> Vec<bool> {
    refs.iter().map(|r| decided_offline(r).is_some()).collect()
}

/// The references left to resolve, with their indexes: found again where they are read
/// rather than listed, for the same reason as [`set_aside`].
fn pending<'a>(
    refs: &'a Chunked<ImageRef>,
    aside: &'a [bool],
) -> impl Iterator<Item = (u32, &'a ImageRef)> + 'a {
    (0..)
        .zip(refs.iter())
        .zip(aside)
        .filter(|(_, aside)| !**aside)
        .map(|(ir, _): ((u32, &ImageRef), _)| ir)
}

/// What the references left to resolve ask of the registries.
struct Asks<'a> {
    /// How many references name each image.
    users: foldhash::HashMap<&'a ImageName, usize>,
    /// The charts whose versions are read from a classic Helm repository's index.
    indexed: Vec<crate::chart::index::Wanted<'a>>,
    /// The repositories whose tags are listed, with the credentials they are listed with.
    listed: BTreeSet<ListedAs<'a>>,
    /// The rejections that hold where a reference is, by its index (in increasing order).
    held: Vec<(u32, Held)>,
}

/// What the references `pending` ask of the registries, found in one pass.
fn survey<'a>(
    pending: impl Iterator<Item = (u32, &'a ImageRef)>,
    promoted: &BTreeMap<usize, Vec<String>>,
    rejections: &Rejections,
) -> Asks<'a> {
    // Counted, and the repositories to list found, by hashing (one lookup per reference,
    // not a walk of a sorted tree); only the few distinct repositories are then sorted.
    // Only the few references with rejections where they are get a map of their own.
    let mut users: foldhash::HashMap<&ImageName, usize> = Default::default();
    let mut indexed: BTreeSet<crate::chart::index::Wanted> = BTreeSet::new();
    let mut listed: foldhash::HashSet<ListedAs> = Default::default();
    let mut held: Vec<(u32, Held)> = Vec::new();
    for (i, r) in pending {
        let n = users.entry(&r.image).or_default();
        *n = n.saturating_add(1);
        match chart_index(r) {
            Some(index) => {
                indexed.insert((&*r.image, credentials(&r.policy), index));
            }
            None if r.policy.needs_tag_list() && !promoted.contains_key(&(i as usize)) => {
                listed.insert((&*r.image, credentials(&r.policy)));
            }
            None => {}
        }
        held.extend(held_for(r, rejections).map(|h| (i, h)));
    }
    Asks {
        users,
        indexed: indexed.into_iter().collect(),
        listed: listed.into_iter().collect(),
        held,
    }
}

/// The rejections that hold where reference `i` is, in `held` (sorted by index).
fn held_of(held: &[(u32, Held)], i: u32) -> Option<&Held> {
    held.binary_search_by_key(&i, |(j, _)| *j)
        .ok()
        .and_then(|k| held.get(k))
        .map(|(_, h)| h)
}

/// The references `pending` in groups decided alike, each with the policy of its first
/// member (all members have the same spec). Hashed with foldhash: every reference's key
/// (its whole policy spec among it) is hashed here, on the thread that then decides the
/// groups.
fn group<'a>(
    pending: impl Iterator<Item = (u32, &'a ImageRef)>,
    promoted: &'a BTreeMap<usize, Vec<String>>,
    held: &'a [(u32, Held)],
) -> foldhash::HashMap<GroupKey<'a>, (&'a Policy, Vec<u32>)> {
    let mut groups: foldhash::HashMap<GroupKey, (&Policy, Vec<u32>)> = Default::default();
    for (i, r) in pending {
        let key = (
            &*r.image,
            &r.policy.spec,
            current(r),
            r.digest.as_deref(),
            held_of(held, i),
            promoted.get(&(i as usize)),
            r.kind == crate::discover::RefKind::HelmChart,
        );
        groups
            .entry(key)
            .or_insert_with(|| (&r.policy, Vec::new()))
            .1
            .push(i);
    }
    groups
}

/// The groups of each repository (and the credentials it is listed with): they are decided
/// together, its tags read as versions once for all of them, as soon as its list is in.
fn by_repository<'a>(
    groups: foldhash::HashMap<GroupKey<'a>, (&'a Policy, Vec<u32>)>,
) -> BTreeMap<ListedAs<'a>, Vec<Group<'a>>> {
    let mut by_list: BTreeMap<ListedAs, Vec<Group>> = BTreeMap::new();
    for (key, (policy, members)) in groups {
        by_list
            .entry((key.0, credentials(policy)))
            .or_default()
            .push((key, policy, members));
    }
    by_list
}

/// A repository's key as the lists are kept by: owned.
fn owned((name, creds): ListedAs<'_>) -> ListKey {
    (name.clone(), creds.map(str::to_string))
}

/// The tag lists and chart indexes as they come in, and how many answers each repository
/// still waits for.
struct Arrivals {
    lists: Lists,
    left: BTreeMap<ListKey, usize>,
}

impl Arrivals {
    /// Waiting for one answer per key in `sources` (a repository listed, a chart index
    /// read under an image's key), counted as often as it is named.
    fn expecting<'a>(sources: impl Iterator<Item = ListedAs<'a>>) -> Arrivals {
        let mut left: BTreeMap<ListKey, usize> = BTreeMap::new();
        for key in sources {
            let n = left.entry(owned(key)).or_default();
            *n = n.saturating_add(1);
        }
        Arrivals {
            lists: BTreeMap::new(),
            left,
        }
    }

    /// Whether any answer is expected for `key`.
    fn expects(&self, key: &ListKey) -> bool {
        self.left.contains_key(key)
    }

    /// One answer for `key` in (`chart`: a chart index's); its list once every answer
    /// expected for it is in. A chart index read under an image's key stands for its tag
    /// list, whichever came first.
    fn arrive(
        &mut self,
        key: &ListKey,
        result: Result<TagList, Error>,
        chart: bool,
    ) -> Option<Arc<Result<TagList, Error>>> {
        match self.lists.get(key) {
            Some(_) if !chart => {}
            _ => {
                self.lists.insert(key.clone(), Arc::new(result));
            }
        }
        let left = self.left.get_mut(key).map(|n| {
            *n = n.saturating_sub(1);
            *n
        });
        if left == Some(0) {
            self.lists.get(key).cloned()
        } else {
            None
        }
    }
}

/// The decisions of one repository's groups: each group's first member's image, its
/// members' indexes and the decision.
type Decisions<'a> = Vec<(&'a ImageName, Vec<u32>, Decided)>;

/// Every group decided: a repository's as soon as its list (and chart index) is in, the
/// later lists still on their way meanwhile, so choosing costs the run little more than
/// the registry's answers; groups that wait for no list (promoted, `digest`) at once.
/// Returns the decisions and the lists, which the report reads.
async fn decide_as_lists_arrive<'a>(
    by_list: BTreeMap<ListedAs<'a>, Vec<Group<'a>>>,
    listed: BTreeSet<ListedAs<'a>>,
    indexed: &[crate::chart::index::Wanted<'a>],
    shared: &Shared<'_>,
    progress: &Progress,
    early: Option<EarlyLists>,
) -> (Vec<Decisions<'a>>, Lists) {
    let (registries, concurrency) = (shared.registries, shared.concurrency);
    let charts = indexed.iter().map(|(name, creds, _)| (*name, *creds));
    let mut arrivals = Arrivals::expecting(listed.iter().copied().chain(charts));
    let tags = list_tags(listed, registries, concurrency, progress, early);
    let chart_lists = crate::chart::index::list_versions(indexed, registries, concurrency);
    let answers = stream::select(
        tags.map(|(key, result)| (key, result, false)),
        stream::once(chart_lists)
            .flat_map(stream::iter)
            .map(|(key, result)| (key, result, true)),
    )
    .fuse();
    let decide = |groups, list| decide_repository(groups, list, shared, progress);
    let mut deciding = stream::FuturesUnordered::new();
    let mut waiting: BTreeMap<ListKey, Vec<Group>> = BTreeMap::new();
    for (list_key, groups) in by_list {
        if arrivals.expects(&owned(list_key)) {
            waiting.insert(owned(list_key), groups);
        } else {
            deciding.push(decide(groups, None));
        }
    }
    let mut decided = Vec::new();
    futures::pin_mut!(answers);
    loop {
        tokio::select! {
            Some((key, result, chart)) = answers.next() => {
                if let Some(list) = arrivals.arrive(&key, result, chart) {
                    if let Some(groups) = waiting.remove(&key) {
                        deciding.push(decide(groups, Some(list)));
                    }
                }
            }
            Some(d) = deciding.next() => decided.push(d),
            else => break,
        }
    }
    for groups in waiting.into_values() {
        decided.push(decide(groups, None).await);
    }
    (decided, arrivals.lists)
}

/// A problem for each list the registry could not give (with how many references it
/// leaves unchecked) and each list with invalid tag names; the lists of registries never
/// heard (`silent`) are gathered per registry instead, and returned.
fn report_lists(
    lists: &Lists,
    users: &foldhash::HashMap<&ImageName, usize>,
    silent: &dyn Fn(&str) -> bool,
    problems: &mut Vec<Problem>,
) -> unheard::Unheard {
    let mut gathered = unheard::Unheard::default();
    // Skipped lists join their registry's line when it has one (a registry never heard).
    let mut skipped = Vec::new();
    for ((name, _), result) in lists {
        let users = users.get(name).copied().unwrap_or_default();
        gathered.asked(&name.registry);
        match result.as_ref() {
            Err(e) if unheard::unheard(e) && silent(&name.registry) => {
                gathered.add(&name.registry, e, users);
            }
            Err(e @ Error::Skipped { .. }) if silent(&name.registry) => {
                skipped.push((name, e, users));
            }
            // Said once per registry by `report_skipped`, with the reason.
            Err(Error::Skipped { host, .. }) => problems.push(Problem::registry(
                name,
                format!("{users} reference(s) not checked: {host} was skipped"),
                None,
            )),
            Err(e) => problems.push(Problem::registry(
                name,
                format!("{e}; {users} reference(s) not checked"),
                e.hint(),
            )),
            Ok(list) => {
                if let Some(first) = list.invalid.first() {
                    problems.push(Problem::registry(
                        name,
                        format!(
                            "the registry listed {} invalid tag name(s), ignored (first: {first:?})",
                            list.invalid.len(),
                        ),
                        None,
                    ));
                }
            }
        }
    }
    for (name, e, users) in skipped {
        if gathered.has(&name.registry) {
            gathered.add(&name.registry, e, users);
        } else if let Error::Skipped { host, .. } = e {
            problems.push(Problem::registry(
                name,
                format!("{users} reference(s) not checked: {host} was skipped"),
                None,
            ));
        }
    }
    gathered
}

/// One outcome per reference, in the order of the input: its group's decision, or the
/// one it is set aside with. The groups' errors and warnings are added to `out`.
fn make_outcomes(
    refs: &Chunked<ImageRef>,
    decided: Vec<Decisions<'_>>,
    out: &mut Resolved,
) -> Chunked<Outcome> {
    let decided: Vec<_> = decided.into_iter().flatten().collect();
    report_decisions(&decided, out);
    let decision_of = decision_index(refs.len(), &decided);
    let not_resolved = || Outcome::Failed("not resolved".into());
    (refs.iter().zip(&decision_of))
        .map(|(r, &k)| match decided.get(k as usize) {
            Some((_, _, d)) => d.outcome.clone(),
            None => decided_offline(r).unwrap_or_else(not_resolved),
        })
        .collect()
}

/// The groups' errors and warnings, as problems of their image.
fn report_decisions(decided: &[(&ImageName, Vec<u32>, Decided)], out: &mut Resolved) {
    for (name, _, d) in decided {
        for e in &d.errors {
            out.problems.push(Problem::registry(name, e.clone(), None));
        }
        for w in &d.warnings {
            out.warnings.push(Problem::registry(name, w.clone(), None));
        }
        let s = &d.sightings;
        out.sightings.new.extend(s.new.iter().cloned());
        out.sightings.stale.extend(s.stale.iter().cloned());
        out.sightings.clocks.extend(s.clocks.clone());
        out.sightings.held.extend(s.held.clone());
    }
}

/// Each of `len` references' decision, by its index in `decided`; `u32::MAX` for one no
/// group holds (one set aside).
fn decision_index(len: usize, decided: &[(&ImageName, Vec<u32>, Decided)]) -> Vec<u32> {
    let mut decision_of = vec![u32::MAX; len];
    for (k, (_, members, _)) in (0u32..).zip(decided) {
        for &i in members {
            if let Some(o) = decision_of.get_mut(i as usize) {
                *o = k;
            }
        }
    }
    decision_of
}

/// A problem for each registry skipped for the rest of the run, with the reason.
fn report_skipped<'a>(
    registries: &Registries,
    said: impl Iterator<Item = &'a str>,
    problems: &mut Vec<Problem>,
) {
    let said: BTreeSet<&str> = said.collect();
    for (host, why) in registries.skipped() {
        if said.contains(host.as_str()) {
            continue;
        }
        let message = format!("skipped for the rest of the run: {why}");
        let hint = Error::Skipped {
            host: host.clone(),
            reason: why,
        }
        .hint();
        problems.push(Problem {
            location: host,
            message,
            hint,
        });
    }
}

/// The repository URL of a chart whose versions are in a classic Helm repository's index.
fn chart_index(r: &ImageRef) -> Option<&str> {
    if r.kind != crate::discover::RefKind::HelmChart {
        return None;
    }
    crate::chart::classic_repository(&r.written)
}

/// An image's own credentials (an operator `images` rule's, or a pull secret the operator
/// maps in `credentials.pullSecrets`), if any.
fn credentials(policy: &Policy) -> Option<&str> {
    policy.credentials.as_deref()
}

/// A repository and the credentials its tags are listed with.
type ListKey = (ImageName, Option<String>);

/// Tag lists, per repository and the credentials they were read with.
type Lists = BTreeMap<ListKey, std::sync::Arc<Result<TagList, Error>>>;

/// The tag lists of `names`, each as soon as it is in (those started early among them),
/// at most `concurrency` requests at once.
fn list_tags<'a>(
    names: BTreeSet<(&'a ImageName, Option<&'a str>)>,
    registries: &'a Registries,
    concurrency: usize,
    progress: &'a Progress,
    early: Option<EarlyLists>,
) -> impl futures::Stream<Item = (ListKey, Result<TagList, Error>)> + 'a {
    let mut early = early.unwrap_or_else(|| EarlyLists::new(concurrency));
    // Those started early are awaited with the others; all share one bound. Lists started
    // early that resolve does not take are given up when the stream (which keeps `early`)
    // is dropped.
    let names: Vec<_> = names
        .into_iter()
        .map(|(name, creds)| {
            let key = (name.clone(), creds.map(str::to_string));
            let task = early.started.remove(&key);
            (name, creds, task)
        })
        .collect();
    let permits = early.permits.clone();
    stream::iter(names)
        .map(move |(name, creds, task)| {
            let _kept = &early;
            let permits = permits.clone();
            async move {
                let result = match (task, registries.client_with(name, creds)) {
                    (Some(task), _) => task.await.unwrap_or_else(|e| {
                        Err(Error::Config(format!("listing the tags failed: {e}")))
                    }),
                    (None, Ok(client)) => {
                        // The semaphore is never closed, so acquiring only waits.
                        let _permit = permits.acquire().await;
                        client.list_tags(&name.repository).await
                    }
                    (None, Err(e)) => Err(e),
                };
                progress.inc();
                ((name.clone(), creds.map(str::to_string)), result)
            }
        })
        .buffer_unordered(concurrency.max(1))
}

/// The repository (and the credentials it is read with) whose tag list resolve will ask for
/// `r`, known from the reference alone; `None` when resolve asks nothing (unmanaged, pinned,
/// a current tag the policy cannot judge, the `digest` strategy).
pub fn listed_for(r: &ImageRef) -> Option<ListKey> {
    let asks = decided_offline(r).is_none() && r.policy.needs_tag_list();
    asks.then(|| {
        (
            (*r.image).clone(),
            credentials(&r.policy).map(str::to_string),
        )
    })
}

/// The outcome of a reference that costs no request (unmanaged, pinned, a current tag the
/// policy cannot judge); `None` for one resolve asks the registry about. `scan` shows this
/// verdict as the reference's status, so that what it lists as managed is what `run`
/// takes to a registry, and a skipped or pinned one is worded as `run` words it.
pub fn decided_offline(r: &ImageRef) -> Option<Outcome> {
    if let Some(reason) = &r.unmanaged {
        return Some(Outcome::Unmanaged(reason.clone()));
    }
    if r.policy.pin {
        return Some(Outcome::Pinned(
            format!("pinned ({})", r.policy.source).into(),
        ));
    }
    imagebump_policy::cannot_judge(&r.policy, current(r)).map(|why| Outcome::Skipped(why.into()))
}

/// Tag lists started before resolve, while discovery was still reading the tree: one task
/// per repository, at most `concurrency` requests at once among them.
pub struct EarlyLists {
    /// Looked up for every reference discovery meets (foldhash: on the thread that folds).
    started: foldhash::HashMap<ListKey, tokio::task::JoinHandle<Result<TagList, Error>>>,
    /// The copies of the images (discovery keeps one of each) whose list without
    /// credentials is started, by address: most references are told apart from a started
    /// one without making its key (a copy of the name, a look at the current tag). Each is
    /// held, so that no other name takes its address.
    known: foldhash::HashMap<usize, Arc<ImageName>>,
    permits: std::sync::Arc<tokio::sync::Semaphore>,
}

impl EarlyLists {
    pub fn new(concurrency: usize) -> EarlyLists {
        EarlyLists {
            started: Default::default(),
            known: Default::default(),
            permits: std::sync::Arc::new(tokio::sync::Semaphore::new(concurrency.max(1))),
        }
    }

    /// Start listing the repository `r` will need, unless it is started already. Must be
    /// called within the run's Tokio runtime.
    pub fn start(&mut self, r: &ImageRef, registries: &Registries) {
        let plain = credentials(&r.policy).is_none();
        let at = Arc::as_ptr(&r.image) as usize;
        if plain && self.known.contains_key(&at) {
            return;
        }
        let Some(key) = listed_for(r) else {
            return;
        };
        if !self.started.contains_key(&key) {
            // A repository without a client (a configuration error) is left to resolve,
            // which reports it.
            let Ok(client) = registries.client_with(&key.0, key.1.as_deref()) else {
                return;
            };
            let permits = self.permits.clone();
            let repository = key.0.repository.clone();
            let task = tokio::spawn(async move {
                // The semaphore is never closed, so acquiring only waits.
                let _permit = permits.acquire_owned().await;
                // Boxed once it may run: a request's future is kilobytes, and a task holds
                // its future from the start, so every waiting task would hold one during
                // discovery's peak.
                Box::pin(client.list_tags(&repository)).await
            });
            self.started.insert(key, task);
        }
        if plain {
            self.known.insert(at, Arc::clone(&r.image));
        }
    }
}

impl Drop for EarlyLists {
    /// Lists resolve did not take (the run stopped first) are not waited for.
    fn drop(&mut self) {
        for task in self.started.values() {
            task.abort();
        }
    }
}

/// Evaluations in flight hold at most about a million tags between them: one permit per
/// [`TAGS_PER_PERMIT`] tags (a short list needs none), so a few huge repositories are
/// judged one after another instead of together.
const TAG_BUDGET: u32 = 16;
const TAGS_PER_PERMIT: usize = 62_500;

/// What every group's decision shares.
struct Shared<'a> {
    registries: &'a Registries,
    cache: &'a MetaCache,
    budget: tokio::sync::Semaphore,
    concurrency: usize,
    verifier: crate::verify::Verifier,
    /// At most `concurrency` repositories are decided at once.
    repositories: tokio::sync::Semaphore,
    clocks: Clocks<'a>,
}

#[derive(Debug)]
struct Decided {
    outcome: Outcome,
    errors: Vec<String>,
    warnings: Vec<String>,
    /// `minAge`: what this group learned of first sightings.
    sightings: first_seen::Sightings,
}

impl Decided {
    /// A decision that could not be made, for `why`.
    fn failed(why: String) -> Decided {
        Decided {
            outcome: Outcome::Failed(why.into()),
            errors: Vec::new(),
            warnings: Vec::new(),
            sightings: first_seen::Sightings::default(),
        }
    }
}

/// A repository's tag list as listed: its name and the credentials it was listed with.
type ListedAs<'a> = (&'a ImageName, Option<&'a str>);

/// One group of references decided alike: its key, its policy, its members' indexes (a
/// discovery holds fewer than `u32::MAX` references: each is over a hundred bytes).
type Group<'a> = (GroupKey<'a>, &'a Policy, Vec<u32>);

/// The groups of one repository decided, given its list (`None`: none was asked for), at
/// most `concurrency` of them at once.
async fn decide_repository<'a>(
    groups: Vec<Group<'a>>,
    list: Option<std::sync::Arc<Result<TagList, Error>>>,
    shared: &Shared<'_>,
    progress: &Progress,
) -> Vec<(&'a ImageName, Vec<u32>, Decided)> {
    // The semaphore is never closed, so acquiring only waits.
    let _permit = shared.repositories.acquire().await;
    let list = list.as_deref();
    let read = read_versions(&groups, list);
    let stale = stale_records(&groups, list, shared.clocks.first_seen);
    let mut decided: Vec<_> = stream::iter(groups)
        .map(|(key, policy, members)| {
            let read = read.as_ref();
            async move {
                let name = key.0;
                let d = decide_group(key, policy, list, shared, read).await;
                progress.inc();
                (name, members, d)
            }
        })
        .buffer_unordered(shared.concurrency.max(1))
        .collect()
        .await;
    if let Some((_, _, d)) = decided.first_mut() {
        d.sightings.stale.extend(stale);
    }
    decided
}

/// The first-sighting records of a repository whose tag its list no longer holds, when a
/// group judges it with `minAge` and the list was read.
fn stale_records(
    groups: &[Group<'_>],
    list: Option<&Result<TagList, Error>>,
    recorded: &first_seen::FirstSeen,
) -> Vec<String> {
    let Some(((image, ..), ..)) = groups.iter().find(|(_, p, _)| p.min_age.is_some()) else {
        return Vec::new();
    };
    match list {
        Some(Ok(list)) => recorded.stale(&image.to_string(), &list.tags),
        _ => Vec::new(),
    }
}

/// The versions of a repository's listed tags, read once when more than one of its groups
/// would read them (semver, from the list, in one mode). Not for a list long enough to need
/// the tag budget: those are read group by group, as the budget allows.
fn read_versions(
    groups: &[Group<'_>],
    list: Option<&Result<TagList, Error>>,
) -> Option<TagVersions> {
    let mut modes = groups.iter().filter_map(|(key, policy, _)| {
        (policy.strategy == imagebump_model::policy::Strategy::Semver && key.5.is_none())
            .then_some(policy.semver_mode)
    });
    let mode = modes.next()?;
    if !modes.any(|m| m == mode) {
        return None;
    }
    match list {
        Some(Ok(list)) if list.tags.len() < TAGS_PER_PERMIT => {
            Some(TagVersions::read(mode, &list.tags))
        }
        _ => None,
    }
}

/// One group's decision: its candidate tags judged by its policy, with the image metadata
/// and the signatures the evaluation asks for.
async fn decide_group(
    (image, _, current, digest, rejected, promoted, chart): GroupKey<'_>,
    policy: &Policy,
    list: Option<&Result<TagList, Error>>,
    shared: &Shared<'_>,
    read: Option<&TagVersions>,
) -> Decided {
    let tags = match candidate_tags(promoted, policy.needs_tag_list(), list, current) {
        Ok(tags) => tags,
        Err(why) => return Decided::failed(why.to_string()),
    };
    // The semaphore is never closed, so acquiring only waits.
    let _permit = shared.budget.acquire_many(tag_weight(tags.len())).await;
    // Versions read for the repository's list, not for a promoted reference's own tags.
    let read = read.filter(|_| promoted.is_none());
    let mut eval = Evaluation::new_read(policy, current, digest, &tags, read);
    if let Some(r) = rejected {
        eval.reject(r);
    }
    let repository = image.to_string();
    eval.set_now(shared.clocks.now);
    if policy.min_age.is_some() {
        eval.set_first_seen(shared.clocks.first_seen.of(&repository, &tags));
    }
    if chart {
        eval.ignore_current_platforms();
    }
    let mut client = None;
    let asks = !eval.wanted().is_empty() || eval.wanted_current().is_some();
    if asks || policy.spec.verify.is_some() {
        match shared.registries.client_with(image, credentials(policy)) {
            Ok(c) => client = Some(c),
            Err(e) => return Decided::failed(e.to_string()),
        }
    }
    let source = client.as_deref().map(|c| (c, shared.cache));
    let errors = settle(&mut eval, image, policy, source, shared.concurrency).await;
    let listed = policy.needs_tag_list().then_some(&*tags);
    let signed = signed::decide(
        &mut eval,
        image,
        policy,
        source,
        &shared.verifier,
        listed,
        shared.concurrency,
    );
    let signed = signed.await;
    let mut decided = conclude(&eval, signed, errors);
    decided.sightings = sightings_of(&eval, &repository, &decided.outcome);
    decided
}

/// The tags `eval` held back as first seen now, and the clock of the tag it chose.
fn sightings_of(
    eval: &Evaluation<'_>,
    repository: &str,
    outcome: &Outcome,
) -> first_seen::Sightings {
    let key = |tag: &str| (repository.to_string(), tag.to_string());
    let chosen = match outcome {
        Outcome::Update { tag, .. } => Some(tag.as_str()),
        _ => None,
    };
    first_seen::Sightings {
        new: eval.unrecorded().into_iter().map(key).collect(),
        stale: BTreeSet::new(),
        clocks: eval
            .clocks()
            .into_iter()
            .filter(|(t, _)| Some(*t) == chosen)
            .map(|(t, c)| (key(t), c))
            .collect(),
        held: eval
            .held_clocks()
            .into_iter()
            .map(|(t, c)| (key(t), c))
            .collect(),
    }
}

/// The tags a group chooses among: a promoted reference's own, the repository's list when
/// the policy needs one, or else the current tag alone. Why not, when the list is missing.
fn candidate_tags<'t>(
    promoted: Option<&'t Vec<String>>,
    needs_list: bool,
    list: Option<&'t Result<TagList, Error>>,
    current: &str,
) -> Result<Cow<'t, [String]>, Unlisted<'t>> {
    if let Some(tags) = promoted {
        return Ok(Cow::Borrowed(tags));
    }
    if !needs_list {
        return Ok(Cow::Owned(vec![current.to_string()]));
    }
    match list {
        Some(Ok(list)) => Ok(Cow::Borrowed(&list.tags)),
        Some(Err(e)) => Err(Unlisted::Failed(e)),
        None => Err(Unlisted::NotListed),
    }
}

/// Why a group has no tags to choose among: the listing failed, or was not made.
#[derive(Debug)]
enum Unlisted<'t> {
    Failed(&'t Error),
    NotListed,
}

/// A reference's status: short when its registry is not heard (the registry's own line
/// says why, once), else the whole error.
impl std::fmt::Display for Unlisted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unlisted::Failed(e) => match unheard::status(e) {
                Some(status) => f.write_str(status),
                None => write!(f, "{e}"),
            },
            Unlisted::NotListed => f.write_str("tags not listed"),
        }
    }
}

/// The permits of the tag budget an evaluation of `tags` tags holds.
fn tag_weight(tags: usize) -> u32 {
    u32::try_from(tags / TAGS_PER_PERMIT)
        .unwrap_or(TAG_BUDGET)
        .min(TAG_BUDGET)
}

/// The decision once the evaluation and the signature checks are done. A candidate whose
/// metadata could not be read might have been the right answer: on any error the group
/// fails (with the first) and changes nothing rather than guess.
fn conclude(eval: &Evaluation<'_>, signed: signed::Signed, metadata: Vec<String>) -> Decided {
    let verified = signed.verified().map(Box::new);
    let mut warnings: Vec<String> = eval.warnings().cloned().collect();
    warnings.extend(signed.refused);
    let mut errors: Vec<String> = metadata
        .into_iter()
        .map(|e| format!("image metadata: {e}"))
        .collect();
    errors.extend(signed.errors);
    let outcome = match errors.first() {
        Some(first) => Outcome::Failed(first.as_str().into()),
        None => outcome_of(signed.choice, eval.held_back(), verified),
    };
    Decided {
        outcome,
        errors,
        warnings,
        sightings: first_seen::Sightings::default(),
    }
}

/// The outcome of an evaluation's choice; `held_back` says why staying is a rejection
/// (newer versions exist that reviewers said no to).
fn outcome_of(
    choice: Choice,
    held_back: Option<String>,
    verified: Option<Box<crate::verify::Verified>>,
) -> Outcome {
    match choice {
        Choice::Update { tag, digest } => Outcome::Update {
            tag: tag.into(),
            digest: digest.map(Into::into),
            verified,
        },
        Choice::Current => match held_back {
            Some(why) => Outcome::Rejected(why.into()),
            None => Outcome::UpToDate,
        },
        Choice::Skip(reason) => Outcome::Skipped(reason.into()),
    }
}

/// References pinned by digest move to the new tag's digest: one HEAD per distinct
/// (repository, tag) whose digest the run has not already learned.
async fn pin_digests(
    refs: &Chunked<ImageRef>,
    outcomes: &mut Chunked<Outcome>,
    registries: &Registries,
    cache: &MetaCache,
    concurrency: usize,
    problems: &mut Vec<Problem>,
) {
    let wanted = digests_wanted(refs, outcomes);
    let digests = fetch_digests(wanted, registries, cache, concurrency).await;
    for ((name, tag), result) in &digests {
        if let Err(e) = result {
            problems.push(Problem::registry(
                name,
                format!("digest of {tag}: {e}"),
                e.hint(),
            ));
        }
    }
    for (r, o) in refs.iter().zip(outcomes.iter_mut()) {
        if let (
            Outcome::Update {
                tag, digest: None, ..
            },
            Some(_),
        ) = (&mut *o, &r.digest)
        {
            *o = pinned(tag, digests.get(&((*r.image).clone(), tag.clone())));
        }
    }
}

/// The (repository, tag, credentials) whose digest the references pinned by digest need:
/// those moving to a tag whose digest the run did not learn.
fn digests_wanted<'a>(
    refs: &'a Chunked<ImageRef>,
    outcomes: &Chunked<Outcome>,
) -> BTreeSet<(ImageName, ArcStr, Option<&'a str>)> {
    refs.iter()
        .zip(outcomes.iter())
        .filter_map(|(r, o)| match o {
            Outcome::Update {
                tag, digest: None, ..
            } if r.digest.is_some() => {
                Some(((*r.image).clone(), tag.clone(), credentials(&r.policy)))
            }
            _ => None,
        })
        .collect()
}

/// The digests of `wanted`, at most `concurrency` requests at once.
async fn fetch_digests(
    wanted: BTreeSet<(ImageName, ArcStr, Option<&str>)>,
    registries: &Registries,
    cache: &MetaCache,
    concurrency: usize,
) -> BTreeMap<(ImageName, ArcStr), Result<String, Error>> {
    stream::iter(wanted)
        .map(|(name, tag, creds)| async move {
            let result = match registries.client_with(&name, creds) {
                Ok(client) => {
                    cache
                        .digest(&client, &name.to_string(), &name.repository, &tag)
                        .await
                }
                Err(e) => Err(e),
            };
            ((name, tag), result)
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await
}

/// The outcome of a reference pinned by digest that moves to `tag`, given what asking
/// for the tag's digest `found`.
fn pinned(tag: &ArcStr, found: Option<&Result<String, Error>>) -> Outcome {
    match found {
        Some(Ok(d)) => Outcome::Update {
            tag: tag.clone(),
            digest: Some(d.as_str().into()),
            verified: None,
        },
        Some(Err(e)) => Outcome::Failed(e.to_string().into()),
        None => Outcome::Failed("digest not resolved".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use imagebump_model::name::parse_name;

    fn key(name: &str) -> ListKey {
        (parse_name(name).unwrap(), None)
    }

    fn list(tags: &[&str]) -> Result<TagList, Error> {
        Ok(TagList {
            tags: tags.iter().map(|t| t.to_string()).collect(),
            invalid: Vec::new(),
        })
    }

    fn tags_of(ready: Option<Arc<Result<TagList, Error>>>) -> Option<Vec<String>> {
        ready.map(|l| l.as_ref().as_ref().unwrap().tags.clone())
    }

    #[test]
    fn a_list_is_ready_once_every_answer_is_in_and_a_chart_index_stands_for_it() {
        let app = parse_name("ghcr.io/acme/app").unwrap();
        let chart = parse_name("ghcr.io/acme/chart").unwrap();
        let sources = [(&app, None), (&chart, None), (&chart, None)];
        let mut arrivals = Arrivals::expecting(sources.into_iter());
        assert!(arrivals.expects(&key("ghcr.io/acme/app")));
        assert!(!arrivals.expects(&key("ghcr.io/acme/other")));

        let ready = arrivals.arrive(&key("ghcr.io/acme/app"), list(&["1.0"]), false);
        assert_eq!(tags_of(ready), Some(vec!["1.0".to_string()]));

        // The chart index first, then the tag list: the index is kept.
        let chart_key = key("ghcr.io/acme/chart");
        assert!(arrivals.arrive(&chart_key, list(&["2.0"]), true).is_none());
        let ready = arrivals.arrive(&chart_key, list(&["9.9"]), false);
        assert_eq!(tags_of(ready), Some(vec!["2.0".to_string()]));

        // The tag list first, then the chart index: the index replaces it.
        let mut arrivals = Arrivals::expecting([(&chart, None), (&chart, None)].into_iter());
        assert!(arrivals.arrive(&chart_key, list(&["9.9"]), false).is_none());
        let ready = arrivals.arrive(&chart_key, list(&["2.0"]), true);
        assert_eq!(tags_of(ready), Some(vec!["2.0".to_string()]));
    }

    #[test]
    fn an_answer_nobody_waits_for_is_kept_but_never_ready() {
        let mut arrivals = Arrivals::expecting(std::iter::empty());
        let other = key("ghcr.io/acme/other");
        assert!(arrivals.arrive(&other, list(&["1.0"]), false).is_none());
        assert!(arrivals.lists.contains_key(&other));
    }

    #[test]
    fn candidate_tags_come_from_the_promotion_the_list_or_the_current_tag() {
        let promoted = vec!["1.2".to_string()];
        let listed = list(&["1.0", "1.1"]);
        let failed: Result<TagList, Error> = Err(Error::Config("no client".into()));

        let tags = candidate_tags(Some(&promoted), true, Some(&listed), "1.0").unwrap();
        assert_eq!(&*tags, ["1.2"]);
        let tags = candidate_tags(None, true, Some(&listed), "1.0").unwrap();
        assert_eq!(&*tags, ["1.0", "1.1"]);
        let tags = candidate_tags(None, false, None, "1.0").unwrap();
        assert_eq!(&*tags, ["1.0"]);
        assert_eq!(
            candidate_tags(None, true, Some(&failed), "1.0")
                .unwrap_err()
                .to_string(),
            "registry configuration: no client"
        );
        assert_eq!(
            candidate_tags(None, true, None, "1.0")
                .unwrap_err()
                .to_string(),
            "tags not listed"
        );
    }

    #[test]
    fn a_short_list_needs_no_permit_and_a_huge_one_the_whole_budget() {
        assert_eq!(tag_weight(0), 0);
        assert_eq!(tag_weight(TAGS_PER_PERMIT - 1), 0);
        assert_eq!(tag_weight(TAGS_PER_PERMIT * 3), 3);
        assert_eq!(tag_weight(usize::MAX), TAG_BUDGET);
    }

    #[test]
    fn a_choice_becomes_an_outcome() {
        let update = Choice::Update {
            tag: "1.1".into(),
            digest: Some("sha256:ab".into()),
        };
        assert_eq!(
            outcome_of(update, None, None),
            Outcome::Update {
                tag: "1.1".into(),
                digest: Some("sha256:ab".into()),
                verified: None,
            }
        );
        assert_eq!(outcome_of(Choice::Current, None, None), Outcome::UpToDate);
        assert_eq!(
            outcome_of(Choice::Current, Some("1.1 was closed".into()), None),
            Outcome::Rejected("1.1 was closed".into())
        );
        assert_eq!(
            outcome_of(Choice::Skip("not a version".into()), None, None),
            Outcome::Skipped("not a version".into())
        );
    }

    #[test]
    fn a_pinned_reference_moves_to_the_digest_found_or_fails() {
        let tag = ArcStr::from("1.1");
        assert_eq!(
            pinned(&tag, Some(&Ok("sha256:ab".to_string()))),
            Outcome::Update {
                tag: tag.clone(),
                digest: Some("sha256:ab".into()),
                verified: None,
            }
        );
        assert_eq!(
            pinned(&tag, Some(&Err(Error::Config("broken".into())))),
            Outcome::Failed("registry configuration: broken".into())
        );
        assert_eq!(
            pinned(&tag, None),
            Outcome::Failed("digest not resolved".into())
        );
    }

    #[test]
    fn each_member_points_at_its_group_and_the_rest_at_none() {
        let name = parse_name("ghcr.io/acme/app").unwrap();
        let decided = [
            (&name, vec![0, 3], Decided::failed("a".into())),
            (&name, vec![2, 99], Decided::failed("b".into())),
        ];
        assert_eq!(decision_index(4, &decided), [0, u32::MAX, 1, 0]);
    }

    #[test]
    fn held_rejections_are_found_by_index() {
        let mut one = Held::new();
        one.insert("1.1".into(), "closed".into());
        let held = vec![(2, one.clone()), (7, Held::new())];
        assert_eq!(held_of(&held, 2), Some(&one));
        assert_eq!(held_of(&held, 7), Some(&Held::new()));
        assert_eq!(held_of(&held, 3), None);
    }

    #[test]
    fn a_list_that_failed_or_had_invalid_names_is_reported_with_its_users() {
        let app = parse_name("ghcr.io/acme/app").unwrap();
        let web = parse_name("ghcr.io/acme/web").unwrap();
        let mut lists: Lists = BTreeMap::new();
        lists.insert(
            (app.clone(), None),
            Arc::new(Err(Error::Config("broken".into()))),
        );
        let invalid = TagList {
            tags: vec!["1.0".into()],
            invalid: vec!["-bad".into(), "also bad".into()],
        };
        lists.insert((web.clone(), None), Arc::new(Ok(invalid)));
        let mut users: foldhash::HashMap<&ImageName, usize> = Default::default();
        users.insert(&app, 3);
        let mut problems = Vec::new();
        report_lists(&lists, &users, &|_| false, &mut problems);
        let said: Vec<_> = problems
            .iter()
            .map(|p| (p.location.as_str(), p.message.as_str()))
            .collect();
        assert_eq!(
            said,
            [
                (
                    "ghcr.io/acme/app",
                    "registry configuration: broken; 3 reference(s) not checked"
                ),
                (
                    "ghcr.io/acme/web",
                    "the registry listed 2 invalid tag name(s), ignored (first: \"-bad\")"
                ),
            ]
        );
    }
}
