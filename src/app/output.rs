//! Where and how a command speaks: results on stdout (text or JSON), problems on stderr
//! (or through the log when it is JSON), a progress bar on a terminal.

use std::io::{IsTerminal, Write};

use crate::cli::Format;
use crate::progress::Progress;
use crate::report::Problem;
use imagebump_model::env::EnvVars;

/// The output settings of one invocation, made once from the command line.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// Results on stdout as text or as JSON.
    pub format: Format,
    /// `-q`: no progress bar either.
    pub quiet: bool,
    /// Logs are JSON lines: then the run's errors, warnings and notes go through the log
    /// too, so that a log collector sees every line as JSON.
    pub log_json: bool,
    /// Diffs in colour: stdout is a terminal and `NO_COLOR` is unset.
    pub color: bool,
    /// The width tables are fitted to: `COLUMNS`, else the terminal's; `None` (every cell
    /// whole) with `-v` or when stdout is not a terminal.
    pub width: Option<usize>,
    /// When the command started (a run's duration, for its metrics).
    pub started: std::time::Instant,
}

impl Output {
    pub fn new(format: Format, quiet: bool, log_json: bool, verbose: u8) -> Output {
        let terminal = std::io::stdout().is_terminal();
        Output {
            format,
            quiet,
            log_json,
            color: terminal && std::env::var_os(EnvVars::NO_COLOR).is_none(),
            width: (verbose == 0).then(|| width(terminal)).flatten(),
            started: std::time::Instant::now(),
        }
    }

    /// The progress bar for long registry work (hidden off a terminal, with JSON logs, `-q`).
    pub fn progress(&self) -> Progress {
        Progress::stderr(!self.log_json && !self.quiet)
    }

    pub fn errors(&self, problems: &[Problem]) {
        self.problems("error", problems);
    }

    pub fn notes(&self, notes: &[Problem]) {
        self.problems("note", notes);
    }

    pub fn warnings(&self, warnings: &[Problem]) {
        self.problems("warning", warnings);
    }

    /// One `warning: …` line about the run itself (not a file or registry), or a JSON log
    /// event.
    pub fn warning(&self, message: &str) {
        if self.log_json {
            tracing::warn!("{message}");
        } else {
            let _ = writeln!(std::io::stderr().lock(), "warning: {message}");
        }
    }

    /// `error: location: message (hint: …)` lines on stderr, or JSON log events.
    fn problems(&self, kind: &str, problems: &[Problem]) {
        if self.log_json {
            for p in problems {
                let hint = p.hint.as_deref().unwrap_or_default();
                match kind {
                    "error" => tracing::error!(location = %p.location, hint, "{}", p.message),
                    // Notes are shown by default, as in text mode.
                    _ => tracing::warn!(kind, location = %p.location, hint, "{}", p.message),
                }
            }
            return;
        }
        let mut err = std::io::stderr().lock();
        for p in problems {
            let _ = writeln!(err, "{kind}: {p}");
        }
    }
}

/// `COLUMNS` when it is a number, else the terminal's width when stdout is one.
fn width(terminal: bool) -> Option<usize> {
    let columns = std::env::var(EnvVars::COLUMNS)
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0);
    columns.or_else(|| {
        terminal
            .then(terminal_size::terminal_size)
            .flatten()
            .map(|(w, _)| usize::from(w.0))
    })
}

/// `value` as pretty JSON on stdout; a value that cannot be serialised is reported instead.
///
/// Streamed through a buffer rather than built as one string: a report of 10,000 apps is
/// tens of megabytes, and holding it whole was the run's largest single allocation.
pub fn print_json<T: serde::Serialize>(value: &T) {
    let mut out = std::io::BufWriter::with_capacity(64 << 10, std::io::stdout().lock());
    let written = serde_json::to_writer_pretty(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    match written {
        // A reader that has gone away is no error (see `print`).
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => eprintln!("error: cannot write the report: {e}"),
        Ok(()) => {}
    }
}

/// `text` on stdout. A reader that has gone away (`imagebump scan | head -1`) is no error:
/// the rest is dropped and the command ends with its usual status, as `print!` would not
/// (it panics).
pub fn print(text: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_fmt(text).and_then(|()| out.flush());
}
