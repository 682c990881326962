//! Flux image automation, read from the files of a GitOps repository: the
//! `image.toolkit.fluxcd.io` resources and the setter comments that mark values for the
//! image-automation-controller. Pure functions over parsed YAML: no cluster, no I/O.
//!
//! - [`image_repository`]: `ImageRepository` (the image, its exclusion list, what only a
//!   cluster can use: `secretRef`, `provider`, …).
//! - [`image_policy`]: `ImagePolicy`, mapped to an imagebump policy.
//! - [`automation`]: `ImageUpdateAutomation` (which paths Flux updates).
//! - [`setter`]: `# {"$imagepolicy": "<namespace>:<policy>[:tag|:name|:digest]"}`.
//!
//! The `imagebump` package's `discover/flux.rs` turns the setters into references.

// Unit tests may count, slice and call `unreachable!`; clippy.toml lets them unwrap, expect,
// panic and index (Cargo.toml holds the library to the no-panic set).
#![cfg_attr(
    test,
    allow(
        clippy::arithmetic_side_effects,
        clippy::string_slice,
        clippy::unreachable
    )
)]

pub mod automation;
pub mod image_policy;
pub mod image_repository;
pub mod setter;

pub use automation::Automation;
pub use image_policy::{ImagePolicy, Rule, RuleError};
pub use image_repository::ImageRepository;
pub use setter::{Field, PolicyName, Setter, SetterError};

use imagebump_model::Problem;
use imagebump_yaml::{Doc, LineIndex, Node};

/// The API group of Flux's image automation kinds.
pub const API_GROUP: &str = "image.toolkit.fluxcd.io/";

/// The Flux image automation kinds, read here and by nothing else.
pub const KINDS: &[&str] = &["ImageRepository", "ImagePolicy", "ImageUpdateAutomation"];

/// Might the file hold a setter or a Flux image automation resource? (Flux itself reads
/// only the files holding `"$imagepolicy"`, quotes included.)
pub fn mentioned(text: &str) -> bool {
    text.contains("\"$imagepolicy\"") || text.contains(API_GROUP)
}

/// Is a document of this kind and apiVersion read here?
pub fn is_flux_kind(kind: &str, api_version: &str) -> bool {
    api_version.starts_with(API_GROUP) && KINDS.contains(&kind)
}

/// Where a resource is written and what it is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    pub name: String,
    /// `None` when `metadata.namespace` is not written (the namespace is then given by
    /// whatever applies the file, often a kustomization's `namespace:`).
    pub namespace: Option<String>,
    pub file: String,
    pub line: usize,
}

impl Meta {
    /// `ImagePolicy flux-system/podinfo` (`ImagePolicy podinfo` without a namespace).
    pub fn id(&self, kind: &str) -> String {
        match &self.namespace {
            Some(ns) => format!("{kind} {ns}/{}", self.name),
            None => format!("{kind} {}", self.name),
        }
    }

    /// `ImagePolicy flux-system/podinfo (clusters/prod/podinfo.yaml:12)`.
    pub fn label(&self, kind: &str) -> String {
        format!("{} ({}:{})", self.id(kind), self.file, self.line)
    }
}

/// A field of a resource that Flux would refuse: where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Invalid {
    pub offset: usize,
    pub message: String,
}

/// Something imagebump does differently from Flux, at a byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub offset: usize,
    pub message: String,
}

/// The Flux resources and setters of one file, and what was wrong with them.
#[derive(Debug, Default)]
pub struct Loaded {
    pub repositories: Vec<ImageRepository>,
    pub policies: Vec<ImagePolicy>,
    pub automations: Vec<Automation>,
    pub setters: Vec<Setter>,
    /// The byte spans of every value a setter comment marks, readable or not.
    pub marked: Vec<std::ops::Range<usize>>,
    /// Resources named in their metadata but refused (the reason is in `problems`).
    pub broken: Vec<(&'static str, Meta)>,
    pub problems: Vec<Problem>,
    pub notes: Vec<Problem>,
}

impl Loaded {
    pub fn is_empty(&self) -> bool {
        self.repositories.is_empty()
            && self.policies.is_empty()
            && self.automations.is_empty()
            && self.setters.is_empty()
            && self.broken.is_empty()
            && self.problems.is_empty()
            && self.notes.is_empty()
    }
}

/// Read the Flux resources and setters of a file.
pub fn read(file: &str, text: &str, docs: &[Doc]) -> Loaded {
    let lines = LineIndex::new(text);
    let at = |offset: usize, message: String| {
        let (line, column) = lines.line_col(offset);
        Problem::at_file(file, line, column, message)
    };
    let mut out = Loaded::default();
    let (setters, bad) = setter::find(text, docs);
    out.marked = setters.iter().map(|s| s.scalar.span.clone()).collect();
    out.marked.extend(bad.iter().map(|b| b.span.clone()));
    out.setters = setters;
    out.problems
        .extend(bad.into_iter().map(|b| at(b.offset, b.message.to_string())));
    for root in docs.iter().filter_map(|d| d.root.as_ref()) {
        let (Some(kind), Some(api)) = (
            root.get("kind").and_then(Node::str_value),
            root.get("apiVersion").and_then(Node::str_value),
        ) else {
            continue;
        };
        if !is_flux_kind(kind, api) {
            continue;
        }
        let fields = Fields { root };
        let meta = match fields.meta(file, &lines) {
            Ok(m) => m,
            Err(e) => {
                out.problems.push(at(e.offset, format!("{kind}: {e}")));
                continue;
            }
        };
        let mut notes = Vec::new();
        let (kind, read) = match kind {
            "ImageRepository" => (
                "ImageRepository",
                image_repository::read(&fields, meta.clone(), &mut notes)
                    .map(|r| out.repositories.push(r)),
            ),
            "ImagePolicy" => (
                "ImagePolicy",
                image_policy::read(&fields, meta.clone(), &mut notes).map(|p| out.policies.push(p)),
            ),
            _ => (
                "ImageUpdateAutomation",
                automation::read(&fields, meta.clone(), &mut notes)
                    .map(|a| out.automations.push(a)),
            ),
        };
        if let Err(e) = read {
            out.problems
                .push(at(e.offset, format!("{}: {e}", meta.id(kind))));
            out.broken.push((kind, meta));
        }
        out.notes
            .extend(notes.into_iter().map(|n| at(n.offset, n.message)));
    }
    out
}

/// Typed reads of a resource's fields, with the offset of what is wrong.
pub struct Fields<'a> {
    root: &'a Node,
}

impl<'a> Fields<'a> {
    pub fn new(root: &'a Node) -> Fields<'a> {
        Fields { root }
    }

    /// The node at a dotted path of keys.
    pub fn node(&self, path: &[&str]) -> Option<&'a Node> {
        path.iter().try_fold(self.root, |n, k| n.get(k))
    }

    /// The offset of the node at `path`, else of its nearest parent that exists.
    pub fn offset(&self, path: &[&str]) -> usize {
        (0..=path.len())
            .rev()
            .find_map(|n| self.node(path.get(..n)?))
            .map_or(0, Node::offset)
    }

    /// A string field; `None` when absent or null, an error when it is not a string.
    pub fn string(&self, path: &[&str]) -> Result<Option<String>, Invalid> {
        match self.node(path) {
            None => Ok(None),
            Some(Node::Scalar(s)) if s.value == "null" || s.value == "~" => Ok(None),
            Some(Node::Scalar(s)) => Ok(Some(s.value.clone())),
            Some(n) => Err(Invalid {
                offset: n.offset(),
                message: format!("{} is not a string", path.join(".")),
            }),
        }
    }

    /// A string field that must be there and not be empty.
    pub fn required(&self, path: &[&str]) -> Result<String, Invalid> {
        match self.string(path)? {
            Some(v) if !v.trim().is_empty() => Ok(v),
            _ => Err(Invalid {
                offset: self.offset(path),
                message: format!("{} is required", path.join(".")),
            }),
        }
    }

    fn meta(&self, file: &str, lines: &LineIndex) -> Result<Meta, Invalid> {
        let name = self.required(&["metadata", "name"])?;
        let namespace = self
            .string(&["metadata", "namespace"])?
            .filter(|n| !n.is_empty());
        Ok(Meta {
            name,
            namespace,
            file: file.to_string(),
            line: lines.line_col(self.root.offset()).0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kinds_of_its_group_only_and_reports_broken_metadata() {
        let text = "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  namespace: flux-system\nspec:\n  image: ghcr.io/stefanprodan/podinfo\n---\napiVersion: example.com/v1\nkind: ImagePolicy\nmetadata: {name: other}\n";
        let docs = imagebump_yaml::parse_located(text).unwrap();
        let loaded = read("flux.yaml", text, &docs);
        assert!(loaded.repositories.is_empty() && loaded.policies.is_empty());
        let problems: Vec<String> = loaded.problems.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            problems,
            ["flux.yaml:4:3: ImageRepository: metadata.name is required"]
        );
    }
}
