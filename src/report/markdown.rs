//! The run's Markdown summary, one text for GitHub Actions' step summary and for
//! `--summary-md` (other CI systems): what changed, what is held back and why, what failed.

use std::fmt::Write as _;

use super::{NotUpdated, RunReport};

/// Rows per table at most; the JSON report lists every one.
const ROWS: usize = 100;

/// A value shown as code: a code span, or escaped text in `<code>` when it holds anything
/// Markdown or HTML could read (one line, no `|`, no link, no tag).
fn code(s: &str) -> String {
    imagebump_model::escape::markdown_code(s)
}

/// A value shown as plain text: no markup, link, tag or line break of its own.
fn text(s: &str) -> String {
    imagebump_model::escape::markdown_text(s)
}

/// The summary: the counts, then one table per question, each left out when empty.
pub fn summary(report: &RunReport) -> String {
    let c = &report.counts;
    let mut s = String::from("## imagebump\n\n");
    let _ = writeln!(
        s,
        "{} update(s) ({}) over {} references in {} repositories: {} up to date, {} held back, {} pinned, {} skipped, {} not checked.\n",
        c.updates, report.mode, c.references, c.repositories, c.up_to_date, c.held_back, c.pinned, c.skipped, c.failed
    );
    if let Some(sha) = report.pushed {
        let _ = writeln!(s, "Pushed {} to the base branch.\n", code(sha));
    }
    changed(&mut s, report);
    pulls(&mut s, report);
    let held: Vec<NotUpdated> = report
        .not_updated
        .iter()
        .filter(|n| n.status == "held-back")
        .collect();
    if !held.is_empty() {
        s.push_str("### Held back\n\n| Image | Current | Location | Why |\n|---|---|---|---|\n");
        rows(&mut s, &held);
    }
    let waiting: Vec<NotUpdated> = report
        .not_updated
        .iter()
        .filter(|n| n.status == "scheduled")
        .collect();
    if !waiting.is_empty() {
        s.push_str("### Waiting for the schedule\n\n| Image | Current | Location | Why |\n|---|---|---|---|\n");
        rows(&mut s, &waiting);
    }
    failed(&mut s, report);
    s
}

fn changed(s: &mut String, report: &RunReport) {
    if report.updates.is_empty() {
        return;
    }
    s.push_str("### Updates\n\n| Image | From | To | Location |\n|---|---|---|---|\n");
    for u in report.updates.iter().take(ROWS) {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            code(&u.name),
            code(&u.from),
            code(&u.to),
            code(&format!("{}:{}", u.file, u.line))
        );
    }
    more(s, report.updates.len());
}

fn pulls(s: &mut String, report: &RunReport) {
    let Some(pulls) = report.pull_requests.filter(|p| !p.is_empty()) else {
        return;
    };
    s.push_str(
        "### Pull requests\n\n| Branch | Action | Pull request | Title |\n|---|---|---|---|\n",
    );
    for p in pulls.iter().take(ROWS) {
        let action = serde_json::to_value(&p.action)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let url = p
            .url
            .as_deref()
            .and_then(imagebump_model::escape::https_link);
        let link = match (&p.number, url) {
            (Some(n), Some(u)) => format!("[#{n}]({u})"),
            (Some(n), None) => format!("#{n}"),
            _ => "-".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {link} | {} |",
            code(&p.branch),
            text(&action),
            text(&p.title)
        );
    }
    more(s, pulls.len());
}

/// Errors, references the registry could not answer for or whose edit was refused, and
/// notifications that did not arrive.
fn failed(s: &mut String, report: &RunReport) {
    let not: Vec<NotUpdated> = report
        .not_updated
        .iter()
        .filter(|n| matches!(n.status, "not-checked" | "edit-refused"))
        .collect();
    let lost: Vec<_> = report
        .notifications
        .iter()
        .filter(|n| !n.delivered)
        .collect();
    if report.errors.is_empty() && not.is_empty() && lost.is_empty() {
        return;
    }
    s.push_str("### Failed\n\n");
    if !not.is_empty() {
        s.push_str("| Image | Current | Location | Why |\n|---|---|---|---|\n");
        rows(s, &not);
    }
    for e in report.errors.iter().take(ROWS) {
        let _ = write!(s, "- {}: {}", code(&e.location), text(&e.message));
        if let Some(h) = &e.hint {
            let _ = write!(s, " (hint: {})", text(h));
        }
        s.push('\n');
    }
    for n in lost {
        let error = n.error.as_deref().unwrap_or_default();
        let _ = writeln!(
            s,
            "- notification {} not delivered: {}",
            code(&n.target),
            text(error)
        );
    }
    s.push('\n');
}

fn rows(s: &mut String, not: &[NotUpdated]) {
    for n in not.iter().take(ROWS) {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            code(&super::image_cell(n.image)),
            code(n.tag.unwrap_or("-")),
            code(&format!("{}:{}", n.file, n.line)),
            text(&n.reason.map(|r| r.to_string()).unwrap_or_default())
        );
    }
    more(s, not.len());
}

fn more(s: &mut String, total: usize) {
    if let Some(more) = total.checked_sub(ROWS).filter(|m| *m > 0) {
        let _ = writeln!(s, "\n… and {more} more (the JSON report lists every one)");
    }
    s.push('\n');
}
