//! `scan` says what `run` does: a tree with every kind of reference `run` sets aside before
//! asking a registry (a `latest` or `alpine` tag under semver, a templated tag, a Flux-style
//! `6.x` range, a digest-only reference, `tag@digest`, numeric and regex strategies whose
//! current tag they cannot read, an alphabetical one, a pinned one, an ignored one, an
//! `ignoreTags` match) is scanned offline, then run as `run --dry-run --output json`
//! against a real `docker-registry`. Every reference `scan` lists has the status `run`
//! reports for it, worded alike; `managed` ones are exactly those `run` asked a registry
//! about.
//!
//! The registry is reached as `registry.test` (a `registries[]` entry sends it to the
//! loopback port).

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

use serde_json::Value;
use support::cli::imagebump;
use support::{tree, Registry, RegistryMode};

const HOST: &str = "registry.test";

const POLICIES: &str = "\
images:
  - match: registry.test/acme/num
    strategy: numeric
  - match: registry.test/acme/rx
    strategy: regex
    pattern: '^build-(?P<num>[0-9]+)$'
  - match: registry.test/acme/alpha
    strategy: alphabetical
  - match: registry.test/acme/ign
    ignoreTags: ['*-skip']
  - match: registry.test/acme/pin
    pin: true
  - match: registry.test/acme/off
    ignore: true
";

fn deployment(digest: &str) -> String {
    let images = [
        "registry.test/acme/web:latest",
        "alpine",
        "registry.test/acme/web:${version}",
        "registry.test/acme/web:6.x",
        &format!("registry.test/acme/web@{digest}"),
        &format!("registry.test/acme/web:1.0.0@{digest}"),
        "registry.test/acme/web:1.0.0",
        "registry.test/acme/web:1.1.0",
        "registry.test/acme/num:abc",
        "registry.test/acme/num:7",
        "registry.test/acme/rx:main-1",
        "registry.test/acme/rx:build-1",
        "registry.test/acme/alpha:aaa",
        "registry.test/acme/ign:1.0.0-skip",
        "registry.test/acme/pin:1.0.0",
        "registry.test/acme/off:1.0.0",
    ];
    let mut text = String::from(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n",
    );
    for (i, image) in images.iter().enumerate() {
        text.push_str(&format!("        - name: c{i}\n          image: {image}\n"));
    }
    text
}

const VALUES: &str = "\
latest:
  image:
    repository: registry.test/acme/web
    tag: latest
templated:
  image:
    repository: registry.test/acme/web
    tag: ${version}
range:
  image:
    repository: registry.test/acme/web
    tag: 6.x
fine:
  image:
    repository: registry.test/acme/web
    tag: 1.0.0
pinned:
  image:
    repository: registry.test/acme/web
    tag: 1.0.0 # imagebump: pin
";

const KUSTOMIZATION: &str = "\
resources: []
images:
  - name: registry.test/acme/web
    newTag: alpine
  - name: registry.test/acme/num
    newTag: '12'
";

/// A Flux image policy on a semver range, and the setter it marks with a range for a tag.
const FLUX: &str = "\
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: web
  namespace: flux-system
spec:
  image: registry.test/acme/web
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: web
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: web
  policy:
    semver:
      range: 6.x
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: flux-web
spec:
  template:
    spec:
      containers:
        - name: web
          image: registry.test/acme/web:6.x # {\"$imagepolicy\": \"flux-system:web\"}
        - name: web2
          image: registry.test/acme/web:6.0.0 # {\"$imagepolicy\": \"flux-system:web\"}
";

/// `file:line image` of a report entry.
fn key(entry: &Value) -> String {
    format!(
        "{}:{} {}",
        entry["file"].as_str().unwrap(),
        entry["line"],
        entry["image"].as_str().unwrap()
    )
}

/// `scan --output json`: each reference's status and reason.
fn scan_statuses(dir: &std::path::Path, cfg: &str) -> BTreeMap<String, (String, Value)> {
    let report = imagebump()
        .args(["scan", "--offline", "--output", "json"])
        .arg(dir)
        .args(["--config", cfg])
        .run()
        .json();
    let mut out = BTreeMap::new();
    for r in report["references"].as_array().unwrap() {
        let status = r["status"].as_str().unwrap().to_string();
        assert_eq!(r["managed"].as_bool().unwrap(), status == "managed", "{r}");
        let had = out.insert(key(r), (status, r["reason"].clone()));
        assert!(had.is_none(), "two references at {}", key(r));
    }
    out
}

/// `run --dry-run --output json`: each reference's status (`update` for an update row) and
/// reason.
fn run_statuses(dir: &std::path::Path, cfg: &str) -> BTreeMap<String, (String, Value)> {
    let report = imagebump()
        .args(["run", "--dry-run", "--output", "json"])
        .arg(dir)
        .args(["--config", cfg])
        .run()
        .json();
    let mut out = BTreeMap::new();
    for u in report["updates"].as_array().unwrap() {
        out.insert(key(u), ("update".to_string(), Value::Null));
    }
    for n in report["notUpdated"].as_array().unwrap() {
        let status = n["status"].as_str().unwrap().to_string();
        out.insert(key(n), (status, n["reason"].clone()));
    }
    out
}

#[test]
fn scan_status_is_what_run_does_with_each_reference() {
    let reg = Registry::start(RegistryMode::Plain);
    let digest = reg.push_tags_digest("acme/web", &["1.0.0", "1.1.0", "6.0.0", "6.1.0", "latest"]);
    reg.push_tags("acme/num", &["7", "8", "12"]);
    reg.push_tags("acme/rx", &["build-1", "build-2"]);
    reg.push_tags("acme/alpha", &["aaa", "bbb"]);
    reg.push_tags("acme/ign", &["1.0.0-skip", "1.0.0"]);
    reg.push_tags("acme/pin", &["1.0.0", "1.1.0"]);
    reg.push_tags("acme/off", &["1.0.0", "1.1.0"]);
    let dir = tree(&[
        ("manifests/deploy.yaml", deployment(&digest)),
        ("charts/values.yaml", VALUES.to_string()),
        ("overlay/kustomization.yaml", KUSTOMIZATION.to_string()),
        ("flux/web.yaml", FLUX.to_string()),
    ]);
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = cfg_dir.path().join("imagebump.yaml");
    let url = reg.base_url();
    fs::write(
        &cfg,
        format!("registries:\n  - prefix: {HOST}\n    url: {url}\n{POLICIES}"),
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap();

    let scanned = scan_statuses(dir.path(), cfg);
    let ran = run_statuses(dir.path(), cfg);
    let statuses: Vec<String> = scanned
        .iter()
        .map(|(k, (status, reason))| match reason.as_str() {
            Some(why) => format!("{k} {status}: {why}"),
            None => format!("{k} {status}"),
        })
        .collect();
    insta::assert_snapshot!("scan_verdicts_statuses", statuses.join("\n"));
    assert_eq!(
        scanned.keys().collect::<Vec<_>>(),
        ran.keys().collect::<Vec<_>>(),
        "scan and run list the same references"
    );
    for (k, (status, reason)) in &scanned {
        let (run_status, run_reason) = &ran[k];
        if status == "managed" {
            // Asked about: whatever the registry's answer made of it.
            assert!(
                ["update", "up-to-date", "held-back", "not-checked"].contains(&run_status.as_str()),
                "{k}: scan says managed, run says {run_status}: {run_reason}"
            );
        } else {
            assert_eq!(
                (status, reason),
                (run_status, run_reason),
                "{k}: scan and run disagree"
            );
        }
    }
}

// -------------------------------------------------------------------------------------------
// Image strings written as one-line block scalars or quoted
// -------------------------------------------------------------------------------------------

/// Two Argo CD Applications: `web` lists its images in every one-line style (and one over
/// two lines); `api`'s image is in its `.argocd-source-api.yaml` override, folded.
const APPS: &str = "\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://git.example.test/platform/gitops.git
    targetRevision: main
    path: apps/web
    kustomize:
      images:
        - >-
          registry.test/style/folded-strip:1.0.0
        - >
          registry.test/style/folded-clip:1.0.0
        - |-
          registry.test/style/literal-strip:1.0.0
        - |
          registry.test/style/literal-clip:1.0.0
        - 'registry.test/style/single:1.0.0'
        - \"registry.test/style/double:1.0.0\"
        - >-
          registry.test/style/two-lines:1.0.0
          extra
  destination:
    server: https://kubernetes.default.svc
    namespace: web
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: api
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://git.example.test/platform/gitops.git
    targetRevision: main
    path: apps/api
  destination:
    server: https://kubernetes.default.svc
    namespace: api
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: ops
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://git.example.test/platform/gitops.git
    targetRevision: main
    path: apps/ops
    helm:
      parameters:
        - name: exporter.image.repository
          value: registry.test/argo/exporter
        - name: exporter.image.tag
          value: |
            1.0.0
  destination:
    server: https://kubernetes.default.svc
    namespace: ops
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: edge
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://git.example.test/platform/gitops.git
    targetRevision: main
    path: apps/edge
    plugin:
      name: envsubst
      env:
        - name: PROXY_IMAGE
          value: >
            registry.test/argo/proxy:1.0.0
  destination:
    server: https://kubernetes.default.svc
    namespace: edge
";

const API_OVERRIDE: &str = "\
kustomize:
  images:
    - >-
      registry.test/style/override:1.0.0
";

fn app_dir(images: &[&str]) -> [(String, String); 2] {
    let mut deploy = String::from(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n",
    );
    for (i, image) in images.iter().enumerate() {
        deploy.push_str(&format!("        - name: c{i}\n          image: {image}\n"));
    }
    [
        (
            "kustomization.yaml".into(),
            "resources:\n  - deploy.yaml\n".into(),
        ),
        ("deploy.yaml".into(), deploy),
    ]
}

/// A kustomization whose `images:` set tags in each style, over manifests whose own
/// `image:` strings are folded (one line) and literal (two lines).
const KUSTOMIZE: &str = "\
resources:
  - deploy.yaml
images:
  - name: registry.test/kust/folded-strip
    newTag: >-
      1.0.0
  - name: registry.test/kust/literal-clip
    newTag: |
      1.0.0
  - name: registry.test/kust/single
    newTag: '1.0.0'
  - name: registry.test/kust/two-lines
    newTag: >-
      1.0.0
      extra
";

const KUSTOMIZE_DEPLOY: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: k
spec:
  template:
    spec:
      containers:
        - name: a
          image: registry.test/kust/folded-strip:0.1.0
        - name: b
          image: registry.test/kust/literal-clip:0.1.0
        - name: c
          image: registry.test/kust/single:0.1.0
        - name: d
          image: registry.test/kust/two-lines:0.1.0
        - name: e
          image: >-
            registry.test/kust/manifest:1.0.0
        - name: f
          image: |
            registry.test/kust/manifest-lines:1.0.0
            sidecar
";

const HELM_VALUES: &str = "\
folded:
  image: >-
    registry.test/helm/folded:1.0.0
split:
  image:
    repository: >
      registry.test/helm/split
    tag: |-
      1.0.0
lines:
  image:
    repository: registry.test/helm/lines
    tag: >-
      1.0.0
      2.0.0
";

/// Flux setters on block scalars: the marker is on the header line.
const FLUX_BLOCK: &str = "\
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: block
  namespace: flux-system
spec:
  image: registry.test/flux/block
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: block
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: block
  policy:
    semver:
      range: '>=1.0.0'
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: lines
  namespace: flux-system
spec:
  image: registry.test/flux/lines
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: lines
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: lines
  policy:
    semver:
      range: '>=1.0.0'
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: flux-block
spec:
  template:
    spec:
      containers:
        - name: block
          image: >- # {\"$imagepolicy\": \"flux-system:block\"}
            registry.test/flux/block:1.0.0
        - name: lines
          image: >- # {\"$imagepolicy\": \"flux-system:lines\"}
            registry.test/flux/lines:1.0.0
            extra
";

/// The image names of a tree's files whose values are edited, `from` → `to`.
const MOVED: &[&str] = &[
    "style/folded-strip",
    "style/folded-clip",
    "style/literal-strip",
    "style/literal-clip",
    "style/single",
    "style/double",
    "style/override",
    "kust/folded-strip",
    "kust/literal-clip",
    "kust/single",
    "kust/manifest",
    "helm/folded",
    "helm/split",
    "argo/exporter",
    "argo/proxy",
    "flux/block",
];

/// Not one line: listed, unmanaged, never edited.
const NOT_ONE_LINE: &[&str] = &[
    "style/two-lines",
    "kust/two-lines",
    "kust/manifest-lines",
    "helm/lines",
    "flux/lines",
];

fn block_tree() -> tempfile::TempDir {
    let mut files: Vec<(String, String)> = vec![
        ("argocd/apps.yaml".into(), APPS.into()),
        (
            "apps/api/.argocd-source-api.yaml".into(),
            API_OVERRIDE.into(),
        ),
        ("k/kustomization.yaml".into(), KUSTOMIZE.into()),
        ("k/deploy.yaml".into(), KUSTOMIZE_DEPLOY.into()),
        ("charts/values.yaml".into(), HELM_VALUES.into()),
        ("flux/block.yaml".into(), FLUX_BLOCK.into()),
    ];
    let web: Vec<String> = [
        "folded-strip",
        "folded-clip",
        "literal-strip",
        "literal-clip",
        "single",
        "double",
        "two-lines",
    ]
    .iter()
    .map(|n| format!("registry.test/style/{n}:0.1.0"))
    .collect();
    let web: Vec<&str> = web.iter().map(String::as_str).collect();
    for (name, text) in app_dir(&web) {
        files.push((format!("apps/web/{name}"), text));
    }
    // The app's own manifest deploys another image, which has no newer tag.
    for (name, text) in app_dir(&["registry.test/style/base:0.1.0"]) {
        files.push((format!("apps/api/{name}"), text));
    }
    tree(&files)
}

fn block_registry() -> Registry {
    let reg = Registry::start(RegistryMode::Plain);
    for repo in MOVED.iter().chain(NOT_ONE_LINE) {
        reg.push_tags(repo, &["0.1.0", "1.0.0", "1.1.0"]);
    }
    reg.push_tags("style/base", &["0.1.0"]);
    reg
}

fn block_config(reg: &Registry) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("imagebump.yaml");
    fs::write(
        &path,
        format!(
            "registries:\n  - prefix: {HOST}\n    url: {}\n",
            reg.base_url()
        ),
    )
    .unwrap();
    let p = path.to_str().unwrap().to_string();
    (dir, p)
}

#[test]
fn one_line_block_and_quoted_image_strings_move_in_their_bytes_only() {
    let reg = block_registry();
    let (_c, cfg) = block_config(&reg);
    let dir = block_tree();
    let before = support::texts(dir.path());
    let rendered_before = support::kustomize_build(&dir.path().join("k"));

    // scan: every one-line value is managed; the others are listed, unmanaged, with why
    // (and the manifests' images the entries override are "overridden by" them).
    let scanned = scan_statuses(dir.path(), &cfg);
    let (mut managed, mut not_one_line) = (Vec::new(), Vec::new());
    for (k, (status, reason)) in &scanned {
        let repo = k.split(' ').nth(1).unwrap();
        let repo = repo.trim_start_matches("registry.test/");
        let why = reason.as_str().unwrap_or_default();
        match status.as_str() {
            "managed" => managed.push(repo),
            "unmanaged" if why.starts_with("overridden by") => {}
            "unmanaged" if why.contains("a block scalar over several lines") => {
                not_one_line.push(repo.split(':').next().unwrap())
            }
            _ => panic!("{k}: {status}: {why}"),
        }
    }
    managed.sort();
    not_one_line.sort();
    let mut want_managed: Vec<&str> = MOVED.iter().copied().chain(["style/base"]).collect();
    want_managed.sort();
    assert_eq!(managed, want_managed);
    let mut want_lines = NOT_ONE_LINE.to_vec();
    want_lines.sort();
    assert_eq!(not_one_line, want_lines);

    imagebump()
        .args(["run", "--write"])
        .arg(dir.path())
        .args(["--config", &cfg])
        .run();
    let after = support::texts(dir.path());
    // Each edited value's bytes are its own: `NAME:1.0.0` became `NAME:1.1.0` (a
    // kustomization's `newTag` and a values `tag` hold the tag alone), nothing else moved.
    let mut want = before.clone();
    for text in want.values_mut() {
        for repo in MOVED {
            *text = text.replace(&format!("{repo}:1.0.0"), &format!("{repo}:1.1.0"));
        }
    }
    let tag_lines = [
        (
            "k/kustomization.yaml",
            "folded-strip\n    newTag: >-\n      1.0.0",
        ),
        (
            "k/kustomization.yaml",
            "literal-clip\n    newTag: |\n      1.0.0",
        ),
        ("k/kustomization.yaml", "single\n    newTag: '1.0.0'"),
        ("charts/values.yaml", "    tag: |-\n      1.0.0"),
        (
            "argocd/apps.yaml",
            "image.tag\n          value: |\n            1.0.0\n",
        ),
    ];
    for (file, old) in tag_lines {
        let text = want.get_mut(file).unwrap();
        assert!(text.contains(old), "{file}: {old:?}");
        *text = text.replace(old, &old.replace("1.0.0", "1.1.0"));
    }
    assert_eq!(after, want);

    // What kustomize deploys changed exactly so: each moved image's tag, nothing else
    // (the literal `|` keeps the line break it deploys).
    let rendered_after = support::kustomize_build(&dir.path().join("k"));
    let mut rendered_want = rendered_before.clone();
    for repo in [
        "kust/folded-strip",
        "kust/literal-clip",
        "kust/single",
        "kust/manifest",
    ] {
        let old = format!("registry.test/{repo}:1.0.0");
        assert!(
            rendered_want.contains(&old),
            "{old} not rendered:\n{rendered_before}"
        );
        rendered_want = rendered_want.replace(&old, &format!("registry.test/{repo}:1.1.0"));
    }
    assert_eq!(rendered_after, rendered_want);
    assert!(
        rendered_after.contains("- image: |\n          registry.test/kust/literal-clip:1.1.0\n"),
        "{rendered_after}"
    );

    // Nothing is left to do, and nothing is an error.
    let again = imagebump()
        .args(["run", "--dry-run"])
        .arg(dir.path())
        .args(["--config", &cfg])
        .run();
    again.assert_stdout_contains("0 update(s) proposed");
}
