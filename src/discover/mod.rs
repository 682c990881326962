//! Find every image reference in the manifest tree, with the exact location of its value(s).

pub mod argo_apps;
pub mod chart_values;
pub mod charts;
mod fingerprints;
pub mod flux;
mod fold;
pub mod generated;
pub mod helm;
pub mod helm_release;
pub mod kustomize;
pub mod markers;
pub mod placement;
mod scan_file;
pub mod templates;
pub mod vocab;
mod walk;
pub mod workloads;

pub use fingerprints::Fingerprints;
pub use vocab::*;

use arcstr::ArcStr;
use std::collections::BTreeMap;

use crate::source::tree::Tree;

use crate::chunked::Chunked;
use fold::Fold;
use imagebump_model::config::Config;
use imagebump_model::Problem;
use imagebump_policy::rules::Policies;
use scan_file::{FirstRead, Keys};
use walk::{files, first_look, FileKind, Filters, Listed};

/// Everything discovery found.
#[derive(Debug, Default)]
pub struct Discovery {
    /// In chunks: read in as discovery goes, a list grown in one block would be copied
    /// into larger blocks, each left to the allocator as the next is made (`chunked.rs`).
    pub refs: Chunked<ImageRef>,
    /// Text of every file that holds a managed reference, for the edit stage (by the file's
    /// name, shared with its references), but those given up for a report-only run
    /// ([`SourceTexts::NeededOnly`]: their fingerprints are kept, their texts are not).
    pub sources: BTreeMap<ArcStr, ArcStr>,
    /// The fingerprints of the files with managed references whose values discovery read
    /// whole (see `Scanned`), held texts or not.
    pub fingerprints: Fingerprints,
    pub problems: Vec<Problem>,
    /// Things the user should know that are not errors (settings honoured differently).
    pub notes: Vec<Problem>,
    pub files_scanned: usize,
    /// Argo CD Applications that install a chart, for the images of its default values.
    pub chart_apps: Vec<charts::ChartApp>,
}

impl Discovery {
    /// Give up where the references imagebump does not manage are written: nothing edits
    /// them, and the report names them by file and line. For the run, once promotion has
    /// read the tree (a source environment's value is read through its slots): a tree of
    /// kustomize overlays holds about one such reference for every two it manages (the
    /// base images its `images:` entries override), each with its slots' paths and text.
    /// The texts of the files no managed reference is written to go too: only the plan
    /// reads them (a tree of kustomize overlays: every base's manifest).
    pub fn release_unmanaged(&mut self) {
        for r in self.refs.iter_mut().filter(|r| !r.is_managed()) {
            r.slots = Slots::default();
            if let Some(e) = &mut r.extra {
                e.creations = Vec::new();
            }
        }
        // foldhash, as in `Names`: a lookup for each of 45,000 references at 10,000 apps.
        let written: foldhash::HashSet<&str> =
            self.refs.iter().flat_map(ImageRef::touched_files).collect();
        self.sources.retain(|f, _| written.contains(&**f));
        self.fingerprints.retain(|f| written.contains(f));
    }

    /// Give up where every value is, once nothing edits them any more (a report-only run's
    /// plan, once its edits are verified: 45,000 references' slots at 10,000 apps). Not
    /// those of a reference that creates values: the file its new value is written to is
    /// found from its slots and creations together ([`ImageRef::written_file`]).
    pub fn release_slots(&mut self) {
        for r in self.refs.iter_mut().filter(|r| r.creations().is_empty()) {
            r.slots = Slots::default();
        }
    }

    /// Only what lies under `scope` (a directory relative to `root`): the references read
    /// and written there, the problems and notes of its files. What is outside was read
    /// for its settings (Argo CD Applications, ImageUpdaters, Flux policies) only.
    pub fn limit_to(&mut self, tree: &Tree, scope: &str) {
        let prefix = format!("{}/", scope.trim_end_matches('/'));
        let inside = |f: &str| f.starts_with(&prefix);
        self.refs.retain(|r| within(r, &prefix));
        self.sources.retain(|f, _| inside(f));
        self.fingerprints.retain(inside);
        // A problem at a file of the tree outside the scope is not this run's.
        let ours = |p: &Problem| {
            let file = p.location.split(':').next().unwrap_or_default();
            inside(file) || file.is_empty() || !tree.exists(file)
        };
        self.problems.retain(ours);
        self.notes.retain(ours);
    }
}

/// Is `r` read and written only under `scope` (a directory relative to the root)?
pub fn in_scope(r: &ImageRef, scope: &str) -> bool {
    within(r, &format!("{}/", scope.trim_end_matches('/')))
}

/// [`in_scope`] with the scope's `prefix` (`dir/`) made once.
fn within(r: &ImageRef, prefix: &str) -> bool {
    let inside = |f: &str| f.starts_with(prefix);
    inside(&r.file)
        && r.writes_to().is_none_or(inside)
        && r.creations().iter().all(|c| inside(&c.file))
}

/// Walk `tree` and collect every reference.
pub fn discover(tree: &Tree, config: &Config) -> Discovery {
    discover_with(tree, config, None, SourceTexts::All)
}

/// What discovery keeps of the texts of the files its managed references are in, for the
/// plan ([`Discovery::sources`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceTexts {
    /// Every one: the plan writes new texts (a diff, `--write`, a push, pull requests).
    All,
    /// Only those the plan cannot prove its edits in without the text, for a run whose
    /// output is the report: a text the one-pass reader read, without aliases or merge keys,
    /// whose every slot's value is the whole value of its line, is given up as soon as it is
    /// read (its fingerprint kept, its slots marked [`Slot::alone`]); the plan proves
    /// those edits from the new values alone, and reads the text again where a new value
    /// does not read alone (`plan::plan_giving_up_texts`).
    NeededOnly,
}

/// Told of each reference no later pass of discovery can change (its image, policy, unit and
/// place are final), as soon as it is read: `run` starts listing its repository's tags
/// while the rest of the tree is still being parsed.
pub type Early<'a> = &'a mut dyn FnMut(&ImageRef);

/// As [`discover`], telling `early` of the references that are final when they are read.
/// Only a tree without Argo CD or Flux resources has such references (those resources are
/// applied after every file is read, and may claim any reference); manifest images are
/// placed after every kustomization is read, so they are never early.
pub fn discover_with(
    tree: &Tree,
    config: &Config,
    early: Option<Early>,
    kept: SourceTexts,
) -> Discovery {
    let mut out = Discovery::default();
    let (filters, helm_keys, policies) = match compile(config) {
        Ok(compiled) => compiled,
        Err(p) => {
            out.problems.push(p);
            return out;
        }
    };
    tracing::debug!("walking the tree");
    let (files, texts) = files(tree, &filters, &mut out);
    tracing::debug!(files = files.len(), "walked the tree");
    let (claims, ahead) = first_look(tree, &files, texts);
    let mut early = early.filter(|_| !claims);
    tracing::debug!(
        early = early.is_some(),
        "looked for Argo CD and Flux resources"
    );
    let keys = |specs| Keys {
        specs,
        helm: &helm_keys,
        charts: config.helm.charts,
        texts: kept,
    };
    let kkeys = keys(&[]);
    let first = FirstRead::new(tree, config, &files, &ahead, &kkeys, &mut out.problems);
    let keys = keys(&first.specs);
    let kustomizations = files
        .iter()
        .filter(|f| f.1 == FileKind::Kustomization)
        .count();
    let mut fold = Fold::new(tree, config, kept, out, policies, kustomizations);
    // Reading and parsing each file is independent of the others: done on every core,
    // while this thread gives policies, reads Argo CD resources and keeps the books in
    // file order, each file as soon as those before it are done.
    let all: Vec<(usize, &Listed)> = files.iter().enumerate().collect();
    crate::parallel::for_each_ordered(
        &all,
        |&(i, listed)| {
            let read = first.in_turn(tree, (i, listed), (&kkeys, &keys), ahead.get(i));
            (&listed.0, read)
        },
        |(rel, read)| fold.file(rel, read, &mut early),
    );
    // Every file is folded: the list of them and the read-ahead slots go before the passes
    // over the whole tree, the peak of discovery (15,000 names at 10,000 apps).
    drop((all, first));
    drop((ahead, files));
    fold.finish(config)
}

/// The configuration's globs, Helm image keys and policies, compiled once for the walk.
fn compile(config: &Config) -> Result<(Filters, helm::ImageKeys, Policies), Problem> {
    let filters = Filters::new(&config.scan)?;
    let helm_keys = helm::ImageKeys::compile(&config.helm)?;
    let policies = Policies::new(&config.defaults, &config.images)
        .map_err(|e| Problem::config(e.to_string()))?
        .with_pull_secrets(&config.credentials);
    Ok((filters, helm_keys, policies))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::walk::read_first;
    use super::*;

    /// `files` written in a new directory, removed when the result is dropped.
    pub(crate) fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    /// The references `discover_with` tells early, by file and name, and the discovery.
    fn told(dir: &std::path::Path) -> (Vec<(String, String)>, Discovery) {
        let mut told = Vec::new();
        let mut tell = |r: &ImageRef| told.push((r.file.to_string(), r.written.to_string()));
        let found = discover_with(
            &Tree::disk(dir),
            &Config::default(),
            Some(&mut tell),
            SourceTexts::All,
        );
        (told, found)
    }

    pub(crate) const APP: [(&str, &str); 3] = [
        (
            "app/kustomization.yaml",
            "resources: [deploy.yaml]\nimages:\n- name: r.io/web\n  newTag: 1.0.0\n",
        ),
        (
            "app/deploy.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: r.io/web:0.9.0\n",
        ),
        ("chart/values.yaml", "image:\n  repository: r.io/api\n  tag: 2.0.0\n"),
    ];

    #[test]
    fn a_charts_templates_are_known_by_its_chart_yaml_file_or_a_link_to_one_inside() {
        let t = "kind: Deployment\nimage: {{ .Values.image }}\n";
        let dir = tree(&[
            ("chart/Chart.yaml", "name: chart\n"),
            ("chart/templates/deploy.yaml", t),
            ("chart/templates/tests/t.yaml", t),
            ("chart/templates.yaml", "a: 1\n"),
            ("plain/templates/deploy.yaml", "a: 1\n"),
            ("folder/Chart.yaml/x.yaml", "a: 1\n"),
            ("folder/templates/deploy.yaml", "a: 1\n"),
            ("linked/templates/deploy.yaml", t),
            ("outside/templates/deploy.yaml", "a: 1\n"),
        ]);
        std::os::unix::fs::symlink("../chart/Chart.yaml", dir.path().join("linked/Chart.yaml"))
            .unwrap();
        std::os::unix::fs::symlink("../gone.yaml", dir.path().join("outside/Chart.yaml")).unwrap();
        let config = Config::default();
        let filters = Filters::new(&config.scan).unwrap();
        let (found, texts) = files(&Tree::disk(dir.path()), &filters, &mut Discovery::default());
        // The walk read every file it listed, from the disk as it is.
        for ((rel, _), text) in found.iter().zip(&texts) {
            let want = std::fs::read_to_string(dir.path().join(rel.as_str())).unwrap();
            assert_eq!(
                text.as_ref().map(|t| t.as_ref().ok()),
                Some(Some(&want)),
                "{rel}"
            );
        }
        let templates: Vec<&str> = (found.iter())
            .filter(|(_, kind)| *kind == FileKind::ChartTemplate)
            .map(|(rel, _)| rel.as_str())
            .collect();
        assert_eq!(
            templates,
            [
                "chart/templates/deploy.yaml",
                "chart/templates/tests/t.yaml",
                "linked/templates/deploy.yaml",
            ]
        );
        let read: Vec<&str> = found.iter().map(|(rel, _)| rel.as_str()).collect();
        for manifest in [
            "chart/templates.yaml",
            "plain/templates/deploy.yaml",
            "folder/templates/deploy.yaml",
            "outside/templates/deploy.yaml",
        ] {
            assert!(read.contains(&manifest), "{manifest}: {read:?}");
        }
    }

    #[test]
    fn references_final_when_read_are_told_early_and_placed_manifests_are_not() {
        let dir = tree(&APP);
        let (told, found) = told(dir.path());
        assert_eq!(
            told,
            [
                ("app/kustomization.yaml".to_string(), "r.io/web".to_string()),
                ("chart/values.yaml".to_string(), "r.io/api".to_string()),
            ]
        );
        // The same discovery as without being told.
        let plain = discover(&Tree::disk(dir.path()), &Config::default());
        assert_eq!(found.refs, plain.refs);
        assert_eq!(found.refs.len(), 3);
    }

    #[test]
    fn released_references_keep_what_the_report_needs_and_managed_ones_their_slots() {
        let dir = tree(&APP);
        let mut found = discover(&Tree::disk(dir.path()), &Config::default());
        let before = found.refs.clone();
        assert!(found.sources.contains_key("app/deploy.yaml"));
        found.release_unmanaged();
        // The base's manifest is no managed reference's: its text goes; those written keep it.
        let kept: Vec<&str> = found.sources.keys().map(|f| &**f).collect();
        assert_eq!(kept, ["app/kustomization.yaml", "chart/values.yaml"]);
        let overridden = |r: &ImageRef| &*r.file == "app/deploy.yaml";
        for (r, b) in found.refs.iter().zip(&before) {
            if overridden(b) {
                // The base's image, overridden by the kustomization's `images:` entry.
                assert!(!b.is_managed() && !b.slots.is_empty());
                assert!(r.slots.is_empty() && r.creations().is_empty());
                let (file, line, tag) = (&r.file, r.line, r.tag.as_deref());
                assert_eq!((file, line, tag), (&b.file, b.line, Some("0.9.0")));
                assert_eq!(r.unmanaged, b.unmanaged);
            } else {
                assert!(r.is_managed());
                assert_eq!(r, b);
            }
        }
        assert_eq!(found.refs.iter().filter(|r| overridden(r)).count(), 1);
    }

    #[test]
    fn nothing_is_told_early_in_a_tree_with_argo_cd_or_flux_resources() {
        let app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web}\nspec:\n  source: {repoURL: https://git.example/x, path: app}\n";
        let flux = "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\nmetadata: {name: web}\nspec: {imageRepositoryRef: {name: web}, policy: {semver: {range: '>=1.0.0'}}}\n";
        for extra in [("argo/app.yaml", app), ("flux/policy.yaml", flux)] {
            let mut files = APP.to_vec();
            files.push(extra);
            let dir = tree(&files);
            let (told, found) = told(dir.path());
            assert!(told.is_empty(), "{}: {told:?}", extra.0);
            assert!(!found.refs.is_empty());
        }
    }

    #[test]
    fn many_shared_bases_are_placed_in_the_order_of_their_references() {
        // 520 bases of two images each, every one in two overlays: 1,040 manifest
        // references, each becoming one reference per overlay, in the references' order
        // (placement replaces each by its overlays' in one pass at the end, by index).
        let bases: Vec<String> = (0..520).map(|i| format!("bases/b{i:03}")).collect();
        let resources: String = bases.iter().map(|b| format!("- ../../{b}\n")).collect();
        let overlay = format!("resources:\n{resources}");
        let mut files: Vec<(String, String)> = vec![
            ("overlays/dev/kustomization.yaml".into(), overlay.clone()),
            ("overlays/prod/kustomization.yaml".into(), overlay),
        ];
        for (i, b) in bases.iter().enumerate() {
            files.push((
                format!("{b}/kustomization.yaml"),
                "resources: [deploy.yaml]\n".into(),
            ));
            let deploy = format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: b{i}}}\nspec:\n  template:\n    spec:\n      containers:\n      - {{name: a, image: r.io/a{i}:1.0.0}}\n      - {{name: b, image: r.io/b{i}:1.0.0}}\n"
            );
            files.push((format!("{b}/deploy.yaml"), deploy));
        }
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        let dir = tree(&borrowed);
        let found = discover(&Tree::disk(dir.path()), &Config::default());
        let got: Vec<(String, Option<String>, String)> = (found.refs.iter())
            .map(|r| {
                let writes_to = r.writes_to().map(str::to_string);
                (r.written.to_string(), writes_to, r.unit.to_string())
            })
            .collect();
        let mut want = Vec::new();
        for i in 0..520 {
            for image in [format!("r.io/a{i}"), format!("r.io/b{i}")] {
                for leaf in ["overlays/dev", "overlays/prod"] {
                    let file = format!("{leaf}/kustomization.yaml");
                    want.push((image.clone(), Some(file), leaf.to_string()));
                }
            }
        }
        assert_eq!(got.len(), 2080);
        assert!(
            got == want,
            "first difference: {:?}",
            got.iter().zip(&want).find(|(g, w)| g != w)
        );
    }

    /// A kustomization is read before the other files when it may name `configurations:`
    /// or `helmCharts:` values files, however the key is spelled; every other one is read in
    /// the one pass, in its turn. Each layout finds the custom resource's image (through the
    /// configuration's field) and reads the chart's values file as Helm values.
    #[test]
    fn kustomizations_that_change_how_manifests_are_read_are_read_first() {
        let config = "images:\n- path: spec/runner\n  kind: Job2\n";
        let resource = "apiVersion: x.io/v1\nkind: Job2\nmetadata: {name: j}\nspec:\n  runner: r.io/job:1.0.0\n";
        let values = "image:\n  repository: r.io/api\n  tag: 2.0.0\n";
        for key in ["configurations", "\"config\\u0075rations\""] {
            let kustomization = format!(
                "resources: [a-job.yaml]\n{key}: [kc.yaml]\nhelmCharts:\n- name: api\n  valuesFile: prod.yaml\n"
            );
            let dir = tree(&[
                // Before the kustomization in file order: read with its field already known.
                ("app/a-job.yaml", resource),
                ("app/kc.yaml", config),
                ("app/kustomization.yaml", &kustomization),
                ("app/prod.yaml", values),
                ("other/kustomization.yaml", "resources: []\n"),
            ]);
            let found = discover(&Tree::disk(dir.path()), &Config::default());
            let got: Vec<(&str, &str, RefKind)> = (found.refs.iter())
                .map(|r| (&*r.file, &*r.written, r.kind))
                .collect();
            assert_eq!(
                got,
                [
                    ("app/a-job.yaml", "r.io/job", RefKind::Workload),
                    ("app/prod.yaml", "r.io/api", RefKind::HelmValues),
                ],
                "{key}"
            );
            assert!(found.problems.is_empty(), "{:?}", found.problems);
        }
        // Which texts are read first: a name, a backslash, or a text the first look did not
        // keep.
        let first = |t: Option<&str>| read_first(Some(&std::sync::Mutex::new(t.map(String::from))));
        assert!(first(Some("configurations: [kc.yaml]\n")));
        assert!(first(Some("helmCharts: []\n")));
        assert!(first(Some("configMapGenerator: []\n")));
        assert!(first(Some("secretGenerator: []\n")));
        assert!(first(Some("\"images\": [\"\\x61\"]\n")));
        assert!(first(None));
        assert!(read_first(None));
        assert!(!first(Some(
            "resources: [deploy.yaml]\nimages:\n- name: r.io/web\n"
        )));
    }
}
