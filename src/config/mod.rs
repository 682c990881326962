//! `imagebump.yaml`: strict schema, discovery of the file, and errors with file and line.

pub mod policy;

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use imagebump_yaml::PathSeg;
pub use policy::{ImageRule, PolicySpec};

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
    /// How changes become pull requests.
    #[serde(default)]
    pub pull_requests: PullRequestsConfig,
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
    /// Commit author and committer.
    #[serde(default)]
    pub author: Author,
    /// `--push`: `one` commit for all updates, or one `per-change-set`.
    #[serde(default)]
    pub push_commits: PushCommits,
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
            author: Author::default(),
            push_commits: PushCommits::default(),
        }
    }
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
}

impl Default for ScanConfig {
    fn default() -> Self {
        ScanConfig {
            include: Vec::new(),
            exclude: Vec::new(),
            helm_values: default_helm_values(),
        }
    }
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
    /// Endpoint to use instead of `https://<host>`, e.g. a mirror or `http://127.0.0.1:5000`.
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
    pub fn credentials_expire(&self) -> Result<Option<std::time::Duration>, String> {
        duration(self.credentials_expire.as_deref())
    }

    pub fn credentials_timeout(&self) -> Result<Option<std::time::Duration>, String> {
        duration(self.credentials_timeout.as_deref())
    }
}

fn duration(text: Option<&str>) -> Result<Option<std::time::Duration>, String> {
    text.map(crate::policy::filters::parse_age)
        .transpose()
        .map(|d| d.filter(|d| !d.is_zero()))
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}{}: {message}{}",
        if *line > 0 { format!(":{line}:{column}") } else { String::new() },
        hint.as_ref().map(|h| format!(" (hint: {h})")).unwrap_or_default())]
    Invalid {
        path: String,
        line: usize,
        column: usize,
        message: String,
        hint: Option<String>,
    },
}

/// A setting that parsed but does not make sense: where it is and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub at: Vec<PathSeg>,
    pub message: String,
    pub hint: Option<String>,
}

fn key(k: &str) -> PathSeg {
    PathSeg::Key(k.into())
}

impl Config {
    /// Checks serde cannot do: globs, regular expressions, constraints, platforms and
    /// durations compile. Also returns warnings (settings that work but likely surprise).
    pub fn validate(&self) -> (Vec<Invalid>, Vec<String>) {
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        let s = &self.scan;
        for (name, globs) in [
            ("include", &s.include),
            ("exclude", &s.exclude),
            ("helmValues", &s.helm_values),
        ] {
            for (i, g) in globs.iter().enumerate() {
                if let Err(e) = globset::Glob::new(g) {
                    errors.push(Invalid {
                        at: vec![key("scan"), key(name), PathSeg::Index(i)],
                        message: format!("bad glob {g:?}: {e}"),
                        hint: Some(
                            "globs relative to the root, such as apps/** or **/values*.yaml".into(),
                        ),
                    });
                }
            }
        }
        let defaults_error =
            crate::policy::Policy::compile(self.defaults.clone(), Default::default())
                .err()
                .map(|e| e.key);
        let mut check = |at: Vec<PathSeg>, spec: PolicySpec, is_rule: bool| -> Option<Invalid> {
            match crate::policy::Policy::compile(spec, Default::default()) {
                Ok(p) => {
                    warnings.extend(
                        p.warnings
                            .iter()
                            .map(|w| format!("{}: {w}", imagebump_yaml::path_to_string(&at))),
                    );
                    None
                }
                // A rule inheriting a broken key from `defaults` is reported there, once.
                Err(e) if is_rule && defaults_error == Some(e.key) => None,
                Err(e) => {
                    let mut at = at;
                    at.push(key(e.key));
                    Some(Invalid {
                        at,
                        message: e.message,
                        hint: e.hint,
                    })
                }
            }
        };
        errors.extend(check(vec![key("defaults")], self.defaults.clone(), false));
        if self.defaults.credentials.is_some() {
            errors.push(Invalid {
                at: vec![key("defaults"), key("credentials")],
                message: "credentials are set per registry or per image, not for every image"
                    .into(),
                hint: Some("use registries[].credentials, or credentials in an images rule".into()),
            });
        }
        for (i, rule) in self.images.iter().enumerate() {
            let at = vec![key("images"), PathSeg::Index(i)];
            if let Err(e) = crate::policy::rules::rule_glob(&rule.glob) {
                let mut at = at.clone();
                at.push(key("match"));
                errors.push(Invalid {
                    at,
                    message: e,
                    hint: Some("globs such as ghcr.io/acme/* or **/nginx".into()),
                });
            }
            errors.extend(check(at, self.defaults.overlay(&rule.policy()), true));
        }
        for (i, r) in self.registries.iter().enumerate() {
            let at = |k: &str| vec![key("registries"), PathSeg::Index(i), key(k)];
            let mut bad = |k: &str, message: String, hint: &str| {
                errors.push(Invalid {
                    at: at(k),
                    message,
                    hint: Some(hint.into()),
                })
            };
            if let Some(spec) = &r.credentials {
                if let Err(e) = crate::registry::credentials::Source::parse(spec) {
                    bad("credentials", e, "see docs/registries.md");
                }
            }
            if let Err(e) = r.credentials_expire() {
                bad("credentialsExpire", e, "e.g. 10h, 30m");
            }
            if let Err(e) = r.credentials_timeout() {
                bad("credentialsTimeout", e, "e.g. 10s, 1m");
            }
            if r.rate_limit.is_some_and(|l| !(l.is_finite() && l > 0.0)) {
                bad(
                    "rateLimit",
                    "must be a positive number of requests per second".into(),
                    "e.g. 20, or 0.5 for one request every two seconds",
                );
            }
            if r.concurrency == Some(0) {
                bad("concurrency", "must be at least 1".into(), "e.g. 4");
            }
            if r.credentials_expire.is_some()
                && r.credentials
                    .as_deref()
                    .is_some_and(|c| !(c.starts_with("ext:") || c.starts_with("file:")))
            {
                warnings.push(format!(
                    "registries[{i}].credentialsExpire: only ext: and file: sources are asked again on a timer; the others say when their answer expires"
                ));
            }
        }
        (errors, warnings)
    }
}

/// The configuration file to use: `explicit`, else the first of [`CONFIG_NAMES`] in `root`.
pub fn locate(explicit: Option<&Path>, root: &Path) -> Option<PathBuf> {
    explicit.map(Path::to_path_buf).or_else(|| {
        CONFIG_NAMES
            .iter()
            .map(|n| root.join(n))
            .find(|p| p.is_file())
    })
}

/// Read, parse and validate the configuration at `path`. Warnings are logged.
pub fn load(path: &Path) -> Result<Config, Error> {
    let display = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: display.clone(),
        source,
    })?;
    let mut config = parse(&text).map_err(|(line, column, message)| Error::Invalid {
        path: display.clone(),
        line,
        column,
        message,
        hint: Some("see docs/configuration.md for every key".into()),
    })?;
    let (errors, warnings) = config.validate();
    for w in warnings {
        tracing::warn!("{}: {w}", path.display());
    }
    if let Some(first) = errors.into_iter().next() {
        let (line, column) = locate_path(&text, &first.at);
        return Err(Error::Invalid {
            path: display,
            line,
            column,
            message: format!(
                "{}: {}",
                imagebump_yaml::path_to_string(&first.at),
                first.message
            ),
            hint: first.hint,
        });
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let relative = |spec: &mut Option<String>| {
        if let Some(source) = spec
            .as_deref()
            .and_then(|s| crate::registry::credentials::Source::parse(s).ok())
        {
            *spec = Some(source.relative_to(base).describe());
        }
    };
    for r in &mut config.registries {
        if let Some(ca) = &r.ca_file {
            if ca.is_relative() {
                r.ca_file = Some(base.join(ca));
            }
        }
        relative(&mut r.credentials);
    }
    for rule in &mut config.images {
        relative(&mut rule.credentials);
    }
    relative(&mut config.defaults.credentials);
    Ok(config)
}

/// Line and column of the value at `at` in `text` (of its nearest existing parent).
fn locate_path(text: &str, at: &[PathSeg]) -> (usize, usize) {
    let Ok(docs) = imagebump_yaml::parse_located(text) else {
        return (0, 0);
    };
    let Some(mut node) = docs.first().and_then(|d| d.root.as_ref()) else {
        return (0, 0);
    };
    for seg in at {
        let next = match (seg, node) {
            (PathSeg::Key(k), n) => n.get(k),
            (PathSeg::Index(i), imagebump_yaml::Node::Seq { items, .. }) => items.get(*i),
            _ => None,
        };
        match next {
            Some(n) => node = n,
            None => break,
        }
    }
    imagebump_yaml::LineIndex::new(text).line_col(node.offset())
}

pub fn parse(text: &str) -> Result<Config, (usize, usize, String)> {
    if text.trim().is_empty() {
        return Ok(Config::default());
    }
    yaml_serde::from_str(text).map_err(|e| {
        let p = imagebump_yaml::ParseError::from_serde(&e);
        (p.line, p.column, p.message)
    })
}

/// The JSON Schema of `imagebump.yaml`, as committed at docs/imagebump.schema.json.
pub fn schema() -> String {
    let schema = schemars::schema_for!(Config);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_errors_with_line() {
        let (line, _, msg) =
            parse("defaults:\n  strategy: semver\nregistries:\n- prefix: x\n  urll: y\n")
                .unwrap_err();
        assert_eq!(line, 5);
        assert!(msg.contains("unknown field `urll`"), "{msg}");
    }

    fn invalid(yaml: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("imagebump.yaml");
        std::fs::write(&path, yaml).unwrap();
        let e = load(&path).unwrap_err().to_string();
        e.replace(&path.display().to_string(), "imagebump.yaml")
    }

    #[test]
    fn bad_values_name_file_line_and_key() {
        assert_eq!(
            invalid("images:\n- match: nginx\n- match: ghcr.io/*\n  allowTags: \"regexp:(\"\n"),
            "imagebump.yaml:4:14: images[1].allowTags: bad regular expression \"(\": regex parse error:\n    (\n    ^\nerror: unclosed group (hint: write `regexp:<RE>` or `any`)"
        );
        let e = invalid("defaults:\n  constraint: \">=1.2 <<2\"\n");
        assert!(
            e.starts_with("imagebump.yaml:2:15: defaults.constraint: invalid constraint"),
            "{e}"
        );
        let e = invalid("images:\n  - match: \"a[\"\n");
        assert!(
            e.starts_with("imagebump.yaml:2:12: images[0].match: "),
            "{e}"
        );
        let e = invalid("scan:\n  exclude: [\"**/ok\", \"b[\"]\n");
        assert!(
            e.starts_with("imagebump.yaml:2:22: scan.exclude[1]: bad glob"),
            "{e}"
        );
        let e = invalid("defaults:\n  strategy: regex\n");
        assert!(
            e.contains("defaults.pattern: strategy `regex` needs a `pattern`"),
            "{e}"
        );
        let e = invalid("images:\n- match: x\n  minAge: 3 days\n");
        assert!(
            e.starts_with("imagebump.yaml:3:11: images[0].minAge:"),
            "{e}"
        );
        let e = invalid("images:\n- match: x\n  stratgy: semver\n");
        assert!(
            e.contains("imagebump.yaml:3:3: images[0]: unknown field `stratgy`"),
            "{e}"
        );
    }

    #[test]
    fn defaults_apply() {
        let c = parse("registries:\n- prefix: ghcr.io\n  url: http://127.0.0.1:5000\n").unwrap();
        assert_eq!(c.scan.helm_values, default_helm_values());
        assert_eq!(
            c.registries[0].url.as_deref(),
            Some("http://127.0.0.1:5000")
        );
        assert!(parse("").is_ok());
    }
}
