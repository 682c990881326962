//! What is not an image the repository deploys is never an error and never edited: the
//! patterns and schema types of policy engines (Kyverno, Gatekeeper, kro), a Flux
//! ImageRepository filled in by a post-build variable, and the images of build and
//! development tools' configurations (Skaffold, kind, kpt; docker-compose, devspace and ko
//! files are no manifests). Driven through the real binary against a real registry.

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

use support::cli::imagebump;
use support::{Registry, RegistryMode};

/// A registry holding `nginx` and `busybox` tags, and a config pointing Docker Hub at it.
fn setup() -> (Registry, tempfile::TempDir, String) {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("library/nginx", &["1.25.0", "1.27.0"]);
    reg.push_tags("library/busybox", &["1.36.0", "1.37.0"]);
    reg.push_tags("acme/app", &["1.0.0", "1.1.0"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("imagebump.yaml");
    let text = format!(
        "registries:\n  - prefix: docker.io\n    url: {}\n",
        reg.base_url()
    );
    fs::write(&path, text).unwrap();
    let cfg = path.to_string_lossy().to_string();
    (reg, dir, cfg)
}

const KYVERNO: &str = r#"apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: restrict-image-registries
spec:
  rules:
    - name: validate-registries
      match:
        any:
        - resources:
            kinds:
            - Pod
      validate:
        pattern:
          spec:
            containers:
            - image: "public.ecr.aws/*"
            =(initContainers):
            - image: "eu.foo.io/* | bar.io/*"
    - name: pinned-tag
      validate:
        pattern:
          spec:
            containers:
            - image: nginx:1.25.0
    - name: add-sidecar
      mutate:
        patchStrategicMerge:
          spec:
            containers:
            - name: sidecar
              image: busybox:1.36.0 # imagebump: image
"#;

const GATEKEEPER: &str = r#"apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredImage
metadata:
  name: must-run-nginx
spec:
  parameters:
    image: nginx:1.25.0
"#;

const KRO: &str = r#"apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: webapp
spec:
  schema:
    apiVersion: v1alpha1
    kind: WebApp
    spec:
      name: string
      image: string | default=nginx
      sidecar:
        image: string
  resources:
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: ${schema.spec.name}
        spec:
          template:
            spec:
              containers:
                - name: app
                  image: ${schema.spec.image}
                - name: proxy
                  image: nginx:1.25.0
"#;

const FLUX: &str = r#"apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImageRepository
metadata:
  name: app
  namespace: flux-system
spec:
  image: ${IMAGE_URI}
  interval: 5m
---
apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImagePolicy
metadata:
  name: app
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: app
  policy:
    semver:
      range: 1.x
"#;

const FLUX_DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: acme/app:1.0.0 # {"$imagepolicy": "flux-system:app"}
"#;

/// Policy engines' patterns and schema types, and a Flux ImageRepository named by a
/// post-build variable: listed as unmanaged with why, exit 0; a marked value in a policy
/// and a literal image in a kro resource template are managed and move.
#[test]
fn patterns_and_schema_types_are_listed_not_errors() {
    let (_reg, _c, cfg) = setup();
    let repo = support::tree(&[
        ("policies/kyverno.yaml", KYVERNO),
        ("policies/gatekeeper.yaml", GATEKEEPER),
        ("kro/webapp.yaml", KRO),
        ("flux/image.yaml", FLUX),
        ("apps/app.yaml", FLUX_DEPLOYMENT),
    ]);
    let dir = repo.path().to_str().unwrap();
    let scan = imagebump().args(["scan", dir, "--config", &cfg]).run();
    let expected = [
        "LOCATION                    IMAGE                   CURRENT  POLICY             STATUS",
        "kro/webapp.yaml:11          string | default=nginx  -        -                  unmanaged: in a kro ResourceGraphDefinition's schema: a field's type, not an image",
        "kro/webapp.yaml:13          string                  -        -                  unmanaged: in a kro ResourceGraphDefinition's schema: a field's type, not an image",
        "kro/webapp.yaml:26          ${schema.spec.image}    -        -                  unmanaged: not an image: a template, filled in at deploy time",
        "kro/webapp.yaml:28          nginx                   1.25.0   semver (built-in)  managed",
        "policies/gatekeeper.yaml:7  nginx                   1.25.0   -                  unmanaged: in a Gatekeeper K8sRequiredImage: a policy's pattern, not an image the repository deploys",
        "policies/kyverno.yaml:17    public.ecr.aws/*        -        -                  unmanaged: in a Kyverno ClusterPolicy: a policy's pattern, not an image the repository deploys",
        "policies/kyverno.yaml:19    eu.foo.io/* | bar.io/*  -        -                  unmanaged: in a Kyverno ClusterPolicy: a policy's pattern, not an image the repository deploys",
        "policies/kyverno.yaml:25    nginx                   1.25.0   -                  unmanaged: in a Kyverno ClusterPolicy: a policy's pattern, not an image the repository deploys",
        "policies/kyverno.yaml:32    busybox                 1.36.0   semver (built-in)  managed",
        "apps/app.yaml:10            ${IMAGE_URI}            1.0.0    -                  unmanaged: ImageRepository flux-system/app: spec.image is a template, filled in at deploy time",
        "",
        "10 references in 5 files (2 managed, 8 unmanaged)",
    ];
    let lines: Vec<&str> = scan.stdout.lines().map(str::trim_end).collect();
    assert_eq!(lines, expected, "{scan}");
    scan.assert_stderr_contains("note: flux/image.yaml:7:10: ImageRepository flux-system/app: spec.image ${IMAGE_URI} is a template, filled in at deploy time: the setters of its policies are left alone");
    assert!(!scan.stderr.contains("error"), "{scan}");

    let dry = imagebump()
        .args(["run", dir, "--config", &cfg, "--dry-run"])
        .run();
    assert!(!dry.stderr.contains("error"), "{dry}");
    dry.assert_stdout_contains("busybox:1.36.0");
    let before = support::texts(repo.path());
    imagebump()
        .args(["run", dir, "--config", &cfg, "--write"])
        .run();
    let after = support::texts(repo.path());
    let mut want = before.clone();
    for (file, old, new) in [
        ("policies/kyverno.yaml", "busybox:1.36.0", "busybox:1.37.0"),
        (
            "kro/webapp.yaml",
            "image: nginx:1.25.0",
            "image: nginx:1.27.0",
        ),
    ] {
        let text = want.get_mut(file).unwrap();
        assert_eq!(text.matches(old).count(), 1, "{file}: {old}");
        *text = text.replace(old, new);
    }
    assert_eq!(after, want);
}

const SKAFFOLD: &str = r#"apiVersion: skaffold/v4beta6
kind: Config
metadata:
  name: leeroy
build:
  artifacts:
    - image: leeroy-web
      context: leeroy-web
    - image: nginx:1.25.0
      context: leeroy-app
manifests:
  rawYaml:
    - k8s/*.yaml
deploy:
  kubectl: {}
"#;

const KIND_CLUSTER: &str = r#"apiVersion: kind.x-k8s.io/v1alpha4
kind: Cluster
nodes:
  - role: control-plane
    image: kindest/node:v1.29.2
"#;

const KPTFILE: &str = r#"apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
    - image: gcr.io/kpt-fn/set-namespace:v0.4.1
"#;

const COMPOSE: &str = r#"services:
  web:
    image: nginx:1.25.0
    build: .
"#;

const DEVSPACE: &str = r#"version: v2beta1
images:
  app:
    image: busybox:1.36.0
    dockerfile: ./Dockerfile
"#;

const KO: &str = r#"defaultBaseImage: busybox:1.36.0
builds:
  - id: app
    dir: ./cmd/app
"#;

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: web
          image: nginx:1.25.0
"#;

/// Build and development tools' configurations are not read: their images are built or
/// run on a developer's machine. Only the Deployment the repository deploys is listed and
/// moved; every other file keeps its bytes.
#[test]
fn build_tool_configs_are_not_deployed_images() {
    let (_reg, _c, cfg) = setup();
    let repo = support::tree(&[
        ("skaffold.yaml", SKAFFOLD),
        ("kind-cluster.yaml", KIND_CLUSTER),
        ("pkg/Kptfile.yaml", KPTFILE),
        ("docker-compose.yaml", COMPOSE),
        ("devspace.yaml", DEVSPACE),
        (".ko.yaml", KO),
        ("k8s/web.yaml", DEPLOYMENT),
    ]);
    let dir = repo.path().to_str().unwrap();
    let scan = imagebump().args(["scan", dir, "--config", &cfg]).run();
    let lines: Vec<&str> = scan.stdout.lines().map(str::trim_end).collect();
    assert_eq!(
        lines,
        [
            "LOCATION         IMAGE  CURRENT  POLICY             STATUS",
            "k8s/web.yaml:10  nginx  1.25.0   semver (built-in)  managed",
            "",
            "1 references in 4 files (1 managed, 0 unmanaged)",
        ],
        "{scan}"
    );
    assert_eq!(scan.stderr, "", "{scan}");
    let before = support::texts(repo.path());
    imagebump()
        .args(["run", dir, "--config", &cfg, "--write"])
        .run();
    let mut want = before.clone();
    let web = want.get_mut("k8s/web.yaml").unwrap();
    *web = web.replace("nginx:1.25.0", "nginx:1.27.0");
    assert_eq!(support::texts(repo.path()), want);
}

const BASE_DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: web
          image: nginx:1.25.0
"#;

const GENERATED_OVERLAY: &str = r#"# Code generated by hack/overlays.sh. DO NOT EDIT.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../base
images:
  - name: nginx
    newTag: 1.25.0
"#;

const GENERATED_MANIFEST: &str = r#"---
# DO NOT EDIT: rendered by `make manifests` from config/
apiVersion: apps/v1
kind: Deployment
metadata:
  name: job
spec:
  template:
    spec:
      containers:
        - name: job
          image: busybox:1.36.0
"#;

const GENERATED_VALUES: &str = r#"image:
  repository: acme/app
  tag: 1.0.0
# Code generated by chart-gen. DO NOT EDIT.
"#;

const PLAIN: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: plain
spec:
  template:
    spec:
      containers:
        - name: plain
          image: busybox:1.36.0
"#;

fn generated_tree() -> tempfile::TempDir {
    support::tree(&[
        ("base/deployment.yaml", BASE_DEPLOYMENT),
        (
            "base/kustomization.yaml",
            "resources:\n  - deployment.yaml\n",
        ),
        ("overlays/prod/kustomization.yaml", GENERATED_OVERLAY),
        ("generated/job.yaml", GENERATED_MANIFEST),
        ("charts/app/values.yaml", GENERATED_VALUES),
        ("apps/plain.yaml", PLAIN),
    ])
}

/// Files that say they are generated are listed with the line that says so and the
/// setting that allows editing them, and never edited: `run --write` changes only the
/// plain manifest, and the generated overlay renders exactly as before.
#[test]
fn generated_files_are_listed_and_not_edited() {
    support::require_tool("kubectl", "kubernetes-client");
    let (_reg, _c, cfg) = setup();
    let repo = generated_tree();
    let dir = repo.path().to_str().unwrap();
    let scan = imagebump().args(["scan", dir, "--config", &cfg]).run();
    let lines: Vec<&str> = scan.stdout.lines().map(str::trim_end).collect();
    assert_eq!(lines, GENERATED_SCAN, "{scan}");
    assert_eq!(scan.stderr, "", "{scan}");

    let dry = imagebump()
        .args(["run", dir, "--config", &cfg, "--dry-run"])
        .run();
    for reason in [
        "overlays/prod/kustomization.yaml is generated (line 1 says DO NOT EDIT): not edited; scan.editGenerated: true edits it",
        "generated/job.yaml is generated (line 2 says DO NOT EDIT): not edited; scan.editGenerated: true edits it",
        "charts/app/values.yaml is generated (line 4 says DO NOT EDIT): not edited; scan.editGenerated: true edits it",
    ] {
        dry.assert_stdout_contains(reason);
    }
    let render_before = support::kustomize_build(&repo.path().join("overlays/prod"));
    let before = support::texts(repo.path());
    imagebump()
        .args(["run", dir, "--config", &cfg, "--write"])
        .run();
    let mut want = before.clone();
    let plain = want.get_mut("apps/plain.yaml").unwrap();
    *plain = plain.replace("busybox:1.36.0", "busybox:1.37.0");
    assert_eq!(support::texts(repo.path()), want);
    assert_eq!(
        support::kustomize_build(&repo.path().join("overlays/prod")),
        render_before
    );
}

const GENERATED_SCAN: [&str; 8] = [
    "LOCATION                            IMAGE     CURRENT  POLICY             STATUS",
    "apps/plain.yaml:10                  busybox   1.36.0   semver (built-in)  managed",
    "base/deployment.yaml:10             nginx     1.25.0   -                  unmanaged: overridden by overlays/prod/kustomization.yaml:7",
    "charts/app/values.yaml:3            acme/app  1.0.0    -                  unmanaged: charts/app/values.yaml is generated (line 4 says DO NOT EDIT): not edited; scan.editGenerated: true edits it",
    "generated/job.yaml:12               busybox   1.36.0   -                  unmanaged: generated/job.yaml is generated (line 2 says DO NOT EDIT): not edited; scan.editGenerated: true edits it",
    "overlays/prod/kustomization.yaml:8  nginx     1.25.0   -                  unmanaged: overlays/prod/kustomization.yaml is generated (line 1 says DO NOT EDIT): not edited; scan.editGenerated: true edits it",
    "",
    "5 references in 6 files (1 managed, 4 unmanaged)",
];

/// `scan.editGenerated: true` in the repository's own imagebump.yaml edits them: each
/// generated file's image moves, and the overlay renders exactly the new nginx tag.
#[test]
fn edit_generated_setting_edits_them() {
    support::require_tool("kubectl", "kubernetes-client");
    let (_reg, _c, cfg) = setup();
    let repo = generated_tree();
    fs::write(
        repo.path().join("imagebump.yaml"),
        "scan:\n  editGenerated: true\n",
    )
    .unwrap();
    let dir = repo.path().to_str().unwrap();
    let render_before = support::kustomize_build(&repo.path().join("overlays/prod"));
    let before = support::texts(repo.path());
    imagebump()
        .args(["run", dir, "--config", &cfg, "--write"])
        .run();
    let mut want = before.clone();
    for (file, old, new) in [
        ("apps/plain.yaml", "busybox:1.36.0", "busybox:1.37.0"),
        ("generated/job.yaml", "busybox:1.36.0", "busybox:1.37.0"),
        ("charts/app/values.yaml", "tag: 1.0.0", "tag: 1.1.0"),
        (
            "overlays/prod/kustomization.yaml",
            "newTag: 1.25.0",
            "newTag: 1.27.0",
        ),
    ] {
        let text = want.get_mut(file).unwrap();
        assert_eq!(text.matches(old).count(), 1, "{file}: {old}");
        *text = text.replace(old, new);
    }
    assert_eq!(support::texts(repo.path()), want);
    let render_after = support::kustomize_build(&repo.path().join("overlays/prod"));
    assert_ne!(render_after, render_before);
    assert_eq!(
        render_after,
        render_before.replace("image: nginx:1.25.0", "image: nginx:1.27.0")
    );
}

const ARGO_APP: &str = r#"apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: argocd
  annotations:
    argocd-image-updater.argoproj.io/image-list: web=nginx
    argocd-image-updater.argoproj.io/write-back-method: git
spec:
  project: default
  source:
    repoURL: https://git.example.test/gitops.git
    targetRevision: main
    path: apps/web
  destination:
    server: https://kubernetes.default.svc
    namespace: web
"#;

const GENERATED_OVERRIDE: &str = r#"# DO NOT EDIT: written by the release pipeline
kustomize:
  images:
  - nginx:1.25.0
"#;

/// An Argo CD override file that says it is generated (read with its Application, not on
/// its own) is not written to either: the reference is listed with why, nothing changes.
#[test]
fn a_generated_argocd_override_file_is_not_written() {
    let (_reg, _c, cfg) = setup();
    let repo = support::tree(&[
        ("argocd/web.yaml", ARGO_APP),
        (
            "apps/web/kustomization.yaml",
            "resources:\n  - deployment.yaml\n",
        ),
        ("apps/web/deployment.yaml", BASE_DEPLOYMENT),
        ("apps/web/.argocd-source-web.yaml", GENERATED_OVERRIDE),
    ]);
    let dir = repo.path().to_str().unwrap();
    let scan = imagebump().args(["scan", dir, "--config", &cfg]).run();
    let lines: Vec<&str> = scan.stdout.lines().map(str::trim_end).collect();
    assert_eq!(
        lines,
        [
            "app web",
            "  LOCATION                            IMAGE  CURRENT  POLICY  STATUS",
            "  apps/web/deployment.yaml:10         nginx  1.25.0   -       unmanaged: not what Argo CD renders for app web: it renders apps/web/.argocd-source-web.yaml:4",
            "  apps/web/.argocd-source-web.yaml:4  nginx  1.25.0   -       unmanaged: apps/web/.argocd-source-web.yaml is generated (line 1 says DO NOT EDIT): not edited; scan.editGenerated: true edits it",
            "",
            "",
            "2 references in 3 files (0 managed, 2 unmanaged)",
        ],
        "{scan}"
    );
    let before = support::texts(repo.path());
    imagebump()
        .args(["run", dir, "--config", &cfg, "--write"])
        .run();
    assert_eq!(support::texts(repo.path()), before);
}

const VARIABLE_APP: &str = r#"apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: argocd
  annotations:
    argocd-image-updater.argoproj.io/image-list: web=${IMAGE}, other=ghcr.io/acme/*
spec:
  project: default
  source:
    repoURL: https://git.example.test/gitops.git
    targetRevision: main
    path: k
    kustomize:
      images:
        - nginx=${REG}/nginx:${TAG}
        - "busybox:1.*"
  destination:
    server: https://kubernetes.default.svc
    namespace: web
"#;

const VARIABLE_KUSTOMIZATION: &str = r#"resources:
  - d.yaml
images:
  - name: nginx
    newName: ${REGISTRY}/nginx
    newTag: ${TAG}
  - name: busybox
    newTag: "1.*"
  - name: redis
    newName: "registry.example.com/*"
"#;

const VARIABLE_DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
spec:
  template:
    spec:
      containers:
        - name: a
          image: nginx:1.25.0
        - name: b
          image: busybox:1.36.0
        - name: c
          image: redis:7.0.0
"#;

const VARIABLE_SETTERS: &str = r#"apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImageRepository
metadata:
  name: app
  namespace: flux-system
spec:
  image: ghcr.io/acme/app
---
apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImagePolicy
metadata:
  name: app
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: app
  policy:
    semver:
      range: 1.x
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/acme/app:${TAG} # {"$imagepolicy": "flux-system:app"}
        - name: app2
          image: ${IMAGE} # {"$imagepolicy": "flux-system:app"}
"#;

/// Variables and patterns where a kustomization's `images:` entry, a Flux setter's value
/// or an argocd-image-updater image list names an image are listed (or, for the
/// annotation, noted) with why, never an error, and nothing is written.
#[test]
fn variables_in_entries_setters_and_image_lists_are_not_errors() {
    let (_reg, _c, cfg) = setup();
    let repo = support::tree(&[
        ("argocd/app.yaml", VARIABLE_APP),
        ("k/kustomization.yaml", VARIABLE_KUSTOMIZATION),
        ("k/d.yaml", VARIABLE_DEPLOYMENT),
        ("f/flux.yaml", VARIABLE_SETTERS),
    ]);
    let dir = repo.path().to_str().unwrap();
    let scan = imagebump().args(["scan", dir, "--config", &cfg]).run();
    let lines: Vec<&str> = scan.stdout.lines().map(str::trim_end).collect();
    assert_eq!(lines, VARIABLE_SCAN, "{scan}");
    let notes: Vec<&str> = scan.stderr.lines().collect();
    assert_eq!(
        notes,
        [
            "note: argocd/app.yaml:4:9: Application web (annotations): the write-back method is argocd (AIU's default): AIU would change the Application in the cluster; imagebump writes git through a pull request",
            "note: argocd/app.yaml:4:9: Application web: image ${IMAGE} is a template, filled in at deploy time: left alone",
            "note: argocd/app.yaml:4:9: Application web: image ghcr.io/acme/* is a pattern matching images (`*`, `?`, `!`), not one image: left alone",
        ],
        "{scan}"
    );
    let before = support::texts(repo.path());
    imagebump()
        .args(["run", dir, "--config", &cfg, "--write"])
        .run();
    assert_eq!(support::texts(repo.path()), before);
}

const VARIABLE_SCAN: [&str; 15] = [
    "app web",
    "  LOCATION                 IMAGE                   CURRENT  POLICY  STATUS",
    "  k/d.yaml:10              nginx                   1.25.0   -       unmanaged: overridden by k/kustomization.yaml:4",
    "  k/d.yaml:12              busybox                 1.36.0   -       unmanaged: overridden by argocd/app.yaml (kustomize.images)",
    "  k/d.yaml:14              redis                   7.0.0    -       unmanaged: app web is configured by annotations, which does not list this image",
    "  k/kustomization.yaml:6   ${REGISTRY}/nginx       -        -       unmanaged: the image name is a template, filled in at deploy time",
    "  k/kustomization.yaml:8   busybox                 -        -       unmanaged: newTag is a pattern matching images (`*`, `?`, `!`), not one image",
    "  k/kustomization.yaml:10  registry.example.com/*  -        -       unmanaged: the image name is a pattern matching images (`*`, `?`, `!`), not one image",
    "",
    "not in an Argo CD app",
    "  LOCATION        IMAGE             CURRENT  POLICY  STATUS",
    "  f/flux.yaml:30  ghcr.io/acme/app  -        -       unmanaged: the value the Flux setter marks, ghcr.io/acme/app:${TAG} is a template, filled in at deploy time: not edited",
    "  f/flux.yaml:32  ghcr.io/acme/app  -        -       unmanaged: the value the Flux setter marks, ${IMAGE} is a template, filled in at deploy time: not edited",
    "",
    "8 references in 4 files (0 managed, 8 unmanaged)",
];
