//! Multi-arch safety end to end: the real binary against a real `docker-registry` holding
//! multi-platform OCI indexes (with BuildKit attestation entries): a candidate must offer
//! every platform the current version offers, `platforms` narrows that to what the
//! repository runs, and the `digest` strategy moves only when an image the repository runs
//! changed. Exact choices, reasons, warnings and registry requests.

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

use serde_json::{json, Value};
use support::cli::{imagebump, Run};
use support::tree;
use support::{Registry, RegistryMode};

const HOST: &str = "registry.test";
const JAN: &str = "2024-01-01T00:00:00Z";
const FEB: &str = "2024-02-01T00:00:00Z";
const MAR: &str = "2024-03-01T00:00:00Z";

/// imagebump.yaml sending `registry.test` to `url`, followed by `policies`.
fn config(url: &str, policies: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("imagebump.yaml");
    fs::write(
        &path,
        format!("registries:\n  - prefix: {HOST}\n    url: {url}\n{policies}"),
    )
    .unwrap();
    let p = path.to_string_lossy().to_string();
    (dir, p)
}

/// `imagebump run DIR --dry-run --output json`, parsed.
fn run_json(dir: &Path, cfg: &str) -> Value {
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(dir)
        .args(["--config", cfg, "--output", "json"])
        .run();
    run.json()
}

/// `imagebump tags IMAGE --config CFG` (text).
fn tags(cfg: &str, image: &str) -> Run {
    imagebump().args(["tags", image, "--config", cfg]).run()
}

fn requests(tag_list_pages: usize, manifests: usize, blobs: usize) -> Value {
    json!({"tagListPages": tag_list_pages, "tokens": 0, "manifests": manifests,
        "blobs": blobs, "retries": 0})
}

/// The report's updates as `file from -> to`, its statuses and its warnings.
fn summary(report: &Value) -> (Vec<String>, Vec<String>) {
    let moves = report["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            let to = match u["digest"].as_str() {
                Some(d) => format!("{}@{d}", u["to"].as_str().unwrap()),
                None => u["to"].as_str().unwrap().to_string(),
            };
            format!(
                "{} {} -> {to}",
                u["file"].as_str().unwrap(),
                u["from"].as_str().unwrap()
            )
        })
        .collect();
    let warnings = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["message"].as_str().unwrap().to_string())
        .collect();
    (moves, warnings)
}

/// `team/web`: 1.0.0 and 1.1.0 for amd64 and arm64, 1.2.0 for amd64 only; each index
/// with an attestation entry (`unknown/unknown`), which is no platform. 1.1.0's digest.
fn push_web(reg: &Registry) -> String {
    let both = |created| [("linux/amd64", created), ("linux/arm64", created)];
    reg.push_index_attested("team/web", "1.0.0", &both(JAN));
    let kept = reg.push_index_attested("team/web", "1.1.0", &both(FEB));
    reg.push_index_attested("team/web", "1.2.0", &[("linux/amd64", MAR)]);
    kept
}

#[test]
fn a_newer_tag_that_drops_a_platform_is_skipped_for_one_that_keeps_it() {
    let reg = Registry::start(RegistryMode::Plain);
    let kept = push_web(&reg);
    let dir = tree(&[
        (
            "default/kustomization.yaml",
            "images:\n- name: registry.test/team/web\n  newTag: 1.0.0\n",
        ),
        (
            "amd64/values.yaml",
            "web:\n  image:\n    repository: registry.test/team/web\n    tag: 1.0.0 # imagebump: {platforms: [linux/amd64]}\n",
        ),
        (
            "any/values.yaml",
            "web:\n  image:\n    repository: registry.test/team/web\n    tag: 1.0.0 # imagebump: {platforms: [any]}\n",
        ),
    ]);
    let (_c, cfg) = config(&reg.base_url(), "");
    let report = run_json(dir.path(), &cfg);
    assert_eq!(report["errors"], json!([]));
    assert_eq!(
        summary(&report),
        (
            vec![
                // `platforms` lists what runs: only amd64 is required.
                "amd64/values.yaml 1.0.0 -> 1.2.0".to_string(),
                "any/values.yaml 1.0.0 -> 1.2.0".to_string(),
                // 1.2.0 lacks arm64, which 1.0.0 offers; its attestation entry is no platform.
                "default/kustomization.yaml 1.0.0 -> 1.1.0".to_string(),
            ],
            vec![]
        )
    );
    // One listing; the current version's index (once), and the two candidates' indexes
    // (one batch, best first), shared with the amd64 policy; `any` asks for nothing more.
    assert_eq!(report["requests"], requests(1, 3, 0));
    let run = tags(&cfg, "registry.test/team/web:1.0.0");
    // Best first: 1.2.0 is examined and dropped, then 1.1.0 chosen.
    assert_eq!(
        run.stdout,
        format!(
            "image:   registry.test/team/web\npolicy:  semver (built-in)\ncurrent: 1.0.0\n\
             chosen:  1.1.0@{kept}\n\nTAG    KEPT  REASON\n\
             1.2.0  no    lacks linux/arm64 that 1.0.0 offers\n\
             1.1.0  yes   chosen\n\
             1.0.0  no    the current tag\n"
        )
    );
    assert_eq!(run.stderr, "");
}

#[test]
fn a_current_version_the_registry_lacks_requires_nothing_with_a_warning() {
    let reg = Registry::start(RegistryMode::Plain);
    push_web(&reg);
    let dir = tree(&[(
        "kustomization.yaml",
        "images:\n- name: registry.test/team/web\n  newTag: 0.9.0\n",
    )]);
    let (_c, cfg) = config(&reg.base_url(), "");
    let report = run_json(dir.path(), &cfg);
    assert_eq!(report["errors"], json!([]));
    assert_eq!(
        summary(&report),
        (
            vec!["kustomization.yaml 0.9.0 -> 1.2.0".to_string()],
            vec!["the current version's platforms are not compared (0.9.0: not found in the registry); list the platforms the repository runs in `platforms`".to_string()]
        )
    );
    // The listing and the one manifest request that found nothing.
    assert_eq!(report["requests"], requests(1, 1, 0));
}

/// `team/edge:latest` for amd64 and s390x built on `amd64` and `s390x`; its index digest.
fn push_edge(reg: &Registry, amd64: &str, s390x: &str) -> String {
    reg.push_index_attested(
        "team/edge",
        "latest",
        &[("linux/amd64", amd64), ("linux/s390x", s390x)],
    )
}

#[test]
fn digest_moves_only_when_a_platform_the_repository_runs_changed() {
    let reg = Registry::start(RegistryMode::Plain);
    let old = push_edge(&reg, JAN, JAN);
    let kustomization =
        format!("images:\n- name: registry.test/team/edge\n  newTag: latest\n  digest: {old}\n");
    let dir = tree(&[("kustomization.yaml", kustomization.as_str())]);
    let amd64 = "defaults:\n  strategy: digest\n  platforms: [linux/amd64]\n";
    let (_a, runs_amd64) = config(&reg.base_url(), amd64);
    let (_d, every) = config(&reg.base_url(), "defaults:\n  strategy: digest\n");
    let pinned = format!("registry.test/team/edge:latest@{old}");

    // Only s390x is rebuilt: nothing the repository runs changes.
    let s390x = push_edge(&reg, JAN, FEB);
    let report = run_json(dir.path(), &runs_amd64);
    assert_eq!(summary(&report), (vec![], vec![]));
    assert_eq!(report["counts"]["upToDate"], 1, "{report}");
    // The tag's index and the pinned one.
    assert_eq!(report["requests"], requests(0, 2, 0));
    let run = tags(&runs_amd64, &pinned);
    assert_eq!(
        run.stdout,
        "image:   registry.test/team/edge\npolicy:  digest linux/amd64 (defaults)\ncurrent: latest\n\
         chosen:  none (nothing beats the current tag)\n\nTAG     KEPT  REASON\n\
         latest  no    only linux/s390x changed; the images for linux/amd64 are the same\n"
    );
    // Without `platforms`, any change counts.
    let report = run_json(dir.path(), &every);
    assert_eq!(
        summary(&report).0,
        [format!("kustomization.yaml latest@{old} -> latest@{s390x}")]
    );

    // amd64 rebuilt: it moves.
    let amd = push_edge(&reg, FEB, FEB);
    let report = run_json(dir.path(), &runs_amd64);
    assert_eq!(
        summary(&report).0,
        [format!("kustomization.yaml latest@{old} -> latest@{amd}")]
    );

    // A rebuild without s390x is not pinned where s390x runs (no `platforms`).
    reg.push_index_attested("team/edge", "latest", &[("linux/amd64", MAR)]);
    let report = run_json(dir.path(), &every);
    assert_eq!(summary(&report), (vec![], vec![]));
    let run = tags(&every, &pinned);
    assert_eq!(
        run.stdout,
        "image:   registry.test/team/edge\npolicy:  digest (defaults)\ncurrent: latest\n\
         chosen:  none (nothing beats the current tag)\n\nTAG     KEPT  REASON\n\
         latest  no    lacks linux/s390x that the pinned image offers\n"
    );
}
