//! `imagebump registry check` against a real `docker-registry` with htpasswd auth, and a
//! wiremock registry announcing a Docker Hub style pull allowance.

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

use std::path::Path;

use serde_json::Value;
use support::cli::{imagebump, Run};
use support::{Registry, RegistryMode};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const USER: &str = "checker";
const PASSWORD: &str = "pw-registry-check-7731";

/// `imagebump -vvv registry check ARGS…` in `dir` (which holds imagebump.yaml) with
/// `RUST_LOG=trace` and `env`, expecting exit code `code`.
fn check(dir: &Path, env: &[(&str, &str)], args: &[&str], code: i32) -> Run {
    imagebump()
        .current_dir(dir)
        .args(["-vvv", "registry", "check"])
        .args(args)
        // Registries and credentials are the operator's: the file is passed, not found.
        .arg("--config")
        .arg(dir.join("imagebump.yaml"))
        .env("RUST_LOG", "trace")
        .envs(env.iter().copied())
        .code(code)
        .run()
}

/// The output split into one block per target (a line that is not indented starts one).
fn blocks(stdout: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in stdout.lines() {
        match out.last_mut() {
            Some(b) if line.starts_with(' ') => {
                b.push_str(line);
                b.push('\n');
            }
            _ => out.push(format!("{line}\n")),
        }
    }
    out
}

fn config(dir: &Path, text: &str) {
    std::fs::write(dir.join("imagebump.yaml"), text).unwrap();
}

fn basic_registry() -> Registry {
    let reg = Registry::start(RegistryMode::PlainBasicAuth {
        user: USER.into(),
        password: PASSWORD.into(),
    });
    reg.push_tags("team/web", &["1.0.0", "1.1.0"]);
    reg
}

#[test]
fn working_credentials_are_reported_with_their_source_and_never_printed() {
    let reg = basic_registry();
    let dir = tempfile::tempdir().unwrap();
    config(
        dir.path(),
        &format!(
            "registries:\n  - prefix: {host}\n    url: {url}\n    credentials: env:REG_CREDS\n    rateLimit: 5\n",
            host = reg.host(),
            url = reg.base_url()
        ),
    );
    let creds = format!("{USER}:{PASSWORD}");
    let env = [("REG_CREDS", creds.as_str())];
    let Run { stdout, stderr, .. } = check(dir.path(), &env, &[], 0);
    assert_eq!(
        stdout,
        format!(
            "{host} ({url})\n  credentials: env:REG_CREDS (variable REG_CREDS, user {USER})\n  auth:        ok (Basic)\n  limits:      concurrency 8, at most 5/s\n",
            host = reg.host(),
            url = reg.base_url()
        )
    );
    assert!(!stdout.contains(PASSWORD) && !stderr.contains(PASSWORD));

    // Naming an image also reads it.
    let image = format!("{}/team/web", reg.host());
    let Run { stdout, stderr, .. } = check(dir.path(), &env, &[&image, "--output", "json"], 0);
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json[0]["ok"], true);
    assert_eq!(json[0]["auth"], "ok (Basic)");
    assert_eq!(json[0]["read"], "ok (2 tag(s) on the first page)");
    assert_eq!(json[0]["rateLimit"], 5.0);
    assert!(!stdout.contains(PASSWORD) && !stderr.contains(PASSWORD));
}

#[test]
fn refused_and_missing_credentials_fail_the_check_with_a_reason() {
    let reg = basic_registry();
    let dir = tempfile::tempdir().unwrap();
    let wrong = "checker:wrong-pw-5521";
    config(
        dir.path(),
        &format!(
            "registries:\n  - prefix: {host}/team\n    url: {url}\n    credentials: env:REG_CREDS\n  - prefix: {host}\n    url: {url}\n    credentials: anonymous\n",
            host = reg.host(),
            url = reg.base_url()
        ),
    );
    let Run { stdout, stderr, .. } = check(dir.path(), &[("REG_CREDS", wrong)], &[], 1);
    let (host, url) = (reg.host(), reg.base_url());
    assert_eq!(
        blocks(&stdout),
        [
            format!("{host}/team ({url})\n  credentials: env:REG_CREDS (variable REG_CREDS, user checker)\n  auth:        failed: {url}/v2/: the credentials from env:REG_CREDS were refused (HTTP 401)\n  limits:      concurrency 8\n"),
            format!("{host} ({url})\n  credentials: anonymous\n  auth:        failed: {url}/v2/: HTTP 401: not authorized (anonymous: the registry wants credentials; see docs/registries.md)\n  limits:      concurrency 8\n"),
        ]
    );
    assert!(!stdout.contains("wrong-pw-5521") && !stderr.contains("wrong-pw-5521"));
}

#[tokio::test]
async fn docker_hub_allowance_is_read_from_a_free_head_request() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v2/"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    Mock::given(method("HEAD"))
        .and(path("/v2/ratelimitpreview/test/manifests/latest"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("ratelimit-limit", "100;w=21600")
                .insert_header("ratelimit-remaining", "94;w=21600")
                .insert_header(
                    "docker-content-digest",
                    "sha256:0000000000000000000000000000000000000000000000000000000000000000",
                ),
        )
        .expect(1)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    config(
        dir.path(),
        &format!(
            "registries:\n  - prefix: docker.io\n    url: {}\n",
            server.uri()
        ),
    );
    let d = dir.path().to_path_buf();
    let Run { stdout, .. } = tokio::task::spawn_blocking(move || check(&d, &[], &[], 0))
        .await
        .unwrap();
    assert!(
        stdout.contains("  limits:      concurrency 8, 94 of 100 pulls left per 6h\n"),
        "{stdout}"
    );
    // Only the probe and the HEAD: nothing Docker Hub counts as a pull.
    let requests = server.received_requests().await.unwrap();
    assert!(
        requests
            .iter()
            .all(|r| r.method.as_str() != "GET" || r.url.path() == "/v2/"),
        "{requests:?}"
    );
}

/// A Pod running `image`, as a manifest tree of one file.
fn pod(image: &str) -> tempfile::TempDir {
    support::tree(&[(
        "app/pod.yaml",
        format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: app\nspec:\n  containers:\n    - name: app\n      image: {image}\n"),
    )])
}

#[test]
fn https_at_a_plain_http_registry_says_to_use_http() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.0.0", "1.1.0"]);
    let host = reg.host();
    let dir = tempfile::tempdir().unwrap();
    config(
        dir.path(),
        &format!("registries:\n  - prefix: {host}\n    url: https://{host}\n"),
    );
    let Run { stdout, .. } = check(dir.path(), &[], &[], 1);
    assert_eq!(
        stdout,
        format!(
            "{host} (https://{host})\n  credentials: anonymous\n  auth:        failed: https://{host}/v2/: this looks like a plain-HTTP registry (it answered the TLS handshake in plain HTTP): use url: http://{host}\n  limits:      concurrency 8\n"
        )
    );
    let expected = format!(
        "error: {host}/team/web: https://{host}/v2/team/web/tags/list?n=1000: this looks like a plain-HTTP registry (it answered the TLS handshake in plain HTTP): use url: http://{host}; 1 reference(s) not checked (hint: in the registries entry for {host} in the operator's configuration (--config); add `- prefix: {host}` if there is none)\n"
    );
    let tree = pod(&format!("{host}/team/web:1.0.0"));
    // The operator's url: https://…, and the default https:// of an unconfigured host.
    for config in [Some(dir.path().join("imagebump.yaml")), None] {
        let mut cli = imagebump().args(["run", "--dry-run"]).arg(tree.path());
        if let Some(config) = &config {
            cli = cli.arg("--config").arg(config);
        }
        let run = cli.code(1).run();
        assert_eq!(run.stderr, expected, "{config:?}");
    }
    // And with the url it names, the same registry answers.
    config(
        dir.path(),
        &format!("registries:\n  - prefix: {host}\n    url: http://{host}\n"),
    );
    check(dir.path(), &[], &[], 0);
}

/// README's bare `imagebump registry check`, run in a repository: every `registries` entry,
/// then each other registry the repository's references use, once, as a run would ask it.
#[test]
fn no_arguments_checks_the_entries_and_the_registries_the_repository_uses() {
    let configured = Registry::start(RegistryMode::Plain);
    configured.push_tags("team/web", &["1.0.0"]);
    let unconfigured = Registry::start(RegistryMode::Plain);
    let (a, b) = (configured.host(), unconfigured.host());
    let repo = support::tree(&[
        ("imagebump.yaml", "defaults:\n  strategy: semver\n".to_string()),
        (
            "app/pod.yaml",
            format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: app\nspec:\n  containers:\n    - name: web\n      image: {a}/team/web:1.0.0\n    - name: api\n      image: {b}/team/api:1.0.0\n    - name: worker\n      image: {b}/team/worker:2.0.0\n"),
        ),
    ]);
    let operator = tempfile::tempdir().unwrap();
    config(
        operator.path(),
        &format!("registries:\n  - prefix: {a}\n    url: http://{a}\n"),
    );
    let run = imagebump()
        .current_dir(repo.path())
        .args(["registry", "check", "--config"])
        .arg(operator.path().join("imagebump.yaml"))
        .code(1)
        .run();
    assert_eq!(
        blocks(&run.stdout),
        [
            format!("{a} (http://{a})\n  credentials: anonymous\n  auth:        ok (no authentication asked)\n  limits:      concurrency 8\n"),
            format!("{b} (https://{b})\n  credentials: anonymous\n  auth:        failed: https://{b}/v2/: this looks like a plain-HTTP registry (it answered the TLS handshake in plain HTTP): use url: http://{b}\n  limits:      concurrency 8\n"),
        ]
    );
    // Outside a repository the configuration's entries alone, and none is a usage error.
    let elsewhere = tempfile::tempdir().unwrap();
    let run = imagebump()
        .current_dir(elsewhere.path())
        .args(["registry", "check", "--config"])
        .arg(operator.path().join("imagebump.yaml"))
        .run();
    assert_eq!(blocks(&run.stdout).len(), 1, "{}", run.stdout);
    let run = imagebump()
        .current_dir(elsewhere.path())
        .args(["registry", "check"])
        .code(2)
        .run();
    assert_eq!(
        run.stderr,
        "error: no registries configured; name one, e.g. `imagebump registry check ghcr.io/acme/web`\n"
    );
}
