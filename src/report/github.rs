//! GitHub Actions: a Markdown summary of the run for the job page (`GITHUB_STEP_SUMMARY`),
//! and step outputs (`GITHUB_OUTPUT`): `updates` (a count) and `pull-requests` (JSON).
//! Nothing happens outside Actions (the variables are unset).

use std::io::Write as _;

use super::{Problem, RunReport};
use imagebump_model::env::EnvVars;

/// Append the summary and outputs where GitHub Actions asks for them. Returns the
/// problems met (an unwritable file), for the run's errors.
pub fn publish(report: &RunReport) -> Vec<Problem> {
    let mut problems = Vec::new();
    if let Some(path) = std::env::var_os(EnvVars::GITHUB_STEP_SUMMARY).filter(|p| !p.is_empty()) {
        if let Err(e) = append(&path, &summary(report)) {
            problems.push(Problem::general(format!("GITHUB_STEP_SUMMARY: {e}")));
        }
    }
    if let Some(path) = std::env::var_os(EnvVars::GITHUB_OUTPUT).filter(|p| !p.is_empty()) {
        if let Err(e) = append(&path, &outputs(report)) {
            problems.push(Problem::general(format!("GITHUB_OUTPUT: {e}")));
        }
    }
    problems
}

fn append(path: &std::ffi::OsStr, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(text.as_bytes())
}

/// `updates=<n>` and `pull-requests=<json on one line>`.
pub fn outputs(report: &RunReport) -> String {
    let pulls = serde_json::to_string(&report.pull_requests.unwrap_or_default())
        .unwrap_or_else(|_| "[]".into());
    format!("updates={}\npull-requests={pulls}\n", report.counts.updates)
}

/// The Markdown summary (shared with `--summary-md`).
pub fn summary(report: &RunReport) -> String {
    super::markdown::summary(report)
}
