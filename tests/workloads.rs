//! Plain Kubernetes manifests (fixtures/homelab: an Argo CD app of apps whose apps are
//! directories of Deployments, StatefulSets, CronJobs, a custom resource, a marked ConfigMap
//! value, templated images and a CRD bundle) against a real registry: `scan` lists every
//! image, and `run --write` edits each image line in place and nothing else.

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
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/homelab")
}

fn setup() -> (Registry, tempfile::TempDir, String) {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("jellyfin/jellyfin", &["10.9.0", "10.9.11", "10.10.0"]);
    reg.push_tags(
        "library/postgres",
        &["16.2-alpine", "16.4-alpine", "17.0-alpine", "17.0"],
    );
    reg.push_tags("library/busybox", &["1.36.0", "1.37.0"]);
    reg.push_tags("linuxserver/sonarr", &["4.0.0", "4.0.10"]);
    reg.push_tags("prometheus/prometheus", &["v2.54.1", "v2.55.0", "v3.0.0"]);
    reg.push_tags("restic/restic", &["0.16.0", "0.17.0"]);
    reg.push_tags("bitnami/kubectl", &["1.31.0", "1.31.2"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("imagebump.yaml");
    let mut text = String::from("registries:\n");
    for prefix in ["docker.io", "lscr.io", "quay.io"] {
        text.push_str(&format!(
            "  - prefix: {prefix}\n    url: {}\n",
            reg.base_url()
        ));
    }
    fs::write(&path, text).unwrap();
    let cfg = path.to_string_lossy().to_string();
    (reg, dir, cfg)
}

#[test]
fn every_manifest_image_is_found_and_edited_in_place() {
    let (_reg, _c, cfg) = setup();
    let repo = support::copy_tree(&fixture());
    let dir = repo.path().to_str().unwrap();
    let before = support::texts(repo.path());

    let scan = imagebump().args(["scan", dir, "--config", &cfg]).run();
    insta::assert_snapshot!("homelab_scan", scan.filtered_stdout());
    let dry = imagebump()
        .args(["run", dir, "--config", &cfg, "--dry-run"])
        .run();
    insta::assert_snapshot!("homelab_dry_run", dry.filtered_stdout());

    imagebump()
        .args(["run", dir, "--config", &cfg, "--write"])
        .run();
    let after = support::texts(repo.path());
    let moved = [
        (
            "apps/media/jellyfin.yaml",
            "jellyfin/jellyfin:10.9.0",
            "jellyfin/jellyfin:10.10.0",
        ),
        (
            "apps/media/jellyfin.yaml",
            "'postgres:16.2-alpine'",
            "'postgres:17.0-alpine'",
        ),
        ("apps/media/sonarr.yaml", "busybox:1.36.0", "busybox:1.37.0"),
        ("apps/media/sonarr.yaml", "sonarr:4.0.0", "sonarr:4.0.10"),
        (
            "apps/monitoring/prometheus.yaml",
            "prometheus:v2.54.1",
            "prometheus:v3.0.0",
        ),
        (
            "apps/tools/configmap.yaml",
            "kubectl:1.31.0",
            "kubectl:1.31.2",
        ),
    ];
    let mut expected = before.clone();
    for (file, from, to) in moved {
        let text = expected.get_mut(file).unwrap();
        assert!(text.contains(from), "{file}: {from}");
        *text = text.replacen(from, to, 1);
    }
    for (file, text) in &after {
        assert_eq!(text, &expected[file], "{file}");
    }
}
