//! Versions reviewers rejected, read back from closed pull requests and reverted commits.

use std::collections::BTreeMap;

use crate::deliver::marker;
use crate::forge::{Pull, PullState};
use crate::resolve::Rejections;
use crate::source::git::CommitInfo;
use imagebump_model::name::parse_name;

/// Where rejections are recorded in the repository itself, one ref each, so that they
/// outlive the forge's paging of closed pull requests and the history depth read.
pub const NAMESPACE: &str = "refs/imagebump/rejected/";

/// One version a reviewer rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub image: String,
    pub tag: String,
    /// `pr-12` or `revert-1a2b3c4d5e`: what said no, as the ref records it.
    pub source: String,
    pub why: String,
}

impl Rejected {
    /// `refs/imagebump/rejected/<image>/<tag>/<source>`, the image's `:` (a port) as `%3A`.
    pub fn ref_name(&self) -> String {
        format!(
            "{NAMESPACE}{}/{}/{}",
            self.image.replace(':', "%3A"),
            self.tag,
            self.source
        )
    }

    /// A rejection read back from its ref name.
    pub fn from_ref(name: &str) -> Option<Rejected> {
        let rest = name.strip_prefix(NAMESPACE)?;
        let (rest, source) = rest.rsplit_once('/')?;
        let (image, tag) = rest.rsplit_once('/')?;
        let image = image.replace("%3A", ":");
        let why = if let Some(n) = source.strip_prefix("pr-") {
            format!("pull request #{n} was closed without merging")
        } else if let Some(sha) = source.strip_prefix("revert-") {
            format!("commit {sha} was reverted")
        } else {
            return None;
        };
        Some(Rejected {
            image,
            tag: tag.to_string(),
            source: source.to_string(),
            why,
        })
    }
}

/// Versions reviewers rejected: pull requests closed without merging (their marker) and
/// reverted imagebump commits (their trailers), within the base branch's recent history.
pub fn rejected(closed: &[Pull], history: &[CommitInfo]) -> Vec<Rejected> {
    let mut out = Vec::new();
    let mut reject = |image: &str, to: &str, source: String, why: String| {
        out.push(Rejected {
            image: image.to_string(),
            tag: marker::tag_of(to).to_string(),
            source,
            why,
        });
    };
    for p in closed.iter().filter(|p| p.state == PullState::Closed) {
        for u in marker::parse(&p.body).unwrap_or_default() {
            reject(
                &u.image,
                &u.to,
                format!("pr-{}", p.number),
                format!("pull request #{} was closed without merging", p.number),
            );
        }
    }
    let by_sha: BTreeMap<&str, &CommitInfo> = history.iter().map(|c| (c.sha.as_str(), c)).collect();
    for c in history {
        let Some(reverted) = reverted_sha(&c.body) else {
            continue;
        };
        let Some(original) = by_sha.get(reverted) else {
            continue;
        };
        for (k, v) in &original.trailers {
            if k.eq_ignore_ascii_case(marker::TRAILER) {
                if let Some((image, _, to)) = marker::parse_trailer(v) {
                    reject(
                        &image,
                        &to,
                        format!("revert-{}", short(reverted)),
                        format!(
                            "commit {} was reverted by {}",
                            short(reverted),
                            short(&c.sha)
                        ),
                    );
                }
            }
        }
    }
    out
}

/// The rejections by image: tag → why (the first reason found wins).
pub fn by_image(all: &[Rejected]) -> Rejections {
    let mut out: Rejections = Default::default();
    for r in all {
        if let Ok(name) = parse_name(&r.image) {
            out.entry(name)
                .or_default()
                .entry(r.tag.clone())
                .or_insert_with(|| r.why.clone());
        }
    }
    out
}

/// [`rejected`], by image.
pub fn rejections(closed: &[Pull], history: &[CommitInfo]) -> Rejections {
    by_image(&rejected(closed, history))
}

fn short(sha: &str) -> &str {
    // A commit id is ASCII hex; anything else is shown whole.
    sha.get(..sha.len().min(10)).unwrap_or(sha)
}

/// `This reverts commit <sha>.` in a commit message (as `git revert` writes it).
fn reverted_sha(body: &str) -> Option<&str> {
    let (_, rest) = body.split_once("This reverts commit ")?;
    let sha = rest.split(|c: char| !c.is_ascii_hexdigit()).next()?;
    (sha.len() >= 7).then_some(sha)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejection_round_trips_through_its_ref_name() {
        let r = Rejected {
            image: "127.0.0.1:5000/team/web".into(),
            tag: "1.1.0".into(),
            source: "pr-12".into(),
            why: "pull request #12 was closed without merging".into(),
        };
        assert_eq!(
            r.ref_name(),
            "refs/imagebump/rejected/127.0.0.1%3A5000/team/web/1.1.0/pr-12"
        );
        assert_eq!(Rejected::from_ref(&r.ref_name()), Some(r));
        let revert =
            Rejected::from_ref("refs/imagebump/rejected/ghcr.io/a/b/2.0/revert-1a2b3c4d5e")
                .unwrap();
        assert_eq!(revert.why, "commit 1a2b3c4d5e was reverted");
        assert_eq!(
            Rejected::from_ref("refs/imagebump/rejected/x/1.0/other"),
            None
        );
        assert_eq!(Rejected::from_ref("refs/heads/main"), None);
    }
    use crate::deliver::marker::Marked;
    use crate::source::git::Signature;

    #[test]
    fn reverts_and_closed_pulls_reject_their_versions() {
        let marked = Marked {
            image: "ghcr.io/acme/web".into(),
            group: "apps/web".into(),
            file: "apps/web/kustomization.yaml".into(),
            from: "1.2.0".into(),
            to: "1.3.0".into(),
        };
        let closed = Pull {
            number: 7,
            branch: "imagebump/web".into(),
            base: "main".into(),
            title: "t".into(),
            body: marker::render(&[marked]),
            state: PullState::Closed,
            url: String::new(),
            labels: Vec::new(),
            assignees: Vec::new(),
            draft: false,
        };
        let sig = Signature {
            name: "a".into(),
            email: "a@b".into(),
        };
        let original = CommitInfo {
            sha: "1111111111aaaa".into(),
            parents: vec![],
            author: sig.clone(),
            committer: sig.clone(),
            subject: "Update api".into(),
            body: String::new(),
            trailers: vec![(
                "Imagebump-Update".into(),
                "ghcr.io/acme/api 2.0.0 -> 2.1.0".into(),
            )],
        };
        let revert = CommitInfo {
            sha: "2222222222bbbb".into(),
            subject: "Revert \"Update api\"".into(),
            body: "This reverts commit 1111111111aaaa.\n".into(),
            trailers: vec![],
            ..original.clone()
        };
        let r = rejections(&[closed], &[revert, original]);
        let web = parse_name("ghcr.io/acme/web").unwrap();
        let api = parse_name("ghcr.io/acme/api").unwrap();
        assert_eq!(
            r[&web]["1.3.0"],
            "pull request #7 was closed without merging"
        );
        assert_eq!(
            r[&api]["2.1.0"],
            "commit 1111111111 was reverted by 2222222222"
        );
    }
}
