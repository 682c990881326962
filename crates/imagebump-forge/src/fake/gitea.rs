//! A stateful fake of the Gitea / Forgejo API v1 for the forge tests: a wiremock server on a
//! loopback port with one [`Respond`] that keeps one repository's pull requests, labels,
//! comments and assignees in memory and answers in Gitea's JSON shapes.
//!
//! It uses nothing of imagebump's; tests reach it as `imagebump_forge::fake::gitea` (the
//! `fake` feature).
//!
//! Routes, below `/api/v1`:
//!
//! | route | answer |
//! |---|---|
//! | `GET /repos/{o}/{r}/pulls` | `state` (open, closed, all; default open), `sort` (oldest, recentupdate, leastupdate; default newest first), `page`, `limit` (default 30, at most [`FakeGitea::set_max_limit`], 50 unless set); `Link` and `X-Total-Count` headers like Gitea's |
//! | `GET /repos/{o}/{r}/pulls/{n}` | one pull request |
//! | `POST /repos/{o}/{r}/pulls` | `head`, `base`, `title`, `body`: 201 and the pull request; 409 when an open one has the same head and base; 422 when a field is missing or head is base |
//! | `PATCH /repos/{o}/{r}/pulls/{n}` | `title`, `body`, `state` (open, closed), `assignees`: 201 and the pull request |
//! | `POST /repos/{o}/{r}/pulls/{n}/requested_reviewers` | `reviewers`, `team_reviewers`: 201; 422 for the author |
//! | `GET /repos/{o}/{r}/pulls/{n}/reviews` | each pending request (`REQUEST_REVIEW`), then the reviews submitted ([`FakeGitea::review`]) |
//! | `POST /repos/{o}/{r}/pulls/{n}/merge` | `Do`, `merge_when_checks_succeed: true`: 201 scheduled (never merged: the fake has no checks); 409 when already scheduled; 405 when [`FakeGitea::set_allow_auto_merge`] is off |
//! | `GET /repos/{o}/{r}/issues/{n}` | the pull request as an issue (`assignees` is `null` when empty, as Gitea writes it) |
//! | `PATCH /repos/{o}/{r}/issues/{n}` | `title`, `body`, `state`, `assignees` (replacing them): 201 |
//! | `POST /repos/{o}/{r}/issues/{n}/comments` | `body`: 201 and the comment |
//! | `GET /repos/{o}/{r}/labels` | the repository's labels, paginated like the pulls |
//! | `POST /repos/{o}/{r}/labels` | `name`, `color` (`#rrggbb` or `rrggbb`): 201 and the label; 422 otherwise |
//! | `POST /repos/{o}/{r}/issues/{n}/labels` | `labels`: ids (or names, as newer Gitea takes), added to the existing ones; 422 for an unknown one |
//!
//! Every route needs `Authorization: token <token>` (or `Bearer <token>`) with
//! [`FakeGitea::TOKEN`]; without it the answer is 401 `{"message":"token is required"}`.
//! Anything else answers 404 `{"message":"The target couldn't be found."}`.
//!
//! Every request is recorded as a [`Call`] (method, path as received, query pairs, JSON body,
//! `Authorization` header, status answered), faulted ones included. [`FakeGitea::fail_next`]
//! (and its variants) makes the next request, whatever it is, answer an error instead of
//! acting. A pull request is a draft when its title starts with `WIP:` or `[WIP]` (any case),
//! as with Gitea's default `WORK_IN_PROGRESS_PREFIXES`. Timestamps come from a clock that
//! ticks one second per change, so "most recently updated" is deterministic.

use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Value};
use wiremock::{MockServer, Request, ResponseTemplate};

use super::common::{
    add_unique, answer_all, header, lock, query_get, strings, timestamp, token_or_bearer, Clock,
    Faults, Received, Serve,
};

mod issues;
pub use issues::ISSUES_ONLY;

/// Where the API lives on the server.
const API_PREFIX: &str = "/api/v1";
/// Gitea's `DEFAULT_PAGING_NUM`.
const DEFAULT_LIMIT: usize = 30;
/// Gitea's `MAX_RESPONSE_ITEMS` default.
const DEFAULT_MAX_LIMIT: usize = 50;
/// Gitea's default `WORK_IN_PROGRESS_PREFIXES`.
const WIP_PREFIXES: [&str; 2] = ["WIP:", "[WIP]"];

/// One request as the fake received it.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub method: String,
    /// The path as received, `/api/v1` included.
    pub path: String,
    /// Query pairs in order.
    pub query: Vec<(String, String)>,
    /// The JSON body, if there was one (a body that is not JSON: as a string).
    pub body: Option<Value>,
    /// The `Authorization` header as sent.
    pub authorization: Option<String>,
    /// The status the fake answered.
    pub status: u16,
}

impl Call {
    /// `"GET /api/v1/repos/o/r/pulls"`: for compact assertions on the sequence.
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    pub fn query_value(&self, key: &str) -> Option<&str> {
        query_get(&self.query, key)
    }
}

/// A label of the fake's repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeLabel {
    pub id: u64,
    pub name: String,
    /// Six hex digits, without `#` (as Gitea answers it).
    pub color: String,
}

/// A pull request in the fake's state.
#[derive(Debug, Clone, PartialEq)]
pub struct FakePull {
    pub number: u64,
    pub branch: String,
    /// `owner/repo` of the head branch: the fake's repository, or a fork; `None` once the
    /// fork was deleted (Gitea then answers `"repo": null`).
    pub head_repo: Option<String>,
    pub base: String,
    /// As stored, work-in-progress prefix included.
    pub title: String,
    pub body: String,
    /// `open` or `closed`.
    pub state: String,
    pub merged: bool,
    pub labels: Vec<FakeLabel>,
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
    /// A merge is scheduled for when the checks succeed, with this style.
    pub scheduled_merge: Option<String>,
}

impl FakePull {
    /// Gitea's notion of a draft: the title starts with a work-in-progress prefix.
    pub fn is_draft(&self) -> bool {
        WIP_PREFIXES.iter().any(|prefix| {
            self.title
                .get(..prefix.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
        })
    }

    pub fn label_names(&self) -> Vec<String> {
        self.labels.iter().map(|l| l.name.clone()).collect()
    }
}

/// What the next request answers instead of acting.
#[derive(Debug, Clone, PartialEq)]
struct Fault {
    status: u16,
    retry_after: Option<String>,
    message: Option<String>,
}

struct State {
    /// Visibility of repositories on this forge, by `owner/name` lower-cased.
    visibility: std::collections::BTreeMap<String, String>,
    /// Releases of repositories on this forge, by `owner/name` lower-cased, newest first.
    releases: std::collections::BTreeMap<String, Vec<Value>>,
    owner: String,
    repo: String,
    /// `http://127.0.0.1:PORT`.
    server_url: String,
    /// Whether a merge may be scheduled (off: 405, as for a user who may not merge).
    auto_merge_allowed: bool,
    pulls: Vec<FakePull>,
    labels: Vec<FakeLabel>,
    next_number: u64,
    next_label_id: u64,
    next_comment_id: u64,
    clock: Clock,
    calls: Vec<Call>,
    faults: Faults<Fault>,
    /// Faults answered after acting: the work is done, the answer is lost.
    lost: Faults<Fault>,
    draft_field: bool,
    link_header: bool,
    max_limit: usize,
    /// Issues (numbered with the pull requests) and permissions.
    issues: super::issues::Issues,
}

/// The fake server. Dropping it stops the server.
pub struct FakeGitea {
    server: MockServer,
    state: Arc<Mutex<State>>,
}

impl FakeGitea {
    /// The only token the fake accepts.
    pub const TOKEN: &'static str = "0123456789abcdef0123456789abcdef01234567";
    pub const OWNER: &'static str = "octo";
    pub const REPO: &'static str = "gitops";
    /// The login the fake says created pull requests, labels and comments.
    pub const BOT_LOGIN: &'static str = "imagebump-bot";

    /// A fake for `octo/gitops`.
    pub async fn start() -> FakeGitea {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(State {
            releases: Default::default(),
            visibility: Default::default(),
            owner: Self::OWNER.to_string(),
            repo: Self::REPO.to_string(),
            server_url: server.uri(),
            pulls: Vec::new(),
            auto_merge_allowed: true,
            labels: Vec::new(),
            next_number: 1,
            next_label_id: 1,
            next_comment_id: 1,
            clock: Clock::new(),
            calls: Vec::new(),
            faults: Faults::new(),
            lost: Faults::new(),
            draft_field: true,
            link_header: true,
            max_limit: DEFAULT_MAX_LIMIT,
            issues: Default::default(),
        }));
        answer_all(&server, &state).await;
        FakeGitea { server, state }
    }

    /// What imagebump takes as its API URL: `http://127.0.0.1:PORT/api/v1`.
    pub fn api_url(&self) -> String {
        format!("{}{API_PREFIX}", self.server.uri())
    }

    /// `/api/v1/repos/octo/gitops` plus `rest`: a path as [`Call::path`] holds it.
    pub fn repo_path(&self, rest: &str) -> String {
        format!("{API_PREFIX}/repos/{}/{}{rest}", Self::OWNER, Self::REPO)
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
        let mut state = self.lock();
        let head_repo = state.full_name();
        state.insert_pull(branch, Some(head_repo), base, title, body, Self::BOT_LOGIN)
    }

    /// Adds an open pull request from `branch` of the fake's repository opened by `author`.
    pub fn add_pull_by(
        &self,
        author: &str,
        branch: &str,
        base: &str,
        title: &str,
        body: &str,
    ) -> u64 {
        let mut state = self.lock();
        let head_repo = state.full_name();
        state.insert_pull(branch, Some(head_repo), base, title, body, author)
    }

    /// Adds an open pull request from `branch` of the fork `fork_owner/gitops`.
    pub fn add_fork_pull(&self, fork_owner: &str, branch: &str, base: &str, title: &str) -> u64 {
        let head_repo = format!("{fork_owner}/{}", Self::REPO);
        self.lock()
            .insert_pull(branch, Some(head_repo), base, title, "", fork_owner)
    }

    /// The fork pull request `number` came from is deleted: its head repository becomes `null`.
    pub fn delete_head_repo(&self, number: u64) {
        self.lock().pull_mut(number).head_repo = None;
    }

    /// Adds a label to the repository; returns its id. `color`: `#rrggbb` or `rrggbb`.
    pub fn add_label(&self, name: &str, color: &str) -> u64 {
        self.lock().insert_label(name, color)
    }

    /// The repository's labels, oldest first.
    pub fn labels(&self) -> Vec<FakeLabel> {
        self.lock().labels.clone()
    }

    /// A human sets the assignees of pull request `number`.
    pub fn set_assignees(&self, number: u64, assignees: &[&str]) {
        self.by_hand(number, |pull, _| {
            pull.assignees = assignees.iter().map(|a| a.to_string()).collect();
        });
    }

    /// A human edits the title of pull request `number` (adding or removing `WIP:`).
    pub fn set_title(&self, number: u64, title: &str) {
        self.by_hand(number, |pull, _| {
            pull.title = title.to_string();
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

    /// Whether scheduling a merge is accepted (off: 405).
    pub fn set_allow_auto_merge(&self, allowed: bool) {
        self.lock().auto_merge_allowed = allowed;
    }

    /// A human cancels the scheduled merge of pull request `number`.
    pub fn cancel_scheduled_merge(&self, number: u64) {
        self.by_hand(number, |pull, _| pull.scheduled_merge = None);
    }

    /// A human reopens pull request `number`.
    pub fn reopen(&self, number: u64) {
        self.by_hand(number, |pull, _| {
            pull.state = "open".to_string();
            pull.closed_at = None;
        });
    }

    /// Whether pull requests carry `draft` (Gitea 1.22 and later; `false`: an older Gitea,
    /// where only the title tells).
    pub fn set_draft_field(&self, enabled: bool) {
        self.lock().draft_field = enabled;
    }

    /// Whether lists send a `Link` header (`false`: a proxy that drops it).
    pub fn set_link_header(&self, enabled: bool) {
        self.lock().link_header = enabled;
    }

    /// The most items a page holds, whatever `limit` asks (Gitea's `MAX_RESPONSE_ITEMS`).
    pub fn set_max_limit(&self, max: usize) {
        self.lock().max_limit = max.max(1);
    }

    /// The next request answers `status` with a Gitea-style error body, without acting.
    /// Calls queue up: each one fails one more request.
    pub fn fail_next(&self, status: u16) {
        self.push_fault(status, None, None);
    }

    /// Like [`FakeGitea::fail_next`], with a `Retry-After` header (seconds or an HTTP date).
    pub fn fail_next_retry_after(&self, status: u16, retry_after: &str) {
        self.push_fault(status, Some(retry_after.to_string()), None);
    }

    /// Like [`FakeGitea::fail_next`], with this `message` in the body.
    pub fn fail_next_message(&self, status: u16, message: &str) {
        self.push_fault(status, None, Some(message.to_string()));
    }

    /// Every request so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// The requests that were not GETs, in order.
    pub fn write_calls(&self) -> Vec<Call> {
        let mut calls = self.calls();
        calls.retain(|c| c.method != "GET");
        calls
    }

    /// Forget the calls so far.
    pub fn clear_calls(&self) {
        self.lock().calls.clear();
    }

    /// The pull requests, by number.
    pub fn pulls(&self) -> Vec<FakePull> {
        self.lock().pulls.clone()
    }

    /// Pull request `number`; panics when there is none.
    pub fn pull(&self, number: u64) -> FakePull {
        self.lock().pull_mut(number).clone()
    }

    fn push_fault(&self, status: u16, retry_after: Option<String>, message: Option<String>) {
        let fault = Fault {
            status,
            retry_after,
            message,
        };
        self.lock().faults.push(None, None, 1, fault);
    }

    /// The next request with `method` (e.g. the first `POST`) answers `status`, without
    /// acting; other requests go through.
    pub fn fail_next_method(&self, method: &str, status: u16) {
        let fault = Fault {
            status,
            retry_after: None,
            message: None,
        };
        self.lock().faults.push(Some(method), None, 1, fault);
    }

    /// The next request with `method` acts, and then answers `status` as if it had failed
    /// (a proxy's 502 after Gitea did the work).
    pub fn lose_next_answer(&self, method: &str, status: u16) {
        let fault = Fault {
            status,
            retry_after: None,
            message: None,
        };
        self.lock().lost.push(Some(method), None, 1, fault);
    }

    /// `login` submits a review in `state` (`APPROVED`, `COMMENT`, `REQUEST_CHANGES`): as
    /// on Gitea, their pending request becomes that review.
    pub fn review(&self, number: u64, login: &str, state: &str) {
        self.by_hand(number, |pull, _| {
            pull.reviewers.retain(|r| !r.eq_ignore_ascii_case(login));
            pull.reviews.push((login.to_string(), state.to_string()));
        });
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
        let Received {
            method,
            path,
            query,
            body,
        } = Received::with_text_bodies(request);
        let authorization = header(request, "authorization");
        let (status, template) = self.answer(
            &method,
            &path,
            &query,
            body.as_ref(),
            authorization.as_deref(),
        );
        let (status, template) = match self.lost.take(&method, &path) {
            Some(fault) => self.fault_response(&fault),
            None => (status, template),
        };
        self.calls.push(Call {
            method,
            path,
            query,
            body,
            authorization,
            status,
        });
        template
    }
}

type Answer = (u16, ResponseTemplate);

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

    fn find(&self, number: u64) -> Option<&FakePull> {
        self.pulls.iter().find(|p| p.number == number)
    }

    fn insert_pull(
        &mut self,
        branch: &str,
        head_repo: Option<String>,
        base: &str,
        title: &str,
        body: &str,
        user: &str,
    ) -> u64 {
        let now = self.clock.tick();
        let number = self.next_number;
        self.next_number += 1;
        self.pulls.push(FakePull {
            number,
            branch: branch.to_string(),
            head_repo,
            base: base.to_string(),
            title: title.to_string(),
            body: body.to_string(),
            state: "open".to_string(),
            merged: false,
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
            scheduled_merge: None,
        });
        number
    }

    fn insert_label(&mut self, name: &str, color: &str) -> u64 {
        let id = self.next_label_id;
        self.next_label_id += 1;
        self.labels.push(FakeLabel {
            id,
            name: name.to_string(),
            color: color.trim_start_matches('#').to_ascii_lowercase(),
        });
        id
    }

    fn authorized(header: Option<&str>) -> bool {
        header.and_then(token_or_bearer) == Some(FakeGitea::TOKEN)
    }

    fn answer(
        &mut self,
        method: &str,
        path: &str,
        query: &[(String, String)],
        body: Option<&Value>,
        authorization: Option<&str>,
    ) -> Answer {
        if let Some(fault) = self.faults.take(method, path) {
            return self.fault_response(&fault);
        }
        let Some(route) = path.strip_prefix(API_PREFIX) else {
            return self.not_found();
        };
        if !State::authorized(authorization) {
            return self.error(401, "token is required");
        }
        let route = route.to_string();
        if method == "GET" && route == "/user" {
            return (
                200,
                ResponseTemplate::new(200).set_body_json(user_json(FakeGitea::BOT_LOGIN)),
            );
        }
        let segments: Vec<&str> = route.trim_matches('/').split('/').collect();
        if let ("GET", ["repos", owner, repo, "releases"]) = (method, segments.as_slice()) {
            let repo = format!("{owner}/{repo}");
            if let Some(answer) = super::common::releases_page(&self.releases, &repo, query) {
                return answer;
            }
            return self.not_found();
        }
        let ["repos", owner, repo, rest @ ..] = segments.as_slice() else {
            return self.not_found();
        };
        if !owner.eq_ignore_ascii_case(&self.owner) || !repo.eq_ignore_ascii_case(&self.repo) {
            let name = format!("{owner}/{repo}");
            let seen = super::common::visibility_of(&self.visibility, &self.releases, &name);
            return match (method, rest, seen) {
                ("GET", [], Some(v)) => (
                    200,
                    ResponseTemplate::new(200).set_body_json(json!({
                        "full_name": name,
                        "private": v == "private",
                        "internal": v == "internal",
                        "owner": {"login": owner, "visibility": "public"},
                    })),
                ),
                _ => self.not_found(),
            };
        }
        let empty = json!({});
        if let Some(answer) =
            self.issue_route(method, rest, (&route, query), body.unwrap_or(&empty))
        {
            return answer;
        }
        let get = |key: &str| query_get(query, key);
        let number = |s: &str| s.parse::<u64>().ok().filter(|n| self.find(*n).is_some());
        let empty = json!({});
        let body = body.unwrap_or(&empty);
        match (method, rest) {
            ("GET", ["pulls"]) => self.list_pulls(&route, &get),
            ("POST", ["pulls"]) => self.create_pull(body),
            ("GET", ["labels"]) => {
                let items: Vec<Value> = self.labels.iter().map(|l| self.label_json(l)).collect();
                self.page(&route, &get, items)
            }
            ("POST", ["labels"]) => self.create_label(body),
            (_, [kind @ ("pulls" | "issues"), n, tail @ ..]) => match number(n) {
                Some(n) => self.answer_pull(method, kind, n, tail, body),
                None => self.not_found(),
            },
            _ => self.not_found(),
        }
    }

    /// The routes of one existing pull request, as a pull (`pulls/{n}`) or an issue
    /// (`issues/{n}`).
    fn answer_pull(
        &mut self,
        method: &str,
        kind: &str,
        number: u64,
        tail: &[&str],
        body: &Value,
    ) -> Answer {
        match (method, kind, tail) {
            ("GET", "pulls", []) => self.pull_answer(200, number),
            ("PATCH", "pulls", []) => {
                self.edit(number, body);
                self.pull_answer(201, number)
            }
            ("POST", "pulls", ["requested_reviewers"]) => self.request_reviewers(number, body),
            ("GET", "pulls", ["reviews"]) => self.reviews(number),
            ("POST", "pulls", ["merge"]) => self.schedule_merge(number, body),
            ("GET", "issues", []) => self.issue_answer(200, number),
            ("PATCH", "issues", []) => {
                self.edit(number, body);
                self.issue_answer(201, number)
            }
            ("POST", "issues", ["comments"]) => self.comment(number, body),
            ("POST", "issues", ["labels"]) => self.add_issue_labels(number, body),
            _ => self.not_found(),
        }
    }

    /// One page of `items` as Gitea serves it: `page` (from 1) and `limit` (capped), with
    /// `X-Total-Count` and a `Link` header naming next, last, first and prev as they apply.
    fn page<'q>(
        &self,
        route: &str,
        get: &impl Fn(&str) -> Option<&'q str>,
        items: Vec<Value>,
    ) -> Answer {
        let limit = get("limit")
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|l| *l > 0)
            .unwrap_or(DEFAULT_LIMIT)
            .min(self.max_limit);
        let page = get("page")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(1)
            .max(1);
        let total = items.len();
        let last = total.div_ceil(limit).max(1);
        let slice: Vec<Value> = items
            .into_iter()
            .skip((page - 1) * limit)
            .take(limit)
            .collect();
        let mut template = ResponseTemplate::new(200)
            .insert_header("x-total-count", total.to_string().as_str())
            .set_body_json(Value::Array(slice));
        if self.link_header {
            let url = |p: usize| {
                format!(
                    "<{}{API_PREFIX}{route}?limit={limit}&page={p}>",
                    self.server_url
                )
            };
            let mut links = Vec::new();
            if page < last {
                links.push(format!("{}; rel=\"next\"", url(page + 1)));
                links.push(format!("{}; rel=\"last\"", url(last)));
            }
            if page > 1 {
                links.push(format!("{}; rel=\"first\"", url(1)));
                links.push(format!("{}; rel=\"prev\"", url(page - 1)));
            }
            if !links.is_empty() {
                template = template.insert_header("link", links.join(",").as_str());
            }
        }
        (200, template)
    }

    fn list_pulls<'q>(&self, route: &str, get: &impl Fn(&str) -> Option<&'q str>) -> Answer {
        let state = get("state").unwrap_or("open");
        let mut pulls: Vec<&FakePull> = self
            .pulls
            .iter()
            .filter(|p| state == "all" || p.state == state)
            .collect();
        match get("sort").unwrap_or("") {
            "oldest" => pulls.sort_by_key(|p| (p.created_at, p.number)),
            "recentupdate" => {
                pulls.sort_by_key(|p| std::cmp::Reverse((p.updated_at, p.number)));
            }
            "leastupdate" => pulls.sort_by_key(|p| (p.updated_at, p.number)),
            _ => pulls.sort_by_key(|p| std::cmp::Reverse((p.created_at, p.number))),
        }
        let items = pulls.iter().map(|p| self.pull_json(p)).collect();
        self.page(route, get, items)
    }

    fn create_pull(&mut self, body: &Value) -> Answer {
        let text = |key: &str| {
            body.get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let Some(head) = text("head") else {
            return self.error(422, "[Head]: Required");
        };
        let Some(base) = text("base") else {
            return self.error(422, "[Base]: Required");
        };
        let Some(title) = text("title") else {
            return self.error(422, "[Title]: Required");
        };
        let branch = match head.split_once(':') {
            Some((owner, branch)) if owner.eq_ignore_ascii_case(&self.owner) => branch,
            Some(_) => return self.not_found(),
            None => head,
        };
        if branch == base {
            return self.error(
                422,
                "Invalid PullRequest: There are no changes between the head and the base",
            );
        }
        let full = self.full_name();
        if let Some(existing) = self.pulls.iter().find(|p| {
            p.state == "open"
                && p.branch == branch
                && p.base == base
                && p.head_repo.as_deref() == Some(full.as_str())
        }) {
            let message = format!(
                "pull request already exists for these targets [id: {n}, issue_id: {n}, \
                 head_repo_id: 1, base_repo_id: 1, head_branch: {branch}, base_branch: {base}]",
                n = existing.number
            );
            return self.error(409, &message);
        }
        let description = body.get("body").and_then(Value::as_str).unwrap_or_default();
        let number = self.insert_pull(
            branch,
            Some(full),
            base,
            title,
            description,
            FakeGitea::BOT_LOGIN,
        );
        self.pull_answer(201, number)
    }

    /// `PATCH /pulls/{n}` and `PATCH /issues/{n}`: the fields Gitea's edit options share.
    fn edit(&mut self, number: u64, body: &Value) {
        let now = self.clock.tick();
        let pull = self.pull_mut(number);
        // Gitea ignores an empty title.
        if let Some(title) = body
            .get("title")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            pull.title = title.to_string();
        }
        if let Some(text) = body.get("body").and_then(Value::as_str) {
            pull.body = text.to_string();
        }
        if let Some(assignees) = body.get("assignees") {
            pull.assignees = strings(Some(assignees));
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
    }

    fn request_reviewers(&mut self, number: u64, body: &Value) -> Answer {
        let users = strings(body.get("reviewers"));
        let teams = strings(body.get("team_reviewers"));
        let author = self
            .find(number)
            .map(|p| p.user.clone())
            .unwrap_or_default();
        if users.iter().any(|u| u.eq_ignore_ascii_case(&author)) {
            return self.error(
                422,
                &format!("review request is not allowed for the poster [doer: {author}]"),
            );
        }
        let now = self.clock.tick();
        let pull = self.pull_mut(number);
        add_unique(&mut pull.reviewers, users.clone());
        add_unique(&mut pull.team_reviewers, teams.clone());
        pull.updated_at = now;
        let reviews: Vec<Value> = users
            .iter()
            .map(|u| json!({"user": user_json(u), "team": null}))
            .chain(
                teams
                    .iter()
                    .map(|t| json!({"user": null, "team": {"name": t}})),
            )
            .enumerate()
            .map(|(i, mut review)| {
                review["id"] = json!(i + 1);
                review["state"] = json!("REQUEST_REVIEW");
                review["pull_request_url"] = json!(self.html_url(number));
                review
            })
            .collect();
        (
            201,
            ResponseTemplate::new(201).set_body_json(Value::Array(reviews)),
        )
    }

    /// `GET …/pulls/{n}/reviews`: each pending request (`REQUEST_REVIEW`), then each
    /// review submitted, as Gitea lists them.
    fn reviews(&mut self, number: u64) -> Answer {
        let Some(pull) = self.find(number) else {
            return self.not_found();
        };
        let pending = (pull.reviewers.iter()).map(|u| (u.clone(), "REQUEST_REVIEW".to_string()));
        let reviews: Vec<Value> = pending
            .chain(pull.reviews.iter().cloned())
            .enumerate()
            .map(|(i, (login, state))| json!({"id": i + 1, "user": user_json(&login), "state": state}))
            .collect();
        (
            200,
            ResponseTemplate::new(200).set_body_json(Value::Array(reviews)),
        )
    }

    fn comment(&mut self, number: u64, body: &Value) -> Answer {
        let Some(text) = body
            .get("body")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        else {
            return self.error(422, "[Body]: Required");
        };
        let now = self.clock.tick();
        let id = self.next_comment_id;
        self.next_comment_id += 1;
        let pull = self.pull_mut(number);
        pull.comments.push(text.to_string());
        pull.updated_at = now;
        let html = format!("{}#issuecomment-{id}", self.html_url(number));
        let answer = json!({
            "id": id,
            "html_url": html,
            "pull_request_url": self.html_url(number),
            "issue_url": "",
            "user": user_json(FakeGitea::BOT_LOGIN),
            "original_author": "",
            "original_author_id": 0,
            "body": text,
            "assets": [],
            "created_at": timestamp(now),
            "updated_at": timestamp(now)
        });
        (201, ResponseTemplate::new(201).set_body_json(answer))
    }

    fn create_label(&mut self, body: &Value) -> Answer {
        let name = body.get("name").and_then(Value::as_str).unwrap_or_default();
        if name.is_empty() {
            return self.error(422, "[Name]: Required");
        }
        let color = body
            .get("color")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let hex = color.strip_prefix('#').unwrap_or(color);
        if hex.len() != 6 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return self.error(422, &format!("invalid label color {color:?}"));
        }
        let id = self.insert_label(name, color);
        let label = self
            .labels
            .iter()
            .find(|l| l.id == id)
            .map(|l| self.label_json(l))
            .unwrap_or(Value::Null);
        (201, ResponseTemplate::new(201).set_body_json(label))
    }

    fn add_issue_labels(&mut self, number: u64, body: &Value) -> Answer {
        let wanted = body
            .get("labels")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut found = Vec::new();
        for item in &wanted {
            let label = match item {
                Value::Number(id) => self.labels.iter().find(|l| Some(l.id) == id.as_u64()),
                Value::String(name) => self.labels.iter().find(|l| &l.name == name),
                _ => None,
            };
            match label {
                Some(label) => found.push(label.clone()),
                None => return self.error(422, &format!("label does not exist [label: {item}]")),
            }
        }
        let now = self.clock.tick();
        let pull = self.pull_mut(number);
        for label in found {
            if !pull.labels.iter().any(|l| l.id == label.id) {
                pull.labels.push(label);
            }
        }
        pull.updated_at = now;
        let labels: Vec<FakeLabel> = pull.labels.clone();
        let items: Vec<Value> = labels.iter().map(|l| self.label_json(l)).collect();
        (
            200,
            ResponseTemplate::new(200).set_body_json(Value::Array(items)),
        )
    }

    /// `POST pulls/{n}/merge` with `merge_when_checks_succeed`: scheduled (201), or 409 when
    /// one already is, as Gitea answers. The fake has no checks, so it never merges by
    /// itself; a plain merge (without the flag) is not part of the fake.
    fn schedule_merge(&mut self, number: u64, body: &Value) -> Answer {
        let Some(pull) = self.find(number) else {
            return self.not_found();
        };
        if pull.state != "open" || pull.merged {
            return self.not_found();
        }
        let wanted = body
            .get("merge_when_checks_succeed")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let style = body.get("Do").and_then(Value::as_str).unwrap_or_default();
        if !self.auto_merge_allowed {
            return (
                405,
                ResponseTemplate::new(405)
                    .set_body_json(json!({"message": "User not allowed to merge PR", "url": ""})),
            );
        }
        if !wanted || !["merge", "rebase", "rebase-merge", "squash"].contains(&style) {
            return (
                405,
                ResponseTemplate::new(405)
                    .set_body_json(json!({"message": "the fake only schedules merges", "url": ""})),
            );
        }
        if pull.scheduled_merge.is_some() {
            let message = format!(
                "pull request is already scheduled to auto merge when checks succeed [pull_id: {number}]"
            );
            return (
                409,
                ResponseTemplate::new(409).set_body_json(json!({"message": message, "url": ""})),
            );
        }
        let style = style.to_string();
        if let Some(p) = self.pulls.iter_mut().find(|p| p.number == number) {
            p.scheduled_merge = Some(style);
        }
        (201, ResponseTemplate::new(201))
    }

    fn pull_answer(&self, status: u16, number: u64) -> Answer {
        match self.find(number) {
            Some(pull) => (
                status,
                ResponseTemplate::new(status).set_body_json(self.pull_json(pull)),
            ),
            None => self.not_found(),
        }
    }

    fn issue_answer(&self, status: u16, number: u64) -> Answer {
        match self.find(number) {
            Some(pull) => (
                status,
                ResponseTemplate::new(status).set_body_json(self.issue_json(pull)),
            ),
            None => self.not_found(),
        }
    }

    fn html_url(&self, number: u64) -> String {
        format!("{}/{}/pulls/{number}", self.server_url, self.full_name())
    }

    fn repo_json(&self, full_name: &str) -> Value {
        let (owner, name) = full_name.split_once('/').unwrap_or((full_name, ""));
        let ours = full_name.eq_ignore_ascii_case(&self.full_name());
        json!({
            "id": if ours { 1 } else { 2 },
            "owner": user_json(owner),
            "name": name,
            "full_name": full_name,
            "fork": !ours,
            "private": false,
            "html_url": format!("{}/{full_name}", self.server_url),
            "clone_url": format!("{}/{full_name}.git", self.server_url),
            "default_branch": "main"
        })
    }

    fn label_json(&self, label: &FakeLabel) -> Value {
        json!({
            "id": label.id,
            "name": label.name,
            "exclusive": false,
            "is_archived": false,
            "color": label.color,
            "description": "",
            "url": format!(
                "{}{API_PREFIX}/repos/{}/labels/{}",
                self.server_url,
                self.full_name(),
                label.id
            )
        })
    }

    /// A pull request in Gitea's shape (`GET /repos/{o}/{r}/pulls/{n}`).
    fn pull_json(&self, pull: &FakePull) -> Value {
        let full = self.full_name();
        let n = pull.number;
        let html = self.html_url(n);
        let users = |logins: &[String]| -> Value {
            if logins.is_empty() {
                Value::Null
            } else {
                Value::Array(logins.iter().map(|l| user_json(l)).collect())
            }
        };
        let head_repo = match &pull.head_repo {
            Some(repo) => self.repo_json(repo),
            None => Value::Null,
        };
        let mut value = json!({
            "id": 1000 + n,
            "url": html,
            "number": n,
            "user": user_json(&pull.user),
            "title": pull.title,
            "body": pull.body,
            "labels": pull.labels.iter().map(|l| self.label_json(l)).collect::<Vec<_>>(),
            "milestone": null,
            "assignee": pull.assignees.first().map_or(Value::Null, |a| user_json(a)),
            "assignees": users(&pull.assignees),
            "requested_reviewers": users(&pull.reviewers),
            "requested_reviewers_teams": pull.team_reviewers.iter()
                .map(|t| json!({"name": t})).collect::<Vec<_>>(),
            "state": pull.state,
            "is_locked": false,
            "comments": pull.comments.len(),
            "html_url": html,
            "diff_url": format!("{html}.diff"),
            "patch_url": format!("{html}.patch"),
            "mergeable": pull.state == "open",
            "merged": pull.merged,
            "merged_at": pull.merged_at.map(timestamp),
            "merge_commit_sha": if pull.merged { json!(format!("{n:040x}")) } else { Value::Null },
            "merged_by": if pull.merged { user_json("a-human") } else { Value::Null },
            "allow_maintainer_edit": false,
            "base": {
                "label": pull.base,
                "ref": pull.base,
                "sha": format!("{:040x}", 0xba5e_u64),
                "repo_id": 1,
                "repo": self.repo_json(&full)
            },
            "head": {
                "label": pull.branch,
                "ref": pull.branch,
                "sha": format!("{:040x}", 0xabc0_0000_u64 + n),
                "repo_id": if pull.head_repo.is_some() { 1 } else { 0 },
                "repo": head_repo
            },
            "merge_base": format!("{:040x}", 0xba5e_u64),
            "due_date": null,
            "created_at": timestamp(pull.created_at),
            "updated_at": timestamp(pull.updated_at),
            "closed_at": pull.closed_at.map(timestamp),
            "pin_order": 0
        });
        if self.draft_field {
            value["draft"] = json!(pull.is_draft());
        }
        value
    }

    /// A pull request as an issue (`GET /repos/{o}/{r}/issues/{n}`).
    fn issue_json(&self, pull: &FakePull) -> Value {
        let n = pull.number;
        let mut meta = json!({
            "merged": pull.merged,
            "merged_at": pull.merged_at.map(timestamp),
            "html_url": self.html_url(n)
        });
        if self.draft_field {
            meta["draft"] = json!(pull.is_draft());
        }
        json!({
            "id": 1000 + n,
            "url": format!("{}{API_PREFIX}/repos/{}/issues/{n}", self.server_url, self.full_name()),
            "html_url": self.html_url(n),
            "number": n,
            "user": user_json(&pull.user),
            "title": pull.title,
            "body": pull.body,
            "ref": "",
            "labels": pull.labels.iter().map(|l| self.label_json(l)).collect::<Vec<_>>(),
            "milestone": null,
            "assignee": pull.assignees.first().map_or(Value::Null, |a| user_json(a)),
            "assignees": if pull.assignees.is_empty() {
                Value::Null
            } else {
                Value::Array(pull.assignees.iter().map(|a| user_json(a)).collect())
            },
            "state": pull.state,
            "is_locked": false,
            "comments": pull.comments.len(),
            "created_at": timestamp(pull.created_at),
            "updated_at": timestamp(pull.updated_at),
            "closed_at": pull.closed_at.map(timestamp),
            "due_date": null,
            "pull_request": meta,
            "repository": {
                "id": 1,
                "name": self.repo,
                "owner": self.owner,
                "full_name": self.full_name()
            }
        })
    }

    fn error(&self, status: u16, message: &str) -> Answer {
        (
            status,
            ResponseTemplate::new(status).set_body_json(json!({
                "message": message,
                "url": format!("{}{API_PREFIX}/swagger", self.server_url)
            })),
        )
    }

    fn not_found(&self) -> Answer {
        (
            404,
            ResponseTemplate::new(404).set_body_json(json!({
                "errors": [],
                "message": "The target couldn't be found.",
                "url": format!("{}{API_PREFIX}/swagger", self.server_url)
            })),
        )
    }

    fn fault_response(&self, fault: &Fault) -> Answer {
        let message = fault.message.clone().unwrap_or_else(|| {
            match fault.status {
                401 => "token is required",
                403 => "token does not have at least one of required scope(s): [write:issue]",
                404 => "The target couldn't be found.",
                429 => "Too Many Requests",
                502 => "Bad Gateway",
                503 => "Service Unavailable",
                _ => "Internal Server Error",
            }
            .to_string()
        });
        let (status, mut template) = self.error(fault.status, &message);
        if let Some(retry_after) = &fault.retry_after {
            template = template.insert_header("retry-after", retry_after.as_str());
        }
        (status, template)
    }
}

/// A user in Gitea's shape.
fn user_json(login: &str) -> Value {
    json!({
        "id": login.bytes().map(u64::from).sum::<u64>(),
        "login": login,
        "login_name": "",
        "full_name": "",
        "email": format!("{login}@noreply.example.com"),
        "avatar_url": format!("https://gitea.example.com/avatars/{login}"),
        "html_url": format!("https://gitea.example.com/{login}"),
        "is_admin": false,
        "restricted": false,
        "active": true
    })
}
