//! Helm value key paths as argocd-image-updater reads and writes them (`helm.image-name`,
//! `helm.image-tag`, `helm.image-spec`, `manifestTargets.helm`): `a.b[2].c`.
//!
//! The path is split at every `.`; a part that ends in `[N]` (AIU's pattern
//! `^(.*)\[(.*)\]$`, greedy, so only the last bracket pair counts) is the key before the
//! bracket followed by list index `N`. `N` must be an integer (Go's `strconv.Atoi`).
//! There is no escaping, so a key that itself contains a `.` can only be reached as a
//! whole literal key at the top level of the values file. AIU resolves that ambiguity
//! differently when reading and when writing (pkg/argocd/update.go):
//!
//! - **Reading** (`resolveHelmScalarNode`, used for the current value): first the nested
//!   path; if any step is missing, is not a mapping, indexes a non-list or out of range,
//!   or reaches a list without an index, or the end is not a scalar, it then tries the
//!   whole path as one literal top-level key (`"image.tag": 1.0`). Only scalars (including
//!   `null`) are found. [`lookup`] follows this.
//! - **Writing** (`setHelmValue`): first the whole path as a literal top-level key; only
//!   if there is none, the nested path, creating missing mappings and keys (a missing part
//!   written as `x[0]` becomes a key named `x[0]`). Reaching a list without an index, an
//!   index into a non-list, an index out of range, or a non-mapping in the middle is an
//!   error. [`write_target`] follows this.
//!
//! So for a file with both `image.tag: a` and `image: {tag: b}`, AIU reads `b` but writes
//! the literal `image.tag`.

use serde_json::Value;

use imagebump_yaml::PathSeg;

/// Why a Helm key path cannot be read, or cannot be written where AIU would write it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("empty Helm key path")]
    Empty,
    #[error(
        "index {digits:?} in {raw:?} is not an integer (Helm key paths use key[N] for list items)"
    )]
    NotAnInteger { digits: String, raw: String },
    #[error("index {digits:?} in {raw:?}: {source}")]
    BadInteger {
        digits: String,
        raw: String,
        source: std::num::ParseIntError,
    },
    #[error("negative index {index} in {raw:?}")]
    Negative { index: i64, raw: String },
    #[error("index {index} of {key:?} is out of range [0, {len})")]
    OutOfRange { index: i64, key: String, len: usize },
    #[error("index {index} given but {key:?} is not a list")]
    NotAList { index: i64, key: String },
    #[error("{key:?} is a list: give an index, e.g. {key}[0]")]
    NoIndex { key: String },
    #[error("the values document is not a mapping")]
    ValuesNotAMapping,
    #[error("key {path:?} holds a {kind}, not a value")]
    LiteralNotAValue { path: String, kind: &'static str },
    #[error("{held:?} is a {kind}, not a mapping (needed for {needed:?})")]
    NotAMapping {
        held: String,
        kind: &'static str,
        needed: String,
    },
    #[error("{raw:?} holds a {kind}, not a value")]
    NotAValue { raw: String, kind: &'static str },
}

impl Error {
    /// What to change in the key path, where the path itself is at fault.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Error::NotAnInteger { .. } | Error::BadInteger { .. } | Error::Negative { .. } => {
                Some("write list items as key[N] with N a whole number from 0")
            }
            Error::NoIndex { .. } => Some("add the list item's index to the path: key[N]"),
            _ => None,
        }
    }
}

/// One `.`-separated part: a key, and the index that followed it (`key[N]`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Part<'a> {
    raw: &'a str,
    key: &'a str,
    index: Option<i64>,
}

fn part(raw: &str) -> Result<Part<'_>, Error> {
    let plain = Part {
        raw,
        key: raw,
        index: None,
    };
    let Some(inner) = raw.strip_suffix(']') else {
        return Ok(plain);
    };
    let Some((key, digits)) = inner.rsplit_once('[') else {
        return Ok(plain);
    };
    let unsigned = digits.strip_prefix(['+', '-']).unwrap_or(digits);
    if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::NotAnInteger {
            digits: digits.to_string(),
            raw: raw.to_string(),
        });
    }
    let index = digits.parse::<i64>().map_err(|source| Error::BadInteger {
        digits: digits.to_string(),
        raw: raw.to_string(),
        source,
    })?;
    Ok(Part {
        raw,
        key,
        index: Some(index),
    })
}

fn parts(path: &str) -> Result<Vec<Part<'_>>, Error> {
    if path.is_empty() {
        return Err(Error::Empty);
    }
    path.split('.').map(part).collect()
}

/// The nested reading of `path`: `a.b[2].c` → `a`, `b`, `2`, `c`.
pub fn parse(path: &str) -> Result<Vec<PathSeg>, Error> {
    let mut segs = Vec::new();
    for p in parts(path)? {
        segs.push(PathSeg::Key(p.key.to_string()));
        if let Some(i) = p.index {
            let i = usize::try_from(i).map_err(|_| Error::Negative {
                index: i,
                raw: p.raw.to_string(),
            })?;
            segs.push(PathSeg::Index(i));
        }
    }
    Ok(segs)
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

/// Look `path` up in a Helm values document the way AIU reads it: the nested path, else
/// the whole path as one literal top-level key. Only scalars are found. Returns the value
/// and the segments that reach it.
pub fn lookup<'a>(values: &'a Value, path: &str) -> Option<(&'a Value, Vec<PathSeg>)> {
    let root = values.as_object()?;
    match nested(values, path) {
        Ok(Some(found)) => Some(found),
        // A malformed index on the way is an error in AIU, with no literal lookup.
        Err(_) => None,
        Ok(None) => root
            .get(path)
            .filter(|v| is_scalar(v))
            .map(|v| (v, vec![PathSeg::Key(path.to_string())])),
    }
}

/// The nested reading; parts are parsed as they are reached, as AIU does.
fn nested<'a>(values: &'a Value, path: &str) -> Result<Option<(&'a Value, Vec<PathSeg>)>, Error> {
    let mut node = values;
    let mut segs = Vec::new();
    for raw in path.split('.') {
        let part = part(raw)?;
        let Some(next) = node.as_object().and_then(|m| m.get(part.key)) else {
            return Ok(None);
        };
        node = next;
        segs.push(PathSeg::Key(part.key.to_string()));
        match (part.index, node) {
            (Some(i), Value::Array(items)) => {
                let Some((i, item)) = usize::try_from(i)
                    .ok()
                    .and_then(|i| Some((i, items.get(i)?)))
                else {
                    return Ok(None);
                };
                node = item;
                segs.push(PathSeg::Index(i));
            }
            (Some(_), _) | (None, Value::Array(_)) => return Ok(None),
            (None, _) => {}
        }
    }
    Ok(is_scalar(node).then_some((node, segs)))
}

/// Where AIU would write a value for `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteTarget {
    /// An existing scalar.
    Existing(Vec<PathSeg>),
    /// Nothing there yet: under the mapping at `parent`, AIU creates nested mappings named
    /// `keys` (each part as written, `[N]` included), the last one holding the value.
    Create {
        parent: Vec<PathSeg>,
        keys: Vec<String>,
    },
}

/// The item `part`'s index names in `node` (pushed to `segs`), or `node` itself when
/// `part` has no index; an error when the index and the value disagree.
fn indexed<'v>(
    part: &Part<'_>,
    node: &'v Value,
    segs: &mut Vec<PathSeg>,
) -> Result<&'v Value, Error> {
    match (part.index, node) {
        (Some(i), Value::Array(items)) => {
            let len = items.len();
            let Some((i, item)) = usize::try_from(i)
                .ok()
                .and_then(|i| Some((i, items.get(i)?)))
            else {
                return Err(Error::OutOfRange {
                    index: i,
                    key: part.key.to_string(),
                    len,
                });
            };
            segs.push(PathSeg::Index(i));
            Ok(item)
        }
        (Some(i), _) => Err(Error::NotAList {
            index: i,
            key: part.key.to_string(),
        }),
        (None, Value::Array(_)) => Err(Error::NoIndex {
            key: part.key.to_string(),
        }),
        (None, _) => Ok(node),
    }
}

/// Where AIU's `setHelmValue` writes `path` in `values`: a literal top-level key first,
/// else the nested path (see the module documentation). `Err` where AIU fails.
pub fn write_target(values: &Value, path: &str) -> Result<WriteTarget, Error> {
    let Some(root) = values.as_object() else {
        return Err(Error::ValuesNotAMapping);
    };
    if let Some(v) = root.get(path) {
        return if is_scalar(v) {
            Ok(WriteTarget::Existing(vec![PathSeg::Key(path.to_string())]))
        } else {
            Err(Error::LiteralNotAValue {
                path: path.to_string(),
                kind: kind(v),
            })
        };
    }
    let parts = parts(path)?;
    let mut node = values;
    let mut segs = Vec::new();
    for (n, part) in parts.iter().enumerate() {
        let last = n.saturating_add(1) == parts.len();
        let Some(map) = node.as_object() else {
            // Name the key that holds the non-mapping (`image` of `image.name`), not the
            // one that was to go below it.
            let held: Vec<&str> = parts.iter().take(n).map(|p| p.raw).collect();
            return Err(Error::NotAMapping {
                held: held.join("."),
                kind: kind(node),
                needed: part.raw.to_string(),
            });
        };
        let Some(next) = map.get(part.key) else {
            return Ok(WriteTarget::Create {
                parent: segs,
                keys: parts.iter().skip(n).map(|p| p.raw.to_string()).collect(),
            });
        };
        node = next;
        segs.push(PathSeg::Key(part.key.to_string()));
        node = indexed(part, node, &mut segs)?;
        if last && !is_scalar(node) {
            return Err(Error::NotAValue {
                raw: part.raw.to_string(),
                kind: kind(node),
            });
        }
    }
    Ok(WriteTarget::Existing(segs))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "list",
        Value::Object(_) => "mapping",
        _ => "value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn k(s: &str) -> PathSeg {
        PathSeg::Key(s.to_string())
    }

    #[test]
    fn parse_paths() {
        assert_eq!(parse("image.tag"), Ok(vec![k("image"), k("tag")]));
        assert_eq!(
            parse("a.b[2].c"),
            Ok(vec![k("a"), k("b"), PathSeg::Index(2), k("c")])
        );
        // Greedy: only the last bracket pair is an index.
        assert_eq!(parse("a[1][2]"), Ok(vec![k("a[1]"), PathSeg::Index(2)]));
        assert_eq!(parse("x[+3]"), Ok(vec![k("x"), PathSeg::Index(3)]));
        assert_eq!(parse("[0]"), Ok(vec![k(""), PathSeg::Index(0)]));
        assert_eq!(parse("a]"), Ok(vec![k("a]")]));
        assert!(parse("a[x]")
            .unwrap_err()
            .to_string()
            .contains("not an integer"));
        assert!(parse("a[]").is_err());
        assert!(parse("a[-1]").unwrap_err().to_string().contains("negative"));
        assert!(parse("").is_err());
    }

    #[test]
    fn lookup_nested_index_and_literal() {
        let v = json!({
            "image": {"repository": "nginx", "tag": "1.0"},
            "sidecars": [{"image": {"tag": "2.0"}}, {"image": {"tag": "3.0"}}],
            "image.tag": "literal",
            "web.image.tag": "flat",
            "empty": null,
            "list": [1, 2]
        });
        assert_eq!(
            lookup(&v, "image.tag"),
            Some((&json!("1.0"), vec![k("image"), k("tag")]))
        );
        assert_eq!(
            lookup(&v, "sidecars[1].image.tag"),
            Some((
                &json!("3.0"),
                vec![k("sidecars"), PathSeg::Index(1), k("image"), k("tag")]
            ))
        );
        assert_eq!(
            lookup(&v, "web.image.tag"),
            Some((&json!("flat"), vec![k("web.image.tag")]))
        );
        assert_eq!(lookup(&v, "empty"), Some((&Value::Null, vec![k("empty")])));
        assert_eq!(
            lookup(&v, "list[1]"),
            Some((&json!(2), vec![k("list"), PathSeg::Index(1)]))
        );
        // Not scalars, out of range, list without index, index on a mapping.
        assert_eq!(lookup(&v, "image"), None);
        assert_eq!(lookup(&v, "sidecars[2].image.tag"), None);
        assert_eq!(lookup(&v, "sidecars"), None);
        assert_eq!(lookup(&v, "image[0]"), None);
        assert_eq!(lookup(&v, "missing.key"), None);
        assert_eq!(lookup(&v, "list[x]"), None);
        // The malformed part is never reached: the literal key is tried.
        assert_eq!(
            lookup(&json!({"missing.x[y]": 1}), "missing.x[y]"),
            Some((&json!(1), vec![k("missing.x[y]")]))
        );
        // Reached on the way: an error in AIU, so nothing is found.
        assert_eq!(
            lookup(&json!({"image": {"a": 1}, "image.a[y]": 1}), "image.a[y]"),
            None
        );
        assert_eq!(lookup(&json!(["a"]), "a"), None);
    }

    #[test]
    fn lookup_falls_back_to_literal_when_nested_is_not_a_scalar() {
        let v = json!({"image": {"tag": {"deep": 1}}, "image.tag": "flat"});
        assert_eq!(
            lookup(&v, "image.tag"),
            Some((&json!("flat"), vec![k("image.tag")]))
        );
    }

    #[test]
    fn write_prefers_the_literal_key() {
        let v = json!({"image": {"tag": "b"}, "image.tag": "a"});
        assert_eq!(
            lookup(&v, "image.tag").map(|(v, _)| v.clone()),
            Some(json!("b"))
        );
        assert_eq!(
            write_target(&v, "image.tag"),
            Ok(WriteTarget::Existing(vec![k("image.tag")]))
        );
    }

    #[test]
    fn write_targets() {
        let v = json!({
            "image": {"tag": "1.0"},
            "sidecars": [{"image": {"tag": "2.0"}}],
            "scalar": "x"
        });
        assert_eq!(
            write_target(&v, "image.tag"),
            Ok(WriteTarget::Existing(vec![k("image"), k("tag")]))
        );
        assert_eq!(
            write_target(&v, "sidecars[0].image.tag"),
            Ok(WriteTarget::Existing(vec![
                k("sidecars"),
                PathSeg::Index(0),
                k("image"),
                k("tag")
            ]))
        );
        assert_eq!(
            write_target(&v, "image.name"),
            Ok(WriteTarget::Create {
                parent: vec![k("image")],
                keys: vec!["name".into()]
            })
        );
        assert_eq!(
            write_target(&v, "web.extra[0].tag"),
            Ok(WriteTarget::Create {
                parent: vec![],
                keys: vec!["web".into(), "extra[0]".into(), "tag".into()]
            })
        );
        assert!(write_target(&v, "sidecars.image")
            .unwrap_err()
            .to_string()
            .contains("give an index"));
        assert!(write_target(&v, "sidecars[3].image")
            .unwrap_err()
            .to_string()
            .contains("out of range"));
        assert!(write_target(&v, "image[0]")
            .unwrap_err()
            .to_string()
            .contains("not a list"));
        assert!(write_target(&v, "scalar.x")
            .unwrap_err()
            .to_string()
            .contains("not a mapping"));
        assert!(write_target(&v, "image")
            .unwrap_err()
            .to_string()
            .contains("mapping, not a value"));
        assert!(write_target(&json!([]), "a").is_err());
    }

    #[test]
    fn errors_read_as_before_and_hint_where_the_path_is_at_fault() {
        let e = parse("a[x]").unwrap_err();
        assert_eq!(
            e.to_string(),
            "index \"x\" in \"a[x]\" is not an integer (Helm key paths use key[N] for list items)"
        );
        assert!(e.hint().is_some());
        let e = parse("a[-1]").unwrap_err();
        assert_eq!(e.to_string(), "negative index -1 in \"a[-1]\"");
        assert_eq!(parse("").unwrap_err(), Error::Empty);
        let v = json!({"l": [1], "s": {"t": {}}});
        let e = write_target(&v, "l").unwrap_err();
        assert_eq!(e.to_string(), "key \"l\" holds a list, not a value");
        assert_eq!(e.hint(), None);
        let e = write_target(&v, "l[1]").unwrap_err();
        assert_eq!(e.to_string(), "index 1 of \"l\" is out of range [0, 1)");
        let e = write_target(&v, "l.x").unwrap_err();
        assert_eq!(e.to_string(), "\"l\" is a list: give an index, e.g. l[0]");
        assert!(e.hint().is_some());
        let e = write_target(&v, "s.t").unwrap_err();
        assert_eq!(e.to_string(), "\"t\" holds a mapping, not a value");
    }
}
