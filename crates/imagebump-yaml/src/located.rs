//! A read-only view of a YAML stream in which every scalar knows its byte span.

use std::ops::Range;
use std::str::FromStr;

use rowan::ast::AstNode;

use crate::fingerprint::Fingerprint;
use yaml_edit::{YamlFile, YamlNode};

/// How a scalar is written in the file; edits keep it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Style {
    Plain,
    Single,
    Double,
    Block,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scalar {
    /// The decoded value (quotes and escapes removed).
    pub value: String,
    /// Byte span of the scalar's text in the file, quotes included, anchor and tag excluded.
    pub span: Range<usize>,
    pub style: Style,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    pub name: String,
    pub offset: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Map {
        entries: Vec<(Key, Node)>,
        offset: usize,
    },
    Seq {
        items: Vec<Node>,
        offset: usize,
    },
    Scalar(Scalar),
    /// Aliases, tagged nodes, complex keys: present but never edited.
    Other {
        offset: usize,
    },
}

impl Node {
    pub fn offset(&self) -> usize {
        match self {
            Node::Map { offset, .. } | Node::Seq { offset, .. } | Node::Other { offset } => *offset,
            Node::Scalar(s) => s.span.start,
        }
    }

    /// Move every offset of this node and those below it by `by` bytes (a node parsed from
    /// a slice of a larger text). Offsets stop at `usize::MAX` rather than wrap.
    pub fn shift(&mut self, by: usize) {
        match self {
            Node::Map { entries, offset } => {
                *offset = offset.saturating_add(by);
                for (k, v) in entries {
                    k.offset = k.offset.saturating_add(by);
                    v.shift(by);
                }
            }
            Node::Seq { items, offset } => {
                *offset = offset.saturating_add(by);
                for v in items {
                    v.shift(by);
                }
            }
            Node::Scalar(s) => {
                s.span = s.span.start.saturating_add(by)..s.span.end.saturating_add(by);
            }
            Node::Other { offset } => *offset = offset.saturating_add(by),
        }
    }

    /// The nodes right below this one, each with the path segment that reaches it: a
    /// mapping's values by key, a sequence's items by index; none for a scalar.
    pub fn children(&self) -> impl Iterator<Item = (PathSeg, &Node)> {
        let (entries, items): (&[(Key, Node)], &[Node]) = match self {
            Node::Map { entries, .. } => (entries, &[]),
            Node::Seq { items, .. } => (&[], items),
            Node::Scalar(_) | Node::Other { .. } => (&[], &[]),
        };
        let by_key = entries
            .iter()
            .map(|(k, v)| (PathSeg::Key(k.name.clone()), v));
        let by_index = items
            .iter()
            .enumerate()
            .map(|(i, v)| (PathSeg::Index(i), v));
        by_key.chain(by_index)
    }

    /// The node at `path` below this one.
    pub fn at(&self, path: &[PathSeg]) -> Option<&Node> {
        path.iter().try_fold(self, |node, seg| match (seg, node) {
            (PathSeg::Key(k), Node::Map { .. }) => node.get(k),
            (PathSeg::Index(i), Node::Seq { items, .. }) => items.get(*i),
            _ => None,
        })
    }

    /// The node at `path` below this one, to change it.
    pub(crate) fn at_mut(&mut self, path: &[PathSeg]) -> Option<&mut Node> {
        path.iter().try_fold(self, |node, seg| match (seg, node) {
            (PathSeg::Key(k), Node::Map { entries, .. }) => entries
                .iter_mut()
                .find(|(key, _)| key.name == *k)
                .map(|(_, v)| v),
            (PathSeg::Index(i), Node::Seq { items, .. }) => items.get_mut(*i),
            _ => None,
        })
    }

    /// The value of key `name` in a mapping.
    pub fn get(&self, name: &str) -> Option<&Node> {
        match self {
            Node::Map { entries, .. } => {
                entries.iter().find(|(k, _)| k.name == name).map(|(_, v)| v)
            }
            _ => None,
        }
    }

    pub fn as_scalar(&self) -> Option<&Scalar> {
        match self {
            Node::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// The decoded string of a scalar value, `None` for anything else.
    pub fn str_value(&self) -> Option<&str> {
        self.as_scalar().map(|s| s.value.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(untagged)]
pub enum PathSeg {
    Key(String),
    Index(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    pub index: usize,
    pub root: Option<Node>,
}

/// Where a YAML file is broken.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl ParseError {
    /// The message for a report: "not valid YAML: …", or the reason a valid but
    /// pathological text (too deep, too many values) was not read.
    pub fn reason(&self) -> String {
        if self.message.ends_with(": not read") {
            self.message.clone()
        } else {
            format!("not valid YAML: {}", self.message)
        }
    }

    /// libyaml's position and message (without the location it repeats in the text).
    pub fn from_serde(e: &yaml_serde::Error) -> ParseError {
        let (line, column) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((1, 1));
        let message = e.to_string();
        let message = message
            .split(" at line ")
            .next()
            .unwrap_or(&message)
            .to_string();
        ParseError {
            line,
            column,
            message,
        }
    }
}

/// Byte offset → 1-based line and column. A clone shares the line starts: the many
/// Applications one file generates each take their file's index without copying it.
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: std::sync::Arc<Vec<usize>>,
    /// Added to every line and column: the text starts at this line and indentation of a
    /// file (the content of a block scalar, see [`crate::BlockText::line_index`]).
    line_base: usize,
    column_base: usize,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        Self::shifted(text, 0, 0)
    }

    /// Positions in `text` as positions of a file in which `text`'s lines start at line
    /// `line_base + 1`, each indented by `column_base` spaces.
    pub fn shifted(text: &str, line_base: usize, column_base: usize) -> Self {
        // Room for lines of 24 bytes on average, which a manifest's are about: a file's
        // index is made without growing it several times (one for every file read).
        let mut starts = Vec::with_capacity((text.len() / 24).saturating_add(2));
        starts.push(0);
        // A line starts after each `\n`, at most at `text.len()`.
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i.saturating_add(1)));
        LineIndex {
            starts: std::sync::Arc::new(starts),
            line_base,
            column_base,
        }
    }

    /// 1-based; an offset past the end is on the last line. Numbers that would not fit a
    /// `usize` stop at `usize::MAX`.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        // `starts` begins with 0, so `line` is at least 1.
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self
            .starts
            .get(line.saturating_sub(1))
            .copied()
            .unwrap_or_default();
        (
            line.saturating_add(self.line_base),
            offset
                .saturating_sub(start)
                .saturating_add(1)
                .saturating_add(self.column_base),
        )
    }
}

/// Parse a YAML stream into located documents. Fails on anything libyaml rejects, with the
/// line and column it reports.
pub fn parse_located(text: &str) -> Result<Vec<Doc>, ParseError> {
    parse_located_fingerprinted(text).map(|(docs, _)| docs)
}

/// As [`parse_located`], with the fingerprint of the documents' values (the one-pass
/// reader's view of plain block YAML, libyaml's values of anything else: the reading the
/// parse makes anyway): given to [`crate::apply_edits_known`], it spares the verification of
/// an edit a second parse of this text.
pub fn parse_located_fingerprinted(text: &str) -> Result<(Vec<Doc>, Fingerprint), ParseError> {
    // A UTF-8 byte order mark (editors on Windows write one) is not YAML content: the
    // stream after it is read, and every span still counts from the file's first byte.
    // Marks are skipped in one go, however many there are: a call per mark would let a
    // file of marks exhaust the stack.
    let content = text.trim_start_matches('\u{feff}');
    let marks = text.len().saturating_sub(content.len());
    let (mut docs, fingerprint) = parse_content(content)?;
    if marks == 0 {
        return Ok((docs, fingerprint));
    }
    for d in &mut docs {
        if let Some(root) = &mut d.root {
            root.shift(marks);
        }
    }
    Ok((docs, fingerprint.of_whole(text)))
}

/// [`parse_located`] of a text that does not start with a byte order mark.
fn parse_content(text: &str) -> Result<(Vec<Doc>, Fingerprint), ParseError> {
    // The common subset is read in one pass, which vouches for the text itself: it reads
    // only what libyaml reads the same way, so libyaml need not read it too. It keeps within
    // the limits below on its own (nesting, and MAX_VALUES values), and declines past them,
    // so that the checks below refuse such a text as before. Debug builds (every test) read
    // it the other two ways as well and compare.
    if let Some(docs) = crate::simple::read(text) {
        #[cfg(debug_assertions)]
        cross_check(text, &docs);
        let fingerprint = crate::fingerprint::of_text_read_in_one_pass(text, &docs);
        return Ok((docs, fingerprint));
    }
    check_depth(text)?;
    check_values(text)?;
    let fingerprint = validate(text)?;
    Ok((from_tree(text)?, fingerprint))
}

/// What the one-pass reader read is what libyaml and yaml-edit read: libyaml accepts the
/// text with the same values (each scalar typed as libyaml types it alone), and yaml-edit's
/// located view is the same.
#[cfg(debug_assertions)]
#[allow(clippy::panic, clippy::expect_used)]
fn cross_check(text: &str, docs: &[Doc]) {
    let values = yaml_serde::Deserializer::from_str(text)
        .map(serde::Deserialize::deserialize)
        .collect::<Result<Vec<yaml_serde::Value>, _>>()
        .unwrap_or_else(|e| {
            panic!("the one-pass reader read what libyaml refuses ({e}): {text:?}")
        });
    assert_eq!(
        typed(docs),
        Some(values),
        "the one-pass reader disagrees with libyaml on {text:?}"
    );
    let full = from_tree(text).expect("yaml-edit reads what libyaml reads");
    assert_eq!(
        docs, full,
        "the one-pass reader disagrees with yaml-edit on {text:?}"
    );
}

/// The located documents as libyaml's values, each scalar and key typed as libyaml types
/// it on its own (plain ones resolved, quoted ones strings); `None` when a plain scalar does
/// not read alone as one value. (Only debug builds ask it: `cross_check`.)
#[cfg(debug_assertions)]
fn typed(docs: &[Doc]) -> Option<Vec<yaml_serde::Value>> {
    use yaml_serde::Value;
    fn plain(raw: &str) -> Option<Value> {
        match yaml_serde::from_str::<Value>(raw).ok()? {
            v @ (Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_)) => Some(v),
            _ => None,
        }
    }
    fn node(n: &Node) -> Option<Value> {
        Some(match n {
            Node::Map { entries, .. } => {
                let mut m = yaml_serde::Mapping::new();
                for (k, v) in entries {
                    m.insert(plain(&k.name)?, node(v)?);
                }
                Value::Mapping(m)
            }
            Node::Seq { items, .. } => {
                Value::Sequence(items.iter().map(node).collect::<Option<_>>()?)
            }
            Node::Scalar(s) if s.style == Style::Plain => plain(&s.value)?,
            Node::Scalar(s) => Value::String(s.value.clone()),
            Node::Other { .. } => return None,
        })
    }
    docs.iter()
        .map(|d| d.root.as_ref().map_or(Some(Value::Null), node))
        .collect()
}

/// The located documents of `text`, read through yaml-edit's lossless tree.
pub(crate) fn from_tree(text: &str) -> Result<Vec<Doc>, ParseError> {
    let file = YamlFile::from_str(text).map_err(|e| ParseError {
        line: 1,
        column: 1,
        message: e.to_string(),
    })?;
    // yaml-edit builds a mutable tree, in which every node's position is found by walking
    // its earlier siblings; the same tree rooted immutably knows its positions at once.
    let file = YamlFile::cast(rowan::SyntaxNode::new_root(
        file.syntax().green().into_owned(),
    ))
    .unwrap_or(file);
    // Without `&` there is no anchor to look for (most files).
    let anchored = text.contains('&');
    let anchors = || Anchors {
        nodes: std::collections::HashMap::new(),
        copied: 0,
        look: anchored,
        text,
    };
    let docs: Vec<Doc> = file
        .documents()
        .enumerate()
        .map(|(index, d)| {
            let root = if let Some(m) = d.as_mapping() {
                Some(convert(&YamlNode::Mapping(m), &mut anchors()))
            } else if let Some(s) = d.as_sequence() {
                Some(convert(&YamlNode::Sequence(s), &mut anchors()))
            } else {
                d.as_scalar()
                    .map(|s| convert(&YamlNode::Scalar(s), &mut anchors()))
            };
            Doc { index, root }
        })
        .collect();
    Ok(docs)
}

/// The deepest nesting read: far beyond any manifest, and far below what makes parsing
/// slow (a 100,000-deep flow mapping) or the stack deep.
pub const MAX_DEPTH: usize = 256;

/// Refuse pathological nesting quickly, at its line: flow collections (`[`, `{`) nested
/// deeper than [`MAX_DEPTH`], or a line indented deeper than that many levels would allow.
/// (Brackets inside quoted strings count too; no real file comes near the limit.) Every
/// text handed to libyaml passes it first: libyaml's time grows with the square of the
/// nesting, so a deep text would stall the run before any error.
pub fn check_depth(text: &str) -> Result<(), ParseError> {
    let mut depth = 0usize;
    let (mut line, mut column) = (1usize, 0usize);
    let mut at_line_start = true;
    let mut indent = 0usize;
    for c in text.chars() {
        column = column.saturating_add(1);
        match c {
            '\n' => {
                line = line.saturating_add(1);
                column = 0;
                at_line_start = true;
                indent = 0;
                continue;
            }
            ' ' if at_line_start => {
                indent = indent.saturating_add(1);
                if indent > MAX_DEPTH * 8 {
                    return Err(too_deep(line, column));
                }
                continue;
            }
            '[' | '{' => {
                depth = depth.saturating_add(1);
                if depth > MAX_DEPTH {
                    return Err(too_deep(line, column));
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at_line_start = false;
    }
    Ok(())
}

/// Whether libyaml may read `text`: the pre-check [`parse_located`] makes, so that what it
/// accepts is accepted here too. [`check_depth`] passes, or else the one-pass reader reads
/// the text (its own nesting limit holds: brackets in a comment are no nesting).
pub fn check_nesting(text: &str) -> Result<(), ParseError> {
    check_depth(text).or_else(|e| match crate::simple::read(text) {
        Some(_) => Ok(()),
        None => Err(e),
    })
}

/// The most values (mapping entries, sequence items, flow items) a text may hold to be
/// parsed. Reading costs a few hundred bytes per value, in three representations (libyaml's
/// check, the lossless tree, ours): 200,000 values stay near 60 MiB, inside a CronJob's
/// memory, while no manifest or values file that names images comes near it (a large
/// chart's values file holds a few thousand).
pub const MAX_VALUES: usize = 200_000;

/// Refuse a text with more than [`MAX_VALUES`] values quickly, at the line where the count
/// passes it. A lexical estimate: `key: `, `- ` items and flow `,`/`[`/`{` outside quotes,
/// comments and block scalars (a dashboard's JSON inside `|` costs nothing to parse).
fn check_values(text: &str) -> Result<(), ParseError> {
    let mut count = 0usize;
    // The indentation of the line that opened a block scalar, while inside it.
    let mut block: Option<usize> = None;
    let mut quote: Option<char> = None;
    for (number, line) in text.split('\n').enumerate() {
        let body = line.trim_start_matches(' ');
        let indent = line.len().saturating_sub(body.len());
        if let Some(opened) = block {
            if body.trim().is_empty() || indent > opened {
                continue;
            }
            block = None;
        }
        let (values, opens_block) = line_values(body, &mut quote);
        count = count.saturating_add(values);
        if count > MAX_VALUES {
            return Err(ParseError {
                line: number.saturating_add(1),
                column: 1,
                message: format!("more than {MAX_VALUES} values: not read"),
            });
        }
        if opens_block {
            block = Some(indent);
        }
    }
    Ok(())
}

/// The values one line adds, and whether it ends by opening a block scalar (`|`, `>-`...).
/// `quote` carries a quoted scalar over line ends.
fn line_values(body: &str, quote: &mut Option<char>) -> (usize, bool) {
    let mut values = 0usize;
    if quote.is_none() && (body == "-" || body.starts_with("- ")) {
        values = values.saturating_add(1);
    }
    let mut last = ' ';
    let mut escaped = false;
    let mut chars = body.chars().peekable();
    let mut tail = String::new();
    while let Some(c) = chars.next() {
        let mut key_ends = false;
        match *quote {
            Some('"') if escaped => escaped = false,
            Some('"') if c == '\\' => escaped = true,
            Some(q) if c == q => *quote = None,
            Some(_) => {}
            None => match c {
                '#' if last == ' ' || last == '\t' => break,
                '"' | '\'' if matches!(last, ' ' | '\t' | '[' | '{' | ',' | ':') => {
                    *quote = Some(c);
                }
                ',' | '[' | '{' => values = values.saturating_add(1),
                ':' if chars.peek().is_none_or(|n| *n == ' ' || *n == '\t') => {
                    values = values.saturating_add(1);
                    key_ends = true;
                }
                _ => {}
            },
        }
        if key_ends {
            tail.clear();
        } else if quote.is_none() && !c.is_whitespace() {
            tail.push(c);
        }
        last = c;
    }
    let tail = tail.trim_start_matches('-');
    let opens_block = quote.is_none()
        && (tail.starts_with('|') || tail.starts_with('>'))
        && tail
            .chars()
            .skip(1)
            .all(|c| matches!(c, '-' | '+') || c.is_ascii_digit());
    (values, opens_block)
}

fn too_deep(line: usize, column: usize) -> ParseError {
    ParseError {
        line,
        column,
        message: format!("nested deeper than {MAX_DEPTH} levels: not read"),
    }
}

/// libyaml is the reference parser: what it rejects is broken, whatever the CST recovers.
/// The fingerprint of what it read comes with the answer.
fn validate(text: &str) -> Result<Fingerprint, ParseError> {
    use serde::Deserialize;
    let mut fingerprint = crate::fingerprint::ValuesHasher::new();
    for doc in yaml_serde::Deserializer::from_str(text) {
        let value = yaml_serde::Value::deserialize(doc).map_err(|e| ParseError::from_serde(&e))?;
        fingerprint.add(&value);
    }
    Ok(fingerprint.finish())
}

fn range_of(s: &yaml_edit::Scalar) -> Range<usize> {
    let range = s.syntax().text_range();
    u32::from(range.start()) as usize..u32::from(range.end()) as usize
}

fn offset_of(node: &yaml_edit::advanced::TextRange) -> usize {
    u32::from(node.start()) as usize
}

/// The nodes anchored so far in a document, by anchor name: an alias reads the anchored
/// node, spans and all, so an edit through it lands on the anchored text. `copied` counts
/// the nodes aliases have copied, against [`MAX_ALIAS_NODES`].
struct Anchors<'t> {
    nodes: std::collections::HashMap<String, Node>,
    copied: usize,
    /// Whether the text may hold an anchor at all.
    look: bool,
    /// The text the tree was parsed from.
    text: &'t str,
}

/// At most this many nodes are copied for aliases in one document (a billion laughs is
/// refused by the YAML reader first; this keeps even a legal fan-out bounded): past it, an
/// alias is read as an opaque node, never edited.
const MAX_ALIAS_NODES: usize = 200_000;

/// The anchor (`&name`) written on `node`: a token just before it in its parent, or its
/// own first token.
fn anchor_of(node: &rowan::SyntaxNode<yaml_edit::Lang>) -> Option<String> {
    use yaml_edit::SyntaxKind;
    let own = node
        .children_with_tokens()
        .take_while(|el| el.as_token().is_some())
        .filter_map(|el| el.into_token())
        .find(|t| t.kind() == SyntaxKind::ANCHOR);
    let before = node.parent().and_then(|p| {
        let mut found = None;
        for el in p.children_with_tokens() {
            if el.as_node() == Some(node) {
                break;
            }
            if let Some(t) = el.as_token() {
                if t.kind() == SyntaxKind::ANCHOR {
                    found = Some(t.clone());
                }
            }
        }
        found
    });
    own.or(before)
        .map(|t| t.text().trim_start_matches('&').to_string())
}

fn size(node: &Node) -> usize {
    match node {
        Node::Map { entries, .. } => entries
            .iter()
            .map(|(_, v)| size(v))
            .fold(1usize, usize::saturating_add),
        Node::Seq { items, .. } => items.iter().map(size).fold(1usize, usize::saturating_add),
        _ => 1,
    }
}

fn convert(node: &YamlNode, anchors: &mut Anchors<'_>) -> Node {
    let converted = convert_node(node, anchors);
    if !anchors.look {
        return converted;
    }
    let syntax = match node {
        YamlNode::Scalar(n) => n.syntax().clone(),
        YamlNode::Mapping(n) => n.syntax().clone(),
        YamlNode::Sequence(n) => n.syntax().clone(),
        YamlNode::Alias(n) => n.syntax().clone(),
        YamlNode::TaggedNode(n) => n.syntax().clone(),
    };
    if let Some(name) = anchor_of(&syntax) {
        anchors.nodes.insert(name, converted.clone());
    }
    converted
}

/// A scalar's decoded value. A plain scalar on one line is its own text (the common case,
/// read without decoding); anything else is decoded by yaml-edit.
fn scalar_value(s: &yaml_edit::Scalar, raw: &str) -> String {
    let plain = !raw.starts_with(['"', '\'', '|', '>']);
    if plain && !raw.is_empty() && !raw.contains(['\n', '\r']) {
        raw.to_string()
    } else {
        s.as_string()
    }
}

/// Adds the `merged` entries (in the order the merge keys list them) under the keys that
/// neither `entries` nor an earlier merged mapping set. Names are looked up in a set, so a
/// mapping merging many keys costs time linear in them.
fn merge(entries: &mut Vec<(Key, Node)>, merged: Vec<(Key, Node)>) {
    if merged.is_empty() {
        return;
    }
    let mut names: foldhash::HashSet<String> =
        entries.iter().map(|(k, _)| k.name.clone()).collect();
    for (k, v) in merged {
        if names.insert(k.name.clone()) {
            entries.push((k, v));
        }
    }
}

fn convert_node(node: &YamlNode, anchors: &mut Anchors<'_>) -> Node {
    match node {
        YamlNode::Scalar(s) => {
            let range = s.syntax().text_range();
            let span = u32::from(range.start()) as usize..u32::from(range.end()) as usize;
            let raw = anchors.text.get(span.clone()).unwrap_or_default();
            let style = if raw.starts_with('"') {
                Style::Double
            } else if raw.starts_with('\'') {
                Style::Single
            } else if raw.starts_with('|') || raw.starts_with('>') {
                Style::Block
            } else {
                Style::Plain
            };
            Node::Scalar(Scalar {
                value: scalar_value(s, raw),
                span,
                style,
            })
        }
        YamlNode::Mapping(m) => convert_mapping(m, anchors),
        YamlNode::Sequence(s) => Node::Seq {
            items: s.values().map(|v| convert(&v, anchors)).collect(),
            offset: offset_of(&s.syntax().text_range()),
        },
        YamlNode::Alias(a) => {
            let offset = offset_of(&a.syntax().text_range());
            let Some(n) = anchors.nodes.get(&a.name()) else {
                return Node::Other { offset };
            };
            let copied = anchors.copied.saturating_add(size(n));
            if copied > MAX_ALIAS_NODES {
                return Node::Other { offset };
            }
            anchors.copied = copied;
            n.clone()
        }
        YamlNode::TaggedNode(t) => Node::Other {
            offset: offset_of(&t.syntax().text_range()),
        },
    }
}

/// A mapping's entries; a merge key (`<<: *base`, `<<: [*a, *b]`) gives the merged
/// mappings' entries, under the keys the mapping does not set itself.
fn convert_mapping(m: &yaml_edit::Mapping, anchors: &mut Anchors<'_>) -> Node {
    let offset = offset_of(&m.syntax().text_range());
    let mut entries: Vec<(Key, Node)> = Vec::new();
    let mut merged: Vec<(Key, Node)> = Vec::new();
    for e in m.entries() {
        let key = match e.key_node() {
            Some(YamlNode::Scalar(k)) => Key {
                name: scalar_value(&k, anchors.text.get(range_of(&k)).unwrap_or_default()),
                offset: offset_of(&k.syntax().text_range()),
            },
            // The merge key is a token of its own, not a scalar.
            _ if e.syntax().text().to_string().trim_start().starts_with("<<") => Key {
                name: "<<".into(),
                offset: offset_of(&e.syntax().text_range()),
            },
            _ => continue,
        };
        let value = match e.value_node() {
            Some(v) => convert(&v, anchors),
            None => Node::Other { offset: key.offset },
        };
        if key.name != "<<" {
            entries.push((key, value));
            continue;
        }
        let sources = match value {
            Node::Seq { items, .. } => items,
            other => vec![other],
        };
        for source in sources {
            if let Node::Map { entries: more, .. } = source {
                merged.extend(more);
            }
        }
    }
    merge(&mut entries, merged);
    Node::Map { entries, offset }
}

#[cfg(test)]
mod tests {

    #[test]
    fn values_are_counted_outside_quotes_comments_and_block_scalars() {
        let mut quote = None;
        assert_eq!(
            line_values(
                "image: {repository: a, tag: \"1,2: 3\"} # a, b: c",
                &mut quote
            ),
            (5, false)
        );
        assert_eq!(line_values("- name: web", &mut quote), (2, false));
        assert_eq!(line_values("script: |-", &mut quote), (1, true));
        assert_eq!(line_values("- >", &mut quote), (1, true));
        assert_eq!(line_values("url: http://x:80/a", &mut quote), (1, false));
        // A quoted scalar carried over a line end.
        assert_eq!(line_values("msg: \"a, b", &mut quote), (1, false));
        assert_eq!(line_values("c: d\", e: f", &mut quote), (2, false));
        let dashboard = format!(
            "data:\n  dash.json: |\n{}\nimage: web:1\n",
            "    {\"a\": 1, \"b\": [1, 2]},\n".repeat(MAX_VALUES)
        );
        assert!(check_values(&dashboard).is_ok());
        let dense = "- {a: 1, b: 2}\n".repeat(MAX_VALUES / 3);
        let e = check_values(&dense).unwrap_err();
        assert!(e.message.contains("more than 200000 values"), "{e:?}");
        assert_eq!(e.line, MAX_VALUES / 5 + 1);
    }
    use super::*;

    #[test]
    fn spans_cover_exactly_the_scalar_text() {
        let text = "a:\n  tag: &t \"1.2.0\" # c\n  b: [x, 'y']\n---\nz: 1\n";
        let docs = parse_located(text).unwrap();
        assert_eq!(docs.len(), 2);
        let root = docs[0].root.as_ref().unwrap();
        let tag = root
            .get("a")
            .unwrap()
            .get("tag")
            .unwrap()
            .as_scalar()
            .unwrap();
        assert_eq!(&text[tag.span.clone()], "\"1.2.0\"");
        assert_eq!(tag.value, "1.2.0");
        assert_eq!(tag.style, Style::Double);
        let Node::Seq { items, .. } = root.get("a").unwrap().get("b").unwrap() else {
            panic!("not a sequence")
        };
        assert_eq!(items[1].as_scalar().unwrap().style, Style::Single);
        assert_eq!(
            docs[1].root.as_ref().unwrap().get("z").unwrap().str_value(),
            Some("1")
        );
    }

    #[test]
    fn broken_yaml_reports_line_and_column() {
        let err = parse_located("a: 1\nb: [1, 2\nc: 3\n").unwrap_err();
        assert_eq!(err.line, 3, "{err}");
        assert!(err.column >= 1);
    }

    #[test]
    fn pathological_nesting_is_refused_at_its_line() {
        let deep = format!("a: 1\nb: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        let started = std::time::Instant::now();
        let err = parse_located(&deep).unwrap_err();
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert_eq!((err.line, err.column), (2, 260));
        assert!(err.message.contains("nested deeper than 256"), "{err}");
        let fine = format!("a: {}1{}\n", "[".repeat(50), "]".repeat(50));
        assert!(parse_located(&fine).is_ok());
    }

    /// Each mark was one more call of `parse_located`: ten thousand of them (a 30 KB file)
    /// overflowed the stack and aborted the process. Found by tests/fuzz.rs.
    #[test]
    fn a_file_of_byte_order_marks_is_read_without_recursion() {
        let marks = 100_000;
        let text = format!("{}a: 1\n", "\u{feff}".repeat(marks));
        let docs = parse_located(&text).unwrap();
        let one = docs[0].root.as_ref().unwrap().get("a").unwrap();
        let at = marks * '\u{feff}'.len_utf8() + "a: ".len();
        assert_eq!(one.as_scalar().unwrap().span, at..at + 1);
        let one = parse_located("\u{feff}\u{feff}a: 1\n").unwrap()[0]
            .root
            .clone();
        assert_eq!(one.unwrap().get("a").unwrap().offset(), 9);
    }

    /// Every libyaml read accepts what `parse_located` accepts (brackets in a comment are no
    /// nesting) and refuses deep nesting at its line, at once.
    #[test]
    fn each_read_checks_nesting_as_parse_located_does() {
        let commented = format!("# {}\nimage: web\n", "[".repeat(300));
        assert!(parse_located(&commented).is_ok());
        assert!(crate::json_documents(&commented).is_ok());
        assert!(crate::from_str::<yaml_serde::Value>(&commented).is_ok());
        let deep = format!("a: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        let started = std::time::Instant::now();
        let e = crate::from_str::<yaml_serde::Value>(&deep).unwrap_err();
        assert_eq!((e.line, e.column), (1, 260));
        assert!(e.message.contains("nested deeper than 256"), "{e}");
        assert!(crate::json_documents(&deep)
            .unwrap_err()
            .to_string()
            .contains("nested deeper than 256"));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    /// The fingerprint of a file with a byte order mark vouches for the whole file (the
    /// text a second read finds and an edit is spliced into), not for what follows the mark.
    #[test]
    fn a_marked_file_is_vouched_for_whole() {
        let text = "\u{feff}image:\n  tag: 1.0.0\n";
        let (_, fingerprint) = parse_located_fingerprinted(text).unwrap();
        assert!(fingerprint.read_in_one_pass());
        assert!(fingerprint.read_in_one_pass_from(text));
        assert!(!fingerprint.read_in_one_pass_from(&text[3..]));
    }

    /// Positions near `usize::MAX` overflowed (a panic in a debug build, a wrapped number in
    /// a release build). Found by tests/fuzz.rs.
    #[test]
    fn positions_near_the_top_saturate() {
        assert_eq!(
            LineIndex::new("ab\ncd").line_col(usize::MAX),
            (2, usize::MAX - 2)
        );
        assert_eq!(
            LineIndex::shifted("", usize::MAX, usize::MAX).line_col(0),
            (usize::MAX, usize::MAX)
        );
        let mut root = parse_located("a: [x]\n").unwrap()[0].root.clone().unwrap();
        root.shift(usize::MAX);
        assert_eq!(root.offset(), usize::MAX);
        let x = root
            .at(&[PathSeg::Key("a".into()), PathSeg::Index(0)])
            .unwrap();
        assert_eq!(x.as_scalar().unwrap().span, usize::MAX..usize::MAX);
    }

    #[test]
    fn line_index() {
        let idx = LineIndex::new("ab\ncd\n\nx");
        assert_eq!(idx.line_col(0), (1, 1));
        assert_eq!(idx.line_col(4), (2, 2));
        assert_eq!(idx.line_col(7), (4, 1));
    }
}
