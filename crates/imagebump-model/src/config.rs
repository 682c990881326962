//! The schema of `imagebump.yaml` (strict: unknown keys are errors). Loading and
//! validation with file and line live in the `imagebump` package (`config/`).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::duration::DurationError;

pub use crate::policy::{ImageRule, PolicySpec};

/// Where imagebump looks for its configuration in the manifest tree, in this order.
pub const CONFIG_NAMES: [&str; 3] = [
    "imagebump.yaml",
    ".imagebump.yaml",
    ".github/imagebump.yaml",
];

/// imagebump's configuration, `imagebump.yaml` at the root of the manifest repository.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "imagebump.yaml")]
pub struct Config {
    /// The policy for every image no `images` rule matches, and the base the rules extend.
    #[serde(default)]
    pub defaults: PolicySpec,
    /// Per-image policies, matched by repository glob; the first match wins.
    #[serde(default)]
    pub images: Vec<ImageRule>,
    /// Which files are scanned.
    #[serde(default)]
    pub scan: ScanConfig,
    /// Per-registry endpoints, TLS and credentials.
    #[serde(default)]
    pub registries: Vec<RegistryConfig>,
    /// How Argo CD Applications kept in the repository are read.
    #[serde(default)]
    pub argocd: ArgoCdConfig,
    /// How Helm values are read.
    #[serde(default)]
    pub helm: HelmConfig,
    /// How changes become pull requests.
    #[serde(default)]
    pub pull_requests: PullRequestsConfig,
    /// Credentials that repository content may refer to by name (argocd-image-updater pull
    /// secrets). Operator's configuration only.
    #[serde(default, skip_serializing_if = "CredentialsConfig::is_empty")]
    pub credentials: CredentialsConfig,
    /// Sign imagebump's commits with git's own signing (for branches that require signed
    /// commits). Operator's configuration only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing: Option<Signing>,
    /// Where a run reports what it changed and what failed: generic webhooks and Slack
    /// incoming webhooks (docs/configuration.md, "notify"). Operator's configuration only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notify: Vec<NotifyTarget>,
}

/// The operator's answers to the credentials a repository names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CredentialsConfig {
    /// argocd-image-updater pull secrets, keyed by the exact value of the `pull-secret`
    /// annotation or the `ImageUpdater`'s `pullSecret` (`pullsecret:argocd/regcred`,
    /// `secret:argocd/creds#token`, `env:REGCRED`, `ext:/scripts/ecr-login.sh`). A name
    /// the map does not hold is ignored with a note; the value a repository writes is only
    /// ever a key into this map, never a source itself.
    #[serde(default)]
    pub pull_secrets: std::collections::BTreeMap<String, PullSecret>,
}

impl CredentialsConfig {
    pub fn is_empty(&self) -> bool {
        self.pull_secrets.is_empty()
    }
}

/// What a pull secret's name stands for, and the registries it may be sent to.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PullSecret {
    /// The credentials source, as in `registries[].credentials` (`file:/secrets/regcred`,
    /// `env:VAR`, `ext:PATH`, ...).
    pub secret: String,
    /// The registry hosts (as written in image names: `ghcr.io`,
    /// `registry.example.com:5000`) this secret goes to. An image on any other host is
    /// read without it, with a note: the repository chooses which image names the secret,
    /// so the operator chooses where it may go. At least one.
    pub registries: Vec<String>,
}

impl PullSecret {
    /// May the secret go to the registry `host` (compared without case)?
    pub fn allows(&self, host: &str) -> bool {
        self.registries.iter().any(|r| r.eq_ignore_ascii_case(host))
    }
}

/// One receiver of a run's notifications: a generic `webhook` or a Slack incoming webhook
/// (exactly one of the two).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NotifyTarget {
    /// A URL receiving the documented JSON body (version 1) by POST, or `env:VAR` naming
    /// the variable that holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// A Slack incoming webhook URL, or (better, it is a secret) `env:VAR`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<String>,
    /// `webhook` only: the HMAC-SHA256 key of the body's signature
    /// (`X-Imagebump-Signature: sha256=<hex>`), as `env:VAR` or `file:PATH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// The events sent (default: all of them).
    #[serde(default = "NotifyEvent::all")]
    pub on: Vec<NotifyEvent>,
}

/// What a notification tells.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum NotifyEvent {
    /// A pull request was opened.
    Opened,
    /// An open pull request was brought to newer versions.
    Updated,
    /// A pull request was closed because the base already has its versions.
    Closed,
    /// Updates were committed straight to the base branch (`--push`, `delivery: push`).
    Pushed,
    /// The run failed: errors, or it could not run at all.
    Failed,
}

impl NotifyEvent {
    pub const ALL: [NotifyEvent; 5] = [
        NotifyEvent::Opened,
        NotifyEvent::Updated,
        NotifyEvent::Closed,
        NotifyEvent::Pushed,
        NotifyEvent::Failed,
    ];

    pub fn all() -> Vec<NotifyEvent> {
        NotifyEvent::ALL.to_vec()
    }

    /// The name as written in `on:` and in the webhook body.
    pub fn name(self) -> &'static str {
        match self {
            NotifyEvent::Opened => "opened",
            NotifyEvent::Updated => "updated",
            NotifyEvent::Closed => "closed",
            NotifyEvent::Pushed => "pushed",
            NotifyEvent::Failed => "failed",
        }
    }
}

/// How imagebump's commits are signed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Signing {
    /// `ssh` (default): `key` is the path of an SSH private key without a passphrase (a
    /// mounted Secret), signed with `ssh-keygen -Y sign`. `openpgp`: `key` is a key id or
    /// fingerprint in the GnuPG keyring of the environment (`GNUPGHOME`), signed with `gpg`.
    /// `github`: no key; pull-request commits are created by GitHub through its API
    /// (GraphQL `createCommitOnBranch`), which signs them: verified commits for a GitHub App.
    #[serde(default)]
    pub format: SigningFormat,
    #[serde(default)]
    pub key: String,
}

impl Signing {
    /// Whether commits are created by the forge's API instead of git.
    pub fn by_api(&self) -> bool {
        self.format == SigningFormat::Github
    }
}

/// Git's signature formats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SigningFormat {
    #[default]
    Ssh,
    Openpgp,
    Github,
}

/// How updates are grouped into change sets (one branch and pull request each).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GroupBy {
    /// One per Argo CD app; outside apps, per kustomization directory or values file.
    #[default]
    App,
    /// One per directory of the changed file.
    Directory,
    /// One per image repository.
    Image,
    /// One for everything.
    All,
}

/// Pull-request settings.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PullRequestsConfig {
    #[serde(default)]
    pub group_by: GroupBy,
    /// Branch names are this prefix plus the group's slug.
    #[serde(default = "default_branch_prefix")]
    pub branch_prefix: String,
    /// Labels added to new pull requests.
    #[serde(default)]
    pub labels: Vec<String>,
    /// Reviewers requested on new pull requests (user logins, or `org/team`).
    #[serde(default)]
    pub reviewers: Vec<String>,
    /// Assignees of new pull requests.
    #[serde(default)]
    pub assignees: Vec<String>,
    /// Open new pull requests as drafts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub draft: bool,
    /// New pull requests per run at most (existing ones are always kept current).
    pub max_new: Option<usize>,
    /// Title template: `{group}`, `{image}`, `{from}`, `{to}`, `{count}`.
    pub title: Option<String>,
    /// Major updates (the semver major differs; for a `0.x` version, the minor) get a change
    /// set, branch and pull request of their own, apart from the minor and patch updates of
    /// their group (default true). `false`: grouped with the rest.
    #[serde(default = "default_true")]
    pub separate_major: bool,
    /// Labels added to the pull requests of major updates, besides `labels` (default
    /// `[major]`; `[]` adds none).
    #[serde(default = "default_major_labels")]
    pub major_labels: Vec<String>,
    /// Commit author and committer.
    #[serde(default)]
    pub author: Author,
    /// `--push`: `one` commit for all updates, or one `per-change-set`.
    #[serde(default)]
    pub push_commits: PushCommits,
    /// How the forge merges a pull request with `automerge: true`: `merge` (default),
    /// `squash` or `rebase` (GitLab: `rebase` follows the project's merge method).
    #[serde(default)]
    pub merge_method: MergeMethod,
    /// The dashboard issue: `true`, or a block of options (docs/pull-requests.md,
    /// "Dashboard"). Off unless set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dashboard: Option<Dashboard>,
}

/// `pullRequests.dashboard`: `true` (or `false`), or its options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Dashboard {
    On(bool),
    Options(DashboardOptions),
}

// By hand rather than untagged: a mistake in the block is named (`unknown field`), not
// "did not match any variant".
impl<'de> Deserialize<'de> for Dashboard {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Dashboard;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "true, false, or a block with title, approveMajors and trustIssueWriters",
                )
            }
            fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<Dashboard, E> {
                Ok(Dashboard::On(on))
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                map: M,
            ) -> Result<Dashboard, M::Error> {
                let de = serde::de::value::MapAccessDeserializer::new(map);
                DashboardOptions::deserialize(de).map(Dashboard::Options)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// The dashboard's options.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DashboardOptions {
    /// The issue's title (the issue is found by its author and a hidden marker, never by
    /// its title).
    #[serde(default = "default_dashboard_title")]
    pub title: String,
    /// Hold every update to a new major version until its box on the dashboard is ticked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approve_majors: bool,
    /// Gitea and Forgejo only: honour the boxes although the forge does not say who ticked
    /// them, so that anyone who may edit issues (a team with Issues: Write but Code: Read
    /// too) steers the run. Off: the boxes are ignored there. Only the operator's
    /// configuration may set it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trust_issue_writers: bool,
}

fn default_dashboard_title() -> String {
    "imagebump dashboard".to_string()
}

impl Default for DashboardOptions {
    fn default() -> Self {
        DashboardOptions {
            title: default_dashboard_title(),
            approve_majors: false,
            trust_issue_writers: false,
        }
    }
}

impl PullRequestsConfig {
    /// The dashboard's options when it is on.
    pub fn dashboard(&self) -> Option<DashboardOptions> {
        match &self.dashboard {
            Some(Dashboard::On(true)) => Some(DashboardOptions::default()),
            Some(Dashboard::Options(options)) => Some(options.clone()),
            Some(Dashboard::On(false)) | None => None,
        }
    }
}

/// How an auto-merged pull request is merged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MergeMethod {
    #[default]
    Merge,
    Squash,
    Rebase,
}

/// How `--push` commits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PushCommits {
    #[default]
    One,
    PerChangeSet,
}

impl Default for PullRequestsConfig {
    fn default() -> Self {
        PullRequestsConfig {
            group_by: GroupBy::default(),
            branch_prefix: default_branch_prefix(),
            labels: Vec::new(),
            reviewers: Vec::new(),
            assignees: Vec::new(),
            draft: false,
            max_new: None,
            title: None,
            separate_major: true,
            major_labels: default_major_labels(),
            author: Author::default(),
            push_commits: PushCommits::default(),
            merge_method: MergeMethod::default(),
            dashboard: None,
        }
    }
}

fn default_true() -> bool {
    true
}

fn default_major_labels() -> Vec<String> {
    vec!["major".to_string()]
}

/// Who imagebump's commits are by.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Author {
    pub name: String,
    pub email: String,
}

impl Default for Author {
    fn default() -> Self {
        Author {
            name: "imagebump".into(),
            email: "imagebump@users.noreply.github.com".into(),
        }
    }
}

fn default_branch_prefix() -> String {
    "imagebump/".into()
}

/// Argo CD settings.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ArgoCdConfig {
    /// Argo CD's control-plane namespace: Applications outside it get override files named
    /// `.argocd-source-<namespace>_<name>.yaml` (apps in any namespace).
    #[serde(default = "default_argocd_namespace")]
    pub namespace: String,
}

impl Default for ArgoCdConfig {
    fn default() -> Self {
        ArgoCdConfig {
            namespace: default_argocd_namespace(),
        }
    }
}

fn default_argocd_namespace() -> String {
    "argocd".into()
}

/// Helm values settings (values files, and Argo CD `helm.valuesObject` and `helm.values`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HelmConfig {
    /// Images at keys imagebump does not find by their name, as Helm key paths from the
    /// root of the values (`proxy.container`, `sidecars[0].image`). Keys whose name ends in
    /// `image` (`image`, `sysctlImage`, `bootstrap_image`) are found without this.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_keys: Vec<HelmImageKey>,
    /// Keep Helm chart versions current too (Argo CD `targetRevision`, `Chart.yaml`
    /// dependencies, kustomize `helmCharts`, Flux `HelmRelease`), and read the images of
    /// chart-only Argo CD apps from the chart's default values. On unless set to `false`:
    /// it asks the chart repositories the manifests name; turn it off where they cannot be
    /// reached (air-gapped). `false` in the operator's configuration holds, whatever the
    /// repository's says.
    #[serde(default = "on", skip_serializing_if = "is_on")]
    pub charts: bool,
}

impl Default for HelmConfig {
    fn default() -> Self {
        HelmConfig {
            image_keys: Vec::new(),
            charts: true,
        }
    }
}

fn on() -> bool {
    true
}

fn is_on(b: &bool) -> bool {
    *b
}

/// Where one image is in a chart's values.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(
    untagged,
    deny_unknown_fields,
    rename_all = "camelCase",
    expecting = "an image key: {image: PATH}, or {repository: PATH, tag: PATH} with optional registry and digest paths, each PATH keys separated by `.` with `key[N]` for a list item"
)]
pub enum HelmImageKey {
    /// A key holding a whole image: a `{registry, repository, tag, digest}` mapping or a
    /// `repo:tag` string.
    Image {
        /// The key's path (`proxy.container`).
        image: HelmKeyPath,
    },
    /// An image spread over keys of any name; it applies where `repository` holds a string
    /// and `tag` exists.
    Parts {
        /// The path of the repository, with or without its registry (`proxy.image.repo`).
        repository: HelmKeyPath,
        /// The path of the tag (`proxy.image.version`), the value imagebump rewrites.
        tag: HelmKeyPath,
        /// The path of the registry, when the chart keeps it apart.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        registry: Option<HelmKeyPath>,
        /// The path of the digest (`sha256:…`), rewritten with the tag when it is set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        digest: Option<HelmKeyPath>,
    },
}

/// A Helm key path from the root of the values: keys separated by `.`, a list item as
/// `key[N]` (`sidecars[0].image`), as `helm --set` and argocd-image-updater write them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize, Serialize, JsonSchema)]
#[serde(try_from = "String", into = "String")]
#[schemars(with = "String")]
pub struct HelmKeyPath(String);

impl HelmKeyPath {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why a text is not a [`HelmKeyPath`]; each variant holds the path as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HelmKeyPathError {
    #[error("{path:?}: an empty key")]
    EmptyKey { path: String },
    #[error("{path:?}: the index in {part:?} is not a number")]
    BadIndex { path: String, part: String },
}

impl TryFrom<String> for HelmKeyPath {
    type Error = HelmKeyPathError;

    fn try_from(path: String) -> Result<Self, HelmKeyPathError> {
        for part in path.split('.') {
            let (key, index) = match part.strip_suffix(']').and_then(|p| p.rsplit_once('[')) {
                Some((key, index)) => (key, Some(index)),
                None => (part, None),
            };
            if key.is_empty() {
                return Err(HelmKeyPathError::EmptyKey { path });
            }
            if index.is_some_and(|i| i.is_empty() || !i.bytes().all(|b| b.is_ascii_digit())) {
                let part = part.to_string();
                return Err(HelmKeyPathError::BadIndex { path, part });
            }
        }
        Ok(HelmKeyPath(path))
    }
}

impl From<HelmKeyPath> for String {
    fn from(p: HelmKeyPath) -> String {
        p.0
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScanConfig {
    /// Globs (relative to the root) a file must match to be scanned; empty = everything.
    #[serde(default)]
    pub include: Vec<String>,
    /// Globs of files never scanned.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Globs of Helm values files.
    #[serde(default = "default_helm_values")]
    pub helm_values: Vec<String>,
    /// Image fields of custom resources, in kustomize's field-spec shape:
    /// `{kind: Workflow, group: argoproj.io, path: spec/templates[]/container/image}`.
    /// Every `image:` key of a manifest is found without this; use it for fields with
    /// another name.
    #[serde(default)]
    pub image_fields: Vec<ImageField>,
    /// Where the new version of an image in a kustomize base shared by several overlays
    /// goes: `per-overlay` (an `images:` entry in each overlay, so environments move
    /// independently) or `in-place` (the base itself, every overlay at once).
    #[serde(default)]
    pub shared_bases: SharedBases,
    /// Edit files that say they are generated (`# Code generated by gen. DO NOT EDIT.`,
    /// a `DO NOT EDIT` comment near the top). By default their images are listed as
    /// unmanaged: the next generation would undo the edit.
    #[serde(default)]
    pub edit_generated: bool,
}

impl Default for ScanConfig {
    fn default() -> Self {
        ScanConfig {
            include: Vec::new(),
            exclude: Vec::new(),
            helm_values: default_helm_values(),
            image_fields: Vec::new(),
            shared_bases: SharedBases::default(),
            edit_generated: false,
        }
    }
}

/// A field of a resource kind that holds an image reference (`name:tag`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageField {
    /// The resource `kind`.
    pub kind: String,
    /// The API group (`argoproj.io`); any group when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// `/`-separated keys from the document root; `[]` after a key walks every list item:
    /// `spec/steps[]/image`.
    pub path: String,
}

/// See [`ScanConfig::shared_bases`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SharedBases {
    #[default]
    PerOverlay,
    InPlace,
}

fn default_helm_values() -> Vec<String> {
    vec!["**/values*.yaml".into(), "**/values*.yml".into()]
}

/// Settings for the registries whose normalised names (`host/repository`) start with `prefix`.
/// The first matching entry wins.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RegistryConfig {
    pub prefix: String,
    /// Endpoint to use instead of `https://<host>`, e.g. a mirror or `http://127.0.0.1:5000`:
    /// `http://` or `https://`, a host and an optional port, nothing else (no path or query).
    pub url: Option<String>,
    /// PEM file with extra CA certificates (relative paths are relative to the config file).
    pub ca_file: Option<PathBuf>,
    /// Accept any TLS certificate. For test set-ups only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
    /// Where credentials come from: `env:VAR` (`user:password`), `file:PATH` (the same,
    /// or a Docker config JSON such as a mounted `.dockerconfigjson`), `dockerconfig`,
    /// `ext:PATH` (a program printing `user:password`), `ecr[:REGION]`, `gcp[:KEYFILE]`,
    /// `acr`, `github` (`GITHUB_TOKEN`) or `anonymous`. Default: Docker's configuration if
    /// it has the host, else what the environment offers for the host's cloud
    /// (docs/registries.md), else anonymous.
    pub credentials: Option<String>,
    /// Ask the credentials source again after this long (e.g. `10h`), for sources that do
    /// not say when their answer expires (`ext:`, `file:`).
    pub credentials_expire: Option<String>,
    /// How long an `ext:` program may run (default `30s`).
    pub credentials_timeout: Option<String>,
    /// Concurrent requests to this registry (default 8).
    pub concurrency: Option<usize>,
    /// Requests per second to this registry at most (e.g. `20`, or `0.5`).
    pub rate_limit: Option<f64>,
}

impl RegistryConfig {
    pub fn credentials_expire(&self) -> Result<Option<std::time::Duration>, DurationError> {
        duration(self.credentials_expire.as_deref())
    }

    pub fn credentials_timeout(&self) -> Result<Option<std::time::Duration>, DurationError> {
        duration(self.credentials_timeout.as_deref())
    }
}

/// The longest `credentialsExpire` or `credentialsTimeout`: longer is a mistake, and
/// far longer would overflow a clock.
pub const MAX_SETTING_DURATION: std::time::Duration = std::time::Duration::from_secs(366 * 86_400);

fn duration(text: Option<&str>) -> Result<Option<std::time::Duration>, DurationError> {
    let d = text
        .map(crate::duration::parse_age)
        .transpose()?
        .filter(|d| !d.is_zero());
    match d {
        Some(d) if d > MAX_SETTING_DURATION => Err(DurationError::OverAYear(
            text.unwrap_or_default().to_string(),
        )),
        d => Ok(d),
    }
}

/// The slowest and fastest `rateLimit` (requests per second).
pub const RATE_LIMIT_RANGE: std::ops::RangeInclusive<f64> = 0.1..=100_000.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dashboard_on_off_or_options() {
        let read = |json: &str| serde_json::from_str::<PullRequestsConfig>(json);
        let on = |json: &str| read(json).unwrap().dashboard();
        assert_eq!(on("{}"), None);
        assert_eq!(on(r#"{"dashboard": false}"#), None);
        assert_eq!(
            on(r#"{"dashboard": true}"#),
            Some(DashboardOptions::default())
        );
        let options = on(r#"{"dashboard": {"title": "Deps", "approveMajors": true}}"#).unwrap();
        assert_eq!(
            (options.title.as_str(), options.approve_majors),
            ("Deps", true)
        );
        let e = read(r#"{"dashboard": {"titel": "x"}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `titel`"), "{e}");
    }

    #[test]
    fn helm_key_paths() {
        for ok in ["image", "proxy.image.repo", "sidecars[0].image", "a[12]"] {
            assert!(HelmKeyPath::try_from(ok.to_string()).is_ok(), "{ok}");
        }
        for bad in ["", "a..b", "a.", "[0].b", "a[x]", "a[]", "a[-1]"] {
            assert!(HelmKeyPath::try_from(bad.to_string()).is_err(), "{bad}");
        }
        let message = |p: &str| {
            HelmKeyPath::try_from(p.to_string())
                .map(|_| ())
                .unwrap_err()
        };
        assert_eq!(message("a..b").to_string(), r#""a..b": an empty key"#);
        assert_eq!(
            message("a[x]").to_string(),
            r#""a[x]": the index in "a[x]" is not a number"#
        );
    }

    #[test]
    fn setting_durations_over_a_year_are_refused() {
        let d = |t: &str| duration(Some(t)).map_err(|e| e.to_string());
        assert_eq!(
            d("366d"),
            Ok(Some(std::time::Duration::from_secs(366 * 86_400)))
        );
        assert_eq!(d("367d"), Err("367d is longer than a year".to_string()));
        assert_eq!(d("0"), Ok(None));
        assert!(d("1y").is_err());
    }
}
