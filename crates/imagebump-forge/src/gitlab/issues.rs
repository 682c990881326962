//! GitLab's issues, for the dashboard: listed by author, opened and edited; who changed a
//! description are the authors of the system notes saying so ("changed the description",
//! or a checklist item marked), and whether a user may write is their access level among
//! the project's members, inherited ones included (Developer, 30, or more).

use serde::Deserialize;
use serde_json::json;

use super::{parse, GitLab, Method, UserRef, PER_PAGE};
use crate::{Editor, Error, Issue, ISSUE_LIMIT};

/// Pages of notes read, newest first, looking for the last change of a description.
const MAX_NOTE_PAGES: usize = 5;
/// GitLab's Developer role: may push and edit issues.
const DEVELOPER: u64 = 30;

#[derive(Deserialize)]
struct IssueJson {
    iid: u64,
    #[serde(default)]
    title: String,
    description: Option<String>,
    #[serde(default)]
    web_url: String,
    #[serde(default)]
    author: Option<UserRef>,
}

impl IssueJson {
    fn into_issue(self) -> Issue {
        Issue {
            number: self.iid,
            title: self.title,
            body: self.description.unwrap_or_default(),
            author: self.author.map(|a| a.username).unwrap_or_default(),
            url: self.web_url,
        }
    }
}

#[derive(Deserialize)]
struct NoteJson {
    #[serde(default)]
    body: String,
    #[serde(default)]
    system: bool,
    #[serde(default)]
    author: Option<UserRef>,
}

impl NoteJson {
    /// A system note GitLab writes when the description changes: by a whole edit ("changed
    /// the description") or by ticking a checkbox ("marked the checklist item … as
    /// completed", "marked the task …" in older versions).
    fn changes_description(&self) -> bool {
        self.system
            && [
                "changed the description",
                "marked the checklist item",
                "marked the task",
            ]
            .iter()
            .any(|p| self.body.starts_with(p))
    }
}

/// The accounts that changed a description, newest first, each once.
#[derive(Default)]
struct Editors(Vec<String>);

impl Editors {
    fn add(&mut self, who: String) {
        if !self.0.iter().any(|w| w.eq_ignore_ascii_case(&who)) {
            self.0.push(who);
        }
    }

    fn done(self) -> Editor {
        match self.0.is_empty() {
            true => Editor::Unedited,
            false => Editor::Users(self.0),
        }
    }
}

#[derive(Deserialize)]
struct MemberJson {
    #[serde(default)]
    access_level: u64,
}

impl GitLab {
    fn issue_what(&self, iid: u64) -> String {
        format!("issue #{iid} in GitLab project {}", self.project)
    }

    pub(super) async fn issues_by(&self, author: &str) -> Result<Vec<Issue>, Error> {
        let mut url = self.project_url("/issues")?;
        url.query_pairs_mut()
            .append_pair("state", "opened")
            .append_pair("author_username", author)
            .append_pair("order_by", "created_at")
            .append_pair("sort", "asc")
            .append_pair("per_page", &PER_PAGE.to_string());
        let what = self.project_what();
        let mut next = Some(url);
        let mut found = Vec::new();
        let mut budget = crate::ListBudget::default();
        while let Some(url) = next.take() {
            if found.len() >= ISSUE_LIMIT {
                break;
            }
            let reply = self.api.send(Method::Get, &url, None, &what).await?;
            budget.take(reply.body.len(), &what)?;
            let page: Vec<IssueJson> = parse(&reply.body, Method::Get, &url)?;
            let empty = page.is_empty();
            found.extend(page.into_iter().map(IssueJson::into_issue));
            next = reply.next.filter(|_| !empty);
        }
        found.truncate(ISSUE_LIMIT);
        Ok(found)
    }

    pub(super) async fn open_issue(&self, title: &str, body: &str) -> Result<Issue, Error> {
        let url = self.project_url("/issues")?;
        let payload = json!({ "title": title, "description": body });
        let what = self.project_what();
        let reply = self
            .api
            .send(Method::Post, &url, Some(&payload), &what)
            .await?;
        Ok(parse::<IssueJson>(&reply.body, Method::Post, &url)?.into_issue())
    }

    pub(super) async fn edit_issue(&self, iid: u64, title: &str, body: &str) -> Result<(), Error> {
        let url = self.project_url(&format!("/issues/{iid}"))?;
        let payload = json!({ "title": title, "description": body });
        let what = self.issue_what(iid);
        self.api
            .send(Method::Put, &url, Some(&payload), &what)
            .await
            .map(drop)
    }

    /// The authors of the system notes that changed the description since `own`'s newest
    /// one (or since the issue was opened), newest first, each once. Notes older than
    /// [`MAX_NOTE_PAGES`] pages are not read: a change there is one nobody can vouch for.
    pub(super) async fn editors_of(&self, iid: u64, own: &str) -> Result<Editor, Error> {
        let mut url = self.project_url(&format!("/issues/{iid}/notes"))?;
        url.query_pairs_mut()
            .append_pair("sort", "desc")
            .append_pair("order_by", "created_at")
            .append_pair("per_page", &PER_PAGE.to_string());
        let what = self.issue_what(iid);
        let mut next = Some(url);
        let mut budget = crate::ListBudget::default();
        let mut editors = Editors::default();
        for _ in 0..MAX_NOTE_PAGES {
            let Some(url) = next.take() else {
                return Ok(editors.done());
            };
            let reply = self.api.send(Method::Get, &url, None, &what).await?;
            budget.take(reply.body.len(), &what)?;
            let notes: Vec<NoteJson> = parse(&reply.body, Method::Get, &url)?;
            let empty = notes.is_empty();
            let changes = notes.into_iter().filter(NoteJson::changes_description);
            for who in changes.map(|n| n.author.map(|a| a.username).unwrap_or_default()) {
                if who.eq_ignore_ascii_case(own) {
                    return Ok(editors.done());
                }
                editors.add(who);
            }
            next = reply.next.filter(|_| !empty);
        }
        if next.is_some() {
            // Older than every note read: who changed it there cannot be told.
            editors.add(String::new());
        }
        Ok(editors.done())
    }

    /// `GET /users?username=` for the id, then `GET …/members/all/:id` (404: no member).
    pub(super) async fn writer(&self, login: &str) -> Result<bool, Error> {
        let Some(id) = self.lookup_user(login).await? else {
            return Ok(false);
        };
        let url = self.project_url(&format!("/members/all/{id}"))?;
        let what = format!("@{login}'s access to GitLab project {}", self.project);
        match self.api.send(Method::Get, &url, None, &what).await {
            Ok(reply) => {
                let member: MemberJson = parse(&reply.body, Method::Get, &url)?;
                Ok(member.access_level >= DEVELOPER)
            }
            Err(Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use secrecy::SecretString;

    use crate::fake::gitlab::FakeGitLab;
    use crate::gitlab::{GitLab, GitLabAuth, GitLabSettings};
    use crate::{Editor, Forge};

    #[tokio::test]
    async fn issues_by_author_editor_and_access_level() {
        let fake = FakeGitLab::start().await;
        let gl = GitLab::new(GitLabSettings {
            api_url: fake.api_url(),
            project: FakeGitLab::PROJECT_PATH.into(),
            auth: GitLabAuth::PrivateToken(SecretString::from(FakeGitLab::TOKEN.to_string())),
        })
        .unwrap();
        fake.add_issue_by("alice", "imagebump dashboard", "x");
        let made = gl
            .create_issue("imagebump dashboard", "body")
            .await
            .unwrap();
        let mine = gl.open_issues_by(FakeGitLab::BOT).await.unwrap();
        assert_eq!(
            mine.iter().map(|i| i.number).collect::<Vec<_>>(),
            [made.number]
        );
        let editors = || gl.issue_editors(made.number, FakeGitLab::BOT);
        assert_eq!(editors().await.unwrap(), Editor::Unedited);
        fake.edit_issue_as(made.number, "bob", "ticked");
        assert_eq!(editors().await.unwrap(), Editor::Users(vec!["bob".into()]));
        gl.update_issue(made.number, "t", "rewritten")
            .await
            .unwrap();
        assert_eq!(editors().await.unwrap(), Editor::Unedited, "since its own");
        for (who, body) in [("carol", "a"), ("bob", "b"), ("Carol", "c"), ("bob", "d")] {
            fake.edit_issue_as(made.number, who, body);
        }
        assert_eq!(
            editors().await.unwrap(),
            Editor::Users(vec!["bob".into(), "Carol".into()]),
            "every editor since its own change, newest first, each once"
        );
        fake.set_access_level("bob", 20);
        assert!(!gl.can_write("bob").await.unwrap(), "a reporter");
        fake.set_access_level("bob", 30);
        assert!(gl.can_write("bob").await.unwrap(), "a developer");
        assert!(!gl.can_write("nobody").await.unwrap());
        let lines: Vec<String> = fake.calls().iter().map(|c| c.line()).collect();
        let project = "/api/v4/projects/acme%2Fplatform%2Fgitops";
        let notes = format!("GET {project}/issues/{}/notes", made.number);
        assert_eq!(
            lines,
            [
                format!("POST {project}/issues"),
                format!("GET {project}/issues"),
                notes.clone(),
                notes.clone(),
                format!("PUT {project}/issues/{}", made.number),
                notes.clone(),
                notes,
                "GET /api/v4/users".into(),
                format!("GET {project}/members/all/3"),
                "GET /api/v4/users".into(),
                format!("GET {project}/members/all/3"),
                "GET /api/v4/users".into(),
            ]
        );
        assert_eq!(
            fake.calls()[1].query_value("author_username"),
            Some(FakeGitLab::BOT)
        );
    }

    /// More description changes than the pages read since imagebump's own: the older ones
    /// are nobody's to vouch for (an empty name).
    #[tokio::test]
    async fn changes_beyond_the_pages_read_are_unnamed() {
        let fake = FakeGitLab::start().await;
        let gl = GitLab::new(GitLabSettings {
            api_url: fake.api_url(),
            project: FakeGitLab::PROJECT_PATH.into(),
            auth: GitLabAuth::PrivateToken(SecretString::from(FakeGitLab::TOKEN.to_string())),
        })
        .unwrap();
        let made = gl.create_issue("d", "body").await.unwrap();
        let changes = super::MAX_NOTE_PAGES * super::PER_PAGE;
        for n in 0..changes {
            fake.edit_issue_as(made.number, "bob", &n.to_string());
        }
        let editors = || gl.issue_editors(made.number, FakeGitLab::BOT);
        assert_eq!(editors().await.unwrap(), Editor::Users(vec!["bob".into()]));
        fake.edit_issue_as(made.number, "bob", "one more");
        assert_eq!(
            editors().await.unwrap(),
            Editor::Users(vec!["bob".into(), String::new()])
        );
    }
}
