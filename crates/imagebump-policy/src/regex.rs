//! The `regex` strategy (Flux's `filterTags` + `extract`): tags must match `pattern`, and are
//! ordered by its named group — `version` as semver, `num` as a number, `ts` as text.

use regex::Regex;

use crate::candidate::{Key, Rank, Verdict};
use crate::numeric::number_key;
use crate::patterns::PatternError;
use crate::semver::TagVersions;
use crate::strategy::Strategy;

/// How the named group is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Version,
    Num,
    Ts,
}

#[derive(Debug, Clone)]
pub struct TagPattern {
    re: Regex,
    group: Group,
}

/// Why a `pattern` cannot order tags.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TagPatternError {
    #[error(transparent)]
    Pattern(#[from] PatternError),
    #[error("{text:?} has no named group `version`, `num` or `ts` to order tags by, e.g. (?P<num>[0-9]+)")]
    NoGroup { text: String },
    #[error("{text:?} has more than one of the groups `version`, `num`, `ts`; keep one")]
    ManyGroups { text: String },
}

impl TagPatternError {
    /// What to write instead.
    pub fn hint(&self) -> &'static str {
        "e.g. pattern: '^main-[0-9a-f]+-(?P<ts>[0-9]+)$'"
    }
}

impl TagPattern {
    pub fn parse(text: &str) -> Result<TagPattern, TagPatternError> {
        let re = crate::patterns::compile(text)?;
        let names: Vec<&str> = re.capture_names().flatten().collect();
        let groups: Vec<Group> = names
            .iter()
            .filter_map(|n| match *n {
                "version" => Some(Group::Version),
                "num" => Some(Group::Num),
                "ts" => Some(Group::Ts),
                _ => None,
            })
            .collect();
        match groups.as_slice() {
            [g] => Ok(TagPattern { re, group: *g }),
            [] => Err(TagPatternError::NoGroup {
                text: text.to_string(),
            }),
            _ => Err(TagPatternError::ManyGroups {
                text: text.to_string(),
            }),
        }
    }

    pub fn group(&self) -> Group {
        self.group
    }

    /// The tag's key, or why it is not a candidate.
    pub fn key<'t>(&self, tag: &'t str) -> Result<Key<'t>, Verdict> {
        let caps = self.re.captures(tag).ok_or(Verdict::NoMatch)?;
        let name = match self.group {
            Group::Version => "version",
            Group::Num => "num",
            Group::Ts => "ts",
        };
        let value = caps.name(name).ok_or(Verdict::NoMatch)?.as_str();
        match self.group {
            Group::Version => crate::constraint::parse_version(value)
                .map(|v| Key::Version(Rank::of(v), true, tag))
                .ok_or(Verdict::NotAVersion),
            Group::Num => number_key(value, tag).ok_or(Verdict::NotAnInteger),
            Group::Ts => Ok(Key::Text(value, tag)),
        }
    }
}

/// Tags ordered by a pattern's named group; the policy's `pattern` (compiling a policy
/// whose strategy is `regex` makes sure it has one).
pub struct Pattern(pub Option<TagPattern>);

impl Strategy for Pattern {
    fn cannot_judge(&self, current: &str) -> Option<String> {
        let judged = self.0.as_ref().is_some_and(|p| p.key(current).is_ok());
        (!judged)
            .then(|| format!("current tag {current:?} does not match the pattern (regex strategy)"))
    }

    fn current_key<'t>(&self, current: &'t str) -> Option<Key<'t>> {
        self.0.as_ref()?.key(current).ok()
    }

    fn key<'t>(
        &self,
        tag: &'t str,
        _read: Option<(&TagVersions, usize)>,
        _allow_pre: bool,
    ) -> Result<Key<'t>, Verdict> {
        match &self.0 {
            Some(pattern) => pattern.key(tag),
            None => Err(Verdict::NoMatch),
        }
    }

    fn rank<'t>(&self, tag: &'t str) -> Option<Key<'t>> {
        self.0.as_ref()?.key(tag).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidate::Choice;
    use crate::evaluate::choose_offline;
    use crate::{Policy, PolicySource, PolicySpec, Strategy};

    fn policy(pattern: &str, constraint: Option<&str>) -> Policy {
        Policy::compile(
            PolicySpec {
                strategy: Some(Strategy::Regex),
                pattern: Some(pattern.into()),
                constraint: constraint.map(str::to_string),
                ..Default::default()
            },
            PolicySource::default(),
        )
        .unwrap()
    }

    fn tags(t: &[&str]) -> Vec<String> {
        t.iter().map(|s| s.to_string()).collect()
    }

    fn update(t: &str) -> Choice {
        Choice::Update {
            tag: t.into(),
            digest: None,
        }
    }

    #[test]
    fn groups_order_tags() {
        let flux = policy(r"^main-[0-9a-f]+-(?P<ts>[0-9]+)$", None);
        let t = tags(&[
            "main-abc1234-1700000000",
            "main-def5678-1700000500",
            "pr-1-1800000000",
        ]);
        assert_eq!(
            choose_offline(&flux, "main-abc1234-1700000000", &t),
            update("main-def5678-1700000500")
        );

        let num = policy(r"^build-(?P<num>[0-9]+)$", None);
        let t = tags(&["build-9", "build-10", "build-x"]);
        assert_eq!(choose_offline(&num, "build-9", &t), update("build-10"));

        let ver = policy(r"^app-(?P<version>.+)$", Some("<2"));
        let t = tags(&["app-1.2.0", "app-1.10.0", "app-2.0.0", "other-9.0.0"]);
        assert_eq!(choose_offline(&ver, "app-1.2.0", &t), update("app-1.10.0"));
    }

    #[test]
    fn patterns_need_one_known_group() {
        assert!(TagPattern::parse("^v(?P<x>.*)$")
            .unwrap_err()
            .to_string()
            .contains("no named group"));
        assert_eq!(
            TagPattern::parse("(?P<num>1)(?P<ts>2)").unwrap_err(),
            TagPatternError::ManyGroups {
                text: "(?P<num>1)(?P<ts>2)".into()
            }
        );
        assert!(TagPattern::parse("(")
            .unwrap_err()
            .to_string()
            .starts_with("bad regular expression \"(\""));
        assert_eq!(TagPattern::parse("(?P<ts>.*)").unwrap().group(), Group::Ts);
    }

    #[test]
    fn current_must_match() {
        let num = policy(r"^build-(?P<num>[0-9]+)$", None);
        assert!(matches!(
            choose_offline(&num, "latest", &tags(&["build-1"])),
            Choice::Skip(_)
        ));
    }
}
