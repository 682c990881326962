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
}

impl Output {
    pub fn new(format: Format, quiet: bool, log_json: bool) -> Output {
        Output {
            format,
            quiet,
            log_json,
            color: std::io::stdout().is_terminal() && std::env::var_os(EnvVars::NO_COLOR).is_none(),
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

/// `value` as pretty JSON on stdout; a value that cannot be serialised is reported instead.
pub fn print_json<T: serde::Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("error: cannot serialise the report: {e}"),
    }
}
