//! `--push`: commit the updates straight to the base branch, for environments without
//! review. The commit is built on the cloned base without checkout and pushed with a lease
//! on that base; when the base moved meanwhile, the caller analyses the new base and tries
//! again.

use crate::config::{PullRequestsConfig, PushCommits};
use crate::plan::{Plan, Update};
use crate::source::git::{Git, RefUpdate, Signature};

use super::pulls::{commit_message, title};

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
    if plan.files.is_empty() {
        return Ok(None);
    }
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
    let mut parent = base_commit.to_string();
    let batches: Vec<(String, Vec<&Update>, Vec<String>)> = match settings.push_commits {
        PushCommits::One => {
            let all: Vec<&Update> = plan.updates.iter().collect();
            let files = plan.files.iter().map(|f| f.file.clone()).collect();
            let t = match all.as_slice() {
                [u] => format!("Update {} to {}", u.name, u.to),
                _ => format!("Update {} images", all.len()),
            };
            vec![(t, all, files)]
        }
        PushCommits::PerChangeSet => {
            // A file shared by two change sets lands, with all its updates, in the first.
            let mut done: Vec<String> = Vec::new();
            plan.change_sets
                .iter()
                .map(|set| {
                    let ups: Vec<&Update> = set
                        .updates
                        .iter()
                        .filter_map(|&i| plan.updates.get(i))
                        .collect();
                    let files: Vec<String> = set
                        .files
                        .iter()
                        .filter(|f| !done.contains(f))
                        .cloned()
                        .collect();
                    done.extend(files.iter().cloned());
                    (title(set, &ups, settings.title.as_deref()), ups, files)
                })
                .filter(|(_, _, files)| !files.is_empty())
                .collect()
        }
    };
    for (t, ups, files) in batches {
        let message = commit_message(&t, &ups);
        parent = git
            .commit_files(dir, &parent, &content(&files), &message, &author, &author)
            .map_err(|e| PushError::Failed(format!("cannot build the commit: {e}")))?;
    }
    let outcome = git
        .push(
            dir,
            &[RefUpdate {
                branch: base.to_string(),
                new: parent.clone(),
                expected: Some(base_commit.to_string()),
            }],
        )
        .map_err(|e| PushError::Failed(format!("push failed: {e}")))?;
    match outcome.rejected.first() {
        None => Ok(Some(parent)),
        // A stale lease, or the remote's ref changing under the push: the base moved.
        Some((_, why))
            if [
                "stale",
                "fetch first",
                "non-fast-forward",
                "failed to update ref",
                "cannot lock ref",
            ]
            .iter()
            .any(|w| why.contains(w)) =>
        {
            Err(PushError::Moved)
        }
        Some((b, why)) => Err(PushError::Failed(format!("push of {b} rejected: {why}"))),
    }
}
