//! The dashboard issue (`pullRequests.dashboard`), from the user's side, on the three
//! forges' fakes: real binary, real git remote, real registry. A person edits the issue
//! between runs as the forge would record it (who changed the description).

// A test crate may panic, count, slice and read the environment: the no-panic lints of
// Cargo.toml are for the library.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::string_slice,
    clippy::disallowed_methods
)]

mod support;

use support::cli::{imagebump, Run};
use support::gitea::{FakeGitea, ISSUES_ONLY};
use support::github::FakeGitHub;
use support::gitlab::FakeGitLab;
use support::TwoApps;

const MARKER: &str = "<!-- imagebump:dashboard -->";
const BOT: &str = "imagebump-bot";
const WEB: &str = "imagebump/apps-web";
/// Where a major update of web goes (majors apart, the default).
const WEB_MAJOR: &str = "imagebump/apps-web-major";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    GitHub,
    GitLab,
    Gitea,
}

enum Fake {
    GitHub(FakeGitHub),
    GitLab(FakeGitLab),
    Gitea(FakeGitea),
}

/// An issue as the tests see it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Issue {
    number: u64,
    user: String,
    title: String,
    body: String,
}

impl Fake {
    async fn start(kind: Kind) -> Fake {
        match kind {
            Kind::GitHub => Fake::GitHub(FakeGitHub::start().await),
            Kind::GitLab => Fake::GitLab(FakeGitLab::start().await),
            Kind::Gitea => Fake::Gitea(FakeGitea::start().await),
        }
    }

    fn token(&self) -> &'static str {
        match self {
            Fake::GitHub(_) => FakeGitHub::TOKEN,
            Fake::GitLab(_) => FakeGitLab::TOKEN,
            Fake::Gitea(_) => FakeGitea::TOKEN,
        }
    }

    fn cli(&self) -> (&'static str, Vec<String>) {
        let (var, forge, url, repo) = match self {
            Fake::GitHub(f) => (
                "GITHUB_TOKEN",
                "github",
                f.api_url(),
                "octo/gitops".to_string(),
            ),
            Fake::GitLab(f) => (
                "GITLAB_TOKEN",
                "gitlab",
                f.api_url(),
                FakeGitLab::PROJECT_PATH.to_string(),
            ),
            Fake::Gitea(f) => (
                "GITEA_TOKEN",
                "gitea",
                f.api_url(),
                "octo/gitops".to_string(),
            ),
        };
        let args = ["--forge", forge, "--forge-url", &url, "--forge-repo", &repo];
        (var, args.iter().map(|s| s.to_string()).collect())
    }

    fn issues(&self) -> Vec<Issue> {
        let all = match self {
            Fake::GitHub(f) => f.issues(),
            Fake::GitLab(f) => f.issues(),
            Fake::Gitea(f) => f.issues(),
        };
        all.into_iter()
            .map(|i| Issue {
                number: i.number,
                user: i.user,
                title: i.title,
                body: i.body,
            })
            .collect()
    }

    /// The dashboard: the one issue the bot opened.
    fn dashboard(&self) -> Issue {
        let mine: Vec<Issue> = self
            .issues()
            .into_iter()
            .filter(|i| i.user == BOT)
            .collect();
        assert_eq!(mine.len(), 1, "one dashboard: {mine:?}");
        mine[0].clone()
    }

    fn add_issue_by(&self, user: &str, title: &str, body: &str) -> u64 {
        match self {
            Fake::GitHub(f) => f.add_issue_by(user, title, body),
            Fake::GitLab(f) => f.add_issue_by(user, title, body),
            Fake::Gitea(f) => f.add_issue_by(user, title, body),
        }
    }

    /// `user` may write to the repository.
    fn make_writer(&self, user: &str) {
        match self {
            Fake::GitHub(f) => f.set_permission(user, "write"),
            Fake::GitLab(f) => f.set_access_level(user, 30),
            Fake::Gitea(f) => f.set_permission(user, "write"),
        }
    }

    /// `user` changes the description in the forge; `Err` when the forge refuses.
    fn edit_as(&self, number: u64, user: &str, body: &str) -> Result<(), String> {
        match self {
            Fake::GitHub(f) => f.edit_issue_as(number, user, body),
            Fake::GitLab(f) => f.edit_issue_as(number, user, body),
            Fake::Gitea(f) => return f.edit_issue_as(number, user, body),
        }
        Ok(())
    }

    /// (number, branch, open) of every pull request.
    fn pulls(&self) -> Vec<(u64, String, bool)> {
        let mut out: Vec<_> = match self {
            Fake::GitHub(f) => f
                .pulls()
                .into_iter()
                .map(|p| (p.number, p.branch, p.state == "open"))
                .collect(),
            Fake::GitLab(f) => f
                .pulls()
                .into_iter()
                .map(|m| (m.iid, m.source_branch, m.state == "opened"))
                .collect(),
            Fake::Gitea(f) => f
                .pulls()
                .into_iter()
                .map(|p| (p.number, p.branch, p.state == "open"))
                .collect(),
        };
        out.sort();
        out
    }

    fn open_for(&self, branch: &str) -> Vec<u64> {
        self.pulls()
            .into_iter()
            .filter(|p| p.1 == branch && p.2)
            .map(|p| p.0)
            .collect()
    }

    fn close(&self, number: u64) {
        match self {
            Fake::GitHub(f) => f.close(number),
            Fake::GitLab(f) => f.close(number),
            Fake::Gitea(f) => f.close(number),
        }
    }

    /// "METHOD path" of the calls that changed something.
    fn writes(&self) -> Vec<String> {
        match self {
            Fake::GitHub(f) => f.write_calls().iter().map(|c| c.line()).collect(),
            Fake::GitLab(f) => f.write_calls().iter().map(|c| c.line()).collect(),
            Fake::Gitea(f) => f.write_calls().iter().map(|c| c.line()).collect(),
        }
    }

    fn clear_calls(&self) {
        match self {
            Fake::GitHub(f) => f.clear_calls(),
            Fake::GitLab(f) => f.clear_calls(),
            Fake::Gitea(f) => f.clear_calls(),
        }
    }
}

struct Setup {
    apps: TwoApps,
    forge: Fake,
}

/// The dashboard on with `options` (a flow mapping's entries). Gitea names nobody who ticks
/// a box: there the scenarios run with the operator's `trustIssueWriters`.
async fn setup(kind: Kind, options: &str) -> Setup {
    let trust = if kind == Kind::Gitea {
        "trustIssueWriters: true"
    } else {
        ""
    };
    let fields: Vec<&str> = [options, trust]
        .into_iter()
        .filter(|f| !f.is_empty())
        .collect();
    let config = format!("pullRequests:\n  dashboard: {{{}}}\n", fields.join(", "));
    setup_with(kind, &config).await
}

async fn setup_with(kind: Kind, config: &str) -> Setup {
    let forge = Fake::start(kind).await;
    Setup {
        apps: TwoApps::start(forge.token(), config),
        forge,
    }
}

impl Setup {
    async fn run(&self, code: i32, extra: &[&str]) -> Run {
        let (var, forge_args) = self.forge.cli();
        imagebump()
            .arg("run")
            .arg(self.apps.server.url())
            .arg("--config")
            .arg(self.apps.config())
            .args(forge_args)
            .args(extra)
            .env(var, self.forge.token())
            .code(code)
            .run_async()
            .await
    }

    fn refs(&self) -> String {
        self.apps.server.git(&[
            "for-each-ref",
            "--format=%(refname)",
            "refs/imagebump/dashboard/",
        ])
    }
}

/// The body with the box of `key` ticked (or unticked).
fn tick(body: &str, key: &str, on: bool) -> String {
    let end = format!("<!-- imagebump:box {key} -->");
    let (from, to) = if on {
        ("- [ ] ", "- [x] ")
    } else {
        ("- [x] ", "- [ ] ")
    };
    let lines: Vec<String> = body
        .lines()
        .map(|l| {
            if l.ends_with(&end) {
                l.replacen(from, to, 1)
            } else {
                l.to_string()
            }
        })
        .collect();
    assert!(
        lines.iter().any(|l| l.ends_with(&end) && l.starts_with(to)),
        "no box {key}: {body}"
    );
    lines.join("\n")
}

/// Created on the first run with every pull request; an unchanged run writes nothing; a
/// closed pull request is listed as rejected; a tick by someone who cannot write is
/// ignored (said in the output and on the dashboard; Gitea refuses their edit); a writer's
/// tick lifts the rejection and the pull request comes back, durably.
async fn lifecycle(kind: Kind) {
    let s = setup(kind, "").await;
    let dry = s.run(0, &["--dry-run"]).await;
    assert!(
        dry.stdout.contains("would open the dashboard issue:"),
        "{dry}"
    );
    assert!(s.forge.issues().is_empty(), "a dry run writes nothing");

    let opened = s.run(0, &["--output", "json"]).await.json();
    let board = s.forge.dashboard();
    assert_eq!(
        opened["dashboard"],
        serde_json::json!({"action": "created", "number": board.number})
    );
    assert_eq!(board.title, "imagebump dashboard");
    assert!(board.body.starts_with(MARKER), "{}", board.body);
    assert!(
        board.body.contains("## Open pull requests (2)"),
        "{}",
        board.body
    );
    s.forge.clear_calls();
    let again = s.run(0, &["--output", "json"]).await;
    assert_eq!(
        s.forge.writes(),
        Vec::<String>::new(),
        "nothing changed: {again}"
    );
    assert_eq!(again.json()["dashboard"]["action"], "unchanged");

    let web = s.forge.open_for(WEB)[0];
    s.forge.close(web);
    s.run(0, &[]).await;
    let board = s.forge.dashboard();
    let key = format!("lift pr-{web}");
    assert!(board.body.contains("## Rejected (1)"), "{}", board.body);
    let ticked = tick(&board.body, &key, true);

    a_non_writer_tick_is_ignored(&s, board.number, &ticked).await;

    s.forge.make_writer("alice");
    let board = s.forge.dashboard();
    s.forge
        .edit_as(board.number, "alice", &tick(&board.body, &key, true))
        .unwrap();
    let run = s.run(0, &[]).await;
    let back = s.forge.open_for(WEB);
    assert_eq!(back.len(), 1, "the pull request is back: {run}");
    assert_ne!(back[0], web);
    assert_eq!(s.refs(), format!("refs/imagebump/dashboard/lift/pr-{web}"));
    assert!(
        !s.forge.dashboard().body.contains("## Rejected"),
        "{}",
        s.forge.dashboard().body
    );
    s.forge.clear_calls();
    let pushes = s.apps.pushes();
    let run = s.run(0, &[]).await;
    assert_eq!(s.forge.open_for(WEB), back, "kept open: {run}");
    assert_eq!(s.apps.pushes(), pushes, "no push, no ref written: {run}");
    assert_eq!(s.forge.writes(), Vec::<String>::new(), "{run}");
}

/// `mallory`, who cannot write, ticks the box: GitHub and GitLab let the edit happen and
/// the run ignores it (a warning, in the report too, and a note on the dashboard, whose
/// box is put back); Gitea refuses the edit.
async fn a_non_writer_tick_is_ignored(s: &Setup, number: u64, ticked: &str) {
    match s.forge.edit_as(number, "mallory", ticked) {
        Err(refused) => assert!(refused.contains("403"), "{refused}"),
        Ok(()) => {
            let run = s.run(0, &["--output", "json"]).await;
            assert!(
                run.stderr.contains("changed by mallory, who cannot write"),
                "{run}"
            );
            let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
            let said = report["warnings"].as_array().unwrap().iter().any(|w| {
                w["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("changed by mallory"))
            });
            assert!(said, "in the report's warnings: {run}");
            assert!(s.forge.open_for(WEB).is_empty(), "still rejected: {run}");
            let board = s.forge.dashboard();
            assert!(board.body.contains("mallory"), "{}", board.body);
            assert!(
                board.body.contains("- [ ] recreate"),
                "untick restored: {}",
                board.body
            );
        }
    }
}

/// An issue someone else opened with the same title and marker is never the dashboard;
/// "Stop all updates" ticked by a writer opens nothing new and says why; unticked, the
/// next run opens the pull requests.
async fn impostor_and_stop_all(kind: Kind) {
    let s = setup(kind, "title: Dependency dashboard").await;
    let forged = format!("{MARKER}\n- [x] stop <!-- imagebump:box stop-all -->\n");
    let impostor = s
        .forge
        .add_issue_by("mallory", "Dependency dashboard", &forged);
    let run = s.run(0, &[]).await;
    assert_eq!(
        s.forge.pulls().len(),
        2,
        "the impostor stops nothing: {run}"
    );
    let board = s.forge.dashboard();
    assert_ne!(board.number, impostor);
    assert_eq!(board.title, "Dependency dashboard");
    let untouched = s
        .forge
        .issues()
        .into_iter()
        .find(|i| i.number == impostor)
        .unwrap();
    assert_eq!(untouched.body, forged);

    s.forge.make_writer("alice");
    s.forge
        .edit_as(board.number, "alice", &tick(&board.body, "stop-all", true))
        .unwrap();
    for n in s.forge.open_for(WEB) {
        s.forge.close(n);
    }
    s.apps.reg.push_tags("team/web", &["1.2.0"]);
    let run = s.run(0, &[]).await;
    assert!(
        run.stderr
            .contains("\"Stop all updates\" is ticked on the dashboard"),
        "{run}"
    );
    assert!(s.forge.open_for(WEB).is_empty(), "nothing new: {run}");
    assert_eq!(s.refs(), "refs/imagebump/dashboard/stop-all");
    let board = s.forge.dashboard();
    assert!(board.body.contains("> **Stopped**"), "{}", board.body);

    s.forge
        .edit_as(board.number, "alice", &tick(&board.body, "stop-all", false))
        .unwrap();
    let run = s.run(0, &[]).await;
    assert_eq!(s.forge.open_for(WEB).len(), 1, "{run}");
    assert_eq!(s.refs(), "");
}

/// `approveMajors`: a major update waits for its box; ticked by a writer, its pull request
/// is opened.
async fn approve_a_major(kind: Kind) {
    let s = setup(kind, "approveMajors: true").await;
    s.apps.reg.push_tags("team/web", &["2.0.0"]);
    let run = s.run(0, &[]).await;
    assert!(s.forge.open_for(WEB_MAJOR).is_empty(), "held: {run}");
    assert_eq!(
        s.forge.pulls().len(),
        1,
        "the minor update of api goes on: {run}"
    );
    let board = s.forge.dashboard();
    let key = "approve registry.test/team/web 2";
    assert!(board.body.contains(key), "{}", board.body);
    s.forge.make_writer("alice");
    s.forge
        .edit_as(board.number, "alice", &tick(&board.body, key, true))
        .unwrap();
    let run = s.run(0, &[]).await;
    assert_eq!(s.forge.open_for(WEB_MAJOR).len(), 1, "approved: {run}");
    assert_eq!(
        s.refs(),
        "refs/imagebump/dashboard/approve/registry.test/team/web/2"
    );
}

macro_rules! over_the_forges {
    ($($scenario:ident),* $(,)?) => {
        mod github {
            $( #[tokio::test(flavor = "multi_thread")]
               async fn $scenario() { super::$scenario(super::Kind::GitHub).await } )*
        }
        mod gitlab {
            $( #[tokio::test(flavor = "multi_thread")]
               async fn $scenario() { super::$scenario(super::Kind::GitLab).await } )*
        }
        mod gitea {
            $( #[tokio::test(flavor = "multi_thread")]
               async fn $scenario() { super::$scenario(super::Kind::Gitea).await } )*
        }
    };
}

over_the_forges!(lifecycle, impostor_and_stop_all, approve_a_major);

/// The forge refuses to open the dashboard: the run says so (exit 1), the pull requests
/// are opened all the same, and the next run opens the dashboard.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_dashboard_write_leaves_the_pull_requests_alone() {
    let s = setup(Kind::GitHub, "").await;
    let Fake::GitHub(gh) = &s.forge else {
        panic!("a GitHub setup")
    };
    let issues = "/repos/octo/gitops/issues";
    gh.fail_next("POST", issues, 1, support::github::Fault::Status(500));
    let run = s.run(1, &[]).await;
    assert!(
        run.stderr
            .contains("cannot write the dashboard issue: HTTP 500"),
        "{run}"
    );
    assert_eq!(s.forge.pulls().len(), 2, "{run}");
    assert!(s.forge.issues().is_empty());
    gh.clear_calls();
    s.run(0, &[]).await;
    assert!(s.forge.dashboard().body.starts_with(MARKER));
    assert_eq!(s.forge.pulls().len(), 2, "no duplicate");
    let whoami = gh
        .calls()
        .iter()
        .filter(|c| c.line() == "GET /user")
        .count();
    assert_eq!(whoami, 1, "the account is asked once a run");
}

/// Gitea does not say who ticked a box, and a team with Issues: Write but Code: Read may
/// tick one: without the operator's `trustIssueWriters`, no tick steers (a writer's
/// neither), the run says why and puts the box back.
#[tokio::test(flavor = "multi_thread")]
async fn gitea_ticks_steer_only_when_the_operator_trusts_issue_writers() {
    let s = setup_with(Kind::Gitea, "pullRequests:\n  dashboard: true\n").await;
    s.run(0, &[]).await;
    let Fake::Gitea(gitea) = &s.forge else {
        panic!("a Gitea setup")
    };
    gitea.set_permission("trudy", ISSUES_ONLY);
    s.forge.make_writer("alice");
    for who in ["trudy", "alice"] {
        let board = s.forge.dashboard();
        let ticked = tick(&board.body, "stop-all", true);
        s.forge.edit_as(board.number, who, &ticked).unwrap();
        let run = s.run(0, &[]).await;
        assert!(
            run.stderr.contains(
                "the dashboard's boxes were ignored: Gitea does not say who changed them"
            ),
            "{who}: {run}"
        );
        assert!(run.stderr.contains("trustIssueWriters"), "{run}");
        assert_eq!(s.refs(), "", "{who} stopped nothing: {run}");
        let board = s.forge.dashboard();
        assert!(!board.body.contains("> **Stopped**"), "{}", board.body);
        assert_eq!(ticks_of(&board.body, "stop-all"), Some(false), "put back");
    }
}

/// GitLab: a reporter ticks "Stop all updates", then a developer edits the description:
/// the developer's change does not vouch for the reporter's, so nothing steers. Once
/// imagebump has rewritten the issue, the developer's own tick counts.
#[tokio::test(flavor = "multi_thread")]
async fn gitlab_a_writer_edit_does_not_vouch_for_an_earlier_tick() {
    let s = setup(Kind::GitLab, "").await;
    s.run(0, &[]).await;
    let Fake::GitLab(gitlab) = &s.forge else {
        panic!("a GitLab setup")
    };
    gitlab.set_access_level("rita", 20);
    s.forge.make_writer("alice");
    let board = s.forge.dashboard();
    let ticked = tick(&board.body, "stop-all", true);
    s.forge.edit_as(board.number, "rita", &ticked).unwrap();
    let noted = format!("{ticked}\n\nLooks good.\n");
    s.forge.edit_as(board.number, "alice", &noted).unwrap();
    let run = s.run(0, &[]).await;
    assert!(
        run.stderr
            .contains("changed by rita, who cannot write to the repository"),
        "{run}"
    );
    assert_eq!(s.refs(), "", "not stopped: {run}");

    let board = s.forge.dashboard();
    let ticked = tick(&board.body, "stop-all", true);
    s.forge.edit_as(board.number, "alice", &ticked).unwrap();
    let run = s.run(0, &[]).await;
    assert_eq!(s.refs(), "refs/imagebump/dashboard/stop-all", "{run}");
}

/// Whether the box of `key` in `body` is ticked; `None` without one.
fn ticks_of(body: &str, key: &str) -> Option<bool> {
    let end = format!("<!-- imagebump:box {key} -->");
    let line = body.lines().find(|l| l.ends_with(&end))?;
    Some(line.starts_with("- [x] "))
}
