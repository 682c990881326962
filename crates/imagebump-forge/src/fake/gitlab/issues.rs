//! The fake's issue routes, answered as GitLab does:
//!
//! | route | answer |
//! |---|---|
//! | `GET /projects/:id/issues` | `state` (opened, closed, all), `author_username`, `order_by` (created_at, updated_at), `sort`, `per_page`, `page`; `x-next-page` (empty on the last page) |
//! | `POST /projects/:id/issues` | `title`, `description`: 201; 400 without a title |
//! | `PUT /projects/:id/issues/:iid` | `title`, `description`; a changed description adds the system note "changed the description" by the token's user |
//! | `GET /projects/:id/issues/:iid/notes` | `sort` (asc, desc; default desc), `per_page`, `page`: the system notes of description changes |
//! | `GET /projects/:id/members/all/:user_id` | `access_level` as [`FakeGitLab::set_access_level`] set it; 404 for a user who is no member |

use serde_json::{json, Value};
use wiremock::ResponseTemplate;

use super::super::common::{page_number, per_page, query_get as get, timestamp_millis};
use super::super::issues::FakeIssue;
use super::{message, ok, user_json, Answer, FakeGitLab, State, WEB_BASE};

impl FakeGitLab {
    /// Someone opens an issue; its iid.
    pub fn add_issue_by(&self, username: &str, title: &str, description: &str) -> u64 {
        let mut state = self.lock();
        let now = state.clock.tick();
        let iid = state.next_issue_iid();
        state
            .issues
            .insert(iid, username, (title, description), now);
        iid
    }

    /// `username` changes an issue's description in GitLab (a system note says so).
    pub fn edit_issue_as(&self, iid: u64, username: &str, description: &str) {
        let mut state = self.lock();
        let now = state.clock.tick();
        assert!(
            state
                .issues
                .edit(iid, username, (None, Some(description)), now),
            "no issue #{iid} in the fake"
        );
    }

    /// The issues, in the order they were opened.
    pub fn issues(&self) -> Vec<FakeIssue> {
        self.lock().issues.list.clone()
    }

    /// `username`'s access level in the project (10 guest, 20 reporter, 30 developer, 40
    /// maintainer, 50 owner).
    pub fn set_access_level(&self, username: &str, level: u64) {
        let mut state = self.lock();
        state
            .issues
            .permissions
            .insert(username.to_string(), level.to_string());
    }
}

impl State {
    fn next_issue_iid(&self) -> u64 {
        self.issues.list.iter().map(|i| i.number).max().unwrap_or(0) + 1
    }

    /// The routes below `/projects/:id/` that are about issues and members; `None` for the
    /// others.
    pub(super) fn issue_route(
        &mut self,
        method: &str,
        rest: &[&str],
        query: &[(String, String)],
        body: &Value,
    ) -> Option<Answer> {
        let iid = |s: &str| s.parse::<u64>().ok();
        Some(match (method, rest) {
            ("GET", ["issues"]) => self.list_issues(query),
            ("POST", ["issues"]) => self.create_issue(body),
            ("PUT", ["issues", n]) => match iid(n) {
                Some(n) => self.edit_issue(n, body),
                None => message(404, "404 Not found"),
            },
            ("GET", ["issues", n, "notes"]) => match iid(n).and_then(|n| self.issues.find(n)) {
                Some(issue) => self.issue_notes(&issue.clone(), query),
                None => message(404, "404 Not found"),
            },
            ("GET", ["members", "all", id]) => self.member(id),
            _ => return None,
        })
    }

    fn list_issues(&self, query: &[(String, String)]) -> Answer {
        let state = get(query, "state").unwrap_or("all");
        let author = get(query, "author_username");
        let mut issues: Vec<&FakeIssue> = self
            .issues
            .list
            .iter()
            .filter(|i| state == "all" || gitlab_state(i) == state)
            .filter(|i| author.is_none_or(|a| i.user.eq_ignore_ascii_case(a)))
            .collect();
        issues.sort_by_key(|i| match get(query, "order_by") {
            Some("updated_at") => (i.updated_at, i.number),
            _ => (i.created_at, i.number),
        });
        if get(query, "sort") != Some("asc") {
            issues.reverse();
        }
        let items: Vec<Value> = issues.iter().map(|i| self.issue_json(i)).collect();
        paged(query, items)
    }

    fn create_issue(&mut self, body: &Value) -> Answer {
        let Some(title) = body.get("title").and_then(Value::as_str) else {
            return message(400, "title is missing");
        };
        let text = body
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let now = self.clock.tick();
        let iid = self.next_issue_iid();
        self.issues.insert(iid, FakeGitLab::BOT, (title, text), now);
        match self.issues.find(iid) {
            Some(issue) => ok(201, self.issue_json(issue)),
            None => message(404, "404 Not found"),
        }
    }

    fn edit_issue(&mut self, iid: u64, body: &Value) -> Answer {
        let title = body.get("title").and_then(Value::as_str);
        let text = body.get("description").and_then(Value::as_str);
        let now = self.clock.tick();
        if !self.issues.edit(iid, FakeGitLab::BOT, (title, text), now) {
            return message(404, "404 Not found");
        }
        match self.issues.find(iid) {
            Some(issue) => ok(200, self.issue_json(issue)),
            None => message(404, "404 Not found"),
        }
    }

    /// An issue's system notes: one "changed the description" per change.
    fn issue_notes(&self, issue: &FakeIssue, query: &[(String, String)]) -> Answer {
        let mut notes: Vec<Value> = issue
            .edits
            .iter()
            .enumerate()
            .map(|(index, (who, at))| {
                let author = self.user_by_name(who);
                json!({
                    "id": 900_000 + issue.number * 1000 + index as u64,
                    "type": null,
                    "body": "changed the description",
                    "author": author,
                    "created_at": timestamp_millis(*at),
                    "updated_at": timestamp_millis(*at),
                    "system": true,
                    "noteable_type": "Issue",
                    "noteable_iid": issue.number,
                    "project_id": FakeGitLab::PROJECT_ID,
                    "internal": false
                })
            })
            .collect();
        if get(query, "sort") != Some("asc") {
            notes.reverse();
        }
        paged(query, notes)
    }

    fn user_by_name(&self, username: &str) -> Value {
        match self.users.iter().find(|u| u.username == username) {
            Some(user) => user_json(user),
            None => json!({"id": 0, "username": username, "name": username, "state": "active"}),
        }
    }

    fn member(&self, id: &str) -> Answer {
        let user = id
            .parse::<u64>()
            .ok()
            .and_then(|id| self.users.iter().find(|u| u.id == id));
        let level = user.and_then(|u| self.issues.permission(&u.username));
        match (user, level.and_then(|l| l.parse::<u64>().ok())) {
            (Some(user), Some(level)) => {
                let mut value = user_json(user);
                value["access_level"] = json!(level);
                ok(200, value)
            }
            _ => message(404, "404 Not found"),
        }
    }

    fn issue_json(&self, issue: &FakeIssue) -> Value {
        json!({
            "id": 700_000 + issue.number,
            "iid": issue.number,
            "project_id": FakeGitLab::PROJECT_ID,
            "title": issue.title,
            "description": issue.body,
            "state": gitlab_state(issue),
            "author": self.user_by_name(&issue.user),
            "web_url": format!("{WEB_BASE}/{}/-/issues/{}", FakeGitLab::PROJECT_PATH, issue.number),
            "created_at": timestamp_millis(issue.created_at),
            "updated_at": timestamp_millis(issue.updated_at),
            "labels": [],
            "assignees": [],
            "type": "ISSUE"
        })
    }
}

fn gitlab_state(issue: &FakeIssue) -> &str {
    match issue.state.as_str() {
        "open" => "opened",
        other => other,
    }
}

/// One page of `items` with GitLab's `x-*` paging headers.
fn paged(query: &[(String, String)], items: Vec<Value>) -> Answer {
    let per_page = per_page(query, 20);
    let page = page_number(query);
    let pages = items.len().div_ceil(per_page).max(1);
    let total = items.len();
    let page_items: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    let next = if page < pages {
        (page + 1).to_string()
    } else {
        String::new()
    };
    let template = ResponseTemplate::new(200)
        .set_body_json(Value::Array(page_items))
        .insert_header("x-page", page.to_string().as_str())
        .insert_header("x-per-page", per_page.to_string().as_str())
        .insert_header("x-total", total.to_string().as_str())
        .insert_header("x-total-pages", pages.to_string().as_str())
        .insert_header("x-next-page", next.as_str());
    (200, template)
}
