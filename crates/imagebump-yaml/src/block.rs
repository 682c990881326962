//! YAML written inside a literal block scalar (`values: |`), as Argo CD Applications hold
//! Helm values in `helm.values`: the decoded text, and where each of its bytes is in the
//! file, so that a scalar inside it is read with its file position and rewritten in place.
//!
//! In a literal block scalar every content line is the file's line minus a fixed
//! indentation, so a span inside one decoded line is a span of the file, byte for byte.
//! Folded (`>`) and flow scalars fold or escape their lines: they are not mapped.

use std::ops::Range;

use super::located::LineIndex;

/// The content of one literal block scalar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockText {
    /// The decoded string, as YAML reads it (indentation removed, line breaks as `\n`).
    pub text: String,
    /// Each content line: its start in `text`, its start in the file, its length.
    lines: Vec<Line>,
    /// 0-based line of the file holding the first content line.
    first_line: usize,
    /// The content's indentation in the file.
    indent: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Line {
    text: usize,
    file: usize,
    len: usize,
}

/// The header after `|`: an indentation indicator (1-9) and a chomping indicator, in
/// either order, then spaces and an optional comment. `None` when it is not that.
fn indentation_indicator(header: &str) -> Option<Option<usize>> {
    let flags = header.split(['#', ' ', '\t']).next().unwrap_or_default();
    let after = header.strip_prefix(flags)?;
    if flags.len() > 2 || after.trim_start().split('#').next() != Some("") {
        return None;
    }
    let mut digit = None;
    for c in flags.chars() {
        match c {
            '-' | '+' => {}
            '1'..='9' if digit.is_none() => digit = c.to_digit(10).map(|d| d as usize),
            _ => return None,
        }
    }
    Some(digit)
}

/// The leading spaces of `line`.
fn spaces(line: &str) -> usize {
    line.len()
        .saturating_sub(line.trim_start_matches(' ').len())
}

impl BlockText {
    /// Read the literal block scalar whose text, header included, is `file[span]` and whose
    /// value YAML decodes as `decoded`. `None` for any other scalar, and when the file's
    /// lines do not give back `decoded` (positions would then be wrong).
    pub fn literal(file: &str, span: Range<usize>, decoded: &str) -> Option<BlockText> {
        let raw = file.get(span.clone())?.strip_prefix('|')?;
        let (header, content) = raw.split_once('\n')?;
        let indicator = indentation_indicator(header.trim_end_matches('\r'))?;
        let before = file.get(..span.start)?;
        let line_head = before.rsplit_once('\n').map_or(before, |(_, line)| line);
        // `content` is the end of `file[span]`.
        let content_start = span.end.checked_sub(content.len())?;
        let raw_lines: Vec<(usize, &str)> = content
            .split_inclusive('\n')
            .scan(content_start, |at, l| {
                let start = *at;
                *at = at.saturating_add(l.len());
                Some((start, l.trim_end_matches('\n').trim_end_matches('\r')))
            })
            .collect();
        let indent = match indicator {
            // Relative to the indentation of the node holding the scalar: the key's line.
            Some(d) => spaces(line_head).saturating_add(d),
            None => raw_lines
                .iter()
                .find(|(_, l)| !l.trim_start_matches(' ').is_empty())
                .map(|(_, l)| spaces(l))?,
        };
        let mut lines = Vec::with_capacity(raw_lines.len());
        let mut built = String::with_capacity(decoded.len());
        for (start, l) in raw_lines {
            let (file_at, content) = if spaces(l) >= indent {
                (start.saturating_add(indent), l.get(indent..)?)
            } else if l.trim_start_matches(' ').is_empty() {
                (start.saturating_add(l.len()), "")
            } else {
                return None;
            };
            lines.push(Line {
                text: built.len(),
                file: file_at,
                len: content.len(),
            });
            built.push_str(content);
            built.push('\n');
        }
        if built.trim_end_matches('\n') != decoded.trim_end_matches('\n') {
            return None;
        }
        Some(BlockText {
            text: decoded.to_string(),
            lines,
            first_line: file.get(..content_start)?.matches('\n').count(),
            indent,
        })
    }

    /// Where `inner` (a span of [`Self::text`]) is in the file; `None` unless it lies
    /// within one line.
    pub fn file_span(&self, inner: Range<usize>) -> Option<Range<usize>> {
        let i = self
            .lines
            .partition_point(|l| l.text <= inner.start)
            .checked_sub(1)?;
        let line = self.lines.get(i)?;
        let offset = inner.start.checked_sub(line.text)?;
        let len = inner.end.checked_sub(inner.start)?;
        if offset.checked_add(len)? > line.len {
            return None;
        }
        let start = line.file.checked_add(offset)?;
        Some(start..start.checked_add(len)?)
    }

    /// A line and column of [`Self::text`] (a parse error's) as the file's.
    pub fn position(&self, line: usize, column: usize) -> (usize, usize) {
        (
            line.saturating_add(self.first_line),
            column.saturating_add(self.indent),
        )
    }

    /// Offsets of [`Self::text`] → the file's lines and columns.
    pub fn line_index(&self) -> LineIndex {
        LineIndex::shifted(&self.text, self.first_line, self.indent)
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse_located;
    use super::*;

    /// The block scalar at `values`, `a.values` or `a[0].values`.
    fn block(file: &str) -> Option<BlockText> {
        use crate::PathSeg::{Index, Key};
        let docs = parse_located(file).unwrap();
        let decoded: yaml_serde::Value = yaml_serde::from_str(file).unwrap();
        let values = Key("values".into());
        let a = Key("a".into());
        for path in [
            vec![values.clone()],
            vec![a.clone(), values.clone()],
            vec![a, Index(0), values],
        ] {
            let Some(node) = docs[0].root.as_ref().unwrap().at(&path) else {
                continue;
            };
            let s = node.as_scalar().unwrap();
            let v = path.iter().fold(&decoded, |v, seg| match seg {
                Key(k) => &v[k.as_str()],
                Index(i) => &v[*i],
            });
            return BlockText::literal(file, s.span.clone(), v.as_str().unwrap());
        }
        panic!("no values key in {file:?}")
    }

    fn file_text_of(file: &str, b: &BlockText, needle: &str) -> String {
        let at = b.text.find(needle).unwrap();
        let span = b.file_span(at..at + needle.len()).unwrap();
        file[span].to_string()
    }

    #[test]
    fn spans_of_the_text_are_spans_of_the_file() {
        for file in [
            "a:\n  values: |\n    image:\n      tag: 1.0 # c\n\n    x: \"q\"\n  other: 2\n",
            "a:\n  values: |-\n    image:\n      tag: 1.0\n    x: \"q\"\n\n\n  other: 2\n",
            "a:\n  values: |+ # keep\n    image:\n      tag: 1.0\n    x: \"q\"\n\n",
            "a:\r\n  values: |2\r\n      image:\r\n        tag: 1.0\r\n    x: \"q\"\r\n",
            "a:\n  - values: |\n      image:\n        tag: 1.0\n      x: \"q\"",
        ] {
            let b = block(file).unwrap_or_else(|| panic!("{file:?}"));
            assert_eq!(file_text_of(file, &b, "1.0"), "1.0", "{file:?}");
            assert_eq!(file_text_of(file, &b, "\"q\""), "\"q\"", "{file:?}");
            let at = b.text.find("1.0").unwrap();
            let (line, column) = b.line_index().line_col(at);
            let span = b.file_span(at..at + 3).unwrap();
            assert_eq!(LineIndex::new(file).line_col(span.start), (line, column));
        }
    }

    #[test]
    fn only_literal_block_scalars() {
        assert!(block("values: >\n  image:\n    tag: 1.0\n").is_none());
        assert!(block("values: \"image:\\n  tag: 1.0\\n\"\n").is_none());
        assert!(block("values: |\n  image: {tag: 1.0}\n").is_some());
    }

    #[test]
    fn a_span_across_lines_has_no_file_span() {
        let b = block("values: |\n  a: 1\n  b: 2\n").unwrap();
        assert_eq!(b.text, "a: 1\nb: 2\n");
        assert_eq!(b.file_span(3..7), None);
        assert_eq!(b.file_span(3..4), Some(15..16));
        assert_eq!(b.file_span(Range { start: 4, end: 3 }), None);
        assert_eq!(b.file_span(usize::MAX..usize::MAX), None);
    }

    #[test]
    fn positions_near_the_top_saturate() {
        let b = block("values: |\n  a: 1\n").unwrap();
        assert_eq!(b.position(1, 1), (2, 3));
        assert_eq!(b.position(usize::MAX, usize::MAX), (usize::MAX, usize::MAX));
    }
}
