//! Every strategy and filter end to end: the real binary against a real `docker-registry`
//! on loopback, asserting the exact choice, the exact edit, and the exact number of
//! registry requests each policy costs (the JSON report's `requests`).
//!
//! The test registry is reached as `registry.test` (a `registries[]` entry sends it to the
//! loopback port), so diffs and reports do not depend on the port.

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

/// imagebump.yaml sending `registry.test` to `url`, followed by `policies` (YAML text with
/// `defaults:` and/or `images:`).
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

fn read(dir: &Path, rel: &str) -> String {
    fs::read_to_string(dir.join(rel)).unwrap()
}

/// `imagebump run DIR --dry-run --output json`: the run and its parsed report.
fn run_json(dir: &Path, cfg: &str, code: i32) -> (Run, Value) {
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(dir)
        .args(["--config", cfg, "--output", "json"])
        .code(code)
        .run();
    let report = run.json();
    (run, report)
}

/// `imagebump run DIR --dry-run` (text: the diff and the table).
fn run_text(dir: &Path, cfg: &str, code: i32) -> Run {
    imagebump()
        .args(["run", "--dry-run"])
        .arg(dir)
        .args(["--config", cfg])
        .code(code)
        .run()
}

/// One line per entry of the report's array `key`.
fn rows(report: &Value, key: &str, row: impl Fn(&Value) -> String) -> Vec<String> {
    report[key].as_array().unwrap().iter().map(row).collect()
}

/// The report's updates as `file:line from -> to`.
fn moves(report: &Value) -> Vec<String> {
    rows(report, "updates", |u| {
        format!(
            "{}:{} {} -> {}",
            u["file"].as_str().unwrap(),
            u["line"],
            u["from"].as_str().unwrap(),
            u["to"].as_str().unwrap()
        )
    })
}

/// The report's `notUpdated` as `file:line tag status: reason`.
fn not_updated(report: &Value) -> Vec<String> {
    rows(report, "notUpdated", |n| {
        format!(
            "{}:{} {} {}: {}",
            n["file"].as_str().unwrap(),
            n["line"],
            n["tag"].as_str().unwrap_or("-"),
            n["status"].as_str().unwrap(),
            n["reason"].as_str().unwrap_or("-")
        )
    })
}

/// `warnings` or `errors` of a report as `location: message`.
fn problems(report: &Value, key: &str) -> Vec<String> {
    rows(report, key, |p| {
        format!(
            "{}: {}",
            p["location"].as_str().unwrap(),
            p["message"].as_str().unwrap()
        )
    })
}

fn requests(tag_list_pages: usize, manifests: usize, blobs: usize) -> Value {
    json!({"tagListPages": tag_list_pages, "tokens": 0, "manifests": manifests,
        "blobs": blobs, "retries": 0})
}

/// `imagebump tags ARGS… --config CFG --output json`, parsed.
fn tags_json(cfg: &str, args: &[&str], code: i32) -> (Run, Value) {
    let run = imagebump()
        .arg("tags")
        .args(args)
        .args(["--config", cfg, "--output", "json"])
        .code(code)
        .run();
    let report = run.json();
    (run, report)
}

/// The candidates of a `tags` report as `tag kept: reason`.
fn verdicts(report: &Value) -> Vec<String> {
    report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{} {}: {}",
                c["tag"].as_str().unwrap(),
                if c["kept"].as_bool().unwrap() {
                    "kept"
                } else {
                    "dropped"
                },
                c["reason"].as_str().unwrap()
            )
        })
        .collect()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

// -------------------------------------------------------------------------------------------
// semver
// -------------------------------------------------------------------------------------------

const APP_TAGS: &[&str] = &[
    "1.2.0",
    "1.2.5",
    "1.2.10",
    "1.2.4-alpine",
    "1.2.9-alpine",
    "1.3.1-alpine",
    "1.4.0-rc.1",
    "2.0.0",
    "latest",
];

#[test]
fn semver_constraints_and_modes_cost_one_tag_list_per_repository_and_the_platform_checks() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/app", APP_TAGS);
    reg.push_tags("team/lib", &["0.9", "0.10", "0.11", "1.0.0"]);
    let dir = tree(&[
        (
            "a/kustomization.yaml",
            "images:\n- name: registry.test/team/app\n  newTag: 1.2.0\n",
        ),
        (
            "b/values.yaml",
            "image:\n  repository: registry.test/team/app\n  tag: 1.2.4-alpine\n",
        ),
        (
            "c/values.yaml",
            "strict:\n  image:\n    repository: registry.test/team/app\n    tag: 1.2.0 # imagebump: {semverMode: masterminds, constraint: \">=1.2.0-0 <1.3.5\"}\n\
             plain:\n  image:\n    repository: registry.test/team/app\n    tag: 1.2.0 # imagebump: {semverMode: masterminds, constraint: \"<1.3.5\"}\n\
             variant:\n  image:\n    repository: registry.test/team/app\n    tag: 1.2.0 # imagebump: {constraint: \">=1.2.0-0 <1.3.5\"}\n",
        ),
        ("d/values.yaml", "lib:\n  image: registry.test/team/lib:0.9\n"),
    ]);
    let (_c, cfg) = config(
        &reg.base_url(),
        "images:\n  - match: registry.test/team/app\n    constraint: ~1.2\n",
    );
    let (_, report) = run_json(dir.path(), &cfg, 0);
    assert_eq!(
        moves(&report),
        [
            "a/kustomization.yaml:3 1.2.0 -> 1.2.10",
            "b/values.yaml:3 1.2.4-alpine -> 1.2.9-alpine",
            // Masterminds with a pre-release in the constraint: `-alpine` is a pre-release
            // and 1.3.1-alpine is the highest version below 1.3.5.
            "c/values.yaml:4 1.2.0 -> 1.3.1-alpine",
            // Masterminds without one: pre-releases (every suffixed tag) are out.
            "c/values.yaml:8 1.2.0 -> 1.2.10",
            // Variant mode: -alpine is another variant, whatever the constraint allows.
            "c/values.yaml:12 1.2.0 -> 1.2.10",
            // Precision is kept: 0.9 moves to 0.11, not to 1.0.0.
            "d/values.yaml:2 0.9 -> 0.11",
        ]
    );
    assert_eq!(not_updated(&report), Vec::<String>::new());
    // One list per repository; for the platforms, each current tag's image (team/app:
    // 1.2.0 and 1.2.4-alpine; team/lib: 0.9) and the best candidate of each group, each
    // tag once however many groups read it (team/app: 1.2.10, 1.2.9-alpine, 1.3.1-alpine;
    // team/lib: 0.11); one config per repository (push_tags pushes one single-platform
    // image under every tag).
    assert_eq!(report["requests"], requests(2, 3 + 4, 2));
    assert_eq!(report["warnings"], json!([]));
    assert_eq!(report["errors"], json!([]));

    // A reference pinned by digest: the chosen tag's manifest, read for its platforms,
    // gives the digest to write (no HEAD).
    let d10 = reg.push_tag_created_digest("team/app", "1.2.10", "2024-05-01T00:00:00Z");
    let d0 = reg.manifest_digest("team/app", "1.2.0");
    assert_ne!(d0, d10);
    let pinned = tree(&[(
        "e/values.yaml",
        &format!("app:\n  image: registry.test/team/app:1.2.0@{d0}\n"),
    )]);
    let (_, report) = run_json(pinned.path(), &cfg, 0);
    assert_eq!(
        moves(&report),
        [format!("e/values.yaml:2 1.2.0@{d0} -> 1.2.10@{d10}")]
    );
    assert_eq!(report["requests"], requests(1, 2, 2));
}

// -------------------------------------------------------------------------------------------
// newest-build
// -------------------------------------------------------------------------------------------

/// `team/build`: `main-zzz` sorts highest by name but is older than `main-ccc`; `pr-7` is
/// the newest of all but not a `main-` tag.
fn push_builds(reg: &Registry) {
    for (tag, created) in [
        ("main-aaa", "2024-01-01T00:00:00Z"),
        ("main-bbb", "2024-03-01T00:00:00Z"),
        ("main-ccc", "2024-05-01T00:00:00Z"),
        ("main-zzz", "2024-02-01T00:00:00Z"),
        ("pr-7", "2024-06-01T00:00:00Z"),
    ] {
        reg.push_tag_created("team/build", tag, created);
    }
}

const NEWEST_MAIN: &str = "images:\n- name: registry.test/team/build\n  newTag: main-aaa # imagebump: {strategy: newest-build, allowTags: \"regexp:^main-\"}\n";
const NEWEST_ANY: &str = "images:\n- name: registry.test/team/build\n  newTag: main-aaa # imagebump: {strategy: newest-build}\n";

#[test]
fn newest_build_picks_the_newest_image_and_fetches_one_manifest_and_config_per_candidate() {
    let reg = Registry::start(RegistryMode::Plain);
    push_builds(&reg);
    let (_c, cfg) = config(&reg.base_url(), "");

    let main = tree(&[("main/kustomization.yaml", NEWEST_MAIN)]);
    let (_, first) = run_json(main.path(), &cfg, 0);
    assert_eq!(
        moves(&first),
        ["main/kustomization.yaml:3 main-aaa -> main-ccc"]
    );
    // Candidates main-bbb, main-ccc, main-zzz and the current main-aaa: one manifest GET
    // and one config blob each (four distinct images); pr-7 is filtered out by name.
    assert_eq!(first["requests"], requests(1, 4, 4));
    assert_eq!(first["warnings"], json!([]));
    let text = run_text(main.path(), &cfg, 0);
    assert_eq!(
        text.stdout,
        "diff --git a/main/kustomization.yaml b/main/kustomization.yaml\n\
         --- a/main/kustomization.yaml\n\
         +++ b/main/kustomization.yaml\n\
         @@ -1,3 +1,3 @@\n \
         images:\n \
         - name: registry.test/team/build\n\
         -  newTag: main-aaa # imagebump: {strategy: newest-build, allowTags: \"regexp:^main-\"}\n\
         +  newTag: main-ccc # imagebump: {strategy: newest-build, allowTags: \"regexp:^main-\"}\n\
         \n\
         IMAGE                     FROM      TO        LOCATION\n\
         registry.test/team/build  main-aaa  main-ccc  main/kustomization.yaml:3\n\
         \n\
         1 update(s) proposed in 1 file(s); 1 references: 1 to update; 1 repositories asked\n"
    );

    // The same registry, the same answer: nothing depends on listing or fetch order.
    let (_, again) = run_json(main.path(), &cfg, 0);
    assert_eq!(again, first);

    // Without allowTags pr-7 wins. Both references in one run share the fetched metadata:
    // five tags, five manifests, five configs.
    let both = tree(&[
        ("main/kustomization.yaml", NEWEST_MAIN),
        ("any/kustomization.yaml", NEWEST_ANY),
    ]);
    let (_, report) = run_json(both.path(), &cfg, 0);
    assert_eq!(
        moves(&report),
        [
            "any/kustomization.yaml:3 main-aaa -> pr-7",
            "main/kustomization.yaml:3 main-aaa -> main-ccc",
        ]
    );
    assert_eq!(report["requests"], requests(1, 5, 5));

    // `imagebump tags` ranks by build date, best first (main-bbb, built after main-zzz,
    // comes before it although its name sorts lower).
    let (_, tags) = tags_json(
        &cfg,
        &[
            "registry.test/team/build:main-aaa",
            "--strategy",
            "newest-build",
            "--allow-tags",
            "regexp:^main-",
        ],
        0,
    );
    assert_eq!(tags["chosen"], "main-ccc");
    assert_eq!(
        verdicts(&tags),
        [
            "main-ccc kept: chosen",
            "main-bbb kept: passed every filter, ranked below the chosen tag",
            "main-zzz kept: passed every filter, ranked below the chosen tag",
            "main-aaa dropped: the current tag",
            "pr-7 dropped: not matched by allowTags regexp:^main-",
        ]
    );
}

#[test]
fn newest_build_ties_warn_and_identical_dates_everywhere_are_skipped() {
    let reg = Registry::start(RegistryMode::Plain);
    // One image under two tags: same digest, same date.
    reg.push_tag_created("team/tied", "a-0", "2023-01-01T00:00:00Z");
    reg.push_image_for(
        "team/tied",
        &["b-1", "b-2"],
        "linux/amd64",
        "2024-01-01T00:00:00Z",
    );
    // Reproducible builds: three different images, one fixed date (each offers amd64,
    // the platform of the current one).
    for (tag, platform) in [
        ("r-1", "linux/amd64"),
        ("r-2", "linux/amd64/v2"),
        ("r-3", "linux/amd64/v3"),
    ] {
        reg.push_image_for("team/repro", &[tag], platform, "1970-01-01T00:00:00Z");
    }
    assert_ne!(
        reg.manifest_digest("team/repro", "r-1"),
        reg.manifest_digest("team/repro", "r-2")
    );
    let dir = tree(&[(
        "kustomization.yaml",
        "images:\n- name: registry.test/team/tied\n  newTag: a-0\n- name: registry.test/team/repro\n  newTag: r-1\n",
    )]);
    let (_c, cfg) = config(&reg.base_url(), "defaults:\n  strategy: newest-build\n");
    let (_, report) = run_json(dir.path(), &cfg, 0);
    assert_eq!(moves(&report), ["kustomization.yaml:3 a-0 -> b-2"]);
    assert_eq!(
        not_updated(&report),
        ["kustomization.yaml:5 r-1 skipped: all 2 candidate images and the current image have the same build date 1970-01-01T00:00:00Z (reproducible builds?), so newest-build cannot order them; use semver, numeric or a regex on the tag instead"]
    );
    assert_eq!(
        problems(&report, "warnings"),
        ["registry.test/team/tied: tags \"b-2\" and \"b-1\" share the newest build date 2024-01-01T00:00:00Z; chose the greatest name (narrow the candidates with allowTags)"]
    );
    // Six tags, six manifests; b-1 and b-2 share one config: five blobs.
    assert_eq!(report["requests"], requests(2, 6, 5));
}

// -------------------------------------------------------------------------------------------
// newest-build with platforms and multi-arch indexes
// -------------------------------------------------------------------------------------------

/// `team/multi`: indexes `1.0`, `2.0`, `4.0` (amd64 and arm64 built on different days) and a
/// single-arch amd64 image `3.0`. Returns the index digests of `1.0` and `4.0`.
fn push_multi(reg: &Registry) -> (String, String) {
    let one = reg.push_index(
        "team/multi",
        "1.0",
        &[
            ("linux/amd64", "2024-01-01T00:00:00Z"),
            ("linux/arm64", "2024-01-02T00:00:00Z"),
        ],
    );
    reg.push_index(
        "team/multi",
        "2.0",
        &[
            ("linux/amd64", "2024-06-01T00:00:00Z"),
            ("linux/arm64", "2024-02-01T00:00:00Z"),
        ],
    );
    reg.push_tag_created("team/multi", "3.0", "2024-04-01T00:00:00Z");
    let four = reg.push_index(
        "team/multi",
        "4.0",
        &[
            ("linux/amd64", "2024-05-01T00:00:00Z"),
            ("linux/arm64", "2024-03-01T00:00:00Z"),
        ],
    );
    (one, four)
}

#[test]
fn newest_build_reads_the_requested_platform_and_pins_the_index_digest() {
    let reg = Registry::start(RegistryMode::Plain);
    let (one, four) = push_multi(&reg);
    assert_eq!(reg.manifest_digest("team/multi", "4.0"), four);
    let kustomization =
        format!("images:\n- name: registry.test/team/multi\n  newTag: \"1.0\"\n  digest: {one}\n");
    let values = format!(
        "multi:\n  image:\n    repository: registry.test/team/multi\n    tag: \"1.0@{one}\"\n"
    );
    let any = "any:\n  image:\n    repository: registry.test/team/multi\n    tag: \"1.0\" # imagebump: {platforms: []}\n";
    let dir = tree(&[
        ("k/kustomization.yaml", kustomization.as_str()),
        ("h/values.yaml", values.as_str()),
        ("any/values.yaml", any),
    ]);
    let (_c, cfg) = config(
        &reg.base_url(),
        "defaults:\n  strategy: newest-build\n  platforms: [linux/arm64]\n",
    );
    let (_, report) = run_json(dir.path(), &cfg, 0);
    assert_eq!(
        moves(&report),
        [
            // Without platforms the newest build of any platform counts: 2.0's amd64.
            "any/values.yaml:4 1.0 -> 2.0",
            // arm64 dates: 1.0 Jan 2, 2.0 Feb 1, 4.0 Mar 1; 3.0 has no arm64 image.
            format!("h/values.yaml:4 1.0@{one} -> 4.0@{four}").as_str(),
            format!("k/kustomization.yaml:3 1.0@{one} -> 4.0@{four}").as_str(),
        ]
    );
    assert_eq!(
        read(dir.path(), "k/kustomization.yaml"),
        kustomization,
        "a dry run writes nothing"
    );
    // arm64 policy: four tag manifests (indexes 1.0, 2.0, 4.0 and the image 3.0), the arm64
    // child of each index (3), one config per arm64 child and 3.0's own config (4).
    // No-platform policy: the same four tag manifests (cached), plus the amd64 children of
    // the three indexes (3) and their configs (3).
    assert_eq!(report["requests"], requests(1, 10, 7));
}

#[test]
fn newest_build_arm64_only_policy_costs_one_child_and_config_per_index() {
    let reg = Registry::start(RegistryMode::Plain);
    let (one, four) = push_multi(&reg);
    let kustomization =
        format!("images:\n- name: registry.test/team/multi\n  newTag: \"1.0\"\n  digest: {one}\n");
    let dir = tree(&[("k/kustomization.yaml", &kustomization)]);
    let (_c, cfg) = config(
        &reg.base_url(),
        "defaults:\n  strategy: newest-build\n  platforms: [linux/arm64]\n",
    );
    let run = run_text(dir.path(), &cfg, 0);
    let diff = format!(
        "diff --git a/k/kustomization.yaml b/k/kustomization.yaml\n\
         --- a/k/kustomization.yaml\n\
         +++ b/k/kustomization.yaml\n\
         @@ -1,4 +1,4 @@\n \
         images:\n \
         - name: registry.test/team/multi\n\
         -  newTag: \"1.0\"\n\
         -  digest: {one}\n\
         +  newTag: \"4.0\"\n\
         +  digest: {four}\n"
    );
    assert!(run.stdout.starts_with(&diff), "{}", run.stdout);
    let (_, report) = run_json(dir.path(), &cfg, 0);
    // Tag manifests 1.0, 2.0, 3.0, 4.0; arm64 children of 1.0, 2.0, 4.0: 7 manifests.
    // Configs of the three arm64 children and of 3.0: 4 blobs. The index digest comes with
    // the manifest, so pinning it costs no extra HEAD.
    assert_eq!(report["requests"], requests(1, 7, 4));

    // `imagebump tags` explains it: 3.0 is dropped for its missing platform.
    let (_, tags) = tags_json(
        &cfg,
        &[
            "registry.test/team/multi:1.0",
            "--strategy",
            "newest-build",
            "--platform",
            "linux/arm64",
        ],
        0,
    );
    assert_eq!(tags["chosen"], "4.0");
    assert_eq!(tags["digest"], four.as_str());
    assert_eq!(
        verdicts(&tags),
        [
            "4.0 kept: chosen",
            "2.0 kept: passed every filter, ranked below the chosen tag",
            "3.0 dropped: no image for linux/arm64",
            "1.0 dropped: the current tag",
        ]
    );
}

#[test]
fn semver_with_platforms_drops_a_tag_without_the_platform_and_reads_only_what_it_needs() {
    let reg = Registry::start(RegistryMode::Plain);
    for tag in ["1.0", "2.0"] {
        reg.push_index(
            "team/plat",
            tag,
            &[
                ("linux/amd64", "2024-01-01T00:00:00Z"),
                ("linux/arm64", "2024-01-01T00:00:00Z"),
            ],
        );
    }
    reg.push_tag_created("team/plat", "3.0", "2024-02-01T00:00:00Z");
    let dir = tree(&[(
        "kustomization.yaml",
        "images:\n- name: registry.test/team/plat\n  newTag: \"1.0\" # imagebump: {platforms: [linux/arm64]}\n",
    )]);
    let (_c, cfg) = config(&reg.base_url(), "");
    let (_, report) = run_json(dir.path(), &cfg, 0);
    assert_eq!(moves(&report), ["kustomization.yaml:3 1.0 -> 2.0"]);
    // The candidates 3.0 and 2.0 (best first, one batch): two manifests; 3.0 is a single
    // image whose platform is in its config (one blob); an index lists its platforms, and
    // semver needs no build date, so no child manifest and no config of 2.0.
    assert_eq!(report["requests"], requests(1, 2, 1));
}

// -------------------------------------------------------------------------------------------
// digest
// -------------------------------------------------------------------------------------------

#[test]
fn digest_strategy_follows_the_tag_with_one_head_per_followed_tag() {
    let reg = Registry::start(RegistryMode::Plain);
    let d1 = reg.push_tag_created_digest("team/web", "latest", "2024-01-01T00:00:00Z");
    let s1 = reg.push_tag_created_digest("team/api", "stable", "2024-01-01T00:00:00Z");
    let dir = tree(&[
        (
            "a/kustomization.yaml",
            "images:\n- name: registry.test/team/web\n  newTag: latest\n",
        ),
        (
            "b/kustomization.yaml",
            &format!("images:\n- name: registry.test/team/web\n  newTag: latest\n  digest: {d1}\n"),
        ),
        (
            "c/values.yaml",
            "image:\n  repository: registry.test/team/web\n  tag: latest\n  digest: \"\"\n",
        ),
        (
            "d/values.yaml",
            &format!("api:\n  image: registry.test/team/api:stable@{s1}\n"),
        ),
    ]);
    let (_c, cfg) = config(
        &reg.base_url(),
        "images:\n  - match: registry.test/team/*\n    strategy: digest\n",
    );

    // Before anything moves: the references without a digest get today's one.
    let (_, report) = run_json(dir.path(), &cfg, 0);
    assert_eq!(
        moves(&report),
        [
            format!("a/kustomization.yaml:3 latest -> latest@{d1}"),
            format!("c/values.yaml:3 latest -> latest@{d1}"),
        ]
    );
    assert_eq!(
        not_updated(&report),
        [
            "b/kustomization.yaml:3 latest up-to-date: -",
            "d/values.yaml:2 stable up-to-date: -",
        ]
    );
    // Two distinct followed tags (team/web:latest, team/api:stable), no tag list. A
    // reference without a digest needs the tag's digest only (one HEAD for a and c); one
    // that pins a digest reads the tag's manifest and config (b, d), to compare platforms
    // with the pinned image should the tag have moved (it has not: nothing more).
    assert_eq!(report["requests"], requests(0, 3, 2));

    // A new image under `latest`.
    let d2 = reg.push_tag_created_digest("team/web", "latest", "2024-02-01T00:00:00Z");
    assert_ne!(d1, d2);
    let run = run_text(dir.path(), &cfg, 0);
    let diff = format!(
        "diff --git a/a/kustomization.yaml b/a/kustomization.yaml\n\
         --- a/a/kustomization.yaml\n\
         +++ b/a/kustomization.yaml\n\
         @@ -1,3 +1,3 @@\n \
         images:\n \
         - name: registry.test/team/web\n\
         -  newTag: latest\n\
         +  newTag: latest@{d2}\n\
         diff --git a/b/kustomization.yaml b/b/kustomization.yaml\n\
         --- a/b/kustomization.yaml\n\
         +++ b/b/kustomization.yaml\n\
         @@ -1,4 +1,4 @@\n \
         images:\n \
         - name: registry.test/team/web\n   \
         newTag: latest\n\
         -  digest: {d1}\n\
         +  digest: {d2}\n\
         diff --git a/c/values.yaml b/c/values.yaml\n\
         --- a/c/values.yaml\n\
         +++ b/c/values.yaml\n\
         @@ -1,4 +1,4 @@\n \
         image:\n   \
         repository: registry.test/team/web\n   \
         tag: latest\n\
         -  digest: \"\"\n\
         +  digest: \"{d2}\"\n"
    );
    assert!(run.stdout.starts_with(&diff), "{}", run.stdout);
    let (_, report) = run_json(dir.path(), &cfg, 0);
    assert_eq!(
        moves(&report),
        [
            format!("a/kustomization.yaml:3 latest -> latest@{d2}"),
            format!("b/kustomization.yaml:3 latest@{d1} -> latest@{d2}"),
            format!("c/values.yaml:3 latest -> latest@{d2}"),
        ]
    );
    assert_eq!(
        not_updated(&report),
        ["d/values.yaml:2 stable up-to-date: -"]
    );
    // As above, and b's tag moved: the pinned image d1 is read too (manifest and config).
    assert_eq!(report["requests"], requests(0, 4, 3));
}

// -------------------------------------------------------------------------------------------
// minAge
// -------------------------------------------------------------------------------------------

#[test]
fn min_age_skips_an_image_too_young_for_the_next_best() {
    let reg = Registry::start(RegistryMode::Plain);
    // A date far in the future is "too young" on any clock.
    for (tag, created) in [
        ("1.0.0", "2020-01-01T00:00:00Z"),
        ("1.1.0", "2020-06-01T00:00:00Z"),
        ("1.2.0", "2999-01-01T00:00:00Z"),
    ] {
        reg.push_tag_created("team/aged", tag, created);
    }
    for (tag, created) in [
        ("n-1", "2020-01-01T00:00:00Z"),
        ("n-2", "2021-01-01T00:00:00Z"),
        ("n-3", "2999-01-01T00:00:00Z"),
    ] {
        reg.push_tag_created("team/nightly", tag, created);
    }
    let dir = tree(&[(
        "kustomization.yaml",
        "images:\n- name: registry.test/team/aged\n  newTag: 1.0.0\n\
         - name: registry.test/team/nightly\n  newTag: n-1 # imagebump: {strategy: newest-build}\n",
    )]);
    let (_c, cfg) = config(&reg.base_url(), "defaults:\n  minAge: 3d\n");
    let (_, report) = run_json(dir.path(), &cfg, 0);
    assert_eq!(
        moves(&report),
        [
            "kustomization.yaml:3 1.0.0 -> 1.1.0",
            "kustomization.yaml:5 n-1 -> n-2",
        ]
    );
    // semver + minAge: the current tag's image (its platforms) and the two candidates,
    // best first, in one batch (3 manifests, 3 configs). newest-build: n-2, n-3 and the
    // current n-1 (3 + 3).
    assert_eq!(report["requests"], requests(2, 6, 6));

    let (_, tags) = tags_json(&cfg, &["registry.test/team/aged:1.0.0"], 0);
    assert_eq!(tags["chosen"], "1.1.0");
    let verdicts = verdicts(&tags);
    assert_eq!(
        verdicts[1..],
        ["1.1.0 kept: chosen", "1.0.0 dropped: the current tag"]
    );
    assert!(
        verdicts[0].starts_with("1.2.0 dropped: ")
            && verdicts[0].ends_with(", younger than minAge 3d"),
        "{verdicts:?}"
    );
}

// An image whose `created` is in the future (a build machine's wrong clock, or a bogus date)
// says nothing of its age: under `minAge` it counts from its first sighting, and with no
// record that is now, so it is dropped (not "built 0s ago", and never old).
#[test]
fn min_age_counts_a_build_date_in_the_future_from_its_first_sighting() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tag_created("team/aged", "1.0.0", "2020-01-01T00:00:00Z");
    reg.push_tag_created("team/aged", "1.2.0", "2999-01-01T00:00:00Z");
    let (_c, cfg) = config(&reg.base_url(), "defaults:\n  minAge: 3d\n");
    let (_, tags) = tags_json(&cfg, &["registry.test/team/aged:1.0.0"], 0);
    let reason = &verdicts(&tags)[0];
    assert_eq!(
        reason,
        "1.2.0 dropped: first seen now (no earlier record), younger than minAge 3d"
    );
}

// -------------------------------------------------------------------------------------------
// inline markers
// -------------------------------------------------------------------------------------------

const BROKEN: &str = "images:\n- name: registry.test/team/app\n  newTag: 1.2.0 # imagebump: {constraint: ~1.2, stratgy: semver}\n";

fn marker_tree() -> tempfile::TempDir {
    tree(&[
        (
            "pinned/kustomization.yaml",
            "images:\n- name: registry.test/team/app\n  newTag: 1.2.0 # imagebump: pin\n",
        ),
        (
            "ignored/values.yaml",
            "image:\n  repository: registry.test/team/app\n  tag: 1.2.0 # imagebump: ignore\n",
        ),
        (
            "marker/values.yaml",
            "image:\n  repository: registry.test/team/app\n  tag: 1.2.0 # imagebump: {\"constraint\": \"~1.2\"}\n",
        ),
        (
            "rule/values.yaml",
            "image:\n  repository: registry.test/team/app\n  tag: 1.2.0\n",
        ),
        ("broken/kustomization.yaml", BROKEN),
    ])
}

const MARKER_RULES: &str = "images:\n  - match: registry.test/team/app\n    constraint: ^1\n";

#[test]
fn markers_pin_ignore_and_override_rules_and_a_broken_one_spoils_only_its_reference() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/app", &["1.2.0", "1.2.7", "1.3.0", "1.4.2", "2.0.0"]);
    let dir = marker_tree();
    let (_c, cfg) = config(&reg.base_url(), MARKER_RULES);

    let (_, report) = run_json(dir.path(), &cfg, 1);
    assert_eq!(
        moves(&report),
        [
            // The marker's ~1.2 beats the rule's ^1.
            "marker/values.yaml:3 1.2.0 -> 1.2.7",
            "rule/values.yaml:3 1.2.0 -> 1.4.2",
        ]
    );
    assert_eq!(
        not_updated(&report),
        [
            "broken/kustomization.yaml:3 1.2.0 unmanaged: invalid imagebump marker",
            "ignored/values.yaml:3 1.2.0 unmanaged: ignored (images[0] (registry.test/team/app) + marker)",
            "pinned/kustomization.yaml:3 1.2.0 pinned: pinned (images[0] (registry.test/team/app) + marker)",
        ]
    );
    assert_eq!(
        problems(&report, "errors"),
        ["broken/kustomization.yaml:3:19: bad imagebump marker: unknown field `stratgy`, expected one of `strategy`, `constraint`, `semverMode`, `allowTags`, `ignoreTags`, `pattern`, `platforms`, `minAge`, `allowDowngrade`, `pin`, `ignore`, `delivery`, `automerge`, `group`, `verify`, `schedule`, `timezone`, `freeze`"]
    );
    // Pinned references are not looked up; the others share one tag list, the current
    // tag's image (1.2.0) and each group's best candidate (1.2.7 for ~1.2, 1.4.2 for ^1),
    // one config for the one image under every tag.
    assert_eq!(report["requests"], requests(1, 3, 1));

    // --write: the other files are written, the broken one stays byte-identical.
    let run = imagebump()
        .args([
            "run",
            "--write",
            dir.path().to_str().unwrap(),
            "--config",
            &cfg,
        ])
        .code(1)
        .run();
    assert!(
        run.stderr.starts_with(
            "error: broken/kustomization.yaml:3:19: bad imagebump marker: unknown field `stratgy`"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(read(dir.path(), "broken/kustomization.yaml"), BROKEN);
    assert_eq!(
        read(dir.path(), "marker/values.yaml"),
        "image:\n  repository: registry.test/team/app\n  tag: 1.2.7 # imagebump: {\"constraint\": \"~1.2\"}\n"
    );
    assert_eq!(
        read(dir.path(), "rule/values.yaml"),
        "image:\n  repository: registry.test/team/app\n  tag: 1.4.2\n"
    );
    assert_eq!(
        read(dir.path(), "pinned/kustomization.yaml"),
        "images:\n- name: registry.test/team/app\n  newTag: 1.2.0 # imagebump: pin\n"
    );
}

#[test]
fn scan_shows_each_reference_policy_and_where_it_came_from() {
    let dir = marker_tree();
    // scan asks no registry: an address nothing listens on is fine.
    let (_c, cfg) = config("http://127.0.0.1:9", MARKER_RULES);
    let run = imagebump()
        .args(["scan", dir.path().to_str().unwrap(), "--config", &cfg])
        .code(1)
        .run();
    assert_eq!(
        run.stdout,
        "LOCATION                     IMAGE                   CURRENT  POLICY                                                     STATUS\n\
         broken/kustomization.yaml:3  registry.test/team/app  1.2.0    -                                                          unmanaged: invalid imagebump marker\n\
         ignored/values.yaml:3        registry.test/team/app  1.2.0    -                                                          unmanaged: ignored (images[0] (registry.test/team/app) + marker)\n\
         marker/values.yaml:3         registry.test/team/app  1.2.0    semver ~1.2 (images[0] (registry.test/team/app) + marker)  managed\n\
         pinned/kustomization.yaml:3  registry.test/team/app  1.2.0    pin (images[0] (registry.test/team/app) + marker)          pinned\n\
         rule/values.yaml:3           registry.test/team/app  1.2.0    semver ^1 (images[0] (registry.test/team/app))             managed\n\
         \n\
         5 references in 5 files (2 managed, 1 pinned, 2 unmanaged)\n"
    );
    assert_eq!(
        run.stderr,
        "error: broken/kustomization.yaml:3:19: bad imagebump marker: unknown field `stratgy`, expected one of `strategy`, `constraint`, `semverMode`, `allowTags`, `ignoreTags`, `pattern`, `platforms`, `minAge`, `allowDowngrade`, `pin`, `ignore`, `delivery`, `automerge`, `group`, `verify`, `schedule`, `timezone`, `freeze`\n"
    );
    let report = imagebump()
        .args(["scan", dir.path().to_str().unwrap(), "--config", &cfg])
        .args(["--output", "json"])
        .code(1)
        .run()
        .json();
    let policies: Vec<(String, bool, Value)> = report["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["file"].as_str().unwrap().to_string(),
                r["managed"].as_bool().unwrap(),
                r["policy"].clone(),
            )
        })
        .collect();
    let rule = "images[0] (registry.test/team/app)";
    let marked = "images[0] (registry.test/team/app) + marker";
    assert_eq!(
        policies,
        [
            // A broken marker leaves the reference unmanaged, showing the configured policy.
            (
                "broken/kustomization.yaml",
                false,
                json!({"strategy": "semver", "constraint": "^1", "source": rule})
            ),
            (
                "ignored/values.yaml",
                false,
                json!({"strategy": "semver", "constraint": "^1", "ignore": true, "source": marked})
            ),
            (
                "marker/values.yaml",
                true,
                json!({"strategy": "semver", "constraint": "~1.2", "source": marked})
            ),
            // Held by its marker: `run` asks no registry about it.
            (
                "pinned/kustomization.yaml",
                false,
                json!({"strategy": "semver", "constraint": "^1", "pin": true, "source": marked})
            ),
            (
                "rule/values.yaml",
                true,
                json!({"strategy": "semver", "constraint": "^1", "source": rule})
            ),
        ]
        .map(|(f, m, p)| (f.to_string(), m, p))
    );
}

// -------------------------------------------------------------------------------------------
// imagebump tags
// -------------------------------------------------------------------------------------------

const EXPLAINED_TAGS: &[&str] = &[
    "1.2.0",
    "1.2.1",
    "1.2.5",
    "1.2.7",
    "1.2.9",
    "1.2.4-alpine",
    "1.2.8-rc.1",
    "1.3.0",
    "v1.2.8",
    "latest",
];

const EXPLAIN_FLAGS: &[&str] = &[
    "registry.test/team/app:1.2.1",
    "--constraint",
    "~1.2",
    "--allow-tags",
    "regexp:^(latest|[0-9])",
    "--ignore-tags",
    "*.9",
];

const EXPLAINED: &str = "\
image:   registry.test/team/app
policy:  semver ~1.2 allow regexp:^(latest|[0-9]) ignore *.9 (command line)
current: 1.2.1
chosen:  1.2.7

TAG           KEPT  REASON
1.2.7         yes   chosen
1.2.5         yes   passed every filter, ranked below the chosen tag
1.2.1         no    the current tag
v1.2.8        no    not matched by allowTags regexp:^(latest|[0-9])
latest        no    not a version
1.3.0         no    outside the constraint ~1.2
1.2.9         no    matches ignoreTags \"*.9\"
1.2.8-rc.1    no    pre-release (the constraint has no pre-release part)
1.2.4-alpine  no    a variant (the current tag has none)
1.2.0         no    not newer than the current tag
";

/// `imagebump tags EXPLAIN_FLAGS… EXTRA… --config CFG`
fn explain(cfg: &str, extra: &[&str], code: i32) -> Run {
    imagebump()
        .arg("tags")
        .args(EXPLAIN_FLAGS)
        .args(extra)
        .args(["--config", cfg])
        .code(code)
        .run()
}

#[test]
fn tags_explains_every_candidate_against_the_registry_and_offline() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/app", EXPLAINED_TAGS);
    let (_c, cfg) = config(&reg.base_url(), "");
    let online = explain(&cfg, &[], 0);
    assert_eq!(online.stderr, "");
    // Online, the best candidate's manifest is read (for its platforms): its digest is
    // shown, and the next one is not examined. Offline, platforms are not compared.
    let digest = reg.manifest_digest("team/app", "1.2.7");
    let ranked = "passed every filter, ranked below the chosen tag";
    let unexamined = "passed the tag filters; not examined further (a better tag qualified)";
    assert_eq!(
        online.stdout,
        EXPLAINED
            .replace("chosen:  1.2.7\n", &format!("chosen:  1.2.7@{digest}\n"))
            .replace(ranked, unexamined)
    );
    let online_json = explain(&cfg, &["--output", "json"], 0);
    let mut online_json: Value = serde_json::from_str(&online_json.stdout).unwrap();
    assert_eq!(online_json["digest"], json!(digest));
    online_json.as_object_mut().unwrap().remove("digest");
    assert_eq!(online_json["candidates"][1]["reason"], unexamined);
    online_json["candidates"][1]["reason"] = json!(ranked);

    // Offline: the same tags from a file (any order, comments and blank lines allowed), and
    // a registry address where nothing listens, so any request would fail the command.
    drop(reg);
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (offline_dir, offline_cfg) = config(&format!("http://127.0.0.1:{closed}"), "");
    let list = offline_dir.path().join("tags.txt");
    let mut text = String::from("# exported with crane ls\n\n");
    for t in EXPLAINED_TAGS.iter().rev() {
        text.push_str(&format!("  {t}\n"));
    }
    fs::write(&list, text).unwrap();
    let list = list.to_str().unwrap();
    let offline = explain(&offline_cfg, &["--tags-from", list], 0);
    assert_eq!(offline.stderr, "");
    assert_eq!(offline.stdout, EXPLAINED);
    let offline_json = explain(&offline_cfg, &["--tags-from", list, "--output", "json"], 0);
    let offline_json: Value = serde_json::from_str(&offline_json.stdout).unwrap();
    assert_eq!(offline_json, online_json);

    // Strategies that need image metadata cannot work from a list of names: every
    // candidate says why, nothing is chosen, one error, exit 1.
    let newest = explain(
        &offline_cfg,
        &[
            "--tags-from",
            list,
            "--strategy",
            "newest-build",
            "--output",
            "json",
        ],
        1,
    );
    let why = "image metadata needs a registry (a tag list file has names only)";
    assert_eq!(
        newest.stderr,
        format!("error: registry.test/team/app: {why}\n")
    );
    let report: Value = serde_json::from_str(&newest.stdout).unwrap();
    assert_eq!(report["chosen"], Value::Null);
    assert_eq!(report["errors"], json!([why]));
    let unavailable = format!("metadata unavailable: {why}");
    let verdicts = verdicts(&report);
    assert_eq!(
        verdicts,
        [
            "latest",
            "1.3.0",
            "1.2.8-rc.1",
            "1.2.7",
            "1.2.5",
            "1.2.4-alpine",
            "1.2.0",
        ]
        .map(|t| format!("{t} dropped: {unavailable}"))
        .into_iter()
        .chain(strings(&[
            "1.2.1 dropped: the current tag",
            "v1.2.8 dropped: not matched by allowTags regexp:^(latest|[0-9])",
            "1.2.9 dropped: matches ignoreTags \"*.9\"",
        ]))
        .collect::<Vec<_>>()
    );
}

// -------------------------------------------------------------------------------------------
// alphabetical, numeric, regex
// -------------------------------------------------------------------------------------------

#[test]
fn alphabetical_numeric_and_regex_order_tags_from_the_tag_list_alone() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags(
        "team/calver",
        &["2023-12-31", "2024-01-05", "2024-03-01", "2024-02-29"],
    );
    // By number 100 > 10 > 9, by text "9" > "100"; `abc` and `v101` are not integers.
    reg.push_tags("team/numbered", &["9", "10", "100", "abc", "v101"]);
    reg.push_tags(
        "team/flux",
        &[
            "main-abc1234-1700000000",
            "main-def5678-1700000500",
            "main-0000000-1600000000",
            "pr-12-1800000000",
            "main-fff-notanumber",
        ],
    );
    let dir = tree(&[(
        "values.yaml",
        "calver:\n  image:\n    repository: registry.test/team/calver\n    tag: 2024-01-05\n\
         numbered:\n  image:\n    repository: registry.test/team/numbered\n    tag: \"9\"\n\
         flux:\n  image:\n    repository: registry.test/team/flux\n    tag: main-abc1234-1700000000\n",
    )]);
    let (_c, cfg) = config(
        &reg.base_url(),
        "images:\n  - match: registry.test/team/calver\n    strategy: alphabetical\n\
         \x20 - match: registry.test/team/numbered\n    strategy: numeric\n\
         \x20 - match: registry.test/team/flux\n    strategy: regex\n    pattern: '^main-[0-9a-f]+-(?P<ts>[0-9]+)$'\n",
    );
    let run = run_text(dir.path(), &cfg, 0);
    assert!(
        run.stdout.starts_with(
            "diff --git a/values.yaml b/values.yaml\n\
             --- a/values.yaml\n\
             +++ b/values.yaml\n\
             @@ -1,12 +1,12 @@\n \
             calver:\n   \
             image:\n     \
             repository: registry.test/team/calver\n\
             -    tag: 2024-01-05\n\
             +    tag: 2024-03-01\n \
             numbered:\n   \
             image:\n     \
             repository: registry.test/team/numbered\n\
             -    tag: \"9\"\n\
             +    tag: \"100\"\n \
             flux:\n   \
             image:\n     \
             repository: registry.test/team/flux\n\
             -    tag: main-abc1234-1700000000\n\
             +    tag: main-def5678-1700000500\n\n"
        ),
        "{}",
        run.stdout
    );
    let (_, report) = run_json(dir.path(), &cfg, 0);
    assert_eq!(
        moves(&report),
        [
            "values.yaml:4 2024-01-05 -> 2024-03-01",
            "values.yaml:8 9 -> 100",
            "values.yaml:12 main-abc1234-1700000000 -> main-def5678-1700000500",
        ]
    );
    // Per repository: the current tag's image and the best candidate, for their
    // platforms; one config each (one image under every tag).
    assert_eq!(report["requests"], requests(3, 6, 3));
}

#[test]
fn one_head_per_tag_whatever_asks_for_its_digest() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/app", &["1.2.0"]);
    let d10 = reg.push_tag_created_digest("team/app", "1.2.10", "2024-05-01T00:00:00Z");
    let d0 = reg.manifest_digest("team/app", "1.2.0");
    // A semver reference pinned by digest moves to 1.2.10 and needs its digest; a `digest`
    // reference follows 1.2.10 itself. One HEAD answers both.
    let dir = tree(&[(
        "values.yaml",
        &format!(
            "a:\n  image: registry.test/team/app:1.2.0@{d0}\n\
             b:\n  image: registry.test/team/app:1.2.10 # imagebump: {{strategy: digest}}\n"
        ),
    )]);
    let (_c, cfg) = config(&reg.base_url(), "");
    let (_, report) = run_json(dir.path(), &cfg, 0);
    assert_eq!(
        moves(&report),
        [
            format!("values.yaml:2 1.2.0@{d0} -> 1.2.10@{d10}"),
            format!("values.yaml:4 1.2.10 -> 1.2.10@{d10}"),
        ]
    );
    // a reads 1.2.0 and 1.2.10 (manifests and configs) for their platforms, and has
    // 1.2.10's digest from its manifest; b needs 1.2.10's digest only: one HEAD.
    assert_eq!(report["requests"], requests(1, 3, 2));
}

// An empty list (`platforms: []`, which a marker writes to lift a `defaults` platform
// requirement, or `ignoreTags: []`) adds nothing to the POLICY column: no separator without
// a value, so no double space.
#[test]
fn scan_summarises_an_empty_platform_list_without_a_stray_space() {
    let dir = tree(&[(
        "values.yaml",
        "app:\n  image:\n    repository: registry.test/team/multi\n    tag: \"1.0\" # imagebump: {platforms: []}\n",
    )]);
    let (_c, cfg) = config(
        "http://127.0.0.1:9",
        "defaults:\n  strategy: newest-build\n  platforms: [linux/arm64]\n",
    );
    let run = imagebump()
        .args(["scan", dir.path().to_str().unwrap(), "--config", &cfg])
        .run();
    let row = run.stdout.lines().nth(1).unwrap();
    assert!(row.contains(" newest-build (defaults + marker) "), "{row}");
}

// -------------------------------------------------------------------------------------------
// semver: Bitnami distributions and revisions, calendar and four-part versions
// -------------------------------------------------------------------------------------------

/// A Bitnami PostgreSQL-like tag list: versions of two distributions with revisions, the
/// moving aliases, and a newer major.
const POSTGRES_TAGS: &[&str] = &[
    "15.4.0",
    "15.4.0-debian-11-r3",
    "15.4.0-debian-12-r9",
    "15.4.0-debian-12-r10",
    "15.4.0-debian-12-r11",
    "15.4.1",
    "15.4.1-alpine",
    "15.4",
    "15",
    "16.1.0-debian-12-r0",
    "latest",
];

/// `imagebump tags IMAGE [FLAGS…] --tags-from FILE` with `listed` in the file and a
/// configuration whose only registry does not listen: nothing may be asked of a registry.
fn tags_from(image: &str, flags: &[&str], listed: &[&str]) -> Run {
    let (dir, cfg) = config("http://127.0.0.1:9", "");
    let list = dir.path().join("tags.txt");
    fs::write(&list, listed.join("\n")).unwrap();
    imagebump()
        .args(["tags", image])
        .args(flags)
        .args(["--tags-from", list.to_str().unwrap(), "--config", &cfg])
        .run()
}

const POSTGRES_CONSTRAINED: &str = "\
image:   registry.test/bitnami/postgresql
policy:  semver ~15.4 (command line)
current: 15.4.0-debian-12-r10
chosen:  15.4.0-debian-12-r11

TAG                   KEPT  REASON
15.4.0-debian-12-r11  yes   chosen: same version, newer revision
15.4.0-debian-12-r10  no    the current tag
latest                no    not a version
16.1.0-debian-12-r0   no    outside the constraint ~15.4
15.4.1-alpine         no    another distribution (alpine, current debian-12)
15.4.1                no    another distribution (none, current debian-12)
15.4.0-debian-12-r9   no    not newer than the current tag
15.4.0-debian-11-r3   no    another distribution (debian-11, current debian-12)
15.4.0                no    another distribution (none, current debian-12)
15.4                  no    another distribution (none, current debian-12)
15                    no    another distribution (none, current debian-12)
";

#[test]
fn tags_explains_bitnami_distributions_and_revisions() {
    let image = "registry.test/bitnami/postgresql:15.4.0-debian-12-r10";
    // Within ~15.4 no newer version of debian-12 exists: the revision moves.
    let run = tags_from(image, &["--constraint", "~15.4"], POSTGRES_TAGS);
    assert_eq!(run.stderr, "");
    assert_eq!(run.stdout, POSTGRES_CONSTRAINED);
    // Without it the newer version of the same distribution wins, at its -r0.
    let run = tags_from(image, &[], POSTGRES_TAGS);
    let head: Vec<&str> = run.stdout.lines().take(9).collect();
    assert_eq!(
        head,
        [
            "image:   registry.test/bitnami/postgresql",
            "policy:  semver (built-in)",
            "current: 15.4.0-debian-12-r10",
            "chosen:  16.1.0-debian-12-r0",
            "",
            "TAG                   KEPT  REASON",
            "16.1.0-debian-12-r0   yes   chosen: newer version",
            "15.4.0-debian-12-r11  yes   passed every filter, ranked below the chosen tag",
            "15.4.0-debian-12-r10  no    the current tag",
        ]
    );
}

#[test]
fn tags_explains_calendar_and_four_part_shapes() {
    let run = tags_from(
        "registry.test/team/calver:2026-05-01",
        &[],
        &[
            "2026-04-30",
            "2026-05-01",
            "2026-05-10",
            "2026-06-01",
            "2026.07.01",
            "2026-07",
            "20260801",
            "latest",
        ],
    );
    assert_eq!(run.stderr, "");
    assert_eq!(
        run.stdout,
        "\
image:   registry.test/team/calver
policy:  semver (built-in)
current: 2026-05-01
chosen:  2026-06-01

TAG         KEPT  REASON
2026-06-01  yes   chosen
2026-05-10  yes   passed every filter, ranked below the chosen tag
2026-05-01  no    the current tag
latest      no    not a version
20260801    no    another shape (N, current YYYY-N-N)
2026.07.01  no    another shape (YYYY.N.N, current YYYY-N-N)
2026-07     no    another shape (YYYY-N, current YYYY-N-N)
2026-04-30  no    not newer than the current tag
"
    );
    let run = tags_from(
        "registry.test/team/tool:v1.2.3.4",
        &[],
        &[
            "v1.2.3.4",
            "v1.2.3.10",
            "v1.2.4.0",
            "v1.3.0",
            "1.3.0.0",
            "v1.3.0.0-rc.1",
        ],
    );
    assert_eq!(run.stderr, "");
    assert_eq!(
        run.stdout,
        "\
image:   registry.test/team/tool
policy:  semver (built-in)
current: v1.2.3.4
chosen:  v1.2.4.0

TAG            KEPT  REASON
v1.2.4.0       yes   chosen
v1.2.3.10      yes   passed every filter, ranked below the chosen tag
v1.2.3.4       no    the current tag
v1.3.0.0-rc.1  no    pre-release (the constraint has no pre-release part)
v1.3.0         no    another shape (vN.N.N, current vN.N.N.N)
1.3.0.0        no    another shape (N.N.N.N, current vN.N.N.N)
"
    );
}

/// A Bitnami chart's values: PostgreSQL, its metrics exporter and os-shell, written as
/// Bitnami writes them (registry, repository and tag apart).
const BITNAMI_VALUES: &str = "\
image:
  registry: registry.test
  repository: bitnami/postgresql
  tag: 15.4.0-debian-12-r10
metrics:
  image:
    registry: registry.test
    repository: bitnami/postgres-exporter
    tag: \"0.15.0-debian-12-r9\"
volumePermissions:
  image:
    registry: registry.test
    repository: bitnami/os-shell
    tag: 12-debian-12-r33
";

#[test]
fn bitnami_helm_values_move_within_their_distribution_against_a_real_registry() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("bitnami/postgresql", POSTGRES_TAGS);
    // A newer version of the same distribution, inside ~15.4: it beats -r11.
    reg.push_tags("bitnami/postgresql", &["15.4.1-debian-12-r2"]);
    reg.push_tags(
        "bitnami/postgres-exporter",
        &[
            "0.15.0-debian-12-r9",
            "0.15.0-debian-12-r10",
            "0.15.0",
            "0.16.0-debian-11-r1",
        ],
    );
    reg.push_tags(
        "bitnami/os-shell",
        &[
            "12-debian-12-r33",
            "12-debian-12-r35",
            "12",
            "11-debian-11-r90",
        ],
    );
    let dir = tree(&[("charts/db/values.yaml", BITNAMI_VALUES)]);
    let (_c, cfg) = config(
        &reg.base_url(),
        "images:\n  - match: registry.test/bitnami/postgresql\n    constraint: ~15.4\n",
    );
    let before = read(dir.path(), "charts/db/values.yaml");
    let run = run_text(dir.path(), &cfg, 0);
    assert_eq!(run.stderr, "");
    // The diff and the table exactly; the summary line after them is the report's.
    let (shown, summary) = run.stdout.rsplit_once("\n\n").unwrap();
    assert!(
        summary.starts_with("3 update(s) proposed in 1 file(s); 3 references"),
        "{summary}"
    );
    assert_eq!(
        shown,
        "\
diff --git a/charts/db/values.yaml b/charts/db/values.yaml
--- a/charts/db/values.yaml
+++ b/charts/db/values.yaml
@@ -1,14 +1,14 @@
 image:
   registry: registry.test
   repository: bitnami/postgresql
-  tag: 15.4.0-debian-12-r10
+  tag: 15.4.1-debian-12-r2
 metrics:
   image:
     registry: registry.test
     repository: bitnami/postgres-exporter
-    tag: \"0.15.0-debian-12-r9\"
+    tag: \"0.15.0-debian-12-r10\"
 volumePermissions:
   image:
     registry: registry.test
     repository: bitnami/os-shell
-    tag: 12-debian-12-r33
+    tag: 12-debian-12-r35

IMAGE                                    FROM                  TO                    LOCATION
registry.test/bitnami/postgresql         15.4.0-debian-12-r10  15.4.1-debian-12-r2   charts/db/values.yaml:4
registry.test/bitnami/postgres-exporter  0.15.0-debian-12-r9   0.15.0-debian-12-r10  charts/db/values.yaml:9
registry.test/bitnami/os-shell           12-debian-12-r33      12-debian-12-r35      charts/db/values.yaml:14"
    );
    assert_eq!(
        read(dir.path(), "charts/db/values.yaml"),
        before,
        "a dry run writes nothing"
    );
}

/// `tags IMAGE` without a tag judges every candidate as new: under `semver`, the versions
/// of the shape of the newest one the constraint and filters accept, said on `current:`.
#[test]
fn tags_without_a_tag_judges_every_candidate_as_new() {
    let listed = [
        "1.25.3",
        "1.27.0",
        "1.27.0-alpine",
        "1.27",
        "1.28.0-rc.1",
        "latest",
        "1.26.2-bookworm",
        "1.26.2",
    ];
    let plain = tags_from("registry.test/library/nginx", &[], &listed);
    insta::assert_snapshot!("tags_without_a_tag", plain.stdout);
    let constrained = tags_from(
        "registry.test/library/nginx",
        &["--constraint", "~1.26", "--allow-tags", "regexp:-bookworm$"],
        &listed,
    );
    insta::assert_snapshot!("tags_without_a_tag_constrained", constrained.stdout);
    let json = tags_from(
        "registry.test/library/nginx",
        &["--output", "json"],
        &listed,
    );
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["current"], Value::Null);
    assert_eq!(v["assumed"], "1.27.0");
    assert_eq!(v["chosen"], "1.27.0");
    let none = tags_from("registry.test/library/nginx", &[], &["latest", "main"]);
    assert!(
        none.stdout
            .contains("chosen:  none: no tag is a version the policy accepts (semver strategy)\n"),
        "{}",
        none.stdout
    );
}
