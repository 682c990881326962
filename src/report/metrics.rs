//! The run's metrics in the OpenMetrics text format (docs/kubernetes.md, "Metrics"), for
//! node-exporter's textfile collector (`--metrics-file`) and the Pushgateway
//! (`--pushgateway`).
//!
//! A run is a batch job: every series describes the last run, so every one is a gauge
//! (a counter would restart at each run). The text is also valid in Prometheus' older text
//! format (0.0.4), which node-exporter and the Pushgateway read: `# EOF` is a comment there.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{Problem, RunReport};

/// The reference states, as `imagebump_references{state}` names them (the report's
/// `notUpdated` statuses, and `update`).
pub const STATES: [&str; 9] = [
    "update",
    "up-to-date",
    "held-back",
    "scheduled",
    "pinned",
    "skipped",
    "unmanaged",
    "not-checked",
    "edit-refused",
];

/// The kinds of `imagebump_errors{kind}`.
pub const ERROR_KINDS: [&str; 6] = ["registry", "file", "forge", "config", "run", "fatal"];

/// What the metrics say, as plain data (made from a [`RunReport`], or from a run that could
/// not run: [`RunMetrics::failed`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMetrics {
    pub duration_seconds: f64,
    /// The exit code (0 done, 1 errors, 2 usage or configuration, 3 updates pending).
    pub exit_code: i32,
    /// When the run ended, in seconds since the epoch.
    pub finished: f64,
    /// When the last successful run ended: this one when it succeeded, else the last one
    /// known (`None`: none known, the series is left out).
    pub last_success: Option<f64>,
    /// `None`: the run did not get far enough to know (a failed run).
    pub detail: Option<Detail>,
    /// Errors by kind ([`ERROR_KINDS`]).
    pub errors: BTreeMap<&'static str, usize>,
}

/// What only a run that got to its report knows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Detail {
    /// References by state ([`STATES`]).
    pub references: BTreeMap<&'static str, usize>,
    pub updates_proposed: usize,
    pub updates_pushed: usize,
    /// Pull requests by action: opened, updated, closed.
    pub pull_requests: BTreeMap<&'static str, usize>,
    /// Registry requests sent again (a 5xx, a timeout, a rate limit).
    pub retries: usize,
    /// Requests by registry and status, and the rate-limit waits.
    pub traffic: crate::registry::Traffic,
    pub rejections: usize,
}

impl RunMetrics {
    /// A successful run exits 0 or 3 (updates pending is news, not a failure).
    pub fn succeeded(&self) -> bool {
        matches!(self.exit_code, 0 | 3)
    }

    /// The metrics of a run that got to its report.
    pub fn of(report: &RunReport, exit_code: i32, duration: f64, finished: f64) -> RunMetrics {
        let c = &report.counts;
        let mut references: BTreeMap<&'static str, usize> =
            STATES.iter().map(|s| (*s, 0)).collect();
        let mut settled = 0usize;
        for n in report.not_updated.iter() {
            settled = settled.saturating_add(1);
            if let Some(count) = references.get_mut(n.status) {
                *count = count.saturating_add(1);
            }
        }
        references.insert("update", c.references.saturating_sub(settled));
        let mut pull_requests: BTreeMap<&'static str, usize> =
            [("opened", 0), ("updated", 0), ("closed", 0)].into();
        for event in super::pull_events(report) {
            if let Some(count) = pull_requests.get_mut(event.0) {
                *count = count.saturating_add(1);
            }
        }
        let pushed = super::pushed_updates(report).len();
        let detail = Detail {
            references,
            updates_proposed: c.updates.saturating_sub(pushed),
            updates_pushed: pushed,
            pull_requests,
            retries: report.requests.retries,
            traffic: report.registry_traffic.clone(),
            rejections: report.rejections_in_force,
        };
        let mut m = RunMetrics {
            duration_seconds: duration,
            exit_code,
            finished,
            last_success: None,
            detail: Some(detail),
            errors: error_kinds(report.errors),
        };
        m.last_success = m.succeeded().then_some(finished);
        m
    }

    /// The metrics of a run that stopped before its report (`exit_code` is not 0).
    pub fn failed(exit_code: i32, duration: f64, finished: f64) -> RunMetrics {
        let mut errors = error_kinds(&[]);
        errors.insert("fatal", 1);
        RunMetrics {
            duration_seconds: duration,
            exit_code,
            finished,
            last_success: None,
            detail: None,
            errors,
        }
    }
}

/// Every kind with its count (0 included, so that the series exist from the first run).
fn error_kinds(problems: &[Problem]) -> BTreeMap<&'static str, usize> {
    let mut kinds: BTreeMap<&'static str, usize> = ERROR_KINDS.iter().map(|k| (*k, 0)).collect();
    for p in problems {
        if let Some(count) = kinds.get_mut(error_kind(p)) {
            *count = count.saturating_add(1);
        }
    }
    kinds
}

/// What a problem is about, from where it is: a file (`path.yaml[:line:column]`),
/// the configuration, the forge, the run itself, or else an image's registry.
pub fn error_kind(p: &Problem) -> &'static str {
    let l = p.location.as_str();
    let path = l.split(':').next().unwrap_or(l);
    if l == "config" {
        "config"
    } else if l == "imagebump" {
        "run"
    } else if imagebump_model::ForgeKind::NAMES
        .iter()
        .any(|(name, aliases)| l == *name || aliases.contains(&l))
    {
        "forge"
    } else if [".yaml", ".yml", ".json"].iter().any(|e| path.ends_with(e)) {
        "file"
    } else {
        "registry"
    }
}

/// The metrics as OpenMetrics text; `labels` are added to every series (the file's
/// `repository`; none for the Pushgateway, whose grouping key adds `job` and `repository`).
pub fn render(m: &RunMetrics, labels: &[(&str, &str)]) -> String {
    let mut out = Metrics::new(labels);
    out.gauge(
        "imagebump_run_duration_seconds",
        "How long the last run took.",
        &[(&[], m.duration_seconds)],
    );
    out.gauge(
        "imagebump_run_success",
        "1 when the last run succeeded (exit code 0 or 3), else 0.",
        &[(&[], if m.succeeded() { 1.0 } else { 0.0 })],
    );
    out.gauge(
        "imagebump_run_exit_code",
        "The last run's exit code.",
        &[(&[], f64::from(m.exit_code))],
    );
    out.gauge(
        "imagebump_run_timestamp_seconds",
        "When the last run ended, in seconds since the epoch.",
        &[(&[], m.finished)],
    );
    if let Some(t) = m.last_success {
        out.gauge(
            "imagebump_last_success_timestamp_seconds",
            "When the last successful run ended, in seconds since the epoch.",
            &[(&[], t)],
        );
    }
    let errors: Vec<_> = m
        .errors
        .iter()
        .map(|(k, n)| (vec![("kind", k.to_string())], *n as f64))
        .collect();
    out.labelled(
        "imagebump_errors",
        "Errors of the last run, by kind.",
        &errors,
    );
    if let Some(d) = &m.detail {
        render_detail(&mut out, d);
    }
    out.finish()
}

fn render_detail(out: &mut Metrics, d: &Detail) {
    let by = |label: &'static str,
              map: &BTreeMap<&'static str, usize>|
     -> Vec<(Vec<(&'static str, String)>, f64)> {
        map.iter()
            .map(|(k, n)| (vec![(label, k.to_string())], *n as f64))
            .collect()
    };
    out.labelled(
        "imagebump_references",
        "References of the last run, by state.",
        &by("state", &d.references),
    );
    out.gauge(
        "imagebump_updates_proposed",
        "Updates the last run found and proposed (diff, files written or pull requests).",
        &[(&[], d.updates_proposed as f64)],
    );
    out.gauge(
        "imagebump_updates_pushed",
        "Updates the last run committed straight to the base branch.",
        &[(&[], d.updates_pushed as f64)],
    );
    out.labelled(
        "imagebump_pull_requests",
        "Pull requests the last run opened, updated or closed, by action.",
        &by("action", &d.pull_requests),
    );
    out.gauge(
        "imagebump_registry_retries",
        "Registry requests the last run sent again.",
        &[(&[], d.retries as f64)],
    );
    let requests: Vec<(Vec<(&'static str, String)>, f64)> = d
        .traffic
        .requests
        .iter()
        .map(|o| {
            let labels = vec![
                ("registry", o.registry.clone()),
                ("status", o.outcome.clone()),
            ];
            (labels, o.count as f64)
        })
        .collect();
    out.labelled(
        "imagebump_registry_requests",
        "Registry requests of the last run, by registry and status (an HTTP status, or timeout, connection, tls… without one).",
        &requests,
    );
    out.gauge(
        "imagebump_registry_rate_limit_wait_seconds",
        "Seconds the registries asked the last run to wait (429 with Retry-After).",
        &[(&[], d.traffic.rate_limit_wait_seconds)],
    );
    out.gauge(
        "imagebump_rejections",
        "Rejected versions in force (closed pull requests, reverts) the last run held back.",
        &[(&[], d.rejections as f64)],
    );
}

/// A writer of metric families with common labels.
struct Metrics {
    text: String,
    common: String,
}

impl Metrics {
    fn new(labels: &[(&str, &str)]) -> Metrics {
        let common = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect::<Vec<_>>()
            .join(",");
        Metrics {
            text: String::new(),
            common,
        }
    }

    fn gauge(&mut self, name: &str, help: &str, samples: &[(&[(&str, String)], f64)]) {
        let samples: Vec<(Vec<(&str, String)>, f64)> =
            samples.iter().map(|(l, v)| (l.to_vec(), *v)).collect();
        self.labelled(name, help, &samples);
    }

    fn labelled(&mut self, name: &str, help: &str, samples: &[(Vec<(&str, String)>, f64)]) {
        let _ = writeln!(self.text, "# HELP {name} {}", help.replace('\\', "\\\\"));
        let _ = writeln!(self.text, "# TYPE {name} gauge");
        for (labels, value) in samples {
            let own = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v)));
            let all: Vec<String> = (!self.common.is_empty())
                .then(|| self.common.clone())
                .into_iter()
                .chain(own)
                .collect();
            let labels = if all.is_empty() {
                String::new()
            } else {
                format!("{{{}}}", all.join(","))
            };
            let _ = writeln!(self.text, "{name}{labels} {}", number(*value));
        }
    }

    fn finish(mut self) -> String {
        self.text.push_str("# EOF\n");
        self.text
    }
}

/// A label value as the text format writes it.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Integers without a fraction, other values as Rust prints them (both formats accept it).
fn number(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.is_finite() {
        // Milliseconds are plenty for durations and timestamps, and a short decimal reads
        // back as the same number in every parser (Go's, Python's, ours): a last success
        // carried from run to run stays equal to itself.
        let text = format!("{v:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        "NaN".to_string()
    }
}

/// The last success a metrics file written before says (`imagebump_last_success_timestamp_seconds`),
/// so that a failed run keeps it in the file it replaces.
pub fn last_success_in(text: &str) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with("imagebump_last_success_timestamp_seconds"))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_run_has_no_last_success_of_its_own_and_every_error_kind() {
        let m = RunMetrics::failed(1, 2.5, 1_700_000_000.0);
        let text = render(&m, &[("repository", "git.example.com/a \"b\"")]);
        assert!(!text.contains("imagebump_last_success"), "{text}");
        assert!(
            text.contains(
                "imagebump_errors{repository=\"git.example.com/a \\\"b\\\"\",kind=\"fatal\"} 1\n"
            ),
            "{text}"
        );
        assert!(text.contains(
            "imagebump_run_duration_seconds{repository=\"git.example.com/a \\\"b\\\"\"} 2.5\n"
        ));
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn the_last_success_is_read_back_from_a_file() {
        let mut m = RunMetrics::failed(0, 1.0, 1_700_000_000.0);
        m.exit_code = 0;
        m.last_success = Some(1_700_000_000.0);
        assert_eq!(last_success_in(&render(&m, &[])), Some(1_700_000_000.0));
        assert_eq!(last_success_in("# EOF\n"), None);
    }

    #[test]
    fn problems_are_sorted_into_kinds_by_where_they_are() {
        let p = |l: &str| {
            error_kind(&Problem {
                location: l.into(),
                message: String::new(),
                hint: None,
            })
        };
        assert_eq!(p("apps/web/kustomization.yaml:3:5"), "file");
        assert_eq!(p("apps/web/values.yml"), "file");
        assert_eq!(p("registry.example.com/team/web"), "registry");
        assert_eq!(p("github"), "forge");
        assert_eq!(p("config"), "config");
        assert_eq!(p("imagebump"), "run");
    }
}
