//! The rest of the kustomize model, each case checked by the render oracle of
//! tests/support/oracle.rs against the real `kubectl kustomize`: JSON 6902 image values,
//! `$patch: replace` and container deletes, `replacements:`, and every fixture of the
//! repository that holds kustomizations.

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

use std::collections::BTreeMap;

use oracle::{update, Oracle, Update, IMAGE};
use support::{Registry, RegistryMode};

const WEB: &str = "registry.example.com/team/web";
const JOB: &str = "registry.example.com/team/job";

/// A Deployment `app` (init container `init` on `web`, container `app` on `app`) and a
/// CronJob `job` (container `job` on `job`), each at 1.0.
fn base() -> Vec<(&'static str, String)> {
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  selector:\n    matchLabels: {{app: app}}\n  template:\n    metadata:\n      labels: {{app: app}}\n    spec:\n      initContainers:\n        - name: init\n          image: {WEB}:1.0\n      containers:\n        - name: app\n          image: {IMAGE}:1.0\n"
    );
    let cronjob = format!(
        "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: job\nspec:\n  schedule: \"@daily\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers:\n            - name: job\n              image: {JOB}:1.0\n"
    );
    vec![
        ("base/deployment.yaml", deployment),
        ("base/cronjob.yaml", cronjob),
        (
            "base/kustomization.yaml",
            "resources: [deployment.yaml, cronjob.yaml]\n".into(),
        ),
    ]
}

/// `team/app` at 1.0 … 4.0, `team/web`, `team/job` and `team/extra` at 1.0 and 2.0.
fn oracle(files: &[(&str, String)], leaves: &[&'static str]) -> Oracle {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/app", &["1.0", "2.0", "3.0", "4.0"]);
    for repo in ["team/web", "team/job", "team/extra"] {
        reg.push_tags(repo, &["1.0", "2.0"]);
    }
    Oracle::over(reg, support::tree(files), leaves)
}

fn moved(image: &str, file: &str, unit: &str, from: &str, to: &str) -> Update {
    Update {
        image: image.into(),
        ..update(file, unit, from, to)
    }
}

/// Indents `text` by `n` spaces (an inline patch under `patch: |-`).
fn indent(text: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    text.lines().map(|l| format!("{pad}{l}\n")).collect()
}

/// Every form of a JSON 6902 operation that writes a container's image is what its leaf
/// renders, and is edited there: `replace`/`add` of `…/image` (containers and
/// initContainers) in a `patches:` file, a `replace` of a whole CronJob container inline
/// in the kustomization, an `add` of a new container in a `patchesJson6902:` file. The
/// base's images move with an `images:` entry in each leaf that still renders them.
#[test]
fn json_6902_values_are_edited_where_they_render() {
    let mut files = base();
    files.push((
        "envs/a/kustomization.yaml",
        "resources: [../../base]\npatches:\n  - path: ops.yaml\n    target:\n      kind: Deployment\n      name: app\n".into(),
    ));
    files.push((
        "envs/a/ops.yaml",
        format!("- op: replace\n  path: /spec/template/spec/containers/0/image\n  value: {IMAGE}:2.0\n- op: add\n  path: /spec/template/spec/initContainers/0/image\n  value: \"{WEB}:1.0\"\n"),
    ));
    let job = format!("- op: replace\n  path: /spec/jobTemplate/spec/template/spec/containers/0\n  value:\n    name: job\n    image: {JOB}:1.0 # pinned\n");
    files.push((
        "envs/b/kustomization.yaml",
        format!(
            "resources: [../../base]\npatches:\n  - target: {{kind: CronJob, name: job}}\n    patch: |-\n{}",
            indent(&job, 6)
        ),
    ));
    files.push((
        "envs/c/kustomization.yaml",
        "resources:\n  - ../../base\npatchesJson6902:\n  - target: {group: apps, version: v1, kind: Deployment, name: app}\n    path: extra.yaml\n".into(),
    ));
    files.push((
        "envs/c/extra.yaml",
        "- op: add\n  path: /spec/template/spec/containers/-\n  value: {name: extra, image: registry.example.com/team/extra:1.0}\n".into(),
    ));
    let oracle = oracle(&files, &["envs/a", "envs/b", "envs/c"]);
    let k = |leaf: &str| format!("envs/{leaf}/kustomization.yaml");
    assert_eq!(
        oracle.check(),
        [
            moved(JOB, &k("a"), "envs/a", "1.0", "2.0"),
            update("envs/a/ops.yaml", "envs/a", "2.0", "4.0"),
            moved(WEB, "envs/a/ops.yaml", "envs/a", "1.0", "2.0"),
            update(&k("b"), "envs/b", "1.0", "4.0"),
            moved(JOB, &k("b"), "envs/b", "1.0", "2.0"),
            moved(WEB, &k("b"), "envs/b", "1.0", "2.0"),
            moved(
                "registry.example.com/team/extra",
                "envs/c/extra.yaml",
                "envs/c",
                "1.0",
                "2.0"
            ),
            update(&k("c"), "envs/c", "1.0", "4.0"),
            moved(JOB, &k("c"), "envs/c", "1.0", "2.0"),
            moved(WEB, &k("c"), "envs/c", "1.0", "2.0"),
        ]
    );
    let b = std::fs::read_to_string(oracle.repo.path().join(k("b"))).unwrap();
    assert!(
        b.contains(&format!("        image: {JOB}:2.0 # pinned\n")),
        "{b}"
    );
}

/// A JSON 6902 value that something later rewrites is not what renders: an `images:`
/// entry of the same kustomization (applied after its patches) moves instead, and a later
/// operation of the same patch wins over an earlier one.
#[test]
fn a_json_6902_value_written_again_is_not_edited() {
    let mut files = base();
    let op = |v: &str| {
        format!(
            "- op: replace\n  path: /spec/template/spec/containers/0/image\n  value: {IMAGE}:{v}\n"
        )
    };
    files.push((
        "envs/dev/kustomization.yaml",
        format!(
            "resources: [../../base]\npatches:\n  - path: ops.yaml\n    target: {{kind: Deployment, name: app}}\nimages:\n  - name: {IMAGE}\n    newTag: \"3.0\"\n"
        ),
    ));
    files.push(("envs/dev/ops.yaml", op("2.0")));
    files.push((
        "envs/prod/kustomization.yaml",
        format!(
            "resources: [../../base]\npatches:\n  - target: {{kind: Deployment, name: app}}\n    patch: |-\n{}  - target: {{kind: Deployment}}\n    path: later.yaml\n",
            indent(&op("2.0"), 6)
        ),
    ));
    files.push(("envs/prod/later.yaml", op("3.0")));
    let oracle = oracle(&files, &["envs/dev", "envs/prod"]);
    let entry = |leaf: &str, image: &str| {
        moved(
            image,
            &format!("envs/{leaf}/kustomization.yaml"),
            &format!("envs/{leaf}"),
            "1.0",
            "2.0",
        )
    };
    assert_eq!(
        oracle.check(),
        [
            update("envs/dev/kustomization.yaml", "envs/dev", "3.0", "4.0"),
            entry("dev", JOB),
            entry("dev", WEB),
            entry("prod", JOB),
            entry("prod", WEB),
            update("envs/prod/later.yaml", "envs/prod", "3.0", "4.0"),
        ]
    );
}

/// `$patch: replace` keeps only the patch's containers: a replaced list (`- $patch:
/// replace`, dev: its init containers stay) or a replaced map above the pod spec (staging:
/// both lists) drops the base's other containers; a container item with `$patch: delete`
/// (qa) or a JSON 6902 `remove` (ops) drops that one. A dropped container gets no
/// `images:` entry in that leaf; the patch's own image is what renders. A container item
/// that carries `$patch: replace` itself (item) is not rendered: kustomize keeps the
/// base's container.
#[test]
fn replaced_and_deleted_containers() {
    let mut files = base();
    let patch = |spec: &str| {
        let text = format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n{}",
            indent(spec, 4)
        );
        format!(
            "resources: [../../base]\npatches:\n  - patch: |-\n{}",
            indent(&text, 6)
        )
    };
    files.push((
        "envs/dev/kustomization.yaml",
        patch(&format!(
            "containers:\n  - $patch: replace\n  - name: app\n    image: {IMAGE}:2.0\n"
        )),
    ));
    files.push((
        "envs/staging/kustomization.yaml",
        patch(&format!(
            "spec:\n  $patch: replace\n  containers:\n    - name: app\n      image: {IMAGE}:3.0\n"
        )),
    ));
    files.push((
        "envs/qa/kustomization.yaml",
        patch("initContainers:\n  - name: init\n    $patch: delete\n"),
    ));
    files.push((
        "envs/ops/kustomization.yaml",
        "resources: [../../base]\npatches:\n  - target: {kind: Deployment, name: app}\n    patch: |-\n      - op: remove\n        path: /spec/template/spec/initContainers/0\n".into(),
    ));
    files.push((
        "envs/prod/kustomization.yaml",
        "resources: [../../base]\n".into(),
    ));
    files.push((
        "envs/item/kustomization.yaml",
        patch(&format!(
            "spec:\n  containers:\n    - name: app\n      $patch: replace\n      image: {IMAGE}:3.0\n"
        )),
    ));
    let leaves = [
        "envs/dev",
        "envs/item",
        "envs/ops",
        "envs/prod",
        "envs/qa",
        "envs/staging",
    ];
    let oracle = oracle(&files, &leaves);
    let k = |leaf: &str| format!("envs/{leaf}/kustomization.yaml");
    let entry = |leaf: &str, image: &str, to: &str| {
        moved(image, &k(leaf), &format!("envs/{leaf}"), "1.0", to)
    };
    assert_eq!(
        oracle.check(),
        [
            update(&k("dev"), "envs/dev", "2.0", "4.0"),
            entry("dev", JOB, "2.0"),
            entry("dev", WEB, "2.0"),
            entry("item", IMAGE, "4.0"),
            entry("item", JOB, "2.0"),
            entry("item", WEB, "2.0"),
            entry("ops", IMAGE, "4.0"),
            entry("ops", JOB, "2.0"),
            entry("prod", IMAGE, "4.0"),
            entry("prod", JOB, "2.0"),
            entry("prod", WEB, "2.0"),
            entry("qa", IMAGE, "4.0"),
            entry("qa", JOB, "2.0"),
            update(&k("staging"), "envs/staging", "3.0", "4.0"),
            entry("staging", JOB, "2.0"),
        ]
    );
}

/// `replacements:` apply after the kustomization's `images:` entries: a container image a
/// replacement copies from another resource is what the source renders, so it gets no
/// entry of its own where the replacement applies (dev); the source's entry moves both.
/// An `images:` entry the replacement overwrites is left alone (staging). A wildcard
/// target (`containers.*.image`, qa) reaches every container of its list; replacements in
/// a file of their own (ops, a list) are read like those written in the kustomization.
#[test]
fn replacements_copy_an_image() {
    let mut files = base();
    let replacement = "replacements:\n  - source:\n      kind: Deployment\n      name: app\n      fieldPath: spec.template.spec.containers.[name=app].image\n    targets:\n      - select:\n          kind: CronJob\n        fieldPaths:\n          - spec.jobTemplate.spec.template.spec.containers.[name=job].image\n";
    files.push((
        "envs/dev/kustomization.yaml",
        format!("resources: [../../base]\n{replacement}"),
    ));
    files.push((
        "envs/staging/kustomization.yaml",
        format!(
            "resources: [../../base]\nimages:\n  - name: {JOB}\n    newTag: \"1.0\"\n{replacement}"
        ),
    ));
    files.push((
        "envs/qa/kustomization.yaml",
        "resources: [../../base]\nreplacements:\n  - source:\n      kind: CronJob\n      name: job\n      fieldPath: spec.jobTemplate.spec.template.spec.containers.0.image\n    targets:\n      - select: {kind: Deployment}\n        fieldPaths: [spec.template.spec.containers.*.image]\n".into(),
    ));
    files.push((
        "envs/prod/kustomization.yaml",
        "resources: [../../base]\n".into(),
    ));
    files.push((
        "envs/ops/kustomization.yaml",
        "resources: [../../base]\nreplacements:\n  - path: copy.yaml\n".into(),
    ));
    let one = replacement.trim_start_matches("replacements:\n");
    files.push(("envs/ops/copy.yaml", one.into()));
    let leaves = [
        "envs/dev",
        "envs/ops",
        "envs/prod",
        "envs/qa",
        "envs/staging",
    ];
    let oracle = oracle(&files, &leaves);
    let k = |leaf: &str| format!("envs/{leaf}/kustomization.yaml");
    let entry = |leaf: &str, image: &str, to: &str| {
        moved(image, &k(leaf), &format!("envs/{leaf}"), "1.0", to)
    };
    assert_eq!(
        oracle.check(),
        [
            entry("dev", IMAGE, "4.0"),
            entry("dev", WEB, "2.0"),
            entry("ops", IMAGE, "4.0"),
            entry("ops", WEB, "2.0"),
            entry("prod", IMAGE, "4.0"),
            entry("prod", JOB, "2.0"),
            entry("prod", WEB, "2.0"),
            entry("qa", JOB, "2.0"),
            entry("qa", WEB, "2.0"),
            entry("staging", IMAGE, "4.0"),
            entry("staging", WEB, "2.0"),
        ]
    );
}

/// A fixture of the repository (`fixtures/DIR`), copied, with the repositories of the
/// listing `registry.txt` of `listing` (each tag without its creation date or platforms)
/// and `more` pushed to a registry serving `prefixes`.
fn fixture(
    dir: &str,
    listing: Option<&str>,
    more: &[(&str, &[&str])],
    prefixes: &[&str],
    leaves: &[&'static str],
) -> Oracle {
    let reg = Registry::start(RegistryMode::Plain);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let text = listing.map(|l| std::fs::read_to_string(root.join(l).join("registry.txt")).unwrap());
    for line in text.iter().flat_map(|t| t.lines()) {
        let mut words = line.split_whitespace();
        let Some(repo) = words.next() else { continue };
        let tags: Vec<&str> = words.filter_map(|w| w.split(['@', '=']).next()).collect();
        reg.push_tags(repo, &tags);
    }
    for (repo, tags) in more {
        reg.push_tags(repo, tags);
    }
    Oracle::serving(reg, support::copy_tree(&root.join(dir)), leaves, prefixes)
}

/// The demo's kustomization (`images:` entries with `newName`, comments, a `latest` left
/// alone) moves its render exactly as reported; the Helm values beside it are Helm's.
#[test]
fn the_demo_fixture_holds_to_the_oracle() {
    let prefixes = ["ghcr.io", "docker.io"];
    let mut oracle = fixture("demo", Some("demo"), &[], &prefixes, &["apps/web"]);
    oracle.unrendered = vec!["apps/api/", "apps/worker/"];
    assert_eq!(oracle.check().len(), 2);
}

/// Flux's minio kustomization (an `images:` entry marked with `$imagepolicy` setters).
#[test]
fn the_flux_fixture_holds_to_the_oracle() {
    let prefixes = ["ghcr.io", "docker.io", "quay.io"];
    let minio = ["clusters/my-cluster/apps/minio"];
    let mut oracle = fixture("flux/repo", Some("flux"), &[], &prefixes, &minio);
    // Flux's setters in plain manifests and HelmRelease values: no kustomization builds
    // them.
    oracle.unrendered = vec![
        "clusters/my-cluster/apps/builds.yaml",
        "clusters/my-cluster/apps/podinfo-release.yaml",
        "clusters/my-cluster/podinfo-deployment.yaml",
    ];
    assert_eq!(oracle.check().len(), 1);
}

/// The Argo CD fixtures: the kustomizations their Applications deploy (images set by the
/// Applications' `kustomize.images` and parameters, which kustomize alone does not
/// render, and by the kustomizations themselves).
#[test]
fn the_argocd_fixtures_hold_to_the_oracle() {
    let legacy: &[(&str, &[&str])] = &[("team/legacy", &["1.0.0", "1.1.0"])];
    let leaves = [
        "apps/api",
        "apps/legacy",
        "apps/web",
        "platform/eu",
        "platform/us",
    ];
    let prefixes = ["registry.test"];
    let mut oracle = fixture("appsets/repo", Some("argocd"), legacy, &prefixes, &leaves);
    oracle.unrendered = vec!["argocd/", "clusters/"];
    // An Application's group is its name.
    oracle.renders_in = BTreeMap::from([("api", "apps/api"), ("web", "apps/web")]);
    let moved = |app: &str, image: &str, from: &str, to: &str| Update {
        file: format!("apps/{app}/kustomization.yaml"),
        unit: app.into(),
        image: format!("registry.test/team/{image}"),
        from: from.into(),
        to: to.into(),
    };
    assert_eq!(
        oracle.check(),
        [
            moved("api", "api", "2.4.1", "3.0.0"),
            moved("web", "web", "1.4.0", "2.0.0"),
        ]
    );
    let leaves = ["apps/docs", "apps/shop-frontend", "apps/web", "apps/worker"];
    let mut oracle = fixture("argocd/repo", Some("argocd"), &[], &prefixes, &leaves);
    oracle.unrendered = vec![
        "argocd/",
        "values/",
        "apps/api/",
        "apps/batch/",
        "apps/edge-proxy/",
        "apps/payments/",
        "apps/shop-frontend/.argocd-source-shop-frontend.yaml",
        "apps/web/.argocd-source-web.yaml",
    ];
    oracle.renders_in = BTreeMap::from([("worker", "apps/worker")]);
    assert_eq!(
        oracle.check(),
        [
            moved("worker", "metrics-agent", "2.1.0", "2.2.0"),
            moved("worker", "worker", "0.9.1", "0.10.0"),
        ]
    );
}

/// The HelmRelease fixtures' kustomizations: a release's values are Helm's to render, not
/// kustomize's; the guestbook kustomization is a plain one.
#[test]
fn the_helm_release_fixtures_hold_to_the_oracle() {
    let repos: &[(&str, &[&str])] = &[
        ("stefanprodan/podinfo", &["6.5.0", "6.5.4"]),
        ("acme/cache", &["1.0.0", "1.0.3"]),
        ("acme/worker", &["2.0.0", "2.1.0"]),
        ("acme/guestbook", &["0.9.0", "1.1.0"]),
        ("acme/api", &["0.9.0", "1.0.0"]),
        ("acme/web", &["2.0.0", "2.1.0"]),
        ("acme/sidecar", &["1.0.0", "1.1.0"]),
        ("library/redis", &["7.2.0", "7.2.5"]),
        ("library/busybox", &["1.36", "1.37"]),
        ("acme/proxy", &["v3.1.0", "v3.2.0"]),
    ];
    let prefixes = ["ghcr.io", "docker.io"];
    let leaves = ["apps/cache", "apps/podinfo"];
    let mut oracle = fixture("helm-releases/repo", None, repos, &prefixes, &leaves);
    oracle.unrendered = vec!["apps/cache/release.yaml", "apps/podinfo/"];
    // Every image here is set by a HelmRelease or an Application: renders do not move.
    assert_eq!(oracle.check(), []);
    let mut oracle = fixture(
        "helm-releases/app-of-apps",
        None,
        repos,
        &prefixes,
        &["guestbook"],
    );
    oracle.unrendered = vec!["apps/"];
    // Every image here is set by a HelmRelease or an Application: renders do not move.
    assert_eq!(oracle.check(), []);
}

/// An `images:` entry rewrites every container of its name in the leaf: where a patch of
/// the leaf sets one container of that name (dev), an entry for the base's other one
/// would move the patched one too, beyond what its own update says. The patch is edited,
/// the base's container is listed with the reason and left to the user there; the leaf
/// without a patch (prod) gets its entry.
#[test]
fn no_entry_over_a_patched_container_of_the_same_name() {
    let mut files = base();
    files[1].1 = files[1].1.replace(JOB, IMAGE);
    files.push((
        "envs/dev/kustomization.yaml",
        "resources: [../../base]\npatches:\n  - path: version.yaml\n".into(),
    ));
    files.push((
        "envs/dev/version.yaml",
        oracle::version_patch("app", &format!("{IMAGE}:2.0")),
    ));
    files.push((
        "envs/prod/kustomization.yaml",
        "resources: [../../base]\n".into(),
    ));
    let oracle = oracle(&files, &["envs/dev", "envs/prod"]);
    let k = |leaf: &str| format!("envs/{leaf}/kustomization.yaml");
    assert_eq!(
        oracle.check(),
        [
            moved(WEB, &k("dev"), "envs/dev", "1.0", "2.0"),
            update("envs/dev/version.yaml", "envs/dev", "2.0", "4.0"),
            update(&k("prod"), "envs/prod", "1.0", "4.0"),
            moved(WEB, &k("prod"), "envs/prod", "1.0", "2.0"),
        ]
    );
    let out = support::cli::imagebump()
        .args([
            "scan",
            oracle.dir(),
            "--config",
            &oracle.cfg,
            "--output",
            "json",
        ])
        .run();
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let refs = report["references"].as_array().unwrap();
    let job = (refs.iter())
        .find(|r| r["file"] == "base/cronjob.yaml" && r["unit"] == "envs/dev")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(
        job["reason"].as_str(),
        Some("an images: entry for registry.example.com/team/app in envs/dev/kustomization.yaml would also rewrite envs/dev/version.yaml:10"),
        "{job:#}"
    );
}

/// A JSON 6902 value is placed like any patch value: in a component two leaves use, each
/// leaf gets an `images:` entry (the component is shared); in a variant one leaf builds on,
/// the value is edited there. An inline patch written as JSON (a list of operations, a
/// strategic-merge document) is edited inside its string too.
#[test]
fn json_6902_values_in_shared_levels() {
    let mut files = base();
    let op = |v: &str| {
        format!("[{{\"op\": \"replace\", \"path\": \"/spec/template/spec/containers/0/image\", \"value\": \"{IMAGE}:{v}\"}}]\n")
    };
    files.push((
        "components/pin/kustomization.yaml",
        format!(
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n  - target: {{kind: Deployment, name: app}}\n    patch: |-\n{}",
            indent(&op("2.0"), 6)
        ),
    ));
    for leaf in ["dev", "qa"] {
        let k: &'static str = Box::leak(format!("envs/{leaf}/kustomization.yaml").into_boxed_str());
        files.push((
            k,
            "resources: [../../base]\ncomponents: [../../components/pin]\n".into(),
        ));
    }
    files.push((
        "variants/eu/kustomization.yaml",
        "resources: [../../base]\npatchesJson6902:\n  - target: {group: apps, version: v1, kind: Deployment, name: app}\n    path: image.yaml\n".into(),
    ));
    files.push(("variants/eu/image.yaml", op("3.0")));
    files.push((
        "envs/staging/kustomization.yaml",
        "resources: [../../variants/eu]\n".into(),
    ));
    let json = format!("{{\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"metadata\": {{\"name\": \"app\"}}, \"spec\": {{\"template\": {{\"spec\": {{\"containers\": [{{\"name\": \"app\", \"image\": \"{IMAGE}:3.0\"}}]}}}}}}}}\n");
    files.push((
        "envs/json/kustomization.yaml",
        format!(
            "resources: [../../base]\npatches:\n  - patch: |-\n{}",
            indent(&json, 6)
        ),
    ));
    let leaves = ["envs/dev", "envs/json", "envs/qa", "envs/staging"];
    let mut oracle = oracle(&files, &leaves);
    oracle.renders_in.insert("variants/eu", "envs/staging");
    let k = |leaf: &str| format!("envs/{leaf}/kustomization.yaml");
    let updates = oracle.check();
    let app: Vec<&Update> = updates.iter().filter(|u| u.image == IMAGE).collect();
    assert_eq!(
        app,
        [
            &update(&k("dev"), "envs/dev", "2.0", "4.0"),
            &update(&k("json"), "envs/json", "3.0", "4.0"),
            &update(&k("qa"), "envs/qa", "2.0", "4.0"),
            &update("variants/eu/image.yaml", "envs/staging", "3.0", "4.0"),
        ]
    );
}

/// A leaf's own resource with the image of a shared base at the same version (a
/// migration Job beside the base's Deployment): the leaf's `images:` entry moves both, so
/// it is the one update there, and the Job's line is not edited (the entry overrides it
/// from then on). A pinned one (staging) gets no entry over it.
#[test]
fn a_leaf_resource_moves_with_the_entry_at_the_same_version() {
    let mut files = base();
    let job = oracle::deployment("migrate", &format!("{IMAGE}:1.0"));
    files.push(("envs/dev/migrate.yaml", job));
    files.push((
        "envs/dev/kustomization.yaml",
        "resources: [../../base, migrate.yaml]\n".into(),
    ));
    files.push((
        "envs/prod/kustomization.yaml",
        "resources: [../../base]\n".into(),
    ));
    let pinned = oracle::deployment("migrate", &format!("{IMAGE}:1.0 # imagebump: pin"));
    files.push(("envs/staging/migrate.yaml", pinned));
    files.push((
        "envs/staging/kustomization.yaml",
        "resources: [../../base, migrate.yaml]\n".into(),
    ));
    let oracle = oracle(&files, &["envs/dev", "envs/prod", "envs/staging"]);
    let k = |leaf: &str| format!("envs/{leaf}/kustomization.yaml");
    assert_eq!(
        oracle.check(),
        [
            update(&k("dev"), "envs/dev", "1.0", "4.0"),
            moved(JOB, &k("dev"), "envs/dev", "1.0", "2.0"),
            moved(WEB, &k("dev"), "envs/dev", "1.0", "2.0"),
            update(&k("prod"), "envs/prod", "1.0", "4.0"),
            moved(JOB, &k("prod"), "envs/prod", "1.0", "2.0"),
            moved(WEB, &k("prod"), "envs/prod", "1.0", "2.0"),
            moved(JOB, &k("staging"), "envs/staging", "1.0", "2.0"),
            moved(WEB, &k("staging"), "envs/staging", "1.0", "2.0"),
        ]
    );
    let migrate = std::fs::read_to_string(oracle.repo.path().join("envs/dev/migrate.yaml"));
    assert!(migrate.unwrap().contains(&format!("image: {IMAGE}:1.0\n")));
}

/// An `images:` entry no image of its kustomization's render is named (a container since
/// removed) changes nothing: it is listed with the
/// reason and not edited, while the entry beside it that does render moves (the base,
/// which only this leaf renders, moves in place).
#[test]
fn an_entry_that_names_no_rendered_image_is_not_edited() {
    let mut files = base();
    files.push((
        "envs/prod/kustomization.yaml",
        format!(
            "resources: [../../base]\nimages:\n  - name: {WEB}\n    newTag: \"1.0\"\n  - name: registry.example.com/team/extra\n    newTag: \"1.0\"\n"
        ),
    ));
    let o = oracle(&files, &["envs/prod"]);
    assert_eq!(
        o.check(),
        [
            moved(JOB, "base/cronjob.yaml", "envs/prod", "1.0", "2.0"),
            moved(IMAGE, "base/deployment.yaml", "envs/prod", "1.0", "4.0"),
            moved(
                WEB,
                "envs/prod/kustomization.yaml",
                "envs/prod",
                "1.0",
                "2.0"
            ),
        ]
    );
    let scan = support::cli::imagebump()
        .args(["scan", o.dir(), "--offline"])
        .run();
    let row = (scan.stdout.lines())
        .find(|l| l.starts_with("envs/prod/kustomization.yaml:6"))
        .unwrap_or_default();
    assert!(
        row.contains("unmanaged: no image envs/prod renders is named registry.example.com/team/extra: the entry changes nothing"),
        "{}",
        scan.stdout
    );
}

/// Over a remote base, beside a Helm chart or in a component, what an entry reaches is
/// not known; a kustomization that lists no resources is a list of versions by itself:
/// each entry stays managed.
#[test]
fn an_entry_over_what_imagebump_cannot_see_stays_managed() {
    let entry = "images:\n  - name: registry.example.com/team/extra\n    newTag: \"1.0\"\n";
    let files = [
        ("alone/kustomization.yaml", entry.to_string()),
        (
            "component/kustomization.yaml",
            format!("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n{entry}"),
        ),
        (
            "uses/kustomization.yaml",
            "resources: [d.yaml]\ncomponents: [../component]\n".into(),
        ),
        ("uses/d.yaml", oracle::deployment("extra", "registry.example.com/team/extra:1.0")),
        (
            "remote/kustomization.yaml",
            "resources:\n  - https://github.com/example/app//deploy?ref=v1\nimages:\n  - name: registry.example.com/team/extra\n    newTag: \"1.0\"\n".to_string(),
        ),
        (
            "chart/kustomization.yaml",
            "helmCharts:\n  - name: extra\n    repo: https://charts.example.com\n    version: 1.0.0\nimages:\n  - name: registry.example.com/team/extra\n    newTag: \"1.0\"\n".to_string(),
        ),
    ];
    let repo = support::tree(&files);
    let scan = support::cli::imagebump()
        .args([
            "scan",
            repo.path().to_str().unwrap(),
            "--offline",
            "--output",
            "json",
        ])
        .run();
    let report: serde_json::Value = serde_json::from_str(&scan.stdout).unwrap();
    let extra: Vec<(&str, &str)> = (report["references"].as_array().unwrap().iter())
        .filter(|r| r["image"] == "registry.example.com/team/extra")
        .map(|r| (r["file"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        extra,
        [
            ("alone/kustomization.yaml", "managed"),
            ("chart/kustomization.yaml", "managed"),
            ("component/kustomization.yaml", "managed"),
            ("remote/kustomization.yaml", "managed"),
            ("uses/d.yaml", "unmanaged"),
        ]
    );
}

/// An Argo CD Application's `kustomize.patches` that set a container's image decide what
/// the app deploys: the manifest's image is listed as overridden by the Application and
/// not edited (nor given an `images:` entry), while the images the patch leaves alone
/// move.
#[test]
fn an_applications_kustomize_patch_overrides_the_image() {
    let mut files = base();
    files.push((
        "envs/prod/kustomization.yaml",
        "resources: [../../base]\n".into(),
    ));
    let patch = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: {IMAGE}:2.0\n"
    );
    files.push((
        "argocd/prod.yaml",
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: prod\n  namespace: argocd\nspec:\n  project: default\n  destination: {{server: https://kubernetes.default.svc, namespace: prod}}\n  source:\n    repoURL: https://git.example.com/org/gitops.git\n    path: envs/prod\n    kustomize:\n      patches:\n        - target: {{kind: Deployment, name: app}}\n          patch: |-\n{}",
            indent(&patch, 12)
        ),
    ));
    // The updates belong to the Application (their unit): the render is compared here.
    let o = oracle(&files, &["envs/prod"]);
    let before = o.renders();
    let (updates, _) = o.run("--write");
    assert_eq!(
        updates,
        [
            moved(JOB, "base/cronjob.yaml", "prod", "1.0", "2.0"),
            moved(WEB, "base/deployment.yaml", "prod", "1.0", "2.0"),
        ]
    );
    let expected = before["envs/prod"]
        .replace(&format!("{JOB}:1.0"), &format!("{JOB}:2.0"))
        .replace(&format!("{WEB}:1.0"), &format!("{WEB}:2.0"));
    assert_ne!(expected, before["envs/prod"]);
    assert_eq!(o.renders()["envs/prod"], expected);
    let scan = support::cli::imagebump()
        .args(["scan", o.dir(), "--offline"])
        .run();
    let row = (scan.stdout.lines())
        .find(|l| l.trim_start().starts_with("base/deployment.yaml:17"))
        .unwrap_or_default();
    assert!(
        row.contains("unmanaged: overridden by argocd/prod.yaml (kustomize.patches)"),
        "{}",
        scan.stdout
    );
}
