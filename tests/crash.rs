//! Crash safety: `kill -9` at moments spread over a pull-request run (cloning, asking the
//! registry, pushing, calling the forge), then a run to completion. Whatever the moment,
//! the end state is the one an uninterrupted run gives: one pull request per change set,
//! one commit per branch on the untouched base, no stray branch. Real git remote, real
//! registry, the GitHub fake.

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

use std::process::{Command, Stdio};
use std::time::Duration;

use support::cli::imagebump;
use support::github::FakeGitHub;
use support::TwoApps;

const TOKEN: &str = FakeGitHub::TOKEN;
const WEB: &str = "imagebump/apps-web";
const API: &str = "imagebump/apps-api-values.yaml";

struct World {
    apps: TwoApps,
    forge: FakeGitHub,
    home: tempfile::TempDir,
    /// The killed runs' `TMPDIR`: a run killed with SIGKILL cannot remove its clone.
    tmp: tempfile::TempDir,
}

impl World {
    async fn start() -> World {
        World {
            apps: TwoApps::start(TOKEN, ""),
            forge: FakeGitHub::start().await,
            home: tempfile::tempdir().unwrap(),
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    fn args(&self) -> Vec<String> {
        vec![
            "run".into(),
            self.apps.server.url(),
            "--config".into(),
            self.apps.config().display().to_string(),
            "--forge".into(),
            "github".into(),
            "--forge-url".into(),
            self.forge.api_url(),
            "--forge-repo".into(),
            format!("{}/{}", FakeGitHub::OWNER, FakeGitHub::REPO),
        ]
    }

    /// A run killed with SIGKILL after `after` (or ending by itself before).
    async fn killed_after(&self, after: Duration) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_imagebump"));
        cmd.args(self.args())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("TMPDIR", self.tmp.path())
            .env("DOCKER_CONFIG", self.home.path())
            .env("GITHUB_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("start imagebump");
        tokio::time::sleep(after).await;
        let _ = child.kill();
        let _ = tokio::task::spawn_blocking(move || child.wait()).await;
    }

    /// A run to the end, which must succeed.
    async fn complete(&self) {
        imagebump()
            .args(self.args())
            .env("GITHUB_TOKEN", TOKEN)
            .run_async()
            .await;
    }

    /// The state an uninterrupted run leaves: the base untouched, exactly imagebump's two
    /// branches, each one commit on the base proposing `web` and `api`, and one open pull
    /// request per branch.
    fn assert_converged(&self, base: &str, web: &str, context: &str) {
        let server = &self.apps.server;
        assert_eq!(
            server.branch_sha("main").as_deref(),
            Some(base),
            "{context}"
        );
        let mut names: Vec<String> = server.branches().into_iter().map(|(b, _)| b).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "imagebump/apps-api-values.yaml",
                "imagebump/apps-web",
                "main"
            ],
            "{context}"
        );
        for branch in [WEB, API] {
            let parents = server.log(branch, "%P");
            assert_eq!(
                parents.first().map(String::as_str),
                Some(base),
                "{context}: {branch}"
            );
        }
        assert_eq!(
            self.apps
                .branch_file(WEB, "apps/web/kustomization.yaml")
                .unwrap(),
            format!("images:\n  - name: registry.test/team/web\n    newTag: {web} # web\n"),
            "{context}"
        );
        let pulls = self.forge.pulls();
        let open: Vec<_> = pulls.iter().filter(|p| p.state == "open").collect();
        assert_eq!(open.len(), 2, "{context}: {pulls:#?}");
        let web_pull = open
            .iter()
            .find(|p| p.branch == WEB)
            .expect("web's pull request");
        assert_eq!(
            web_pull.title,
            format!("Update registry.test/team/web to {web}"),
            "{context}"
        );
        assert!(open.iter().any(|p| p.branch == API), "{context}");
        assert_eq!(
            pulls.len(),
            2,
            "{context}: no pull request opened twice: {pulls:#?}"
        );
    }
}

/// Kill moments spread over a run (a fixed pseudo-random sequence, so a failure can be
/// replayed), one in each of `n` slices of `window_ms`. A debug build clones, lists tags,
/// pushes and opens within about 0.8 s: moments before the push, between the push and the
/// forge calls, and after them all occur.
fn moments(seed: u64, n: usize, window_ms: u64) -> Vec<Duration> {
    let mut x = seed;
    (0..n)
        .map(|i| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let slice = window_ms / n as u64;
            Duration::from_millis(i as u64 * slice + (x >> 33) % slice)
        })
        .collect()
}

/// Killed while opening: every moment on a fresh repository, then a run to the end.
#[tokio::test(flavor = "multi_thread")]
async fn kill_9_while_opening_then_a_rerun_converges() {
    for at in moments(7, 5, 900) {
        let world = World::start().await;
        let base = world.apps.server.branch_sha("main").unwrap();
        world.killed_after(at).await;
        world.complete().await;
        world.assert_converged(
            &base,
            "1.1.0",
            &format!("killed after {at:?} while opening"),
        );
        // A rerun with nothing to do changes nothing.
        world.forge.clear_calls();
        world.complete().await;
        let writes: Vec<String> = world.forge.write_calls().iter().map(|c| c.line()).collect();
        assert_eq!(writes, Vec::<String>::new(), "killed after {at:?}");
    }
}

/// Killed while a newer version moves a branch and its pull request on.
#[tokio::test(flavor = "multi_thread")]
async fn kill_9_while_updating_then_a_rerun_converges() {
    for at in moments(11, 6, 1200) {
        let world = World::start().await;
        let base = world.apps.server.branch_sha("main").unwrap();
        world.complete().await;
        world.apps.reg.push_tags("team/web", &["1.2.0"]);
        world.killed_after(at).await;
        world.complete().await;
        world.assert_converged(
            &base,
            "1.2.0",
            &format!("killed after {at:?} while updating"),
        );
    }
}
