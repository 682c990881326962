//! The pull-request lifecycle, one scenario list run over the three forges: GitHub, GitLab
//! and Gitea/Forgejo. Each forge is a stateful fake speaking its own documented API
//! (tests/support/{github,gitlab,gitea}.rs); git is real (smart HTTP with token auth) and so
//! is the registry. A scenario says what a user sees (pull requests opened, updated,
//! closed, commented on; pushes); the adapter below says what that is in each forge's API.

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
use support::gitea::FakeGitea;
use support::github::FakeGitHub;
use support::gitlab::FakeGitLab;
use support::TwoApps;

/// A pull (merge) request as the scenarios see it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pr {
    number: u64,
    branch: String,
    title: String,
    /// `open`, `closed` or `merged`.
    state: &'static str,
}

/// A call that changes something, in the forge's own terms mapped to the lifecycle's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    Create,
    Update,
    Close,
    Comment,
    /// Labels, reviewers, assignees.
    Decorate,
    /// Turning the forge's auto-merge on.
    Automerge,
}

/// One fake forge behind the scenarios.
enum Fake {
    GitHub(FakeGitHub),
    GitLab(FakeGitLab),
    Gitea(FakeGitea),
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    GitHub,
    GitLab,
    Gitea,
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

    /// The variable a user would set, and the `--forge`, `--forge-url`, `--forge-repo` args.
    fn cli(&self) -> (&'static str, Vec<String>) {
        let (var, forge, url, repo) = match self {
            Fake::GitHub(f) => (
                "GITHUB_TOKEN",
                "github",
                f.api_url(),
                format!("{}/{}", FakeGitHub::OWNER, FakeGitHub::REPO),
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
                format!("{}/{}", FakeGitea::OWNER, FakeGitea::REPO),
            ),
        };
        let args = ["--forge", forge, "--forge-url", &url, "--forge-repo", &repo]
            .iter()
            .map(|s| s.to_string())
            .collect();
        (var, args)
    }

    fn pulls(&self) -> Vec<Pr> {
        let mut out: Vec<Pr> = match self {
            Fake::GitHub(f) => f
                .pulls()
                .into_iter()
                .map(|p| Pr {
                    number: p.number,
                    branch: p.branch,
                    title: p.title,
                    state: github_state(&p.state, p.merged),
                })
                .collect(),
            Fake::GitLab(f) => f
                .pulls()
                .into_iter()
                .map(|m| Pr {
                    number: m.iid,
                    branch: m.source_branch,
                    title: m.title,
                    state: match m.state.as_str() {
                        "opened" => "open",
                        "merged" => "merged",
                        _ => "closed",
                    },
                })
                .collect(),
            Fake::Gitea(f) => f
                .pulls()
                .into_iter()
                .map(|p| Pr {
                    number: p.number,
                    branch: p.branch,
                    title: p.title,
                    state: github_state(&p.state, p.merged),
                })
                .collect(),
        };
        out.sort_by_key(|p| p.number);
        out
    }

    fn open_for(&self, branch: &str) -> Vec<Pr> {
        self.pulls()
            .into_iter()
            .filter(|p| p.branch == branch && p.state == "open")
            .collect()
    }

    /// The write calls since the last [`Fake::clear_calls`], classified.
    fn writes(&self) -> Vec<Write> {
        let calls: Vec<(String, String, Option<serde_json::Value>)> = match self {
            Fake::GitHub(f) => f
                .write_calls()
                .into_iter()
                .map(|c| (c.method, c.path, c.body))
                .collect(),
            Fake::GitLab(f) => f
                .write_calls()
                .into_iter()
                .map(|c| (c.method, c.path, c.body))
                .collect(),
            Fake::Gitea(f) => f
                .write_calls()
                .into_iter()
                .map(|c| (c.method, c.path, c.body))
                .collect(),
        };
        calls
            .iter()
            .map(|(method, path, body)| classify(method, path, body.as_ref()))
            .collect()
    }

    fn clear_calls(&self) {
        match self {
            Fake::GitHub(f) => f.clear_calls(),
            Fake::GitLab(f) => f.clear_calls(),
            Fake::Gitea(f) => f.clear_calls(),
        }
    }

    /// A human closes the pull request without merging.
    fn close(&self, number: u64) {
        match self {
            Fake::GitHub(f) => f.close(number),
            Fake::GitLab(f) => f.close(number),
            Fake::Gitea(f) => f.close(number),
        }
    }

    /// A human reopens a closed pull request.
    fn reopen(&self, number: u64) {
        match self {
            Fake::GitHub(f) => f.reopen(number),
            Fake::GitLab(f) => f.reopen(number),
            Fake::Gitea(f) => f.reopen(number),
        }
    }

    /// Whether the forge's auto-merge is on for the pull request.
    fn automerge_on(&self, number: u64) -> bool {
        match self {
            Fake::GitHub(f) => f.pull(number).auto_merge.is_some(),
            Fake::GitLab(f) => f.pull(number).auto_merge,
            Fake::Gitea(f) => f.pull(number).scheduled_merge.is_some(),
        }
    }

    /// A human turns auto-merge off.
    fn disable_automerge(&self, number: u64) {
        match self {
            Fake::GitHub(f) => f.disable_auto_merge(number),
            Fake::GitLab(f) => f.cancel_auto_merge(number),
            Fake::Gitea(f) => f.cancel_scheduled_merge(number),
        }
    }

    /// The repository allows auto-merge (on by default), or refuses it.
    fn allow_automerge(&self, allowed: bool) {
        match self {
            Fake::GitHub(f) => f.set_allow_auto_merge(allowed),
            Fake::GitLab(f) => f.set_allow_auto_merge(allowed),
            Fake::Gitea(f) => f.set_allow_auto_merge(allowed),
        }
    }

    /// A human merges the pull request (the fake's record; the git merge is separate).
    fn merge(&self, number: u64) {
        match self {
            Fake::GitHub(f) => f.merge(number),
            Fake::GitLab(f) => f.merge(number),
            Fake::Gitea(f) => f.merge(number),
        }
    }

    /// The next "open a pull request" call answers 500.
    fn fail_next_create(&self) {
        match self {
            Fake::GitHub(f) => f.fail_next(
                "POST",
                &format!("/repos/{}/{}/pulls", FakeGitHub::OWNER, FakeGitHub::REPO),
                1,
                support::github::Fault::Status(500),
            ),
            Fake::GitLab(f) => {
                f.fail_next_with(Some("POST"), 1, support::gitlab::Fault::Status(500))
            }
            Fake::Gitea(f) => f.fail_next_method("POST", 500),
        }
    }
}

impl Fake {
    /// The next "open a pull request" call opens it, and then answers 502 (a proxy's
    /// answer lost after the forge did the work).
    fn lose_next_create(&self) {
        match self {
            Fake::GitHub(f) => f.lose_next_answer(
                "POST",
                &format!("/repos/{}/{}/pulls", FakeGitHub::OWNER, FakeGitHub::REPO),
                support::github::Fault::Status(502),
            ),
            Fake::GitLab(f) => f.lose_next_answer("POST", 502),
            Fake::Gitea(f) => f.lose_next_answer("POST", 502),
        }
    }

    /// `login` submits an approving review.
    fn approve(&self, number: u64, login: &str) {
        match self {
            Fake::GitHub(f) => f.review(number, login, "APPROVED"),
            // GitLab keeps its reviewers after they review: nothing changes on the list.
            Fake::GitLab(_) => {}
            Fake::Gitea(f) => f.review(number, login, "APPROVED"),
        }
    }

    /// A pull request's (labels, reviewers asked, assignees), sorted.
    fn decorations(&self, number: u64) -> (Vec<String>, Vec<String>, Vec<String>) {
        let gitlab_name = |id: &u64| FakeGitLab::USERS[(*id - 2) as usize].to_string();
        let (mut labels, mut reviewers, mut assignees) = match self {
            Fake::GitHub(f) => {
                let p = f.pull(number);
                (p.labels, p.reviewers, p.assignees)
            }
            Fake::GitLab(f) => {
                let m = f.pull(number);
                let reviewers = m.reviewer_ids.iter().map(gitlab_name).collect();
                let assignees = m.assignee_ids.iter().map(gitlab_name).collect();
                (m.labels, reviewers, assignees)
            }
            Fake::Gitea(f) => {
                let p = f.pull(number);
                let labels = p.labels.into_iter().map(|l| l.name).collect();
                (labels, p.reviewers, p.assignees)
            }
        };
        labels.sort();
        reviewers.sort();
        assignees.sort();
        (labels, reviewers, assignees)
    }
}

fn github_state(state: &str, merged: bool) -> &'static str {
    match (state, merged) {
        ("open", _) => "open",
        (_, true) => "merged",
        _ => "closed",
    }
}

/// What a write call is, from its method, path and body, in any of the three APIs.
fn classify(method: &str, path: &str, body: Option<&serde_json::Value>) -> Write {
    let field = |k: &str| body.and_then(|b| b.get(k)).and_then(|v| v.as_str());
    let last = path
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default();
    let numbered = last.chars().all(|c| c.is_ascii_digit());
    let is_pull = |p: &str| p.contains("/pulls") || p.contains("/merge_requests");
    match method {
        _ if last == "graphql" || last == "merge" => Write::Automerge,
        "POST" if last == "pulls" || last == "merge_requests" => Write::Create,
        "POST" if last == "comments" || last == "notes" => Write::Comment,
        "PATCH" | "PUT" if numbered && is_pull(path) => {
            if field("state") == Some("closed") || field("state_event") == Some("close") {
                Write::Close
            } else if body.is_some_and(|b| {
                b.get("title").is_some()
                    || b.get("description").is_some()
                    || b.get("body").is_some()
            }) {
                Write::Update
            } else {
                Write::Decorate
            }
        }
        _ => Write::Decorate,
    }
}

struct Setup {
    apps: TwoApps,
    forge: Fake,
}

impl std::ops::Deref for Setup {
    type Target = TwoApps;
    fn deref(&self) -> &TwoApps {
        &self.apps
    }
}

const WEB: &str = "imagebump/apps-web";
const API: &str = "imagebump/apps-api-values.yaml";

/// Two apps (a kustomization and a values file) on a remote whose `main` is the base.
async fn setup(kind: Kind) -> Setup {
    setup_with(kind, "").await
}

/// [`setup`] with more of imagebump.yaml.
async fn setup_with(kind: Kind, extra_config: &str) -> Setup {
    let forge = Fake::start(kind).await;
    Setup {
        apps: TwoApps::start(forge.token(), extra_config),
        forge,
    }
}

impl Setup {
    /// One `imagebump run` in pull-request mode, authenticated as a user of this forge
    /// would be (its own token variable; the git push uses the same token), expecting exit
    /// code `code`.
    async fn run(&self, code: i32) -> Run {
        let (var, forge_args) = self.forge.cli();
        let token = self.forge.token();
        let run = imagebump()
            .arg("run")
            .arg(self.server.url())
            .arg("--config")
            .arg(self.config())
            .args(forge_args)
            .env(var, token)
            .code(code)
            .run_async()
            .await;
        assert!(
            !run.stdout.contains(token) && !run.stderr.contains(token),
            "the forge token reached the output: {run}"
        );
        run
    }
}

// ---------------------------------------------------------------------------------------
// The scenarios
// ---------------------------------------------------------------------------------------

/// First run: two pull requests, one push holding both branches. Second run with nothing
/// new: not one write call, no push.
async fn first_run_then_an_idempotent_rerun(kind: Kind) {
    let s = setup(kind).await;
    let run = s.run(0).await;
    assert_eq!(s.pushes(), 1, "{}", s.server.request_log());
    assert_eq!(
        s.branch_file(WEB, "apps/web/kustomization.yaml").unwrap(),
        "images:\n  - name: registry.test/team/web\n    newTag: 1.1.0 # web\n"
    );
    let pulls = s.forge.pulls();
    let branches: Vec<&str> = pulls.iter().map(|p| p.branch.as_str()).collect();
    assert_eq!(branches.len(), 2, "{pulls:?}");
    assert!(
        branches.contains(&WEB) && branches.contains(&API),
        "{pulls:?}"
    );
    let web = &s.forge.open_for(WEB)[0];
    assert_eq!(web.title, "Update registry.test/team/web to 1.1.0");
    assert_eq!(s.forge.writes(), [Write::Create, Write::Create], "{run}");

    s.forge.clear_calls();
    let again = s.run(0).await;
    assert_eq!(s.forge.writes(), [], "{again}");
    assert_eq!(s.pushes(), 1);
}

/// A newer version: the same branch is pushed again and the same pull request updated.
async fn a_newer_version_updates_the_same_pull_request(kind: Kind) {
    let s = setup(kind).await;
    s.run(0).await;
    let web = s.forge.open_for(WEB)[0].clone();
    s.reg.push_tags("team/web", &["1.2.0"]);
    s.forge.clear_calls();
    let run = s.run(0).await;
    assert_eq!(s.pushes(), 2);
    assert_eq!(s.forge.writes(), [Write::Update], "{run}");
    assert_eq!(s.forge.pulls().len(), 2, "no second pull request");
    let now = s.forge.open_for(WEB);
    assert_eq!(now.len(), 1);
    assert_eq!(now[0].number, web.number);
    assert_eq!(now[0].title, "Update registry.test/team/web to 1.2.0");
}

/// A pull request closed unmerged rejects its version; a newer one gets a fresh one.
async fn a_closed_pull_request_stays_rejected(kind: Kind) {
    let s = setup(kind).await;
    // A release between git's 1.0.0 and the proposed 1.1.0: the no covers it too.
    s.reg.push_tags("team/web", &["1.0.1"]);
    s.run(0).await;
    let web = s.forge.open_for(WEB)[0].clone();
    s.forge.close(web.number);
    s.forge.clear_calls();
    let run = s.run(0).await;
    assert_eq!(
        s.forge.writes(),
        [],
        "neither 1.1.0 nor 1.0.1 is proposed: {run}"
    );

    s.reg.push_tags("team/web", &["1.2.0"]);
    let run = s.run(0).await;
    let open = s.forge.open_for(WEB);
    assert_eq!(open.len(), 1, "{run}");
    assert_ne!(open[0].number, web.number, "a fresh pull request");
    assert_eq!(open[0].title, "Update registry.test/team/web to 1.2.0");
    assert_eq!(s.forge.writes(), [Write::Create], "{run}");
}

/// Reopening a closed pull request takes the "no" back: the next run keeps it current
/// instead of closing it, and forgets the recorded rejection.
async fn a_reopened_pull_request_lifts_its_rejection(kind: Kind) {
    let s = setup(kind).await;
    s.run(0).await;
    let web = s.forge.open_for(WEB)[0].clone();
    s.forge.close(web.number);
    s.run(0).await;
    let recorded = || {
        s.server
            .git(&["for-each-ref", "--format=%(refname)", "refs/imagebump/"])
    };
    assert!(recorded().contains(&format!("/pr-{}/", web.number)));
    s.forge.reopen(web.number);
    s.forge.clear_calls();
    let run = s.run(0).await;
    assert_eq!(s.forge.writes(), [], "left open as it is: {run}");
    assert_eq!(s.forge.open_for(WEB)[0].number, web.number);
    assert_eq!(recorded().trim(), "", "the rejection is forgotten: {run}");
    s.reg.push_tags("team/web", &["1.2.0"]);
    s.run(0).await;
    assert_eq!(s.forge.writes(), [Write::Update]);
    assert_eq!(
        s.forge.open_for(WEB)[0].title,
        "Update registry.test/team/web to 1.2.0"
    );
}

/// A reverted imagebump commit on the base keeps its version rejected.
async fn a_reverted_update_stays_reverted(kind: Kind) {
    // The commit made here by hand stands for imagebump's: its author is imagebump's.
    let author = "pullRequests:\n  author: {name: imagebump test, email: test@imagebump.invalid}\n";
    let s = setup_with(kind, author).await;
    let merged = s.server.commit_on(
        "main",
        &[(
            "apps/web/kustomization.yaml",
            Some("images:\n  - name: registry.test/team/web\n    newTag: 1.1.0 # web\n"),
        )],
        "Update registry.test/team/web to 1.1.0\n\nImagebump-Update: registry.test/team/web 1.0.0 -> 1.1.0\n",
    );
    s.server.revert_on("main", &merged);
    let run = s.run(0).await;
    let branches: Vec<String> = s.forge.pulls().into_iter().map(|p| p.branch).collect();
    assert_eq!(branches, [API], "web 1.1.0 was reverted: {run}");
}

/// A merged pull request reverted with the forge's "Revert" button (`git revert -m 1` of
/// the merge commit): its version stays rejected there, and a newer release is proposed.
async fn a_reverted_merge_stays_reverted(kind: Kind) {
    let s = setup(kind).await;
    s.run(0).await;
    let web = s.forge.open_for(WEB)[0].clone();
    let merge = s.server.merge_on("main", WEB);
    s.forge.merge(web.number);
    s.server.revert_merge_on("main", &merge);
    s.forge.clear_calls();
    let run = s.run(0).await;
    assert_eq!(s.forge.writes(), [], "1.1.0 was reverted: {run}");
    assert!(s.forge.open_for(WEB).is_empty(), "{run}");
    assert!(
        run.stdout
            .contains("registry.test/team/web 1.1.0 held back: commit"),
        "the reason is shown: {run}"
    );

    s.reg.push_tags("team/web", &["1.2.0"]);
    let run = s.run(0).await;
    assert_eq!(s.forge.writes(), [Write::Create], "{run}");
    assert_eq!(
        s.forge.open_for(WEB)[0].title,
        "Update registry.test/team/web to 1.2.0"
    );
}

/// `automerge: true`: each new pull request gets the forge's auto-merge, once; a human who
/// turns it off keeps it off; a refused call is reported and made again by the next run.
async fn automerge_is_turned_on_once(kind: Kind) {
    let s = setup_with(kind, "images:\n  - match: \"**\"\n    automerge: true\n").await;
    s.forge.allow_automerge(false);
    let run = s.run(1).await;
    run.assert_stderr_contains("cannot turn auto-merge on for #")
        .assert_stderr_contains("the repository must allow it");
    use Write::{Automerge, Create, Update};
    assert_eq!(
        s.forge.writes(),
        [Create, Automerge, Create, Automerge],
        "{run}"
    );
    let web = s.forge.open_for(WEB)[0].clone();
    assert!(!s.forge.automerge_on(web.number));

    // The repository allows it now: the next run turns it on, and says so in the body.
    s.forge.allow_automerge(true);
    s.forge.clear_calls();
    let run = s.run(0).await;
    assert_eq!(
        s.forge.writes(),
        [Automerge, Update, Automerge, Update],
        "{run}"
    );
    assert!(s.forge.automerge_on(web.number));
    s.forge.clear_calls();
    s.run(0).await;
    assert_eq!(s.forge.writes(), [], "once");

    // A human turns it off; a newer version updates the pull request and leaves it off.
    s.forge.disable_automerge(web.number);
    s.reg.push_tags("team/web", &["1.2.0"]);
    let run = s.run(0).await;
    assert_eq!(s.forge.writes(), [Update], "{run}");
    assert!(!s.forge.automerge_on(web.number), "left off");
}

/// Someone else's commit on imagebump's branch: not overwritten, said once in a comment,
/// and the next run writes nothing.
async fn a_human_commit_is_left_alone(kind: Kind) {
    let s = setup(kind).await;
    s.run(0).await;
    let theirs = s.server.commit_on(
        WEB,
        &[("apps/web/NOTES.md", Some("reviewer's note\n"))],
        "A reviewer's fix",
    );
    s.reg.push_tags("team/web", &["1.2.0"]);
    s.forge.clear_calls();
    let run = s.run(0).await;
    assert_eq!(s.server.branch_sha(WEB).unwrap(), theirs, "not overwritten");
    let writes = s.forge.writes();
    assert!(writes.contains(&Write::Comment), "{writes:?} {run}");
    assert!(!writes.contains(&Write::Create), "{writes:?}");

    s.forge.clear_calls();
    let run = s.run(0).await;
    assert_eq!(s.forge.writes(), [], "said once: {run}");
}

/// The forge fails to open one pull request: the run says so and exits 1; the next run
/// opens it, without a duplicate of the other.
async fn a_failure_mid_run_converges(kind: Kind) {
    let s = setup(kind).await;
    s.forge.fail_next_create();
    let run = s.run(1).await;
    assert!(
        run.stderr.contains("HTTP 500") || run.stdout.contains("HTTP 500"),
        "{run}"
    );
    assert_eq!(s.forge.pulls().len(), 1, "one created, one failed: {run}");
    s.run(0).await;
    let pulls = s.forge.pulls();
    assert_eq!(pulls.len(), 2, "no duplicate: {pulls:?}");
    assert!(pulls.iter().all(|p| p.state == "open"), "{pulls:?}");
}

/// A person merges imagebump's pull requests by hand (the forge's merge button: a merge
/// commit on the base): the next run, with nothing left to do, pushes nothing and writes
/// nothing to the forge.
async fn a_run_after_a_merge_by_hand_does_nothing(kind: Kind) {
    let s = setup(kind).await;
    s.run(0).await;
    let api = s.server.branch_sha(API).unwrap();
    let web = s.forge.open_for(WEB)[0].clone();
    s.server.merge_on("main", WEB);
    s.forge.merge(web.number);
    let pushes = s.pushes();
    s.forge.clear_calls();
    let run = s.run(0).await;
    assert_eq!(s.forge.writes(), [], "{run}");
    assert_eq!(s.pushes(), pushes, "no push: {}", s.server.request_log());
    assert_eq!(s.server.branch_sha(API).unwrap(), api, "api's branch stays");

    let api = s.forge.open_for(API)[0].clone();
    s.server.merge_on("main", API);
    s.forge.merge(api.number);
    s.forge.clear_calls();
    let run = s.run(0).await;
    assert_eq!(s.forge.writes(), [], "{run}");
    assert_eq!(s.pushes(), pushes, "no push: {}", s.server.request_log());
    run.assert_stdout_contains("0 to update");
}

/// The forge opens a pull request but its answer is lost (a 502 after the work): the run
/// says so and exits 1; the next run finds the pull request and gives it the labels,
/// reviewers and assignees it missed, once. A reviewer who reviewed (GitHub and Gitea then
/// drop the request) is not asked again.
async fn a_lost_create_answer_converges(kind: Kind) {
    let config = "pullRequests:\n  labels: [deps]\n  reviewers: [alice]\n  assignees: [bob]\n";
    let s = setup_with(kind, config).await;
    s.forge.lose_next_create();
    let run = s.run(1).await;
    assert!(
        run.stderr.contains("HTTP 502") || run.stdout.contains("HTTP 502"),
        "{run}"
    );
    let pulls = s.forge.pulls();
    assert_eq!(pulls.len(), 2, "both opened: {pulls:?}");
    let decorated = || -> Vec<_> {
        pulls
            .iter()
            .map(|p| s.forge.decorations(p.number))
            .collect()
    };
    let full = (
        vec!["deps".to_string()],
        vec!["alice".to_string()],
        vec!["bob".to_string()],
    );
    let bare = (vec![], vec![], vec![]);
    let mut before = decorated();
    before.sort();
    assert_eq!(before, [bare, full.clone()], "{run}");

    s.forge.clear_calls();
    let run = s.run(0).await;
    let writes = s.forge.writes();
    assert!(
        !writes.is_empty() && writes.iter().all(|w| *w == Write::Decorate),
        "{writes:?} {run}"
    );
    assert_eq!(decorated(), [full.clone(), full.clone()], "{run}");
    assert_eq!(s.pushes(), 1, "no push");

    s.forge.clear_calls();
    let run = s.run(0).await;
    assert_eq!(s.forge.writes(), [], "converged: {run}");

    // Alice reviews: her request is done, and she is not asked again.
    for p in &pulls {
        s.forge.approve(p.number, "alice");
    }
    s.forge.clear_calls();
    let run = s.run(0).await;
    assert_eq!(s.forge.writes(), [], "not asked again: {run}");
}

/// One `#[tokio::test]` per (scenario, forge).
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

over_the_forges!(
    first_run_then_an_idempotent_rerun,
    a_newer_version_updates_the_same_pull_request,
    a_closed_pull_request_stays_rejected,
    a_reverted_update_stays_reverted,
    a_reverted_merge_stays_reverted,
    a_reopened_pull_request_lifts_its_rejection,
    a_human_commit_is_left_alone,
    a_failure_mid_run_converges,
    automerge_is_turned_on_once,
    a_run_after_a_merge_by_hand_does_nothing,
    a_lost_create_answer_converges,
);
