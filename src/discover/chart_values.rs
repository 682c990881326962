//! The images of chart-only apps: an Argo CD Application that installs a chart and sets a
//! few values runs the images of the chart's own `values.yaml`, which are not in git. For
//! the version in git, the chart's archive is downloaded (once per chart version per run,
//! `chart/archive.rs`), its default values are read like a values file, and every image
//! the app does not set itself becomes a reference whose current version is the chart's
//! default and whose new tag is written to the app's `helm.valuesObject` (where Argo CD
//! reads it, over the chart's defaults and the values files).

use std::collections::BTreeMap;

use futures::stream::{self, StreamExt};

use super::charts::ChartApp;
use super::Discovery;
use crate::chart::archive::{self, ChartFiles};
use crate::discover::vocab::{
    Created, Creation, Extra, FileCtx, ImageRef, RefKind, Slot, SlotFormat, Template,
};
use crate::registry::Registries;
use imagebump_model::config::Config;
use imagebump_model::Problem;
use imagebump_policy::rules::Policies;
use imagebump_yaml::{LineIndex, PathSeg};

/// A chart version: its written name, version and the credentials it is read with.
type Key = (String, String, Option<String>);

/// Add the references of the chart defaults of every app in `found.chart_apps`.
pub async fn chart_defaults(
    found: &mut Discovery,
    config: &Config,
    registries: &Registries,
    concurrency: usize,
) {
    if found.chart_apps.is_empty() {
        return;
    }
    let mut wanted: BTreeMap<Key, &ChartApp> = BTreeMap::new();
    for a in &found.chart_apps {
        let key = (
            a.chart.written.clone(),
            a.version.clone(),
            a.credentials.clone(),
        );
        wanted.entry(key).or_insert(a);
    }
    // Each classic repository's index first, once: the archives of its charts are found
    // there, and resolve reads the versions from the same copy.
    fetch_indexes(&wanted, registries, concurrency).await;
    let charts: BTreeMap<Key, Result<ChartFiles, crate::registry::Error>> = stream::iter(wanted)
        .map(|(key, a)| async move {
            let files =
                archive::fetch(registries, &a.chart, &a.version, a.credentials.as_deref()).await;
            (key, files)
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let mut policies = match Policies::new(&config.defaults, &config.images) {
        Ok(p) => p,
        // Reported by discovery already.
        Err(_) => return,
    };
    let keys = super::helm::ImageKeys::compile(&config.helm).unwrap_or_default();
    let apps = std::mem::take(&mut found.chart_apps);
    for a in &apps {
        let key = (
            a.chart.written.clone(),
            a.version.clone(),
            a.credentials.clone(),
        );
        match charts.get(&key) {
            Some(Ok(files)) => add_app(a, files, &keys, &mut policies, found),
            Some(Err(e)) => found.problems.push(Problem::at_file(
                &a.file,
                a.line,
                a.column,
                format!(
                    "app {}: the default values of chart {} {} not read: {e}",
                    a.app, a.chart.written, a.version
                ),
            )),
            None => {}
        }
    }
    found.chart_apps = apps;
}

/// The index of each classic repository the charts of `wanted` come from, asked for once
/// per repository and credentials.
async fn fetch_indexes(
    wanted: &BTreeMap<Key, &ChartApp>,
    registries: &Registries,
    concurrency: usize,
) {
    let indexes: std::collections::BTreeSet<(
        &str,
        &imagebump_model::name::ImageName,
        Option<&str>,
    )> = wanted
        .values()
        .filter_map(|a| {
            let repo = crate::chart::classic_repository(&a.chart.written)?;
            Some((repo, &a.chart.image, a.credentials.as_deref()))
        })
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    let indexes: Vec<_> = indexes
        .into_iter()
        .filter(|(repo, _, creds)| seen.insert((*repo, *creds)))
        .collect();
    stream::iter(indexes)
        .map(|(repo, name, creds)| crate::chart::index::fetch(registries, name, creds, repo))
        .buffer_unordered(concurrency.max(1))
        .collect::<Vec<_>>()
        .await;
}

/// The references of one app's chart defaults.
fn add_app(
    a: &ChartApp,
    files: &ChartFiles,
    keys: &super::helm::ImageKeys,
    policies: &mut Policies,
    found: &mut Discovery,
) {
    let label = format!("{}@{}/values.yaml", a.chart.written, a.version);
    let docs = match imagebump_yaml::parse_located(&files.values) {
        Ok(d) => d,
        Err(e) => {
            found.problems.push(Problem::at_file(
                &a.file,
                a.line,
                a.column,
                format!("app {}: {label}:{}: {}", a.app, e.line, e.reason()),
            ));
            return;
        }
    };
    let ctx = FileCtx {
        file: label.as_str().into(),
        text: &files.values,
        lines: LineIndex::new(&files.values),
    };
    let (mut defaults, mut problems) = (Vec::new(), Vec::new());
    super::helm::scan(&ctx, &docs, keys, &mut defaults, &mut problems);
    for d in defaults {
        let Some(slot) = written_slot(&d) else {
            continue;
        };
        if a.overridden.iter().any(|o| **o == *slot.path)
            || set_in_values_file(a, &slot.path, found)
        {
            continue;
        }
        match reference(a, &d, slot, policies) {
            Ok(r) => found.refs.push(r),
            Err(p) => found.problems.push(p),
        }
    }
}

/// The slot of a chart default that gets the new tag: its tag, or its whole `repo:tag`
/// string. An unmanaged default (a placeholder) or one pinned by digest is left alone.
fn written_slot(d: &ImageRef) -> Option<&Slot> {
    if !d.is_managed() || d.digest.is_some() || d.tag.is_none() {
        return None;
    }
    d.slots
        .iter()
        .find(|s| matches!(s.format, SlotFormat::Tag | SlotFormat::Reference { .. }))
}

/// Whether a values file of the app (in this repository) sets the image at `path`: then
/// that file's reference is the one in effect.
fn set_in_values_file(a: &ChartApp, path: &[PathSeg], found: &Discovery) -> bool {
    found.refs.iter().any(|r| {
        a.value_files.iter().any(|f| *f == *r.file) && r.slots.iter().any(|s| *s.path == *path)
    })
}

/// The reference of the chart default `d` of app `a`, written at `slot`'s path under the
/// app's `helm.valuesObject`.
fn reference(
    a: &ChartApp,
    d: &ImageRef,
    slot: &Slot,
    policies: &mut Policies,
) -> Result<ImageRef, Problem> {
    let mut path = a.values_at.clone();
    path.extend(slot.path.iter().cloned());
    let value = match &slot.format {
        SlotFormat::Reference { name } => Template::Reference {
            prefix: name.to_string(),
        },
        _ => Template::Tag,
    };
    let policy = policies
        .policy_with(&d.image, &d.written, Some(&a.file), None, None)
        .map_err(|e| Problem::at_file(&a.file, a.line, a.column, e.to_string()))?;
    let unmanaged = policy
        .ignore
        .then(|| format!("ignored ({})", policy.source).into());
    Ok(ImageRef {
        file: a.file.as_str().into(),
        line: crate::discover::vocab::saturating_u32(a.line),
        column: crate::discover::vocab::saturating_u32(a.column),
        kind: RefKind::ChartDefault,
        image: d.image.clone(),
        written: d.written.clone(),
        tag: d.tag.clone(),
        digest: None,
        unit: a.app.as_str().into(),
        policy,
        unmanaged,
        slots: crate::discover::vocab::Slots::default(),
        extra: Some(Box::new(Extra {
            creations: vec![Creation {
                file: a.file.clone(),
                doc: a.doc,
                path,
                what: Created::Key { value },
            }],
            writes_to: Some(a.file.clone()),
            app: Some(a.app.clone()),
        })),
    })
}
