//! `images[].promoteFrom`: a rule whose references take the versions another environment
//! has run (its git history) instead of the registry's tags (docs/promotion.md). The
//! schema struct, and the pure path capture shared by the configuration check and the run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a promoted reference's versions come from, and how long they must have run there.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PromoteFrom {
    /// The source environment's directory, relative to the repository root, such as
    /// `apps/{app}/overlays/dev`. A whole segment `{name}` takes the directory name at the
    /// same position in the path of the file that holds the reference; the rule's `path`
    /// must have a `*` segment there (and no `**` before it).
    pub path: String,
    /// How long a version must have been in the source continuously (since the base-branch
    /// commit that brought it, by committer date) before it is promoted: `2h`, `1d`, `0`.
    pub soak: String,
}

/// The `{name}` segments of a `promoteFrom.path`: (segment index, name).
fn placeholders(path: &str) -> Vec<(usize, &str)> {
    path.split('/')
        .enumerate()
        .filter_map(|(i, seg)| {
            let name = seg.strip_prefix('{')?.strip_suffix('}')?;
            Some((i, name))
        })
        .collect()
}

/// What is wrong with `promote` on a rule whose `path` glob is `rule_path`, if anything:
/// (the key under `promoteFrom`, the message).
pub fn check(rule_path: Option<&str>, promote: &PromoteFrom) -> Option<(&'static str, String)> {
    if let Err(e) = crate::duration::parse_age(&promote.soak) {
        return Some(("soak", e.to_string()));
    }
    let path = promote.path.as_str();
    let bad = |why: &str| Some(("path", format!("{path:?}: {why}")));
    if path.is_empty() || path.starts_with('/') || path.ends_with('/') {
        return bad("a directory relative to the repository root, without a leading or trailing /");
    }
    for seg in path.split('/') {
        if seg.is_empty() || seg == "." || seg == ".." {
            return bad("empty, `.` and `..` segments are not allowed");
        }
        let is_placeholder = seg.starts_with('{') && seg.ends_with('}');
        if seg.contains(['*', '?', '[', ']', '\\']) || (!is_placeholder && seg.contains(['{', '}']))
        {
            return bad("only whole segments `{name}` may vary; no glob characters");
        }
    }
    let holes = placeholders(path);
    if holes.is_empty() {
        return None;
    }
    let Some(rule) = rule_path else {
        return bad(
            "`{name}` needs the rule's `path` to capture it (e.g. apps/*/overlays/prod/**)",
        );
    };
    let rule_segs: Vec<&str> = rule.split('/').collect();
    for (i, name) in holes {
        let valid_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid_name {
            return bad("a placeholder is `{name}` with letters, digits, `_` or `-`");
        }
        let before_deep = rule_segs.iter().take(i).all(|s| !s.contains("**"));
        if rule_segs.get(i) != Some(&"*") || !before_deep {
            return Some((
                "path",
                format!(
                    "{path:?}: `{{{name}}}` is segment {} but the rule's path {rule:?} has no `*` \
                     segment there (with no `**` before it)",
                    i.saturating_add(1)
                ),
            ));
        }
    }
    None
}

/// The source directory for a reference in `file` (relative to the root): `promote.path`
/// with each `{name}` replaced by `file`'s segment at its position. `None` when `file` is
/// too short to supply one.
pub fn source_dir(promote: &PromoteFrom, file: &str) -> Option<String> {
    let file_segs: Vec<&str> = file.split('/').collect();
    let mut out = Vec::new();
    for (i, seg) in promote.path.split('/').enumerate() {
        let is_placeholder = seg.starts_with('{') && seg.ends_with('}');
        if is_placeholder {
            // The last segment of `file` is its name, never a directory.
            if i.saturating_add(1) >= file_segs.len() {
                return None;
            }
            out.push(*file_segs.get(i)?);
        } else {
            out.push(seg);
        }
    }
    Some(out.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(path: &str, soak: &str) -> PromoteFrom {
        PromoteFrom {
            path: path.into(),
            soak: soak.into(),
        }
    }

    #[test]
    fn placeholders_take_the_segment_at_their_position() {
        let p = from("apps/{app}/overlays/dev", "2h");
        assert_eq!(check(Some("apps/*/overlays/prod/**"), &p), None);
        assert_eq!(
            source_dir(&p, "apps/web/overlays/prod/kustomization.yaml").as_deref(),
            Some("apps/web/overlays/dev")
        );
        let two = from("{team}/{app}/dev", "0");
        assert_eq!(check(Some("*/*/prod/**"), &two), None);
        assert_eq!(
            source_dir(&two, "blue/api/prod/values.yaml").as_deref(),
            Some("blue/api/dev")
        );
        assert_eq!(source_dir(&p, "apps"), None);
        // No placeholder: a fixed directory, no rule path needed.
        assert_eq!(check(None, &from("envs/dev", "1d")), None);
        assert_eq!(
            source_dir(&from("envs/dev", "1d"), "x.yaml").as_deref(),
            Some("envs/dev")
        );
    }

    #[test]
    fn bad_values_name_their_key() {
        let at =
            |rule: Option<&str>, p: PromoteFrom| check(rule, &p).map(|(k, m)| format!("{k}: {m}"));
        assert_eq!(
            at(Some("apps/*/prod/**"), from("apps/{app}/dev", "2 hours")).unwrap(),
            "soak: \"2 hours\" is not a duration (use a number and a unit: s, m, h, d, w)"
        );
        assert!(at(Some("apps/*/prod/**"), from("apps/{app}/../dev", "1h"))
            .unwrap()
            .starts_with("path: \"apps/{app}/../dev\": empty, `.` and `..`"));
        assert!(at(Some("apps/*/prod/**"), from("/apps/dev", "1h")).is_some());
        assert!(at(Some("apps/*/prod/**"), from("apps/*/dev", "1h")).is_some());
        assert!(at(None, from("apps/{app}/dev", "1h"))
            .unwrap()
            .contains("needs the rule's `path`"));
        assert_eq!(
            at(Some("apps/**/prod/*"), from("apps/{app}/dev", "1h")).unwrap(),
            "path: \"apps/{app}/dev\": `{app}` is segment 2 but the rule's path \"apps/**/prod/*\" \
             has no `*` segment there (with no `**` before it)"
        );
        assert!(at(Some("apps/*/prod/**"), from("apps/{a pp}/dev", "1h")).is_some());
    }
}
