//! A hostile repository: its own imagebump.yaml cannot add registries or credentials (so it
//! can neither send the job's secrets to a host of its choosing nor run a program), cannot
//! link the job's files into the run, and cannot make a branch name that is not imagebump's.
//! The operator's configuration (`--config`) keeps that power, with the repository's
//! policies on top. Real registry, real binary.

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
use std::path::Path;

use support::cli::imagebump;
use support::{Registry, RegistryMode};

const SECRET: &str = "ghp_hostile_repository_must_not_see_this";

fn kustomization(root: &Path) {
    fs::create_dir_all(root.join("app")).unwrap();
    fs::write(
        root.join("app/kustomization.yaml"),
        "images:\n  - name: web\n    newName: ghcr.io/acme/web\n    newTag: 1.0.0\n",
    )
    .unwrap();
}

/// The operator's configuration file (`--config`), outside the repository, holding `text`.
fn operator_config(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("operator.yaml");
    fs::write(&cfg, text).unwrap();
    (dir, cfg)
}

/// A repository whose imagebump.yaml is `config`, run with a forge token in the
/// environment; the run must stop with a configuration error naming `key`.
fn refused(config: &str, key: &str) -> support::cli::Run {
    let repo = tempfile::tempdir().unwrap();
    kustomization(repo.path());
    fs::write(repo.path().join("imagebump.yaml"), config).unwrap();
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(repo.path())
        .env("GITHUB_TOKEN", SECRET)
        .code(2)
        .run();
    run.assert_stderr_contains(key)
        .assert_stderr_contains("can only be set in the operator's configuration");
    assert!(!run.stdout.contains(SECRET) && !run.stderr.contains(SECRET));
    run
}

#[test]
fn a_repository_cannot_send_credentials_to_a_registry_of_its_choosing() {
    let run = refused(
        "registries:\n  - prefix: ghcr.io\n    url: http://127.0.0.1:9\n    credentials: env:GITHUB_TOKEN\n",
        "registries",
    );
    run.assert_stderr_contains("imagebump.yaml:2:");
}

#[test]
fn a_repository_cannot_run_a_credentials_program() {
    let repo_marker = tempfile::tempdir().unwrap();
    let marker = repo_marker.path().join("ran");
    let config = format!(
        "defaults:\n  constraint: ^1\nimages:\n  - match: \"*\"\n    credentials: \"ext:sh -c 'touch {}'\"\n",
        marker.display()
    );
    refused(&config, "images[0].credentials");
    assert!(!marker.exists(), "the repository's program ran");
}

#[test]
fn the_operator_defines_registries_and_the_repository_its_policies() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("acme/web", &["1.0.0", "1.1.0", "2.0.0"]);
    let repo = tempfile::tempdir().unwrap();
    kustomization(repo.path());
    // The repository keeps web on 1.x; the operator says where ghcr.io is.
    fs::write(
        repo.path().join("imagebump.yaml"),
        "images:\n  - match: ghcr.io/acme/web\n    constraint: ^1\n",
    )
    .unwrap();
    let (_operator, cfg) = operator_config(&format!(
        "registries:\n  - prefix: ghcr.io\n    url: {}\ndefaults:\n  constraint: '>=1'\n",
        reg.base_url()
    ));
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(repo.path())
        .arg("--config")
        .arg(&cfg)
        .run();
    assert!(
        run.stdout
            .contains("-    newTag: 1.0.0\n+    newTag: 1.1.0\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_configuration_file_linking_out_of_the_tree_is_not_read() {
    let outside = tempfile::tempdir().unwrap();
    let secret_file = outside.path().join("operator-secrets.yaml");
    fs::write(&secret_file, format!("# {SECRET}\ndefaults: {{}}\n")).unwrap();
    let repo = tempfile::tempdir().unwrap();
    kustomization(repo.path());
    std::os::unix::fs::symlink(&secret_file, repo.path().join("imagebump.yaml")).unwrap();
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(repo.path())
        .code(2)
        .run();
    run.assert_stderr_contains("a link to a file outside the repository");
    assert!(!run.stdout.contains(SECRET) && !run.stderr.contains(SECRET));
}

#[test]
fn an_empty_branch_prefix_is_refused() {
    let repo = tempfile::tempdir().unwrap();
    kustomization(repo.path());
    fs::write(
        repo.path().join("imagebump.yaml"),
        "pullRequests:\n  branchPrefix: ''\n",
    )
    .unwrap();
    imagebump()
        .args(["run", "--dry-run"])
        .arg(repo.path())
        .code(2)
        .run()
        .assert_stderr_contains("pullRequests.branchPrefix");
}

const APP: &str = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\nspec:\n  project: default\n  source:\n    repoURL: https://git.example.com/gitops.git\n    path: PATH\n    kustomize:\n      images: [\"ghcr.io/acme/web:1.0.0\"]\n  destination: {server: https://kubernetes.default.svc, namespace: web}\n";

#[test]
fn argo_cd_paths_and_override_links_do_not_leave_the_tree() {
    let outside = tempfile::tempdir().unwrap();
    let leaked = outside.path().join("kubeconfig.yaml");
    fs::write(
        &leaked,
        format!("kustomize:\n  images: [\"ghcr.io/acme/{SECRET}:1.0.0\"]\n"),
    )
    .unwrap();
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    fs::create_dir_all(root.join("argocd")).unwrap();
    fs::create_dir_all(root.join("apps/web")).unwrap();
    fs::write(root.join("apps/web/kustomization.yaml"), "resources: []\n").unwrap();
    std::os::unix::fs::symlink(&leaked, root.join("apps/web/.argocd-source-web.yaml")).unwrap();
    fs::write(
        root.join("argocd/web.yaml"),
        APP.replace("PATH", "apps/web"),
    )
    .unwrap();
    let escape = APP
        .replace("name: web\n", "name: escape\n")
        .replace("PATH", "../outside");
    fs::write(root.join("argocd/escape.yaml"), escape).unwrap();
    let run = imagebump().args(["scan"]).arg(root).code(1).run();
    run.assert_stderr_contains("apps/web/.argocd-source-web.yaml")
        .assert_stderr_contains("link to outside the repository")
        .assert_stderr_contains("../outside leaves the repository");
    assert!(!run.stdout.contains(SECRET) && !run.stderr.contains(SECRET));
}

/// Numbers that would overflow a clock or stall a run are configuration errors, not panics.
#[test]
fn out_of_range_settings_are_refused_not_panics() {
    let repo = tempfile::tempdir().unwrap();
    kustomization(repo.path());
    let operator = tempfile::tempdir().unwrap();
    let cfg = operator.path().join("operator.yaml");
    for (setting, key) in [
        ("rateLimit: 1e-300", "registries[0].rateLimit"),
        ("rateLimit: .nan", "registries[0].rateLimit"),
        (
            "credentialsExpire: 15260000000000w\n    credentials: env:X",
            "registries[0].credentialsExpire",
        ),
    ] {
        fs::write(
            &cfg,
            format!("registries:\n  - prefix: ghcr.io\n    {setting}\n"),
        )
        .unwrap();
        imagebump()
            .args(["run", "--dry-run"])
            .arg(repo.path())
            .arg("--config")
            .arg(&cfg)
            .code(2)
            .run()
            .assert_stderr_contains(key);
    }
}

/// A token written into the source URL never reaches the output, whatever the spelling
/// (upper-case scheme, a password holding `@`, ssh userinfo).
#[test]
fn tokens_in_source_urls_are_never_printed() {
    for url in [
        format!("HTTP://x:{SECRET}@127.0.0.1:9/gitops.git"),
        format!("https://x:p@ss{SECRET}@127.0.0.1:9/gitops.git"),
        format!("ssh://git:{SECRET}@127.0.0.1:9/gitops.git"),
    ] {
        let run = imagebump()
            .env("RUST_LOG", "trace")
            .args(["-vvv", "run", "--dry-run"])
            .arg(&url)
            .any_code()
            .run();
        assert_ne!(run.code, 0, "{url}");
        assert!(
            !run.stdout.contains(SECRET) && !run.stderr.contains(SECRET),
            "{url}\n{}",
            run.stderr
        );
    }
}

/// Bad files are reported with their name (and line) and cost nothing; the rest is
/// updated, a byte order mark is kept, and the run exits 1.
#[test]
fn huge_deep_and_bom_files_are_handled_and_the_rest_is_updated() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("acme/web", &["1.0.0", "1.1.0"]);
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    kustomization(root);
    fs::create_dir_all(root.join("bom")).unwrap();
    let bom = "\u{feff}images:\n  - name: web\n    newName: ghcr.io/acme/web\n    newTag: 1.0.0\n";
    fs::write(root.join("bom/kustomization.yaml"), bom).unwrap();
    fs::create_dir_all(root.join("huge")).unwrap();
    let huge = format!(
        "image: ghcr.io/acme/web:1.0.0\npad: \"{}\"\n",
        "x".repeat(33 << 20)
    );
    fs::write(root.join("huge/values.yaml"), huge).unwrap();
    fs::create_dir_all(root.join("deep")).unwrap();
    let deep = format!(
        "image: ghcr.io/acme/web:1.0.0\nx: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    fs::write(root.join("deep/values.yaml"), deep).unwrap();
    // Under the byte cap, but 7 million values: refused before any parser sees it.
    fs::create_dir_all(root.join("dense")).unwrap();
    let dense = format!(
        "image: ghcr.io/acme/web:1.0.0\nitems:\n{}",
        "  - {a: 1, b: x}\n".repeat(1_400_000)
    );
    fs::write(root.join("dense/values.yaml"), dense).unwrap();
    let (_operator, cfg) = operator_config(&format!(
        "registries:\n  - prefix: ghcr.io\n    url: {}\n",
        reg.base_url()
    ));
    let run = imagebump()
        .args(["run", "--write"])
        .arg(root)
        .arg("--config")
        .arg(&cfg)
        .measure_memory()
        .code(1)
        .run();
    run.assert_stderr_contains("huge/values.yaml: larger than 32 MiB")
        .assert_stderr_contains("deep/values.yaml:2:")
        .assert_stderr_contains("nested deeper than 256 levels")
        .assert_stderr_contains("dense/values.yaml:40002:1: more than 200000 values: not read");
    let peak = run.peak_kib.unwrap();
    assert!(peak < CRONJOB_LIMIT_KIB, "peak RSS {peak} KiB");
    assert_eq!(
        fs::read_to_string(root.join("bom/kustomization.yaml")).unwrap(),
        bom.replace("1.0.0", "1.1.0")
    );
    assert!(fs::read_to_string(root.join("app/kustomization.yaml"))
        .unwrap()
        .contains("newTag: 1.1.0"));
}

/// SIGTERM (what Kubernetes sends first) stops the run at its next step: exit 1, a clear
/// message, and the temporary clone is gone.
#[test]
fn sigterm_removes_the_temporary_clone() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    // A registry that accepts connections and never answers keeps the run busy.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let work = support::make_worktree(&[(
        "app/kustomization.yaml",
        "images:\n  - name: web\n    newName: ghcr.io/acme/web\n    newTag: 1.0.0\n",
    )]);
    let server = support::GitServer::daemon(work.path(), "gitops");
    let (_operator, cfg) = operator_config(&format!(
        "registries:\n  - prefix: ghcr.io\n    url: http://127.0.0.1:{port}\n"
    ));
    let tmp = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_imagebump"))
        .args(["run", "--dry-run", &server.url(), "--config"])
        .arg(&cfg)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let clones = || {
        fs::read_dir(tmp.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("imagebump-"))
            .count()
    };
    let started = Instant::now();
    while clones() == 0 && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(clones(), 1, "the run never cloned");
    // Past the clone, waiting on the registry: once it has connected (not after a fixed
    // time, which a loaded machine can outlast).
    silent.set_nonblocking(true).unwrap();
    let mut waiting = None;
    while waiting.is_none() && started.elapsed() < Duration::from_secs(20) {
        match silent.accept() {
            Ok((stream, _)) => waiting = Some(stream),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    assert!(waiting.is_some(), "the run never asked the registry");
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("stopped by SIGTERM"), "{stderr}");
    assert_eq!(clones(), 0, "the temporary clone was left behind");
    drop((waiting, silent));
}

/// A CA bundle or credentials file that never ends (`/dev/zero`) is refused after a
/// megabyte, with the setting named: no gigabytes read, no hang.
#[test]
fn endless_settings_files_are_refused_quickly() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("acme/web", &["1.0.0", "1.1.0"]);
    let repo = tempfile::tempdir().unwrap();
    kustomization(repo.path());
    let operator = tempfile::tempdir().unwrap();
    let cfg = operator.path().join("operator.yaml");
    for (setting, expect) in [
        (
            "caFile: /dev/zero",
            "caFile /dev/zero: larger than 1024 KiB",
        ),
        (
            "credentials: file:/dev/zero",
            "file:/dev/zero: larger than 1024 KiB",
        ),
    ] {
        fs::write(
            &cfg,
            format!(
                "registries:\n  - prefix: ghcr.io\n    url: {}\n    {setting}\n",
                reg.base_url()
            ),
        )
        .unwrap();
        let started = std::time::Instant::now();
        let run = imagebump()
            .args(["run", "--dry-run"])
            .arg(repo.path())
            .arg("--config")
            .arg(&cfg)
            .any_code()
            .run();
        assert_ne!(run.code, 0, "{setting}");
        run.assert_stderr_contains(expect);
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }
}

/// A symbolic link in the tree is never followed, and the user is told.
#[test]
fn symlinked_manifests_are_noted_not_followed() {
    let outside = tempfile::tempdir().unwrap();
    let pod = format!("apiVersion: v1\nkind: Pod\nspec:\n  containers: [{{image: \"ghcr.io/acme/{SECRET}:1.0\"}}]\n");
    fs::write(outside.path().join("pod.yaml"), pod).unwrap();
    let repo = tempfile::tempdir().unwrap();
    kustomization(repo.path());
    std::os::unix::fs::symlink(
        outside.path().join("pod.yaml"),
        repo.path().join("app/pod.yaml"),
    )
    .unwrap();
    let run = imagebump().arg("scan").arg(repo.path()).run();
    run.assert_stderr_contains("app/pod.yaml: a symbolic link: not followed");
    assert!(!run.stdout.contains(SECRET) && !run.stderr.contains(SECRET));
}

/// A clone is read from git's objects, without a work tree; one whose commit holds a
/// symbolic link is checked out instead, and the jail's rules for links apply to it as to a
/// directory: a configuration linking out of the tree is not read, a manifest that is a link
/// is noted, not followed.
#[test]
fn a_cloned_tree_holding_links_keeps_the_jail() {
    let outside = tempfile::tempdir().unwrap();
    let secret_file = outside.path().join("operator-secrets.yaml");
    fs::write(&secret_file, format!("# {SECRET}\ndefaults: {{}}\n")).unwrap();
    let pod = format!("apiVersion: v1\nkind: Pod\nspec:\n  containers: [{{image: \"ghcr.io/acme/{SECRET}:1.0\"}}]\n");
    fs::write(outside.path().join("pod.yaml"), pod).unwrap();
    let commit = |work: &Path| {
        support::git(work, &["add", "--all"]);
        support::git(work, &["commit", "--quiet", "-m", "links"]);
    };

    let work = support::make_worktree(&[]);
    kustomization(work.path());
    std::os::unix::fs::symlink(&secret_file, work.path().join("imagebump.yaml")).unwrap();
    commit(work.path());
    let server = support::GitServer::daemon(work.path(), "gitops");
    let run = imagebump()
        .args(["run", "--dry-run", &server.url()])
        .code(2)
        .run();
    run.assert_stderr_contains("a link to a file outside the repository");
    assert!(!run.stdout.contains(SECRET) && !run.stderr.contains(SECRET));

    let work = support::make_worktree(&[]);
    kustomization(work.path());
    let link = work.path().join("app/pod.yaml");
    std::os::unix::fs::symlink(outside.path().join("pod.yaml"), link).unwrap();
    commit(work.path());
    let server = support::GitServer::daemon(work.path(), "gitops");
    let run = imagebump().arg("scan").arg(server.url()).run();
    run.assert_stderr_contains("app/pod.yaml: a symbolic link: not followed");
    assert!(run.stdout.contains("ghcr.io/acme/web"), "{}", run.stdout);
    assert!(!run.stdout.contains(SECRET) && !run.stderr.contains(SECRET));
}

/// A plain-HTTP listener standing in for a token service: it answers every request with a
/// 401 and keeps each request's head.
fn recording_token_service() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let realm = format!("http://{}/token", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut head = vec![0u8; 8192];
            let n = stream.read(&mut head).unwrap_or(0);
            record
                .lock()
                .unwrap()
                .push(String::from_utf8_lossy(&head[..n]).into_owned());
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    (realm, seen)
}

/// An HTTPS registry whose challenge names a plain-HTTP token service on another host does
/// not get its credentials sent there in clear text, even when the operator marked it
/// `insecure` (tests/hostile_creds.rs holds the control: a realm on the registry's own
/// origin gets them).
#[test]
fn credentials_never_follow_a_challenge_to_plain_http() {
    for (insecure, code) in [(false, 1), (true, 1)] {
        let (realm, seen) = recording_token_service();
        let reg = Registry::start(RegistryMode::TlsTokenAuth { realm });
        let repo = tempfile::tempdir().unwrap();
        kustomization(repo.path());
        let trust = if insecure {
            "insecure: true".to_string()
        } else {
            format!("caFile: {}", reg.ca_file().unwrap().display())
        };
        let (_operator, cfg) = operator_config(&format!(
                "registries:\n  - prefix: ghcr.io\n    url: {}\n    {trust}\n    credentials: env:REGISTRY_LOGIN\n",
                reg.base_url()
            ));
        let run = imagebump()
            .args(["run", "--dry-run"])
            .arg(repo.path())
            .arg("--config")
            .arg(&cfg)
            .env("REGISTRY_LOGIN", format!("robot:{SECRET}"))
            .code(code)
            .run();
        let heads = seen.lock().unwrap().join("\n");
        let basic = format!(
            "Basic {}",
            support::base64_encode(format!("robot:{SECRET}").as_bytes())
        );
        if insecure {
            run.assert_stderr_contains("asks for its credentials at another origin over plain");
        } else {
            run.assert_stderr_contains("asks for its credentials over plain HTTP");
        }
        assert!(!heads.contains(&basic), "sent to the realm: {heads}");
        assert!(heads.is_empty(), "sent to the realm: {heads}");
        assert!(!run.stdout.contains(SECRET) && !run.stderr.contains(SECRET));
    }
}

/// The shipped CronJob's memory limit (cronjob.yaml), in KiB.
const CRONJOB_LIMIT_KIB: u64 = 256 * 1024;

/// Endless `Link` pages of 4 MB each.
struct EndlessPages(Vec<u8>);

impl wiremock::Respond for EndlessPages {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let page: usize = request
            .url
            .query_pairs()
            .find(|(k, _)| k == "last")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        wiremock::ResponseTemplate::new(200)
            .insert_header(
                "Link",
                format!(
                    "</v2/acme/endless/tags/list?n=1000&last={}>; rel=\"next\"",
                    page + 1
                )
                .as_str(),
            )
            .set_body_raw(self.0.clone(), "application/json")
    }
}

fn tag_body(repo: &str, tags: impl Iterator<Item = String>) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({ "name": repo, "tags": tags.collect::<Vec<_>>() }))
        .unwrap()
}

/// A legitimate page of a million tags is judged within the CronJob's memory; endless
/// pages stop at the per-repository cap with an error naming the repository; the other
/// images are updated all the same.
#[tokio::test(flavor = "multi_thread")]
async fn huge_and_endless_tag_lists_stay_under_the_cronjob_memory_limit() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    let million = tag_body(
        "acme/huge",
        (0..1_000_000).map(|i| format!("1.{}.{}", i / 1000, i % 1000)),
    );
    Mock::given(method("GET"))
        .and(path("/v2/acme/huge/tags/list"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(million, "application/json"))
        .mount(&server)
        .await;
    let page = tag_body(
        "acme/endless",
        (0..100_000).map(|i| format!("build-{i:08}-0123456789abcdef0123456789")),
    );
    Mock::given(method("GET"))
        .and(path("/v2/acme/endless/tags/list"))
        .respond_with(EndlessPages(page))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v2/acme/web/tags/list"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(serde_json::json!({"name": "acme/web", "tags": ["1.0.0", "1.1.0"]})),
        )
        .mount(&server)
        .await;
    let host = server.address().to_string();
    let repo = tempfile::tempdir().unwrap();
    for (app, tag) in [("huge", "1.0.0"), ("endless", "1.0.0"), ("web", "1.0.0")] {
        let dir = repo.path().join(app);
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("kustomization.yaml"),
            format!(
                "images:\n  - name: {app}\n    newName: {host}/acme/{app}\n    newTag: {tag}\n"
            ),
        )
        .unwrap();
    }
    let (_operator, cfg) = operator_config(&format!(
        "registries:\n  - prefix: {host}\n    url: http://{host}\n"
    ));
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(repo.path())
        .arg("--config")
        .arg(&cfg)
        .measure_memory()
        .code(1)
        .run_async()
        .await;
    run.assert_stdout_contains("+    newTag: 1.999.999")
        .assert_stdout_contains("+    newTag: 1.1.0")
        .assert_stderr_contains("acme/endless")
        .assert_stderr_contains("larger than 32 MiB over");
    let peak = run.peak_kib.unwrap();
    assert!(
        peak < CRONJOB_LIMIT_KIB,
        "peak RSS {peak} KiB over the CronJob's limit"
    );
}
