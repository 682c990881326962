//! Carrying out the decided actions: the push and the forge calls. A failure is recorded as
//! a problem and marks its change set failed; the rest goes on, and a re-run converges.

use std::collections::BTreeSet;

use super::decide::{Action, CLOSE_NOTE, FOREIGN_NOTE};
use super::state::is_foreign;
use super::{Context, Outcome, PullReport};
use crate::source::git::RefUpdate;
use imagebump_forge::{Forge, NewPull, Pull};
use imagebump_model::config::PullRequestsConfig;
use imagebump_model::Problem;

/// How many times a change set is rebuilt on a moved base after a rejected push.
const PUSH_ATTEMPTS: usize = 3;

/// Carry out `actions` in order; the report of each change set and each closed pull request.
/// `failed` holds the branches whose push failed (filled by the `Push` action, read by the
/// pull-request calls after it; the actions may come in two calls, split after the push).
pub async fn act(
    ctx: &Context<'_>,
    actions: Vec<Action>,
    failed: &mut BTreeSet<String>,
    problems: &mut Vec<Problem>,
) -> Vec<PullReport> {
    let mut reports = Vec::new();
    for action in actions {
        let mut report = match action {
            Action::NoteForeign {
                number,
                title,
                body,
            } => {
                note_foreign(ctx.forge, number, &title, &body, problems).await;
                continue;
            }
            a @ (Action::Label { .. }
            | Action::Assign { .. }
            | Action::Review { .. }
            | Action::Automerge { .. }) => {
                if let Some(f) = ctx.forge {
                    complete(ctx, f, a, problems).await;
                }
                continue;
            }
            Action::Push(updates) => {
                *failed = push(ctx, &updates, problems).await;
                continue;
            }
            Action::Report(report) => report,
            Action::CannotBuild { report, error } => {
                let message = format!("{}: cannot build the commit: {error}", report.branch);
                problems.push(Problem::general(message));
                report
            }
            // A branch whose push failed gets no forge call.
            Action::Open { report, .. } | Action::Update { report, .. }
                if failed.contains(&report.branch) =>
            {
                report
            }
            Action::Open {
                report,
                pull,
                automerge,
                labels,
            } => open(ctx, report, (&pull, &labels), automerge, problems).await,
            Action::Update {
                report,
                number,
                title,
                body,
            } => update(ctx.forge, report, number, &title, &body, problems).await,
            Action::Close { report, number } => close(ctx.forge, report, number, problems).await,
            Action::Supersede {
                report,
                number,
                title,
                body,
            } => supersede(ctx.forge, report, (number, &title, &body), problems).await,
        };
        if failed.contains(&report.branch) {
            report.action = Outcome::Failed;
        }
        record(ctx, &report);
        reports.push(report);
    }
    reports
}

/// The one push of every branch that changed (or GitHub's commits, `signing: github`),
/// recorded in the journal; the branches that did not get through.
async fn push(
    ctx: &Context<'_>,
    updates: &[RefUpdate],
    problems: &mut Vec<Problem>,
) -> BTreeSet<String> {
    let failed = if ctx.by_api {
        commit_by_api(ctx, updates, problems).await
    } else {
        super::off_the_runtime(|| push_all(ctx, updates, problems))
    };
    let pushed: Vec<&str> = updates
        .iter()
        .map(|u| u.branch.as_str())
        .filter(|b| !failed.contains(*b))
        .collect();
    if !ctx.dry_run && !pushed.is_empty() {
        ctx.journal
            .done(format!("pushed branch(es) {}", pushed.join(", ")));
    }
    failed
}

/// What an open pull request lacks: the configured labels, reviewers and assignees,
/// auto-merge.
async fn complete(ctx: &Context<'_>, f: &dyn Forge, action: Action, problems: &mut Vec<Problem>) {
    match action {
        Action::Label { number, labels } => {
            if let Err(e) = f.add_labels(number, &labels).await {
                let what = format!("cannot label pull request #{number}");
                problems.push(forge_problem(f, &what, &e));
            }
        }
        Action::Assign { number, assignees } => {
            if let Err(e) = f.add_assignees(number, &assignees).await {
                let what = format!("cannot assign #{number}");
                problems.push(forge_problem(f, &what, &e));
            }
        }
        Action::Review { number, reviewers } => {
            let what = format!("cannot request reviewers on #{number}");
            match f.has_reviews(number).await {
                Ok(true) => {}
                Ok(false) => {
                    if let Err(e) = f.request_reviewers(number, &reviewers).await {
                        problems.push(forge_problem(f, &what, &e));
                    }
                }
                Err(e) => problems.push(forge_problem(f, &what, &e)),
            }
        }
        Action::Automerge { pull, title, body } => {
            automerge(ctx, f, &pull, &title, &body, problems).await;
        }
        _ => {}
    }
}

/// A change set's pull request, once its forge call landed (an opened one is recorded as
/// soon as it exists, before its labels and reviewers).
fn record(ctx: &Context<'_>, report: &PullReport) {
    let Some(number) = report.number.filter(|_| !ctx.dry_run) else {
        return;
    };
    let verb = match report.action {
        Outcome::Update => "updated",
        Outcome::Close => "closed",
        _ => return,
    };
    ctx.journal
        .done(format!("{verb} pull request #{number} ({})", report.branch));
}

async fn note_foreign(
    forge: Option<&dyn Forge>,
    number: u64,
    title: &str,
    body: &str,
    problems: &mut Vec<Problem>,
) {
    let Some(f) = forge else { return };
    let r1 = f.update_pull(number, title, body).await;
    let r2 = f.comment(number, FOREIGN_NOTE).await;
    for e in [r1.err(), r2.err()].into_iter().flatten() {
        problems.push(forge_problem(f, "cannot comment", &e));
    }
}

async fn open(
    ctx: &Context<'_>,
    mut report: PullReport,
    (new, labels): (&NewPull, &[String]),
    automerge_it: bool,
    problems: &mut Vec<Problem>,
) -> PullReport {
    let Some(f) = ctx.forge else { return report };
    match f.create_pull(new).await {
        Ok(p) => {
            report.number = Some(p.number);
            report.url = Some(p.url.clone());
            if !ctx.dry_run {
                ctx.journal.done(format!(
                    "opened pull request #{} ({})",
                    p.number, new.branch
                ));
            }
            decorate(f, &p, (ctx.settings, labels), problems).await;
            if automerge_it {
                let body = super::decide::with_automerge_mark(&new.body);
                automerge(ctx, f, &p, &new.title, &body, problems).await;
            }
        }
        Err(e) if e.is_already_open() => {
            return adopt(ctx, f, report, (new, labels), problems).await
        }
        Err(e) => {
            let what = format!("cannot open a pull request for {}", new.branch);
            return failed(f, report, &what, &e, problems);
        }
    }
    report
}

/// Another run (an overlapping CronJob, a manual run) opened the pull request for this
/// branch after we listed ours: bring it in line with this plan, as on any later run.
async fn adopt(
    ctx: &Context<'_>,
    f: &dyn Forge,
    mut report: PullReport,
    (new, labels): (&NewPull, &[String]),
    problems: &mut Vec<Problem>,
) -> PullReport {
    let what = format!("cannot adopt the pull request open for {}", new.branch);
    let open = match f.open_pulls(&ctx.settings.branch_prefix).await {
        Ok(open) => open,
        Err(e) => return failed(f, report, &what, &e, problems),
    };
    let Some(p) = open.into_iter().find(|p| p.branch == new.branch) else {
        let e = imagebump_forge::Error::NotFound {
            what: format!("an open pull request for {}", new.branch),
        };
        return failed(f, report, &what, &e, problems);
    };
    // Only a pull request imagebump's own account opened into the base is adopted: one
    // someone else opened from the branch meanwhile is left as it is.
    if !super::state::is_ours(&p, ctx.login, ctx.base) {
        let e = imagebump_forge::Error::Refused {
            message: format!(
                "pull request #{} was opened by {}, not by {}; left alone",
                p.number,
                p.author,
                ctx.login.unwrap_or("imagebump's account")
            ),
        };
        return failed(f, report, &what, &e, problems);
    }
    if let Err(e) = f.update_pull(p.number, &new.title, &new.body).await {
        return failed(f, report, &what, &e, problems);
    }
    tracing::info!(
        "{}: pull request #{} was opened by another run; adopted",
        new.branch,
        p.number
    );
    report.number = Some(p.number);
    report.url = Some(p.url.clone());
    report.action = Outcome::Update;
    decorate(f, &p, (ctx.settings, labels), problems).await;
    report
}

async fn update(
    forge: Option<&dyn Forge>,
    mut report: PullReport,
    number: u64,
    title: &str,
    body: &str,
    problems: &mut Vec<Problem>,
) -> PullReport {
    let Some(f) = forge else { return report };
    match f.update_pull(number, title, body).await {
        Ok(()) => {
            report.action = Outcome::Update;
            report
        }
        Err(e) => {
            let what = format!("cannot update pull request #{number}");
            failed(f, report, &what, &e, problems)
        }
    }
}

/// The report of a change set whose forge call failed, the problem recorded.
fn failed(
    f: &dyn Forge,
    mut report: PullReport,
    what: &str,
    e: &imagebump_forge::Error,
    problems: &mut Vec<Problem>,
) -> PullReport {
    problems.push(forge_problem(f, what, e));
    report.action = Outcome::Failed;
    report
}

async fn close(
    forge: Option<&dyn Forge>,
    mut report: PullReport,
    number: u64,
    problems: &mut Vec<Problem>,
) -> PullReport {
    let Some(f) = forge else { return report };
    let c = f.comment(number, CLOSE_NOTE).await;
    let x = f.close_pull(number).await;
    for e in [c.err(), x.err()].into_iter().flatten() {
        let what = format!("cannot close pull request #{number}");
        problems.push(forge_problem(f, &what, &e));
        report.action = Outcome::Failed;
    }
    report
}

/// Close a pull request whose updates others propose in this run: first its body without a marker
/// (if that fails it stays open, so that closing it never rejects its versions), then the
/// note as a comment, then close.
async fn supersede(
    forge: Option<&dyn Forge>,
    mut report: PullReport,
    (number, title, body): (u64, &str, &str),
    problems: &mut Vec<Problem>,
) -> PullReport {
    let Some(f) = forge else { return report };
    let what = format!("cannot close pull request #{number}");
    if let Err(e) = f.update_pull(number, title, body).await {
        problems.push(forge_problem(f, &what, &e));
        report.action = Outcome::Failed;
        return report;
    }
    let c = f.comment(number, super::decide::SUPERSEDED_NOTE).await;
    let x = f.close_pull(number).await;
    for e in [c.err(), x.err()].into_iter().flatten() {
        problems.push(forge_problem(f, &what, &e));
        report.action = Outcome::Failed;
    }
    report
}

/// Turn the forge's auto-merge on for `pull`, then record in its body (`title`, `body`, the
/// body carrying the mark) that imagebump did, so that it is never turned on again. A
/// failure is reported and the next run tries again.
async fn automerge(
    ctx: &Context<'_>,
    f: &dyn Forge,
    pull: &Pull,
    title: &str,
    body: &str,
    problems: &mut Vec<Problem>,
) {
    use imagebump_model::config::MergeMethod as M;
    let method = match ctx.settings.merge_method {
        M::Merge => imagebump_forge::MergeMethod::Merge,
        M::Squash => imagebump_forge::MergeMethod::Squash,
        M::Rebase => imagebump_forge::MergeMethod::Rebase,
    };
    let result = match f.enable_automerge(pull, method).await {
        Ok(()) => f.update_pull(pull.number, title, body).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => ctx
            .journal
            .done(format!("auto-merge on for pull request #{}", pull.number)),
        Err(e) => {
            let what = format!("cannot turn auto-merge on for #{}", pull.number);
            let mut problem = forge_problem(f, &what, &e);
            problem.hint = problem.hint.or_else(|| Some(AUTOMERGE_HINT.to_string()));
            problems.push(problem);
        }
    }
}

/// What a repository needs for auto-merge, per forge.
const AUTOMERGE_HINT: &str = "the repository must allow it: GitHub \"Allow auto-merge\" and a \
    branch protection rule or ruleset with a required check; GitLab \"Pipelines must succeed\" \
    (or a pipeline on the merge request); Gitea/Forgejo a branch protection with required status \
    checks. The token needs to merge (write access); the next run tries again";

/// Labels (`labels`, its change set's), reviewers and assignees of a new pull request, as
/// configured.
async fn decorate(
    f: &dyn Forge,
    p: &Pull,
    (s, labels): (&PullRequestsConfig, &[String]),
    problems: &mut Vec<Problem>,
) {
    if !labels.is_empty() {
        if let Err(e) = f.add_labels(p.number, labels).await {
            let what = format!("cannot label pull request #{}", p.number);
            problems.push(forge_problem(f, &what, &e));
        }
    }
    if !s.reviewers.is_empty() {
        if let Err(e) = f.request_reviewers(p.number, &s.reviewers).await {
            let what = format!("cannot request reviewers on #{}", p.number);
            problems.push(forge_problem(f, &what, &e));
        }
    }
    if !s.assignees.is_empty() {
        if let Err(e) = f.add_assignees(p.number, &s.assignees).await {
            let what = format!("cannot assign #{}", p.number);
            problems.push(forge_problem(f, &what, &e));
        }
    }
}

/// Push all branches at once. A branch the remote rejects (someone pushed meanwhile) is
/// reported; the next run rebuilds it. Returns the branches that did not get through.
fn push_all(
    ctx: &Context<'_>,
    updates: &[RefUpdate],
    problems: &mut Vec<Problem>,
) -> BTreeSet<String> {
    let mut failed = BTreeSet::new();
    // Only imagebump's own branches are ever pushed in pull-request mode: never the base,
    // never a name outside the prefix (whatever a change set's group is called).
    let (mut todo, foreign): (Vec<RefUpdate>, Vec<RefUpdate>) = updates
        .iter()
        .cloned()
        .partition(|u| own_branch(&u.branch, ctx.base, &ctx.settings.branch_prefix));
    for u in foreign {
        problems.push(Problem::general(format!(
            "{}: not pushed: it is the base branch or outside the branch prefix {:?}",
            u.branch, ctx.settings.branch_prefix
        )));
        failed.insert(u.branch);
    }
    refuse_unpushable(&mut todo, &mut failed, problems);
    if todo.is_empty() {
        return failed;
    }
    for attempt in 1..=PUSH_ATTEMPTS {
        let outcome = match ctx.git.push(ctx.dir, &todo) {
            Ok(outcome) => outcome,
            Err(e) => {
                problems.push(Problem::general(format!("push failed: {e}")));
                failed.extend(todo.iter().map(|u| u.branch.clone()));
                return failed;
            }
        };
        if outcome.rejected.is_empty() {
            return failed;
        }
        let heads = ctx
            .git
            .remote_heads(ctx.dir, &ctx.settings.branch_prefix)
            .unwrap_or_default();
        let retry = retries(ctx, &todo, &outcome.rejected, &heads, attempt, problems);
        failed.extend(
            outcome
                .rejected
                .iter()
                .map(|(b, _)| b.clone())
                .filter(|b| !retry.contains(b)),
        );
        if retry.is_empty() {
            return failed;
        }
        todo = todo
            .into_iter()
            .filter(|u| retry.contains(&u.branch))
            .map(|mut u| {
                u.expected = heads.get(&u.branch).cloned();
                u
            })
            .collect();
    }
    failed
}

/// Leaves out of one push what git would refuse for the whole of it: a branch name git does
/// not take, and a second update of one branch. Each fails alone, reported; the other
/// branches are pushed.
fn refuse_unpushable(
    todo: &mut Vec<RefUpdate>,
    failed: &mut BTreeSet<String>,
    problems: &mut Vec<Problem>,
) {
    let mut seen = BTreeSet::new();
    todo.retain(|u| {
        let why = if let Err(e) = crate::source::git::branch_name(&u.branch) {
            e.to_string()
        } else if !seen.insert(u.branch.clone()) {
            "another change set pushes this branch too".to_string()
        } else {
            return true;
        };
        problems.push(Problem::general(format!("{}: not pushed: {why}", u.branch)));
        failed.insert(u.branch.clone());
        false
    });
}

/// The branches' commits created by the forge's API instead of pushed (so that the forge
/// signs them): each local commit's files and message, on the base, one branch at a time.
/// Only imagebump's own branches. Returns the branches that did not get through.
async fn commit_by_api(
    ctx: &Context<'_>,
    updates: &[RefUpdate],
    problems: &mut Vec<Problem>,
) -> BTreeSet<String> {
    let mut failed = BTreeSet::new();
    let Some(f) = ctx.forge else {
        return failed;
    };
    for u in updates {
        if !own_branch(&u.branch, ctx.base, &ctx.settings.branch_prefix) {
            problems.push(Problem::general(format!(
                "{}: not pushed: it is the base branch or outside the branch prefix",
                u.branch
            )));
            failed.insert(u.branch.clone());
            continue;
        }
        let result = match api_commit(ctx, u) {
            Ok(c) => f.commit_by_api(&c).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match result {
            Ok(sha) => tracing::info!("{}: commit {sha} created by {}", u.branch, f.name()),
            Err(e) => {
                problems.push(Problem {
                    location: f.name().to_string(),
                    message: format!("cannot commit to {} through the API: {e}", u.branch),
                    hint: None,
                });
                failed.insert(u.branch.clone());
            }
        }
    }
    failed
}

/// What the forge's API is asked to commit for `u`: the files and message of the local
/// commit, on the base commit.
fn api_commit(
    ctx: &Context<'_>,
    u: &RefUpdate,
) -> Result<imagebump_forge::ApiCommit, crate::source::git::Error> {
    let paths = ctx.git.changed_files(ctx.dir, ctx.base_commit, &u.new)?;
    let mut files = Vec::with_capacity(paths.len());
    for path in paths {
        let content = ctx
            .git
            .show_file(ctx.dir, &u.new, &path)?
            .unwrap_or_default();
        files.push((path, content));
    }
    let info = ctx.git.log(ctx.dir, &u.new, 1)?;
    let message = info
        .first()
        .map(|c| format!("{}\n\n{}", c.subject, c.body))
        .unwrap_or_default();
    Ok(imagebump_forge::ApiCommit {
        branch: u.branch.clone(),
        expected: u.expected.clone(),
        parent: ctx.base_commit.to_string(),
        message,
        files,
    })
}

/// Whether `branch` is one imagebump may push in pull-request mode.
fn own_branch(branch: &str, base: &str, prefix: &str) -> bool {
    let prefix = prefix.trim();
    branch != base
        && !prefix.is_empty()
        && branch.starts_with(prefix)
        && branch.len() > prefix.len()
}

/// The rejected branches to push again. A branch that moved under us is retried with a
/// lease on its new tip, but only when that tip is imagebump's own work (another run);
/// someone else's commits are left alone, and a refusal that did not move it is final.
/// The others are recorded as problems.
fn retries(
    ctx: &Context<'_>,
    todo: &[RefUpdate],
    rejected: &[(String, String)],
    heads: &std::collections::BTreeMap<String, String>,
    attempt: usize,
    problems: &mut Vec<Problem>,
) -> BTreeSet<String> {
    let moved: Vec<String> = rejected
        .iter()
        .filter(|(b, _)| {
            let before = todo
                .iter()
                .find(|u| &u.branch == b)
                .and_then(|u| u.expected.clone());
            heads.get(b).is_some_and(|h| Some(h) != before.as_ref())
        })
        .map(|(b, _)| b.clone())
        .collect();
    let _ = ctx.git.fetch_branches(ctx.dir, &moved, 20);
    let mut retry = BTreeSet::new();
    for (b, why) in rejected {
        let ours = moved.contains(b) && heads.get(b).is_some_and(|h| !has_foreign_commits(ctx, h));
        if ours && attempt < PUSH_ATTEMPTS {
            retry.insert(b.clone());
            continue;
        }
        let why = if moved.contains(b) && !ours {
            "someone else pushed to it during the run; left alone".to_string()
        } else {
            why.clone()
        };
        problems.push(Problem::general(format!("push of {b} rejected: {why}")));
    }
    retry
}

/// Whether the commits on `tip` since the base include any not made by imagebump.
fn has_foreign_commits(ctx: &Context<'_>, tip: &str) -> bool {
    let log = ctx
        .git
        .log(ctx.dir, &format!("{}..{tip}", ctx.base_commit), 50)
        .unwrap_or_default();
    log.iter()
        .any(|c| is_foreign(c, &ctx.settings.author.email, ctx.by_api))
}

pub fn forge_problem(f: &dyn Forge, what: &str, e: &imagebump_forge::Error) -> Problem {
    Problem {
        location: f.name().to_string(),
        message: format!("{what}: {e}"),
        hint: e.hint(),
    }
}

#[cfg(test)]
mod branch_tests {
    use super::{own_branch, refuse_unpushable, BTreeSet, RefUpdate};

    #[test]
    fn a_branch_git_refuses_or_pushed_twice_fails_alone() {
        let update = |branch: &str, new: &str| RefUpdate {
            branch: branch.into(),
            new: new.into(),
            expected: None,
        };
        let mut todo = vec![
            update("imagebump/web", "a1"),
            update("imagebump/db.lock", "b2"),
            update("imagebump/web", "c3"),
            update("imagebump/api", "d4"),
        ];
        let (mut failed, mut problems) = (BTreeSet::new(), Vec::new());
        refuse_unpushable(&mut todo, &mut failed, &mut problems);
        assert_eq!(
            todo,
            [update("imagebump/web", "a1"), update("imagebump/api", "d4")]
        );
        let failed: Vec<&str> = failed.iter().map(String::as_str).collect();
        assert_eq!(failed, ["imagebump/db.lock", "imagebump/web"]);
        let messages: Vec<String> = problems.iter().map(|p| p.message.clone()).collect();
        assert_eq!(
            messages,
            [
                "imagebump/db.lock: not pushed: invalid branch name \"imagebump/db.lock\" for git",
                "imagebump/web: not pushed: another change set pushes this branch too",
            ]
        );
    }

    #[test]
    fn only_branches_under_the_prefix_other_than_the_base() {
        assert!(own_branch("imagebump/web", "main", "imagebump/"));
        assert!(!own_branch("main", "main", "ma"));
        assert!(!own_branch("main", "main", ""));
        assert!(!own_branch("imagebump/", "main", "imagebump/"));
        assert!(!own_branch("release/1", "main", "imagebump/"));
        assert!(!own_branch("deps-main", "deps-main", "deps-"));
    }
}
