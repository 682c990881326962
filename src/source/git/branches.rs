//! Reading many branches at once: the commits each has since the base and the tree of many
//! commits, one git command for all of them rather than one per branch (pull-request mode
//! reads hundreds of imagebump's branches on every run after the first).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use super::{object_id, parse_log, revision, CommitInfo, Error, Git};

impl Git {
    /// For each of `tips`, the commits of `base..tip` (as [`Git::log`] gives them: newest
    /// first, at most `max`), from one `git log` of all the ranges: the commits reachable
    /// from a tip and not from `base`, each branch's found again by following parents from
    /// its tip. In a shallow clone a branch's history ends at the shallow boundary.
    pub fn logs_since(
        &self,
        dir: &Path,
        base: &str,
        tips: &[String],
        max: usize,
    ) -> Result<Vec<Vec<CommitInfo>>, Error> {
        let base = revision(base)?;
        for tip in tips {
            object_id(tip)?;
        }
        if tips.is_empty() || max == 0 {
            return Ok(vec![Vec::new(); tips.len()]);
        }
        let mut cmd = self.log_command(dir);
        cmd.arg(format!("--max-count={}", max.saturating_mul(tips.len())))
            .arg("--end-of-options")
            .arg(format!("^{base}"))
            .args(tips)
            .arg("--");
        let out = self.run(cmd, "log")?;
        let all = parse_log(&String::from_utf8_lossy(&out.stdout))?;
        let by_sha: HashMap<&str, &CommitInfo> = all.iter().map(|c| (c.sha.as_str(), c)).collect();
        Ok(tips
            .iter()
            .map(|tip| since(&all, &by_sha, tip, max))
            .collect())
    }

    /// The tree of each of `commits` (`None`: not a commit here), from one `git cat-file
    /// --batch-check`.
    pub fn trees_of(&self, dir: &Path, commits: &[String]) -> Result<Vec<Option<String>>, Error> {
        if commits.is_empty() {
            return Ok(Vec::new());
        }
        let mut query = String::new();
        for c in commits {
            query.push_str(object_id(c)?);
            query.push_str("^{tree}\n");
        }
        let mut cmd = self.local(dir);
        cmd.args(["cat-file", "--batch-check=%(objectname) %(objecttype)"]);
        let out = self.run_with_input(cmd, "cat-file", query.as_bytes())?;
        let text = String::from_utf8_lossy(&out.stdout);
        // One line per query, in order: "<tree> tree", or "<query> missing".
        let trees: Vec<Option<String>> = text
            .lines()
            .map(|l| match l.split_once(' ') {
                Some((sha, "tree")) if object_id(sha).is_ok() => Some(sha.to_string()),
                _ => None,
            })
            .collect();
        if trees.len() != commits.len() {
            return Err(Error::Output {
                command: "cat-file".to_string(),
                detail: format!("{} answers for {} commits", trees.len(), commits.len()),
            });
        }
        Ok(trees)
    }
}

impl Git {
    /// The object each `(commit, path)` names (`None`: no such file there, or a path that
    /// cannot be asked for in one line), from one `git cat-file --batch-check`.
    pub fn blobs_at(
        &self,
        dir: &Path,
        queries: &[(String, String)],
    ) -> Result<Vec<Option<String>>, Error> {
        // A path with a line break cannot be asked for in the batch: it is answered `None`
        // without asking.
        let askable = |path: &str| !path.contains(['\n', '\r']);
        let mut query = String::new();
        for (commit, path) in queries.iter().filter(|(_, p)| askable(p)) {
            query.push_str(object_id(commit)?);
            query.push(':');
            query.push_str(path);
            query.push('\n');
        }
        let answers: Vec<Option<String>> = if query.is_empty() {
            Vec::new()
        } else {
            let mut cmd = self.local(dir);
            cmd.args(["cat-file", "--batch-check=%(objectname) %(objecttype)"]);
            let out = self.run_with_input(cmd, "cat-file", query.as_bytes())?;
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(|l| match l.split_once(' ') {
                    Some((sha, "blob")) if object_id(sha).is_ok() => Some(sha.to_string()),
                    _ => None,
                })
                .collect()
        };
        let mut answers = answers.into_iter();
        let blobs: Vec<Option<String>> = queries
            .iter()
            .map(|(_, p)| {
                if askable(p) {
                    answers.next().flatten()
                } else {
                    None
                }
            })
            .collect();
        if answers.next().is_some() || blobs.len() != queries.len() {
            return Err(Error::Output {
                command: "cat-file".to_string(),
                detail: "more answers than questions".to_string(),
            });
        }
        Ok(blobs)
    }
}

/// The commits of `all` (`by_sha`: the same, by id) reachable from `tip` through parents
/// within `all`, in `all`'s order, at most `max`.
fn since(
    all: &[CommitInfo],
    by_sha: &HashMap<&str, &CommitInfo>,
    tip: &str,
    max: usize,
) -> Vec<CommitInfo> {
    let mut reached: BTreeSet<&str> = BTreeSet::new();
    let mut todo = vec![tip];
    while let Some(sha) = todo.pop() {
        let Some(c) = by_sha.get(sha) else { continue };
        if reached.insert(c.sha.as_str()) {
            todo.extend(c.parents.iter().map(String::as_str));
        }
    }
    all.iter()
        .filter(|c| reached.contains(c.sha.as_str()))
        .take(max)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::git::Signature;

    fn commit(sha: &str, parents: &[&str]) -> CommitInfo {
        let who = Signature {
            name: "bot".into(),
            email: "bot@example.invalid".into(),
        };
        CommitInfo {
            sha: sha.into(),
            parents: parents.iter().map(|p| p.to_string()).collect(),
            author: who.clone(),
            committer: who,
            subject: String::new(),
            body: String::new(),
            trailers: Vec::new(),
        }
    }

    #[test]
    fn each_branch_gets_the_commits_its_tip_reaches() {
        // base ← a1 ← a2 (branch a); base ← b1 (branch b); a merge m of a2 and b1 (branch m).
        let all = vec![
            commit("m", &["a2", "b1"]),
            commit("a2", &["a1"]),
            commit("b1", &["base"]),
            commit("a1", &["base"]),
        ];
        let by_sha: HashMap<&str, &CommitInfo> = all.iter().map(|c| (c.sha.as_str(), c)).collect();
        let shas = |tip: &str, max: usize| -> Vec<String> {
            since(&all, &by_sha, tip, max)
                .into_iter()
                .map(|c| c.sha)
                .collect()
        };
        assert_eq!(shas("a2", 50), ["a2", "a1"]);
        assert_eq!(shas("b1", 50), ["b1"]);
        assert_eq!(shas("m", 50), ["m", "a2", "b1", "a1"]);
        assert_eq!(shas("m", 2), ["m", "a2"]);
        // A tip outside the output (the base itself, or beyond the shallow boundary).
        assert_eq!(shas("base", 50), Vec::<String>::new());
    }
}
