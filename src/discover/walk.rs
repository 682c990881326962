//! The walk: which files discovery reads, of which kind, and the first look at them that
//! keeps their texts for the parse.

use arcstr::ArcStr;

use globset::{Glob, GlobSet, GlobSetBuilder};

use super::vocab::MAX_FILE_BYTES;
use super::Discovery;
use crate::source::tree::Tree;
use imagebump_model::config::ScanConfig;
use imagebump_model::Problem;

pub(super) fn globset(patterns: &[String]) -> Result<GlobSet, Problem> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let g = Glob::new(p).map_err(|e| Problem::config(format!("bad glob {p:?}: {e}")))?;
        b.add(g);
    }
    b.build().map_err(|e| Problem::config(e.to_string()))
}

pub(super) struct Filters {
    include: GlobSet,
    exclude: GlobSet,
    helm_values: GlobSet,
}

impl Filters {
    pub(super) fn new(scan: &ScanConfig) -> Result<Self, Problem> {
        Ok(Filters {
            include: globset(&scan.include)?,
            exclude: globset(&scan.exclude)?,
            helm_values: globset(&scan.helm_values)?,
        })
    }

    pub(super) fn wanted(&self, rel: &str) -> bool {
        (self.include.is_empty() || self.include.is_match(rel)) && !self.exclude.is_match(rel)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum FileKind {
    Kustomization,
    /// A file under a Helm chart's `templates/`: Go template text, read line by line.
    ChartTemplate,
    HelmValues,
    /// Any other YAML file: Kubernetes manifests, Argo CD Applications and `ImageUpdater`s.
    Manifest,
}

pub(super) fn classify(rel: &str, filters: &Filters) -> Option<FileKind> {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    if matches!(
        name,
        "kustomization.yaml" | "kustomization.yml" | "Kustomization"
    ) {
        return Some(FileKind::Kustomization);
    }
    if filters.helm_values.is_match(rel) {
        return Some(FileKind::HelmValues);
    }
    // Override files are read with their Application.
    let yaml = name.ends_with(".yaml") || name.ends_with(".yml");
    (yaml && !name.starts_with(".argocd-source")).then_some(FileKind::Manifest)
}

/// The name of the last component of `rel`, and the directory it is in (`""`: the root).
pub(super) fn split_name(rel: &str) -> (&str, &str) {
    match rel.rsplit_once('/') {
        Some((dir, name)) => (dir, name),
        None => ("", rel),
    }
}

/// Directories never scanned: VCS metadata, vendored dependencies.
pub(super) fn skip_dir(rel: &str) -> bool {
    let name = split_name(rel).1;
    name == ".git" || name == "node_modules"
}

/// A Helm chart's `templates/` (Go templates, not YAML).
pub(super) fn chart_templates(tree: &Tree, rel: &str) -> bool {
    let (dir, name) = split_name(rel);
    name == "templates" && tree.is_file(&super::argo_apps::in_dir(dir, "Chart.yaml"))
}

/// The files to scan, in name order, with their kind.
/// Symbolic links are never followed (the tree is a jail); one that would be read is
/// noted. A file name that is not UTF-8 is reported, not guessed at.
/// Each file's text comes with it when the walk read it ([`first_look`] reads the others).
pub(super) fn files(tree: &Tree, filters: &Filters, out: &mut Discovery) -> (Vec<Listed>, Texts) {
    use crate::source::tree::{Kind, Reading};
    let problems = &mut out.problems;
    let notes = &mut out.notes;
    let mut files = Vec::new();
    let mut texts = Vec::new();
    // Chart `templates/` directories seen so far (a directory comes before its files).
    let mut templates: Vec<String> = Vec::new();
    let reading = Reading {
        wanted: &|rel| filters.wanted(rel) && classify(rel, filters).is_some(),
        max: MAX_FILE_BYTES,
        budget: READ_AHEAD_BYTES,
    };
    tree.walk_reading(skip_dir, Some(&reading), |entry| {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                problems.push(Problem::general(format!(
                    "cannot read directory entry: {e}"
                )));
                return;
            }
        };
        let rel = entry.rel;
        if !entry.utf8 {
            problems.push(Problem::general(format!(
                "{rel}: the file name is not UTF-8: not read"
            )));
            return;
        }
        if entry.kind == Kind::Link && filters.wanted(rel) && classify(rel, filters).is_some() {
            notes.push(Problem::at_file(
                rel,
                0,
                0,
                "a symbolic link: not followed (imagebump reads only the repository's own files)",
            ));
            return;
        }
        if entry.kind == Kind::Dir && chart_templates(tree, rel) {
            templates.push(format!("{rel}/"));
        }
        if entry.kind != Kind::File || !filters.wanted(rel) {
            return;
        }
        let in_templates = templates.iter().any(|t| rel.starts_with(t.as_str()));
        let kind = match classify(rel, filters) {
            Some(_) if in_templates => FileKind::ChartTemplate,
            Some(kind) => kind,
            None => return,
        };
        files.push((ArcStr::from(rel), kind));
        texts.push(entry.text);
    });
    (files, texts)
}

/// A file to scan, with its kind. Its name is the one its references hold (the list is
/// held until every file is read: 15,000 names at 10,000 apps, not copied again).
pub(super) type Listed = (ArcStr, FileKind);

/// The texts a walk read, one per file (`None`: not read).
pub(super) type Texts = Vec<Option<Result<String, crate::source::jail::Error>>>;

/// Must this kustomization be read before the other files? When it may name
/// `configurations:`, `helmCharts:`, `configMapGenerator:` or `secretGenerator:` (their
/// image fields and values files change how the manifests are read). A key can be spelled
/// without its letters only in a double-quoted scalar's escapes, so a text with neither
/// name nor a backslash names neither. A text the first look did not keep is read first,
/// as one that cannot be told.
pub(super) fn read_first(ahead: Option<&std::sync::Mutex<Option<String>>>) -> bool {
    let names = |t: &str| {
        ["configurations", "helmCharts", "Generator", "\\"]
            .iter()
            .any(|n| t.contains(n))
    };
    ahead
        .and_then(|slot| slot.lock().ok().map(|t| t.as_deref().is_none_or(names)))
        .unwrap_or(true)
}

/// Texts the first look read, kept for the parse so that a file is read once, at most
/// [`READ_AHEAD_BYTES`] of them in all: one slot per file, in the order of the files.
pub(super) type ReadAhead = Vec<std::sync::Mutex<Option<String>>>;

/// The most text the first look keeps for the parse, far more than a repository of
/// manifests holds; past it, a file is read again when it is parsed, so that a huge tree
/// never sits in memory whole.
pub(super) const READ_AHEAD_BYTES: usize = 16 << 20;

/// The first look at every file, on every core: could an Argo CD or Flux resource in the
/// tree claim a reference after it is read? Every file that mentions their API groups (or a
/// Flux setter) is taken to hold one; a read error is a yes (the parse reports it). The
/// texts the walk read (`texts`) are looked at, the others read; all are kept for the parse
/// (see [`ReadAhead`]).
pub(super) fn first_look(tree: &Tree, files: &[Listed], texts: Texts) -> (bool, ReadAhead) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let walked: usize = (texts.iter().flatten().flatten()).map(String::len).sum();
    let kept = AtomicUsize::new(walked);
    let claims = |text: &str| text.contains("argoproj.io") || imagebump_flux::mentioned(text);
    let look = |read: Result<String, crate::source::jail::Error>| match read {
        Ok(text) => {
            let before = kept.fetch_add(text.len(), Ordering::Relaxed);
            let fits = before.saturating_add(text.len()) <= READ_AHEAD_BYTES;
            (claims(&text), fits.then_some(text))
        }
        Err(_) => (true, None),
    };
    let looked = if tree.from_objects() {
        // One stream of blobs beats a round trip to git per file.
        let rels: Vec<&str> = files.iter().map(|(rel, _)| rel.as_str()).collect();
        let mut looked = vec![(true, None); files.len()];
        tree.read_each(&rels, MAX_FILE_BYTES, |i, read| {
            if let Some(slot) = looked.get_mut(i) {
                *slot = look(read);
            }
        });
        looked
    } else {
        let work: Vec<_> = files.iter().zip(&texts).collect();
        let looked = crate::parallel::map(&work, |((rel, _), text)| match text {
            // Read by the walk (within the budget): looked at here, kept below.
            Some(Ok(text)) => (claims(text), None),
            Some(Err(_)) => (true, None),
            None => look(tree.read(rel, MAX_FILE_BYTES)),
        });
        drop(work);
        (looked.into_iter().zip(texts))
            .map(|((claims, read), walked)| (claims, read.or(walked.and_then(Result::ok))))
            .collect()
    };
    let claims = looked.iter().any(|(c, _)| *c);
    let texts = looked
        .into_iter()
        .map(|(_, t)| std::sync::Mutex::new(t))
        .collect();
    (claims, texts)
}
