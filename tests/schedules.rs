//! Schedules and freezes from the user's side: the real binary at a fixed "now"
//! (`IMAGEBUMP_TEST_NOW`), a real registry, and, for pull-request mode, a real git remote
//! and the stateful GitHub fake, with the exact forge calls of every run.

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

use support::cli::{dry_run, imagebump, Run};
use support::github::FakeGitHub;
use support::{Registry, RegistryMode, TwoApps};

/// Weekday mornings in Berlin, and a release week frozen.
const CALENDAR: &str = "defaults:
  schedule: ['* 6-9 * * 1-5']
  timezone: Europe/Berlin
  freeze:
  - {from: 2026-12-14, until: 2026-12-18, reason: release week}
";

/// Tuesday 2026-12-08, 08:00 CET: inside the window.
const TUESDAY_MORNING: &str = "2026-12-08T07:00:00Z";
/// Tuesday 2026-12-08, 18:00 CET: outside.
const TUESDAY_EVENING: &str = "2026-12-08T17:00:00Z";
/// Tuesday 2026-12-15, 08:00 CET: inside the window, inside the freeze.
const RELEASE_WEEK: &str = "2026-12-15T07:00:00Z";
/// Monday 2026-12-21, 08:00 CET: the first window after the freeze.
const AFTER_RELEASE: &str = "2026-12-21T07:00:00Z";

/// A local tree with one image at 1.0.0 (1.1.0 in the registry), and its configuration.
struct Local {
    _reg: Registry,
    dir: tempfile::TempDir,
    cfg: tempfile::TempDir,
}

fn local() -> Local {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.0.0", "1.1.0"]);
    let dir = support::tree(&[(
        "apps/web/kustomization.yaml",
        "images:\n  - name: registry.test/team/web\n    newTag: 1.0.0\n",
    )]);
    let cfg = support::tree(&[(
        "imagebump.yaml",
        format!(
            "registries:\n  - prefix: registry.test\n    url: {}\n{CALENDAR}",
            reg.base_url()
        ),
    )]);
    Local {
        _reg: reg,
        dir,
        cfg,
    }
}

impl Local {
    fn run(&self, now: &str, extra: &[&str]) -> Run {
        dry_run(self.dir.path(), self.cfg.path().join("imagebump.yaml"))
            .args(extra)
            .env("IMAGEBUMP_TEST_NOW", now)
            .code(0)
            .run()
    }
}

/// The JSON report's `notUpdated` rows and `counts.scheduled` at `now`.
fn waiting(l: &Local, now: &str) -> (serde_json::Value, serde_json::Value, usize) {
    let json = l.run(now, &["--output", "json"]).json();
    let updates = json["updates"].as_array().unwrap().len();
    (
        json["notUpdated"].clone(),
        json["counts"]["scheduled"].clone(),
        updates,
    )
}

#[test]
fn a_dry_run_outside_the_window_shows_the_update_waiting_and_when() {
    let l = local();
    let outside = l.run(TUESDAY_EVENING, &[]);
    assert_eq!(
        outside.stdout,
        "\nwaiting for the schedule (1):\n  apps/web/kustomization.yaml:3: registry.test/team/web 1.0.0: 1.1.0 waits: outside schedule `* 6-9 * * 1-5` (Europe/Berlin); next window opens 2026-12-09 06:00 CET\n\n0 update(s) proposed in 0 file(s); 1 references: 0 to update, 1 scheduled; 1 repositories asked\n",
        "{}",
        outside.stderr
    );
    let (rows, scheduled, updates) = waiting(&l, TUESDAY_EVENING);
    assert_eq!(
        rows,
        serde_json::json!([{
            "file": "apps/web/kustomization.yaml",
            "line": 3,
            "image": "registry.test/team/web",
            "tag": "1.0.0",
            "status": "scheduled",
            "reason": "1.1.0 waits: outside schedule `* 6-9 * * 1-5` (Europe/Berlin); next window opens 2026-12-09 06:00 CET"
        }])
    );
    assert_eq!((scheduled, updates), (serde_json::json!(1), 0));
}

#[test]
fn a_dry_run_inside_the_window_proposes_and_inside_a_freeze_does_not() {
    let l = local();
    let (rows, scheduled, updates) = waiting(&l, TUESDAY_MORNING);
    assert_eq!(
        (rows, scheduled, updates),
        (serde_json::json!([]), serde_json::json!(0), 1)
    );
    let inside = l.run(TUESDAY_MORNING, &[]);
    inside.assert_stdout_contains("+    newTag: 1.1.0");

    let (rows, scheduled, updates) = waiting(&l, RELEASE_WEEK);
    assert_eq!(
        rows[0]["reason"],
        "1.1.0 waits: frozen until 2026-12-18 (Europe/Berlin): release week; updates resume 2026-12-21 06:00 CET"
    );
    assert_eq!((scheduled, updates), (serde_json::json!(1), 0));
    // `--exit-code` counts what would be proposed now: nothing.
    l.run(RELEASE_WEEK, &["--exit-code"]);
}

const TOKEN: &str = FakeGitHub::TOKEN;
const WEB: &str = "imagebump/apps-web";
const API: &str = "imagebump/apps-api-values.yaml";

struct Remote {
    apps: TwoApps,
    forge: FakeGitHub,
}

impl Remote {
    async fn run(&self, now: &str, extra: &[&str]) -> Run {
        imagebump()
            .arg("run")
            .arg(self.apps.server.url())
            .arg("--config")
            .arg(self.apps.config())
            .args(["--forge", "github", "--forge-url"])
            .arg(self.forge.api_url())
            .arg("--forge-repo")
            .arg(format!("{}/{}", FakeGitHub::OWNER, FakeGitHub::REPO))
            .args(extra)
            .env("GITHUB_TOKEN", TOKEN)
            .env("IMAGEBUMP_TEST_NOW", now)
            .code(0)
            .run_async()
            .await
    }

    /// Forge calls that change something, as `METHOD path`, since the last clear.
    fn writes(&self) -> Vec<String> {
        let calls = self.forge.write_calls();
        self.forge.clear_calls();
        calls
            .iter()
            .map(|c| format!("{} {}", c.method, c.path))
            .collect()
    }

    fn open_branches(&self) -> Vec<String> {
        let mut open: Vec<String> = (self.forge.pulls().into_iter())
            .filter(|p| p.state == "open")
            .map(|p| p.branch)
            .collect();
        open.sort();
        open
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn outside_the_window_an_open_pull_request_stays_current_and_nothing_new_opens() {
    let r = Remote {
        apps: TwoApps::start(TOKEN, CALENDAR),
        forge: FakeGitHub::start().await,
    };
    // In the window, one pull request at most: api's opens, web's is deferred.
    r.run(TUESDAY_MORNING, &["--max-prs", "1"]).await;
    assert_eq!(r.open_branches(), [API]);
    let api = r
        .forge
        .pulls()
        .into_iter()
        .find(|p| p.branch == API)
        .unwrap();
    r.writes();

    // Evening: api has a newer version. Its open pull request follows it; web's update
    // is new, and waits for the morning.
    r.apps.reg.push_tags("team/api", &["2.2.0"]);
    let evening = r.run(TUESDAY_EVENING, &[]).await;
    let patch = format!(
        "PATCH {}",
        r.forge.repo_path(&format!("/pulls/{}", api.number))
    );
    assert_eq!(r.writes(), [patch], "{}", evening.stdout);
    assert_eq!(r.apps.pushes(), 2, "the api branch moved to 2.2.0");
    assert_eq!(
        r.apps.branch_file(API, "apps/api/values.yaml").unwrap(),
        "image:\n  repository: registry.test/team/api\n  tag: 2.2.0\n"
    );
    assert_eq!(r.open_branches(), [API]);
    evening.assert_stdout_contains("  apps/web/kustomization.yaml:3: registry.test/team/web 1.0.0: 1.1.0 waits: outside schedule `* 6-9 * * 1-5` (Europe/Berlin); next window opens 2026-12-09 06:00 CET\n");

    // The release week: frozen, api's pull request is left as it is.
    let frozen = r.run(RELEASE_WEEK, &[]).await;
    assert_eq!(r.writes(), Vec::<String>::new(), "{}", frozen.stdout);
    assert_eq!(r.apps.pushes(), 2);
    frozen.assert_stdout_contains("1.1.0 waits: frozen until 2026-12-18 (Europe/Berlin): release week; updates resume 2026-12-21 06:00 CET");

    // The first window after it: web's pull request opens.
    r.run(AFTER_RELEASE, &[]).await;
    assert_eq!(
        r.writes(),
        [format!("POST {}", r.forge.repo_path("/pulls"))]
    );
    assert_eq!(r.open_branches(), [API, WEB]);
}

/// The repository's own `imagebump.yaml` may set a freeze; its reason is the repository's
/// text, shown escaped on the terminal and in the Markdown summary.
#[test]
fn a_freeze_in_the_repository_file_is_honoured_and_its_reason_shown_escaped() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.0.0", "1.1.0"]);
    let dir = support::tree(&[
        (
            "apps/web/kustomization.yaml",
            "images:\n  - name: registry.test/team/web\n    newTag: 1.0.0\n".to_string(),
        ),
        (
            "imagebump.yaml",
            "defaults:\n  freeze:\n  - from: 2026-12-14\n    until: 2026-12-18\n    reason: \"\\e[2Jrelease <img src=x> | [x](http://evil)\"\n".to_string(),
        ),
    ]);
    let cfg = support::tree(&[(
        "imagebump.yaml",
        format!(
            "registries:\n  - prefix: registry.test\n    url: {}\n",
            reg.base_url()
        ),
    )]);
    let summary = dir.path().join("summary.md");
    let run = dry_run(dir.path(), cfg.path().join("imagebump.yaml"))
        .arg("--summary-md")
        .arg(&summary)
        .env("IMAGEBUMP_TEST_NOW", RELEASE_WEEK)
        .code(0)
        .run();
    assert!(!run.stdout.contains('\u{1b}'), "{:?}", run.stdout);
    run.assert_stdout_contains(
        "1.1.0 waits: frozen until 2026-12-18 (UTC): \\u{1b}[2Jrelease <img src=x> | [x](http://evil); updates resume 2026-12-19 00:00 UTC\n",
    );
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.contains("### Waiting for the schedule"), "{md}");
    assert!(!md.contains("<img") && !md.contains("](http"), "{md}");
}

/// A rule's `schedule` replaces the one of `defaults` (`[]`: any time) and its `timezone`
/// is inherited; the freeze of `defaults` still holds for it.
#[test]
fn a_rule_overrides_the_schedule_per_image_and_keeps_the_freeze() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.0.0", "1.1.0"]);
    reg.push_tags("team/api", &["2.0.0", "2.1.0"]);
    reg.push_tags("team/db", &["3.0.0", "3.1.0"]);
    let dir = support::tree(&[(
        "apps/kustomization.yaml",
        "images:\n  - name: registry.test/team/web\n    newTag: 1.0.0\n  - name: registry.test/team/api\n    newTag: 2.0.0\n  - name: registry.test/team/db\n    newTag: 3.0.0\n",
    )]);
    let cfg = support::tree(&[(
        "imagebump.yaml",
        format!(
            "registries:\n  - prefix: registry.test\n    url: {}\n{CALENDAR}images:\n  - match: registry.test/team/api\n    schedule: []\n  - match: registry.test/team/db\n    schedule: ['* 18-19 * * *']\n",
            reg.base_url()
        ),
    )]);
    let at = |now: &str| {
        let json = dry_run(dir.path(), cfg.path().join("imagebump.yaml"))
            .args(["--output", "json"])
            .env("IMAGEBUMP_TEST_NOW", now)
            .code(0)
            .run()
            .json();
        let updated: Vec<String> = (json["updates"].as_array().unwrap().iter())
            .map(|u| {
                format!(
                    "{} {}",
                    u["image"].as_str().unwrap(),
                    u["to"].as_str().unwrap()
                )
            })
            .collect();
        let waiting: Vec<String> = (json["notUpdated"].as_array().unwrap().iter())
            .map(|n| {
                format!(
                    "{} {}",
                    n["image"].as_str().unwrap(),
                    n["reason"].as_str().unwrap()
                )
            })
            .collect();
        (updated, waiting)
    };
    // 18:00 CET: web's window is closed, api has none, db's (in Berlin) is open.
    let (updated, waiting) = at(TUESDAY_EVENING);
    assert_eq!(
        updated,
        [
            "registry.test/team/api 2.1.0",
            "registry.test/team/db 3.1.0"
        ]
    );
    assert_eq!(
        waiting,
        ["registry.test/team/web 1.1.0 waits: outside schedule `* 6-9 * * 1-5` (Europe/Berlin); next window opens 2026-12-09 06:00 CET"]
    );
    // The release week holds all three.
    let (updated, waiting) = at(RELEASE_WEEK);
    assert_eq!(updated, Vec::<String>::new());
    assert_eq!(waiting.len(), 3, "{waiting:?}");
    assert_eq!(
        waiting[2],
        "registry.test/team/db 3.1.0 waits: frozen until 2026-12-18 (Europe/Berlin): release week; updates resume 2026-12-19 18:00 CET"
    );
}

/// A bad schedule, zone or freeze is a configuration error at its file and line (exit 2),
/// from the repository's file as from the operator's.
#[test]
fn bad_schedules_stop_the_run_naming_file_line_and_key() {
    let dir = support::tree(&[
        (
            "apps/web/kustomization.yaml",
            "images:\n  - name: registry.test/team/web\n    newTag: 1.0.0\n",
        ),
        ("imagebump.yaml", "defaults:\n  timezone: Europe/Berlim\n"),
    ]);
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(dir.path())
        .code(2)
        .run();
    run.assert_stderr_contains(
        "imagebump.yaml:2:13: defaults.timezone: unknown time zone \"Europe/Berlim\"",
    );
    let cfg = support::tree(&[(
        "ops.yaml",
        "images:\n- match: \"**\"\n  schedule: ['* 6-9 * * mon-fry']\n",
    )]);
    let run = dry_run(dir.path(), cfg.path().join("ops.yaml"))
        .code(2)
        .run();
    run.assert_stderr_contains("ops.yaml:3:13: images[0].schedule: invalid cron expression: day of week: \"fry\" in \"mon-fry\" is not a value from 0 to 7");
}
