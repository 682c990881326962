//! Lossless editing over the edge-case fixtures: snapshots of the rendered diffs, and a
//! property test that random edits change exactly the targeted scalars (also inside the
//! `helm.values` block scalars of fixtures/helm).

// A test crate may panic, count, slice and read the environment: the no-panic lints of
// Cargo.toml are for the library.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::string_slice,
    clippy::disallowed_methods
)]

use std::path::Path;

use imagebump::chunked::Chunked;
use imagebump::discover::{self, Discovery};
use imagebump::plan::{self, Plan};
use imagebump::resolve::Outcome;
use imagebump_model::config::Config;
use imagebump_yaml::{PathSeg, Scalar};
use proptest::prelude::*;
use serde::Deserialize;

fn discover_fixture(name: &str) -> Discovery {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    discover::discover(
        &imagebump::source::tree::Tree::disk(&root),
        &Config::default(),
    )
}

/// `1.2.0` → `1.2.1`, `v1.2` → `v1.3`, `1.25.3-alpine` → `1.25.4-alpine`.
fn bump(tag: &str) -> String {
    let (head, tail) = tag.split_once('-').map_or((tag, ""), |(h, t)| (h, t));
    let (rest, last) = head.rsplit_once('.').unwrap_or(("", head));
    let digits: String = last.chars().filter(char::is_ascii_digit).collect();
    let prefix: String = last.chars().take_while(|c| !c.is_ascii_digit()).collect();
    let next = digits.parse::<u64>().unwrap_or(0) + 1;
    let head = if rest.is_empty() {
        format!("{prefix}{next}")
    } else {
        format!("{rest}.{prefix}{next}")
    };
    if tail.is_empty() {
        head
    } else {
        format!("{head}-{tail}")
    }
}

fn bump_all(found: &Discovery) -> Chunked<Outcome> {
    found
        .refs
        .iter()
        .map(|r| match (&r.unmanaged, &r.tag) {
            (None, Some(tag)) => Outcome::Update {
                tag: bump(tag).into(),
                digest: r
                    .digest
                    .as_ref()
                    .map(|_| format!("sha256:{}", "f".repeat(64)).into()),
                verified: None,
            },
            _ => Outcome::UpToDate,
        })
        .collect()
}

#[test]
fn edge_fixture_diffs() {
    let found = discover_fixture("edge");
    let plan = plan::plan(
        &found,
        &bump_all(&found),
        imagebump_model::config::GroupBy::default(),
    );
    let diff = imagebump::deliver::diff::render(&plan.files, false);
    insta::assert_snapshot!("edge_diff", diff);
    let problems: Vec<String> = found
        .problems
        .iter()
        .chain(&plan.problems)
        .map(|p| p.to_string())
        .collect();
    insta::assert_debug_snapshot!("edge_problems", problems);
}

#[test]
fn crlf_line_endings_survive() {
    let found = discover_fixture("edge");
    let plan = plan::plan(
        &found,
        &bump_all(&found),
        imagebump_model::config::GroupBy::default(),
    );
    let crlf = plan
        .files
        .iter()
        .find(|f| f.file == "helm/values-crlf.yaml")
        .unwrap();
    assert_eq!(
        crlf.after,
        "image:\r\n  repository: ghcr.io/acme/crlf\r\n  tag: 1.0.1 # windows line endings\r\n"
    );
}

#[test]
fn an_edit_that_would_change_an_aliased_value_is_refused() {
    let found = discover_fixture("edge");
    let plan = plan::plan(
        &found,
        &bump_all(&found),
        imagebump_model::config::GroupBy::default(),
    );
    assert!(plan
        .files
        .iter()
        .all(|f| f.file != "helm/values-anchor.yaml"));
    assert!(plan
        .problems
        .iter()
        .any(|p| p.location.starts_with("helm/values-anchor.yaml:5:")
            && p.message.contains("anchor")));
}

fn parse_all(text: &str) -> Vec<yaml_serde::Value> {
    yaml_serde::Deserializer::from_str(text)
        .map(|d| yaml_serde::Value::deserialize(d).unwrap())
        .collect()
}

fn at<'a>(v: &'a yaml_serde::Value, path: &[PathSeg]) -> Option<&'a yaml_serde::Value> {
    path.iter().try_fold(v, |v, seg| match seg {
        PathSeg::Key(k) => v.get(k.as_str()),
        PathSeg::Index(i) => v.get(*i),
    })
}

fn as_text(v: &yaml_serde::Value) -> String {
    match v {
        yaml_serde::Value::String(s) => s.clone(),
        yaml_serde::Value::Number(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

/// Check a planned file independently of the edit code: outside the edited spans the bytes
/// are the old ones, and each edited path reads back as the intended value.
fn check(plan: &Plan, found: &Discovery, outcomes: &Chunked<Outcome>) {
    // Values created in a file (an overlay's new `images:` entry) are structural edits,
    // checked by rendering with kustomize (tests/kustomize.rs).
    let created = |file: &str| {
        found
            .refs
            .iter()
            .any(|r| r.creations().iter().any(|c| c.file == file))
    };
    for f in plan.files.iter().filter(|f| !created(&f.file)) {
        let mut spans: Vec<(std::ops::Range<usize>, String)> = Vec::new();
        let mut intended: Vec<(&discover::Slot, String)> = Vec::new();
        for (r, o) in found.refs.iter().zip(outcomes) {
            let Outcome::Update { tag, digest, .. } = o else {
                continue;
            };
            if *r.file != *f.file {
                continue;
            }
            for slot in &r.slots {
                let value = match &slot.format {
                    discover::SlotFormat::Tag => tag.to_string(),
                    discover::SlotFormat::TagAtDigest => {
                        format!("{tag}@{}", digest.as_ref().unwrap())
                    }
                    // An empty `digest:` key stays as it is when no digest is written.
                    discover::SlotFormat::Digest => match digest {
                        Some(d) => d.to_string(),
                        None => continue,
                    },
                    discover::SlotFormat::Reference { name } => match digest {
                        Some(d) => format!("{name}:{tag}@{d}"),
                        None => format!("{name}:{tag}"),
                    },
                };
                let old = Scalar {
                    value: String::new(),
                    span: slot.span.range(),
                    style: slot.style,
                };
                let raw = imagebump_yaml::render_scalar(&old, &f.before[slot.span.range()], &value)
                    .unwrap();
                spans.push((slot.span.range(), raw));
                intended.push((slot, value));
            }
        }
        spans.sort_by_key(|(s, _)| s.start);
        let (mut b, mut a) = (0, 0);
        for (span, raw) in &spans {
            let gap = span.start - b;
            assert_eq!(
                &f.after[a..a + gap],
                &f.before[b..span.start],
                "{}: bytes before {span:?}",
                f.file
            );
            a += gap;
            assert_eq!(&f.after[a..a + raw.len()], raw.as_str());
            a += raw.len();
            b = span.end;
        }
        assert_eq!(&f.after[a..], &f.before[b..], "{}: trailing bytes", f.file);
        let docs = parse_all(&f.after);
        for (slot, value) in intended {
            let found = at(&docs[slot.doc as usize], &slot.path).unwrap();
            let found = match &slot.inner {
                None => found.clone(),
                // Inside the YAML text of a block scalar: read that text as YAML.
                Some(inner) => {
                    let text = found.as_str().unwrap();
                    at(&parse_all(text)[inner.doc], &inner.path)
                        .unwrap()
                        .clone()
                }
            };
            assert_eq!(as_text(&found), value, "{} {:?}", f.file, slot.path);
        }
    }
}

#[test]
fn edits_inside_helm_values_strings_are_checked_like_any_other() {
    let found = discover_fixture("helm");
    let inside = found
        .refs
        .iter()
        .filter(|r| r.is_managed() && r.slots.iter().any(|s| s.inner.is_some()))
        .count();
    assert_eq!(
        inside, 4,
        "the fixture's helm.values strings hold 4 managed images"
    );
    let outcomes = bump_all(&found);
    let plan = plan::plan(
        &found,
        &outcomes,
        imagebump_model::config::GroupBy::default(),
    );
    assert_eq!(plan.problems, []);
    check(&plan, &found, &outcomes);
}

fn tag_strategy() -> impl Strategy<Value = String> {
    "v?[0-9]{1,3}(\\.[0-9]{1,3}){0,2}(-[a-z]{1,6})?"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_edits_change_only_their_scalars(
        picks in proptest::collection::vec((any::<bool>(), tag_strategy(), "[0-9a-f]{64}"), 32),
        fixture in prop_oneof![Just("edge"), Just("demo"), Just("helm"), Just("homelab"), Just("overlays")],
    ) {
        let found = discover_fixture(fixture);
        let outcomes: Chunked<Outcome> = found
            .refs
            .iter()
            .zip(picks.iter().cycle())
            .map(|(r, (take, tag, hex))| {
                if r.is_managed() && *take {
                    Outcome::Update { tag: tag.as_str().into(), digest: r.digest.as_ref().map(|_| format!("sha256:{hex}").into()), verified: None }
                } else {
                    Outcome::UpToDate
                }
            })
            .collect();
        let plan = plan::plan(&found, &outcomes, imagebump_model::config::GroupBy::default());
        // Only the anchored fixture may refuse an edit.
        for p in &plan.problems {
            prop_assert!(p.location.starts_with("helm/values-anchor.yaml"), "{}", p);
        }
        check(&plan, &found, &outcomes);
    }
}
