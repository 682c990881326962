//! Block scalars written on one content line (`>-`, `>`, `|-`, `|` followed by one line):
//! the line's text is the value (with the line break that `>` and `|` keep after it), so
//! an edit replaces that text alone and leaves the header, the indentation and the line
//! break as they are. A block scalar over several lines folds or joins them, and one with
//! an indentation indicator or keep chomping (`+`) says more than its line: neither is
//! edited.

use std::ops::Range;

use super::located::{Scalar, Style};

/// The one content line of a block scalar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OneLineBlock {
    /// The line's text in the scalar's raw text (from the header on), indentation excluded.
    pub content: Range<usize>,
    /// Clip chomping (`>`, `|`): the value ends with the line break after the text.
    pub line_break: bool,
}

impl OneLineBlock {
    /// The block scalar whose raw text (header included) is `raw`, when it is one line of
    /// text after a header of an indicator and optional `-` (and an optional comment).
    pub fn of(raw: &str) -> Option<OneLineBlock> {
        let (header, body) = raw.split_once('\n')?;
        let header = header.strip_suffix('\r').unwrap_or(header);
        let indicator = header.split(" #").next().unwrap_or(header).trim_end();
        let line_break = match indicator {
            ">-" | "|-" => false,
            ">" | "|" => true,
            _ => return None,
        };
        let start = raw.len().saturating_sub(body.len());
        let mut content = None;
        let mut at = start;
        for line in body.split('\n') {
            let text = line.strip_suffix('\r').unwrap_or(line);
            let indent = text
                .len()
                .saturating_sub(text.trim_start_matches(' ').len());
            if !text.trim().is_empty() {
                if content.is_some() {
                    return None;
                }
                content = Some(at.saturating_add(indent)..at.saturating_add(text.len()));
            }
            at = at.saturating_add(line.len()).saturating_add(1);
        }
        Some(OneLineBlock {
            content: content?,
            line_break,
        })
    }

    /// What the value holds after the line's text.
    pub fn suffix(&self) -> &'static str {
        if self.line_break {
            "\n"
        } else {
            ""
        }
    }

    /// `raw` with the line's text replaced by `text`; `None` when `text` cannot be that line
    /// (empty, several lines, or starting or ending with blanks that would be read as
    /// indentation or dropped).
    pub fn replaced(&self, raw: &str, text: &str) -> Option<String> {
        let fits = !text.is_empty()
            && !text.contains(['\n', '\r'])
            && text.trim() == text
            && raw.is_char_boundary(self.content.start)
            && raw.is_char_boundary(self.content.end);
        if !fits {
            return None;
        }
        let mut out = String::with_capacity(raw.len().saturating_add(text.len()));
        out.push_str(raw.get(..self.content.start)?);
        out.push_str(text);
        out.push_str(raw.get(self.content.end..)?);
        Some(out)
    }
}

/// The text a scalar holds on its one line: its value, or for a block scalar on one line
/// that line's text (without the line break `>` and `|` add). `None` for a block scalar
/// that is not one line of text (several lines, keep chomping, an indentation indicator),
/// or whose value is not its line's text. `text` is the file the scalar was read from.
pub fn one_line_value<'s>(s: &'s Scalar, text: &str) -> Option<&'s str> {
    if s.style != Style::Block {
        return Some(&s.value);
    }
    let raw = text.get(s.span.clone())?;
    let block = OneLineBlock::of(raw)?;
    let line = raw.get(block.content.clone())?;
    s.value
        .strip_suffix(block.suffix())
        .filter(|value| *value == line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{apply_edits, parse_located, render_scalar, Edit, PathSeg};

    fn scalar(text: &str) -> Scalar {
        let docs = parse_located(text).unwrap();
        let node = docs[0].root.as_ref().unwrap().get("image").unwrap();
        node.as_scalar().unwrap().clone()
    }

    /// `image:` of `text` edited to `new` (its one-line text), as the plan edits it.
    fn edited(text: &str, new: &str) -> Result<String, String> {
        let s = scalar(text);
        let raw = &text[s.span.clone()];
        let suffix = OneLineBlock::of(raw).map_or("", |b| b.suffix());
        let value = format!("{new}{suffix}");
        let new_raw = render_scalar(&s, raw, &value).map_err(|e| e.to_string())?;
        let edit = Edit {
            doc: 0,
            path: vec![PathSeg::Key("image".into())],
            span: s.span.clone(),
            new_raw,
            new_value: value,
            inner: None,
        };
        apply_edits(text, &[edit]).map_err(|e| e.to_string())
    }

    #[test]
    fn each_one_line_block_style_changes_only_its_text() {
        for header in [">-", ">", "|-", "|", ">- # folded", "|\r"] {
            let nl = if header.ends_with('\r') { "\r\n" } else { "\n" };
            let header = header.trim_end_matches('\r');
            let text = format!("image: {header}{nl}  nginx:1.25.0{nl}other: 1{nl}");
            let s = scalar(&text);
            assert_eq!(one_line_value(&s, &text), Some("nginx:1.25.0"), "{text:?}");
            let want = text.replace("nginx:1.25.0", "nginx:1.26.0");
            assert_eq!(edited(&text, "nginx:1.26.0"), Ok(want), "{text:?}");
        }
    }

    /// A comment or a blank line after the block is not its text, and stays.
    #[test]
    fn what_follows_the_block_stays_as_it_is() {
        let text = "image: >-\n  nginx:1.25.0\n\n# the proxy\nother: 1\n";
        assert_eq!(one_line_value(&scalar(text), text), Some("nginx:1.25.0"));
        let want = text.replace("1.25.0", "1.26.0");
        assert_eq!(edited(text, "nginx:1.26.0"), Ok(want));
    }

    #[test]
    fn a_block_over_several_lines_or_keeping_breaks_is_not_one_line() {
        for text in [
            "image: >-\n  nginx:1.25.0\n  extra\n",
            "image: |\n  nginx:1.25.0\n  # more\n",
            "image: >+\n  nginx:1.25.0\n\n",
            "image: >2-\n   nginx:1.25.0\n",
            "image: >-\n\n  nginx:1.25.0\n",
        ] {
            let s = scalar(text);
            assert_eq!(one_line_value(&s, text), None, "{text:?}");
            assert!(edited(text, "nginx:1.26.0").is_err(), "{text:?}");
        }
    }

    proptest::proptest! {
        /// In every one-line block, as a mapping's value or a list item, among blank lines
        /// and comments: the edit changes the old text's bytes alone, and reads back as the
        /// new text with the block's line break.
        #[test]
        fn an_edit_of_any_one_line_block_changes_only_its_text(
            header in proptest::sample::select(vec![">-", ">", "|-", "|", ">- # image"]),
            item: bool,
            indent in 1usize..6,
            crlf: bool,
            blank_lines in 0usize..3,
            new in "[a-z]{1,8}(/[a-z]{1,8}){0,2}:v?[0-9]{1,3}(\\.[0-9]{1,3}){0,2}",
        ) {
            let nl = if crlf { "\r\n" } else { "\n" };
            let pad = " ".repeat(indent);
            let (key, lead) = if item { ("images", format!("{nl}  - ")) } else { ("image", " ".into()) };
            let mut text = format!("{key}:{lead}{header}{nl}  {pad}ghcr.io/acme/app:1.25.0{nl}");
            text.push_str(&nl.repeat(blank_lines));
            text.push_str(&format!("# after{nl}other: 1{nl}"));
            let docs = parse_located(&text).unwrap();
            let node = docs[0].root.as_ref().unwrap().get(key).unwrap();
            let (s, path) = match node {
                crate::Node::Seq { items, .. } => (
                    items[0].as_scalar().unwrap().clone(),
                    vec![PathSeg::Key(key.into()), PathSeg::Index(0)],
                ),
                n => (n.as_scalar().unwrap().clone(), vec![PathSeg::Key(key.into())]),
            };
            proptest::prop_assert_eq!(one_line_value(&s, &text), Some("ghcr.io/acme/app:1.25.0"));
            let raw = &text[s.span.clone()];
            let suffix = OneLineBlock::of(raw).unwrap().suffix();
            let value = format!("{new}{suffix}");
            let new_raw = render_scalar(&s, raw, &value).unwrap();
            let edit = Edit { doc: 0, path, span: s.span.clone(), new_raw, new_value: value, inner: None };
            let after = apply_edits(&text, &[edit]).unwrap();
            proptest::prop_assert_eq!(after, text.replace("ghcr.io/acme/app:1.25.0", &new));
        }
    }

    #[test]
    fn a_new_text_that_cannot_be_the_line_is_refused() {
        let text = "image: >-\n  nginx:1.25.0\n";
        for new in ["", " nginx:1.26.0", "nginx:1.26.0 ", "nginx\n:1.26.0"] {
            assert!(edited(text, new).is_err(), "{new:?}");
        }
    }

    #[test]
    fn quoted_and_plain_values_are_their_own_line() {
        for text in [
            "image: 'nginx:1.25.0'\n",
            "image: \"nginx:1.25.0\"\n",
            "image: nginx:1.25.0\n",
        ] {
            assert_eq!(one_line_value(&scalar(text), text), Some("nginx:1.25.0"));
        }
    }
}
