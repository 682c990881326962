//! Byte-exact scalar replacement, verified by re-parsing.

use std::borrow::Borrow;
use std::ops::Range;

use serde::Deserialize;
use yaml_serde::Value;

use super::located::{Node, PathSeg, Scalar, Style};
use super::path_to_string;
use crate::fingerprint::{Fingerprint, Reader};
use crate::insert::ReadError;
use crate::one_line::OneLineBlock;

/// Replace one scalar: the bytes in `span` become `new_raw`, whose decoded value is
/// `new_value`, found at `path` in document `doc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub doc: usize,
    pub path: Vec<PathSeg>,
    pub span: Range<usize>,
    pub new_raw: String,
    pub new_value: String,
    /// Set when the scalar lies inside the YAML text of a literal block scalar (an Argo CD
    /// `helm.values` string): `doc` and `path` then locate that block scalar, and `inner`
    /// the scalar inside its text. `span` is still the scalar's bytes in the file.
    pub inner: Option<Inner>,
}

/// A scalar inside the YAML text of a block scalar (see [`crate::BlockText`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Inner {
    /// The document of that text.
    pub doc: usize,
    /// The path inside that document.
    pub path: Vec<PathSeg>,
    /// The scalar's span in the block scalar's decoded text.
    pub span: Range<usize>,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum EditError {
    #[error("edits overlap at byte {0}")]
    Overlap(usize),
    #[error("cannot rewrite a block scalar at {0}")]
    BlockScalar(String),
    #[error("the file no longer parses after the edit: {0}")]
    Reparse(String),
    #[error("verification failed: {0}")]
    Mismatch(String),
}

/// Render `new_value` in the style of `old`, so that quoting is kept. A plain scalar stays
/// plain only when YAML reads the new text back as the same string (or as the number that
/// prints as it, when the old value was a number); otherwise it is double-quoted rather than
/// silently turned into another type (`1.10` would become the float 1.1).
///
/// A block scalar on one line of text ([`OneLineBlock`]) keeps its header and line break:
/// `new_value` (what it is to hold, the line break `>` and `|` add included) becomes its
/// line's text. Any other block scalar is refused.
pub fn render_scalar(old: &Scalar, old_raw: &str, new_value: &str) -> Result<String, EditError> {
    match old.style {
        Style::Block => OneLineBlock::of(old_raw)
            .and_then(|b| b.replaced(old_raw, new_value.strip_suffix(b.suffix())?))
            .ok_or_else(|| EditError::BlockScalar(old_raw.to_string())),
        // Only a plain scalar whose new value reads as a number asks the old text.
        style => Ok(render_alone(style, new_value)
            .unwrap_or_else(|| plain_or_quoted(new_value, plain_reads_back(new_value, old_raw)))),
    }
}

/// [`render_scalar`] where its result does not depend on the old scalar's text: every
/// style but a block scalar, and a plain one unless the new value reads as a number (it
/// stays plain only where the old value was a number). `None` otherwise.
pub fn render_alone(style: Style, new_value: &str) -> Option<String> {
    match style {
        Style::Double => Some(double_quoted(new_value)),
        Style::Single => Some(format!("'{}'", new_value.replace('\'', "''"))),
        Style::Plain => match plain_reading(new_value) {
            PlainReading::Itself => Some(plain_or_quoted(new_value, true)),
            PlainReading::Other => Some(plain_or_quoted(new_value, false)),
            PlainReading::Number => None,
        },
        Style::Block => None,
    }
}

fn plain_or_quoted(new_value: &str, plain: bool) -> String {
    if plain {
        new_value.to_string()
    } else {
        double_quoted(new_value)
    }
}

fn double_quoted(value: &str) -> String {
    format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
}

fn plain_reads_back(new_value: &str, old_raw: &str) -> bool {
    match plain_reading(new_value) {
        PlainReading::Itself => true,
        // A number is fine only where the old value was a number too (the user chose that).
        PlainReading::Number => matches!(
            small_value(&format!("k: {old_raw}"))
                .as_ref()
                .and_then(|v| v.get("k")),
            Some(Value::Number(_))
        ),
        PlainReading::Other => false,
    }
}

/// How libyaml reads a text written plain as a mapping's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PlainReading {
    /// As the same string.
    Itself,
    /// As a number that prints as the text.
    Number,
    /// As anything else.
    Other,
}

/// [`PlainReading`] of `value`. A plan renders the same few new versions thousands of
/// times, so each thread remembers the answers for values of up to 256 bytes (emptied when
/// it holds 4,096), by foldhash seeded at random (docs/security.md).
fn plain_reading(value: &str) -> PlainReading {
    use std::cell::RefCell;
    const MAX_TEXT: usize = 256;
    const MAX_TEXTS: usize = 4096;
    thread_local! {
        static READINGS: RefCell<foldhash::HashMap<String, PlainReading>> =
            RefCell::new(foldhash::HashMap::default());
    }
    let read = || match small_value(&format!("k: {value}"))
        .as_ref()
        .and_then(|v| v.get("k"))
    {
        Some(Value::String(s)) if s == value => PlainReading::Itself,
        Some(v @ Value::Number(_)) if scalar_string(v).as_deref() == Some(value) => {
            PlainReading::Number
        }
        _ => PlainReading::Other,
    };
    if value.len() > MAX_TEXT {
        return read();
    }
    READINGS.with_borrow_mut(|readings| {
        if let Some(r) = readings.get(value) {
            return *r;
        }
        if readings.len() >= MAX_TEXTS {
            readings.clear();
        }
        let r = read();
        readings.insert(value.to_string(), r);
        r
    })
}

/// libyaml's reading of a short text (a scalar, or `k: scalar`), or `None` when it does
/// not read. Renderings and proofs ask it of the same few new versions thousands of times
/// a run, so each thread remembers the answers for texts of up to 256 bytes (the memory
/// is bounded: the cache is emptied when it reaches 4,096 texts).
fn small_value(text: &str) -> Option<Value> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    const MAX_TEXT: usize = 256;
    const MAX_TEXTS: usize = 4096;
    thread_local! {
        static READ: RefCell<HashMap<String, Option<Value>>> = RefCell::new(HashMap::new());
    }
    let parse = || crate::from_str::<Value>(text).ok();
    if text.len() > MAX_TEXT {
        return parse();
    }
    READ.with_borrow_mut(|read| {
        if let Some(v) = read.get(text) {
            return v.clone();
        }
        if read.len() >= MAX_TEXTS {
            read.clear();
        }
        let v = parse();
        read.insert(text.to_string(), v.clone());
        v
    })
}

/// Apply the edits to `text` and prove the result: every edited path now holds its new
/// value, and nothing else in any document changed.
pub fn apply_edits(text: &str, edits: &[Edit]) -> Result<String, EditError> {
    apply_edits_known(text, edits, None)
}

/// As [`apply_edits`], given the fingerprint of `text`'s values from the parse that found
/// the edits ([`crate::parse_located_fingerprinted`]). The proof is the same, made with one
/// parse instead of two where it can be: the edited text is parsed, each edited path must
/// hold its new value, and with the old values put back its values must be the ones read
/// before (their fingerprint). Texts with aliases or merge keys, edits inside block
/// scalars, and any mismatch take the full path (both texts parsed and compared), which
/// also words the error.
pub fn apply_edits_known(
    text: &str,
    edits: &[Edit],
    fingerprint: Option<Fingerprint>,
) -> Result<String, EditError> {
    let once = one_per_span(edits)?;
    let out = splice(text, &once)?;
    let proven = fingerprint.is_some_and(|f| verified_by_fingerprint(text, &out, &once, f));
    if !proven {
        verify(text, &out, &once, edits)?;
    }
    Ok(out)
}

/// The one-parse proof of [`apply_edits_known`]: `true` when it holds, `false` when the
/// full verification must decide.
fn verified_by_fingerprint(
    before: &str,
    after: &str,
    edits: &[Edit],
    fingerprint: Fingerprint,
) -> bool {
    // Aliases and merge keys read one value at several places; block-scalar edits are
    // proven inside their text: both are left to the full verification.
    if before.contains('*') || before.contains("<<") || edits.iter().any(|e| e.inner.is_some()) {
        return false;
    }
    match fingerprint.by {
        Reader::Libyaml => by_values(before, after, edits, fingerprint),
        Reader::OnePass
            if fingerprint.read_in_one_pass_from(before)
                && in_their_lines(before, after, edits) =>
        {
            // Every test (a debug build) also makes the proofs that read the edited text.
            debug_assert!(
                by_one_pass(before, after, edits, fingerprint)
                    && verify(before, after, edits, edits).is_ok(),
                "an edit proven in its line is not proven by reading the text: {edits:?} of {before:?}"
            );
            true
        }
        Reader::OnePass => by_one_pass(before, after, edits, fingerprint),
    }
}

/// The proof of edits to a text the one-pass reader read (its fingerprint says so) without
/// reading the edited text: each edit replaces the whole value of a `key: value`, `- value`
/// or `- key: value` line, the rest of the line nothing or a comment, by a scalar that reads
/// as its new value alone and cannot read as more than itself there.
///
/// Why that is the proof: the one-pass reader (`simple.rs`) reads a text line by line, and a
/// line's value on its own (`inline_value`): its scalar ends at the line's end or at ` #`,
/// and what the line is (an entry, an item, which key) is decided before its value, from
/// `key: ` or `- `. A new value without a line break that reads alone as one scalar of its
/// whole text (so, plain, it holds no ` #` or `: ` and does not end in `:`; quoted, it
/// closes at its end) reads the same before the line's comment or end: the line stays the
/// same entry or item, its comment a comment, and every other line as it was; so the edited
/// text reads as the old one with the edited scalars' values replaced, which is what
/// [`by_one_pass`] checks by reading it. Each new value must also hold its value as libyaml
/// types it ([`holds`]). A value that starts with anything but a quote, a letter or a digit
/// (an indicator, a `-`) goes to [`by_one_pass`].
fn in_their_lines(before: &str, after: &str, edits: &[Edit]) -> bool {
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| e.span.start);
    // The edited text must be the text with each span replaced, nothing else.
    let mut pos = 0usize;
    let mut at = 0usize;
    for e in &sorted {
        let Some(kept) = before.get(pos..e.span.start) else {
            return false;
        };
        let end = at.saturating_add(kept.len());
        if after.get(at..end) != Some(kept) {
            return false;
        }
        at = end.saturating_add(e.new_raw.len());
        if after.get(end..at) != Some(e.new_raw.as_str())
            || !alone_in_its_line(before, &e.span)
            || !new_value_alone(e)
        {
            return false;
        }
        pos = e.span.end;
    }
    before.get(pos..) == after.get(at..)
}

/// What [`in_their_lines`] asks of an edit besides its place in the text: the one-pass
/// reader reads one document, a path leads to the edited value, and the new text is one
/// line that reads alone as the new value.
fn new_value_alone(e: &Edit) -> bool {
    let new = &e.new_raw;
    let one_line = !new.contains('\n')
        && new
            .bytes()
            .next()
            .is_some_and(|b| matches!(b, b'"' | b'\'') || b.is_ascii_alphanumeric());
    e.doc == 0
        && !e.path.is_empty()
        && e.inner.is_none()
        && one_line
        && crate::simple::scalar(new)
            .is_some_and(|s| s.value == e.new_value && holds(&s, &e.new_value))
}

/// Whether edits of `text` can be proven in their lines without it, later: the one-pass
/// reader read it, and it has no alias or merge key. `fingerprint` is the one the parse of
/// this very text gave ([`crate::parse_located_fingerprinted`]: it is not hashed again
/// here, for every file discovery reads). With [`alone_in_its_line`] for each edited span,
/// that is everything [`apply_edits_known`]'s proof in the line reads of the text;
/// [`proven_in_their_lines`] makes the rest of it from the edits alone.
pub fn provable_in_lines(text: &str, fingerprint: Option<Fingerprint>) -> bool {
    debug_assert!(
        fingerprint.is_none_or(|f| !f.read_in_one_pass() || f.read_in_one_pass_from(text))
    );
    fingerprint.is_some_and(|f| f.read_in_one_pass()) && !text.contains('*') && !text.contains("<<")
}

/// [`apply_edits_known`] without the text, for edits of a text [`provable_in_lines`]
/// accepted whose spans were each [`alone_in_its_line`] there: `Ok(true)` when the edited
/// text would be proven in its lines, the error it would give when it refuses the edits
/// before any proof (different values for one span, overlapping spans), and `Ok(false)`
/// when only the text can tell (a new value that does not read alone: the caller reads the
/// text again and applies the edits).
pub fn proven_in_their_lines(edits: &[Edit]) -> Result<bool, EditError> {
    let once = one_per_span(edits)?;
    let mut sorted: Vec<&Edit> = once.iter().collect();
    sorted.sort_by_key(|e| e.span.start);
    let mut pos = 0;
    for e in &sorted {
        // Where splicing the text would find the edits overlapping.
        if e.span.start < pos {
            return Err(EditError::Overlap(e.span.start));
        }
        pos = e.span.end;
    }
    Ok(sorted.iter().all(|e| new_value_alone(e)))
}

/// Whether `span` of `text` is the whole value of its line: after the line's indentation,
/// `- ` or `key: ` or `- key: ` (a key of the one-pass reader's kind), then spaces, then the
/// value, then nothing or spaces and a comment. What the proof in the line asks of the text
/// at an edit (discovery asks it too, for [`proven_in_their_lines`]).
pub fn alone_in_its_line(text: &str, span: &Range<usize>) -> bool {
    let (Some(head), Some(old), Some(rest)) = (
        text.get(..span.start),
        text.get(span.clone()),
        text.get(span.end..),
    ) else {
        return false;
    };
    if old.is_empty() || old.contains('\n') {
        return false;
    }
    let line_start = head.rfind('\n').map_or(0, |i| i.saturating_add(1));
    let Some(mut lead) = head.get(line_start..).map(|l| l.trim_start_matches(' ')) else {
        return false;
    };
    let tail = rest.split('\n').next().unwrap_or_default();
    let comment = tail.trim_start_matches(' ');
    if !(comment.is_empty() || (comment.len() < tail.len() && comment.starts_with('#'))) {
        return false;
    }
    // The lead must end in spaces, after `-` or `key:`.
    let spaced = lead.trim_end_matches(' ');
    if spaced.len() == lead.len() {
        return false;
    }
    lead = spaced;
    let lead = match lead.strip_prefix('-') {
        Some("") => return true,
        Some(after_dash) if after_dash.starts_with(' ') => after_dash.trim_start_matches(' '),
        _ => lead,
    };
    lead.strip_suffix(':')
        .is_some_and(crate::simple::simple_key)
}

/// The proof with libyaml's values of the edited text.
fn by_values(before: &str, after: &str, edits: &[Edit], fingerprint: Fingerprint) -> bool {
    let Ok(mut actual) = parse_all(after) else {
        return false;
    };
    for e in edits {
        let Some(slot) = actual.get_mut(e.doc).and_then(|d| lookup_mut(d, &e.path)) else {
            return false;
        };
        if scalar_string(slot).as_deref() != Some(e.new_value.as_str()) {
            return false;
        }
        // The old value as libyaml reads the old text of the scalar on its own; if that
        // is not what it was in place, the fingerprints differ and the full path decides.
        let old = before.get(e.span.clone()).and_then(small_value);
        let Some(old) = old else {
            return false;
        };
        *slot = old;
    }
    crate::fingerprint::of_documents(&actual).same_values(&fingerprint)
}

/// The proof with the one-pass reader, which reads only what libyaml reads the same way:
/// the edited text is in its subset, each edited place holds its new value (typed by libyaml
/// as the full path types it), and with the old scalars put back the view is the one read
/// before.
fn by_one_pass(before: &str, after: &str, edits: &[Edit], fingerprint: Fingerprint) -> bool {
    // Byte order marks are no content (`parse_located`); the edits' paths, not their
    // spans, lead into the documents read here.
    let Some(mut docs) = crate::simple::read(after.trim_start_matches('\u{feff}')) else {
        return false;
    };
    for e in edits {
        let Some(Node::Scalar(now)) = docs
            .get_mut(e.doc)
            .and_then(|d| d.root.as_mut())
            .and_then(|root| root.at_mut(&e.path))
        else {
            return false;
        };
        if now.value != e.new_value || !holds(now, &e.new_value) {
            return false;
        }
        match before.get(e.span.clone()).and_then(crate::simple::scalar) {
            Some(old) => *now = old,
            None => return false,
        }
    }
    crate::fingerprint::of_located(&docs).same_values(&fingerprint)
}

/// Whether libyaml reads `scalar` as `value`, as the full verification asks of an edited
/// place: a quoted scalar is its text; a plain one is read as libyaml types it (`1.10` is the
/// number 1.1, not the text `1.10`).
fn holds(scalar: &Scalar, value: &str) -> bool {
    match scalar.style {
        Style::Single | Style::Double => true,
        Style::Plain => small_value(&scalar.value)
            .and_then(|v| scalar_string(&v))
            .is_some_and(|s| s == value),
        Style::Block => false,
    }
}

/// The edits with one per span: references that read one anchored value through aliases
/// edit the same bytes, which is right when they all want the same new text, and refused
/// when they do not (one of them would be wrong). The edits as they are when each has its
/// own span, as nearly always: not copied.
fn one_per_span(edits: &[Edit]) -> Result<std::borrow::Cow<'_, [Edit]>, EditError> {
    let mut out: Vec<&Edit> = Vec::with_capacity(edits.len());
    for e in edits {
        match out.iter().find(|o| o.span == e.span && o.inner == e.inner) {
            Some(o) if o.new_raw == e.new_raw => {}
            Some(o) => {
                return Err(EditError::Mismatch(format!(
                    "{} and {} read one anchored value (an alias or merge key) but would get different values ({:?} and {:?}); change the anchor by hand or give each its own value",
                    place(o),
                    place(e),
                    o.new_value,
                    e.new_value
                )))
            }
            None => out.push(e),
        }
    }
    Ok(if out.len() == edits.len() {
        std::borrow::Cow::Borrowed(edits)
    } else {
        std::borrow::Cow::Owned(out.into_iter().cloned().collect())
    })
}

/// `text` with each edit's span replaced by its new text.
fn splice<E: std::borrow::Borrow<Edit>>(text: &str, edits: &[E]) -> Result<String, EditError> {
    let mut sorted: Vec<&Edit> = edits.iter().map(Borrow::borrow).collect();
    sorted.sort_by_key(|e| e.span.start);
    let mut out = String::with_capacity(text.len().saturating_add(64));
    let mut pos = 0;
    for e in &sorted {
        let kept = text
            .get(pos..e.span.start)
            .ok_or(EditError::Overlap(e.span.start))?;
        out.push_str(kept);
        out.push_str(&e.new_raw);
        pos = e.span.end;
    }
    out.push_str(text.get(pos..).ok_or(EditError::Overlap(pos))?);
    Ok(out)
}

/// Documents as values, aliases expanded and merge keys applied (so that a path is the
/// same as in the located view).
fn parse_all(text: &str) -> Result<Vec<Value>, ReadError> {
    crate::check_nesting(text)?;
    yaml_serde::Deserializer::from_str(text)
        .map(|d| {
            let mut v = Value::deserialize(d).map_err(|e| ReadError::Value(e.to_string()))?;
            v.apply_merge()
                .map_err(|e| ReadError::Value(e.to_string()))?;
            Ok(v)
        })
        .collect()
}

/// A place that reads an edited scalar.
struct Place {
    doc: usize,
    path: Vec<PathSeg>,
    span: Range<usize>,
    /// Where the value is written (the anchor's own place), not read through an alias.
    written_here: bool,
}

/// Every place of `text` that reads an edited span (more than one when it is anchored).
fn shared_places(text: &str, edits: &[Edit]) -> Vec<Place> {
    // Without an alias (`*name`) every scalar is read at one place only, the edited one:
    // nothing to add, and no second parse of the file.
    if !text.contains('*') {
        return Vec::new();
    }
    let spans: Vec<&Range<usize>> = edits
        .iter()
        .filter(|e| e.inner.is_none())
        .map(|e| &e.span)
        .collect();
    let Ok(docs) = super::located::parse_located(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        if let Some(root) = &d.root {
            let mut path = Vec::new();
            collect(root, &spans, i, &mut path, 0, &mut out);
        }
    }
    out
}

/// The places below `node` whose scalar is in `spans`. `last_key`: the offset of the last
/// key on the path (the anchor's own place is reached through keys that all come before
/// it; an alias or a merge key always comes after its anchor).
fn collect(
    node: &super::located::Node,
    spans: &[&Range<usize>],
    doc: usize,
    path: &mut Vec<PathSeg>,
    last_key: usize,
    out: &mut Vec<Place>,
) {
    use super::located::Node;
    match node {
        Node::Scalar(s) if spans.contains(&&s.span) => out.push(Place {
            doc,
            path: path.clone(),
            span: s.span.clone(),
            written_here: last_key < s.span.start,
        }),
        Node::Map { entries, .. } => {
            for (k, v) in entries {
                path.push(PathSeg::Key(k.name.clone()));
                collect(v, spans, doc, path, last_key.max(k.offset), out);
                path.pop();
            }
        }
        Node::Seq { items, offset } => {
            for (i, v) in items.iter().enumerate() {
                path.push(PathSeg::Index(i));
                collect(v, spans, doc, path, last_key.max(*offset), out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// `edits` one per span; `claimed` every edit asked for, also those of the same span (the
/// references that read one anchored value). The text after must read as the text before
/// with exactly the edited values changed.
fn verify(before: &str, after: &str, edits: &[Edit], claimed: &[Edit]) -> Result<(), EditError> {
    let mut expected = parse_all(before).map_err(|e| EditError::Reparse(e.to_string()))?;
    let actual = parse_all(after).map_err(|e| EditError::Reparse(e.to_string()))?;
    let sharers = shared_places(before, edits);
    let (direct, inside): (Vec<&Edit>, Vec<&Edit>) = edits.iter().partition(|e| e.inner.is_none());
    for e in direct {
        verify_direct(e, &actual, &mut expected, &sharers)?;
    }
    only_claimed_sharers(&sharers, claimed)?;
    if expected.len() != actual.len() {
        return Err(EditError::Mismatch(format!(
            "document count changed from {} to {}",
            expected.len(),
            actual.len()
        )));
    }
    verify_blocks(&inside, &mut expected, &actual)?;
    if expected != actual {
        return Err(EditError::Mismatch(
            "the edit changed values other than the intended ones (is the value shared through a YAML anchor?)".into(),
        ));
    }
    Ok(())
}

/// An edit of a whole value: the text after reads the new value there (and where an alias
/// or merge key reads the same anchor), and `expected` takes it.
fn verify_direct(
    e: &Edit,
    actual: &[Value],
    expected: &mut [Value],
    sharers: &[Place],
) -> Result<(), EditError> {
    let got = actual
        .get(e.doc)
        .and_then(|d| lookup(d, &e.path))
        .ok_or_else(|| EditError::Mismatch(format!("{} is gone", place(e))))?;
    if scalar_string(got).as_deref() != Some(e.new_value.as_str()) {
        return Err(EditError::Mismatch(format!(
            "{} reads {:?}, expected {:?}",
            place(e),
            scalar_string(got).unwrap_or_default(),
            e.new_value
        )));
    }
    replace(expected, e, got)?;
    for p in sharers.iter().filter(|p| p.span == e.span) {
        let alias = Edit {
            doc: p.doc,
            path: p.path.clone(),
            ..e.clone()
        };
        if let Some(now) = actual.get(p.doc).and_then(|d| lookup(d, &p.path)) {
            replace(expected, &alias, now)?;
        }
    }
    Ok(())
}

/// An anchored value is edited only when every place that reads it (through an alias or
/// a merge key) is a reference being updated to the same value; then they all read the
/// new value, as intended.
fn only_claimed_sharers(sharers: &[Place], claimed: &[Edit]) -> Result<(), EditError> {
    for p in sharers.iter().filter(|p| !p.written_here) {
        let wanted = claimed
            .iter()
            .any(|c| c.doc == p.doc && c.path == p.path && c.span == p.span);
        if !wanted {
            let reader = format!(
                "document {} at {}",
                p.doc.saturating_add(1),
                path_to_string(&p.path)
            );
            let by = claimed
                .iter()
                .find(|c| c.span == p.span)
                .map(place)
                .unwrap_or_default();
            return Err(EditError::Mismatch(format!(
                "{reader} reads the same anchored value as {by} but is not an image reference being updated: the anchor is left as it is (change it by hand, or give {reader} its own value)"
            )));
        }
    }
    Ok(())
}

/// Edits inside block scalars, one block at a time: each block reads as before with its
/// edits made, and `expected` takes it.
fn verify_blocks(
    inside: &[&Edit],
    expected: &mut [Value],
    actual: &[Value],
) -> Result<(), EditError> {
    let mut blocks: Vec<(usize, &[PathSeg])> =
        inside.iter().map(|e| (e.doc, &e.path[..])).collect();
    blocks.sort();
    blocks.dedup();
    for (doc, path) in blocks {
        let edits: Vec<&Edit> = inside
            .iter()
            .copied()
            .filter(|e| e.doc == doc && e.path == path)
            .collect();
        let Some(&block) = edits.first() else {
            continue;
        };
        let got = verify_block(expected, actual, block, &edits)?;
        replace(expected, block, got)?;
    }
    Ok(())
}

fn place(e: &Edit) -> String {
    format!(
        "document {} at {}",
        e.doc.saturating_add(1),
        path_to_string(&e.path)
    )
}

/// Put `got` where `e` points in the documents read before the edits.
fn replace(expected: &mut [Value], e: &Edit, got: &Value) -> Result<(), EditError> {
    let slot = expected
        .get_mut(e.doc)
        .and_then(|d| lookup_mut(d, &e.path))
        .ok_or_else(|| EditError::Mismatch(format!("{} did not exist before", place(e))))?;
    *slot = got.clone();
    Ok(())
}

/// The edits inside one block scalar (the one `e` edits in): its new string must be the old one with exactly
/// the edited spans replaced, and, read as YAML, the old text with exactly those values
/// changed. Returns the new string.
fn verify_block<'a>(
    before: &[Value],
    after: &'a [Value],
    e: &Edit,
    edits: &[&Edit],
) -> Result<&'a Value, EditError> {
    let old = block_string(before, e, "before the edit")?;
    let got = after.get(e.doc).and_then(|d| lookup(d, &e.path));
    let new = block_string(after, e, "after the edit")?;
    let got = got.ok_or_else(|| EditError::Mismatch(format!("{} is gone", place(e))))?;
    let inner: Vec<Edit> = edits
        .iter()
        .filter_map(|e| {
            let i = e.inner.as_ref()?;
            Some(Edit {
                doc: i.doc,
                path: i.path.clone(),
                span: i.span.clone(),
                new_raw: e.new_raw.clone(),
                new_value: e.new_value.clone(),
                inner: None,
            })
        })
        .collect();
    if splice(old, &inner)? != new {
        return Err(EditError::Mismatch(format!(
            "the text of {} changed beyond the edited values",
            place(e)
        )));
    }
    verify(old, new, &inner, &inner).map_err(|err| match err {
        EditError::Mismatch(m) | EditError::Reparse(m) => {
            EditError::Mismatch(format!("inside {}: {m}", place(e)))
        }
        other => other,
    })?;
    Ok(got)
}

/// The string held by the block scalar `e` edits inside.
fn block_string<'a>(docs: &'a [Value], e: &Edit, when: &str) -> Result<&'a str, EditError> {
    docs.get(e.doc)
        .and_then(|d| lookup(d, &e.path))
        .and_then(Value::as_str)
        .ok_or_else(|| EditError::Mismatch(format!("{} is not a string {when}", place(e))))
}

fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn lookup<'a>(v: &'a Value, path: &[PathSeg]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, seg| match seg {
        PathSeg::Key(k) => v.get(k.as_str()),
        PathSeg::Index(i) => v.get(*i),
    })
}

fn lookup_mut<'a>(v: &'a mut Value, path: &[PathSeg]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, seg| match seg {
        PathSeg::Key(k) => v.get_mut(k.as_str()),
        PathSeg::Index(i) => v.get_mut(*i),
    })
}

#[cfg(test)]
mod tests {

    /// An anchored tag read through an alias and a merge key: editing it is one edit of
    /// the anchor, intended for every place that reads it; two different new values for
    /// it are refused.
    #[test]
    fn anchored_values_are_edited_once_for_all_their_readers() {
        let text = "base: &attrs\n  repository: ghcr.io/acme/web\n  tag: &ver 1.2.0\nweb:\n  image: *attrs\napi:\n  image:\n    <<: *attrs\n    pullPolicy: Always\n";
        let docs = crate::located::parse_located(text).unwrap();
        let root = docs[0].root.as_ref().unwrap();
        let web_tag = root
            .get("web")
            .unwrap()
            .get("image")
            .unwrap()
            .get("tag")
            .unwrap();
        let api_tag = root
            .get("api")
            .unwrap()
            .get("image")
            .unwrap()
            .get("tag")
            .unwrap();
        let (crate::located::Node::Scalar(a), crate::located::Node::Scalar(b)) = (web_tag, api_tag)
        else {
            panic!("tags are read through the alias and the merge key");
        };
        assert_eq!((a.value.as_str(), &a.span), ("1.2.0", &b.span));
        let edit = |path: &[&str], new: &str| Edit {
            doc: 0,
            path: path.iter().map(|k| PathSeg::Key(k.to_string())).collect(),
            span: a.span.clone(),
            new_raw: new.into(),
            new_value: new.into(),
            inner: None,
        };
        let out = apply_edits(
            text,
            &[
                edit(&["web", "image", "tag"], "1.3.0"),
                edit(&["api", "image", "tag"], "1.3.0"),
            ],
        )
        .unwrap();
        assert_eq!(out, text.replace("&ver 1.2.0", "&ver 1.3.0"));
        let e = apply_edits(
            text,
            &[
                edit(&["web", "image", "tag"], "1.3.0"),
                edit(&["api", "image", "tag"], "1.4.0"),
            ],
        )
        .unwrap_err();
        assert!(e.to_string().contains("read one anchored value"), "{e}");
    }

    use super::super::parse_located;
    use super::*;

    fn edit_tag(text: &str, new: &str) -> Result<String, EditError> {
        let docs = parse_located(text).unwrap();
        let s = docs[0]
            .root
            .as_ref()
            .unwrap()
            .get("tag")
            .unwrap()
            .as_scalar()
            .unwrap()
            .clone();
        let raw = render_scalar(&s, &text[s.span.clone()], new)?;
        apply_edits(
            text,
            &[Edit {
                doc: 0,
                path: vec![PathSeg::Key("tag".into())],
                span: s.span.clone(),
                new_raw: raw,
                new_value: new.into(),
                inner: None,
            }],
        )
    }

    #[test]
    fn keeps_quoting_style() {
        assert_eq!(
            edit_tag("tag: \"1.2.0\" # x\n", "1.3.0").unwrap(),
            "tag: \"1.3.0\" # x\n"
        );
        assert_eq!(
            edit_tag("tag: '1.2.0'\n", "1.3.0").unwrap(),
            "tag: '1.3.0'\n"
        );
        assert_eq!(
            edit_tag("tag: 1.2.0\r\n", "1.3.0").unwrap(),
            "tag: 1.3.0\r\n"
        );
    }

    #[test]
    fn plain_numbers_that_would_change_type_are_quoted() {
        assert_eq!(edit_tag("tag: 1.2\n", "1.3").unwrap(), "tag: 1.3\n");
        assert_eq!(edit_tag("tag: 1.2\n", "1.10").unwrap(), "tag: \"1.10\"\n");
        assert_eq!(edit_tag("tag: v1\n", "1").unwrap(), "tag: \"1\"\n");
        // How `1` reads is remembered; whether the old value was a number is asked each time.
        assert_eq!(edit_tag("tag: 2\n", "1").unwrap(), "tag: 1\n");
        assert_eq!(edit_tag("tag: v1\n", "1").unwrap(), "tag: \"1\"\n");
    }

    /// An anchored value also read by a key that is not being updated (`other: *v`) is left
    /// alone: editing it would change that key too.
    /// The tag edit of `text` to `new_raw` (read as `new_value`), with its fingerprint.
    fn tag_edit(text: &str, new_raw: &str, new_value: &str) -> (Edit, Fingerprint) {
        let (docs, fingerprint) = crate::parse_located_fingerprinted(text).unwrap();
        let root = docs[0].root.as_ref().unwrap();
        let s = root.get("tag").unwrap().as_scalar().unwrap();
        let edit = Edit {
            doc: 0,
            path: vec![PathSeg::Key("tag".into())],
            span: s.span.clone(),
            new_raw: new_raw.into(),
            new_value: new_value.into(),
            inner: None,
        };
        (edit, fingerprint)
    }

    /// Whether the one-parse proof holds for `edit` of `text` with `fingerprint`.
    fn proves(text: &str, edit: &Edit, fingerprint: Fingerprint) -> bool {
        let after = splice(text, &[edit]).unwrap();
        verified_by_fingerprint(text, &after, std::slice::from_ref(edit), fingerprint)
    }

    #[test]
    fn the_fingerprint_proves_an_edit_with_one_parse_and_nothing_else() {
        let text = "image: web\ntag: \"1.0\" # pinned\nother: [1.10, x]\n";
        let (edit, fingerprint) = tag_edit(text, "\"1.1\"", "1.1");
        let after = splice(text, &[&edit]).unwrap();
        assert!(verified_by_fingerprint(
            text,
            &after,
            std::slice::from_ref(&edit),
            fingerprint
        ));
        assert_eq!(
            apply_edits_known(text, std::slice::from_ref(&edit), Some(fingerprint)).unwrap(),
            apply_edits(text, std::slice::from_ref(&edit)).unwrap()
        );
        // Another text's fingerprint proves nothing: the full verification decides (and
        // the edit is right).
        let other = crate::parse_located_fingerprinted("tag: x\n").unwrap().1;
        assert!(!verified_by_fingerprint(
            text,
            &after,
            std::slice::from_ref(&edit),
            other
        ));
        assert_eq!(
            apply_edits_known(text, &[edit], Some(other)).unwrap(),
            "image: web\ntag: \"1.1\" # pinned\nother: [1.10, x]\n"
        );
    }

    /// Both readings prove an edit with one parse: the one-pass reader's for plain block
    /// YAML, libyaml's for the rest (here a block scalar elsewhere in the file).
    #[test]
    fn each_reader_proves_its_own_texts() {
        for (text, by) in [
            ("tag: 1.0.0\nnote: x\n", Reader::OnePass),
            ("tag: 1.0.0\nnote: |\n  x\n", Reader::Libyaml),
        ] {
            let (edit, fingerprint) = tag_edit(text, "1.1.0", "1.1.0");
            assert_eq!(fingerprint.by, by, "{text:?}");
            assert!(proves(text, &edit, fingerprint));
            // The other reader's number proves nothing.
            let other = Fingerprint {
                by: match by {
                    Reader::OnePass => Reader::Libyaml,
                    Reader::Libyaml => Reader::OnePass,
                },
                ..fingerprint
            };
            assert!(!proves(text, &edit, other));
        }
    }

    /// A plain scalar that libyaml reads as another value than the one intended (`1.10` is
    /// the number 1.1) is not proven by the one-pass reader: the full path refuses it, as it
    /// always did.
    #[test]
    fn the_one_pass_proof_types_plain_scalars_as_libyaml_does() {
        let text = "tag: 1.0.0\n";
        let (edit, fingerprint) = tag_edit(text, "1.10", "1.10");
        assert_eq!(fingerprint.by, Reader::OnePass);
        assert!(!proves(text, &edit, fingerprint));
        let err = apply_edits_known(text, &[edit], Some(fingerprint)).unwrap_err();
        assert!(
            matches!(&err, EditError::Mismatch(m) if m.contains("1.10")),
            "{err}"
        );
        // Quoted, it is the text: proven.
        let (edit, fingerprint) = tag_edit(text, "\"1.10\"", "1.10");
        assert!(proves(text, &edit, fingerprint));
    }

    #[test]
    fn an_edit_that_changes_another_value_fails_the_fingerprint_and_is_refused() {
        let text = "tag: 1.0.0\nreplicas: 1\n";
        // A new text that also sets another key: the edited path is right, the rest is not.
        let (edit, fingerprint) = tag_edit(text, "1.1.0\nextra: 2", "1.1.0");
        let after = splice(text, &[&edit]).unwrap();
        assert!(!verified_by_fingerprint(
            text,
            &after,
            std::slice::from_ref(&edit),
            fingerprint
        ));
        let err = apply_edits_known(text, &[edit], Some(fingerprint)).unwrap_err();
        assert!(
            matches!(&err, EditError::Mismatch(m) if m.contains("other than the intended")),
            "{err}"
        );
    }

    #[test]
    fn an_anchor_with_a_reader_that_is_not_updated_is_refused() {
        let err = edit_tag("tag: &v 1.2.0\nother: *v\n", "1.3.0").unwrap_err();
        assert!(
            matches!(&err, EditError::Mismatch(m) if m.contains("other reads the same anchored value")),
            "{err}"
        );
    }

    /// Edit `inner_path` (keys) inside the literal block scalar at `values` of `text` to
    /// `new`, rendering it as the planner does.
    fn edit_inside(text: &str, inner_path: &[&str], new: &str) -> Result<String, EditError> {
        let values = vec![PathSeg::Key("values".into())];
        let docs = parse_located(text).unwrap();
        let block = docs[0].root.as_ref().unwrap().at(&values).unwrap();
        let block = block.as_scalar().unwrap();
        let decoded: Value = yaml_serde::from_str(text).unwrap();
        let decoded = decoded["values"].as_str().unwrap();
        let b = crate::BlockText::literal(text, block.span.clone(), decoded).unwrap();
        let path: Vec<PathSeg> = inner_path
            .iter()
            .map(|k| PathSeg::Key(k.to_string()))
            .collect();
        let inner_docs = parse_located(&b.text).unwrap();
        let s = inner_docs[0].root.as_ref().unwrap().at(&path).unwrap();
        let s = s.as_scalar().unwrap();
        let span = b.file_span(s.span.clone()).unwrap();
        let raw = render_scalar(s, &text[span.clone()], new)?;
        apply_edits(
            text,
            &[Edit {
                doc: 0,
                path: values,
                span,
                new_raw: raw,
                new_value: new.into(),
                inner: Some(Inner {
                    doc: 0,
                    path,
                    span: s.span.clone(),
                }),
            }],
        )
    }

    #[test]
    fn edits_inside_a_literal_block_scalar_change_only_that_value() {
        let cases = [
            "values: |\n  image:\n    repository: nginx\n    tag: 1.25.0 # pinned\n  replicas: 2\nother: x\n",
            "kind: Application\nvalues: |-\n    image:\n      tag: \"1.25.0\"\n\n    x: |\n      nested block\n",
            "values: |+ # keep the blank lines\r\n  image:\r\n    tag: '1.25.0'\r\n\r\n\r\nafter: 1\r\n",
            "values: |\n  image: {repository: nginx, tag: 1.25.0}\n",
        ];
        let out: Vec<String> = cases
            .iter()
            .map(|before| {
                let after = edit_inside(before, &["image", "tag"], "1.26.0").unwrap();
                format!("--- before\n{before}--- after\n{after}")
            })
            .collect();
        insta::assert_snapshot!(out.join("\n=====\n"));
    }

    /// A literal block scalar holding values with a tag, in one of the ways files write it.
    fn block_file(
        chomp: &str,
        explicit: bool,
        indent: usize,
        crlf: bool,
        quote: &str,
        blank_lines: usize,
        tag: &str,
    ) -> String {
        let pad = " ".repeat(indent);
        let nl = if crlf { "\r\n" } else { "\n" };
        let digit = if explicit {
            indent.to_string()
        } else {
            String::new()
        };
        let mut out = format!("kind: Application{nl}values: |{chomp}{digit} # values{nl}");
        out.push_str(&format!("{pad}image:{nl}{pad}  repository: nginx{nl}"));
        out.push_str(&format!("{pad}  tag: {quote}{tag}{quote} # pinned{nl}"));
        out.push_str(&nl.repeat(blank_lines));
        out.push_str(&format!("{pad}other: {{a: [1, 2]}}{nl}{nl}after: 1{nl}"));
        out
    }

    proptest::proptest! {
        #[test]
        fn an_edit_inside_any_literal_block_changes_only_its_bytes(
            chomp in proptest::sample::select(vec!["", "-", "+"]),
            explicit: bool,
            indent in 1usize..7,
            crlf: bool,
            quote in proptest::sample::select(vec!["", "'", "\""]),
            blank_lines in 0usize..3,
            new in "v?[0-9]{1,3}(\\.[0-9]{1,3}){0,2}(-[a-z]{1,6})?",
        ) {
            let before = block_file(chomp, explicit, indent, crlf, quote, blank_lines, "1.25.0");
            let after = edit_inside(&before, &["image", "tag"], &new).unwrap();
            // Outside the old tag's bytes the file is the same.
            let at = before.find("1.25.0").unwrap();
            let tail = &before[at + 6..];
            proptest::prop_assert!(after.starts_with(&before[..at]));
            proptest::prop_assert!(after.ends_with(tail));
            let written = &after[at..after.len() - tail.len()];
            proptest::prop_assert!(!written.contains('\n'));
            // Read back through both layers: the file, then the YAML inside the string.
            let doc: Value = yaml_serde::from_str(&after).unwrap();
            let inner: Value = yaml_serde::from_str(doc["values"].as_str().unwrap()).unwrap();
            proptest::prop_assert_eq!(scalar_string(&inner["image"]["tag"]), Some(new.clone()));
            proptest::prop_assert_eq!(doc["after"].as_u64(), Some(1));
        }
    }

    #[test]
    fn crlf_inside_a_block_survives() {
        assert_eq!(
            edit_inside(
                "a: 1\r\nvalues: |\r\n  tag: 1.2.0\r\n  b: 2\r\n",
                &["tag"],
                "1.3.0"
            )
            .unwrap(),
            "a: 1\r\nvalues: |\r\n  tag: 1.3.0\r\n  b: 2\r\n"
        );
    }

    #[test]
    fn a_plain_value_that_would_change_type_inside_a_block_is_quoted() {
        assert_eq!(
            edit_inside("values: |\n  tag: 1.2\n", &["tag"], "1.10").unwrap(),
            "values: |\n  tag: \"1.10\"\n"
        );
    }

    #[test]
    fn an_anchor_with_a_reader_that_is_not_updated_inside_a_block_is_refused() {
        let err = edit_inside(
            "values: |\n  tag: &v 1.2.0\n  other: *v\n",
            &["tag"],
            "1.3.0",
        )
        .unwrap_err();
        assert!(
            matches!(&err, EditError::Mismatch(m) if m.contains("anchor")),
            "{err}"
        );
    }

    #[test]
    fn an_inner_edit_that_changes_more_than_its_value_is_refused() {
        let text = "values: |\n  tag: 1.2.0\n";
        let edit = |new_raw: &str, inner_span: Range<usize>| Edit {
            doc: 0,
            path: vec![PathSeg::Key("values".into())],
            span: 17..22,
            new_raw: new_raw.into(),
            new_value: "1.3.0".into(),
            inner: Some(Inner {
                doc: 0,
                path: vec![PathSeg::Key("tag".into())],
                span: inner_span,
            }),
        };
        assert_eq!(&text[17..22], "1.2.0");
        // A new line sneaks in a key (the block's indentation is not the inner text's).
        let err = apply_edits(text, &[edit("1.3.0\n  extra: 1", 5..10)]).unwrap_err();
        assert!(
            matches!(&err, EditError::Mismatch(m) if m.contains("changed beyond")),
            "{err}"
        );
        // The text is spliced as intended but reads as another value.
        let err = apply_edits(text, &[edit("1.3.1", 5..10)]).unwrap_err();
        assert!(
            matches!(&err, EditError::Mismatch(m) if m.contains("inside document 1 at values: document 1 at tag reads \"1.3.1\"")),
            "{err}"
        );
        // The inner span does not match the bytes replaced in the file.
        let err = apply_edits(text, &[edit("1.3.0", 0..3)]).unwrap_err();
        assert!(
            matches!(&err, EditError::Mismatch(m) if m.contains("changed beyond")),
            "{err}"
        );
        assert_eq!(
            apply_edits(text, &[edit("1.3.0", 5..10)]).unwrap(),
            "values: |\n  tag: 1.3.0\n"
        );
    }

    /// Naming a document number past the end overflowed. Found by tests/fuzz.rs.
    #[test]
    fn a_document_that_does_not_exist_is_an_error() {
        let edit = Edit {
            doc: usize::MAX,
            path: vec![PathSeg::Key("a".into())],
            span: 3..4,
            new_raw: "2".into(),
            new_value: "2".into(),
            inner: None,
        };
        let err = apply_edits("a: 1\n", &[edit]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("verification failed: document {} at a is gone", usize::MAX)
        );
    }

    #[test]
    fn block_scalars_are_refused() {
        assert!(matches!(
            edit_tag("tag: |\n  1.2.0\n", "1.3.0"),
            Err(EditError::BlockScalar(_))
        ));
    }

    /// The edits of `text`'s value at `key` (a top-level key, or the first item's) to each
    /// `new_raw`, with the fingerprint of the parse that found it.
    fn value_edit(text: &str, path: Vec<PathSeg>, new_raw: &str) -> (Edit, Fingerprint) {
        let (docs, fingerprint) = crate::parse_located_fingerprinted(text).unwrap();
        let mut node = docs[0].root.as_ref().unwrap();
        for seg in &path {
            node = match (seg, node) {
                (PathSeg::Key(k), n) => n.get(k).unwrap(),
                (PathSeg::Index(i), Node::Seq { items, .. }) => &items[*i],
                _ => panic!("no {seg:?} in {text:?}"),
            };
        }
        let s = node.as_scalar().unwrap();
        let new_value = crate::simple::scalar(new_raw).map_or_else(String::new, |s| s.value);
        let edit = Edit {
            doc: 0,
            path,
            span: s.span.clone(),
            new_raw: new_raw.into(),
            new_value,
            inner: None,
        };
        (edit, fingerprint)
    }

    /// Whether the proof without reading the edited text holds for `edit` of `text`.
    fn in_line(text: &str, edit: &Edit, fingerprint: Fingerprint) -> bool {
        let after = splice(text, &[edit]).unwrap();
        fingerprint.read_in_one_pass_from(text)
            && in_their_lines(text, &after, std::slice::from_ref(edit))
    }

    /// The values of `key: value`, `- value` and `- key: value` lines, their comments kept,
    /// are proven in their lines when the new text cannot read as more than itself there;
    /// anything else is left to the proofs that read the edited text.
    #[test]
    fn an_edit_of_a_whole_value_in_its_line_is_proven_without_reading_the_text() {
        let key = |k: &str| PathSeg::Key(k.into());
        let proven = [
            ("tag: 1.0.0\n", vec![key("tag")], "1.1.0"),
            (
                "a: 1\ntag: 1.0.0   # pinned: no\nb: 2\n",
                vec![key("tag")],
                "2.0.0-rc.1",
            ),
            ("tag: \"1.0\" # c\n", vec![key("tag")], "\"1.1\""),
            ("tag: '1.0'\n", vec![key("tag")], "'a: b # c'"),
            ("tag: 1.0.0\n", vec![key("tag")], "\"1.10\""),
            (
                "images:\n- 1.0.0\n",
                vec![key("images"), PathSeg::Index(0)],
                "1.1.0",
            ),
            (
                "images:\n  - name: web\n    newTag: 1.0.0\n",
                vec![key("images"), PathSeg::Index(0), key("newTag")],
                "1.1.0@sha256:abc",
            ),
            (
                "images:\n  - newTag: 1.0.0 # c\n",
                vec![key("images"), PathSeg::Index(0), key("newTag")],
                "v1.1.0",
            ),
        ];
        for (text, path, new_raw) in proven {
            let (edit, fingerprint) = value_edit(text, path, new_raw);
            assert!(in_line(text, &edit, fingerprint), "{text:?} → {new_raw:?}");
            assert_eq!(
                apply_edits_known(text, std::slice::from_ref(&edit), Some(fingerprint)).unwrap(),
                apply_edits(text, &[edit]).unwrap()
            );
        }
        let left = [
            // A plain text with a space, a line break, a trailing `:`, or not starting with
            // a letter or digit.
            ("tag: 1.0.0\n", vec![key("tag")], "1.1.0 # x"),
            ("tag: 1.0.0\n", vec![key("tag")], "1.1.0\nextra: 2"),
            ("tag: 1.0.0\n", vec![key("tag")], "1.1.0\nx"),
            ("tag: '1.0.0'\n", vec![key("tag")], "'1.1.0\nx'"),
            ("tag: 1.0.0\n", vec![key("tag")], "x:"),
            ("tag: 1.0.0\n", vec![key("tag")], "-1"),
            ("tag: 1.0.0\n", vec![key("tag")], "[1]"),
            // A plain value libyaml reads as another (`1.10` is a number).
            ("tag: 1.0.0\n", vec![key("tag")], "1.10"),
            // A value in a flow collection.
            (
                "tags: [1.0.0, x]\n",
                vec![key("tags"), PathSeg::Index(0)],
                "1.1.0",
            ),
        ];
        for (text, path, new_raw) in left {
            let (edit, fingerprint) = value_edit(text, path, new_raw);
            assert!(!in_line(text, &edit, fingerprint), "{text:?} → {new_raw:?}");
        }
        // Part of a value only, or another line's place, is not a whole value.
        let text = "tag: v1.0.0\nnote: x\n";
        let (mut edit, fingerprint) = value_edit(text, vec![key("tag")], "2.0.0");
        edit.span.start += 1;
        assert!(!in_line(text, &edit, fingerprint));
        edit.span.start -= 1;
        edit.span.end -= 1;
        assert!(!in_line(text, &edit, fingerprint));
        edit.span.end += 1;
        assert!(in_line(text, &edit, fingerprint));
        // The fingerprint of another text, or of libyaml's reading, vouches for nothing here.
        let (edit, _) = value_edit(text, vec![key("tag")], "v2.0.0");
        let other = crate::parse_located_fingerprinted("tag: v1.0.0\nnote: y\n")
            .unwrap()
            .1;
        assert!(!in_line(text, &edit, other));
        let (edit, fingerprint) =
            value_edit("tag: 1.0.0\nnote: |\n  x\n", vec![key("tag")], "1.1.0");
        assert_eq!(fingerprint.by, Reader::Libyaml);
        assert!(!in_line("tag: 1.0.0\nnote: |\n  x\n", &edit, fingerprint));
    }

    proptest::proptest! {
        // Most texts are read by libyaml, or the edit is not proven in its line: many cases.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]

        /// Whenever an edit is proven in its line, the full verification (libyaml reading
        /// both texts) proves it too: over lines of keys, items and comments, and new texts
        /// holding what could read as more than a scalar.
        #[test]
        fn an_edit_proven_in_its_line_is_proven_by_reading_both_texts(
            lines in proptest::collection::vec(
                (
                    proptest::sample::select(vec!["", "- ", "- k: ", "  "]),
                    proptest::sample::select(vec!["tag", "a", "on", "1", "x.y"]),
                    proptest::sample::select(vec![
                        "1.0.0", "\"1.0\"", "'1.0'", "v1", "a:b", "x#y", "[1, 2]", "{a: b}", "~",
                    ]),
                    proptest::sample::select(vec!["", " # c", "  # k: v", "#x", " x"]),
                ),
                1..6,
            ),
            pick in proptest::sample::select((0usize..6).collect::<Vec<_>>()),
            new_raw in proptest::sample::select(vec![
                "1.1.0", "v2", "1.10", "2", "true", "a:b", "a: b", "x:", "x #y", "x#y", "a b", "\"q\"",
                "'s'", "\"a: b\"", "'it''s'", "\"a\\\"b\"", "-1", "- x", "[1]", "{}", "*a",
                "&a x", "!t x", "|", ">", "%x", "@x", "`x", "1.0\nb: 2", "1.0\nb", "'a\n  b'", "é",
                "null", "---", "...",
                "1,2", "a]", "a}",
            ]),
        ) {
            let text = text_of_lines(&lines);
            let Ok((docs, fingerprint)) = crate::parse_located_fingerprinted(&text) else {
                return Ok(());
            };
            let mut scalars = Vec::new();
            if let Some(root) = docs[0].root.as_ref() {
                collect_scalars(root, &mut Vec::new(), &mut scalars);
            }
            let Some((path, span)) = scalars.get(pick % scalars.len().max(1)).cloned() else {
                return Ok(());
            };
            let new_value = crate::simple::scalar(new_raw).map_or_else(String::new, |s| s.value);
            let edit = Edit { doc: 0, path, span, new_raw: new_raw.into(), new_value, inner: None };
            let after = splice(&text, &[&edit]).unwrap();
            if fingerprint.read_in_one_pass_from(&text)
                && in_their_lines(&text, &after, std::slice::from_ref(&edit))
            {
                proptest::prop_assert!(
                    verify(&text, &after, std::slice::from_ref(&edit), std::slice::from_ref(&edit)).is_ok(),
                    "{text:?} → {after:?}"
                );
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// What is proven without the text is what the text proves: over lines of keys,
        /// items and comments, two edits (the same scalar twice, two of them, or the same
        /// with two values), each rendered as the plan renders it without the old text;
        /// where the text allows a proof without it, `proven_in_their_lines` says yes only
        /// when `apply_edits_known` makes the new text, and refuses with its very error.
        #[test]
        fn edits_proven_without_their_text_are_the_edits_the_text_proves(
            lines in proptest::collection::vec(
                (
                    proptest::sample::select(vec!["", "- ", "- k: ", "  "]),
                    proptest::sample::select(vec!["tag", "a", "on", "1"]),
                    proptest::sample::select(vec![
                        "1.0.0", "\"1.0\"", "'1.0'", "v1", "a:b", "10", "~", "{a: b}", "*x",
                    ]),
                    proptest::sample::select(vec!["", " # c", "#x", " x"]),
                ),
                1..5,
            ),
            picks in (0usize..5, 0usize..5),
            values in (
                proptest::sample::select(vec!["1.1.0", "v2", "1.10", "20", "true", "a: b", "x #y", "_x", "é", "it's", "a\"b"]),
                proptest::sample::select(vec!["1.1.0", "2.0.0", "30"]),
            ),
            // Some edits written as they come (not as the plan renders them): new texts
            // that read as more than a scalar, or as another value, in the line.
            raw in proptest::option::of(proptest::sample::select(vec![
                "a: b", "x #y", "[1]", "{}", "- x", "*a", "1.0\nb: 2", "'a\n  b'", "\"q", "1.10", "true",
            ])),
        ) {
            let text = text_of_lines(&lines);
            let Ok((docs, fingerprint)) = crate::parse_located_fingerprinted(&text) else {
                return Ok(());
            };
            if !provable_in_lines(&text, Some(fingerprint)) {
                return Ok(());
            }
            let mut scalars = Vec::new();
            if let Some(root) = docs[0].root.as_ref() {
                collect_scalars(root, &mut Vec::new(), &mut scalars);
            }
            let n = scalars.len().max(1);
            let mut edits = Vec::new();
            for (pick, value) in [(picks.0, values.0), (picks.1, values.1)] {
                let Some((path, span)) = scalars.get(pick % n).cloned() else {
                    return Ok(());
                };
                if !alone_in_its_line(&text, &span) {
                    return Ok(());
                }
                let style = style_at(&text, &span);
                let (new_raw, new_value) = match raw.filter(|_| edits.is_empty()) {
                    Some(raw) => {
                        let read = crate::simple::scalar(raw).map_or_else(String::new, |s| s.value);
                        (raw.to_string(), read)
                    }
                    None => match render_alone(style, value) {
                        Some(rendered) => (rendered, value.to_string()),
                        None => return Ok(()),
                    },
                };
                edits.push(Edit { doc: 0, path, span, new_raw, new_value, inner: None });
            }
            // What it renders without the old text is what is rendered with it.
            for e in &edits {
                let style = style_at(&text, &e.span);
                if let Some(alone) = render_alone(style, &e.new_value) {
                    let old = Scalar { value: String::new(), span: e.span.clone(), style };
                    let with_old = render_scalar(&old, &text[e.span.clone()], &e.new_value);
                    proptest::prop_assert_eq!(Some(alone), with_old.ok());
                }
            }
            let with = apply_edits_known(&text, &edits, Some(fingerprint)).map_err(|e| e.to_string());
            match proven_in_their_lines(&edits).map_err(|e| e.to_string()) {
                // Exactly the proof in the line, on the text.
                Ok(proven) => {
                    let once = one_per_span(&edits).unwrap();
                    let after = splice(&text, &once).unwrap();
                    proptest::prop_assert_eq!(proven, in_their_lines(&text, &after, &once));
                    if proven {
                        proptest::prop_assert!(with.is_ok(), "{text:?} {edits:?}: {with:?}");
                    }
                }
                Err(e) => proptest::prop_assert_eq!(Err(e), with.map(|_| ())),
            }
        }
    }

    /// The style of the scalar at `span` (the property tests' texts hold no block scalar).
    fn style_at(text: &str, span: &Range<usize>) -> Style {
        match text.as_bytes().get(span.start) {
            Some(b'"') => Style::Double,
            Some(b'\'') => Style::Single,
            _ => Style::Plain,
        }
    }

    /// A text of the property tests' lines: each a key's value, a list item or an item's
    /// key, by its lead, with what follows the value.
    fn text_of_lines(lines: &[(&str, &str, &str, &str)]) -> String {
        lines
            .iter()
            .enumerate()
            .map(|(i, (lead, key, value, tail))| match *lead {
                "" => format!("{key}{i}: {value}{tail}\n"),
                "  " => format!("{key}{i}:\n  - {value}{tail}\n"),
                "- k: " => format!("l{i}:\n- {key}: {value}{tail}\n  b: 1\n"),
                _ => format!("l{i}:\n{lead}{value}{tail}\n"),
            })
            .collect()
    }

    /// Every scalar below `node`, with its path and span.
    fn collect_scalars(
        node: &Node,
        path: &mut Vec<PathSeg>,
        out: &mut Vec<(Vec<PathSeg>, Range<usize>)>,
    ) {
        match node {
            Node::Scalar(s) => out.push((path.clone(), s.span.clone())),
            Node::Map { entries, .. } => {
                for (k, v) in entries {
                    path.push(PathSeg::Key(k.name.clone()));
                    collect_scalars(v, path, out);
                    path.pop();
                }
            }
            Node::Seq { items, .. } => {
                for (i, v) in items.iter().enumerate() {
                    path.push(PathSeg::Index(i));
                    collect_scalars(v, path, out);
                    path.pop();
                }
            }
            Node::Other { .. } => {}
        }
    }
}
