//! Gitea and Forgejo (Codeberg included) through the Gitea API v1; Forgejo's API is Gitea's.
//!
//! A thin reqwest client: every call is one or two plain HTTP requests below the configured
//! API URL (`https://host/api/v1`), authenticated with `Authorization: token <token>`. Bodies
//! are read into small structs holding only the fields used, so older releases that lack a
//! newer field (`draft`) still work.
//!
//! # Mapping
//!
//! | [`Forge`] method | Gitea/Forgejo requests |
//! |---|---|
//! | `open_pulls(prefix)` | `GET /repos/{o}/{r}/pulls?state=open&limit=50&page=N`, N = 1, 2, ... (see *Pagination*); kept: `head.ref` starts with `prefix` and `head.repo.full_name` is `base.repo.full_name` (no forks, nor pull requests whose fork was deleted) |
//! | `closed_pulls(prefix, limit)` | `GET /repos/{o}/{r}/pulls?state=closed&sort=recentupdate&limit=50&page=N`, the same filter, in Gitea's order (most recently updated first), stopping once `limit` were found (at most 1,000 pull requests read); `merged: true` is [`PullState::Merged`], anything else [`PullState::Closed`]. A `limit` of 0 makes no request |
//! | `create_pull(new)` | `POST /repos/{o}/{r}/pulls` `{head, base, title, body}`; a draft's title gets `WIP: ` first (see *Drafts*) |
//! | `update_pull(n, title, body)` | `GET /repos/{o}/{r}/pulls/{n}`, then `PATCH /repos/{o}/{r}/pulls/{n}` `{title, body}`; a draft keeps its `WIP:` prefix |
//! | `close_pull(n)` | `PATCH /repos/{o}/{r}/pulls/{n}` `{state: "closed"}` |
//! | `comment(n, body)` | `POST /repos/{o}/{r}/issues/{n}/comments` `{body}` |
//! | `add_labels(n, names)` | `GET /repos/{o}/{r}/labels?limit=50&page=N` to map names to ids (an exact match first, else one that differs only in case); a name the repository lacks is created with `POST /repos/{o}/{r}/labels` `{name, color: "#ededed"}` (GitHub creates unknown labels implicitly; this does the same); then `POST /repos/{o}/{r}/issues/{n}/labels` `{labels: [ids]}`, which adds to the labels the pull request has. Ids rather than names: only newer Gitea takes names |
//! | `request_reviewers(n, reviewers)` | `POST /repos/{o}/{r}/pulls/{n}/requested_reviewers` `{reviewers: [users], team_reviewers: [teams]}`; `alice`/`@alice` is a user, `org/team`/`@org/team` the team `team` of the repository's organisation; a key with no names is left out |
//! | `has_reviews(n)` | `GET /repos/{o}/{r}/pulls/{n}/reviews?limit=1`: any entry, a pending request (`REQUEST_REVIEW`) included |
//! | `add_assignees(n, users)` | `GET /repos/{o}/{r}/issues/{n}`, then `PATCH /repos/{o}/{r}/issues/{n}` `{assignees: existing ∪ new}` (Gitea's edit replaces the list); no `PATCH` when all are assigned already |
//!
//! [`Pull`] comes from Gitea's pull-request object: `number`, `head.ref` (branch), `base.ref`,
//! `title` (without a work-in-progress prefix), `body`, `state` and `merged`, `html_url` (the
//! page, not the API address), `labels[].name`, and `draft` when the server sends it (Gitea
//! 1.22 and later), else whether the title has a work-in-progress prefix. An empty list of
//! labels, reviewers or assignees makes no request.
//!
//! # Drafts
//!
//! Gitea has no draft flag to set: a pull request is a draft ("work in progress") while its
//! title starts with one of the instance's `WORK_IN_PROGRESS_PREFIXES`, by default `WIP:` and
//! `[WIP]`, in any case. So `draft: true` creates the pull request titled `WIP: <title>`, and
//! reading strips a leading `WIP:` or `[WIP]` (and the blanks after it) from every title, so
//! that the title read is the title written and a re-run finds nothing to update (no write).
//! `update_pull` reads the pull request first and, when its title has such a prefix, puts it
//! back before the new title: a draft stays a draft, and one a human marked ready (by removing
//! the prefix) stays ready. An instance configured with other prefixes still reports `draft`
//! correctly (1.22+), but those prefixes are neither stripped nor kept.
//!
//! # Pagination
//!
//! Lists are read with `limit=50` (Gitea's default `MAX_RESPONSE_ITEMS`) and `page=1, 2, ...`
//! on the configured API URL. When a page comes with a `Link` header, its `rel="next"` says
//! whether another page follows: that also covers a server whose maximum page is smaller than
//! 50. Without `Link` (older servers, or a proxy that drops it), a short page is the last. An
//! empty page always ends the list. The `next` URL itself is not followed: Gitea builds it from
//! its `ROOT_URL`, which behind a proxy may name another host, and the token goes to the
//! configured API only.
//!
//! # Errors and retries
//!
//! 401 is [`Error::Unauthorized`] (with a hint on the token's scopes), 403
//! [`Error::Forbidden`], 404 [`Error::NotFound`], 429 [`Error::RateLimited`], anything else
//! [`Error::Status`] with Gitea's `message` (409 "pull request already exists for these
//! targets", 422 validation failures). A request is retried at most 3 times: after a 429
//! (any method: the server did not act on it), and after a 5xx or a transport failure for
//! `GET` and `PATCH` only; a `POST` may have been acted on, and retrying it could open a second
//! pull request or post a comment twice. The wait is the response's `Retry-After` (seconds or
//! an HTTP date) when it is at most 30 s (a longer one is reported, not waited for), else an
//! exponential back-off from 0.5 s. The token never appears in an error: it is only sent in a
//! header marked sensitive, the API URL is not echoed, and any server text quoted in an error
//! has the token replaced by `<redacted>`.

use imagebump_http::header::{HeaderValue, ACCEPT, AUTHORIZATION, LINK};
use imagebump_http::{Dialect, Method, Options, Redactor, Request, Transport, Url};
use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::ops::ControlFlow;
use std::time::Duration;

mod issues;

use super::{logins, BranchJson, Error, Forge, LoginJson, MergeMethod, NewPull, Pull, PullState};

/// Items per page: Gitea's default `MAX_RESPONSE_ITEMS`.
const PAGE_SIZE: usize = 50;
/// Pages read for one listing of open pull requests (100,000 pull requests), a guard against a
/// server that never ends a list.
const MAX_PAGES: usize = 2000;
/// Pages of closed pull requests read (the most recently updated 1,000), whatever the limit:
/// an old repository has thousands, and only recent rejections matter.
const MAX_CLOSED_PAGES: usize = 20;
/// Pages of labels read (5,000 labels).
const MAX_LABEL_PAGES: usize = 100;
/// Gitea's default `WORK_IN_PROGRESS_PREFIXES`, matched case-insensitively as Gitea does.
const WIP_PREFIXES: [&str; 2] = ["WIP:", "[WIP]"];
/// What `create_pull` puts before a draft's title.
const DRAFT_PREFIX: &str = "WIP: ";
/// The color of a label `add_labels` creates (GitHub's default for implicit labels).
const LABEL_COLOR: &str = "#ededed";

const TOKEN_HINT: &str = "set IMAGEBUMP_FORGE_TOKEN (or GITEA_TOKEN, FORGEJO_TOKEN) to a \
                          Gitea/Forgejo access token with the write:repository and write:issue \
                          scopes";

/// How to reach a Gitea or Forgejo repository.
pub struct GiteaSettings {
    /// `https://host/api/v1` (`https://host/sub/path/api/v1` for an instance below a path), or
    /// a test server. See [`api_url_for_host`].
    pub api_url: String,
    pub owner: String,
    pub repo: String,
    /// An access token, sent as `Authorization: token <token>`. It needs the
    /// `write:repository` and `write:issue` scopes.
    pub token: SecretString,
}

impl std::fmt::Debug for GiteaSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GiteaSettings")
            .field("api_url", &self.api_url)
            .field("owner", &self.owner)
            .field("repo", &self.repo)
            .field("token", &format_args!("<redacted>"))
            .finish()
    }
}

/// A Gitea or Forgejo repository's pull requests.
pub struct Gitea {
    api: Api,
    owner: String,
    repo: String,
}

impl std::fmt::Debug for Gitea {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gitea")
            .field("api_url", &self.api.base.as_str())
            .field("owner", &self.owner)
            .field("repo", &self.repo)
            .finish_non_exhaustive()
    }
}

impl Gitea {
    /// Builds the client; no request is made.
    pub fn new(settings: GiteaSettings) -> Result<Gitea, Error> {
        let base = super::api_base(&settings.api_url, "Gitea")?;
        check_name("owner", &settings.owner)?;
        check_name("repository", &settings.repo)?;
        let token = crate::clean_token(&settings.token, "Gitea", TOKEN_HINT)?;
        let mut authorization = HeaderValue::from_str(&format!("token {}", token.expose_secret()))
            .map_err(|_| {
                Error::Config(
                    "the Gitea token holds characters an HTTP header cannot carry".to_string(),
                )
            })?;
        authorization.set_sensitive(true);
        // reqwest drops `Authorization` on a redirect to another host.
        let transport = Transport::new(Options::default()).map_err(Error::Config)?;
        let redactor = Redactor::default().with(token.expose_secret());
        Ok(Gitea {
            api: Api {
                transport,
                base,
                authorization,
                redactor,
            },
            owner: settings.owner,
            repo: settings.repo,
        })
    }

    /// Sends through `transport` from now on (other timeouts or retry numbers).
    pub fn with_transport(mut self, transport: Transport) -> Gitea {
        self.api.transport = transport;
        self
    }

    fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.repo)
    }

    fn repo_path(&self, rest: &str) -> String {
        format!("/repos/{}/{}{rest}", self.owner, self.repo)
    }

    fn repo_what(&self) -> String {
        format!("repository {}", self.full_name())
    }

    fn pull_what(&self, number: u64) -> String {
        format!("pull request #{number} in {}", self.full_name())
    }

    /// Pull requests of one listing (`query`) whose head is a branch of this repository
    /// starting with `prefix`, reading at most `max_pages`, stopping once `enough` were found.
    async fn list_pulls(
        &self,
        query: &str,
        prefix: &str,
        max_pages: usize,
        enough: usize,
    ) -> Result<Vec<Pull>, Error> {
        let full = self.full_name();
        let mut seen = HashSet::new();
        let mut found = Vec::new();
        let path = self.repo_path(&format!("/pulls?{query}"));
        // A pull request updated while reading may move to the next page: it is kept once.
        self.api
            .paginate(
                &path,
                &self.repo_what(),
                max_pages,
                |page: Vec<PullJson>| {
                    for pull in page {
                        if pull.is_ours(prefix, &full) && seen.insert(pull.number) {
                            found.push(pull.into_pull());
                        }
                    }
                    if found.len() >= enough {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                },
            )
            .await?;
        Ok(found)
    }

    /// The ids of labels `names` (distinct, not empty), creating those the repository lacks.
    async fn label_ids(&self, names: &[&str]) -> Result<Vec<u64>, Error> {
        let what = self.repo_what();
        let mut existing: Vec<LabelJson> = Vec::new();
        self.api
            .paginate(
                &self.repo_path("/labels"),
                &what,
                MAX_LABEL_PAGES,
                |page: Vec<LabelJson>| {
                    existing.extend(page);
                    if names.iter().all(|n| existing.iter().any(|l| l.name == *n)) {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                },
            )
            .await?;
        let mut ids = Vec::with_capacity(names.len());
        for name in names {
            let known = existing
                .iter()
                .find(|l| l.name == *name)
                .or_else(|| existing.iter().find(|l| l.name.eq_ignore_ascii_case(name)));
            let id = match known {
                Some(label) => label.id,
                None => {
                    tracing::debug!("Gitea: creating label {name:?} in {}", self.full_name());
                    let path = self.repo_path("/labels");
                    let payload = json!({ "name": name, "color": LABEL_COLOR });
                    let created: LabelJson = self
                        .api
                        .send_json(Method::POST, &path, Some(&payload), &what)
                        .await?;
                    let id = created.id;
                    existing.push(created);
                    id
                }
            };
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        Ok(ids)
    }

    async fn write(
        &self,
        method: Method,
        path: &str,
        payload: Value,
        what: &str,
    ) -> Result<(), Error> {
        self.api
            .send(method, path, Some(&payload), what)
            .await
            .map(drop)
    }
}

#[async_trait::async_trait]
impl Forge for Gitea {
    fn name(&self) -> &'static str {
        "Gitea"
    }

    async fn open_pulls(&self, prefix: &str) -> Result<Vec<Pull>, Error> {
        self.list_pulls("state=open", prefix, MAX_PAGES, usize::MAX)
            .await
    }

    async fn closed_pulls(&self, prefix: &str, limit: usize) -> Result<Vec<Pull>, Error> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut found = self
            .list_pulls(
                "state=closed&sort=recentupdate",
                prefix,
                MAX_CLOSED_PAGES,
                limit,
            )
            .await?;
        found.truncate(limit);
        Ok(found)
    }

    async fn releases(&self, repo: &str, limit: usize) -> Result<Vec<crate::Release>, Error> {
        let parts = crate::repo_segments(repo, 2)?;
        let page_size = limit.clamp(1, crate::RELEASES_PAGE);
        let path = format!("/repos/{}/releases?limit={page_size}", parts.join("/"));
        let what = format!("releases of repository {}", parts.join("/"));
        let page: Vec<crate::ReleaseJson> =
            self.api.send_json(Method::GET, &path, None, &what).await?;
        Ok(crate::ReleaseJson::published(page, limit))
    }

    async fn audience(&self, repo: &str) -> Result<crate::Audience, Error> {
        let parts = crate::repo_segments(repo, 2)?;
        let name = parts.join("/");
        if name.eq_ignore_ascii_case(&self.full_name()) {
            return Ok(crate::Audience::ThisRepository);
        }
        let path = format!("/repos/{name}");
        let what = format!("visibility of repository {name}");
        let answer: crate::VisibilityJson =
            self.api.send_json(Method::GET, &path, None, &what).await?;
        Ok(answer.audience(&self.full_name()))
    }

    async fn whoami(&self) -> Result<String, Error> {
        let user: UserJson = self
            .api
            .send_json(Method::GET, "/user", None, "the token's Gitea user")
            .await?;
        Ok(user.login)
    }

    async fn pull(&self, number: u64) -> Result<Option<Pull>, Error> {
        let path = self.repo_path(&format!("/pulls/{number}"));
        let what = self.pull_what(number);
        match self
            .api
            .send_json::<PullJson>(Method::GET, &path, None, &what)
            .await
        {
            Ok(pull) if pull.is_ours("", &self.full_name()) => Ok(Some(pull.into_pull())),
            Ok(_) | Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn create_pull(&self, new: &NewPull) -> Result<Pull, Error> {
        let title = if new.draft && wip_prefix(&new.title).is_none() {
            format!("{DRAFT_PREFIX}{}", new.title)
        } else {
            new.title.clone()
        };
        let payload = json!({
            "head": new.branch,
            "base": new.base,
            "title": title,
            "body": new.body,
        });
        let path = self.repo_path("/pulls");
        let pull: PullJson = self
            .api
            .send_json(Method::POST, &path, Some(&payload), &self.repo_what())
            .await?;
        Ok(pull.into_pull())
    }

    async fn update_pull(&self, number: u64, title: &str, body: &str) -> Result<(), Error> {
        let path = self.repo_path(&format!("/pulls/{number}"));
        let what = self.pull_what(number);
        let current: PullJson = self.api.send_json(Method::GET, &path, None, &what).await?;
        let title = match wip_prefix(&current.title) {
            Some(prefix) if wip_prefix(title).is_none() => format!("{} {title}", prefix.trim_end()),
            _ => title.to_string(),
        };
        let payload = json!({ "title": title, "body": body });
        self.write(Method::PATCH, &path, payload, &what).await
    }

    async fn close_pull(&self, number: u64) -> Result<(), Error> {
        let path = self.repo_path(&format!("/pulls/{number}"));
        let payload = json!({ "state": "closed" });
        self.write(Method::PATCH, &path, payload, &self.pull_what(number))
            .await
    }

    async fn comment(&self, number: u64, body: &str) -> Result<(), Error> {
        let path = self.repo_path(&format!("/issues/{number}/comments"));
        let payload = json!({ "body": body });
        self.write(Method::POST, &path, payload, &self.pull_what(number))
            .await
    }

    async fn add_labels(&self, number: u64, labels: &[String]) -> Result<(), Error> {
        let mut names: Vec<&str> = Vec::new();
        for label in labels.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
            if !names.contains(&label) {
                names.push(label);
            }
        }
        if names.is_empty() {
            return Ok(());
        }
        let ids = self.label_ids(&names).await?;
        let path = self.repo_path(&format!("/issues/{number}/labels"));
        let payload = json!({ "labels": ids });
        self.write(Method::POST, &path, payload, &self.pull_what(number))
            .await
    }

    async fn request_reviewers(&self, number: u64, reviewers: &[String]) -> Result<(), Error> {
        let Some(payload) = crate::requested_reviewers(reviewers) else {
            return Ok(());
        };
        let path = self.repo_path(&format!("/pulls/{number}/requested_reviewers"));
        self.write(Method::POST, &path, payload, &self.pull_what(number))
            .await
    }

    /// `GET …/pulls/{n}/reviews?limit=1`: any entry. Gitea lists a pending request as a
    /// review too (`REQUEST_REVIEW`): someone asked is as good as someone who reviewed,
    /// also on a Gitea whose pull requests do not list `requested_reviewers`.
    async fn has_reviews(&self, number: u64) -> Result<bool, Error> {
        let path = self.repo_path(&format!("/pulls/{number}/reviews?limit=1"));
        let what = self.pull_what(number);
        let reviews: Vec<Value> = self.api.send_json(Method::GET, &path, None, &what).await?;
        Ok(!reviews.is_empty())
    }

    async fn add_assignees(&self, number: u64, assignees: &[String]) -> Result<(), Error> {
        let wanted: Vec<&str> = assignees
            .iter()
            .map(|a| a.trim().trim_start_matches('@'))
            .filter(|a| !a.is_empty())
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let path = self.repo_path(&format!("/issues/{number}"));
        let what = self.pull_what(number);
        let issue: IssueJson = self.api.send_json(Method::GET, &path, None, &what).await?;
        let mut all: Vec<String> = issue
            .assignees
            .unwrap_or_default()
            .into_iter()
            .map(|u| u.login)
            .collect();
        let before = all.len();
        // Gitea user names are case-insensitive.
        for name in wanted {
            if !all.iter().any(|a| a.eq_ignore_ascii_case(name)) {
                all.push(name.to_string());
            }
        }
        if all.len() == before {
            return Ok(());
        }
        let payload = json!({ "assignees": all });
        self.write(Method::PATCH, &path, payload, &what).await
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

    async fn issue_editors(&self, _number: u64, _own: &str) -> Result<crate::Editor, Error> {
        Ok(self.editor_of())
    }

    async fn can_write(&self, login: &str) -> Result<bool, Error> {
        self.writer(login).await
    }

    /// `POST …/merge` with `merge_when_checks_succeed` (Gitea 1.17, Forgejo): scheduled
    /// (201), or merged at once (200) when the checks already passed. A pull request already
    /// scheduled answers 409, which is what was asked for.
    async fn enable_automerge(&self, pull: &Pull, method: MergeMethod) -> Result<(), Error> {
        if pull.automerge == Some(true) {
            return Ok(());
        }
        let style = match method {
            MergeMethod::Merge => "merge",
            MergeMethod::Squash => "squash",
            MergeMethod::Rebase => "rebase",
        };
        let path = self.repo_path(&format!("/pulls/{}/merge", pull.number));
        let payload = json!({
            "Do": style,
            "merge_when_checks_succeed": true,
            "delete_branch_after_merge": false,
        });
        match self
            .write(Method::POST, &path, payload, &self.pull_what(pull.number))
            .await
        {
            Err(Error::Status {
                status: 409,
                message,
            }) if message.to_ascii_lowercase().contains("scheduled") => Ok(()),
            other => other,
        }
    }
}

/// The work-in-progress prefix `title` starts with, with the blanks after it.
fn wip_prefix(title: &str) -> Option<&str> {
    WIP_PREFIXES.iter().find_map(|prefix| {
        let head = title.get(..prefix.len())?;
        if !head.eq_ignore_ascii_case(prefix) {
            return None;
        }
        let rest = title.get(prefix.len()..)?;
        title.strip_suffix(rest.trim_start())
    })
}

/// `title` without its work-in-progress prefix.
fn strip_wip(title: &str) -> &str {
    match wip_prefix(title) {
        Some(prefix) => title.get(prefix.len()..).unwrap_or(title),
        None => title,
    }
}

// ---------------------------------------------------------------------------------------------
// requests
// ---------------------------------------------------------------------------------------------

/// The transport and what every request needs.
struct Api {
    transport: Transport,
    /// The API base URL, with a trailing `/`.
    base: Url,
    /// `token <token>`, marked sensitive.
    authorization: HeaderValue,
    /// Knows the token, to keep it out of any server text quoted in an error.
    redactor: Redactor,
}

/// A successful response, read.
struct Reply {
    body: String,
    /// Whether the `Link` header names a next page (`None`: no `Link` header).
    next: Option<bool>,
}

impl Api {
    async fn send_json<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        what: &str,
    ) -> Result<T, Error> {
        let reply = self.send(method.clone(), path, body, what).await?;
        self.parse(&reply.body, &method, path)
    }

    /// Reads every page of the list at `path` (at most `max_pages`), handing each to `take`
    /// until it breaks. See the module's *Pagination*.
    async fn paginate<T: DeserializeOwned>(
        &self,
        path: &str,
        what: &str,
        max_pages: usize,
        mut take: impl FnMut(Vec<T>) -> ControlFlow<()>,
    ) -> Result<(), Error> {
        let separator = if path.contains('?') { '&' } else { '?' };
        let mut budget = crate::ListBudget::default();
        for page in 1..=max_pages {
            let page_path = format!("{path}{separator}limit={PAGE_SIZE}&page={page}");
            let reply = self.send(Method::GET, &page_path, None, what).await?;
            budget.take(reply.body.len(), what)?;
            let items: Vec<T> = self.parse(&reply.body, &Method::GET, &page_path)?;
            let more = more_pages(reply.next, items.len());
            if take(items).is_break() || !more {
                return Ok(());
            }
        }
        tracing::debug!("Gitea: GET {path}: stopped after {max_pages} pages");
        Ok(())
    }

    /// Sends a request relative to the API base through the transport's one retry loop (see
    /// the module's *Errors and retries*).
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        what: &str,
    ) -> Result<Reply, Error> {
        let url = self
            .base
            .join(path.trim_start_matches('/'))
            .map_err(|e| Error::Config(format!("cannot form a Gitea API URL for {path}: {e}")))?;
        tracing::debug!("Gitea: {method} {path}");
        let mut request = Request::new(method, url)
            .secret_header(AUTHORIZATION, self.authorization.clone())
            .header(ACCEPT, "application/json");
        if let Some(body) = body {
            request = request.json(body);
        }
        let dialect = GiteaDialect { api: self, what };
        let response = self.transport.send(&dialect, &request).await?;
        let next = response
            .headers
            .contains_key(LINK)
            .then(|| imagebump_http::next_link(&response.headers, &self.base).is_some());
        Ok(Reply {
            body: response.text(),
            next,
        })
    }

    fn parse<T: DeserializeOwned>(
        &self,
        body: &str,
        method: &Method,
        path: &str,
    ) -> Result<T, Error> {
        serde_json::from_str(body).map_err(|e| Error::Transport {
            message: self.scrub(&format!(
                "unexpected response from Gitea to {method} {path}: {e}"
            )),
            retryable: false,
        })
    }

    /// `text` with the token replaced, should a server (or a proxy) have echoed it.
    fn scrub(&self, text: &str) -> String {
        self.redactor.apply(text)
    }
}

/// Gitea as the transport sees it: its errors.
struct GiteaDialect<'a> {
    api: &'a Api,
    what: &'a str,
}

impl Dialect for GiteaDialect<'_> {
    type Error = Error;

    /// Its PATCHes set fields (title, body, state) to given values: sending one twice does
    /// no more than once, so a 5xx on one is retried like a GET.
    fn idempotent(&self, method: &Method) -> bool {
        imagebump_http::is_idempotent(method) || *method == Method::PATCH
    }

    fn classify(&self, error: imagebump_http::Error) -> Error {
        use imagebump_http::Error as E;
        match error {
            E::RateLimited { retry_after, .. } => Error::RateLimited { retry_after },
            E::Server { response, .. } | E::Status { response, .. } => {
                let message = self.api.scrub(&error_message(&response.text()));
                classify(response.status.as_u16(), message, None, self.what)
            }
            E::TooLarge { limit, .. } => Error::Transport {
                message: format!("Gitea answered with more than {limit} bytes"),
                retryable: false,
            },
            other => Error::Transport {
                message: format!(
                    "Gitea request failed: {}",
                    self.api.scrub(other.reason().unwrap_or_default())
                ),
                retryable: other.is_retryable(),
            },
        }
    }
}

/// The error for an unsuccessful status; `message` is the server's (scrubbed) explanation.
fn classify(status: u16, message: String, retry_after: Option<Duration>, what: &str) -> Error {
    match status {
        401 => Error::Unauthorized {
            hint: TOKEN_HINT.to_string(),
        },
        403 => Error::Forbidden {
            message: if message.is_empty() {
                format!("access to {what} refused")
            } else {
                format!("{message} ({what})")
            },
        },
        404 => Error::NotFound {
            what: what.to_string(),
        },
        429 => Error::RateLimited { retry_after },
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

/// Whether another page follows one of `items` items: the `Link` header says so when there is
/// one; without it, a full page may have a successor.
fn more_pages(next: Option<bool>, items: usize) -> bool {
    if items == 0 {
        return false;
    }
    next.unwrap_or(items >= PAGE_SIZE)
}

/// Gitea's explanation from an error body: `message` (with `errors` when they add to it), or
/// a binding failure's `[{fieldNames, message}]`; a body that is not JSON (a proxy's page), its
/// first 200 characters.
fn error_message(body: &str) -> String {
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(map)) => {
            let mut message = map
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_string();
            let details = map.get("errors").and_then(Value::as_array);
            for detail in details.into_iter().flatten().filter_map(Value::as_str) {
                let detail = detail.trim();
                if detail.is_empty() || message.contains(detail) {
                    continue;
                }
                message = if message.is_empty() {
                    detail.to_string()
                } else {
                    format!("{message}: {detail}")
                };
            }
            message
        }
        Ok(Value::Array(items)) => items
            .iter()
            .filter_map(|item| {
                let message = item.get("message").and_then(Value::as_str)?;
                let fields: Vec<&str> = item
                    .get("fieldNames")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                Some(if fields.is_empty() {
                    message.to_string()
                } else {
                    format!("{}: {message}", fields.join(", "))
                })
            })
            .collect::<Vec<_>>()
            .join("; "),
        _ => body.trim().chars().take(200).collect(),
    }
}

// ---------------------------------------------------------------------------------------------
// settings
// ---------------------------------------------------------------------------------------------

/// An owner or repository name: Gitea allows letters, digits, `-`, `_` and `.`.
fn check_name(kind: &str, name: &str) -> Result<(), Error> {
    if is_name(name) {
        Ok(())
    } else {
        Err(Error::Config(format!("invalid Gitea {kind} name {name:?}")))
    }
}

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The API URL for a Gitea or Forgejo host: `https://{host}/api/v1`. `host` may carry a port
/// and the path of an instance installed below one (`git.example.com/gitea`), and may start
/// with `http://` or `https://` (kept).
pub fn api_url_for_host(host: &str) -> String {
    let host = host.trim().trim_end_matches('/');
    let lower = host.to_ascii_lowercase();
    if lower.starts_with("https://") || lower.starts_with("http://") {
        format!("{host}/api/v1")
    } else {
        format!("https://{host}/api/v1")
    }
}

/// (owner, repo) from a git remote URL: `https://host/o/r(.git)`, an instance below a path
/// (`https://host/gitea/o/r.git`: the last two segments), `git@host:o/r.git`,
/// `ssh://git@host(:port)/o/r.git`. Credentials in the URL are ignored. `None` when it is not
/// such a remote.
pub fn repo_from_url(remote: &str) -> Option<(String, String)> {
    let remote = remote.trim();
    let (path, below_a_path) = if let Some((scheme, rest)) = remote.split_once("://") {
        let (authority, path) = rest.split_once('/')?;
        let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if authority.is_empty() {
            return None;
        }
        match scheme.to_ascii_lowercase().as_str() {
            // HTTP serves the instance's ROOT_URL path; SSH does not.
            "https" | "http" => (path, true),
            "ssh" | "git" | "git+ssh" | "ssh+git" => (path, false),
            _ => return None,
        }
    } else {
        // scp-like: [user@]host:owner/repo(.git)
        let (authority, path) = remote.split_once(':')?;
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if host.is_empty() || authority.contains('/') || path.starts_with('/') {
            return None;
        }
        (path, false)
    };
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let segments: Vec<&str> = path.split('/').collect();
    let [.., owner, repo] = segments.as_slice() else {
        return None;
    };
    if (!below_a_path && segments.len() != 2) || !is_name(owner) || !is_name(repo) {
        return None;
    }
    Some((owner.to_string(), repo.to_string()))
}

// ---------------------------------------------------------------------------------------------
// response bodies
// ---------------------------------------------------------------------------------------------

#[derive(Deserialize)]
struct PullJson {
    number: u64,
    #[serde(default)]
    title: String,
    body: Option<String>,
    #[serde(default)]
    state: String,
    #[serde(default)]
    merged: bool,
    merged_at: Option<String>,
    #[serde(default)]
    html_url: String,
    /// Gitea writes an empty list as `null` in places; both mean none.
    labels: Option<Vec<LabelJson>>,
    #[serde(default)]
    assignees: Option<Vec<LoginJson>>,
    /// Pending review requests: users, and teams by name.
    #[serde(default)]
    requested_reviewers: Option<Vec<LoginJson>>,
    #[serde(default)]
    requested_reviewers_teams: Option<Vec<TeamJson>>,
    /// Gitea 1.22 and later.
    draft: Option<bool>,
    /// Who opened it.
    #[serde(default)]
    user: Option<LoginJson>,
    head: BranchJson,
    base: BranchJson,
}

#[derive(Deserialize)]
struct LabelJson {
    id: u64,
    name: String,
}

#[derive(Deserialize)]
struct TeamJson {
    name: String,
}

#[derive(Deserialize)]
struct IssueJson {
    /// `null` when there are none.
    assignees: Option<Vec<UserJson>>,
}

#[derive(Deserialize)]
struct UserJson {
    login: String,
}

impl PullJson {
    /// Its head starts with `prefix` and is a branch of the base repository (`full_name`
    /// should the base name none), not of a fork. Gitea names are case-insensitive.
    fn is_ours(&self, prefix: &str, full_name: &str) -> bool {
        let base = self
            .base
            .repo
            .as_ref()
            .map_or(full_name, |r| r.full_name.as_str());
        self.head.name.starts_with(prefix) && self.head.is_in(base)
    }

    fn into_pull(self) -> Pull {
        let state = if self.merged || self.merged_at.is_some() {
            PullState::Merged
        } else if self.state == "open" {
            PullState::Open
        } else {
            PullState::Closed
        };
        let draft = self
            .draft
            .unwrap_or_else(|| wip_prefix(&self.title).is_some());
        Pull {
            number: self.number,
            branch: self.head.name,
            base: self.base.name,
            author: self.user.map(|u| u.login).unwrap_or_default(),
            title: strip_wip(&self.title).to_string(),
            body: self.body.unwrap_or_default(),
            state,
            url: self.html_url,
            labels: self
                .labels
                .unwrap_or_default()
                .into_iter()
                .map(|l| l.name)
                .collect(),
            assignees: logins(self.assignees),
            review_requests: logins(self.requested_reviewers)
                .into_iter()
                .chain(
                    self.requested_reviewers_teams
                        .into_iter()
                        .flatten()
                        .map(|t| t.name),
                )
                .collect(),
            draft,
            node_id: String::new(),
            // Gitea's pull request does not say whether a merge is scheduled.
            automerge: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::gitea::{Call, FakeGitea};
    use crate::fake::new_pull;
    use std::time::Instant;

    /// Attempts per request, the transport's default.
    const MAX_ATTEMPTS: u32 = 4;

    const PREFIX: &str = "imagebump/";

    fn settings(api_url: &str, token: &str) -> GiteaSettings {
        GiteaSettings {
            api_url: api_url.to_string(),
            owner: FakeGitea::OWNER.to_string(),
            repo: FakeGitea::REPO.to_string(),
            token: SecretString::from(token.to_string()),
        }
    }

    /// A transport whose back-off is short (tests wait for `Retry-After` only).
    fn quick_transport() -> Transport {
        Transport::new(Options {
            retry: imagebump_http::RetryPolicy {
                first_backoff: Duration::from_millis(1),
                ..Default::default()
            },
            ..Options::default()
        })
        .expect("transport")
    }

    /// A client of `fake` whose back-off is short (tests wait for `Retry-After` only).
    fn connect_with(fake: &FakeGitea, token: &str) -> Gitea {
        let mut gitea = Gitea::new(settings(&fake.api_url(), token)).expect("settings are valid");
        gitea.api.transport = quick_transport();
        gitea
    }

    fn connect(fake: &FakeGitea) -> Gitea {
        connect_with(fake, FakeGitea::TOKEN)
    }

    fn lines(calls: &[Call]) -> Vec<String> {
        calls.iter().map(Call::line).collect()
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn numbers(pulls: &[Pull]) -> Vec<u64> {
        pulls.iter().map(|p| p.number).collect()
    }

    /// The `page` of every GET of `route` (a path below the repository).
    fn pages(fake: &FakeGitea, route: &str) -> Vec<String> {
        let path = fake.repo_path(route);
        fake.calls()
            .iter()
            .filter(|c| c.method == "GET" && c.path == path)
            .map(|c| c.query_value("page").unwrap_or_default().to_string())
            .collect()
    }

    #[tokio::test]
    async fn create_then_listed_by_open_pulls() {
        let fake = FakeGitea::start().await;
        let forge = connect(&fake);
        assert_eq!(forge.name(), "Gitea");
        let human = fake.add_pull("feature/login", "main", "Login page", "");
        let body = "Bumps web.\n\n<!-- imagebump: {\"v\":1} -->";
        let created = forge
            .create_pull(&new_pull("imagebump/web", "Bump web to 1.2.3", body))
            .await
            .expect("create");
        let web = fake.api_url().trim_end_matches("/api/v1").to_string();
        assert_eq!(
            created,
            Pull {
                number: human + 1,
                branch: "imagebump/web".to_string(),
                base: "main".to_string(),
                author: FakeGitea::BOT_LOGIN.to_string(),
                title: "Bump web to 1.2.3".to_string(),
                body: body.to_string(),
                state: PullState::Open,
                url: format!("{web}/octo/gitops/pulls/{}", human + 1),
                labels: Vec::new(),
                assignees: Vec::new(),
                review_requests: Vec::new(),
                draft: false,
                node_id: String::new(),
                automerge: None,
            }
        );
        let writes = fake.write_calls();
        assert_eq!(
            lines(&writes),
            [format!("POST {}", fake.repo_path("/pulls"))]
        );
        assert_eq!(
            writes[0].body,
            Some(json!({
                "head": "imagebump/web",
                "base": "main",
                "title": "Bump web to 1.2.3",
                "body": body
            }))
        );
        assert_eq!(writes[0].status, 201);

        let open = forge.open_pulls(PREFIX).await.expect("list");
        assert_eq!(open, vec![created]);
        let list = fake.calls().pop().expect("a list request");
        assert_eq!(list.line(), format!("GET {}", fake.repo_path("/pulls")));
        assert_eq!(list.query_value("state"), Some("open"));
        assert_eq!(list.query_value("limit"), Some("50"));
        assert_eq!(list.query_value("page"), Some("1"));
        let expected = format!("token {}", FakeGitea::TOKEN);
        assert!(fake
            .calls()
            .iter()
            .all(|c| c.authorization.as_deref() == Some(expected.as_str())));
    }

    #[tokio::test]
    async fn update_pull_patches_title_and_body() {
        let fake = FakeGitea::start().await;
        let forge = connect(&fake);
        let n = fake.add_pull("imagebump/web", "main", "Bump web to 1.0", "old");
        fake.clear_calls();
        forge
            .update_pull(n, "Bump web to 1.1", "new body")
            .await
            .expect("update");
        let writes = fake.write_calls();
        assert_eq!(
            lines(&writes),
            [format!("PATCH {}", fake.repo_path(&format!("/pulls/{n}")))]
        );
        assert_eq!(
            writes[0].body,
            Some(json!({"title": "Bump web to 1.1", "body": "new body"}))
        );
        let pull = fake.pull(n);
        assert_eq!(
            (pull.title.as_str(), pull.body.as_str()),
            ("Bump web to 1.1", "new body")
        );

        fake.clear_calls();
        match forge.update_pull(99, "t", "b").await {
            Err(Error::NotFound { what }) => assert_eq!(what, "pull request #99 in octo/gitops"),
            other => panic!("{other:?}"),
        }
        assert!(fake.write_calls().is_empty());
    }

    #[tokio::test]
    async fn drafts_carry_a_wip_prefix_that_round_trips() {
        let fake = FakeGitea::start().await;
        let forge = connect(&fake);
        let draft = NewPull {
            draft: true,
            ..new_pull("imagebump/web", "Bump web", "b")
        };
        let created = forge.create_pull(&draft).await.expect("create");
        let n = created.number;
        assert_eq!(
            fake.write_calls()[0]
                .body
                .as_ref()
                .map(|b| b["title"].clone()),
            Some(json!("WIP: Bump web"))
        );
        assert_eq!(fake.pull(n).title, "WIP: Bump web");
        assert!(fake.pull(n).is_draft());
        assert_eq!((created.title.as_str(), created.draft), ("Bump web", true));

        let open = forge.open_pulls(PREFIX).await.expect("list");
        assert_eq!(
            open,
            vec![created.clone()],
            "the title read is the title written"
        );

        fake.clear_calls();
        forge
            .update_pull(n, "Bump web to 2", "b")
            .await
            .expect("update");
        assert_eq!(
            fake.write_calls()[0].body,
            Some(json!({"title": "WIP: Bump web to 2", "body": "b"}))
        );

        // An older Gitea without `draft`: the title tells.
        fake.set_draft_field(false);
        let open = forge.open_pulls(PREFIX).await.expect("list");
        assert_eq!(
            (open[0].title.as_str(), open[0].draft),
            ("Bump web to 2", true)
        );
    }

    #[tokio::test]
    async fn a_title_a_human_marked_ready_or_prefixed_is_kept() {
        let fake = FakeGitea::start().await;
        let forge = connect(&fake);
        let draft = NewPull {
            draft: true,
            ..new_pull("imagebump/web", "Bump web to 2", "b")
        };
        let n = forge.create_pull(&draft).await.expect("create").number;

        // A human marked it ready: it stays ready.
        fake.set_title(n, "Bump web to 2");
        let open = forge.open_pulls(PREFIX).await.expect("list");
        assert_eq!(
            (open[0].title.as_str(), open[0].draft),
            ("Bump web to 2", false)
        );
        fake.clear_calls();
        forge
            .update_pull(n, "Bump web to 3", "b")
            .await
            .expect("update");
        assert_eq!(
            fake.write_calls()[0].body,
            Some(json!({"title": "Bump web to 3", "body": "b"}))
        );

        // A human's own spelling of the prefix is recognised and kept.
        fake.set_title(n, "[wip]Bump web to 3");
        let open = forge.open_pulls(PREFIX).await.expect("list");
        assert_eq!(
            (open[0].title.as_str(), open[0].draft),
            ("Bump web to 3", true)
        );
        fake.clear_calls();
        forge
            .update_pull(n, "Bump web to 4", "b")
            .await
            .expect("update");
        assert_eq!(fake.pull(n).title, "[wip] Bump web to 4");

        // A draft title that already has a prefix gets no second one.
        let prefixed = NewPull {
            draft: true,
            ..new_pull("imagebump/api", "WIP: Bump api", "b")
        };
        let created = forge.create_pull(&prefixed).await.expect("create");
        assert_eq!(fake.pull(created.number).title, "WIP: Bump api");
    }

    #[tokio::test]
    async fn close_pull_patches_state() {
        let fake = FakeGitea::start().await;
        let forge = connect(&fake);
        let n = fake.add_pull("imagebump/web", "main", "Bump web", "");
        fake.clear_calls();
        forge.close_pull(n).await.expect("close");
        let writes = fake.write_calls();
        assert_eq!(
            lines(&writes),
            [format!("PATCH {}", fake.repo_path(&format!("/pulls/{n}")))]
        );
        assert_eq!(writes[0].body, Some(json!({"state": "closed"})));
        assert!(forge.open_pulls(PREFIX).await.expect("list").is_empty());
        let closed = forge.closed_pulls(PREFIX, 10).await.expect("list");
        assert_eq!(numbers(&closed), [n]);
        assert_eq!(closed[0].state, PullState::Closed);
    }

    #[tokio::test]
    async fn closed_pulls_most_recent_first_merged_or_not_at_most_limit() {
        let fake = FakeGitea::start().await;
        let forge = connect(&fake);
        let a = fake.add_pull("imagebump/a", "main", "a", "");
        let b = fake.add_pull("imagebump/b", "main", "b", "");
        let c = fake.add_pull("imagebump/c", "main", "c", "");
        let d = fake.add_pull("imagebump/d", "main", "d", "");
        let human = fake.add_pull("feature/x", "main", "x", "");
        let still_open = fake.add_pull("imagebump/e", "main", "e", "");
        fake.merge(b);
        fake.close(a);
        fake.close(human);
        fake.merge(d);
        fake.close(c);

        let closed = forge.closed_pulls(PREFIX, 10).await.expect("list");
        assert_eq!(numbers(&closed), [c, d, a, b]);
        let states: Vec<PullState> = closed.iter().map(|p| p.state).collect();
        assert_eq!(
            states,
            [
                PullState::Closed,
                PullState::Merged,
                PullState::Closed,
                PullState::Merged
            ]
        );
        assert!(!numbers(&closed).contains(&still_open));
        let list = fake.calls().pop().expect("a list request");
        assert_eq!(list.query_value("state"), Some("closed"));
        assert_eq!(list.query_value("sort"), Some("recentupdate"));

        let two = forge.closed_pulls(PREFIX, 2).await.expect("list");
        assert_eq!(numbers(&two), [c, d]);

        fake.clear_calls();
        assert!(forge
            .closed_pulls(PREFIX, 0)
            .await
            .expect("list")
            .is_empty());
        assert!(fake.calls().is_empty(), "a limit of 0 makes no request");
    }

    #[tokio::test]
    async fn labels_existing_matched_missing_created() {
        let fake = FakeGitea::start().await;
        let forge = connect(&fake);
        // 55 labels: the ones wanted are on the second page.
        for i in 0..53 {
            fake.add_label(&format!("area/{i:02}"), "#c0ffee");
        }
        let deps = fake.add_label("dependencies", "#0075ca");
        let auto = fake.add_label("Automerge", "ff0000");
        let n = fake.add_pull("imagebump/web", "main", "Bump web", "");
        fake.clear_calls();

        let wanted = strings(&[
            "dependencies",
            "imagebump",
            "automerge",
            "dependencies",
            " ",
        ]);
        forge.add_labels(n, &wanted).await.expect("labels");
        let created = fake
            .labels()
            .iter()
            .find(|l| l.name == "imagebump")
            .map(|l| l.id)
            .expect("the missing label was created");
        let labels_path = fake.repo_path("/labels");
        assert_eq!(pages(&fake, "/labels"), ["1", "2"]);
        let writes = fake.write_calls();
        assert_eq!(
            lines(&writes),
            [
                format!("POST {labels_path}"),
                format!("POST {}", fake.repo_path(&format!("/issues/{n}/labels"))),
            ]
        );
        assert_eq!(
            writes[0].body,
            Some(json!({"name": "imagebump", "color": "#ededed"}))
        );
        assert_eq!(
            writes[1].body,
            Some(json!({"labels": [deps, created, auto]}))
        );
        assert_eq!(
            fake.pull(n).label_names(),
            ["dependencies", "imagebump", "Automerge"]
        );
        let open = forge.open_pulls(PREFIX).await.expect("list");
        assert_eq!(open[0].labels, ["dependencies", "imagebump", "Automerge"]);

        // Labels it has stay; an existing label is not created again.
        fake.clear_calls();
        forge
            .add_labels(n, &strings(&["imagebump"]))
            .await
            .expect("labels");
        assert_eq!(
            fake.write_calls()[0].line(),
            format!("POST {}", fake.repo_path(&format!("/issues/{n}/labels")))
        );
        assert_eq!(fake.write_calls().len(), 1);
        assert_eq!(fake.pull(n).labels.len(), 3);

        fake.clear_calls();
        forge.add_labels(n, &[]).await.expect("no labels");
        forge
            .add_labels(n, &strings(&["", "  "]))
            .await
            .expect("blank labels");
        assert!(fake.calls().is_empty(), "no labels make no request");
    }

    #[tokio::test]
    async fn reviewers_users_and_teams() {
        let fake = FakeGitea::start().await;
        let forge = connect(&fake);
        let n = fake.add_pull("imagebump/web", "main", "Bump web", "");
        fake.clear_calls();
        let reviewers = strings(&["alice", "@bob", "octo/platform", "@octo/sre", "", "org/"]);
        forge
            .request_reviewers(n, &reviewers)
            .await
            .expect("reviewers");
        let writes = fake.write_calls();
        assert_eq!(
            lines(&writes),
            [format!(
                "POST {}",
                fake.repo_path(&format!("/pulls/{n}/requested_reviewers"))
            )]
        );
        assert_eq!(
            writes[0].body,
            Some(json!({"reviewers": ["alice", "bob"], "team_reviewers": ["platform", "sre"]}))
        );
        assert_eq!(fake.pull(n).reviewers, ["alice", "bob"]);
        assert_eq!(fake.pull(n).team_reviewers, ["platform", "sre"]);

        fake.clear_calls();
        forge
            .request_reviewers(n, &strings(&["octo/qa"]))
            .await
            .expect("a team");
        assert_eq!(
            fake.write_calls()[0].body,
            Some(json!({"team_reviewers": ["qa"]}))
        );

        fake.clear_calls();
        forge.request_reviewers(n, &[]).await.expect("none");
        forge
            .request_reviewers(n, &strings(&["", "@", "org/"]))
            .await
            .expect("blank");
        assert!(fake.calls().is_empty(), "no reviewers make no request");

        match forge
            .request_reviewers(n, &strings(&[FakeGitea::BOT_LOGIN]))
            .await
        {
            Err(Error::Status {
                status: 422,
                message,
            }) => {
                assert!(message.contains("poster"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn assignees_are_added_to_those_assigned() {
        let fake = FakeGitea::start().await;
        let forge = connect(&fake);
        let n = fake.add_pull("imagebump/web", "main", "Bump web", "");
        fake.set_assignees(n, &["carol"]);
        fake.clear_calls();
        forge
            .add_assignees(n, &strings(&["@alice", "Carol", " bob "]))
            .await
            .expect("assignees");
        let issue = fake.repo_path(&format!("/issues/{n}"));
        assert_eq!(
            lines(&fake.calls()),
            [format!("GET {issue}"), format!("PATCH {issue}")]
        );
        assert_eq!(
            fake.write_calls()[0].body,
            Some(json!({"assignees": ["carol", "alice", "bob"]}))
        );
        assert_eq!(fake.pull(n).assignees, ["carol", "alice", "bob"]);

        // All assigned already: no write.
        fake.clear_calls();
        forge
            .add_assignees(n, &strings(&["alice"]))
            .await
            .expect("assignees");
        assert_eq!(lines(&fake.calls()), [format!("GET {issue}")]);

        // None assigned: Gitea answers `"assignees": null`.
        let m = fake.add_pull("imagebump/api", "main", "Bump api", "");
        fake.clear_calls();
        forge
            .add_assignees(m, &strings(&["alice"]))
            .await
            .expect("assignees");
        assert_eq!(
            fake.write_calls()[0].body,
            Some(json!({"assignees": ["alice"]}))
        );

        fake.clear_calls();
        forge.add_assignees(n, &[]).await.expect("none");
        forge
            .add_assignees(n, &strings(&["@", " "]))
            .await
            .expect("blank");
        assert!(fake.calls().is_empty(), "no assignees make no request");
    }

    #[tokio::test]
    async fn forks_are_not_ours() {
        let fake = FakeGitea::start().await;
        let forge = connect(&fake);
        let fork = fake.add_fork_pull("mallory", "imagebump/web", "main", "not ours");
        let gone = fake.add_fork_pull("eve", "imagebump/api", "main", "fork deleted");
        fake.delete_head_repo(gone);
        let ours = fake.add_pull("imagebump/web", "main", "ours", "");
        let open = forge.open_pulls(PREFIX).await.expect("list");
        assert_eq!(numbers(&open), [ours]);
        for n in [fork, gone, ours] {
            fake.close(n);
        }
        let closed = forge.closed_pulls(PREFIX, 10).await.expect("list");
        assert_eq!(numbers(&closed), [ours]);
    }

    #[tokio::test]
    async fn pagination_reads_every_page() {
        let fake = FakeGitea::start().await;
        let forge = connect(&fake);
        let mut ours = Vec::new();
        for i in 0..120 {
            if i % 6 == 5 {
                fake.add_pull(&format!("feature/{i}"), "main", "human", "");
            } else {
                ours.push(fake.add_pull(&format!("imagebump/app-{i}"), "main", "bump", ""));
            }
        }
        let sorted = |pulls: Vec<Pull>| {
            let mut numbers = numbers(&pulls);
            numbers.sort_unstable();
            numbers
        };

        // Pages of 50 with `Link`: three pages.
        let open = forge.open_pulls(PREFIX).await.expect("list");
        assert_eq!(sorted(open), ours);
        assert_eq!(pages(&fake, "/pulls"), ["1", "2", "3"]);
        assert!(fake
            .calls()
            .iter()
            .all(|c| c.query_value("limit") == Some("50")));

        // A server whose pages hold 20 at most: every page is short, `Link` says go on.
        fake.set_max_limit(20);
        fake.clear_calls();
        let open = forge.open_pulls(PREFIX).await.expect("list");
        assert_eq!(sorted(open), ours);
        assert_eq!(pages(&fake, "/pulls"), ["1", "2", "3", "4", "5", "6"]);

        // No `Link`: a short page is the last.
        fake.set_max_limit(50);
        fake.set_link_header(false);
        fake.clear_calls();
        let open = forge.open_pulls(PREFIX).await.expect("list");
        assert_eq!(sorted(open), ours);
        assert_eq!(pages(&fake, "/pulls"), ["1", "2", "3"]);

        // No `Link` and exactly two full pages: the empty third one ends it.
        for n in 1..=20 {
            fake.close(n);
        }
        fake.clear_calls();
        let open = forge.open_pulls(PREFIX).await.expect("list");
        assert_eq!(open.len(), ours.iter().filter(|n| **n > 20).count());
        assert_eq!(pages(&fake, "/pulls"), ["1", "2", "3"]);
    }

    #[tokio::test]
    async fn statuses_map_to_errors() {
        let fake = FakeGitea::start().await;
        let forge = connect(&fake);
        let n = fake.add_pull("imagebump/web", "main", "Bump web", "");

        let stranger = connect_with(&fake, "not-the-token");
        match stranger.open_pulls(PREFIX).await {
            Err(Error::Unauthorized { hint }) => {
                assert!(
                    hint.contains("write:repository") && hint.contains("write:issue"),
                    "{hint}"
                );
            }
            other => panic!("{other:?}"),
        }

        fake.fail_next(403);
        match forge.comment(n, "hello").await {
            Err(Error::Forbidden { message }) => {
                assert!(message.contains("write:issue"), "{message}");
                assert!(
                    message.contains("pull request #1 in octo/gitops"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }

        match forge.close_pull(404).await {
            Err(error @ Error::NotFound { .. }) => assert!(!error.is_retryable()),
            other => panic!("{other:?}"),
        }

        match forge
            .create_pull(&new_pull("imagebump/web", "again", ""))
            .await
        {
            Err(Error::Status {
                status: 409,
                message,
            }) => {
                assert!(message.contains("already exists"), "{message}");
            }
            other => panic!("{other:?}"),
        }

        match forge.create_pull(&new_pull("main", "nothing", "")).await {
            Err(Error::Status {
                status: 422,
                message,
            }) => {
                assert!(message.contains("no changes"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(fake.pulls().len(), 1, "nothing was created");
    }

    #[tokio::test]
    async fn rate_limits_wait_for_retry_after() {
        let fake = FakeGitea::start().await;
        let forge = connect(&fake);
        fake.add_pull("imagebump/web", "main", "Bump web", "");

        fake.fail_next_retry_after(429, "1");
        fake.clear_calls();
        let started = Instant::now();
        let open = forge.open_pulls(PREFIX).await.expect("retried");
        assert_eq!(open.len(), 1);
        assert!(
            started.elapsed() >= Duration::from_secs(1),
            "waited Retry-After"
        );
        let statuses: Vec<u16> = fake.calls().iter().map(|c| c.status).collect();
        assert_eq!(statuses, [429, 200]);

        // A wait too long to sit out is reported at once.
        fake.fail_next_retry_after(429, "3600");
        fake.clear_calls();
        match forge.open_pulls(PREFIX).await {
            Err(Error::RateLimited { retry_after }) => {
                assert_eq!(retry_after, Some(Duration::from_secs(3600)));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(fake.calls().len(), 1);

        // An HTTP date in the past: no wait. A 429 was not acted on, so a POST is retried.
        fake.fail_next_retry_after(429, "Thu, 01 Jan 2015 00:00:00 GMT");
        fake.clear_calls();
        forge.comment(1, "hi").await.expect("retried");
        assert_eq!(fake.write_calls().len(), 2);
        assert_eq!(fake.pull(1).comments, ["hi"]);

        // Without Retry-After: bounded back-off, then the error.
        for _ in 0..MAX_ATTEMPTS {
            fake.fail_next(429);
        }
        fake.clear_calls();
        assert!(matches!(
            forge.open_pulls(PREFIX).await,
            Err(Error::RateLimited { retry_after: None })
        ));
        assert_eq!(fake.calls().len(), MAX_ATTEMPTS as usize);
    }

    #[tokio::test]
    async fn server_errors_retry_get_and_patch_not_post() {
        let fake = FakeGitea::start().await;
        let forge = connect(&fake);
        let n = fake.add_pull("imagebump/web", "main", "Bump web", "");

        fake.fail_next(500);
        fake.clear_calls();
        assert_eq!(forge.open_pulls(PREFIX).await.expect("retried").len(), 1);
        assert_eq!(fake.calls().len(), 2);

        for _ in 0..MAX_ATTEMPTS {
            fake.fail_next(502);
        }
        fake.clear_calls();
        match forge.open_pulls(PREFIX).await {
            Err(error @ Error::Status { status: 502, .. }) => assert!(error.is_retryable()),
            other => panic!("{other:?}"),
        }
        assert_eq!(fake.calls().len(), MAX_ATTEMPTS as usize);

        // close_pull is one PATCH: retried.
        fake.fail_next(503);
        fake.clear_calls();
        forge.close_pull(n).await.expect("retried");
        assert_eq!(fake.write_calls().len(), 2);
        assert_eq!(fake.pull(n).state, "closed");

        // A POST answered 500 may have been acted on: not retried.
        fake.fail_next(500);
        fake.clear_calls();
        match forge
            .create_pull(&new_pull("imagebump/api", "Bump api", ""))
            .await
        {
            Err(Error::Status { status: 500, .. }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(
            lines(&fake.calls()),
            [format!("POST {}", fake.repo_path("/pulls"))]
        );

        fake.fail_next(500);
        fake.clear_calls();
        assert!(forge.comment(n, "hello").await.is_err());
        assert_eq!(fake.calls().len(), 1);
        assert!(fake.pull(n).comments.is_empty());
    }

    #[tokio::test]
    async fn no_error_holds_the_token() {
        let fake = FakeGitea::start().await;
        let forge = connect(&fake);
        let token = FakeGitea::TOKEN;
        let n = fake.add_pull("imagebump/web", "main", "Bump web", "");
        let mut errors = Vec::new();

        errors.push(connect_with(&fake, "wrong").open_pulls(PREFIX).await.err());
        let echo = format!("bad header: Authorization: token {token}");
        fake.fail_next_message(403, &echo);
        errors.push(forge.comment(n, "x").await.err());
        fake.fail_next_message(422, &echo);
        errors.push(
            forge
                .create_pull(&new_pull("imagebump/x", "x", ""))
                .await
                .err(),
        );
        for _ in 0..MAX_ATTEMPTS {
            fake.fail_next_message(500, &echo);
        }
        errors.push(forge.open_pulls(PREFIX).await.err());
        errors.push(forge.update_pull(999, "x", "y").await.err());

        // Nothing listens on the port of a listener just dropped.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut nowhere = Gitea::new(settings(&format!("http://127.0.0.1:{port}/api/v1"), token))
            .expect("settings");
        nowhere.api.transport = quick_transport();
        match nowhere.open_pulls(PREFIX).await {
            Err(error @ Error::Transport { .. }) => errors.push(Some(error)),
            other => panic!("{other:?}"),
        }
        let with_credentials = format!("https://user:{token}@git.example.com/api/v1");
        errors.push(Gitea::new(settings(&with_credentials, token)).err());
        errors.push(Gitea::new(settings("not a url", token)).err());

        errors.push(
            Gitea::new(settings(
                &format!("{}?token={token}", fake.api_url()),
                token,
            ))
            .err(),
        );

        assert_eq!(errors.iter().filter(|e| e.is_some()).count(), errors.len());
        let mut redacted = 0;
        for error in errors.into_iter().flatten() {
            let text = format!("{error} {error:?} {}", error.hint().unwrap_or_default());
            assert!(!text.contains(token), "{text}");
            redacted += usize::from(text.contains("token <redacted>"));
        }
        assert_eq!(
            redacted, 3,
            "the echoed token was replaced, not the message dropped"
        );
        let settings = settings(&fake.api_url(), token);
        assert!(!format!("{settings:?}").contains(token));
        assert!(!format!("{forge:?}").contains(token));
    }

    #[test]
    fn settings_are_checked() {
        let ok = "https://git.example.com/api/v1";
        assert!(Gitea::new(settings(ok, " secret\n")).is_ok());
        assert!(matches!(
            Gitea::new(settings(ok, "  ")),
            Err(Error::Unauthorized { .. })
        ));
        assert!(matches!(
            Gitea::new(settings(ok, "to ken")),
            Err(Error::Config(_))
        ));
        assert!(matches!(
            Gitea::new(settings("ftp://git.example.com", "t")),
            Err(Error::Config(_))
        ));
        let bad_owner = GiteaSettings {
            owner: "a/b".to_string(),
            ..settings(ok, "t")
        };
        assert!(matches!(Gitea::new(bad_owner), Err(Error::Config(_))));
    }

    #[test]
    fn repo_from_url_forms() {
        let pair = |o: &str, r: &str| Some((o.to_string(), r.to_string()));
        for (url, expected) in [
            ("https://codeberg.org/octo/gitops", pair("octo", "gitops")),
            (
                "https://codeberg.org/octo/gitops.git",
                pair("octo", "gitops"),
            ),
            (
                "https://codeberg.org/octo/gitops.git/",
                pair("octo", "gitops"),
            ),
            ("HTTPS://Codeberg.org/octo/gitops", pair("octo", "gitops")),
            (
                "http://127.0.0.1:3000/octo/gitops.git",
                pair("octo", "gitops"),
            ),
            (
                "https://git.example.com/gitea/octo/gitops.git",
                pair("octo", "gitops"),
            ),
            (
                "https://git.example.com/a/b/octo/my.repo",
                pair("octo", "my.repo"),
            ),
            (
                "https://user:tok@git.example.com/octo/gitops.git",
                pair("octo", "gitops"),
            ),
            (
                "  git@codeberg.org:octo/gitops.git\n",
                pair("octo", "gitops"),
            ),
            ("git@codeberg.org:octo/gitops", pair("octo", "gitops")),
            (
                "codeberg.org:octo/app_config.git",
                pair("octo", "app_config"),
            ),
            (
                "ssh://git@codeberg.org/octo/gitops.git",
                pair("octo", "gitops"),
            ),
            (
                "ssh://git@git.example.com:2222/octo/gitops.git",
                pair("octo", "gitops"),
            ),
            (
                "git://git.example.com/octo/gitops.git",
                pair("octo", "gitops"),
            ),
            ("", None),
            ("codeberg.org", None),
            ("https://codeberg.org/octo", None),
            ("https://codeberg.org/octo/", None),
            ("https:///octo/gitops", None),
            ("ssh://git@host/sub/octo/gitops.git", None),
            ("git@host:sub/octo/gitops.git", None),
            ("git@host:/octo/gitops.git", None),
            ("/srv/git/gitops.git", None),
            ("./gitops", None),
            ("file:///srv/git/octo/gitops.git", None),
            ("ftp://codeberg.org/octo/gitops", None),
            ("https://codeberg.org/octo/git ops", None),
            ("https://codeberg.org/octo/..", None),
        ] {
            assert_eq!(repo_from_url(url), expected, "{url:?}");
        }
    }

    #[test]
    fn api_url_for_hosts() {
        assert_eq!(
            api_url_for_host("codeberg.org"),
            "https://codeberg.org/api/v1"
        );
        assert_eq!(
            api_url_for_host("git.example.com:3000/"),
            "https://git.example.com:3000/api/v1"
        );
        assert_eq!(
            api_url_for_host("git.example.com/gitea"),
            "https://git.example.com/gitea/api/v1"
        );
        assert_eq!(
            api_url_for_host("http://127.0.0.1:3000"),
            "http://127.0.0.1:3000/api/v1"
        );
    }

    #[test]
    fn wip_prefixes() {
        assert_eq!(wip_prefix("WIP: x"), Some("WIP: "));
        assert_eq!(wip_prefix("wip:x"), Some("wip:"));
        assert_eq!(wip_prefix("[WIP]  x"), Some("[WIP]  "));
        assert_eq!(wip_prefix("[wip] x"), Some("[wip] "));
        assert_eq!(wip_prefix("WIPE: x"), None);
        assert_eq!(wip_prefix("Bump WIP: x"), None);
        assert_eq!(wip_prefix("Wé"), None);
        assert_eq!(strip_wip("WIP: Bump web"), "Bump web");
        assert_eq!(strip_wip("Bump web"), "Bump web");
    }

    #[test]
    fn reviewers_split_into_users_and_teams() {
        let input = strings(&["alice", "@bob", "octo/platform", "@octo/sre", "", "org/"]);
        let (users, teams) = crate::split_reviewers(&input);
        assert_eq!(users, ["alice", "bob"]);
        assert_eq!(teams, ["platform", "sre"]);
    }

    #[test]
    fn error_messages_from_bodies() {
        assert_eq!(
            error_message(r#"{"message":"token is required","url":"https://x/api/swagger"}"#),
            "token is required"
        );
        assert_eq!(
            error_message(
                r#"{"errors":["branch does not exist"],"message":"The target couldn't be found."}"#
            ),
            "The target couldn't be found.: branch does not exist"
        );
        assert_eq!(
            error_message(
                r#"[{"fieldNames":["Title"],"classification":"RequiredError","message":"Required"}]"#
            ),
            "Title: Required"
        );
        assert_eq!(
            error_message("<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
        assert_eq!(error_message(""), "");
    }

    #[test]
    fn more_pages_from_link_or_a_full_page() {
        assert!(more_pages(Some(true), 3));
        assert!(!more_pages(Some(false), 50));
        assert!(!more_pages(Some(true), 0));
        assert!(more_pages(None, 50));
        assert!(!more_pages(None, 49));
    }
}
