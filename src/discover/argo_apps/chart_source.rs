//! The chart of an Application's Helm source (`chart:` + `repoURL:`): its
//! `targetRevision` is a chart reference (`discover/charts.rs`), edited where it is
//! written: in the Application, in an ApplicationSet's template when written literally
//! there, or in the list element that sets the template's parameter. An Application kept
//! in the repository that installs an exact version is also recorded for the images of
//! the chart's default values (`discover/chart_values.rs`).

use serde_json::Value;

use super::app::value_files;
use super::{join, App, Current, Scan, SourceState};
use crate::discover::charts::{chart_ref, check_policy, ChartApp};
use crate::discover::vocab::{ImageRef, RefKind, SlotFormat};
use imagebump_yaml::{Node, PathSeg};

impl Scan<'_> {
    /// Every chart source of `app`.
    pub(super) fn charts(&mut self, app: &App) {
        let app_key = app.key(self.namespace);
        let generated = self.template.is_some();
        let states: Vec<SourceState> = app
            .sources
            .iter()
            .filter(|s| s.chart.is_some())
            .map(|s| self.source_state(app, s))
            .collect();
        for st in &states {
            let source = st.source;
            let (Some(chart), Some(repo)) = (source.chart.as_deref(), source.repo_url.as_deref())
            else {
                continue;
            };
            let c = Current {
                file: app.file.clone(),
                doc: app.doc,
                at: join(&source.at, &["targetRevision"]),
                format: SlotFormat::Tag,
                kind: RefKind::HelmChart,
                repository: None,
            };
            // A generated app's version in its set's template, written literally there.
            let mut literal = true;
            let c = match self.locate(&c) {
                Ok(Some(place)) if place.format == SlotFormat::Tag => {
                    literal = false;
                    place
                }
                Ok(Some(_)) => continue,
                Ok(None) => c,
                Err(why) => {
                    self.template_note(&c, &why.to_string());
                    continue;
                }
            };
            let Some(loaded) = self.files.get(&c.file) else {
                continue;
            };
            let Some(Node::Scalar(s)) = loaded.node(c.doc, &c.at) else {
                continue;
            };
            let made = chart_ref(
                &loaded.ctx(),
                &app_key,
                (c.doc, c.at.clone()),
                s,
                (repo, chart),
            );
            let mut r = match made {
                Ok(r) => r,
                Err(p) => {
                    self.out.problems.push(p);
                    continue;
                }
            };
            r.extra_mut().app = Some(app_key.clone());
            self.push(r, None);
            let Some(r) = self.out.refs.last_mut() else {
                continue;
            };
            check_policy(r);
            // A generated app's values are written in the set's template, for all the apps
            // it makes: only when the template names one chart at one version.
            let r = r.clone();
            if !generated || (literal && self.literal_chart(&source.at)) {
                self.chart_app(app, &app_key, st, &states, &r);
            }
        }
    }

    /// Whether the chart source at `at` of the set's template names its chart and
    /// repository literally (no template parameter).
    fn literal_chart(&self, at: &[PathSeg]) -> bool {
        let Some((file, doc, _)) = &self.template else {
            return true;
        };
        ["chart", "repoURL"].into_iter().all(|field| {
            let c = Current {
                file: file.clone(),
                doc: *doc,
                at: join(at, &[field]),
                format: SlotFormat::Tag,
                kind: RefKind::HelmChart,
                repository: None,
            };
            matches!(self.locate(&c), Ok(None))
        })
    }

    /// Record `app` for the images of its chart's default values, when its version is one
    /// version (not a range).
    fn chart_app(
        &mut self,
        app: &App,
        app_key: &str,
        st: &SourceState,
        all: &[SourceState],
        r: &ImageRef,
    ) {
        let Some(version) = r.tag.as_deref().map(str::to_string) else {
            return;
        };
        if semver::Version::parse(&version).is_err() || st.broken {
            return;
        }
        // argocd-image-updater updates only the images it lists: its apps are left to it.
        let aiu = "argocd-image-updater.argoproj.io/";
        if app.annotations.keys().any(|k| k.starts_with(aiu)) {
            return;
        }
        let mut overridden: Vec<Vec<PathSeg>> = self
            .values_overrides(app, st)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        // The keys a `helm.values` string sets.
        if let Some(Value::String(text)) = st.effective.pointer("/helm/values") {
            if let Ok(v) = imagebump_yaml::from_str::<Value>(text) {
                let mut found = Vec::new();
                super::scalar_paths(&v, &mut Vec::new(), &mut found);
                overridden.extend(found.into_iter().map(|(p, _)| p));
            }
        }
        let name = crate::chart::ChartName {
            image: (*r.image).clone(),
            written: r.written.to_string(),
        };
        let at = join(&st.source.at, &["helm", "valuesObject"]);
        // The apps of one ApplicationSet share its template: one entry, which leaves alone
        // an image any of them sets itself.
        let same = |c: &&mut ChartApp| c.file == app.file && c.doc == app.doc && c.values_at == at;
        if let Some(shared) = self.out.chart_apps.iter_mut().find(same) {
            shared.overridden.extend(overridden);
            shared.value_files.extend(value_files(st, all));
            return;
        }
        if let Some(text) = self.files.get(&app.file).map(|l| l.text.clone()) {
            self.out
                .sources
                .entry(app.file.as_str().into())
                .or_insert(text.into());
        }
        self.out.chart_apps.push(ChartApp {
            app: app_key.to_string(),
            file: app.file.clone(),
            doc: app.doc,
            line: r.line as usize,
            column: r.column as usize,
            values_at: at,
            chart: name,
            version,
            credentials: r.policy.credentials.clone(),
            overridden,
            value_files: value_files(st, all),
        });
    }
}
