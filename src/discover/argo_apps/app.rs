//! One Application: its argocd-image-updater configuration, its sources' state (override
//! files, what Argo CD renders), the files below its paths, and which references it leaves
//! alone.

use super::{clean_dir, in_dir, lexical, Scan, SourceState};
use crate::discover::vocab::{Created, ImageRef, ItemKey};
use crate::source::tree::Tree;
use imagebump_argocd::image_updater::ImageUpdater;
use imagebump_argocd::{self as argocd, App, Source, SourceKind, UpdaterConfig, UpdaterImage};
use imagebump_model::name::parse_name;
use imagebump_yaml::PathSeg;
use serde_json::Value;
use std::collections::BTreeMap;

impl Scan<'_> {
    pub(super) fn app(
        &mut self,
        app: &App,
        updaters: &[ImageUpdater],
        broken: &[argocd::BrokenUpdater],
    ) {
        let app_key = app.key(self.namespace);
        let id = (app.file.clone(), app.doc, app.name.clone());
        self.template = self
            .generated
            .get(&id)
            .map(|t| (app.file.clone(), app.doc, t.clone()));
        let config = configuration(app, updaters, broken);
        let states: Vec<SourceState> = app
            .sources
            .iter()
            .map(|s| self.source_state(app, s))
            .collect();
        for st in &states {
            self.own_files(st, &app_key, &states);
            self.values_string(app, &app_key, st);
        }
        let config = match config {
            Ok(c) => c,
            Err(e) => {
                // Its settings (constraints, filters) are unknown: leave the app alone
                // rather than update it under the wrong policy.
                let p = self.at_app(app, format!("Application {app_key}: {e}"));
                self.out.problems.push(p);
                self.leave_alone(&app_key, |_| {
                    "its argocd-image-updater configuration is invalid (see the errors)".into()
                });
                return;
            }
        };
        let Some(c) = config else {
            for st in &states {
                self.plain_images(app, &app_key, st);
            }
            return;
        };
        self.notes(app, &app_key, &c);
        self.managed_before = (self.out.refs.iter())
            .filter(|r| r.app() == Some(app_key.as_str()) && r.is_managed())
            .map(|r| (arcstr::ArcStr::clone(&r.file), r.line, r.column))
            .collect();
        let elsewhere = self.leave_unlisted_alone(&app_key, &c);
        for img in &c.images {
            self.managed_image(app, &app_key, &c, img, &states);
        }
        self.name_what_renders(&app_key, &elsewhere);
        self.refuse_collisions(&app_key);
    }

    /// As with argocd-image-updater, only the images `c` lists are updated; other
    /// occurrences in the app's files are left alone, and said so. Returns why a listed
    /// image's other occurrences are left alone.
    fn leave_unlisted_alone(&mut self, app_key: &str, c: &UpdaterConfig) -> String {
        let listed: Vec<imagebump_model::name::ImageName> = c
            .images
            .iter()
            .filter_map(|i| parse_name(&i.name).ok())
            .collect();
        let elsewhere = format!(
            "not what Argo CD renders for app {app_key}: {} sets this image elsewhere",
            c.origin
        );
        self.leave_alone(app_key, |r| {
            if listed.contains(&r.image) {
                elsewhere.clone()
            } else {
                format!(
                    "app {app_key} is configured by {}, which does not list this image",
                    c.origin
                )
            }
        });
        elsewhere
    }

    /// A listed image's other occurrences, left alone with `elsewhere`, name the place the
    /// app renders it from (the reference argocd-image-updater's configuration manages).
    pub(super) fn name_what_renders(&mut self, app_key: &str, elsewhere: &str) {
        let rendered = std::mem::take(&mut self.rendered_at);
        for r in self.out.refs.iter_mut() {
            let left = r
                .unmanaged
                .as_ref()
                .is_some_and(|u| u.to_string() == elsewhere);
            if r.app() != Some(app_key) || !left {
                continue;
            }
            if let Some((_, at)) = rendered.iter().find(|(i, _)| *i == *r.image) {
                let why = format!("not what Argo CD renders for app {app_key}: it renders {at}");
                r.unmanaged = Some(why.into());
            }
        }
    }

    /// Mark the app's managed references unmanaged, with `why`.
    pub(super) fn leave_alone(&mut self, app_key: &str, why: impl Fn(&ImageRef) -> String) {
        for r in &mut self.out.refs {
            if r.app() == Some(app_key) && r.unmanaged.is_none() {
                r.unmanaged = Some(why(r).into());
            }
        }
    }

    /// Two configured images that read or write the same value (e.g. two aliases on the
    /// same Helm keys) cannot both be right: both are reported and left alone. (The app's
    /// other references were left alone before, so its managed ones are the configured.)
    pub(super) fn refuse_collisions(&mut self, app_key: &str) {
        let places = |r: &ImageRef| -> Vec<(String, Vec<PathSeg>)> {
            let mut p: Vec<(String, Vec<PathSeg>)> = r
                .slots
                .iter()
                .map(|s| (r.file.to_string(), s.path.to_vec()))
                .collect();
            p.extend(r.creations().iter().map(|c| {
                let mut path = c.path.clone();
                // A list item is its own place: the item of its key (a Helm parameter's
                // name, a kustomize image's name), not the whole list.
                match &c.what {
                    Created::ListItem {
                        key: ItemKey::Field { value, .. },
                        ..
                    } => path.push(PathSeg::Key(value.clone())),
                    Created::ListItem {
                        key: ItemKey::KustomizeImage(name),
                        ..
                    } => path.push(PathSeg::Key(format!("image {name}"))),
                    _ => {}
                }
                (c.file.clone(), path)
            }));
            p
        };
        let managed: Vec<(usize, &ImageRef)> = self
            .out
            .refs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.is_managed() && r.app() == Some(app_key))
            .collect();
        let mut clashes = Vec::new();
        let mut rest = managed.as_slice();
        while let Some((&(i, ri), later)) = rest.split_first() {
            for &(j, rj) in later {
                let (a, b) = (places(ri), places(rj));
                if a.iter().any(|p| b.contains(p)) {
                    clashes.push((i, j));
                }
            }
            rest = later;
        }
        for (i, j) in clashes {
            let (Some(r), Some(other)) = (self.out.refs.get(i), self.out.refs.get(j)) else {
                continue;
            };
            let (a, b) = (r.written.clone(), other.written.clone());
            self.out.problems.push(r.problem(format!("app {app_key}: images {a} and {b} are configured for the same value; neither is updated (give each its own helm.image-name/-tag)")));
            for k in [i, j] {
                if let Some(r) = self.out.refs.get_mut(k) {
                    r.unmanaged = Some(
                        format!("shares its value with another image of app {app_key}").into(),
                    );
                }
            }
        }
    }

    /// Settings that mean something else without a cluster are said, never ignored.
    pub(super) fn notes(&mut self, app: &App, app_key: &str, c: &UpdaterConfig) {
        for n in &c.notes {
            let p = self.at_app(app, format!("Application {app_key} ({}): {n}", c.origin));
            if !self.out.notes.contains(&p) {
                self.out.notes.push(p);
            }
        }
    }

    pub(super) fn source_state<'s>(&mut self, app: &App, source: &'s Source) -> SourceState<'s> {
        let dir = source
            .path
            .as_deref()
            .and_then(|p| match self.root.resolve(&clean_dir(p)) {
                Ok(dir) => self.root.is_dir(&dir).then_some(dir),
                Err(e) => {
                    let p = self.at_app(
                        app,
                        format!("Application {}: source path {e}: not read", app.name),
                    );
                    self.out.problems.push(p);
                    None
                }
            });
        let mut overrides = Vec::new();
        let mut own_override = None;
        let mut broken = false;
        if let Some(d) = &dir {
            let own = in_dir(d, &app.override_file_name(self.namespace));
            for name in [in_dir(d, ".argocd-source.yaml"), own.clone()] {
                if self.load(&name) {
                    overrides.push(name);
                } else if self.root.exists(&name) {
                    broken = true;
                }
            }
            own_override = Some(own);
        }
        let null = Value::Null;
        let patches: Vec<&Value> = overrides
            .iter()
            .map(|o| {
                self.files
                    .get(o)
                    .and_then(|l| l.json.first())
                    .unwrap_or(&null)
            })
            .collect();
        let effective = argocd::merge_patch::effective_source(&source.value, &patches);
        let kind = match (&source.kind, &dir) {
            (SourceKind::Unknown, Some(d)) => kind_from_files(self.root, d),
            (k, _) => k.clone(),
        };
        SourceState {
            source,
            dir,
            kind,
            overrides,
            own_override,
            effective,
            broken,
        }
    }

    /// Files below the source's path, and values files it names, belong to the app.
    pub(super) fn own_files(&mut self, st: &SourceState, app_key: &str, all: &[SourceState]) {
        let prefix = st.dir.as_ref().map(|d| {
            if d.is_empty() {
                String::new()
            } else {
                format!("{d}/")
            }
        });
        let named = value_files(st, all);
        for r in &mut self.out.refs {
            // A reference belongs to the app when its file is below the app's path, or
            // when the app's path is where its new value goes (an overlay of a shared
            // base, or the one leaf deploying it).
            let below = prefix.as_deref().is_some_and(|p| {
                r.file.starts_with(p) || r.writes_to().is_some_and(|w| w.starts_with(p))
            }) || st.dir.as_deref() == Some(&*r.unit);
            if (below || named.iter().any(|f| *f == *r.file)) && r.app().is_none() {
                r.unit = app_key.into();
                r.extra_mut().app = Some(app_key.to_string());
            }
        }
    }
}

/// The source an image's settings point at: a plugin's, kustomize's or Helm's, else the
/// first.
pub(super) fn source_for<'s, 'a>(
    img: &UpdaterImage,
    states: &'s [SourceState<'a>],
) -> Option<&'s SourceState<'a>> {
    let kustomize = |s: &&SourceState| s.kind == SourceKind::Kustomize;
    let helm = |s: &&SourceState| s.kind == SourceKind::Helm;
    let st = if img.plugin.is_some() {
        states.iter().find(|s| s.kind == SourceKind::Plugin)
    } else if img.kustomize_name.is_some() {
        states.iter().find(kustomize)
    } else if img.helm.is_some() {
        states.iter().find(helm)
    } else {
        states.iter().find(|s| kustomize(s) || helm(s))
    };
    st.or(states.first())
}

/// The argocd-image-updater configuration of `app`: the ImageUpdater that selects it, else
/// its annotations; `Err` when it cannot be read.
pub(super) fn configuration(
    app: &App,
    updaters: &[ImageUpdater],
    broken: &[argocd::BrokenUpdater],
) -> Result<Option<UpdaterConfig>, String> {
    // An invalid ImageUpdater that could select the app may be the configuration meant
    // for it: its settings are unknown, so nothing else (another ImageUpdater, the
    // annotations, the app's own images) decides for it.
    let invalid: Vec<String> = (broken.iter())
        .filter(|b| b.meant_for(app))
        .map(|b| format!("{} could select it but is invalid: {}", b.label, b.why))
        .collect();
    match argocd::image_updater::config_for(app, updaters) {
        _ if !invalid.is_empty() => Err(invalid.join("; ")),
        Ok(Some(c)) => Ok(Some(c)),
        Ok(None) => argocd::annotations::from_annotations(app).map_err(|e| e.to_string()).map(|c| {
            c.map(|mut c| {
                if !updaters.is_empty() {
                    c.notes.push("no ImageUpdater in the repository selects this app; its annotations are read as argocd-image-updater 0.x reads them".into());
                }
                c
            })
        }),
        Err(e) => Err(e.to_string()),
    }
}

/// The values files each app's sources read (its chart's `values.yaml`, its `valueFiles`,
/// `$ref/…` ones included, as the Applications write them), with the apps reading them.
pub(super) fn values_readers(
    apps: &[App],
    namespace: &str,
) -> BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut out: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for app in apps {
        for source in &app.sources {
            let dir = source.path.as_deref().map(clean_dir);
            let mut files: Vec<String> = dir.iter().map(|d| in_dir(d, "values.yaml")).collect();
            let listed = source
                .value
                .pointer("/helm/valueFiles")
                .and_then(Value::as_array);
            for f in listed.into_iter().flatten().filter_map(Value::as_str) {
                let file = match f.strip_prefix('$') {
                    Some(rest) => {
                        let (name, path) = rest.split_once('/').unwrap_or((rest, ""));
                        let other =
                            (app.sources.iter()).find(|s| s.ref_name.as_deref() == Some(name));
                        let base = other.and_then(|o| o.path.as_deref()).map(clean_dir);
                        base.map(|b| in_dir(&b, &clean_dir(path)))
                    }
                    None => dir.as_ref().map(|d| in_dir(d, &clean_dir(f))),
                };
                files.extend(file);
            }
            for f in files {
                out.entry(lexical(&f))
                    .or_default()
                    .insert(app.key(namespace));
            }
        }
    }
    out
}

/// A source with a path but no tool block is what its files say.
pub(super) fn kind_from_files(root: &Tree, dir: &str) -> SourceKind {
    let has = |n: &str| root.is_file(&in_dir(dir, n));
    if has("kustomization.yaml") || has("kustomization.yml") || has("Kustomization") {
        SourceKind::Kustomize
    } else if has("Chart.yaml") {
        SourceKind::Helm
    } else {
        SourceKind::Unknown
    }
}

/// Values files a Helm source renders: its `valueFiles` (relative to its path, or
/// `$ref/...` into another source), else `values.yaml` in its path.
pub(super) fn value_files(st: &SourceState, all: &[SourceState]) -> Vec<String> {
    let listed: Vec<String> = st
        .effective
        .pointer("/helm/valueFiles")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    for f in listed {
        if let Some(rest) = f.strip_prefix('$') {
            let (name, path) = rest.split_once('/').unwrap_or((rest, ""));
            if let Some(other) = all
                .iter()
                .find(|s| s.source.ref_name.as_deref() == Some(name))
            {
                let base = other
                    .source
                    .path
                    .as_deref()
                    .map(clean_dir)
                    .unwrap_or_default();
                out.push(in_dir(&base, &clean_dir(path)));
            }
        } else if let Some(d) = &st.dir {
            out.push(in_dir(d, &clean_dir(&f)));
        }
    }
    if out.is_empty() && st.kind == SourceKind::Helm {
        if let Some(d) = &st.dir {
            out.push(in_dir(d, "values.yaml"));
        }
    }
    // One name per file, the one discovery gives it (`apps/web/../common/values.yaml` is
    // `apps/common/values.yaml`).
    out.iter().map(|f| lexical(f)).collect()
}
