//! GitHub's issues, for the dashboard: listed by creator (REST), opened and edited (REST),
//! their description's last editor (GraphQL `editor`, REST has none) and a user's
//! permission on the repository (REST `collaborators/{user}/permission`).

use serde::Deserialize;
use serde_json::{json, Value};

use super::{parse, GitHub, Method, PER_PAGE};
use crate::{Editor, Error, Issue, LoginJson, ISSUE_LIMIT};

/// An issue as GitHub's REST API writes it (pull requests too: they carry `pull_request`).
#[derive(Deserialize)]
struct IssueJson {
    number: u64,
    #[serde(default)]
    title: String,
    body: Option<String>,
    #[serde(default)]
    html_url: String,
    #[serde(default)]
    user: Option<LoginJson>,
    #[serde(default)]
    pull_request: Option<Value>,
}

impl IssueJson {
    fn into_issue(self) -> Issue {
        Issue {
            number: self.number,
            title: self.title,
            body: self.body.unwrap_or_default(),
            author: self.user.map(|u| u.login).unwrap_or_default(),
            url: self.html_url,
        }
    }
}

/// `GET …/collaborators/{user}/permission`.
#[derive(Deserialize)]
struct PermissionJson {
    #[serde(default)]
    permission: String,
}

impl GitHub {
    /// `GET /repos/{o}/{r}/issues?state=open&creator=…`, oldest first, pull requests left
    /// out, at most [`ISSUE_LIMIT`].
    pub(super) async fn issues_by(&self, author: &str) -> Result<Vec<Issue>, Error> {
        let what = format!("the issues of {}", self.full_name());
        let mut url = self.api.url(&self.repo_path("/issues"))?;
        url.query_pairs_mut()
            .append_pair("state", "open")
            .append_pair("creator", author)
            .append_pair("sort", "created")
            .append_pair("direction", "asc")
            .append_pair("per_page", &PER_PAGE.to_string());
        let mut next = Some(url);
        let mut found = Vec::new();
        let mut budget = crate::ListBudget::default();
        let mut pages = 0usize;
        while let Some(url) = next.take() {
            if pages.saturating_mul(PER_PAGE) >= ISSUE_LIMIT {
                break;
            }
            pages = pages.saturating_add(1);
            let token = self.credential().await?;
            let reply = self
                .api
                .send(Method::GET, &url, None, &what, &token)
                .await?;
            budget.take(reply.body.len(), &what)?;
            let page: Vec<IssueJson> = parse(&reply.body, "GET", url.path())?;
            let issues = page.into_iter().filter(|i| i.pull_request.is_none());
            found.extend(issues.map(IssueJson::into_issue));
            next = reply.next.map(|link| self.api.inside(link)).transpose()?;
        }
        found.truncate(ISSUE_LIMIT);
        Ok(found)
    }

    pub(super) async fn open_issue(&self, title: &str, body: &str) -> Result<Issue, Error> {
        let path = self.repo_path("/issues");
        let what = format!("repository {}", self.full_name());
        let payload = json!({ "title": title, "body": body });
        let reply = self
            .call(Method::POST, &path, Some(&payload), &what)
            .await?;
        Ok(parse::<IssueJson>(&reply.body, "POST", &path)?.into_issue())
    }

    pub(super) async fn edit_issue(
        &self,
        number: u64,
        title: &str,
        body: &str,
    ) -> Result<(), Error> {
        let path = self.repo_path(&format!("/issues/{number}"));
        let what = format!("issue #{number} in {}", self.full_name());
        let payload = json!({ "title": title, "body": body });
        self.write(Method::PATCH, &path, payload, &what).await
    }

    /// GraphQL `Issue.editor` (the actor of the last edit; `null` when never edited). A bot
    /// is named as REST names it (`<app>[bot]`). GitHub's repository roles let only the
    /// issue's author and writers edit its description (triage may not).
    pub(super) async fn editor_of(&self, number: u64) -> Result<Editor, Error> {
        let payload = json!({
            "query": "query($owner: String!, $name: String!, $number: Int!) { \
                      repository(owner: $owner, name: $name) { issue(number: $number) { \
                      lastEditedAt editor { __typename login } } } }",
            "variables": { "owner": self.owner, "name": self.repo, "number": number },
        });
        let what = format!("issue #{number} in {}", self.full_name());
        let answer = self.graphql(&payload, &what).await?;
        let issue = answer
            .data
            .as_ref()
            .and_then(|d| d.pointer("/repository/issue"))
            .filter(|i| !i.is_null())
            .ok_or_else(|| Error::NotFound { what: what.clone() })?;
        let editor = issue.get("editor").filter(|e| !e.is_null());
        let login = editor.and_then(|e| e.get("login")).and_then(Value::as_str);
        let kind = editor
            .and_then(|e| e.get("__typename"))
            .and_then(Value::as_str);
        Ok(match (login, kind) {
            (Some(login), Some("Bot")) if !login.ends_with("[bot]") => {
                Editor::Users(vec![format!("{login}[bot]")])
            }
            (Some(login), _) => Editor::Users(vec![login.to_string()]),
            // Edited by an account since deleted ("ghost"): nobody who can write now.
            (None, _) if issue.get("lastEditedAt").is_some_and(|t| !t.is_null()) => {
                Editor::Users(vec![String::new()])
            }
            (None, _) => Editor::Unedited,
        })
    }

    /// `permission` is `admin` or `write` (GitHub reports `maintain` as `write`).
    pub(super) async fn writer(&self, login: &str) -> Result<bool, Error> {
        if super::check_name("user", login).is_err() {
            return Ok(false);
        }
        let path = self.repo_path(&format!("/collaborators/{login}/permission"));
        let what = format!("{login}'s permission on {}", self.full_name());
        match self.call(Method::GET, &path, None, &what).await {
            Ok(reply) => {
                let p: PermissionJson = parse(&reply.body, "GET", &path)?;
                Ok(matches!(p.permission.as_str(), "admin" | "write"))
            }
            Err(Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use secrecy::SecretString;

    use crate::fake::github::{FakeGitHub, BOT_LOGIN};
    use crate::{Editor, Forge, GitHub, GitHubAuth, GitHubSettings};

    async fn client(fake: &FakeGitHub) -> GitHub {
        GitHub::connect(GitHubSettings {
            api_url: fake.api_url(),
            owner: FakeGitHub::OWNER.into(),
            repo: FakeGitHub::REPO.into(),
            auth: GitHubAuth::Token(SecretString::from(FakeGitHub::TOKEN.to_string())),
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn issues_by_creator_editor_and_permission() {
        let fake = FakeGitHub::start().await;
        let gh = client(&fake).await;
        fake.add_pull("imagebump/a", "main", "a pull request", "");
        fake.add_issue_by("mallory", "imagebump dashboard", "x");
        let made = gh
            .create_issue("imagebump dashboard", "body")
            .await
            .unwrap();
        assert_eq!(made.author, BOT_LOGIN);
        let mine = gh.open_issues_by(BOT_LOGIN).await.unwrap();
        assert_eq!(
            mine.iter().map(|i| i.number).collect::<Vec<_>>(),
            [made.number]
        );
        assert_eq!(
            gh.issue_editors(made.number, BOT_LOGIN).await.unwrap(),
            Editor::Unedited
        );
        gh.update_issue(made.number, "t", "new").await.unwrap();
        assert_eq!(
            gh.issue_editors(made.number, BOT_LOGIN).await.unwrap(),
            Editor::Users(vec![BOT_LOGIN.into()])
        );
        fake.edit_issue_as(made.number, "alice", "ticked");
        assert_eq!(
            gh.issue_editors(made.number, BOT_LOGIN).await.unwrap(),
            Editor::Users(vec!["alice".into()])
        );
        assert!(!gh.can_write("alice").await.unwrap());
        fake.set_permission("alice", "admin");
        assert!(gh.can_write("alice").await.unwrap());
        assert!(
            !gh.can_write("../x").await.unwrap(),
            "no request for a bad login"
        );
        let lines: Vec<String> = fake.calls().iter().map(|c| c.line()).collect();
        let issues = "/repos/octo/gitops/issues";
        assert_eq!(
            lines,
            [
                format!("POST {issues}"),
                format!("GET {issues}"),
                "POST /graphql".into(),
                format!("PATCH {issues}/{}", made.number),
                "POST /graphql".into(),
                "POST /graphql".into(),
                "GET /repos/octo/gitops/collaborators/alice/permission".into(),
                "GET /repos/octo/gitops/collaborators/alice/permission".into(),
            ]
        );
        let list = &fake.calls()[1];
        assert_eq!(list.query_value("creator"), Some(BOT_LOGIN));
        assert_eq!(list.query_value("state"), Some("open"));
    }
}
