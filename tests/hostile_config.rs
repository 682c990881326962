//! The repository's own `imagebump.yaml` as hostile input, and the run under the
//! operator's resource limits: operator-only keys are judged on the parsed configuration
//! whatever the YAML spelling, a configuration file that is not a regular file or does not
//! parse stops the run (exit 2) naming it, deep nesting is refused at once wherever YAML is
//! read, a file with a byte order mark is edited with the mark kept, and `ulimit -f` or
//! `ulimit -v` end the run with a message and no leftovers. Real binary, real registry.

mod support;

use std::fs;
use std::path::Path;

use support::cli::imagebump;
use support::{Registry, RegistryMode};

const KUSTOMIZATION: &str =
    "images:\n  - name: web\n    newName: ghcr.io/acme/web\n    newTag: 1.0.0\n";

/// A repository with one kustomization naming ghcr.io/acme/web 1.0.0.
fn repository() -> tempfile::TempDir {
    support::tree(&[("app/kustomization.yaml", KUSTOMIZATION)])
}

/// The operator's configuration (`--config`), outside the repository, holding `text`.
fn operator_config(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("operator.yaml");
    fs::write(&cfg, text).unwrap();
    (dir, cfg)
}

/// The operator's configuration pointing ghcr.io at `reg`.
fn registry_config(reg: &Registry) -> (tempfile::TempDir, std::path::PathBuf) {
    operator_config(&format!(
        "registries:\n  - prefix: ghcr.io\n    url: {}\n",
        reg.base_url()
    ))
}

/// Files that start with a UTF-8 byte order mark (editors on Windows write one): each
/// mode that edits (`--write`, and the JSON report, which reads a file again before its
/// edit) changes the tag and keeps the mark, byte for byte.
#[test]
fn a_file_with_a_byte_order_mark_is_edited_and_keeps_it() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("acme/web", &["1.0.0", "1.1.0"]);
    let (_op, cfg) = registry_config(&reg);
    let kustomization = format!("\u{feff}{KUSTOMIZATION}");
    let values = "\u{feff}image:\n  repository: ghcr.io/acme/web\n  tag: 1.0.0\n";
    let files = [
        ("app/kustomization.yaml", kustomization.as_str()),
        ("chart/values.yaml", values),
        (
            "chart/Chart.yaml",
            "apiVersion: v2\nname: chart\nversion: 1.0.0\n",
        ),
    ];
    for args in [
        &["run", "--write"][..],
        &["run", "--write", "--output", "json"],
        &["run", "--dry-run", "--output", "json"],
    ] {
        let repo = support::tree(&files);
        let run = imagebump()
            .args(args)
            .arg(repo.path())
            .arg("--config")
            .arg(&cfg)
            .run();
        assert!(!run.stdout.contains("edit refused"), "{args:?}: {run}");
        if args.contains(&"json") {
            let counts = &run.json()["counts"];
            assert_eq!(
                (counts["updates"].as_u64(), counts["refused"].as_u64()),
                (Some(2), Some(0)),
                "{run}"
            );
        }
        let dry = args.contains(&"--dry-run");
        for (rel, before) in &files[..2] {
            let want = if dry {
                before.to_string()
            } else {
                before.replace("1.0.0", "1.1.0")
            };
            assert_eq!(
                fs::read_to_string(repo.path().join(rel)).unwrap(),
                want,
                "{args:?} {rel}"
            );
        }
    }
}
