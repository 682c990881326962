//! A file's values as one number: what verification compares an edited text with, so that
//! the text before the edit need not be parsed a second time (docs/architecture.md,
//! "Editing").
//!
//! Two readings make one: libyaml's values (any text), or the one-pass reader's located
//! view (the plain block YAML it vouches for, `simple.rs`). A [`Fingerprint`] says which,
//! and an edited text is read the same way to be compared with it.
//!
//! The hash is SipHash with keys drawn at random once per process (`RandomState`): a
//! repository cannot choose a text whose values collide with other values, and a number
//! is never kept beyond the run. Mappings are hashed in their written order, which an edit
//! of a value never changes; a mismatch only sends verification down its full path.

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::LazyLock;

use yaml_serde::Value;

use crate::located::{Doc, Node};

/// The values of a text as one number, and which reader read them: what
/// [`crate::apply_edits_known`] compares an edited text with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    pub(crate) hash: u64,
    pub(crate) by: Reader,
    /// When the one-pass reader read the text: the hash of the text itself (0 otherwise).
    /// An edit is proven without reading the edited text only for the very text the reader
    /// vouched for (`edit.rs`, `in_their_lines`).
    pub(crate) text: u64,
}

impl Fingerprint {
    /// Whether `other` is the fingerprint of the same values read by the same reader (the
    /// texts may differ).
    pub(crate) fn same_values(&self, other: &Fingerprint) -> bool {
        self.hash == other.hash && self.by == other.by
    }

    /// This fingerprint vouching for `whole`, the file whose content after its byte order
    /// marks was read (the marks hold no value): the text an edit is spliced into and a
    /// second read compares with is the whole file.
    pub(crate) fn of_whole(self, whole: &str) -> Fingerprint {
        match self.by {
            Reader::OnePass => Fingerprint {
                text: text_hash(whole),
                ..self
            },
            Reader::Libyaml => self,
        }
    }

    /// Whether the one-pass reader read `text` itself to make this fingerprint.
    pub fn read_in_one_pass_from(&self, text: &str) -> bool {
        self.by == Reader::OnePass && self.text == text_hash(text)
    }

    /// Whether the one-pass reader read the text (and so vouched for it instead of libyaml).
    pub fn read_in_one_pass(&self) -> bool {
        self.by == Reader::OnePass
    }
}

/// The reader a [`Fingerprint`] was made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reader {
    /// libyaml's values (`yaml_serde`), aliases not expanded.
    Libyaml,
    /// The one-pass reader's located view: every node's kind, every key, every scalar's
    /// style and decoded text (`simple.rs`, which reads only what libyaml reads the same).
    OnePass,
}

static KEYS: LazyLock<std::hash::RandomState> = LazyLock::new(std::hash::RandomState::new);

/// The fingerprint of a stream's documents, as libyaml reads them, built a document at a
/// time (a document need not be kept once added).
pub struct ValuesHasher {
    hasher: std::hash::DefaultHasher,
    documents: usize,
}

impl ValuesHasher {
    pub fn new() -> ValuesHasher {
        ValuesHasher {
            hasher: KEYS.build_hasher(),
            documents: 0,
        }
    }

    pub fn add(&mut self, doc: &Value) {
        value(doc, &mut self.hasher);
        self.documents = self.documents.saturating_add(1);
    }

    pub fn finish(mut self) -> Fingerprint {
        self.documents.hash(&mut self.hasher);
        Fingerprint {
            hash: self.hasher.finish(),
            by: Reader::Libyaml,
            text: 0,
        }
    }
}

/// The fingerprint of a stream's documents.
pub fn of_documents(docs: &[Value]) -> Fingerprint {
    let mut f = ValuesHasher::new();
    for d in docs {
        f.add(d);
    }
    f.finish()
}

/// The fingerprint of the one-pass reader's view of a text. Spans and offsets are left
/// out: an edit moves them, and they say nothing of the values.
pub fn of_located(docs: &[Doc]) -> Fingerprint {
    // The view is written out as one byte string (each string with its length first) and
    // hashed in one call: SipHash's cost is in its calls more than in its bytes.
    let mut bytes = Vec::with_capacity(1024);
    bytes.extend_from_slice(&docs.len().to_le_bytes());
    for d in docs {
        match &d.root {
            Some(root) => located(root, &mut bytes),
            None => bytes.push(9),
        }
    }
    let mut h = KEYS.build_hasher();
    h.write(&bytes);
    Fingerprint {
        hash: h.finish(),
        by: Reader::OnePass,
        text: 0,
    }
}

/// The fingerprint of the one-pass reader's view `docs` of `text`, which it read.
pub(crate) fn of_text_read_in_one_pass(text: &str, docs: &[Doc]) -> Fingerprint {
    Fingerprint {
        text: text_hash(text),
        ..of_located(docs)
    }
}

/// The hash of a text's bytes (never 0, which stands for none).
fn text_hash(text: &str) -> u64 {
    let mut h = KEYS.build_hasher();
    h.write(text.as_bytes());
    h.finish().max(1)
}

fn located(node: &Node, out: &mut Vec<u8>) {
    let string = |s: &str, out: &mut Vec<u8>| {
        out.extend_from_slice(&s.len().to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    };
    match node {
        Node::Map { entries, .. } => {
            out.push(5);
            out.extend_from_slice(&entries.len().to_le_bytes());
            for (k, v) in entries {
                string(&k.name, out);
                located(v, out);
            }
        }
        Node::Seq { items, .. } => {
            out.push(4);
            out.extend_from_slice(&items.len().to_le_bytes());
            for i in items {
                located(i, out);
            }
        }
        Node::Scalar(s) => {
            out.push(3);
            out.push(s.style as u8);
            string(&s.value, out);
        }
        Node::Other { .. } => out.push(7),
    }
}

fn value(v: &Value, h: &mut impl Hasher) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Sequence(items) => {
            (4u8, items.len()).hash(h);
            for i in items {
                value(i, h);
            }
        }
        Value::Mapping(m) => {
            (5u8, m.len()).hash(h);
            for (k, v) in m {
                value(k, h);
                value(v, h);
            }
        }
        Value::Tagged(t) => {
            (6u8, t.tag.to_string()).hash(h);
            value(&t.value, h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(text: &str) -> Vec<Value> {
        use serde::Deserialize;
        yaml_serde::Deserializer::from_str(text)
            .map(|d| Value::deserialize(d).unwrap())
            .collect()
    }

    #[test]
    fn equal_values_are_equal_and_any_change_differs() {
        let base = "a: 1\nb: [x, {c: \"1.0\"}]\n---\nd: !t e\n";
        let same = "a:   1 # c\nb:\n- x\n- c: '1.0'\n---\nd: !t e\n";
        assert_eq!(of_documents(&docs(base)), of_documents(&docs(same)));
        for other in [
            "a: 2\nb: [x, {c: \"1.0\"}]\n---\nd: !t e\n",
            "a: 1\nb: [x, {c: 1.0}]\n---\nd: !t e\n",
            "a: 1\nb: [x, {c: \"1.0\"}]\n---\nd: !u e\n",
            "a: 1\nb: [x, {c: \"1.0\"}]\n",
            "b: [x, {c: \"1.0\"}]\na: 1\n---\nd: !t e\n",
            "a: 1\nb: [{c: \"1.0\"}, x]\n---\nd: !t e\n",
        ] {
            assert_ne!(
                of_documents(&docs(base)),
                of_documents(&docs(other)),
                "{other}"
            );
        }
    }
}
