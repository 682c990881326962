//! How pull-request mode delivers, whatever the number of change sets: a fixed set of git
//! commands (one clone, one fast-import for every commit, one push for every branch), and
//! pull-request bodies that carry the links to the new images' sources although the push
//! does not wait for them. A real registry (images labelled with their source), a real git
//! remote over smart HTTP, the GitHub fake.

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
use support::github::FakeGitHub;
use support::{make_worktree, GitServer, Registry, RegistryMode, OCI_CONFIG, OCI_MANIFEST};

const TOKEN: &str = FakeGitHub::TOKEN;

/// `apps` apps, `apps/appN/kustomization.yaml` each using `registry.test/team/appN:1.0.0`;
/// the registry has 1.0.0 and 1.1.0 of each, 1.1.0 labelled with its source
/// `https://github.com/acme/appN`.
struct World {
    _reg: Registry,
    server: GitServer,
    _work: tempfile::TempDir,
    cfg_dir: tempfile::TempDir,
    forge: FakeGitHub,
}

impl World {
    async fn start(apps: usize) -> World {
        let reg = Registry::start(RegistryMode::Plain);
        let mut files = Vec::new();
        for i in 0..apps {
            let repo = format!("team/app{i}");
            reg.push_tags(&repo, &["1.0.0"]);
            push_labelled(
                &reg,
                &repo,
                "1.1.0",
                &format!("https://github.com/acme/app{i}"),
            );
            files.push((
                format!("apps/app{i}/kustomization.yaml"),
                format!("images:\n  - name: registry.test/{repo}\n    newTag: 1.0.0\n"),
            ));
        }
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_str()))
            .collect();
        let work = make_worktree(&files);
        let server = GitServer::http_with_token(work.path(), "gitops", TOKEN);
        let cfg_dir = tempfile::Builder::new()
            .prefix("imagebump-config-")
            .tempdir()
            .unwrap();
        std::fs::write(
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

    /// One run in pull-request mode, every git command logged (debug).
    async fn run(&self) -> Run {
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
            .env("IMAGEBUMP_LOG", "imagebump::source::git=debug")
            .code(0)
            .run_async()
            .await
    }
}

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

/// The git commands a run started, in order, from its debug log (`git command="push"`).
/// The readers of the base's files (`cat-file`, one per core reading at once, started as
/// discovery needs them) count once.
fn git_commands(run: &Run) -> Vec<String> {
    let mut commands: Vec<String> = run
        .stderr
        .lines()
        .filter_map(|l| l.split_once("git command=")?.1.split_whitespace().next())
        .map(|c| c.trim_matches('"').to_string())
        .collect();
    commands.dedup_by(|a, b| a == "cat-file" && b == "cat-file");
    commands
}

/// The git commands of a first pull-request run: the same for 2 and for 12 change sets.
/// The push writes its commits as local refs first and deletes them after
/// (`Git::push`).
const FIRST_RUN: [&str; 18] = [
    "clone",
    "rev-parse",
    // The remote's HEAD must name the base branch itself (ls-remote --symref).
    "config",
    "ls-remote",
    "ls-tree",
    "log",
    "config",
    "ls-remote",
    "cat-file",
    "config",
    "ls-remote",
    "rev-parse",
    "ls-tree",
    "fast-import",
    "update-ref",
    "config",
    "push",
    "update-ref",
];

/// The git commands of the next run, nothing having changed: the branches are fetched, and
/// their commits and trees read, each in one command for all of them.
const SECOND_RUN: [&str; 19] = [
    "clone",
    "rev-parse",
    "config",
    "ls-remote",
    "ls-tree",
    "log",
    "config",
    "ls-remote",
    "cat-file",
    "config",
    "ls-remote",
    "config",
    "fetch",
    "log",
    "cat-file",
    "rev-parse",
    "ls-tree",
    "fast-import",
    "cat-file",
];

#[tokio::test(flavor = "multi_thread")]
async fn git_commands_do_not_grow_with_the_change_sets() {
    for apps in [2, 12] {
        let w = World::start(apps).await;
        let first = w.run().await;
        assert_eq!(
            git_commands(&first),
            FIRST_RUN,
            "{apps} apps:\n{}",
            first.stderr
        );
        let branches = w.server.branches();
        assert_eq!(branches.len(), apps + 1, "{branches:?}");
        assert_eq!(w.forge.pulls().len(), apps);

        let second = w.run().await;
        assert_eq!(
            git_commands(&second),
            SECOND_RUN,
            "{apps} apps:\n{}",
            second.stderr
        );
        assert_eq!(w.server.branches(), branches, "nothing pushed");
        second.assert_stdout_contains("unchanged");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bodies_link_the_sources_that_were_fetched_while_the_branches_were_pushed() {
    let w = World::start(3).await;
    w.run().await;
    let mut pulls = w.forge.pulls();
    pulls.sort_by(|a, b| a.branch.cmp(&b.branch));
    let branches: Vec<&str> = pulls.iter().map(|p| p.branch.as_str()).collect();
    assert_eq!(
        branches,
        [
            "imagebump/apps-app0",
            "imagebump/apps-app1",
            "imagebump/apps-app2"
        ]
    );
    for (i, p) in pulls.iter().enumerate() {
        let row = format!(
            "| `registry.test/team/app{i}` | `1.0.0` | `1.1.0` | `apps/app{i}/kustomization.yaml` \
             | [source](https://github.com/acme/app{i}) · [releases](https://github.com/acme/app{i}/releases) |"
        );
        let body = p.body.as_deref().unwrap_or_default();
        assert!(body.contains(&row), "{row}\nnot in\n{body}");
    }
}
