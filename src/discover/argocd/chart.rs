//! The chart of an Application's Helm source (`chart:` + `repoURL:`): its
//! `targetRevision` is a chart reference (`discover/charts.rs`), edited where it is
//! written: in the Application, in an ApplicationSet's template when written literally
//! there, or in the list element that sets the template's parameter.

use super::{join, App, Current, Scan};
use crate::discover::charts::{chart_ref, check_policy};
use crate::discover::{RefKind, SlotFormat};
use imagebump_yaml::Node;

impl Scan<'_> {
    /// Every chart source of `app`.
    pub(super) fn charts(&mut self, app: &App) {
        let app_key = app.key(self.namespace);
        for source in &app.sources {
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
            let c = match self.locate(&c) {
                Ok(Some(place)) if place.format == SlotFormat::Tag => place,
                Ok(Some(_)) => continue,
                Ok(None) => c,
                Err(why) => {
                    self.template_note(&c, &why);
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
            match made {
                Ok(mut r) => {
                    r.app = Some(app_key.clone());
                    self.push(r, None);
                    if let Some(r) = self.out.refs.last_mut() {
                        check_policy(r);
                    }
                }
                Err(p) => self.out.problems.push(p),
            }
        }
    }
}
