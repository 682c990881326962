//! Update policies: which tag a reference should move to, given the registry's tags.
//!
//! Strategies live one per file. A strategy is a pure function of the current tag and the
//! tag list; strategies that need image metadata (newest-build, digest) will get it through
//! the resolve stage, never by calling the registry themselves.

pub mod constraint;
pub mod semver;

use serde::{Deserialize, Serialize};

/// How the next tag is chosen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Highest stable version above the current one, keeping its variant and precision.
    #[default]
    Semver,
}

/// The policy that applies to one reference.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Policy {
    pub strategy: Strategy,
}

/// What a policy decided for one reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Move to this tag.
    Update(String),
    /// Nothing newer qualifies.
    Current,
    /// The policy cannot judge this reference (the reason says why).
    Skip(String),
}

/// Why `policy` cannot judge `current` at all, decided before any registry work (so a
/// reference such as `latest` under `semver` costs no request).
pub fn cannot_judge(policy: &Policy, current: &str) -> Option<String> {
    match policy.strategy {
        Strategy::Semver => semver::cannot_judge(current),
    }
}

/// Apply `policy` to the current tag and the repository's tags.
pub fn choose(policy: &Policy, current: &str, tags: &[String]) -> Choice {
    match policy.strategy {
        Strategy::Semver => semver::choose(current, tags),
    }
}
