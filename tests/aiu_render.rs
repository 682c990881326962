//! argocd-image-updater apps over kustomize, checked by a render oracle: the app's path is
//! rendered as Argo CD renders it (the real kustomize, `kubectl kustomize`, after Argo CD's
//! own overrides: `kustomize.images` from the Application and its `.argocd-source*.yaml`
//! files, applied as `kustomize edit set image` does) before and after `run --write`
//! against a real registry, and
//!
//! - the current version of each configured image is what the app renders (through
//!   patches, `images:` entries of the kustomizations it includes, `newName` entries);
//! - each reported update changes the render from exactly `from` to exactly `to`, and
//!   nothing else in the render changes;
//! - a second run proposes nothing;
//! - a write-back target that is not there, or an `ImageUpdater` that cannot be read,
//!   changes no file.

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
use std::path::Path;

use serde_json::Value;
use support::cli::{imagebump, Run};
use support::{kustomize_build, Registry, RegistryMode};

const IMAGE: &str = "registry.example.com/team/app";
const AIU: &str = "argocd-image-updater.argoproj.io";

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

/// An Application `name` in namespace `argocd` whose source path is `path`, with the
/// argocd-image-updater annotations `annotations` (`key: value` lines after the prefix).
fn application(name: &str, path: &str, annotations: &[&str]) -> String {
    let mut text = format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: argocd\n"
    );
    if !annotations.is_empty() {
        text.push_str("  annotations:\n");
        for a in annotations {
            text.push_str(&format!("    {AIU}/{a}\n"));
        }
    }
    text.push_str(&format!(
        "spec:\n  source:\n    repoURL: https://git.example.com/deploy.git\n    path: {path}\n"
    ));
    text
}

/// One update as the JSON report gives it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Update {
    /// Where the edit goes (`writtenTo`, else `file`).
    file: String,
    image: String,
    from: String,
    to: String,
}

fn update(file: &str, from: &str, to: &str) -> Update {
    Update {
        file: file.into(),
        image: IMAGE.into(),
        from: from.into(),
        to: to.into(),
    }
}

/// A repository, a real registry serving `team/app` at 1.0 … 4.0 (and `latest`), and the
/// Argo CD app whose render is judged.
struct Oracle {
    _reg: Registry,
    _cfg_dir: tempfile::TempDir,
    cfg: String,
    repo: tempfile::TempDir,
    /// The apps' names and source paths (each in Argo CD's namespace: its name is its key).
    apps: Vec<(&'static str, &'static str)>,
    /// Remote bases, as kustomize would fetch them: (URL as written, files of the base).
    remotes: Vec<(&'static str, Vec<(&'static str, String)>)>,
}

impl Oracle {
    fn new(files: &[(&str, String)], app: (&'static str, &'static str)) -> Oracle {
        Oracle::with_apps(files, &[app])
    }

    fn with_apps(files: &[(&str, String)], apps: &[(&'static str, &'static str)]) -> Oracle {
        let reg = Registry::start(RegistryMode::Plain);
        reg.push_tags("team/app", &["1.0", "2.0", "3.0", "4.0", "latest"]);
        let cfg_dir = tempfile::tempdir().unwrap();
        let cfg = cfg_dir.path().join("imagebump.yaml");
        fs::write(
            &cfg,
            format!(
                "registries:\n  - prefix: registry.example.com\n    url: {}\n",
                reg.base_url()
            ),
        )
        .unwrap();
        Oracle {
            _reg: reg,
            _cfg_dir: cfg_dir,
            cfg: cfg.to_string_lossy().to_string(),
            repo: support::tree(files),
            apps: apps.to_vec(),
            remotes: Vec::new(),
        }
    }

    fn dir(&self) -> &str {
        self.repo.path().to_str().unwrap()
    }

    /// `imagebump ARGS DIR --config CFG`, expecting exit code `code`.
    fn cli(&self, args: &[&str], code: i32) -> Run {
        let mut all = vec![args[0], self.dir(), "--config", &self.cfg];
        all.extend(&args[1..]);
        imagebump().args(all).code(code).run()
    }

    /// What Argo CD renders for each app, by name.
    fn renders(&self) -> BTreeMap<&'static str, String> {
        (self.apps.iter())
            .map(|(name, path)| (*name, self.render(name, path)))
            .collect()
    }

    /// What Argo CD renders for the app `name`: a copy of the repository where the app's
    /// path has Argo CD's `kustomize.images` applied and remote bases are local, rendered by
    /// the real kustomize.
    fn render(&self, name: &str, path: &str) -> String {
        let copy = support::copy_tree(self.repo.path());
        let dir = copy.path().join(path);
        for (url, files) in &self.remotes {
            let local = copy
                .path()
                .join(".remote")
                .join(url.replace(['/', ':', '?'], "_"));
            for (rel, text) in files {
                fs::create_dir_all(local.join(rel).parent().unwrap()).unwrap();
                fs::write(local.join(rel), text).unwrap();
            }
            // kustomize takes only relative paths to local bases.
            for k in support::texts(copy.path()).keys() {
                let file = copy.path().join(k);
                let up = "../".repeat(k.matches('/').count());
                let local = format!("{up}.remote/{}", url.replace(['/', ':', '?'], "_"));
                let text = fs::read_to_string(&file).unwrap();
                fs::write(&file, text.replace(url, &local)).unwrap();
            }
        }
        let images = argocd_images(&self.repo.path().join(path), name);
        set_images(&dir, &images);
        kustomize_build(&dir)
    }

    /// The updates a run reports (`--write` writes them), and the report.
    fn run(&self, mode: &str, code: i32) -> (Vec<Update>, Value) {
        let (updates, report) = self.run_by_app(mode, code);
        (updates.into_iter().map(|(_, u)| u).collect(), report)
    }

    /// The updates a run reports, each with its app (the change set's group).
    fn run_by_app(&self, mode: &str, code: i32) -> (Vec<(String, Update)>, Value) {
        let out = self.cli(&["run", mode, "--output", "json"], code);
        let report: Value = serde_json::from_str(&out.stdout).unwrap();
        let text = |u: &Value, k: &str| u[k].as_str().unwrap_or_default().to_string();
        let mut updates: Vec<(String, Update)> = (report["updates"].as_array().unwrap().iter())
            .map(|u| {
                let update = Update {
                    file: Some(text(u, "writtenTo"))
                        .filter(|w| !w.is_empty())
                        .unwrap_or_else(|| text(u, "file")),
                    image: text(u, "name"),
                    from: text(u, "from"),
                    to: text(u, "to"),
                };
                // The app is the group; a major update's change set adds " (major)".
                let group = text(u, "group");
                let app = group.strip_suffix(" (major)").unwrap_or(&group).to_string();
                (app, update)
            })
            .collect();
        updates.sort_by(|a, b| a.1.cmp(&b.1));
        (updates, report)
    }

    /// Runs `--write` and checks the oracle: the render moves exactly as reported, and a
    /// second run has nothing to do. Returns the updates.
    fn check(&self) -> Vec<Update> {
        let before = self.renders();
        let (updates, report) = self.run_by_app("--write", 0);
        let after = self.renders();
        for (app, _) in &updates {
            assert!(
                before.contains_key(app.as_str()),
                "{app} is no app\n{report:#}"
            );
        }
        for (app, render) in &before {
            let mut expected = render.clone();
            for (_, u) in updates.iter().filter(|(a, _)| a == app) {
                let old = format!("image: {}:{}\n", u.image, u.from);
                assert!(
                    expected.contains(&old),
                    "{app} does not render {old:?} that {u:?} moves\n{render}\n{report:#}"
                );
                expected = expected.replace(&old, &format!("image: {}:{}\n", u.image, u.to));
            }
            assert_eq!(after[app], expected, "{app}: {updates:?}\n{report:#}");
        }
        let (again, _) = self.run("--dry-run", 0);
        assert_eq!(again, [], "a second run has nothing to do");
        updates.into_iter().map(|(_, u)| u).collect()
    }

    /// The `reason` the scan gives the reference at `file`.
    fn reason(&self, file: &str) -> Option<String> {
        let out = self.cli(&["scan", "--output", "json"], 0);
        let report: Value = serde_json::from_str(&out.stdout).unwrap();
        let refs = report["references"].as_array().unwrap();
        let r = refs
            .iter()
            .find(|r| r["file"] == file)
            .unwrap_or_else(|| panic!("no reference in {file}: {report:#}"));
        r["reason"].as_str().map(str::to_string)
    }
}

/// The app's `kustomize.images` after its override files (`.argocd-source.yaml`, then
/// `.argocd-source-<name>.yaml`): a later list replaces an earlier one, as a JSON merge
/// patch does. (The fixtures' Applications set none of their own.)
fn argocd_images(dir: &Path, name: &str) -> Vec<String> {
    let mut images = Vec::new();
    for file in [
        ".argocd-source.yaml".to_string(),
        format!(".argocd-source-{name}.yaml"),
    ] {
        let Ok(text) = fs::read_to_string(dir.join(file)) else {
            continue;
        };
        let v: Value = yaml_serde::from_str(&text).unwrap();
        if let Some(list) = v.pointer("/kustomize/images").and_then(Value::as_array) {
            images = list
                .iter()
                .map(|i| i.as_str().unwrap().to_string())
                .collect();
        }
    }
    images
}

/// `kustomize edit set image IMAGE...` in `dir`: each `[old=]new[:tag]` sets the entry
/// named `old` (else `new`), or appends one.
fn set_images(dir: &Path, images: &[String]) {
    if images.is_empty() {
        return;
    }
    let file = dir.join("kustomization.yaml");
    let mut k: Value = yaml_serde::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    for image in images {
        let (old, new) = match image.split_once('=') {
            Some((o, n)) => (Some(o), n),
            None => (None, image.as_str()),
        };
        let (new_name, tag) = match new.rsplit_once(':').filter(|(_, t)| !t.contains('/')) {
            Some((n, t)) => (n, Some(t)),
            None => (new, None),
        };
        let name = old.unwrap_or(new_name);
        let list = k["images"].as_array().cloned().unwrap_or_default();
        let mut list: Vec<Value> = list;
        let at = list.iter().position(|e| e["name"] == name);
        let mut entry = at
            .map(|i| list[i].clone())
            .unwrap_or_else(|| serde_json::json!({ "name": name }));
        if old.is_some() {
            entry["newName"] = new_name.into();
        }
        if let Some(t) = tag {
            entry["newTag"] = t.into();
        }
        match at {
            Some(i) => list[i] = entry,
            None => list.push(entry),
        }
        k["images"] = list.into();
    }
    fs::write(&file, yaml_serde::to_string(&k).unwrap()).unwrap();
}

fn base(tag: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "base/deployment.yaml",
            deployment("app", &format!("{IMAGE}:{tag}")),
        ),
        (
            "base/kustomization.yaml",
            "resources: [deployment.yaml]\n".into(),
        ),
    ]
}

/// `latest` in the base, `1.0` in the environment's patch: the app renders `1.0`, which is
/// its current version, moved by the write-back target (the override file, or an `images:`
/// entry in the environment's kustomization); the base, overridden, stays.
#[test]
fn the_current_version_is_the_patched_one() {
    for (write_back, written) in [
        (vec![], "envs/prod/.argocd-source-prod.yaml"),
        (
            vec!["write-back-method: git", "write-back-target: kustomization"],
            "envs/prod/kustomization.yaml",
        ),
    ] {
        let mut annotations = vec!["image-list: app=registry.example.com/team/app"];
        annotations.extend(write_back);
        let mut files = base("latest");
        files.push((
            "envs/prod/kustomization.yaml",
            "resources: [../../base]\npatches:\n  - path: version.yaml\n".into(),
        ));
        files.push((
            "envs/prod/version.yaml",
            version_patch("app", &format!("{IMAGE}:1.0")),
        ));
        files.push((
            "argocd/prod.yaml",
            application("prod", "envs/prod", &annotations),
        ));
        let oracle = Oracle::new(&files, ("prod", "envs/prod"));
        assert_eq!(
            oracle.reason("base/deployment.yaml").as_deref(),
            Some("overridden by envs/prod/version.yaml:10")
        );
        assert_eq!(oracle.check(), [update(written, "1.0", "4.0")]);
        let patch = fs::read_to_string(oracle.repo.path().join("envs/prod/version.yaml")).unwrap();
        assert!(patch.contains(&format!("{IMAGE}:1.0")), "{patch}");
    }
}

/// `kustomization:foo` on an app whose path `bar` includes `foo`: `foo`'s `images:` entry
/// is what the app renders, and it is moved where it is.
#[test]
fn a_kustomization_target_the_app_includes() {
    let files = vec![
        ("bar/kustomization.yaml", "resources: [foo]\n".to_string()),
        (
            "bar/foo/kustomization.yaml",
            format!(
                "resources: [deployment.yaml]\nimages:\n  - name: {IMAGE}\n    newTag: \"2.0\"\n"
            ),
        ),
        (
            "bar/foo/deployment.yaml",
            deployment("app", &format!("{IMAGE}:latest")),
        ),
        (
            "argocd/bar.yaml",
            application(
                "bar",
                "bar",
                &[
                    "image-list: registry.example.com/team/app",
                    "write-back-method: git",
                    "write-back-target: kustomization:foo",
                ],
            ),
        ),
    ];
    let oracle = Oracle::new(&files, ("bar", "bar"));
    assert_eq!(
        oracle.check(),
        [update("bar/foo/kustomization.yaml", "2.0", "4.0")]
    );
    assert_eq!(
        fs::read_to_string(oracle.repo.path().join("bar/foo/kustomization.yaml")).unwrap(),
        format!("resources: [deployment.yaml]\nimages:\n  - name: {IMAGE}\n    newTag: \"4.0\"\n")
    );
}

const REMOTE: &str = "https://github.com/example/base//deploy?ref=v1";

/// An `images:` entry `name: api, newName: <the annotated image>, newTag: 1.0` over a
/// remote base: the entry says the version; it is moved there (a kustomization target), or
/// the override file sets the image the entry renamed.
#[test]
fn a_new_name_entry_over_a_remote_base() {
    for (write_back, written) in [
        (
            vec!["write-back-method: git", "write-back-target: kustomization"],
            "apps/api/kustomization.yaml",
        ),
        (vec![], "apps/api/.argocd-source-api.yaml"),
    ] {
        let mut annotations = vec!["image-list: registry.example.com/team/app"];
        annotations.extend(write_back);
        let kustomization = format!(
            "resources:\n  - {REMOTE}\nimages:\n  - name: api\n    newName: {IMAGE}\n    newTag: \"1.0\"\n"
        );
        let files = vec![
            ("apps/api/kustomization.yaml", kustomization.clone()),
            (
                "argocd/api.yaml",
                application("api", "apps/api", &annotations),
            ),
        ];
        let mut oracle = Oracle::new(&files, ("api", "apps/api"));
        oracle.remotes.push((
            REMOTE,
            vec![
                ("deployment.yaml", deployment("api", "api:latest")),
                (
                    "kustomization.yaml",
                    "resources: [deployment.yaml]\n".into(),
                ),
            ],
        ));
        assert_eq!(oracle.check(), [update(written, "1.0", "4.0")]);
        let k = fs::read_to_string(oracle.repo.path().join("apps/api/kustomization.yaml")).unwrap();
        if written.ends_with("kustomization.yaml") {
            assert_eq!(k, kustomization.replace("\"1.0\"", "\"4.0\""));
        } else {
            assert_eq!(k, kustomization);
        }
    }
}

/// `kustomization:<dir>` naming a directory without a kustomization, or one the app's path
/// does not include: an error at the annotation naming the path it resolved to; no file is
/// created or changed.
#[test]
fn a_kustomization_target_nothing_renders_is_an_error() {
    for (target, why) in [
        ("../missing", "envs/missing, which has no kustomization"),
        (
            "/other",
            "other, which the app's path envs/prod does not include: Argo CD would not render it",
        ),
    ] {
        let mut files = base("1.0");
        files.push((
            "envs/prod/kustomization.yaml",
            "resources: [../../base]\n".into(),
        ));
        files.push(("other/kustomization.yaml", "resources: []\n".into()));
        let annotation = format!("write-back-target: kustomization:{target}");
        files.push((
            "argocd/prod.yaml",
            application(
                "prod",
                "envs/prod",
                &[
                    "image-list: registry.example.com/team/app",
                    "write-back-method: git",
                    &annotation,
                ],
            ),
        ));
        let oracle = Oracle::new(&files, ("prod", "envs/prod"));
        let before = support::files(oracle.repo.path());
        let (updates, _) = oracle.run("--write", 1);
        assert_eq!(updates, []);
        let run = oracle.cli(&["run", "--dry-run"], 1);
        run.assert_stderr_contains(&format!(
            "error: argocd/prod.yaml:9:57: Application prod (annotations): write-back target kustomization:{target} resolves to {why}: not written"
        ));
        assert_eq!(support::files(oracle.repo.path()), before);
    }
}

/// An `ImageUpdater` whose `namePattern` is not a valid pattern (`app-[`): an error at the
/// ImageUpdater, and every Application in its namespace is left alone (it could have been
/// meant for any of them), not updated under another configuration; an app in another
/// namespace moves on.
#[test]
fn an_invalid_name_pattern_leaves_every_app_it_could_select_alone() {
    let app = |name: &str, ns: &str| {
        format!("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  source:\n    path: apps/{name}\n    kustomize:\n      images:\n      - registry.example.com/team/app:1.0\n")
    };
    let iu = "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\nmetadata:\n  name: broken\n  namespace: argocd\nspec:\n  applicationRefs:\n  - namePattern: 'app-['\n    images:\n    - alias: app\n      imageName: registry.example.com/team/app:<2\n";
    let files = vec![
        (
            "argocd/apps.yaml",
            format!(
                "{}---\n{}---\n{}",
                app("app-1", "argocd"),
                app("web", "argocd"),
                app("other", "team")
            ),
        ),
        ("argocd/iu.yaml", iu.to_string()),
        ("apps/app-1/kustomization.yaml", "resources: []\n".into()),
        ("apps/web/kustomization.yaml", "resources: []\n".into()),
        ("apps/other/kustomization.yaml", "resources: []\n".into()),
    ];
    let oracle = Oracle::new(&files, ("other", "apps/other"));
    let (updates, _) = oracle.run("--write", 1);
    assert_eq!(updates, [update("argocd/apps.yaml", "1.0", "4.0")]);
    let apps = fs::read_to_string(oracle.repo.path().join("argocd/apps.yaml")).unwrap();
    assert_eq!(apps.matches(&format!("{IMAGE}:1.0")).count(), 2, "{apps}");
    let run = oracle.cli(&["run", "--dry-run"], 1);
    run.assert_stderr_contains("namePattern \"app-[\" is invalid")
        .assert_stderr_contains(
            "Application app-1: ImageUpdater argocd/broken could select it but is invalid",
        )
        .assert_stderr_contains(
            "Application web: ImageUpdater argocd/broken could select it but is invalid",
        );
}

/// Environments over a base and a variant, each an app: dev renders the base (shared, so
/// its new version goes to dev's own target), staging and qa the variant's patch, prod its
/// own patch. Each app's current version is what it renders, and each render moves alone.
#[test]
fn environments_over_a_base_and_a_variant() {
    let override_file = [].as_slice();
    let kustomization = ["write-back-method: git", "write-back-target: kustomization"].as_slice();
    let mut files = base("1.0");
    files.push((
        "variants/eu/kustomization.yaml",
        "resources: [../../base]\npatches:\n  - path: version.yaml\n".into(),
    ));
    files.push((
        "variants/eu/version.yaml",
        version_patch("app", &format!("{IMAGE}:2.0")),
    ));
    let envs = [
        ("dev", "../../base", None, override_file),
        ("staging", "../../variants/eu", None, override_file),
        ("qa", "../../variants/eu", None, kustomization),
        ("prod", "../../variants/eu", Some("3.0"), override_file),
    ];
    let mut apps = Vec::new();
    for (name, over, patch, write_back) in envs {
        let dir: &'static str = Box::leak(format!("envs/{name}").into_boxed_str());
        let k: &'static str = Box::leak(format!("{dir}/kustomization.yaml").into_boxed_str());
        let mut text = format!("resources: [{over}]\n");
        if let Some(v) = patch {
            let p: &'static str = Box::leak(format!("{dir}/version.yaml").into_boxed_str());
            files.push((p, version_patch("app", &format!("{IMAGE}:{v}"))));
            text.push_str("patches:\n  - path: version.yaml\n");
        }
        files.push((k, text));
        let mut annotations = vec!["image-list: registry.example.com/team/app"];
        annotations.extend(write_back);
        let a: &'static str = Box::leak(format!("argocd/{name}.yaml").into_boxed_str());
        files.push((a, application(name, dir, &annotations)));
        apps.push((name, dir));
    }
    let oracle = Oracle::with_apps(&files, &apps);
    assert_eq!(
        oracle.check(),
        [
            update("envs/dev/.argocd-source-dev.yaml", "1.0", "4.0"),
            update("envs/prod/.argocd-source-prod.yaml", "3.0", "4.0"),
            update("envs/qa/kustomization.yaml", "2.0", "4.0"),
            update("envs/staging/.argocd-source-staging.yaml", "2.0", "4.0"),
        ]
    );
}

/// A component's patch in the app's path sets the version: it is the current one.
#[test]
fn a_component_patch_in_the_apps_path() {
    let mut files = base("latest");
    files.push((
        "components/pin/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n  - path: version.yaml\n".into(),
    ));
    files.push((
        "components/pin/version.yaml",
        version_patch("app", &format!("{IMAGE}:2.0")),
    ));
    files.push((
        "envs/prod/kustomization.yaml",
        "resources: [../../base]\ncomponents: [../../components/pin]\n".into(),
    ));
    files.push((
        "argocd/prod.yaml",
        application(
            "prod",
            "envs/prod",
            &["image-list: registry.example.com/team/app"],
        ),
    ));
    let oracle = Oracle::new(&files, ("prod", "envs/prod"));
    assert_eq!(
        oracle.check(),
        [update("envs/prod/.argocd-source-prod.yaml", "2.0", "4.0")]
    );
}

/// The override file's `kustomize.images` is what Argo CD renders over the path's own
/// `images:` entry: it is the current version and moves; the entry, left alone, names it.
#[test]
fn the_override_file_over_an_images_entry() {
    let mut files = base("latest");
    files.push((
        "envs/prod/kustomization.yaml",
        format!("resources: [../../base]\nimages:\n  - name: {IMAGE}\n    newTag: \"1.0\"\n"),
    ));
    files.push((
        "envs/prod/.argocd-source-prod.yaml",
        format!("kustomize:\n  images:\n  - {IMAGE}:2.0\n"),
    ));
    files.push((
        "argocd/prod.yaml",
        application(
            "prod",
            "envs/prod",
            &["image-list: registry.example.com/team/app"],
        ),
    ));
    let oracle = Oracle::new(&files, ("prod", "envs/prod"));
    assert_eq!(
        oracle.reason("envs/prod/kustomization.yaml").as_deref(),
        Some("not what Argo CD renders for app prod: it renders envs/prod/.argocd-source-prod.yaml:3")
    );
    assert_eq!(
        oracle.check(),
        [update("envs/prod/.argocd-source-prod.yaml", "2.0", "4.0")]
    );
}

/// `helmvalues:<file>` naming a values file the app does not render (not its chart's
/// `values.yaml`, not in `helm.valueFiles`), there or not: an error at the annotation
/// naming the file it resolved to; nothing is created or changed.
#[test]
fn a_helmvalues_target_the_app_does_not_render_is_an_error() {
    for target in ["values-dev.yaml", "missing.yaml"] {
        let annotation = format!("write-back-target: helmvalues:{target}");
        let mut app = application(
            "web",
            "apps/web",
            &[
                "image-list: registry.example.com/team/app",
                "write-back-method: git",
                &annotation,
            ],
        );
        app.push_str("    helm:\n      valueFiles: [values-prod.yaml]\n");
        let values = format!("image:\n  name: {IMAGE}\n  tag: \"1.0\"\n");
        let files = vec![
            ("argocd/web.yaml", app),
            (
                "apps/web/Chart.yaml",
                "apiVersion: v2\nname: web\nversion: 0.1.0\n".into(),
            ),
            ("apps/web/values-prod.yaml", values.clone()),
            ("apps/web/values-dev.yaml", values),
        ];
        let oracle = Oracle::new(&files, ("web", "apps/web"));
        let before = support::files(oracle.repo.path());
        let (updates, _) = oracle.run("--write", 1);
        assert_eq!(updates, []);
        let run = oracle.cli(&["run", "--dry-run"], 1);
        run.assert_stderr_contains(&format!(
            "error: argocd/web.yaml:9:57: Application web (annotations): write-back target helmvalues:{target} resolves to apps/web/{target}, which is not among the values files the app renders"
        ));
        assert_eq!(support::files(oracle.repo.path()), before);
    }
}

/// Two Deployments of the image in one app: patched to one version, both are the current
/// version and move together; patched to two, the app is left alone with an error naming
/// both places (one `from` cannot be reported for both).
#[test]
fn an_image_the_app_renders_twice() {
    for (worker, moves) in [("1.0", true), ("2.0", false)] {
        let mut files = base("latest");
        files[0].1.push_str(&format!(
            "---\n{}",
            deployment("worker", &format!("{IMAGE}:latest"))
        ));
        files.push((
            "envs/prod/kustomization.yaml",
            "resources: [../../base]\npatches:\n  - path: app.yaml\n  - path: worker.yaml\n".into(),
        ));
        files.push((
            "envs/prod/app.yaml",
            version_patch("app", &format!("{IMAGE}:1.0")),
        ));
        files.push((
            "envs/prod/worker.yaml",
            version_patch("worker", &format!("{IMAGE}:{worker}")),
        ));
        files.push((
            "argocd/prod.yaml",
            application(
                "prod",
                "envs/prod",
                &["image-list: registry.example.com/team/app"],
            ),
        ));
        let oracle = Oracle::new(&files, ("prod", "envs/prod"));
        if moves {
            assert_eq!(
                oracle.check(),
                [update("envs/prod/.argocd-source-prod.yaml", "1.0", "4.0")]
            );
            continue;
        }
        let before = support::files(oracle.repo.path());
        let (updates, _) = oracle.run("--write", 1);
        assert_eq!(updates, []);
        oracle.cli(&["run", "--dry-run"], 1).assert_stderr_contains(
            "error: argocd/prod.yaml:4:9: Application prod: image registry.example.com/team/app: the app's path envs/prod renders it at several versions (envs/prod/app.yaml:10 (1.0), envs/prod/worker.yaml:10 (2.0))",
        );
        assert_eq!(support::files(oracle.repo.path()), before);
    }
}

/// A JSON 6902 patch sets the image in the app's path: its value is the current version
/// (not the base's), and the app's write-back (Argo CD's `kustomize.images`, which renders
/// after every patch) moves it.
#[test]
fn a_json_6902_patch_in_the_apps_path_is_the_current_version() {
    let op = format!(
        "- op: replace\n  path: /spec/template/spec/containers/0/image\n  value: {IMAGE}:2.0\n"
    );
    let inline: String = op.lines().map(|l| format!("      {l}\n")).collect();
    let mut files = base("1.0");
    files.push((
        "envs/prod/kustomization.yaml",
        format!("resources: [../../base]\npatches:\n  - target: {{kind: Deployment, name: app}}\n    patch: |-\n{inline}"),
    ));
    files.push((
        "argocd/prod.yaml",
        application(
            "prod",
            "envs/prod",
            &["image-list: registry.example.com/team/app"],
        ),
    ));
    let oracle = Oracle::new(&files, ("prod", "envs/prod"));
    assert_eq!(
        oracle.check(),
        [update("envs/prod/.argocd-source-prod.yaml", "2.0", "4.0")]
    );
}

/// A version set where imagebump cannot edit it (a JSON 6902 value in a `.json` file) is no
/// current version to report from: an error naming the place, and nothing is written.
#[test]
fn a_version_set_where_imagebump_cannot_edit_it_is_named() {
    let mut files = base("1.0");
    files.push((
        "envs/prod/kustomization.yaml",
        "resources: [../../base]\npatches:\n  - target: {kind: Deployment, name: app}\n    path: image.json\n".into(),
    ));
    files.push((
        "envs/prod/image.json",
        format!("[{{\"op\": \"replace\", \"path\": \"/spec/template/spec/containers/0/image\", \"value\": \"{IMAGE}:2.0\"}}]\n"),
    ));
    files.push((
        "argocd/prod.yaml",
        application(
            "prod",
            "envs/prod",
            &["image-list: registry.example.com/team/app"],
        ),
    ));
    let oracle = Oracle::new(&files, ("prod", "envs/prod"));
    let before = support::files(oracle.repo.path());
    let (updates, _) = oracle.run("--write", 1);
    assert_eq!(updates, []);
    oracle
        .cli(&["run", "--dry-run"], 1)
        .assert_stderr_contains("Application prod: image registry.example.com/team/app: the app's path envs/prod renders the version envs/prod/image.json:1 sets, which imagebump cannot edit");
    assert_eq!(support::files(oracle.repo.path()), before);
}

/// An `ImageUpdater` (not annotations) configuring an app over a patched overlay, written
/// back to a kustomization: the patched version is the current one.
#[test]
fn an_image_updater_app_over_a_patched_overlay() {
    let iu = format!("apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\nmetadata:\n  name: platform\n  namespace: argocd\nspec:\n  writeBackConfig:\n    method: git\n    gitConfig:\n      writeBackTarget: kustomization\n  applicationRefs:\n  - namePattern: 'pro*'\n    images:\n    - alias: app\n      imageName: {IMAGE}\n");
    let mut files = base("latest");
    files.push((
        "envs/prod/kustomization.yaml",
        "resources: [../../base]\npatches:\n  - path: version.yaml\n".into(),
    ));
    files.push((
        "envs/prod/version.yaml",
        version_patch("app", &format!("{IMAGE}:2.0")),
    ));
    files.push(("argocd/prod.yaml", application("prod", "envs/prod", &[])));
    files.push(("argocd/iu.yaml", iu));
    let oracle = Oracle::new(&files, ("prod", "envs/prod"));
    assert_eq!(
        oracle.check(),
        [update("envs/prod/kustomization.yaml", "2.0", "4.0")]
    );
}

/// A Helm app whose `valueFiles` do not set the image: Helm still reads the chart's own
/// `values.yaml` first, so its tag is the current version, and the override file's
/// parameters (which Helm applies last) move it.
#[test]
fn a_helm_apps_chart_values_under_its_value_files() {
    let mut app = application(
        "web",
        "apps/web",
        &["image-list: registry.example.com/team/app"],
    );
    app.push_str("    helm:\n      valueFiles: [values-prod.yaml]\n");
    let files = vec![
        ("argocd/web.yaml", app),
        (
            "apps/web/Chart.yaml",
            "apiVersion: v2\nname: web\nversion: 0.1.0\n".into(),
        ),
        (
            "apps/web/values.yaml",
            format!("image:\n  name: {IMAGE}\n  tag: \"2.0\"\n"),
        ),
        ("apps/web/values-prod.yaml", "replicaCount: 3\n".into()),
    ];
    let oracle = Oracle::new(&files, ("web", "apps/web"));
    let (updates, report) = oracle.run("--write", 0);
    assert_eq!(
        updates,
        [update("apps/web/.argocd-source-web.yaml", "2.0", "4.0")],
        "{report:#}"
    );
    assert_eq!(
        fs::read_to_string(oracle.repo.path().join("apps/web/.argocd-source-web.yaml")).unwrap(),
        format!("helm:\n  parameters:\n  - name: image.name\n    value: {IMAGE}\n    forcestring: true\n  - name: image.tag\n    value: \"4.0\"\n    forcestring: true\n")
    );
}

/// An app without argocd-image-updater whose override file sets the image over its base:
/// Argo CD renders the override, so the override moves and the base, which no render
/// reads, is left alone naming it.
#[test]
fn an_override_file_over_the_base_of_a_plain_app() {
    let mut files = base("1.0");
    files.push((
        "envs/prod/kustomization.yaml",
        "resources: [../../base]\n".into(),
    ));
    files.push((
        "envs/prod/.argocd-source-prod.yaml",
        format!("kustomize:\n  images:\n  - {IMAGE}:2.0\n"),
    ));
    files.push(("argocd/prod.yaml", application("prod", "envs/prod", &[])));
    let oracle = Oracle::new(&files, ("prod", "envs/prod"));
    assert_eq!(
        oracle.reason("base/deployment.yaml").as_deref(),
        Some("overridden by envs/prod/.argocd-source-prod.yaml:3 (kustomize.images)")
    );
    assert_eq!(
        oracle.check(),
        [update("envs/prod/.argocd-source-prod.yaml", "2.0", "4.0")]
    );
}

/// An app without argocd-image-updater whose `helm.parameters` set the tag its chart's
/// `values.yaml` holds: Helm renders the parameter, so it moves and the values file, left
/// alone, names it.
#[test]
fn helm_parameters_over_the_values_of_a_plain_app() {
    let mut app = application("web", "apps/web", &[]);
    app.push_str(&format!("    helm:\n      parameters:\n      - name: image.repository\n        value: {IMAGE}\n      - name: image.tag\n        value: \"2.0\"\n"));
    let values = format!("image:\n  repository: {IMAGE}\n  tag: \"1.0\"\n");
    let files = vec![
        ("argocd/web.yaml", app.clone()),
        (
            "apps/web/Chart.yaml",
            "apiVersion: v2\nname: web\nversion: 0.1.0\n".into(),
        ),
        ("apps/web/values.yaml", values.clone()),
    ];
    let oracle = Oracle::new(&files, ("web", "apps/web"));
    assert_eq!(
        oracle.reason("apps/web/values.yaml").as_deref(),
        Some("overridden by argocd/web.yaml (helm.parameters)")
    );
    let (updates, _) = oracle.run("--write", 0);
    assert_eq!(updates, [update("argocd/web.yaml", "2.0", "4.0")]);
    let read = |f: &str| fs::read_to_string(oracle.repo.path().join(f)).unwrap();
    assert_eq!(read("apps/web/values.yaml"), values);
    assert_eq!(read("argocd/web.yaml"), app.replace("\"2.0\"", "\"4.0\""));
}

/// An `ImageUpdater`'s `writeBackTarget` naming a directory without a kustomization: the
/// error is at the Application and names the ImageUpdater; nothing is written.
#[test]
fn an_image_updaters_missing_kustomization_target_is_an_error() {
    let iu = format!("apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\nmetadata:\n  name: platform\n  namespace: argocd\nspec:\n  writeBackConfig:\n    method: git\n    gitConfig:\n      writeBackTarget: kustomization:../missing\n  applicationRefs:\n  - namePattern: prod\n    images:\n    - alias: app\n      imageName: {IMAGE}\n");
    let mut files = base("1.0");
    files.push((
        "envs/prod/kustomization.yaml",
        "resources: [../../base]\n".into(),
    ));
    files.push(("argocd/prod.yaml", application("prod", "envs/prod", &[])));
    files.push(("argocd/iu.yaml", iu));
    let oracle = Oracle::new(&files, ("prod", "envs/prod"));
    let before = support::files(oracle.repo.path());
    let (updates, _) = oracle.run("--write", 1);
    assert_eq!(updates, []);
    oracle.cli(&["run", "--dry-run"], 1).assert_stderr_contains(
        "error: argocd/prod.yaml:4:9: Application prod (ImageUpdater argocd/platform): write-back target kustomization:../missing resolves to envs/missing, which has no kustomization: not written",
    );
    assert_eq!(support::files(oracle.repo.path()), before);
}

/// `kustomization:foo` on an app whose path `bar` includes `foo`, where `foo`'s entry would
/// not set what `bar` renders (a patch in `bar` sets it after `foo`; or the Deployment is
/// one `foo` does not include): an error naming where the version is set; nothing changes.
#[test]
fn a_kustomization_target_below_what_sets_the_version_is_an_error() {
    let entry = format!("images:\n  - name: {IMAGE}\n    newTag: \"2.0\"\n");
    let patched = vec![
        (
            "bar/kustomization.yaml",
            "resources: [foo]\npatches:\n  - path: version.yaml\n".to_string(),
        ),
        (
            "bar/version.yaml",
            version_patch("app", &format!("{IMAGE}:3.0")),
        ),
        (
            "bar/foo/kustomization.yaml",
            format!("resources: [deployment.yaml]\n{entry}"),
        ),
        (
            "bar/foo/deployment.yaml",
            deployment("app", &format!("{IMAGE}:1.0")),
        ),
    ];
    let beside = vec![
        (
            "bar/kustomization.yaml",
            "resources: [foo, ../base]\n".to_string(),
        ),
        (
            "bar/foo/kustomization.yaml",
            format!("resources: []\n{entry}"),
        ),
        (
            "base/kustomization.yaml",
            "resources: [deployment.yaml]\n".into(),
        ),
        (
            "base/deployment.yaml",
            deployment("app", &format!("{IMAGE}:1.0")),
        ),
    ];
    for (mut files, set_in) in [
        (patched, "bar/version.yaml"),
        (beside, "base/deployment.yaml"),
    ] {
        files.push((
            "argocd/bar.yaml",
            application(
                "bar",
                "bar",
                &[
                    "image-list: registry.example.com/team/app",
                    "write-back-method: git",
                    "write-back-target: kustomization:foo",
                ],
            ),
        ));
        let oracle = Oracle::new(&files, ("bar", "bar"));
        let before = support::files(oracle.repo.path());
        let (updates, _) = oracle.run("--write", 1);
        assert_eq!(updates, []);
        oracle.cli(&["run", "--dry-run"], 1).assert_stderr_contains(&format!(
            "error: argocd/bar.yaml:9:57: Application bar (annotations): write-back target kustomization:foo resolves to bar/foo, which does not render {set_in}, where the version the app renders is set"
        ));
        assert_eq!(support::files(oracle.repo.path()), before);
    }
}

/// `helmvalues:<file>` under the values file (or `helm.parameters`) the version is read
/// from: Helm reads that one after the target, so writing the target changes nothing it
/// renders; an error naming both, nothing written.
#[test]
fn a_helmvalues_target_under_the_versions_file_is_an_error() {
    let mut app = application(
        "web",
        "apps/web",
        &[
            "image-list: registry.example.com/team/app",
            "write-back-method: git",
            "write-back-target: helmvalues:values-base.yaml",
        ],
    );
    app.push_str("    helm:\n      valueFiles: [values-base.yaml, values-prod.yaml]\n");
    let files = vec![
        ("argocd/web.yaml", app),
        (
            "apps/web/Chart.yaml",
            "apiVersion: v2\nname: web\nversion: 0.1.0\n".into(),
        ),
        ("apps/web/values-base.yaml", "replicaCount: 1\n".into()),
        (
            "apps/web/values-prod.yaml",
            format!("image:\n  name: {IMAGE}\n  tag: \"1.0\"\n"),
        ),
    ];
    let oracle = Oracle::new(&files, ("web", "apps/web"));
    let before = support::files(oracle.repo.path());
    let (updates, _) = oracle.run("--write", 1);
    assert_eq!(updates, []);
    oracle.cli(&["run", "--dry-run"], 1).assert_stderr_contains(
        "error: argocd/web.yaml:9:57: Application web (annotations): write-back target helmvalues:values-base.yaml resolves to apps/web/values-base.yaml, under apps/web/values-prod.yaml, which sets the version the app renders after it",
    );
    assert_eq!(support::files(oracle.repo.path()), before);
}

/// `kustomization:../../base`, a base another environment renders too: an entry there
/// would move both, so it is an error naming the other path; with `scan.sharedBases:
/// in-place` (the operator accepts edits of shared bases) the base's entry moves, and the
/// app's render with it. (prod, no app, gets its own entry either way.)
#[test]
fn a_kustomization_target_other_paths_render() {
    let mut files = base("1.0");
    for env in ["envs/staging", "envs/prod"] {
        let k: &'static str = Box::leak(format!("{env}/kustomization.yaml").into_boxed_str());
        files.push((k, "resources: [../../base]\n".into()));
    }
    files.push((
        "argocd/staging.yaml",
        application(
            "staging",
            "envs/staging",
            &[
                "image-list: registry.example.com/team/app",
                "write-back-method: git",
                "write-back-target: kustomization:../../base",
            ],
        ),
    ));
    let oracle = Oracle::new(&files, ("staging", "envs/staging"));
    let (updates, _) = oracle.run("--dry-run", 1);
    assert_eq!(
        updates,
        [update("envs/prod/kustomization.yaml", "1.0", "4.0")]
    );
    oracle.cli(&["run", "--dry-run"], 1).assert_stderr_contains(
        "error: argocd/staging.yaml:9:57: Application staging (annotations): write-back target kustomization:../../base resolves to base, which envs/prod render too: an entry there would move them as well",
    );
    let mut cfg = fs::read_to_string(&oracle.cfg).unwrap();
    cfg.push_str("scan:\n  sharedBases: in-place\n");
    fs::write(&oracle.cfg, cfg).unwrap();
    assert_eq!(
        oracle.check(),
        [update("base/kustomization.yaml", "1.0", "4.0")]
    );
}

/// `helmvalues:../common/values.yaml`, a values file another app reads too: a value written
/// there would move both, so it is an error naming the other app; with `scan.sharedBases:
/// in-place` it is written there.
#[test]
fn a_helmvalues_target_other_apps_read() {
    let chart = "apiVersion: v2\nname: web\nversion: 0.1.0\n".to_string();
    let app = |name: &str, annotations: &[&str]| {
        let mut text = application(name, &format!("apps/{name}"), annotations);
        text.push_str("    helm:\n      valueFiles: [../common/values.yaml]\n");
        text
    };
    let values = format!("image:\n  name: {IMAGE}\n  tag: \"1.0\"\n");
    let files = vec![
        (
            "argocd/a.yaml",
            app(
                "a",
                &[
                    "image-list: registry.example.com/team/app",
                    "write-back-method: git",
                    "write-back-target: helmvalues:../common/values.yaml",
                ],
            ),
        ),
        ("argocd/b.yaml", app("b", &[])),
        ("apps/a/Chart.yaml", chart.clone()),
        ("apps/b/Chart.yaml", chart),
        ("apps/common/values.yaml", values.clone()),
    ];
    let oracle = Oracle::new(&files, ("a", "apps/a"));
    let before = support::files(oracle.repo.path());
    let (updates, _) = oracle.run("--write", 1);
    assert_eq!(updates, []);
    oracle.cli(&["run", "--dry-run"], 1).assert_stderr_contains(
        "error: argocd/a.yaml:9:57: Application a (annotations): write-back target helmvalues:../common/values.yaml resolves to apps/common/values.yaml, which apps b read too",
    );
    assert_eq!(support::files(oracle.repo.path()), before);
    let mut cfg = fs::read_to_string(&oracle.cfg).unwrap();
    cfg.push_str("scan:\n  sharedBases: in-place\n");
    fs::write(&oracle.cfg, cfg).unwrap();
    let (updates, _) = oracle.run("--write", 0);
    assert_eq!(updates, [update("apps/common/values.yaml", "1.0", "4.0")]);
    assert_eq!(
        fs::read_to_string(oracle.repo.path().join("apps/common/values.yaml")).unwrap(),
        values.replace("1.0", "4.0")
    );
}
