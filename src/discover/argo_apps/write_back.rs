//! Where a managed image's new version is written, one function per write-back target
//! (the `.argocd-source-<app>.yaml` override file, `kustomization:<dir>`,
//! `helmvalues:<file>`): each says what is created in the target file, from plain data.

use super::app::value_files;
use super::helm::{helm_parameters, helm_params, plugin_env, value_at, values_path};
use super::{in_dir, key, lexical, target_path, Scan, SourceState, Target};
use crate::argocd::{App, HelmKeys, SourceKind, UpdaterConfig, UpdaterImage, WriteBackTarget};
use crate::discover::vocab::{Created, Creation, ImageRef, ItemKey, Template};
use imagebump_model::Problem;
use serde_json::Value;

impl Scan<'_> {
    /// A problem at the app's write-back target annotation when the annotations configure
    /// it, else at the app (the message names the ImageUpdater).
    pub(super) fn at_target(&self, app: &App, config: &UpdaterConfig, message: String) -> Problem {
        let annotations =
            config.origin == "annotations" || config.origin.ends_with("(annotations)");
        if !annotations {
            return self.at_app(app, message);
        }
        let at = [
            key("metadata"),
            key("annotations"),
            key("argocd-image-updater.argoproj.io/write-back-target"),
        ];
        match self
            .files
            .get(&app.file)
            .filter(|m| m.node(app.doc, &at).is_some())
        {
            Some(m) => {
                let (line, column) = m.position(app.doc, &at);
                Problem::at_file(&app.file, line, column, message)
            }
            None => self.at_app(app, message),
        }
    }

    /// The file the app's write-back target names; `Err` (reported at the annotation) when
    /// Argo CD would not render what is written there: a `kustomization:<dir>` without a
    /// kustomization or outside what the app's path includes, a `helmvalues:<file>` that is
    /// not among the values files the source renders.
    pub(super) fn resolve_target(
        &mut self,
        app: &App,
        st: &SourceState,
        all: &[SourceState],
        config: &UpdaterConfig,
        current: &str,
    ) -> Result<Target, String> {
        let dir = st.dir.clone().unwrap_or_default();
        let (written, resolved) = match &config.write_back.target {
            WriteBackTarget::Override => {
                // A chart-only source has no path for an override file: the value stays
                // where it is.
                return Ok(st
                    .own_override
                    .clone()
                    .map_or(Target::InPlace, Target::Override));
            }
            WriteBackTarget::Kustomization(d) => {
                // `kustomization:<dir>` names the directory; its kustomization file keeps
                // the name it has (kustomize refuses a directory with two).
                let kdir = match d.as_deref() {
                    None => dir.clone(),
                    Some(g) => target_path(&dir, Some(g), ""),
                };
                let written = d
                    .as_deref()
                    .map_or("kustomization".into(), |d| format!("kustomization:{d}"));
                (
                    written,
                    self.kustomization_target(&dir, &kdir, current)
                        .map(Target::Kustomization),
                )
            }
            WriteBackTarget::HelmValues(f) => {
                let file = target_path(&dir, f.as_deref(), "values.yaml");
                let written = f
                    .as_deref()
                    .map_or("helmvalues".into(), |f| format!("helmvalues:{f}"));
                let checked = values_target(st, all, file, current).and_then(|t| {
                    let Target::Values(file) = &t else {
                        return Ok(t);
                    };
                    let key = app.key(self.namespace);
                    let others: Vec<&str> = (self.values_readers.get(file).into_iter().flatten())
                        .filter(|k| **k != key)
                        .map(String::as_str)
                        .collect();
                    if others.is_empty() || self.shared == crate::config::SharedBases::InPlace {
                        return Ok(t);
                    }
                    Err(format!("{file}, which apps {} read too: a value written there would move them as well (scan.sharedBases: in-place allows it)", others.join(", ")))
                });
                (written, checked)
            }
        };
        resolved.map_err(|why| {
            let why = format!("write-back target {written} resolves to {why}");
            let message = format!(
                "Application {} ({}): {why}: not written",
                app.name, config.origin
            );
            let p = self.at_target(app, config, message);
            self.out.problems.push(p);
            why
        })
    }

    /// Where the new value goes, per the app's write-back target: slots when that is where
    /// the current value is, else creations.
    pub(super) fn write_back(
        &mut self,
        st: &SourceState,
        target: Target,
        img: &UpdaterImage,
        kname: &str,
        keys: &HelmKeys,
        r: &mut ImageRef,
    ) {
        let kustomize = st.kind == SourceKind::Kustomize;
        let file = match &target {
            Target::InPlace => return,
            Target::Override(f) | Target::Kustomization(f) | Target::Values(f) => f.clone(),
        };
        if let Err(e) = self.root.resolve(&file) {
            r.unmanaged = Some(format!("its write-back target {e}").into());
            let p = r.problem(format!("write-back target {e}: not written"));
            self.out.problems.push(p);
            return;
        }
        if self.root.exists(&file) && !self.load(&file) {
            r.unmanaged = Some(format!("its write-back target {file} cannot be read").into());
            return;
        }
        let (file, creations) = match target {
            Target::InPlace => return,
            Target::Override(file) => {
                if *r.file == *file {
                    return;
                }
                let creations = if let Some(pk) = &img.plugin {
                    let base = plugin_env(&st.effective);
                    helm_params(pk, &img.name)
                        .into_iter()
                        .map(|(name, value)| Created::ListItem {
                            base: base.clone(),
                            key: ItemKey::Field {
                                field: "name".into(),
                                value: name.clone(),
                            },
                            value: Template::EnvVar {
                                name,
                                value: Box::new(value),
                            },
                        })
                        .collect()
                } else if kustomize {
                    let base = st
                        .effective
                        .pointer("/kustomize/images")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    let prefix = if kname == img.name {
                        img.name.clone()
                    } else {
                        format!("{kname}={}", img.name)
                    };
                    vec![Created::ListItem {
                        base,
                        key: ItemKey::KustomizeImage(kname.to_string()),
                        value: Template::Reference { prefix },
                    }]
                } else {
                    let base = helm_parameters(&st.effective);
                    helm_params(keys, &img.name)
                        .into_iter()
                        .map(|(name, value)| Created::ListItem {
                            base: base.clone(),
                            key: ItemKey::Field {
                                field: "name".into(),
                                value: name.clone(),
                            },
                            value: Template::HelmParam {
                                name,
                                value: Box::new(value),
                            },
                        })
                        .collect()
                };
                let path = if img.plugin.is_some() {
                    vec![key("plugin"), key("env")]
                } else if kustomize {
                    vec![key("kustomize"), key("images")]
                } else {
                    vec![key("helm"), key("parameters")]
                };
                (
                    file,
                    creations
                        .into_iter()
                        .map(|what| (path.clone(), what))
                        .collect::<Vec<_>>(),
                )
            }
            Target::Kustomization(file) => {
                if *r.file == *file {
                    return;
                }
                let new_name = (kname != img.name).then(|| img.name.clone());
                (
                    file,
                    vec![(
                        vec![key("images")],
                        Created::ListItem {
                            base: Vec::new(),
                            key: ItemKey::Field {
                                field: "name".into(),
                                value: kname.to_string(),
                            },
                            value: Template::KustomizeEntry {
                                name: kname.to_string(),
                                new_name,
                            },
                        },
                    )],
                )
            }
            Target::Values(file) => {
                self.load(&file);
                let values = self
                    .files
                    .get(&file)
                    .and_then(|l| l.json.first())
                    .cloned()
                    .unwrap_or(Value::Null);
                // The current value is read from the target itself: it is edited where it
                // is, and the keys the target lacks (the name beside a tag) are created.
                let in_place = *r.file == *file;
                let mut out = Vec::new();
                for (k, value) in helm_params(keys, &img.name) {
                    match values_path(&values, &k) {
                        Ok(path) if in_place && value_at(&values, &path).is_some() => {}
                        Ok(path) => out.push((path, Created::Key { value })),
                        Err(e) => {
                            // A scalar where the key path needs a mapping: the target cannot
                            // hold the value; an error naming the key, not a quiet skip.
                            let why = format!("cannot write {k} in {file}: {e}");
                            self.out.problems.push(r.problem(why.clone()));
                            r.unmanaged = Some(why.into());
                            return;
                        }
                    }
                }
                if in_place {
                    r.extra_mut()
                        .creations
                        .extend(out.into_iter().map(|(path, what)| Creation {
                            file: file.clone(),
                            doc: 0,
                            path,
                            what,
                        }));
                    return;
                }
                (file, out)
            }
        };
        r.slots.clear();
        r.extra_mut().writes_to = Some(file.clone());
        r.extra_mut().creations = creations
            .into_iter()
            .map(|(path, what)| Creation {
                file: file.clone(),
                doc: 0,
                path,
                what,
            })
            .collect();
    }
}

/// A `helmvalues` target `file` of the source `st`, checked against what Helm renders: one
/// of the values files it reads (the chart's `values.yaml` first, then `valueFiles`), at or
/// after the one the current value is read from (`current`): a later values file, or
/// `helm.parameters` / `valuesObject`, set the key again over it.
pub(super) fn values_target(
    st: &SourceState,
    all: &[SourceState],
    file: String,
    current: &str,
) -> Result<Target, String> {
    let mut order = Vec::new();
    if let (SourceKind::Helm, Some(dir)) = (&st.kind, &st.dir) {
        order.push(in_dir(dir, "values.yaml"));
    }
    // One name per file (`apps/web/../common/values.yaml` is `apps/common/values.yaml`).
    for f in value_files(st, all).iter().map(|f| lexical(f)) {
        if !order.contains(&f) {
            order.push(f);
        }
    }
    let current = lexical(current);
    let current = current.as_str();
    let Some(at) = order.iter().position(|f| *f == file) else {
        return Err(format!("{file}, which is not among the values files the app renders (its chart's values.yaml and helm.valueFiles): Argo CD would not render it"));
    };
    match order.iter().position(|f| f == current) {
        Some(from) if from <= at => Ok(Target::Values(file)),
        _ => Err(format!("{file}, under {current}, which sets the version the app renders after it: a value written there would change nothing Argo CD renders")),
    }
}
