//! Finding, trusting and writing the dashboard issue through the forge, and keeping its
//! decisions as refs.

use std::path::Path;

use imagebump_forge::{Editor, Forge, Issue};
use imagebump_model::Problem;

use super::state::{Decided, State};
use super::{ticks, Steering, MARKER, NAMESPACE};
use crate::source::git::Git;

/// Where the decisions are read from and kept.
pub struct Place<'a> {
    pub git: &'a Git,
    pub root: &'a Path,
}

/// The dashboard before the run: the decisions the refs keep, changed by the boxes of
/// imagebump's own dashboard issue when everyone who changed them may write (`login`:
/// imagebump's forge account; `trust_issue_writers`: the operator's
/// `pullRequests.dashboard.trustIssueWriters`). What cannot be read is a problem; the kept
/// decisions then hold.
pub async fn read(
    forge: &dyn Forge,
    (login, trust_issue_writers): (&str, bool),
    place: &Place<'_>,
    problems: &mut Vec<Problem>,
) -> Steering {
    let kept = match place.git.remote_refs(place.root, NAMESPACE) {
        Ok(names) => names,
        Err(e) => {
            problems.push(Problem::general(format!(
                "cannot read the dashboard's decisions ({NAMESPACE}*): {e}"
            )));
            Vec::new()
        }
    };
    let state = State::from_refs(&kept);
    let mut steering = Steering {
        decided: Decided {
            state: state.clone(),
            run_now: false,
        },
        ..Steering::default()
    };
    steering.issue = match forge.open_issues_by(login).await {
        Ok(issues) => ours(issues, login),
        Err(e) => {
            problems.push(forge_problem(forge, "cannot list the dashboard issue", &e));
            return steering;
        }
    };
    if let Some(issue) = &steering.issue {
        let boxes = ticks(&issue.body);
        let wanted = state.ticked(&boxes);
        if wanted != steering.decided {
            match trusted(forge, issue, login, trust_issue_writers).await {
                Ok(None) => steering.decided = wanted,
                Ok(Some(note)) => steering.notes.push(note),
                Err(e) => problems.push(forge_problem(
                    forge,
                    "cannot tell who edited the dashboard",
                    &e,
                )),
            }
        }
    }
    let (before, after) = (state.refs(), steering.decided.state.refs());
    steering.create = after.difference(&before).cloned().collect();
    steering.delete = before.difference(&after).cloned().collect();
    steering
}

/// The dashboard among the open issues `login` opened: the lowest numbered one whose
/// description starts with the marker. Anyone else's issue never is, whatever it says.
fn ours(issues: Vec<Issue>, login: &str) -> Option<Issue> {
    issues
        .into_iter()
        .filter(|i| i.author.eq_ignore_ascii_case(login) && i.body.starts_with(MARKER))
        .min_by_key(|i| i.number)
}

/// `None` when the description's changes since imagebump's own may steer imagebump: every
/// account that changed it may write to the repository (each asked once), or, on a forge
/// that names nobody, the operator trusts everyone who may edit issues
/// (`trust_issue_writers`); else why not.
async fn trusted(
    forge: &dyn Forge,
    issue: &Issue,
    login: &str,
    trust_issue_writers: bool,
) -> Result<Option<String>, imagebump_forge::Error> {
    let editors = match forge.issue_editors(issue.number, login).await? {
        Editor::Unedited => return Ok(None),
        Editor::AnyIssueEditor if trust_issue_writers => return Ok(None),
        Editor::AnyIssueEditor => {
            return Ok(Some(format!(
                "the dashboard's boxes were ignored: {} does not say who changed them, and \
                 people who may edit issues but not the code can; the operator's \
                 pullRequests.dashboard.trustIssueWriters honours them",
                forge.name()
            )))
        }
        Editor::Users(editors) => editors,
    };
    for who in editors.iter().filter(|w| !w.eq_ignore_ascii_case(login)) {
        if who.is_empty() {
            return Ok(Some(
                "the dashboard's boxes were ignored: the forge names no account that changed them"
                    .into(),
            ));
        }
        if !forge.can_write(who).await? {
            return Ok(Some(format!(
                "the dashboard's boxes were ignored: they were changed by {who}, who cannot \
                 write to the repository"
            )));
        }
    }
    Ok(None)
}

fn forge_problem(forge: &dyn Forge, what: &str, e: &imagebump_forge::Error) -> Problem {
    Problem {
        location: forge.name().into(),
        message: format!("{what}: {e}"),
        hint: e.hint(),
    }
}

/// Keeps the decisions taken this run as refs on the remote, pointing at `commit`.
pub fn keep(
    place: &Place<'_>,
    steering: &Steering,
    commit: &str,
) -> Result<(), crate::source::git::Error> {
    place
        .git
        .create_refs(place.root, &steering.create, commit)?;
    place.git.delete_refs(place.root, &steering.delete)
}

/// What writing the dashboard did (or, in a dry run, would do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Published {
    Created(u64),
    Updated(u64),
    Unchanged(u64),
    /// A dry run: what it would write.
    WouldCreate,
    WouldUpdate(u64),
}

impl Published {
    /// What the report calls it: `created`, `updated`, `unchanged`, `would-create`,
    /// `would-update`.
    pub fn action(&self) -> &'static str {
        match self {
            Published::Created(_) => "created",
            Published::Updated(_) => "updated",
            Published::Unchanged(_) => "unchanged",
            Published::WouldCreate => "would-create",
            Published::WouldUpdate(_) => "would-update",
        }
    }

    /// The issue's number (none before it is opened).
    pub fn number(&self) -> Option<u64> {
        match self {
            Published::Created(n)
            | Published::Updated(n)
            | Published::Unchanged(n)
            | Published::WouldUpdate(n) => Some(*n),
            Published::WouldCreate => None,
        }
    }
}

/// Opens the dashboard, or rewrites it when its title or body differ from `title` and
/// `body`; nothing is written when they are the same, nor in a dry run.
pub async fn publish(
    forge: &dyn Forge,
    issue: Option<&Issue>,
    (title, body): (&str, &str),
    dry_run: bool,
) -> Result<Published, imagebump_forge::Error> {
    Ok(match (issue, dry_run) {
        (Some(i), _) if i.title == title && i.body.trim_end() == body.trim_end() => {
            Published::Unchanged(i.number)
        }
        (Some(i), true) => Published::WouldUpdate(i.number),
        (None, true) => Published::WouldCreate,
        (Some(i), false) => {
            forge.update_issue(i.number, title, body).await?;
            Published::Updated(i.number)
        }
        (None, false) => Published::Created(forge.create_issue(title, body).await?.number),
    })
}
