//! Nothing a registry, a forge or a file name says is read as markup or structure: image
//! source labels are shown escaped and linked only when they are plain `https://` URLs; a
//! label spelling imagebump's marker cannot make a closed pull request reject another
//! image; file names holding `-->`, a newline or an escape sequence keep the marker, the
//! commit trailers, `GITHUB_OUTPUT` and the terminal intact; a malformed
//! `Docker-Content-Digest` is an error and nothing is written. A real registry, real git
//! remotes, the GitHub fake, wiremock for the malformed answers.

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
    async fn start(reg: Registry, files: &[(&str, &str)]) -> World {
        let work = make_worktree(files);
        let server = GitServer::http_with_token(work.path(), "gitops", TOKEN);
        let cfg_dir = tempfile::tempdir().unwrap();
        fs::write(
            cfg_dir.path().join("imagebump.yaml"),
            format!(
                "registries:\n  - prefix: registry.test\n    url: {}\n",
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

/// A marker recording an update of `registry.test/prod/db`, as JSON (earlier versions) and
/// as imagebump writes it today: what a hostile label spells.
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
    let w = World::start(reg, &files).await;
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
