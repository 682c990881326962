//! `imagebump run`: source → discover → resolve → plan → deliver, then the report.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use super::source::{self, Loaded};
use super::{Error, Mode, Output, RunPlan, Status};
use crate::chart::app_version::OciVersion;
use crate::chunked::Chunked;
use crate::cli::Format;
use crate::deliver::pulls::PullReport;
use crate::deliver::push::{push_to_base, PushError};
use crate::discover::{self, Discovery};
use crate::forge::connect::Connected;
use crate::plan::{self, Plan};
use crate::progress::Journal;
use crate::promote::seen::Seen;
use crate::registry::cache::DiskCache;
use crate::registry::Registries;
use crate::report::{self, Counts, RunReport};
use crate::resolve::schedule::{Gate, Overrides};
use crate::resolve::{self, Rejections, Resolved};
use imagebump_forge::Forge;
use imagebump_model::env::EnvVars;
use imagebump_model::Problem;

/// How many times `--push` analyses a moved base again.
const PUSH_ATTEMPTS: usize = 3;

/// What the stages found and did, for the report.
struct Analysed {
    /// The major updates `approveMajors` held or let through (the dashboard's).
    awaiting: Vec<crate::deliver::dashboard::Waiting>,
    found: Discovery,
    resolved: Resolved,
    plan: Plan,
    /// `--push`: the commit pushed to the base.
    pushed: Option<String>,
    /// What `promoteFrom` rules took from the base's history (src/promote).
    promotions: crate::promote::Promotions,
    /// The promotion path of each promoted update, for pull-request bodies.
    promoted: BTreeMap<(String, String), String>,
}

/// Before anything is asked: the configuration's warnings said, and what cannot be done
/// refused.
fn check_opened(plan: &RunPlan, loaded: &Loaded, out: &Output) -> Result<(), Error> {
    for w in &loaded.config_warnings {
        out.warning(w);
    }
    check_base(plan, loaded, out)?;
    refuse_push_by_api(plan, loaded)
}

pub async fn run(plan: &RunPlan, out: &Output, journal: &Journal) -> Result<Status, Error> {
    // The forge first: its token (a GitHub App's installation token) also clones and pushes.
    let connected = connect_forge(plan, out).await?;
    let depth = history_depth(plan);
    let mut loaded = source::open(&plan.source, git_token(connected.as_ref()), depth)?;
    let forge: Option<&dyn Forge> = connected.as_ref().map(|c| c.forge.as_ref());
    check_opened(plan, &loaded, out)?;
    let mut problems: Vec<Problem> = Vec::new();
    let (dashboard, decisions) = decide_first(plan, &loaded, (forge, out), &mut problems).await;
    let registries = registries_of(plan, &loaded, out)?;
    let approved = super::run_dashboard::approved(dashboard.as_ref());
    let known = (
        (&decisions.rejections, approved),
        &gate(plan, &loaded, &decisions),
    );
    let mut analysed = analyse(plan, &mut loaded, &registries, known, out, &mut problems).await;
    problems.splice(0..0, analysed.found.problems.iter().cloned());
    problems.extend(analysed.resolved.problems.iter().cloned());
    problems.extend(analysed.plan.problems.iter().cloned());
    apply_locally(plan, &loaded, &analysed, &mut problems, journal);
    let max_new = max_new(plan, &loaded, decisions.known);
    let max_new = steer(dashboard.as_ref(), max_new, &mut analysed.resolved.warnings);
    let split = split_delivery(plan, &loaded, &analysed);
    let direct = split
        .as_ref()
        .and_then(|(push, _)| push_direct(plan, &loaded, push, &mut problems, journal));
    let pulls = pull_requests(
        plan,
        &loaded,
        forge,
        &registries,
        (
            split.as_ref().map_or(&analysed.plan, |(_, pr)| pr),
            direct.as_deref(),
            (&decisions, &analysed),
        ),
        (max_new, journal),
        &mut problems,
    )
    .await;
    let board = (forge, dashboard.as_ref(), pulls.as_deref());
    let (dashboard, preview) =
        dashboard_write(plan, board, (&analysed, &decisions), &mut problems).await;
    let mut run_report = RunReport {
        version: 1,
        mode: plan.mode.name(),
        pushed: analysed.pushed.as_deref().or(direct.as_deref()),
        pull_requests: pulls.as_deref(),
        commit: loaded.ws.commit.as_deref(),
        counts: Counts::of(&analysed.found, &analysed.resolved, &analysed.plan),
        updates: (analysed.plan).rows(&analysed.found, &analysed.resolved.outcomes),
        change_sets: &analysed.plan.change_sets,
        not_updated: report::not_updated_of(&analysed.found, &analysed.resolved, &analysed.plan),
        requests: registries.stats.snapshot(),
        registry_traffic: registries.stats.traffic(),
        rejections_in_force: report::rejections_in_force(&decisions.rejections),
        notifications: Vec::new(),
        dashboard,
        ages: report::AgeReport::of(&analysed.resolved.sightings),
        warnings: &analysed.resolved.warnings,
        errors: &problems,
    };
    let mut late = super::operate::publish(plan, out, &loaded, &mut run_report).await;
    late.extend(write_page(plan, &run_report, &analysed, &decisions));
    match out.format {
        Format::Json => super::output::print_json(&run_report),
        Format::Text => print_text(plan.mode, &run_report, analysed_text(&analysed), out),
    }
    let direct_part = split.as_ref().map(|(direct, _)| direct);
    if out.format == Format::Text {
        preview_push(plan, &loaded, (&analysed.plan, direct_part), &mut problems);
    }
    super::run_dashboard::print(preview.as_deref(), out);
    out.warnings(&analysed.resolved.warnings);
    out.errors(&problems);
    out.errors(&late);
    Ok(end(plan, (&problems, &late), analysed))
}

/// `--report-html`: the run's page (src/report/html); a file that cannot be written is a
/// problem (exit 1), as for `--report`.
fn write_page(
    plan: &RunPlan,
    report: &RunReport,
    analysed: &Analysed,
    decisions: &Decisions,
) -> Vec<Problem> {
    use crate::report::html;
    let Some(path) = &plan.operate.report_html else {
        return Vec::new();
    };
    let found = &analysed.found;
    let rows = crate::promote::status::rows(found, &analysed.promotions, &decisions.rejections);
    let repository = super::operate::repository(plan);
    let fleet = html::fleet::of_run(&html::fleet::Run {
        found,
        outcomes: &analysed.resolved.outcomes,
        promotions: &analysed.promotions,
        rows: &rows,
        refused: &analysed.plan.refused,
        report,
        repository: &repository,
    });
    match super::operate::write_atomic(path, &html::page(&fleet), true) {
        Ok(()) => Vec::new(),
        Err(e) => vec![Problem::general(format!(
            "--report-html {}: {e}",
            path.display()
        ))],
    }
}

/// What the analysis leaves to do here: journal the push it made, and make `--write`'s
/// edits.
fn apply_locally(
    plan: &RunPlan,
    loaded: &Loaded,
    analysed: &Analysed,
    problems: &mut Vec<Problem>,
    journal: &Journal,
) {
    if let Some(sha) = &analysed.pushed {
        journal.done(format!("pushed {sha} to {}", base_branch(plan, loaded)));
    }
    if plan.mode == Mode::Write {
        write(loaded, &analysed.plan, problems, journal);
    }
}

/// The dashboard (when it is on) and what holds updates back before the analysis: the
/// rejections, less those the dashboard lifts, and the dashboard's switches.
async fn decide_first(
    plan: &RunPlan,
    loaded: &Loaded,
    (forge, out): (Option<&dyn Forge>, &Output),
    problems: &mut Vec<Problem>,
) -> (Option<super::run_dashboard::Dashboard>, Decisions) {
    let dashboard = super::run_dashboard::read(plan, loaded, forge, problems).await;
    let lifted = super::run_dashboard::lifted(dashboard.as_ref());
    let login = dashboard.as_ref().map(|d| d.login.as_str());
    let mut decisions = rejections(plan, loaded, (forge, out), (login, &lifted), problems).await;
    decisions.overrides = super::run_dashboard::overrides(dashboard.as_ref());
    (dashboard, decisions)
}

/// The run's status. `analysed` is not freed: the process ends right after (`run` is the
/// command's last step), and freeing every reference, update and text one by one would
/// spend a large run's CPU on memory the kernel takes back whole at exit.
fn end(plan: &RunPlan, (problems, late): (&[Problem], &[Problem]), analysed: Analysed) -> Status {
    let status = status(plan, problems, late, &analysed.plan);
    std::mem::forget(analysed);
    status
}

/// A remote whose clone is on no branch (its `HEAD` detached or naming a tag, `--ref` naming
/// a tag or a commit, an empty repository) has no base to deliver to: pull-request mode and
/// `--push` stop with an error naming the remote, a dry run says it cannot deliver.
fn check_base(plan: &RunPlan, loaded: &Loaded, out: &Output) -> Result<(), Error> {
    let ws = &loaded.ws;
    let Some(remote) = ws.remote.as_deref().filter(|_| plan.remote) else {
        return Ok(());
    };
    let what = match (&ws.commit, &ws.branch, &plan.source.git_ref) {
        (Some(_), Some(_), _) => return Ok(()),
        (None, _, _) => "its HEAD names no commit (an empty repository, or a HEAD naming a \
                         branch that does not exist)"
            .to_string(),
        (Some(_), None, Some(r)) => format!("--ref {r} is not a branch (a tag or a commit)"),
        (Some(sha), None, None) => {
            format!("its HEAD is not a branch (detached at {sha}, or a tag)")
        }
    };
    match plan.mode {
        Mode::PullRequests | Mode::Push => Err(Error::NoBaseBranch {
            remote: remote.to_string(),
            what,
        }),
        _ => {
            out.warning(&format!("{remote}: {what}: nothing could be delivered"));
            Ok(())
        }
    }
}

/// `--push --dry-run` (and the `delivery: push` part of a dry run): build the commits a
/// push would make in the clone, and print them; nothing leaves the machine.
fn preview_push(
    plan: &RunPlan,
    loaded: &Loaded,
    (all, direct): (&Plan, Option<&Plan>),
    problems: &mut Vec<Problem>,
) {
    let made = match direct {
        _ if plan.push_preview => all,
        Some(direct) if plan.mode == Mode::DryRun => direct,
        _ => return,
    };
    let (Some(git), Some(base_commit)) = (&loaded.ws.git, &loaded.ws.commit) else {
        return;
    };
    let base = base_branch(plan, loaded);
    let settings = &loaded.config.pull_requests;
    let built = crate::deliver::push::commits(git, &loaded.ws.root, base_commit, made, settings);
    let mut out = std::io::stdout().lock();
    match built {
        Ok(commits) if commits.is_empty() => {}
        Ok(commits) => {
            let _ = writeln!(out, "\nwould push {} commit(s) to {base}:", commits.len());
            for (sha, message) in commits {
                let _ = writeln!(out, "\ncommit {sha}");
                for line in message.lines() {
                    let _ = writeln!(out, "    {}", imagebump_model::escape::terminal(line));
                }
            }
        }
        Err(PushError::Failed(e)) => {
            problems.push(Problem::general(format!("cannot preview the push: {e}")))
        }
        // Building never meets a moved base; only pushing does.
        Err(PushError::Moved) => {}
    }
}

/// `--write`: the plan's files, in place.
fn write(loaded: &Loaded, made: &Plan, problems: &mut Vec<Problem>, journal: &Journal) {
    let failed = crate::deliver::write::write_all(&loaded.ws.root, &made.files);
    let written = made.files.len().saturating_sub(failed.len());
    journal.done(format!("wrote {written} file(s)"));
    problems.extend(failed);
}

/// New pull requests this run may open: none when the closed ones could not be read
/// (fail closed: a rejected version could come back).
fn max_new(plan: &RunPlan, loaded: &Loaded, rejections_known: bool) -> Option<usize> {
    if rejections_known {
        plan.max_prs.or(loaded.config.pull_requests.max_new)
    } else {
        Some(0)
    }
}

fn status(plan: &RunPlan, problems: &[Problem], late: &[Problem], made: &Plan) -> Status {
    if !problems.is_empty() || !late.is_empty() {
        Status::Problems
    } else if plan.exit_code && made.update_count() > 0 && plan.mode == Mode::DryRun {
        Status::Pending
    } else {
        Status::Done
    }
}

/// The forge of a remote source (`None`: a local directory, `--push`, or no forge token).
/// Without it pull requests cannot be made; a dry run goes on without their state.
async fn connect_forge(plan: &RunPlan, out: &Output) -> Result<Option<Connected>, Error> {
    if !plan.remote || plan.mode == Mode::Push {
        return Ok(None);
    }
    let (url, _) = crate::source::git::split_credentials(&plan.source.location);
    let connected = crate::forge::connect::connect(&crate::forge::connect::Request {
        url: &url,
        kind: plan.forge.kind,
        api_url: plan.forge.api_url.as_deref(),
        repo: plan.forge.repo.as_deref(),
    })
    .await;
    let connected = match connected {
        Ok(c) => c,
        Err(e) if plan.mode == Mode::PullRequests => return Err(Error::Forge(e)),
        Err(e) => {
            out.warning(&format!(
                "{e}; showing the plan without the pull requests' state"
            ));
            None
        }
    };
    if plan.mode == Mode::PullRequests && connected.is_none() {
        return Err(Error::NoForgeToken);
    }
    Ok(connected)
}

/// The token that clones (and pushes): `IMAGEBUMP_GIT_TOKEN`, else the forge's own (a
/// GitHub App's installation token), else `GITHUB_TOKEN`.
fn git_token(connected: Option<&Connected>) -> Option<secrecy::SecretString> {
    let forge_token = connected.and_then(|c| c.git_token.clone());
    match (forge_token, EnvVars::get_os(EnvVars::IMAGEBUMP_GIT_TOKEN)) {
        (Some(t), None) => Some(t),
        _ => super::git_token(),
    }
}

/// Commits to clone: the history searched for reverts when a forge or `--push` will read it.
/// How deep a remote is cloned: deep enough to find reverted imagebump commits, in every
/// mode (a dry run previews what the real run would do, rollbacks included).
fn history_depth(plan: &RunPlan) -> usize {
    plan.history_depth.max(1)
}

/// Versions reviewers rejected ([`read_rejections`]); what was left alone and why
/// (`Decisions::notes`) is said as warnings on `out`.
async fn rejections(
    plan: &RunPlan,
    loaded: &Loaded,
    (forge, out): (Option<&dyn Forge>, &Output),
    known: (Option<&str>, &BTreeSet<String>),
    problems: &mut Vec<Problem>,
) -> Decisions {
    let decisions = read_rejections(plan, loaded, forge, known, problems).await;
    decisions.notes.iter().for_each(|note| out.warning(note));
    decisions
}

/// Versions reviewers rejected: imagebump's own closed pull requests (with a forge),
/// reverted imagebump commits in the base's history, and the records that hold; those
/// whose source the dashboard lifted (`dashboard_lifted`) excepted, their records deleted.
/// `login`: the forge account when the run asked already (the dashboard).
async fn read_rejections(
    plan: &RunPlan,
    loaded: &Loaded,
    forge: Option<&dyn Forge>,
    (login, dashboard_lifted): (Option<&str>, &BTreeSet<String>),
    problems: &mut Vec<Problem>,
) -> Decisions {
    let mut decisions = Decisions {
        in_force: Vec::new(),
        rejections: Rejections::default(),
        known: true,
        open: None,
        login: None,
        notes: Vec::new(),
        overrides: Overrides::default(),
    };
    let Some(git) = &loaded.ws.git else {
        return decisions;
    };
    let mut closed = Vec::new();
    let mut known = true;
    let mut lifted = BTreeSet::new();
    let base = base_branch(plan, loaded);
    match forge {
        Some(f) => {
            let prefix = &loaded.config.pull_requests.branch_prefix;
            decisions.login = match login {
                Some(login) => Some(login.to_string()),
                None => whoami(plan, f, problems).await,
            };
            // Fail closed: without knowing its account, none of the closed pull requests
            // is imagebump's, so a rejected version could come back.
            known = decisions.login.is_some();
            let login = decisions.login.as_deref();
            // A failed listing lifts nothing; pull-request mode lists again and says why.
            decisions.open = f.open_pulls(prefix).await.ok();
            let listed = decisions.open.as_deref().unwrap_or_default();
            decisions.notes = crate::deliver::pulls::not_ours_notes(listed, login, &base);
            lifted = reopened(listed, login, &base);
            match f.closed_pulls(prefix, 100).await {
                Ok(c) => closed = ours_closed(c, login, &base, &mut decisions.notes),
                Err(e) => {
                    // Fail closed: without the closed pull requests a rejected version
                    // could be proposed again, so no new pull request is opened.
                    known = false;
                    problems.push(Problem {
                        location: f.name().into(),
                        message: format!(
                            "cannot list closed pull requests: {e}; no new pull request is opened \
                             this run (a rejected version could come back), open ones are kept current"
                        ),
                        hint: e.hint(),
                    });
                }
            }
        }
        None if plan.mode == Mode::DryRun => tracing::warn!(
            "closed pull requests were not consulted (no forge token): reverted versions are \
             held back, versions whose pull request was closed may be shown"
        ),
        None => {}
    }
    let mut all = from_history(plan, loaded, git, &closed, &mut lifted);
    // Lifted on the dashboard: neither held nor recorded again, and their records deleted.
    all.retain(|r| !dashboard_lifted.contains(&r.source));
    lifted.extend(dashboard_lifted.iter().cloned());
    let check = Check {
        forge,
        login: decisions.login.as_deref(),
        base: &base,
        closed: &closed,
    };
    let (held, notes) = remember(plan, loaded, &mut all, &lifted, check, problems).await;
    decisions.notes.extend(notes);
    decisions.known = known && held;
    decisions.rejections = crate::deliver::pulls::by_image(&all);
    decisions.in_force = all;
    decisions
}

/// The rejections of imagebump's own closed pull requests and of the reverts of its
/// commits in the base's history; what the history lifted is added to `lifted`.
fn from_history(
    plan: &RunPlan,
    loaded: &Loaded,
    git: &crate::source::git::Git,
    closed: &[imagebump_forge::Pull],
    lifted: &mut BTreeSet<String>,
) -> Vec<crate::deliver::pulls::Rejected> {
    let history = git
        .log(&loaded.ws.root, "HEAD", plan.history_depth)
        .unwrap_or_default();
    // A revert that git cannot check is taken at its word (fail closed).
    let changes =
        |sha: &str, file: &str| (git.changes_path(&loaded.ws.root, sha, file)).unwrap_or(true);
    let bot = crate::deliver::pulls::Author {
        email: &loaded.config.pull_requests.author.email,
        by_api: by_api(loaded),
        changes: &changes,
    };
    lifted.extend(crate::deliver::pulls::lifted(&history));
    crate::deliver::pulls::rejected(
        closed,
        &loaded.config.pull_requests.branch_prefix,
        &history,
        bot,
    )
}

/// The forge account imagebump acts as. Unknown (the problem recorded in pull-request
/// mode, a warning in a dry run): then no pull request counts as imagebump's, and no new
/// one is opened.
async fn whoami(plan: &RunPlan, f: &dyn Forge, problems: &mut Vec<Problem>) -> Option<String> {
    match f.whoami().await {
        Ok(login) => Some(login),
        Err(e) => {
            let message = format!(
                "cannot tell which account the forge token acts as: {e}; no pull request is \
                 taken as imagebump's this run"
            );
            if plan.mode == Mode::PullRequests {
                problems.push(Problem {
                    location: f.name().into(),
                    message,
                    hint: e.hint(),
                });
            } else {
                tracing::warn!("{message}");
            }
            None
        }
    }
}

/// imagebump's own closed pull requests among `closed`; a note for each other one whose
/// body carries a marker (someone else's cannot reject anything).
fn ours_closed(
    closed: Vec<imagebump_forge::Pull>,
    login: Option<&str>,
    base: &str,
    notes: &mut Vec<String>,
) -> Vec<imagebump_forge::Pull> {
    let (ours, others): (Vec<_>, Vec<_>) = closed
        .into_iter()
        .partition(|p| crate::deliver::pulls::is_ours(p, login, base));
    let marked: Vec<_> = others
        .into_iter()
        .filter(|p| crate::deliver::marker::parse(&p.body).is_some())
        .collect();
    notes.extend(crate::deliver::pulls::not_ours_notes(&marked, login, base));
    ours
}

/// What a recorded rejection is checked against (`deliver::pulls::unsupported`).
#[derive(Clone, Copy)]
struct Check<'a> {
    forge: Option<&'a dyn Forge>,
    login: Option<&'a str>,
    base: &'a str,
    /// imagebump's own closed pull requests, as listed.
    closed: &'a [imagebump_forge::Pull],
}

/// What the run knows of reviewers' decisions before it resolves anything.
struct Decisions {
    /// The rejections in force, each with what said no (for the dashboard).
    in_force: Vec<crate::deliver::pulls::Rejected>,
    rejections: Rejections,
    /// False when they could not all be read (fail closed: nothing new is opened).
    known: bool,
    /// The open pull requests of imagebump's branch prefix, listed once here and used
    /// again by pull-request mode (`None`: no forge, or the listing failed); only its own
    /// are touched.
    open: Option<Vec<imagebump_forge::Pull>>,
    /// The forge account imagebump acts as (`None`: no forge, or not known).
    login: Option<String>,
    /// What was left alone and why (pull requests someone else opened, records that do
    /// not hold), said as warnings.
    notes: Vec<String>,
    /// A person's switches beside the configuration (the dashboard's "run now despite the
    /// schedule" and "stop all updates"); off unless read.
    overrides: Overrides,
}

/// `pr-N` for each of imagebump's own pull requests that is open: one a human reopened
/// lifts the rejection its closing made.
fn reopened(open: &[imagebump_forge::Pull], login: Option<&str>, base: &str) -> BTreeSet<String> {
    open.iter()
        .filter(|p| crate::deliver::pulls::is_ours(p, login, base))
        .map(|p| format!("pr-{}", p.number))
        .collect()
}

/// Rejections outlive the forge's paging and the history read: each is recorded as a ref
/// in the repository (`refs/imagebump/rejected/…`), read back with one `ls-remote`; a
/// pull-request run records the new ones. A recorded one holds only when what it names
/// says so (`deliver::pulls::unsupported`): the others are ignored and said in the notes.
/// The first answer is false when the records cannot be read or checked (fail closed, as
/// for the forge).
async fn remember(
    plan: &RunPlan,
    loaded: &Loaded,
    all: &mut Vec<crate::deliver::pulls::Rejected>,
    lifted: &BTreeSet<String>,
    check: Check<'_>,
    problems: &mut Vec<Problem>,
) -> (bool, Vec<String>) {
    use crate::deliver::pulls::{Rejected, NAMESPACE};
    let (Some(git), Some(commit)) = (&loaded.ws.git, &loaded.ws.commit) else {
        return (true, Vec::new());
    };
    let root = &loaded.ws.root;
    let recorded = match git.remote_refs(root, NAMESPACE) {
        Ok(names) => names,
        Err(e) => {
            problems.push(Problem::general(format!(
                "cannot read the recorded rejections ({NAMESPACE}*): {e}; no new pull request is opened this run"
            )));
            return (false, Vec::new());
        }
    };
    let mut new: Vec<String> = all
        .iter()
        .map(Rejected::ref_name)
        .filter(|name| !recorded.contains(name))
        .collect();
    new.sort();
    new.dedup();
    let (kept, gone) = crate::deliver::pulls::recorded(&recorded, lifted);
    let (held, notes, checked) = hold(kept, all, check, problems).await;
    all.extend(held);
    if plan.mode != Mode::PullRequests {
        return (checked, notes);
    }
    if let Err(e) = git.create_refs(root, &new, commit) {
        problems.push(Problem::general(format!(
            "cannot record {} rejection(s) as {NAMESPACE}…: {e}",
            new.len()
        )));
    }
    if let Err(e) = git.delete_refs(root, &gone) {
        problems.push(Problem::general(format!(
            "cannot delete {} lifted rejection(s) under {NAMESPACE}: {e}",
            gone.len()
        )));
    }
    (checked, notes)
}

/// Pull requests a run asks the forge for by number, at most, to check the rejections
/// recorded for them: a flood of refs pushed by hand costs no more than this.
const MAX_PULL_LOOKUPS: usize = 256;

/// The recorded rejections that hold, a note for each that does not, and false when a
/// pull request a record names could not be asked for (the record is not taken, and no
/// new pull request is opened: fail closed). A record this run also derived from the forge
/// or the history needs no question; past [`MAX_PULL_LOOKUPS`], or after the forge failed
/// once, the others are not asked about and do not hold.
async fn hold(
    recorded: Vec<crate::deliver::pulls::Rejected>,
    derived: &[crate::deliver::pulls::Rejected],
    check: Check<'_>,
    problems: &mut Vec<Problem>,
) -> (Vec<crate::deliver::pulls::Rejected>, Vec<String>, bool) {
    use crate::deliver::pulls::{pull_number, unsupported};
    let mut pulls: BTreeMap<u64, Option<imagebump_forge::Pull>> = check
        .closed
        .iter()
        .map(|p| (p.number, Some(p.clone())))
        .collect();
    let (mut held, mut notes, mut checked) = (Vec::new(), Vec::new(), true);
    let mut asked = 0usize;
    let who = (check.login, check.base);
    for r in recorded {
        let n = pull_number(&r).filter(|n| !pulls.contains_key(n));
        if let Some(n) = n.filter(|_| unsupported(&r, None, who, derived).is_some()) {
            let why = match check.forge {
                Some(f) if checked && asked < MAX_PULL_LOOKUPS => {
                    asked = asked.saturating_add(1);
                    match f.pull(n).await {
                        Ok(p) => {
                            pulls.insert(n, p);
                            None
                        }
                        Err(e) => {
                            checked = false;
                            problems.push(lookup_problem(f, &r, &e));
                            Some("the forge failed".to_string())
                        }
                    }
                }
                Some(_) if !checked => Some("the forge failed".to_string()),
                Some(_) => Some(format!(
                    "more than {MAX_PULL_LOOKUPS} pull requests to ask for"
                )),
                None => Some("no forge token to ask with".to_string()),
            };
            if let Some(why) = why {
                let name = r.ref_name();
                notes.push(format!(
                    "recorded rejection {name} not checked ({why}): not held"
                ));
                continue;
            }
        }
        let pull = pull_number(&r)
            .and_then(|n| pulls.get(&n))
            .and_then(Option::as_ref);
        match unsupported(&r, pull, who, derived) {
            None => held.push(r),
            Some(why) => notes.push(format!(
                "recorded rejection {} ignored: {why}",
                r.ref_name()
            )),
        }
    }
    (held, notes, checked)
}

/// The problem of a pull request a record names that could not be asked for.
fn lookup_problem(
    f: &dyn Forge,
    r: &crate::deliver::pulls::Rejected,
    e: &imagebump_forge::Error,
) -> Problem {
    Problem {
        location: f.name().into(),
        message: format!(
            "cannot check the recorded rejection {}: {e}; no new pull request is opened this run",
            r.ref_name()
        ),
        hint: e.hint(),
    }
}

/// What holds updates back in time: the run's start ([`RunPlan::started`]), and the
/// updates imagebump's own open pull requests propose (they stay current).
fn gate(plan: &RunPlan, loaded: &Loaded, decisions: &Decisions) -> Gate {
    let base = base_branch(plan, loaded);
    let login = decisions.login.as_deref();
    let open = decisions
        .open
        .iter()
        .flatten()
        .filter(|p| crate::deliver::pulls::is_ours(p, login, &base))
        .filter_map(|p| crate::deliver::marker::parse(&p.body))
        .flatten()
        .map(|m| (m.image, m.file))
        .collect();
    Gate {
        now: plan.started,
        overrides: decisions.overrides,
        open,
    }
}

/// What the run knows before it analyses: the rejections, the first sightings of source
/// versions (`None`: a local directory), and the majors the dashboard approved (`None`:
/// majors are not held).
type Known<'a> = (&'a Rejections, Option<&'a Seen>, Approved<'a>);

/// The (image, major) pairs the dashboard approved, when `approveMajors` holds the others.
type Approved<'a> = Option<&'a BTreeSet<(String, u64)>>;

/// The first sightings the remote records (`refs/imagebump/seen/…`), read only when a rule
/// promotes. `None` for a local directory (soak counts from committer dates). When they
/// cannot be read, none is known: every version counts from now (fail closed).
fn seen_records(loaded: &Loaded, problems: &mut Vec<Problem>) -> Option<Seen> {
    use crate::promote::seen::NAMESPACE;
    let git = loaded
        .ws
        .git
        .as_ref()
        .filter(|_| loaded.ws.remote.is_some())?;
    if loaded
        .config
        .images
        .iter()
        .all(|r| r.promote_from.is_none())
    {
        return None;
    }
    match git.remote_refs(&loaded.ws.root, NAMESPACE) {
        Ok(names) => Some(Seen::from_refs(&names)),
        Err(e) => {
            problems.push(Problem::general(format!(
                "cannot read when versions were first seen ({NAMESPACE}*): {e}; every version \
                 soaks from now"
            )));
            Some(Seen::default())
        }
    }
}

/// A run that delivers (pull requests, `--push`) records the source versions no record
/// names yet as first seen now, create-only: a record is never moved.
fn record_seen(
    plan: &RunPlan,
    loaded: &Loaded,
    promotions: &crate::promote::Promotions,
    problems: &mut Vec<Problem>,
) {
    use crate::promote::seen::{ref_name, NAMESPACE};
    let (Some(git), Some(commit)) = (&loaded.ws.git, &loaded.ws.commit) else {
        return;
    };
    if !matches!(plan.mode, Mode::PullRequests | Mode::Push) || promotions.unseen.is_empty() {
        return;
    }
    let names: Vec<String> = promotions
        .unseen
        .iter()
        .map(|k| ref_name(k, promotions.now))
        .collect();
    if let Err(e) = git.create_refs(&loaded.ws.root, &names, commit) {
        problems.push(Problem::general(format!(
            "cannot record {} first sighting(s) as {NAMESPACE}…: {e}",
            names.len()
        )));
    }
}

/// `minAge`'s first sightings recorded on the repository's `origin`
/// (`refs/imagebump/first-seen/…`), read once when a reference's policy has `minAge`: from
/// the clone, or from a local directory's own `origin` when it has one (without the token,
/// never over plain `http://`). When a clone's
/// cannot be read, none is known (a problem says so): every tag without a plausible build
/// date is first seen now, and none counts as old.
fn first_seen_records(
    loaded: &Loaded,
    found: &Discovery,
    problems: &mut Vec<Problem>,
) -> resolve::first_seen::FirstSeen {
    use resolve::first_seen::{FirstSeen, NAMESPACE};
    if !found.refs.iter().any(|r| r.policy.min_age.is_some()) {
        return FirstSeen::default();
    }
    let root = &loaded.ws.root;
    let read = match &loaded.ws.git {
        Some(git) => git.remote_refs(root, NAMESPACE),
        None if root.join(".git").exists() => {
            // A local directory: its origin's records, read anonymously, if it has one
            // (not over plain http://); quietly none if not.
            let read = crate::source::git::Git::local_origin_refs(root, NAMESPACE);
            return FirstSeen::from_refs(&read.unwrap_or_default());
        }
        None => return FirstSeen::default(),
    };
    match read {
        Ok(names) => FirstSeen::from_refs(&names),
        Err(e) => {
            problems.push(Problem::general(format!(
                "cannot read when tags were first seen ({NAMESPACE}*): {e}; minAge counts every \
                 tag without a plausible build date as first seen now"
            )));
            FirstSeen::default()
        }
    }
}

/// A run that delivers (pull requests, `--push`) from a clone records the tags `minAge`
/// held back as first seen now, create-only, and deletes the records of tags their
/// registry no longer lists: at most [`MAX_WRITTEN`](resolve::first_seen::MAX_WRITTEN) of
/// each. Any other run writes nothing and says what it did not record.
fn record_first_seen(
    plan: &RunPlan,
    loaded: &Loaded,
    resolved: &mut Resolved,
    problems: &mut Vec<Problem>,
) {
    use resolve::first_seen::{ref_name, MAX_WRITTEN, NAMESPACE};
    let s = &resolved.sightings;
    let ws = &loaded.ws;
    let delivers = matches!(plan.mode, Mode::PullRequests | Mode::Push) && ws.remote.is_some();
    let (Some(git), Some(commit), true) = (&ws.git, &ws.commit, delivers) else {
        if !s.new.is_empty() {
            let why = match plan.mode {
                Mode::DryRun => "a dry run",
                _ if ws.remote.is_none() => "a local directory",
                _ => "this run does not deliver",
            };
            resolved.warnings.push(Problem::general(format!(
                "{} tag(s) without a plausible build date first seen by this run, not recorded \
                 ({why} writes nothing under {NAMESPACE}): minAge counts them from now",
                s.new.len()
            )));
        }
        return;
    };
    let at = plan.started.as_second();
    let new: Vec<String> = s
        .new
        .iter()
        .take(MAX_WRITTEN)
        .map(|(repo, tag)| ref_name(repo, tag, at))
        .collect();
    if s.new.len() > MAX_WRITTEN {
        resolved.warnings.push(Problem::general(format!(
            "{} first sighting(s) recorded this run, {} left for the next run (at most \
             {MAX_WRITTEN} a run)",
            new.len(),
            s.new.len().saturating_sub(MAX_WRITTEN)
        )));
    }
    if let Err(e) = git.create_refs(&ws.root, &new, commit) {
        problems.push(Problem::general(format!(
            "cannot record {} first sighting(s) as {NAMESPACE}…: {e}",
            new.len()
        )));
    }
    let stale: Vec<String> = s.stale.iter().take(MAX_WRITTEN).cloned().collect();
    if let Err(e) = git.delete_refs(&ws.root, &stale) {
        problems.push(Problem::general(format!(
            "cannot delete {} first sighting(s) of tags not listed under {NAMESPACE}: {e}",
            stale.len()
        )));
    }
}

/// Discover, resolve and plan; with `--push`, push the plan, and when the base moved
/// meanwhile, analyse the new base again (a bounded number of times).
async fn analyse(
    plan: &RunPlan,
    loaded: &mut Loaded,
    registries: &Registries,
    ((rejections, majors), gate): ((&Rejections, Approved<'_>), &Gate),
    out: &Output,
    problems: &mut Vec<Problem>,
) -> Analysed {
    let seen = seen_records(loaded, problems);
    let known = (rejections, seen.as_ref(), majors);
    let mut base_commit = loaded.ws.commit.clone().unwrap_or_default();
    let mut attempt: usize = 1;
    loop {
        let (found, resolved, made, promotions, awaiting) =
            analyse_once(plan, loaded, registries, (known, gate), out).await;
        let pushed = match (plan.mode, &loaded.ws.git) {
            (Mode::Push, Some(git)) => {
                match push(plan, loaded, git, &base_commit, &made, attempt, problems) {
                    Pushed::Done(sha) => sha,
                    Pushed::BaseMoved(sha) => {
                        let root = &loaded.ws.root;
                        match crate::source::tree::Tree::at_commit(git, root, &sha, &[]) {
                            Ok(tree) => {
                                loaded.ws.tree = tree;
                                attempt = attempt.saturating_add(1);
                                base_commit = sha;
                                continue;
                            }
                            Err(e) => {
                                let e = format!("the base moved and cannot be read: {e}");
                                problems.push(Problem::general(e));
                                None
                            }
                        }
                    }
                }
            }
            _ => None,
        };
        let remote = loaded.ws.remote.as_deref();
        let outcomes = &resolved.outcomes;
        let promoted = crate::promote::render::pull_notes(&found, outcomes, &promotions, remote);
        record_seen(plan, loaded, &promotions, problems);
        let mut resolved = resolved;
        record_first_seen(plan, loaded, &mut resolved, problems);
        return Analysed {
            awaiting,
            found,
            resolved,
            plan: made,
            pushed,
            promotions,
            promoted,
        };
    }
}

/// The base branch: `--ref`, else the clone's branch.
fn base_branch(plan: &RunPlan, loaded: &Loaded) -> String {
    plan.source
        .git_ref
        .clone()
        .or_else(|| loaded.ws.branch.clone())
        .unwrap_or_default()
}

enum Pushed {
    /// Pushed (the commit), nothing to push, or failed (a problem was recorded).
    Done(Option<String>),
    /// The base moved to this commit, now `HEAD`: analyse it again.
    BaseMoved(String),
}

fn push(
    plan: &RunPlan,
    loaded: &Loaded,
    git: &crate::source::git::Git,
    base_commit: &str,
    made: &Plan,
    attempt: usize,
    problems: &mut Vec<Problem>,
) -> Pushed {
    let (root, settings) = (&loaded.ws.root, &loaded.config.pull_requests);
    let base = base_branch(plan, loaded);
    let problem = match push_to_base(git, root, &base, base_commit, made, settings) {
        Ok(sha) => return Pushed::Done(sha),
        Err(PushError::Moved) if attempt < PUSH_ATTEMPTS => {
            let moved = git
                .fetch_base(root, &base, 1)
                .and_then(|sha| git.detach_head(root, &sha).map(|_| sha));
            match moved {
                Ok(sha) => {
                    tracing::info!("the base moved to {sha}; analysing it again");
                    return Pushed::BaseMoved(sha);
                }
                Err(e) => format!("the base moved and cannot be fetched: {e}"),
            }
        }
        Err(PushError::Moved) => format!(
            "the base branch {base} kept moving; gave up after {PUSH_ATTEMPTS} attempts (run again)"
        ),
        Err(PushError::Failed(e)) => e,
    };
    problems.push(Problem::general(problem));
    Pushed::Done(None)
}

/// `--cache-dir`, opened; `None` without it, or when it cannot be created (said once: the
/// run goes on without it, as it would without the flag).
fn disk_cache(plan: &RunPlan) -> Option<DiskCache> {
    let dir = plan.cache_dir.as_deref()?;
    DiskCache::open(dir, crate::registry::cache::DEFAULT_CAP)
        .map_err(|e| tracing::warn!("--cache-dir: {e}; running without the cache"))
        .ok()
}

/// One pass of discover, resolve and plan over the tree as it is now.
async fn analyse_once(
    plan: &RunPlan,
    loaded: &Loaded,
    registries: &Registries,
    ((rejections, seen, majors), gate): (Known<'_>, &Gate),
    out: &Output,
) -> (
    Discovery,
    Resolved,
    Plan,
    crate::promote::Promotions,
    Vec<crate::deliver::dashboard::Waiting>,
) {
    let group_by = plan
        .group_by
        .unwrap_or(loaded.config.pull_requests.group_by);
    let keep = texts_kept(plan, out.format);
    let (mut found, early) = discover_listing_early(plan, loaded, registries, (group_by, keep));
    let (config, concurrency) = (&loaded.config, plan.concurrency);
    discover::chart_values::chart_defaults(&mut found, config, registries, concurrency).await;
    // Promotion reads the whole tree: a source may lie outside the scope or the shard.
    let promotions = crate::promote::read_now(
        &found,
        (&loaded.config, &loaded.ws.root),
        plan.history_depth,
        (rejections, seen),
    );
    narrow(&mut found, plan, loaded, group_by);
    tracing::info!(
        references = found.refs.len(),
        files = found.files_scanned,
        "discovered"
    );
    let progress = progress_of(out, registries);
    let promotions = promotions.reindex(&found);
    let promoted = promotions.candidates();
    let ask = (plan, loaded, registries);
    let mut resolved = resolve_found(ask, &found, (rejections, &promoted), &progress, early).await;
    resolved
        .problems
        .extend(promotions.problems.iter().cloned());
    progress.finish();
    let awaiting = super::run_dashboard::hold_majors(&found, &mut resolved.outcomes, majors);
    resolved.waiting = gate.hold(&found.refs, &mut resolved.outcomes);
    log_resolved(&resolved, registries);
    // Settings honoured differently (Argo CD annotations) are reported with the warnings.
    resolved.warnings.splice(0..0, found.notes.iter().cloned());
    let outcomes = &resolved.outcomes;
    let mut made = match keep {
        // Only the plan reads the texts: it gives them up once its edits are verified.
        plan::Keep::Nothing => {
            plan::plan_giving_up_texts(&mut found, outcomes, groups(plan, loaded), &loaded.ws.tree)
        }
        keep => plan::plan_with(&found, outcomes, groups(plan, loaded), keep),
    };
    let bumps = oci_chart_bumps(&found, &resolved.outcomes);
    let oci = crate::chart::app_version::oci(registries, bumps, plan.concurrency);
    let mut app_versions = crate::chart::app_version::AppVersions::new(registries, oci.await);
    plan::fill_app_versions(
        &mut made,
        (&found, &resolved.outcomes),
        |chart, from, to| app_versions.change(chart, from, to),
    );
    tracing::info!(
        updates = made.update_count(),
        files = made.files_changed,
        change_sets = made.change_sets.len(),
        "planned"
    );
    (found, resolved, made, promotions, awaiting)
}

/// Resolve `found`'s references, with the first sightings `minAge` needs read first.
async fn resolve_found(
    (plan, loaded, registries): (&RunPlan, &Loaded, &Registries),
    found: &Discovery,
    (rejections, promoted): (&Rejections, &BTreeMap<usize, Vec<String>>),
    progress: &crate::progress::Progress,
    early: resolve::EarlyLists,
) -> Resolved {
    let mut unread = Vec::new();
    let first_seen = first_seen_records(loaded, found, &mut unread);
    let clocks = resolve::Clocks {
        first_seen: &first_seen,
        now: plan.started,
    };
    let mut resolved = resolve::resolve_with(
        &found.refs,
        registries,
        (plan.concurrency, clocks),
        rejections,
        promoted,
        progress,
        Some(early),
    )
    .await;
    resolved.problems.extend(unread);
    resolved
}

/// What resolve asked of the registries, at `info`.
fn log_resolved(resolved: &Resolved, registries: &Registries) {
    let stats = registries.stats.snapshot();
    tracing::info!(
        repositories = resolved.repositories,
        tag_list_pages = stats.tag_list_pages,
        manifests = stats.manifests,
        blobs = stats.blobs,
        cache_hits = registries.disk_cache().map(|c| c.hits()),
        "resolved"
    );
}

/// What the plan keeps of the new texts: a remote's run builds branches (pull requests, or
/// what they would be); the diff, `--write` and a push (or its preview) read the whole
/// plan's; a local run whose output is the JSON report needs none.
fn texts_kept(plan: &RunPlan, format: Format) -> plan::Keep {
    if plan.remote {
        plan::Keep::Branches
    } else if format == Format::Text || plan.mode != Mode::DryRun || plan.push_preview {
        plan::Keep::Files
    } else {
        plan::Keep::Nothing
    }
}

/// What this run works on, once promotion has read the whole tree: the scope, the shard,
/// and no slots for the references nothing edits.
fn narrow(
    found: &mut Discovery,
    plan: &RunPlan,
    loaded: &Loaded,
    group_by: imagebump_model::config::GroupBy,
) {
    if let Some(scope) = &loaded.ws.scope {
        found.limit_to(&loaded.ws.tree, scope);
    }
    // A shard keeps the references of its change-set groups only: registry work and
    // pull requests are split, and the shards together do what one run would.
    if let Some((i, n)) = plan.shard {
        found
            .refs
            .retain(|r| plan::shard_of(&plan::group_of_ref(r, group_by), n) == i);
    }
    found.release_unmanaged();
}

/// The OCI chart versions the chart bumps move from and to, with the credentials their
/// versions were listed with, for their appVersions.
fn oci_chart_bumps(found: &Discovery, outcomes: &Chunked<resolve::Outcome>) -> Vec<OciVersion> {
    let bumps = found
        .refs
        .iter()
        .zip(outcomes)
        .filter_map(|(r, o)| match o {
            resolve::Outcome::Update { tag, .. } if r.kind == discover::RefKind::HelmChart => {
                crate::chart::classic_repository(&r.written)
                    .is_none()
                    .then_some((r, tag))
            }
            _ => None,
        });
    bumps
        .flat_map(|(r, to)| {
            let credentials = r.policy.credentials.clone();
            let from = r.tag.as_deref().unwrap_or_default().to_string();
            [from, to.to_string()].map(|v| {
                (
                    r.written.to_string(),
                    (*r.image).clone(),
                    credentials.clone(),
                    v,
                )
            })
        })
        .collect()
}

/// Discovery, with the tag lists of the references that are final as soon as they are
/// read started meanwhile (the same requests, earlier), within the run's scope and shard.
/// Not when a rule promotes: a promoted reference lists nothing.
fn discover_listing_early(
    plan: &RunPlan,
    loaded: &Loaded,
    registries: &Registries,
    (group_by, keep): (imagebump_model::config::GroupBy, plan::Keep),
) -> (Discovery, resolve::EarlyLists) {
    let mut early = resolve::EarlyLists::new(plan.concurrency);
    let promotes = loaded
        .config
        .images
        .iter()
        .any(|r| r.promote_from.is_some());
    let mut start_early = |r: &discover::ImageRef| {
        let scope = loaded.ws.scope.as_deref();
        let in_shard = |(i, n)| plan::shard_of(&plan::group_of_ref(r, group_by), n) == i;
        if scope.is_none_or(|s| discover::in_scope(r, s)) && plan.shard.is_none_or(in_shard) {
            early.start(r, registries);
        }
    };
    let tell: Option<discover::Early> = (!promotes).then_some(&mut start_early);
    let texts = match keep {
        // The plan proves what it can without the texts, and reads the others again.
        plan::Keep::Nothing => discover::SourceTexts::NeededOnly,
        plan::Keep::Files | plan::Keep::Branches => discover::SourceTexts::All,
    };
    let mut found = discover::discover_with(&loaded.ws.tree, &loaded.config, tell, texts);
    loaded.explain_outside(&mut found);
    (found, early)
}

/// The run's registry clients: the operator's entries, `--request-timeout`, `--cache-dir`.
fn registries_of(plan: &RunPlan, loaded: &Loaded, out: &Output) -> Result<Registries, Error> {
    let registries =
        Registries::with_request_timeout(loaded.config.registries.clone(), out.request_timeout)
            .map_err(|source| Error::Registries {
                file: loaded.config_path.clone(),
                source,
            })?;
    Ok(registries.with_cache(disk_cache(plan)))
}

/// The progress bar, saying what the registries are waited for.
fn progress_of(out: &Output, registries: &Registries) -> crate::progress::Progress {
    let progress = out.progress();
    let stats = std::sync::Arc::clone(&registries.stats);
    progress.watch(move || stats.in_flight.longest());
    progress
}

/// Pull-request mode, or for a remote's dry run what it would do (`None`: a local
/// directory or `--push`): the report of each change set and the problems met.
async fn pull_requests(
    plan: &RunPlan,
    loaded: &Loaded,
    forge: Option<&dyn Forge>,
    registries: &Registries,
    (made, pushed, (decisions, analysed)): (&Plan, Option<&str>, (&Decisions, &Analysed)),
    (max_new, journal): (Option<usize>, &Journal),
    problems: &mut Vec<Problem>,
) -> Option<Vec<PullReport>> {
    let ws = &loaded.ws;
    let (Some(git), Some(commit), Some(branch)) = (&ws.git, &ws.commit, &ws.branch) else {
        return None;
    };
    // All updates stopped: open pull requests stay as they are (no push, no forge write).
    if !plan.remote || plan.mode == Mode::Push || decisions.overrides.stop_all {
        return None;
    }
    // The release facts of the updates, one lookup per distinct (image, from, to), fetched
    // while the branches are read and built.
    let facts: crate::deliver::pulls::PendingFacts = if plan.mode == Mode::PullRequests {
        release_facts(made, registries, plan.concurrency)
    } else {
        Box::pin(std::future::ready(Default::default()))
    };
    let facts = with_clocks(facts, made, &analysed.resolved.sightings.clocks);
    let ctx = crate::deliver::pulls::Context {
        promoted: &analysed.promoted,
        shard: plan.shard,
        git,
        dir: &ws.root,
        base: plan.source.git_ref.as_deref().unwrap_or(branch),
        // Built on what this run pushed, if it pushed (`delivery: push`).
        base_commit: pushed.unwrap_or(commit),
        forge,
        settings: &loaded.config.pull_requests,
        max_new,
        dry_run: plan.mode != Mode::PullRequests,
        journal,
        rejections: &decisions.rejections,
        open: decisions.open.as_deref(),
        login: decisions.login.as_deref(),
        by_api: by_api(loaded),
        waiting: &analysed.resolved.waiting,
        site: crate::forge::connect::site_of(
            &crate::source::git::split_credentials(&plan.source.location).0,
            plan.forge.kind,
        ),
    };
    let (reports, more) = crate::deliver::pulls::deliver(&ctx, made, facts).await;
    problems.extend(more);
    Some(reports)
}

/// `--push` with commits that only the forge's API may create: refused before anything.
fn refuse_push_by_api(plan: &RunPlan, loaded: &Loaded) -> Result<(), Error> {
    if plan.mode != Mode::Push || !by_api(loaded) {
        return Ok(());
    }
    let path = loaded.config_path.as_ref();
    Err(Error::Config(crate::config::Error::Invalid {
        path: path.map(|p| p.display().to_string()).unwrap_or_default(),
        line: 0,
        column: 0,
        message: "signing format github creates pull-request commits only; --push needs an \
                  ssh or openpgp key"
            .into(),
        hint: Some("see docs/pull-requests.md, \"Signed commits\"".into()),
    }))
}

/// Commits come from the forge's API (`signing: {format: github}`).
fn by_api(loaded: &Loaded) -> bool {
    loaded.config.signing.as_ref().is_some_and(|s| s.by_api())
}

/// The `delivery: push` updates of a pull-request run (or its dry run), apart from those
/// for pull requests.
fn split_delivery(plan: &RunPlan, loaded: &Loaded, analysed: &Analysed) -> Option<(Plan, Plan)> {
    if !plan.remote || !matches!(plan.mode, Mode::PullRequests | Mode::DryRun) {
        return None;
    }
    let groups = groups(plan, loaded);
    crate::deliver::push::split_by_delivery(&analysed.found, &analysed.resolved.outcomes, groups)
}

/// How the run groups its updates into change sets: `--group-by` over
/// `pullRequests.groupBy`, and `pullRequests.separateMajor`.
fn groups(plan: &RunPlan, loaded: &Loaded) -> plan::Groups {
    plan::Groups {
        by: plan
            .group_by
            .unwrap_or(loaded.config.pull_requests.group_by),
        separate_major: loaded.config.pull_requests.separate_major,
    }
}

/// Push the `delivery: push` updates to the base (pull-request mode; a dry run only
/// shows them). The commit, when one was pushed.
fn push_direct(
    plan: &RunPlan,
    loaded: &Loaded,
    direct: &Plan,
    problems: &mut Vec<Problem>,
    journal: &Journal,
) -> Option<String> {
    let (Some(git), Some(base_commit)) = (&loaded.ws.git, &loaded.ws.commit) else {
        return None;
    };
    if plan.mode != Mode::PullRequests {
        return None;
    }
    let base = base_branch(plan, loaded);
    if by_api(loaded) {
        problems.push(Problem::general(format!(
            "delivery: push updates not pushed to {base}: with signing format github, GitHub \
             creates only pull-request commits; sign with an ssh or openpgp key to push"
        )));
        return None;
    }
    let settings = &loaded.config.pull_requests;
    match push_to_base(git, &loaded.ws.root, &base, base_commit, direct, settings) {
        Ok(Some(sha)) => {
            journal.done(format!("pushed {sha} to {base} (delivery: push)"));
            Some(sha)
        }
        Ok(None) => None,
        Err(e) => {
            let why = match e {
                PushError::Moved => "the base branch moved during the run".to_string(),
                PushError::Failed(e) => e,
            };
            problems.push(Problem::general(format!(
                "delivery: push updates not pushed to {base}: {why}; the next run tries again"
            )));
            None
        }
    }
}

/// The release facts of every update (`resolve::release`), by (image, old tag, new tag),
/// fetched concurrently by a task of its own (it runs while the caller builds the
/// branches); updates whose images cannot be read are left out.
fn release_facts(
    made: &Plan,
    registries: &Registries,
    concurrency: usize,
) -> crate::deliver::pulls::PendingFacts {
    use crate::deliver::marker::{reference_of, tag_of};
    use futures::stream::{self, StreamExt};
    // By (image, old tag, new tag); each image read by its digest where the value has one.
    let wanted: BTreeMap<(String, String, String), (String, String)> = made
        .updates
        .iter()
        // A classic Helm repository is no registry: nothing to ask it.
        .filter(|u| crate::chart::classic_repository(&u.name).is_none())
        .map(|u| {
            let key = (
                u.image.to_string(),
                tag_of(&u.from).into(),
                tag_of(&u.to).into(),
            );
            (
                key,
                (reference_of(&u.from).into(), reference_of(&u.to).into()),
            )
        })
        .collect();
    let lookups: Vec<_> = wanted
        .into_iter()
        .filter_map(|(key, refs)| {
            let name = imagebump_model::name::parse_name(&key.0).ok()?;
            let client = registries.client_for(&name).ok()?;
            Some((key, refs, name.repository, client))
        })
        .collect();
    let task = tokio::spawn(
        stream::iter(lookups)
            .map(|(key, (from, to), repository, client)| async move {
                let facts = resolve::release::facts(&client, &repository, &from, &to).await;
                (key, facts)
            })
            .buffer_unordered(concurrency.max(1))
            .collect::<crate::deliver::pulls::ReleaseFacts>(),
    );
    // A task that panicked gives no facts: the bodies go without release notes.
    Box::pin(async move { task.await.unwrap_or_default() })
}

/// `facts` with the clock `minAge` judged each update's new tag by (`clocks`, by
/// repository and tag), so that bodies say "first seen" or "built".
fn with_clocks(
    facts: crate::deliver::pulls::PendingFacts,
    made: &Plan,
    clocks: &BTreeMap<(String, String), imagebump_policy::age::Clock>,
) -> crate::deliver::pulls::PendingFacts {
    use crate::deliver::marker::tag_of;
    let ages: Vec<((String, String, String), imagebump_policy::age::Clock)> = made
        .updates
        .iter()
        .filter_map(|u| {
            let to = tag_of(&u.to).to_string();
            let clock = clocks.get(&(u.image.to_string(), to.clone()))?;
            Some((
                (u.image.to_string(), tag_of(&u.from).to_string(), to),
                *clock,
            ))
        })
        .collect();
    if ages.is_empty() {
        return facts;
    }
    Box::pin(async move {
        let mut facts = facts.await;
        for (key, clock) in ages {
            facts.entry(key).or_default().age = Some(clock);
        }
        facts
    })
}

/// The plan, and the lines saying where promoted versions come from.
fn analysed_text(analysed: &Analysed) -> (&Plan, String) {
    let (found, outcomes) = (&analysed.found, &analysed.resolved.outcomes);
    let promoted = crate::promote::render::dry_run(found, outcomes, &analysed.promotions);
    (&analysed.plan, promoted)
}

/// The diff, the updates and pull requests tables, what was not updated and why, and the
/// summary line.
fn print_text(mode: Mode, r: &RunReport, (made, promoted): (&Plan, String), out: &Output) {
    let (color, width) = (out.color, out.width);
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{}", crate::deliver::diff::render(&made.files, color));
    if !made.updates.is_empty() {
        let _ = writeln!(out);
        let _ = write!(out, "{}", report::updates_table(in_diff_order(made), width));
    }
    let _ = write!(out, "{promoted}");
    if let Some(p) = r.pull_requests.filter(|p| !p.is_empty()) {
        let _ = writeln!(out);
        let _ = write!(out, "{}", report::pulls_table(p, width));
    }
    let not_updated: Vec<report::NotUpdated> = r.not_updated.iter().collect();
    let _ = write!(out, "{}", report::not_updated_text(&not_updated, 20));
    let (verb, done) = match mode {
        Mode::Write => ("applied", "updated"),
        Mode::DryRun => ("proposed", "to update"),
        Mode::PullRequests => ("in pull requests", "to update"),
        Mode::Push if r.pushed.is_some() => ("pushed", "updated"),
        Mode::Push => ("not pushed", "to update"),
    };
    let c = &r.counts;
    let _ = writeln!(
        out,
        "\n{} update(s) {verb} in {} file(s); {}; {} repositories asked",
        c.updates,
        made.files_changed,
        report::references_summary(c, &not_updated, done),
        c.repositories
    );
    if c.references == 0 {
        let _ = writeln!(
            out,
            "no image references found in {} files: nothing to manage (docs/discovery.md says what is read)",
            c.files_scanned
        );
    }
}

/// The updates in the order of the diff: by the file that changes, then by line.
fn in_diff_order(made: &Plan) -> Vec<&crate::plan::Update> {
    let rank = |u: &crate::plan::Update| {
        let file = u.written_to.as_deref().unwrap_or(&u.file);
        made.files
            .iter()
            .position(|f| f.file == file)
            .unwrap_or(usize::MAX)
    };
    let mut updates: Vec<_> = made.updates.iter().collect();
    updates.sort_by_key(|u| (rank(u), u.line));
    updates
}

/// Writes the dashboard once the pull requests are done (a failure is a problem); what a
/// dry run would write, for the output.
async fn dashboard_write(
    plan: &RunPlan,
    (forge, dashboard, pulls): (
        Option<&dyn Forge>,
        Option<&super::run_dashboard::Dashboard>,
        Option<&[PullReport]>,
    ),
    (analysed, decisions): (&Analysed, &Decisions),
    problems: &mut Vec<Problem>,
) -> (Option<crate::report::DashboardReport>, Option<String>) {
    let (Some(d), Some(f)) = (dashboard, forge) else {
        return (None, None);
    };
    let results = dashboard_results(analysed, decisions, pulls, problems);
    let board = super::run_dashboard::board_of(d, results);
    match super::run_dashboard::write(plan, f, d, &board).await {
        Ok((report, preview)) => (Some(report), preview),
        Err(p) => {
            problems.push(p);
            (None, None)
        }
    }
}

/// What the dashboard did not take, as warnings of the report; with its "Stop all
/// updates" on (the gate holds every update, and no pull request is touched), a warning
/// says why.
fn steer(
    dashboard: Option<&super::run_dashboard::Dashboard>,
    max_new: Option<usize>,
    warnings: &mut Vec<Problem>,
) -> Option<usize> {
    let notes = dashboard
        .map(|d| d.steering.notes.iter())
        .into_iter()
        .flatten();
    warnings.extend(notes.map(|n| Problem::general(n.clone())));
    if !dashboard.is_some_and(|d| d.steering.overrides().stop_all) {
        return max_new;
    }
    warnings.push(Problem::general(
        "\"Stop all updates\" is ticked on the dashboard: nothing is proposed, and open pull \
         requests are left as they are",
    ));
    Some(0)
}

/// What the dashboard shows of this run.
fn dashboard_results<'a>(
    analysed: &'a Analysed,
    decisions: &'a Decisions,
    pulls: Option<&'a [PullReport]>,
    problems: &'a [Problem],
) -> super::run_dashboard::Results<'a> {
    let rows =
        crate::promote::status::rows(&analysed.found, &analysed.promotions, &decisions.rejections);
    super::run_dashboard::Results {
        pulls,
        rejected: &decisions.in_force,
        not_updated: report::not_updated_of(&analysed.found, &analysed.resolved, &analysed.plan)
            .iter()
            .collect(),
        soaking: super::run_dashboard::soaking(rows),
        awaiting: analysed.awaiting.clone(),
        problems,
    }
}
