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
use crate::report::{self, ScanEntry, ScanReport};
use imagebump_model::Problem;

/// Chart archives downloaded at once.
const CHART_CONCURRENCY: usize = 8;

pub async fn scan(args: &ScanArgs, out: &Output) -> Result<Status, Error> {
    let loaded = source::open(&Source::from(&args.source), super::git_token(), 1)?;
    for w in &loaded.config_warnings {
        out.warning(w);
    }
    let mut found = discover::discover(&loaded.ws.tree, &loaded.config);
    chart_defaults(&mut found, &loaded, args.offline).await?;
    if let Some(scope) = &loaded.ws.scope {
        found.limit_to(&loaded.ws.tree, scope);
    }
    match out.format {
        Format::Json => print_json(&ScanReport {
            version: 1,
            references: found.refs.iter().map(ScanEntry::from).collect(),
            notes: &found.notes,
            errors: &found.problems,
        }),
        Format::Text if found.refs.is_empty() => print(format_args!(
            "no image references found in {} files: nothing to manage (docs/discovery.md says what is read)\n",
            found.files_scanned
        )),
        Format::Text => {
            print(format_args!("{}", report::scan_table(&found.refs, out.width)));
            let managed = found.refs.iter().filter(|r| r.is_managed()).count();
            print(format_args!(
                "\n{} references in {} files ({} managed, {} unmanaged)\n",
                found.refs.len(),
                found.files_scanned,
                managed,
                found.refs.len().saturating_sub(managed)
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
        Registries::new(loaded.config.registries.clone()).map_err(|source| Error::Registries {
            file: loaded.config_path.clone(),
            source,
        })?;
    discover::chart_values::chart_defaults(found, &loaded.config, &registries, CHART_CONCURRENCY)
        .await;
    Ok(())
}
