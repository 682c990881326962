//! A run on a subdirectory of a git repository: an include that leaves the tree but stays in
//! the repository is not read, and the note says where to run instead, with paths as the
//! user gave them (never the machine's absolute paths unless given so).

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

use support::cli::imagebump;

const DEPLOY: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
        - name: web
          image: nginx:1.25.3
";

fn repository() -> tempfile::TempDir {
    support::make_worktree(&[
        ("base/kustomization.yaml", "resources: [deploy.yaml]\n"),
        ("base/deploy.yaml", DEPLOY),
        (
            "apps/x/kustomization.yaml",
            "resources:\n  - ../../base\n  - ../../../../elsewhere\nimages:\n  - name: nginx\n    newTag: 1.25.3\n",
        ),
    ])
}

#[test]
fn the_note_names_the_repository_root_and_suggests_running_there() {
    let repo = repository();
    let from_root = imagebump()
        .current_dir(repo.path())
        .args(["scan", "apps/x", "--offline"])
        .run();
    let inside = imagebump()
        .current_dir(repo.path().join("apps/x"))
        .args(["scan", "--offline"])
        .run();
    insta::assert_snapshot!(format!(
        "from the root, scan apps/x:\n{}\nin apps/x, scan:\n{}",
        from_root.filtered_stderr(),
        inside.filtered_stderr()
    ));
    // At the root, the base is read and nothing is said about it.
    let whole = imagebump()
        .current_dir(repo.path())
        .args(["scan", ".", "--offline"])
        .run();
    assert!(!whole.stderr.contains("../../base"), "{whole}");
    assert!(whole.stdout.contains("base/deploy.yaml"), "{whole}");
}
