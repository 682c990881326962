//! imagebump: keeps the container images of a GitOps manifest repository current.
//!
//! The pipeline is `source → discover → resolve → plan → deliver`; each stage is a module
//! and hands plain data to the next. See docs/architecture.md.

pub mod app;
pub mod argocd;
pub mod cli;
pub mod config;
pub mod deliver;
pub mod discover;
pub mod forge;
mod parallel;
pub mod plan;
pub mod policy;
pub mod progress;
pub mod registry;
pub mod report;
pub mod resolve;
pub mod source;
