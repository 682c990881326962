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
    #[arg(short, long, action = clap::ArgAction::Count, global = true, help_heading = GLOBAL)]
    pub verbose: u8,
    /// Only errors in the log.
    #[arg(short, long, global = true, env = EnvVars::IMAGEBUMP_QUIET, value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::SetTrue, help_heading = GLOBAL)]
    pub quiet: bool,
    /// Log lines as text, or as JSON objects (one per line, for Kubernetes log collectors).
    #[arg(
        long,
        value_enum,
        global = true,
        default_value = "text",
        env = EnvVars::IMAGEBUMP_LOG_FORMAT,
        help_heading = GLOBAL
    )]
    pub log_format: LogFormat,
    /// How long a registry may stay silent: to connect, and for each read of its answer
    /// (`30s`, `2m`; at most an hour). A timed-out request is tried once more; a registry
    /// that has not answered anything this run is then skipped.
    #[arg(
        long,
        global = true,
        value_name = "DURATION",
        default_value = "30s",
        value_parser = parse_request_timeout,
        env = EnvVars::IMAGEBUMP_REQUEST_TIMEOUT,
        help_heading = GLOBAL
    )]
    pub request_timeout: std::time::Duration,
    #[command(subcommand)]
    pub command: Command,
}

/// The help heading of the options every command takes.
const GLOBAL: &str = "Global options";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every image reference: file:line, image, current tag, and whether it is managed.
    Scan(ScanArgs),
    /// Check the registries and propose (or apply) updates.
    Run(RunArgs),
    /// Per application and environment of the `promoteFrom` rules: what runs where, since
    /// when, and what is promoted next (or why not yet). Reads git history only.
    Promotions(PromotionsArgs),
    /// Explain which tag a policy chooses for an image, with every candidate's reason.
    Tags(TagsArgs),
    /// Check the configuration, or print its JSON Schema.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Check registry access: credentials, authentication and rate-limit headroom.
    #[command(subcommand)]
    Registry(RegistryCommand),
    /// Does an image satisfy the operator's `verify` policy? Prints its digest, the
    /// signature and attestations found, who signed them, each attestation gate's verdict
    /// and the overall verdict. Exits 0 when it does, 1 when it does not.
    Verify(VerifyArgs),
    /// Verify one Sigstore bundle offline, as a sigstore-conformance client
    /// (docs/security.md, "Conformance"). Exits 0 when it verifies, 1 when refused.
    #[command(hide = true)]
    VerifyBundle(VerifyBundleArgs),
}

/// `verify`: one image judged by the `verify` policy the operator's configuration gives it.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The image: `ghcr.io/acme/web:1.2.0`, `ghcr.io/acme/web@sha256:…` (default tag
    /// `latest`).
    #[arg(value_name = "IMAGE[:TAG|@DIGEST]")]
    pub image: String,
    /// The operator's configuration file, whose `images` rules give the image its
    /// `verify` (default: ./imagebump.yaml if present).
    #[arg(long, env = EnvVars::IMAGEBUMP_CONFIG)]
    pub config: Option<PathBuf>,
}

/// `verify-bundle`: the sigstore-conformance client protocol, flag for flag.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("signer").required(true).args(["certificate_identity", "key"]))]
pub struct VerifyBundleArgs {
    /// Sigstore staging infrastructure: no staging trusted root is built in, so this needs
    /// `--trusted-root`.
    #[arg(long)]
    pub staging: bool,
    /// The bundle (`*.sigstore.json`).
    #[arg(long, value_name = "FILE")]
    pub bundle: PathBuf,
    /// The signing certificate's exact subject (SAN URI or email).
    #[arg(long, value_name = "IDENTITY", requires = "certificate_oidc_issuer")]
    pub certificate_identity: Option<String>,
    /// The signing certificate's exact OIDC issuer.
    #[arg(long, value_name = "URL", requires = "certificate_identity")]
    pub certificate_oidc_issuer: Option<String>,
    /// A PEM public key the bundle is signed with instead of a certificate.
    #[arg(
        long,
        value_name = "PATH_TO_KEY",
        conflicts_with = "certificate_identity"
    )]
    pub key: Option<PathBuf>,
    /// A `trusted_root.json` instead of the built-in Sigstore public-good root.
    #[arg(long, value_name = "FILE")]
    pub trusted_root: Option<PathBuf>,
    /// The artifact's path, or its digest `sha256:<64 hex>` (when no such file exists).
    #[arg(value_name = "FILE_OR_DIGEST")]
    pub input: String,
}

#[derive(Debug, Subcommand)]
pub enum RegistryCommand {
    /// For each registry (every `registries` entry and those the repository here uses, or
    /// the ones named), say which credentials source answered, whether the registry
    /// accepted it, and the rate-limit headroom. Never prints a secret. Exits 1 when any
    /// check fails.
    Check(RegistryCheckArgs),
}

#[derive(Debug, Args)]
pub struct RegistryCheckArgs {
    /// Registry prefixes or images to check, e.g. `ghcr.io/acme` or `ghcr.io/acme/web`
    /// (an image is also read: its first page of tags). Default: every `registries` entry,
    /// and in a repository (imagebump.yaml or .git here) every other registry its
    /// references use.
    pub targets: Vec<String>,
    /// Configuration file (default: ./imagebump.yaml if present).
    #[arg(long, env = EnvVars::IMAGEBUMP_CONFIG)]
    pub config: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text", env = EnvVars::IMAGEBUMP_OUTPUT)]
    pub output: Format,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Load and validate imagebump.yaml; print the rules and any warnings.
    Check {
        /// The manifest tree whose configuration to check.
        #[arg(default_value = ".", env = EnvVars::IMAGEBUMP_SOURCE)]
        source: String,
        /// Configuration file (default: found in the tree as `run` finds it).
        #[arg(long, env = EnvVars::IMAGEBUMP_CONFIG)]
        config: Option<PathBuf>,
    },
    /// Print the JSON Schema of imagebump.yaml (docs/imagebump.schema.json), or with
    /// `--report` of the run report (docs/report.schema.json).
    Schema {
        /// The schema of the JSON report (`run --output json`, `--report FILE`) instead.
        #[arg(long)]
        report: bool,
    },
}

#[derive(Debug, Args)]
pub struct TagsArgs {
    /// The image, e.g. `nginx`, `ghcr.io/acme/web`, or `nginx:1.25.3` (the tag is the current one).
    #[arg(required_unless_present = "chart", conflicts_with = "chart")]
    pub image: Option<String>,
    /// A Helm chart instead of an image: `REPOSITORY/CHART[@VERSION]`, e.g.
    /// `https://charts.example.com/stable/nginx@4.11.2` (the versions of a classic Helm
    /// repository's index) or `oci://ghcr.io/acme/charts/web@1.2.0` (an OCI chart's tags).
    #[arg(long, value_name = "REPOSITORY/CHART[@VERSION]")]
    pub chart: Option<String>,
    /// The current tag (default: the tag in IMAGE; else every candidate is judged as new).
    #[arg(long)]
    pub current: Option<String>,
    /// The current digest (for the `digest` strategy).
    #[arg(long)]
    pub digest: Option<String>,
    /// Read the tags from this file (one per line) instead of asking the registry.
    #[arg(long, value_name = "FILE")]
    pub tags_from: Option<PathBuf>,
    /// `semver` (default), `newest-build`, `digest`, `alphabetical`, `numeric` or `regex`
    /// (see docs/tag-selection.md).
    #[arg(long, value_parser = parse_strategy)]
    pub strategy: Option<imagebump_model::policy::Strategy>,
    /// A Masterminds constraint, e.g. `~1.4` or `>=2, <3`.
    #[arg(long)]
    pub constraint: Option<String>,
    /// `variant` (default) or `masterminds`.
    #[arg(long, value_parser = parse_semver_mode)]
    pub semver_mode: Option<imagebump_model::policy::SemverMode>,
    /// `regexp:<RE>` or `any`.
    #[arg(long)]
    pub allow_tags: Option<String>,
    /// A glob of tags never chosen (repeatable).
    #[arg(long = "ignore-tags", value_name = "GLOB")]
    pub ignore_tags: Vec<String>,
    /// The `regex` strategy's pattern, with a `version`, `num` or `ts` group.
    #[arg(long)]
    pub pattern: Option<String>,
    /// A platform the image must have, `os/arch[/variant]` (repeatable); `any`: none, not
    /// even those the current version offers.
    #[arg(long = "platform", value_name = "PLATFORM")]
    pub platforms: Vec<String>,
    /// Minimum age of the chosen image, e.g. `3d`.
    #[arg(long)]
    pub min_age: Option<String>,
    /// Allow moving below the current tag.
    #[arg(long)]
    pub allow_downgrade: bool,
    /// Verify each candidate's cosign signature with this public key (PEM; repeat for
    /// several): shows every verdict, and only a verified tag is chosen.
    #[arg(long = "verify-key", value_name = "FILE")]
    pub verify_keys: Vec<PathBuf>,
    /// Verify keyless (Sigstore) signatures: a Fulcio certificate from this OIDC issuer whose
    /// subject matches the regular expression (repeatable), e.g.
    /// `https://token.actions.githubusercontent.com=^https://github.com/acme/`.
    #[arg(long = "verify-identity", value_name = "ISSUER=SUBJECT_REGEXP")]
    pub verify_identities: Vec<String>,
    /// The Sigstore trusted_root.json for --verify-identity (default: the public-good root
    /// built in).
    #[arg(long, value_name = "FILE")]
    pub verify_trusted_root: Option<PathBuf>,
    /// A local clone of the manifest repository: hold back what reviewers rejected there
    /// (reverts in its history, the rejections its `origin` records), and say who did;
    /// with minAge, count from the first sightings its `origin` records.
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Configuration file for registries and `images` rules (default: ./imagebump.yaml if present).
    #[arg(long, env = EnvVars::IMAGEBUMP_CONFIG)]
    pub config: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text", env = EnvVars::IMAGEBUMP_OUTPUT)]
    pub output: Format,
}

/// A flag's value the parsers below refuse; clap shows it after the flag's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    #[error("expected semver, newest-build, digest, alphabetical, numeric or regex")]
    Strategy,
    #[error("expected variant or masterminds")]
    SemverMode,
    /// `--shard`, as written.
    #[error("{0:?}: expected I/N with 0 <= I < N, e.g. 0/4")]
    Shard(String),
    #[error(transparent)]
    Duration(#[from] imagebump_model::duration::DurationError),
    /// `--timeout`, as written.
    #[error("{0:?} is longer than a week")]
    TimeoutOverAWeek(String),
    /// `--request-timeout`, as written.
    #[error("{0:?}: expected more than 0s and at most 1h")]
    RequestTimeout(String),
    #[error("expected app, directory, image or all")]
    GroupBy,
}

fn parse_strategy(s: &str) -> Result<imagebump_model::policy::Strategy, FlagError> {
    serde_json::from_value(serde_json::Value::String(s.into())).map_err(|_| FlagError::Strategy)
}

fn parse_semver_mode(s: &str) -> Result<imagebump_model::policy::SemverMode, FlagError> {
    serde_json::from_value(serde_json::Value::String(s.into())).map_err(|_| FlagError::SemverMode)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// How results are written to stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct SourceArgs {
    /// A local directory or a git URL (https://, ssh://, git://, file://, git@host:path).
    #[arg(default_value = ".", env = EnvVars::IMAGEBUMP_SOURCE)]
    pub source: String,
    /// Branch or tag to clone (remote sources).
    #[arg(long = "ref", env = EnvVars::IMAGEBUMP_REF)]
    pub git_ref: Option<String>,
    /// Configuration file (default: imagebump.yaml, .imagebump.yaml or .github/imagebump.yaml in the tree).
    #[arg(long, env = EnvVars::IMAGEBUMP_CONFIG)]
    pub config: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text", env = EnvVars::IMAGEBUMP_OUTPUT)]
    pub output: Format,
}

/// `imagebump promotions`: the source flags, and an output that may be a page.
#[derive(Debug, Args)]
pub struct PromotionsArgs {
    /// A local directory or a git URL (https://, ssh://, git://, file://, git@host:path).
    #[arg(default_value = ".", env = EnvVars::IMAGEBUMP_SOURCE)]
    pub source: String,
    /// Branch or tag to clone (remote sources).
    #[arg(long = "ref", env = EnvVars::IMAGEBUMP_REF)]
    pub git_ref: Option<String>,
    /// Configuration file (default: imagebump.yaml, .imagebump.yaml or .github/imagebump.yaml in the tree).
    #[arg(long, env = EnvVars::IMAGEBUMP_CONFIG)]
    pub config: Option<PathBuf>,
    /// Output format: `html` writes one self-contained page (docs/report.md, "HTML view").
    #[arg(long, value_enum, default_value = "text", env = EnvVars::IMAGEBUMP_OUTPUT)]
    pub output: PageFormat,
}

/// How `promotions` writes its results: as the other commands do, or as an HTML page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PageFormat {
    Text,
    Json,
    Html,
}

impl PageFormat {
    /// The format of the command's other output (`html`: text for warnings and errors).
    pub fn format(self) -> Format {
        match self {
            PageFormat::Json => Format::Json,
            PageFormat::Text | PageFormat::Html => Format::Text,
        }
    }
}

#[derive(Debug, Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Ask no server. Without it, and with `helm.charts` on (the default), the images of
    /// chart-only Argo CD apps are read from their charts' default values: each chart
    /// version's archive is downloaded once (docs/discovery.md, "Helm charts").
    #[arg(long, env = EnvVars::IMAGEBUMP_OFFLINE, value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::SetTrue)]
    pub offline: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Print the diff and summary; change nothing (the default for a local directory).
    #[arg(long, conflicts_with = "write", env = EnvVars::IMAGEBUMP_DRY_RUN, value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::SetTrue)]
    pub dry_run: bool,
    /// Apply the edits to the local working tree.
    #[arg(long, env = EnvVars::IMAGEBUMP_WRITE, value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::SetTrue)]
    pub write: bool,
    /// Exit with status 3 when updates are pending (and there was no error).
    #[arg(long, env = EnvVars::IMAGEBUMP_EXIT_CODE, value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::SetTrue)]
    pub exit_code: bool,
    /// Registry requests in flight at once, over all registries.
    #[arg(long, default_value_t = 32, env = EnvVars::IMAGEBUMP_CONCURRENCY)]
    pub concurrency: usize,
    /// Keep manifests and config blobs fetched by digest in this directory between runs
    /// (content-addressed, verified on read, at most 256 MiB; tags are always asked again):
    /// a warm newest-build run asks one HEAD per candidate tag and no blob.
    #[arg(long, value_name = "DIR", env = EnvVars::IMAGEBUMP_CACHE_DIR)]
    pub cache_dir: Option<PathBuf>,
    /// Commit straight to the base branch of a remote instead of opening pull requests (for
    /// environments without review). With --dry-run: show the commit it would push.
    #[arg(long, conflicts_with = "write", env = EnvVars::IMAGEBUMP_PUSH, value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::SetTrue)]
    pub push: bool,
    /// Only the change sets of shard I of N (`0/4` … `3/4`): groups are split by a stable
    /// hash of their key, for an Indexed Job (`--shard $(JOB_COMPLETION_INDEX)/N`).
    #[arg(long, value_parser = parse_shard, env = EnvVars::IMAGEBUMP_SHARD)]
    pub shard: Option<(u64, u64)>,
    /// Also write the JSON report to this file.
    #[arg(long, value_name = "FILE", env = EnvVars::IMAGEBUMP_REPORT)]
    pub report: Option<PathBuf>,
    /// Also write the run as one self-contained HTML page to this file: every application
    /// in every environment, the recent promotions, the run's summary (docs/report.md,
    /// "HTML view").
    #[arg(long, value_name = "FILE", env = EnvVars::IMAGEBUMP_REPORT_HTML)]
    pub report_html: Option<PathBuf>,
    /// Write the run's metrics to FILE in the OpenMetrics text format (replaced atomically,
    /// for node-exporter's textfile collector; docs/kubernetes.md, "Metrics").
    #[arg(long, value_name = "FILE", env = EnvVars::IMAGEBUMP_METRICS_FILE)]
    pub metrics_file: Option<PathBuf>,
    /// Push the run's metrics to this Prometheus Pushgateway (e.g. http://pushgateway:9091),
    /// grouped by job `imagebump` and the repository.
    #[arg(long, value_name = "URL", env = EnvVars::IMAGEBUMP_PUSHGATEWAY)]
    pub pushgateway: Option<String>,
    /// Write the run's Markdown summary to FILE (the table GitHub Actions' step summary
    /// shows: what changed, what is held back and why, what failed).
    #[arg(long, value_name = "FILE", env = EnvVars::IMAGEBUMP_SUMMARY_MD)]
    pub summary_md: Option<PathBuf>,
    /// New pull requests per run at most (existing ones are always kept current).
    #[arg(long, env = EnvVars::IMAGEBUMP_MAX_PRS)]
    pub max_prs: Option<usize>,
    /// How updates are grouped into pull requests (overrides pullRequests.groupBy).
    #[arg(long, value_parser = parse_group_by, env = EnvVars::IMAGEBUMP_GROUP_BY)]
    pub group_by: Option<imagebump_model::config::GroupBy>,
    /// Commits of the base branch searched for reverted imagebump commits.
    #[arg(long, default_value_t = 200, env = EnvVars::IMAGEBUMP_HISTORY_DEPTH)]
    pub history_depth: usize,
    /// The run's deadline (`25m`, `1h`; at most a week; `0`: none). When it passes, the run
    /// stops, says what it had done, removes its temporary files and exits 1.
    #[arg(long, value_name = "DURATION", default_value = "25m", value_parser = parse_timeout, env = EnvVars::IMAGEBUMP_TIMEOUT)]
    pub timeout: std::time::Duration,
    /// The forge of the remote (default: from its host or the CI system: github.com,
    /// gitlab.com, codeberg.org, GitLab CI, Gitea/Forgejo Actions; see
    /// docs/pull-requests.md).
    #[arg(long, value_parser = forge_kind_parser(), env = EnvVars::IMAGEBUMP_FORGE)]
    pub forge: Option<ForgeKind>,
    /// The forge's API base URL (GitHub Enterprise: https://HOST/api/v3, also GITHUB_API_URL;
    /// GitLab: https://HOST/api/v4, also CI_API_V4_URL; Gitea: https://HOST/api/v1).
    #[arg(long, env = EnvVars::IMAGEBUMP_FORGE_URL)]
    pub forge_url: Option<String>,
    /// owner/name of the repository on the forge (GitLab: the project path, e.g.
    /// group/subgroup/project, or its id; default: from the remote URL).
    #[arg(long, env = EnvVars::IMAGEBUMP_FORGE_REPO)]
    pub forge_repo: Option<String>,
}

use imagebump_model::env::EnvVars;
use imagebump_model::ForgeKind;

/// `--forge`: the model's names, with `forgejo` as an alias of `gitea` (the same API).
fn forge_kind_parser() -> impl clap::builder::TypedValueParser<Value = ForgeKind> {
    use clap::builder::TypedValueParser as _;
    let names = ForgeKind::NAMES
        .map(|(name, aliases)| clap::builder::PossibleValue::new(name).aliases(aliases.iter()));
    clap::builder::PossibleValuesParser::new(names).try_map(|s| {
        s.parse::<ForgeKind>()
            .map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { e.into() })
    })
}

fn parse_shard(s: &str) -> Result<(u64, u64), FlagError> {
    let bad = || FlagError::Shard(s.to_string());
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (u64, u64) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

fn parse_timeout(s: &str) -> Result<std::time::Duration, FlagError> {
    let d = imagebump_model::duration::parse_age(s)?;
    if d > std::time::Duration::from_secs(7 * 86_400) {
        return Err(FlagError::TimeoutOverAWeek(s.to_string()));
    }
    Ok(d)
}

fn parse_request_timeout(s: &str) -> Result<std::time::Duration, FlagError> {
    let d = imagebump_model::duration::parse_age(s)?;
    if d.is_zero() || d > std::time::Duration::from_secs(3600) {
        return Err(FlagError::RequestTimeout(s.to_string()));
    }
    Ok(d)
}

fn parse_group_by(s: &str) -> Result<imagebump_model::config::GroupBy, FlagError> {
    serde_json::from_value(serde_json::Value::String(s.into())).map_err(|_| FlagError::GroupBy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_values_refused_with_todays_words() {
        let shard = parse_shard("4/4").map(|_| ()).map_err(|e| e.to_string());
        assert_eq!(
            shard,
            Err(r#""4/4": expected I/N with 0 <= I < N, e.g. 0/4"#.into())
        );
        assert_eq!(parse_shard(" 1 / 4"), Ok((1, 4)));
        let long = parse_timeout("8d").map(|_| ()).map_err(|e| e.to_string());
        assert_eq!(long, Err(r#""8d" is longer than a week"#.into()));
        let bad = parse_timeout("soon").map(|_| ()).map_err(|e| e.to_string());
        let want = r#""soon" is not a duration (use a number and a unit: s, m, h, d, w)"#;
        assert_eq!(bad, Err(want.into()));
        assert_eq!(parse_group_by("team").map(|_| ()), Err(FlagError::GroupBy));
    }
}
