//! A Helm or plugin source's current version of an image: `helm.parameters`,
//! `helm.valuesObject`, then the values files, read as Helm reads them.

use super::app::value_files;
use super::updater::same_image;
use super::{in_dir, key, Current, Scan, SourceState};
use crate::discover::vocab::{RefKind, SlotFormat, Template};
use imagebump_argocd::{self as argocd, App, HelmKeys, SourceKind};
use imagebump_yaml::PathSeg;
use serde_json::Value;

/// What a Helm source's current version is looked for by: the key holding the tag (or the
/// whole spec), the image, and the repository the app's `helm.parameters` name for it.
struct Wanted<'k> {
    keys: &'k HelmKeys,
    tag_key: &'k str,
    image: &'k str,
    repo: Option<String>,
}

impl<'k> Wanted<'k> {
    fn new(keys: &'k HelmKeys, image: &'k str, repo: Option<String>) -> Wanted<'k> {
        let tag_key = match keys {
            HelmKeys::NameTag { tag, .. } => tag.as_str(),
            HelmKeys::Spec(k) => k.as_str(),
        };
        Wanted {
            keys,
            tag_key,
            image,
            repo,
        }
    }

    /// The key naming the repository beside the tag, when the keys are two.
    fn name_key(keys: &HelmKeys) -> Option<&str> {
        match keys {
            HelmKeys::NameTag { name, .. } => Some(name),
            HelmKeys::Spec(_) => None,
        }
    }

    /// A tag key whose name key holds another image is that image's value.
    fn ours(&self, repo: &Option<String>) -> bool {
        repo.as_deref().is_none_or(|r| same_image(r, self.image))
    }

    /// The value at `(file, doc, at)`, read with the repository `repo`.
    fn current(
        &self,
        (file, doc, at): (String, usize, Vec<PathSeg>),
        kind: RefKind,
        repo: Option<String>,
    ) -> Current {
        let format = match self.keys {
            HelmKeys::Spec(_) => SlotFormat::Reference {
                name: repo.as_deref().unwrap_or_default().into(),
            },
            HelmKeys::NameTag { .. } => SlotFormat::Tag,
        };
        Current {
            file,
            doc,
            at,
            format,
            kind,
            repository: repo,
        }
    }
}

impl Scan<'_> {
    /// Plugin sources: the rendered `plugin.env` variable holding the tag (or the spec).
    pub(super) fn plugin_current(
        &mut self,
        app: &App,
        st: &SourceState,
        keys: &HelmKeys,
    ) -> Option<Current> {
        let (file, doc, base) = self.holder(app, st, &["plugin", "env"]);
        let env = self.list(&file, doc, &base);
        let (var, repo, spec) = match keys {
            HelmKeys::NameTag { name, tag } => (tag.as_str(), param_value(&env, name), false),
            HelmKeys::Spec(v) => (v.as_str(), None, true),
        };
        let i = env
            .iter()
            .position(|p| p.get("name").and_then(Value::as_str) == Some(var))?;
        Some(Current {
            file,
            doc,
            at: with_index(&base, i, &["value"]),
            format: if spec {
                SlotFormat::Reference { name: "".into() }
            } else {
                SlotFormat::Tag
            },
            kind: RefKind::ArgoPluginEnv,
            repository: repo,
        })
    }

    /// Helm: the rendered `helm.parameters`, then `helm.valuesObject`, then the values files.
    pub(super) fn helm_current(
        &mut self,
        app: &App,
        st: &SourceState,
        all: &[SourceState],
        keys: &HelmKeys,
        image: &str,
    ) -> Option<Current> {
        let (file, doc, base) = self.holder(app, st, &["helm", "parameters"]);
        let params = self.list(&file, doc, &base);
        let repo = (Wanted::name_key(keys)).and_then(|name| param_value(&params, name));
        let want = Wanted::new(keys, image, repo);
        if let Some(i) = params
            .iter()
            .position(|p| p.get("name").and_then(Value::as_str) == Some(want.tag_key))
            .filter(|_| want.ours(&want.repo))
        {
            let at = with_index(&base, i, &["value"]);
            let repo = want.repo.clone();
            return Some(want.current((file, doc, at), RefKind::ArgoHelmParameter, repo));
        }
        self.values_object_current(app, st, &want)
            .or_else(|| self.values_file_current(st, all, &want))
    }

    /// The tag key in the app's rendered `helm.valuesObject`, when the image there is ours.
    fn values_object_current(&self, app: &App, st: &SourceState, want: &Wanted) -> Option<Current> {
        let (file, doc, base) = self.holder(app, st, &["helm", "valuesObject"]);
        let object = self.files.get(&file).and_then(|l| l.value(doc, &base))?;
        let object_repo = (Wanted::name_key(want.keys))
            .and_then(|name| argocd::helm_path::lookup(object, name))
            .and_then(|(v, _)| v.as_str().map(str::to_string));
        let (_, segs) = argocd::helm_path::lookup(object, want.tag_key)
            .filter(|_| want.ours(&want.repo) && want.ours(&object_repo))?;
        let mut at = base.clone();
        at.extend(segs);
        let repo = want.repo.clone();
        Some(want.current((file, doc, at), RefKind::HelmValues, repo))
    }

    /// The tag key in the last values file that sets it for our image. Helm reads the
    /// chart's own values.yaml first, whatever valueFiles lists.
    fn values_file_current(
        &mut self,
        st: &SourceState,
        all: &[SourceState],
        want: &Wanted,
    ) -> Option<Current> {
        let mut files = value_files(st, all);
        if let (SourceKind::Helm, Some(dir)) = (&st.kind, &st.dir) {
            let chart_values = in_dir(dir, "values.yaml");
            if !files.contains(&chart_values) {
                files.insert(0, chart_values);
            }
        }
        for vf in files.into_iter().rev() {
            if !self.load(&vf) {
                continue;
            }
            let values = (self.files.get(&vf).and_then(|l| l.json.first()))
                .cloned()
                .unwrap_or(Value::Null);
            let Some((_, segs)) = argocd::helm_path::lookup(&values, want.tag_key) else {
                continue;
            };
            let repo = want.repo.clone().or_else(|| {
                (Wanted::name_key(want.keys))
                    .and_then(|name| argocd::helm_path::lookup(&values, name))
                    .and_then(|(v, _)| v.as_str().map(str::to_string))
            });
            if want.ours(&repo) {
                return Some(want.current((vf, 0, segs), RefKind::HelmValues, repo));
            }
        }
        None
    }
}

/// The value at `path` in `v`, if there is one.
pub(super) fn value_at<'v>(v: &'v Value, path: &[PathSeg]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, seg| match seg {
        PathSeg::Key(k) => v.get(k.as_str()),
        PathSeg::Index(i) => v.get(*i),
    })
}

/// The source's plugin environment, `{name, value}` items.
pub(super) fn plugin_env(effective: &Value) -> Vec<Value> {
    let env = effective.pointer("/plugin/env").and_then(Value::as_array);
    env.into_iter()
        .flatten()
        .map(|p| {
            serde_json::json!({
                "name": p.get("name").cloned().unwrap_or(Value::Null),
                "value": p.get("value").cloned().unwrap_or(Value::Null),
            })
        })
        .collect()
}

/// The source's Helm parameters as an override file spells them: `name`, `value`,
/// `forcestring` (argocd-image-updater's field names; Argo CD reads them case-insensitively).
pub(super) fn helm_parameters(effective: &Value) -> Vec<Value> {
    let params = effective
        .pointer("/helm/parameters")
        .and_then(Value::as_array);
    params
        .into_iter()
        .flatten()
        .map(|p| {
            let force = p
                .get("forceString")
                .or_else(|| p.get("forcestring"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            serde_json::json!({
                "name": p.get("name").cloned().unwrap_or(Value::Null),
                "value": p.get("value").cloned().unwrap_or(Value::Null),
                "forcestring": force,
            })
        })
        .collect()
}

/// The Helm parameters (or values keys) argocd-image-updater writes for an image.
pub(super) fn helm_params(keys: &HelmKeys, image: &str) -> Vec<(String, Template)> {
    match keys {
        HelmKeys::NameTag { name, tag } => vec![
            (name.clone(), Template::Text(image.to_string())),
            (tag.clone(), Template::Tag),
        ],
        HelmKeys::Spec(k) => vec![(
            k.clone(),
            Template::Reference {
                prefix: image.to_string(),
            },
        )],
    }
}

/// Where a Helm values key goes: the existing scalar, else new nested keys (as AIU does).
pub(super) fn values_path(
    values: &Value,
    k: &str,
) -> Result<Vec<PathSeg>, argocd::helm_path::Error> {
    if values.is_null() {
        return argocd::helm_path::parse(k);
    }
    match argocd::helm_path::write_target(values, k)? {
        argocd::helm_path::WriteTarget::Existing(p) => Ok(p),
        argocd::helm_path::WriteTarget::Create { parent, keys } => {
            let mut p = parent;
            p.extend(keys.into_iter().map(PathSeg::Key));
            Ok(p)
        }
    }
}

pub(super) fn param_value(params: &[Value], name: &str) -> Option<String> {
    params
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
        .and_then(|p| p.get("value"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

pub(super) fn with_index(base: &[PathSeg], i: usize, rest: &[&str]) -> Vec<PathSeg> {
    let mut p = base.to_vec();
    p.push(PathSeg::Index(i));
    p.extend(rest.iter().map(|k| key(k)));
    p
}
