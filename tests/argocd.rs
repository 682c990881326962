//! Argo CD: an app-of-apps repository configured for argocd-image-updater
//! (fixtures/argocd) gets, from one run against a real registry, exactly the files in
//! fixtures/argocd/expected, and nothing else changes.

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;
use support::{Registry, RegistryMode};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/argocd")
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .to_string();
                out.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    out
}

fn copy_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, bytes) in snapshot(&fixture().join("repo")) {
        let dest = dir.path().join(&rel);
        fs::create_dir_all(dest.parent().unwrap()).unwrap();
        fs::write(dest, bytes).unwrap();
    }
    dir
}

/// Seed from registry.txt: `repo TAG[@CREATED][=PLATFORM[,PLATFORM]] ...` (see the fixture's
/// README): plain tags share one image; a date makes the tag its own image; platforms
/// make an index (or a single-platform image).
fn seed(reg: &Registry) {
    let listing = fs::read_to_string(fixture().join("registry.txt")).unwrap();
    for line in listing.lines().filter(|l| !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let repo = words.next().unwrap();
        let mut plain = Vec::new();
        for token in words {
            let (tag_date, platforms) = match token.split_once('=') {
                Some((t, p)) => (t, p.split(',').collect::<Vec<_>>()),
                None => (token, Vec::new()),
            };
            let (tag, created) = match tag_date.split_once('@') {
                Some((t, c)) => (t, Some(c)),
                None => (tag_date, None),
            };
            match (created, platforms.as_slice()) {
                (None, []) => plain.push(tag),
                (Some(c), []) => reg.push_tag_created(repo, tag, c),
                (c, [p]) => {
                    reg.push_image_for(repo, &[tag], p, c.unwrap_or("2024-01-01T00:00:00Z"));
                }
                (c, ps) => {
                    let c = c.unwrap_or("2024-01-01T00:00:00Z");
                    let entries: Vec<(&str, &str)> = ps.iter().map(|p| (*p, c)).collect();
                    reg.push_index(repo, tag, &entries);
                }
            }
        }
        if !plain.is_empty() {
            reg.push_tags(repo, &plain);
        }
    }
}

fn config(reg: &Registry) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("imagebump.yaml");
    fs::write(
        &path,
        format!(
            "registries:\n  - prefix: registry.test\n    url: {}\n",
            reg.base_url()
        ),
    )
    .unwrap();
    let p = path.to_string_lossy().to_string();
    (dir, p)
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn imagebump(args: &[&str]) -> Run {
    let out = Command::cargo_bin("imagebump")
        .unwrap()
        .args(args)
        .env_remove("IMAGEBUMP_CONFIG")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).to_string(),
        stderr: String::from_utf8_lossy(&out.stderr).to_string(),
    }
}

#[test]
fn writes_exactly_what_argocd_image_updater_would_without_its_bugs() {
    let reg = Registry::start(RegistryMode::Plain);
    seed(&reg);
    let (_c, cfg) = config(&reg);
    let repo = copy_repo();
    let dir = repo.path().to_str().unwrap();
    let before = snapshot(repo.path());

    let dry = imagebump(&["run", dir, "--config", &cfg, "--dry-run"]);
    assert_eq!(dry.code, 0, "{}\n{}", dry.stdout, dry.stderr);
    assert_eq!(snapshot(repo.path()), before, "a dry run writes nothing");

    let write = imagebump(&["run", dir, "--config", &cfg, "--write"]);
    assert_eq!(write.code, 0, "{}\n{}", write.stdout, write.stderr);
    let after = snapshot(repo.path());
    let expected = snapshot(&fixture().join("expected"));
    for (rel, want) in &expected {
        let got = after
            .get(rel)
            .unwrap_or_else(|| panic!("{rel} was not written\n{}", dry.stdout));
        assert_eq!(
            String::from_utf8_lossy(got),
            String::from_utf8_lossy(want),
            "{rel}"
        );
    }
    for (rel, bytes) in &after {
        if !expected.contains_key(rel) {
            assert_eq!(
                Some(bytes),
                before.get(rel),
                "{rel} changed or appeared:\n{}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    // A second run finds nothing to do.
    let again = imagebump(&["run", dir, "--config", &cfg, "--output", "json"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let report: Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(report["counts"]["updates"], 0, "{}", again.stdout);
}

#[test]
fn scan_groups_references_by_app_and_says_where_values_go() {
    let run = imagebump(&["scan", fixture().join("repo").to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("app team-a/batch\n"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("managed, writes apps/batch/.argocd-source-team-a_batch.yaml"),
        "{}",
        run.stdout
    );
    // Settings without a cluster meaning are explained, not ignored.
    assert!(
        run.stderr.contains("write-back-method is argocd"),
        "{}",
        run.stderr
    );
}
