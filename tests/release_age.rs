//! `minAge` on images without a plausible build date (docs/tag-selection.md, "minAge"): a
//! real registry holding reproducible builds (created 1970) and images without a date (Go's
//! zero time), a real git remote served over `git://`, the GitHub fake, and runs at several
//! instants (IMAGEBUMP_TEST_NOW). The first sighting of each tag is kept as a ref on the
//! remote; a dry run writes none.

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

use support::cli::imagebump;
use support::github::FakeGitHub;
use support::{git, GitServer, Registry, RegistryMode};

/// The first run, and the seconds since the epoch of that instant.
const T0: &str = "2026-12-01T00:00:00Z";
const T0_SECONDS: i64 = 1_796_083_200;

const KUSTOMIZATION: &str = "images:
  - name: registry.test/team/web
    newTag: 1.0.0
  - name: registry.test/team/app
    newTag: 3.0.0
  - name: registry.test/team/api
    newTag: 2.0.0
";

struct Setup {
    _reg: Registry,
    server: GitServer,
    _work: tempfile::TempDir,
    cfg: tempfile::TempDir,
}

/// web: reproducible builds (1970); app: no date (Go's zero time); api: real build dates,
/// 2.1.0 built eleven days before [`T0`]. Every reference at its oldest tag, `minAge: 7d`.
fn setup() -> Setup {
    let reg = Registry::start(RegistryMode::Plain);
    for tag in ["1.0.0", "1.1.0"] {
        reg.push_tag_created("team/web", tag, "1970-01-01T00:00:01Z");
    }
    for tag in ["3.0.0", "3.1.0"] {
        reg.push_tag_created("team/app", tag, "0001-01-01T00:00:00Z");
    }
    reg.push_tag_created("team/api", "2.0.0", "2026-01-01T00:00:00Z");
    reg.push_tag_created("team/api", "2.1.0", "2026-11-20T00:00:00Z");
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    git(dir, &["init", "--quiet", "-b", "main"]);
    std::fs::create_dir_all(dir.join("apps")).unwrap();
    std::fs::write(dir.join("apps/kustomization.yaml"), KUSTOMIZATION).unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "--quiet", "-m", "apps"]);
    let server = GitServer::daemon(dir, "gitops");
    let cfg = tempfile::tempdir().unwrap();
    std::fs::write(
        cfg.path().join("imagebump.yaml"),
        format!(
            "registries:\n  - prefix: registry.test\n    url: {}\ndefaults:\n  minAge: 7d\n",
            reg.base_url()
        ),
    )
    .unwrap();
    Setup {
        _reg: reg,
        server,
        _work: work,
        cfg,
    }
}

impl Setup {
    fn config(&self) -> std::path::PathBuf {
        self.cfg.path().join("imagebump.yaml")
    }

    /// The first-sighting records on the remote, sorted.
    fn records(&self) -> Vec<String> {
        let out = self.server.git(&[
            "for-each-ref",
            "--format=%(refname)",
            "refs/imagebump/first-seen/",
        ]);
        let mut names: Vec<String> = out.lines().map(str::to_string).collect();
        names.sort();
        names
    }
}

fn record(repo: &str, tag: &str, at: i64) -> String {
    format!("refs/imagebump/first-seen/registry.test/team/{repo}/{tag}/{at}")
}

/// A dry run records nothing and says so; a pull-request run records the tags it held back
/// (and prunes a record of a tag no longer listed); three days later they still wait; eight
/// days later they are proposed, the body saying "first seen" for them and "built" for the
/// image with a real build date.
#[tokio::test(flavor = "multi_thread")]
async fn a_tag_without_a_build_date_waits_from_its_first_sighting() {
    let s = setup();
    let forge = FakeGitHub::start().await;
    let api = forge.api_url();
    let repo = format!("{}/{}", FakeGitHub::OWNER, FakeGitHub::REPO);
    let run = |now: &str, extra: &[&str]| {
        imagebump()
            .arg("run")
            .args(extra)
            .arg(s.server.url())
            .arg("--config")
            .arg(s.config())
            .args([
                "--forge",
                "github",
                "--forge-url",
                &api,
                "--forge-repo",
                &repo,
            ])
            .env("GITHUB_TOKEN", FakeGitHub::TOKEN)
            .env("IMAGEBUMP_TEST_NOW", now)
            .code(0)
            .run_async()
    };
    // A record a hand pushed for a tag the registry does not list.
    let main = s.server.branch_sha("main").unwrap();
    let gone = record("web", "0.9.0", 5);
    s.server.git(&["update-ref", &gone, &main]);

    let dry = run(T0, &["--dry-run", "--output", "json"]).await;
    dry.assert_stderr_contains(
        "2 tag(s) without a plausible build date first seen by this run, not recorded (a dry \
         run writes nothing under refs/imagebump/first-seen/): minAge counts them from now",
    );
    // The report names each judged version's clock.
    let row =
        |image: &str, tag: &str, clock: &str, since: &str, recorded: Option<bool>, proposed| {
            let mut r = serde_json::json!({
                "image": format!("registry.test/team/{image}"),
                "tag": tag,
                "clock": clock,
                "since": since,
                "proposed": proposed,
            });
            if let Some(recorded) = recorded {
                r["recorded"] = serde_json::json!(recorded);
            }
            r
        };
    assert_eq!(
        dry.json()["ages"],
        serde_json::json!([
            row("api", "2.1.0", "built", "2026-11-20T00:00:00Z", None, true),
            row("app", "3.1.0", "firstSeen", T0, Some(false), false),
            row("web", "1.1.0", "firstSeen", T0, Some(false), false),
        ])
    );
    assert_eq!(s.records(), [gone]);
    assert!(forge.pulls().is_empty());

    run(T0, &[]).await;
    let held = [
        record("app", "3.1.0", T0_SECONDS),
        record("web", "1.1.0", T0_SECONDS),
    ];
    assert_eq!(s.records(), held);
    let pulls = forge.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    let body = pulls[0].body.clone().unwrap_or_default();
    assert!(
        body.contains("| `registry.test/team/api` | `2.0.0` | `2.1.0` |"),
        "{body}"
    );
    assert!(!body.contains("team/web"), "{body}");
    assert!(body.contains("(built 2026-11-20)\n"), "{body}");

    // Three days on: still younger than 7d, and nothing recorded twice.
    run("2026-12-04T00:00:00Z", &[]).await;
    assert_eq!(s.records(), held);
    let body = forge.pulls()[0].body.clone().unwrap_or_default();
    assert!(!body.contains("team/web"), "{body}");

    // Eight days on: both proposed, counted from their first sighting.
    run("2026-12-09T00:00:00Z", &[]).await;
    assert_eq!(s.records(), held);
    let pulls = forge.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    let body = pulls[0].body.clone().unwrap_or_default();
    for row in [
        "| `registry.test/team/web` | `1.0.0` | `1.1.0` |",
        "| `registry.test/team/app` | `3.0.0` | `3.1.0` |",
        "| `registry.test/team/api` | `2.0.0` | `2.1.0` |",
    ] {
        assert!(body.contains(row), "{row}\n{body}");
    }
    let age_lines: Vec<&str> = body.lines().filter(|l| l.starts_with("- Age: ")).collect();
    assert_eq!(age_lines.len(), 3, "{body}");
    let first_seen = age_lines
        .iter()
        .filter(|l| l.ends_with("(first seen 2026-12-01)"))
        .count();
    assert_eq!(first_seen, 2, "{body}");
    assert!(
        age_lines.iter().any(|l| l.ends_with("(built 2026-11-20)")),
        "{body}"
    );
}

/// `imagebump tags --repo` reads the records of the clone's origin: each candidate says
/// which clock judged it.
#[test]
fn tags_shows_the_clock_of_each_candidate() {
    let s = setup();
    let main = s.server.branch_sha("main").unwrap();
    s.server
        .git(&["update-ref", &record("web", "1.1.0", T0_SECONDS), &main]);
    let clone = tempfile::tempdir().unwrap();
    let dir = clone.path().join("gitops");
    git(
        clone.path(),
        &["clone", "--quiet", &s.server.url(), dir.to_str().unwrap()],
    );
    let tags = |image: &str, now: &str| {
        imagebump()
            .args(["tags", image, "--repo"])
            .arg(&dir)
            .arg("--config")
            .arg(s.config())
            .env("IMAGEBUMP_TEST_NOW", now)
            .code(0)
            .run()
    };
    let web = tags("registry.test/team/web:1.0.0", "2026-12-04T00:00:00Z");
    web.assert_stdout_contains("chosen:  none (nothing beats the current tag)");
    web.assert_stdout_contains("1.1.0  no    first seen 3d ago, younger than minAge 7d");
    let web = tags("registry.test/team/web:1.0.0", "2026-12-09T00:00:00Z");
    web.assert_stdout_contains("chosen:  1.1.0");
    web.assert_stdout_contains("1.1.0  yes   chosen (first seen 8d ago)");
    // Nothing recorded for app: first seen now, whatever the clock says.
    let app = tags("registry.test/team/app:3.0.0", "2026-12-09T00:00:00Z");
    app.assert_stdout_contains(
        "3.1.0  no    first seen now (no earlier record), younger than minAge 7d",
    );
    let api = tags("registry.test/team/api:2.0.0", "2026-12-09T00:00:00Z");
    api.assert_stdout_contains("2.1.0  yes   chosen (built 19d ago)");
    // JSON names the clock.
    let json = imagebump()
        .args([
            "tags",
            "registry.test/team/web:1.0.0",
            "--output",
            "json",
            "--repo",
        ])
        .arg(&dir)
        .arg("--config")
        .arg(s.config())
        .env("IMAGEBUMP_TEST_NOW", "2026-12-09T00:00:00Z")
        .code(0)
        .run()
        .json();
    let age = &json["candidates"][0]["age"];
    assert_eq!(
        *age,
        serde_json::json!({
            "clock": "firstSeen",
            "since": "2026-12-01T00:00:00Z",
            "recorded": true,
            "said": "first seen 8d ago"
        })
    );
}

/// A tag whose escape is longer than git's 255 bytes a ref component (`a` and 127 dots,
/// a valid OCI tag) is recorded under a hashed component: the pull-request run succeeds,
/// and the next run finds the record and proposes the tag once it is old enough.
#[tokio::test(flavor = "multi_thread")]
async fn a_tag_too_long_to_escape_is_recorded_hashed_and_found_again() {
    use sha2::Digest;
    let long = format!("a{}", ".".repeat(127));
    let reg = Registry::start(RegistryMode::Plain);
    for tag in ["a", long.as_str()] {
        reg.push_tag_created("team/long", tag, "0001-01-01T00:00:00Z");
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    git(dir, &["init", "--quiet", "-b", "main"]);
    std::fs::write(
        dir.join("kustomization.yaml"),
        "images:\n  - name: registry.test/team/long\n    newTag: a\n",
    )
    .unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "--quiet", "-m", "apps"]);
    let server = GitServer::daemon(dir, "gitops");
    let cfg = tempfile::tempdir().unwrap();
    let config = cfg.path().join("imagebump.yaml");
    std::fs::write(
        &config,
        format!(
            "registries:\n  - prefix: registry.test\n    url: {}\ndefaults:\n  minAge: 7d\n\
             images:\n  - match: registry.test/team/long\n    strategy: alphabetical\n",
            reg.base_url()
        ),
    )
    .unwrap();
    let forge = FakeGitHub::start().await;
    let api = forge.api_url();
    let repo = format!("{}/{}", FakeGitHub::OWNER, FakeGitHub::REPO);
    let run = |now: &str| {
        imagebump()
            .arg("run")
            .arg(server.url())
            .arg("--config")
            .arg(&config)
            .args(["--forge", "github", "--forge-url", &api])
            .args(["--forge-repo", &repo])
            .env("GITHUB_TOKEN", FakeGitHub::TOKEN)
            .env("IMAGEBUMP_TEST_NOW", now)
            .code(0)
            .run_async()
    };
    run(T0).await;
    let hex: String = sha2::Sha256::digest(long.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let records = server.git(&[
        "for-each-ref",
        "--format=%(refname)",
        "refs/imagebump/first-seen/",
    ]);
    assert_eq!(
        records.trim(),
        record("long", &format!("%sha256-{hex}"), T0_SECONDS)
    );
    assert!(forge.pulls().is_empty());

    run("2026-12-09T00:00:00Z").await;
    let pulls = forge.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    let body = pulls[0].body.clone().unwrap_or_default();
    assert!(body.contains(&format!("| `a` | `{long}` |")), "{body}");
    assert!(body.contains("(first seen 2026-12-01)"), "{body}");
}

/// A plain HTTP listener that records the head of every request and answers 404.
fn recording_listener() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/gitops.git", listener.local_addr().unwrap());
    let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = heads.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = vec![0u8; 16 * 1024];
            let n = stream.read(&mut buf).unwrap_or(0);
            seen.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&buf[..n]).to_string());
            let _ = stream.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    (url, heads)
}

/// A run on a local directory, and `tags --repo`, never send the git token to the host
/// the checkout's `origin` names, and never read records over plain http://.
#[test]
fn a_local_directory_sends_no_token_to_its_origin() {
    let s = setup();
    let (url, heads) = recording_listener();
    let clone = tempfile::tempdir().unwrap();
    let dir = clone.path().join("gitops");
    git(
        clone.path(),
        &["clone", "--quiet", &s.server.url(), dir.to_str().unwrap()],
    );
    git(&dir, &["remote", "set-url", "origin", &url]);
    let secret = "sekrit-token-59";
    imagebump()
        .args(["run", "--dry-run"])
        .arg(&dir)
        .arg("--config")
        .arg(s.config())
        .env("GITHUB_TOKEN", secret)
        .env("IMAGEBUMP_GIT_TOKEN", secret)
        .env("IMAGEBUMP_TEST_NOW", T0)
        .code(0)
        .run();
    assert!(heads.lock().unwrap().is_empty(), "{:?}", heads.lock());
    imagebump()
        .args(["tags", "registry.test/team/web:1.0.0", "--repo"])
        .arg(&dir)
        .arg("--config")
        .arg(s.config())
        .env("GITHUB_TOKEN", secret)
        .env("IMAGEBUMP_GIT_TOKEN", secret)
        .env("IMAGEBUMP_TEST_NOW", T0)
        .code(0)
        .run()
        .assert_stderr_contains(&format!(
            "the first sightings recorded on origin (refs/imagebump/first-seen/*) were not \
             read: origin {url} is plain http://, not read"
        ));
    let heads = heads.lock().unwrap().clone();
    assert!(heads.is_empty(), "{heads:?}");
}
