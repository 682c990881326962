//! `imagebump promotions`: per application and environment, what runs where, since when,
//! and what is promoted next (or why not yet). Reads the tree and its git history; asks no
//! registry and no forge.

use super::output::{print, print_json};
use super::source::{self, Source};
use super::{Error, Output, Status};
use crate::cli::PageFormat;
use crate::discover;
use crate::promote::{self, status};

/// Base-branch commits read (the default of `run --history-depth`).
const HISTORY_DEPTH: usize = 200;

pub fn promotions(source: &Source, format: PageFormat, out: &Output) -> Result<Status, Error> {
    let loaded = source::open(source, super::git_token(), HISTORY_DEPTH)?;
    for w in &loaded.config_warnings {
        out.warning(w);
    }
    // The whole tree: a source may lie outside the directory named; rows are kept for it.
    let mut found = discover::discover(&loaded.ws.tree, &loaded.config);
    loaded.explain_outside(&mut found);
    // Reverted imagebump commits hold their versions back, as in a run.
    let history = crate::source::git::Git::new(None)
        .log(&loaded.ws.root, "HEAD", HISTORY_DEPTH)
        .unwrap_or_default();
    let git = crate::source::git::Git::new(None);
    let changes =
        |sha: &str, file: &str| (git.changes_path(&loaded.ws.root, sha, file)).unwrap_or(true);
    let bot = crate::deliver::pulls::Author {
        email: &loaded.config.pull_requests.author.email,
        by_api: loaded.config.signing.as_ref().is_some_and(|s| s.by_api()),
        changes: &changes,
    };
    let rejections =
        crate::deliver::pulls::by_image(&crate::deliver::pulls::rejected(&[], "", &history, bot));
    let root = (&loaded.config, loaded.ws.root.as_path());
    let seen = seen_records(&loaded);
    let all = promote::read_now(&found, root, HISTORY_DEPTH, (&rejections, seen.as_ref()));
    let mut rows = status::rows(&found, &all, &rejections);
    if let Some(scope) = &loaded.ws.scope {
        let prefix = format!("{}/", scope.trim_end_matches('/'));
        rows.retain(|r| r.file.starts_with(&prefix));
    }
    match format {
        PageFormat::Json => print_json(&serde_json::json!({ "version": 1, "promotions": rows })),
        PageFormat::Html => {
            let remote = loaded.ws.remote.is_some();
            let repository = super::operate::repository_of(&source.location, remote);
            let fleet = crate::report::html::fleet::of_promotions(&rows, &all, &repository);
            print(format_args!("{}", crate::report::html::page(&fleet)));
        }
        PageFormat::Text if rows.is_empty() => print(format_args!(
            "no promoted references: no images rule says promoteFrom (docs/promotion.md)\n"
        )),
        PageFormat::Text => print(format_args!("{}", status_table(&rows, out.width))),
    }
    let mut problems = found.problems;
    problems.extend(all.problems);
    out.errors(&problems);
    Ok(if problems.is_empty() {
        Status::Done
    } else {
        Status::Problems
    })
}

/// The first sightings a remote records (`None` for a local directory: soak counts from
/// committer dates there). When they cannot be read, none is known: every version counts
/// from now, as in a run (fail closed).
fn seen_records(loaded: &source::Loaded) -> Option<promote::seen::Seen> {
    let git = loaded.ws.git.as_ref()?;
    let ns = promote::seen::NAMESPACE;
    match git.remote_refs(&loaded.ws.root, ns) {
        Ok(names) => Some(promote::seen::Seen::from_refs(&names)),
        Err(e) => {
            tracing::warn!("the first sightings ({ns}*) were not read: {e}");
            Some(promote::seen::Seen::default())
        }
    }
}

/// The promotions table, fitted to `width`: versions and what comes next give way first.
fn status_table(rows: &[status::Row], width: Option<usize>) -> String {
    use crate::report::Cut;
    let header = ["APP", "ENVIRONMENT", "VERSION", "SINCE", "NEXT"];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            [&r.app, &r.environment, &r.version, &r.since, &r.next]
                .map(String::clone)
                .to_vec()
        })
        .collect();
    let cuts = [Cut::Middle, Cut::Middle, Cut::Middle, Cut::Keep, Cut::End];
    crate::report::fitted(&header, &cells, width, &cuts)
}
