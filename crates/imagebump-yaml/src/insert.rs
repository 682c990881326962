//! Structural edits: set a value at a path, creating mapping keys that do not exist yet,
//! or append an item to a sequence. Used where imagebump writes something a file does not
//! hold yet (an Argo CD override file entry, a kustomization `images:` entry, a Helm values
//! key). Existing text is never rewritten: new lines are inserted after the last line of
//! the parent block, indented like its siblings, and the result is parsed again and must
//! equal the old document with exactly these values set.

use serde::Deserialize;
use serde_json::Value;

use super::edit::{render_scalar, EditError};
use super::located::{parse_located, Node, ParseError, PathSeg, Scalar, Style};
use super::path_to_string;

/// Set `value` at `path` in document `doc`. A final `Index(n)` with `n` equal to the
/// sequence's length appends.
#[derive(Debug, Clone, PartialEq)]
pub struct Upsert {
    pub doc: usize,
    pub path: Vec<PathSeg>,
    pub value: Value,
}

/// Apply the upserts in order and verify the result.
pub fn apply_upserts(text: &str, upserts: &[Upsert]) -> Result<String, EditError> {
    let mut out = text.to_string();
    for u in upserts {
        out = apply_one(&out, u)?;
    }
    verify(text, &out, upserts)?;
    Ok(out)
}

fn apply_one(text: &str, u: &Upsert) -> Result<String, EditError> {
    let docs = parse_located(text).map_err(|e| EditError::Reparse(e.to_string()))?;
    let style = Layout::of(text);
    let root = match docs.get(u.doc).map(|d| d.root.as_ref()) {
        Some(Some(root)) => root,
        // An empty file (or only comments): the whole path is new, at the end.
        None | Some(None) if u.doc == 0 && docs.iter().all(|d| d.root.is_none()) => {
            let mut out = text.to_string();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push_str(style.newline);
            }
            out.push_str(&style.render_path(&u.path, &u.value, 0));
            return Ok(out);
        }
        _ => {
            return Err(EditError::Mismatch(format!(
                "document {} does not exist",
                u.doc.saturating_add(1)
            )))
        }
    };
    let (node, rest) = deepest(root, &u.path);
    let Some((missing, below)) = rest.split_first() else {
        return replace_scalar(text, node, u);
    };
    let at = where_(u.path.strip_suffix(rest).unwrap_or_default());
    match (node, missing) {
        // An empty flow mapping (`{}`, `key: {}`) becomes the block mapping of what is added.
        (Node::Map { entries, offset }, PathSeg::Key(_))
            if entries.is_empty() && text.get(*offset..).is_some_and(|t| t.starts_with("{}")) =>
        {
            fill_empty_map(text, *offset, rest, &u.value, &style)
        }
        (Node::Map { entries, offset }, PathSeg::Key(_)) => {
            let first = entries.first().map_or(*offset, |(k, _)| k.offset);
            ensure_block(text, first, &at)?;
            let indent = column(text, first);
            let end = block_end(text, first, indent, false);
            let new = style.render_path(rest, &u.value, indent);
            Ok(insert(text, end, &new, style.newline))
        }
        (Node::Seq { items, offset }, PathSeg::Index(i)) if *i == items.len() => {
            let first = items.first().map_or(*offset, Node::offset);
            let dash = dash_before(text, first).ok_or_else(|| {
                EditError::Mismatch(format!("{at}: only block sequences (`- item`) can grow"))
            })?;
            let indent = column(text, dash);
            let end = block_end(text, dash, indent, true);
            let new = style.render_item(below, &u.value, indent);
            Ok(insert(text, end, &new, style.newline))
        }
        _ => Err(EditError::Mismatch(format!(
            "{at}: cannot add {} here",
            path_to_string(rest)
        ))),
    }
}

/// `text` with the empty flow mapping `{}` at `offset` replaced by a block mapping holding
/// `path: value`: on its own line (a document that is `{}`) at that line's indent, after a
/// key (`key: {}`) on the next lines, indented below the key.
fn fill_empty_map(
    text: &str,
    offset: usize,
    path: &[PathSeg],
    value: &Value,
    style: &Layout,
) -> Result<String, EditError> {
    let (line_start, line) = line_before(text, offset)
        .ok_or_else(|| EditError::Mismatch("an empty mapping not found in the text".into()))?;
    let indent = line.chars().take_while(|c| *c == ' ').count();
    let end = offset.saturating_add(2);
    let rest = text.get(end..).unwrap_or_default();
    // What follows `{}` on its line is kept (a comment), after the new block.
    let (same_line, after) = rest.split_once('\n').map_or((rest, ""), |(a, b)| (a, b));
    let same_line = same_line.trim_end_matches('\r');
    let (head, block) = if line.trim().is_empty() {
        (
            text.get(..line_start).unwrap_or_default(),
            style.render_path(path, value, indent),
        )
    } else {
        let head = text.get(..offset).unwrap_or_default().trim_end_matches(' ');
        let block = format!(
            "{}{}",
            style.newline,
            style.render_path(path, value, indent.saturating_add(2))
        );
        (head, block)
    };
    let comment = if same_line.trim().is_empty() {
        String::new()
    } else {
        format!("{}{}", same_line.trim(), style.newline)
    };
    let mut out = format!("{head}{block}{comment}");
    if !out.ends_with('\n') {
        out.push_str(style.newline);
    }
    out.push_str(after);
    Ok(out)
}

/// The node `path` reaches below `root` as far as it exists, and the rest of the path
/// (empty when all of it exists).
fn deepest<'a>(root: &'a Node, path: &'a [PathSeg]) -> (&'a Node, &'a [PathSeg]) {
    let mut node = root;
    let mut rest = path;
    while let Some((seg, below)) = rest.split_first() {
        let next = match (seg, node) {
            (PathSeg::Key(k), Node::Map { .. }) => node.get(k),
            (PathSeg::Index(i), Node::Seq { items, .. }) => items.get(*i),
            _ => None,
        };
        match next {
            Some(n) => node = n,
            None => break,
        }
        rest = below;
    }
    (node, rest)
}

fn where_(path: &[PathSeg]) -> String {
    if path.is_empty() {
        "the document root".into()
    } else {
        path_to_string(path)
    }
}

fn replace_scalar(text: &str, node: &Node, u: &Upsert) -> Result<String, EditError> {
    let (Node::Scalar(s), Some(new)) = (node, scalar_text(&u.value)) else {
        return Err(EditError::Mismatch(format!(
            "{}: only scalar values can be replaced",
            path_to_string(&u.path)
        )));
    };
    let (Some(head), Some(raw), Some(tail)) = (
        text.get(..s.span.start),
        text.get(s.span.clone()),
        text.get(s.span.end..),
    ) else {
        return Err(EditError::Mismatch(format!(
            "{}: not found in the text",
            path_to_string(&u.path)
        )));
    };
    let rendered = if s.value.is_empty() && raw.is_empty() {
        render_plain_or_quoted(&new)
    } else {
        render_scalar(s, raw, &new)?
    };
    Ok([head, &rendered, tail].concat())
}

/// The start of the line holding `offset`, and that line up to `offset`. (Offsets come from
/// parsing `text`, so they are on character boundaries; `None` when one is not.)
fn line_before(text: &str, offset: usize) -> Option<(usize, &str)> {
    let head = text.get(..offset)?;
    let line = head.rsplit_once('\n').map_or(head, |(_, line)| line);
    Some((offset.saturating_sub(line.len()), line))
}

/// Block collections only: a flow collection (`{a: 1}`, `[x]`) is left to the user.
fn ensure_block(text: &str, first: usize, at: &str) -> Result<(), EditError> {
    let (_, line) = line_before(text, first)
        .ok_or_else(|| EditError::Mismatch(format!("{at}: not found in the text")))?;
    if line.contains(['{', '[']) {
        return Err(EditError::Mismatch(format!(
            "{at} is written in flow style; imagebump only adds to block style"
        )));
    }
    Ok(())
}

fn column(text: &str, offset: usize) -> usize {
    line_before(text, offset).map_or(0, |(_, line)| line.chars().count())
}

/// The offset of the `-` that introduces the sequence item starting at `item`.
fn dash_before(text: &str, item: usize) -> Option<usize> {
    let (line_start, before) = line_before(text, item)?;
    let (dashed, after) = before.rsplit_once('-')?;
    after
        .chars()
        .all(char::is_whitespace)
        .then_some(line_start.saturating_add(dashed.len()))
}

/// Where the block whose entries start at `first` (at `indent` columns) ends: just after
/// its last non-blank, non-comment line.
fn block_end(text: &str, first: usize, indent: usize, sequence: bool) -> usize {
    let mut lines = text.get(first..).unwrap_or_default().split_inclusive('\n');
    // The line of the first entry belongs to the block.
    let mut pos = first.saturating_add(lines.next().map_or(0, str::len));
    let mut end = pos;
    for raw in lines {
        let line_end = pos.saturating_add(raw.len());
        let line = raw.trim_end_matches(['\n', '\r']);
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            pos = line_end;
            continue;
        }
        if line.starts_with("---") || line.starts_with("...") {
            break;
        }
        let ind = line.len().saturating_sub(trimmed.len());
        let inside = ind > indent || (ind == indent && (!sequence || trimmed.starts_with('-')));
        if !inside {
            break;
        }
        pos = line_end;
        end = line_end;
    }
    end
}

/// `new` inserted into `text` at `at`, on a line of its own (at the end if `at` is not in
/// `text`).
fn insert(text: &str, at: usize, new: &str, newline: &str) -> String {
    let (head, tail) = text.split_at_checked(at).unwrap_or((text, ""));
    let mut out = String::with_capacity(text.len().saturating_add(new.len()).saturating_add(2));
    out.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        out.push_str(newline);
    }
    out.push_str(new);
    out.push_str(tail);
    out
}

/// How the file writes things: line endings, and whether sequences under a key are
/// indented (`key:\n  - a`) or not (`key:\n- a`).
struct Layout {
    newline: &'static str,
    seq_offset: usize,
}

impl Layout {
    fn of(text: &str) -> Layout {
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let mut seq_offset = 0;
        let mut prev: Option<(usize, bool)> = None;
        for line in text.lines() {
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let ind = line.len().saturating_sub(trimmed.len());
            if let Some((pind, key_only)) = prev {
                if key_only && trimmed.starts_with("- ") {
                    seq_offset = ind.saturating_sub(pind);
                    break;
                }
            }
            prev = Some((
                ind,
                trimmed.trim_end().ends_with(':') && !trimmed.starts_with('-'),
            ));
        }
        Layout {
            newline,
            seq_offset,
        }
    }

    fn render_path(&self, path: &[PathSeg], value: &Value, indent: usize) -> String {
        match path.split_first() {
            None => String::new(),
            Some((PathSeg::Key(k), [])) => self.render_kv(k, value, indent),
            Some((PathSeg::Key(k), rest)) => {
                let pad = " ".repeat(indent);
                let child = match rest.first() {
                    Some(PathSeg::Index(_)) => indent.saturating_add(self.seq_offset),
                    _ => indent.saturating_add(2),
                };
                format!(
                    "{pad}{}:{}{}",
                    key_text(k),
                    self.newline,
                    self.render_path(rest, value, child)
                )
            }
            // A new sequence holds just this item.
            Some((PathSeg::Index(_), rest)) => self.render_item(rest, value, indent),
        }
    }

    fn render_kv(&self, key: &str, value: &Value, indent: usize) -> String {
        let pad = " ".repeat(indent);
        let nl = self.newline;
        let k = key_text(key);
        match value {
            Value::Object(m) if !m.is_empty() => {
                let mut s = format!("{pad}{k}:{nl}");
                for (ck, cv) in m {
                    s.push_str(&self.render_kv(ck, cv, indent.saturating_add(2)));
                }
                s
            }
            Value::Array(a) if !a.is_empty() => {
                let mut s = format!("{pad}{k}:{nl}");
                for item in a {
                    let at = indent.saturating_add(self.seq_offset);
                    s.push_str(&self.render_item(&[], item, at));
                }
                s
            }
            other => format!("{pad}{k}: {}{nl}", inline(other)),
        }
    }

    /// `- item` at `indent` (the dash's column); `path` nests the value inside the item.
    fn render_item(&self, path: &[PathSeg], value: &Value, indent: usize) -> String {
        let inner = indent.saturating_add(2);
        let body = if path.is_empty() {
            match value {
                Value::Object(m) if !m.is_empty() => {
                    let mut s = String::new();
                    for (k, v) in m {
                        s.push_str(&self.render_kv(k, v, inner));
                    }
                    s
                }
                Value::Array(a) if !a.is_empty() => {
                    let mut s = String::new();
                    for v in a {
                        s.push_str(&self.render_item(&[], v, inner));
                    }
                    s
                }
                other => format!("{}{}{}", " ".repeat(inner), inline(other), self.newline),
            }
        } else {
            self.render_path(path, value, inner)
        };
        // The first line of the body moves up onto the dash line, in place of its
        // indentation (every body starts with `inner` spaces).
        let pad = " ".repeat(indent);
        format!("{pad}- {}", body.get(inner..).unwrap_or(&body))
    }
}

fn key_text(k: &str) -> String {
    render_plain_or_quoted(k)
}

fn inline(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => render_plain_or_quoted(s),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

/// A string as a plain scalar when YAML reads it back as the same string, else quoted.
fn render_plain_or_quoted(s: &str) -> String {
    let plain = Scalar {
        value: String::new(),
        span: 0..0,
        style: Style::Plain,
    };
    render_scalar(&plain, "x", s).unwrap_or_else(|_| format!("{s:?}"))
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Why a YAML stream could not be read as values.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReadError {
    /// Nested deeper than this crate reads, at its line.
    #[error(transparent)]
    Nesting(#[from] ParseError),
    /// libyaml's or serde's message, in their words.
    #[error("{0}")]
    Value(String),
}

/// Why [`set_path`] could not set a value; each variant holds the path (`a.b[2]`) it
/// stopped at.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetPathError {
    #[error("{0}: not a list")]
    NotAList(String),
    #[error("{0}: not a mapping")]
    NotAMapping(String),
    #[error("{0}: no such item")]
    NoSuchItem(String),
}

/// Every document of a YAML stream as a JSON value (what libyaml reads).
pub fn json_documents(text: &str) -> Result<Vec<Value>, ReadError> {
    crate::check_nesting(text)?;
    yaml_serde::Deserializer::from_str(text)
        .map(|d| {
            let v =
                yaml_serde::Value::deserialize(d).map_err(|e| ReadError::Value(e.to_string()))?;
            serde_json::to_value(v).map_err(|e| ReadError::Value(e.to_string()))
        })
        .collect()
}

/// Set `value` at `path` in a JSON document, creating objects and appending to arrays.
pub fn set_path(doc: &mut Value, path: &[PathSeg], value: Value) -> Result<(), SetPathError> {
    let parents = path.split_last().map_or(&[][..], |(_, parents)| parents);
    let mut node = doc;
    // Each parent with the segment after it, which says what a missing value must be.
    let nexts = path.iter().skip(1);
    for (i, (seg, next)) in parents.iter().zip(nexts).enumerate() {
        let next_is_index = matches!(next, PathSeg::Index(_));
        let above = || path_to_string(parents.get(..i).unwrap_or_default());
        if node.is_null() {
            *node = if let PathSeg::Key(_) = seg {
                Value::Object(Default::default())
            } else {
                return Err(SetPathError::NotAList(above()));
            };
        }
        node = match seg {
            PathSeg::Key(k) => {
                let obj = node
                    .as_object_mut()
                    .ok_or_else(|| SetPathError::NotAMapping(above()))?;
                obj.entry(k.clone()).or_insert_with(|| {
                    if next_is_index {
                        Value::Array(Vec::new())
                    } else {
                        Value::Null
                    }
                })
            }
            PathSeg::Index(n) => {
                let arr = node
                    .as_array_mut()
                    .ok_or_else(|| SetPathError::NotAList(above()))?;
                if *n == arr.len() {
                    arr.push(Value::Null);
                }
                arr.get_mut(*n).ok_or_else(|| {
                    let here = parents.get(..=i).unwrap_or_default();
                    SetPathError::NoSuchItem(path_to_string(here))
                })?
            }
        };
    }
    set_last(node, path, value)
}

/// Set `value` at the last segment of `path` in `node`, the value its other segments reach.
fn set_last(node: &mut Value, path: &[PathSeg], value: Value) -> Result<(), SetPathError> {
    let Some((last, parents)) = path.split_last() else {
        *node = value;
        return Ok(());
    };
    if node.is_null() {
        *node = match last {
            PathSeg::Key(_) => Value::Object(Default::default()),
            PathSeg::Index(_) => Value::Array(Vec::new()),
        };
    }
    match last {
        PathSeg::Key(k) => {
            node.as_object_mut()
                .ok_or_else(|| SetPathError::NotAMapping(path_to_string(parents)))?
                .insert(k.clone(), value);
        }
        PathSeg::Index(n) => {
            let arr = node
                .as_array_mut()
                .ok_or_else(|| SetPathError::NotAList(path_to_string(parents)))?;
            if *n == arr.len() {
                arr.push(value);
            } else {
                let slot = arr
                    .get_mut(*n)
                    .ok_or_else(|| SetPathError::NoSuchItem(path_to_string(path)))?;
                *slot = value;
            }
        }
    }
    Ok(())
}

/// The new text must read as the old documents with exactly the upserts applied. Scalars
/// are compared as YAML reads them (a `true` written for a string would be a mismatch).
fn verify(before: &str, after: &str, upserts: &[Upsert]) -> Result<(), EditError> {
    let mut expected = json_documents(before).map_err(|e| EditError::Reparse(e.to_string()))?;
    let actual = json_documents(after).map_err(|e| EditError::Reparse(e.to_string()))?;
    if expected.is_empty() {
        expected.push(Value::Null);
    }
    for u in upserts {
        let doc = expected.get_mut(u.doc).ok_or_else(|| {
            let n = u.doc.saturating_add(1);
            EditError::Mismatch(format!("document {n} does not exist"))
        })?;
        set_path(doc, &u.path, u.value.clone()).map_err(|e| EditError::Mismatch(e.to_string()))?;
    }
    if expected != actual {
        return Err(EditError::Mismatch(
            "the inserted text does not read back as intended".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(k: &str) -> PathSeg {
        PathSeg::Key(k.into())
    }

    fn up(text: &str, path: Vec<PathSeg>, value: Value) -> Result<String, EditError> {
        apply_upserts(
            text,
            &[Upsert {
                doc: 0,
                path,
                value,
            }],
        )
    }

    #[test]
    fn appends_to_a_list_in_the_files_style() {
        let text = "# overrides\nhelm:\n  parameters:\n  - name: replicaCount\n    value: \"2\"\n  # keep me\nother: x\n";
        let got = up(
            text,
            vec![key("helm"), key("parameters"), PathSeg::Index(1)],
            json!({"name": "image.tag", "value": "1.2.3", "forcestring": true}),
        )
        .unwrap();
        assert_eq!(
            got,
            "# overrides\nhelm:\n  parameters:\n  - name: replicaCount\n    value: \"2\"\n  - name: image.tag\n    value: 1.2.3\n    forcestring: true\n  # keep me\nother: x\n"
        );
    }

    #[test]
    fn creates_missing_keys_and_files() {
        let got = up(
            "",
            vec![key("kustomize"), key("images")],
            json!(["nginx:1.27.2"]),
        )
        .unwrap();
        assert_eq!(got, "kustomize:\n  images:\n  - nginx:1.27.2\n");
        let got = up(
            "---\n# c\nkustomize:\n  namePrefix: x-\n",
            vec![key("kustomize"), key("images")],
            json!(["a=b:1"]),
        )
        .unwrap();
        assert_eq!(
            got,
            "---\n# c\nkustomize:\n  namePrefix: x-\n  images:\n  - a=b:1\n"
        );
        let got = up(
            "images:\n  - name: a\n    newTag: \"1\"\n",
            vec![key("images"), PathSeg::Index(1)],
            json!({"name": "b", "newTag": "2"}),
        )
        .unwrap();
        assert_eq!(
            got,
            "images:\n  - name: a\n    newTag: \"1\"\n  - name: b\n    newTag: \"2\"\n"
        );
    }

    #[test]
    fn nested_keys_are_created_under_existing_parents() {
        let got = up(
            "image:\n  repository: web\nreplicas: 2\n",
            vec![key("image"), key("tag")],
            json!("1.10"),
        )
        .unwrap();
        assert_eq!(
            got,
            "image:\n  repository: web\n  tag: \"1.10\"\nreplicas: 2\n"
        );
        let got = up("a: 1\r\n", vec![key("b"), key("c"), key("d")], json!("x")).unwrap();
        assert_eq!(got, "a: 1\r\nb:\r\n  c:\r\n    d: x\r\n");
    }

    #[test]
    fn existing_scalars_are_replaced_in_place() {
        let got = up(
            "a:\n  tag: '1.0' # c\n",
            vec![key("a"), key("tag")],
            json!("1.1"),
        )
        .unwrap();
        assert_eq!(got, "a:\n  tag: '1.1' # c\n");
    }

    /// Naming a document number past the end overflowed. Found by tests/fuzz.rs.
    #[test]
    fn a_document_that_does_not_exist_is_an_error() {
        let upsert = |doc| Upsert {
            doc,
            path: vec![key("b")],
            value: json!("x"),
        };
        for (doc, shown) in [(1, "2".to_string()), (usize::MAX, usize::MAX.to_string())] {
            let e = apply_upserts("a: 1\n", &[upsert(doc)]).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("verification failed: document {shown} does not exist")
            );
        }
    }

    #[test]
    fn an_empty_flow_mapping_becomes_a_block_mapping() {
        let name = vec![key("image"), key("name")];
        assert_eq!(
            up("{}\n", name.clone(), json!("registry.test/web")).unwrap(),
            "image:\n  name: registry.test/web\n"
        );
        assert_eq!(
            up(
                "a: 1\nimage: {}\nb: 2\n",
                vec![key("image"), key("tag")],
                json!("1.1.0")
            )
            .unwrap(),
            "a: 1\nimage:\n  tag: 1.1.0\nb: 2\n"
        );
        assert_eq!(up("{}", name, json!("x")).unwrap(), "image:\n  name: x\n");
    }

    #[test]
    fn flow_collections_are_refused() {
        let e = up("a: {b: 1}\n", vec![key("a"), key("c")], json!("x")).unwrap_err();
        assert!(e.to_string().contains("flow style"), "{e}");
    }

    #[test]
    fn set_path_builds_json() {
        let mut v = json!({"helm": {"parameters": [{"name": "a"}]}});
        set_path(
            &mut v,
            &[key("helm"), key("parameters"), PathSeg::Index(1)],
            json!({"name": "b"}),
        )
        .unwrap();
        set_path(&mut v, &[key("kustomize"), key("images")], json!(["x"])).unwrap();
        assert_eq!(
            v,
            json!({"helm": {"parameters": [{"name": "a"}, {"name": "b"}]}, "kustomize": {"images": ["x"]}})
        );
    }

    #[test]
    fn set_path_names_where_it_stopped() {
        let mut v = json!({"a": [1], "s": "x"});
        let set = |v: &mut Value, path: &[PathSeg]| set_path(v, path, json!(0)).unwrap_err();
        let e = set(&mut v, &[key("a"), PathSeg::Index(3), key("b")]);
        assert_eq!(e.to_string(), "a[3]: no such item");
        let e = set(&mut v, &[key("s"), key("b")]);
        assert_eq!(e, SetPathError::NotAMapping("s".into()));
        let e = set(&mut v, &[key("a"), key("b")]);
        assert_eq!(e.to_string(), "a: not a mapping");
    }

    #[test]
    fn json_documents_keep_libyaml_words() {
        let e = json_documents("a: [\n").unwrap_err();
        assert!(matches!(e, ReadError::Value(_)), "{e:?}");
        assert!(!e.to_string().is_empty());
    }
}
