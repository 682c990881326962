//! What a new user meets in the first hour: output that survives a closed pipe, logs
//! without colour codes in a file, a `scan` table that fits the terminal, and a clear word
//! when the directory is missing or holds nothing to manage.

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

use support::cli::{imagebump, Cli};

/// A tree whose JSON scan is far larger than a pipe's buffer, so the writer meets the
/// closed pipe for certain.
fn big_tree() -> tempfile::TempDir {
    let files: Vec<(String, String)> = (0..400)
        .map(|i| {
            (
                format!("apps/a{i}/deployment.yaml"),
                format!("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a{i}\nspec:\n  template:\n    spec:\n      containers:\n      - name: a\n        image: registry.test/team/app-{i}:1.0.{i}\n"),
            )
        })
        .collect();
    support::tree(&files)
}

#[test]
fn a_closed_pipe_ends_quietly_with_the_usual_status() {
    let tree = big_tree();
    for args in ["scan DIR --output json", "scan DIR", "config schema"] {
        let script = format!(
            "\"$0\" {} | head -c 1 >/dev/null; echo \"status ${{PIPESTATUS[0]}}\" >&2",
            args.replace("DIR", "\"$1\"")
        );
        let run = Cli::program("bash")
            .args(["-c", &script, env!("CARGO_BIN_EXE_imagebump")])
            .arg(tree.path())
            .run();
        assert_eq!(run.stderr, "status 0\n", "{args}: {run}");
    }
}

#[test]
fn logs_written_to_a_file_carry_no_colour_codes() {
    let tree = big_tree();
    // A terminal would get colour; stderr here is a pipe, as in a CronJob's log.
    let run = imagebump()
        .args(["-vv", "scan"])
        .arg(tree.path())
        .env_remove("NO_COLOR")
        .run();
    assert!(
        run.stderr.contains("INFO") || run.stderr.contains("DEBUG"),
        "{run}"
    );
    assert!(!run.stderr.contains('\u{1b}'), "{run}");
}

#[test]
fn the_scan_table_fits_columns_and_shows_everything_with_v() {
    let policy = "registry.test/team/app-1:1.0.1 # imagebump: {\"constraint\": \">=1.0.0 <2.0.0 || >=3.1.0 <3.2.0\", \"ignoreTags\": [\"*-rc*\", \"*-beta*\"]}";
    let tree = support::tree(&[(
        "apps/a/deployment.yaml",
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\nspec:\n  template:\n    spec:\n      containers:\n      - name: a\n        image: {policy}\n"),
    )]);
    let narrow = imagebump()
        .arg("scan")
        .arg(tree.path())
        .env("COLUMNS", "100")
        .run();
    let lines: Vec<&str> = narrow.stdout.lines().collect();
    assert!(lines.iter().all(|l| l.chars().count() <= 100), "{narrow}");
    assert!(narrow.stdout.contains('…'), "{narrow}");
    // -v: every cell whole, whatever the width.
    let whole = imagebump()
        .args(["-v", "scan"])
        .arg(tree.path())
        .env("COLUMNS", "100")
        .run();
    assert!(whole.stdout.contains("ignore *-rc*,*-beta*"), "{whole}");
    assert!(!whole.stdout.contains('…'), "{whole}");
}

#[test]
fn a_missing_directory_is_a_usage_error_and_an_empty_tree_says_so() {
    let run = imagebump()
        .args(["scan", "/nonexistent/imagebump-first-hour"])
        .code(2)
        .run();
    assert_eq!(
        run.stderr,
        "error: /nonexistent/imagebump-first-hour: no such directory\n"
    );
    let empty = support::tree(&[("README.md", "# nothing here\n")]);
    let run = imagebump().arg("scan").arg(empty.path()).run();
    assert_eq!(
        run.stdout,
        "no image references found in 0 files: nothing to manage (docs/discovery.md says what is read)\n"
    );
}

/// Run on a subdirectory of a repository, imagebump finds the repository's imagebump.yaml
/// (its root is the directory that holds it) and updates only the subdirectory: never the
/// major bump the repository's constraint forbids.
#[test]
fn a_subdirectory_keeps_the_repositorys_configuration_and_only_it_moves() {
    let reg = support::Registry::start(support::RegistryMode::Plain);
    reg.push_tags("team/web", &["1.4.0", "1.4.2", "2.0.0"]);
    reg.push_tags("team/api", &["1.0.0", "1.1.0"]);
    let deploy = |name: &str, tag: &str| {
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n      containers:\n      - name: {name}\n        image: registry.test/team/{name}:{tag}\n")
    };
    let tree = support::make_worktree(&[
        (
            "gitops/imagebump.yaml",
            "images:\n  - match: registry.test/team/web\n    constraint: \"~1.4\"\n",
        ),
        ("gitops/apps/web/deployment.yaml", &deploy("web", "1.4.0")),
        ("gitops/apps/api/deployment.yaml", &deploy("api", "1.0.0")),
    ]);
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = cfg_dir.path().join("operator.yaml");
    let registries = format!(
        "registries:\n  - prefix: registry.test\n    url: {}\n",
        reg.base_url()
    );
    std::fs::write(&cfg, registries).unwrap();
    let sub = tree.path().join("gitops/apps/web");
    let run = imagebump()
        .args(["run", "--dry-run", "--config"])
        .arg(&cfg)
        .arg(&sub)
        .run();
    assert!(
        run.stdout.contains("-        image: registry.test/team/web:1.4.0\n+        image: registry.test/team/web:1.4.2\n"),
        "{run}"
    );
    assert!(!run.stdout.contains("team/api"), "{run}");
    assert!(run.stdout.contains("1 references: 1 to update;"), "{run}");
    // The path is the repository's, from the directory imagebump.yaml is in.
    assert!(
        run.stdout.contains("diff --git a/apps/web/deployment.yaml"),
        "{run}"
    );
}

/// `config check`'s findings are its answer, on stdout: not log lines on stderr.
#[test]
fn config_check_prints_its_findings_as_output() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("operator.yaml");
    std::fs::write(
        &cfg,
        "registries:\n  - prefix: registry.example.com\n    url: https://registry.example.com\n    credentials: env:REGISTRY_TOKEN\n    credentialsExpire: 1h\n",
    )
    .unwrap();
    let run = imagebump()
        .args(["config", "check", "--config"])
        .arg(&cfg)
        .arg(dir.path())
        .run();
    assert_eq!(run.stderr, "", "{run}");
    let shown = run.stdout.replace(&cfg.display().to_string(), "CFG");
    assert!(
        shown.contains("CFG: valid\n  warning: CFG: registries[0].credentialsExpire: only ext: and file: sources are asked again on a timer; the others say when their answer expires\n"),
        "{shown}"
    );
}
