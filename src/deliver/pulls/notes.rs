//! Release notes of a pull request: for each distinct update (image, from, to), what kind
//! of move it is, how old the new version is, which platforms it gains or loses, how its
//! compressed size changes, whether its signature is checked, links to what changed in
//! its source repository and, for a source on the manifest repository's own forge that
//! is public (or is the manifest repository), the notes of the releases in between
//! (`releases.rs`). The same facts go to the JSON report
//! (`PullReport::notes`).
//!
//! Everything here comes from registries (labels, dates, platforms, sizes) or a forge
//! (release texts): it is shown escaped, and linked only as plain `https://` URLs of a
//! forge-shaped repository.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Serialize;

use crate::deliver::marker;
use crate::plan::Update;
use crate::resolve::release::{Facts, Side};
use imagebump_model::escape;
use imagebump_model::forge::ForgeKind;
use imagebump_model::platform::Platform;
use imagebump_policy::age::Clock;
use imagebump_policy::kind::update_kind;

/// The registry facts of each update, by (image, old tag, new tag).
pub type ReleaseFacts = BTreeMap<(String, String, String), Facts>;

/// The manifest repository's forge: its host name and kind. A source on that host is
/// linked in that forge's style, whatever its name.
pub type Site = (String, ForgeKind);

/// The facts of one update, as the body shows them and the JSON report lists them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateNotes {
    /// The image as written in the file.
    pub image: String,
    /// The normalised repository, which keys the facts.
    #[serde(skip)]
    #[schemars(skip)]
    pub repository: String,
    pub from: String,
    pub to: String,
    /// `major`, `minor`, `patch` (the first version number that differs), `digest` (the
    /// same tag at a new digest) or `other` (tags that are not both versions).
    pub kind: &'static str,
    /// The new image's build date (its config's `created`), when plausible: after 2000
    /// and not after the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// When imagebump first saw the new tag, when `minAge` judged it by that clock (no
    /// plausible build date, or a later first sighting): the age counts from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_seen: Option<String>,
    /// Whole days from `firstSeen`, else `created`, to the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_days: Option<i64>,
    /// Platforms the new image offers that the old does not, and the reverse (both known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platforms: Option<PlatformChange>,
    /// Compressed sizes of one platform both offer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<SizeChange>,
    /// The new image's `org.opencontainers.image.*` source, revision, version and url.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The changes between the two versions on the source's forge, and its releases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compare: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub releases: Option<String>,
    /// `verify`: who signed the new version (null: its signature is not checked), and
    /// the digest whose signature verified.
    pub signed_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signed_digest: Option<String>,
    /// `verify.attestations`: the gates the new version passed, each with what its
    /// attestation said and who signed it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attested: Vec<String>,
    /// The source repository's releases from the old version (excluded) to the new one,
    /// newest first, read from the manifest repository's own forge when the source lives
    /// there and is public or the manifest repository itself; each text cut to
    /// `releases::RELEASE_TEXT_CAP` bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub release_notes: Vec<ReleaseText>,
    /// Why the source's release notes are not read although it lives on the manifest
    /// repository's forge (`the source repository is not public`): links only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release_notes_not_read: Option<&'static str>,
    /// The source's repository path when it is on the manifest repository's own forge.
    #[serde(skip)]
    #[schemars(skip)]
    pub site_repo: Option<String>,
}

/// One release's notes, as the forge has them (untrusted text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ReleaseText {
    pub tag: String,
    pub name: String,
    pub text: String,
    /// The text is cut short.
    pub cut: bool,
}

/// Platforms gained and lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct PlatformChange {
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

/// Compressed sizes in bytes (the sum of one platform image's layers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SizeChange {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    pub from: u64,
    pub to: u64,
}

/// What the notes are made from besides the updates.
#[derive(Clone, Copy)]
pub struct Known<'a> {
    /// What the registries said of each update's images.
    pub facts: &'a ReleaseFacts,
    /// The manifest repository's forge.
    pub site: Option<&'a Site>,
    /// What that forge gave of each source repository: its releases, or why not read.
    pub releases: &'a super::releases::Releases,
}

/// The notes of each distinct update of `updates`, in their order.
pub fn notes_of(updates: &[&Update], known: Known<'_>, now: Timestamp) -> Vec<UpdateNotes> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for u in updates {
        let key = (
            u.image.to_string(),
            marker::tag_of(&u.from).to_string(),
            marker::tag_of(&u.to).to_string(),
        );
        if seen.insert(key.clone()) {
            let mut n = notes(u, (known.facts.get(&key), known.site), now);
            match n.site_repo.as_ref().and_then(|r| known.releases.get(r)) {
                Some(super::releases::Read::Texts(list)) => {
                    n.release_notes = super::releases::between(&n.from, &n.to, list);
                }
                Some(super::releases::Read::NotPublic) => {
                    n.release_notes_not_read = Some(super::releases::NOT_PUBLIC);
                }
                None => {}
            }
            out.push(n);
        }
    }
    out
}

/// The notes of one update from what the registry said of its two images.
fn notes(
    u: &Update,
    (facts, site): (Option<&Facts>, Option<&Site>),
    now: Timestamp,
) -> UpdateNotes {
    let (from, to) = (marker::tag_of(&u.from), marker::tag_of(&u.to));
    let (old, new) = match facts {
        Some(f) => (f.old.as_ref(), f.new.as_ref()),
        None => (None, None),
    };
    let first_seen = match facts.and_then(|f| f.age) {
        Some(Clock::FirstSeen(t) | Clock::SeenNow(t)) => Some(t),
        _ => None,
    };
    let created = new
        .and_then(|n| n.created)
        .filter(|c| plausible(*c, now) && first_seen.is_none());
    let since = first_seen.or(created);
    let labels = new.map(|n| n.labels.clone()).unwrap_or_default();
    let repo = labels
        .source
        .as_deref()
        .and_then(|l| SourceRepo::parse(l, site));
    let compare = repo.as_ref().and_then(|r| {
        let old_labels = old.map(|o| &o.labels);
        let revs = (
            old_labels.and_then(|l| l.revision.as_deref()),
            labels.revision.as_deref(),
        );
        let versions = (
            old_labels.and_then(|l| l.version.as_deref()),
            labels.version.as_deref(),
        );
        r.compare(compare_refs(revs, versions, (from, to))?)
    });
    UpdateNotes {
        image: u.name.to_string(),
        repository: u.image.to_string(),
        from: from.to_string(),
        to: to.to_string(),
        kind: update_kind(from, to).as_str(),
        created: created.map(|c| c.strftime("%Y-%m-%d").to_string()),
        first_seen: first_seen.map(|c| c.strftime("%Y-%m-%d").to_string()),
        age_days: since.map(|c| now.as_second().saturating_sub(c.as_second()) / 86_400),
        platforms: old.zip(new).and_then(|(o, n)| platform_change(o, n)),
        size: old.zip(new).and_then(|(o, n)| size_change(o, n)),
        releases: repo.as_ref().map(SourceRepo::releases),
        compare,
        source: labels.source,
        revision: labels.revision,
        version: labels.version,
        url: labels.url,
        signed_by: u.verified.as_ref().map(|v| v.signer.clone()),
        signed_digest: u.verified.as_ref().map(|v| v.digest.clone()),
        attested: u
            .verified
            .as_ref()
            .map(|v| v.gates.clone())
            .unwrap_or_default(),
        release_notes: Vec::new(),
        release_notes_not_read: None,
        site_repo: repo.as_ref().filter(|r| r.on_site).map(|r| r.path.clone()),
    }
}

/// A build date worth showing: after 2000 and not after the run (a reproducible build's
/// 1970 or a clock in the future says nothing about age).
fn plausible(created: Timestamp, now: Timestamp) -> bool {
    imagebump_policy::age::plausible(created, now)
}

/// Both images' platform lists, when both are known and they differ.
fn platform_change(old: &Side, new: &Side) -> Option<PlatformChange> {
    if old.platforms.is_empty() || new.platforms.is_empty() {
        return None;
    }
    let missing = |a: &[Platform], b: &[Platform]| -> Vec<String> {
        a.iter()
            .filter(|p| !b.contains(p))
            .map(|p| p.to_string())
            .collect()
    };
    Some(PlatformChange {
        added: missing(&new.platforms, &old.platforms),
        removed: missing(&old.platforms, &new.platforms),
    })
}

/// Both sizes, when they are of the same platform.
fn size_change(old: &Side, new: &Side) -> Option<SizeChange> {
    let (o, n) = (old.size.as_ref()?, new.size.as_ref()?);
    if o.platform != n.platform {
        return None;
    }
    Some(SizeChange {
        platform: n.platform.as_ref().map(|p| p.to_string()),
        from: o.bytes,
        to: n.bytes,
    })
}

/// The two ends of a comparison: both revisions when both are commit hashes, else both
/// versions when both are tag-shaped, else the image tags.
fn compare_refs<'a>(
    revisions: (Option<&'a str>, Option<&'a str>),
    versions: (Option<&'a str>, Option<&'a str>),
    tags: (&'a str, &'a str),
) -> Option<(&'a str, &'a str)> {
    let is_rev = |r: &str| (7..=64).contains(&r.len()) && r.bytes().all(|b| b.is_ascii_hexdigit());
    let is_ref = |r: &str| imagebump_model::name::is_valid_tag(r);
    match (revisions, versions) {
        ((Some(a), Some(b)), _) if is_rev(a) && is_rev(b) && a != b => Some((a, b)),
        (_, (Some(a), Some(b))) if is_ref(a) && is_ref(b) && a != b => Some((a, b)),
        _ if is_ref(tags.0) && is_ref(tags.1) && tags.0 != tags.1 => Some(tags),
        _ => None,
    }
}

/// How a forge spells its pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    GitHub,
    GitLab,
    Gitea,
}

/// A source label that names a repository on a forge imagebump knows the pages of.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SourceRepo {
    style: Style,
    /// `https://host/owner/name`, checked by [`escape::https_link`].
    base: String,
    /// `owner/name` (GitLab: the project path).
    path: String,
    /// On the manifest repository's own forge host.
    on_site: bool,
}

impl SourceRepo {
    /// `https://github.com/owner/name[/...]`, `https://gitlab.com/group[/sub]/name`
    /// (`gitlab.` hosts alike), `https://codeberg.org/owner/name` (`gitea.` and `forgejo.`
    /// hosts, gitea.com alike), or a repository on `site`'s host in its style; a trailing
    /// `.git` or path below the repository is dropped.
    fn parse(label: &str, site: Option<&Site>) -> Option<SourceRepo> {
        let url = escape::https_link(label)?;
        let rest = url.strip_prefix("https://")?;
        let (host, path) = rest.split_once('/')?;
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let host_name = host
            .split(':')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let on_site = site
            .filter(|(h, _)| *h == host_name)
            .map(|(_, kind)| match kind {
                ForgeKind::Github => Style::GitHub,
                ForgeKind::Gitlab => Style::GitLab,
                ForgeKind::Gitea => Style::Gitea,
            });
        let style = match host_name.as_str() {
            _ if on_site.is_some() => on_site?,
            "github.com" => Style::GitHub,
            "gitlab.com" => Style::GitLab,
            "codeberg.org" | "gitea.com" | "code.forgejo.org" => Style::Gitea,
            h if h.starts_with("gitlab.") => Style::GitLab,
            h if h.starts_with("gitea.") || h.starts_with("forgejo.") => Style::Gitea,
            _ => return None,
        };
        let segments: Vec<&str> = match style {
            Style::GitLab => path
                .split("/-/")
                .next()
                .unwrap_or_default()
                .split('/')
                .collect(),
            Style::GitHub | Style::Gitea => path.split('/').take(2).collect(),
        };
        let segments: Vec<&str> = segments.into_iter().filter(|s| !s.is_empty()).collect();
        let plain = |s: &&str| {
            s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
                && !s.starts_with('.')
        };
        if segments.len() < 2 || !segments.iter().all(plain) {
            return None;
        }
        let repo = segments.join("/");
        let repo = repo.strip_suffix(".git").unwrap_or(&repo);
        Some(SourceRepo {
            style,
            base: format!("https://{host}/{repo}"),
            path: repo.to_string(),
            on_site: on_site.is_some(),
        })
    }

    fn compare(&self, (a, b): (&str, &str)) -> Option<String> {
        let url = match self.style {
            Style::GitLab => format!("{}/-/compare/{a}...{b}", self.base),
            Style::GitHub | Style::Gitea => format!("{}/compare/{a}...{b}", self.base),
        };
        escape::https_link(&url)
    }

    fn releases(&self) -> String {
        match self.style {
            Style::GitLab => format!("{}/-/releases", self.base),
            Style::GitHub | Style::Gitea => format!("{}/releases", self.base),
        }
    }
}

/// The most platforms named in one line of a body; the rest are counted.
const PLATFORMS_SHOWN: usize = 8;

/// The body's section: one block per update, until `budget` bytes are used; the blocks
/// left out are counted (the JSON report has them all).
pub fn render(notes: &[UpdateNotes], budget: usize) -> String {
    if notes.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n**Release notes**\n");
    for (i, n) in notes.iter().enumerate() {
        let block = render_one(n);
        if s.len().saturating_add(block.len()) > budget {
            let left = notes.len().saturating_sub(i);
            s.push_str(&format!(
                "\n{left} more update(s) left out here to keep the body short: the run's JSON report lists them.\n"
            ));
            break;
        }
        s.push_str(&block);
    }
    s
}

/// One update's block: a heading line, then one line per fact known.
fn render_one(n: &UpdateNotes) -> String {
    let mut s = format!(
        "\n{} {} → {}: **{}**\n",
        escape::markdown_code(&n.image),
        escape::markdown_code(&n.from),
        escape::markdown_code(&n.to),
        n.kind
    );
    let mut links = Vec::new();
    if let Some(c) = &n.compare {
        links.push(format!("[changes]({c})"));
    }
    if let Some(r) = &n.releases {
        links.push(format!("[releases]({r})"));
    }
    if !links.is_empty() {
        s.push_str(&format!("- What changed: {}\n", links.join(" · ")));
    }
    match (&n.created, &n.first_seen, n.age_days) {
        (_, Some(seen), Some(days)) => {
            s.push_str(&format!("- Age: {} (first seen {seen})\n", age(days)));
        }
        (Some(created), None, Some(days)) => {
            s.push_str(&format!("- Age: {} (built {created})\n", age(days)));
        }
        _ => {}
    }
    if let Some(p) = &n.platforms {
        s.push_str(&format!("- Platforms: {}\n", platforms(p)));
    }
    if let Some(z) = &n.size {
        let on = z.platform.as_deref().map_or(String::new(), |p| {
            format!(" ({})", escape::markdown_code(p))
        });
        s.push_str(&format!("- Compressed size{on}: {}\n", size(z.from, z.to)));
    }
    match (&n.signed_by, &n.signed_digest) {
        (Some(who), Some(digest)) => s.push_str(&format!(
            "- Signature: verified at {}, signed by {}\n",
            escape::markdown_code(digest),
            escape::markdown_text(who)
        )),
        _ => s.push_str("- Signature: not checked\n"),
    }
    for gate in &n.attested {
        s.push_str(&format!(
            "- Attestation gate passed: {}\n",
            escape::markdown_text(gate)
        ));
    }
    if let Some(why) = n.release_notes_not_read {
        s.push_str(&format!("- Release notes: not read, {why}\n"));
    }
    if !n.release_notes.is_empty() {
        s.push_str(&release_texts(&n.release_notes));
    }
    s
}

/// The most bytes of one update's folded release texts as written in the body (escaped
/// text is longer than the text: a control character takes twenty).
const RELEASES_SHOWN: usize = 6 * 1024;

/// The longest release name shown whole.
const NAME_SHOWN: usize = 200;

/// The releases' texts in a folded block, each line quoted as escaped text: a release's
/// Markdown comes from whoever can publish there, so it is shown, never rendered. Releases
/// past [`RELEASES_SHOWN`] are counted, not shown (the JSON report has them).
fn release_texts(releases: &[ReleaseText]) -> String {
    let mut tags = Vec::new();
    let mut shown = String::new();
    for r in releases {
        let one = release_text(r);
        if shown.len().saturating_add(one.len()) > RELEASES_SHOWN {
            break;
        }
        tags.push(escape::markdown_text(&r.tag));
        shown.push_str(&one);
    }
    let left = releases.len().saturating_sub(tags.len());
    if left > 0 {
        shown.push_str(&format!(
            "\n{left} more release(s) left out here: the run's JSON report has them.\n"
        ));
    }
    let summary = if tags.is_empty() {
        "Release notes".to_string()
    } else {
        format!("Release notes of {}", tags.join(", "))
    };
    format!("\n<details><summary>{summary}</summary>\n{shown}\n</details>\n")
}

/// One release: its name and tag, then its text line by line, quoted and escaped.
fn release_text(r: &ReleaseText) -> String {
    let name = if r.name.trim().is_empty() {
        &r.tag
    } else {
        &r.name
    };
    let name: String = name.chars().take(NAME_SHOWN).collect();
    let mut s = format!(
        "\n{} ({})\n\n",
        escape::markdown_text(&name),
        escape::markdown_code(&r.tag)
    );
    for line in r.text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            s.push_str(">\n");
            continue;
        }
        // `markdown_text` leaves `#` alone (it opens nothing inside a line); at a line's
        // start it would make a heading.
        let text = escape::markdown_text(line);
        let hashes = text
            .len()
            .saturating_sub(text.trim_start_matches('#').len());
        let rest = text.get(hashes..).unwrap_or_default();
        s.push_str(&format!("> {}{rest}\n", "&#35;".repeat(hashes)));
    }
    if r.cut {
        s.push_str("> …\n");
    }
    s
}

/// `less than a day`, `3 days`, `5 months` (from 60 days), `2 years` (from 730 days).
pub fn age(days: i64) -> String {
    let plural = |n: i64, unit: &str| {
        if n == 1 {
            format!("1 {unit}")
        } else {
            format!("{n} {unit}s")
        }
    };
    match days {
        ..=0 => "less than a day".to_string(),
        1..=59 => plural(days, "day"),
        60..=729 => plural(days / 30, "month"),
        _ => plural(days / 365, "year"),
    }
}

/// `linux/s390x added; linux/arm/v7 removed`, or `unchanged (2)`.
fn platforms(p: &PlatformChange) -> String {
    let list = |names: &[String]| {
        let mut shown: Vec<String> = names
            .iter()
            .take(PLATFORMS_SHOWN)
            .map(|n| escape::markdown_code(n))
            .collect();
        if names.len() > PLATFORMS_SHOWN {
            shown.push(format!(
                "{} more",
                names.len().saturating_sub(PLATFORMS_SHOWN)
            ));
        }
        shown.join(", ")
    };
    match (p.added.is_empty(), p.removed.is_empty()) {
        (true, true) => "unchanged".to_string(),
        (false, true) => format!("{} added", list(&p.added)),
        (true, false) => format!("{} removed", list(&p.removed)),
        (false, false) => format!("{} added; {} removed", list(&p.added), list(&p.removed)),
    }
}

/// `48.2 MiB → 50.3 MiB, +2.1 MiB (+4 %)`; `unchanged` when equal.
pub fn size(from: u64, to: u64) -> String {
    if from == to {
        return format!("{} (unchanged)", bytes(to));
    }
    let (sign, delta) = if to > from {
        ('+', to.saturating_sub(from))
    } else {
        ('-', from.saturating_sub(to))
    };
    let percent = if from == 0 {
        String::new()
    } else {
        format!(" ({sign}{:.0} %)", delta as f64 * 100.0 / from as f64)
    };
    format!(
        "{} → {}, {sign}{}{percent}",
        bytes(from),
        bytes(to),
        bytes(delta)
    )
}

/// `512 B`, `1.5 KiB`, `48.2 MiB`, `1.1 GiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = "KiB";
    for next in UNITS.iter().skip(1) {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    format!("{value:.1} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_in_the_largest_unit_that_fits() {
        let cases = [
            (0, "less than a day"),
            (1, "1 day"),
            (3, "3 days"),
            (59, "59 days"),
            (60, "2 months"),
            (400, "13 months"),
            (730, "2 years"),
            (3650, "10 years"),
        ];
        for (days, text) in cases {
            assert_eq!(age(days), text, "{days}");
        }
        let now: Timestamp = "2026-12-07T00:00:00Z".parse().unwrap();
        for (created, ok) in [
            ("1970-01-01T00:00:00Z", false),
            ("1999-12-31T23:59:59Z", false),
            ("2000-01-01T00:00:00Z", true),
            ("2026-12-07T00:00:00Z", true),
            ("2026-12-07T00:00:01Z", false),
        ] {
            assert_eq!(plausible(created.parse().unwrap(), now), ok, "{created}");
        }
    }

    #[test]
    fn sizes_read_in_binary_units_with_the_change() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(50_580_000), "48.2 MiB");
        assert_eq!(bytes(1_181_116_006), "1.1 GiB");
        assert_eq!(
            size(50_580_000, 52_782_000),
            "48.2 MiB → 50.3 MiB, +2.1 MiB (+4 %)"
        );
        assert_eq!(size(2048, 1024), "2.0 KiB → 1.0 KiB, -1.0 KiB (-50 %)");
        assert_eq!(size(0, 10), "0 B → 10 B, +10 B");
        assert_eq!(size(4096, 4096), "4.0 KiB (unchanged)");
    }

    #[test]
    fn platform_changes_list_what_was_gained_and_lost() {
        let change = |added: &[&str], removed: &[&str]| PlatformChange {
            added: added.iter().map(|s| s.to_string()).collect(),
            removed: removed.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(platforms(&change(&[], &[])), "unchanged");
        assert_eq!(
            platforms(&change(&["linux/s390x"], &[])),
            "`linux/s390x` added"
        );
        assert_eq!(
            platforms(&change(&["linux/s390x"], &["linux/arm/v7"])),
            "`linux/s390x` added; `linux/arm/v7` removed"
        );
        let many: Vec<String> = (0..10).map(|i| format!("linux/a{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let shown = platforms(&change(&[], &many));
        assert!(shown.ends_with("`linux/a7`, 2 more removed"), "{shown}");
        let side = |p: &[&str]| Side {
            platforms: p.iter().map(|p| p.parse().unwrap()).collect(),
            ..Side::default()
        };
        assert_eq!(platform_change(&side(&[]), &side(&["linux/amd64"])), None);
        assert_eq!(
            platform_change(
                &side(&["linux/amd64", "linux/arm64"]),
                &side(&["linux/arm64"])
            ),
            Some(change(&[], &["linux/amd64"]))
        );
    }

    #[test]
    fn compare_links_only_for_forge_shaped_https_repositories() {
        let link = |label: &str, refs| SourceRepo::parse(label, None).and_then(|r| r.compare(refs));
        let refs = ("1.2.0", "1.3.0");
        let cases = [
            (
                "https://github.com/acme/web",
                Some("https://github.com/acme/web/compare/1.2.0...1.3.0"),
            ),
            (
                "https://github.com/acme/web.git",
                Some("https://github.com/acme/web/compare/1.2.0...1.3.0"),
            ),
            (
                "https://github.com/acme/web/tree/main/sub",
                Some("https://github.com/acme/web/compare/1.2.0...1.3.0"),
            ),
            (
                "https://gitlab.com/acme/team/web",
                Some("https://gitlab.com/acme/team/web/-/compare/1.2.0...1.3.0"),
            ),
            (
                "https://gitlab.example.org/acme/web/-/tree/main",
                Some("https://gitlab.example.org/acme/web/-/compare/1.2.0...1.3.0"),
            ),
            (
                "https://codeberg.org/acme/web",
                Some("https://codeberg.org/acme/web/compare/1.2.0...1.3.0"),
            ),
            ("https://github.com/acme", None),
            ("http://github.com/acme/web", None),
            ("https://user:pw@github.com/acme/web", None),
            ("https://example.com/acme/web", None),
            ("https://github.com/acme/we)b", None),
            ("https://github.com/../web", None),
            ("javascript:alert(1)", None),
        ];
        for (label, want) in cases {
            assert_eq!(link(label, refs).as_deref(), want, "{label}");
        }
        let gitlab = SourceRepo::parse("https://gitlab.com/a/b", None).unwrap();
        assert_eq!(gitlab.releases(), "https://gitlab.com/a/b/-/releases");
    }

    #[test]
    fn a_source_on_the_manifest_repositorys_forge_is_linked_in_its_style() {
        let refs = ("1.2.0", "1.3.0");
        // The manifest repository's own forge, self-hosted under any name, in its style.
        let site: Site = ("git.acme.example".into(), ForgeKind::Gitlab);
        let own = SourceRepo::parse("https://git.acme.example:8443/team/sub/web", Some(&site));
        assert_eq!(
            own.and_then(|r| r.compare(refs)).as_deref(),
            Some("https://git.acme.example:8443/team/sub/web/-/compare/1.2.0...1.3.0")
        );
        let site: Site = ("git.acme.example".into(), ForgeKind::Gitea);
        let gitea = SourceRepo::parse("https://git.acme.example/team/web", Some(&site)).unwrap();
        assert_eq!(
            gitea.releases(),
            "https://git.acme.example/team/web/releases"
        );
        assert_eq!(
            SourceRepo::parse("https://other.example/team/web", Some(&site)),
            None
        );
    }

    #[test]
    fn comparisons_prefer_revisions_then_versions_then_tags() {
        // Revisions first (both hashes), then versions (both tag-shaped), then tags.
        let tags = ("1.2.0", "1.3.0");
        let cases = [
            (
                (Some("abc1234"), Some("def5678")),
                (Some("v1"), Some("v2")),
                Some(("abc1234", "def5678")),
            ),
            (
                (Some("abc1234"), None),
                (Some("v1"), Some("v2")),
                Some(("v1", "v2")),
            ),
            ((Some("main"), Some("abc1234")), (None, None), Some(tags)),
            ((None, None), (Some("v 1"), Some("v2")), Some(tags)),
            ((Some("abc1234"), Some("abc1234")), (None, None), Some(tags)),
        ];
        for (revs, versions, want) in cases {
            assert_eq!(
                compare_refs(revs, versions, tags),
                want,
                "{revs:?} {versions:?}"
            );
        }
        assert_eq!(compare_refs((None, None), (None, None), ("a", "a")), None);
    }

    #[test]
    fn release_texts_are_shown_escaped_and_never_rendered() {
        let texts = [ReleaseText {
            tag: "v1.3.0".into(),
            name: "Big <b>release</b>".into(),
            text: "## Fixes\n\n- ![pixel](https://evil.example/p.png) [x](javascript:1)\n<!-- imagebump:updates64 W10= -->\r\n\u{1b}[31m".into(),
            cut: true,
        }];
        assert_eq!(
            release_texts(&texts),
            "\n<details><summary>Release notes of v1&#46;3&#46;0</summary>\n\
             \nBig &#60;b&#62;release&#60;/b&#62; (`v1.3.0`)\n\n\
             > &#35;&#35; Fixes\n\
             >\n\
             > &#45; &#33;&#91;pixel&#93;&#40;https&#58;//evil&#46;example/p&#46;png&#41; &#91;x&#93;&#40;javascript&#58;1&#41;\n\
             > &#60;&#33;&#45;&#45; imagebump&#58;updates64 W10= &#45;&#45;&#62;\n\
             > &#92;u&#123;1b&#125;&#91;31m\n\
             > …\n\
             \n</details>\n"
        );
    }

    #[test]
    fn release_texts_stop_at_their_budget() {
        let release = |tag: &str, text: &str| ReleaseText {
            tag: tag.into(),
            name: String::new(),
            text: text.into(),
            cut: false,
        };
        // Control characters take twenty bytes each once escaped.
        let loud = release("v2.0.0", &"\u{1b}".repeat(1000));
        let small = release("v1.9.0", "fine");
        let block = release_texts(&[small, loud]);
        assert!(block.len() < RELEASES_SHOWN, "{}", block.len());
        assert_eq!(
            block,
            "\n<details><summary>Release notes of v1&#46;9&#46;0</summary>\n\
             \nv1&#46;9&#46;0 (`v1.9.0`)\n\n> fine\n\
             \n1 more release(s) left out here: the run's JSON report has them.\n\
             \n</details>\n"
        );
    }

    #[test]
    fn the_notes_stop_at_their_budget_and_say_how_many_are_left_out() {
        let one = UpdateNotes {
            image: "ghcr.io/acme/web".into(),
            repository: "ghcr.io/acme/web".into(),
            from: "1.2.0".into(),
            to: "1.3.0".into(),
            kind: "minor",
            created: None,
            first_seen: None,
            age_days: None,
            platforms: None,
            size: None,
            source: None,
            revision: None,
            version: None,
            url: None,
            compare: None,
            releases: None,
            signed_by: None,
            signed_digest: None,
            attested: Vec::new(),
            release_notes: Vec::new(),
            release_notes_not_read: None,
            site_repo: None,
        };
        let block = "\n`ghcr.io/acme/web` `1.2.0` → `1.3.0`: **minor**\n- Signature: not checked\n";
        // The age line names its clock.
        let aged = |created: Option<&str>, first_seen: Option<&str>| UpdateNotes {
            created: created.map(str::to_string),
            first_seen: first_seen.map(str::to_string),
            age_days: Some(9),
            ..one.clone()
        };
        assert!(render_one(&aged(Some("2026-11-28"), None))
            .contains("\n- Age: 9 days (built 2026-11-28)\n"));
        assert!(render_one(&aged(None, Some("2026-11-28")))
            .contains("\n- Age: 9 days (first seen 2026-11-28)\n"));
        let notes = vec![one; 5];
        let head = "\n**Release notes**\n";
        assert_eq!(render(&notes, 10_000), format!("{head}{}", block.repeat(5)));
        let budget = head.len() + 2 * block.len();
        assert_eq!(
            render(&notes, budget),
            format!("{head}{}\n3 more update(s) left out here to keep the body short: the run's JSON report lists them.\n", block.repeat(2))
        );
        assert_eq!(render(&[], 10), "");
    }
}
