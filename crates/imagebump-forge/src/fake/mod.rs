//! Stateful fakes of the three forge APIs (wiremock servers that keep pull requests in
//! memory and answer as the real service does), for the forge tests, the integration tests
//! and the benchmark. Behind the `fake` feature.

// Test support, not library code: it is compiled only for tests and behind the `fake` feature,
// which only dev-dependencies and the benchmark enable. A fake asked about a pull request or a
// user a test never set up should fail that test loudly, and its counters and indexes are
// driven by the test's own data, so the panic-free lints of the crate do not apply here.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::unreachable,
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::string_slice
)]

pub mod common;
pub mod git_data;
pub mod gitea;
pub mod github;
pub mod gitlab;
pub mod issues;

/// A pull request from `branch` into `main`, not a draft: what the forge tests open.
pub fn new_pull(branch: &str, title: &str, body: &str) -> crate::NewPull {
    crate::NewPull {
        branch: branch.to_string(),
        base: "main".to_string(),
        title: title.to_string(),
        body: body.to_string(),
        draft: false,
    }
}
