//! The [`Fleet`] of `imagebump promotions` (its rows and the history read) and of a run
//! (every reference's outcome, placed by the same rows where a `promoteFrom` rule places
//! it).
//!
//! Rows and columns: a promoted reference and its sources sit at their application (the
//! first `{name}` captured) and environment (the directory at the source path's depth);
//! any other reference of a run at its image's last path segment and its unit's last path
//! segment (the kustomization's directory, the values file, the Argo CD Application).

use std::collections::{BTreeMap, BTreeSet};

use super::{App, Entry, Event, Fleet, State, Summary};
use crate::chunked::Chunked;
use crate::discover::{Discovery, ImageRef};
use crate::promote::status::{self, Row};
use crate::promote::Promotions;
use crate::report::RunReport;
use crate::resolve::Outcome;

/// Promotions shown per application in the timeline, newest first.
const TIMELINE: usize = 10;

/// The page of `imagebump promotions`.
pub fn of_promotions(rows: &[Row], all: &Promotions, repository: &str) -> Fleet {
    let mut fleet = Grid::default();
    for row in rows {
        fleet.put(&row.app, &row.environment, row.depth, entry_of(row, all));
    }
    fleet.finish("imagebump promotions", repository, all, rows)
}

/// What a run computed, for its page.
pub struct Run<'a> {
    pub found: &'a Discovery,
    pub outcomes: &'a Chunked<Outcome>,
    pub promotions: &'a Promotions,
    /// `promote::status::rows` of the run.
    pub rows: &'a [Row],
    /// Files whose edit was refused (the plan's).
    pub refused: &'a BTreeSet<String>,
    pub report: &'a RunReport<'a>,
    pub repository: &'a str,
}

/// The page of a run: every reference with an image, its outcome as the cell's state.
pub fn of_run(run: &Run<'_>) -> Fleet {
    let by_index: BTreeMap<usize, &Row> = run.rows.iter().map(|r| (r.index, r)).collect();
    let links = Links::of(run.report);
    let mut fleet = Grid::default();
    for (index, (r, o)) in run.found.refs.iter().zip(run.outcomes).enumerate() {
        let image = r.image.to_string();
        if image.is_empty() {
            continue;
        }
        let row = by_index.get(&index).copied();
        let mut e = match row {
            Some(row) => entry_of(row, run.promotions),
            None => plain_entry(r, image),
        };
        outcome_into(&mut e, o, row.map(|row| row.state));
        if super::super::edit_refused(r, o, run.refused) {
            e.state = State::Failing;
            e.detail = "the file's edit failed verification and was left unchanged".into();
        }
        links.fill(&mut e, r);
        match row {
            Some(row) => fleet.put(&row.app, &row.environment, row.depth, e),
            None => {
                let app = last_segment(&e.image).to_string();
                fleet.put(&app, &environment_of(r), usize::MAX, e);
            }
        }
    }
    let mut page = fleet.finish("imagebump run", run.repository, run.promotions, run.rows);
    page.summary = Some(summary_of(run.report));
    page
}

/// The applications and environments as they are filled in.
#[derive(Default)]
struct Grid {
    apps: BTreeMap<String, App>,
    /// Each environment's fewest hops from the registry over the promotion chains
    /// (references no rule promotes: after every chain).
    ranks: BTreeMap<String, usize>,
}

impl Grid {
    fn put(&mut self, app: &str, env: &str, rank: usize, e: Entry) {
        let slot = self.apps.entry(app.to_string()).or_insert_with(|| App {
            name: app.to_string(),
            cells: BTreeMap::new(),
        });
        slot.cells.entry(env.to_string()).or_default().push(e);
        let r = self.ranks.entry(env.to_string()).or_insert(rank);
        *r = (*r).min(rank);
    }

    /// The fleet, sorted: environments upstream first (then by name), entries by image
    /// and file, the timeline newest first.
    fn finish(self, title: &str, repository: &str, all: &Promotions, rows: &[Row]) -> Fleet {
        let mut environments: Vec<(usize, String)> = self
            .ranks
            .into_iter()
            .map(|(env, rank)| (rank, env))
            .collect();
        environments.sort();
        let apps = self
            .apps
            .into_values()
            .map(|mut app| {
                for entries in app.cells.values_mut() {
                    entries.sort_by(|a, b| (&a.image, &a.file).cmp(&(&b.image, &b.file)));
                }
                app
            })
            .collect();
        Fleet {
            title: title.into(),
            repository: repository.into(),
            now: all.now,
            summary: None,
            environments: environments.into_iter().map(|(_, env)| env).collect(),
            apps,
            timeline: timeline(all, rows),
        }
    }
}

/// A promotions row as a cell entry.
fn entry_of(row: &Row, all: &Promotions) -> Entry {
    let current = all.timelines.get(&row.index).and_then(|t| t.current());
    let state = match row.state {
        status::State::UpToDate => State::UpToDate,
        status::State::Follows => State::Follows,
        status::State::Ready => State::Ready,
        status::State::Soaking { until } => State::Soaking(until),
        status::State::Rejected => State::Rejected,
        status::State::HeldBack => State::HeldBack,
        status::State::Blocked => State::Failing,
        status::State::Skipped => State::Unmanaged,
        status::State::Unknown => State::Unknown,
    };
    Entry {
        image: row.image.clone(),
        version: row.version.clone(),
        since: current.map(|s| (s.since, s.cut)),
        released_days: None,
        state,
        detail: row.next.clone(),
        link: None,
        file: row.file.clone(),
    }
}

/// A reference no promotion rule reads.
fn plain_entry(r: &ImageRef, image: String) -> Entry {
    Entry {
        image,
        version: r.tag.as_deref().unwrap_or_default().to_string(),
        since: None,
        released_days: None,
        state: State::Unknown,
        detail: String::new(),
        link: None,
        file: r.file.to_string(),
    }
}

/// The run's outcome as the entry's state. Up to date in a promoted environment keeps what
/// promotion says when that says more (soaking, rejected upstream, held back, blocked).
fn outcome_into(e: &mut Entry, o: &Outcome, promoted: Option<status::State>) {
    let (state, detail) = match o {
        Outcome::Update { tag, .. } => (State::Proposed, format!("→ {tag}")),
        Outcome::UpToDate => match promoted {
            Some(status::State::Follows | status::State::UpToDate) | None => {
                (State::UpToDate, String::new())
            }
            Some(_) => return,
        },
        Outcome::Rejected(why) => (State::HeldBack, why.to_string()),
        Outcome::Pinned(why) => (State::Pinned, why.to_string()),
        Outcome::Skipped(why) => (State::Unmanaged, format!("skipped: {why}")),
        Outcome::Unmanaged(why) => (State::Unmanaged, why.to_string()),
        Outcome::Failed(why) => (State::Failing, why.to_string()),
        Outcome::Scheduled { tag, why } => (State::Scheduled, format!("{tag} waits: {why}")),
    };
    e.state = state;
    e.detail = detail;
}

/// Pull request links and build ages of the run's updates.
struct Links {
    /// (file, image, new version) → the update's change set.
    groups: BTreeMap<(String, String, String), String>,
    /// Change set → its pull request's URL.
    pulls: BTreeMap<String, String>,
    /// (repository, version) → days since it was built.
    built: BTreeMap<(String, String), i64>,
}

impl Links {
    fn of(report: &RunReport<'_>) -> Links {
        let groups = (report.updates.iter())
            .map(|u| {
                let key = (u.file.to_string(), u.image.to_string(), u.to.to_string());
                (key, u.group.to_string())
            })
            .collect();
        let mut pulls = BTreeMap::new();
        let mut built = BTreeMap::new();
        for p in report.pull_requests.unwrap_or_default() {
            if let Some(url) = &p.url {
                pulls.insert(p.group.clone(), url.clone());
            }
            for n in &p.notes {
                if let Some(days) = n.age_days {
                    built.insert((n.repository.clone(), n.to.clone()), days);
                }
            }
        }
        Links {
            groups,
            pulls,
            built,
        }
    }

    /// The link and build age of `e`'s proposed version, when known.
    fn fill(&self, e: &mut Entry, r: &ImageRef) {
        let Some(to) = e
            .detail
            .strip_prefix("→ ")
            .filter(|_| e.state == State::Proposed)
        else {
            return;
        };
        let key = (r.file.to_string(), e.image.clone(), to.to_string());
        e.link = (self.groups.get(&key))
            .and_then(|g| self.pulls.get(g))
            .cloned();
        let bare = to.split('@').next().unwrap_or(to);
        e.released_days = self
            .built
            .get(&(e.image.clone(), bare.to_string()))
            .copied();
    }
}

/// The last promotions per application: each version's arrival in each environment the
/// history was read for, newest first.
fn timeline(all: &Promotions, rows: &[Row]) -> BTreeMap<String, Vec<Event>> {
    let mut out: BTreeMap<String, Vec<Event>> = BTreeMap::new();
    for row in rows {
        let Some(t) = all.timelines.get(&row.index) else {
            continue;
        };
        let events = out.entry(row.app.clone()).or_default();
        events.extend(t.segments.iter().map(|s| Event {
            at: s.since,
            environment: row.environment.clone(),
            version: s.tag.clone(),
            commit: s.since_sha.chars().take(7).collect(),
            cut: s.cut,
            reverted: s.reverted,
        }));
    }
    for events in out.values_mut() {
        events.sort_by(|a, b| b.cmp(a));
        events.dedup();
        events.truncate(TIMELINE);
    }
    out.retain(|_, events| !events.is_empty());
    out
}

/// The run's summary: counts, registry traffic, errors.
fn summary_of(report: &RunReport<'_>) -> Summary {
    let c = &report.counts;
    let q = &report.requests;
    let mut traffic: Vec<(String, String, usize)> = (report.registry_traffic.requests.iter())
        .map(|o| (o.registry.clone(), o.outcome.clone(), o.count))
        .collect();
    traffic.sort();
    Summary {
        mode: report.mode.into(),
        commit: report.commit.map(str::to_string),
        counts: vec![
            ("updates", c.updates),
            ("up to date", c.up_to_date),
            ("held back", c.held_back),
            ("scheduled", c.scheduled),
            ("pinned", c.pinned),
            ("skipped", c.skipped),
            ("failed", c.failed),
            ("refused", c.refused),
            ("references", c.references),
            ("repositories", c.repositories),
            ("files scanned", c.files_scanned),
        ],
        requests: vec![
            ("tag-list pages", q.tag_list_pages),
            ("tokens", q.tokens),
            ("manifests", q.manifests),
            ("blobs", q.blobs),
            ("retries", q.retries),
        ],
        traffic,
        rate_limit_wait_seconds: report.registry_traffic.rate_limit_wait_seconds,
        errors: (report.errors.iter())
            .map(|p| match &p.hint {
                Some(hint) => (p.location.clone(), format!("{} ({hint})", p.message)),
                None => (p.location.clone(), p.message.clone()),
            })
            .collect(),
    }
}

/// `ghcr.io/acme/web` → `web`.
fn last_segment(s: &str) -> &str {
    s.trim_end_matches('/').rsplit('/').next().unwrap_or(s)
}

/// A reference's environment when no rule promotes it: its unit's last path segment.
fn environment_of(r: &ImageRef) -> String {
    match last_segment(&r.unit) {
        "" | "." => "(root)".into(),
        env => env.into(),
    }
}
