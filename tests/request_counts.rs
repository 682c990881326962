//! What the benchmark (docs/performance.md) checks about registry requests, asserted
//! exactly against a real `docker-registry`: one tag listing per distinct repository however
//! many references use it and, for `semver`, one manifest per distinct tag read for its
//! platforms (none with `platforms: [any]`); for `newest-build`, one manifest
//! request per candidate tag and one config request per distinct image, shared by every
//! reference and evaluation of the run.

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
use support::cli::imagebump;
use support::tree;
use support::{Registry, RegistryMode};

/// `imagebump run --dry-run DIR --output json` with `config` (imagebump.yaml text) and a
/// private, empty Docker config; the parsed report.
fn report(dir: &Path, config: &str) -> Value {
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = cfg_dir.path().join("imagebump.yaml");
    fs::write(&cfg, config).unwrap();
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(dir)
        .arg("--config")
        .arg(&cfg)
        .args(["--output", "json"])
        .run();
    let report = run.json();
    assert_eq!(report["errors"], json!([]), "{run}");
    report
}

fn requests(tag_list_pages: usize, manifests: usize, blobs: usize) -> Value {
    json!({"tagListPages": tag_list_pages, "tokens": 0, "manifests": manifests,
        "blobs": blobs, "retries": 0})
}

/// `copies` apps, each a kustomization and a values file referring to `team/a`, `team/b`
/// and `team/c` at several old tags, like the benchmark's generated repository.
fn apps(host: &str, copies: usize) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for n in 0..copies {
        files.push((
            format!("apps/k{n}/kustomization.yaml"),
            format!(
                "images:\n# a\n- name: a\n  newName: {host}/team/a\n  newTag: 1.{}.0\n\
                 - name: b\n  newName: {host}/team/b\n  newTag: 1.0.0 # b\n",
                n % 3
            ),
        ));
        files.push((
            format!("apps/h{n}/values.yaml"),
            format!(
                "c:\n  image:\n    repository: {host}/team/c\n    tag: \"1.{}.1\"  # pinned\n\
                 a:\n  image: {host}/team/a:1.0.0\n",
                n % 2
            ),
        ));
    }
    files
}

#[test]
fn semver_lists_each_repository_once_and_reads_each_tag_once_however_many_references() {
    let reg = Registry::start(RegistryMode::Plain);
    for repo in ["team/a", "team/b", "team/c"] {
        reg.push_tags(
            repo,
            &["1.0.0", "1.0.1", "1.1.0", "1.2.0", "2.0.0", "latest"],
        );
    }
    let config = format!(
        "registries:\n  - prefix: {}\n    url: {}\n",
        reg.host(),
        reg.base_url()
    );
    // For the platforms: each distinct current tag's image and the best candidate (2.0.0)
    // of each repository, one config per repository (one image under every tag). One copy:
    // a, b and c at 1.0.0, 1.0.0 and 1.0.1 (3 + 3). Forty: a at 1.0.0, 1.1.0 and 1.2.0, b at
    // 1.0.0, c at 1.0.1 and 1.1.1 (which the registry lacks: one request that finds
    // nothing) (6 + 3).
    for (copies, manifests) in [(1, 3 + 3), (40, 6 + 3)] {
        let dir = tree(&apps(&reg.host(), copies));
        let r = report(dir.path(), &config);
        assert_eq!(r["counts"]["references"], 4 * copies, "{copies} copies");
        assert_eq!(r["counts"]["updates"], 4 * copies, "{copies} copies");
        assert_eq!(r["counts"]["repositories"], 3, "{copies} copies");
        // The same three listings for 4 or 160 references.
        assert_eq!(r["requests"], requests(3, manifests, 3), "{copies} copies");
    }
    // `platforms: [any]`: the tag lists alone.
    let any = format!("{config}defaults:\n  platforms: [any]\n");
    let dir = tree(&apps(&reg.host(), 40));
    let r = report(dir.path(), &any);
    assert_eq!(r["counts"]["updates"], 160);
    assert_eq!(r["requests"], requests(3, 0, 0));
}

#[test]
fn newest_build_costs_one_manifest_per_candidate_and_one_config_per_distinct_image() {
    let reg = Registry::start(RegistryMode::Plain);
    // team/build: build-1..3 are one image (one manifest digest, one config), build-4 and
    // build-5 images of their own; `main` is not a candidate (allowTags).
    reg.push_tags("team/build", &["build-1", "build-2", "build-3", "main"]);
    reg.push_tag_created("team/build", "build-4", "2024-03-01T00:00:00Z");
    reg.push_tag_created("team/build", "build-5", "2024-02-01T00:00:00Z");
    // team/other: three distinct images.
    for (tag, created) in [
        ("build-1", "2024-01-02T00:00:00Z"),
        ("build-2", "2024-01-03T00:00:00Z"),
        ("build-3", "2024-01-01T00:00:00Z"),
    ] {
        reg.push_tag_created("team/other", tag, created);
    }
    let host = reg.host();
    let config = format!(
        "registries:\n  - prefix: {host}\n    url: {}\n\
         images:\n  - match: \"{host}/team/*\"\n    strategy: newest-build\n    \
         allowTags: \"regexp:^build-[0-9]+$\"\n",
        reg.base_url()
    );
    // Several references per repository at different current tags (so several
    // evaluations), in kustomizations and values files.
    let dir = support::newest_build_apps(&host);
    let r = report(dir.path(), &config);
    let moves: Vec<String> = r["updates"]
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
        .collect();
    assert_eq!(
        moves,
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
    // Two listings; manifests: 5 candidate tags of team/build + 3 of team/other (one GET by
    // tag each, whatever the number of references and evaluations); configs: 3 distinct
    // images in team/build (build-1..3 share one) + 3 in team/other.
    assert_eq!(r["requests"], requests(2, 5 + 3, 3 + 3));
}
