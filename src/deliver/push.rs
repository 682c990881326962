//! `--push`: commit the updates straight to the base branch, for environments without
//! review. The commit is built on the cloned base without checkout and pushed with a lease
//! on that base; when the base moved meanwhile, the caller analyses the new base and tries
//! again.

use crate::plan::{Plan, Update};
use crate::source::git::{Git, RefUpdate, Signature};
use imagebump_model::config::{PullRequestsConfig, PushCommits};

use super::pulls::{commit_message, title, updates_of};

#[derive(Debug)]
pub enum PushError {
    /// The base moved since the clone: analyse the new base and try again.
    Moved,
    Failed(String),
}

/// Commit `plan` onto `base_commit` and push it to `base`. `Ok(None)`: nothing to commit.
pub fn push_to_base(
    git: &Git,
    dir: &std::path::Path,
    base: &str,
    base_commit: &str,
    plan: &Plan,
    settings: &PullRequestsConfig,
) -> Result<Option<String>, PushError> {
    let Some((tip, _)) = commits(git, dir, base_commit, plan, settings)?.pop() else {
        return Ok(None);
    };
    let outcome = git
        .push(
            dir,
            &[RefUpdate {
                branch: base.to_string(),
                new: tip.clone(),
                expected: Some(base_commit.to_string()),
            }],
        )
        .map_err(|e| PushError::Failed(format!("push failed: {e}")))?;
    match outcome.rejected.first() {
        None => Ok(Some(tip)),
        Some((_, why)) if base_moved(why) => Err(PushError::Moved),
        Some((b, why)) => Err(PushError::Failed(format!("push of {b} rejected: {why}"))),
    }
}

/// Build the commits of `plan` on `base_commit` in the clone, without pushing: each
/// commit and its message, oldest first (what `--push --dry-run` shows).
pub fn commits(
    git: &Git,
    dir: &std::path::Path,
    base_commit: &str,
    plan: &Plan,
    settings: &PullRequestsConfig,
) -> Result<Vec<(String, String)>, PushError> {
    let author = Signature {
        name: settings.author.name.clone(),
        email: settings.author.email.clone(),
    };
    let content = |names: &[String]| -> Vec<(String, Vec<u8>)> {
        plan.files
            .iter()
            .filter(|f| names.contains(&f.file))
            .map(|f| (f.file.clone(), f.after.clone().into_bytes()))
            .collect()
    };
    let mut built = Vec::new();
    if plan.files.is_empty() {
        return Ok(built);
    }
    let mut parent = base_commit.to_string();
    for batch in batches(plan, settings) {
        let message = commit_message(&batch.title, &batch.updates);
        let files = content(&batch.files);
        parent = git
            .commit_files(dir, &parent, &files, &message, &author, &author)
            .map_err(|e| PushError::Failed(format!("cannot build the commit: {e}")))?;
        built.push((parent.clone(), message));
    }
    Ok(built)
}

/// A stale lease, or the remote's ref changing under the push: the base moved.
fn base_moved(why: &str) -> bool {
    [
        "stale",
        "fetch first",
        "non-fast-forward",
        "failed to update ref",
        "cannot lock ref",
    ]
    .iter()
    .any(|w| why.contains(w))
}

/// One commit to make on the base.
struct Batch<'a> {
    title: String,
    updates: Vec<&'a Update>,
    /// The files it writes.
    files: Vec<String>,
}

/// One commit for the whole plan, or one per change set (`pullRequests.pushCommits`).
fn batches<'a>(plan: &'a Plan, settings: &PullRequestsConfig) -> Vec<Batch<'a>> {
    match settings.push_commits {
        PushCommits::One => {
            let all: Vec<&Update> = plan.updates.iter().collect();
            let files = plan.files.iter().map(|f| f.file.clone()).collect();
            let title = match all.as_slice() {
                [u] => format!("Update {} to {}", u.name, u.to),
                _ => format!("Update {} images", all.len()),
            };
            vec![Batch {
                title,
                updates: all,
                files,
            }]
        }
        PushCommits::PerChangeSet => {
            // A file shared by two change sets lands, with all its updates, in the first.
            let mut done: Vec<String> = Vec::new();
            plan.change_sets
                .iter()
                .map(|set| {
                    let ups = updates_of(plan, set);
                    let files: Vec<String> = set
                        .files
                        .iter()
                        .map(|f| f.to_string())
                        .filter(|f| !done.contains(f))
                        .collect();
                    done.extend(files.iter().cloned());
                    Batch {
                        title: title(set, &ups, settings.title.as_deref()),
                        updates: ups,
                        files,
                    }
                })
                .filter(|b| !b.files.is_empty())
                .collect()
        }
    }
}

/// A pull-request run whose `delivery: push` references are committed to the base in the
/// same run: the plan to push and the plan for pull requests. `None` when no update is
/// delivered by push. A file that also holds an update delivered by pull request is left
/// to the pull request entirely, so a pull request never carries (or undoes) a pushed
/// change.
pub fn split_by_delivery(
    found: &crate::discover::Discovery,
    outcomes: &crate::chunked::Chunked<crate::resolve::Outcome>,
    group_by: crate::plan::Groups,
) -> Option<(Plan, Plan)> {
    use crate::resolve::Outcome;
    use imagebump_model::policy::Delivery;
    use std::collections::BTreeSet;
    let updated = |o: &Outcome| matches!(o, Outcome::Update { .. });
    let pushed = |r: &crate::discover::ImageRef| r.policy.spec.delivery == Some(Delivery::Push);
    let reviewed: BTreeSet<&str> = found
        .refs
        .iter()
        .zip(outcomes)
        .filter(|(r, o)| updated(o) && !pushed(r))
        .flat_map(|(r, _)| r.touched_files())
        .collect();
    let direct: Vec<bool> = found
        .refs
        .iter()
        .zip(outcomes)
        .map(|(r, o)| {
            updated(o) && pushed(r) && r.touched_files().iter().all(|f| !reviewed.contains(f))
        })
        .collect();
    if !direct.contains(&true) {
        return None;
    }
    let keep = |push: bool| -> crate::chunked::Chunked<Outcome> {
        outcomes
            .iter()
            .zip(&direct)
            .map(|(o, d)| {
                if *d == push {
                    o.clone()
                } else {
                    Outcome::UpToDate
                }
            })
            .collect()
    };
    Some((
        crate::plan::plan(found, &keep(true), group_by),
        crate::plan::plan(found, &keep(false), group_by),
    ))
}
