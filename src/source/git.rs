//! A small typed wrapper over the `git` CLI, isolated from the user's git configuration.
//!
//! Credentials never reach the command line, the remote URL or `.git/config`: a token is
//! passed as an HTTP `Authorization` header scoped to the remote's origin, through git's
//! environment-carried configuration (`GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`).
//! Commands that talk to `origin` of an existing clone read its (credential-free) URL from the
//! clone's configuration to scope the header. Anything git prints is scrubbed of the token
//! before it reaches an error or a log line.
//!
//! Git behaviours the pull-request code relies on (checked by `tests/git_push.rs`):
//! - A bare `--force-with-lease` pushing to a remote without fetch refspecs (so no tracking
//!   ref for any branch) means "each branch without a lease of its own must not exist
//!   yet" (git's `apply_cas`, not spelled out in git-push(1)); a lease on a full hex sha
//!   needs no local copy of that object. `Git::push` relies on both.
//! - A push whose new value equals the remote's is reported `=` ("up to date") and accepted
//!   without checking the lease.
//! - `fetch --depth N` of a branch that joins history this clone already has writes a new
//!   shallow boundary N commits below the branch tip, which also cuts the history of refs
//!   already here (the base). Fetching the base again at its depth (`fetch_base`) restores it.

mod branches;
mod history;
pub use history::{FileCommit, FileHistory};

use std::collections::BTreeMap;
use std::io::{BufRead as _, Read, Write};

use imagebump_model::env::EnvVars;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use base64::Engine;
use secrecy::{ExposeSecret, SecretString};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("git is not installed or not runnable: {0} (install git >= 2.31)")]
    Spawn(std::io::Error),
    #[error("git {command} failed: {stderr}")]
    Failed { command: String, stderr: String },
    #[error(
        "git {command} failed: the remote refused the credentials (token missing, wrong, \
         or without access to this repository; set IMAGEBUMP_GIT_TOKEN): {stderr}"
    )]
    Auth { command: String, stderr: String },
    #[error("git {command}: unexpected output: {detail}")]
    Output { command: String, detail: String },
    #[error("invalid {what} {value:?} for git")]
    Invalid { what: &'static str, value: String },
    #[error("cannot create a temporary directory for git: {0}")]
    Temp(std::io::Error),
    #[error("origin {0} is plain http://, not read (anyone on the path could forge it)")]
    PlainHttp(String),
}

impl Error {
    /// The same error again (for each commit of a batch that failed as a whole).
    fn again(&self) -> Error {
        match self {
            Error::Spawn(e) => Error::Spawn(std::io::Error::new(e.kind(), e.to_string())),
            Error::Failed { command, stderr } => Error::Failed {
                command: command.clone(),
                stderr: stderr.clone(),
            },
            Error::Auth { command, stderr } => Error::Auth {
                command: command.clone(),
                stderr: stderr.clone(),
            },
            Error::Output { command, detail } => Error::Output {
                command: command.clone(),
                detail: detail.clone(),
            },
            Error::Invalid { what, value } => Error::Invalid {
                what,
                value: value.clone(),
            },
            Error::Temp(e) => Error::Temp(std::io::Error::new(e.kind(), e.to_string())),
            Error::PlainHttp(url) => Error::PlainHttp(url.clone()),
        }
    }
}

/// One commit of [`Git::commit_many`]: files (path from the root, content) and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCommit {
    pub files: Vec<(String, Vec<u8>)>,
    pub message: String,
}

/// Who a commit is by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    pub name: String,
    pub email: String,
}

/// A commit as read from history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitInfo {
    pub sha: String,
    pub parents: Vec<String>,
    pub author: Signature,
    pub committer: Signature,
    pub subject: String,
    pub body: String,
    /// The trailers of the message (as `git interpret-trailers --parse` reads them, folded
    /// lines joined): (key, value) in order.
    pub trailers: Vec<(String, String)>,
}

/// One branch to set in a push: `new` commit; `expected` = the remote's current sha for
/// `--force-with-lease`, `None` = the branch must not exist yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefUpdate {
    pub branch: String,
    pub new: String,
    pub expected: Option<String>,
}

/// Per-branch result of one push.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PushOutcome {
    /// Branches now at the requested commit (updated, created, or already there).
    pub accepted: Vec<String>,
    /// (branch, reason as git says it, e.g. "stale info", "fetch first", "hook declined")
    pub rejected: Vec<(String, String)>,
}

/// Fields of one commit in [`Git::log`]'s format, NUL-separated.
const LOG_FORMAT: &str = "%H%x00%P%x00%an%x00%ae%x00%cn%x00%ce%x00%s%x00%b%x00\
     %(trailers:only=true,unfold=true,separator=%x1f,key_value_separator=%x1e)";
const LOG_FIELDS: usize = 9;

/// Environment a caller might have set that would make git act on another repository,
/// read other configuration, or print credentials.
const INHERITED_ENV_REMOVED: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_TRACE_REDACT",
    "GIT_LITERAL_PATHSPECS",
    "GIT_GLOB_PATHSPECS",
    "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS",
];

/// glibc's malloc settings for `git fast-import`: no giving memory back under 256 MiB, and
/// 64 MiB asked for at a time (see [`Git::commit_many`]).
const FAST_IMPORT_MALLOC: &str =
    "glibc.malloc.trim_threshold=268435456:glibc.malloc.top_pad=67108864";

/// `Debug` shows the token as `[REDACTED]` (secrecy's own `Debug`).
#[derive(Debug)]
pub struct Git {
    token: Option<SecretString>,
    /// Sign the commits imagebump makes (`signing` in the operator's configuration).
    signing: Option<imagebump_model::config::Signing>,
}

impl Git {
    pub fn new(token: Option<SecretString>) -> Self {
        Git {
            token,
            signing: None,
        }
    }

    /// The same, signing every commit it makes with `signing`.
    pub fn with_signing(mut self, signing: Option<imagebump_model::config::Signing>) -> Self {
        self.signing = signing;
        self
    }

    /// Whether git signs the commits it makes (not when the forge's API creates them).
    fn signs(&self) -> bool {
        self.signing.as_ref().is_some_and(|s| !s.by_api())
    }

    /// The files `commit` changes against `parent` (added or modified; paths from the root).
    pub fn changed_files(
        &self,
        dir: &Path,
        parent: &str,
        commit: &str,
    ) -> Result<Vec<String>, Error> {
        let (parent, commit) = (revision(parent)?, revision(commit)?);
        let mut cmd = self.local(dir);
        cmd.args([
            "diff-tree",
            "-r",
            "-z",
            "--no-renames",
            "--name-only",
            "--diff-filter=AM",
            parent,
            commit,
        ]);
        let out = self.run(cmd, "diff-tree")?;
        Ok(out
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect())
    }

    /// The git settings that sign a commit: the format, the key, and the signing program
    /// named here (never one a configuration file could choose).
    fn signing_config(&self) -> Vec<(String, String)> {
        use imagebump_model::config::SigningFormat;
        let Some(s) = self.signing.as_ref().filter(|s| !s.by_api()) else {
            return Vec::new();
        };
        let (format, program_key, program) = match s.format {
            SigningFormat::Ssh | SigningFormat::Github => ("ssh", "gpg.ssh.program", "ssh-keygen"),
            SigningFormat::Openpgp => ("openpgp", "gpg.openpgp.program", "gpg"),
        };
        [
            ("gpg.format", format),
            (program_key, program),
            ("user.signingKey", s.key.as_str()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// `Authorization` header value for the token.
    fn auth_header(&self) -> Option<String> {
        let token = self.token.as_ref()?;
        let basic = base64::engine::general_purpose::STANDARD
            .encode(format!("x-access-token:{}", token.expose_secret()));
        Some(format!("Authorization: Basic {basic}"))
    }

    fn command(&self, url_for_auth: Option<&str>) -> Command {
        self.command_with(url_for_auth, Vec::new())
    }

    /// [`Git::command`] with more configuration (passed in the environment, like the rest).
    fn command_with(&self, url_for_auth: Option<&str>, extra: Vec<(String, String)>) -> Command {
        let mut cmd = Command::new("git");
        cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C");
        for var in INHERITED_ENV_REMOVED {
            cmd.env_remove(var);
        }
        // Our clones are throw-away: no background maintenance forked off a fetch.
        let mut config = vec![
            ("gc.auto".to_string(), "0".to_string()),
            ("maintenance.auto".to_string(), "false".to_string()),
            // Paths as they are (UTF-8, `apps/wéb`), not C-quoted, in the output read back.
            ("core.quotePath".to_string(), "false".to_string()),
        ];
        if let (Some(header), Some(origin)) =
            (self.auth_header(), url_for_auth.and_then(http_origin))
        {
            config.push((format!("http.{origin}.extraHeader"), header));
        }
        config.extend(extra);
        cmd.env("GIT_CONFIG_COUNT", config.len().to_string());
        for (i, (key, value)) in config.into_iter().enumerate() {
            cmd.env(format!("GIT_CONFIG_KEY_{i}"), key)
                .env(format!("GIT_CONFIG_VALUE_{i}"), value);
        }
        cmd
    }

    /// A command in `dir` that names commits by their full ids: without
    /// `core.warnAmbiguousRefs=false` git first looks for a ref of each id's name in six
    /// places (12,000 file lookups for 500 branches).
    fn by_ids(&self, dir: &Path, mut config: Vec<(String, String)>, url: Option<&str>) -> Command {
        config.push(("core.warnAmbiguousRefs".to_string(), "false".to_string()));
        let mut cmd = self.command_with(url, config);
        cmd.arg("-C").arg(dir);
        cmd
    }

    /// A command in `dir` that does not talk to a remote.
    fn local(&self, dir: &Path) -> Command {
        let mut cmd = self.command(None);
        cmd.arg("-C").arg(dir);
        cmd
    }

    /// A command in `dir` that talks to `origin`, with the token scoped to origin's URL.
    fn remote(&self, dir: &Path) -> Result<Command, Error> {
        let url = self.origin_url(dir)?;
        let mut cmd = self.command(Some(&url));
        cmd.arg("-C").arg(dir);
        Ok(cmd)
    }

    /// The (credential-free) URL of the clone's `origin`.
    fn origin_url(&self, dir: &Path) -> Result<String, Error> {
        let mut cmd = self.local(dir);
        cmd.args(["config", "--get", "remote.origin.url"]);
        let out = self.output(cmd, "config", None)?;
        if !out.status.success() {
            return Err(Error::Failed {
                command: "config".to_string(),
                stderr: format!("{} has no remote named origin", dir.display()),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Replaces the token, and the header carrying it, with `***`.
    fn scrub(&self, text: &str) -> String {
        let mut text = text.to_string();
        if let Some(header) = self.auth_header() {
            if let Some((_, encoded)) = header.rsplit_once(' ') {
                text = text.replace(encoded, "***");
            }
        }
        if let Some(token) = &self.token {
            let token = token.expose_secret();
            if !token.is_empty() {
                text = text.replace(token, "***");
            }
        }
        // And every other secret the run holds, or anything shaped like one (a hook or a
        // remote may print them).
        imagebump_http::redact(&text)
    }

    fn failure(&self, what: &str, stderr: &[u8]) -> Error {
        let stderr = self.scrub(String::from_utf8_lossy(stderr).trim());
        let auth = [
            "terminal prompts disabled",
            "Authentication failed",
            "returned error: 401",
            "returned error: 403",
        ]
        .iter()
        .any(|s| stderr.contains(s));
        let command = what.to_string();
        if auth {
            Error::Auth { command, stderr }
        } else {
            Error::Failed { command, stderr }
        }
    }

    fn run(&self, cmd: Command, what: &str) -> Result<Output, Error> {
        let out = self.output(cmd, what, None)?;
        if !out.status.success() {
            return Err(self.failure(what, &out.stderr));
        }
        Ok(out)
    }

    /// Runs `cmd` with `input` on its stdin, or nothing; does not check the exit status.
    fn output(&self, mut cmd: Command, what: &str, input: Option<&[u8]>) -> Result<Output, Error> {
        tracing::debug!(command = what, "git");
        let Some(input) = input else {
            return cmd.stdin(Stdio::null()).output().map_err(Error::Spawn);
        };
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(Error::Spawn)?;
        let stdin = child.stdin.take();
        // Feed stdin from another thread: git may fill its stdout pipe before reading it all.
        std::thread::scope(|s| {
            if let Some(mut stdin) = stdin {
                s.spawn(move || {
                    // A write error means git exited early; its status and stderr say why.
                    let _ = stdin.write_all(input);
                });
            }
            child.wait_with_output().map_err(Error::Spawn)
        })
    }

    fn run_with_input(&self, cmd: Command, what: &str, input: &[u8]) -> Result<Output, Error> {
        let out = self.output(cmd, what, Some(input))?;
        if !out.status.success() {
            return Err(self.failure(what, &out.stderr));
        }
        Ok(out)
    }

    /// `git clone --depth 1` of one branch or tag into `dest`.
    pub fn clone_shallow(
        &self,
        url: &str,
        git_ref: Option<&str>,
        dest: &Path,
    ) -> Result<(), Error> {
        self.clone_depth(url, git_ref, dest, 1)
    }

    /// `git clone --depth <depth>` of one branch or tag (the remote's default branch when
    /// `git_ref` is `None`) into `dest`, without tags and without a work tree (see
    /// [`Git::checkout`]). A depth of 0 is taken as 1.
    pub fn clone_depth(
        &self,
        url: &str,
        git_ref: Option<&str>,
        dest: &Path,
        depth: usize,
    ) -> Result<(), Error> {
        let mut cmd = self.command(Some(url));
        // No work tree: the files are read from the objects (`source::tree`); writing them
        // was most of a clone's time on a disk (docs/performance.md).
        cmd.args([
            "clone",
            "--quiet",
            "--no-checkout",
            "--single-branch",
            "--no-tags",
        ])
        .arg(format!("--depth={}", depth.max(1)));
        if let Some(r) = git_ref {
            cmd.arg(format!("--branch={r}"));
        }
        cmd.arg("--").arg(url).arg(dest);
        self.run(cmd, "clone").map(|_| ())
    }

    /// The commit `HEAD` points at in `dir`.
    pub fn head(&self, dir: &Path) -> Result<String, Error> {
        self.rev_parse(dir, "HEAD")
    }

    fn rev_parse(&self, dir: &Path, rev: &str) -> Result<String, Error> {
        self.try_rev_parse(dir, rev)?.ok_or_else(|| Error::Failed {
            command: "rev-parse".to_string(),
            stderr: format!("no such revision: {}", self.scrub(rev)),
        })
    }

    /// `None` when `rev` names nothing here; an error when git cannot tell (not a
    /// repository...).
    fn try_rev_parse(&self, dir: &Path, rev: &str) -> Result<Option<String>, Error> {
        let rev = revision(rev)?;
        let mut cmd = self.local(dir);
        cmd.args(["rev-parse", "--verify", "--quiet", "--end-of-options", rev]);
        let out = self.output(cmd, "rev-parse", None)?;
        if out.status.success() {
            return Ok(Some(stdout_line(out)));
        }
        // --quiet: a missing revision exits non-zero without a word
        if out.stderr.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        Err(self.failure("rev-parse", &out.stderr))
    }

    /// The branches of `origin` whose name starts with `prefix` (name without `refs/heads/`
    /// → sha), from one `git ls-remote`.
    pub fn remote_heads(
        &self,
        dir: &Path,
        prefix: &str,
    ) -> Result<BTreeMap<String, String>, Error> {
        let mut cmd = self.remote(dir)?;
        cmd.args([
            "ls-remote",
            "--heads",
            "--refs",
            "--end-of-options",
            "origin",
        ])
        .arg(format!("refs/heads/{}*", escape_glob(prefix)));
        let out = self.run(cmd, "ls-remote")?;
        let mut heads = BTreeMap::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Some((sha, name)) = line.split_once('\t') else {
                return Err(Error::Output {
                    command: "ls-remote".to_string(),
                    detail: self.scrub(line),
                });
            };
            // ls-remote matches patterns against any tail of the ref name; keep exact ones.
            if let Some(branch) = name.strip_prefix("refs/heads/") {
                if branch.starts_with(prefix) {
                    heads.insert(branch.to_string(), sha.to_string());
                }
            }
        }
        Ok(heads)
    }

    /// Fetches `branches` of `origin` (`depth` commits of each) into
    /// `refs/remotes/origin/<branch>`, in one fetch. A branch that does not exist on the
    /// remote (deleted since it was listed) is skipped and its remote-tracking ref removed:
    /// that costs one more listing and fetch. See the module note on depth: a depth smaller
    /// than this clone's depth plus the branch's own commits cuts the base's history.
    pub fn fetch_branches(
        &self,
        dir: &Path,
        branches: &[String],
        depth: usize,
    ) -> Result<(), Error> {
        if branches.is_empty() {
            return Ok(());
        }
        for b in branches {
            branch_name(b)?;
        }
        match self.fetch_refspecs(dir, branches, depth) {
            Err(Error::Failed { stderr, .. }) if stderr.contains("couldn't find remote ref") => {
                let existing = self.remote_heads(dir, "")?;
                let (present, missing): (Vec<String>, Vec<String>) = branches
                    .iter()
                    .cloned()
                    .partition(|b| existing.contains_key(b));
                tracing::debug!(?missing, "branches gone from the remote, not fetched");
                self.delete_tracking_refs(dir, &missing)?;
                if present.is_empty() {
                    return Ok(());
                }
                self.fetch_refspecs(dir, &present, depth)
            }
            other => other,
        }
    }

    fn fetch_refspecs(&self, dir: &Path, branches: &[String], depth: usize) -> Result<(), Error> {
        let mut cmd = self.remote(dir)?;
        cmd.args(["fetch", "--quiet", "--no-tags", "--no-recurse-submodules"])
            .arg(format!("--depth={}", depth.max(1)))
            .args(["--stdin", "--end-of-options", "origin"]);
        let refspecs: String = branches
            .iter()
            .map(|b| format!("+refs/heads/{b}:refs/remotes/origin/{b}\n"))
            .collect();
        self.run_with_input(cmd, "fetch", refspecs.as_bytes())
            .map(|_| ())
    }

    fn delete_tracking_refs(&self, dir: &Path, branches: &[String]) -> Result<(), Error> {
        if branches.is_empty() {
            return Ok(());
        }
        let mut cmd = self.local(dir);
        cmd.args(["update-ref", "--stdin", "-z"]);
        let mut input = Vec::new();
        for b in branches {
            input.extend_from_slice(format!("delete refs/remotes/origin/{b}\0\0").as_bytes());
        }
        self.run_with_input(cmd, "update-ref", &input).map(|_| ())
    }

    /// Fetches `base` of `origin` again (`depth` commits) into `refs/remotes/origin/<base>`
    /// and returns its sha.
    pub fn fetch_base(&self, dir: &Path, base: &str, depth: usize) -> Result<String, Error> {
        branch_name(base)?;
        self.fetch_refspecs(dir, &[base.to_string()], depth)?;
        self.rev_parse(dir, &format!("refs/remotes/origin/{base}^{{commit}}"))
    }

    /// Check out `commit` (detached), writing the whole work tree: for a tree the objects
    /// cannot stand in for (`source::tree`).
    pub fn checkout(&self, dir: &Path, commit: &str) -> Result<(), Error> {
        let rev = revision(commit)?;
        let mut cmd = self.local(dir);
        // Written by as many processes as this process may use cores (at most 8): a third
        // less time for 1,500 files here (docs/performance.md). Not git's `0`, which counts
        // the host's processors, not a pod's CPU limit.
        let workers = crate::parallel::cores().min(8);
        cmd.arg("-c").arg(format!("checkout.workers={workers}"));
        cmd.args([
            "-c",
            "advice.detachedHead=false",
            "checkout",
            "--quiet",
            "--force",
            "--detach",
            "--end-of-options",
            rev,
        ]);
        self.run(cmd, "checkout").map(|_| ())
    }

    /// The sha of `refs/remotes/origin/<branch>`, `None` when this clone does not have it.
    pub fn tracking_sha(&self, dir: &Path, branch: &str) -> Result<Option<String>, Error> {
        branch_name(branch)?;
        self.try_rev_parse(dir, &format!("refs/remotes/origin/{branch}^{{commit}}"))
    }

    /// Builds a commit on `parent` whose tree is `parent`'s with `files` (path from the root,
    /// content) replaced or added, and returns its sha. The working tree and the index are
    /// not touched: the tree is built in a temporary index. An existing file keeps its mode,
    /// a new one is `100644`. Content is stored as given (no clean filters, no EOL
    /// conversion). Author and committer come from the signatures, dates are now.
    pub fn commit_files(
        &self,
        dir: &Path,
        parent: &str,
        files: &[(String, Vec<u8>)],
        message: &str,
        author: &Signature,
        committer: &Signature,
    ) -> Result<String, Error> {
        for (path, _) in files {
            tree_path(path)?;
        }
        let parent = self.rev_parse(dir, &format!("{}^{{commit}}", revision(parent)?))?;
        let tmp = tempfile::Builder::new()
            .prefix("imagebump-index-")
            .tempdir()
            .map_err(Error::Temp)?;
        let index = tmp.path().join("index");
        let with_index = |mut cmd: Command| {
            cmd.env("GIT_INDEX_FILE", &index);
            cmd
        };

        let mut cmd = self.local(dir);
        cmd.args(["read-tree", "--end-of-options", &parent]);
        self.run(with_index(cmd), "read-tree")?;

        let modes = self.file_modes(dir, &parent, files)?;
        let blobs = self.write_blobs(dir, tmp.path(), files)?;
        let mut info = Vec::new();
        for (((path, _), blob), mode) in files.iter().zip(&blobs).zip(&modes) {
            info.extend_from_slice(format!("{mode} {blob}\t{path}\0").as_bytes());
        }
        let mut cmd = self.local(dir);
        cmd.args(["update-index", "-z", "--index-info"]);
        self.run_with_input(with_index(cmd), "update-index", &info)?;

        let mut cmd = self.local(dir);
        cmd.arg("write-tree");
        let tree = stdout_line(self.run(with_index(cmd), "write-tree")?);

        let mut cmd = self.command_with(None, self.signing_config());
        cmd.arg("-C").arg(dir);
        let sign = if self.signs() { "-S" } else { "--no-gpg-sign" };
        cmd.args([
            "commit-tree",
            sign,
            "-p",
            &parent,
            "--end-of-options",
            &tree,
        ])
        .env("GIT_AUTHOR_NAME", &author.name)
        .env("GIT_AUTHOR_EMAIL", &author.email)
        .env("GIT_COMMITTER_NAME", &committer.name)
        .env("GIT_COMMITTER_EMAIL", &committer.email);
        // commit-tree stores the message verbatim; git's own commits end with a newline.
        let mut message = message.to_string();
        if !message.ends_with('\n') {
            message.push('\n');
        }
        let out = self.run_with_input(cmd, "commit-tree", message.as_bytes())?;
        Ok(stdout_line(out))
    }

    /// One commit per entry of `commits`, each on `parent` as [`Git::commit_files`] builds it
    /// (the same tree, identities, dates and message, so the same object), in one
    /// `git fast-import` rather than seven git commands per commit: pull-request mode builds
    /// hundreds. A commit whose files are refused gets its error; the others are built. With
    /// identities git would rewrite, dates set in the environment, or signing (fast-import
    /// cannot sign), each commit is built with [`Git::commit_files`] instead.
    pub fn commit_many(
        &self,
        dir: &Path,
        parent: &str,
        commits: &[NewCommit],
        author: &Signature,
        committer: &Signature,
    ) -> Vec<Result<String, Error>> {
        let verbatim = [
            &author.name,
            &author.email,
            &committer.name,
            &committer.email,
        ]
        .iter()
        .all(|s| verbatim_ident(s))
            && EnvVars::get_os("GIT_AUTHOR_DATE").is_none()
            && EnvVars::get_os("GIT_COMMITTER_DATE").is_none()
            // fast-import cannot sign.
            && !self.signs();
        if !verbatim {
            return commits
                .iter()
                .map(|c| self.commit_files(dir, parent, &c.files, &c.message, author, committer))
                .collect();
        }
        match self.fast_import(dir, parent, commits, author, committer) {
            Ok(results) => results,
            Err(e) => commits.iter().map(|_| Err(e.again())).collect(),
        }
    }

    fn fast_import(
        &self,
        dir: &Path,
        parent: &str,
        commits: &[NewCommit],
        author: &Signature,
        committer: &Signature,
    ) -> Result<Vec<Result<String, Error>>, Error> {
        let parent = self.rev_parse(dir, &format!("{}^{{commit}}", revision(parent)?))?;
        let entries = self.tree_entries(dir, &parent, None)?;
        // A ref fast-import needs to build on; deleted again at the end of the stream.
        let scratch = format!("refs/imagebump-tmp/commits-{}", std::process::id());
        let (mut stream, mut results) =
            fast_import_stream(commits, (&entries, &parent), &scratch, (author, committer));
        if results.iter().all(Result::is_err) {
            return Ok(results);
        }
        stream.extend_from_slice(format!("reset {scratch}\n\ndone\n").as_bytes());
        let shas = self.run_fast_import(dir, &stream)?;
        // Marks are 1-based: the first commit is mark 1.
        for (mark, r) in (1usize..).zip(results.iter_mut()) {
            if r.is_ok() {
                *r = shas
                    .get(&mark)
                    .and_then(|sha| object_id(sha).ok())
                    .map(str::to_string)
                    .ok_or_else(|| Error::Output {
                        command: "fast-import".to_string(),
                        detail: format!("no commit for mark :{mark}"),
                    });
            }
        }
        Ok(results)
    }

    /// Runs `git fast-import` over `stream`; the commit each mark became.
    fn run_fast_import(&self, dir: &Path, stream: &[u8]) -> Result<BTreeMap<usize, String>, Error> {
        let tmp = tempfile::Builder::new()
            .prefix("imagebump-marks-")
            .tempdir()
            .map_err(Error::Temp)?;
        let marks = tmp.path().join("marks");
        let mut cmd = self.local(dir);
        // glibc's malloc gives fast-import's freed memory back to the kernel and asks for it
        // again object after object, a page fault each time; keeping some of it makes
        // fast-import several times faster. Other C libraries ignore the setting.
        cmd.env("GLIBC_TUNABLES", FAST_IMPORT_MALLOC);
        cmd.args(["fast-import", "--quiet", "--date-format=now"])
            .arg(format!("--export-marks={}", marks.display()));
        self.run_with_input(cmd, "fast-import", stream)?;
        let text = std::fs::read_to_string(&marks).map_err(Error::Temp)?;
        Ok(text
            .lines()
            .filter_map(|l| {
                let (mark, sha) = l.strip_prefix(':')?.split_once(' ')?;
                Some((mark.parse().ok()?, sha.to_string()))
            })
            .collect())
    }

    /// The mode each of `files` gets: its mode in `parent`, or `100644` when new. A path
    /// that is a directory, a submodule, or lies below a file or submodule in `parent` is
    /// refused: `update-index` would silently replace the directory or the file.
    fn file_modes(
        &self,
        dir: &Path,
        parent: &str,
        files: &[(String, Vec<u8>)],
    ) -> Result<Vec<String>, Error> {
        let dirs = parent_dirs(files)?;
        if files.is_empty() {
            return Ok(Vec::new());
        }
        // ls-tree (not recursive) shows the entry at each path asked, except trees that lead
        // to a deeper path asked, which it enters instead: so a file or submodule where a
        // directory is needed shows, and so does a directory where a file is written.
        let paths: Vec<&str> = files
            .iter()
            .map(|(p, _)| p.as_str())
            .chain(dirs.iter().map(String::as_str))
            .collect();
        let entries = self.tree_entries(dir, parent, Some(&paths))?;
        modes_in(&entries, files)
    }

    /// `path → (mode, type)` of the entries of `parent`'s tree: at `paths` (not recursive,
    /// see [`Git::file_modes`]), or every entry, trees included, when `paths` is `None`.
    fn tree_entries(
        &self,
        dir: &Path,
        parent: &str,
        paths: Option<&[&str]>,
    ) -> Result<BTreeMap<String, (String, String)>, Error> {
        let mut cmd = self.local(dir);
        cmd.env("GIT_LITERAL_PATHSPECS", "1")
            .args(["ls-tree", "-z", "--full-tree"]);
        match paths {
            Some(paths) => {
                cmd.args(["--end-of-options", parent, "--"]).args(paths);
            }
            None => {
                cmd.args(["-r", "-t", "--end-of-options", parent]);
            }
        }
        let out = self.run(cmd, "ls-tree")?;
        // path → (mode, type) from "<mode> <type> <sha>\t<path>"
        let mut entries = BTreeMap::new();
        for record in out.stdout.split(|&b| b == 0).filter(|r| !r.is_empty()) {
            let record = String::from_utf8_lossy(record);
            if let Some((meta, path)) = record.split_once('\t') {
                let mut meta = meta.split(' ');
                let mode = meta.next().unwrap_or_default().to_string();
                let kind = meta.next().unwrap_or_default().to_string();
                entries.insert(path.to_string(), (mode, kind));
            }
        }
        Ok(entries)
    }

    /// Writes each content as a blob (one `hash-object` for all) and returns the shas.
    fn write_blobs(
        &self,
        dir: &Path,
        tmp: &Path,
        files: &[(String, Vec<u8>)],
    ) -> Result<Vec<String>, Error> {
        if files.is_empty() {
            return Ok(Vec::new());
        }
        let mut paths = String::new();
        for (i, (_, content)) in files.iter().enumerate() {
            let p = tmp.join(format!("blob-{i}"));
            std::fs::write(&p, content).map_err(Error::Temp)?;
            paths.push_str(&p.to_string_lossy());
            paths.push('\n');
        }
        let mut cmd = self.local(dir);
        cmd.args(["hash-object", "-w", "--no-filters", "--stdin-paths"]);
        let out = self.run_with_input(cmd, "hash-object", paths.as_bytes())?;
        let shas: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        if shas.len() != files.len() {
            return Err(Error::Output {
                command: "hash-object".to_string(),
                detail: format!("{} object ids for {} files", shas.len(), files.len()),
            });
        }
        Ok(shas)
    }

    /// Points `HEAD` at `commit`, detached, without touching a work tree (a clone without
    /// one: the base moved and is read again from its objects).
    pub fn detach_head(&self, dir: &Path, commit: &str) -> Result<(), Error> {
        let sha = object_id(commit)?;
        let mut cmd = self.local(dir);
        cmd.args(["update-ref", "--no-deref", "--end-of-options", "HEAD", sha]);
        self.run(cmd, "update-ref").map(|_| ())
    }

    /// Every entry of `commit`'s tree, recursively, trees included (`ls-tree -r -t -z
    /// --long`): `<mode> <type> <object> <size>\t<path>\0` each, as git prints it.
    pub fn list_tree(&self, dir: &Path, commit: &str) -> Result<Vec<u8>, Error> {
        let rev = format!("{}^{{tree}}", revision(commit)?);
        let mut cmd = self.local(dir);
        cmd.args([
            "ls-tree",
            "-r",
            "-t",
            "-z",
            "--long",
            "--end-of-options",
            &rev,
        ]);
        Ok(self.run(cmd, "ls-tree")?.stdout)
    }

    /// A `git cat-file --batch` running in `dir`, its stdin and stdout piped: the reader of
    /// a tree without a work tree (`source::tree`).
    pub fn cat_file_batch(&self, dir: &Path) -> Result<std::process::Child, Error> {
        let mut cmd = self.local(dir);
        cmd.args(["cat-file", "--batch"]);
        tracing::debug!(command = "cat-file", "git");
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(Error::Spawn)
    }

    /// The tree sha of `commit`.
    pub fn tree_of(&self, dir: &Path, commit: &str) -> Result<String, Error> {
        self.rev_parse(dir, &format!("{}^{{tree}}", revision(commit)?))
    }

    /// Sets all `updates` on `origin` in one `git push --porcelain --no-atomic`, each guarded
    /// by a lease: the branch must be at its expected commit, or absent when none is
    /// expected. A branch the remote (or the lease) rejects is reported in the outcome, not
    /// as an error; a transport or authentication failure is an error.
    ///
    /// The branches are named by one pattern refspec, and the new ones leased by one
    /// `--force-with-lease`, rather than one of each per branch: git matches every
    /// `<src>:<dst>` and every `--force-with-lease=<ref>:<value>` against all the others,
    /// quadratic in the number of branches (docs/performance.md). So the new commits are
    /// written as local refs of a namespace of this push's own (deleted again after it),
    /// pushed through a remote at origin's URL that has no tracking refs: there
    /// `--force-with-lease` alone expects every branch absent. A branch expected at a
    /// commit gets its own `--force-with-lease=refs/heads/<b>:<sha>` (the commit need not
    /// be in the clone).
    pub fn push(&self, dir: &Path, updates: &[RefUpdate]) -> Result<PushOutcome, Error> {
        static PUSHES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        if updates.is_empty() {
            return Ok(PushOutcome::default());
        }
        for u in updates {
            branch_name(&u.branch)?;
            object_id(&u.new)?;
            if let Some(sha) = &u.expected {
                object_id(sha)?;
            }
        }
        let n = PUSHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ns = format!("refs/imagebump-push/{}-{n}", std::process::id());
        // One transaction: all of them are written, or none.
        let created: String = (updates.iter())
            .map(|u| format!("create {ns}/{} {}\n", u.branch, u.new))
            .collect();
        let mut cmd = self.by_ids(dir, Vec::new(), None);
        cmd.args(["update-ref", "--stdin"]);
        self.run_with_input(cmd, "update-ref", created.as_bytes())?;
        let pushed = self.push_namespace(dir, &ns, updates);
        let deleted: String = (updates.iter())
            .map(|u| format!("delete {ns}/{}\n", u.branch))
            .collect();
        let mut cmd = self.local(dir);
        cmd.args(["update-ref", "--stdin"]);
        // The clone is the run's own: refs left behind only make its later pushes slower.
        if let Err(e) = self.run_with_input(cmd, "update-ref", deleted.as_bytes()) {
            tracing::debug!(error = %e, "the push's local refs were not deleted");
        }
        pushed
    }

    /// The push of [`Git::push`], its new commits in `ns`.
    fn push_namespace(
        &self,
        dir: &Path,
        ns: &str,
        updates: &[RefUpdate],
    ) -> Result<PushOutcome, Error> {
        let url = self.origin_url(dir)?;
        // In the environment, like the rest of the configuration: not on the command line.
        let remote = vec![("remote.imagebump-push.url".to_string(), url.clone())];
        let mut cmd = self.by_ids(dir, remote, Some(&url));
        cmd.args([
            "push",
            "--porcelain",
            "--no-atomic",
            "--no-progress",
            "--no-verify",
            "--no-recurse-submodules",
            "--force-with-lease",
        ]);
        for u in updates {
            if let Some(sha) = &u.expected {
                cmd.arg(format!("--force-with-lease=refs/heads/{}:{sha}", u.branch));
            }
        }
        cmd.args(["--end-of-options", "imagebump-push"]);
        cmd.arg(format!("{ns}/*:refs/heads/*"));
        let out = self.output(cmd, "push", None)?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let results = parse_porcelain(&stdout);
        let mut outcome = PushOutcome::default();
        for u in updates {
            match results.get(u.branch.as_str()) {
                Some(None) => outcome.accepted.push(u.branch.clone()),
                Some(Some(reason)) => outcome
                    .rejected
                    .push((u.branch.clone(), self.scrub(reason))),
                None => {
                    if out.status.success() {
                        return Err(Error::Output {
                            command: "push".to_string(),
                            detail: format!("no status for branch {}", u.branch),
                        });
                    }
                    return Err(self.failure("push", &out.stderr));
                }
            }
        }
        Ok(outcome)
    }

    /// Whether commit `sha` changes `path` (against its first parent; every file of a
    /// commit whose parent the clone lacks).
    pub fn changes_path(&self, dir: &Path, sha: &str, path: &str) -> Result<bool, Error> {
        let sha = object_id(sha)?;
        let mut cmd = self.local(dir);
        cmd.env("GIT_LITERAL_PATHSPECS", "1").args([
            "diff-tree",
            "--no-commit-id",
            "--name-only",
            "-r",
            "--root",
            "--end-of-options",
            sha,
            "--",
            path,
        ]);
        let out = self.run(cmd, "diff-tree")?;
        Ok(!out.stdout.iter().all(u8::is_ascii_whitespace))
    }

    /// The branch `origin`'s `HEAD` names (`git ls-remote --symref`); `None` when it is
    /// detached, names a tag or names nothing. `git clone` guesses a branch for a detached
    /// `HEAD` (one at the same commit), so the clone's own `HEAD` cannot tell.
    pub fn remote_head_branch(&self, dir: &Path) -> Result<Option<String>, Error> {
        let mut cmd = self.remote(dir)?;
        cmd.args([
            "ls-remote",
            "--symref",
            "--end-of-options",
            "origin",
            "HEAD",
        ]);
        let out = self.run(cmd, "ls-remote")?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|line| {
                let target = line.strip_prefix("ref: ")?.strip_suffix("\tHEAD")?;
                target.strip_prefix("refs/heads/").map(str::to_string)
            }))
    }

    /// The names of `origin`'s refs below `namespace` (`refs/imagebump/rejected/`), in one
    /// `ls-remote`.
    pub fn remote_refs(&self, dir: &Path, namespace: &str) -> Result<Vec<String>, Error> {
        let mut cmd = self.remote(dir)?;
        cmd.args(["ls-remote", "--refs", "--end-of-options", "origin"])
            .arg(format!("{}*", escape_glob(namespace)));
        let out = self.run(cmd, "ls-remote")?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| line.split_once('\t'))
            .map(|(_, name)| name)
            // ls-remote matches any tail of the name; keep the namespace's own.
            .filter(|name| name.starts_with(namespace))
            .map(str::to_string)
            .collect())
    }

    /// [`Git::remote_refs`] of a local directory's `origin`, read without any credential:
    /// the token is for the remote a run clones, never for whatever host a checkout's
    /// `origin` names. Never over plain `http://`, where anyone on the path could forge
    /// what the remote says.
    pub fn local_origin_refs(dir: &Path, namespace: &str) -> Result<Vec<String>, Error> {
        let git = Git::new(None);
        let url = git.origin_url(dir)?;
        if url
            .get(..7)
            .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
        {
            return Err(Error::PlainHttp(split_credentials(&url).0));
        }
        git.remote_refs(dir, namespace)
    }

    /// Create the refs `names` (below `refs/imagebump/`, never a branch) on `origin`,
    /// pointing at `commit` (one the remote has), in one push. Refs that exist are left.
    pub fn create_refs(&self, dir: &Path, names: &[String], commit: &str) -> Result<(), Error> {
        object_id(commit)?;
        own_refs(names)?;
        if names.is_empty() {
            return Ok(());
        }
        let mut cmd = self.remote(dir)?;
        cmd.args(["push", "--porcelain", "--no-progress", "--no-verify"]);
        // An empty lease: create only, never move a ref that is there.
        cmd.args(names.iter().map(|n| format!("--force-with-lease={n}:")));
        cmd.args(["--end-of-options", "origin"]);
        cmd.args(names.iter().map(|n| format!("{commit}:{n}")));
        self.pushed(cmd)
    }

    /// Deletes refs of imagebump's own namespace (`refs/imagebump/…`) on the remote, in
    /// one push; nothing else can be named.
    pub fn delete_refs(&self, dir: &Path, names: &[String]) -> Result<(), Error> {
        own_refs(names)?;
        if names.is_empty() {
            return Ok(());
        }
        let mut cmd = self.remote(dir)?;
        cmd.args([
            "push",
            "--porcelain",
            "--no-progress",
            "--no-verify",
            "--end-of-options",
            "origin",
        ]);
        cmd.args(names.iter().map(|n| format!(":{n}")));
        self.pushed(cmd)
    }

    fn pushed(&self, cmd: Command) -> Result<(), Error> {
        let out = self.output(cmd, "push", None)?;
        if out.status.success() {
            Ok(())
        } else {
            Err(self.failure("push", &out.stderr))
        }
    }

    /// `git log` in `dir` as commits are read back: NUL-separated, in `LOG_FORMAT`, with
    /// no mailmap, colour or re-encoding to change what was written.
    fn log_command(&self, dir: &Path) -> Command {
        let mut cmd = self.local(dir);
        cmd.args([
            "log",
            "-z",
            "--no-mailmap",
            "--no-color",
            "--encoding=UTF-8",
        ])
        .arg(format!("--format={LOG_FORMAT}"));
        cmd
    }

    /// The commits of `range` (a revision or `a..b`), newest first, at most `max`. In a
    /// shallow clone history ends at the shallow boundary, silently.
    pub fn log(&self, dir: &Path, range: &str, max: usize) -> Result<Vec<CommitInfo>, Error> {
        let range = revision(range)?;
        if max == 0 {
            return Ok(Vec::new());
        }
        let mut cmd = self.log_command(dir);
        cmd.arg(format!("--max-count={max}"))
            .args(["--end-of-options", range, "--"]);
        let out = self.run(cmd, "log")?;
        parse_log(&String::from_utf8_lossy(&out.stdout))
    }

    /// The content of `path` at `commit`, `None` when the commit has no such file.
    pub fn show_file(
        &self,
        dir: &Path,
        commit: &str,
        path: &str,
    ) -> Result<Option<Vec<u8>>, Error> {
        tree_path(path)?;
        let commit = self.rev_parse(dir, &format!("{}^{{commit}}", revision(commit)?))?;
        let mut cmd = self.local(dir);
        cmd.args(["cat-file", "--batch"]);
        let query = format!("{commit}:{path}\n");
        let out = self.run_with_input(cmd, "cat-file", query.as_bytes())?;
        parse_cat_file(&out.stdout, path)
    }
}

/// One answer of `git cat-file --batch`.
pub enum BatchAnswer {
    /// `<query> missing`.
    Missing,
    /// An object: its id, its type, and its content, `None` when it is larger than the cap
    /// it was read with (read past all the same, so that the next answer is in step).
    Object {
        id: String,
        kind: String,
        content: Option<Vec<u8>>,
    },
}

/// The next `cat-file --batch` answer in `out` (`<id> <type> <size>\n<content>\n` or
/// `<query> missing\n`), `None` at its end; an answer cut short is an error. The one
/// reader of git's batch output: whole outputs (`show_file`, `blobs`) and the stream a
/// tree without a work tree reads (`source::tree`).
pub fn read_batch_answer(
    out: &mut impl std::io::BufRead,
    cap: u64,
) -> Result<Option<BatchAnswer>, Error> {
    let bad = |detail: String| Error::Output {
        command: "cat-file".to_string(),
        detail,
    };
    // A line of git's: a query or an object id, a type and a size.
    let mut header = Vec::new();
    out.by_ref()
        .take(4096)
        .read_until(b'\n', &mut header)
        .map_err(|e| bad(e.to_string()))?;
    if header.is_empty() {
        return Ok(None);
    }
    if header.pop() != Some(b'\n') {
        return Err(bad("no header".to_string()));
    }
    let header = String::from_utf8_lossy(&header);
    if header.ends_with(" missing") {
        return Ok(Some(BatchAnswer::Missing));
    }
    let mut fields = header.split(' ');
    let (Some(id), Some(kind), Some(size)) = (fields.next(), fields.next(), fields.next()) else {
        return Err(bad(header.to_string()));
    };
    let size: u64 = size.parse().map_err(|_| bad(header.to_string()))?;
    let mut body = out.by_ref().take(size);
    let (read, content) = if size <= cap {
        let mut content = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        let read = body.read_to_end(&mut content).map(|n| n as u64);
        (read, Some(content))
    } else {
        (std::io::copy(&mut body, &mut std::io::sink()), None)
    };
    let read = read.map_err(|e| bad(e.to_string()))?;
    if read != size {
        return Err(bad(format!("{read} of {size} bytes")));
    }
    // The newline after the content (the last one may be cut).
    out.by_ref()
        .take(1)
        .read_to_end(&mut Vec::new())
        .map_err(|e| bad(e.to_string()))?;
    Ok(Some(BatchAnswer::Object {
        id: id.to_string(),
        kind: kind.to_string(),
        content,
    }))
}

/// The one answer of `show_file`: the blob, `None` when the commit has no such file.
fn parse_cat_file(mut stdout: &[u8], path: &str) -> Result<Option<Vec<u8>>, Error> {
    match read_batch_answer(&mut stdout, u64::MAX)? {
        None => Err(Error::Output {
            command: "cat-file".to_string(),
            detail: "no header".to_string(),
        }),
        Some(BatchAnswer::Missing) => Ok(None),
        Some(BatchAnswer::Object { kind, content, .. }) => match kind.as_str() {
            "blob" => Ok(content),
            other => Err(Error::Invalid {
                what: match other {
                    "tree" => "file path (a directory)",
                    _ => "file path (not a file)",
                },
                value: path.to_string(),
            }),
        },
    }
}

/// `branch → None` (accepted) or `Some(reason)` (rejected) from `git push --porcelain`.
///
/// Lines are `<flag>\t<from>:<to>\t<summary>`, between `To <url>` and `Done`; flag `!` is a
/// rejection whose summary is `[rejected] (<reason>)` or `[remote rejected] (<reason>)`.
fn parse_porcelain(stdout: &str) -> BTreeMap<&str, Option<String>> {
    let mut results = BTreeMap::new();
    for line in stdout.lines() {
        let mut parts = line.splitn(3, '\t');
        let (Some(flag), Some(refs), summary) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let Some(branch) = refs
            .rsplit_once(':')
            .and_then(|(_, to)| to.strip_prefix("refs/heads/"))
        else {
            continue;
        };
        let summary = summary.unwrap_or_default();
        let verdict = match flag {
            "!" => Some(rejection_reason(summary)),
            " " | "+" | "-" | "*" | "=" => None,
            _ => continue,
        };
        results.insert(branch, verdict);
    }
    results
}

/// What lies between the first `(` and the last `)` after it, else the whole summary.
fn rejection_reason(summary: &str) -> String {
    match summary
        .split_once('(')
        .and_then(|(_, after)| after.rsplit_once(')'))
    {
        Some((reason, _)) => reason.to_string(),
        None => summary.trim().to_string(),
    }
}

fn parse_log(stdout: &str) -> Result<Vec<CommitInfo>, Error> {
    // `--format` is a terminator format: with -z every commit ends with a NUL.
    let Some(stdout) = stdout.strip_suffix('\0') else {
        if stdout.is_empty() {
            return Ok(Vec::new());
        }
        return Err(Error::Output {
            command: "log".to_string(),
            detail: "output does not end with NUL".to_string(),
        });
    };
    let fields: Vec<&str> = stdout.split('\0').collect();
    if fields.len() % LOG_FIELDS != 0 {
        return Err(Error::Output {
            command: "log".to_string(),
            detail: format!("{} fields, not a multiple of {LOG_FIELDS}", fields.len()),
        });
    }
    let mut commits = Vec::with_capacity(fields.len() / LOG_FIELDS);
    for f in fields.chunks_exact(LOG_FIELDS) {
        // Every chunk has LOG_FIELDS fields: the count was checked above.
        let &[sha, parents, author_name, author_email, committer_name, committer_email, subject, body, trailers] =
            f
        else {
            return Err(Error::Output {
                command: "log".to_string(),
                detail: format!("{} fields in a commit, not {LOG_FIELDS}", f.len()),
            });
        };
        let sha = sha.to_string();
        if sha.is_empty() || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::Output {
                command: "log".to_string(),
                detail: format!("{sha:?} is not a commit id"),
            });
        }
        commits.push(CommitInfo {
            sha,
            parents: parents.split_whitespace().map(str::to_string).collect(),
            author: Signature {
                name: author_name.to_string(),
                email: author_email.to_string(),
            },
            committer: Signature {
                name: committer_name.to_string(),
                email: committer_email.to_string(),
            },
            subject: subject.to_string(),
            body: body.trim_end_matches('\n').to_string(),
            trailers: trailers
                .split('\x1f')
                .filter(|t| !t.is_empty())
                .map(|t| match t.split_once('\x1e') {
                    Some((k, v)) => (k.trim().to_string(), v.trim().to_string()),
                    None => (t.trim().to_string(), String::new()),
                })
                .collect(),
        });
    }
    Ok(commits)
}

fn parents_of(path: &str) -> Vec<String> {
    path.match_indices('/')
        .filter_map(|(i, _)| path.get(..i))
        .map(str::to_string)
        .collect()
}

/// The directories of `files`, sorted; refuses a file path that is also the directory of
/// another (`update-index` would silently replace one by the other).
fn parent_dirs(files: &[(String, Vec<u8>)]) -> Result<Vec<String>, Error> {
    let mut dirs: Vec<String> = files.iter().flat_map(|(p, _)| parents_of(p)).collect();
    dirs.sort_unstable();
    dirs.dedup();
    if let Some((path, _)) = files.iter().find(|(p, _)| dirs.binary_search(p).is_ok()) {
        return Err(Error::Invalid {
            what: "file path (also the directory of another)",
            value: path.to_string(),
        });
    }
    Ok(dirs)
}

/// The fast-import stream of `commits` on `parent` (from `feature done` to the last
/// commit, each on the `scratch` ref), and one result per commit: `Ok` (its id filled in once
/// imported) or why its files are refused.
fn fast_import_stream(
    commits: &[NewCommit],
    (entries, parent): (&BTreeMap<String, (String, String)>, &str),
    scratch: &str,
    (author, committer): (&Signature, &Signature),
) -> (Vec<u8>, Vec<Result<String, Error>>) {
    let mut results: Vec<Result<String, Error>> = Vec::with_capacity(commits.len());
    let mut stream: Vec<u8> = b"feature done\n".to_vec();
    let data = |stream: &mut Vec<u8>, bytes: &[u8]| {
        stream.extend_from_slice(format!("data {}\n", bytes.len()).as_bytes());
        stream.extend_from_slice(bytes);
        stream.push(b'\n');
    };
    // Marks are 1-based: the first commit is mark 1.
    for (mark, c) in (1usize..).zip(commits) {
        let modes = c
            .files
            .iter()
            .try_for_each(|(p, _)| tree_path(p).map(drop))
            .and_then(|()| parent_dirs(&c.files))
            .and_then(|_| modes_in(entries, &c.files));
        let modes = match modes {
            Ok(m) => m,
            Err(e) => {
                results.push(Err(e));
                continue;
            }
        };
        let head = format!(
            "commit {scratch}\nmark :{mark}\nauthor {} <{}> now\ncommitter {} <{}> now\n",
            author.name, author.email, committer.name, committer.email
        );
        stream.extend_from_slice(head.as_bytes());
        let mut message = c.message.clone();
        if !message.ends_with('\n') {
            message.push('\n');
        }
        data(&mut stream, message.as_bytes());
        stream.extend_from_slice(format!("from {parent}\n").as_bytes());
        for ((path, content), mode) in c.files.iter().zip(&modes) {
            let line = format!("M {mode} inline {}\n", fast_import_path(path));
            stream.extend_from_slice(line.as_bytes());
            data(&mut stream, content);
        }
        stream.push(b'\n');
        results.push(Ok(String::new()));
    }
    (stream, results)
}

/// The mode of each of `files` from the parent's tree `entries` (see [`Git::file_modes`]).
fn modes_in(
    entries: &BTreeMap<String, (String, String)>,
    files: &[(String, Vec<u8>)],
) -> Result<Vec<String>, Error> {
    let refuse = |what, path: &str| Error::Invalid {
        what,
        value: path.to_string(),
    };
    let mut modes = Vec::with_capacity(files.len());
    for (path, _) in files {
        let below_file = parents_of(path)
            .iter()
            .any(|d| entries.get(d).is_some_and(|(_, kind)| kind != "tree"));
        if below_file {
            return Err(refuse("file path (below a file or submodule)", path));
        }
        match entries.get(path).map(|(m, k)| (m.as_str(), k.as_str())) {
            None => modes.push("100644".to_string()),
            Some((_, "tree")) => return Err(refuse("file path (a directory)", path)),
            Some(("160000", _)) => return Err(refuse("file path (a submodule)", path)),
            Some((mode, _)) => modes.push(mode.to_string()),
        }
    }
    Ok(modes)
}

/// A name or email `commit-tree` writes as given: not empty, no `<`, `>` or newline, no
/// character git trims from the ends. Only such identities are written by fast-import.
fn verbatim_ident(s: &str) -> bool {
    let crud = |c: char| c <= ' ' || ",:;<>\"\\'".contains(c);
    !s.is_empty() && !s.contains(['<', '>', '\n']) && !s.starts_with(crud) && !s.ends_with(crud)
}

/// `path` C-quoted for fast-import (always accepted; needed for some names).
fn fast_import_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len().saturating_add(2));
    out.push('"');
    for c in path.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\{:03o}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn stdout_line(out: Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A revision or range given to git: not an option, one line.
fn revision(rev: &str) -> Result<&str, Error> {
    if rev.is_empty() || rev.starts_with('-') || rev.contains(['\0', '\n', '\r']) {
        return Err(Error::Invalid {
            what: "revision",
            value: rev.to_string(),
        });
    }
    Ok(rev)
}

/// A full or abbreviated hex object id.
fn object_id(sha: &str) -> Result<&str, Error> {
    if sha.len() < 4 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::Invalid {
            what: "object id",
            value: sha.to_string(),
        });
    }
    Ok(sha)
}

/// A branch name git accepts (`git check-ref-format --branch` rules) and that is safe in a
/// refspec.
/// Every name is under `refs/imagebump/` and valid there.
fn own_refs(names: &[String]) -> Result<(), Error> {
    for name in names {
        let inside = name
            .strip_prefix("refs/imagebump/")
            .ok_or_else(|| Error::Invalid {
                what: "imagebump ref",
                value: name.clone(),
            })?;
        branch_name(inside)?;
    }
    Ok(())
}

/// `name` as a branch git accepts (`git check-ref-format`, each `/`-separated component
/// included: none starts with `.` or ends with `.lock`), or [`Error::Invalid`].
pub fn branch_name(name: &str) -> Result<&str, Error> {
    let bad = name.is_empty()
        || name.starts_with(['-', '/', '.'])
        || name.ends_with(['/', '.'])
        || name.split('/').any(|c| c.ends_with(".lock"))
        || name.contains("..")
        || name.contains("//")
        || name.contains("/.")
        || name.contains("@{")
        || name == "@"
        || name
            .chars()
            .any(|c| c.is_ascii_control() || " ~^:?*[\\".contains(c));
    if bad {
        return Err(Error::Invalid {
            what: "branch name",
            value: name.to_string(),
        });
    }
    Ok(name)
}

/// A file path relative to the repository root, `/`-separated, without `.`, `..` or `.git`.
fn tree_path(path: &str) -> Result<&str, Error> {
    let bad = path.is_empty()
        || path.contains(['\0', '\n', '\r', '\\'])
        || path
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == ".." || c.eq_ignore_ascii_case(".git"));
    if bad {
        return Err(Error::Invalid {
            what: "file path",
            value: path.to_string(),
        });
    }
    Ok(path)
}

/// Escapes wildmatch's special characters so `text` matches itself.
fn escape_glob(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "*?[]\\".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `https://host[:port]/` of an HTTP(S) URL, the scope of the auth header.
fn http_origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme != "https" && scheme != "http" {
        return None;
    }
    let host = rest.split('/').next()?;
    Some(format!("{scheme}://{host}/"))
}

/// Remove `user:token@` from an HTTP(S) URL, returning the clean URL and the secret part.
pub fn split_credentials(url: &str) -> (String, Option<SecretString>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_string(), None);
    };
    // Schemes are case-insensitive (`HTTP://`); git is given the lower-case spelling.
    let scheme = scheme.to_ascii_lowercase();
    // The userinfo ends at the last `@` before the path.
    let (authority, path) = rest
        .find('/')
        .and_then(|i| rest.split_at_checked(i))
        .unwrap_or((rest, ""));
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return (format!("{scheme}://{rest}"), None);
    };
    let (user, secret) = match userinfo.split_once(':') {
        Some((user, secret)) => (user, Some(secret)),
        None => (userinfo, None),
    };
    match scheme.as_str() {
        "https" | "http" => {
            let clean = format!("{scheme}://{host}{path}");
            let token = secret.unwrap_or(user);
            (clean, Some(SecretString::from(token.to_string())))
        }
        // ssh takes no password from a URL: the user stays, a password never reaches a
        // command line.
        _ => (format!("{scheme}://{user}@{host}{path}"), None),
    }
}

#[cfg(test)]
mod split_tests {
    use super::split_credentials;
    use secrecy::ExposeSecret;

    #[test]
    fn tokens_leave_urls_in_every_spelling() {
        let split = |u: &str| {
            let (clean, token) = split_credentials(u);
            (clean, token.map(|t| t.expose_secret().to_string()))
        };
        assert_eq!(
            split("HTTP://x:tok@host/r.git"),
            ("http://host/r.git".into(), Some("tok".into()))
        );
        assert_eq!(
            split("https://x:p@ss@host/r.git"),
            ("https://host/r.git".into(), Some("p@ss".into()))
        );
        assert_eq!(
            split("ssh://git:tok@host/r.git"),
            ("ssh://git@host/r.git".into(), None)
        );
        assert_eq!(
            split("ssh://git@host/r.git"),
            ("ssh://git@host/r.git".into(), None)
        );
        assert_eq!(
            split("https://host/r.git"),
            ("https://host/r.git".into(), None)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejection_reason_runs_from_the_first_open_to_the_last_close_parenthesis() {
        assert_eq!(rejection_reason("[rejected] (a (b) c)"), "a (b) c");
        assert_eq!(rejection_reason("[rejected] ()"), "");
        assert_eq!(rejection_reason(" x) (y "), "x) (y");
        assert_eq!(rejection_reason("[rejected] (naïve)"), "naïve");
    }

    #[test]
    fn porcelain_push_output_is_read_per_branch() {
        let out = "To http://127.0.0.1:1/gitops.git\n\
                   =\taaaa:refs/heads/imagebump/same\t[up to date]\n\
                   +\tbbbb:refs/heads/imagebump/forced\t1111...bbbb (forced update)\n\
                   *\tcccc:refs/heads/imagebump/new\t[new branch]\n\
                   \x20\tdddd:refs/heads/imagebump/ff\t1111..dddd\n\
                   !\teeee:refs/heads/imagebump/stale\t[rejected] (stale info)\n\
                   !\tffff:refs/heads/imagebump/hook\t[remote rejected] (hook declined)\n\
                   !\tffff:refs/heads/imagebump/odd\t[rejected]\n\
                   !\tffff:refs/tags/v1\t[rejected] (already exists)\n\
                   Done\n";
        let parsed = parse_porcelain(out);
        let expected: BTreeMap<&str, Option<String>> = BTreeMap::from([
            ("imagebump/same", None),
            ("imagebump/forced", None),
            ("imagebump/new", None),
            ("imagebump/ff", None),
            ("imagebump/stale", Some("stale info".to_string())),
            ("imagebump/hook", Some("hook declined".to_string())),
            ("imagebump/odd", Some("[rejected]".to_string())),
        ]);
        assert_eq!(parsed, expected);
    }

    #[test]
    fn log_output_is_split_into_commits() {
        let out = "c1\0p1 p2\0A\0a@x\0C\0c@x\0subject\0body\n\nK: v\n\0K\x1ev\x1fL\x1ew x\0\
                   c2\0\0A\0a@x\0C\0c@x\0root\0\0\0";
        let log = parse_log(out).unwrap();
        assert_eq!(log.len(), 2);
        assert_eq!(log[0].parents, ["p1", "p2"]);
        assert_eq!(log[0].body, "body\n\nK: v");
        assert_eq!(
            log[0].trailers,
            [
                ("K".to_string(), "v".to_string()),
                ("L".to_string(), "w x".to_string())
            ]
        );
        assert!(log[1].parents.is_empty() && log[1].trailers.is_empty());
        assert_eq!(parse_log("").unwrap(), vec![]);
        assert!(parse_log("c1\0x\0").is_err());
        assert!(parse_log("zz\0\0A\0a\0C\0c\0s\0\0\0").is_err());
    }

    #[test]
    fn cat_file_answers() {
        assert_eq!(
            parse_cat_file(b"abc blob 3\nx\ny\n", "f").unwrap(),
            Some(b"x\ny".to_vec())
        );
        assert_eq!(parse_cat_file(b"HEAD:f missing\n", "f").unwrap(), None);
        assert!(matches!(
            parse_cat_file(b"abc tree 3\n...\n", "d"),
            Err(Error::Invalid { .. })
        ));
        assert!(parse_cat_file(b"abc blob 9\nshort\n", "f").is_err());
    }

    #[test]
    fn errors_are_scrubbed_of_the_token_and_its_header() {
        let git = Git::new(Some(SecretString::from("s3cr3t-token".to_string())));
        let header = git.auth_header().unwrap();
        let encoded = header.rsplit_once(' ').unwrap().1.to_string();
        let err = git.failure(
            "push",
            format!("remote: bad s3cr3t-token\nAuthorization: Basic {encoded}\n").as_bytes(),
        );
        let text = err.to_string();
        assert_eq!(
            text,
            "git push failed: remote: bad ***\nAuthorization: Basic ***"
        );
        assert!(format!("{git:?}").contains("REDACTED") && !format!("{git:?}").contains("s3cr3t"));
    }

    #[test]
    fn names_and_paths_are_checked() {
        for ok in ["imagebump/apps-web", "a.b/c_d", "x"] {
            assert!(branch_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "-x", "/x", "x/", "a..b", "a b", "a:b", "a*", "a~1", "x.lock", "a/.b", "@",
            "a@{1}", "a\\b", "a.lock/b", "a\u{7f}b",
        ] {
            assert!(branch_name(bad).is_err(), "{bad}");
        }
        for bad in [
            "", "/a", "a/", "./a", "a/../b", ".git/x", "a/.GIT/x", "a\nb",
        ] {
            assert!(tree_path(bad).is_err(), "{bad}");
        }
        assert!(tree_path("apps/.github/values.yaml").is_ok());
        assert!(revision("--upload-pack=x").is_err());
        assert!(revision("origin/main..origin/imagebump/x").is_ok());
        assert!(object_id("main").is_err());
        assert_eq!(escape_glob("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }

    #[test]
    fn credentials_are_split_from_urls() {
        let (url, tok) = split_credentials("https://x-access-token:s3cret@github.com/org/r.git");
        assert_eq!(url, "https://github.com/org/r.git");
        assert_eq!(tok.unwrap().expose_secret(), "s3cret");
        let (url, tok) = split_credentials("https://github.com/org/r.git");
        assert_eq!(url, "https://github.com/org/r.git");
        assert!(tok.is_none());
        assert_eq!(
            http_origin("http://127.0.0.1:8080/a/b.git").unwrap(),
            "http://127.0.0.1:8080/"
        );
        assert_eq!(http_origin("git://h/x"), None);
    }
}
