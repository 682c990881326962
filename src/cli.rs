//! Command-line surface. Every flag can also be set through an `IMAGEBUMP_*` variable.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "imagebump",
    version,
    about = "Keep the container images of a GitOps repository current",
    propagate_version = true
)]
pub struct Cli {
    /// More log output (-v info, -vv debug, -vvv trace).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Only errors in the log.
    #[arg(short, long, global = true, env = "IMAGEBUMP_QUIET", value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::SetTrue)]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every image reference: file:line, image, current tag, and whether it is managed.
    Scan(SourceArgs),
    /// Check the registries and propose (or apply) updates.
    Run(RunArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct SourceArgs {
    /// A local directory or a git URL (https://, ssh://, git://, file://, git@host:path).
    #[arg(default_value = ".", env = "IMAGEBUMP_SOURCE")]
    pub source: String,
    /// Branch or tag to clone (remote sources).
    #[arg(long = "ref", env = "IMAGEBUMP_REF")]
    pub git_ref: Option<String>,
    /// Configuration file (default: imagebump.yaml, .imagebump.yaml or .github/imagebump.yaml in the tree).
    #[arg(long, env = "IMAGEBUMP_CONFIG")]
    pub config: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text", env = "IMAGEBUMP_OUTPUT")]
    pub output: Output,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Print the diff and summary; change nothing (the default for a local directory).
    #[arg(long, conflicts_with = "write", env = "IMAGEBUMP_DRY_RUN", value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::SetTrue)]
    pub dry_run: bool,
    /// Apply the edits to the local working tree.
    #[arg(long, env = "IMAGEBUMP_WRITE", value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::SetTrue)]
    pub write: bool,
    /// Exit with status 3 when updates are pending (and there was no error).
    #[arg(long, env = "IMAGEBUMP_EXIT_CODE", value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::SetTrue)]
    pub exit_code: bool,
    /// Registry requests in flight at once, over all registries.
    #[arg(long, default_value_t = 32, env = "IMAGEBUMP_CONCURRENCY")]
    pub concurrency: usize,
}
