//! What deciding needs from outside: imagebump's branches on the remote, the open pull
//! requests, and a commit for each change set built on the base in the clone (objects
//! only: nothing is visible outside the clone until the push).

use std::collections::BTreeMap;

use super::act::forge_problem;
use super::decide::{Branch, Built, Proposal};
use super::message::commit_message;
use super::Context;
use crate::deliver::marker;
use crate::forge::Pull;
use crate::source::git::{CommitInfo, Error as GitError, NewCommit, Signature};
use imagebump_model::Problem;

/// imagebump's branches that the proposals want, and the open pull requests by branch.
/// `None` when the branches or the pull requests cannot be listed (the problem is
/// recorded): then nothing is done.
pub async fn read(
    ctx: &Context<'_>,
    proposals: &[Proposal<'_>],
    problems: &mut Vec<Problem>,
) -> Option<(BTreeMap<String, Branch>, BTreeMap<String, Pull>)> {
    let prefix = ctx.settings.branch_prefix.as_str();
    let heads = match ctx.git.remote_heads(ctx.dir, prefix) {
        Ok(h) => h,
        Err(e) => {
            let message = format!("cannot list the remote's branches: {e}");
            problems.push(Problem::general(message));
            return None;
        }
    };
    let open: BTreeMap<String, Pull> = match (ctx.open, ctx.forge) {
        (Some(listed), _) => listed
            .iter()
            .map(|p| (p.branch.clone(), p.clone()))
            .collect(),
        (None, Some(f)) => match f.open_pulls(prefix).await {
            Ok(pulls) => pulls.into_iter().map(|p| (p.branch.clone(), p)).collect(),
            Err(e) => {
                problems.push(forge_problem(f, "cannot list pull requests", &e));
                return None;
            }
        },
        (None, None) => BTreeMap::new(),
    };
    let existing: Vec<String> = proposals
        .iter()
        .filter(|p| heads.contains_key(&p.branch))
        .map(|p| p.branch.clone())
        .collect();
    if !existing.is_empty() {
        if let Err(e) = ctx.git.fetch_branches(ctx.dir, &existing, 20) {
            let message = format!("cannot fetch imagebump's branches: {e}");
            problems.push(Problem::general(message));
        }
    }
    let branches = existing
        .into_iter()
        .filter_map(|b| {
            let sha = heads.get(&b)?.clone();
            Some((b, branch(ctx, sha)))
        })
        .collect();
    Some((branches, open))
}

/// A remote branch's state, read from its commits since the base.
fn branch(ctx: &Context<'_>, sha: String) -> Branch {
    let log = ctx
        .git
        .log(ctx.dir, &format!("{}..{sha}", ctx.base_commit), 50)
        .unwrap_or_default();
    let foreign = log
        .iter()
        .any(|c| is_foreign(c, &ctx.settings.author.email, ctx.by_api));
    let parent_is_base = matches!(
        log.as_slice(),
        [only] if only.parents.first().map(String::as_str) == Some(ctx.base_commit)
    );
    let tree = ctx.git.tree_of(ctx.dir, &sha).ok();
    Branch {
        sha,
        foreign,
        parent_is_base,
        tree,
    }
}

/// A commit not made by imagebump: another author, or no `Imagebump-Update` trailer. With
/// commits made by GitHub's API (`by_api`), GitHub is the committer and the token's bot the
/// author, whatever `email` says.
pub fn is_foreign(c: &CommitInfo, email: &str, by_api: bool) -> bool {
    let by_github =
        by_api && c.committer.email == "noreply@github.com" && c.author.email.contains("[bot]");
    (c.author.email != email && !by_github)
        || !c
            .trailers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(marker::TRAILER))
}

/// The commit of each proposal, all from the base commit and built at once (`None`: the
/// branch is someone else's and gets none). A change set that ends up deferred by
/// `--max-prs` gets a commit too, left unused in the clone.
pub fn build(
    ctx: &Context<'_>,
    proposals: &[Proposal<'_>],
    branches: &BTreeMap<String, Branch>,
) -> Vec<Option<Built>> {
    let author = Signature {
        name: ctx.settings.author.name.clone(),
        email: ctx.settings.author.email.clone(),
    };
    let wanted = |p: &Proposal<'_>| !branches.get(&p.branch).is_some_and(|b| b.foreign);
    let commits: Vec<NewCommit> = proposals
        .iter()
        .filter(|p| wanted(p))
        .map(|p| NewCommit {
            files: p
                .set
                .changes
                .iter()
                .map(|c| (c.file.clone(), c.after.clone().into_bytes()))
                .collect(),
            message: commit_message(&p.title, &p.updates),
        })
        .collect();
    let mut results = ctx
        .git
        .commit_many(ctx.dir, ctx.base_commit, &commits, &author, &author)
        .into_iter();
    proposals
        .iter()
        .map(|p| {
            // commit_many answers for every commit it was given.
            let result = wanted(p).then(|| results.next().unwrap_or_else(no_commit))?;
            Some(built(ctx, branches.get(&p.branch), result))
        })
        .collect()
}

fn no_commit() -> Result<String, GitError> {
    Err(GitError::Output {
        command: "fast-import".to_string(),
        detail: "no commit built".to_string(),
    })
}

/// A built commit, with its tree when the remote branch may already hold the same.
fn built(ctx: &Context<'_>, remote: Option<&Branch>, result: Result<String, GitError>) -> Built {
    match result {
        Ok(sha) => {
            let comparable = remote.is_some_and(|r| r.parent_is_base && r.tree.is_some());
            let tree = comparable
                .then(|| ctx.git.tree_of(ctx.dir, &sha).ok())
                .flatten();
            Built::Commit { sha, tree }
        }
        Err(e) => Built::Failed(e.to_string()),
    }
}
