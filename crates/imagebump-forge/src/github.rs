//! GitHub (github.com and GitHub Enterprise Server) through its REST API.
//!
//! octocrab builds the client (rustls, base URL with a path for GHE, the user agent) and owns
//! authentication: a token as is, or a GitHub App's JWT exchanged for an installation token
//! that it caches and renews. Requests go through octocrab's raw methods (`_get`, `_post`,
//! `_patch`) rather than its typed handlers because every response's headers matter here:
//! rate-limit headers decide whether to wait, `Link` drives pagination, and octocrab's own
//! retry layer is left out (it retries POSTs on 5xx, which can open a pull request twice).
//! Bodies are read into small structs holding only the fields used, so an older GHE that
//! lacks a newer field still works.

use std::collections::HashSet;
use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use octocrab::models::{AppId, InstallationId};
use octocrab::Octocrab;
use regex::Regex;
use reqwest::Url;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Error, Forge, GitHubAuth, GitHubSettings, NewPull, Pull, PullState, MAX_RETRIES};

/// Items per page: GitHub's maximum.
const PER_PAGE: usize = 100;
/// Pages read for one listing of open pull requests (100,000 pull requests), a guard against a
/// server whose `Link` never ends.
const MAX_PAGES: usize = 1000;
/// Pages of closed pull requests read (the most recently updated 1,000), whatever the limit:
/// an old repository has tens of thousands, and only recent rejections matter.
const MAX_CLOSED_PAGES: usize = 10;
/// GitHub's advice when a secondary rate limit names no wait: at least a minute.
const SECONDARY_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);

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
    /// The installation-authenticated client; octocrab renews its token.
    App,
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
        let builder = Octocrab::builder()
            .base_uri(base.as_str().trim_end_matches('/'))
            .map_err(|_| Error::Config(format!("invalid GitHub API URL {}", base.as_str())))?
            .set_connect_timeout(Some(Duration::from_secs(10)))
            .set_read_timeout(Some(Duration::from_secs(60)))
            .set_write_timeout(Some(Duration::from_secs(60)));
        match settings.auth {
            GitHubAuth::Token(token) => {
                let token = crate::clean_token(&token, "GitHub", TOKEN_HINT)?;
                let crab = builder
                    .personal_token(token.clone())
                    .build()
                    .map_err(|e| Error::Config(format!("cannot build the GitHub client: {e}")))?;
                Ok(GitHub {
                    api: Api {
                        crab,
                        base,
                        hint: TOKEN_HINT.to_string(),
                    },
                    owner: settings.owner,
                    repo: settings.repo,
                    auth: AuthKind::Token(token),
                })
            }
            GitHubAuth::App {
                app_id,
                private_key_pem,
            } => {
                let app_crab = builder
                    .app_from_rsa_pem(AppId(app_id), private_key_pem.expose_secret().as_bytes())
                    .map_err(|_| {
                        Error::Config(format!(
                            "the private key of GitHub App {app_id} is not an RSA key in PEM form \
                             (use the .pem file GitHub generated for the app)"
                        ))
                    })?
                    .build()
                    .map_err(|e| Error::Config(format!("cannot build the GitHub client: {e}")))?;
                let full = format!("{}/{}", settings.owner, settings.repo);
                let app_hint = format!(
                    "check the GitHub App id ({app_id}) and its private key, and that the app \
                     is installed on {full}"
                );
                let app_api = Api {
                    crab: app_crab,
                    base: base.clone(),
                    hint: app_hint.clone(),
                };
                let installation: Installation = app_api
                    .send_json(
                        Method::Get,
                        &format!("/repos/{full}/installation"),
                        None,
                        &format!("a GitHub App {app_id} installation on {full} (install the app on the repository)"),
                    )
                    .await?;
                let crab = app_api
                    .crab
                    .installation_builder(InstallationId(installation.id))
                    .repositories(vec![settings.repo.clone()])
                    .build()
                    .map_err(|e| {
                        Error::Config(format!("GitHub App installation: {}", error_chain(&e)))
                    })?;
                // Fetch the token now: a refused exchange fails here, not at the first write.
                crab.installation_token().await.map_err(|e| {
                    from_octocrab(&e, &app_hint, "the GitHub App installation token")
                })?;
                Ok(GitHub {
                    api: Api {
                        crab,
                        base,
                        hint: app_hint,
                    },
                    owner: settings.owner,
                    repo: settings.repo,
                    auth: AuthKind::App,
                })
            }
        }
    }

    /// The credential for `git push` over HTTPS (user `x-access-token`): the token, or a
    /// current installation token of the GitHub App (renewed when it nears expiry).
    pub async fn git_token(&self) -> Result<SecretString, Error> {
        match &self.auth {
            AuthKind::Token(token) => Ok(token.clone()),
            AuthKind::App => self.api.crab.installation_token().await.map_err(|e| {
                from_octocrab(&e, &self.api.hint, "the GitHub App installation token")
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
        let mut next = Some(self.repo_path(&format!("/pulls?{query}&per_page={PER_PAGE}")));
        let mut seen = HashSet::new();
        let mut found = Vec::new();
        let mut pages = 0;
        while let Some(path) = next.take() {
            if !seen.insert(path.clone()) || pages == max_pages {
                break;
            }
            pages += 1;
            let reply = self.api.send(Method::Get, &path, None, &what).await?;
            let page: Vec<PullJson> = parse(&reply.body, "GET", &path)?;
            found.extend(page.into_iter().filter(|p| p.is_ours(&full, prefix)));
            if found.len() >= enough {
                break;
            }
            next = match reply.next {
                Some(link) => Some(self.api.relative(&link)?),
                None => None,
            };
        }
        Ok(found)
    }

    async fn write(
        &self,
        method: Method,
        path: &str,
        body: Value,
        what: &str,
    ) -> Result<(), Error> {
        self.api
            .send(method, path, Some(&body), what)
            .await
            .map(drop)
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

    async fn create_pull(&self, new: &NewPull) -> Result<Pull, Error> {
        let mut body = json!({
            "title": new.title,
            "head": new.branch,
            "base": new.base,
            "body": new.body,
        });
        // Only when asked: a repository without drafts (a private one on a free plan) answers
        // 422 to `draft: true`, and leaving the key out is GitHub's default anyway.
        if new.draft {
            body["draft"] = Value::Bool(true);
        }
        let path = self.repo_path("/pulls");
        let what = format!("repository {}", self.full_name());
        let reply = self
            .api
            .send(Method::Post, &path, Some(&body), &what)
            .await?;
        let pull: PullJson = parse(&reply.body, "POST", &path)?;
        Ok(pull.into_pull())
    }

    async fn update_pull(&self, number: u64, title: &str, body: &str) -> Result<(), Error> {
        let path = self.repo_path(&format!("/pulls/{number}"));
        let payload = json!({ "title": title, "body": body });
        self.write(Method::Patch, &path, payload, &self.pull_what(number))
            .await
    }

    async fn close_pull(&self, number: u64) -> Result<(), Error> {
        let path = self.repo_path(&format!("/pulls/{number}"));
        let payload = json!({ "state": "closed" });
        self.write(Method::Patch, &path, payload, &self.pull_what(number))
            .await
    }

    async fn comment(&self, number: u64, body: &str) -> Result<(), Error> {
        let path = self.repo_path(&format!("/issues/{number}/comments"));
        let payload = json!({ "body": body });
        self.write(Method::Post, &path, payload, &self.pull_what(number))
            .await
    }

    async fn add_labels(&self, number: u64, labels: &[String]) -> Result<(), Error> {
        if labels.is_empty() {
            return Ok(());
        }
        let path = self.repo_path(&format!("/issues/{number}/labels"));
        let payload = json!({ "labels": labels });
        self.write(Method::Post, &path, payload, &self.pull_what(number))
            .await
    }

    async fn request_reviewers(&self, number: u64, reviewers: &[String]) -> Result<(), Error> {
        let (users, teams) = crate::split_reviewers(reviewers);
        if users.is_empty() && teams.is_empty() {
            return Ok(());
        }
        let mut payload = json!({});
        if !users.is_empty() {
            payload["reviewers"] = json!(users);
        }
        if !teams.is_empty() {
            payload["team_reviewers"] = json!(teams);
        }
        let path = self.repo_path(&format!("/pulls/{number}/requested_reviewers"));
        self.write(Method::Post, &path, payload, &self.pull_what(number))
            .await
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
        self.write(Method::Post, &path, payload, &self.pull_what(number))
            .await
    }
}

// ---------------------------------------------------------------------------------------------
// requests
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Get,
    Post,
    Patch,
}

impl Method {
    fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Patch => "PATCH",
        }
    }

    /// Sending it twice does no more than sending it once (a PATCH sets fields).
    fn is_idempotent(self) -> bool {
        matches!(self, Method::Get | Method::Patch)
    }
}

/// One octocrab client and the API base it was built with.
struct Api {
    crab: Octocrab,
    /// The API base URL, with a trailing `/`.
    base: Url,
    /// Said with a 401.
    hint: String,
}

/// A successful response, read.
struct Reply {
    body: String,
    /// The `Link` header's `rel="next"` URL.
    next: Option<String>,
}

/// An unsuccessful one, read.
struct Failure {
    status: u16,
    retry_after: Option<String>,
    remaining: Option<String>,
    reset: Option<String>,
    body: String,
}

impl Api {
    async fn send_json<T: serde::de::DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        what: &str,
    ) -> Result<T, Error> {
        let reply = self.send(method, path, body, what).await?;
        parse(&reply.body, method.as_str(), path)
    }

    /// Sends a request relative to the API base, retrying a bounded number of times: after a
    /// rate limit whose wait is short (any method: GitHub did not act on the request), and
    /// after a 5xx or a transport failure for GET and PATCH only (a POST may have been acted
    /// on: retrying a create could open a second pull request).
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        what: &str,
    ) -> Result<Reply, Error> {
        let mut attempt = 0;
        loop {
            let error = match self.send_once(method, path, body).await {
                Ok(Ok(reply)) => return Ok(reply),
                Ok(Err(failure)) => self.classify(&failure, what),
                Err(error) => from_octocrab(&error, &self.hint, what),
            };
            let Some(wait) = retry_wait(method, &error, attempt) else {
                return Err(error);
            };
            attempt += 1;
            tracing::warn!(
                "GitHub: {} {path}: {error}; retrying in {:.1} s ({attempt}/{MAX_RETRIES})",
                method.as_str(),
                wait.as_secs_f64()
            );
            tokio::time::sleep(wait).await;
        }
    }

    async fn send_once(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Result<Reply, Failure>, octocrab::Error> {
        tracing::debug!("GitHub: {} {path}", method.as_str());
        let response = match method {
            Method::Get => self.crab._get(path).await?,
            Method::Post => self.crab._post(path, body).await?,
            Method::Patch => self.crab._patch(path, body).await?,
        };
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let next = header("link").and_then(|link| next_link(&link));
        let failure = Failure {
            status,
            retry_after: header("retry-after"),
            remaining: header("x-ratelimit-remaining"),
            reset: header("x-ratelimit-reset"),
            body: String::new(),
        };
        let body = self.crab.body_to_string(response).await?;
        tracing::debug!("GitHub: {} {path} → {status}", method.as_str());
        if (200..300).contains(&status) {
            Ok(Ok(Reply { body, next }))
        } else {
            Ok(Err(Failure { body, ..failure }))
        }
    }

    fn classify(&self, failure: &Failure, what: &str) -> Error {
        let message = error_message(&failure.body);
        classify(
            failure.status,
            message,
            |name| match name {
                "retry-after" => failure.retry_after.clone(),
                "x-ratelimit-remaining" => failure.remaining.clone(),
                "x-ratelimit-reset" => failure.reset.clone(),
                _ => None,
            },
            &self.hint,
            what,
        )
    }

    /// A `Link` URL as a path relative to the API base, so octocrab treats it as an API call
    /// (it attaches a GitHub App's credentials only to relative requests). A link to another
    /// origin is refused: credentials go to the configured API only.
    fn relative(&self, link: &str) -> Result<String, Error> {
        let outside = || Error::Transport {
            message: format!(
                "GitHub sent a pagination link outside its API ({})",
                scrub(link)
            ),
            retryable: false,
        };
        let url = self.base.join(link).map_err(|_| outside())?;
        if url.origin() != self.base.origin() {
            return Err(outside());
        }
        let base_path = self.base.path().trim_end_matches('/');
        let rest = url.path().strip_prefix(base_path).ok_or_else(outside)?;
        if !rest.starts_with('/') {
            return Err(outside());
        }
        Ok(match url.query() {
            Some(query) => format!("{rest}?{query}"),
            None => rest.to_string(),
        })
    }
}

/// How long to wait before retrying after `error`, or `None` when it is not retried.
fn retry_wait(method: Method, error: &Error, attempt: u32) -> Option<Duration> {
    super::retry_wait(method.is_idempotent(), error, attempt)
}

/// The error for an unsuccessful status. `header` reads a response header.
fn classify(
    status: u16,
    message: String,
    header: impl Fn(&str) -> Option<String>,
    hint: &str,
    what: &str,
) -> Error {
    let number = |name: &str| header(name).and_then(|v| v.trim().parse::<u64>().ok());
    let retry_after = number("retry-after").map(Duration::from_secs);
    let exhausted = number("x-ratelimit-remaining") == Some(0);
    let until_reset = number("x-ratelimit-reset").map(|reset| {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        // At least a second: the reset is whole seconds and GitHub asks to wait past it.
        Duration::from_secs(reset)
            .saturating_sub(now)
            .max(Duration::from_secs(1))
    });
    let rate_limited = status == 429
        || (status == 403
            && (retry_after.is_some()
                || exhausted
                || message.to_ascii_lowercase().contains("rate limit")));
    if rate_limited {
        let wait = retry_after
            .or(if exhausted { until_reset } else { None })
            .or(Some(SECONDARY_RATE_LIMIT_WAIT));
        return Error::RateLimited { retry_after: wait };
    }
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

/// An octocrab error (no response, or a refused installation-token exchange) as ours.
fn from_octocrab(error: &octocrab::Error, hint: &str, what: &str) -> Error {
    match error {
        octocrab::Error::GitHub { source, .. } => {
            let mut message = source.message.clone();
            for detail in source.errors.iter().flatten() {
                if let Some(text) = detail_text(detail) {
                    message = format!("{message}: {text}");
                }
            }
            classify(
                source.status_code.as_u16(),
                scrub(&message),
                |name| {
                    source
                        .headers
                        .as_ref()?
                        .get(name)?
                        .to_str()
                        .ok()
                        .map(str::to_owned)
                },
                hint,
                what,
            )
        }
        octocrab::Error::JWT { .. } => {
            Error::Config("cannot sign a token with the GitHub App's private key".to_string())
        }
        octocrab::Error::Service { .. } | octocrab::Error::Hyper { .. } => Error::Transport {
            message: format!("cannot reach GitHub: {}", error_chain(error)),
            retryable: true,
        },
        _ => Error::Transport {
            message: format!("GitHub request failed: {}", error_chain(error)),
            retryable: false,
        },
    }
}

/// An error and its sources, `: `-separated, scrubbed of anything that looks like a token.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut parts = Vec::new();
    let mut current = Some(error);
    while let Some(e) = current {
        let text = e.to_string();
        // octocrab's Display of some variants appends a backtrace: keep the first line.
        let text = text.lines().next().unwrap_or_default();
        let text = text
            .strip_prefix("Service Error: ")
            .unwrap_or(text)
            .to_string();
        if !text.is_empty() && !parts.iter().any(|p: &String| p.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    scrub(&parts.join(": "))
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
    scrub(&message)
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

/// The `rel="next"` URL of a `Link` header.
fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, params) = part.trim().split_once(';')?;
        let is_next = params.split(';').any(|p| {
            let p = p.trim().replace(' ', "");
            p == "rel=\"next\"" || p == "rel=next"
        });
        let url = url.trim().strip_prefix('<')?.strip_suffix('>')?;
        is_next.then(|| url.to_string())
    })
}

/// Replaces anything shaped like a credential: GitHub tokens (`ghp_`, `ghs_`, `github_pat_`...),
/// JWTs, and a long value after `Bearer` or `Authorization:`. Ordinary words stay ("the
/// installation token expired").
fn scrub(text: &str) -> String {
    static SECRET: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(
            r"(?i)\b(?:gh[pousr]_[A-Za-z0-9_]+|github_pat_[A-Za-z0-9_]+|eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_.-]+)|\b(bearer\s+|authorization:\s*(?:[a-z]+\s+)?)[A-Za-z0-9._~+/=-]{20,}",
        )
        .ok()
    });
    match SECRET.as_ref() {
        Some(re) => re
            .replace_all(text, |c: &regex::Captures<'_>| {
                format!("{}<redacted>", c.get(1).map_or("", |m| m.as_str()))
            })
            .into_owned(),
        // The pattern is a constant that compiles; should it not, say nothing rather than risk
        // a secret.
        None => "<details withheld>".to_string(),
    }
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
struct Installation {
    id: u64,
}

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
    draft: Option<bool>,
    merged_at: Option<String>,
    #[serde(default)]
    updated_at: Option<String>,
    head: BranchJson,
    base: BranchJson,
}

#[derive(Deserialize)]
struct BranchJson {
    #[serde(rename = "ref")]
    name: String,
    /// `null` when the fork it came from was deleted.
    repo: Option<RepoJson>,
}

#[derive(Deserialize)]
struct RepoJson {
    full_name: String,
}

#[derive(Deserialize)]
struct LabelJson {
    name: String,
}

impl PullJson {
    /// Its head is a branch of `full_name` (not a fork with the same branch name) starting
    /// with `prefix`. GitHub names are case-insensitive.
    fn is_ours(&self, full_name: &str, prefix: &str) -> bool {
        self.head.name.starts_with(prefix)
            && self
                .head
                .repo
                .as_ref()
                .is_some_and(|r| r.full_name.eq_ignore_ascii_case(full_name))
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
            title: self.title,
            body: self.body.unwrap_or_default(),
            state,
            url: self.html_url,
            labels: self.labels.into_iter().map(|l| l.name).collect(),
            draft: self.draft.unwrap_or(false),
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
    fn api_url_for_hosts() {
        assert_eq!(api_url_for_host("github.com"), "https://api.github.com");
        assert_eq!(api_url_for_host("GitHub.com"), "https://api.github.com");
        assert_eq!(
            api_url_for_host("ghe.example.com"),
            "https://ghe.example.com/api/v3"
        );
    }

    #[test]
    fn next_link_picks_next() {
        let link = r#"<https://api.github.com/repositories/1/pulls?page=2>; rel="next", <https://api.github.com/repositories/1/pulls?page=5>; rel="last""#;
        assert_eq!(
            next_link(link).as_deref(),
            Some("https://api.github.com/repositories/1/pulls?page=2")
        );
        let last = r#"<https://api.github.com/x?page=1>; rel="prev", <https://api.github.com/x?page=1>; rel="first""#;
        assert_eq!(next_link(last), None);
    }

    #[test]
    fn scrub_hides_tokens() {
        let text = "Bearer ghp_abcdefABCDEF0123456789 and token github_pat_11AAA_bbb \
                    and eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOjF9.sig and ghs_xyz";
        let out = scrub(text);
        for secret in ["ghp_abc", "github_pat_11", "eyJhbG", "ghs_xyz"] {
            assert!(!out.contains(secret), "{out}");
        }
        assert!(out.starts_with("Bearer <redacted>"), "{out}");
        assert_eq!(
            scrub("authorization: token 0123456789abcdef0123456789abcdef01234567"),
            "authorization: token <redacted>"
        );
        let plain = "Not Found: the installation token expired; Bearer authentication";
        assert_eq!(scrub(plain), plain);
    }

    #[test]
    fn classify_rate_limits() {
        let no_headers = |_: &str| None;
        assert!(matches!(
            classify(429, String::new(), no_headers, "", "x"),
            Error::RateLimited { retry_after: Some(d) } if d == SECONDARY_RATE_LIMIT_WAIT
        ));
        let retry_after = |name: &str| (name == "retry-after").then(|| "7".to_string());
        assert!(matches!(
            classify(403, String::new(), retry_after, "", "x"),
            Error::RateLimited { retry_after: Some(d) } if d == Duration::from_secs(7)
        ));
        let reset = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 20;
        let exhausted = move |name: &str| match name {
            "x-ratelimit-remaining" => Some("0".to_string()),
            "x-ratelimit-reset" => Some(reset.to_string()),
            _ => None,
        };
        match classify(403, String::new(), exhausted, "", "x") {
            Error::RateLimited {
                retry_after: Some(d),
            } => assert!(
                d > Duration::from_secs(18) && d <= Duration::from_secs(20),
                "{d:?}"
            ),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            classify(
                403,
                "Resource not accessible by integration".into(),
                no_headers,
                "",
                "x"
            ),
            Error::Forbidden { .. }
        ));
        assert!(matches!(
            classify(
                403,
                "You have exceeded a secondary rate limit".into(),
                no_headers,
                "",
                "x"
            ),
            Error::RateLimited { .. }
        ));
    }

    #[test]
    fn retries_reads_and_edits_but_never_a_post() {
        // The policy itself is tested in forge/mod.rs; this is GitHub's method mapping.
        let server = Error::Status {
            status: 502,
            message: String::new(),
        };
        assert!(retry_wait(Method::Get, &server, 0).is_some());
        assert!(retry_wait(Method::Patch, &server, 0).is_some());
        assert!(retry_wait(Method::Post, &server, 0).is_none());
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
