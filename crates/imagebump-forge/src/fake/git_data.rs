//! The part of the GitHub fake that writes to a real git repository: the refs API and
//! GraphQL `createCommitOnBranch` change the bare repository the tests serve over HTTP, as
//! GitHub changes the repository behind its API. Plain git plumbing, isolated from the
//! user's configuration.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// GitHub's committer on commits it creates through the API.
pub const WEB_FLOW: (&str, &str) = ("GitHub", "noreply@github.com");

fn git(repo: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_DIR", repo)
        .stdin(Stdio::null());
    cmd
}

fn run(mut cmd: Command, input: Option<&[u8]>) -> Option<String> {
    if input.is_some() {
        cmd.stdin(Stdio::piped());
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().ok()?;
    if let Some(bytes) = input {
        child.stdin.take()?.write_all(bytes).ok()?;
    }
    let out = child.wait_with_output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The sha `refs/heads/<branch>` points at.
pub fn head(repo: &Path, branch: &str) -> Option<String> {
    let mut cmd = git(repo);
    cmd.args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("refs/heads/{branch}^{{commit}}"));
    run(cmd, None)
}

/// Whether `sha` names a commit in the repository.
pub fn is_commit(repo: &Path, sha: &str) -> bool {
    let mut cmd = git(repo);
    cmd.args(["cat-file", "-e"])
        .arg(format!("{sha}^{{commit}}"));
    run(cmd, None).is_some()
}

/// Whether `ancestor` is an ancestor of (or is) `sha`.
pub fn is_ancestor(repo: &Path, ancestor: &str, sha: &str) -> bool {
    let mut cmd = git(repo);
    cmd.args(["merge-base", "--is-ancestor", ancestor, sha]);
    run(cmd, None).is_some()
}

/// Points `refs/heads/<branch>` at `sha`.
pub fn set_ref(repo: &Path, branch: &str, sha: &str) -> bool {
    let mut cmd = git(repo);
    cmd.args(["update-ref", &format!("refs/heads/{branch}"), sha]);
    run(cmd, None).is_some()
}

/// A commit on `parent` whose tree is `parent`'s with `files` written (new files
/// `100644`), by `author`, committed by GitHub; its sha.
pub fn commit(
    repo: &Path,
    parent: &str,
    files: &[(String, Vec<u8>)],
    message: &str,
    author: (&str, &str),
) -> Option<String> {
    let tmp = tempfile::tempdir().ok()?;
    let index: PathBuf = tmp.path().join("index");
    let with_index = |args: &[&str]| {
        let mut cmd = git(repo);
        cmd.env("GIT_INDEX_FILE", &index).args(args);
        cmd
    };
    run(with_index(&["read-tree", parent]), None)?;
    for (path, content) in files {
        let blob = run(with_index(&["hash-object", "-w", "--stdin"]), Some(content))?;
        let info = format!("100644,{blob},{path}");
        run(
            with_index(&["update-index", "--add", "--cacheinfo", &info]),
            None,
        )?;
    }
    let tree = run(with_index(&["write-tree"]), None)?;
    let mut cmd = git(repo);
    cmd.args(["commit-tree", &tree, "-p", parent])
        .env("GIT_AUTHOR_NAME", author.0)
        .env("GIT_AUTHOR_EMAIL", author.1)
        .env("GIT_COMMITTER_NAME", WEB_FLOW.0)
        .env("GIT_COMMITTER_EMAIL", WEB_FLOW.1);
    run(cmd, Some(message.as_bytes()))
}
