//! An Application's own images, edited where they are written: `kustomize.images`,
//! `helm.parameters`, `helm.valuesObject`, the YAML text of `helm.values`, as their override
//! files leave them.

use super::helm::with_index;
use super::{join, key, Current, Scan, SourceState};
use crate::discover::vocab::{ImageRef, RefKind, SlotFormat};
use imagebump_argocd::app::parse_kustomize_image;
use imagebump_argocd::{self as argocd, App};
use imagebump_model::name::{parse_reference, same_repository};
use imagebump_yaml::{BlockText, Node, PathSeg};
use serde_json::Value;
use std::collections::BTreeMap;

impl Scan<'_> {
    /// Images in `helm.values`, a string of YAML (from the manifest or the override file
    /// Argo CD reads it from): edited inside the string when it is a literal block scalar
    /// (`values: |`), else listed as unmanaged. Whoever configures the app, they are listed
    /// before its argocd-image-updater settings are applied, which may leave them alone.
    pub(super) fn values_string(&mut self, app: &App, app_key: &str, st: &SourceState) {
        if st.broken {
            return;
        }
        let (file, doc, at) = self.holder(app, st, &["helm", "values"]);
        let Some(loaded) = self.files.get(&file) else {
            return;
        };
        let (Some(Value::String(text)), Some(Node::Scalar(s))) =
            (loaded.value(doc, &at), loaded.node(doc, &at))
        else {
            return;
        };
        let (refs, problems) = match BlockText::literal(&loaded.text, s.span.clone(), text) {
            Some(block) => {
                crate::discover::helm::in_block(&file, doc, &at, &block, &self.helm_keys)
            }
            None => {
                let position = loaded.position(doc, &at);
                crate::discover::helm::in_string(&file, position, text, &self.helm_keys)
            }
        };
        let overrides = self.values_overrides(app, st);
        self.out.problems.extend(problems);
        for mut r in refs {
            r.unit = app_key.into();
            r.extra_mut().app = Some(app_key.to_string());
            let inner = r.slots.first().and_then(|s| s.inner.as_ref());
            if let Some(why) = inner.and_then(|i| overrides.iter().find(|(p, _)| *p == i.path)) {
                r.unmanaged = Some(format!("{} sets it again, over helm.values", why.1).into());
            }
            self.push(r, None);
        }
    }

    /// The value paths Argo CD sets over `helm.values`: `helm.valuesObject`'s scalars and
    /// `helm.parameters`, with where each comes from.
    pub(super) fn values_overrides(
        &self,
        app: &App,
        st: &SourceState,
    ) -> Vec<(Vec<PathSeg>, &'static str)> {
        let mut out = Vec::new();
        let (file, doc, base) = self.holder(app, st, &["helm", "valuesObject"]);
        if let Some(object) = self.files.get(&file).and_then(|l| l.value(doc, &base)) {
            scalar_paths(object, &mut Vec::new(), &mut out);
        }
        let (file, doc, base) = self.holder(app, st, &["helm", "parameters"]);
        for p in self.list(&file, doc, &base) {
            let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
            if let Ok(path) = argocd::helm_path::parse(name) {
                out.push((path, "helm.parameters"));
            }
        }
        out
    }

    /// The app's values-file images whose value `helm.parameters` or `helm.valuesObject`
    /// set again: Helm renders those, so the values file's are left alone naming them.
    pub(super) fn overridden_values(&mut self, app: &App, app_key: &str, st: &SourceState) {
        let overrides = self.values_overrides(app, st);
        if overrides.is_empty() {
            return;
        }
        let by = |what: &str| {
            let (file, _, _) = self.holder(app, st, &["helm", what]);
            format!(
                "{}{file} (helm.{what})",
                crate::discover::vocab::OVERRIDDEN_BY
            )
        };
        let (parameters, object) = (by("parameters"), by("valuesObject"));
        for r in self.out.refs.iter_mut() {
            let in_values = r.kind == RefKind::HelmValues
                && *r.file != *app.file
                && !st.overrides.iter().any(|o| **o == *r.file);
            if r.app() != Some(app_key) || !r.is_managed() || !in_values {
                continue;
            }
            let set = (r.slots.iter()).find_map(|s| overrides.iter().find(|(p, _)| **p == *s.path));
            if let Some((_, what)) = set {
                let by = if *what == "helm.parameters" {
                    &parameters
                } else {
                    &object
                };
                r.unmanaged = Some(by.clone().into());
            }
        }
    }

    /// Images in an app's own source and its override files (the app has no
    /// argocd-image-updater configuration): each is edited where Argo CD reads it.
    pub(super) fn plain_images(&mut self, app: &App, app_key: &str, st: &SourceState) {
        // Its override file is reported as broken; what it renders is unknown.
        if st.broken {
            return;
        }
        let mut found = Vec::new();
        let (file, doc, base) = self.holder(app, st, &["kustomize", "images"]);
        if file != app.file {
            self.overridden_by_file(app_key, &file, &base);
        }
        for (i, item) in self.list(&file, doc, &base).iter().enumerate() {
            if let Some(text) = item.as_str() {
                let prefix = kustomize_prefix(text);
                found.push(Current {
                    file: file.clone(),
                    doc,
                    at: with_index(&base, i, &[]),
                    format: SlotFormat::Reference {
                        name: prefix.into(),
                    },
                    kind: RefKind::ArgoKustomizeImage,
                    repository: None,
                });
            }
        }
        let (file, doc, base) = self.holder(app, st, &["helm", "parameters"]);
        let params = self.list(&file, doc, &base);
        for (i, repo) in image_parameter_pairs(&params) {
            found.push(Current {
                file: file.clone(),
                doc,
                at: with_index(&base, i, &["value"]),
                format: SlotFormat::Tag,
                kind: RefKind::ArgoHelmParameter,
                repository: Some(repo),
            });
        }
        let (file, doc, base) = self.holder(app, st, &["plugin", "env"]);
        for (i, item) in self.list(&file, doc, &base).iter().enumerate() {
            let value = item
                .get("value")
                .and_then(Value::as_str)
                .unwrap_or_default();
            // A one-line block scalar (`|`) ends with a line break the edit keeps.
            let line = value.strip_suffix('\n').unwrap_or(value);
            let is_image =
                line.contains('/') && parse_reference(line).is_ok_and(|r| r.tag.is_some());
            if is_image {
                let name = value.rsplit_once(':').map_or(value, |(n, _)| n).to_string();
                found.push(Current {
                    file: file.clone(),
                    doc,
                    at: with_index(&base, i, &["value"]),
                    format: SlotFormat::Reference { name: name.into() },
                    kind: RefKind::ArgoPluginEnv,
                    repository: None,
                });
            }
        }
        for c in found {
            if let Some(r) = self.current_ref(&c, app_key) {
                self.push(r, None);
            }
        }
        self.values_object(app, app_key, st);
        self.overridden_values(app, app_key, st);
    }

    /// The app's manifest images and `images:` entries that the `kustomize.images` of the
    /// override file `file` (at `base`) set again: Argo CD renders the override, so they
    /// are left alone naming it. (Placement does this for the Application's own list.)
    pub(super) fn overridden_by_file(&mut self, app_key: &str, file: &str, base: &[PathSeg]) {
        let Some(loaded) = self.files.get(file) else {
            return;
        };
        let items = self.list(file, 0, base);
        let names: Vec<(String, usize)> = (items.iter().enumerate())
            .filter_map(|(i, v)| Some((kustomize_name_of(v.as_str()?), i)))
            .collect();
        let kinds = [RefKind::Workload, RefKind::Kustomize];
        for r in self.out.refs.iter_mut() {
            let ours = r.app() == Some(app_key) && r.is_managed() && kinds.contains(&r.kind);
            let Some((_, i)) = names
                .iter()
                .find(|(n, _)| ours && same_repository(n, &r.written))
            else {
                continue;
            };
            let (line, _) = loaded.position(0, &with_index(base, *i, &[]));
            let by = format!(
                "{}{file}:{line} (kustomize.images)",
                crate::discover::vocab::OVERRIDDEN_BY
            );
            r.unmanaged = Some(by.into());
        }
    }

    /// `helm.valuesObject` image blocks, in the manifest and in override files; for the
    /// same key path the last file Argo CD applies wins.
    pub(super) fn values_object(&mut self, app: &App, app_key: &str, st: &SourceState) {
        let mut holders = vec![(
            app.file.clone(),
            app.doc,
            join(&st.source.at, &["helm", "valuesObject"]),
        )];
        for o in &st.overrides {
            holders.push((o.clone(), 0, vec![key("helm"), key("valuesObject")]));
        }
        let mut found: BTreeMap<Vec<PathSeg>, ImageRef> = BTreeMap::new();
        for (file, doc, base) in holders {
            let Some(loaded) = self.files.get(&file) else {
                continue;
            };
            let Some(node) = loaded.node(doc, &base) else {
                continue;
            };
            let ctx = loaded.ctx();
            let (mut refs, mut problems) = (Vec::new(), Vec::new());
            let keys = &self.helm_keys;
            crate::discover::helm::values(&ctx, doc, node, &base, keys, &mut refs, &mut problems);
            self.out.problems.extend(problems);
            for r in refs {
                let rel = r
                    .slots
                    .first()
                    .and_then(|s| s.path.get(base.len()..))
                    .map_or_else(Vec::new, <[PathSeg]>::to_vec);
                found.insert(rel, r);
            }
        }
        for r in found.into_values() {
            let Some(mut r) = self.relocate(r) else {
                continue;
            };
            r.unit = app_key.into();
            r.extra_mut().app = Some(app_key.to_string());
            self.push(r, None);
        }
    }
}

/// The paths of every scalar below `v`, as set by `helm.valuesObject`.
pub(super) fn scalar_paths(
    v: &Value,
    path: &mut Vec<PathSeg>,
    out: &mut Vec<(Vec<PathSeg>, &'static str)>,
) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                path.push(key(k));
                scalar_paths(v, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                path.push(PathSeg::Index(i));
                scalar_paths(v, path, out);
                path.pop();
            }
        }
        _ => out.push((path.clone(), "helm.valuesObject")),
    }
}

/// The part of a kustomize image string before `:tag` / `@digest` (`old=new`, or `new`).
pub(super) fn kustomize_prefix(s: &str) -> String {
    match parse_kustomize_image(s) {
        Some(k) => match k.old_name {
            Some(old) => format!("{old}={}", k.new_name),
            None => k.new_name,
        },
        None => s.to_string(),
    }
}

pub(super) fn kustomize_name_of(s: &str) -> String {
    match parse_kustomize_image(s) {
        Some(k) => k.old_name.unwrap_or(k.new_name),
        None => s.to_string(),
    }
}

/// Helm parameters that name an image without annotations: `X.repository` with a
/// `X.tag` beside it. Returns the index of the tag parameter and the repository.
pub(super) fn image_parameter_pairs(params: &[Value]) -> Vec<(usize, String)> {
    let by_name: BTreeMap<&str, (usize, &str)> = params
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((p.get("name")?.as_str()?, (i, p.get("value")?.as_str()?))))
        .collect();
    let mut out = Vec::new();
    for (name, (_, repo)) in &by_name {
        let Some(prefix) = name.strip_suffix("repository") else {
            continue;
        };
        if let Some((i, _)) = by_name.get(format!("{prefix}tag").as_str()) {
            let registry = by_name
                .get(format!("{prefix}registry").as_str())
                .map(|(_, r)| *r);
            let repo = match registry {
                Some(reg) if !reg.is_empty() => format!("{}/{repo}", reg.trim_end_matches('/')),
                _ => repo.to_string(),
            };
            out.push((*i, repo));
        }
    }
    out.sort();
    out
}
