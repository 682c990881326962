//! A hostile repository pays for its own size, never more: the worst inputs of each kind
//! that once cost minutes or gigabytes run through the real binary, each well inside the
//! shipped CronJob's 256 MiB (peak resident memory measured by GNU time) and in a time that
//! a quadratic cost would overrun by minutes.

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
use std::time::Duration;

use support::cli::{imagebump, Run};

/// The shipped CronJob's memory limit.
const CRONJOB_LIMIT_KIB: u64 = 256 * 1024;

/// Generous for a debug build on a loaded two-core machine; a quadratic cost at these
/// sizes takes minutes.
const WALL: Duration = Duration::from_secs(60);

/// `scan --offline` of `root`, expecting exit `code`, under the limits.
fn scan(root: &Path, code: i32) -> Run {
    let run = imagebump()
        .args(["scan", "--offline"])
        .arg(root)
        .measure_memory()
        .timeout(Duration::from_secs(300))
        .code(code)
        .run();
    within_limits(&run);
    run
}

fn within_limits(run: &Run) {
    let peak = run.peak_kib.unwrap();
    eprintln!("peak RSS {peak} KiB, {:?}", run.elapsed);
    assert!(peak < CRONJOB_LIMIT_KIB, "peak RSS {peak} KiB\n{run}");
    assert!(run.elapsed < WALL, "took {:?}\n{run}", run.elapsed);
}

#[test]
fn a_values_file_of_199000_keys_is_read_in_linear_time() {
    let repo = tempfile::tempdir().unwrap();
    let mut text = String::from("image:\n  repository: ghcr.io/acme/web\n  tag: 1.0.0\n");
    for i in 0..199_000 {
        text.push_str(&format!("k{i}: 1\n"));
    }
    assert!(text.len() > 2_000_000);
    fs::write(repo.path().join("values.yaml"), text).unwrap();
    let run = scan(repo.path(), 0);
    run.assert_stdout_contains("values.yaml:3")
        .assert_stdout_contains("1 references in 1 files (1 managed, 0 unmanaged)");
}

#[test]
fn a_kustomization_of_150000_labels_is_read_in_linear_time() {
    let repo = tempfile::tempdir().unwrap();
    let mut text = String::from(
        "images:\n  - name: web\n    newName: ghcr.io/acme/web\n    newTag: 1.0.0\ncommonLabels:\n",
    );
    for i in 0..150_000 {
        text.push_str(&format!("  label{i}: v\n"));
    }
    text.push_str("labels:\n  - pairs:\n");
    for i in 0..40_000 {
        text.push_str(&format!("      pair{i}: v\n"));
    }
    fs::write(repo.path().join("kustomization.yaml"), text).unwrap();
    let run = scan(repo.path(), 0);
    run.assert_stdout_contains("kustomization.yaml:4")
        .assert_stdout_contains("1 references in 1 files (1 managed, 0 unmanaged)");
}

/// Fifty ApplicationSets of 10,000 Applications each (a matrix of two lists of 100) in one
/// file of about 250 KB.
fn fifty_sets() -> String {
    let elements = |k: &str| {
        (0..100)
            .map(|i| format!("          - {{{k}: '{i}'}}\n"))
            .collect::<String>()
    };
    (0..50)
        .map(|n| {
            format!(
                "---\napiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata:\n  name: s{n}\nspec:\n  generators:\n  - matrix:\n      generators:\n      - list:\n          elements:\n{}      - list:\n          elements:\n{}  template:\n    metadata:\n      name: 'a{n}-{{{{a}}}}-{{{{b}}}}'\n    spec:\n      project: default\n      source:\n        repoURL: https://charts.example.com\n        chart: web\n        targetRevision: 1.0.0\n        helm:\n          values: |\n            image:\n              repository: ghcr.io/acme/web\n              tag: 1.0.0\n      destination: {{server: https://kubernetes.default.svc, namespace: x}}\n",
                elements("a"),
                elements("b")
            )
        })
        .collect()
}

#[test]
fn the_applications_of_all_sets_share_one_cap() {
    let repo = tempfile::tempdir().unwrap();
    let text = fifty_sets();
    // Where each set's `name:` is (1-based line, column 9).
    let lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("  name: s"))
        .map(|(i, _)| i + 1)
        .collect();
    fs::write(repo.path().join("sets.yaml"), &text).unwrap();
    let run = scan(repo.path(), 1);
    // The first set takes the whole budget of 10,000; every later one is an error at its
    // name, and the run goes on to the end.
    for (n, line) in lines.iter().enumerate().skip(1) {
        run.assert_stderr_contains(&format!(
            "error: sets.yaml:{line}:9: ApplicationSet s{n}: the run's ApplicationSets generate more than 10000 Applications or 64 MiB of templates in all; its Applications past that are not read"
        ));
    }
    assert!(
        !run.stderr.contains("ApplicationSet s0: the run's"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.matches("error: sets.yaml:").count(), 49, "{run}");
}

/// A manifest of 200 Deployments, each with an inline marker whose `allowTags` is `re(i)`.
fn markers(re: impl Fn(usize) -> String) -> String {
    (0..200)
        .map(|i| {
            format!(
                "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d{i}}}\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: ghcr.io/acme/web:1.0.0 # imagebump: {{\"allowTags\": \"regexp:{}\"}}\n",
                re(i)
            )
        })
        .collect()
}

#[test]
fn two_hundred_big_patterns_are_refused_at_their_lines() {
    let repo = tempfile::tempdir().unwrap();
    // Each a different pattern, each far past the size limit once its Unicode classes
    // are compiled.
    fs::write(
        repo.path().join("m.yaml"),
        markers(|i| format!(r"^\\w{{1,100}}-{i}$")),
    )
    .unwrap();
    let run = scan(repo.path(), 1);
    run.assert_stderr_contains(
        r#"error: m.yaml:10:41: allowTags: regular expression "^\\w{1,100}-0$" is too big: it compiles to more than 1024 KiB"#,
    );
    assert_eq!(run.stderr.matches("is too big").count(), 200, "{run}");
}

#[test]
fn many_different_patterns_share_one_budget() {
    let repo = tempfile::tempdir().unwrap();
    // Each within the size limit, all of them together past the run's budget.
    fs::write(
        repo.path().join("m.yaml"),
        markers(|i| format!(r"^\\w{{1,8}}-{i}$")),
    )
    .unwrap();
    let run = scan(repo.path(), 1);
    let refused = run
        .stderr
        .matches("have used their memory budget (64 MiB)")
        .count();
    assert!(refused > 0 && refused < 200, "{refused} refused\n{run}");
    // The first markers' patterns were compiled and judged the tag.
    run.assert_stdout_contains("m.yaml:10");
}

#[test]
fn the_same_big_pattern_everywhere_is_compiled_once() {
    let repo = tempfile::tempdir().unwrap();
    fs::write(
        repo.path().join("m.yaml"),
        markers(|_| r"^\\w{1,8}-[0-9]+$".to_string()),
    )
    .unwrap();
    let run = scan(repo.path(), 0);
    run.assert_stdout_contains("200 references in 1 files (200 managed, 0 unmanaged)");
}

/// A Helm repository whose `index.yaml` lists `others` other charts around the one the app
/// uses (95,000 make about 30 MB), whose chart's default values hold `keys` keys.
fn bloated_helm_repository(keys: usize, others: usize) -> support::charts::HelmRepo {
    let helm = support::charts::HelmRepo::start(None);
    let mut values =
        String::from("image:\n  repository: registry.invalid/library/nginx\n  tag: \"1.25.0\"\n");
    for i in 0..keys {
        values.push_str(&format!("k{i}: 1\n"));
    }
    helm.publish(
        "charts",
        &[support::charts::ChartSrc {
            name: "web",
            version: "1.0.0",
            app_version: "1.25.0",
            values: &values,
        }],
    );
    let path = helm.dir().join("charts/index.yaml");
    let index = fs::read_to_string(&path).unwrap();
    let mut filler = String::with_capacity(31 << 20);
    for i in 0..others {
        filler.push_str(&format!(
            "  filler{i}:\n  - apiVersion: v2\n    appVersion: \"1.0.0\"\n    created: \"2026-01-01T00:00:00Z\"\n    description: a chart nobody asked for, listed to make the index large\n    digest: {:064x}\n    name: filler{i}\n    urls:\n    - filler{i}-1.0.0.tgz\n    version: 1.0.0\n",
            i
        ));
    }
    fs::write(
        &path,
        index.replacen("entries:\n", &format!("entries:\n{filler}"), 1),
    )
    .unwrap();
    helm
}

#[test]
fn a_30_mb_index_stays_within_limits() {
    let helm = bloated_helm_repository(10, 95_000);
    let size = fs::metadata(helm.dir().join("charts/index.yaml"))
        .unwrap()
        .len();
    assert!(size > 30_000_000 && size < 32 << 20, "{size}");
    chart_only_app(&helm);
}

#[test]
fn a_chart_of_199000_default_values_is_read_in_linear_time() {
    let helm = bloated_helm_repository(199_000, 0);
    chart_only_app(&helm);
}

/// `scan` of an Argo CD Application of chart `web` 1.0.0 of `helm`: the chart and the
/// image of its default values, one request for the index and one for the archive.
fn chart_only_app(helm: &support::charts::HelmRepo) {
    let app = format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\nspec:\n  source:\n    repoURL: {}/charts\n    chart: web\n    targetRevision: 1.0.0\n",
        helm.url()
    );
    let repo = tempfile::tempdir().unwrap();
    fs::create_dir_all(repo.path().join("apps")).unwrap();
    fs::write(repo.path().join("apps/web.yaml"), app).unwrap();
    let run = imagebump()
        .arg("scan")
        .arg(repo.path())
        .args(["--output", "json"])
        .measure_memory()
        .timeout(Duration::from_secs(300))
        .code(0)
        .run();
    within_limits(&run);
    let refs: Vec<String> = run.json()["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["kind"].as_str().unwrap(),
                r["image"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        refs,
        [
            format!("helm-chart {}/charts/web", helm.host()),
            "chart-default registry.invalid/library/nginx".to_string()
        ],
        "{run}"
    );
    assert_eq!(
        helm.requests(),
        [
            "GET /charts/index.yaml 200",
            "GET /charts/web-1.0.0.tgz 200"
        ]
    );
}

#[test]
fn a_repository_configuration_past_1_mib_is_not_read() {
    let repo = tempfile::tempdir().unwrap();
    fs::write(
        repo.path().join("kustomization.yaml"),
        "images:\n  - name: web\n    newName: ghcr.io/acme/web\n    newTag: 1.0.0\n",
    )
    .unwrap();
    let mut config = String::from("defaults:\n  strategy: semver\nscan:\n  exclude:\n");
    while config.len() <= 1 << 20 {
        config.push_str("    - \"some/long/path/that/is/excluded/from/the/scan/**\"\n");
    }
    fs::write(repo.path().join("imagebump.yaml"), config).unwrap();
    let run = scan(repo.path(), 2);
    run.assert_stderr_contains("imagebump.yaml: larger than 1 MiB: not read");
}

/// A monorepo of 2,000 `apps/<svc>/kustomization.yaml`: 2,000 applications, each in its
/// own environment (its directory). The fleet view's size grows with the references, not
/// with applications × environments (docs/report.md, "HTML view"): each application lists
/// the one environment it runs in.
#[test]
fn a_fleet_view_of_2000_one_environment_apps_grows_linearly() {
    const APPS: usize = 2_000;
    let repo = tempfile::tempdir().unwrap();
    for i in 0..APPS {
        let dir = repo.path().join(format!("apps/svc{i}"));
        fs::create_dir_all(&dir).unwrap();
        // `latest` is no version: set aside before any registry is asked.
        fs::write(
            dir.join("kustomization.yaml"),
            format!("images:\n  - name: registry.test/team/svc{i}\n    newTag: latest\n"),
        )
        .unwrap();
    }
    let out = tempfile::tempdir().unwrap();
    let page = out.path().join("fleet.html");
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(repo.path())
        .arg("--report-html")
        .arg(&page)
        .measure_memory()
        .timeout(Duration::from_secs(300))
        .code(0)
        .run();
    within_limits(&run);
    let html = fs::read_to_string(&page).unwrap();
    let per_reference = html.len() / APPS;
    assert!(
        per_reference < 1_500,
        "{} bytes, {per_reference} per reference",
        html.len()
    );
    assert!(
        html.contains("2000 applications in 2000 environments: too many for one matrix"),
        "{}",
        &html[..html.len().min(20_000)]
    );
    assert_eq!(html.matches("<tr data-app=").count(), APPS);
    assert_eq!(html.matches("data-state=\"absent\"").count(), 0);
    assert!(
        html.contains(
            "<li data-env=\"svc7\" data-state=\"unmanaged\" class=\"st st-unmanaged\">\
             <span class=\"env\">svc7</span> "
        ),
        "{}",
        &html[..html.len().min(20_000)]
    );
}
