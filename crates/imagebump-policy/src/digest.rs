//! The `digest` strategy: follow one mutable tag (`latest`, `stable`) and pin the digest it
//! points to when that changes. Costs one manifest HEAD per distinct tag, no tag list.

use crate::candidate::{Choice, Meta, MetaUnavailable, Verdict};
use crate::strategy::Strategy;

/// Follows the current tag: no other tag is a candidate (the evaluation says so before
/// asking for a key), so its keys only name the tags.
pub struct Digest;

impl Strategy for Digest {}

/// Why the strategy cannot follow `current`: the registry does not list it.
pub fn unlisted(current: &str) -> Choice {
    Choice::Skip(format!(
        "tag {current:?} is not in the repository (digest strategy)"
    ))
}

/// What following `current` decides from its metadata (`None`: not fetched) and the
/// metadata filters' verdict on it (`refused`): the current tag's verdict and the choice.
pub fn follow(
    current: &str,
    current_digest: Option<&str>,
    meta: Option<Result<Meta, MetaUnavailable>>,
    refused: impl FnOnce(&Meta) -> Option<Verdict>,
) -> (Option<Verdict>, Choice) {
    match meta {
        None => (
            None,
            Choice::Skip("the tag's digest was not fetched".into()),
        ),
        Some(Err(e)) => (
            Some(Verdict::NoMetadata(e.reason.clone())),
            Choice::Skip(e.reason),
        ),
        Some(Ok(m)) => {
            if let Some(v) = refused(&m) {
                return (Some(v), Choice::Current);
            }
            if current_digest == Some(m.digest.as_str()) {
                return (Some(Verdict::SameImage), Choice::Current);
            }
            let choice = Choice::Update {
                tag: current.to_string(),
                digest: Some(m.digest),
            };
            (Some(Verdict::Chosen), choice)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(digest: &str) -> Option<Result<Meta, MetaUnavailable>> {
        Some(Ok(Meta {
            digest: digest.into(),
            builds: Vec::new(),
        }))
    }

    #[test]
    fn a_new_digest_is_chosen_and_the_same_one_is_current() {
        assert_eq!(
            follow("latest", Some("sha256:a"), meta("sha256:b"), |_| None),
            (
                Some(Verdict::Chosen),
                Choice::Update {
                    tag: "latest".into(),
                    digest: Some("sha256:b".into())
                }
            )
        );
        assert_eq!(
            follow("latest", Some("sha256:a"), meta("sha256:a"), |_| None),
            (Some(Verdict::SameImage), Choice::Current)
        );
    }

    #[test]
    fn refused_or_missing_metadata_moves_nothing() {
        assert_eq!(
            follow("latest", None, meta("sha256:b"), |_| Some(
                Verdict::NoBuildDate
            )),
            (Some(Verdict::NoBuildDate), Choice::Current)
        );
        assert_eq!(
            follow(
                "latest",
                None,
                Some(Err(MetaUnavailable::new("401"))),
                |_| None
            ),
            (
                Some(Verdict::NoMetadata("401".into())),
                Choice::Skip("401".into())
            )
        );
        assert_eq!(
            follow("latest", None, None, |_| None).1,
            Choice::Skip("the tag's digest was not fetched".into())
        );
        assert_eq!(
            unlisted("stable"),
            Choice::Skip("tag \"stable\" is not in the repository (digest strategy)".into())
        );
    }
}
