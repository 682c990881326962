//! What deciding needs from outside: imagebump's branches on the remote, the open pull
//! requests, and a commit for each change set built on the base in the clone (objects
//! only: nothing is visible outside the clone until the push).

use std::collections::BTreeMap;

use super::act::forge_problem;
use super::decide::{Branch, Built, Proposal};
use super::message::commit_message;
use super::Context;
use crate::deliver::marker;
use crate::source::git::{CommitInfo, Error as GitError, NewCommit, Signature};
use imagebump_forge::Pull;
use imagebump_model::Problem;

/// What [`read`] found on the remote and the forge.
pub struct Found {
    /// imagebump's branches that the proposals want, by name.
    pub branches: BTreeMap<String, Branch>,
    /// imagebump's open pull requests ([`is_ours`]), by branch.
    pub open: BTreeMap<String, Pull>,
    /// Branches with an open pull request that is not imagebump's: left alone.
    pub claimed: std::collections::BTreeSet<String>,
}

/// Whether `p` is one of imagebump's own pull requests for this run: opened by the
/// forge account imagebump acts as (`login`, `None` when it is not known: then none is)
/// and against the base branch. A branch name or a marker in the body proves nothing:
/// anyone who can push a branch can name it so and write one.
pub fn is_ours(p: &Pull, login: Option<&str>, base: &str) -> bool {
    login.is_some_and(|me| !me.is_empty() && p.author.eq_ignore_ascii_case(me)) && p.base == base
}

/// The pull requests listed that are not imagebump's ([`is_ours`]), as notes naming each.
pub fn not_ours_notes(pulls: &[Pull], login: Option<&str>, base: &str) -> Vec<String> {
    pulls
        .iter()
        .filter(|p| !is_ours(p, login, base))
        .map(|p| {
            format!(
                "pull request #{} from {} (by {}, into {}) is not imagebump's ({} into {base}): \
                 left alone, not counted",
                p.number,
                p.branch,
                if p.author.is_empty() {
                    "an unknown account"
                } else {
                    &p.author
                },
                p.base,
                login.unwrap_or("an unknown account"),
            )
        })
        .collect()
}

/// imagebump's branches that the proposals want, and the open pull requests by branch.
/// `None` when the branches or the pull requests cannot be listed (the problem is
/// recorded): then nothing is done.
pub async fn read(
    ctx: &Context<'_>,
    proposals: &[Proposal<'_>],
    problems: &mut Vec<Problem>,
) -> Option<Found> {
    let prefix = ctx.settings.branch_prefix.as_str();
    let heads = match ctx.git.remote_heads(ctx.dir, prefix) {
        Ok(h) => h,
        Err(e) => {
            let message = format!("cannot list the remote's branches: {e}");
            problems.push(Problem::general(message));
            return None;
        }
    };
    let listed: Vec<Pull> = match (ctx.open, ctx.forge) {
        (Some(listed), _) => listed.to_vec(),
        (None, Some(f)) => match f.open_pulls(prefix).await {
            Ok(pulls) => pulls,
            Err(e) => {
                problems.push(forge_problem(f, "cannot list pull requests", &e));
                return None;
            }
        },
        (None, None) => Vec::new(),
    };
    let (open, claimed) = split_open(listed, ctx.login, ctx.base);
    // Each once: two proposals can share a branch until `decide::apart_clashes` parts them.
    let existing: Vec<String> = proposals
        .iter()
        .filter(|p| heads.contains_key(&p.branch))
        .map(|p| p.branch.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !existing.is_empty() {
        if let Err(e) = ctx.git.fetch_branches(ctx.dir, &existing, 20) {
            let message = format!("cannot fetch imagebump's branches: {e}");
            problems.push(Problem::general(message));
        }
    }
    let (names, tips): (Vec<String>, Vec<String>) = existing
        .into_iter()
        .filter_map(|b| Some((b.clone(), heads.get(&b)?.clone())))
        .unzip();
    // One git command each for all the branches' commits and all their trees. A branch
    // whose commits cannot be read looks like a branch of no commit, as when read alone.
    let logs = ctx
        .git
        .logs_since(ctx.dir, ctx.base_commit, &tips, 50)
        .unwrap_or_default();
    let trees = ctx.git.trees_of(ctx.dir, &tips).unwrap_or_default();
    let branches = names
        .into_iter()
        .zip(tips)
        .enumerate()
        .map(|(i, (name, sha))| {
            let log = logs.get(i).map_or(&[][..], Vec::as_slice);
            let tree = trees.get(i).cloned().flatten();
            (name, branch(ctx, sha, log, tree))
        })
        .collect();
    Some(Found {
        branches,
        open,
        claimed,
    })
}

/// imagebump's open pull requests by branch, and the branches someone else's open pull
/// request comes from.
fn split_open(
    listed: Vec<Pull>,
    login: Option<&str>,
    base: &str,
) -> (BTreeMap<String, Pull>, std::collections::BTreeSet<String>) {
    let mut open = BTreeMap::new();
    let mut claimed = std::collections::BTreeSet::new();
    for p in listed {
        if is_ours(&p, login, base) {
            open.insert(p.branch.clone(), p);
        } else {
            claimed.insert(p.branch);
        }
    }
    // A branch with both (the bot's pull request into another base, say) is not touched.
    open.retain(|branch, _| !claimed.contains(branch));
    (open, claimed)
}

/// A remote branch's state, from its commits since the base and its tree.
fn branch(ctx: &Context<'_>, sha: String, log: &[CommitInfo], tree: Option<String>) -> Branch {
    let foreign = log
        .iter()
        .any(|c| is_foreign(c, &ctx.settings.author.email, ctx.by_api));
    let parent_is_base = matches!(
        log,
        [only] if only.parents.first().map(String::as_str) == Some(ctx.base_commit)
    );
    // One commit whose parent is not the base: the commits `base..tip` hold no other, so
    // its parent is an older commit of the base.
    let behind = match log {
        [only] if !foreign && !parent_is_base && only.parents.len() == 1 => {
            Some(update_trailers(&only.trailers))
        }
        _ => None,
    };
    Branch {
        sha,
        foreign,
        parent_is_base,
        tree,
        behind,
    }
}

/// A commit's `Imagebump-Update` trailers, each as its line reads, in order.
fn update_trailers(trailers: &[(String, String)]) -> Vec<String> {
    trailers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case(marker::TRAILER))
        .map(|(_, v)| format!("{}: {v}", marker::TRAILER))
        .collect()
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
    let results: Vec<Option<Attempt<'_>>> = proposals
        .iter()
        .map(|p| {
            // commit_many answers for every commit it was given.
            let result = wanted(p).then(|| results.next().unwrap_or_else(no_commit))?;
            Some((branches.get(&p.branch), result))
        })
        .collect();
    let trees = comparable_trees(ctx, &results);
    let current = still_current(ctx, proposals, &results);
    results
        .into_iter()
        .zip(current)
        .map(|(r, current)| {
            let (remote, result) = r?;
            let tree = result.as_ref().ok().and_then(|sha| trees.get(sha).cloned());
            Some(built(remote, result, tree, current))
        })
        .collect()
}

/// For each proposal, whether its remote branch, one imagebump commit on an older base,
/// still proposes exactly what this run built: the same update trailers, and every file
/// of the change set the same there as in the new commit (one `git cat-file` for all).
/// A pull request that auto-merges is always rebuilt on the moved base: a forge that
/// wants branches up to date merges it only then.
fn still_current(
    ctx: &Context<'_>,
    proposals: &[Proposal<'_>],
    results: &[Option<Attempt<'_>>],
) -> Vec<bool> {
    let mut queries: Vec<(String, String)> = Vec::new();
    let mut asked: Vec<Option<std::ops::Range<usize>>> = Vec::new();
    for (p, r) in proposals.iter().zip(results) {
        let candidate = match r {
            Some((Some(remote), Ok(sha))) => remote
                .behind
                .as_ref()
                .filter(|t| p.automerge != super::message::Automerge::On && same_trailers(t, p))
                .map(|_| (remote.sha.as_str(), sha.as_str())),
            _ => None,
        };
        asked.push(candidate.map(|(tip, new)| {
            let start = queries.len();
            for change in &p.set.changes {
                queries.push((tip.to_string(), change.file.clone()));
                queries.push((new.to_string(), change.file.clone()));
            }
            start..queries.len()
        }));
    }
    let blobs = ctx.git.blobs_at(ctx.dir, &queries).unwrap_or_default();
    asked
        .into_iter()
        .map(|range| {
            let Some(pairs) = range.and_then(|r| blobs.get(r)) else {
                return false;
            };
            !pairs.is_empty()
                && pairs
                    .chunks(2)
                    .all(|pair| matches!(pair, [Some(a), Some(b)] if a == b))
        })
        .collect()
}

/// Whether a branch commit's update trailers are those `p`'s commit has.
fn same_trailers(trailers: &[String], p: &Proposal<'_>) -> bool {
    let wanted: Vec<String> = p
        .updates
        .iter()
        .map(|u| marker::trailer(&marker::Marked::from(*u)))
        .collect();
    trailers == wanted.as_slice()
}

/// A change set's remote branch (if any) and the commit built for it.
type Attempt<'a> = (Option<&'a Branch>, Result<String, GitError>);

/// The trees of the built commits whose remote branch may already hold the same (a single
/// commit on the base with a known tree), by commit, in one git command.
fn comparable_trees(
    ctx: &Context<'_>,
    results: &[Option<Attempt<'_>>],
) -> BTreeMap<String, String> {
    let comparable = |r: &Option<&Branch>| r.is_some_and(|r| r.parent_is_base && r.tree.is_some());
    let shas: Vec<String> = results
        .iter()
        .flatten()
        .filter(|(remote, _)| comparable(remote))
        .filter_map(|(_, result)| result.as_ref().ok().cloned())
        .collect();
    let trees = ctx.git.trees_of(ctx.dir, &shas).unwrap_or_default();
    shas.into_iter()
        .zip(trees)
        .filter_map(|(sha, tree)| Some((sha, tree?)))
        .collect()
}

fn no_commit() -> Result<String, GitError> {
    Err(GitError::Output {
        command: "fast-import".to_string(),
        detail: "no commit built".to_string(),
    })
}

/// A built commit, with its tree when the remote branch may already hold the same.
fn built(
    remote: Option<&Branch>,
    result: Result<String, GitError>,
    tree: Option<String>,
    current: bool,
) -> Built {
    match result {
        Ok(sha) => {
            let comparable = remote.is_some_and(|r| r.parent_is_base && r.tree.is_some());
            Built::Commit {
                sha,
                tree: tree.filter(|_| comparable),
                current,
            }
        }
        Err(e) => Built::Failed(e.to_string()),
    }
}
