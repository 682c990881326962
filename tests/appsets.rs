//! Argo CD ApplicationSets kept in git (fixtures/appsets): the Applications their list, git
//! directory, git files and matrix generators make are read like Applications kept in the repository,
//! and one run against a real registry writes exactly the files in fixtures/appsets/expected
//! (list elements, values in the files a git files generator reads, a template's literal
//! values, argocd-image-updater write-back to each
//! generated app's kustomization, rendered by the real kustomize); generators that need a
//! cluster are a note, never an error.

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

use std::path::{Path, PathBuf};

use support::cli::imagebump;
use support::{Registry, RegistryMode};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/appsets")
}

fn registry() -> (Registry, tempfile::TempDir, String) {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.4.0", "1.4.2", "1.5.0", "2.0.0-rc.1"]);
    reg.push_tags("team/api", &["2.4.1", "2.5.0"]);
    reg.push_tags("team/legacy", &["1.0.0", "1.1.0"]);
    reg.push_tags("team/worker", &["0.9.1", "0.9.4", "0.10.0", "1.0.0"]);
    reg.push_tags("team/metrics-agent", &["2.1.0", "2.2.0", "3.0.0"]);
    reg.push_tags("team/batch", &["5.0.0", "5.1.0"]);
    reg.push_tags("team/payments", &["1.7.2", "1.8.0", "1.8.3", "2.0.0"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("imagebump.yaml");
    // The fixture's chart repositories (charts.example.com) do not exist: this file is
    // about where generated apps' values are written.
    let config = format!(
        "registries:\n  - prefix: registry.test\n    url: {}\nhelm:\n  charts: false\n",
        reg.base_url()
    );
    std::fs::write(&path, config).unwrap();
    let p = path.to_string_lossy().to_string();
    (reg, dir, p)
}

#[test]
fn generated_applications_are_updated_where_their_values_are_written() {
    let (_reg, _c, cfg) = registry();
    let repo = support::copy_tree(&fixture().join("repo"));
    let dir = repo.path().to_str().unwrap();
    let before = support::files(repo.path());

    let dry = imagebump()
        .args(["run", dir, "--config", &cfg, "--dry-run"])
        .run();
    assert_eq!(
        support::files(repo.path()),
        before,
        "a dry run writes nothing"
    );
    assert!(
        dry.stderr
            .contains("ApplicationSet guestbook: generator 0: `clusters` needs a cluster"),
        "{}",
        dry.stderr
    );

    imagebump()
        .args(["run", dir, "--config", &cfg, "--write"])
        .run();
    support::assert_tree(repo.path(), &before, &fixture().join("expected"));
    // What Argo CD deploys for a generated app after the write-back.
    let web = support::kustomize_build(&repo.path().join("apps/web"));
    assert!(web.contains("image: registry.test/team/web:1.5.0"), "{web}");

    support::assert_nothing_left(dir, &cfg);
}

#[test]
fn scan_lists_the_generated_applications() {
    let run = imagebump()
        .args([
            "scan",
            "--offline",
            fixture().join("repo").to_str().unwrap(),
        ])
        .run();
    for app in [
        "app api",
        "app web",
        "app worker-dev",
        "app worker-prod",
        "app metrics-eu",
        "app metrics-us",
        "app batch-eu",
    ] {
        assert!(
            run.stdout.contains(&format!("{app}\n")),
            "{app}:\n{}",
            run.stdout
        );
    }
    // Excluded by the generator (`exclude: true`): not an app.
    assert!(!run.stdout.contains("app legacy"), "{}", run.stdout);
    // The prod element is pinned by its marker; the batch values are one reference
    // for both clusters, written once in the template.
    assert!(
        run.stdout
            .contains("argocd/worker.yaml:15  registry.test/team/worker  0.9.1    pin (marker)"),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout.matches("argocd/platform.yaml:66").count(),
        1,
        "{}",
        run.stdout
    );
}

/// Values a template builds (a directory's name, two parameters, a function) cannot be
/// edited without changing what the template means: a note each, nothing written, exit 0.
#[test]
fn values_the_template_builds_are_noted_and_left_alone() {
    let (_reg, _c, cfg) = registry();
    let set = "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata:\n  name: tools\n  namespace: argocd\nspec:\n  goTemplate: true\n  generators:\n  - list:\n      elements:\n      - name: a\n        major: \"1\"\n        minor: \"4\"\n  - list:\n      elements:\n      - name: b\n  template:\n    metadata:\n      name: '{{ .name }}'\n    spec:\n      source:\n        repoURL: https://charts.example.com\n        chart: web\n        targetRevision: 1.0.0\n        helm:\n          parameters:\n          - name: image.repository\n            value: registry.test/team/web\n          - name: image.tag\n            value: '{{ .major }}.{{ .minor }}.0'\n---\napiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata:\n  name: fancy\n  namespace: argocd\nspec:\n  goTemplate: true\n  generators:\n  - list:\n      elements:\n      - name: c\n  template:\n    metadata:\n      name: '{{ .name | upper }}'\n    spec:\n      source:\n        repoURL: https://charts.example.com\n        chart: web\n        targetRevision: 1.0.0\n";
    let tree = support::tree(&[("argocd/tools.yaml", set)]);
    let before = support::files(tree.path());
    let run = imagebump()
        .args([
            "run",
            tree.path().to_str().unwrap(),
            "--config",
            &cfg,
            "--write",
        ])
        .run();
    assert_eq!(support::files(tree.path()), before, "{run}");
    assert!(
        run.stderr
            .contains("`{{ .major }}.{{ .minor }}.0` is built from several template parameters"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("ApplicationSet fancy: a generated Application: the template action {{ .name | upper }} calls functions"),
        "{}",
        run.stderr
    );
}
