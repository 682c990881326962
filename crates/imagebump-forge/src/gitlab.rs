//! GitLab (gitlab.com and self-managed) merge requests through the REST API v4.
//!
//! A thin [`reqwest`] client: every request is built here, so every response's headers are
//! seen (`Retry-After` and `RateLimit-Reset` decide whether to wait, `x-next-page` or `Link`
//! drives pagination), and redirects are not followed (the token travels in a custom header
//! that a redirect to another host would carry along). Bodies are read into small structs
//! holding only the fields used, so an older GitLab that lacks a newer field still works.
//!
//! # Requests
//!
//! `:id` is the project's numeric id or its URL-encoded path (`group%2Fsub%2Fproject`);
//! `:iid` is the merge request's number within the project (`!12`), which [`Pull::number`]
//! holds.
//!
//! | [`Forge`] method | GitLab requests |
//! |---|---|
//! | `open_pulls(prefix)` | `GET /projects/:id/merge_requests?state=opened&order_by=created_at&sort=asc&per_page=100`, every page; kept: `source_branch` starts with `prefix` and `source_project_id == target_project_id` (not from a fork) |
//! | `closed_pulls(prefix, limit)` | the same listing with `state=merged`, then with `state=closed`, both `order_by=updated_at&sort=desc`, each read until `limit` are kept (10 pages at most); merged by `updated_at`, newest first, at most `limit` |
//! | `create_pull(new)` | `POST /projects/:id/merge_requests` `{source_branch, target_branch, title, description, remove_source_branch: true}`; a draft's title is sent as `Draft: {title}` |
//! | `update_pull(iid, title, body)` | `GET /projects/:id/merge_requests/:iid`, then `PUT` there `{title, description}` unless both are already so; a draft keeps its draft marker |
//! | `close_pull(iid)` | `PUT /projects/:id/merge_requests/:iid` `{state_event: "close"}` |
//! | `comment(iid, body)` | `POST /projects/:id/merge_requests/:iid/notes` `{body}` |
//! | `add_labels(iid, labels)` | `PUT /projects/:id/merge_requests/:iid` `{add_labels: "a,b"}` |
//! | `request_reviewers(iid, users)` | `GET /users?username=u` per user not yet looked up, `GET …/merge_requests/:iid`, then `PUT` there `{reviewer_ids: existing ∪ new}` when it adds someone |
//! | `add_assignees(iid, users)` | the same with `assignees` and `{assignee_ids: existing ∪ new}` |
//!
//! An empty list of labels, reviewers or assignees makes no request.
//!
//! # Fields
//!
//! | [`Pull`] | GitLab merge request |
//! |---|---|
//! | `number` | `iid` |
//! | `branch`, `base` | `source_branch`, `target_branch` |
//! | `title` | `title` without its draft marker, when `draft` |
//! | `body` | `description` (`null` → empty) |
//! | `state` | `opened`/`locked` → Open, `merged` → Merged, `closed` → Closed |
//! | `url` | `web_url` |
//! | `labels` | `labels` (names, or `name` of each object with `with_labels_details`) |
//! | `draft` | `draft`, or `work_in_progress` (GitLab before 13.2) |
//!
//! # Drafts
//!
//! GitLab makes a merge request a draft when its title starts with `Draft:`, `[Draft]` or
//! `(Draft)` (any case; `WIP:` and `[WIP]` before 14.0), and marks it ready when an edit
//! removes the marker. The create call of older versions has no draft field, so a draft is
//! opened as `Draft: {title}` everywhere. Reading strips the marker of a draft, so the title
//! compares equal to the one asked for and an unchanged title makes no update. An update
//! reads the merge request first and puts the marker it has (or `Draft: ` when it is a draft
//! without one) back in front of the new title, so a draft stays a draft and a merge request
//! someone marked ready stays ready; when title and description are already what would be
//! sent, nothing is written.
//!
//! # Reviewers and assignees
//!
//! GitLab takes user ids: each username (`alice` or `@alice`) is looked up with
//! `GET /users?username=` once per client. Groups (`group/team`) cannot be reviewers on
//! GitLab: they are skipped with a warning. Approvals and approval rules (Premium) are not
//! reviewers and are not touched. A username GitLab does not know fails the call with
//! [`Error::NotFound`] after the known ones were added. Several assignees or reviewers per
//! merge request need GitLab Premium; on Free, GitLab keeps one of those sent.
//!
//! # Credentials
//!
//! [`GitLabAuth::PrivateToken`] (`PRIVATE-TOKEN`) for personal, project and group access
//! tokens: they need the `api` scope, and their user (a project or group token's bot) at
//! least the Developer role. [`GitLabAuth::OAuth`] (`Authorization: Bearer`) for OAuth 2
//! tokens with the `api` scope. [`GitLabAuth::JobToken`] (`JOB-TOKEN`, `CI_JOB_TOKEN`) is
//! accepted only by the few endpoints that allow job tokens: on most instances it can list
//! merge requests but not open, edit or comment on them (GitLab answers 401 or 403).
//!
//! # Errors and retries
//!
//! | status | error |
//! |---|---|
//! | 401 | [`Error::Unauthorized`], hint naming the scope and role the token needs (or that a job token cannot write) |
//! | 403 | [`Error::Forbidden`] with GitLab's explanation |
//! | 404 | [`Error::NotFound`] naming the project, merge request or user |
//! | 409 | [`Error::Status`] with GitLab's message (`Another open merge request already exists for this source branch: !3`) |
//! | 429 | [`Error::RateLimited`], the wait from `Retry-After` or `RateLimit-Reset` |
//! | 3xx | [`Error::Status`]: the API URL redirects (not followed) |
//! | other | [`Error::Status`] with GitLab's message |
//!
//! A request is retried at most 3 times: after a 429 whose wait is at most 30 s (any method:
//! GitLab did not act on it), and after a 5xx or a transport failure for GET and PUT only (a
//! POST may have been acted on: retrying it could open a second merge request or post a
//! comment twice). Every message built from a response or a transport error has the token
//! replaced by `<redacted>`.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use imagebump_http::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use imagebump_http::{Dialect, Options, Redactor, Request, Response, Transport, Url};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{json, Value};

mod issues;

use super::{Error, Forge, MergeMethod, NewPull, Pull, PullState};

/// Items per page: GitLab's maximum.
const PER_PAGE: usize = 100;
/// Pages read for one listing of open merge requests (100,000 of them), a guard against a
/// server whose pagination never ends.
const MAX_PAGES: usize = 1000;
/// Pages read per state for closed merge requests (the most recently updated 1,000 merged and
/// 1,000 closed), whatever the limit: only recent rejections matter.
const MAX_CLOSED_PAGES: usize = 10;
/// Open merge requests oldest first: one opened while the pages are read lands on the last
/// page instead of shifting the others.
const OPEN_ORDER: (&str, &str) = ("created_at", "asc");
/// Closed and merged ones most recently updated first: the limit keeps the newest.
const CLOSED_ORDER: (&str, &str) = ("updated_at", "desc");
/// The wait reported for a 429 that names none.
const DEFAULT_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);
/// What a draft's title starts with when imagebump opens it.
const DRAFT_PREFIX: &str = "Draft: ";
/// The title markers GitLab reads as "draft", lower case: `Draft:`, `[Draft]`, `(Draft)`, and
/// before GitLab 14.0 `WIP:` and `[WIP]`.
const DRAFT_MARKERS: [&str; 5] = ["draft:", "[draft]", "(draft)", "wip:", "[wip]"];

/// How to reach a GitLab project.
pub struct GitLabSettings {
    /// The REST API v4 base: `https://gitlab.com/api/v4`, a self-managed instance's
    /// `https://host/api/v4` (see [`api_url_for_host`]), or `CI_API_V4_URL` in a pipeline.
    pub api_url: String,
    /// The project: its full path (`group/sub/project`, see [`project_from_url`]) or its
    /// numeric id.
    pub project: String,
    pub auth: GitLabAuth,
}

/// How imagebump authenticates to GitLab.
pub enum GitLabAuth {
    /// A personal, project or group access token, sent as `PRIVATE-TOKEN`. It needs the `api`
    /// scope, and its user at least the Developer role on the project.
    PrivateToken(SecretString),
    /// A CI/CD job token (`CI_JOB_TOKEN`), sent as `JOB-TOKEN`. Most GitLab instances do not
    /// let a job token open, edit or comment on merge requests: use a project access token in
    /// a masked CI/CD variable instead.
    JobToken(SecretString),
    /// An OAuth 2 access token with the `api` scope, sent as `Authorization: Bearer`.
    OAuth(SecretString),
}

impl std::fmt::Debug for GitLabAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GitLabAuth::PrivateToken(_) => "PrivateToken(<redacted>)",
            GitLabAuth::JobToken(_) => "JobToken(<redacted>)",
            GitLabAuth::OAuth(_) => "OAuth(<redacted>)",
        })
    }
}

impl std::fmt::Debug for GitLabSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitLabSettings")
            .field("api_url", &self.api_url)
            .field("project", &self.project)
            .field("auth", &self.auth)
            .finish()
    }
}

/// A GitLab project's merge requests.
pub struct GitLab {
    api: Api,
    /// As configured: `group/sub/project` or a numeric id (for messages).
    project: String,
    /// `{api}/projects/{url-encoded id}`, without a trailing `/`.
    project_root: String,
    /// The user name git takes alongside the token over HTTPS.
    git_user: &'static str,
    /// User ids by lower-case username (`None`: GitLab has no such user), looked up once.
    users: Mutex<HashMap<String, Option<u64>>>,
}

impl std::fmt::Debug for GitLab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitLab")
            .field("api_url", &self.api.base.as_str())
            .field("project", &self.project)
            .finish_non_exhaustive()
    }
}

impl GitLab {
    /// Builds the client; no request is made.
    pub fn new(settings: GitLabSettings) -> Result<GitLab, Error> {
        let base = super::api_base(&settings.api_url, "GitLab")?;
        let project = check_project(&settings.project)?;
        let (header, secret, hint, git_user) = match &settings.auth {
            GitLabAuth::PrivateToken(token) => (
                HeaderName::from_static("private-token"),
                token,
                format!(
                    "use a personal, project or group access token with the api scope, not \
                     expired, whose user has at least the Developer role on {project}"
                ),
                "oauth2",
            ),
            GitLabAuth::JobToken(token) => (
                HeaderName::from_static("job-token"),
                token,
                "a CI/CD job token (CI_JOB_TOKEN) cannot open or edit merge requests on most \
                 GitLab instances: use a project access token with the api scope and the \
                 Developer role, in a masked CI/CD variable"
                    .to_string(),
                "gitlab-ci-token",
            ),
            GitLabAuth::OAuth(token) => (
                AUTHORIZATION,
                token,
                format!(
                    "use an OAuth token with the api scope, not expired, whose user has at \
                     least the Developer role on {project}"
                ),
                "oauth2",
            ),
        };
        let token = crate::clean_token(secret, "GitLab", &hint)?;
        let value = if header == AUTHORIZATION {
            format!("Bearer {}", token.expose_secret())
        } else {
            token.expose_secret().to_owned()
        };
        let mut value = HeaderValue::from_str(&value).map_err(|_| {
            Error::Config("the GitLab token holds characters no HTTP header takes".to_string())
        })?;
        value.set_sensitive(true);
        let transport = Transport::new(Options {
            // The token is a header reqwest does not strip on a redirect to another host.
            redirects: 0,
            ..Options::default()
        })
        .map_err(Error::Config)?;
        let redactor = Redactor::default().with(token.expose_secret());
        let project_root = format!("{}projects/{}", base.as_str(), encode_component(&project));
        Ok(GitLab {
            api: Api {
                transport,
                base,
                auth: (header, value),
                token,
                redactor,
                hint,
            },
            project,
            project_root,
            git_user,
            users: Mutex::new(HashMap::new()),
        })
    }

    /// Sends through `transport` from now on (other timeouts or retry numbers).
    pub fn with_transport(mut self, transport: Transport) -> GitLab {
        self.api.transport = transport;
        self
    }

    /// The credentials for `git push` over HTTPS: `oauth2` (any name works with an access
    /// token) or `gitlab-ci-token` for a job token, and the token.
    pub fn git_credentials(&self) -> (&'static str, SecretString) {
        (self.git_user, self.api.token.clone())
    }

    /// `{project_root}{rest}` as a URL.
    fn project_url(&self, rest: &str) -> Result<Url, Error> {
        let text = format!("{}{rest}", self.project_root);
        Url::parse(&text).map_err(|e| Error::Config(format!("invalid GitLab URL {text}: {e}")))
    }

    fn mr_url(&self, iid: u64) -> Result<Url, Error> {
        self.project_url(&format!("/merge_requests/{iid}"))
    }

    fn project_what(&self) -> String {
        format!("GitLab project {}", self.project)
    }

    fn mr_what(&self, iid: u64) -> String {
        format!("merge request !{iid} in GitLab project {}", self.project)
    }

    /// Merge requests in `state` from a branch of this project starting with `prefix`, in the
    /// order `order_by` and `sort` say, reading at most `max_pages`, stopping once `enough`
    /// were found.
    async fn list(
        &self,
        state: &str,
        (order_by, sort): (&str, &str),
        prefix: &str,
        max_pages: usize,
        enough: usize,
    ) -> Result<Vec<MrJson>, Error> {
        let mut first = self.project_url("/merge_requests")?;
        first
            .query_pairs_mut()
            .append_pair("state", state)
            .append_pair("order_by", order_by)
            .append_pair("sort", sort)
            .append_pair("per_page", &PER_PAGE.to_string());
        let what = self.project_what();
        let mut next = Some(first);
        let mut seen_pages = HashSet::new();
        let mut seen_iids = HashSet::new();
        let mut found = Vec::new();
        let mut pages: usize = 0;
        let mut budget = crate::ListBudget::default();
        while let Some(url) = next.take() {
            if pages == max_pages || !seen_pages.insert(url.to_string()) {
                break;
            }
            pages = pages.saturating_add(1);
            let reply = self.api.send(Method::Get, &url, None, &what).await?;
            budget.take(reply.body.len(), &what)?;
            let page: Vec<MrJson> = parse(&reply.body, Method::Get, &url)?;
            // A merge request opened or closed while reading shifts the pages: one may come
            // twice.
            found.extend(
                page.into_iter()
                    .filter(|mr| mr.is_ours(prefix) && seen_iids.insert(mr.iid)),
            );
            if found.len() >= enough {
                break;
            }
            next = reply.next;
        }
        Ok(found)
    }

    async fn get_mr(&self, iid: u64) -> Result<MrJson, Error> {
        let url = self.mr_url(iid)?;
        let reply = self
            .api
            .send(Method::Get, &url, None, &self.mr_what(iid))
            .await?;
        parse(&reply.body, Method::Get, &url)
    }

    async fn put_mr(&self, iid: u64, payload: Value) -> Result<(), Error> {
        let url = self.mr_url(iid)?;
        self.api
            .send(Method::Put, &url, Some(&payload), &self.mr_what(iid))
            .await
            .map(drop)
    }

    /// User ids for usernames (without `@`), in order, and the usernames GitLab does not know.
    async fn user_ids(&self, names: &[&str]) -> Result<(Vec<u64>, Vec<String>), Error> {
        let mut ids = Vec::new();
        let mut missing = Vec::new();
        for name in names {
            let key = name.to_lowercase();
            let cached = self
                .users
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&key)
                .copied();
            let id = match cached {
                Some(id) => id,
                None => {
                    let id = self.lookup_user(name).await?;
                    self.users
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(key, id);
                    id
                }
            };
            match id {
                Some(id) if !ids.contains(&id) => ids.push(id),
                Some(_) => {}
                None => missing.push(format!("@{name}")),
            }
        }
        Ok((ids, missing))
    }

    async fn lookup_user(&self, name: &str) -> Result<Option<u64>, Error> {
        let mut url = self
            .api
            .base
            .join("users")
            .map_err(|e| Error::Config(format!("invalid GitLab API URL: {e}")))?;
        url.query_pairs_mut().append_pair("username", name);
        let reply = self
            .api
            .send(Method::Get, &url, None, &format!("GitLab user @{name}"))
            .await?;
        let users: Vec<UserJson> = parse(&reply.body, Method::Get, &url)?;
        Ok(users
            .into_iter()
            .find(|u| u.username.eq_ignore_ascii_case(name))
            .map(|u| u.id))
    }

    /// Adds users to the merge request's reviewers or assignees: looks them up, reads who is
    /// there, and writes the union when it adds someone. Unknown users fail the call after the
    /// known ones were added.
    async fn add_people(&self, iid: u64, names: &[&str], role: Role) -> Result<(), Error> {
        if names.is_empty() {
            return Ok(());
        }
        let (ids, missing) = self.user_ids(names).await?;
        if !ids.is_empty() {
            let mr = self.get_mr(iid).await?;
            let mut all = match role {
                Role::Reviewer => mr.reviewer_ids(),
                Role::Assignee => mr.assignee_ids(),
            };
            let before = all.len();
            for id in ids {
                if !all.contains(&id) {
                    all.push(id);
                }
            }
            if all.len() == before {
                tracing::debug!("GitLab: !{iid} already has these {}s", role.name());
            } else {
                self.put_mr(iid, json!({ role.field(): all })).await?;
            }
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Error::NotFound {
                what: format!(
                    "GitLab user {} (a {} of merge request !{iid})",
                    missing.join(", "),
                    role.name()
                ),
            })
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Role {
    Reviewer,
    Assignee,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Reviewer => "reviewer",
            Role::Assignee => "assignee",
        }
    }

    fn field(self) -> &'static str {
        match self {
            Role::Reviewer => "reviewer_ids",
            Role::Assignee => "assignee_ids",
        }
    }
}

#[async_trait::async_trait]
impl Forge for GitLab {
    fn name(&self) -> &'static str {
        "GitLab"
    }

    async fn open_pulls(&self, prefix: &str) -> Result<Vec<Pull>, Error> {
        let found = self
            .list("opened", OPEN_ORDER, prefix, MAX_PAGES, usize::MAX)
            .await?;
        Ok(found.into_iter().map(MrJson::into_pull).collect())
    }

    async fn closed_pulls(&self, prefix: &str, limit: usize) -> Result<Vec<Pull>, Error> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut found = Vec::new();
        for state in ["merged", "closed"] {
            found.extend(
                self.list(state, CLOSED_ORDER, prefix, MAX_CLOSED_PAGES, limit)
                    .await?,
            );
        }
        // GitLab writes UTC timestamps of one shape, so their text sorts as their time.
        found.sort_by(|a, b| {
            b.updated_at
                .cmp(&a.updated_at)
                .then_with(|| b.iid.cmp(&a.iid))
        });
        found.truncate(limit);
        Ok(found.into_iter().map(MrJson::into_pull).collect())
    }

    async fn releases(&self, repo: &str, limit: usize) -> Result<Vec<crate::Release>, Error> {
        let parts = crate::repo_segments(repo, 20)?;
        let project = encode_component(&parts.join("/"));
        let per_page = limit.clamp(1, crate::RELEASES_PAGE);
        let url = self
            .api
            .base
            .join(&format!("projects/{project}/releases?per_page={per_page}"))
            .map_err(|e| Error::Config(format!("invalid GitLab API URL: {e}")))?;
        let what = format!("releases of GitLab project {}", parts.join("/"));
        let reply = self.api.send(Method::Get, &url, None, &what).await?;
        let page: Vec<crate::ReleaseJson> = parse(&reply.body, Method::Get, &url)?;
        Ok(crate::ReleaseJson::published(page, limit))
    }

    async fn audience(&self, repo: &str) -> Result<crate::Audience, Error> {
        let parts = crate::repo_segments(repo, 20)?;
        let path = parts.join("/");
        if path.eq_ignore_ascii_case(&self.project) {
            return Ok(crate::Audience::ThisRepository);
        }
        let url = self
            .api
            .base
            .join(&format!("projects/{}", encode_component(&path)))
            .map_err(|e| Error::Config(format!("invalid GitLab API URL: {e}")))?;
        let what = format!("visibility of GitLab project {path}");
        let reply = self.api.send(Method::Get, &url, None, &what).await?;
        let project: ProjectJson = parse(&reply.body, Method::Get, &url)?;
        Ok(project.audience(&self.project))
    }

    async fn whoami(&self) -> Result<String, Error> {
        let url = self
            .api
            .base
            .join("user")
            .map_err(|e| Error::Config(format!("invalid GitLab API URL: {e}")))?;
        let reply = self
            .api
            .send(Method::Get, &url, None, "the token's GitLab user")
            .await?;
        Ok(parse::<UserJson>(&reply.body, Method::Get, &url)?.username)
    }

    async fn pull(&self, number: u64) -> Result<Option<Pull>, Error> {
        match self.get_mr(number).await {
            Ok(mr) if mr.is_ours("") => Ok(Some(mr.into_pull())),
            Ok(_) | Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn create_pull(&self, new: &NewPull) -> Result<Pull, Error> {
        let title = if new.draft {
            format!("{DRAFT_PREFIX}{}", new.title)
        } else {
            new.title.clone()
        };
        let payload = json!({
            "source_branch": new.branch,
            "target_branch": new.base,
            "title": title,
            "description": new.body,
            "remove_source_branch": true,
        });
        let url = self.project_url("/merge_requests")?;
        let reply = self
            .api
            .send(Method::Post, &url, Some(&payload), &self.project_what())
            .await?;
        let mr: MrJson = parse(&reply.body, Method::Post, &url)?;
        Ok(mr.into_pull())
    }

    async fn update_pull(&self, number: u64, title: &str, body: &str) -> Result<(), Error> {
        let current = self.get_mr(number).await?;
        let title = match (draft_marker(&current.title), current.is_draft()) {
            (Some(marker), _) => format!("{marker}{title}"),
            (None, true) => format!("{DRAFT_PREFIX}{title}"),
            (None, false) => title.to_string(),
        };
        if current.title == title && current.description.as_deref().unwrap_or_default() == body {
            tracing::debug!("GitLab: !{number} already has this title and description");
            return Ok(());
        }
        self.put_mr(number, json!({ "title": title, "description": body }))
            .await
    }

    async fn close_pull(&self, number: u64) -> Result<(), Error> {
        self.put_mr(number, json!({ "state_event": "close" })).await
    }

    async fn comment(&self, number: u64, body: &str) -> Result<(), Error> {
        let url = self.project_url(&format!("/merge_requests/{number}/notes"))?;
        let payload = json!({ "body": body });
        self.api
            .send(Method::Post, &url, Some(&payload), &self.mr_what(number))
            .await
            .map(drop)
    }

    async fn add_labels(&self, number: u64, labels: &[String]) -> Result<(), Error> {
        let mut names: Vec<&str> = Vec::new();
        for label in labels.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
            if label.contains(',') {
                // GitLab splits `add_labels` at commas.
                tracing::warn!("GitLab: label {label:?} holds a comma; skipped");
            } else if !names.contains(&label) {
                names.push(label);
            }
        }
        if names.is_empty() {
            return Ok(());
        }
        self.put_mr(number, json!({ "add_labels": names.join(",") }))
            .await
    }

    async fn request_reviewers(&self, number: u64, reviewers: &[String]) -> Result<(), Error> {
        let mut users = Vec::new();
        for reviewer in reviewers {
            let name = reviewer.trim().trim_start_matches('@');
            if name.contains('/') {
                tracing::warn!(
                    "GitLab: {name} is a group; GitLab takes only users as reviewers \
                     (approval rules are set in the project); skipped"
                );
            } else if !name.is_empty() {
                users.push(name);
            }
        }
        self.add_people(number, &users, Role::Reviewer).await
    }

    async fn add_assignees(&self, number: u64, assignees: &[String]) -> Result<(), Error> {
        let users: Vec<&str> = assignees
            .iter()
            .map(|a| a.trim().trim_start_matches('@'))
            .filter(|a| !a.is_empty())
            .collect();
        self.add_people(number, &users, Role::Assignee).await
    }

    async fn open_issues_by(&self, author: &str) -> Result<Vec<crate::Issue>, Error> {
        self.issues_by(author).await
    }

    async fn create_issue(&self, title: &str, body: &str) -> Result<crate::Issue, Error> {
        self.open_issue(title, body).await
    }

    async fn update_issue(&self, number: u64, title: &str, body: &str) -> Result<(), Error> {
        self.edit_issue(number, title, body).await
    }

    async fn issue_editors(&self, number: u64, own: &str) -> Result<crate::Editor, Error> {
        self.editors_of(number, own).await
    }

    async fn can_write(&self, login: &str) -> Result<bool, Error> {
        self.writer(login).await
    }

    /// `PUT …/merge` with `auto_merge` (GitLab 17.11 and later) and the older
    /// `merge_when_pipeline_succeeds` it replaces, so that both old and new GitLab set it.
    /// GitLab merges at once when the pipeline already succeeded. Rebase is a project
    /// setting (its merge method), so only squash is asked for here.
    async fn enable_automerge(&self, pull: &Pull, method: MergeMethod) -> Result<(), Error> {
        if pull.automerge == Some(true) {
            return Ok(());
        }
        let url = self.project_url(&format!("/merge_requests/{}/merge", pull.number))?;
        let payload = json!({
            "auto_merge": true,
            "merge_when_pipeline_succeeds": true,
            "squash": method == MergeMethod::Squash,
        });
        self.api
            .send(
                Method::Put,
                &url,
                Some(&payload),
                &self.mr_what(pull.number),
            )
            .await
            .map(drop)
    }
}

/// The draft marker a title starts with, with the spaces after it (`"Draft: "`, `"[Draft]"`,
/// `"Draft: [WIP] "`), as GitLab reads it.
fn draft_marker(title: &str) -> Option<&str> {
    let mut rest = title;
    loop {
        let trimmed = rest.trim_start();
        let after = DRAFT_MARKERS.iter().find_map(|marker| {
            let head = trimmed.get(..marker.len())?;
            let after = trimmed.get(marker.len()..)?;
            head.eq_ignore_ascii_case(marker).then_some(after)
        });
        match after {
            Some(after) => rest = after,
            None => break,
        }
    }
    if rest.len() == title.len() {
        return None;
    }
    // `rest` is a tail of `title`, and so is what follows its blanks.
    title.strip_suffix(rest.trim_start())
}

// ---------------------------------------------------------------------------------------------
// requests
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Get,
    Post,
    Put,
}

impl Method {
    fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
        }
    }

    fn as_reqwest(self) -> imagebump_http::Method {
        match self {
            Method::Get => imagebump_http::Method::GET,
            Method::Post => imagebump_http::Method::POST,
            Method::Put => imagebump_http::Method::PUT,
        }
    }
}

/// The transport and what every request carries.
struct Api {
    transport: Transport,
    /// The API base URL, with a trailing `/`.
    base: Url,
    /// The credential header, marked sensitive.
    auth: (HeaderName, HeaderValue),
    /// The token itself: for git.
    token: SecretString,
    /// Knows the token, to keep it out of messages.
    redactor: Redactor,
    /// Said with a 401.
    hint: String,
}

/// A successful response, read.
struct Reply {
    body: String,
    /// The next page of a listing.
    next: Option<Url>,
}

impl Api {
    /// Sends a request through the transport's one retry loop (a 429 for any method; a 5xx
    /// or a transport failure for GET and PUT only).
    async fn send(
        &self,
        method: Method,
        url: &Url,
        body: Option<&Value>,
        what: &str,
    ) -> Result<Reply, Error> {
        tracing::debug!("GitLab: {} {}", method.as_str(), url.path());
        let mut request = Request::new(method.as_reqwest(), url.clone())
            .secret_header(self.auth.0.clone(), self.auth.1.clone());
        if let Some(body) = body {
            request = request.json(body);
        }
        let dialect = GitLabDialect { api: self, what };
        let response = self.transport.send(&dialect, &request).await?;
        let next = self.next_page(url, &response.headers)?;
        Ok(Reply {
            body: response.text(),
            next,
        })
    }

    /// The next page: `x-next-page` (empty on the last page) applied to this URL, else the
    /// `Link` header's `rel="next"`, which must stay below the API base (the token goes to the
    /// configured API only).
    fn next_page(&self, url: &Url, headers: &HeaderMap) -> Result<Option<Url>, Error> {
        if let Some(page) = header(headers, "x-next-page") {
            let page = page.trim();
            return Ok(match page.parse::<u64>() {
                Ok(page) => Some(with_page(url, page)),
                Err(_) => None,
            });
        }
        let Some(next) = imagebump_http::next_link(headers, &self.base) else {
            return Ok(None);
        };
        if next.origin() != self.base.origin() || !next.path().starts_with(self.base.path()) {
            return Err(Error::Transport {
                message: format!(
                    "GitLab sent a pagination link outside its API ({})",
                    self.redactor.apply(next.as_str())
                ),
                retryable: false,
            });
        }
        Ok(Some(next))
    }
}

/// GitLab as the transport sees it: its rate-limit headers and its errors.
struct GitLabDialect<'a> {
    api: &'a Api,
    what: &'a str,
}

impl Dialect for GitLabDialect<'_> {
    type Error = Error;

    /// A 429 asks for `Retry-After`, else the time until `RateLimit-Reset`.
    fn rate_limited(&self, response: &Response) -> Option<Option<Duration>> {
        (response.status.as_u16() == 429).then(|| rate_limit_wait(&response.headers))
    }

    fn classify(&self, error: imagebump_http::Error) -> Error {
        use imagebump_http::Error as E;
        let error = match error {
            E::RateLimited { retry_after, .. } => Error::RateLimited {
                retry_after: retry_after.or(Some(DEFAULT_RATE_LIMIT_WAIT)),
            },
            E::Server { response, .. } | E::Status { response, .. } => classify(
                response.status.as_u16(),
                |name| header(&response.headers, name),
                &response.text(),
                &self.api.hint,
                self.what,
            ),
            E::TooLarge { limit, .. } => Error::Transport {
                message: format!("GitLab answered with more than {limit} bytes"),
                retryable: false,
            },
            other => Error::Transport {
                message: format!("cannot reach GitLab: {other}"),
                retryable: other.is_retryable(),
            },
        };
        crate::redacted(error, &self.api.redactor)
    }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// `url` with its `page` query parameter set to `page`.
fn with_page(url: &Url, page: u64) -> Url {
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(key, _)| key != "page")
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect();
    let mut next = url.clone();
    next.query_pairs_mut()
        .clear()
        .extend_pairs(pairs)
        .append_pair("page", &page.to_string());
    next
}

/// The error for an unsuccessful status. `header` reads a response header.
fn classify(
    status: u16,
    header: impl Fn(&str) -> Option<String>,
    body: &str,
    hint: &str,
    what: &str,
) -> Error {
    let message = error_message(body);
    match status {
        429 => Error::RateLimited {
            retry_after: header("retry-after")
                .and_then(|v| {
                    imagebump_http::headers::parse_retry_after(&v, std::time::SystemTime::now())
                })
                .or(Some(DEFAULT_RATE_LIMIT_WAIT)),
        },
        401 => Error::Unauthorized {
            // "401 Unauthorized" says nothing; "Token is expired..." does.
            hint: if message.is_empty() || message.starts_with("401") {
                hint.to_string()
            } else {
                format!("GitLab says: {message}; {hint}")
            },
        },
        403 => Error::Forbidden {
            message: format!(
                "{} ({what}); the token needs the api scope and at least the Developer role",
                if message.is_empty() {
                    "access refused"
                } else {
                    &message
                }
            ),
        },
        404 => Error::NotFound {
            what: what.to_string(),
        },
        300..=399 => Error::Status {
            status,
            message: format!(
                "the GitLab API URL redirects to {}; configure that address instead \
                 (redirects are not followed)",
                header("location").unwrap_or_else(|| "another address".to_string())
            ),
        },
        _ => Error::Status {
            status,
            message: if message.is_empty() {
                "no explanation given".to_string()
            } else {
                message
            },
        },
    }
}

/// `Retry-After` (seconds or an HTTP date), else `RateLimit-Reset` (a Unix time).
fn rate_limit_wait(headers: &HeaderMap) -> Option<Duration> {
    imagebump_http::retry_after(headers)
        .or_else(|| imagebump_http::rate_limit(headers).and_then(|r| r.reset_in))
}

/// GitLab's explanation from an error body: `message` (a string, a list, or fields with their
/// problems: `title: can't be blank`), `error` and `error_description` (OAuth, missing
/// parameters); the start of a body that is not JSON.
fn error_message(body: &str) -> String {
    fn flatten(value: &Value) -> String {
        match value {
            Value::String(text) => text.clone(),
            Value::Array(items) => items.iter().map(flatten).collect::<Vec<_>>().join("; "),
            Value::Object(fields) => fields
                .iter()
                .map(|(field, problem)| format!("{field}: {}", flatten(problem)))
                .collect::<Vec<_>>()
                .join("; "),
            Value::Null => String::new(),
            other => other.to_string(),
        }
    }
    match serde_json::from_str::<Value>(body) {
        Ok(value @ Value::Object(_)) => ["message", "error", "error_description"]
            .iter()
            .filter_map(|key| value.get(key).map(flatten))
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>()
            .join(": "),
        _ => body.trim().chars().take(200).collect(),
    }
}

fn parse<T: serde::de::DeserializeOwned>(
    body: &str,
    method: Method,
    url: &Url,
) -> Result<T, Error> {
    serde_json::from_str(body).map_err(|e| Error::Transport {
        message: format!(
            "unexpected response from GitLab to {} {}: {e}",
            method.as_str(),
            url.path()
        ),
        retryable: false,
    })
}

// ---------------------------------------------------------------------------------------------
// settings
// ---------------------------------------------------------------------------------------------

/// A numeric project id, or a project path: `/`-separated names of letters, digits, `_`,
/// `-` and `.` (GitLab's rule). Returned without surrounding spaces and slashes.
fn check_project(project: &str) -> Result<String, Error> {
    let trimmed = project.trim().trim_matches('/');
    let valid = !trimmed.is_empty()
        && (trimmed.bytes().all(|b| b.is_ascii_digit())
            || trimmed.contains('/') && trimmed.split('/').all(is_path_segment));
    if valid {
        Ok(trimmed.to_string())
    } else {
        Err(Error::Config(format!(
            "invalid GitLab project {project:?}: give its path (group/project, \
             group/subgroup/project) or its numeric id"
        )))
    }
}

fn is_path_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment != "."
        && segment != ".."
        && segment
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Percent-encodes all but RFC 3986's unreserved characters: `group/sub` → `group%2Fsub`.
fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The REST API v4 URL of a GitLab host (`gitlab.com`, `gitlab.example.com:8443`):
/// `https://{host}/api/v4`.
pub fn api_url_for_host(host: &str) -> String {
    format!("https://{}/api/v4", host.trim().trim_end_matches('/'))
}

/// The project path (`group/sub/project`) of a git remote URL: `https://host/group/sub/project
/// (.git)`, `git@host:group/project.git`, `ssh://git@host(:port)/group/project.git`; a
/// browser address (`…/project/-/merge_requests`) works too. `None` when it is not a
/// `host/group/…/project` remote. On an instance served below a path
/// (`https://host/gitlab/…`) that path is taken as the top group: configure the project.
pub fn project_from_url(remote: &str) -> Option<String> {
    parse_remote(remote).map(|(_, project)| project)
}

/// (host, project path) of a git remote URL, as [`project_from_url`] reads it. The host keeps
/// an HTTP(S) port (the API is on the same port) and drops an SSH one; credentials in the URL
/// are ignored. For [`api_url_for_host`].
pub fn parse_remote(remote: &str) -> Option<(String, String)> {
    let remote = remote.trim();
    let (host, path) = if let Some((scheme, rest)) = remote.split_once("://") {
        let scheme = scheme.to_ascii_lowercase();
        let (authority, path) = rest.split_once('/')?;
        let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = match scheme.as_str() {
            "https" | "http" => authority,
            "ssh" | "git" | "git+ssh" | "ssh+git" => crate::strip_port(authority),
            _ => return None,
        };
        (host, path)
    } else {
        // scp-like: [user@]host:group/project(.git)
        let (authority, path) = remote.split_once(':')?;
        if authority.contains('/') || path.starts_with('/') {
            return None;
        }
        (
            authority.rsplit_once('@').map_or(authority, |(_, h)| h),
            path,
        )
    };
    if host.is_empty() || host.contains(char::is_whitespace) {
        return None;
    }
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let path = path.split("/-/").next().unwrap_or_default();
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    if !path.contains('/') || !path.split('/').all(is_path_segment) {
        return None;
    }
    Some((host.to_ascii_lowercase(), path.to_string()))
}

// ---------------------------------------------------------------------------------------------
// response bodies
// ---------------------------------------------------------------------------------------------

#[derive(Deserialize)]
struct MrJson {
    iid: u64,
    source_project_id: Option<u64>,
    target_project_id: Option<u64>,
    source_branch: String,
    target_branch: String,
    #[serde(default)]
    title: String,
    description: Option<String>,
    state: String,
    #[serde(default)]
    web_url: String,
    #[serde(default)]
    labels: Vec<LabelJson>,
    draft: Option<bool>,
    /// Before GitLab 13.2 (deprecated since).
    work_in_progress: Option<bool>,
    updated_at: Option<String>,
    assignees: Option<Vec<UserRef>>,
    /// Before GitLab 11.x knew several assignees.
    assignee: Option<UserRef>,
    reviewers: Option<Vec<UserRef>>,
    /// Auto-merge is set ("merge when pipeline succeeds").
    #[serde(default)]
    merge_when_pipeline_succeeds: Option<bool>,
    /// Who opened it.
    author: Option<UserRef>,
}

/// A label name, or with `with_labels_details=true` an object.
#[derive(Deserialize)]
#[serde(untagged)]
enum LabelJson {
    Name(String),
    Detailed { name: String },
}

#[derive(Deserialize)]
struct UserRef {
    id: u64,
    #[serde(default)]
    username: String,
}

/// A project's visibility (`GET /projects/:id`).
#[derive(Deserialize)]
struct ProjectJson {
    id: u64,
    path_with_namespace: String,
    #[serde(default)]
    visibility: Option<String>,
    /// `enabled` (everyone who sees the project), `private` (members) or `disabled`;
    /// GitLab writes it for those allowed to see the project's settings.
    #[serde(default)]
    releases_access_level: Option<String>,
}

impl ProjectJson {
    /// This project (`this`: its path or numeric id as configured), else public only when
    /// `visibility` says so and releases are not kept to members.
    fn audience(&self, this: &str) -> crate::Audience {
        if self.path_with_namespace.eq_ignore_ascii_case(this) || self.id.to_string() == this {
            crate::Audience::ThisRepository
        } else if self.visibility.as_deref() == Some("public")
            && self
                .releases_access_level
                .as_deref()
                .is_none_or(|l| l == "enabled")
        {
            crate::Audience::Public
        } else {
            crate::Audience::Restricted
        }
    }
}

#[derive(Deserialize)]
struct UserJson {
    id: u64,
    username: String,
}

impl MrJson {
    /// From a branch of this project (not a fork) starting with `prefix`.
    fn is_ours(&self, prefix: &str) -> bool {
        self.source_branch.starts_with(prefix)
            && self.source_project_id.is_some()
            && self.source_project_id == self.target_project_id
    }

    fn is_draft(&self) -> bool {
        self.draft.or(self.work_in_progress).unwrap_or(false)
    }

    fn reviewer_ids(&self) -> Vec<u64> {
        self.reviewers.iter().flatten().map(|u| u.id).collect()
    }

    fn assignee_ids(&self) -> Vec<u64> {
        match &self.assignees {
            Some(all) => all.iter().map(|u| u.id).collect(),
            None => self.assignee.iter().map(|u| u.id).collect(),
        }
    }

    fn into_pull(self) -> Pull {
        let draft = self.is_draft();
        let state = match self.state.as_str() {
            "merged" => PullState::Merged,
            "opened" | "locked" => PullState::Open,
            _ => PullState::Closed,
        };
        let title = match draft_marker(&self.title).and_then(|m| self.title.get(m.len()..)) {
            Some(unmarked) if draft => unmarked.to_string(),
            _ => self.title,
        };
        Pull {
            number: self.iid,
            branch: self.source_branch,
            base: self.target_branch,
            author: self.author.map(|a| a.username).unwrap_or_default(),
            title,
            body: self.description.unwrap_or_default(),
            state,
            url: self.web_url,
            labels: self
                .labels
                .into_iter()
                .map(|label| match label {
                    LabelJson::Name(name) | LabelJson::Detailed { name } => name,
                })
                .collect(),
            // `assignee` only where `assignees` is missing (it repeats the first one).
            assignees: self
                .assignees
                .unwrap_or_else(|| self.assignee.into_iter().collect())
                .into_iter()
                .map(|a| a.username)
                .filter(|name| !name.is_empty())
                .collect(),
            review_requests: self
                .reviewers
                .into_iter()
                .flatten()
                .map(|r| r.username)
                .filter(|name| !name.is_empty())
                .collect(),
            draft,
            node_id: String::new(),
            automerge: Some(self.merge_when_pipeline_succeeds.unwrap_or(false)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use wiremock::matchers::any;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use super::*;
    // The fake is this module's sibling (`#[cfg(test)] pub mod fake;` next to `pub mod gitlab;`).
    use crate::fake::gitlab::{Call, Credential, FakeGitLab, Fault};

    const PREFIX: &str = "imagebump/";

    #[test]
    fn a_public_project_whose_releases_are_kept_to_members_is_restricted() {
        let audience = |json: &str, this: &str| {
            serde_json::from_str::<ProjectJson>(json)
                .unwrap()
                .audience(this)
        };
        let project = |visibility: &str, releases: &str| {
            format!(
                r#"{{"id":7,"path_with_namespace":"acme/api","visibility":"{visibility}"{releases}}}"#
            )
        };
        let level = |l: &str| format!(r#","releases_access_level":"{l}""#);
        let this = "group/gitops";
        assert_eq!(
            audience(&project("public", ""), this),
            crate::Audience::Public
        );
        let public = project("public", &level("enabled"));
        assert_eq!(audience(&public, this), crate::Audience::Public);
        for (visibility, releases) in [
            ("public", level("private")),
            ("public", level("disabled")),
            ("internal", level("enabled")),
            ("private", String::new()),
        ] {
            let json = project(visibility, &releases);
            assert_eq!(audience(&json, this), crate::Audience::Restricted, "{json}");
        }
        let private = project("private", "");
        assert_eq!(audience(&private, "7"), crate::Audience::ThisRepository);
        assert_eq!(
            audience(&private, "ACME/api"),
            crate::Audience::ThisRepository
        );
        assert_eq!(
            audience(r#"{"id":8,"path_with_namespace":"acme/x"}"#, this),
            crate::Audience::Restricted
        );
    }

    fn secret(text: &str) -> SecretString {
        SecretString::from(text.to_string())
    }

    fn settings(api_url: &str, project: &str, auth: GitLabAuth) -> GitLabSettings {
        GitLabSettings {
            api_url: api_url.to_string(),
            project: project.to_string(),
            auth,
        }
    }

    fn client(fake: &FakeGitLab) -> GitLab {
        GitLab::new(settings(
            &fake.api_url(),
            FakeGitLab::PROJECT_PATH,
            GitLabAuth::PrivateToken(secret(FakeGitLab::TOKEN)),
        ))
        .expect("client")
    }

    fn new_pull(branch: &str, title: &str, body: &str, draft: bool) -> NewPull {
        NewPull {
            draft,
            ..crate::fake::new_pull(branch, title, body)
        }
    }

    fn lines(calls: &[Call]) -> Vec<String> {
        calls.iter().map(Call::line).collect()
    }

    fn statuses(calls: &[Call]) -> Vec<u16> {
        calls.iter().map(|c| c.status).collect()
    }

    fn web_url(iid: u64) -> String {
        format!("https://gitlab.example.com/acme/platform/gitops/-/merge_requests/{iid}")
    }

    /// Every text an error shows: its message, its hint, its debug form.
    fn texts(error: &Error) -> String {
        format!("{error} | {:?} | {error:?}", error.hint())
    }

    #[tokio::test]
    async fn create_then_list_open_ignoring_forks_and_other_branches() {
        let fake = FakeGitLab::start().await;
        let forge = client(&fake);
        assert_eq!(forge.name(), "GitLab");
        fake.add_fork_mr("imagebump/apps-web", "main", "not ours");
        fake.add_mr("feature/login", "main", "Login page", "");

        let created = forge
            .create_pull(&new_pull(
                "imagebump/apps-web",
                "Update web to 1.2.3",
                "table\n<!-- imagebump: {} -->",
                false,
            ))
            .await
            .expect("create");
        let expected = Pull {
            number: 3,
            branch: "imagebump/apps-web".to_string(),
            base: "main".to_string(),
            author: FakeGitLab::BOT.to_string(),
            title: "Update web to 1.2.3".to_string(),
            body: "table\n<!-- imagebump: {} -->".to_string(),
            state: PullState::Open,
            url: web_url(3),
            labels: Vec::new(),
            assignees: Vec::new(),
            review_requests: Vec::new(),
            draft: false,
            node_id: String::new(),
            automerge: Some(false),
        };
        assert_eq!(created, expected);
        let writes = fake.write_calls();
        assert_eq!(
            lines(&writes),
            [format!("POST {}", fake.project_path("/merge_requests"))]
        );
        assert_eq!(
            writes[0].body,
            Some(json!({
                "source_branch": "imagebump/apps-web",
                "target_branch": "main",
                "title": "Update web to 1.2.3",
                "description": "table\n<!-- imagebump: {} -->",
                "remove_source_branch": true
            }))
        );
        assert_eq!(
            writes[0].credential,
            Credential::PrivateToken(FakeGitLab::TOKEN.to_string())
        );

        fake.clear_calls();
        assert_eq!(forge.open_pulls(PREFIX).await.expect("list"), [expected]);
        let calls = fake.calls();
        assert_eq!(
            lines(&calls),
            [format!("GET {}", fake.project_path("/merge_requests"))]
        );
        assert_eq!(calls[0].query_value("state"), Some("opened"));
        assert_eq!(calls[0].query_value("per_page"), Some("100"));
    }

    #[tokio::test]
    async fn a_numeric_project_id_works_too() {
        let fake = FakeGitLab::start().await;
        let forge = GitLab::new(settings(
            &format!("{}/", fake.api_url()),
            &FakeGitLab::PROJECT_ID.to_string(),
            GitLabAuth::PrivateToken(secret(FakeGitLab::TOKEN)),
        ))
        .expect("client");
        fake.add_mr("imagebump/a", "main", "A", "");
        assert_eq!(forge.open_pulls(PREFIX).await.expect("list").len(), 1);
        assert_eq!(
            lines(&fake.calls()),
            ["GET /api/v4/projects/42/merge_requests"]
        );
    }

    #[tokio::test]
    async fn a_draft_is_opened_with_a_title_prefix_and_read_back_without_it() {
        let fake = FakeGitLab::start().await;
        let forge = client(&fake);
        let created = forge
            .create_pull(&new_pull("imagebump/web", "Update web", "body", true))
            .await
            .expect("create");
        assert_eq!(
            fake.write_calls()[0].body.as_ref().map(|b| &b["title"]),
            Some(&json!("Draft: Update web"))
        );
        assert!(fake.pull(1).draft());
        assert_eq!(
            (created.title.as_str(), created.draft),
            ("Update web", true)
        );

        let open = forge.open_pulls(PREFIX).await.expect("list");
        assert_eq!(open, std::slice::from_ref(&created));

        // GitLab before 13.2: `work_in_progress` only.
        fake.use_legacy_draft_field();
        assert_eq!(forge.open_pulls(PREFIX).await.expect("list"), [created]);
    }

    #[tokio::test]
    async fn update_is_a_put_of_title_and_description_keeping_the_draft_marker() {
        let fake = FakeGitLab::start().await;
        let forge = client(&fake);
        let ready = forge
            .create_pull(&new_pull("imagebump/a", "Old a", "old", false))
            .await
            .expect("create");
        let draft = forge
            .create_pull(&new_pull("imagebump/b", "Old b", "old", true))
            .await
            .expect("create");
        fake.clear_calls();

        forge
            .update_pull(ready.number, "New a", "new body")
            .await
            .expect("update");
        let calls = fake.calls();
        let path = fake.project_path("/merge_requests/1");
        assert_eq!(
            lines(&calls),
            [format!("GET {path}"), format!("PUT {path}")]
        );
        assert_eq!(
            calls[1].body,
            Some(json!({ "title": "New a", "description": "new body" }))
        );

        fake.clear_calls();
        forge
            .update_pull(draft.number, "New b", "new body")
            .await
            .expect("update");
        assert_eq!(
            fake.write_calls()[0].body,
            Some(json!({ "title": "Draft: New b", "description": "new body" }))
        );
        assert!(fake.pull(draft.number).draft());

        // A marker a human wrote is kept as written.
        fake.set_title(draft.number, "[Draft] New b");
        fake.clear_calls();
        forge
            .update_pull(draft.number, "Newer b", "new body")
            .await
            .expect("update");
        assert_eq!(
            fake.write_calls()[0].body,
            Some(json!({ "title": "[Draft] Newer b", "description": "new body" }))
        );

        // Someone marked it ready: it stays ready.
        fake.set_title(draft.number, "Newer b");
        forge
            .update_pull(draft.number, "Newest b", "new body")
            .await
            .expect("update");
        assert_eq!(fake.pull(draft.number).title, "Newest b");
        assert!(!fake.pull(draft.number).draft());

        let titles: Vec<(String, bool)> = forge
            .open_pulls(PREFIX)
            .await
            .expect("list")
            .into_iter()
            .map(|p| (p.title, p.draft))
            .collect();
        assert_eq!(
            titles,
            [
                ("New a".to_string(), false),
                ("Newest b".to_string(), false)
            ]
        );
    }

    #[tokio::test]
    async fn a_rerun_reads_back_what_it_wrote_and_writes_nothing() {
        let fake = FakeGitLab::start().await;
        let forge = client(&fake);
        let title = "Update web to 1.2.3";
        let body = "table\n\n<!-- imagebump: {\"v\":1} -->\n";
        forge
            .create_pull(&new_pull("imagebump/web", title, body, true))
            .await
            .expect("create");
        forge
            .update_pull(1, title, body)
            .await
            .expect("first update");
        fake.clear_calls();

        // What the caller compares.
        let open = forge.open_pulls(PREFIX).await.expect("list");
        assert_eq!(
            (open[0].title.as_str(), open[0].body.as_str()),
            (title, body)
        );
        // And an update with the same values writes nothing.
        forge.update_pull(1, title, body).await.expect("update");
        assert_eq!(fake.write_calls(), []);

        fake.set_description(1, None);
        let open = forge.open_pulls(PREFIX).await.expect("list");
        assert_eq!(open[0].body, "");
    }

    #[tokio::test]
    async fn close_and_comment() {
        let fake = FakeGitLab::start().await;
        let forge = client(&fake);
        let iid = fake.add_mr("imagebump/a", "main", "A", "");
        forge
            .comment(iid, "Closing: done elsewhere.")
            .await
            .expect("comment");
        forge.close_pull(iid).await.expect("close");
        let writes = fake.write_calls();
        assert_eq!(
            lines(&writes),
            [
                format!("POST {}", fake.project_path("/merge_requests/1/notes")),
                format!("PUT {}", fake.project_path("/merge_requests/1")),
            ]
        );
        assert_eq!(
            writes[0].body,
            Some(json!({ "body": "Closing: done elsewhere." }))
        );
        assert_eq!(writes[1].body, Some(json!({ "state_event": "close" })));
        assert_eq!(fake.pull(iid).notes, ["Closing: done elsewhere."]);

        assert_eq!(forge.open_pulls(PREFIX).await.expect("open"), []);
        let closed = forge.closed_pulls(PREFIX, 5).await.expect("closed");
        assert_eq!(
            closed
                .iter()
                .map(|p| (p.number, p.state))
                .collect::<Vec<_>>(),
            [(iid, PullState::Closed)]
        );
    }

    #[tokio::test]
    async fn closed_and_merged_newest_first_at_most_limit() {
        let fake = FakeGitLab::start().await;
        let forge = client(&fake);
        let a = fake.add_mr("imagebump/a", "main", "A", "");
        let b = fake.add_mr("imagebump/b", "main", "B", "");
        let c = fake.add_mr("imagebump/c", "main", "C", "");
        let d = fake.add_mr("imagebump/d", "main", "D", "");
        let human = fake.add_mr("feature/x", "main", "X", "");
        let fork = fake.add_fork_mr("imagebump/a", "main", "fork");
        fake.add_mr("imagebump/open", "main", "still open", "");
        fake.close(b);
        fake.merge(a);
        fake.close(d);
        fake.merge(c);
        fake.close(human);
        fake.merge(fork);

        let all = forge.closed_pulls(PREFIX, 10).await.expect("closed");
        let summary: Vec<(u64, PullState)> = all.iter().map(|p| (p.number, p.state)).collect();
        assert_eq!(
            summary,
            [
                (c, PullState::Merged),
                (d, PullState::Closed),
                (a, PullState::Merged),
                (b, PullState::Closed),
            ]
        );
        let calls = fake.calls();
        assert_eq!(
            calls
                .iter()
                .map(|c| (
                    c.query_value("state"),
                    c.query_value("order_by"),
                    c.query_value("sort")
                ))
                .collect::<Vec<_>>(),
            [
                (Some("merged"), Some("updated_at"), Some("desc")),
                (Some("closed"), Some("updated_at"), Some("desc")),
            ]
        );

        let two = forge.closed_pulls(PREFIX, 2).await.expect("closed");
        assert_eq!(two.iter().map(|p| p.number).collect::<Vec<_>>(), [c, d]);

        fake.clear_calls();
        assert_eq!(forge.closed_pulls(PREFIX, 0).await.expect("closed"), []);
        assert_eq!(fake.calls(), []);
    }

    #[tokio::test]
    async fn labels_are_one_put_and_empty_lists_make_no_request() {
        let fake = FakeGitLab::start().await;
        let forge = client(&fake);
        let iid = fake.add_mr("imagebump/a", "main", "A", "");
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();

        forge.add_labels(iid, &[]).await.expect("labels");
        forge.request_reviewers(iid, &[]).await.expect("reviewers");
        forge
            .add_assignees(iid, &names(&["", "@"]))
            .await
            .expect("assignees");
        forge
            .request_reviewers(iid, &names(&["acme/platform-team"]))
            .await
            .expect("group reviewers only");
        assert_eq!(fake.calls(), []);

        forge
            .add_labels(
                iid,
                &names(&["dependencies", " images ", "dependencies", ""]),
            )
            .await
            .expect("labels");
        let writes = fake.write_calls();
        assert_eq!(
            lines(&writes),
            [format!("PUT {}", fake.project_path("/merge_requests/1"))]
        );
        assert_eq!(
            writes[0].body,
            Some(json!({ "add_labels": "dependencies,images" }))
        );
        assert_eq!(fake.pull(iid).labels, ["dependencies", "images"]);
        let open = forge.open_pulls(PREFIX).await.expect("list");
        assert_eq!(open[0].labels, ["dependencies", "images"]);
    }

    #[tokio::test]
    async fn reviewers_are_user_ids_added_to_the_existing_ones_and_groups_are_skipped() {
        let fake = FakeGitLab::start().await;
        let forge = client(&fake);
        let iid = fake.add_mr("imagebump/a", "main", "A", "");
        let carol = fake.user_id("carol");
        fake.set_people(iid, &[], &[carol]);
        let reviewers: Vec<String> = ["alice", "@bob", "acme/platform-team", "@acme/sre", "ALICE"]
            .iter()
            .map(|s| s.to_string())
            .collect();

        forge
            .request_reviewers(iid, &reviewers)
            .await
            .expect("reviewers");
        let calls = fake.calls();
        let mr = fake.project_path("/merge_requests/1");
        assert_eq!(
            lines(&calls),
            [
                "GET /api/v4/users".to_string(),
                "GET /api/v4/users".to_string(),
                format!("GET {mr}"),
                format!("PUT {mr}"),
            ]
        );
        assert_eq!(calls[0].query_value("username"), Some("alice"));
        assert_eq!(calls[1].query_value("username"), Some("bob"));
        let (alice, bob) = (fake.user_id("alice"), fake.user_id("bob"));
        assert_eq!(
            calls[3].body,
            Some(json!({ "reviewer_ids": [carol, alice, bob] }))
        );
        assert_eq!(fake.pull(iid).reviewer_ids, [carol, alice, bob]);

        // Again: the ids are known, nobody is new, nothing is written.
        fake.clear_calls();
        forge
            .request_reviewers(iid, &reviewers)
            .await
            .expect("reviewers");
        assert_eq!(lines(&fake.calls()), [format!("GET {mr}")]);
    }

    #[tokio::test]
    async fn an_unknown_user_is_reported_after_the_known_ones_are_added() {
        let fake = FakeGitLab::start().await;
        let forge = client(&fake);
        let iid = fake.add_mr("imagebump/a", "main", "A", "");
        let error = forge
            .request_reviewers(iid, &["alice".to_string(), "nobody".to_string()])
            .await
            .expect_err("nobody is unknown");
        match &error {
            Error::NotFound { what } => assert!(what.contains("@nobody"), "{what}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(fake.pull(iid).reviewer_ids, [fake.user_id("alice")]);

        // Only unknown users: no write at all.
        fake.clear_calls();
        let error = forge
            .add_assignees(iid, &["nobody".to_string()])
            .await
            .expect_err("nobody is unknown");
        assert!(matches!(error, Error::NotFound { .. }), "{error:?}");
        assert_eq!(fake.calls(), [], "the lookup was remembered");
    }

    #[tokio::test]
    async fn assignees_are_added_to_the_existing_ones() {
        let fake = FakeGitLab::start().await;
        let forge = client(&fake);
        let iid = fake.add_mr("imagebump/a", "main", "A", "");
        let bob = fake.user_id("bob");
        fake.set_people(iid, &[bob], &[]);
        let assignees = ["@alice".to_string(), "bob".to_string()];

        forge.add_assignees(iid, &assignees).await.expect("assign");
        let alice = fake.user_id("alice");
        let writes = fake.write_calls();
        assert_eq!(writes.len(), 1);
        assert_eq!(
            writes[0].body,
            Some(json!({ "assignee_ids": [bob, alice] }))
        );
        assert_eq!(fake.pull(iid).assignee_ids, [bob, alice]);

        fake.clear_calls();
        forge.add_assignees(iid, &assignees).await.expect("assign");
        assert_eq!(fake.write_calls(), []);
    }

    #[tokio::test]
    async fn open_pulls_reads_every_page() {
        let fake = FakeGitLab::start().await;
        let forge = client(&fake);
        for i in 0..250 {
            fake.add_mr(&format!("imagebump/app-{i:03}"), "main", "x", "");
        }
        fake.add_fork_mr("imagebump/app-000", "main", "fork");
        let open = forge.open_pulls(PREFIX).await.expect("list");
        assert_eq!(open.len(), 250);
        assert_eq!(
            open.iter().map(|p| p.number).collect::<Vec<_>>(),
            (1..=250).collect::<Vec<u64>>()
        );
        let pages: Vec<Option<String>> = fake
            .calls()
            .iter()
            .map(|c| c.query_value("page").map(str::to_string))
            .collect();
        assert_eq!(pages, [None, Some("2".to_string()), Some("3".to_string())]);

        // Without `x-next-page`: the `Link` header.
        fake.use_link_pagination_only();
        fake.clear_calls();
        assert_eq!(forge.open_pulls(PREFIX).await.expect("list"), open);
        assert_eq!(fake.calls().len(), 3);
    }

    #[tokio::test]
    async fn a_refused_token_is_unauthorized_with_a_hint_and_never_shown() {
        let fake = FakeGitLab::start().await;
        let token = "glpat-wrong-but-secret-1234567890";
        let forge = GitLab::new(settings(
            &fake.api_url(),
            FakeGitLab::PROJECT_PATH,
            GitLabAuth::PrivateToken(secret(token)),
        ))
        .expect("client");
        let error = forge.open_pulls(PREFIX).await.expect_err("refused");
        match &error {
            Error::Unauthorized { hint } => {
                assert!(hint.contains("api scope"), "{hint}");
                assert!(hint.contains("Developer"), "{hint}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!texts(&error).contains(token));
        assert!(!format!("{forge:?}").contains(token));
        assert_eq!(fake.calls().len(), 1, "a 401 is not retried");
    }

    #[tokio::test]
    async fn a_job_token_reads_but_cannot_write() {
        let fake = FakeGitLab::start().await;
        let forge = GitLab::new(settings(
            &fake.api_url(),
            FakeGitLab::PROJECT_PATH,
            GitLabAuth::JobToken(secret(FakeGitLab::JOB_TOKEN)),
        ))
        .expect("client");
        fake.add_mr("imagebump/a", "main", "A", "");
        assert_eq!(forge.open_pulls(PREFIX).await.expect("list").len(), 1);
        let error = forge
            .create_pull(&new_pull("imagebump/b", "B", "", false))
            .await
            .expect_err("job tokens cannot create");
        match &error {
            Error::Unauthorized { hint } => assert!(hint.contains("CI_JOB_TOKEN"), "{hint}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            fake.write_calls()[0].credential,
            Credential::JobToken(FakeGitLab::JOB_TOKEN.to_string())
        );
        assert_eq!(
            forge.git_credentials().0,
            "gitlab-ci-token",
            "git over HTTPS takes a job token with this user"
        );
    }

    #[tokio::test]
    async fn an_oauth_token_is_a_bearer() {
        let fake = FakeGitLab::start().await;
        let forge = GitLab::new(settings(
            &fake.api_url(),
            FakeGitLab::PROJECT_PATH,
            GitLabAuth::OAuth(secret(&format!("{}\n", FakeGitLab::TOKEN))),
        ))
        .expect("client");
        forge
            .create_pull(&new_pull("imagebump/b", "B", "", false))
            .await
            .expect("create");
        assert_eq!(
            fake.calls()[0].credential,
            Credential::Bearer(FakeGitLab::TOKEN.to_string())
        );
        assert_eq!(forge.git_credentials().0, "oauth2");
    }

    #[tokio::test]
    async fn forbidden_not_found_and_conflict() {
        let fake = FakeGitLab::start().await;
        let forge = client(&fake);

        fake.fail_next(403);
        let error = forge.open_pulls(PREFIX).await.expect_err("403");
        match &error {
            Error::Forbidden { message } => {
                assert!(message.contains("403 Forbidden"), "{message}");
                assert!(message.contains("acme/platform/gitops"), "{message}");
            }
            other => panic!("{other:?}"),
        }

        let other = GitLab::new(settings(
            &fake.api_url(),
            "acme/other",
            GitLabAuth::PrivateToken(secret(FakeGitLab::TOKEN)),
        ))
        .expect("client");
        let error = other.open_pulls(PREFIX).await.expect_err("404");
        assert!(
            matches!(&error, Error::NotFound { what } if what.contains("acme/other")),
            "{error:?}"
        );
        let error = forge.update_pull(99, "t", "b").await.expect_err("404");
        assert!(
            matches!(&error, Error::NotFound { what } if what.contains("!99")),
            "{error:?}"
        );

        let new = new_pull("imagebump/a", "A", "", false);
        forge.create_pull(&new).await.expect("first");
        let error = forge.create_pull(&new).await.expect_err("409");
        match &error {
            Error::Status { status, message } => {
                assert_eq!(*status, 409);
                assert_eq!(
                    message,
                    "Another open merge request already exists for this source branch: !1"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(!error.is_retryable());
    }

    #[tokio::test]
    async fn a_short_rate_limit_is_waited_out_and_a_long_one_reported() {
        let fake = FakeGitLab::start().await;
        let forge = client(&fake);
        fake.add_mr("imagebump/a", "main", "A", "");

        fake.fail_next_with(Some("GET"), 1, Fault::TooManyRequests { retry_after: 1 });
        let started = Instant::now();
        assert_eq!(forge.open_pulls(PREFIX).await.expect("list").len(), 1);
        assert!(started.elapsed() >= Duration::from_secs(1));
        assert_eq!(statuses(&fake.calls()), [429, 200]);

        // A rate limit is retried for a POST too: GitLab did not act on it.
        fake.clear_calls();
        fake.fail_next_with(Some("POST"), 1, Fault::TooManyRequests { retry_after: 0 });
        forge
            .create_pull(&new_pull("imagebump/b", "B", "", false))
            .await
            .expect("create");
        assert_eq!(statuses(&fake.calls()), [429, 201]);

        fake.clear_calls();
        fake.fail_next_with(None, 1, Fault::TooManyRequests { retry_after: 3600 });
        let error = forge.open_pulls(PREFIX).await.expect_err("long wait");
        assert!(
            matches!(error, Error::RateLimited { retry_after: Some(wait) } if wait == Duration::from_secs(3600)),
            "{error:?}"
        );
        assert_eq!(fake.calls().len(), 1);

        // A bare 429 is retried after a backoff, as everywhere (the transport's rule).
        fake.clear_calls();
        fake.fail_next(429);
        assert_eq!(forge.open_pulls(PREFIX).await.expect("list").len(), 2);
        assert_eq!(statuses(&fake.calls()), [429, 200]);
    }

    #[tokio::test]
    async fn server_errors_retry_reads_and_puts_but_never_a_post() {
        let fake = FakeGitLab::start().await;
        let forge = client(&fake);
        let iid = fake.add_mr("imagebump/a", "main", "A", "");

        fake.fail_next(500);
        assert_eq!(forge.open_pulls(PREFIX).await.expect("list").len(), 1);
        assert_eq!(statuses(&fake.calls()), [500, 200]);

        fake.clear_calls();
        fake.fail_next_with(Some("PUT"), 1, Fault::Status(502));
        forge.close_pull(iid).await.expect("close");
        assert_eq!(statuses(&fake.calls()), [502, 200]);

        fake.clear_calls();
        fake.fail_next_with(Some("POST"), 1, Fault::Status(500));
        let error = forge
            .create_pull(&new_pull("imagebump/b", "B", "", false))
            .await
            .expect_err("500");
        assert!(
            matches!(&error, Error::Status { status: 500, message } if message == "500 Internal Server Error"),
            "{error:?}"
        );
        assert!(error.is_retryable(), "the caller may run again later");
        assert_eq!(
            lines(&fake.calls()),
            [format!("POST {}", fake.project_path("/merge_requests"))]
        );
        assert_eq!(fake.pulls().len(), 1);

        fake.clear_calls();
        fake.fail_next_with(Some("POST"), 1, Fault::Status(503));
        forge.comment(iid, "hello").await.expect_err("503");
        assert_eq!(statuses(&fake.calls()), [503]);
        assert_eq!(fake.pull(iid).notes, Vec::<String>::new());
    }

    /// The error creating a merge request gets when every request is answered `response`.
    async fn error_from(response: ResponseTemplate, auth: GitLabAuth) -> Error {
        let server = MockServer::start().await;
        Mock::given(any())
            .respond_with(response)
            .mount(&server)
            .await;
        let api_url = format!("{}/api/v4", server.uri());
        let forge = GitLab::new(settings(&api_url, "g/p", auth)).expect("client");
        forge
            .create_pull(&new_pull("imagebump/a", "A", "", false))
            .await
            .expect_err("refused")
    }

    #[tokio::test]
    async fn no_error_shows_the_token_even_when_the_server_echoes_it() {
        let token = "glpat-Secret0123456789abcd";
        let echo = json!({ "message": format!("token {token} refused") });
        let scenarios = [
            (
                ResponseTemplate::new(422).set_body_json(&echo),
                "HTTP 422: token <redacted> refused",
            ),
            (
                ResponseTemplate::new(401).set_body_json(json!({
                    "error": "invalid_token",
                    "error_description": format!("Token {token} is expired.")
                })),
                "GitLab says: invalid_token: Token <redacted> is expired.",
            ),
            (
                ResponseTemplate::new(302).insert_header(
                    "location",
                    format!("https://elsewhere.example/?private_token={token}").as_str(),
                ),
                "redirects to https://elsewhere.example/?private_token=<redacted>",
            ),
            (
                ResponseTemplate::new(403).set_body_json(&echo),
                "forbidden: token <redacted> refused",
            ),
            (
                ResponseTemplate::new(502)
                    .set_body_string(format!("<html>bad gateway {token}</html>")),
                "HTTP 502: <html>bad gateway <redacted></html>",
            ),
        ];
        for (response, expected) in scenarios {
            for auth in [
                GitLabAuth::PrivateToken(secret(token)),
                GitLabAuth::JobToken(secret(token)),
                GitLabAuth::OAuth(secret(token)),
            ] {
                let text = texts(&error_from(response.clone(), auth).await);
                assert!(!text.contains(token), "{text}");
                assert!(text.contains(expected), "{text}");
            }
        }
    }

    #[tokio::test]
    async fn a_redirect_is_not_followed() {
        let elsewhere = MockServer::start().await;
        Mock::given(any())
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
            .mount(&elsewhere)
            .await;
        let moved = ResponseTemplate::new(301).insert_header(
            "location",
            format!("{}/api/v4/projects/g%2Fp/merge_requests", elsewhere.uri()).as_str(),
        );
        let error = error_from(moved, GitLabAuth::PrivateToken(secret(FakeGitLab::TOKEN))).await;
        assert!(
            matches!(&error, Error::Status { status: 301, message } if message.contains(&elsewhere.uri())),
            "{error:?}"
        );
        assert_eq!(
            elsewhere.received_requests().await.map(|r| r.len()),
            Some(0)
        );
    }

    #[test]
    fn settings_are_checked_and_never_show_the_token() {
        let token = "glpat-Secret0123456789abcd";
        let make = |api_url: &str, project: &str, token: &str| {
            GitLab::new(settings(
                api_url,
                project,
                GitLabAuth::PrivateToken(secret(token)),
            ))
        };
        let config = |result: Result<GitLab, Error>| match result {
            Err(Error::Config(message)) => message,
            other => panic!("{other:?}"),
        };
        let api = "https://gitlab.example.com/api/v4";
        let message = config(make(
            &format!("https://oauth2:{token}@gitlab.example.com/api/v4"),
            "g/p",
            token,
        ));
        assert!(!message.contains(token), "{message}");
        assert!(config(make("ftp://gitlab.example.com", "g/p", token)).contains("https"));
        assert!(
            config(make("https://gitlab.example.com/api/v4?x=1", "g/p", token)).contains("query")
        );
        for project in [
            "",
            "acme",
            "a//b",
            "../x/y",
            "group/pro ject",
            "g%2Fp",
            "-1",
        ] {
            let message = config(make(api, project, token));
            assert!(
                message.contains("invalid GitLab project"),
                "{project}: {message}"
            );
        }
        assert!(make(api, " /acme/platform/gitops/ ", token).is_ok());
        assert!(make(api, "12345", token).is_ok());
        assert!(matches!(
            make(api, "g/p", " \n"),
            Err(Error::Unauthorized { .. })
        ));
        assert!(config(make(api, "g/p", "glpat-a b")).contains("spaces"));

        let shown = format!(
            "{:?}",
            settings(api, "g/p", GitLabAuth::JobToken(secret(token)))
        );
        assert_eq!(
            shown,
            "GitLabSettings { api_url: \"https://gitlab.example.com/api/v4\", project: \"g/p\", auth: JobToken(<redacted>) }"
        );
        let forge = make(api, "g/p", &format!("{token}\n")).expect("client");
        assert!(!format!("{forge:?}").contains(token));
        let (user, git_token) = forge.git_credentials();
        assert_eq!((user, git_token.expose_secret()), ("oauth2", token));
    }

    #[test]
    fn project_paths_are_url_encoded() {
        assert_eq!(
            encode_component("acme/platform/gitops"),
            "acme%2Fplatform%2Fgitops"
        );
        assert_eq!(encode_component("a.b-c_d~e"), "a.b-c_d~e");
        assert_eq!(encode_component("a b"), "a%20b");
    }

    #[test]
    fn project_from_url_forms() {
        let cases = [
            (
                "https://gitlab.com/acme/gitops",
                Some(("gitlab.com", "acme/gitops")),
            ),
            (
                "https://gitlab.com/acme/gitops.git",
                Some(("gitlab.com", "acme/gitops")),
            ),
            (
                "https://gitlab.com/acme/gitops/",
                Some(("gitlab.com", "acme/gitops")),
            ),
            (
                "HTTPS://GitLab.com/acme/gitops",
                Some(("gitlab.com", "acme/gitops")),
            ),
            (
                "https://gitlab.example.com/group/sub/proj.git",
                Some(("gitlab.example.com", "group/sub/proj")),
            ),
            (
                "https://gitlab.example.com/group/sub/proj/-/merge_requests/3",
                Some(("gitlab.example.com", "group/sub/proj")),
            ),
            (
                "https://oauth2:glpat-secret@gitlab.example.com:8443/g/p.git",
                Some(("gitlab.example.com:8443", "g/p")),
            ),
            (
                "  git@gitlab.com:group/proj.git\n",
                Some(("gitlab.com", "group/proj")),
            ),
            (
                "git@gitlab.com:group/sub/proj",
                Some(("gitlab.com", "group/sub/proj")),
            ),
            (
                "gitlab.com:group/proj.git",
                Some(("gitlab.com", "group/proj")),
            ),
            (
                "ssh://git@gitlab.example.com:2222/group/sub/my.proj.git",
                Some(("gitlab.example.com", "group/sub/my.proj")),
            ),
            (
                "ssh://git@gitlab.com/group/proj.git",
                Some(("gitlab.com", "group/proj")),
            ),
            (
                "http://127.0.0.1:8080/g/p.git",
                Some(("127.0.0.1:8080", "g/p")),
            ),
            ("", None),
            ("gitlab.com", None),
            ("https://gitlab.com/acme", None),
            ("https://gitlab.com/acme/", None),
            ("/srv/git/gitops.git", None),
            ("./gitops", None),
            ("file:///srv/git/acme/gitops.git", None),
            ("ftp://gitlab.com/acme/gitops", None),
            ("https://gitlab.com/acme/git ops", None),
            ("git@gitlab.com:/acme/gitops.git", None),
            ("https://gitlab.com/acme//gitops", None),
            ("https://gitlab.com/acme/../gitops", None),
        ];
        for (remote, expected) in cases {
            let expected = expected.map(|(h, p)| (h.to_string(), p.to_string()));
            assert_eq!(parse_remote(remote), expected, "{remote}");
            assert_eq!(
                project_from_url(remote),
                expected.map(|(_, p)| p),
                "{remote}"
            );
        }
    }

    #[test]
    fn api_url_for_hosts() {
        assert_eq!(api_url_for_host("gitlab.com"), "https://gitlab.com/api/v4");
        assert_eq!(
            api_url_for_host(" gitlab.example.com:8443/ "),
            "https://gitlab.example.com:8443/api/v4"
        );
    }

    #[test]
    fn draft_markers() {
        assert_eq!(draft_marker("Draft: Update web"), Some("Draft: "));
        assert_eq!(draft_marker("draft:Update web"), Some("draft:"));
        assert_eq!(draft_marker("[Draft] Update web"), Some("[Draft] "));
        assert_eq!(draft_marker("(DRAFT) Update web"), Some("(DRAFT) "));
        assert_eq!(
            draft_marker("Draft: [WIP] Update web"),
            Some("Draft: [WIP] ")
        );
        assert_eq!(draft_marker("WIP: Update web"), Some("WIP: "));
        assert_eq!(draft_marker("Drafting the web"), None);
        assert_eq!(draft_marker("Update web (draft)"), None);
        assert_eq!(draft_marker("Ünïcode"), None);
        assert_eq!(draft_marker(""), None);
    }

    #[test]
    fn error_messages_from_bodies() {
        assert_eq!(
            error_message(r#"{"message":"404 Project Not Found"}"#),
            "404 Project Not Found"
        );
        assert_eq!(
            error_message(
                r#"{"message":["Another open merge request already exists for this source branch: !3"]}"#
            ),
            "Another open merge request already exists for this source branch: !3"
        );
        assert_eq!(
            error_message(
                r#"{"message":{"source_branch":["is invalid","is missing"],"title":["can't be blank"]}}"#
            ),
            "source_branch: is invalid; is missing; title: can't be blank"
        );
        assert_eq!(
            error_message(r#"{"error":"title is missing"}"#),
            "title is missing"
        );
        assert_eq!(
            error_message(r#"{"error":"insufficient_scope","error_description":"The request requires higher privileges than provided by the access token.","scope":"api"}"#),
            "insufficient_scope: The request requires higher privileges than provided by the access token."
        );
        assert_eq!(error_message("Retry later\n"), "Retry later");
        assert_eq!(error_message(""), "");
    }

    #[test]
    fn rate_limit_waits_from_headers() {
        let headers = |pairs: &[(&'static str, String)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, v.parse().expect("header"));
            }
            h
        };
        assert_eq!(rate_limit_wait(&headers(&[])), None);
        let seconds = headers(&[("retry-after", " 7 ".to_string())]);
        assert_eq!(rate_limit_wait(&seconds), Some(Duration::from_secs(7)));
        let reset = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs()
            + 10;
        let wait =
            rate_limit_wait(&headers(&[("ratelimit-reset", reset.to_string())])).expect("a wait");
        assert!(
            wait > Duration::from_secs(8) && wait <= Duration::from_secs(10),
            "{wait:?}"
        );
    }

    #[test]
    fn pages_follow_x_next_page_or_link() {
        let url = Url::parse("https://gitlab.example.com/api/v4/projects/g%2Fp/merge_requests?state=opened&page=1&per_page=100")
            .expect("url");
        assert_eq!(
            with_page(&url, 3).as_str(),
            "https://gitlab.example.com/api/v4/projects/g%2Fp/merge_requests?state=opened&per_page=100&page=3"
        );
    }
}
