//! Where the manifests come from: a local directory or a shallow clone of a remote.

pub mod git;
pub mod jail;
pub mod ref_component;
pub mod tree;

use std::path::{Path, PathBuf};

use secrecy::SecretString;

/// The manifest tree a run works on.
pub struct Workspace {
    /// The directory: the tree's files for a local directory, the repository (without a
    /// work tree, unless `tree` needed one) for a clone.
    pub root: PathBuf,
    /// Where the files are read from.
    pub tree: tree::Tree,
    /// The remote URL (credentials removed) when the tree was cloned.
    pub remote: Option<String>,
    /// The commit checked out, when the tree is a git checkout.
    pub commit: Option<String>,
    /// The branch checked out (the base for pull requests), when known.
    pub branch: Option<String>,
    /// The git client the clone was made with (and its credentials), for pushing.
    pub git: Option<git::Git>,
    /// The directory the command line named, relative to `root`, when it is below it (a
    /// subdirectory of the repository whose configuration applies): only what lies there
    /// is updated.
    pub scope: Option<String>,
    /// Keeps a temporary clone alive for the run.
    _tmp: Option<tempfile::TempDir>,
}

/// The branch `.git/HEAD` points to (`ref: refs/heads/main` → `main`).
fn checked_out_branch(root: &Path) -> Option<String> {
    let head = std::fs::read_to_string(root.join(".git/HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_string)
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: no such directory", imagebump_http::redact(.0))]
    NotFound(String),
    /// SOURCE names a file: a manifest tree is read from its root directory.
    #[error("{}: a file, not a directory (SOURCE is the manifest tree's root directory or a git URL)", imagebump_http::redact(.0))]
    NotADirectory(String),
    #[error(transparent)]
    Git(#[from] git::Error),
    #[error("cannot create a temporary directory: {0}")]
    Temp(std::io::Error),
}

/// True when `source` names a remote repository rather than a local path.
pub fn is_remote(source: &str) -> bool {
    let lower = source.get(..8).unwrap_or(source).to_ascii_lowercase();
    ["https://", "http://", "ssh://", "git://", "file://"]
        .iter()
        .any(|p| lower.starts_with(p))
        || is_scp_like(source)
}

/// `git@github.com:org/repo.git`
fn is_scp_like(source: &str) -> bool {
    match source.split_once(':') {
        Some((host, path)) => host.contains('@') && !host.contains('/') && !path.starts_with("//"),
        None => false,
    }
}

/// Open the manifest tree. A remote is cloned into a temporary directory with `depth`
/// commits of history (1 unless pull requests need to look for reverts) and read from its
/// objects (`tree`), the files `write_out` names written out; the token, if any, is handed
/// to git through its environment only.
pub fn open(
    source: &str,
    git_ref: Option<&str>,
    token: Option<SecretString>,
    depth: usize,
    write_out: &[&str],
) -> Result<Workspace, Error> {
    if is_remote(source) {
        let tmp = tempfile::Builder::new()
            .prefix("imagebump-")
            .tempdir()
            .map_err(Error::Temp)?;
        let dest = tmp.path().join("repo");
        let (url, url_token) = git::split_credentials(source);
        let git = git::Git::new(url_token.or(token));
        if depth <= 1 {
            git.clone_shallow(&url, git_ref, &dest)?;
        } else {
            git.clone_depth(&url, git_ref, &dest, depth)?;
        }
        let commit = git.head(&dest).ok();
        let branch = match git_ref {
            Some(_) => checked_out_branch(&dest),
            // The remote's HEAD must name the branch itself: a guess is no base branch.
            None => git
                .remote_head_branch(&dest)?
                .filter(|b| checked_out_branch(&dest).as_ref() == Some(b)),
        };
        // An empty repository has no commit, and nothing to read.
        let tree = match &commit {
            Some(sha) => tree::Tree::at_commit(&git, &dest, sha, write_out)?,
            None => tree::Tree::disk(&dest),
        };
        return Ok(Workspace {
            root: dest,
            tree,
            remote: Some(url),
            commit,
            branch,
            git: Some(git),
            scope: None,
            _tmp: Some(tmp),
        });
    }
    let root = Path::new(source);
    if root.is_file() {
        return Err(Error::NotADirectory(source.to_string()));
    }
    if !root.is_dir() {
        return Err(Error::NotFound(source.to_string()));
    }
    // A directory outside any git work tree has no commit: asking git would cost a
    // process for nothing (a few milliseconds of every local run).
    let commit = git_top_level(root).and_then(|_| git::Git::new(None).head(root).ok());
    Ok(Workspace {
        root: root.to_path_buf(),
        tree: tree::Tree::disk(root),
        remote: None,
        commit,
        branch: checked_out_branch(root),
        git: None,
        scope: None,
        _tmp: None,
    })
}

impl Workspace {
    /// Make the repository directory `root` (an ancestor of the tree opened) the root, the
    /// tree opened its scope.
    pub fn rooted_at(mut self, root: &Path) -> Workspace {
        let (Ok(dir), Ok(top)) = (self.root.canonicalize(), root.canonicalize()) else {
            return self;
        };
        let Ok(rel) = dir.strip_prefix(&top) else {
            return self;
        };
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.is_empty() {
            return self;
        }
        self.scope = Some(parts.join("/"));
        self.branch = checked_out_branch(&top).or(self.branch);
        self.tree = tree::Tree::disk(&top);
        self.root = top;
        self
    }
}

/// The top of the git work tree `dir` is in (the nearest directory holding `.git`), if any;
/// found by looking, no program run.
pub fn git_top_level(dir: &Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().ok()?;
    dir.ancestors()
        .find(|a| a.join(".git").exists())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_detection() {
        assert!(is_remote("https://github.com/org/repo.git"));
        assert!(is_remote("git@github.com:org/repo.git"));
        assert!(is_remote("file:///tmp/x"));
        assert!(!is_remote("./manifests"));
        assert!(!is_remote("C:/x"));
        assert!(!is_remote("manifests"));
    }

    /// A local tree has the commit of the work tree it is in (a subdirectory too), and none
    /// outside one.
    #[test]
    fn a_local_tree_has_its_work_tree_commit() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("repo/apps");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(tree.join("values.yaml"), "image: web:1.0.0\n").unwrap();
        let open_commit = |p: &Path| {
            open(p.to_str().unwrap(), None, None, 1, &[])
                .unwrap()
                .commit
        };
        // (Unless the temporary directory is itself inside a work tree.)
        if git_top_level(dir.path()).is_none() {
            assert_eq!(open_commit(&tree), None);
        }
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .current_dir(dir.path().join("repo"))
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        };
        git(&["init", "-q"]);
        git(&["add", "-A"]);
        git(&["commit", "-qm", "first"]);
        let head = git(&["rev-parse", "HEAD"]);
        assert_eq!(open_commit(&tree).as_deref(), Some(head.as_str()));
        assert_eq!(open_commit(&dir.path().join("repo")), Some(head));
    }
}
