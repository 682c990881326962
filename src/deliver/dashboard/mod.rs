//! The dashboard issue (`pullRequests.dashboard`): one issue per repository, opened by
//! imagebump's own forge account, listing what is pending, held, rejected, soaking and
//! failing, with checkboxes the next run honours (docs/pull-requests.md, "Dashboard").
//!
//! Stateless like the rest: what the boxes decided is kept as refs under [`NAMESPACE`] on
//! the remote (only writers can push them); the issue is how people change them. A run
//! reads the refs and the issue, takes the ticks only when the forge says the last editor
//! of the description can write to the repository (or is imagebump itself), updates the
//! refs, and writes the issue back from the result, only when its text changed.
//!
//! `boxes.rs` reads the ticks, `state.rs` turns ticks into decisions, `render.rs` writes
//! the body, `forge.rs` finds, checks and writes the issue.

mod boxes;
mod forge;
mod render;
mod state;

pub use self::boxes::{ticks, Key};
pub use self::forge::{keep, publish, read, Place, Published};
pub use self::render::{render, Board, Line, OpenPull, RejectedLine, Waiting, BODY_LIMIT};
pub use self::state::{major_of, Decided, State};

/// The first line of every dashboard imagebump writes. An issue is the dashboard only when
/// imagebump's own account opened it and its description starts with this line.
pub const MARKER: &str = "<!-- imagebump:dashboard -->";

/// Where the decisions taken on the dashboard are kept, as refs on the remote.
pub const NAMESPACE: &str = "refs/imagebump/dashboard/";

/// The statuses of references held by a schedule, a freeze or "Stop all updates" (the
/// report's `notUpdated`): listed under "Waiting for a window".
pub const SCHEDULED_STATUSES: &[&str] = &["scheduled"];

/// What the dashboard says about this run, beside the configuration: the schedule's gate
/// honours it (`ignore_schedule`: "Run now" was ticked; `stop_all`: "Stop all updates" is on).
pub use crate::resolve::schedule::Overrides;

/// The dashboard as read before a run.
#[derive(Debug, Clone, Default)]
pub struct Steering {
    /// imagebump's dashboard issue, when there is one.
    pub issue: Option<imagebump_forge::Issue>,
    /// The decisions in force for this run.
    pub decided: Decided,
    /// The refs this run creates and deletes to keep what was ticked.
    pub create: Vec<String>,
    pub delete: Vec<String>,
    /// What was not taken and why (ticks by someone who cannot write): warnings, and
    /// a note on the dashboard.
    pub notes: Vec<String>,
}

impl Steering {
    pub fn overrides(&self) -> Overrides {
        Overrides {
            ignore_schedule: self.decided.run_now,
            stop_all: self.decided.state.stop_all,
        }
    }
}
