//! The plan stage, a pure function: references + outcomes → verified file edits, grouped
//! into change sets.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::discover::{Discovery, ImageRef, RefKind, Slot, SlotFormat};
use crate::policy::Strategy;
use crate::report::Problem;
use crate::resolve::Outcome;
use crate::yaml::{self, Edit, Scalar};

/// One value that changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Update {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub kind: RefKind,
    /// The normalised repository (`docker.io/library/nginx`).
    pub image: String,
    /// The image name as written in the file.
    pub name: String,
    pub from: String,
    pub to: String,
    pub group: String,
}

/// A file's text before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub file: String,
    pub before: String,
    pub after: String,
}

/// The unit of one future pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeSet {
    pub group: String,
    pub files: Vec<String>,
    /// Indexes into [`Plan::updates`].
    pub updates: Vec<usize>,
}

#[derive(Debug, Default)]
pub struct Plan {
    pub updates: Vec<Update>,
    pub files: Vec<FileChange>,
    pub change_sets: Vec<ChangeSet>,
    pub problems: Vec<Problem>,
    /// Files whose edits were refused (left unchanged; the reason is in `problems`).
    pub refused: std::collections::BTreeSet<String>,
}

fn spell(tag: &str, digest: Option<&str>) -> String {
    match digest {
        Some(d) => format!("{tag}@{d}"),
        None => tag.to_string(),
    }
}

/// The new decoded value of a slot; `None` leaves the slot as it is.
fn slot_value(
    slot: &Slot,
    tag: &str,
    digest: Option<&str>,
    digest_elsewhere: bool,
) -> Option<String> {
    Some(match &slot.format {
        // A tag-only slot carries the digest when no other slot of the reference does.
        SlotFormat::Tag if !digest_elsewhere => spell(tag, digest),
        SlotFormat::Tag => tag.to_string(),
        SlotFormat::TagAtDigest => format!("{tag}@{}", digest?),
        SlotFormat::Digest => digest?.to_string(),
        SlotFormat::Reference { name } => format!("{name}:{}", spell(tag, digest)),
    })
}

/// The digest to write for `r`: only where the file already pins one, or under the
/// `digest` strategy, whose whole point is pinning it.
fn written_digest<'a>(r: &ImageRef, digest: Option<&'a str>) -> Option<&'a str> {
    if r.digest.is_some() || r.policy.strategy == Strategy::Digest {
        digest
    } else {
        None
    }
}

fn group_of(file: &str) -> String {
    file.rsplit_once('/').map_or(".", |(d, _)| d).to_string()
}

fn edits_for(r: &ImageRef, tag: &str, digest: Option<&str>) -> Result<Vec<Edit>, String> {
    let digest_elsewhere = r.slots.iter().any(|s| s.format == SlotFormat::Digest);
    if r.digest.is_some() && digest.is_none() {
        return Err("the new digest is unknown".into());
    }
    r.slots
        .iter()
        .filter_map(|slot| {
            slot_value(slot, tag, digest, digest_elsewhere).map(|value| (slot, value))
        })
        .map(|(slot, value)| {
            let old = Scalar {
                value: String::new(),
                span: slot.span.clone(),
                style: slot.style,
            };
            let new_raw =
                yaml::render_scalar(&old, &slot.raw, &value).map_err(|e| e.to_string())?;
            Ok(Edit {
                doc: slot.doc,
                path: slot.path.clone(),
                span: slot.span.clone(),
                new_raw,
                new_value: value,
            })
        })
        .collect()
}

/// A reference with its new tag and digest.
type Planned<'a> = (&'a ImageRef, &'a str, Option<&'a str>);

pub fn plan(discovery: &Discovery, outcomes: &[Outcome]) -> Plan {
    let mut by_file: BTreeMap<&str, Vec<Planned>> = BTreeMap::new();
    for (r, o) in discovery.refs.iter().zip(outcomes) {
        if let Outcome::Update { tag, digest } = o {
            by_file.entry(r.file.as_str()).or_default().push((
                r,
                tag,
                written_digest(r, digest.as_deref()),
            ));
        }
    }
    let mut out = Plan::default();
    let mut groups: BTreeMap<String, ChangeSet> = BTreeMap::new();
    for (file, items) in by_file {
        let Some(before) = discovery.sources.get(file) else {
            continue;
        };
        let mut edits = Vec::new();
        let mut failed = None;
        for (r, tag, digest) in &items {
            match edits_for(r, tag, *digest) {
                Ok(e) => edits.extend(e),
                Err(e) => failed = Some((r.line, r.column, e)),
            }
        }
        let result = match failed {
            Some((line, column, e)) => Err((line, column, e)),
            None => yaml::apply_edits(before, &edits)
                .map_err(|e| (items[0].0.line, items[0].0.column, e.to_string())),
        };
        let after = match result {
            Ok(a) => a,
            Err((line, column, e)) => {
                out.refused.insert(file.to_string());
                out.problems.push(Problem::at_file(
                    file,
                    line,
                    column,
                    format!("edit refused, file left unchanged: {e}"),
                ));
                continue;
            }
        };
        let group = group_of(file);
        let set = groups.entry(group.clone()).or_insert_with(|| ChangeSet {
            group: group.clone(),
            files: Vec::new(),
            updates: Vec::new(),
        });
        set.files.push(file.to_string());
        for (r, tag, digest) in items {
            set.updates.push(out.updates.len());
            out.updates.push(Update {
                file: file.to_string(),
                line: r.line,
                column: r.column,
                kind: r.kind,
                image: r.image.to_string(),
                name: r.written.clone(),
                from: spell(r.tag.as_deref().unwrap_or_default(), r.digest.as_deref()),
                to: spell(tag, digest),
                group: group.clone(),
            });
        }
        out.files.push(FileChange {
            file: file.to_string(),
            before: before.clone(),
            after,
        });
    }
    out.change_sets = groups.into_values().collect();
    out
}
