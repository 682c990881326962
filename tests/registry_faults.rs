//! Registry faults, end to end: the real `imagebump` binary (`run --dry-run --output json`)
//! against a wiremock registry on loopback (and, for bodies wiremock cannot send — chunked
//! without `Content-Length`, or a `Content-Length` that lies — a tiny raw HTTP/1.1 server),
//! checking the JSON report, the requests the registry received, the exit code, and that
//! the manifest tree is left byte-identical.
//!
//! Layout:
//! * [`Repo`]: a temp manifest tree (kustomization dirs + `imagebump.yaml` pointing the
//!   `registry.test` prefix at the mock) and its own `DOCKER_CONFIG` dir.
//! * [`run`] / [`run_with`]: run the binary off the async runtime (so the mock keeps
//!   serving), parse its JSON, and assert a dry run changed no file.
//! * Small mock builders ([`tags`], [`Timed`], [`RawServer`]) and request counters.
//!
//! Every test isolates its process environment (its own `DOCKER_CONFIG`, no proxies, no
//! `IMAGEBUMP_*` variables), so they may run in parallel. None takes more than a few seconds:
//! the retry tests rely on `Retry-After: 1`/`0` and on the client's short backoff.

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

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};
use wiremock::matchers::{header, method, path, query_param, query_param_is_missing};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

mod support;

use support::cli::{imagebump, Run};
use support::mock::{header_of, hits, rate_limited_once, received, Timed};

/// The response cap of `tags/list` (`TAG_LIST_LIMIT` in src/registry/client.rs).
const TAG_LIST_LIMIT: usize = 32 * 1024 * 1024;
/// What a run may take before it counts as hung.
const RUN_TIMEOUT: Duration = Duration::from_secs(30);
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

// -------------------------------------------------------------------------------------------
// the manifest tree
// -------------------------------------------------------------------------------------------

/// A throw-away manifest tree with an `imagebump.yaml` that sends `registry.test/...` to the
/// mock, plus an (initially empty) Docker config dir used as the run's `DOCKER_CONFIG`.
struct Repo {
    root: tempfile::TempDir,
    docker_config: tempfile::TempDir,
}

impl Repo {
    /// `registry_url` is the mock's `uri()`.
    fn new(registry_url: &str) -> Repo {
        let root = tempfile::Builder::new()
            .prefix("imagebump-faults-")
            .tempdir()
            .expect("temp dir");
        let docker_config = tempfile::Builder::new()
            .prefix("imagebump-docker-")
            .tempdir()
            .expect("temp dir");
        std::fs::write(
            root.path().join("imagebump.yaml"),
            // The faults are in the listing: platform checks (tests/multi_arch.rs) off, so
            // that every request counted is one the test means.
            format!(
                "registries:\n- prefix: registry.test\n  url: {registry_url}\n\
                 defaults:\n  platforms: [any]\n"
            ),
        )
        .expect("write imagebump.yaml");
        Repo {
            root,
            docker_config,
        }
    }

    fn path(&self) -> &Path {
        self.root.path()
    }

    /// Writes `<unit>/kustomization.yaml` with one `images:` entry per `(newName, newTag)`.
    fn kustomization(&self, unit: &str, images: &[(&str, &str)]) -> &Repo {
        let mut text = String::from("images:\n");
        for (i, (name, tag)) in images.iter().enumerate() {
            let short = if i == 0 {
                "app".to_string()
            } else {
                format!("app{i}")
            };
            text.push_str(&format!(
                "- name: {short}\n  newName: {name}\n  newTag: {tag}\n"
            ));
        }
        let dir = self.path().join(unit);
        std::fs::create_dir_all(&dir).expect("create unit dir");
        std::fs::write(dir.join("kustomization.yaml"), text).expect("write kustomization");
        self
    }

    /// Puts `{"auths":{"registry.test":{"auth":base64(user:password)}}}` in the Docker config.
    fn docker_login(&self, user: &str, password: &str) -> String {
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        std::fs::write(
            self.docker_config.path().join("config.json"),
            json!({"auths": {"registry.test": {"auth": auth}}}).to_string(),
        )
        .expect("write docker config.json");
        auth
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).expect("read file")
    }

    /// Every file of the tree (relative path → bytes).
    fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
            for entry in std::fs::read_dir(dir).expect("read dir") {
                let p = entry.expect("dir entry").path();
                if p.is_dir() {
                    walk(base, &p, out);
                } else {
                    let rel = p.strip_prefix(base).expect("under base").to_path_buf();
                    out.insert(rel, std::fs::read(&p).expect("read file"));
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(self.path(), self.path(), &mut out);
        out
    }
}

// -------------------------------------------------------------------------------------------
// running the binary
// -------------------------------------------------------------------------------------------

/// One finished run and its JSON report.
struct Outcome {
    run: Run,
    json: Value,
}

impl std::ops::Deref for Outcome {
    type Target = Run;
    fn deref(&self) -> &Run {
        &self.run
    }
}

impl Outcome {
    fn requests(&self) -> &Value {
        &self.json["requests"]
    }

    fn counts(&self) -> &Value {
        &self.json["counts"]
    }

    fn updates(&self) -> &Vec<Value> {
        self.json["updates"]
            .as_array()
            .expect("updates is an array")
    }

    fn errors(&self) -> &Vec<Value> {
        self.json["errors"].as_array().expect("errors is an array")
    }

    /// The one error reported for `location`; panics (with the report) otherwise.
    fn error_at(&self, location: &str) -> &Value {
        let found: Vec<&Value> = self
            .errors()
            .iter()
            .filter(|e| e["location"] == location)
            .collect();
        assert_eq!(
            found.len(),
            1,
            "expected exactly one error at {location}:\n{self}"
        );
        found[0]
    }

    /// Both output streams, for secret checks.
    fn all_output(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.run.fmt(f)
    }
}

/// `imagebump run --dry-run <repo> --output json <extra…>`, expecting exit code `code`.
/// Asserts that the dry run left every file of the tree byte-identical.
/// `code` is `None` where the test asserts it itself.
async fn run(repo: &Repo, extra: &[&str], code: impl Into<Option<i32>>) -> Outcome {
    let before = repo.snapshot();
    let mut args = vec!["run", "--dry-run"];
    args.extend_from_slice(extra);
    let out = run_with(repo, &args, code).await;
    assert!(
        repo.snapshot() == before,
        "a dry run must not change any file\n{out}"
    );
    out
}

/// `imagebump <args…> <repo> --output json` with the repo's Docker config, expecting exit
/// code `code`; off the runtime so the mock server keeps answering.
async fn run_with(repo: &Repo, args: &[&str], code: impl Into<Option<i32>>) -> Outcome {
    let cli = match code.into() {
        Some(code) => imagebump().code(code),
        None => imagebump().any_code(),
    };
    let run = cli
        .args(args)
        .arg(repo.path())
        .args(["--output", "json"])
        // Registries are the operator's: the file is passed, not found.
        .arg("--config")
        .arg(repo.path().join("imagebump.yaml"))
        .docker_config_dir(repo.docker_config.path())
        .timeout(RUN_TIMEOUT)
        .run_async()
        .await;
    let json = run.json();
    Outcome { run, json }
}

/// The `requests` object of the report.
fn requests(tag_list_pages: usize, tokens: usize, manifests: usize, retries: usize) -> Value {
    json!({
        "tagListPages": tag_list_pages,
        "tokens": tokens,
        "manifests": manifests,
        "blobs": 0,
        "retries": retries,
    })
}

/// The `counts` object of the report (`files`: kustomization files scanned).
fn counts(
    files: usize,
    references: usize,
    repositories: usize,
    updates: usize,
    up_to_date: usize,
    failed: usize,
) -> Value {
    json!({
        "filesScanned": files,
        "references": references,
        "managed": references,
        "repositories": repositories,
        "updates": updates,
        "upToDate": up_to_date,
        "heldBack": 0,
        "scheduled": 0,
        "pinned": 0,
        "skipped": 0,
        "failed": failed,
        "refused": 0,
    })
}

// -------------------------------------------------------------------------------------------
// the mock registry
// -------------------------------------------------------------------------------------------

fn tags_path(repo: &str) -> String {
    format!("/v2/{repo}/tags/list")
}

fn tag_page(repo: &str, tags: &[&str]) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({"name": repo, "tags": tags}))
}

/// Serves `tags` as the single page of `repo`'s tag list.
async fn tags(server: &MockServer, repo: &str, tags: &[&str]) {
    Mock::given(method("GET"))
        .and(path(tags_path(repo)))
        .respond_with(tag_page(repo, tags))
        .mount(server)
        .await;
}

/// `GET tags/list` of `repo` answers 401 with a Basic challenge (at `priority`, so a mock
/// that accepts credentials can come first).
async fn basic_challenge(server: &MockServer, repo: &str, priority: u8) {
    Mock::given(method("GET"))
        .and(path(tags_path(repo)))
        .respond_with(
            ResponseTemplate::new(401).insert_header("WWW-Authenticate", r#"Basic realm="x""#),
        )
        .with_priority(priority)
        .mount(server)
        .await;
}

/// How [`RawServer`] answers every request.
#[derive(Clone)]
enum Reply {
    /// `body` as 1 MiB chunks (`Transfer-Encoding: chunked`, so no `Content-Length`).
    Chunked(Arc<Vec<u8>>),
    /// `Content-Length: declared`, then only `body`, then the connection is closed.
    Declared { declared: usize, body: Vec<u8> },
}

/// A minimal HTTP/1.1 server on its own thread, for answers wiremock cannot give (a body
/// without `Content-Length`, a `Content-Length` that lies). Counts the requests it read.
struct RawServer {
    port: u16,
    hits: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl RawServer {
    fn start(reply: Reply) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let hits = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, s) = (hits.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (h, reply) = (h.clone(), reply.clone());
                std::thread::spawn(move || {
                    // The client hanging up early (as it should on a refused size) is fine.
                    let _ = serve_raw(conn, &h, &reply);
                });
            }
        });
        RawServer { port, hits, stop }
    }

    fn uri(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so its thread ends.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve_raw(conn: TcpStream, hits: &AtomicUsize, reply: &Reply) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if line == "\r\n" || line == "\n" {
            break;
        }
    }
    hits.fetch_add(1, Ordering::SeqCst);
    let mut w = conn;
    match reply {
        Reply::Chunked(body) => {
            w.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                  Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
            )?;
            for chunk in body.chunks(1024 * 1024) {
                write!(w, "{:x}\r\n", chunk.len())?;
                w.write_all(chunk)?;
                w.write_all(b"\r\n")?;
            }
            w.write_all(b"0\r\n\r\n")?;
        }
        Reply::Declared { declared, body } => {
            write!(
                w,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                 Content-Length: {declared}\r\nConnection: close\r\n\r\n"
            )?;
            w.write_all(body)?;
        }
    }
    w.flush()
}

/// A valid tag-list JSON document of at least `size` bytes whose only tag is `1.3.0`, so a
/// client that ignored the cap would happily propose an update.
fn huge_tag_list(size: usize) -> Vec<u8> {
    let head = br#"{"name":"team/app","tags":["1.3.0""#;
    let tail = b"]}";
    let mut body = Vec::with_capacity(size + head.len() + tail.len());
    body.extend_from_slice(head);
    body.resize(size, b' ');
    body.extend_from_slice(tail);
    body
}

fn digest_of(byte: u8) -> String {
    format!("sha256:{}", format!("{byte:02x}").repeat(32))
}

// -------------------------------------------------------------------------------------------
// 1. bearer tokens
// -------------------------------------------------------------------------------------------

/// Mounts a bearer-protected `team/app` (tags 1.2.0, 1.3.0, 2.0.0) and its token endpoint.
async fn bearer_registry(server: &MockServer) {
    let realm = format!("{}/token", server.uri());
    Mock::given(method("GET"))
        .and(path(tags_path("team/app")))
        .and(header("authorization", "Bearer tok123"))
        .respond_with(tag_page("team/app", &["1.2.0", "1.3.0", "2.0.0"]))
        .with_priority(1)
        .mount(server)
        .await;
    Mock::given(method("GET"))
        .and(path(tags_path("team/app")))
        .respond_with(ResponseTemplate::new(401).insert_header(
            "WWW-Authenticate",
            format!(
                r#"Bearer realm="{realm}",service="registry.test",scope="repository:team/app:pull""#
            )
            .as_str(),
        ))
        .with_priority(2)
        .mount(server)
        .await;
    Mock::given(method("GET"))
        .and(path("/token"))
        .and(query_param("service", "registry.test"))
        .and(query_param("scope", "repository:team/app:pull"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"token": "tok123", "expires_in": 300})),
        )
        .mount(server)
        .await;
}

/// Asserts the bearer handshake: one anonymous try, one token request, one retry with it.
fn assert_bearer_handshake(reqs: &[Request]) -> &Request {
    let listing: Vec<&Request> = reqs
        .iter()
        .filter(|r| r.url.path() == tags_path("team/app"))
        .collect();
    assert_eq!(listing.len(), 2, "anonymous try + authenticated try");
    assert_eq!(header_of(listing[0], "authorization"), None);
    assert_eq!(
        header_of(listing[1], "authorization"),
        Some("Bearer tok123")
    );
    let token: Vec<&Request> = reqs.iter().filter(|r| r.url.path() == "/token").collect();
    assert_eq!(token.len(), 1, "exactly one token request");
    let query: BTreeMap<String, String> = token[0].url.query_pairs().into_owned().collect();
    assert_eq!(
        query.get("scope").map(String::as_str),
        Some("repository:team/app:pull")
    );
    assert_eq!(
        query.get("service").map(String::as_str),
        Some("registry.test")
    );
    token[0]
}

#[tokio::test(flavor = "multi_thread")]
async fn bearer_challenge_gets_one_scoped_token() {
    let server = MockServer::start().await;
    bearer_registry(&server).await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);

    let out = run(&repo, &[], 0).await;
    assert_eq!(out.errors().len(), 0, "{out}");
    assert_eq!(out.updates().len(), 1, "{out}");
    assert_eq!(out.updates()[0]["to"], "2.0.0");
    assert_eq!(out.updates()[0]["from"], "1.2.0");
    assert_eq!(out.updates()[0]["image"], "registry.test/team/app");
    assert_eq!(*out.requests(), requests(1, 1, 0, 0));
    let reqs = received(&server).await;
    let token = assert_bearer_handshake(&reqs);
    assert_eq!(
        header_of(token, "authorization"),
        None,
        "no credentials configured: anonymous token"
    );
    assert!(
        !out.all_output().contains("tok123"),
        "token printed:\n{out}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bearer_token_request_uses_docker_config_credentials_without_printing_them() {
    let server = MockServer::start().await;
    bearer_registry(&server).await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);
    // A distinctive password, so "never printed" cannot pass or fail by coincidence.
    let password = "pw-Qz7v9Kx2";
    let auth = repo.docker_login("user", password);

    // -vvv: imagebump's own trace logging must not print secrets either.
    let out = run(&repo, &["-vvv"], 0).await;
    assert_eq!(out.updates()[0]["to"], "2.0.0", "{out}");
    assert_eq!(*out.requests(), requests(1, 1, 0, 0));
    let reqs = received(&server).await;
    let token = assert_bearer_handshake(&reqs);
    assert_eq!(
        header_of(token, "authorization"),
        Some(format!("Basic {auth}").as_str()),
        "the token request carries the Docker config credentials"
    );
    for secret in [password, auth.as_str(), "tok123"] {
        assert!(
            !out.all_output().contains(secret),
            "secret {secret:?} printed:\n{out}"
        );
    }
}

/// A token the registry keeps refusing ends the request after one re-authentication.
#[tokio::test(flavor = "multi_thread")]
async fn bearer_token_refused_by_registry_fails_without_looping() {
    let server = MockServer::start().await;
    let realm = format!("{}/token", server.uri());
    Mock::given(method("GET"))
        .and(path(tags_path("team/app")))
        .respond_with(ResponseTemplate::new(401).insert_header(
            "WWW-Authenticate",
            format!(r#"Bearer realm="{realm}",service="registry.test""#).as_str(),
        ))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/token"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"token": "tok123"})))
        .mount(&server)
        .await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);

    let out = run(&repo, &[], 1).await;
    let err = out.error_at("registry.test/team/app");
    let message = err["message"].as_str().unwrap();
    assert!(message.contains("HTTP 401"), "{message}");
    assert!(message.ends_with("1 reference(s) not checked"), "{message}");
    assert!(
        err["hint"].as_str().unwrap().contains("docker login"),
        "{out}"
    );
    assert_eq!(*out.requests(), requests(1, 1, 0, 0));
    let reqs = received(&server).await;
    assert_eq!(hits(&reqs, "GET", &tags_path("team/app")), 2);
    assert_eq!(hits(&reqs, "GET", "/token"), 1);
}

// -------------------------------------------------------------------------------------------
// 2. one listing per repository
// -------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn one_tag_listing_per_distinct_repository() {
    let server = MockServer::start().await;
    tags(&server, "team/app", &["1.2.0", "1.3.0"]).await;
    tags(&server, "team/other", &["0.1.0", "0.2.0"]).await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("a", &[("registry.test/team/app", "1.2.0")])
        .kustomization(
            "b",
            &[
                ("registry.test/team/app", "1.2.0"),
                ("registry.test/team/other", "0.1.0"),
            ],
        )
        .kustomization("c", &[("registry.test/team/app", "1.3.0")]);

    let out = run(&repo, &[], 0).await;
    assert_eq!(*out.counts(), counts(3, 4, 2, 3, 1, 0), "{out}");
    assert_eq!(*out.requests(), requests(2, 0, 0, 0));
    let to: Vec<(&str, &str)> = out
        .updates()
        .iter()
        .map(|u| (u["file"].as_str().unwrap(), u["to"].as_str().unwrap()))
        .collect();
    assert_eq!(
        to,
        [
            ("a/kustomization.yaml", "1.3.0"),
            ("b/kustomization.yaml", "1.3.0"),
            ("b/kustomization.yaml", "0.2.0"),
        ]
    );
    let reqs = received(&server).await;
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    assert_eq!(hits(&reqs, "GET", &tags_path("team/app")), 1);
    assert_eq!(hits(&reqs, "GET", &tags_path("team/other")), 1);
}

// -------------------------------------------------------------------------------------------
// 3. pagination
// -------------------------------------------------------------------------------------------

/// Two pages: `1.2.0, 1.3.0` with a `Link` to `next`, then `2.0.0` without one.
async fn two_pages(server: &MockServer, next: &str) {
    Mock::given(method("GET"))
        .and(path(tags_path("team/app")))
        .and(query_param_is_missing("last"))
        .respond_with(
            tag_page("team/app", &["1.2.0", "1.3.0"])
                .insert_header("Link", format!(r#"<{next}>; rel="next""#).as_str()),
        )
        .mount(server)
        .await;
    Mock::given(method("GET"))
        .and(path(tags_path("team/app")))
        .and(query_param("last", "1.3.0"))
        .respond_with(tag_page("team/app", &["2.0.0"]))
        .mount(server)
        .await;
}

async fn assert_follows_two_pages(server: &MockServer, repo: &Repo) {
    let out = run(repo, &[], 0).await;
    assert_eq!(out.updates()[0]["to"], "2.0.0", "{out}");
    assert_eq!(*out.requests(), requests(2, 0, 0, 0));
    let reqs = received(server).await;
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    assert_eq!(reqs[0].url.query_pairs().find(|(k, _)| k == "last"), None);
    let second: BTreeMap<String, String> = reqs[1].url.query_pairs().into_owned().collect();
    assert_eq!(second.get("last").map(String::as_str), Some("1.3.0"));
    assert_eq!(second.get("n").map(String::as_str), Some("2"));
}

#[tokio::test(flavor = "multi_thread")]
async fn link_header_pagination_relative() {
    let server = MockServer::start().await;
    two_pages(&server, "/v2/team/app/tags/list?n=2&last=1.3.0").await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);
    assert_follows_two_pages(&server, &repo).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn link_header_pagination_absolute_url() {
    let server = MockServer::start().await;
    let next = format!("{}/v2/team/app/tags/list?n=2&last=1.3.0", server.uri());
    two_pages(&server, &next).await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);
    assert_follows_two_pages(&server, &repo).await;
}

/// A `Link` pointing back at a page already read is an error, not an endless loop.
#[tokio::test(flavor = "multi_thread")]
async fn link_header_loop_is_refused() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(tags_path("team/app")))
        .respond_with(
            tag_page("team/app", &["1.2.0", "1.3.0"])
                .insert_header("Link", r#"</v2/team/app/tags/list?n=1000>; rel="next""#),
        )
        .mount(&server)
        .await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);

    let out = run(&repo, &[], 1).await;
    let message = out.error_at("registry.test/team/app")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("pagination loops back"), "{message}");
    assert_eq!(out.updates().len(), 0, "{out}");
    assert_eq!(
        hits(&received(&server).await, "GET", &tags_path("team/app")),
        1
    );
}

/// Credentials for `registry.test` must not be sent to another origin that a `Link` header
/// names (compare reqwest/net-http, which drop `Authorization` on cross-origin redirects).
#[tokio::test(flavor = "multi_thread")]
async fn absolute_link_to_another_origin_gets_no_credentials() {
    let server = MockServer::start().await;
    let elsewhere = MockServer::start().await;
    let next = format!("{}/v2/team/app/tags/list?n=2&last=1.3.0", elsewhere.uri());
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);
    let auth = repo.docker_login("user", "pw-Qx7Lq3Z");
    Mock::given(method("GET"))
        .and(path(tags_path("team/app")))
        .and(header("authorization", format!("Basic {auth}").as_str()))
        .respond_with(
            tag_page("team/app", &["1.2.0", "1.3.0"])
                .insert_header("Link", format!(r#"<{next}>; rel="next""#).as_str()),
        )
        .with_priority(1)
        .mount(&server)
        .await;
    basic_challenge(&server, "team/app", 2).await;
    tags(&elsewhere, "team/app", &["2.0.0"]).await;

    let out = run(&repo, &[], 0).await;

    let foreign = received(&elsewhere).await;
    assert_eq!(foreign.len(), 1, "the next page was fetched\n{out}");
    assert_eq!(
        header_of(&foreign[0], "authorization"),
        None,
        "registry.test credentials were sent to {}",
        elsewhere.uri()
    );
}

// -------------------------------------------------------------------------------------------
// 4., 5. retries
// -------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn rate_limit_429_waits_retry_after_then_succeeds() {
    let server = MockServer::start().await;
    let clock = Arc::new(Mutex::new(Vec::new()));
    rate_limited_once(&server, &tags_path("team/app"), &clock).await;
    Mock::given(method("GET"))
        .and(path(tags_path("team/app")))
        .respond_with(Timed {
            at: clock.clone(),
            inner: tag_page("team/app", &["1.2.0", "2.0.0"]),
        })
        .with_priority(2)
        .mount(&server)
        .await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);

    let out = run(&repo, &[], 0).await;
    assert_eq!(out.updates()[0]["to"], "2.0.0", "{out}");
    assert_eq!(*out.requests(), requests(1, 0, 0, 1));
    let at = clock.lock().unwrap().clone();
    assert_eq!(at.len(), 2, "one 429, one 200");
    let gap = at[1] - at[0];
    assert!(
        gap >= Duration::from_millis(950),
        "Retry-After: 1 not honoured, retried after {gap:?}"
    );
    assert!(
        gap < Duration::from_secs(3),
        "waited {gap:?} for Retry-After: 1"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limit_429_that_persists_gives_up_with_a_hint() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(tags_path("team/app")))
        .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", "0"))
        .mount(&server)
        .await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);

    let out = run(&repo, &[], 1).await;
    let err = out.error_at("registry.test/team/app");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("rate limited (HTTP 429)"),
        "{out}"
    );
    assert!(
        err["hint"].as_str().unwrap().contains("concurrency"),
        "{out}"
    );
    assert_eq!(*out.requests(), requests(1, 0, 0, 3));
    assert_eq!(
        hits(&received(&server).await, "GET", &tags_path("team/app")),
        4
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn server_error_503_twice_then_ok() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(tags_path("team/app")))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(2)
        .with_priority(1)
        .mount(&server)
        .await;
    tags(&server, "team/app", &["1.2.0", "1.4.1"]).await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);

    let out = run(&repo, &[], 0).await;
    assert_eq!(out.errors().len(), 0, "{out}");
    assert_eq!(out.updates()[0]["to"], "1.4.1", "{out}");
    assert_eq!(*out.requests(), requests(1, 0, 0, 2));
    assert_eq!(
        hits(&received(&server).await, "GET", &tags_path("team/app")),
        3
    );
    assert!(
        out.elapsed < Duration::from_secs(4),
        "backoff too long: {out}"
    );
}

// -------------------------------------------------------------------------------------------
// 6. - 8. failures
// -------------------------------------------------------------------------------------------

/// `team/app` always answers 500; `team/other` on the same registry is healthy.
async fn half_broken_registry(server: &MockServer) -> Repo {
    Mock::given(method("GET"))
        .and(path(tags_path("team/app")))
        .respond_with(ResponseTemplate::new(500))
        .mount(server)
        .await;
    tags(server, "team/other", &["0.1.0", "0.2.0"]).await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("broken", &[("registry.test/team/app", "1.2.0")])
        .kustomization("healthy", &[("registry.test/team/other", "0.1.0")]);
    repo
}

#[tokio::test(flavor = "multi_thread")]
async fn persistent_500_is_reported_and_healthy_repository_still_updates() {
    let server = MockServer::start().await;
    let repo = half_broken_registry(&server).await;

    let out = run(&repo, &[], 1).await;
    let err = out.error_at("registry.test/team/app");
    let message = err["message"].as_str().unwrap();
    assert_eq!(
        message,
        format!(
            "{}/v2/team/app/tags/list?n=1000: HTTP 500 from the registry; 1 reference(s) not checked",
            server.uri()
        )
    );
    assert_eq!(err.get("hint"), None, "{out}");
    assert_eq!(out.errors().len(), 1, "{out}");
    assert_eq!(*out.counts(), counts(2, 2, 2, 1, 0, 1), "{out}");
    assert_eq!(out.updates().len(), 1, "{out}");
    assert_eq!(out.updates()[0]["image"], "registry.test/team/other");
    assert_eq!(out.updates()[0]["to"], "0.2.0");
    let not_updated = out.json["notUpdated"].as_array().unwrap();
    assert_eq!(not_updated.len(), 1, "{out}");
    assert_eq!(not_updated[0]["status"], "not-checked");
    assert_eq!(not_updated[0]["file"], "broken/kustomization.yaml");
    assert_eq!(*out.requests(), requests(2, 0, 0, 3));
    let reqs = received(&server).await;
    assert_eq!(
        hits(&reqs, "GET", &tags_path("team/app")),
        4,
        "1 try + 3 retries"
    );
    assert_eq!(hits(&reqs, "GET", &tags_path("team/other")), 1);
    assert!(
        out.stderr.contains("error: registry.test/team/app: "),
        "{out}"
    );
}

/// With `--write`, the healthy file is rewritten and the failed one stays byte-identical.
#[tokio::test(flavor = "multi_thread")]
async fn persistent_500_with_write_leaves_the_failed_file_untouched() {
    let server = MockServer::start().await;
    let repo = half_broken_registry(&server).await;
    let broken_before = std::fs::read(repo.path().join("broken/kustomization.yaml")).unwrap();
    let healthy_before = repo.read("healthy/kustomization.yaml");

    let out = run_with(&repo, &["run", "--write"], 1).await;
    assert_eq!(out.json["mode"], "write");
    assert_eq!(
        std::fs::read(repo.path().join("broken/kustomization.yaml")).unwrap(),
        broken_before
    );
    assert_eq!(
        repo.read("healthy/kustomization.yaml"),
        healthy_before.replace("newTag: 0.1.0", "newTag: 0.2.0")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn basic_challenge_without_credentials_hints_at_docker_login() {
    let server = MockServer::start().await;
    basic_challenge(&server, "team/app", 5).await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);

    let out = run(&repo, &[], 1).await;
    let err = out.error_at("registry.test/team/app");
    let message = err["message"].as_str().unwrap();
    assert!(message.contains("HTTP 401: not authorized"), "{message}");
    assert!(
        message.ends_with("; 1 reference(s) not checked"),
        "{message}"
    );
    let hint = err["hint"].as_str().unwrap();
    assert!(hint.contains("docker login"), "{hint}");
    assert!(hint.contains("credentials"), "{hint}");
    assert_eq!(*out.requests(), requests(1, 0, 0, 0));
    assert_eq!(received(&server).await.len(), 1, "no pointless retry");
}

#[tokio::test(flavor = "multi_thread")]
async fn basic_challenge_with_docker_config_credentials_succeeds() {
    let server = MockServer::start().await;
    let password = "pw-Bx4Rt8Wn";
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("user:{password}"));
    Mock::given(method("GET"))
        .and(path(tags_path("team/app")))
        .and(header("authorization", format!("Basic {auth}").as_str()))
        .respond_with(tag_page("team/app", &["1.2.0", "1.2.1"]))
        .with_priority(1)
        .mount(&server)
        .await;
    basic_challenge(&server, "team/app", 2).await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);
    repo.docker_login("user", password);

    let out = run(&repo, &["-vvv"], 0).await;
    assert_eq!(out.updates()[0]["to"], "1.2.1", "{out}");
    assert_eq!(*out.requests(), requests(1, 0, 0, 0));
    assert_eq!(
        received(&server).await.len(),
        2,
        "anonymous try + Basic try"
    );
    for secret in [password, auth.as_str()] {
        assert!(!out.all_output().contains(secret), "secret printed:\n{out}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn not_found_hints_at_the_image_name() {
    let server = MockServer::start().await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);

    let out = run(&repo, &[], 1).await;
    let err = out.error_at("registry.test/team/app");
    let message = err["message"].as_str().unwrap();
    assert!(
        message.contains("repository or tag not found (HTTP 404)"),
        "{message}"
    );
    assert!(
        message.ends_with("; 1 reference(s) not checked"),
        "{message}"
    );
    assert!(
        err["hint"]
            .as_str()
            .unwrap()
            .contains("check the image name"),
        "{out}"
    );
    assert_eq!(*out.counts(), counts(1, 1, 1, 0, 0, 1), "{out}");
    assert_eq!(*out.requests(), requests(1, 0, 0, 0));
    assert_eq!(received(&server).await.len(), 1, "404 is not retried");
}

// -------------------------------------------------------------------------------------------
// 9., 10. bad tag lists
// -------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn invalid_tag_names_are_ignored_and_reported() {
    let server = MockServer::start().await;
    let long = "9".repeat(200);
    tags(
        &server,
        "team/app",
        &["-bad", "1.2.0", "has space", &long, "1.5.0", "2.0.0/x"],
    )
    .await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);

    let out = run(&repo, &[], 1).await;
    assert_eq!(out.updates().len(), 1, "{out}");
    assert_eq!(out.updates()[0]["to"], "1.5.0", "valid tags still count");
    let err = out.error_at("registry.test/team/app");
    assert_eq!(
        err["message"],
        "the registry listed 4 invalid tag name(s), ignored (first: \"-bad\")"
    );
    assert!(err["message"]
        .as_str()
        .unwrap()
        .contains("invalid tag name"));
    assert!(
        !out.stdout.contains(&long),
        "the long tag is not echoed whole"
    );
    assert_eq!(*out.counts(), counts(1, 1, 1, 1, 0, 0), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_tag_list_by_content_length_is_refused() {
    let server = MockServer::start().await;
    let body = huge_tag_list(TAG_LIST_LIMIT + 1024 * 1024);
    Mock::given(method("GET"))
        .and(path(tags_path("team/app")))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "application/json"))
        .mount(&server)
        .await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);

    let out = run(&repo, &[], 1).await;

    assert_refused_as_too_large(&out);
    assert_eq!(out.updates().len(), 0, "{out}");
    assert_eq!(*out.requests(), requests(1, 0, 0, 0));
    assert_eq!(
        received(&server).await.len(),
        1,
        "a refused size is not retried"
    );
    assert!(out.elapsed < Duration::from_secs(10), "{out}");
}

/// The run failed (exit 1) on the tag list's size, with the error naming the cap.
/// For runs expecting exit code 1.
fn assert_refused_as_too_large(out: &Outcome) {
    let message = out.error_at("registry.test/team/app")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains(&format!(
            "response larger than {TAG_LIST_LIMIT} bytes, refused"
        )),
        "{message}"
    );
}

/// The cap applies to the declared `Content-Length` before any of the body is read: here
/// the server declares 33 MiB, sends a small valid page and hangs up. Reading the body
/// instead would end in a truncated-body transport error (and retries), not a refusal.
#[tokio::test(flavor = "multi_thread")]
async fn declared_content_length_above_cap_is_refused_before_reading() {
    let server = RawServer::start(Reply::Declared {
        declared: TAG_LIST_LIMIT + 1,
        body: br#"{"name":"team/app","tags":["1.3.0"]}"#.to_vec(),
    });
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);

    let out = run(&repo, &[], 1).await;

    assert_refused_as_too_large(&out);
    assert_eq!(*out.requests(), requests(1, 0, 0, 0));
    assert_eq!(server.hits.load(Ordering::SeqCst), 1, "not retried");
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_tag_list_streamed_without_length_is_refused() {
    let server = RawServer::start(Reply::Chunked(Arc::new(huge_tag_list(
        TAG_LIST_LIMIT + 2 * 1024 * 1024,
    ))));
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);

    let out = run(&repo, &[], 1).await;

    assert_refused_as_too_large(&out);
    assert_eq!(out.updates().len(), 0, "{out}");
    assert_eq!(*out.requests(), requests(1, 0, 0, 0));
    assert_eq!(server.hits.load(Ordering::SeqCst), 1);
    assert!(out.elapsed < Duration::from_secs(10), "{out}");
}

// -------------------------------------------------------------------------------------------
// 12. --exit-code
// -------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn exit_code_flag_gives_3_when_an_update_is_pending() {
    let server = MockServer::start().await;
    tags(&server, "team/app", &["1.2.0", "1.3.0"]).await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);

    let out = run(&repo, &["--exit-code"], 3).await;
    assert_eq!(out.updates()[0]["to"], "1.3.0");
    assert_eq!(out.errors().len(), 0, "{out}");
    assert_eq!(*out.counts(), counts(1, 1, 1, 1, 0, 0), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn exit_code_flag_gives_0_when_up_to_date() {
    let server = MockServer::start().await;
    tags(&server, "team/app", &["1.0.0", "1.2.0", "1.3.0-rc.1"]).await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("app", &[("registry.test/team/app", "1.2.0")]);

    let out = run(&repo, &["--exit-code"], 0).await;
    assert_eq!(out.updates().len(), 0, "{out}");
    assert_eq!(*out.counts(), counts(1, 1, 1, 0, 1, 0), "{out}");
    assert_eq!(*out.requests(), requests(1, 0, 0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn exit_code_flag_errors_win_over_pending() {
    let server = MockServer::start().await;
    tags(&server, "team/other", &["0.1.0", "0.2.0"]).await;
    let repo = Repo::new(&server.uri());
    repo.kustomization("missing", &[("registry.test/team/app", "1.2.0")])
        .kustomization("ok", &[("registry.test/team/other", "0.1.0")]);

    let out = run(&repo, &["--exit-code"], 1).await;
    assert_eq!(out.updates().len(), 1, "{out}");
    out.error_at("registry.test/team/app");
}

// -------------------------------------------------------------------------------------------
// 13. digest-pinned references
// -------------------------------------------------------------------------------------------

fn pinned_repo(server: &MockServer) -> (Repo, String) {
    let old = digest_of(0x11);
    let repo = Repo::new(&server.uri());
    repo.kustomization(
        "app",
        &[("registry.test/team/app", format!("1.2.0@{old}").as_str())],
    );
    (repo, old)
}

#[tokio::test(flavor = "multi_thread")]
async fn digest_pinned_reference_gets_the_new_digest_by_head() {
    let server = MockServer::start().await;
    let new = digest_of(0xab);
    tags(&server, "team/app", &["1.2.0", "2.0.0"]).await;
    Mock::given(method("HEAD"))
        .and(path("/v2/team/app/manifests/2.0.0"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("Docker-Content-Digest", new.as_str())
                .insert_header("Content-Type", OCI_INDEX),
        )
        .mount(&server)
        .await;
    let (repo, old) = pinned_repo(&server);

    let out = run(&repo, &[], 0).await;
    assert_eq!(out.updates()[0]["from"], format!("1.2.0@{old}"));
    assert_eq!(out.updates()[0]["to"], format!("2.0.0@{new}"));
    assert_eq!(*out.requests(), requests(1, 0, 1, 0));
    let reqs = received(&server).await;
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    let head: Vec<&Request> = reqs
        .iter()
        .filter(|r| r.url.path() == "/v2/team/app/manifests/2.0.0")
        .collect();
    assert_eq!(head.len(), 1);
    assert_eq!(
        head[0].method.as_str(),
        "HEAD",
        "a HEAD is not counted as a pull"
    );
    let accept = header_of(head[0], "accept").unwrap_or_default();
    for media_type in [
        OCI_INDEX,
        OCI_MANIFEST,
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    ] {
        assert!(
            accept.contains(media_type),
            "Accept {accept:?} lacks {media_type}"
        );
    }
}

/// Without `Docker-Content-Digest` the manifest is fetched and hashed.
#[tokio::test(flavor = "multi_thread")]
async fn digest_falls_back_to_hashing_the_manifest() {
    let server = MockServer::start().await;
    tags(&server, "team/app", &["1.2.0", "2.0.0"]).await;
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [],
    })
    .to_string()
    .into_bytes();
    let expected = format!("sha256:{:x}", Sha256::digest(&manifest));
    Mock::given(method("HEAD"))
        .and(path("/v2/team/app/manifests/2.0.0"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v2/team/app/manifests/2.0.0"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(manifest, OCI_INDEX))
        .mount(&server)
        .await;
    let (repo, _) = pinned_repo(&server);

    let out = run(&repo, &[], 0).await;
    assert_eq!(out.updates()[0]["to"], format!("2.0.0@{expected}"));
    assert_eq!(*out.requests(), requests(1, 0, 2, 0));
}

/// A malformed `Docker-Content-Digest` must never be proposed (or written) as the digest.
#[tokio::test(flavor = "multi_thread")]
async fn malformed_digest_header_is_not_proposed() {
    let server = MockServer::start().await;
    tags(&server, "team/app", &["1.2.0", "2.0.0"]).await;
    Mock::given(method("HEAD"))
        .and(path("/v2/team/app/manifests/2.0.0"))
        .respond_with(
            ResponseTemplate::new(200).insert_header("Docker-Content-Digest", "not-a-digest"),
        )
        .mount(&server)
        .await;
    let (repo, _) = pinned_repo(&server);

    let out = run(&repo, &[], None).await;

    assert!(
        !out.stdout.contains("not-a-digest"),
        "the registry's malformed digest is proposed:\n{out}"
    );
    for u in out.updates() {
        let to = u["to"].as_str().unwrap();
        let digest = to.strip_prefix("2.0.0@sha256:").unwrap_or_default();
        assert!(
            digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
            "bad proposed value {to:?}"
        );
    }
    if out.updates().is_empty() {
        out.assert_code(1, "no update means an error");
        out.error_at("registry.test/team/app");
    } else {
        out.assert_code(0, "a well-formed digest was proposed");
    }
}
