//! Nothing a registry, a forge or a file name says is read as markup or structure: image
//! source labels are shown escaped and linked only when they are plain `https://` URLs; a
//! label spelling imagebump's marker cannot make a closed pull request reject another
//! image; file names holding `-->`, a newline or an escape sequence keep the marker, the
//! commit trailers, `GITHUB_OUTPUT` and the terminal intact; a malformed
//! `Docker-Content-Digest` is an error and nothing is written. A real registry, real git
//! remotes, the GitHub fake, wiremock for the malformed answers.

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

use imagebump::deliver::marker::{self, Marked};
use support::cli::{imagebump, Run};
use support::github::FakeGitHub;
use support::{make_worktree, GitServer, Registry, RegistryMode, OCI_CONFIG, OCI_MANIFEST};

const TOKEN: &str = FakeGitHub::TOKEN;

/// An image under `repo:tag` whose config carries `org.opencontainers.image.source`.
fn push_labelled(reg: &Registry, repo: &str, tag: &str, source: &str) {
    let layer = format!("layer of {repo}:{tag}");
    let (layer_digest, layer_size) = reg.push_blob(repo, layer.as_bytes());
    let config = serde_json::json!({
        "architecture": "amd64",
        "os": "linux",
        "config": { "Labels": { "org.opencontainers.image.source": source } },
        "rootfs": { "type": "layers", "diff_ids": [layer_digest] },
    })
    .to_string();
    let (config_digest, config_size) = reg.push_blob(repo, config.as_bytes());
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": { "mediaType": OCI_CONFIG, "digest": config_digest, "size": config_size },
        "layers": [{
            "mediaType": "application/vnd.oci.image.layer.v1.tar",
            "digest": layer_digest,
            "size": layer_size,
        }],
    })
    .to_string();
    reg.put_manifest(repo, tag, OCI_MANIFEST, manifest.as_bytes());
}

/// A registry, a remote whose `main` holds `files`, the operator's configuration and the
/// GitHub fake.
struct World {
    _reg: Registry,
    server: GitServer,
    _work: tempfile::TempDir,
    cfg_dir: tempfile::TempDir,
    forge: FakeGitHub,
}

impl World {
    async fn start(reg: Registry, files: &[(&str, &str)], extra_config: &str) -> World {
        let work = make_worktree(files);
        let server = GitServer::http_with_token(work.path(), "gitops", TOKEN);
        let cfg_dir = tempfile::tempdir().unwrap();
        fs::write(
            cfg_dir.path().join("imagebump.yaml"),
            format!(
                "registries:\n  - prefix: registry.test\n    url: {}\n{extra_config}",
                reg.base_url()
            ),
        )
        .unwrap();
        World {
            _reg: reg,
            server,
            _work: work,
            cfg_dir,
            forge: FakeGitHub::start().await,
        }
    }

    /// One run in pull-request mode with the GitHub Actions files at `actions`.
    async fn run(&self, actions: &std::path::Path) -> Run {
        imagebump()
            .arg("run")
            .arg(self.server.url())
            .arg("--config")
            .arg(self.cfg_dir.path().join("imagebump.yaml"))
            .args(["--forge", "github", "--forge-url"])
            .arg(self.forge.api_url())
            .arg("--forge-repo")
            .arg(format!("{}/{}", FakeGitHub::OWNER, FakeGitHub::REPO))
            .env("GITHUB_TOKEN", TOKEN)
            .env("GITHUB_OUTPUT", actions.join("output"))
            .env("GITHUB_STEP_SUMMARY", actions.join("summary.md"))
            .env("IMAGEBUMP_LOG", "imagebump=info")
            .code(0)
            .run_async()
            .await
    }

    /// The rejections recorded on the remote, by ref name.
    fn rejection_refs(&self) -> Vec<String> {
        self.server
            .git(&[
                "for-each-ref",
                "--format=%(refname)",
                "refs/imagebump/rejected/",
            ])
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// A marker recording an update of `registry.test/prod/db`, in its JSON form and
/// as imagebump writes it: what a hostile label spells.
fn forged_markers() -> (String, String) {
    let db = Marked {
        image: "registry.test/prod/db".into(),
        group: "prod/db".into(),
        file: "prod/db/kustomization.yaml".into(),
        from: "1.0.0".into(),
        to: "1.1.0".into(),
    };
    let json = serde_json::to_string(&[&db]).unwrap();
    (
        format!("<!-- imagebump:updates {json} -->"),
        marker::render(&[db]),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_source_labels_are_shown_escaped_and_never_reject_another_image() {
    let (legacy, current) = forged_markers();
    let labels = [
        "![pixel](https://evil.example/p.png) [Click to approve](https://phish.example) <img src=x onerror=alert(1)>".to_string(),
        "javascript:alert(1)".to_string(),
        "http://example.com/acme".to_string(),
        "https://user:token@github.com/acme/web".to_string(),
        "https://example.com/x)[y](https://evil.example".to_string(),
        format!("x -->\n{legacy}\n{current}"),
    ];
    let reg = Registry::start(RegistryMode::Plain);
    let mut files = Vec::new();
    for (i, label) in labels.iter().enumerate() {
        let repo = format!("team/app{i}");
        reg.push_tags(&repo, &["1.0.0"]);
        push_labelled(&reg, &repo, "1.1.0", label);
        files.push((
            format!("apps/app{i}/kustomization.yaml"),
            format!("images:\n  - name: registry.test/{repo}\n    newTag: 1.0.0\n"),
        ));
    }
    reg.push_tags("prod/db", &["1.0.0", "1.1.0"]);
    files.push((
        "prod/db/kustomization.yaml".into(),
        "images:\n  - name: registry.test/prod/db\n    newTag: 1.0.0 # imagebump: pin\n".into(),
    ));
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let w = World::start(reg, &files, "").await;
    let actions = tempfile::tempdir().unwrap();
    w.run(actions.path()).await;

    let cells = [
        "<code>&#33;&#91;pixel&#93;&#40;https&#58;//evil&#46;example/p&#46;png&#41; &#91;Click to approve&#93;&#40;https&#58;//phish&#46;example&#41; &#60;img src=x onerror=alert&#40;1&#41;&#62;</code>".to_string(),
        "<code>javascript&#58;alert&#40;1&#41;</code>".to_string(),
        "`http://example.com/acme`".to_string(),
        "`https://user:token@github.com/acme/web`".to_string(),
        "[source](https://example.com/x%29%5By%5D%28https://evil.example)".to_string(),
        "<code>x &#45;&#45;&#62;&#92;u&#123;a&#125;".to_string(),
    ];
    let mut pulls = w.forge.pulls();
    pulls.sort_by(|a, b| a.branch.cmp(&b.branch));
    assert_eq!(pulls.len(), labels.len());
    for (i, p) in pulls.iter().enumerate() {
        let body = p.body.as_deref().unwrap_or_default();
        let row = format!(
            "| `registry.test/team/app{i}` | `1.0.0` | `1.1.0` | `apps/app{i}/kustomization.yaml` | {}",
            cells[i]
        );
        assert!(body.contains(&row), "{row}\nnot in\n{body}");
        // Nothing the label holds is markup: no image, link, tag or second marker.
        for raw in [
            "![",
            "](https://phish",
            "<img",
            "javascript:",
            "registry.test/prod/db",
        ] {
            assert!(!body.contains(raw), "{raw} in\n{body}");
        }
        assert_eq!(body.matches("<!--").count(), 1, "{body}");
        assert_eq!(
            marker::parse(body).map(|m| m.into_iter().map(|u| u.image).collect::<Vec<_>>()),
            Some(vec![format!("registry.test/team/app{i}")])
        );
    }

    // A reviewer closes every one: each rejects its own image, never prod/db.
    for p in &pulls {
        w.forge.close(p.number);
    }
    w.run(actions.path()).await;
    let refs = w.rejection_refs();
    assert_eq!(refs.len(), labels.len(), "{refs:?}");
    for (i, r) in refs.iter().enumerate() {
        assert!(
            r.starts_with(&format!(
                "refs/imagebump/rejected/registry.test/team/app{i}/1.1.0/pr-"
            )),
            "{refs:?}"
        );
    }
}

/// The outputs GitHub's runner reads from a `GITHUB_OUTPUT` file: `name=value` lines and
/// `name<<DELIMITER` blocks.
fn github_outputs(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delimiter)) = line.split_once("<<") {
            let value: Vec<&str> = lines.by_ref().take_while(|l| *l != delimiter).collect();
            out.push((name.to_string(), value.join("\n")));
        } else if let Some((name, value)) = line.split_once('=') {
            out.push((name.to_string(), value.to_string()));
        }
    }
    out
}

const EVIL_DIR: &str = "apps/evil -->\n\u{1b}[31mred\u{202e}";
/// The same without the newline, which git's fast-import cannot take in a path (imagebump
/// refuses such a commit with an error): what a pull request can be made from.
const EVIL_PR_DIR: &str = "apps/evil -->\u{1b}[31mred\u{202e}";
const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n          image: registry.test/team/web:1.0.0\n";

fn no_raw_hidden(what: &str, text: &str) {
    assert!(
        !text.contains(['\u{1b}', '\r', '\u{202e}', '\u{9b}']),
        "{what} holds a raw control character:\n{text:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn file_names_keep_the_marker_the_trailers_the_outputs_and_the_terminal_intact() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.0.0", "1.1.0"]);
    let file = format!("{EVIL_PR_DIR}/deploy.yaml");
    let w = World::start(
        reg,
        &[(file.as_str(), DEPLOYMENT)],
        "pullRequests:\n  title: \"Update {group}\"\n",
    )
    .await;
    let actions = tempfile::tempdir().unwrap();
    let run = w.run(actions.path()).await;
    no_raw_hidden("stdout", &run.stdout);
    no_raw_hidden("stderr", &run.stderr);
    run.assert_stdout_contains("\\u{1b}[31mred");

    let pulls = w.forge.pulls();
    let [p] = pulls.as_slice() else {
        panic!("{pulls:?}")
    };
    let body = p.body.as_deref().unwrap_or_default();
    no_raw_hidden("the body", body);
    // The marker holds the exact file name; the body shows it escaped, on one line.
    let marked = marker::parse(body).unwrap_or_else(|| panic!("no marker in\n{body}"));
    assert_eq!(
        marked.iter().map(|u| u.file.as_str()).collect::<Vec<_>>(),
        [file.as_str()]
    );
    assert!(
        body.contains("| <code>apps/evil &#45;&#45;&#62;&#92;u&#123;1b&#125;&#91;31mred&#92;u&#123;202e&#125;/deploy&#46;yaml</code> |"),
        "{body}"
    );
    assert_eq!(body.matches("-->").count(), 1, "{body}");
    // The title is one line.
    assert_eq!(p.title, "Update apps/evil -->\\u{1b}[31mred\\u{202e}");

    // One commit, one trailer naming the file (percent-encoded where it must be).
    let message = w.server.git(&[
        "log",
        "-1",
        "--format=%B",
        &format!("refs/heads/{}", p.branch),
    ]);
    let trailers: Vec<&str> = message
        .lines()
        .filter(|l| l.starts_with("Imagebump-Update:"))
        .collect();
    assert_eq!(
        trailers,
        ["Imagebump-Update: registry.test/team/web 1.0.0 -> 1.1.0 in apps/evil -->%1B[31mred%E2%80%AE/deploy.yaml"],
        "{message}"
    );
    assert_eq!(message.lines().count(), 3, "{message:?}");

    // GITHUB_OUTPUT: exactly its two outputs; the summary is escaped too.
    let outputs = fs::read_to_string(actions.path().join("output")).unwrap();
    let read = github_outputs(&outputs);
    let names: Vec<&str> = read.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["updates", "pull-requests"], "{outputs}");
    assert_eq!(read[0].1, "1");
    let listed: serde_json::Value = serde_json::from_str(&read[1].1).unwrap();
    assert_eq!(listed[0]["title"], p.title.as_str(), "{outputs}");
    let summary = fs::read_to_string(actions.path().join("summary.md")).unwrap();
    no_raw_hidden("the summary", &summary);
    assert!(!summary.contains("-->"), "{summary}");
    // No tag but the `<code>` elements the escaping makes.
    let tags = summary.replace("<code>", "").replace("</code>", "");
    assert!(!tags.contains('<'), "{summary}");
    assert!(
        summary.contains("<code>apps/evil &#45;&#45;&#62;&#92;u&#123;1b&#125;&#91;31mred&#92;u&#123;202e&#125;/deploy&#46;yaml&#58;10</code>"),
        "{summary}"
    );

    // Closing it rejects the version in that very file.
    w.forge.close(p.number);
    w.run(actions.path()).await;
    let refs = w.rejection_refs();
    assert_eq!(refs.len(), 1, "{refs:?}");
    let rejected = imagebump::deliver::pulls::Rejected::from_ref(&refs[0]).unwrap();
    assert_eq!(rejected.file.as_deref(), Some(file.as_str()));
    assert_eq!(rejected.image, "registry.test/team/web");
}

#[test]
fn a_dry_run_shows_hidden_characters_of_names_and_lines_visibly() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.0.0", "1.1.0"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(EVIL_DIR).join("deploy.yaml");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    // A comment in the file holds bidirectional overrides (YAML takes no other control
    // character); the diff shows them as text.
    let text = DEPLOYMENT.replace("- name: web\n", "- name: web # \u{202e}denwo\u{2066}\n");
    fs::write(&file, &text).unwrap();
    let cfg = tempfile::tempdir().unwrap();
    fs::write(
        cfg.path().join("imagebump.yaml"),
        format!(
            "registries:\n  - prefix: registry.test\n    url: {}\n",
            reg.base_url()
        ),
    )
    .unwrap();
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(dir.path())
        .arg("--config")
        .arg(cfg.path().join("imagebump.yaml"))
        .env("IMAGEBUMP_LOG", "imagebump=trace")
        .code(0)
        .run();
    no_raw_hidden("stdout", &run.stdout);
    no_raw_hidden("stderr", &run.stderr);
    assert!(!run.stdout.contains('\u{2066}'), "{:?}", run.stdout);
    let name = "apps/evil -->\\u{a}\\u{1b}[31mred\\u{202e}/deploy.yaml";
    run.assert_stdout_contains(&format!("diff --git a/{name} b/{name}\n"))
        .assert_stdout_contains("         - name: web # \\u{202e}denwo\\u{2066}\n")
        .assert_stdout_contains("+          image: registry.test/team/web:1.1.0\n");
    // The file itself is as it was: a dry run.
    assert_eq!(fs::read_to_string(&file).unwrap(), text);

    // JSON on stdout escapes what JSON leaves raw too, and reads back the exact name.
    let scan = imagebump()
        .args(["scan", "--output", "json"])
        .arg(dir.path())
        .code(0)
        .run();
    no_raw_hidden("scan's JSON", &scan.stdout);
    scan.assert_stdout_contains("\\u202e");
    let listed: serde_json::Value = serde_json::from_str(&scan.stdout).unwrap();
    assert_eq!(
        listed["references"][0]["file"],
        format!("{EVIL_DIR}/deploy.yaml").as_str(),
        "{}",
        scan.stdout
    );
}

/// A registry (wiremock) whose `Docker-Content-Digest` for `acme/web:latest` is `digest`.
async fn registry_answering(digest: &str) -> wiremock::MockServer {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": format!("sha256:{}", "1".repeat(64)), "size": 2},
        "layers": [],
    })
    .to_string();
    for verb in ["HEAD", "GET"] {
        Mock::given(method(verb))
            .and(path("/v2/acme/web/manifests/latest"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("Docker-Content-Digest", digest)
                    .insert_header("Content-Type", OCI_MANIFEST)
                    .set_body_string(manifest.clone()),
            )
            .mount(&server)
            .await;
    }
    Mock::given(method("GET"))
        .and(path("/v2/acme/web/tags/list"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(serde_json::json!({"name": "acme/web", "tags": ["latest"]})),
        )
        .mount(&server)
        .await;
    server
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_docker_content_digest_is_an_error_and_nothing_is_written() {
    let lower = "0123456789abcdef".repeat(4);
    for digest in [
        format!("sha256:{}", lower.to_uppercase()),
        format!("sha256:{}", &lower[..40]),
        "md5:d41d8cd98f00b204e9800998ecf8427e".to_string(),
        format!("sha512:{lower}{lower}"),
    ] {
        let server = registry_answering(&digest).await;
        let host = server.address().to_string();
        let dir = tempfile::tempdir().unwrap();
        let kustomization =
            format!("images:\n  - name: web\n    newName: {host}/acme/web\n    newTag: latest\n");
        fs::write(dir.path().join("kustomization.yaml"), &kustomization).unwrap();
        let cfg = tempfile::tempdir().unwrap();
        fs::write(
            cfg.path().join("imagebump.yaml"),
            format!(
                "registries:\n  - prefix: {host}\n    url: http://{host}\nimages:\n  - match: \"{host}/acme/web\"\n    strategy: digest\n"
            ),
        )
        .unwrap();
        let run = imagebump()
            .args(["run", "--write"])
            .arg(dir.path())
            .arg("--config")
            .arg(cfg.path().join("imagebump.yaml"))
            .code(1)
            .run_async()
            .await;
        run.assert_stderr_contains(&format!("http://{host}/v2/acme/web/manifests/latest"))
            .assert_stderr_contains(
                "its Docker-Content-Digest is not sha256: and 64 lower-case hexadecimal digits: not used",
            );
        // The registry's value is neither written nor repeated.
        assert!(
            !run.stdout.contains(&digest) && !run.stderr.contains(&digest),
            "{digest}"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("kustomization.yaml")).unwrap(),
            kustomization,
            "{digest}"
        );
        run.assert_stdout_contains("0 update(s) applied in 0 file(s)")
            .assert_stdout_contains("not checked, the registry failed (1)");
    }
}

/// A registry's tag list holding a name with escape sequences, a newline and a bidi
/// override: the name is reported, visibly, and the valid tags are used.
#[tokio::test(flavor = "multi_thread")]
async fn a_registry_answer_reaches_no_terminal_raw() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    let hostile = "\u{1b}]0;owned\u{7}\u{1b}[2J\nerror: forged line \u{202e}";
    Mock::given(method("GET"))
        .and(path("/v2/acme/web/tags/list"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            serde_json::json!({"name": "acme/web", "tags": ["1.0.0", hostile, "1.1.0"]}),
        ))
        .mount(&server)
        .await;
    let host = server.address().to_string();
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("kustomization.yaml"),
        format!("images:\n  - name: web\n    newName: {host}/acme/web\n    newTag: 1.0.0\n"),
    )
    .unwrap();
    let cfg = tempfile::tempdir().unwrap();
    fs::write(
        cfg.path().join("imagebump.yaml"),
        format!("registries:\n  - prefix: {host}\n    url: http://{host}\n"),
    )
    .unwrap();
    let summary = dir.path().join("summary.md");
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(dir.path())
        .arg("--config")
        .arg(cfg.path().join("imagebump.yaml"))
        .arg("--summary-md")
        .arg(&summary)
        .env("IMAGEBUMP_LOG", "imagebump=trace")
        .code(1)
        .run_async()
        .await;
    no_raw_hidden("stdout", &run.stdout);
    no_raw_hidden("stderr", &run.stderr);
    assert!(!run.stdout.contains('\u{7}') && !run.stderr.contains('\u{7}'));
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(all.contains("invalid tag name(s), ignored (first: \"\\u{1b}]0;owned\\u{7}\\u{1b}[2J\\nerror: forged line \\u{202e}\")"), "{all}");
    assert!(
        !all.lines().any(|l| l.starts_with("error: forged")),
        "{all}"
    );
    run.assert_stdout_contains("+    newTag: 1.1.0");
    let md = fs::read_to_string(&summary).unwrap();
    no_raw_hidden("the summary", &md);
    assert!(!md.lines().any(|l| l.starts_with("error: forged")), "{md}");
}
