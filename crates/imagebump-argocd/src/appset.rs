//! Argo CD `ApplicationSet`s kept in the repository, expanded into the Applications they
//! generate, from git alone.
//!
//! Generators that need nothing but the repository are evaluated: `list` (literal
//! `elements`), `git` `directories` (matched against the tree's directories, as Argo CD's
//! repo server lists them: hidden ones skipped) and `matrix` of two of these (the second
//! may use the first's parameters), and git `files` (JSON or YAML, whose values are then
//! edited where they are written). The others need a cluster or an API (`clusters`,
//! `clusterDecisionResource`, `scmProvider`, `pullRequest`, `plugin`), or are not evaluated
//! yet (`merge`, `elementsYaml`, `selector`, per-generator `template`,
//! `templatePatch`): the set is noted and skipped, never an error.
//!
//! Templates are rendered the way Argo CD renders them: fasttemplate (`{{path.basename}}`,
//! an unknown parameter is left as written) or, with `goTemplate: true`, the Go template
//! actions that only read parameters (`{{ .path.path }}`, `{{ index .path.segments 1 }}`);
//! a set whose template calls functions or uses control structures is noted and skipped.
//!
//! Each generated Application keeps the set's file and document, its sources'
//! paths point into `spec.template`, and [`Origins`] says where each list parameter is
//! written literally, so that a value the template takes from a parameter is edited there.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::app::{find_kind, name_and_namespace, parse_app, App, AppError};
use super::glob::BadPattern;
use imagebump_yaml::PathSeg;

/// An `ApplicationSet` that cannot be read, or an Application it generates that cannot
/// be; `what` is `ApplicationSet <name>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The metadata of the set, or a generated Application.
    #[error(transparent)]
    App(#[from] super::app::Error),
    #[error("{what} has no spec mapping")]
    NoSpec { what: String },
    #[error("{what}: spec.generators must be a list")]
    Generators { what: String },
    #[error("{what}: spec.template must be a mapping")]
    Template { what: String },
    #[error(transparent)]
    Render(#[from] TemplateError),
}

/// A template that imagebump does not render as Argo CD would.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error(
        "the template action {{{{{action}}}}} calls functions or uses control structures, which imagebump does not evaluate"
    )]
    Unsupported { action: String },
    #[error("the template reads .{field}, which is not set (missingkey=error)")]
    Missing { field: String },
}

/// A list element's field that is not a string, which Argo CD refuses without goTemplate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}` is not a string, which Argo CD refuses without goTemplate")]
struct NotAString {
    key: String,
}

/// A git directory generator's `path` that is not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum DirGlobError {
    #[error("more than three `**` segments")]
    TooDeep,
    #[error(transparent)]
    Pattern(#[from] BadPattern),
}

/// At most this many Applications per set (a matrix multiplies).
const MAX_APPS: usize = 10_000;

/// At most this many bytes of rendered templates per set: a large template times many
/// rows would otherwise cost memory many times the file's size.
const MAX_RENDERED_BYTES: usize = 64 << 20;

/// At most this many Applications over all the sets of a run: a limit per set alone would
/// let many sets in one file add up to far more than a CronJob's memory.
pub const MAX_RUN_APPS: usize = 10_000;

/// At most this many bytes of rendered templates over all the sets of a run.
pub const MAX_RUN_RENDERED_BYTES: usize = 64 << 20;

/// What the run's sets may still generate, over all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub apps: usize,
    pub bytes: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            apps: MAX_RUN_APPS,
            bytes: MAX_RUN_RENDERED_BYTES,
        }
    }
}

/// One `ApplicationSet` as written.
#[derive(Debug, Clone, PartialEq)]
pub struct AppSet {
    pub file: String,
    pub doc: usize,
    pub name: String,
    pub namespace: Option<String>,
    pub go_template: bool,
    /// `goTemplateOptions: [missingkey=error]`.
    missing_key_error: bool,
    generators: Vec<Value>,
    template: Value,
    template_patch: bool,
}

/// Where each parameter of one generated Application is written literally: the parameter
/// as the template names it (`tag`, `values.tag`, `image.tag` for a Go template) → the
/// scalar that sets it.
pub type Origins = BTreeMap<String, Origin>;

/// One scalar of the repository: a list element's field in the set's own document, or a
/// value of a git files generator's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub file: String,
    pub doc: usize,
    pub path: Vec<PathSeg>,
}

/// What a set's generators may read of the repository.
pub struct Tree<'a> {
    /// Its directories, relative and `/`-separated, as Argo CD lists them (hidden ones
    /// left out), sorted.
    pub dirs: &'a [String],
    /// Its files, the same way.
    pub files: &'a [String],
    /// The documents of a file as values; `None` when it cannot be read (said elsewhere).
    pub read: &'a dyn Fn(&str) -> Option<Vec<Value>>,
}

/// One Application a set generates.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    pub app: App,
    pub origins: Origins,
    pub go_template: bool,
}

/// What expanding one set gave: its Applications, or why it was skipped.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Expansion {
    pub apps: Vec<Generated>,
    /// Why the set (or part of it) was not expanded: a generator that needs a cluster, a
    /// template function, ...; notes, not errors.
    pub notes: Vec<String>,
    /// The run's [`Budget`] ran out before this set's Applications were all read (an error:
    /// the Applications past it are not updated).
    pub over_run: bool,
}

/// Every `ApplicationSet` among a file's documents.
pub fn find_appsets(file: &str, docs: &[Value]) -> Vec<Result<AppSet, AppError>> {
    find_kind(file, docs, ("argoproj.io/", "ApplicationSet"), parse_appset)
}

fn parse_appset(file: &str, doc: usize, v: &Value) -> Result<AppSet, Error> {
    let meta = name_and_namespace(v, "ApplicationSet")?;
    let what = format!("ApplicationSet {}", meta.name);
    let Some(Value::Object(spec)) = v.get("spec") else {
        return Err(Error::NoSpec { what });
    };
    let generators = match spec.get("generators") {
        Some(Value::Array(g)) => g.clone(),
        _ => return Err(Error::Generators { what }),
    };
    let template = match spec.get("template") {
        Some(t @ Value::Object(_)) => t.clone(),
        _ => return Err(Error::Template { what }),
    };
    let options = spec
        .get("goTemplateOptions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Ok(AppSet {
        file: file.to_string(),
        doc,
        name: meta.name,
        namespace: meta.namespace,
        go_template: spec.get("goTemplate") == Some(&Value::Bool(true)),
        missing_key_error: options
            .iter()
            .any(|o| o.as_str() == Some("missingkey=error")),
        generators,
        template,
        template_patch: spec.get("templatePatch").is_some_and(|p| !p.is_null()),
    })
}

/// One set of parameters: their values (flat keys for fasttemplate, a nested object for Go
/// templates) and where the literal ones are written.
#[derive(Debug, Clone, Default)]
struct Params {
    values: Map<String, Value>,
    origins: Origins,
}

impl Params {
    /// `self` with `other`'s parameters added (a matrix row); `other` wins on a clash, and
    /// mappings under one key are merged key by key (Go templates: `values` from both).
    fn merged(&self, other: &Params) -> Params {
        fn deep(into: &mut Map<String, Value>, from: &Map<String, Value>) {
            for (k, v) in from {
                match (into.get_mut(k), v) {
                    (Some(Value::Object(a)), Value::Object(b)) => deep(a, b),
                    _ => {
                        into.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        let mut out = self.clone();
        deep(&mut out.values, &other.values);
        for (k, v) in &other.origins {
            out.origins.insert(k.clone(), v.clone());
        }
        out
    }
}

/// A generator imagebump does not evaluate: why, for the note.
type Skip = String;

impl AppSet {
    /// The Applications this set generates in the repository `tree`, within what the run's
    /// sets may still generate (`budget`, which they take from).
    pub fn generate(&self, tree: &Tree<'_>, budget: &mut Budget) -> Expansion {
        let mut out = Expansion::default();
        if self.template_patch {
            out.notes.push(
                "templatePatch can change any field of the generated Applications; not evaluated, set skipped".into(),
            );
            return out;
        }
        let size = serde_json::to_string(&self.template).map_or(1, |t| t.len().max(1));
        let per_set = MAX_RENDERED_BYTES
            .checked_div(size)
            .unwrap_or(0)
            .clamp(1, MAX_APPS);
        let by_run = (budget.bytes.checked_div(size).unwrap_or(0)).min(budget.apps);
        if by_run == 0 {
            // Not even the generators are evaluated: their rows alone cost memory.
            out.over_run = true;
            return out;
        }
        let most = per_set.min(by_run);
        let rows = self.expand(tree, most, &mut out);
        out.over_run = rows > most && by_run < per_set;
        if rows > most && !out.over_run {
            out.notes.push(format!(
                "generates {rows} Applications; only the first {most} are read"
            ));
        }
        let taken = out.apps.len();
        budget.apps = budget.apps.saturating_sub(taken);
        budget.bytes = budget.bytes.saturating_sub(taken.saturating_mul(size));
        out
    }

    /// The Applications of the set's generators into `out`, at most `most` of them; how
    /// many the generators gave.
    fn expand(&self, tree: &Tree<'_>, most: usize, out: &mut Expansion) -> usize {
        let mut rows = Vec::new();
        for (i, g) in self.generators.iter().enumerate() {
            let at = vec![key("spec"), key("generators"), PathSeg::Index(i)];
            match self.params(g, &at, tree, &Params::default()) {
                Ok(mut r) => rows.append(&mut r),
                Err(why) => out.notes.push(format!("generator {i}: {why}")),
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for row in rows.iter().take(most) {
            match self.application(row) {
                Ok(app) if names.insert(app.name.clone()) => out.apps.push(Generated {
                    app,
                    origins: row.origins.clone(),
                    go_template: self.go_template,
                }),
                Ok(app) => out.notes.push(format!(
                    "generates Application {} twice; Argo CD refuses duplicates, the first is read",
                    app.name
                )),
                Err(why) => {
                    out.notes
                        .push(format!("a generated Application: {why}; set skipped"));
                    out.apps.clear();
                    return 0;
                }
            }
        }
        rows.len()
    }

    /// The parameter sets of generator `g` (at `at` in the document), with `outer`'s
    /// parameters available to it (the first generator of a matrix).
    fn params(
        &self,
        g: &Value,
        at: &[PathSeg],
        tree: &Tree<'_>,
        outer: &Params,
    ) -> Result<Vec<Params>, Skip> {
        let Value::Object(obj) = g else {
            return Err("not a mapping".into());
        };
        for k in ["selector", "template"] {
            if obj.get(k).is_some_and(|v| !v.is_null()) {
                return Err(format!("has a `{k}:`, which imagebump does not evaluate"));
            }
        }
        let (kind, body) = obj
            .iter()
            .find(|(_, v)| v.is_object())
            .ok_or_else(|| "names no generator".to_string())?;
        let here = join(at, &[kind]);
        match kind.as_str() {
            "list" => self.list(body, &here),
            "git" => {
                // The second generator of a matrix may name the first's parameters.
                let body = render(
                    body,
                    &outer.values,
                    self.go_template,
                    self.missing_key_error,
                )
                .map_err(|e| e.to_string())?;
                self.git(&body, tree)
            }
            "matrix" => self.matrix(body, &here, tree),
            "clusters" | "clusterDecisionResource" | "scmProvider" | "pullRequest" | "plugin" => {
                Err(format!("`{kind}` needs a cluster or an API; not evaluated"))
            }
            other => Err(format!("`{other}` is not evaluated by imagebump")),
        }
    }

    fn list(&self, body: &Value, at: &[PathSeg]) -> Result<Vec<Params>, Skip> {
        if body.get("elementsYaml").is_some_and(|v| !v.is_null()) {
            return Err("list `elementsYaml` is not evaluated".into());
        }
        let elements = match body.get("elements") {
            Some(Value::Array(e)) => e,
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(_) => return Err("list `elements` is not a list".into()),
        };
        elements
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let here = [at, &[key("elements"), PathSeg::Index(i)]].concat();
                let Value::Object(m) = e else {
                    return Err(format!("list element {i} is not a mapping"));
                };
                let here = Origin {
                    file: self.file.clone(),
                    doc: self.doc,
                    path: here,
                };
                if self.go_template {
                    Ok(nested_params(m, &here))
                } else {
                    flat_params(m, &here).map_err(|e| format!("list element {i}: {e}"))
                }
            })
            .collect()
    }

    fn git(&self, body: &Value, tree: &Tree<'_>) -> Result<Vec<Params>, Skip> {
        let (what, requested, candidates) = match (body.get("directories"), body.get("files")) {
            (Some(Value::Array(r)), _) => ("directory", r, tree.dirs),
            (_, Some(Value::Array(r))) => ("file", r, tree.files),
            _ => return Err("git generator without `directories` or `files`".into()),
        };
        let mut patterns = Vec::new();
        for r in requested {
            let path = r.get("path").and_then(Value::as_str).unwrap_or_default();
            let glob = DirGlob::new(path).map_err(|e| format!("{what} {path:?}: {e}"))?;
            patterns.push((glob, r.get("exclude") == Some(&Value::Bool(true))));
        }
        let prefix = body
            .get("pathParamPrefix")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let values = body.get("values").and_then(Value::as_object);
        let mut out = Vec::new();
        for rel in candidates {
            let included = patterns.iter().any(|(g, ex)| !ex && g.is_match(rel));
            let excluded = patterns.iter().any(|(g, ex)| *ex && g.is_match(rel));
            if !included || excluded {
                continue;
            }
            let rows = if what == "directory" {
                vec![self.dir_params(rel, prefix, None)]
            } else {
                self.file_params(rel, prefix, tree)?
            };
            for mut p in rows {
                if let Some(v) = values {
                    self.add_values(&mut p, v)?;
                }
                out.push(p);
            }
            // Enough for the set's own limit: the rest is never read.
            if out.len() > MAX_APPS {
                break;
            }
        }
        Ok(out)
    }

    /// The parameters of one file a git files generator matched: its content (a mapping,
    /// or one row per item of a list), each scalar remembered where it is written, and the
    /// `path` parameters of its directory and name.
    fn file_params(&self, rel: &str, prefix: &str, tree: &Tree<'_>) -> Result<Vec<Params>, Skip> {
        let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        let docs = (tree.read)(rel).ok_or_else(|| format!("{rel} cannot be read"))?;
        let mut out = Vec::new();
        for (doc, v) in docs.iter().enumerate() {
            let items: Vec<(Vec<PathSeg>, &Map<String, Value>)> = match v {
                Value::Object(m) => vec![(Vec::new(), m)],
                Value::Array(a) => a
                    .iter()
                    .enumerate()
                    .filter_map(|(i, x)| Some((vec![PathSeg::Index(i)], x.as_object()?)))
                    .collect(),
                Value::Null => Vec::new(),
                _ => return Err(format!("{rel} holds neither a mapping nor a list")),
            };
            for (at, m) in items {
                let here = Origin {
                    file: rel.to_string(),
                    doc,
                    path: at,
                };
                let mut p = if self.go_template {
                    nested_params(m, &here)
                } else {
                    flattened_params(m, &here)
                };
                let path = self.dir_params(dir, prefix, Some(name));
                p.values.extend(path.values);
                out.push(p);
            }
        }
        Ok(out)
    }

    /// The parameters of one matched directory (or of a matched file's directory, with its
    /// `filename`): `path`, `path.basename`, `path.basenameNormalized`, `path[N]`, or the
    /// `path` object for Go templates.
    fn dir_params(&self, dir: &str, prefix: &str, file: Option<&str>) -> Params {
        let base = dir.rsplit('/').next().unwrap_or(dir);
        let segments: Vec<Value> = dir.split('/').map(Value::from).collect();
        let name = if prefix.is_empty() {
            "path".to_string()
        } else {
            format!("{prefix}.path")
        };
        let mut values = Map::new();
        if self.go_template {
            let mut path = Map::new();
            path.insert("path".into(), dir.into());
            path.insert("basename".into(), base.into());
            path.insert("basenameNormalized".into(), normalized(base).into());
            path.insert("segments".into(), Value::Array(segments));
            if let Some(f) = file {
                path.insert("filename".into(), f.into());
                path.insert("filenameNormalized".into(), normalized(f).into());
            }
            let mut slot = &mut values;
            let mut parts = name.split('.').peekable();
            while let Some(part) = parts.next() {
                if parts.peek().is_none() {
                    slot.insert(part.into(), Value::Object(path));
                    break;
                }
                let next = slot
                    .entry(part.to_string())
                    .or_insert_with(|| Value::Object(Map::new()));
                let Value::Object(m) = next else { break };
                slot = m;
            }
        } else {
            values.insert(name.clone(), dir.into());
            values.insert(format!("{name}.basename"), base.into());
            values.insert(
                format!("{name}.basenameNormalized"),
                normalized(base).into(),
            );
            if let Some(f) = file {
                values.insert(format!("{name}.filename"), f.into());
                values.insert(format!("{name}.filenameNormalized"), normalized(f).into());
            }
            for (i, s) in dir.split('/').enumerate() {
                if !s.is_empty() {
                    values.insert(format!("{name}[{i}]"), s.into());
                }
            }
        }
        Params {
            values,
            origins: Origins::new(),
        }
    }

    /// A git generator's `values:`, rendered with the directory's parameters, as
    /// `values.<key>`.
    fn add_values(&self, p: &mut Params, values: &Map<String, Value>) -> Result<(), Skip> {
        let rendered = render(
            &Value::Object(values.clone()),
            &p.values,
            self.go_template,
            self.missing_key_error,
        )
        .map_err(|e| e.to_string())?;
        if self.go_template {
            p.values.insert("values".into(), rendered);
        } else if let Value::Object(m) = rendered {
            for (k, v) in m {
                p.values.insert(format!("values.{k}"), v);
            }
        }
        Ok(())
    }

    fn matrix(&self, body: &Value, at: &[PathSeg], tree: &Tree<'_>) -> Result<Vec<Params>, Skip> {
        let children = match body.get("generators") {
            Some(Value::Array(c)) if c.len() == 2 => c,
            _ => return Err("a matrix needs exactly two generators".into()),
        };
        let child_at = |i: usize| [at, &[key("generators"), PathSeg::Index(i)]].concat();
        let (Some(first), Some(second)) = (children.first(), children.get(1)) else {
            return Err("a matrix needs exactly two generators".into());
        };
        let mut out = Vec::new();
        for a in self.params(first, &child_at(0), tree, &Params::default())? {
            for b in self.params(second, &child_at(1), tree, &a)? {
                out.push(a.merged(&b));
                if out.len() > MAX_APPS {
                    return Ok(out);
                }
            }
        }
        Ok(out)
    }

    /// The Application the template renders for `row`.
    fn application(&self, row: &Params) -> Result<App, Error> {
        let rendered = render(
            &self.template,
            &row.values,
            self.go_template,
            self.missing_key_error,
        )?;
        let mut doc = Map::new();
        doc.insert("apiVersion".into(), "argoproj.io/v1alpha1".into());
        doc.insert("kind".into(), "Application".into());
        if let Value::Object(t) = rendered {
            doc.extend(t);
        }
        let mut app = parse_app(&self.file, self.doc, &Value::Object(doc))?;
        // Argo CD creates the Applications in the set's namespace, whatever the template
        // says.
        app.namespace.clone_from(&self.namespace);
        for s in &mut app.sources {
            s.at.splice(0..0, [key("spec"), key("template")]);
        }
        Ok(app)
    }
}

/// A list element's parameters without goTemplate: each string field by its key, the
/// fields of `values:` as `values.<key>`; `Err(key)` for a value that is not a string.
fn flat_params(m: &Map<String, Value>, at: &Origin) -> Result<Params, NotAString> {
    let mut p = Params::default();
    for (k, v) in m {
        match (k.as_str(), v) {
            ("values", Value::Object(values)) => {
                for (vk, vv) in values {
                    let name = format!("values.{vk}");
                    let Value::String(s) = vv else {
                        return Err(NotAString { key: name });
                    };
                    p.values.insert(name.clone(), s.clone().into());
                    p.origins.insert(name, at.join(&["values", vk]));
                }
            }
            (_, Value::String(s)) => {
                p.values.insert(k.clone(), s.clone().into());
                p.origins.insert(k.clone(), at.join(&[k]));
            }
            _ => return Err(NotAString { key: k.clone() }),
        }
    }
    Ok(p)
}

/// A list element's parameters for a Go template: the element as it is, and every scalar
/// in it by its dotted path.
fn nested_params(m: &Map<String, Value>, at: &Origin) -> Params {
    fn walk(v: &Value, name: &str, at: &Origin, origins: &mut Origins) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    let n = if name.is_empty() {
                        k.clone()
                    } else {
                        format!("{name}.{k}")
                    };
                    walk(v, &n, &at.join(&[k]), origins);
                }
            }
            Value::Array(_) | Value::Null => {}
            _ => {
                origins.insert(name.to_string(), at.clone());
            }
        }
    }
    let mut origins = Origins::new();
    walk(&Value::Object(m.clone()), "", at, &mut origins);
    Params {
        values: m.clone(),
        origins,
    }
}

/// A git files generator's file without goTemplate: every scalar by its flattened key
/// (`image.tag`, `list.0.name`), as text.
fn flattened_params(m: &Map<String, Value>, at: &Origin) -> Params {
    fn walk(v: &Value, name: &str, at: &Origin, p: &mut Params) {
        let child = |k: &str| {
            if name.is_empty() {
                k.to_string()
            } else {
                format!("{name}.{k}")
            }
        };
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    walk(v, &child(k), &at.join(&[k]), p);
                }
            }
            Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    let mut here = at.clone();
                    here.path.push(PathSeg::Index(i));
                    walk(v, &child(&i.to_string()), &here, p);
                }
            }
            Value::Null => {}
            scalar => {
                p.values
                    .insert(name.to_string(), scalar_text(scalar).into());
                p.origins.insert(name.to_string(), at.clone());
            }
        }
    }
    let mut p = Params::default();
    walk(&Value::Object(m.clone()), "", at, &mut p);
    p
}

impl Origin {
    fn join(&self, rest: &[&str]) -> Origin {
        Origin {
            file: self.file.clone(),
            doc: self.doc,
            path: join(&self.path, rest),
        }
    }
}

/// Argo CD's `basenameNormalized`: lower case, characters other than `a-z0-9-.` as `-`,
/// no leading or trailing `-` or `.`.
fn normalized(s: &str) -> String {
    let lower: String = s
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    lower.trim_matches(['-', '.']).to_string()
}

/// `v` with every template in its strings (and keys) rendered with `params`.
pub(crate) fn render(
    v: &Value,
    params: &Map<String, Value>,
    go: bool,
    missing_error: bool,
) -> Result<Value, TemplateError> {
    Ok(match v {
        Value::String(s) => Value::String(render_str(s, params, go, missing_error)?),
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| render(x, params, go, missing_error))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, x) in m {
                out.insert(
                    render_str(k, params, go, missing_error)?,
                    render(x, params, go, missing_error)?,
                );
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

/// The pieces of a template string: literal text and the actions between `{{` and `}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(&'a str),
    /// The text between the braces, as written.
    Action(&'a str),
}

/// Split `s` into text and actions; an unclosed `{{` is text.
pub fn pieces(s: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find("{{") {
        let (before, after) = rest.split_at(open);
        let inner = after.get(2..).unwrap_or_default();
        let Some(close) = inner.find("}}") else {
            break;
        };
        if !before.is_empty() {
            out.push(Piece::Text(before));
        }
        out.push(Piece::Action(inner.get(..close).unwrap_or_default()));
        rest = inner.get(close.saturating_add(2)..).unwrap_or_default();
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

fn render_str(
    s: &str,
    params: &Map<String, Value>,
    go: bool,
    missing_error: bool,
) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(s.len());
    for piece in pieces(s) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Action(a) if go => {
                out.push_str(&go_action(a, params, missing_error)?);
            }
            Piece::Action(a) => match params.get(a.trim()) {
                Some(v) => out.push_str(&scalar_text(v)),
                // fasttemplate leaves an unknown parameter as written.
                None => {
                    out.push_str("{{");
                    out.push_str(a);
                    out.push_str("}}");
                }
            },
        }
    }
    Ok(out)
}

/// The parameter a Go template action reads, as a dotted name (`.path.basename` →
/// `path.basename`; `index .path.segments 1` → `path.segments.1`); `None` for anything
/// else (functions, pipelines, control structures).
pub fn go_field(action: &str) -> Option<String> {
    let a = action.trim();
    let words: Vec<&str> = a.split_whitespace().collect();
    match words.as_slice() {
        [field] => field
            .strip_prefix('.')
            .filter(|f| {
                !f.is_empty() && f.chars().all(|c| c.is_alphanumeric() || "._-".contains(c))
            })
            .map(str::to_string),
        ["index", field, n] => {
            let f = field.strip_prefix('.')?;
            n.parse::<usize>().ok()?;
            Some(format!("{f}.{n}"))
        }
        _ => None,
    }
}

fn go_action(
    action: &str,
    params: &Map<String, Value>,
    missing_error: bool,
) -> Result<String, TemplateError> {
    let Some(field) = go_field(action) else {
        return Err(TemplateError::Unsupported {
            action: action.to_string(),
        });
    };
    let mut v: Option<&Value> = None;
    let mut map = Some(params);
    for part in field.split('.') {
        v = match (map, v) {
            (Some(m), _) => m.get(part),
            (None, Some(Value::Array(a))) => part.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        };
        map = v.and_then(Value::as_object);
    }
    match v {
        Some(v) => Ok(scalar_text(v)),
        None if missing_error => Err(TemplateError::Missing { field }),
        // Go's text/template prints a missing map key so.
        None => Ok("<no value>".into()),
    }
}

/// A parameter value as the template writes it.
fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn key(k: &str) -> PathSeg {
    PathSeg::Key(k.to_string())
}

fn join(base: &[PathSeg], rest: &[&str]) -> Vec<PathSeg> {
    let mut p = base.to_vec();
    p.extend(rest.iter().map(|k| key(k)));
    p
}

/// A git directory generator's `path`: Go's `path.Match`, where `*` stays inside one
/// directory; a `**` segment also matches any number of directories.
struct DirGlob(Vec<super::glob::GoGlob>, bool);

impl DirGlob {
    fn new(pattern: &str) -> Result<DirGlob, DirGlobError> {
        let pattern = pattern.trim_start_matches("./").trim_end_matches('/');
        let stars = pattern.split('/').filter(|s| *s == "**").count();
        // Each `**` multiplies the ways to match: a few are plenty.
        if stars > 3 {
            return Err(DirGlobError::TooDeep);
        }
        let deep = stars > 0;
        let parts = pattern
            .split('/')
            .map(super::glob::GoGlob::new)
            .collect::<Result<_, _>>()?;
        Ok(DirGlob(parts, deep))
    }

    fn is_match(&self, dir: &str) -> bool {
        let segs: Vec<&str> = dir.split('/').collect();
        if !self.1 {
            return self.0.len() == segs.len()
                && self.0.iter().zip(&segs).all(|(g, s)| g.is_match(s));
        }
        segments_match(&self.0, &segs)
    }
}

/// Whether the glob segments match the directory's, a `**` segment taking any number.
fn segments_match(globs: &[super::glob::GoGlob], segs: &[&str]) -> bool {
    let Some((g, rest)) = globs.split_first() else {
        return segs.is_empty();
    };
    if g.is_double_star() {
        return (0..=segs.len()).any(|n| segments_match(rest, segs.get(n..).unwrap_or_default()));
    }
    match segs.split_first() {
        Some((s, more)) => g.is_match(s) && segments_match(rest, more),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(yaml: &str) -> AppSet {
        let v: Value = yaml_serde::from_str(yaml).unwrap();
        find_appsets("argocd/set.yaml", &[v]).remove(0).unwrap()
    }

    fn tree<'a>(dirs: &'a [String], read: &'a dyn Fn(&str) -> Option<Vec<Value>>) -> Tree<'a> {
        Tree {
            dirs,
            files: &[],
            read,
        }
    }

    fn nothing(_: &str) -> Option<Vec<Value>> {
        None
    }

    fn names(e: &Expansion) -> Vec<String> {
        e.apps.iter().map(|g| g.app.name.clone()).collect()
    }

    const DIRS_TEMPLATE: &str = "  template:\n    metadata:\n      name: '{{path.basename}}-{{path[0]}}'\n    spec:\n      source:\n        path: '{{path}}'\n";

    #[test]
    fn git_directories_match_like_argo_cd_with_excludes_and_double_stars() {
        let dirs: Vec<String> = [
            "apps",
            "apps/web",
            "apps/api",
            "apps/legacy",
            "apps/web/base",
        ]
        .map(String::from)
        .to_vec();
        let s = set(&format!("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {{name: s}}\nspec:\n  generators:\n  - git:\n      directories:\n      - path: apps/*\n      - path: apps/legacy\n        exclude: true\n{DIRS_TEMPLATE}"));
        let e = s.generate(&tree(&dirs, &nothing), &mut Budget::default());
        assert_eq!(names(&e), ["web-apps", "api-apps"]);
        let src = &e.apps[0].app.sources[0];
        assert_eq!(src.path.as_deref(), Some("apps/web"));
        assert_eq!(
            imagebump_yaml::path_to_string(&src.at),
            "spec.template.spec.source"
        );
        let deep = set(&format!("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {{name: s}}\nspec:\n  generators:\n  - git:\n      directories:\n      - path: apps/**/base\n{DIRS_TEMPLATE}"));
        assert_eq!(
            names(&deep.generate(&tree(&dirs, &nothing), &mut Budget::default())),
            ["base-apps"]
        );
    }

    #[test]
    fn list_parameters_remember_where_they_are_written() {
        let s = set("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: s, namespace: argocd}\nspec:\n  generators:\n  - list:\n      elements:\n      - {env: dev, tag: '1.0', values: {x: y}}\n  template:\n    metadata:\n      name: 'w-{{env}}-{{ values.x }}-{{missing}}'\n    spec:\n      source:\n        chart: w\n");
        let e = s.generate(&tree(&[], &nothing), &mut Budget::default());
        // fasttemplate leaves an unknown parameter as written.
        assert_eq!(names(&e), ["w-dev-y-{{missing}}"]);
        let g = &e.apps[0];
        assert_eq!(g.app.namespace.as_deref(), Some("argocd"));
        assert_eq!(
            imagebump_yaml::path_to_string(&g.origins["tag"].path),
            "spec.generators[0].list.elements[0].tag"
        );
        assert_eq!(
            imagebump_yaml::path_to_string(&g.origins["values.x"].path),
            "spec.generators[0].list.elements[0].values.x"
        );
    }

    #[test]
    fn a_matrix_combines_and_its_second_generator_reads_the_first() {
        let dirs: Vec<String> = ["envs/dev", "envs/prod", "envs/dev/web"]
            .map(String::from)
            .to_vec();
        let s = set("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: s}\nspec:\n  goTemplate: true\n  generators:\n  - matrix:\n      generators:\n      - list:\n          elements:\n          - {env: dev, image: {tag: '2.0'}}\n          - {env: prod, image: {tag: '1.0'}}\n      - git:\n          directories:\n          - path: 'envs/{{ .env }}/*'\n  template:\n    metadata:\n      name: '{{ .path.basename }}-{{ .env }}-{{ index .path.segments 1 }}'\n    spec:\n      source:\n        path: '{{ .path.path }}'\n");
        let e = s.generate(&tree(&dirs, &nothing), &mut Budget::default());
        assert_eq!(names(&e), ["web-dev-dev"]);
        assert_eq!(
            imagebump_yaml::path_to_string(&e.apps[0].origins["image.tag"].path),
            "spec.generators[0].matrix.generators[0].list.elements[0].image.tag"
        );
    }

    #[test]
    fn git_files_give_their_values_flattened_and_where_they_are_written() {
        let files: Vec<String> = ["clusters/eu/config.yaml", "clusters/eu/notes.md"]
            .map(String::from)
            .to_vec();
        let read = |rel: &str| -> Option<Vec<Value>> {
            (rel == "clusters/eu/config.yaml").then(|| {
                vec![serde_json::json!([{"name": "a", "image": {"tag": "1.0"}}, {"name": "b"}])]
            })
        };
        let tree = Tree {
            dirs: &[],
            files: &files,
            read: &read,
        };
        let s = set("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: s}\nspec:\n  generators:\n  - git:\n      files:\n      - path: clusters/**/*.yaml\n  template:\n    metadata:\n      name: '{{name}}-{{path.basename}}-{{path.filename}}'\n    spec:\n      source: {chart: c}\n");
        let e = s.generate(&tree, &mut Budget::default());
        assert_eq!(names(&e), ["a-eu-config.yaml", "b-eu-config.yaml"]);
        let origin = &e.apps[0].origins["image.tag"];
        assert_eq!(origin.file, "clusters/eu/config.yaml");
        assert_eq!(
            imagebump_yaml::path_to_string(&origin.path),
            "[0].image.tag"
        );
    }

    #[test]
    fn a_huge_expansion_is_cut_short_with_a_note() {
        let list = |n: usize, k: &str| {
            (0..n)
                .map(|i| format!("          - {{{k}: '{i}'}}\n"))
                .collect::<String>()
        };
        let yaml = format!("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {{name: s}}\nspec:\n  generators:\n  - matrix:\n      generators:\n      - list:\n          elements:\n{}      - list:\n          elements:\n{}  template:\n    metadata:\n      name: 'a-{{{{a}}}}-{{{{b}}}}'\n    spec:\n      source: {{chart: c, helm: {{values: '{}'}}}}\n", list(300, "a"), list(300, "b"), "x".repeat(1 << 20));
        let e = set(&yaml).generate(&tree(&[], &nothing), &mut Budget::default());
        // A 1 MiB template: 64 of them fit the rendering budget.
        assert_eq!(e.apps.len(), 63);
        assert_eq!(
            e.notes,
            ["generates 10001 Applications; only the first 63 are read"]
        );
    }

    #[test]
    fn the_runs_sets_share_one_budget_of_applications() {
        let list = |n: usize| {
            (0..n)
                .map(|i| format!("      - {{a: '{i}'}}\n"))
                .collect::<String>()
        };
        let yaml = format!("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {{name: s}}\nspec:\n  generators:\n  - list:\n      elements:\n{}  template:\n    metadata:\n      name: 'a-{{{{a}}}}'\n    spec:\n      source: {{chart: c}}\n", list(4));
        let s = set(&yaml);
        let mut budget = Budget {
            apps: 10,
            bytes: usize::MAX,
        };
        let firsts: Vec<Expansion> = (0..3)
            .map(|_| s.generate(&tree(&[], &nothing), &mut budget))
            .collect();
        assert_eq!(
            firsts.iter().map(|e| e.apps.len()).collect::<Vec<_>>(),
            [4, 4, 2]
        );
        assert_eq!(
            firsts.iter().map(|e| e.over_run).collect::<Vec<_>>(),
            [false, false, true]
        );
        assert_eq!(budget.apps, 0);
        let after = s.generate(&tree(&[], &nothing), &mut budget);
        assert!(after.apps.is_empty() && after.over_run, "{after:?}");
        // The rendered bytes are shared too.
        let size = serde_json::to_string(&s.template).unwrap().len();
        let mut bytes = Budget {
            apps: 100,
            bytes: size * 3,
        };
        let e = s.generate(&tree(&[], &nothing), &mut bytes);
        assert_eq!((e.apps.len(), e.over_run, bytes.apps), (3, true, 97));
    }

    #[test]
    fn a_go_template_matrix_merges_mappings_of_both_generators() {
        let s = set("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: s}\nspec:\n  goTemplate: true\n  goTemplateOptions: [missingkey=error]\n  generators:\n  - matrix:\n      generators:\n      - list:\n          elements:\n          - {cluster: dev, values: {project: default}}\n      - list:\n          elements:\n          - {values: {suffix: '1'}}\n  template:\n    metadata:\n      name: '{{.cluster}}-{{.values.suffix}}-{{.values.project}}'\n    spec:\n      source: {chart: c}\n");
        assert_eq!(
            names(&s.generate(&tree(&[], &nothing), &mut Budget::default())),
            ["dev-1-default"]
        );
    }

    #[test]
    fn what_needs_a_cluster_or_a_function_is_a_note() {
        let s = set("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: s}\nspec:\n  goTemplate: true\n  goTemplateOptions: [missingkey=error]\n  generators:\n  - clusters: {}\n  - list:\n      elementsYaml: '{{ .x }}'\n  - list:\n      elements: [{a: b}]\n  template:\n    metadata:\n      name: '{{ .nope }}'\n    spec:\n      source: {chart: c}\n");
        let e = s.generate(&tree(&[], &nothing), &mut Budget::default());
        assert!(e.apps.is_empty());
        assert_eq!(
            e.notes,
            [
                "generator 0: `clusters` needs a cluster or an API; not evaluated",
                "generator 1: list `elementsYaml` is not evaluated",
                "a generated Application: the template reads .nope, which is not set (missingkey=error); set skipped",
            ]
        );
        assert_eq!(go_field(" .a.b "), Some("a.b".into()));
        assert_eq!(
            go_field("index .path.segments 2"),
            Some("path.segments.2".into())
        );
        assert_eq!(go_field(".a | upper"), None);
        assert_eq!(go_field("if .a"), None);
        assert_eq!(normalized("My_App.v2-"), "my-app.v2");
    }

    #[test]
    fn set_and_template_errors_are_typed() {
        let v: Value = yaml_serde::from_str(
            "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: s}\nspec: {generators: []}\n",
        )
        .unwrap();
        let e = parse_appset("f", 0, &v).unwrap_err();
        assert_eq!(
            e,
            Error::Template {
                what: "ApplicationSet s".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "ApplicationSet s: spec.template must be a mapping"
        );
        let params = Map::new();
        assert_eq!(
            render_str("{{ .a | upper }}", &params, true, false),
            Err(TemplateError::Unsupported {
                action: " .a | upper ".into()
            })
        );
        assert_eq!(
            render_str("{{.a}}", &params, true, true)
                .unwrap_err()
                .to_string(),
            "the template reads .a, which is not set (missingkey=error)"
        );
        assert_eq!(
            TemplateError::Unsupported { action: "x".into() }.to_string(),
            "the template action {{x}} calls functions or uses control structures, which imagebump does not evaluate"
        );
        assert_eq!(
            DirGlob::new("**/**/**/**").err(),
            Some(DirGlobError::TooDeep)
        );
    }
}
