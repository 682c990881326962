//! Promotion in words: the dry run's lines, the pull request's path of a version, and the
//! `imagebump promotions` table.

use std::fmt::Write;

use super::timeline::{Segment, Verdict};
use super::{Promotion, Promotions};
use crate::chunked::Chunked;
use crate::discover::Discovery;
use crate::resolve::Outcome;

/// `2026-11-22 09:10` (UTC).
pub fn date(t: i64) -> String {
    jiff::Timestamp::from_second(t)
        .map(|t| t.strftime("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|_| t.to_string())
}

/// Whole hours, `26 h`.
pub fn hours(secs: i64) -> String {
    format!("{} h", secs.max(0).checked_div(3600).unwrap_or_default())
}

/// `1h20m`: time still to wait.
fn remaining(secs: i64) -> String {
    let secs = u64::try_from(secs.max(0)).unwrap_or_default();
    imagebump_model::duration::format_age(std::time::Duration::from_secs(secs))
}

/// `in staging since 2026-11-22 09:10, 26 h` for a version promoted from `p`'s source.
pub fn arrival(all: &Promotions, p: &Promotion, tag: &str) -> Option<String> {
    let seg = all.timelines.get(&p.source_index?)?.arrival(tag)?;
    let at_least = if seg.cut { "at least " } else { "" };
    Some(format!(
        "in {} since {at_least}{}, {}",
        p.source_env,
        date(seg.since),
        hours(all.now.saturating_sub(seg.since))
    ))
}

/// The dry run's promotion lines: `web 1.4.2 → 1.5.0 (in staging since …, 26 h)`, one per
/// promoted reference that moves, in reference order. Empty when none moves.
pub fn dry_run(found: &Discovery, outcomes: &Chunked<Outcome>, all: &Promotions) -> String {
    let mut out = String::new();
    for p in &all.list {
        let (Some(r), Some(Outcome::Update { tag, .. })) =
            (found.refs.get(p.index), outcomes.get(p.index))
        else {
            continue;
        };
        let when = arrival(all, p, tag).unwrap_or_default();
        let t = |s: &str| imagebump_model::escape::terminal(s).into_owned();
        let _ = writeln!(
            out,
            "  {} {} → {} ({when}) in {}",
            t(&p.app),
            t(r.tag.as_deref().unwrap_or_default()),
            t(tag),
            t(&r.file)
        );
    }
    if out.is_empty() {
        return out;
    }
    format!("\npromotions:\n{out}")
}

/// The environments `tag` went through on its way to `p`'s reference, first one first:
/// (environment, when it first arrived there).
pub fn path<'a>(all: &'a Promotions, p: &'a Promotion, tag: &str) -> Vec<(&'a str, &'a Segment)> {
    let mut steps = Vec::new();
    let mut cur = Some(p);
    // A chain of environments is short; the bound stops a cycle in a bad configuration.
    for _ in 0..16 {
        let Some(q) = cur else { break };
        let Some(src) = q.source_index else { break };
        if let Some(seg) = all.timelines.get(&src).and_then(|t| t.first_arrival(tag)) {
            steps.push((q.source_env.as_str(), seg));
        }
        cur = all.of(src);
    }
    steps.reverse();
    steps
}

/// A link to a commit of the repository at `remote` (an https URL), or its short id.
pub fn commit_link(remote: Option<&str>, sha: &str) -> String {
    let short = sha.get(..7).unwrap_or(sha);
    let short = imagebump_model::escape::markdown_code(short);
    let link = remote
        .map(|r| crate::source::git::split_credentials(r).0)
        .and_then(|url| imagebump_model::escape::https_link(&url))
        .filter(|_| sha.bytes().all(|b| b.is_ascii_hexdigit()));
    match link {
        Some(url) => {
            let base = url.trim_end_matches('/').trim_end_matches(".git");
            format!("[{short}]({base}/commit/{sha})")
        }
        None => short,
    }
}

/// The pull-request line of each promoted update, by (file, new tag): `` - `web` 1.5.0:
/// dev since … (link), staging since … (link) ``.
pub fn pull_notes(
    found: &Discovery,
    outcomes: &Chunked<Outcome>,
    all: &Promotions,
    remote: Option<&str>,
) -> std::collections::BTreeMap<(String, String), String> {
    let mut out = std::collections::BTreeMap::new();
    for p in &all.list {
        let (Some(r), Some(Outcome::Update { tag, .. })) =
            (found.refs.get(p.index), outcomes.get(p.index))
        else {
            continue;
        };
        let steps: Vec<String> = path(all, p, tag)
            .into_iter()
            .map(|(env, seg)| {
                let at_least = if seg.cut { "at least " } else { "" };
                format!(
                    "{} since {at_least}{} ({})",
                    imagebump_model::escape::markdown_text(env),
                    date(seg.since),
                    commit_link(remote, &seg.since_sha)
                )
            })
            .collect();
        if !steps.is_empty() {
            let line = format!(
                "- {} {}: {}",
                imagebump_model::escape::markdown_code(&p.app),
                // A tag of the distribution grammar reads as it is; anything else as code.
                if imagebump_model::name::is_valid_tag(tag) {
                    tag.to_string()
                } else {
                    imagebump_model::escape::markdown_code(tag)
                },
                steps.join(", ")
            );
            out.insert((r.file.to_string(), tag.to_string()), line);
        }
    }
    out
}

/// Why a version is not promoted (yet), in a few words.
pub fn why_not(v: &Verdict, p: &Promotion) -> String {
    match v {
        Verdict::Ready { .. } => "ready".into(),
        Verdict::Soaking { remaining: r } => {
            format!("soaking in {}: {} to go", p.source_env, remaining(*r))
        }
        Verdict::Reverted { sha } => {
            format!(
                "reverted in {} ({})",
                p.source_env,
                sha.get(..7).unwrap_or(sha)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_links_point_at_https_remotes_without_credentials() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            commit_link(
                Some("https://x-access-token:s3cr3t@github.com/acme/gitops.git"),
                sha
            ),
            format!("[`0123456`](https://github.com/acme/gitops/commit/{sha})")
        );
        assert_eq!(
            commit_link(Some("git@github.com:acme/gitops.git"), sha),
            "`0123456`"
        );
        assert_eq!(commit_link(None, sha), "`0123456`");
        assert_eq!(date(1_795_208_400), "2026-11-20 21:00");
        assert_eq!(hours(26 * 3600 + 59 * 60), "26 h");
    }
}
