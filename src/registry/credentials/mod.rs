//! Where a registry's credentials come from, and how long they last.
//!
//! A registry entry (or an `images` rule) names a *source* (`env:VAR`, `file:PATH`,
//! `dockerconfig`, `ext:PATH`, `ecr`, `gcp`, `acr`, `github`); the source is asked lazily,
//! the answer is cached until it expires, and a 401 with a cached answer asks again once.
//! Nothing here ever formats a secret: errors and descriptions name the source, the user
//! name and the endpoint only.

pub mod aws;
pub mod azure;
mod error;
mod ext;
pub mod gcp;
mod local;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use base64::Engine;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

pub use error::Error;

/// A user name and password (or token) for one registry.
#[derive(Clone)]
pub struct Credential {
    pub username: String,
    pub password: SecretString,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credential({}, ***)", self.username)
    }
}

impl Credential {
    /// A credential; its password is held by the redactor from now on, so no error or
    /// log line of the run quotes it (whoever printed it: a helper, a server).
    pub fn new(username: impl Into<String>, password: impl Into<String>) -> Credential {
        let password = password.into();
        imagebump_http::hold(&password);
        Credential {
            username: username.into(),
            password: SecretString::from(password),
        }
    }

    pub fn basic_header(&self) -> String {
        let raw = format!("{}:{}", self.username, self.password.expose_secret());
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(raw)
        )
    }

    /// `user:password` as held in an environment variable or a Docker config `auth` field.
    pub fn from_pair(pair: &str) -> Option<Credential> {
        let (u, p) = pair.split_once(':')?;
        if u.is_empty() {
            return None;
        }
        Some(Credential::new(u, p))
    }
}

/// What a source produced: the credential, when it stops being valid (if the source says),
/// and a description of where it came from for `registry check` and logs (never a secret).
#[derive(Debug, Clone)]
pub struct Fetched {
    pub credential: Credential,
    pub expires_at: Option<SystemTime>,
    /// e.g. "AWS web identity (role arn:aws:iam::1:role/x)", "GCP metadata server".
    pub via: String,
}

/// The environment variables a source may read. Captured once from the process, or built
/// from pairs in tests (tests run in parallel threads and must not mutate the process
/// environment).
#[derive(Debug, Clone, Default)]
pub struct Environment {
    vars: HashMap<String, String>,
}

impl Environment {
    pub fn process() -> Environment {
        Environment {
            vars: EnvVars::all().collect(),
        }
    }

    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Environment {
        Environment {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The variable's value; an empty value counts as unset.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

/// What a cloud source needs to fetch a credential.
pub struct Ctx<'a> {
    /// An HTTP client with short timeouts, for metadata and token endpoints.
    pub http: &'a reqwest::Client,
    pub env: &'a Environment,
    /// The registry host as written in image names, e.g.
    /// `123456789012.dkr.ecr.eu-west-1.amazonaws.com`.
    pub host: &'a str,
    /// The URL requests to the registry go to (`registries[].url`, else `https://<host>`).
    pub endpoint: &'a str,
}

/// A request error and its causes (`connection refused`, `operation timed out`) on one line.
/// The URL is left out: callers name the endpoint themselves.
pub(crate) fn http_error(error: reqwest::Error) -> String {
    imagebump_http::error_chain(&error.without_url())
}

/// `: code: description` from an OAuth2 error (`{error, error_description}`, Entra ID and
/// IMDS) or a registry error (`{errors: [{code, message}]}`, ACR), on one line; empty for
/// any other body. None of these fields carries a secret.
pub(crate) fn service_error(body: &[u8]) -> String {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ErrorBody {
        OAuth {
            error: String,
            error_description: Option<String>,
        },
        Registry {
            errors: Vec<RegistryError>,
        },
    }
    #[derive(Deserialize)]
    struct RegistryError {
        code: String,
        message: Option<String>,
    }

    let pairs = match serde_json::from_slice(body) {
        Ok(ErrorBody::OAuth {
            error,
            error_description,
        }) => vec![(error, error_description)],
        Ok(ErrorBody::Registry { errors }) => {
            errors.into_iter().map(|e| (e.code, e.message)).collect()
        }
        Err(_) => Vec::new(),
    };
    let mut text = String::new();
    for (code, description) in pairs {
        text.push_str(": ");
        text.push_str(&code);
        if let Some(description) = description.filter(|d| !d.trim().is_empty()) {
            text.push_str(": ");
            // Entra ID puts trace and correlation IDs on lines of their own.
            text.push_str(&description.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    // A service may echo what it was sent.
    imagebump_http::redact(&text)
}

use imagebump_model::credentials::Source;
use imagebump_model::env::EnvVars;

/// The source used when a registry names none: Docker's configuration if it has an entry
/// for the host, else what the environment offers for the host's cloud, else anonymous.
/// Metadata servers are only asked when configured explicitly, so that public images on
/// gcr.io or an ACR with anonymous pull work on a laptop. The Docker credential found
/// while choosing is returned too, so that it is not looked up (a credential helper run)
/// a second time.
pub fn implicit(host: &str, env: &Environment) -> (Source, Option<Fetched>) {
    if let Some(credential) = local::docker_config(host) {
        let found = Fetched {
            credential,
            expires_at: None,
            via: local::DOCKER_CONFIG_VIA.to_string(),
        };
        return (Source::DockerConfig, Some(found));
    }
    (implicit_cloud(host, env), None)
}

/// [`implicit`] for a host the Docker configuration does not know.
fn implicit_cloud(host: &str, env: &Environment) -> Source {
    if host == "ghcr.io" && env.get(EnvVars::GITHUB_TOKEN).is_some() {
        return Source::GitHub;
    }
    if aws::is_ecr_host(host) {
        return Source::Ecr(None);
    }
    if gcp::is_gcp_host(host) && env.get(EnvVars::GOOGLE_APPLICATION_CREDENTIALS).is_some() {
        return Source::Gcp(None);
    }
    if azure::is_acr_host(host)
        && env.get(EnvVars::AZURE_CLIENT_ID).is_some()
        && (env.get(EnvVars::AZURE_FEDERATED_TOKEN_FILE).is_some()
            || env.get(EnvVars::AZURE_CLIENT_SECRET).is_some())
    {
        return Source::Acr;
    }
    Source::Anonymous
}

/// How long an answer is trusted before the source is asked again, when the source itself
/// says nothing (`credentialsExpire`).
const EXPIRY_MARGIN: Duration = Duration::from_secs(300);

/// A registry's credentials: the source, its cached answer and when to ask again.
pub struct Provider {
    source: Source,
    /// `credentialsExpire`: a lifetime for answers that carry none (scripts, files).
    expire: Option<Duration>,
    /// `credentialsTimeout`: how long a script may run.
    timeout: Duration,
    http: reqwest::Client,
    env: Arc<Environment>,
    host: String,
    endpoint: String,
    cached: tokio::sync::Mutex<Option<Cached>>,
    /// Bumped whenever a new answer is fetched; a refresh names the generation it found
    /// wanting, so concurrent 401s refresh once.
    generation: AtomicU64,
    fetches: AtomicU64,
}

struct Cached {
    answer: Result<Option<Fetched>, Error>,
    until: Option<Instant>,
    generation: u64,
}

/// The credential a request used, and which answer it came from.
#[derive(Clone)]
pub struct InUse {
    pub credential: Option<Credential>,
    generation: u64,
}

pub struct ProviderOptions {
    pub expire: Option<Duration>,
    pub timeout: Duration,
}

impl Default for ProviderOptions {
    fn default() -> Self {
        ProviderOptions {
            expire: None,
            timeout: ext::DEFAULT_TIMEOUT,
        }
    }
}

impl Provider {
    /// A provider for `source`; `seed` is an answer already in hand (see
    /// [`implicit`]).
    pub fn new(
        source: Source,
        options: ProviderOptions,
        http: reqwest::Client,
        env: Arc<Environment>,
        host: &str,
        endpoint: &str,
        seed: Option<Fetched>,
    ) -> Provider {
        let mut provider = Provider {
            source,
            expire: options.expire,
            timeout: options.timeout,
            http,
            env,
            host: host.to_string(),
            endpoint: endpoint.to_string(),
            cached: tokio::sync::Mutex::new(None),
            generation: AtomicU64::new(0),
            fetches: AtomicU64::new(0),
        };
        if let Some(fetched) = seed {
            let until = provider.lifetime(Some(&fetched));
            let generation = provider
                .generation
                .fetch_add(1, Ordering::Relaxed)
                .wrapping_add(1);
            provider.cached = tokio::sync::Mutex::new(Some(Cached {
                answer: Ok(Some(fetched)),
                until,
                generation,
            }));
        }
        provider
    }

    pub fn source(&self) -> &Source {
        &self.source
    }

    /// How many times the source has been asked (tests and `registry check`).
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// Check what can be checked without a network or a program run: a variable that is
    /// not set, a file that is not there. Run before any work starts.
    pub fn preflight(&self) -> Result<(), Error> {
        match &self.source {
            Source::Env(_) | Source::File(_) => {
                local::fetch(&self.source, &self.host, &self.env).map(|_| ())
            }
            Source::Ext(p) => ext::check(p),
            Source::Gcp(Some(p)) if !p.is_file() => Err(Error::file(
                p,
                gcp::KEY_FILE_HOLDS,
                format!("credentials gcp:{}: no such file", p.display()),
            )),
            _ => Ok(()),
        }
    }

    /// The current credential (none for anonymous access), asking the source if there is
    /// no answer yet or the answer expired. A failure is remembered too: a source that
    /// cannot answer is asked once per run, not once per request.
    pub async fn get(&self) -> Result<InUse, Error> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref() {
            if c.until.is_none_or(|u| Instant::now() < u) {
                return c.answer.clone().map(|fetched| InUse {
                    credential: fetched.map(|f| f.credential),
                    generation: c.generation,
                });
            }
            tracing::debug!(registry = %self.host, source = %self.source.describe(), "credentials expired; asking again");
        }
        let answer = self.fetch().await;
        let until = match &answer {
            Ok(fetched) => self.lifetime(fetched.as_ref()),
            Err(_) => None,
        };
        // Wraps as the atomic counter itself does.
        let generation = self
            .generation
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1);
        *cached = Some(Cached {
            answer: answer.clone(),
            until,
            generation,
        });
        answer.map(|fetched| InUse {
            credential: fetched.map(|f| f.credential),
            generation,
        })
    }

    /// A registry refused `used`: forget it so the next [`Provider::get`] asks the source
    /// again. Returns false when asking again cannot help (a fixed source, no credential).
    pub async fn refresh(&self, used: &InUse) -> bool {
        if used.credential.is_none() || !self.source.refreshable() {
            return false;
        }
        let mut cached = self.cached.lock().await;
        if cached
            .as_ref()
            .is_some_and(|c| c.generation == used.generation)
        {
            tracing::info!(registry = %self.host, source = %self.source.describe(), "credentials refused; asking the source again");
            *cached = None;
        }
        true
    }

    /// Where the current answer came from (`registry check`), never the secret.
    pub async fn describe_current(&self) -> String {
        let cached = self.cached.lock().await;
        match cached.as_ref().map(|c| &c.answer) {
            _ if self.source == Source::Anonymous => "anonymous".into(),
            Some(Ok(Some(f))) => format!(
                "{} ({}, user {})",
                self.source.describe(),
                f.via,
                f.credential.username
            ),
            Some(Ok(None)) => format!(
                "{} (no entry for this host: anonymous)",
                self.source.describe()
            ),
            Some(Err(_)) | None => self.source.describe(),
        }
    }

    fn lifetime(&self, fetched: Option<&Fetched>) -> Option<Instant> {
        let from_source = fetched.and_then(|f| f.expires_at).map(|at| {
            let left = at
                .duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO);
            // Refresh a little early, but never turn a short-lived token into no token.
            let margin = EXPIRY_MARGIN.min(left.checked_div(10).unwrap_or_default());
            // A source's far-future expiry (`u64::MAX` seconds) is "until the run ends",
            // not a clock overflow.
            Instant::now().checked_add(left.saturating_sub(margin))
        });
        let from_source = from_source.flatten();
        let configured = self.expire.and_then(|d| Instant::now().checked_add(d));
        match (from_source, configured) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    async fn fetch(&self) -> Result<Option<Fetched>, Error> {
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let ctx = Ctx {
            http: &self.http,
            env: &self.env,
            host: &self.host,
            endpoint: &self.endpoint,
        };
        let asked = async {
            Ok(match &self.source {
                Source::Anonymous => None,
                Source::Env(_) | Source::File(_) | Source::DockerConfig | Source::GitHub => {
                    local::fetch(&self.source, &self.host, &self.env)?
                }
                Source::Ext(path) => Some(ext::run(path, &self.host, self.timeout).await?),
                Source::Ecr(region) => Some(aws::fetch(&ctx, region.as_deref()).await?),
                Source::Gcp(key) => Some(gcp::fetch(&ctx, key.as_deref()).await?),
                Source::Acr => Some(azure::fetch(&ctx).await?),
            })
        };
        // Every source's failure is quoted to the user: whatever a helper, a file or a
        // cloud service said passes the redactor first.
        let fetched = asked.await.map_err(Error::redacted)?;
        if let Some(f) = &fetched {
            tracing::debug!(registry = %self.host, source = %self.source.describe(), via = %f.via, user = %f.credential.username, "credentials fetched");
        }
        Ok(fetched)
    }
}

/// Test helpers shared by the cloud sources' tests.
#[cfg(test)]
pub(crate) mod test_support {
    use wiremock::Request;

    /// A loopback port nothing listens on (bound, read, released).
    pub fn closed_port() -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    }

    /// Matches a form-encoded body holding exactly these fields, in any order.
    pub struct FormIs(Vec<(String, String)>);

    impl wiremock::Match for FormIs {
        fn matches(&self, request: &Request) -> bool {
            let is_form = request
                .headers
                .get("content-type")
                .is_some_and(|v| v == "application/x-www-form-urlencoded");
            let mut fields: Vec<(String, String)> =
                form_urlencoded::parse(&request.body).into_owned().collect();
            fields.sort();
            is_form && fields == self.0
        }
    }

    pub fn form_is(fields: &[(&str, &str)]) -> FormIs {
        let mut fields: Vec<_> = fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        fields.sort();
        FormIs(fields)
    }
}
