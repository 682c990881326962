//! argocd-image-updater configuration written as annotations on an Application
//! (prefix `argocd-image-updater.argoproj.io/`), and the conversion of AIU's update
//! settings (shared with `ImageUpdater` resources) into imagebump policies.
//!
//! The rules follow AIU v1 (`pkg/argocd/annotations.go`, read through an `ImageUpdater`
//! with `useAnnotations: true`), which keeps the v0.x annotation names:
//!
//! - `image-list`: comma-separated `[alias=]image[:constraint]`. The alias is everything
//!   before the first `=`; the image is read by AIU's identifier rules (see
//!   `identifier.rs`: `localhost:5000/app:~1.2` is misread by AIU itself).
//! - Per-alias keys `<alias>.<setting>` exist only for images with an alias. A non-empty
//!   per-alias value wins over the app-wide key of the same setting, field by field.
//!   Empty values count as unset, except `force-update` (an empty value is an error, as in
//!   AIU) and `ignore-tags` (an empty value clears the app-wide list).
//! - `platforms` has no app-wide key; per-alias `helm.*` and `kustomize.image-name` say
//!   where the image is written.
//! - AIU v0.x replaced `/` in an alias with `_` in the keys; v1 uses the alias verbatim,
//!   and a key with a second `/` cannot exist on a Kubernetes object. imagebump reads the
//!   `_` form and says so in a note.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::app::App;
use super::glob::GoGlob;
use super::identifier;
use imagebump_model::platform::Platform;
use imagebump_model::policy::{PolicySpec, SemverMode, Strategy};
use imagebump_policy::constraint::{Constraint, ConstraintError};
use imagebump_policy::patterns::PatternError;

/// An AIU setting (annotation or `ImageUpdater` field, named by `key`) that AIU refuses or
/// that imagebump cannot follow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("{key}: no image name in {text:?}")]
    NoImageName { key: String, text: String },
    #[error("{key}: {text:?}: {reason}")]
    Constraint {
        key: String,
        text: String,
        reason: Box<ConstraintError>,
    },
    /// A constraint with a `/`, read by AIU as part of a registry host without a dot.
    #[error(
        "{key}: {text:?}: {reason}; AIU reads this as image {image:?} with constraint {constraint:?} \
         (a registry host without a dot is only recognised when the constraint looks like a tag, \
         e.g. 1.2.x; or write the host as 127.0.0.1:<port>)"
    )]
    MisreadConstraint {
        key: String,
        text: String,
        reason: Box<ConstraintError>,
        image: String,
        constraint: String,
    },
    #[error("{key}: {reason}")]
    Platform { key: String, reason: String },
    #[error(
        "{key}: unknown git credentials {credentials:?}: expected repocreds or secret:<namespace>/<name>"
    )]
    Credentials { key: String, credentials: String },
    #[error(
        "{key}: {value:?} is not a write-back method: expected argocd, git or git:<credentials>"
    )]
    Method { key: String, value: String },
    #[error("{key}: {value:?} is not a branch: expected <branch> or <base>:<write-branch>")]
    Branch { key: String, value: String },
    #[error("{key}: {value:?}: expected kustomization or kustomization:<directory>")]
    KustomizationTarget { key: String, value: String },
    #[error("{key}: {value:?}: helmvalues: needs a file name")]
    HelmValuesFile { key: String, value: String },
    #[error("{key}: {value:?}: expected helmvalues or helmvalues:<file>")]
    HelmValuesTarget { key: String, value: String },
    #[error(
        "{key}: {value:?} is a kustomization file: writing overrides to it would discard its content; use kustomization:<directory>"
    )]
    KustomizationFile { key: String, value: String },
    #[error("{key}: empty image name in {entry:?}")]
    EmptyImage { key: String, entry: String },
    /// `nginx:>=1.2`: the first `=` ends the alias.
    #[error(
        "{key}: in {entry:?}, AIU takes everything before the first = as the alias \
         ({alias:?}) and {image:?} as the image; give the image an alias, e.g. app={entry}"
    )]
    AliasMisread {
        key: String,
        entry: String,
        alias: String,
        image: String,
    },
    #[error("{key} is empty")]
    EmptyList { key: String },
    #[error("{key}: {value:?} is not a boolean (true or false)")]
    NotABool { key: String, value: String },
    /// `keys` is `<prefix><alias>.*`.
    #[error(
        "{keys}: both helm and kustomize targets are set for alias {alias:?}; AIU refuses the app"
    )]
    BothTargets { keys: String, alias: String },
}

impl Error {
    /// The edit that makes AIU and imagebump read the setting, where there is one.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Error::MisreadConstraint { .. } => {
                Some("write the registry host with a dot or as 127.0.0.1:<port>")
            }
            Error::AliasMisread { .. } => Some("give the image an alias: <alias>=<image>"),
            Error::KustomizationFile { .. } => Some("use kustomization:<directory>"),
            Error::BothTargets { .. } => {
                Some("keep either the helm.* or the kustomize.image-name annotation of the alias")
            }
            _ => None,
        }
    }
}

/// The annotation prefix, with its `/`.
pub const PREFIX: &str = "argocd-image-updater.argoproj.io/";
/// AIU's Helm key for the image name when only the tag key (or neither) is configured.
pub const DEFAULT_HELM_IMAGE_NAME: &str = "image.name";
/// AIU's Helm key for the tag when only the name key (or neither) is configured.
pub const DEFAULT_HELM_IMAGE_TAG: &str = "image.tag";
/// An `allowTags` filter that matches no tag: AIU's `MatchFuncNone`.
pub const MATCH_NOTHING: &str = r"regexp:[^\x00-\x{10FFFF}]";

/// The AIU configuration of one Application.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdaterConfig {
    pub images: Vec<UpdaterImage>,
    pub write_back: WriteBack,
    /// Settings imagebump cannot honour the way AIU does, one sentence each, for reports.
    pub notes: Vec<String>,
    /// `annotations`, `ImageUpdater <ns>/<name>`, or `ImageUpdater <ns>/<name> (annotations)`
    /// for a `useAnnotations` match.
    pub origin: String,
}

/// One image AIU manages.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdaterImage {
    pub alias: Option<String>,
    /// The image as written, without the constraint (and without a digest).
    pub name: String,
    /// The text after the name as AIU reads it (its "tag"): a Masterminds constraint for
    /// `semver` (also in `policy.constraint`), the tag to follow for `digest`, ignored by
    /// AIU for `alphabetical` and `newest-build`.
    pub constraint: Option<String>,
    /// strategy, semver_mode (Masterminds for semver), constraint, allow_tags, ignore_tags,
    /// platforms.
    pub policy: PolicySpec,
    pub force_update: bool,
    /// The pull secret argocd-image-updater would read, as written: a name for the
    /// operator's `credentials.pullSecrets`, never a source itself.
    pub pull_secret: Option<PullSecretName>,
    /// Only when configured (`helm.image-*` annotations or `manifestTargets.helm`); AIU
    /// uses [`HelmKeys::default`] otherwise.
    pub helm: Option<HelmKeys>,
    pub kustomize_name: Option<String>,
    /// `manifestTargets.plugin`: the environment variables of a plugin source that hold the
    /// image (`NameTag`: repository and tag in two variables; `Spec`: `repo:tag` in one).
    pub plugin: Option<HelmKeys>,
}

/// The Helm keys AIU writes an image to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelmKeys {
    /// Repository in `name`, tag (`tag` or `tag@digest`) in `tag`.
    NameTag { name: String, tag: String },
    /// The whole `repo:tag` in one key.
    Spec(String),
}

impl Default for HelmKeys {
    /// `image.name` / `image.tag` (AIU's `common.DefaultHelmImageName`/`...Tag`).
    fn default() -> Self {
        HelmKeys::NameTag {
            name: DEFAULT_HELM_IMAGE_NAME.to_string(),
            tag: DEFAULT_HELM_IMAGE_TAG.to_string(),
        }
    }
}

/// Where and how AIU writes updates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteBack {
    pub method: WriteBackMethod,
    pub target: WriteBackTarget,
    /// The base branch (`git-branch`, before any `:`); `None`: the source's
    /// targetRevision.
    pub branch: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteBackMethod {
    /// Change the Application in the cluster (AIU's default).
    Argocd,
    /// Commit to git; `credentials` is the part after `git:` (`repocreds`,
    /// `secret:<ns>/<name>`).
    Git { credentials: Option<String> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteBackTarget {
    /// `.argocd-source-<app>.yaml` in the source path.
    Override,
    /// `kustomization[:<dir>]`: the kustomization in the source path or in `<dir>`.
    Kustomization(Option<String>),
    /// `helmvalues[:<file>]`: `values.yaml` in the source path, or `<file>`.
    HelmValues(Option<String>),
}

/// A pull secret named by argocd-image-updater settings: the exact value and the key that
/// set it (`argocd-image-updater.argoproj.io/web.pull-secret`, `spec.images[0].pullSecret`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullSecretName {
    pub value: String,
    pub key: String,
}

/// AIU's `CommonUpdateSettings`, at any level (app-wide or per-alias annotations,
/// `ImageUpdater` spec, applicationRef or image).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateSettings {
    pub update_strategy: Option<String>,
    pub force_update: Option<bool>,
    pub allow_tags: Option<String>,
    pub ignore_tags: Option<Vec<String>>,
    pub pull_secret: Option<String>,
    pub platforms: Option<Vec<String>>,
}

/// One setting of [`UpdateSettings`], to name it in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    UpdateStrategy,
    ForceUpdate,
    AllowTags,
    IgnoreTags,
    PullSecret,
    Platforms,
}

impl Field {
    fn annotation(self) -> &'static str {
        match self {
            Field::UpdateStrategy => "update-strategy",
            Field::ForceUpdate => "force-update",
            Field::AllowTags => "allow-tags",
            Field::IgnoreTags => "ignore-tags",
            Field::PullSecret => "pull-secret",
            Field::Platforms => "platforms",
        }
    }

    fn camel(self) -> &'static str {
        match self {
            Field::UpdateStrategy => "updateStrategy",
            Field::ForceUpdate => "forceUpdate",
            Field::AllowTags => "allowTags",
            Field::IgnoreTags => "ignoreTags",
            Field::PullSecret => "pullSecret",
            Field::Platforms => "platforms",
        }
    }
}

/// How the settings of one level are named in messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Namer {
    /// Annotation keys, app-wide (`None`) or for an alias (already `_`-normalised).
    Annotation(Option<String>),
    /// A field path prefix such as `ImageUpdater argocd/x: spec.commonUpdateSettings`.
    Path(String),
}

impl Namer {
    fn name(&self, field: Field) -> String {
        match self {
            Namer::Annotation(None) => format!("{PREFIX}{}", field.annotation()),
            Namer::Annotation(Some(alias)) => format!("{PREFIX}{alias}.{}", field.annotation()),
            Namer::Path(prefix) => format!("{prefix}.{}", field.camel()),
        }
    }
}

/// One level of settings; levels are given least specific first.
#[derive(Debug, Clone)]
pub(crate) struct Layer<'a> {
    pub settings: &'a UpdateSettings,
    pub namer: Namer,
}

/// Everything needed to build one [`UpdaterImage`].
#[derive(Debug, Clone)]
pub(crate) struct ImageInput<'a> {
    pub alias: Option<String>,
    /// `image[:constraint]` as written (after the alias).
    pub text: &'a str,
    /// Where `text` is written, for messages.
    pub text_key: String,
    pub layers: Vec<Layer<'a>>,
    pub helm: Option<HelmKeys>,
    pub kustomize_name: Option<String>,
    pub plugin: Option<HelmKeys>,
}

/// The most specific level that sets a field, with the field's name at that level.
fn pick<'a, T>(
    layers: &'a [Layer<'a>],
    field: Field,
    get: impl Fn(&'a UpdateSettings) -> Option<&'a T>,
) -> Option<(&'a T, String)> {
    layers
        .iter()
        .rev()
        .find_map(|l| get(l.settings).map(|v| (v, l.namer.name(field))))
}

/// Build one image: AIU's settings mapped to an imagebump policy; what cannot be honoured
/// the same way goes to `notes`.
pub(crate) fn build_image(
    input: ImageInput<'_>,
    notes: &mut Vec<String>,
) -> Result<UpdaterImage, Error> {
    let id = identifier::parse(input.text);
    if id.name.is_empty() {
        return Err(Error::NoImageName {
            key: input.text_key.clone(),
            text: input.text.to_string(),
        });
    }
    let label = match &input.alias {
        Some(a) => format!("image {a} ({})", id.name),
        None => format!("image {}", id.name),
    };
    let layers = &input.layers;
    let mut policy = PolicySpec::default();
    let strategy = pick_strategy(layers, &label, notes);
    policy.strategy = Some(strategy);
    policy.constraint = constraint_of(strategy, &id, &input, &label, notes)?;
    if strategy == Strategy::Semver {
        policy.semver_mode = Some(SemverMode::Masterminds);
    }
    tag_filters(layers, &label, &mut policy, notes)?;
    let force_update = match pick(layers, Field::ForceUpdate, |s| s.force_update.as_ref()) {
        Some((&true, key)) => {
            notes.push(format!(
                "{label}: {key} is true: AIU then also updates images that are not running; imagebump reads the current version from git and considers every listed image anyway"
            ));
            true
        }
        _ => false,
    };
    // Only a name: the operator's `credentials.pullSecrets` says what it stands for, if
    // anything (discovery looks it up). The repository never writes a source itself.
    let pull_secret =
        pick(layers, Field::PullSecret, |s| s.pull_secret.as_ref()).map(|(v, key)| {
            PullSecretName {
                value: v.clone(),
                key,
            }
        });
    Ok(UpdaterImage {
        alias: input.alias,
        name: id.name,
        constraint: id.tag,
        policy,
        force_update,
        pull_secret,
        helm: input.helm,
        kustomize_name: input.kustomize_name,
        plugin: input.plugin,
    })
}

/// The most specific `update-strategy`; an unknown one is semver, as in AIU (noted).
fn pick_strategy(layers: &[Layer<'_>], label: &str, notes: &mut Vec<String>) -> Strategy {
    match pick(layers, Field::UpdateStrategy, |s| s.update_strategy.as_ref()) {
        None => Strategy::Semver,
        Some((text, key)) => parse_strategy(text).unwrap_or_else(|| {
            notes.push(format!(
                "{label}: {key} = {text:?} is not a strategy AIU knows; AIU falls back to semver, and so does imagebump"
            ));
            Strategy::Semver
        }),
    }
}

/// The constraint written after the image name, when `strategy` reads one (semver); what
/// the other strategies do with it goes to `notes`.
fn constraint_of(
    strategy: Strategy,
    id: &identifier::Identifier,
    input: &ImageInput<'_>,
    label: &str,
    notes: &mut Vec<String>,
) -> Result<Option<String>, Error> {
    match (strategy, &id.tag) {
        (Strategy::Semver, Some(c)) => {
            Constraint::parse(c).map_err(|reason| {
                let reason = Box::new(reason);
                let (key, text) = (input.text_key.clone(), input.text.to_string());
                if id.legacy && c.contains('/') {
                    Error::MisreadConstraint {
                        key,
                        text,
                        reason,
                        image: id.name.clone(),
                        constraint: c.clone(),
                    }
                } else {
                    Error::Constraint { key, text, reason }
                }
            })?;
            return Ok(Some(c.clone()));
        }
        (Strategy::Digest, None) => notes.push(format!(
            "{label}: the digest strategy without a tag to follow ({}) never updates in AIU; imagebump follows the tag written in git",
            input.text_key
        )),
        (Strategy::Digest, Some(_)) | (Strategy::Semver, None) => {}
        (other, Some(c)) => notes.push(format!(
            "{label}: the constraint {c:?} is ignored under {other} (by AIU and by imagebump)"
        )),
        (_, None) => {}
    }
    Ok(None)
}

/// `allow-tags`, `ignore-tags` and `platforms` from the most specific level setting each.
fn tag_filters(
    layers: &[Layer<'_>],
    label: &str,
    policy: &mut PolicySpec,
    notes: &mut Vec<String>,
) -> Result<(), Error> {
    if let Some((text, key)) = pick(layers, Field::AllowTags, |s| s.allow_tags.as_ref()) {
        policy.allow_tags = allow_tags(text, &key, label, notes);
    }
    if let Some((globs, key)) = pick(layers, Field::IgnoreTags, |s| s.ignore_tags.as_ref()) {
        policy.ignore_tags = Some(ignore_tags(globs, &key, label, notes));
    }
    if let Some((platforms, key)) = pick(layers, Field::Platforms, |s| s.platforms.as_ref()) {
        let platforms: Vec<String> = platforms.iter().map(|p| p.trim().to_string()).collect();
        for p in &platforms {
            p.parse::<Platform>().map_err(|reason| Error::Platform {
                key: key.clone(),
                reason,
            })?;
        }
        if !platforms.is_empty() {
            policy.platforms = Some(platforms);
        }
    }
    Ok(())
}

/// AIU's `ParseUpdateStrategy`, without its fallback (`None` for an unknown name).
fn parse_strategy(text: &str) -> Option<Strategy> {
    match text.to_lowercase().as_str() {
        "semver" => Some(Strategy::Semver),
        "latest" | "newest-build" => Some(Strategy::NewestBuild),
        "name" | "alphabetical" => Some(Strategy::Alphabetical),
        "digest" => Some(Strategy::Digest),
        _ => None,
    }
}

/// AIU's `ParseMatch`: empty is any tag, `any` (any case) too, `regexp:<RE>` (prefix in
/// any case) an unanchored regular expression; everything else matches no tag at all.
fn allow_tags(text: &str, key: &str, label: &str, notes: &mut Vec<String>) -> Option<String> {
    if text.is_empty() {
        return None;
    }
    if text.eq_ignore_ascii_case("any") {
        return Some("any".into());
    }
    let why = match text.split_once(':') {
        Some((f, re)) if f.eq_ignore_ascii_case("regexp") => {
            match imagebump_policy::patterns::compile(re) {
                Err(PatternError::Invalid { message, .. }) => {
                    format!("the regular expression does not compile ({message})")
                }
                // AIU would compile it: too big for imagebump is the policy's error, at its
                // place, when the policy is compiled.
                Ok(_) | Err(PatternError::TooBig { .. } | PatternError::OverBudget { .. }) => {
                    return Some(format!("regexp:{re}"))
                }
            }
        }
        Some((f, _)) => format!("{f:?} is not a match function (only regexp: and any)"),
        None => "it is neither regexp:<RE> nor any".to_string(),
    };
    notes.push(format!(
        "{label}: {key} = {text:?} matches no tag in AIU ({why}), so the image is never updated; imagebump does the same"
    ));
    Some(MATCH_NOTHING.into())
}

/// ignore-tags globs as imagebump can use them. AIU matches them with Go's
/// `filepath.Match`: an invalid pattern never matches (dropped here); empty ones cannot
/// match a tag (dropped).
fn ignore_tags(globs: &[String], key: &str, label: &str, notes: &mut Vec<String>) -> Vec<String> {
    let mut kept = Vec::new();
    for g in globs.iter().filter(|g| !g.is_empty()) {
        if let Err(e) = GoGlob::new(g) {
            notes.push(format!(
                "{label}: {key}: the pattern {g:?} is invalid in AIU ({e}) and never matches; left out"
            ));
            continue;
        }
        if let Err(e) = globset::Glob::new(g) {
            notes.push(format!(
                "{label}: {key}: the pattern {g:?} cannot be used by imagebump ({e}); left out"
            ));
            continue;
        }
        if g.contains(['{', '}']) || g.contains("[!") {
            notes.push(format!(
                "{label}: {key}: in {g:?}, AIU reads {{, }} and [! literally; imagebump reads them as alternatives and negation"
            ));
        }
        kept.push(g.clone());
    }
    kept
}

/// A value with the name of the key or field it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Named<'a> {
    pub value: &'a str,
    pub key: String,
}

/// The write-back settings, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WriteBackInput<'a> {
    pub method: Option<Named<'a>>,
    pub target: Option<Named<'a>>,
    pub branch: Option<Named<'a>>,
    pub repository: Option<Named<'a>>,
}

/// AIU's `newWBCFromSettings` and `parseGitConfig`, as far as they concern git.
pub(crate) fn parse_write_back(
    input: &WriteBackInput<'_>,
    notes: &mut Vec<String>,
) -> Result<WriteBack, Error> {
    let method = parse_method(input, notes)?;
    let target = match &input.target {
        None => WriteBackTarget::Override,
        Some(t) => parse_target(t, notes)?,
    };
    let branch = match &input.branch {
        None => None,
        Some(b) => parse_branch(b, notes)?,
    };
    if let Some(r) = &input.repository {
        notes.push(format!(
            "{} = {:?} is not used: imagebump writes to the repository it scanned",
            r.key, r.value
        ));
    }
    Ok(WriteBack {
        method,
        target,
        branch,
    })
}

/// The write-back method (`argocd`, AIU's default, `git` or `git:<credentials>`).
fn parse_method(
    input: &WriteBackInput<'_>,
    notes: &mut Vec<String>,
) -> Result<WriteBackMethod, Error> {
    let method = match &input.method {
        None => None,
        Some(m) => Some((m, m.value.trim())).filter(|(_, v)| !v.is_empty()),
    };
    Ok(match method {
        None | Some((_, "argocd")) => {
            let how = match method {
                Some((m, _)) => format!("{} is argocd", m.key),
                None => "the write-back method is argocd (AIU's default)".to_string(),
            };
            notes.push(format!(
                "{how}: AIU would change the Application in the cluster; imagebump writes git through a pull request"
            ));
            if let Some(t) = &input.target {
                notes.push(format!(
                    "{} is ignored by AIU unless the write-back method is git; imagebump uses it",
                    t.key
                ));
            }
            WriteBackMethod::Argocd
        }
        Some((_, "git")) => WriteBackMethod::Git { credentials: None },
        Some((m, v)) => match v.split_once(':') {
            Some(("git", creds)) if creds == "repocreds" || creds.starts_with("secret:") => {
                notes.push(format!(
                    "{}: the git credentials {creds:?} are not used: imagebump pushes with its own forge token",
                    m.key
                ));
                WriteBackMethod::Git {
                    credentials: Some(creds.to_string()),
                }
            }
            Some(("git", creds)) => {
                return Err(Error::Credentials {
                    key: m.key.clone(),
                    credentials: creds.to_string(),
                })
            }
            _ => {
                return Err(Error::Method {
                    key: m.key.clone(),
                    value: v.to_string(),
                })
            }
        },
    })
}

/// The base branch of `write-back-branch` (`<base>` or `<base>:<write-branch>`); empty is
/// none.
fn parse_branch(b: &Named<'_>, notes: &mut Vec<String>) -> Result<Option<String>, Error> {
    let parts: Vec<&str> = b.value.trim().split(':').collect();
    let base = match parts.as_slice() {
        [base] => base.to_string(),
        [base, template] => {
            notes.push(format!(
                "{}: the write-branch template {template:?} is not used: imagebump names its own pull-request branches",
                b.key
            ));
            base.to_string()
        }
        _ => {
            return Err(Error::Branch {
                key: b.key.clone(),
                value: b.value.to_string(),
            })
        }
    };
    Ok(Some(base).filter(|b| !b.is_empty()))
}

/// `write-back-target`: `kustomization[:<dir>]`, `helmvalues[:<file>]`, or a bare path.
fn parse_target(t: &Named<'_>, notes: &mut Vec<String>) -> Result<WriteBackTarget, Error> {
    let v = t.value.trim();
    let rest = |prefix: &str| v.strip_prefix(prefix).map(|r| r.strip_prefix(':').ok_or(r));
    match rest("kustomization") {
        Some(Ok("")) | Some(Err("")) => return Ok(WriteBackTarget::Kustomization(None)),
        Some(Ok(dir)) => return Ok(WriteBackTarget::Kustomization(Some(dir.to_string()))),
        Some(Err(_)) => {
            return Err(Error::KustomizationTarget {
                key: t.key.clone(),
                value: v.to_string(),
            })
        }
        None => {}
    }
    match rest("helmvalues") {
        Some(Err("")) => return Ok(WriteBackTarget::HelmValues(None)),
        Some(Ok("")) => {
            return Err(Error::HelmValuesFile {
                key: t.key.clone(),
                value: v.to_string(),
            })
        }
        Some(Ok(file)) => return Ok(WriteBackTarget::HelmValues(Some(file.to_string()))),
        Some(Err(_)) => {
            return Err(Error::HelmValuesTarget {
                key: t.key.clone(),
                value: v.to_string(),
            })
        }
        None => {}
    }
    // A bare path, which AIU takes from the repository root.
    let base = v.rsplit('/').next().unwrap_or(v);
    if matches!(
        base,
        "kustomization.yaml" | "kustomization.yml" | "Kustomization"
    ) {
        return Err(Error::KustomizationFile {
            key: t.key.clone(),
            value: v.to_string(),
        });
    }
    if (v.ends_with(".yaml") || v.ends_with(".yml")) && !base.starts_with(".argocd-source-") {
        let file = format!("/{}", v.trim_start_matches('/'));
        notes.push(format!(
            "{}: AIU writes Helm values to the bare target {v:?} (from the repository root); read as helmvalues:{file}",
            t.key
        ));
        return Ok(WriteBackTarget::HelmValues(Some(file)));
    }
    notes.push(format!(
        "{}: AIU writes its override file to {v:?} (from the repository root); Argo CD reads overrides only as .argocd-source-<app>.yaml in the source path, which is what imagebump writes",
        t.key
    ));
    Ok(WriteBackTarget::Override)
}

fn key(suffix: &str) -> String {
    format!("{PREFIX}{suffix}")
}

/// Per-alias setting keys (after the alias and a `.`).
const ALIAS_KEYS: [&str; 10] = [
    "update-strategy",
    "allow-tags",
    "ignore-tags",
    "force-update",
    "pull-secret",
    "platforms",
    "helm.image-name",
    "helm.image-tag",
    "helm.image-spec",
    "kustomize.image-name",
];

/// App-level keys.
const APP_KEYS: [&str; 10] = [
    "image-list",
    "update-strategy",
    "allow-tags",
    "ignore-tags",
    "force-update",
    "pull-secret",
    "write-back-method",
    "write-back-target",
    "git-branch",
    "git-repository",
];

/// Configuration from the argocd-image-updater annotations of `app`; `Ok(None)` when it has
/// no `image-list` annotation. `Err` names the annotation at fault.
pub fn from_annotations(app: &App) -> Result<Option<UpdaterConfig>, Error> {
    let ann = &app.annotations;
    let list_key = key("image-list");
    let Some(list) = ann.get(&list_key) else {
        return Ok(None);
    };
    let mut notes = Vec::new();
    let entries = parse_image_list(list, &list_key)?;
    let app_wide = read_settings(app, None)?;
    let mut known: BTreeSet<String> = APP_KEYS.iter().map(|k| key(k)).collect();
    let mut images = Vec::new();
    for (alias, text) in &entries {
        let image = ImageEntry {
            alias: alias.as_ref(),
            text,
            list_key: &list_key,
        };
        images.push(annotated_image(
            app, &app_wide, image, &mut known, &mut notes,
        )?);
    }
    let named = |suffix: &str| {
        let k = key(suffix);
        ann.get(&k)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
            .map(|value| Named { value, key: k })
    };
    let write_back = parse_write_back(
        &WriteBackInput {
            method: named("write-back-method"),
            target: named("write-back-target"),
            branch: named("git-branch"),
            repository: named("git-repository"),
        },
        &mut notes,
    )?;
    note_unknown_keys(ann, &known, &mut notes);
    Ok(Some(UpdaterConfig {
        images,
        write_back,
        notes,
        origin: "annotations".into(),
    }))
}

/// One entry of `image-list`: its alias, `image[:constraint]` and the list's key.
struct ImageEntry<'a> {
    alias: Option<&'a String>,
    text: &'a str,
    list_key: &'a str,
}

/// One image of the list with its settings (app-wide, then its alias's), adding the keys it
/// reads to `known`.
fn annotated_image(
    app: &App,
    app_wide: &UpdateSettings,
    entry: ImageEntry<'_>,
    known: &mut BTreeSet<String>,
    notes: &mut Vec<String>,
) -> Result<UpdaterImage, Error> {
    let key_alias = entry.alias.map(|a| a.replace('/', "_"));
    let mut layers = vec![Layer {
        settings: app_wide,
        namer: Namer::Annotation(None),
    }];
    let per_alias;
    let (mut helm, mut kustomize_name) = (None, None);
    if let (Some(alias), Some(ka)) = (entry.alias, &key_alias) {
        if alias.contains('/') {
            notes.push(format!(
                "alias {alias:?}: its settings are read from {PREFIX}{ka}.* (AIU v0.x); AIU v1 reads no per-alias settings for an alias with a /"
            ));
        }
        known.extend(ALIAS_KEYS.iter().map(|s| key(&format!("{ka}.{s}"))));
        per_alias = read_settings(app, Some(ka))?;
        layers.push(Layer {
            settings: &per_alias,
            namer: Namer::Annotation(Some(ka.clone())),
        });
        (helm, kustomize_name) = manifest_target(app, alias, ka, notes)?;
    }
    build_image(
        ImageInput {
            alias: entry.alias.cloned(),
            text: entry.text,
            text_key: entry.list_key.to_string(),
            layers,
            helm,
            kustomize_name,
            plugin: None,
        },
        notes,
    )
}

/// A note for every annotation under AIU's prefix that no image or setting reads.
fn note_unknown_keys(
    ann: &BTreeMap<String, String>,
    known: &BTreeSet<String>,
    notes: &mut Vec<String>,
) {
    for (k, suffix) in ann
        .keys()
        .filter(|k| !known.contains(*k))
        .filter_map(|k| Some((k, k.strip_prefix(PREFIX)?)))
    {
        notes.push(if suffix == "platforms" {
            format!("{k} is not read: AIU has platforms only per alias (<alias>.platforms)")
        } else if suffix.ends_with(".tag-match") {
            format!("{k} is not read: AIU v1 dropped tag-match; use <alias>.allow-tags")
        } else {
            format!("{k} is not an argocd-image-updater setting (or its alias is not in image-list); ignored")
        });
    }
}

/// `image-list`: `(alias, image[:constraint])` per non-empty entry.
fn parse_image_list(value: &str, list_key: &str) -> Result<Vec<(Option<String>, String)>, Error> {
    let mut entries = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        match entry.split_once('=') {
            Some((alias, image)) => {
                let (alias, image) = (alias.trim(), image.trim());
                if image.is_empty() {
                    return Err(Error::EmptyImage {
                        key: list_key.to_string(),
                        entry: entry.to_string(),
                    });
                }
                // `nginx:>=1.2` has an `=`: AIU takes `nginx:>` as the alias.
                if alias.contains([':', '<', '>', '!', '~', '^', ' ']) {
                    return Err(Error::AliasMisread {
                        key: list_key.to_string(),
                        entry: entry.to_string(),
                        alias: alias.to_string(),
                        image: image.to_string(),
                    });
                }
                entries.push((
                    (!alias.is_empty()).then(|| alias.to_string()),
                    image.to_string(),
                ));
            }
            None => entries.push((None, entry.to_string())),
        }
    }
    if entries.is_empty() {
        return Err(Error::EmptyList {
            key: list_key.to_string(),
        });
    }
    Ok(entries)
}

/// AIU's `getCommonUpdateSettingsFromAnnotations` for the app-wide keys (`None`) or one
/// alias.
fn read_settings(app: &App, alias: Option<&str>) -> Result<UpdateSettings, Error> {
    let namer = Namer::Annotation(alias.map(str::to_string));
    let get = |f: Field| {
        let k = namer.name(f);
        app.annotations.get(&k).map(|v| (v.trim(), k))
    };
    let text = |f: Field| get(f).map(|(v, _)| v.to_string()).filter(|v| !v.is_empty());
    let force_update = match get(Field::ForceUpdate) {
        None => None,
        Some((v, k)) => Some(parse_go_bool(v).ok_or_else(|| Error::NotABool {
            key: k,
            value: v.to_string(),
        })?),
    };
    let list = |f: Field, keep_empty: bool| {
        get(f).map(|(v, _)| {
            v.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| keep_empty || !s.is_empty())
                .collect::<Vec<_>>()
        })
    };
    Ok(UpdateSettings {
        update_strategy: text(Field::UpdateStrategy),
        force_update,
        allow_tags: text(Field::AllowTags),
        ignore_tags: list(Field::IgnoreTags, true),
        pull_secret: text(Field::PullSecret),
        platforms: alias
            .and_then(|_| list(Field::Platforms, false))
            .filter(|p| !p.is_empty()),
    })
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The `helm.*` and `kustomize.image-name` annotations of one alias.
fn manifest_target(
    app: &App,
    alias: &str,
    key_alias: &str,
    notes: &mut Vec<String>,
) -> Result<(Option<HelmKeys>, Option<String>), Error> {
    let get = |s: &str| {
        app.annotations
            .get(&key(&format!("{key_alias}.{s}")))
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let (name, tag, spec) = (
        get("helm.image-name"),
        get("helm.image-tag"),
        get("helm.image-spec"),
    );
    let kustomize = get("kustomize.image-name");
    let helm = match spec {
        Some(spec) => {
            if name.is_some() || tag.is_some() {
                notes.push(format!(
                    "alias {alias}: helm.image-name and helm.image-tag are ignored because helm.image-spec is set (as in AIU)"
                ));
            }
            Some(HelmKeys::Spec(spec))
        }
        None if name.is_some() || tag.is_some() => Some(HelmKeys::NameTag {
            name: name.unwrap_or_else(|| DEFAULT_HELM_IMAGE_NAME.into()),
            tag: tag.unwrap_or_else(|| DEFAULT_HELM_IMAGE_TAG.into()),
        }),
        None => None,
    };
    if helm.is_some() && kustomize.is_some() {
        return Err(Error::BothTargets {
            keys: format!("{PREFIX}{key_alias}.*"),
            alias: alias.to_string(),
        });
    }
    Ok((helm, kustomize))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use imagebump_policy::filters::AllowTags;

    fn app(ann: &[(&str, &str)]) -> App {
        App {
            file: "apps/web.yaml".into(),
            doc: 0,
            name: "web".into(),
            namespace: Some("argocd".into()),
            labels: BTreeMap::new(),
            annotations: ann
                .iter()
                .map(|(k, v)| {
                    let k = if k.contains('/') {
                        k.to_string()
                    } else {
                        key(k)
                    };
                    (k, v.to_string())
                })
                .collect(),
            sources: vec![],
        }
    }

    fn config(ann: &[(&str, &str)]) -> UpdaterConfig {
        from_annotations(&app(ann)).unwrap().unwrap()
    }

    fn err(ann: &[(&str, &str)]) -> String {
        from_annotations(&app(ann)).unwrap_err().to_string()
    }

    #[test]
    fn match_nothing_compiles_and_matches_nothing() {
        let a = AllowTags::parse(MATCH_NOTHING).unwrap().unwrap();
        for t in ["", "latest", "1.0", "v1.2.3-rc.1", "\u{10FFFF}"] {
            assert!(!a.allows(t), "{t}");
        }
    }

    #[test]
    fn no_image_list_is_none() {
        assert_eq!(
            from_annotations(&app(&[("update-strategy", "latest")])),
            Ok(None)
        );
    }

    #[test]
    fn image_list_aliases_and_constraints() {
        let c = config(&[(
            "image-list",
            " web=nginx:1.x , redis:~7.2,=busybox , ghcr.io/org/app:^1.0,localhost:5000/app:1.x, quay.io/a/b ",
        )]);
        let got: Vec<(Option<&str>, &str, Option<&str>)> = c
            .images
            .iter()
            .map(|i| {
                (
                    i.alias.as_deref(),
                    i.name.as_str(),
                    i.policy.constraint.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (Some("web"), "nginx", Some("1.x")),
                (None, "redis", Some("~7.2")),
                (None, "busybox", None),
                (None, "ghcr.io/org/app", Some("^1.0")),
                (None, "localhost:5000/app", Some("1.x")),
                (None, "quay.io/a/b", None),
            ]
        );
        let web = &c.images[0];
        assert_eq!(web.constraint.as_deref(), Some("1.x"));
        assert_eq!(web.policy.strategy, Some(Strategy::Semver));
        assert_eq!(web.policy.semver_mode, Some(SemverMode::Masterminds));
        assert_eq!(web.helm, None);
        assert_eq!(web.kustomize_name, None);
        assert!(!web.force_update);
        assert_eq!(c.origin, "annotations");
    }

    #[test]
    fn errors_are_typed_and_hint_at_the_edit() {
        let e = from_annotations(&app(&[("image-list", "localhost:5000/app:~1.2")])).unwrap_err();
        assert!(matches!(e, Error::MisreadConstraint { ref image, .. } if image == "localhost"));
        assert!(e.to_string().ends_with(
            "(a registry host without a dot is only recognised when the constraint looks like a tag, e.g. 1.2.x; or write the host as 127.0.0.1:<port>)"
        ), "{e}");
        assert!(e.hint().is_some());
        let e = from_annotations(&app(&[("image-list", " , ")])).unwrap_err();
        assert_eq!(
            e,
            Error::EmptyList {
                key: format!("{PREFIX}image-list")
            }
        );
        assert_eq!(e.hint(), None);
    }

    #[test]
    fn image_list_errors() {
        assert_eq!(
            err(&[("image-list", " , ")]),
            "argocd-image-updater.argoproj.io/image-list is empty"
        );
        assert_eq!(
            err(&[("image-list", "web=")]),
            "argocd-image-updater.argoproj.io/image-list: empty image name in \"web=\""
        );
        let e = err(&[("image-list", "localhost:5000/app:~1.2")]);
        assert!(e.starts_with("argocd-image-updater.argoproj.io/image-list: \"localhost:5000/app:~1.2\": invalid constraint \"5000/app:~1.2\""), "{e}");
        assert!(e.contains("AIU reads this as image \"localhost\""), "{e}");
        let e = err(&[("image-list", "web=nginx:>=1.0 <<2")]);
        assert!(e.contains("invalid constraint"), "{e}");
        // A constraint with `=` needs an alias: AIU splits at the first `=`.
        assert_eq!(
            err(&[("image-list", "nginx:>=1.0")]),
            format!("{PREFIX}image-list: in \"nginx:>=1.0\", AIU takes everything before the first = as the alias (\"nginx:>\") and \"1.0\" as the image; give the image an alias, e.g. app=nginx:>=1.0")
        );
        let c = config(&[("image-list", "web=nginx:>=1.0 <2.0 || 3.x")]);
        assert_eq!(
            c.images[0].policy.constraint.as_deref(),
            Some(">=1.0 <2.0 || 3.x")
        );
    }

    #[test]
    fn per_alias_settings_win_over_app_wide_field_by_field() {
        let c = config(&[
            ("image-list", "web=nginx, api=org/api, plain=redis"),
            ("update-strategy", "newest-build"),
            ("allow-tags", "regexp:^v"),
            ("ignore-tags", "latest, *-rc*"),
            ("pull-secret", "pullsecret:argocd/regcred"),
            ("web.update-strategy", "digest"),
            ("web.ignore-tags", ""),
            ("api.allow-tags", "  "),
            ("api.platforms", "linux/amd64, ,linux/arm64/v8"),
            ("api.pull-secret", "env:CREDS"),
        ]);
        let [web, api, plain] = &c.images[..] else {
            panic!()
        };
        assert_eq!(web.policy.strategy, Some(Strategy::Digest));
        assert_eq!(web.policy.semver_mode, None);
        assert_eq!(web.policy.allow_tags.as_deref(), Some("regexp:^v"));
        // An empty per-alias ignore-tags clears the app-wide list (AIU v1).
        assert_eq!(web.policy.ignore_tags, Some(vec![]));
        assert_eq!(
            web.pull_secret.as_ref().map(|p| p.value.as_str()),
            Some("pullsecret:argocd/regcred")
        );
        assert_eq!(api.policy.strategy, Some(Strategy::NewestBuild));
        // A blank per-alias allow-tags is unset: the app-wide one applies.
        assert_eq!(api.policy.allow_tags.as_deref(), Some("regexp:^v"));
        assert_eq!(
            api.policy.ignore_tags,
            Some(vec!["latest".to_string(), "*-rc*".to_string()])
        );
        assert_eq!(
            api.policy.platforms,
            Some(vec![
                "linux/amd64".to_string(),
                "linux/arm64/v8".to_string()
            ])
        );
        assert_eq!(
            api.pull_secret.as_ref().map(|p| p.value.as_str()),
            Some("env:CREDS")
        );
        assert_eq!(plain.policy.strategy, Some(Strategy::NewestBuild));
        assert_eq!(plain.policy.platforms, None);
        // A name only: no policy key can carry credentials.
        assert_eq!(
            api.pull_secret.as_ref().map(|p| p.key.as_str()),
            Some("argocd-image-updater.argoproj.io/api.pull-secret")
        );
        // Whether a name is used is the operator's map's to say, in discovery.
        assert!(
            !c.notes.iter().any(|n| n.contains("pull-secret")),
            "{:#?}",
            c.notes
        );
        assert!(c
            .notes
            .iter()
            .any(|n| n.starts_with("image web (nginx): the digest strategy without a tag")));
    }

    #[test]
    fn unaliased_images_read_no_per_alias_keys() {
        let c = config(&[
            ("image-list", "nginx:1.x"),
            ("nginx.update-strategy", "digest"),
            ("nginx.helm.image-tag", "tag"),
        ]);
        assert_eq!(c.images[0].policy.strategy, Some(Strategy::Semver));
        assert_eq!(c.images[0].helm, None);
        assert!(c.notes.contains(&format!(
            "{PREFIX}nginx.update-strategy is not an argocd-image-updater setting (or its alias is not in image-list); ignored"
        )));
    }

    #[test]
    fn strategies_including_legacy_names() {
        let cases = [
            ("semver", Strategy::Semver),
            ("SemVer", Strategy::Semver),
            ("latest", Strategy::NewestBuild),
            ("newest-build", Strategy::NewestBuild),
            ("name", Strategy::Alphabetical),
            ("alphabetical", Strategy::Alphabetical),
            ("digest", Strategy::Digest),
            ("Digest", Strategy::Digest),
            ("newest", Strategy::Semver),
        ];
        for (text, want) in cases {
            let c = config(&[("image-list", "a=nginx"), ("a.update-strategy", text)]);
            assert_eq!(c.images[0].policy.strategy, Some(want), "{text}");
        }
        let c = config(&[("image-list", "a=nginx"), ("a.update-strategy", "newest")]);
        assert_eq!(
            c.notes[0],
            format!("image a (nginx): {PREFIX}a.update-strategy = \"newest\" is not a strategy AIU knows; AIU falls back to semver, and so does imagebump")
        );
    }

    #[test]
    fn constraint_handling_per_strategy() {
        let c = config(&[
            ("image-list", "a=nginx:1.x, b=redis:latest, c=org/app:^2"),
            ("b.update-strategy", "digest"),
            ("c.update-strategy", "alphabetical"),
        ]);
        assert_eq!(c.images[0].policy.constraint.as_deref(), Some("1.x"));
        assert_eq!(c.images[1].policy.constraint, None);
        assert_eq!(c.images[1].constraint.as_deref(), Some("latest"));
        assert_eq!(c.images[2].policy.constraint, None);
        assert_eq!(c.images[2].constraint.as_deref(), Some("^2"));
        assert!(c.notes.contains(&"image c (org/app): the constraint \"^2\" is ignored under alphabetical (by AIU and by imagebump)".to_string()));
    }

    #[test]
    fn allow_tags_forms() {
        let cases: &[(&str, Option<&str>, bool)] = &[
            ("regexp:^[0-9a-f]{7}$", Some("regexp:^[0-9a-f]{7}$"), false),
            ("REGEXP:^v", Some("regexp:^v"), false),
            ("any", Some("any"), false),
            ("ANY", Some("any"), false),
            ("^v1", Some(MATCH_NOTHING), true),
            ("glob:v*", Some(MATCH_NOTHING), true),
            ("regexp:(", Some(MATCH_NOTHING), true),
        ];
        for (text, want, noted) in cases {
            let c = config(&[("image-list", "a=nginx"), ("a.allow-tags", text)]);
            assert_eq!(c.images[0].policy.allow_tags.as_deref(), *want, "{text}");
            let note = c.notes.iter().any(|n| n.contains("matches no tag in AIU"));
            assert_eq!(note, *noted, "{text}: {:?}", c.notes);
        }
    }

    #[test]
    fn ignore_tags_patterns() {
        let c = config(&[
            ("image-list", "a=nginx"),
            ("a.ignore-tags", "latest,[,,x{a},sha-*"),
        ]);
        assert_eq!(
            c.images[0].policy.ignore_tags,
            Some(vec!["latest".into(), "x{a}".into(), "sha-*".into()])
        );
        assert!(c
            .notes
            .iter()
            .any(|n| n.contains("\"[\" is invalid in AIU")));
        assert!(c
            .notes
            .iter()
            .any(|n| n.contains("AIU reads {, } and [! literally")));
    }

    #[test]
    fn platforms_are_per_alias_only_and_checked() {
        let c = config(&[("image-list", "a=nginx"), ("platforms", "linux/amd64")]);
        assert_eq!(c.images[0].policy.platforms, None);
        assert!(c.notes.contains(&format!(
            "{PREFIX}platforms is not read: AIU has platforms only per alias (<alias>.platforms)"
        )));
        let e = err(&[
            ("image-list", "a=nginx"),
            ("a.platforms", "linux/amd64,windows"),
        ]);
        assert!(
            e.starts_with(&format!(
                "{PREFIX}a.platforms: invalid platform \"windows\""
            )),
            "{e}"
        );
    }

    #[test]
    fn force_update_values() {
        for (text, want) in [
            ("true", true),
            ("True", true),
            ("1", true),
            ("false", false),
            ("0", false),
        ] {
            let c = config(&[("image-list", "a=nginx"), ("a.force-update", text)]);
            assert_eq!(c.images[0].force_update, want, "{text}");
            assert_eq!(
                c.notes.iter().any(|n| n.contains("force-update is true")),
                want
            );
        }
        // App-wide applies to unaliased images too.
        let c = config(&[("image-list", "nginx"), ("force-update", "true")]);
        assert!(c.images[0].force_update);
        assert_eq!(
            err(&[("image-list", "a=nginx"), ("a.force-update", "yes")]),
            format!("{PREFIX}a.force-update: \"yes\" is not a boolean (true or false)")
        );
        assert_eq!(
            err(&[("image-list", "a=nginx"), ("force-update", "")]),
            format!("{PREFIX}force-update: \"\" is not a boolean (true or false)")
        );
    }

    #[test]
    fn helm_keys_and_defaults() {
        let helm = |ann: &[(&str, &str)]| {
            let mut all = vec![("image-list", "a=nginx")];
            all.extend_from_slice(ann);
            config(&all).images[0].helm.clone()
        };
        assert_eq!(helm(&[]), None);
        assert_eq!(
            helm(&[
                ("a.helm.image-name", "web.repo"),
                ("a.helm.image-tag", "web.tag")
            ]),
            Some(HelmKeys::NameTag {
                name: "web.repo".into(),
                tag: "web.tag".into()
            })
        );
        assert_eq!(
            helm(&[("a.helm.image-tag", "web.tag")]),
            Some(HelmKeys::NameTag {
                name: "image.name".into(),
                tag: "web.tag".into()
            })
        );
        assert_eq!(
            helm(&[("a.helm.image-name", "web.repo")]),
            Some(HelmKeys::NameTag {
                name: "web.repo".into(),
                tag: "image.tag".into()
            })
        );
        assert_eq!(
            helm(&[
                ("a.helm.image-spec", " web.image "),
                ("a.helm.image-tag", "x")
            ]),
            Some(HelmKeys::Spec("web.image".into()))
        );
        assert_eq!(
            HelmKeys::default(),
            HelmKeys::NameTag {
                name: "image.name".into(),
                tag: "image.tag".into()
            }
        );
    }

    #[test]
    fn kustomize_name_and_conflict() {
        let c = config(&[
            ("image-list", "a=ghcr.io/org/app:1.x"),
            ("a.kustomize.image-name", "org/app"),
        ]);
        assert_eq!(c.images[0].kustomize_name.as_deref(), Some("org/app"));
        let e = err(&[
            ("image-list", "a=nginx"),
            ("a.kustomize.image-name", "nginx"),
            ("a.helm.image-tag", "t"),
        ]);
        assert!(
            e.contains("both helm and kustomize targets are set for alias \"a\""),
            "{e}"
        );
    }

    #[test]
    fn slash_in_alias_reads_underscore_keys() {
        let c = config(&[
            ("image-list", "org/web=nginx"),
            ("org_web.update-strategy", "digest"),
        ]);
        assert_eq!(c.images[0].alias.as_deref(), Some("org/web"));
        assert_eq!(c.images[0].policy.strategy, Some(Strategy::Digest));
        assert!(c.notes[0].starts_with("alias \"org/web\": its settings are read from"));
    }

    fn wb(ann: &[(&str, &str)]) -> (WriteBack, Vec<String>) {
        let mut all = vec![("image-list", "nginx")];
        all.extend_from_slice(ann);
        let c = config(&all);
        (c.write_back, c.notes)
    }

    #[test]
    fn write_back_methods() {
        let (w, notes) = wb(&[]);
        assert_eq!(
            w,
            WriteBack {
                method: WriteBackMethod::Argocd,
                target: WriteBackTarget::Override,
                branch: None
            }
        );
        assert!(notes
            .iter()
            .any(|n| n.contains("imagebump writes git through a pull request")));
        assert_eq!(
            wb(&[("write-back-method", "argocd")]).0.method,
            WriteBackMethod::Argocd
        );
        let (w, notes) = wb(&[("write-back-method", "git")]);
        assert_eq!(w.method, WriteBackMethod::Git { credentials: None });
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(
            wb(&[("write-back-method", "git:secret:argocd/git-creds")])
                .0
                .method,
            WriteBackMethod::Git {
                credentials: Some("secret:argocd/git-creds".into())
            }
        );
        assert_eq!(
            wb(&[("write-back-method", "git:repocreds")]).0.method,
            WriteBackMethod::Git {
                credentials: Some("repocreds".into())
            }
        );
        for bad in ["kubectl", "git:token", "argocd:x"] {
            let e = err(&[("image-list", "nginx"), ("write-back-method", bad)]);
            assert!(
                e.starts_with(&format!("{PREFIX}write-back-method: ")),
                "{e}"
            );
        }
    }

    #[test]
    fn write_back_targets() {
        let t = |v: &str| {
            wb(&[("write-back-method", "git"), ("write-back-target", v)])
                .0
                .target
        };
        use WriteBackTarget::*;
        assert_eq!(t("kustomization"), Kustomization(None));
        assert_eq!(t("kustomization:"), Kustomization(None));
        assert_eq!(
            t("kustomization:../base"),
            Kustomization(Some("../base".into()))
        );
        assert_eq!(
            t("kustomization:/overlays/prod"),
            Kustomization(Some("/overlays/prod".into()))
        );
        assert_eq!(t("helmvalues"), HelmValues(None));
        assert_eq!(
            t("helmvalues:values-prod.yaml"),
            HelmValues(Some("values-prod.yaml".into()))
        );
        assert_eq!(
            t("helmvalues:/helm/values.yaml"),
            HelmValues(Some("/helm/values.yaml".into()))
        );
        assert_eq!(
            t("envs/prod/values.yaml"),
            HelmValues(Some("/envs/prod/values.yaml".into()))
        );
        assert_eq!(t("apps/web/.argocd-source-web.yaml"), Override);
        for bad in [
            "kustomizations",
            "helmvalues:",
            "helmvaluesx",
            "base/kustomization.yaml",
        ] {
            let e = err(&[
                ("image-list", "nginx"),
                ("write-back-method", "git"),
                ("write-back-target", bad),
            ]);
            assert!(
                e.starts_with(&format!("{PREFIX}write-back-target: ")),
                "{bad}: {e}"
            );
        }
        let (_, notes) = wb(&[("write-back-target", "kustomization")]);
        assert!(notes
            .iter()
            .any(|n| n.contains("is ignored by AIU unless the write-back method is git")));
    }

    #[test]
    fn git_branch_and_repository() {
        let (w, notes) = wb(&[("write-back-method", "git"), ("git-branch", "main")]);
        assert_eq!(w.branch.as_deref(), Some("main"));
        assert!(notes.is_empty());
        let (w, notes) = wb(&[
            ("write-back-method", "git"),
            (
                "git-branch",
                "main:image-updater{{range .Images}}-{{.Name}}{{end}}",
            ),
            ("git-repository", "git@github.com:org/other.git"),
        ]);
        assert_eq!(w.branch.as_deref(), Some("main"));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("write-branch template"));
        assert!(notes[1].contains("imagebump writes to the repository it scanned"));
        assert_eq!(wb(&[("git-branch", ":x")]).0.branch, None);
        assert!(
            err(&[("image-list", "nginx"), ("git-branch", "a:b:c")]).contains("is not a branch")
        );
    }

    #[test]
    fn unknown_and_deprecated_keys_are_noted() {
        let c = config(&[
            ("image-list", "a=nginx"),
            ("write-back-targets", "kustomization"),
            ("a.tag-match", "regexp:^v"),
            ("unrelated.example.com/x", "y"),
        ]);
        assert_eq!(
            c.notes[1..],
            [
                format!("{PREFIX}a.tag-match is not read: AIU v1 dropped tag-match; use <alias>.allow-tags"),
                format!("{PREFIX}write-back-targets is not an argocd-image-updater setting (or its alias is not in image-list); ignored"),
            ]
        );
    }
}
