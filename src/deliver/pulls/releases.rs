//! The release notes text of the versions an update moves across, read only from the
//! manifest repository's own forge (the client and credentials the operator configured),
//! only for a source repository on that forge's host (a source elsewhere gets links,
//! never a request), and only from a repository everyone may read, or the manifest
//! repository itself: the forge is asked first (`Forge::audience`), and a repository it
//! does not say is public keeps its links, never its texts, since the operator's token
//! reads what the readers of the pull request may not. At most two calls per distinct
//! source repository, a few repositories per run, every text capped.

use std::collections::{BTreeMap, BTreeSet};

use imagebump_forge::{Audience, Forge, Release};
use imagebump_policy::constraint::parse_version;

use super::notes::{ReleaseText, UpdateNotes};

/// The most source repositories whose visibility and releases one run reads.
const MAX_REPOS: usize = 10;

/// Releases read per repository (one page, newest first).
const PER_REPO: usize = 30;

/// The most bytes of one release's text kept.
pub const RELEASE_TEXT_CAP: usize = 1024;

/// The most releases kept per update.
const PER_UPDATE: usize = 4;

/// What was read of one source repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// Its releases, newest first.
    Texts(Vec<Release>),
    /// Not read: the forge does not say the repository is public.
    NotPublic,
}

/// What was read of each source repository, by its path.
pub type Releases = BTreeMap<String, Read>;

/// Why a repository's release texts are not shown, as the body and the report say it.
pub const NOT_PUBLIC: &str = "the source repository is not public";

/// What the manifest repository's forge has of each source repository that `notes` name,
/// read once each, concurrently: its visibility, then, for a public repository or the
/// manifest repository itself, its releases. A repository whose read fails is left out
/// (its updates keep their links).
pub async fn read(forge: &dyn Forge, notes: &[&UpdateNotes]) -> Releases {
    let repos: BTreeSet<&str> = notes
        .iter()
        .filter_map(|n| n.site_repo.as_deref())
        .collect();
    let calls = repos
        .into_iter()
        .take(MAX_REPOS)
        .map(|repo| async move { (repo.to_string(), read_one(forge, repo).await) });
    let mut out = Releases::new();
    for (repo, read) in futures::future::join_all(calls).await {
        match read {
            Ok(read) => {
                out.insert(repo, read);
            }
            Err(e) => tracing::debug!(repo, error = %e, "releases not read"),
        }
    }
    out
}

/// One repository: its releases only when the forge says everyone may read them.
async fn read_one(forge: &dyn Forge, repo: &str) -> Result<Read, imagebump_forge::Error> {
    match forge.audience(repo).await? {
        Audience::Public | Audience::ThisRepository => {
            Ok(Read::Texts(forge.releases(repo, PER_REPO).await?))
        }
        Audience::Restricted => Ok(Read::NotPublic),
    }
}

/// The releases above version `from` up to `to` (their numbers compared, `v` and
/// suffixes aside: `16.13-alpine → 17.2-alpine` takes `v17.0.0` … `v17.2.0`), newest
/// first as the forge lists them, at most [`PER_UPDATE`], each text cut to
/// [`RELEASE_TEXT_CAP`] bytes. Tags that are not versions are not taken.
pub fn between(from: &str, to: &str, releases: &[Release]) -> Vec<ReleaseText> {
    let numbers = |s: &str| parse_version(s).map(|v| (v.major, v.minor, v.patch));
    let (Some(low), Some(high)) = (numbers(from), numbers(to)) else {
        return Vec::new();
    };
    releases
        .iter()
        .filter(|r| numbers(&r.tag).is_some_and(|v| low < v && v <= high))
        .take(PER_UPDATE)
        .map(|r| {
            let (text, cut) = cut_at(&r.body, RELEASE_TEXT_CAP);
            ReleaseText {
                tag: r.tag.clone(),
                name: r.name.clone(),
                text: text.to_string(),
                cut,
            }
        })
        .collect()
}

/// `s` cut to at most `cap` bytes at a character boundary, and whether it was cut.
fn cut_at(s: &str, cap: usize) -> (&str, bool) {
    if s.len() <= cap {
        return (s, false);
    }
    let end = (0..=cap)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0);
    (s.get(..end).unwrap_or_default(), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(tag: &str, body: &str) -> Release {
        Release {
            tag: tag.into(),
            name: format!("Release {tag}"),
            body: body.into(),
        }
    }

    #[test]
    fn releases_between_the_versions_newest_first_capped() {
        let list = [
            release("v17.3.0", "later"),
            release("v17.2.0", "two"),
            release("nightly", "not a version"),
            release("v17.0.0", "zero"),
            release("v16.13.0", "the old one"),
        ];
        let tags: Vec<String> = between("16.13-alpine", "17.2-alpine", &list)
            .into_iter()
            .map(|r| r.tag)
            .collect();
        assert_eq!(tags, ["v17.2.0", "v17.0.0"]);
        assert!(between("stable", "17.2", &list).is_empty());
        let many: Vec<Release> = (0..10)
            .rev()
            .map(|i| release(&format!("1.0.{i}"), ""))
            .collect();
        assert_eq!(between("0.9", "2.0", &many).len(), PER_UPDATE);
        let long = release("1.1.0", &"é".repeat(RELEASE_TEXT_CAP));
        let got = between("1.0.0", "1.1.0", &[long]);
        assert!(
            got[0].cut && got[0].text.len() <= RELEASE_TEXT_CAP,
            "{}",
            got[0].text.len()
        );
        assert_eq!(got[0].text.chars().count(), RELEASE_TEXT_CAP / 2);
    }
}
