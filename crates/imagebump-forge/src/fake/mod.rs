//! Stateful fakes of the three forge APIs (wiremock servers that keep pull requests in
//! memory and answer as the real service does), for the forge tests, the integration tests
//! and the benchmark. Behind the `fake` feature.

pub mod common;
pub mod gitea;
pub mod github;
pub mod gitlab;

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
