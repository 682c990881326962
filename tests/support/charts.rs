//! Helm charts for tests: real chart archives built from source directories with `tar`,
//! a classic Helm repository (a static file server on a free loopback port, with an
//! optional Basic auth and a log of every request), and the same archives pushed to the
//! real `docker-registry` as OCI charts (Helm's media types).

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use super::{sha256_digest, Registry};

pub const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";
pub const HELM_CHART: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";

/// A chart version to build: name, version, appVersion and its `values.yaml`.
pub struct ChartSrc<'a> {
    pub name: &'a str,
    pub version: &'a str,
    pub app_version: &'a str,
    pub values: &'a str,
}

/// Build `<name>-<version>.tgz` from a source directory (`Chart.yaml`, `values.yaml`,
/// `templates/deployment.yaml`) as `helm package` lays it out (`<name>/...`); its bytes.
pub fn package(src: &ChartSrc) -> Vec<u8> {
    super::require_tool("tar", "tar");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(src.name);
    fs::create_dir_all(root.join("templates")).unwrap();
    fs::write(
        root.join("Chart.yaml"),
        format!(
            "apiVersion: v2\nname: {}\nversion: {}\nappVersion: \"{}\"\n",
            src.name, src.version, src.app_version
        ),
    )
    .unwrap();
    fs::write(root.join("values.yaml"), src.values).unwrap();
    fs::write(
        root.join("templates/deployment.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"\n",
    )
    .unwrap();
    let out = dir.path().join("chart.tgz");
    let status = Command::new("tar")
        .args([
            "--sort=name",
            "--owner=0",
            "--group=0",
            "--mtime=@0",
            "-czf",
        ])
        .arg(&out)
        .arg("-C")
        .arg(dir.path())
        .arg(src.name)
        .status()
        .unwrap();
    assert!(status.success(), "tar failed");
    fs::read(out).unwrap()
}

/// A classic Helm repository: `index.yaml` and the archives, served over plain HTTP.
pub struct HelmRepo {
    port: u16,
    dir: tempfile::TempDir,
    log: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl HelmRepo {
    /// Serve an empty directory; with `auth`, every request needs that Basic user.
    pub fn start(auth: Option<(&str, &str)>) -> HelmRepo {
        let dir = tempfile::tempdir().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let expected = auth.map(|(u, p)| {
            format!(
                "Basic {}",
                super::base64_encode(format!("{u}:{p}").as_bytes())
            )
        });
        let (root, log2, stop2) = (dir.path().to_path_buf(), log.clone(), stop.clone());
        thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(c) = conn {
                    serve(c, &root, &log2, expected.as_deref());
                }
            }
        });
        HelmRepo {
            port,
            dir,
            log,
            stop,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Publish charts under `path` (`charts`): the archives and an `index.yaml` as
    /// `helm repo index` writes it (relative URLs, digests).
    pub fn publish(&self, path: &str, charts: &[ChartSrc]) -> Vec<(String, Vec<u8>)> {
        let base: PathBuf = self.dir.path().join(path);
        fs::create_dir_all(&base).unwrap();
        let mut entries: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
        let mut built = Vec::new();
        for c in charts {
            let tgz = package(c);
            let file = format!("{}-{}.tgz", c.name, c.version);
            fs::write(base.join(&file), &tgz).unwrap();
            let digest = sha256_digest(&tgz);
            let hex = digest.trim_start_matches("sha256:");
            entries.entry(c.name).or_default().push(format!(
                "  - apiVersion: v2\n    appVersion: \"{}\"\n    created: \"2026-01-01T00:00:00Z\"\n    digest: {hex}\n    name: {}\n    urls:\n    - {file}\n    version: {}\n",
                c.app_version, c.name, c.version
            ));
            built.push((file, tgz));
        }
        let mut index = String::from("apiVersion: v1\nentries:\n");
        for (name, list) in entries {
            index.push_str(&format!("  {name}:\n"));
            for e in list {
                index.push_str(&e);
            }
        }
        index.push_str("generated: \"2026-01-01T00:00:00Z\"\n");
        fs::write(base.join("index.yaml"), index).unwrap();
        built
    }

    /// Every request so far: `GET /charts/index.yaml 200`.
    pub fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// How many requests asked for `path`.
    pub fn hits(&self, path: &str) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.split(' ').nth(1) == Some(path))
            .count()
    }
}

impl Drop for HelmRepo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(mut c: TcpStream, root: &Path, log: &Mutex<Vec<String>>, auth: Option<&str>) {
    let mut reader = BufReader::new(c.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    let mut authorization = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("authorization") {
                authorization = Some(v.trim().to_string());
            }
        }
    }
    let mut parts = first.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, body, extra) = if auth.is_some() && authorization.as_deref() != auth {
        (
            401,
            Vec::new(),
            "WWW-Authenticate: Basic realm=\"charts\"\r\n",
        )
    } else if path.contains("..") {
        (400, Vec::new(), "")
    } else {
        match fs::File::open(root.join(path.trim_start_matches('/'))) {
            Ok(mut f) if root.join(path.trim_start_matches('/')).is_file() => {
                let mut b = Vec::new();
                f.read_to_end(&mut b).unwrap();
                (200, b, "")
            }
            _ => (404, b"not found".to_vec(), ""),
        }
    };
    log.lock()
        .unwrap()
        .push(format!("{method} {path} {status}"));
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
        body.len()
    );
    let _ = c.write_all(head.as_bytes());
    if method != "HEAD" {
        let _ = c.write_all(&body);
    }
}

impl Registry {
    /// Push a chart archive as Helm pushes it: an OCI manifest with Helm's config and
    /// chart-content media types, tagged with the chart's version.
    pub fn push_chart(&self, repo: &str, src: &ChartSrc, tgz: &[u8]) {
        let config = serde_json::json!({
            "apiVersion": "v2", "name": src.name, "version": src.version, "appVersion": src.app_version
        })
        .to_string()
        .into_bytes();
        let config = self.ensure_blob(repo, &config, HELM_CONFIG);
        let layer = self.ensure_blob(repo, tgz, HELM_CHART);
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "config": { "mediaType": config.media_type, "digest": config.digest, "size": config.size },
            "layers": [ { "mediaType": layer.media_type, "digest": layer.digest, "size": layer.size } ]
        })
        .to_string()
        .into_bytes();
        self.put_manifest(
            repo,
            src.version,
            "application/vnd.oci.image.manifest.v1+json",
            &manifest,
        );
    }
}
