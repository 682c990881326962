//! How updates are shaped into pull requests: majors apart (`separateMajor`), named groups
//! (`group:`), end to end over a real git remote, a real registry and the GitHub fake,
//! with the exact pull requests, branches and forge calls of each run.

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

/// Two apps (web 1.0.0 with 1.1.0 out, api 2.0.0 with 2.1.0 out) on a remote whose `main`
/// is the base; web 2.0.0 is out too, a major update.
async fn setup(extra_config: &str) -> Setup {
    let apps = TwoApps::start(TOKEN, extra_config);
    apps.reg.push_tags("team/web", &["2.0.0"]);
    Setup {
        apps,
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

    /// Every pull request as `branch | title | state | labels`, sorted by number.
    fn pulls(&self) -> Vec<String> {
        let mut pulls = self.forge.pulls();
        pulls.sort_by_key(|p| p.number);
        pulls
            .iter()
            .map(|p| {
                let state = if p.merged { "merged" } else { p.state.as_str() };
                format!("{} | {} | {state} | {:?}", p.branch, p.title, p.labels)
            })
            .collect()
    }

    fn writes(&self) -> Vec<String> {
        self.forge
            .write_calls()
            .iter()
            .map(|c| format!("{} {}", c.method, c.path))
            .collect()
    }

    fn number_of(&self, branch: &str) -> u64 {
        self.forge
            .pulls()
            .into_iter()
            .filter(|p| p.branch == branch && p.state == "open")
            .map(|p| p.number)
            .next()
            .unwrap_or_else(|| panic!("no open pull request for {branch}: {:?}", self.pulls()))
    }
}

const WEB_MAJOR: &str = "imagebump/apps-web-major";
const WEB: &str = "imagebump/apps-web";
const API: &str = "imagebump/apps-api-values.yaml";

/// A major update gets its own branch, title and label; closing it rejects that major
/// line only, so web's minor update comes in the ordinary pull request; a newer major
/// opens a new pull request on the same branch.
#[tokio::test(flavor = "multi_thread")]
async fn a_major_update_gets_its_own_pull_request_and_label() {
    let s = setup("pullRequests:\n  labels: [deps]\n").await;
    s.run(&[], 0).await;
    assert_eq!(
        s.pulls(),
        [
            format!("{API} | Update registry.test/team/api to 2.1.0 | open | [\"deps\"]"),
            format!(
                "{WEB_MAJOR} | Update registry.test/team/web to 2.0.0 (major) | open | [\"deps\", \"major\"]"
            ),
        ]
    );
    assert_eq!(
        s.branch_file(WEB_MAJOR, "apps/web/kustomization.yaml")
            .unwrap(),
        "images:\n  - name: registry.test/team/web\n    newTag: 2.0.0 # web\n"
    );
    let major = s.number_of(WEB_MAJOR);
    let body = s.forge.pull(major).body.unwrap_or_default();
    assert!(
        body.contains("in `apps/web` (major updates, apart from the minor and patch ones)."),
        "{body}"
    );

    // Nothing new: nothing written.
    s.forge.clear_calls();
    s.run(&[], 0).await;
    assert_eq!(s.writes(), Vec::<String>::new());

    // Closing the major pull request is a no to 2.x up to 2.0.0, not to 1.1.0.
    s.forge.close(major);
    s.forge.clear_calls();
    let run = s.run(&[], 0).await;
    assert_eq!(
        s.pulls()[2],
        format!("{WEB} | Update registry.test/team/web to 1.1.0 | open | [\"deps\"]"),
        "{run}"
    );
    assert_eq!(
        s.writes(),
        [
            format!("POST {}", s.forge.repo_path("/pulls")),
            format!("POST {}", s.forge.repo_path("/issues/3/labels")),
        ]
    );

    // A newer major: a new pull request on the major branch. The reference's update is
    // that major, so the minor pull request is closed as regrouped (rejecting nothing).
    s.reg.push_tags("team/web", &["2.0.1"]);
    let run = s.run(&[], 0).await;
    let pulls = s.pulls();
    assert_eq!(pulls.len(), 4, "{pulls:#?} {run}");
    assert_eq!(
        pulls[3],
        format!(
            "{WEB_MAJOR} | Update registry.test/team/web to 2.0.1 (major) | open | [\"deps\", \"major\"]"
        )
    );
    assert_eq!(
        pulls[2],
        format!("{WEB} | Update registry.test/team/web to 1.1.0 | closed | [\"deps\"]")
    );
    let minor = s.forge.pulls().into_iter().find(|p| p.number == 3).unwrap();
    assert!(minor.comments[0].starts_with("Another imagebump pull request proposes"));
}

/// `separateMajor: false`: a major update goes to its group's pull request, as any other.
#[tokio::test(flavor = "multi_thread")]
async fn separate_major_false_keeps_majors_with_the_rest() {
    let s = setup("pullRequests:\n  separateMajor: false\n").await;
    s.run(&[], 0).await;
    assert_eq!(
        s.pulls(),
        [
            format!("{API} | Update registry.test/team/api to 2.1.0 | open | []"),
            format!("{WEB} | Update registry.test/team/web to 2.0.0 | open | []"),
        ]
    );
}

/// `majorLabels: []` labels nothing; a title template still says "(major)".
#[tokio::test(flavor = "multi_thread")]
async fn major_labels_can_be_turned_off_and_templates_say_major() {
    let config = "pullRequests:\n  majorLabels: []\n  title: \"chore: {image} {from} -> {to}\"\n";
    let s = setup(config).await;
    s.run(&[], 0).await;
    assert_eq!(
        s.pulls(),
        [
            format!("{API} | chore: registry.test/team/api 2.0.0 -> 2.1.0 | open | []"),
            format!(
                "{WEB_MAJOR} | chore: registry.test/team/web 1.0.0 -> 2.0.0 (major) | open | []"
            ),
        ]
    );
    let creates = format!("POST {}", s.forge.repo_path("/pulls"));
    assert_eq!(s.writes(), [creates.clone(), creates]);
}

/// A rule's `group:` puts its images into one named change set whatever `groupBy` says;
/// its majors still go apart.
#[tokio::test(flavor = "multi_thread")]
async fn a_named_group_moves_its_images_together() {
    let config = "images:\n  - match: registry.test/team/*\n    group: platform/core\n";
    let s = setup(config).await;
    s.reg.push_tags("team/api", &["2.2.0"]);
    s.run(&[], 0).await;
    assert_eq!(
        s.pulls(),
        [
            "imagebump/platform-core | Update registry.test/team/api to 2.2.0 | open | []"
                .to_string(),
            "imagebump/platform-core-major | Update registry.test/team/web to 2.0.0 (major) | open | [\"major\"]"
                .to_string(),
        ]
    );

    // With the majors kept in, one change set for both images.
    let config =
        "pullRequests:\n  separateMajor: false\n  groupBy: image\ndefaults:\n  group: platform\n";
    let s = setup(config).await;
    s.run(&[], 0).await;
    assert_eq!(
        s.pulls(),
        ["imagebump/platform | Update 2 images in platform | open | []"]
    );
    assert_eq!(
        s.branch_file("imagebump/platform", "apps/api/values.yaml")
            .unwrap(),
        "image:\n  repository: registry.test/team/api\n  tag: 2.1.0\n"
    );
}

/// A group name that cannot be a branch is refused with its file, line and key.
#[tokio::test(flavor = "multi_thread")]
async fn a_bad_group_name_is_refused_with_its_line() {
    let config = "images:\n  - match: registry.test/team/*\n    group: \"Team A\"\n";
    let s = setup(config).await;
    let run = s.run(&["--dry-run"], 2).await;
    let config_path = s.config();
    run.assert_stderr_contains(&format!(
        "{}:6:12: images[0].group: group name \"Team A\" holds 'T'",
        config_path.display()
    ));
    assert_eq!(s.forge.calls().len(), 0, "nothing asked of the forge");
}

/// Majors going apart on a repository whose pull request proposes one with the rest: the
/// major pull request is opened, and the old one is closed with a note, its marker emptied
/// first, so that closing it rejects nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_pull_request_regrouped_elsewhere_is_closed_without_rejecting() {
    let s = setup("pullRequests:\n  separateMajor: false\n").await;
    s.run(&[], 0).await;
    let old = s.number_of(WEB);
    let config = std::fs::read_to_string(s.config()).unwrap();
    std::fs::write(
        s.config(),
        config.replace("pullRequests:\n  separateMajor: false\n", ""),
    )
    .unwrap();
    s.forge.clear_calls();
    let run = s.run(&[], 0).await;
    let path = |p: &str| s.forge.repo_path(p);
    assert_eq!(
        s.writes(),
        [
            format!("POST {}", path("/pulls")),
            format!("POST {}", path("/issues/3/labels")),
            format!("PATCH {}", path(&format!("/pulls/{old}"))),
            format!("POST {}", path(&format!("/issues/{old}/comments"))),
            format!("PATCH {}", path(&format!("/pulls/{old}"))),
        ],
        "{run}"
    );
    let closed = s.forge.pull(old);
    assert_eq!(closed.state, "closed");
    let body = closed.body.unwrap_or_default();
    assert!(
        body.ends_with("rejects nothing.\n\n<!-- imagebump:updates64 W10= -->\n"),
        "{body}"
    );
    assert!(closed.comments[0].starts_with("Another imagebump pull request proposes"));

    // The closed pull request rejects nothing: the major one stays, nothing is written.
    s.forge.clear_calls();
    let run = s.run(&[], 0).await;
    assert_eq!(s.writes(), Vec::<String>::new(), "{run}");
    assert_eq!(
        s.pulls()[2],
        format!(
            "{WEB_MAJOR} | Update registry.test/team/web to 2.0.0 (major) | open | [\"major\"]"
        )
    );
}

/// Shards split by the group a major is apart from: each shard keeps its own major pull
/// request, and no other shard closes it. All shards' runs, twice: every pull request
/// stays open and nothing is written the second time.
#[tokio::test(flavor = "multi_thread")]
async fn a_major_stays_in_its_groups_shard() {
    let s = setup("").await;
    // A shard count where web's major key and web's group hash apart: the major's pull
    // request is then seen by a shard whose plan has nothing for web.
    let shard = imagebump::plan::shard_of;
    let n = (2..32)
        .find(|&n| shard("apps/web", n) != shard("apps/web (major)", n))
        .unwrap();
    let shards: Vec<String> = (0..n).map(|i| format!("{i}/{n}")).collect();
    for shard in &shards {
        s.run(&["--shard", shard], 0).await;
    }
    let mut pulls = s.pulls();
    pulls.sort();
    assert_eq!(
        pulls,
        [
            format!("{API} | Update registry.test/team/api to 2.1.0 | open | []"),
            format!(
                "{WEB_MAJOR} | Update registry.test/team/web to 2.0.0 (major) | open | [\"major\"]"
            ),
        ]
    );
    s.forge.clear_calls();
    for shard in &shards {
        s.run(&["--shard", shard], 0).await;
    }
    assert_eq!(s.writes(), Vec::<String>::new());
    assert!(
        s.forge.pulls().iter().all(|p| p.state == "open"),
        "{:?}",
        s.pulls()
    );
}

/// A marker's group whose branch is a major change set's (`apps-web-major` next to the
/// majors of `apps/web`): the first in plan order keeps the branch, the other is reported
/// failed with a problem naming both groups, and the other change sets still open their
/// pull requests. The next run keeps the same one and writes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_group_whose_branch_is_taken_fails_alone() {
    let s = setup("").await;
    s.reg.push_tags("team/db", &["1.0.0", "1.1.0"]);
    s.server.commit_on(
        "main",
        &[
            (
                "apps/api/values.yaml",
                Some(
                    "image:\n  repository: registry.test/team/api\n  tag: 2.0.0 # imagebump: {group: apps-web-major}\n",
                ),
            ),
            (
                "apps/db/values.yaml",
                Some("image:\n  repository: registry.test/team/db\n  tag: 1.0.0\n"),
            ),
        ],
        "a marker's group and a third app",
    );
    let run = s.run(&[], 1).await;
    run.assert_stderr_contains(&format!(
        "group \"apps/web (major)\": not proposed: its branch {WEB_MAJOR} is the branch of group \"apps-web-major\""
    ));
    assert_eq!(
        s.pulls(),
        [
            format!("{WEB_MAJOR} | Update registry.test/team/api to 2.1.0 | open | []"),
            "imagebump/apps-db-values.yaml | Update registry.test/team/db to 1.1.0 | open | []"
                .to_string(),
        ],
        "{run}"
    );
    assert_eq!(
        s.branch_file(WEB_MAJOR, "apps/web/kustomization.yaml")
            .unwrap(),
        "images:\n  - name: registry.test/team/web\n    newTag: 1.0.0 # web\n"
    );

    s.forge.clear_calls();
    let run = s.run(&[], 1).await;
    assert_eq!(s.writes(), Vec::<String>::new(), "{run}");
    run.assert_stderr_contains("is the branch of group \"apps-web-major\"");
}

/// A marker's group that comes to share the branch of an open pull request's group does
/// not take that pull request over: the group its marker names keeps it, whatever the
/// order, and the newcomer fails alone.
#[tokio::test(flavor = "multi_thread")]
async fn an_open_pull_request_keeps_its_branch_from_a_new_group() {
    let s = setup("").await;
    s.run(&[], 0).await;
    let major = s.number_of(WEB_MAJOR);
    s.server.commit_on(
        "main",
        &[(
            "apps/api/values.yaml",
            Some(
                "image:\n  repository: registry.test/team/api\n  tag: 2.0.0 # imagebump: {group: apps-web-major}\n",
            ),
        )],
        "a marker's group",
    );
    s.forge.clear_calls();
    let run = s.run(&[], 1).await;
    run.assert_stderr_contains(&format!(
        "group \"apps-web-major\": not proposed: its branch {WEB_MAJOR} is the branch of group \"apps/web (major)\""
    ));
    // The major pull request is as it was: nothing written.
    assert_eq!(s.writes(), Vec::<String>::new(), "{run}");
    assert_eq!(s.number_of(WEB_MAJOR), major);
    assert_eq!(
        s.pulls(),
        [
            format!("{API} | Update registry.test/team/api to 2.1.0 | open | []"),
            format!(
                "{WEB_MAJOR} | Update registry.test/team/web to 2.0.0 (major) | open | [\"major\"]"
            ),
        ]
    );
    assert_eq!(
        s.branch_file(WEB_MAJOR, "apps/web/kustomization.yaml")
            .unwrap(),
        "images:\n  - name: registry.test/team/web\n    newTag: 2.0.0 # web\n"
    );
}

/// A group name git refuses in a branch (`db.lock`) is refused where it is written: a
/// rule's at config load, a marker's at its line, whose reference alone is left out.
#[tokio::test(flavor = "multi_thread")]
async fn a_group_git_refuses_as_a_branch_is_refused_where_written() {
    let config = "images:\n  - match: registry.test/team/*\n    group: db.lock\n";
    let s = setup(config).await;
    let run = s.run(&["--dry-run"], 2).await;
    run.assert_stderr_contains(&format!(
        "{}:6:12: images[0].group: group name \"db.lock\" has a part ending with .lock",
        s.config().display()
    ));
    assert_eq!(s.forge.calls().len(), 0, "nothing asked of the forge");

    let s = setup("").await;
    s.server.commit_on(
        "main",
        &[(
            "apps/api/values.yaml",
            Some(
                "image:\n  repository: registry.test/team/api\n  tag: 2.0.0 # imagebump: {group: team/db.lock}\n",
            ),
        )],
        "a marker's group",
    );
    let run = s.run(&[], 1).await;
    run.assert_stderr_contains(
        "error: apps/api/values.yaml:3:16: group: group name \"team/db.lock\" has a part ending with .lock, which git refuses in a branch name",
    );
    assert_eq!(
        s.pulls(),
        [format!(
            "{WEB_MAJOR} | Update registry.test/team/web to 2.0.0 (major) | open | [\"major\"]"
        )],
        "{run}"
    );
}
