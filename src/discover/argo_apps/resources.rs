//! What the walk keeps of Argo CD: each file holding Argo CD resources, parsed whole
//! ([`ParsedFile`]), and the Applications, `ImageUpdater`s and ApplicationSets they hold
//! ([`ArgoResources`]), the sets expanded into Applications once every file is read.

use super::{key, MAX_FILE_BYTES};
use crate::discover::vocab::FileCtx;
use crate::discover::Discovery;
use crate::source::tree::Tree;
use imagebump_argocd::appset::{AppSet, Origins};
use imagebump_argocd::image_updater::ImageUpdater;
use imagebump_argocd::{self as argocd, App};
use imagebump_model::Problem;
use imagebump_yaml::{parse_located, Doc, LineIndex, Node, PathSeg};
use serde_json::Value;
use std::collections::BTreeMap;

/// A YAML file read whole: its text, located documents and their values.
pub struct ParsedFile {
    pub file: String,
    pub text: String,
    pub docs: Vec<Doc>,
    pub json: Vec<Value>,
    /// Made once: every Application a file generates asks it for positions.
    pub(super) lines: LineIndex,
}

impl ParsedFile {
    pub fn parse(file: &str, text: String) -> Result<ParsedFile, Problem> {
        let docs = parse_located(&text)
            .map_err(|e| Problem::at_file(file, e.line, e.column, e.reason()))?;
        // parse_located has already checked that libyaml reads every document.
        let json = imagebump_yaml::json_documents(&text).unwrap_or_default();
        Ok(ParsedFile {
            file: file.to_string(),
            lines: LineIndex::new(&text),
            text,
            docs,
            json,
        })
    }

    /// A file already parsed by the generic scan.
    pub fn from_parsed(file: &str, text: String, docs: Vec<Doc>) -> ParsedFile {
        // parse_located has already checked that libyaml reads every document.
        let json = imagebump_yaml::json_documents(&text).unwrap_or_default();
        ParsedFile {
            file: file.to_string(),
            lines: LineIndex::new(&text),
            text,
            docs,
            json,
        }
    }

    /// Documents parsed one by one (a chart template's, some of which are not YAML), with
    /// their values by document index (`null` for one that did not parse).
    pub fn from_documents(
        file: &str,
        text: String,
        docs: Vec<Doc>,
        json: Vec<Value>,
    ) -> ParsedFile {
        ParsedFile {
            file: file.to_string(),
            lines: LineIndex::new(&text),
            text,
            docs,
            json,
        }
    }

    pub(super) fn ctx(&self) -> FileCtx<'_> {
        FileCtx {
            file: self.file.as_str().into(),
            text: &self.text,
            lines: self.lines.clone(),
        }
    }

    pub(super) fn node(&self, doc: usize, path: &[PathSeg]) -> Option<&Node> {
        self.docs.get(doc)?.root.as_ref()?.at(path)
    }

    pub(super) fn value(&self, doc: usize, path: &[PathSeg]) -> Option<&Value> {
        path.iter()
            .try_fold(self.json.get(doc)?, |v, seg| match seg {
                PathSeg::Key(k) => v.get(k.as_str()),
                PathSeg::Index(i) => v.get(*i),
            })
    }

    /// `(line, column)` of the node at `path`, else of its nearest existing parent.
    pub(super) fn position(&self, doc: usize, path: &[PathSeg]) -> (usize, usize) {
        let offset = (0..=path.len())
            .rev()
            .find_map(|n| self.node(doc, path.get(..n)?))
            .map_or(0, Node::offset);
        self.lines.line_col(offset)
    }
}

/// Applications and `ImageUpdater` resources found while walking the tree.
#[derive(Default)]
pub struct ArgoResources {
    pub apps: Vec<App>,
    pub updaters: Vec<ImageUpdater>,
    /// The invalid ones, for the apps they were meant for.
    pub broken: Vec<argocd::BrokenUpdater>,
    /// ApplicationSets, until [`ArgoResources::generate`] turns them into `apps`.
    pub(super) appsets: Vec<AppSet>,
    /// The Applications an ApplicationSet generated, by (file, document, name).
    pub(super) generated: BTreeMap<AppId, Generator>,
    pub(super) files: BTreeMap<String, ParsedFile>,
}

/// An Application's file, document and name.
pub(super) type AppId = (String, usize, String);

/// For an Application an ApplicationSet generates: where its parameters are written, and
/// whether the template is a Go template.
#[derive(Clone)]
pub(super) struct Generator {
    pub(super) origins: Origins,
    pub(super) go: bool,
}

impl ArgoResources {
    /// Whether argocd-image-updater configures any Application (an `ImageUpdater`, valid
    /// or not, or an app's annotations): only then is what the apps render asked for.
    pub fn configures_images(&self) -> bool {
        let annotated = |a: &App| {
            (a.annotations.keys()).any(|k| k.starts_with("argocd-image-updater.argoproj.io/"))
        };
        !self.updaters.is_empty() || !self.broken.is_empty() || self.apps.iter().any(annotated)
    }

    /// Read the Applications and `ImageUpdater`s of one file.
    pub fn add(&mut self, loaded: ParsedFile, problems: &mut Vec<Problem>) {
        let apps = argocd::app::find_apps(&loaded.file, &loaded.json);
        let updaters = argocd::image_updater::find_image_updaters(&loaded.file, &loaded.json);
        for e in updaters.iter().filter_map(|r| r.as_ref().err()) {
            if let Some(v) = loaded.json.get(e.doc) {
                self.broken.push(argocd::BrokenUpdater::read(
                    &loaded.file,
                    e.doc,
                    v,
                    &e.message,
                ));
            }
        }
        let found_apps = keep(
            &loaded,
            apps,
            "Argo CD Application",
            &mut self.apps,
            problems,
        );
        let found_updaters = keep(
            &loaded,
            updaters,
            "ImageUpdater",
            &mut self.updaters,
            problems,
        );
        let sets = argocd::appset::find_appsets(&loaded.file, &loaded.json);
        let found_sets = keep(
            &loaded,
            sets,
            "Argo CD ApplicationSet",
            &mut self.appsets,
            problems,
        );
        if found_apps || found_updaters || found_sets {
            self.files.insert(loaded.file.clone(), loaded);
        }
    }

    /// Add the Applications the ApplicationSets generate from the repository alone; what
    /// cannot be generated here (a cluster generator, a template function) is a note.
    pub fn generate(&mut self, root: &Tree, out: &mut Discovery) {
        if self.appsets.is_empty() {
            return;
        }
        let (dirs, files) = walk(root);
        // Files a git files generator reads, loaded once and kept: their values may be
        // what an update edits.
        let read = std::cell::RefCell::new(BTreeMap::<String, Option<ParsedFile>>::new());
        let problems = std::cell::RefCell::new(Vec::new());
        let reader = |rel: &str| -> Option<Vec<Value>> {
            let mut cache = read.borrow_mut();
            let loaded = cache
                .entry(rel.to_string())
                .or_insert_with(|| load_generator_file(root, rel, &mut problems.borrow_mut()));
            loaded.as_ref().map(|l| l.json.clone())
        };
        let tree = argocd::appset::Tree {
            dirs: &dirs,
            files: &files,
            read: &reader,
        };
        let mut expansions = Vec::new();
        let mut budget = argocd::appset::Budget::default();
        for set in std::mem::take(&mut self.appsets) {
            let expansion = set.generate(&tree, &mut budget);
            expansions.push((set, expansion));
        }
        out.problems.extend(problems.into_inner());
        for (rel, loaded) in read.into_inner() {
            if let Some(l) = loaded {
                self.files.entry(rel).or_insert(l);
            }
        }
        for (set, expansion) in expansions {
            let (line, column) = self.files.get(&set.file).map_or((0, 0), |l| {
                l.position(set.doc, &[key("metadata"), key("name")])
            });
            for n in expansion.notes {
                let message = format!("ApplicationSet {}: {n}", set.name);
                out.notes
                    .push(Problem::at_file(&set.file, line, column, message));
            }
            if expansion.over_run {
                out.problems.push(Problem::at_file(
                    &set.file,
                    line,
                    column,
                    over_run(&set.name),
                ));
            }
            for g in expansion.apps {
                let id = (g.app.file.clone(), g.app.doc, g.app.name.clone());
                let t = Generator {
                    origins: g.origins,
                    go: g.go_template,
                };
                self.generated.insert(id, t);
                self.apps.push(g.app);
            }
        }
    }
}

/// The error for a set whose Applications the run's budget cut short.
pub(super) fn over_run(set: &str) -> String {
    use argocd::appset::{MAX_RUN_APPS, MAX_RUN_RENDERED_BYTES};
    format!(
        "ApplicationSet {set}: the run's ApplicationSets generate more than {MAX_RUN_APPS} Applications or {} MiB of templates in all; its Applications past that are not read",
        MAX_RUN_RENDERED_BYTES >> 20
    )
}

/// The directories and the files of the tree, as Argo CD's repo server lists them for a
/// git generator: relative, `/`-separated, sorted, hidden directories (and what is below
/// them) left out, symbolic links not followed.
pub(super) fn walk(root: &Tree) -> (Vec<String>, Vec<String>) {
    use crate::source::tree::Kind;
    let (mut dirs, mut files) = (Vec::new(), Vec::new());
    let hidden = |rel: &str| rel.rsplit('/').next().unwrap_or(rel).starts_with('.');
    let mut seen = 0usize;
    root.walk(hidden, |e| {
        let Ok(e) = e else {
            return;
        };
        seen = seen.saturating_add(1);
        if seen > MAX_ENTRIES {
            return;
        }
        match e.kind {
            Kind::Dir => dirs.push(e.rel.to_string()),
            Kind::File => files.push(e.rel.to_string()),
            Kind::Link | Kind::Other => {}
        }
    });
    // In the order Argo CD lists them, so the generated apps come in a stable order.
    dirs.sort();
    files.sort();
    (dirs, files)
}

/// At most this many entries of the tree are matched against git generators.
pub(super) const MAX_ENTRIES: usize = 200_000;

/// A file a git files generator matched, read inside the tree and size-capped; what
/// cannot be read is a problem at the file.
pub(super) fn load_generator_file(
    root: &Tree,
    rel: &str,
    problems: &mut Vec<Problem>,
) -> Option<ParsedFile> {
    let read = root
        .resolve(rel)
        .and_then(|normalised| root.read(&normalised, MAX_FILE_BYTES));
    match read.map(|text| ParsedFile::parse(rel, text)) {
        Ok(Ok(l)) => Some(l),
        Ok(Err(p)) => {
            problems.push(p);
            None
        }
        Err(e) => {
            problems.push(Problem::at_file(rel, 0, 0, format!("not read: {e}")));
            None
        }
    }
}

/// Keep the parsed resources, report the malformed ones at their document; whether any
/// was kept.
pub(super) fn keep<T>(
    loaded: &ParsedFile,
    results: Vec<Result<T, argocd::AppError>>,
    what: &str,
    into: &mut Vec<T>,
    problems: &mut Vec<Problem>,
) -> bool {
    let mut any = false;
    for r in results {
        match r {
            Ok(t) => {
                any = true;
                into.push(t);
            }
            Err(e) => problems.push(Problem::at_file(
                &loaded.file,
                loaded.position(e.doc, &[]).0,
                1,
                format!("{what}: {}", e.message),
            )),
        }
    }
    any
}
