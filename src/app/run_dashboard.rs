//! `run`'s dashboard issue (src/deliver/dashboard): read before anything is resolved (its
//! decisions steer the run), written back once the pull requests are done.

use std::collections::{BTreeMap, BTreeSet};

use super::source::Loaded;
use super::{Mode, Output, RunPlan};
use crate::chunked::Chunked;
use crate::deliver::dashboard::{
    self as board, Board, Line, OpenPull, Published, RejectedLine, Steering, Waiting,
};
use crate::deliver::pulls::{Outcome as Action, PullReport, Rejected};
use crate::discover::Discovery;
use crate::report::NotUpdated;
use crate::resolve::Outcome;
use imagebump_forge::Forge;
use imagebump_model::config::DashboardOptions;
use imagebump_model::Problem;

/// The dashboard of this run: its options, what it decided, and whose it is.
pub(super) struct Dashboard {
    pub options: DashboardOptions,
    pub steering: Steering,
    /// imagebump's forge account, asked once for the run.
    pub login: String,
}

/// The dashboard before the run, when `pullRequests.dashboard` is on and the run talks to
/// a forge (pull requests or their dry run). A pull-request run keeps what was ticked.
pub(super) async fn read(
    plan: &RunPlan,
    loaded: &Loaded,
    forge: Option<&dyn Forge>,
    problems: &mut Vec<Problem>,
) -> Option<Dashboard> {
    let options = loaded.config.pull_requests.dashboard()?;
    let forge =
        forge.filter(|_| plan.remote && matches!(plan.mode, Mode::PullRequests | Mode::DryRun))?;
    let (git, commit) = (loaded.ws.git.as_ref()?, loaded.ws.commit.as_deref()?);
    let login = match forge.whoami().await {
        Ok(login) => login,
        Err(e) => {
            tracing::warn!("the dashboard is not read: cannot tell the forge account ({e})");
            return None;
        }
    };
    let place = board::Place {
        git,
        root: &loaded.ws.root,
    };
    let trust = options.trust_issue_writers;
    let steering = board::read(forge, (&login, trust), &place, problems).await;
    if steering.decided.run_now {
        tracing::info!("the dashboard's \"Run now\" is ticked: the schedule is ignored this run");
    }
    if plan.mode == Mode::PullRequests {
        if let Err(e) = board::keep(&place, &steering, commit) {
            problems.push(Problem::general(format!(
                "cannot keep the dashboard's decisions ({}…): {e}",
                board::NAMESPACE
            )));
        }
    }
    Some(Dashboard {
        options,
        steering,
        login,
    })
}

/// The sources whose rejections the dashboard lifted.
pub(super) fn lifted(d: Option<&Dashboard>) -> BTreeSet<String> {
    d.map(|d| d.steering.decided.state.lifted.clone())
        .unwrap_or_default()
}

/// The dashboard's switches for this run (all off without a dashboard).
pub(super) fn overrides(d: Option<&Dashboard>) -> crate::resolve::schedule::Overrides {
    d.map(|d| d.steering.overrides()).unwrap_or_default()
}

/// The majors the dashboard approved, when `approveMajors` holds the others.
pub(super) fn approved(d: Option<&Dashboard>) -> Option<&BTreeSet<(String, u64)>> {
    d.filter(|d| d.options.approve_majors)
        .map(|d| &d.steering.decided.state.approved)
}

/// Holds every update to a new major version that the dashboard has not approved
/// (`approveMajors`; `None`: majors are not held): its outcome says so. The majors seen,
/// held or approved, by image.
pub(super) fn hold_majors(
    found: &Discovery,
    outcomes: &mut Chunked<Outcome>,
    approved: Option<&BTreeSet<(String, u64)>>,
) -> Vec<Waiting> {
    let Some(approved) = approved else {
        return Vec::new();
    };
    let mut seen = BTreeMap::new();
    for (r, o) in found.refs.iter().zip(outcomes.iter_mut()) {
        let Outcome::Update { tag, .. } = &*o else {
            continue;
        };
        let from = r.tag.as_deref().unwrap_or_default();
        let (Some(old), Some(new)) = (board::major_of(from), board::major_of(tag)) else {
            continue;
        };
        if new <= old {
            continue;
        }
        let image = r.image.to_string();
        let ok = approved.contains(&(image.clone(), new));
        let waiting = Waiting {
            image: image.clone(),
            from: from.to_string(),
            to: tag.to_string(),
            major: new,
            place: format!("{}:{}", r.file, r.line),
            approved: ok,
        };
        seen.entry((image, new)).or_insert(waiting);
        if !ok {
            *o = Outcome::Rejected(
                format!("{tag} held back: a new major version awaits approval on the dashboard")
                    .into(),
            );
        }
    }
    seen.into_values().collect()
}

/// What the run gives the dashboard.
pub(super) struct Results<'a> {
    pub pulls: Option<&'a [PullReport]>,
    pub rejected: &'a [Rejected],
    /// The references not updated, and why.
    pub not_updated: Vec<NotUpdated<'a>>,
    pub soaking: Vec<Line>,
    pub awaiting: Vec<Waiting>,
    pub problems: &'a [Problem],
}

/// The board: what the run found, as the dashboard shows it.
pub(super) fn board_of(d: &Dashboard, r: Results<'_>) -> Board {
    let stop_all = d.steering.decided.state.stop_all;
    let deferred = if stop_all {
        "\"Stop all updates\" is ticked"
    } else {
        "the limit of new pull requests, or closed pull requests that could not be read"
    };
    let open = r
        .pulls
        .unwrap_or_default()
        .iter()
        .filter_map(|p| match p.action {
            Action::Close | Action::Failed => None,
            Action::Deferred => Some(OpenPull {
                number: None,
                title: p.title.clone(),
                url: String::new(),
                deferred: Some(deferred.into()),
            }),
            _ => Some(OpenPull {
                number: p.number,
                title: p.title.clone(),
                url: p.url.clone().unwrap_or_default(),
                deferred: None,
            }),
        });
    let rows = &r.not_updated;
    let scheduled = rows
        .iter()
        .filter(|n| board::SCHEDULED_STATUSES.contains(&n.status));
    let scheduled = scheduled.map(|n| Line {
        place: format!("{}:{}", n.file, n.line),
        text: format!(
            "{} {}",
            n.image,
            n.reason.map(|x| x.to_string()).unwrap_or_default()
        ),
    });
    // The issue may be read by more people than the run's log: secrets are taken out first.
    let failing = r.problems.iter().map(|p| Line {
        place: imagebump_http::redact(&p.location),
        text: imagebump_http::redact(&p.message),
    });
    Board {
        stop_all,
        open: open.collect(),
        awaiting: r.awaiting,
        rejected: rejected_lines(r.rejected, rows),
        scheduled: scheduled.collect(),
        soaking: r.soaking,
        failing: failing.collect(),
        notes: d.steering.notes.clone(),
    }
}

/// The rejections that hold a reference back this run, by what said no, then the pins.
fn rejected_lines(all: &[Rejected], rows: &[NotUpdated<'_>]) -> Vec<RejectedLine> {
    let holds = |x: &Rejected| {
        rows.iter().any(|n| {
            n.status == "held-back"
                && n.image.to_string() == x.image
                && n.reason.is_some_and(|why| why.to_string().contains(&x.why))
        })
    };
    let mut by_source: BTreeMap<&str, RejectedLine> = BTreeMap::new();
    for x in all.iter().filter(|x| holds(x)) {
        let line = by_source.entry(&x.source).or_insert_with(|| RejectedLine {
            source: Some(x.source.clone()),
            why: x.why.clone(),
            what: Vec::new(),
        });
        let file = x.file.clone().unwrap_or_else(|| "every file".into());
        let item = (x.image.clone(), x.tag.clone(), file);
        if !line.what.contains(&item) {
            line.what.push(item);
        }
    }
    let pins = rows
        .iter()
        .filter(|n| n.status == "pinned")
        .map(|n| RejectedLine {
            source: None,
            why: n
                .reason
                .map(|x| x.to_string())
                .unwrap_or_else(|| "pinned".into()),
            what: vec![(
                n.image.to_string(),
                n.tag.unwrap_or_default().to_string(),
                format!("{}:{}", n.file, n.line),
            )],
        });
    by_source.into_values().chain(pins).collect()
}

/// The soaking promotions, from `imagebump promotions`' rows.
pub(super) fn soaking(rows: Vec<crate::promote::status::Row>) -> Vec<Line> {
    rows.into_iter()
        .filter(|r| r.next.contains("soaking"))
        .map(|r| Line {
            place: r.file,
            text: format!("{} in {}: {}", r.image, r.environment, r.next),
        })
        .collect()
}

/// Writes the dashboard; a failure is a problem. A dry run writes nothing: the text it
/// would write is returned, for the output.
pub(super) async fn write(
    plan: &RunPlan,
    forge: &dyn Forge,
    d: &Dashboard,
    board: &Board,
) -> Result<(crate::report::DashboardReport, Option<String>), Problem> {
    let body = board::render(board);
    // Validated as one line when the configuration is read; escaped again here, as every
    // title imagebump writes is.
    let title = imagebump_model::escape::terminal(&d.options.title);
    let title = title.as_ref();
    let dry_run = plan.mode != Mode::PullRequests;
    match board::publish(forge, d.steering.issue.as_ref(), (title, &body), dry_run).await {
        Ok(done) => {
            let report = crate::report::DashboardReport {
                action: done.action(),
                number: done.number(),
            };
            Ok((report, said(&done, &body)))
        }
        Err(e) => Err(Problem {
            location: forge.name().into(),
            message: format!("cannot write the dashboard issue: {e}"),
            hint: e.hint(),
        }),
    }
}

/// What was done, logged; what a dry run would write, as it prints it.
fn said(done: &Published, body: &str) -> Option<String> {
    let what = match done {
        Published::Created(n) => format!("dashboard issue #{n} opened"),
        Published::Updated(n) => format!("dashboard issue #{n} updated"),
        Published::Unchanged(n) => format!("dashboard issue #{n} unchanged"),
        Published::WouldCreate => "would open the dashboard issue:".into(),
        Published::WouldUpdate(n) => format!("would update dashboard issue #{n}:"),
    };
    tracing::info!("{what}");
    matches!(done, Published::WouldCreate | Published::WouldUpdate(_)).then(|| {
        format!(
            "\n{what}\n{}",
            imagebump_model::escape::terminal_lines(body)
        )
    })
}

/// Prints a dry run's dashboard text (text output only: JSON output is the report alone).
pub(super) fn print(preview: Option<&str>, out: &Output) {
    use std::io::Write;
    if let (Some(text), crate::cli::Format::Text) = (preview, out.format) {
        let _ = write!(std::io::stdout().lock(), "{text}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Reason;
    use imagebump_model::name::{parse_name, ImageName};

    fn row<'a>(image: &'a ImageName, status: &'static str, reason: &'a str) -> NotUpdated<'a> {
        NotUpdated {
            file: "apps/web/k.yaml",
            line: 3,
            image,
            tag: Some("1.0.0"),
            status,
            reason: Some(Reason::Text(reason)),
        }
    }

    fn rejected(source: &str, why: &str) -> Rejected {
        Rejected {
            image: "registry.test/team/web".into(),
            tag: "1.1.0".into(),
            source: source.into(),
            file: Some("apps/web/k.yaml".into()),
            why: why.into(),
        }
    }

    #[test]
    fn rejections_listed_are_those_that_hold_something_back_and_pins() {
        let web = parse_name("registry.test/team/web").unwrap();
        let redis = parse_name("redis").unwrap();
        let why = "1.1.0 held back: pull request #3 was closed without merging";
        let rows = [
            row(&web, "held-back", why),
            row(&redis, "pinned", "pinned by a marker"),
        ];
        let in_force = [
            rejected("pr-3", "pull request #3 was closed without merging"),
            rejected("pr-1", "pull request #1 was closed without merging"),
        ];
        let web_at = (
            "registry.test/team/web".into(),
            "1.1.0".into(),
            "apps/web/k.yaml".into(),
        );
        let redis_at = (
            "docker.io/library/redis".into(),
            "1.0.0".into(),
            "apps/web/k.yaml:3".into(),
        );
        assert_eq!(
            rejected_lines(&in_force, &rows),
            [
                RejectedLine {
                    source: Some("pr-3".into()),
                    why: in_force[0].why.clone(),
                    what: vec![web_at],
                },
                RejectedLine {
                    source: None,
                    why: "pinned by a marker".into(),
                    what: vec![redis_at],
                },
            ],
            "pr-1 holds nothing back this run"
        );
    }

    #[test]
    fn the_board_redacts_failures_and_lists_what_waits() {
        let redis = parse_name("redis").unwrap();
        let problems = [Problem {
            location: "registry.test".into(),
            message: "HTTP 401 for ghp_abcdefghijklmnopqrstuvwxyz0123456789".into(),
            hint: None,
        }];
        let d = Dashboard {
            options: DashboardOptions::default(),
            steering: Steering::default(),
            login: "imagebump-bot".into(),
        };
        let pulls = [PullReport {
            group: "apps/api".into(),
            branch: "imagebump/apps-api".into(),
            title: "Update api to 2.1.0".into(),
            action: Action::Deferred,
            number: None,
            url: None,
            notes: Vec::new(),
        }];
        let results = Results {
            pulls: Some(&pulls),
            rejected: &[],
            not_updated: vec![row(&redis, "scheduled", "the release freeze holds it")],
            soaking: Vec::new(),
            awaiting: Vec::new(),
            problems: &problems,
        };
        let board = board_of(&d, results);
        assert_eq!(board.scheduled.len(), 1);
        let deferred = board.open[0].deferred.as_deref().unwrap();
        assert!(
            deferred.starts_with("the limit of new pull requests"),
            "{deferred}"
        );
        assert_eq!(board.failing[0].text, "HTTP 401 for <redacted>");
    }
}
