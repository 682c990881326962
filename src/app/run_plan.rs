//! `imagebump run`'s flags, checked once (ripgrep's `HiArgs`): which flags go together is
//! decided here, and the rest of the command takes the plan.

use std::path::PathBuf;

use super::source::Source;
use super::Error;
use crate::cli::RunArgs;
use imagebump_model::config::GroupBy;
use imagebump_model::ForgeKind;

/// What a run does with the updates it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Print the diff and summary (the default for a local directory, or `--dry-run`).
    DryRun,
    /// `--write`: apply the edits to the local working tree.
    Write,
    /// A remote without `--dry-run`: a branch and pull request per change set.
    PullRequests,
    /// `--push`: commit straight to the base branch.
    Push,
}

impl Mode {
    /// The mode as the JSON report names it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Write => "write",
            Mode::DryRun => "dry-run",
            Mode::PullRequests => "pull-requests",
            Mode::Push => "push",
        }
    }
}

/// The forge of a remote, as the flags name it (each `None` is found from the remote).
#[derive(Debug, Clone)]
pub struct ForgeFlags {
    pub kind: Option<ForgeKind>,
    pub api_url: Option<String>,
    pub repo: Option<String>,
}

/// A run's settings, valid together.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub mode: Mode,
    pub source: Source,
    /// The source is a git URL (cloned), not a local directory.
    pub remote: bool,
    /// `--exit-code`: exit 3 when a dry run finds updates.
    pub exit_code: bool,
    /// Registry requests in flight at once.
    pub concurrency: usize,
    /// `--cache-dir`: manifests and configs by digest kept between runs.
    pub cache_dir: Option<PathBuf>,
    /// `--shard I/N`: only the change sets of shard I.
    pub shard: Option<(u64, u64)>,
    /// `--report`: also write the JSON report to this file.
    pub report: Option<PathBuf>,
    /// `--max-prs`: new pull requests per run at most.
    pub max_prs: Option<usize>,
    /// `--group-by`, over the configuration's `pullRequests.groupBy`.
    pub group_by: Option<GroupBy>,
    /// Commits of the base searched for reverted imagebump commits.
    pub history_depth: usize,
    /// `--push --dry-run`: show the commit a push would make.
    pub push_preview: bool,
    /// `--timeout`: the run stops once it has taken this long (`None`: no deadline).
    pub timeout: Option<std::time::Duration>,
    pub forge: ForgeFlags,
    /// `--metrics-file`, `--pushgateway`, `--summary-md`.
    pub operate: super::operate::Flags,
    /// When the run started: the time `schedule` and `freeze` judge (the clock, or
    /// `IMAGEBUMP_TEST_NOW`, for tests; one that is not an RFC 3339 time is the clock).
    pub started: jiff::Timestamp,
}

impl RunPlan {
    /// Check the flags together: `--write` needs a local directory, `--push` a remote.
    pub fn new(args: RunArgs) -> Result<RunPlan, Error> {
        let remote = crate::source::is_remote(&args.source.source);
        let mode = mode(&args, remote)?;
        Ok(RunPlan {
            mode,
            source: Source::from(&args.source),
            remote,
            exit_code: args.exit_code,
            concurrency: args.concurrency,
            cache_dir: args.cache_dir,
            shard: args.shard,
            report: args.report,
            max_prs: args.max_prs,
            group_by: args.group_by,
            history_depth: args.history_depth,
            timeout: Some(args.timeout).filter(|t| !t.is_zero()),
            push_preview: args.push && mode == Mode::DryRun,
            forge: ForgeFlags {
                kind: args.forge,
                api_url: args.forge_url,
                repo: args.forge_repo,
            },
            operate: super::operate::Flags {
                report_html: args.report_html,
                ..super::operate::Flags::new(args.metrics_file, args.pushgateway, args.summary_md)?
            },
            started: crate::promote::now()
                .ok()
                .and_then(|t| jiff::Timestamp::from_second(t).ok())
                .unwrap_or_else(jiff::Timestamp::now),
        })
    }
}

fn mode(args: &RunArgs, remote: bool) -> Result<Mode, Error> {
    Ok(match (args.write, args.dry_run, remote) {
        (true, _, true) => return Err(Error::WriteNeedsLocal),
        (true, _, false) => Mode::Write,
        _ if args.push && !remote => return Err(Error::PushNeedsRemote),
        (false, false, true) if args.push => Mode::Push,
        (false, true, _) | (false, false, false) => Mode::DryRun,
        (false, false, true) => Mode::PullRequests,
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn plan(args: &[&str]) -> Result<RunPlan, Error> {
        let argv = ["imagebump", "run"].iter().chain(args);
        match Cli::try_parse_from(argv).expect("the flags parse").command {
            Command::Run(args) => RunPlan::new(args),
            _ => unreachable!("a run command line"),
        }
    }

    #[test]
    fn the_mode_follows_the_flags_and_the_source() {
        let remote = "https://example.com/acme/manifests.git";
        let mode = |args: &[&str]| plan(args).map(|p| p.mode);
        assert_eq!(mode(&["dir"]).ok(), Some(Mode::DryRun));
        assert_eq!(mode(&["--write", "dir"]).ok(), Some(Mode::Write));
        assert_eq!(mode(&[remote]).ok(), Some(Mode::PullRequests));
        assert_eq!(mode(&["--dry-run", remote]).ok(), Some(Mode::DryRun));
        assert_eq!(mode(&["--push", remote]).ok(), Some(Mode::Push));
        assert!(matches!(
            mode(&["--write", remote]),
            Err(Error::WriteNeedsLocal)
        ));
        assert!(matches!(
            mode(&["--push", "dir"]),
            Err(Error::PushNeedsRemote)
        ));
    }
}
