//! Pull-request mode: every change set becomes a commit on its own branch, built from the
//! same base commit without checking anything out; all changed branches go up in one
//! `git push`; then the forge's pull requests are created, updated or closed to match.
//! Stateless: what was proposed before is read back from the branches, the pull requests
//! (their hidden marker) and the commits' trailers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use super::marker::{self, Marked};
use crate::config::PullRequestsConfig;
use crate::forge::{Forge, NewPull, Pull, PullState};
use crate::plan::{ChangeSet, Plan, Update};
use crate::resolve::Rejections;
use crate::source::git::{CommitInfo, Error as GitError, Git, NewCommit, RefUpdate, Signature};
use imagebump_model::name::parse_name;
use imagebump_model::Problem;

/// How many times a change set is rebuilt on a moved base after a rejected push.
const PUSH_ATTEMPTS: usize = 3;

/// What happened (or, in a dry run, would happen) to one change set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// A new branch and pull request.
    Create,
    /// The branch moved to a new commit and the pull request was brought up to date.
    Update,
    /// Branch and pull request already as they should be: nothing written.
    Unchanged,
    /// Not opened: `--max-prs` was reached.
    Deferred,
    /// Left alone: someone else committed to the branch.
    HumanCommits,
    /// The pull request was closed: the base already has what it proposed.
    Close,
    /// The push or a forge call failed (see the errors); a re-run converges.
    Failed,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PullReport {
    pub group: String,
    pub branch: String,
    pub title: String,
    pub action: Action,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// Everything pull-request mode needs besides the plan.
pub struct Context<'a> {
    pub git: &'a Git,
    pub dir: &'a Path,
    /// The base branch and the commit the plan was made from.
    pub base: &'a str,
    pub base_commit: &'a str,
    pub forge: Option<&'a dyn Forge>,
    pub settings: &'a PullRequestsConfig,
    pub max_new: Option<usize>,
    pub dry_run: bool,
    /// Source repositories of the new images (their `org.opencontainers.image.source`
    /// label), by (image, tag), for links in pull-request bodies.
    pub sources: &'a BTreeMap<(String, String), String>,
    /// `--shard I/N`: only this shard's pull requests may be closed.
    pub shard: Option<(u64, u64)>,
}

/// The branch of a change set: the prefix and a slug of the group key, stable across runs.
pub fn branch_name(prefix: &str, group: &str) -> String {
    let mut slug = String::new();
    for c in group.to_lowercase().chars() {
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_matches(|c| c == '-' || c == '.').to_string();
    let slug = if slug.is_empty() {
        "root".to_string()
    } else {
        slug
    };
    // Long slugs are cut, with a short hash of the exact key so two groups never share one.
    if slug.len() > 60 {
        use sha2::Digest;
        let hash = format!("{:x}", sha2::Sha256::digest(group.as_bytes()));
        let short: String = slug.chars().take(50).collect();
        return format!("{prefix}{}-{}", short.trim_end_matches('-'), &hash[..8]);
    }
    format!("{prefix}{slug}")
}

/// The pull-request title.
pub fn title(set: &ChangeSet, updates: &[&Update], template: Option<&str>) -> String {
    let (image, from, to) = match updates {
        [u] => (u.name.as_str(), u.from.as_str(), u.to.as_str()),
        _ => ("", "", ""),
    };
    let default = match updates {
        [u] => format!("Update {} to {}", u.name, marker::tag_of(&u.to)),
        _ => format!("Update {} images in {}", updates.len(), set.group),
    };
    match template {
        None => default,
        Some(t) => t
            .replace("{group}", &set.group)
            .replace("{image}", image)
            .replace("{from}", from)
            .replace("{to}", to)
            .replace("{count}", &updates.len().to_string()),
    }
}

/// The pull-request body: a table for people (with a link to the image's source and
/// releases when its label names them), the marker for the next run.
pub fn body(
    set: &ChangeSet,
    updates: &[&Update],
    sources: &BTreeMap<(String, String), String>,
) -> String {
    let mut s = format!(
        "imagebump updates {} image reference(s) in `{}`.\n\n| Image | From | To | File | Source |\n|---|---|---|---|---|\n",
        updates.len(),
        set.group
    );
    for u in updates {
        let file = u.written_to.as_deref().unwrap_or(&u.file);
        let tag = marker::tag_of(&u.to).to_string();
        let link = match sources.get(&(u.image.clone(), tag)) {
            Some(src) if src.starts_with("https://github.com/") => {
                let repo = src.trim_end_matches('/').trim_end_matches(".git");
                format!("[source]({repo}) · [releases]({repo}/releases)")
            }
            Some(src) if src.starts_with("https://") => format!("[source]({src})"),
            _ => String::new(),
        };
        s.push_str(&format!(
            "| `{}` | `{}` | `{}` | `{}` | {link} |\n",
            u.name, u.from, u.to, file
        ));
    }
    s.push_str("\nClosing this pull request without merging rejects these versions: imagebump will not propose them again, and a newer version opens a new pull request. Reverting the merged commit does the same.\n\n");
    let marked: Vec<Marked> = updates.iter().map(|u| Marked::from(*u)).collect();
    s.push_str(&marker::render(&marked));
    s.push('\n');
    s
}

/// The commit message: the title, then one trailer per update.
pub fn commit_message(title: &str, updates: &[&Update]) -> String {
    let mut s = format!("{title}\n\n");
    for u in updates {
        s.push_str(&marker::trailer(&Marked::from(*u)));
        s.push('\n');
    }
    s
}

/// Versions reviewers rejected: pull requests closed without merging (their marker) and
/// reverted imagebump commits (their trailers), within the base branch's recent history.
pub fn rejections(closed: &[Pull], history: &[CommitInfo]) -> Rejections {
    let mut out: Rejections = Default::default();
    let mut reject = |image: &str, to: &str, why: String| {
        if let Ok(name) = parse_name(image) {
            out.entry(name)
                .or_default()
                .entry(marker::tag_of(to).to_string())
                .or_insert(why);
        }
    };
    for p in closed.iter().filter(|p| p.state == PullState::Closed) {
        for u in marker::parse(&p.body).unwrap_or_default() {
            reject(
                &u.image,
                &u.to,
                format!("pull request #{} was closed without merging", p.number),
            );
        }
    }
    let by_sha: BTreeMap<&str, &CommitInfo> = history.iter().map(|c| (c.sha.as_str(), c)).collect();
    for c in history {
        let Some(reverted) = reverted_sha(&c.body) else {
            continue;
        };
        let Some(original) = by_sha.get(reverted) else {
            continue;
        };
        for (k, v) in &original.trailers {
            if k.eq_ignore_ascii_case(marker::TRAILER) {
                if let Some((image, _, to)) = marker::parse_trailer(v) {
                    reject(
                        &image,
                        &to,
                        format!(
                            "commit {} was reverted by {}",
                            short(reverted),
                            short(&c.sha)
                        ),
                    );
                }
            }
        }
    }
    out
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(10)]
}

/// `This reverts commit <sha>.` in a commit message (as `git revert` writes it).
fn reverted_sha(body: &str) -> Option<&str> {
    let rest = &body[body.find("This reverts commit ")? + "This reverts commit ".len()..];
    let sha = rest.split(|c: char| !c.is_ascii_hexdigit()).next()?;
    (sha.len() >= 7).then_some(sha)
}

/// A branch's state on the remote, as far as this run needs it.
struct Remote {
    sha: String,
    /// Someone else committed to it (not an imagebump commit on the base).
    foreign: bool,
    /// Its tip's parent is the base commit, and its tree.
    parent_is_base: bool,
    tree: Option<String>,
}

/// A change set on its way: its branch, title, updates, and its commit among those built
/// (`None`: the branch is left to the person who committed to it).
type Step<'a> = (
    &'a ChangeSet,
    &'a String,
    String,
    Vec<&'a Update>,
    Option<usize>,
);

/// Bring branches and pull requests in line with the plan. Problems are returned; the run
/// goes on with the other change sets.
pub async fn deliver(ctx: &Context<'_>, plan: &Plan) -> (Vec<PullReport>, Vec<Problem>) {
    let prefix = ctx.settings.branch_prefix.as_str();
    let author = Signature {
        name: ctx.settings.author.name.clone(),
        email: ctx.settings.author.email.clone(),
    };
    let mut problems = Vec::new();
    let mut reports = Vec::new();

    let heads = match ctx.git.remote_heads(ctx.dir, prefix) {
        Ok(h) => h,
        Err(e) => {
            problems.push(Problem::general(format!(
                "cannot list the remote's branches: {e}"
            )));
            return (reports, problems);
        }
    };
    let open: BTreeMap<String, Pull> = match ctx.forge {
        Some(f) => match f.open_pulls(prefix).await {
            Ok(pulls) => pulls.into_iter().map(|p| (p.branch.clone(), p)).collect(),
            Err(e) => {
                problems.push(forge_problem(f, "cannot list pull requests", &e));
                return (reports, problems);
            }
        },
        None => BTreeMap::new(),
    };
    let wanted: Vec<(&ChangeSet, String)> = plan
        .change_sets
        .iter()
        .map(|s| (s, branch_name(prefix, &s.group)))
        .collect();
    let existing: Vec<String> = wanted
        .iter()
        .filter(|(_, b)| heads.contains_key(b))
        .map(|(_, b)| b.clone())
        .collect();
    if !existing.is_empty() {
        if let Err(e) = ctx.git.fetch_branches(ctx.dir, &existing, 20) {
            problems.push(Problem::general(format!(
                "cannot fetch imagebump's branches: {e}"
            )));
        }
    }
    let remote: BTreeMap<String, Remote> = existing
        .iter()
        .filter_map(|b| {
            let sha = heads.get(b)?.clone();
            let log = ctx
                .git
                .log(ctx.dir, &format!("{}..{sha}", ctx.base_commit), 50)
                .unwrap_or_default();
            let foreign = log.iter().any(|c| is_foreign(c, &author.email));
            let parent_is_base = log.len() == 1
                && log[0].parents.first().map(String::as_str) == Some(ctx.base_commit);
            let tree = ctx.git.tree_of(ctx.dir, &sha).ok();
            Some((
                b.clone(),
                Remote {
                    sha,
                    foreign,
                    parent_is_base,
                    tree,
                },
            ))
        })
        .collect();

    // Which change sets get a commit (not the branches someone else committed to), in order.
    let mut steps: Vec<Step> = Vec::new();
    let mut commits: Vec<NewCommit> = Vec::new();
    for (set, branch) in &wanted {
        let ups: Vec<&Update> = set
            .updates
            .iter()
            .filter_map(|&i| plan.updates.get(i))
            .collect();
        let title = title(set, &ups, ctx.settings.title.as_deref());
        let existing_pull = open.get(branch);
        if let Some(r) = remote.get(branch) {
            if r.foreign {
                if let (Some(f), Some(p), false) = (ctx.forge, existing_pull, ctx.dry_run) {
                    let note = "imagebump leaves this branch alone: it has commits by someone else. Merge or close this pull request; imagebump proposes newer versions on a fresh branch once it is gone.";
                    if !p.body.contains(note) {
                        let body = format!("{}\n\n> {note}\n", p.body.trim_end());
                        let r1 = f.update_pull(p.number, &p.title, &body).await;
                        let r2 = f.comment(p.number, note).await;
                        for e in [r1.err(), r2.err()].into_iter().flatten() {
                            problems.push(forge_problem(f, "cannot comment", &e));
                        }
                    }
                }
                steps.push((set, branch, title, ups, None));
                continue;
            }
        }
        commits.push(NewCommit {
            files: set
                .changes
                .iter()
                .map(|c| (c.file.clone(), c.after.clone().into_bytes()))
                .collect(),
            message: commit_message(&title, &ups),
        });
        steps.push((set, branch, title, ups, Some(commits.len() - 1)));
    }
    // Commits for every change set, all from the same base, built at once. (A change set
    // deferred below by --max-prs gets a commit too, left unused in the clone.)
    let mut built: Vec<Option<Result<String, GitError>>> = ctx
        .git
        .commit_many(ctx.dir, ctx.base_commit, &commits, &author, &author)
        .into_iter()
        .map(Some)
        .collect();

    let mut updates_to_push: Vec<RefUpdate> = Vec::new();
    let mut pending: Vec<(&ChangeSet, String, String, Vec<&Update>, Action)> = Vec::new();
    let mut new_count = 0;
    for (set, branch, title, ups, commit) in steps {
        let existing_pull = open.get(branch);
        let Some(k) = commit else {
            reports.push(report(
                set,
                branch,
                &title,
                Action::HumanCommits,
                existing_pull,
            ));
            continue;
        };
        if existing_pull.is_none() && ctx.max_new.is_some_and(|m| new_count >= m) {
            reports.push(report(set, branch, &title, Action::Deferred, None));
            continue;
        }
        // commit_many answers for every commit it was given.
        let result = built.get_mut(k).and_then(Option::take).unwrap_or_else(|| {
            Err(GitError::Output {
                command: "fast-import".to_string(),
                detail: "no commit built".to_string(),
            })
        });
        let commit = match result {
            Ok(c) => c,
            Err(e) => {
                problems.push(Problem::general(format!(
                    "{branch}: cannot build the commit: {e}"
                )));
                reports.push(report(set, branch, &title, Action::Failed, existing_pull));
                continue;
            }
        };
        let same_content = remote.get(branch).is_some_and(|r| {
            r.parent_is_base && r.tree.is_some() && r.tree == ctx.git.tree_of(ctx.dir, &commit).ok()
        });
        let action = match (existing_pull, same_content) {
            (None, _) => {
                new_count += 1;
                Action::Create
            }
            (Some(_), true) => Action::Unchanged,
            (Some(_), false) => Action::Update,
        };
        if !same_content {
            updates_to_push.push(RefUpdate {
                branch: branch.clone(),
                new: commit,
                expected: remote.get(branch).map(|r| r.sha.clone()),
            });
        }
        pending.push((set, branch.clone(), title, ups, action));
    }

    // One push for every branch that changed.
    let mut failed_branches: BTreeSet<String> = BTreeSet::new();
    if !ctx.dry_run && !updates_to_push.is_empty() {
        failed_branches = push_all(ctx, &updates_to_push, &mut problems);
    }

    // Pull requests.
    for (set, branch, title, ups, action) in pending {
        let existing_pull = open.get(&branch);
        if failed_branches.contains(&branch) {
            reports.push(report(set, &branch, &title, Action::Failed, existing_pull));
            continue;
        }
        let body = body(set, &ups, ctx.sources);
        let mut out = report(set, &branch, &title, action.clone(), existing_pull);
        if let (Some(f), false) = (ctx.forge, ctx.dry_run) {
            match existing_pull {
                Some(p) => {
                    let current = marker::parse(&p.body);
                    let wanted = marker::parse(&body);
                    if p.title != title || current != wanted {
                        match f.update_pull(p.number, &title, &body).await {
                            Ok(()) => out.action = Action::Update,
                            Err(e) => {
                                problems.push(forge_problem(
                                    f,
                                    &format!("cannot update pull request #{}", p.number),
                                    &e,
                                ));
                                out.action = Action::Failed;
                            }
                        }
                    }
                }
                None => {
                    let new = NewPull {
                        branch: branch.clone(),
                        base: ctx.base.to_string(),
                        title: title.clone(),
                        body,
                        draft: ctx.settings.draft,
                    };
                    match f.create_pull(&new).await {
                        Ok(p) => {
                            out.number = Some(p.number);
                            out.url = Some(p.url.clone());
                            decorate(f, &p, ctx.settings, &mut problems).await;
                        }
                        Err(e) => {
                            problems.push(forge_problem(
                                f,
                                &format!("cannot open a pull request for {branch}"),
                                &e,
                            ));
                            out.action = Action::Failed;
                        }
                    }
                }
            }
        }
        reports.push(out);
    }

    // Open pull requests whose change set is gone: the base has their versions now.
    let planned: BTreeSet<&String> = wanted.iter().map(|(_, b)| b).collect();
    for (branch, p) in &open {
        if planned.contains(branch) || ctx.dry_run {
            continue;
        }
        let Some(marked) = marker::parse(&p.body) else {
            continue;
        };
        let ours = match ctx.shard {
            None => true,
            Some((i, n)) => marked
                .first()
                .is_some_and(|u| crate::plan::shard_of(&u.group, n) == i),
        };
        if !ours {
            continue;
        }
        if !marked.iter().all(|u| plan_settled(plan, u)) {
            continue;
        }
        let mut r = PullReport {
            group: String::new(),
            branch: branch.clone(),
            title: p.title.clone(),
            action: Action::Close,
            number: Some(p.number),
            url: Some(p.url.clone()),
        };
        if let Some(f) = ctx.forge {
            let note = "The base branch already has these versions (merged elsewhere, or moved on); closing.";
            let c = f.comment(p.number, note).await;
            let x = f.close_pull(p.number).await;
            for e in [c.err(), x.err()].into_iter().flatten() {
                problems.push(forge_problem(
                    f,
                    &format!("cannot close pull request #{}", p.number),
                    &e,
                ));
                r.action = Action::Failed;
            }
        }
        reports.push(r);
    }
    (reports, problems)
}

/// The plan has nothing left to do for `u`: no planned update of that image in that file.
fn plan_settled(plan: &Plan, u: &Marked) -> bool {
    !plan
        .updates
        .iter()
        .any(|p| p.image == u.image && p.written_to.as_deref().unwrap_or(&p.file) == u.file)
}

async fn decorate(f: &dyn Forge, p: &Pull, s: &PullRequestsConfig, problems: &mut Vec<Problem>) {
    if !s.labels.is_empty() {
        if let Err(e) = f.add_labels(p.number, &s.labels).await {
            problems.push(forge_problem(
                f,
                &format!("cannot label pull request #{}", p.number),
                &e,
            ));
        }
    }
    if !s.reviewers.is_empty() {
        if let Err(e) = f.request_reviewers(p.number, &s.reviewers).await {
            problems.push(forge_problem(
                f,
                &format!("cannot request reviewers on #{}", p.number),
                &e,
            ));
        }
    }
    if !s.assignees.is_empty() {
        if let Err(e) = f.add_assignees(p.number, &s.assignees).await {
            problems.push(forge_problem(
                f,
                &format!("cannot assign #{}", p.number),
                &e,
            ));
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
    let mut todo = updates.to_vec();
    for attempt in 1..=PUSH_ATTEMPTS {
        match ctx.git.push(ctx.dir, &todo) {
            Ok(outcome) => {
                if outcome.rejected.is_empty() {
                    return failed;
                }
                // A branch that moved under us is retried with a lease on its new tip, but
                // only when that tip is imagebump's own work (another run); someone else's
                // commits are left alone, and a refusal that did not move it is final.
                let heads = ctx
                    .git
                    .remote_heads(ctx.dir, &ctx.settings.branch_prefix)
                    .unwrap_or_default();
                let moved: Vec<String> = outcome
                    .rejected
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
                for (b, why) in &outcome.rejected {
                    let ours = moved.contains(b)
                        && heads.get(b).is_some_and(|h| !has_foreign_commits(ctx, h));
                    if ours && attempt < PUSH_ATTEMPTS {
                        retry.insert(b.clone());
                    } else {
                        let why = if moved.contains(b) && !ours {
                            "someone else pushed to it during the run; left alone".to_string()
                        } else {
                            why.clone()
                        };
                        problems.push(Problem::general(format!("push of {b} rejected: {why}")));
                        failed.insert(b.clone());
                    }
                }
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
            Err(e) => {
                problems.push(Problem::general(format!("push failed: {e}")));
                failed.extend(todo.iter().map(|u| u.branch.clone()));
                return failed;
            }
        }
    }
    failed
}

/// Whether the commits on `tip` since the base include any not made by imagebump (another
/// author, or no `Imagebump-Update` trailer).
fn has_foreign_commits(ctx: &Context<'_>, tip: &str) -> bool {
    let log = ctx
        .git
        .log(ctx.dir, &format!("{}..{tip}", ctx.base_commit), 50)
        .unwrap_or_default();
    log.iter()
        .any(|c| is_foreign(c, &ctx.settings.author.email))
}

fn is_foreign(c: &CommitInfo, email: &str) -> bool {
    c.author.email != email
        || !c
            .trailers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(marker::TRAILER))
}

fn report(
    set: &ChangeSet,
    branch: &str,
    title: &str,
    action: Action,
    pull: Option<&Pull>,
) -> PullReport {
    PullReport {
        group: set.group.clone(),
        branch: branch.to_string(),
        title: title.to_string(),
        action,
        number: pull.map(|p| p.number),
        url: pull.map(|p| p.url.clone()),
    }
}

fn forge_problem(f: &dyn Forge, what: &str, e: &crate::forge::Error) -> Problem {
    Problem {
        location: f.name().to_string(),
        message: format!("{what}: {e}"),
        hint: e.hint(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names_are_stable_slugs() {
        assert_eq!(branch_name("imagebump/", "web"), "imagebump/web");
        assert_eq!(branch_name("imagebump/", "apps/web"), "imagebump/apps-web");
        assert_eq!(
            branch_name("imagebump/", "team-a/batch"),
            "imagebump/team-a-batch"
        );
        assert_eq!(branch_name("imagebump/", "."), "imagebump/root");
        let long = "a".repeat(80);
        let b = branch_name("imagebump/", &long);
        assert!(b.len() < 80 && b.starts_with("imagebump/aaaa"), "{b}");
        assert_eq!(b, branch_name("imagebump/", &long));
    }

    #[test]
    fn bodies_link_to_the_image_source_and_carry_the_marker() {
        let set = ChangeSet {
            group: "apps/web".into(),
            files: vec!["apps/web/kustomization.yaml".into()],
            updates: vec![0],
            changes: Vec::new(),
        };
        let u = Update {
            file: "apps/web/kustomization.yaml".into(),
            line: 3,
            column: 13,
            kind: crate::discover::RefKind::Kustomize,
            image: "ghcr.io/acme/web".into(),
            name: "ghcr.io/acme/web".into(),
            from: "1.2.0".into(),
            to: "1.3.0".into(),
            group: "apps/web".into(),
            written_to: None,
        };
        let mut sources = BTreeMap::new();
        sources.insert(
            ("ghcr.io/acme/web".to_string(), "1.3.0".to_string()),
            "https://github.com/acme/web".to_string(),
        );
        let b = body(&set, &[&u], &sources);
        assert!(b.contains("| `ghcr.io/acme/web` | `1.2.0` | `1.3.0` | `apps/web/kustomization.yaml` | [source](https://github.com/acme/web) · [releases](https://github.com/acme/web/releases) |"), "{b}");
        assert_eq!(marker::parse(&b).unwrap(), vec![Marked::from(&u)]);
        assert_eq!(title(&set, &[&u], None), "Update ghcr.io/acme/web to 1.3.0");
        assert_eq!(
            commit_message("t", &[&u]),
            "t\n\nImagebump-Update: ghcr.io/acme/web 1.2.0 -> 1.3.0\n"
        );
    }

    #[test]
    fn reverts_and_closed_pulls_reject_their_versions() {
        let marked = Marked {
            image: "ghcr.io/acme/web".into(),
            group: "apps/web".into(),
            file: "apps/web/kustomization.yaml".into(),
            from: "1.2.0".into(),
            to: "1.3.0".into(),
        };
        let closed = Pull {
            number: 7,
            branch: "imagebump/web".into(),
            base: "main".into(),
            title: "t".into(),
            body: marker::render(&[marked]),
            state: PullState::Closed,
            url: String::new(),
            labels: Vec::new(),
            draft: false,
        };
        let sig = Signature {
            name: "a".into(),
            email: "a@b".into(),
        };
        let original = CommitInfo {
            sha: "1111111111aaaa".into(),
            parents: vec![],
            author: sig.clone(),
            committer: sig.clone(),
            subject: "Update api".into(),
            body: String::new(),
            trailers: vec![(
                "Imagebump-Update".into(),
                "ghcr.io/acme/api 2.0.0 -> 2.1.0".into(),
            )],
        };
        let revert = CommitInfo {
            sha: "2222222222bbbb".into(),
            subject: "Revert \"Update api\"".into(),
            body: "This reverts commit 1111111111aaaa.\n".into(),
            trailers: vec![],
            ..original.clone()
        };
        let r = rejections(&[closed], &[revert, original]);
        let web = parse_name("ghcr.io/acme/web").unwrap();
        let api = parse_name("ghcr.io/acme/api").unwrap();
        assert_eq!(
            r[&web]["1.3.0"],
            "pull request #7 was closed without merging"
        );
        assert_eq!(
            r[&api]["2.1.0"],
            "commit 1111111111 was reverted by 2222222222"
        );
    }
}
