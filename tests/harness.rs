//! The test harness itself (tests/support/cli.rs): a run sees none of the developer's
//! variables, gets a private HOME and Docker config, and fails on an unexpected exit code.

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

use support::cli::{imagebump, Cli, INHERITED};
use support::tree;

/// What a developer's or a CI job's shell may hold that would change what imagebump does.
const HOSTILE: [(&str, &str); 14] = [
    ("GITHUB_TOKEN", "ghp_hostile"),
    ("GITHUB_ACTIONS", "true"),
    ("GITHUB_STEP_SUMMARY", "/tmp/hostile-summary"),
    ("GITLAB_TOKEN", "glpat-hostile"),
    ("GITEA_TOKEN", "hostile"),
    ("CI", "true"),
    ("CI_JOB_TOKEN", "hostile"),
    ("DOCKER_CONFIG", "/tmp/hostile-docker"),
    ("IMAGEBUMP_OUTPUT", "json"),
    ("IMAGEBUMP_CONFIG", "/tmp/hostile/imagebump.yaml"),
    ("RUST_LOG", "trace"),
    ("AWS_ACCESS_KEY_ID", "AKIAHOSTILE"),
    ("GOOGLE_APPLICATION_CREDENTIALS", "/tmp/hostile-gcp.json"),
    ("AZURE_CLIENT_SECRET", "hostile"),
];

/// The variables `cli` (running `/usr/bin/env`) prints, sorted.
fn environment_of(cli: Cli) -> Vec<(String, String)> {
    let run = cli.run();
    let mut vars: Vec<(String, String)> = run
        .stdout
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    vars.sort();
    vars
}

#[test]
fn a_run_sees_only_what_the_harness_and_the_test_give_it() {
    // Each test runs in its own process under nextest; this one's environment is its own.
    for (k, v) in HOSTILE {
        std::env::set_var(k, v);
    }
    let cli = Cli::program("/usr/bin/env").env("IMAGEBUMP_WANTED", "yes");
    let home = cli.home_dir().display().to_string();
    let docker = cli.docker_config_path().display().to_string();
    assert!(
        std::fs::read_dir(&docker).unwrap().next().is_none(),
        "the private Docker config starts empty"
    );
    // The built command starts from an empty environment and sets no hostile name.
    let set: Vec<String> = cli
        .command()
        .get_envs()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    for (k, _) in HOSTILE.iter().filter(|(k, _)| *k != "DOCKER_CONFIG") {
        assert!(!set.iter().any(|s| s == k), "{k} is set on the command");
    }
    let seen = environment_of(cli);
    let names: Vec<&str> = seen.iter().map(|(k, _)| k.as_str()).collect();
    let mut allowed = vec!["HOME", "DOCKER_CONFIG", "NO_COLOR", "IMAGEBUMP_WANTED"];
    allowed.extend(INHERITED.iter().filter(|v| std::env::var_os(v).is_some()));
    allowed.sort();
    assert_eq!(names, allowed, "{seen:?}");
    let value = |name: &str| seen.iter().find(|(k, _)| k == name).unwrap().1.clone();
    assert_eq!(value("HOME"), home);
    assert_eq!(value("DOCKER_CONFIG"), docker);
    assert_eq!(value("IMAGEBUMP_WANTED"), "yes");
}

#[test]
fn imagebump_ignores_a_hostile_parent_environment() {
    for (k, v) in HOSTILE {
        std::env::set_var(k, v);
    }
    let dir = tree(&[(
        "imagebump.yaml",
        "images:\n  - match: nginx\n    constraint: ^1\n",
    )]);
    // IMAGEBUMP_OUTPUT=json and IMAGEBUMP_CONFIG would change this output; RUST_LOG=trace
    // would fill stderr.
    let run = imagebump()
        .args(["config", "check"])
        .arg(dir.path())
        .filter_path(dir.path(), "[DIR]")
        .run();
    assert_eq!(
        run.filtered_stdout(),
        "[DIR]/imagebump.yaml: valid\n  defaults: semver\n  images[0] nginx: semver ^1\n"
    );
    assert_eq!(run.stderr, "");
}

#[test]
fn an_unexpected_exit_code_fails_with_the_whole_output() {
    let failure = std::panic::catch_unwind(|| {
        imagebump()
            .args(["config", "check", "/nonexistent/imagebump-harness"])
            .run()
    })
    .expect_err("a usage error is not exit code 0");
    let message = failure
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.starts_with("expected exit code 0, got 2\n$ "),
        "{message}"
    );
    assert!(message.contains("----- stderr -----\n"), "{message}");
    assert!(
        message.contains("/nonexistent/imagebump-harness"),
        "{message}"
    );
}

#[test]
fn filters_hide_ports_private_paths_and_durations() {
    let cli = Cli::program("/bin/sh");
    let home = cli.home_dir().display().to_string();
    let run = cli
        .arg("-c")
        .arg(format!(
            "echo http://127.0.0.1:41234/v2 localhost:5000 took 1.25s and 30ms {home}/x; \
             echo secret-ish >&2"
        ))
        .filter("secret-ish", "[REDACTED]")
        .run();
    insta::assert_snapshot!(run.filtered(), @r"
    exit code: 0
    ----- stdout -----
    http://127.0.0.1:[PORT]/v2 localhost:[PORT] took [DURATION] and [DURATION] [HOME]/x

    ----- stderr -----
    [REDACTED]
    ");
}
