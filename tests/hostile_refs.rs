//! What a person who can push to the repository, or open pull requests on it, can make
//! imagebump do with branches, refs, pull requests and rejections: a pull request is
//! imagebump's only when imagebump's own forge account opened it into the base branch; a
//! pushed ref vetoes nothing by itself; a remote with no base branch is an error. Real git
//! remote over smart HTTP, real registry, the stateful GitHub fake; the forge clients
//! against the fakes of all three forges.

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

use imagebump::deliver::marker::{render, Marked};
use imagebump_forge::Forge;
use support::cli::{imagebump, Run};
use support::github::{FakeGitHub, BOT_LOGIN};
use support::TwoApps;

const TOKEN: &str = FakeGitHub::TOKEN;
const WEB: &str = "imagebump/apps-web";
const WEB_FILE: &str = "apps/web/kustomization.yaml";

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

async fn setup() -> Setup {
    Setup {
        apps: TwoApps::start(TOKEN, ""),
        forge: FakeGitHub::start().await,
    }
}

impl Setup {
    async fn run(&self, extra: &[&str], code: i32) -> Run {
        imagebump()
            .arg("run")
            .arg(self.server.url())
            .arg("--config")
            .arg(self.config())
            .args(["--forge", "github", "--forge-url"])
            .arg(self.forge.api_url())
            .arg("--forge-repo")
            .arg(format!("{}/{}", FakeGitHub::OWNER, FakeGitHub::REPO))
            .args(extra)
            .env("GITHUB_TOKEN", TOKEN)
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

    /// The refs below `refs/imagebump/` on the remote.
    fn recorded(&self) -> String {
        self.server
            .git(&["for-each-ref", "--format=%(refname)", "refs/imagebump/"])
    }

    /// The open pull requests, as `#number branch`.
    fn open(&self) -> Vec<String> {
        self.forge
            .pulls()
            .into_iter()
            .filter(|p| p.state == "open")
            .map(|p| format!("#{} {}", p.number, p.branch))
            .collect()
    }
}

/// imagebump's marker proposing web 1.0.0 → 1.1.0 in apps/web, as its own bodies carry it.
fn web_marker() -> String {
    render(&[Marked {
        image: "registry.test/team/web".into(),
        group: "apps/web".into(),
        file: WEB_FILE.into(),
        from: "1.0.0".into(),
        to: "1.1.0".into(),
    }])
}

/// Someone with push access opens a pull request from a branch with imagebump's prefix,
/// copies imagebump's marker into it and closes it: that rejects nothing, is recorded
/// nowhere, and is said as a warning.
#[tokio::test(flavor = "multi_thread")]
async fn a_closed_pull_request_someone_else_opened_rejects_nothing() {
    let s = setup().await;
    let theirs = s.forge.add_pull_by(
        "mallory",
        "imagebump/apps-web-2",
        "main",
        "web",
        &web_marker(),
    );
    s.forge.close(theirs);
    let run = s.run(&[], 0).await;
    assert_eq!(s.recorded(), "", "{run}");
    assert!(!run.stdout.contains("held back"), "{run}");
    run.assert_stderr_contains(&format!(
        "pull request #{theirs} from imagebump/apps-web-2 (by mallory, into main) is not imagebump's ({BOT_LOGIN} into main)"
    ));
    let mut opened: Vec<String> = s.open();
    opened.sort();
    assert_eq!(
        opened,
        [
            format!("#{} imagebump/apps-api-values.yaml", theirs + 1),
            format!("#{} {WEB}", theirs + 2),
        ]
    );
}

/// A pull request someone else opened from the very branch imagebump would use, and one
/// of imagebump's own into another base: neither is pushed to, edited, closed or adopted.
/// The change set whose branch is taken is reported left alone; the other goes ahead.
#[tokio::test(flavor = "multi_thread")]
async fn pull_requests_that_are_not_imagebumps_are_never_touched() {
    let s = setup().await;
    let human = s
        .forge
        .add_pull_by("mallory", WEB, "main", "my web", &web_marker());
    // imagebump's account, another base, a marker whose versions this base already has
    // (a pull request for this base would be closed).
    let api_done = render(&[Marked {
        image: "registry.test/team/other".into(),
        group: "apps/other".into(),
        file: "apps/other/values.yaml".into(),
        from: "1.0.0".into(),
        to: "1.1.0".into(),
    }]);
    let other_base = s
        .forge
        .add_pull("imagebump/apps-other", "release", "other", &api_done);
    s.forge.clear_calls();
    let run = s.run(&["--output", "json"], 0).await;
    assert_eq!(
        s.server.branch_sha(WEB),
        None,
        "web's branch not pushed: {run}"
    );
    let writes = s.writes();
    for n in [human, other_base] {
        let path = s.forge.repo_path(&format!("/pulls/{n}"));
        assert!(
            !writes.iter().any(|w| w.contains(&path)),
            "#{n} untouched: {writes:#?}"
        );
    }
    assert_eq!(
        writes,
        [format!("POST {}", s.forge.repo_path("/pulls"))],
        "only api's pull request is opened"
    );
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let actions: Vec<(String, String)> = report["pullRequests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["branch"].as_str().unwrap().to_string(),
                p["action"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            (WEB.to_string(), "human-commits".to_string()),
            (
                "imagebump/apps-api-values.yaml".to_string(),
                "create".to_string()
            ),
        ]
    );
    run.assert_stderr_contains(&format!(
        "pull request #{human} from {WEB} (by mallory, into main) is not imagebump's"
    ));
    run.assert_stderr_contains(&format!(
        "pull request #{other_base} from imagebump/apps-other (by {BOT_LOGIN}, into release) is not imagebump's"
    ));
}

/// A reopened pull request lifts the rejection its closing made, but only one imagebump
/// opened: someone else's open pull request naming the same number cannot.
#[tokio::test(flavor = "multi_thread")]
async fn refs_pushed_by_hand_veto_nothing() {
    let s = setup().await;
    let main = s.server.branch_sha("main").unwrap();
    let human = s
        .forge
        .add_pull_by("mallory", "imagebump/x", "main", "x", &web_marker());
    s.forge.close(human);
    // By hand: a pull request the forge does not know, a human's closed pull request that
    // carries the marker, a revert of nothing.
    let forged = [
        "refs/imagebump/rejected/registry.test/team/web/1.1.0/pr-999/file=apps%2Fweb%2Fkustomization.yaml".to_string(),
        format!("refs/imagebump/rejected/registry.test/team/web/1.1.0/pr-{human}/file=apps%2Fweb%2Fkustomization.yaml"),
        "refs/imagebump/rejected/registry.test/team/web/1.1.0/revert-1a2b3c4d5e/file=apps%2Fweb%2Fkustomization.yaml".to_string(),
    ];
    for r in &forged {
        s.server.git(&["update-ref", r, &main]);
    }
    let run = s.run(&[], 0).await;
    assert!(!run.stdout.contains("held back"), "{run}");
    assert!(
        s.open().iter().any(|p| p.ends_with(WEB)),
        "web 1.1.0 proposed: {run}"
    );
    run.assert_stderr_contains(&format!(
        "recorded rejection {} ignored: the forge knows no such pull request",
        forged[0]
    ));
    run.assert_stderr_contains(&format!(
        "recorded rejection {} ignored: pull request #{human} is not imagebump's",
        forged[1]
    ));
    run.assert_stderr_contains(&format!(
        "recorded rejection {} ignored: no revert of an imagebump commit in the history read says so",
        forged[2]
    ));
    // The forged records stay as they were (imagebump never moves or deletes them).
    let mut expected: Vec<&str> = forged.iter().map(String::as_str).collect();
    expected.sort();
    assert_eq!(s.recorded().lines().collect::<Vec<_>>(), expected);
}

/// A real rejection still holds from its record: imagebump's own pull request, closed
/// unmerged, proposing that version; a record naming another version from the same pull
/// request does not.
#[tokio::test(flavor = "multi_thread")]
async fn a_record_holds_only_for_what_its_pull_request_proposed() {
    let s = setup().await;
    s.run(&[], 0).await;
    let web = s
        .forge
        .pulls()
        .into_iter()
        .find(|p| p.branch == WEB)
        .unwrap();
    s.forge.close(web.number);
    s.run(&[], 0).await;
    let main = s.server.branch_sha("main").unwrap();
    let api = format!(
        "refs/imagebump/rejected/registry.test/team/api/2.1.0/pr-{}/file=apps%2Fapi%2Fvalues.yaml",
        web.number
    );
    s.server.git(&["update-ref", &api, &main]);
    let run = s.run(&[], 0).await;
    run.assert_stdout_contains(&format!(
        "registry.test/team/web 1.1.0 held back: pull request #{} was closed without merging",
        web.number
    ));
    run.assert_stderr_contains(&format!(
        "recorded rejection {api} ignored: pull request #{} did not propose this version",
        web.number
    ));
    assert!(!run.stdout.contains("team/api 2.1.0 held back"), "{run}");
}

/// A remote whose HEAD is detached, and a `--ref` naming a tag: no base branch, so
/// pull-request mode and `--push` stop with an error naming the remote, never "updates in
/// pull requests" with nothing delivered.
#[tokio::test(flavor = "multi_thread")]
async fn a_remote_without_a_base_branch_is_an_error() {
    let s = setup().await;
    let main = s.server.branch_sha("main").unwrap();
    s.server.git(&["tag", "v1", &main]);
    let url = s.server.url();
    let run = s.run(&["--ref", "v1"], 1).await;
    run.assert_stderr_contains(&format!(
        "error: {url}: --ref v1 is not a branch (a tag or a commit); pull requests and pushes need a base branch"
    ));
    let run = s.run(&["--push", "--ref", "v1"], 1).await;
    run.assert_stderr_contains("--ref v1 is not a branch");
    s.server.git(&["update-ref", "--no-deref", "HEAD", &main]);
    let run = s.run(&[], 1).await;
    run.assert_stderr_contains(&format!(
        "error: {url}: its HEAD is not a branch (detached at {main}, or a tag)"
    ));
    assert_eq!(s.forge.write_calls().len(), 0);
    assert_eq!(s.pushes(), 0);
    // A dry run shows the plan and says that nothing could be delivered.
    let run = s.run(&["--dry-run"], 0).await;
    run.assert_stderr_contains("nothing could be delivered");
}

/// The account each forge's credentials act as, spelled as its pull requests' authors are.
#[tokio::test(flavor = "multi_thread")]
async fn whoami_names_the_account_pull_requests_are_opened_by() {
    use imagebump_forge::{GitHubAuth, GitHubSettings};
    use secrecy::SecretString;
    let fake = FakeGitHub::start().await;
    let settings = |auth| GitHubSettings {
        api_url: fake.api_url(),
        owner: FakeGitHub::OWNER.into(),
        repo: FakeGitHub::REPO.into(),
        auth,
    };
    let token = imagebump_forge::github::GitHub::connect(settings(GitHubAuth::Token(
        SecretString::from(TOKEN),
    )))
    .await
    .unwrap();
    assert_eq!(token.whoami().await.unwrap(), BOT_LOGIN);
    fake.enable_app(7, 70);
    let app = imagebump_forge::github::GitHub::connect(settings(GitHubAuth::App {
        app_id: 7,
        private_key_pem: SecretString::from(support::github::APP_PRIVATE_KEY),
    }))
    .await
    .unwrap();
    assert_eq!(app.whoami().await.unwrap(), "imagebump[bot]");
    let opened = app
        .create_pull(&imagebump_forge::fake::new_pull("imagebump/a", "a", ""))
        .await
        .unwrap();
    assert_eq!(opened.author, "imagebump[bot]");
    // An installation token passed as a plain token (Actions' GITHUB_TOKEN): `/user` is
    // refused, GraphQL's viewer names the bot.
    let installation = fake.issued_tokens().pop().unwrap();
    let as_token = imagebump_forge::github::GitHub::connect(settings(GitHubAuth::Token(
        SecretString::from(installation),
    )))
    .await
    .unwrap();
    assert_eq!(as_token.whoami().await.unwrap(), "imagebump[bot]");
    let lines: Vec<String> = fake.calls().iter().map(|c| c.line()).collect();
    assert!(lines.contains(&"GET /app".to_string()), "{lines:#?}");
    assert!(lines.contains(&"POST /graphql".to_string()), "{lines:#?}");
}

/// `git <args>` in `dir`, author and committer dates `date`.
fn dated(dir: &std::path::Path, args: &[&str], date: &str) {
    let out = support::git_command()
        .current_dir(dir)
        .args(args)
        .env("GIT_COMMITTER_DATE", date)
        .env("GIT_AUTHOR_DATE", date)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn overlay(tag: &str) -> String {
    format!("images:\n  - name: registry.test/team/web\n    newTag: {tag}\n")
}

/// A remote whose dev runs web 1.1.0 from a commit dated three days before "now", staging
/// promoted from dev after 2 h of soak, dev itself pinned (no registry needed).
fn backdated_story() -> (support::GitServer, tempfile::TempDir, tempfile::TempDir) {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    support::git(dir, &["init", "--quiet", "-b", "main"]);
    for env in ["dev", "staging"] {
        let path = dir.join(format!("apps/web/overlays/{env}/kustomization.yaml"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, overlay("1.0.0")).unwrap();
    }
    support::git(dir, &["add", "--all"]);
    dated(
        dir,
        &["commit", "--quiet", "-m", "web"],
        "2026-11-01T00:00:00Z",
    );
    std::fs::write(
        dir.join("apps/web/overlays/dev/kustomization.yaml"),
        overlay("1.1.0"),
    )
    .unwrap();
    support::git(dir, &["add", "--all"]);
    // Backdated: it lands "now" (2026-11-20 12:00) with a date three days old.
    dated(
        dir,
        &["commit", "--quiet", "-m", "dev web 1.1.0"],
        "2026-11-17T12:00:00Z",
    );
    let server = support::GitServer::daemon(dir, "gitops");
    let cfg = tempfile::tempdir().unwrap();
    // No registry listens (promotion reads git alone): `platforms: [any]`, or the platform
    // check would ask it for the current version's image.
    std::fs::write(
        cfg.path().join("imagebump.yaml"),
        "registries:\n  - prefix: registry.test\n    url: http://127.0.0.1:9\nimages:\n  - match: registry.test/team/*\n    path: apps/*/overlays/dev/**\n    pin: true\n  - match: registry.test/team/*\n    path: apps/*/overlays/staging/**\n    promoteFrom: {path: \"apps/{app}/overlays/dev\", soak: 2h}\n    platforms: [any]\n",
    )
    .unwrap();
    (server, work, cfg)
}

const DEV_SEEN: &str =
    "refs/imagebump/seen/apps%2Fweb%2Foverlays%2Fdev/registry.test/team/web/1.1.0/";

/// A commit dated in the past buys no soak: it counts from when imagebump first saw the
/// version in the source, recorded as a create-only ref by the run that delivers. A dry
/// run records nothing and counts the same way; a record pushed by hand with an earlier
/// time counts by the latest record, so it cannot shorten the soak either.
#[test]
fn a_backdated_commit_buys_no_soak_time() {
    let (server, _work, cfg) = backdated_story();
    let run = |extra: &[&str], now: &str| {
        imagebump()
            .arg("run")
            .arg(server.url())
            .arg("--config")
            .arg(cfg.path().join("imagebump.yaml"))
            .args(extra)
            .env("IMAGEBUMP_TEST_NOW", now)
            .code(0)
            .run()
    };
    let staging = || {
        server
            .file_at("main", "apps/web/overlays/staging/kustomization.yaml")
            .unwrap()
    };
    let seen = || {
        server.git(&[
            "for-each-ref",
            "--format=%(refname)",
            "refs/imagebump/seen/",
        ])
    };
    let dry = run(&["--dry-run"], "2026-11-20T12:00:00Z");
    assert!(!dry.stdout.contains("1.0.0 -> 1.1.0"), "{dry}");
    assert_eq!(seen(), "", "a dry run records nothing");

    let first = run(&["--push"], "2026-11-20T12:00:00Z");
    assert_eq!(
        staging(),
        overlay("1.0.0"),
        "soaking, not promoted: {first}"
    );
    let now = 1_795_176_000; // 2026-11-20T12:00:00Z
    assert!(
        seen().lines().any(|l| l == format!("{DEV_SEEN}{now}")),
        "{}",
        seen()
    );

    // A record by hand, "seen" long ago: the latest record counts.
    let main = server.branch_sha("main").unwrap();
    server.git(&["update-ref", &format!("{DEV_SEEN}0"), &main]);
    let hour = run(&["--push"], "2026-11-20T13:00:00Z");
    assert_eq!(staging(), overlay("1.0.0"), "still soaking: {hour}");

    let later = run(&["--push"], "2026-11-20T14:30:00Z");
    assert_eq!(
        staging(),
        overlay("1.1.0"),
        "soaked 2 h since first seen: {later}"
    );
    // Records are never moved: the first sighting is still the one.
    assert!(seen().lines().any(|l| l == format!("{DEV_SEEN}{now}")));
}

/// GitLab and Gitea name the token's user (`GET /user`), the author of what it opens; a
/// pull request fetched by number carries its author, and one of a fork is none of
/// imagebump's (`None`).
#[tokio::test(flavor = "multi_thread")]
async fn gitlab_and_gitea_name_the_tokens_user() {
    use imagebump_forge::gitea::{Gitea, GiteaSettings};
    use imagebump_forge::gitlab::{GitLab, GitLabAuth, GitLabSettings};
    use secrecy::SecretString;
    use support::gitea::FakeGitea;
    use support::gitlab::FakeGitLab;

    let fake = FakeGitLab::start().await;
    let gitlab = GitLab::new(GitLabSettings {
        api_url: fake.api_url(),
        project: FakeGitLab::PROJECT_PATH.into(),
        auth: GitLabAuth::PrivateToken(SecretString::from(FakeGitLab::TOKEN)),
    })
    .unwrap();
    assert_eq!(gitlab.whoami().await.unwrap(), FakeGitLab::BOT);
    let human = fake.add_mr_by("alice", "imagebump/a", "main", "a", "");
    let fork = fake.add_fork_mr("imagebump/b", "main", "b");
    assert_eq!(gitlab.pull(human).await.unwrap().unwrap().author, "alice");
    assert_eq!(gitlab.pull(fork).await.unwrap(), None);
    assert_eq!(gitlab.pull(999).await.unwrap(), None);
    let job = GitLab::new(GitLabSettings {
        api_url: fake.api_url(),
        project: FakeGitLab::PROJECT_PATH.into(),
        auth: GitLabAuth::JobToken(SecretString::from(FakeGitLab::JOB_TOKEN)),
    })
    .unwrap();
    assert!(job.whoami().await.is_err(), "a job token is no user");

    let fake = FakeGitea::start().await;
    let gitea = Gitea::new(GiteaSettings {
        api_url: fake.api_url(),
        owner: FakeGitea::OWNER.into(),
        repo: FakeGitea::REPO.into(),
        token: SecretString::from(FakeGitea::TOKEN),
    })
    .unwrap();
    assert_eq!(gitea.whoami().await.unwrap(), FakeGitea::BOT_LOGIN);
    let human = fake.add_pull_by("mallory", "imagebump/a", "main", "a", "");
    assert_eq!(gitea.pull(human).await.unwrap().unwrap().author, "mallory");
    assert_eq!(gitea.pull(999).await.unwrap(), None);
}

/// Every git command that takes a name or a revision puts it after `--end-of-options`:
/// each such command in the git wrapper has it before the command runs.
#[test]
fn git_gets_names_after_end_of_options() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/source");
    let mut files = vec![root.join("git.rs")];
    for entry in std::fs::read_dir(root.join("git")).unwrap() {
        files.push(entry.unwrap().path());
    }
    // Subcommands that are given a name or revision (not on stdin).
    let takes_names = [
        "\"rev-parse\", \"--verify\"",
        "\"ls-remote\"",
        "\"read-tree\"",
        "\"commit-tree\"",
        "\"ls-tree\"",
        "\"update-ref\", \"--no-deref\"",
        "\"checkout\"",
        "\"push\"",
        "\"fetch\"",
        "\"log\"",
        "\"clone\"",
    ];
    let mut missing = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        for needle in takes_names {
            for (at, _) in code.match_indices(needle) {
                let before = code[..at].trim_end();
                let rest = &code[at..];
                // Only a command being built (`cmd.args(["log", …`), not a label of an
                // error or a log line (`self.run(cmd, "log")`, `command: "log".to_string()`).
                let building = before.ends_with("args([") || before.ends_with("\",");
                if !building || rest[needle.len()..].starts_with(".to_string()") {
                    continue;
                }
                let ends = [
                    "self.run(",
                    "self.output(",
                    "self.pushed(",
                    "self.run_with_input(",
                ];
                let end = ends
                    .iter()
                    .filter_map(|e| rest.find(e))
                    .min()
                    .unwrap_or(rest.len());
                let command = &rest[..end];
                // `log_command` builds the shared start of a log; its callers add the names.
                if command.contains("fn ") {
                    continue;
                }
                if !command.contains("--end-of-options") && !command.contains(".arg(\"--\")") {
                    let line = code[..at].lines().count() + 1;
                    missing.push(format!("{}:{line}: {needle}", file.display()));
                }
            }
        }
    }
    assert_eq!(missing, Vec::<String>::new());
}

/// When the forge cannot say which account the token acts as, no pull request is
/// imagebump's: none is touched, none is opened (a rejection could not be told), and the
/// run says why and exits 1.
#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_account_touches_and_opens_nothing() {
    let s = setup().await;
    s.run(&[], 0).await;
    // A reviewer closes web's pull request: were the account unknown and new pull
    // requests opened anyway, web 1.1.0 would come back.
    let web = s
        .forge
        .pulls()
        .into_iter()
        .find(|p| p.branch == WEB)
        .unwrap();
    s.forge.close(web.number);
    s.forge.clear_calls();
    let pushes = s.pushes();
    s.forge
        .fail_next("GET", "/user", 1, support::github::Fault::Status(404));
    let run = s.run(&[], 1).await;
    assert_eq!(s.writes(), Vec::<String>::new(), "{run}");
    assert_eq!(s.pushes(), pushes, "{run}");
    run.assert_stderr_contains("cannot tell which account the forge token acts as");
}

/// A commit whose message says it reverts imagebump's commit, but that changes another
/// file, reverts nothing: no rejection is derived or recorded.
#[tokio::test(flavor = "multi_thread")]
async fn a_revert_in_name_only_rejects_nothing() {
    let s = Setup {
        apps: TwoApps::start(
            TOKEN,
            "pullRequests:\n  author: {name: imagebump test, email: test@imagebump.invalid}\n",
        ),
        forge: FakeGitHub::start().await,
    };
    // imagebump's update of api (its author, its trailer), merged.
    let merged = s.server.commit_on(
        "main",
        &[(
            "apps/api/values.yaml",
            Some("image:\n  repository: registry.test/team/api\n  tag: 2.1.0\n"),
        )],
        "Update registry.test/team/api to 2.1.0\n\nImagebump-Update: registry.test/team/api 2.0.0 -> 2.1.0 in apps/api/values.yaml\n",
    );
    s.server.commit_on(
        "main",
        &[("README.md", Some("hello\n"))],
        &format!("Tidy up\n\nThis reverts commit {merged}.\n"),
    );
    let run = s.run(&[], 0).await;
    assert!(!run.stdout.contains("held back"), "{run}");
    assert_eq!(s.recorded(), "", "{run}");
}

/// A flood of records pushed by hand costs a bounded number of forge questions: past 256
/// pull requests asked for, the rest are not checked and do not hold.
#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_records_costs_a_bounded_number_of_questions() {
    let s = setup().await;
    let main = s.server.branch_sha("main").unwrap();
    let mut updates = String::new();
    for n in 1000..1300 {
        updates.push_str(&format!(
            "create refs/imagebump/rejected/registry.test/team/web/1.1.0/pr-{n} {main}\n"
        ));
    }
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), updates).unwrap();
    let path = file.path().to_str().unwrap().to_string();
    let out = support::git_command()
        .arg("-C")
        .arg(s.server.git(&["rev-parse", "--absolute-git-dir"]))
        .args(["update-ref", "--stdin"])
        .stdin(std::fs::File::open(&path).unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.forge.clear_calls();
    let run = s.run(&[], 0).await;
    let asked = s
        .forge
        .calls()
        .iter()
        .filter(|c| c.method == "GET" && c.path.starts_with(&s.forge.repo_path("/pulls/")))
        .count();
    assert_eq!(asked, 256, "{run}");
    run.assert_stderr_contains("not checked (more than 256 pull requests to ask for): not held");
    assert!(!run.stdout.contains("held back"), "{run}");
}
