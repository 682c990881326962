//! `imagebump promotions`: per application and environment, what runs there, since when,
//! and what comes next (or why nothing yet). Pure over the discovery and [`Promotions`].

use std::collections::BTreeMap;

use super::render::{date, why_not};
use super::timeline::Verdict;
use super::{rejected_at, Promotion, Promotions};
use crate::discover::{Discovery, ImageRef};
use crate::resolve::Rejections;
use imagebump_policy::candidate::Choice;
use imagebump_policy::evaluate::Evaluation;

/// One row: a reference in one environment.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Row {
    pub app: String,
    pub environment: String,
    pub image: String,
    pub version: String,
    /// When the version came (`2026-11-20 05:00`), empty when history does not say.
    pub since: String,
    /// What comes next and why: `1.3.0 ready (in dev since …)`, `1.3.0: soaking in dev:
    /// 1h to go`, `up to date`, `follows the registry`.
    pub next: String,
    pub file: String,
    /// What `next` says, as a state (the HTML view's cell).
    #[serde(skip)]
    pub state: State,
    /// The reference's index in the discovery.
    #[serde(skip)]
    pub index: usize,
    /// Hops from the environment that follows the registry (0: that one).
    #[serde(skip)]
    pub depth: usize,
}

/// What comes next for a row, as a state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum State {
    /// Nothing newer is ready, and nothing newer waits upstream.
    #[default]
    UpToDate,
    /// An environment no rule promotes into: it follows the registry.
    Follows,
    /// A version is ready to be promoted here.
    Ready,
    /// The newest version upstream soaks there until this time (seconds since the epoch).
    Soaking { until: i64 },
    /// The newest version upstream was rejected or reverted there.
    Rejected,
    /// Up to date because a rejection here holds a newer version back.
    HeldBack,
    /// Nothing can be promoted here (no source, no history).
    Blocked,
    /// The policy cannot judge the current tag.
    Skipped,
    /// The policy needs image metadata: only a run can tell.
    Unknown,
}

/// The rows: each promoted reference and each source it reads, upstream first.
pub fn rows(found: &Discovery, all: &Promotions, rejections: &Rejections) -> Vec<Row> {
    let mut rows: Vec<(String, usize, Row)> = Vec::new();
    let mut sources: BTreeMap<usize, (&Promotion, usize)> = BTreeMap::new();
    for p in &all.list {
        let Some(r) = found.refs.get(p.index) else {
            continue;
        };
        let depth = depth(all, p);
        if let Some(src) = p.source_index.filter(|s| all.of(*s).is_none()) {
            sources.entry(src).or_insert((p, depth));
        }
        let next = next(r, p, all, rejections);
        rows.push((
            p.app.clone(),
            depth.saturating_add(1),
            row(found, all, p.index, &p.app, env_of(r, p), next),
        ));
    }
    for (src, (p, _)) in sources {
        let next = (State::Follows, "follows the registry".to_string());
        rows.push((
            p.app.clone(),
            0,
            row(found, all, src, &p.app, p.source_env.clone(), next),
        ));
    }
    rows.sort_by(|a, b| (&a.0, a.1, &a.2.file).cmp(&(&b.0, b.1, &b.2.file)));
    (rows.into_iter())
        .map(|(_, depth, r)| Row { depth, ..r })
        .collect()
}

fn row(
    found: &Discovery,
    all: &Promotions,
    index: usize,
    app: &str,
    env: String,
    (state, next): (State, String),
) -> Row {
    let r = found.refs.get(index);
    let seg = all.timelines.get(&index).and_then(|t| t.current());
    let since = seg.map_or(String::new(), |s| {
        let at_least = if s.cut { "≤ " } else { "" };
        format!("{at_least}{}", date(s.since))
    });
    Row {
        app: app.to_string(),
        environment: env,
        image: r.map(|r| r.image.to_string()).unwrap_or_default(),
        version: r
            .and_then(|r| r.tag.as_deref())
            .unwrap_or_default()
            .to_string(),
        since,
        next,
        file: r.map(|r| r.file.to_string()).unwrap_or_default(),
        state,
        index,
        depth: 0,
    }
}

/// Hops to the first environment that is not promoted.
fn depth(all: &Promotions, p: &Promotion) -> usize {
    let mut n = 0usize;
    let mut cur = p.source_index.and_then(|s| all.of(s));
    while let Some(q) = cur {
        n = n.saturating_add(1);
        if n > 16 {
            break;
        }
        cur = q.source_index.and_then(|s| all.of(s));
    }
    n
}

/// A promoted reference's environment: its file's directory at the depth of the source
/// directory's last segment.
fn env_of(r: &ImageRef, p: &Promotion) -> String {
    let at = p.source_dir.split('/').count().saturating_sub(1);
    r.file.split('/').nth(at).unwrap_or_default().to_string()
}

/// What comes next for a promoted reference, and why not yet.
fn next(r: &ImageRef, p: &Promotion, all: &Promotions, rejections: &Rejections) -> (State, String) {
    if let Some(why) = &p.blocked {
        return (State::Blocked, format!("nothing: {why}"));
    }
    let current = r.tag.as_deref().unwrap_or_default();
    let held = rejected_at(r, rejections);
    let ready = p.candidates();
    let mut eval = Evaluation::new(&r.policy, current, None, &ready);
    eval.reject(&held);
    if !eval.wanted().is_empty() {
        let why = "the policy needs image metadata: see `imagebump run --dry-run`";
        return (State::Unknown, why.into());
    }
    match eval.decide() {
        Choice::Update { tag, .. } => {
            let when = super::render::arrival(all, p, &tag).unwrap_or_default();
            return (State::Ready, format!("{tag} ready ({when})"));
        }
        Choice::Skip(why) => return (State::Skipped, why),
        Choice::Current => {}
    }
    if let Some(waits) = waiting(r, p, all) {
        return waits;
    }
    match eval.held_back() {
        Some(why) => (State::HeldBack, format!("up to date; {why}")),
        None => (State::UpToDate, "up to date".into()),
    }
}

/// The newest version upstream that is newer but not ready, and why.
fn waiting(r: &ImageRef, p: &Promotion, all: &Promotions) -> Option<(State, String)> {
    let current = r.tag.as_deref().unwrap_or_default();
    let waiting: Vec<String> = p
        .verdicts
        .iter()
        .filter(|(tag, v)| {
            !matches!(v, Verdict::Ready { .. }) || p.rejected_in_source.contains_key(*tag)
        })
        .map(|(tag, _)| tag.clone())
        .collect();
    let mut later = Evaluation::new(&r.policy, current, None, &waiting);
    let Choice::Update { tag, .. } = later.decide() else {
        return None;
    };
    let (state, why) = match (p.rejected_in_source.get(&tag), p.verdicts.get(&tag)) {
        (Some(why), _) => (
            State::Rejected,
            format!("rejected in {}: {why}", p.source_env),
        ),
        (None, Some(v @ Verdict::Soaking { remaining })) => (
            State::Soaking {
                until: all.now.saturating_add(*remaining),
            },
            why_not(v, p),
        ),
        (None, Some(v @ Verdict::Reverted { .. })) => (State::Rejected, why_not(v, p)),
        (None, Some(v)) => (State::UpToDate, why_not(v, p)),
        (None, None) => (State::UpToDate, String::new()),
    };
    Some((state, format!("{tag}: {why}")))
}
