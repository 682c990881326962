//! Pull-request mode end to end, over several runs: a real git remote (smart HTTP with
//! token auth, pushes allowed), a real registry, and the stateful GitHub fake. Each test
//! asserts the exact forge calls and pushes of every run.

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
use support::github::FakeGitHub;
use support::TwoApps;

const TOKEN: &str = FakeGitHub::TOKEN;

struct Setup {
    apps: TwoApps,
    forge: FakeGitHub,
}

impl std::ops::Deref for Setup {
    type Target = TwoApps;
    fn deref(&self) -> &TwoApps {
        &self.apps
    }
}

/// Two apps (a kustomization and a values file) on a remote whose `main` is the base.
async fn setup(extra_config: &str) -> Setup {
    Setup {
        apps: TwoApps::start(TOKEN, extra_config),
        forge: FakeGitHub::start().await,
    }
}

impl Setup {
    /// One `imagebump run` in pull-request mode, expecting exit code `code`.
    async fn run(&self, extra: &[&str], code: i32) -> Run {
        self.run_env(extra, &[], code).await
    }

    /// As [`Setup::run`], with more environment variables.
    async fn run_env(&self, extra: &[&str], env: &[(&str, &str)], code: i32) -> Run {
        self.run_against(&self.forge.api_url(), extra, env, code)
            .await
    }

    /// As [`Setup::run_env`], with the GitHub API at `api_url` (another fake).
    async fn run_against(
        &self,
        api_url: &str,
        extra: &[&str],
        env: &[(&str, &str)],
        code: i32,
    ) -> Run {
        imagebump()
            .arg("run")
            .arg(self.server.url())
            .arg("--config")
            .arg(self.config())
            .args(["--forge", "github", "--forge-url"])
            .arg(api_url)
            .arg("--forge-repo")
            .arg(format!("{}/{}", FakeGitHub::OWNER, FakeGitHub::REPO))
            .args(extra)
            .env("GITHUB_TOKEN", TOKEN)
            .envs(env.iter().copied())
            .code(code)
            .run_async()
            .await
    }

    /// Forge calls that change something, as `METHOD path`.
    fn writes(&self) -> Vec<String> {
        self.forge
            .write_calls()
            .iter()
            .map(|c| format!("{} {}", c.method, c.path))
            .collect()
    }

    /// Two runs around a human closing web's pull request (which the second run records);
    /// that pull request.
    async fn rejected_web(&self) -> support::github::FakePull {
        self.run(&[], 0).await;
        let web = self.pull_for(WEB);
        self.forge.close(web.number);
        self.run(&[], 0).await;
        web
    }

    /// The (first) pull request of `branch`.
    fn pull_for(&self, branch: &str) -> support::github::FakePull {
        self.forge
            .pulls()
            .into_iter()
            .find(|p| p.branch == branch)
            .unwrap_or_else(|| panic!("no pull request for {branch}"))
    }
}

const WEB: &str = "imagebump/apps-web";
const API: &str = "imagebump/apps-api-values.yaml";

#[tokio::test(flavor = "multi_thread")]
async fn first_run_opens_pull_requests_and_a_second_run_changes_nothing() {
    let s = setup("").await;
    let base = s.server.branch_sha("main").unwrap();
    s.run(&[], 0).await;

    // One push for both branches, each one commit on the base with its own change only.
    assert_eq!(s.pushes(), 1, "{}", s.server.request_log());
    assert_eq!(
        s.branch_file(WEB, "apps/web/kustomization.yaml").unwrap(),
        "images:\n  - name: registry.test/team/web\n    newTag: 1.1.0 # web\n"
    );
    assert_eq!(
        s.branch_file(WEB, "apps/api/values.yaml").unwrap(),
        "image:\n  repository: registry.test/team/api\n  tag: 2.0.0\n",
        "the web branch holds only web's change"
    );
    assert_eq!(s.server.log(WEB, "%P")[0], base, "one commit on the base");
    let trailers = s
        .server
        .log(WEB, "%(trailers:key=Imagebump-Update,valueonly)");
    assert_eq!(
        trailers[0].trim(),
        "registry.test/team/web 1.0.0 -> 1.1.0 in apps/web/kustomization.yaml"
    );

    let pulls = s.forge.pulls();
    let mut branches: Vec<&str> = pulls.iter().map(|p| p.branch.as_str()).collect();
    branches.sort();
    assert_eq!(branches, [API, WEB]);
    let web = pulls.iter().find(|p| p.branch == WEB).unwrap();
    assert_eq!(web.title, "Update registry.test/team/web to 1.1.0");
    assert!(web
        .body
        .as_deref()
        .unwrap_or_default()
        .contains("<!-- imagebump:updates64 "));
    let create = format!("POST {}", s.forge.repo_path("/pulls"));
    assert_eq!(s.writes(), [create.clone(), create]);

    // Nothing new: no write call to the forge, no push.
    s.forge.clear_calls();
    let again = s.run(&[], 0).await;
    assert_eq!(s.writes(), Vec::<String>::new(), "{}", again.stdout);
    assert_eq!(s.pushes(), 1);
    again.assert_stdout_contains("unchanged");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_newer_version_updates_the_same_branch_and_pull_request() {
    let s = setup("").await;
    s.run(&[], 0).await;
    let web = s.pull_for(WEB);
    s.reg.push_tags("team/web", &["1.2.0"]);
    s.forge.clear_calls();
    s.run(&[], 0).await;
    assert_eq!(s.pushes(), 2);
    assert_eq!(
        s.writes(),
        [format!(
            "PATCH {}",
            s.forge.repo_path(&format!("/pulls/{}", web.number))
        )]
    );
    assert_eq!(s.forge.pulls().len(), 2, "no second pull request");
    let updated = s.forge.pull(web.number);
    assert_eq!(updated.title, "Update registry.test/team/web to 1.2.0");
    assert!(s
        .branch_file(WEB, "apps/web/kustomization.yaml")
        .unwrap()
        .contains("newTag: 1.2.0 # web"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_closed_pull_request_rejects_its_version_and_a_newer_one_is_proposed() {
    let s = setup("").await;
    // A patch release between the version in git and the proposed one.
    s.reg.push_tags("team/web", &["1.0.1"]);
    s.run(&[], 0).await;
    let web = s.pull_for(WEB);
    assert_eq!(web.title, "Update registry.test/team/web to 1.1.0");
    s.forge.close(web.number);
    s.forge.clear_calls();
    let run = s.run(&[], 0).await;
    assert_eq!(
        s.writes(),
        Vec::<String>::new(),
        "neither 1.1.0 nor 1.0.1 (below it) is proposed:\n{}",
        run.stdout
    );
    run.assert_stdout_contains(&format!(
        "apps/web/kustomization.yaml:3: registry.test/team/web 1.1.0 held back: pull request #{} was closed without merging\n",
        web.number
    ))
    .assert_stdout_contains("held back by a rejection (1):");

    s.reg.push_tags("team/web", &["1.2.0"]);
    let run = s.run(&[], 0).await;
    let open: Vec<_> = s
        .forge
        .pulls()
        .into_iter()
        .filter(|p| p.branch == WEB && p.state == "open")
        .collect();
    assert_eq!(open.len(), 1, "{}", run.stdout);
    assert_ne!(open[0].number, web.number, "a fresh pull request");
    assert_eq!(open[0].title, "Update registry.test/team/web to 1.2.0");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reverted_commit_stays_reverted() {
    let s =
        setup("pullRequests:\n  author: {name: imagebump test, email: test@imagebump.invalid}\n")
            .await;
    // Below the reverted version: held back with it.
    s.reg.push_tags("team/web", &["1.0.1"]);
    // imagebump's update (its author, its trailer), merged, then reverted. A commit by
    // anyone else, trailer or not, is not imagebump's: its revert rejects nothing
    // (deliver/pulls/rejections.rs).
    let merged = s.server.commit_on(
        "main",
        &[(
            "apps/web/kustomization.yaml",
            Some("images:\n  - name: registry.test/team/web\n    newTag: 1.1.0 # web\n"),
        )],
        "Update registry.test/team/web to 1.1.0\n\nImagebump-Update: registry.test/team/web 1.0.0 -> 1.1.0\n",
    );
    s.server.revert_on("main", &merged);
    let run = s.run(&[], 0).await;
    let branches: Vec<String> = s.forge.pulls().into_iter().map(|p| p.branch).collect();
    assert_eq!(branches, [API], "web 1.1.0 was reverted:\n{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_branch_someone_else_committed_to_is_left_alone() {
    let s = setup("").await;
    s.run(&[], 0).await;
    let web = s.pull_for(WEB);
    let theirs = s.server.commit_on(
        WEB,
        &[("apps/web/NOTES.md", Some("reviewer's note\n"))],
        "A reviewer's fix",
    );
    s.reg.push_tags("team/web", &["1.2.0"]);
    s.forge.clear_calls();
    s.run(&[], 0).await;
    assert_eq!(s.server.branch_sha(WEB).unwrap(), theirs, "not overwritten");
    let writes = s.writes();
    assert!(
        writes.contains(&format!(
            "POST {}",
            s.forge
                .repo_path(&format!("/issues/{}/comments", web.number))
        )),
        "{writes:?}"
    );
    // Said once: the next run writes nothing.
    s.forge.clear_calls();
    s.run(&[], 0).await;
    assert_eq!(s.writes(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn max_prs_caps_new_pull_requests() {
    let s = setup("").await;
    let run = s.run(&["--max-prs", "1"], 0).await;
    assert_eq!(s.forge.pulls().len(), 1, "{}", run.stdout);
    run.assert_stdout_contains("deferred");
    s.run(&[], 0).await;
    assert_eq!(s.forge.pulls().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forge_failure_mid_run_converges_on_the_next_run() {
    let s = setup("").await;
    s.forge.fail_next(
        "POST",
        &format!("/repos/{}/{}/pulls", FakeGitHub::OWNER, FakeGitHub::REPO),
        1,
        support::github::Fault::Status(500),
    );
    let run = s.run(&[], 1).await;
    assert_eq!(
        s.forge.pulls().len(),
        1,
        "one created, one failed:\n{}\n{}\n{:#?}",
        run.stdout,
        run.stderr,
        s.forge.calls().iter().map(|c| c.line()).collect::<Vec<_>>()
    );
    s.run(&[], 0).await;
    assert_eq!(
        s.forge.pulls().len(),
        2,
        "no duplicate: {:?}",
        s.forge.pulls()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejected_push_is_reported_and_the_next_run_converges() {
    let s = setup("").await;
    s.server.reject_all_pushes("protected");
    let run = s.run(&[], 1).await;
    run.assert_stderr_contains("push");
    assert_eq!(
        s.forge.pulls().len(),
        0,
        "no pull request without its branch"
    );
    s.server.accept_pushes();
    let run = s.run(&[], 0).await;
    assert_eq!(s.forge.pulls().len(), 2);
    assert!(
        !run.stdout.contains(TOKEN) && !run.stderr.contains(TOKEN),
        "the token is never printed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pull_request_whose_versions_the_base_already_has_is_closed() {
    let s = setup("").await;
    s.run(&[], 0).await;
    let web = s.pull_for(WEB);
    // Someone applied the same update by hand on the base.
    s.server.commit_on(
        "main",
        &[(
            "apps/web/kustomization.yaml",
            Some("images:\n  - name: registry.test/team/web\n    newTag: 1.1.0 # web\n"),
        )],
        "Bump web by hand",
    );
    s.forge.clear_calls();
    let run = s.run(&[], 0).await;
    let pr = s.forge.pull(web.number);
    assert_eq!(pr.state, "closed", "{}", run.stdout);
    assert_eq!(pr.comments.len(), 1);
    assert!(pr.comments[0].contains("already has these versions"));
}

/// The base moves under open pull requests: a branch whose files the base did not change
/// still proposes exactly the same and is left as it is (no push); one whose file changed
/// is rebuilt on the new base. The pull requests are not touched.
#[tokio::test(flavor = "multi_thread")]
async fn a_moved_base_rebuilds_only_the_branches_whose_files_it_changed() {
    let s = setup("").await;
    s.run(&[], 0).await;
    let api_tip = s.server.branch_sha(API).unwrap();
    s.server
        .commit_on("main", &[("README.md", Some("hello\n"))], "Docs");
    s.forge.clear_calls();
    s.run(&[], 0).await;
    assert_eq!(s.pushes(), 1, "no push: {}", s.server.request_log());
    assert_eq!(s.server.branch_sha(API).unwrap(), api_tip);
    assert_eq!(s.writes(), Vec::<String>::new());

    let new_base = s.server.commit_on(
        "main",
        &[(
            "apps/web/kustomization.yaml",
            Some("# the web app\nimages:\n  - name: registry.test/team/web\n    newTag: 1.0.0 # web\n"),
        )],
        "Describe web",
    );
    s.run(&[], 0).await;
    assert_eq!(s.pushes(), 2, "one more push, for web's branch");
    assert_eq!(
        s.server.log(WEB, "%P")[0],
        new_base,
        "rebuilt on the new base"
    );
    assert_eq!(
        s.branch_file(WEB, "apps/web/kustomization.yaml").unwrap(),
        "# the web app\nimages:\n  - name: registry.test/team/web\n    newTag: 1.1.0 # web\n"
    );
    assert_eq!(s.server.branch_sha(API).unwrap(), api_tip, "api's stays");
    assert_eq!(
        s.writes(),
        Vec::<String>::new(),
        "same updates: the pull requests stay"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pinned_value_gets_no_pull_request() {
    let s = setup("images:\n  - match: registry.test/team/api\n    pin: true\n").await;
    s.run(&[], 0).await;
    let branches: Vec<String> = s.forge.pulls().into_iter().map(|p| p.branch).collect();
    assert_eq!(branches, [WEB]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_github_app_installation_token_drives_the_forge() {
    let s = setup("").await;
    s.forge.enable_app(4242, 77);
    let key = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(key.path(), support::github::APP_PRIVATE_KEY).unwrap();
    s.run_env(
        &[],
        &[
            ("IMAGEBUMP_GITHUB_APP_ID", "4242"),
            (
                "IMAGEBUMP_GITHUB_APP_KEY_FILE",
                key.path().to_str().unwrap(),
            ),
            // The test git server knows only its own token.
            ("IMAGEBUMP_GIT_TOKEN", TOKEN),
        ],
        0,
    )
    .await;
    let issued = s.forge.issued_tokens();
    assert!(!issued.is_empty());
    assert_eq!(s.forge.pulls().len(), 2);
    let creates: Vec<_> = s
        .forge
        .calls()
        .into_iter()
        .filter(|c| c.method == "POST" && c.path.ends_with("/pulls"))
        .collect();
    assert_eq!(creates.len(), 2);
    for c in creates {
        assert_eq!(
            c.credential,
            support::github::Credential::Token(issued[0].clone()),
            "pull requests are opened with the installation token"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn push_mode_commits_to_the_base_and_rebuilds_when_it_moved() {
    let s = setup("").await;
    s.server.move_main_on_first_push();
    let run = s.run(&["--push"], 0).await;
    let subjects = s.server.log("main", "%s");
    assert_eq!(
        subjects[0], "Update 2 images",
        "{}\n{}",
        run.stdout, run.stderr
    );
    assert_eq!(subjects[1], "Someone else", "rebuilt on the moved base");
    assert_eq!(
        s.server
            .file_at("main", "apps/web/kustomization.yaml")
            .unwrap(),
        "images:\n  - name: registry.test/team/web\n    newTag: 1.1.0 # web\n"
    );
    let trailers = s
        .server
        .log("main", "%(trailers:key=Imagebump-Update,valueonly)");
    assert_eq!(
        trailers[0].lines().collect::<Vec<_>>(),
        [
            "registry.test/team/api 2.0.0 -> 2.1.0 in apps/api/values.yaml",
            "registry.test/team/web 1.0.0 -> 1.1.0 in apps/web/kustomization.yaml"
        ]
    );
    assert!(s.forge.pulls().is_empty(), "no pull requests in push mode");
    // Nothing left to do.
    s.run(&["--push"], 0).await;
    assert_eq!(s.server.log("main", "%s").len(), subjects.len());
}

/// The base moved with a change to a manifest: the run reads the new base (from its objects:
/// the clone has no work tree) and builds only what is still to do on it.
#[tokio::test(flavor = "multi_thread")]
async fn push_mode_reads_the_moved_base_again() {
    let s = setup("").await;
    let web = "images:\n  - name: registry.test/team/web\n    newTag: 1.1.0 # web\n";
    s.server
        .change_main_on_first_push("apps/web/kustomization.yaml", web);
    let run = s.run(&["--push"], 0).await;
    assert_eq!(
        s.server.log("main", "%s")[1],
        "Someone else",
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    let trailers = s
        .server
        .log("main", "%(trailers:key=Imagebump-Update,valueonly)");
    assert_eq!(
        trailers[0].lines().collect::<Vec<_>>(),
        ["registry.test/team/api 2.0.0 -> 2.1.0 in apps/api/values.yaml"],
        "web is at 1.1.0 on the moved base: only api is left"
    );
    assert_eq!(
        s.server
            .file_at("main", "apps/web/kustomization.yaml")
            .unwrap(),
        web
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn someone_pushing_to_a_bot_branch_during_the_run_is_not_overwritten() {
    let s = setup("").await;
    s.run(&[], 0).await;
    s.reg.push_tags("team/web", &["1.2.0"]);
    s.reg.push_tags("team/api", &["2.2.0"]);
    s.server.move_on_first_push(WEB);
    let run = s.run(&[], 1).await;
    run.assert_stderr_contains("someone else pushed to it during the run");
    assert_eq!(
        s.server.log(WEB, "%s")[0],
        "Someone else",
        "not overwritten"
    );
    assert!(s
        .branch_file(API, "apps/api/values.yaml")
        .unwrap()
        .contains("tag: 2.2.0"));
}

/// Two overlapping runs: the other one opens the pull request between our listing and our
/// create. We adopt it (brought in line with our plan) instead of failing, and no
/// duplicate appears.
#[tokio::test(flavor = "multi_thread")]
async fn a_pull_request_another_run_opened_meanwhile_is_adopted() {
    let s = setup("").await;
    s.forge.race_next_create("opened by the other run");
    let run = s.run(&[], 0).await;
    let pulls = s.forge.pulls();
    assert_eq!(pulls.len(), 2, "{:?}\n{}", pulls, run.stderr);
    for p in &pulls {
        assert!(p.title.starts_with("Update registry.test/team/"), "{p:?}");
        assert!(p
            .body
            .as_deref()
            .unwrap_or_default()
            .contains("<!-- imagebump:updates64 "));
    }
    s.forge.clear_calls();
    s.run(&[], 0).await;
    assert_eq!(
        s.writes(),
        Vec::<String>::new(),
        "the next run changes nothing"
    );
}

/// A run that passes its `--timeout` (here: a forge asking to wait 25 s before labelling)
/// stops at once, says what it had done and exits 1; the next run converges without a
/// duplicate.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_past_its_deadline_stops_and_says_what_it_did() {
    let s = setup("pullRequests:\n  labels: [dependencies]\n").await;
    s.forge.fail_next(
        "POST",
        &s.forge.repo_path("/issues/1/labels"),
        1,
        support::github::Fault::TooManyRequests { retry_after: 25 },
    );
    let run = s.run(&["--timeout", "4s"], 1).await;
    run.assert_stderr_contains("stopped by its deadline (--timeout 4s)")
        .assert_stderr_contains("pushed branch(es) imagebump/")
        .assert_stderr_contains("opened pull request #1 (imagebump/apps-");
    assert!(
        run.elapsed < std::time::Duration::from_secs(20),
        "{:?}",
        run.elapsed
    );
    s.run(&[], 0).await;
    let pulls = s.forge.pulls();
    assert_eq!(pulls.len(), 2, "no duplicate: {pulls:?}");
}

/// Fail closed: when the closed pull requests cannot be listed (502 after the retries), a
/// version someone rejected could come back, so no new pull request is opened; the open
/// ones are kept current, the run says why and exits 1.
#[tokio::test(flavor = "multi_thread")]
async fn without_the_closed_pull_requests_nothing_new_is_proposed() {
    let s = setup("").await;
    s.run(&[], 0).await;
    let web = s.pull_for(WEB);
    s.forge.close(web.number);
    s.forge.clear_calls();
    // Every attempt of the two listings before resolving (the open ones, for reopened
    // pull requests, and the closed ones) fails.
    s.forge.fail_next(
        "GET",
        &s.forge.repo_path("/pulls"),
        8,
        support::github::Fault::Status(502),
    );
    let run = s.run(&[], 1).await;
    run.assert_stderr_contains("cannot list closed pull requests")
        .assert_stderr_contains("no new pull request is opened this run");
    assert_eq!(s.writes(), Vec::<String>::new(), "{}", run.stdout);
    run.assert_stdout_contains("deferred");
    // Once the forge answers again, the rejection holds.
    s.run(&[], 0).await;
    assert_eq!(s.writes(), Vec::<String>::new());
}

/// A dry run of a remote without a forge token previews what the real run would do with
/// reverts (it reads the history), and says that closed pull requests were not consulted.
#[tokio::test(flavor = "multi_thread")]
async fn a_remote_dry_run_without_a_forge_token_holds_reverted_versions_back() {
    // The commit made here by hand stands for imagebump's: its author is imagebump's.
    let s =
        setup("pullRequests:\n  author: {name: imagebump test, email: test@imagebump.invalid}\n")
            .await;
    let merged = s.server.commit_on(
        "main",
        &[(
            "apps/web/kustomization.yaml",
            Some("images:\n  - name: registry.test/team/web\n    newTag: 1.1.0 # web\n"),
        )],
        "Update registry.test/team/web to 1.1.0\n\nImagebump-Update: registry.test/team/web 1.0.0 -> 1.1.0\n",
    );
    s.server.revert_on("main", &merged);
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(s.server.url())
        .arg("--config")
        .arg(s.config())
        .env("IMAGEBUMP_GIT_TOKEN", TOKEN)
        .run_async()
        .await;
    run.assert_stderr_contains("closed pull requests were not consulted")
        .assert_stdout_contains("registry.test/team/web 1.1.0 held back: commit ")
        .assert_stdout_contains("+  tag: 2.1.0");
    assert!(!run.stdout.contains("+    newTag: 1.1.0"), "{}", run.stdout);
}

/// `delivery: push` per path: in one run, web's environment follows at once (a commit on
/// the base) while api still gets a pull request, built on that commit. A revert of the
/// pushed commit holds the version back like a closed pull request.
#[tokio::test(flavor = "multi_thread")]
async fn delivery_push_for_one_path_and_a_pull_request_for_the_rest() {
    let s = setup("images:\n  - path: apps/web/**\n    delivery: push\n").await;
    let base = s.server.branch_sha("main").unwrap();
    let run = s.run(&[], 0).await;
    let main = s.server.branch_sha("main").unwrap();
    assert_ne!(
        main, base,
        "web's update is pushed to main:\n{}",
        run.stdout
    );
    assert_eq!(
        s.server
            .file_at("main", "apps/web/kustomization.yaml")
            .unwrap(),
        "images:\n  - name: registry.test/team/web\n    newTag: 1.1.0 # web\n"
    );
    assert_eq!(
        s.server.file_at("main", "apps/api/values.yaml").unwrap(),
        "image:\n  repository: registry.test/team/api\n  tag: 2.0.0\n",
        "api waits for review"
    );
    let branches: Vec<String> = s.forge.pulls().into_iter().map(|p| p.branch).collect();
    assert_eq!(branches, [API]);
    assert_eq!(
        s.server.log(API, "%P")[0],
        main,
        "the pull request builds on the pushed commit"
    );
    let trailers = s
        .server
        .log("main", "%(trailers:key=Imagebump-Update,valueonly)");
    assert_eq!(
        trailers[0].trim(),
        "registry.test/team/web 1.0.0 -> 1.1.0 in apps/web/kustomization.yaml"
    );

    // Nothing new: no push, no forge write.
    s.forge.clear_calls();
    let pushes = s.pushes();
    s.run(&[], 0).await;
    assert_eq!((s.pushes(), s.writes()), (pushes, Vec::<String>::new()));

    // Someone reverts the pushed update: it stays reverted.
    s.server.revert_on("main", &main);
    let run = s.run(&[], 0).await;
    assert_eq!(
        s.server
            .file_at("main", "apps/web/kustomization.yaml")
            .unwrap(),
        "images:\n  - name: registry.test/team/web\n    newTag: 1.0.0 # web\n",
        "{}",
        run.stdout
    );
    run.assert_stdout_contains("registry.test/team/web 1.1.0 held back: commit ");
}

/// `--push --dry-run` previews the commit a push would make, trailers and all, and pushes
/// nothing; a dry run of `delivery: push` shows its commit the same way.
#[tokio::test(flavor = "multi_thread")]
async fn a_push_can_be_previewed() {
    let s = setup("").await;
    let main = s.server.branch_sha("main").unwrap();
    let run = s.run(&["--push", "--dry-run"], 0).await;
    run.assert_stdout_contains("would push 1 commit(s) to main:\n\ncommit ")
        .assert_stdout_contains("    Update 2 images\n")
        .assert_stdout_contains("    Imagebump-Update: registry.test/team/web 1.0.0 -> 1.1.0 in apps/web/kustomization.yaml\n");
    assert_eq!(s.server.branch_sha("main").unwrap(), main);
    assert_eq!(s.pushes(), 0);
    assert_eq!(s.writes(), Vec::<String>::new());

    let s = setup("images:\n  - path: apps/web/**\n    delivery: push\n").await;
    let run = s.run(&["--dry-run"], 0).await;
    run.assert_stdout_contains("would push 1 commit(s) to main:")
        .assert_stdout_contains("    Imagebump-Update: registry.test/team/web 1.0.0 -> 1.1.0 in apps/web/kustomization.yaml\n");
    assert!(
        !run.stdout
            .contains("Imagebump-Update: registry.test/team/api"),
        "{}",
        run.stdout
    );
    assert_eq!(s.pushes(), 0);
}

/// Rejections are recorded in the repository (one ref each, with the same push rights
/// imagebump has), so they hold when the forge no longer lists the closed pull request:
/// here 100 later closed pull requests fill the listing read. The record is checked
/// against the pull request it names, asked for by number.
#[tokio::test(flavor = "multi_thread")]
async fn a_rejection_outlives_the_forges_paging() {
    let s = setup("").await;
    let web = s.rejected_web().await;
    let recorded = s
        .server
        .git(&["for-each-ref", "--format=%(refname)", "refs/imagebump/"]);
    assert_eq!(
        recorded.trim(),
        format!(
            "refs/imagebump/rejected/registry.test/team/web/1.1.0/pr-{}/file=apps%2Fweb%2Fkustomization.yaml",
            web.number
        )
    );
    for i in 0..100 {
        let n = s
            .forge
            .add_pull(&format!("imagebump/old-{i}"), "main", "old", "");
        s.forge.close(n);
    }
    s.forge.clear_calls();
    let run = s.run(&[], 0).await;
    let reopened = s
        .forge
        .pulls()
        .into_iter()
        .filter(|p| p.branch == WEB && p.state == "open")
        .count();
    assert_eq!(reopened, 0, "web 1.1.0 stays rejected:\n{run}");
    let asked = format!(
        "GET {}",
        s.forge.repo_path(&format!("/pulls/{}", web.number))
    );
    let calls: Vec<String> = s.forge.calls().iter().map(|c| c.line()).collect();
    assert!(calls.contains(&asked), "{calls:#?}");
    run.assert_stdout_contains(&format!(
        "registry.test/team/web 1.1.0 held back: pull request #{} was closed without merging",
        web.number
    ));
}

/// A "no" holds where it was said: closing prod's pull request for web 1.1.0 holds 1.1.0
/// back in prod only; dev's pull request for the same version stays open and untouched.
#[tokio::test(flavor = "multi_thread")]
async fn a_rejection_holds_at_its_location_only() {
    let s = setup("").await;
    let prod = "apps/web-prod/kustomization.yaml";
    s.server.commit_on(
        "main",
        &[(
            prod,
            Some("images:\n  - name: registry.test/team/web\n    newTag: 1.0.0 # web\n"),
        )],
        "web in prod",
    );
    s.run(&[], 0).await;
    let dev = s.pull_for(WEB);
    let prod_pull = s.pull_for("imagebump/apps-web-prod");
    s.forge.close(prod_pull.number);
    s.forge.clear_calls();
    let run = s.run(&[], 0).await;
    assert_eq!(s.writes(), Vec::<String>::new(), "{run}");
    let open: Vec<u64> = s
        .forge
        .pulls()
        .into_iter()
        .filter(|p| p.state == "open" && p.branch.starts_with("imagebump/apps-web"))
        .map(|p| p.number)
        .collect();
    assert_eq!(open, [dev.number], "dev's pull request stays: {run}");
    run.assert_stdout_contains(&format!(
        "{prod}:3: registry.test/team/web 1.1.0 held back: pull request #{} was closed without merging",
        prod_pull.number
    ));
    assert!(
        !run.stdout
            .contains("apps/web/kustomization.yaml:3: registry.test/team/web 1.1.0 held back"),
        "{run}"
    );
    let recorded = s
        .server
        .git(&["for-each-ref", "--format=%(refname)", "refs/imagebump/"]);
    assert_eq!(
        recorded.trim(),
        format!(
            "refs/imagebump/rejected/registry.test/team/web/1.1.0/pr-{}/file=apps%2Fweb-prod%2Fkustomization.yaml",
            prod_pull.number
        )
    );
}

/// Auto-merge goes through GitHub's GraphQL `enablePullRequestAutoMerge` with the node id
/// and the configured merge method, and is never turned on for a version rejected before,
/// wherever it was rejected: the pull request says why it waits for a human.
#[tokio::test(flavor = "multi_thread")]
async fn automerge_is_withheld_for_a_version_rejected_before() {
    let s = setup(
        "images:\n  - match: \"**\"\n    automerge: true\npullRequests:\n  mergeMethod: squash\n",
    )
    .await;
    let prod = "apps/web-prod/kustomization.yaml";
    let pinned = "images:\n  - name: registry.test/team/web\n    newTag: 1.0.0 # imagebump: pin\n";
    s.server
        .commit_on("main", &[(prod, Some(pinned))], "web in prod, pinned");
    s.run(&[], 0).await;
    let web = s.pull_for(WEB);
    let graphql: Vec<serde_json::Value> = s
        .forge
        .calls()
        .into_iter()
        .filter(|c| c.path == "/graphql")
        .filter_map(|c| c.body)
        .collect();
    assert_eq!(graphql.len(), 2, "one per pull request");
    let variables: Vec<&serde_json::Value> = graphql.iter().map(|b| &b["variables"]).collect();
    assert!(
        variables.contains(
            &&serde_json::json!({"id": format!("PR_fake{}", web.number), "method": "SQUASH"})
        ),
        "{variables:?}"
    );
    assert!(graphql[0]["query"]
        .as_str()
        .unwrap()
        .contains("enablePullRequestAutoMerge(input: {pullRequestId: $id, mergeMethod: $method})"));
    assert_eq!(
        s.forge.pull(web.number).auto_merge.as_deref(),
        Some("SQUASH")
    );

    // No to 1.1.0 in dev; then prod is unpinned and gets 1.1.0 proposed, without auto-merge.
    s.forge.close(web.number);
    s.run(&[], 0).await;
    s.server.commit_on(
        "main",
        &[(prod, Some(&pinned.replace("# imagebump: pin", "# prod")))],
        "unpin prod",
    );
    s.forge.clear_calls();
    let run = s.run(&[], 0).await;
    let opened = s.pull_for("imagebump/apps-web-prod");
    assert_eq!(
        opened.title, "Update registry.test/team/web to 1.1.0",
        "{run}"
    );
    assert!(
        opened.body.as_deref().unwrap_or_default().contains(&format!(
            "**Automerge withheld**: `registry.test/team/web` `1.1.0` was rejected before: pull request #{} was closed without merging",
            web.number
        )),
        "{opened:?}"
    );
    assert_eq!(opened.auto_merge, None);
    assert!(
        !s.forge.calls().iter().any(|c| c.path == "/graphql"),
        "no auto-merge call: {run}"
    );
}

/// With `signing` in the operator's configuration, every commit imagebump makes (the
/// `delivery: push` commit on the base and the pull-request branches) is signed with the
/// operator's SSH key, and `git verify-commit` accepts it against that key; a commit made
/// without it is refused, so the check can fail.
#[tokio::test(flavor = "multi_thread")]
async fn commits_are_signed_with_the_operators_ssh_key() {
    support::require_tool("ssh-keygen", "openssh-client");
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("signing");
    let made = std::process::Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "imagebump-test",
            "-f",
        ])
        .arg(&key)
        .status()
        .unwrap();
    assert!(made.success());
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    let allowed = keys.path().join("allowed_signers");
    std::fs::write(
        &allowed,
        format!("imagebump@users.noreply.github.com {}", public.trim()),
    )
    .unwrap();
    let s = setup(&format!(
        "signing:\n  format: ssh\n  key: {}\nimages:\n  - path: apps/web/**\n    delivery: push\n",
        key.display()
    ))
    .await;
    let base = s.server.branch_sha("main").unwrap();
    let run = s.run(&[], 0).await;
    let main = s.server.branch_sha("main").unwrap();
    assert_ne!(main, base, "{run}");
    let branch = s.server.branch_sha(API).unwrap();
    let signers = format!("gpg.ssh.allowedSignersFile={}", allowed.display());
    let verify = |sha: &str| {
        support::git_command()
            .current_dir(s.server.bare_path())
            .args(["-c", &signers, "verify-commit", sha])
            .output()
            .unwrap()
    };
    for sha in [&main, &branch] {
        let out = verify(sha);
        assert!(
            out.status.success(),
            "{sha}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("Good \"git\" signature"));
    }
    assert!(!verify(&base).status.success(), "an unsigned commit fails");

    // A repository's own imagebump.yaml may not choose a key.
    let hostile = setup("").await;
    hostile.server.commit_on(
        "main",
        &[(
            "imagebump.yaml",
            Some("signing:\n  key: /etc/ssh/ssh_host_ed25519_key\n"),
        )],
        "sign with the host's key",
    );
    let run = hostile.run(&[], 2).await;
    run.assert_stderr_contains("signing can only be set in the operator's configuration");
}

/// The same with an OpenPGP key from the environment's GnuPG keyring (`GNUPGHOME`).
#[tokio::test(flavor = "multi_thread")]
async fn commits_are_signed_with_an_openpgp_key() {
    support::require_tool("gpg", "gnupg");
    support::require_tool("gpgconf", "gnupg");
    let home = tempfile::tempdir().unwrap();
    /// gpg starts an agent for its home: stopped when the test ends, however it ends.
    struct Agent<'a>(&'a std::path::Path);
    impl Drop for Agent<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("gpgconf")
                .args(["--kill", "all"])
                .env("GNUPGHOME", self.0)
                .status();
        }
    }
    let _agent = Agent(home.path());
    let gpg = |args: &[&str]| {
        std::process::Command::new("gpg")
            .args(["--batch", "--pinentry-mode", "loopback", "--passphrase", ""])
            .args(args)
            .env("GNUPGHOME", home.path())
            .output()
            .unwrap()
    };
    let made = gpg(&[
        "--quick-gen-key",
        "imagebump <imagebump@users.noreply.github.com>",
        "ed25519",
        "sign",
        "never",
    ]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let listed = gpg(&["--with-colons", "--list-secret-keys"]);
    let fingerprint = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("fpr:::::::::"))
        .map(|f| f.trim_end_matches(':').to_string())
        .unwrap();
    let s = setup(&format!(
        "signing:\n  format: openpgp\n  key: {fingerprint}\n"
    ))
    .await;
    let home_str = home.path().display().to_string();
    let run = s.run_env(&[], &[("GNUPGHOME", home_str.as_str())], 0).await;
    let branch = s.server.branch_sha(API).unwrap_or_else(|| panic!("{run}"));
    let out = support::git_command()
        .current_dir(s.server.bare_path())
        .args(["verify-commit", &branch])
        .env("GNUPGHOME", home.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("Good signature from \"imagebump"), "{said}");
}

/// `imagebump tags --repo DIR` over a clone says which pull request holds a candidate back,
/// and where, from the rejections the repository records.
#[tokio::test(flavor = "multi_thread")]
async fn tags_names_the_rejection_that_holds_a_candidate_back() {
    let s = setup("").await;
    let web = s.rejected_web().await;
    let tmp = tempfile::tempdir().unwrap();
    let clone = tmp.path().join("gitops");
    support::git(
        tmp.path(),
        &[
            "clone",
            "--quiet",
            &s.server.bare_path().display().to_string(),
            "gitops",
        ],
    );
    let run = imagebump()
        .args(["tags", "registry.test/team/web:1.0.0", "--repo"])
        .arg(&clone)
        .arg("--config")
        .arg(s.config())
        .run_async()
        .await;
    run.assert_stdout_contains("chosen:  none").assert_stdout_contains(&format!(
        "1.1.0  no    rejected: pull request #{} was closed without merging (in apps/web/kustomization.yaml)",
        web.number
    ));
    // Without the repository, the same tag is chosen: the check can fail.
    let run = imagebump()
        .args(["tags", "registry.test/team/web:1.0.0", "--config"])
        .arg(s.config())
        .run_async()
        .await;
    run.assert_stdout_contains("chosen:  1.1.0");
}

/// `signing: {format: github}`: GitHub creates the branches' commits through its API
/// (`createCommitOnBranch`), so they are signed by GitHub (verified for a GitHub App); no
/// branch is pushed with git. Re-runs recognise those commits as imagebump's own.
#[tokio::test(flavor = "multi_thread")]
async fn github_creates_the_commits_when_asked_to_sign_them() {
    let s = setup("signing:\n  format: github\n").await;
    s.forge.serve_repository(s.server.bare_path());
    let run = s.run(&[], 0).await;
    assert_eq!(s.pushes(), 0, "no git push: {run}");
    let web = s.server.branch_sha(WEB).unwrap();
    let api = s.server.branch_sha(API).unwrap();
    let mut verified = s.forge.verified_commits();
    verified.sort();
    let mut expected = vec![web.clone(), api.clone()];
    expected.sort();
    assert_eq!(verified, expected);
    assert_eq!(
        s.branch_file(WEB, "apps/web/kustomization.yaml").unwrap(),
        "images:\n  - name: registry.test/team/web\n    newTag: 1.1.0 # web\n"
    );
    let log = s.server.log(
        WEB,
        "%cn <%ce>|%P|%(trailers:key=Imagebump-Update,valueonly)",
    );
    assert_eq!(
        log[0].trim(),
        format!(
            "GitHub <noreply@github.com>|{}|registry.test/team/web 1.0.0 -> 1.1.0 in apps/web/kustomization.yaml",
            s.server.branch_sha("main").unwrap()
        )
    );
    assert_eq!(
        s.pull_for(WEB).title,
        "Update registry.test/team/web to 1.1.0"
    );

    // Nothing new: nothing written, the commits are imagebump's own.
    s.forge.clear_calls();
    let again = s.run(&[], 0).await;
    assert_eq!(s.writes(), Vec::<String>::new(), "{again}");

    // A newer version: the branch goes back to the base and GitHub commits again.
    s.reg.push_tags("team/web", &["1.2.0"]);
    let run = s.run(&[], 0).await;
    let moved = s.server.branch_sha(WEB).unwrap();
    assert_ne!(moved, web, "{run}");
    assert!(s.forge.verified_commits().contains(&moved));
    assert_eq!(s.pushes(), 0);
    assert!(
        s.writes().contains(&format!(
            "PATCH {}",
            s.forge.repo_path(&format!("/git/refs/heads/{WEB}"))
        )),
        "{:?}",
        s.writes()
    );

    // --push cannot work this way: said at once.
    let push = s.run(&["--push"], 2).await;
    push.assert_stderr_contains("signing format github creates pull-request commits only");
}

/// A configured assignee whose call failed is assigned by the next run, once; after that
/// nothing is written.
#[tokio::test(flavor = "multi_thread")]
async fn assignees_converge_after_a_failed_call() {
    let s = setup("pullRequests:\n  assignees: [octocat]\n").await;
    s.forge.fail_next(
        "POST",
        &s.forge.repo_path("/issues/1/assignees"),
        1,
        support::github::Fault::Status(500),
    );
    let run = s.run(&[], 1).await;
    run.assert_stderr_contains("cannot assign #1");
    s.forge.clear_calls();
    s.run(&[], 0).await;
    assert_eq!(
        s.writes(),
        [format!("POST {}", s.forge.repo_path("/issues/1/assignees"))]
    );
    assert!(
        s.forge.pulls().iter().all(|p| p.assignees == ["octocat"]),
        "{:?}",
        s.forge.pulls()
    );
    s.forge.clear_calls();
    s.run(&[], 0).await;
    assert_eq!(s.writes(), Vec::<String>::new());
}
