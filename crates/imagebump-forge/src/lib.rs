//! Forges: where pull requests live (docs/pull-requests.md says what each one does).
//!
//! [`Forge`] is the seam between the pull-request lifecycle and one hosting service; the
//! caller holds a `Box<dyn Forge>` and never learns which one it talks to. Each forge has its
//! own file (`github.rs`, `gitlab.rs`, `gitea.rs`); the package's `forge/connect.rs` picks one.
//!
//! A forge only speaks the service's API: it lists, opens, edits and closes pull requests
//! and annotates them. Deciding what to open, update or close is the caller's job.

// Unit tests may count, slice and call `unreachable!`; clippy.toml lets them unwrap, expect,
// panic and index (Cargo.toml holds the library to the no-panic set).
#![cfg_attr(
    test,
    allow(
        clippy::arithmetic_side_effects,
        clippy::string_slice,
        clippy::unreachable
    )
)]

#[cfg(any(test, feature = "fake"))]
pub mod fake;
pub mod gitea;
pub mod github;
pub mod gitlab;

use std::time::Duration;

use secrecy::SecretString;

pub use github::{api_url_for_host, repo_from_url, GitHub};

/// One hosting service's pull-request API.
#[async_trait::async_trait]
pub trait Forge: Send + Sync {
    /// "GitHub" — for messages.
    fn name(&self) -> &'static str;

    /// Open pull requests whose head branch (in this repository, not a fork) starts with
    /// `prefix`.
    async fn open_pulls(&self, prefix: &str) -> Result<Vec<Pull>, Error>;

    /// Closed pull requests (merged or not) whose head branch (in this repository) starts with
    /// `prefix`, most recently updated first, at most `limit`.
    async fn closed_pulls(&self, prefix: &str, limit: usize) -> Result<Vec<Pull>, Error>;

    /// The login of the account the credentials act as, spelled as [`Pull::author`] spells
    /// the author of what that account opens (GitHub: `GET /user`, or `<app>[bot]` for a
    /// GitHub App and an installation token; GitLab and Gitea: `GET /user`). Whose pull
    /// requests are imagebump's is decided by it, never by a branch name or a body.
    async fn whoami(&self) -> Result<String, Error>;

    /// One pull request by number, any state (`None`: the forge does not know it, or its
    /// head is not a branch of this repository).
    async fn pull(&self, number: u64) -> Result<Option<Pull>, Error>;

    /// Opens a pull request from `new.branch` (a branch of this repository) into `new.base`.
    async fn create_pull(&self, new: &NewPull) -> Result<Pull, Error>;

    /// Replaces the title and the body of a pull request.
    async fn update_pull(&self, number: u64, title: &str, body: &str) -> Result<(), Error>;

    /// Closes a pull request without merging it.
    async fn close_pull(&self, number: u64) -> Result<(), Error>;

    /// Adds a comment to a pull request's conversation.
    async fn comment(&self, number: u64, body: &str) -> Result<(), Error>;

    /// Adds labels (keeping those it has). An empty list makes no request.
    async fn add_labels(&self, number: u64, labels: &[String]) -> Result<(), Error>;

    /// Requests reviews from users, or teams written `org/team` (or `@org/team`). An empty
    /// list makes no request.
    async fn request_reviewers(&self, number: u64, reviewers: &[String]) -> Result<(), Error>;

    /// Whether anyone has reviewed the pull request (approved, commented in a review or
    /// asked for changes), or, where the forge lists them as reviews (Gitea), is asked to.
    /// GitLab keeps its reviewers after they review ([`Pull::review_requests`]), so it
    /// asks nothing there.
    async fn has_reviews(&self, _number: u64) -> Result<bool, Error> {
        Ok(false)
    }

    /// Adds assignees (keeping those it has). An empty list makes no request.
    async fn add_assignees(&self, number: u64, assignees: &[String]) -> Result<(), Error>;

    /// Turns on the forge's own auto-merge: the forge merges the pull request with `method`
    /// once its required checks pass (GitHub auto-merge, GitLab "merge when the pipeline
    /// succeeds", Gitea/Forgejo "merge when checks succeed"). Already on is not an error.
    async fn enable_automerge(&self, pull: &Pull, method: MergeMethod) -> Result<(), Error>;

    /// The newest published releases of a repository on this forge (`owner/name`; GitLab:
    /// the project path), newest first, at most `limit` (one page): the release notes of
    /// an image whose source lives on the manifest repository's own forge. Drafts are left
    /// out.
    async fn releases(&self, repo: &str, limit: usize) -> Result<Vec<Release>, Error>;

    /// Who may read repository `repo` on this forge (`owner/name`; GitLab: the project
    /// path): GitHub `GET /repos/{owner}/{name}` (`private`, `visibility`), GitLab
    /// `GET /projects/:id` (`visibility`, `releases_access_level`), Gitea
    /// `GET /repos/{owner}/{name}` (`private`, `internal`, the owner's `visibility`).
    /// Release notes are read only from a repository that is [`Audience::Public`] or
    /// [`Audience::ThisRepository`].
    async fn audience(&self, repo: &str) -> Result<Audience, Error>;

    // -- Issues: the dashboard (docs/pull-requests.md, "Dashboard"). Kept together. --

    /// Open issues (never pull requests) that `author` opened, lowest number first, at most
    /// [`ISSUE_LIMIT`] (GitHub `GET …/issues?creator=`, GitLab `GET …/issues?author_username=`,
    /// Gitea `GET …/issues?type=issues&created_by=`).
    async fn open_issues_by(&self, author: &str) -> Result<Vec<Issue>, Error>;

    /// Opens an issue.
    async fn create_issue(&self, title: &str, body: &str) -> Result<Issue, Error>;

    /// Replaces an issue's title and description.
    async fn update_issue(&self, number: u64, title: &str, body: &str) -> Result<(), Error>;

    /// Who changed the issue's description (ticking a checkbox changes it) since `own` last
    /// did, or since it was opened.
    async fn issue_editors(&self, number: u64, own: &str) -> Result<Editor, Error>;

    /// Whether `login` may write to the repository (GitHub `write`, `maintain` or `admin`;
    /// GitLab Developer or more; Gitea `write`, `admin` or `owner`).
    async fn can_write(&self, login: &str) -> Result<bool, Error>;

    /// Has the forge create a commit of `c.files` on `c.parent` as the tip of `c.branch`
    /// through its API, so that the forge signs it (GitHub's verified commits); the new
    /// commit's sha. Only GitHub can.
    async fn commit_by_api(&self, c: &ApiCommit) -> Result<String, Error> {
        Err(Error::Config(format!(
            "{} cannot create commits through its API for {}; sign with an ssh or openpgp key",
            self.name(),
            c.branch
        )))
    }
}

/// Who may read a repository, as [`Forge::audience`] tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// The forge's repository itself (the manifest repository), whatever its visibility.
    ThisRepository,
    /// Anyone, signed in or not.
    Public,
    /// Fewer people: private, internal, in an organisation that is not public, or with
    /// its releases kept to members.
    Restricted,
}

/// A release as [`Forge::releases`] reads it: its tag, title and notes (Markdown, as
/// written: untrusted text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub tag: String,
    pub name: String,
    pub body: String,
}

/// A release in the three APIs' JSON (GitLab calls the notes `description`).
#[derive(serde::Deserialize)]
pub(crate) struct ReleaseJson {
    tag_name: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    draft: bool,
}

impl ReleaseJson {
    /// The published releases of a page, at most `limit`.
    pub(crate) fn published(page: Vec<ReleaseJson>, limit: usize) -> Vec<Release> {
        page.into_iter()
            .filter(|r| !r.draft)
            .take(limit)
            .map(|r| Release {
                name: r.name.unwrap_or_default(),
                body: r.body.or(r.description).unwrap_or_default(),
                tag: r.tag_name,
            })
            .collect()
    }
}

/// `owner/name` split and checked: letters, digits, `-`, `_`, `.` in each part (GitLab:
/// groups too), never `.` or `..`, so that the path asked for stays the repository's.
pub(crate) fn repo_segments(repo: &str, at_most: usize) -> Result<Vec<&str>, Error> {
    let parts: Vec<&str> = repo.split('/').collect();
    let plain = |p: &&str| {
        !p.is_empty()
            && *p != "."
            && *p != ".."
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    if parts.len() < 2 || parts.len() > at_most || !parts.iter().all(plain) {
        return Err(Error::Config(format!(
            "not a repository path: {:?}",
            repo.chars().take(200).collect::<String>()
        )));
    }
    Ok(parts)
}

/// The most releases one call reads (one page).
pub const RELEASES_PAGE: usize = 50;

/// An issue as the dashboard needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    pub number: u64,
    pub title: String,
    /// The description; empty when the forge has none.
    pub body: String,
    /// The login of the account that opened it.
    pub author: String,
    /// The page a human opens.
    pub url: String,
}

/// Who changed an issue's description, as the forge tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Editor {
    /// Nobody changed it since it was opened, or since the account asking last did.
    Unedited,
    /// These accounts changed it, newest first, each named once. An empty name stands for
    /// a change whose account the forge cannot name (a deleted account, or a change older
    /// than what is read): nobody can vouch for it.
    Users(Vec<String>),
    /// The forge does not say who: it lets the issue's author and everyone who may edit
    /// issues change it, whether or not they may write to the repository (Gitea/Forgejo,
    /// where a team can have Issues: Write with Code: Read).
    AnyIssueEditor,
}

/// Open issues one listing of [`Forge::open_issues_by`] returns at most: a dashboard is one
/// issue, and an account that opened more is not read further.
pub const ISSUE_LIMIT: usize = 500;

/// A commit for [`Forge::commit_by_api`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiCommit {
    pub branch: String,
    /// The branch's tip now, `None` when it does not exist yet. Checked before the branch
    /// is moved: a branch that moved meanwhile is not overwritten.
    pub expected: Option<String>,
    /// The commit the new one goes on (the base).
    pub parent: String,
    pub message: String,
    /// Added or changed files: path from the root, content.
    pub files: Vec<(String, Vec<u8>)>,
}

/// How a pull request is merged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MergeMethod {
    /// A merge commit.
    #[default]
    Merge,
    /// One commit with the pull request's changes.
    Squash,
    /// The commits replayed on the base.
    Rebase,
}

/// A pull request as the lifecycle needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pull {
    pub number: u64,
    /// Head branch name (without `refs/heads/`).
    pub branch: String,
    /// Base branch name.
    pub base: String,
    /// The login of the account that opened it (GitHub and Gitea `user.login`, GitLab
    /// `author.username`); empty when the forge does not say.
    pub author: String,
    pub title: String,
    /// The description; empty when the forge has none. The machine-readable marker lives here.
    pub body: String,
    pub state: PullState,
    /// The page a human opens (not the API address).
    pub url: String,
    /// Label names.
    pub labels: Vec<String>,
    /// The assignees' logins (GitLab: usernames).
    pub assignees: Vec<String>,
    /// Who is asked to review it: GitHub's and Gitea's pending review requests (users,
    /// and teams by name), which the forge drops once the review is in; GitLab's
    /// reviewers, which it keeps.
    pub review_requests: Vec<String>,
    pub draft: bool,
    /// The forge's own id for APIs that address a pull request by it (GitHub's GraphQL
    /// node id); empty where there is none.
    pub node_id: String,
    /// Auto-merge is on, as the forge reports it; `None` where the forge does not say
    /// (Gitea/Forgejo).
    pub automerge: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullState {
    Open,
    /// Closed without merging.
    Closed,
    Merged,
}

/// What [`Forge::create_pull`] opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPull {
    /// Head branch, already pushed to this repository.
    pub branch: String,
    /// Base branch.
    pub base: String,
    pub title: String,
    pub body: String,
    pub draft: bool,
}

/// What one listing (pull requests, labels) may read over all its pages. A forge that pages
/// forever, or pads its pages, is stopped here with an error rather than holding the run
/// (each response is also capped on its own, by the transport).
pub(crate) const LIST_LIMIT: usize = 64 * 1024 * 1024;

/// The bytes a listing has read so far, against [`LIST_LIMIT`].
#[derive(Debug, Default)]
pub(crate) struct ListBudget(usize);

impl ListBudget {
    /// Count a page of `bytes`; an error once the listing has read more than the limit.
    pub(crate) fn take(&mut self, bytes: usize, what: &str) -> Result<(), Error> {
        self.0 = self.0.saturating_add(bytes);
        if self.0 > LIST_LIMIT {
            return Err(Error::Transport {
                message: format!(
                    "{what}: the forge's listing is larger than {} MiB over all pages, refused",
                    LIST_LIMIT >> 20
                ),
                retryable: false,
            });
        }
        Ok(())
    }
}

/// A forge request that failed. Messages never contain a credential.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 401: the credentials were refused (or are missing).
    #[error("unauthorized: the credentials were refused")]
    Unauthorized { hint: String },

    /// 403 that is not a rate limit: the credentials lack a permission.
    #[error("forbidden: {message}")]
    Forbidden { message: String },

    /// 404: the repository or pull request does not exist, or the credentials cannot see it.
    #[error("not found: {what}")]
    NotFound { what: String },

    /// 429, or 403 with rate-limit headers, still so after the bounded retries.
    #[error("rate limited{}", match retry_after {
        Some(wait) => format!(" (retry in {} s)", wait.as_secs().max(1)),
        None => String::new(),
    })]
    RateLimited { retry_after: Option<Duration> },

    /// Any other unsuccessful HTTP status; `message` is the forge's own explanation.
    #[error("HTTP {status}: {message}")]
    Status { status: u16, message: String },

    /// No usable response: connection, TLS, timeout, or a body that could not be read.
    #[error("{message}")]
    Transport { message: String, retryable: bool },

    /// The settings cannot work (bad URL, malformed key or token).
    #[error("{0}")]
    Config(String),

    /// The forge answered but refused the operation (a GraphQL error, an answer that says
    /// the feature is off); `message` is its own explanation.
    #[error("refused: {message}")]
    Refused { message: String },
}

impl Error {
    /// A pull request for the branch is already open (another run opened it between our
    /// listing and our create): GitHub's 422 "A pull request already exists", GitLab's and
    /// Gitea's 409. The caller adopts it rather than failing.
    pub fn is_already_open(&self) -> bool {
        matches!(self, Error::Status { status: 409 | 422, message } if message.contains("already exists"))
    }

    /// Whether the same request may succeed later: rate limits, server errors (5xx) and
    /// transport failures the transport marked so.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::RateLimited { .. } => true,
            Error::Status { status, .. } => matches!(status, 500 | 502 | 503 | 504),
            Error::Transport { retryable, .. } => *retryable,
            Error::Unauthorized { .. }
            | Error::Forbidden { .. }
            | Error::NotFound { .. }
            | Error::Refused { .. }
            | Error::Config(_) => false,
        }
    }

    /// What the user can do about it, when there is something to say.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Unauthorized { hint } => Some(hint.clone()),
            Error::Forbidden { .. } => Some(
                "the token needs to push branches and open pull requests: GitHub contents and \
                 pull-requests write (a GitHub App: the same, and installed on the repository); \
                 GitLab the api scope and the Developer role; Gitea/Forgejo write:repository \
                 and write:issue"
                    .to_string(),
            ),
            Error::NotFound { .. } => Some(
                "check the repository (--forge-repo, --forge-url) and that the token can see it"
                    .to_string(),
            ),
            Error::RateLimited { .. } => {
                Some("run again later (on GitHub, a GitHub App has higher rate limits)".to_string())
            }
            Error::Status { status, .. } if *status >= 500 => {
                Some("the forge had a problem; run again later".to_string())
            }
            Error::Status { .. }
            | Error::Transport { .. }
            | Error::Config(_)
            | Error::Refused { .. } => None,
        }
    }
}

/// A forge's API base URL, checked, with a trailing `/` so that relative joins keep its path.
/// The URL is never echoed in an error: its user part or query may hold a token.
pub(crate) fn api_base(api_url: &str, forge: &str) -> Result<imagebump_http::Url, Error> {
    let bad = |why: &str| Error::Config(format!("invalid {forge} API URL: {why}"));
    let mut url = imagebump_http::Url::parse(api_url.trim()).map_err(|e| bad(&e.to_string()))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("it holds credentials; pass the token separately"));
    }
    if !matches!(url.scheme(), "https" | "http") {
        return Err(bad("use https://"));
    }
    if url.host_str().is_none() {
        return Err(bad("no host"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("no query or fragment allowed"));
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

/// The error with its messages redacted: a server or proxy may echo a header, or a URL
/// someone put a token in.
pub(crate) fn redacted(error: Error, redactor: &imagebump_http::Redactor) -> Error {
    let clean = |text: String| redactor.apply(&text);
    match error {
        Error::Unauthorized { hint } => Error::Unauthorized { hint: clean(hint) },
        Error::Forbidden { message } => Error::Forbidden {
            message: clean(message),
        },
        Error::NotFound { what } => Error::NotFound { what: clean(what) },
        Error::Status { status, message } => Error::Status {
            status,
            message: clean(message),
        },
        Error::Transport { message, retryable } => Error::Transport {
            message: clean(message),
            retryable,
        },
        Error::Config(message) => Error::Config(clean(message)),
        Error::Refused { message } => Error::Refused {
            message: clean(message),
        },
        Error::RateLimited { retry_after } => Error::RateLimited { retry_after },
    }
}

/// A pull request's assignees as GitHub writes them, and Gitea after it (`null` or a
/// list of users); their logins.
pub(crate) fn logins(users: Option<Vec<LoginJson>>) -> Vec<String> {
    users
        .unwrap_or_default()
        .into_iter()
        .map(|u| u.login)
        .collect()
}

/// A repository's visibility as GitHub and Gitea write it (`GET /repos/{owner}/{name}`).
#[derive(serde::Deserialize)]
pub(crate) struct VisibilityJson {
    full_name: String,
    #[serde(default)]
    private: Option<bool>,
    /// GitHub: `public`, `private` or `internal`.
    #[serde(default)]
    visibility: Option<String>,
    /// Gitea: public in an organisation that only its members see.
    #[serde(default)]
    internal: Option<bool>,
    #[serde(default)]
    owner: Option<OwnerVisibilityJson>,
}

/// Gitea: the owner's `visibility` (`public`, `limited`: signed-in users, `private`).
#[derive(serde::Deserialize)]
struct OwnerVisibilityJson {
    #[serde(default)]
    visibility: Option<String>,
}

impl VisibilityJson {
    /// [`Audience::ThisRepository`] when it is `this` (`owner/name`), else public only
    /// when every field given says so and `private` is given and false: an answer short
    /// of a field reads as restricted.
    pub(crate) fn audience(&self, this: &str) -> Audience {
        let public_or_absent = |v: &Option<String>| v.as_deref().is_none_or(|v| v == "public");
        if self.full_name.eq_ignore_ascii_case(this) {
            Audience::ThisRepository
        } else if self.private == Some(false)
            && self.internal != Some(true)
            && public_or_absent(&self.visibility)
            && public_or_absent(&self.owner.as_ref().and_then(|o| o.visibility.clone()))
        {
            Audience::Public
        } else {
            Audience::Restricted
        }
    }
}

/// A user as GitHub and Gitea write one, by login.
#[derive(serde::Deserialize)]
pub(crate) struct LoginJson {
    pub login: String,
}

/// A pull request's `head` or `base` as GitHub writes it, and Gitea after it.
#[derive(serde::Deserialize)]
pub(crate) struct BranchJson {
    #[serde(rename = "ref")]
    pub name: String,
    /// `null` when the fork it came from was deleted.
    pub repo: Option<RepoJson>,
}

#[derive(serde::Deserialize)]
pub(crate) struct RepoJson {
    pub full_name: String,
}

impl BranchJson {
    /// Whether it is a branch of `full_name` (not of a fork, nor of a deleted one); both
    /// forges' names are case-insensitive.
    pub fn is_in(&self, full_name: &str) -> bool {
        self.repo
            .as_ref()
            .is_some_and(|r| r.full_name.eq_ignore_ascii_case(full_name))
    }
}

/// Reviewers as written in the configuration, split into users and teams (`org/team` or
/// `@org/team` → `team`); blanks are dropped.
pub(crate) fn split_reviewers(reviewers: &[String]) -> (Vec<&str>, Vec<&str>) {
    let mut users = Vec::new();
    let mut teams = Vec::new();
    for reviewer in reviewers {
        let name = reviewer.trim().trim_start_matches('@');
        match name.split_once('/') {
            Some((_, team)) if !team.is_empty() => teams.push(team),
            Some(_) => {}
            None if !name.is_empty() => users.push(name),
            None => {}
        }
    }
    (users, teams)
}

/// The body of GitHub's and Gitea's `POST pulls/{n}/requested_reviewers`: `reviewers` (users)
/// and `team_reviewers`, each only when it names someone; `None` when nobody is named.
pub(crate) fn requested_reviewers(reviewers: &[String]) -> Option<serde_json::Value> {
    let (users, teams) = split_reviewers(reviewers);
    if users.is_empty() && teams.is_empty() {
        return None;
    }
    let mut payload = serde_json::Map::new();
    if !users.is_empty() {
        payload.insert("reviewers".to_string(), serde_json::json!(users));
    }
    if !teams.is_empty() {
        payload.insert("team_reviewers".to_string(), serde_json::json!(teams));
    }
    Some(serde_json::Value::Object(payload))
}

/// The token without surrounding whitespace (a file's trailing newline); refused when empty or
/// when it holds characters no token has (they would make an invalid HTTP header).
pub(crate) fn clean_token(
    token: &SecretString,
    forge: &str,
    hint: &str,
) -> Result<SecretString, Error> {
    use secrecy::ExposeSecret;
    let trimmed = token.expose_secret().trim();
    if trimmed.is_empty() {
        return Err(Error::Unauthorized {
            hint: format!("the {forge} token is empty: {hint}"),
        });
    }
    if !trimmed.chars().all(|c| c.is_ascii_graphic()) {
        return Err(Error::Config(format!(
            "the {forge} token holds spaces or control characters; check how it was set"
        )));
    }
    Ok(SecretString::from(trimmed.to_owned()))
}

/// `host:port` → `host` (IPv6 literals in brackets kept whole).
pub(crate) fn strip_port(authority: &str) -> &str {
    match authority.rsplit_once(':') {
        Some((host, port))
            if port.chars().all(|c| c.is_ascii_digit())
                && (!host.starts_with('[') || host.ends_with(']')) =>
        {
            host
        }
        _ => authority,
    }
}

/// How to reach GitHub.
pub struct GitHubSettings {
    /// `https://api.github.com`, GitHub Enterprise Server's `https://host/api/v3`, or a test
    /// server. See [`api_url_for_host`].
    pub api_url: String,
    pub owner: String,
    pub repo: String,
    pub auth: GitHubAuth,
}

/// How imagebump authenticates to GitHub.
pub enum GitHubAuth {
    /// A personal access token (classic or fine-grained), or a token GitHub Actions gives.
    Token(SecretString),
    /// A GitHub App: its id and private key (PEM, as GitHub hands it out). The app must be
    /// installed on the repository; an installation token scoped to it is used for the calls.
    App {
        app_id: u64,
        private_key_pem: SecretString,
    },
}

impl std::fmt::Debug for GitHubAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GitHubAuth::Token(_) => f.write_str("Token(<redacted>)"),
            GitHubAuth::App { app_id, .. } => {
                write!(f, "App {{ app_id: {app_id}, private_key_pem: <redacted> }}")
            }
        }
    }
}

impl std::fmt::Debug for GitHubSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitHubSettings")
            .field("api_url", &self.api_url)
            .field("owner", &self.owner)
            .field("repo", &self.repo)
            .field("auth", &self.auth)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_repository_every_field_calls_public_is_public() {
        let audience = |json: serde_json::Value| {
            serde_json::from_value::<VisibilityJson>(json)
                .unwrap()
                .audience("octo/gitops")
        };
        let cases = [
            (
                r#"{"full_name":"acme/api","private":false,"visibility":"public"}"#,
                Audience::Public,
            ),
            (
                r#"{"full_name":"acme/api","private":false}"#,
                Audience::Public,
            ),
            (
                r#"{"full_name":"acme/api","private":true,"visibility":"private"}"#,
                Audience::Restricted,
            ),
            (
                r#"{"full_name":"acme/api","private":true,"visibility":"internal"}"#,
                Audience::Restricted,
            ),
            (
                r#"{"full_name":"acme/api","private":false,"visibility":"internal"}"#,
                Audience::Restricted,
            ),
            (
                r#"{"full_name":"acme/api","visibility":"public"}"#,
                Audience::Restricted,
            ),
            (
                r#"{"full_name":"acme/api","private":false,"internal":true}"#,
                Audience::Restricted,
            ),
            (
                r#"{"full_name":"acme/api","private":false,"internal":false,"owner":{"visibility":"limited"}}"#,
                Audience::Restricted,
            ),
            (
                r#"{"full_name":"acme/api","private":false,"internal":false,"owner":{"visibility":"public"}}"#,
                Audience::Public,
            ),
            (
                r#"{"full_name":"Octo/GitOps","private":true}"#,
                Audience::ThisRepository,
            ),
        ];
        for (json, want) in cases {
            assert_eq!(
                audience(serde_json::from_str(json).unwrap()),
                want,
                "{json}"
            );
        }
    }

    #[test]
    fn api_base_checks_and_never_echoes_credentials() {
        assert_eq!(
            api_base("https://ghe.example.com/api/v3", "GitHub")
                .unwrap()
                .as_str(),
            "https://ghe.example.com/api/v3/"
        );
        assert_eq!(
            api_base("https://git.example.com/gitea/api/v1/", "Gitea")
                .unwrap()
                .as_str(),
            "https://git.example.com/gitea/api/v1/"
        );
        for bad in [
            "ftp://x",
            "https://x/api?q=1",
            "ftp://user:ghp_secret@x/api",
            "https://user:ghp_secret@ghe.example.com/api/v3",
        ] {
            match api_base(bad, "GitHub") {
                Err(Error::Config(message)) => {
                    assert!(message.starts_with("invalid GitHub API URL: "), "{message}");
                    assert!(!message.contains("ghp_secret"), "{message}");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn an_open_pull_request_for_the_branch_is_recognised_on_every_forge() {
        let status = |status, message: &str| Error::Status {
            status,
            message: message.to_string(),
        };
        for e in [
            status(422, "Validation Failed: A pull request already exists for o:imagebump/web."),
            status(409, "Another open merge request already exists for this source branch: !3"),
            status(409, "pull request already exists for these targets [id: 1, issue_id: 1, head_repo: 1, base_repo: 1, head_branch: imagebump/web, base_branch: main]"),
        ] {
            assert!(e.is_already_open(), "{e:?}");
        }
        assert!(!status(422, "Validation Failed: head is invalid").is_already_open());
        assert!(!status(409, "Conflict").is_already_open());
    }
}
