//! The located view of plain block YAML in one pass over the text, without building
//! yaml-edit's lossless tree (the most of what reading a file cost).
//!
//! It reads the subset that nearly every manifest, kustomization and values file is
//! written in: block mappings and sequences, plain scalars and quoted ones without escapes
//! on one line, flow collections on one line, comments, one leading `---`. Anything else
//! (anchors, aliases, tags, block scalars, multi-line scalars, empty values, escapes,
//! complex or quoted keys, merge keys, directives, tabs, carriage returns, several
//! documents) answers `None`, and the caller reads the text with libyaml and yaml-edit as
//! before.
//!
//! It is strict: it answers only for a text that libyaml accepts and reads the same way
//! (each scalar typed as libyaml types it), so that its answer stands for libyaml's check
//! and an edited text read by it proves the edit (`edit.rs`). Every character is one libyaml
//! reads (no control characters, none it takes for a line break), keys are plain words
//! that no two of libyaml's readings confuse (not numbers, booleans or null), nesting stays
//! far inside `yaml_serde`'s depth limit, and a flow collection's plain scalars hold no
//! `:`. Its answer is also yaml-edit's reading. Debug builds (every test) read each text all
//! three ways and compare, and a property test feeds it mutated texts (`tests/fuzz.rs`).
//! It never has to report an error: any doubt is a `None`.

use std::cell::Cell;

use super::keys::Seen;
use super::located::{Doc, Key, Node, Scalar, Style, MAX_VALUES};

/// The documents of `text`, or `None` when it is not in the subset.
pub(crate) fn read(text: &str) -> Option<Vec<Doc>> {
    if !readable(text) {
        return None;
    }
    let mut lines = Lines::new(text);
    // One `---` may open the document; another would start a second one.
    if lines.peek().is_some_and(|l| l.body == "---") {
        lines.next_line();
    }
    let first = lines.peek()?;
    let root = node(&mut lines, first.indent)?;
    if lines.peek().is_some() {
        return None;
    }
    Some(vec![Doc {
        index: 0,
        root: Some(root),
    }])
}

/// The scalar written as `raw` (a value's whole text, quotes included) as [`read`] reads it
/// in a block mapping, or `None` when that is not a scalar of the subset.
pub(crate) fn scalar(raw: &str) -> Option<Scalar> {
    if !readable(raw) {
        return None;
    }
    match flow_or_scalar(raw, 0, 0, &Cell::new(1))? {
        (Node::Scalar(s), used) if used == raw.len() => Some(s),
        _ => None,
    }
}

/// Every character one libyaml reads, other than the line breaks it knows beyond `\n`
/// (`\r`, NEL, the Unicode line and paragraph separators), tabs and byte order marks.
fn readable(text: &str) -> bool {
    // Plain ASCII in blocks the compiler can check without a branch per byte.
    let ascii = |b: u8| b == b'\n' || (0x20..=0x7e).contains(&b);
    if text
        .as_bytes()
        .chunks(64)
        .all(|c| c.iter().fold(true, |ok, &b| ok & ascii(b)))
    {
        return true;
    }
    text.chars().all(|c| {
        matches!(c,
            '\n'
            | ' '..='~'
            | '\u{a0}'..='\u{2027}'
            | '\u{202a}'..='\u{d7ff}'
            | '\u{e000}'..='\u{fefe}'
            | '\u{ff00}'..='\u{fffd}'
            | '\u{10000}'..)
    })
}

/// The deepest nesting of block collections read, and of flow collections inside them:
/// together far inside `yaml_serde`'s limit of 128.
const MAX_NESTING: usize = 48;

/// Count one more value against the budget; `None` once it is spent (the caller's
/// count then refuses the text, `located.rs`).
fn spend(left: &Cell<usize>) -> Option<()> {
    let n = left.get().checked_sub(1)?;
    left.set(n);
    Some(())
}

/// One line with content (blank and comment-only lines are skipped): its indentation, the
/// offset of its first non-space byte, and its text from there.
#[derive(Clone, Copy)]
struct Line<'t> {
    indent: usize,
    start: usize,
    body: &'t str,
}

struct Lines<'t> {
    text: &'t str,
    pos: usize,
    peeked: Option<Line<'t>>,
    /// Block collections open around the current line.
    depth: usize,
    /// How many more values (entries and items) may be read.
    left: Cell<usize>,
}

impl<'t> Lines<'t> {
    fn new(text: &'t str) -> Lines<'t> {
        let mut l = Lines {
            text,
            pos: 0,
            peeked: None,
            depth: 0,
            left: Cell::new(MAX_VALUES),
        };
        l.next_line();
        l
    }

    /// Move to the next line with content.
    fn next_line(&mut self) {
        self.peeked = None;
        while self.pos < self.text.len() {
            let rest = self.text.get(self.pos..).unwrap_or_default();
            let len =
                memchr::memchr(b'\n', rest.as_bytes()).map_or(rest.len(), |i| i.saturating_add(1));
            let line = rest.get(..len).unwrap_or_default();
            let start = self.pos;
            self.pos = self.pos.saturating_add(len);
            let line = line.strip_suffix('\n').unwrap_or(line);
            let body = line.trim_start_matches(' ');
            if body.is_empty() || body.starts_with('#') {
                continue;
            }
            let indent = line.len().saturating_sub(body.len());
            self.peeked = Some(Line {
                indent,
                start: start.saturating_add(indent),
                body,
            });
            return;
        }
    }

    fn peek(&self) -> Option<Line<'t>> {
        self.peeked
    }
}

/// The block node that starts at the current line, at `indent`.
fn node(lines: &mut Lines, indent: usize) -> Option<Node> {
    let line = lines.peek()?;
    if line.indent != indent {
        return None;
    }
    if is_item(line.body) {
        nested(lines, |lines| sequence(lines, indent))
    } else if entry_key(line.body).is_some() {
        nested(lines, |lines| mapping(lines, indent, line.start))
    } else {
        None
    }
}

/// `read` one level deeper, within [`MAX_NESTING`].
fn nested(lines: &mut Lines, read: impl FnOnce(&mut Lines) -> Option<Node>) -> Option<Node> {
    lines.depth = lines.depth.saturating_add(1);
    if lines.depth > MAX_NESTING {
        return None;
    }
    let node = read(lines);
    lines.depth = lines.depth.saturating_sub(1);
    node
}

/// `- …` or a lone `-`.
fn is_item(body: &str) -> bool {
    body == "-" || body.starts_with("- ")
}

/// The key of a `key: …` or `key:` line: a plain key of the simple kind.
fn entry_key(body: &str) -> Option<&str> {
    let end = colon_space(body).or_else(|| body.strip_suffix(':').map(str::len))?;
    let key = body.get(..end)?;
    // A comment after the key (`key: # c`) is read by the value.
    simple_key(key).then_some(key)
}

/// Where `s` first holds `": "`, as `s.find(": ")` says, without setting up a substring
/// search for every line (about a fifth of the reader's instructions went there).
fn colon_space(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut from = 0usize;
    loop {
        let at = from.saturating_add(bytes.get(from..)?.iter().position(|&b| b == b':')?);
        if bytes.get(at.saturating_add(1)) == Some(&b' ') {
            return Some(at);
        }
        from = at.saturating_add(1);
    }
}

/// A key of the subset: letters, digits, `_ - . /`, starting with a letter, `_` or `/`,
/// at most 1,000 bytes (libyaml's limit for a key is 1,024 characters), and not a word
/// libyaml may read as a boolean or null (two keys then could be one to it). Also asked by
/// the proof of an edit made without reading the edited text (`edit.rs`).
pub(crate) fn simple_key(key: &str) -> bool {
    const WORDS: [&str; 9] = ["true", "false", "null", "yes", "no", "on", "off", "y", "n"];
    key.len() <= 1000
        && key
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'/'))
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/'))
        && !WORDS.iter().any(|w| key.eq_ignore_ascii_case(w))
}

/// A block sequence: `- item` lines at `indent`.
fn sequence(lines: &mut Lines, indent: usize) -> Option<Node> {
    let offset = lines.peek()?.start;
    let mut items = Vec::new();
    while let Some(line) = lines
        .peek()
        .filter(|l| l.indent == indent && is_item(l.body))
    {
        let after = line.body.get(1..)?;
        let rest = after.trim_start_matches(' ');
        if rest.is_empty() || rest.starts_with('#') || is_item(rest) {
            return None;
        }
        let column = indent
            .saturating_add(1)
            .saturating_add(after.len().saturating_sub(rest.len()));
        let start = line
            .start
            .saturating_add(line.body.len().saturating_sub(rest.len()));
        if entry_key(rest).is_some() {
            // A mapping that starts on the item's line, its entries at that column.
            let item = Line {
                indent: column,
                start,
                body: rest,
            };
            lines.peeked = Some(item);
            spend(&lines.left)?;
            items.push(mapping(lines, column, start)?);
        } else {
            spend(&lines.left)?;
            items.push(inline_value(rest, start, &lines.left)?);
            lines.next_line();
            if lines.peek().is_some_and(|l| l.indent > indent) {
                return None;
            }
        }
    }
    Some(Node::Seq { items, offset })
}

/// A block mapping: `key: …` lines at `indent`, the first at `offset`.
fn mapping(lines: &mut Lines, indent: usize, offset: usize) -> Option<Node> {
    let mut entries: Vec<(Key, Node)> = Vec::new();
    let mut seen = Seen::new();
    while let Some(line) = lines
        .peek()
        .filter(|l| l.indent == indent && !is_item(l.body))
    {
        let name = entry_key(line.body)?;
        if !seen.insert(name) {
            return None;
        }
        let key = Key {
            name: name.to_string(),
            offset: line.start,
        };
        let after = line.body.get(name.len().saturating_add(1)..)?;
        let rest = after.trim_start_matches(' ');
        let value = if rest.is_empty() || rest.starts_with('#') {
            lines.next_line();
            match lines.peek() {
                Some(next) if next.indent > indent => node(lines, next.indent)?,
                // A sequence may sit at its key's indentation.
                Some(next) if next.indent == indent && is_item(next.body) => {
                    sequence(lines, indent)?
                }
                // An empty value: yaml-edit's reading of it is left to yaml-edit.
                _ => return None,
            }
        } else {
            let start = line
                .start
                .saturating_add(line.body.len().saturating_sub(rest.len()));
            let v = inline_value(rest, start, &lines.left)?;
            lines.next_line();
            // A more indented line after a value on the key's line continues it.
            if lines.peek().is_some_and(|l| l.indent > indent) {
                return None;
            }
            v
        };
        spend(&lines.left)?;
        entries.push((key, value));
    }
    (!entries.is_empty()).then_some(Node::Map { entries, offset })
}

/// A value written on its line from `rest` (at byte `start` of the text) to the line's end
/// or its comment: a scalar or a flow collection, nothing else after it.
fn inline_value(rest: &str, start: usize, left: &Cell<usize>) -> Option<Node> {
    let (node, used) = flow_or_scalar(rest, start, 0, left)?;
    let tail = rest.get(used..)?;
    let trimmed = tail.trim_start_matches(' ');
    let spaced = trimmed.len() < tail.len();
    if trimmed.is_empty() || (spaced && trimmed.starts_with('#')) {
        Some(node)
    } else {
        None
    }
}

/// A scalar or flow collection at the start of `s` (byte `start` of the text), and how many
/// bytes of `s` it takes. `flow`: how many flow collections it is inside (in one, `,` `]`
/// `}` end a plain scalar).
fn flow_or_scalar(s: &str, start: usize, flow: usize, left: &Cell<usize>) -> Option<(Node, usize)> {
    let first = s.bytes().next()?;
    let in_flow = flow > 0;
    match first {
        b'"' | b'\'' => {
            let close = s.get(1..)?.find(first as char)?.saturating_add(1);
            let inner = s.get(1..close)?;
            // Escapes (`\` in double quotes, `''` in single ones) are yaml-edit's to decode.
            if inner.contains(['\\', '\'', '"'])
                || s.get(close.saturating_add(1)..)?.starts_with('\'')
            {
                return None;
            }
            let end = close.saturating_add(1);
            let style = if first == b'"' {
                Style::Double
            } else {
                Style::Single
            };
            let node = Node::Scalar(Scalar {
                value: inner.to_string(),
                span: start..start.saturating_add(end),
                style,
            });
            Some((node, end))
        }
        b'[' if flow < MAX_NESTING => flow_sequence(s, start, flow.saturating_add(1), left),
        b'{' if flow < MAX_NESTING => flow_mapping(s, start, flow.saturating_add(1), left),
        b'[' | b'{' => None,
        b'&' | b'*' | b'!' | b'|' | b'>' | b'%' | b'@' | b'`' | b'#' | b',' | b']' | b'}'
        | b'?' | b':' => None,
        // `-` alone is an item, or in a flow collection a scalar libyaml would not read the
        // same alone: left to the full readers.
        b'-' if s
            .as_bytes()
            .get(1)
            .is_none_or(|b| matches!(b, b' ' | b',' | b'[' | b']' | b'{' | b'}')) =>
        {
            None
        }
        _ => {
            let end = plain_end(s, in_flow);
            let raw = s.get(..end)?.trim_end_matches(' ');
            // libyaml refuses some `:` inside a plain scalar in a flow collection (before
            // `?`, for one): none is read here.
            // A scalar that starts like a document marker is left to the full readers too.
            if raw.is_empty()
                || (in_flow && raw.contains(':'))
                || raw.starts_with("---")
                || raw.starts_with("...")
            {
                return None;
            }
            let node = Node::Scalar(Scalar {
                value: raw.to_string(),
                span: start..start.saturating_add(raw.len()),
                style: Style::Plain,
            });
            Some((node, raw.len()))
        }
    }
}

/// Where a plain scalar at the start of `s` ends: at a comment (` #`), at `: ` (a mapping
/// entry: not in this subset's values, so the caller gives up on what follows), and in a
/// flow collection at `,`, `[`, `]`, `{`, `}` or `:` before a space or one of those.
fn plain_end(s: &str, in_flow: bool) -> usize {
    let bytes = s.as_bytes();
    let mut i = 0usize;
    while let Some(&b) = bytes.get(i) {
        let next = bytes.get(i.saturating_add(1)).copied();
        let ends = match b {
            b'#' => i > 0 && bytes.get(i.saturating_sub(1)) == Some(&b' '),
            b':' => {
                next.is_none_or(|n| n == b' ')
                    || (in_flow
                        && next.is_some_and(|n| matches!(n, b',' | b'[' | b']' | b'{' | b'}')))
            }
            b',' | b'[' | b']' | b'{' | b'}' => in_flow,
            _ => false,
        };
        if ends {
            return i;
        }
        i = i.saturating_add(1);
    }
    i
}

/// Spaces at the start of `s`.
fn spaces(s: &str) -> usize {
    s.len().saturating_sub(s.trim_start_matches(' ').len())
}

/// What follows an item of a flow collection.
enum Next {
    /// Another item, at this byte.
    Item(usize),
    /// The collection's end, the byte after its closing bracket.
    Closed(usize),
}

/// After an item that ends at byte `i` of `s`: `, ` and the next item, or `close`.
/// `None` for anything else (a trailing comma included).
fn next_item(s: &str, i: usize, close: u8) -> Option<Next> {
    let i = i.saturating_add(spaces(s.get(i..)?));
    match s.as_bytes().get(i) {
        Some(b',') => {
            let i = i.saturating_add(1);
            let i = i.saturating_add(spaces(s.get(i..)?));
            (s.as_bytes().get(i) != Some(&close)).then_some(Next::Item(i))
        }
        Some(b) if *b == close => Some(Next::Closed(i.saturating_add(1))),
        _ => None,
    }
}

/// `[a, b, …]` on one line.
fn flow_sequence(s: &str, start: usize, flow: usize, left: &Cell<usize>) -> Option<(Node, usize)> {
    let mut items = Vec::new();
    spend(left)?;
    let mut i = 1usize;
    i = i.saturating_add(spaces(s.get(i..)?));
    if s.get(i..)?.starts_with(']') {
        return Some((
            Node::Seq {
                items,
                offset: start,
            },
            i.saturating_add(1),
        ));
    }
    loop {
        let (item, used) = flow_or_scalar(s.get(i..)?, start.saturating_add(i), flow, left)?;
        if matches!(item, Node::Scalar(_))
            && s.get(i.saturating_add(used)..)?
                .trim_start_matches(' ')
                .starts_with(':')
        {
            return None;
        }
        spend(left)?;
        items.push(item);
        match next_item(s, i.saturating_add(used), b']')? {
            Next::Item(at) => i = at,
            Next::Closed(end) => {
                return Some((
                    Node::Seq {
                        items,
                        offset: start,
                    },
                    end,
                ))
            }
        }
    }
}

/// `{k: v, …}` on one line, plain keys.
fn flow_mapping(s: &str, start: usize, flow: usize, left: &Cell<usize>) -> Option<(Node, usize)> {
    let mut entries: Vec<(Key, Node)> = Vec::new();
    let mut seen = Seen::new();
    spend(left)?;
    let mut i = 1usize;
    i = i.saturating_add(spaces(s.get(i..)?));
    if s.get(i..)?.starts_with('}') {
        return Some((
            Node::Map {
                entries,
                offset: start,
            },
            i.saturating_add(1),
        ));
    }
    loop {
        let rest = s.get(i..)?;
        let key_len = colon_space(rest)?;
        let name = rest.get(..key_len)?;
        if !simple_key(name) || !seen.insert(name) {
            return None;
        }
        let key = Key {
            name: name.to_string(),
            offset: start.saturating_add(i),
        };
        i = i.saturating_add(key_len).saturating_add(1);
        i = i.saturating_add(spaces(s.get(i..)?));
        let (value, used) = flow_or_scalar(s.get(i..)?, start.saturating_add(i), flow, left)?;
        // As the text's count has it: the key's `:` and the `,` after the entry.
        spend(left)?;
        spend(left)?;
        entries.push((key, value));
        match next_item(s, i.saturating_add(used), b'}')? {
            Next::Item(at) => i = at,
            Next::Closed(end) => {
                return Some((
                    Node::Map {
                        entries,
                        offset: start,
                    },
                    end,
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Texts of the subset: read in one pass, exactly as yaml-edit's tree reads them.
    #[test]
    fn the_subset_reads_as_the_lossless_tree_does() {
        for text in [
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app0034}\nspec:\n  template:\n    spec:\n      containers:\n      - name: c0\n        image: svc0257 # pinned\n      -   name: c1\n          image: \"r.io/a:1.2\"\n",
            "# c\nimages:\n# component 0\n- name: svc\n  newName: 127.0.0.1:5000/bench/svc\n  newTag: 1.1.0\n",
            "---\ncomponent0:\n  image:\n    repository: r.io/x\n    tag: \"1.0.1\"  # pinned\nlist: []\nmap: {}\nflow: [a, 'b', {c: d, e: [1, 2]}, x/y]\nurl: http://x:80/y\n",
            "  indented: 1\n  more:\n  - -1\n  - x#y\n",
            "k: v\n\n\n# end\n",
        ] {
            let one_pass = read(text).unwrap_or_else(|| panic!("not read: {text:?}"));
            assert_eq!(one_pass, super::super::located::from_tree(text).unwrap(), "{text:?}");
            // The parse takes the one-pass reading, which debug builds check against libyaml.
            let (_, fingerprint) = crate::parse_located_fingerprinted(text).unwrap();
            assert!(fingerprint.read_in_one_pass(), "{text:?}");
        }
    }

    /// Anything outside the subset is left to yaml-edit.
    #[test]
    fn anything_else_is_left_to_the_lossless_tree() {
        for text in [
            "a: &x 1\nb: *x\n",
            "a: !!str 1\n",
            "a: |\n  text\n",
            "a: >-\n  text\n",
            "a:\nb: 1\n",
            "a: one\n  two\n",
            "a: \"x\\ty\"\n",
            "a: 'it''s'\n",
            "a: 1\n---\nb: 2\n",
            "a:\t1\n",
            "a: 1\r\n",
            "\"a\": 1\n",
            "<<: {a: 1}\n",
            "? a\n: 1\n",
            "just a scalar\n",
            "a: [1,\n  2]\n",
            "a: [1, ]\n",
            "a: [http://x:80/y]\n",
            "a: [-]\n",
            "a: b\u{85}c\n",
            "a: b\u{2028}c\n",
            "a: \u{1}\n",
            "1: a\n",
            "true: a\n",
            "y: a\n",
            &format!("{}: a\n", "k".repeat(1001)),
            "- - a\n",
            "-\n  a: 1\n",
            "a: b: c\n",
            "%YAML 1.2\n---\na: 1\n",
            "a: 1\n...\n",
            "# only comments\n",
            "",
        ] {
            assert!(read(text).is_none(), "read: {text:?}");
        }
    }
}
