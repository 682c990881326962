//! Per-file dispatch: one file read and handed to the scanners of its kind.

use arcstr::ArcStr;

use super::vocab::{FileCtx, ImageRef, MAX_FILE_BYTES};
use super::walk::{read_first, FileKind, Listed, ReadAhead};
use super::SourceTexts;
use super::{argo_apps, charts, flux, helm, helm_release, kustomize, templates, workloads};
use crate::source::tree::Tree;
use imagebump_model::Problem;
use imagebump_yaml::{LineIndex, Style};

/// One file read, parsed and scanned.
pub(super) enum Read {
    /// A manifest that a first look shows holds nothing to read: not parsed, not counted.
    Skipped,
    /// The file cannot be read, or is not valid YAML.
    Problem(Problem),
    Scanned(Box<Scanned>),
}

/// What a file holds: its references (policies not given yet) and the problems its
/// scanner found; for a kustomization, what the graph needs; Argo CD resources to read in
/// file order.
pub(super) struct Scanned {
    pub(super) text: String,
    pub(super) lines: LineIndex,
    pub(super) refs: Vec<ImageRef>,
    pub(super) workloads: Vec<workloads::ManifestImage>,
    pub(super) problems: Vec<Problem>,
    /// What the scan left out and the user may want to know (a chart template's documents
    /// that are not YAML).
    pub(super) notes: Vec<Problem>,
    pub(super) kustomization: Option<kustomize::Kustomization>,
    pub(super) argo: Option<argo_apps::ParsedFile>,
    /// Flux image automation resources and setters.
    pub(super) flux: Option<imagebump_flux::Loaded>,
    /// The fingerprint of all the file's values, when the parse read them all: it spares
    /// the plan's verification a second parse of the text (`imagebump_yaml::apply_edits_known`).
    pub(super) fingerprint: Option<imagebump_yaml::Fingerprint>,
    /// Its edits are proven without its text ([`SourceTexts::NeededOnly`]): every slot of
    /// its references is marked [`Slot::alone`](super::vocab::Slot::alone). Judged where the file is parsed (on every
    /// core), not in the fold.
    pub(super) proven_without_text: bool,
}

/// What every file is read with: the image fields of custom resources, the Helm image keys.
pub(super) struct Keys<'a> {
    pub(super) specs: &'a [workloads::FieldSpec],
    pub(super) helm: &'a helm::ImageKeys,
    /// `helm.charts`: each file is also looked at for chart versions.
    pub(super) charts: bool,
    /// Whether a file's edits are judged provable without its text, as it is read.
    pub(super) texts: SourceTexts,
}

/// A file read once: what the scanners found, and its chart versions (`helm.charts`).
pub(super) type FileRead = (Read, Option<Result<charts::ChartFile, Problem>>);

/// Whether every slot of `refs` (a file's, read from `text`) holds the whole value of its
/// line: the file's edits are then proven without its text ([`SourceTexts::NeededOnly`],
/// its slots marked [`Slot::alone`](super::vocab::Slot::alone) by the caller). A slot inside a block scalar's text, or
/// of a block scalar, never is; a file with a reference that creates a value (in it or
/// elsewhere) keeps its text.
pub(super) fn alone_in_their_lines<'r>(
    text: &str,
    mut refs: impl Iterator<Item = &'r ImageRef>,
) -> bool {
    refs.all(|r| {
        // A value created in the file needs its text (few do).
        r.creations().is_empty()
            && r.slots.iter().all(|slot| {
                slot.inner.is_none()
                    && slot.style != Style::Block
                    && imagebump_yaml::alone_in_its_line(text, &slot.span.range())
            })
    })
}

/// Read and scan one file: the text the first look kept (`ahead`), else from the tree.
pub(super) fn read_file(
    tree: &Tree,
    (rel, kind): (&ArcStr, FileKind),
    keys: &Keys,
    ahead: Option<&std::sync::Mutex<Option<String>>>,
) -> FileRead {
    let kept = ahead.and_then(|slot| slot.lock().ok().and_then(|mut t| t.take()));
    let read = kept.map_or_else(|| tree.read(rel, MAX_FILE_BYTES), Ok);
    let text = match read {
        Ok(t) => t,
        Err(e) => {
            let mut p = Problem::at_file(rel, 0, 0, e.to_string());
            p.hint = e.hint().map(String::from);
            return (Read::Problem(p), None);
        }
    };
    let chart = keys
        .charts
        .then(|| charts::read(rel, kind, &text))
        .flatten();
    (scan_text(rel, kind, keys, text), chart)
}

/// One file's text read by its scanners.
pub(super) fn scan_text(rel: &ArcStr, kind: FileKind, keys: &Keys, text: String) -> Read {
    if kind == FileKind::ChartTemplate {
        return scan_template(rel, text, keys.helm);
    }
    // Cheap first look: most YAML files hold no manifest with an image and no Argo CD
    // or Flux resource, and are never parsed.
    let flux_wanted = imagebump_flux::mentioned(&text);
    let look = match kind {
        FileKind::Manifest => {
            let l = workloads::look(&text, keys.specs);
            if !l.interest.argo && !l.interest.workloads && !flux_wanted {
                return Read::Skipped;
            }
            Some(l)
        }
        _ => None,
    };
    let interest = look.as_ref().map(|l| l.interest).unwrap_or_default();
    // A manifest that is not an Argo CD or Flux resource needs only its documents with
    // images.
    let parsed = match look {
        Some(l) if !interest.argo && !flux_wanted => workloads::parse(&text, l),
        _ => imagebump_yaml::parse_located_fingerprinted(&text).map(|(d, f)| (d, Some(f))),
    };
    let (docs, fingerprint) = match parsed {
        Ok(d) => d,
        Err(e) => return Read::Problem(Problem::at_file(rel, e.line, e.column, e.reason())),
    };
    let ctx = FileCtx {
        file: ArcStr::clone(rel),
        text: &text,
        lines: LineIndex::new(&text),
    };
    let mut found = by_kind(&ctx, kind, interest, &docs, keys);
    let flux = flux_wanted
        .then(|| imagebump_flux::read(rel, &text, &docs))
        .filter(|f| !f.is_empty());
    if let Some(f) = &flux {
        found.drop_marked(&ctx, &f.marked);
    }
    let proven_without_text = found.proven_without_text(keys.texts, &text, fingerprint);
    let lines = ctx.lines;
    let argo = interest
        .argo
        .then(|| argo_apps::ParsedFile::from_parsed(rel, text.clone(), docs));
    Read::Scanned(Box::new(Scanned {
        text,
        lines,
        refs: found.refs,
        workloads: found.workloads,
        problems: found.problems,
        notes: Vec::new(),
        kustomization: found.kustomization,
        argo,
        flux,
        fingerprint,
        proven_without_text,
    }))
}

/// What a file's scanners found in its documents.
#[derive(Default)]
struct ByKind {
    refs: Vec<ImageRef>,
    workloads: Vec<workloads::ManifestImage>,
    problems: Vec<Problem>,
    kustomization: Option<kustomize::Kustomization>,
}

/// The scanners of a file of `kind` over its parsed `docs`.
fn by_kind(
    ctx: &FileCtx,
    kind: FileKind,
    interest: workloads::Interest,
    docs: &[imagebump_yaml::Doc],
    keys: &Keys,
) -> ByKind {
    let (specs, helm_keys) = (keys.specs, keys.helm);
    let mut out = ByKind::default();
    let (refs, found, problems) = (&mut out.refs, &mut out.workloads, &mut out.problems);
    match kind {
        FileKind::Kustomization => {
            kustomize::scan(ctx, docs, helm_keys, refs, problems);
            out.kustomization = Some(kustomize::read(ctx, docs));
            workloads::strings(ctx, docs, found);
        }
        FileKind::HelmValues => {
            helm::scan(ctx, docs, helm_keys, refs, problems);
            // Charts that take a whole config file as a value (`katibConfig: |`).
            workloads::strings(ctx, docs, found);
        }
        FileKind::Manifest if interest.workloads => {
            workloads::scan(ctx, docs, specs, found, problems);
            helm_release::scan(ctx, docs, helm_keys, refs, problems);
            // A marked line inside HelmRelease values is that values reference.
            let values: Vec<_> = refs
                .iter()
                .flat_map(|r| &r.slots)
                .map(|s| s.span.range())
                .collect();
            found.retain(|w| !flux::marks(&values, &w.r));
        }
        FileKind::Manifest | FileKind::ChartTemplate => {}
    }
    out
}

impl ByKind {
    /// A value a Flux setter marks (in `marked`) is what the setter says it is: the
    /// references read at it go.
    fn drop_marked(&mut self, ctx: &FileCtx, marked: &[std::ops::Range<usize>]) {
        let is_marked = |r: &ImageRef| flux::marks(marked, r) || flux::marks_at(ctx, marked, r);
        self.refs.retain(|r| !is_marked(r));
        self.workloads.retain(|w| !is_marked(&w.r));
    }

    /// Every reference found, the workloads' among them.
    fn all_mut(&mut self) -> impl Iterator<Item = &mut ImageRef> {
        let workloads = self.workloads.iter_mut().map(|w| &mut w.r);
        self.refs.iter_mut().chain(workloads)
    }

    /// Whether the file's edits are proven without its text ([`SourceTexts::NeededOnly`]);
    /// when they are, every slot is marked [`Slot::alone`](super::vocab::Slot::alone). Its
    /// references are shrunk to their size on the way.
    fn proven_without_text(
        &mut self,
        texts: SourceTexts,
        text: &str,
        fingerprint: Option<imagebump_yaml::Fingerprint>,
    ) -> bool {
        self.all_mut().for_each(ImageRef::shrink_to_fit);
        let proven = texts == SourceTexts::NeededOnly
            && (!self.refs.is_empty() || !self.workloads.is_empty())
            && imagebump_yaml::provable_in_lines(text, fingerprint)
            && alone_in_their_lines(
                text,
                self.refs.iter().chain(self.workloads.iter().map(|w| &w.r)),
            );
        if proven {
            self.all_mut()
                .for_each(|r| r.slots.iter_mut().for_each(|slot| slot.alone = true));
        }
        proven
    }
}

/// A chart template: its literal images, and the Argo CD resources and Flux `HelmRelease`
/// values of its documents that parse as YAML (an app-of-apps written as a chart).
pub(super) fn scan_template(rel: &ArcStr, text: String, helm_keys: &helm::ImageKeys) -> Read {
    let ctx = FileCtx {
        file: ArcStr::clone(rel),
        text: &text,
        lines: LineIndex::new(&text),
    };
    let mut refs = Vec::new();
    templates::scan(&ctx, &mut refs);
    let (mut notes, mut problems) = (Vec::new(), Vec::new());
    let mut argo = None;
    if let Some(parsed) = templates::resources(rel, &text, &mut notes) {
        // The `image:` lines of the resources read here are theirs.
        let lines = &parsed.lines;
        refs.retain(|r| !lines.iter().any(|l| l.contains(&(r.line as usize))));
        helm_release::scan(&ctx, &parsed.docs, helm_keys, &mut refs, &mut problems);
        argo = parsed.has_argo().then(|| {
            argo_apps::ParsedFile::from_documents(rel, text.clone(), parsed.docs, parsed.json)
        });
    }
    if refs.is_empty() && argo.is_none() && notes.is_empty() && problems.is_empty() {
        return Read::Skipped;
    }
    let lines = ctx.lines;
    Read::Scanned(Box::new(Scanned {
        text,
        lines,
        refs,
        workloads: Vec::new(),
        problems,
        notes,
        kustomization: None,
        argo,
        flux: None,
        fingerprint: None,
        // Not YAML: its edits are verified with its text.
        proven_without_text: false,
    }))
}

/// The kustomizations read before every other file, and what they change about how the
/// others are read.
pub(super) struct FirstRead {
    /// The image fields of custom resources their `configurations:` name.
    pub(super) specs: Vec<workloads::FieldSpec>,
    /// Values files named by `helmCharts:` or generated into a Flux values ConfigMap: Helm
    /// values, whatever their name.
    values_files: std::collections::BTreeSet<String>,
    /// Each read by its index among the files, taken when its turn comes.
    reads: std::collections::HashMap<usize, std::sync::Mutex<Option<FileRead>>>,
}

impl FirstRead {
    /// Read the kustomizations that may name `configurations:` (image fields of custom
    /// resources that the manifests are then read with) or `helmCharts:` values files; every
    /// other file, the other kustomizations among them, is read in turn ([`FirstRead::in_turn`]).
    pub(super) fn new(
        tree: &Tree,
        config: &imagebump_model::config::Config,
        files: &[Listed],
        ahead: &ReadAhead,
        keys: &Keys,
        problems: &mut Vec<Problem>,
    ) -> FirstRead {
        let first: Vec<(usize, &Listed)> = (files.iter().enumerate())
            .filter(|&(i, f)| f.1 == FileKind::Kustomization && read_first(ahead.get(i)))
            .collect();
        let read = crate::parallel::map(&first, |(i, (rel, kind))| {
            read_file(tree, (rel, *kind), keys, ahead.get(*i))
        });
        let read_k: Vec<&kustomize::Kustomization> = read
            .iter()
            .filter_map(|r| match r {
                (Read::Scanned(s), _) => s.kustomization.as_ref(),
                _ => None,
            })
            .collect();
        let specs = super::placement::field_specs(tree, &config.scan, &read_k, problems);
        let values_files = read_k
            .iter()
            .flat_map(|k| {
                k.values_files
                    .iter()
                    .filter_map(|f| kustomize::graph::join(k.dir(), f))
            })
            .collect();
        // Chart versions (`helm.charts`) are found by the same reads and scanned after every
        // file: they are new references and change none read before, so they do not hold
        // listing back.
        tracing::debug!(kustomizations = first.len(), "read the kustomizations");
        let reads = (first.iter().map(|(i, _)| *i))
            .zip(read.into_iter().map(|r| std::sync::Mutex::new(Some(r))))
            .collect();
        FirstRead {
            specs,
            values_files,
            reads,
        }
    }

    /// The `i`th file read: taken from those read first, else read now, a kustomization with
    /// `first` keys (no custom resources' fields), any other file with `rest`.
    pub(super) fn in_turn(
        &self,
        tree: &Tree,
        (i, (rel, kind)): (usize, &Listed),
        (first, rest): (&Keys, &Keys),
        ahead: Option<&std::sync::Mutex<Option<String>>>,
    ) -> FileRead {
        let kind = match kind {
            FileKind::Manifest if self.values_files.contains(rel.as_str()) => FileKind::HelmValues,
            k => *k,
        };
        match (kind, self.reads.get(&i)) {
            (_, Some(above)) => {
                (above.lock().ok().and_then(|mut r| r.take())).unwrap_or((Read::Skipped, None))
            }
            (FileKind::Kustomization, None) => read_file(tree, (rel, kind), first, ahead),
            _ => read_file(tree, (rel, kind), rest, ahead),
        }
    }
}
