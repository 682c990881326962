//! Byte-exact scalar replacement, verified by re-parsing.

use std::ops::Range;

use serde::Deserialize;
use yaml_serde::Value;

use super::located::{PathSeg, Scalar, Style};
use super::path_to_string;

/// Replace one scalar: the bytes in `span` become `new_raw`, whose decoded value is
/// `new_value`, found at `path` in document `doc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub doc: usize,
    pub path: Vec<PathSeg>,
    pub span: Range<usize>,
    pub new_raw: String,
    pub new_value: String,
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
pub fn render_scalar(old: &Scalar, old_raw: &str, new_value: &str) -> Result<String, EditError> {
    match old.style {
        Style::Double => Ok(format!(
            "\"{}\"",
            new_value.replace('\\', "\\\\").replace('"', "\\\"")
        )),
        Style::Single => Ok(format!("'{}'", new_value.replace('\'', "''"))),
        Style::Plain => {
            if plain_reads_back(new_value, old_raw) {
                Ok(new_value.to_string())
            } else {
                Ok(format!(
                    "\"{}\"",
                    new_value.replace('\\', "\\\\").replace('"', "\\\"")
                ))
            }
        }
        Style::Block => Err(EditError::BlockScalar(old_raw.to_string())),
    }
}

fn plain_reads_back(new_value: &str, old_raw: &str) -> bool {
    let parse = |s: &str| yaml_serde::from_str::<Value>(&format!("k: {s}")).ok();
    match parse(new_value).as_ref().and_then(|v| v.get("k")) {
        Some(Value::String(s)) => s == new_value,
        // A number is fine only where the old value was a number too (the user chose that).
        Some(v @ Value::Number(_)) => {
            scalar_string(v).as_deref() == Some(new_value)
                && matches!(
                    parse(old_raw).as_ref().and_then(|v| v.get("k")),
                    Some(Value::Number(_))
                )
        }
        _ => false,
    }
}

/// Apply the edits to `text` and prove the result: every edited path now holds its new
/// value, and nothing else in any document changed.
pub fn apply_edits(text: &str, edits: &[Edit]) -> Result<String, EditError> {
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| e.span.start);
    let mut out = String::with_capacity(text.len() + 64);
    let mut pos = 0;
    for e in &sorted {
        if e.span.start < pos {
            return Err(EditError::Overlap(e.span.start));
        }
        out.push_str(&text[pos..e.span.start]);
        out.push_str(&e.new_raw);
        pos = e.span.end;
    }
    out.push_str(&text[pos..]);
    verify(text, &out, edits)?;
    Ok(out)
}

fn parse_all(text: &str) -> Result<Vec<Value>, String> {
    yaml_serde::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).map_err(|e| e.to_string()))
        .collect()
}

fn verify(before: &str, after: &str, edits: &[Edit]) -> Result<(), EditError> {
    let mut expected = parse_all(before).map_err(EditError::Reparse)?;
    let actual = parse_all(after).map_err(EditError::Reparse)?;
    if expected.len() != actual.len() {
        return Err(EditError::Mismatch(format!(
            "document count changed from {} to {}",
            expected.len(),
            actual.len()
        )));
    }
    for e in edits {
        let where_ = || format!("document {} at {}", e.doc + 1, path_to_string(&e.path));
        let got = actual
            .get(e.doc)
            .and_then(|d| lookup(d, &e.path))
            .ok_or_else(|| EditError::Mismatch(format!("{} is gone", where_())))?;
        if scalar_string(got).as_deref() != Some(e.new_value.as_str()) {
            return Err(EditError::Mismatch(format!(
                "{} reads {:?}, expected {:?}",
                where_(),
                scalar_string(got).unwrap_or_default(),
                e.new_value
            )));
        }
        let slot = expected
            .get_mut(e.doc)
            .and_then(|d| lookup_mut(d, &e.path))
            .ok_or_else(|| EditError::Mismatch(format!("{} did not exist before", where_())))?;
        *slot = got.clone();
    }
    if expected != actual {
        return Err(EditError::Mismatch(
            "the edit changed values other than the intended ones (is the value shared through a YAML anchor?)".into(),
        ));
    }
    Ok(())
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
    }

    #[test]
    fn an_edit_through_an_anchor_is_refused() {
        let err = edit_tag("tag: &v 1.2.0\nother: *v\n", "1.3.0").unwrap_err();
        assert!(matches!(err, EditError::Mismatch(_)), "{err}");
    }

    #[test]
    fn block_scalars_are_refused() {
        assert!(matches!(
            edit_tag("tag: |\n  1.2.0\n", "1.3.0"),
            Err(EditError::BlockScalar(_))
        ));
    }
}
