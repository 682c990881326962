//! Versions reviewers rejected, read back from closed pull requests and reverted commits.

use std::collections::BTreeMap;

use crate::deliver::marker;
use crate::forge::{Pull, PullState};
use crate::resolve::Rejections;
use crate::source::git::CommitInfo;
use imagebump_model::name::parse_name;

/// Versions reviewers rejected: pull requests closed without merging (their marker) and
/// reverted imagebump commits (their trailers), within the base branch's recent history.
pub fn rejections(closed: &[Pull], history: &[CommitInfo]) -> Rejections {
    let mut out: Rejections = Default::default();
    let mut reject = |image: &str, to: &str, why: String| {
        if let Ok(name) = parse_name(image) {
            out.entry(name)
                .or_default()
                .entry(marker::tag_of(to).to_string())
                .or_insert(why);
        }
    };
    for p in closed.iter().filter(|p| p.state == PullState::Closed) {
        for u in marker::parse(&p.body).unwrap_or_default() {
            reject(
                &u.image,
                &u.to,
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
