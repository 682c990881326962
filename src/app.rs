//! The commands, wiring the pipeline stages together. `main.rs` only parses and exits.

use std::io::{IsTerminal, Write};

use secrecy::SecretString;

use crate::cli::{Cli, Command, ConfigCommand, Output, RunArgs, SourceArgs};
use crate::config::{self, Config};
use crate::discover::{self, Discovery, ImageRef};
use crate::exit;
use crate::plan;
use crate::registry::Registries;
use crate::report::{self, Counts, NotUpdated, Problem, RunReport, ScanEntry, ScanReport};
use crate::resolve::{self, Outcome};
use crate::source::{self, Workspace};

/// Log to stderr. `IMAGEBUMP_LOG` (or `RUST_LOG`) wins over `-v`/`-q`.
pub fn init_logging(verbose: u8, quiet: bool) {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    let filter = std::env::var("IMAGEBUMP_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| format!("imagebump={level},warn"));
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_target(false)
        .try_init();
}

pub fn main(cli: Cli) -> i32 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return exit::ERRORS;
        }
    };
    match cli.command {
        Command::Scan(args) => scan(&args),
        Command::Run(args) => runtime.block_on(run(&args)),
        Command::Tags(args) => runtime.block_on(crate::explain::tags(&args)),
        Command::Config(ConfigCommand::Schema) => {
            print!("{}", config::schema());
            exit::OK
        }
        Command::Config(ConfigCommand::Check { source, config }) => config_check(&source, config),
    }
}

fn git_token() -> Option<SecretString> {
    ["IMAGEBUMP_GIT_TOKEN", "GITHUB_TOKEN"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|t| !t.is_empty()))
        .map(SecretString::from)
}

/// Open the source and load the configuration; on failure, the exit code and message.
/// The configuration and the file it came from (`None`: built-in defaults).
type Loaded = (Workspace, Config, Option<std::path::PathBuf>);

fn prepare(args: &SourceArgs) -> Result<Loaded, (i32, String)> {
    let ws = source::open(&args.source, args.git_ref.as_deref(), git_token())
        .map_err(|e| (exit::ERRORS, e.to_string()))?;
    let path = config::locate(args.config.as_deref(), &ws.root);
    let config = match &path {
        Some(path) => config::load(path).map_err(|e| (exit::USAGE, e.to_string()))?,
        None => Config::default(),
    };
    Ok((ws, config, path))
}

fn print_problems(problems: &[Problem]) {
    let mut err = std::io::stderr().lock();
    for p in problems {
        let _ = writeln!(err, "error: {p}");
    }
}

fn print_notes(notes: &[Problem]) {
    let mut err = std::io::stderr().lock();
    for p in notes {
        let _ = writeln!(err, "note: {p}");
    }
}

fn print_warnings(warnings: &[Problem]) {
    let mut err = std::io::stderr().lock();
    for p in warnings {
        let _ = writeln!(err, "warning: {p}");
    }
}

/// `imagebump config check`: load and validate, then list what applies to what.
fn config_check(source: &str, explicit: Option<std::path::PathBuf>) -> i32 {
    let args = SourceArgs {
        source: source.to_string(),
        git_ref: None,
        config: explicit,
        output: Output::Text,
    };
    let (_ws, config, path) = match prepare(&args) {
        Ok(x) => x,
        Err((code, msg)) => {
            eprintln!("error: {msg}");
            return code;
        }
    };
    let Some(path) = path else {
        println!(
            "no configuration file (looked for {}); built-in defaults apply",
            config::CONFIG_NAMES.join(", ")
        );
        return exit::OK;
    };
    println!("{}: valid", path.display());
    let defaults = crate::policy::Policy::compile(config.defaults.clone(), Default::default());
    if let Ok(p) = defaults {
        println!("  defaults: {}", p.summary());
    }
    for (i, rule) in config.images.iter().enumerate() {
        let spec = config.defaults.overlay(&rule.policy());
        if let Ok(p) = crate::policy::Policy::compile(spec, Default::default()) {
            println!("  images[{i}] {}: {}", rule.glob, p.summary());
        }
    }
    for r in &config.registries {
        println!("  registry {}", r.prefix);
    }
    exit::OK
}

fn print_json<T: serde::Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("error: cannot serialise the report: {e}"),
    }
}

fn scan(args: &SourceArgs) -> i32 {
    let (ws, config, _) = match prepare(args) {
        Ok(x) => x,
        Err((code, msg)) => {
            eprintln!("error: {msg}");
            return code;
        }
    };
    let found = discover::discover(&ws.root, &config);
    match args.output {
        Output::Json => print_json(&ScanReport {
            version: 1,
            references: found.refs.iter().map(ScanEntry::from).collect(),
            notes: &found.notes,
            errors: &found.problems,
        }),
        Output::Text => {
            print!("{}", report::scan_table(&found.refs));
            let managed = found.refs.iter().filter(|r| r.is_managed()).count();
            println!(
                "\n{} references in {} files ({} managed, {} unmanaged)",
                found.refs.len(),
                found.files_scanned,
                managed,
                found.refs.len() - managed
            );
        }
    }
    print_notes(&found.notes);
    print_problems(&found.problems);
    if found.problems.is_empty() {
        exit::OK
    } else {
        exit::ERRORS
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    DryRun,
    Write,
}

async fn run(args: &RunArgs) -> i32 {
    let remote = source::is_remote(&args.source.source);
    let mode = match (args.write, args.dry_run, remote) {
        (true, _, true) => {
            eprintln!("error: --write applies edits to a local working tree; use it with a local directory");
            return exit::USAGE;
        }
        (true, _, false) => Mode::Write,
        (false, true, _) | (false, false, false) => Mode::DryRun,
        (false, false, true) => {
            eprintln!("error: pull-request mode is not available in this version; pass --dry-run to see the proposed diff");
            return exit::USAGE;
        }
    };
    let (ws, config, config_path) = match prepare(&args.source) {
        Ok(x) => x,
        Err((code, msg)) => {
            eprintln!("error: {msg}");
            return code;
        }
    };
    let found = discover::discover(&ws.root, &config);
    let registries = match Registries::new(config.registries.clone()) {
        Ok(r) => r,
        Err(e) => {
            let file = config_path
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            eprintln!("error: {file}: {e}");
            return exit::USAGE;
        }
    };
    let mut resolved = resolve::resolve(&found.refs, &registries, args.concurrency).await;
    // Settings honoured differently (Argo CD annotations) are reported with the warnings.
    resolved.warnings.splice(0..0, found.notes.iter().cloned());
    let plan = plan::plan(&found, &resolved.outcomes);

    let mut problems: Vec<Problem> = found.problems.clone();
    problems.extend(resolved.problems.iter().cloned());
    problems.extend(plan.problems.iter().cloned());
    if mode == Mode::Write {
        problems.extend(crate::deliver::write::write_all(&ws.root, &plan.files));
    }

    let counts = counts(&found, &resolved, &plan);
    match args.source.output {
        Output::Json => print_json(&RunReport {
            version: 1,
            mode: if mode == Mode::Write {
                "write"
            } else {
                "dry-run"
            },
            commit: ws.commit.as_deref(),
            counts,
            updates: &plan.updates,
            change_sets: &plan.change_sets,
            not_updated: not_updated(&found, &resolved.outcomes, &plan.refused),
            requests: registries.stats.snapshot(),
            warnings: &resolved.warnings,
            errors: &problems,
        }),
        Output::Text => {
            let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{}", crate::deliver::diff::render(&plan.files, color));
            if !plan.updates.is_empty() {
                let _ = writeln!(out);
                let _ = write!(out, "{}", report::updates_table(&plan.updates));
            }
            let verb = if mode == Mode::Write {
                "applied"
            } else {
                "proposed"
            };
            let _ = writeln!(
                out,
                "\n{} update(s) {verb} in {} file(s); {} references ({} managed, {} up to date, {} pinned, {} skipped, {} not checked) over {} repositories",
                counts.updates,
                plan.files.len(),
                counts.references,
                counts.managed,
                counts.up_to_date,
                counts.pinned,
                counts.skipped,
                counts.failed,
                counts.repositories
            );
        }
    }
    print_warnings(&resolved.warnings);
    print_problems(&problems);
    if !problems.is_empty() {
        exit::ERRORS
    } else if args.exit_code && !plan.updates.is_empty() && mode == Mode::DryRun {
        exit::PENDING
    } else {
        exit::OK
    }
}

fn counts(found: &Discovery, resolved: &resolve::Resolved, plan: &plan::Plan) -> Counts {
    let count = |f: fn(&Outcome) -> bool| resolved.outcomes.iter().filter(|o| f(o)).count();
    Counts {
        files_scanned: found.files_scanned,
        references: found.refs.len(),
        managed: found.refs.iter().filter(|r| r.is_managed()).count(),
        repositories: resolved.repositories,
        updates: plan.updates.len(),
        up_to_date: count(|o| matches!(o, Outcome::UpToDate)),
        pinned: count(|o| matches!(o, Outcome::Pinned(_))),
        skipped: count(|o| matches!(o, Outcome::Skipped(_))),
        failed: count(|o| matches!(o, Outcome::Failed(_))),
        refused: found
            .refs
            .iter()
            .zip(&resolved.outcomes)
            .filter(|(r, o)| edit_refused(r, o, &plan.refused))
            .count(),
    }
}

/// An update that was found but not applied because its file's edit was refused.
fn edit_refused(r: &ImageRef, o: &Outcome, refused: &std::collections::BTreeSet<String>) -> bool {
    matches!(o, Outcome::Update { .. }) && r.touched_files().iter().any(|f| refused.contains(*f))
}

fn not_updated<'a>(
    found: &'a Discovery,
    outcomes: &'a [Outcome],
    refused: &std::collections::BTreeSet<String>,
) -> Vec<NotUpdated<'a>> {
    found
        .refs
        .iter()
        .zip(outcomes)
        .filter_map(|(r, o)| {
            let (status, reason) = match o {
                o if edit_refused(r, o, refused) => (
                    "edit-refused",
                    Some("the file's edit failed verification and was left unchanged"),
                ),
                Outcome::Update { .. } => return None,
                Outcome::UpToDate => ("up-to-date", None),
                Outcome::Pinned(s) => ("pinned", Some(s.as_str())),
                Outcome::Skipped(s) => ("skipped", Some(s.as_str())),
                Outcome::Unmanaged(s) => ("unmanaged", Some(s.as_str())),
                Outcome::Failed(s) => ("not-checked", Some(s.as_str())),
            };
            Some(NotUpdated {
                file: &r.file,
                line: r.line,
                image: r.image.to_string(),
                tag: r.tag.as_deref(),
                status,
                reason,
            })
        })
        .collect()
}
