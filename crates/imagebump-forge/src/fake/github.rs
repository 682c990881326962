//! A stateful fake of GitHub's REST API for the forge tests: a wiremock server with one
//! [`Respond`] that keeps pull requests in memory and answers like GitHub does.
//!
//! Routes (below an optional path prefix such as GitHub Enterprise's `/api/v3`):
//!
//! | route | answer |
//! |---|---|
//! | `GET /repos/{o}/{r}/pulls` | `state` (open, closed, all), `head` (`owner:branch`), `base`, `sort` (created, updated), `direction`, `per_page` (≤ 100, default 30), `page`; a `Link` header like GitHub's |
//! | `GET /repos/{o}/{r}/pulls/{n}` | one pull request |
//! | `POST /repos/{o}/{r}/pulls` | 201 and the new pull request; 422 when an open one has the same head and base |
//! | `PATCH /repos/{o}/{r}/pulls/{n}` | `title`, `body`, `state` (open, closed), `base` |
//! | `POST /repos/{o}/{r}/pulls/{n}/requested_reviewers` | `reviewers`, `team_reviewers` |
//! | `GET /repos/{o}/{r}/pulls/{n}/reviews` | the reviews submitted ([`FakeGitHub::review`]) |
//! | `POST /repos/{o}/{r}/issues/{n}/comments` | `body` |
//! | `POST /repos/{o}/{r}/issues/{n}/labels` | `labels`: added to the existing ones |
//! | `POST /repos/{o}/{r}/issues/{n}/assignees` | `assignees`: added to the existing ones |
//! | `POST /graphql` (`/api/graphql` beside `/api/v3`) | two mutations: `enablePullRequestAutoMerge` (`variables.id`, `variables.method`) sets `auto_merge`; `createCommitOnBranch` (`variables.input`) commits base64 `fileChanges.additions` on a branch at `expectedHeadOid` in the served repository, GitHub as committer, and counts it verified; refusals as GraphQL `errors` with 200, as GitHub answers ([`FakeGitHub::set_allow_auto_merge`]) |
//! | `POST /repos/{o}/{r}/git/refs`, `GET …/git/ref/heads/{b}`, `PATCH …/git/refs/heads/{b}` | `ref`, `sha`, `force`: the branches of the repository given to [`FakeGitHub::serve_repository`]; 422 as GitHub (exists, not a fast-forward) |
//! | `GET /repos/{o}/{r}/commits/{sha}` | `commit.verification.verified`: true for commits GitHub created |
//! | `GET /repos/{o}/{r}/installation` | the GitHub App's installation (app JWT required) |
//! | `POST /app/installations/{id}/access_tokens` | a new installation token (app JWT required) |
//!
//! Every route but the two App ones needs `Authorization: Bearer <token>` or `token <token>`
//! with a token the fake knows (see [`FakeGitHub::TOKEN`], [`FakeGitHub::add_token`], and the
//! installation tokens it issued) and answers 401 `Bad credentials` otherwise. The App routes
//! need a JWT signed RS256 with the key in `fixtures/github/TEST-ONLY-app-private-key.pem`
//! whose `iss` is the app id and whose lifetime is at most 10 minutes.
//!
//! Every request is recorded as a [`Call`] (method, path as received, query pairs, JSON body,
//! credential, status answered), faulted ones included. [`FakeGitHub::fail_next`] makes the next
//! N requests to one method and route answer a [`Fault`] instead. Timestamps come from a clock
//! that ticks one second per change, so "most recently updated" is deterministic.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use wiremock::{MockServer, Request, ResponseTemplate};

use super::common::{
    add_unique, answer_all, header, lock, page_number, page_url, per_page, query_get, strings,
    timestamp, token_or_bearer, writes, Clock, Faults, Received, Serve, CLOCK_START,
};
use super::git_data;

mod issues;

const LIST_FIXTURE: &str = include_str!("../../../../fixtures/github/pull_requests_list.json");
const SINGLE_FIXTURE: &str = include_str!("../../../../fixtures/github/pull_request_closed.json");
/// The public half of the test-only GitHub App key.
pub const APP_PUBLIC_KEY: &str =
    include_str!("../../../../fixtures/github/TEST-ONLY-app-public-key.pem");
/// The private half: what a test passes as the App's key.
pub const APP_PRIVATE_KEY: &str =
    include_str!("../../../../fixtures/github/TEST-ONLY-app-private-key.pem");

/// The login the fake says created pull requests and comments, for a token.
pub const BOT_LOGIN: &str = "imagebump-bot";
/// The slug of the fake's GitHub App (`GET /app`).
pub const APP_SLUG: &str = "imagebump";
/// Who opens pull requests with the App's installation tokens.
pub const APP_BOT_LOGIN: &str = "imagebump[bot]";

/// The credential a request carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    None,
    /// `Bearer x` or `token x` with a token (known or not).
    Token(String),
    /// A JWT that verified with the App's public key; `iss` as a string.
    Jwt {
        app_id: String,
    },
    /// Anything else (a JWT that did not verify, a Basic header...).
    Invalid(String),
}

/// One request as the fake received it (the path as received, prefix included:
/// `/api/v3/repos/o/r/pulls`).
pub type Call = super::common::Call<Credential>;

/// What [`FakeGitHub::fail_next`] answers instead.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// 403, `x-ratelimit-remaining: 0`, `x-ratelimit-reset` this many seconds ahead (primary
    /// rate limit).
    RateLimit { reset_in: u64 },
    /// 403 with `retry-after` (secondary rate limit).
    SecondaryRateLimit { retry_after: u64 },
    /// 429 with `retry-after`.
    TooManyRequests { retry_after: u64 },
    /// This status with a GitHub-style error body (500, 502, 503...).
    Status(u16),
}

/// A pull request in the fake's state.
#[derive(Debug, Clone, PartialEq)]
pub struct FakePull {
    pub number: u64,
    pub branch: String,
    /// `owner/repo` of the head branch: the fake's repository, or a fork.
    pub head_repo: String,
    pub base: String,
    pub title: String,
    pub body: Option<String>,
    /// `open` or `closed`.
    pub state: String,
    pub merged: bool,
    pub draft: bool,
    pub labels: Vec<String>,
    pub assignees: Vec<String>,
    pub reviewers: Vec<String>,
    pub team_reviewers: Vec<String>,
    /// Reviews submitted, as (login, state): `APPROVED`, `COMMENTED`, `CHANGES_REQUESTED`
    /// (GitHub) or `REQUEST_CHANGES` (Gitea).
    pub reviews: Vec<(String, String)>,
    pub comments: Vec<String>,
    pub user: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub closed_at: Option<i64>,
    pub merged_at: Option<i64>,
    /// Auto-merge is on with this merge method (`MERGE`, `SQUASH`, `REBASE`).
    pub auto_merge: Option<String>,
}

struct AppConfig {
    app_id: u64,
    installation_id: u64,
    installed: bool,
}

struct State {
    /// Visibility of repositories on this forge, by `owner/name` lower-cased.
    visibility: std::collections::BTreeMap<String, String>,
    /// Releases of repositories on this forge, by `owner/name` lower-cased, newest first.
    releases: std::collections::BTreeMap<String, Vec<Value>>,
    owner: String,
    repo: String,
    prefix: String,
    base_url: String,
    tokens: Vec<String>,
    app: Option<AppConfig>,
    issued: Vec<String>,
    pulls: Vec<FakePull>,
    next_number: u64,
    clock: Clock,
    calls: Vec<Call>,
    faults: Faults<Fault>,
    /// Faults answered after acting: the work is done, the answer is lost.
    lost: Faults<Fault>,
    /// The next create is raced by another run, which opens the same branch's pull request
    /// first (its title given here).
    raced_create: Option<String>,
    /// The repository's "Allow auto-merge" setting.
    allow_auto_merge: bool,
    /// The bare repository behind the git data API (refs, `createCommitOnBranch`), when a
    /// test serves one.
    git_dir: Option<std::path::PathBuf>,
    /// Commits GitHub created (and so signed) through its API.
    verified: Vec<String>,
    /// The login of the account the request being answered acts as.
    acting: String,
    /// Issues (numbered with the pull requests) and permissions.
    issues: super::issues::Issues,
}

/// The fake server. Dropping it stops the server.
pub struct FakeGitHub {
    server: MockServer,
    state: Arc<Mutex<State>>,
    prefix: String,
}

impl FakeGitHub {
    /// The token the fake accepts from the start.
    pub const TOKEN: &'static str = "test-token-not-a-secret";
    pub const OWNER: &'static str = "octo";
    pub const REPO: &'static str = "gitops";

    /// A fake for `octo/gitops` at the server's root (like api.github.com).
    pub async fn start() -> FakeGitHub {
        FakeGitHub::start_with_prefix("").await
    }

    /// A fake whose API lives below `prefix` (`/api/v3` for GitHub Enterprise Server);
    /// requests outside it get 404.
    pub async fn start_with_prefix(prefix: &str) -> FakeGitHub {
        let server = MockServer::start().await;
        let prefix = prefix.trim_end_matches('/').to_string();
        let state = Arc::new(Mutex::new(State {
            releases: Default::default(),
            visibility: Default::default(),
            owner: Self::OWNER.to_string(),
            repo: Self::REPO.to_string(),
            prefix: prefix.clone(),
            base_url: format!("{}{prefix}", server.uri()),
            tokens: vec![Self::TOKEN.to_string()],
            app: None,
            issued: Vec::new(),
            pulls: Vec::new(),
            next_number: 1,
            clock: Clock::new(),
            calls: Vec::new(),
            faults: Faults::new(),
            lost: Faults::new(),
            raced_create: None,
            allow_auto_merge: true,
            git_dir: None,
            verified: Vec::new(),
            acting: BOT_LOGIN.to_string(),
            issues: Default::default(),
        }));
        answer_all(&server, &state).await;
        FakeGitHub {
            server,
            state,
            prefix,
        }
    }

    /// What imagebump takes as its API URL: `http://127.0.0.1:PORT` plus the prefix.
    pub fn api_url(&self) -> String {
        format!("{}{}", self.server.uri(), self.prefix)
    }

    /// `/repos/octo/gitops` plus `rest`, with the prefix: a path as [`Call::path`] holds it.
    pub fn repo_path(&self, rest: &str) -> String {
        format!("{}/repos/{}/{}{rest}", self.prefix, Self::OWNER, Self::REPO)
    }

    /// Accept another token.
    pub fn add_token(&self, token: &str) {
        self.lock().tokens.push(token.to_string());
    }

    /// Act as GitHub App `app_id` (key: [`APP_PRIVATE_KEY`]) installed on the repository as
    /// installation `installation_id`.
    pub fn enable_app(&self, app_id: u64, installation_id: u64) {
        self.lock().app = Some(AppConfig {
            app_id,
            installation_id,
            installed: true,
        });
    }

    /// The App is uninstalled from the repository (its JWT is still good): the installation
    /// lookup answers 404.
    pub fn uninstall_app(&self) {
        if let Some(app) = self.lock().app.as_mut() {
            app.installed = false;
        }
    }

    /// The installation tokens issued so far, oldest first.
    pub fn issued_tokens(&self) -> Vec<String> {
        self.lock().issued.clone()
    }

    /// A published release of `repo` (`owner/name`, any repository on this host), newer
    /// than those added before.
    pub fn add_release(&self, repo: &str, tag: &str, name: &str, body: &str) {
        let release = json!({"tag_name": tag, "name": name, "body": body, "draft": false});
        let mut state = self.lock();
        let list = state.releases.entry(repo.to_ascii_lowercase()).or_default();
        list.insert(0, release);
    }

    /// The visibility of repository `repo` on this host (`public`, `private` or
    /// `internal`); a repository with releases and none set is `private`.
    pub fn set_visibility(&self, repo: &str, visibility: &str) {
        self.lock()
            .visibility
            .insert(repo.to_ascii_lowercase(), visibility.to_string());
    }

    /// Adds an open pull request from `branch` of the fake's repository; returns its number.
    pub fn add_pull(&self, branch: &str, base: &str, title: &str, body: &str) -> u64 {
        let head_repo = format!("{}/{}", Self::OWNER, Self::REPO);
        self.lock().insert_pull(
            branch,
            &head_repo,
            base,
            title,
            Some(body),
            false,
            BOT_LOGIN,
        )
    }

    /// Adds an open pull request from `branch` of the fake's repository opened by `user` (a
    /// human, or someone's bot); returns its number.
    pub fn add_pull_by(
        &self,
        user: &str,
        branch: &str,
        base: &str,
        title: &str,
        body: &str,
    ) -> u64 {
        let head_repo = format!("{}/{}", Self::OWNER, Self::REPO);
        self.lock()
            .insert_pull(branch, &head_repo, base, title, Some(body), false, user)
    }

    /// Adds an open pull request from `branch` of the fork `fork_owner/gitops`.
    pub fn add_fork_pull(&self, fork_owner: &str, branch: &str, base: &str, title: &str) -> u64 {
        let head_repo = format!("{fork_owner}/{}", Self::REPO);
        self.lock()
            .insert_pull(branch, &head_repo, base, title, Some(""), false, fork_owner)
    }

    /// Every request so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// The requests that were not GETs, in order.
    pub fn write_calls(&self) -> Vec<Call> {
        writes(self.calls())
    }

    /// Forget the calls so far.
    pub fn clear_calls(&self) {
        self.lock().calls.clear();
    }

    /// The pull requests, by number.
    pub fn pulls(&self) -> Vec<FakePull> {
        self.lock().pulls.clone()
    }

    /// The bare repository this fake's git data API writes to (the one the test serves over
    /// HTTP as the same repository).
    pub fn serve_repository(&self, git_dir: &std::path::Path) {
        self.lock().git_dir = Some(git_dir.to_path_buf());
    }

    /// The commits GitHub created (and signed) through its API: those it reports verified.
    pub fn verified_commits(&self) -> Vec<String> {
        self.lock().verified.clone()
    }

    /// The repository's "Allow auto-merge" setting (on by default in the fake; off by
    /// default on GitHub).
    pub fn set_allow_auto_merge(&self, allowed: bool) {
        self.lock().allow_auto_merge = allowed;
    }

    /// A human turns auto-merge off on pull request `number`.
    pub fn disable_auto_merge(&self, number: u64) {
        self.by_hand(number, |pull, _| pull.auto_merge = None);
    }

    pub fn pull(&self, number: u64) -> FakePull {
        self.lock().pull_mut(number).clone()
    }

    /// `login` submits a review in `state` (`APPROVED`, `COMMENTED`, `CHANGES_REQUESTED`):
    /// as on GitHub, their review request is fulfilled and drops off the pull request.
    pub fn review(&self, number: u64, login: &str, state: &str) {
        self.by_hand(number, |pull, _| {
            pull.reviewers.retain(|r| !r.eq_ignore_ascii_case(login));
            pull.reviews.push((login.to_string(), state.to_string()));
        });
    }

    /// A human merges pull request `number`.
    pub fn merge(&self, number: u64) {
        self.by_hand(number, |pull, now| {
            pull.state = "closed".to_string();
            pull.merged = true;
            pull.merged_at = Some(now);
            pull.closed_at = Some(now);
        });
    }

    /// A human closes pull request `number` without merging.
    pub fn close(&self, number: u64) {
        self.by_hand(number, |pull, now| {
            pull.state = "closed".to_string();
            pull.closed_at = Some(now);
        });
    }

    /// A human reopens pull request `number`.
    pub fn reopen(&self, number: u64) {
        self.by_hand(number, |pull, _| {
            pull.state = "open".to_string();
            pull.closed_at = None;
        });
    }

    /// A human edits the description of pull request `number` (`None`: GitHub's `null`).
    pub fn set_body(&self, number: u64, body: Option<&str>) {
        self.by_hand(number, |pull, _| {
            pull.body = body.map(str::to_string);
        });
    }

    /// The next `times` requests with this method to this route (the path below the prefix,
    /// without query: `/repos/octo/gitops/pulls`) answer `fault`.
    /// Another run (an overlapping CronJob) opens the same pull request just before our next
    /// create: that create finds it open and gets GitHub's 422 "already exists".
    pub fn race_next_create(&self, their_title: &str) {
        self.state.lock().unwrap().raced_create = Some(their_title.to_string());
    }

    pub fn fail_next(&self, method: &str, route: &str, times: usize, fault: Fault) {
        self.lock()
            .faults
            .push(Some(method), Some(route), times, fault);
    }

    /// The next request with this method to this route acts, and then answers `fault` as
    /// if it had failed (a proxy's 502 after GitHub did the work).
    pub fn lose_next_answer(&self, method: &str, route: &str, fault: Fault) {
        self.lock().lost.push(Some(method), Some(route), 1, fault);
    }

    /// A change made by hand in the forge's UI: it ticks the clock and counts as an update.
    fn by_hand(&self, number: u64, change: impl FnOnce(&mut FakePull, i64)) {
        let mut state = self.lock();
        let now = state.clock.tick();
        let pull = state.pull_mut(number);
        change(pull, now);
        pull.updated_at = now;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }
}

impl Serve for State {
    fn serve(&mut self, request: &Request) -> ResponseTemplate {
        let received = Received::with_text_bodies(request);
        let credential = self.credential(header(request, "authorization").as_deref());
        let (status, template) = self.answer(
            &received.method,
            &received.path,
            &received.query,
            received.body.as_ref(),
            &credential,
        );
        let route = received.path.strip_prefix(self.prefix.as_str());
        let lost = route.and_then(|r| self.lost.take(&received.method, r));
        let (status, template) = lost.map_or((status, template), |f| fault_response(&f));
        self.calls.push(received.into_call(credential, status));
        template
    }
}

impl State {
    fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.repo)
    }

    fn pull_mut(&mut self, number: u64) -> &mut FakePull {
        self.pulls
            .iter_mut()
            .find(|p| p.number == number)
            .unwrap_or_else(|| panic!("no pull request #{number} in the fake"))
    }

    #[allow(clippy::too_many_arguments)]
    fn insert_pull(
        &mut self,
        branch: &str,
        head_repo: &str,
        base: &str,
        title: &str,
        body: Option<&str>,
        draft: bool,
        user: &str,
    ) -> u64 {
        let now = self.clock.tick();
        let number = self.next_number;
        self.next_number += 1;
        self.pulls.push(FakePull {
            number,
            branch: branch.to_string(),
            head_repo: head_repo.to_string(),
            base: base.to_string(),
            title: title.to_string(),
            body: body.map(str::to_string),
            state: "open".to_string(),
            merged: false,
            draft,
            labels: Vec::new(),
            assignees: Vec::new(),
            reviewers: Vec::new(),
            team_reviewers: Vec::new(),
            reviews: Vec::new(),
            comments: Vec::new(),
            user: user.to_string(),
            created_at: now,
            updated_at: now,
            closed_at: None,
            merged_at: None,
            auto_merge: None,
        });
        number
    }

    fn credential(&self, header: Option<&str>) -> Credential {
        let Some(header) = header else {
            return Credential::None;
        };
        let Some(value) = token_or_bearer(header) else {
            return Credential::Invalid(header.to_string());
        };
        if value.starts_with("eyJ") && value.matches('.').count() == 2 {
            return match verify_jwt(value) {
                Ok(app_id) => Credential::Jwt { app_id },
                Err(why) => Credential::Invalid(format!("JWT: {why}")),
            };
        }
        Credential::Token(value.to_string())
    }

    fn token_ok(&self, credential: &Credential) -> bool {
        match credential {
            Credential::Token(token) => {
                self.tokens.iter().any(|t| t == token) || self.issued.iter().any(|t| t == token)
            }
            _ => false,
        }
    }

    fn app_ok(&self, credential: &Credential) -> bool {
        match (credential, &self.app) {
            (Credential::Jwt { app_id }, Some(app)) => *app_id == app.app_id.to_string(),
            _ => false,
        }
    }

    fn answer(
        &mut self,
        method: &str,
        path: &str,
        query: &[(String, String)],
        body: Option<&Value>,
        credential: &Credential,
    ) -> (u16, ResponseTemplate) {
        let installation = matches!(credential, Credential::Token(t) if self.issued.contains(t));
        self.acting = if installation {
            APP_BOT_LOGIN
        } else {
            BOT_LOGIN
        }
        .to_string();
        if method == "POST" && path == self.graphql_path() {
            if let Some(fault) = self.faults.take(method, "/graphql") {
                return fault_response(&fault);
            }
            if !self.token_ok(credential) {
                return bad_credentials("Bad credentials");
            }
            return self.graphql(body, installation);
        }
        let Some(route) = path.strip_prefix(self.prefix.as_str()) else {
            return not_found();
        };
        let route = route.to_string();
        if !route.starts_with('/') {
            return not_found();
        }
        if let Some(fault) = self.faults.take(method, &route) {
            return fault_response(&fault);
        }
        let segments: Vec<&str> = route.trim_matches('/').split('/').collect();
        if let Some(answer) = self.app_route(method, &segments, body, credential) {
            return answer;
        }
        if !self.token_ok(credential) {
            return bad_credentials("Bad credentials");
        }
        if let ("GET", ["user"]) = (method, segments.as_slice()) {
            return match installation {
                true => forbidden("Resource not accessible by integration"),
                false => ok(200, user_json(BOT_LOGIN)),
            };
        }
        if let ("GET", ["repos", owner, repo, "releases"]) = (method, segments.as_slice()) {
            let repo = format!("{owner}/{repo}");
            return super::common::releases_page(&self.releases, &repo, query)
                .unwrap_or_else(not_found);
        }
        let ["repos", owner, repo, rest @ ..] = segments.as_slice() else {
            return not_found();
        };
        if !owner.eq_ignore_ascii_case(&self.owner) || !repo.eq_ignore_ascii_case(&self.repo) {
            let name = format!("{owner}/{repo}");
            let seen = super::common::visibility_of(&self.visibility, &self.releases, &name);
            return match (method, rest, seen) {
                ("GET", [], Some(v)) => ok(
                    200,
                    json!({"full_name": name, "private": v != "public", "visibility": v}),
                ),
                _ => not_found(),
            };
        }
        let empty = json!({});
        self.repo_route(method, rest, (&route, query), body.unwrap_or(&empty))
    }

    /// The App routes, which take the app's JWT, not a token; `None` for any other route.
    fn app_route(
        &mut self,
        method: &str,
        segments: &[&str],
        body: Option<&Value>,
        credential: &Credential,
    ) -> Option<(u16, ResponseTemplate)> {
        let app = matches!(
            (method, segments),
            ("POST", ["app", "installations", _, "access_tokens"])
                | ("GET", ["repos", _, _, "installation"])
                | ("GET", ["app"])
        );
        if !app {
            return None;
        }
        if !self.app_ok(credential) {
            return Some(bad_credentials("A JSON web token could not be decoded"));
        }
        Some(match (method, segments) {
            ("POST", ["app", "installations", id, "access_tokens"]) => self.access_token(id, body),
            ("GET", ["repos", owner, repo, "installation"]) => self.installation(owner, repo),
            _ => ok(200, json!({"id": 1, "slug": APP_SLUG, "name": "imagebump"})),
        })
    }

    /// The routes under `/repos/{owner}/{repo}/` of the fake's repository.
    fn repo_route(
        &mut self,
        method: &str,
        rest: &[&str],
        (route, query): (&str, &[(String, String)]),
        body: &Value,
    ) -> (u16, ResponseTemplate) {
        let number = |s: &str| s.parse::<u64>().ok();
        if let Some(answer) = self.issue_route(method, rest, (route, query), body) {
            return answer;
        }
        match (method, rest) {
            ("GET", ["pulls"]) => self.list(route, query),
            ("POST", ["pulls"]) => self.create(body),
            ("GET", ["pulls", n]) => match number(n).and_then(|n| self.find(n)) {
                Some(pull) => ok(200, self.pull_json(&pull, true)),
                None => not_found(),
            },
            ("PATCH", ["pulls", n]) => match number(n) {
                Some(n) => self.update(n, body),
                None => not_found(),
            },
            ("GET", ["pulls", n, "reviews"]) => match number(n).and_then(|n| self.find(n)) {
                Some(pull) => {
                    let reviews: Vec<Value> = (pull.reviews.iter().enumerate())
                        .map(|(i, (login, state))| {
                            json!({"id": i + 1, "user": user_json(login), "state": state})
                        })
                        .collect();
                    ok(200, Value::Array(reviews))
                }
                None => not_found(),
            },
            ("POST", ["pulls", n, "requested_reviewers"]) => match number(n) {
                Some(n) => self.reviewers(n, body),
                None => not_found(),
            },
            ("POST", ["issues", n, "comments"]) => match number(n) {
                Some(n) => self.comment(n, body),
                None => not_found(),
            },
            ("POST", ["issues", n, "labels"]) => match number(n) {
                Some(n) => self.labels(n, body),
                None => not_found(),
            },
            ("POST", ["issues", n, "assignees"]) => match number(n) {
                Some(n) => self.assignees(n, body),
                None => not_found(),
            },
            ("POST", ["git", "refs"]) => self.create_ref(body),
            ("PATCH", ["git", "refs", "heads", branch @ ..]) => {
                self.update_ref(&branch.join("/"), body)
            }
            ("GET", ["commits", sha]) => self.commit_json(sha),
            ("GET", ["git", "ref", "heads", branch @ ..]) => self.get_ref(&branch.join("/")),
            _ => not_found(),
        }
    }

    /// Where GraphQL lives: `/graphql` on github.com, `/api/graphql` beside Enterprise
    /// Server's `/api/v3`. Faults for it are set on the route `/graphql`.
    fn graphql_path(&self) -> String {
        let root = self.prefix.strip_suffix("/v3").unwrap_or(&self.prefix);
        format!("{root}/graphql")
    }

    /// `POST /graphql`: the one mutation imagebump sends, answered as GitHub does (200, with
    /// `errors` when refused).
    fn graphql(&mut self, body: Option<&Value>, installation: bool) -> (u16, ResponseTemplate) {
        let empty = json!({});
        let body = body.unwrap_or(&empty);
        let query = body
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let vars = body.get("variables").cloned().unwrap_or(Value::Null);
        let error = |message: &str, kind: &str| {
            ok(
                200,
                json!({"data": null, "errors": [{"type": kind, "message": message}]}),
            )
        };
        if query.contains("createCommitOnBranch") {
            return self.create_commit_on_branch(&vars);
        }
        if query.contains("issue(number") {
            return self.graphql_issue_editor(&vars);
        }
        if query.contains("viewer") {
            // An installation token's viewer is the App's bot, named as REST names it.
            let viewer = match installation {
                true => json!({"__typename": "Bot", "login": APP_BOT_LOGIN}),
                false => json!({"__typename": "User", "login": BOT_LOGIN}),
            };
            return ok(200, json!({"data": {"viewer": viewer}}));
        }
        if !query.contains("enablePullRequestAutoMerge") {
            return error(
                "the fake knows only enablePullRequestAutoMerge",
                "NOT_IMPLEMENTED",
            );
        }
        let id = vars.get("id").and_then(Value::as_str).unwrap_or_default();
        let method = vars
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("MERGE");
        if !["MERGE", "SQUASH", "REBASE"].contains(&method) {
            return error(&format!("Variable $method of type PullRequestMergeMethod was provided invalid value {method}"), "INVALID");
        }
        let number = id
            .strip_prefix("PR_fake")
            .and_then(|n| n.parse::<u64>().ok());
        let Some(pull) = number.and_then(|n| self.find(n)) else {
            return error(
                &format!("Could not resolve to a node with the global id of '{id}'"),
                "NOT_FOUND",
            );
        };
        if !self.allow_auto_merge {
            return error(
                "Pull request Auto merge is not allowed for this repository",
                "UNPROCESSABLE",
            );
        }
        if pull.state != "open" {
            return error(
                "Pull request is not in the correct state to enable auto-merge",
                "UNPROCESSABLE",
            );
        }
        let now = self.clock.tick();
        let p = self.pull_mut(pull.number);
        p.auto_merge = Some(method.to_string());
        p.updated_at = now;
        ok(
            200,
            json!({"data": {"enablePullRequestAutoMerge": {"pullRequest": {"number": pull.number}}}}),
        )
    }

    /// `POST /repos/{o}/{r}/git/refs`: `ref` (`refs/heads/…`), `sha`; 422 when it exists.
    fn create_ref(&mut self, body: &Value) -> (u16, ResponseTemplate) {
        let Some(dir) = self.git_dir.clone() else {
            return not_found();
        };
        let name = body.get("ref").and_then(Value::as_str).unwrap_or_default();
        let sha = body.get("sha").and_then(Value::as_str).unwrap_or_default();
        let Some(branch) = name.strip_prefix("refs/heads/") else {
            return unprocessable("Reference name must start with 'refs/heads/'");
        };
        if git_data::head(&dir, branch).is_some() {
            return unprocessable("Reference already exists");
        }
        if !git_data::is_commit(&dir, sha) || !git_data::set_ref(&dir, branch, sha) {
            return unprocessable("Object does not exist");
        }
        ok(201, self.ref_json(branch, sha))
    }

    /// `PATCH /repos/{o}/{r}/git/refs/heads/{branch}`: `sha`, `force`; 422 for a move that
    /// is not a fast-forward without `force`.
    fn update_ref(&mut self, branch: &str, body: &Value) -> (u16, ResponseTemplate) {
        let Some(dir) = self.git_dir.clone() else {
            return not_found();
        };
        let sha = body.get("sha").and_then(Value::as_str).unwrap_or_default();
        let force = body.get("force").and_then(Value::as_bool).unwrap_or(false);
        let Some(old) = git_data::head(&dir, branch) else {
            return unprocessable("Reference does not exist");
        };
        if !git_data::is_commit(&dir, sha) {
            return unprocessable("Object does not exist");
        }
        if !force && !git_data::is_ancestor(&dir, &old, sha) {
            return unprocessable("Update is not a fast forward");
        }
        git_data::set_ref(&dir, branch, sha);
        ok(200, self.ref_json(branch, sha))
    }

    /// `GET /repos/{o}/{r}/git/ref/heads/{branch}`.
    fn get_ref(&self, branch: &str) -> (u16, ResponseTemplate) {
        let head = self
            .git_dir
            .as_deref()
            .and_then(|d| git_data::head(d, branch));
        match head {
            Some(sha) => ok(200, self.ref_json(branch, &sha)),
            None => not_found(),
        }
    }

    fn ref_json(&self, branch: &str, sha: &str) -> Value {
        json!({
            "ref": format!("refs/heads/{branch}"),
            "node_id": format!("REF_{branch}"),
            "url": format!("{}/repos/{}/git/refs/heads/{branch}", self.base_url, self.full_name()),
            "object": {"type": "commit", "sha": sha},
        })
    }

    /// `GET /repos/{o}/{r}/commits/{sha}`, as far as its signature verification goes.
    fn commit_json(&self, sha: &str) -> (u16, ResponseTemplate) {
        let Some(dir) = self.git_dir.clone() else {
            return not_found();
        };
        if !git_data::is_commit(&dir, sha) {
            return unprocessable(&format!("No commit found for SHA: {sha}"));
        }
        let verified = self.verified.iter().any(|v| v == sha);
        ok(
            200,
            json!({
                "sha": sha,
                "commit": {
                    "verification": {
                        "verified": verified,
                        "reason": if verified { "valid" } else { "unsigned" },
                    }
                }
            }),
        )
    }

    /// GraphQL `createCommitOnBranch`: a commit of `fileChanges.additions` (base64) on the
    /// branch, which must point at `expectedHeadOid`; GitHub is the committer and signs it.
    fn create_commit_on_branch(&mut self, vars: &Value) -> (u16, ResponseTemplate) {
        use base64::Engine;
        let error = |message: &str| {
            ok(
                200,
                json!({"data": {"createCommitOnBranch": null}, "errors": [{"type": "UNPROCESSABLE", "message": message}]}),
            )
        };
        let Some(dir) = self.git_dir.clone() else {
            return error("the fake serves no repository");
        };
        let input = &vars["input"];
        let branch = input["branch"]["branchName"].as_str().unwrap_or_default();
        let repo = input["branch"]["repositoryNameWithOwner"]
            .as_str()
            .unwrap_or_default();
        if !repo.eq_ignore_ascii_case(&self.full_name()) {
            return error(&format!(
                "Could not resolve to a Repository with the name '{repo}'."
            ));
        }
        let expected = input["expectedHeadOid"].as_str().unwrap_or_default();
        let Some(head) = git_data::head(&dir, branch) else {
            return error(&format!(
                "A ref named \"refs/heads/{branch}\" does not exist."
            ));
        };
        if head != expected {
            return error(&format!(
                "Expected branch to point to \"{expected}\" but it did not. Pull and try again."
            ));
        }
        let mut files = Vec::new();
        for a in input["fileChanges"]["additions"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let path = a["path"].as_str().unwrap_or_default().to_string();
            let Ok(content) = base64::engine::general_purpose::STANDARD
                .decode(a["contents"].as_str().unwrap_or_default())
            else {
                return error("contents must be base64");
            };
            files.push((path, content));
        }
        let headline = input["message"]["headline"].as_str().unwrap_or_default();
        let body = input["message"]["body"].as_str().unwrap_or_default();
        let message = if body.is_empty() {
            format!("{headline}\n")
        } else {
            format!("{headline}\n\n{body}\n")
        };
        let author = ("imagebump[bot]", "imagebump[bot]@users.noreply.github.com");
        let Some(sha) = git_data::commit(&dir, &head, &files, &message, author) else {
            return error("the commit could not be created");
        };
        git_data::set_ref(&dir, branch, &sha);
        self.verified.push(sha.clone());
        ok(
            200,
            json!({"data": {"createCommitOnBranch": {"commit": {"oid": sha, "url": format!("https://github.com/{}/commit/{sha}", self.full_name())}}}}),
        )
    }

    fn find(&self, number: u64) -> Option<FakePull> {
        self.pulls.iter().find(|p| p.number == number).cloned()
    }

    fn list(&self, route: &str, query: &[(String, String)]) -> (u16, ResponseTemplate) {
        let get = |key: &str| query_get(query, key);
        let state = get("state").unwrap_or("open");
        let sort = get("sort").unwrap_or("created");
        let direction = get("direction").unwrap_or(if sort == "created" || sort == "updated" {
            "desc"
        } else {
            "asc"
        });
        let per_page = per_page(query, 30);
        let page = page_number(query);
        let mut pulls: Vec<&FakePull> = self
            .pulls
            .iter()
            .filter(|p| state == "all" || p.state == state)
            .filter(|p| match get("head") {
                // `owner:branch`; GitHub also takes a bare owner.
                Some(head) => {
                    let (owner, branch) = head.split_once(':').unwrap_or((head, ""));
                    let head_owner = p.head_repo.split('/').next().unwrap_or_default();
                    head_owner.eq_ignore_ascii_case(owner)
                        && (branch.is_empty() || p.branch == branch)
                }
                None => true,
            })
            .filter(|p| get("base").is_none_or(|b| p.base == b))
            .collect();
        pulls.sort_by_key(|p| match sort {
            "updated" => (p.updated_at, p.number),
            _ => (p.created_at, p.number),
        });
        if direction == "desc" {
            pulls.reverse();
        }
        let last = pulls.len().div_ceil(per_page).max(1);
        let items: Vec<Value> = pulls
            .iter()
            .skip((page - 1) * per_page)
            .take(per_page)
            .map(|p| self.pull_json(p, false))
            .collect();
        let mut template = ResponseTemplate::new(200).set_body_json(Value::Array(items));
        let link = self.link(route, query, page, last);
        if !link.is_empty() {
            template = template.insert_header("link", link.as_str());
        }
        (200, with_rate_headers(template))
    }

    /// GitHub's `Link`: next and last after the first page, first and prev after it.
    fn link(&self, route: &str, query: &[(String, String)], page: usize, last: usize) -> String {
        let url = |p: usize| page_url(&self.base_url, route, query, p);
        let mut parts = Vec::new();
        if page > 1 {
            parts.push(format!("{}; rel=\"prev\"", url(page - 1)));
        }
        if page < last {
            parts.push(format!("{}; rel=\"next\"", url(page + 1)));
            parts.push(format!("{}; rel=\"last\"", url(last)));
        }
        if page > 1 {
            parts.push(format!("{}; rel=\"first\"", url(1)));
        }
        parts.join(", ")
    }

    fn create(&mut self, body: &Value) -> (u16, ResponseTemplate) {
        let text = |key: &str| body.get(key).and_then(Value::as_str);
        let (Some(title), Some(head), Some(base)) = (text("title"), text("head"), text("base"))
        else {
            return validation_failed("PullRequest", "missing_field", None);
        };
        let branch = match head.split_once(':') {
            Some((owner, branch)) if owner.eq_ignore_ascii_case(&self.owner) => branch,
            Some(_) => return validation_failed("PullRequest", "invalid", Some("head")),
            None => head,
        };
        if let Some(their_title) = self.raced_create.take() {
            let head_repo = self.full_name();
            self.insert_pull(
                branch,
                &head_repo,
                base,
                &their_title,
                None,
                false,
                BOT_LOGIN,
            );
        }
        let exists = self.pulls.iter().any(|p| {
            p.state == "open"
                && p.branch == branch
                && p.base == base
                && p.head_repo == self.full_name()
        });
        if exists {
            let message = format!("A pull request already exists for {}:{branch}.", self.owner);
            return (
                422,
                with_rate_headers(ResponseTemplate::new(422).set_body_json(json!({
                    "message": "Validation Failed",
                    "errors": [{"resource": "PullRequest", "code": "custom", "message": message}],
                    "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
                    "status": "422"
                }))),
            );
        }
        let draft = body.get("draft").and_then(Value::as_bool).unwrap_or(false);
        let head_repo = self.full_name();
        let number = self.insert_pull(
            branch,
            &head_repo,
            base,
            title,
            text("body"),
            draft,
            &self.acting.clone(),
        );
        let pull = self.find(number).unwrap_or_else(|| unreachable!());
        ok(201, self.pull_json(&pull, true))
    }

    fn update(&mut self, number: u64, body: &Value) -> (u16, ResponseTemplate) {
        if self.find(number).is_none() {
            return not_found();
        }
        let now = self.clock.tick();
        let pull = self.pull_mut(number);
        if let Some(title) = body.get("title").and_then(Value::as_str) {
            pull.title = title.to_string();
        }
        if let Some(text) = body.get("body") {
            pull.body = text.as_str().map(str::to_string);
        }
        if let Some(base) = body.get("base").and_then(Value::as_str) {
            pull.base = base.to_string();
        }
        match body.get("state").and_then(Value::as_str) {
            Some("closed") if pull.state == "open" => {
                pull.state = "closed".to_string();
                pull.closed_at = Some(now);
            }
            Some("open") if pull.state == "closed" && !pull.merged => {
                pull.state = "open".to_string();
                pull.closed_at = None;
            }
            _ => {}
        }
        pull.updated_at = now;
        let pull = pull.clone();
        ok(200, self.pull_json(&pull, true))
    }

    fn reviewers(&mut self, number: u64, body: &Value) -> (u16, ResponseTemplate) {
        if self.find(number).is_none() {
            return not_found();
        }
        let users = strings(body.get("reviewers"));
        let teams = strings(body.get("team_reviewers"));
        if users.is_empty() && teams.is_empty() {
            return validation_failed("PullRequest", "missing_field", Some("reviewers"));
        }
        let now = self.clock.tick();
        let pull = self.pull_mut(number);
        if users.contains(&pull.user) {
            return (
                422,
                with_rate_headers(ResponseTemplate::new(422).set_body_json(json!({
                    "message": "Review cannot be requested from pull request author.",
                    "documentation_url": "https://docs.github.com/rest/pulls/review-requests#request-reviewers-for-a-pull-request",
                    "status": "422"
                }))),
            );
        }
        add_unique(&mut pull.reviewers, users);
        add_unique(&mut pull.team_reviewers, teams);
        pull.updated_at = now;
        let pull = pull.clone();
        ok(201, self.pull_json(&pull, true))
    }

    fn comment(&mut self, number: u64, body: &Value) -> (u16, ResponseTemplate) {
        if self.find(number).is_none() {
            return not_found();
        }
        let Some(text) = body.get("body").and_then(Value::as_str) else {
            return validation_failed("IssueComment", "missing_field", Some("body"));
        };
        let now = self.clock.tick();
        let pull = self.pull_mut(number);
        pull.comments.push(text.to_string());
        pull.updated_at = now;
        let id = 1_000_000 + pull.comments.len() as u64 * 1000 + number;
        let html = format!(
            "https://github.com/{}/pull/{number}#issuecomment-{id}",
            self.full_name()
        );
        ok(
            201,
            json!({
                "id": id,
                "node_id": "IC_fake",
                "url": format!("{}/repos/{}/issues/comments/{id}", self.base_url, self.full_name()),
                "html_url": html,
                "body": text,
                "user": user_json(BOT_LOGIN),
                "created_at": timestamp(now),
                "updated_at": timestamp(now),
                "issue_url": format!("{}/repos/{}/issues/{number}", self.base_url, self.full_name()),
                "author_association": "NONE"
            }),
        )
    }

    fn labels(&mut self, number: u64, body: &Value) -> (u16, ResponseTemplate) {
        if self.find(number).is_none() {
            return not_found();
        }
        let labels = strings(body.get("labels"));
        let now = self.clock.tick();
        let pull = self.pull_mut(number);
        add_unique(&mut pull.labels, labels);
        pull.updated_at = now;
        let names = pull.labels.clone();
        let base_url = self.base_url.clone();
        let full = self.full_name();
        ok(
            200,
            Value::Array(
                names
                    .iter()
                    .map(|n| label_json(&base_url, &full, n))
                    .collect(),
            ),
        )
    }

    fn assignees(&mut self, number: u64, body: &Value) -> (u16, ResponseTemplate) {
        if self.find(number).is_none() {
            return not_found();
        }
        let assignees = strings(body.get("assignees"));
        let now = self.clock.tick();
        let pull = self.pull_mut(number);
        add_unique(&mut pull.assignees, assignees);
        pull.updated_at = now;
        let pull = pull.clone();
        // GitHub answers with the issue; the pull request's shape is close enough here.
        ok(201, self.pull_json(&pull, false))
    }

    fn installation(&self, owner: &str, repo: &str) -> (u16, ResponseTemplate) {
        let Some(app) = self.app.as_ref().filter(|app| app.installed) else {
            return not_found();
        };
        if !owner.eq_ignore_ascii_case(&self.owner) || !repo.eq_ignore_ascii_case(&self.repo) {
            return not_found();
        }
        ok(
            200,
            json!({
                "id": app.installation_id,
                "app_id": app.app_id,
                "app_slug": "imagebump-test",
                "target_type": "Organization",
                "target_id": 1,
                "account": user_json(&self.owner),
                "repository_selection": "selected",
                "access_tokens_url": format!("{}/app/installations/{}/access_tokens", self.base_url, app.installation_id),
                "repositories_url": format!("{}/installation/repositories", self.base_url),
                "html_url": format!("https://github.com/organizations/{}/settings/installations/{}", self.owner, app.installation_id),
                "permissions": {"contents": "write", "pull_requests": "write", "metadata": "read"},
                "events": [],
                "created_at": timestamp(CLOCK_START),
                "updated_at": timestamp(CLOCK_START),
                "single_file_name": null
            }),
        )
    }

    fn access_token(&mut self, id: &str, body: Option<&Value>) -> (u16, ResponseTemplate) {
        let Some(app) = &self.app else {
            return not_found();
        };
        if id.parse::<u64>().ok() != Some(app.installation_id) {
            return not_found();
        }
        let token = format!("ghs_fakeinstallationtoken{}", self.issued.len() + 1);
        self.issued.push(token.clone());
        let expires = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(CLOCK_START)
            + 3600;
        let mut answer = json!({
            "token": token,
            "expires_at": timestamp(expires),
            "permissions": {"contents": "write", "pull_requests": "write", "metadata": "read"},
            "repository_selection": "selected"
        });
        if let Some(repos) = body.and_then(|b| b.get("repositories")) {
            answer["repositories"] = Value::Array(
                strings(Some(repos))
                    .iter()
                    .map(|r| self.repository_json(r))
                    .collect(),
            );
        }
        ok(201, answer)
    }

    /// A repository in GitHub's shape: the fixture's base repository renamed.
    fn repository_json(&self, name: &str) -> Value {
        let fixture: Value = serde_json::from_str(LIST_FIXTURE).unwrap_or(Value::Null);
        let mut repo = fixture[0]["base"]["repo"].clone();
        let full = format!("{}/{name}", self.owner);
        repo["name"] = json!(name);
        repo["full_name"] = json!(full);
        repo["owner"] = user_json(&self.owner);
        repo["html_url"] = json!(format!("https://github.com/{full}"));
        repo["url"] = json!(format!("{}/repos/{full}", self.base_url));
        repo
    }

    /// A pull request in GitHub's shape: the real fixture with this one's fields. `single`:
    /// the shape of `GET /pulls/{n}` (with `merged`, `mergeable`, counts).
    fn pull_json(&self, pull: &FakePull, single: bool) -> Value {
        let template = if single { SINGLE_FIXTURE } else { LIST_FIXTURE };
        let mut value: Value = serde_json::from_str(template).unwrap_or(Value::Null);
        if let Value::Array(mut items) = value {
            value = items.swap_remove(0);
        }
        let full = self.full_name();
        let labels = pull
            .labels
            .iter()
            .map(|l| label_json(&self.base_url, &full, l))
            .collect();
        let mut fields = pull_links(
            &format!("{}/repos/{full}", self.base_url),
            &full,
            pull.number,
        );
        fields.extend(pull_fields(pull, Value::Array(labels)));
        fields.extend(pull_people(pull));
        if single {
            fields.extend(single_pull_fields(pull));
        }
        for (key, v) in fields {
            value[key] = v;
        }
        let mut head = pull.head_repo.split('/');
        let head_owner = head.next().unwrap_or_default();
        let head_name = head.next().unwrap_or_default();
        let n = pull.number;
        set_branch(&mut value["head"], head_owner, head_name, &pull.branch, n);
        set_branch(&mut value["base"], &self.owner, &self.repo, &pull.base, 0);
        value
    }
}

/// A pull request's URLs and ids, as GitHub forms them.
fn pull_links(api: &str, full: &str, n: u64) -> Vec<(&'static str, Value)> {
    let html = format!("https://github.com/{full}/pull/{n}");
    vec![
        ("url", json!(format!("{api}/pulls/{n}"))),
        ("id", json!(10_000 + n)),
        ("node_id", json!(format!("PR_fake{n}"))),
        ("diff_url", json!(format!("{html}.diff"))),
        ("patch_url", json!(format!("{html}.patch"))),
        ("issue_url", json!(format!("{api}/issues/{n}"))),
        ("commits_url", json!(format!("{api}/pulls/{n}/commits"))),
        (
            "review_comments_url",
            json!(format!("{api}/pulls/{n}/comments")),
        ),
        ("comments_url", json!(format!("{api}/issues/{n}/comments"))),
        ("html_url", json!(html)),
        ("number", json!(n)),
    ]
}

/// A pull request's own fields: state, texts, times, draft and auto-merge.
fn pull_fields(pull: &FakePull, labels: Value) -> Vec<(&'static str, Value)> {
    let merge_commit = if pull.merged {
        json!(format!("{:040x}", pull.number))
    } else {
        Value::Null
    };
    let auto_merge = match &pull.auto_merge {
        Some(method) => json!({
            "enabled_by": user_json(BOT_LOGIN),
            "merge_method": method.to_ascii_lowercase(),
            "commit_title": pull.title,
            "commit_message": "",
        }),
        None => Value::Null,
    };
    vec![
        ("state", json!(pull.state)),
        ("locked", json!(false)),
        ("title", json!(pull.title)),
        ("body", json!(pull.body)),
        ("labels", labels),
        ("milestone", Value::Null),
        ("created_at", json!(timestamp(pull.created_at))),
        ("updated_at", json!(timestamp(pull.updated_at))),
        ("closed_at", json!(pull.closed_at.map(timestamp))),
        ("merged_at", json!(pull.merged_at.map(timestamp))),
        ("merge_commit_sha", merge_commit),
        ("draft", json!(pull.draft)),
        ("author_association", json!("NONE")),
        ("auto_merge", auto_merge),
    ]
}

/// Who wrote, is assigned to and is asked to review a pull request.
fn pull_people(pull: &FakePull) -> Vec<(&'static str, Value)> {
    let users = |names: &[String]| Value::Array(names.iter().map(|a| user_json(a)).collect());
    let teams = pull
        .team_reviewers
        .iter()
        .map(|t| json!({"name": t, "slug": t, "id": 1}))
        .collect();
    vec![
        ("user", user_json(&pull.user)),
        (
            "assignee",
            pull.assignees.first().map_or(Value::Null, |a| user_json(a)),
        ),
        ("assignees", users(&pull.assignees)),
        ("requested_reviewers", users(&pull.reviewers)),
        ("requested_teams", Value::Array(teams)),
    ]
}

/// The fields only `GET /pulls/{n}` has.
fn single_pull_fields(pull: &FakePull) -> Vec<(&'static str, Value)> {
    let open = pull.state == "open";
    vec![
        ("merged", json!(pull.merged)),
        ("mergeable", if open { json!(true) } else { Value::Null }),
        (
            "mergeable_state",
            json!(if open { "clean" } else { "unknown" }),
        ),
        (
            "merged_by",
            if pull.merged {
                user_json("a-human")
            } else {
                Value::Null
            },
        ),
        ("comments", json!(pull.comments.len())),
        ("review_comments", json!(0)),
        ("commits", json!(1)),
    ]
}

/// The fixture's `head`/`base` object rewritten for this repository and branch.
fn set_branch(value: &mut Value, owner: &str, repo: &str, branch: &str, seed: u64) {
    let full = format!("{owner}/{repo}");
    value["label"] = json!(format!("{owner}:{branch}"));
    value["ref"] = json!(branch);
    value["sha"] = json!(format!("{:040x}", 0xabc0_0000_u64 + seed));
    value["user"] = user_json(owner);
    let repo_value = &mut value["repo"];
    if repo_value.is_object() {
        repo_value["name"] = json!(repo);
        repo_value["full_name"] = json!(full);
        repo_value["owner"] = user_json(owner);
        repo_value["html_url"] = json!(format!("https://github.com/{full}"));
        repo_value["fork"] = json!(owner != FakeGitHub::OWNER);
        // The fixture's other URLs name octocat/Hello-World; nothing here reads them.
    }
}

/// A user in GitHub's full shape (octocrab's models need every URL field).
fn user_json(login: &str) -> Value {
    let api = format!("https://api.github.com/users/{login}");
    json!({
        "login": login,
        "id": login.bytes().map(u64::from).sum::<u64>(),
        "node_id": format!("U_{login}"),
        "avatar_url": format!("https://avatars.githubusercontent.com/{login}"),
        "gravatar_id": "",
        "url": api,
        "html_url": format!("https://github.com/{login}"),
        "followers_url": format!("{api}/followers"),
        "following_url": format!("{api}/following{{/other_user}}"),
        "gists_url": format!("{api}/gists{{/gist_id}}"),
        "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{api}/subscriptions"),
        "organizations_url": format!("{api}/orgs"),
        "repos_url": format!("{api}/repos"),
        "events_url": format!("{api}/events{{/privacy}}"),
        "received_events_url": format!("{api}/received_events"),
        "type": if login.ends_with("-bot") { "Bot" } else { "User" },
        "site_admin": false
    })
}

fn label_json(base_url: &str, full: &str, name: &str) -> Value {
    json!({
        "id": name.bytes().map(u64::from).sum::<u64>(),
        "node_id": format!("LA_{name}"),
        "url": format!("{base_url}/repos/{full}/labels/{name}"),
        "name": name,
        "description": null,
        "color": "ededed",
        "default": false
    })
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

fn with_rate_headers(template: ResponseTemplate) -> ResponseTemplate {
    template
        .insert_header("x-ratelimit-limit", "5000")
        .insert_header("x-ratelimit-remaining", "4999")
        .insert_header(
            "x-ratelimit-reset",
            (now_secs() + 3600).to_string().as_str(),
        )
        .insert_header("x-ratelimit-used", "1")
        .insert_header("x-ratelimit-resource", "core")
        .insert_header("x-github-api-version-selected", "2022-11-28")
}

fn ok(status: u16, body: Value) -> (u16, ResponseTemplate) {
    (
        status,
        with_rate_headers(ResponseTemplate::new(status).set_body_json(body)),
    )
}

fn unprocessable(message: &str) -> (u16, ResponseTemplate) {
    (
        422,
        ResponseTemplate::new(422).set_body_json(json!({
            "message": message,
            "documentation_url": "https://docs.github.com/rest/git/refs",
            "status": "422"
        })),
    )
}

/// 403 as GitHub answers an installation token asking for what it may not read.
fn forbidden(message: &str) -> (u16, ResponseTemplate) {
    (
        403,
        with_rate_headers(ResponseTemplate::new(403).set_body_json(json!({
            "message": message,
            "documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user",
            "status": "403"
        }))),
    )
}

fn not_found() -> (u16, ResponseTemplate) {
    (
        404,
        ResponseTemplate::new(404).set_body_json(json!({
            "message": "Not Found",
            "documentation_url": "https://docs.github.com/rest",
            "status": "404"
        })),
    )
}

fn bad_credentials(message: &str) -> (u16, ResponseTemplate) {
    (
        401,
        ResponseTemplate::new(401).set_body_json(json!({
            "message": message,
            "documentation_url": "https://docs.github.com/rest",
            "status": "401"
        })),
    )
}

fn validation_failed(resource: &str, code: &str, field: Option<&str>) -> (u16, ResponseTemplate) {
    let mut error = json!({"resource": resource, "code": code});
    if let Some(field) = field {
        error["field"] = json!(field);
    }
    (
        422,
        ResponseTemplate::new(422).set_body_json(json!({
            "message": "Validation Failed",
            "errors": [error],
            "documentation_url": "https://docs.github.com/rest",
            "status": "422"
        })),
    )
}

fn fault_response(fault: &Fault) -> (u16, ResponseTemplate) {
    let docs = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api";
    match fault {
        Fault::RateLimit { reset_in } => (
            403,
            ResponseTemplate::new(403)
                .insert_header("x-ratelimit-limit", "5000")
                .insert_header("x-ratelimit-remaining", "0")
                .insert_header("x-ratelimit-used", "5000")
                .insert_header("x-ratelimit-reset", (now_secs() + reset_in).to_string().as_str())
                .insert_header("x-ratelimit-resource", "core")
                .set_body_json(json!({
                    "message": "API rate limit exceeded for installation ID 1.",
                    "documentation_url": docs,
                    "status": "403"
                })),
        ),
        Fault::SecondaryRateLimit { retry_after } => (
            403,
            ResponseTemplate::new(403)
                .insert_header("retry-after", retry_after.to_string().as_str())
                .set_body_json(json!({
                    "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
                    "documentation_url": docs,
                    "status": "403"
                })),
        ),
        Fault::TooManyRequests { retry_after } => (
            429,
            ResponseTemplate::new(429)
                .insert_header("retry-after", retry_after.to_string().as_str())
                .set_body_json(json!({"message": "Too Many Requests", "status": "429"})),
        ),
        Fault::Status(status) => (
            *status,
            ResponseTemplate::new(*status).set_body_json(json!({
                "message": match status {
                    502 => "Server Error",
                    503 => "Service Unavailable",
                    _ => "Internal Server Error",
                },
                "status": status.to_string()
            })),
        ),
    }
}

/// Checks a GitHub App JWT the way GitHub does: RS256, signed by the app's key, not expired,
/// lifetime at most 10 minutes; returns `iss` (a number or a string) as a string.
fn verify_jwt(token: &str) -> Result<String, String> {
    use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};
    let header = decode_header(token).map_err(|e| e.to_string())?;
    if header.alg != Algorithm::RS256 {
        return Err(format!("alg {:?}, want RS256", header.alg));
    }
    let key = DecodingKey::from_rsa_pem(APP_PUBLIC_KEY.as_bytes()).map_err(|e| e.to_string())?;
    let mut validation = Validation::new(Algorithm::RS256);
    // `iss` is checked below: jsonwebtoken only reads a string `iss`, GitHub takes a number.
    validation.set_required_spec_claims(&["exp"]);
    let data = decode::<Value>(token, &key, &validation).map_err(|e| e.to_string())?;
    let claims = data.claims;
    let iat = claims["iat"].as_i64().ok_or("no iat")?;
    let exp = claims["exp"].as_i64().ok_or("no exp")?;
    if exp - iat > 600 {
        return Err("JWT lifetime over 10 minutes".to_string());
    }
    match &claims["iss"] {
        Value::Number(n) => Ok(n.to_string()),
        Value::String(s) => Ok(s.clone()),
        _ => Err("no iss".to_string()),
    }
}
