//! Kustomize patches that set an image, and `$patch: delete`, checked by a render oracle:
//! every leaf of a fixture is rendered with the real kustomize (`kubectl kustomize`) before
//! and after `run --write` against a real registry, and
//!
//! - each reported update changes its leaf's render from exactly `from` to exactly `to`,
//!   and nothing else in any render changes;
//! - undoing any one edited line (or a written `images:` entry) changes a render back: no
//!   edit is dead or redundant;
//! - a second run proposes nothing.

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::Value;
use support::cli::imagebump;
use support::{kustomize_build as render, Registry, RegistryMode};

const IMAGE: &str = "registry.example.com/team/app";

fn deployment(name: &str, image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n        - name: {name}\n          image: {image}\n"
    )
}

/// A strategic-merge patch of the Deployment `name`'s container image.
fn version_patch(name: &str, image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n      containers:\n        - name: {name}\n          image: {image}\n"
    )
}

/// One update as the JSON report gives it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Update {
    file: String,
    unit: String,
    image: String,
    from: String,
    to: String,
}

struct Oracle {
    _reg: Registry,
    _cfg_dir: tempfile::TempDir,
    cfg: String,
    repo: tempfile::TempDir,
    leaves: Vec<&'static str>,
    /// The leaves a unit that is not itself a leaf renders in (an overlay others build on).
    renders_in: BTreeMap<&'static str, &'static str>,
}

impl Oracle {
    /// `files` as a repository; `team/app` at 1.0 … 4.0 and `team/web` at 1.0, 2.0.
    fn new(files: &[(&str, String)], leaves: &[&'static str]) -> Oracle {
        let reg = Registry::start(RegistryMode::Plain);
        reg.push_tags("team/app", &["1.0", "2.0", "3.0", "4.0"]);
        reg.push_tags("team/web", &["1.0", "2.0"]);
        Oracle::over(reg, support::tree(files), leaves)
    }

    /// `repo` with every registry the fixtures name served by `reg`.
    fn over(reg: Registry, repo: tempfile::TempDir, leaves: &[&'static str]) -> Oracle {
        let cfg_dir = tempfile::tempdir().unwrap();
        let cfg = cfg_dir.path().join("imagebump.yaml");
        let mut text = String::from("registries:\n");
        for prefix in ["registry.example.com", "ghcr.io", "docker.io"] {
            text.push_str(&format!(
                "  - prefix: {prefix}\n    url: {}\n",
                reg.base_url()
            ));
        }
        fs::write(&cfg, text).unwrap();
        Oracle {
            _reg: reg,
            _cfg_dir: cfg_dir,
            cfg: cfg.to_string_lossy().to_string(),
            repo,
            leaves: leaves.to_vec(),
            renders_in: BTreeMap::new(),
        }
    }

    fn dir(&self) -> &str {
        self.repo.path().to_str().unwrap()
    }

    fn renders(&self) -> BTreeMap<&'static str, String> {
        (self.leaves.iter())
            .map(|leaf| (*leaf, render(&self.repo.path().join(leaf))))
            .collect()
    }

    /// The updates a run reports (`--write` writes them).
    fn run(&self, mode: &str) -> (Vec<Update>, Value) {
        let out = imagebump()
            .args([
                "run",
                self.dir(),
                "--config",
                &self.cfg,
                mode,
                "--output",
                "json",
            ])
            .run();
        let report: Value = serde_json::from_str(&out.stdout).unwrap();
        let text = |u: &Value, k: &str| u[k].as_str().unwrap_or_default().to_string();
        let mut updates: Vec<Update> = (report["updates"].as_array().unwrap().iter())
            .map(|u| Update {
                file: Some(text(u, "writtenTo"))
                    .filter(|w| !w.is_empty())
                    .unwrap_or_else(|| text(u, "file")),
                // The change set's group: the kustomization directory the value renders in.
                unit: text(u, "group"),
                // As written: what the render shows.
                image: text(u, "name"),
                from: text(u, "from"),
                to: text(u, "to"),
            })
            .collect();
        updates.sort();
        (updates, report)
    }

    /// Runs `--write` and checks every rule of the oracle; returns the updates.
    fn check(&self) -> Vec<Update> {
        let files_before = support::texts(self.repo.path());
        let before = self.renders();
        let (updates, report) = self.run("--write");
        let after = self.renders();
        let leaf_of = |u: &Update| -> String {
            let unit = u.unit.as_str();
            self.renders_in
                .get(unit)
                .copied()
                .unwrap_or(unit)
                .to_string()
        };
        for u in &updates {
            assert!(
                self.leaves.contains(&leaf_of(u).as_str()),
                "{u:?} moves no leaf"
            );
        }
        // Each leaf's render is its old render with exactly the reported moves.
        for leaf in &self.leaves {
            let mut expected = before[leaf].clone();
            for u in updates.iter().filter(|u| leaf_of(u) == *leaf) {
                let old = format!("image: {}:{}\n", u.image, u.from);
                assert!(
                    expected.contains(&old),
                    "{leaf} does not render {old:?} that {u:?} moves\n{}\n{report:#}",
                    before[leaf]
                );
                expected = expected.replace(&old, &format!("image: {}:{}\n", u.image, u.to));
            }
            assert_eq!(after[leaf], expected, "{leaf}: {updates:?}");
        }
        self.no_dead_edit(&files_before, &after);
        let (again, _) = self.run("--dry-run");
        assert_eq!(again, [], "a second run has nothing to do");
        updates
    }

    /// Undoing any single edited line (a whole file, where lines were added) changes a
    /// render back.
    fn no_dead_edit(&self, before: &BTreeMap<String, String>, after: &BTreeMap<&str, String>) {
        let now = support::texts(self.repo.path());
        for (file, text) in &now {
            let old = before.get(file).cloned().unwrap_or_default();
            if *text == old {
                continue;
            }
            let (new_lines, old_lines): (Vec<&str>, Vec<&str>) = (
                text.split_inclusive('\n').collect(),
                old.split_inclusive('\n').collect(),
            );
            let undos: Vec<String> = if new_lines.len() == old_lines.len() {
                (0..new_lines.len())
                    .filter(|&i| new_lines[i] != old_lines[i])
                    .map(|i| {
                        let mut lines = new_lines.clone();
                        lines[i] = old_lines[i];
                        lines.concat()
                    })
                    .collect()
            } else {
                vec![old.clone()]
            };
            let path = self.repo.path().join(file);
            for undo in undos {
                fs::write(&path, &undo).unwrap();
                assert_ne!(&self.renders(), after, "a dead edit in {file}:\n{text}");
            }
            fs::write(&path, text).unwrap();
        }
    }
}

fn update(file: &str, unit: &str, from: &str, to: &str) -> Update {
    Update {
        file: file.into(),
        unit: unit.into(),
        image: IMAGE.into(),
        from: from.into(),
        to: to.into(),
    }
}

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
/// `patchesJson6902:` file) is what its leaf renders: the base is not moved there (its
/// values are not edited); the leaf without one gets an `images:` entry.
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
        [update(
            "envs/prod/kustomization.yaml",
            "envs/prod",
            "1.0",
            "4.0"
        )]
    );
}
