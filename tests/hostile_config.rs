//! The repository's own `imagebump.yaml` as hostile input, and the run under the
//! operator's resource limits: operator-only keys are judged on the parsed configuration
//! whatever the YAML spelling, a configuration file that is not a regular file or does not
//! parse stops the run (exit 2) naming it, deep nesting is refused at once wherever YAML is
//! read, a file with a byte order mark is edited with the mark kept, and `ulimit -f` or
//! `ulimit -v` end the run with a message and no leftovers. Real binary, real registry.

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

/// Spellings of operator-only keys in the repository's imagebump.yaml, each with the key
/// the refusal names: YAML tags, anchors and aliases, quoted keys, flow and JSON style.
/// `MARKER` stands for a file a credentials program would create.
const SPELLINGS: &[(&str, &str)] = &[
    (
        "registries: !x\n- prefix: ghcr.io\n  credentials: \"ext:touch MARKER\"\n",
        "registries",
    ),
    (
        "registries: [!x {prefix: ghcr.io, credentials: \"ext:touch MARKER\"}]\n",
        "registries",
    ),
    ("notify: !x\n- webhook: http://127.0.0.1:9/hook\n", "notify"),
    (
        "images: !!seq\n- match: \"*\"\n  credentials: !x \"ext:touch MARKER\"\n",
        "images[0].credentials",
    ),
    (
        "scan: {}\nimages:\n- &rule {match: \"*\", credentials: \"ext:touch MARKER\"}\n",
        "images[0].credentials",
    ),
    (
        "defaults:\n  constraint: &c \"ext:touch MARKER\"\nimages:\n- match: \"*\"\n  credentials: *c\n",
        "images[0].credentials",
    ),
    (
        "\"registries\":\n- 'prefix': ghcr.io\n  \"credentials\": \"ext:touch MARKER\"\n",
        "registries",
    ),
    (
        "{\"defaults\": {\"credentials\": \"ext:touch MARKER\"}}\n",
        "defaults.credentials",
    ),
    ("signing: !x {format: ssh, key: /etc/hostname}\n", "signing"),
    (
        "pullRequests:\n  dashboard: !!map {trustIssueWriters: true}\n",
        "pullRequests.dashboard.trustIssueWriters",
    ),
    (
        "credentials: !x\n  pullSecrets: {\"argocd/regcred\": {secret: \"ext:touch MARKER\", registries: [ghcr.io]}}\n",
        "credentials",
    ),
    (
        "defaults: !x\n  verify: {keys: [/etc/hostname]}\n",
        "defaults.verify",
    ),
    (
        "images:\n- match: \"*\"\n  verify: !!map {keys: [cosign.pub]}\n",
        "images[0].verify",
    ),
];

/// Every spelling is refused at its line, naming the key, without and with the operator's
/// `--config` (the GitHub Action runs without one), and no program of the repository runs.
#[test]
fn operator_only_keys_are_refused_however_they_are_spelt() {
    let (_op, cfg) = operator_config("defaults: {}\n");
    for (spelling, key) in SPELLINGS {
        for operator in [false, true] {
            let repo = repository();
            let marker = repo.path().join("ran");
            let text = spelling.replace("MARKER", &marker.display().to_string());
            fs::write(repo.path().join("imagebump.yaml"), &text).unwrap();
            let mut cli = imagebump().args(["run", "--dry-run"]).arg(repo.path());
            if operator {
                cli = cli.arg("--config").arg(&cfg);
            }
            let run = cli.code(2).run();
            // A policy carries no credentials at all, in either file: in `defaults` the key
            // is unknown.
            let refusal = match *key {
                "defaults.credentials" => "defaults: unknown field `credentials`".to_string(),
                _ => format!("{key} can only be set in the operator's configuration (--config"),
            };
            assert!(
                run.stderr.contains("imagebump.yaml:") && run.stderr.contains(&refusal),
                "{text:?} (--config: {operator}): {run}"
            );
            assert!(!marker.exists(), "{text:?}: the repository's program ran");
        }
    }
}

/// The repository's file parsed as written or the run stops: a tagged pin is honoured with
/// the operator's configuration, and a file that does not parse (a duplicate key, a merge
/// key, broken YAML) is an error naming it, never a run under the operator's policies alone.
#[test]
fn the_repository_file_is_read_as_written_or_stops_the_run() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("acme/web", &["1.0.0", "1.1.0"]);
    let (_op, cfg) = registry_config(&reg);
    let repo = repository();
    fs::write(
        repo.path().join("imagebump.yaml"),
        "images: !x\n- match: ghcr.io/acme/web\n  pin: !!bool true\n",
    )
    .unwrap();
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(repo.path())
        .arg("--config")
        .arg(&cfg)
        .run();
    assert!(!run.stdout.contains("1.1.0"), "the pin was ignored: {run}");
    for (text, error) in [
        (
            "images:\n- match: x\n  pin: true\n  pin: false\n",
            "imagebump.yaml:2:3: images[0]: duplicate field `pin`",
        ),
        (
            "defaults: &d {pin: true}\nimages:\n- <<: *d\n  match: x\n",
            "imagebump.yaml:3:3: images[0]: unknown field `<<`",
        ),
        ("images: [\n", "imagebump.yaml:2:1: "),
    ] {
        fs::write(repo.path().join("imagebump.yaml"), text).unwrap();
        for operator in [false, true] {
            let mut cli = imagebump().args(["run", "--dry-run"]).arg(repo.path());
            if operator {
                cli = cli.arg("--config").arg(&cfg);
            }
            let run = cli.code(2).run();
            assert!(run.stderr.contains(error), "{text:?}: {run}");
        }
    }
}

/// A configuration file in the tree that is not a regular file stops the run at once with
/// exit 2 naming it (a pipe would block a plain open; a device has no end), with and
/// without the operator's `--config`.
#[test]
fn a_configuration_file_that_is_no_regular_file_stops_the_run() {
    let (_op, cfg) = operator_config("defaults: {}\n");
    type Make = fn(&Path);
    let cases: [(&str, Make, &str); 7] = [
        ("a pipe", |p| mkfifo(p), "cannot read: not a regular file"),
        (
            "a directory",
            |p| fs::create_dir(p).unwrap(),
            "cannot read: not a regular file",
        ),
        (
            "a link to /dev/zero",
            |p| std::os::unix::fs::symlink("/dev/zero", p).unwrap(),
            "a link to a file outside the repository: not read",
        ),
        (
            "a link to a pipe in the tree",
            |p| {
                mkfifo(&p.with_file_name("pipe"));
                std::os::unix::fs::symlink("pipe", p).unwrap()
            },
            "cannot read: not a regular file",
        ),
        (
            "a link that leads nowhere",
            |p| std::os::unix::fs::symlink("missing.yaml", p).unwrap(),
            "a link that leads nowhere: not read",
        ),
        (
            "a file of 2 MiB",
            |p| fs::write(p, format!("# {}\n", "x".repeat(2 << 20))).unwrap(),
            "larger than 1 MiB",
        ),
        (
            "not UTF-8",
            |p| fs::write(p, b"images: [\xff]\n").unwrap(),
            "not UTF-8 text: not read",
        ),
    ];
    for (what, make, error) in cases {
        for name in ["imagebump.yaml", ".github/imagebump.yaml"] {
            for operator in [false, true] {
                let repo = repository();
                let path = repo.path().join(name);
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                make(&path);
                let mut cli = imagebump().args(["scan", "--offline"]).arg(repo.path());
                if operator {
                    cli = cli.arg("--config").arg(&cfg);
                }
                let run = cli
                    .timeout(std::time::Duration::from_secs(20))
                    .code(2)
                    .run();
                let expected = format!("{}: {error}", path.display());
                assert!(run.stderr.contains(&expected), "{what} as {name}: {run}");
            }
        }
    }
}

/// A link to a regular file inside the tree is read (and judged like the file itself).
#[test]
fn a_configuration_file_linking_inside_the_tree_is_read() {
    let repo = repository();
    fs::create_dir_all(repo.path().join("conf")).unwrap();
    fs::write(
        repo.path().join("conf/imagebump.yaml"),
        "registries:\n- prefix: ghcr.io\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("conf/imagebump.yaml", repo.path().join("imagebump.yaml")).unwrap();
    imagebump()
        .args(["scan", "--offline"])
        .arg(repo.path())
        .code(2)
        .run()
        .assert_stderr_contains("imagebump.yaml:2:1: registries can only be set");
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// A clone reads its files from git's objects: a directory committed as imagebump.yaml
/// stops the run as it does on a disk.
#[test]
fn a_cloned_configuration_that_is_a_directory_stops_the_run() {
    let work = support::make_worktree(&[
        ("app/kustomization.yaml", KUSTOMIZATION),
        ("imagebump.yaml/x", "defaults: {}\n"),
    ]);
    let server = support::GitServer::daemon(work.path(), "gitops");
    let run = imagebump()
        .args(["scan", "--offline", &server.url()])
        .code(2)
        .run();
    run.assert_stderr_contains("imagebump.yaml: cannot read: not a regular file");
}

/// `[` nested `n` deep and closed again: what takes libyaml minutes to refuse.
fn deep(n: usize) -> String {
    format!("{}{}", "[".repeat(n), "]".repeat(n))
}

/// Deep nesting is refused at once wherever YAML is read, not only in manifests: the
/// repository's imagebump.yaml, an inline marker, a Flux setter, a kustomize
/// `configurations` file, an Argo CD Application's `helm.values` and a chart's Chart.yaml.
/// Each run ends within seconds, with the file and line.
#[test]
fn deep_nesting_is_refused_at_once_wherever_yaml_is_read() {
    let d = deep(100_000);
    let app = format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\nspec:\n  source:\n    repoURL: https://git.example.com/gitops.git\n    path: chart\n    helm:\n      values: |\n        x: {d}\n  destination: {{server: https://kubernetes.default.svc, namespace: web}}\n"
    );
    let cases: Vec<(&str, String, &str)> = vec![
        ("imagebump.yaml", format!("defaults: {d}\n"), "imagebump.yaml:1:"),
        (
            "app/kustomization.yaml",
            format!("images:\n  - name: web\n    newName: ghcr.io/acme/web\n    newTag: 1.0.0 # imagebump: {{\"constraint\": {d}}}\n"),
            "app/kustomization.yaml:4:",
        ),
        (
            "app/deploy.yaml",
            format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - name: a\n    image: ghcr.io/acme/web:1.0.0 # {{\"$imagepolicy\": \"flux-system:web\", \"x\": {d}}}\n"),
            "app/deploy.yaml:8:",
        ),
        (
            "app/kustomization.yaml",
            format!("{KUSTOMIZATION}configurations: [conf.yaml]\n"),
            "app/conf.yaml",
        ),
        ("apps/web.yaml", app.clone(), "apps/web.yaml:12:"),
        (
            "chart/.argocd-source-web.yaml",
            format!("helm:\n  parameters: {d}\n"),
            "chart/.argocd-source-web.yaml:2:",
        ),
    ];
    for (rel, text, at) in cases {
        let repo = repository();
        fs::write(repo.path().join("app/conf.yaml"), format!("images: {d}\n")).unwrap();
        fs::create_dir_all(repo.path().join("chart")).unwrap();
        fs::write(
            repo.path().join("chart/values.yaml"),
            "image: ghcr.io/acme/web:1.0.0\n",
        )
        .unwrap();
        fs::create_dir_all(repo.path().join(rel).parent().unwrap()).unwrap();
        fs::write(repo.path().join(rel), text).unwrap();
        if rel.contains(".argocd-source-") {
            fs::create_dir_all(repo.path().join("apps")).unwrap();
            fs::write(repo.path().join("apps/web.yaml"), app.replace(&d, "1")).unwrap();
        }
        let run = imagebump()
            .args(["scan", "--offline"])
            .arg(repo.path())
            .any_code()
            .timeout(std::time::Duration::from_secs(60))
            .run();
        assert!(
            run.elapsed < std::time::Duration::from_secs(10),
            "{rel}: {run}"
        );
        assert!(run.stderr.contains(at), "{rel}: {}", run.stderr);
    }
}

/// Every YAML read outside the lossless layer goes through `imagebump_yaml::from_str`,
/// which checks the nesting first; inside it, each libyaml read is in a function that
/// checks it, or follows `parse_content`'s check (located.rs). Test modules are left out.
#[test]
fn every_yaml_read_checks_its_depth_first() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let reads = [
        "yaml_serde::from_str",
        "yaml_serde::from_slice",
        "yaml_serde::from_reader",
        "Deserializer::from_str",
        "Deserializer::from_slice",
        "Deserializer::from_reader",
    ];
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    for krate in fs::read_dir(root.join("crates")).unwrap() {
        rust_files(&krate.unwrap().path().join("src"), &mut files);
    }
    assert!(files.len() > 50, "{}", files.len());
    let mut unchecked = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).unwrap();
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
        let lines: Vec<&str> = code.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !reads.iter().any(|r| line.contains(r)) || line.trim_start().starts_with("//") {
                continue;
            }
            // The function the read is in, up to the read.
            let start = (0..=i)
                .rev()
                .find(|&j| lines[j].contains("fn "))
                .unwrap_or(0);
            let checked = lines[start..=i]
                .iter()
                .any(|l| l.contains("check_depth(") || l.contains("check_nesting("));
            if !checked && !file.ends_with("crates/imagebump-yaml/src/located.rs") {
                unchecked.push(format!("{}:{}", file.display(), i + 1));
            }
        }
    }
    assert_eq!(
        unchecked,
        Vec::<String>::new(),
        "YAML read without check_depth"
    );
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `imagebump ARGS` under `sh -c 'ulimit LIMIT; exec imagebump ARGS'`.
fn limited(limit: &str) -> support::cli::Cli {
    support::cli::Cli::program("/bin/sh")
        .arg("-c")
        .arg(format!("ulimit {limit} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_imagebump"))
}

/// Under `ulimit -f`, a write past the limit is an error naming the file (exit 1), never
/// SIGXFSZ killing the run; the file keeps its text and no temporary file is left.
#[test]
fn a_file_size_limit_is_a_write_error_with_no_leftovers() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("acme/web", &["1.0.0", "1.1.0"]);
    let (_op, cfg) = registry_config(&reg);
    // Larger than the limit (dash counts 512-byte blocks: 2 of them).
    let text = format!("{}{KUSTOMIZATION}", "# padding\n".repeat(200));
    let repo = support::tree(&[("app/kustomization.yaml", text.as_str())]);
    let run = limited("-f 2")
        .args(["run", "--write"])
        .arg(repo.path())
        .arg("--config")
        .arg(&cfg)
        .code(1)
        .run();
    run.assert_stderr_contains("app/kustomization.yaml")
        .assert_stderr_contains("cannot write: File too large");
    let left: Vec<String> = fs::read_dir(repo.path().join("app"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["kustomization.yaml"], "{run}");
    assert_eq!(
        fs::read_to_string(repo.path().join("app/kustomization.yaml")).unwrap(),
        text
    );
}

/// Under `ulimit -v` smaller than a run needs, the run says so in one line and exits 2,
/// instead of aborting on an allocation; at the least it needs, it runs (on fewer threads).
#[test]
fn a_small_address_space_is_named_and_the_least_one_runs() {
    let repo = repository();
    let run = limited("-v 131072")
        .args(["scan", "--offline"])
        .arg(repo.path())
        .code(2)
        .run();
    assert_eq!(
        run.stderr,
        "error: the address space is limited to 128 MiB (ulimit -v, RLIMIT_AS); imagebump needs at least 256 MiB: raise the limit, or bound memory with a container's memory limit, which counts what is used rather than what is reserved\n"
    );
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("acme/web", &["1.0.0", "1.1.0"]);
    let (_op, cfg) = registry_config(&reg);
    let least = format!("-v {}", imagebump::limits::MIN_ADDRESS_SPACE >> 10);
    let run = limited(&least)
        .args(["run", "--dry-run"])
        .arg(repo.path())
        .arg("--config")
        .arg(&cfg)
        .run();
    run.assert_stdout_contains("+    newTag: 1.1.0");
}
