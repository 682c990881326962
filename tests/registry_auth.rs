//! Registry credentials, end to end: every `credentials` source against a registry that
//! checks them, the cloud token flows against wiremock stand-ins for their endpoints, and the
//! per-registry gate (Docker Hub's allowance, the circuit breaker, `rateLimit`, a 429's pause).
//!
//! * Real `docker-registry` with htpasswd ([`RegistryMode::PlainBasicAuth`]): `env:`,
//!   `file:` (`user:password` and a Kubernetes `.dockerconfigjson`), `dockerconfig` (explicit
//!   and implicit), `ext:` (success, failure with stderr, timeout, not executable), refresh on
//!   a 401, and `images[].credentials` overriding the registry's.
//! * wiremock: ECR (SigV4-signed `GetAuthorizationToken`, one per run, expiry, refresh), the
//!   GCP metadata server, ACR's Entra ID + `/oauth2/exchange` flow, GHCR with `GITHUB_TOKEN`,
//!   a token realm refusing `file:` credentials, the Docker Hub allowance, the circuit breaker,
//!   `rateLimit` and a 429's `Retry-After`.
//!
//! Binary runs are `imagebump -vvv run --dry-run <tree> --report <file>` with `RUST_LOG=trace`
//! and a cleared environment (only `PATH`, a temp `HOME`, a temp `DOCKER_CONFIG` and what the
//! test sets), so nothing of the host machine (a Docker login, AWS keys, `GITHUB_TOKEN`) leaks
//! in. After every run, stdout, stderr and the report are searched for every test secret
//! ([`SECRETS`] and the base64 `user:password` forms): none may appear at any verbosity.
//! Library-level tests (`Registries::with_env`) control caching and timing exactly.

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
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use imagebump::registry::credentials::Environment;
use imagebump::registry::{Error as RegistryError, Registries};
use imagebump_model::config::RegistryConfig;
use imagebump_model::name::parse_name;
use serde_json::{json, Value};
use support::cli::{imagebump, Run};
use support::mock::{header_of, hits, rate_limited_once, received, Timed};
use support::{Registry, RegistryMode};
use wiremock::matchers::{body_string, header, method, path, path_regex};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// What a run may take before it counts as hung.
const RUN_TIMEOUT: Duration = Duration::from_secs(30);

// -------------------------------------------------------------------------------------------
// test secrets: distinct, greppable, never expected in any output
// -------------------------------------------------------------------------------------------

const USER: &str = "imagebump-tester";
/// The htpasswd password of the real registry.
const PASSWORD: &str = "pw-RIGHT-c81f3e2a";
/// A password the registry refuses.
const WRONG_PASSWORD: &str = "pw-WRONG-5d0b97e4";
/// Printed on stdout by a failing `ext:` program (must not be quoted in the error).
const EXT_STDOUT_SECRET: &str = "pw-EXTSTDOUT-73aa01c9";
const AWS_ACCESS_KEY_ID: &str = "AKIAIMAGEBUMPTEST001";
const AWS_SECRET_ACCESS_KEY: &str = "aws-SECRET-KEY-0e6f2d8b41a7";
/// The password inside ECR's `authorizationToken` (base64 of `AWS:<this>`).
const ECR_PASSWORD: &str = "ecr-TOKEN-PW-9b3c5e17";
/// A stale ECR password (the first answer in the refresh test).
const ECR_STALE_PASSWORD: &str = "ecr-STALE-PW-41d8e0aa";
const GCP_ACCESS_TOKEN: &str = "ya29.gcp-ACCESS-TOKEN-2f7e91c0";
const GCP_REGISTRY_TOKEN: &str = "gcp-REGISTRY-BEARER-8a1d6f3b";
const AZ_FEDERATED_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.az-FEDERATED-TOKEN-6c2e.sig-d41f";
const AZ_AAD_TOKEN: &str = "az-AAD-ACCESS-TOKEN-3e9b0f72";
const ACR_REFRESH_TOKEN: &str = "acr-REFRESH-TOKEN-7a4c1d95";
const ACR_ACCESS_TOKEN: &str = "acr-ACCESS-TOKEN-0b8e2f64";
const GITHUB_TOKEN: &str = "ghs_GITHUB-TOKEN-5f0a3c7e19d2";
const GHCR_REGISTRY_TOKEN: &str = "ghcr-REGISTRY-BEARER-2b6d9e04";
const FILE_BEARER_TOKEN: &str = "file-REGISTRY-BEARER-9c1a7e33";
const ROTATED_PASSWORD: &str = "pw-ROTATED-1e5b8c6d";

/// Every secret of this file; [`assert_no_secrets`] also checks their `user:password`
/// base64 forms.
const SECRETS: &[&str] = &[
    PASSWORD,
    WRONG_PASSWORD,
    EXT_STDOUT_SECRET,
    AWS_SECRET_ACCESS_KEY,
    ECR_PASSWORD,
    ECR_STALE_PASSWORD,
    GCP_ACCESS_TOKEN,
    GCP_REGISTRY_TOKEN,
    AZ_FEDERATED_TOKEN,
    AZ_AAD_TOKEN,
    ACR_REFRESH_TOKEN,
    ACR_ACCESS_TOKEN,
    GITHUB_TOKEN,
    GHCR_REGISTRY_TOKEN,
    FILE_BEARER_TOKEN,
    ROTATED_PASSWORD,
];

const ACR_USER: &str = "00000000-0000-0000-0000-000000000000";
const ECR_HOST: &str = "123456789012.dkr.ecr.eu-west-1.amazonaws.com";
const ACR_HOST: &str = "imagebumptest.azurecr.io";
const AZ_TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
const AZ_CLIENT_ID: &str = "11111111-2222-3333-4444-555555555555";

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn basic(user: &str, password: &str) -> String {
    format!("Basic {}", b64(&format!("{user}:{password}")))
}

/// `user:password` pairs whose base64 would give a secret away in a logged header.
fn secret_forms() -> Vec<String> {
    let mut out: Vec<String> = SECRETS.iter().map(|s| s.to_string()).collect();
    for (user, pw) in [
        (USER, PASSWORD),
        (USER, WRONG_PASSWORD),
        (USER, ROTATED_PASSWORD),
        ("AWS", ECR_PASSWORD),
        ("AWS", ECR_STALE_PASSWORD),
        ("oauth2accesstoken", GCP_ACCESS_TOKEN),
        (ACR_USER, ACR_REFRESH_TOKEN),
        ("octo-bot", GITHUB_TOKEN),
    ] {
        let encoded = b64(&format!("{user}:{pw}"));
        // The encoding without its padding, as a prefix search would see it.
        out.push(encoded.trim_end_matches('=').to_string());
    }
    out
}

// -------------------------------------------------------------------------------------------
// the manifest tree and the run
// -------------------------------------------------------------------------------------------

/// A manifest tree (kustomizations + `imagebump.yaml`) and, outside it, a `HOME` for the run
/// (holding credential files, scripts and the report) and an empty `DOCKER_CONFIG` dir.
struct Tree {
    root: tempfile::TempDir,
    home: tempfile::TempDir,
    docker: tempfile::TempDir,
}

impl Tree {
    fn new(config: &str) -> Tree {
        let tmp = |prefix: &str| {
            tempfile::Builder::new()
                .prefix(prefix)
                .tempdir()
                .expect("temp dir")
        };
        let tree = Tree {
            root: tmp("imagebump-auth-tree-"),
            home: tmp("imagebump-auth-home-"),
            docker: tmp("imagebump-auth-docker-"),
        };
        tree.config(config);
        tree
    }

    /// `config` with platform checks off (`platforms: [any]`): the stubs serve tag lists,
    /// and the requests these tests count are the listing's and its credentials'.
    fn config(&self, config: &str) {
        let config = format!("{config}defaults:\n  platforms: [any]\n");
        std::fs::write(self.root.path().join("imagebump.yaml"), config).expect("write config");
    }

    /// `<unit>/kustomization.yaml` with one `images:` entry per `(newName, newTag)`.
    fn kustomization(&self, unit: &str, images: &[(&str, &str)]) -> &Tree {
        let mut text = String::from("images:\n");
        for (i, (name, tag)) in images.iter().enumerate() {
            text.push_str(&format!(
                "- name: app{i}\n  newName: {name}\n  newTag: \"{tag}\"\n"
            ));
        }
        let dir = self.root.path().join(unit);
        std::fs::create_dir_all(&dir).expect("create unit dir");
        std::fs::write(dir.join("kustomization.yaml"), text).expect("write kustomization");
        self
    }

    /// A file in the run's `HOME` (outside the manifest tree).
    fn file(&self, name: &str, content: &str) -> PathBuf {
        let p = self.home.path().join(name);
        std::fs::write(&p, content).expect("write file");
        p
    }

    /// A `/bin/sh` script in the run's `HOME`, executable unless `executable` is false.
    fn script(&self, name: &str, body: &str, executable: bool) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = self.file(name, &format!("#!/bin/sh\n{body}\n"));
        let mode = if executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("chmod");
        p
    }

    /// Lines of a file a script appends to (one per run); 0 when it does not exist.
    fn lines_of(&self, name: &str) -> usize {
        std::fs::read_to_string(self.home.path().join(name))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    /// `config.json` in the run's `DOCKER_CONFIG`.
    fn docker_config(&self, json: &Value) {
        std::fs::write(self.docker.path().join("config.json"), json.to_string())
            .expect("write docker config.json");
    }

    fn report_path(&self) -> PathBuf {
        self.home.path().join("report.json")
    }
}

/// One finished run of the binary and its `--report` file.
struct Outcome {
    run: Run,
    /// The `--report` file (`Null` when none was written, e.g. a configuration error).
    report: Value,
    report_text: String,
}

impl std::ops::Deref for Outcome {
    type Target = Run;
    fn deref(&self) -> &Run {
        &self.run
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--- report ---\n{}\n{}",
            serde_json::to_string_pretty(&self.report).unwrap_or_default(),
            self.run
        )
    }
}

impl Outcome {
    /// `image → (from, to)` of the report's updates.
    fn updates(&self) -> BTreeMap<String, (String, String)> {
        self.report["updates"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|u| {
                        (
                            u["image"].as_str().unwrap_or_default().to_string(),
                            (
                                u["from"].as_str().unwrap_or_default().to_string(),
                                u["to"].as_str().unwrap_or_default().to_string(),
                            ),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    fn errors(&self) -> Vec<(String, String)> {
        self.report["errors"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| {
                        (
                            e["location"].as_str().unwrap_or_default().to_string(),
                            e["message"].as_str().unwrap_or_default().to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The messages of the errors reported at `location`.
    fn errors_at(&self, location: &str) -> Vec<String> {
        self.errors()
            .into_iter()
            .filter(|(l, _)| l == location)
            .map(|(_, m)| m)
            .collect()
    }

    /// The one error at `location`.
    fn error_at(&self, location: &str) -> String {
        let found = self.errors_at(location);
        assert_eq!(found.len(), 1, "expected one error at {location}:\n{self}");
        found.into_iter().next().unwrap_or_default()
    }

    fn assert_updated(&self, image: &str, from: &str, to: &str) {
        assert_eq!(
            self.updates().get(image),
            Some(&(from.to_string(), to.to_string())),
            "{image} should go {from} -> {to}:\n{self}"
        );
    }
}

/// No test secret (nor a `user:password` base64 of one) in stdout, stderr or the report.
fn assert_no_secrets(run: &Outcome) {
    let all = format!("{}\n{}\n{}", run.stdout, run.stderr, run.report_text);
    for secret in secret_forms() {
        if let Some(at) = all.find(&secret) {
            let start = at.saturating_sub(200);
            let end = (at + secret.len() + 200).min(all.len());
            panic!(
                "secret {secret:?} appears in the output:\n…{}…",
                all.get(start..end).unwrap_or(&all[at..])
            );
        }
    }
}

/// `imagebump -vvv run --dry-run <tree> --report <HOME/report.json>` with `RUST_LOG=trace`,
/// the tree's `HOME` and `DOCKER_CONFIG` plus `env`, expecting exit code `code`; checks that
/// no secret appears in any output.
fn run(tree: &Tree, env: &[(&str, &str)], code: i32) -> Outcome {
    let report = tree.report_path();
    let _ = std::fs::remove_file(&report);
    let run = imagebump()
        .home(tree.home.path())
        .docker_config_dir(tree.docker.path())
        .env("RUST_LOG", "trace")
        .args(["-vvv", "run", "--dry-run"])
        .arg(tree.root.path())
        // Registries and credentials are the operator's: the file is passed, not found.
        .arg("--config")
        .arg(tree.root.path().join("imagebump.yaml"))
        .arg("--report")
        .arg(&report)
        .envs(env.iter().copied())
        .timeout(RUN_TIMEOUT)
        .any_code()
        .run();
    let report_text = std::fs::read_to_string(&report).unwrap_or_default();
    let report = if report_text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&report_text)
            .unwrap_or_else(|e| panic!("the report is not JSON ({e}):\n{report_text}\n{run}"))
    };
    let outcome = Outcome {
        run,
        report,
        report_text,
    };
    assert_no_secrets(&outcome);
    outcome.assert_code(code, &format!("{outcome}"));
    outcome
}

/// [`run`] off the async runtime, so wiremock servers keep answering.
async fn run_async(tree: &Tree, env: &[(&str, &str)], code: i32) -> Outcome {
    tokio::task::block_in_place(|| run(tree, env, code))
}

// -------------------------------------------------------------------------------------------
// the real registry
// -------------------------------------------------------------------------------------------

/// A `docker-registry` with htpasswd user [`USER`] / [`PASSWORD`] holding
/// `team/app-a` and `team/app-b` at 1.0.0, 1.1.0 and 1.2.0.
fn auth_registry() -> Registry {
    let reg = Registry::start(RegistryMode::PlainBasicAuth {
        user: USER.into(),
        password: PASSWORD.into(),
    });
    for repo in ["team/app-a", "team/app-b"] {
        reg.push_tags(repo, &["1.0.0", "1.1.0", "1.2.0"]);
    }
    reg
}

/// A registry entry for `prefix` served by `url`, with extra YAML keys (indented 2).
fn entry(prefix: &str, url: &str, extra: &str) -> String {
    let mut s = format!("- prefix: {prefix}\n  url: {url}\n");
    for line in extra.lines().filter(|l| !l.trim().is_empty()) {
        s.push_str("  ");
        s.push_str(line);
        s.push('\n');
    }
    s
}

/// A tree with `auth.test/team/app-a` and `auth.test/team/app-b` at 1.0.0, and `config`.
fn two_apps(config: &str) -> Tree {
    let tree = Tree::new(config);
    tree.kustomization("a", &[("auth.test/team/app-a", "1.0.0")])
        .kustomization("b", &[("auth.test/team/app-b", "1.0.0")]);
    tree
}

/// For runs expecting exit code 0.
fn assert_both_updated(run: &Outcome) {
    run.assert_updated("auth.test/team/app-a", "1.0.0", "1.2.0");
    run.assert_updated("auth.test/team/app-b", "1.0.0", "1.2.0");
    assert!(run.errors().is_empty(), "{run}");
}

/// The message of a registry's 401 for a reference: the credentials from `sent_from` were
/// refused, or (`None`) none were sent.
fn assert_unauthorized(message: &str, repo: &str, sent_from: Option<&str>) {
    let why = match sent_from {
        Some(source) => format!("the credentials from {source} were refused (HTTP 401)"),
        None => "HTTP 401: not authorized".to_string(),
    };
    assert!(
        message.contains(&format!("/v2/{repo}/tags/list"))
            && message.contains(&why)
            && message.ends_with("1 reference(s) not checked"),
        "{message}"
    );
}

/// 1. `env:` credentials find the update; a wrong password in another variable fails only
///    that registry's references with a 401 (exit 1) while the other registry updates.
#[test]
fn env_credentials_and_a_wrong_password_fail_only_their_registry() {
    let reg = auth_registry();
    let other = Registry::start(RegistryMode::PlainBasicAuth {
        user: USER.into(),
        password: PASSWORD.into(),
    });
    other.push_tags("team/app-c", &["2.0.0", "2.1.0"]);
    let config = format!(
        "registries:\n{}{}",
        entry("auth.test", &reg.base_url(), "credentials: env:REG_CREDS"),
        entry(
            "other.test",
            &other.base_url(),
            "credentials: env:OTHER_CREDS"
        )
    );
    let tree = two_apps(&config);
    tree.kustomization("c", &[("other.test/team/app-c", "2.0.0")]);
    let good = format!("{USER}:{PASSWORD}");
    let wrong = format!("{USER}:{WRONG_PASSWORD}");

    let ok = run(&tree, &[("REG_CREDS", &good), ("OTHER_CREDS", &good)], 0);
    assert_both_updated(&ok);
    ok.assert_updated("other.test/team/app-c", "2.0.0", "2.1.0");
    assert_eq!(ok.report["requests"]["tagListPages"], 3, "{ok}");

    let bad = run(&tree, &[("REG_CREDS", &wrong), ("OTHER_CREDS", &good)], 1);
    assert_unauthorized(
        &bad.error_at("auth.test/team/app-a"),
        "team/app-a",
        Some("env:REG_CREDS"),
    );
    assert_unauthorized(
        &bad.error_at("auth.test/team/app-b"),
        "team/app-b",
        Some("env:REG_CREDS"),
    );
    // The other registry is unaffected: its update, no error, no skipped registry.
    bad.assert_updated("other.test/team/app-c", "2.0.0", "2.1.0");
    assert_eq!(bad.updates().len(), 1, "{bad}");
    assert_eq!(bad.errors().len(), 2, "{bad}");
    assert_eq!(bad.report["counts"]["failed"], 2, "{bad}");
}

/// What an operator reads on stderr (no `-v`) when a registry refuses a reference: refused
/// credentials name their source and never their secret; without credentials, the hint
/// says to add some.
#[test]
fn refused_credentials_name_their_source_and_missing_ones_ask_for_some() {
    let reg = auth_registry();
    let tree = Tree::new("");
    tree.kustomization("a", &[("auth.test/team/app-a", "1.0.0")]);
    let stderr = |credentials: &str, env: &[(&str, &str)]| {
        tree.config(&format!(
            "registries:\n{}",
            entry("auth.test", &reg.base_url(), credentials)
        ));
        let run = imagebump()
            .home(tree.home.path())
            .docker_config_dir(tree.docker.path())
            .args(["run", "--dry-run"])
            .arg(tree.root.path())
            .arg("--config")
            .arg(tree.root.path().join("imagebump.yaml"))
            .envs(env.iter().copied())
            .timeout(RUN_TIMEOUT)
            .code(1)
            .run();
        for secret in [PASSWORD, WRONG_PASSWORD] {
            assert!(
                !run.stdout.contains(secret) && !run.stderr.contains(secret),
                "{run}"
            );
        }
        run.filtered_stderr()
    };
    let wrong = format!("{USER}:{WRONG_PASSWORD}");
    assert_eq!(
        stderr("credentials: env:REG_PASSWORD", &[("REG_PASSWORD", &wrong)]),
        "error: auth.test/team/app-a: http://127.0.0.1:[PORT]/v2/team/app-a/tags/list?n=1000: the credentials from env:REG_PASSWORD were refused (HTTP 401); 1 reference(s) not checked (hint: check the user and password (or token) env:REG_PASSWORD holds, and that they are current; `imagebump registry check` shows the user sent)\n"
    );
    // The same from the Docker config, chosen implicitly.
    tree.docker_config(&json!({"auths": {"auth.test": {"auth": b64(&wrong)}}}));
    assert_eq!(
        stderr("", &[]),
        "error: auth.test/team/app-a: http://127.0.0.1:[PORT]/v2/team/app-a/tags/list?n=1000: the credentials from dockerconfig were refused (HTTP 401); 1 reference(s) not checked (hint: check the user and password (or token) dockerconfig holds, and that they are current; `imagebump registry check` shows the user sent)\n"
    );
    // No credentials at all: the registry wants some.
    tree.docker_config(&json!({"auths": {}}));
    assert_eq!(
        stderr("", &[]),
        "error: auth.test/team/app-a: http://127.0.0.1:[PORT]/v2/team/app-a/tags/list?n=1000: HTTP 401: not authorized; 1 reference(s) not checked (hint: add credentials: `docker login` (Docker config.json / DOCKER_CONFIG) or registries[].credentials (e.g. env:VAR) in the operator's configuration (--config))\n"
    );
}

/// 2. `file:` with `user:password` (as a mounted secret, with a trailing newline) and with a
///    Kubernetes `.dockerconfigjson` (`auths` with a base64 `auth`, among other hosts).
#[test]
fn file_credentials_pair_and_dockerconfigjson() {
    let reg = auth_registry();
    let tree = two_apps("");
    let pair = tree.file("pair", &format!("{USER}:{PASSWORD}\n"));
    let dockerconfigjson = tree.file(
        "dockerconfigjson",
        &json!({"auths": {
            "ghcr.io": {"auth": b64("someone:else")},
            "auth.test": {"auth": b64(&format!("{USER}:{PASSWORD}"))},
        }})
        .to_string(),
    );
    for file in [&pair, &dockerconfigjson] {
        tree.config(&format!(
            "registries:\n{}",
            entry(
                "auth.test",
                &reg.base_url(),
                &format!("credentials: file:{}", file.display())
            )
        ));
        let r = run(&tree, &[], 0);
        assert_both_updated(&r);
    }
    // Control: the same file without an entry for the host is anonymous access, refused.
    tree.file(
        "dockerconfigjson",
        &json!({"auths": {"ghcr.io": {"auth": b64("someone:else")}}}).to_string(),
    );
    let r = run(&tree, &[], 1);
    assert_unauthorized(&r.error_at("auth.test/team/app-a"), "team/app-a", None);
}

/// 3. `dockerconfig` reads `$DOCKER_CONFIG/config.json`; with no `credentials` key at all
///    the Docker config is picked implicitly; without an entry there, access is anonymous.
#[test]
fn docker_config_explicit_and_implicit() {
    let reg = auth_registry();
    let explicit = format!(
        "registries:\n{}",
        entry("auth.test", &reg.base_url(), "credentials: dockerconfig")
    );
    let implicit = format!("registries:\n{}", entry("auth.test", &reg.base_url(), ""));
    let tree = two_apps(&explicit);
    tree.docker_config(&json!({"auths": {
        "auth.test": {"auth": b64(&format!("{USER}:{PASSWORD}"))},
    }}));
    assert_both_updated(&run(&tree, &[], 0));
    tree.config(&implicit);
    assert_both_updated(&run(&tree, &[], 0));

    // Control: an entry for another host only, so the implicit source is anonymous.
    tree.docker_config(&json!({"auths": {
        "elsewhere.test": {"auth": b64(&format!("{USER}:{PASSWORD}"))},
    }}));
    let r = run(&tree, &[], 1);
    assert_eq!(r.errors().len(), 2, "{r}");
    for repo in ["team/app-a", "team/app-b"] {
        let message = r.error_at(&format!("auth.test/{repo}"));
        assert_unauthorized(&message, repo, None);
    }
}

/// The implicit source asks Docker's credential store once: the answer found while
/// choosing the source is the one used (a `credsStore` helper runs once per run, not twice).
#[test]
fn implicit_docker_credential_store_is_asked_once() {
    let reg = auth_registry();
    let tree = two_apps(&format!(
        "registries:\n{}",
        entry("auth.test", &reg.base_url(), "")
    ));
    std::fs::create_dir_all(tree.home.path().join("bin")).expect("bin dir");
    let helper = tree.script(
        "bin/docker-credential-imagebumptest",
        &format!(
            // Read the server URL first, as real helpers do: exiting before the caller has
            // written it makes the caller's write fail (a broken pipe).
            "read server\necho \"get $server\" >> \"$HOME/store.log\"\nprintf '{{\"ServerURL\":\"auth.test\",\"Username\":\"{USER}\",\"Secret\":\"{PASSWORD}\"}}'"
        ),
        true,
    );
    tree.docker_config(&json!({"credsStore": "imagebumptest"}));
    let path = format!(
        "{}:{}",
        helper.parent().expect("bin dir").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let r = run(&tree, &[("PATH", path.as_str())], 0);
    assert_both_updated(&r);
    assert_eq!(
        tree.lines_of("store.log"),
        1,
        "the store was asked once: {r}"
    );
}

/// 4. `ext:` programs: one printing the credentials works (run once for two repositories);
///    one failing has its stderr (not its stdout) quoted, and is run once (the failure is
///    cached); one outliving `credentialsTimeout` is a timeout; one not executable is a
///    configuration error (exit 2) before any request.
#[test]
fn ext_programs_success_failure_timeout_and_not_executable() {
    let reg = auth_registry();
    let tree = two_apps("");
    let runs = tree.home.path().join("runs.log");
    let config = |script: &Path, extra: &str| {
        format!(
            "registries:\n{}",
            entry(
                "auth.test",
                &reg.base_url(),
                &format!("credentials: ext:{}\n{extra}", script.display())
            )
        )
    };

    let ok = tree.script(
        "ok.sh",
        &format!(
            "echo \"$IMAGEBUMP_REGISTRY\" >> {}\necho '{USER}:{PASSWORD}'",
            runs.display()
        ),
        true,
    );
    tree.config(&config(&ok, ""));
    assert_both_updated(&run(&tree, &[], 0));
    assert_eq!(
        std::fs::read_to_string(&runs).unwrap_or_default(),
        "auth.test\n",
        "one run, told the registry host"
    );

    std::fs::remove_file(&runs).expect("reset the run log");
    let failing = tree.script(
        "failing.sh",
        &format!(
            "echo run >> {}\necho '{USER}:{EXT_STDOUT_SECRET}'\necho 'vault: permission denied for role ci-reader' >&2\nexit 1",
            runs.display()
        ),
        true,
    );
    tree.config(&config(&failing, ""));
    let r = run(&tree, &[], 1);
    for image in ["auth.test/team/app-a", "auth.test/team/app-b"] {
        let message = r.error_at(image);
        assert!(
            message.contains(&format!("credentials ext:{}", failing.display()))
                && message.contains("exited with status 1")
                && message.contains("stderr: vault: permission denied for role ci-reader"),
            "{message}"
        );
    }
    assert_eq!(
        tree.lines_of("runs.log"),
        1,
        "a failure is cached for the run"
    );

    let slow = tree.script("slow.sh", "exec sleep 20", true);
    tree.config(&config(&slow, "credentialsTimeout: 1s"));
    let r = run(&tree, &[], 1);
    let message = r.error_at("auth.test/team/app-a");
    assert!(
        message.contains(&format!("credentials ext:{}", slow.display()))
            && message.contains("no answer within 1s"),
        "{message}"
    );
    assert!(
        r.elapsed < Duration::from_secs(10),
        "the timeout was not enforced: {r}"
    );

    let not_executable = tree.script("plain.sh", "echo x:y", false);
    tree.config(&config(&not_executable, ""));
    let r = run(&tree, &[], 2);
    assert_eq!(r.report, Value::Null, "no run, no report: {r}");
    assert!(
        r.stderr.contains(&format!(
            "credentials ext:{}: the file is not executable",
            not_executable.display()
        )) && r.stderr.contains("registries[0] (prefix auth.test)"),
        "{r}"
    );
}

/// 5a. A program that prints a wrong password first and the right one afterwards: the 401
///     makes imagebump ask it again, once, and the update is found.
#[test]
fn ext_program_is_asked_again_after_a_401() {
    let reg = auth_registry();
    let tree = Tree::new("");
    tree.kustomization("a", &[("auth.test/team/app-a", "1.0.0")]);
    let marker = tree.home.path().join("asked-before");
    let script = tree.script(
        "rotating.sh",
        &format!(
            "echo run >> {runs}\nif [ -e {marker} ]; then echo '{USER}:{PASSWORD}'; else touch {marker}; echo '{USER}:{WRONG_PASSWORD}'; fi",
            runs = tree.home.path().join("runs.log").display(),
            marker = marker.display()
        ),
        true,
    );
    tree.config(&format!(
        "registries:\n{}",
        entry(
            "auth.test",
            &reg.base_url(),
            &format!("credentials: ext:{}", script.display())
        )
    ));
    let r = run(&tree, &[], 0);
    r.assert_updated("auth.test/team/app-a", "1.0.0", "1.2.0");
    assert_eq!(tree.lines_of("runs.log"), 2, "asked once, then once more");
}

fn registry_config(value: Value) -> RegistryConfig {
    serde_json::from_value(value).expect("a valid registries[] entry")
}

/// 5b. Library level: a wrong `env:` password is not asked again (the variable cannot
///     change during the run): one fetch, a 401. A `file:` source is re-read once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_source_is_not_refreshed_after_a_401() {
    let reg = tokio::task::block_in_place(auth_registry);
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("creds");
    std::fs::write(&file, format!("{USER}:{WRONG_PASSWORD}")).expect("write creds");
    support::isolate_process_env();
    let registries = Registries::with_env(
        vec![
            registry_config(json!({
                "prefix": "env.test", "url": reg.base_url(), "credentials": "env:REG_CREDS",
            })),
            registry_config(json!({
                "prefix": "file.test", "url": reg.base_url(),
                "credentials": format!("file:{}", file.display()),
            })),
        ],
        Environment::from_pairs([("REG_CREDS", format!("{USER}:{WRONG_PASSWORD}"))]),
    )
    .expect("registries");

    let client = registries
        .client_for(&parse_name("env.test/team/app-a").expect("name"))
        .expect("client");
    let e = client.list_tags("team/app-a").await.unwrap_err();
    assert!(
        matches!(e, RegistryError::Unauthorized { status: 401, .. }),
        "{e}"
    );
    assert_eq!(client.credentials().fetches(), 1, "env: is asked once");

    let client = registries
        .client_for(&parse_name("file.test/team/app-a").expect("name"))
        .expect("client");
    let e = client.list_tags("team/app-a").await.unwrap_err();
    assert!(
        matches!(e, RegistryError::Unauthorized { status: 401, .. }),
        "{e}"
    );
    assert_eq!(
        client.credentials().fetches(),
        2,
        "file: is re-read once after the 401"
    );
    tokio::task::block_in_place(move || drop(reg));
}

/// `credentialsExpire` (library level): an `ext:` answer is kept for that long, then the
/// program runs again; without it the answer lasts the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_expire_asks_an_ext_program_again() {
    let registry = MockServer::start().await;
    guarded_tags(
        &registry,
        &basic(USER, PASSWORD),
        "Basic realm=\"expire.test\"",
        &[("team/api", &["1.0.0"])],
    )
    .await;
    let dir = tempfile::tempdir().expect("temp dir");
    let runs = dir.path().join("runs.log");
    let script = dir.path().join("login.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho run >> '{}'\necho '{USER}:{PASSWORD}'\n",
            runs.display()
        ),
    )
    .expect("write script");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let entry = |prefix: &str, expire: Option<&str>| {
        let mut v = json!({
            "prefix": prefix, "url": registry.uri(),
            "credentials": format!("ext:{}", script.display()),
        });
        if let Some(e) = expire {
            v["credentialsExpire"] = json!(e);
        }
        registry_config(v)
    };
    support::isolate_process_env();
    let registries = Registries::with_env(
        vec![
            entry("expire.test", Some("1s")),
            entry("forever.test", None),
        ],
        Environment::default(),
    )
    .expect("registries");
    let runs_so_far = || {
        std::fs::read_to_string(&runs)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let expiring = registries
        .client_for(&parse_name("expire.test/team/api").expect("name"))
        .expect("client");
    let forever = registries
        .client_for(&parse_name("forever.test/team/api").expect("name"))
        .expect("client");
    for client in [&expiring, &forever] {
        client.list_tags("team/api").await.expect("list");
        client.list_tags("team/api").await.expect("list again");
    }
    assert_eq!(
        runs_so_far(),
        2,
        "one run per registry while the answers are fresh"
    );
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    for client in [&expiring, &forever] {
        client
            .list_tags("team/api")
            .await
            .expect("list after a second");
    }
    assert_eq!(
        expiring.credentials().fetches(),
        2,
        "expired after 1s: asked again"
    );
    assert_eq!(
        forever.credentials().fetches(),
        1,
        "no credentialsExpire: kept"
    );
    assert_eq!(runs_so_far(), 3);
}

/// 6. An `images` rule's credentials beat the registry entry's: the matching repository
///    updates, the other fails with the entry's (wrong) credentials.
#[test]
fn image_rule_credentials_override_the_registry_entry() {
    let reg = auth_registry();
    let config = format!(
        "registries:\n{}images:\n- match: auth.test/team/app-a\n  credentials: env:APP_A_CREDS\n",
        entry("auth.test", &reg.base_url(), "credentials: env:REG_CREDS")
    );
    let tree = two_apps(&config);
    let r = run(
        &tree,
        &[
            ("REG_CREDS", &format!("{USER}:{WRONG_PASSWORD}")),
            ("APP_A_CREDS", &format!("{USER}:{PASSWORD}")),
        ],
        1,
    );
    r.assert_updated("auth.test/team/app-a", "1.0.0", "1.2.0");
    assert_eq!(r.updates().len(), 1, "{r}");
    assert!(r.errors_at("auth.test/team/app-a").is_empty(), "{r}");
    assert_unauthorized(
        &r.error_at("auth.test/team/app-b"),
        "team/app-b",
        Some("env:REG_CREDS"),
    );
}

// -------------------------------------------------------------------------------------------
// wiremock registries
// -------------------------------------------------------------------------------------------

fn form_of(req: &Request) -> BTreeMap<String, String> {
    form_urlencoded::parse(&req.body).into_owned().collect()
}

fn query_of(req: &Request) -> BTreeMap<String, String> {
    req.url.query_pairs().into_owned().collect()
}

fn tags_path(repo: &str) -> String {
    format!("/v2/{repo}/tags/list")
}

/// `GET /v2/<repo>/tags/list` answers the tags only with `Authorization: <accepted>`; every
/// other `/v2/` request is a 401 with `challenge`.
async fn guarded_tags(
    server: &MockServer,
    accepted: &str,
    challenge: &str,
    repos: &[(&str, &[&str])],
) {
    for (repo, tags) in repos {
        Mock::given(method("GET"))
            .and(path(tags_path(repo)))
            .and(header("authorization", accepted))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(json!({"name": repo, "tags": tags})),
            )
            .with_priority(1)
            .mount(server)
            .await;
    }
    Mock::given(path_regex("^/v2/"))
        .respond_with(
            ResponseTemplate::new(401)
                .insert_header("www-authenticate", challenge)
                .set_body_json(json!({"errors": [{"code": "UNAUTHORIZED"}]})),
        )
        .with_priority(10)
        .mount(server)
        .await;
}

/// A token realm at `realm_path`: `{field: token}` for `Authorization: <accepted>`, else 401.
async fn token_realm(
    server: &MockServer,
    realm_path: &str,
    accepted: &str,
    field: &str,
    token: &str,
) {
    Mock::given(method("GET"))
        .and(path(realm_path))
        .and(header("authorization", accepted))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({field: token, "expires_in": 300})),
        )
        .with_priority(1)
        .mount(server)
        .await;
    Mock::given(method("GET"))
        .and(path(realm_path))
        .respond_with(ResponseTemplate::new(401).set_body_json(
            json!({"errors": [{"code": "UNAUTHORIZED", "message": "authentication required"}]}),
        ))
        .with_priority(10)
        .mount(server)
        .await;
}

fn epoch_secs(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

/// The ECR API's `GetAuthorizationToken`: `AWS:<password>` valid for `lifetime` from each
/// call; the passwords are answered in turn, the last one from then on.
struct EcrApi {
    passwords: Mutex<Vec<&'static str>>,
    lifetime: Duration,
}

impl Respond for EcrApi {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let password = {
            let mut passwords = self.passwords.lock().expect("passwords");
            if passwords.len() > 1 {
                passwords.remove(0)
            } else {
                passwords[0]
            }
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "authorizationData": [{
                "authorizationToken": b64(&format!("AWS:{password}")),
                "expiresAt": epoch_secs(SystemTime::now() + self.lifetime),
                "proxyEndpoint": format!("https://{ECR_HOST}"),
            }]
        }))
    }
}

/// Mounts [`EcrApi`] for `POST /` with the `X-Amz-Target`, content type and body `{}` of
/// `GetAuthorizationToken` (anything else gets wiremock's 404).
async fn ecr_api(server: &MockServer, passwords: &[&'static str], lifetime: Duration) {
    Mock::given(method("POST"))
        .and(path("/"))
        .and(header(
            "x-amz-target",
            "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken",
        ))
        .and(header("content-type", "application/x-amz-json-1.1"))
        .and(body_string("{}"))
        .respond_with(EcrApi {
            passwords: Mutex::new(passwords.to_vec()),
            lifetime,
        })
        .mount(server)
        .await;
}

fn ecr_challenge() -> String {
    format!("Basic realm=\"https://{ECR_HOST}/\",service=\"ecr.amazonaws.com\"")
}

fn ecr_requests(reqs: &[Request]) -> Vec<&Request> {
    reqs.iter()
        .filter(|r| r.method.as_str() == "POST" && r.url.path() == "/")
        .collect()
}

/// 7. ECR through the binary: one SigV4-signed `GetAuthorizationToken` for two
///    repositories, its token sent as Basic `AWS:<password>`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ecr_token_is_fetched_once_and_sent_as_basic() {
    let registry = MockServer::start().await;
    let ecr = MockServer::start().await;
    guarded_tags(
        &registry,
        &basic("AWS", ECR_PASSWORD),
        &ecr_challenge(),
        &[
            ("team/api", &["1.0.0", "1.4.0"]),
            ("team/web", &["2.0.0", "2.3.1"]),
        ],
    )
    .await;
    ecr_api(&ecr, &[ECR_PASSWORD], Duration::from_secs(12 * 3600)).await;
    let tree = Tree::new(&format!(
        "registries:\n{}",
        entry(ECR_HOST, &registry.uri(), "credentials: ecr")
    ));
    tree.kustomization("api", &[(&format!("{ECR_HOST}/team/api"), "1.0.0")])
        .kustomization("web", &[(&format!("{ECR_HOST}/team/web"), "2.0.0")]);

    let r = run_async(
        &tree,
        &[
            ("AWS_ACCESS_KEY_ID", AWS_ACCESS_KEY_ID),
            ("AWS_SECRET_ACCESS_KEY", AWS_SECRET_ACCESS_KEY),
            ("AWS_ENDPOINT_URL_ECR", &ecr.uri()),
            // Never reached: the environment keys come first in the chain.
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9"),
        ],
        0,
    )
    .await;
    r.assert_updated(&format!("{ECR_HOST}/team/api"), "1.0.0", "1.4.0");
    r.assert_updated(&format!("{ECR_HOST}/team/web"), "2.0.0", "2.3.1");

    let calls = received(&ecr).await;
    let token_calls = ecr_requests(&calls);
    assert_eq!(calls.len(), 1, "one GetAuthorizationToken for the run");
    assert_eq!(token_calls.len(), 1);
    let call = token_calls[0];
    let auth = header_of(call, "authorization").unwrap_or_default();
    assert!(
        auth.starts_with(&format!("AWS4-HMAC-SHA256 Credential={AWS_ACCESS_KEY_ID}/"))
            && auth.contains("/eu-west-1/ecr/aws4_request")
            && auth.contains("SignedHeaders=")
            && auth.contains("Signature="),
        "{auth}"
    );
    assert!(header_of(call, "x-amz-date").is_some());
    assert_eq!(call.body, b"{}");

    // Each repository: at most one unauthenticated try (the challenge; a list that starts
    // after another has learned the scheme sends the token at once), then the token.
    let reqs = received(&registry).await;
    let with_token = basic("AWS", ECR_PASSWORD);
    let mut challenged = 0;
    for repo in ["team/api", "team/web"] {
        let tries: Vec<Option<&str>> = reqs
            .iter()
            .filter(|q| q.url.path() == tags_path(repo))
            .map(|q| header_of(q, "authorization"))
            .collect();
        match tries.as_slice() {
            [None, Some(t)] if *t == with_token => challenged += 1,
            [Some(t)] if *t == with_token => {}
            other => panic!("{repo}: {other:?}"),
        }
    }
    assert!(challenged >= 1, "the first request is anonymous");
}

fn ecr_env(ecr: &MockServer) -> Environment {
    Environment::from_pairs([
        ("AWS_ACCESS_KEY_ID", AWS_ACCESS_KEY_ID.to_string()),
        ("AWS_SECRET_ACCESS_KEY", AWS_SECRET_ACCESS_KEY.to_string()),
        ("AWS_ENDPOINT_URL_ECR", ecr.uri()),
    ])
}

fn ecr_registries(registry: &MockServer, ecr: &MockServer) -> Registries {
    support::isolate_process_env();
    Registries::with_env(
        vec![registry_config(json!({
            "prefix": ECR_HOST, "url": registry.uri(), "credentials": "ecr",
        }))],
        ecr_env(ecr),
    )
    .expect("registries")
}

/// 8a. Library level: an ECR token is used until its `expiresAt`, then fetched again.
#[tokio::test]
async fn ecr_token_is_fetched_again_after_it_expires() {
    let registry = MockServer::start().await;
    let ecr = MockServer::start().await;
    guarded_tags(
        &registry,
        &basic("AWS", ECR_PASSWORD),
        &ecr_challenge(),
        &[("team/api", &["1.0.0"])],
    )
    .await;
    ecr_api(&ecr, &[ECR_PASSWORD], Duration::from_secs(2)).await;
    let registries = ecr_registries(&registry, &ecr);
    let client = registries
        .client_for(&parse_name(&format!("{ECR_HOST}/team/api")).expect("name"))
        .expect("client");

    client.list_tags("team/api").await.expect("first list");
    client.list_tags("team/api").await.expect("second list");
    assert_eq!(client.credentials().fetches(), 1, "cached while valid");
    assert_eq!(ecr_requests(&received(&ecr).await).len(), 1);

    tokio::time::sleep(Duration::from_millis(2_500)).await;
    client
        .list_tags("team/api")
        .await
        .expect("list after expiry");
    assert_eq!(
        client.credentials().fetches(),
        2,
        "fetched again after expiresAt"
    );
    assert_eq!(ecr_requests(&received(&ecr).await).len(), 2);
}

/// A registry with two repositories behind ECR Basic auth, and an ECR API whose first
/// token is stale (revoked) and every later one good.
async fn stale_then_good_ecr() -> (MockServer, MockServer, Registries) {
    let registry = MockServer::start().await;
    let ecr = MockServer::start().await;
    guarded_tags(
        &registry,
        &basic("AWS", ECR_PASSWORD),
        &ecr_challenge(),
        &[("team/api", &["1.0.0"]), ("team/web", &["1.0.0"])],
    )
    .await;
    ecr_api(
        &ecr,
        &[ECR_STALE_PASSWORD, ECR_PASSWORD],
        Duration::from_secs(12 * 3600),
    )
    .await;
    let registries = ecr_registries(&registry, &ecr);
    (registry, ecr, registries)
}

/// 8b. Library level: a registry refusing the cached ECR token (401) gets exactly one fresh
///     token; a registry refusing the fresh one too is a 401 after two fetches, not a loop.
#[tokio::test]
async fn ecr_token_refused_by_the_registry_is_refreshed_once() {
    let (registry, ecr, registries) = stale_then_good_ecr().await;
    let client = registries
        .client_for(&parse_name(&format!("{ECR_HOST}/team/api")).expect("name"))
        .expect("client");
    client
        .list_tags("team/api")
        .await
        .expect("list after the refresh");
    assert_eq!(client.credentials().fetches(), 2);
    let sent: Vec<Option<String>> = received(&registry)
        .await
        .iter()
        .map(|q| header_of(q, "authorization").map(str::to_string))
        .collect();
    assert_eq!(
        sent,
        vec![
            None,
            Some(basic("AWS", ECR_STALE_PASSWORD)),
            Some(basic("AWS", ECR_PASSWORD))
        ]
    );
    // The good token stays cached for the next repository.
    client
        .list_tags("team/web")
        .await
        .expect("second repository");
    assert_eq!(client.credentials().fetches(), 2);

    // A registry that refuses every token: two fetches, then a clean 401.
    let refusing = MockServer::start().await;
    guarded_tags(&refusing, "Basic nobody", &ecr_challenge(), &[]).await;
    let registries = ecr_registries(&refusing, &ecr);
    let client = registries
        .client_for(&parse_name(&format!("{ECR_HOST}/team/api")).expect("name"))
        .expect("client");
    let e = client.list_tags("team/api").await.unwrap_err();
    assert!(
        matches!(e, RegistryError::Unauthorized { status: 401, .. }),
        "{e}"
    );
    assert_eq!(client.credentials().fetches(), 2);
    assert_eq!(
        received(&refusing).await.len(),
        3,
        "bare, first token, fresh token"
    );
}

/// 8c. Concurrent 401s refresh once: two repositories listed at once, the first ECR token
///     refused, cost two `GetAuthorizationToken` calls. Each refused attempt names the
///     credentials it sent; the second finds them already replaced and keeps the fresh
///     ones (before that was so, it threw them away: 3 calls).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_401s_refresh_the_credentials_once() {
    let (_registry, ecr, registries) = stale_then_good_ecr().await;
    let client = registries
        .client_for(&parse_name(&format!("{ECR_HOST}/team/api")).expect("name"))
        .expect("client");
    let (a, b) = tokio::join!(client.list_tags("team/api"), client.list_tags("team/web"));
    a.expect("team/api");
    b.expect("team/web");
    assert_eq!(ecr_requests(&received(&ecr).await).len(), 2);
    assert_eq!(client.credentials().fetches(), 2);
}

/// A Bearer registry: tag lists for `Authorization: Bearer <registry_token>`, else a 401
/// pointing at `<uri><realm_path>`.
async fn bearer_registry(
    server: &MockServer,
    realm_path: &str,
    service: &str,
    registry_token: &str,
    repos: &[(&str, &[&str])],
) {
    let challenge = format!(
        "Bearer realm=\"{}{realm_path}\",service=\"{service}\"",
        server.uri()
    );
    guarded_tags(
        server,
        &format!("Bearer {registry_token}"),
        &challenge,
        repos,
    )
    .await;
}

/// 9. `gcp` from the metadata server (`GCE_METADATA_HOST`): one token request, with
///    `Metadata-Flavor: Google`, for two repositories; the registry's realm gets Basic
///    `oauth2accesstoken:<access token>`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcp_metadata_server_token_reaches_the_token_realm() {
    const HOST: &str = "europe-west1-docker.pkg.dev";
    let registry = MockServer::start().await;
    let metadata = MockServer::start().await;
    let repos: [(&str, &[&str]); 2] = [
        ("proj/repo/api", &["1.0.0", "1.1.0"]),
        ("proj/repo/web", &["3.0.0", "3.0.1"]),
    ];
    bearer_registry(&registry, "/v2/token", HOST, GCP_REGISTRY_TOKEN, &repos).await;
    token_realm(
        &registry,
        "/v2/token",
        &basic("oauth2accesstoken", GCP_ACCESS_TOKEN),
        "token",
        GCP_REGISTRY_TOKEN,
    )
    .await;
    let sa = "/computeMetadata/v1/instance/service-accounts/default";
    Mock::given(method("GET"))
        .and(path(format!("{sa}/token")))
        .and(header("Metadata-Flavor", "Google"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("Metadata-Flavor", "Google")
                .set_body_json(json!({
                    "access_token": GCP_ACCESS_TOKEN, "expires_in": 3599, "token_type": "Bearer",
                })),
        )
        .mount(&metadata)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("{sa}/email")))
        .and(header("Metadata-Flavor", "Google"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("Metadata-Flavor", "Google")
                .set_body_string("puller@proj.iam.gserviceaccount.com"),
        )
        .mount(&metadata)
        .await;
    let tree = Tree::new(&format!(
        "registries:\n{}",
        entry(HOST, &registry.uri(), "credentials: gcp")
    ));
    tree.kustomization("api", &[(&format!("{HOST}/proj/repo/api"), "1.0.0")])
        .kustomization("web", &[(&format!("{HOST}/proj/repo/web"), "3.0.0")]);
    let metadata_host = metadata.address().to_string();
    let r = run_async(&tree, &[("GCE_METADATA_HOST", &metadata_host)], 0).await;
    r.assert_updated(&format!("{HOST}/proj/repo/api"), "1.0.0", "1.1.0");
    r.assert_updated(&format!("{HOST}/proj/repo/web"), "3.0.0", "3.0.1");

    let meta = received(&metadata).await;
    assert_eq!(
        hits(&meta, "GET", &format!("{sa}/token")),
        1,
        "one token for the run"
    );
    assert_eq!(hits(&meta, "GET", &format!("{sa}/email")), 1);
    assert_eq!(meta.len(), 2);
    assert!(meta
        .iter()
        .all(|q| header_of(q, "metadata-flavor") == Some("Google")));

    // One realm call per repository scope, each with the access token as Basic password.
    let reqs = received(&registry).await;
    let realm: Vec<&Request> = reqs
        .iter()
        .filter(|q| q.url.path() == "/v2/token")
        .collect();
    assert_eq!(realm.len(), 2, "one token per repository scope");
    let mut scopes: Vec<String> = realm
        .iter()
        .map(|q| {
            let query = query_of(q);
            assert_eq!(query.get("service").map(String::as_str), Some(HOST));
            assert_eq!(
                header_of(q, "authorization"),
                Some(basic("oauth2accesstoken", GCP_ACCESS_TOKEN).as_str())
            );
            query.get("scope").cloned().unwrap_or_default()
        })
        .collect();
    scopes.sort();
    assert_eq!(
        scopes,
        [
            "repository:proj/repo/api:pull",
            "repository:proj/repo/web:pull"
        ]
    );
}

/// 10. `acr`: an Entra ID token from workload identity (the federated token as client
///     assertion), exchanged at the registry's `/oauth2/exchange` for a refresh token, which
///     the token realm takes as the password of the all-zero user. Once for two repositories.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acr_workload_identity_exchange() {
    let registry = MockServer::start().await;
    let entra = MockServer::start().await;
    let token_path = format!("/{AZ_TENANT}/oauth2/v2.0/token");
    Mock::given(method("POST"))
        .and(path(token_path.as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "token_type": "Bearer", "expires_in": 3599, "access_token": AZ_AAD_TOKEN,
        })))
        .mount(&entra)
        .await;
    Mock::given(method("POST"))
        .and(path("/oauth2/exchange"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"refresh_token": ACR_REFRESH_TOKEN})),
        )
        .mount(&registry)
        .await;
    let repos: [(&str, &[&str]); 2] = [
        ("team/api", &["1.0.0", "1.0.5"]),
        ("team/web", &["0.9.0", "1.0.0"]),
    ];
    bearer_registry(
        &registry,
        "/oauth2/token",
        ACR_HOST,
        ACR_ACCESS_TOKEN,
        &repos,
    )
    .await;
    token_realm(
        &registry,
        "/oauth2/token",
        &basic(ACR_USER, ACR_REFRESH_TOKEN),
        "access_token",
        ACR_ACCESS_TOKEN,
    )
    .await;
    let tree = Tree::new(&format!(
        "registries:\n{}",
        entry(ACR_HOST, &registry.uri(), "credentials: acr")
    ));
    tree.kustomization("api", &[(&format!("{ACR_HOST}/team/api"), "1.0.0")])
        .kustomization("web", &[(&format!("{ACR_HOST}/team/web"), "0.9.0")]);
    let federated = tree.file("federated-token", &format!("{AZ_FEDERATED_TOKEN}\n"));
    let r = run_async(
        &tree,
        &[
            ("AZURE_CLIENT_ID", AZ_CLIENT_ID),
            ("AZURE_TENANT_ID", AZ_TENANT),
            (
                "AZURE_FEDERATED_TOKEN_FILE",
                &federated.display().to_string(),
            ),
            ("AZURE_AUTHORITY_HOST", &entra.uri()),
            // Never reached: workload identity comes first.
            ("IMAGEBUMP_AZURE_IMDS_ENDPOINT", "http://127.0.0.1:9"),
        ],
        0,
    )
    .await;
    r.assert_updated(&format!("{ACR_HOST}/team/api"), "1.0.0", "1.0.5");
    r.assert_updated(&format!("{ACR_HOST}/team/web"), "0.9.0", "1.0.0");

    let aad = received(&entra).await;
    assert_eq!(aad.len(), 1, "one Entra ID token for the run");
    assert_eq!(aad[0].url.path(), token_path);
    let form = form_of(&aad[0]);
    let expected: BTreeMap<String, String> = [
        ("grant_type", "client_credentials"),
        ("client_id", AZ_CLIENT_ID),
        ("scope", "https://management.azure.com/.default"),
        (
            "client_assertion_type",
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        ),
        ("client_assertion", AZ_FEDERATED_TOKEN),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(form, expected);

    let reqs = received(&registry).await;
    let exchanges: Vec<&Request> = reqs
        .iter()
        .filter(|q| q.url.path() == "/oauth2/exchange")
        .collect();
    assert_eq!(exchanges.len(), 1, "one exchange for the run");
    assert_eq!(
        header_of(exchanges[0], "content-type"),
        Some("application/x-www-form-urlencoded")
    );
    let expected: BTreeMap<String, String> = [
        ("grant_type", "access_token"),
        ("service", ACR_HOST),
        ("tenant", AZ_TENANT),
        ("access_token", AZ_AAD_TOKEN),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(form_of(exchanges[0]), expected);
    let realm: Vec<&Request> = reqs
        .iter()
        .filter(|q| q.url.path() == "/oauth2/token")
        .collect();
    assert_eq!(realm.len(), 2, "one token per repository scope");
    for q in realm {
        assert_eq!(
            header_of(q, "authorization"),
            Some(basic(ACR_USER, ACR_REFRESH_TOKEN).as_str())
        );
        assert_eq!(
            query_of(q).get("service").map(String::as_str),
            Some(ACR_HOST)
        );
    }
}

/// 11. `ghcr.io` with no `credentials` key: `GITHUB_TOKEN` is the password sent to the token
///     realm (user `GITHUB_ACTOR`); without it the run is anonymous and refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ghcr_uses_github_token_implicitly() {
    let registry = MockServer::start().await;
    bearer_registry(
        &registry,
        "/token",
        "ghcr.io",
        GHCR_REGISTRY_TOKEN,
        &[("acme/web", &["1.0.0", "1.2.0"])],
    )
    .await;
    token_realm(
        &registry,
        "/token",
        &basic("octo-bot", GITHUB_TOKEN),
        "token",
        GHCR_REGISTRY_TOKEN,
    )
    .await;
    let tree = Tree::new(&format!(
        "registries:\n{}",
        entry("ghcr.io", &registry.uri(), "")
    ));
    tree.kustomization("web", &[("ghcr.io/acme/web", "1.0.0")]);

    let r = run_async(
        &tree,
        &[("GITHUB_TOKEN", GITHUB_TOKEN), ("GITHUB_ACTOR", "octo-bot")],
        0,
    )
    .await;
    r.assert_updated("ghcr.io/acme/web", "1.0.0", "1.2.0");
    let realm: Vec<Option<String>> = received(&registry)
        .await
        .iter()
        .filter(|q| q.url.path() == "/token")
        .map(|q| header_of(q, "authorization").map(str::to_string))
        .collect();
    assert_eq!(realm, vec![Some(basic("octo-bot", GITHUB_TOKEN))]);

    registry.reset().await;
    bearer_registry(&registry, "/token", "ghcr.io", GHCR_REGISTRY_TOKEN, &[]).await;
    token_realm(
        &registry,
        "/token",
        &basic("octo-bot", GITHUB_TOKEN),
        "token",
        "x",
    )
    .await;
    let r = run_async(&tree, &[], 1).await;
    let realm: Vec<Option<String>> = received(&registry)
        .await
        .iter()
        .filter(|q| q.url.path() == "/token")
        .map(|q| header_of(q, "authorization").map(str::to_string))
        .collect();
    assert_eq!(realm, vec![None], "anonymous without GITHUB_TOKEN");
    let message = r.error_at("ghcr.io/acme/web");
    assert!(message.contains("HTTP 401: not authorized"), "{message}");
}

/// A token realm that refuses everything but `Basic <USER>:<ROTATED_PASSWORD>`, rewriting the
/// `file:` credentials to that on its first refusal (a secret rotated under a running job).
struct RotatingRealm {
    file: PathBuf,
    calls: AtomicUsize,
    rotate: bool,
}

impl Respond for RotatingRealm {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let first = self.calls.fetch_add(1, Ordering::SeqCst) == 0;
        if header_of(request, "authorization") == Some(basic(USER, ROTATED_PASSWORD).as_str()) {
            return ResponseTemplate::new(200).set_body_json(json!({"token": FILE_BEARER_TOKEN}));
        }
        if first && self.rotate {
            std::fs::write(&self.file, format!("{USER}:{ROTATED_PASSWORD}\n")).expect("rotate");
        }
        ResponseTemplate::new(401).set_body_json(json!({"errors": [{"code": "UNAUTHORIZED"}]}))
    }
}

/// 12. A Bearer registry whose realm refuses the `file:` credentials: the file is re-read
///     once (the realm is asked exactly twice) and the error is a clean 401; a file rotated
///     in between is picked up by that one re-read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_realm_refusal_rereads_file_credentials_once() {
    for rotate in [false, true] {
        let registry = MockServer::start().await;
        let tree = Tree::new("");
        let file = tree.file("creds", &format!("{USER}:{WRONG_PASSWORD}\n"));
        bearer_registry(
            &registry,
            "/token",
            "file-bearer.test",
            FILE_BEARER_TOKEN,
            &[("team/api", &["1.0.0", "1.1.0"])],
        )
        .await;
        Mock::given(method("GET"))
            .and(path("/token"))
            .respond_with(RotatingRealm {
                file: file.clone(),
                calls: AtomicUsize::new(0),
                rotate,
            })
            .mount(&registry)
            .await;
        tree.config(&format!(
            "registries:\n{}",
            entry(
                "file-bearer.test",
                &registry.uri(),
                &format!("credentials: file:{}", file.display())
            )
        ));
        tree.kustomization("api", &[("file-bearer.test/team/api", "1.0.0")]);
        let r = run_async(&tree, &[], if rotate { 0 } else { 1 }).await;

        let reqs = received(&registry).await;
        let realm: Vec<Option<String>> = reqs
            .iter()
            .filter(|q| q.url.path() == "/token")
            .map(|q| header_of(q, "authorization").map(str::to_string))
            .collect();
        let tags: Vec<Option<String>> = reqs
            .iter()
            .filter(|q| q.url.path() == tags_path("team/api"))
            .map(|q| header_of(q, "authorization").map(str::to_string))
            .collect();
        if rotate {
            r.assert_updated("file-bearer.test/team/api", "1.0.0", "1.1.0");
            assert_eq!(
                realm,
                vec![
                    Some(basic(USER, WRONG_PASSWORD)),
                    Some(basic(USER, ROTATED_PASSWORD))
                ]
            );
            assert_eq!(
                tags,
                vec![None, Some(format!("Bearer {FILE_BEARER_TOKEN}"))]
            );
        } else {
            assert_eq!(
                realm,
                vec![
                    Some(basic(USER, WRONG_PASSWORD)),
                    Some(basic(USER, WRONG_PASSWORD))
                ],
                "asked once, re-read once"
            );
            assert_eq!(tags, vec![None], "only the challenge reached the registry");
            let message = r.error_at("file-bearer.test/team/api");
            assert!(
                message.starts_with(&format!("{}/token?", registry.uri()))
                    && message.contains(&format!(
                        "the credentials from file:{} were refused (HTTP 401); 1 reference(s) not checked",
                        file.display()
                    )),
                "{message}"
            );
        }
    }
}

/// Mounts tag lists announcing an exhausted pull allowance (`ratelimit-remaining: 0`) for
/// `library/web` and `team/builds`, and a 500 for any manifest.
async fn exhausted_allowance_registry() -> MockServer {
    let registry = MockServer::start().await;
    for (repo, tags) in [
        ("library/web", &["1.0.0", "1.1.0"][..]),
        ("team/builds", &["build-1", "build-2", "build-3"][..]),
    ] {
        Mock::given(method("GET"))
            .and(path(tags_path(repo)))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("ratelimit-limit", "100;w=21600")
                    .insert_header("ratelimit-remaining", "0;w=21600")
                    .set_body_json(json!({"name": repo, "tags": tags})),
            )
            .mount(&registry)
            .await;
    }
    // Anything else (a manifest) would be an error the test would see as a different message.
    Mock::given(path_regex("/manifests/"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&registry)
        .await;
    registry
}

/// Runs `library/web` at 1.0.0 (semver) and `team/builds` at build-1 (`newest-build`) under
/// `host` against `registry`, with the platform check on.
async fn run_exhausted(registry: &MockServer, host: &str) -> Outcome {
    let config = format!(
        "registries:\n{}images:\n- match: {host}/team/builds\n  strategy: newest-build\n",
        entry(host, &registry.uri(), "credentials: anonymous")
    );
    let tree = Tree::new(&config);
    std::fs::write(tree.root.path().join("imagebump.yaml"), &config).expect("write config");
    tree.kustomization("web", &[(&format!("{host}/library/web"), "1.0.0")])
        .kustomization("builds", &[(&format!("{host}/team/builds"), "build-1")]);
    run_async(&tree, &[], 1).await
}

/// The manifest requests `registry` received.
async fn manifest_requests(registry: &MockServer) -> Vec<String> {
    received(registry)
        .await
        .iter()
        .filter(|q| q.url.path().contains("/manifests/"))
        .map(|q| format!("{} {}", q.method, q.url.path()))
        .collect()
}

/// 13. Docker Hub's allowance: once `ratelimit-remaining` says 0, no manifest GET is sent; a
///     `newest-build` reference (which needs them) fails naming the pull limit; a semver
///     reference (tag list only) still updates, its platform check left out with a warning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exhausted_pull_allowance_sends_no_manifest_get() {
    let registry = exhausted_allowance_registry().await;
    let r = run_exhausted(&registry, "docker.io").await;
    r.assert_updated("docker.io/library/web", "1.0.0", "1.1.0");
    assert_eq!(r.updates().len(), 1, "{r}");
    let warnings: Vec<&str> = r.report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        warnings,
        [
            "the current version's platforms are not compared (1.0.0: docker.io: not asked: its pull limit is used up (0 of 100 pulls left per 6h)); list the platforms the repository runs in `platforms`",
            "the current version's platforms are not compared (build-1: docker.io: not asked: its pull limit is used up (0 of 100 pulls left per 6h)); list the platforms the repository runs in `platforms`"
        ],
        "{r}"
    );
    let errors = r.errors_at("docker.io/team/builds");
    assert!(!errors.is_empty(), "{r}");
    for message in &errors {
        assert!(
            message.contains(
                "docker.io: not asked: its pull limit is used up (0 of 100 pulls left per 6h)"
            ),
            "{message}"
        );
    }
    // Not a broken registry: nothing is reported at the host.
    assert!(r.errors_at("docker.io").is_empty(), "{r}");
    assert_eq!(manifest_requests(&registry).await, Vec::<String>::new());
    assert_eq!(received(&registry).await.len(), 2, "the two tag lists only");
}

/// 13b. Any other registry announcing an exhausted allowance does not switch the platform
///      check off: the semver reference is an error naming the host, not an unchecked
///      update, and no warning says the check was left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_registrys_exhausted_allowance_is_an_error() {
    let registry = exhausted_allowance_registry().await;
    let r = run_exhausted(&registry, "hub.test").await;
    assert_eq!(r.updates().len(), 0, "{r}");
    assert_eq!(r.report["warnings"], json!([]), "{r}");
    assert_eq!(
        r.errors_at("hub.test/library/web"),
        ["image metadata: 1.0.0: hub.test: not asked: its pull limit is used up (0 of 100 pulls left per 6h)"],
        "{r}"
    );
    assert_eq!(manifest_requests(&registry).await, Vec::<String>::new());
}

/// 14. The circuit breaker: a registry answering 503 to everything, six repositories,
///     `concurrency: 1`. After 8 failed attempts in a row the rest are not sent; the report
///     says so once at the host and once per image; a healthy registry in the same run
///     still updates; exit 1.
///
/// The count: all six tag lists start together and `concurrency: 1` lets one attempt out at
/// a time. The six first attempts fail, each schedules a retry; two second attempts fail and
/// make it 8 in a row, which opens the breaker before the slot is released, so every later
/// attempt (the four other second attempts, the two third ones) is refused: exactly 8
/// requests, 8 retries scheduled, and all six references end up skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn circuit_breaker_skips_a_failing_registry_for_the_rest_of_the_run() {
    let down = MockServer::start().await;
    Mock::given(path_regex("^/"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&down)
        .await;
    let up = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(tags_path("team/ok")))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"name": "team/ok", "tags": ["1.0.0", "1.0.1"]})),
        )
        .mount(&up)
        .await;
    let tree = Tree::new(&format!(
        "registries:\n{}{}",
        entry(
            "down.test",
            &down.uri(),
            "credentials: anonymous\nconcurrency: 1"
        ),
        entry("up.test", &up.uri(), "credentials: anonymous")
    ));
    for i in 1..=6 {
        tree.kustomization(
            &format!("r{i}"),
            &[(&format!("down.test/team/r{i}"), "1.0.0")],
        );
    }
    tree.kustomization("ok", &[("up.test/team/ok", "1.0.0")]);
    let r = run_async(&tree, &[], 1).await;
    r.assert_updated("up.test/team/ok", "1.0.0", "1.0.1");
    assert_eq!(r.updates().len(), 1, "{r}");

    // One problem at the host.
    let host = r.error_at("down.test");
    assert!(
        host.starts_with("skipped for the rest of the run: 8 attempts in a row failed (last: ")
            && host.ends_with("(last: HTTP 503)"),
        "{host}"
    );
    // Six references not checked, none of them after more than two attempts.
    for i in 1..=6 {
        assert_eq!(
            r.error_at(&format!("down.test/team/r{i}")),
            "1 reference(s) not checked: down.test was skipped",
            "{r}"
        );
    }
    assert_eq!(r.errors().len(), 7, "{r}");

    let reqs = received(&down).await;
    let per_repo: Vec<usize> = (1..=6)
        .map(|i| hits(&reqs, "GET", &tags_path(&format!("team/r{i}"))))
        .collect();
    assert_eq!(reqs.len(), 8, "tag lists only, 8 attempts: {per_repo:?}");
    assert!(per_repo.iter().all(|&n| n == 1 || n == 2), "{per_repo:?}");
    assert_eq!(r.report["requests"]["retries"], 8, "{r}");
}

fn plain_registries(server: &MockServer, rate_limit: Option<f64>) -> Registries {
    let mut rl = json!({"prefix": "rl.test", "url": server.uri(), "credentials": "anonymous"});
    if let Some(r) = rate_limit {
        rl["rateLimit"] = json!(r);
    }
    support::isolate_process_env();
    Registries::with_env(
        vec![
            registry_config(rl),
            registry_config(
                json!({"prefix": "other.test", "url": server.uri(), "credentials": "anonymous"}),
            ),
        ],
        Environment::from_pairs(Vec::<(String, String)>::new()),
    )
    .expect("registries")
}

/// 15a. `rateLimit: 4`: five tag lists take at least a second (the fifth starts 1 s after
///      the first), whether asked one after another or all at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_spaces_requests() {
    let server = MockServer::start().await;
    let at = Arc::new(Mutex::new(Vec::new()));
    Mock::given(method("GET"))
        .and(path_regex("^/v2/.*/tags/list$"))
        .respond_with(Timed {
            at: at.clone(),
            inner: ResponseTemplate::new(200).set_body_json(json!({"name": "x", "tags": ["1"]})),
        })
        .mount(&server)
        .await;
    let registries = plain_registries(&server, Some(4.0));
    let client = registries
        .client_for(&parse_name("rl.test/team/a").expect("name"))
        .expect("client");

    let t0 = Instant::now();
    for i in 0..5 {
        client.list_tags(&format!("team/s{i}")).await.expect("list");
    }
    let sequential = t0.elapsed();
    assert!(sequential >= Duration::from_millis(1_000), "{sequential:?}");

    let t0 = Instant::now();
    let all = (0..5).map(|i| {
        let client = client.clone();
        async move { client.list_tags(&format!("team/c{i}")).await }
    });
    for r in futures::future::join_all(all).await {
        r.expect("list");
    }
    let concurrent = t0.elapsed();
    assert!(concurrent >= Duration::from_millis(1_000), "{concurrent:?}");
    let at = at.lock().expect("clock").clone();
    assert_eq!(at.len(), 10);
    // Server side: consecutive starts of the concurrent batch are ≥ ~250 ms apart.
    let batch = &at[5..];
    assert!(
        batch[4].duration_since(batch[0]) >= Duration::from_millis(950),
        "{:?}",
        batch
            .iter()
            .map(|t| t.duration_since(batch[0]))
            .collect::<Vec<_>>()
    );
}

/// 15b. A 429 with `Retry-After: 1` on one repository pauses the whole registry: a request
///      to another repository of it, started during the pause, reaches the server only
///      after the pause; another registry is not held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_pauses_the_whole_registry() {
    let server = MockServer::start().await;
    let limited_at = Arc::new(Mutex::new(Vec::new()));
    let b_at = Arc::new(Mutex::new(Vec::new()));
    let other_at = Arc::new(Mutex::new(Vec::new()));
    rate_limited_once(&server, &tags_path("team/a"), &limited_at).await;
    Mock::given(method("GET"))
        .and(path(tags_path("team/a")))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"name": "team/a", "tags": ["1"]})),
        )
        .with_priority(5)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(tags_path("team/b")))
        .respond_with(Timed {
            at: b_at.clone(),
            inner: ResponseTemplate::new(200)
                .set_body_json(json!({"name": "team/b", "tags": ["1"]})),
        })
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(tags_path("team/other")))
        .respond_with(Timed {
            at: other_at.clone(),
            inner: ResponseTemplate::new(200)
                .set_body_json(json!({"name": "team/other", "tags": ["1"]})),
        })
        .mount(&server)
        .await;
    let registries = Arc::new(plain_registries(&server, None));
    let a_client = registries
        .client_for(&parse_name("rl.test/team/a").expect("name"))
        .expect("client");
    let a = tokio::spawn(async move { a_client.list_tags("team/a").await });
    // Wait until the 429 went out, then ask for team/b on the same registry.
    let deadline = Instant::now() + Duration::from_secs(5);
    while limited_at.lock().expect("clock").is_empty() {
        assert!(Instant::now() < deadline, "the first request never arrived");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let asked_b = Instant::now();
    let b_client = registries
        .client_for(&parse_name("rl.test/team/b").expect("name"))
        .expect("client");
    let other_client = registries
        .client_for(&parse_name("other.test/team/other").expect("name"))
        .expect("client");
    let (b, other) = tokio::join!(
        b_client.list_tags("team/b"),
        other_client.list_tags("team/other")
    );
    b.expect("team/b");
    other.expect("team/other");
    a.await.expect("join").expect("team/a after its retry");

    let limited = limited_at.lock().expect("clock")[0];
    let b_served = b_at.lock().expect("clock")[0];
    let other_served = other_at.lock().expect("clock")[0];
    assert!(
        b_served.duration_since(limited) >= Duration::from_millis(990),
        "team/b reached the server {:?} after the 429",
        b_served.duration_since(limited)
    );
    assert!(
        b_served > asked_b + Duration::from_millis(500),
        "team/b was asked during the pause and held"
    );
    // Asked together with team/b, another registry's request is not held with it.
    assert!(
        other_served + Duration::from_millis(300) < b_served,
        "another registry is not paused: served {:?} after being asked, team/b {:?}",
        other_served.duration_since(asked_b),
        b_served.duration_since(asked_b)
    );
    assert_eq!(
        hits(&received(&server).await, "GET", &tags_path("team/a")),
        2
    );
}
