//! imagebump: keeps the container images of a GitOps manifest repository current.
//!
//! The pipeline is `source → discover → resolve → plan → deliver`; each stage is a module
//! and hands plain data to the next. See docs/architecture.md.

// Library code never panics, whatever the input: no unwrap/expect/panic, no unchecked
// arithmetic, no indexing or slicing that could go out of bounds. `indexing_slicing` does not
// look at `str`, so `string_slice` covers `&text[a..b]` (which also panics inside a multi-byte
// character), and `panic` does not cover `unreachable!`, `todo!` and `unimplemented!`.
// Tests may panic.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::unreachable,
        clippy::todo,
        clippy::unimplemented,
        clippy::arithmetic_side_effects,
        clippy::indexing_slicing,
        clippy::string_slice
    )
)]

pub mod app;
pub mod chart;
pub mod chunked;
pub mod cli;
pub mod config;
pub mod deliver;
pub mod discover;
pub mod forge;
pub mod limits;
pub mod notify;
mod parallel;
pub mod plan;
pub mod progress;
pub mod promote;
pub mod registry;
pub mod report;
pub mod resolve;
pub mod source;
pub mod verify;
