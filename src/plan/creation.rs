//! Values created where a file does not hold them yet (Argo CD write-back): turned into
//! structural edits against the file's current text.
//!
//! Argo CD replaces lists from an override file wholesale, so a list that the file does not
//! have yet is written complete: the items in effect so far (`base`), with the updated
//! entries replaced or added. A list the file already has is edited in place: matching
//! entries get their value replaced, new ones are appended.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{spell, Planned};
use crate::discover::{Created, Creation, ItemKey, Template};
use imagebump_yaml::{PathSeg, Upsert};

/// Creations grouped by the list or key they write: (document, path).
type ByTarget<'a> = BTreeMap<(usize, &'a [PathSeg]), Vec<(Planned<'a>, &'a Creation)>>;

/// Why values could not be created in a file.
#[derive(Debug, Clone, thiserror::Error)]
pub(super) enum CreationError {
    #[error(transparent)]
    Read(#[from] imagebump_yaml::ReadError),
    /// The path (`a.b[2]`) of a value that is there but not a list.
    #[error("{0} is not a list")]
    NotAList(String),
}

/// The structural edits for `creations`, all in one file whose text is `text`.
pub(super) fn upserts(
    text: &str,
    creations: &[(Planned, &Creation)],
) -> Result<Vec<Upsert>, CreationError> {
    let docs = imagebump_yaml::json_documents(text)?;
    let mut grouped: ByTarget = BTreeMap::new();
    for item @ (_, c) in creations {
        grouped.entry((c.doc, &c.path)).or_default().push(*item);
    }
    let mut out = Vec::new();
    for ((doc, path), items) in grouped {
        let current = docs.get(doc).and_then(|d| lookup(d, path));
        let mut keys = Vec::new();
        let mut list: Option<Vec<Value>> = None;
        for ((_, tag, digest), c) in items {
            match &c.what {
                Created::Key { value } => out.push(Upsert {
                    doc,
                    path: path.to_vec(),
                    value: render(value, tag, digest),
                }),
                Created::ListItem { base, key, value } => {
                    let value = render(value, tag, digest);
                    match current {
                        Some(Value::Array(existing)) => {
                            out.extend(in_existing(doc, path, existing, key, value, &mut keys))
                        }
                        Some(other) if !other.is_null() => {
                            let at = imagebump_yaml::path_to_string(path);
                            return Err(CreationError::NotAList(at));
                        }
                        _ => {
                            let list = list.get_or_insert_with(|| base.clone());
                            match list.iter_mut().find(|v| matches(v, key)) {
                                Some(item) => *item = value,
                                None => list.push(value),
                            }
                        }
                    }
                }
            }
        }
        if let Some(mut list) = list {
            sort_helm_parameters(&mut list);
            out.push(Upsert {
                doc,
                path: path.to_vec(),
                value: Value::Array(list),
            });
        }
    }
    Ok(out)
}

/// A new list of Helm parameters (every item has `forcestring`) sorted by name, as
/// argocd-image-updater writes it (its #1474), so repeated runs agree; any other list is
/// left in its order.
fn sort_helm_parameters(list: &mut [Value]) {
    if list.iter().all(|v| v.get("forcestring").is_some()) {
        let name = |v: &Value| {
            v.get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        list.sort_by_key(name);
    }
}

/// Update or append one item of a list the file already has. `appended` counts items
/// appended so far to this list, so that two new items get distinct indexes.
fn in_existing(
    doc: usize,
    path: &[PathSeg],
    existing: &[Value],
    key: &ItemKey,
    value: Value,
    appended: &mut Vec<ItemKey>,
) -> Vec<Upsert> {
    let at = |seg: Vec<PathSeg>| {
        let mut p = path.to_vec();
        p.extend(seg);
        p
    };
    match existing.iter().enumerate().find(|(_, v)| matches(v, key)) {
        // Only the fields that change are written, so the entry keeps its layout (and
        // fields the new value does not name, such as a kustomize entry's comments).
        Some((i, item)) => match (item, &value) {
            (Value::Object(old), Value::Object(new)) => new
                .iter()
                .filter(|(f, v)| old.get(*f) != Some(*v))
                .map(|(f, v)| Upsert {
                    doc,
                    path: at(vec![PathSeg::Index(i), PathSeg::Key(f.clone())]),
                    value: v.clone(),
                })
                .collect(),
            _ => vec![Upsert {
                doc,
                path: at(vec![PathSeg::Index(i)]),
                value,
            }],
        },
        None => {
            let index = existing.len().saturating_add(appended.len());
            appended.push(key.clone());
            vec![Upsert {
                doc,
                path: at(vec![PathSeg::Index(index)]),
                value,
            }]
        }
    }
}

fn matches(item: &Value, key: &ItemKey) -> bool {
    match key {
        ItemKey::KustomizeImage(name) => item
            .as_str()
            .is_some_and(|s| imagebump_model::name::same_repository(kustomize_image_name(s), name)),
        ItemKey::Field { field, value } => {
            item.get(field).and_then(Value::as_str) == Some(value.as_str())
        }
    }
}

/// The name a kustomize image string overrides: before `=`, else the image without its
/// tag and digest (`host:5000/app:1.2@sha256:…` → `host:5000/app`).
pub fn kustomize_image_name(s: &str) -> &str {
    if let Some((name, _)) = s.split_once('=') {
        return name;
    }
    let s = s.split('@').next().unwrap_or(s);
    // A `:` before the last `/` is a registry port, not a tag.
    match s.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => name,
        _ => s,
    }
}

fn render(t: &Template, tag: &str, digest: Option<&str>) -> Value {
    match t {
        Template::Text(s) => Value::String(s.clone()),
        Template::Tag => Value::String(spell(tag, digest)),
        Template::Reference { prefix } => Value::String(format!("{prefix}:{}", spell(tag, digest))),
        Template::HelmParam { name, value } => json!({
            "name": name,
            "value": render(value, tag, digest),
            "forcestring": true,
        }),
        Template::EnvVar { name, value } => json!({
            "name": name,
            "value": render(value, tag, digest),
        }),
        Template::KustomizeEntry { name, new_name } => {
            let mut m = serde_json::Map::new();
            m.insert("name".into(), json!(name));
            if let Some(n) = new_name {
                m.insert("newName".into(), json!(n));
            }
            m.insert("newTag".into(), json!(tag));
            if let Some(d) = digest {
                m.insert("digest".into(), json!(d));
            }
            Value::Object(m)
        }
    }
}

fn lookup<'a>(v: &'a Value, path: &[PathSeg]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, seg| match seg {
        PathSeg::Key(k) => v.get(k.as_str()),
        PathSeg::Index(i) => v.get(*i),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kustomize_image_names() {
        assert_eq!(kustomize_image_name("nginx:1.27.2"), "nginx");
        assert_eq!(kustomize_image_name("a/b=c/d:1"), "a/b");
        assert_eq!(
            kustomize_image_name("host:5000/app:1.2@sha256:00"),
            "host:5000/app"
        );
        assert_eq!(kustomize_image_name("host:5000/app"), "host:5000/app");
    }
}
