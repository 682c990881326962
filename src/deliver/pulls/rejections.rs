//! Versions reviewers rejected, read back from closed pull requests and reverted commits.

use std::collections::BTreeMap;

use crate::deliver::marker;
use crate::promote::seen::{escape, unescape};
use crate::resolve::{Rejection, Rejections};
use crate::source::git::CommitInfo;
use imagebump_forge::{Pull, PullState};
use imagebump_model::name::parse_name;

/// Where rejections are recorded in the repository itself, one ref each, so that they
/// outlive the forge's paging of closed pull requests and the history depth read.
pub const NAMESPACE: &str = "refs/imagebump/rejected/";

/// One version a reviewer rejected, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub image: String,
    pub tag: String,
    /// `pr-12` or `revert-1a2b3c4d5e`: what said no, as the ref records it.
    pub source: String,
    /// The file the rejected change wrote the version to; `None` (a record from before
    /// files were kept): the image everywhere.
    pub file: Option<String>,
    pub why: String,
}

impl Rejected {
    /// `refs/imagebump/rejected/<image>/<tag>/<source>[/file=<file>]`: the image's `:` (a
    /// port) as `%3A`, the tag and the file escaped into one valid ref component each.
    pub fn ref_name(&self) -> String {
        let mut name = format!(
            "{NAMESPACE}{}/{}/{}",
            self.image.replace(':', "%3A"),
            escape(&self.tag),
            self.source
        );
        if let Some(file) = &self.file {
            name.push_str("/file=");
            name.push_str(&escape(file));
        }
        name
    }

    /// A rejection read back from its ref name.
    pub fn from_ref(name: &str) -> Option<Rejected> {
        let rest = name.strip_prefix(NAMESPACE)?;
        let (rest, file) = match rest.rsplit_once('/') {
            Some((rest, last)) if last.starts_with("file=") => {
                (rest, Some(unescape(last.strip_prefix("file=")?)?))
            }
            _ => (rest, None),
        };
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
            tag: unescape(tag)?,
            source: source.to_string(),
            file,
            why,
        })
    }
}

/// Whose commits are imagebump's: the configured author email, and whether GitHub's API
/// made them (`signing: {format: github}`). A revert rejects only what such a commit did,
/// and only where it changes it back.
#[derive(Clone, Copy)]
pub struct Author<'a> {
    pub email: &'a str,
    pub by_api: bool,
    /// Whether commit `sha` changes `file` (a commit that says "This reverts commit …" is
    /// a revert of a file only if it changes that file).
    pub changes: &'a dyn Fn(&str, &str) -> bool,
}

/// Versions reviewers rejected: pull requests closed without merging (their marker; the
/// caller passes imagebump's own only) and reverted imagebump commits (their trailers; a
/// commit by another author, or without the trailer, is not imagebump's), within the base
/// branch's recent history. A closed pull request counts only for the updates of its own
/// branch's change set (`prefix`: `pullRequests.branchPrefix`, see [`marker::proposed`]).
pub fn rejected(
    closed: &[Pull],
    prefix: &str,
    history: &[CommitInfo],
    bot: Author<'_>,
) -> Vec<Rejected> {
    let mut out = Vec::new();
    let mut reject = |image: &str, to: &str, file: Option<&str>, source: String, why: String| {
        out.push(Rejected {
            image: image.to_string(),
            tag: marker::tag_of(to).to_string(),
            source,
            file: file.map(str::to_string),
            why,
        });
    };
    for p in closed.iter().filter(|p| p.state == PullState::Closed) {
        for u in marker::proposed(&p.body, &p.branch, prefix) {
            reject(
                &u.image,
                &u.to,
                Some(&u.file),
                format!("pr-{}", p.number),
                format!("pull request #{} was closed without merging", p.number),
            );
        }
    }
    let by_sha: BTreeMap<&str, &CommitInfo> = history.iter().map(|c| (c.sha.as_str(), c)).collect();
    let lifted = lifted(history);
    for c in history {
        let Some(reverted) = reverted_sha(&c.body) else {
            continue;
        };
        if lifted.contains(&format!("revert-{}", short(reverted))) {
            continue;
        }
        let ours = |c: &&CommitInfo| !super::state::is_foreign(c, bot.email, bot.by_api);
        for original in undone(&by_sha, reverted).into_iter().filter(ours) {
            for (k, v) in &original.trailers {
                let Some(t) =
                    marker::parse_trailer(v).filter(|_| k.eq_ignore_ascii_case(marker::TRAILER))
                else {
                    continue;
                };
                if t.file.as_deref().is_some_and(|f| !(bot.changes)(&c.sha, f)) {
                    continue;
                }
                reject(
                    &t.image,
                    &t.to,
                    t.file.as_deref(),
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
    out
}

/// The rejections recorded as the refs `names` (see [`NAMESPACE`]), and the names of those
/// a human lifted since (their source in `lifted`: a reopened pull request, a revert
/// reverted), to be forgotten.
pub fn recorded(
    names: &[String],
    lifted: &std::collections::BTreeSet<String>,
) -> (Vec<Rejected>, Vec<String>) {
    let mut kept = Vec::new();
    let mut gone = Vec::new();
    for name in names {
        match Rejected::from_ref(name) {
            Some(r) if lifted.contains(&r.source) => gone.push(name.clone()),
            Some(r) => kept.push(r),
            None => {}
        }
    }
    (kept, gone)
}

/// Why a recorded rejection (a ref under [`NAMESPACE`]) does not hold, or `None` when it
/// does. A ref is only a record: anyone with push access can create one, so it holds only
/// when what it names says so too:
///
/// - `pr-N`: `pull` is pull request N as the forge knows it now (`None`: unknown). It must
///   be imagebump's own ([`super::state::is_ours`]: opened by `login`, into `base`), closed
///   without merging, and its marker must propose this very version at this place;
/// - `revert-<sha>`: the same rejection must be read from the base's history this run
///   (`derived`): a revert of an imagebump commit within the commits read.
pub fn unsupported(
    r: &Rejected,
    pull: Option<&Pull>,
    (login, base): (Option<&str>, &str),
    derived: &[Rejected],
) -> Option<String> {
    if derived.iter().any(|d| same(d, r)) {
        return None;
    }
    if r.source.starts_with("revert-") {
        return Some("no revert of an imagebump commit in the history read says so".into());
    }
    let Some(p) = pull else {
        return Some("the forge knows no such pull request".into());
    };
    if !super::state::is_ours(p, login, base) {
        return Some(format!("pull request #{} is not imagebump's", p.number));
    }
    if p.state != PullState::Closed {
        return Some(format!("pull request #{} is not closed unmerged", p.number));
    }
    let proposed = marker::parse(&p.body).unwrap_or_default();
    let said = proposed.iter().any(|u| {
        u.image == r.image
            && marker::tag_of(&u.to) == r.tag
            && r.file.as_ref().is_none_or(|f| *f == u.file)
    });
    (!said).then(|| format!("pull request #{} did not propose this version", p.number))
}

/// The pull request a `pr-N` record names.
pub fn pull_number(r: &Rejected) -> Option<u64> {
    r.source.strip_prefix("pr-")?.parse().ok()
}

fn same(a: &Rejected, b: &Rejected) -> bool {
    a.image == b.image && a.tag == b.tag && a.file == b.file && a.source == b.source
}

/// The sources (`revert-<sha>`) of rejections a human lifted by reverting the revert (what
/// `git revert` of a revert, "Reapply …", makes): the version is wanted after all.
pub fn lifted(history: &[CommitInfo]) -> std::collections::BTreeSet<String> {
    let by_sha: BTreeMap<&str, &CommitInfo> = history.iter().map(|c| (c.sha.as_str(), c)).collect();
    history
        .iter()
        .filter_map(|c| by_sha.get(reverted_sha(&c.body)?).copied())
        .filter_map(|revert| reverted_sha(&revert.body))
        .map(|original| format!("revert-{}", short(original)))
        .collect()
}

/// The rejections by image, each with where it holds (the same version rejected twice at
/// one place is kept once, with the first reason found).
pub fn by_image(all: &[Rejected]) -> Rejections {
    let mut out: Rejections = Default::default();
    for r in all {
        let Ok(name) = parse_name(&r.image) else {
            continue;
        };
        let list = out.entry(name).or_default();
        if !list.iter().any(|x| x.tag == r.tag && x.file == r.file) {
            list.push(Rejection {
                tag: r.tag.clone(),
                file: r.file.clone(),
                why: r.why.clone(),
            });
        }
    }
    out
}

fn short(sha: &str) -> &str {
    // A commit id is ASCII hex; anything else is shown whole.
    sha.get(..sha.len().min(10)).unwrap_or(sha)
}

/// The commits a revert of `sha` undoes: the commit itself, or for a merge commit (what a
/// forge's "Revert" button and `git revert -m 1` undo) the commits it brought in, read
/// along the merged side's first parents until the mainline (at most 100).
fn undone<'a>(by_sha: &BTreeMap<&str, &'a CommitInfo>, sha: &str) -> Vec<&'a CommitInfo> {
    let Some(&commit) = by_sha.get(sha) else {
        return Vec::new();
    };
    let (Some(mainline), Some(merged)) = (commit.parents.first(), commit.parents.get(1)) else {
        return vec![commit];
    };
    // The mainline's own history: what the merge did not bring in.
    let mut base = std::collections::BTreeSet::new();
    let mut next = Some(mainline.as_str());
    while let Some(c) = next
        .and_then(|s| by_sha.get(s))
        .filter(|_| base.len() < 1000)
    {
        base.insert(c.sha.as_str());
        next = c.parents.first().map(String::as_str);
    }
    let mut out = Vec::new();
    let mut next = Some(merged.as_str());
    while let Some(&c) = next.and_then(|s| by_sha.get(s)) {
        if base.contains(c.sha.as_str()) || out.len() >= 100 {
            break;
        }
        out.push(c);
        next = c.parents.first().map(String::as_str);
    }
    out
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
    fn a_rejection_round_trips_through_its_ref_name() {
        let r = Rejected {
            image: "127.0.0.1:5000/team/web".into(),
            tag: "1.1.0".into(),
            source: "pr-12".into(),
            file: None,
            why: "pull request #12 was closed without merging".into(),
        };
        assert_eq!(
            r.ref_name(),
            "refs/imagebump/rejected/127.0.0.1%3A5000/team/web/1.1.0/pr-12"
        );
        assert_eq!(Rejected::from_ref(&r.ref_name()), Some(r.clone()));
        let at = Rejected {
            file: Some("apps/prod/kustomization.yaml".into()),
            ..r.clone()
        };
        assert_eq!(
            at.ref_name(),
            "refs/imagebump/rejected/127.0.0.1%3A5000/team/web/1.1.0/pr-12/file=apps%2Fprod%2Fkustomization.yaml"
        );
        assert_eq!(Rejected::from_ref(&at.ref_name()), Some(at));
        // Whatever a file or tag is called, the name is one git accepts and reads back.
        for (tag, file) in [
            ("1..2", ".argocd-source-web.yaml"),
            ("v1.lock", "charts/app/Chart.lock"),
            ("x_y-z", "my apps/välues.yaml"),
        ] {
            let odd = Rejected {
                tag: tag.into(),
                file: Some(file.into()),
                ..r.clone()
            };
            let name = odd.ref_name();
            let ok = std::process::Command::new("git")
                .args(["check-ref-format", &name])
                .status()
                .unwrap();
            assert!(ok.success(), "{name}");
            assert_eq!(Rejected::from_ref(&name), Some(odd));
        }
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

    /// imagebump's commits in these tests.
    const BOT: Author<'static> = Author {
        email: "a@b",
        by_api: false,
        changes: &|_, _| true,
    };

    fn commit(sha: &str, parents: &[&str], trailer: Option<&str>, body: &str) -> CommitInfo {
        let sig = Signature {
            name: "a".into(),
            email: "a@b".into(),
        };
        CommitInfo {
            sha: sha.into(),
            parents: parents.iter().map(|p| p.to_string()).collect(),
            author: sig.clone(),
            committer: sig,
            subject: "s".into(),
            body: body.into(),
            trailers: trailer
                .map(|t| vec![("Imagebump-Update".into(), t.into())])
                .unwrap_or_default(),
        }
    }

    /// `(image, tag, file, why)` of each rejection.
    fn listed(r: &[Rejected]) -> Vec<(String, String, Option<String>, String)> {
        r.iter()
            .map(|r| {
                (
                    r.image.clone(),
                    r.tag.clone(),
                    r.file.clone(),
                    r.why.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn reverts_and_closed_pulls_reject_their_versions_where_they_were_made() {
        let marked = Marked {
            image: "ghcr.io/acme/web".into(),
            group: "apps/web".into(),
            file: "apps/web/kustomization.yaml".into(),
            from: "1.2.0".into(),
            to: "1.3.0".into(),
        };
        let closed = Pull {
            number: 7,
            branch: "imagebump/apps-web".into(),
            base: "main".into(),
            author: "imagebump-bot".into(),
            title: "t".into(),
            body: marker::render(&[marked]),
            state: PullState::Closed,
            url: String::new(),
            labels: Vec::new(),
            assignees: Vec::new(),
            review_requests: Vec::new(),
            draft: false,
            node_id: String::new(),
            automerge: None,
        };
        // An old-style trailer (no file) and a new one.
        let original = commit(
            "1111111111aaaa",
            &[],
            Some("ghcr.io/acme/api 2.0.0 -> 2.1.0"),
            "",
        );
        let revert = commit(
            "2222222222bbbb",
            &[],
            None,
            "This reverts commit 1111111111aaaa.\n",
        );
        let db = commit(
            "3333333333cccc",
            &[],
            Some("ghcr.io/acme/db 1.0 -> 1.1 in apps/db/values.yaml"),
            "",
        );
        let revert_db = commit(
            "4444444444dddd",
            &[],
            None,
            "This reverts commit 3333333333cccc.\n",
        );
        let r = rejected(
            &[closed],
            "imagebump/",
            &[revert_db, db, revert, original],
            BOT,
        );
        let s = |x: &str| x.to_string();
        assert_eq!(
            listed(&r),
            [
                (
                    s("ghcr.io/acme/web"),
                    s("1.3.0"),
                    Some(s("apps/web/kustomization.yaml")),
                    s("pull request #7 was closed without merging")
                ),
                (
                    s("ghcr.io/acme/db"),
                    s("1.1"),
                    Some(s("apps/db/values.yaml")),
                    s("commit 3333333333 was reverted by 4444444444")
                ),
                (
                    s("ghcr.io/acme/api"),
                    s("2.1.0"),
                    None,
                    s("commit 1111111111 was reverted by 2222222222")
                ),
            ]
        );
    }

    #[test]
    fn a_recorded_rejection_holds_only_when_what_it_names_says_so() {
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
            author: "imagebump-bot".into(),
            title: "t".into(),
            body: marker::render(&[marked]),
            state: PullState::Closed,
            url: String::new(),
            labels: Vec::new(),
            assignees: Vec::new(),
            review_requests: Vec::new(),
            draft: false,
            node_id: String::new(),
            automerge: None,
        };
        let r = Rejected::from_ref(
            "refs/imagebump/rejected/ghcr.io/acme/web/1.3.0/pr-7/file=apps%2Fweb%2Fkustomization.yaml",
        )
        .unwrap();
        let me = (Some("imagebump-bot"), "main");
        let why = |p: Option<&Pull>, me| unsupported(&r, p, me, &[]);
        assert_eq!(why(Some(&closed), me), None);
        assert_eq!(
            why(None, me).as_deref(),
            Some("the forge knows no such pull request")
        );
        let human = Pull {
            author: "mallory".into(),
            ..closed.clone()
        };
        let other_base = Pull {
            base: "release".into(),
            ..closed.clone()
        };
        for p in [&human, &other_base] {
            assert_eq!(
                why(Some(p), me).as_deref(),
                Some("pull request #7 is not imagebump's")
            );
        }
        assert_eq!(
            why(Some(&closed), (None, "main")).as_deref(),
            Some("pull request #7 is not imagebump's")
        );
        let merged = Pull {
            state: PullState::Merged,
            ..closed.clone()
        };
        assert_eq!(
            why(Some(&merged), me).as_deref(),
            Some("pull request #7 is not closed unmerged")
        );
    }

    #[test]
    fn a_record_naming_another_version_or_place_than_its_pull_request_does_not_hold() {
        let closed = Pull {
            number: 7,
            branch: "imagebump/web".into(),
            base: "main".into(),
            author: "imagebump-bot".into(),
            title: "t".into(),
            body: marker::render(&[Marked {
                image: "ghcr.io/acme/web".into(),
                group: "apps/web".into(),
                file: "apps/web/kustomization.yaml".into(),
                from: "1.2.0".into(),
                to: "1.3.0".into(),
            }]),
            state: PullState::Closed,
            url: String::new(),
            labels: Vec::new(),
            assignees: Vec::new(),
            review_requests: Vec::new(),
            draft: false,
            node_id: String::new(),
            automerge: None,
        };
        let me = (Some("imagebump-bot"), "main");
        for name in [
            "refs/imagebump/rejected/ghcr.io/acme/web/9.9.9/pr-7",
            "refs/imagebump/rejected/ghcr.io/acme/web/1.3.0/pr-7/file=prod%2Fvalues.yaml",
            "refs/imagebump/rejected/ghcr.io/acme/db/1.3.0/pr-7",
        ] {
            let other = Rejected::from_ref(name).unwrap();
            assert_eq!(
                unsupported(&other, Some(&closed), me, &[]).as_deref(),
                Some("pull request #7 did not propose this version"),
                "{name}"
            );
        }
        // A revert record holds only while the history read shows the revert.
        let revert =
            Rejected::from_ref("refs/imagebump/rejected/ghcr.io/acme/web/1.3.0/revert-1a2b3c4d5e")
                .unwrap();
        assert_eq!(
            unsupported(&revert, None, me, &[]).as_deref(),
            Some("no revert of an imagebump commit in the history read says so")
        );
        assert_eq!(
            unsupported(&revert, None, me, std::slice::from_ref(&revert)),
            None
        );
    }

    #[test]
    fn reverting_a_commit_imagebump_did_not_make_rejects_nothing() {
        // A trailer written by someone else (another author), then "reverted".
        let mut theirs = commit(
            "1111111111aaaa",
            &[],
            Some("ghcr.io/acme/api 2.0.0 -> 9.9.9 in apps/api/values.yaml"),
            "",
        );
        theirs.author.email = "mallory@example.com".into();
        let revert = commit(
            "2222222222bbbb",
            &[],
            None,
            "This reverts commit 1111111111aaaa.\n",
        );
        assert_eq!(
            rejected(&[], "imagebump/", &[revert.clone(), theirs.clone()], BOT),
            []
        );
        // The same commit by imagebump's author is imagebump's: its revert rejects.
        theirs.author.email = BOT.email.into();
        assert_eq!(
            rejected(&[], "imagebump/", &[revert.clone(), theirs.clone()], BOT).len(),
            1
        );
        // A "revert" that does not change the file it names reverts nothing there.
        let elsewhere = Author {
            changes: &|sha, file| !(sha == "2222222222bbbb" && file == "apps/api/values.yaml"),
            ..BOT
        };
        assert_eq!(
            rejected(&[], "imagebump/", &[revert, theirs], elsewhere),
            []
        );
    }

    #[test]
    fn reverting_the_revert_lifts_the_rejection() {
        let original = commit(
            "1111111111aaaa",
            &[],
            Some("ghcr.io/acme/api 2.0.0 -> 2.1.0 in apps/api/values.yaml"),
            "",
        );
        let revert = commit(
            "2222222222bbbb",
            &[],
            None,
            "This reverts commit 1111111111aaaa.\n",
        );
        let reapply = commit(
            "3333333333cccc",
            &[],
            None,
            "This reverts commit 2222222222bbbb.\n",
        );
        let history = [reapply, revert.clone(), original.clone()];
        assert_eq!(rejected(&[], "imagebump/", &history, BOT), []);
        assert_eq!(
            lifted(&history).into_iter().collect::<Vec<_>>(),
            ["revert-1111111111"]
        );
        assert_eq!(
            rejected(&[], "imagebump/", &[revert, original], BOT).len(),
            1
        );
    }

    #[test]
    fn reverting_a_merge_rejects_what_the_merge_brought_in() {
        // main: a - m (merge of b) - r (git revert -m 1 m); b is imagebump's commit on a.
        let a = commit("aaaaaaaaaa01", &[], None, "");
        let b = commit(
            "bbbbbbbbbb02",
            &["aaaaaaaaaa01"],
            Some("ghcr.io/acme/web 1.0.0 -> 1.1.0 in apps/web/kustomization.yaml"),
            "",
        );
        let m = commit(
            "cccccccccc03",
            &["aaaaaaaaaa01", "bbbbbbbbbb02"],
            None,
            "Merge pull request #3",
        );
        let r = commit(
            "dddddddddd04",
            &["cccccccccc03"],
            None,
            "This reverts commit cccccccccc03, reversing\nchanges made to aaaaaaaaaa01.\n",
        );
        let found = rejected(&[], "imagebump/", &[r, m, b, a], BOT);
        assert_eq!(
            listed(&found),
            [(
                "ghcr.io/acme/web".to_string(),
                "1.1.0".to_string(),
                Some("apps/web/kustomization.yaml".to_string()),
                "commit cccccccccc was reverted by dddddddddd".to_string()
            )]
        );
    }
}
