//! The words of a proposal: branch names, pull-request titles and bodies, commit messages.

use std::collections::BTreeMap;

use super::notes::UpdateNotes;
use crate::deliver::marker::{self, Marked};
use crate::plan::{ChangeSet, Plan, Update};
use crate::resolve::Rejections;
use imagebump_model::escape;

/// Whether a pull request gets the forge's auto-merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Automerge {
    /// Not asked for (not every update's policy says `automerge: true`).
    Off,
    On,
    /// Asked for, but a version it proposes was rejected before: a human decides. Why.
    Withheld(String),
}

/// The auto-merge of a change set: on when every update asks for it and none proposes a
/// version rejected before anywhere in the repository (that tag, or one a "no" covered:
/// a rejected version at or above it).
pub fn automerge(updates: &[&Update], rejections: &Rejections) -> Automerge {
    if updates.is_empty() || !updates.iter().all(|u| u.automerge) {
        return Automerge::Off;
    }
    for u in updates {
        let Ok(name) = imagebump_model::name::parse_name(&u.image) else {
            continue;
        };
        let tag = marker::tag_of(&u.to);
        let version = imagebump_policy::constraint::parse_version(tag);
        // As a rejection holds a version back: up to it, in its major line.
        let line = imagebump_policy::constraint::major_line;
        let covered = |rejected: &str| {
            rejected == tag
                || matches!(
                    (&version, imagebump_policy::constraint::parse_version(rejected)),
                    (Some(v), Some(r)) if *v <= r && line(v) == line(&r)
                )
        };
        let hit = rejections
            .get(&name)
            .and_then(|list| list.iter().find(|r| covered(&r.tag)));
        if let Some(r) = hit {
            return Automerge::Withheld(format!(
                "{} {} was rejected before: {}",
                escape::markdown_code(&u.name),
                escape::markdown_code(&r.tag),
                escape::markdown_text(&r.why)
            ));
        }
    }
    Automerge::On
}

/// The updates of a change set.
pub fn updates_of<'a>(plan: &'a Plan, set: &ChangeSet) -> Vec<&'a Update> {
    set.updates
        .iter()
        .filter_map(|&i| plan.updates.get(i))
        .collect()
}

/// The branch of a change set: the prefix and a slug of the group key, stable across runs.
/// The slug is one branch-name component git accepts whatever the key (no `..`, no `.lock`
/// at its end); two keys can share a slug (`web (major)`, `web-major`), which
/// [`super::decide::apart_clashes`] settles.
pub fn branch_name(prefix: &str, group: &str) -> String {
    let mut slug = String::new();
    for c in group.to_lowercase().chars() {
        if c.is_ascii_alphanumeric() || c == '_' || (c == '.' && !slug.ends_with('.')) {
            slug.push(c);
        } else if c != '.' && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let mut slug = slug.trim_matches(|c| c == '-' || c == '.').to_string();
    if let Some(stem) = slug.strip_suffix(".lock") {
        slug = format!("{}-lock", stem.trim_end_matches(['-', '.']));
    }
    if slug.is_empty() {
        slug = "root".to_string();
    }
    // Long slugs are cut, with a short hash of the exact key so two groups never share one.
    if slug.len() > 60 {
        use sha2::Digest;
        let hash = format!("{:x}", sha2::Sha256::digest(group.as_bytes()));
        let hash: String = hash.chars().take(8).collect();
        let short: String = slug.chars().take(50).collect();
        return format!("{prefix}{}-{hash}", short.trim_end_matches('-'));
    }
    format!("{prefix}{slug}")
}

/// The pull-request title (also the commit's subject): one line, its hidden characters
/// (a newline in a group or a tag) shown as `\u{…}`.
pub fn title(set: &ChangeSet, updates: &[&Update], template: Option<&str>) -> String {
    escape::terminal(&raw_title(set, updates, template)).into_owned()
}

fn raw_title(set: &ChangeSet, updates: &[&Update], template: Option<&str>) -> String {
    let (image, from, to) = match updates {
        [u] => (&*u.name, &*u.from, &*u.to),
        _ => ("", "", ""),
    };
    let major = crate::plan::is_major_group(&set.group);
    let default = match updates {
        [u] if major => format!("Update {} to {} (major)", u.name, marker::tag_of(&u.to)),
        [u] => format!("Update {} to {}", u.name, marker::tag_of(&u.to)),
        // The group's name says "(major)".
        _ => format!("Update {} images in {}", updates.len(), set.group),
    };
    match template {
        None => default,
        Some(t) => {
            let title = t
                .replace("{group}", &set.group)
                .replace("{image}", image)
                .replace("{from}", from)
                .replace("{to}", to)
                .replace("{count}", &updates.len().to_string());
            // A major update's title says so, whatever the template.
            if major && !t.contains("{group}") {
                format!("{title} (major)")
            } else {
                title
            }
        }
    }
}

/// Text by (file, tag): promotion paths.
type Texts = BTreeMap<(String, String), String>;

/// The most bytes of release notes in one body (forges refuse bodies past about 64 KiB;
/// the table, the promotion paths and the marker need the rest).
const NOTES_BUDGET: usize = 24 * 1024;

/// The pull-request body: a table for people (with a link to the image's source when its
/// labels name one), the release notes of each update, the marker for the next run.
pub fn body(
    set: &ChangeSet,
    updates: &[&Update],
    (notes, promoted): (&[UpdateNotes], &Texts),
    automerge: &Automerge,
) -> String {
    let major = if crate::plan::is_major_group(&set.group) {
        " (major updates, apart from the minor and patch ones)"
    } else {
        ""
    };
    let mut s = format!(
        "imagebump updates {} image reference(s) in {}{major}.\n\n| Image | From | To | File | Source |\n|---|---|---|---|---|\n",
        updates.len(),
        escape::markdown_code(crate::plan::base_group(&set.group))
    );
    for u in updates {
        s.push_str(&row(u, notes));
    }
    s.push_str(&super::notes::render(notes, NOTES_BUDGET));
    let paths: Vec<&String> = updates
        .iter()
        .filter_map(|u| promoted.get(&(u.file.to_string(), marker::tag_of(&u.to).to_string())))
        .collect();
    if !paths.is_empty() {
        s.push_str("\n**Promotion path** (when each version reached each environment on the base branch):\n\n");
        for line in paths {
            s.push_str(line);
            s.push('\n');
        }
    }
    s.push_str("\nClosing this pull request without merging rejects these versions: imagebump will not propose them again, and a newer version opens a new pull request. Reverting the merged commit does the same.\n\n");
    match automerge {
        Automerge::Off => {}
        Automerge::On => s.push_str("**Automerge**: the forge merges this pull request once its required checks pass. Turn auto-merge off on the pull request to keep it for review; imagebump leaves it off.\n\n"),
        Automerge::Withheld(why) => s.push_str(&format!("**Automerge withheld**: {why}. Merge it by hand if it is wanted.\n\n")),
    }
    let marked: Vec<Marked> = updates.iter().map(|u| Marked::from(*u)).collect();
    s.push_str(&marker::render(&marked));
    s.push('\n');
    s
}

/// One update's table row; its Source cell from the new image's labels.
fn row(u: &Update, notes: &[UpdateNotes]) -> String {
    let file = u.written_to.as_deref().unwrap_or(&u.file);
    let (from, to) = (marker::tag_of(&u.from), marker::tag_of(&u.to));
    let link = notes
        .iter()
        .find(|n| *n.repository == *u.image && n.from == from && n.to == to)
        .and_then(|n| n.source.as_deref())
        .map_or(String::new(), source_cell);
    // A chart bump says which release of the application it installs.
    let app = u
        .app_version
        .as_ref()
        .map_or(String::new(), |a| format!(" ({})", app_version(a)));
    format!(
        "| {} | {} | {}{app} | {} | {link} |\n",
        escape::markdown_code(&u.name),
        escape::markdown_code(&u.from),
        escape::markdown_code(&u.to),
        escape::markdown_code(file)
    )
}

/// `appVersion 1.11.0 → 1.12.0` as the chart's `Display` says it, each version as it is
/// when it is tag-shaped, else as code (an index can hold any text there).
fn app_version(a: &crate::chart::app_version::AppVersionChange) -> String {
    let show = |v: &Option<String>| match v {
        None => "(none)".to_string(),
        Some(v) if imagebump_model::name::is_valid_tag(v) => v.clone(),
        Some(v) => escape::markdown_code(v),
    };
    if a.from == a.to {
        format!("appVersion {} (unchanged)", show(&a.to))
    } else {
        format!("appVersion {} → {}", show(&a.from), show(&a.to))
    }
}

/// The longest image source label shown whole; a longer one is cut.
const LABEL_SHOWN: usize = 200;

/// The Source cell for an image's `org.opencontainers.image.source` label: links only to
/// a plain `https://` URL ([`escape::https_link`]); any other label (`http:`,
/// `javascript:`, credentials, Markdown, HTML) is shown as code, never as a link or markup.
fn source_cell(label: &str) -> String {
    match escape::https_link(label) {
        Some(url) if url.starts_with("https://github.com/") => {
            let repo = url.trim_end_matches('/').trim_end_matches(".git");
            format!("[source]({repo}) · [releases]({repo}/releases)")
        }
        Some(url) => format!("[source]({url})"),
        None if label.chars().count() > LABEL_SHOWN => {
            let cut: String = label.chars().take(LABEL_SHOWN).collect();
            format!("{}…", escape::markdown_code(&cut))
        }
        None => escape::markdown_code(label),
    }
}

/// The commit message: the title, then one trailer per update.
pub fn commit_message(title: &str, updates: &[&Update]) -> String {
    let mut s = format!("{title}\n\n");
    for u in updates {
        s.push_str(&marker::trailer(&Marked::from(*u)));
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use imagebump_model::platform::Platform;

    #[test]
    fn branch_names_are_stable_slugs() {
        assert_eq!(branch_name("imagebump/", "web"), "imagebump/web");
        assert_eq!(branch_name("imagebump/", "apps/web"), "imagebump/apps-web");
        assert_eq!(
            branch_name("imagebump/", "team-a/batch"),
            "imagebump/team-a-batch"
        );
        assert_eq!(branch_name("imagebump/", "."), "imagebump/root");
        // Whatever the key, the slug is a name git takes.
        assert_eq!(branch_name("imagebump/", "db.lock"), "imagebump/db-lock");
        assert_eq!(branch_name("imagebump/", "a..b/c"), "imagebump/a.b-c");
        assert_eq!(branch_name("imagebump/", "x/.lock"), "imagebump/x-lock");
        for key in [
            "db.lock",
            "a..b",
            "x/.lock",
            ".lock",
            "a.-b",
            "a@{1}",
            "web (major)",
        ] {
            let b = branch_name("imagebump/", key);
            assert!(crate::source::git::branch_name(&b).is_ok(), "{key:?}: {b}");
        }
        let long = "a".repeat(80);
        let b = branch_name("imagebump/", &long);
        assert!(b.len() < 80 && b.starts_with("imagebump/aaaa"), "{b}");
        assert_eq!(b, branch_name("imagebump/", &long));
    }

    #[test]
    fn bodies_link_to_the_image_source_and_carry_the_marker() {
        let set = ChangeSet {
            group: "apps/web".into(),
            files: vec!["apps/web/kustomization.yaml".into()],
            updates: vec![0],
            changes: Vec::new(),
        };
        let u = Update {
            file: "apps/web/kustomization.yaml".into(),
            line: 3,
            column: 13,
            kind: crate::discover::RefKind::Kustomize,
            image: "ghcr.io/acme/web".into(),
            name: "ghcr.io/acme/web".into(),
            from: "1.2.0".into(),
            to: "1.3.0".into(),
            group: "apps/web".into(),
            written_to: None,
            automerge: false,
            verified: None,
            app_version: None,
        };
        let facts = web_facts();
        let now: jiff::Timestamp = "2026-12-07T12:00:00Z".parse().unwrap();
        let notes = super::super::notes::notes_of(&[&u], known(&facts), now);
        let b = body(&set, &[&u], (&notes, &BTreeMap::new()), &Automerge::Off);
        let marker_line = b.lines().last().unwrap();
        assert_eq!(
            b,
            format!(
                "imagebump updates 1 image reference(s) in `apps/web`.\n\n\
                 | Image | From | To | File | Source |\n|---|---|---|---|---|\n\
                 | `ghcr.io/acme/web` | `1.2.0` | `1.3.0` | `apps/web/kustomization.yaml` | [source](https://github.com/acme/web) · [releases](https://github.com/acme/web/releases) |\n\
                 \n**Release notes**\n\
                 \n`ghcr.io/acme/web` `1.2.0` → `1.3.0`: **minor**\n\
                 - What changed: [changes](https://github.com/acme/web/compare/1111111...2222222) · [releases](https://github.com/acme/web/releases)\n\
                 - Age: 3 days (built 2026-12-04)\n\
                 - Platforms: `linux/s390x` added; `linux/arm/v7` removed\n\
                 - Compressed size (`linux/amd64`): 2.0 MiB → 2.1 MiB, +100.0 KiB (+5 %)\n\
                 - Signature: not checked\n\
                 \nClosing this pull request without merging rejects these versions: imagebump will not propose them again, and a newer version opens a new pull request. Reverting the merged commit does the same.\n\n\
                 {marker_line}\n"
            )
        );
        assert_eq!(marker::parse(&b).unwrap(), vec![Marked::from(&u)]);
        assert_eq!(title(&set, &[&u], None), "Update ghcr.io/acme/web to 1.3.0");
        assert_eq!(
            commit_message("t", &[&u]),
            "t\n\nImagebump-Update: ghcr.io/acme/web 1.2.0 -> 1.3.0 in apps/web/kustomization.yaml\n"
        );

        // `verify`: the body names the key and the digest it verified.
        let signed = Update {
            verified: Some(Box::new(crate::verify::Verified {
                digest: "sha256:ab".into(),
                signer: "key cosign.pub (ecdsa-p256 sha256:0123456789abcdef) (sig tag)".into(),
                gates: vec!["sbom: SPDX, signed by key cosign.pub".into()],
            })),
            ..u.clone()
        };
        let notes = super::super::notes::notes_of(&[&signed], known(&BTreeMap::new()), now);
        let b = body(
            &set,
            &[&signed],
            (&notes, &BTreeMap::new()),
            &Automerge::Off,
        );
        assert!(b.contains("\n`ghcr.io/acme/web` `1.2.0` → `1.3.0`: **minor**\n- Signature: verified at `sha256:ab`, signed by key cosign&#46;pub &#40;ecdsa&#45;p256 sha256&#58;0123456789abcdef&#41; &#40;sig tag&#41;\n- Attestation gate passed: sbom&#58; SPDX, signed by key cosign&#46;pub\n\nClosing"), "{b}");
    }

    /// The registry's facts alone: no forge, no releases.
    fn known(facts: &super::super::notes::ReleaseFacts) -> super::super::notes::Known<'_> {
        static NONE: std::sync::LazyLock<super::super::releases::Releases> =
            std::sync::LazyLock::new(BTreeMap::new);
        super::super::notes::Known {
            facts,
            site: None,
            releases: &NONE,
        }
    }

    /// ghcr.io/acme/web 1.2.0 → 1.3.0: revisions, a platform swapped, 100 KiB more.
    fn web_facts() -> super::super::notes::ReleaseFacts {
        use crate::registry::manifest::OciLabels;
        use crate::resolve::release::{Facts, Side, Sized};
        let side = |rev: &str, platforms: [&str; 2], bytes: u64, created: &str| Side {
            labels: OciLabels {
                source: Some("https://github.com/acme/web".into()),
                revision: Some(rev.into()),
                ..OciLabels::default()
            },
            created: created.parse().ok(),
            platforms: platforms.iter().map(|p| p.parse().unwrap()).collect(),
            size: Some(Sized {
                platform: Some("linux/amd64".parse().unwrap()),
                bytes,
            }),
        };
        let facts = Facts {
            age: None,
            old: Some(side(
                "1111111",
                ["linux/amd64", "linux/arm/v7"],
                2 << 20,
                "2026-10-01T00:00:00Z",
            )),
            new: Some(side(
                "2222222",
                ["linux/amd64", "linux/s390x"],
                (2 << 20) + 102_400,
                "2026-12-04T08:00:00Z",
            )),
        };
        let key = (
            "ghcr.io/acme/web".to_string(),
            "1.2.0".to_string(),
            "1.3.0".to_string(),
        );
        BTreeMap::from([(key, facts)])
    }

    #[test]
    fn source_labels_are_text_unless_a_plain_https_url() {
        let cases = [
            (
                "![pixel](https://evil.example/p.png)",
                "<code>&#33;&#91;pixel&#93;&#40;https&#58;//evil&#46;example/p&#46;png&#41;</code>",
            ),
            (
                "[Click to approve](https://phish.example)",
                "<code>&#91;Click to approve&#93;&#40;https&#58;//phish&#46;example&#41;</code>",
            ),
            (
                "<img src=x onerror=alert(1)>",
                "<code>&#60;img src=x onerror=alert&#40;1&#41;&#62;</code>",
            ),
            (
                "javascript:alert(1)",
                "<code>javascript&#58;alert&#40;1&#41;</code>",
            ),
            ("http://example.com/acme", "`http://example.com/acme`"),
            (
                "https://user:token@github.com/acme/web",
                "`https://user:token@github.com/acme/web`",
            ),
            (
                "https://example.com/a b",
                "<code>https&#58;//example&#46;com/a b</code>",
            ),
            (
                "https://example.com/x)[y](https://evil",
                "[source](https://example.com/x%29%5By%5D%28https://evil)",
            ),
            (
                "<!-- imagebump:updates64 W10= -->",
                "<code>&#60;&#33;&#45;&#45; imagebump&#58;updates64 W10= &#45;&#45;&#62;</code>",
            ),
            (
                "https://gitlab.example/acme/web",
                "[source](https://gitlab.example/acme/web)",
            ),
        ];
        for (label, cell) in cases {
            assert_eq!(source_cell(label), cell, "{label:?}");
        }
        let long = format!("x{}", "y".repeat(300));
        assert_eq!(source_cell(&long), format!("`x{}`…", "y".repeat(199)));
    }

    /// Text as hostile as a registry, a forge or a file name can make it.
    fn hostile() -> impl proptest::strategy::Strategy<Value = String> {
        "([a-z0-9./:@-]|<!--|-->|<img|\\]\\(|!\\[|`|\\||\n|\r|\u{1b}|\u{202e}|&#|imagebump:updates64 ){0,12}"
    }

    proptest::proptest! {
        /// Whatever the values hold, the body has one marker, imagebump's, at its end; it
        /// reads back exactly; every table row stays one line; and no value opens a tag,
        /// an image or a link of its own.
        #[test]
        fn no_value_changes_the_shape_of_a_body(
            name in hostile(), to in hostile(), file in hostile(), group in hostile(),
            label in hostile(), app in hostile(), signer in hostile(),
        ) {
            let set = ChangeSet {
                group: group.as_str().into(),
                files: vec![file.as_str().into()],
                updates: vec![0],
                changes: Vec::new(),
            };
            let u = Update {
                file: file.as_str().into(),
                line: 3,
                column: 13,
                kind: crate::discover::RefKind::Kustomize,
                image: name.as_str().into(),
                name: name.as_str().into(),
                from: "1.0.0".into(),
                to: to.as_str().into(),
                group: group.as_str().into(),
                written_to: None,
                automerge: false,
                verified: Some(Box::new(crate::verify::Verified {
                    digest: to.clone(),
                    signer: signer.clone(),
                    gates: Vec::new(),
                })),
                app_version: Some(Box::new(crate::chart::app_version::AppVersionChange {
                    from: None,
                    to: Some(app.clone()),
                })),
            };
            let mut facts = web_facts().into_values().next().unwrap();
            for side in [&mut facts.old, &mut facts.new].into_iter().flatten() {
                side.labels.source = Some(label.clone());
                side.labels.revision = Some(label.clone());
                side.labels.version = Some(to.clone());
                side.platforms.push(Platform { os: label.clone(), architecture: signer.clone(), variant: None });
            }
            let key = (name.clone(), "1.0.0".to_string(), marker::tag_of(&to).to_string());
            let facts = BTreeMap::from([(key, facts)]);
            let now: jiff::Timestamp = "2026-12-07T12:00:00Z".parse().unwrap();
            let notes = super::super::notes::notes_of(&[&u], known(&facts), now);
            let withheld = Automerge::Withheld(escape::markdown_text(&label));
            let b = body(&set, &[&u], (&notes, &BTreeMap::new()), &withheld);
            proptest::prop_assert_eq!(b.matches("<!--").count(), 1, "{}", b);
            proptest::prop_assert!(b.trim_end().ends_with(" -->"), "{}", b);
            proptest::prop_assert_eq!(marker::parse(&b), Some(vec![Marked::from(&u)]));
            // The same lines as with the plainest values: no value adds or joins one.
            // (The links line is there only for a label naming a forge's repository.)
            let links = b.lines().filter(|l| l.starts_with("- What changed: ")).count();
            proptest::prop_assert!(links <= 1, "{}", b);
            proptest::prop_assert_eq!(b.lines().count() - links, 19, "{}", b);
            proptest::prop_assert!(!b.contains(['\r', '\u{1b}', '\u{202e}']), "{}", b);
            for raw in ["<img", "](", "!["] {
                let own = if raw == "](" { ["[source](", "[releases](", "[changes]("].iter().map(|l| b.matches(l).count()).sum() } else { 0 };
                proptest::prop_assert_eq!(b.matches(raw).count(), own, "{} in {}", raw, b);
            }
            let t = title(&set, &[&u], Some("Update {group} {image} {to}"));
            proptest::prop_assert!(!t.contains(['\n', '\r', '\u{1b}', '\u{202e}']), "{}", t);
        }
    }
}
