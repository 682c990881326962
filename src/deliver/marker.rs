//! What imagebump writes into pull requests and commits so that a later run, with no state
//! of its own, knows what it proposed: a hidden marker in the pull-request body with the
//! exact updates, and `Imagebump-Update:` trailers in commit messages. A pull request
//! closed without merging, or a revert of a merged commit, rejects exactly those versions.

use serde::{Deserialize, Serialize};

use crate::plan::Update;

const MARKER_START: &str = "<!-- imagebump:updates ";
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

/// The hidden marker for a pull-request body.
pub fn render(updates: &[Marked]) -> String {
    // `--` cannot appear in the JSON of image names and tags, so the comment stays closed.
    let json = serde_json::to_string(updates).unwrap_or_else(|_| "[]".into());
    format!("{MARKER_START}{json}{MARKER_END}")
}

/// The updates recorded in a pull-request body, if it has imagebump's marker.
pub fn parse(body: &str) -> Option<Vec<Marked>> {
    let (_, after) = body.split_once(MARKER_START)?;
    let (json, _) = after.split_once(MARKER_END)?;
    serde_json::from_str(json).ok()
}

/// `Imagebump-Update: <image> <from> -> <to> in <file>`: the file says where, so that a
/// revert rejects the version there and not elsewhere.
pub fn trailer(u: &Marked) -> String {
    format!(
        "{TRAILER}: {} {} -> {} in {}",
        u.image, u.from, u.to, u.file
    )
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
        image: image.to_string(),
        from: from.trim().to_string(),
        to: to.trim().to_string(),
        file: file.filter(|f| !f.is_empty()),
    })
}

/// The tag of a recorded value (`1.3.0@sha256:…` → `1.3.0`).
pub fn tag_of(value: &str) -> &str {
    value.split('@').next().unwrap_or(value)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
