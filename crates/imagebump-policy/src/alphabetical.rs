//! The `alphabetical` strategy: the greatest tag by byte order, for calendar versions such
//! as `2026-05-01` or `20260501.1`. Pair it with `allowTags`, or `latest` sorts above them.

use crate::candidate::{Key, Verdict};
use crate::semver::TagVersions;
use crate::strategy::Strategy;

pub fn key(tag: &str) -> Key<'_> {
    Key::Text(tag, tag)
}

/// Tags by byte order: every tag is a candidate.
pub struct Alphabetical;

impl Strategy for Alphabetical {
    fn cannot_judge(&self, _current: &str) -> Option<String> {
        None
    }

    fn current_key<'t>(&self, current: &'t str) -> Option<Key<'t>> {
        Some(key(current))
    }

    fn key<'t>(
        &self,
        tag: &'t str,
        _read: Option<(&TagVersions, usize)>,
        _allow_pre: bool,
    ) -> Result<Key<'t>, Verdict> {
        Ok(key(tag))
    }

    fn rank<'t>(&self, tag: &'t str) -> Option<Key<'t>> {
        Some(key(tag))
    }
}

#[cfg(test)]
mod tests {
    use crate::candidate::Choice;
    use crate::evaluate::choose_offline;
    use crate::{Policy, PolicySource, PolicySpec, Strategy};

    fn policy(allow: Option<&str>) -> Policy {
        Policy::compile(
            PolicySpec {
                strategy: Some(Strategy::Alphabetical),
                allow_tags: allow.map(str::to_string),
                ..Default::default()
            },
            PolicySource::default(),
        )
        .unwrap()
    }

    #[test]
    fn greatest_by_bytes_above_current() {
        let tags: Vec<String> = ["2026-04-30", "2026-05-01", "2026-03-01", "latest"]
            .map(String::from)
            .to_vec();
        let p = policy(Some("regexp:^[0-9]{4}-"));
        assert_eq!(
            choose_offline(&p, "2026-04-30", &tags),
            Choice::Update {
                tag: "2026-05-01".into(),
                digest: None
            }
        );
        assert_eq!(choose_offline(&p, "2026-05-01", &tags), Choice::Current);
        // Without a filter, `latest` sorts above the dates: the reason to use allowTags.
        assert_eq!(
            choose_offline(&policy(None), "2026-04-30", &tags),
            Choice::Update {
                tag: "latest".into(),
                digest: None
            }
        );
    }
}
