//! The checkboxes of a dashboard body: `- [x] text <!-- imagebump:box KEY -->`, one per
//! line. Only the key imagebump wrote at the end of the line counts, never the text.

use std::collections::BTreeMap;

/// What starts a box's key, at the end of its line.
const OPEN: &str = "<!-- imagebump:box ";
const CLOSE: &str = "-->";

/// A box's key, as imagebump writes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Key {
    /// "Stop all updates".
    StopAll,
    /// "Run now despite the schedule".
    RunNow,
    /// Lift the rejections of one source: `pr-12` or `revert-<sha>`.
    Lift(String),
    /// Approve the major version `major` of an image held by `approveMajors`.
    Approve { image: String, major: u64 },
}

impl Key {
    /// The text after `imagebump:box ` in the body.
    pub fn text(&self) -> String {
        match self {
            Key::StopAll => "stop-all".into(),
            Key::RunNow => "run-now".into(),
            Key::Lift(source) => format!("lift {source}"),
            Key::Approve { image, major } => format!("approve {image} {major}"),
        }
    }

    /// A key read back; `None` for anything imagebump does not write (the sources and
    /// images are checked: nothing else reaches a ref name).
    pub fn parse(text: &str) -> Option<Key> {
        let mut words = text.split(' ');
        let key = match (words.next()?, words.next(), words.next()) {
            ("stop-all", None, None) => Key::StopAll,
            ("run-now", None, None) => Key::RunNow,
            ("lift", Some(source), None) if is_source(source) => Key::Lift(source.into()),
            ("approve", Some(image), Some(major)) if is_image(image) => Key::Approve {
                image: image.into(),
                major: major.parse().ok()?,
            },
            _ => return None,
        };
        words.next().is_none().then_some(key)
    }
}

/// `pr-<digits>` or `revert-<hex>`.
pub(super) fn is_source(s: &str) -> bool {
    let digits =
        |t: &str, f: fn(&char) -> bool| !t.is_empty() && t.len() <= 40 && t.chars().all(|c| f(&c));
    match (s.strip_prefix("pr-"), s.strip_prefix("revert-")) {
        (Some(n), _) => digits(n, char::is_ascii_digit),
        (_, Some(sha)) => digits(sha, char::is_ascii_hexdigit),
        _ => false,
    }
}

/// An image name as imagebump writes one: the characters of a registry host, port and
/// repository path, and nothing that could end a comment or make a ref name git refuses
/// (`git check-ref-format`): every `/`-separated component is non-empty, does not start
/// with `.`, and ends neither with `.` nor with `.lock`.
pub(super) fn is_image(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && !s.contains("..")
        && !s.starts_with('-')
        && s.chars().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '/' | '-' | '_' | ':')
        })
        && s.split('/').all(|part| {
            !part.is_empty()
                && !part.starts_with('.')
                && !part.ends_with('.')
                && !part.ends_with(".lock")
        })
}

/// The boxes of `body` and whether each is ticked. A key twice: the last one counts.
pub fn ticks(body: &str) -> BTreeMap<Key, bool> {
    let mut out = BTreeMap::new();
    for line in body.lines() {
        let line = line.trim();
        let rest = line.strip_prefix("- ").or_else(|| line.strip_prefix("* "));
        let Some(rest) = rest else { continue };
        let ticked = match rest.get(..3) {
            Some("[x]" | "[X]") => true,
            Some("[ ]") => false,
            _ => continue,
        };
        let Some(end) = line.strip_suffix(CLOSE) else {
            continue;
        };
        let Some(at) = end.rfind(OPEN) else { continue };
        let Some(text) = end.get(at.saturating_add(OPEN.len())..) else {
            continue;
        };
        if let Some(key) = Key::parse(text.trim()) {
            out.insert(key, ticked);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_read_only_imagebump_keys() {
        let body = "\
- [x] **Stop all updates** <!-- imagebump:box stop-all -->
- [ ] Run now <!-- imagebump:box run-now -->
  - [X] retry <!-- imagebump:box lift pr-12 -->
- [x] approve <!-- imagebump:box approve ghcr.io/acme/web 3 -->
- [x] forged <!-- imagebump:box lift ../../heads/main -->
- [x] forged <!-- imagebump:box approve ghcr.io/a b -->
- [x] text only, no key
[x] not a list item <!-- imagebump:box run-now -->
- [x] two keys <!-- imagebump:box stop-all --> <!-- imagebump:box lift pr-9 -->";
        let got: Vec<(String, bool)> = ticks(body)
            .into_iter()
            .map(|(k, v)| (k.text(), v))
            .collect();
        assert_eq!(
            got,
            vec![
                ("stop-all".to_string(), true),
                ("run-now".to_string(), false),
                ("lift pr-12".to_string(), true),
                ("lift pr-9".to_string(), true),
                ("approve ghcr.io/acme/web 3".to_string(), true),
            ]
        );
    }

    #[test]
    fn keys_round_trip_and_refuse_what_imagebump_never_writes() {
        for key in [
            Key::StopAll,
            Key::RunNow,
            Key::Lift("revert-1a2b3c4d5e".into()),
            Key::Approve {
                image: "localhost:5000/x".into(),
                major: 17,
            },
        ] {
            assert_eq!(Key::parse(&key.text()), Some(key));
        }
        for bad in [
            "lift pr-",
            "lift pr-1x",
            "lift revert-xyz",
            "approve a 1 2",
            "approve A 1",
            "stop-all now",
            "",
        ] {
            assert_eq!(Key::parse(bad), None, "{bad}");
        }
    }

    /// Each `/`-separated component is one git accepts in a ref name.
    #[test]
    fn image_names_make_refs_git_accepts() {
        for good in [
            "ghcr.io/a/b",
            "localhost:5000/x_y/z-1",
            "a.b/c.d",
            "lock/x.locks",
        ] {
            assert!(is_image(good), "{good}");
        }
        for bad in [
            "a//b",
            "a/./b",
            "a/.b",
            "a/b./c",
            "a/b.lock/c",
            "a/b.lock",
            "/a",
            "a/",
            ".a",
            "a.",
            "a/../b",
            "-a",
            "A/b",
            "a b",
            "a@{b}",
            "a~1",
            "a^b",
            "a*b",
            "a?b",
            "a[b",
            "a\\b",
        ] {
            assert!(!is_image(bad), "{bad}");
        }
    }
}
