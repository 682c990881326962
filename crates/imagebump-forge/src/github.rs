//! GitHub (github.com and GitHub Enterprise Server) through its REST API.
//!
//! A thin client on the one HTTP transport (`imagebump-http`), so GitHub's requests share the
//! retry rule of every other server: a rate limit is waited out when short (any method), a
//! 5xx or a transport failure is retried for GET and PATCH (which only sets fields), never a
//! POST (it may have been acted on: retrying a create could open a pull request twice). Rate-limit headers (`Retry-After`,
//! `x-ratelimit-*`, a 403 that says "rate limit") decide the wait; `Link` drives pagination.
//!
//! octocrab was used before for the client set-up and GitHub App authentication; neither
//! needs it: an App signs a 10-minute RS256 JWT (`jsonwebtoken`), looks up its installation
//! on the repository and exchanges the JWT for an installation token scoped to it, renewed
//! before its hour is up. Bodies are read into small structs holding only the fields used, so
//! an older GHE that lacks a newer field still works.

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use imagebump_http::header::{HeaderValue, ACCEPT, AUTHORIZATION};
use imagebump_http::{Dialect, Method, Options, Redactor, Request, Response, Transport, Url};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::Mutex;

mod issues;

use super::{
    logins, ApiCommit, BranchJson, Error, Forge, GitHubAuth, GitHubSettings, LoginJson,
    MergeMethod, NewPull, Pull, PullState,
};

/// Items per page: GitHub's maximum.
const PER_PAGE: usize = 100;
/// Pages read for one listing of open pull requests (100,000 pull requests), a guard against a
/// server whose `Link` never ends.
const MAX_PAGES: usize = 1000;
/// Pages of closed pull requests read (the most recently updated 1,000), whatever the limit:
/// an old repository has tens of thousands, and only recent rejections matter.
const MAX_CLOSED_PAGES: usize = 10;
/// GitHub's advice when a secondary rate limit (a 403) names no wait: at least a minute.
const SECONDARY_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);
/// An installation token lives an hour; a new one is asked for after this.
const INSTALLATION_TOKEN_REUSE: Duration = Duration::from_secs(50 * 60);

const TOKEN_HINT: &str =
    "set GITHUB_TOKEN or IMAGEBUMP_FORGE_TOKEN (needs contents: write, pull-requests: write)";

/// A GitHub repository's pull requests.
pub struct GitHub {
    api: Api,
    owner: String,
    repo: String,
    auth: AuthKind,
}

enum AuthKind {
    Token(SecretString),
    App(App),
}

/// A GitHub App installed on the repository.
struct App {
    app_id: u64,
    key: jsonwebtoken::EncodingKey,
    installation: u64,
    /// The current installation token and when it was issued.
    token: Mutex<Option<(SecretString, Instant)>>,
}

impl std::fmt::Debug for GitHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitHub")
            .field("api_url", &self.api.base.as_str())
            .field("owner", &self.owner)
            .field("repo", &self.repo)
            .finish_non_exhaustive()
    }
}

impl GitHub {
    /// Builds the client. A token is used as is (no request is made); a GitHub App looks up
    /// its installation on the repository (`GET /repos/{owner}/{repo}/installation`, signed
    /// with the app's JWT) and exchanges it for an installation token scoped to the repository
    /// (`POST /app/installations/{id}/access_tokens`).
    pub async fn connect(settings: GitHubSettings) -> Result<GitHub, Error> {
        let base = super::api_base(&settings.api_url, "GitHub")?;
        check_name("owner", &settings.owner)?;
        check_name("repository", &settings.repo)?;
        let transport = Transport::new(Options::default()).map_err(Error::Config)?;
        let (auth, hint, redactor) = match settings.auth {
            GitHubAuth::Token(token) => {
                let token = crate::clean_token(&token, "GitHub", TOKEN_HINT)?;
                let redactor = Redactor::default().with(token.expose_secret());
                (AuthKind::Token(token), TOKEN_HINT.to_string(), redactor)
            }
            GitHubAuth::App {
                app_id,
                private_key_pem,
            } => {
                let key = jsonwebtoken::EncodingKey::from_rsa_pem(
                    private_key_pem.expose_secret().as_bytes(),
                )
                .map_err(|_| {
                    Error::Config(format!(
                        "the private key of GitHub App {app_id} is not an RSA key in PEM form \
                         (use the .pem file GitHub generated for the app)"
                    ))
                })?;
                let hint = format!(
                    "check the GitHub App id ({app_id}) and its private key, and that the app \
                     is installed on {}/{}",
                    settings.owner, settings.repo
                );
                let app = App {
                    app_id,
                    key,
                    installation: 0,
                    token: Mutex::new(None),
                };
                (AuthKind::App(app), hint, Redactor::default())
            }
        };
        let mut github = GitHub {
            api: Api {
                transport,
                base,
                hint,
                redactor,
            },
            owner: settings.owner,
            repo: settings.repo,
            auth,
        };
        if let AuthKind::App(app) = &github.auth {
            let installation = github.installation(app).await?;
            if let AuthKind::App(app) = &mut github.auth {
                app.installation = installation;
            }
            // Fetch the token now: a refused exchange fails here, not at the first write.
            github.credential().await?;
        }
        Ok(github)
    }

    /// Sends through `transport` from now on (other timeouts or retry numbers).
    pub fn with_transport(mut self, transport: Transport) -> GitHub {
        self.api.transport = transport;
        self
    }

    /// The credential for `git push` over HTTPS (user `x-access-token`): the token, or a
    /// current installation token of the GitHub App (renewed when it nears expiry).
    pub async fn git_token(&self) -> Result<SecretString, Error> {
        self.credential().await
    }

    /// What the API calls carry: the token, or the App's current installation token.
    async fn credential(&self) -> Result<SecretString, Error> {
        let app = match &self.auth {
            AuthKind::Token(token) => return Ok(token.clone()),
            AuthKind::App(app) => app,
        };
        let mut current = app.token.lock().await;
        if let Some((token, issued)) = current.as_ref() {
            if issued.elapsed() < INSTALLATION_TOKEN_REUSE {
                return Ok(token.clone());
            }
        }
        #[derive(Deserialize)]
        struct AccessToken {
            token: String,
        }
        let path = format!("/app/installations/{}/access_tokens", app.installation);
        let body = json!({ "repositories": [self.repo] });
        let jwt = app.jwt()?;
        let what = "the GitHub App installation token";
        let reply = self
            .api
            .send(Method::POST, &self.api.url(&path)?, Some(&body), what, &jwt)
            .await?;
        let token = SecretString::from(parse::<AccessToken>(&reply.body, "POST", &path)?.token);
        *current = Some((token.clone(), Instant::now()));
        Ok(token)
    }

    /// The App's installation on this repository.
    async fn installation(&self, app: &App) -> Result<u64, Error> {
        #[derive(Deserialize)]
        struct Installation {
            id: u64,
        }
        let full = self.full_name();
        let path = format!("/repos/{full}/installation");
        let what = format!(
            "a GitHub App {} installation on {full} (install the app on the repository)",
            app.app_id
        );
        let reply = self
            .api
            .send(Method::GET, &self.api.url(&path)?, None, &what, &app.jwt()?)
            .await?;
        Ok(parse::<Installation>(&reply.body, "GET", &path)?.id)
    }

    /// A GitHub App's bot login, `<slug>[bot]` (`GET /app`, signed with the app's JWT).
    async fn app_login(&self, app: &App) -> Result<String, Error> {
        #[derive(Deserialize)]
        struct AppJson {
            slug: String,
        }
        let what = format!("GitHub App {}", app.app_id);
        let reply = self
            .api
            .send(
                Method::GET,
                &self.api.url("/app")?,
                None,
                &what,
                &app.jwt()?,
            )
            .await?;
        Ok(format!(
            "{}[bot]",
            parse::<AppJson>(&reply.body, "GET", "/app")?.slug
        ))
    }

    /// The token's account by GraphQL (`viewer`), which answers installation tokens too:
    /// their bot, `<app>[bot]` as pull requests' authors are named (a `Bot` named without
    /// the suffix gets it, so that the two compare equal).
    async fn viewer(&self) -> Result<String, Error> {
        let query = json!({ "query": "query { viewer { __typename login } }" });
        let answer = self.graphql(&query, "the token's user").await?;
        let viewer = answer.data.as_ref().and_then(|d| d.get("viewer"));
        let login = viewer.and_then(|v| v.get("login")).and_then(Value::as_str);
        let kind = viewer
            .and_then(|v| v.get("__typename"))
            .and_then(Value::as_str);
        match (login, kind) {
            (Some(login), Some("Bot")) if !login.ends_with("[bot]") => Ok(format!("{login}[bot]")),
            (Some(login), _) => Ok(login.to_string()),
            (None, _) => Err(Error::Refused {
                message: "GitHub named no viewer for the token".to_string(),
            }),
        }
    }

    fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.repo)
    }

    fn repo_path(&self, rest: &str) -> String {
        format!("/repos/{}/{}{rest}", self.owner, self.repo)
    }

    fn pull_what(&self, number: u64) -> String {
        format!("pull request #{number} in {}", self.full_name())
    }

    /// Pull requests of one state whose head is a branch of this repository starting with
    /// `prefix`, reading at most `max_pages`, stopping once `enough` were found.
    async fn list_pulls(
        &self,
        query: &str,
        prefix: &str,
        max_pages: usize,
        enough: usize,
    ) -> Result<Vec<PullJson>, Error> {
        let full = self.full_name();
        let what = format!("repository {full}");
        let path = self.repo_path(&format!("/pulls?{query}&per_page={PER_PAGE}"));
        let mut next = Some(self.api.url(&path)?);
        let mut seen = HashSet::new();
        let mut found = Vec::new();
        let mut pages: usize = 0;
        let mut budget = crate::ListBudget::default();
        while let Some(url) = next.take() {
            if !seen.insert(url.clone()) || pages == max_pages {
                break;
            }
            pages = pages.saturating_add(1);
            let token = self.credential().await?;
            let reply = self
                .api
                .send(Method::GET, &url, None, &what, &token)
                .await?;
            budget.take(reply.body.len(), &what)?;
            let page: Vec<PullJson> = parse(&reply.body, "GET", url.path())?;
            found.extend(page.into_iter().filter(|p| p.is_ours(&full, prefix)));
            if found.len() >= enough {
                break;
            }
            next = reply.next.map(|link| self.api.inside(link)).transpose()?;
        }
        Ok(found)
    }

    /// A GraphQL request; its `errors` (GitHub answers 200 with them) as a refusal.
    async fn graphql(&self, payload: &Value, what: &str) -> Result<GraphQlJson, Error> {
        let token = self.credential().await?;
        let url = self.api.graphql_url()?;
        let reply = self
            .api
            .send(Method::POST, &url, Some(payload), what, &token)
            .await?;
        let answer: GraphQlJson = parse(&reply.body, "POST", url.path())?;
        match answer.errors.first() {
            None => Ok(answer),
            Some(e) => Err(crate::redacted(
                Error::Refused {
                    message: format!("{what}: {}", e.message),
                },
                &self.api.redactor,
            )),
        }
    }

    /// A request relative to the API base with this repository's credential.
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        what: &str,
    ) -> Result<Reply, Error> {
        let token = self.credential().await?;
        let url = self.api.url(path)?;
        self.api.send(method, &url, body, what, &token).await
    }

    async fn write(
        &self,
        method: Method,
        path: &str,
        body: Value,
        what: &str,
    ) -> Result<(), Error> {
        self.call(method, path, Some(&body), what).await.map(drop)
    }
}

#[async_trait::async_trait]
impl Forge for GitHub {
    fn name(&self) -> &'static str {
        "GitHub"
    }

    async fn open_pulls(&self, prefix: &str) -> Result<Vec<Pull>, Error> {
        let found = self
            .list_pulls("state=open", prefix, MAX_PAGES, usize::MAX)
            .await?;
        Ok(found.into_iter().map(PullJson::into_pull).collect())
    }

    async fn closed_pulls(&self, prefix: &str, limit: usize) -> Result<Vec<Pull>, Error> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut found = self
            .list_pulls(
                "state=closed&sort=updated&direction=desc",
                prefix,
                MAX_CLOSED_PAGES,
                limit,
            )
            .await?;
        // GitHub already sorts; sorting again keeps the promise if a page boundary moved
        // while reading (a pull request updated meanwhile).
        found.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
        found.truncate(limit);
        Ok(found.into_iter().map(PullJson::into_pull).collect())
    }

    async fn releases(&self, repo: &str, limit: usize) -> Result<Vec<crate::Release>, Error> {
        let parts = crate::repo_segments(repo, 2)?;
        let per_page = limit.clamp(1, crate::RELEASES_PAGE);
        let path = format!("/repos/{}/releases?per_page={per_page}", parts.join("/"));
        let what = format!("releases of {}", parts.join("/"));
        let reply = self.call(Method::GET, &path, None, &what).await?;
        let page: Vec<crate::ReleaseJson> = parse(&reply.body, "GET", &path)?;
        Ok(crate::ReleaseJson::published(page, limit))
    }

    async fn audience(&self, repo: &str) -> Result<crate::Audience, Error> {
        let parts = crate::repo_segments(repo, 2)?;
        let name = parts.join("/");
        if name.eq_ignore_ascii_case(&self.full_name()) {
            return Ok(crate::Audience::ThisRepository);
        }
        let path = format!("/repos/{name}");
        let what = format!("visibility of {name}");
        let reply = self.call(Method::GET, &path, None, &what).await?;
        let answer: crate::VisibilityJson = parse(&reply.body, "GET", &path)?;
        Ok(answer.audience(&self.full_name()))
    }

    async fn whoami(&self) -> Result<String, Error> {
        if let AuthKind::App(app) = &self.auth {
            return self.app_login(app).await;
        }
        let path = "/user";
        match self.call(Method::GET, path, None, "the token's user").await {
            Ok(reply) => Ok(parse::<LoginJson>(&reply.body, "GET", path)?.login),
            // An installation token (Actions' GITHUB_TOKEN) may not read `/user`; GraphQL's
            // viewer is its bot.
            Err(Error::Forbidden { .. }) => self.viewer().await,
            Err(e) => Err(e),
        }
    }

    async fn pull(&self, number: u64) -> Result<Option<Pull>, Error> {
        let path = self.repo_path(&format!("/pulls/{number}"));
        let what = self.pull_what(number);
        let reply = match self.call(Method::GET, &path, None, &what).await {
            Ok(reply) => reply,
            Err(Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let pull: PullJson = parse(&reply.body, "GET", &path)?;
        let full = self.full_name();
        Ok(pull.head.is_in(&full).then(|| pull.into_pull()))
    }

    async fn create_pull(&self, new: &NewPull) -> Result<Pull, Error> {
        let mut body = json!({
            "title": new.title,
            "head": new.branch,
            "base": new.base,
            "body": new.body,
        });
        // Only when asked: a repository without drafts (a private one on a free plan) answers
        // 422 to `draft: true`, and leaving the key out is GitHub's default anyway.
        if let (true, Some(fields)) = (new.draft, body.as_object_mut()) {
            fields.insert("draft".to_string(), Value::Bool(true));
        }
        let path = self.repo_path("/pulls");
        let what = format!("repository {}", self.full_name());
        let reply = self.call(Method::POST, &path, Some(&body), &what).await?;
        let pull: PullJson = parse(&reply.body, "POST", &path)?;
        Ok(pull.into_pull())
    }

    async fn update_pull(&self, number: u64, title: &str, body: &str) -> Result<(), Error> {
        let path = self.repo_path(&format!("/pulls/{number}"));
        let payload = json!({ "title": title, "body": body });
        self.write(Method::PATCH, &path, payload, &self.pull_what(number))
            .await
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
        if labels.is_empty() {
            return Ok(());
        }
        let path = self.repo_path(&format!("/issues/{number}/labels"));
        let payload = json!({ "labels": labels });
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

    /// `GET …/pulls/{n}/reviews?per_page=1`: one review is enough to tell.
    async fn has_reviews(&self, number: u64) -> Result<bool, Error> {
        let path = self.repo_path(&format!("/pulls/{number}/reviews?per_page=1"));
        let what = self.pull_what(number);
        let reply = self.call(Method::GET, &path, None, &what).await?;
        let reviews: Vec<Value> = parse(&reply.body, "GET", &path)?;
        Ok(!reviews.is_empty())
    }

    async fn add_assignees(&self, number: u64, assignees: &[String]) -> Result<(), Error> {
        let assignees: Vec<&str> = assignees
            .iter()
            .map(|a| a.trim_start_matches('@'))
            .filter(|a| !a.is_empty())
            .collect();
        if assignees.is_empty() {
            return Ok(());
        }
        let path = self.repo_path(&format!("/issues/{number}/assignees"));
        let payload = json!({ "assignees": assignees });
        self.write(Method::POST, &path, payload, &self.pull_what(number))
            .await
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

    async fn issue_editors(&self, number: u64, _own: &str) -> Result<crate::Editor, Error> {
        self.editor_of(number).await
    }

    async fn can_write(&self, login: &str) -> Result<bool, Error> {
        self.writer(login).await
    }

    /// The branch is put on the parent (created, or moved back with `force` after checking
    /// it is still where the caller saw it), then GraphQL `createCommitOnBranch` adds the
    /// commit with `expectedHeadOid` = the parent: GitHub creates and signs it.
    async fn commit_by_api(&self, c: &ApiCommit) -> Result<String, Error> {
        use base64::Engine;
        let what = format!("branch {} in {}", c.branch, self.full_name());
        match &c.expected {
            None => {
                let path = self.repo_path("/git/refs");
                let body = json!({ "ref": format!("refs/heads/{}", c.branch), "sha": c.parent });
                self.write(Method::POST, &path, body, &what).await?;
            }
            Some(expected) if *expected != c.parent => {
                let path = self.repo_path(&format!("/git/ref/heads/{}", c.branch));
                let reply = self.call(Method::GET, &path, None, &what).await?;
                let now: RefJson = parse(&reply.body, "GET", &path)?;
                if now.object.sha != *expected {
                    return Err(Error::Refused {
                        message: format!("{what} moved during the run; left for the next run"),
                    });
                }
                let path = self.repo_path(&format!("/git/refs/heads/{}", c.branch));
                let body = json!({ "sha": c.parent, "force": true });
                self.write(Method::PATCH, &path, body, &what).await?;
            }
            Some(_) => {}
        }
        let (headline, rest) = c.message.split_once('\n').unwrap_or((&c.message, ""));
        let additions: Vec<Value> = c
            .files
            .iter()
            .map(|(path, content)| {
                json!({
                    "path": path,
                    "contents": base64::engine::general_purpose::STANDARD.encode(content),
                })
            })
            .collect();
        let payload = json!({
            "query": "mutation($input: CreateCommitOnBranchInput!) { \
                      createCommitOnBranch(input: $input) { commit { oid } } }",
            "variables": { "input": {
                "branch": { "repositoryNameWithOwner": self.full_name(), "branchName": c.branch },
                "message": { "headline": headline.trim(), "body": rest.trim() },
                "fileChanges": { "additions": additions },
                "expectedHeadOid": c.parent,
            }},
        });
        let answer: GraphQlJson = self.graphql(&payload, &what).await?;
        answer
            .data
            .and_then(|d| d.pointer("/createCommitOnBranch/commit/oid").cloned())
            .and_then(|oid| oid.as_str().map(str::to_string))
            .ok_or_else(|| Error::Refused {
                message: format!("{what}: GitHub created no commit"),
            })
    }

    /// GitHub auto-merge exists only in GraphQL (`enablePullRequestAutoMerge`), which
    /// answers 200 with `errors` when it refuses (auto-merge not allowed in the repository,
    /// the pull request already mergeable, ...).
    async fn enable_automerge(&self, pull: &Pull, method: MergeMethod) -> Result<(), Error> {
        if pull.automerge == Some(true) {
            return Ok(());
        }
        let method = match method {
            MergeMethod::Merge => "MERGE",
            MergeMethod::Squash => "SQUASH",
            MergeMethod::Rebase => "REBASE",
        };
        let payload = json!({
            "query": "mutation($id: ID!, $method: PullRequestMergeMethod!) { \
                      enablePullRequestAutoMerge(input: {pullRequestId: $id, mergeMethod: $method}) \
                      { pullRequest { number } } }",
            "variables": { "id": pull.node_id, "method": method },
        });
        let what = self.pull_what(pull.number);
        self.graphql(&payload, &what).await.map(drop)
    }
}

// ---------------------------------------------------------------------------------------------
// requests
// ---------------------------------------------------------------------------------------------

impl App {
    /// A JWT for the App's own endpoints: RS256, issued a minute ago (clock drift), valid
    /// for 9 minutes (GitHub allows at most 10).
    fn jwt(&self) -> Result<SecretString, Error> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let claims = json!({
            "iat": now.saturating_sub(60),
            "exp": now.saturating_add(9 * 60),
            "iss": self.app_id.to_string(),
        });
        let header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map(SecretString::from)
            .map_err(|_| {
                Error::Config("cannot sign a token with the GitHub App's private key".to_string())
            })
    }
}

/// The transport, the API base, and what every message needs.
struct Api {
    transport: Transport,
    /// The API base URL, with a trailing `/`.
    base: Url,
    /// Said with a 401.
    hint: String,
    redactor: Redactor,
}

/// A successful response, read.
struct Reply {
    body: String,
    /// The `Link` header's `rel="next"` URL.
    next: Option<Url>,
}

impl Api {
    /// `path` (`/repos/...`) below the API base.
    fn url(&self, path: &str) -> Result<Url, Error> {
        self.base
            .join(path.trim_start_matches('/'))
            .map_err(|e| Error::Config(format!("cannot form a GitHub API URL for {path}: {e}")))
    }

    /// The GraphQL endpoint: `https://api.github.com/graphql`, or `/api/graphql` beside an
    /// Enterprise Server's `/api/v3`.
    fn graphql_url(&self) -> Result<Url, Error> {
        Ok(graphql_url(&self.base))
    }

    /// A pagination link, refused unless it is below the configured API: credentials go
    /// there only.
    fn inside(&self, link: Url) -> Result<Url, Error> {
        if link.origin() == self.base.origin() && link.path().starts_with(self.base.path()) {
            return Ok(link);
        }
        Err(Error::Transport {
            message: format!(
                "GitHub sent a pagination link outside its API ({})",
                self.redactor.apply(link.as_str())
            ),
            retryable: false,
        })
    }

    /// Sends a request through the transport's one retry loop.
    async fn send(
        &self,
        method: Method,
        url: &Url,
        body: Option<&Value>,
        what: &str,
        credential: &SecretString,
    ) -> Result<Reply, Error> {
        tracing::debug!("GitHub: {method} {}", url.path());
        let bearer = HeaderValue::from_str(&format!("Bearer {}", credential.expose_secret()))
            .map_err(|_| {
                Error::Config("the GitHub token holds characters no HTTP header takes".into())
            })?;
        let mut request = Request::new(method, url.clone())
            .header(ACCEPT, "application/vnd.github+json")
            .secret_header(AUTHORIZATION, bearer);
        if let Some(body) = body {
            request = request.json(body);
        }
        let dialect = GitHubDialect {
            api: self,
            what,
            redactor: self.redactor.clone().with(credential.expose_secret()),
        };
        let response = self.transport.send(&dialect, &request).await?;
        Ok(Reply {
            next: imagebump_http::next_link(&response.headers, &self.base),
            body: response.text(),
        })
    }
}

/// GitHub as the transport sees it: its rate limits (a 429, or a 403 with rate-limit headers
/// or message) and its errors.
struct GitHubDialect<'a> {
    api: &'a Api,
    what: &'a str,
    redactor: Redactor,
}

impl Dialect for GitHubDialect<'_> {
    type Error = Error;

    /// Its PATCHes set fields (title, body, state) to given values: sending one twice does
    /// no more than once, so a 5xx on one is retried like a GET.
    fn idempotent(&self, method: &Method) -> bool {
        imagebump_http::is_idempotent(method) || *method == Method::PATCH
    }

    fn rate_limited(&self, response: &Response) -> Option<Option<Duration>> {
        rate_limit(
            response.status.as_u16(),
            response,
            &error_message(&response.text()),
        )
    }

    fn classify(&self, error: imagebump_http::Error) -> Error {
        use imagebump_http::Error as E;
        let error = match error {
            E::RateLimited { retry_after, .. } => Error::RateLimited { retry_after },
            E::Server { response, .. } | E::Status { response, .. } => classify(
                response.status.as_u16(),
                error_message(&response.text()),
                &self.api.hint,
                self.what,
            ),
            E::TooLarge { limit, .. } => Error::Transport {
                message: format!("GitHub answered with more than {limit} bytes"),
                retryable: false,
            },
            other if other.is_retryable() => Error::Transport {
                message: format!(
                    "cannot reach GitHub: {}",
                    other.reason().unwrap_or_default()
                ),
                retryable: true,
            },
            other => Error::Transport {
                message: format!(
                    "GitHub request failed: {}",
                    other.reason().unwrap_or_default()
                ),
                retryable: false,
            },
        };
        crate::redacted(error, &self.redactor)
    }
}

/// Whether an unsuccessful answer is a rate limit and the wait it asks for: a 429 (its
/// `Retry-After`, else none named), or a 403 with `Retry-After`, an exhausted
/// `x-ratelimit-remaining` (until `x-ratelimit-reset`) or a message saying so (a secondary
/// limit: a minute).
fn rate_limit(status: u16, response: &Response, message: &str) -> Option<Option<Duration>> {
    let retry_after = imagebump_http::retry_after(&response.headers);
    if status == 429 {
        return Some(retry_after);
    }
    let limits = imagebump_http::rate_limit(&response.headers).unwrap_or_default();
    let said = message.to_ascii_lowercase().contains("rate limit");
    if status != 403 || !(retry_after.is_some() || limits.exhausted() || said) {
        return None;
    }
    let until_reset = limits.exhausted().then_some(limits.reset_in).flatten();
    Some(Some(
        retry_after
            .or(until_reset)
            .unwrap_or(SECONDARY_RATE_LIMIT_WAIT),
    ))
}

/// The error for an unsuccessful status that is not a rate limit.
fn classify(status: u16, message: String, hint: &str, what: &str) -> Error {
    match status {
        401 => Error::Unauthorized {
            hint: hint.to_string(),
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

/// GitHub's explanation from an error body: `message` and the `errors` details
/// ("Validation Failed: A pull request already exists for o:branch.").
fn error_message(body: &str) -> String {
    #[derive(Deserialize)]
    struct ErrorBody {
        message: Option<String>,
        #[serde(default)]
        errors: Vec<Value>,
    }
    let message = match serde_json::from_str::<ErrorBody>(body) {
        Ok(parsed) => {
            let mut message = parsed.message.unwrap_or_default();
            for detail in &parsed.errors {
                if let Some(text) = detail_text(detail) {
                    message = format!("{message}: {text}");
                }
            }
            message
        }
        Err(_) => body.trim().chars().take(200).collect(),
    };
    imagebump_http::redact(&message)
}

/// One entry of GitHub's `errors` list: its `message`, else `resource.field code`.
fn detail_text(detail: &Value) -> Option<String> {
    if let Some(text) = detail.as_str() {
        return Some(text.to_string());
    }
    if let Some(text) = detail.get("message").and_then(Value::as_str) {
        return Some(text.to_string());
    }
    let part = |key: &str| detail.get(key).and_then(Value::as_str);
    match (part("resource"), part("field"), part("code")) {
        (Some(resource), Some(field), Some(code)) => Some(format!("{resource}.{field} {code}")),
        (_, _, Some(code)) => Some(code.to_string()),
        _ => None,
    }
}

fn parse<T: serde::de::DeserializeOwned>(body: &str, method: &str, path: &str) -> Result<T, Error> {
    serde_json::from_str(body).map_err(|e| Error::Transport {
        message: format!("unexpected response from GitHub to {method} {path}: {e}"),
        retryable: false,
    })
}

// ---------------------------------------------------------------------------------------------
// settings
// ---------------------------------------------------------------------------------------------

/// An owner or repository name: GitHub allows letters, digits, `-`, `_` and `.`.
fn check_name(kind: &str, name: &str) -> Result<(), Error> {
    let valid = !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "invalid GitHub {kind} name {name:?}"
        )))
    }
}

/// The REST API URL for a GitHub host: `https://api.github.com` for github.com (and
/// www.github.com), `https://{host}/api/v3` for GitHub Enterprise Server.
pub fn api_url_for_host(host: &str) -> String {
    let host = host.trim().trim_end_matches('/');
    if host.eq_ignore_ascii_case("github.com") || host.eq_ignore_ascii_case("www.github.com") {
        "https://api.github.com".to_string()
    } else {
        format!("https://{host}/api/v3")
    }
}

/// (host, owner, repo) from a git remote URL: `https://github.com/o/r(.git)`,
/// `git@github.com:o/r.git`, `ssh://git@host(:port)/o/r.git`. The host keeps an HTTP(S) port
/// (the API is on the same port) and drops an SSH one. Credentials in the URL are ignored.
/// `None` when it is not a `host/owner/repo` remote.
pub fn repo_from_url(url: &str) -> Option<(String, String, String)> {
    let url = url.trim();
    let (host, path) = if let Some((scheme, rest)) = url.split_once("://") {
        let scheme = scheme.to_ascii_lowercase();
        let (authority, path) = rest.split_once('/')?;
        let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = match scheme.as_str() {
            "https" | "http" => authority.to_string(),
            "ssh" | "git" | "git+ssh" | "ssh+git" => crate::strip_port(authority).to_string(),
            _ => return None,
        };
        (host, path)
    } else {
        // scp-like: [user@]host:owner/repo(.git)
        let (authority, path) = url.split_once(':')?;
        if authority.contains('/') || path.starts_with("//") {
            return None;
        }
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        (host.to_string(), path)
    };
    if host.is_empty() || host.contains(char::is_whitespace) {
        return None;
    }
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let (owner, repo) = path.split_once('/')?;
    if check_name("owner", owner).is_err() || check_name("repository", repo).is_err() {
        return None;
    }
    Some((
        host.to_ascii_lowercase(),
        owner.to_string(),
        repo.to_string(),
    ))
}

// ---------------------------------------------------------------------------------------------
// response bodies
// ---------------------------------------------------------------------------------------------

#[derive(Deserialize)]
struct PullJson {
    number: u64,
    state: String,
    #[serde(default)]
    title: String,
    body: Option<String>,
    #[serde(default)]
    html_url: String,
    #[serde(default)]
    labels: Vec<LabelJson>,
    #[serde(default)]
    assignees: Option<Vec<LoginJson>>,
    /// Pending review requests: users, and teams by slug.
    #[serde(default)]
    requested_reviewers: Option<Vec<LoginJson>>,
    #[serde(default)]
    requested_teams: Option<Vec<TeamJson>>,
    #[serde(default)]
    draft: Option<bool>,
    merged_at: Option<String>,
    #[serde(default)]
    updated_at: Option<String>,
    #[serde(default)]
    node_id: String,
    /// `null`, or the auto-merge request.
    #[serde(default)]
    auto_merge: Option<Value>,
    /// Who opened it; `null` for a deleted account ("ghost").
    #[serde(default)]
    user: Option<LoginJson>,
    head: BranchJson,
    base: BranchJson,
}

/// GitHub's GraphQL endpoint beside the REST API base (`…/api/v3/` → `…/api/graphql`).
fn graphql_url(base: &Url) -> Url {
    let path = base.path();
    let root = path
        .strip_suffix("/v3/")
        .map_or_else(|| path.to_string(), |root| format!("{root}/"));
    let mut url = base.clone();
    url.set_path(&format!("{root}graphql"));
    url
}

/// A GraphQL answer, as far as imagebump reads it.
#[derive(Deserialize)]
struct GraphQlJson {
    #[serde(default)]
    data: Option<Value>,
    #[serde(default)]
    errors: Vec<GraphQlError>,
}

/// A git reference (`GET …/git/ref/heads/{branch}`).
#[derive(Deserialize)]
struct RefJson {
    object: RefObject,
}

#[derive(Deserialize)]
struct RefObject {
    sha: String,
}

#[derive(Deserialize)]
struct GraphQlError {
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct LabelJson {
    name: String,
}

#[derive(Deserialize)]
struct TeamJson {
    slug: String,
}

impl PullJson {
    /// Its head is a branch of `full_name` (not a fork with the same branch name) starting
    /// with `prefix`. GitHub names are case-insensitive.
    fn is_ours(&self, full_name: &str, prefix: &str) -> bool {
        self.head.name.starts_with(prefix) && self.head.is_in(full_name)
    }

    fn into_pull(self) -> Pull {
        let state = if self.merged_at.is_some() {
            PullState::Merged
        } else if self.state == "open" {
            PullState::Open
        } else {
            PullState::Closed
        };
        Pull {
            number: self.number,
            branch: self.head.name,
            base: self.base.name,
            author: self.user.map(|u| u.login).unwrap_or_default(),
            title: self.title,
            body: self.body.unwrap_or_default(),
            state,
            url: self.html_url,
            labels: self.labels.into_iter().map(|l| l.name).collect(),
            assignees: logins(self.assignees),
            review_requests: logins(self.requested_reviewers)
                .into_iter()
                .chain(self.requested_teams.into_iter().flatten().map(|t| t.slug))
                .collect(),
            draft: self.draft.unwrap_or(false),
            node_id: self.node_id,
            automerge: Some(self.auto_merge.is_some_and(|a| !a.is_null())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(url: &str) -> Option<(String, String, String)> {
        repo_from_url(url)
    }

    fn triple(host: &str, owner: &str, repo: &str) -> Option<(String, String, String)> {
        Some((host.to_string(), owner.to_string(), repo.to_string()))
    }

    #[test]
    fn repo_from_url_forms() {
        let gh = triple("github.com", "octo", "gitops");
        assert_eq!(parsed("https://github.com/octo/gitops"), gh);
        assert_eq!(parsed("https://github.com/octo/gitops.git"), gh);
        assert_eq!(parsed("https://github.com/octo/gitops/"), gh);
        assert_eq!(parsed("https://github.com/octo/gitops.git/"), gh);
        assert_eq!(parsed("HTTPS://GitHub.com/octo/gitops"), gh);
        assert_eq!(parsed("  git@github.com:octo/gitops.git\n"), gh);
        assert_eq!(parsed("git@github.com:octo/gitops"), gh);
        assert_eq!(parsed("github.com:octo/gitops.git"), gh);
        assert_eq!(parsed("ssh://git@github.com/octo/gitops.git"), gh);
        assert_eq!(parsed("ssh://git@github.com:22/octo/gitops.git"), gh);
        assert_eq!(parsed("git://github.com/octo/gitops.git"), gh);
        assert_eq!(
            parsed("https://x-access-token:ghs_secret@github.com/octo/gitops.git"),
            gh
        );
        assert_eq!(
            parsed("ssh://git@ghe.example.com:2222/team/my.repo.git"),
            triple("ghe.example.com", "team", "my.repo")
        );
        assert_eq!(
            parsed("https://ghe.example.com:8443/team/app_config"),
            triple("ghe.example.com:8443", "team", "app_config")
        );
        assert_eq!(
            parsed("http://127.0.0.1:3000/o/r.git"),
            triple("127.0.0.1:3000", "o", "r")
        );
    }

    #[test]
    fn repo_from_url_refuses() {
        for url in [
            "",
            "github.com",
            "https://github.com/octo",
            "https://github.com/octo/",
            "https://gitlab.com/group/sub/project.git",
            "/srv/git/gitops.git",
            "./gitops",
            "file:///srv/git/octo/gitops.git",
            "C:/repos/octo/gitops",
            "ftp://github.com/octo/gitops",
            "https://github.com/octo/git ops",
            "git@github.com:/octo/gitops.git/extra",
        ] {
            assert_eq!(repo_from_url(url), None, "{url}");
        }
    }

    #[test]
    fn graphql_lives_beside_the_rest_api() {
        let at = |base: &str| graphql_url(&Url::parse(base).unwrap()).to_string();
        assert_eq!(
            at("https://api.github.com/"),
            "https://api.github.com/graphql"
        );
        assert_eq!(
            at("https://ghe.example/api/v3/"),
            "https://ghe.example/api/graphql"
        );
        assert_eq!(
            at("http://127.0.0.1:8080/"),
            "http://127.0.0.1:8080/graphql"
        );
    }

    #[test]
    fn api_url_for_hosts() {
        assert_eq!(api_url_for_host("github.com"), "https://api.github.com");
        assert_eq!(api_url_for_host("GitHub.com"), "https://api.github.com");
        assert_eq!(
            api_url_for_host("ghe.example.com"),
            "https://ghe.example.com/api/v3"
        );
    }

    #[test]
    fn rate_limits_from_status_headers_and_message() {
        let answer = |status: u16, pairs: &[(&'static str, String)]| {
            let mut r = Response::synthetic(status);
            for (k, v) in pairs {
                r.headers.insert(*k, v.parse().unwrap());
            }
            r
        };
        // A bare 429 names no wait: the transport backs off.
        assert_eq!(rate_limit(429, &answer(429, &[]), ""), Some(None));
        let seven = [("retry-after", "7".to_string())];
        assert_eq!(
            rate_limit(403, &answer(403, &seven), ""),
            Some(Some(Duration::from_secs(7)))
        );
        let reset = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 20;
        let exhausted = [
            ("x-ratelimit-remaining", "0".to_string()),
            ("x-ratelimit-reset", reset.to_string()),
        ];
        match rate_limit(403, &answer(403, &exhausted), "") {
            Some(Some(d)) => assert!(
                d > Duration::from_secs(18) && d <= Duration::from_secs(20),
                "{d:?}"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            rate_limit(
                403,
                &answer(403, &[]),
                "Resource not accessible by integration"
            ),
            None
        );
        assert_eq!(
            rate_limit(
                403,
                &answer(403, &[]),
                "You have exceeded a secondary rate limit"
            ),
            Some(Some(SECONDARY_RATE_LIMIT_WAIT))
        );
        assert!(matches!(
            classify(403, "Resource not accessible".into(), "", "x"),
            Error::Forbidden { .. }
        ));
    }

    #[test]
    fn error_messages_from_bodies() {
        let body = r#"{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for octo:imagebump/web."}],"documentation_url":"https://docs.github.com/rest"}"#;
        assert_eq!(
            error_message(body),
            "Validation Failed: A pull request already exists for octo:imagebump/web."
        );
        let body = r#"{"message":"Validation Failed","errors":[{"resource":"Issue","field":"title","code":"missing_field"}]}"#;
        assert_eq!(
            error_message(body),
            "Validation Failed: Issue.title missing_field"
        );
        assert_eq!(
            error_message("<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
    }

    #[test]
    fn reviewers_split_into_users_and_teams() {
        let input: Vec<String> = ["alice", "@bob", "octo/platform", "@octo/sre", "", "org/"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (users, teams) = crate::split_reviewers(&input);
        assert_eq!(users, ["alice", "bob"]);
        assert_eq!(teams, ["platform", "sre"]);
    }
}
