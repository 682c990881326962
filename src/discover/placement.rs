//! Where each manifest image's new version goes, once every file is read: in place, in an
//! `images:` entry of each overlay that deploys it, or nowhere (an `images:` entry
//! overrides it). See [`super::kustomize::graph`] for the rules.

use crate::source::{jail, tree::Tree};
use arcstr::ArcStr;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::kustomize::graph::{join, AppLeaf, At, Graph, LeafEdit, Place, Rendered};
use super::kustomize::patches::{effects, replacement_targets, Container, Effect, Target, What};
use super::kustomize::Kustomization;
use super::workloads::{BadFieldPath, FieldSpec};
use super::{argo_apps, Discovery};
use crate::discover::vocab::{Created, Creation, ImageRef, ItemKey, Template};
use imagebump_model::config::{ImageField, ScanConfig, SharedBases};
use imagebump_model::name::{parse_name, same_repository};
use imagebump_model::Problem;
use imagebump_yaml::{Node, PathSeg};

/// The largest kustomize configuration or patch file read.
const MAX_CONFIGURATION_BYTES: u64 = 1 << 20;

/// The image field specs: `scan.imageFields`, then the `images:` field specs of every
/// kustomization's `configurations:` files.
pub fn field_specs(
    root: &Tree,
    scan: &ScanConfig,
    kustomizations: &[&Kustomization],
    problems: &mut Vec<Problem>,
) -> Vec<FieldSpec> {
    let mut specs = Vec::new();
    for f in &scan.image_fields {
        match FieldSpec::parse(f, false) {
            Ok(s) => specs.push(s),
            Err(e) => problems.push(Problem::config(format!("scan.imageFields: {e}"))),
        }
    }
    for k in kustomizations {
        for c in &k.configurations {
            let Some(file) = join(k.dir(), c) else {
                problems.push(Problem::at_file(
                    k.file(),
                    0,
                    0,
                    format!("configurations: {c} {}", crate::discover::OUTSIDE_TREE),
                ));
                continue;
            };
            match configuration(root, &file) {
                Ok(fields) => specs.extend(fields),
                Err(e) => problems.push(Problem::at_file(&file, 0, 0, e.to_string())),
            }
        }
    }
    specs.dedup();
    specs
}

/// Why a kustomize file placement reads (a configuration, a patch, a replacements file)
/// was not read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Tree(#[from] jail::Error),
    #[error("line {}: {}", .0.line, .0.reason())]
    Yaml(imagebump_yaml::ParseError),
    #[error(transparent)]
    Field(#[from] BadFieldPath),
}

/// A patch or replacements file that was not read, named with its role (`patch`,
/// `replacements`) and its path.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{role} {file}: {error}")]
pub struct ListedFileError {
    role: &'static str,
    file: String,
    error: ReadError,
}

/// The `images:` field specs of one kustomize configuration file.
fn configuration(root: &Tree, file: &str) -> Result<Vec<FieldSpec>, ReadError> {
    let path = root.resolve(file)?;
    let text = root.read(&path, MAX_CONFIGURATION_BYTES)?;
    let value: Value = imagebump_yaml::from_str(&text).map_err(ReadError::Yaml)?;
    let Some(images) = value.get("images").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    images
        .iter()
        .filter_map(|spec| {
            let field = |k: &str| spec.get(k).and_then(Value::as_str).map(str::to_string);
            Some(ImageField {
                kind: field("kind")?,
                group: field("group"),
                path: field("path")?,
            })
        })
        .map(|f| Ok(FieldSpec::parse(&f, true)?))
        .collect()
}

/// What placement keeps of a kustomization's text, for the plan to write its new `images:`
/// entries into.
pub enum KeptText {
    Text(ArcStr),
    /// The fingerprint of a text the one-pass reader read: the plan reads it again, and
    /// checks it is the same ([`super::SourceTexts::NeededOnly`]: 5,000 kustomizations' texts
    /// are not held to the end of discovery for the few that get entries).
    ReadAgain(imagebump_yaml::Fingerprint),
}

/// Kustomizations and the manifest images read so far.
#[derive(Default)]
pub struct Layout {
    kustomizations: Vec<Kustomization>,
    /// Kustomization texts, for the `images:` entries written into them.
    texts: BTreeMap<ArcStr, KeptText>,
    /// Indexes of manifest images in [`Discovery::refs`], with whether kustomize's
    /// `images:` apply to them and the container they are the image of.
    workloads: Vec<(usize, bool, Option<Container>)>,
}

impl Layout {
    /// Room for `n` kustomizations, the number the walk listed: the list is held to the end
    /// of discovery, its peak (5,000 at 10,000 apps; grown by doubling it held 8,192).
    pub fn with_kustomizations(n: usize) -> Layout {
        Layout {
            kustomizations: Vec::with_capacity(n),
            ..Layout::default()
        }
    }

    pub fn add_kustomization(&mut self, k: Kustomization, text: KeptText) {
        self.texts.insert(ArcStr::clone(k.file()), text);
        self.kustomizations.push(k);
    }

    pub fn add_workload(&mut self, index: usize, kustomizable: bool, c: Option<Container>) {
        self.workloads.push((index, kustomizable, c));
    }

    /// Decide where every manifest image goes; an image that moves in several overlays
    /// becomes one reference per overlay.
    /// Returns what the Argo CD apps' paths render, when the repository has Applications.
    pub fn place(
        self,
        tree: &Tree,
        out: &mut Discovery,
        argo: &argo_apps::ArgoResources,
        shared: SharedBases,
    ) -> Option<Rendering> {
        let no_entries = self.kustomizations.iter().all(|k| k.images.is_empty());
        if self.workloads.is_empty() && no_entries {
            return None;
        }
        let effects = patch_effects(tree, &self.kustomizations, &mut out.problems);
        let mut kustomizations = self.kustomizations;
        replacement_files(tree, &mut kustomizations, &mut out.problems);
        let mut workloads = self.workloads;
        patch_values(&effects, &mut workloads, out);
        let mut graph = Graph::new(kustomizations, &mut out.notes);
        for (dir, index, e) in effects {
            graph.add_effects(&dir, index, e);
        }
        let leaves = app_leaves(argo);
        // Kept past placement only for the apps argocd-image-updater configures.
        let any_app = !leaves.is_empty() && argo.configures_images();
        for leaf in leaves {
            graph.add_app(leaf);
        }
        // Kept before placement replaces the references: where each image is written.
        let kept = kept_workloads(&workloads, any_app, out);
        if graph.has_patches() {
            overridden_entries(&graph, &workloads, out);
        }
        unmatched_entries(&graph, tree, out);
        place_each(&graph, &workloads, shared, &self.texts, out);
        any_app.then(|| Rendering {
            graph,
            workloads: kept,
            by_leaf: std::cell::OnceCell::new(),
        })
    }
}

/// Where each manifest image goes (`Graph::place`), written into its reference; an image
/// that moves in several overlays becomes one reference per overlay, in one pass at the end.
fn place_each(
    graph: &Graph,
    workloads: &[(usize, bool, Option<Container>)],
    shared: SharedBases,
    texts: &BTreeMap<ArcStr, KeptText>,
    out: &mut Discovery,
) {
    // Each reference that becomes one per overlay, by its index: replaced once all are
    // placed, in one pass.
    let mut expanded: std::collections::BTreeMap<usize, Vec<ImageRef>> = Default::default();
    // By leaf and name deployed: the images the leaf renders from files of its own.
    let mut rendered: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (index, kustomizable, container) in workloads {
        let (index, kustomizable) = (*index, *kustomizable);
        let Some(r) = out.refs.get_mut(index) else {
            continue;
        };
        let at = At {
            file: &r.file,
            line: r.line,
        };
        match graph.place(at, &r.written, kustomizable, shared, container.as_ref()) {
            Place::InPlace { image, unit } => {
                if let (Some(unit), true) = (&unit, kustomizable) {
                    let name = image.clone().unwrap_or_else(|| r.written.to_string());
                    rendered
                        .entry((unit.clone(), name))
                        .or_default()
                        .push(index);
                }
                if let Some(name) = image.and_then(|i| parse_name(&i).ok()) {
                    r.image = name.into();
                }
                if let Some(unit) = unit {
                    r.unit = unit.into();
                }
            }
            Place::Overridden { by } => {
                r.unmanaged = Some(by);
            }
            Place::PerLeaf(edits) if r.is_managed() => {
                let each: Vec<ImageRef> = edits.iter().map(|e| per_leaf(r, e)).collect();
                let (sources, fingerprints) = (&mut out.sources, &mut out.fingerprints);
                for e in &edits {
                    keep_text(texts, &e.file, sources, fingerprints);
                }
                expanded.insert(index, each);
            }
            Place::PerLeaf(_) => {}
        }
    }
    no_entry_over_rendered(&mut expanded, &rendered, out);
    out.refs.replace(expanded);
}

/// The kustomizable manifest images, where each is written, for the Argo CD apps
/// argocd-image-updater configures (`any_app`); none otherwise.
fn kept_workloads(
    workloads: &[(usize, bool, Option<Container>)],
    any_app: bool,
    out: &Discovery,
) -> Vec<Workload> {
    (workloads.iter())
        .filter(|(_, kustomizable, _)| any_app && *kustomizable)
        .filter_map(|(index, _, container)| {
            let r = out.refs.get(*index)?;
            Some(Workload {
                file: ArcStr::clone(&r.file),
                line: r.line,
                written: ArcStr::clone(&r.written),
                container: container.clone(),
            })
        })
        .collect()
}

/// A manifest image kustomize's `images:` apply to, where it is written.
struct Workload {
    file: ArcStr,
    line: u32,
    written: ArcStr,
    container: Option<Container>,
}

/// The include graph and the manifest images, kept for the Argo CD apps: where each app's
/// path reads an image's version from.
pub struct Rendering {
    graph: Graph,
    workloads: Vec<Workload>,
    /// By leaf, what it renders of each workload (its index), made at the first question:
    /// one walk per workload, as placement's, whatever the number of apps asking.
    by_leaf: std::cell::OnceCell<BTreeMap<String, Vec<(usize, Rendered)>>>,
}

/// Where an app's path reads an image's version from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The manifest image at this place.
    Manifest { file: ArcStr, line: u32 },
    /// The patch or `images:` entry at this line sets it last.
    Set { file: ArcStr, line: u32 },
}

impl Rendering {
    /// The other leaves that render the kustomization directory `dir`, besides `leaf`.
    pub fn other_leaves(&self, dir: &str, leaf: &str) -> Vec<String> {
        let (Some(dir), Some(leaf)) = (join(".", dir), join(".", leaf)) else {
            return Vec::new();
        };
        let mut out = self.graph.leaves_of(&dir);
        out.remove(&leaf);
        out.into_iter().collect()
    }

    /// The line the `images:` entry holding `line` of the kustomization `file` starts on.
    pub fn entry_start(&self, file: &str, line: u32) -> Option<u32> {
        let dir = file.rsplit_once('/').map_or(".", |(dir, _)| dir);
        let k = (self.graph.kustomization(dir)).filter(|k| k.file().as_str() == file)?;
        k.images
            .iter()
            .rev()
            .find(|e| e.line <= line)
            .map(|e| e.line)
    }

    /// Where the path `leaf` reads the version of the image its containers name as
    /// `named` says (the name the leaf's own `images:` entries see, and the name after
    /// them): for each manifest image that reaches the leaf so named, in the order read,
    /// what sets it last (each place once).
    pub fn sources_in(&self, leaf: &str, named: &dyn Fn(&str, &str) -> bool) -> Vec<Source> {
        let Some(leaf) = join(".", leaf) else {
            return Vec::new();
        };
        let by_leaf = self.by_leaf.get_or_init(|| self.walk_all());
        let mut out = Vec::new();
        for (i, r) in by_leaf.get(&leaf).into_iter().flatten() {
            let Some(w) = self
                .workloads
                .get(*i)
                .filter(|_| named(&r.at_leaf, &r.name))
            else {
                continue;
            };
            let source = match &r.by {
                Some((file, line)) => Source::Set {
                    file: ArcStr::clone(file),
                    line: *line,
                },
                None => Source::Manifest {
                    file: ArcStr::clone(&w.file),
                    line: w.line,
                },
            };
            if !out.contains(&source) {
                out.push(source);
            }
        }
        out
    }

    /// What every leaf renders of every workload, in the workloads' order.
    fn walk_all(&self) -> BTreeMap<String, Vec<(usize, Rendered)>> {
        let mut out: BTreeMap<String, Vec<(usize, Rendered)>> = BTreeMap::new();
        for (i, w) in self.workloads.iter().enumerate() {
            let at = At {
                file: &w.file,
                line: w.line,
            };
            let seen = (self.graph).rendered_by_leaf(at, &w.written, w.container.as_ref());
            for (leaf, r) in seen {
                out.entry(leaf).or_default().push((i, r));
            }
        }
        out
    }
}

/// The text of the kustomization `file` an entry is written into, for the plan.
fn keep_text(
    texts: &BTreeMap<ArcStr, KeptText>,
    file: &str,
    sources: &mut BTreeMap<ArcStr, ArcStr>,
    fingerprints: &mut super::fingerprints::Fingerprints,
) {
    match texts.get(file) {
        Some(KeptText::Text(text)) => {
            sources.insert(file.into(), text.clone());
        }
        // Read again by the plan, which checks it is the same text.
        Some(KeptText::ReadAgain(print)) => {
            fingerprints.insert(file.into(), *print);
        }
        None => {}
    }
}

/// An `images:` entry rewrites every container of its name in the leaf, also the images of
/// that name the leaf renders from files of its own (`rendered`: a patch of the leaf, its
/// own resources). An entry written for a shared base's image is what those render from
/// then on: at the same version and under the same policy they move with it and are not
/// edited themselves; at another version, under another policy (pinned) or left alone, the
/// entry would move them beyond what their own update says, so it is not written, and the
/// base's image is listed there with the reason.
fn no_entry_over_rendered(
    expanded: &mut BTreeMap<usize, Vec<ImageRef>>,
    rendered: &BTreeMap<(String, String), Vec<usize>>,
    out: &mut Discovery,
) {
    // Left alone by imagebump (pinned, ignored): an entry must not move them either. As
    // they are before this pass marks any.
    let left_alone: std::collections::BTreeSet<usize> = (rendered.values().flatten())
        .filter(|i| out.refs.get(**i).is_some_and(|o| !o.is_managed()))
        .copied()
        .collect();
    for r in expanded.values_mut().flatten() {
        let key = (r.unit.to_string(), r.written.to_string());
        let Some(own) = rendered.get(&key) else {
            continue;
        };
        let entry_file = r.writes_to().unwrap_or_default().to_string();
        let version = |o: &ImageRef| (o.tag.clone(), o.digest.clone());
        let other = (own.iter())
            .filter_map(|i| Some((i, out.refs.get(*i)?)))
            .find(|(i, o)| {
                left_alone.contains(i) || version(o) != version(r) || o.policy != r.policy
            })
            .map(|(_, o)| o);
        if let Some(o) = other {
            let why = format!(
                "an images: entry for {} in {entry_file} would also rewrite {}:{}",
                r.written, o.file, o.line
            );
            r.unmanaged = Some(crate::discover::vocab::Unmanaged::Why(why.into()));
            let extra = r.extra_mut();
            extra.creations.clear();
            extra.writes_to = None;
            continue;
        }
        if !r.is_managed() {
            continue;
        }
        let why = format!(
            "moves with the images: entry for {} in {entry_file}",
            r.written
        );
        let why: ArcStr = why.into();
        for i in own {
            if let Some(o) = out.refs.get_mut(*i) {
                o.unmanaged.get_or_insert_with(|| {
                    crate::discover::vocab::Unmanaged::Why(ArcStr::clone(&why))
                });
            }
        }
    }
}

/// Marks the `images:` entries whose every image a patch above writes again: editing them
/// would change no render.
fn overridden_entries(
    graph: &Graph,
    workloads: &[(usize, bool, Option<Container>)],
    out: &mut Discovery,
) {
    // The kustomizable images by the name written, with their file and container.
    let mut by_name: BTreeMap<ArcStr, Vec<(ArcStr, u32, &Container)>> = BTreeMap::new();
    for (index, kustomizable, container) in workloads {
        let (Some(r), Some(c), true) = (out.refs.get(*index), container, *kustomizable) else {
            continue;
        };
        let list = by_name.entry(ArcStr::clone(&r.written)).or_default();
        list.push((ArcStr::clone(&r.file), r.line, c));
    }
    for r in out.refs.iter_mut_from(0) {
        if r.kind != crate::discover::vocab::RefKind::Kustomize || !r.is_managed() {
            continue;
        }
        let dir = r.file.rsplit_once('/').map_or(".", |(dir, _)| dir);
        let Some(k) = graph.kustomization(dir).filter(|k| *k.file() == *r.file) else {
            continue;
        };
        // The entry is the last one that starts at or before the reference's line.
        let Some(entry) = k.images.iter().rev().find(|e| e.line <= r.line) else {
            continue;
        };
        let Some(list) = by_name.get(entry.name.as_str()) else {
            continue;
        };
        let workloads = (list.iter()).map(|(file, line, c)| {
            let at = At { file, line: *line };
            (at, *c)
        });
        if let Some(by) = graph.entry_overridden(dir, workloads) {
            r.unmanaged = Some(by);
        }
    }
}

/// The `images:` entries whose kustomization renders no image of their name: kustomize
/// applies them to nothing, so an edit there would change no render. Only where
/// everything the kustomization renders is known (`Graph::rendered_files`), the name is
/// no entry's `newName` (which may rename an image to it on the way), and the
/// kustomization lists resources and is no component.
fn unmatched_entries(graph: &Graph, tree: &Tree, out: &mut Discovery) {
    let mut names_by_file: foldhash::HashMap<&str, Vec<&str>> = Default::default();
    let mut suspects = Vec::new();
    for (i, r) in out.refs.iter().enumerate() {
        if r.kind != crate::discover::vocab::RefKind::Kustomize {
            names_by_file.entry(&r.file).or_default().push(&r.written);
        } else if r.is_managed() {
            suspects.push(i);
        }
    }
    let renamed: foldhash::HashSet<&str> = (graph.kustomizations().iter())
        .flat_map(|k| k.images.iter().filter_map(|e| e.new_name.as_deref()))
        .collect();
    // A component's entries apply to what the kustomizations listing it render.
    let components: BTreeSet<String> = (graph.kustomizations().iter())
        .flat_map(|k| k.components.iter().filter_map(|c| join(k.dir(), c)))
        .collect();
    let is_file = |f: &str| tree.is_file(f);
    let mut rendered: BTreeMap<&str, Option<Vec<&str>>> = BTreeMap::new();
    let mut unmatched = Vec::new();
    for i in suspects {
        let Some(r) = out.refs.get(i) else { continue };
        let dir = r.file.rsplit_once('/').map_or(".", |(dir, _)| dir);
        // A kustomization that lists no resources is a list of versions by itself.
        let Some(k) = (graph.kustomization(dir))
            .filter(|k| *k.file() == *r.file && !k.includes.is_empty())
            .filter(|k| !components.contains(k.dir()))
        else {
            continue;
        };
        let Some(entry) = k.images.iter().rev().find(|e| e.line <= r.line) else {
            continue;
        };
        let name = entry.name.as_str();
        // Most entries name an image of a file their kustomization lists itself.
        let own_files = (k.includes.iter()).filter_map(|(i, _)| join(k.dir(), i));
        let own_names = own_files.filter_map(|f| names_by_file.get(f.as_str()));
        if own_names.flatten().any(|n| *n == name) {
            continue;
        }
        let names = rendered.entry(k.dir()).or_insert_with(|| {
            let files = graph.rendered_files(k.dir(), &is_file)?;
            let names = files.iter().filter_map(|f| names_by_file.get(f.as_str()));
            Some(names.flatten().copied().collect())
        });
        let Some(names) = names else { continue };
        // Compared as text before as names.
        if names.contains(&name) || renamed.contains(name) {
            continue;
        }
        let same = |n: &&str| same_repository(n, name);
        if names.iter().any(same) || renamed.iter().any(same) {
            continue;
        }
        let why = format!("no image {dir} renders is named {name}: the entry changes nothing");
        unmatched.push((i, why));
    }
    for (i, why) in unmatched {
        if let Some(r) = out.refs.get_mut(i) {
            r.unmanaged = Some(crate::discover::vocab::Unmanaged::Why(why.into()));
        }
    }
}

/// The images patches write (in patch files and inline): kustomize's `images:` entries
/// apply to them where the patch renders, and each is the image of the container of the
/// rendered resource it reaches (a base's, found by the patch's target and the container's
/// name or place), so that the patches after it and above it are weighed against it.
fn patch_values(
    effects: &[(String, usize, Vec<Effect>)],
    workloads: &mut [(usize, bool, Option<Container>)],
    out: &mut Discovery,
) {
    let writes: BTreeMap<(&str, u32), &Effect> = (effects.iter())
        .flat_map(|(_, _, list)| list)
        .filter(|e| !e.what.removes())
        .map(|e| ((e.file.as_str(), e.line), e))
        .collect();
    if writes.is_empty() {
        return;
    }
    let refs = &out.refs;
    let written_by = |index: &usize| {
        let r = refs.get(*index)?;
        writes.get(&(r.file.as_str(), r.line)).copied()
    };
    // Each patch value (its place in `workloads`) with the container it is the image of
    // (`None`: not rendered at all).
    let resolved: Vec<(usize, Option<Container>)> = {
        let bases: Vec<&Container> = (workloads.iter())
            .filter(|(index, _, _)| written_by(index).is_none())
            .filter_map(|(_, _, c)| c.as_ref())
            .collect();
        (workloads.iter().enumerate())
            .filter_map(|(at, (index, _, own))| {
                let e = written_by(index)?;
                if e.what == What::NotRendered {
                    return Some((at, None));
                }
                let base = bases.iter().find(|c| e.reaches(c)).map(|c| (*c).clone());
                Some((at, base.or_else(|| own.clone()).or_else(|| e.container())))
            })
            .collect()
    };
    for (at, container) in resolved {
        let Some(w) = workloads.get_mut(at) else {
            continue;
        };
        (w.1, w.2) = (container.is_some(), container);
        // A directive's image: listed, never edited, and no leaf's entry weighs it.
        if let (false, Some(r)) = (w.1, out.refs.get_mut(w.0)) {
            let why = "not rendered: its container item carries a $patch directive";
            r.unmanaged = Some(crate::discover::vocab::Unmanaged::Why(
                arcstr::ArcStr::from(why),
            ));
        }
    }
}

/// What every kustomization's patches do: `(directory, index of the patch, effects)`.
/// Patch files are read here, once every kustomization is known, and once for each target
/// they are listed with however many kustomizations list them (only their effects are
/// kept); one that cannot be read is reported.
fn patch_effects(
    tree: &Tree,
    kustomizations: &[Kustomization],
    problems: &mut Vec<Problem>,
) -> Vec<(String, usize, Vec<Effect>)> {
    type Key = (String, Option<(Option<Box<str>>, Option<Box<str>>)>);
    let mut read: BTreeMap<Key, Result<Vec<Effect>, ListedFileError>> = BTreeMap::new();
    let mut out = Vec::new();
    for k in kustomizations {
        for (index, p) in k.patches.iter().enumerate() {
            let effects = match p.path.as_deref().map(|path| join(k.dir(), path)) {
                None => p.inline.to_vec(),
                Some(None) => continue,
                Some(Some(file)) => {
                    let target = p.target.as_ref().map(|t| (t.kind.clone(), t.name.clone()));
                    let found = read
                        .entry((file, target))
                        .or_insert_with_key(|(file, _)| patch_file(tree, file, p.target.as_ref()));
                    match found {
                        Ok(e) => e.clone(),
                        Err(e) => {
                            let e = e.to_string();
                            problems.push(Problem::at_file(k.file(), p.line as usize, 0, e));
                            continue;
                        }
                    }
                }
            };
            if !effects.is_empty() {
                out.push((k.dir().to_string(), index, effects));
            }
        }
    }
    out
}

/// Reads the `replacements:` files of every kustomization into its replacements; one that
/// cannot be read is reported.
fn replacement_files(
    tree: &Tree,
    kustomizations: &mut [Kustomization],
    problems: &mut Vec<Problem>,
) {
    for k in kustomizations
        .iter_mut()
        .filter(|k| !k.replacement_files.is_empty())
    {
        let mut all = k.replacements.to_vec();
        for file in k.replacement_files.iter().filter_map(|f| join(k.dir(), f)) {
            match replacement_file(tree, &file) {
                Ok(effects) => all.extend(effects),
                Err(e) => problems.push(Problem::at_file(k.file(), 0, 0, e.to_string())),
            }
        }
        k.replacements = all.into_boxed_slice();
    }
}

/// The container images the replacements of one file (one replacement, or a list of them)
/// copy a value into.
fn replacement_file(tree: &Tree, file: &str) -> Result<Vec<Effect>, ListedFileError> {
    let Located { text, docs } = located(tree, file).map_err(|error| ListedFileError {
        role: "replacements",
        file: file.to_string(),
        error,
    })?;
    let name = ArcStr::from(file);
    let lines = imagebump_yaml::LineIndex::new(&text);
    let line_of = |offset: usize| crate::discover::vocab::saturating_u32(lines.line_col(offset).0);
    let mut out = Vec::new();
    for root in docs.iter().filter_map(|d| d.root.as_ref()) {
        let items = match root {
            Node::Seq { items, .. } => items.as_slice(),
            one => std::slice::from_ref(one),
        };
        out.extend(replacement_targets(items, &name, &line_of));
    }
    Ok(out)
}

/// The effects of the documents of one patch file, listed with `target`.
fn patch_file(
    tree: &Tree,
    file: &str,
    target: Option<&Target>,
) -> Result<Vec<Effect>, ListedFileError> {
    let Located { text, docs } = located(tree, file).map_err(|error| ListedFileError {
        role: "patch",
        file: file.to_string(),
        error,
    })?;
    let name = ArcStr::from(file);
    let lines = imagebump_yaml::LineIndex::new(&text);
    let line_of = |offset: usize| crate::discover::vocab::saturating_u32(lines.line_col(offset).0);
    Ok((docs.iter())
        .filter_map(|d| d.root.as_ref())
        .flat_map(|root| effects(root, target, &name, &line_of))
        .collect())
}

/// A file of the tree read and parsed.
struct Located {
    text: String,
    docs: Vec<imagebump_yaml::Doc>,
}

/// `file` of `tree`, read (at most [`MAX_CONFIGURATION_BYTES`]) and parsed.
fn located(tree: &Tree, file: &str) -> Result<Located, ReadError> {
    let path = tree.resolve(file)?;
    let text = tree.read(&path, MAX_CONFIGURATION_BYTES)?;
    let docs = imagebump_yaml::parse_located(&text).map_err(ReadError::Yaml)?;
    Ok(Located { text, docs })
}

/// The reference of `r` in one overlay: the overlay's `images:` entry for it, created
/// (or completed with a `newTag`) when it moves.
fn per_leaf(r: &ImageRef, e: &LeafEdit) -> ImageRef {
    let mut out = r.clone();
    out.slots.clear();
    out.unit = e.dir.as_str().into();
    out.extra_mut().writes_to = Some(e.file.clone());
    if *e.image != *r.written {
        if let Ok(name) = parse_name(&e.image) {
            out.image = name.into();
            out.written = e.image.as_str().into();
        }
    }
    out.extra_mut().creations = vec![Creation {
        file: e.file.clone(),
        doc: 0,
        path: vec![PathSeg::Key("images".into())],
        what: Created::ListItem {
            base: Vec::new(),
            key: ItemKey::Field {
                field: "name".into(),
                value: e.name.clone(),
            },
            value: Template::KustomizeEntry {
                name: e.name.clone(),
                new_name: e.new_name.clone(),
            },
        },
    }];
    out
}

/// The in-repository paths of Argo CD Applications, with the image names their
/// `kustomize.images` set.
/// What an Application source's `kustomize.patches` (inline `patch:` texts) do to the
/// resources its path renders. A patch given by `path:` is not read.
fn app_patches(source: &Value, file: &str) -> Vec<Effect> {
    let Some(list) = source
        .pointer("/kustomize/patches")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let file = ArcStr::from(file);
    let mut out = Vec::new();
    for p in list {
        let Some(text) = p.get("patch").and_then(Value::as_str) else {
            continue;
        };
        let field = |k: &str| {
            (p.pointer(&format!("/target/{k}")))
                .and_then(Value::as_str)
                .map(Box::from)
        };
        let selects = ["labelSelector", "annotationSelector"];
        let by_selector = selects
            .iter()
            .any(|k| p.pointer(&format!("/target/{k}")).is_some());
        let target = p.get("target").map(|_| Target {
            kind: field("kind"),
            name: field("name").filter(|_| !by_selector),
        });
        let docs = imagebump_yaml::parse_located(text).unwrap_or_default();
        let roots = docs.iter().filter_map(|d| d.root.as_ref());
        out.extend(roots.flat_map(|root| effects(root, target.as_ref(), &file, &|_| 0)));
    }
    out
}

fn app_leaves(argo: &argo_apps::ArgoResources) -> Vec<AppLeaf> {
    let mut out = Vec::new();
    for app in &argo.apps {
        for source in &app.sources {
            let Some(dir) = source.path.as_deref() else {
                continue;
            };
            let names = source
                .value
                .pointer("/kustomize/images")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .filter_map(imagebump_argocd::app::parse_kustomize_image)
                .map(|i| i.old_name.unwrap_or(i.new_name))
                .collect();
            out.push(AppLeaf {
                dir: dir.to_string(),
                file: app.file.clone(),
                names,
                patches: app_patches(&source.value, &app.file),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unread_files_are_named_with_their_role_and_line() {
        let yaml = imagebump_yaml::ParseError {
            line: 3,
            column: 1,
            message: "did not find expected key".into(),
        };
        let e = ListedFileError {
            role: "patch",
            file: "apps/web/patch.yaml".into(),
            error: ReadError::Yaml(yaml),
        };
        let want = "patch apps/web/patch.yaml: line 3: not valid YAML: did not find expected key";
        assert_eq!(e.to_string(), want);
    }
}
