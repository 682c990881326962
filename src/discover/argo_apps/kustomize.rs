//! A kustomize source's current version of an image: what its path renders (the include
//! graph and the references placement made), and the kustomization a write-back targets.

use super::helm::with_index;
use super::own_images::{kustomize_name_of, kustomize_prefix};
use super::write_back::Refusal;
use super::{in_dir, key, Current, Now, Scan, SourceState};
use crate::discover::vocab::{ImageRef, RefKind, SlotFormat};
use imagebump_argocd::App;
use imagebump_model::name::same_repository;
use imagebump_yaml::PathSeg;
use serde_json::Value;

/// Why the version a kustomize path renders is not one reference imagebump can edit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum RenderedRefError {
    #[error(
        "the app's path {dir} renders the version {file}:{line} sets, which imagebump cannot edit"
    )]
    Uneditable {
        dir: String,
        file: String,
        line: u32,
    },
    /// `places`: each `file:line (tag)`, comma-separated.
    #[error("the app's path {dir} renders it at several versions ({places}); argocd-image-updater's one value would move them all: set them to one version first")]
    SeveralVersions { dir: String, places: String },
}

impl Scan<'_> {
    /// The kustomization file in `dir` (`kustomization.yaml`, `.yml` or `Kustomization`, as
    /// kustomize looks for it), if there is one.
    pub(super) fn existing_kustomization(&self, dir: &str) -> Option<String> {
        ["kustomization.yaml", "kustomization.yml", "Kustomization"]
            .into_iter()
            .map(|n| in_dir(dir, n))
            .find(|f| self.root.is_file(f))
    }

    /// The kustomization file of the write-back directory `kdir` of the app path `dir`; `Err`
    /// names `kdir` and says why Argo CD would not render what is written there: it has no
    /// kustomization (nothing is created), or `dir` does not include it.
    pub(super) fn kustomization_target(
        &mut self,
        dir: &str,
        kdir: &str,
        current: &str,
    ) -> Result<String, Refusal> {
        let shown = if kdir.is_empty() { "." } else { kdir }.to_string();
        let Some(file) = self.existing_kustomization(kdir) else {
            return Err(Refusal::NoKustomization { dir: shown });
        };
        if !self.rendered_dirs(dir).contains(kdir) {
            let path = if dir.is_empty() { "." } else { dir }.to_string();
            return Err(Refusal::NotIncluded { dir: shown, path });
        }
        // Its entry sets the version only over what it renders: the value read as current
        // must be in it (a manifest, patch or entry of a kustomization it includes), not in
        // a patch above it or Argo CD's own kustomize.images.
        if !self.renders_file(kdir, current) {
            let current = current.to_string();
            return Err(Refusal::EntryBelow {
                dir: shown,
                current,
            });
        }
        // A directory other paths render too moves them all: only where the operator
        // chose to edit shared bases (`scan.sharedBases: in-place`).
        let others = (self.rendering.as_ref()).map_or_else(Vec::new, |r| r.other_leaves(kdir, dir));
        if !others.is_empty() && self.shared != imagebump_model::config::SharedBases::InPlace {
            let others = others.join(", ");
            return Err(Refusal::SharedDir { dir: shown, others });
        }
        Ok(file)
    }

    /// Kustomize: the app's rendered `kustomize.images`; else what its path renders (the
    /// manifest, patch or `images:` entry that sets the version last); else an `images:`
    /// entry of a kustomization it includes, the nearest first.
    pub(super) fn kustomize_current(
        &mut self,
        app: &App,
        st: &SourceState,
        kname: &str,
        image: &str,
    ) -> Option<Now> {
        let (file, doc, base) = self.holder(app, st, &["kustomize", "images"]);
        let list = self.list(&file, doc, &base);
        if let Some((i, v)) = list.iter().enumerate().find(|(_, v)| {
            v.as_str()
                .is_some_and(|s| same_repository(&kustomize_name_of(s), kname))
        }) {
            let prefix = v.as_str().map(kustomize_prefix).unwrap_or_default();
            return Some(Now::At(Current {
                file,
                doc,
                at: with_index(&base, i, &[]),
                format: SlotFormat::Reference {
                    name: prefix.into(),
                },
                kind: RefKind::ArgoKustomizeImage,
                repository: None,
            }));
        }
        let dir = st.dir.clone()?;
        match self.rendered_ref(&dir, kname, image) {
            Ok(Some(r)) => return Some(Now::Found(r)),
            Err(why) => return Some(Now::Unknown(why.to_string())),
            Ok(None) => {}
        }
        let kfile = self.existing_kustomization(&dir)?;
        if !self.load(&kfile) {
            return None;
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(c) = self.entry_current(&dir, &kfile, (kname, image), &mut seen) {
            return Some(Now::At(c));
        }
        // Every manifest image kustomize's `images:` apply to was followed above: one they do
        // not apply to (a custom resource's field) is not what the write-back moves.
        None
    }

    /// The reference discovery made where the path `dir` reads the version of the image
    /// its containers name `kname` (before the path's own `images:` entries) or `image`
    /// (after them), taken out of the list: the caller makes it the app's. `Err` when the
    /// path renders the image at two versions: one value cannot be reported as both.
    pub(super) fn rendered_ref(
        &mut self,
        dir: &str,
        kname: &str,
        image: &str,
    ) -> Result<Option<ImageRef>, RenderedRefError> {
        let named = |at_leaf: &str, name: &str| {
            same_repository(at_leaf, kname) || same_repository(name, image)
        };
        let Some(rendering) = self.rendering.as_ref() else {
            return Ok(None);
        };
        let mut found: Vec<usize> = Vec::new();
        for source in rendering.sources_in(dir, &named) {
            match self.ref_at(rendering, dir, &source) {
                Some(i) if !found.contains(&i) => found.push(i),
                Some(_) => {}
                None => {
                    let (crate::discover::placement::Source::Manifest { file, line }
                    | crate::discover::placement::Source::Set { file, line }) = source;
                    let (dir, file) = (dir.to_string(), file.to_string());
                    return Err(RenderedRefError::Uneditable { dir, file, line });
                }
            }
        }
        let refs: Vec<&ImageRef> = found.iter().filter_map(|i| self.out.refs.get(*i)).collect();
        let version = |r: &ImageRef| (r.tag.clone(), r.digest.clone());
        if let Some((first, rest)) = refs.split_first() {
            if rest.iter().any(|r| version(r) != version(first)) {
                let places: Vec<String> = (refs.iter())
                    .map(|r| {
                        format!(
                            "{}:{} ({})",
                            r.file,
                            r.line,
                            r.tag.as_deref().unwrap_or("no tag")
                        )
                    })
                    .collect();
                let (dir, places) = (dir.to_string(), places.join(", "));
                return Err(RenderedRefError::SeveralVersions { dir, places });
            }
        }
        let Some(index) = found.first().copied() else {
            return Ok(None);
        };
        let r = self.out.refs.get(index).cloned();
        let mut i = 0usize;
        self.out.refs.retain(|_| {
            let keep = i != index;
            i = i.saturating_add(1);
            keep
        });
        Ok(r)
    }

    /// The index of the reference at `source`, as the path `dir` renders it: the manifest
    /// image, the patch's image, or the value of the `images:` entry starting there.
    pub(super) fn ref_at(
        &self,
        rendering: &crate::discover::placement::Rendering,
        dir: &str,
        source: &crate::discover::placement::Source,
    ) -> Option<usize> {
        use crate::discover::placement::Source;
        let leaf = in_dir(dir, "");
        let at = |r: &ImageRef| match source {
            Source::Manifest { file, line } => r.file == *file && r.line == *line,
            Source::Set { file, line } => {
                r.file == *file
                    && (r.line == *line
                        || (r.kind == RefKind::Kustomize
                            && rendering.entry_start(file, r.line) == Some(*line)))
            }
        };
        // A value several leaves render is one reference per leaf: this leaf's, else the
        // one edited in place.
        let this_leaf = |r: &ImageRef| r.writes_to().is_some_and(|w| w.starts_with(&leaf));
        let in_place = |r: &ImageRef| r.writes_to().is_none();
        let refs = || self.out.refs.iter().enumerate();
        refs()
            .find(|(_, r)| at(r) && this_leaf(r))
            .or_else(|| refs().find(|(_, r)| at(r) && in_place(r)))
            .map(|(i, _)| i)
    }

    /// The `images:` entry that sets the version of the image named `kname` (or renamed to
    /// `image` by its `newName`) in the kustomization `kfile` of `dir`, else in those it
    /// includes, the nearest first: where the version is when no manifest here renders
    /// the image (a remote base).
    pub(super) fn entry_current(
        &mut self,
        dir: &str,
        kfile: &str,
        (kname, image): (&str, &str),
        seen: &mut std::collections::BTreeSet<String>,
    ) -> Option<Current> {
        // A cycle, or a pathological chain, ends the search.
        if !seen.insert(kfile.to_string()) || seen.len() > 64 {
            return None;
        }
        let entries = self.list(kfile, 0, &[key("images")]);
        let text = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).map(str::to_string);
        let entry = entries.iter().rposition(|e| {
            let by_name = text(e, "name").is_some_and(|n| same_repository(&n, kname));
            let by_new = text(e, "newName").is_some_and(|n| same_repository(&n, image));
            (by_name || by_new) && e.get("newTag").is_some()
        });
        if let Some(i) = entry {
            return Some(Current {
                file: kfile.to_string(),
                doc: 0,
                at: vec![key("images"), PathSeg::Index(i), key("newTag")],
                format: SlotFormat::Tag,
                kind: RefKind::Kustomize,
                repository: None,
            });
        }
        for sub in self.included_dirs(dir, kfile) {
            let Some(k) = self.existing_kustomization(&sub).filter(|k| self.load(k)) else {
                continue;
            };
            if let Some(c) = self.entry_current(&sub, &k, (kname, image), seen) {
                return Some(c);
            }
        }
        None
    }

    /// The directories the kustomization `kfile` of `dir` includes (`components`,
    /// `resources`, `bases`), in this repository, in that order.
    pub(super) fn included_dirs(&self, dir: &str, kfile: &str) -> Vec<String> {
        let mut includes = self.list(kfile, 0, &[key("components")]);
        includes.extend(self.list(kfile, 0, &[key("resources")]));
        includes.extend(self.list(kfile, 0, &[key("bases")]));
        let base = if dir.is_empty() { "." } else { dir };
        (includes.iter().filter_map(Value::as_str))
            .filter_map(|res| crate::discover::kustomize::graph::join(base, res))
            .filter(|t| !(t.ends_with(".yaml") || t.ends_with(".yml")))
            .map(|t| if t == "." { String::new() } else { t })
            .filter(|t| self.root.is_dir(t))
            .collect()
    }

    /// The kustomization directories the path `dir` renders: itself, and those it includes,
    /// directly or through others.
    pub(super) fn rendered_dirs(&mut self, dir: &str) -> std::collections::BTreeSet<String> {
        let mut seen = std::collections::BTreeSet::new();
        let mut todo = vec![dir.to_string()];
        while let Some(d) = todo.pop() {
            // A pathological include graph ends the walk.
            if seen.len() > 256 || !seen.insert(d.clone()) {
                continue;
            }
            let Some(k) = self.existing_kustomization(&d).filter(|k| self.load(k)) else {
                continue;
            };
            todo.extend(self.included_dirs(&d, &k));
        }
        seen
    }

    /// Whether the kustomization directory `kdir` renders `file`: a file of a directory it
    /// renders, or one such a kustomization lists (a resource or a patch).
    pub(super) fn renders_file(&mut self, kdir: &str, file: &str) -> bool {
        let dirs = self.rendered_dirs(kdir);
        if dirs.contains(file.rsplit_once('/').map_or("", |(d, _)| d)) {
            return true;
        }
        dirs.iter().any(|d| {
            let Some(k) = self.existing_kustomization(d) else {
                return false;
            };
            let listed = |at: &[&str], field: Option<&str>| -> Vec<String> {
                let path: Vec<PathSeg> = at.iter().map(|k| key(k)).collect();
                (self.list(&k, 0, &path).iter())
                    .filter_map(|v| match field {
                        Some(f) => v.get(f).and_then(Value::as_str),
                        None => v.as_str(),
                    })
                    .map(str::to_string)
                    .collect()
            };
            let mut written = listed(&["resources"], None);
            written.extend(listed(&["patchesStrategicMerge"], None));
            written.extend(listed(&["patches"], Some("path")));
            written.extend(listed(&["patchesJson6902"], Some("path")));
            let base = if d.is_empty() { "." } else { d.as_str() };
            written
                .iter()
                .filter_map(|w| crate::discover::kustomize::graph::join(base, w))
                .any(|w| w == file)
        })
    }
}
