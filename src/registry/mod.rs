//! Talking to container registries over the OCI distribution API.
//!
//! One [`client::Client`] per configured registry entry (or per host when none is
//! configured), each with its own credentials, TLS settings, token cache and concurrency
//! bound. Tag lists are read with our own pager that follows `Link` headers.

pub mod auth;
pub mod cache;
pub mod check;
pub mod client;
pub mod credentials;
pub mod gate;
pub mod manifest;
mod tls;

/// The largest CA bundle or credentials file read: far above any real one, far below a
/// mistake such as `/dev/zero`.
pub const MAX_SETTINGS_FILE_BYTES: u64 = 1 << 20;

/// Why a settings file named by the operator was not read. Cloneable (the I/O error is
/// shared) so that a run may keep the outcome of reading a file once.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Io(std::sync::Arc<std::io::Error>),
    #[error("larger than {} KiB: not read", MAX_SETTINGS_FILE_BYTES >> 10)]
    TooLarge,
}

/// A small file named by the operator's configuration, refused when it is larger than
/// [`MAX_SETTINGS_FILE_BYTES`] (counted while reading: a device cannot get past it).
pub fn read_small(path: &std::path::Path) -> Result<Vec<u8>, ReadError> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_SETTINGS_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| ReadError::Io(std::sync::Arc::new(e)))?;
    if bytes.len() as u64 > MAX_SETTINGS_FILE_BYTES {
        return Err(ReadError::TooLarge);
    }
    Ok(bytes)
}

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

pub use client::Client;
use credentials::Environment;
use gate::Gate;
use imagebump_model::config::RegistryConfig;
use imagebump_model::credentials::Source;
use imagebump_model::name::{ImageName, DOCKER_HUB};

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// Connected (or not) but no answer within `--request-timeout` (`reason` says how long).
    #[error("{url}: {reason}")]
    Timeout { url: String, reason: String },
    #[error("cannot reach {url}: {reason}")]
    Transport {
        url: String,
        reason: String,
        retryable: bool,
    },
    /// An `https://` endpoint answered in plain HTTP: the operator's `url` (or the default
    /// `https://<host>`) names the wrong scheme.
    #[error("{url}: this looks like a plain-HTTP registry (it answered the TLS handshake in plain HTTP): use url: http://{authority}")]
    PlainHttp { url: String, authority: String },
    #[error("{url}: HTTP {status} from the registry")]
    Server { url: String, status: u16 },
    #[error("{url}: rate limited (HTTP 429)")]
    RateLimited {
        url: String,
        retry_after: Option<Duration>,
    },
    /// 401 or 403. `sent_from` names the credentials source when the request carried its
    /// credentials (they were refused); `None` when it carried none.
    #[error("{url}: {}", refusal(*status, sent_from.as_deref()))]
    Unauthorized {
        url: String,
        status: u16,
        sent_from: Option<String>,
    },
    #[error("{url}: repository or tag not found (HTTP 404)")]
    NotFound { url: String },
    #[error("{url}: unexpected HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: response larger than {limit} bytes, refused")]
    TooLarge { url: String, limit: usize },
    #[error("{url}: {reason}")]
    Invalid { url: String, reason: String },
    #[error("registry configuration: {0}")]
    Config(String),
    #[error("{host}: {reason}")]
    Credentials { host: String, reason: String },
    #[error("{host}: not asked: {reason}")]
    Skipped { host: String, reason: String },
}

/// What a 401 or 403 means: without credentials, that some are wanted; with them, that
/// the ones from `sent_from` were refused (never what they hold).
fn refusal(status: u16, sent_from: Option<&str>) -> String {
    match sent_from {
        None => format!("HTTP {status}: not authorized"),
        Some(from) => format!("the credentials from {from} were refused (HTTP {status})"),
    }
}

impl Error {
    /// Timeouts, connection failures, 429 and 5xx are worth another try.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::Transport {
                retryable: true,
                ..
            } | Error::Timeout { .. }
                | Error::Server { .. }
                | Error::RateLimited { .. }
        )
    }

    /// Does the failure say the registry itself is unwell (rather than one repository or
    /// our credentials)? A streak of these opens the registry's circuit breaker.
    pub fn is_registry_down(&self) -> bool {
        // A plain-HTTP answer repeats for every request: it counts, so that 200
        // repositories cost a few requests, not 200.
        matches!(
            self,
            Error::Transport { .. }
                | Error::Timeout { .. }
                | Error::PlainHttp { .. }
                | Error::Server { .. }
                | Error::RateLimited { .. }
        )
    }

    /// The URL of the request that failed, when the error has one.
    pub fn url(&self) -> Option<&str> {
        match self {
            Error::Timeout { url, .. }
            | Error::Transport { url, .. }
            | Error::PlainHttp { url, .. }
            | Error::Server { url, .. }
            | Error::RateLimited { url, .. }
            | Error::Unauthorized { url, .. }
            | Error::NotFound { url }
            | Error::Status { url, .. }
            | Error::TooLarge { url, .. }
            | Error::Invalid { url, .. } => Some(url),
            Error::Config(_) | Error::Credentials { .. } | Error::Skipped { .. } => None,
        }
    }

    /// What went wrong, without the URL: for a line that names the registry already.
    pub fn short(&self) -> String {
        match self {
            Error::Transport { reason, .. }
            | Error::Timeout { reason, .. }
            | Error::Invalid { reason, .. } => reason.clone(),
            Error::PlainHttp { .. } => "it answered the TLS handshake in plain HTTP".into(),
            Error::Server { status, .. } | Error::Status { status, .. } => {
                format!("HTTP {status}")
            }
            Error::RateLimited { .. } => "rate limited (HTTP 429)".into(),
            Error::Unauthorized {
                status, sent_from, ..
            } => refusal(*status, sent_from.as_deref()),
            Error::NotFound { .. } => "not found (HTTP 404)".into(),
            Error::TooLarge { limit, .. } => format!("response larger than {limit} bytes"),
            Error::Config(m) => m.clone(),
            Error::Credentials { reason, .. } | Error::Skipped { reason, .. } => reason.clone(),
        }
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Unauthorized { sent_from: Some(from), status: 403, .. } => Some(format!(
                "the registry knows the user from {from} but does not let it read this repository: grant it pull access"
            )),
            Error::Unauthorized { sent_from: Some(from), .. } => Some(format!(
                "check the user and password (or token) {from} holds, and that they are current; `imagebump registry check` shows the user sent"
            )),
            Error::Unauthorized { sent_from: None, .. } => Some(
                "add credentials: `docker login` (Docker config.json / DOCKER_CONFIG) or registries[].credentials (e.g. env:VAR) in the operator's configuration (--config)".into(),
            ),
            Error::Transport { reason, .. } if reason.contains("certificate") || reason.contains("tls") => {
                Some("add the registry's CA with registries[].caFile in imagebump.yaml".into())
            }
            Error::Timeout { .. } => Some("the registry did not answer in time: check the host and any proxy or firewall between; --request-timeout sets how long each request waits".into()),
            Error::Transport { .. } => Some("check the host, or set registries[].url for a mirror or a plain-HTTP registry".into()),
            Error::PlainHttp { authority, .. } => Some(format!("in the registries entry for {authority} in the operator's configuration (--config); add `- prefix: {authority}` if there is none")),
            Error::RateLimited { .. } => Some("set registries[].rateLimit or lower registries[].concurrency, or run less often".into()),
            Error::Credentials { .. } => Some("see docs/registries.md for each credentials source; `imagebump registry check` tests them".into()),
            Error::Skipped { reason, .. } if reason.contains("pull limit") => Some("log in (Docker config or registries[].credentials) for a higher limit, or run less often".into()),
            Error::Skipped { .. } => Some("the registry kept failing; its references are listed as not checked and the next run tries again".into()),
            Error::NotFound { .. } => Some("check the image name; private repositories may also answer 404 without credentials".into()),
            _ => None,
        }
    }
}

/// Requests made during the run, by kind (reported, and asserted by tests).
#[derive(Debug, Default)]
pub struct Stats {
    pub tag_pages: AtomicUsize,
    pub tokens: AtomicUsize,
    pub manifests: AtomicUsize,
    /// Blob GETs (image configs).
    pub blobs: AtomicUsize,
    pub retries: AtomicUsize,
    /// Every attempt, by registry host and outcome (the HTTP status, or why there is none).
    pub outcomes: Mutex<BTreeMap<(String, String), usize>>,
    /// What the registries asked to wait for (`429` with `Retry-After`), in milliseconds.
    pub rate_limit_wait_ms: AtomicU64,
    /// Attempts in flight, for the progress line's "waiting … for …".
    pub in_flight: InFlight,
}

/// Attempts in flight: registry host, what is asked, since when; by a number each.
#[derive(Debug, Default)]
pub struct InFlight {
    next: AtomicU64,
    attempts: Mutex<BTreeMap<u64, (String, String, std::time::Instant)>>,
}

/// An attempt in flight, forgotten when dropped.
#[derive(Debug)]
pub struct Flying {
    stats: Arc<Stats>,
    id: u64,
}

impl Drop for Flying {
    fn drop(&mut self) {
        let mut attempts = self
            .stats
            .in_flight
            .attempts
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        attempts.remove(&self.id);
    }
}

/// Waits shorter than this are not shown: most requests take less.
const SHOWN_WAIT: Duration = Duration::from_secs(2);

impl InFlight {
    /// An attempt at `host` for `what` starts.
    pub fn start(stats: &Arc<Stats>, host: &str, what: String) -> Flying {
        let id = stats.in_flight.next.fetch_add(1, Ordering::Relaxed);
        let mut attempts = stats
            .in_flight
            .attempts
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        attempts.insert(id, (host.to_string(), what, std::time::Instant::now()));
        Flying {
            stats: Arc::clone(stats),
            id,
        }
    }

    /// `waiting 12s for registry.example:5000 (tags of acme/web)`: the attempt waited for
    /// longest, when it has waited a while.
    pub fn longest(&self) -> Option<String> {
        let attempts = self.attempts.lock().unwrap_or_else(|p| p.into_inner());
        let (host, what, since) = attempts.values().min_by_key(|(_, _, since)| *since)?;
        let waited = since.elapsed();
        (waited >= SHOWN_WAIT).then(|| {
            let text = format!("waiting {}s for {host} ({what})", waited.as_secs());
            imagebump_model::escape::terminal(&text).into_owned()
        })
    }
}

/// Registry traffic of a run, for operators (metrics, the report).
#[derive(Debug, Clone, Default, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Traffic {
    /// Requests by registry host and outcome: an HTTP status (`200`, `401`, `429`…), or
    /// `timeout`, `connection`, `tls`, `truncated`, `too-large`, `error` without one.
    pub requests: Vec<Outcome>,
    /// Seconds the registries asked the run to wait (rate limits).
    pub rate_limit_wait_seconds: f64,
}

/// Requests to one registry with one outcome.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub registry: String,
    pub outcome: String,
    pub count: usize,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatsSnapshot {
    pub tag_list_pages: usize,
    pub tokens: usize,
    pub manifests: usize,
    pub blobs: usize,
    pub retries: usize,
}

impl Stats {
    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            tag_list_pages: self.tag_pages.load(Ordering::Relaxed),
            tokens: self.tokens.load(Ordering::Relaxed),
            manifests: self.manifests.load(Ordering::Relaxed),
            blobs: self.blobs.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
        }
    }

    /// One more attempt at `registry` ended with `outcome`.
    pub fn count(&self, registry: &str, outcome: String) {
        if let Ok(mut map) = self.outcomes.lock() {
            let n = map.entry((registry.to_string(), outcome)).or_insert(0);
            *n = n.saturating_add(1);
        }
    }

    /// The traffic so far, by registry and outcome.
    pub fn traffic(&self) -> Traffic {
        let requests = self
            .outcomes
            .lock()
            .map(|map| {
                map.iter()
                    .map(|((registry, outcome), count)| Outcome {
                        registry: registry.clone(),
                        outcome: outcome.clone(),
                        count: *count,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let ms = self.rate_limit_wait_ms.load(Ordering::Relaxed);
        Traffic {
            requests,
            // Milliseconds to seconds, for Prometheus' base unit.
            rate_limit_wait_seconds: ms as f64 / 1000.0,
        }
    }
}

/// A registry entry (`#<index>`, or the host for unconfigured ones) and an image's own
/// credentials source: one client each.
type ClientKey = (String, Option<Source>);

/// All registry clients of a run: one per registry entry (or host) and credentials
/// source, sharing one [`gate::Gate`] per registry.
pub struct Registries {
    configs: Vec<RegistryConfig>,
    env: Arc<Environment>,
    gates: Mutex<HashMap<String, Arc<Gate>>>,
    clients: Mutex<HashMap<ClientKey, Arc<Client>>>,
    /// Timeouts and retry numbers of every client's transport.
    http: imagebump_http::Options,
    pub stats: Arc<Stats>,
    /// `--cache-dir`: manifests and configs by digest, kept between runs.
    cache: Option<Arc<cache::DiskCache>>,
    /// Files of Helm repositories read this run (an index, a chart archive), by URL and
    /// credentials: each is asked once, whichever stage wants it first, and a failure is
    /// kept as well as an answer (a broken repository is not asked again).
    files: Mutex<FetchedFiles>,
}

/// A file read this run, or why it could not be.
pub type Fetched = Result<Arc<Vec<u8>>, Error>;

/// Files read this run, by URL and credentials source.
type FetchedFiles = HashMap<(String, Option<String>), Fetched>;

fn default_endpoint(host: &str) -> String {
    if host == DOCKER_HUB {
        "https://registry-1.docker.io".to_string()
    } else {
        format!("https://{host}")
    }
}

/// Does the normalised name `full` fall under `prefix` (on a path-segment boundary)?
fn prefix_matches(prefix: &str, full: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    full == prefix || (full.starts_with(prefix) && full.as_bytes().get(prefix.len()) == Some(&b'/'))
}

/// The registry host a `prefix` names (`docker.io/acme` → `registry-1.docker.io`).
pub fn prefix_host(prefix: &str) -> String {
    let host = prefix.split('/').next().unwrap_or_default();
    match imagebump_model::name::parse_name(&format!("{host}/x")) {
        Ok(n) => n.registry,
        Err(_) => host.to_string(),
    }
}

impl Registries {
    /// Build a client for every configured entry up front, so a bad `caFile` or credentials
    /// source is a configuration error before any work starts.
    pub fn new(configs: Vec<RegistryConfig>) -> Result<Self, Error> {
        Self::with_env(configs, Environment::process())
    }

    /// As [`Registries::new`], with `--request-timeout`.
    pub fn with_request_timeout(
        configs: Vec<RegistryConfig>,
        timeout: Duration,
    ) -> Result<Self, Error> {
        let http = imagebump_http::Options::with_request_timeout(timeout);
        Self::with_http(configs, Environment::process(), http)
    }

    /// As [`Registries::new`], with the environment credentials sources read.
    pub fn with_env(configs: Vec<RegistryConfig>, env: Environment) -> Result<Self, Error> {
        Self::with_http(configs, env, imagebump_http::Options::default())
    }

    /// As [`Registries::with_env`], with other timeouts or retry numbers.
    pub fn with_http(
        configs: Vec<RegistryConfig>,
        env: Environment,
        http: imagebump_http::Options,
    ) -> Result<Self, Error> {
        let registries = Registries {
            configs,
            env: Arc::new(env),
            gates: Mutex::new(HashMap::new()),
            clients: Mutex::new(HashMap::new()),
            http,
            stats: Arc::new(Stats::default()),
            cache: None,
            files: Mutex::new(HashMap::new()),
        };
        for (i, c) in registries.configs.iter().enumerate() {
            let host = prefix_host(&c.prefix);
            registries
                .client(&format!("#{i}"), &host, Some(c), None)
                .and_then(|client| client.preflight().map(|()| client))
                .map_err(|e| {
                    let detail = match e {
                        Error::Config(m) => m,
                        Error::Credentials { reason, .. } => reason,
                        other => other.to_string(),
                    };
                    Error::Config(format!("registries[{i}] (prefix {}): {detail}", c.prefix))
                })?;
        }
        Ok(registries)
    }

    /// Keep manifests and configs fetched by digest in `cache` (`--cache-dir`).
    pub fn with_cache(mut self, cache: Option<cache::DiskCache>) -> Self {
        self.cache = cache.map(Arc::new);
        self
    }

    /// The content-addressed cache of `--cache-dir`, if the run has one.
    pub fn disk_cache(&self) -> Option<Arc<cache::DiskCache>> {
        self.cache.clone()
    }

    /// The client for an image: the first `registries[]` entry whose prefix matches, else a
    /// default client for its host.
    pub fn client_for(&self, image: &ImageName) -> Result<Arc<Client>, Error> {
        self.client_with(image, None)
    }

    /// As [`Registries::client_for`], with an image's own credentials (`Policy::credentials`:
    /// an operator `images` rule's, or a pull secret the operator maps), which beat the
    /// registry entry's.
    pub fn client_with(
        &self,
        image: &ImageName,
        credentials: Option<&str>,
    ) -> Result<Arc<Client>, Error> {
        let matched = self.entry(image);
        let key = match matched {
            Some((i, _)) => format!("#{i}"),
            None => image.registry.clone(),
        };
        let source = credentials
            .map(Source::parse)
            .transpose()
            .map_err(|e| Error::Config(e.to_string()))?;
        self.client(&key, &image.registry, matched.map(|(_, c)| c), source)
    }

    /// The first `registries[]` entry whose prefix matches the image, with its index.
    fn entry(&self, image: &ImageName) -> Option<(usize, &RegistryConfig)> {
        let full = image.to_string();
        self.configs
            .iter()
            .enumerate()
            .find(|(_, c)| prefix_matches(&c.prefix, &full))
    }

    /// The `registries[]` entry that configures the image, if any.
    pub fn entry_for(&self, image: &ImageName) -> Option<&RegistryConfig> {
        self.entry(image).map(|(_, c)| c)
    }

    /// A Helm repository's file already asked for this run with `credentials`: its body,
    /// or the error it gave.
    pub fn fetched(&self, url: &str, credentials: Option<&str>) -> Option<Fetched> {
        let files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        files
            .get(&(url.to_string(), credentials.map(str::to_string)))
            .cloned()
    }

    /// The body of a Helm repository's file read this run with any credentials, if one
    /// read succeeded (for what is shown about a chart, never for what is chosen).
    pub fn fetched_any(&self, url: &str) -> Option<Arc<Vec<u8>>> {
        let files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        let mut found: Vec<(&Option<String>, &Arc<Vec<u8>>)> = files
            .iter()
            .filter(|((u, _), _)| u == url)
            .filter_map(|((_, c), r)| r.as_ref().ok().map(|b| (c, b)))
            .collect();
        // The same answer whatever order the map keeps them in.
        found.sort_by(|a, b| a.0.cmp(b.0));
        found.first().map(|(_, b)| Arc::clone(b))
    }

    /// Keep a Helm repository's file (or the error asking for it gave) for the rest of
    /// the run.
    pub fn keep_fetched(&self, url: &str, credentials: Option<&str>, body: Fetched) {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        files.insert((url.to_string(), credentials.map(str::to_string)), body);
    }

    /// Registries skipped by their circuit breaker during the run: host and why.
    /// Has the registry at `host` answered any request this run (any HTTP status)? A host
    /// never asked has not.
    pub fn heard(&self, host: &str) -> bool {
        let gates = self.gates.lock().unwrap_or_else(|p| p.into_inner());
        gates.values().any(|g| g.host() == host && g.heard())
    }

    pub fn skipped(&self) -> Vec<(String, String)> {
        let gates = self.gates.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<_> = gates
            .values()
            .filter_map(|g| {
                g.skipped()
                    .map(|why| (g.host().to_string(), why.to_string()))
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    fn client(
        &self,
        key: &str,
        host: &str,
        config: Option<&RegistryConfig>,
        source: Option<Source>,
    ) -> Result<Arc<Client>, Error> {
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        let client_key = (key.to_string(), source.clone());
        if let Some(c) = clients.get(&client_key) {
            return Ok(c.clone());
        }
        let gate = {
            let mut gates = self.gates.lock().unwrap_or_else(|p| p.into_inner());
            gates
                .entry(key.to_string())
                .or_insert_with(|| {
                    Arc::new(Gate::new(
                        host,
                        config
                            .and_then(|c| c.concurrency)
                            .unwrap_or(DEFAULT_CONCURRENCY),
                        config.and_then(|c| c.rate_limit),
                    ))
                })
                .clone()
        };
        let client = Arc::new(Client::new(
            host,
            default_endpoint(host),
            config,
            source,
            gate,
            self.env.clone(),
            self.stats.clone(),
            self.http.clone(),
        )?);
        clients.insert(client_key, client.clone());
        Ok(client)
    }
}

/// Concurrent requests to one registry unless `registries[].concurrency` says otherwise.
pub const DEFAULT_CONCURRENCY: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_match_on_segment_boundaries() {
        assert!(prefix_matches("ghcr.io", "ghcr.io/acme/web"));
        assert!(prefix_matches("ghcr.io/acme", "ghcr.io/acme/web"));
        assert!(prefix_matches("ghcr.io/acme/", "ghcr.io/acme/web"));
        assert!(!prefix_matches("ghcr.io/acme", "ghcr.io/acmeco/web"));
        assert!(prefix_matches("ghcr.io/acme/web", "ghcr.io/acme/web"));
    }

    #[test]
    fn read_small_refuses_a_missing_or_oversized_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = read_small(&dir.path().join("nope")).unwrap_err();
        assert!(matches!(missing, ReadError::Io(_)), "{missing:?}");
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; MAX_SETTINGS_FILE_BYTES as usize + 1]).unwrap();
        let e = read_small(&big).unwrap_err();
        assert_eq!(e.to_string(), "larger than 1024 KiB: not read");
        std::fs::write(&big, b"ok").unwrap();
        assert_eq!(read_small(&big).unwrap(), b"ok");
    }
}
