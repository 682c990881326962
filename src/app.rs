//! The commands, wiring the pipeline stages together. `main.rs` only parses and exits.

use std::io::{IsTerminal, Write};

use secrecy::SecretString;

use crate::cli::{Cli, Command, ConfigCommand, Output, RegistryCommand, RunArgs, SourceArgs};
use crate::config::{self, Config};
use crate::discover::{self, Discovery, ImageRef};
use crate::exit;
use crate::forge::Forge;
use crate::plan;
use crate::registry::Registries;
use crate::report::{self, Counts, NotUpdated, Problem, RunReport, ScanEntry, ScanReport};
use crate::resolve::{self, Outcome};
use crate::source::{self, Workspace};

/// Whether logs are JSON lines: then the run's errors, warnings and notes go through the
/// log too, so that a log collector sees every line as JSON.
static LOG_JSON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn log_json() -> bool {
    LOG_JSON.load(std::sync::atomic::Ordering::Relaxed)
}

/// `-q`: no progress bar either.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Log to stderr, as text or JSON lines. `IMAGEBUMP_LOG` (or `RUST_LOG`) wins over `-v`/`-q`.
pub fn init_logging(verbose: u8, quiet: bool, format: crate::cli::LogFormat) {
    LOG_JSON.store(
        format == crate::cli::LogFormat::Json,
        std::sync::atomic::Ordering::Relaxed,
    );
    QUIET.store(quiet, std::sync::atomic::Ordering::Relaxed);
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
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_target(false);
    let _ = match format {
        crate::cli::LogFormat::Text => builder.try_init(),
        crate::cli::LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
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
        Command::Config(ConfigCommand::Schema { report }) => {
            if report {
                print!("{}", crate::report::schema());
            } else {
                print!("{}", config::schema());
            }
            exit::OK
        }
        Command::Config(ConfigCommand::Check { source, config }) => config_check(&source, config),
        Command::Registry(RegistryCommand::Check(args)) => {
            runtime.block_on(crate::registry::check::command(&args))
        }
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
    prepare_with(args, git_token(), 1)
}

/// Open the source with this git token and history depth, and load its configuration.
fn prepare_with(
    args: &SourceArgs,
    token: Option<SecretString>,
    depth: usize,
) -> Result<Loaded, (i32, String)> {
    let ws = source::open(&args.source, args.git_ref.as_deref(), token, depth)
        .map_err(|e| (exit::ERRORS, e.to_string()))?;
    let path = config::locate(args.config.as_deref(), &ws.root);
    let config = match &path {
        Some(path) => config::load(path).map_err(|e| (exit::USAGE, e.to_string()))?,
        None => Config::default(),
    };
    Ok((ws, config, path))
}

fn print_problems(problems: &[Problem]) {
    print_all("error", problems);
}

fn print_notes(notes: &[Problem]) {
    print_all("note", notes);
}

fn print_warnings(warnings: &[Problem]) {
    print_all("warning", warnings);
}

/// `error: location: message (hint: …)` lines on stderr, or JSON log events.
fn print_all(kind: &str, problems: &[Problem]) {
    if log_json() {
        for p in problems {
            let hint = p.hint.as_deref().unwrap_or_default();
            match kind {
                "error" => tracing::error!(location = %p.location, hint, "{}", p.message),
                // Notes are shown by default, as in text mode.
                _ => tracing::warn!(kind, location = %p.location, hint, "{}", p.message),
            }
        }
        return;
    }
    let mut err = std::io::stderr().lock();
    for p in problems {
        let _ = writeln!(err, "{kind}: {p}");
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

/// Write `value` as pretty JSON to `path`, atomically.
fn write_json_file<T: serde::Serialize>(path: &std::path::Path, value: &T) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| e.to_string())?;
    tmp.write_all(text.as_bytes())
        .and_then(|_| tmp.write_all(b"\n"))
        .map_err(|e| e.to_string())?;
    tmp.persist(path).map_err(|e| e.error.to_string())?;
    Ok(())
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
    PullRequests,
    /// `--push`: commit straight to the base branch.
    Push,
}

/// How many times `--push` analyses a moved base again.
const PUSH_ATTEMPTS: usize = 3;

/// Connect to the forge of a remote source (`Ok(None)`: no forge token is set).
async fn connect_forge(args: &RunArgs) -> Result<Option<crate::forge::connect::Connected>, String> {
    let (url, _) = crate::source::git::split_credentials(&args.source.source);
    crate::forge::connect::connect(&crate::forge::connect::Request {
        url: &url,
        kind: args.forge,
        api_url: args.forge_url.as_deref(),
        repo: args.forge_repo.as_deref(),
    })
    .await
}

async fn run(args: &RunArgs) -> i32 {
    let remote = source::is_remote(&args.source.source);
    let mode = match (args.write, args.dry_run, remote) {
        (true, _, true) => {
            eprintln!("error: --write applies edits to a local working tree; use it with a local directory");
            return exit::USAGE;
        }
        (true, _, false) => Mode::Write,
        _ if args.push && !remote => {
            eprintln!("error: --push commits to a remote's base branch; give a repository URL");
            return exit::USAGE;
        }
        (false, false, true) if args.push => Mode::Push,
        (false, true, _) | (false, false, false) => Mode::DryRun,
        (false, false, true) => Mode::PullRequests,
    };
    // The forge first: its token (a GitHub App's installation token) also clones and pushes.
    let connected = if remote && mode != Mode::Push {
        match connect_forge(args).await {
            Ok(f) => f,
            Err(e) if mode == Mode::PullRequests => {
                eprintln!("error: {e}");
                return exit::USAGE;
            }
            Err(e) => {
                eprintln!("warning: {e}; showing the plan without the pull requests' state");
                None
            }
        }
    } else {
        None
    };
    if mode == Mode::PullRequests && connected.is_none() {
        eprintln!("error: pull requests need a forge token: IMAGEBUMP_FORGE_TOKEN, or GITHUB_TOKEN (contents: write, pull-requests: write) or a GitHub App (IMAGEBUMP_GITHUB_APP_ID and IMAGEBUMP_GITHUB_APP_KEY_FILE), GITLAB_TOKEN (api scope), GITEA_TOKEN (write:repository, write:issue); or pass --dry-run");
        return exit::USAGE;
    }
    let mut token = git_token();
    if let (Some(c), None) = (&connected, std::env::var_os("IMAGEBUMP_GIT_TOKEN")) {
        if let Some(t) = &c.git_token {
            token = Some(t.clone());
        }
    }
    let depth = if connected.is_some() || mode == Mode::Push {
        args.history_depth.max(1)
    } else {
        1
    };
    let (ws, config, config_path) = match prepare_with(&args.source, token, depth) {
        Ok(x) => x,
        Err((code, msg)) => {
            eprintln!("error: {msg}");
            return code;
        }
    };
    let forge_ref: Option<&dyn Forge> = connected.as_ref().map(|c| c.forge.as_ref());
    let mut problems: Vec<Problem> = Vec::new();
    // Versions reviewers rejected: closed pull requests (with a forge) and reverted
    // imagebump commits in the base's history.
    let rejections = match &ws.git {
        Some(git) if depth > 1 => {
            let mut closed = Vec::new();
            if let Some(f) = forge_ref {
                match f
                    .closed_pulls(&config.pull_requests.branch_prefix, 100)
                    .await
                {
                    Ok(c) => closed = c,
                    Err(e) => problems.push(Problem {
                        location: f.name().into(),
                        message: format!("cannot list closed pull requests: {e}"),
                        hint: e.hint(),
                    }),
                }
            }
            let history = git
                .log(&ws.root, "HEAD", args.history_depth)
                .unwrap_or_default();
            crate::deliver::pulls::rejections(&closed, &history)
        }
        _ => Default::default(),
    };
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
    let group_by = args.group_by.unwrap_or(config.pull_requests.group_by);
    let base = args
        .source
        .git_ref
        .clone()
        .or_else(|| ws.branch.clone())
        .unwrap_or_default();
    let mut base_commit = ws.commit.clone().unwrap_or_default();
    let mut pushed: Option<String> = None;
    let mut attempt = 1;
    let (found, resolved, plan) = loop {
        let mut found = discover::discover(&ws.root, &config);
        // A shard keeps the references of its change-set groups only: registry work and
        // pull requests are split, and the shards together do what one run would.
        if let Some((i, n)) = args.shard {
            found
                .refs
                .retain(|r| plan::shard_of(&plan::group_of_ref(r, group_by), n) == i);
        }
        tracing::info!(
            references = found.refs.len(),
            files = found.files_scanned,
            "discovered"
        );
        let progress = crate::progress::Progress::stderr(
            !log_json() && !QUIET.load(std::sync::atomic::Ordering::Relaxed),
        );
        let mut resolved = resolve::resolve(
            &found.refs,
            &registries,
            args.concurrency,
            &rejections,
            &progress,
        )
        .await;
        progress.finish();
        let stats = registries.stats.snapshot();
        tracing::info!(
            repositories = resolved.repositories,
            tag_list_pages = stats.tag_list_pages,
            manifests = stats.manifests,
            blobs = stats.blobs,
            "resolved"
        );
        // Settings honoured differently (Argo CD annotations) are reported with the warnings.
        resolved.warnings.splice(0..0, found.notes.iter().cloned());
        let plan = plan::plan(&found, &resolved.outcomes, group_by);
        tracing::info!(
            updates = plan.updates.len(),
            files = plan.files.len(),
            change_sets = plan.change_sets.len(),
            "planned"
        );
        if let (Mode::Push, Some(git)) = (mode, &ws.git) {
            use crate::deliver::push::{push_to_base, PushError};
            match push_to_base(git, &ws.root, &base, &base_commit, &plan, &config.pull_requests) {
                Ok(sha) => pushed = sha,
                // The base moved: analyse the new base, a bounded number of times.
                Err(PushError::Moved) if attempt < PUSH_ATTEMPTS => {
                    attempt += 1;
                    let moved = git
                        .fetch_base(&ws.root, &base, 1)
                        .and_then(|sha| git.checkout(&ws.root, &sha).map(|_| sha));
                    match moved {
                        Ok(sha) => {
                            tracing::info!("the base moved to {sha}; analysing it again");
                            base_commit = sha;
                            continue;
                        }
                        Err(e) => problems.push(Problem::general(format!(
                            "the base moved and cannot be fetched: {e}"
                        ))),
                    }
                }
                Err(PushError::Moved) => problems.push(Problem::general(format!(
                    "the base branch {base} kept moving; gave up after {PUSH_ATTEMPTS} attempts (run again)"
                ))),
                Err(PushError::Failed(e)) => problems.push(Problem::general(e)),
            }
        }
        break (found, resolved, plan);
    };
    problems.splice(0..0, found.problems.iter().cloned());
    problems.extend(resolved.problems.iter().cloned());
    problems.extend(plan.problems.iter().cloned());
    if mode == Mode::Write {
        problems.extend(crate::deliver::write::write_all(&ws.root, &plan.files));
    }
    let pulls = match (&ws.git, &ws.commit, &ws.branch) {
        (Some(git), Some(commit), Some(branch)) if remote && mode != Mode::Push => {
            // Links to the new images' sources, one lookup per distinct (image, tag).
            let sources = if mode == Mode::PullRequests {
                source_links(&plan, &registries, args.concurrency).await
            } else {
                Default::default()
            };
            let ctx = crate::deliver::pulls::Context {
                sources: &sources,
                shard: args.shard,
                git,
                dir: &ws.root,
                base: args.source.git_ref.as_deref().unwrap_or(branch),
                base_commit: commit,
                forge: forge_ref,
                settings: &config.pull_requests,
                max_new: args.max_prs.or(config.pull_requests.max_new),
                dry_run: mode != Mode::PullRequests,
            };
            let (reports, p) = crate::deliver::pulls::deliver(&ctx, &plan).await;
            problems.extend(p);
            Some(reports)
        }
        _ => None,
    };

    let counts = counts(&found, &resolved, &plan);
    let run_report = RunReport {
        version: 1,
        mode: match mode {
            Mode::Write => "write",
            Mode::DryRun => "dry-run",
            Mode::PullRequests => "pull-requests",
            Mode::Push => "push",
        },
        pushed: pushed.as_deref(),
        pull_requests: pulls.as_deref(),
        commit: ws.commit.as_deref(),
        counts: counts.clone(),
        updates: &plan.updates,
        change_sets: &plan.change_sets,
        not_updated: not_updated(&found, &resolved.outcomes, &plan.refused),
        requests: registries.stats.snapshot(),
        warnings: &resolved.warnings,
        errors: &problems,
    };
    let mut late: Vec<Problem> = Vec::new();
    if let Some(path) = &args.report {
        if let Err(e) = write_json_file(path, &run_report) {
            late.push(Problem::general(format!(
                "--report {}: {e}",
                path.display()
            )));
        }
    }
    late.extend(crate::report::github::publish(&run_report));
    match args.source.output {
        Output::Json => print_json(&run_report),
        Output::Text => {
            let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{}", crate::deliver::diff::render(&plan.files, color));
            if !plan.updates.is_empty() {
                let _ = writeln!(out);
                let _ = write!(out, "{}", report::updates_table(&plan.updates));
            }
            if let Some(p) = &pulls {
                if !p.is_empty() {
                    let _ = writeln!(out);
                    let _ = write!(out, "{}", report::pulls_table(p));
                }
            }
            let verb = match mode {
                Mode::Write => "applied",
                Mode::DryRun => "proposed",
                Mode::PullRequests => "in pull requests",
                Mode::Push if pushed.is_some() => "pushed",
                Mode::Push => "not pushed",
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
    print_problems(&late);
    if !problems.is_empty() || !late.is_empty() {
        exit::ERRORS
    } else if args.exit_code && !plan.updates.is_empty() && mode == Mode::DryRun {
        exit::PENDING
    } else {
        exit::OK
    }
}

/// The `org.opencontainers.image.source` of every new image, by (image, tag), fetched
/// concurrently; images without the label (or unreachable) are left out.
async fn source_links(
    plan: &plan::Plan,
    registries: &Registries,
    concurrency: usize,
) -> std::collections::BTreeMap<(String, String), String> {
    use futures::stream::{self, StreamExt};
    let wanted: std::collections::BTreeSet<(String, String)> = plan
        .updates
        .iter()
        .map(|u| {
            (
                u.image.clone(),
                crate::deliver::marker::tag_of(&u.to).to_string(),
            )
        })
        .collect();
    stream::iter(wanted)
        .map(|(image, tag)| async move {
            let name = imagebump_model::name::parse_name(&image).ok()?;
            let client = registries.client_for(&name).ok()?;
            let src = resolve::metadata::source_label(&client, &name.repository, &tag).await?;
            Some(((image, tag), src))
        })
        .buffer_unordered(concurrency.max(1))
        .filter_map(|x| async move { x })
        .collect()
        .await
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
