//! Flux `HelmRelease` values (fixtures/helm-releases): the images of a release's
//! `spec.values`, of a values file a `configMapGenerator` turns into its `valuesFrom`
//! ConfigMap, and of a ConfigMap's inline `values.yaml` are read with the Helm values
//! conventions and edited where they are written. Against a real registry, `run --dry-run`
//! proposes exactly the expected diff and `run --write` changes only the value bytes; the
//! real kustomize renders exactly those values changed.

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
use support::{kustomize_build as render, Registry, RegistryMode};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/helm-releases/repo")
}

const LEAVES: &[&str] = &["apps/cache", "apps/podinfo"];

fn seeded_registry() -> Registry {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("stefanprodan/podinfo", &["6.5.0", "6.5.4"]);
    reg.push_tags("library/redis", &["7.2.0", "7.2.5"]);
    reg.push_tags("acme/cache", &["1.0.0", "1.0.3"]);
    reg.push_tags("acme/worker", &["2.0.0", "2.1.0"]);
    reg.push_tags("acme/proxy", &["v3.1.0", "v3.2.0"]);
    reg
}

/// `imagebump.yaml` pointing ghcr.io and docker.io at `reg`; chart versions are not this
/// file's subject (their HelmRepository is not in the fixture).
fn config(reg: &Registry) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("imagebump.yaml");
    let mut text = String::from("helm:\n  charts: false\nregistries:\n");
    for prefix in ["ghcr.io", "docker.io"] {
        text.push_str(&format!(
            "  - prefix: {prefix}\n    url: {}\n",
            reg.base_url()
        ));
    }
    fs::write(&path, text).unwrap();
    let p = path.to_string_lossy().to_string();
    (dir, p)
}

fn run(dir: &Path, cfg: &str, mode: &str) -> Run {
    imagebump()
        .args(["run", dir.to_str().unwrap(), "--config", cfg, mode])
        .filter_path(dir, "[REPO]")
        .run()
}

/// The lines of each leaf's rendering that differ between `before` and `after` (the
/// renderings have the same lines otherwise), as (old, new).
fn changed_lines(before: &[String], after: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (b, a) in before.iter().zip(after) {
        assert_eq!(b.lines().count(), a.lines().count(), "{b}\n---\n{a}");
        for (x, y) in b.lines().zip(a.lines()) {
            if x != y {
                out.push((x.trim().to_string(), y.trim().to_string()));
            }
        }
    }
    out
}

#[test]
fn scan_lists_every_image_of_helm_release_values() {
    let run = imagebump()
        .args(["scan", fixture().to_str().unwrap()])
        .args(["--config", "/dev/null"])
        .run();
    let rows: Vec<String> = run
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        rows,
        [
            "LOCATION IMAGE CURRENT POLICY STATUS",
            "apps/cache/release.yaml:12 ghcr.io/acme/cache 1.0.0 semver (built-in) managed",
            "apps/cache/release.yaml:21 ghcr.io/acme/worker 2.0.0 semver (built-in) managed",
            "apps/cache/release.yaml:35 ghcr.io/acme/proxy v3.1.0 semver (built-in) managed",
            "apps/podinfo/podinfo-values.yaml:6 docker.io/library/redis 7.2.0 semver (built-in) managed",
            "apps/podinfo/release.yaml:20 ghcr.io/stefanprodan/podinfo 6.5.0 semver (built-in) managed",
            "",
            "5 references in 5 files (5 managed, 0 unmanaged)",
        ],
        "{run}"
    );
}

#[test]
fn run_edits_each_value_where_it_is_written_and_the_render_changes_exactly() {
    let reg = seeded_registry();
    let (_c, cfg) = config(&reg);
    let repo = support::copy_tree(&fixture());
    let before = support::files(repo.path());
    let rendered: Vec<String> = LEAVES
        .iter()
        .map(|l| render(&repo.path().join(l)))
        .collect();

    let dry = run(repo.path(), &cfg, "--dry-run");
    assert_eq!(
        support::files(repo.path()),
        before,
        "a dry run writes nothing"
    );
    // Each value is edited where it is written: the release's values, the ConfigMap's
    // values string, the generated ConfigMap's values file.
    for hunk in [
        "-    image: 'ghcr.io/acme/cache:1.0.0'\n+    image: 'ghcr.io/acme/cache:1.0.3'\n",
        "-      image: {repository: ghcr.io/acme/worker, tag: 2.0.0}\n+      image: {repository: ghcr.io/acme/worker, tag: 2.1.0}\n",
        "-        tag: v3.1.0\n+        tag: v3.2.0\n",
        "+++ b/apps/podinfo/podinfo-values.yaml\n@@ -3,4 +3,4 @@\n   enabled: true\n   image:\n     repository: docker.io/library/redis\n-    tag: 7.2.0\n+    tag: 7.2.5\n",
        "-      tag: \"6.5.0\" # the chart's default is older\n+      tag: \"6.5.4\" # the chart's default is older\n",
    ] {
        dry.assert_stdout_contains(hunk);
    }
    let removed = (dry.stdout.lines()).filter(|l| l.starts_with('-') && !l.starts_with("---"));
    assert_eq!(removed.count(), 5, "{}", dry.stdout);
    dry.assert_stdout_contains(
        "5 update(s) proposed in 3 file(s); 5 references: 5 to update; 5 repositories asked",
    );

    run(repo.path(), &cfg, "--write");
    // Only the value bytes change.
    let mut want = support::texts(repo.path());
    for (file, old, new) in [
        ("apps/cache/release.yaml", "cache:1.0.0", "cache:1.0.3"),
        ("apps/cache/release.yaml", "tag: 2.0.0", "tag: 2.1.0"),
        ("apps/cache/release.yaml", "tag: v3.1.0", "tag: v3.2.0"),
        (
            "apps/podinfo/podinfo-values.yaml",
            "tag: 7.2.0",
            "tag: 7.2.5",
        ),
        ("apps/podinfo/release.yaml", "\"6.5.0\" #", "\"6.5.4\" #"),
    ] {
        let text = want.get_mut(file).unwrap();
        assert!(text.contains(new), "{file}: {new}");
        *text = text.replace(new, old);
    }
    let before: std::collections::BTreeMap<String, String> = before
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8(v).unwrap()))
        .collect();
    assert_eq!(want, before);

    // What kustomize renders changes in exactly those values.
    let after: Vec<String> = LEAVES
        .iter()
        .map(|l| render(&repo.path().join(l)))
        .collect();
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    assert_eq!(
        changed_lines(&rendered, &after),
        pairs(&[
            // kustomize puts the ConfigMap first.
            (
                "image: {repository: ghcr.io/acme/worker, tag: 2.0.0}",
                "image: {repository: ghcr.io/acme/worker, tag: 2.1.0}"
            ),
            (
                "image: ghcr.io/acme/cache:1.0.0",
                "image: ghcr.io/acme/cache:1.0.3"
            ),
            ("tag: v3.1.0", "tag: v3.2.0"),
            ("tag: 7.2.0", "tag: 7.2.5"),
            ("tag: 6.5.0", "tag: 6.5.4"),
        ])
    );

    // A second run finds nothing to do.
    let again = imagebump()
        .args(["run", repo.path().to_str().unwrap(), "--config", &cfg])
        .args(["--output", "json"])
        .run();
    assert_eq!(again.json()["counts"]["updates"], 0, "{}", again.stdout);
}

/// A marker on a line of a release's values is that value's: one reference each.
#[test]
fn markers_in_release_values_apply_once() {
    let repo = support::tree(&[(
        "r.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: a}\nspec:\n  values:\n    image:\n      repository: ghcr.io/acme/a\n      tag: 1.0.0 # imagebump: ignore\n    b:\n      image: ghcr.io/acme/b:1.0.0 # imagebump: {\"constraint\": \"~1.0\"}\n",
    )]);
    let run = imagebump()
        .args([
            "scan",
            repo.path().to_str().unwrap(),
            "--config",
            "/dev/null",
        ])
        .run();
    let rows: Vec<String> = (run.stdout.lines())
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        rows,
        [
            "LOCATION IMAGE CURRENT POLICY STATUS",
            "r.yaml:8 ghcr.io/acme/a 1.0.0 - unmanaged: ignored (marker)",
            "r.yaml:10 ghcr.io/acme/b 1.0.0 semver ~1.0 (marker) managed",
            "",
            "2 references in 1 files (1 managed, 1 unmanaged)",
        ]
    );
}

/// An app-of-apps written as a chart (fixtures/helm-releases/app-of-apps): the Applications
/// and HelmReleases in its `templates/` whose documents parse as YAML are read; a templated value is listed
/// as unmanaged with the reason; a document with a template line is skipped with a note.
fn app_of_apps() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/helm-releases/app-of-apps")
}

const TEMPLATE_NOTE: &str = "apps/templates/web.yaml:1:3: this document of the chart template is not YAML (a template line): its Argo CD Applications and Flux HelmReleases are not read\n";

#[test]
fn scan_reads_the_applications_of_a_charts_templates() {
    // The charts' repositories are not reachable here, nor this test's subject.
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("imagebump.yaml");
    fs::write(&cfg, "helm:\n  charts: false\n").unwrap();
    let run = imagebump()
        .args(["scan", app_of_apps().to_str().unwrap()])
        .args(["--config", cfg.to_str().unwrap(), "--output", "json"])
        .run();
    assert_eq!(run.stderr, format!("note: {TEMPLATE_NOTE}"), "{run}");
    let json = run.json();
    let rows: Vec<String> = (json["references"].as_array().unwrap().iter())
        .map(|r| {
            let reason = r["reason"].as_str().unwrap_or("managed");
            format!(
                "{}:{} {} {reason}",
                r["file"].as_str().unwrap(),
                r["line"],
                r["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            "apps/templates/podinfo.yaml:12 ghcr.io/stefanprodan/podinfo managed",
            "apps/templates/podinfo.yaml:14 ghcr.io/acme/worker `tag` is a template, filled in at deploy time",
            "apps/templates/web.yaml:41 busybox hard-coded in the chart, not a values key: not edited",
            "guestbook/deploy.yaml:9 ghcr.io/acme/guestbook overridden by apps/templates/guestbook.yaml (kustomize.images)",
            "guestbook/deploy.yaml:11 ghcr.io/acme/api overridden by apps/templates/guestbook.yaml (kustomize.images)",
            "apps/templates/guestbook.yaml:17 ghcr.io/acme/guestbook managed",
            "apps/templates/guestbook.yaml:18 ghcr.io/acme/api a template (`{{ }}`), filled in when the chart is rendered: not edited",
            "apps/templates/web.yaml:34 ghcr.io/acme/sidecar `tag` is a template, filled in at deploy time",
            "apps/templates/web.yaml:30 ghcr.io/acme/web managed",
        ],
        "{}",
        run.stdout
    );
}

#[test]
fn run_edits_only_the_value_bytes_of_applications_in_templates() {
    let reg = seeded_registry();
    reg.push_tags("acme/guestbook", &["1.0.0", "1.1.0"]);
    reg.push_tags("acme/web", &["2.0.0", "2.1.0"]);
    reg.push_tags("acme/sidecar", &["1.0.0", "1.1.0"]);
    let (_c, cfg) = config(&reg);
    let repo = support::copy_tree(&app_of_apps());
    let before = support::texts(repo.path());

    let dry = run(repo.path(), &cfg, "--dry-run");
    assert_eq!(
        support::texts(repo.path()),
        before,
        "a dry run writes nothing"
    );
    dry.assert_stdout_contains(
        "@@ -14,5 +14,5 @@\n     path: guestbook\n     kustomize:\n       images:\n-        - ghcr.io/acme/guestbook:1.0.0\n+        - ghcr.io/acme/guestbook:1.1.0\n         - \"ghcr.io/acme/api:{{ .Values.apiTag }}\"\n",
    );
    dry.assert_stdout_contains(
        "       valuesObject:\n         image:\n           repository: ghcr.io/acme/web\n-          tag: 2.0.0\n+          tag: 2.1.0\n",
    );
    dry.assert_stdout_contains(
        "       repository: ghcr.io/stefanprodan/podinfo\n-      tag: 6.5.0\n+      tag: 6.5.4\n",
    );
    let removed = (dry.stdout.lines()).filter(|l| l.starts_with('-') && !l.starts_with("---"));
    assert_eq!(removed.count(), 3, "{}", dry.stdout);

    run(repo.path(), &cfg, "--write");
    let mut want = before.clone();
    for (file, old, new) in [
        (
            "apps/templates/guestbook.yaml",
            "guestbook:1.0.0",
            "guestbook:1.1.0",
        ),
        ("apps/templates/web.yaml", "tag: 2.0.0", "tag: 2.1.0"),
        ("apps/templates/podinfo.yaml", "tag: 6.5.0", "tag: 6.5.4"),
    ] {
        let text = want.get_mut(file).unwrap();
        *text = text.replacen(old, new, 1);
    }
    assert_eq!(support::texts(repo.path()), want);
}

/// A release's `postRenderers` kustomize `images:` entry sets the tag Flux deploys: the
/// entry is the reference that moves, and the values image it names is left alone.
#[test]
fn a_post_renderer_image_entry_is_edited_not_the_values_it_overrides() {
    let reg = seeded_registry();
    let (_c, cfg) = config(&reg);
    let release = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: podinfo}\nspec:\n  values:\n    image:\n      repository: ghcr.io/stefanprodan/podinfo\n      tag: 6.5.0\n  postRenderers:\n    - kustomize:\n        images:\n          - name: ghcr.io/stefanprodan/podinfo\n            newTag: 6.5.0\n";
    let repo = support::tree(&[("release.yaml", release)]);
    let dry = run(repo.path(), &cfg, "--dry-run");
    dry.assert_stdout_contains(
        "           - name: ghcr.io/stefanprodan/podinfo\n-            newTag: 6.5.0\n+            newTag: 6.5.4\n",
    );
    dry.assert_stdout_contains("1 update(s) proposed in 1 file(s)");
    run(repo.path(), &cfg, "--write");
    assert_eq!(
        fs::read_to_string(repo.path().join("release.yaml")).unwrap(),
        release.replace("newTag: 6.5.0", "newTag: 6.5.4")
    );
}
