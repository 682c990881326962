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
    if let Some(path) = EnvVars::get_os(EnvVars::GITHUB_STEP_SUMMARY).filter(|p| !p.is_empty()) {
        if let Err(e) = append(&path, &summary(report)) {
            problems.push(Problem::general(format!("GITHUB_STEP_SUMMARY: {e}")));
        }
    }
    if let Some(path) = EnvVars::get_os(EnvVars::GITHUB_OUTPUT).filter(|p| !p.is_empty()) {
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

/// `updates` and `pull-requests` (JSON), each in GitHub's multi-line form
/// (`name<<DELIMITER`, the value, the delimiter), so that no value (a branch or title with
/// a newline) can end its own and add another output.
pub fn outputs(report: &RunReport) -> String {
    let pulls = serde_json::to_string(&report.pull_requests.unwrap_or_default())
        .unwrap_or_else(|_| "[]".into());
    let updates = report.counts.updates.to_string();
    let mut s = String::new();
    for (name, value) in [
        ("updates", updates.as_str()),
        ("pull-requests", pulls.as_str()),
    ] {
        let delimiter = delimiter_for(value);
        s.push_str(&format!("{name}<<{delimiter}\n{value}\n{delimiter}\n"));
    }
    s
}

/// A delimiter made at random for each output, checked not to occur in its value (as
/// GitHub's documentation asks).
fn delimiter_for(value: &str) -> String {
    loop {
        let d = format!(
            "ghadelimiter_{:016x}{:016x}",
            fastrand::u64(..),
            fastrand::u64(..)
        );
        if !value.contains(&d) {
            return d;
        }
    }
}

/// The Markdown summary (shared with `--summary-md`).
pub fn summary(report: &RunReport) -> String {
    super::markdown::summary(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The outputs as the runner reads them: `name<<D`, lines, `D`.
    fn read(text: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let (name, d) = line.split_once("<<").expect("multi-line form");
            let mut value = Vec::new();
            for l in lines.by_ref() {
                if l == d {
                    break;
                }
                value.push(l);
            }
            out.push((name.to_string(), value.join("\n")));
        }
        out
    }

    #[test]
    fn outputs_are_exactly_two_whatever_the_values() {
        let delimiter = delimiter_for("x");
        assert!(delimiter.starts_with("ghadelimiter_") && delimiter.len() == 45);
        assert_ne!(delimiter, delimiter_for("x"));
        let value = format!("a\n{delimiter}\nupdates=9");
        let d = delimiter_for(&value);
        assert!(!value.contains(&d));
        let text = format!("name<<{d}\n{value}\n{d}\n");
        assert_eq!(read(&text), [("name".to_string(), value)]);
    }
}
