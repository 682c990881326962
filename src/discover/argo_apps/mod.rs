//! Argo CD Applications kept in the repository (app-of-apps): the images of their own
//! sources (`kustomize.images`, `helm.parameters`, `helm.valuesObject`, the YAML text of
//! `helm.values`, `plugin.env`), the
//! images argocd-image-updater is configured to manage (annotations or `ImageUpdater`
//! resources), the parameter override files Argo CD applies (`.argocd-source.yaml`, then
//! `.argocd-source-<app>.yaml`), and where each new value is written.
//!
//! A source's `path` is taken to be in this repository when that directory exists here;
//! the files below it, and values files it names, belong to the app (`unit` is its name).

mod app;
mod chart_source;
mod helm;
mod kustomize;
mod own_images;
mod resources;
mod templated;
mod updater;
mod write_back;

pub use resources::{ArgoResources, ParsedFile};

use crate::discover::vocab::{ImageRef, RefKind, SlotFormat};
use crate::discover::Discovery;
use crate::source::tree::Tree;
use app::values_readers;
use imagebump_argocd::{App, PullSecretName, Source, SourceKind};
use imagebump_model::config::Config;
use imagebump_model::policy::PolicySpec;
use imagebump_model::Problem;
use imagebump_policy::rules::Policies;
use imagebump_yaml::PathSeg;
use own_images::scalar_paths;
use resources::{AppId, Generator};
use serde_json::Value;
use std::collections::BTreeMap;
use templated::same_place;
use updater::split_digest;

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
    found: ArgoResources,
    rendering: Option<super::placement::Rendering>,
    out: &mut Discovery,
    policies: &mut Policies,
) {
    let ArgoResources {
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
    files: BTreeMap<String, ParsedFile>,
    out: &'a mut Discovery,
    policies: &'a mut Policies,
    /// The Applications ApplicationSets generate.
    generated: BTreeMap<AppId, Generator>,
    /// While reading one of them: its set's file and document, and its template.
    template: Option<(String, usize, Generator)>,
    /// What the apps' paths render (the include graph and the manifest images).
    rendering: Option<super::placement::Rendering>,
    /// Whether a base several paths render may be edited for one of them.
    shared: imagebump_model::config::SharedBases,
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

enum Target {
    InPlace,
    Override(String),
    Kustomization(String),
    Values(String),
}

/// The largest file read for Argo CD (an Application, an override file, a resource).
const MAX_FILE_BYTES: u64 = 16 << 20;

// Positions in these files are kept in 32 bits (`crate::discover::vocab::saturating_u32`).
const _: () = assert!(MAX_FILE_BYTES <= u32::MAX as u64);

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
            Ok(text) => match ParsedFile::parse(rel, text) {
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

    fn at_app(&self, app: &App, message: String) -> Problem {
        let (line, column) = self.files.get(&app.file).map_or((0, 0), |m| {
            m.position(app.doc, &[key("metadata"), key("name")])
        });
        Problem::at_file(&app.file, line, column, message)
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
}
