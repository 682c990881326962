//! imagebump: keeps the container images of a GitOps manifest repository current.
//!
//! The pipeline is `source → discover → resolve → plan → deliver`; each stage is a module
//! and hands plain data to the next. See docs/architecture.md.

// Unit tests may count, slice and call `unreachable!`; clippy.toml lets them unwrap, expect,
// panic and index (Cargo.toml holds the library to the no-panic set).
#![cfg_attr(
    test,
    allow(
        clippy::arithmetic_side_effects,
        clippy::string_slice,
        clippy::unreachable
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
