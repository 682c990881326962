//! The deliver stage: show the plan (dry run) or apply it to the working tree.

pub mod dashboard;
pub mod diff;
pub mod marker;
pub mod pulls;
pub mod push;
pub mod write;
