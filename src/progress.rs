//! A progress bar on stderr for the long parts of a run (reading files, asking registries),
//! only when stderr is a terminal and logs are text; otherwise silent.

use std::io::IsTerminal;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A progress display; cheap to clone into tasks. Hidden when not on a terminal.
#[derive(Clone)]
pub struct Progress(Option<Shown>);

/// The bar and the name of its stage (the message without what it waits for).
#[derive(Clone)]
struct Shown {
    bar: ProgressBar,
    stage: Arc<Mutex<&'static str>>,
}

/// How often the line says again what it waits for.
const WATCH_EVERY: Duration = Duration::from_secs(1);

impl Progress {
    /// A bar on stderr if it is a terminal and `enabled`, else nothing.
    pub fn stderr(enabled: bool) -> Progress {
        if enabled && std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} {pos}/{len} [{elapsed}]")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            Progress(Some(Shown {
                bar,
                stage: Arc::new(Mutex::new("")),
            }))
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
        if let Some(s) = &self.0 {
            *s.stage.lock().unwrap_or_else(|p| p.into_inner()) = name;
            s.bar.set_message(name);
            s.bar.set_length(total as u64);
            s.bar.set_position(0);
        }
    }

    pub fn inc(&self) {
        if let Some(s) = &self.0 {
            s.bar.inc(1);
        }
    }

    /// Say, after the stage's name, what `waiting` says the run waits for (`waiting 12s for
    /// registry.example:5000 (tags of acme/web)`), every second until the bar is finished.
    /// Nothing when the bar is hidden; needs a Tokio runtime.
    pub fn watch(&self, waiting: impl Fn() -> Option<String> + Send + 'static) {
        let Some(shown) = self.0.clone() else {
            return;
        };
        tokio::spawn(async move {
            while !shown.bar.is_finished() {
                tokio::time::sleep(WATCH_EVERY).await;
                let stage = *shown.stage.lock().unwrap_or_else(|p| p.into_inner());
                match waiting() {
                    Some(w) => shown.bar.set_message(format!("{stage}: {w}")),
                    None => shown.bar.set_message(stage),
                }
            }
        });
    }

    /// Remove the bar before results are printed.
    pub fn finish(&self) {
        if let Some(s) = &self.0 {
            s.bar.finish_and_clear();
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
