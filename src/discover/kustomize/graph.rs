//! The kustomize include graph, and where a manifest image's new version goes.
//!
//! Kustomize renders a leaf (a kustomization nothing else includes, or the path of an Argo
//! CD Application) from its bases, applying the patches (strategic-merge, then JSON 6902),
//! the `images:` entries and then the `replacements:` of every kustomization on the way up,
//! lowest first. So, for an image in a manifest file (or a patch), each leaf that includes
//! the file sees one of:
//!
//! - a `$patch: delete` of its resource, or of its container (also a `$patch: replace` that
//!   keeps other containers, a JSON 6902 `remove`): the leaf renders nothing of it;
//! - a patch, an `images:` entry (or the Application's `kustomize.images`) or a replacement
//!   that sets its tag or digest: the manifest's own tag does not reach that leaf, the last
//!   of them on the way up is the reference;
//! - the manifest's tag (maybe under another name, through `newName`-only entries).
//!
//! When at most one leaf sees the manifest's tag, the manifest is edited in place. When two
//! or more do (a base shared by `overlays/dev` and `overlays/prod`), each of them gets an
//! `images:` entry of its own, so environments move independently
//! (`scan.sharedBases: in-place` edits the base instead).

use std::collections::{BTreeMap, BTreeSet};

use super::patches::{Container, Effect};
use super::{Entry, Kustomization};
use imagebump_model::config::SharedBases;
use imagebump_model::Problem;

/// The most include chains followed from one file: a safety net against pathological
/// repositories, far above any real layout.
const MAX_CHAINS: usize = 512;

/// An Argo CD Application's source path in this repository: a leaf of its own, with the
/// image names its `kustomize.images` override.
#[derive(Debug, Clone)]
pub struct AppLeaf {
    pub dir: String,
    /// The Application's file.
    pub file: String,
    pub names: Vec<String>,
    /// What its `kustomize.patches` do: Argo CD adds them to the path's kustomization,
    /// after its own patches and before its `images:`.
    pub patches: Vec<Effect>,
}

/// Which kustomizations include what.
#[derive(Debug, Default)]
pub struct Graph {
    /// As discovery read them, looked up through `by_dir`: hashed in by value, 5,000 of
    /// them at 10,000 apps were copied into a table of twice as many slots, at the peak of
    /// discovery.
    kustomizations: Vec<Kustomization>,
    /// The maps are only looked up (several times for every manifest image placed), never
    /// walked: hashed (foldhash, as discovery's names), not sorted. By directory: an index
    /// into `kustomizations` (the last read of a directory).
    by_dir: foldhash::HashMap<String, usize>,
    /// A file or kustomization directory → the kustomizations that include it (indexes),
    /// in the order of their directories.
    parents: foldhash::HashMap<String, Vec<usize>>,
    apps: foldhash::HashMap<String, AppLeaf>,
    /// By kustomization directory: what its patches do, each with the index of its patch
    /// in the kustomization's list.
    effects: foldhash::HashMap<String, Vec<(usize, Effect)>>,
}

/// Where the new version of one manifest image goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// Edit the manifest. `image` is the name the registry is asked for when a `newName`
    /// entry renames it; `unit` the one leaf that deploys it (else the file's directory).
    InPlace {
        image: Option<String>,
        unit: Option<String>,
    },
    /// No leaf deploys the manifest's tag; `by` says what sets it (the `FILE:LINE` of an
    /// `images:` entry, or an Argo CD Application's `kustomize.images`).
    Overridden {
        by: crate::discover::vocab::Unmanaged,
    },
    /// An `images:` entry in each leaf.
    PerLeaf(Vec<LeafEdit>),
}

/// The `images:` entry to write (or complete) in one leaf kustomization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafEdit {
    pub dir: String,
    pub file: String,
    /// The image's name as it reaches the leaf (the entry's `name`).
    pub name: String,
    /// The leaf's existing `newName`-only entry for it: replaced, keeping `newName`.
    pub new_name: Option<String>,
    /// The name deployed (and looked up).
    pub image: String,
}

/// What one leaf sees of an image, following one include chain.
enum Seen {
    /// A `$patch: delete` removes the resource on the way up.
    Deleted(crate::discover::vocab::Unmanaged),
    Overridden(crate::discover::vocab::Unmanaged),
    Base(LeafEdit),
}

impl Graph {
    /// The graph of `kustomizations`; remote and outside-the-tree includes are noted and
    /// skipped.
    pub fn new(kustomizations: Vec<Kustomization>, notes: &mut Vec<Problem>) -> Graph {
        let mut by_dir: foldhash::HashMap<String, usize> = Default::default();
        by_dir.reserve(kustomizations.len());
        for (i, k) in kustomizations.iter().enumerate() {
            by_dir.insert(k.dir().to_string(), i);
        }
        let mut parents: foldhash::HashMap<String, Vec<usize>> = Default::default();
        // In the order of their directories, so that each file's parents are.
        let mut sorted: Vec<usize> = by_dir.values().copied().collect();
        let dir = |i: &usize| kustomizations.get(*i).map(Kustomization::dir);
        sorted.sort_unstable_by(|a, b| dir(a).cmp(&dir(b)));
        for (i, k) in sorted
            .iter()
            .filter_map(|&i| Some((i, kustomizations.get(i)?)))
        {
            for (include, line) in &k.includes {
                if is_remote(include) {
                    notes.push(Problem::at_file(
                        &k.file,
                        *line as usize,
                        0,
                        format!("remote base {include} is not read: images only it deploys are not seen"),
                    ));
                    continue;
                }
                match join(k.dir(), include) {
                    Some(target) => parents.entry(target).or_default().push(i),
                    None => notes.push(Problem::at_file(
                        &k.file,
                        *line as usize,
                        0,
                        format!("{include} {}", crate::discover::OUTSIDE_TREE),
                    )),
                }
            }
            // A patch renders where the kustomization that lists it does (an inline one is
            // in the kustomization's own file).
            let patch_files = k.patches.iter().filter_map(|p| p.path.as_deref());
            let patch_files = patch_files.filter_map(|p| join(k.dir(), p));
            for file in patch_files.chain([k.file.to_string()]) {
                let list = parents.entry(file).or_default();
                if !list.contains(&i) {
                    list.push(i);
                }
            }
        }
        Graph {
            kustomizations,
            by_dir,
            parents,
            apps: Default::default(),
            effects: Default::default(),
        }
    }

    /// What the patch at `index` in the kustomization of `dir` does.
    pub fn add_effects(&mut self, dir: &str, index: usize, effects: Vec<Effect>) {
        let list = self.effects.entry(dir.to_string()).or_default();
        list.extend(effects.into_iter().map(|e| (index, e)));
    }

    /// Argo CD Application paths: leaves even when another kustomization includes them.
    pub fn add_app(&mut self, leaf: AppLeaf) {
        if let Some(dir) = join(".", &leaf.dir) {
            self.apps.insert(dir.clone(), AppLeaf { dir, ..leaf });
        }
    }

    pub fn kustomizations(&self) -> &[Kustomization] {
        &self.kustomizations
    }

    pub fn kustomization(&self, dir: &str) -> Option<&Kustomization> {
        self.kustomizations.get(*self.by_dir.get(dir)?)
    }

    /// Every chain of kustomization directories from `file` up to a leaf, lowest first.
    fn chains(&self, file: &str) -> Vec<Vec<&str>> {
        let mut out = Vec::new();
        let mut stack: Vec<(&str, Vec<&str>)> = vec![(file, Vec::new())];
        while let Some((node, chain)) = stack.pop() {
            if out.len() >= MAX_CHAINS {
                break;
            }
            let parents = self.parents.get(node).map(Vec::as_slice).unwrap_or(&[]);
            let is_leaf = !chain.is_empty() && (parents.is_empty() || self.apps.contains_key(node));
            if is_leaf {
                out.push(chain.clone());
            }
            let parents = parents.iter().filter_map(|&i| self.kustomizations.get(i));
            for p in parents.map(Kustomization::dir) {
                if chain.contains(&p) {
                    continue;
                }
                let mut next = chain.clone();
                next.push(p);
                stack.push((p, next));
            }
        }
        out
    }

    /// Where the new version of the image written `written` at `at` goes; `container`:
    /// the resource and container it is the image of, for the patches that set or delete
    /// it. `kustomizable`: kustomize's `images:` entries apply to it.
    pub fn place(
        &self,
        at: At<'_>,
        written: &str,
        kustomizable: bool,
        shared: SharedBases,
        container: Option<&Container>,
    ) -> Place {
        let file = at.file;
        let chains = self.chains(file);
        if !kustomizable {
            let all: BTreeSet<&str> = chains.iter().filter_map(|c| c.last().copied()).collect();
            let only = (all.len() == 1)
                .then(|| all.iter().next().map(|l| l.to_string()))
                .flatten();
            return Place::InPlace {
                image: None,
                unit: only,
            };
        }
        let mut overridden = None;
        let mut deleted = None;
        // The leaves that include the file, whatever they do with it: a file two of them
        // include is shared, even where one deletes or overrides its resource.
        let mut rendered: BTreeSet<&str> = BTreeSet::new();
        let mut leaves: BTreeMap<&str, LeafEdit> = BTreeMap::new();
        for chain in &chains {
            let leaf = chain.last().copied().unwrap_or_default();
            match self.follow(chain, at, written, container) {
                Seen::Deleted(by) => {
                    rendered.insert(leaf);
                    deleted.get_or_insert(by);
                }
                Seen::Overridden(by) => {
                    rendered.insert(leaf);
                    overridden.get_or_insert(by);
                }
                Seen::Base(edit) => {
                    rendered.insert(leaf);
                    leaves.entry(leaf).or_insert(edit);
                }
            }
        }
        if leaves.is_empty() {
            return match overridden.or(deleted) {
                Some(by) => Place::Overridden { by },
                None => Place::InPlace {
                    image: None,
                    unit: None,
                },
            };
        }
        let only = (rendered.len() == 1)
            .then(|| rendered.iter().next().map(|l| l.to_string()))
            .flatten();
        // A file that two or more leaves render is shared: it is never edited for one of
        // them (unless the user asked for in-place edits).
        if rendered.len() == 1 || shared == SharedBases::InPlace {
            // Looked up under the name the leaves deploy, when they agree on one.
            let names: BTreeSet<&str> = leaves.values().map(|l| l.image.as_str()).collect();
            let image = (names.len() == 1)
                .then(|| names.into_iter().next())
                .flatten();
            return Place::InPlace {
                image: image.filter(|i| *i != written).map(str::to_string),
                unit: only,
            };
        }
        Place::PerLeaf(leaves.into_values().collect())
    }

    /// What the patches of the kustomization `dir` do to `container`, in the order
    /// kustomize applies them: only those listed after the patch `at` is in when it is one
    /// of them (a patch does not patch itself).
    fn patched(&self, dir: &str, at: At<'_>, container: &Container) -> Option<&Effect> {
        let effects = self.effects.get(dir)?;
        let own = self.kustomization(dir).and_then(|k| own_patch(k, at));
        let after = |i: &usize| own.is_none_or(|own| *i > own);
        let reaching = effects
            .iter()
            .filter(|(i, e)| after(i) && e.reaches(container));
        // A removal wins; else the last patch that writes the image is the one rendered.
        let mut last = None;
        for (_, e) in reaching {
            if e.what.removes() {
                return Some(e);
            }
            last = Some(e);
        }
        last
    }

    /// Some patch or replacement at all: without one, no `images:` entry needs
    /// [`Graph::entry_overridden`].
    pub fn has_patches(&self) -> bool {
        !self.effects.is_empty() || (self.kustomizations.iter()).any(|k| !k.replacements.is_empty())
    }

    /// What a patch above the kustomization `dir` writes over its `images:` entry: the
    /// last such patch when every container the entry rewrites (`workloads`: files and
    /// containers of the images it names) has its image written by a patch above `dir` in
    /// every leaf; `None` when one of them still renders the entry's value.
    pub fn entry_overridden<'w>(
        &self,
        dir: &str,
        workloads: impl Iterator<Item = (At<'w>, &'w Container)>,
    ) -> Option<crate::discover::vocab::Unmanaged> {
        let mut by = None;
        for (at, c) in workloads {
            for chain in self.chains(at.file) {
                let Some(level) = chain.iter().position(|d| *d == dir) else {
                    continue;
                };
                let above = chain.get(level.saturating_add(1)..).unwrap_or_default();
                // Replacements apply after the kustomization's own entries, patches before.
                let replaced_at = |d: &str| self.kustomization(d).and_then(|k| replaced(k, c));
                let last = (above.iter().rev())
                    .find_map(|d| replaced_at(d).or_else(|| self.patched(d, at, c)))
                    .or_else(|| replaced_at(dir));
                let e = last?;
                by = Some(crate::discover::vocab::Unmanaged::OverriddenBy {
                    file: arcstr::ArcStr::clone(&e.file),
                    line: e.line,
                });
            }
        }
        by
    }

    /// Apply the patches and `images:` entries of `chain` (lowest first) to the image
    /// named `written` in `file`. What sets its version last is what the leaf renders.
    fn follow<'a>(
        &'a self,
        chain: &[&str],
        at: At<'_>,
        written: &'a str,
        container: Option<&Container>,
    ) -> Seen {
        let (walk, at_leaf) = match self.walk_up(chain, at, written, container) {
            Ok(w) => w,
            Err(deleted) => return deleted,
        };
        let name = walk.name;
        let over = walk.over;
        let entry = walk.leaf_entry;
        let entry_name = at_leaf;
        let leaf = chain.last().copied().unwrap_or_default();
        let leaf_sets = entry.is_some_and(|e| e.sets_version);
        if let Some((app, e)) = (self.apps.get(leaf)).filter(|_| !leaf_sets).and_then(|a| {
            Some((
                a,
                container.and_then(|c| a.patches.iter().rev().find(|e| e.reaches(c)))?,
            ))
        }) {
            let by = match e.what.removes() {
                true => format!("deleted by {} (kustomize.patches)", app.file),
                false => format!(
                    "{}{} (kustomize.patches)",
                    crate::discover::vocab::OVERRIDDEN_BY,
                    app.file
                ),
            };
            return match e.what.removes() {
                true => Seen::Deleted(crate::discover::vocab::Unmanaged::Why(by.into())),
                false => Seen::Overridden(by.into()),
            };
        }
        if let Some(app) = (self.apps.get(leaf)).filter(|a| a.names.iter().any(|n| n == name)) {
            let by = format!(
                "{}{} (kustomize.images)",
                crate::discover::vocab::OVERRIDDEN_BY,
                app.file
            );
            return Seen::Overridden(by.into());
        }
        if let Some(by) = over {
            return Seen::Overridden(by);
        }
        let file = self
            .kustomization(leaf)
            .map_or_else(String::new, |k| k.file.to_string());
        Seen::Base(LeafEdit {
            dir: leaf.to_string(),
            file,
            name: entry.map_or(entry_name, |e: &Entry| &e.name).to_string(),
            new_name: entry
                .and_then(|e| e.new_name.as_deref())
                .map(str::to_string),
            image: name.to_string(),
        })
    }
}

/// What an Argo CD app's path renders for one manifest image: the name its container has
/// as the leaf's own `images:` entries see it and after them, and what sets its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub at_leaf: String,
    pub name: String,
    /// The `FILE:LINE` of the patch or `images:` entry that sets it last; `None`: the
    /// manifest's own value.
    pub by: Option<(arcstr::ArcStr, u32)>,
}

impl Graph {
    /// What each leaf that includes `at`'s file renders for the image written `written` there
    /// (`container`: its resource and container), by leaf, each through every include chain
    /// from `file` to it; nothing for a chain whose patch deletes the resource. A leaf's Argo
    /// CD `kustomize.images` are not applied: the caller reads them first.
    pub fn rendered_by_leaf(
        &self,
        at: At<'_>,
        written: &str,
        container: Option<&Container>,
    ) -> Vec<(String, Rendered)> {
        let mut out: Vec<(String, Rendered)> = Vec::new();
        for chain in self.chains(at.file) {
            let Some(leaf) = chain.last().copied() else {
                continue;
            };
            let Ok((walk, at_leaf)) = self.walk_up(&chain, at, written, container) else {
                continue;
            };
            let by = match walk.over {
                Some(crate::discover::vocab::Unmanaged::OverriddenBy { file, line }) => {
                    Some((file, line))
                }
                _ => None,
            };
            let r = Rendered {
                at_leaf: at_leaf.to_string(),
                name: walk.name.to_string(),
                by,
            };
            if !out.iter().any(|(l, o)| l == leaf && *o == r) {
                out.push((leaf.to_string(), r));
            }
        }
        out
    }

    /// Every file the kustomization of `dir` renders from (its own file, its patch files,
    /// the resources of everything it includes), when all of it is known: `None` when it
    /// includes a remote base, something outside the tree or not there, or a kustomization
    /// that renders more than its files (`opaque`). `is_file`: the tree's files.
    pub fn rendered_files(&self, dir: &str, is_file: &dyn Fn(&str) -> bool) -> Option<Vec<String>> {
        let mut files = Vec::new();
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut stack = vec![dir.to_string()];
        while let Some(d) = stack.pop() {
            if !seen.insert(d.clone()) {
                continue;
            }
            if seen.len() > MAX_RENDERED {
                return None;
            }
            let k = self.kustomization(&d).filter(|k| !k.opaque)?;
            files.push(k.file.to_string());
            let patch_files = k.patches.iter().filter_map(|p| p.path.as_deref());
            files.extend(patch_files.filter_map(|p| join(k.dir(), p)));
            for (include, _) in &k.includes {
                let target = Some(include).filter(|i| !is_remote(i));
                let target = target.and_then(|i| join(k.dir(), i))?;
                if self.by_dir.contains_key(&target) {
                    stack.push(target);
                } else if is_file(&target) {
                    files.push(target);
                } else {
                    return None;
                }
            }
        }
        Some(files)
    }

    /// The leaves that render the kustomization directory (or file) `node`, itself not
    /// counted.
    pub fn leaves_of(&self, node: &str) -> BTreeSet<String> {
        (self.chains(node).iter())
            .filter_map(|c| c.last().map(|l| l.to_string()))
            .collect()
    }

    /// Apply the patches and `images:` entries of `chain` (lowest first) to the image
    /// written `written` at `at`: the walk's end, and the name the leaf's own entries
    /// see. `Err`: a patch deletes the resource.
    fn walk_up<'a>(
        &'a self,
        chain: &[&str],
        at: At<'_>,
        written: &'a str,
        container: Option<&Container>,
    ) -> Result<(Walk<'a>, &'a str), Seen> {
        let mut walk = Walk {
            name: written,
            over: None,
            leaf_entry: None,
        };
        let mut at_leaf = written;
        for (i, dir) in chain.iter().enumerate() {
            let Some(k) = self.kustomization(dir) else {
                continue;
            };
            let top = i.saturating_add(1) == chain.len();
            if top {
                at_leaf = walk.name;
            }
            // A component's patches and `images:` apply first, then the kustomization's own.
            let components = (k.components.iter())
                .filter_map(|c| join(k.dir(), c))
                .filter_map(|c| self.kustomization(&c));
            for owner in components.chain([k]) {
                let leaf_own = top && std::ptr::eq(owner, k);
                self.level(owner, leaf_own, at, container, &mut walk)?;
            }
        }
        Ok((walk, at_leaf))
    }
}

/// The state of one walk up a chain.
struct Walk<'a> {
    /// The image's name so far (after `newName` renames).
    name: &'a str,
    /// What set its version last.
    over: Option<crate::discover::vocab::Unmanaged>,
    /// The leaf's own `images:` entry for it.
    leaf_entry: Option<&'a Entry>,
}

impl Graph {
    /// One kustomization (or component) on the way up: its patches, then its `images:`.
    /// `leaf_own`: it is the leaf itself. `Err`: a patch deletes the resource.
    fn level<'a>(
        &'a self,
        k: &'a Kustomization,
        leaf_own: bool,
        at: At<'_>,
        container: Option<&Container>,
        walk: &mut Walk<'a>,
    ) -> Result<(), Seen> {
        if let Some(e) = container.and_then(|c| self.patched(k.dir(), at, c)) {
            if e.what.removes() {
                let why = format!("deleted by {}:{} ({})", e.file, e.line, e.what.removal());
                return Err(Seen::Deleted(crate::discover::vocab::Unmanaged::Why(
                    why.into(),
                )));
            }
            walk.over = Some(crate::discover::vocab::Unmanaged::OverriddenBy {
                file: arcstr::ArcStr::clone(&e.file),
                line: e.line,
            });
        }
        // Each entry sees the name the entries before it left.
        for e in k.images.iter() {
            if *e.name != *walk.name {
                continue;
            }
            if e.sets_version {
                walk.over = Some(crate::discover::vocab::Unmanaged::OverriddenBy {
                    file: arcstr::ArcStr::clone(&k.file),
                    line: e.line,
                });
            }
            if leaf_own {
                walk.leaf_entry = Some(e);
            }
            if let Some(n) = &e.new_name {
                walk.name = n;
            }
        }
        // Replacements copy a value into the image after the `images:` entries.
        if let Some(e) = container.and_then(|c| replaced(k, c)) {
            walk.over = Some(crate::discover::vocab::Unmanaged::OverriddenBy {
                file: arcstr::ArcStr::clone(&e.file),
                line: e.line,
            });
        }
        Ok(())
    }
}

/// The last of the `replacements:` of `k` that writes the image of `c`.
fn replaced<'k>(k: &'k Kustomization, c: &Container) -> Option<&'k Effect> {
    k.replacements.iter().rev().find(|e| e.reaches(c))
}

/// Where an image is written: its file and line.
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    pub file: &'a str,
    pub line: u32,
}

/// The index of the patch of `k` that holds the image at `at`: the patch file `at` is in,
/// or the inline patch of the kustomization's own file whose text `at` is in (the one
/// that starts nearest before it: the lists are read in kustomize's order, not the file's).
fn own_patch(k: &Kustomization, at: At<'_>) -> Option<usize> {
    if at.file == k.file().as_str() {
        return (k.patches.iter().enumerate())
            .filter(|(_, p)| p.path.is_none() && p.line <= at.line)
            .max_by_key(|(_, p)| p.line)
            .map(|(i, _)| i);
    }
    (k.patches.iter())
        .position(|p| p.path.as_deref().and_then(|p| join(k.dir(), p)).as_deref() == Some(at.file))
}

/// A remote base: kustomize fetches it, imagebump does not.
/// The most kustomizations one render is followed through before its files count as
/// unknown.
const MAX_RENDERED: usize = 10_000;

fn is_remote(include: &str) -> bool {
    include.contains("://")
        || include.starts_with("git@")
        || include.starts_with("github.com/")
        || include.contains("?ref=")
        || include.contains(".git//")
}

/// `dir/include`, normalised (`./`, `..`, trailing `/`); `None` outside the tree.
pub fn join(dir: &str, include: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    let base = if include.starts_with('/') { "" } else { dir };
    for part in base.split('/').chain(include.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arcstr::ArcStr;

    fn k(dir: &str, includes: &[&str], images: &[(&str, Option<&str>, bool)]) -> Kustomization {
        Kustomization {
            includes: includes.iter().map(|&i| (i.into(), 3)).collect(),
            images: (0..)
                .zip(images)
                .map(|(index, (name, new_name, sets))| Entry {
                    line: 10 + index,
                    name: (*name).into(),
                    new_name: new_name.map(ArcStr::from),
                    sets_version: *sets,
                })
                .collect(),
            ..Kustomization::new(format!("{dir}/kustomization.yaml").into())
        }
    }

    fn at(file: &str) -> At<'_> {
        At { file, line: 0 }
    }

    fn graph(ks: Vec<Kustomization>) -> Graph {
        let mut notes = Vec::new();
        let g = Graph::new(ks, &mut notes);
        assert!(notes.is_empty(), "{notes:?}");
        g
    }

    #[test]
    fn a_kustomization_knows_its_directory() {
        let dir = |file: &str| Kustomization::new(file.into()).dir().to_string();
        assert_eq!(dir("kustomization.yaml"), ".");
        assert_eq!(Kustomization::default().dir(), ".");
        assert_eq!(dir("app/kustomization.yaml"), "app");
        assert_eq!(
            dir("apps/team1/app/overlays/prod/Kustomization"),
            "apps/team1/app/overlays/prod"
        );
        // Held for every kustomization until placement: growing it is a choice, made here.
        #[cfg(target_pointer_width = "64")]
        assert_eq!((size_of::<Kustomization>(), size_of::<Entry>()), (152, 24));
    }

    /// Two kustomization files in one directory: the one read last is the directory's,
    /// with its includes and entries; the other is not followed.
    #[test]
    fn the_last_kustomization_read_in_a_directory_is_the_one_followed() {
        let first = k("app", &["a.yaml"], &[("web", None, true)]);
        let last = Kustomization {
            includes: k("app", &["b.yaml"], &[]).includes,
            ..Kustomization::new("app/kustomization.yml".into())
        };
        let g = graph(vec![first, last]);
        assert_eq!(
            g.kustomization("app").map(|k| k.file.as_str()),
            Some("app/kustomization.yml")
        );
        let place = |file| g.place(at(file), "web", true, SharedBases::PerOverlay, None);
        let unit = |unit: Option<&str>| Place::InPlace {
            image: None,
            unit: unit.map(str::to_string),
        };
        assert_eq!(place("app/a.yaml"), unit(None));
        assert_eq!(place("app/b.yaml"), unit(Some("app")));
    }

    #[test]
    fn a_base_shared_by_two_overlays_gets_an_entry_per_overlay() {
        let g = graph(vec![
            k("app/base", &["deploy.yaml"], &[]),
            k("app/overlays/dev", &["../../base"], &[]),
            k(
                "app/overlays/prod",
                &["../../base/"],
                &[("web", Some("ghcr.io/acme/web"), false)],
            ),
        ]);
        let Place::PerLeaf(edits) = g.place(
            at("app/base/deploy.yaml"),
            "web",
            true,
            SharedBases::PerOverlay,
            None,
        ) else {
            panic!("not per leaf")
        };
        assert_eq!(edits.len(), 2);
        assert_eq!(edits[0].file, "app/overlays/dev/kustomization.yaml");
        assert_eq!(
            (edits[0].name.as_str(), edits[0].new_name.as_deref()),
            ("web", None)
        );
        assert_eq!(edits[1].image, "ghcr.io/acme/web");
        assert_eq!(edits[1].new_name.as_deref(), Some("ghcr.io/acme/web"));
        assert!(matches!(
            g.place(
                at("app/base/deploy.yaml"),
                "web",
                true,
                SharedBases::InPlace,
                None
            ),
            Place::InPlace { .. }
        ));
        // kustomize's images: do not reach a custom resource's `spec.image`.
        assert!(matches!(
            g.place(
                at("app/base/deploy.yaml"),
                "web",
                false,
                SharedBases::PerOverlay,
                None
            ),
            Place::InPlace { unit: None, .. }
        ));
    }

    #[test]
    fn an_entry_with_a_tag_overrides_the_manifest() {
        let g = graph(vec![
            k("base", &["d.yaml"], &[]),
            k("dev", &["../base"], &[("nginx", None, true)]),
            k("prod", &["../base"], &[]),
        ]);
        // Only prod renders the base's tag, but the base is shared: prod gets an entry.
        let Place::PerLeaf(edits) = g.place(
            at("base/d.yaml"),
            "nginx",
            true,
            SharedBases::PerOverlay,
            None,
        ) else {
            panic!("not per leaf")
        };
        assert_eq!(edits.len(), 1);
        assert_eq!(edits[0].file, "prod/kustomization.yaml");
        let g = graph(vec![
            k("base", &["d.yaml"], &[("nginx", None, true)]),
            k("dev", &["../base"], &[]),
        ]);
        assert_eq!(
            g.place(
                at("base/d.yaml"),
                "nginx",
                true,
                SharedBases::PerOverlay,
                None
            ),
            Place::Overridden {
                by: crate::discover::vocab::Unmanaged::OverriddenBy {
                    file: "base/kustomization.yaml".into(),
                    line: 10
                }
            }
        );
    }

    #[test]
    fn chains_of_overlays_and_app_paths() {
        let mut g = graph(vec![
            k(
                "base",
                &["d.yaml"],
                &[("api", Some("registry.example.com/api"), false)],
            ),
            k("mid", &["../base"], &[]),
            k("top", &["../mid"], &[]),
        ]);
        assert_eq!(
            g.place(
                at("base/d.yaml"),
                "api",
                true,
                SharedBases::PerOverlay,
                None
            ),
            Place::InPlace {
                image: Some("registry.example.com/api".into()),
                unit: Some("top".into())
            }
        );
        // An Application deploying `mid` makes it a leaf too.
        g.add_app(AppLeaf {
            dir: "./mid/".into(),
            file: "apps/mid.yaml".into(),
            names: Vec::new(),
            patches: Vec::new(),
        });
        let Place::PerLeaf(edits) = g.place(
            at("base/d.yaml"),
            "api",
            true,
            SharedBases::PerOverlay,
            None,
        ) else {
            panic!("not per leaf")
        };
        let dirs: Vec<&str> = edits.iter().map(|e| e.dir.as_str()).collect();
        assert_eq!(dirs, ["mid", "top"]);
        assert_eq!(edits[0].name, "registry.example.com/api");
    }

    #[test]
    fn remote_and_outside_includes_are_noted() {
        let mut notes = Vec::new();
        Graph::new(
            vec![k(
                "a",
                &["https://github.com/acme/x//base?ref=v1", "../../outside"],
                &[],
            )],
            &mut notes,
        );
        assert_eq!(notes.len(), 2);
        assert_eq!(join("a/b", "../c/./d/"), Some("a/c/d".into()));
        assert_eq!(join(".", "x.yaml"), Some("x.yaml".into()));
        assert_eq!(join("a", "../.."), None);
    }

    /// What one leaf renders: the last entry that sets the version on the chain to it, under
    /// the names the leaf's own entries see and leave; nothing for a chain to another leaf.
    #[test]
    fn what_a_leaf_renders() {
        let g = graph(vec![
            k("base", &["app.yaml"], &[]),
            k("mid", &["../base"], &[("web", None, true)]),
            k("dev", &["../mid"], &[("web", Some("mirror/web"), false)]),
            k("prod", &["../base"], &[]),
        ]);
        let mid_entry = (ArcStr::from("mid/kustomization.yaml"), 10);
        let mut seen = g.rendered_by_leaf(at("base/app.yaml"), "web", None);
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        let rendered = |at_leaf: &str, name: &str, by| Rendered {
            at_leaf: at_leaf.into(),
            name: name.into(),
            by,
        };
        assert_eq!(
            seen,
            [
                ("dev".into(), rendered("web", "mirror/web", Some(mid_entry))),
                ("prod".into(), rendered("web", "web", None)),
            ]
        );
    }
}
