//! argocd-image-updater v1 `ImageUpdater` resources
//! (`argocd-image-updater.argoproj.io/v1alpha1`, api/v1alpha1/imageupdater_types.go) and
//! the configuration they give an Application.
//!
//! How AIU picks the configuration (`FilterApplicationsForUpdate`, pkg/argocd/argocd.go):
//! an ImageUpdater only considers Applications in its own namespace. Its
//! `applicationRefs` are sorted by specificity (stable, most specific first, see
//! [`specificity`]) and the first ref whose `namePattern` (Go `filepath.Match`) and
//! `labelSelectors` match the app wins. A ref with `useAnnotations: true` takes
//! everything from the app's annotations (its own and the global settings are ignored).
//! Otherwise settings merge field by field, image > applicationRef > spec
//! (`commonUpdateSettings`), and `writeBackConfig` applicationRef > spec (gitConfig field
//! by field, `pullRequest` whole). When a matching ref cannot be used (no image-list for
//! `useAnnotations`, a bad write-back setting) AIU skips it and tries the next one.
//! imagebump skips a `useAnnotations` ref only when the app has no image-list; a matching
//! ref whose settings do not parse is an error and leaves the app alone, rather than
//! handing it to a less specific ref's settings.
//!
//! AIU runs every ImageUpdater on its own, so two of them matching one app both update it.
//! imagebump takes one configuration per app: the most specific matching ref across all
//! ImageUpdaters (ties: the order given), and notes the others.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

use super::annotations::{
    build_image, from_annotations, parse_write_back, HelmKeys, ImageInput, Layer, Named, Namer,
    UpdateSettings, UpdaterConfig, UpdaterImage, WriteBackInput, DEFAULT_HELM_IMAGE_NAME,
    DEFAULT_HELM_IMAGE_TAG,
};
use super::app::{name_and_namespace, App, AppError, Meta};
use super::glob::{BadPattern, GoGlob};

/// An `ImageUpdater` that AIU (or the Kubernetes API) refuses, or one of its refs whose
/// settings cannot be read; `who` is `ImageUpdater <name>`, `at` the field's place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Metadata(#[from] super::app::Error),
    #[error("{who} has no spec")]
    NoSpec { who: String },
    /// The spec does not deserialize: unknown fields, wrong types.
    #[error("{who}: spec: {reason}")]
    Spec { who: String, reason: String },
    #[error("{who}: spec.applicationRefs needs at least one entry")]
    NoRefs { who: String },
    #[error(transparent)]
    Schema(#[from] SpecError),
    #[error(
        "{at}.namePattern {pattern:?} is invalid ({reason}); AIU refuses the whole ImageUpdater"
    )]
    NamePattern {
        at: String,
        pattern: String,
        reason: BadPattern,
    },
    #[error("{at}.namePattern {pattern:?} is used by an earlier ref")]
    DuplicatePattern { at: String, pattern: String },
    #[error("{at}: either useAnnotations must be true, or images must have at least one entry")]
    NothingToUpdate { at: String },
    #[error("{at}.alias {alias:?} is used twice")]
    DuplicateAlias { at: String, alias: String },
    #[error("{key}: {value:?}: pull-request mode takes only the base branch")]
    PullRequestBranch { key: String, value: String },
    #[error(transparent)]
    Settings(#[from] super::annotations::Error),
}

impl Error {
    /// The edit that makes the resource valid, where there is one.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Error::Metadata(e) => e.hint(),
            Error::Settings(e) => e.hint(),
            Error::NothingToUpdate { .. } => {
                Some("set useAnnotations: true or list the images of the ref")
            }
            Error::PullRequestBranch { .. } => {
                Some("give gitConfig.branch as the base branch alone, without :<write-branch>")
            }
            _ => None,
        }
    }
}

/// Every matching ref of the ImageUpdaters that select an app fails (or is skipped): each
/// reason, most specific ref first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .failures.join("; "))]
pub struct NoUsableRef {
    pub failures: Vec<String>,
}

/// One `ImageUpdater` resource, its spec parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageUpdater {
    pub file: String,
    pub doc: usize,
    pub name: String,
    pub namespace: Option<String>,
    pub common_update_settings: Option<UpdateSettings>,
    pub write_back_config: Option<WriteBackConfig>,
    pub application_refs: Vec<ApplicationRef>,
    pub images_verification: Option<Value>,
    /// Problems AIU tolerates silently (a ref whose label selector is invalid never
    /// matches).
    pub warnings: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Spec {
    common_update_settings: Option<UpdateSettings>,
    write_back_config: Option<WriteBackConfig>,
    application_refs: Option<Vec<ApplicationRef>>,
    images_verification: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplicationRef {
    pub name_pattern: String,
    pub label_selectors: Option<LabelSelector>,
    pub use_annotations: Option<bool>,
    pub images_verification: Option<Value>,
    pub common_update_settings: Option<UpdateSettings>,
    pub write_back_config: Option<WriteBackConfig>,
    #[serde(default)]
    pub images: Option<Vec<ImageConfig>>,
    /// Why the label selector is invalid (then the ref never matches, as in AIU).
    #[serde(skip)]
    pub selector_error: Option<SelectorError>,
}

/// A Kubernetes label selector.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    pub match_labels: Option<BTreeMap<String, String>>,
    pub match_expressions: Option<Vec<LabelSelectorRequirement>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelectorRequirement {
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    pub values: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WriteBackConfig {
    pub method: Option<String>,
    pub git_config: Option<GitConfig>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitConfig {
    pub repository: Option<String>,
    pub branch: Option<String>,
    pub write_back_target: Option<String>,
    pub pull_request: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageConfig {
    pub alias: String,
    /// `repo[:constraint]`.
    pub image_name: String,
    pub common_update_settings: Option<UpdateSettings>,
    pub manifest_targets: Option<ManifestTargets>,
    pub images_verification: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestTargets {
    pub helm: Option<KeyTarget>,
    pub kustomize: Option<KustomizeTarget>,
    pub plugin: Option<KeyTarget>,
}

/// `manifestTargets.helm` (Helm keys) or `.plugin` (environment variable names).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyTarget {
    pub name: Option<String>,
    pub tag: Option<String>,
    pub spec: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KustomizeTarget {
    pub name: String,
}

/// Every `ImageUpdater` among a file's documents. `Err` for what the Kubernetes API would
/// refuse (unknown fields, wrong types, schema and validation rules of the CRD) or AIU
/// refuses as a whole (an invalid `namePattern`).
pub fn find_image_updaters(file: &str, docs: &[Value]) -> Vec<Result<ImageUpdater, AppError>> {
    super::app::find_kind(
        file,
        docs,
        ("argocd-image-updater.argoproj.io/", "ImageUpdater"),
        parse,
    )
}

fn parse(file: &str, doc: usize, v: &Value) -> Result<ImageUpdater, Error> {
    let Meta {
        name, namespace, ..
    } = name_and_namespace(v, "ImageUpdater")?;
    let who = format!("ImageUpdater {name}");
    let spec = match v.get("spec") {
        None | Some(Value::Null) => return Err(Error::NoSpec { who }),
        Some(s) => Spec::deserialize(s).map_err(|e| Error::Spec {
            who: who.clone(),
            reason: e.to_string(),
        })?,
    };
    let mut refs = spec.application_refs.unwrap_or_default();
    if refs.is_empty() {
        return Err(Error::NoRefs { who });
    }
    check_method(spec.write_back_config.as_ref(), &format!("{who}: spec"))?;
    let warnings = check_refs(&who, &mut refs)?;
    Ok(ImageUpdater {
        file: file.to_string(),
        doc,
        name,
        namespace,
        common_update_settings: spec.common_update_settings,
        write_back_config: spec.write_back_config,
        application_refs: refs,
        images_verification: spec.images_verification,
        warnings,
    })
}

/// The checks AIU's schema and controller make on each ref (a refused ref refuses the
/// whole resource); an invalid label selector is kept on its ref, with a warning.
fn check_refs(who: &str, refs: &mut [ApplicationRef]) -> Result<Vec<String>, Error> {
    let mut warnings = Vec::new();
    let mut patterns = BTreeSet::new();
    for (i, r) in refs.iter_mut().enumerate() {
        let at = format!("{who}: spec.applicationRefs[{i}]");
        GoGlob::new(&r.name_pattern).map_err(|reason| Error::NamePattern {
            at: at.clone(),
            pattern: r.name_pattern.clone(),
            reason,
        })?;
        if !patterns.insert(r.name_pattern.clone()) {
            return Err(Error::DuplicatePattern {
                at,
                pattern: r.name_pattern.clone(),
            });
        }
        check_method(r.write_back_config.as_ref(), &at)?;
        let images = r.images.as_deref().unwrap_or_default();
        if r.use_annotations != Some(true) && images.is_empty() {
            return Err(Error::NothingToUpdate { at });
        }
        let mut aliases = BTreeSet::new();
        for (j, img) in images.iter().enumerate() {
            check_image(img, &format!("{at}.images[{j}]"))?;
            if !aliases.insert(img.alias.as_str()) {
                return Err(Error::DuplicateAlias {
                    at: format!("{at}.images[{j}]"),
                    alias: img.alias.clone(),
                });
            }
        }
        if let Some(sel) = &r.label_selectors {
            if let Err(e) = check_selector(sel) {
                warnings.push(format!(
                    "{at}.labelSelectors: {e}; AIU then matches no application with this ref"
                ));
                r.selector_error = Some(e);
            }
        }
    }
    Ok(warnings)
}

/// A field of an `ImageUpdater` that the CRD's schema refuses (so AIU never sees the
/// resource); `at` names the field's place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("{at}.writeBackConfig.method {method:?}: expected argocd, git or git:<credentials>")]
    Method { at: String, method: String },
    #[error(
        "{at}.alias {alias:?}: letters, digits, '-', '.', '_', starting with a letter or digit"
    )]
    Alias { at: String, alias: String },
    #[error("{at}.imageName is empty")]
    NoImageName { at: String },
    #[error("{at}.manifestTargets: exactly one of helm, kustomize or plugin must be given")]
    Targets { at: String },
    #[error("{at}.manifestTargets.plugin needs spec or name")]
    Plugin { at: String },
}

/// The CRD's pattern for `writeBackConfig.method`.
fn check_method(w: Option<&WriteBackConfig>, at: &str) -> Result<(), SpecError> {
    let Some(m) = w.and_then(|w| w.method.as_deref()) else {
        return Ok(());
    };
    let ok = m == "argocd"
        || m == "git"
        || m.strip_prefix("git:").is_some_and(|c| {
            c.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
                && c.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-._/:".contains(c))
        });
    if ok {
        Ok(())
    } else {
        Err(SpecError::Method {
            at: at.into(),
            method: m.into(),
        })
    }
}

fn check_image(img: &ImageConfig, at: &str) -> Result<(), SpecError> {
    let alias_ok = img
        .alias
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
        && img
            .alias
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c));
    if !alias_ok {
        return Err(SpecError::Alias {
            at: at.into(),
            alias: img.alias.clone(),
        });
    }
    if img.image_name.trim().is_empty() {
        return Err(SpecError::NoImageName { at: at.into() });
    }
    if let Some(t) = &img.manifest_targets {
        let n = [t.helm.is_some(), t.kustomize.is_some(), t.plugin.is_some()]
            .iter()
            .filter(|b| **b)
            .count();
        if n != 1 {
            return Err(SpecError::Targets { at: at.into() });
        }
        if let Some(p) = &t.plugin {
            if p.spec.is_none() && p.name.is_none() {
                return Err(SpecError::Plugin { at: at.into() });
            }
        }
    }
    Ok(())
}

static LABEL_NAME: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$").ok());
static DNS_SUBDOMAIN: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$").ok()
});

fn matches(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(s))
}

/// Why a label selector is refused (`metav1.LabelSelectorAsSelector`'s checks); AIU then
/// matches no application with the ref.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    #[error("label key {key:?} has an invalid prefix")]
    KeyPrefix { key: String },
    #[error("{key:?} is not a valid label key")]
    Key { key: String },
    #[error("{value:?} is not a valid label value")]
    Value { value: String },
    #[error("{operator} on {key:?} needs values")]
    NoValues { operator: String, key: String },
    #[error("{operator} on {key:?} takes no values")]
    Values { operator: String, key: String },
    #[error("{operator:?} is not a label selector operator")]
    Operator { operator: String },
}

impl SelectorError {
    /// What Kubernetes accepts.
    pub fn hint(&self) -> &'static str {
        match self {
            SelectorError::KeyPrefix { .. } | SelectorError::Key { .. } => {
                "a label key is [<DNS subdomain>/]<name>, the name up to 63 letters, digits, '-', '_' or '.'"
            }
            SelectorError::Value { .. } => {
                "a label value is empty or up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
            }
            SelectorError::NoValues { .. } | SelectorError::Values { .. } => {
                "In and NotIn take values; Exists and DoesNotExist take none"
            }
            SelectorError::Operator { .. } => "operators are In, NotIn, Exists and DoesNotExist",
        }
    }
}

/// Kubernetes' label key rules: `[prefix/]name`.
fn check_key(key: &str) -> Result<(), SelectorError> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        if p.is_empty() || p.len() > 253 || !matches(&DNS_SUBDOMAIN, p) {
            return Err(SelectorError::KeyPrefix { key: key.into() });
        }
    }
    if name.is_empty() || name.len() > 63 || !matches(&LABEL_NAME, name) {
        return Err(SelectorError::Key { key: key.into() });
    }
    Ok(())
}

fn check_value(value: &str) -> Result<(), SelectorError> {
    if value.is_empty() || (value.len() <= 63 && matches(&LABEL_NAME, value)) {
        Ok(())
    } else {
        Err(SelectorError::Value {
            value: value.into(),
        })
    }
}

/// `metav1.LabelSelectorAsSelector`'s checks.
fn check_selector(sel: &LabelSelector) -> Result<(), SelectorError> {
    for (k, v) in sel.match_labels.iter().flatten() {
        check_key(k)?;
        check_value(v)?;
    }
    for e in sel.match_expressions.iter().flatten() {
        check_key(&e.key)?;
        let values = e.values.as_deref().unwrap_or_default();
        match e.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => {
                return Err(SelectorError::NoValues {
                    operator: e.operator.clone(),
                    key: e.key.clone(),
                })
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => {
                return Err(SelectorError::Values {
                    operator: e.operator.clone(),
                    key: e.key.clone(),
                })
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => {
                return Err(SelectorError::Operator {
                    operator: other.into(),
                })
            }
        }
        values.iter().try_for_each(|v| check_value(v))?;
    }
    Ok(())
}

fn selector_matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let exact = sel
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    exact
        && sel.match_expressions.iter().flatten().all(|e| {
            let values = e.values.as_deref().unwrap_or_default();
            let have = labels.get(&e.key);
            match e.operator.as_str() {
                "In" => have.is_some_and(|v| values.contains(v)),
                "NotIn" => have.is_none_or(|v| !values.contains(v)),
                "Exists" => have.is_some(),
                "DoesNotExist" => have.is_none(),
                _ => false,
            }
        })
}

/// AIU's `calculateSpecificity`: an exact name (no `*?[]`) +1,000,000; +1 per literal byte
/// of the pattern (after removing `[...]` sets, `*` and `?`); a label selector +10,000 and
/// +100 per matchLabels entry and per matchExpression.
pub fn specificity(r: &ApplicationRef) -> u64 {
    let p = &r.name_pattern;
    let mut score = 0u64;
    if !p.contains(['*', '?', '[', ']']) {
        score = 1_000_000;
    }
    let literals = strip_sets(p).replace(['*', '?'], "");
    score = score.saturating_add(literals.len() as u64);
    if let Some(sel) = &r.label_selectors {
        let n = sel
            .match_labels
            .as_ref()
            .map_or(0, BTreeMap::len)
            .saturating_add(sel.match_expressions.as_ref().map_or(0, Vec::len));
        score = score.saturating_add((n as u64).saturating_mul(100).saturating_add(10_000));
    }
    score
}

/// Go's `regexp.MustCompile(`\[.*?]`).ReplaceAllString(p, "")`.
fn strip_sets(p: &str) -> String {
    let mut out = String::new();
    let mut rest = p;
    while let Some((before, after)) = rest.split_once('[') {
        out.push_str(before);
        match after.split_once(']') {
            // `.` does not match a newline: a set ends before the next one.
            Some((set, tail)) if !set.contains('\n') => rest = tail,
            _ => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// An `ImageUpdater` that could not be read, as far as can be told which Applications it
/// was meant for: AIU updates none of them, and neither does imagebump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenUpdater {
    /// `ImageUpdater <ns>/<name>` (or where it is, when it has no readable name).
    pub label: String,
    pub namespace: Option<String>,
    /// Its `applicationRefs[].namePattern`s, as written.
    pub patterns: Vec<String>,
    /// A ref's `namePattern` is missing or not a pattern (or the refs are not a list):
    /// which Applications it was meant for cannot be told, so it may be meant for any in
    /// its namespace.
    pub unknown_scope: bool,
    /// Why it is invalid.
    pub why: String,
}

impl BrokenUpdater {
    /// What can be read of the invalid ImageUpdater `v` (document `doc` of `file`).
    pub fn read(file: &str, doc: usize, v: &Value, why: &str) -> BrokenUpdater {
        let meta = v.get("metadata");
        let text = |m: Option<&Value>, k: &str| {
            m.and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let name = text(meta, "name");
        let namespace = text(meta, "namespace");
        let label = match (&namespace, &name) {
            (Some(ns), Some(n)) => format!("ImageUpdater {ns}/{n}"),
            (None, Some(n)) => format!("ImageUpdater {n}"),
            _ => format!(
                "the ImageUpdater in {file} (document {})",
                doc.saturating_add(1)
            ),
        };
        let refs = v.pointer("/spec/applicationRefs").and_then(Value::as_array);
        let written: Vec<Option<&str>> = (refs.into_iter().flatten())
            .map(|r| r.get("namePattern").and_then(Value::as_str))
            .collect();
        let unknown_scope = refs.is_none()
            || written
                .iter()
                .any(|p| p.is_none_or(|p| GoGlob::new(p).is_err()));
        BrokenUpdater {
            label,
            namespace,
            patterns: written.into_iter().flatten().map(str::to_string).collect(),
            unknown_scope,
            why: why.to_string(),
        }
    }

    /// Whether it could have been meant for `app`: same namespace, and a name pattern that
    /// matches, or refs whose patterns cannot be read (then any app of the namespace).
    pub fn meant_for(&self, app: &App) -> bool {
        sees(self.namespace.as_deref(), app)
            && (self.unknown_scope
                || (self.patterns.iter())
                    .any(|p| GoGlob::new(p).is_ok_and(|g| g.is_match(&app.name))))
    }
}

impl ImageUpdater {
    /// `ImageUpdater <ns>/<name>`.
    pub fn label(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("ImageUpdater {ns}/{}", self.name),
            None => format!("ImageUpdater {}", self.name),
        }
    }

    /// Whether this ImageUpdater considers `app` at all: same namespace (an unset
    /// namespace on either side is taken to be the same one).
    fn sees(&self, app: &App) -> bool {
        sees(self.namespace.as_deref(), app)
    }
}

/// Whether an ImageUpdater in namespace `ns` considers `app`: same namespace (an unset
/// namespace on either side is taken to be the same one).
fn sees(ns: Option<&str>, app: &App) -> bool {
    match (ns, app.namespace.as_deref()) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

fn ref_matches(r: &ApplicationRef, app: &App) -> bool {
    r.selector_error.is_none()
        && GoGlob::new(&r.name_pattern).is_ok_and(|g| g.is_match(&app.name))
        && r.label_selectors
            .as_ref()
            .is_none_or(|s| selector_matches(s, &app.labels))
}

/// The configuration the ImageUpdater resources give `app`: the most specific matching
/// applicationRef across them (see the module documentation), with settings merged
/// image > applicationRef > spec; a `useAnnotations` ref defers to
/// [`from_annotations`]. `Ok(None)` when no ref matches; `Err` when every matching ref
/// fails, with each reason.
pub fn config_for(
    app: &App,
    updaters: &[ImageUpdater],
) -> Result<Option<UpdaterConfig>, NoUsableRef> {
    // (specificity, updater index, updater, ref index, ref)
    let mut candidates: Vec<(u64, usize, &ImageUpdater, usize, &ApplicationRef)> = updaters
        .iter()
        .enumerate()
        .filter(|(_, u)| u.sees(app))
        .flat_map(|(ui, u)| {
            u.application_refs
                .iter()
                .enumerate()
                .filter(|(_, r)| ref_matches(r, app))
                .map(move |(ri, r)| (specificity(r), ui, u, ri, r))
        })
        .collect();
    candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
    let mut failures = Vec::new();
    for &(_, ui, u, ri, r) in &candidates {
        let at = format!("{}: spec.applicationRefs[{ri}]", u.label());
        let attempt = if r.use_annotations == Some(true) {
            annotation_config(u, ri, r, app)
        } else {
            ref_config(u, ri, r).map(Some)
        };
        match attempt {
            // No image-list: the ref does not apply, and AIU tries the next one.
            Ok(None) => failures.push(format!("{at} matches but AIU skips it: useAnnotations is true but the application has no argocd-image-updater.argoproj.io/image-list annotation")),
            Ok(Some(mut config)) => {
                config.notes.splice(0..0, std::mem::take(&mut failures));
                let others: BTreeSet<String> = candidates
                    .iter()
                    .filter(|c| c.1 != ui)
                    .map(|c| c.2.label())
                    .collect();
                for other in others {
                    config.notes.push(format!(
                        "{other} also matches this application: AIU runs every ImageUpdater on its own and would apply it too; imagebump uses only {at}"
                    ));
                }
                return Ok(Some(config));
            }
            // Settings that do not parse: AIU would skip to a less specific ref, but its
            // settings are not the ones meant for the app; it is left alone instead.
            Err(e) => {
                failures.push(format!("{at} matches but cannot be read: {e}"));
                return Err(NoUsableRef { failures });
            }
        }
    }
    if failures.is_empty() {
        Ok(None)
    } else {
        Err(NoUsableRef { failures })
    }
}

/// A `useAnnotations` ref: only the app's annotations (and the ref's imagesVerification);
/// `None` when the app has no image-list.
fn annotation_config(
    u: &ImageUpdater,
    ri: usize,
    r: &ApplicationRef,
    app: &App,
) -> Result<Option<UpdaterConfig>, Error> {
    let Some(mut config) = from_annotations(app)? else {
        return Ok(None);
    };
    config.origin = format!("{} (annotations)", u.label());
    if verification(&[r.images_verification.as_ref()]) {
        config.notes.push(verification_note(&format!(
            "{}: spec.applicationRefs[{ri}]",
            u.label()
        )));
        config.images.iter_mut().for_each(require_verification);
    }
    Ok(Some(config))
}

/// Whether image signature verification is on after merging the levels given (least
/// specific first): a block present means enabled unless it says `enabled: false`.
fn verification(levels: &[Option<&Value>]) -> bool {
    let present: Vec<&Value> = levels.iter().flatten().copied().collect();
    !present.is_empty()
        && present
            .iter()
            .rev()
            .find_map(|v| v.get("enabled").and_then(Value::as_bool))
            .unwrap_or(true)
}

fn verification_note(at: &str) -> String {
    format!("{at}: imagesVerification: signatures are verified with the keys of the operator's verify for this image; the cosignKey secret is not read from the cluster")
}

/// AIU verifies this image: so must imagebump. The keys are the operator's (`verify` in
/// its configuration); with none, the image fails closed (docs/security.md).
fn require_verification(image: &mut UpdaterImage) {
    if image.policy.verify.is_none() {
        image.policy.verify = Some(imagebump_model::verify::VerifySpec::default());
    }
}

/// A ref with `images`: settings merged image > ref > spec.
fn ref_config(u: &ImageUpdater, ri: usize, r: &ApplicationRef) -> Result<UpdaterConfig, Error> {
    let mut notes = Vec::new();
    let mut images = Vec::new();
    for (j, img) in r.images.iter().flatten().enumerate() {
        images.push(ref_image(u, (ri, r), (j, img), &mut notes)?);
    }
    let write_back = ref_write_back(u, ri, r, &mut notes)?;
    Ok(UpdaterConfig {
        images,
        write_back,
        notes,
        origin: u.label(),
    })
}

/// Image `j` of ref `ri`, its settings merged image > ref > spec.
fn ref_image(
    u: &ImageUpdater,
    (ri, r): (usize, &ApplicationRef),
    (j, img): (usize, &ImageConfig),
    notes: &mut Vec<String>,
) -> Result<UpdaterImage, Error> {
    let who = u.label();
    let at = format!("{who}: spec.applicationRefs[{ri}]");
    let img_at = format!("{at}.images[{j}]");
    let empty = UpdateSettings::default();
    let layers = vec![
        Layer {
            settings: u.common_update_settings.as_ref().unwrap_or(&empty),
            namer: Namer::Path(format!("{who}: spec.commonUpdateSettings")),
        },
        Layer {
            settings: r.common_update_settings.as_ref().unwrap_or(&empty),
            namer: Namer::Path(format!("{at}.commonUpdateSettings")),
        },
        Layer {
            settings: img.common_update_settings.as_ref().unwrap_or(&empty),
            namer: Namer::Path(format!("{img_at}.commonUpdateSettings")),
        },
    ];
    let targets = img.manifest_targets.as_ref();
    let (helm, plugin) = target_keys(targets, &img_at, notes);
    let verify = verification(&[
        u.images_verification.as_ref(),
        r.images_verification.as_ref(),
        img.images_verification.as_ref(),
    ]);
    if verify {
        notes.push(verification_note(&img_at));
    }
    let mut image = build_image(
        ImageInput {
            alias: Some(img.alias.clone()),
            text: img.image_name.trim(),
            text_key: format!("{img_at}.imageName"),
            layers,
            helm,
            kustomize_name: targets
                .and_then(|t| t.kustomize.as_ref())
                .map(|k| k.name.clone()),
            plugin,
        },
        notes,
    )?;
    if verify {
        require_verification(&mut image);
    }
    Ok(image)
}

/// The Helm and plugin keys an image's `manifestTargets` name (AIU's defaults for Helm).
fn target_keys(
    targets: Option<&ManifestTargets>,
    img_at: &str,
    notes: &mut Vec<String>,
) -> (Option<HelmKeys>, Option<HelmKeys>) {
    let helm = targets.and_then(|t| t.helm.as_ref()).map(|h| match &h.spec {
        Some(spec) => {
            if h.name.is_some() || h.tag.is_some() {
                notes.push(format!(
                    "{img_at}.manifestTargets.helm: name and tag are ignored because spec is set (as in AIU)"
                ));
            }
            HelmKeys::Spec(spec.clone())
        }
        None => HelmKeys::NameTag {
            name: h.name.clone().unwrap_or_else(|| DEFAULT_HELM_IMAGE_NAME.into()),
            tag: h.tag.clone().unwrap_or_else(|| DEFAULT_HELM_IMAGE_TAG.into()),
        },
    });
    let plugin = targets
        .and_then(|t| t.plugin.as_ref())
        .map(|p| match &p.spec {
            Some(spec) => HelmKeys::Spec(spec.clone()),
            None => HelmKeys::NameTag {
                name: p.name.clone().unwrap_or_default(),
                tag: p.tag.clone().unwrap_or_default(),
            },
        });
    (helm, plugin)
}

/// Pull-request mode (`gitConfig.pullRequest`, at the level `at` names) takes only a base
/// branch; its labels are AIU's, not imagebump's (noted).
fn check_pull_request(
    (pr, at): (&Value, &str),
    branch: Option<&Named<'_>>,
    notes: &mut Vec<String>,
) -> Result<(), Error> {
    if let Some(b) = branch.filter(|b| b.value.contains(':')) {
        return Err(Error::PullRequestBranch {
            key: b.key.clone(),
            value: b.value.to_string(),
        });
    }
    let labels = pr
        .get("labels")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if labels > 0 {
        notes.push(format!(
            "{at}.gitConfig.pullRequest.labels are not applied: set imagebump's own pull-request labels"
        ));
    }
    Ok(())
}

/// `mergeWBCSettings` (ref over spec), then the write-back parsing shared with
/// annotations.
fn ref_write_back(
    u: &ImageUpdater,
    ri: usize,
    r: &ApplicationRef,
    notes: &mut Vec<String>,
) -> Result<super::annotations::WriteBack, Error> {
    let who = u.label();
    let levels = [
        (
            u.write_back_config.as_ref(),
            format!("{who}: spec.writeBackConfig"),
        ),
        (
            r.write_back_config.as_ref(),
            format!("{who}: spec.applicationRefs[{ri}].writeBackConfig"),
        ),
    ];
    // The most specific level that sets a field.
    let pick = |get: fn(&WriteBackConfig) -> Option<&String>, field: &str| {
        levels.iter().rev().find_map(|(w, at)| {
            w.and_then(get).map(|v| Named {
                value: v.as_str(),
                key: format!("{at}.{field}"),
            })
        })
    };
    let branch = pick(
        |w| w.git_config.as_ref()?.branch.as_ref(),
        "gitConfig.branch",
    );
    let pull_request = levels.iter().rev().find_map(|(w, at)| {
        w.and_then(|w| w.git_config.as_ref())
            .and_then(|g| g.pull_request.as_ref())
            .map(|p| (p, at.as_str()))
    });
    if let Some(pr) = pull_request {
        check_pull_request(pr, branch.as_ref(), notes)?;
    }
    parse_write_back(
        &WriteBackInput {
            method: pick(|w| w.method.as_ref(), "method"),
            target: pick(
                |w| w.git_config.as_ref()?.write_back_target.as_ref(),
                "gitConfig.writeBackTarget",
            ),
            branch,
            repository: pick(
                |w| w.git_config.as_ref()?.repository.as_ref(),
                "gitConfig.repository",
            ),
        },
        notes,
    )
    .map_err(Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::{WriteBack, WriteBackMethod, WriteBackTarget};
    use imagebump_model::policy::{SemverMode, Strategy};

    #[test]
    fn character_sets_end_at_the_first_close_bracket_on_their_line() {
        assert_eq!(strip_sets("a[b]c[d]e"), "ace");
        assert_eq!(strip_sets("a[b\nc]d[e]f"), "a[b\nc]df");
        assert_eq!(strip_sets("a[bc"), "a[bc");
        assert_eq!(strip_sets("é[ü]ö["), "éö[");
    }

    fn docs(text: &str) -> Vec<Value> {
        yaml_serde::Deserializer::from_str(text)
            .map(|d| Value::deserialize(d).unwrap())
            .collect()
    }

    fn updaters(text: &str) -> Vec<ImageUpdater> {
        find_image_updaters("iu.yaml", &docs(text))
            .into_iter()
            .map(|r| r.unwrap())
            .collect()
    }

    fn app(name: &str, labels: &[(&str, &str)], ann: &[(&str, &str)]) -> App {
        App {
            file: "apps.yaml".into(),
            doc: 0,
            name: name.into(),
            namespace: Some("argocd".into()),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            annotations: ann
                .iter()
                .map(|(k, v)| {
                    (
                        format!("argocd-image-updater.argoproj.io/{k}"),
                        v.to_string(),
                    )
                })
                .collect(),
            sources: vec![],
        }
    }

    const HEAD: &str =
        "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\n";

    fn one(meta: &str, spec: &str) -> String {
        format!("{HEAD}metadata: {meta}\nspec:\n{spec}")
    }

    /// Which ref (by its first image's alias, or "annotations") configures `app`.
    fn chosen(app: &App, us: &[ImageUpdater]) -> Option<String> {
        config_for(app, us).unwrap().map(|c| {
            c.images
                .first()
                .and_then(|i| i.alias.clone())
                .filter(|_| !c.origin.ends_with("(annotations)"))
                .unwrap_or_else(|| "annotations".into())
        })
    }

    #[test]
    fn name_patterns_and_specificity() {
        let us = updaters(&one(
            "{name: iu, namespace: argocd}",
            r#"
  applicationRefs:
  - namePattern: "*"
    images: [{alias: any, imageName: nginx}]
  - namePattern: "app-*"
    images: [{alias: app-star, imageName: nginx}]
  - namePattern: "app-prod-*"
    images: [{alias: app-prod-star, imageName: nginx}]
  - namePattern: "app-prod-1"
    images: [{alias: exact, imageName: nginx}]
  - namePattern: "app-[0-9]?"
    images: [{alias: class, imageName: nginx}]
"#,
        ));
        let pick = |n: &str| chosen(&app(n, &[], &[]), &us);
        assert_eq!(pick("app-prod-1").as_deref(), Some("exact"));
        assert_eq!(pick("app-prod-2").as_deref(), Some("app-prod-star"));
        // "app-*" has 4 literal bytes, "app-[0-9]?" too: the earlier one wins the tie.
        assert_eq!(pick("app-12").as_deref(), Some("app-star"));
        assert_eq!(pick("web").as_deref(), Some("any"));
        let r = |p: &str| ApplicationRef {
            name_pattern: p.into(),
            label_selectors: None,
            use_annotations: None,
            images_verification: None,
            common_update_settings: None,
            write_back_config: None,
            images: None,
            selector_error: None,
        };
        assert_eq!(specificity(&r("app-prod-1")), 1_000_010);
        assert_eq!(specificity(&r("app-*")), 4);
        assert_eq!(specificity(&r("app-[0-9]?")), 4);
        assert_eq!(specificity(&r("a[b[c]d]")), 3);
        let mut with_sel = r("*");
        with_sel.label_selectors = Some(LabelSelector {
            match_labels: Some([("a".to_string(), "b".to_string())].into()),
            match_expressions: Some(vec![]),
        });
        assert_eq!(specificity(&with_sel), 10_100);
    }

    #[test]
    fn label_selectors() {
        let us = updaters(&one(
            "{name: iu}",
            r#"
  applicationRefs:
  - namePattern: "*"
    images: [{alias: fallback, imageName: nginx}]
  - namePattern: "**"
    labelSelectors: {matchLabels: {team: a}}
    images: [{alias: team-a, imageName: nginx}]
  - namePattern: "***"
    labelSelectors:
      matchLabels: {team: a}
      matchExpressions:
      - {key: env, operator: In, values: [prod, staging]}
    images: [{alias: team-a-env, imageName: nginx}]
  - namePattern: "****"
    labelSelectors:
      matchExpressions:
      - {key: tier, operator: Exists}
      - {key: legacy, operator: DoesNotExist}
      - {key: env, operator: NotIn, values: [prod]}
    images: [{alias: tiered, imageName: nginx}]
"#,
        ));
        let pick = |labels: &[(&str, &str)]| chosen(&app("web", labels, &[]), &us);
        assert_eq!(pick(&[]).as_deref(), Some("fallback"));
        assert_eq!(pick(&[("team", "a")]).as_deref(), Some("team-a"));
        assert_eq!(
            pick(&[("team", "a"), ("env", "prod")]).as_deref(),
            Some("team-a-env")
        );
        assert_eq!(
            pick(&[("team", "b"), ("env", "prod")]).as_deref(),
            Some("fallback")
        );
        // Exists + DoesNotExist + NotIn (an absent label is "not in").
        assert_eq!(pick(&[("tier", "web")]).as_deref(), Some("tiered"));
        assert_eq!(
            pick(&[("tier", "web"), ("env", "dev")]).as_deref(),
            Some("tiered")
        );
        assert_eq!(
            pick(&[("tier", "web"), ("env", "prod")]).as_deref(),
            Some("fallback")
        );
        assert_eq!(
            pick(&[("tier", "web"), ("legacy", "")]).as_deref(),
            Some("fallback")
        );
    }

    #[test]
    fn invalid_selectors_never_match_and_warn() {
        let us = updaters(&one(
            "{name: iu}",
            r#"
  applicationRefs:
  - namePattern: "web"
    labelSelectors:
      matchExpressions: [{key: env, operator: In}]
    images: [{alias: broken, imageName: nginx}]
  - namePattern: "*"
    labelSelectors: {matchExpressions: [{key: env, operator: Equals, values: [a]}]}
    images: [{alias: broken2, imageName: nginx}]
  - namePattern: "w*"
    labelSelectors: {matchLabels: {"bad key!": x}}
    images: [{alias: broken3, imageName: nginx}]
  - namePattern: "**"
    images: [{alias: ok, imageName: nginx}]
"#,
        ));
        assert_eq!(us[0].warnings.len(), 3, "{:?}", us[0].warnings);
        assert!(us[0].warnings[0].contains("In on \"env\" needs values"));
        assert!(us[0].warnings[1].contains("\"Equals\" is not a label selector operator"));
        assert!(us[0].warnings[2].contains("\"bad key!\" is not a valid label key"));
        let refs = &us[0].application_refs;
        assert_eq!(
            refs.iter()
                .filter_map(|r| r.selector_error.clone())
                .collect::<Vec<_>>(),
            [
                SelectorError::NoValues {
                    operator: "In".into(),
                    key: "env".into()
                },
                SelectorError::Operator {
                    operator: "Equals".into()
                },
                SelectorError::Key {
                    key: "bad key!".into()
                },
            ]
        );
        assert!(refs
            .iter()
            .filter_map(|r| r.selector_error.as_ref())
            .all(|e| !e.hint().is_empty()));
        assert_eq!(
            chosen(&app("web", &[("env", "a")], &[]), &us).as_deref(),
            Some("ok")
        );
    }

    #[test]
    fn merge_order_image_over_ref_over_global() {
        let us = updaters(&one(
            "{name: iu, namespace: argocd}",
            r#"
  commonUpdateSettings:
    updateStrategy: newest-build
    allowTags: "regexp:^v"
    ignoreTags: [latest]
    platforms: [linux/amd64]
    pullSecret: pullsecret:argocd/regcred
  writeBackConfig:
    method: git
    gitConfig:
      branch: main
      writeBackTarget: "helmvalues:/env/values.yaml"
  applicationRefs:
  - namePattern: web
    commonUpdateSettings:
      updateStrategy: semver
      ignoreTags: ["*-rc*"]
    writeBackConfig:
      gitConfig: {writeBackTarget: kustomization}
    images:
    - alias: web
      imageName: "ghcr.io/org/web:~1.4"
      commonUpdateSettings: {allowTags: any, forceUpdate: true}
      manifestTargets: {kustomize: {name: org/web}}
    - alias: side
      imageName: "nginx:1.27.x"
      manifestTargets: {helm: {tag: side.tag}}
"#,
        ));
        let c = config_for(&app("web", &[], &[]), &us).unwrap().unwrap();
        assert_eq!(c.origin, "ImageUpdater argocd/iu");
        let [web, side] = &c.images[..] else {
            panic!("{:?}", c.images)
        };
        assert_eq!(web.alias.as_deref(), Some("web"));
        assert_eq!(web.name, "ghcr.io/org/web");
        assert_eq!(web.policy.strategy, Some(Strategy::Semver));
        assert_eq!(web.policy.semver_mode, Some(SemverMode::Masterminds));
        assert_eq!(web.policy.constraint.as_deref(), Some("~1.4"));
        assert_eq!(web.policy.allow_tags.as_deref(), Some("any"));
        assert_eq!(web.policy.ignore_tags, Some(vec!["*-rc*".to_string()]));
        assert_eq!(web.policy.platforms, Some(vec!["linux/amd64".to_string()]));
        assert!(web.force_update);
        assert_eq!(
            web.pull_secret.as_ref().map(|p| p.value.as_str()),
            Some("pullsecret:argocd/regcred")
        );
        assert_eq!(web.kustomize_name.as_deref(), Some("org/web"));
        assert_eq!(web.helm, None);
        assert_eq!(side.policy.allow_tags.as_deref(), Some("regexp:^v"));
        assert!(!side.force_update);
        assert_eq!(
            side.helm,
            Some(HelmKeys::NameTag {
                name: "image.name".into(),
                tag: "side.tag".into()
            })
        );
        assert_eq!(
            c.write_back,
            WriteBack {
                method: WriteBackMethod::Git { credentials: None },
                target: WriteBackTarget::Kustomization(None),
                branch: Some("main".into()),
            }
        );
        assert!(c.notes.iter().any(|n| n.starts_with(
            "image web (ghcr.io/org/web): ImageUpdater argocd/iu: spec.applicationRefs[0].images[0].commonUpdateSettings.forceUpdate is true"
        )), "{:#?}", c.notes);
        assert_eq!(
            side.pull_secret.as_ref().map(|p| p.key.as_str()),
            Some("ImageUpdater argocd/iu: spec.commonUpdateSettings.pullSecret")
        );
    }

    #[test]
    fn use_annotations_defers_to_the_app() {
        let us = updaters(&one(
            "{name: iu, namespace: argocd}",
            r#"
  commonUpdateSettings: {updateStrategy: digest}
  writeBackConfig: {method: git}
  applicationRefs:
  - namePattern: "web-*"
    useAnnotations: true
    imagesVerification: {cosignKey: {secretName: s, key: k}}
  - namePattern: "*"
    images: [{alias: cr, imageName: nginx}]
"#,
        ));
        let annotated = app(
            "web-1",
            &[],
            &[
                ("image-list", "a=nginx:1.x"),
                ("write-back-method", "git:repocreds"),
            ],
        );
        let c = config_for(&annotated, &us).unwrap().unwrap();
        assert_eq!(c.origin, "ImageUpdater argocd/iu (annotations)");
        // The CR's global settings are not used for an annotations ref.
        assert_eq!(c.images[0].policy.strategy, Some(Strategy::Semver));
        assert_eq!(
            c.write_back.method,
            WriteBackMethod::Git {
                credentials: Some("repocreds".into())
            }
        );
        assert!(c.notes.iter().any(|n| n.contains("imagesVerification")));
        // No image-list: AIU skips the ref and uses the next match.
        let plain = app("web-2", &[], &[]);
        let c = config_for(&plain, &us).unwrap().unwrap();
        assert_eq!(c.images[0].alias.as_deref(), Some("cr"));
        assert_eq!(c.images[0].policy.strategy, Some(Strategy::Digest));
        assert!(c.notes[0].starts_with(
            "ImageUpdater argocd/iu: spec.applicationRefs[0] matches but AIU skips it: useAnnotations is true"
        ));
    }

    #[test]
    fn no_match_and_all_failing() {
        let us = updaters(&one(
            "{name: iu, namespace: argocd}",
            "  applicationRefs:\n  - namePattern: web\n    useAnnotations: true\n",
        ));
        assert_eq!(config_for(&app("api", &[], &[]), &us), Ok(None));
        let e = config_for(
            &app(
                "web",
                &[],
                &[("image-list", "a=nginx"), ("a.force-update", "maybe")],
            ),
            &us,
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("a.force-update: \"maybe\" is not a boolean"),
            "{e}"
        );
        // A matching ref that cannot be read never hands the app to a broader one.
        let us = updaters(&one(
            "{name: iu, namespace: argocd}",
            "  applicationRefs:\n  - namePattern: web\n    useAnnotations: true\n  - namePattern: '*'\n    images: [{alias: cr, imageName: nginx}]\n",
        ));
        let bad = app(
            "web",
            &[],
            &[("image-list", "a=nginx"), ("a.force-update", "maybe")],
        );
        assert_eq!(
            config_for(&bad, &us).map_err(|e| e.to_string()),
            Err("ImageUpdater argocd/iu: spec.applicationRefs[0] matches but cannot be read: argocd-image-updater.argoproj.io/a.force-update: \"maybe\" is not a boolean (true or false)".into())
        );
        // Another namespace is not seen at all.
        let mut other = app("web", &[], &[("image-list", "nginx")]);
        other.namespace = Some("team-a".into());
        assert_eq!(config_for(&other, &us), Ok(None));
    }

    #[test]
    fn across_updaters_the_most_specific_wins_and_others_are_noted() {
        let text = format!(
            "{}\n---\n{}",
            one("{name: broad, namespace: argocd}", "  applicationRefs:\n  - namePattern: '*'\n    images: [{alias: broad, imageName: nginx}]\n"),
            one("{name: narrow, namespace: argocd}", "  applicationRefs:\n  - namePattern: web\n    images: [{alias: narrow, imageName: nginx}]\n"),
        );
        let us = updaters(&text);
        let c = config_for(&app("web", &[], &[]), &us).unwrap().unwrap();
        assert_eq!(c.images[0].alias.as_deref(), Some("narrow"));
        assert!(c
            .notes
            .last()
            .unwrap()
            .starts_with("ImageUpdater argocd/broad also matches this application"));
    }

    #[test]
    fn write_back_merge_and_pull_requests() {
        let us = updaters(&one(
            "{name: iu}",
            r#"
  writeBackConfig:
    method: "git:secret:argocd/creds"
    gitConfig: {repository: "git@github.com:org/other.git", branch: "main:update-{{.SHA256}}"}
  applicationRefs:
  - namePattern: a
    writeBackConfig: {method: argocd}
    images: [{alias: x, imageName: nginx}]
  - namePattern: b
    writeBackConfig:
      gitConfig:
        branch: release
        pullRequest: {github: {}, labels: [deps]}
    images: [{alias: x, imageName: nginx}]
  - namePattern: c
    writeBackConfig:
      gitConfig: {pullRequest: {github: {}}}
    images: [{alias: x, imageName: nginx}]
"#,
        ));
        let a = config_for(&app("a", &[], &[]), &us).unwrap().unwrap();
        assert_eq!(a.write_back.method, WriteBackMethod::Argocd);
        assert_eq!(a.write_back.branch.as_deref(), Some("main"));
        let b = config_for(&app("b", &[], &[]), &us).unwrap().unwrap();
        assert_eq!(
            b.write_back.method,
            WriteBackMethod::Git {
                credentials: Some("secret:argocd/creds".into())
            }
        );
        assert_eq!(b.write_back.branch.as_deref(), Some("release"));
        assert!(b
            .notes
            .iter()
            .any(|n| n.contains("pullRequest.labels are not applied")));
        assert!(b
            .notes
            .iter()
            .any(|n| n.contains("spec.writeBackConfig.gitConfig.repository")));
        let e = config_for(&app("c", &[], &[]), &us).unwrap_err();
        assert!(
            e.to_string()
                .contains("pull-request mode takes only the base branch"),
            "{e}"
        );
    }

    #[test]
    fn manifest_targets_and_verification_notes() {
        let us = updaters(&one(
            "{name: iu}",
            r#"
  imagesVerification: {cosignKey: {secretName: s, key: k}}
  applicationRefs:
  - namePattern: "*"
    images:
    - alias: spec
      imageName: nginx
      manifestTargets: {helm: {name: a, tag: b, spec: web.image}}
    - alias: plugin
      imageName: redis
      manifestTargets: {plugin: {name: IMAGE}}
      imagesVerification: {enabled: false}
"#,
        ));
        let c = config_for(&app("web", &[], &[]), &us).unwrap().unwrap();
        assert_eq!(c.images[0].helm, Some(HelmKeys::Spec("web.image".into())));
        assert_eq!(c.images[1].helm, None);
        let verif: Vec<&String> = c
            .notes
            .iter()
            .filter(|n| n.contains("imagesVerification"))
            .collect();
        assert_eq!(verif.len(), 1);
        assert!(verif[0].contains("images[0]"));
        // The verified image asks for the operator's keys; the opted-out one does not.
        assert_eq!(
            c.images[0].policy.verify,
            Some(imagebump_model::verify::VerifySpec::default())
        );
        assert_eq!(c.images[1].policy.verify, None);
        assert!(c.images.iter().any(|i| i.plugin
            == Some(HelmKeys::NameTag {
                name: "IMAGE".into(),
                tag: String::new()
            })));
        assert!(c
            .notes
            .iter()
            .any(|n| n.contains("name and tag are ignored because spec is set")));
    }

    #[test]
    fn find_image_updaters_errors() {
        let cases: &[(&str, &str)] = &[
            ("  applicationRefs: []\n", "spec.applicationRefs needs at least one entry"),
            ("  applicationRefs:\n  - namePattern: '[a'\n    useAnnotations: true\n", "namePattern \"[a\" is invalid"),
            ("  applicationRefs:\n  - namePattern: a\n", "either useAnnotations must be true"),
            ("  applicationRefs:\n  - namePattern: a\n    images: [{alias: -x, imageName: n}]\n", "alias \"-x\""),
            ("  applicationRefs:\n  - namePattern: a\n    images: [{alias: x, imageName: n}, {alias: x, imageName: m}]\n", "used twice"),
            ("  applicationRefs:\n  - {namePattern: a, useAnnotations: true}\n  - {namePattern: a, useAnnotations: true}\n", "used by an earlier ref"),
            ("  applicationRefs:\n  - namePattern: a\n    images: [{alias: x, imageName: n, manifestTargets: {helm: {}, kustomize: {name: n}}}]\n", "exactly one of helm"),
            ("  applicationRefs:\n  - namePattern: a\n    images: [{alias: x, imageName: n, manifestTargets: {plugin: {tag: T}}}]\n", "plugin needs spec or name"),
            ("  writeBackConfig: {method: kubectl}\n  applicationRefs:\n  - {namePattern: a, useAnnotations: true}\n", "writeBackConfig.method \"kubectl\""),
            ("  applicationRefs:\n  - {namePattern: a, useAnnotation: true}\n", "unknown field `useAnnotation`"),
            ("  commonUpdateSettings: {forceUpdate: yes please}\n  applicationRefs:\n  - {namePattern: a, useAnnotations: true}\n", "invalid type"),
        ];
        for (spec, want) in cases {
            let found = find_image_updaters("iu.yaml", &docs(&one("{name: iu}", spec)));
            let e = found[0].as_ref().unwrap_err();
            assert!(e.message.contains(want), "{spec}: {}", e.message);
            assert!(
                e.to_string()
                    .starts_with("iu.yaml (document 0): ImageUpdater iu"),
                "{e}"
            );
        }
        let none = find_image_updaters("x", &docs("kind: ImageUpdater\napiVersion: other/v1\n"));
        assert!(none.is_empty());
        let no_spec = find_image_updaters("x", &docs(&format!("{HEAD}metadata: {{name: n}}\n")));
        assert_eq!(
            no_spec[0].as_ref().unwrap_err().message,
            "ImageUpdater n has no spec"
        );
    }

    /// An invalid ImageUpdater is meant for the apps its patterns match; when a pattern
    /// cannot be read (invalid, missing, not a string), for every app of its namespace.
    #[test]
    fn what_an_invalid_image_updater_could_select() {
        let broken = |refs: &str| {
            let v = &docs(&format!(
                "{HEAD}metadata: {{name: b, namespace: argocd}}\nspec:\n{refs}"
            ))[0];
            BrokenUpdater::read("iu.yaml", 0, v, "invalid")
        };
        let in_ns = |name: &str, ns: &str| App {
            namespace: Some(ns.into()),
            ..app(name, &[], &[])
        };
        let selects = |b: &BrokenUpdater| -> Vec<bool> {
            [("web-1", "argocd"), ("api", "argocd"), ("web-1", "team")]
                .iter()
                .map(|(n, ns)| b.meant_for(&in_ns(n, ns)))
                .collect()
        };
        let valid = broken("  applicationRefs:\n  - namePattern: 'web-*'\n    bogus: 1\n");
        assert_eq!(selects(&valid), [true, false, false]);
        for refs in [
            "  applicationRefs:\n  - namePattern: 'web-*'\n  - namePattern: 'app-['\n",
            "  applicationRefs:\n  - namePattern: 'web-*'\n  - images: []\n",
            "  applicationRefs:\n  - namePattern: [web]\n",
            "  applicationRefs: web\n",
        ] {
            assert_eq!(selects(&broken(refs)), [true, true, false], "{refs}");
        }
    }

    #[test]
    fn spec_errors_name_the_field() {
        let img = ImageConfig {
            alias: "-x".into(),
            image_name: "nginx".into(),
            common_update_settings: None,
            manifest_targets: None,
            images_verification: None,
        };
        let e = check_image(&img, "ImageUpdater u: spec.applicationRefs[0].images[1]").unwrap_err();
        assert_eq!(
            e.to_string(),
            "ImageUpdater u: spec.applicationRefs[0].images[1].alias \"-x\": letters, digits, '-', '.', '_', starting with a letter or digit"
        );
        let blank = ImageConfig {
            alias: "x".into(),
            image_name: " ".into(),
            ..img
        };
        assert_eq!(
            check_image(&blank, "at").unwrap_err(),
            SpecError::NoImageName { at: "at".into() }
        );
    }

    #[test]
    fn parse_errors_are_typed_and_hint_at_the_edit() {
        let at = |text: &str| parse("f", 0, &docs(text)[0]).unwrap_err();
        let e = at(&one(
            "{name: u}",
            "  applicationRefs:\n  - namePattern: a\n",
        ));
        assert_eq!(
            e,
            Error::NothingToUpdate {
                at: "ImageUpdater u: spec.applicationRefs[0]".into()
            }
        );
        assert!(e.hint().is_some());
        let e = at(&format!("{HEAD}metadata: {{}}\nspec: {{}}\n"));
        assert_eq!(
            e,
            Error::Metadata(crate::app::Error::NoName {
                kind: "ImageUpdater"
            })
        );
        assert_eq!(e.to_string(), "ImageUpdater without metadata.name");
        assert_eq!(e.hint(), None);
        let e = at(&one("{name: u}", "  applicationRefs: []\n"));
        assert_eq!(
            e.to_string(),
            "ImageUpdater u: spec.applicationRefs needs at least one entry"
        );
    }
}
