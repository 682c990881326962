//! When imagebump first saw each tag of a repository, for `minAge` on images without a
//! plausible build date (`imagebump_policy::age`). Kept in the manifest repository as
//! create-only refs, as promotion keeps its sightings (`promote::seen`):
//! `refs/imagebump/first-seen/<repository>/<tag>/<seconds>`, each pointing at the base
//! commit of the run that saw the tag. The repository's path components and the tag are
//! escaped one by one (`source::ref_component`), so any name read from a registry gives a
//! ref git accepts, below this namespace only.
//!
//! The keys differ from promotion's (a registry repository and a tag, not a source
//! directory's version), hence a namespace of their own.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use jiff::Timestamp;

use crate::source::ref_component::{canonical, capped};

/// Where first sightings of tags are recorded.
pub const NAMESPACE: &str = "refs/imagebump/first-seen/";

/// The most first sightings one run records, and the most records of tags not listed
/// it deletes: the rest wait for the next run (a tag not recorded stays first seen now).
pub const MAX_WRITTEN: usize = 256;

/// The first sightings a repository records, keyed by ref components as
/// [`ref_name`] writes them (`source::ref_component::capped`): repository → tag → seconds
/// since the epoch, and each record's ref name (to prune those of tags not listed). A tag
/// whose escape is too long for git is kept hashed, so records are looked up from the
/// tags a registry lists, never listed from the records alone.
#[derive(Debug, Clone, Default)]
pub struct FirstSeen {
    at: BTreeMap<String, BTreeMap<String, i64>>,
    names: BTreeMap<String, Vec<(String, String)>>,
}

impl FirstSeen {
    /// The records among `names` (refs below [`NAMESPACE`]); other names are left out.
    /// Several records of one tag count by the latest: a record can only make a tag wait
    /// longer.
    pub fn from_refs(names: &[String]) -> FirstSeen {
        let mut seen = FirstSeen::default();
        for name in names {
            let Some((repo, tag, time)) = parse(name) else {
                continue;
            };
            let slot = seen
                .at
                .entry(repo.clone())
                .or_default()
                .entry(tag.clone())
                .or_insert(time);
            *slot = (*slot).max(time);
            seen.names
                .entry(repo)
                .or_default()
                .push((tag, name.clone()));
        }
        seen
    }

    /// Which of `tags` of `repository` are recorded, and when each was first seen.
    pub fn of(&self, repository: &str, tags: &[String]) -> BTreeMap<String, Timestamp> {
        let Some(at) = self.at.get(&repo_key(repository)) else {
            return BTreeMap::new();
        };
        tags.iter()
            .filter_map(|tag| {
                let s = *at.get(&capped(tag))?;
                Some((tag.clone(), Timestamp::from_second(s).ok()?))
            })
            .collect()
    }

    /// The records of `repository` whose tag `listed` does not hold.
    pub fn stale(&self, repository: &str, listed: &[String]) -> Vec<String> {
        let Some(names) = self.names.get(&repo_key(repository)) else {
            return Vec::new();
        };
        let listed: HashSet<String> = listed.iter().map(|t| capped(t)).collect();
        names
            .iter()
            .filter(|(tag, _)| !listed.contains(tag))
            .map(|(_, name)| name.clone())
            .collect()
    }
}

/// What a run learned about first sightings: tags first seen now, to record, and records
/// of tags the registry does not list, to delete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sightings {
    /// (repository, tag) first seen by this run.
    pub new: BTreeSet<(String, String)>,
    /// Ref names of records whose tag is not listed.
    pub stale: BTreeSet<String>,
    /// The clock `minAge` judged each chosen update by: (repository, tag) → clock.
    pub clocks: BTreeMap<(String, String), imagebump_policy::age::Clock>,
    /// The clock of each candidate `minAge` held back: (repository, tag) → clock.
    pub held: BTreeMap<(String, String), imagebump_policy::age::Clock>,
}

/// The ref that records `tag` of `repository` first seen at `time`: each component
/// escaped, or hashed when its escape is too long for git.
pub fn ref_name(repository: &str, tag: &str, time: i64) -> String {
    format!("{NAMESPACE}{}/{}/{time}", repo_key(repository), capped(tag))
}

/// `repository`'s components as [`ref_name`] writes them.
fn repo_key(repository: &str) -> String {
    let repo: Vec<String> = repository.split('/').map(capped).collect();
    repo.join("/")
}

/// (repository, tag) of a record in their canonical ref components, and its time.
fn parse(name: &str) -> Option<(String, String, i64)> {
    let rest = name.strip_prefix(NAMESPACE)?;
    let (rest, time) = rest.rsplit_once('/')?;
    let (repo, tag) = rest.rsplit_once('/')?;
    let time: i64 = time.parse().ok()?;
    let repo: Option<Vec<String>> = repo.split('/').map(canonical).collect();
    Some((repo?.join("/"), canonical(tag)?, time))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_the_latest_of_two_counts() {
        let name = ref_name("127.0.0.1:5000/team/web", "1.2.0", 1_700_000_000);
        assert_eq!(
            name,
            "refs/imagebump/first-seen/127.0.0.1%3A5000/team/web/1.2.0/1700000000"
        );
        let earlier = ref_name("127.0.0.1:5000/team/web", "1.2.0", 1_600_000_000);
        let other = ref_name("127.0.0.1:5000/team/web", "1.3.0", 1_650_000_000);
        let seen = FirstSeen::from_refs(&[
            name.clone(),
            earlier.clone(),
            other.clone(),
            "refs/imagebump/first-seen/x".into(),
            "refs/imagebump/first-seen/a/%ZZ/1".into(),
        ]);
        let tags = [
            "1.2.0".to_string(),
            "1.3.0".to_string(),
            "1.4.0".to_string(),
        ];
        let of = seen.of("127.0.0.1:5000/team/web", &tags);
        assert_eq!(of.get("1.2.0").map(|t| t.as_second()), Some(1_700_000_000));
        assert_eq!(of.len(), 2);
        assert!(seen.of("127.0.0.1:5000/team", &tags).is_empty());
        // Both records of 1.2.0 go when it is not listed.
        let listed = ["1.3.0".to_string()];
        assert_eq!(
            seen.stale("127.0.0.1:5000/team/web", &listed),
            [name, earlier]
        );
    }

    #[test]
    fn hostile_names_give_refs_git_accepts_inside_the_namespace() {
        // Escaped, 382 bytes: over git's 255 a component.
        let long = format!("a{}", ".".repeat(127));
        let long_repo = format!("ghcr.io/{}", "é".repeat(100));
        let rows = [
            ("ghcr.io/a/b", ".lock"),
            ("ghcr.io/a/b", "a..b"),
            ("ghcr.io/..", "x"),
            ("ghcr.io/a.lock/b", "v1"),
            ("h:1/@{x}", "~^:?*[\\ "),
            ("ghcr.io/a", "../../heads/main"),
            ("ghcr.io/a", "é\u{7f}\n"),
            ("ghcr.io/a", long.as_str()),
            (long_repo.as_str(), "v1"),
        ];
        for (repo, tag) in rows {
            let name = ref_name(repo, tag, 1);
            assert!(name.starts_with(NAMESPACE), "{name}");
            let ok = std::process::Command::new("git")
                .args(["check-ref-format", &name])
                .status()
                .unwrap();
            assert!(ok.success(), "{repo} {tag}: {name}");
            assert!(name.split('/').all(|c| c.len() <= 255), "{name}");
            let seen = FirstSeen::from_refs(std::slice::from_ref(&name));
            let tags = [tag.to_string(), "other".to_string()];
            assert_eq!(
                seen.of(repo, &tags).keys().collect::<Vec<_>>(),
                [tag],
                "{name}"
            );
            assert!(seen.stale(repo, &tags).is_empty(), "{name}");
            assert_eq!(seen.stale(repo, &[]), std::slice::from_ref(&name));
        }
    }
}
