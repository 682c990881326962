//! The seam between the evaluation and the strategies: a [`Strategy`] reads tags (a sort
//! key for each, or why one is not a candidate); the evaluation runs the filters, the
//! constraint and "never downgrade" around it. One implementation per file (`semver.rs`,
//! `numeric.rs`, `regex.rs`, `alphabetical.rs`, `newest_build.rs`, `digest.rs`); [`of`]
//! picks the one a policy names. No strategy imports the evaluation.

use imagebump_model::policy::Strategy as Named;

use crate::candidate::{Key, Verdict};
use crate::semver::TagVersions;
use crate::{alphabetical, digest, newest_build, numeric, regex, semver, Policy};

/// How one strategy reads the tags of one evaluation.
pub trait Strategy: Send + Sync {
    // The defaults are those of a strategy that decides from metadata (newest build,
    // digest): it judges any current tag, a tag's key is its text, and it ranks nothing.

    /// Why the strategy cannot judge the current tag at all; `None` when it can.
    fn cannot_judge(&self, _current: &str) -> Option<String> {
        None
    }

    /// The current tag's key, for "never downgrade"; `None` when it has none.
    fn current_key<'t>(&self, current: &'t str) -> Option<Key<'t>> {
        Some(Key::Text(current, current))
    }

    /// A candidate `tag`'s key, or why it is not a candidate. `read`: its version read
    /// already (it is that list's `i`-th tag); `allow_pre`: the constraint has a
    /// pre-release part.
    fn key<'t>(
        &self,
        tag: &'t str,
        _read: Option<(&TagVersions, usize)>,
        _allow_pre: bool,
    ) -> Result<Key<'t>, Verdict> {
        Ok(Key::Text(tag, tag))
    }

    /// `tag`'s rank ignoring the filters, to compare a candidate with a rejected version;
    /// `None` when the strategy cannot rank it.
    fn rank<'t>(&self, _tag: &'t str) -> Option<Key<'t>> {
        None
    }

    /// The places of the repository's versions, best first, when the strategy orders by
    /// the versions `read` holds (so that candidates need not be sorted one by one).
    fn places<'r>(&self, _read: &'r TagVersions) -> Option<(&'r [u32], &'r [u32])> {
        None
    }

    /// With no current tag: the tag whose shape is assumed for the candidates (see
    /// [`semver::Semver::assumed`]).
    fn assumed(&self) -> Option<&str> {
        None
    }
}

/// The strategy `policy` names, reading tags for `current` among `tags` (`read`: their
/// versions, read once for every reference of the repository).
pub fn of(
    policy: &Policy,
    current: &str,
    tags: &[String],
    read: Option<&TagVersions>,
) -> Box<dyn Strategy> {
    match policy.strategy {
        Named::Semver => Box::new(semver::Semver::new(policy.semver_mode, current, tags, read)),
        Named::Numeric => Box::new(numeric::Numeric),
        Named::Regex => Box::new(regex::Pattern(policy.pattern.clone())),
        Named::Alphabetical => Box::new(alphabetical::Alphabetical),
        Named::NewestBuild => Box::new(newest_build::NewestBuild),
        Named::Digest => Box::new(digest::Digest),
    }
}
