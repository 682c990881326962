//! The fleet view: one self-contained HTML page (`promotions --output html`, `run
//! --report-html FILE`) with a matrix of applications by environment, the recent
//! promotions from git history and, for a run, its summary (docs/report.md, "HTML view").
//!
//! [`Fleet`] is plain data, sorted when it is made, so one input gives one page byte for
//! byte; [`fleet`] makes it from what `promotions` and `run` computed, [`page`] writes it.

pub mod fleet;
pub mod page;

use std::collections::BTreeMap;

pub use page::page;

/// Everything the page shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fleet {
    /// `imagebump run` or `imagebump promotions`: the page's heading.
    pub title: String,
    /// The repository as the metrics name it (a remote's clean URL, a directory's path).
    pub repository: String,
    /// The clock the ages are counted to (seconds since the epoch; `IMAGEBUMP_TEST_NOW`).
    pub now: i64,
    /// A run's summary; `None` for `promotions`.
    pub summary: Option<Summary>,
    /// Environments, upstream first: the columns.
    pub environments: Vec<String>,
    /// One per application, by name: the rows.
    pub apps: Vec<App>,
    /// The last promotions per application, newest first, by application.
    pub timeline: BTreeMap<String, Vec<Event>>,
}

/// One application: what runs in each environment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct App {
    pub name: String,
    /// By environment: each reference there (several when files or images differ).
    pub cells: BTreeMap<String, Vec<Entry>>,
}

/// One reference in one environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The normalised repository.
    pub image: String,
    /// The version there (empty when the reference has no tag).
    pub version: String,
    /// Since when it runs there (committer time of the commit that brought it), and whether
    /// history is cut before it (there since then at least).
    pub since: Option<(i64, bool)>,
    /// Days since the proposed version was built, when the run read it (pull-request
    /// facts).
    pub released_days: Option<i64>,
    pub state: State,
    /// Why, or what comes next, in words.
    pub detail: String,
    /// The pull request proposing the update (`https://` only).
    pub link: Option<String>,
    pub file: String,
}

/// A cell's state. Each has a word and a symbol, so colour is never the only carrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    UpToDate,
    /// An environment no rule promotes into: it follows the registry.
    Follows,
    /// The run proposes an update (a pull request, a push, or in a dry run the diff).
    Proposed,
    /// A version is ready to be promoted here (the next run proposes it).
    Ready,
    /// A newer version soaks upstream until this time (seconds since the epoch).
    Soaking(i64),
    /// Its update waits for the policy's schedule.
    Scheduled,
    /// A reviewer rejected newer versions: it stays.
    HeldBack,
    /// The newest version upstream was rejected or reverted there.
    Rejected,
    /// A `pin` holds it.
    Pinned,
    /// The registry could not be asked, the edit was refused, or it cannot be promoted.
    Failing,
    /// imagebump does not manage it, or its policy cannot judge the current tag.
    Unmanaged,
    /// Only a run can tell (the policy needs image metadata).
    Unknown,
}

impl State {
    /// The `data-state` value and CSS class suffix.
    pub fn key(self) -> &'static str {
        match self {
            State::UpToDate => "up-to-date",
            State::Follows => "follows",
            State::Proposed => "proposed",
            State::Ready => "ready",
            State::Soaking(_) => "soaking",
            State::Scheduled => "scheduled",
            State::HeldBack => "held-back",
            State::Rejected => "rejected",
            State::Pinned => "pinned",
            State::Failing => "failing",
            State::Unmanaged => "unmanaged",
            State::Unknown => "unknown",
        }
    }

    /// The symbol and words a person reads (symbols the common fonts have).
    pub fn label(self) -> (&'static str, &'static str) {
        match self {
            State::UpToDate => ("✓", "up to date"),
            State::Follows => ("◇", "follows the registry"),
            State::Proposed => ("↑", "update proposed"),
            State::Ready => ("↗", "ready to promote"),
            State::Soaking(_) => ("◔", "soaking"),
            State::Scheduled => ("◷", "scheduled"),
            State::HeldBack => ("‖", "held back"),
            State::Rejected => ("✗", "rejected"),
            State::Pinned => ("▪", "pinned"),
            State::Failing => ("⚠", "failing"),
            State::Unmanaged => ("–", "unmanaged"),
            State::Unknown => ("?", "needs a run"),
        }
    }

    /// Every state, in the legend's order.
    pub const ALL: [State; 12] = [
        State::UpToDate,
        State::Follows,
        State::Proposed,
        State::Ready,
        State::Soaking(0),
        State::Scheduled,
        State::HeldBack,
        State::Rejected,
        State::Pinned,
        State::Failing,
        State::Unmanaged,
        State::Unknown,
    ];
}

/// One version reaching one environment on the base branch.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Event {
    /// Committer time of the commit that brought it.
    pub at: i64,
    pub environment: String,
    pub version: String,
    /// The commit, abbreviated.
    pub commit: String,
    /// History is cut before it: there since then at least.
    pub cut: bool,
    /// A later commit rolled it back.
    pub reverted: bool,
}

/// A run's summary: what it did, the registry traffic, the errors.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// `dry-run`, `write`, `pull-requests`, `push`.
    pub mode: String,
    pub commit: Option<String>,
    /// Counts by what became of the references, in the report's order (`updates`, …).
    pub counts: Vec<(&'static str, usize)>,
    /// Registry requests by kind (`tag-list pages`, `tokens`, …).
    pub requests: Vec<(&'static str, usize)>,
    /// Attempts by registry and outcome.
    pub traffic: Vec<(String, String, usize)>,
    pub rate_limit_wait_seconds: f64,
    /// Errors, as (where, what).
    pub errors: Vec<(String, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVIL: &str = "<script>alert(1)</script>\"'\u{202E}&";

    fn entry(state: State, link: Option<&str>) -> Entry {
        Entry {
            image: format!("ghcr.io/acme/{EVIL}"),
            version: EVIL.into(),
            since: Some((1_795_000_000, true)),
            released_days: Some(3),
            state,
            detail: EVIL.into(),
            link: link.map(str::to_string),
            file: EVIL.into(),
        }
    }

    /// A fleet with every state and a hostile string in every field that comes from outside.
    fn hostile() -> Fleet {
        let mut cells = BTreeMap::new();
        let states = State::ALL.map(|s| entry(s, Some("https://github.com/acme/gitops/pull/7")));
        cells.insert(EVIL.to_string(), states.to_vec());
        cells.insert(
            "prod".to_string(),
            vec![entry(State::Proposed, Some("javascript:alert(1)"))],
        );
        let event = Event {
            at: 1_795_000_000,
            environment: EVIL.into(),
            version: EVIL.into(),
            commit: EVIL.into(),
            cut: false,
            reverted: true,
        };
        Fleet {
            title: "imagebump run".into(),
            repository: EVIL.into(),
            now: 1_795_100_000,
            summary: Some(Summary {
                mode: "dry-run".into(),
                commit: Some(EVIL.into()),
                counts: vec![("updates", 1)],
                requests: vec![("tokens", 0)],
                traffic: vec![(EVIL.into(), EVIL.into(), 2)],
                rate_limit_wait_seconds: 0.0,
                errors: vec![(EVIL.into(), EVIL.into())],
            }),
            environments: vec![EVIL.into(), "prod".into()],
            apps: vec![App {
                name: EVIL.into(),
                cells,
            }],
            timeline: BTreeMap::from([(EVIL.to_string(), vec![event])]),
        }
    }

    #[test]
    fn every_outside_string_is_escaped_and_only_https_links_are_kept() {
        let html = page(&hostile());
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(!html.contains('\u{202E}'));
        // The page's own script is the only one, and the policy allows it alone.
        assert_eq!(html.matches("<script>").count(), 1);
        assert!(html.contains("script-src 'sha256-"));
        assert!(!html.contains("http://") && !html.contains("src=\"http"));
        let escaped = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;\\u{202e}&amp;";
        // Repository, commit, traffic (2), error (2), app (row, th, timeline), environment
        // (column, cell, event), each entry's version, detail, file and image, event's
        // version and commit.
        assert!(html.matches(escaped).count() > 60, "{html}");
        assert_eq!(
            html.matches("<a href=\"https://github.com/acme/gitops/pull/7\" rel=\"noopener noreferrer\">pull request</a>")
                .count(),
            State::ALL.len()
        );
        assert!(!html.contains("javascript:"));
    }

    #[test]
    fn every_state_has_words_and_a_symbol_and_the_page_is_the_same_twice() {
        let html = page(&hostile());
        for state in State::ALL {
            let (symbol, words) = state.label();
            assert!(!symbol.is_empty() && !words.is_empty());
            assert!(
                html.contains(&format!("data-state=\"{}\"", state.key())),
                "{state:?}"
            );
        }
        assert!(html.contains(
            "here since ≤ <time datetime=\"2026-11-18T11:06:40Z\">2026-11-18 11:06</time> (1d 3h)"
        ));
        assert!(html.contains(" · built 3d ago</span>"));
        assert!(html.contains("↩ rolled back"));
        assert_eq!(html, page(&hostile()));
    }

    /// Past `MATRIX_CELLS` each row lists only its environments, upstream first, named,
    /// escaped, with drift marked against the one upstream.
    #[test]
    fn past_the_cell_cap_each_row_lists_its_environments() {
        let mut fleet = hostile();
        let version = |v: &str| Entry {
            version: v.into(),
            since: None,
            released_days: None,
            ..entry(State::UpToDate, None)
        };
        fleet.apps[0].cells = BTreeMap::from([
            (EVIL.to_string(), vec![version("1.1.0")]),
            ("prod".to_string(), vec![version("1.0.0")]),
        ]);
        let spare = page::MATRIX_CELLS / fleet.apps.len() - fleet.environments.len() + 1;
        fleet
            .environments
            .extend((0..spare).map(|i| format!("e{i}")));
        let html = page(&fleet);
        assert!(
            html.contains("1 applications in 20001 environments: too many for one matrix"),
            "{html}"
        );
        assert!(!html.contains("st-absent") && !html.contains("data-env=\"e0\""));
        assert!(!html.contains("<script>alert") && !html.contains('\u{202E}'));
        let escaped = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;\\u{202e}&amp;";
        let upstream = html
            .find(&format!("<li data-env=\"{escaped}\" data-state=\"up-to-date\" class=\"st st-up-to-date\"><span class=\"env\">{escaped}</span> "))
            .unwrap();
        let prod = html
            .find("<li data-env=\"prod\" data-state=\"up-to-date\" class=\"st st-up-to-date\"><span class=\"env\">prod</span> ")
            .unwrap();
        assert!(upstream < prod, "{html}");
        assert!(
            html[prod..].contains(&format!(
                "<span class=\"drift-mark\">≠ 1.1.0 in {escaped}</span></li>"
            )),
            "{html}"
        );
        assert!(html.contains("≠ drift: 2 versions"));
    }
}
