//! Kustomize as kustomize renders it: fixtures/overlays (a base shared by two overlays, a
//! component, an overlay chain, an `images:` alias, a `kustomization.yml`) is rendered with
//! the real kustomize (`kubectl kustomize`) before and after `run --write` against a real
//! registry. Each overlay's rendered images are exactly the ones proposed, nothing else in
//! any rendering changes, and shared files stay byte-identical.

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

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use support::cli::imagebump;
use support::{kustomize_build as render, Registry, RegistryMode};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/overlays")
}

const LEAVES: &[&str] = &[
    "shop/overlays/dev",
    "shop/overlays/prod",
    "api/overlays/staging-eu",
];

/// The rendered images, and the rendering with its image lines blanked.
fn split(rendered: &str) -> (Vec<String>, String) {
    let mut images = Vec::new();
    let mut rest = String::new();
    for line in rendered.lines() {
        match line.split_once("image: ") {
            Some((indent, image)) => {
                images.push(image.to_string());
                rest.push_str(indent);
                rest.push_str("image: -\n");
            }
            None => {
                rest.push_str(line);
                rest.push('\n');
            }
        }
    }
    images.sort();
    (images, rest)
}

fn seeded_registry() -> Registry {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("acme/shop", &["1.0.0", "1.1.0"]);
    reg.push_tags("acme/report", &["2.0.0", "2.1.0"]);
    reg.push_tags("acme/api", &["3.1.0", "3.2.0"]);
    reg.push_tags("library/busybox", &["1.36.0", "1.37.0"]);
    reg.push_tags("mirror/busybox", &["1.36.0", "1.36.1"]);
    reg
}

fn config(reg: &Registry, extra: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("imagebump.yaml");
    let mut text = String::from("registries:\n");
    for prefix in ["ghcr.io", "docker.io", "registry.example.com"] {
        text.push_str(&format!(
            "  - prefix: {prefix}\n    url: {}\n",
            reg.base_url()
        ));
    }
    text.push_str(extra);
    fs::write(&path, text).unwrap();
    let p = path.to_string_lossy().to_string();
    (dir, p)
}

fn renders(root: &Path) -> BTreeMap<&'static str, (Vec<String>, String)> {
    LEAVES
        .iter()
        .map(|leaf| (*leaf, split(&render(&root.join(leaf)))))
        .collect()
}

#[test]
fn each_overlay_moves_on_its_own_and_the_shared_base_stays() {
    let reg = seeded_registry();
    let (_c, cfg) = config(&reg, "");
    let repo = support::copy_tree(&fixture());
    let dir = repo.path().to_str().unwrap();
    let before_files = support::files(repo.path());
    let before = renders(repo.path());

    let scan = imagebump()
        .args(["scan", dir, "--config", &cfg])
        .filter_path(repo.path(), "[REPO]")
        .run();
    insta::assert_snapshot!("overlays_scan", scan.filtered_stdout());
    let dry = imagebump()
        .args(["run", dir, "--config", &cfg, "--dry-run"])
        .filter_path(repo.path(), "[REPO]")
        .run();
    insta::assert_snapshot!("overlays_dry_run", dry.filtered_stdout());
    assert_eq!(
        support::files(repo.path()),
        before_files,
        "a dry run writes nothing"
    );

    imagebump()
        .args(["run", dir, "--config", &cfg, "--write"])
        .run();
    let after = renders(repo.path());
    let images = |leaf: &str| after[leaf].0.join(" ");
    assert_eq!(
        images("shop/overlays/dev"),
        "ghcr.io/acme/report:2.1.0 ghcr.io/acme/shop:1.1.0 registry.example.com/mirror/busybox:1.36.1"
    );
    assert_eq!(
        images("shop/overlays/prod"),
        "busybox:1.37.0 ghcr.io/acme/report:2.1.0 ghcr.io/acme/shop:1.1.0"
    );
    assert_eq!(images("api/overlays/staging-eu"), "ghcr.io/acme/api:3.2.0");
    for leaf in LEAVES {
        assert_eq!(after[leaf].1, before[leaf].1, "{leaf}: only images change");
    }
    // Only the overlays (and the component dev alone uses) change; bases stay as they were.
    let after_files = support::files(repo.path());
    let changed: Vec<&String> = after_files
        .iter()
        .filter(|(rel, bytes)| before_files.get(*rel) != Some(bytes))
        .map(|(rel, _)| rel)
        .collect();
    assert_eq!(
        changed,
        [
            "api/overlays/staging/kustomization.yaml",
            "components/debug/kustomization.yaml",
            "shop/overlays/dev/kustomization.yaml",
            "shop/overlays/prod/kustomization.yml",
        ]
    );
    assert!(!repo
        .path()
        .join("shop/overlays/prod/kustomization.yaml")
        .exists());

    // A second run has nothing left to do.
    let again = imagebump()
        .args(["run", dir, "--config", &cfg, "--dry-run"])
        .run();
    assert!(
        again.stdout.contains("0 update(s) proposed"),
        "{}",
        again.stdout
    );
}

#[test]
fn shared_bases_in_place_edits_the_base_for_every_overlay() {
    let reg = seeded_registry();
    let (_c, cfg) = config(&reg, "scan:\n  sharedBases: in-place\n");
    let repo = support::copy_tree(&fixture());
    let dir = repo.path().to_str().unwrap();
    let before_files = support::files(repo.path());
    imagebump()
        .args(["run", dir, "--config", &cfg, "--write"])
        .run();
    let after = renders(repo.path());
    assert_eq!(
        after["shop/overlays/prod"].0.join(" "),
        "busybox:1.37.0 ghcr.io/acme/report:2.1.0 ghcr.io/acme/shop:1.1.0"
    );
    let base = "shop/base/deployment.yaml";
    let text = String::from_utf8(support::files(repo.path())[base].clone()).unwrap();
    let old = String::from_utf8(before_files[base].clone()).unwrap();
    assert_eq!(
        text,
        old.replace("ghcr.io/acme/shop:1.0.0", "ghcr.io/acme/shop:1.1.0")
            .replace("busybox:1.36.0", "busybox:1.37.0")
    );
    assert_eq!(
        support::files(repo.path())["shop/overlays/prod/kustomization.yml"],
        before_files["shop/overlays/prod/kustomization.yml"]
    );
}

/// The layout of the original problem: a base of plain Deployments, an overlay per
/// environment, an Argo CD Application per overlay; argocd-image-updater manages dev.
/// dev's new version goes where argocd-image-updater writes it (its overlay's
/// kustomization), prod gets an entry of its own, and the base stays as it is.
#[test]
fn argocd_apps_over_overlays_of_a_shared_base() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("acme/web", &["1.0.0", "1.1.0"]);
    let (_c, cfg) = config(&reg, "");
    let deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n        - name: web\n          image: ghcr.io/acme/web:1.0.0\n";
    let app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web-dev\n  namespace: argocd\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: web=ghcr.io/acme/web\n    argocd-image-updater.argoproj.io/write-back-method: git\n    argocd-image-updater.argoproj.io/write-back-target: kustomization\nspec:\n  project: default\n  source:\n    repoURL: https://git.example.com/gitops.git\n    path: web/overlays/dev\n  destination: {server: https://kubernetes.default.svc, namespace: dev}\n";
    let repo = support::tree(&[
        ("web/base/deployment.yaml", deploy),
        (
            "web/base/kustomization.yaml",
            "resources: [deployment.yaml]\n",
        ),
        (
            "web/overlays/dev/kustomization.yaml",
            "resources:\n  - ../../base\n",
        ),
        (
            "web/overlays/prod/kustomization.yaml",
            "resources:\n  - ../../base\n",
        ),
        ("argocd/web-dev.yaml", app),
    ]);
    let dir = repo.path().to_str().unwrap();
    let base_before = fs::read(repo.path().join("web/base/deployment.yaml")).unwrap();
    imagebump()
        .args(["run", dir, "--config", &cfg, "--write"])
        .run();
    for env in ["dev", "prod"] {
        let rendered = render(&repo.path().join(format!("web/overlays/{env}")));
        assert_eq!(split(&rendered).0, ["ghcr.io/acme/web:1.1.0"], "{env}");
    }
    assert_eq!(
        fs::read(repo.path().join("web/base/deployment.yaml")).unwrap(),
        base_before
    );
    let again = imagebump()
        .args(["run", dir, "--config", &cfg, "--dry-run"])
        .run();
    assert!(
        again.stdout.contains("0 update(s) proposed"),
        "{}",
        again.stdout
    );
}
