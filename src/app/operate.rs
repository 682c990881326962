//! What a run tells the people and systems that operate it, once its work is done (or has
//! failed): notifications (`notify:`), the report files (`--report`, GitHub Actions,
//! `--summary-md`) and the metrics (`--metrics-file`, `--pushgateway`).
//!
//! The exit code rule (docs/configuration.md, "notify"; docs/kubernetes.md, "Metrics"):
//! what goes over the network to others (a notification, the Pushgateway) and fails is a
//! warning, recorded in the report, and leaves the exit code alone; a file on the run's
//! machine that cannot be written (`--report`, `--summary-md`, `--metrics-file`) is an
//! error (exit 1), as it always was for `--report`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::source::Loaded;
use super::{Error, Mode, Output, RunPlan};
use crate::notify::{self, News};
use crate::report::metrics::{self, RunMetrics};
use crate::report::RunReport;
use imagebump_model::config::NotifyTarget;
use imagebump_model::exit;
use imagebump_model::Problem;

/// The flags of this module (`run`'s `--metrics-file`, `--pushgateway`, `--summary-md`).
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub metrics_file: Option<PathBuf>,
    pub pushgateway: Option<String>,
    pub summary_md: Option<PathBuf>,
    /// `--report-html`: the run's page (src/report/html).
    pub report_html: Option<PathBuf>,
}

impl Flags {
    /// The flags, checked: the Pushgateway's is an http(s) URL (the error never quotes it: it
    /// may hold a password).
    pub fn new(
        metrics_file: Option<PathBuf>,
        pushgateway: Option<String>,
        summary_md: Option<PathBuf>,
    ) -> Result<Flags, Error> {
        if let Some(url) = &pushgateway {
            notify::parse_url(&secrecy::SecretString::from(url.clone())).map_err(|e| {
                Error::Flag {
                    flag: "pushgateway",
                    message: format!("{e}; e.g. http://pushgateway.monitoring:9091"),
                }
            })?;
        }
        Ok(Flags {
            metrics_file,
            pushgateway,
            summary_md,
            report_html: None,
        })
    }
}

/// After the run's report is made: the notifications (recorded in the report, a failed one
/// as a warning), the report files, the metrics. Returns the problems met.
pub async fn publish(
    plan: &RunPlan,
    out: &Output,
    loaded: &Loaded,
    report: &mut RunReport<'_>,
) -> Vec<Problem> {
    let repository = repository(plan);
    let news = News::of(report, &repository);
    report.notifications = notify::send_all(&loaded.config.notify, &news).await;
    for warning in notify::warnings(&report.notifications) {
        out.warning(&warning);
    }
    let mut late = files(plan, report);
    let code = exit_code(plan, report, &late);
    let finished = now();
    let duration = out.started.elapsed().as_secs_f64();
    let measured = RunMetrics::of(report, code, duration, finished);
    late.extend(emit_metrics(plan, out, &repository, measured).await);
    late
}

/// A run that stopped before its report (it could not clone, a signal, its deadline): a
/// `failed` notification to the operator's receivers and the metrics of a failed run.
/// Everything it meets is a warning: the error itself is what the run reports.
pub async fn stopped(plan: &RunPlan, out: &Output, error: &Error) {
    let repository = repository(plan);
    // The operator's configuration, when it can be read (the error may be that it cannot).
    let targets: Vec<NotifyTarget> = plan
        .source
        .config
        .as_deref()
        .and_then(|path| crate::config::load(path).ok())
        .map(|c| c.notify)
        .unwrap_or_default();
    let news = News::stopped(
        &repository,
        plan.mode.name(),
        imagebump_http::redact(&error.to_string()),
    );
    let sent = notify::send_all(&targets, &news).await;
    for warning in notify::warnings(&sent) {
        out.warning(&warning);
    }
    let code = super::error::code(error);
    let measured = RunMetrics::failed(code, out.started.elapsed().as_secs_f64(), now());
    for p in emit_metrics(plan, out, &repository, measured).await {
        out.warning(&p.to_string());
    }
}

/// The exit code the run will have, as far as is known now (late problems included).
fn exit_code(plan: &RunPlan, report: &RunReport, late: &[Problem]) -> i32 {
    if !report.errors.is_empty() || !late.is_empty() {
        exit::ERRORS
    } else if plan.exit_code && !report.updates.is_empty() && plan.mode == Mode::DryRun {
        exit::PENDING
    } else {
        exit::OK
    }
}

/// `--report`, GitHub Actions' summary and outputs, `--summary-md`: the problems met.
fn files(plan: &RunPlan, report: &RunReport) -> Vec<Problem> {
    let mut late: Vec<Problem> = Vec::new();
    if let Some(path) = &plan.report {
        let mut text = Vec::new();
        let written = super::output::write_json(&mut text, report)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                text.push(b'\n');
                String::from_utf8(text).map_err(|e| e.to_string())
            })
            .and_then(|t| write_atomic(path, &t, false).map_err(|e| e.to_string()));
        if let Err(e) = written {
            late.push(Problem::general(format!(
                "--report {}: {e}",
                path.display()
            )));
        }
    }
    late.extend(crate::report::github::publish(report));
    if let Some(path) = &plan.operate.summary_md {
        let text = crate::report::markdown::summary(report);
        if let Err(e) = write_atomic(path, &text, true) {
            late.push(Problem::general(format!(
                "--summary-md {}: {e}",
                path.display()
            )));
        }
    }
    late
}

/// The metrics to `--metrics-file` (an error when it cannot be written) and
/// `--pushgateway` (a warning when it cannot be pushed).
async fn emit_metrics(
    plan: &RunPlan,
    out: &Output,
    repository: &str,
    mut measured: RunMetrics,
) -> Vec<Problem> {
    let mut late = Vec::new();
    if let Some(path) = &plan.operate.metrics_file {
        if measured.last_success.is_none() {
            // A failed run keeps the last success the file it replaces knew.
            let before = std::fs::read_to_string(path).unwrap_or_default();
            measured.last_success = metrics::last_success_in(&before);
        }
        let text = metrics::render(&measured, &[("repository", repository)]);
        if let Err(e) = write_atomic(path, &text, true) {
            late.push(Problem::general(format!(
                "--metrics-file {}: {e}",
                path.display()
            )));
        }
    }
    if let Some(url) = &plan.operate.pushgateway {
        // No last success of a failed run: the Pushgateway keeps the one pushed before.
        measured.last_success = measured.succeeded().then_some(measured.finished);
        let text = metrics::render(&measured, &[]);
        let pushed = match notify::pushgateway::request(url, repository, text) {
            Ok(request) => notify::post(&request).await,
            Err(e) => (0, Err(e)),
        };
        if let (attempts, Err(e)) = pushed {
            out.warning(&format!(
                "--pushgateway: the metrics were not pushed after {attempts} attempt(s): {e}"
            ));
        }
    }
    late
}

/// The repository as the metrics' `repository` label and the notifications name it: a
/// remote's URL without credentials, scheme or `.git` (`github.com/acme/gitops`); a local
/// directory's absolute path.
pub fn repository(plan: &RunPlan) -> String {
    repository_of(&plan.source.location, plan.remote)
}

/// [`repository`] of a location, remote or not.
pub fn repository_of(location: &str, remote: bool) -> String {
    if !remote {
        let path = Path::new(location);
        return path
            .canonicalize()
            .unwrap_or_else(|_| path.to_path_buf())
            .display()
            .to_string();
    }
    let (url, _) = crate::source::git::split_credentials(location);
    let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
    // scp-like `git@host:path`: the user is no part of the name.
    let rest = rest.split_once('@').map_or(rest, |(_, r)| r);
    let rest = rest.trim_end_matches('/');
    rest.strip_suffix(".git").unwrap_or(rest).to_string()
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// Write `text` to `path` atomically: a temporary file in the same directory, renamed over
/// it (a reader, such as node-exporter's textfile collector, never sees half a file).
/// `readable`: by everyone (0644; the collector may run as another user), else the
/// temporary file's own 0600.
pub(super) fn write_atomic(path: &Path, text: &str, readable: bool) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    if readable {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::Permissions::from_mode(0o644);
        std::fs::set_permissions(tmp.path(), mode)?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
