//! A progress bar on stderr for the long parts of a run (reading files, asking registries),
//! only when stderr is a terminal and logs are text; otherwise silent.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A progress display; cheap to clone into tasks. Hidden when not on a terminal.
#[derive(Clone)]
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar on stderr if it is a terminal and `enabled`, else nothing.
    pub fn stderr(enabled: bool) -> Progress {
        if enabled && std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} {pos}/{len} [{elapsed}]")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            Progress(Some(bar))
        } else {
            Progress(None)
        }
    }

    /// No display (tests, JSON logs, library use).
    pub fn hidden() -> Progress {
        Progress(None)
    }

    /// Start a stage of `total` steps.
    pub fn stage(&self, name: &'static str, total: usize) {
        if let Some(b) = &self.0 {
            b.set_message(name);
            b.set_length(total as u64);
            b.set_position(0);
        }
    }

    pub fn inc(&self) {
        if let Some(b) = &self.0 {
            b.inc(1);
        }
    }

    /// Remove the bar before results are printed.
    pub fn finish(&self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}

/// What the run has changed outside itself so far (branches pushed, pull requests opened,
/// updated or closed, files written), one line each, so a run stopped by a signal or its
/// deadline can still say what it did. Cheap to clone; shared with the tasks that act.
#[derive(Clone, Default)]
pub struct Journal(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl Journal {
    pub fn done(&self, what: impl Into<String>) {
        // A poisoned lock only means another task panicked mid-push; the lines stay valid.
        let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        lines.push(what.into());
    }

    pub fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
