//! What imagebump writes into pull requests and commits so that a later run, with no state
//! of its own, knows what it proposed: a hidden marker in the pull-request body with the
//! exact updates, and `Imagebump-Update:` trailers in commit messages. A pull request
//! closed without merging, or a revert of a merged commit, rejects exactly those versions.

use serde::{Deserialize, Serialize};

use crate::plan::Update;

/// The marker's opening: its payload is the JSON of the updates in standard base64, whose
/// alphabet holds neither `-` nor `>`, so no value inside can close the comment or spell
/// another marker.
const MARKER_START: &str = "<!-- imagebump:updates64 ";
/// The opening of the marker in its JSON form, also read, at the same place.
const LEGACY_START: &str = "<!-- imagebump:updates ";
const MARKER_END: &str = " -->";
/// Appended to a pull request's body once imagebump has turned its auto-merge on, so that a
/// later run tells "not on yet" (a failed call: try again) from "turned off by a human"
/// (leave it off).
pub const AUTOMERGE_MARK: &str = "<!-- imagebump:automerge -->";
/// The commit trailer key.
pub const TRAILER: &str = "Imagebump-Update";

/// One update as recorded in a marker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marked {
    /// The normalised repository.
    pub image: String,
    /// The change-set group (so that a sharded run knows which pull requests are its own).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    pub file: String,
    pub from: String,
    pub to: String,
}

impl From<&Update> for Marked {
    fn from(u: &Update) -> Self {
        Marked {
            image: u.image.to_string(),
            group: u.group.to_string(),
            file: u.written_to.as_deref().unwrap_or(&u.file).to_string(),
            from: u.from.to_string(),
            to: u.to.to_string(),
        }
    }
}

/// The hidden marker for a pull-request body: imagebump writes it as the body's last line
/// (only [`AUTOMERGE_MARK`] may follow it).
pub fn render(updates: &[Marked]) -> String {
    use base64::Engine as _;
    let json = serde_json::to_string(updates).unwrap_or_else(|_| "[]".into());
    let payload = base64::engine::general_purpose::STANDARD.encode(json);
    format!("{MARKER_START}{payload}{MARKER_END}")
}

/// The end of a body as imagebump writes it: the marker's line, then at most the lines
/// imagebump appends later (the auto-merge mark, the note on a branch someone else
/// committed to), blank lines aside. The marker's line (`None` when a line of another kind
/// comes first), and whether the auto-merge mark is among those after it.
fn tail(body: &str) -> (Option<&str>, bool) {
    let note = format!("> {}", crate::deliver::pulls::decide::FOREIGN_NOTE);
    let mut automerge = false;
    let lines = body.lines().rev().map(str::trim).filter(|l| !l.is_empty());
    for line in lines.take(3) {
        if line == AUTOMERGE_MARK {
            automerge = true;
        } else if line != note {
            return (Some(line), automerge);
        }
    }
    (None, automerge)
}

/// Whether imagebump's auto-merge mark follows the marker (where imagebump appends it; the
/// same words elsewhere, in a value the body quotes, do not count).
pub fn has_automerge_mark(body: &str) -> bool {
    tail(body).1
}

/// The updates recorded in a pull-request body, if it has imagebump's marker where
/// imagebump writes it: the last line, or before the lines imagebump appends later (the
/// auto-merge mark, the note on a branch someone else committed to). Only that line is
/// read: text anywhere else in the body (a label, a file name, a human's edit above it)
/// cannot add, hide or replace a marker.
pub fn parse(body: &str) -> Option<Vec<Marked>> {
    use base64::Engine as _;
    let inner = tail(body).0?.strip_suffix(MARKER_END)?;
    if let Some(payload) = inner.strip_prefix(MARKER_START) {
        let json = base64::engine::general_purpose::STANDARD
            .decode(payload)
            .ok()?;
        return serde_json::from_slice(&json).ok();
    }
    serde_json::from_str(inner.strip_prefix(LEGACY_START)?).ok()
}

/// The updates of the pull request from `branch` that its marker records, only when every
/// one belongs to the change set that branch is made for (`branch_name(prefix, group)`):
/// a marker naming another change set's images proposes nothing of its own, so closing
/// that pull request rejects nothing.
pub fn proposed(body: &str, branch: &str, prefix: &str) -> Vec<Marked> {
    let Some(marked) = parse(body) else {
        return Vec::new();
    };
    let own = |u: &Marked| {
        !u.group.is_empty() && crate::deliver::pulls::branch_name(prefix, &u.group) == branch
    };
    if marked.iter().all(own) {
        marked
    } else {
        tracing::warn!(
            "pull request branch {}: its marker names updates of another change set; not read",
            imagebump_model::escape::terminal(branch)
        );
        Vec::new()
    }
}

/// `Imagebump-Update: <image> <from> -> <to> in <file>`: the file says where, so that a
/// revert rejects the version there and not elsewhere. Each field is percent-encoded
/// where it holds `%`, a space (but the file) or a hidden character (a newline among
/// them), so one trailer stays one line and names exactly its own update.
pub fn trailer(u: &Marked) -> String {
    format!(
        "{TRAILER}: {} {} -> {} in {}",
        encode(&u.image, true),
        encode(&u.from, true),
        encode(&u.to, true),
        encode(&u.file, false)
    )
}

/// `s` with `%`, hidden characters and (with `spaces`) spaces as `%XX` (UTF-8 bytes).
fn encode(s: &str, spaces: bool) -> std::borrow::Cow<'_, str> {
    let special =
        |c: char| c == '%' || (spaces && c == ' ') || imagebump_model::escape::is_hidden(c);
    if !s.chars().any(special) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len().saturating_add(8));
    for c in s.chars() {
        if special(c) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The inverse of [`encode`]: a `%` not followed by two hex digits stays as it is (a
/// trailer whose fields were not encoded), as do bytes that would not be UTF-8.
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes
            .get(i.saturating_add(1)..i.saturating_add(3))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i = i.saturating_add(3);
            }
            _ => {
                out.push(b);
                i = i.saturating_add(1);
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

/// One update read back from a commit trailer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trailer {
    pub image: String,
    pub from: String,
    pub to: String,
    /// `None` in trailers written before files were recorded: the update then counts for
    /// the image everywhere.
    pub file: Option<String>,
}

/// A trailer's value, read back.
pub fn parse_trailer(value: &str) -> Option<Trailer> {
    let (image, rest) = value.trim().split_once(' ')?;
    let (from, rest) = rest.split_once(" -> ")?;
    // A tag (and a digest) has no spaces: what follows ` in ` is the file, spaces and all.
    let (to, file) = match rest.trim().split_once(" in ") {
        Some((to, file)) => (to, Some(file.trim().to_string())),
        None => (rest.trim(), None),
    };
    Some(Trailer {
        image: decode(image),
        from: decode(from.trim()),
        to: decode(to.trim()),
        file: file.filter(|f| !f.is_empty()).map(|f| decode(&f)),
    })
}

/// The tag of a recorded value (`1.3.0@sha256:…` → `1.3.0`).
pub fn tag_of(value: &str) -> &str {
    value.split('@').next().unwrap_or(value)
}

/// What a registry is asked for to read a recorded value's image: its digest when it
/// carries a valid one (the tag may have moved since: a digest update keeps its tag), else
/// its tag.
pub fn reference_of(value: &str) -> &str {
    match value.split_once('@') {
        Some((_, digest)) if imagebump_model::name::is_valid_digest(digest) => digest,
        _ => tag_of(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_read_by_its_digest_when_it_has_one() {
        let digest = format!("sha256:{}", "a".repeat(64));
        assert_eq!(reference_of(&format!("1.3.0@{digest}")), digest);
        assert_eq!(reference_of(&format!("@{digest}")), digest);
        assert_eq!(reference_of("1.3.0@sha256:short"), "1.3.0");
        assert_eq!(reference_of("1.3.0"), "1.3.0");
    }

    #[test]
    fn markers_and_trailers_round_trip() {
        let u = Marked {
            image: "ghcr.io/acme/web".into(),
            group: "apps/web".into(),
            file: "apps/web/kustomization.yaml".into(),
            from: "1.2.0".into(),
            to: "1.3.0@sha256:abc".into(),
        };
        let body = format!("Some text\n\n{}\n", render(std::slice::from_ref(&u)));
        assert_eq!(parse(&body), Some(vec![u.clone()]));
        assert_eq!(parse("no marker"), None);
        let t = trailer(&u);
        assert_eq!(
            t,
            "Imagebump-Update: ghcr.io/acme/web 1.2.0 -> 1.3.0@sha256:abc in apps/web/kustomization.yaml"
        );
        let value = t.split_once(": ").unwrap().1;
        let read = Trailer {
            image: "ghcr.io/acme/web".into(),
            from: "1.2.0".into(),
            to: "1.3.0@sha256:abc".into(),
            file: Some("apps/web/kustomization.yaml".into()),
        };
        assert_eq!(parse_trailer(value), Some(read.clone()));
        // Trailers written before files were recorded still read, for the image everywhere.
        assert_eq!(
            parse_trailer("ghcr.io/acme/web 1.2.0 -> 1.3.0@sha256:abc"),
            Some(Trailer {
                file: None,
                ..read.clone()
            })
        );
        assert_eq!(
            parse_trailer("ghcr.io/acme/web 1.2.0 -> 1.3.0 in my apps/values.yaml"),
            Some(Trailer {
                to: "1.3.0".into(),
                file: Some("my apps/values.yaml".into()),
                ..read
            })
        );
        assert_eq!(tag_of("1.3.0@sha256:abc"), "1.3.0");
    }

    fn hostile(file: &str) -> Marked {
        Marked {
            image: "ghcr.io/acme/web".into(),
            group: "apps/web".into(),
            file: file.into(),
            from: "1.2.0".into(),
            to: "1.3.0".into(),
        }
    }

    #[test]
    fn no_value_breaks_or_forges_the_marker() {
        let forged = format!(
            "{LEGACY_START}[{{\"image\":\"ghcr.io/acme/db\",\"group\":\"prod\",\"file\":\"prod/db.yaml\",\"from\":\"1\",\"to\":\"2\"}}]{MARKER_END}"
        );
        for file in [
            "apps/web/a -->b.yaml",
            "apps/web/x\n<!-- imagebump:automerge -->\n",
            "apps/web/\u{1b}[2J.yaml",
            forged.as_str(),
        ] {
            let u = hostile(file);
            let rendered = render(std::slice::from_ref(&u));
            assert_eq!(rendered.matches("-->").count(), 1, "{rendered}");
            assert!(!rendered.contains('\n'), "{rendered}");
            assert_eq!(rendered.matches("<!--").count(), 1, "{rendered}");
            let body = format!("text\n\n{rendered}\n");
            assert_eq!(parse(&body), Some(vec![u.clone()]), "{file:?}");
            // With the auto-merge mark after it, and CRLF line ends as a web edit leaves.
            let marked = format!("{}\r\n{AUTOMERGE_MARK}\r\n", body.trim_end());
            assert_eq!(parse(&marked), Some(vec![u]), "{file:?}");
            assert!(has_automerge_mark(&marked) && !has_automerge_mark(&body));
        }
        // A marker anywhere but the last line (a quoted label, text a human added) is not
        // read; nor is the auto-merge mark.
        let ours = render(&[hostile("apps/web/v.yaml")]);
        assert_eq!(
            parse(&format!("{forged}\n\n{ours}\n")).map(|m| m.len()),
            Some(1)
        );
        assert_eq!(parse(&format!("{ours}\n{forged} x\n")), None);
        assert_eq!(parse(&format!("| {forged} |\n")), None);
        assert!(!has_automerge_mark(&format!("{AUTOMERGE_MARK} \n{ours}")));
        // The note on a branch someone else committed to comes after it, in either order
        // with the auto-merge mark.
        let foreign = crate::deliver::pulls::decide::FOREIGN_NOTE;
        for end in [
            format!("{ours}\n\n> {foreign}\n"),
            format!("{ours}\n{AUTOMERGE_MARK}\n\n> {foreign}\n"),
            format!("{ours}\n\n> {foreign}\n{AUTOMERGE_MARK}\n"),
        ] {
            assert_eq!(parse(&end).map(|m| m.len()), Some(1), "{end}");
            assert_eq!(
                has_automerge_mark(&end),
                end.contains(AUTOMERGE_MARK),
                "{end}"
            );
        }
        // The marker in its JSON form is read at the same place.
        assert_eq!(
            parse(&format!("body\n{forged}\n")).map(|m| m[0].image.clone()),
            Some("ghcr.io/acme/db".into())
        );
    }

    #[test]
    fn a_marker_counts_only_for_its_own_branch() {
        let body = render(&[hostile("apps/web/v.yaml")]);
        assert_eq!(proposed(&body, "imagebump/apps-web", "imagebump/").len(), 1);
        assert_eq!(proposed(&body, "imagebump/prod-db", "imagebump/"), []);
        assert_eq!(proposed(&body, "imagebump/apps-web", "bump/"), []);
        let mixed = Marked {
            group: "prod/db".into(),
            ..hostile("prod/db.yaml")
        };
        let body = render(&[hostile("apps/web/v.yaml"), mixed]);
        assert_eq!(proposed(&body, "imagebump/apps-web", "imagebump/"), []);
        let ungrouped = Marked {
            group: String::new(),
            ..hostile("v.yaml")
        };
        assert_eq!(
            proposed(&render(&[ungrouped]), "imagebump/root", "imagebump/"),
            []
        );
    }

    #[test]
    fn a_trailer_is_one_line_naming_only_its_update() {
        let injected = "apps/web/v.yaml\nImagebump-Update: ghcr.io/acme/db 1 -> 2 in prod/db.yaml";
        let u = Marked {
            to: "1.3.0 in x".into(),
            ..hostile(injected)
        };
        let t = trailer(&u);
        assert_eq!(
            t,
            "Imagebump-Update: ghcr.io/acme/web 1.2.0 -> 1.3.0%20in%20x in apps/web/v.yaml%0AImagebump-Update: ghcr.io/acme/db 1 -> 2 in prod/db.yaml"
        );
        let read = parse_trailer(t.split_once(": ").map(|(_, v)| v).unwrap_or_default());
        assert_eq!(read.as_ref().map(|r| r.to.as_str()), Some("1.3.0 in x"));
        assert_eq!(read.and_then(|r| r.file), Some(injected.to_string()));
        // `%` itself round-trips; a lone `%` in an older trailer stays.
        let pct = hostile("apps/100%25/v.yaml");
        let t = trailer(&pct);
        let read = parse_trailer(t.split_once(": ").map(|(_, v)| v).unwrap_or_default());
        assert_eq!(
            read.and_then(|r| r.file).as_deref(),
            Some("apps/100%25/v.yaml")
        );
        assert_eq!(
            parse_trailer("a 1 -> 2 in 100% sure.yaml")
                .and_then(|r| r.file)
                .as_deref(),
            Some("100% sure.yaml")
        );
    }
}
