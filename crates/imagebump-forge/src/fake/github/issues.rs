//! The fake's issue routes, answered as GitHub does:
//!
//! | route | answer |
//! |---|---|
//! | `GET /repos/{o}/{r}/issues` | `state` (open, closed, all), `creator`, `sort` (created, updated), `direction`, `per_page`, `page`; pull requests too, with `pull_request`, as GitHub lists them |
//! | `POST /repos/{o}/{r}/issues` | `title`, `body`: 201; 422 without a title |
//! | `PATCH /repos/{o}/{r}/issues/{n}` | `title`, `body`, of an issue; a changed body records the acting account as its editor |
//! | `GET /repos/{o}/{r}/collaborators/{user}/permission` | `permission` as [`FakeGitHub::set_permission`] set it, else `read`; 404 for a login with characters GitHub refuses |
//! | `POST /graphql` `repository.issue(number).editor` | the last account that changed the description (`null` when never changed), `lastEditedAt` |

use serde_json::{json, Value};
use wiremock::ResponseTemplate;

use super::super::common::{page_number, per_page, query_get, timestamp};
use super::super::issues::FakeIssue;
use super::{
    not_found, ok, user_json, validation_failed, with_rate_headers, FakeGitHub, State,
    APP_BOT_LOGIN,
};

type Answer = (u16, ResponseTemplate);

impl FakeGitHub {
    /// Someone opens an issue; its number (shared with pull requests, as on GitHub).
    pub fn add_issue_by(&self, user: &str, title: &str, body: &str) -> u64 {
        let mut state = self.lock();
        let now = state.clock.tick();
        let number = state.next_number;
        state.next_number += 1;
        state.issues.insert(number, user, (title, body), now);
        number
    }

    /// `user` changes an issue's description in GitHub (ticking a checkbox does).
    pub fn edit_issue_as(&self, number: u64, user: &str, body: &str) {
        let mut state = self.lock();
        let now = state.clock.tick();
        assert!(
            state.issues.edit(number, user, (None, Some(body)), now),
            "no issue #{number} in the fake"
        );
    }

    /// The issues, in the order they were opened.
    pub fn issues(&self) -> Vec<FakeIssue> {
        self.lock().issues.list.clone()
    }

    /// `login`'s permission on the repository: `admin`, `write`, `read` or `none`.
    pub fn set_permission(&self, login: &str, permission: &str) {
        let mut state = self.lock();
        state
            .issues
            .permissions
            .insert(login.to_string(), permission.to_string());
    }
}

impl State {
    pub(super) fn issue_route(
        &mut self,
        method: &str,
        rest: &[&str],
        (route, query): (&str, &[(String, String)]),
        body: &Value,
    ) -> Option<Answer> {
        let number = |s: &str| s.parse::<u64>().ok();
        Some(match (method, rest) {
            ("GET", ["issues"]) => self.list_issues(route, query),
            ("POST", ["issues"]) => self.create_issue(body),
            ("PATCH", ["issues", n]) => match number(n) {
                Some(n) => self.edit_issue(n, body),
                None => not_found(),
            },
            ("GET", ["collaborators", user, "permission"]) => self.permission(user),
            _ => return None,
        })
    }

    fn list_issues(&self, route: &str, query: &[(String, String)]) -> Answer {
        let get = |key: &str| query_get(query, key);
        let state = get("state").unwrap_or("open");
        let creator = get("creator");
        let keep = |s: &str, user: &str| {
            (state == "all" || s == state) && creator.is_none_or(|c| c.eq_ignore_ascii_case(user))
        };
        let mut items: Vec<(i64, u64, Value)> = self
            .issues
            .list
            .iter()
            .filter(|i| keep(&i.state, &i.user))
            .map(|i| (i.created_at, i.number, self.issue_json(i)))
            .collect();
        for p in self.pulls.iter().filter(|p| keep(&p.state, &p.user)) {
            let mut value = self.pull_json(p, false);
            let html = value["html_url"].clone();
            value["pull_request"] = json!({ "url": value["url"], "html_url": html });
            items.push((p.created_at, p.number, value));
        }
        items.sort_by_key(|(at, n, _)| (*at, *n));
        if get("direction").unwrap_or("desc") == "desc" {
            items.reverse();
        }
        let per_page = per_page(query, 30);
        let page = page_number(query);
        let last = items.len().div_ceil(per_page).max(1);
        let page_items: Vec<Value> = items
            .into_iter()
            .skip((page - 1) * per_page)
            .take(per_page)
            .map(|(_, _, v)| v)
            .collect();
        let mut template = ResponseTemplate::new(200).set_body_json(Value::Array(page_items));
        let link = self.link(route, query, page, last);
        if !link.is_empty() {
            template = template.insert_header("link", link.as_str());
        }
        (200, with_rate_headers(template))
    }

    fn create_issue(&mut self, body: &Value) -> Answer {
        let Some(title) = body.get("title").and_then(Value::as_str) else {
            return validation_failed("Issue", "missing_field", Some("title"));
        };
        let text = body.get("body").and_then(Value::as_str).unwrap_or_default();
        let now = self.clock.tick();
        let number = self.next_number;
        self.next_number += 1;
        let user = self.acting.clone();
        self.issues.insert(number, &user, (title, text), now);
        let issue = self.issues.find(number).cloned();
        match issue {
            Some(issue) => ok(201, self.issue_json(&issue)),
            None => not_found(),
        }
    }

    fn edit_issue(&mut self, number: u64, body: &Value) -> Answer {
        let title = body.get("title").and_then(Value::as_str);
        let text = body.get("body").and_then(Value::as_str);
        let now = self.clock.tick();
        let user = self.acting.clone();
        if !self.issues.edit(number, &user, (title, text), now) {
            return not_found();
        }
        match self.issues.find(number).cloned() {
            Some(issue) => ok(200, self.issue_json(&issue)),
            None => not_found(),
        }
    }

    fn permission(&self, user: &str) -> Answer {
        let valid = !user.is_empty()
            && user
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '[' | ']'));
        if !valid {
            return not_found();
        }
        let permission = self.issues.permission(user).unwrap_or("read");
        let role = match permission {
            "admin" => "admin",
            "write" => "write",
            "none" => "none",
            _ => "read",
        };
        ok(
            200,
            json!({ "permission": permission, "role_name": role, "user": user_json(user) }),
        )
    }

    /// GraphQL `repository.issue(number) { lastEditedAt editor { __typename login } }`.
    pub(super) fn graphql_issue_editor(&self, vars: &Value) -> Answer {
        let number = vars.get("number").and_then(Value::as_u64).unwrap_or(0);
        let Some(issue) = self.issues.find(number) else {
            return ok(
                200,
                json!({"data": {"repository": {"issue": null}}, "errors": [
                    {"type": "NOT_FOUND", "message": format!("Could not resolve to an Issue with the number of {number}.")}
                ]}),
            );
        };
        let (editor, at) = match issue.last_edit() {
            // GraphQL names an App's bot without `[bot]`.
            Some((login, at)) if login == APP_BOT_LOGIN => (
                json!({"__typename": "Bot", "login": login.trim_end_matches("[bot]")}),
                json!(timestamp(*at)),
            ),
            Some((login, at)) => (
                json!({"__typename": "User", "login": login}),
                json!(timestamp(*at)),
            ),
            None => (Value::Null, Value::Null),
        };
        ok(
            200,
            json!({"data": {"repository": {"issue": {"lastEditedAt": at, "editor": editor}}}}),
        )
    }

    fn issue_json(&self, issue: &FakeIssue) -> Value {
        let full = self.full_name();
        let api = format!("{}/repos/{full}/issues/{}", self.base_url, issue.number);
        json!({
            "id": 1_000_000 + issue.number,
            "node_id": format!("I_fake{}", issue.number),
            "url": api,
            "html_url": format!("https://github.com/{full}/issues/{}", issue.number),
            "number": issue.number,
            "state": issue.state,
            "title": issue.title,
            "body": issue.body,
            "user": user_json(&issue.user),
            "labels": [],
            "assignees": [],
            "comments": 0,
            "created_at": timestamp(issue.created_at),
            "updated_at": timestamp(issue.updated_at),
            "closed_at": null,
            "author_association": "OWNER"
        })
    }
}
