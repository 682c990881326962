//! The run's metrics (docs/kubernetes.md, "Metrics"): the `--metrics-file` read by
//! prometheus-client's two parsers and linted by `promtool check metrics`; `--pushgateway`
//! against a real Pushgateway, which serves the series back; a failed run keeps the last
//! success; the documented alert rules pass `promtool check rules`.

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

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::Value;
use support::cli::imagebump;
use support::{Pushgateway, Registry, RegistryMode};

/// A registry with `team/web` 1.0.0 and 1.1.0, a tree using 1.0.0 (an update) and a pinned
/// reference, and the operator's configuration sending `registry.test` to the registry.
struct World {
    reg: Option<Registry>,
    tree: tempfile::TempDir,
    cfg: tempfile::TempDir,
}

fn world() -> World {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/web", &["1.0.0", "1.1.0"]);
    let tree = support::tree(&[(
        "apps/web/kustomization.yaml",
        "images:\n  - name: registry.test/team/web\n    newTag: 1.0.0\n  - name: nginx\n    newTag: 1.25.3 # imagebump: pin\n",
    )]);
    let cfg = support::tree(&[(
        "imagebump.yaml",
        format!(
            "registries:\n  - prefix: registry.test\n    url: {}\n",
            reg.base_url()
        ),
    )]);
    World {
        reg: Some(reg),
        tree,
        cfg,
    }
}

impl World {
    fn run(&self, extra: &[&str], code: i32) -> support::cli::Run {
        imagebump()
            .arg("run")
            .arg(self.tree.path())
            .arg("--config")
            .arg(self.cfg.path().join("imagebump.yaml"))
            .args(extra)
            .code(code)
            .run()
    }

    fn repository(&self) -> String {
        self.tree
            .path()
            .canonicalize()
            .unwrap()
            .display()
            .to_string()
    }
}

/// `name{labels}` → value, as prometheus-client's parsers read `file` (they must agree).
fn parsed(file: &Path) -> BTreeMap<String, f64> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/parse_metrics.py");
    let out = std::process::Command::new(support::ci_python())
        .arg(script)
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "prometheus_client refused the file:\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        fs::read_to_string(file).unwrap()
    );
    let samples: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    samples
        .iter()
        .map(|s| {
            assert_eq!(s["type"], "gauge", "{s}");
            let mut labels: Vec<String> = s["labels"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| *k != "repository")
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap()))
                .collect();
            labels.sort();
            let key = format!("{}{{{}}}", s["name"].as_str().unwrap(), labels.join(","));
            (key, s["value"].as_f64().unwrap())
        })
        .collect()
}

#[test]
fn the_metrics_file_is_read_by_prometheus_parsers_and_passes_promtool() {
    let w = world();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("imagebump.prom");
    w.run(&["--metrics-file", file.to_str().unwrap()], 0);

    let text = fs::read_to_string(&file).unwrap();
    let (ok, lint) = support::promtool(&["check", "metrics"], &text);
    assert!(
        ok && lint.trim().is_empty(),
        "promtool check metrics:\n{lint}\n{text}"
    );
    // Readable by a collector running as another user.
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o644
    );
    // Every series carries the repository.
    let repository = format!("repository=\"{}\"", w.repository());
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        assert!(line.contains(&repository), "{line}");
    }

    let m = parsed(&file);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let expected: &[(&str, f64)] = &[
        ("imagebump_run_success{}", 1.0),
        ("imagebump_run_exit_code{}", 0.0),
        ("imagebump_references{state=update}", 1.0),
        ("imagebump_references{state=pinned}", 1.0),
        ("imagebump_references{state=up-to-date}", 0.0),
        ("imagebump_references{state=not-checked}", 0.0),
        ("imagebump_references{state=scheduled}", 0.0),
        ("imagebump_updates_proposed{}", 1.0),
        ("imagebump_updates_pushed{}", 0.0),
        ("imagebump_pull_requests{action=opened}", 0.0),
        ("imagebump_errors{kind=registry}", 0.0),
        ("imagebump_errors{kind=fatal}", 0.0),
        ("imagebump_rejections{}", 0.0),
        ("imagebump_registry_retries{}", 0.0),
    ];
    for (key, value) in expected {
        assert_eq!(m.get(*key), Some(value), "{key} in\n{text}");
    }
    let last = m["imagebump_last_success_timestamp_seconds{}"];
    assert!((now - last).abs() < 120.0, "{last} is now");
    assert_eq!(m["imagebump_run_timestamp_seconds{}"], last);
    assert!(m["imagebump_run_duration_seconds{}"] > 0.0);
    // Every request the run made, by registry (its configured prefix) and status: here
    // one tag list, and for the platforms the current and the chosen tag's manifests and
    // their one config, answered 200.
    let requests: Vec<(&String, &f64)> = m
        .iter()
        .filter(|(k, _)| k.starts_with("imagebump_registry_requests{"))
        .collect();
    assert_eq!(
        requests,
        [(
            &"imagebump_registry_requests{registry=registry.test,status=200}".to_string(),
            &4.0
        )],
        "{m:#?}"
    );
    assert_eq!(m["imagebump_registry_rate_limit_wait_seconds{}"], 0.0);
    assert_eq!(m.len(), 28 + requests.len(), "{m:#?}");
}

#[test]
fn a_failed_run_keeps_the_last_success_in_the_file_and_at_the_pushgateway() {
    let mut w = world();
    let gateway = Pushgateway::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("imagebump.prom");
    let args = [
        "--metrics-file",
        file.to_str().unwrap(),
        "--pushgateway",
        &gateway.url(),
    ];
    w.run(&args, 0);
    let first = parsed(&file)["imagebump_last_success_timestamp_seconds{}"];
    let served = gateway.metrics();
    let group = format!("job=\"imagebump\",repository=\"{}\"", w.repository());
    let series = |name: &str| -> Option<f64> {
        served
            .lines()
            .find(|l| l.starts_with(&format!("{name}{{")) && l.contains(&group))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
    };
    assert_eq!(series("imagebump_run_success"), Some(1.0), "{served}");
    assert_eq!(series("imagebump_updates_proposed"), Some(1.0));
    assert_eq!(
        series("imagebump_last_success_timestamp_seconds"),
        Some(first)
    );

    // The registry goes away: the run fails (exit 1) and says so, and both keep the success.
    drop(w.reg.take());
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let failed = w.run(&args, 1);
    let m = parsed(&file);
    assert_eq!(m["imagebump_run_success{}"], 0.0, "{}", failed.stderr);
    assert_eq!(m["imagebump_run_exit_code{}"], 1.0);
    // Its own line, and the line saying that no registry answered.
    assert_eq!(m["imagebump_errors{kind=registry}"], 2.0);
    assert_eq!(m["imagebump_references{state=not-checked}"], 1.0);
    // The registry that went away: its requests found no one to answer.
    assert!(
        m.iter().any(
            |(k, n)| k.starts_with("imagebump_registry_requests{registry=")
                && k.ends_with(",status=connection}")
                && *n >= 1.0
        ),
        "{m:#?}"
    );
    assert_eq!(m["imagebump_last_success_timestamp_seconds{}"], first);
    assert!(m["imagebump_run_timestamp_seconds{}"] > first);
    let served = gateway.metrics();
    let series = |name: &str| -> Option<f64> {
        served
            .lines()
            .find(|l| l.starts_with(&format!("{name}{{")) && l.contains(&group))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
    };
    assert_eq!(series("imagebump_run_success"), Some(0.0), "{served}");
    assert_eq!(
        series("imagebump_last_success_timestamp_seconds"),
        Some(first),
        "the Pushgateway keeps the last success a failed run does not push"
    );
}

#[test]
fn a_pushgateway_that_is_down_is_a_warning_and_a_bad_url_a_usage_error() {
    let w = world();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://user:s3cret-pw@127.0.0.1:{port}");
    let run = w.run(&["--pushgateway", &url], 0);
    run.assert_stderr_contains("warning: --pushgateway: the metrics were not pushed");
    assert!(!run.stderr.contains("s3cret-pw"), "{}", run.stderr);
    let run = w.run(&["--pushgateway", "pushgateway:9091"], 2);
    run.assert_stderr_contains("error: --pushgateway: not an http(s) URL");
}

/// The alert rules of docs/kubernetes.md, between the two markers.
fn documented_rules() -> String {
    let doc = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/kubernetes.md"))
        .unwrap();
    let start = doc
        .find("<!-- alert rules -->")
        .expect("the alert rules' marker in docs/kubernetes.md");
    let block = &doc[start..];
    let yaml_start = block.find("```yaml\n").unwrap() + "```yaml\n".len();
    let yaml_end = block[yaml_start..].find("```").unwrap();
    block[yaml_start..yaml_start + yaml_end].to_string()
}

#[test]
fn the_documented_alert_rules_pass_promtool() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.yaml");
    fs::write(&rules, documented_rules()).unwrap();
    let (ok, out) = support::promtool(&["check", "rules", rules.to_str().unwrap()], "");
    assert!(ok, "{out}");
    assert!(out.contains("SUCCESS: 2 rules found"), "{out}");
    // And they fire when they should: promtool's unit tests over synthetic series.
    let tests = dir.path().join("tests.yaml");
    fs::write(
        &tests,
        r#"rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      # One success at t=0 (time 0), then only failed runs: the gauge keeps its value.
      - series: 'imagebump_last_success_timestamp_seconds{job="imagebump",repository="git.example.com/acme/gitops"}'
        values: '0+0x300'
      - series: 'imagebump_errors{job="imagebump",repository="git.example.com/acme/gitops",kind="registry"}'
        values: '0 2+0x300'
    alert_rule_test:
      - eval_time: 2h50m
        alertname: ImagebumpStale
        exp_alerts: []
      - eval_time: 3h10m
        alertname: ImagebumpStale
        exp_alerts:
          - exp_labels: {severity: warning, repository: git.example.com/acme/gitops}
            exp_annotations:
              summary: "imagebump has not succeeded on git.example.com/acme/gitops for 3 schedules"
      - eval_time: 30m
        alertname: ImagebumpRegistryErrors
        exp_alerts: []
      - eval_time: 1h20m
        alertname: ImagebumpRegistryErrors
        exp_alerts:
          - exp_labels: {severity: warning, job: imagebump, repository: git.example.com/acme/gitops, kind: registry}
            exp_annotations:
              summary: "imagebump's runs on git.example.com/acme/gitops meet registry errors"
"#,
    )
    .unwrap();
    let (ok, out) = support::promtool(&["test", "rules", tests.to_str().unwrap()], "");
    assert!(ok, "{out}");
}

#[test]
fn summary_md_is_the_step_summary_for_other_ci_systems() {
    let w = world();
    let dir = tempfile::tempdir().unwrap();
    let (md, step) = (dir.path().join("summary.md"), dir.path().join("step.md"));
    imagebump()
        .arg("run")
        .arg(w.tree.path())
        .arg("--config")
        .arg(w.cfg.path().join("imagebump.yaml"))
        .arg("--summary-md")
        .arg(&md)
        .env("GITHUB_STEP_SUMMARY", &step)
        .run();
    let text = fs::read_to_string(&md).unwrap();
    assert_eq!(text, fs::read_to_string(&step).unwrap());
    assert_eq!(
        text,
        "## imagebump\n\n1 update(s) (dry-run) over 2 references in 1 repositories: 0 up to date, 0 held back, 1 pinned, 0 skipped, 0 not checked.\n\n\
         ### Updates\n\n| Image | From | To | Location |\n|---|---|---|---|\n\
         | `registry.test/team/web` | `1.0.0` | `1.1.0` | `apps/web/kustomization.yaml:3` |\n\n"
    );
}
