//! Argo CD `Application` manifests found in a repository's YAML files.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use imagebump_yaml::PathSeg;

/// One `Application` (apiVersion `argoproj.io/*`, kind `Application`).
#[derive(Debug, Clone, PartialEq)]
pub struct App {
    /// The file the manifest is in (as passed to [`find_apps`]).
    pub file: String,
    /// Document index in that file.
    pub doc: usize,
    pub name: String,
    pub namespace: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// `spec.source` as one element, or `spec.sources`, or (with neither)
    /// `spec.sourceHydrator.drySource`.
    pub sources: Vec<Source>,
}

/// One source of an Application.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// `["spec","source"]`, `["spec","sources",Index(i)]` or
    /// `["spec","sourceHydrator","drySource"]`.
    pub at: Vec<PathSeg>,
    pub repo_url: Option<String>,
    pub path: Option<String>,
    pub chart: Option<String>,
    pub target_revision: Option<String>,
    /// `ref:` (the name `$ref/...` value files use to point into this source).
    pub ref_name: Option<String>,
    pub kind: SourceKind,
    /// The source object as written.
    pub value: Value,
}

/// The tool of a source, from the block written in it (`helm:`, `kustomize:`, `plugin:`).
/// A `chart:` source is always Helm. Without a block Argo CD decides from the files
/// (`Unknown` here); a `directory:` block is also `Unknown`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SourceKind {
    Kustomize,
    Helm,
    Plugin,
    Unknown,
}

/// A malformed Application (or ImageUpdater) manifest.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file} (document {doc}): {message}")]
pub struct AppError {
    pub file: String,
    pub doc: usize,
    pub message: String,
}

/// What is wrong with one Application manifest (or the metadata of another Argo CD
/// resource); `what` names the resource and the field (`Application web: spec.source`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("{kind} without metadata")]
    NoMetadata { kind: &'static str },
    #[error("{kind}: metadata must be a mapping")]
    MetadataNotMapping { kind: &'static str },
    #[error("{kind} without metadata.name")]
    NoName { kind: &'static str },
    #[error("{kind}: metadata.name must be a non-empty string")]
    NameNotString { kind: &'static str },
    #[error("{what} must be a string, not {found} (quote it)")]
    NotAString { what: String, found: &'static str },
    #[error("{what} must be a mapping, not {found}")]
    NotAMappingFound { what: String, found: &'static str },
    #[error("{what} must be a mapping")]
    NotAMapping { what: String },
    #[error("{what} has no spec")]
    NoSpec { what: String },
    #[error("{what}: spec must be a mapping")]
    SpecNotMapping { what: String },
    #[error("{what}: spec.sources must be a list")]
    SourcesNotList { what: String },
    #[error("{what} has both spec.source and spec.sources; keep one of them")]
    BothSources { what: String },
    #[error("{what} has neither spec.source nor spec.sources")]
    NoSource { what: String },
    #[error("{what} has more than one tool block ({blocks}); Argo CD refuses it")]
    ToolBlocks { what: String, blocks: String },
}

impl Error {
    /// What to change in the manifest, where the fix is one edit.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Error::NotAString { .. } => Some("quote the value in the YAML"),
            Error::BothSources { .. } => Some("keep spec.source or spec.sources, not both"),
            Error::ToolBlocks { .. } => Some("keep one of helm, kustomize, plugin, directory"),
            _ => None,
        }
    }
}

/// Every Application among a file's documents (YAML parsed to JSON values, in order; null
/// for empty documents). Other documents are skipped; a malformed Application is an `Err`
/// saying what is wrong.
pub fn find_apps(file: &str, docs: &[Value]) -> Vec<Result<App, AppError>> {
    find_kind(file, docs, ("argoproj.io/", "Application"), parse_app)
}

/// Every document of `kind` in an API group starting with `group`, parsed by `parse`.
pub(crate) fn find_kind<T, E: std::fmt::Display>(
    file: &str,
    docs: &[Value],
    (group, kind): (&str, &str),
    parse: fn(&str, usize, &Value) -> Result<T, E>,
) -> Vec<Result<T, AppError>> {
    docs.iter()
        .enumerate()
        .filter(|(_, d)| is_kind(d, group, kind))
        .map(|(doc, d)| {
            parse(file, doc, d).map_err(|e| AppError {
                file: file.to_string(),
                doc,
                message: e.to_string(),
            })
        })
        .collect()
}

/// Whether `doc` has `kind` and an apiVersion in the group `group_prefix`.
pub(crate) fn is_kind(doc: &Value, group_prefix: &str, kind: &str) -> bool {
    doc.get("kind").and_then(Value::as_str) == Some(kind)
        && doc
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.starts_with(group_prefix))
}

/// `metadata`, with its name and namespace checked.
pub(crate) struct Meta<'a> {
    pub name: String,
    pub namespace: Option<String>,
    pub map: &'a Map<String, Value>,
}

/// `metadata.name` and `metadata.namespace`, checked.
pub(crate) fn name_and_namespace<'a>(
    doc: &'a Value,
    kind: &'static str,
) -> Result<Meta<'a>, Error> {
    let meta = match doc.get("metadata") {
        Some(Value::Object(m)) => m,
        None | Some(Value::Null) => return Err(Error::NoMetadata { kind }),
        Some(_) => return Err(Error::MetadataNotMapping { kind }),
    };
    let name = match meta.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        None | Some(Value::Null) => return Err(Error::NoName { kind }),
        Some(_) => return Err(Error::NameNotString { kind }),
    };
    let namespace = opt_string(
        meta.get("namespace"),
        &format!("{kind} {name}: metadata.namespace"),
    )?
    .filter(|n| !n.is_empty());
    Ok(Meta {
        name,
        namespace,
        map: meta,
    })
}

pub(crate) fn parse_app(file: &str, doc: usize, v: &Value) -> Result<App, Error> {
    let Meta {
        name,
        namespace,
        map: meta,
    } = name_and_namespace(v, "Application")?;
    let what = format!("Application {name}");
    let labels = string_map(meta.get("labels"), &format!("{what}: metadata.labels"))?;
    let annotations = string_map(
        meta.get("annotations"),
        &format!("{what}: metadata.annotations"),
    )?;
    let spec = match v.get("spec") {
        Some(Value::Object(s)) => s,
        None | Some(Value::Null) => return Err(Error::NoSpec { what }),
        Some(_) => return Err(Error::SpecNotMapping { what }),
    };
    let single = spec.get("source").filter(|s| !s.is_null());
    let multi = match spec.get("sources") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) if a.is_empty() => None,
        Some(Value::Array(a)) => Some(a),
        Some(_) => return Err(Error::SourcesNotList { what }),
    };
    let key = |k: &str| PathSeg::Key(k.to_string());
    let sources = match (single, multi) {
        (Some(_), Some(_)) => return Err(Error::BothSources { what }),
        (Some(s), None) => vec![parse_source(vec![key("spec"), key("source")], s, &what)?],
        (None, Some(list)) => list
            .iter()
            .enumerate()
            .map(|(i, s)| {
                parse_source(
                    vec![key("spec"), key("sources"), PathSeg::Index(i)],
                    s,
                    &what,
                )
            })
            .collect::<Result<_, _>>()?,
        (None, None) => match spec.get("sourceHydrator").and_then(|h| h.get("drySource")) {
            Some(dry) if !dry.is_null() => vec![parse_source(
                vec![key("spec"), key("sourceHydrator"), key("drySource")],
                dry,
                &what,
            )?],
            _ => return Err(Error::NoSource { what }),
        },
    };
    Ok(App {
        file: file.to_string(),
        doc,
        name,
        namespace,
        labels,
        annotations,
        sources,
    })
}

fn parse_source(at: Vec<PathSeg>, v: &Value, what: &str) -> Result<Source, Error> {
    let here = format!("{what}: {}", imagebump_yaml::path_to_string(&at));
    let Value::Object(obj) = v else {
        return Err(Error::NotAMapping { what: here });
    };
    let field = |k: &str| opt_string(obj.get(k), &format!("{here}.{k}"));
    let chart = field("chart")?;
    let blocks: Vec<&str> = ["helm", "kustomize", "plugin", "directory"]
        .into_iter()
        .filter(|k| obj.get(*k).is_some_and(|b| !b.is_null()))
        .collect();
    for b in &blocks {
        if !obj.get(*b).is_some_and(Value::is_object) {
            return Err(Error::NotAMapping {
                what: format!("{here}.{b}"),
            });
        }
    }
    // Argo CD refuses a source with more than one tool block.
    if blocks.len() > 1 {
        return Err(Error::ToolBlocks {
            what: here,
            blocks: blocks.join(", "),
        });
    }
    let kind = match blocks.first() {
        Some(&"helm") => SourceKind::Helm,
        Some(&"kustomize") => SourceKind::Kustomize,
        Some(&"plugin") => SourceKind::Plugin,
        _ if chart.is_some() => SourceKind::Helm,
        _ => SourceKind::Unknown,
    };
    Ok(Source {
        repo_url: field("repoURL")?,
        path: field("path")?,
        target_revision: field("targetRevision")?,
        ref_name: field("ref")?,
        chart,
        kind,
        value: v.clone(),
        at,
    })
}

fn opt_string(v: Option<&Value>, what: &str) -> Result<Option<String>, Error> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(Error::NotAString {
            what: what.to_string(),
            found: type_name(other),
        }),
    }
}

fn string_map(v: Option<&Value>, what: &str) -> Result<BTreeMap<String, String>, Error> {
    match v {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(Error::NotAString {
                    what: format!("{what}.{k}"),
                    found: type_name(other),
                }),
            })
            .collect(),
        Some(other) => Err(Error::NotAMappingFound {
            what: what.to_string(),
            found: type_name(other),
        }),
    }
}

pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

impl App {
    /// The per-app override file Argo CD reads in a source's path:
    /// `.argocd-source-<name>.yaml`, or `.argocd-source-<namespace>_<name>.yaml` when the
    /// app's namespace is set and differs from `control_plane_ns` (apps in any namespace).
    pub fn override_file_name(&self, control_plane_ns: &str) -> String {
        match self.foreign_namespace(control_plane_ns) {
            Some(ns) => format!(".argocd-source-{ns}_{}.yaml", self.name),
            None => format!(".argocd-source-{}.yaml", self.name),
        }
    }

    /// Label for reports and grouping: `name`, or `namespace/name` outside the
    /// control-plane namespace.
    pub fn key(&self, control_plane_ns: &str) -> String {
        match self.foreign_namespace(control_plane_ns) {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }

    fn foreign_namespace(&self, control_plane_ns: &str) -> Option<&str> {
        self.namespace
            .as_deref()
            .filter(|ns| *ns != control_plane_ns)
    }
}

/// A kustomize image override as Argo CD writes it in `kustomize.images`:
/// `[oldName=]newName[:tag][@digest]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KustomizeImage {
    pub old_name: Option<String>,
    pub new_name: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

/// Parse a `kustomize.images` entry. The tag is the text after the last `:` that follows
/// the last `/` (so a registry port is part of the name); the digest follows the first
/// `@`. `None` for an empty name, an empty tag, digest or old name, or a second `=`.
pub fn parse_kustomize_image(s: &str) -> Option<KustomizeImage> {
    let (old_name, rest) = match s.split_once('=') {
        Some((old, rest)) => (Some(old.to_string()), rest),
        None => (None, s),
    };
    if rest.contains('=') || old_name.as_deref() == Some("") {
        return None;
    }
    let (named, digest) = match rest.split_once('@') {
        Some((n, d)) => (n, Some(d.to_string())),
        None => (rest, None),
    };
    // A `:` before the last `/` is a registry port, not a tag.
    let (new_name, tag) = match named.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name, Some(tag.to_string())),
        _ => (named, None),
    };
    if new_name.is_empty()
        || tag.as_deref() == Some("")
        || digest
            .as_deref()
            .is_some_and(|d| d.is_empty() || d.contains('@'))
    {
        return None;
    }
    Some(KustomizeImage {
        old_name,
        new_name: new_name.to_string(),
        tag,
        digest,
    })
}

impl fmt::Display for KustomizeImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(old) = &self.old_name {
            write!(f, "{old}=")?;
        }
        f.write_str(&self.new_name)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    fn docs(text: &str) -> Vec<Value> {
        yaml_serde::Deserializer::from_str(text)
            .map(|d| Value::deserialize(d).unwrap())
            .collect()
    }

    const MULTI: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: not-an-app}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: argocd
  labels: {team: a}
  annotations:
    argocd-image-updater.argoproj.io/image-list: web=nginx:1.x
spec:
  source:
    repoURL: https://git.example/repo.git
    path: apps/web
    targetRevision: main
    kustomize:
      images: [nginx:1.27.2]
---
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: multi, namespace: team-a}
spec:
  sources:
  - repoURL: https://charts.example
    chart: redis
    targetRevision: 18.0.0
    helm:
      valueFiles: [$values/redis/values.yaml]
  - repoURL: https://git.example/values.git
    targetRevision: main
    ref: values
  - repoURL: https://git.example/repo.git
    path: plugin
    plugin: {name: cmp}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: both}
spec:
  source: {repoURL: a, path: b}
  sources: [{repoURL: a, path: b}]
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: neither}
spec: {destination: {}}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {namespace: x}
spec: {source: {repoURL: a}}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: badtypes
  annotations: {argocd-image-updater.argoproj.io/force-update: true}
spec: {source: {repoURL: a}}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: badsrc}
spec: {source: {repoURL: a, targetRevision: 1.0}}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: twotools}
spec: {source: {repoURL: a, path: p, helm: {}, kustomize: {}}}
---
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: set}
spec: {}
---
apiVersion: example.com/v1
kind: Application
metadata: {name: other-group}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: hydrated}
spec:
  sourceHydrator:
    drySource: {repoURL: a, path: dry, targetRevision: HEAD}
    syncSource: {targetBranch: env, path: out}
"#;

    #[test]
    fn find_apps_over_multi_doc_input() {
        let docs = docs(MULTI);
        assert_eq!(docs.len(), 13);
        assert!(docs[2].is_null());
        let found = find_apps("apps.yaml", &docs);
        assert_eq!(found.len(), 9);

        let web = found[0].as_ref().unwrap();
        assert_eq!(web.file, "apps.yaml");
        assert_eq!(web.doc, 1);
        assert_eq!(web.name, "web");
        assert_eq!(web.namespace.as_deref(), Some("argocd"));
        assert_eq!(web.labels.get("team").map(String::as_str), Some("a"));
        assert_eq!(
            web.annotations
                .get("argocd-image-updater.argoproj.io/image-list")
                .map(String::as_str),
            Some("web=nginx:1.x")
        );
        assert_eq!(web.sources.len(), 1);
        let s = &web.sources[0];
        assert_eq!(
            s.at,
            vec![PathSeg::Key("spec".into()), PathSeg::Key("source".into())]
        );
        assert_eq!(s.repo_url.as_deref(), Some("https://git.example/repo.git"));
        assert_eq!(s.path.as_deref(), Some("apps/web"));
        assert_eq!(s.target_revision.as_deref(), Some("main"));
        assert_eq!(s.kind, SourceKind::Kustomize);
        assert_eq!(s.value["kustomize"]["images"][0], "nginx:1.27.2");

        let multi = found[1].as_ref().unwrap();
        assert_eq!(multi.doc, 3);
        let kinds: Vec<SourceKind> = multi.sources.iter().map(|s| s.kind.clone()).collect();
        assert_eq!(
            kinds,
            vec![SourceKind::Helm, SourceKind::Unknown, SourceKind::Plugin]
        );
        assert_eq!(
            multi.sources[1].at,
            vec![
                PathSeg::Key("spec".into()),
                PathSeg::Key("sources".into()),
                PathSeg::Index(1)
            ]
        );
        assert_eq!(multi.sources[1].ref_name.as_deref(), Some("values"));
        assert_eq!(multi.sources[0].chart.as_deref(), Some("redis"));
        assert_eq!(multi.sources[0].path, None);
    }

    #[test]
    fn broken_apps_over_multi_doc_input_say_what_to_fix() {
        let found = find_apps("apps.yaml", &docs(MULTI));
        let err = |i: usize| found[i].as_ref().unwrap_err().to_string();
        assert_eq!(
            err(2),
            "apps.yaml (document 4): Application both has both spec.source and spec.sources; keep one of them"
        );
        assert_eq!(
            err(3),
            "apps.yaml (document 5): Application neither has neither spec.source nor spec.sources"
        );
        assert_eq!(
            err(4),
            "apps.yaml (document 6): Application without metadata.name"
        );
        assert_eq!(
            err(5),
            "apps.yaml (document 7): Application badtypes: metadata.annotations.argocd-image-updater.argoproj.io/force-update must be a string, not a boolean (quote it)"
        );
        assert_eq!(
            err(6),
            "apps.yaml (document 8): Application badsrc: spec.source.targetRevision must be a string, not a number (quote it)"
        );
        assert_eq!(
            err(7),
            "apps.yaml (document 9): Application twotools: spec.source has more than one tool block (helm, kustomize); Argo CD refuses it"
        );
    }

    #[test]
    fn a_hydrated_app_reads_its_dry_source() {
        let found = find_apps("apps.yaml", &docs(MULTI));
        let hydrated = found[8].as_ref().unwrap();
        assert_eq!(hydrated.doc, 12);
        assert_eq!(hydrated.sources[0].path.as_deref(), Some("dry"));
        assert_eq!(
            hydrated.sources[0].at,
            vec![
                PathSeg::Key("spec".into()),
                PathSeg::Key("sourceHydrator".into()),
                PathSeg::Key("drySource".into())
            ]
        );
    }

    #[test]
    fn chart_source_without_block_is_helm() {
        let d = docs("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: c}\nspec: {source: {repoURL: r, chart: c, targetRevision: 1.0.0}}\n");
        let app = find_apps("f", &d).remove(0).unwrap();
        assert_eq!(app.sources[0].kind, SourceKind::Helm);
    }

    #[test]
    fn source_not_a_mapping() {
        let d = docs("apiVersion: argoproj.io/v1\nkind: Application\nmetadata: {name: c}\nspec: {sources: [x]}\n");
        assert_eq!(
            find_apps("f", &d)[0].as_ref().unwrap_err().message,
            "Application c: spec.sources[0] must be a mapping"
        );
    }

    #[test]
    fn errors_are_typed_and_hint_at_one_edit_fixes() {
        let d = docs("apiVersion: argoproj.io/v1\nkind: Application\nmetadata: {name: c}\nspec: {source: {path: 1}}\n");
        let e = parse_app("f", 0, &d[0]).unwrap_err();
        assert_eq!(
            e,
            Error::NotAString {
                what: "Application c: spec.source.path".into(),
                found: "a number"
            }
        );
        assert!(e.hint().is_some());
        let e = parse_app("f", 0, &docs("kind: Application\n")[0]).unwrap_err();
        assert_eq!(e.to_string(), "Application without metadata");
        assert_eq!(e.hint(), None);
    }

    fn app(ns: Option<&str>) -> App {
        App {
            file: "f".into(),
            doc: 0,
            name: "web".into(),
            namespace: ns.map(str::to_string),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            sources: vec![],
        }
    }

    #[test]
    fn override_file_names_and_keys() {
        assert_eq!(
            app(None).override_file_name("argocd"),
            ".argocd-source-web.yaml"
        );
        assert_eq!(
            app(Some("argocd")).override_file_name("argocd"),
            ".argocd-source-web.yaml"
        );
        assert_eq!(
            app(Some("team-a")).override_file_name("argocd"),
            ".argocd-source-team-a_web.yaml"
        );
        assert_eq!(app(None).key("argocd"), "web");
        assert_eq!(app(Some("argocd")).key("argocd"), "web");
        assert_eq!(app(Some("team-a")).key("argocd"), "team-a/web");
    }

    #[test]
    fn kustomize_images() {
        type Parts<'a> = (&'a str, &'a str, Option<&'a str>, Option<&'a str>);
        let cases: &[(&str, Option<Parts>)] = &[
            ("nginx", Some(("", "nginx", None, None))),
            ("nginx:1.27.2", Some(("", "nginx", Some("1.27.2"), None))),
            (
                "quay.io/argoproj/argocd=ghcr.io/argoproj/argocd:v2.13.1",
                Some((
                    "quay.io/argoproj/argocd",
                    "ghcr.io/argoproj/argocd",
                    Some("v2.13.1"),
                    None,
                )),
            ),
            (
                "yourorg/app:latest@sha256:4b1c",
                Some(("", "yourorg/app", Some("latest"), Some("sha256:4b1c"))),
            ),
            (
                "yourorg/app@sha256:4b1c",
                Some(("", "yourorg/app", None, Some("sha256:4b1c"))),
            ),
            (
                "localhost:5000/app:1.0",
                Some(("", "localhost:5000/app", Some("1.0"), None)),
            ),
            (
                "localhost:5000/app",
                Some(("", "localhost:5000/app", None, None)),
            ),
            ("old=new", Some(("old", "new", None, None))),
            ("", None),
            ("=nginx", None),
            ("nginx:", None),
            ("nginx@", None),
            ("a=b=c", None),
            (":1.0", None),
        ];
        for (text, want) in cases {
            let got = parse_kustomize_image(text);
            match want {
                None => assert_eq!(got, None, "{text}"),
                Some((old, new, tag, digest)) => {
                    let got = got.unwrap_or_else(|| panic!("{text}"));
                    assert_eq!(
                        got.old_name.as_deref(),
                        Some(*old).filter(|o| !o.is_empty())
                    );
                    assert_eq!(got.new_name, *new);
                    assert_eq!(got.tag.as_deref(), *tag);
                    assert_eq!(got.digest.as_deref(), *digest);
                    assert_eq!(got.to_string(), *text, "round trip");
                }
            }
        }
    }
}
