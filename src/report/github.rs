//! GitHub Actions: a Markdown summary of the run for the job page (`GITHUB_STEP_SUMMARY`),
//! and step outputs (`GITHUB_OUTPUT`): `updates` (a count) and `pull-requests` (JSON).
//! Nothing happens outside Actions (the variables are unset).

use std::fmt::Write as _;
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

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The Markdown summary: counts, updates, pull requests, and every error with its hint.
pub fn summary(report: &RunReport) -> String {
    let c = &report.counts;
    let mut s = String::from("## imagebump\n\n");
    let _ = writeln!(
        s,
        "{} update(s) ({}) over {} references in {} repositories: {} up to date, {} pinned, {} skipped, {} not checked.\n",
        c.updates, report.mode, c.references, c.repositories, c.up_to_date, c.pinned, c.skipped, c.failed
    );
    if !report.updates.is_empty() {
        s.push_str("| Image | From | To | Location |\n|---|---|---|---|\n");
        for u in report.updates {
            let _ = writeln!(
                s,
                "| `{}` | `{}` | `{}` | `{}:{}` |",
                cell(&u.name),
                cell(&u.from),
                cell(&u.to),
                cell(&u.file),
                u.line
            );
        }
        s.push('\n');
    }
    if let Some(pulls) = report.pull_requests.filter(|p| !p.is_empty()) {
        s.push_str(
            "### Pull requests\n\n| Branch | Action | Pull request | Title |\n|---|---|---|---|\n",
        );
        for p in pulls {
            let action = serde_json::to_value(&p.action)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let link = match (&p.number, &p.url) {
                (Some(n), Some(u)) => format!("[#{n}]({u})"),
                (Some(n), None) => format!("#{n}"),
                _ => "-".into(),
            };
            let _ = writeln!(
                s,
                "| `{}` | {action} | {link} | {} |",
                cell(&p.branch),
                cell(&p.title)
            );
        }
        s.push('\n');
    }
    if !report.errors.is_empty() {
        s.push_str("### Errors\n\n");
        for e in report.errors {
            let _ = write!(s, "- `{}`: {}", cell(&e.location), e.message);
            if let Some(h) = &e.hint {
                let _ = write!(s, " (hint: {h})");
            }
            s.push('\n');
        }
        s.push('\n');
    }
    s
}
