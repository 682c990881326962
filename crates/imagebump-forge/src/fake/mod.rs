//! Stateful fakes of the three forge APIs (wiremock servers that keep pull requests in
//! memory and answer as the real service does), for the forge tests, the integration tests
//! and the benchmark. Behind the `fake` feature.

pub mod common;
pub mod gitea;
pub mod github;
pub mod gitlab;
