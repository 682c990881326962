//! Helm chart versions as references (`chart/` names them): `Chart.yaml` dependencies
//! (with the `Chart.lock` beside them), kustomize `helmCharts[].version` and Flux
//! `HelmRelease`s (`spec.chart.spec.version`, the repository from the `HelmRepository`
//! in git). Argo CD `targetRevision`s are read with their Applications
//! (`discover/argo_apps/chart_source.rs`).
//!
//! A version is edited in place, like an image's tag. Only `http(s)://` and `oci://`
//! repositories are asked; a `file://` dependency or a repository alias is left alone.

use crate::source::tree::Tree;

use serde_json::Value;

use super::walk::FileKind;
use super::Discovery;
use crate::discover::vocab::{Created, Creation, FileCtx, ImageRef, RefKind, SlotFormat};
use crate::discover::vocab::{Template, MAX_FILE_BYTES};
use imagebump_model::name::Reference;
use imagebump_model::policy::Strategy;
use imagebump_model::Problem;
use imagebump_policy::rules::Policies;
use imagebump_yaml::{Doc, LineIndex, Node, PathSeg, Scalar};

/// An Argo CD Application that installs a chart at an exact version: where the images of
/// the chart's default values that it does not override get their new tags.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartApp {
    /// The app (`namespace/name`).
    pub app: String,
    pub file: String,
    pub doc: usize,
    pub line: usize,
    pub column: usize,
    /// Its source's `helm.valuesObject`.
    pub values_at: Vec<PathSeg>,
    pub chart: crate::chart::ChartName,
    pub version: String,
    pub credentials: Option<String>,
    /// Value paths the app sets itself (`valuesObject`, `parameters`, the `values` string).
    pub overridden: Vec<Vec<PathSeg>>,
    /// Values files (in this repository) the source names.
    pub value_files: Vec<String>,
}

/// A chart reference whose version is the scalar `s` at `doc`/`path` of `ctx`'s file.
pub(crate) fn chart_ref(
    ctx: &FileCtx,
    unit: &str,
    (doc, path): (usize, Vec<PathSeg>),
    s: &Scalar,
    (repo, chart): (&str, &str),
) -> Result<ImageRef, Problem> {
    let name = crate::chart::chart_name(repo, chart)
        .map_err(|e| ctx.problem(s.span.start, e.to_string()))?;
    let version = s.value.trim();
    let mut r = ctx.new_ref(
        RefKind::HelmChart,
        unit,
        s.span.start,
        Reference {
            name: name.image,
            written: name.written,
            tag: (!version.is_empty()).then(|| version.to_string()),
            digest: None,
        },
    );
    if version.is_empty() {
        r.unmanaged = Some(arcstr::literal!("no chart version").into());
    } else {
        r.slots.push(ctx.slot(doc, path, s, SlotFormat::Tag));
    }
    Ok(r)
}

/// A chart's version is chosen from its versions alone: a policy that needs image
/// metadata (build dates, platforms) or follows a digest leaves the chart alone, said why.
pub(crate) fn check_policy(r: &mut ImageRef) {
    if r.kind != RefKind::HelmChart || r.unmanaged.is_some() {
        return;
    }
    let p = &r.policy;
    if matches!(p.strategy, Strategy::NewestBuild | Strategy::Digest) || p.needs_metadata() {
        r.unmanaged = Some(format!(
            "a chart's version is chosen from its versions; the policy {} needs image metadata (use semver, regex, numeric or alphabetical)",
            p.summary()
        ).into());
    }
}

/// A file read whole for its charts.
pub(super) struct ChartFile {
    rel: String,
    kind: Kind,
    text: String,
    docs: Vec<Doc>,
    json: Vec<Value>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    ChartYaml,
    Kustomization,
    Flux,
}

fn kind_of(rel: &str, kind: FileKind, text: &str) -> Option<Kind> {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    match kind {
        FileKind::Kustomization => text.contains("helmCharts").then_some(Kind::Kustomization),
        FileKind::Manifest if name == "Chart.yaml" => {
            text.contains("dependencies").then_some(Kind::ChartYaml)
        }
        FileKind::Manifest | FileKind::HelmValues => {
            (text.contains("HelmRelease") || text.contains("HelmRepository")).then_some(Kind::Flux)
        }
        FileKind::ChartTemplate => None,
    }
}

/// The chart versions `text` may hold, parsed; `None` when a first look finds none. Called
/// by discovery's own read of each file (no file is read twice).
pub(super) fn read(rel: &str, kind: FileKind, text: &str) -> Option<Result<ChartFile, Problem>> {
    let kind = kind_of(rel, kind, text)?;
    // The generic scan reports a file that is not YAML.
    let docs = imagebump_yaml::parse_located(text).ok()?;
    let json = match imagebump_yaml::json_documents(text) {
        Ok(j) => j,
        Err(e) => return Some(Err(Problem::at_file(rel, 0, 0, e.to_string()))),
    };
    Some(Ok(ChartFile {
        rel: rel.to_string(),
        kind,
        text: text.to_string(),
        docs,
        json,
    }))
}

/// Every chart version in `read`: the files [`read`] found chart versions in, in file order.
pub(super) fn scan(
    root: &Tree,
    read: Vec<Result<ChartFile, Problem>>,
    policies: &mut Policies,
    out: &mut Discovery,
) {
    let mut repos = Vec::new();
    let mut releases = Vec::new();
    let mut found: Vec<(ChartFile, Vec<ImageRef>)> = Vec::new();
    for f in read {
        let f = match f {
            Ok(f) => f,
            Err(p) => {
                out.problems.push(p);
                continue;
            }
        };
        let ctx = ctx_of(&f);
        let mut refs = Vec::new();
        match f.kind {
            Kind::ChartYaml => dependencies(root, &f, &ctx, &mut refs, out),
            Kind::Kustomization => helm_charts(&f, &ctx, &mut refs, &mut out.problems),
            Kind::Flux => flux_resources(&f, &mut repos, &mut releases),
        }
        drop(ctx);
        found.push((f, refs));
    }
    for rel in &releases {
        let said = (&mut out.problems, &mut out.notes);
        if let Some((i, r)) = release_ref(rel, &repos, &found, said) {
            if let Some((_, refs)) = found.get_mut(i) {
                refs.push(r);
            }
        }
    }
    for (f, refs) in found {
        let ctx = ctx_of(&f);
        for mut r in refs {
            if let Err(p) = super::fold::apply_policy(&ctx, policies, &mut r, None) {
                out.problems.push(p);
            }
            check_policy(&mut r);
            if r.is_managed() {
                out.sources
                    .entry(f.rel.as_str().into())
                    .or_insert_with(|| f.text.as_str().into());
            }
            out.refs.push(r);
        }
    }
}

fn ctx_of(f: &ChartFile) -> FileCtx<'_> {
    FileCtx {
        file: f.rel.as_str().into(),
        text: &f.text,
        lines: LineIndex::new(&f.text),
    }
}

fn key(k: &str) -> PathSeg {
    PathSeg::Key(k.to_string())
}

fn node<'a>(f: &'a ChartFile, doc: usize, path: &[PathSeg]) -> Option<&'a Node> {
    f.docs.get(doc)?.root.as_ref()?.at(path)
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(*k))?.as_str()
}

fn dir_of(rel: &str) -> &str {
    rel.rsplit_once('/').map_or(".", |(d, _)| d)
}

/// Whether a repository is one imagebump asks (a classic or an OCI repository).
fn asked(repo: &str) -> bool {
    ["https://", "http://", "oci://"]
        .iter()
        .any(|p| repo.starts_with(p))
}

/// `Chart.yaml` `dependencies[].version`; the same dependency's version in `Chart.lock`
/// beside it moves with it (its digest and time follow in the plan, `plan/chart_lock.rs`).
fn dependencies(
    root: &Tree,
    f: &ChartFile,
    ctx: &FileCtx,
    refs: &mut Vec<ImageRef>,
    out: &mut Discovery,
) {
    let Some(deps) = f
        .json
        .first()
        .and_then(|d| d.get("dependencies"))
        .and_then(Value::as_array)
    else {
        return;
    };
    let unit = dir_of(&f.rel);
    let lock_rel = format!(
        "{}Chart.lock",
        f.rel.strip_suffix("Chart.yaml").unwrap_or("")
    );
    let lock = read_lock(root, &lock_rel);
    for (i, d) in deps.iter().enumerate() {
        let (Some(name), Some(repo)) = (str_at(d, &["name"]), str_at(d, &["repository"])) else {
            continue;
        };
        let path = vec![key("dependencies"), PathSeg::Index(i), key("version")];
        let Some(Node::Scalar(s)) = node(f, 0, &path) else {
            continue;
        };
        if !asked(repo) {
            continue;
        }
        let mut r = match chart_ref(ctx, unit, (0, path), s, (repo, name)) {
            Ok(r) => r,
            Err(p) => {
                out.problems.push(p);
                continue;
            }
        };
        if let Some((text, lock_deps)) = &lock {
            let j = lock_deps.iter().position(|l| {
                str_at(l, &["name"]) == Some(name) && str_at(l, &["repository"]) == Some(repo)
            });
            if let Some(j) = j {
                r.extra_mut().creations.push(Creation {
                    file: lock_rel.clone(),
                    doc: 0,
                    path: vec![key("dependencies"), PathSeg::Index(j), key("version")],
                    what: Created::Key {
                        value: Template::Tag,
                    },
                });
                out.sources
                    .entry(lock_rel.as_str().into())
                    .or_insert_with(|| text.as_str().into());
            }
        }
        refs.push(r);
    }
}

/// `Chart.lock`'s text and dependencies, when there is one.
fn read_lock(root: &Tree, rel: &str) -> Option<(String, Vec<Value>)> {
    let path = root.resolve(rel).ok()?;
    let text = root.read(&path, MAX_FILE_BYTES).ok()?;
    let json = imagebump_yaml::json_documents(&text).ok()?;
    let deps = json.first()?.get("dependencies")?.as_array()?.clone();
    Some((text, deps))
}

/// kustomize `helmCharts[].version` with its `repo` and `name`.
fn helm_charts(
    f: &ChartFile,
    ctx: &FileCtx,
    refs: &mut Vec<ImageRef>,
    problems: &mut Vec<Problem>,
) {
    for (doc, v) in f.json.iter().enumerate() {
        let Some(charts) = v.get("helmCharts").and_then(Value::as_array) else {
            continue;
        };
        for (i, c) in charts.iter().enumerate() {
            let (Some(name), Some(repo)) = (str_at(c, &["name"]), str_at(c, &["repo"])) else {
                continue;
            };
            let path = vec![key("helmCharts"), PathSeg::Index(i), key("version")];
            let Some(Node::Scalar(s)) = node(f, doc, &path) else {
                continue;
            };
            if !asked(repo) {
                continue;
            }
            match chart_ref(ctx, dir_of(&f.rel), (doc, path), s, (repo, name)) {
                Ok(r) => refs.push(r),
                Err(p) => problems.push(p),
            }
        }
    }
}

/// A Flux `HelmRepository`: name, namespace and URL (`oci://` for `type: oci`).
struct Repo {
    name: String,
    namespace: Option<String>,
    url: String,
}

/// A Flux `HelmRelease` whose chart comes from a `HelmRepository`.
struct Release {
    file: String,
    doc: usize,
    namespace: Option<String>,
    chart: String,
    source: (String, Option<String>),
}

fn flux_kind(v: &Value, kind: &str, group: &str) -> bool {
    v.get("kind").and_then(Value::as_str) == Some(kind)
        && v.get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|a| a.starts_with(group))
}

fn flux_resources(f: &ChartFile, repos: &mut Vec<Repo>, releases: &mut Vec<Release>) {
    for (doc, v) in f.json.iter().enumerate() {
        let namespace = str_at(v, &["metadata", "namespace"]).map(str::to_string);
        if flux_kind(v, "HelmRepository", "source.toolkit.fluxcd.io/") {
            if let (Some(name), Some(url)) = (
                str_at(v, &["metadata", "name"]),
                str_at(v, &["spec", "url"]),
            ) {
                repos.push(Repo {
                    name: name.to_string(),
                    namespace,
                    url: url.to_string(),
                });
            }
        } else if flux_kind(v, "HelmRelease", "helm.toolkit.fluxcd.io/") {
            let spec = |k: &str| str_at(v, &["spec", "chart", "spec", k]);
            let kind = str_at(v, &["spec", "chart", "spec", "sourceRef", "kind"]);
            let source = str_at(v, &["spec", "chart", "spec", "sourceRef", "name"]);
            let (Some(chart), Some("HelmRepository"), Some(source)) = (spec("chart"), kind, source)
            else {
                continue;
            };
            let source_ns = str_at(v, &["spec", "chart", "spec", "sourceRef", "namespace"]);
            releases.push(Release {
                file: f.rel.clone(),
                doc,
                namespace: source_ns.map(str::to_string).or(namespace),
                chart: chart.to_string(),
                source: (source.to_string(), source_ns.map(str::to_string)),
            });
        }
    }
}

/// The reference of a release's version, and the index of its file in `found`. A release
/// whose `HelmRepository` is not in git (often kept with the cluster's infrastructure) is
/// a note at its `sourceRef`: its version cannot be checked, and nothing is wrong with it.
/// One whose `HelmRepository` is defined more than once is an error.
fn release_ref(
    rel: &Release,
    repos: &[Repo],
    found: &[(ChartFile, Vec<ImageRef>)],
    (problems, notes): (&mut Vec<Problem>, &mut Vec<Problem>),
) -> Option<(usize, ImageRef)> {
    let i = found.iter().position(|(f, _)| f.rel == rel.file)?;
    let (f, _) = found.get(i)?;
    let ctx = ctx_of(f);
    let spec = vec![key("spec"), key("chart"), key("spec")];
    let at = |k: &str| {
        let mut p = spec.clone();
        p.push(key(k));
        p
    };
    let Some(Node::Scalar(s)) = node(f, rel.doc, &at("version")) else {
        return None;
    };
    // A namespace left to the applying Kustomization matches any.
    let same_ns = |r: &Repo| match (&r.namespace, &rel.namespace) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    };
    let matching: Vec<&Repo> = repos
        .iter()
        .filter(|r| r.name == rel.source.0 && same_ns(r))
        .collect();
    let repo = match matching.as_slice() {
        [one] => *one,
        [] | [_, _, ..] => {
            let offset = node(f, rel.doc, &at("sourceRef")).map_or(s.span.start, Node::offset);
            let (what, said) = if matching.is_empty() {
                ("is not in the repository", notes)
            } else {
                (
                    "is defined more than once (in different namespaces?)",
                    problems,
                )
            };
            said.push(ctx.problem(
                offset,
                format!(
                    "HelmRelease chart {}: HelmRepository {} {what}; its version is not checked",
                    rel.chart, rel.source.0
                ),
            ));
            return None;
        }
    };
    match chart_ref(
        &ctx,
        dir_of(&f.rel),
        (rel.doc, at("version")),
        s,
        (&repo.url, &rel.chart),
    ) {
        Ok(r) => Some((i, r)),
        Err(p) => {
            problems.push(p);
            None
        }
    }
}
