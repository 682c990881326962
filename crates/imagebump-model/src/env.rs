//! Every environment variable imagebump reads, in one documented list (as uv keeps its
//! `EnvVars`). Code names a variable through [`EnvVars`], never as a string literal: a test
//! (tests/architecture.rs) fails on a literal elsewhere, so this list stays complete.
//!
//! Variables imagebump sets or clears for the programs it runs (git's `GIT_*`) are not read
//! by imagebump and are not listed here.

/// The names of the environment variables imagebump reads.
pub struct EnvVars;

impl EnvVars {
    // Command-line flags (each flag's variable; `imagebump --help` shows them too).

    /// `--config`: the operator's configuration file (may hold credentials sources and programs).
    pub const IMAGEBUMP_CONFIG: &'static str = "IMAGEBUMP_CONFIG";

    /// The manifest repository: a local directory or a git URL.
    pub const IMAGEBUMP_SOURCE: &'static str = "IMAGEBUMP_SOURCE";

    /// `--ref`: the branch or tag to clone.
    pub const IMAGEBUMP_REF: &'static str = "IMAGEBUMP_REF";

    /// `--output`: `text` or `json`.
    pub const IMAGEBUMP_OUTPUT: &'static str = "IMAGEBUMP_OUTPUT";

    /// `scan --offline`: ask no server (no chart downloads for chart-only apps).
    pub const IMAGEBUMP_OFFLINE: &'static str = "IMAGEBUMP_OFFLINE";

    /// `--quiet`: only errors on stderr.
    pub const IMAGEBUMP_QUIET: &'static str = "IMAGEBUMP_QUIET";

    /// `--log-format`: `text` or `json` log lines on stderr.
    pub const IMAGEBUMP_LOG_FORMAT: &'static str = "IMAGEBUMP_LOG_FORMAT";

    /// `--dry-run`: print the diff, change nothing.
    pub const IMAGEBUMP_DRY_RUN: &'static str = "IMAGEBUMP_DRY_RUN";

    /// `--write`: edit the files of a local directory in place.
    pub const IMAGEBUMP_WRITE: &'static str = "IMAGEBUMP_WRITE";

    /// `--push`: commit straight to the base branch.
    pub const IMAGEBUMP_PUSH: &'static str = "IMAGEBUMP_PUSH";

    /// `--exit-code`: exit 3 when a dry run has updates pending.
    pub const IMAGEBUMP_EXIT_CODE: &'static str = "IMAGEBUMP_EXIT_CODE";

    /// `--concurrency`: registry requests in flight at once.
    pub const IMAGEBUMP_CONCURRENCY: &'static str = "IMAGEBUMP_CONCURRENCY";

    /// `--cache-dir`: where manifests and config blobs fetched by digest are kept between
    /// runs (content-addressed, bounded; unset: nothing is kept).
    pub const IMAGEBUMP_CACHE_DIR: &'static str = "IMAGEBUMP_CACHE_DIR";

    /// `--shard I/N`: this run's share of the change sets.
    pub const IMAGEBUMP_SHARD: &'static str = "IMAGEBUMP_SHARD";

    /// `--report`: where the JSON report is written.
    pub const IMAGEBUMP_REPORT: &'static str = "IMAGEBUMP_REPORT";
    /// `--report-html`: where the HTML page of the run is written.
    pub const IMAGEBUMP_REPORT_HTML: &'static str = "IMAGEBUMP_REPORT_HTML";

    /// `--max-prs`: new pull requests per run at most.
    pub const IMAGEBUMP_MAX_PRS: &'static str = "IMAGEBUMP_MAX_PRS";
    /// `--timeout`: the run's deadline.
    pub const IMAGEBUMP_TIMEOUT: &'static str = "IMAGEBUMP_TIMEOUT";
    /// `--request-timeout`: how long a registry may stay silent.
    pub const IMAGEBUMP_REQUEST_TIMEOUT: &'static str = "IMAGEBUMP_REQUEST_TIMEOUT";

    /// `--group-by`: how updates are grouped into pull requests.
    pub const IMAGEBUMP_GROUP_BY: &'static str = "IMAGEBUMP_GROUP_BY";

    /// `--history-depth`: base-branch commits searched for reverts.
    pub const IMAGEBUMP_HISTORY_DEPTH: &'static str = "IMAGEBUMP_HISTORY_DEPTH";

    /// `--forge`: github, gitlab, gitea or forgejo.
    pub const IMAGEBUMP_FORGE: &'static str = "IMAGEBUMP_FORGE";

    /// `--forge-url`: the forge's API base URL.
    pub const IMAGEBUMP_FORGE_URL: &'static str = "IMAGEBUMP_FORGE_URL";

    /// `--forge-repo`: owner/name (or GitLab project path) on the forge.
    pub const IMAGEBUMP_FORGE_REPO: &'static str = "IMAGEBUMP_FORGE_REPO";

    /// `--metrics-file`: where the run's metrics are written (OpenMetrics text, for
    /// node-exporter's textfile collector).
    pub const IMAGEBUMP_METRICS_FILE: &'static str = "IMAGEBUMP_METRICS_FILE";

    /// `--pushgateway`: the Prometheus Pushgateway the run's metrics are pushed to (a URL;
    /// a user and password in it are a secret: never logged).
    pub const IMAGEBUMP_PUSHGATEWAY: &'static str = "IMAGEBUMP_PUSHGATEWAY";

    /// `--summary-md`: where the run's Markdown summary is written (CI systems other than
    /// GitHub Actions).
    pub const IMAGEBUMP_SUMMARY_MD: &'static str = "IMAGEBUMP_SUMMARY_MD";

    /// `registry check`: the registry to check.
    pub const IMAGEBUMP_REGISTRY: &'static str = "IMAGEBUMP_REGISTRY";

    // Logging.

    /// Log filter (tracing's `EnvFilter` syntax); beats `RUST_LOG`.
    pub const IMAGEBUMP_LOG: &'static str = "IMAGEBUMP_LOG";

    /// Log filter, when `IMAGEBUMP_LOG` is unset.
    pub const RUST_LOG: &'static str = "RUST_LOG";

    /// Set (to anything) to turn colours off.
    pub const NO_COLOR: &'static str = "NO_COLOR";

    /// The width tables are fitted to (the terminal's when unset; ignored with `-v`).
    pub const COLUMNS: &'static str = "COLUMNS";

    // Forge and git credentials (secrets: never logged).

    /// A token for the forge's API and git, whichever the forge.
    pub const IMAGEBUMP_FORGE_TOKEN: &'static str = "IMAGEBUMP_FORGE_TOKEN";

    /// A token for git alone, when it differs from the API's.
    pub const IMAGEBUMP_GIT_TOKEN: &'static str = "IMAGEBUMP_GIT_TOKEN";

    /// GitHub App id (with `IMAGEBUMP_GITHUB_APP_KEY_FILE`).
    pub const IMAGEBUMP_GITHUB_APP_ID: &'static str = "IMAGEBUMP_GITHUB_APP_ID";

    /// GitHub App private key (PEM file).
    pub const IMAGEBUMP_GITHUB_APP_KEY_FILE: &'static str = "IMAGEBUMP_GITHUB_APP_KEY_FILE";

    /// GitHub token (Actions sets it); also GHCR's password for `credentials: github`.
    pub const GITHUB_TOKEN: &'static str = "GITHUB_TOKEN";

    /// GitLab personal, project or group access token.
    pub const GITLAB_TOKEN: &'static str = "GITLAB_TOKEN";

    /// GitLab OAuth token (sent as Bearer).
    pub const GITLAB_OAUTH_TOKEN: &'static str = "GITLAB_OAUTH_TOKEN";

    /// Gitea access token.
    pub const GITEA_TOKEN: &'static str = "GITEA_TOKEN";

    /// Forgejo access token.
    pub const FORGEJO_TOKEN: &'static str = "FORGEJO_TOKEN";

    // CI systems (read to find the forge and its API).

    /// GitHub Actions: the API base URL.
    pub const GITHUB_API_URL: &'static str = "GITHUB_API_URL";

    /// GitHub Actions: the server URL.
    pub const GITHUB_SERVER_URL: &'static str = "GITHUB_SERVER_URL";

    /// GitHub Actions: who triggered the run.
    pub const GITHUB_ACTOR: &'static str = "GITHUB_ACTOR";

    /// GitHub Actions: the step summary file the report is appended to.
    pub const GITHUB_STEP_SUMMARY: &'static str = "GITHUB_STEP_SUMMARY";

    /// GitHub Actions: the step outputs file.
    pub const GITHUB_OUTPUT: &'static str = "GITHUB_OUTPUT";

    /// GitLab CI: the server URL.
    pub const CI_SERVER_URL: &'static str = "CI_SERVER_URL";

    /// GitLab CI: the API base URL.
    pub const CI_API_V4_URL: &'static str = "CI_API_V4_URL";

    /// GitLab CI: the job token.
    pub const CI_JOB_TOKEN: &'static str = "CI_JOB_TOKEN";

    /// Gitea/Forgejo Actions: set inside a run.
    pub const GITEA_ACTIONS: &'static str = "GITEA_ACTIONS";

    // Registry credentials (docs/registries.md).

    /// Docker's configuration directory (`config.json`).
    pub const DOCKER_CONFIG: &'static str = "DOCKER_CONFIG";

    /// Home directory: `~/.docker/config.json`, `~/.aws/credentials`.
    pub const HOME: &'static str = "HOME";

    /// AWS access key (ECR).
    pub const AWS_ACCESS_KEY_ID: &'static str = "AWS_ACCESS_KEY_ID";

    /// AWS secret key (ECR).
    pub const AWS_SECRET_ACCESS_KEY: &'static str = "AWS_SECRET_ACCESS_KEY";

    /// AWS session token (ECR).
    pub const AWS_SESSION_TOKEN: &'static str = "AWS_SESSION_TOKEN";

    /// AWS shared-credentials profile.
    pub const AWS_PROFILE: &'static str = "AWS_PROFILE";

    /// AWS shared-credentials file.
    pub const AWS_SHARED_CREDENTIALS_FILE: &'static str = "AWS_SHARED_CREDENTIALS_FILE";

    /// AWS region.
    pub const AWS_REGION: &'static str = "AWS_REGION";

    /// AWS region, when `AWS_REGION` is unset.
    pub const AWS_DEFAULT_REGION: &'static str = "AWS_DEFAULT_REGION";

    /// Web-identity role (EKS IRSA).
    pub const AWS_ROLE_ARN: &'static str = "AWS_ROLE_ARN";

    /// Web-identity session name.
    pub const AWS_ROLE_SESSION_NAME: &'static str = "AWS_ROLE_SESSION_NAME";

    /// Web-identity token file (EKS IRSA).
    pub const AWS_WEB_IDENTITY_TOKEN_FILE: &'static str = "AWS_WEB_IDENTITY_TOKEN_FILE";

    /// Container credentials endpoint (EKS Pod Identity, ECS).
    pub const AWS_CONTAINER_CREDENTIALS_FULL_URI: &'static str =
        "AWS_CONTAINER_CREDENTIALS_FULL_URI";

    /// ECS task credentials path.
    pub const AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: &'static str =
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI";

    /// Container credentials authorization token.
    pub const AWS_CONTAINER_AUTHORIZATION_TOKEN: &'static str = "AWS_CONTAINER_AUTHORIZATION_TOKEN";

    /// Container credentials authorization token file.
    pub const AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: &'static str =
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE";

    /// Set to `true` to never ask the EC2 metadata service.
    pub const AWS_EC2_METADATA_DISABLED: &'static str = "AWS_EC2_METADATA_DISABLED";

    /// EC2 metadata service endpoint.
    pub const AWS_EC2_METADATA_SERVICE_ENDPOINT: &'static str = "AWS_EC2_METADATA_SERVICE_ENDPOINT";

    /// EC2 metadata service endpoint mode (IPv4/IPv6).
    pub const AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE: &'static str =
        "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE";

    /// AWS endpoint for every service.
    pub const AWS_ENDPOINT_URL: &'static str = "AWS_ENDPOINT_URL";

    /// ECR endpoint.
    pub const AWS_ENDPOINT_URL_ECR: &'static str = "AWS_ENDPOINT_URL_ECR";

    /// STS endpoint.
    pub const AWS_ENDPOINT_URL_STS: &'static str = "AWS_ENDPOINT_URL_STS";

    /// GCP key file or ADC (Artifact Registry, GCR).
    pub const GOOGLE_APPLICATION_CREDENTIALS: &'static str = "GOOGLE_APPLICATION_CREDENTIALS";

    /// GCP metadata server host.
    pub const GCE_METADATA_HOST: &'static str = "GCE_METADATA_HOST";

    /// Entra ID client (ACR).
    pub const AZURE_CLIENT_ID: &'static str = "AZURE_CLIENT_ID";

    /// Entra ID tenant (ACR).
    pub const AZURE_TENANT_ID: &'static str = "AZURE_TENANT_ID";

    /// Entra ID client secret (ACR).
    pub const AZURE_CLIENT_SECRET: &'static str = "AZURE_CLIENT_SECRET";

    /// Workload-identity token file (AKS).
    pub const AZURE_FEDERATED_TOKEN_FILE: &'static str = "AZURE_FEDERATED_TOKEN_FILE";

    /// Entra ID authority host.
    pub const AZURE_AUTHORITY_HOST: &'static str = "AZURE_AUTHORITY_HOST";

    /// Azure instance metadata endpoint (tests and special networks).
    pub const IMAGEBUMP_AZURE_IMDS_ENDPOINT: &'static str = "IMAGEBUMP_AZURE_IMDS_ENDPOINT";

    /// The forge and git tokens: what can push to the manifest repository and open or
    /// merge its pull requests. A credentials helper (`ext:`) runs without them: it logs in
    /// to a registry and has no use for them.
    pub const FORGE_TOKENS: [&'static str; 8] = [
        Self::IMAGEBUMP_FORGE_TOKEN,
        Self::IMAGEBUMP_GIT_TOKEN,
        Self::GITHUB_TOKEN,
        Self::GITLAB_TOKEN,
        Self::GITLAB_OAUTH_TOKEN,
        Self::GITEA_TOKEN,
        Self::FORGEJO_TOKEN,
        Self::CI_JOB_TOKEN,
    ];

    /// The variables whose values are secrets: held by the redactor from the start of a
    /// run, so that no error or log line quotes them, whoever printed them.
    pub const SECRETS: [&'static str; 12] = [
        Self::IMAGEBUMP_FORGE_TOKEN,
        Self::IMAGEBUMP_GIT_TOKEN,
        Self::GITHUB_TOKEN,
        Self::GITLAB_TOKEN,
        Self::GITLAB_OAUTH_TOKEN,
        Self::GITEA_TOKEN,
        Self::FORGEJO_TOKEN,
        Self::CI_JOB_TOKEN,
        Self::AWS_SECRET_ACCESS_KEY,
        Self::AWS_SESSION_TOKEN,
        Self::AWS_CONTAINER_AUTHORIZATION_TOKEN,
        Self::AZURE_CLIENT_SECRET,
    ];

    /// For tests only: "now" for promotion soak times and the start a `schedule` or
    /// `freeze` judges, an RFC 3339 time such as `2026-11-23T11:00:00Z` (docs/promotion.md,
    /// docs/configuration.md). Never set it in production.
    pub const IMAGEBUMP_TEST_NOW: &'static str = "IMAGEBUMP_TEST_NOW";

    // Reproducible output.

    /// Seconds since the epoch to write as the `generated` time of a `Chart.lock` imagebump
    /// updates, instead of the current time (the reproducible-builds convention).
    pub const SOURCE_DATE_EPOCH: &'static str = "SOURCE_DATE_EPOCH";
}

// The one place imagebump reads the process environment (clippy.toml's `disallowed-methods`
// holds every other module to it), so that what a run reads is what this list says.
#[allow(clippy::disallowed_methods)]
impl EnvVars {
    /// The variable's value, when it is set and valid Unicode.
    pub fn get(name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    /// The variable's value as the operating system holds it, when it is set.
    pub fn get_os(name: &str) -> Option<std::ffi::OsString> {
        std::env::var_os(name)
    }

    /// Every variable of the process whose name and value are valid Unicode: for sources
    /// that read the environment as a whole (a credentials helper's `$VAR` expansion).
    pub fn all() -> impl Iterator<Item = (String, String)> {
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
    }
}
