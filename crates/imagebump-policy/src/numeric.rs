//! The `numeric` strategy: the greatest tag that is an integer (build numbers). Integers
//! of any length compare by value; leading zeros are spelling.

use crate::candidate::{Key, Verdict};
use crate::semver::TagVersions;
use crate::strategy::Strategy;

/// Integer tags by value; any other tag is not a candidate.
pub struct Numeric;

impl Strategy for Numeric {
    fn cannot_judge(&self, current: &str) -> Option<String> {
        key(current)
            .is_none()
            .then(|| format!("current tag {current:?} is not an integer (numeric strategy)"))
    }

    fn current_key<'t>(&self, current: &'t str) -> Option<Key<'t>> {
        key(current)
    }

    fn key<'t>(
        &self,
        tag: &'t str,
        _read: Option<(&TagVersions, usize)>,
        _allow_pre: bool,
    ) -> Result<Key<'t>, Verdict> {
        key(tag).ok_or(Verdict::NotAnInteger)
    }

    fn rank<'t>(&self, tag: &'t str) -> Option<Key<'t>> {
        key(tag)
    }
}

/// `None` when `tag` is not an integer.
pub fn key(tag: &str) -> Option<Key<'_>> {
    number_key(tag, tag)
}

/// The key of the integer `digits`, spelled as `tag` (shared with `regex`'s `num` group).
pub fn number_key<'t>(digits: &'t str, tag: &'t str) -> Option<Key<'t>> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value = digits.trim_start_matches('0');
    Some(Key::Number(value.len(), value, tag))
}

#[cfg(test)]
mod tests {
    use crate::candidate::Choice;
    use crate::evaluate::choose_offline;
    use crate::{Policy, PolicySource, PolicySpec, Strategy};

    #[test]
    fn integers_by_value() {
        let p = Policy::compile(
            PolicySpec {
                strategy: Some(Strategy::Numeric),
                ..Default::default()
            },
            PolicySource::default(),
        )
        .unwrap();
        let tags: Vec<String> = [
            "9",
            "10",
            "0099",
            "latest",
            "1.2",
            "100000000000000000000000",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            choose_offline(&p, "10", &tags),
            Choice::Update {
                tag: "100000000000000000000000".into(),
                digest: None
            }
        );
        assert_eq!(
            choose_offline(&p, "9", &tags[..3]),
            Choice::Update {
                tag: "0099".into(),
                digest: None
            }
        );
        assert!(matches!(
            choose_offline(&p, "latest", &tags),
            Choice::Skip(_)
        ));
    }
}
