//! `imagebump.yaml`: strict schema, discovery of the file, and errors with file and line.

use std::path::{Path, PathBuf};

use imagebump_model::config::*;
use imagebump_yaml::PathSeg;

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

/// Checks serde cannot do: globs, regular expressions, constraints, platforms and
/// durations compile. Also returns warnings (settings that work but likely surprise).
pub fn validate(config: &Config) -> (Vec<Invalid>, Vec<String>) {
    let mut found = Findings::default();
    found.branch_prefix(&config.pull_requests.branch_prefix);
    if let Some(d) = config.pull_requests.dashboard() {
        found.dashboard_title(&d.title);
    }
    found.scan_globs(&config.scan);
    found.policies_and_rules(config);
    found
        .errors
        .extend(credentials_problems(&config.credentials));
    for (i, rule) in config.images.iter().enumerate() {
        found.credentials_for_any_host(i, rule);
    }
    for (i, r) in config.registries.iter().enumerate() {
        registry_problems(i, r, &mut found.errors, &mut found.warnings);
    }
    for (i, target) in config.notify.iter().enumerate() {
        found
            .errors
            .extend(notify_problem(target).map(|(k, message, hint)| {
                Invalid {
                    at: [key("notify"), PathSeg::Index(i)]
                        .into_iter()
                        .chain(k.map(key))
                        .collect(),
                    message,
                    hint: Some(hint.into()),
                }
            }));
    }
    (found.errors, found.warnings)
}

/// The longest dashboard title accepted, in characters.
const MAX_DASHBOARD_TITLE: usize = 200;

/// What [`validate`] finds, in the order it looks.
#[derive(Default)]
struct Findings {
    errors: Vec<Invalid>,
    warnings: Vec<String>,
}

impl Findings {
    fn error(&mut self, at: Vec<PathSeg>, message: String, hint: &str) {
        self.errors.push(Invalid {
            at,
            message,
            hint: Some(hint.into()),
        });
    }

    /// Every branch imagebump pushes starts with the prefix: without one, a change set's
    /// branch could be named like the base branch or anybody's branch.
    fn branch_prefix(&mut self, branch_prefix: &str) {
        let prefix = branch_prefix.trim();
        if prefix.is_empty() || prefix.trim_end_matches(['/', '-', '_', '.']).is_empty() {
            self.error(
                vec![key("pullRequests"), key("branchPrefix")],
                format!("branch prefix {branch_prefix:?} does not set imagebump's branches apart from others"),
                "keep the default imagebump/ or use a name of your own, such as deps/imagebump-",
            );
        }
    }

    /// The dashboard's title is one line of text a forge shows: not empty, no control
    /// characters (they are shown escaped anyway), at most [`MAX_DASHBOARD_TITLE`]
    /// characters.
    fn dashboard_title(&mut self, title: &str) {
        let problem = if title.trim().is_empty() {
            Some("the dashboard's title is empty".to_string())
        } else if title.chars().count() > MAX_DASHBOARD_TITLE {
            Some(format!(
                "the dashboard's title is longer than {MAX_DASHBOARD_TITLE} characters"
            ))
        } else if title.chars().any(imagebump_model::escape::is_hidden) {
            Some("the dashboard's title holds control or direction characters".to_string())
        } else {
            None
        };
        if let Some(message) = problem {
            let at = ["pullRequests", "dashboard", "title"].map(key).to_vec();
            self.error(at, message, "a short line such as \"imagebump dashboard\"");
        }
    }

    fn scan_globs(&mut self, s: &ScanConfig) {
        for (name, globs) in [
            ("include", &s.include),
            ("exclude", &s.exclude),
            ("helmValues", &s.helm_values),
        ] {
            for (i, g) in globs.iter().enumerate() {
                if let Err(e) = globset::Glob::new(g) {
                    self.error(
                        vec![key("scan"), key(name), PathSeg::Index(i)],
                        format!("bad glob {g:?}: {e}"),
                        "globs relative to the root, such as apps/** or **/values*.yaml",
                    );
                }
            }
        }
    }

    /// `defaults`, then each rule's own fields and policy; a rule inheriting a broken key
    /// from `defaults` is reported there, once.
    fn policies_and_rules(&mut self, config: &Config) {
        let defaults_error =
            imagebump_policy::Policy::compile(config.defaults.clone(), Default::default())
                .err()
                .map(|e| e.key);
        self.policy(vec![key("defaults")], config.defaults.clone(), None);
        for (i, rule) in config.images.iter().enumerate() {
            self.rule_fields(i, rule);
            let at = vec![key("images"), PathSeg::Index(i)];
            self.policy(at, config.defaults.overlay(&rule.policy()), defaults_error);
        }
    }

    fn policy(&mut self, at: Vec<PathSeg>, spec: PolicySpec, reported: Option<&'static str>) {
        match imagebump_policy::Policy::compile(spec, Default::default()) {
            Ok(p) => self.warnings.extend(
                p.warnings
                    .iter()
                    .map(|w| format!("{}: {w}", imagebump_yaml::path_to_string(&at))),
            ),
            Err(e) if reported.is_some() && reported == Some(e.key) => {}
            Err(e) => {
                let mut at = at;
                at.push(key(e.key));
                self.errors.push(Invalid {
                    at,
                    message: e.message,
                    hint: e.hint,
                });
            }
        }
    }

    /// An `images[i]` rule's own fields: its globs, `promoteFrom` and `credentials`.
    fn rule_fields(&mut self, i: usize, rule: &ImageRule) {
        let at = |k: &[&'static str]| -> Vec<PathSeg> {
            [key("images"), PathSeg::Index(i)]
                .into_iter()
                .chain(k.iter().map(|k| key(k)))
                .collect()
        };
        if let Err(e) = imagebump_policy::rules::rule_glob(&rule.glob) {
            self.error(at(&["match"]), e.to_string(), e.hint());
        }
        if let Some(Err(e)) = rule.path.as_deref().map(imagebump_policy::rules::rule_glob) {
            let hint = "globs such as apps/*/overlays/dev/** or **/values-prod.yaml";
            self.error(at(&["path"]), e.to_string(), hint);
        }
        if let Some((k, message)) = rule
            .promote_from
            .as_ref()
            .and_then(|p| imagebump_model::promotion::check(rule.path.as_deref(), p))
        {
            self.error(at(&["promoteFrom", k]), message, "see docs/promotion.md");
        }
        if let Some(Err(e)) = rule
            .credentials
            .as_deref()
            .map(imagebump_model::credentials::Source::parse)
        {
            let (message, hint) = (e.to_string(), e.hint());
            self.errors.push(Invalid {
                at: at(&["credentials"]),
                message,
                hint,
            });
        }
    }

    fn credentials_for_any_host(&mut self, i: usize, rule: &ImageRule) {
        if rule.credentials.is_some() && any_host(&rule.glob) {
            self.warnings.push(format!(
                "images[{i}].credentials: match {:?} covers images of any registry host, so these credentials go to whatever host a manifest names; start match with the host (e.g. harbor.example.com/team/**)",
                rule.glob
            ));
        }
    }
}

/// Does an `images[].match` glob leave the registry host open (a pattern in its first
/// segment)?
fn any_host(glob: &str) -> bool {
    glob.split('/')
        .next()
        .is_some_and(|host| host.contains(['*', '?', '[', '{']))
}

/// What is wrong with `credentials.pullSecrets`: a source that does not parse, or an
/// entry that names no registry it may go to.
fn credentials_problems(c: &imagebump_model::config::CredentialsConfig) -> Vec<Invalid> {
    let mut errors = Vec::new();
    for (name, entry) in &c.pull_secrets {
        let at = |k: &str| vec![key("credentials"), key("pullSecrets"), key(name), key(k)];
        if let Err(e) = imagebump_model::credentials::Source::parse(&entry.secret) {
            errors.push(Invalid {
                at: at("secret"),
                message: e.to_string(),
                hint: e.hint(),
            });
        }
        if entry.registries.iter().all(|r| r.trim().is_empty()) {
            errors.push(Invalid {
                at: at("registries"),
                message: "names no registry: the secret would go nowhere".into(),
                hint: Some("list the registry hosts it is for, e.g. registries: [ghcr.io]".into()),
            });
        }
    }
    errors
}

/// What is wrong with a `notify` entry: the key (`None`: the entry), why, and a hint. URLs
/// are never quoted (a Slack webhook URL is a secret).
fn notify_problem(t: &NotifyTarget) -> Option<(Option<&'static str>, String, &'static str)> {
    let hint =
        "e.g. `- webhook: https://hooks.example.com/imagebump` or `- slack: env:SLACK_WEBHOOK_URL`";
    let url = match (&t.webhook, &t.slack) {
        (Some(_), Some(_)) | (None, None) => {
            return Some((None, "give exactly one of webhook or slack".into(), hint))
        }
        (Some(w), None) => ("webhook", w),
        (None, Some(s)) => ("slack", s),
    };
    if t.slack.is_some() && t.secret.is_some() {
        return Some((
            Some("secret"),
            "Slack incoming webhooks are not signed: the URL is the secret".into(),
            "remove secret, and give the URL as env:VAR",
        ));
    }
    if let Some(secret) = &t.secret {
        if !(secret.starts_with("env:") || secret.starts_with("file:")) || secret.len() <= 5 {
            return Some((
                Some("secret"),
                "the signing key is given as env:VAR or file:PATH, never written here".into(),
                "e.g. secret: env:WEBHOOK_SECRET",
            ));
        }
    }
    if t.on.is_empty() {
        return Some((
            Some("on"),
            "no events: the entry would never send".into(),
            "list some of opened, updated, closed, pushed, failed, or leave `on` out for all",
        ));
    }
    let (name, value) = url;
    let plain = value.strip_prefix("env:").is_none();
    let parsed = reqwest::Url::parse(value.trim()).ok();
    let scheme_ok = parsed.is_some_and(|u| matches!(u.scheme(), "http" | "https"));
    (plain && !scheme_ok).then(|| {
        (
            Some(name),
            format!("{name} is neither an http(s) URL nor env:VAR"),
            hint,
        )
    })
}

/// The problems of `registries[i]`: an endpoint that is no URL of a registry, credentials
/// sources, durations and limits that do not parse or make no sense.
fn registry_problems(
    i: usize,
    r: &RegistryConfig,
    errors: &mut Vec<Invalid>,
    warnings: &mut Vec<String>,
) {
    let at = |k: &str| vec![key("registries"), PathSeg::Index(i), key(k)];
    let mut bad = |k: &str, message: String, hint: &str| {
        errors.push(Invalid {
            at: at(k),
            message,
            hint: Some(hint.into()),
        })
    };
    if let Some(Err((message, hint))) = r.url.as_deref().map(check_endpoint) {
        bad("url", message, &hint);
    }
    if let Some(spec) = &r.credentials {
        if let Err(e) = imagebump_model::credentials::Source::parse(spec) {
            bad("credentials", e.to_string(), "see docs/registries.md");
        }
    }
    if let Err(e) = r.credentials_expire() {
        bad("credentialsExpire", e.to_string(), "e.g. 10h, 30m");
    }
    if let Err(e) = r.credentials_timeout() {
        bad("credentialsTimeout", e.to_string(), "e.g. 10s, 1m");
    }
    let range = imagebump_model::config::RATE_LIMIT_RANGE;
    if r.rate_limit.is_some_and(|l| !range.contains(&l)) {
        bad(
            "rateLimit",
            format!(
                "must be between {} and {} requests per second",
                range.start(),
                range.end()
            ),
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

/// Why `url` cannot be a registry's endpoint, and what to write instead. A registry is
/// spoken to at the root of an `http://` or `https://` origin (`/v2/…` is appended), so a
/// scheme is required and a path, query, fragment or user part is a mistake. The message
/// never quotes a URL that holds a user part: it may be a password.
pub fn check_endpoint(url: &str) -> Result<(), (String, String)> {
    let url = url.trim();
    let example =
        "e.g. https://registry.example.com, or http://127.0.0.1:5000 for a plain-HTTP registry";
    if url.contains('@') {
        return Err((
            "a user name or password in the URL: credentials are never sent that way".into(),
            "give only scheme, host and port, and the credentials with registries[].credentials (e.g. env:VAR)".into(),
        ));
    }
    if !url.contains("://") {
        let origin = url.split(['/', '?', '#']).next().unwrap_or_default();
        return Err((
            format!("{url:?} has no scheme (http:// or https://)"),
            format!("write http://{origin} (a plain-HTTP registry) or https://{origin}"),
        ));
    }
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| (format!("{url:?} is not a URL: {e}"), example.to_string()))?;
    let Some(host) = parsed.host_str() else {
        return Err((format!("{url:?} names no host"), example.into()));
    };
    let origin = match parsed.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    };
    let scheme = parsed.scheme();
    if scheme != "http" && scheme != "https" {
        return Err((
            format!(
                "unsupported scheme {scheme}:// in {url:?}: registries are spoken to over HTTP"
            ),
            format!("write https://{origin}, or http://{origin} for a plain-HTTP registry"),
        ));
    }
    let extra = if !matches!(parsed.path(), "" | "/") {
        Some(format!("a path ({})", parsed.path()))
    } else if parsed.query().is_some() {
        Some("a query (?…)".to_string())
    } else if parsed.fragment().is_some() {
        Some("a fragment (#…)".to_string())
    } else {
        None
    };
    match extra {
        Some(what) => Err((
            format!("{url:?} has {what}: a registry is spoken to at the root of its host (imagebump adds /v2/…)"),
            format!("write {scheme}://{origin}"),
        )),
        None => Ok(()),
    }
}

/// The configuration file to use: `explicit`, else the first of [`CONFIG_NAMES`] in `root`
/// that exists in any form. A name taken by something that is not a regular file (a
/// directory, a pipe, a link to a device) is still found, so that reading it stops the run
/// instead of the run going on without the repository's settings.
pub fn locate(explicit: Option<&Path>, root: &Path) -> Option<PathBuf> {
    explicit.map(Path::to_path_buf).or_else(|| {
        CONFIG_NAMES
            .iter()
            .map(|n| root.join(n))
            .find(|p| p.symlink_metadata().is_ok())
    })
}

/// The largest configuration file read: a real one is a few kilobytes, and parsing holds
/// every event of the text at once, a dozen times its size.
pub const CONFIG_LIMIT: u64 = 1 << 20;

/// The text of the configuration file at `path`, counted while reading: a larger file (or
/// a device) is an error, never read to its end.
fn read_config(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(CONFIG_LIMIT.saturating_add(1))
        .read_to_string(&mut text)?;
    if text.len() as u64 > CONFIG_LIMIT {
        return Err(std::io::Error::other(format!(
            "larger than {} MiB: not read",
            CONFIG_LIMIT >> 20
        )));
    }
    Ok(text)
}

/// Read, parse and validate the configuration at `path`.
pub fn load(path: &Path) -> Result<Config, Error> {
    let display = path.display().to_string();
    let text = read_config(path).map_err(|source| Error::Read {
        path: display.clone(),
        source,
    })?;
    let text = without_bom(&text);
    let config = parse(text).map_err(|e| not_parsed(path, e))?;
    finish(path, text, config)
}

/// `text` without the UTF-8 byte order mark some editors write first.
fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// The error for a file that does not parse as a configuration.
fn not_parsed(path: &Path, (line, column, message): (usize, usize, String)) -> Error {
    Error::Invalid {
        path: path.display().to_string(),
        line,
        column,
        message,
        hint: Some("see docs/configuration.md for every key".into()),
    }
}

/// The checks of a parsed configuration (`text` is where it was read, for lines), and
/// paths made relative to its file.
fn finish(path: &Path, text: &str, mut config: Config) -> Result<Config, Error> {
    let display = path.display().to_string();
    // Warnings are the caller's to show (`config check` prints them as findings; the
    // other commands as warnings): `validate` gives them again from the result.
    let (errors, _) = validate(&config);
    if let Some(first) = errors.into_iter().next() {
        let (line, column) = locate_path(text, &first.at);
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
            .and_then(|s| imagebump_model::credentials::Source::parse(s).ok())
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
    for entry in config.credentials.pull_secrets.values_mut() {
        let mut secret = Some(std::mem::take(&mut entry.secret));
        relative(&mut secret);
        entry.secret = secret.unwrap_or_default();
    }
    for rule in &mut config.images {
        relative(&mut rule.credentials);
        crate::verify::config::relative_keys(&mut rule.verify, base);
    }
    crate::verify::config::relative_keys(&mut config.defaults.verify, base);
    if let Some((at, message)) = crate::verify::config::key_problem(&config) {
        let (line, column) = locate_path(text, &at);
        return Err(Error::Invalid {
            path: display,
            line,
            column,
            message: format!("{}: {message}", imagebump_yaml::path_to_string(&at)),
            hint: Some("see docs/tag-selection.md (Signed images)".into()),
        });
    }
    Ok(config)
}

/// Where the repository's own file may not go: what says where secrets are sent or what
/// runs is the operator's alone (`--config`, `IMAGEBUMP_CONFIG`).
const OPERATOR_ONLY: &str = "can only be set in the operator's configuration (--config or \
     IMAGEBUMP_CONFIG): the repository's own imagebump.yaml may not say where credentials or \
     notifications go, or what runs";

/// The repository's own configuration file (found in the tree), as `text` (read by the
/// caller without following links out of the tree): like [`load`], but it may set only
/// policies, scan globs, Argo CD and Helm reading, and pull-request presentation. What it
/// may not set is judged on the parsed result, the very configuration that is used, so no
/// spelling of YAML (tags, anchors and aliases, merge keys, quoted keys, flow or JSON
/// style) can hide a key. A file that does not parse is an error, as the operator's is.
/// Returns the configuration and the top-level keys the file sets.
pub fn load_repository(path: &Path, text: &str) -> Result<(Config, Vec<String>), Error> {
    let text = without_bom(text);
    let config = parse(text).map_err(|e| not_parsed(path, e))?;
    if let Some(at) = operator_only(&config).into_iter().next() {
        let (line, column) = locate_path(text, &at);
        return Err(Error::Invalid {
            path: path.display().to_string(),
            line,
            column,
            message: format!("{} {OPERATOR_ONLY}", imagebump_yaml::path_to_string(&at)),
            hint: Some("move it to the operator's configuration; see docs/security.md".into()),
        });
    }
    let keys = top_level_keys(text).map_err(|e| not_parsed(path, e))?;
    Ok((finish(path, text, config)?, keys))
}

/// Where `config` sets what only the operator's configuration may: where credentials,
/// notifications and signing keys go, which programs run, which trust roots verify
/// images. The one list of operator-only settings: the destructuring below names every
/// top-level field, so a new one does not compile until it is sorted here.
pub fn operator_only(config: &Config) -> Vec<Vec<PathSeg>> {
    let Config {
        defaults,
        images,
        registries,
        signing,
        notify,
        credentials,
        scan: _,
        argocd: _,
        helm: _,
        pull_requests,
    } = config;
    let mut refused: Vec<Vec<PathSeg>> = Vec::new();
    let top = [
        ("registries", !registries.is_empty()),
        ("signing", signing.is_some()),
        ("notify", !notify.is_empty()),
        ("credentials", !credentials.is_empty()),
    ];
    refused.extend(
        top.into_iter()
            .filter(|(_, set)| *set)
            .map(|(k, _)| vec![key(k)]),
    );
    // Who may steer the dashboard is the operator's to widen.
    if pull_requests
        .dashboard()
        .is_some_and(|d| d.trust_issue_writers)
    {
        let at = ["pullRequests", "dashboard", "trustIssueWriters"];
        refused.push(at.into_iter().map(key).collect());
    }
    let mut policy = |at: Vec<PathSeg>, credentials: bool, verify: bool| {
        for (k, set) in [("credentials", credentials), ("verify", verify)] {
            if set {
                refused.push(at.iter().cloned().chain([key(k)]).collect());
            }
        }
    };
    // `defaults` has no `credentials` field at all (a policy cannot carry them): the
    // key is refused there as unknown when the file is parsed.
    policy(vec![key("defaults")], false, defaults.verify.is_some());
    for (i, rule) in images.iter().enumerate() {
        policy(
            vec![key("images"), PathSeg::Index(i)],
            rule.credentials.is_some(),
            rule.verify.is_some(),
        );
    }
    refused
}

/// The top-level keys `text` sets, as libyaml reads them (tags dropped, merge keys
/// applied): which sections of the operator's configuration the repository's replace.
fn top_level_keys(text: &str) -> Result<Vec<String>, (usize, usize, String)> {
    let mut value: yaml_serde::Value =
        imagebump_yaml::from_str(text).map_err(|e| (e.line, e.column, e.message))?;
    while let yaml_serde::Value::Tagged(tagged) = value {
        value = tagged.value;
    }
    value
        .apply_merge()
        .map_err(|e| (1, 1, format!("cannot apply merge keys: {e}")))?;
    let keys = value
        .as_mapping()
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| {
            let mut k = k;
            while let yaml_serde::Value::Tagged(t) = k {
                k = &t.value;
            }
            k.as_str().map(str::to_string)
        });
    Ok(keys.collect())
}

/// The operator's configuration with the repository's on top: the repository's
/// `defaults` fields win, its `images` rules come first, and each of `scan`,
/// `pullRequests`, `argocd` and `helm` it sets replaces the operator's. Registries and
/// credentials stay the operator's.
pub fn merge(operator: Config, repository: Config, keys: &[String]) -> Config {
    let has = |k: &str| keys.iter().any(|x| x == k);
    let mut out = operator;
    if has("defaults") {
        out.defaults = out.defaults.overlay(&repository.defaults);
    }
    if has("images") {
        let operator_rules = std::mem::take(&mut out.images);
        out.images = repository.images;
        out.images.extend(operator_rules);
    }
    if has("scan") {
        out.scan = repository.scan;
    }
    if has("pullRequests") {
        let trust = out
            .pull_requests
            .dashboard()
            .is_some_and(|d| d.trust_issue_writers);
        out.pull_requests = repository.pull_requests;
        trust_issue_writers(&mut out.pull_requests, trust);
    }
    if has("argocd") {
        out.argocd = repository.argocd;
    }
    if has("helm") {
        // The operator's `charts: false` (an air-gapped cluster) holds: the repository may
        // turn chart support off, not on.
        let charts = out.helm.charts;
        out.helm = repository.helm;
        out.helm.charts &= charts;
    }
    out
}

/// Sets the dashboard's `trustIssueWriters` (when the dashboard is on) to the operator's
/// `trust`: the repository's pull-request settings replace the operator's, but this one is
/// the operator's alone.
fn trust_issue_writers(pull_requests: &mut PullRequestsConfig, trust: bool) {
    match &mut pull_requests.dashboard {
        Some(Dashboard::Options(d)) => d.trust_issue_writers = trust,
        Some(Dashboard::On(true)) if trust => {
            let options = DashboardOptions {
                trust_issue_writers: true,
                ..DashboardOptions::default()
            };
            pull_requests.dashboard = Some(Dashboard::Options(options));
        }
        Some(Dashboard::On(_)) | None => {}
    }
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

/// `text` as a configuration (an empty text: the defaults). Deep nesting is refused at its
/// line before libyaml reads it.
pub fn parse(text: &str) -> Result<Config, (usize, usize, String)> {
    if text.trim().is_empty() {
        return Ok(Config::default());
    }
    imagebump_yaml::from_str(text).map_err(|e| (e.line, e.column, e.message))
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
    fn chart_support_is_on_unless_either_level_turns_it_off() {
        let config = |yaml: &str| parse(yaml).unwrap();
        assert!(config("").helm.charts);
        assert!(config("helm:\n  imageKeys: []\n").helm.charts);
        assert!(!config("helm:\n  charts: false\n").helm.charts);
        let helm = vec!["helm".to_string()];
        let merged = |op: &str, repo: &str| merge(config(op), config(repo), &helm).helm.charts;
        // The operator's `false` holds: a repository cannot make an offline job go out.
        assert!(!merged(
            "helm:\n  charts: false\n",
            "helm:\n  charts: true\n"
        ));
        assert!(!merged(
            "helm:\n  charts: false\n",
            "helm:\n  imageKeys: []\n"
        ));
        // Either may turn it off.
        assert!(!merged("", "helm:\n  charts: false\n"));
        assert!(merged("", "helm:\n  imageKeys: []\n"));
    }

    /// The keys a repository file sets and what it may not set are read from what it
    /// parses into, whatever tags it carries; an empty file sets nothing.
    #[test]
    fn the_repository_file_is_judged_on_what_it_parses_into() {
        let path = Path::new("imagebump.yaml");
        let keys = |text: &str| load_repository(path, text).unwrap().1;
        assert_eq!(keys("images: !x []\n!y scan: {}\n"), ["images", "scan"]);
        assert_eq!(keys("!x {helm: {charts: false}}\n"), ["helm"]);
        assert_eq!(keys(""), Vec::<String>::new());
        assert_eq!(keys("\u{feff}# nothing\n"), Vec::<String>::new());
        let refused = |text: &str| load_repository(path, text).unwrap_err().to_string();
        assert_eq!(
            refused("scan: {}\nnotify: !x [{webhook: http://x}]\n"),
            format!("imagebump.yaml:2:9: notify {OPERATOR_ONLY} (hint: move it to the operator's configuration; see docs/security.md)")
        );
        let verify = refused("images:\n- {match: x, verify: !x {keys: [k]}}\n");
        assert!(
            verify.starts_with("imagebump.yaml:2:")
                && verify.contains(": images[0].verify can only be set"),
            "{verify}"
        );
        assert!(refused("images: [\n").starts_with("imagebump.yaml:2:1: "));
    }

    /// `trustIssueWriters` is the operator's alone: refused in the repository's file, and
    /// the operator's value holds when the repository's `pullRequests` replace theirs.
    #[test]
    fn trust_in_issue_writers_is_the_operators() {
        let path = Path::new("imagebump.yaml");
        let refused = load_repository(
            path,
            "pullRequests:\n  dashboard:\n    trustIssueWriters: true\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            refused.starts_with("imagebump.yaml:3:24: pullRequests.dashboard.trustIssueWriters can only be set in the operator's configuration"),
            "{refused}"
        );
        let config = |yaml: &str| parse(yaml).unwrap();
        let keys = vec!["pullRequests".to_string()];
        let trust = |op: &str, repo: &str| {
            let merged = merge(config(op), config(repo), &keys);
            merged
                .pull_requests
                .dashboard()
                .map(|d| d.trust_issue_writers)
        };
        let operator = "pullRequests:\n  dashboard: {trustIssueWriters: true}\n";
        assert_eq!(
            trust(operator, "pullRequests: {dashboard: true}"),
            Some(true)
        );
        let titled = "pullRequests: {dashboard: {title: Deps}}";
        assert_eq!(trust(operator, titled), Some(true));
        assert_eq!(trust(operator, "pullRequests: {dashboard: false}"), None);
        assert_eq!(trust("", "pullRequests: {dashboard: true}"), Some(false));
        let repo_false = "pullRequests: {dashboard: {trustIssueWriters: false}}";
        assert_eq!(trust(operator, repo_false), Some(true));
    }

    /// The dashboard's title is one line of at most 200 characters.
    #[test]
    fn the_dashboard_title_is_one_short_line() {
        let title = |t: &str| invalid(&format!("pullRequests:\n  dashboard: {{title: {t}}}\n"));
        assert_eq!(
            title("\"a\\u001b[2Jb\""),
            "imagebump.yaml:2:22: pullRequests.dashboard.title: the dashboard's title holds control or direction characters (hint: a short line such as \"imagebump dashboard\")"
        );
        assert!(title("\"x\\ny\"").contains("holds control"));
        assert!(title("\" \"").contains("the dashboard's title is empty"));
        let long = "x".repeat(201);
        assert!(title(&long).contains("longer than 200 characters"));
        let fine = "x".repeat(200);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("imagebump.yaml");
        std::fs::write(
            &path,
            format!("pullRequests: {{dashboard: {{title: {fine}}}}}\n"),
        )
        .unwrap();
        assert_eq!(
            load(&path)
                .unwrap()
                .pull_requests
                .dashboard()
                .unwrap()
                .title,
            fine
        );
    }

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
    fn bad_promote_from_names_file_line_and_key() {
        assert_eq!(
            invalid("images:\n- path: apps/*/prod/**\n  promoteFrom: {path: \"apps/{app}/staging\", soak: 2 days}\n"),
            "imagebump.yaml:3:51: images[0].promoteFrom.soak: \"2 days\" is not a duration (use a number and a unit: s, m, h, d, w) (hint: see docs/promotion.md)"
        );
        assert_eq!(
            invalid("images:\n- path: apps/**\n  promoteFrom:\n    path: apps/{app}/staging\n    soak: 2h\n"),
            "imagebump.yaml:4:11: images[0].promoteFrom.path: \"apps/{app}/staging\": `{app}` is segment 2 but the rule's path \"apps/**\" has no `*` segment there (with no `**` before it) (hint: see docs/promotion.md)"
        );
    }

    #[test]
    fn bad_schedules_and_freezes_name_file_line_and_key() {
        assert_eq!(
            invalid("defaults:\n  timezone: Europe/Berlim\n"),
            "imagebump.yaml:2:13: defaults.timezone: unknown time zone \"Europe/Berlim\" (hint: an IANA time zone name such as Europe/Berlin, America/New_York or UTC)"
        );
        assert_eq!(
            invalid("images:\n- match: nginx\n  schedule: [\"* 6-9 * *\"]\n"),
            "imagebump.yaml:3:13: images[0].schedule: invalid cron expression: \"* 6-9 * *\" has 4 fields, a schedule has 5: minute hour day-of-month month day-of-week (hint: 5 fields: minute hour day-of-month month day-of-week, e.g. \"* 6-9 * * 1-5\")"
        );
        assert_eq!(
            invalid("defaults:\n  freeze:\n  - {from: 2026-12-18, until: 2026-12-14}\n"),
            "imagebump.yaml:3:3: defaults.freeze: 2026-12-18 is after 2026-12-14: a freeze runs from its first day to its last (hint: {from: 2026-12-14, until: 2026-12-18, reason: release week})"
        );
        let (line, _, msg) =
            parse("defaults:\n  freeze:\n  - {from: 2026-12-14, to: 2026-12-18}\n").unwrap_err();
        assert_eq!(line, 3);
        assert!(msg.contains("unknown field `to`"), "{msg}");
    }

    #[test]
    fn bad_values_name_file_line_and_key() {
        assert_eq!(
            invalid("images:\n- match: nginx\n- match: ghcr.io/*\n  allowTags: \"regexp:(\"\n"),
            "imagebump.yaml:4:14: images[1].allowTags: bad regular expression \"(\": regex parse error:\n    (\n    ^\nerror: unclosed group (hint: write `regexp:<RE>` or `any`)"
        );
        // (file, what the error contains): file:line:column, the key, why.
        let cases = [
            (
                "defaults:\n  constraint: \">=1.2 <<2\"\n",
                "imagebump.yaml:2:15: defaults.constraint: invalid constraint",
            ),
            (
                "images:\n  - match: \"a[\"\n",
                "imagebump.yaml:2:12: images[0].match: ",
            ),
            (
                "scan:\n  exclude: [\"**/ok\", \"b[\"]\n",
                "imagebump.yaml:2:22: scan.exclude[1]: bad glob",
            ),
            (
                "defaults:\n  strategy: regex\n",
                "defaults.pattern: strategy `regex` needs a `pattern`",
            ),
            (
                "images:\n- match: x\n  minAge: 3 days\n",
                "imagebump.yaml:3:11: images[0].minAge:",
            ),
            (
                "images:\n- match: x\n  stratgy: semver\n",
                "imagebump.yaml:3:3: images[0]: unknown field `stratgy`",
            ),
        ];
        for (yaml, expected) in cases {
            let e = invalid(yaml);
            assert!(e.contains(expected), "{yaml:?}: {e}");
        }
    }

    /// An operator rule whose credentials would go to any host a manifest names is said;
    /// one that names its host is not.
    #[test]
    fn credentials_for_any_host_are_warned_about() {
        let warned = |glob: &str| {
            let config = parse(&format!(
                "images:\n- match: \"{glob}\"\n  credentials: env:ROBOT\n"
            ))
            .unwrap();
            validate(&config)
                .1
                .iter()
                .any(|w| w.starts_with("images[0].credentials: match"))
        };
        assert!(warned("**"));
        assert!(warned("*/payments/*"));
        assert!(!warned("harbor.example.com/payments/**"));
        assert!(!warned("payments/*"));
    }

    #[test]
    fn defaults_apply() {
        let c = parse("registries:\n- prefix: ghcr.io\n  url: http://127.0.0.1:5000\n").unwrap();
        assert_eq!(c.scan.helm_values, ScanConfig::default().helm_values);
        assert_eq!(
            c.registries[0].url.as_deref(),
            Some("http://127.0.0.1:5000")
        );
        assert!(parse("").is_ok());
    }
}
