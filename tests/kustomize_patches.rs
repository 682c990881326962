//! Kustomize patches that set an image, and `$patch: delete`, checked by the render oracle
//! of tests/support/oracle.rs (each update changes its leaf's render exactly as reported,
//! no edit is dead, a second run proposes nothing).

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

#[path = "support/oracle.rs"]
mod oracle;
mod support;

use std::fs;
use std::path::Path;

use oracle::{deployment, update, version_patch, Oracle, Update, IMAGE};
use serde_json::Value;
use support::cli::imagebump;
use support::{Registry, RegistryMode};

fn base() -> Vec<(&'static str, String)> {
    vec![
        (
            "base/deployment.yaml",
            deployment("app", &format!("{IMAGE}:1.0")),
        ),
        (
            "base/kustomization.yaml",
            "resources: [deployment.yaml]\n".into(),
        ),
    ]
}

fn env(files: &mut Vec<(&'static str, String)>, dir: &'static str, patches: &str, version: &str) {
    let k: &'static str = Box::leak(format!("{dir}/kustomization.yaml").into_boxed_str());
    let v: &'static str = Box::leak(format!("{dir}/version.yaml").into_boxed_str());
    files.push((k, format!("resources: [../../base]\n{patches}")));
    files.push((v, version_patch("app", &format!("{IMAGE}:{version}"))));
}

/// The environment-promotion layout: each environment's `version.yaml` is what it renders,
/// so it is what moves; the base, shared and overridden everywhere, stays.
#[test]
fn environment_promotion_edits_each_version_patch() {
    let mut files = base();
    env(
        &mut files,
        "envs/dev",
        "patches:\n  - path: version.yaml\n",
        "3.0",
    );
    env(
        &mut files,
        "envs/staging",
        "patchesStrategicMerge:\n  - version.yaml\n",
        "2.0",
    );
    env(
        &mut files,
        "envs/prod",
        "patches:\n  - path: version.yaml\n    target:\n      kind: Deployment\n      name: app\n",
        "3.0",
    );
    let oracle = Oracle::new(&files, &["envs/dev", "envs/staging", "envs/prod"]);
    let updates = oracle.check();
    assert_eq!(
        updates,
        [
            update("envs/dev/version.yaml", "envs/dev", "3.0", "4.0"),
            update("envs/prod/version.yaml", "envs/prod", "3.0", "4.0"),
            update("envs/staging/version.yaml", "envs/staging", "2.0", "4.0"),
        ]
    );
    let k = fs::read_to_string(oracle.repo.path().join("envs/prod/kustomization.yaml")).unwrap();
    assert!(!k.contains("images:"), "{k}");
}

/// The base's line is reported as overridden by the patch the render reads.
#[test]
fn the_base_is_overridden_by_the_patch() {
    let mut files = base();
    env(
        &mut files,
        "envs/prod",
        "patches:\n  - path: version.yaml\n",
        "3.0",
    );
    let oracle = Oracle::new(&files, &["envs/prod"]);
    let out = imagebump()
        .args([
            "scan",
            oracle.dir(),
            "--config",
            &oracle.cfg,
            "--output",
            "json",
        ])
        .run();
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let refs = report["references"].as_array().unwrap();
    let base = refs
        .iter()
        .find(|r| r["file"] == "base/deployment.yaml")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(
        base["reason"].as_str(),
        Some("overridden by envs/prod/version.yaml:10"),
        "{base:#}"
    );
}

/// A base → variants → environments layout: a variant's patch shared by two environments
/// gets an `images:` entry in each of them; an environment's own patch is edited, and the
/// variant's patch it overrides stays.
#[test]
fn a_variants_level_between_base_and_environments() {
    let mut files = base();
    files.push((
        "variants/eu/kustomization.yaml",
        "resources: [../../base]\npatches:\n  - path: version.yaml\n".into(),
    ));
    files.push((
        "variants/eu/version.yaml",
        version_patch("app", &format!("{IMAGE}:2.0")),
    ));
    files.push((
        "envs/staging/kustomization.yaml",
        "resources: [../../variants/eu]\n".into(),
    ));
    files.push((
        "envs/qa/kustomization.yaml",
        "resources: [../../variants/eu]\n".into(),
    ));
    files.push((
        "envs/prod/kustomization.yaml",
        "resources: [../../variants/eu]\npatches:\n  - path: version.yaml\n".into(),
    ));
    files.push((
        "envs/prod/version.yaml",
        version_patch("app", &format!("{IMAGE}:3.0")),
    ));
    let oracle = Oracle::new(&files, &["envs/staging", "envs/qa", "envs/prod"]);
    let updates = oracle.check();
    assert_eq!(
        updates,
        [
            update("envs/prod/version.yaml", "envs/prod", "3.0", "4.0"),
            update("envs/qa/kustomization.yaml", "envs/qa", "2.0", "4.0"),
            update(
                "envs/staging/kustomization.yaml",
                "envs/staging",
                "2.0",
                "4.0"
            ),
        ]
    );
}

/// Inline patches (`patches[].patch`, an inline `patchesStrategicMerge:` item) override
/// the base like patch files do, and are edited inside their string.
#[test]
fn inline_patches() {
    let mut files = base();
    let inline = |v: &str| {
        version_patch("app", &format!("{IMAGE}:{v}"))
            .lines()
            .map(|l| format!("      {l}\n"))
            .collect::<String>()
    };
    files.push((
        "envs/dev/kustomization.yaml",
        format!(
            "resources: [../../base]\npatches:\n  - patch: |-\n{}",
            inline("2.0")
        ),
    ));
    files.push((
        "envs/prod/kustomization.yaml",
        format!(
            "resources: [../../base]\npatchesStrategicMerge:\n  - |-\n{}",
            inline("3.0").replace("      ", "    ")
        ),
    ));
    let oracle = Oracle::new(&files, &["envs/dev", "envs/prod"]);
    let updates = oracle.check();
    assert_eq!(
        updates,
        [
            update("envs/dev/kustomization.yaml", "envs/dev", "2.0", "4.0"),
            update("envs/prod/kustomization.yaml", "envs/prod", "3.0", "4.0"),
        ]
    );
}

/// A Deployment an overlay deletes gets no `images:` entry there; the overlay that keeps
/// it does.
#[test]
fn a_deleted_resource_gets_no_entry() {
    let mut files = base();
    files[0].1.push_str(&format!(
        "---\n{}",
        deployment("web", "registry.example.com/team/web:1.0")
    ));
    files.push((
        "envs/dev/kustomization.yaml",
        "resources: [../../base]\npatches:\n  - path: delete.yaml\n".into(),
    ));
    files.push((
        "envs/dev/delete.yaml",
        "$patch: delete\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n".into(),
    ));
    files.push((
        "envs/prod/kustomization.yaml",
        "resources: [../../base]\n".into(),
    ));
    let oracle = Oracle::new(&files, &["envs/dev", "envs/prod"]);
    let updates = oracle.check();
    let web = |unit: &str| Update {
        file: format!("{unit}/kustomization.yaml"),
        unit: unit.into(),
        image: "registry.example.com/team/web".into(),
        from: "1.0".into(),
        to: "2.0".into(),
    };
    assert_eq!(
        updates,
        [
            web("envs/dev"),
            update("envs/prod/kustomization.yaml", "envs/prod", "1.0", "4.0"),
            web("envs/prod"),
        ]
    );
    // Every overlay deletes it: nothing is proposed for it, and the base says why.
    let oracle = Oracle::new(&files[..4], &["envs/dev"]);
    let out = imagebump()
        .args([
            "scan",
            oracle.dir(),
            "--config",
            &oracle.cfg,
            "--output",
            "json",
        ])
        .run();
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let app = (report["references"].as_array().unwrap().iter())
        .find(|r| r["image"] == IMAGE)
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(
        app["reason"].as_str(),
        Some("deleted by envs/dev/delete.yaml:1 ($patch: delete)")
    );
}

/// The kustomize fixture of tests/kustomize.rs (a shared base, a component, an overlay
/// chain, an `images:` alias, a `kustomization.yml`) holds to the oracle too.
#[test]
fn the_overlays_fixture_holds_to_the_oracle() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("acme/shop", &["1.0.0", "1.1.0"]);
    reg.push_tags("acme/report", &["2.0.0", "2.1.0"]);
    reg.push_tags("acme/api", &["3.1.0", "3.2.0"]);
    reg.push_tags("library/busybox", &["1.36.0", "1.37.0"]);
    reg.push_tags("mirror/busybox", &["1.36.0", "1.36.1"]);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/overlays");
    let leaves = [
        "shop/overlays/dev",
        "shop/overlays/prod",
        "api/overlays/staging-eu",
    ];
    let mut oracle = Oracle::over(reg, support::copy_tree(&fixture), &leaves);
    (oracle.renders_in).insert("api/overlays/staging", "api/overlays/staging-eu");
    (oracle.renders_in).insert("components/debug", "shop/overlays/dev");
    assert_eq!(oracle.check().len(), 7);
}

/// A base's `images:` entry sets the version, and each environment's patch sets it again:
/// the patches are what the render reads, and the base's entry is left alone.
#[test]
fn a_patch_over_a_base_entry() {
    let mut files = base();
    files[1]
        .1
        .push_str("images:\n  - name: registry.example.com/team/app\n    newTag: \"2.0\"\n");
    env(
        &mut files,
        "envs/dev",
        "patches:\n  - path: version.yaml\n",
        "3.0",
    );
    env(
        &mut files,
        "envs/prod",
        "patches:\n  - path: version.yaml\n",
        "1.0",
    );
    let oracle = Oracle::new(&files, &["envs/dev", "envs/prod"]);
    assert_eq!(
        oracle.check(),
        [
            update("envs/dev/version.yaml", "envs/dev", "3.0", "4.0"),
            update("envs/prod/version.yaml", "envs/prod", "1.0", "4.0"),
        ]
    );
}

/// A patch sets one container's image: the base's other container still moves, with an
/// `images:` entry in each environment.
#[test]
fn a_patch_leaves_the_other_containers_alone() {
    let mut files = base();
    files[0]
        .1
        .push_str("        - name: sidecar\n          image: registry.example.com/team/web:1.0\n");
    env(
        &mut files,
        "envs/dev",
        "patches:\n  - path: version.yaml\n",
        "3.0",
    );
    env(
        &mut files,
        "envs/prod",
        "patches:\n  - path: version.yaml\n",
        "2.0",
    );
    let oracle = Oracle::new(&files, &["envs/dev", "envs/prod"]);
    let web = |unit: &str| Update {
        file: format!("{unit}/kustomization.yaml"),
        unit: unit.into(),
        image: "registry.example.com/team/web".into(),
        from: "1.0".into(),
        to: "2.0".into(),
    };
    assert_eq!(
        oracle.check(),
        [
            web("envs/dev"),
            update("envs/dev/version.yaml", "envs/dev", "3.0", "4.0"),
            web("envs/prod"),
            update("envs/prod/version.yaml", "envs/prod", "2.0", "4.0"),
        ]
    );
}

/// A component's patch applies to the overlay that uses it: it is what that overlay
/// renders, so it is edited; the overlay without the component gets an `images:` entry.
#[test]
fn a_component_patch() {
    let mut files = base();
    files.push((
        "components/pin/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n  - path: version.yaml\n".into(),
    ));
    files.push((
        "components/pin/version.yaml",
        version_patch("app", &format!("{IMAGE}:2.0")),
    ));
    files.push((
        "envs/dev/kustomization.yaml",
        "resources: [../../base]\ncomponents: [../../components/pin]\n".into(),
    ));
    files.push((
        "envs/prod/kustomization.yaml",
        "resources: [../../base]\n".into(),
    ));
    let oracle = Oracle::new(&files, &["envs/dev", "envs/prod"]);
    assert_eq!(
        oracle.check(),
        [
            update("components/pin/version.yaml", "envs/dev", "2.0", "4.0"),
            update("envs/prod/kustomization.yaml", "envs/prod", "1.0", "4.0"),
        ]
    );
}

/// Within one kustomization, its `images:` entry applies after its patches, and a later
/// patch after an earlier one: the entry (dev) and the later patch (prod) are what the
/// render reads, and nothing else is edited.
#[test]
fn the_last_writer_in_one_kustomization() {
    let mut files = base();
    env(
        &mut files,
        "envs/dev",
        "patches:\n  - path: version.yaml\nimages:\n  - name: registry.example.com/team/app\n    newTag: \"2.0\"\n",
        "3.0",
    );
    env(
        &mut files,
        "envs/prod",
        "patches:\n  - path: version.yaml\n  - path: hotfix.yaml\n",
        "1.0",
    );
    files.push((
        "envs/prod/hotfix.yaml",
        version_patch("app", &format!("{IMAGE}:3.0")),
    ));
    let oracle = Oracle::new(&files, &["envs/dev", "envs/prod"]);
    assert_eq!(
        oracle.check(),
        [
            update("envs/dev/kustomization.yaml", "envs/dev", "2.0", "4.0"),
            update("envs/prod/hotfix.yaml", "envs/prod", "3.0", "4.0"),
        ]
    );
}

/// A JSON 6902 patch that replaces a container's image (inline in `patches:`, or a
/// `patchesJson6902:` file) is what its leaf renders: its value is edited, the base is not
/// moved there; the leaf without one gets an `images:` entry.
#[test]
fn json_6902_image_replacements() {
    let mut files = base();
    let op = "- op: replace\n  path: /spec/template/spec/containers/0/image\n  value: registry.example.com/team/app:2.0\n";
    let inline: String = op.lines().map(|l| format!("      {l}\n")).collect();
    files.push((
        "envs/dev/kustomization.yaml",
        format!("resources: [../../base]\npatches:\n  - target: {{kind: Deployment, name: app}}\n    patch: |-\n{inline}"),
    ));
    files.push((
        "envs/staging/kustomization.yaml",
        "resources: [../../base]\npatchesJson6902:\n  - target: {group: apps, version: v1, kind: Deployment, name: app}\n    path: image.yaml\n".into(),
    ));
    files.push(("envs/staging/image.yaml", op.into()));
    files.push((
        "envs/prod/kustomization.yaml",
        "resources: [../../base]\n".into(),
    ));
    let oracle = Oracle::new(&files, &["envs/dev", "envs/staging", "envs/prod"]);
    assert_eq!(
        oracle.check(),
        [
            update("envs/dev/kustomization.yaml", "envs/dev", "2.0", "4.0"),
            update("envs/prod/kustomization.yaml", "envs/prod", "1.0", "4.0"),
            update("envs/staging/image.yaml", "envs/staging", "2.0", "4.0"),
        ]
    );
}
