//! Pull-request mode: every change set becomes a commit on its own branch, built from the
//! same base commit without checking anything out; all changed branches go up in one
//! `git push`; then the forge's pull requests are created, updated or closed to match.
//! Stateless: what was proposed before is read back from the branches, the pull requests
//! (their hidden marker) and the commits' trailers.
//!
//! In three steps: read what is there and build the commits (`state.rs`), decide without
//! I/O (`decide.rs`: a list of actions), then act (`act.rs`: the push and forge calls).

mod act;
pub mod decide;
mod message;
pub mod notes;
mod rejections;
mod releases;
mod state;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

pub use self::decide::{Action, Proposal};
pub use self::message::{body, branch_name, commit_message, title, updates_of};
pub use self::rejections::{
    by_image, lifted, pull_number, recorded, rejected, unsupported, Author, Rejected, NAMESPACE,
};
pub use self::state::{is_ours, not_ours_notes};
use crate::plan::Plan;
use crate::source::git::Git;
use imagebump_forge::Forge;
use imagebump_model::config::PullRequestsConfig;
use imagebump_model::Problem;

/// What happened (or, in a dry run, would happen) to one change set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
// The report schema (docs/report.schema.json) names it as the field does.
#[schemars(rename = "Action")]
pub enum Outcome {
    /// A new branch and pull request.
    Create,
    /// The branch moved to a new commit and the pull request was brought up to date.
    Update,
    /// Branch and pull request already as they should be: nothing written.
    Unchanged,
    /// Not opened: `--max-prs` was reached.
    Deferred,
    /// Left alone: someone else committed to the branch.
    HumanCommits,
    /// The pull request was closed: the base already has what it proposed.
    Close,
    /// The push or a forge call failed (see the errors); a re-run converges.
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PullReport {
    pub group: String,
    pub branch: String,
    pub title: String,
    pub action: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The facts of each distinct update it proposes, as its body gives them (empty when
    /// no body is written: a change set left alone, a pull request closed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<notes::UpdateNotes>,
}

/// Everything pull-request mode needs besides the plan.
pub struct Context<'a> {
    pub git: &'a Git,
    pub dir: &'a Path,
    /// The base branch and the commit the plan was made from.
    pub base: &'a str,
    pub base_commit: &'a str,
    pub forge: Option<&'a dyn Forge>,
    pub settings: &'a PullRequestsConfig,
    pub max_new: Option<usize>,
    pub dry_run: bool,
    /// Where each promoted version ran before, by (file, tag): a Markdown line for the
    /// pull-request body (src/promote).
    pub promoted: &'a BTreeMap<(String, String), String>,
    /// `--shard I/N`: only this shard's pull requests may be closed.
    pub shard: Option<(u64, u64)>,
    /// Where each push and forge change is recorded as it lands.
    pub journal: &'a crate::progress::Journal,
    /// The versions rejected before: no auto-merge for them.
    pub rejections: &'a crate::resolve::Rejections,
    /// The open pull requests of branches with imagebump's prefix, when the run has listed
    /// them already (`None`: listed here); only imagebump's own ([`state::is_ours`]) are
    /// touched.
    pub open: Option<&'a [imagebump_forge::Pull]>,
    /// The forge account imagebump acts as (`Forge::whoami`); `None` when unknown: then no
    /// pull request is imagebump's.
    pub login: Option<&'a str>,
    /// Branches get their commits from the forge's API (`signing: {format: github}`), not
    /// from `git push`.
    pub by_api: bool,
    /// Updates that wait for their schedule (`resolve::Resolved::waiting`): their open pull
    /// requests are not closed.
    pub waiting: &'a std::collections::BTreeSet<(String, String)>,
    /// The manifest repository's forge host and kind, for release notes' links.
    pub site: Option<notes::Site>,
}

pub use self::notes::ReleaseFacts;

/// The release facts of the updates, being fetched (a spawned task) while the branches are
/// read and built.
pub type PendingFacts = std::pin::Pin<Box<dyn std::future::Future<Output = ReleaseFacts> + Send>>;

/// Bring branches and pull requests in line with the plan. Problems are returned; the run
/// goes on with the other change sets.
///
/// The push needs no pull-request body, and only the bodies need the release facts of the
/// images (`resolve::release`): what to push is decided with the bodies written without
/// them (nothing decided depends on them: an open pull request is compared by its marker,
/// which holds no fact), the branches are pushed while the facts are still being fetched,
/// and the forge's part is decided again once they are in (`decide` is pure: the same
/// decisions, bodies with release notes).
pub async fn deliver(
    ctx: &Context<'_>,
    plan: &Plan,
    facts: PendingFacts,
) -> (Vec<PullReport>, Vec<Problem>) {
    let mut problems = Vec::new();
    let mut proposals = decide::proposals(plan, ctx.settings, ctx.rejections);
    let Some(state::Found {
        branches,
        open,
        claimed,
    }) = state::read(ctx, &proposals, &mut problems).await
    else {
        return (Vec::new(), problems);
    };
    let keep = (ctx.settings.branch_prefix.as_str(), ctx.shard);
    let (mut reports, clashes) = decide::apart_clashes(&mut proposals, &open, keep);
    problems.extend(clashes);
    let built = off_the_runtime(|| state::build(ctx, &proposals, &branches));
    let known = Known {
        plan,
        built: &built,
        branches: &branches,
        open: &open,
        claimed: &claimed,
    };
    let mut failed = std::collections::BTreeSet::new();
    let now = jiff::Timestamp::now();
    let (no_facts, no_releases) = (ReleaseFacts::new(), releases::Releases::new());
    let without = notes::Known {
        facts: &no_facts,
        site: ctx.site.as_ref(),
        releases: &no_releases,
    };
    decide::write_bodies(&mut proposals, (without, ctx.promoted), now);
    let mut first = known.decide(ctx, &proposals);
    let push_at = |actions: &[Action]| actions.iter().position(|a| matches!(a, Action::Push(_)));
    let pushed = push_at(&first);
    if let Some(push) = pushed {
        first.truncate(push.saturating_add(1));
        reports.extend(act::act(ctx, first, &mut failed, &mut problems).await);
    }
    let facts = facts.await;
    tracing::debug!(updates = facts.len(), "release facts");
    with_notes(ctx, &mut proposals, without, &facts, now).await;
    let all = known.decide(ctx, &proposals);
    // What came up to the push (included) is done; the rest is done now, with the facts.
    let done = match (pushed, push_at(&all)) {
        (Some(_), Some(push)) => push.saturating_add(1),
        _ => 0,
    };
    let rest = all.into_iter().skip(done).collect();
    reports.extend(act::act(ctx, rest, &mut failed, &mut problems).await);
    (reports, problems)
}

/// The bodies written again with the registry's facts, then (outside a dry run) with the
/// releases the manifest repository's forge has of the sources it hosts: those it says
/// are public, and the manifest repository's own.
async fn with_notes(
    ctx: &Context<'_>,
    proposals: &mut [Proposal<'_>],
    known: notes::Known<'_>,
    facts: &ReleaseFacts,
    now: jiff::Timestamp,
) {
    let known = notes::Known { facts, ..known };
    decide::write_bodies(proposals, (known, ctx.promoted), now);
    let Some(forge) = ctx.forge.filter(|_| !ctx.dry_run) else {
        return;
    };
    let all: Vec<&notes::UpdateNotes> = proposals.iter().flat_map(|p| p.notes.iter()).collect();
    let read = releases::read(forge, &all).await;
    if !read.is_empty() {
        let known = notes::Known {
            releases: &read,
            ..known
        };
        decide::write_bodies(proposals, (known, ctx.promoted), now);
    }
}

/// What deciding needs besides the proposals, read and built before it.
struct Known<'a> {
    plan: &'a Plan,
    built: &'a [Option<decide::Built>],
    branches: &'a BTreeMap<String, decide::Branch>,
    open: &'a BTreeMap<String, imagebump_forge::Pull>,
    claimed: &'a std::collections::BTreeSet<String>,
}

impl Known<'_> {
    fn decide(&self, ctx: &Context<'_>, proposals: &[Proposal<'_>]) -> Vec<Action> {
        decide::decide(&decide::Input {
            plan: self.plan,
            proposals,
            built: self.built,
            branches: self.branches,
            open: self.open,
            claimed: self.claimed,
            base: ctx.base,
            draft: ctx.settings.draft,
            assignees: &ctx.settings.assignees,
            reviewers: &ctx.settings.reviewers,
            max_new: ctx.max_new,
            dry_run: ctx.dry_run,
            shard: ctx.shard,
            waiting: ctx.waiting,
        })
    }
}

/// Runs `f`, which waits for git, without holding up the runtime's other tasks (the release
/// facts being fetched): on a multi-threaded runtime the worker's queue moves to another
/// thread while `f` runs (`block_in_place`), otherwise (a single-threaded runtime, no
/// runtime) it is simply called.
pub(crate) fn off_the_runtime<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}
