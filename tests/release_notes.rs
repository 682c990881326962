//! Release notes in pull requests, from the user's side: a real `docker-registry` holds
//! multi-platform images carrying OCI annotations and labels, sizes and build dates; a
//! real git remote; the GitHub, GitLab and Gitea fakes receive the bodies. The body is the
//! same on the three forges (one snapshot), and the JSON report carries the same facts.

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

use support::cli::{imagebump, Run};
use support::gitea::FakeGitea;
use support::github::FakeGitHub;
use support::gitlab::FakeGitLab;
use support::{make_worktree, GitServer, Registry, RegistryMode};
use support::{OCI_CONFIG, OCI_INDEX, OCI_LAYER_TAR, OCI_MANIFEST};

/// One platform image of a test index: its platform, layer size and the labels of its
/// config.
struct Child<'a> {
    os: &'a str,
    architecture: &'a str,
    layer_bytes: usize,
    labels: serde_json::Value,
}

/// Pushes a child image per `children` (by digest) and an OCI index listing them (and a
/// BuildKit attestation entry, which is no platform) under `tag`, with `annotations`.
fn push_annotated_index(
    reg: &Registry,
    repo: &str,
    tag: &str,
    (created, annotations): (&str, serde_json::Value),
    children: &[Child],
) {
    let mut entries: Vec<serde_json::Value> = children
        .iter()
        .map(|c| {
            let (digest, size) = push_child(reg, repo, tag, created, c);
            serde_json::json!({
                "mediaType": OCI_MANIFEST, "digest": digest, "size": size,
                "platform": {"os": c.os, "architecture": c.architecture},
            })
        })
        .collect();
    let attestation = push_child(reg, repo, tag, created, &children[0]);
    entries.push(serde_json::json!({
        "mediaType": OCI_MANIFEST, "digest": attestation.0, "size": attestation.1,
        "platform": {"os": "unknown", "architecture": "unknown"},
        "annotations": {"vnd.docker.reference.type": "attestation-manifest"},
    }));
    let index = serde_json::json!({
        "schemaVersion": 2, "mediaType": OCI_INDEX,
        "manifests": entries, "annotations": annotations,
    })
    .to_string();
    reg.put_manifest(repo, tag, OCI_INDEX, index.as_bytes());
}

/// One platform image (layer of `layer_bytes`, config with `created` and labels), pushed
/// by digest; its manifest's digest and size.
fn push_child(reg: &Registry, repo: &str, tag: &str, created: &str, c: &Child) -> (String, usize) {
    let layer: Vec<u8> = format!("{repo}:{tag} {} ", c.architecture)
        .bytes()
        .cycle()
        .take(c.layer_bytes)
        .collect();
    let (layer_digest, layer_size) = reg.push_blob(repo, &layer);
    let config = serde_json::json!({
        "created": created, "os": c.os, "architecture": c.architecture,
        "config": {"Labels": c.labels},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
    })
    .to_string();
    let (config_digest, config_size) = reg.push_blob(repo, config.as_bytes());
    let manifest = serde_json::json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": OCI_LAYER_TAR, "digest": layer_digest, "size": layer_size}],
    })
    .to_string();
    let digest = support::sha256_digest(manifest.as_bytes());
    reg.put_manifest(repo, &digest, OCI_MANIFEST, manifest.as_bytes());
    (digest, manifest.len())
}

/// A date `days` days and two hours before now, as a config's `created`.
fn days_ago(days: i64) -> String {
    let t = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(days * 24 + 2);
    t.to_string()
}

/// The registry: `team/web` 1.2.0 (amd64 + arm/v7) and 1.3.0 (amd64 + s390x, a larger
/// amd64 layer, built three days ago), both annotated with their source and revision;
/// `team/db` 16.13 and 17.2, single linux/amd64 images whose only label is not a URL.
fn registry() -> Registry {
    let reg = Registry::start(RegistryMode::Plain);
    let source = "https://github.com/acme/web";
    let child = |architecture, layer_bytes, version: &str| Child {
        os: "linux",
        architecture,
        layer_bytes,
        labels: serde_json::json!({"org.opencontainers.image.version": version}),
    };
    push_annotated_index(
        &reg,
        "team/web",
        "1.2.0",
        (
            &days_ago(40),
            serde_json::json!({"org.opencontainers.image.source": source,
                "org.opencontainers.image.revision": "1111111aaaa"}),
        ),
        &[child("amd64", 4096, "v1.2.0"), child("arm", 3000, "v1.2.0")],
    );
    push_annotated_index(
        &reg,
        "team/web",
        "1.3.0",
        (
            &days_ago(3),
            serde_json::json!({"org.opencontainers.image.source": source,
                "org.opencontainers.image.revision": "2222222bbbb"}),
        ),
        &[
            child("s390x", 1000, "v1.3.0"),
            child("amd64", 6144, "v1.3.0"),
        ],
    );
    reg.push_tag_created("team/db", "16.13", "2026-01-01T00:00:00Z");
    reg.push_tag_created("team/db", "17.2", "2099-01-01T00:00:00Z");
    reg
}

/// A remote whose `apps/shop` uses web 1.2.0 and db 16.13, and `apps/blog` web 1.2.0
/// too; the imagebump.yaml sending `registry.test` to `reg`.
fn world(reg: &Registry, token: &str) -> (GitServer, tempfile::TempDir, tempfile::TempDir) {
    let work = make_worktree(&[
        (
            "apps/shop/kustomization.yaml",
            "images:\n  - name: registry.test/team/web\n    newTag: 1.2.0\n  - name: registry.test/team/db\n    newTag: \"16.13\"\n",
        ),
        (
            "apps/blog/kustomization.yaml",
            "images:\n  - name: registry.test/team/web\n    newTag: 1.2.0\n",
        ),
    ]);
    let server = GitServer::http_with_token(work.path(), "gitops", token);
    let cfg = tempfile::Builder::new()
        .prefix("imagebump-config-")
        .tempdir()
        .unwrap();
    // One pull request holds every kind of update, the major one too. The repository runs
    // web on amd64 only: 1.3.0 may drop arm.
    std::fs::write(
        cfg.path().join("imagebump.yaml"),
        format!(
            "registries:\n  - prefix: registry.test\n    url: {}\npullRequests:\n  separateMajor: false\n\
             images:\n  - match: registry.test/team/web\n    platforms: [linux/amd64]\n",
            reg.base_url()
        ),
    )
    .unwrap();
    (server, work, cfg)
}

/// A pull-request run against one forge, every update in one pull request, the JSON
/// report on stdout.
async fn run(
    server: &GitServer,
    cfg: &std::path::Path,
    forge: (&str, &str, String, String),
) -> Run {
    let (var, kind, url, repo) = forge;
    let token = match kind {
        "github" => FakeGitHub::TOKEN,
        "gitlab" => FakeGitLab::TOKEN,
        _ => FakeGitea::TOKEN,
    };
    imagebump()
        .arg("run")
        .arg(server.url())
        .arg("--config")
        .arg(cfg.join("imagebump.yaml"))
        .args(["--forge", kind, "--forge-url", &url, "--forge-repo", &repo])
        .args(["--output", "json", "--group-by", "all"])
        .env(var, token)
        .code(0)
        .run_async()
        .await
}

/// `built 2026-12-04` as `built [DATE]`: the build dates are days before the test ran.
fn dated(body: &str) -> String {
    regex::Regex::new(r"built \d{4}-\d{2}-\d{2}")
        .unwrap()
        .replace_all(body, "built [DATE]")
        .into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_forge_gets_the_release_notes_and_the_report_the_same_facts() {
    let reg = registry();
    for kind in ["github", "gitlab", "gitea"] {
        let (body, report) = match kind {
            "github" => {
                let f = FakeGitHub::start().await;
                let (server, _work, cfg) = world(&reg, FakeGitHub::TOKEN);
                let repo = format!("{}/{}", FakeGitHub::OWNER, FakeGitHub::REPO);
                let r = run(
                    &server,
                    cfg.path(),
                    ("GITHUB_TOKEN", kind, f.api_url(), repo),
                )
                .await;
                let pulls = f.pulls();
                assert_eq!(pulls.len(), 1, "{r}");
                (pulls[0].body.clone().unwrap_or_default(), r.json())
            }
            "gitlab" => {
                let f = FakeGitLab::start().await;
                let (server, _work, cfg) = world(&reg, FakeGitLab::TOKEN);
                let repo = FakeGitLab::PROJECT_PATH.to_string();
                let r = run(
                    &server,
                    cfg.path(),
                    ("GITLAB_TOKEN", kind, f.api_url(), repo),
                )
                .await;
                let pulls = f.pulls();
                assert_eq!(pulls.len(), 1, "{r}");
                (pulls[0].description.clone().unwrap_or_default(), r.json())
            }
            _ => {
                let f = FakeGitea::start().await;
                let (server, _work, cfg) = world(&reg, FakeGitea::TOKEN);
                let repo = format!("{}/{}", FakeGitea::OWNER, FakeGitea::REPO);
                let r = run(
                    &server,
                    cfg.path(),
                    ("GITEA_TOKEN", kind, f.api_url(), repo),
                )
                .await;
                let pulls = f.pulls();
                assert_eq!(pulls.len(), 1, "{r}");
                (pulls[0].body.clone(), r.json())
            }
        };
        insta::assert_snapshot!("release_notes_body", dated(&body));
        follows_the_schema(&report);
        // The tag lists; for the platforms, web 1.3.0's index (`platforms`) and db's two
        // images (the current one's platform), manifest and config each; then per image of
        // each distinct update its manifest or index, for an index one platform's
        // manifest, and a config: web twice 3, db twice 2 (web's second file adds nothing).
        assert_eq!(
            report["requests"],
            serde_json::json!({"tagListPages": 2, "tokens": 0, "manifests": 3 + 6, "blobs": 2 + 4, "retries": 0}),
            "{kind}"
        );
        let notes = &report["pullRequests"][0]["notes"];
        let created = notes[0]["created"].as_str().unwrap_or_default().to_string();
        assert_eq!(created, days_ago(3)[..10], "{kind}: {notes:#}");
        let mut notes = notes.clone();
        notes[0]["created"] = "[DATE]".into();
        insta::assert_snapshot!(
            "release_notes_report",
            serde_json::to_string_pretty(&notes).unwrap()
        );
    }
}

/// The report validates against docs/report.schema.json (the notes' fields included).
fn follows_the_schema(report: &serde_json::Value) {
    let name = "check-jsonschema";
    let validator = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("{name} is not installed: pip install check-jsonschema (.ci/run does)")
        });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.json");
    std::fs::write(&file, report.to_string()).unwrap();
    let schema = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report.schema.json");
    let check = std::process::Command::new(validator)
        .arg("--schemafile")
        .arg(&schema)
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "the report does not follow docs/report.schema.json:\n{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}

/// The registry holding `team/api` 1.0.0 and 1.1.0, whose source is
/// `https://127.0.0.1/acme/api.git`: the host the tests' git remote is served from.
fn api_registry() -> Registry {
    let reg = Registry::start(RegistryMode::Plain);
    for (tag, version) in [("1.0.0", "v1.0.0"), ("1.1.0", "v1.1.0")] {
        let child = Child {
            os: "linux",
            architecture: "amd64",
            layer_bytes: 100,
            labels: serde_json::json!({"org.opencontainers.image.version": version}),
        };
        let annotations = serde_json::json!({
            "org.opencontainers.image.source": "https://127.0.0.1/acme/api.git"
        });
        push_annotated_index(&reg, "team/api", tag, (&days_ago(1), annotations), &[child]);
    }
    reg
}

/// The release-notes block a body shows for `team/api`, its links in `style`'s shape
/// (`/compare`, `/-/compare`).
fn api_block(dash: &str) -> String {
    format!(
        "\n`registry.test/team/api` `1.0.0` → `1.1.0`: **minor**\n\
         - What changed: [changes](https://127.0.0.1/acme/api{dash}/compare/v1.0.0...v1.1.0) \
         · [releases](https://127.0.0.1/acme/api{dash}/releases)\n\
         - Age: 1 day (built [DATE])\n\
         - Platforms: unchanged\n\
         - Compressed size (`linux/amd64`): 100 B (unchanged)\n\
         - Signature: not checked\n\
         \n<details><summary>Release notes of v1&#46;1&#46;0</summary>\n\
         \nAPI 1&#46;1 (`v1.1.0`)\n\n\
         > &#35;&#35; Fixed\n\
         >\n\
         > &#45; the &#96;/health&#96; probe &#91;#12&#93;&#40;https&#58;//127&#46;0&#46;0&#46;1/acme/api/pull/12&#41;\n\
         \n</details>\n"
    )
}

/// `acme/api`'s releases on each fake, newest last; only `v1.1.0` is between the versions.
const API_RELEASES: [(&str, &str); 3] = [
    ("v1.0.0", "API 1.0"),
    ("v1.1.0", "API 1.1"),
    ("v2.0.0", "API 2"),
];

/// The text of `acme/api`'s release `tag`.
fn api_notes(tag: &str) -> &'static str {
    match tag {
        "v1.1.0" => "## Fixed\n\n- the `/health` probe [#12](https://127.0.0.1/acme/api/pull/12)",
        _ => "other",
    }
}

/// What a run on one fake left: the pull request's body, the calls that asked about
/// `acme/api` (`METHOD path query`, in order), and the run.
struct ApiRun {
    body: String,
    calls: Vec<String>,
    run: Run,
}

/// The manifest repository (deploying `team/api` 1.0.0) and the operator's configuration
/// directory (`reg` for `registry.test`).
fn api_repo(reg: &Registry) -> (tempfile::TempDir, tempfile::TempDir) {
    let work = make_worktree(&[(
        "apps/api/kustomization.yaml",
        "images:\n  - name: registry.test/team/api\n    newTag: 1.0.0\n",
    )]);
    let cfg = tempfile::Builder::new()
        .prefix("imagebump-config-")
        .tempdir()
        .unwrap();
    let text = format!(
        "registries:\n  - prefix: registry.test\n    url: {}\n",
        reg.base_url()
    );
    std::fs::write(cfg.path().join("imagebump.yaml"), text).unwrap();
    (work, cfg)
}

/// A run on `kind`'s fake, whose `acme/api` has [`API_RELEASES`] and `visibility`, for
/// [`api_repo`]'s manifest repository.
async fn api_run(reg: &Registry, kind: &str, visibility: &str) -> ApiRun {
    let (work, cfg) = api_repo(reg);
    let dirs = (work.path(), cfg.path());
    let (body, all, run) = match kind {
        "github" => on_github(dirs, visibility).await,
        "gitlab" => on_gitlab(dirs, visibility).await,
        _ => on_gitea(dirs, visibility).await,
    };
    let calls = all
        .into_iter()
        .filter(|c| c.contains("/acme/api") || c.contains("acme%2Fapi"))
        .collect();
    ApiRun {
        body: dated(&body),
        calls,
        run,
    }
}

/// What a fake's run gives: the body, every call (`METHOD path query`) and the run.
type Got = (String, Vec<String>, Run);

type Dirs<'a> = (&'a std::path::Path, &'a std::path::Path);

async fn on_github((work, cfg): Dirs<'_>, visibility: &str) -> Got {
    let f = FakeGitHub::start().await;
    for (tag, name) in API_RELEASES {
        f.add_release("acme/api", tag, name, api_notes(tag));
    }
    f.set_visibility("acme/api", visibility);
    let server = GitServer::http_with_token(work, "gitops", FakeGitHub::TOKEN);
    let repo = format!("{}/{}", FakeGitHub::OWNER, FakeGitHub::REPO);
    let run = run(&server, cfg, ("GITHUB_TOKEN", "github", f.api_url(), repo)).await;
    assert_eq!(f.pulls().len(), 1, "{run}");
    let all: Vec<String> = f
        .calls()
        .iter()
        .map(|c| format!("{} {} {:?}", c.method, c.path, c.query))
        .collect();
    let body = f.pulls()[0].body.clone().unwrap_or_default();
    (body, all, run)
}

async fn on_gitlab((work, cfg): Dirs<'_>, visibility: &str) -> Got {
    let f = FakeGitLab::start().await;
    for (tag, name) in API_RELEASES {
        f.add_release("acme/api", tag, name, api_notes(tag));
    }
    f.set_visibility("acme/api", visibility);
    let server = GitServer::http_with_token(work, "gitops", FakeGitLab::TOKEN);
    let repo = FakeGitLab::PROJECT_PATH.to_string();
    let run = run(&server, cfg, ("GITLAB_TOKEN", "gitlab", f.api_url(), repo)).await;
    assert_eq!(f.pulls().len(), 1, "{run}");
    let all: Vec<String> = f
        .calls()
        .iter()
        .map(|c| format!("{} {} {:?}", c.method, c.path, c.query))
        .collect();
    let body = f.pulls()[0].description.clone().unwrap_or_default();
    (body, all, run)
}

async fn on_gitea((work, cfg): Dirs<'_>, visibility: &str) -> Got {
    let f = FakeGitea::start().await;
    for (tag, name) in API_RELEASES {
        f.add_release("acme/api", tag, name, api_notes(tag));
    }
    f.set_visibility("acme/api", visibility);
    let server = GitServer::http_with_token(work, "gitops", FakeGitea::TOKEN);
    let repo = format!("{}/{}", FakeGitea::OWNER, FakeGitea::REPO);
    let run = run(&server, cfg, ("GITEA_TOKEN", "gitea", f.api_url(), repo)).await;
    assert_eq!(f.pulls().len(), 1, "{run}");
    let all: Vec<String> = f
        .calls()
        .iter()
        .map(|c| format!("{} {} {:?}", c.method, c.path, c.query))
        .collect();
    let body = f.pulls()[0].body.clone();
    (body, all, run)
}

/// How each forge asks about `acme/api`: its visibility, and its releases.
fn api_calls(kind: &str) -> [&'static str; 2] {
    match kind {
        "github" => [
            "GET /repos/acme/api []",
            r#"GET /repos/acme/api/releases [("per_page", "30")]"#,
        ],
        "gitlab" => [
            "GET /api/v4/projects/acme%2Fapi []",
            r#"GET /api/v4/projects/acme%2Fapi/releases [("per_page", "30")]"#,
        ],
        _ => [
            "GET /api/v1/repos/acme/api []",
            r#"GET /api/v1/repos/acme/api/releases [("limit", "30")]"#,
        ],
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_public_source_on_the_manifest_repositorys_own_forge_gets_its_releases() {
    // The remote is served from 127.0.0.1, a host no name tells the forge of: `--forge`
    // does, and a label naming a repository there gets that forge's pages, and, once the
    // forge says the repository is public, the notes of its releases between the two
    // versions, read through the forge's own client.
    let reg = api_registry();
    for kind in ["github", "gitlab", "gitea"] {
        let got = api_run(&reg, kind, "public").await;
        let dash = if kind == "gitlab" { "/-" } else { "" };
        assert!(
            got.body.contains(&api_block(dash)),
            "{kind}: {}\nnot in\n{}",
            api_block(dash),
            got.body
        );
        assert_eq!(got.calls, api_calls(kind), "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_source_that_is_not_public_gets_links_and_no_release_text() {
    // The image's publisher chooses its source label: naming a private repository on the
    // manifest repository's forge must not copy that repository's release texts (read
    // with the operator's token) into a pull request everyone who reads the manifests
    // reads. The forge is asked, its releases are not, and the body says why.
    let reg = api_registry();
    for (kind, visibility) in [
        ("github", "private"),
        ("github", "internal"),
        ("gitlab", "private"),
        ("gitlab", "internal"),
        ("gitea", "private"),
        ("gitea", "internal"),
    ] {
        let got = api_run(&reg, kind, visibility).await;
        let dash = if kind == "gitlab" { "/-" } else { "" };
        let links = api_block(dash);
        let head = links.split("\n<details>").next().unwrap();
        let expected =
            format!("{head}- Release notes: not read, the source repository is not public\n");
        assert!(
            got.body.contains(&expected),
            "{kind} {visibility}: {expected}\nnot in\n{}",
            got.body
        );
        assert!(
            !got.body.contains("API 1.1") && !got.body.contains("health"),
            "{kind} {visibility}: {}",
            got.body
        );
        assert_eq!(got.calls, api_calls(kind)[..1], "{kind} {visibility}");
        let notes = &got.run.json()["pullRequests"][0]["notes"][0];
        assert_eq!(
            notes["releaseNotesNotRead"], "the source repository is not public",
            "{kind} {visibility}: {notes:#}"
        );
        assert!(notes.get("releaseNotes").is_none(), "{kind}: {notes:#}");
    }
}
