//! The fake's issue routes, answered as Gitea does:
//!
//! | route | answer |
//! |---|---|
//! | `GET /repos/{o}/{r}/issues` | `state` (open, closed, all; default open), `type` (issues, pulls; default both), `created_by`, `page`, `limit`; newest first |
//! | `POST /repos/{o}/{r}/issues` | `title`, `body`: 201; 422 without a title |
//! | `PATCH /repos/{o}/{r}/issues/{n}` | `title`, `body` of an issue: 201 |
//! | `GET /repos/{o}/{r}/collaborators/{user}/permission` | `permission` as [`FakeGitea::set_permission`] set it; 403 for a user who is no collaborator, as Gitea answers |
//!
//! Gitea lets only an issue's poster and users who may write issues (code writers, and
//! teams with Issues: Write) change its description: [`FakeGitea::edit_issue_as`] refuses
//! anyone else, as Gitea's `PATCH` does with 403.

use serde_json::{json, Value};

use super::super::common::{query_get, timestamp};
use super::super::issues::FakeIssue;
use super::{user_json, Answer, FakeGitea, State, API_PREFIX};

/// The permission word of [`FakeGitea::set_permission`] for a team member who may write
/// issues but only read the code.
pub const ISSUES_ONLY: &str = "issues-only";

impl FakeGitea {
    /// Someone opens an issue; its number (shared with pull requests, as in Gitea).
    pub fn add_issue_by(&self, user: &str, title: &str, body: &str) -> u64 {
        let mut state = self.lock();
        let now = state.clock.tick();
        let number = state.next_number;
        state.next_number += 1;
        state.issues.insert(number, user, (title, body), now);
        number
    }

    /// `user` changes an issue's description; `Err` (Gitea's 403) unless `user` opened it or
    /// may write issues.
    pub fn edit_issue_as(&self, number: u64, user: &str, body: &str) -> Result<(), String> {
        let mut state = self.lock();
        let poster = state.issues.find(number).map(|i| i.user.clone());
        let writer = matches!(
            state.issues.permission(user),
            Some("write" | "admin" | "owner" | ISSUES_ONLY)
        );
        match poster {
            None => Err(format!("no issue #{number}")),
            Some(poster) if poster != user && !writer => {
                Err(format!("403: {user} may not edit issue #{number}"))
            }
            Some(_) => {
                let now = state.clock.tick();
                state.issues.edit(number, user, (None, Some(body)), now);
                Ok(())
            }
        }
    }

    /// The issues, in the order they were opened.
    pub fn issues(&self) -> Vec<FakeIssue> {
        self.lock().issues.list.clone()
    }

    /// `login`'s permission on the repository: `read`, `write`, `admin` or `owner`; or
    /// [`ISSUES_ONLY`], a team member with Code: Read and Issues: Write, who may edit any
    /// issue and whose permission reads `read`.
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
        let issue = |s: &str| {
            s.parse::<u64>()
                .ok()
                .filter(|n| self.issues.find(*n).is_some())
        };
        Some(match (method, rest) {
            ("GET", ["issues"]) => self.list_issues(route, query),
            ("POST", ["issues"]) => self.create_issue(body),
            ("PATCH", ["issues", n]) => {
                let n = issue(n)?;
                let title = body.get("title").and_then(Value::as_str);
                let text = body.get("body").and_then(Value::as_str);
                let now = self.clock.tick();
                self.issues
                    .edit(n, FakeGitea::BOT_LOGIN, (title, text), now);
                self.issue_by_number(201, n)
            }
            ("GET", ["collaborators", user, "permission"]) => match self.issues.permission(user) {
                Some(p) => {
                    let p = if p == ISSUES_ONLY { "read" } else { p };
                    (
                        200,
                        wiremock::ResponseTemplate::new(200).set_body_json(
                            json!({"permission": p, "role_name": p, "user": user_json(user)}),
                        ),
                    )
                }
                None => self.error(403, "user is not a collaborator"),
            },
            _ => return None,
        })
    }

    fn list_issues(&self, route: &str, query: &[(String, String)]) -> Answer {
        let get = |key: &str| query_get(query, key);
        let state = get("state").unwrap_or("open");
        let creator = get("created_by");
        let keep = |s: &str, user: &str| {
            (state == "all" || s == state) && creator.is_none_or(|c| c.eq_ignore_ascii_case(user))
        };
        let mut items: Vec<(u64, Value)> = Vec::new();
        if get("type") != Some("pulls") {
            let issues = self.issues.list.iter().filter(|i| keep(&i.state, &i.user));
            items.extend(issues.map(|i| (i.number, self.plain_issue_json(i))));
        }
        if get("type") != Some("issues") {
            let pulls = self.pulls.iter().filter(|p| keep(&p.state, &p.user));
            items.extend(pulls.map(|p| (p.number, self.issue_json(p))));
        }
        items.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
        let values = items.into_iter().map(|(_, v)| v).collect();
        self.page(route, &get, values)
    }

    fn create_issue(&mut self, body: &Value) -> Answer {
        let Some(title) = body.get("title").and_then(Value::as_str) else {
            return self.error(422, "[Title]: Required");
        };
        let text = body.get("body").and_then(Value::as_str).unwrap_or_default();
        let now = self.clock.tick();
        let number = self.next_number;
        self.next_number += 1;
        self.issues
            .insert(number, FakeGitea::BOT_LOGIN, (title, text), now);
        self.issue_by_number(201, number)
    }

    fn issue_by_number(&self, status: u16, number: u64) -> Answer {
        match self.issues.find(number) {
            Some(issue) => (
                status,
                wiremock::ResponseTemplate::new(status).set_body_json(self.plain_issue_json(issue)),
            ),
            None => self.not_found(),
        }
    }

    fn plain_issue_json(&self, issue: &FakeIssue) -> Value {
        let n = issue.number;
        json!({
            "id": 5000 + n,
            "url": format!("{}{API_PREFIX}/repos/{}/issues/{n}", self.server_url, self.full_name()),
            "html_url": format!("{}/{}/issues/{n}", self.server_url, self.full_name()),
            "number": n,
            "user": user_json(&issue.user),
            "title": issue.title,
            "body": issue.body,
            "ref": "",
            "labels": [],
            "milestone": null,
            "assignee": null,
            "assignees": null,
            "state": issue.state,
            "is_locked": false,
            "comments": 0,
            "created_at": timestamp(issue.created_at),
            "updated_at": timestamp(issue.updated_at),
            "closed_at": null,
            "due_date": null,
            "pull_request": null,
            "repository": {
                "id": 1,
                "name": self.repo,
                "owner": self.owner,
                "full_name": self.full_name()
            }
        })
    }
}
