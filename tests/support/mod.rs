//! Shared helpers for imagebump's integration tests.
//!
//! * [`Registry`]: a throw-away `docker-registry` (CNCF distribution 2.8) on a free loopback
//!   port, plain HTTP, HTTPS, or HTTPS + htpasswd basic auth, with helpers that push tiny OCI
//!   images straight through the distribution API.
//! * [`GitServer`]: a bare copy of a local repository served over `git://` (git daemon) or
//!   over smart HTTP (`git http-backend` behind a small in-process HTTP/1.1 server that
//!   requires a token as the HTTP Basic password and logs what it saw).
//!   Pushes are accepted over both; helpers read the served repository (branches, files,
//!   log), commit or revert on it directly (someone else pushing), and install hooks that
//!   decline pushes to some refs or all of them.
//! * [`require_tool`], [`git_command`], [`git`], [`try_git`], [`make_worktree`].
//!
//! Everything is isolated per instance (own temp dir, own port), so tests can run in
//! parallel processes under cargo-nextest. Every git call made here ignores the user's and
//! the system's git configuration. Servers stop when their value is dropped, so keep them in
//! a local of the test (a value in a `static` is never dropped and its child would outlive
//! the test process). The helpers may be called from `#[tokio::test]` functions too.
//!
//! Facts about Debian's docker-registry (distribution 2.8.2) worth knowing when writing tests:
//! `tags/list` is NOT sorted (filesystem order) and ignores `?n=` / `last=` (no `Link`
//! header); `_catalog` does honour `?n=` and sends `Link: <...>; rel="next"`. htpasswd auth
//! also works over plain HTTP. rustls refuses a self-signed certificate that is its own CA
//! (`CaUsedAsEndEntity`), hence a CA plus a leaf certificate in the TLS modes. A manifest GET of
//! an OCI index (by tag or digest) whose `Accept` lacks the OCI index type answers
//! 404 `MANIFEST_UNKNOWN` ("OCI index found, but accept header does not support OCI indexes"),
//! not 406. Manifests pushed by digest (see [`Registry::push_index`]) are not listed as tags.
#![allow(dead_code)]

#[allow(unused_imports)] // Each test binary uses some of the fakes.
pub use imagebump_forge::fake::{gitea, github, gitlab};

pub mod browser;
pub mod charts;
pub mod cli;

/// Reading what a wiremock server received.
pub mod mock {
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

    pub async fn received(server: &MockServer) -> Vec<Request> {
        server
            .received_requests()
            .await
            .expect("request recording is on")
    }

    /// How many requests `verb p` are among `reqs`.
    pub fn hits(reqs: &[Request], verb: &str, p: &str) -> usize {
        reqs.iter()
            .filter(|r| r.method.as_str() == verb && r.url.path() == p)
            .count()
    }

    pub fn header_of<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
        req.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// A responder that notes when it was called, then answers like `R`.
    pub struct Timed<R> {
        pub at: Arc<Mutex<Vec<Instant>>>,
        pub inner: R,
    }

    impl<R: Respond> Respond for Timed<R> {
        fn respond(&self, request: &Request) -> ResponseTemplate {
            self.at.lock().expect("clock").push(Instant::now());
            self.inner.respond(request)
        }
    }

    /// The first `GET url_path` answers 429 with `Retry-After: 1`, its time noted in `at`.
    pub async fn rate_limited_once(
        server: &MockServer,
        url_path: &str,
        at: &Arc<Mutex<Vec<Instant>>>,
    ) {
        Mock::given(method("GET"))
            .and(path(url_path))
            .respond_with(Timed {
                at: at.clone(),
                inner: ResponseTemplate::new(429).insert_header("Retry-After", "1"),
            })
            .up_to_n_times(1)
            .with_priority(1)
            .mount(server)
            .await;
    }
}

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// How long a server gets to come up.
const START_DEADLINE: Duration = Duration::from_secs(10);
/// How many times a server is started on a fresh port when its port was taken meanwhile.
const PORT_ATTEMPTS: usize = 8;

pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
pub const OCI_LAYER_TAR: &str = "application/vnd.oci.image.layer.v1.tar";

// ---------------------------------------------------------------------------------------------
// tools
// ---------------------------------------------------------------------------------------------

/// Panics (never skips) when `name` is not an executable on `PATH`, naming the install command.
pub fn require_tool(name: &str, debian_package: &str) {
    if find_in_path(name).is_none() {
        panic!(
            "{name} not found: run `apt-get install -y {debian_package}` \
             (needed by imagebump's integration tests)"
        );
    }
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            fs::metadata(p)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// Runs `cmd`, panicking with its stderr when it cannot start or exits non-zero.
fn run_checked(cmd: &mut Command, what: &str) -> Output {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    if !out.status.success() {
        panic!(
            "{what}: {cmd:?} failed with {}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

/// A free loopback port (bind 127.0.0.1:0, read it, release it). The caller must cope with
/// the port being taken again before it binds it (all servers here retry on a fresh port).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("cannot bind 127.0.0.1:0 to find a free port")
}

/// A value unique to this process and call, for telling our server from someone else's.
fn unique_token() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let seed = format!(
        "{}-{}-{}-{:?}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed),
        thread::current().id()
    );
    hex(&Sha256::digest(seed.as_bytes()))[..24].to_string()
}

fn tail_of_file(path: &Path, max_lines: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(max_lines);
    lines[start..].join("\n")
}

/// Starts `cmd` as the leader of a new process group, so that [`kill_group`] stops it with
/// every process it started (`git daemon` runs `git-daemon` as a child; killing only the
/// wrapper would leave the server running).
fn spawn_group(cmd: &mut Command, what: &str) -> Child {
    use std::os::unix::process::CommandExt as _;
    cmd.process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn {what}: {e}"))
}

/// Kills the process group led by `child` (see [`spawn_group`]) and reaps the leader. The
/// group is killed before the leader is reaped, so its id cannot have been reused.
fn kill_group(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

/// For tests that call library code in this process (credential discovery, HTTP clients,
/// git): the process keeps only the variables [`cli::INHERITED`] names, and `HOME` and
/// `DOCKER_CONFIG` point at empty directories, so the developer's Docker login, tokens,
/// proxies and `RUST_LOG` cannot change what the library does. Once per process, before the
/// test starts its own threads' work (nextest runs each test in its own process).
pub fn isolate_process_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("imagebump-isolated");
        let (home, docker) = (base.join("home"), base.join("docker"));
        fs::create_dir_all(&home).expect("create the isolated HOME");
        fs::create_dir_all(&docker).expect("create the isolated DOCKER_CONFIG");
        for (name, _) in std::env::vars_os() {
            if !cli::INHERITED.iter().any(|keep| name == *keep) {
                std::env::remove_var(&name);
            }
        }
        std::env::set_var("HOME", home);
        std::env::set_var("DOCKER_CONFIG", docker);
    });
}

/// A fresh directory holding `files` (relative path, content).
pub fn tree<P: AsRef<Path>, T: AsRef<[u8]>>(files: &[(P, T)]) -> tempfile::TempDir {
    let dir = temp_dir("imagebump-tree-");
    for (rel, content) in files {
        let path = dir.path().join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("create tree dirs");
        }
        fs::write(&path, content).expect("write tree file");
    }
    dir
}

/// After a run over a copy of a fixture: `tree` holds exactly the files of `expected` (at
/// their paths), and every other file is as it was `before`.
pub fn assert_tree(
    tree: &Path,
    before: &std::collections::BTreeMap<String, Vec<u8>>,
    expected: &Path,
) {
    let after = files(tree);
    let expected = files(expected);
    for (rel, want) in &expected {
        let got = after
            .get(rel)
            .unwrap_or_else(|| panic!("{rel} was not written"));
        assert_eq!(
            String::from_utf8_lossy(got),
            String::from_utf8_lossy(want),
            "{rel}"
        );
    }
    for (rel, bytes) in &after {
        if !expected.contains_key(rel) {
            assert_eq!(Some(bytes), before.get(rel), "{rel} changed or appeared");
        }
    }
}

/// The newest-build world of the request-count tests: kustomizations (`apps/kN`) naming
/// `HOST/team/build` and values files (`apps/hN`) naming `HOST/team/other`, at several
/// current `build-N` tags each, so that one repository gets several evaluations.
pub fn newest_build_apps(host: &str) -> tempfile::TempDir {
    let mut files = Vec::new();
    for (n, current) in ["build-1", "build-2", "build-5", "build-1"]
        .iter()
        .enumerate()
    {
        files.push((
            format!("apps/k{n}/kustomization.yaml"),
            format!("images:\n- name: {host}/team/build\n  newTag: {current}\n"),
        ));
        files.push((
            format!("apps/h{n}/values.yaml"),
            format!("image:\n  repository: {host}/team/other\n  tag: {current}\n")
                .replace("build-5", "build-3"),
        ));
    }
    tree(&files)
}

/// A further `imagebump run DIR --config CFG` finds nothing left to update.
pub fn assert_nothing_left(dir: &str, cfg: &str) {
    let again = cli::imagebump()
        .args(["run", dir, "--config", cfg, "--output", "json"])
        .run();
    let report: serde_json::Value = serde_json::from_str(&again.stdout).expect("a JSON report");
    assert_eq!(report["counts"]["updates"], 0, "{}", again.stdout);
}

/// Every file under `dir` (relative `/`-separated path → bytes), for "nothing else changed"
/// assertions.
pub fn files(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).expect("read a test tree") {
            let path = entry.expect("read a test tree entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).expect("below the tree");
                let rel = rel.to_string_lossy().replace('\\', "/");
                out.insert(rel, fs::read(&path).expect("read a test file"));
            }
        }
    }
    out
}

/// [`files`] as text.
pub fn texts(dir: &Path) -> std::collections::BTreeMap<String, String> {
    files(dir)
        .into_iter()
        .map(|(rel, bytes)| (rel, String::from_utf8(bytes).expect("a UTF-8 test file")))
        .collect()
}

/// A fresh copy of the tree at `dir` (a fixture a test may change).
pub fn copy_tree(dir: &Path) -> tempfile::TempDir {
    let files: Vec<(String, Vec<u8>)> = files(dir).into_iter().collect();
    tree(&files)
}

/// The "not ready" failure of a server start, once `deadline` has passed.
fn start_timed_out(deadline: Instant, last_failure: &str) -> Option<(bool, String)> {
    (Instant::now() > deadline).then(|| {
        (
            false,
            format!("not ready within {START_DEADLINE:?}: {last_failure}"),
        )
    })
}

fn temp_dir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .unwrap_or_else(|e| panic!("cannot create a temp dir: {e}"))
}

/// Runs `f` on a fresh OS thread and returns its result (re-raising its panic). reqwest's
/// blocking client panics when used or dropped inside a tokio runtime, so every use of it here
/// goes through this; the helpers therefore also work from `#[tokio::test]` functions.
fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    thread::scope(|s| match s.spawn(f).join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

// ---------------------------------------------------------------------------------------------
// small encoders
// ---------------------------------------------------------------------------------------------

pub fn sha256_digest(data: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(data)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in text.trim().bytes() {
        if c == b'=' {
            break;
        }
        let v = B64.iter().position(|&x| x == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let pair = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(pair, 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn yaml_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

// ---------------------------------------------------------------------------------------------
// registry
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
pub enum RegistryMode {
    /// Plain HTTP, no auth.
    Plain,
    /// HTTPS with a test CA (see [`Registry::ca_file`]), no auth.
    Tls,
    /// HTTPS plus htpasswd (bcrypt) HTTP Basic auth with this single user.
    TlsBasicAuth { user: String, password: String },
    /// Plain HTTP plus htpasswd Basic auth (distribution 2.8 does not insist on TLS for it);
    /// for testing what a client does with credentials for an `http://` registry.
    PlainBasicAuth { user: String, password: String },
    /// HTTPS whose 401s challenge with `Bearer realm="<realm>"`: for testing where a client
    /// sends credentials when a registry points it at a token service.
    TlsTokenAuth { realm: String },
}

/// A `docker-registry serve` child on a free loopback port. Killed on drop; its storage lives
/// in its own temp dir.
pub struct Registry {
    port: u16,
    tls: bool,
    auth: Option<(String, String)>,
    ca_file: Option<PathBuf>,
    client: Option<reqwest::blocking::Client>,
    child: Child,
    dir: tempfile::TempDir,
}

/// A descriptor of an uploaded blob.
#[derive(Clone, Debug)]
struct Blob {
    media_type: &'static str,
    digest: String,
    size: usize,
}

/// `os/architecture[/variant]` of a pushed test image.
#[derive(Clone, Debug)]
struct TestPlatform {
    os: String,
    architecture: String,
    variant: Option<String>,
}

impl TestPlatform {
    /// `linux/amd64`, `linux/arm/v7`; panics on anything else.
    fn parse(platform: &str) -> TestPlatform {
        let parts: Vec<&str> = platform.split('/').collect();
        match parts.as_slice() {
            [os, arch] | [os, arch, _] if !os.is_empty() && !arch.is_empty() => TestPlatform {
                os: os.to_string(),
                architecture: arch.to_string(),
                variant: parts.get(2).map(|v| v.to_string()),
            },
            _ => panic!("platform {platform:?}: expected os/architecture[/variant]"),
        }
    }
}

impl Registry {
    /// Starts a registry; panics with a clear message (and the tail of its log) if it cannot.
    pub fn start(mode: RegistryMode) -> Registry {
        require_tool("docker-registry", "docker-registry");
        let dir = temp_dir("imagebump-registry-");
        let root = dir.path().to_path_buf();
        let (tls, auth) = match &mode {
            RegistryMode::Plain => (false, None),
            RegistryMode::Tls | RegistryMode::TlsTokenAuth { .. } => (true, None),
            RegistryMode::TlsBasicAuth { user, password } => {
                (true, Some((user.clone(), password.clone())))
            }
            RegistryMode::PlainBasicAuth { user, password } => {
                (false, Some((user.clone(), password.clone())))
            }
        };

        let mut tls_yaml = String::new();
        let mut ca_file = None;
        if tls {
            let (ca, cert, key) = make_tls_files(&root);
            tls_yaml = format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                yaml_quote(&cert.to_string_lossy()),
                yaml_quote(&key.to_string_lossy())
            );
            ca_file = Some(ca);
        }
        let mut auth_yaml = String::new();
        if let Some((user, password)) = &auth {
            require_tool("htpasswd", "apache2-utils");
            let out = run_checked(
                Command::new("htpasswd").args(["-Bbn", user, password]),
                "creating the registry's htpasswd file",
            );
            let htpasswd = root.join("htpasswd");
            fs::write(&htpasswd, &out.stdout).expect("write htpasswd");
            auth_yaml = format!(
                "auth:\n  htpasswd:\n    realm: imagebump\n    path: {}\n",
                yaml_quote(&htpasswd.to_string_lossy())
            );
        }

        if let (RegistryMode::TlsTokenAuth { realm }, Some(ca)) = (&mode, &ca_file) {
            auth_yaml = format!(
                "auth:\n  token:\n    realm: {}\n    service: imagebump-test\n    \
                 issuer: imagebump-test\n    rootcertbundle: {}\n",
                yaml_quote(realm),
                yaml_quote(&ca.to_string_lossy())
            );
        }

        let client = off_runtime(|| {
            // The test's own registry is on loopback: a proxy in the developer's shell must
            // not stand between.
            let mut b = reqwest::blocking::Client::builder()
                .no_proxy()
                .connect_timeout(Duration::from_secs(2))
                .timeout(Duration::from_secs(30))
                .pool_max_idle_per_host(16);
            if let Some(ca) = &ca_file {
                let pem = fs::read(ca).expect("read CA file");
                let cert = reqwest::Certificate::from_pem(&pem).expect("parse CA PEM");
                b = b.add_root_certificate(cert);
            }
            b.build().expect("build reqwest blocking client")
        });

        let config_path = root.join("config.yml");
        let log_path = root.join("registry.log");
        let scheme = if tls { "https" } else { "http" };
        let mut last_failure = String::new();
        for _attempt in 0..PORT_ATTEMPTS {
            let port = free_port();
            let marker = unique_token();
            let config = format!(
                "version: 0.1\n\
                 log:\n  level: error\n  formatter: text\n  accesslog:\n    disabled: true\n\
                 storage:\n  filesystem:\n    rootdirectory: {data}\n  delete:\n    enabled: true\n  \
                 maintenance:\n    uploadpurging:\n      enabled: false\n\
                 http:\n  addr: 127.0.0.1:{port}\n  secret: {marker}\n  \
                 headers:\n    X-Imagebump-Instance: [{marker}]\n{tls_yaml}\
                 {auth_yaml}",
                data = yaml_quote(&root.join("data").to_string_lossy()),
            );
            fs::write(&config_path, config).expect("write registry config.yml");
            let log = fs::File::create(&log_path).expect("create registry log");
            let mut cmd = Command::new("docker-registry");
            cmd.arg("serve")
                .arg(&config_path)
                .current_dir(&root)
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("dup log fd"))
                .stderr(log);
            for (k, _) in std::env::vars_os() {
                if k.to_string_lossy().starts_with("REGISTRY_") {
                    cmd.env_remove(k);
                }
            }
            let mut child = spawn_group(&mut cmd, "docker-registry");

            let url = format!("{scheme}://127.0.0.1:{port}/v2/");
            let deadline = Instant::now() + START_DEADLINE;
            let outcome = loop {
                if let Ok(Some(status)) = child.try_wait() {
                    break Err((true, format!("docker-registry exited with {status}")));
                }
                let probe = off_runtime(|| {
                    client
                        .get(&url)
                        .timeout(Duration::from_secs(2))
                        .send()
                        .map(|r| {
                            let mine = r
                                .headers()
                                .get("X-Imagebump-Instance")
                                .is_some_and(|v| v.as_bytes() == marker.as_bytes());
                            (r.status().as_u16(), mine)
                        })
                        .map_err(|e| format!("{e:?}"))
                });
                match probe {
                    Ok((200 | 401, true)) => break Ok(()),
                    Ok((_, false)) => {
                        break Err((true, format!("port {port} is served by another process")))
                    }
                    Ok((status, true)) => {
                        break Err((false, format!("GET {url} answered {status}")))
                    }
                    Err(e) => last_failure = format!("GET {url}: {e}"),
                }
                if let Some(failure) = start_timed_out(deadline, &last_failure) {
                    break Err(failure);
                }
                thread::sleep(Duration::from_millis(15));
            };
            match outcome {
                Ok(()) => {
                    return Registry {
                        port,
                        tls,
                        auth,
                        ca_file,
                        client: Some(client),
                        child,
                        dir,
                    };
                }
                Err((retry, why)) => {
                    kill_group(&mut child);
                    let log_tail = tail_of_file(&log_path, 30);
                    let port_clash = log_tail.contains("address already in use")
                        || why.contains("another process");
                    last_failure = format!("{why}\nregistry log tail:\n{log_tail}");
                    if retry && port_clash {
                        continue;
                    }
                    break;
                }
            }
        }
        off_runtime(move || drop(client));
        panic!("docker-registry ({mode:?}) did not start: {last_failure}");
    }

    /// `127.0.0.1:PORT`
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT` or `https://127.0.0.1:PORT`
    pub fn base_url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// PEM of the CA that signed the registry's certificate (TLS modes only).
    pub fn ca_file(&self) -> Option<PathBuf> {
        self.ca_file.clone()
    }

    /// `(user, password)` in the basic-auth mode.
    pub fn credentials(&self) -> Option<(String, String)> {
        self.auth.clone()
    }

    /// A docker `config.json` body with an `auths` entry for this registry (basic-auth mode),
    /// or `{"auths":{}}`.
    pub fn docker_config_json(&self) -> String {
        let mut auths = serde_json::Map::new();
        if let Some((u, p)) = &self.auth {
            auths.insert(
                self.host(),
                serde_json::json!({ "auth": base64_encode(format!("{u}:{p}").as_bytes()) }),
            );
        }
        serde_json::json!({ "auths": auths }).to_string()
    }

    /// The registry's temp dir (config.yml, registry.log, data/, TLS files).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The registry's own log (level error).
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    /// Pushes a tiny image (one layer, one config, an OCI manifest) under each tag; all the
    /// tags share one manifest. Returns nothing; see [`Registry::manifest_digest`].
    pub fn push_tags(&self, repo: &str, tags: &[&str]) {
        self.push_tags_digest(repo, tags);
    }

    /// Pushes the tags of a listing (`repository tag tag…` a line, as a fixture's
    /// `registry.txt` holds them).
    pub fn push_listing(&self, listing: &Path) {
        let text = std::fs::read_to_string(listing).expect("read the registry listing");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let mut words = line.split_whitespace();
            let repo = words.next().expect("a repository");
            let tags: Vec<&str> = words.collect();
            self.push_tags(repo, &tags);
        }
    }

    /// As [`Registry::push_tags`], returning the manifest digest the tags point to.
    pub fn push_tags_digest(&self, repo: &str, tags: &[&str]) -> String {
        self.push_image(repo, tags, "2024-01-01T00:00:00Z")
    }

    /// Pushes an image under `tag` whose own config blob says `created` (RFC 3339),
    /// os linux, architecture amd64.
    pub fn push_tag_created(&self, repo: &str, tag: &str, created: &str) {
        self.push_image(repo, &[tag], created);
    }

    /// As [`Registry::push_tag_created`], returning the manifest digest.
    pub fn push_tag_created_digest(&self, repo: &str, tag: &str, created: &str) -> String {
        self.push_image(repo, &[tag], created)
    }

    fn push_image(&self, repo: &str, tags: &[&str], created: &str) -> String {
        self.push_platform_image(repo, tags, &TestPlatform::parse("linux/amd64"), created)
            .digest
    }

    /// As [`Registry::push_tag_created`] but for `platform` (`linux/arm64`, `linux/arm/v7`),
    /// under every tag in `tags`; returns the manifest digest.
    pub fn push_image_for(
        &self,
        repo: &str,
        tags: &[&str],
        platform: &str,
        created: &str,
    ) -> String {
        self.push_platform_image(repo, tags, &TestPlatform::parse(platform), created)
            .digest
    }

    /// Pushes one image per `(platform, created)` (by digest, untagged), then an OCI index
    /// listing them with their `platform` fields, in that order, under `tag`. Returns the
    /// index digest.
    pub fn push_index(&self, repo: &str, tag: &str, platforms: &[(&str, &str)]) -> String {
        self.push_index_entries(repo, tag, platforms, false)
    }

    /// As [`Registry::push_index`], with a BuildKit attestation entry after the platform
    /// images (`unknown/unknown`, annotated `vnd.docker.reference.type:
    /// attestation-manifest`, pointing at the first image).
    pub fn push_index_attested(&self, repo: &str, tag: &str, platforms: &[(&str, &str)]) -> String {
        self.push_index_entries(repo, tag, platforms, true)
    }

    fn push_index_entries(
        &self,
        repo: &str,
        tag: &str,
        platforms: &[(&str, &str)],
        attested: bool,
    ) -> String {
        let children: Vec<(TestPlatform, Blob)> = platforms
            .iter()
            .map(|(platform, created)| {
                let platform = TestPlatform::parse(platform);
                let blob = self.push_platform_image(repo, &[], &platform, created);
                (platform, blob)
            })
            .collect();
        let manifests: Vec<serde_json::Value> = children
            .iter()
            .map(|(platform, blob)| {
                let mut p = serde_json::json!({
                    "architecture": platform.architecture,
                    "os": platform.os,
                });
                if let Some(v) = &platform.variant {
                    p["variant"] = serde_json::json!(v);
                }
                serde_json::json!({
                    "mediaType": blob.media_type,
                    "digest": blob.digest,
                    "size": blob.size,
                    "platform": p,
                })
            })
            .collect();
        let mut manifests = manifests;
        if attested {
            let unknown = TestPlatform::parse("unknown/unknown");
            let att = self.push_platform_image(repo, &[], &unknown, "1970-01-01T00:00:00Z");
            let first = children.first().map(|(_, b)| b.digest.clone());
            manifests.push(serde_json::json!({
                "mediaType": att.media_type,
                "digest": att.digest,
                "size": att.size,
                "platform": {"architecture": "unknown", "os": "unknown"},
                "annotations": {
                    "vnd.docker.reference.type": "attestation-manifest",
                    "vnd.docker.reference.digest": first,
                },
            }));
        }
        let index = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_INDEX,
            "manifests": manifests,
        })
        .to_string()
        .into_bytes();
        self.put_manifest(repo, tag, OCI_INDEX, &index);
        sha256_digest(&index)
    }

    /// Pushes an image whose config says `platform` and `created` under each of `tags` (by
    /// its digest when `tags` is empty); returns the manifest's descriptor. For linux/amd64
    /// the config is byte-identical to the one `push_image` always wrote.
    fn push_platform_image(
        &self,
        repo: &str,
        tags: &[&str],
        platform: &TestPlatform,
        created: &str,
    ) -> Blob {
        let layer = tiny_layer_tar();
        let mut config = serde_json::json!({
            "created": created,
            "architecture": platform.architecture,
            "os": platform.os,
            "config": { "Labels": { "org.opencontainers.image.source": "imagebump-tests" } },
            "rootfs": { "type": "layers", "diff_ids": [sha256_digest(&layer)] },
            "history": [ { "created": created, "created_by": "imagebump test support" } ]
        });
        if let Some(v) = &platform.variant {
            config["variant"] = serde_json::json!(v);
        }
        let config = config.to_string().into_bytes();
        off_runtime(|| {
            let layer = self.ensure_blob(repo, &layer, OCI_LAYER_TAR);
            let config = self.ensure_blob(repo, &config, OCI_CONFIG);
            let manifest = serde_json::json!({
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "config": { "mediaType": config.media_type, "digest": config.digest, "size": config.size },
                "layers": [ { "mediaType": layer.media_type, "digest": layer.digest, "size": layer.size } ]
            })
            .to_string()
            .into_bytes();
            let digest = sha256_digest(&manifest);
            if tags.is_empty() {
                self.put_manifest(repo, &digest, OCI_MANIFEST, &manifest);
            }
            // A handful of manifest PUTs in flight at once: the registry's cost per PUT is
            // mostly fsync-free file writes, so a little parallelism helps with many tags.
            let workers = tags.len().clamp(1, 4);
            let next = std::sync::atomic::AtomicUsize::new(0);
            thread::scope(|s| {
                let handles: Vec<_> = (0..workers)
                    .map(|_| {
                        s.spawn(|| loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(tag) = tags.get(i) else { break };
                            self.put_manifest(repo, tag, OCI_MANIFEST, &manifest);
                        })
                    })
                    .collect();
                for h in handles {
                    if let Err(panic) = h.join() {
                        std::panic::resume_unwind(panic);
                    }
                }
            });
            Blob {
                media_type: OCI_MANIFEST,
                digest,
                size: manifest.len(),
            }
        })
    }

    /// PUTs raw manifest bytes under `reference` (a tag or digest) with `media_type`.
    pub fn put_manifest(&self, repo: &str, reference: &str, media_type: &str, body: &[u8]) {
        let url = format!("{}/v2/{repo}/manifests/{reference}", self.base_url());
        let body = body.to_vec();
        let resp = off_runtime(|| {
            self.req(reqwest::Method::PUT, &url)
                .header("Content-Type", media_type)
                .body(body)
                .send()
        })
        .unwrap_or_else(|e| panic!("PUT {url}: {e:?}"));
        let status = resp.status();
        if status.as_u16() != 201 {
            let text = resp.text().unwrap_or_default();
            panic!("PUT {url} answered {status}: {text}");
        }
    }

    /// Uploads `data` as a blob of `repo` (unless it is there already); returns its
    /// digest and size.
    pub fn push_blob(&self, repo: &str, data: &[u8]) -> (String, usize) {
        let blob = off_runtime(|| self.ensure_blob(repo, data, "application/octet-stream"));
        (blob.digest, blob.size)
    }

    /// Uploads a blob unless the repository already has it; returns its descriptor.
    fn ensure_blob(&self, repo: &str, data: &[u8], media_type: &'static str) -> Blob {
        let digest = sha256_digest(data);
        let blob = Blob {
            media_type,
            digest: digest.clone(),
            size: data.len(),
        };
        let base = self.base_url();
        let head_url = format!("{base}/v2/{repo}/blobs/{digest}");
        let head = self
            .req(reqwest::Method::HEAD, &head_url)
            .send()
            .unwrap_or_else(|e| panic!("HEAD {head_url}: {e:?}"));
        if head.status().as_u16() == 200 {
            return blob;
        }
        let post_url = format!("{base}/v2/{repo}/blobs/uploads/");
        let post = self
            .req(reqwest::Method::POST, &post_url)
            .header("Content-Length", "0")
            .send()
            .unwrap_or_else(|e| panic!("POST {post_url}: {e:?}"));
        if post.status().as_u16() != 202 {
            let status = post.status();
            panic!(
                "POST {post_url} answered {status}: {}",
                post.text().unwrap_or_default()
            );
        }
        let location = post
            .headers()
            .get("Location")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("POST {post_url}: no Location header"))
            .to_string();
        let mut put_url = if location.starts_with("http://") || location.starts_with("https://") {
            location
        } else {
            format!("{base}{location}")
        };
        put_url.push(if put_url.contains('?') { '&' } else { '?' });
        put_url.push_str("digest=");
        put_url.push_str(&digest.replace(':', "%3A"));
        let put = self
            .req(reqwest::Method::PUT, &put_url)
            .header("Content-Type", "application/octet-stream")
            .body(data.to_vec())
            .send()
            .unwrap_or_else(|e| panic!("PUT {put_url}: {e:?}"));
        if put.status().as_u16() != 201 {
            let status = put.status();
            panic!(
                "PUT {put_url} answered {status}: {}",
                put.text().unwrap_or_default()
            );
        }
        blob
    }

    /// All tags of `repo` (following `Link: <...>; rel="next"` pages if any), in the order the
    /// registry gives them. distribution 2.8 does NOT sort them (filesystem order) and ignores
    /// `?n=`/`last=` on tags/list, so sort before comparing. Empty when the repository does
    /// not exist.
    pub fn tags(&self, repo: &str) -> Vec<String> {
        off_runtime(|| {
            let mut tags = Vec::new();
            let mut url = format!("{}/v2/{repo}/tags/list", self.base_url());
            loop {
                let resp = self
                    .req(reqwest::Method::GET, &url)
                    .send()
                    .unwrap_or_else(|e| panic!("GET {url}: {e:?}"));
                let status = resp.status().as_u16();
                if status == 404 {
                    return tags;
                }
                if status != 200 {
                    panic!(
                        "GET {url} answered {status}: {}",
                        resp.text().unwrap_or_default()
                    );
                }
                let next = resp
                    .headers()
                    .get("Link")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|link| {
                        let start = link.find('<')? + 1;
                        let end = link.find('>')?;
                        link.contains("rel=\"next\"")
                            .then(|| link[start..end].to_string())
                    });
                let body: serde_json::Value = resp
                    .json()
                    .unwrap_or_else(|e| panic!("GET {url}: bad JSON: {e}"));
                if let Some(list) = body["tags"].as_array() {
                    tags.extend(list.iter().filter_map(|t| t.as_str().map(String::from)));
                }
                match next {
                    Some(n) if n.starts_with("http") => url = n,
                    Some(n) => url = format!("{}{n}", self.base_url()),
                    None => return tags,
                }
            }
        })
    }

    /// The digest (`Docker-Content-Digest`) of the manifest `reference` points to.
    pub fn manifest_digest(&self, repo: &str, reference: &str) -> String {
        let url = format!("{}/v2/{repo}/manifests/{reference}", self.base_url());
        off_runtime(|| {
            let resp = self
                .req(reqwest::Method::HEAD, &url)
                .header(
                    "Accept",
                    "application/vnd.oci.image.manifest.v1+json, \
                     application/vnd.oci.image.index.v1+json, \
                     application/vnd.docker.distribution.manifest.v2+json, \
                     application/vnd.docker.distribution.manifest.list.v2+json",
                )
                .send()
                .unwrap_or_else(|e| panic!("HEAD {url}: {e:?}"));
            if resp.status().as_u16() != 200 {
                panic!("HEAD {url} answered {}", resp.status());
            }
            resp.headers()
                .get("Docker-Content-Digest")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_else(|| panic!("HEAD {url}: no Docker-Content-Digest"))
                .to_string()
        })
    }

    /// A request with the registry's credentials (if any). Call inside `off_runtime`.
    fn req(&self, method: reqwest::Method, url: &str) -> reqwest::blocking::RequestBuilder {
        let client = self.client.as_ref().expect("registry client");
        let rb = client.request(method, url);
        match &self.auth {
            Some((u, p)) => rb.basic_auth(u, Some(p)),
            None => rb,
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        kill_group(&mut self.child);
        let client = self.client.take();
        off_runtime(move || drop(client));
    }
}

/// A test CA plus a leaf certificate for 127.0.0.1 / localhost signed by it (rustls refuses a
/// CA certificate used as the server's own certificate, so the leaf is a separate cert).
/// Returns (ca.pem, server.pem, server.key).
fn make_tls_files(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    require_tool("openssl", "openssl");
    let ca_key = dir.join("ca.key");
    let ca = dir.join("ca.pem");
    let key = dir.join("server.key");
    let csr = dir.join("server.csr");
    let cert = dir.join("server.pem");
    let ext = dir.join("server.ext");
    let what = "creating the registry's test certificates";
    run_checked(
        Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
            ])
            .args(["-nodes", "-days", "3650", "-subj", "/CN=imagebump test CA"])
            .args(["-addext", "basicConstraints=critical,CA:TRUE"])
            .args(["-addext", "keyUsage=critical,keyCertSign,cRLSign"])
            .arg("-keyout")
            .arg(&ca_key)
            .arg("-out")
            .arg(&ca),
        what,
    );
    run_checked(
        Command::new("openssl")
            .args([
                "req",
                "-new",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
            ])
            .args(["-nodes", "-subj", "/CN=127.0.0.1"])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&csr),
        what,
    );
    fs::write(
        &ext,
        "basicConstraints=critical,CA:FALSE\n\
         keyUsage=critical,digitalSignature,keyEncipherment\n\
         extendedKeyUsage=serverAuth\n\
         subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .expect("write server.ext");
    run_checked(
        Command::new("openssl")
            .args([
                "x509",
                "-req",
                "-days",
                "3650",
                "-sha256",
                "-set_serial",
                "2",
            ])
            .arg("-in")
            .arg(&csr)
            .arg("-CA")
            .arg(&ca)
            .arg("-CAkey")
            .arg(&ca_key)
            .arg("-extfile")
            .arg(&ext)
            .arg("-out")
            .arg(&cert),
        what,
    );
    (ca, cert, key)
}

/// An uncompressed tar archive holding one small file (a valid OCI layer).
fn tiny_layer_tar() -> Vec<u8> {
    let content = b"imagebump test layer\n";
    let mut header = [0u8; 512];
    let put = |h: &mut [u8; 512], off: usize, s: &[u8]| h[off..off + s.len()].copy_from_slice(s);
    put(&mut header, 0, b"imagebump.txt");
    put(&mut header, 100, b"0000644\0");
    put(&mut header, 108, b"0000000\0");
    put(&mut header, 116, b"0000000\0");
    put(
        &mut header,
        124,
        format!("{:011o}\0", content.len()).as_bytes(),
    );
    put(&mut header, 136, b"00000000000\0");
    put(&mut header, 148, b"        ");
    header[156] = b'0';
    put(&mut header, 257, b"ustar\0");
    put(&mut header, 263, b"00");
    let sum: u32 = header.iter().map(|&b| u32::from(b)).sum();
    put(&mut header, 148, format!("{sum:06o}\0 ").as_bytes());
    let mut tar = header.to_vec();
    tar.extend_from_slice(content);
    tar.resize(512 + 512, 0);
    tar.resize(tar.len() + 1024, 0);
    tar
}

// ---------------------------------------------------------------------------------------------
// git
// ---------------------------------------------------------------------------------------------

/// A `git` command isolated from the user's and the system's configuration, never prompting,
/// with a fixed author/committer identity.
pub fn git_command() -> Command {
    let mut cmd = Command::new("git");
    cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_AUTHOR_NAME", "imagebump test")
        .env("GIT_AUTHOR_EMAIL", "test@imagebump.invalid")
        .env("GIT_COMMITTER_NAME", "imagebump test")
        .env("GIT_COMMITTER_EMAIL", "test@imagebump.invalid");
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_NAMESPACE",
        "GIT_CEILING_DIRECTORIES",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_PROTOCOL",
        "GIT_EXEC_PATH",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs an isolated `git <args>` in `dir`, panicking on failure; returns trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    require_tool("git", "git");
    let out = run_checked(git_command().current_dir(dir).args(args), "git");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A fresh git repository (branch `main`) with `files` (relative path, content) committed.
pub fn make_worktree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = temp_dir("imagebump-worktree-");
    git(dir.path(), &["init", "--quiet", "-b", "main"]);
    for (rel, content) in files {
        let path = dir.path().join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("create worktree dirs");
        }
        fs::write(&path, content).expect("write worktree file");
    }
    git(dir.path(), &["add", "--all"]);
    git(
        dir.path(),
        &["commit", "--quiet", "--allow-empty", "-m", "initial"],
    );
    dir
}

enum GitServerKind {
    Daemon { child: Child },
    Http { shutdown: Arc<AtomicBool> },
}

/// A bare copy of a repository served over `git://` or smart HTTP on a free loopback port.
pub struct GitServer {
    url: String,
    port: u16,
    bare: PathBuf,
    log_path: Option<PathBuf>,
    kind: GitServerKind,
    dir: tempfile::TempDir,
}

/// Makes `<dir>/repos/<name>.git`, a bare clone of `worktree_dir`, ready to be served.
fn make_bare(dir: &Path, worktree_dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    require_tool("git", "git");
    assert!(
        !name.is_empty() && !name.contains("..") && !name.starts_with('/'),
        "bad repository name {name:?}"
    );
    let root = dir.join("repos");
    let bare = root.join(format!("{name}.git"));
    fs::create_dir_all(bare.parent().unwrap()).expect("create repos dir");
    run_checked(
        git_command()
            .args(["clone", "--bare", "--quiet", "--no-local"])
            .arg(worktree_dir)
            .arg(&bare),
        "making the served bare repository",
    );
    for (k, v) in [
        ("uploadpack.allowFilter", "true"),
        ("uploadpack.allowAnySHA1InWant", "true"),
        ("http.receivepack", "true"),
        ("receive.denyCurrentBranch", "ignore"),
    ] {
        run_checked(
            git_command().arg("-C").arg(&bare).args(["config", k, v]),
            "git config",
        );
    }
    fs::write(bare.join("git-daemon-export-ok"), "").expect("touch git-daemon-export-ok");
    (root, bare)
}

impl GitServer {
    /// Serves a bare copy of `worktree_dir` at `git://127.0.0.1:PORT/<name>.git` (git daemon,
    /// receive-pack enabled so pushes work too).
    pub fn daemon(worktree_dir: &Path, name: &str) -> GitServer {
        let dir = temp_dir("imagebump-gitd-");
        let (root, bare) = make_bare(dir.path(), worktree_dir, name);
        let log_path = dir.path().join("daemon.log");
        let mut last_failure = String::new();
        for _attempt in 0..PORT_ATTEMPTS {
            let port = free_port();
            let log = fs::File::create(&log_path).expect("create daemon log");
            let mut child = spawn_group(
                git_command()
                    .arg("daemon")
                    .arg("--verbose")
                    .arg("--reuseaddr")
                    .arg(format!("--base-path={}", root.display()))
                    .arg("--export-all")
                    .arg("--enable=receive-pack")
                    .arg("--listen=127.0.0.1")
                    .arg(format!("--port={port}"))
                    .arg(&root)
                    .current_dir(dir.path())
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(log),
                "git daemon",
            );
            let url = format!("git://127.0.0.1:{port}/{name}.git");
            let deadline = Instant::now() + START_DEADLINE;
            // "Ready to rumble" is logged (with --verbose) only after the daemon bound its
            // port, so a daemon of another test on the same port cannot fool us.
            let outcome = loop {
                if let Ok(Some(status)) = child.try_wait() {
                    let log = fs::read_to_string(&log_path).unwrap_or_default();
                    let clash = log.contains("unable to allocate any listen sockets")
                        || log.contains("Address already in use");
                    break Err((clash, format!("git daemon exited with {status}")));
                }
                let ready = fs::read_to_string(&log_path)
                    .map(|l| l.contains("Ready to rumble"))
                    .unwrap_or(false);
                if ready {
                    let ls = git_command()
                        .args(["ls-remote", &url])
                        .stdin(Stdio::null())
                        .output();
                    match ls {
                        Ok(o) if o.status.success() => break Ok(()),
                        Ok(o) => last_failure = String::from_utf8_lossy(&o.stderr).into_owned(),
                        Err(e) => last_failure = e.to_string(),
                    }
                }
                if let Some(failure) = start_timed_out(deadline, &last_failure) {
                    break Err(failure);
                }
                thread::sleep(Duration::from_millis(10));
            };
            match outcome {
                Ok(()) => {
                    return GitServer {
                        url,
                        port,
                        bare,
                        log_path: None,
                        kind: GitServerKind::Daemon { child },
                        dir,
                    }
                }
                Err((retry, why)) => {
                    kill_group(&mut child);
                    last_failure =
                        format!("{why}\ndaemon log tail:\n{}", tail_of_file(&log_path, 30));
                    if !retry {
                        break;
                    }
                }
            }
        }
        panic!("git daemon did not start: {last_failure}");
    }

    /// Serves a bare copy of `worktree_dir` over smart HTTP (`git http-backend` behind an
    /// in-process HTTP/1.1 server) at `http://127.0.0.1:PORT/<name>.git`. Every request must
    /// carry HTTP Basic auth whose password is `token` (any user name), else it gets 401 with
    /// `WWW-Authenticate: Basic realm="git"`. Pushes are allowed. Requests are logged, see
    /// [`GitServer::request_log`].
    pub fn http_with_token(worktree_dir: &Path, name: &str, token: &str) -> GitServer {
        let dir = temp_dir("imagebump-githttp-");
        let (root, bare) = make_bare(dir.path(), worktree_dir, name);
        let log_path = dir.path().join("requests.log");
        fs::write(&log_path, "").expect("create request log");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let shutdown = Arc::new(AtomicBool::new(false));
        let server = Arc::new(HttpGit {
            root,
            token: token.to_string(),
            log: Mutex::new(log_path.clone()),
        });
        {
            let shutdown = shutdown.clone();
            thread::Builder::new()
                .name(format!("git-http-{port}"))
                .spawn(move || {
                    for conn in listener.incoming() {
                        if shutdown.load(Ordering::SeqCst) {
                            break;
                        }
                        let Ok(stream) = conn else { continue };
                        let server = server.clone();
                        let _ = thread::Builder::new()
                            .name(format!("git-http-{port}-conn"))
                            .spawn(move || server.handle_connection(stream));
                    }
                })
                .expect("spawn git http server thread");
        }
        GitServer {
            url: format!("http://127.0.0.1:{port}/{name}.git"),
            port,
            bare,
            log_path: Some(log_path),
            kind: GitServerKind::Http { shutdown },
            dir,
        }
    }

    pub fn url(&self) -> String {
        self.url.clone()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// For [`GitServer::http_with_token`]: one line per request, e.g.
    /// `GET /repo.git/info/refs?service=git-upload-pack host=127.0.0.1:PORT authorization=Basic eC1h… user=x-access-token password=TOKEN status=200 body=0`
    /// (`authorization=-` etc. when the header was absent; `body=N` is the request body size,
    /// followed by ` chunked` for chunked uploads). Empty for the daemon.
    pub fn request_log(&self) -> String {
        match &self.log_path {
            Some(p) => fs::read_to_string(p).unwrap_or_default(),
            None => String::new(),
        }
    }

    /// The served bare repository (pushes land here).
    pub fn bare_dir(&self) -> PathBuf {
        self.bare.clone()
    }

    /// The served bare repository.
    pub fn bare_path(&self) -> &Path {
        &self.bare
    }

    /// Runs an isolated `git <args>` in the served bare repository; returns trimmed stdout.
    pub fn git(&self, args: &[&str]) -> String {
        git(&self.bare, args)
    }

    /// The sha `refs/heads/<branch>` has on the server, `None` when there is no such branch.
    pub fn branch_sha(&self, branch: &str) -> Option<String> {
        try_git(
            &self.bare,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/{branch}"),
            ],
        )
    }

    /// All branches on the server: name (without `refs/heads/`) → sha, sorted by name.
    pub fn branches(&self) -> Vec<(String, String)> {
        self.git(&[
            "for-each-ref",
            "--format=%(refname:strip=2) %(objectname)",
            "refs/heads/",
        ])
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(n, s)| (n.to_string(), s.to_string()))
        .collect()
    }

    /// The content of `path` at revision `rev` on the server, `None` when absent.
    pub fn file_at(&self, rev: &str, path: &str) -> Option<String> {
        let out = git_command()
            .current_dir(&self.bare)
            .args(["cat-file", "blob", &format!("{rev}:{path}")])
            .stdin(Stdio::null())
            .output()
            .expect("run git cat-file");
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `git log --format=<format> <rev>` on the server, one string per commit, newest first
    /// (e.g. `log("main", "%s")` gives the subjects).
    pub fn log(&self, rev: &str, format: &str) -> Vec<String> {
        let out = run_checked(
            git_command().current_dir(&self.bare).args([
                "log",
                "-z",
                &format!("--format={format}"),
                rev,
                "--",
            ]),
            "git log on the served repository",
        );
        String::from_utf8_lossy(&out.stdout)
            .split('\0')
            .filter(|s| !s.is_empty())
            .map(|s| s.trim_end_matches('\n').to_string())
            .collect()
    }

    /// Commits straight into the served repository, as someone else pushing would: a commit
    /// on `branch` (which must exist) setting `files` (path, `Some(content)`, or `None` to
    /// delete), by the test identity. No hook runs. Returns the new sha.
    pub fn commit_on(&self, branch: &str, files: &[(&str, Option<&str>)], message: &str) -> String {
        let old = self
            .branch_sha(branch)
            .unwrap_or_else(|| panic!("commit_on: no branch {branch} on the server"));
        let tmp = temp_dir("imagebump-remote-index-");
        let index = tmp.path().join("index");
        let with_index = |args: &[&str]| {
            let mut cmd = git_command();
            cmd.current_dir(&self.bare)
                .env("GIT_INDEX_FILE", &index)
                .args(args);
            cmd
        };
        run_checked(&mut with_index(&["read-tree", &old]), "read-tree");
        for (path, content) in files {
            match content {
                Some(text) => {
                    let blob = tmp.path().join("blob");
                    fs::write(&blob, text).expect("write blob file");
                    let sha = run_checked(
                        git_command()
                            .current_dir(&self.bare)
                            .args(["hash-object", "-w", "--"])
                            .arg(&blob),
                        "hash-object",
                    );
                    let sha = String::from_utf8_lossy(&sha.stdout).trim().to_string();
                    run_checked(
                        &mut with_index(&[
                            "update-index",
                            "--add",
                            "--cacheinfo",
                            &format!("100644,{sha},{path}"),
                        ]),
                        "update-index",
                    );
                }
                None => {
                    run_checked(
                        &mut with_index(&["update-index", "--force-remove", "--", path]),
                        "update-index --force-remove",
                    );
                }
            }
        }
        let tree = run_checked(&mut with_index(&["write-tree"]), "write-tree");
        let tree = String::from_utf8_lossy(&tree.stdout).trim().to_string();
        let new = self.git(&["commit-tree", &tree, "-p", &old, "-m", message]);
        self.git(&["update-ref", &format!("refs/heads/{branch}"), &new, &old]);
        new
    }

    /// `git revert --no-edit <sha>` on `branch` of the served repository (made in a scratch
    /// clone, then fetched in, so no hook runs). Returns the revert commit's sha.
    pub fn revert_on(&self, branch: &str, sha: &str) -> String {
        self.in_scratch_clone(branch, &[&["revert", "--no-edit", sha]])
    }

    /// Merges `from` into `branch` with a merge commit (a forge's "Merge" button); its sha.
    pub fn merge_on(&self, branch: &str, from: &str) -> String {
        let theirs = format!("origin/{from}");
        self.in_scratch_clone(
            branch,
            &[
                &["fetch", "--quiet", "origin", from],
                &["merge", "--no-ff", "--no-edit", &theirs],
            ],
        )
    }

    /// Reverts the merge commit `sha` on `branch` as a forge's "Revert" button does
    /// (`git revert -m 1`); the new commit's sha.
    pub fn revert_merge_on(&self, branch: &str, sha: &str) -> String {
        self.in_scratch_clone(branch, &[&["revert", "--no-edit", "-m", "1", sha]])
    }

    /// Runs git `commands` in a scratch clone of `branch` and puts the result back on the
    /// served branch; the new tip.
    fn in_scratch_clone(&self, branch: &str, commands: &[&[&str]]) -> String {
        let tmp = temp_dir("imagebump-revert-");
        let work = tmp.path().join("w");
        run_checked(
            git_command()
                .args(["clone", "--quiet", "--no-local", "--branch", branch])
                .arg(&self.bare)
                .arg(&work),
            "scratch clone for revert",
        );
        for args in commands {
            git(&work, args);
        }
        let new = git(&work, &["rev-parse", "HEAD"]);
        run_checked(
            git_command()
                .current_dir(&self.bare)
                .args(["fetch", "--quiet", "--no-tags"])
                .arg(&work)
                .arg(format!("HEAD:refs/heads/{branch}")),
            "fetching the revert into the served repository",
        );
        new
    }

    /// Installs an `update` hook that declines pushes to the given full ref names
    /// (`refs/heads/x`), each on its own: other refs of the same push still go through, and
    /// git reports the declined ones as `[remote rejected] (hook declined)`. `message` is
    /// printed to the pusher (as `remote: ...`).
    pub fn reject_updates_to(&self, refs: &[&str], message: &str) {
        let cases: Vec<String> = refs.iter().map(|r| shell_quote(r)).collect();
        let script = format!(
            "#!/bin/sh\ncase \"$1\" in\n  {}) echo {} >&2; exit 1;;\nesac\nexit 0\n",
            cases.join("|"),
            shell_quote(message)
        );
        self.install_hook("update", &script);
    }

    /// Installs a `pre-receive` hook that declines every push as a whole (all its refs are
    /// reported `[remote rejected] (pre-receive hook declined)`).
    pub fn reject_all_pushes(&self, message: &str) {
        let script = format!(
            "#!/bin/sh\ncat >/dev/null\necho {} >&2\nexit 1\n",
            shell_quote(message)
        );
        self.install_hook("pre-receive", &script);
    }

    /// Removes the hooks [`GitServer::reject_updates_to`] and
    /// [`GitServer::reject_all_pushes`] installed.
    pub fn accept_pushes(&self) {
        for hook in ["update", "pre-receive"] {
            let _ = fs::remove_file(self.bare.join("hooks").join(hook));
        }
    }

    /// Moves `main` by one empty commit the first time a push arrives (a `pre-receive` hook
    /// that then lets the push through), so that the push's expected base is stale: the
    /// race of someone pushing to the base while imagebump works.
    pub fn move_main_on_first_push(&self) {
        self.move_on_first_push("main");
    }

    /// As [`GitServer::move_main_on_first_push`], for any branch (someone else's commit).
    pub fn move_on_first_push(&self, branch: &str) {
        let script = format!(
            "#!/bin/sh\ncat >/dev/null\n[ -f moved-once ] && exit 0\ntouch moved-once\nunset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES\nold=$(git rev-parse refs/heads/{branch})\nnew=$(echo 'Someone else' | GIT_AUTHOR_NAME=other GIT_AUTHOR_EMAIL=o@x GIT_COMMITTER_NAME=other GIT_COMMITTER_EMAIL=o@x git commit-tree \"$old^{{tree}}\" -p \"$old\")\ngit update-ref refs/heads/{branch} \"$new\" \"$old\"\nexit 0\n"
        );
        self.install_hook("pre-receive", &script);
    }

    /// As [`GitServer::move_main_on_first_push`], someone else's commit setting `path` to
    /// `content`: the base a run analysed is no longer the one it must build on.
    pub fn change_main_on_first_push(&self, path: &str, content: &str) {
        let script = format!(
            "#!/bin/sh\ncat >/dev/null\n[ -f moved-once ] && exit 0\ntouch moved-once\nunset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES\nold=$(git rev-parse refs/heads/main)\nexport GIT_INDEX_FILE=\"$PWD/moved-index\"\ngit read-tree \"$old\"\nblob=$(printf '%s' {content} | git hash-object -w --stdin)\ngit update-index --add --cacheinfo \"100644,$blob,{path}\"\ntree=$(git write-tree)\nnew=$(echo 'Someone else' | GIT_AUTHOR_NAME=other GIT_AUTHOR_EMAIL=o@x GIT_COMMITTER_NAME=other GIT_COMMITTER_EMAIL=o@x git commit-tree \"$tree\" -p \"$old\")\ngit update-ref refs/heads/main \"$new\" \"$old\"\nexit 0\n",
            content = shell_quote(content),
            path = path,
        );
        self.install_hook("pre-receive", &script);
    }

    fn install_hook(&self, name: &str, script: &str) {
        use std::os::unix::fs::PermissionsExt;
        let dir = self.bare.join("hooks");
        fs::create_dir_all(&dir).expect("create hooks dir");
        let path = dir.join(name);
        fs::write(&path, script).expect("write hook");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod hook");
    }

    /// For [`GitServer::http_with_token`]: the request log lines containing `needle`, e.g.
    /// `"POST /gitops.git/git-receive-pack "` (one line per receive-pack request).
    pub fn requests_matching(&self, needle: &str) -> Vec<String> {
        self.request_log()
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_string)
            .collect()
    }
}

/// `'text'` for sh, single quotes escaped.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// Runs an isolated `git <args>` in `dir`; trimmed stdout, or `None` when git exits non-zero.
pub fn try_git(dir: &Path, args: &[&str]) -> Option<String> {
    require_tool("git", "git");
    let out = git_command()
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run git: {e}"));
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

impl Drop for GitServer {
    fn drop(&mut self) {
        match &mut self.kind {
            GitServerKind::Daemon { child } => kill_group(child),
            GitServerKind::Http { shutdown } => {
                shutdown.store(true, Ordering::SeqCst);
                // wake the accept loop so it sees the flag and drops the listener
                let _ = TcpStream::connect(("127.0.0.1", self.port));
            }
        }
    }
}

struct HttpGit {
    root: PathBuf,
    token: String,
    log: Mutex<PathBuf>,
}

struct HttpRequest {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
}

impl HttpRequest {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl HttpGit {
    /// Serves requests on one connection (keep-alive) until the client closes it.
    fn handle_connection(&self, stream: TcpStream) {
        let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
        let Ok(write_half) = stream.try_clone() else {
            return;
        };
        let mut reader = BufReader::new(stream);
        let mut writer = write_half;
        while let Ok(true) = self.handle_request(&mut reader, &mut writer) {}
        let _ = writer.flush();
        let _ = writer.shutdown(Shutdown::Both);
    }

    /// Returns Ok(true) to keep the connection open.
    fn handle_request(
        &self,
        reader: &mut BufReader<TcpStream>,
        writer: &mut TcpStream,
    ) -> std::io::Result<bool> {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(false);
        }
        let request_line = line.trim_end().to_string();
        if request_line.is_empty() {
            return Ok(true);
        }
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let target = parts.next().unwrap_or("").to_string();
        let version = parts.next().unwrap_or("HTTP/1.0").to_string();
        let mut headers = Vec::new();
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Ok(false);
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
        let req = HttpRequest {
            method,
            target,
            headers,
        };
        let keep_alive = version == "HTTP/1.1"
            && !req
                .header("Connection")
                .is_some_and(|c| c.eq_ignore_ascii_case("close"));

        // Authentication: password must equal the token, user name is free.
        let authorization = req.header("Authorization").map(String::from);
        let (user, password) = authorization
            .as_deref()
            .and_then(|a| {
                let (scheme, rest) = a.split_once(' ')?;
                if !scheme.eq_ignore_ascii_case("basic") {
                    return None;
                }
                let decoded = String::from_utf8(base64_decode(rest)?).ok()?;
                let (u, p) = decoded.split_once(':')?;
                Some((Some(u.to_string()), Some(p.to_string())))
            })
            .unwrap_or((None, None));
        let authorized = password.as_deref() == Some(self.token.as_str());
        let expects_continue = req
            .header("Expect")
            .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"));

        let chunked = req
            .header("Transfer-Encoding")
            .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
        let mut body_len = 0;
        let (status, resp_headers, body, keep) = if !authorized && expects_continue {
            // Do not read the body: answer 401 and close.
            let msg = b"authentication required\n".to_vec();
            (401, vec![basic_challenge()], msg, false)
        } else {
            if expects_continue {
                writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
                writer.flush()?;
            }
            let body = read_body(reader, &req)?;
            body_len = body.len();
            if authorized {
                let (s, h, b) = self.run_backend(&req, &body, user.as_deref().unwrap_or(""));
                (s, h, b, keep_alive)
            } else {
                (
                    401,
                    vec![basic_challenge()],
                    b"authentication required\n".to_vec(),
                    keep_alive,
                )
            }
        };

        self.log_line(format!(
            "{} {} host={} authorization={} user={} password={} status={} body={}{}",
            req.method,
            req.target,
            req.header("Host").unwrap_or("-"),
            authorization.as_deref().unwrap_or("-"),
            user.as_deref().unwrap_or("-"),
            password.as_deref().unwrap_or("-"),
            status,
            body_len,
            if chunked { " chunked" } else { "" }
        ));

        let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
        for (k, v) in &resp_headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        head.push_str(if keep {
            "Connection: keep-alive\r\n"
        } else {
            "Connection: close\r\n"
        });
        head.push_str("\r\n");
        writer.write_all(head.as_bytes())?;
        if req.method != "HEAD" {
            writer.write_all(&body)?;
        }
        writer.flush()?;
        Ok(keep)
    }

    fn log_line(&self, line: String) {
        let path = self.log.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(mut f) = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&*path)
        {
            let _ = writeln!(f, "{line}");
        }
    }

    /// Runs `git http-backend` as a CGI for one request.
    fn run_backend(&self, req: &HttpRequest, body: &[u8], user: &str) -> Response {
        let (path, query) = match req.target.split_once('?') {
            Some((p, q)) => (p, q),
            None => (req.target.as_str(), ""),
        };
        let path_info = percent_decode(path);
        if path_info.contains("..") {
            return (400, vec![], b"bad path\n".to_vec());
        }
        let mut cmd = git_command();
        cmd.arg("http-backend")
            .current_dir(&self.root)
            .env("GIT_PROJECT_ROOT", &self.root)
            .env("GIT_HTTP_EXPORT_ALL", "1")
            .env("GATEWAY_INTERFACE", "CGI/1.1")
            .env("SERVER_PROTOCOL", "HTTP/1.1")
            .env("SERVER_SOFTWARE", "imagebump-test-support")
            .env("REQUEST_METHOD", &req.method)
            .env("PATH_INFO", &path_info)
            .env("QUERY_STRING", query)
            .env("REMOTE_ADDR", "127.0.0.1")
            .env("REMOTE_USER", user)
            .env("AUTH_TYPE", "Basic")
            .env("CONTENT_LENGTH", body.len().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(ct) = req.header("Content-Type") {
            cmd.env("CONTENT_TYPE", ct);
        }
        for (k, v) in &req.headers {
            let lower = k.to_ascii_lowercase();
            if lower == "authorization" || lower == "content-type" || lower == "content-length" {
                continue;
            }
            cmd.env(
                format!("HTTP_{}", k.to_ascii_uppercase().replace('-', "_")),
                v,
            );
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                return (
                    500,
                    vec![],
                    format!("cannot run git http-backend: {e}\n").into(),
                )
            }
        };
        let mut stdin = child.stdin.take().expect("cgi stdin");
        let output = thread::scope(|s| {
            s.spawn(move || {
                let _ = stdin.write_all(body);
                drop(stdin);
            });
            child.wait_with_output()
        });
        let output = match output {
            Ok(o) => o,
            Err(e) => {
                return (
                    500,
                    vec![],
                    format!("git http-backend failed: {e}\n").into(),
                )
            }
        };
        parse_cgi_output(&output.stdout).unwrap_or_else(|| {
            (
                500,
                vec![],
                format!(
                    "git http-backend gave no CGI headers; stderr: {}\n",
                    String::from_utf8_lossy(&output.stderr)
                )
                .into(),
            )
        })
    }
}

fn basic_challenge() -> (String, String) {
    (
        "WWW-Authenticate".to_string(),
        "Basic realm=\"git\"".to_string(),
    )
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        415 => "Unsupported Media Type",
        500 => "Internal Server Error",
        _ => "Status",
    }
}

/// Reads a request body given Content-Length or chunked Transfer-Encoding (de-chunked).
fn read_body(reader: &mut BufReader<TcpStream>, req: &HttpRequest) -> std::io::Result<Vec<u8>> {
    let chunked = req
        .header("Transfer-Encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
    if chunked {
        let mut body = Vec::new();
        loop {
            let mut size_line = String::new();
            if reader.read_line(&mut size_line)? == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "chunk size",
                ));
            }
            let size_str = size_line.trim().split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_str, 16).map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, "bad chunk size")
            })?;
            if size == 0 {
                // trailers until an empty line
                loop {
                    let mut t = String::new();
                    if reader.read_line(&mut t)? == 0 || t.trim().is_empty() {
                        break;
                    }
                }
                return Ok(body);
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader.read_exact(&mut body[start..])?;
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf)?;
        }
    }
    let len: usize = req
        .header("Content-Length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body)?;
    Ok(body)
}

/// (status, headers, body) of an HTTP response.
type Response = (u16, Vec<(String, String)>, Vec<u8>);

/// Splits CGI output into (status, headers, body).
fn parse_cgi_output(out: &[u8]) -> Option<Response> {
    let (head_end, sep_len) = match (find_subslice(out, b"\r\n\r\n"), find_subslice(out, b"\n\n")) {
        (Some(a), Some(b)) if b < a => (b, 2),
        (Some(a), _) => (a, 4),
        (None, Some(b)) => (b, 2),
        (None, None) => return None,
    };
    let head = String::from_utf8_lossy(&out[..head_end]);
    let mut status = 200;
    let mut headers = Vec::new();
    for line in head.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        if k.eq_ignore_ascii_case("Status") {
            status = v
                .split_whitespace()
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or(500);
        } else if !k.eq_ignore_ascii_case("Content-Length") {
            headers.push((k.to_string(), v.to_string()));
        }
    }
    Some((status, headers, out[head_end + sep_len..].to_vec()))
}

fn find_subslice(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

// ---------------------------------------------------------------------------------------------
// the two-apps GitOps repository of the pull-request tests
// ---------------------------------------------------------------------------------------------

/// The pull-request tests' world: a registry holding `team/web` 1.0.0, 1.1.0 and `team/api`
/// 2.0.0, 2.1.0; a remote (smart HTTP, `token` as password) whose `main` holds two apps using
/// the older tags (a kustomization and a values file); an imagebump.yaml sending
/// `registry.test` to the registry, followed by `extra_config`.
pub struct TwoApps {
    pub reg: Registry,
    pub server: GitServer,
    pub work: tempfile::TempDir,
    pub cfg_dir: tempfile::TempDir,
}

impl TwoApps {
    pub fn start(token: &str, extra_config: &str) -> TwoApps {
        let reg = Registry::start(RegistryMode::Plain);
        reg.push_tags("team/web", &["1.0.0", "1.1.0"]);
        reg.push_tags("team/api", &["2.0.0", "2.1.0"]);
        let work = make_worktree(&[
            (
                "apps/web/kustomization.yaml",
                "images:\n  - name: registry.test/team/web\n    newTag: 1.0.0 # web\n",
            ),
            (
                "apps/api/values.yaml",
                "image:\n  repository: registry.test/team/api\n  tag: 2.0.0\n",
            ),
        ]);
        let server = GitServer::http_with_token(work.path(), "gitops", token);
        let cfg_dir = temp_dir("imagebump-config-");
        fs::write(
            cfg_dir.path().join("imagebump.yaml"),
            format!(
                "registries:\n  - prefix: registry.test\n    url: {}\n{extra_config}",
                reg.base_url()
            ),
        )
        .expect("write imagebump.yaml");
        TwoApps {
            reg,
            server,
            work,
            cfg_dir,
        }
    }

    /// The imagebump.yaml path.
    pub fn config(&self) -> PathBuf {
        self.cfg_dir.path().join("imagebump.yaml")
    }

    /// How many pushes the remote received.
    pub fn pushes(&self) -> usize {
        self.server
            .request_log()
            .lines()
            .filter(|l| l.contains("POST") && l.contains("git-receive-pack"))
            .count()
    }

    /// `path` on the remote's `branch`.
    pub fn branch_file(&self, branch: &str, path: &str) -> Option<String> {
        self.server.file_at(&format!("refs/heads/{branch}"), path)
    }
}

/// Fails, naming what to install, unless kubectl's kustomize knows components (v3.7+).
pub fn require_kustomize() {
    require_tool("kubectl", "kubernetes-client");
    let out = Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("Kustomize Version: v"))
        .and_then(|v| semver::Version::parse(v.trim()).ok());
    assert!(
        version.is_some_and(|v| v >= semver::Version::new(3, 7, 0)),
        "kubectl's kustomize is too old for components ({text}): install kubectl 1.21 or later"
    );
}

/// `kubectl kustomize DIR`, the real renderer.
pub fn kustomize_build(dir: &Path) -> String {
    require_kustomize();
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Prometheus: the Pushgateway, promtool and the Python parser (tests/metrics.rs)
// ---------------------------------------------------------------------------------------------

/// A real Prometheus Pushgateway (Debian's `prometheus-pushgateway`) on a free loopback port,
/// in its own process group, killed with it when dropped.
pub struct Pushgateway {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Pushgateway {
    pub fn start() -> Pushgateway {
        require_tool("prometheus-pushgateway", "prometheus-pushgateway");
        let dir = tempfile::tempdir().expect("tempdir");
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port();
            let log = fs::File::create(dir.path().join("pushgateway.log")).expect("log file");
            let mut child = spawn_group(
                Command::new("prometheus-pushgateway")
                    .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                    .arg(format!(
                        "--persistence.file={}",
                        dir.path().join("persistence").display()
                    ))
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(log),
                "prometheus-pushgateway",
            );
            let deadline = Instant::now() + START_DEADLINE;
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break; // the port was taken: try another
                }
                let ready = off_runtime(|| {
                    reqwest::blocking::get(format!("http://127.0.0.1:{port}/-/ready"))
                        .is_ok_and(|r| r.status().is_success())
                });
                if ready {
                    return Pushgateway {
                        child,
                        port,
                        _dir: dir,
                    };
                }
                thread::sleep(Duration::from_millis(50));
            }
            kill_group(&mut child);
        }
        panic!(
            "the Pushgateway did not start:\n{}",
            tail_of_file(&dir.path().join("pushgateway.log"), 20)
        );
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What it serves at `/metrics`.
    pub fn metrics(&self) -> String {
        let url = format!("{}/metrics", self.url());
        off_runtime(move || {
            reqwest::blocking::get(url)
                .and_then(|r| r.text())
                .expect("GET /metrics")
        })
    }
}

impl Drop for Pushgateway {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

/// `promtool` with `args`, `stdin` on its standard input: (success, stdout + stderr).
pub fn promtool(args: &[&str], stdin: &str) -> (bool, String) {
    require_tool("promtool", "prometheus");
    let mut child = Command::new("promtool")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write to promtool");
    let out = child.wait_with_output().expect("promtool");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The CI venv's Python with `cryptography` in it (tests/signatures.rs' signer).
pub fn ci_python_with_cryptography() -> PathBuf {
    venv_python("cryptography", "cryptography==50.0.2")
}

/// The CI venv's Python (`target/ci-tools/bin/python`, made by `.ci/run`), with
/// `prometheus-client` in it.
pub fn ci_python() -> PathBuf {
    venv_python("prometheus_client", "prometheus-client==0.26.0")
}

/// The CI venv's Python, which must import `module` (installed as `pip`).
fn venv_python(module: &str, pip: &str) -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ci-tools/bin/python");
    let ok = Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "{} has no {module}: run .ci/run, or `target/ci-tools/bin/pip install {pip}`",
        python.display()
    );
    python
}
