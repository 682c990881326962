//! The README's demo, `fixtures/demo/run.sh`, run the way a newcomer runs it on a fresh
//! Debian machine: a private HOME, and a PATH holding only the programs the script is meant
//! to need (no python3). `IMAGEBUMP_BIN` points the script at this build's binary, so the
//! test does not compile a release build.
//!
//! Not run here: the script's `apt-get install` branch (docker-registry and curl are already
//! installed by `.ci/run`) and its `cargo build --release`.

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
use std::net::TcpStream;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::cli::{imagebump, Cli, Run};
use support::require_tool;

/// What the script may run: bash and the coreutils it uses, curl, awk and docker-registry.
const TOOLS: [&str; 17] = [
    "bash",
    "cat",
    "cut",
    "dirname",
    "mktemp",
    "nohup",
    "rm",
    "seq",
    "sha256sum",
    "sleep",
    "stat",
    "tr",
    "awk",
    "curl",
    "docker-registry",
    "cp",
    "diff",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn which(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} not found on PATH"))
}

/// A directory of symbolic links to [`TOOLS`] and nothing else, to be the script's PATH.
fn minimal_path() -> tempfile::TempDir {
    require_tool("docker-registry", "docker-registry");
    require_tool("curl", "curl");
    let dir = tempfile::tempdir().unwrap();
    for tool in TOOLS {
        symlink(which(tool), dir.path().join(tool)).unwrap();
    }
    // The point of the exercise: python3 cannot be found.
    let probe = Command::new(dir.path().join("bash"))
        .args(["-c", "command -v python3 python"])
        .env_clear()
        .env("PATH", dir.path())
        .output()
        .unwrap();
    assert!(!probe.status.success(), "python is reachable: {probe:?}");
    dir
}

/// `fixtures/demo/run.sh ARGS` from the repository's root, with the minimal PATH and a fresh
/// HOME (the harness gives every run a private, empty one).
/// `code`: the exit code expected, or `None` for any (the caller checks it).
fn demo(path: &Path, args: &[&str], code: Option<i32>) -> Run {
    let cli = Cli::program(root().join("fixtures/demo/run.sh"))
        .args(args)
        .current_dir(root())
        .env("PATH", path)
        .env("IMAGEBUMP_BIN", env!("CARGO_BIN_EXE_imagebump"))
        .timeout(Duration::from_secs(120));
    match code {
        Some(code) => cli.code(code),
        None => cli.any_code(),
    }
    .run()
}

/// The text after `prefix` on the first line of `text` that has it, up to `end`.
fn after<'a>(text: &'a str, prefix: &str, end: char) -> &'a str {
    let at = text
        .find(prefix)
        .unwrap_or_else(|| panic!("no `{prefix}` in:\n{text}"));
    let rest = &text[at + prefix.len()..];
    rest.split(end).next().unwrap()
}

fn port_is_open(base: &str) -> bool {
    TcpStream::connect(base.trim_start_matches("http://")).is_ok()
}

/// Whether the port closes within a few seconds (a killed server takes a moment to go).
fn port_closes(base: &str) -> bool {
    for _ in 0..50 {
        if !port_is_open(base) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

const DIFF_LINES: [&str; 8] = [
    "+++ b/apps/web/kustomization.yaml",
    "-    newTag: 1.25.3-alpine   # alpine variant: stays alpine",
    "+    newTag: 1.27.3-alpine   # alpine variant: stays alpine",
    "-    newTag: \"v1.2.0\"",
    "+    newTag: \"v1.3.0\"",
    "-  image: docker.io/bitnami/redis:7.2.4  # sidecar cache",
    "+  image: {repository: ghcr.io/acme/worker, tag: '0.11'}",
    "nginx                    1.25.3-alpine  1.27.3-alpine  apps/web/kustomization.yaml:8",
];

#[test]
fn demo_dry_runs_without_python_and_cleans_up() {
    let path = minimal_path();
    let run = demo(path.path(), &[], Some(0));
    for line in DIFF_LINES {
        assert!(run.stdout.lines().any(|l| l == line), "no `{line}`:\n{run}");
    }
    assert!(
        run.stdout
            .contains("5 update(s) proposed in 3 file(s); 11 references"),
        "{run}"
    );
    assert!(
        run.stderr.contains("run.sh --keep "),
        "no next steps:\n{run}"
    );
    // Without --keep the registry is gone when the script ends.
    let base = after(&run.stderr, "registry on ", ' ');
    assert!(port_closes(base), "the registry on {base} still runs");

    // Extra arguments reach `imagebump run`: --exit-code makes pending updates exit 3.
    let run = demo(path.path(), &["--exit-code"], Some(3));
    assert!(run.stdout.contains("+    newTag: \"v1.3.0\""), "{run}");
}

/// Stops the kept registry and removes its directory, also when an assertion fails first.
struct Kept {
    pid: String,
    work: PathBuf,
}

impl Drop for Kept {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(&self.pid).status();
        let _ = fs::remove_dir_all(&self.work);
    }
}

#[test]
fn demo_keep_leaves_a_registry_for_the_readme_tour() {
    let path = minimal_path();
    let run = demo(path.path(), &["--keep"], None);
    // Parsed before anything is asserted, so that the guard stops the registry whatever fails.
    let pid = after(&run.stderr, "(pid ", ')').to_string();
    let config = PathBuf::from(after(&run.stderr, "  --config ", '\n'));
    let kept = Kept {
        pid: pid.clone(),
        work: config.parent().unwrap().to_path_buf(),
    };
    assert_eq!(run.code, 0, "{run}");
    let stop = after(&run.stderr, "Stop it with:\n  ", '\n').to_string();
    assert_eq!(
        stop,
        format!("kill {pid} && rm -rf {}", kept.work.display()),
        "{run}"
    );
    let base = after(&run.stderr, "keeps running on ", ' ').to_string();
    assert!(port_is_open(&base), "no registry on {base}:\n{run}");
    assert!(run.stdout.contains("+    newTag: \"v1.3.0\""), "{run}");

    let with_config = |args: &[&str]| {
        imagebump()
            .current_dir(root())
            .args(args)
            .arg("--config")
            .arg(&config)
            .run()
    };
    let scan = with_config(&["scan", "fixtures/demo"]);
    assert!(
        scan.stdout
            .contains("11 references in 5 files (5 managed, 1 skipped, 5 unmanaged)"),
        "{scan}"
    );
    let tags = with_config(&["tags", "nginx:1.25.3-alpine", "--constraint", "~1.25"]);
    // The platform check read the chosen tag's manifest: its digest follows.
    assert!(
        tags.stdout
            .lines()
            .any(|l| l.starts_with("chosen:  1.25.4-alpine@sha256:")),
        "{tags}"
    );
    let check = with_config(&["registry", "check", "docker.io", "ghcr.io/acme/web"]);
    assert!(
        check.stdout.contains(&format!("ghcr.io/acme/web ({base})")),
        "{check}"
    );
    assert!(
        check.stdout.contains("read:        ok (7 tag(s)"),
        "{check}"
    );

    // The tour the script prints, as printed, with `imagebump` being this build.
    let tour: Vec<&str> = after(&run.stderr, "Try:\n", '\u{0}')
        .lines()
        .map(str::trim)
        .collect();
    assert_eq!(tour.len(), 6, "{run}");
    let scratch = tempfile::tempdir().unwrap();
    let bash = Cli::program(path.path().join("bash"))
        .arg("-c")
        .arg(tour.join("\n"))
        .current_dir(root())
        .env("PATH", path.path())
        .env("TMPDIR", scratch.path())
        // The last line diffs the demo with its edited copy: they differ.
        .code(1)
        .run();
    for line in [
        "11 references in 5 files (5 managed, 1 skipped, 5 unmanaged)",
        "chosen:  1.25.4-alpine",
        "-  tag: \"2.4.1\"",
        "+  tag: \"2.5.1\"",
    ] {
        assert!(bash.stdout.contains(line), "no `{line}`:\n{bash}");
    }

    // The README's tour on the demo, as written, with the file and the stop command the
    // script printed, and `imagebump` this build.
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    let block = after(&readme, "## Tour\n", '\u{0}');
    let block = after(block, "```sh\n", '`');
    let mut script = Vec::new();
    for line in block.lines() {
        let command = line.split("  #").next().unwrap().trim();
        if command.is_empty() || command.starts_with("fixtures/demo/run.sh") {
            continue;
        } else if command.starts_with("export IMAGEBUMP_CONFIG=") {
            script.push(format!("export IMAGEBUMP_CONFIG={}", config.display()));
        } else if command.starts_with("kill PID") {
            continue; // run below, as printed
        } else {
            script.push(format!("{command} || echo \"FAILED($?): {command}\""));
        }
    }
    assert_eq!(script.len(), 10, "{block}");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_imagebump")).parent().unwrap();
    let readme_path = std::env::join_paths([bin_dir, path.path()]).unwrap();
    let tour_run = Cli::program(path.path().join("bash"))
        .arg("-c")
        .arg(script.join("\n"))
        .current_dir(root())
        .env("PATH", readme_path)
        .env("TMPDIR", scratch.path())
        .run();
    for line in [
        "11 references in 5 files (5 managed, 1 skipped, 5 unmanaged)",
        "chosen:  1.25.4-alpine",
        "read:        ok (7 tag(s)",
        "\"counts\"",
    ] {
        assert!(tour_run.stdout.contains(line), "no `{line}`:\n{tour_run}");
    }
    // Only --exit-code's 3 is not 0.
    let failed: Vec<&str> = tour_run
        .stdout
        .lines()
        .filter(|l| l.starts_with("FAILED("))
        .collect();
    assert_eq!(
        failed,
        ["FAILED(3): imagebump run --dry-run fixtures/demo --exit-code"],
        "{tour_run}"
    );

    // The printed command stops it.
    Cli::program(path.path().join("bash"))
        .arg("-c")
        .arg(&stop)
        .env("PATH", path.path())
        .run();
    assert!(port_closes(&base), "the registry on {base} still runs");
    assert!(!kept.work.exists());
}
