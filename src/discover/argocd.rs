//! Argo CD Applications kept in the repository (app-of-apps): the images of their own
//! sources (`kustomize.images`, `helm.parameters`, `helm.valuesObject`, the YAML text of
//! `helm.values`, `plugin.env`), the
//! images argocd-image-updater is configured to manage (annotations or `ImageUpdater`
//! resources), the parameter override files Argo CD applies (`.argocd-source.yaml`, then
//! `.argocd-source-<app>.yaml`), and where each new value is written.
//!
//! A source's `path` is taken to be in this repository when that directory exists here;
//! the files below it, and values files it names, belong to the app (`unit` is its name).

mod appset;
mod chart;

use crate::source::tree::Tree;
use std::collections::BTreeMap;

use serde_json::Value;

use self::appset::same_place;
use super::Discovery;
use crate::argocd::app::parse_kustomize_image;
use crate::argocd::appset::{AppSet, Origins};
use crate::argocd::image_updater::ImageUpdater;
use crate::argocd::{
    self, App, HelmKeys, PullSecretName, Source, SourceKind, UpdaterConfig, UpdaterImage,
    WriteBackTarget,
};
use crate::config::Config;
use crate::discover::vocab::{
    Created, Creation, FileCtx, ImageRef, ItemKey, RefKind, SlotFormat, Template,
};
use crate::policy::rules::Policies;
use imagebump_model::name::{parse_name, parse_reference, same_repository, Reference};
use imagebump_model::policy::PolicySpec;
use imagebump_model::Problem;
use imagebump_yaml::{parse_located, BlockText, Doc, LineIndex, Node, PathSeg};

/// A YAML file read whole: its text, located documents and their values.
pub struct Loaded {
    pub file: String,
    pub text: String,
    pub docs: Vec<Doc>,
    pub json: Vec<Value>,
    /// Made once: every Application a file generates asks it for positions.
    lines: LineIndex,
}

impl Loaded {
    pub fn parse(file: &str, text: String) -> Result<Loaded, Problem> {
        let docs = parse_located(&text)
            .map_err(|e| Problem::at_file(file, e.line, e.column, e.reason()))?;
        // parse_located has already checked that libyaml reads every document.
        let json = imagebump_yaml::json_documents(&text).unwrap_or_default();
        Ok(Loaded {
            file: file.to_string(),
            lines: LineIndex::new(&text),
            text,
            docs,
            json,
        })
    }

    /// A file already parsed by the generic scan.
    pub fn from_parsed(file: &str, text: String, docs: Vec<Doc>) -> Loaded {
        // parse_located has already checked that libyaml reads every document.
        let json = imagebump_yaml::json_documents(&text).unwrap_or_default();
        Loaded {
            file: file.to_string(),
            lines: LineIndex::new(&text),
            text,
            docs,
            json,
        }
    }

    /// Documents parsed one by one (a chart template's, some of which are not YAML), with
    /// their values by document index (`null` for one that did not parse).
    pub fn from_documents(file: &str, text: String, docs: Vec<Doc>, json: Vec<Value>) -> Loaded {
        Loaded {
            file: file.to_string(),
            lines: LineIndex::new(&text),
            text,
            docs,
            json,
        }
    }

    fn ctx(&self) -> FileCtx<'_> {
        FileCtx {
            file: self.file.as_str().into(),
            text: &self.text,
            lines: self.lines.clone(),
        }
    }

    fn node(&self, doc: usize, path: &[PathSeg]) -> Option<&Node> {
        self.docs.get(doc)?.root.as_ref()?.at(path)
    }

    fn value(&self, doc: usize, path: &[PathSeg]) -> Option<&Value> {
        path.iter()
            .try_fold(self.json.get(doc)?, |v, seg| match seg {
                PathSeg::Key(k) => v.get(k.as_str()),
                PathSeg::Index(i) => v.get(*i),
            })
    }

    /// `(line, column)` of the node at `path`, else of its nearest existing parent.
    fn position(&self, doc: usize, path: &[PathSeg]) -> (usize, usize) {
        let offset = (0..=path.len())
            .rev()
            .find_map(|n| self.node(doc, path.get(..n)?))
            .map_or(0, Node::offset);
        self.lines.line_col(offset)
    }
}

/// Applications and `ImageUpdater` resources found while walking the tree.
#[derive(Default)]
pub struct Found {
    pub apps: Vec<App>,
    pub updaters: Vec<ImageUpdater>,
    /// The invalid ones, for the apps they were meant for.
    pub broken: Vec<argocd::BrokenUpdater>,
    /// ApplicationSets, until [`Found::generate`] turns them into `apps`.
    appsets: Vec<AppSet>,
    /// The Applications an ApplicationSet generated, by (file, document, name).
    generated: BTreeMap<AppId, Generator>,
    files: BTreeMap<String, Loaded>,
}

/// An Application's file, document and name.
type AppId = (String, usize, String);

/// For an Application an ApplicationSet generates: where its parameters are written, and
/// whether the template is a Go template.
#[derive(Clone)]
struct Generator {
    origins: Origins,
    go: bool,
}

impl Found {
    /// Whether argocd-image-updater configures any Application (an `ImageUpdater`, valid
    /// or not, or an app's annotations): only then is what the apps render asked for.
    pub fn configures_images(&self) -> bool {
        let annotated = |a: &App| {
            (a.annotations.keys()).any(|k| k.starts_with("argocd-image-updater.argoproj.io/"))
        };
        !self.updaters.is_empty() || !self.broken.is_empty() || self.apps.iter().any(annotated)
    }

    /// Read the Applications and `ImageUpdater`s of one file.
    pub fn add(&mut self, loaded: Loaded, problems: &mut Vec<Problem>) {
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
        let read = std::cell::RefCell::new(BTreeMap::<String, Option<Loaded>>::new());
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
fn over_run(set: &str) -> String {
    use argocd::appset::{MAX_RUN_APPS, MAX_RUN_RENDERED_BYTES};
    format!(
        "ApplicationSet {set}: the run's ApplicationSets generate more than {MAX_RUN_APPS} Applications or {} MiB of templates in all; its Applications past that are not read",
        MAX_RUN_RENDERED_BYTES >> 20
    )
}

/// The directories and the files of the tree, as Argo CD's repo server lists them for a
/// git generator: relative, `/`-separated, sorted, hidden directories (and what is below
/// them) left out, symbolic links not followed.
fn walk(root: &Tree) -> (Vec<String>, Vec<String>) {
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
const MAX_ENTRIES: usize = 200_000;

/// A file a git files generator matched, read inside the tree and size-capped; what
/// cannot be read is a problem at the file.
fn load_generator_file(root: &Tree, rel: &str, problems: &mut Vec<Problem>) -> Option<Loaded> {
    let read = root
        .resolve(rel)
        .and_then(|normalised| root.read(&normalised, MAX_FILE_BYTES));
    match read.map(|text| Loaded::parse(rel, text)) {
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
fn keep<T>(
    loaded: &Loaded,
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

fn key(k: &str) -> PathSeg {
    PathSeg::Key(k.into())
}

fn join(base: &[PathSeg], rest: &[&str]) -> Vec<PathSeg> {
    let mut p = base.to_vec();
    p.extend(rest.iter().map(|k| key(k)));
    p
}

/// `./apps/web/` → `apps/web`; `.` → ``.
fn clean_dir(p: &str) -> String {
    let p = p.trim_start_matches("./").trim_matches('/');
    if p == "." {
        String::new()
    } else {
        p.to_string()
    }
}

/// `name` in the directory `dir` (`""`: the root).
pub(super) fn in_dir(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// A write-back target path: relative to the source's path, or from the repository root
/// when it starts with `/`.
fn target_path(dir: &str, given: Option<&str>, default_name: &str) -> String {
    let path = match given {
        Some(g) if g.starts_with('/') => clean_dir(g),
        Some(g) => in_dir(dir, &clean_dir(g)),
        None => in_dir(dir, default_name),
    };
    lexical(&path)
}

/// `path` with `.` and `dir/..` folded away (`apps/web/../base` → `apps/base`), so that a
/// file has one name; a `..` above the root is kept, for the jail to refuse.
fn lexical(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            _ => parts.push(part),
        }
    }
    parts.join("/")
}

/// The state of one source: where it is, what overrides it, what Argo CD renders.
struct SourceState<'a> {
    source: &'a Source,
    /// The source's directory in this repository, when it has one here.
    dir: Option<String>,
    kind: SourceKind,
    /// The override files that exist, in the order Argo CD applies them.
    overrides: Vec<String>,
    /// The override file imagebump writes for this app.
    own_override: Option<String>,
    effective: Value,
    /// An override file exists but cannot be read: what Argo CD renders is unknown.
    broken: bool,
}

/// Where a current value is read: one scalar.
struct Current {
    file: String,
    doc: usize,
    at: Vec<PathSeg>,
    format: SlotFormat,
    kind: RefKind,
    /// For a tag alone (a Helm parameter), the image it belongs to.
    repository: Option<String>,
}

/// Turn the Applications into references, and give the files below their sources' paths
/// to their apps.
pub fn scan(
    root: &Tree,
    config: &Config,
    found: Found,
    rendering: Option<super::placement::Rendering>,
    out: &mut Discovery,
    policies: &mut Policies,
) {
    let Found {
        apps,
        updaters,
        broken,
        generated,
        files,
        ..
    } = found;
    let mut scan = Scan {
        root,
        namespace: &config.argocd.namespace,
        // A bad key path is reported by the file scan; here there are then none.
        helm_keys: super::helm::ImageKeys::compile(&config.helm).unwrap_or_default(),
        files,
        out,
        policies,
        generated,
        template: None,
        rendering,
        shared: config.scan.shared_bases,
        values_readers: values_readers(&apps, &config.argocd.namespace),
        managed_before: Default::default(),
        rendered_at: Vec::new(),
    };
    for app in &apps {
        scan.app(app, &updaters, &broken);
        if config.helm.charts {
            scan.charts(app);
        }
    }
}

struct Scan<'a> {
    root: &'a Tree,
    namespace: &'a str,
    helm_keys: super::helm::ImageKeys,
    /// Manifests, and the override, kustomization and values files read on demand.
    files: BTreeMap<String, Loaded>,
    out: &'a mut Discovery,
    policies: &'a mut Policies,
    /// The Applications ApplicationSets generate.
    generated: BTreeMap<AppId, Generator>,
    /// While reading one of them: its set's file and document, and its template.
    template: Option<(String, usize, Generator)>,
    /// What the apps' paths render (the include graph and the manifest images).
    rendering: Option<super::placement::Rendering>,
    /// Whether a base several paths render may be edited for one of them.
    shared: crate::config::SharedBases,
    /// The apps that read each values file (by the keys of the apps).
    values_readers: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// The places of the app's references that were managed before its
    /// argocd-image-updater configuration left the unlisted ones alone.
    managed_before: std::collections::BTreeSet<(arcstr::ArcStr, u32, u32)>,
    /// Where the app being read renders each image its configuration manages.
    rendered_at: Vec<(imagebump_model::name::ImageName, String)>,
}

/// Where an image's current version is: a scalar read here, or a reference discovery
/// already made (a manifest, patch or `images:` entry the app's path renders).
enum Now {
    At(Current),
    Found(ImageRef),
    /// It cannot be told: why.
    Unknown(String),
}

impl Scan<'_> {
    /// Read `rel` once; `false` when it does not exist or cannot be read (reported).
    fn load(&mut self, rel: &str) -> bool {
        if self.files.contains_key(rel) {
            return true;
        }
        // Only inside the tree: an override file or a resource that links out of it is
        // reported, never read.
        let path = match self.root.resolve(rel) {
            Ok(normalised) => normalised,
            Err(e) => {
                let p = Problem::at_file(rel, 0, 0, format!("not read: {e}"));
                if !self.out.problems.contains(&p) {
                    self.out.problems.push(p);
                }
                return false;
            }
        };
        match self.root.read(&path, MAX_FILE_BYTES) {
            Ok(text) => match Loaded::parse(rel, text) {
                Ok(l) => {
                    self.files.insert(rel.to_string(), l);
                    true
                }
                Err(p) => {
                    // The generic scan reports broken kustomizations and values files.
                    if !self.out.problems.contains(&p) {
                        self.out.problems.push(p);
                    }
                    false
                }
            },
            Err(_) => false,
        }
    }

    fn app(&mut self, app: &App, updaters: &[ImageUpdater], broken: &[argocd::BrokenUpdater]) {
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
        // As with argocd-image-updater, only the images it lists are updated; other
        // occurrences in the app's files are left alone, and said so.
        let listed: Vec<imagebump_model::name::ImageName> = c
            .images
            .iter()
            .filter_map(|i| parse_name(&i.name).ok())
            .collect();
        let elsewhere = format!(
            "not what Argo CD renders for app {app_key}: {} sets this image elsewhere",
            c.origin
        );
        self.leave_alone(&app_key, |r| {
            if listed.contains(&r.image) {
                elsewhere.clone()
            } else {
                format!(
                    "app {app_key} is configured by {}, which does not list this image",
                    c.origin
                )
            }
        });
        for img in &c.images {
            self.managed_image(app, &app_key, &c, img, &states);
        }
        self.name_what_renders(&app_key, &elsewhere);
        self.refuse_collisions(&app_key);
    }

    /// A listed image's other occurrences, left alone with `elsewhere`, name the place the
    /// app renders it from (the reference argocd-image-updater's configuration manages).
    fn name_what_renders(&mut self, app_key: &str, elsewhere: &str) {
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
    fn leave_alone(&mut self, app_key: &str, why: impl Fn(&ImageRef) -> String) {
        for r in &mut self.out.refs {
            if r.app() == Some(app_key) && r.unmanaged.is_none() {
                r.unmanaged = Some(why(r).into());
            }
        }
    }

    /// Two configured images that read or write the same value (e.g. two aliases on the
    /// same Helm keys) cannot both be right: both are reported and left alone. (The app's
    /// other references were left alone before, so its managed ones are the configured.)
    fn refuse_collisions(&mut self, app_key: &str) {
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

    /// Images in `helm.values`, a string of YAML (from the manifest or the override file
    /// Argo CD reads it from): edited inside the string when it is a literal block scalar
    /// (`values: |`), else listed as unmanaged. Whoever configures the app, they are listed
    /// before its argocd-image-updater settings are applied, which may leave them alone.
    fn values_string(&mut self, app: &App, app_key: &str, st: &SourceState) {
        if st.broken {
            return;
        }
        let (file, doc, at) = self.holder(app, st, &["helm", "values"]);
        let Some(loaded) = self.files.get(&file) else {
            return;
        };
        let (Some(Value::String(text)), Some(Node::Scalar(s))) =
            (loaded.value(doc, &at), loaded.node(doc, &at))
        else {
            return;
        };
        let (refs, problems) = match BlockText::literal(&loaded.text, s.span.clone(), text) {
            Some(block) => super::helm::in_block(&file, doc, &at, &block, &self.helm_keys),
            None => {
                let position = loaded.position(doc, &at);
                super::helm::in_string(&file, position, text, &self.helm_keys)
            }
        };
        let overrides = self.values_overrides(app, st);
        self.out.problems.extend(problems);
        for mut r in refs {
            r.unit = app_key.into();
            r.extra_mut().app = Some(app_key.to_string());
            let inner = r.slots.first().and_then(|s| s.inner.as_ref());
            if let Some(why) = inner.and_then(|i| overrides.iter().find(|(p, _)| *p == i.path)) {
                r.unmanaged = Some(format!("{} sets it again, over helm.values", why.1).into());
            }
            self.push(r, None);
        }
    }

    /// The value paths Argo CD sets over `helm.values`: `helm.valuesObject`'s scalars and
    /// `helm.parameters`, with where each comes from.
    fn values_overrides(&self, app: &App, st: &SourceState) -> Vec<(Vec<PathSeg>, &'static str)> {
        let mut out = Vec::new();
        let (file, doc, base) = self.holder(app, st, &["helm", "valuesObject"]);
        if let Some(object) = self.files.get(&file).and_then(|l| l.value(doc, &base)) {
            scalar_paths(object, &mut Vec::new(), &mut out);
        }
        let (file, doc, base) = self.holder(app, st, &["helm", "parameters"]);
        for p in self.list(&file, doc, &base) {
            let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
            if let Ok(path) = argocd::helm_path::parse(name) {
                out.push((path, "helm.parameters"));
            }
        }
        out
    }

    /// The app's values-file images whose value `helm.parameters` or `helm.valuesObject`
    /// set again: Helm renders those, so the values file's are left alone naming them.
    fn overridden_values(&mut self, app: &App, app_key: &str, st: &SourceState) {
        let overrides = self.values_overrides(app, st);
        if overrides.is_empty() {
            return;
        }
        let by = |what: &str| {
            let (file, _, _) = self.holder(app, st, &["helm", what]);
            format!(
                "{}{file} (helm.{what})",
                crate::discover::vocab::OVERRIDDEN_BY
            )
        };
        let (parameters, object) = (by("parameters"), by("valuesObject"));
        for r in self.out.refs.iter_mut() {
            let in_values = r.kind == RefKind::HelmValues
                && *r.file != *app.file
                && !st.overrides.iter().any(|o| **o == *r.file);
            if r.app() != Some(app_key) || !r.is_managed() || !in_values {
                continue;
            }
            let set = (r.slots.iter()).find_map(|s| overrides.iter().find(|(p, _)| **p == *s.path));
            if let Some((_, what)) = set {
                let by = if *what == "helm.parameters" {
                    &parameters
                } else {
                    &object
                };
                r.unmanaged = Some(by.clone().into());
            }
        }
    }

    fn at_app(&self, app: &App, message: String) -> Problem {
        let (line, column) = self.files.get(&app.file).map_or((0, 0), |m| {
            m.position(app.doc, &[key("metadata"), key("name")])
        });
        Problem::at_file(&app.file, line, column, message)
    }

    /// Settings that mean something else without a cluster are said, never ignored.
    fn notes(&mut self, app: &App, app_key: &str, c: &UpdaterConfig) {
        for n in &c.notes {
            let p = self.at_app(app, format!("Application {app_key} ({}): {n}", c.origin));
            if !self.out.notes.contains(&p) {
                self.out.notes.push(p);
            }
        }
    }

    fn source_state<'s>(&mut self, app: &App, source: &'s Source) -> SourceState<'s> {
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
    fn own_files(&mut self, st: &SourceState, app_key: &str, all: &[SourceState]) {
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

    /// The file, document and path holding `what` in the source Argo CD renders: the last
    /// override file that sets it, else the Application manifest.
    fn holder(&self, app: &App, st: &SourceState, what: &[&str]) -> (String, usize, Vec<PathSeg>) {
        let rel: Vec<PathSeg> = what.iter().map(|k| key(k)).collect();
        for o in st.overrides.iter().rev() {
            if self
                .files
                .get(o)
                .is_some_and(|l| l.value(0, &rel).is_some())
            {
                return (o.clone(), 0, rel);
            }
        }
        (app.file.clone(), app.doc, join(&st.source.at, what))
    }

    fn list(&self, file: &str, doc: usize, at: &[PathSeg]) -> Vec<Value> {
        self.files
            .get(file)
            .and_then(|l| l.value(doc, at))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    /// Images in an app's own source and its override files (the app has no
    /// argocd-image-updater configuration): each is edited where Argo CD reads it.
    fn plain_images(&mut self, app: &App, app_key: &str, st: &SourceState) {
        // Its override file is reported as broken; what it renders is unknown.
        if st.broken {
            return;
        }
        let mut found = Vec::new();
        let (file, doc, base) = self.holder(app, st, &["kustomize", "images"]);
        if file != app.file {
            self.overridden_by_file(app_key, &file, &base);
        }
        for (i, item) in self.list(&file, doc, &base).iter().enumerate() {
            if let Some(text) = item.as_str() {
                let prefix = kustomize_prefix(text);
                found.push(Current {
                    file: file.clone(),
                    doc,
                    at: with_index(&base, i, &[]),
                    format: SlotFormat::Reference {
                        name: prefix.into(),
                    },
                    kind: RefKind::ArgoKustomizeImage,
                    repository: None,
                });
            }
        }
        let (file, doc, base) = self.holder(app, st, &["helm", "parameters"]);
        let params = self.list(&file, doc, &base);
        for (i, repo) in image_parameter_pairs(&params) {
            found.push(Current {
                file: file.clone(),
                doc,
                at: with_index(&base, i, &["value"]),
                format: SlotFormat::Tag,
                kind: RefKind::ArgoHelmParameter,
                repository: Some(repo),
            });
        }
        let (file, doc, base) = self.holder(app, st, &["plugin", "env"]);
        for (i, item) in self.list(&file, doc, &base).iter().enumerate() {
            let value = item
                .get("value")
                .and_then(Value::as_str)
                .unwrap_or_default();
            // A one-line block scalar (`|`) ends with a line break the edit keeps.
            let line = value.strip_suffix('\n').unwrap_or(value);
            let is_image =
                line.contains('/') && parse_reference(line).is_ok_and(|r| r.tag.is_some());
            if is_image {
                let name = value.rsplit_once(':').map_or(value, |(n, _)| n).to_string();
                found.push(Current {
                    file: file.clone(),
                    doc,
                    at: with_index(&base, i, &["value"]),
                    format: SlotFormat::Reference { name: name.into() },
                    kind: RefKind::ArgoPluginEnv,
                    repository: None,
                });
            }
        }
        for c in found {
            if let Some(r) = self.current_ref(&c, app_key) {
                self.push(r, None);
            }
        }
        self.values_object(app, app_key, st);
        self.overridden_values(app, app_key, st);
    }

    /// The app's manifest images and `images:` entries that the `kustomize.images` of the
    /// override file `file` (at `base`) set again: Argo CD renders the override, so they
    /// are left alone naming it. (Placement does this for the Application's own list.)
    fn overridden_by_file(&mut self, app_key: &str, file: &str, base: &[PathSeg]) {
        let Some(loaded) = self.files.get(file) else {
            return;
        };
        let items = self.list(file, 0, base);
        let names: Vec<(String, usize)> = (items.iter().enumerate())
            .filter_map(|(i, v)| Some((kustomize_name_of(v.as_str()?), i)))
            .collect();
        let kinds = [RefKind::Workload, RefKind::Kustomize];
        for r in self.out.refs.iter_mut() {
            let ours = r.app() == Some(app_key) && r.is_managed() && kinds.contains(&r.kind);
            let Some((_, i)) = names
                .iter()
                .find(|(n, _)| ours && same_repository(n, &r.written))
            else {
                continue;
            };
            let (line, _) = loaded.position(0, &with_index(base, *i, &[]));
            let by = format!(
                "{}{file}:{line} (kustomize.images)",
                crate::discover::vocab::OVERRIDDEN_BY
            );
            r.unmanaged = Some(by.into());
        }
    }

    /// `helm.valuesObject` image blocks, in the manifest and in override files; for the
    /// same key path the last file Argo CD applies wins.
    fn values_object(&mut self, app: &App, app_key: &str, st: &SourceState) {
        let mut holders = vec![(
            app.file.clone(),
            app.doc,
            join(&st.source.at, &["helm", "valuesObject"]),
        )];
        for o in &st.overrides {
            holders.push((o.clone(), 0, vec![key("helm"), key("valuesObject")]));
        }
        let mut found: BTreeMap<Vec<PathSeg>, ImageRef> = BTreeMap::new();
        for (file, doc, base) in holders {
            let Some(loaded) = self.files.get(&file) else {
                continue;
            };
            let Some(node) = loaded.node(doc, &base) else {
                continue;
            };
            let ctx = loaded.ctx();
            let (mut refs, mut problems) = (Vec::new(), Vec::new());
            let keys = &self.helm_keys;
            super::helm::values(&ctx, doc, node, &base, keys, &mut refs, &mut problems);
            self.out.problems.extend(problems);
            for r in refs {
                let rel = r
                    .slots
                    .first()
                    .and_then(|s| s.path.get(base.len()..))
                    .map_or_else(Vec::new, <[PathSeg]>::to_vec);
                found.insert(rel, r);
            }
        }
        for r in found.into_values() {
            let Some(mut r) = self.relocate(r) else {
                continue;
            };
            r.unit = app_key.into();
            r.extra_mut().app = Some(app_key.to_string());
            self.push(r, None);
        }
    }

    /// A reference whose current value is the scalar `c` (edited in place).
    fn current_ref(&mut self, c: &Current, app_key: &str) -> Option<ImageRef> {
        let relocated = match self.locate(c) {
            Ok(r) => r,
            Err(why) => {
                self.template_note(c, &why);
                return None;
            }
        };
        let c = relocated.as_ref().unwrap_or(c);
        let loaded = self.files.get(&c.file)?;
        let Some(Node::Scalar(s)) = loaded.node(c.doc, &c.at) else {
            return None;
        };
        let ctx = loaded.ctx();
        let one_line = ctx.one_line(s);
        let value = one_line.unwrap_or(s.value.as_str());
        let (name, tag, digest) = match (&c.format, &c.kind) {
            (SlotFormat::Reference { .. }, RefKind::ArgoKustomizeImage) => {
                let k = parse_kustomize_image(value)?;
                (k.new_name, k.tag, k.digest)
            }
            (SlotFormat::Reference { .. }, _) => {
                let r = parse_reference(value).ok()?;
                (r.written, r.tag, r.digest)
            }
            (_, _) => {
                let (t, d) = split_digest(value);
                (c.repository.clone().unwrap_or_default(), t, d)
            }
        };
        // A tag whose image is named elsewhere (annotations) gets its name from the caller.
        let image = parse_name(if name.is_empty() { "unnamed" } else { &name }).ok()?;
        let mut r = ctx.new_ref(
            c.kind,
            app_key,
            s.span.start,
            Reference {
                name: image,
                written: name,
                tag: tag.clone(),
                digest: digest.clone(),
            },
        );
        r.extra_mut().app = Some(app_key.to_string());
        let format = match (&c.format, &digest) {
            (SlotFormat::Tag, Some(_)) => SlotFormat::TagAtDigest,
            // A `repo:tag` value keeps the repository as written in it.
            (SlotFormat::Reference { name }, _) if name.is_empty() => SlotFormat::Reference {
                name: arcstr::ArcStr::clone(&r.written),
            },
            (f, _) => f.clone(),
        };
        if value.contains("{{") {
            // An Application kept in a chart's `templates/`: Helm fills the value in.
            r.unmanaged = Some(
                arcstr::literal!(
                    "a template (`{{ }}`), filled in when the chart is rendered: not edited"
                )
                .into(),
            );
            return Some(r);
        }
        if let Err(why) = one_line {
            r.unmanaged = Some(why.into());
            return Some(r);
        }
        if tag.is_none() {
            r.unmanaged = Some(arcstr::literal!("no tag").into());
        } else {
            r.slots.push(ctx.slot(c.doc, c.at.clone(), s, format));
        }
        entry_digest(loaded, c, &mut r);
        Some(r)
    }

    /// The kustomization file in `dir` (`kustomization.yaml`, `.yml` or `Kustomization`, as
    /// kustomize looks for it), if there is one.
    fn existing_kustomization(&self, dir: &str) -> Option<String> {
        ["kustomization.yaml", "kustomization.yml", "Kustomization"]
            .into_iter()
            .map(|n| in_dir(dir, n))
            .find(|f| self.root.is_file(f))
    }

    /// The kustomization file of the write-back directory `kdir` of the app path `dir`; `Err`
    /// names `kdir` and says why Argo CD would not render what is written there: it has no
    /// kustomization (nothing is created), or `dir` does not include it.
    fn kustomization_target(
        &mut self,
        dir: &str,
        kdir: &str,
        current: &str,
    ) -> Result<String, String> {
        let shown = if kdir.is_empty() { "." } else { kdir };
        let Some(file) = self.existing_kustomization(kdir) else {
            return Err(format!("{shown}, which has no kustomization"));
        };
        if !self.rendered_dirs(dir).contains(kdir) {
            let path = if dir.is_empty() { "." } else { dir };
            return Err(format!(
                "{shown}, which the app's path {path} does not include: Argo CD would not render it"
            ));
        }
        // Its entry sets the version only over what it renders: the value read as current
        // must be in it (a manifest, patch or entry of a kustomization it includes), not in
        // a patch above it or Argo CD's own kustomize.images.
        if !self.renders_file(kdir, current) {
            return Err(format!(
                "{shown}, which does not render {current}, where the version the app renders is set: an entry there would change nothing Argo CD renders"
            ));
        }
        // A directory other paths render too moves them all: only where the operator
        // chose to edit shared bases (`scan.sharedBases: in-place`).
        let others = (self.rendering.as_ref()).map_or_else(Vec::new, |r| r.other_leaves(kdir, dir));
        if !others.is_empty() && self.shared != crate::config::SharedBases::InPlace {
            return Err(format!(
                "{shown}, which {} render too: an entry there would move them as well (scan.sharedBases: in-place allows it)",
                others.join(", ")
            ));
        }
        Ok(file)
    }

    /// A problem at the app's write-back target annotation when the annotations configure
    /// it, else at the app (the message names the ImageUpdater).
    fn at_target(&self, app: &App, config: &UpdaterConfig, message: String) -> Problem {
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

    /// Record `r` with its policy (configuration, the repository's own
    /// argocd-image-updater settings in `layer`, an inline marker) and the texts it edits.
    fn push(&mut self, r: ImageRef, layer: Option<(&str, &PolicySpec)>) {
        self.push_with(r, layer, None);
    }

    /// [`Self::push`], with the argocd-image-updater pull secret the image names, looked
    /// up in the operator's `credentials.pullSecrets` (a note at `app` when it is not used).
    fn push_with(
        &mut self,
        mut r: ImageRef,
        layer: Option<(&str, &PolicySpec)>,
        secret: Option<(&App, &PullSecretName)>,
    ) {
        // A value written literally in an ApplicationSet's template is the same for every
        // Application it generates: one reference.
        // (A value the generic scan found there, by its marker, is this one now.)
        if self.template.is_some() {
            self.out
                .refs
                .retain(|o| o.app().is_some() || !same_place(o, &r));
            if self.out.refs.iter().any(|o| same_place(o, &r)) {
                return;
            }
        }
        let result = match self.files.get(&*r.file) {
            Some(l) => super::fold::apply_policy(&l.ctx(), self.policies, &mut r, layer),
            None => Ok(()),
        };
        if let Err(p) = result {
            self.out.problems.push(p);
        }
        if let Some((app, secret)) = secret.filter(|_| r.is_managed()) {
            self.pull_secret(app, &mut r, secret);
        }
        if r.is_managed() {
            for f in r.touched_files() {
                if let Some(l) = self.files.get(f) {
                    self.out
                        .sources
                        .entry(f.into())
                        .or_insert_with(|| l.text.as_str().into());
                }
            }
        }
        self.out.refs.push(r);
    }

    /// Give `r` the operator's credentials for the pull secret its settings name, or say
    /// at `app` why they are not used.
    fn pull_secret(&mut self, app: &App, r: &mut ImageRef, secret: &PullSecretName) {
        match self
            .policies
            .with_pull_secret(r.policy.clone(), &r.image, &secret.value)
        {
            Ok(policy) => r.policy = policy,
            Err(why) => {
                let p = self.at_app(
                    app,
                    format!("Application {}: {}: {why}", app.name, secret.key),
                );
                if !self.out.notes.contains(&p) {
                    self.out.notes.push(p);
                }
            }
        }
    }

    /// The configured image's name; a variable or a pattern names none (a note), a name
    /// that does not parse is an error.
    fn image_name(
        &mut self,
        app: &App,
        app_key: &str,
        img: &UpdaterImage,
    ) -> Option<imagebump_model::name::ImageName> {
        let e = match parse_name(&img.name) {
            Ok(n) => return Some(n),
            Err(e) => e,
        };
        if let Some(why) = imagebump_model::name::placeholder(&img.name) {
            let message = format!(
                "Application {app_key}: image {} is {why}: left alone",
                img.name
            );
            let p = self.at_app(app, message);
            self.out.notes.push(p);
        } else {
            let p = self.at_app(
                app,
                format!("Application {app_key}: image {:?}: {e}", img.name),
            );
            self.out.problems.push(p);
        }
        None
    }

    /// One image argocd-image-updater is configured to manage.
    fn managed_image(
        &mut self,
        app: &App,
        app_key: &str,
        config: &UpdaterConfig,
        img: &UpdaterImage,
        states: &[SourceState],
    ) {
        let Some(image) = self.image_name(app, app_key, img) else {
            return;
        };
        let Some(st) = source_for(img, states) else {
            return;
        };
        let kname = img
            .kustomize_name
            .clone()
            .unwrap_or_else(|| img.name.clone());
        let keys = img.helm.clone().unwrap_or(HelmKeys::NameTag {
            name: "image.name".into(),
            tag: "image.tag".into(),
        });
        // A plugin app written back to a kustomization (a kustomize-based plugin) is read
        // the way kustomize renders it.
        let to_kustomization =
            matches!(config.write_back.target, WriteBackTarget::Kustomization(_));
        let is_kustomize = st.kind == SourceKind::Kustomize
            || (st.kind == SourceKind::Plugin && img.plugin.is_none() && to_kustomization);
        if st.broken {
            return;
        }
        // Where the value is now: what Argo CD renders, else the files of the source.
        let current = if let Some(pk) = &img.plugin {
            self.plugin_current(app, st, pk).map(Now::At)
        } else if is_kustomize {
            self.kustomize_current(app, st, &kname, &img.name)
        } else {
            self.helm_current(app, st, states, &keys, &img.name)
                .map(Now::At)
        };
        let (found, why) = self.found_ref(app, app_key, img, current);
        let mut r = match found {
            Some(r) => r,
            None => self.unread_ref(app, app_key, &image, img, why),
        };
        self.replace_generic(&r);
        r.image = image.into();
        r.written = img.name.as_str().into();
        if r.is_managed() {
            match self.resolve_target(app, st, states, config, &r.file) {
                Ok(target) => self.write_back(st, target, img, &kname, &keys, &mut r),
                Err(why) => r.unmanaged = Some(why.into()),
            }
        }
        let label = format!(
            "{} ({})",
            config.origin,
            img.alias.as_deref().unwrap_or(&img.name)
        );
        let secret = img.pull_secret.as_ref().map(|s| (app, s));
        if r.tag.is_some() || r.digest.is_some() {
            let at = format!("{}:{}", r.file, r.line);
            self.rendered_at.push(((*r.image).clone(), at));
        }
        self.push_with(r, Some((&label, &img.policy)), secret);
    }

    /// The reference of the current version found, made the app's; else why none.
    fn found_ref(
        &mut self,
        app: &App,
        app_key: &str,
        img: &UpdaterImage,
        current: Option<Now>,
    ) -> (Option<ImageRef>, String) {
        let not_in_git = "its current version is not in git (argocd-image-updater read it from the cluster): set it once in the app's source, values or override file";
        match current {
            Some(Now::At(c)) => (self.current_ref(&c, app_key), not_in_git.to_string()),
            Some(Now::Found(r)) => (Some(self.adopt(r, app_key)), not_in_git.to_string()),
            Some(Now::Unknown(why)) => {
                let message = format!("Application {app_key}: image {}: {why}", img.name);
                let p = self.at_app(app, message);
                self.out.problems.push(p);
                (None, why)
            }
            None => (None, not_in_git.to_string()),
        }
    }

    /// A reference the generic scan found at the place of `r` is `r` now.
    fn replace_generic(&mut self, r: &ImageRef) {
        let Some(slot) = r.slots.first() else {
            return;
        };
        // The same document: another Application of a multi-document file has the same
        // paths.
        let (file, doc, path) = (r.file.clone(), slot.doc, slot.path.clone());
        self.out.refs.retain(|o| {
            !(o.file == file
                && o.slots.iter().any(|s| {
                    s.doc == doc && (s.path.starts_with(&path) || path.starts_with(&s.path))
                }))
        });
    }

    /// A reference discovery made, as the app's: managed again when only the app's
    /// configuration left it alone (it is the value the configuration manages).
    fn adopt(&mut self, mut r: ImageRef, app_key: &str) -> ImageRef {
        // Read here too: the configuration's policy is applied, and the text kept, from it.
        self.load(&r.file);
        let place = (arcstr::ArcStr::clone(&r.file), r.line, r.column);
        if self.managed_before.contains(&place) {
            r.unmanaged = None;
        }
        r.unit = app_key.into();
        r.extra_mut().app = Some(app_key.to_string());
        r
    }

    /// The reference of a configured image whose current version cannot be read (`why`),
    /// at the app's annotations: listed, never updated.
    fn unread_ref(
        &self,
        app: &App,
        app_key: &str,
        image: &imagebump_model::name::ImageName,
        img: &UpdaterImage,
        why: String,
    ) -> ImageRef {
        let (line, column) = self.files.get(&app.file).map_or((0, 0), |m| {
            m.position(app.doc, &[key("metadata"), key("annotations")])
        });
        ImageRef {
            file: app.file.as_str().into(),
            line: crate::discover::vocab::saturating_u32(line),
            column: crate::discover::vocab::saturating_u32(column),
            kind: RefKind::ArgoAnnotation,
            image: image.clone().into(),
            written: img.name.as_str().into(),
            tag: None,
            digest: None,
            unit: app_key.into(),
            policy: Default::default(),
            unmanaged: Some(why.into()),
            slots: crate::discover::vocab::Slots::default(),
            extra: Some(Box::new(crate::discover::vocab::Extra {
                app: Some(app_key.to_string()),
                ..Default::default()
            })),
        }
    }

    /// Kustomize: the app's rendered `kustomize.images`; else what its path renders (the
    /// manifest, patch or `images:` entry that sets the version last); else an `images:`
    /// entry of a kustomization it includes, the nearest first.
    fn kustomize_current(
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
            Err(why) => return Some(Now::Unknown(why)),
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
    fn rendered_ref(
        &mut self,
        dir: &str,
        kname: &str,
        image: &str,
    ) -> Result<Option<ImageRef>, String> {
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
                    let (super::placement::Source::Manifest { file, line }
                    | super::placement::Source::Set { file, line }) = source;
                    return Err(format!("the app's path {dir} renders the version {file}:{line} sets, which imagebump cannot edit"));
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
                return Err(format!("the app's path {dir} renders it at several versions ({}); argocd-image-updater's one value would move them all: set them to one version first", places.join(", ")));
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
    fn ref_at(
        &self,
        rendering: &super::placement::Rendering,
        dir: &str,
        source: &super::placement::Source,
    ) -> Option<usize> {
        use super::placement::Source;
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
    fn entry_current(
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
    fn included_dirs(&self, dir: &str, kfile: &str) -> Vec<String> {
        let mut includes = self.list(kfile, 0, &[key("components")]);
        includes.extend(self.list(kfile, 0, &[key("resources")]));
        includes.extend(self.list(kfile, 0, &[key("bases")]));
        let base = if dir.is_empty() { "." } else { dir };
        (includes.iter().filter_map(Value::as_str))
            .filter_map(|res| super::kustomize::graph::join(base, res))
            .filter(|t| !(t.ends_with(".yaml") || t.ends_with(".yml")))
            .map(|t| if t == "." { String::new() } else { t })
            .filter(|t| self.root.is_dir(t))
            .collect()
    }

    /// The kustomization directories the path `dir` renders: itself, and those it includes,
    /// directly or through others.
    fn rendered_dirs(&mut self, dir: &str) -> std::collections::BTreeSet<String> {
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
    fn renders_file(&mut self, kdir: &str, file: &str) -> bool {
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
                .filter_map(|w| super::kustomize::graph::join(base, w))
                .any(|w| w == file)
        })
    }

    /// Plugin sources: the rendered `plugin.env` variable holding the tag (or the spec).
    fn plugin_current(&mut self, app: &App, st: &SourceState, keys: &HelmKeys) -> Option<Current> {
        let (file, doc, base) = self.holder(app, st, &["plugin", "env"]);
        let env = self.list(&file, doc, &base);
        let (var, repo, spec) = match keys {
            HelmKeys::NameTag { name, tag } => (tag.as_str(), param_value(&env, name), false),
            HelmKeys::Spec(v) => (v.as_str(), None, true),
        };
        let i = env
            .iter()
            .position(|p| p.get("name").and_then(Value::as_str) == Some(var))?;
        Some(Current {
            file,
            doc,
            at: with_index(&base, i, &["value"]),
            format: if spec {
                SlotFormat::Reference { name: "".into() }
            } else {
                SlotFormat::Tag
            },
            kind: RefKind::ArgoPluginEnv,
            repository: repo,
        })
    }

    /// Helm: the rendered `helm.parameters`, then `helm.valuesObject`, then the values files.
    fn helm_current(
        &mut self,
        app: &App,
        st: &SourceState,
        all: &[SourceState],
        keys: &HelmKeys,
        image: &str,
    ) -> Option<Current> {
        // A tag key whose name key holds another image is that image's value.
        let ours = |repo: &Option<String>| repo.as_deref().is_none_or(|r| same_image(r, image));
        let (tag_key, spec) = match keys {
            HelmKeys::NameTag { tag, .. } => (tag.as_str(), false),
            HelmKeys::Spec(k) => (k.as_str(), true),
        };
        let repo = match keys {
            HelmKeys::NameTag { name, .. } => {
                let (file, doc, base) = self.holder(app, st, &["helm", "parameters"]);
                param_value(&self.list(&file, doc, &base), name)
            }
            HelmKeys::Spec(_) => None,
        };
        let format = |repo: &Option<String>| {
            if spec {
                SlotFormat::Reference {
                    name: repo.as_deref().unwrap_or_default().into(),
                }
            } else {
                SlotFormat::Tag
            }
        };
        let (file, doc, base) = self.holder(app, st, &["helm", "parameters"]);
        let params = self.list(&file, doc, &base);
        if let Some(i) = params
            .iter()
            .position(|p| p.get("name").and_then(Value::as_str) == Some(tag_key))
            .filter(|_| ours(&repo))
        {
            return Some(Current {
                file,
                doc,
                at: with_index(&base, i, &["value"]),
                format: format(&repo),
                kind: RefKind::ArgoHelmParameter,
                repository: repo,
            });
        }
        let (file, doc, base) = self.holder(app, st, &["helm", "valuesObject"]);
        let object = self
            .files
            .get(&file)
            .and_then(|l| l.value(doc, &base))
            .cloned();
        let object_repo = match keys {
            HelmKeys::NameTag { name, .. } => object
                .as_ref()
                .and_then(|o| argocd::helm_path::lookup(o, name))
                .and_then(|(v, _)| v.as_str().map(str::to_string)),
            HelmKeys::Spec(_) => None,
        };
        if let Some((_, segs)) = object
            .as_ref()
            .and_then(|o| argocd::helm_path::lookup(o, tag_key))
            .filter(|_| ours(&repo) && ours(&object_repo))
        {
            let mut at = base.clone();
            at.extend(segs);
            return Some(Current {
                file,
                doc,
                at,
                format: format(&repo),
                kind: RefKind::HelmValues,
                repository: repo,
            });
        }
        // Helm reads the chart's own values.yaml first, whatever valueFiles lists.
        let mut files = value_files(st, all);
        if let (SourceKind::Helm, Some(dir)) = (&st.kind, &st.dir) {
            let chart_values = in_dir(dir, "values.yaml");
            if !files.contains(&chart_values) {
                files.insert(0, chart_values);
            }
        }
        for vf in files.into_iter().rev() {
            if !self.load(&vf) {
                continue;
            }
            let values = self
                .files
                .get(&vf)
                .and_then(|l| l.json.first())
                .cloned()
                .unwrap_or(Value::Null);
            if let Some((_, segs)) = argocd::helm_path::lookup(&values, tag_key) {
                let repo = repo.clone().or_else(|| match keys {
                    HelmKeys::NameTag { name, .. } => argocd::helm_path::lookup(&values, name)
                        .and_then(|(v, _)| v.as_str().map(str::to_string)),
                    HelmKeys::Spec(_) => None,
                });
                if !ours(&repo) {
                    continue;
                }
                return Some(Current {
                    file: vf,
                    doc: 0,
                    at: segs,
                    format: format(&repo),
                    kind: RefKind::HelmValues,
                    repository: repo,
                });
            }
        }
        None
    }

    /// The file the app's write-back target names; `Err` (reported at the annotation) when
    /// Argo CD would not render what is written there: a `kustomization:<dir>` without a
    /// kustomization or outside what the app's path includes, a `helmvalues:<file>` that is
    /// not among the values files the source renders.
    fn resolve_target(
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
    fn write_back(
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

/// The source an image's settings point at: a plugin's, kustomize's or Helm's, else the
/// first.
fn source_for<'s, 'a>(
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

/// A `helmvalues` target `file` of the source `st`, checked against what Helm renders: one
/// of the values files it reads (the chart's `values.yaml` first, then `valueFiles`), at or
/// after the one the current value is read from (`current`): a later values file, or
/// `helm.parameters` / `valuesObject`, set the key again over it.
fn values_target(
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

/// The argocd-image-updater configuration of `app`: the ImageUpdater that selects it, else
/// its annotations; `Err` when it cannot be read.
fn configuration(
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
        Ok(None) => argocd::annotations::from_annotations(app).map(|c| {
            c.map(|mut c| {
                if !updaters.is_empty() {
                    c.notes.push("no ImageUpdater in the repository selects this app; its annotations are read as argocd-image-updater 0.x reads them".into());
                }
                c
            })
        }),
        Err(e) => Err(e),
    }
}

/// The values files each app's sources read (its chart's `values.yaml`, its `valueFiles`,
/// `$ref/…` ones included, as the Applications write them), with the apps reading them.
fn values_readers(
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

/// The value at `path` in `v`, if there is one.
fn value_at<'v>(v: &'v Value, path: &[PathSeg]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, seg| match seg {
        PathSeg::Key(k) => v.get(k.as_str()),
        PathSeg::Index(i) => v.get(*i),
    })
}

enum Target {
    InPlace,
    Override(String),
    Kustomization(String),
    Values(String),
}

/// The paths of every scalar below `v`, as set by `helm.valuesObject`.
fn scalar_paths(v: &Value, path: &mut Vec<PathSeg>, out: &mut Vec<(Vec<PathSeg>, &'static str)>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                path.push(key(k));
                scalar_paths(v, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                path.push(PathSeg::Index(i));
                scalar_paths(v, path, out);
                path.pop();
            }
        }
        _ => out.push((path.clone(), "helm.valuesObject")),
    }
}

/// The largest file read for Argo CD (an Application, an override file, a resource).
const MAX_FILE_BYTES: u64 = 16 << 20;

// Positions in these files are kept in 32 bits (`crate::discover::vocab::saturating_u32`).
const _: () = assert!(MAX_FILE_BYTES <= u32::MAX as u64);

/// Whether a repository value (possibly the short form without the registry, as Helm
/// charts often split it) names `image`.
fn same_image(repo: &str, image: &str) -> bool {
    repo == image
        || image.ends_with(&format!("/{repo}"))
        || matches!((parse_name(repo), parse_name(image)), (Ok(a), Ok(b)) if a == b)
}

/// The source's plugin environment, `{name, value}` items.
fn plugin_env(effective: &Value) -> Vec<Value> {
    let env = effective.pointer("/plugin/env").and_then(Value::as_array);
    env.into_iter()
        .flatten()
        .map(|p| {
            serde_json::json!({
                "name": p.get("name").cloned().unwrap_or(Value::Null),
                "value": p.get("value").cloned().unwrap_or(Value::Null),
            })
        })
        .collect()
}

/// The source's Helm parameters as an override file spells them: `name`, `value`,
/// `forcestring` (argocd-image-updater's field names; Argo CD reads them case-insensitively).
fn helm_parameters(effective: &Value) -> Vec<Value> {
    let params = effective
        .pointer("/helm/parameters")
        .and_then(Value::as_array);
    params
        .into_iter()
        .flatten()
        .map(|p| {
            let force = p
                .get("forceString")
                .or_else(|| p.get("forcestring"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            serde_json::json!({
                "name": p.get("name").cloned().unwrap_or(Value::Null),
                "value": p.get("value").cloned().unwrap_or(Value::Null),
                "forcestring": force,
            })
        })
        .collect()
}

/// The Helm parameters (or values keys) argocd-image-updater writes for an image.
fn helm_params(keys: &HelmKeys, image: &str) -> Vec<(String, Template)> {
    match keys {
        HelmKeys::NameTag { name, tag } => vec![
            (name.clone(), Template::Text(image.to_string())),
            (tag.clone(), Template::Tag),
        ],
        HelmKeys::Spec(k) => vec![(
            k.clone(),
            Template::Reference {
                prefix: image.to_string(),
            },
        )],
    }
}

/// Where a Helm values key goes: the existing scalar, else new nested keys (as AIU does).
fn values_path(values: &Value, k: &str) -> Result<Vec<PathSeg>, String> {
    if values.is_null() {
        return argocd::helm_path::parse(k);
    }
    match argocd::helm_path::write_target(values, k)? {
        argocd::helm_path::WriteTarget::Existing(p) => Ok(p),
        argocd::helm_path::WriteTarget::Create { parent, keys } => {
            let mut p = parent;
            p.extend(keys.into_iter().map(PathSeg::Key));
            Ok(p)
        }
    }
}

fn param_value(params: &[Value], name: &str) -> Option<String> {
    params
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
        .and_then(|p| p.get("value"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn with_index(base: &[PathSeg], i: usize, rest: &[&str]) -> Vec<PathSeg> {
    let mut p = base.to_vec();
    p.push(PathSeg::Index(i));
    p.extend(rest.iter().map(|k| key(k)));
    p
}

/// `tag@sha256:…` → (tag, digest).
fn split_digest(value: &str) -> (Option<String>, Option<String>) {
    match value.split_once('@') {
        Some((t, d)) => (
            Some(t.to_string()).filter(|t| !t.is_empty()),
            Some(d.to_string()),
        ),
        None => (Some(value.to_string()).filter(|t| !t.is_empty()), None),
    }
}

/// The part of a kustomize image string before `:tag` / `@digest` (`old=new`, or `new`).
fn kustomize_prefix(s: &str) -> String {
    match parse_kustomize_image(s) {
        Some(k) => match k.old_name {
            Some(old) => format!("{old}={}", k.new_name),
            None => k.new_name,
        },
        None => s.to_string(),
    }
}

fn kustomize_name_of(s: &str) -> String {
    match parse_kustomize_image(s) {
        Some(k) => k.old_name.unwrap_or(k.new_name),
        None => s.to_string(),
    }
}

/// Helm parameters that name an image without annotations: `X.repository` with a
/// `X.tag` beside it. Returns the index of the tag parameter and the repository.
fn image_parameter_pairs(params: &[Value]) -> Vec<(usize, String)> {
    let by_name: BTreeMap<&str, (usize, &str)> = params
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((p.get("name")?.as_str()?, (i, p.get("value")?.as_str()?))))
        .collect();
    let mut out = Vec::new();
    for (name, (_, repo)) in &by_name {
        let Some(prefix) = name.strip_suffix("repository") else {
            continue;
        };
        if let Some((i, _)) = by_name.get(format!("{prefix}tag").as_str()) {
            let registry = by_name
                .get(format!("{prefix}registry").as_str())
                .map(|(_, r)| *r);
            let repo = match registry {
                Some(reg) if !reg.is_empty() => format!("{}/{repo}", reg.trim_end_matches('/')),
                _ => repo.to_string(),
            };
            out.push((*i, repo));
        }
    }
    out.sort();
    out
}

/// A source with a path but no tool block is what its files say.
fn kind_from_files(root: &Tree, dir: &str) -> SourceKind {
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
fn value_files(st: &SourceState, all: &[SourceState]) -> Vec<String> {
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

/// A kustomization entry's `digest:` beside its `newTag:` is what kustomize deploys: it is
/// the current digest of `r`, and the new one is written there (the tag stays a tag).
fn entry_digest(loaded: &Loaded, c: &Current, r: &mut ImageRef) {
    let Some((PathSeg::Key(last), parent)) = c.at.split_last() else {
        return;
    };
    let mut at = parent.to_vec();
    at.push(key("digest"));
    if let (true, Some(Node::Scalar(d))) = (last == "newTag", loaded.node(c.doc, &at)) {
        r.digest = Some(d.value.as_str().into());
        r.slots
            .push(loaded.ctx().slot(c.doc, at, d, SlotFormat::Digest));
    }
}
