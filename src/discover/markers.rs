//! Inline markers: a comment on the value's line that overrides the policy of that one
//! value, e.g. `newTag: 1.4.2 # imagebump: pin`, `tag: v2 # imagebump: ignore`,
//! `tag: v2.1.0 # imagebump: {"strategy": "semver", "constraint": "~2.1"}` (JSON or flow
//! YAML, with the keys of `imagebump.yaml`'s `defaults`). In a manifest, a marker also makes
//! the value on its line an image reference, whatever its key (`# imagebump: image`).

use imagebump_model::policy::PolicySpec;

/// A marker found on a line: where it starts and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// Byte offset of `imagebump:` in the file.
    pub offset: usize,
    pub spec: Result<PolicySpec, MarkerError>,
}

/// Why a marker is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MarkerError {
    #[error("bad imagebump marker: credentials can only be set in the operator's configuration (registries[].credentials, or an images rule there), never on a line of the repository (docs/security.md)")]
    Credentials,
    #[error("bad imagebump marker: verify can only be set in the operator's configuration (docs/security.md)")]
    Verify,
    /// The settings do not read as a policy: the YAML reader's message, without its
    /// position (noise next to file:line inside a one-line payload).
    #[error("bad imagebump marker: {0}")]
    Settings(String),
    /// The payload as written.
    #[error("unknown imagebump marker {0:?}: write `image`, `pin`, `ignore` or settings such as {{\"constraint\": \"~1.4\"}}")]
    Unknown(String),
}

/// The marker in the comment that follows byte `after` on the same line, if any.
pub fn find(text: &str, after: usize) -> Option<Marker> {
    let rest = text.get(after..)?;
    let line = rest.split(['\n', '\r']).next().unwrap_or(rest);
    // A comment starts with `#` after whitespace (`1.2#x` is a value, not a comment).
    let hash = line
        .char_indices()
        .find(|&(i, c)| {
            c == '#' && (i == 0 || line.get(..i).is_some_and(|b| b.ends_with([' ', '\t'])))
        })
        .map(|(i, _)| i)?;
    let comment = line.get(hash..)?.strip_prefix('#')?;
    let marker = comment.trim_start();
    let body = marker.strip_prefix("imagebump:")?;
    let payload = body.trim();
    // `marker` starts after the `#` and the blanks that follow it.
    let blanks = comment.len().checked_sub(marker.len())?;
    let offset = after
        .checked_add(hash)?
        .checked_add(1)?
        .checked_add(blanks)?;
    Some(Marker {
        offset,
        spec: parse(payload),
    })
}

fn parse(payload: &str) -> Result<PolicySpec, MarkerError> {
    match payload {
        "pin" => Ok(PolicySpec {
            pin: Some(true),
            ..Default::default()
        }),
        "ignore" => Ok(PolicySpec {
            ignore: Some(true),
            ..Default::default()
        }),
        // The value is an image reference; the configured policy applies.
        "image" => Ok(PolicySpec::default()),
        p if p.starts_with('{') && names_credentials(p) => Err(MarkerError::Credentials),
        p if p.starts_with('{') => imagebump_yaml::from_str::<PolicySpec>(p)
            .map_err(|e| MarkerError::Settings(e.message))
            .and_then(|spec| match spec.verify {
                // Trust roots are the operator's: a line of the repository cannot choose them.
                Some(_) => Err(MarkerError::Verify),
                None => Ok(spec),
            }),
        other => Err(MarkerError::Unknown(other.to_string())),
    }
}

/// Does the payload set `credentials` (which secret is sent where, which program runs)?
/// `PolicySpec` has no such key, so it could never be taken; this only says why in the
/// error, instead of "unknown field".
fn names_credentials(payload: &str) -> bool {
    imagebump_yaml::from_str::<serde_json::Map<String, serde_json::Value>>(payload)
        .is_ok_and(|map| map.contains_key("credentials"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use imagebump_model::policy::Strategy;

    fn at(line: &str) -> Option<Result<PolicySpec, String>> {
        // Markers are looked for after the value; here the value is `1.2`.
        let after = line.find("1.2").unwrap() + 3;
        find(line, after).map(|m| {
            assert!(line[m.offset..].starts_with("imagebump:"));
            m.spec.map_err(|e| e.to_string())
        })
    }

    #[test]
    fn finds_markers_after_the_value() {
        assert_eq!(
            at("tag: 1.2 # imagebump: pin").unwrap().unwrap().pin,
            Some(true)
        );
        assert_eq!(
            at("tag: 1.2  #imagebump:ignore\nnext: x # imagebump: pin")
                .unwrap()
                .unwrap()
                .ignore,
            Some(true)
        );
        let s = at(
            r#"tag: 1.2 # imagebump: {"strategy": "newest-build", "allowTags": "regexp:^main-"}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(s.strategy, Some(Strategy::NewestBuild));
        assert_eq!(s.allow_tags.as_deref(), Some("regexp:^main-"));
        let s = at("tag: 1.2 # imagebump: {constraint: ~1.4, ignoreTags: [\"*-rc*\"]}")
            .unwrap()
            .unwrap();
        assert_eq!(s.constraint.as_deref(), Some("~1.4"));
        assert_eq!(s.ignore_tags, Some(vec!["*-rc*".to_string()]));
    }

    #[test]
    fn a_marker_may_set_when_its_value_moves() {
        let s = at("tag: 1.2 # imagebump: {schedule: [\"* 6-9 * * 1-5\"], timezone: Europe/Berlin, freeze: [{from: 2026-12-14, until: 2026-12-18}]}")
            .unwrap()
            .unwrap();
        assert_eq!(s.schedule, Some(vec!["* 6-9 * * 1-5".to_string()]));
        assert_eq!(s.timezone.as_deref(), Some("Europe/Berlin"));
        assert_eq!(s.freeze.map(|f| f.len()), Some(1));
        let bad = at("tag: 1.2 # imagebump: {freeze: [{from: 2026-12-14, to: 2026-12-18}]}");
        assert!(bad.unwrap().unwrap_err().contains("unknown field `to`"));
    }

    #[test]
    fn other_comments_are_not_markers() {
        assert_eq!(at("tag: 1.2 # pinned for now"), None);
        assert_eq!(at("tag: 1.2"), None);
        assert_eq!(at("tag: 1.2\n# imagebump: pin"), None);
    }

    #[test]
    fn bad_markers_say_why() {
        let e = at("tag: 1.2 # imagebump: pinn").unwrap().unwrap_err();
        assert!(e.contains("unknown imagebump marker \"pinn\""), "{e}");
        let e = at("tag: 1.2 # imagebump: {stratgy: semver}")
            .unwrap()
            .unwrap_err();
        assert!(e.contains("unknown field `stratgy`"), "{e}");
    }

    /// No spelling of a marker names credentials: every source kind, in JSON or flow
    /// YAML, alone or next to settings that are allowed, is refused with the same reason.
    #[test]
    fn markers_never_carry_credentials() {
        let refused = "bad imagebump marker: credentials can only be set in the operator's configuration (registries[].credentials, or an images rule there), never on a line of the repository (docs/security.md)";
        for payload in [
            "{credentials: github}",
            "{credentials: \"env:GITHUB_TOKEN\"}",
            "{credentials: \"file:/proc/self/environ\"}",
            "{credentials: \"gcp:/var/run/key.json\", pin: true}",
            "{\"constraint\": \"~1.4\", \"credentials\": \"ext:/bin/sh\"}",
            "{credentials: acr}",
            "{credentials: \"ecr:us-east-1\"}",
        ] {
            let line = format!("tag: 1.2 # imagebump: {payload}");
            assert_eq!(at(&line), Some(Err(refused.to_string())), "{payload}");
        }
    }
}
