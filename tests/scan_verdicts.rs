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
