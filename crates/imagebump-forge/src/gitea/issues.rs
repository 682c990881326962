//! Gitea's and Forgejo's issues, for the dashboard: listed by creator, opened and edited.
//! Gitea's API does not say who changed a description (its edit history is the web UI's
//! alone); its `PATCH …/issues/{n}` lets the issue's poster and every user who may write
//! issues change it, Code: Read or not ([`Editor::AnyIssueEditor`]). A user's permission on
//! the code is `GET …/collaborators/{user}/permission`.

use std::ops::ControlFlow;

use serde::Deserialize;
use serde_json::json;

use super::{is_name, Gitea, LoginJson, Method};
use crate::{Editor, Error, Issue, ISSUE_LIMIT};

#[derive(Deserialize)]
struct IssueJson {
    number: u64,
    #[serde(default)]
    title: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    html_url: String,
    #[serde(default)]
    user: Option<LoginJson>,
    /// Set on a pull request (listed as an issue).
    #[serde(default)]
    pull_request: Option<serde_json::Value>,
}

impl IssueJson {
    fn into_issue(self) -> Issue {
        Issue {
            number: self.number,
            title: self.title,
            body: self.body,
            author: self.user.map(|u| u.login).unwrap_or_default(),
            url: self.html_url,
        }
    }
}

#[derive(Deserialize)]
struct PermissionJson {
    #[serde(default)]
    permission: String,
}

impl Gitea {
    fn issue_what(&self, number: u64) -> String {
        format!("issue #{number} in {}", self.full_name())
    }

    /// `GET …/issues?state=open&type=issues&created_by=…`, lowest number first.
    pub(super) async fn issues_by(&self, author: &str) -> Result<Vec<Issue>, Error> {
        if !is_name(author) {
            return Ok(Vec::new());
        }
        let path = self.repo_path(&format!(
            "/issues?state=open&type=issues&created_by={author}"
        ));
        let mut found = Vec::new();
        let pages = ISSUE_LIMIT.div_ceil(super::PAGE_SIZE);
        self.api
            .paginate(&path, &self.repo_what(), pages, |page: Vec<IssueJson>| {
                let issues = page.into_iter().filter(|i| i.pull_request.is_none());
                found.extend(issues.map(IssueJson::into_issue));
                ControlFlow::Continue(())
            })
            .await?;
        found.sort_by_key(|i| i.number);
        found.dedup_by_key(|i| i.number);
        found.truncate(ISSUE_LIMIT);
        Ok(found)
    }

    pub(super) async fn open_issue(&self, title: &str, body: &str) -> Result<Issue, Error> {
        let path = self.repo_path("/issues");
        let payload = json!({ "title": title, "body": body });
        let what = self.repo_what();
        let issue: IssueJson = self
            .api
            .send_json(Method::POST, &path, Some(&payload), &what)
            .await?;
        Ok(issue.into_issue())
    }

    pub(super) async fn edit_issue(
        &self,
        number: u64,
        title: &str,
        body: &str,
    ) -> Result<(), Error> {
        let path = self.repo_path(&format!("/issues/{number}"));
        let payload = json!({ "title": title, "body": body });
        self.write(Method::PATCH, &path, payload, &self.issue_what(number))
            .await
    }

    /// Gitea names no editor; see the module.
    pub(super) fn editor_of(&self) -> Editor {
        Editor::AnyIssueEditor
    }

    /// `permission` is `write`, `admin` or `owner`; 403 or 404 (not a collaborator, no
    /// such user): no.
    pub(super) async fn writer(&self, login: &str) -> Result<bool, Error> {
        if !is_name(login) {
            return Ok(false);
        }
        let path = self.repo_path(&format!("/collaborators/{login}/permission"));
        let what = format!("{login}'s permission on {}", self.full_name());
        match self
            .api
            .send_json::<PermissionJson>(Method::GET, &path, None, &what)
            .await
        {
            Ok(p) => Ok(matches!(p.permission.as_str(), "write" | "admin" | "owner")),
            Err(Error::NotFound { .. } | Error::Forbidden { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use secrecy::SecretString;

    use crate::fake::gitea::FakeGitea;
    use crate::gitea::{Gitea, GiteaSettings};
    use crate::{Editor, Forge};

    #[tokio::test]
    async fn issues_by_creator_and_permission() {
        let fake = FakeGitea::start().await;
        let gt = Gitea::new(GiteaSettings {
            api_url: fake.api_url(),
            owner: FakeGitea::OWNER.into(),
            repo: FakeGitea::REPO.into(),
            token: SecretString::from(FakeGitea::TOKEN.to_string()),
        })
        .unwrap();
        fake.add_pull("imagebump/a", "main", "a pull request", "");
        fake.add_issue_by("mallory", "imagebump dashboard", "x");
        let made = gt
            .create_issue("imagebump dashboard", "body")
            .await
            .unwrap();
        let mine = gt.open_issues_by(FakeGitea::BOT_LOGIN).await.unwrap();
        assert_eq!(
            mine.iter().map(|i| i.number).collect::<Vec<_>>(),
            [made.number]
        );
        gt.update_issue(made.number, "t", "new").await.unwrap();
        assert_eq!(fake.issues()[1].body, "new");
        assert_eq!(
            gt.issue_editors(made.number, FakeGitea::BOT_LOGIN)
                .await
                .unwrap(),
            Editor::AnyIssueEditor
        );
        assert!(fake
            .edit_issue_as(made.number, "mallory", "ticked")
            .is_err());
        assert!(!gt.can_write("mallory").await.unwrap());
        fake.set_permission("carol", "write");
        assert!(gt.can_write("carol").await.unwrap());
        let lines: Vec<String> = fake.calls().iter().map(|c| c.line()).collect();
        let repo = "/api/v1/repos/octo/gitops";
        assert_eq!(
            lines,
            [
                format!("POST {repo}/issues"),
                format!("GET {repo}/issues"),
                format!("PATCH {repo}/issues/{}", made.number),
                format!("GET {repo}/collaborators/mallory/permission"),
                format!("GET {repo}/collaborators/carol/permission"),
            ]
        );
        let list = &fake.calls()[1];
        assert_eq!(list.query_value("created_by"), Some(FakeGitea::BOT_LOGIN));
        assert_eq!(list.query_value("type"), Some("issues"));
    }
}
