//! What kind of move an update is: major, minor or patch when both tags read as versions,
//! `digest` when the tag stays and only the digest moves, `other` otherwise.

use crate::constraint::parse_version;

/// The kind of an update, for people (pull-request bodies, the report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum UpdateKind {
    Major,
    Minor,
    Patch,
    /// The same tag at another digest.
    Digest,
    /// Tags that do not both read as versions, or versions equal in their numbers (a
    /// pre-release or suffix change).
    Other,
}

impl UpdateKind {
    /// `major`, `minor`, `patch`, `digest`, `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            UpdateKind::Major => "major",
            UpdateKind::Minor => "minor",
            UpdateKind::Patch => "patch",
            UpdateKind::Digest => "digest",
            UpdateKind::Other => "other",
        }
    }
}

/// The kind of the move from tag `from` to tag `to` (tags only, without `@digest`). The
/// numbers are compared as written: `0.1.0 → 0.2.0` is minor, as `1.1.0 → 1.2.0` is.
pub fn update_kind(from: &str, to: &str) -> UpdateKind {
    if from == to {
        return UpdateKind::Digest;
    }
    let (Some(a), Some(b)) = (parse_version(from), parse_version(to)) else {
        return UpdateKind::Other;
    };
    if a.major != b.major {
        UpdateKind::Major
    } else if a.minor != b.minor {
        UpdateKind::Minor
    } else if a.patch != b.patch {
        UpdateKind::Patch
    } else {
        UpdateKind::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_first_number_that_differs() {
        let cases = [
            ("16.13-alpine", "17.2-alpine", "major"),
            ("1.2.3", "1.3.0", "minor"),
            ("v1.2.3", "v1.2.4", "patch"),
            ("1.2", "1.2.1", "patch"),
            ("0.1.0", "0.2.0", "minor"),
            ("2.0.0", "1.9.0", "major"),
            ("1.2.3-rc.1", "1.2.3", "other"),
            ("latest", "latest", "digest"),
            ("stable", "mainline", "other"),
            ("1.2.3", "main-abc123", "other"),
        ];
        for (from, to, kind) in cases {
            assert_eq!(update_kind(from, to).as_str(), kind, "{from} → {to}");
        }
    }
}
