//! `imagebump scan`: every image reference in the tree, managed or not; no registry asked.

use super::output::{print, print_json};
use super::source::{self, Source};
use super::{Error, Output, Status};
use crate::cli::Format;
use crate::discover;
use crate::report::{self, ScanEntry, ScanReport};

pub fn scan(source: &Source, out: &Output) -> Result<Status, Error> {
    let loaded = source::open(source, super::git_token(), 1)?;
    for w in &loaded.config_warnings {
        out.warning(w);
    }
    let mut found = discover::discover(&loaded.ws.root, &loaded.config);
    if let Some(scope) = &loaded.ws.scope {
        found.limit_to(&loaded.ws.root, scope);
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
