//! Flux image automation kept in git (fixtures/flux): the values marked with
//! `# {"$imagepolicy": "<namespace>:<policy>[:tag|:name]"}` setters move as the named
//! ImagePolicy says, in the part Flux writes, setter comments kept byte for byte; one run
//! against a real registry gives exactly fixtures/flux/expected. The ImageUpdateAutomation's
//! `update.path` limits where setters count; a setter naming what is not there is an error
//! with its line, and everything else is still updated.

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

use support::cli::{imagebump, Run};
use support::{Registry, RegistryMode};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/flux")
}

/// A registry holding the tags of fixtures/flux/registry.txt (`repo tag tag ...`).
fn seeded_registry() -> Registry {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_listing(&fixture().join("registry.txt"));
    reg
}

/// `imagebump.yaml` pointing the fixture's registries at `reg`.
fn config(reg: &Registry) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("imagebump.yaml");
    let mut text = String::from("registries:\n");
    for prefix in ["ghcr.io", "quay.io"] {
        text.push_str(&format!(
            "  - prefix: {prefix}\n    url: {}\n",
            reg.base_url()
        ));
    }
    fs::write(&path, text).unwrap();
    let p = path.to_string_lossy().to_string();
    (dir, p)
}

fn run(dir: &Path, cfg: &str, mode: &str, code: i32) -> Run {
    imagebump()
        .args(["run", dir.to_str().unwrap(), "--config", cfg, mode])
        .filter_path(dir, "[REPO]")
        .code(code)
        .run()
}

/// The fixture's repository after a write holds exactly `expected/` where it changed and
/// its old bytes everywhere else; `changed` lists extra (path, old, new) replacements the
/// test's own edits to the copy lead to.
fn assert_written(repo: &Path, before: &std::collections::BTreeMap<String, Vec<u8>>) {
    support::assert_tree(repo, before, &fixture().join("expected"));
}

/// What `scan` prints as a note (`run` as a warning): the HelmRelease's chart comes from a
/// HelmRepository kept outside the repository (with the cluster's infrastructure, as in
/// Flux's own example), and the staging setter.
const STAGING_NOTE: &str = "note: clusters/my-cluster/apps/podinfo-release.yaml:13:9: HelmRelease chart podinfo: HelmRepository podinfo is not in the repository; its version is not checked\nnote: clusters/staging/podinfo-deployment.yaml:17:53: the Flux setter for ImagePolicy flux-system/podinfo is outside the update.path of every ImageUpdateAutomation of namespace flux-system: Flux would not update it; left alone\n";

#[test]
fn scan_lists_each_marked_value_with_its_image_policy() {
    let run = imagebump()
        .args(["scan", fixture().join("repo").to_str().unwrap()])
        .run();
    assert_eq!(run.stderr, STAGING_NOTE, "{run}");
    let rows: Vec<String> = run
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        rows,
        [
            "LOCATION IMAGE CURRENT POLICY STATUS",
            "clusters/my-cluster/apps/minio/minio.yaml:17 minio - - unmanaged: overridden by clusters/my-cluster/apps/minio/kustomization.yaml:7",
            "clusters/my-cluster/apps/builds.yaml:63 ghcr.io/acme/app main-a1b2c3d-1700000000 regex /^main-[a-fA-F0-9]+-(?P<num>.*)/ ignore *.sig (ImagePolicy flux-system/app) managed",
            "clusters/my-cluster/apps/minio/kustomization.yaml:9 quay.io/minio/minio RELEASE.2023-09-04T19-57-37Z regex /^RELEASE\\.(?P<ts>.*)Z$/ ignore *.sig,*.fips (ImagePolicy flux-system/minio) managed",
            "clusters/my-cluster/apps/podinfo-release.yaml:19 ghcr.io/stefanprodan/podinfo 5.0.0 semver 5.0.x (masterminds) ignore *.sig (ImagePolicy flux-system/podinfo) managed",
            "clusters/my-cluster/apps/podinfo-release.yaml:23 ghcr.io/acme/worker 41 numeric ignore *.sig (ImagePolicy flux-system/worker) managed",
            "clusters/my-cluster/podinfo-deployment.yaml:17 ghcr.io/stefanprodan/podinfo 5.0.0 semver 5.0.x (masterminds) ignore *.sig (ImagePolicy flux-system/podinfo) managed",
            "clusters/staging/podinfo-deployment.yaml:17 ghcr.io/stefanprodan/podinfo 5.0.0 - unmanaged: outside the update.path of every ImageUpdateAutomation of namespace flux-system: Flux would not update it",
            "",
            "7 references in 9 files (5 managed, 2 unmanaged)",
        ]
    );
    let json = imagebump()
        .args([
            "scan",
            fixture().join("repo").to_str().unwrap(),
            "--output",
            "json",
        ])
        .run()
        .json();
    let kinds: Vec<&str> = json["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "flux-setter").count(),
        6,
        "{kinds:?}"
    );
}

#[test]
fn writes_what_flux_would_keeping_every_setter_comment() {
    let reg = seeded_registry();
    let (_c, cfg) = config(&reg);
    let repo = support::copy_tree(&fixture().join("repo"));
    let before = support::files(repo.path());

    let dry = run(repo.path(), &cfg, "--dry-run", 0);
    assert_eq!(
        support::files(repo.path()),
        before,
        "a dry run writes nothing"
    );
    let warning = STAGING_NOTE.replace("note:", "warning:");
    assert_eq!(dry.stderr, warning, "{dry}");
    for line in [
        "-        image: ghcr.io/stefanprodan/podinfo:5.0.0 # {\"$imagepolicy\": \"flux-system:podinfo\"}\n+        image: ghcr.io/stefanprodan/podinfo:5.0.3 # {\"$imagepolicy\": \"flux-system:podinfo\"}\n",
        "-      tag: 5.0.0 # {\"$imagepolicy\": \"flux-system:podinfo:tag\"}\n+      tag: 5.0.3 # {\"$imagepolicy\": \"flux-system:podinfo:tag\"}\n",
        "-        tag: \"41\" # {\"$imagepolicy\": \"flux-system:worker:tag\"}\n+        tag: \"57\" # {\"$imagepolicy\": \"flux-system:worker:tag\"}\n",
        "-    newTag: RELEASE.2023-09-04T19-57-37Z # {\"$imagepolicy\": \"flux-system:minio:tag\"}\n+    newTag: RELEASE.2024-01-16T16-07-38Z # {\"$imagepolicy\": \"flux-system:minio:tag\"}\n",
    ] {
        dry.assert_stdout_contains(line);
    }
    // Staging's setter is outside every automation's path: listed, not edited.
    let diff = dry.stdout.split("\nunmanaged (").next().unwrap_or_default();
    assert!(!diff.contains("staging"), "{}", dry.stdout);

    let write = run(repo.path(), &cfg, "--write", 0);
    assert_eq!(write.stderr, warning, "{write}");
    assert_written(repo.path(), &before);

    // A second run finds nothing to do.
    let again = imagebump()
        .args([
            "run",
            repo.path().to_str().unwrap(),
            "--config",
            &cfg,
            "--output",
            "json",
        ])
        .run();
    assert_eq!(again.json()["counts"]["updates"], 0, "{}", again.stdout);
}

#[test]
fn without_an_image_update_automation_every_setter_counts() {
    let reg = seeded_registry();
    let (_c, cfg) = config(&reg);
    let repo = support::copy_tree(&fixture().join("repo"));
    fs::remove_file(
        repo.path()
            .join("clusters/my-cluster/flux-system/image-automation.yaml"),
    )
    .unwrap();
    let staging = repo.path().join("clusters/staging/podinfo-deployment.yaml");
    let old = fs::read_to_string(&staging).unwrap();

    let write = run(repo.path(), &cfg, "--write", 0);
    let helm_note = STAGING_NOTE.lines().next().unwrap_or_default();
    assert_eq!(
        write.stderr,
        format!("{}\n", helm_note.replacen("note:", "warning:", 1)),
        "{write}"
    );
    assert_eq!(
        fs::read_to_string(&staging).unwrap(),
        old.replace("podinfo:5.0.0 #", "podinfo:5.0.3 #")
    );
}

/// Typos and broken resources, each next to values that must still move.
const BROKEN: &str = r#"---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: broken
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: podinfo
  policy:
    semver: {}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: lowest
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: worker
  policy:
    numerical:
      order: desc
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: typos
  namespace: default
spec:
  template:
    spec:
      containers:
      - name: a
        image: ghcr.io/stefanprodan/podinfo:5.0.0 # {"$imagepolicy": "flux-system:podinfoo"}
      - name: b
        image: ghcr.io/stefanprodan/podinfo:5.0.0 # {"$imagepolicy": "podinfo"}
      - name: c
        image: ghcr.io/stefanprodan/podinfo:5.0.0 # {"$imagepolicy": "flux-system:broken"}
      - name: d
        image: ghcr.io/acme/worker:41 # {"$imagepolicy": "flux-system:lowest"}
"#;

#[test]
fn a_setter_naming_what_is_not_there_is_an_error_and_the_rest_still_moves() {
    let reg = seeded_registry();
    let (_c, cfg) = config(&reg);
    let repo = support::copy_tree(&fixture().join("repo"));
    let broken = "clusters/my-cluster/apps/broken.yaml";
    fs::write(repo.path().join(broken), BROKEN).unwrap();
    let before = support::files(repo.path());

    let write = run(repo.path(), &cfg, "--write", 1);
    let errors: Vec<&str> = write
        .stderr
        .lines()
        .filter(|l| l.starts_with("error: clusters/"))
        .collect();
    assert_eq!(
        errors,
        [
            "error: clusters/my-cluster/apps/broken.yaml:37:53: the Flux setter \"podinfo\" has no namespace: Flux matches only \"<namespace>:podinfo\" (for example \"flux-system:podinfo\")",
            "error: clusters/my-cluster/apps/broken.yaml:11:13: ImagePolicy flux-system/broken: spec.policy.semver.range is required",
            "error: clusters/my-cluster/apps/broken.yaml:35:53: the Flux setter names ImagePolicy flux-system/podinfoo, which is not in the repository",
            "error: clusters/my-cluster/apps/broken.yaml:39:53: the Flux setter names ImagePolicy flux-system/broken, which is invalid (clusters/my-cluster/apps/broken.yaml:2)",
        ],
        "{write}"
    );
    write.assert_stderr_contains("warning: clusters/my-cluster/apps/broken.yaml:22:5: ImagePolicy flux-system/lowest: its order is desc, which selects the lowest tag: imagebump never moves to a lower version; the values it marks are left alone\n");
    assert!(!write.stderr.contains("panicked"), "{write}");
    // Nothing in the broken file moved; everything else did.
    assert_eq!(
        fs::read_to_string(repo.path().join(broken)).unwrap(),
        BROKEN
    );
    assert_written(repo.path(), &before);
}

/// Flux's `:digest` setter (a kustomization's `digest:` beside `newTag:`) and a whole
/// reference pinned by digest, under a policy that reflects digests: the digest moves with
/// the tag. A `:name` value that is not the ImageRepository's image is left alone, with why.
#[test]
fn digests_move_with_their_tags_and_foreign_names_are_left_alone() {
    let reg = Registry::start(RegistryMode::Plain);
    let old = reg.push_tag_created_digest("acme/web", "1.0.0", "2024-01-01T00:00:00Z");
    let new = reg.push_tag_created_digest("acme/web", "1.1.0", "2024-02-01T00:00:00Z");
    reg.push_tags("acme/api", &["2.0.0", "2.1.0"]);
    let (_c, cfg) = config(&reg);
    let resources = r#"apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: web
  namespace: flux-system
spec:
  image: ghcr.io/acme/web
  interval: 5m
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: web
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: web
  digestReflectionPolicy: IfNotPresent
  policy:
    semver:
      range: '>=1.0.0'
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: api
  namespace: flux-system
spec:
  image: ghcr.io/acme/api
  interval: 5m
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: api
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: api
  policy:
    semver:
      range: '>=2.0.0'
"#;
    let kustomization = format!(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - deploy.yaml\nimages:\n  - name: web\n    newName: ghcr.io/acme/web # {{\"$imagepolicy\": \"flux-system:web:name\"}}\n    newTag: 1.0.0 # {{\"$imagepolicy\": \"flux-system:web:tag\"}}\n    digest: {old} # {{\"$imagepolicy\": \"flux-system:web:digest\"}}\n"
    );
    let deploy = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: ghcr.io/acme/web:1.0.0@{old} # {{\"$imagepolicy\": \"flux-system:web\"}}\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: api\nspec:\n  values:\n    image:\n      repository: ghcr.io/acme/api-old # {{\"$imagepolicy\": \"flux-system:api:name\"}}\n      tag: 2.0.0 # {{\"$imagepolicy\": \"flux-system:api:tag\"}}\n"
    );
    let repo = support::tree(&[
        ("flux-system/images.yaml", resources),
        ("apps/web/kustomization.yaml", kustomization.as_str()),
        ("apps/web/deploy.yaml", deploy.as_str()),
    ]);

    let write = run(repo.path(), &cfg, "--write", 0);
    assert_eq!(write.stderr, "", "{write}");
    let texts = support::texts(repo.path());
    let moved = |text: &str| text.replace("1.0.0", "1.1.0").replace(&old, &new);
    assert_eq!(texts["apps/web/kustomization.yaml"], moved(&kustomization));
    // The API's tag stays: its `:name` value is another image.
    assert_eq!(texts["apps/web/deploy.yaml"], moved(&deploy));
    let scan = imagebump()
        .args(["scan", repo.path().to_str().unwrap()])
        .run();
    scan.assert_stdout_contains("unmanaged: the `:name` value ghcr.io/acme/api-old is not the ImageRepository's image ghcr.io/acme/api: Flux would write that name here, imagebump does not rewrite names (write it)");
}

/// An ImageUpdateAutomation Flux would refuse updates nothing in Flux: it is an error, and
/// it does not turn into "no automation, every setter counts".
#[test]
fn a_broken_automation_is_an_error_and_widens_nothing() {
    let reg = seeded_registry();
    let (_c, cfg) = config(&reg);
    let repo = support::copy_tree(&fixture().join("repo"));
    let automation = repo
        .path()
        .join("clusters/my-cluster/flux-system/image-automation.yaml");
    let text = fs::read_to_string(&automation).unwrap();
    fs::write(
        &automation,
        text.replace("strategy: Setters", "strategy: Kustomize"),
    )
    .unwrap();
    let before = support::files(repo.path());

    let write = run(repo.path(), &cfg, "--write", 1);
    write.assert_stderr_contains("error: clusters/my-cluster/flux-system/image-automation.yaml:25:15: ImageUpdateAutomation flux-system/flux-system: spec.update.strategy \"Kustomize\" is not Setters, the only strategy Flux has\n");
    assert_eq!(support::files(repo.path()), before, "nothing is written");
}
