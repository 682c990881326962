//! What a run tells the user: problems, the summary table, the JSON reports.

pub mod github;
pub mod html;
pub mod markdown;
pub mod metrics;

use std::fmt::Write as _;

use serde::Serialize;

use imagebump_model::Problem;

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::chunked::Chunked;
use crate::discover::{Discovery, ImageRef, Unmanaged};
use crate::plan::{ChangeSet, Plan, Update};
use crate::registry::StatsSnapshot;
use crate::resolve::{Outcome, Resolved};
use imagebump_model::name::ImageName;

/// `scan --output json` entry.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScanEntry<'a> {
    pub file: &'a str,
    pub line: usize,
    pub column: usize,
    pub kind: crate::discover::RefKind,
    pub image: String,
    pub name: &'a str,
    pub tag: Option<&'a str>,
    pub digest: Option<&'a str>,
    pub unit: &'a str,
    /// The Argo CD Application the reference belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<&'a str>,
    /// Where the new value is written when not in `file` (Argo CD write-back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes_to: Option<&'a str>,
    pub policy: &'a imagebump_policy::Policy,
    /// `status` is `managed`: `run` asks a registry about it.
    pub managed: bool,
    /// What `run` does with it before asking any registry: `managed` (it asks), or the
    /// status `run` reports it with (`pinned`, `skipped`, `unmanaged`).
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason<'a>>,
}

/// What `scan` says of a reference: `run`'s verdict on it before any registry is asked
/// ([`crate::resolve::decided_offline`]); `None` when `run` asks one.
pub struct ScanVerdict(Option<Outcome>);

impl ScanVerdict {
    pub fn of(r: &ImageRef) -> ScanVerdict {
        ScanVerdict(crate::resolve::decided_offline(r))
    }

    /// The status word and why (`managed` has no reason).
    pub fn status(&self) -> (&'static str, Option<Reason<'_>>) {
        match self.0.as_ref().and_then(status_of) {
            Some(words) => words,
            None => ("managed", None),
        }
    }

    pub fn is_managed(&self) -> bool {
        self.0.is_none()
    }
}

impl<'a> ScanEntry<'a> {
    pub fn new(r: &'a ImageRef, verdict: &'a ScanVerdict) -> Self {
        let (status, reason) = verdict.status();
        ScanEntry {
            file: &r.file,
            line: r.line as usize,
            column: r.column as usize,
            kind: r.kind,
            image: r.image.to_string(),
            name: &r.written,
            tag: r.tag.as_deref(),
            digest: r.digest.as_deref(),
            unit: &r.unit,
            app: r.app(),
            writes_to: r.writes_to(),
            policy: &r.policy,
            managed: verdict.is_managed(),
            status,
            reason,
        }
    }
}

/// Why a reference is not updated (or not managed): words, or an unmanaged reference's
/// reason, spelled when it is written ([`Unmanaged`]).
#[derive(Debug, Clone, Copy)]
pub enum Reason<'a> {
    Text(&'a str),
    Unmanaged(&'a Unmanaged),
    /// A version held back in time (`Outcome::Scheduled`): the version, and why.
    Waits(&'a str, &'a str),
}

impl std::fmt::Display for Reason<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Text(text) => f.write_str(text),
            Reason::Unmanaged(why) => why.fmt(f),
            Reason::Waits(tag, why) => write!(f, "{tag} waits: {why}"),
        }
    }
}

impl Serialize for Reason<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScanReport<'a> {
    pub version: u32,
    pub references: Vec<ScanEntry<'a>>,
    /// Settings honoured differently than where they come from (Argo CD annotations).
    pub notes: &'a [Problem],
    pub errors: &'a [Problem],
}

/// A reference that was looked at but not updated, and why.
#[derive(Debug, Clone, Copy, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotUpdated<'a> {
    pub file: &'a str,
    pub line: usize,
    #[serde(serialize_with = "as_text")]
    #[schemars(with = "String")]
    pub image: &'a ImageName,
    pub tag: Option<&'a str>,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub reason: Option<Reason<'a>>,
}

/// A value written as its text: a row's image is named as written only when it is read.
fn as_text<S: serde::Serializer>(
    value: &impl std::fmt::Display,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// How a row names its image: `-` for a value with no repository of its own (a tag the
/// chart's default completes).
pub fn image_cell(image: &ImageName) -> String {
    match image.to_string() {
        s if s.is_empty() => "-".into(),
        s => s,
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub files_scanned: usize,
    pub references: usize,
    pub managed: usize,
    pub repositories: usize,
    pub updates: usize,
    pub up_to_date: usize,
    /// Left where they are because a reviewer rejected the newer versions.
    pub held_back: usize,
    /// Left where they are until their schedule allows: outside their `schedule`, inside a
    /// `freeze`, or all updates stopped.
    pub scheduled: usize,
    pub pinned: usize,
    pub skipped: usize,
    pub failed: usize,
    /// Updates found but not applied because their file's edit was refused.
    pub refused: usize,
}

impl Counts {
    /// The counts of a run's references by what became of them.
    pub fn of(found: &Discovery, resolved: &Resolved, plan: &Plan) -> Counts {
        let count = |f: fn(&Outcome) -> bool| resolved.outcomes.iter().filter(|o| f(o)).count();
        Counts {
            files_scanned: found.files_scanned,
            references: found.refs.len(),
            managed: found.refs.iter().filter(|r| r.is_managed()).count(),
            repositories: resolved.repositories,
            updates: plan.update_count(),
            up_to_date: count(|o| matches!(o, Outcome::UpToDate)),
            held_back: count(|o| matches!(o, Outcome::Rejected(_))),
            scheduled: count(|o| matches!(o, Outcome::Scheduled { .. })),
            pinned: count(|o| matches!(o, Outcome::Pinned(_))),
            skipped: count(|o| matches!(o, Outcome::Skipped(_))),
            failed: count(|o| matches!(o, Outcome::Failed(_))),
            refused: found
                .refs
                .iter()
                .zip(&resolved.outcomes)
                .filter(|(r, o)| edit_refused(r, o, &plan.refused))
                .count(),
        }
    }
}

/// An update that was found but not applied because its file's edit was refused.
fn edit_refused(r: &ImageRef, o: &Outcome, refused: &BTreeSet<String>) -> bool {
    matches!(o, Outcome::Update { .. })
        && !refused.is_empty()
        && r.with_touched_files(|files| files.iter().any(|f| refused.contains(*f)))
}

/// The status word of an outcome and why, as a report's rows and `scan` word it (`None`:
/// an update).
pub fn status_of(o: &Outcome) -> Option<(&'static str, Option<Reason<'_>>)> {
    Some(match o {
        Outcome::Update { .. } => return None,
        Outcome::UpToDate => ("up-to-date", None),
        Outcome::Rejected(s) => ("held-back", Some(Reason::Text(s))),
        Outcome::Pinned(s) => ("pinned", Some(Reason::Text(s))),
        Outcome::Skipped(s) => ("skipped", Some(Reason::Text(s))),
        Outcome::Unmanaged(why) => ("unmanaged", Some(Reason::Unmanaged(why))),
        Outcome::Failed(s) => ("not-checked", Some(Reason::Text(s))),
        Outcome::Scheduled { tag, why } => ("scheduled", Some(Reason::Waits(tag, why))),
    })
}

/// The row of `r`: looked at but not updated, and why (`None`: it is updated).
fn not_updated_row<'a>(
    r: &'a ImageRef,
    o: &'a Outcome,
    refused: &BTreeSet<String>,
) -> Option<NotUpdated<'a>> {
    let (status, reason) = match o {
        o if edit_refused(r, o, refused) => (
            "edit-refused",
            Some(Reason::Text(
                "the file's edit failed verification and was left unchanged",
            )),
        ),
        o => status_of(o)?,
    };
    Some(NotUpdated {
        file: &r.file,
        line: r.line as usize,
        image: &r.image,
        tag: r.tag.as_deref(),
        status,
        reason,
    })
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(title = "imagebump run report")]
pub struct RunReport<'a> {
    pub version: u32,
    pub mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<&'a str>,
    pub counts: Counts,
    // Kept by the plan, or made row by row as the report is written (a report-only run).
    #[schemars(with = "Vec<Update>")]
    pub updates: crate::plan::Rows<'a>,
    #[schemars(with = "Vec<ChangeSet>")]
    pub change_sets: &'a Chunked<ChangeSet>,
    // Made row by row as the report is written: a large tree's run holds none of them.
    #[schemars(with = "Vec<NotUpdated<'static>>")]
    pub not_updated: NotUpdatedRows<'a>,
    /// What happened to each change set's branch and pull request (remote sources).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_requests: Option<&'a [crate::deliver::pulls::PullReport]>,
    /// `--push`: the commit pushed to the base branch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pushed: Option<&'a str>,
    pub requests: StatsSnapshot,
    /// Requests by registry and outcome, and the rate-limit waits.
    pub registry_traffic: crate::registry::Traffic,
    /// Rejected versions in force (closed pull requests, reverted commits, the recorded
    /// `refs/imagebump/rejected/…`): distinct (image, version, file).
    pub rejections_in_force: usize,
    /// The notifications sent (`notify:`); one that failed is also a warning, and does not
    /// change the exit code (docs/configuration.md, "notify").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notifications: Vec<NotificationReport>,
    /// What the run did with the dashboard issue (`pullRequests.dashboard`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dashboard: Option<DashboardReport>,
    /// `minAge`: the clock each version it judged counted its age from, the proposed ones
    /// and those held back as too young (docs/tag-selection.md, "minAge").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ages: Vec<AgeReport>,
    /// Notes that did not stop anything (tied build dates, exact constraints).
    pub warnings: &'a [Problem],
    pub errors: &'a [Problem],
}

/// One version `minAge` judged, and the clock its age counted from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgeReport {
    /// The normalised repository.
    pub image: String,
    pub tag: String,
    /// `built` (a plausible build date) or `firstSeen` (when imagebump first saw the tag).
    pub clock: &'static str,
    /// The time the age counts from (RFC 3339).
    pub since: String,
    /// `firstSeen`: false when no record names the tag (first seen by this run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<bool>,
    /// Proposed (old enough), or held back (younger than `minAge`).
    pub proposed: bool,
}

impl AgeReport {
    /// The rows of `s`: the proposed versions, then the ones held back, each by name.
    pub fn of(s: &crate::resolve::first_seen::Sightings) -> Vec<AgeReport> {
        use imagebump_policy::age::Clock;
        let row = |((image, tag), clock): (&(String, String), &Clock), proposed| AgeReport {
            image: image.clone(),
            tag: tag.clone(),
            clock: clock.name(),
            since: clock.since().to_string(),
            recorded: match clock {
                Clock::Built(_) => None,
                Clock::FirstSeen(_) => Some(true),
                Clock::SeenNow(_) => Some(false),
            },
            proposed,
        };
        let proposed = s.clocks.iter().map(|e| row(e, true));
        proposed
            .chain(s.held.iter().map(|e| row(e, false)))
            .collect()
    }
}

/// What a run did with the dashboard issue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DashboardReport {
    /// `created`, `updated` or `unchanged`; in a dry run `would-create` or `would-update`.
    pub action: &'static str,
    /// The number (none before it is opened).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<u64>,
}

/// What became of one notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationReport {
    /// `webhook` or `slack`, with the entry's index in `notify` (`notify[0]`); never its URL.
    pub target: String,
    /// The events it told (`opened`, `updated`, `closed`, `pushed`, `failed`).
    pub events: Vec<String>,
    pub delivered: bool,
    /// Requests sent (retries included).
    pub attempts: u32,
    /// Why it was not delivered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Distinct rejected versions (image, version, file) held back this run.
pub fn rejections_in_force(rejections: &crate::resolve::Rejections) -> usize {
    rejections
        .iter()
        .flat_map(|(image, list)| list.iter().map(move |r| (image, &r.tag, &r.file)))
        .collect::<BTreeSet<_>>()
        .len()
}

/// The references looked at but not updated, and why (see [`NotUpdatedRows`]).
pub fn not_updated_of<'a>(
    found: &'a Discovery,
    resolved: &'a Resolved,
    plan: &'a Plan,
) -> NotUpdatedRows<'a> {
    NotUpdatedRows {
        found,
        outcomes: &resolved.outcomes,
        refused: &plan.refused,
    }
}

/// The rows of the references not updated, made when they are read ([`Self::iter`]) or
/// written (serialized as their list): one per reference, so a run does not keep them.
#[derive(Debug, Clone, Copy)]
pub struct NotUpdatedRows<'a> {
    found: &'a Discovery,
    outcomes: &'a Chunked<Outcome>,
    refused: &'a BTreeSet<String>,
}

impl<'a> NotUpdatedRows<'a> {
    pub fn iter(&self) -> impl Iterator<Item = NotUpdated<'a>> + 'a {
        let refused = self.refused;
        (self.found.refs.iter())
            .zip(self.outcomes)
            .filter_map(move |(r, o)| not_updated_row(r, o, refused))
    }
}

impl Serialize for NotUpdatedRows<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// The pull requests a real pull-request run opened, updated or closed (a dry run changes
/// none), as (`opened` | `updated` | `closed`, the pull request).
pub fn pull_events<'r>(
    report: &'r RunReport,
) -> Vec<(&'static str, &'r crate::deliver::pulls::PullReport)> {
    use crate::deliver::pulls::Outcome;
    if report.mode != "pull-requests" {
        return Vec::new();
    }
    report
        .pull_requests
        .unwrap_or_default()
        .iter()
        .filter_map(|p| match p.action {
            Outcome::Create => Some(("opened", p)),
            Outcome::Update => Some(("updated", p)),
            Outcome::Close => Some(("closed", p)),
            _ => None,
        })
        .collect()
}

/// The updates the run committed straight to the base: all of them with `--push`; in a
/// pull-request run with `delivery: push`, those of change sets without a pull request.
/// None for a dry run (a push it previews is not made).
pub fn pushed_updates<'r>(report: &'r RunReport) -> Vec<Cow<'r, Update>> {
    if report.pushed.is_none() || report.mode == "dry-run" {
        return Vec::new();
    }
    let reviewed: BTreeSet<&str> = report
        .pull_requests
        .unwrap_or_default()
        .iter()
        .map(|p| p.group.as_str())
        .collect();
    report
        .updates
        .iter()
        .filter(|u| report.mode == "push" || !reviewed.contains(&*u.group))
        .collect()
}

/// The JSON Schema of the run report, as committed at docs/report.schema.json.
pub fn schema() -> String {
    let schema = schemars::schema_for!(RunReport<'static>);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

/// Columns padded to their widest cell.
/// Every cell is shown with its hidden characters as `\u{…}` (a name holding an escape
/// sequence or a newline stays in its cell).
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| imagebump_model::escape::terminal(c).into_owned())
                .collect()
        })
        .collect();
    let rows = rows.as_slice();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.zip(&widths).enumerate() {
            if i.saturating_add(1) == widths.len() {
                s.push_str(cell);
            } else {
                let _ = write!(s, "{cell:<w$}  ");
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

/// How a column gives way when a table is wider than the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Never cut (short fixed values: `yes`, `#12`).
    Keep,
    /// Cut at the end (`passed every filter, ranked…`): reasons, titles, policies.
    End,
    /// Cut in the middle, keeping both ends (`ghcr.io/acme/…/web:1.2.3`): names, paths and
    /// tags, whose end (the tag, the file, the line) says the most.
    Middle,
}

/// No column is cut below this many characters (a narrow terminal still shows something of
/// each).
const MIN_COLUMN: usize = 8;

/// [`table`] fitted to `width` characters when there is one: the widest column that may be
/// cut gives way first, down to the next widest, and so on, none below [`MIN_COLUMN`].
/// Cells are escaped before they are measured.
pub fn fitted(header: &[&str], rows: &[Vec<String>], width: Option<usize>, cuts: &[Cut]) -> String {
    let Some(width) = width else {
        return table(header, rows);
    };
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| imagebump_model::escape::terminal(c).into_owned())
                .collect()
        })
        .collect();
    let widths = column_widths(header, &rows, width, cuts);
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| {
            r.into_iter()
                .enumerate()
                .map(|(i, cell)| {
                    let keep = widths.get(i).copied().unwrap_or(usize::MAX);
                    let cut = cuts.get(i).copied().unwrap_or(Cut::Keep);
                    shorten(cell, keep, cut)
                })
                .collect()
        })
        .collect();
    table(header, &rows)
}

/// Each column's width once the widest cuttable ones have given way to fit `width`.
fn column_widths(header: &[&str], rows: &[Vec<String>], width: usize, cuts: &[Cut]) -> Vec<usize> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let cuttable = |i: usize| cuts.get(i).is_some_and(|c| *c != Cut::Keep);
    // Each pass narrows one column by at least one character: the passes are bounded by
    // the table's width.
    loop {
        let gaps = widths.len().saturating_sub(1).saturating_mul(2);
        let total = widths.iter().sum::<usize>().saturating_add(gaps);
        let Some(excess) = total.checked_sub(width).filter(|e| *e > 0) else {
            break;
        };
        let widest = (0..widths.len())
            .filter(|&i| cuttable(i) && widths.get(i).is_some_and(|w| *w > MIN_COLUMN))
            .max_by_key(|&i| (widths.get(i).copied().unwrap_or(0), std::cmp::Reverse(i)));
        let Some(col) = widest else {
            break;
        };
        let next = (0..widths.len())
            .filter(|&i| i != col && cuttable(i))
            .filter_map(|i| widths.get(i).copied())
            .max()
            .unwrap_or(0)
            .max(MIN_COLUMN);
        if let Some(w) = widths.get_mut(col) {
            let room = w.saturating_sub(next).max(1);
            *w = w.saturating_sub(excess.min(room)).max(MIN_COLUMN);
        }
    }
    widths
}

/// `cell` in at most `keep` characters, cut as `cut` says, the cut marked with `…`.
fn shorten(cell: String, keep: usize, cut: Cut) -> String {
    let chars: Vec<char> = cell.chars().collect();
    if chars.len() <= keep || cut == Cut::Keep || keep == 0 {
        return cell;
    }
    let room = keep.saturating_sub(1);
    match cut {
        Cut::Keep => cell,
        Cut::End => chars.iter().take(room).chain(['…'].iter()).collect(),
        Cut::Middle => {
            // The end says more (the file and line, the repository's own name, the tag).
            let head = room / 3;
            let tail = room.saturating_sub(head);
            let start = chars.len().saturating_sub(tail);
            let head_part = chars.iter().take(head);
            let tail_part = chars.iter().skip(start);
            head_part.chain(['…'].iter()).chain(tail_part).collect()
        }
    }
}

/// What was not updated, grouped by why, most actionable first (the up-to-date ones are
/// only counted): `  file:line: image tag: why` lines, at most `limit` a group
/// (`--output json` lists every one).
pub fn not_updated_text(not: &[NotUpdated], limit: usize) -> String {
    const GROUPS: [(&str, &str); 7] = [
        ("not-checked", "not checked, the registry failed"),
        ("edit-refused", "edit refused"),
        ("held-back", "held back by a rejection"),
        ("scheduled", "waiting for the schedule"),
        ("skipped", "skipped"),
        ("pinned", "pinned"),
        ("unmanaged", "unmanaged"),
    ];
    let mut out = String::new();
    for (status, title) in GROUPS {
        let group: Vec<&NotUpdated> = not.iter().filter(|n| n.status == status).collect();
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{title} ({}):", group.len());
        for n in group.iter().take(limit) {
            let t = |s: &str| imagebump_model::escape::terminal(s).into_owned();
            let why = t(&n.reason.map(|r| r.to_string()).unwrap_or_default());
            // A value with no repository of its own (a tag the chart's default completes).
            let image = t(&image_cell(n.image));
            let file = t(n.file);
            let tag = n.tag.map(t);
            let _ = match (status, tag) {
                // The reason names the version held back.
                ("held-back", _) => writeln!(out, "  {file}:{}: {image} {why}", n.line),
                (_, Some(tag)) => writeln!(out, "  {file}:{}: {image} {tag}: {why}", n.line),
                (_, None) => writeln!(out, "  {file}:{}: {image}: {why}", n.line),
            };
        }
        if let Some(more) = group.len().checked_sub(limit).filter(|m| *m > 0) {
            let _ = writeln!(out, "  … and {more} more (--output json lists every one)");
        }
    }
    out
}

/// `9 references: 5 to update, 2 pinned, 2 unmanaged`: every reference in exactly one
/// group, so the numbers add up; empty groups are left out.
pub fn references_summary(counts: &Counts, not: &[NotUpdated], updated: &str) -> String {
    let of = |status: &str| not.iter().filter(|n| n.status == status).count();
    let settled: usize = not.len();
    let mut parts = vec![format!(
        "{} {updated}",
        counts.references.saturating_sub(settled)
    )];
    for (status, label) in [
        ("up-to-date", "up to date"),
        ("held-back", "held back"),
        ("scheduled", "scheduled"),
        ("pinned", "pinned"),
        ("unmanaged", "unmanaged"),
        ("skipped", "skipped"),
        ("not-checked", "not checked"),
        ("edit-refused", "edit refused"),
    ] {
        match of(status) {
            0 => {}
            n => parts.push(format!("{n} {label}")),
        }
    }
    format!("{} references: {}", counts.references, parts.join(", "))
}

/// Branches and pull requests of a remote run, fitted to `width`.
pub fn pulls_table(pulls: &[crate::deliver::pulls::PullReport], width: Option<usize>) -> String {
    let rows: Vec<Vec<String>> = pulls
        .iter()
        .map(|p| {
            let action = serde_json::to_value(&p.action)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            vec![
                p.branch.clone(),
                action,
                p.number
                    .map(|n| format!("#{n}"))
                    .unwrap_or_else(|| "-".into()),
                p.title.clone(),
            ]
        })
        .collect();
    let cuts = [Cut::Middle, Cut::Keep, Cut::Keep, Cut::End];
    fitted(&["BRANCH", "ACTION", "PR", "TITLE"], &rows, width, &cuts)
}

/// The updates, fitted to `width`.
pub fn updates_table<'u>(
    updates: impl IntoIterator<Item = &'u Update>,
    width: Option<usize>,
) -> String {
    let rows: Vec<Vec<String>> = updates
        .into_iter()
        .map(|u| {
            vec![
                u.name.to_string(),
                shorten_digests(&u.from),
                match &u.app_version {
                    Some(a) => format!("{} ({a})", shorten_digests(&u.to)),
                    None => shorten_digests(&u.to),
                },
                match &u.written_to {
                    Some(to) => format!("{}:{} → {to}", u.file, u.line),
                    None => format!("{}:{}", u.file, u.line),
                },
            ]
        })
        .collect();
    let cuts = [Cut::Middle; 4];
    fitted(&["IMAGE", "FROM", "TO", "LOCATION"], &rows, width, &cuts)
}

/// The `scan` table; references of Argo CD apps are grouped under their app, with the
/// file each new value is written to.
pub fn scan_table(refs: &Chunked<ImageRef>, width: Option<usize>) -> String {
    let row = |r: &ImageRef| {
        let current = match (&r.tag, &r.digest) {
            (Some(t), Some(d)) => format!("{t}@{}", short_digest(d)),
            (Some(t), None) => t.to_string(),
            (None, Some(d)) => format!("@{}", short_digest(d)),
            (None, None) => "-".into(),
        };
        let verdict = ScanVerdict::of(r);
        let policy = match r.unmanaged {
            None => format!("{} ({})", r.policy.summary(), r.policy.source),
            Some(_) => "-".to_string(),
        };
        let status = match (verdict.status(), r.writes_to()) {
            (("managed", _), Some(w)) => format!("managed, writes {w}"),
            // The policy column names the rule or marker that pins it.
            ((status @ ("managed" | "pinned"), _), _) => status.to_string(),
            ((status, Some(reason)), _) => format!("{status}: {reason}"),
            ((status, None), _) => status.to_string(),
        };
        vec![
            format!("{}:{}", r.file, r.line),
            r.written.to_string(),
            current,
            policy,
            status,
        ]
    };
    let header = ["LOCATION", "IMAGE", "CURRENT", "POLICY", "STATUS"];
    let cuts = [Cut::Middle, Cut::Middle, Cut::Middle, Cut::End, Cut::End];
    let fit = |rows: Vec<Vec<String>>, indent: usize| {
        fitted(
            &header,
            &rows,
            width.map(|w| w.saturating_sub(indent)),
            &cuts,
        )
    };
    if refs.iter().all(|r| r.app().is_none()) {
        let rows: Vec<Vec<String>> = refs.iter().map(row).collect();
        return fit(rows, 0);
    }
    let mut apps: Vec<&str> = refs.iter().filter_map(|r| r.app()).collect();
    apps.sort();
    apps.dedup();
    let mut out = String::new();
    for app in apps {
        let rows: Vec<Vec<String>> = refs
            .iter()
            .filter(|r| r.app() == Some(app))
            .map(row)
            .collect();
        out.push_str(&format!("app {}\n", imagebump_model::escape::terminal(app)));
        for line in fit(rows, 2).lines() {
            out.push_str(&format!("  {line}\n"));
        }
        out.push('\n');
    }
    let rest: Vec<Vec<String>> = refs.iter().filter(|r| r.app().is_none()).map(row).collect();
    if !rest.is_empty() {
        out.push_str("not in an Argo CD app\n");
        for line in fit(rest, 2).lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}

/// `1.2@sha256:0123456789ab…` → `1.2@sha256:0123456789ab` (tables only; reports keep all).
fn shorten_digests(s: &str) -> String {
    match s.split_once('@') {
        Some((tag, d)) => format!("{tag}@{}", short_digest(d)),
        None => s.to_string(),
    }
}

fn short_digest(d: &str) -> &str {
    let hex = d.find(':').map_or(0, |i| i.saturating_add(1));
    let end = hex.saturating_add(12).min(d.len());
    // A digest is ASCII; anything else is shown whole.
    d.get(..end).unwrap_or(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_cut_to_twelve_characters_after_the_algorithm() {
        assert_eq!(
            short_digest("sha256:0123456789abcdef"),
            "sha256:0123456789ab"
        );
        assert_eq!(short_digest("sha256:0123"), "sha256:0123");
        assert_eq!(short_digest("0123456789abcdef"), "0123456789ab");
        // Not a digest: shown whole rather than cut inside a character.
        assert_eq!(short_digest("sha256:aéééééé"), "sha256:aéééééé");
    }

    #[test]
    fn tables_align() {
        let t = table(
            &["A", "B"],
            &[
                vec!["long".into(), "x".into()],
                vec!["s".into(), "y".into()],
            ],
        );
        assert_eq!(t, "A     B\nlong  x\ns     y\n");
    }

    #[test]
    fn the_widest_column_gives_way_first() {
        let rows = vec![vec![
            "registry.example.com/team/app:1.2.3".to_string(),
            "yes".to_string(),
            "a reason".to_string(),
        ]];
        let cuts = [Cut::Middle, Cut::Keep, Cut::End];
        let text = fitted(&["IMAGE", "OK", "WHY"], &rows, Some(30), &cuts);
        assert_eq!(
            text,
            "IMAGE            OK   WHY\nregi…/app:1.2.3  yes  a reason\n"
        );
        // Wide enough: nothing is cut.
        let wide = fitted(&["IMAGE", "OK", "WHY"], &rows, Some(80), &cuts);
        assert_eq!(wide, table(&["IMAGE", "OK", "WHY"], &rows));
        assert_eq!(shorten("abcdefghij".into(), 6, Cut::End), "abcde…");
        assert_eq!(shorten("abcdefghij".into(), 6, Cut::Middle), "a…ghij");
        assert_eq!(shorten("abcdefghij".into(), 6, Cut::Keep), "abcdefghij");
    }
}
