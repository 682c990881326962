//! `imagebump scan`: every image reference in the tree, managed or not. No registry is
//! asked for tags; with `helm.charts` on (the default) and without `--offline`, the
//! archives of the charts chart-only Argo CD apps install are downloaded (once per chart
//! version) for the images of their default values.

use super::output::{print, print_json};
use super::source::{self, Source};
use super::{Error, Output, Status};
use crate::cli::{Format, ScanArgs};
use crate::discover::{self, Discovery};
use crate::registry::Registries;
use crate::report::{self, ScanEntry, ScanReport, ScanVerdict};
use imagebump_model::Problem;

/// Chart archives downloaded at once.
const CHART_CONCURRENCY: usize = 8;

pub async fn scan(args: &ScanArgs, out: &Output) -> Result<Status, Error> {
    let loaded = source::open(&Source::from(&args.source), super::git_token(), 1)?;
    for w in &loaded.config_warnings {
        out.warning(w);
    }
    let mut found = discover::discover(&loaded.ws.tree, &loaded.config);
    loaded.explain_outside(&mut found);
    chart_defaults(&mut found, &loaded, args.offline, out).await?;
    if let Some(scope) = &loaded.ws.scope {
        found.limit_to(&loaded.ws.tree, scope);
    }
    match out.format {
        Format::Json => {
            let verdicts: Vec<ScanVerdict> = found.refs.iter().map(ScanVerdict::of).collect();
            print_json(&ScanReport {
                version: 1,
                references: (found.refs.iter().zip(&verdicts))
                    .map(|(r, v)| ScanEntry::new(r, v))
                    .collect(),
                notes: &found.notes,
                errors: &found.problems,
            })
        }
        Format::Text if found.refs.is_empty() => print(format_args!(
            "no image references found in {} files: nothing to manage (docs/discovery.md says what is read)\n",
            found.files_scanned
        )),
        Format::Text => {
            print(format_args!("{}", report::scan_table(&found.refs, out.width)));
            print(format_args!(
                "\n{} references in {} files ({})\n",
                found.refs.len(),
                found.files_scanned,
                counts(&found)
            ));
        }
    }
    out.notes(&found.notes);
    out.errors(&found.problems);
    Ok(if found.problems.is_empty() {
        Status::Done
    } else {
        Status::Problems
    })
}

/// The images of chart-only apps, from their charts' default values, as `run` reads them;
/// with `--offline`, a note saying which apps' charts were not read.
async fn chart_defaults(
    found: &mut Discovery,
    loaded: &source::Loaded,
    offline: bool,
    out: &Output,
) -> Result<(), Error> {
    if found.chart_apps.is_empty() {
        return Ok(());
    }
    if offline {
        for a in &found.chart_apps {
            found.notes.push(Problem::at_file(
                &a.file,
                a.line,
                a.column,
                format!(
                    "app {}: the images of chart {} {} not listed (--offline: the chart is not downloaded)",
                    a.app, a.chart.written, a.version
                ),
            ));
        }
        return Ok(());
    }
    let registries =
        Registries::with_request_timeout(loaded.config.registries.clone(), out.request_timeout)
            .map_err(|source| Error::Registries {
                file: loaded.config_path.clone(),
                source,
            })?;
    discover::chart_values::chart_defaults(found, &loaded.config, &registries, CHART_CONCURRENCY)
        .await;
    Ok(())
}

/// `3 managed, 1 pinned, 2 skipped, 4 unmanaged`: the references by status, as `run`
/// reaches it before asking a registry; `pinned` and `skipped` only when there are any.
fn counts(found: &Discovery) -> String {
    let mut by_status: [(&str, usize); 4] = [
        ("managed", 0),
        ("pinned", 0),
        ("skipped", 0),
        ("unmanaged", 0),
    ];
    for r in found.refs.iter() {
        let verdict = ScanVerdict::of(r);
        let (status, _) = verdict.status();
        if let Some(n) = by_status.iter_mut().find(|(s, _)| *s == status) {
            n.1 = n.1.saturating_add(1);
        }
    }
    (by_status.iter())
        .filter(|(s, n)| *n > 0 || matches!(*s, "managed" | "unmanaged"))
        .map(|(s, n)| format!("{n} {s}"))
        .collect::<Vec<_>>()
        .join(", ")
}
