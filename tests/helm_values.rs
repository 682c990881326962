//! Helm values as upstream charts write them (fixtures/helm): every image key is found,
//! values that stand for an image are listed as unmanaged and are no error, images inside
//! Argo CD `helm.values` strings are edited inside the string, and a run against a real
//! registry proposes exactly the expected diffs.

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

use std::fs;
use std::path::{Path, PathBuf};

use support::cli::imagebump;
use support::{Registry, RegistryMode};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/helm")
}

/// The keys of the fixture's charts that no name gives away (see its README). The
/// fixture's Argo CD apps install upstream charts from repositories this machine cannot
/// reach, and this file is about values: chart support is off.
const HELM_KEYS: &str = "helm:
  charts: false
  imageKeys:
    - repository: gateway.container.repo
      tag: gateway.container.version
    - image: sidecars[0].container
    - repository: image
      tag: imageTag
";

/// A registry holding the tags of fixtures/helm/registry.txt.
fn seeded_registry() -> Registry {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_listing(&fixture().join("registry.txt"));
    reg
}

/// `imagebump.yaml` with `extra`, in a directory of its own; returns its path.
fn config(extra: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("imagebump.yaml");
    fs::write(&path, extra).unwrap();
    let p = path.to_string_lossy().to_string();
    (dir, p)
}

/// Bitnami's tags (`7.4.1-debian-12-r2`, `12-debian-12-r33`) as their users configure them.
const BITNAMI: &str = r#"images:
  - match: docker.io/bitnami/os-shell
    strategy: regex
    pattern: '^12-debian-12-r(?P<num>[0-9]+)$'
  - match: docker.io/bitnami/*
    strategy: regex
    pattern: '^(?P<version>[0-9]+\.[0-9]+\.[0-9]+)-debian-12-r[0-9]+$'
"#;

/// Every registry of the fixture pointed at `reg`, Bitnami's tags, and the Helm keys.
fn run_config(reg: &Registry) -> (tempfile::TempDir, String) {
    let mut text = String::from(BITNAMI);
    text.push_str("registries:\n");
    for prefix in ["docker.io", "quay.io", "ghcr.io", "docker.elastic.co"] {
        text.push_str(&format!(
            "  - prefix: {prefix}\n    url: {}\n",
            reg.base_url()
        ));
    }
    text.push_str(HELM_KEYS);
    config(&text)
}

#[test]
fn scan_lists_every_image_of_upstream_charts_and_exits_0() {
    let (_c, cfg) = config(HELM_KEYS);
    let run = imagebump()
        .args(["scan", fixture().to_str().unwrap(), "--config", &cfg])
        .run();
    assert_eq!(run.stderr, "", "no error, no note: {run}");
    insta::assert_snapshot!("scan", run.filtered_stdout());
}

#[test]
fn without_configured_keys_the_charts_still_scan_without_error() {
    let (_c, cfg) = config("helm:\n  charts: false\n");
    let run = imagebump()
        .args(["scan", fixture().to_str().unwrap(), "--output", "json"])
        .args(["--config", &cfg])
        .run();
    let json = run.json();
    assert_eq!(json["errors"], serde_json::json!([]));
    assert_eq!(json["notes"], serde_json::json!([]));
    let names: Vec<&str> = json["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"ghcr.io/acme/gateway"), "{names:?}");
    // The Elasticsearch image is listed once, as a string without a tag.
    let elastic: Vec<&serde_json::Value> = json["references"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["name"] == "docker.elastic.co/elasticsearch/elasticsearch")
        .collect();
    assert_eq!(elastic.len(), 1);
    assert_eq!(elastic[0]["reason"], "no tag (the runtime pulls latest)");
}

#[test]
fn dry_run_against_a_real_registry_proposes_the_expected_diffs() {
    let reg = seeded_registry();
    let (_c, cfg) = run_config(&reg);
    let repo = support::copy_tree(&fixture());
    let before = support::texts(repo.path());
    let run = imagebump()
        .args([
            "run",
            "--dry-run",
            repo.path().to_str().unwrap(),
            "--config",
            &cfg,
        ])
        .filter_path(repo.path(), "[REPO]")
        .run();
    assert_eq!(
        support::texts(repo.path()),
        before,
        "a dry run writes nothing"
    );
    assert_eq!(run.filtered_stderr(), "", "{run}");
    insta::assert_snapshot!("dry_run", run.filtered_stdout());
}

#[test]
fn write_edits_inside_helm_values_strings_byte_for_byte_and_then_nothing_is_left() {
    let reg = seeded_registry();
    let (_c, cfg) = run_config(&reg);
    let repo = support::copy_tree(&fixture());
    let dir = repo.path().to_str().unwrap();
    let before = support::texts(repo.path());
    imagebump()
        .args(["run", "--write", dir, "--config", &cfg])
        .run();
    let after = support::texts(repo.path());
    // The Application file: exactly the values inside the strings changed.
    let expected = before["apps/platform.yaml"]
        .replace(
            "tag: 7.2.4-debian-12-r9 # until",
            "tag: 7.4.2-debian-12-r0 # until",
        )
        .replace(
            "tag: \"1.58.0-debian-12-r4\"",
            "tag: \"1.67.0-debian-12-r0\"",
        )
        .replace("tag: '1.36.0'", "tag: '1.37.0'")
        .replace("image: busybox:1.36.0", "image: busybox:1.37.0");
    assert_eq!(after["apps/platform.yaml"], expected);
    // Nothing is proposed again.
    let again = imagebump()
        .args([
            "run",
            "--dry-run",
            dir,
            "--config",
            &cfg,
            "--output",
            "json",
        ])
        .run();
    assert_eq!(again.json()["updates"], serde_json::json!([]), "{again}");
}

#[test]
fn image_keys_are_checked_when_the_configuration_is_loaded() {
    let (_c, cfg) = config("helm:\n  imageKeys:\n    - repository: a.repo\n      tagg: a.tag\n");
    let run = imagebump()
        .args(["config", "check", "--config", &cfg])
        .filter_path(Path::new(&cfg), "imagebump.yaml")
        .code(2)
        .run();
    assert!(
        run.filtered_stderr().contains("imagebump.yaml:3:5: helm.imageKeys: an image key: {image: PATH}, or {repository: PATH, tag: PATH} with optional registry and digest paths, each PATH keys separated by `.` with `key[N]` for a list item"),
        "{run}"
    );
    let (_c, cfg) = config("helm:\n  imageKeys:\n    - image: sidecars[x].image\n");
    let run = imagebump()
        .args(["scan", fixture().to_str().unwrap(), "--config", &cfg])
        .filter_path(Path::new(&cfg), "imagebump.yaml")
        .code(2)
        .run();
    assert!(
        run.filtered_stderr()
            .contains("imagebump.yaml:3:5: helm.imageKeys: an image key: "),
        "{run}"
    );
}

/// Values shared through YAML anchors, aliases and merge keys are read through them and
/// edited once, at the anchor: every reader gets the new version, and the next run finds
/// nothing left.
#[test]
fn anchored_values_are_read_through_aliases_and_merge_keys_and_edited_at_the_anchor() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.0.0", "1.1.0"]);
    let (_c, cfg) = config("");
    let values = "common: &img\n  repository: registry.test/team/web\n  tag: &ver 1.0.0\nweb:\n  image: *img\nworker:\n  image:\n    <<: *img\n    pullPolicy: Always\nsidecar:\n  image:\n    repository: registry.test/team/web\n    tag: *ver\n";
    let tree = support::make_worktree(&[
        (
            "chart/Chart.yaml",
            "apiVersion: v2\nname: web\nversion: 0.1.0\n",
        ),
        ("chart/values.yaml", values),
    ]);
    let dir = tree.path().to_str().unwrap();
    let config_arg = format!(
        "registries:\n  - prefix: registry.test\n    url: {}\n",
        reg.base_url()
    );
    std::fs::write(&cfg, config_arg).unwrap();
    let run = imagebump()
        .args(["run", "--write", dir, "--config", &cfg])
        .run();
    let written = std::fs::read_to_string(tree.path().join("chart/values.yaml")).unwrap();
    assert_eq!(written, values.replace("&ver 1.0.0", "&ver 1.1.0"), "{run}");
    let again = imagebump()
        .args([
            "run",
            "--dry-run",
            dir,
            "--config",
            &cfg,
            "--output",
            "json",
        ])
        .run();
    assert_eq!(again.json()["updates"], serde_json::json!([]), "{again}");
}
