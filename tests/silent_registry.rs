//! Registries that do not answer: one that accepts connections and stays silent (a plain TCP
//! listener on a loopback port, dying with the test), closed ports, and a real
//! `docker-registry` beside them. Every command answers within `--request-timeout` (plus one
//! retry at most), says which host it waited for, and says a silent or unreachable registry
//! once, not once per reference.

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

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::cli::imagebump;
use support::{Registry, RegistryMode};

/// A listener that accepts every connection and never writes a byte. Its thread and the
/// connections it holds end when it is dropped.
struct Silent {
    port: u16,
    stop: Arc<AtomicBool>,
    held: Arc<Mutex<Vec<TcpStream>>>,
}

impl Silent {
    fn start() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("address").port();
        let stop = Arc::new(AtomicBool::new(false));
        let held = Arc::new(Mutex::new(Vec::new()));
        let (s, h) = (Arc::clone(&stop), Arc::clone(&held));
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => h.lock().unwrap().push(conn),
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Silent { port, stop, held }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Connections accepted so far.
    fn accepted(&self) -> usize {
        self.held.lock().unwrap().len()
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.held.lock().unwrap().clear();
    }
}

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("address").port()
}

/// The operator's configuration: `hosts` spoken to over plain HTTP.
fn plain_http(dir: &std::path::Path, hosts: &[String]) -> std::path::PathBuf {
    let mut yaml = String::from("registries:\n");
    for h in hosts {
        yaml.push_str(&format!("  - prefix: {h}\n    url: http://{h}\n"));
    }
    let path = dir.join("operator.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

/// A kustomization per app, each with its image at `tag`.
fn apps(images: &[&str]) -> tempfile::TempDir {
    let files: Vec<(String, String)> = images
        .iter()
        .enumerate()
        .map(|(i, image)| {
            (
                format!("apps/a{i}/kustomization.yaml"),
                format!("images:\n  - name: {image}\n    newTag: 1.0.0\n"),
            )
        })
        .collect();
    support::tree(&files)
}

#[test]
fn tags_answers_within_the_request_timeout_naming_the_host() {
    let silent = Silent::start();
    let dir = tempfile::tempdir().unwrap();
    let config = plain_http(dir.path(), &[silent.host()]);
    let run = imagebump()
        .args(["tags", &format!("{}/acme/web:1.0.0", silent.host())])
        .args(["--request-timeout", "2s", "-v", "--config"])
        .arg(&config)
        .code(1)
        .timeout(Duration::from_secs(60))
        .run();
    // One attempt: the registry never answered, so it is not asked again.
    assert!(run.elapsed < Duration::from_secs(8), "{run}");
    assert_eq!(silent.accepted(), 1, "{run}");
    let stderr = run.filtered_stderr();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[0].contains("INFO slow request host=\"127.0.0.1\" method=GET seconds=\"2.")
            && lines[0].ends_with("outcome=\"timed out\""),
        "{stderr}"
    );
    assert_eq!(
        lines[1],
        "error: 127.0.0.1:[PORT]/acme/web: http://127.0.0.1:[PORT]/v2/acme/web/tags/list?n=1000: \
         no answer within [DURATION] (hint: the registry did not answer in time: check the host \
         and any proxy or firewall between; --request-timeout sets how long each request waits)"
    );
}

#[test]
fn registry_check_answers_within_the_request_timeout() {
    let silent = Silent::start();
    let dir = tempfile::tempdir().unwrap();
    let config = plain_http(dir.path(), &[silent.host()]);
    let run = imagebump()
        .args(["registry", "check", &silent.host()])
        .args(["--config"])
        .arg(&config)
        .env("IMAGEBUMP_REQUEST_TIMEOUT", "2s")
        .code(1)
        .timeout(Duration::from_secs(60))
        .run();
    assert!(run.elapsed < Duration::from_secs(8), "{run}");
    assert_eq!(
        run.filtered_stdout(),
        "127.0.0.1:[PORT] (http://127.0.0.1:[PORT])\n  credentials: anonymous\n  auth:        \
         failed: http://127.0.0.1:[PORT]/v2/: no answer within [DURATION]\n  limits:      \
         concurrency 8\n"
    );
    assert_eq!(silent.accepted(), 1, "{run}");
}

/// Ten repositories on a silent registry cost the run about one request timeout, not ten
/// (nor ten times four attempts).
#[test]
fn a_silent_registry_costs_one_timeout_and_one_line() {
    let silent = Silent::start();
    let images: Vec<String> = (0..10)
        .map(|i| format!("{}/acme/app{i}", silent.host()))
        .collect();
    let refs: Vec<&str> = images.iter().map(String::as_str).collect();
    let tree = apps(&refs);
    let config = plain_http(tree.path(), &[silent.host()]);
    let run = imagebump()
        .args(["run", "--dry-run", "--request-timeout", "2s"])
        .arg(tree.path())
        .arg("--config")
        .arg(&config)
        .code(1)
        .timeout(Duration::from_secs(120))
        .run();
    assert!(run.elapsed < Duration::from_secs(12), "{run}");
    assert_eq!(
        run.filtered_stderr(),
        "error: registries: no registry answered: offline? proxy? (1 registries, 10 references) \
         (hint: check the network, and HTTPS_PROXY / NO_PROXY if a proxy is needed; each \
         registry's error follows)\n\
         error: 127.0.0.1:[PORT]: http://127.0.0.1:[PORT]: no answer within [DURATION]; 10 \
         repositories, 10 references not checked (hint: the registry did not answer in time: \
         check the host and any proxy or firewall between; --request-timeout sets how long \
         each request waits)\n"
    );
    let stdout = run.filtered_stdout();
    for i in 0..10 {
        let row = format!(
            "  apps/a{i}/kustomization.yaml:3: 127.0.0.1:[PORT]/acme/app{i} 1.0.0: registry did not answer\n"
        );
        assert!(stdout.contains(&row), "{stdout}");
    }
}

/// Offline: closed ports only. One summary line, then one line per registry naming its own
/// URL once; each reference's row says only that its registry is unreachable.
#[test]
fn offline_says_so_once_and_once_per_registry() {
    let (a, b) = (closed_port(), closed_port());
    // The lines are sorted by host: name the first one A.
    let (a, b) = if a.to_string() < b.to_string() {
        (a, b)
    } else {
        (b, a)
    };
    let tree = apps(&[
        &format!("127.0.0.1:{a}/acme/web"),
        &format!("127.0.0.1:{a}/acme/api"),
        &format!("127.0.0.1:{b}/acme/db"),
    ]);
    let hosts = [format!("127.0.0.1:{a}"), format!("127.0.0.1:{b}")];
    let config = plain_http(tree.path(), &hosts);
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(tree.path())
        .arg("--config")
        .arg(&config)
        .filter(&format!(":{a}\\b"), ":[PORT-A]")
        .filter(&format!(":{b}\\b"), ":[PORT-B]")
        .code(1)
        .run();
    insta::assert_snapshot!(run.filtered());
}

/// With a registry that answers beside a closed one, there is no "offline" line: the closed
/// one is said once, with its own URL, and the working one's images are decided.
#[test]
fn one_registry_down_beside_a_real_one() {
    let registry = Registry::start(RegistryMode::Plain);
    registry.push_tags("acme/ok", &["1.0.0", "1.0.1"]);
    let closed = closed_port();
    let tree = apps(&[
        &format!("{}/acme/ok", registry.host()),
        &format!("127.0.0.1:{closed}/acme/down"),
    ]);
    let hosts = [registry.host(), format!("127.0.0.1:{closed}")];
    let config = plain_http(tree.path(), &hosts);
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(tree.path())
        .arg("--config")
        .arg(&config)
        .filter(&format!(":{closed}\\b"), ":[CLOSED]")
        .code(1)
        .run();
    let stderr = run.filtered_stderr();
    assert_eq!(
        stderr,
        "error: 127.0.0.1:[CLOSED]: http://127.0.0.1:[CLOSED]: Connection refused (os error \
         111); 1 repository, 1 reference not checked (hint: check the host, or set \
         registries[].url for a mirror or a plain-HTTP registry)\n"
    );
    assert!(
        run.filtered_stdout().contains("+    newTag: 1.0.1\n"),
        "{run}"
    );
}

/// On a terminal, the progress line says what the run waits for, and for how long.
#[test]
fn the_progress_line_names_what_it_waits_for() {
    support::require_tool("script", "bsdutils");
    let silent = Silent::start();
    let tree = apps(&[&format!("{}/acme/web", silent.host())]);
    let config = plain_http(tree.path(), &[silent.host()]);
    // `script` gives the run a terminal; its output is the terminal's.
    let command = format!(
        "{} run --dry-run {} --config {} --request-timeout 4s",
        env!("CARGO_BIN_EXE_imagebump"),
        tree.path().display(),
        config.display()
    );
    let run = support::cli::Cli::program("script")
        .args(["-qec", &command, "/dev/null"])
        .env("TERM", "xterm")
        .filter(&format!(":{}\\b", silent.port), ":[SILENT]")
        .timeout(Duration::from_secs(60))
        .code(1)
        .run();
    let screen = run.filtered_stdout();
    assert!(
        screen.contains(
            "listing and choosing tags: waiting [DURATION] for 127.0.0.1:[SILENT] (tags of acme/web)"
        ),
        "{screen}"
    );
}

/// A registry that answers slowly but keeps sending: each piece of its body within the
/// request timeout, the whole body over twice as long. That is not a hang: the answer is
/// read whole.
#[test]
fn a_slow_body_that_keeps_arriving_is_read() {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = conn.read(&mut buf);
                let body = br#"{"name":"acme/web","tags":["1.0.0","1.0.1"]}"#;
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = conn.write_all(head.as_bytes());
                for piece in body.chunks(12) {
                    std::thread::sleep(Duration::from_millis(900));
                    let _ = conn.write_all(piece);
                    let _ = conn.flush();
                }
            });
        }
    });
    let host = format!("127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let config = plain_http(dir.path(), std::slice::from_ref(&host));
    let run = imagebump()
        .args(["tags", &format!("{host}/acme/web:1.0.0")])
        // This server only knows the tag list: no platform check (it would read manifests).
        .args(["--platform", "any"])
        .args(["--request-timeout", "2s", "--config"])
        .arg(&config)
        .timeout(Duration::from_secs(60))
        .run();
    // Four pieces, 0.9 s apart: longer than the request timeout in all.
    assert!(run.elapsed > Duration::from_secs(3), "{run}");
    assert!(run.stdout.contains("chosen:  1.0.1\n"), "{run}");
}
