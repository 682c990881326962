//! The run report as JSON, byte for byte as [`write_json`] (so serde_json) writes it, with
//! its two long lists, the updates and the references not updated, written by hand: they
//! are most of a large run's report, written by one thread after everything else is
//! done, and serde spends most of that time on the same keys row after row
//! (docs/performance.md).
//!
//! The rest of the report (its frame) is still serde's: it is written with those two lists
//! and the change sets empty, and each list is written where its `[]` stands (the change
//! sets by serde, straight to the output, so that no list is held in memory as text). A
//! field added to the report is written by serde as before; only a change to a row's
//! fields needs this file too, and debug builds (so every test that prints a report)
//! compare the two writings.

use std::io::{self, Write};

use super::output::{write_json, write_json_at};
use crate::discover::{RefKind, Unmanaged, OVERRIDDEN_BY};
use crate::report::{NotUpdated, Reason, RunReport};

/// `report` on stdout, as [`super::output::print_json`] prints it.
pub fn print(report: &RunReport) {
    super::output::print_json_with(|out| write_run_report(out, report));
}

/// `report` as [`write_json`] writes it.
pub fn write_run_report<W: Write>(out: &mut W, report: &RunReport) -> io::Result<()> {
    if cfg!(debug_assertions) {
        let (mut ours, mut serdes) = (Vec::new(), Vec::new());
        by_hand(&mut ours, report)?;
        write_json(&mut serdes, report)?;
        debug_assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&serdes),
            "the report's rows written by hand differ from serde's"
        );
        return out.write_all(&ours);
    }
    by_hand(out, report)
}

/// A key of the report's top level, as its frame has it when its list is empty.
const UPDATES: &[u8] = b"\n  \"updates\": []";
const CHANGE_SETS: &[u8] = b"\n  \"changeSets\": []";
const NOT_UPDATED: &[u8] = b"\n  \"notUpdated\": []";

/// No change sets: the frame's empty list.
const NO_CHANGE_SETS: crate::chunked::Chunked<crate::plan::ChangeSet> =
    crate::chunked::Chunked::new();

fn by_hand<W: Write>(out: &mut W, report: &RunReport) -> io::Result<()> {
    // The frame is a few hundred bytes: the long lists are written straight to `out`.
    let frame = RunReport {
        updates: crate::plan::NO_ROWS,
        change_sets: &NO_CHANGE_SETS,
        not_updated: report.not_updated.none(),
        ..report.clone()
    };
    let mut text = Vec::new();
    write_json(&mut text, &frame)?;
    // Each list's `[]`, found once (a line break inside a string is written `\n`, so a
    // line that begins with two spaces and a quote is a key of the top level), in the
    // order of the report's fields.
    let places = [UPDATES, CHANGE_SETS, NOT_UPDATED].map(|key| empty_list(&text, key));
    let [Some(u), Some(c), Some(n)] = places else {
        return write_json(out, report);
    };
    let (Some(before), Some(updated), Some(sets), Some(after)) = (
        text.get(..u),
        text.get(u.saturating_add(2)..c),
        text.get(c.saturating_add(2)..n),
        text.get(n.saturating_add(2)..),
    ) else {
        return write_json(out, report);
    };
    out.write_all(before)?;
    updates(out, report.updates)?;
    out.write_all(updated)?;
    // Change sets are serde's, as a list one level deep.
    write_json_at(out, report.change_sets, 1)?;
    out.write_all(sets)?;
    not_updated(out, report.not_updated.iter())?;
    out.write_all(after)
}

/// Where the `[]` of `key` is in `text`, when `key` is there once.
fn empty_list(text: &[u8], key: &[u8]) -> Option<usize> {
    let mut found = text
        .windows(key.len())
        .enumerate()
        .filter(|(_, w)| *w == key);
    let (at, _) = found.next()?;
    if found.next().is_some() {
        return None;
    }
    Some(at.saturating_add(key.len()).saturating_sub(2))
}

/// The updates, a list one level deep: each row an object two levels deep.
fn updates<W: Write>(out: &mut W, rows: crate::plan::Rows) -> io::Result<()> {
    let mut kinds = Kinds::default();
    list(out, rows.iter(), |out, u| {
        let u = &*u;
        if u.verified.is_some() || u.app_version.is_some() {
            // Rare, and objects of their own: serde writes the whole row.
            return write_json_at(out, u, 2);
        }
        string_field(out, b"{\n      \"file\": ", &u.file)?;
        number_field(out, b",\n      \"line\": ", u.line as usize)?;
        number_field(out, b",\n      \"column\": ", u.column as usize)?;
        out.write_all(b",\n      \"kind\": ")?;
        out.write_all(kinds.text(u.kind))?;
        string_field(out, b",\n      \"image\": ", &u.image)?;
        string_field(out, b",\n      \"name\": ", &u.name)?;
        string_field(out, b",\n      \"from\": ", &u.from)?;
        string_field(out, b",\n      \"to\": ", &u.to)?;
        string_field(out, b",\n      \"group\": ", &u.group)?;
        if let Some(w) = &u.written_to {
            string_field(out, b",\n      \"writtenTo\": ", w)?;
        }
        out.write_all(b"\n    }")
    })
}

/// The references not updated, a list one level deep.
fn not_updated<'a, W: Write>(
    out: &mut W,
    rows: impl Iterator<Item = NotUpdated<'a>>,
) -> io::Result<()> {
    list(out, rows, |out, r| {
        string_field(out, b"{\n      \"file\": ", r.file)?;
        number_field(out, b",\n      \"line\": ", r.line)?;
        // An image is written as its text (`report::as_text`: its `Display`).
        out.write_all(b",\n      \"image\": \"")?;
        display_contents(out, r.image)?;
        out.write_all(b"\"")?;
        match r.tag {
            Some(t) => string_field(out, b",\n      \"tag\": ", t)?,
            None => out.write_all(b",\n      \"tag\": null")?,
        }
        string_field(out, b",\n      \"status\": ", r.status)?;
        if let Some(reason) = r.reason {
            out.write_all(b",\n      \"reason\": \"")?;
            match reason {
                // Its pieces as its `Display` writes them, without the formatting machinery
                // (15,000 rows at 10,000 apps).
                Reason::Unmanaged(Unmanaged::OverriddenBy { file, line }) => {
                    string_contents(out, OVERRIDDEN_BY)?;
                    string_contents(out, file)?;
                    out.write_all(b":")?;
                    number(out, *line as usize)?;
                }
                reason => display_contents(out, &reason)?,
            }
            out.write_all(b"\"")?;
        }
        out.write_all(b"\n    }")
    })
}

/// A list one level deep: `[]` when empty, else each row on its own line.
fn list<W: Write, T>(
    out: &mut W,
    rows: impl Iterator<Item = T>,
    mut row: impl FnMut(&mut W, T) -> io::Result<()>,
) -> io::Result<()> {
    let mut first = true;
    for r in rows {
        out.write_all(if first { b"[\n    " } else { b",\n    " })?;
        first = false;
        row(out, r)?;
    }
    out.write_all(if first { b"[]" } else { b"\n  ]" })
}

/// A key (with what comes before it) and its string value.
fn string_field<W: Write>(out: &mut W, key: &[u8], value: &str) -> io::Result<()> {
    out.write_all(key)?;
    string(out, value)
}

/// A key (with what comes before it) and its number.
fn number_field<W: Write>(out: &mut W, key: &[u8], n: usize) -> io::Result<()> {
    out.write_all(key)?;
    number(out, n)
}

/// What `value`'s `Display` writes, escaped as in [`string`] (as serde's `collect_str`
/// writes it: escaping is byte by byte, so a piece at a time is the same).
fn display_contents<W: Write>(out: &mut W, value: &impl std::fmt::Display) -> io::Result<()> {
    struct Escaped<'w, W> {
        out: &'w mut W,
        failed: Option<io::Error>,
    }
    impl<W: Write> std::fmt::Write for Escaped<'_, W> {
        fn write_str(&mut self, piece: &str) -> std::fmt::Result {
            string_contents(self.out, piece).map_err(|e| {
                self.failed = Some(e);
                std::fmt::Error
            })
        }
    }
    let mut escaped = Escaped { out, failed: None };
    match std::fmt::write(&mut escaped, format_args!("{value}")) {
        Ok(()) => Ok(()),
        Err(_) => Err(escaped
            .failed
            .unwrap_or_else(|| io::Error::other("a value could not be written as text"))),
    }
}

fn number<W: Write>(out: &mut W, n: usize) -> io::Result<()> {
    out.write_all(itoa::Buffer::new().format(n).as_bytes())
}

/// `s` as a JSON string, escaped as serde_json escapes it: `"` and `\` with a backslash,
/// the control characters with their short escape or `\u00xx`, everything else as it is.
fn string<W: Write>(out: &mut W, s: &str) -> io::Result<()> {
    out.write_all(b"\"")?;
    string_contents(out, s)?;
    out.write_all(b"\"")
}

/// What [`string`] writes between the quotes.
fn string_contents<W: Write>(out: &mut W, s: &str) -> io::Result<()> {
    let bytes = s.as_bytes();
    if !needs_escapes(bytes) {
        return out.write_all(bytes);
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut run = 0;
    for (at, &b) in bytes.iter().enumerate() {
        let short: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            _ if plain(&b) => continue,
            _ => b"",
        };
        out.write_all(bytes.get(run..at).unwrap_or_default())?;
        run = at.saturating_add(1);
        if short.is_empty() {
            let hex = |nibble: u8| HEX.get(usize::from(nibble)).copied().unwrap_or(b'0');
            out.write_all(&[b'\\', b'u', b'0', b'0', hex(b >> 4), hex(b & 0xf)])?;
        } else {
            out.write_all(short)?;
        }
    }
    out.write_all(bytes.get(run..).unwrap_or_default())
}

/// A byte [`string`] writes as it is: not a control character, a quote or a backslash.
fn plain(b: &u8) -> bool {
    *b >= 0x20 && *b != b'"' && *b != b'\\'
}

/// Whether any byte of `bytes` is not [`plain`]: eight bytes at a time, as words (a byte
/// below 0x20, or equal to a quote or a backslash, leaves its high bit set in the
/// classic tests below; they are exact for whether any byte does).
fn needs_escapes(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const SPACES: u64 = 0x2020_2020_2020_2020;
    const QUOTES: u64 = 0x2222_2222_2222_2222;
    const BACKSLASHES: u64 = 0x5c5c_5c5c_5c5c_5c5c;
    let below = |v: u64, n: u64| v.wrapping_sub(n) & !v & HIGH;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(word);
        let v = u64::from_le_bytes(eight);
        if below(v, SPACES) | below(v ^ QUOTES, ONES) | below(v ^ BACKSLASHES, ONES) != 0 {
            return true;
        }
    }
    !words.remainder().iter().all(plain)
}

/// Each kind's JSON text, as serde writes it (asked of serde once per kind).
#[derive(Default)]
struct Kinds(Vec<(RefKind, Vec<u8>)>);

impl Kinds {
    fn text(&mut self, kind: RefKind) -> &[u8] {
        let at = match self.0.iter().position(|(k, _)| *k == kind) {
            Some(at) => at,
            None => {
                let text = serde_json::to_vec(&kind).unwrap_or_else(|_| b"null".to_vec());
                self.0.push((kind, text));
                self.0.len().saturating_sub(1)
            }
        };
        self.0.get(at).map_or(b"null", |(_, t)| t.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Update;
    use imagebump_model::name::ImageName;
    use proptest::prelude::*;

    /// Text with every kind of character serde_json escapes, and some it does not.
    fn text() -> impl Strategy<Value = String> {
        "[a-z0-9/.:@\"\\\\\n\r\t\u{1}\u{8}\u{c}\u{1f}\u{7f}é☃ -]{0,24}"
    }

    /// A status is one of a few words; one with characters to escape checks the escaping.
    fn status() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec!["up-to-date", "edit-refused", "a \"b\"\\\n\u{1}"])
    }

    fn kind() -> impl Strategy<Value = RefKind> {
        prop::sample::select(vec![
            RefKind::Kustomize,
            RefKind::HelmValues,
            RefKind::Workload,
            RefKind::ArgoHelmParameter,
            RefKind::HelmChart,
            RefKind::ChartDefault,
        ])
    }

    fn update() -> impl Strategy<Value = Update> {
        let names = (text(), text(), text(), text(), text(), text());
        let rest = (
            any::<u32>(),
            any::<u32>(),
            kind(),
            prop::option::of(text()),
            prop::option::weighted(0.1, (text(), text())),
            prop::option::weighted(0.1, prop::option::of(text())),
        );
        (names, rest).prop_map(
            |((file, image, name, from, to, group), (line, column, kind, w, v, a))| Update {
                file: file.into(),
                line,
                column,
                kind,
                image: image.into(),
                name: name.into(),
                from: from.into(),
                to: to.into(),
                group: group.into(),
                written_to: w.map(Into::into),
                automerge: false,
                verified: v
                    .map(|(digest, signer)| Box::new(crate::verify::Verified { digest, signer })),
                app_version: a.map(|to| {
                    Box::new(crate::chart::app_version::AppVersionChange { from: None, to })
                }),
            },
        )
    }

    /// What serde writes for `value` as a list one level deep.
    fn serdes<T: serde::Serialize + ?Sized>(value: &T) -> Vec<u8> {
        let mut out = Vec::new();
        write_json_at(&mut out, value, 1).expect("writes to memory");
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn updates_are_written_as_serde_writes_them(rows in prop::collection::vec(update(), 0..4)) {
            let mut ours = Vec::new();
            let kept: crate::chunked::Chunked<Update> = rows.clone().into();
            updates(&mut ours, crate::plan::Rows::Kept(&kept)).expect("writes to memory");
            let theirs = serdes(&rows);
            prop_assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&theirs));
        }

        #[test]
        fn rows_not_updated_are_written_as_serde_writes_them(
            rows in prop::collection::vec(
                (text(), any::<usize>(), text(), text(), prop::option::of(text()), prop::option::of(text()), status()),
                0..4,
            ),
        ) {
            let images: Vec<ImageName> = (rows.iter())
                .map(|r| ImageName { registry: r.2.clone(), repository: r.3.clone() })
                .collect();
            // Every other row's reason is an overriding entry's, spelled as it is written.
            let overridden: Vec<crate::discover::Unmanaged> = (rows.iter())
                .map(|r| crate::discover::Unmanaged::OverriddenBy {
                    file: r.0.as_str().into(),
                    line: r.1 as u32,
                })
                .collect();
            let made: Vec<NotUpdated> = (rows.iter().zip(&images).zip(&overridden).enumerate())
                .map(|(i, ((r, image), by))| NotUpdated {
                    file: &r.0,
                    line: r.1,
                    image,
                    tag: r.4.as_deref(),
                    status: r.6,
                    reason: match i % 2 {
                        0 => r.5.as_deref().map(crate::report::Reason::Text),
                        _ => Some(crate::report::Reason::Unmanaged(by)),
                    },
                })
                .collect();
            let mut ours = Vec::new();
            not_updated(&mut ours, made.iter().copied()).expect("writes to memory");
            let theirs = serdes(&made);
            prop_assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&theirs));
        }
    }

    #[test]
    fn a_key_found_twice_or_never_is_not_a_place_to_write_a_list() {
        let text = b"{\n  \"updates\": [],\n  \"notUpdated\": []\n}";
        assert_eq!(empty_list(text, UPDATES), Some(15));
        assert_eq!(text.get(15..17), Some(&b"[]"[..]));
        assert_eq!(empty_list(b"{\n  \"other\": []\n}", UPDATES), None);
        let twice = b"{\n  \"updates\": [],\n  \"updates\": []\n}";
        assert_eq!(empty_list(twice, UPDATES), None);
    }
}
