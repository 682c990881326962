//! The commands, one file each, wiring the pipeline stages together. `main.rs` only parses
//! the command line and exits with the code [`main`] returns.
//!
//! Flags are checked once ([`RunPlan`]), output settings live in one [`Output`] value
//! passed down, and every failure is an [`Error`] turned into an exit code in one place
//! ([`error::exit_code`]).

mod config;
mod error;
mod operate;
mod output;
mod promotions;
mod registry_check;
mod run;
mod run_dashboard;
mod run_plan;
mod scan;
mod source;
mod subdir;
mod tags;
mod verify_bundle;
mod verify_image;

pub use error::{Error, Status};
pub use output::Output;
pub use run_plan::{ForgeFlags, Mode, RunPlan};
pub use source::Source;

use crate::cli::{Cli, Command, ConfigCommand, Format, LogFormat, RegistryCommand};
use imagebump_model::env::EnvVars;

/// Run the command line's command: set up logging, dispatch, and return the exit code.
pub fn main(cli: Cli) -> i32 {
    let output = Output {
        request_timeout: cli.request_timeout,
        ..Output::new(
            format_of(&cli.command),
            cli.quiet,
            cli.log_format == LogFormat::Json,
            cli.verbose,
        )
    };
    hold_secrets_of_environment();
    init_logging(cli.verbose, cli.quiet, cli.log_format);
    error::exit_code(dispatch(cli.command, &output))
}

/// The secret values the environment gives the run are held by the redactor before anything
/// can quote them (a credential helper's stderr, a server's error body, a log line).
fn hold_secrets_of_environment() {
    for name in EnvVars::SECRETS {
        if let Some(value) = EnvVars::get(name) {
            imagebump_http::hold(&value);
        }
    }
}

fn dispatch(command: Command, out: &Output) -> Result<Status, Error> {
    let cores = crate::parallel::cores();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores)
        .max_blocking_threads(crate::limits::threads(512))
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    runtime.block_on(async { crate::limits::catch_file_size_signal() });
    match command {
        Command::Scan(args) => runtime.block_on(scan::scan(&args, out)),
        Command::Promotions(args) => {
            promotions::promotions(&source::Source::from(&args), args.output, out)
        }
        Command::Run(args) => {
            let plan = RunPlan::new(args)?;
            let journal = crate::progress::Journal::default();
            let stopped = |why: String| Error::Stopped {
                why,
                done: journal.entries(),
            };
            let end = runtime.block_on(async {
                let terminated = terminated();
                tokio::select! {
                    end = run::run(&plan, out, &journal) => end,
                    signal = terminated => Err(stopped(signal.to_string())),
                    limit = deadline(plan.timeout) => Err(stopped(limit)),
                }
            });
            // A run that could not finish still says so to its operators.
            if let Err(e) = &end {
                runtime.block_on(operate::stopped(&plan, out, e));
            }
            end
        }
        Command::Tags(args) => runtime.block_on(tags::tags(&args, out)),
        Command::Config(ConfigCommand::Schema { report }) => Ok(config::schema(report)),
        Command::Config(ConfigCommand::Check { source, config }) => config::check(source, config),
        Command::Registry(RegistryCommand::Check(args)) => {
            runtime.block_on(registry_check::check(&args, out))
        }
        Command::Verify(args) => runtime.block_on(verify_image::verify(&args, out)),
        Command::VerifyBundle(args) => verify_bundle::verify_bundle(&args),
    }
}

/// SIGTERM, what Kubernetes and GitHub Actions send before they kill: the run stops at its
/// next step, and dropping it removes what it holds (the temporary clone). Pushed branches
/// and opened pull requests stay; a rerun adopts them. The handler is installed when this
/// is called, not when the future is first polled: `select!` may poll the run first, and
/// a SIGTERM during the run's first steps must not meet the default (an exit at once that
/// leaves the clone behind).
fn terminated() -> impl std::future::Future<Output = &'static str> {
    use tokio::signal::unix::{signal, SignalKind};
    let term = signal(SignalKind::terminate());
    async move {
        match term {
            Ok(mut term) => {
                term.recv().await;
                "SIGTERM"
            }
            // No handler: the signal keeps its default (the process ends at once).
            Err(_) => std::future::pending().await,
        }
    }
}

/// The run's deadline (`--timeout`): what stopped it, once it has passed.
async fn deadline(timeout: Option<std::time::Duration>) -> String {
    match timeout {
        Some(t) => {
            tokio::time::sleep(t).await;
            format!(
                "its deadline (--timeout {})",
                imagebump_model::duration::format_age(t)
            )
        }
        None => std::future::pending().await,
    }
}

/// The git token for cloning and pushing, from the environment.
fn git_token() -> Option<secrecy::SecretString> {
    [EnvVars::IMAGEBUMP_GIT_TOKEN, EnvVars::GITHUB_TOKEN]
        .iter()
        .find_map(|v| EnvVars::get(v).filter(|t| !t.is_empty()))
        .map(secrecy::SecretString::from)
}

/// The `--output` of the command (the config subcommands print text only).
fn format_of(command: &Command) -> Format {
    match command {
        Command::Scan(args) => args.source.output,
        Command::Promotions(args) => args.output.format(),
        Command::Run(args) => args.source.output,
        Command::Tags(args) => args.output,
        Command::Registry(RegistryCommand::Check(args)) => args.output,
        Command::Config(_) | Command::VerifyBundle(_) | Command::Verify(_) => Format::Text,
    }
}

/// Log to stderr, as text or JSON lines. `IMAGEBUMP_LOG` (or `RUST_LOG`) wins over `-v`/`-q`.
fn init_logging(verbose: u8, quiet: bool, format: LogFormat) {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    let filter = EnvVars::get(EnvVars::IMAGEBUMP_LOG)
        .or_else(|| EnvVars::get(EnvVars::RUST_LOG))
        .unwrap_or_else(|| format!("imagebump={level},warn"));
    // Colour only for a person at a terminal: a log file or a collector gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && EnvVars::get_os(EnvVars::NO_COLOR).is_none();
    // Text lines are one event each with nothing hidden in them; JSON escapes its strings.
    let escape = format == LogFormat::Text;
    let builder = tracing_subscriber::fmt()
        .with_writer(move || output::LogWriter::new(escape, ansi))
        .with_ansi(ansi)
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_target(false);
    // A second initialisation (a test calling `main` twice) keeps the first subscriber.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}
