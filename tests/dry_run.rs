//! End to end against real parts: the binary, a real `docker-registry` (plain HTTP, TLS with
//! a private CA, htpasswd Basic auth), and real git transports (git daemon, smart HTTP with a
//! token).

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

use support::cli::{imagebump, Run};
use support::{GitServer, Registry, RegistryMode};

fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo")
}

/// Every file under `dir` with its bytes, for "nothing else changed" assertions.
fn snapshot_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in walk(dir) {
        let rel = entry
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .to_string();
        if !rel.starts_with(".git/") {
            out.insert(rel, fs::read(&entry).unwrap());
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in snapshot_tree(from) {
        let dest = to.join(&rel);
        fs::create_dir_all(dest.parent().unwrap()).unwrap();
        fs::write(dest, bytes).unwrap();
    }
}

/// Seed the registry with the demo's tags (fixtures/demo/registry.txt).
fn seed_demo(reg: &Registry) {
    let listing = fs::read_to_string(demo_dir().join("registry.txt")).unwrap();
    for line in listing.lines().filter(|l| !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let repo = words.next().unwrap();
        let tags: Vec<&str> = words.collect();
        reg.push_tags(repo, &tags);
    }
}

/// A config mapping the demo's registries (Docker Hub, GHCR) to the test registry.
fn demo_config(reg: &Registry, extra: &str) -> String {
    let mut s = String::from("registries:\n");
    for prefix in ["docker.io", "ghcr.io"] {
        s.push_str(&format!(
            "  - prefix: {prefix}\n    url: {}\n",
            reg.base_url()
        ));
        if let Some(ca) = reg.ca_file() {
            s.push_str(&format!("    caFile: {}\n", ca.display()));
        }
        s.push_str(extra);
    }
    s
}

/// A command-line tool the test needs: on PATH or in `.ci/run`'s venv (target/ci-tools).
/// Missing, the test fails and says how to install it.
fn tool(name: &str, install: &str) -> PathBuf {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/ci-tools/bin")
        .join(name);
    if venv.is_file() {
        return venv;
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    on_path.unwrap_or_else(|| panic!("{name} is not installed: {install}"))
}

/// `imagebump run MODE DIR --config CFG EXTRA…`
/// `imagebump run MODE DIR --config CFG EXTRA…` with `env`, expecting exit code `code`.
fn run_on(
    mode: &str,
    dir: &str,
    cfg: &str,
    extra: &[&str],
    env: &[(&str, &str)],
    code: i32,
) -> Run {
    imagebump()
        .args(["run", mode, dir, "--config", cfg])
        .args(extra)
        .envs(env.iter().copied())
        .code(code)
        .run()
}

fn write_config(content: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("imagebump.yaml");
    fs::write(&path, content).unwrap();
    let p = path.to_string_lossy().to_string();
    (dir, p)
}

const DEMO_DIFF: &str = r#"diff --git a/apps/api/values.yaml b/apps/api/values.yaml
--- a/apps/api/values.yaml
+++ b/apps/api/values.yaml
@@ -4,11 +4,11 @@
 image:
   registry: ghcr.io
   repository: acme/api
-  tag: "2.4.1"
+  tag: "2.5.1"
   pullPolicy: IfNotPresent
 
 redis:
-  image: docker.io/bitnami/redis:7.2.4  # sidecar cache
+  image: docker.io/bitnami/redis:7.4.2  # sidecar cache
 
 migrations:
   image:
diff --git a/apps/web/kustomization.yaml b/apps/web/kustomization.yaml
--- a/apps/web/kustomization.yaml
+++ b/apps/web/kustomization.yaml
@@ -5,10 +5,10 @@
 images:
   # the public front end
   - name: nginx
-    newTag: 1.25.3-alpine   # alpine variant: stays alpine
+    newTag: 1.27.3-alpine   # alpine variant: stays alpine
   - name: web
     newName: ghcr.io/acme/web
-    newTag: "v1.2.0"
+    newTag: "v1.3.0"
   - name: cache
     newName: redis
     newTag: latest          # not a version: left alone
diff --git a/apps/worker/values-prod.yaml b/apps/worker/values-prod.yaml
--- a/apps/worker/values-prod.yaml
+++ b/apps/worker/values-prod.yaml
@@ -1,3 +1,3 @@
 worker:
-  image: {repository: ghcr.io/acme/worker, tag: '0.9'}
+  image: {repository: ghcr.io/acme/worker, tag: '0.11'}
   concurrency: 4

IMAGE                    FROM           TO             LOCATION
ghcr.io/acme/api         2.4.1          2.5.1          apps/api/values.yaml:7
docker.io/bitnami/redis  7.2.4          7.4.2          apps/api/values.yaml:11
nginx                    1.25.3-alpine  1.27.3-alpine  apps/web/kustomization.yaml:8
ghcr.io/acme/web         v1.2.0         v1.3.0         apps/web/kustomization.yaml:11
ghcr.io/acme/worker      0.9            0.11           apps/worker/values-prod.yaml:2

skipped (1):
  apps/web/kustomization.yaml:14: docker.io/library/redis latest: current tag "latest" is not a version (semver strategy)

unmanaged (5):
  apps/api/values.yaml:16: ghcr.io/acme/api: tag is empty: the chart's appVersion applies
  apps/web/deployment.yaml:10: docker.io/library/web: overridden by apps/web/kustomization.yaml:9
  apps/web/deployment.yaml:12: docker.io/library/nginx: overridden by apps/web/kustomization.yaml:7
  apps/web/deployment.yaml:14: docker.io/library/cache: overridden by apps/web/kustomization.yaml:12
  charts/api/values.yaml:3: ghcr.io/acme/api: tag is empty: the chart's appVersion applies

5 update(s) proposed in 3 file(s); 11 references: 5 to update, 5 unmanaged, 1 skipped; 5 repositories asked
"#;

#[test]
fn dry_run_against_a_plain_registry_prints_the_exact_diff_and_writes_nothing() {
    let reg = Registry::start(RegistryMode::Plain);
    seed_demo(&reg);
    let (_cfg_dir, cfg) = write_config(&demo_config(&reg, ""));
    let before = snapshot_tree(&demo_dir());
    let run = run_on("--dry-run", demo_dir().to_str().unwrap(), &cfg, &[], &[], 0);
    assert_eq!(run.stderr, "");
    assert_eq!(run.stdout, DEMO_DIFF);
    assert_eq!(
        snapshot_tree(&demo_dir()),
        before,
        "a dry run must not touch any file"
    );

    let pending = imagebump()
        .args([
            "run",
            demo_dir().to_str().unwrap(),
            "--config",
            &cfg,
            "--exit-code",
        ])
        // A local path defaults to --dry-run; --exit-code flags pending updates.
        .code(3)
        .run();
    assert_eq!(pending.stdout, DEMO_DIFF);
}

#[test]
fn json_report_lists_updates_and_one_tag_listing_per_repository() {
    let reg = Registry::start(RegistryMode::Plain);
    seed_demo(&reg);
    let (_cfg_dir, cfg) = write_config(&demo_config(&reg, ""));
    let run = run_on(
        "--dry-run",
        demo_dir().to_str().unwrap(),
        &cfg,
        &["--output", "json"],
        &[],
        0,
    );
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["version"], 1);
    assert_eq!(report["mode"], "dry-run");
    assert_eq!(
        report["counts"],
        serde_json::json!({"filesScanned": 5, "references": 11, "managed": 6, "repositories": 5,
            "updates": 5, "upToDate": 0, "heldBack": 0, "scheduled": 0, "pinned": 0, "skipped": 1, "failed": 0, "refused": 0})
    );
    // One listing per repository; for the platforms, each one's current and chosen image
    // (one image under every tag: one config).
    assert_eq!(
        report["requests"],
        serde_json::json!({"tagListPages": 5, "tokens": 0, "manifests": 10, "blobs": 5, "retries": 0})
    );
    let moves: Vec<(String, String, String)> = report["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["image"].as_str().unwrap().into(),
                u["from"].as_str().unwrap().into(),
                u["to"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        moves,
        [
            ("ghcr.io/acme/api", "2.4.1", "2.5.1"),
            ("docker.io/bitnami/redis", "7.2.4", "7.4.2"),
            ("docker.io/library/nginx", "1.25.3-alpine", "1.27.3-alpine"),
            ("ghcr.io/acme/web", "v1.2.0", "v1.3.0"),
            ("ghcr.io/acme/worker", "0.9", "0.11"),
        ]
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    );
    let skipped: Vec<&serde_json::Value> = report["notUpdated"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["status"] == "skipped")
        .collect();
    assert_eq!(skipped.len(), 1);
    assert_eq!(
        skipped[0]["reason"],
        "current tag \"latest\" is not a version (semver strategy)"
    );
    assert_eq!(report["changeSets"].as_array().unwrap().len(), 3);
}

#[test]
fn write_applies_the_diff_atomically_and_a_second_run_is_clean() {
    let reg = Registry::start(RegistryMode::Plain);
    seed_demo(&reg);
    let (_cfg_dir, cfg) = write_config(&demo_config(&reg, ""));
    let tree = tempfile::tempdir().unwrap();
    copy_tree(&demo_dir(), tree.path());
    let before = snapshot_tree(tree.path());

    let run = run_on("--write", tree.path().to_str().unwrap(), &cfg, &[], &[], 0);
    run.assert_stdout_contains("5 update(s) applied in 3 file(s)");

    let after = snapshot_tree(tree.path());
    let changed: Vec<&String> = after.keys().filter(|k| after[*k] != before[*k]).collect();
    assert_eq!(
        changed,
        [
            "apps/api/values.yaml",
            "apps/web/kustomization.yaml",
            "apps/worker/values-prod.yaml"
        ]
    );
    let worker = String::from_utf8(after["apps/worker/values-prod.yaml"].clone()).unwrap();
    assert_eq!(
        worker,
        "worker:\n  image: {repository: ghcr.io/acme/worker, tag: '0.11'}\n  concurrency: 4\n"
    );

    let again = run_on(
        "--dry-run",
        tree.path().to_str().unwrap(),
        &cfg,
        &["--exit-code"],
        &[],
        0,
    );
    // Nothing left to do; what stays as it is is listed with why.
    assert!(
        again.stdout.starts_with("\nskipped (1):\n")
            && again.stdout.contains("\n0 update(s) proposed in 0 file(s); 11 references: 0 to update, 5 up to date, 5 unmanaged, 1 skipped;"),
        "{}",
        again.stdout
    );
}

#[test]
fn tls_registry_needs_its_ca_and_works_with_ca_file() {
    let reg = Registry::start(RegistryMode::Tls);
    seed_demo(&reg);
    let (_cfg_dir, cfg) = write_config(&demo_config(&reg, ""));
    let run = run_on("--dry-run", demo_dir().to_str().unwrap(), &cfg, &[], &[], 0);
    assert_eq!(run.stdout, DEMO_DIFF);

    // Without the CA: every repository fails with a hint, nothing is proposed, exit 1.
    let plain = format!(
        "registries:\n  - prefix: docker.io\n    url: {0}\n  - prefix: ghcr.io\n    url: {0}\n",
        reg.base_url()
    );
    let (_d, cfg) = write_config(&plain);
    let run = run_on("--dry-run", demo_dir().to_str().unwrap(), &cfg, &[], &[], 1);
    run.assert_stdout_contains("0 update(s) proposed");
    assert_eq!(run.stderr.lines().count(), 5, "{}", run.stderr);
    run.assert_stderr_contains("hint: add the registry's CA with registries[].caFile");
}

#[test]
fn basic_auth_credentials_come_from_docker_config_and_never_leak() {
    let password = "pw-Zq81-secret";
    let reg = Registry::start(RegistryMode::TlsBasicAuth {
        user: "bot".into(),
        password: password.into(),
    });
    seed_demo(&reg);
    let (_cfg_dir, cfg) = write_config(&demo_config(&reg, ""));

    // Without credentials: 401 reported with a hint.
    let run = run_on("--dry-run", demo_dir().to_str().unwrap(), &cfg, &[], &[], 1);
    run.assert_stderr_contains("not authorized");
    run.assert_stderr_contains("docker login");

    // The registry is reached under its configured url, but credentials are looked up by the
    // image's registry host, as `docker login ghcr.io` would store them.
    let docker = tempfile::tempdir().unwrap();
    let auth = support::base64_encode(format!("bot:{password}").as_bytes());
    fs::write(
        docker.path().join("config.json"),
        format!(r#"{{"auths":{{"ghcr.io":{{"auth":"{auth}"}},"https://index.docker.io/v1/":{{"auth":"{auth}"}}}}}}"#),
    )
    .unwrap();
    let docker_path = docker.path().to_str().unwrap();
    let run = run_on(
        "--dry-run",
        demo_dir().to_str().unwrap(),
        &cfg,
        &["-vv"],
        &[("DOCKER_CONFIG", docker_path)],
        0,
    );
    assert_eq!(run.stdout, DEMO_DIFF);
    assert!(!run.stderr.contains(password) && !run.stdout.contains(password));
    assert!(!run.stderr.contains(&auth));

    // The same credentials from an environment variable.
    let env_cfg = demo_config(&reg, "    credentials: env:REG_CREDS\n");
    let (_d, cfg) = write_config(&env_cfg);
    let pair = format!("bot:{password}");
    let run = run_on(
        "--dry-run",
        demo_dir().to_str().unwrap(),
        &cfg,
        &[],
        &[("REG_CREDS", &pair)],
        0,
    );
    assert_eq!(run.stdout, DEMO_DIFF);
}

#[test]
fn a_broken_file_is_reported_with_its_location_and_the_rest_still_updates() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("acme/web", &["1.0.0", "1.1.0"]);
    let tree = tempfile::tempdir().unwrap();
    let good = "images:\n- name: ghcr.io/acme/web\n  newTag: 1.0.0\n";
    let broken = "image:\n  repository: ghcr.io/acme/web\n  tag: [1.0.0\nother: x\n";
    let unknown = "images:\n  name: not-a-list\n";
    let bad_name = "image:\n  repository: ghcr.io/Acme/Web\n  tag: 1.0.0\n";
    for (path, text) in [
        ("good/kustomization.yaml", good),
        ("broken/values.yaml", broken),
        ("shape/kustomization.yaml", unknown),
        ("name/values.yaml", bad_name),
    ] {
        fs::create_dir_all(tree.path().join(path).parent().unwrap()).unwrap();
        fs::write(tree.path().join(path), text).unwrap();
    }
    let (_d, cfg) = write_config(&format!(
        "registries:\n  - prefix: ghcr.io\n    url: {}\n",
        reg.base_url()
    ));
    let before = snapshot_tree(tree.path());
    let run = run_on("--write", tree.path().to_str().unwrap(), &cfg, &[], &[], 1);
    let errors: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        errors,
        [
            "error: broken/values.yaml:4:6: not valid YAML: did not find expected ',' or ']'",
            "error: name/values.yaml:2:15: invalid image reference \"ghcr.io/Acme/Web\": repository must be lowercase path components",
            "error: shape/kustomization.yaml:2:3: `images:` must be a list of {name, newName, newTag, digest}",
        ]
    );
    let after = snapshot_tree(tree.path());
    assert_eq!(
        String::from_utf8(after["good/kustomization.yaml"].clone()).unwrap(),
        good.replace("1.0.0", "1.1.0")
    );
    for f in [
        "broken/values.yaml",
        "shape/kustomization.yaml",
        "name/values.yaml",
    ] {
        assert_eq!(after[f], before[f], "{f} must stay byte-identical");
    }
}

#[test]
fn unreachable_registry_is_reported_and_other_registries_still_update() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("acme/web", &["1.0.0", "1.1.0"]);
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let tree = tempfile::tempdir().unwrap();
    fs::write(
        tree.path().join("kustomization.yaml"),
        "images:\n- name: ghcr.io/acme/web\n  newTag: 1.0.0\n- name: quay.io/acme/gone\n  newTag: 1.0.0\n",
    )
    .unwrap();
    let (_d, cfg) = write_config(&format!(
        "registries:\n  - prefix: ghcr.io\n    url: {}\n  - prefix: quay.io\n    url: http://127.0.0.1:{closed}\n",
        reg.base_url()
    ));
    let run = run_on(
        "--dry-run",
        tree.path().to_str().unwrap(),
        &cfg,
        &[],
        &[],
        1,
    );
    run.assert_stdout_contains("+  newTag: 1.1.0");
    run.assert_stdout_contains("1 not checked");
    // One line for the registry, its URL once; ghcr.io answered, so no "offline" line.
    assert_eq!(
        run.filtered_stderr(),
        "error: quay.io: http://127.0.0.1:[PORT]: Connection refused (os error 111); 1 \
         repository, 1 reference not checked (hint: check the host, or set registries[].url \
         for a mirror or a plain-HTTP registry)\n"
    );
    run.assert_stdout_contains("quay.io/acme/gone 1.0.0: registry unreachable\n");
}

fn demo_worktree() -> tempfile::TempDir {
    let files: Vec<(String, String)> = snapshot_tree(&demo_dir())
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8(v).unwrap()))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    support::make_worktree(&refs)
}

#[test]
fn clones_a_remote_over_the_git_protocol() {
    let reg = Registry::start(RegistryMode::Plain);
    seed_demo(&reg);
    let (_cfg_dir, cfg) = write_config(&demo_config(&reg, ""));
    let work = demo_worktree();
    let server = GitServer::daemon(work.path(), "gitops");
    let run = imagebump()
        .args([
            "run",
            "--dry-run",
            &server.url(),
            "--ref",
            "main",
            "--config",
            &cfg,
        ])
        .run();
    assert_eq!(run.stdout, remote_demo_diff());

    // Without --dry-run a URL means pull requests, which need a forge token.
    let run = imagebump()
        .args(["run", &server.url(), "--config", &cfg])
        .code(2)
        .run();
    run.assert_stderr_contains("GITHUB_TOKEN");
}

/// A dry run of a remote also shows the branch and pull request each change set gets.
fn remote_demo_diff() -> String {
    // 0.9 → 0.11 is a major update (below 1.0 the minor is the major): a branch of its own.
    let table = "BRANCH                                        ACTION  PR  TITLE
imagebump/apps-api-values.yaml                create  -   Update 2 images in apps/api/values.yaml
imagebump/apps-web                            create  -   Update 2 images in apps/web
imagebump/apps-worker-values-prod.yaml-major  create  -   Update ghcr.io/acme/worker to 0.11 (major)

";
    let (diff, rest) = DEMO_DIFF.split_once("\nskipped (1):").unwrap();
    format!("{diff}\n{table}skipped (1):{rest}")
}

#[test]
fn clones_over_https_style_auth_with_a_token_that_never_leaks() {
    let token = "ghs_TESTTOKEN0123456789";
    let reg = Registry::start(RegistryMode::Plain);
    seed_demo(&reg);
    let (_cfg_dir, cfg) = write_config(&demo_config(&reg, ""));
    let work = demo_worktree();
    let server = GitServer::http_with_token(work.path(), "gitops", token);

    let run = imagebump()
        .args(["run", "--dry-run", &server.url(), "--config", &cfg])
        .envs([("IMAGEBUMP_GIT_TOKEN", token)])
        .run();
    assert_eq!(run.stdout, remote_demo_diff());
    let log = server.request_log();
    assert!(
        log.contains(&format!("password={token}")),
        "the server must have received the token:\n{log}"
    );
    assert!(
        log.lines()
            .all(|l| l.starts_with("GET /gitops.git/") || l.starts_with("POST /gitops.git/")),
        "{log}"
    );

    // GITHUB_TOKEN works the same way.
    imagebump()
        .args(["run", "--dry-run", &server.url(), "--config", &cfg])
        .envs([("GITHUB_TOKEN", token)])
        .run();

    // A token embedded in the URL is used, then stripped from everything we print.
    let with_creds = server
        .url()
        .replace("http://", &format!("http://x-access-token:{token}@"));
    let run = imagebump().args(["scan", &with_creds]).run();
    assert!(!run.stdout.contains(token) && !run.stderr.contains(token));

    // No token: git's failure is reported, without prompting, exit 1.
    let run = imagebump()
        .args(["run", "--dry-run", &server.url(), "--config", &cfg])
        .code(1)
        .run();
    run.assert_stderr_contains("git clone failed");
    assert!(!run.stderr.contains(token));
}

#[test]
fn configuration_mistakes_exit_2_before_any_registry_work() {
    // (imagebump.yaml, what stderr must say after the file name)
    let cases = [
        (
            "registries:\n  - prefix: ghcr.io\n    urll: http://x\n",
            "imagebump.yaml:3:5: registries[0]: unknown field `urll`",
        ),
        (
            "scan:\n  include: ['apps/[']\n",
            "imagebump.yaml:2:13: scan.include[0]: bad glob",
        ),
        (
            "defaults:\n  strategy: semver\nimages:\n  - match: nginx\n    allowTags: 'regexp:^(1'\n",
            "imagebump.yaml:5:16: images[0].allowTags: bad regular expression",
        ),
        (
            "images:\n  - match: nginx\n    constraint: '>= 1.2 <<3'\n",
            "imagebump.yaml:3:17: images[0].constraint: invalid constraint",
        ),
        (
            "images:\n  - match: 'ghcr.io/[acme'\n    pin: true\n",
            "imagebump.yaml:2:12: images[0].match: bad glob",
        ),
        (
            "defaults:\n  stratgy: semver\n",
            "imagebump.yaml:2:3: defaults: unknown field `stratgy`",
        ),
        (
            "defaults:\n  strategy: newest\n",
            "imagebump.yaml:2:13: defaults.strategy: unknown variant `newest`",
        ),
        (
            "registries:\n  - prefix: ghcr.io\n    caFile: missing.pem\n",
            "registries[0] (prefix ghcr.io): caFile",
        ),
        (
            "registries:\n  - prefix: ghcr.io\n    credentials: env:IMAGEBUMP_TEST_UNSET\n",
            "env:IMAGEBUMP_TEST_UNSET: the variable is not set",
        ),
        (
            "registries:\n  - prefix: ghcr.io\n    credentials: vault:x\n",
            "unknown credentials source",
        ),
    ];
    for (i, (config, expected)) in cases.into_iter().enumerate() {
        let (_d, cfg) = write_config(config);
        let run = run_on("--dry-run", demo_dir().to_str().unwrap(), &cfg, &[], &[], 2);
        assert_eq!(run.stdout, "", "{config}");
        assert!(run.stderr.contains(expected), "{config}: {}", run.stderr);
        // Mistakes in imagebump.yaml's own keys say what to write instead.
        if i < 7 {
            assert!(run.stderr.contains("(hint: "), "{config}: {}", run.stderr);
        }
        assert!(
            run.stderr.contains("imagebump.yaml"),
            "errors name the file: {}",
            run.stderr
        );
    }
}

/// A file given as SOURCE, and a `--config` that is a directory, are usage errors that
/// name the argument at fault: nothing is scanned and nothing is asked.
#[test]
fn command_line_mistakes_name_the_argument() {
    let (dir, cfg) = write_config("defaults:\n  strategy: semver\n");
    let file = dir.path().join("values.yaml");
    fs::write(&file, "image: nginx:1.0.0\n").unwrap();
    let run = run_on("--dry-run", file.to_str().unwrap(), &cfg, &[], &[], 2);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .contains("values.yaml: a file, not a directory (SOURCE is the manifest tree's root directory or a git URL)"),
        "{}",
        run.stderr
    );
    let config_dir = dir.path().to_str().unwrap();
    let run = run_on(
        "--dry-run",
        demo_dir().to_str().unwrap(),
        config_dir,
        &[],
        &[],
        2,
    );
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .contains(&format!("error: --config {config_dir}: ")),
        "{}",
        run.stderr
    );
}

#[test]
fn a_refused_edit_is_reported_and_its_references_stay_accounted_for() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("acme/api", &["1.0.0", "1.1.0"]);
    let tree = tempfile::tempdir().unwrap();
    let text = "api:\n  image:\n    repository: ghcr.io/acme/api\n    tag: &t 1.0.0\nworker:\n  version: *t\n";
    fs::write(tree.path().join("values.yaml"), text).unwrap();
    let (_d, cfg) = write_config(&format!(
        "registries:\n  - prefix: ghcr.io\n    url: {}\n",
        reg.base_url()
    ));
    let run = run_on(
        "--write",
        tree.path().to_str().unwrap(),
        &cfg,
        &["--output", "json"],
        &[("IMAGEBUMP_EXIT_CODE", "1")],
        1,
    );
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["counts"]["refused"], 1);
    assert_eq!(report["updates"], serde_json::json!([]));
    assert_eq!(report["notUpdated"][0]["status"], "edit-refused");
    assert!(report["errors"][0]["message"]
        .as_str()
        .unwrap()
        .contains("anchor"));
    assert_eq!(
        fs::read_to_string(tree.path().join("values.yaml")).unwrap(),
        text
    );
}

#[test]
fn boolean_flags_accept_the_usual_environment_spellings() {
    let reg = Registry::start(RegistryMode::Plain);
    seed_demo(&reg);
    let (_cfg_dir, cfg) = write_config(&demo_config(&reg, ""));
    for value in ["1", "true", "yes", "on"] {
        imagebump()
            .args(["run", demo_dir().to_str().unwrap(), "--config", &cfg])
            .envs([("IMAGEBUMP_EXIT_CODE", value)])
            .code(3)
            .run();
    }
    imagebump()
        .args(["run", demo_dir().to_str().unwrap(), "--config", &cfg])
        .envs([("IMAGEBUMP_EXIT_CODE", "0")])
        .run();
}

#[test]
fn reports_go_to_a_file_the_github_step_summary_and_outputs_and_logs_can_be_json() {
    let reg = Registry::start(RegistryMode::Plain);
    seed_demo(&reg);
    let (cfg_dir, cfg) = write_config(&demo_config(&reg, ""));
    let report = cfg_dir.path().join("report.json");
    let summary = cfg_dir.path().join("summary.md");
    let outputs = cfg_dir.path().join("outputs.txt");
    fs::write(&summary, "## earlier step\n").unwrap();
    let run = run_on(
        "--dry-run",
        demo_dir().to_str().unwrap(),
        &cfg,
        &[
            "--output",
            "json",
            "--report",
            report.to_str().unwrap(),
            "--log-format",
            "json",
            "-v",
        ],
        &[
            ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
            ("GITHUB_OUTPUT", outputs.to_str().unwrap()),
        ],
        0,
    );
    // The report file is the JSON document printed, and it follows the published schema.
    let printed: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let validator = tool(
        "check-jsonschema",
        "pip install check-jsonschema (.ci/run does)",
    );
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report.schema.json");
    let check = std::process::Command::new(validator)
        .arg("--schemafile")
        .arg(&schema)
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "the report does not follow docs/report.schema.json:\n{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    let written: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(printed, written);
    // The summary is appended, Markdown, with the updates.
    let md = fs::read_to_string(&summary).unwrap();
    assert!(
        md.starts_with("## earlier step\n## imagebump\n\n5 update(s) (dry-run)"),
        "{md}"
    );
    assert!(
        md.contains(
            "| `ghcr.io/acme/web` | `v1.2.0` | `v1.3.0` | `apps/web/kustomization.yaml:11` |"
        ),
        "{md}"
    );
    // Each output in the multi-line form, behind a delimiter made at random.
    let outputs = fs::read_to_string(&outputs).unwrap();
    let form = regex::Regex::new(
        r"\Aupdates<<(ghadelimiter_[0-9a-f]{32})\n5\n(ghadelimiter_[0-9a-f]{32})\npull-requests<<(ghadelimiter_[0-9a-f]{32})\n\[\]\n(ghadelimiter_[0-9a-f]{32})\n\z",
    )
    .unwrap();
    let c = form
        .captures(&outputs)
        .unwrap_or_else(|| panic!("{outputs}"));
    assert_eq!((&c[1], &c[3]), (&c[2], &c[4]), "{outputs}");
    // Every log line is a JSON object.
    assert!(!run.stderr.trim().is_empty());
    for line in run.stderr.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(v["level"].is_string(), "{line}");
    }
}
