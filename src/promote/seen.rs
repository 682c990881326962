//! When imagebump first saw each version in a source environment, recorded in the
//! repository as create-only refs: `refs/imagebump/seen/<dir>/<image>/<tag>/<seconds>`, each
//! pointing at the base commit of the run that saw it. Soak counts from the later of a
//! version's committer date and this time, so a commit whose date is set in the past buys
//! nothing (docs/promotion.md, "When soak starts").

use std::collections::BTreeMap;

pub use crate::source::ref_component::{escape, unescape};

/// Where first sightings are recorded.
pub const NAMESPACE: &str = "refs/imagebump/seen/";

/// A version in a source directory: (source directory, image, tag).
pub type Key = (String, String, String);

/// The first sightings a remote holds, and what this run saw without a record.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// When each version was first seen, seconds since the epoch. Several records of one
    /// version (a second one pushed by hand) count by the latest: a record can only make a
    /// version wait longer, never less.
    pub at: BTreeMap<Key, i64>,
}

impl Seen {
    /// The records among `names` (refs below [`NAMESPACE`]); other names are left out.
    pub fn from_refs(names: &[String]) -> Seen {
        let mut at = BTreeMap::new();
        for (key, time) in names.iter().filter_map(|n| parse(n)) {
            let slot = at.entry(key).or_insert(time);
            *slot = (*slot).max(time);
        }
        Seen { at }
    }

    /// When `key` was first seen; `None`: never recorded.
    pub fn get(&self, key: &Key) -> Option<i64> {
        self.at.get(key).copied()
    }
}

/// The ref that records `key` first seen at `time`.
pub fn ref_name((dir, image, tag): &Key, time: i64) -> String {
    format!(
        "{NAMESPACE}{}/{}/{}/{time}",
        escape(dir),
        image.replace(':', "%3A"),
        escape(tag)
    )
}

fn parse(name: &str) -> Option<(Key, i64)> {
    let rest = name.strip_prefix(NAMESPACE)?;
    let (dir, rest) = rest.split_once('/')?;
    let (rest, time) = rest.rsplit_once('/')?;
    let (image, tag) = rest.rsplit_once('/')?;
    let time: i64 = time.parse().ok()?;
    let key = (unescape(dir)?, image.replace("%3A", ":"), unescape(tag)?);
    Some((key, time))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sighting_round_trips_and_the_latest_of_two_counts() {
        let key: Key = (
            "apps/web/overlays/dev".into(),
            "127.0.0.1:5000/team/web".into(),
            "1.2.0".into(),
        );
        let name = ref_name(&key, 1_700_000_000);
        assert_eq!(
            name,
            "refs/imagebump/seen/apps%2Fweb%2Foverlays%2Fdev/127.0.0.1%3A5000/team/web/1.2.0/1700000000"
        );
        let ok = std::process::Command::new("git")
            .args(["check-ref-format", &name])
            .status()
            .unwrap();
        assert!(ok.success(), "{name}");
        let earlier = ref_name(&key, 1_600_000_000);
        let seen = Seen::from_refs(&[name, earlier, "refs/imagebump/seen/x".into()]);
        assert_eq!(seen.get(&key), Some(1_700_000_000));
        assert_eq!(seen.at.len(), 1);
    }
}
