//! The documented exit codes (docs/architecture.md, "Errors").

/// Done, no problem.
pub const OK: i32 = 0;
/// At least one problem (a file, a registry, an edit, a write, a forge call), or the source
/// could not be opened.
pub const ERRORS: i32 = 1;
/// A usage or configuration error: bad flags, an unreadable or invalid `imagebump.yaml`.
pub const USAGE: i32 = 2;
/// `run --exit-code` in dry-run mode: updates are pending and nothing went wrong.
pub const PENDING: i32 = 3;
