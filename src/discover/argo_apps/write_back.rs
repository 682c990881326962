//! Where a managed image's new version is written, one function per write-back target
//! (the `.argocd-source-<app>.yaml` override file, `kustomization:<dir>`,
//! `helmvalues:<file>`): each says what is created in the target file, from plain data.

use super::app::value_files;
use super::helm::{helm_parameters, helm_params, plugin_env, value_at, values_path};
use super::{in_dir, key, lexical, target_path, Scan, SourceState, Target};
use crate::discover::vocab::{Created, Creation, ImageRef, ItemKey, Template};
use imagebump_argocd::{App, HelmKeys, SourceKind, UpdaterConfig, UpdaterImage, WriteBackTarget};
use imagebump_model::Problem;
use imagebump_yaml::PathSeg;
use serde_json::Value;

/// Why Argo CD would not render what is written to a write-back target; the file or
/// directory comes first, as in "write-back target kustomization:../base resolves to …".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Refusal {
    #[error("{dir}, which has no kustomization")]
    NoKustomization { dir: String },
    #[error("{dir}, which the app's path {path} does not include: Argo CD would not render it")]
    NotIncluded { dir: String, path: String },
    #[error("{dir}, which does not render {current}, where the version the app renders is set: an entry there would change nothing Argo CD renders")]
    EntryBelow { dir: String, current: String },
    /// `others`: the other paths, comma-separated.
    #[error("{dir}, which {others} render too: an entry there would move them as well (scan.sharedBases: in-place allows it)")]
    SharedDir { dir: String, others: String },
    #[error("{file}, which is not among the values files the app renders (its chart's values.yaml and helm.valueFiles): Argo CD would not render it")]
    NotRendered { file: String },
    #[error("{file}, under {current}, which sets the version the app renders after it: a value written there would change nothing Argo CD renders")]
    ValuesBelow { file: String, current: String },
    /// `apps`: the other apps' keys, comma-separated.
    #[error("{file}, which apps {apps} read too: a value written there would move them as well (scan.sharedBases: in-place allows it)")]
    SharedValues { file: String, apps: String },
}

/// A write-back target refused: as written in the annotation (`kustomization:../base`),
/// and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("write-back target {written} resolves to {why}")]
pub(super) struct TargetError {
    written: String,
    why: Refusal,
}

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
    ) -> Result<Target, TargetError> {
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
                let checked = values_target(st, all, file, current)
                    .and_then(|t| self.values_not_shared(t, &app.key(self.namespace)));
                (written, checked)
            }
        };
        resolved.map_err(|why| {
            let why = TargetError { written, why };
            let message = format!(
                "Application {} ({}): {why}: not written",
                app.name, config.origin
            );
            let p = self.at_target(app, config, message);
            self.out.problems.push(p);
            why
        })
    }

    /// A values file `target` that other apps read too is refused, unless
    /// `scan.sharedBases: in-place` allows a value written there to move them as well.
    fn values_not_shared(&self, target: Target, key: &str) -> Result<Target, Refusal> {
        let Target::Values(file) = &target else {
            return Ok(target);
        };
        let others: Vec<&str> = (self.values_readers.get(file).into_iter().flatten())
            .filter(|k| **k != key)
            .map(String::as_str)
            .collect();
        if others.is_empty() || self.shared == imagebump_model::config::SharedBases::InPlace {
            return Ok(target);
        }
        let (file, apps) = (file.clone(), others.join(", "));
        Err(Refusal::SharedValues { file, apps })
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
        let file = match &target {
            Target::InPlace => return,
            Target::Override(f) | Target::Kustomization(f) | Target::Values(f) => f.clone(),
        };
        if !self.target_readable(&file, r) {
            return;
        }
        let in_place = *r.file == *file;
        let writes = match target {
            Target::InPlace => return,
            Target::Override(_) | Target::Kustomization(_) if in_place => return,
            Target::Override(_) => override_writes(img, kname, keys, &st.kind, &st.effective),
            Target::Kustomization(_) => kustomization_writes(&img.name, kname),
            Target::Values(_) => {
                self.load(&file);
                let values = self
                    .files
                    .get(&file)
                    .and_then(|l| l.json.first())
                    .cloned()
                    .unwrap_or(Value::Null);
                match values_writes(&values, keys, &img.name, in_place) {
                    Ok(writes) => writes,
                    Err((k, e)) => {
                        // A scalar where the key path needs a mapping: the target cannot
                        // hold the value; an error naming the key, not a quiet skip.
                        let why = format!("cannot write {k} in {file}: {e}");
                        self.out.problems.push(r.problem(why.clone()));
                        r.unmanaged = Some(why.into());
                        return;
                    }
                }
            }
        };
        let creations = writes.into_iter().map(|(path, what)| Creation {
            file: file.clone(),
            doc: 0,
            path,
            what,
        });
        if in_place {
            // The values file the current value is read from: that value is edited where it
            // is, and the keys it lacks are created beside it.
            r.extra_mut().creations.extend(creations);
            return;
        }
        r.slots.clear();
        r.extra_mut().creations = creations.collect();
        r.extra_mut().writes_to = Some(file);
    }

    /// Whether the target `file` can be written: inside the tree, and readable when it
    /// exists; else `r` is left alone, and a path outside the tree is reported.
    fn target_readable(&mut self, file: &str, r: &mut ImageRef) -> bool {
        if let Err(e) = self.root.resolve(file) {
            r.unmanaged = Some(format!("its write-back target {e}").into());
            let p = r.problem(format!("write-back target {e}: not written"));
            self.out.problems.push(p);
            return false;
        }
        if self.root.exists(file) && !self.load(file) {
            r.unmanaged = Some(format!("its write-back target {file} cannot be read").into());
            return false;
        }
        true
    }
}

/// What a write-back creates in its target file: each value at its path.
pub(super) type Writes = Vec<(Vec<PathSeg>, Created)>;

/// The app's own override file (`.argocd-source-<app>.yaml`): the image as the source's kind
/// spells it, a list item keyed by name under `plugin.env`, `kustomize.images` or
/// `helm.parameters`, each list starting from what the source of kind `kind` renders
/// (`effective`).
fn override_writes(
    img: &UpdaterImage,
    kname: &str,
    keys: &HelmKeys,
    kind: &SourceKind,
    effective: &Value,
) -> Writes {
    let (path, creations) = if let Some(pk) = &img.plugin {
        let items = named_items(plugin_env(effective), pk, &img.name, |name, value| {
            Template::EnvVar { name, value }
        });
        (["plugin", "env"], items)
    } else if *kind == SourceKind::Kustomize {
        (
            ["kustomize", "images"],
            vec![kustomize_image(img, kname, effective)],
        )
    } else {
        let items = named_items(
            helm_parameters(effective),
            keys,
            &img.name,
            |name, value| Template::HelmParam { name, value },
        );
        (["helm", "parameters"], items)
    };
    let path: Vec<PathSeg> = path.iter().map(|k| key(k)).collect();
    creations
        .into_iter()
        .map(|what| (path.clone(), what))
        .collect()
}

/// One list item per Helm key (or plugin variable) of `keys`, matched by its `name` field,
/// over the list `base`.
fn named_items(
    base: Vec<Value>,
    keys: &HelmKeys,
    image: &str,
    template: impl Fn(String, Box<Template>) -> Template,
) -> Vec<Created> {
    helm_params(keys, image)
        .into_iter()
        .map(|(name, value)| Created::ListItem {
            base: base.clone(),
            key: ItemKey::Field {
                field: "name".into(),
                value: name.clone(),
            },
            value: template(name, Box::new(value)),
        })
        .collect()
}

/// A `kustomize.images` item for `kname` (`kname=image` when it renames), over the images
/// the source renders.
fn kustomize_image(img: &UpdaterImage, kname: &str, effective: &Value) -> Created {
    let base = effective
        .pointer("/kustomize/images")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let prefix = if kname == img.name {
        img.name.clone()
    } else {
        format!("{kname}={}", img.name)
    };
    Created::ListItem {
        base,
        key: ItemKey::KustomizeImage(kname.to_string()),
        value: Template::Reference { prefix },
    }
}

/// `kustomization:<dir>`: an `images:` entry named `kname`, with a `newName` when the image
/// is another.
fn kustomization_writes(image: &str, kname: &str) -> Writes {
    let new_name = (kname != image).then(|| image.to_string());
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
    )]
}

/// `helmvalues:<file>`, whose values are `values` (`null`: no such file yet): each key of
/// `keys` at its existing scalar, else as new nested keys; those the file holds already are
/// left to be edited in place when the current value is read from it (`in_place`). `Err`:
/// the key, and why the values cannot hold it (a scalar where it needs a mapping).
fn values_writes(
    values: &Value,
    keys: &HelmKeys,
    image: &str,
    in_place: bool,
) -> Result<Writes, (String, String)> {
    let mut out = Vec::new();
    for (k, value) in helm_params(keys, image) {
        match values_path(values, &k) {
            Ok(path) if in_place && value_at(values, &path).is_some() => {}
            Ok(path) => out.push((path, Created::Key { value })),
            Err(e) => return Err((k, e.to_string())),
        }
    }
    Ok(out)
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
) -> Result<Target, Refusal> {
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
        return Err(Refusal::NotRendered { file });
    };
    match order.iter().position(|f| f == current) {
        Some(from) if from <= at => Ok(Target::Values(file)),
        _ => Err(Refusal::ValuesBelow {
            file,
            current: current.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_target_reads_as_the_annotation_wrote_it() {
        let e = TargetError {
            written: "kustomization:../base".into(),
            why: Refusal::NotIncluded {
                dir: "apps/base".into(),
                path: "apps/web".into(),
            },
        };
        let want = "write-back target kustomization:../base resolves to apps/base, which the app's path apps/web does not include: Argo CD would not render it";
        assert_eq!(e.to_string(), want);
    }

    fn image(name: &str) -> UpdaterImage {
        UpdaterImage {
            alias: None,
            name: name.into(),
            constraint: None,
            policy: Default::default(),
            force_update: false,
            pull_secret: None,
            helm: None,
            kustomize_name: None,
            plugin: None,
        }
    }

    fn yaml(text: &str) -> Value {
        imagebump_yaml::json_documents(text).unwrap().remove(0)
    }

    fn path(keys: &[&str]) -> Vec<PathSeg> {
        keys.iter().map(|k| key(k)).collect()
    }

    fn name_tag() -> HelmKeys {
        HelmKeys::NameTag {
            name: "image.name".into(),
            tag: "image.tag".into(),
        }
    }

    #[test]
    fn a_kustomize_override_is_one_images_item_over_what_the_source_renders() {
        let effective = yaml("kustomize:\n  images: [\"web=r.io/web:1.0\"]\n");
        let keys = HelmKeys::default();
        let writes = override_writes(
            &image("r.io/web"),
            "web",
            &keys,
            &SourceKind::Kustomize,
            &effective,
        );
        assert_eq!(
            writes,
            [(
                path(&["kustomize", "images"]),
                Created::ListItem {
                    base: vec![Value::from("web=r.io/web:1.0")],
                    key: ItemKey::KustomizeImage("web".into()),
                    value: Template::Reference {
                        prefix: "web=r.io/web".into()
                    },
                }
            )]
        );
        // The same name: no `=`.
        let same = override_writes(
            &image("web"),
            "web",
            &keys,
            &SourceKind::Kustomize,
            &Value::Null,
        );
        let [(_, Created::ListItem { base, value, .. })] = &same[..] else {
            panic!("{same:?}")
        };
        assert!(base.is_empty());
        assert_eq!(
            *value,
            Template::Reference {
                prefix: "web".into()
            }
        );
    }

    #[test]
    fn a_helm_override_is_a_parameter_per_key_keyed_by_name() {
        let effective =
            yaml("helm:\n  parameters:\n  - {name: replicas, value: \"2\", forceString: true}\n");
        let writes = override_writes(
            &image("r.io/api"),
            "r.io/api",
            &name_tag(),
            &SourceKind::Helm,
            &effective,
        );
        let base = vec![serde_json::json!({"name": "replicas", "value": "2", "forcestring": true})];
        let item = |name: &str, value: Template| {
            (
                path(&["helm", "parameters"]),
                Created::ListItem {
                    base: base.clone(),
                    key: ItemKey::Field {
                        field: "name".into(),
                        value: name.into(),
                    },
                    value: Template::HelmParam {
                        name: name.into(),
                        value: Box::new(value),
                    },
                },
            )
        };
        assert_eq!(
            writes,
            [
                item("image.name", Template::Text("r.io/api".into())),
                item("image.tag", Template::Tag)
            ]
        );
    }

    #[test]
    fn a_plugin_override_is_an_env_variable_whatever_the_source_kind() {
        let effective = yaml("plugin:\n  env:\n  - {name: OTHER, value: x}\n");
        let mut img = image("r.io/job");
        img.plugin = Some(HelmKeys::Spec("IMAGE".into()));
        let writes = override_writes(
            &img,
            "r.io/job",
            &name_tag(),
            &SourceKind::Kustomize,
            &effective,
        );
        assert_eq!(
            writes,
            [(
                path(&["plugin", "env"]),
                Created::ListItem {
                    base: vec![serde_json::json!({"name": "OTHER", "value": "x"})],
                    key: ItemKey::Field {
                        field: "name".into(),
                        value: "IMAGE".into()
                    },
                    value: Template::EnvVar {
                        name: "IMAGE".into(),
                        value: Box::new(Template::Reference {
                            prefix: "r.io/job".into()
                        }),
                    },
                }
            )]
        );
    }

    #[test]
    fn a_kustomization_target_is_an_images_entry_renamed_only_when_the_image_differs() {
        let entry = |name: &str, new_name: Option<&str>| {
            vec![(
                path(&["images"]),
                Created::ListItem {
                    base: Vec::new(),
                    key: ItemKey::Field {
                        field: "name".into(),
                        value: name.into(),
                    },
                    value: Template::KustomizeEntry {
                        name: name.into(),
                        new_name: new_name.map(Into::into),
                    },
                },
            )]
        };
        assert_eq!(
            kustomization_writes("r.io/web", "web"),
            entry("web", Some("r.io/web"))
        );
        assert_eq!(
            kustomization_writes("r.io/web", "r.io/web"),
            entry("r.io/web", None)
        );
    }

    #[test]
    fn a_values_target_creates_the_keys_it_lacks_and_edits_those_it_holds_in_place() {
        let keys = name_tag();
        let created = |keys: &[&str], value: Template| (path(keys), Created::Key { value });
        let name = || Template::Text("r.io/web".into());
        // No such file yet: both keys, as nested mappings.
        assert_eq!(
            values_writes(&Value::Null, &keys, "r.io/web", false),
            Ok(vec![
                created(&["image", "name"], name()),
                created(&["image", "tag"], Template::Tag)
            ])
        );
        // The current value is in this file: its tag is edited there, its name created.
        let values = yaml("image:\n  tag: 1.0.0\n");
        assert_eq!(
            values_writes(&values, &keys, "r.io/web", true),
            Ok(vec![created(&["image", "name"], name())])
        );
        // Another file's value: both are written here.
        assert_eq!(
            values_writes(&values, &keys, "r.io/web", false).map(|w| w.len()),
            Ok(2)
        );
        // A scalar where the key needs a mapping: the key and why.
        let (k, _why) =
            values_writes(&yaml("image: r.io/web:1.0\n"), &keys, "r.io/web", false).unwrap_err();
        assert_eq!(k, "image.name");
    }
}
