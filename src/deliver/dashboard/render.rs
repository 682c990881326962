//! The dashboard's body: Markdown made from the run's results. Every value that comes from
//! the repository, a registry or a forge is escaped (`markdown_text`, `markdown_code`),
//! links are `https://` only, and the body stays under [`BODY_LIMIT`]: past it, a section
//! says how many more it holds.

use imagebump_model::escape::{https_link, markdown_code, markdown_text};

use super::boxes::Key;
use super::MARKER;

/// The most bytes a body holds (the forges refuse descriptions from 65,536 characters on,
/// GitHub's limit; GitLab's and Gitea's are larger).
pub const BODY_LIMIT: usize = 60_000;

/// Room kept for the notes and the closing lines after the sections.
const RESERVE: usize = 4_096;

/// What a dashboard shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Board {
    /// "Stop all updates" is on.
    pub stop_all: bool,
    /// imagebump's open pull requests, and the change sets it did not open (deferred).
    pub open: Vec<OpenPull>,
    /// Major updates held by `approveMajors`, and those approved.
    pub awaiting: Vec<Waiting>,
    pub rejected: Vec<RejectedLine>,
    /// Held by a schedule or a freeze (see `SCHEDULED_STATUSES`).
    pub scheduled: Vec<Line>,
    /// Waiting for a promotion's soak time.
    pub soaking: Vec<Line>,
    pub failing: Vec<Line>,
    /// What the run did not take from the dashboard, and why.
    pub notes: Vec<String>,
}

/// A pull request, or a change set not opened (no number).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenPull {
    pub number: Option<u64>,
    pub title: String,
    pub url: String,
    /// Why it is not opened, for a deferred one.
    pub deferred: Option<String>,
}

/// A major update `approveMajors` holds (or let through once approved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    pub image: String,
    pub from: String,
    pub to: String,
    pub major: u64,
    /// `file:line`.
    pub place: String,
    pub approved: bool,
}

/// Rejections of one source, or a pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectedLine {
    /// `pr-12`, `revert-<sha>`: a box lifts them; `None` (a pin): no box.
    pub source: Option<String>,
    pub why: String,
    /// `image version in file`, each.
    pub what: Vec<(String, String, String)>,
}

/// One held, soaking or failing item: where, and what is said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub place: String,
    pub text: String,
}

/// The body for `board`.
pub fn render(board: &Board) -> String {
    let mut w = Writer::new();
    w.raw(MARKER);
    w.raw(
        "imagebump keeps this issue up to date on every run: what is pending, held, rejected, \
         soaking and failing. Tick a box and the next run follows it; only ticks by people who \
         can write to the repository count.",
    );
    w.raw("");
    controls(&mut w, board);
    w.section(
        "Open pull requests",
        board.open.iter().map(open_line).collect(),
    );
    w.section(
        "Major updates awaiting approval",
        board.awaiting.iter().map(waiting_line).collect(),
    );
    w.section(
        "Rejected",
        board.rejected.iter().map(rejected_line).collect(),
    );
    w.section(
        "Waiting for a window",
        board.scheduled.iter().map(line).collect(),
    );
    w.section("Soaking", board.soaking.iter().map(line).collect());
    w.section("Failing", board.failing.iter().map(line).collect());
    w.notes(&board.notes);
    w.out
}

fn controls(w: &mut Writer, board: &Board) {
    w.raw("## Controls");
    w.raw("");
    w.raw(&checkbox(
        board.stop_all,
        "**Stop all updates**: propose nothing new; open pull requests are kept",
        &Key::StopAll,
    ));
    w.raw(&checkbox(
        false,
        "**Run now** despite the schedule (this once)",
        &Key::RunNow,
    ));
    if board.stop_all {
        w.raw("");
        w.raw("> **Stopped**: \"Stop all updates\" is ticked, so no new pull request is opened.");
    }
    w.raw("");
}

fn checkbox(on: bool, text: &str, key: &Key) -> String {
    let mark = if on { "x" } else { " " };
    format!("- [{mark}] {text} <!-- imagebump:box {} -->", key.text())
}

fn link(text: &str, url: &str) -> String {
    match https_link(url) {
        Some(url) => format!("[{text}]({url})"),
        None => text.to_string(),
    }
}

fn open_line(p: &OpenPull) -> String {
    let title = markdown_text(&p.title);
    match (p.number, &p.deferred) {
        (Some(n), _) => format!("- {}", link(&format!("#{n} {title}"), &p.url)),
        (None, Some(why)) => format!("- {title}: not opened ({})", markdown_text(why)),
        (None, None) => format!("- {title}"),
    }
}

fn waiting_line(x: &Waiting) -> String {
    let text = format!(
        "approve {} {} → {} ({})",
        markdown_code(&x.image),
        markdown_code(&x.from),
        markdown_code(&x.to),
        markdown_code(&x.place)
    );
    let key = Key::Approve {
        image: x.image.clone(),
        major: x.major,
    };
    checkbox(x.approved, &text, &key)
}

fn rejected_line(r: &RejectedLine) -> String {
    let what: Vec<String> = r
        .what
        .iter()
        .map(|(image, tag, file)| {
            format!(
                "{} {} in {}",
                markdown_code(image),
                markdown_code(tag),
                markdown_code(file)
            )
        })
        .collect();
    let text = format!("{}: {}", markdown_text(&r.why), what.join(", "));
    match &r.source {
        Some(source) if source.starts_with("pr-") => checkbox(
            false,
            &format!("recreate the pull request: {text}"),
            &Key::Lift(source.clone()),
        ),
        Some(source) => checkbox(false, &format!("retry: {text}"), &Key::Lift(source.clone())),
        None => format!("- {text}"),
    }
}

fn line(l: &Line) -> String {
    format!("- {}: {}", markdown_code(&l.place), markdown_text(&l.text))
}

/// A body being written within [`BODY_LIMIT`].
struct Writer {
    out: String,
}

impl Writer {
    fn new() -> Writer {
        Writer { out: String::new() }
    }

    fn raw(&mut self, text: &str) {
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// A section with its items, as many as fit; nothing when it has none.
    fn section(&mut self, title: &str, items: Vec<String>) {
        if items.is_empty() {
            return;
        }
        self.raw(&format!("## {title} ({})", items.len()));
        self.raw("");
        let room = BODY_LIMIT.saturating_sub(RESERVE);
        let total = items.len();
        for (shown, item) in items.into_iter().enumerate() {
            if self.out.len().saturating_add(item.len()) >= room {
                let more = total.saturating_sub(shown);
                self.raw(&format!("- … and {more} more: see the run's report"));
                break;
            }
            self.raw(&item);
        }
        self.raw("");
    }

    fn notes(&mut self, notes: &[String]) {
        let mut shown = 0usize;
        for note in notes {
            let text = format!("> **Note**: {}", markdown_text(note));
            if self.out.len().saturating_add(text.len()) >= BODY_LIMIT.saturating_sub(64) {
                break;
            }
            self.raw(&text);
            shown = shown.saturating_add(1);
        }
        if shown < notes.len() {
            self.raw(&format!(
                "> … and {} more notes",
                notes.len().saturating_sub(shown)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board() -> Board {
        Board {
            stop_all: true,
            open: vec![
                OpenPull {
                    number: Some(12),
                    title: "Update web to 1.3.0 [x](javascript:alert(1))".into(),
                    url: "https://github.com/octo/gitops/pull/12".into(),
                    deferred: None,
                },
                OpenPull {
                    number: None,
                    title: "Update db to 2.0.0".into(),
                    url: String::new(),
                    deferred: Some("\"Stop all updates\" is ticked".into()),
                },
            ],
            awaiting: vec![Waiting {
                image: "postgres".into(),
                from: "16.13-alpine".into(),
                to: "17.2-alpine".into(),
                major: 17,
                place: "apps/db/values.yaml:3".into(),
                approved: false,
            }],
            rejected: vec![
                RejectedLine {
                    source: Some("pr-7".into()),
                    why: "pull request #7 was closed without merging".into(),
                    what: vec![(
                        "ghcr.io/acme/web".into(),
                        "3.11.6".into(),
                        "apps/prod/k.yaml".into(),
                    )],
                },
                RejectedLine {
                    source: None,
                    why: "pinned <!-- imagebump:box stop-all -->".into(),
                    what: vec![("redis".into(), "7.2".into(), "apps/cache/k.yaml".into())],
                },
            ],
            scheduled: Vec::new(),
            soaking: vec![Line {
                place: "apps/prod/k.yaml:4".into(),
                text: "1.3.0: soaking in dev: 1h to go".into(),
            }],
            failing: vec![Line {
                place: "registry.example".into(),
                text: "HTTP 500\u{1b}[31m".into(),
            }],
            notes: vec![
                "ticks by @mallory were ignored: mallory cannot write to the repository".into(),
            ],
        }
    }

    #[test]
    fn body() {
        insta::assert_snapshot!(render(&board()));
    }

    #[test]
    fn untrusted_text_adds_no_box() {
        let keys = super::super::ticks(&render(&board()));
        let keys: Vec<String> = keys.keys().map(Key::text).collect();
        assert_eq!(
            keys,
            ["stop-all", "run-now", "lift pr-7", "approve postgres 17"]
        );
    }

    #[test]
    fn a_large_board_stays_under_the_limit() {
        let b = Board {
            failing: (0..5000)
                .map(|i| Line {
                    place: format!("apps/{i}/values.yaml:1"),
                    text: "x".repeat(100),
                })
                .collect(),
            notes: vec!["n".repeat(200); 400],
            ..Board::default()
        };
        let body = render(&b);
        assert!(body.len() < BODY_LIMIT, "{}", body.len());
        assert!(body.contains("more: see the run's report"));
        assert!(body.contains("more notes"));
    }
}
