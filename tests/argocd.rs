//! Argo CD: an app-of-apps repository configured for argocd-image-updater
//! (fixtures/argocd) gets, from one run against a real registry, exactly the files in
//! fixtures/argocd/expected, and nothing else changes.

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

use serde_json::Value;
use support::cli::{imagebump, Run};
use support::{Registry, RegistryMode};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/argocd")
}

/// Seed from registry.txt: `repo TAG[@CREATED][=PLATFORM[,PLATFORM]] ...` (see the fixture's
/// README): plain tags share one image; a date makes the tag its own image; platforms
/// make an index (or a single-platform image).
fn seed(reg: &Registry) {
    let listing = fs::read_to_string(fixture().join("registry.txt")).unwrap();
    for line in listing.lines().filter(|l| !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let repo = words.next().unwrap();
        let mut plain = Vec::new();
        for token in words {
            let (tag_date, platforms) = match token.split_once('=') {
                Some((t, p)) => (t, p.split(',').collect::<Vec<_>>()),
                None => (token, Vec::new()),
            };
            let (tag, created) = match tag_date.split_once('@') {
                Some((t, c)) => (t, Some(c)),
                None => (tag_date, None),
            };
            match (created, platforms.as_slice()) {
                (None, []) => plain.push(tag),
                (Some(c), []) => reg.push_tag_created(repo, tag, c),
                (c, [p]) => {
                    reg.push_image_for(repo, &[tag], p, c.unwrap_or("2024-01-01T00:00:00Z"));
                }
                (c, ps) => {
                    let c = c.unwrap_or("2024-01-01T00:00:00Z");
                    let entries: Vec<(&str, &str)> = ps.iter().map(|p| (*p, c)).collect();
                    reg.push_index(repo, tag, &entries);
                }
            }
        }
        if !plain.is_empty() {
            reg.push_tags(repo, &plain);
        }
    }
}

fn config(reg: &Registry) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("imagebump.yaml");
    fs::write(
        &path,
        format!(
            // The fixture's chart repositories (charts.example.test) do not exist, and
            // argocd-image-updater, which it mirrors, does not bump charts.
            "registries:\n  - prefix: registry.test\n    url: {}\nhelm:\n  charts: false\n",
            reg.base_url()
        ),
    )
    .unwrap();
    let p = path.to_string_lossy().to_string();
    (dir, p)
}

/// `imagebump run DIR --config CFG --write`, expecting exit code `code`.
fn write(dir: &Path, cfg: &str, code: i32) -> Run {
    imagebump()
        .args(["run", dir.to_str().unwrap(), "--config", cfg, "--write"])
        .code(code)
        .run()
}

#[test]
fn writes_exactly_what_argocd_image_updater_would_without_its_bugs() {
    let reg = Registry::start(RegistryMode::Plain);
    seed(&reg);
    let (_c, cfg) = config(&reg);
    let repo = support::copy_tree(&fixture().join("repo"));
    let dir = repo.path().to_str().unwrap();
    let before = support::files(repo.path());

    let dry = imagebump()
        .args(["run", dir, "--config", &cfg, "--dry-run"])
        .run();
    assert_eq!(
        support::files(repo.path()),
        before,
        "a dry run writes nothing:\n{}",
        dry.stdout
    );

    imagebump()
        .args(["run", dir, "--config", &cfg, "--write"])
        .run();
    support::assert_tree(repo.path(), &before, &fixture().join("expected"));
    // A second run finds nothing to do.
    support::assert_nothing_left(dir, &cfg);
}

#[test]
fn scan_groups_references_by_app_and_says_where_values_go() {
    // Offline: the fixture's chart repositories do not exist.
    let run = imagebump()
        .args([
            "scan",
            "--offline",
            fixture().join("repo").to_str().unwrap(),
        ])
        .run();
    run.assert_stdout_contains("app team-a/batch\n");
    run.assert_stdout_contains("managed, writes apps/batch/.argocd-source-team-a_batch.yaml");
    // Settings without a cluster meaning are explained, not ignored.
    run.assert_stderr_contains("write-back-method is argocd");
}

/// An Application no ImageUpdater selects, before a selected one in the same
/// multi-document file, keeps its reference (the selected app's took its place before: the
/// two sit at the same path in different documents).
#[test]
fn an_unselected_app_before_a_selected_one_in_the_same_file_is_kept() {
    let app = |name: &str| {
        format!("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: argocd\nspec:\n  source:\n    path: apps/{name}\n    kustomize:\n      images:\n      - registry.test/team/{name}:1.0.0\n")
    };
    let iu = "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\nmetadata:\n  name: iu\n  namespace: argocd\nspec:\n  applicationRefs:\n  - namePattern: web\n    images:\n    - alias: web\n      imageName: registry.test/team/web\n";
    let tree = support::make_worktree(&[
        (
            "argocd/apps.yaml",
            &format!("{}---\n{}", app("plain"), app("web")),
        ),
        ("argocd/iu.yaml", iu),
        ("apps/plain/kustomization.yaml", "resources: []\n"),
        ("apps/web/kustomization.yaml", "resources: []\n"),
    ]);
    let run = imagebump()
        .args(["scan", tree.path().to_str().unwrap()])
        .run();
    run.assert_stdout_contains("app plain\n")
        .assert_stdout_contains("argocd/apps.yaml:11  registry.test/team/plain  1.0.0")
        .assert_stdout_contains("app web\n")
        .assert_stdout_contains("2 references in 4 files (2 managed, 0 unmanaged)");
}

/// An override entry spelled with Docker Hub's registry (`docker.io/jannfis/foobar`) is the
/// image-list's `jannfis/foobar`: its version is read there and written there.
#[test]
fn override_entries_match_the_image_list_however_docker_hub_is_spelled() {
    let app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: foo\n  namespace: argocd\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: foo=jannfis/foobar\nspec:\n  source:\n    path: apps/foo\n";
    let tree = support::make_worktree(&[
        ("argocd/foo.yaml", app),
        ("apps/foo/kustomization.yaml", "resources: []\n"),
        (
            "apps/foo/.argocd-source-foo.yaml",
            "kustomize:\n  images:\n  - docker.io/jannfis/foobar:1.2.0\n",
        ),
    ]);
    let run = imagebump()
        .args(["scan", tree.path().to_str().unwrap()])
        .run();
    run.assert_stdout_contains(
        "apps/foo/.argocd-source-foo.yaml:3  jannfis/foobar  1.2.0    semver (masterminds) (annotations (foo))  managed",
    );
    assert!(!run.stdout.contains("not in git"), "{}", run.stdout);
}

/// Two listed images in one Kustomize app's own `kustomize.images` are two items of the
/// override file, not one value: both are updated, as argocd-image-updater does.
#[test]
fn two_kustomize_images_of_one_app_are_both_updated() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/a", &["1.0.0", "1.1.0"]);
    reg.push_tags("team/b", &["1.0.0", "1.2.0"]);
    let (_c, cfg) = config(&reg);
    let app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: x\n  namespace: argocd\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: a=registry.test/team/a, b=registry.test/team/b\nspec:\n  source:\n    path: apps/x\n    kustomize:\n      images:\n      - registry.test/team/a:1.0.0\n      - registry.test/team/b:1.0.0\n";
    let tree = support::make_worktree(&[
        ("argocd/x.yaml", app),
        ("apps/x/kustomization.yaml", "resources: []\n"),
    ]);
    let run = write(tree.path(), &cfg, 0);
    let written = std::fs::read_to_string(tree.path().join("apps/x/.argocd-source-x.yaml"))
        .unwrap_or_else(|e| panic!("{e}: {run}"));
    assert_eq!(
        written,
        "kustomize:\n  images:\n  - registry.test/team/a:1.1.0\n  - registry.test/team/b:1.2.0\n",
        "{run}"
    );
}

/// A helmvalues write-back target lacking the name key gets it, nested as the migration
/// guide says missing keys are created; an empty target (`{}`) gets both keys.
#[test]
fn a_helmvalues_target_gets_the_keys_it_lacks() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.0.0", "1.1.0"]);
    let (_c, cfg) = config(&reg);
    let app = |params: &str| {
        format!("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: web=registry.test/team/web:1.x\n    argocd-image-updater.argoproj.io/write-back-method: git\n    argocd-image-updater.argoproj.io/write-back-target: helmvalues:/apps/web/values-prod.yaml\n    argocd-image-updater.argoproj.io/web.helm.image-name: image.name\n    argocd-image-updater.argoproj.io/web.helm.image-tag: image.tag\nspec:\n  source:\n    path: apps/web\n    helm:\n      valueFiles: [values-prod.yaml]\n{params}")
    };
    let chart = (
        "apps/web/Chart.yaml",
        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    );
    let tree = support::make_worktree(&[
        ("argocd/web.yaml", &app("")),
        chart,
        ("apps/web/values-prod.yaml", "image:\n  tag: 1.0.0\n"),
    ]);
    let run = write(tree.path(), &cfg, 0);
    assert_eq!(
        std::fs::read_to_string(tree.path().join("apps/web/values-prod.yaml")).unwrap(),
        "image:\n  tag: 1.1.0\n  name: registry.test/team/web\n",
        "{run}"
    );
    // The current version in the chart's values.yaml, which Helm reads before the target:
    // the empty target gets both keys.
    let chart_values = ("apps/web/values.yaml", "image:\n  tag: 1.0.0\n");
    let tree = support::make_worktree(&[
        ("argocd/web.yaml", &app("")),
        chart,
        chart_values,
        ("apps/web/values-prod.yaml", "{}\n"),
    ]);
    let run = write(tree.path(), &cfg, 0);
    let written = std::fs::read_to_string(tree.path().join("apps/web/values-prod.yaml")).unwrap();
    let value: serde_json::Value = yaml_serde::from_str(&written).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"image": {"name": "registry.test/team/web", "tag": "1.1.0"}}),
        "{written}\n{run}"
    );
    // The current version in the app's parameters, which Helm applies after every values
    // file: the target would change nothing rendered, an error; nothing written.
    let params = "      parameters:\n      - name: image.name\n        value: registry.test/team/web\n      - name: image.tag\n        value: 1.0.0\n";
    let tree = support::make_worktree(&[
        ("argocd/web.yaml", &app(params)),
        chart,
        ("apps/web/values-prod.yaml", "{}\n"),
    ]);
    let before = support::files(tree.path());
    let run = write(tree.path(), &cfg, 1);
    run.assert_stderr_contains(
        "write-back target helmvalues:/apps/web/values-prod.yaml resolves to apps/web/values-prod.yaml, under argocd/web.yaml, which sets the version the app renders after it",
    );
    assert_eq!(support::files(tree.path()), before);
    // A scalar where the keys need a mapping: an error naming the key, nothing written.
    let tree = support::make_worktree(&[
        ("argocd/web.yaml", &app("")),
        chart,
        chart_values,
        (
            "apps/web/values-prod.yaml",
            "image: registry.test/team/web\n",
        ),
    ]);
    let before = support::files(tree.path());
    let run = write(tree.path(), &cfg, 1);
    run.assert_stderr_contains(
        "cannot write image.name in apps/web/values-prod.yaml: \"image\" is a value, not a mapping (needed for \"name\")",
    );
    assert_eq!(support::files(tree.path()), before);
}

/// argocd-image-updater's `image.attributes` cases: a scalar `attributes` where the keys
/// `image.attributes.{name,tag}` need a mapping is an error naming `attributes` (exit 1,
/// nothing written), unless the values hold the literal dotted keys, which are then read
/// and written as AIU's getHelmValue and setHelmValue do.
#[test]
fn a_scalar_where_helm_keys_need_a_mapping_falls_back_to_literal_keys_or_is_an_error() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.0.0", "1.1.0"]);
    let (_c, cfg) = config(&reg);
    let app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: web=registry.test/team/web\n    argocd-image-updater.argoproj.io/web.helm.image-name: image.attributes.name\n    argocd-image-updater.argoproj.io/web.helm.image-tag: image.attributes.tag\n    argocd-image-updater.argoproj.io/write-back-method: git\n    argocd-image-updater.argoproj.io/write-back-target: helmvalues:values-prod.yaml\nspec:\n  source:\n    path: apps/web\n    helm:\n      valueFiles: [values-prod.yaml]\n";
    let chart = (
        "apps/web/Chart.yaml",
        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    );
    // The current version in the chart's values.yaml, which Helm reads first.
    let chart_values = (
        "apps/web/values.yaml",
        "image:\n  attributes:\n    tag: 1.0.0\n",
    );
    let scalar = "image:\n  attributes: value-not-nested\n";
    let tree = support::make_worktree(&[
        ("argocd/web.yaml", app),
        chart,
        chart_values,
        ("apps/web/values-prod.yaml", scalar),
    ]);
    let before = support::files(tree.path());
    let run = write(tree.path(), &cfg, 1);
    run.assert_stderr_contains("cannot write image.attributes.name in apps/web/values-prod.yaml: \"image.attributes\" is a value, not a mapping (needed for \"name\")");
    assert_eq!(support::files(tree.path()), before);

    let literal = format!(
        "{scalar}image.attributes.tag: 1.0.0\nimage.attributes.name: registry.test/team/web\n"
    );
    let tree = support::make_worktree(&[
        ("argocd/web.yaml", app),
        chart,
        chart_values,
        ("apps/web/values-prod.yaml", &literal),
    ]);
    let run = write(tree.path(), &cfg, 0);
    assert_eq!(
        std::fs::read_to_string(tree.path().join("apps/web/values-prod.yaml")).unwrap(),
        literal.replace("tag: 1.0.0", "tag: 1.1.0"),
        "{run}"
    );
}

/// The digest strategy on a kustomization write-back target whose entry has a `digest:`
/// field moves that field (kustomize deploys the digest), and the tag stays a tag; the real
/// kustomize renders the new digest.
#[test]
fn the_digest_strategy_moves_a_kustomization_entrys_digest_field() {
    let reg = Registry::start(RegistryMode::Plain);
    let old = reg.push_tag_created_digest("team/web", "latest", "2024-01-01T00:00:00Z");
    let new = reg.push_tag_created_digest("team/web", "latest", "2024-02-01T00:00:00Z");
    assert_ne!(old, new);
    let (_c, cfg) = config(&reg);
    let app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: web=registry.test/team/web:latest\n    argocd-image-updater.argoproj.io/web.update-strategy: digest\n    argocd-image-updater.argoproj.io/write-back-method: git\n    argocd-image-updater.argoproj.io/write-back-target: kustomization\nspec:\n  source:\n    path: apps/web\n";
    let kustomization = format!("resources:\n- deploy.yaml\nimages:\n- name: registry.test/team/web\n  newTag: latest\n  digest: {old}\n");
    let deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n        image: registry.test/team/web:latest\n";
    let tree = support::make_worktree(&[
        ("argocd/web.yaml", app),
        ("apps/web/kustomization.yaml", &kustomization),
        ("apps/web/deploy.yaml", deploy),
    ]);
    let run = write(tree.path(), &cfg, 0);
    let written = std::fs::read_to_string(tree.path().join("apps/web/kustomization.yaml")).unwrap();
    assert_eq!(written, kustomization.replace(&old, &new), "{run}");
    let rendered = support::kustomize_build(&tree.path().join("apps/web"));
    assert!(
        rendered.contains(&format!("image: registry.test/team/web:latest@{new}")),
        "{rendered}"
    );
}

/// `write-back-target: kustomization:<dir>` inside the app's path writes that directory's
/// kustomization file, under the name it has (`kustomization.yml` here; a second
/// `kustomization.yaml` would make kustomize refuse the directory); with
/// `kustomize.image-name: bar` and no `images:` entry yet, the Deployment's `bar:1.0.0` is
/// the current version. The real kustomize renders the new image.
#[test]
fn a_kustomization_target_in_the_apps_path_is_written_where_it_is() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.0.0", "1.1.0"]);
    let (_c, cfg) = config(&reg);
    let app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: web=registry.test/team/web\n    argocd-image-updater.argoproj.io/web.kustomize.image-name: bar\n    argocd-image-updater.argoproj.io/write-back-method: git\n    argocd-image-updater.argoproj.io/write-back-target: kustomization:./overlay\nspec:\n  source:\n    path: apps/web\n";
    let deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n        image: bar:1.0.0\n";
    let tree = support::make_worktree(&[
        ("argocd/web.yaml", app),
        ("apps/web/kustomization.yaml", "resources:\n- overlay\n"),
        (
            "apps/web/overlay/kustomization.yml",
            "resources:\n- deploy.yaml\n",
        ),
        ("apps/web/overlay/deploy.yaml", deploy),
    ]);
    let run = write(tree.path(), &cfg, 0);
    let overlay = tree.path().join("apps/web/overlay");
    assert!(!overlay.join("kustomization.yaml").exists(), "{run}");
    let written = std::fs::read_to_string(overlay.join("kustomization.yml")).unwrap();
    assert_eq!(
        written,
        "resources:\n- deploy.yaml\nimages:\n- name: bar\n  newName: registry.test/team/web\n  newTag: 1.1.0\n",
        "{run}"
    );
    let rendered = support::kustomize_build(&tree.path().join("apps/web"));
    assert!(
        rendered.contains("image: registry.test/team/web:1.1.0"),
        "{rendered}"
    );
}

/// A plugin app (a kustomize-based config management plugin) with
/// `write-back-target: kustomization` is read and written the way kustomize renders it.
#[test]
fn a_plugin_apps_kustomization_target_is_written() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.0.0", "1.1.0"]);
    let (_c, cfg) = config(&reg);
    let app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: web=registry.test/team/web\n    argocd-image-updater.argoproj.io/write-back-method: git\n    argocd-image-updater.argoproj.io/write-back-target: kustomization\nspec:\n  source:\n    path: apps/web\n    plugin:\n      name: kustomize-envsubst\n";
    let deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n        image: registry.test/team/web:1.0.0\n";
    let tree = support::make_worktree(&[
        ("argocd/web.yaml", app),
        ("apps/web/kustomization.yaml", "resources:\n- deploy.yaml\n"),
        ("apps/web/deploy.yaml", deploy),
    ]);
    let run = write(tree.path(), &cfg, 0);
    assert_eq!(
        std::fs::read_to_string(tree.path().join("apps/web/kustomization.yaml")).unwrap(),
        "resources:\n- deploy.yaml\nimages:\n- name: registry.test/team/web\n  newTag: 1.1.0\n",
        "{run}"
    );
    let rendered = support::kustomize_build(&tree.path().join("apps/web"));
    assert!(
        rendered.contains("image: registry.test/team/web:1.1.0"),
        "{rendered}"
    );
}

/// The YAML documents of a file as JSON values.
fn docs(path: &Path) -> Vec<Value> {
    use serde::Deserialize;
    let text = fs::read_to_string(path).unwrap_or_default();
    yaml_serde::Deserializer::from_str(&text)
        .map(|d| serde_json::to_value(yaml_serde::Value::deserialize(d).unwrap()).unwrap())
        .collect()
}

/// What Argo CD renders for every source of every app in `root`: the source with
/// `.argocd-source.yaml` and `.argocd-source-<app>.yaml` applied (RFC 7396).
fn rendered(root: &Path) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for (rel, _) in support::files(root) {
        if !rel.starts_with("argocd/") {
            continue;
        }
        for app in imagebump_argocd::find_apps(&rel, &docs(&root.join(&rel)))
            .into_iter()
            .flatten()
        {
            for (i, source) in app.sources.iter().enumerate() {
                let Some(path) = &source.path else {
                    out.insert(format!("{}#{i}", app.name), source.value.clone());
                    continue;
                };
                let dir = root.join(path);
                let patches: Vec<Value> = [
                    ".argocd-source.yaml".to_string(),
                    app.override_file_name("argocd"),
                ]
                .iter()
                .filter_map(|f| docs(&dir.join(f)).into_iter().next())
                .collect();
                let refs: Vec<&Value> = patches.iter().collect();
                let effective =
                    imagebump_argocd::merge_patch::effective_source(&source.value, &refs);
                out.insert(format!("{}#{i}", app.name), effective);
            }
        }
    }
    out
}

/// Lists Argo CD keys by name become maps, so that an added entry is one difference:
/// `{name, value, forceString}` items by `name` (value only: `forcestring` is spelling),
/// kustomize image strings by the image they override.
fn by_name(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), by_name(v))).collect()),
        Value::Array(items)
            if !items.is_empty() && items.iter().all(|i| i.get("name").is_some()) =>
        {
            Value::Object(
                items
                    .iter()
                    .map(|i| {
                        (
                            i["name"].as_str().unwrap_or_default().to_string(),
                            i["value"].clone(),
                        )
                    })
                    .collect(),
            )
        }
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_string) => {
            Value::Object(
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|s| {
                        let k = imagebump_argocd::parse_kustomize_image(s).unwrap();
                        (
                            k.old_name.unwrap_or(k.new_name),
                            Value::String(s.to_string()),
                        )
                    })
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

/// Leaf differences between two JSON values, as (path, before, after).
fn leaf_diff(path: &str, a: &Value, b: &Value, out: &mut Vec<(String, Value, Value)>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let (va, vb) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                leaf_diff(&format!("{path}.{k}"), va, vb, out);
            }
        }
        _ if a != b => out.push((path.to_string(), a.clone(), b.clone())),
        _ => {}
    }
}

/// Argo CD replaces lists from override files wholesale: after the run, what it renders
/// for every app differs from before only in image values, so no parameter is dropped.
#[test]
fn rendered_sources_change_only_in_image_values() {
    let reg = Registry::start(RegistryMode::Plain);
    seed(&reg);
    let (_c, cfg) = config(&reg);
    let repo = support::copy_tree(&fixture().join("repo"));
    let before = rendered(repo.path());
    write(repo.path(), &cfg, 0);
    let after = rendered(repo.path());
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    let mut changes = Vec::new();
    for (app, b) in &before {
        leaf_diff(app, &by_name(b), &by_name(&after[app]), &mut changes);
    }
    let changes: Vec<String> = changes
        .iter()
        .map(|(p, a, b)| format!("{p}: {a} -> {b}"))
        .collect();
    assert_eq!(
        changes,
        [
            "api#0.helm.parameters.image.repository: null -> \"registry.test/team/api\"",
            "api#0.helm.parameters.image.tag: null -> \"2.5.1\"",
            "batch#0.helm.parameters.image.name: null -> \"registry.test/team/batch\"",
            "batch#0.helm.parameters.image.tag: \"5.1.0\" -> \"5.2.0\"",
            "docs#0.kustomize.images.registry.test/web/docs: \"registry.test/web/docs:2.0.1\" -> \"registry.test/web/docs:2.1.0\"",
            "edge-proxy#0.plugin.env.PROXY_TAG: \"main-1a2b3c4\" -> \"main-5d6e7f8\"",
            "ops-tools#0.helm.parameters.exporter.image.tag: \"0.14.2\" -> \"0.15.1\"",
            "ops-tools#0.helm.valuesObject.toolbox.image.tag: \"1.2.0\" -> \"1.3.1\"",
            "shop-frontend#0.kustomize.images.registry.test/shop/frontend: \"registry.test/shop/frontend:2.3.0\" -> \"registry.test/shop/frontend:2.4.1\"",
            "web#0.kustomize.images.registry.test/team/nginx-unprivileged: null -> \"registry.test/team/nginx-unprivileged:1.28.1\"",
        ]
    );
}

/// A broken manifest, a malformed Application and an override file that does not parse
/// are reported with file and line; the good app is still updated; nothing else changes.
#[test]
fn broken_argo_cd_files_are_reported_and_the_rest_still_runs() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/good", &["1.0.0", "1.1.0"]);
    reg.push_tags("team/bad", &["1.0.0", "1.1.0"]);
    let (_c, cfg) = config(&reg);
    let tree = support::make_worktree(&[
        (
            "argocd/good.yaml",
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: good\nspec:\n  source:\n    path: apps/good\n    kustomize:\n      images:\n      - registry.test/team/good:1.0.0\n",
        ),
        (
            "argocd/broken.yaml",
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: [oops\n",
        ),
        (
            "argocd/nosource.yaml",
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: nosource\nspec:\n  project: default\n",
        ),
        (
            "argocd/badoverride.yaml",
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: bad\nspec:\n  source:\n    path: apps/bad\n    kustomize:\n      images:\n      - registry.test/team/bad:1.0.0\n",
        ),
        ("apps/good/kustomization.yaml", "resources: []\n"),
        ("apps/bad/kustomization.yaml", "resources: []\n"),
        ("apps/bad/.argocd-source-bad.yaml", "kustomize:\n  images: [x\n"),
    ]);
    let before = support::files(tree.path());
    let run = write(tree.path(), &cfg, 1);
    run.assert_stderr_contains("argocd/broken.yaml:4:1: not valid YAML");
    run.assert_stderr_contains("argocd/nosource.yaml:")
        .assert_stderr_contains("Application");
    run.assert_stderr_contains("apps/bad/.argocd-source-bad.yaml:");
    let after = support::files(tree.path());
    for (rel, bytes) in &after {
        if rel == "argocd/good.yaml" {
            assert!(String::from_utf8_lossy(bytes).contains("registry.test/team/good:1.1.0"));
        } else if !rel.starts_with(".git/") {
            assert_eq!(Some(bytes), before.get(rel), "{rel} changed");
        }
    }
}

/// An argocd-image-updater configuration that does not parse leaves its app alone (its
/// constraints are unknown); two images configured for the same value are refused.
#[test]
fn unreadable_or_clashing_configuration_changes_nothing() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.0.0", "1.1.0", "2.0.0"]);
    reg.push_tags("team/api", &["1.0.0", "1.1.0"]);
    reg.push_tags("team/ghost", &["1.0.0", "9.0.0"]);
    let (_c, cfg) = config(&reg);
    let app = |name: &str, annotations: &str, path: &str, tool: &str| {
        format!("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  annotations:\n{annotations}spec:\n  source:\n    path: {path}\n{tool}")
    };
    let prefix = "    argocd-image-updater.argoproj.io";
    let tree = support::make_worktree(&[
        (
            "argocd/web.yaml",
            &app(
                "web",
                &format!("{prefix}/image-list: registry.test/team/web:>=1.0\n"),
                "apps/web",
                "    kustomize:\n      images:\n      - registry.test/team/web:1.0.0\n",
            ),
        ),
        ("apps/web/kustomization.yaml", "resources: []\n"),
        (
            "argocd/api.yaml",
            &app(
                "api",
                &format!("{prefix}/image-list: api=registry.test/team/api, ghost=registry.test/team/ghost\n{prefix}/api.helm.image-name: image.repository\n{prefix}/api.helm.image-tag: image.tag\n"),
                "apps/api",
                "",
            ),
        ),
        ("apps/api/Chart.yaml", "apiVersion: v2\nname: api\nversion: 0.1.0\n"),
        ("apps/api/values.yaml", "image:\n  repository: registry.test/team/api\n  tag: 1.0.0\n"),
    ]);
    let before = support::files(tree.path());
    let run = write(tree.path(), &cfg, 1);
    run.assert_stderr_contains("argocd/web.yaml:");
    assert!(
        run.stderr
            .contains("are configured for the same value; neither is updated"),
        "{}",
        run.stderr
    );
    assert_eq!(support::files(tree.path()), before, "{}", run.stdout);
}

/// An `ImageUpdater` that is invalid (here an invalid `namePattern`, which AIU refuses as a
/// whole) updates nothing: the apps it was meant for are left alone, not updated under the
/// default policy, and the run says which and why; an app in another namespace moves on.
#[test]
fn an_invalid_image_updater_leaves_its_apps_alone() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.0.0", "1.1.0"]);
    reg.push_tags("team/other", &["1.0.0", "1.1.0"]);
    let (_c, cfg) = config(&reg);
    let app = |name: &str, image: &str| {
        let ns = if name == "web" { "argocd" } else { "team" };
        format!("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  source:\n    path: apps/{name}\n    kustomize:\n      images:\n      - registry.test/team/{image}:1.0.0\n")
    };
    let iu = "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\nmetadata:\n  name: broken\n  namespace: argocd\nspec:\n  applicationRefs:\n  - namePattern: 'web[' \n    images:\n    - alias: web\n      imageName: registry.test/team/web\n  - namePattern: 'we*'\n    images:\n    - alias: web\n      imageName: registry.test/team/web\n";
    let tree = support::make_worktree(&[
        (
            "argocd/apps.yaml",
            &format!("{}---\n{}", app("web", "web"), app("other", "other")),
        ),
        ("argocd/iu.yaml", iu),
        ("apps/web/kustomization.yaml", "resources: []\n"),
        ("apps/other/kustomization.yaml", "resources: []\n"),
    ]);
    let run = write(tree.path(), &cfg, 1);
    run.assert_stderr_contains("namePattern \"web[\" is invalid")
        .assert_stderr_contains("argocd/apps.yaml:4:9: Application web: ImageUpdater argocd/broken could select it but is invalid");
    let apps = std::fs::read_to_string(tree.path().join("argocd/apps.yaml")).unwrap();
    assert!(
        apps.contains("registry.test/team/web:1.0.0"),
        "web left alone:\n{apps}"
    );
    assert!(
        apps.contains("registry.test/team/other:1.1.0"),
        "other moves on:\n{apps}"
    );
}

/// `--shard I/N` splits the change sets; the shards never overlap and together equal one
/// unsharded run.
#[test]
fn shards_partition_the_plan_and_their_union_is_the_whole() {
    let reg = Registry::start(RegistryMode::Plain);
    seed(&reg);
    let (_c, cfg) = config(&reg);
    let repo = fixture().join("repo");
    let dir = repo.to_str().unwrap();
    let plan_of = |extra: &[&str]| -> (Vec<String>, Vec<String>) {
        let mut args = vec!["run", dir, "--config", &cfg, "--output", "json"];
        args.extend_from_slice(extra);
        let run = imagebump().args(&args).run();
        let report: Value = serde_json::from_str(&run.stdout).unwrap();
        let updates = report["updates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| format!("{}:{} {} -> {}", u["file"], u["line"], u["from"], u["to"]))
            .collect();
        let groups = report["changeSets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["group"].as_str().unwrap().to_string())
            .collect();
        (updates, groups)
    };
    let (mut whole, mut whole_groups) = plan_of(&[]);
    let n = 3;
    let mut union = Vec::new();
    let mut union_groups = Vec::new();
    for i in 0..n {
        let shard = format!("{i}/{n}");
        let (updates, groups) = plan_of(&["--shard", &shard]);
        for g in &groups {
            assert!(!union_groups.contains(g), "{g} in two shards");
        }
        union.extend(updates);
        union_groups.extend(groups);
    }
    whole.sort();
    union.sort();
    whole_groups.sort();
    union_groups.sort();
    assert_eq!(union, whole);
    assert_eq!(union_groups, whole_groups);
    assert!(
        whole_groups.len() >= 5,
        "a fixture worth splitting: {whole_groups:?}"
    );
    // Bad shard specs are usage errors.
    imagebump()
        .args(["run", dir, "--config", &cfg, "--shard", "3/3"])
        .code(2)
        .run();
}
