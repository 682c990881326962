//! Registries that never answered this run (refused or silent connections, timeouts): each
//! is said once, with its URL and its error once, rather than once per repository; and when
//! no registry answered at all, one line says so first (offline, or a proxy in the way).

use std::collections::{BTreeMap, BTreeSet};

use crate::registry::gate::DID_NOT_ANSWER;
use crate::registry::Error;
use imagebump_model::Problem;

/// The location of the line that says no registry answered.
pub const SUMMARY_LOCATION: &str = "registries";

/// Did the failure leave the registry unheard (no connection, or no answer in time)? A
/// certificate or protocol failure is not: the registry is there, and its lines stay per
/// repository with their own hints.
pub fn unheard(e: &Error) -> bool {
    matches!(
        e,
        Error::Timeout { .. }
            | Error::Transport {
                retryable: true,
                ..
            }
    )
}

/// The short status a reference's row shows when its registry is not heard.
pub fn status(e: &Error) -> Option<&'static str> {
    match e {
        Error::Timeout { .. } => Some("registry did not answer"),
        Error::Transport {
            retryable: true, ..
        } => Some("registry unreachable"),
        Error::Skipped { reason, .. } if reason.starts_with(DID_NOT_ANSWER) => {
            Some("registry did not answer")
        }
        Error::Skipped { reason, .. } if !reason.contains("pull limit") => Some("registry skipped"),
        _ => None,
    }
}

/// One registry never heard: its first error with a URL, and what it left unchecked.
#[derive(Debug)]
struct Silent {
    first: Error,
    repositories: usize,
    references: usize,
}

/// The failed tag lists of registries never heard, gathered per registry host.
#[derive(Debug, Default)]
pub struct Unheard {
    by_host: BTreeMap<String, Silent>,
    /// Every registry host a list was asked of.
    asked: BTreeSet<String>,
}

impl Unheard {
    /// A list was asked of `host`.
    pub fn asked(&mut self, host: &str) {
        self.asked.insert(host.to_string());
    }

    /// `host`'s list failed with `e`, leaving `references` unchecked.
    pub fn add(&mut self, host: &str, e: &Error, references: usize) {
        let entry = self.by_host.entry(host.to_string()).or_insert(Silent {
            first: e.clone(),
            repositories: 0,
            references: 0,
        });
        // An error with a URL says more than "skipped".
        if matches!(entry.first, Error::Skipped { .. }) && !matches!(e, Error::Skipped { .. }) {
            entry.first = e.clone();
        }
        entry.repositories = entry.repositories.saturating_add(1);
        entry.references = entry.references.saturating_add(references);
    }

    /// Does the registry at `host` have its line here already?
    pub fn has(&self, host: &str) -> bool {
        self.by_host.contains_key(host)
    }

    /// The hosts said here (their `skipped` line would repeat it).
    pub fn hosts(&self) -> impl Iterator<Item = &str> {
        self.by_host.keys().map(String::as_str)
    }

    /// One problem per registry never heard, and first, when none of the registries asked
    /// answered, the summary.
    pub fn problems(&self) -> (Option<Problem>, Vec<Problem>) {
        let lines = self.by_host.iter().map(|(host, s)| line(host, s)).collect();
        let none_answered =
            !self.by_host.is_empty() && self.asked.iter().all(|h| self.by_host.contains_key(h));
        let summary = none_answered.then(|| {
            let references: usize = self.by_host.values().map(|s| s.references).sum();
            Problem {
                location: SUMMARY_LOCATION.into(),
                message: format!(
                    "no registry answered: offline? proxy? ({} registries, {references} references)",
                    self.by_host.len()
                ),
                hint: Some(
                    "check the network, and HTTPS_PROXY / NO_PROXY if a proxy is needed; each registry's error follows"
                        .into(),
                ),
            }
        });
        (summary, lines)
    }
}

/// `host: https://host: Connection refused (os error 111); 2 repositories, 3 references
/// not checked`.
fn line(host: &str, s: &Silent) -> Problem {
    let at = match s.first.url() {
        Some(url) => format!("{}: ", origin(url)),
        None => String::new(),
    };
    Problem {
        location: host.to_string(),
        message: format!(
            "{at}{}; {} not checked",
            s.first.short(),
            counted(s.repositories, s.references)
        ),
        hint: s.first.hint(),
    }
}

/// `1 repository, 3 references`.
fn counted(repositories: usize, references: usize) -> String {
    let r = if repositories == 1 {
        "repository"
    } else {
        "repositories"
    };
    let s = if references == 1 {
        "reference"
    } else {
        "references"
    };
    format!("{repositories} {r}, {references} {s}")
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &str) -> &str {
    let Some((_, rest)) = url.split_once("://") else {
        return url;
    };
    match rest.find('/') {
        Some(i) => url
            .get(..url.len().saturating_sub(rest.len()).saturating_add(i))
            .unwrap_or(url),
        None => url,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(repo: &str) -> Error {
        Error::Transport {
            url: format!("https://127.0.0.1:1/v2/{repo}/tags/list?n=1000"),
            reason: "Connection refused (os error 111)".into(),
            retryable: true,
        }
    }

    #[test]
    fn one_line_per_registry_and_a_summary_when_none_answered() {
        let mut u = Unheard::default();
        for h in ["127.0.0.1:1", "127.0.0.1:2"] {
            u.asked(h);
        }
        u.add("127.0.0.1:1", &refused("acme/web"), 2);
        u.add("127.0.0.1:1", &refused("acme/api"), 1);
        let skipped = Error::Skipped {
            host: "127.0.0.1:2".into(),
            reason: "it did not answer (no answer within 30s)".into(),
        };
        u.add("127.0.0.1:2", &skipped, 1);
        let (summary, lines) = u.problems();
        let said: Vec<String> = summary
            .iter()
            .chain(&lines)
            .map(|p| format!("{}: {}", p.location, p.message))
            .collect();
        assert_eq!(
            said,
            [
                "registries: no registry answered: offline? proxy? (2 registries, 4 references)",
                "127.0.0.1:1: https://127.0.0.1:1: Connection refused (os error 111); 2 repositories, 3 references not checked",
                "127.0.0.1:2: it did not answer (no answer within 30s); 1 repository, 1 reference not checked",
            ]
        );
    }

    #[test]
    fn no_summary_when_one_registry_answered() {
        let mut u = Unheard::default();
        u.asked("127.0.0.1:1");
        u.asked("ghcr.io");
        u.add("127.0.0.1:1", &refused("acme/web"), 1);
        assert!(u.problems().0.is_none());
    }
}
