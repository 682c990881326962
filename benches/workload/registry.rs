//! The benchmark's registry: Debian's `docker-registry` on a free loopback port, its data
//! seeded once per workload and kept under `target/` between runs.
//!
//! Seeding goes through the distribution API over plain HTTP (a second listener on the same
//! storage would gain nothing; TLS only slows the 80,000 requests down); the measured runs
//! then use TLS with a self-signed certificate, as `../shared/bench/registry.sh` does.

use std::fmt::Write as _;
use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// Version of the seeding scheme: part of the cache key, bump it when the content changes.
const SCHEME: u32 = 1;
/// Concurrent seeding connections.
const SEED_WORKERS: usize = 8;

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// What the registry holds.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub repos: usize,
    pub tags: usize,
    /// The last `dated` tags of each repository are `build-1`…`build-N`, each its own image
    /// with its own `created` date.
    pub dated: usize,
}

impl Shape {
    fn key(&self) -> String {
        format!(
            "registry-{}x{}-dated{}-v{SCHEME}",
            self.repos, self.tags, self.dated
        )
    }
}

pub fn repo_name(i: usize) -> String {
    format!("bench/svc{i:04}")
}

pub fn build_tag(n: usize) -> String {
    format!("build-{n}")
}

/// A running registry (killed on drop).
pub struct Registry {
    pub port: u16,
    pub cert: PathBuf,
    child: Child,
}

impl Registry {
    /// Seconds of CPU (user and system) the registry has used since it started, from
    /// `/proc/PID/stat`: the registry shares the machine's cores with the run it answers.
    pub fn cpu(&self) -> f64 {
        let stat =
            fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // The fields after the command's name (which may hold spaces) in parentheses:
        // utime and stime are the 14th and 15th of the line, the 12th and 13th after it.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let ticks: u64 = after
            .split_whitespace()
            .skip(11)
            .take(2)
            .filter_map(|f| f.parse::<u64>().ok())
            .sum();
        ticks as f64 / clock_ticks()
    }

    /// `127.0.0.1:PORT`
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn base_url(&self) -> String {
        format!("https://{}", self.host())
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The seeded registry for `shape`, served over TLS: seeds `cache/<key>/data` first unless
/// an earlier run finished seeding it.
pub fn prepare(cache: &Path, shape: Shape) -> Registry {
    let dir = cache.join(shape.key());
    let done = dir.join("SEEDED");
    if !done.exists() {
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("data")).expect("create the registry cache dir");
        eprintln!(
            "seeding {} repositories x {} tags into {} (once; later runs reuse it)…",
            shape.repos,
            shape.tags,
            dir.display()
        );
        let started = Instant::now();
        let plain = start(&dir, false);
        seed(&format!("http://{}", plain.host()), shape);
        drop(plain);
        fs::write(&done, format!("{shape:?}\n")).expect("write the SEEDED marker");
        eprintln!("seeded in {:.0} s", started.elapsed().as_secs_f64());
    }
    make_cert(&dir);
    start(&dir, true)
}

/// A self-signed certificate for 127.0.0.1, as `../shared/bench/registry.sh` makes it.
fn make_cert(dir: &Path) {
    if dir.join("cert.pem").exists() && dir.join("key.pem").exists() {
        return;
    }
    let out = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout"])
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("cert.pem"))
        .args(["-days", "3650", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        .stdin(Stdio::null())
        .output()
        .expect("run openssl (apt-get install -y openssl)");
    assert!(
        out.status.success(),
        "openssl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}

/// The kernel's clock ticks per second (`getconf CLK_TCK`; 100 when it cannot say).
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// Starts `docker-registry serve` on the data in `dir`, over TLS or plain HTTP, on a free
/// port (another one if the port was taken meanwhile).
fn start(dir: &Path, tls: bool) -> Registry {
    let config = dir.join(if tls { "tls.yml" } else { "plain.yml" });
    let log_path = dir.join("registry.log");
    for _ in 0..8 {
        let port = free_port();
        let tls_yaml = if tls {
            format!(
                ", tls: {{certificate: {}, key: {}}}",
                dir.join("cert.pem").display(),
                dir.join("key.pem").display()
            )
        } else {
            String::new()
        };
        fs::write(
            &config,
            format!(
                "version: 0.1\n\
                 log: {{level: error, accesslog: {{disabled: true}}}}\n\
                 storage: {{filesystem: {{rootdirectory: {}}}, cache: {{blobdescriptor: inmemory}}}}\n\
                 http: {{addr: 127.0.0.1:{port}{tls_yaml}}}\n",
                dir.join("data").display()
            ),
        )
        .expect("write the registry config");
        let log = fs::File::create(&log_path).expect("create the registry log");
        let mut cmd = Command::new("docker-registry");
        cmd.arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup the log fd"))
            .stderr(log);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("REGISTRY_") {
                cmd.env_remove(k);
            }
        }
        let mut child = cmd
            .spawn()
            .expect("start docker-registry (apt-get install -y docker-registry)");
        let scheme = if tls { "https" } else { "http" };
        let url = format!("{scheme}://127.0.0.1:{port}/v2/");
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut ready = false;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            // curl accepts the self-signed certificate given as its CA, like imagebump's
            // caFile does (rustls in reqwest would not).
            let probe = Command::new("curl")
                .args(["-sf", "-o", "/dev/null", "--max-time", "2", "--cacert"])
                .arg(dir.join("cert.pem"))
                .arg(&url)
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .status();
            if probe.is_ok_and(|s| s.success()) {
                ready = true;
                break;
            }
            thread::sleep(Duration::from_millis(50));
        }
        if ready {
            return Registry {
                port,
                cert: dir.join("cert.pem"),
                child,
            };
        }
        let _ = child.kill();
        let _ = child.wait();
        let log = fs::read_to_string(&log_path).unwrap_or_default();
        if !log.contains("address already in use") {
            panic!("docker-registry did not start on port {port}:\n{log}");
        }
    }
    panic!("docker-registry found no free port");
}

fn sha256_digest(data: &[u8]) -> String {
    let mut s = String::from("sha256:");
    for b in Sha256::digest(data) {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The tags of repository `i`, in push order: a semver-ish mix (plain, `v`-prefixed,
/// `-alpine`, `-rc.1`, partial versions, `latest`, a sha tag…) like `seed.py`'s, then
/// `build-1`…`build-N`.
pub fn tags_for(i: usize, shape: Shape) -> Vec<String> {
    let mixed = shape.tags - shape.dated;
    let mut rng = fastrand::Rng::with_seed(i as u64);
    let mut versions = Vec::new();
    for major in 1..=3 {
        for minor in 0..12 {
            for patch in 0..6 {
                versions.push(format!("{major}.{minor}.{patch}"));
            }
        }
    }
    rng.shuffle(&mut versions);
    let sha = &sha256_digest(i.to_string().as_bytes())[7..14];
    let mut out: Vec<String> = Vec::with_capacity(shape.tags);
    let push = |t: String, out: &mut Vec<String>| {
        if out.len() < mixed && !out.contains(&t) {
            out.push(t);
        }
    };
    for v in versions.iter().take(mixed.saturating_sub(10)) {
        let k = rng.f64();
        let t = if k < 0.55 {
            v.clone()
        } else if k < 0.7 {
            format!("v{v}")
        } else if k < 0.85 {
            format!("{v}-alpine")
        } else {
            format!("{v}-rc.1")
        };
        push(t, &mut out);
    }
    for t in [
        "latest",
        "main",
        &format!("sha-{sha}"),
        "1.0",
        "2",
        "nightly-20260101",
        "3.11.5-rc.2",
        "3.11.6-alpine",
        "3.11.6",
        "0.9.0",
    ] {
        push(t.to_string(), &mut out);
    }
    for v in &versions {
        push(v.clone(), &mut out);
    }
    out.extend((1..=shape.dated).map(build_tag));
    out
}

/// The `created` date of the tag at position `n` of the list (dated tags only): all
/// distinct, and not in the order of the tag names.
fn created(n: usize) -> String {
    format!(
        "2026-{:02}-{:02}T00:00:{:02}Z",
        1 + n % 12,
        1 + n % 28,
        n % 60
    )
}

struct Seeder {
    http: reqwest::blocking::Client,
    base: String,
}

impl Seeder {
    fn upload(&self, repo: &str, data: &[u8]) -> (String, usize) {
        let digest = sha256_digest(data);
        let post = format!("{}/v2/{repo}/blobs/uploads/", self.base);
        let resp = self
            .http
            .post(&post)
            .header("Content-Length", "0")
            .send()
            .unwrap_or_else(|e| panic!("POST {post}: {e}"));
        assert_eq!(resp.status().as_u16(), 202, "POST {post}");
        let location = resp
            .headers()
            .get("Location")
            .and_then(|v| v.to_str().ok())
            .expect("upload Location")
            .to_string();
        let mut put = if location.starts_with("http") {
            location
        } else {
            format!("{}{location}", self.base)
        };
        put.push(if put.contains('?') { '&' } else { '?' });
        put.push_str(&format!("digest={}", digest.replace(':', "%3A")));
        let resp = self
            .http
            .put(&put)
            .header("Content-Type", "application/octet-stream")
            .body(data.to_vec())
            .send()
            .unwrap_or_else(|e| panic!("PUT {put}: {e}"));
        assert_eq!(resp.status().as_u16(), 201, "PUT blob {repo}");
        (digest, data.len())
    }

    fn manifest(&self, repo: &str, i: usize, layer: &(String, usize), created: &str) -> Vec<u8> {
        let config = serde_json::json!({
            "created": created,
            "architecture": "amd64",
            "os": "linux",
            "rootfs": {"type": "layers", "diff_ids": [layer.0]},
            "config": {"Labels": {"org.opencontainers.image.source": format!("https://example.invalid/svc{i}")}},
        })
        .to_string();
        let (cd, cs) = self.upload(repo, config.as_bytes());
        serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cs},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer.0, "size": layer.1}],
        })
        .to_string()
        .into_bytes()
    }

    fn put_manifest(&self, repo: &str, tag: &str, body: &[u8]) {
        let url = format!("{}/v2/{repo}/manifests/{tag}", self.base);
        let resp = self
            .http
            .put(&url)
            .header("Content-Type", OCI_MANIFEST)
            .body(body.to_vec())
            .send()
            .unwrap_or_else(|e| panic!("PUT {url}: {e}"));
        assert_eq!(resp.status().as_u16(), 201, "PUT {url}");
    }

    fn repo(&self, i: usize, shape: Shape) {
        let repo = repo_name(i);
        let layer = self.upload(&repo, format!("layer {i}").as_bytes());
        let base = self.manifest(&repo, i, &layer, "2025-01-01T00:00:00Z");
        let tags = tags_for(i, shape);
        let first_dated = tags.len() - shape.dated;
        for (n, tag) in tags.iter().enumerate() {
            if n < first_dated {
                self.put_manifest(&repo, tag, &base);
            } else {
                let own = self.manifest(&repo, i, &layer, &created(n));
                self.put_manifest(&repo, tag, &own);
            }
        }
    }
}

fn seed(base: &str, shape: Shape) {
    let http = reqwest::blocking::Client::builder()
        .pool_max_idle_per_host(SEED_WORKERS)
        .timeout(Duration::from_secs(60))
        .build()
        .expect("HTTP client");
    let seeder = Seeder {
        http,
        base: base.to_string(),
    };
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..SEED_WORKERS {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= shape.repos {
                    break;
                }
                seeder.repo(i, shape);
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                if d % 30 == 0 {
                    eprintln!("  {d}/{} repositories", shape.repos);
                }
            });
        }
    });
}
