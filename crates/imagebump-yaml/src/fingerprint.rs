//! A file's values as one number: what verification compares an edited text with, so that
//! the text before the edit need not be parsed a second time (docs/architecture.md,
//! "Editing").
//!
//! The hash is SipHash with keys drawn at random once per process (`RandomState`): a
//! repository cannot choose a text whose values collide with other values, and a number
//! is never kept beyond the run. Mappings are hashed in their written order, which an edit
//! of a value never changes; a mismatch only sends verification down its full path.

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::LazyLock;

use yaml_serde::Value;

static KEYS: LazyLock<std::hash::RandomState> = LazyLock::new(std::hash::RandomState::new);

/// The fingerprint of a stream's documents, as libyaml reads them, built a document at a
/// time (a document need not be kept once added).
pub struct Fingerprint {
    hasher: std::hash::DefaultHasher,
    documents: usize,
}

impl Fingerprint {
    pub fn new() -> Fingerprint {
        Fingerprint {
            hasher: KEYS.build_hasher(),
            documents: 0,
        }
    }

    pub fn add(&mut self, doc: &Value) {
        value(doc, &mut self.hasher);
        self.documents = self.documents.saturating_add(1);
    }

    pub fn finish(mut self) -> u64 {
        self.documents.hash(&mut self.hasher);
        self.hasher.finish()
    }
}

/// The fingerprint of a stream's documents.
pub fn of_documents(docs: &[Value]) -> u64 {
    let mut f = Fingerprint::new();
    for d in docs {
        f.add(d);
    }
    f.finish()
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
