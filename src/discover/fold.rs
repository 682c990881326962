//! The fold: the bookkeeping that takes each file's scan in file order (policies, shared
//! names, Argo CD, Flux and kustomize resources kept for the passes over the whole tree),
//! then runs those passes.

use arcstr::ArcStr;

use super::scan_file::{FileRead, Read, Scanned};
use super::vocab::{FileCtx, ImageRef, SlotFormat, SlotPath};
use super::{argo_apps, charts, flux, generated, kustomize, markers, placement};
use super::{Discovery, Early, SourceTexts};
use crate::source::tree::Tree;
use imagebump_model::config::Config;
use imagebump_model::name::ImageName;
use imagebump_model::Problem;
use imagebump_policy::rules::Policies;

/// What discovery builds up file by file, in file order.
pub(super) struct Fold<'a> {
    tree: &'a Tree,
    /// Whether texts are given up where the plan can read them again.
    texts: SourceTexts,
    out: Discovery,
    policies: Policies,
    argo: argo_apps::ArgoResources,
    marked: flux::FluxResources,
    layout: placement::Layout,
    /// The files that hold chart versions (`helm.charts`), parsed, in file order.
    charts: Vec<Result<charts::ChartFile, Problem>>,
    /// One copy of each name, unit and path, shared by the references.
    names: Names,
    /// The files that say they are generated (`scan.editGenerated`).
    generated: generated::Generated,
    edit_generated: bool,
}

/// One copy of each repository's name and each image name as written (a tree deploys a
/// few hundred images from tens of thousands of places), of each unit (an app's references
/// share it), of each tag and of each slot's path: strings that are kept to the end of the
/// run. The names as written are also the whole-reference slots' names.
#[derive(Default)]
pub(super) struct Names {
    images: Shared<std::sync::Arc<ImageName>>,
    written: Shared<ArcStr>,
    units: Shared<ArcStr>,
    /// Tags: a repository's references are written at a few versions.
    tags: Shared<ArcStr>,
    /// Slots' paths: a tree writes its images at a few paths (`spec.template.spec.
    /// containers[0].image`) in thousands of files, each a vector of strings.
    paths: Shared<SlotPath>,
}

/// The copies `Names` keeps of one kind of value, and their addresses. Hashed with foldhash
/// (already in the tree through serde_json), not SipHash: every reference is hashed here
/// five times or more, one file after another on the thread that folds them. Each map is
/// seeded at random, and the repository, written before the run, sees no hash: it cannot
/// be written to collide (docs/security.md).
pub(super) struct Shared<P> {
    copies: foldhash::HashSet<P>,
    /// Where each kept copy lives (they live as long as `copies`, so no other value takes
    /// an address from them): the pass at the end of discovery finds most values shared
    /// already, by address, without hashing what they hold.
    kept_at: foldhash::HashSet<usize>,
}

impl<P> Default for Shared<P> {
    fn default() -> Self {
        Shared {
            copies: Default::default(),
            kept_at: Default::default(),
        }
    }
}

/// A pointer to a shared value, known by the address of the one allocation it shares.
pub(super) trait Kept: Clone + Eq + std::hash::Hash {
    fn address(&self) -> usize;
}

impl<T: ?Sized + Eq + std::hash::Hash> Kept for std::sync::Arc<T> {
    fn address(&self) -> usize {
        std::sync::Arc::as_ptr(self).cast::<()>().addr()
    }
}

impl Kept for ArcStr {
    /// Where its text is (in its allocation; the empty string and literals are static, and
    /// equal wherever they share an address).
    fn address(&self) -> usize {
        self.as_ptr().addr()
    }
}

impl Kept for SlotPath {
    fn address(&self) -> usize {
        self.0.address()
    }
}

impl Names {
    fn share(&mut self, r: &mut ImageRef) {
        shared(&mut self.images, &mut r.image);
        shared(&mut self.written, &mut r.written);
        shared(&mut self.units, &mut r.unit);
        if let Some(tag) = &mut r.tag {
            shared(&mut self.tags, tag);
        }
        for s in &mut r.slots {
            shared(&mut self.paths, &mut s.path);
            if let SlotFormat::Reference { name } = &mut s.format {
                shared(&mut self.written, name);
            }
        }
    }

    /// A kustomization's `images:` names: the same few hundred images in every overlay.
    fn share_entries(&mut self, k: &mut kustomize::Kustomization) {
        for e in k.images.iter_mut() {
            shared(&mut self.written, &mut e.name);
            if let Some(n) = &mut e.new_name {
                shared(&mut self.written, n);
            }
        }
    }
}

/// `value` as the copy `kept` holds, which keeps it when it holds none.
pub(super) fn shared<P: Kept>(kept: &mut Shared<P>, value: &mut P) {
    if kept.kept_at.contains(&value.address()) {
        return;
    }
    match kept.copies.get(value) {
        Some(copy) => *value = P::clone(copy),
        None => {
            kept.kept_at.insert(value.address());
            kept.copies.insert(P::clone(value));
        }
    }
}

impl<'a> Fold<'a> {
    /// The books before the first file: `kustomizations` is how many the walk listed.
    pub(super) fn new(
        tree: &'a Tree,
        config: &Config,
        texts: SourceTexts,
        out: Discovery,
        policies: Policies,
        kustomizations: usize,
    ) -> Fold<'a> {
        Fold {
            tree,
            texts,
            out,
            policies,
            argo: argo_apps::ArgoResources::default(),
            marked: flux::FluxResources::default(),
            layout: placement::Layout::with_kustomizations(kustomizations),
            charts: Vec::new(),
            names: Names::default(),
            generated: generated::Generated::default(),
            edit_generated: config.scan.edit_generated,
        }
    }

    /// One file read: its references get their policies; its Argo CD, Flux and kustomize
    /// resources are kept for the passes over the whole tree.
    pub(super) fn file(
        &mut self,
        rel: &ArcStr,
        (read, chart): FileRead,
        early: &mut Option<Early>,
    ) {
        self.charts.extend(chart);
        let out = &mut self.out;
        let scanned = match read {
            Read::Skipped => return,
            Read::Problem(p) => {
                out.files_scanned = out.files_scanned.saturating_add(1);
                out.problems.push(p);
                return;
            }
            Read::Scanned(s) => s,
        };
        out.files_scanned = out.files_scanned.saturating_add(1);
        self.scanned(rel, *scanned, early);
    }

    /// A file parsed and scanned: its problems and notes, its resources kept, its
    /// references given their policies, its text and fingerprint kept when a managed
    /// reference is in it.
    fn scanned(&mut self, rel: &ArcStr, scanned: Scanned, early: &mut Option<Early>) {
        let out = &mut self.out;
        let Scanned {
            text,
            lines,
            refs,
            workloads,
            problems,
            notes,
            kustomization,
            argo: loaded,
            flux: flux_loaded,
            fingerprint,
            proven_without_text,
        } = scanned;
        out.problems.extend(problems);
        out.notes.extend(notes);
        // One copy of the text, shared by the sources and the kustomize layout.
        let text: ArcStr = text.into();
        let generated = (self.generated.look(rel, &text)).filter(|_| !self.edit_generated);
        if let Some(loaded) = flux_loaded {
            self.marked.add(rel, &text, loaded, out);
        }
        if let Some(loaded) = loaded {
            self.argo.add(loaded, &mut out.problems);
        }
        if let Some(k) = kustomization {
            self.kustomization(k, fingerprint.filter(|f| f.read_in_one_pass()), &text);
        }
        // The file's name as its references hold it (the list's), for the maps beside them.
        let file = ArcStr::clone(rel);
        let ctx = FileCtx {
            file: ArcStr::clone(&file),
            text: &text,
            lines,
        };
        let before = self.out.refs.len();
        self.out.refs.extend(refs);
        let placed_later = self.out.refs.len();
        for w in workloads {
            (self.layout).add_workload(self.out.refs.len(), w.kustomizable, w.container);
            self.out.refs.push(w.r);
        }
        self.give_policies(&ctx, (before, placed_later), generated, early);
        let out = &mut self.out;
        if out.refs.iter_from(before).any(ImageRef::is_managed) {
            if !proven_without_text {
                out.sources.insert(ArcStr::clone(&file), text);
            }
            if let Some(f) = fingerprint {
                out.fingerprints.insert(file, f);
            }
        }
    }

    /// A kustomization, kept for placement with its text, or with its fingerprint alone
    /// (`read_in_one_pass`) when a report-only run gives texts up.
    fn kustomization(
        &mut self,
        mut k: kustomize::Kustomization,
        one_pass: Option<imagebump_yaml::Fingerprint>,
        text: &ArcStr,
    ) {
        self.names.share_entries(&mut k);
        let kept = match one_pass {
            Some(f) if self.texts == SourceTexts::NeededOnly => placement::KeptText::ReadAgain(f),
            _ => placement::KeptText::Text(text.clone()),
        };
        self.layout.add_kustomization(k, kept);
    }

    /// The file's references from `from` on get their policies; those before `placed_later`
    /// (not manifest images, which placement decides) are left alone in a generated file
    /// (`generated`: the line that says so) and told `early`.
    fn give_policies(
        &mut self,
        ctx: &FileCtx,
        (from, placed_later): (usize, usize),
        generated: Option<usize>,
        early: &mut Option<Early>,
    ) {
        let out = &mut self.out;
        for (i, r) in (from..).zip(out.refs.iter_mut_from(from)) {
            self.names.share(r);
            if let Err(p) = apply_policy(ctx, &mut self.policies, r, None) {
                out.problems.push(p);
            }
            // Before it is told early (placement decides where a manifest image's value
            // goes: those are judged once every file is read).
            if let Some(line) = generated.filter(|_| i < placed_later && r.is_managed()) {
                if r.touched_files().contains(&&*ctx.file) {
                    r.unmanaged = Some(generated::why(&ctx.file, line));
                }
            }
            if let Some(tell) = early.as_mut().filter(|_| i < placed_later) {
                tell(r);
            }
        }
    }

    /// The passes over the whole tree: ApplicationSets, kustomize placement, Argo CD
    /// Applications, Flux setters.
    pub(super) fn finish(self, config: &Config) -> Discovery {
        let Fold {
            tree,
            texts: _,
            mut out,
            mut policies,
            mut argo,
            marked,
            layout,
            charts: chart_files,
            mut names,
            generated,
            edit_generated,
        } = self;
        // Chart versions: `Chart.yaml` dependencies, `helmCharts:`, Flux `HelmRelease`s.
        if config.helm.charts {
            charts::scan(tree, chart_files, &mut policies, &mut out);
        }
        // ApplicationSets in the repository become the Applications they generate.
        argo.generate(tree, &mut out);
        let rendering = layout.place(tree, &mut out, &argo, config.scan.shared_bases);
        if !argo.apps.is_empty() {
            argo_apps::scan(tree, config, argo, rendering, &mut out, &mut policies);
        }
        // Flux setters last: their policies may be written in any file.
        flux::scan(marked, &mut policies, &mut out);
        if !edit_generated {
            generated.leave_alone(tree, &mut out);
        }
        // The references are kept to the end of the run with one copy of each name, unit
        // and path (placement, Argo CD and Flux may have made theirs since the fold shared
        // them).
        for r in out.refs.iter_mut() {
            names.share(r);
        }
        out.fingerprints.sort();
        out
    }
}

/// Give `r` its policy: configuration (with `repository` settings, from Argo CD
/// annotations, under the `images` rules), then an inline marker on the value's line. A bad
/// marker leaves the reference unmanaged (untouched) and is reported at its position.
pub(super) fn apply_policy(
    ctx: &FileCtx,
    policies: &mut Policies,
    r: &mut ImageRef,
    repository: Option<(&str, &imagebump_model::policy::PolicySpec)>,
) -> Result<(), Problem> {
    let marker = r
        .slots
        .first()
        .and_then(|s| markers::find(ctx.text, s.span.end()));
    let spec = match &marker {
        None => None,
        Some(m) => match &m.spec {
            Ok(spec) => Some(spec),
            Err(e) => {
                // Still show the configured policy; the reference itself is left alone.
                let file = Some(&*r.file);
                if let Ok(policy) =
                    policies.policy_with(&r.image, &r.written, file, repository, None)
                {
                    r.policy = policy;
                }
                r.unmanaged = Some(arcstr::literal!("invalid imagebump marker").into());
                return Err(ctx.problem(m.offset, e.to_string()));
            }
        },
    };
    match policies.policy_with(
        &r.image,
        &r.written,
        Some(&*r.file),
        repository,
        spec.map(|s| ("marker", s)),
    ) {
        Ok(policy) => {
            if policy.ignore && r.unmanaged.is_none() {
                r.unmanaged = Some(format!("ignored ({})", policy.source).into());
            }
            r.policy = policy;
            Ok(())
        }
        Err(e) => {
            r.unmanaged = Some(arcstr::literal!("invalid policy").into());
            let at = marker.map_or(r.slots.first().map_or(0, |s| s.span.start()), |m| m.offset);
            let mut p = ctx.problem(at, e.to_string());
            p.hint = e.hint;
            Err(p)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{tree, APP};
    use super::*;
    use crate::discover::discover;
    use imagebump_yaml::PathSeg;

    #[test]
    fn equal_values_are_kept_once_and_a_kept_copy_is_known_by_its_address() {
        use std::sync::Arc;
        let mut kept: Shared<ArcStr> = Shared::default();
        let mut first = ArcStr::from("apps/web");
        shared(&mut kept, &mut first);
        // An equal value made elsewhere becomes the kept copy.
        let mut again = ArcStr::from("apps/web");
        assert!(!ArcStr::ptr_eq(&first, &again));
        shared(&mut kept, &mut again);
        assert!(ArcStr::ptr_eq(&first, &again));
        // The kept copy itself is found by its address and left as it is.
        let before = ArcStr::clone(&first);
        shared(&mut kept, &mut first);
        assert!(ArcStr::ptr_eq(&first, &before));
        let mut other = ArcStr::from("apps/api");
        shared(&mut kept, &mut other);
        assert_eq!((kept.copies.len(), kept.kept_at.len()), (2, 2));
        assert_eq!(&*other, "apps/api");
        // So is a slot's path: equal paths made apart, and an empty one after another.
        let mut paths: Shared<SlotPath> = Shared::default();
        let image = || vec![PathSeg::Key("image".into())];
        let (mut one, mut two) = (SlotPath::from(image()), SlotPath::from(image()));
        shared(&mut paths, &mut one);
        shared(&mut paths, &mut two);
        assert!(SlotPath::ptr_eq(&one, &two));
        let (mut none, mut empty) = (SlotPath::from(Vec::new()), SlotPath::from(Vec::new()));
        shared(&mut paths, &mut none);
        shared(&mut paths, &mut empty);
        assert!(SlotPath::ptr_eq(&none, &empty));
        assert_eq!(paths.copies.len(), 2);

        // Through discovery: two apps writing the same image and tag at the same path hold
        // one copy of each.
        let deploy = APP[1].1;
        let dir = tree(&[("a/deploy.yaml", deploy), ("b/deploy.yaml", deploy)]);
        let found = discover(&Tree::disk(dir.path()), &Config::default());
        let [a, b] = &found.refs.iter().collect::<Vec<_>>()[..] else {
            panic!("{:?}", found.refs)
        };
        assert!(Arc::ptr_eq(&a.image, &b.image) && ArcStr::ptr_eq(&a.written, &b.written));
        let tags = (a.tag.as_ref().unwrap(), b.tag.as_ref().unwrap());
        assert!(ArcStr::ptr_eq(tags.0, tags.1));
        assert!(SlotPath::ptr_eq(&a.slots[0].path, &b.slots[0].path));
    }
}
