//! Promotion from git history (docs/promotion.md): a real git repository with a scripted
//! base-branch history (controlled committer dates, a merge, `git revert`s) over three
//! environments, served over `git://`; a real registry for dev; runs at several "now"
//! instants (IMAGEBUMP_TEST_NOW) with the exact result for every environment.

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

use std::path::Path;

use support::cli::imagebump;
use support::{git, git_command, GitServer, Registry, RegistryMode};

/// A commit of `files` on the current branch of `dir`, committed (and authored) at `date`.
fn commit_at(dir: &Path, files: &[(&str, &str)], message: &str, date: &str) -> String {
    for (rel, text) in files {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    git(dir, &["add", "--all"]);
    dated(dir, &["commit", "--quiet", "-m", message], date);
    git(dir, &["rev-parse", "HEAD"])
}

/// `git <args>` in `dir` with author and committer dates `date`.
fn dated(dir: &Path, args: &[&str], date: &str) {
    let out = git_command()
        .current_dir(dir)
        .args(args)
        .env("GIT_COMMITTER_DATE", date)
        .env("GIT_AUTHOR_DATE", date)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn kustomization(tag: &str) -> String {
    format!("images:\n  - name: registry.test/team/web\n    newTag: {tag}\n")
}

fn values(tag: &str) -> String {
    format!("image:\n  repository: registry.test/team/api\n  tag: {tag}\n")
}

fn deployment(tag: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: worker\nspec:\n  template:\n    spec:\n      containers:\n        - name: worker\n          image: registry.test/team/worker:{tag}\n"
    )
}

const WEB: &str = "apps/web/overlays";
const API: &str = "apps/api/overlays";
const WORKER: &str = "apps/worker/overlays";

const CONFIG: &str = "images:
  - match: registry.test/team/*
    path: apps/*/overlays/dev/**
    delivery: push
  - match: registry.test/team/*
    path: apps/*/overlays/staging/**
    promoteFrom: {path: \"apps/{app}/overlays/dev\", soak: 2h}
  - match: registry.test/team/*
    path: apps/*/overlays/prod/**
    promoteFrom: {path: \"apps/{app}/overlays/staging\", soak: 24h}
# The story's commits stand for imagebump's: their author is imagebump's.
pullRequests:
  author: {name: imagebump test, email: test@imagebump.invalid}
";

struct Story {
    _reg: Registry,
    server: GitServer,
    _work: tempfile::TempDir,
    cfg: tempfile::TempDir,
}

/// The history, oldest first (all times UTC):
/// - 11-18 00:00 every environment at web 1.0.0, api 2.0.0, worker 3.0.0
/// - 11-18 01:00 dev api 2.1.0; 04:00 staging api 2.1.0 (an imagebump commit)
/// - 11-19 12:00 that staging commit reverted (2.1.0 had run there 32 h)
/// - 11-20 01:00 dev web 1.1.0; 02:30 dev worker 3.1.0
/// - staging web 1.1.0 on a branch (committed 03:00), merged into main at 05:00
/// - 11-20 06:00 dev web 1.2.0, reverted at 10:00; 20:00 dev web 1.3.0
fn story() -> Story {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.0.0", "1.1.0", "1.2.0", "1.3.0"]);
    reg.push_tags("team/api", &["2.0.0", "2.1.0"]);
    reg.push_tags("team/worker", &["3.0.0", "3.1.0"]);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    git(dir, &["init", "--quiet", "-b", "main"]);
    let mut all = Vec::new();
    for env in ["dev", "staging", "prod"] {
        all.push((
            format!("{WEB}/{env}/kustomization.yaml"),
            kustomization("1.0.0"),
        ));
        all.push((format!("{API}/{env}/values.yaml"), values("2.0.0")));
        all.push((
            format!("{WORKER}/{env}/deployment.yaml"),
            deployment("3.0.0"),
        ));
    }
    let all: Vec<(&str, &str)> = all.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    commit_at(dir, &all, "three environments", "2026-11-18T00:00:00Z");
    let at = |file: String, text: String, msg: &str, date: &str| {
        commit_at(dir, &[(file.as_str(), text.as_str())], msg, date)
    };
    at(
        format!("{API}/dev/values.yaml"),
        values("2.1.0"),
        "dev api 2.1.0",
        "2026-11-18T01:00:00Z",
    );
    let api_staging = at(
        format!("{API}/staging/values.yaml"),
        values("2.1.0"),
        "Update registry.test/team/api to 2.1.0\n\nImagebump-Update: registry.test/team/api 2.0.0 -> 2.1.0 in apps/api/overlays/staging/values.yaml",
        "2026-11-18T04:00:00Z",
    );
    dated(
        dir,
        &["revert", "--no-edit", &api_staging],
        "2026-11-19T12:00:00Z",
    );
    at(
        format!("{WEB}/dev/kustomization.yaml"),
        kustomization("1.1.0"),
        "dev web 1.1.0",
        "2026-11-20T01:00:00Z",
    );
    at(
        format!("{WORKER}/dev/deployment.yaml"),
        deployment("3.1.0"),
        "dev worker 3.1.0",
        "2026-11-20T02:30:00Z",
    );
    git(dir, &["checkout", "--quiet", "-b", "promote-web"]);
    at(
        format!("{WEB}/staging/kustomization.yaml"),
        kustomization("1.1.0"),
        "staging web 1.1.0",
        "2026-11-20T03:00:00Z",
    );
    git(dir, &["checkout", "--quiet", "main"]);
    dated(
        dir,
        &[
            "merge",
            "--quiet",
            "--no-ff",
            "-m",
            "Merge promote-web",
            "promote-web",
        ],
        "2026-11-20T05:00:00Z",
    );
    let web12 = at(
        format!("{WEB}/dev/kustomization.yaml"),
        kustomization("1.2.0"),
        "dev web 1.2.0",
        "2026-11-20T06:00:00Z",
    );
    dated(
        dir,
        &["revert", "--no-edit", &web12],
        "2026-11-20T10:00:00Z",
    );
    at(
        format!("{WEB}/dev/kustomization.yaml"),
        kustomization("1.3.0"),
        "dev web 1.3.0",
        "2026-11-20T20:00:00Z",
    );
    let server = GitServer::daemon(dir, "gitops");
    seen_as_they_landed(&server);
    let cfg = tempfile::tempdir().unwrap();
    std::fs::write(
        cfg.path().join("imagebump.yaml"),
        format!(
            "registries:\n  - prefix: registry.test\n    url: {}\n{CONFIG}",
            reg.base_url()
        ),
    )
    .unwrap();
    Story {
        _reg: reg,
        server,
        _work: work,
        cfg,
    }
}

/// Records that imagebump saw every version of the story's source environments no later
/// than its commit landed (as a job running all along would have): soak then counts from
/// the committer dates the story sets (docs/promotion.md, "When soak starts"). Without
/// them a remote's versions count from the first run that sees them.
fn seen_as_they_landed(server: &GitServer) {
    let main = server.branch_sha("main").unwrap();
    let apps = [
        ("web", &["1.0.0", "1.1.0", "1.2.0", "1.3.0"][..]),
        ("api", &["2.0.0", "2.1.0"][..]),
        ("worker", &["3.0.0", "3.1.0"][..]),
    ];
    for (app, tags) in apps {
        for env in ["dev", "staging"] {
            for tag in tags {
                let key = (
                    format!("apps/{app}/overlays/{env}"),
                    format!("registry.test/team/{app}"),
                    tag.to_string(),
                );
                let name = imagebump::promote::seen::ref_name(&key, 0);
                server.git(&["update-ref", &name, &main]);
            }
        }
    }
}

impl Story {
    /// `imagebump <command> URL --config … <extra>` at `now`.
    fn cli(&self, command: &[&str], extra: &[&str], now: &str) -> support::cli::Cli {
        imagebump()
            .args(command)
            .arg(self.server.url())
            .arg("--config")
            .arg(self.cfg.path().join("imagebump.yaml"))
            .args(extra)
            .env("IMAGEBUMP_TEST_NOW", now)
    }

    fn dry_run(&self, now: &str, code: i32) -> support::cli::Run {
        self.cli(&["run", "--dry-run"], &[], now).code(code).run()
    }
}

/// The part of a dry run's output from the updates table (or what was not updated) on.
fn tables(stdout: &str) -> &str {
    let at = stdout
        .find("IMAGE ")
        .or_else(|| stdout.find("held back"))
        .unwrap_or(0);
    &stdout[at..]
}

const API_HELD: &str = "held back by a rejection (1):
  apps/api/overlays/staging/values.yaml:3: registry.test/team/api 2.1.0 held back: commit 2c93f3eb59 was reverted by 88c6f9e5b1
";

/// Staging takes from dev what ran there 2 h and was not reverted (worker at once; web's
/// 1.2.0 ran 4 h but was reverted, its 1.3.0 not yet 2 h); prod takes from staging what ran
/// there 24 h since the merge commit brought it (not since the branch's own commit), and
/// never api 2.1.0, which ran 32 h in staging but was reverted there (and is held back in
/// staging itself). Dev follows the registry (one tag listing per repository: the promoted
/// references ask the registry nothing).
#[test]
fn each_environment_takes_what_soaked_upstream_at_each_instant() {
    let s = story();
    let run = s.dry_run("2026-11-20T21:00:00Z", 0);
    assert_eq!(
        tables(&run.filtered_stdout()),
        format!(
            "IMAGE                      FROM   TO     LOCATION
registry.test/team/worker  3.0.0  3.1.0  apps/worker/overlays/staging/deployment.yaml:10

promotions:
  worker 3.0.0 → 3.1.0 (in dev since 2026-11-20 02:30, 18 h) in apps/worker/overlays/staging/deployment.yaml

BRANCH                                  ACTION  PR  TITLE
imagebump/apps-worker-overlays-staging  create  -   Update registry.test/team/worker to 3.1.0

{API_HELD}
1 update(s) proposed in 1 file(s); 9 references: 1 to update, 7 up to date, 1 held back; 3 repositories asked
"
        )
    );
    let json = s
        .cli(
            &["run", "--dry-run", "--output", "json"],
            &[],
            "2026-11-20T21:00:00Z",
        )
        .run()
        .json();
    assert_eq!(json["requests"]["tagListPages"], 3, "{}", json["requests"]);
    // For the platforms, the one update's current and promoted images.
    assert_eq!(json["requests"]["manifests"], 2);

    // 7.5 h after dev got web 1.3.0; web 1.1.0 has been in staging 23.5 h since the merge
    // (25.5 h since the branch's commit, which does not count).
    let run = s.dry_run("2026-11-21T04:30:00Z", 0);
    assert_eq!(
        tables(&run.filtered_stdout()),
        format!(
            "IMAGE                      FROM   TO     LOCATION
registry.test/team/web     1.1.0  1.3.0  apps/web/overlays/staging/kustomization.yaml:3
registry.test/team/worker  3.0.0  3.1.0  apps/worker/overlays/staging/deployment.yaml:10

promotions:
  web 1.1.0 → 1.3.0 (in dev since 2026-11-20 20:00, 8 h) in apps/web/overlays/staging/kustomization.yaml
  worker 3.0.0 → 3.1.0 (in dev since 2026-11-20 02:30, 26 h) in apps/worker/overlays/staging/deployment.yaml

BRANCH                                  ACTION  PR  TITLE
imagebump/apps-web-overlays-staging     create  -   Update registry.test/team/web to 1.3.0
imagebump/apps-worker-overlays-staging  create  -   Update registry.test/team/worker to 3.1.0

{API_HELD}
2 update(s) proposed in 2 file(s); 9 references: 2 to update, 6 up to date, 1 held back; 3 repositories asked
"
        )
    );

    let run = s.dry_run("2026-11-21T05:00:00Z", 0);
    assert_eq!(
        tables(&run.filtered_stdout()),
        format!(
            "IMAGE                      FROM   TO     LOCATION
registry.test/team/web     1.0.0  1.1.0  apps/web/overlays/prod/kustomization.yaml:3
registry.test/team/web     1.1.0  1.3.0  apps/web/overlays/staging/kustomization.yaml:3
registry.test/team/worker  3.0.0  3.1.0  apps/worker/overlays/staging/deployment.yaml:10

promotions:
  web 1.0.0 → 1.1.0 (in staging since 2026-11-20 05:00, 24 h) in apps/web/overlays/prod/kustomization.yaml
  web 1.1.0 → 1.3.0 (in dev since 2026-11-20 20:00, 9 h) in apps/web/overlays/staging/kustomization.yaml
  worker 3.0.0 → 3.1.0 (in dev since 2026-11-20 02:30, 26 h) in apps/worker/overlays/staging/deployment.yaml

BRANCH                                  ACTION  PR  TITLE
imagebump/apps-web-overlays-prod        create  -   Update registry.test/team/web to 1.1.0
imagebump/apps-web-overlays-staging     create  -   Update registry.test/team/web to 1.3.0
imagebump/apps-worker-overlays-staging  create  -   Update registry.test/team/worker to 3.1.0

{API_HELD}
3 update(s) proposed in 3 file(s); 9 references: 3 to update, 5 up to date, 1 held back; 3 repositories asked
"
        )
    );
}

/// A bad test clock is a configuration problem, not a silent fallback.
#[test]
fn a_bad_test_clock_is_reported() {
    let s = story();
    let run = s.dry_run("yesterday", 1);
    run.assert_stderr_contains("IMAGEBUMP_TEST_NOW: \"yesterday\" is not an RFC 3339 time");
}

/// Pull-request mode at the third instant, with the GitHub fake: one pull request per
/// environment that moves, prod's body showing the path its version took (dev, then
/// staging, with the commits that brought it). Closing staging's pull request for web 1.3.0
/// rejects it there: the next run holds it back and leaves prod's pull request alone.
#[tokio::test(flavor = "multi_thread")]
async fn pull_requests_show_the_path_and_a_rejection_holds_downstream() {
    use support::github::FakeGitHub;
    let s = story();
    let forge = FakeGitHub::start().await;
    let api = forge.api_url();
    let repo = format!("{}/{}", FakeGitHub::OWNER, FakeGitHub::REPO);
    let flags = [
        "--forge",
        "github",
        "--forge-url",
        &api,
        "--forge-repo",
        &repo,
    ];
    let run = |code: i32| {
        s.cli(&["run"], &flags, "2026-11-21T05:00:00Z")
            .env("GITHUB_TOKEN", FakeGitHub::TOKEN)
            .code(code)
            .run_async()
    };
    run(0).await;
    let mut branches: Vec<String> = forge.pulls().iter().map(|p| p.branch.clone()).collect();
    branches.sort();
    assert_eq!(
        branches,
        [
            "imagebump/apps-web-overlays-prod",
            "imagebump/apps-web-overlays-staging",
            "imagebump/apps-worker-overlays-staging"
        ]
    );
    let sha = |subject: &str| {
        git(
            &s.server.bare_dir(),
            &["rev-parse", "--short=7", &format!(":/{subject}")],
        )
    };
    let pull = |branch: &str| {
        forge
            .pulls()
            .into_iter()
            .find(|p| p.branch == branch)
            .unwrap()
    };
    let prod = pull("imagebump/apps-web-overlays-prod");
    let prod_body = prod.body.clone().unwrap_or_default();
    let expected = format!(
        "**Promotion path** (when each version reached each environment on the base branch):\n\n\
         - `web` 1.1.0: dev since 2026-11-20 01:00 (`{}`), staging since 2026-11-20 05:00 (`{}`)\n",
        sha("dev web 1.1.0"),
        sha("Merge promote-web")
    );
    assert!(prod_body.contains(&expected), "{prod_body}");
    let staging = pull("imagebump/apps-web-overlays-staging");
    let staging_body = staging.body.clone().unwrap_or_default();
    assert!(
        staging_body.contains(&format!(
            "- `web` 1.3.0: dev since 2026-11-20 20:00 (`{}`)\n",
            sha("dev web 1.3.0")
        )),
        "{}",
        staging_body
    );
    forge.close(staging.number);
    let again = run(0).await;
    again.assert_stdout_contains(
        "apps/web/overlays/staging/kustomization.yaml:3: registry.test/team/web 1.3.0 held back: ",
    );
    let open: Vec<String> = forge
        .pulls()
        .iter()
        .filter(|p| p.state == "open")
        .map(|p| p.branch.clone())
        .collect();
    assert_eq!(open.len(), 2, "{open:?}");
    assert!(open.contains(&"imagebump/apps-web-overlays-prod".to_string()));
    assert_eq!(pull("imagebump/apps-web-overlays-prod").number, prod.number);
}

/// `imagebump promotions` at the second instant: every environment, what runs there since
/// when, and what is next or why not yet (soaking, reverted upstream, held back).
#[test]
fn promotions_says_what_is_where_and_what_is_next() {
    let s = story();
    let run = s.cli(&["promotions"], &[], "2026-11-21T04:30:00Z").run();
    assert_eq!(
        run.filtered_stdout(),
        "APP     ENVIRONMENT  VERSION  SINCE             NEXT
api     dev          2.1.0    2026-11-18 01:00  follows the registry
api     staging      2.0.0    2026-11-19 12:00  up to date; 2.1.0 held back: commit 2c93f3eb59 was reverted by 88c6f9e5b1
api     prod         2.0.0    2026-11-18 00:00  2.1.0: rejected in staging: commit 2c93f3eb59 was reverted by 88c6f9e5b1
web     dev          1.3.0    2026-11-20 20:00  follows the registry
web     staging      1.1.0    2026-11-20 05:00  1.3.0 ready (in dev since 2026-11-20 20:00, 8 h)
web     prod         1.0.0    2026-11-18 00:00  1.1.0: soaking in staging: 30m to go
worker  dev          3.1.0    2026-11-20 02:30  follows the registry
worker  staging      3.0.0    2026-11-18 00:00  3.1.0 ready (in dev since 2026-11-20 02:30, 26 h)
worker  prod         3.0.0    2026-11-18 00:00  up to date
"
    );
}

/// A history cut short (`--history-depth 3`: the last three first-parent commits, from
/// 11-20 06:00): versions already there count from the oldest commit read, "at least", so
/// soak is under-estimated, never over-estimated: worker still goes to staging (23 h ≥ 2 h),
/// web 1.1.0 no longer reaches prod (23 h < 24 h). Reverts before the window are not seen.
#[test]
fn a_cut_history_counts_from_its_oldest_commit() {
    let s = story();
    let run = s
        .cli(
            &["run", "--dry-run"],
            &["--history-depth", "3"],
            "2026-11-21T05:00:00Z",
        )
        .run();
    let out = run.filtered_stdout();
    let promotions = &out[out.find("promotions:").unwrap()..out.find("BRANCH").unwrap()];
    assert_eq!(
        promotions,
        "promotions:
  api 2.0.0 → 2.1.0 (in dev since at least 2026-11-20 06:00, 23 h) in apps/api/overlays/staging/values.yaml
  web 1.1.0 → 1.3.0 (in dev since 2026-11-20 20:00, 9 h) in apps/web/overlays/staging/kustomization.yaml
  worker 3.0.0 → 3.1.0 (in dev since at least 2026-11-20 06:00, 23 h) in apps/worker/overlays/staging/deployment.yaml

"
    );
}

/// The history of many files is read a chunk of paths at a time: one path per command
/// gives exactly what one command for all gives (commits in first-parent order, every
/// change, every blob at the tip).
#[test]
fn file_history_is_the_same_in_chunks() {
    support::isolate_process_env();
    let s = story();
    let git = imagebump::source::git::Git::new(None);
    let mut paths = Vec::new();
    for app in [WEB, API, WORKER] {
        for env in ["dev", "staging", "prod"] {
            let file = match app {
                WEB => "kustomization.yaml",
                API => "values.yaml",
                _ => "deployment.yaml",
            };
            paths.push(format!("{app}/{env}/{file}"));
        }
    }
    let dir = s._work.path();
    let whole = git
        .file_history_in(dir, "HEAD", &paths, (200, 1000))
        .unwrap();
    let chunked = git.file_history_in(dir, "HEAD", &paths, (200, 1)).unwrap();
    assert_eq!(whole, chunked);
    assert_eq!(whole.tip.len(), 9);
    let subjects: Vec<&str> = whole.commits.iter().map(|c| c.subject.as_str()).collect();
    assert_eq!(
        subjects,
        [
            "dev web 1.3.0",
            "Revert \"dev web 1.2.0\"",
            "dev web 1.2.0",
            "Merge promote-web",
            "dev worker 3.1.0",
            "dev web 1.1.0",
            "Revert \"Update registry.test/team/api to 2.1.0\"",
            "Update registry.test/team/api to 2.1.0",
            "dev api 2.1.0",
            "three environments"
        ]
    );
    assert_eq!(whole.commits.last().unwrap().changes.len(), 9);
    // Three commits back: only the window's commits, and its oldest time.
    let cut = git.file_history_in(dir, "HEAD", &paths, (3, 1)).unwrap();
    assert_eq!(cut.commits.len(), 3);
    assert_eq!(cut.oldest.unwrap().1, 1_795_154_400); // 2026-11-20 06:00
}

/// A run on one environment's directory of a local checkout still reads its source
/// outside that directory.
#[test]
fn a_run_on_one_directory_reads_its_source_outside_it() {
    let s = story();
    // The rules in the repository's own file (untracked: the history stays the story's),
    // the registry in the operator's.
    std::fs::write(s._work.path().join("imagebump.yaml"), CONFIG).unwrap();
    let operator = s.cfg.path().join("operator.yaml");
    let full = std::fs::read_to_string(s.cfg.path().join("imagebump.yaml")).unwrap();
    std::fs::write(&operator, full.replace(CONFIG, "")).unwrap();
    let prod = s._work.path().join(WEB).join("prod");
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(&prod)
        .arg("--config")
        .arg(&operator)
        .env("IMAGEBUMP_TEST_NOW", "2026-11-21T05:00:00Z")
        .run();
    let out = run.filtered_stdout();
    assert!(
        out.contains("promotions:\n  web 1.0.0 → 1.1.0 (in staging since 2026-11-20 05:00, 24 h) in apps/web/overlays/prod/kustomization.yaml\n\n"),
        "{out}"
    );
    assert!(
        out.contains("1 update(s) proposed in 1 file(s); 1 references: 1 to update"),
        "{out}"
    );
}
