//! An in-memory GitLab (REST API v4) for the forge tests: a wiremock server whose one
//! [`Respond`] keeps merge requests, their notes and users in memory and answers in GitLab's
//! shapes. It needs only wiremock, serde_json, jiff and std; tests reach it as
//! `imagebump_forge::fake::gitlab` (the `fake` feature).
//!
//! Routes, below `/api/v4` (see [`FakeGitLab::api_url`]):
//!
//! | route | answer |
//! |---|---|
//! | `GET /projects/:id` | the project |
//! | `GET /projects/:id/merge_requests` | `state` (opened, closed, merged, locked, all; default all), `source_branch`, `target_branch`, `order_by` (created_at, updated_at), `sort` (asc, desc; default desc), `per_page` (1–100, default 20), `page`; the headers `x-page`, `x-per-page`, `x-total`, `x-total-pages`, `x-next-page`, `x-prev-page` (empty at the ends) and `Link` |
//! | `GET /projects/:id/merge_requests/:iid` | one merge request |
//! | `POST /projects/:id/merge_requests` | `source_branch`, `target_branch`, `title` (a draft marker makes a draft), `description`, `remove_source_branch`, `labels`, `assignee_ids`, `reviewer_ids`; 201; 400 when one of the first three is missing; 409 when an open one has the same source and target branches |
//! | `PUT /projects/:id/merge_requests/:iid` | `title`, `description`, `target_branch`, `state_event` (close, reopen), `labels`, `add_labels`, `remove_labels` (comma-separated or lists), `assignee_ids`, `reviewer_ids` (unknown ids dropped); 400 when none is given |
//! | `PUT /projects/:id/merge_requests/:iid/merge` | `auto_merge` or `merge_when_pipeline_succeeds`: sets auto-merge (the fake has no pipelines, so it never merges); 405 when the merge request is not open, is a draft, or [`FakeGitLab::set_allow_auto_merge`] is off |
//! | `GET`, `POST /projects/:id/merge_requests/:iid/notes` | `body` |
//! | `GET /users` | `username` (exact, any case): a list of zero or one user |
//!
//! `:id` is [`FakeGitLab::PROJECT_ID`] or the URL-encoded [`FakeGitLab::PROJECT_PATH`] (any
//! case); another project is 404 `{"message":"404 Project Not Found"}`.
//!
//! Every request needs [`FakeGitLab::TOKEN`] (or one given to [`FakeGitLab::add_token`]) as
//! `PRIVATE-TOKEN` or `Authorization: Bearer`, or [`FakeGitLab::JOB_TOKEN`] as `JOB-TOKEN`,
//! and answers 401 `{"message":"401 Unauthorized"}` otherwise. Like GitLab, the job token is
//! taken for reads only: writes with it are 401 too.
//!
//! Every request is recorded as a [`Call`] (method, path as received, query, JSON body,
//! credential, status answered), faulted ones included. [`FakeGitLab::fail_next`] makes the
//! next request answer an error instead. Timestamps come from a clock that ticks one second
//! per change, so "most recently updated" is deterministic.

use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Value};
use wiremock::{MockServer, Request, ResponseTemplate};

use super::common::{
    add_unique, answer_all, header, lock, page_number, page_url, per_page, query_get as get,
    timestamp_millis, writes, Clock, Faults, Received, Serve,
};

mod issues;

/// Where the API lives on the server.
const API_PREFIX: &str = "/api/v4";
/// The address merge requests' `web_url` start with.
const WEB_BASE: &str = "https://gitlab.example.com";

/// The credential a request carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    None,
    PrivateToken(String),
    JobToken(String),
    Bearer(String),
    /// An `Authorization` header that is not `Bearer`.
    Invalid(String),
}

/// One request as the fake received it (the path as received, still encoded:
/// `/api/v4/projects/acme%2Fplatform%2Fgitops/…`).
pub type Call = super::common::Call<Credential>;

/// What [`FakeGitLab::fail_next_with`] answers instead.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// This status with a GitLab-style body (`{"message":"500 Internal Server Error"}`); 429
    /// comes without `Retry-After`.
    Status(u16),
    /// 429 with `Retry-After` and GitLab's `RateLimit-*` headers, body `Retry later`.
    TooManyRequests { retry_after: u64 },
}

/// A merge request in the fake's state.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeMr {
    pub iid: u64,
    pub id: u64,
    pub source_project_id: u64,
    pub target_project_id: u64,
    pub source_branch: String,
    pub target_branch: String,
    /// As GitLab stores it, draft marker included.
    pub title: String,
    pub description: Option<String>,
    /// `opened`, `closed` or `merged`.
    pub state: String,
    pub labels: Vec<String>,
    pub assignee_ids: Vec<u64>,
    pub reviewer_ids: Vec<u64>,
    pub notes: Vec<String>,
    pub remove_source_branch: bool,
    /// Auto-merge is set (`merge_when_pipeline_succeeds`).
    pub auto_merge: bool,
    pub author_id: u64,
    pub created_at: i64,
    pub updated_at: i64,
}

impl FakeMr {
    /// Whether GitLab reads its title as a draft's.
    pub fn draft(&self) -> bool {
        is_draft_title(&self.title)
    }
}

/// A user in the fake's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeUser {
    pub id: u64,
    pub username: String,
}

struct State {
    /// Visibility of repositories on this forge, by `owner/name` lower-cased.
    visibility: std::collections::BTreeMap<String, String>,
    /// Releases of repositories on this forge, by `owner/name` lower-cased, newest first.
    releases: std::collections::BTreeMap<String, Vec<Value>>,
    base_url: String,
    tokens: Vec<String>,
    job_tokens: Vec<String>,
    users: Vec<FakeUser>,
    /// Whether `PUT …/merge` may set auto-merge (off: 405, as when the merge request
    /// cannot be merged by this user or has no pipeline yet).
    auto_merge_allowed: bool,
    mrs: Vec<FakeMr>,
    next_iid: u64,
    clock: Clock,
    calls: Vec<Call>,
    faults: Faults<Fault>,
    /// Faults answered after acting: the work is done, the answer is lost.
    lost: Faults<Fault>,
    /// Answer like GitLab before 13.2: `work_in_progress`, no `draft`.
    legacy_draft_field: bool,
    /// Paginate with `Link` only, without the `x-*` headers.
    link_only: bool,
    /// Issues and access levels.
    issues: super::issues::Issues,
}

/// The fake server. Dropping it stops the server.
pub struct FakeGitLab {
    server: MockServer,
    state: Arc<Mutex<State>>,
}

impl FakeGitLab {
    /// The token the fake accepts from the start (`PRIVATE-TOKEN` or `Bearer`).
    pub const TOKEN: &'static str = "glpat-test-token-not-a-secret";
    /// The job token the fake accepts for reads (`JOB-TOKEN`).
    pub const JOB_TOKEN: &'static str = "glcbt-test-job-token-not-a-secret";
    pub const PROJECT_ID: u64 = 42;
    pub const PROJECT_PATH: &'static str = "acme/platform/gitops";
    /// A fork of the project: merge requests from it have this `source_project_id`.
    pub const FORK_ID: u64 = 77;
    /// The user the token belongs to: the author of what imagebump creates.
    pub const BOT: &'static str = "imagebump-bot";
    /// Users there from the start, after the bot (ids 1 to 4).
    pub const USERS: [&'static str; 3] = ["alice", "bob", "carol"];

    pub async fn start() -> FakeGitLab {
        let server = MockServer::start().await;
        let mut users = Vec::new();
        for (index, username) in std::iter::once(Self::BOT).chain(Self::USERS).enumerate() {
            users.push(FakeUser {
                id: index as u64 + 1,
                username: username.to_string(),
            });
        }
        let state = Arc::new(Mutex::new(State {
            releases: Default::default(),
            visibility: Default::default(),
            base_url: format!("{}{API_PREFIX}", server.uri()),
            tokens: vec![Self::TOKEN.to_string()],
            job_tokens: vec![Self::JOB_TOKEN.to_string()],
            users,
            mrs: Vec::new(),
            auto_merge_allowed: true,
            next_iid: 1,
            clock: Clock::new(),
            calls: Vec::new(),
            faults: Faults::new(),
            lost: Faults::new(),
            legacy_draft_field: false,
            link_only: false,
            issues: Default::default(),
        }));
        answer_all(&server, &state).await;
        FakeGitLab { server, state }
    }

    /// What imagebump takes as its API URL: `http://127.0.0.1:PORT/api/v4`.
    pub fn api_url(&self) -> String {
        format!("{}{API_PREFIX}", self.server.uri())
    }

    /// `/api/v4/projects/acme%2Fplatform%2Fgitops` plus `rest`: a path as [`Call::path`]
    /// holds it when the project is addressed by path.
    pub fn project_path(&self, rest: &str) -> String {
        format!(
            "{API_PREFIX}/projects/{}{rest}",
            Self::PROJECT_PATH.replace('/', "%2F")
        )
    }

    /// Accept another token (`PRIVATE-TOKEN` or `Bearer`).
    pub fn add_token(&self, token: &str) {
        self.lock().tokens.push(token.to_string());
    }

    /// Adds a user; returns its id.
    pub fn add_user(&self, username: &str) -> u64 {
        let mut state = self.lock();
        let id = state.users.len() as u64 + 1;
        state.users.push(FakeUser {
            id,
            username: username.to_string(),
        });
        id
    }

    /// The id of a user the fake has.
    pub fn user_id(&self, username: &str) -> u64 {
        self.lock()
            .users
            .iter()
            .find(|u| u.username.eq_ignore_ascii_case(username))
            .map(|u| u.id)
            .unwrap_or_else(|| panic!("no user {username} in the fake"))
    }

    /// Answer like GitLab before 13.2: `work_in_progress` and no `draft` field.
    pub fn use_legacy_draft_field(&self) {
        self.lock().legacy_draft_field = true;
    }

    /// Paginate with the `Link` header only (no `x-next-page` and friends).
    pub fn use_link_pagination_only(&self) {
        self.lock().link_only = true;
    }

    /// A release of project `path` (any project on this host), newer than those added
    /// before.
    pub fn add_release(&self, path: &str, tag: &str, name: &str, description: &str) {
        let release = json!({"tag_name": tag, "name": name, "description": description});
        let mut state = self.lock();
        let list = state.releases.entry(path.to_ascii_lowercase()).or_default();
        list.insert(0, release);
    }

    /// The visibility of repository `repo` on this host (`public`, `private` or
    /// `internal`); a repository with releases and none set is `private`.
    pub fn set_visibility(&self, repo: &str, visibility: &str) {
        self.lock()
            .visibility
            .insert(repo.to_ascii_lowercase(), visibility.to_string());
    }

    /// Adds an open merge request from `branch` of the project (author: a human, `alice`);
    /// returns its iid.
    pub fn add_mr(&self, branch: &str, target: &str, title: &str, description: &str) -> u64 {
        self.lock().insert_mr(
            Self::PROJECT_ID,
            branch,
            target,
            title,
            Some(description),
            2,
        )
    }

    /// Adds an open merge request from `branch` of the project opened by `author` (a user
    /// the fake has: [`FakeGitLab::BOT`] for one imagebump opened); returns its iid.
    pub fn add_mr_by(
        &self,
        author: &str,
        branch: &str,
        target: &str,
        title: &str,
        body: &str,
    ) -> u64 {
        let id = self.user_id(author);
        self.lock()
            .insert_mr(Self::PROJECT_ID, branch, target, title, Some(body), id)
    }

    /// Adds an open merge request from `branch` of a fork ([`FakeGitLab::FORK_ID`]).
    pub fn add_fork_mr(&self, branch: &str, target: &str, title: &str) -> u64 {
        self.lock()
            .insert_mr(Self::FORK_ID, branch, target, title, Some(""), 3)
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

    /// The merge requests, by iid.
    pub fn pulls(&self) -> Vec<FakeMr> {
        self.lock().mrs.clone()
    }

    pub fn pull(&self, iid: u64) -> FakeMr {
        self.lock().mr_mut(iid).clone()
    }

    /// A human merges merge request `iid`.
    pub fn merge(&self, iid: u64) {
        self.set_state(iid, "merged");
    }

    /// A human closes merge request `iid` without merging.
    pub fn close(&self, iid: u64) {
        self.set_state(iid, "closed");
    }

    /// Whether setting auto-merge is accepted (off: 405).
    pub fn set_allow_auto_merge(&self, allowed: bool) {
        self.lock().auto_merge_allowed = allowed;
    }

    /// A human cancels auto-merge on merge request `iid`.
    pub fn cancel_auto_merge(&self, iid: u64) {
        self.by_hand(iid, |mr, _| mr.auto_merge = false);
    }

    /// A human reopens merge request `iid`.
    pub fn reopen(&self, iid: u64) {
        self.set_state(iid, "opened");
    }

    /// A human edits the title of merge request `iid` (adding or removing a draft marker
    /// marks it draft or ready).
    pub fn set_title(&self, iid: u64, title: &str) {
        self.by_hand(iid, |mr, _| {
            mr.title = title.to_string();
        });
    }

    /// A human edits the description of merge request `iid` (`None`: GitLab's `null`).
    pub fn set_description(&self, iid: u64, description: Option<&str>) {
        self.by_hand(iid, |mr, _| {
            mr.description = description.map(str::to_string);
        });
    }

    /// Someone assigns users (by id) or asks them to review, directly in GitLab.
    pub fn set_people(&self, iid: u64, assignee_ids: &[u64], reviewer_ids: &[u64]) {
        let mut state = self.lock();
        let mr = state.mr_mut(iid);
        mr.assignee_ids = assignee_ids.to_vec();
        mr.reviewer_ids = reviewer_ids.to_vec();
    }

    /// The next request, whatever it is, answers `status` with a GitLab-style body.
    pub fn fail_next(&self, status: u16) {
        self.fail_next_with(None, 1, Fault::Status(status));
    }

    /// The next `times` requests with `method` (any method for `None`) answer `fault`.
    pub fn fail_next_with(&self, method: Option<&str>, times: usize, fault: Fault) {
        self.lock().faults.push(method, None, times, fault);
    }

    /// The next request with `method` acts, and then answers `status` as if it had failed
    /// (a proxy's 502 after GitLab did the work).
    pub fn lose_next_answer(&self, method: &str, status: u16) {
        self.lock()
            .lost
            .push(Some(method), None, 1, Fault::Status(status));
    }

    fn set_state(&self, iid: u64, new: &str) {
        self.by_hand(iid, |mr, _| {
            mr.state = new.to_string();
        });
    }

    /// A change made by hand in the forge's UI: it ticks the clock and counts as an update.
    fn by_hand(&self, iid: u64, change: impl FnOnce(&mut FakeMr, i64)) {
        let mut state = self.lock();
        let now = state.clock.tick();
        let mr = state.mr_mut(iid);
        change(mr, now);
        mr.updated_at = now;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }
}

impl Serve for State {
    fn serve(&mut self, request: &Request) -> ResponseTemplate {
        let received = Received::with_json_bodies(request);
        let credential = credential(request);
        let (status, template) = self.answer(
            &received.method,
            &received.path,
            &received.query,
            received.body.as_ref(),
            &credential,
        );
        let lost = self.lost.take(&received.method, &received.path);
        let (status, template) = lost.map_or((status, template), |f| fault_response(&f));
        self.calls.push(received.into_call(credential, status));
        template
    }
}

fn credential(request: &Request) -> Credential {
    if let Some(token) = header(request, "private-token") {
        return Credential::PrivateToken(token);
    }
    if let Some(token) = header(request, "job-token") {
        return Credential::JobToken(token);
    }
    match header(request, "authorization") {
        Some(value) => match value.split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => {
                Credential::Bearer(token.trim().to_string())
            }
            _ => Credential::Invalid(value),
        },
        None => Credential::None,
    }
}

type Answer = (u16, ResponseTemplate);

impl State {
    fn mr_mut(&mut self, iid: u64) -> &mut FakeMr {
        self.mrs
            .iter_mut()
            .find(|mr| mr.iid == iid)
            .unwrap_or_else(|| panic!("no merge request !{iid} in the fake"))
    }

    fn insert_mr(
        &mut self,
        source_project_id: u64,
        branch: &str,
        target: &str,
        title: &str,
        description: Option<&str>,
        author_id: u64,
    ) -> u64 {
        let now = self.clock.tick();
        let iid = self.next_iid;
        self.next_iid += 1;
        self.mrs.push(FakeMr {
            iid,
            id: 10_000 + iid,
            source_project_id,
            target_project_id: FakeGitLab::PROJECT_ID,
            source_branch: branch.to_string(),
            target_branch: target.to_string(),
            title: title.to_string(),
            description: description.map(str::to_string),
            state: "opened".to_string(),
            labels: Vec::new(),
            assignee_ids: Vec::new(),
            reviewer_ids: Vec::new(),
            notes: Vec::new(),
            remove_source_branch: false,
            auto_merge: false,
            author_id,
            created_at: now,
            updated_at: now,
        });
        iid
    }

    fn authorized(&self, method: &str, credential: &Credential) -> bool {
        match credential {
            Credential::PrivateToken(token) | Credential::Bearer(token) => {
                self.tokens.contains(token)
            }
            Credential::JobToken(token) => method == "GET" && self.job_tokens.contains(token),
            Credential::None | Credential::Invalid(_) => false,
        }
    }

    fn answer(
        &mut self,
        method: &str,
        path: &str,
        query: &[(String, String)],
        body: Option<&Value>,
        credential: &Credential,
    ) -> Answer {
        if let Some(fault) = self.faults.take(method, path) {
            return fault_response(&fault);
        }
        let Some(route) = path.strip_prefix(API_PREFIX) else {
            return message(404, "404 Not Found");
        };
        if !self.authorized(method, credential) {
            return message(401, "401 Unauthorized");
        }
        let segments: Vec<String> = route
            .trim_matches('/')
            .split('/')
            .map(percent_decode)
            .collect();
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        let empty = json!({});
        let body = body.unwrap_or(&empty);
        let iid = |s: &str| s.parse::<u64>().ok();
        match (method, segments.as_slice()) {
            ("GET", ["users"]) => self.users_list(query),
            // A job token is no user: GitLab refuses it here.
            ("GET", ["user"]) => match credential {
                Credential::JobToken(_) => message(401, "401 Unauthorized"),
                _ => ok(200, self.user(1)),
            },
            ("GET", ["projects", project, rest @ ..]) if !is_project(project) => {
                self.other_project(project, rest, query)
            }
            (_, ["projects", id, rest @ ..]) => {
                if !is_project(id) {
                    return message(404, "404 Project Not Found");
                }
                if let Some(answer) = self.issue_route(method, rest, query, body) {
                    return answer;
                }
                match (method, rest) {
                    ("GET", []) => ok(200, self.project_json()),
                    ("GET", ["merge_requests"]) => self.list(route, query),
                    ("POST", ["merge_requests"]) => self.create(body),
                    ("GET", ["merge_requests", n]) => match iid(n).and_then(|n| self.find(n)) {
                        Some(mr) => ok(200, self.mr_json(&mr)),
                        None => message(404, "404 Not found"),
                    },
                    ("PUT", ["merge_requests", n]) => match iid(n) {
                        Some(n) => self.update(n, body),
                        None => message(404, "404 Not found"),
                    },
                    ("PUT", ["merge_requests", n, "merge"]) => match iid(n) {
                        Some(n) => self.merge_when_pipeline_succeeds(n, body),
                        None => message(404, "404 Not found"),
                    },
                    ("GET", ["merge_requests", n, "notes"]) => {
                        match iid(n).and_then(|n| self.find(n)) {
                            Some(mr) => ok(200, self.notes_json(&mr)),
                            None => message(404, "404 Not found"),
                        }
                    }
                    ("POST", ["merge_requests", n, "notes"]) => match iid(n) {
                        Some(n) => self.add_note(n, body),
                        None => message(404, "404 Not found"),
                    },
                    _ => message(404, "404 Not Found"),
                }
            }
            _ => message(404, "404 Not Found"),
        }
    }

    fn find(&self, iid: u64) -> Option<FakeMr> {
        self.mrs.iter().find(|mr| mr.iid == iid).cloned()
    }

    fn users_list(&self, query: &[(String, String)]) -> Answer {
        let wanted = get(query, "username");
        let users: Vec<Value> = self
            .users
            .iter()
            .filter(|u| wanted.is_none_or(|w| u.username.eq_ignore_ascii_case(w)))
            .map(user_json)
            .collect();
        ok(200, Value::Array(users))
    }

    fn list(&self, route: &str, query: &[(String, String)]) -> Answer {
        let state = get(query, "state").unwrap_or("all");
        let order_by = get(query, "order_by").unwrap_or("created_at");
        let ascending = get(query, "sort") == Some("asc");
        let per_page = per_page(query, 20);
        let page = page_number(query);
        let mut mrs: Vec<&FakeMr> = self
            .mrs
            .iter()
            .filter(|mr| state == "all" || mr.state == state)
            .filter(|mr| get(query, "source_branch").is_none_or(|b| mr.source_branch == b))
            .filter(|mr| get(query, "target_branch").is_none_or(|b| mr.target_branch == b))
            .collect();
        mrs.sort_by_key(|mr| match order_by {
            "updated_at" => (mr.updated_at, mr.id),
            _ => (mr.created_at, mr.id),
        });
        if !ascending {
            mrs.reverse();
        }
        let total = mrs.len();
        let pages = total.div_ceil(per_page).max(1);
        let items: Vec<Value> = mrs
            .iter()
            .skip((page - 1) * per_page)
            .take(per_page)
            .map(|mr| self.mr_json(mr))
            .collect();
        let mut template = ResponseTemplate::new(200).set_body_json(Value::Array(items));
        if !self.link_only {
            let next = if page < pages {
                (page + 1).to_string()
            } else {
                String::new()
            };
            let prev = if page > 1 {
                (page - 1).to_string()
            } else {
                String::new()
            };
            template = template
                .insert_header("x-page", page.to_string().as_str())
                .insert_header("x-per-page", per_page.to_string().as_str())
                .insert_header("x-total", total.to_string().as_str())
                .insert_header("x-total-pages", pages.to_string().as_str())
                .insert_header("x-next-page", next.as_str())
                .insert_header("x-prev-page", prev.as_str());
        }
        let link = self.link(route, query, page, pages);
        if !link.is_empty() {
            template = template.insert_header("link", link.as_str());
        }
        (200, template)
    }

    /// GitLab's `Link`: prev and next where they exist, first and last always.
    fn link(&self, route: &str, query: &[(String, String)], page: usize, pages: usize) -> String {
        let url = |p: usize| page_url(&self.base_url, route, query, p);
        let mut parts = Vec::new();
        if page > 1 {
            parts.push(format!("{}; rel=\"prev\"", url(page - 1)));
        }
        if page < pages {
            parts.push(format!("{}; rel=\"next\"", url(page + 1)));
        }
        parts.push(format!("{}; rel=\"first\"", url(1)));
        parts.push(format!("{}; rel=\"last\"", url(pages)));
        parts.join(", ")
    }

    fn create(&mut self, body: &Value) -> Answer {
        let text = |key: &str| body.get(key).and_then(Value::as_str);
        for key in ["source_branch", "target_branch", "title"] {
            if text(key).is_none_or(str::is_empty) {
                return (
                    400,
                    ResponseTemplate::new(400)
                        .set_body_json(json!({ "error": format!("{key} is missing") })),
                );
            }
        }
        let (Some(source), Some(target), Some(title)) =
            (text("source_branch"), text("target_branch"), text("title"))
        else {
            return message(400, "400 Bad request");
        };
        if source == target {
            return messages(
                422,
                &["You can't use same project/branch for source and target"],
            );
        }
        let existing = self.mrs.iter().find(|mr| {
            mr.state == "opened"
                && mr.source_project_id == FakeGitLab::PROJECT_ID
                && mr.source_branch == source
                && mr.target_branch == target
        });
        if let Some(existing) = existing {
            let text = format!(
                "Another open merge request already exists for this source branch: !{}",
                existing.iid
            );
            return messages(409, &[text.as_str()]);
        }
        let iid = self.insert_mr(
            FakeGitLab::PROJECT_ID,
            source,
            target,
            title,
            text("description"),
            1,
        );
        let labels = list_param(body.get("labels"));
        let assignees = self.known_ids(body.get("assignee_ids"));
        let reviewers = self.known_ids(body.get("reviewer_ids"));
        let remove = body
            .get("remove_source_branch")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mr = self.mr_mut(iid);
        add_unique(&mut mr.labels, labels);
        mr.assignee_ids = assignees;
        mr.reviewer_ids = reviewers;
        mr.remove_source_branch = remove;
        let mr = mr.clone();
        ok(201, self.mr_json(&mr))
    }

    fn update(&mut self, iid: u64, body: &Value) -> Answer {
        const KEYS: [&str; 9] = [
            "title",
            "description",
            "target_branch",
            "state_event",
            "labels",
            "add_labels",
            "remove_labels",
            "assignee_ids",
            "reviewer_ids",
        ];
        if self.find(iid).is_none() {
            return message(404, "404 Not found");
        }
        if !KEYS.iter().any(|key| body.get(key).is_some()) {
            return (
                400,
                ResponseTemplate::new(400).set_body_json(json!({
                    "error": format!("{} are missing, at least one parameter must be provided", KEYS.join(", "))
                })),
            );
        }
        let assignees = body
            .get("assignee_ids")
            .map(|ids| self.known_ids(Some(ids)));
        let reviewers = body
            .get("reviewer_ids")
            .map(|ids| self.known_ids(Some(ids)));
        let before = self.find(iid);
        let mr = self.mr_mut(iid);
        if let Some(title) = body.get("title").and_then(Value::as_str) {
            mr.title = title.to_string();
        }
        if let Some(description) = body.get("description") {
            mr.description = description.as_str().map(str::to_string);
        }
        if let Some(target) = body.get("target_branch").and_then(Value::as_str) {
            mr.target_branch = target.to_string();
        }
        match body.get("state_event").and_then(Value::as_str) {
            Some("close") if mr.state == "opened" => mr.state = "closed".to_string(),
            Some("reopen") if mr.state == "closed" => mr.state = "opened".to_string(),
            _ => {}
        }
        if let Some(labels) = body.get("labels") {
            mr.labels = list_param(Some(labels));
        }
        add_unique(&mut mr.labels, list_param(body.get("add_labels")));
        let removed = list_param(body.get("remove_labels"));
        mr.labels.retain(|l| !removed.contains(l));
        if let Some(ids) = assignees {
            mr.assignee_ids = ids;
        }
        if let Some(ids) = reviewers {
            mr.reviewer_ids = ids;
        }
        if before.as_ref() != Some(&*mr) {
            let now = self.clock.tick();
            self.mr_mut(iid).updated_at = now;
        }
        let mr = self.mr_mut(iid).clone();
        ok(200, self.mr_json(&mr))
    }

    fn add_note(&mut self, iid: u64, body: &Value) -> Answer {
        if self.find(iid).is_none() {
            return message(404, "404 Not found");
        }
        let Some(text) = body
            .get("body")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        else {
            return (
                400,
                ResponseTemplate::new(400).set_body_json(json!({ "error": "body is missing" })),
            );
        };
        let now = self.clock.tick();
        let mr = self.mr_mut(iid);
        mr.notes.push(text.to_string());
        mr.updated_at = now;
        let index = mr.notes.len() - 1;
        let mr = mr.clone();
        ok(201, self.note_json(&mr, index))
    }

    /// The ids in `value` (a list, or a comma-separated string) that belong to users.
    fn known_ids(&self, value: Option<&Value>) -> Vec<u64> {
        let ids: Vec<u64> = match value {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_u64).collect(),
            Some(Value::Number(n)) => n.as_u64().into_iter().collect(),
            Some(Value::String(text)) => text
                .split(',')
                .filter_map(|id| id.trim().parse().ok())
                .collect(),
            _ => Vec::new(),
        };
        let mut known = Vec::new();
        for id in ids {
            if self.users.iter().any(|u| u.id == id) && !known.contains(&id) {
                known.push(id);
            }
        }
        known
    }

    fn user(&self, id: u64) -> Value {
        self.users
            .iter()
            .find(|u| u.id == id)
            .map_or(Value::Null, user_json)
    }

    fn project_json(&self) -> Value {
        json!({
            "id": FakeGitLab::PROJECT_ID,
            "name": "gitops",
            "path": "gitops",
            "path_with_namespace": FakeGitLab::PROJECT_PATH,
            "default_branch": "main",
            "web_url": format!("{WEB_BASE}/{}", FakeGitLab::PROJECT_PATH),
            "http_url_to_repo": format!("{WEB_BASE}/{}.git", FakeGitLab::PROJECT_PATH),
            "ssh_url_to_repo": format!("git@gitlab.example.com:{}.git", FakeGitLab::PROJECT_PATH),
            "visibility": "private"
        })
    }

    /// `GET /projects/:id[/releases]` of a project on this host other than the fake's: its
    /// visibility, or its releases; 404 when the fake holds no such project.
    fn other_project(&self, project: &str, rest: &[&str], query: &[(String, String)]) -> Answer {
        let missing = || message(404, "404 Project Not Found");
        match rest {
            [] => match super::common::visibility_of(&self.visibility, &self.releases, project) {
                Some(v) => ok(
                    200,
                    json!({
                        "id": FakeGitLab::PROJECT_ID + 1000,
                        "path_with_namespace": project,
                        "visibility": v,
                        "releases_access_level": "enabled",
                    }),
                ),
                None => missing(),
            },
            ["releases"] => {
                super::common::releases_page(&self.releases, project, query).unwrap_or_else(missing)
            }
            _ => missing(),
        }
    }

    /// A merge request in the shape of `GET /projects/:id/merge_requests/:iid`.
    /// `PUT …/merge` with `auto_merge` or `merge_when_pipeline_succeeds`: set to merge when
    /// the pipeline succeeds (the fake has no pipelines, so it never merges by itself);
    /// 405 for a merge request that is not open, as GitLab answers. A plain merge (neither
    /// flag) is not part of the fake.
    fn merge_when_pipeline_succeeds(&mut self, iid: u64, body: &Value) -> (u16, ResponseTemplate) {
        let flag = |k: &str| body.get(k).and_then(Value::as_bool).unwrap_or(false);
        let Some(mr) = self.find(iid) else {
            return message(404, "404 Not found");
        };
        if mr.state != "opened" || mr.draft() {
            return message(405, "405 Method Not Allowed");
        }
        if !self.auto_merge_allowed
            || (!flag("auto_merge") && !flag("merge_when_pipeline_succeeds"))
        {
            return message(405, "405 Method Not Allowed");
        }
        let now = self.clock.tick();
        let Some(mr) = self.mrs.iter_mut().find(|m| m.iid == iid) else {
            return message(404, "404 Not found");
        };
        mr.auto_merge = true;
        mr.updated_at = now;
        let mr = mr.clone();
        ok(200, self.mr_json(&mr))
    }

    fn mr_json(&self, mr: &FakeMr) -> Value {
        let draft = mr.draft();
        let web_url = format!(
            "{WEB_BASE}/{}/-/merge_requests/{}",
            FakeGitLab::PROJECT_PATH,
            mr.iid
        );
        let assignees: Vec<Value> = mr.assignee_ids.iter().map(|id| self.user(*id)).collect();
        let reviewers: Vec<Value> = mr.reviewer_ids.iter().map(|id| self.user(*id)).collect();
        let reference = format!("!{}", mr.iid);
        let mut value = json!({
            "id": mr.id,
            "iid": mr.iid,
            "project_id": FakeGitLab::PROJECT_ID,
            "title": mr.title,
            "description": mr.description,
            "state": mr.state,
            "created_at": timestamp_millis(mr.created_at),
            "updated_at": timestamp_millis(mr.updated_at),
            "target_branch": mr.target_branch,
            "source_branch": mr.source_branch,
            "user_notes_count": mr.notes.len(),
            "upvotes": 0,
            "downvotes": 0,
            "author": self.user(mr.author_id),
            "assignees": assignees,
            "assignee": assignees.first().cloned().unwrap_or(Value::Null),
            "reviewers": reviewers,
            "source_project_id": mr.source_project_id,
            "target_project_id": mr.target_project_id,
            "labels": mr.labels,
            "draft": draft,
            "work_in_progress": draft,
            "milestone": null,
            "merge_when_pipeline_succeeds": mr.auto_merge,
            "merge_status": "can_be_merged",
            "detailed_merge_status": if draft { "draft_status" } else { "mergeable" },
            "sha": format!("{:040x}", 0xabc0_0000_u64 + mr.iid),
            "squash_commit_sha": null,
            "discussion_locked": null,
            "should_remove_source_branch": null,
            "force_remove_source_branch": mr.remove_source_branch,
            "prepared_at": timestamp_millis(mr.created_at),
            "reference": reference,
            "web_url": web_url,
            "squash": false,
            "squash_on_merge": false,
            "has_conflicts": false,
            "blocking_discussions_resolved": true
        });
        let extra = self.mr_outcome_fields(mr, &reference);
        if let Value::Object(fields) = &mut value {
            for (key, field) in extra {
                fields.insert(key.to_string(), field);
            }
        }
        if self.legacy_draft_field {
            if let Value::Object(fields) = &mut value {
                fields.remove("draft");
            }
        }
        value
    }

    /// The fields of how a merge request ended (merged or closed, by whom, when) and its
    /// references and statistics.
    fn mr_outcome_fields(&self, mr: &FakeMr, reference: &str) -> [(&'static str, Value); 9] {
        let (closed, merged) = (mr.state == "closed", mr.state == "merged");
        let human = || self.user(2);
        let at = json!(timestamp_millis(mr.updated_at));
        let merge_commit = if merged {
            json!(format!("{:040x}", mr.iid))
        } else {
            Value::Null
        };
        [
            ("merged_by", if merged { human() } else { Value::Null }),
            ("merge_user", if merged { human() } else { Value::Null }),
            ("merged_at", if merged { at.clone() } else { Value::Null }),
            ("closed_by", if closed { human() } else { Value::Null }),
            ("closed_at", if closed { at } else { Value::Null }),
            ("merge_commit_sha", merge_commit),
            (
                "references",
                json!({
                    "short": reference,
                    "relative": reference,
                    "full": format!("{}{reference}", FakeGitLab::PROJECT_PATH)
                }),
            ),
            (
                "time_stats",
                json!({
                    "time_estimate": 0,
                    "total_time_spent": 0,
                    "human_time_estimate": null,
                    "human_total_time_spent": null
                }),
            ),
            (
                "task_completion_status",
                json!({"count": 0, "completed_count": 0}),
            ),
        ]
    }

    fn notes_json(&self, mr: &FakeMr) -> Value {
        Value::Array(
            (0..mr.notes.len())
                .map(|index| self.note_json(mr, index))
                .collect(),
        )
    }

    fn note_json(&self, mr: &FakeMr, index: usize) -> Value {
        json!({
            "id": 500_000 + mr.iid * 1000 + index as u64,
            "type": null,
            "body": mr.notes.get(index),
            "author": self.user(1),
            "created_at": timestamp_millis(mr.updated_at),
            "updated_at": timestamp_millis(mr.updated_at),
            "system": false,
            "noteable_id": mr.id,
            "noteable_type": "MergeRequest",
            "noteable_iid": mr.iid,
            "project_id": FakeGitLab::PROJECT_ID,
            "resolvable": false,
            "confidential": false,
            "internal": false
        })
    }
}

/// `42`, or the project's path (decoded already), any case.
fn is_project(id: &str) -> bool {
    id == FakeGitLab::PROJECT_ID.to_string() || id.eq_ignore_ascii_case(FakeGitLab::PROJECT_PATH)
}

/// GitLab reads a title starting with `Draft:`, `[Draft]` or `(Draft)` (any case) as a
/// draft's.
fn is_draft_title(title: &str) -> bool {
    let title = title.trim_start().to_ascii_lowercase();
    ["draft:", "[draft]", "(draft)"]
        .iter()
        .any(|marker| title.starts_with(marker))
}

fn percent_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = bytes
            .get(index + 1..index + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[index], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                index += 3;
            }
            (byte, _) => {
                out.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Labels as GitLab takes them: a comma-separated string or a list.
fn list_param(value: Option<&Value>) -> Vec<String> {
    let items: Vec<String> = match value {
        Some(Value::String(text)) => text.split(',').map(str::to_string).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    items
        .into_iter()
        .map(|item| item.trim().to_string())
        .filter(|item| !item.is_empty())
        .collect()
}

fn user_json(user: &FakeUser) -> Value {
    json!({
        "id": user.id,
        "username": user.username,
        "name": user.username,
        "state": "active",
        "locked": false,
        "avatar_url": format!("{WEB_BASE}/uploads/-/system/user/avatar/{}/avatar.png", user.id),
        "web_url": format!("{WEB_BASE}/{}", user.username)
    })
}

fn ok(status: u16, body: Value) -> Answer {
    (status, ResponseTemplate::new(status).set_body_json(body))
}

/// GitLab's `{"message": "..."}`.
fn message(status: u16, text: &str) -> Answer {
    (
        status,
        ResponseTemplate::new(status).set_body_json(json!({ "message": text })),
    )
}

/// GitLab's `{"message": ["..."]}` for a refused model.
fn messages(status: u16, texts: &[&str]) -> Answer {
    (
        status,
        ResponseTemplate::new(status).set_body_json(json!({ "message": texts })),
    )
}

fn fault_response(fault: &Fault) -> Answer {
    match fault {
        Fault::Status(status) => {
            let reason = match status {
                429 => "Too Many Requests",
                500 => "Internal Server Error",
                502 => "Bad Gateway",
                503 => "Service Unavailable",
                401 => "Unauthorized",
                403 => "Forbidden",
                404 => "Not Found",
                _ => "Error",
            };
            message(*status, &format!("{status} {reason}"))
        }
        Fault::TooManyRequests { retry_after } => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or_default();
            (
                429,
                ResponseTemplate::new(429)
                    .insert_header("retry-after", retry_after.to_string().as_str())
                    .insert_header("ratelimit-name", "throttle_authenticated_api")
                    .insert_header("ratelimit-limit", "2000")
                    .insert_header("ratelimit-observed", "2001")
                    .insert_header("ratelimit-remaining", "0")
                    .insert_header("ratelimit-reset", (now + retry_after).to_string().as_str())
                    .set_body_raw("Retry later\n", "text/plain"),
            )
        }
    }
}
