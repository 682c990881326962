//! Deciding, without I/O, what pull-request mode does: from the plan, imagebump's branches
//! on the remote, the open pull requests and the commits built for the change sets, a
//! plain list of [`Action`]s in the order they are carried out.

use std::collections::{BTreeMap, BTreeSet};

use super::message::{automerge, body, branch_name, title, updates_of, Automerge};
use super::{Outcome, PullReport};
use crate::deliver::marker::{self, Marked};
use crate::plan::{ChangeSet, Plan, Update};
use crate::resolve::Rejections;
use crate::source::git::RefUpdate;
use imagebump_forge::{NewPull, Pull};
use imagebump_model::config::PullRequestsConfig;
use imagebump_model::Problem;

/// Appended to the pull request of a branch someone else committed to, and commented.
pub const FOREIGN_NOTE: &str = "imagebump leaves this branch alone: it has commits by someone else. Merge or close this pull request; imagebump proposes newer versions on a fresh branch once it is gone.";

/// Commented on a pull request whose updates another change set's pull request proposes
/// (grouping changed: majors apart, a named group), before closing it.
pub const SUPERSEDED_NOTE: &str = "Another imagebump pull request proposes these updates (the grouping changed: a major update goes apart, or a rule names a group); closing this one. Closing it rejects nothing.";

/// Commented on a pull request closed because the base has its versions.
pub const CLOSE_NOTE: &str =
    "The base branch already has these versions (merged elsewhere, or moved on); closing.";

/// A change set on its way to a branch and a pull request.
#[derive(Debug, Clone)]
pub struct Proposal<'a> {
    pub set: &'a ChangeSet,
    pub branch: String,
    pub title: String,
    pub updates: Vec<&'a Update>,
    /// The pull-request body, with the marker the next run reads back.
    pub body: String,
    pub automerge: Automerge,
    /// The release notes of its updates, as the body gives them.
    pub notes: Vec<super::notes::UpdateNotes>,
    /// The labels its pull request carries: `pullRequests.labels`, and for a change set of
    /// major updates `pullRequests.majorLabels` too.
    pub labels: Vec<String>,
}

/// One of imagebump's branches on the remote, as deciding needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Branch {
    pub sha: String,
    /// Someone else committed to it (not an imagebump commit on the base).
    pub foreign: bool,
    /// Its tip is one commit on the base commit, so its tree says what it proposes.
    pub parent_is_base: bool,
    pub tree: Option<String>,
    /// Its tip is one imagebump commit on an older base commit: that commit's update
    /// trailers, to tell whether it still proposes the same ([`Built::Commit`]'s `current`).
    pub behind: Option<Vec<String>>,
}

/// The commit built for a change set on the base commit (in the clone, not pushed yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Built {
    Commit {
        sha: String,
        /// Read only when the remote branch may hold the same content.
        tree: Option<String>,
        /// The remote branch, one commit on an older base, proposes exactly this: the same
        /// updates, and the same content in every file of the change set. It is not
        /// rebuilt on the moved base (a pull request that auto-merges always is).
        current: bool,
    },
    /// Why it could not be built.
    Failed(String),
}

/// Everything deciding looks at.
pub struct Input<'a> {
    pub plan: &'a Plan,
    pub proposals: &'a [Proposal<'a>],
    /// The commit of each proposal, in the same order (`None`: none was built, the branch
    /// is someone else's).
    pub built: &'a [Option<Built>],
    /// imagebump's branches on the remote, by name.
    pub branches: &'a BTreeMap<String, Branch>,
    /// imagebump's own open pull requests, by branch.
    pub open: &'a BTreeMap<String, Pull>,
    /// Branches that someone else's open pull request comes from: never pushed to, and
    /// their pull request never edited, closed or adopted.
    pub claimed: &'a BTreeSet<String>,
    /// The base branch the pull requests target.
    pub base: &'a str,
    pub draft: bool,
    /// `pullRequests.assignees`: every open pull request of imagebump's has them.
    pub assignees: &'a [String],
    /// `pullRequests.reviewers`: asked on an open pull request that nobody is asked to
    /// review ([`Action::Review`]).
    pub reviewers: &'a [String],
    /// `--max-prs`: new pull requests at most.
    pub max_new: Option<usize>,
    /// Decide what would happen; push nothing, call the forge for nothing.
    pub dry_run: bool,
    /// `--shard I/N`: only this shard's pull requests may be closed.
    pub shard: Option<(u64, u64)>,
    /// Updates that wait for their schedule (normalised image, file written): a pull
    /// request proposing one is not obsolete, and is never closed for it.
    pub waiting: &'a BTreeSet<(String, String)>,
}

/// One step of pull-request mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Tell the pull request of a branch someone else committed to that imagebump leaves
    /// it alone: this new body (the note appended) and the note as a comment.
    NoteForeign {
        number: u64,
        title: String,
        body: String,
    },
    /// Report a change set's outcome as decided (failed instead if its branch's push fails).
    Report(PullReport),
    /// The change set's commit could not be built: report it failed, with the error.
    CannotBuild { report: PullReport, error: String },
    /// One push of every branch that changed, each with a lease on its previous tip.
    Push(Vec<RefUpdate>),
    /// Open a pull request for a pushed branch, then label it with `labels`, request
    /// reviewers and assign, and turn its auto-merge on when `automerge`.
    Open {
        report: PullReport,
        pull: NewPull,
        automerge: bool,
        labels: Vec<String>,
    },
    /// Bring an open pull request's title and body in line with its change set.
    Update {
        report: PullReport,
        number: u64,
        title: String,
        body: String,
    },
    /// Comment on and close a pull request whose change set is gone.
    Close { report: PullReport, number: u64 },
    /// Empty the marker of a pull request whose updates another change set proposes in this run
    /// (its new `title` and `body`: closing it then rejects nothing), comment and close it.
    Supersede {
        report: PullReport,
        number: u64,
        title: String,
        body: String,
    },
    /// Add the configured labels an open pull request lacks (a label call that failed on
    /// an earlier run, or one added to the configuration since).
    Label { number: u64, labels: Vec<String> },
    /// Assign the configured assignees an open pull request lacks.
    Assign { number: u64, assignees: Vec<String> },
    /// Request the configured reviewers on an open pull request that nobody is asked to
    /// review, unless the forge says it has a review already (asked while acting).
    Review { number: u64, reviewers: Vec<String> },
    /// Turn on the auto-merge of an open pull request that imagebump has not turned on yet
    /// (a call that failed on an earlier run), then mark its body (`title`, `body`) so.
    Automerge {
        pull: Box<Pull>,
        title: String,
        body: String,
    },
}

/// Text by (file, tag): promotion paths.
type Promoted = BTreeMap<(String, String), String>;

/// Each change set of the plan with its branch, title and updates; the bodies are written
/// by [`write_bodies`] once the release facts of the images are known (the branches are
/// built meanwhile: commits do not carry the body).
pub fn proposals<'a>(
    plan: &'a Plan,
    settings: &PullRequestsConfig,
    rejections: &Rejections,
) -> Vec<Proposal<'a>> {
    plan.change_sets
        .iter()
        .map(|set| {
            let updates = updates_of(plan, set);
            let automerge = automerge(&updates, rejections);
            let mut labels = settings.labels.clone();
            if crate::plan::is_major_group(&set.group) {
                for l in &settings.major_labels {
                    if !labels.iter().any(|have| have.eq_ignore_ascii_case(l)) {
                        labels.push(l.clone());
                    }
                }
            }
            Proposal {
                labels,
                set,
                branch: branch_name(&settings.branch_prefix, &set.group),
                title: title(set, &updates, settings.title.as_deref()),
                body: String::new(),
                updates,
                automerge,
                notes: Vec::new(),
            }
        })
        .collect()
}

/// Leaves out each proposal whose branch another proposal keeps: two group keys can share a
/// slug (the majors of `web`, `web (major)`, and a group named `web-major`; `apps/web` and
/// a group named `apps-web`), and two change sets pushing one branch would fail the push
/// of every branch, or take turns on one pull request. The branch is kept for the group
/// its open pull request's marker names when that group is proposed in this run or is
/// another shard's (so that neither a new group nor another shard takes it over), else for
/// the first proposal (plan order). Each other one is reported failed, with a problem
/// naming both groups.
pub fn apart_clashes(
    proposals: &mut Vec<Proposal<'_>>,
    open: &BTreeMap<String, Pull>,
    (prefix, shard): (&str, Option<(u64, u64)>),
) -> (Vec<PullReport>, Vec<Problem>) {
    let proposed: BTreeSet<(&str, &str)> = proposals
        .iter()
        .map(|p| (p.branch.as_str(), &*p.set.group))
        .collect();
    let elsewhere = |group: &str| {
        shard.is_some_and(|(i, n)| crate::plan::shard_of(crate::plan::base_group(group), n) != i)
    };
    let mut keeper: BTreeMap<String, String> = BTreeMap::new();
    for p in proposals.iter() {
        if keeper.contains_key(&p.branch) {
            continue;
        }
        let holder = open
            .get(&p.branch)
            .and_then(|pull| {
                marker::proposed(&pull.body, &p.branch, prefix)
                    .into_iter()
                    .next()
            })
            .map(|u| u.group)
            .filter(|g| proposed.contains(&(p.branch.as_str(), g.as_str())) || elsewhere(g));
        let holder = holder.unwrap_or_else(|| p.set.group.to_string());
        keeper.insert(p.branch.clone(), holder);
    }
    let (mut reports, mut problems) = (Vec::new(), Vec::new());
    proposals.retain(|p| {
        let first = match keeper.get(&p.branch) {
            Some(first) if *first != *p.set.group => first,
            _ => return true,
        };
        problems.push(Problem {
            location: "imagebump".into(),
            message: format!(
                "group {:?}: not proposed: its branch {} is the branch of group {:?}",
                &*p.set.group, p.branch, first
            ),
            hint: Some(
                "name the group (a rule's or a marker's `group`) so that its branch differs".into(),
            ),
        });
        reports.push(report(p, Outcome::Failed, None));
        false
    });
    (reports, problems)
}

/// Each proposal's pull-request body, with the release notes of its updates (from the
/// registry's facts, ages as of `now`) and the promotion paths of its promoted versions.
pub fn write_bodies(
    proposals: &mut [Proposal<'_>],
    (known, promoted): (super::notes::Known<'_>, &Promoted),
    now: jiff::Timestamp,
) {
    for p in proposals {
        p.notes = super::notes::notes_of(&p.updates, known, now);
        p.body = body(p.set, &p.updates, (&p.notes, promoted), &p.automerge);
    }
}

/// The actions, in order: notes on branches left alone, the outcomes known before the
/// push, the push, the pull requests of the pushed branches, the pull requests to close.
pub fn decide(input: &Input<'_>) -> Vec<Action> {
    let mut notes = Vec::new();
    let mut settled = Vec::new();
    let mut updates = Vec::new();
    let mut proposed = Vec::new();
    let mut created = 0;
    for (p, built) in input.proposals.iter().zip(input.built) {
        let pull = input.open.get(&p.branch);
        let remote = input.branches.get(&p.branch);
        if input.claimed.contains(&p.branch) {
            settled.push(Action::Report(report(p, Outcome::HumanCommits, None)));
            continue;
        }
        if remote.is_some_and(|r| r.foreign) {
            notes.extend(note_foreign(pull, input.dry_run));
            settled.push(Action::Report(report(p, Outcome::HumanCommits, pull)));
            continue;
        }
        if pull.is_none() && input.max_new.is_some_and(|m| created >= m) {
            settled.push(Action::Report(report(p, Outcome::Deferred, None)));
            continue;
        }
        let (sha, tree, current) = match built {
            Some(Built::Commit { sha, tree, current }) => (sha, tree, *current),
            failed => {
                let report = report(p, Outcome::Failed, pull);
                let error = match failed {
                    Some(Built::Failed(error)) => error.clone(),
                    // Not reached: a change set on imagebump's own branch gets a commit.
                    _ => "git fast-import: unexpected output: no commit built".to_string(),
                };
                settled.push(Action::CannotBuild { report, error });
                continue;
            }
        };
        // The branch already proposes exactly this: nothing to push.
        let same = current
            || remote.is_some_and(|r| r.parent_is_base && r.tree.is_some() && r.tree == *tree);
        if !same {
            updates.push(RefUpdate {
                branch: p.branch.clone(),
                new: sha.clone(),
                expected: remote.map(|r| r.sha.clone()),
            });
        }
        let outcome = match (pull, same) {
            (None, _) => {
                created = created.saturating_add(1);
                Outcome::Create
            }
            (Some(_), true) => Outcome::Unchanged,
            (Some(_), false) => Outcome::Update,
        };
        proposed.push(propose(input, p, outcome, pull));
        proposed.extend(missing_labels(input, p, pull));
        proposed.extend(missing_assignees(input, pull));
        proposed.extend(missing_reviewers(input, pull));
        proposed.extend(missing_automerge(input, p, pull));
    }
    let push = (!input.dry_run && !updates.is_empty()).then_some(Action::Push(updates));
    let mut actions = notes;
    actions.extend(settled);
    actions.extend(push);
    actions.extend(proposed);
    actions.extend(closes(input));
    actions
}

/// The note for the open pull request of a branch someone else committed to, once.
fn note_foreign(pull: Option<&Pull>, dry_run: bool) -> Option<Action> {
    let pull = pull.filter(|p| !dry_run && !p.body.contains(FOREIGN_NOTE))?;
    Some(Action::NoteForeign {
        number: pull.number,
        title: pull.title.clone(),
        body: format!("{}\n\n> {FOREIGN_NOTE}\n", pull.body.trim_end()),
    })
}

/// What the forge is asked for a change set whose branch is pushed (or already current).
fn propose(input: &Input<'_>, p: &Proposal<'_>, outcome: Outcome, pull: Option<&Pull>) -> Action {
    let report = report(p, outcome, pull);
    if input.dry_run {
        return Action::Report(report);
    }
    match pull {
        Some(pull)
            if pull.title != p.title || marker::parse(&pull.body) != marker::parse(&p.body) =>
        {
            Action::Update {
                report,
                number: pull.number,
                title: p.title.clone(),
                // What imagebump recorded about auto-merge stays recorded.
                body: if marker::has_automerge_mark(&pull.body) {
                    with_automerge_mark(&p.body)
                } else {
                    p.body.clone()
                },
            }
        }
        Some(_) => Action::Report(report),
        None => Action::Open {
            report,
            pull: NewPull {
                branch: p.branch.clone(),
                base: input.base.to_string(),
                title: p.title.clone(),
                body: p.body.clone(),
                draft: input.draft,
            },
            automerge: p.automerge == Automerge::On,
            labels: p.labels.clone(),
        },
    }
}

/// `body` saying that imagebump turned auto-merge on.
pub fn with_automerge_mark(body: &str) -> String {
    format!("{}\n{}\n", body.trim_end(), marker::AUTOMERGE_MARK)
}

/// Auto-merge for an open pull request that should have it and that imagebump has not
/// turned on yet. Once turned on (the body's mark), it is never turned on again: a human
/// who turned it off keeps it off.
fn missing_automerge(input: &Input<'_>, p: &Proposal<'_>, pull: Option<&Pull>) -> Option<Action> {
    let pull = pull.filter(|_| !input.dry_run && p.automerge == Automerge::On)?;
    if marker::has_automerge_mark(&pull.body) {
        return None;
    }
    Some(Action::Automerge {
        pull: Box::new(pull.clone()),
        title: p.title.clone(),
        body: with_automerge_mark(&p.body),
    })
}

/// The configured reviewers, for an existing open pull request that nobody is asked to
/// review. A forge drops a request once its review is in, so an empty list also means
/// "reviewed": acting asks the forge for reviews first, and requests none when there is
/// one (a reviewer is never asked twice for the same pull request).
fn missing_reviewers(input: &Input<'_>, pull: Option<&Pull>) -> Option<Action> {
    let pull = pull.filter(|p| !input.dry_run && p.review_requests.is_empty())?;
    (!input.reviewers.is_empty()).then(|| Action::Review {
        number: pull.number,
        reviewers: input.reviewers.to_vec(),
    })
}

/// The labels of `p` an existing open pull request lacks, as one call.
fn missing_labels(input: &Input<'_>, p: &Proposal<'_>, pull: Option<&Pull>) -> Option<Action> {
    let pull = pull.filter(|_| !input.dry_run)?;
    let labels: Vec<String> = p
        .labels
        .iter()
        .filter(|l| !pull.labels.iter().any(|have| have.eq_ignore_ascii_case(l)))
        .cloned()
        .collect();
    (!labels.is_empty()).then_some(Action::Label {
        number: pull.number,
        labels,
    })
}

/// The configured assignees an existing open pull request lacks (`@` and case aside), as
/// one call. Reviewers are not repeated: a forge forgets a review request once the review
/// is in, and asking again would ping the reviewer on every run.
fn missing_assignees(input: &Input<'_>, pull: Option<&Pull>) -> Option<Action> {
    let pull = pull.filter(|_| !input.dry_run)?;
    let bare = |name: &str| name.trim().trim_start_matches('@').to_ascii_lowercase();
    let have: Vec<String> = pull.assignees.iter().map(|a| bare(a)).collect();
    let assignees: Vec<String> = input
        .assignees
        .iter()
        .filter(|a| !bare(a).is_empty() && !have.contains(&bare(a)))
        .cloned()
        .collect();
    (!assignees.is_empty()).then_some(Action::Assign {
        number: pull.number,
        assignees,
    })
}

/// Open pull requests whose change set is gone because the base has their versions now
/// (only this shard's; none in a dry run).
fn closes(input: &Input<'_>) -> Vec<Action> {
    if input.dry_run {
        return Vec::new();
    }
    let planned: BTreeSet<&str> = input.proposals.iter().map(|p| p.branch.as_str()).collect();
    input
        .open
        .iter()
        .filter(|(branch, _)| !planned.contains(branch.as_str()))
        .filter_map(|(branch, p)| {
            let marked = marker::parse(&p.body)?;
            let ours = match input.shard {
                None => true,
                Some((i, n)) => marked.first().is_some_and(|u| {
                    crate::plan::shard_of(crate::plan::base_group(&u.group), n) == i
                }),
            };
            if !ours {
                return None;
            }
            let waits = |u: &Marked| input.waiting.contains(&(u.image.clone(), u.file.clone()));
            let report = PullReport {
                group: String::new(),
                branch: branch.clone(),
                title: p.title.clone(),
                action: Outcome::Close,
                number: Some(p.number),
                url: Some(p.url.clone()),
                notes: Vec::new(),
            };
            if marked.iter().all(|u| settled(input.plan, u) && !waits(u)) {
                let number = p.number;
                return Some(Action::Close { report, number });
            }
            marked
                .iter()
                .all(|u| moved(input.proposals, branch, u))
                .then(|| supersede(report, p))
        })
        .collect()
}

/// Another proposal (not from `branch`) has an update of `u`'s image in `u`'s file.
fn moved(proposals: &[Proposal<'_>], branch: &str, u: &Marked) -> bool {
    proposals.iter().filter(|p| p.branch != branch).any(|p| {
        p.updates
            .iter()
            .any(|x| *x.image == *u.image && x.written_to.as_deref().unwrap_or(&x.file) == u.file)
    })
}

/// Closing `p`, whose updates other pull requests propose in this run: its body without its
/// marker (an empty one instead, so that the closed pull request rejects nothing).
fn supersede(report: PullReport, p: &Pull) -> Action {
    let kept: Vec<&str> = p
        .body
        .lines()
        .filter(|l| !l.trim_start().starts_with("<!-- imagebump:"))
        .collect();
    let body = format!(
        "{}\n\n> {SUPERSEDED_NOTE}\n\n{}\n",
        kept.join("\n").trim_end(),
        marker::render(&[])
    );
    Action::Supersede {
        report,
        number: p.number,
        title: p.title.clone(),
        body,
    }
}

/// The plan has nothing left to do for `u`: no planned update of that image in that file.
fn settled(plan: &Plan, u: &Marked) -> bool {
    !plan
        .updates
        .iter()
        .any(|p| *p.image == *u.image && p.written_to.as_deref().unwrap_or(&p.file) == u.file)
}

fn report(p: &Proposal<'_>, action: Outcome, pull: Option<&Pull>) -> PullReport {
    PullReport {
        group: p.set.group.to_string(),
        branch: p.branch.clone(),
        title: p.title.clone(),
        action,
        number: pull.map(|pull| pull.number),
        url: pull.map(|pull| pull.url.clone()),
        notes: p.notes.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use imagebump_forge::PullState;

    /// A plan with one change set per group, each updating `ghcr.io/acme/<group>`.
    fn plan(groups: &[&str]) -> Plan {
        let mut plan = Plan::default();
        for (i, g) in groups.iter().enumerate() {
            plan.updates.push(Update {
                file: format!("{g}/kustomization.yaml").into(),
                line: 3,
                column: 13,
                kind: crate::discover::RefKind::Kustomize,
                image: format!("ghcr.io/acme/{g}").into(),
                name: format!("ghcr.io/acme/{g}").into(),
                from: "1.0.0".into(),
                to: "1.1.0".into(),
                group: g.to_string().into(),
                written_to: None,
                automerge: false,
                verified: None,
                app_version: None,
            });
            plan.change_sets.push(ChangeSet {
                group: (*g).into(),
                files: vec![format!("{g}/kustomization.yaml").into()],
                updates: vec![i],
                changes: Vec::new(),
            });
        }
        plan
    }

    fn settings() -> PullRequestsConfig {
        PullRequestsConfig::default()
    }

    /// The groups of the proposals kept, and the problems of the others.
    fn clashes(
        plan: &Plan,
        open: &BTreeMap<String, Pull>,
        shard: Option<(u64, u64)>,
    ) -> (Vec<String>, Vec<String>) {
        let mut proposals = proposals(plan, &settings(), &Default::default());
        let (reports, problems) = apart_clashes(&mut proposals, open, ("imagebump/", shard));
        assert!(reports.iter().all(|r| r.action == Outcome::Failed));
        assert_eq!(reports.len(), problems.len());
        let kept = proposals.iter().map(|p| p.set.group.to_string()).collect();
        (kept, problems.into_iter().map(|p| p.message).collect())
    }

    #[test]
    fn two_groups_of_one_branch_keep_one() {
        let three = plan(&["web (major)", "db", "web-major"]);
        let none = BTreeMap::new();
        assert_eq!(
            clashes(&three, &none, None),
            (
                vec!["web (major)".to_string(), "db".to_string()],
                vec![
                    "group \"web-major\": not proposed: its branch imagebump/web-major is the branch of group \"web (major)\""
                        .to_string()
                ]
            )
        );
        // The open pull request's group keeps its branch, in this run or another shard's.
        let mut all = proposals(&three, &settings(), &Default::default());
        all.retain(|p| &*p.set.group == "web-major");
        let mut held = pull(7, &all[0]);
        held.body = marker::render(&[Marked::from(three.updates.get(2).unwrap())]);
        let open = BTreeMap::from([(held.branch.clone(), held)]);
        assert_eq!(
            clashes(&three, &open, None).0,
            ["db".to_string(), "web-major".to_string()]
        );
        let n = (2..64)
            .find(|&n| crate::plan::shard_of("web", n) != crate::plan::shard_of("web-major", n))
            .unwrap();
        let shard = crate::plan::shard_of("web", n);
        let two = plan(&["web (major)", "db"]);
        let (kept, problems) = clashes(&two, &open, Some((shard, n)));
        assert_eq!(kept, ["db".to_string()], "{problems:?}");
    }

    fn commit(sha: &str) -> Option<Built> {
        Some(Built::Commit {
            sha: sha.into(),
            tree: Some(format!("tree-{sha}")),
            current: false,
        })
    }

    fn pull(number: u64, p: &Proposal<'_>) -> Pull {
        Pull {
            number,
            branch: p.branch.clone(),
            base: "main".into(),
            author: "imagebump-bot".into(),
            title: p.title.clone(),
            body: p.body.clone(),
            state: PullState::Open,
            url: format!("https://forge/pulls/{number}"),
            labels: Vec::new(),
            assignees: Vec::new(),
            review_requests: Vec::new(),
            draft: false,
            node_id: String::new(),
            automerge: None,
        }
    }

    /// A remote branch: imagebump's own is one commit on the base, someone else's is not.
    fn remote(sha: &str, foreign: bool, tree: Option<&str>) -> Branch {
        Branch {
            sha: sha.into(),
            foreign,
            parent_is_base: !foreign,
            tree: tree.map(str::to_string),
            behind: None,
        }
    }

    struct Case<'a> {
        plan: &'a Plan,
        proposals: Vec<Proposal<'a>>,
        built: Vec<Option<Built>>,
        branches: BTreeMap<String, Branch>,
        open: BTreeMap<String, Pull>,
        claimed: BTreeSet<String>,
        max_new: Option<usize>,
        dry_run: bool,
        waiting: BTreeSet<(String, String)>,
    }

    impl<'a> Case<'a> {
        fn new(plan: &'a Plan) -> Case<'a> {
            let mut proposals = proposals(plan, &settings(), &Default::default());
            write_bodies(
                &mut proposals,
                (
                    super::super::notes::Known {
                        facts: &BTreeMap::new(),
                        site: None,
                        releases: &BTreeMap::new(),
                    },
                    &BTreeMap::new(),
                ),
                jiff::Timestamp::UNIX_EPOCH,
            );
            let built = (0..proposals.len())
                .map(|i| commit(&format!("c{i}")))
                .collect();
            Case {
                plan,
                proposals,
                built,
                branches: BTreeMap::new(),
                open: BTreeMap::new(),
                claimed: BTreeSet::new(),
                max_new: None,
                dry_run: false,
                waiting: BTreeSet::new(),
            }
        }

        /// The first change set has an open pull request (#4) and a branch in this state.
        fn proposed(plan: &'a Plan, branch: Option<Branch>) -> Case<'a> {
            let mut case = Case::new(plan);
            let p = &case.proposals[0];
            case.open.insert(p.branch.clone(), pull(4, p));
            if let Some(b) = branch {
                case.branches.insert(p.branch.clone(), b);
            }
            case
        }

        fn decide(&self) -> Vec<Action> {
            decide(&Input {
                plan: self.plan,
                proposals: &self.proposals,
                built: &self.built,
                branches: &self.branches,
                open: &self.open,
                claimed: &self.claimed,
                base: "main",
                draft: false,
                assignees: &[],
                reviewers: &[],
                max_new: self.max_new,
                dry_run: self.dry_run,
                shard: None,
                waiting: &self.waiting,
            })
        }
    }

    /// Each action as `kind branch outcome`, to compare whole lists at a glance.
    fn lines(actions: &[Action]) -> Vec<String> {
        let r = |kind: &str, r: &PullReport| format!("{kind} {} {:?}", r.branch, r.action);
        actions
            .iter()
            .map(|a| match a {
                Action::NoteForeign { number, .. } => format!("note #{number}"),
                Action::Report(report) => r("report", report),
                Action::CannotBuild { report, .. } => r("cannot-build", report),
                Action::Push(u) => {
                    let u: Vec<String> = u
                        .iter()
                        .map(|u| format!("{}={}<-{:?}", u.branch, u.new, u.expected))
                        .collect();
                    format!("push {}", u.join(" "))
                }
                Action::Open { report, .. } => r("open", report),
                Action::Update { report, .. } => r("update", report),
                Action::Close { report, .. } => r("close", report),
                Action::Supersede { report, .. } => r("supersede", report),
                Action::Label { number, labels } => format!("label #{number} {labels:?}"),
                Action::Assign { number, assignees } => format!("assign #{number} {assignees:?}"),
                Action::Review { number, reviewers } => format!("review #{number} {reviewers:?}"),
                Action::Automerge { pull, .. } => format!("automerge #{}", pull.number),
            })
            .collect()
    }

    #[test]
    fn new_change_sets_are_pushed_then_opened() {
        let plan = plan(&["web", "api"]);
        let case = Case::new(&plan);
        assert_eq!(
            lines(&case.decide()),
            [
                "push imagebump/web=c0<-None imagebump/api=c1<-None",
                "open imagebump/web Create",
                "open imagebump/api Create",
            ]
        );
        let Action::Open { pull, .. } = &case.decide()[1] else {
            panic!("not an open");
        };
        assert_eq!(pull.base, "main");
        assert_eq!(pull.title, "Update ghcr.io/acme/web to 1.1.0");
    }

    #[test]
    fn a_dry_run_pushes_and_calls_nothing() {
        let plan = plan(&["web"]);
        let mut case = Case::new(&plan);
        case.dry_run = true;
        assert_eq!(lines(&case.decide()), ["report imagebump/web Create"]);
    }

    #[test]
    fn a_branch_that_already_proposes_the_same_is_left_as_it_is() {
        let plan = plan(&["web"]);
        let branch = remote("old", false, Some("tree-c0"));
        let mut case = Case::proposed(&plan, Some(branch.clone()));
        assert_eq!(lines(&case.decide()), ["report imagebump/web Unchanged"]);

        // New content: pushed with a lease on the old tip; the pull request already says it.
        let p = case.proposals[0].branch.clone();
        let moved = Branch {
            tree: Some("tree-other".into()),
            ..branch
        };
        case.branches.insert(p, moved);
        assert_eq!(
            lines(&case.decide()),
            [
                "push imagebump/web=c0<-Some(\"old\")",
                "report imagebump/web Update"
            ]
        );
    }

    #[test]
    fn a_stale_title_updates_the_pull_request() {
        let plan = plan(&["web"]);
        let mut case = Case::new(&plan);
        let p = &case.proposals[0];
        let stale = Pull {
            title: "Update web".into(),
            ..pull(4, p)
        };
        case.open.insert(p.branch.clone(), stale);
        assert_eq!(
            lines(&case.decide()),
            ["push imagebump/web=c0<-None", "update imagebump/web Update"]
        );
    }

    #[test]
    fn someone_elses_branch_gets_a_note_once_and_no_commit() {
        let plan = plan(&["web"]);
        let mut case = Case::proposed(&plan, Some(remote("theirs", true, None)));
        case.built = vec![None];
        assert_eq!(
            lines(&case.decide()),
            ["note #4", "report imagebump/web HumanCommits"]
        );
        let Action::NoteForeign { body, .. } = &case.decide()[0] else {
            panic!("not a note");
        };
        let noted = body.clone();
        if let Some(p) = case.open.get_mut("imagebump/web") {
            p.body = noted;
        }
        assert_eq!(lines(&case.decide()), ["report imagebump/web HumanCommits"]);
    }

    #[test]
    fn a_branch_someone_else_opened_a_pull_request_from_is_never_touched() {
        // Their pull request is not in `open` (not imagebump's), its branch is claimed: no
        // push, no pull request opened, nothing closed; the web change set is reported
        // left alone and the api one goes ahead.
        let plan = plan(&["web", "api"]);
        let mut case = Case::new(&plan);
        case.claimed.insert("imagebump/web".into());
        assert_eq!(
            lines(&case.decide()),
            [
                "report imagebump/web HumanCommits",
                "push imagebump/api=c1<-None",
                "open imagebump/api Create",
            ]
        );
    }

    #[test]
    fn max_new_defers_new_pull_requests_but_keeps_existing_ones_current() {
        let plan = plan(&["a", "b", "c"]);
        let mut case = Case::new(&plan);
        let c = &case.proposals[2];
        case.open.insert(c.branch.clone(), pull(9, c));
        case.max_new = Some(1);
        assert_eq!(
            lines(&case.decide()),
            [
                "report imagebump/b Deferred",
                "push imagebump/a=c0<-None imagebump/c=c2<-None",
                "open imagebump/a Create",
                "report imagebump/c Update",
            ]
        );
    }

    #[test]
    fn a_commit_that_cannot_be_built_fails_its_change_set_only() {
        let plan = plan(&["a", "b"]);
        let mut case = Case::new(&plan);
        case.built[0] = Some(Built::Failed("git fast-import failed: boom".into()));
        assert_eq!(
            lines(&case.decide()),
            [
                "cannot-build imagebump/a Failed",
                "push imagebump/b=c1<-None",
                "open imagebump/b Create",
            ]
        );
    }

    #[test]
    fn pull_requests_whose_versions_the_base_has_are_closed() {
        let done = plan(&["web"]);
        let old = Case::new(&done);
        let stale = pull(3, &old.proposals[0]);
        // The base has web's version now: the plan only updates api.
        let now = plan(&["api"]);
        let mut case = Case::new(&now);
        case.open.insert(stale.branch.clone(), stale.clone());
        assert_eq!(
            lines(&case.decide()),
            [
                "push imagebump/api=c0<-None",
                "open imagebump/api Create",
                "close imagebump/web Close",
            ]
        );
        // Planned by another change set (the same image and file): closed as
        // regrouped, its marker emptied first so that it rejects nothing.
        let mut moved = plan(&["api"]);
        let first = moved.updates.get_mut(0).expect("one update");
        first.image = "ghcr.io/acme/web".into();
        first.file = "web/kustomization.yaml".into();
        let mut case = Case::new(&moved);
        case.open.insert(stale.branch.clone(), stale.clone());
        let actions = case.decide();
        assert_eq!(lines(&actions)[2], "supersede imagebump/web Close");
        let Some(Action::Supersede { body, .. }) = actions.get(2) else {
            panic!("{actions:?}");
        };
        assert_eq!(marker::parse(body), Some(Vec::new()));
        assert!(body.contains(SUPERSEDED_NOTE));
        // Waiting for its schedule: not obsolete, left open.
        let mut case = Case::new(&now);
        case.open.insert(stale.branch.clone(), stale);
        let web = (
            "ghcr.io/acme/web".to_string(),
            "web/kustomization.yaml".to_string(),
        );
        case.waiting.insert(web);
        assert_eq!(
            lines(&case.decide()),
            ["push imagebump/api=c0<-None", "open imagebump/api Create"]
        );
    }
}
