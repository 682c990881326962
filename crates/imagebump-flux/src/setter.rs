//! Flux image policy setters: the line comment `# {"$imagepolicy": "<namespace>:<policy>"}`
//! after a YAML value, with an optional `:tag`, `:name` or `:digest` suffix naming the part
//! of the policy's latest image the value holds.
//!
//! The image-automation-controller turns every ImagePolicy into four setters named
//! `<namespace>:<name>`, `…:tag`, `…:name` and `…:digest`, and a marker matches one of them
//! by its whole name: a marker without its namespace (`"podinfo"`) never matches anything
//! in Flux. Here it is an error that says so rather than a silent no-op.

use imagebump_yaml::{Doc, Node, PathSeg, Scalar, Style};

/// The key of Flux's setter shorthand.
pub const KEY: &str = "$imagepolicy";

/// Which part of the policy's latest image a marked value holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Field {
    /// `name:tag` (`name:tag@digest` when the policy reflects digests).
    Full,
    Tag,
    Name,
    Digest,
}

/// A namespaced object name as a setter or a reference writes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PolicyName {
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for PolicyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A marked value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setter {
    pub doc: usize,
    pub path: Vec<PathSeg>,
    pub scalar: Scalar,
    /// Byte offset of the comment's `{`.
    pub offset: usize,
    pub policy: PolicyName,
    pub field: Field,
}

/// A comment that means to be a setter but cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BadSetter {
    pub offset: usize,
    /// The value it marks: still Flux's, so no other reading of the file takes it.
    pub span: std::ops::Range<usize>,
    pub message: SetterError,
}

/// Every marked scalar of `docs` (parsed from `text`), in document order.
pub fn find(text: &str, docs: &[Doc]) -> (Vec<Setter>, Vec<BadSetter>) {
    let mut found = (Vec::new(), Vec::new());
    if !text.contains(KEY) {
        return found;
    }
    for doc in docs {
        if let Some(root) = &doc.root {
            walk(text, doc.index, root, &mut Vec::new(), &mut found);
        }
    }
    found
}

fn walk(
    text: &str,
    doc: usize,
    node: &Node,
    path: &mut Vec<PathSeg>,
    out: &mut (Vec<Setter>, Vec<BadSetter>),
) {
    if let Node::Scalar(s) = node {
        // A block scalar's comment is on its header line (`image: >- # {"$imagepolicy": …}`),
        // where Flux reads it as the value's line comment.
        let after = match s.style {
            Style::Block => s.span.start,
            _ => s.span.end,
        };
        match comment(text, after).map(|(offset, c)| (offset, parse(c))) {
            Some((offset, Some(Ok((policy, field))))) => out.0.push(Setter {
                doc,
                path: path.clone(),
                scalar: s.clone(),
                offset,
                policy,
                field,
            }),
            Some((offset, Some(Err(message)))) => out.1.push(BadSetter {
                offset,
                span: s.span.clone(),
                message,
            }),
            Some((_, None)) | None => {}
        }
        return;
    }
    for (seg, child) in node.children() {
        path.push(seg);
        walk(text, doc, child, path, out);
        path.pop();
    }
}

/// The comment on the same line after byte `after`, without its `#` and surrounding
/// blanks, with the byte offset where that text starts.
fn comment(text: &str, after: usize) -> Option<(usize, &str)> {
    let rest = text.get(after..)?;
    let line = rest.split(['\n', '\r']).next().unwrap_or(rest);
    // A comment starts with `#` after whitespace (`1.2#x` is a value, not a comment).
    let hash = line.char_indices().find_map(|(i, c)| {
        (c == '#' && (i == 0 || line.get(..i).is_some_and(|b| b.ends_with([' ', '\t']))))
            .then_some(i)
    })?;
    let body = line.get(hash.checked_add(1)?..)?;
    let trimmed = body.trim_start();
    let skipped = body.len().checked_sub(trimmed.len())?;
    let offset = after
        .checked_add(hash)?
        .checked_add(1)?
        .checked_add(skipped)?;
    Some((offset, trimmed.trim_end()))
}

/// Why a comment that names `$imagepolicy` is not a setter Flux can read. The message says
/// what to write instead; [`SetterError::hint`] gives that part alone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetterError {
    #[error("cannot read the Flux setter {comment}: write {{\"$imagepolicy\": \"<namespace>:<policy>\"}}")]
    Unreadable { comment: String },
    #[error("the Flux setter's $imagepolicy is not a string: write \"<namespace>:<policy>\"")]
    NotAString,
    #[error(
        "the Flux setter {value:?} ends in {field:?}: Flux knows `:tag`, `:name` and `:digest`"
    )]
    UnknownField { value: String, field: String },
    #[error("the Flux setter {value:?} has no namespace: Flux matches only \"<namespace>:{value}\" (for example \"flux-system:{value}\")")]
    NoNamespace { value: String },
    #[error("cannot read the Flux setter {value:?}: write \"<namespace>:<policy>\", optionally followed by `:tag`, `:name` or `:digest`")]
    Malformed { value: String },
    #[error("the Flux setter {value:?} has an empty namespace or name")]
    EmptyPart { value: String },
}

impl SetterError {
    /// What to write instead.
    pub fn hint(&self) -> String {
        match self {
            SetterError::Unreadable { .. } => format!("write {{\"{KEY}\": \"<namespace>:<policy>\"}}"),
            SetterError::NoNamespace { value } => format!("write \"flux-system:{value}\" or another namespace"),
            SetterError::UnknownField { .. } | SetterError::Malformed { .. } => {
                "write \"<namespace>:<policy>\", optionally followed by `:tag`, `:name` or `:digest`".into()
            }
            SetterError::NotAString | SetterError::EmptyPart { .. } => {
                "write \"<namespace>:<policy>\"".into()
            }
        }
    }
}

/// `None` when the comment is no setter; an error when it names `$imagepolicy` but cannot
/// be read the way Flux reads it.
fn parse(comment: &str) -> Option<Result<(PolicyName, Field), SetterError>> {
    if !comment.starts_with('{') || !comment.contains(KEY) {
        return None;
    }
    let map: serde_json::Map<String, serde_json::Value> = match imagebump_yaml::from_str(comment) {
        Ok(m) => m,
        Err(_) => {
            return Some(Err(SetterError::Unreadable {
                comment: comment.to_string(),
            }))
        }
    };
    let value = map.get(KEY)?;
    let Some(value) = value.as_str() else {
        return Some(Err(SetterError::NotAString));
    };
    Some(name(value))
}

/// `namespace:policy[:tag|:name|:digest]`.
fn name(value: &str) -> Result<(PolicyName, Field), SetterError> {
    let parts: Vec<&str> = value.split(':').collect();
    let owned = || value.to_string();
    let (namespace, name, field) = match parts.as_slice() {
        [ns, name] => (*ns, *name, Field::Full),
        [ns, name, "tag"] => (*ns, *name, Field::Tag),
        [ns, name, "name"] => (*ns, *name, Field::Name),
        [ns, name, "digest"] => (*ns, *name, Field::Digest),
        [_, _, other] => {
            return Err(SetterError::UnknownField {
                value: owned(),
                field: other.to_string(),
            })
        }
        [_] => return Err(SetterError::NoNamespace { value: owned() }),
        _ => return Err(SetterError::Malformed { value: owned() }),
    };
    if namespace.is_empty() || name.is_empty() {
        return Err(SetterError::EmptyPart { value: owned() });
    }
    Ok((
        PolicyName {
            namespace: namespace.to_string(),
            name: name.to_string(),
        },
        field,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setters(text: &str) -> Vec<String> {
        let docs = imagebump_yaml::parse_located(text).unwrap();
        let (found, bad) = find(text, &docs);
        let mut out: Vec<String> = found
            .iter()
            .map(|s| {
                assert!(text[s.offset..].starts_with('{'));
                format!(
                    "{} {} {:?} {}",
                    imagebump_yaml::path_to_string(&s.path),
                    s.policy,
                    s.field,
                    s.scalar.value
                )
            })
            .collect();
        out.extend(bad.iter().map(|b| format!("error: {b}")));
        out
    }

    /// The markers of Flux's own guide and of the controller's test data.
    #[test]
    fn reads_the_four_setters_as_flux_writes_them() {
        let text = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: default
spec:
  template:
    spec:
      containers:
      - name: podinfod
        image: ghcr.io/stefanprodan/podinfo:5.0.0 # {"$imagepolicy": "flux-system:podinfo"}
---
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
images:
  - name: container
    newName: replaced # {"$imagepolicy": "automation-ns:policy:name"}
    newTag: v1 # {"$imagepolicy": "automation-ns:policy:tag"}
    newDigest: sha256:1234567890abcdef # {"$imagepolicy": "automation-ns:policy-with-digest:digest"}
"#;
        assert_eq!(
            setters(text),
            [
                "spec.template.spec.containers[0].image flux-system/podinfo Full ghcr.io/stefanprodan/podinfo:5.0.0",
                "images[0].newName automation-ns/policy Name replaced",
                "images[0].newTag automation-ns/policy Tag v1",
                "images[0].newDigest automation-ns/policy-with-digest Digest sha256:1234567890abcdef",
            ]
        );
    }

    #[test]
    fn other_comments_are_not_setters() {
        let text = "image: image:v1.0.0 # uses the same image. but should be left alone\ntag: '1' # {\"$setter\": \"x\"}\nx: 1 #{\"$imagepolicy\": \"ns:p\"}\n";
        assert_eq!(setters(text), ["x ns/p Full 1"]);
        assert!(setters("a: 1\n").is_empty());
        assert!(setters("a: '1 # {\"$imagepolicy\": \"ns:p\"}'\n").is_empty());
    }

    /// A block scalar carries its setter on its header line; a comment-like line inside
    /// its text is text.
    #[test]
    fn a_block_scalar_is_marked_on_its_header_line() {
        let text = "a: >- # {\"$imagepolicy\": \"ns:p\"}\n  ghcr.io/acme/app:1.0.0\nb: |\n  1.0.0 # {\"$imagepolicy\": \"ns:q:tag\"}\n";
        assert_eq!(setters(text), ["a ns/p Full ghcr.io/acme/app:1.0.0"]);
    }

    #[test]
    fn bad_setters_say_what_flux_expects() {
        let text = r#"a: 1 # {"$imagepolicy": "podinfo"}
b: 2 # {"$imagepolicy": "ns:podinfo:version"}
c: 3 # {"$imagepolicy": ["ns:p"]}
d: 4 # {"$imagepolicy": "ns:p"
e: 5 # {"$imagepolicy": ":p"}
"#;
        assert_eq!(
            setters(text),
            [
                "error: the Flux setter \"podinfo\" has no namespace: Flux matches only \"<namespace>:podinfo\" (for example \"flux-system:podinfo\")",
                "error: the Flux setter \"ns:podinfo:version\" ends in \"version\": Flux knows `:tag`, `:name` and `:digest`",
                "error: the Flux setter's $imagepolicy is not a string: write \"<namespace>:<policy>\"",
                "error: cannot read the Flux setter {\"$imagepolicy\": \"ns:p\": write {\"$imagepolicy\": \"<namespace>:<policy>\"}",
                "error: the Flux setter \":p\" has an empty namespace or name",
            ]
        );
    }

    #[test]
    fn setter_errors_say_what_to_write() {
        let e = name("podinfo").unwrap_err();
        assert_eq!(
            e.to_string(),
            "the Flux setter \"podinfo\" has no namespace: Flux matches only \"<namespace>:podinfo\" (for example \"flux-system:podinfo\")"
        );
        assert_eq!(
            e.hint(),
            "write \"flux-system:podinfo\" or another namespace"
        );
        assert_eq!(
            name("ns:p:size").unwrap_err(),
            SetterError::UnknownField {
                value: "ns:p:size".into(),
                field: "size".into()
            }
        );
        assert_eq!(
            parse("{\"$imagepolicy\": 3}")
                .unwrap()
                .unwrap_err()
                .to_string(),
            "the Flux setter's $imagepolicy is not a string: write \"<namespace>:<policy>\""
        );
        assert!(matches!(name(":p"), Err(SetterError::EmptyPart { .. })));
    }
}
