//! Promotion from git history: a reference under an `images` rule with `promoteFrom` takes
//! as candidates the versions its source environment has run, from the base branch's
//! first-parent history, once they have soaked there (docs/promotion.md).
//!
//! This module reads that history once per run (two `git log`s, one `ls-tree`, one
//! `cat-file --batch` over every file involved) and hands resolve a tag list per promoted
//! reference; resolve then applies the rule's policy and the rejections as for registry tags.

pub mod render;
pub mod seen;
pub mod status;
pub mod timeline;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::discover::{Discovery, ImageRef, SlotFormat};
use crate::resolve::Rejections;
use crate::source::git::{FileHistory, Git};
use imagebump_model::config::Config;
use imagebump_model::env::EnvVars;
use imagebump_model::Problem;
use imagebump_policy::rules::Policies;
use timeline::{Change, Timeline, Verdict};

/// Largest file version read from history.
const MAX_BLOB_BYTES: usize = 8 << 20;

/// One promoted reference: where its versions come from and what they are worth now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Promotion {
    /// Its index in the discovery's references (after [`Promotions::reindex`], in the
    /// scoped or sharded list).
    pub index: usize,
    /// Its index in the whole discovery the history was read for: what `source_index` and
    /// the timelines count in.
    pub origin: usize,
    /// Where the reference is: (file, line, column, unit), to find it again.
    pub at: (String, u32, u32, String),
    /// The application's name: the first `{name}` captured, else the image's last segment.
    pub app: String,
    pub source_dir: String,
    /// The source environment's name: the source directory's last segment.
    pub source_env: String,
    /// Seconds a version must have run in the source.
    pub soak: i64,
    /// The reference in the source holding the same image (its index), if any.
    pub source_index: Option<usize>,
    /// Each version the source ran, judged now.
    pub verdicts: BTreeMap<String, Verdict>,
    /// The source's versions rejected by reviewers there: tag → why.
    pub rejected_in_source: BTreeMap<String, String>,
    /// Why nothing can be promoted at all (no such image in the source...), if so.
    pub blocked: Option<String>,
}

impl Promotion {
    /// The versions that may be promoted: soaked, not reverted, not rejected in the source.
    pub fn candidates(&self) -> Vec<String> {
        self.verdicts
            .iter()
            .filter(|(tag, v)| {
                matches!(v, Verdict::Ready { .. }) && !self.rejected_in_source.contains_key(*tag)
            })
            .map(|(tag, _)| tag.clone())
            .collect()
    }
}

/// Everything the run knows about promotion.
#[derive(Debug, Clone, Default)]
pub struct Promotions {
    pub list: Vec<Promotion>,
    /// The timeline of every reference read from history (promoted ones and their
    /// sources), by index.
    pub timelines: BTreeMap<usize, Timeline>,
    /// "Now", seconds since the epoch.
    pub now: i64,
    /// The clone is shallow: versions older than its history count from its oldest commit.
    pub shallow: bool,
    /// The versions in a source environment now that no record says were seen before
    /// ([`seen`]): a run that delivers records them, seen at `now`.
    pub unseen: Vec<seen::Key>,
    pub problems: Vec<Problem>,
}

impl Promotions {
    /// The tag list of each promoted reference, by index, for resolve: every promoted
    /// reference has one (maybe empty), so none is resolved from the registry.
    pub fn candidates(&self) -> BTreeMap<usize, Vec<String>> {
        self.list
            .iter()
            .map(|p| (p.index, p.candidates()))
            .collect()
    }

    /// Each source version's verdict again, its stretches counted from the later of their
    /// committer date and when a record says imagebump first saw it there (a version no
    /// record names counts from `now`: this run is the first to see it, and records it).
    fn apply_sightings(&mut self, found: &Discovery, seen: &seen::Seen) {
        let now = self.now;
        for p in &mut self.list {
            let Some(src) = p.source_index else { continue };
            let (Some(t), Some(r)) = (self.timelines.get(&src), found.refs.get(src)) else {
                continue;
            };
            let image = r.image.to_string();
            let key = |tag: &str| (p.source_dir.clone(), image.clone(), tag.to_string());
            let mut t = t.clone();
            for s in &mut t.segments {
                s.since = s.since.max(seen.get(&key(&s.tag)).unwrap_or(now));
            }
            p.verdicts = t.verdicts(now, p.soak);
            let current = t.current().map(|s| key(&s.tag));
            if let Some(k) = current.filter(|k| seen.get(k).is_none()) {
                if !self.unseen.contains(&k) {
                    self.unseen.push(k);
                }
            }
        }
    }

    /// The promotion of the reference at `origin` in the whole discovery.
    pub fn of(&self, origin: usize) -> Option<&Promotion> {
        self.list.iter().find(|p| p.origin == origin)
    }

    /// The promotions of the references `found` still holds (a scope or a shard kept part
    /// of the whole discovery they were read for), each with its index there. Sources
    /// outside the part still count.
    pub fn reindex(mut self, found: &Discovery) -> Promotions {
        // Without promotions there is nothing to find: no index of every reference (45,000
        // entries at 10,000 apps, built and dropped for nothing).
        if self.list.is_empty() {
            return self;
        }
        let at: std::collections::HashMap<(&str, u32, u32, &str), usize> = found
            .refs
            .iter()
            .enumerate()
            .map(|(i, r)| ((&*r.file, r.line, r.column, &*r.unit), i))
            .collect();
        self.list.retain_mut(|p| {
            let key = (p.at.0.as_str(), p.at.1, p.at.2, p.at.3.as_str());
            at.get(&key).map(|&i| p.index = i).is_some()
        });
        self
    }
}

/// `IMAGEBUMP_TEST_NOW` that is not an RFC 3339 time; holds the text as set.
#[derive(Debug, thiserror::Error)]
#[error(
    "{}: {text:?} is not an RFC 3339 time: {error}",
    EnvVars::IMAGEBUMP_TEST_NOW
)]
pub struct BadTestNow {
    text: String,
    error: jiff::Error,
}

/// "Now": the clock, or `IMAGEBUMP_TEST_NOW` (an RFC 3339 time; for tests only).
pub fn now() -> Result<i64, BadTestNow> {
    match EnvVars::get(EnvVars::IMAGEBUMP_TEST_NOW) {
        Some(text) => match text.parse::<jiff::Timestamp>() {
            Ok(t) => Ok(t.as_second()),
            Err(error) => Err(BadTestNow { text, error }),
        },
        None => Ok(jiff::Timestamp::now().as_second()),
    }
}

/// [`read`] at [`now`]; a bad `IMAGEBUMP_TEST_NOW` is a problem, and the clock is used.
/// `seen`: the first sightings the remote records (`None`: a local directory, which has
/// none, and where soak counts from committer dates).
pub fn read_now(
    found: &Discovery,
    (config, root): (&Config, &Path),
    depth: usize,
    (rejections, seen): (&Rejections, Option<&seen::Seen>),
) -> Promotions {
    let (now, bad) = match now() {
        Ok(t) => (t, None),
        Err(e) => (
            jiff::Timestamp::now().as_second(),
            Some(Problem::config(e.to_string())),
        ),
    };
    let mut out = read(found, config, root, depth, rejections, now);
    if let Some(seen) = seen {
        out.apply_sightings(found, seen);
    }
    if !out.list.is_empty() {
        out.problems.extend(bad);
    }
    out
}

/// Which references are promoted, and from where. Empty when no rule says `promoteFrom`.
fn plan(found: &Discovery, config: &Config, problems: &mut Vec<Problem>) -> Vec<Promotion> {
    if config.images.iter().all(|r| r.promote_from.is_none()) {
        return Vec::new();
    }
    let Ok(policies) = Policies::new(&config.defaults, &config.images) else {
        // The configuration's check reported it already.
        return Vec::new();
    };
    let mut out = Vec::new();
    for (index, r) in found.refs.iter().enumerate() {
        if !r.is_managed() {
            continue;
        }
        let rule = policies
            .rule_for(&r.image, &r.written, Some(&r.file))
            .and_then(|i| config.images.get(i));
        let Some((rule, from)) = rule.and_then(|x| Some((x, x.promote_from.as_ref()?))) else {
            continue;
        };
        let soak = imagebump_model::duration::parse_age(&from.soak)
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
            .unwrap_or(i64::MAX);
        let mut p = Promotion {
            index,
            origin: index,
            at: (r.file.to_string(), r.line, r.column, r.unit.to_string()),
            app: app_name(rule.path.as_deref(), &from.path, r),
            source_dir: String::new(),
            source_env: String::new(),
            soak,
            source_index: None,
            verdicts: BTreeMap::new(),
            rejected_in_source: BTreeMap::new(),
            blocked: None,
        };
        match imagebump_model::promotion::source_dir(from, &r.file) {
            Some(dir) => {
                p.source_env = dir.rsplit('/').next().unwrap_or(&dir).to_string();
                p.source_index = source_of(found, r, &dir);
                if p.source_index.is_none() {
                    p.blocked = Some(format!("{} is not in {dir}", r.image));
                }
                p.source_dir = dir;
            }
            None => {
                let why = format!(
                    "promoteFrom.path {:?} names no directory for this file",
                    from.path
                );
                problems.push(r.problem(why.clone()));
                p.blocked = Some(why);
            }
        }
        out.push(p);
    }
    out
}

/// The application's name for tables: the first `{name}` the source path captures, else
/// the image's last path segment.
fn app_name(rule_path: Option<&str>, from: &str, r: &ImageRef) -> String {
    let captured = rule_path.and_then(|_| {
        let i = from
            .split('/')
            .position(|s| s.starts_with('{') && s.ends_with('}'))?;
        r.file.split('/').nth(i).map(str::to_string)
    });
    captured.unwrap_or_else(|| {
        let repo = &r.image.repository;
        repo.rsplit('/').next().unwrap_or(repo).to_string()
    })
}

/// The first reference of the same image inside `dir` whose value is read from a slot in
/// its own file.
fn source_of(found: &Discovery, r: &ImageRef, dir: &str) -> Option<usize> {
    let prefix = format!("{dir}/");
    found
        .refs
        .iter()
        .position(|s| s.image == r.image && s.file.starts_with(&prefix) && tag_slot(s).is_some())
}

/// The slot an image's version is read from in its own file: the first that carries a
/// tag, outside a block string.
fn tag_slot(r: &ImageRef) -> Option<&crate::discover::Slot> {
    r.slots
        .iter()
        .find(|s| s.inner.is_none() && s.format != SlotFormat::Digest)
}

/// The tag a slot's scalar holds in `text` (one version of its file).
fn tag_in(slot: &crate::discover::Slot, text: &str) -> Option<String> {
    let docs = imagebump_yaml::parse_located(text).ok()?;
    let value = docs
        .get(slot.doc as usize)?
        .root
        .as_ref()?
        .at(&slot.path)?
        .str_value()?
        .to_string();
    let tag = match &slot.format {
        SlotFormat::Tag => value,
        SlotFormat::TagAtDigest => value.split('@').next().unwrap_or_default().to_string(),
        SlotFormat::Digest => return None,
        SlotFormat::Reference { .. } => imagebump_model::name::parse_reference(&value).ok()?.tag?,
    };
    (!tag.is_empty()).then_some(tag)
}

/// Read the promotions of this run: which references are promoted, the history of their
/// files and their sources', and each source version's verdict at `now`. Problems (no git
/// history, an unreadable log) leave the promoted references without candidates: they are
/// never resolved from the registry instead.
pub fn read(
    found: &Discovery,
    config: &Config,
    root: &Path,
    depth: usize,
    rejections: &Rejections,
    now: i64,
) -> Promotions {
    let mut out = Promotions {
        now,
        ..Default::default()
    };
    out.list = plan(found, config, &mut out.problems);
    if out.list.is_empty() {
        return out;
    }
    let tracked: BTreeSet<usize> = out
        .list
        .iter()
        .flat_map(|p| [Some(p.index), p.source_index])
        .flatten()
        .filter(|&i| found.refs.get(i).and_then(tag_slot).is_some())
        .collect();
    let files: Vec<String> = tracked
        .iter()
        .filter_map(|&i| found.refs.get(i).map(|r| r.file.to_string()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let history = match read_history(root, &files, depth) {
        Ok(h) => h,
        Err(e) => {
            let why = format!("promotion needs the base branch's git history: {e}");
            out.problems.push(Problem::general(why.clone()));
            for p in &mut out.list {
                p.blocked.get_or_insert(why.clone());
            }
            return out;
        }
    };
    out.shallow = history.0.shallow;
    for &i in &tracked {
        if let Some(r) = found.refs.get(i) {
            out.timelines.insert(i, timeline_of(r, &history));
        }
    }
    tracing::debug!(
        promoted = out.list.len(),
        files = files.len(),
        commits = history.0.commits.len(),
        "promotion history read"
    );
    for p in &mut out.list {
        tracing::debug!(promotion = ?p, "promotion");
        let Some(src) = p.source_index else { continue };
        if let Some(t) = out.timelines.get(&src) {
            p.verdicts = t.verdicts(now, p.soak);
        }
        if let Some(s) = found.refs.get(src) {
            p.rejected_in_source = rejected_at(s, rejections);
        }
    }
    out
}

/// The history of `files` and the content of every version of them.
fn read_history(
    root: &Path,
    files: &[String],
    depth: usize,
) -> Result<(FileHistory, BTreeMap<String, Vec<u8>>), crate::source::git::Error> {
    let git = Git::new(None);
    let history = git.file_history(root, "HEAD", files, depth.max(1))?;
    let mut ids: BTreeSet<String> = history.tip.values().cloned().collect();
    for c in &history.commits {
        for (_, old, new) in &c.changes {
            ids.extend(old.iter().chain(new).cloned());
        }
    }
    let ids: Vec<String> = ids.into_iter().collect();
    let blobs = git.blobs(root, &ids, MAX_BLOB_BYTES)?;
    Ok((history, blobs))
}

/// One reference's versions over the history of its file.
fn timeline_of(
    r: &ImageRef,
    (history, blobs): &(FileHistory, BTreeMap<String, Vec<u8>>),
) -> Timeline {
    let Some(slot) = tag_slot(r) else {
        return Timeline::default();
    };
    let value = |blob: Option<&String>| -> Option<String> {
        let bytes = blobs.get(blob?)?;
        tag_in(slot, std::str::from_utf8(bytes).ok()?)
    };
    // Walk back from the tip: the value after each commit that changed the file.
    let mut blob = history.tip.get(&*r.file).cloned();
    let mut changes = Vec::new();
    let mut first_parentless = false;
    for c in &history.commits {
        let Some((_, old, new)) = c.changes.iter().find(|(p, _, _)| **p == *r.file) else {
            continue;
        };
        changes.push(Change {
            sha: c.sha.clone(),
            time: c.time,
            revert: timeline::is_revert(&c.subject, &c.body),
            tag: value(new.as_ref()),
        });
        blob = old.clone();
        first_parentless = c.parentless;
    }
    changes.reverse();
    // The value before the oldest change was there before the window: since its start at
    // least.
    let start = value(blob.as_ref()).and_then(|tag| {
        let (sha, time) = history.oldest.clone()?;
        Some((tag, time, sha, true))
    });
    let mut t = Timeline::build(start, &changes);
    // A file added by the shallow boundary commit was there before it, for all we know.
    if history.shallow && first_parentless {
        if let Some(s) = t.segments.first_mut() {
            s.cut = true;
        }
    }
    t
}

/// Versions reviewers rejected at the source reference's files: tag → why.
fn rejected_at(r: &ImageRef, rejections: &Rejections) -> BTreeMap<String, String> {
    let Some(list) = rejections.get(&r.image) else {
        return BTreeMap::new();
    };
    list.iter()
        .filter(|x| {
            x.file
                .as_deref()
                .is_none_or(|f| *f == *r.file || r.touched_files().contains(&f))
        })
        .map(|x| (x.tag.clone(), x.why.clone()))
        .collect()
}
