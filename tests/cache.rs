//! `--cache-dir`: manifests and config blobs fetched by digest are kept between runs, tags
//! are asked again every time. Request counts asserted exactly against a real
//! `docker-registry` (the report's `requests`): a cold run costs what a run without the
//! cache costs; a warm one the tag lists and one manifest request (a HEAD) per candidate tag
//! and no blob; a corrupted entry is fetched again; a moved tag is followed; two runs sharing
//! the directory at once both succeed.

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
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use support::cli::imagebump;
use support::{Registry, RegistryMode};

/// The registry of tests/request_counts.rs' newest-build case: `team/build` with build-1..3
/// one image and build-4, build-5 images of their own; `team/other` three images.
fn seeded() -> Registry {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/build", &["build-1", "build-2", "build-3", "main"]);
    reg.push_tag_created("team/build", "build-4", "2024-03-01T00:00:00Z");
    reg.push_tag_created("team/build", "build-5", "2024-02-01T00:00:00Z");
    for (tag, created) in [
        ("build-1", "2024-01-02T00:00:00Z"),
        ("build-2", "2024-01-03T00:00:00Z"),
        // Not 2024-01-01, the date of team/build's shared image: that would be the same
        // image, kept once on disk.
        ("build-3", "2023-12-31T00:00:00Z"),
    ] {
        reg.push_tag_created("team/other", tag, created);
    }
    reg
}

/// A tree of references to both repositories at several current tags, and the operator's
/// configuration (newest-build over the `build-N` tags).
struct Setup {
    reg: Registry,
    dir: tempfile::TempDir,
    cfg_dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        let reg = seeded();
        let host = reg.host();
        let dir = support::newest_build_apps(&host);
        let cfg_dir = tempfile::tempdir().unwrap();
        let config = format!(
            "registries:\n  - prefix: {host}\n    url: {}\n\
             images:\n  - match: \"{host}/team/*\"\n    strategy: newest-build\n    \
             allowTags: \"regexp:^build-[0-9]+$\"\n",
            reg.base_url()
        );
        fs::write(cfg_dir.path().join("imagebump.yaml"), config).unwrap();
        Setup { reg, dir, cfg_dir }
    }

    /// `imagebump run --dry-run --output json`, with `--cache-dir cache` when given: the
    /// report, checked free of errors.
    fn run(&self, cache: Option<&Path>) -> Value {
        let mut cli = imagebump()
            .args(["run", "--dry-run"])
            .arg(self.dir.path())
            .arg("--config")
            .arg(self.cfg_dir.path().join("imagebump.yaml"))
            .args(["--output", "json"]);
        if let Some(c) = cache {
            cli = cli.arg("--cache-dir").arg(c);
        }
        let run = cli.run();
        let report = run.json();
        assert_eq!(report["errors"], json!([]), "{run}");
        report
    }
}

fn requests(tag_list_pages: usize, manifests: usize, blobs: usize) -> Value {
    json!({"tagListPages": tag_list_pages, "tokens": 0, "manifests": manifests,
        "blobs": blobs, "retries": 0})
}

/// The report without its request counts: what the run decided and would write.
fn decided(mut report: Value) -> Value {
    report.as_object_mut().unwrap().remove("requests");
    // The traffic is what differs between a cold and a warm run.
    report.as_object_mut().unwrap().remove("registryTraffic");
    report
}

fn moves(report: &Value) -> Vec<String> {
    report["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            format!(
                "{} {} -> {}",
                u["file"].as_str().unwrap(),
                u["from"],
                u["to"]
            )
        })
        .collect()
}

/// Every entry kept in the cache (manifests and configs), by path.
fn entries(cache: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for algorithm in ["sha256", "sha512"] {
        if let Ok(dir) = fs::read_dir(cache.join("v1/blobs").join(algorithm)) {
            out.extend(dir.map(|e| e.unwrap().path()));
        }
    }
    out.sort();
    out
}

// Candidates: build-1..5 of team/build and build-1..3 of team/other (8 manifest requests);
// distinct configs: 3 in team/build (build-1..3 share one) + 3 in team/other; distinct
// manifests: the same 3 + 3.
const CANDIDATES: usize = 8;
const CONFIGS: usize = 6;
const MANIFESTS: usize = 6;

#[test]
fn a_warm_cache_costs_one_head_per_candidate_and_no_blob_with_the_same_answer() {
    let s = Setup::new();
    let cache = tempfile::tempdir().unwrap();
    let without = s.run(None);
    assert_eq!(without["requests"], requests(2, CANDIDATES, CONFIGS));

    let cold = s.run(Some(cache.path()));
    assert_eq!(cold["requests"], requests(2, CANDIDATES, CONFIGS), "cold");
    assert_eq!(entries(cache.path()).len(), MANIFESTS + CONFIGS);

    let warm = s.run(Some(cache.path()));
    assert_eq!(warm["requests"], requests(2, CANDIDATES, 0), "warm");
    // The same decisions and report, byte for byte, whatever the cache held.
    assert_eq!(decided(cold.clone()), decided(without.clone()));
    assert_eq!(decided(warm.clone()), decided(without.clone()));
    assert_eq!(
        moves(&warm),
        [
            "apps/h0/values.yaml \"build-1\" -> \"build-2\"",
            "apps/h2/values.yaml \"build-3\" -> \"build-2\"",
            "apps/h3/values.yaml \"build-1\" -> \"build-2\"",
            "apps/k0/kustomization.yaml \"build-1\" -> \"build-4\"",
            "apps/k1/kustomization.yaml \"build-2\" -> \"build-4\"",
            "apps/k2/kustomization.yaml \"build-5\" -> \"build-4\"",
            "apps/k3/kustomization.yaml \"build-1\" -> \"build-4\"",
        ]
    );
}

#[test]
fn corrupted_entries_are_detected_dropped_and_fetched_again() {
    let s = Setup::new();
    let cache = tempfile::tempdir().unwrap();
    let cold = s.run(Some(cache.path()));
    let kept = entries(cache.path());
    assert_eq!(kept.len(), MANIFESTS + CONFIGS);
    // One entry truncated, one flipped, the rest overwritten with valid JSON of other bytes.
    for (i, path) in kept.iter().enumerate() {
        let mut bytes = fs::read(path).unwrap();
        match i {
            0 => bytes.truncate(bytes.len() / 2),
            1 => bytes[10] ^= 0x20,
            _ => bytes = br#"{"schemaVersion":2,"config":{"digest":"sha256:0"}}"#.to_vec(),
        }
        fs::write(path, bytes).unwrap();
    }
    let again = s.run(Some(cache.path()));
    // A HEAD per candidate, then each distinct manifest and config fetched again by digest.
    assert_eq!(
        again["requests"],
        requests(2, CANDIDATES + MANIFESTS, CONFIGS)
    );
    assert_eq!(decided(again), decided(cold));
    // Kept again, whole: the next run reads them all.
    let warm = s.run(Some(cache.path()));
    assert_eq!(warm["requests"], requests(2, CANDIDATES, 0));
}

#[test]
fn a_moved_tag_is_followed_not_answered_from_the_cache() {
    let s = Setup::new();
    let cache = tempfile::tempdir().unwrap();
    s.run(Some(cache.path()));
    // team/other:build-3 is rebuilt, now the newest of its repository.
    s.reg
        .push_tag_created("team/other", "build-3", "2024-06-01T00:00:00Z");
    let moved = s.run(Some(cache.path()));
    // The HEAD of build-3 names a digest the cache lacks: its manifest and config fetched.
    assert_eq!(moved["requests"], requests(2, CANDIDATES + 1, 1));
    let other: Vec<String> = moves(&moved)
        .into_iter()
        .filter(|m| m.starts_with("apps/h"))
        .collect();
    assert_eq!(
        other,
        [
            "apps/h0/values.yaml \"build-1\" -> \"build-3\"",
            "apps/h1/values.yaml \"build-2\" -> \"build-3\"",
            "apps/h3/values.yaml \"build-1\" -> \"build-3\"",
        ]
    );
    assert_eq!(decided(moved), decided(s.run(None)));
}

#[test]
fn two_runs_sharing_a_cache_at_once_both_succeed() {
    let s = Setup::new();
    let cache = tempfile::tempdir().unwrap();
    let expected = decided(s.run(None));
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| s.run(Some(cache.path())));
        let b = scope.spawn(|| s.run(Some(cache.path())));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(decided(a), expected);
    assert_eq!(decided(b), expected);
    // No temporary file left behind, every entry whole: the next run reads them all.
    assert_eq!(entries(cache.path()).len(), MANIFESTS + CONFIGS);
    let warm = s.run(Some(cache.path()));
    assert_eq!(warm["requests"], requests(2, CANDIDATES, 0));
    assert_eq!(decided(warm), expected);
}

#[test]
fn an_unusable_cache_directory_is_said_and_the_run_goes_on_without_it() {
    let s = Setup::new();
    let file = tempfile::NamedTempFile::new().unwrap();
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(s.dir.path())
        .arg("--config")
        .arg(s.cfg_dir.path().join("imagebump.yaml"))
        .args(["--output", "json", "--cache-dir"])
        .arg(file.path())
        .run();
    run.assert_stderr_contains("--cache-dir: cannot create");
    assert_eq!(run.json()["requests"], requests(2, CANDIDATES, CONFIGS));
}
