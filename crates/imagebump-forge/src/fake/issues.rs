//! The issues the three fakes keep (the dashboard's), and who may write: the state each
//! fake's issue routes read and change. How a forge answers stays in that forge's file.

use std::collections::BTreeMap;

/// An issue in a fake's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeIssue {
    pub number: u64,
    pub title: String,
    pub body: String,
    /// Who opened it.
    pub user: String,
    /// `open` or `closed` (GitLab: `opened`, `closed`).
    pub state: String,
    pub created_at: i64,
    pub updated_at: i64,
    /// Who changed the description, oldest first, with when.
    pub edits: Vec<(String, i64)>,
}

impl FakeIssue {
    /// The last account that changed the description and when; `None` when never changed.
    pub fn last_edit(&self) -> Option<&(String, i64)> {
        self.edits.last()
    }
}

/// A fake's issues and the repository's permissions, by login.
#[derive(Debug, Default)]
pub(crate) struct Issues {
    pub list: Vec<FakeIssue>,
    /// The permission word (or access level) each login has; absent: none.
    pub permissions: BTreeMap<String, String>,
}

impl Issues {
    pub fn insert(&mut self, number: u64, user: &str, (title, body): (&str, &str), now: i64) {
        self.list.push(FakeIssue {
            number,
            title: title.to_string(),
            body: body.to_string(),
            user: user.to_string(),
            state: "open".to_string(),
            created_at: now,
            updated_at: now,
            edits: Vec::new(),
        });
    }

    pub fn find(&self, number: u64) -> Option<&FakeIssue> {
        self.list.iter().find(|i| i.number == number)
    }

    /// Sets the title and the description given; a description that changes records `user`
    /// as its editor. False when there is no such issue.
    pub fn edit(
        &mut self,
        number: u64,
        user: &str,
        (title, body): (Option<&str>, Option<&str>),
        now: i64,
    ) -> bool {
        let Some(issue) = self.list.iter_mut().find(|i| i.number == number) else {
            return false;
        };
        if let Some(title) = title {
            issue.title = title.to_string();
        }
        if let Some(body) = body.filter(|b| *b != issue.body) {
            issue.body = body.to_string();
            issue.edits.push((user.to_string(), now));
        }
        issue.updated_at = now;
        true
    }

    pub fn permission(&self, login: &str) -> Option<&str> {
        self.permissions
            .iter()
            .find(|(l, _)| l.eq_ignore_ascii_case(login))
            .map(|(_, p)| p.as_str())
    }
}
