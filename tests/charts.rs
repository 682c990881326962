//! Helm chart versions as references, against real parts: a classic Helm repository
//! (real archives built by `tar` from source directories, an `index.yaml` as `helm repo
//! index` writes it, served on loopback) and the same charts pushed as OCI artifacts to
//! the real `docker-registry`. Argo CD Applications (single and multi-source,
//! ApplicationSet template), `Chart.yaml` dependencies with their `Chart.lock`, kustomize
//! `helmCharts:` and Flux `HelmRelease`s are edited; the files are compared whole and the
//! requests counted.

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

use support::charts::{ChartSrc, HelmRepo};
use support::cli::imagebump;
use support::{Registry, RegistryMode};

/// Default values whose image is set at deploy time: no image reference of their own.
const VALUES: &str =
    "image:\n  repository: \"{{ .Values.global.registry }}/nginx\"\n  tag: \"1.25.0\"\n";

fn chart<'a>(name: &'a str, version: &'a str, app_version: &'a str) -> ChartSrc<'a> {
    ChartSrc {
        name,
        version,
        app_version,
        values: VALUES,
    }
}

/// A Helm repository at `/charts` with web 1.0.0, 1.1.0, 2.0.0-rc.1 and api 2.0.0, 2.1.0;
/// a registry with `charts/web` 1.0.0, 1.2.0 and `charts/api` 2.0.0, 2.3.0.
fn servers() -> (HelmRepo, Registry) {
    let repo = HelmRepo::start(None);
    repo.publish(
        "charts",
        &[
            chart("web", "1.0.0", "1.25.0"),
            chart("web", "1.1.0", "1.26.0"),
            chart("web", "2.0.0-rc.1", "1.27.0"),
            chart("api", "2.0.0", "3.0.0"),
            chart("api", "2.1.0", "3.1.0"),
        ],
    );
    let reg = Registry::start(RegistryMode::Plain);
    for (name, version, app_version) in [
        ("web", "1.0.0", "1.25.0"),
        ("web", "1.2.0", "1.27.0"),
        ("api", "2.0.0", "3.0.0"),
        ("api", "2.3.0", "3.3.0"),
    ] {
        let src = chart(name, version, app_version);
        let tgz = support::charts::package(&src);
        reg.push_chart(&format!("charts/{name}"), &src, &tgz);
    }
    (repo, reg)
}

/// The operator's configuration: the plain-HTTP registry.
fn operator_config(reg: &Registry) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    fs::write(
        &path,
        format!(
            "helm:\n  charts: true\nregistries:\n  - prefix: {}\n    url: {}\n",
            reg.host(),
            reg.base_url()
        ),
    )
    .unwrap();
    let p = path.to_string_lossy().to_string();
    (dir, p)
}

fn tree(helm: &str, oci: &str) -> Vec<(String, String, String)> {
    let app = format!(
        "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: argocd
spec:
  project: default
  source:
    repoURL: {helm}/charts
    chart: web
    targetRevision: 1.0.0 # the chart's version
    helm:
      valuesObject:
        replicas: 2
  destination:
    server: https://kubernetes.default.svc
    namespace: web
"
    );
    let multi = format!(
        "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: multi
  namespace: argocd
spec:
  sources:
    - repoURL: {helm}/charts/
      chart: api
      targetRevision: \"2.0.0\"
    - repoURL: {oci}/charts
      chart: web
      targetRevision: '1.0.0'
  destination:
    namespace: multi
"
    );
    let set = format!(
        "apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: envs
  namespace: argocd
spec:
  generators:
    - list:
        elements:
          - env: dev
            version: 2.0.0
          - env: prod
            version: 2.0.0
  template:
    metadata:
      name: 'api-{{{{env}}}}'
    spec:
      project: default
      source:
        repoURL: oci://{oci}/charts
        chart: api
        targetRevision: '{{{{version}}}}'
      destination:
        namespace: '{{{{env}}}}'
"
    );
    let chart_yaml = format!(
        "apiVersion: v2
name: umbrella
version: 0.1.0
dependencies:
  - name: web
    version: 1.0.0
    repository: {helm}/charts
  - name: api
    version: 2.0.0
    repository: oci://{oci}/charts
  - name: local
    version: 0.1.0
    repository: file://../local
"
    );
    let lock = format!(
        "dependencies:
- name: web
  repository: {helm}/charts
  version: 1.0.0
- name: api
  repository: oci://{oci}/charts
  version: 2.0.0
- name: local
  repository: file://../local
  version: 0.1.0
digest: sha256:0000000000000000000000000000000000000000000000000000000000000000
generated: \"2025-01-01T00:00:00.000000000Z\"
"
    );
    let kustomization = format!(
        "helmCharts:
  - name: web
    repo: {helm}/charts
    version: 1.0.0
    releaseName: web
"
    );
    let flux = format!(
        "apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: team
  namespace: flux-system
spec:
  url: {helm}/charts
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: api
  namespace: flux-system
spec:
  chart:
    spec:
      chart: api
      version: 2.0.0
      sourceRef:
        kind: HelmRepository
        name: team
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: other
  namespace: flux-system
spec:
  chart:
    spec:
      chart: api
      version: 2.0.0
      sourceRef:
        kind: HelmRepository
        name: missing
"
    );
    let bump = |s: &str, from: &str, to: &str| s.replace(from, to);
    vec![
        (
            "apps/web.yaml".into(),
            app.clone(),
            bump(&app, "targetRevision: 1.0.0", "targetRevision: 1.1.0"),
        ),
        (
            "apps/multi.yaml".into(),
            multi.clone(),
            bump(
                &bump(&multi, "\"2.0.0\"", "\"2.1.0\""),
                "'1.0.0'",
                "'1.2.0'",
            ),
        ),
        (
            "apps/set.yaml".into(),
            set.clone(),
            bump(&set, "version: 2.0.0", "version: 2.3.0"),
        ),
        (
            "umbrella/Chart.yaml".into(),
            chart_yaml.clone(),
            bump(
                &bump(&chart_yaml, "version: 1.0.0", "version: 1.1.0"),
                "version: 2.0.0",
                "version: 2.3.0",
            ),
        ),
        ("umbrella/Chart.lock".into(), lock.clone(), String::new()),
        (
            "kust/kustomization.yaml".into(),
            kustomization.clone(),
            bump(&kustomization, "version: 1.0.0", "version: 1.1.0"),
        ),
        (
            "flux/releases.yaml".into(),
            flux.clone(),
            flux.replacen("version: 2.0.0", "version: 2.1.0", 1),
        ),
    ]
}

#[test]
fn chart_versions_of_every_shape_move_and_each_index_is_read_once() {
    let (helm, reg) = servers();
    let (_c, cfg) = operator_config(&reg);
    let files = tree(&helm.url(), &reg.host());
    let dir = tempfile::tempdir().unwrap();
    for (rel, before, _) in &files {
        let p = dir.path().join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, before).unwrap();
    }
    // A dry run first: the requests it made.
    let dry = imagebump()
        .args([
            "run",
            "--dry-run",
            dir.path().to_str().unwrap(),
            "--config",
            &cfg,
        ])
        .args(["--output", "json"])
        .run();
    let report = dry.json();
    // One index for the repository, whatever number of charts and files name it, and one
    // tag list per OCI chart. The Applications' charts (web 1.0.0 and api 2.0.0 of the
    // Helm repository, web 1.0.0 of the registry: one manifest and one blob) are
    // downloaded once each, for their default values (which name no image here). Each OCI
    // version a bump moves from or to gives its appVersion: a manifest and its config blob
    // (web 1.0.0 and 1.2.0, api 2.0.0 and 2.3.0, whichever way the files write them); web
    // 1.0.0's manifest is the one read for its download.
    assert_eq!(report["requests"]["tagListPages"], 3, "{dry}");
    assert_eq!(report["requests"]["manifests"], 1 + 3, "{dry}");
    assert_eq!(report["requests"]["blobs"], 1 + 4, "{dry}");
    let mut requests = helm.requests();
    requests.sort();
    assert_eq!(
        requests,
        vec![
            "GET /charts/api-2.0.0.tgz 200",
            "GET /charts/index.yaml 200",
            "GET /charts/web-1.0.0.tgz 200"
        ]
    );
    // A HelmRelease whose HelmRepository is kept elsewhere is said, not an error.
    assert_eq!(report["errors"].as_array().unwrap().len(), 0, "{dry}");
    // Each chart bump carries its appVersion change: a classic chart's from the index
    // already read, an OCI chart's from the config blobs counted above.
    let mut app_versions: Vec<String> = report["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| format!("{} {} {}", u["file"], u["to"], u["appVersion"]))
        .collect();
    app_versions.sort();
    assert_eq!(
        app_versions,
        vec![
            r#""apps/multi.yaml" "1.2.0" {"from":"1.25.0","to":"1.27.0"}"#,
            r#""apps/multi.yaml" "2.1.0" {"from":"3.0.0","to":"3.1.0"}"#,
            // The two list elements of the ApplicationSet.
            r#""apps/set.yaml" "2.3.0" {"from":"3.0.0","to":"3.3.0"}"#,
            r#""apps/set.yaml" "2.3.0" {"from":"3.0.0","to":"3.3.0"}"#,
            r#""apps/web.yaml" "1.1.0" {"from":"1.25.0","to":"1.26.0"}"#,
            r#""flux/releases.yaml" "2.1.0" {"from":"3.0.0","to":"3.1.0"}"#,
            r#""kust/kustomization.yaml" "1.1.0" {"from":"1.25.0","to":"1.26.0"}"#,
            r#""umbrella/Chart.yaml" "1.1.0" {"from":"1.25.0","to":"1.26.0"}"#,
            r#""umbrella/Chart.yaml" "2.3.0" {"from":"3.0.0","to":"3.3.0"}"#,
        ],
        "{dry}"
    );

    let run = imagebump()
        .args([
            "run",
            "--write",
            dir.path().to_str().unwrap(),
            "--config",
            &cfg,
        ])
        .env("SOURCE_DATE_EPOCH", "1767225600")
        .run();
    let stderr = run.filtered_stderr();
    assert!(
        stderr.contains("flux/releases.yaml:34:9: HelmRelease chart api: HelmRepository missing is not in the repository; its version is not checked")
            && !stderr.contains("error:"),
        "{run}"
    );
    for (rel, before, after) in &files {
        let now = fs::read_to_string(dir.path().join(rel)).unwrap();
        if rel.ends_with("Chart.lock") {
            continue;
        }
        assert_eq!(&now, after, "{rel} (was:\n{before})\n{run}");
    }
    let lock = fs::read_to_string(dir.path().join("umbrella/Chart.lock")).unwrap();
    let chart: serde_json::Value =
        yaml_value(&fs::read_to_string(dir.path().join("umbrella/Chart.yaml")).unwrap());
    let locked: serde_json::Value = yaml_value(&lock);
    assert_eq!(locked["dependencies"][0]["version"], "1.1.0");
    assert_eq!(locked["dependencies"][1]["version"], "2.3.0");
    assert_eq!(locked["generated"], "2026-01-01T00:00:00Z");
    assert_eq!(
        locked["digest"],
        helm_digest(&chart["dependencies"], &locked["dependencies"]),
        "{lock}"
    );
    assert_eq!(helm.hits("/charts/index.yaml"), 2);
    assert_eq!(helm.hits("/charts/web-1.0.0.tgz"), 2);
}

fn yaml_value(text: &str) -> serde_json::Value {
    yaml_serde::from_str(text).unwrap()
}

/// Helm's `HashReq`, written out independently for the test: Go's `json.Marshal` of the
/// two lists of `{name, version, repository}` (in the struct's field order), SHA-256.
fn helm_digest(req: &serde_json::Value, lock: &serde_json::Value) -> String {
    let list = |v: &serde_json::Value| {
        let items: Vec<String> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                format!(
                    r#"{{"name":"{}","version":"{}","repository":"{}"}}"#,
                    d["name"].as_str().unwrap(),
                    d["version"].as_str().unwrap(),
                    d["repository"].as_str().unwrap()
                )
            })
            .collect();
        format!("[{}]", items.join(","))
    };
    let text = format!("[{},{}]", list(req), list(lock));
    support::sha256_digest(text.as_bytes())
}

#[test]
fn a_private_repository_gets_the_operators_credentials_and_bad_answers_are_errors_at_their_host() {
    let private = HelmRepo::start(Some(("ci", "s3cret-pass")));
    private.publish(
        "stable",
        &[chart("web", "1.0.0", "1"), chart("web", "1.0.1", "1")],
    );
    let broken = HelmRepo::start(None);
    fs::create_dir_all(broken.dir().join("html")).unwrap();
    fs::write(broken.dir().join("html/index.yaml"), "<html>login</html>").unwrap();
    broken.publish("other", &[chart("api", "1.0.0", "1")]);
    let app = |name: &str, repo: &str, chart: &str, extra: &str| {
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\nspec:\n  source:\n    repoURL: {repo}\n    chart: {chart}\n    targetRevision: 1.0.0{extra}\n"
        )
    };
    let files = [
        (
            "private.yaml",
            app("private", &format!("{}/stable", private.url()), "web", ""),
        ),
        (
            "pinned.yaml",
            app(
                "pinned",
                &format!("{}/stable", private.url()),
                "web",
                " # imagebump: pin",
            ),
        ),
        (
            "html.yaml",
            app("html", &format!("{}/html", broken.url()), "web", ""),
        ),
        (
            "unknown.yaml",
            app("unknown", &format!("{}/other", broken.url()), "web", ""),
        ),
    ];
    let dir = support::tree(&files);
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = cfg_dir.path().join("config.yaml");
    fs::write(
        &cfg,
        format!(
            "helm:\n  charts: true\nregistries:\n  - prefix: {}\n    url: {}\n    credentials: env:CHARTS_AUTH\n",
            private.host(),
            private.url()
        ),
    )
    .unwrap();
    let before = support::texts(dir.path());
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(dir.path())
        .arg("--config")
        .arg(&cfg)
        .env("CHARTS_AUTH", "ci:s3cret-pass")
        .code(1)
        .run();
    let out = run.filtered();
    assert!(!out.contains("s3cret-pass"), "{run}");
    assert!(out.contains("private.yaml:9"), "{run}");
    assert!(out.contains("1.0.0  1.0.1"), "{run}");
    let errors: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(
        errors,
        vec![
            format!(
                "error: html.yaml:9:21: app html: the default values of chart {}/html/web 1.0.0 not read: {}/html/index.yaml: not a Helm repository index: not a YAML mapping (is this the repository's URL?)",
                broken.url(),
                broken.url()
            ),
            format!(
                "error: unknown.yaml:9:21: app unknown: the default values of chart {}/other/web 1.0.0 not read: {}/other/index.yaml: the repository has no chart web 1.0.0",
                broken.url(),
                broken.url()
            ),
            format!(
                "error: {}/html/web: {}/html/index.yaml: not a Helm repository index: not a YAML mapping (is this the repository's URL?); 1 reference(s) not checked",
                broken.host(),
                broken.url()
            ),
            format!(
                "error: {}/other/web: {}/other/index.yaml: the repository has no chart web; 1 reference(s) not checked",
                broken.host(),
                broken.url()
            ),
        ],
        "{run}"
    );
    // The pinned one cost nothing; the private index was asked once without, once with
    // credentials (the 401 challenge), and each broken repository once.
    assert_eq!(
        private.requests(),
        vec![
            "GET /stable/index.yaml 401",
            "GET /stable/index.yaml 200",
            // The default values of web 1.0.0, once for the two apps.
            "GET /stable/web-1.0.0.tgz 200"
        ]
    );
    assert_eq!(broken.hits("/html/index.yaml"), 1);
    assert_eq!(broken.hits("/other/index.yaml"), 1);
    assert_eq!(support::texts(dir.path()), before);
}

#[test]
fn tags_explains_the_versions_of_a_classic_and_an_oci_chart() {
    let (helm, reg) = servers();
    let (_c, cfg) = operator_config(&reg);
    let classic = imagebump()
        .args([
            "tags",
            "--chart",
            &format!("{}/charts/web@1.0.0", helm.url()),
        ])
        .args(["--config", &cfg, "--output", "json"])
        .run();
    let json = classic.json();
    assert_eq!(
        json["image"],
        format!("{}/charts/web", helm.host()),
        "{classic}"
    );
    assert_eq!(json["current"], "1.0.0");
    assert_eq!(json["chosen"], "1.1.0", "{classic}");
    let tags: Vec<&str> = json["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tag"].as_str().unwrap())
        .collect();
    assert_eq!(tags.len(), 3, "{classic}");
    assert_eq!(
        helm.requests(),
        vec!["GET /charts/index.yaml 200".to_string()]
    );
    let oci = imagebump()
        .args([
            "tags",
            "--chart",
            &format!("oci://{}/charts/api@2.0.0", reg.host()),
        ])
        .args(["--config", &cfg, "--output", "json"])
        .run();
    assert_eq!(oci.json()["chosen"], "2.3.0", "{oci}");
    let bad = imagebump().args(["tags", "--chart", "nginx"]).code(2).run();
    assert!(bad.stderr.contains("--chart"), "{bad}");
}

/// A registry with nginx 1.25.0, 1.26.0 and busybox 1.36.0, 1.37.0: the images of the
/// charts' default values.
fn nginx_and_busybox() -> Registry {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("library/nginx", &["1.25.0", "1.26.0"]);
    reg.push_tags("tools/busybox", &["1.36.0", "1.37.0"]);
    reg
}

/// Chart-only apps: the images of the chart's default values, for the version in git.
#[test]
fn the_images_of_chart_only_apps_come_from_the_charts_default_values() {
    let reg = nginx_and_busybox();
    let host = reg.host();
    let web_values = format!(
        "replicas: 1\nimage:\n  repository: {host}/library/nginx\n  tag: \"1.25.0\"\nsidecar:\n  image: {host}/tools/busybox:1.36.0\nplaceholder:\n  image: \"{{{{ .Values.global.image }}}}\"\n"
    );
    let api_values = format!("image: {host}/library/nginx:1.25.0\n");
    let helm = HelmRepo::start(None);
    helm.publish(
        "charts",
        &[
            ChartSrc {
                name: "web",
                version: "1.0.0",
                app_version: "1.25.0",
                values: &web_values,
            },
            ChartSrc {
                name: "web",
                version: "1.1.0",
                app_version: "1.26.0",
                values: &web_values,
            },
        ],
    );
    let api = ChartSrc {
        name: "api",
        version: "2.0.0",
        app_version: "1.25.0",
        values: &api_values,
    };
    reg.push_chart("charts/api", &api, &support::charts::package(&api));
    let (_c, cfg) = operator_config(&reg);
    let web = format!(
        "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
spec:
  source:
    repoURL: {}/charts
    chart: web
    targetRevision: 1.0.0
    helm:
      valuesObject:
        replicas: 2
        sidecar:
          image: {host}/tools/busybox:1.36.0 # imagebump: pin
  destination:
    namespace: web
",
        helm.url()
    );
    let web2 = format!(
        "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web2
spec:
  source:
    repoURL: {}/charts
    chart: web
    targetRevision: 1.0.0
    helm:
      parameters:
        - name: image.tag
          value: 1.25.0
  destination:
    namespace: web2
",
        helm.url()
    );
    let api_app = format!(
        "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: api
spec:
  source:
    repoURL: oci://{host}/charts
    chart: api
    targetRevision: 2.0.0
  destination:
    namespace: api
"
    );
    // argocd-image-updater updates only the images it lists: its app gets its chart
    // bump, no chart defaults.
    let aiu = web2
        .replace("name: web2", "name: aiu\n  annotations:\n    argocd-image-updater.argoproj.io/write-back-method: argocd")
        .replace("namespace: web2", "namespace: aiu");
    let dir = support::tree(&[
        ("apps/web.yaml", &web),
        ("apps/web2.yaml", &web2),
        ("apps/api.yaml", &api_app),
        ("apps/aiu.yaml", &aiu),
    ]);
    let dry = imagebump()
        .args(["run", "--dry-run"])
        .arg(dir.path())
        .args(["--config", &cfg, "--group-by", "app", "--output", "json"])
        .run();
    let report = dry.json();
    // One index (for the chart bumps and the archives alike), one archive for the two
    // apps of web 1.0.0; the OCI chart: one manifest and one blob; tag lists of the
    // OCI chart, nginx and busybox; for their platforms, nginx's and busybox's current
    // and chosen images (a manifest and a config each; a chart has no platforms).
    assert_eq!(
        helm.requests(),
        vec![
            "GET /charts/index.yaml 200",
            "GET /charts/web-1.0.0.tgz 200"
        ]
    );
    assert_eq!(report["requests"]["tagListPages"], 4, "{dry}");
    assert_eq!(report["requests"]["manifests"], 1 + 4, "{dry}");
    assert_eq!(report["requests"]["blobs"], 1 + 2, "{dry}");
    // A chart bump and the image updates of one app are one change set.
    let sets: Vec<(String, usize)> = report["changeSets"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|c| {
            (
                c["group"].as_str().unwrap().to_string(),
                c["updates"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        sets,
        vec![
            ("aiu".to_string(), 1),
            ("api".to_string(), 1),
            ("web".to_string(), 2),
            ("web2".to_string(), 2)
        ],
        "{dry}"
    );

    let run = imagebump()
        .args(["run", "--write"])
        .arg(dir.path())
        .args(["--config", &cfg, "--group-by", "app"])
        .run();
    let web_after = web
        .replace("targetRevision: 1.0.0", "targetRevision: 1.1.0")
        .replace(
            "  destination:",
            "        image:\n          tag: 1.26.0\n  destination:",
        );
    let web2_after = web2.replace("targetRevision: 1.0.0", "targetRevision: 1.1.0").replace(
        "  destination:",
        &format!("      valuesObject:\n        sidecar:\n          image: {host}/tools/busybox:1.37.0\n  destination:"),
    );
    let api_after = api_app.replace(
        "  destination:",
        &format!("    helm:\n      valuesObject:\n        image: {host}/library/nginx:1.26.0\n  destination:"),
    );
    let texts = support::texts(dir.path());
    assert_eq!(texts["apps/web.yaml"], web_after, "{run}");
    assert_eq!(texts["apps/web2.yaml"], web2_after, "{run}");
    assert_eq!(texts["apps/api.yaml"], api_after, "{run}");
    assert_eq!(
        texts["apps/aiu.yaml"],
        aiu.replace("targetRevision: 1.0.0", "targetRevision: 1.1.0"),
        "{run}"
    );
}

/// A chart bump's pull request says which release of the application the new chart
/// installs: the appVersion of both versions, read from the index the run read anyway.
#[tokio::test(flavor = "multi_thread")]
async fn a_chart_bumps_pull_request_and_dry_run_say_the_app_version_change() {
    use support::github::FakeGitHub;
    let helm = HelmRepo::start(None);
    helm.publish(
        "charts",
        &[
            chart("web", "1.0.0", "1.25.0"),
            chart("web", "1.1.0", "1.26.0"),
        ],
    );
    let app = format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\nspec:\n  source:\n    repoURL: {}/charts\n    chart: web\n    targetRevision: 1.0.0\n",
        helm.url()
    );
    let work = support::make_worktree(&[("apps/web.yaml", &app)]);
    let server = support::GitServer::http_with_token(work.path(), "gitops", FakeGitHub::TOKEN);
    let forge = FakeGitHub::start().await;
    // The Helm repository's host configured as a registry would be: a request for an
    // image label (`/v2/...`) would reach it and show in its log.
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = cfg_dir.path().join("config.yaml");
    fs::write(
        &cfg,
        format!(
            "registries:\n  - prefix: {}\n    url: {}\n",
            helm.host(),
            helm.url()
        ),
    )
    .unwrap();
    let run = |extra: &'static [&'static str]| {
        imagebump()
            .arg("run")
            .arg(server.url())
            .arg("--config")
            .arg(&cfg)
            .args(["--forge", "github", "--forge-url"])
            .arg(forge.api_url())
            .arg("--forge-repo")
            .arg(format!("{}/{}", FakeGitHub::OWNER, FakeGitHub::REPO))
            .args(extra)
            .env("GITHUB_TOKEN", FakeGitHub::TOKEN)
    };
    let dry = run(&["--dry-run"]).run_async().await;
    let line = dry
        .stdout
        .lines()
        .find(|l| l.contains("appVersion"))
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(
        line,
        format!(
            "{}/charts/web 1.0.0 1.1.0 (appVersion 1.25.0 → 1.26.0) apps/web.yaml:9",
            helm.url()
        ),
        "{dry}"
    );
    run(&[]).run_async().await;
    let pulls = forge.pulls();
    assert_eq!(pulls.len(), 1);
    let body = pulls[0].body.clone().unwrap_or_default();
    assert!(
        body.contains(&format!(
            "| `{}/charts/web` | `1.0.0` | `1.1.0` (appVersion 1.25.0 → 1.26.0) | `apps/web.yaml` |  |\n",
            helm.url()
        )),
        "{body}"
    );
    // Each run: the index once, the chart's archive once (its default values); nothing
    // more for the appVersion, and no image label asked of a Helm repository.
    let mut requests = helm.requests();
    requests.sort();
    assert_eq!(
        requests,
        vec![
            "GET /charts/index.yaml 200",
            "GET /charts/index.yaml 200",
            "GET /charts/web-1.0.0.tgz 200",
            "GET /charts/web-1.0.0.tgz 200"
        ]
    );
}

/// A Helm repository answering 500 is asked once in the run (its retries aside), however
/// many stages want its index: the chart bump, the chart-only app's default values, a
/// `Chart.yaml` dependency. The error names the host; the rest of the run carries on.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_index_is_asked_once_per_run() {
    use wiremock::matchers::path;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    Mock::given(path("/charts/index.yaml"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&server)
        .await;
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/ok", &["1.0.0", "1.1.0"]);
    let url = server.uri();
    let app = format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\nspec:\n  source:\n    repoURL: {url}/charts\n    chart: web\n    targetRevision: 1.0.0\n"
    );
    let chart_yaml = format!(
        "apiVersion: v2\nname: umbrella\nversion: 0.1.0\ndependencies:\n  - name: api\n    version: 2.0.0\n    repository: {url}/charts\n"
    );
    let ok = format!(
        "images:\n  - name: {}/team/ok\n    newTag: 1.0.0\n",
        reg.host()
    );
    let dir = support::tree(&[
        ("apps/web.yaml", app.as_str()),
        ("umbrella/Chart.yaml", chart_yaml.as_str()),
        ("ok/kustomization.yaml", ok.as_str()),
    ]);
    let (_c, cfg) = operator_config(&reg);
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(dir.path())
        .args(["--config", &cfg])
        .code(1)
        .run_async()
        .await;
    run.assert_stdout_contains("+    newTag: 1.1.0");
    let host = url.trim_start_matches("http://");
    let errors: Vec<String> = run
        .filtered_stderr()
        .lines()
        .filter(|l| l.starts_with("error: "))
        .map(str::to_string)
        .collect();
    assert_eq!(errors.len(), 3, "{run}");
    assert!(
        errors.iter().all(|e| e.contains("/charts/index.yaml")),
        "{run}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("error: apps/web.yaml:9:21: app web")),
        "{run}"
    );
    let at_host = run
        .stderr
        .lines()
        .filter(|l| l.starts_with(&format!("error: {host}/charts/")))
        .count();
    assert_eq!(at_host, 2, "{run}");
    // One request and its three retries (four attempts), not one per stage.
    let asked = server.received_requests().await.unwrap_or_default();
    assert_eq!(asked.len(), 4, "{run}");
}

/// A chart whose default values run two images (and a placeholder).
fn web_with_images<'a>(version: &'a str, values: &'a str) -> ChartSrc<'a> {
    ChartSrc {
        name: "web",
        version,
        app_version: "1.25.0",
        values,
    }
}

/// The images of a chart's default values: nginx and busybox of an unreachable registry
/// (`scan` lists them without asking it).
const WEB_VALUES: &str = "image:\n  repository: registry.invalid/library/nginx\n  tag: \"1.25.0\"\nsidecar:\n  image: registry.invalid/tools/busybox:1.36.0\nplaceholder:\n  image: \"{{ .Values.global.image }}\"\n";

/// `(file, kind, image, tag)` of every entry of a `scan --output json`.
fn scanned(run: &support::cli::Run) -> Vec<String> {
    run.json()["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {}",
                r["file"].as_str().unwrap(),
                r["kind"].as_str().unwrap(),
                r["image"].as_str().unwrap(),
                r["tag"].as_str().unwrap_or("-")
            )
        })
        .collect()
}

/// `scan` lists the images of chart-only apps: it downloads each chart version's archive
/// once (through the index), asks no registry for tags; `--offline` asks nothing and says
/// which apps' charts it did not read; `helm: {charts: false}` turns chart support off.
#[test]
fn scan_lists_the_images_of_chart_only_apps_unless_offline() {
    let helm = HelmRepo::start(None);
    helm.publish("charts", &[web_with_images("1.0.0", WEB_VALUES)]);
    let app = format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\nspec:\n  source:\n    repoURL: {}/charts\n    chart: web\n    targetRevision: 1.0.0\n    helm:\n      valuesObject:\n        sidecar:\n          image: registry.invalid/tools/busybox:1.36.0\n",
        helm.url()
    );
    let dir = support::tree(&[("apps/web.yaml", app.as_str())]);
    let before = support::texts(dir.path());
    let scan = imagebump()
        .arg("scan")
        .arg(dir.path())
        .args(["--output", "json"])
        .run();
    let chart = format!("{}/charts/web", helm.host());
    assert_eq!(
        scanned(&scan),
        vec![
            "apps/web.yaml helm-image-string registry.invalid/tools/busybox 1.36.0".to_string(),
            format!("apps/web.yaml helm-chart {chart} 1.0.0"),
            // The chart's own default, which the app does not set: written to the app.
            "apps/web.yaml chart-default registry.invalid/library/nginx 1.25.0".to_string(),
        ],
        "{scan}"
    );
    assert_eq!(
        helm.requests(),
        vec![
            "GET /charts/index.yaml 200",
            "GET /charts/web-1.0.0.tgz 200"
        ]
    );
    let text = imagebump().arg("scan").arg(dir.path()).run();
    text.assert_stdout_contains("registry.invalid/library/nginx");
    text.assert_stdout_contains("managed, writes apps/web.yaml");

    // Offline: no request, no chart default, a note at the app's version.
    let before_offline = helm.requests().len();
    let offline = imagebump()
        .args(["scan", "--offline"])
        .arg(dir.path())
        .args(["--output", "json"])
        .run();
    assert_eq!(
        scanned(&offline),
        vec![
            "apps/web.yaml helm-image-string registry.invalid/tools/busybox 1.36.0".to_string(),
            format!("apps/web.yaml helm-chart {chart} 1.0.0"),
        ],
        "{offline}"
    );
    let notes = offline.json()["notes"].to_string();
    assert!(
        notes.contains(&format!(
            "app web: the images of chart {}/charts/web 1.0.0 not listed (--offline: the chart is not downloaded)",
            helm.url()
        )),
        "{offline}"
    );
    let env_offline = imagebump()
        .arg("scan")
        .arg(dir.path())
        .env("IMAGEBUMP_OFFLINE", "true")
        .run();
    assert!(
        !env_offline.stdout.contains("library/nginx"),
        "{env_offline}"
    );
    assert_eq!(helm.requests().len(), before_offline);

    // Chart support off in the operator's configuration: no chart reference at all.
    let cfg = tempfile::tempdir().unwrap();
    let cfg_file = cfg.path().join("config.yaml");
    fs::write(&cfg_file, "helm:\n  charts: false\n").unwrap();
    let off = imagebump()
        .arg("scan")
        .arg(dir.path())
        .arg("--config")
        .arg(&cfg_file)
        .args(["--output", "json"])
        .run();
    assert_eq!(
        scanned(&off),
        vec!["apps/web.yaml helm-image-string registry.invalid/tools/busybox 1.36.0".to_string()],
        "{off}"
    );
    assert_eq!(helm.requests().len(), before_offline);
    assert_eq!(support::texts(dir.path()), before);
}

/// An ApplicationSet whose template names its chart, repository and version literally:
/// the chart's images are the same for every app it makes, and their new tags are written
/// once, in the template's `helm.valuesObject`. An image one generated app sets itself is
/// left to it; a template taking its version from a parameter gets no chart defaults.
#[test]
fn an_applicationsets_literal_chart_gets_its_chart_defaults_in_the_template() {
    let reg = nginx_and_busybox();
    let host = reg.host();
    let values = format!(
        "image:\n  repository: {host}/library/nginx\n  tag: \"1.25.0\"\nsidecar:\n  image: {host}/tools/busybox:1.36.0\n"
    );
    let helm = HelmRepo::start(None);
    helm.publish(
        "charts",
        &[
            web_with_images("1.0.0", &values),
            web_with_images("1.1.0", &values),
        ],
    );
    let (_c, cfg) = operator_config(&reg);
    let set = |name: &str, elements: &str, revision: &str| {
        format!(
            "apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: {name}
  namespace: argocd
spec:
  generators:
    - list:
        elements:
{elements}
  template:
    metadata:
      name: '{name}-{{{{env}}}}'
    spec:
      project: default
      source:
        repoURL: {}/charts
        chart: web
        targetRevision: {revision}
        helm:
          parameters:
            - name: replicas
              value: '{{{{replicas}}}}'
      destination:
        namespace: '{{{{env}}}}'
",
            helm.url()
        )
    };
    // A literal set whose template sets the sidecar itself (a parameter, for every app it
    // makes): only nginx is a chart default.
    let literal = set(
        "web",
        "          - env: dev\n            replicas: '1'\n          - env: prod\n            replicas: '3'",
        "1.0.0",
    )
    .replace(
        "              value: '{{replicas}}'\n",
        &format!("              value: '{{{{replicas}}}}'\n            - name: sidecar.image\n              value: {host}/tools/busybox:1.36.0\n"),
    );
    let templated = set(
        "api",
        "          - env: dev\n            replicas: '1'\n            version: 1.0.0",
        "'{{version}}'",
    );
    // A literal set whose apps each set nginx's tag themselves, from their element: only
    // busybox is a chart default, written once in the template.
    let own_tags = set(
        "own",
        "          - env: dev\n            replicas: '1'\n            tag: 1.25.0\n          - env: prod\n            replicas: '3'\n            tag: 1.24.0",
        "1.0.0",
    )
    .replace(
        "              value: '{{replicas}}'\n",
        "              value: '{{replicas}}'\n            - name: image.tag\n              value: '{{tag}}'\n",
    );
    let dir = support::tree(&[
        ("sets/web.yaml", literal.as_str()),
        ("sets/api.yaml", templated.as_str()),
        ("sets/own.yaml", own_tags.as_str()),
    ]);
    let run = imagebump()
        .args(["run", "--write"])
        .arg(dir.path())
        .args(["--config", &cfg])
        .run();
    let texts = support::texts(dir.path());
    let literal_after = literal
        .replace("targetRevision: 1.0.0", "targetRevision: 1.1.0")
        .replace(
            "      destination:",
            "          valuesObject:\n            image:\n              tag: 1.26.0\n      destination:",
        );
    // The sidecar the template sets is not a chart default: not added to valuesObject.
    assert_eq!(texts["sets/web.yaml"], literal_after, "{run}");
    assert_eq!(
        texts["sets/api.yaml"],
        templated.replace("version: 1.0.0", "version: 1.1.0"),
        "{run}"
    );
    assert_eq!(
        texts["sets/own.yaml"],
        own_tags
            .replace("targetRevision: 1.0.0", "targetRevision: 1.1.0")
            .replace(
                "      destination:",
                &format!("          valuesObject:\n            sidecar:\n              image: {host}/tools/busybox:1.37.0\n      destination:"),
            ),
        "{run}"
    );
    // One archive for the one chart version the sets name; one index.
    assert_eq!(
        helm.requests(),
        vec![
            "GET /charts/index.yaml 200",
            "GET /charts/web-1.0.0.tgz 200"
        ]
    );
}
