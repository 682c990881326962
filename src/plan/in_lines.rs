//! Edits proven without their file's text, for a run whose output is the report.
//!
//! Discovery gives up the text of a file the one-pass reader read, without aliases or merge
//! keys, whose every slot holds the whole value of its line (`discover::SourceTexts`,
//! `Slot::alone`): what the proof of an edit in its line reads of the text was read then.
//! What is left of the proof depends on the new values alone, and is made here
//! (`imagebump_yaml::proven_in_their_lines`). Where it cannot decide (a new value that
//! does not read alone, a value to create), the plan reads the text again.

use super::{edits_at, slot_value, FileWork};
use crate::discover::{ImageRef, SlotFormat};
use imagebump_yaml::{self as yaml, Edit};

/// What [`super::change_file`] would say of `work` on the text discovery gave up, without
/// it: `Some(Ok)` when it would make the new text, `Some(Err)` with the refusal it would
/// give, `None` when only the text can tell.
pub(super) fn proven(work: &FileWork) -> Option<Result<(), (usize, usize, String)>> {
    if !work.creations.is_empty() {
        return None;
    }
    let mut edits = Vec::new();
    for &&(r, tag, digest) in work.slots {
        match edits_alone(r, tag, digest)? {
            Ok(e) => edits.extend(e),
            Err(e) => {
                let (line, column) = r.at();
                return Some(Err((line, column, e)));
            }
        }
    }
    if edits.is_empty() {
        return Some(Ok(()));
    }
    let (line, column) = edits_at(work);
    match yaml::proven_in_their_lines(&edits) {
        Ok(true) => Some(Ok(())),
        Ok(false) => None,
        Err(e) => Some(Err((line, column, e.to_string()))),
    }
}

/// [`super::edits_for`] without the text: `None` when a slot's edit needs it (a slot not
/// [`alone`](crate::discover::Slot::alone), a new value whose spelling depends on the old
/// one's).
fn edits_alone(
    r: &ImageRef,
    tag: &str,
    digest: Option<&str>,
) -> Option<Result<Vec<Edit>, String>> {
    let digest_elsewhere = r.slots.iter().any(|s| s.format == SlotFormat::Digest);
    if r.digest.is_some() && digest.is_none() {
        return Some(Err("the new digest is unknown".into()));
    }
    let mut edits = Vec::with_capacity(r.slots.len());
    for slot in r.slots.iter() {
        let Some(value) = slot_value(slot, tag, digest, digest_elsewhere) else {
            continue;
        };
        if !slot.alone {
            return None;
        }
        let new_raw = yaml::render_alone(slot.style, &value)?;
        edits.push(Edit {
            doc: slot.doc as usize,
            path: slot.path.to_vec(),
            span: slot.span.range(),
            new_raw,
            new_value: value,
            inner: None,
        });
    }
    Some(Ok(edits))
}
