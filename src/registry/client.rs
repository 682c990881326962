//! The HTTP side of one registry: auth handshake, retries, paging, size caps.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{
    HeaderMap, ACCEPT, AUTHORIZATION, CONTENT_TYPE, LINK, RETRY_AFTER, WWW_AUTHENTICATE,
};
use reqwest::{Method, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::Mutex;

use super::auth::{self, Challenge};
use super::credentials::{Credential, Environment, InUse, Provider, ProviderOptions, Source};
use super::gate::Gate;
use super::manifest::{
    digest_matches, parse_config, parse_manifest, sha256_digest, ImageConfig, Manifest,
};
use super::{Error, Stats};
use imagebump_model::config::RegistryConfig;
use imagebump_model::name::{is_valid_digest, is_valid_tag};

const MAX_ATTEMPTS: u32 = 4;
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);
const DEADLINE: Duration = Duration::from_secs(120);
const TAG_LIST_LIMIT: usize = 32 * 1024 * 1024;
const TOKEN_LIMIT: usize = 1024 * 1024;
const MAX_PAGES: usize = 10_000;
const PAGE_SIZE: usize = 1000;
const MANIFEST_LIMIT: usize = 4 * 1024 * 1024;
const CONFIG_LIMIT: usize = 4 * 1024 * 1024;

pub const MANIFEST_TYPES: &str = "application/vnd.oci.image.index.v1+json, \
application/vnd.docker.distribution.manifest.list.v2+json, \
application/vnd.oci.image.manifest.v1+json, \
application/vnd.docker.distribution.manifest.v2+json";

/// What the registry told us about authentication.
#[derive(Debug, Clone)]
enum Scheme {
    Unknown,
    Basic,
    Bearer {
        realm: String,
        service: Option<String>,
    },
}

struct AuthState {
    scheme: Scheme,
    /// Bearer tokens per scope: the token, when to renew it, and the credentials it was
    /// obtained with (so that a refusal refreshes exactly those).
    tokens: HashMap<String, (SecretString, Instant, InUse)>,
}

/// A repository's tags, with the names the registry sent that are not valid tags.
#[derive(Debug, Clone, Default)]
pub struct TagList {
    pub tags: Vec<String>,
    pub invalid: Vec<String>,
}

pub struct Client {
    http: reqwest::Client,
    pub host: String,
    pub endpoint: String,
    credentials: Provider,
    auth: Mutex<AuthState>,
    gate: Arc<Gate>,
    stats: Arc<Stats>,
}

impl Client {
    /// A client for `host`, configured by its `registries[]` entry if any. `source` (an
    /// image's own credentials) beats the entry's `credentials`; with neither, the source
    /// is chosen from the host and the environment ([`credentials::implicit`](super::credentials::implicit)).
    pub fn new(
        host: &str,
        default_endpoint: String,
        config: Option<&RegistryConfig>,
        source: Option<Source>,
        gate: Arc<Gate>,
        env: Arc<Environment>,
        stats: Arc<Stats>,
    ) -> Result<Client, Error> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .user_agent(concat!("imagebump/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::limited(5));
        let mut endpoint = default_endpoint;
        let mut options = ProviderOptions::default();
        let mut configured = None;
        if let Some(c) = config {
            if let Some(url) = &c.url {
                endpoint = url.trim_end_matches('/').to_string();
            }
            if c.insecure {
                // `insecure` wins: a preconfigured TLS set-up would ignore it.
                builder = builder.danger_accept_invalid_certs(true);
            } else if let Some(ca) = &c.ca_file {
                let pem = std::fs::read(ca)
                    .map_err(|e| Error::Config(format!("caFile {}: {e}", ca.display())))?;
                let tls = super::tls::client_config(&pem)
                    .map_err(|e| Error::Config(format!("caFile {}: {e}", ca.display())))?;
                builder = builder.use_preconfigured_tls(tls);
            }
            if let Some(spec) = &c.credentials {
                configured = Some(Source::parse(spec).map_err(Error::Config)?);
            }
            options.expire = c.credentials_expire().map_err(Error::Config)?;
            if let Some(t) = c.credentials_timeout().map_err(Error::Config)? {
                options.timeout = t;
            }
        }
        let http = builder
            .build()
            .map_err(|e| Error::Config(format!("HTTP client: {e}")))?;
        let (source, seed) = match source.or(configured) {
            Some(s) => (s, None),
            None => super::credentials::implicit(host, &env),
        };
        let credentials = Provider::new(source, options, http.clone(), env, host, &endpoint, seed);
        Ok(Client {
            http,
            host: host.to_string(),
            endpoint,
            credentials,
            auth: Mutex::new(AuthState {
                scheme: Scheme::Unknown,
                tokens: HashMap::new(),
            }),
            gate,
            stats,
        })
    }

    /// What can be checked before any request: the credentials source is usable.
    pub fn preflight(&self) -> Result<(), Error> {
        self.credentials
            .preflight()
            .map_err(|reason| Error::Credentials {
                host: self.host.clone(),
                reason,
            })
    }

    pub fn credentials(&self) -> &Provider {
        &self.credentials
    }

    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// Every tag of `repo`, following `Link: <…>; rel="next"` until there is none.
    pub async fn list_tags(&self, repo: &str) -> Result<TagList, Error> {
        let scope = format!("repository:{repo}:pull");
        let mut url = format!("{}/v2/{repo}/tags/list?n={PAGE_SIZE}", self.endpoint);
        let mut out = TagList::default();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..MAX_PAGES {
            if !seen.insert(url.clone()) {
                return Err(Error::Invalid {
                    url,
                    reason: "pagination loops back to a page already read".into(),
                });
            }
            self.stats.tag_pages.fetch_add(1, Ordering::Relaxed);
            let (headers, body) = self
                .request(
                    Method::GET,
                    &url,
                    &scope,
                    "application/json",
                    TAG_LIST_LIMIT,
                )
                .await?;
            for t in tag_page(&url, &body)? {
                if is_valid_tag(&t) {
                    out.tags.push(t);
                } else {
                    out.invalid.push(t);
                }
            }
            match next_link(&headers, &self.endpoint) {
                Some(next) => url = next,
                None => return Ok(out),
            }
        }
        Err(Error::Invalid {
            url,
            reason: format!("more than {MAX_PAGES} pages of tags"),
        })
    }

    /// The digest of `reference` (a tag), by a HEAD request (not counted as a pull by
    /// Docker Hub), falling back to hashing the manifest when the header is missing.
    pub async fn manifest_digest(&self, repo: &str, reference: &str) -> Result<String, Error> {
        let scope = format!("repository:{repo}:pull");
        let url = format!("{}/v2/{repo}/manifests/{reference}", self.endpoint);
        self.stats.manifests.fetch_add(1, Ordering::Relaxed);
        let (headers, _) = self
            .request(Method::HEAD, &url, &scope, MANIFEST_TYPES, 0)
            .await?;
        if let Some(d) = headers
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .filter(|d| is_valid_digest(d))
        {
            return Ok(d.to_string());
        }
        self.stats.manifests.fetch_add(1, Ordering::Relaxed);
        let (_, body) = self
            .request(Method::GET, &url, &scope, MANIFEST_TYPES, 4 * 1024 * 1024)
            .await?;
        use sha2::Digest;
        Ok(format!("sha256:{:x}", sha2::Sha256::digest(&body)))
    }

    /// GET a manifest by tag or digest: its digest and parsed content. One request (plus
    /// auth). The digest is the validated `Docker-Content-Digest` header, else the SHA-256 of
    /// the body; when `reference` is a digest, the body must hash to it.
    pub async fn manifest(&self, repo: &str, reference: &str) -> Result<(String, Manifest), Error> {
        let scope = format!("repository:{repo}:pull");
        let url = format!("{}/v2/{repo}/manifests/{reference}", self.endpoint);
        let by_digest = is_valid_digest(reference);
        if !by_digest && !is_valid_tag(reference) {
            return Err(Error::Invalid {
                url,
                reason: format!("{reference:?} is neither a tag nor a digest"),
            });
        }
        self.stats.manifests.fetch_add(1, Ordering::Relaxed);
        let (headers, body) = self
            .request(Method::GET, &url, &scope, MANIFEST_TYPES, MANIFEST_LIMIT)
            .await?;
        let invalid = |reason: String| Error::Invalid {
            url: url.clone(),
            reason,
        };
        let digest = if by_digest {
            match digest_matches(reference, &body) {
                Some(true) => reference.to_string(),
                Some(false) => {
                    return Err(invalid(format!(
                        "manifest of {repo} does not match the requested digest {reference} (it hashes to {})",
                        sha256_digest(&body)
                    )))
                }
                None => {
                    return Err(invalid(format!(
                        "cannot verify {reference}: unsupported digest algorithm"
                    )))
                }
            }
        } else {
            let header = headers
                .get("docker-content-digest")
                .and_then(|v| v.to_str().ok())
                .filter(|d| is_valid_digest(d));
            match header.map(|d| (d, digest_matches(d, &body))) {
                Some((d, Some(true))) => d.to_string(),
                Some((d, Some(false))) => {
                    return Err(invalid(format!(
                        "Docker-Content-Digest {d} does not match the manifest of {repo}:{reference} (it hashes to {})",
                        sha256_digest(&body)
                    )))
                }
                // No header, or an algorithm we cannot check: our own hash.
                Some((_, None)) | None => sha256_digest(&body),
            }
        };
        let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok());
        let manifest = parse_manifest(content_type, &body)
            .map_err(|e| invalid(format!("manifest of {repo}:{reference}: {e}")))?;
        Ok((digest, manifest))
    }

    /// GET a config blob by digest, verify its digest, parse it. Registries often answer with
    /// a redirect to storage on another host; reqwest drops `Authorization` on a redirect to
    /// another host or port, so the registry's credentials do not follow it.
    pub async fn image_config(&self, repo: &str, digest: &str) -> Result<ImageConfig, Error> {
        let scope = format!("repository:{repo}:pull");
        let url = format!("{}/v2/{repo}/blobs/{digest}", self.endpoint);
        if !is_valid_digest(digest) {
            return Err(Error::Invalid {
                url,
                reason: format!("{digest:?} is not a digest"),
            });
        }
        self.stats.blobs.fetch_add(1, Ordering::Relaxed);
        let (_, body) = self
            .request(Method::GET, &url, &scope, "*/*", CONFIG_LIMIT)
            .await?;
        let invalid = |reason: String| Error::Invalid {
            url: url.clone(),
            reason,
        };
        match digest_matches(digest, &body) {
            Some(true) => {}
            Some(false) => {
                return Err(invalid(format!(
                    "blob {digest} of {repo} does not match its digest (it hashes to {})",
                    sha256_digest(&body)
                )))
            }
            None => {
                return Err(invalid(format!(
                    "cannot verify blob {digest} of {repo}: unsupported digest algorithm"
                )))
            }
        }
        parse_config(&body).map_err(|e| invalid(format!("config {digest} of {repo}: {e}")))
    }

    /// `GET /v2/`, authenticated as a real request would be (with a token for `repo` when
    /// one is named): does the registry accept our credentials? Returns how it asked.
    pub async fn probe(&self, repo: Option<&str>) -> Result<&'static str, Error> {
        let scope = repo
            .map(|r| format!("repository:{r}:pull"))
            .unwrap_or_default();
        let url = format!("{}/v2/", self.endpoint);
        self.request(Method::GET, &url, &scope, "application/json", TOKEN_LIMIT)
            .await?;
        Ok(match self.auth.lock().await.scheme {
            Scheme::Unknown => "no authentication asked",
            Scheme::Basic => "Basic",
            Scheme::Bearer { .. } => "Bearer token",
        })
    }

    /// The first page of `repo`'s tags (at most `n`): can we read it?
    pub async fn first_tags(&self, repo: &str, n: usize) -> Result<Vec<String>, Error> {
        let scope = format!("repository:{repo}:pull");
        let url = format!("{}/v2/{repo}/tags/list?n={n}", self.endpoint);
        let (_, body) = self
            .request(
                Method::GET,
                &url,
                &scope,
                "application/json",
                TAG_LIST_LIMIT,
            )
            .await?;
        tag_page(&url, &body)
    }

    /// One logical request: authenticated, retried, size-capped, through the registry's
    /// gate (concurrency, rate, pause after 429, circuit breaker).
    async fn request(
        &self,
        method: Method,
        url: &str,
        scope: &str,
        accept: &str,
        limit: usize,
    ) -> Result<(HeaderMap, Vec<u8>), Error> {
        self.request_inner(method, url, scope, accept, limit).await
    }

    async fn request_inner(
        &self,
        method: Method,
        url: &str,
        scope: &str,
        accept: &str,
        limit: usize,
    ) -> Result<(HeaderMap, Vec<u8>), Error> {
        // Docker Hub counts manifest GETs as pulls; HEADs and tag lists are free.
        let counts_as_pull = method == Method::GET && url.contains("/manifests/");
        let started = Instant::now();
        let mut attempt = 0;
        let mut learned = false;
        let mut refreshed = false;
        loop {
            attempt += 1;
            // The credentials behind this attempt's Authorization header, if any.
            let mut used = None;
            let result = {
                let _permit = self.gate.enter(counts_as_pull).await?;
                let result = self
                    .attempt(method.clone(), url, scope, accept, limit, &mut used)
                    .await;
                // Recorded before the slot is released, so that the next attempt already
                // sees an opened breaker.
                self.gate.record(&result);
                result
            };
            let refused = match &result {
                Ok(Attempt::Challenge(_)) => learned,
                Err(Error::Unauthorized { status: 401, .. }) => true,
                _ => false,
            };
            if refused && !refreshed {
                // Credentials were sent and refused: ask their source again, once.
                refreshed = true;
                if self.refresh(scope, used.as_ref()).await {
                    attempt -= 1;
                    continue;
                }
            }
            match result {
                Ok(Attempt::Done(h, b)) => return Ok((h, b)),
                Ok(Attempt::Challenge(challenge)) if !learned => {
                    learned = true;
                    self.learn(challenge, scope, url).await?;
                    attempt -= 1;
                }
                Ok(Attempt::Challenge(_)) => {
                    return Err(Error::Unauthorized {
                        url: url.to_string(),
                        status: 401,
                    })
                }
                Err(e)
                    if e.is_retryable()
                        && attempt < MAX_ATTEMPTS
                        && started.elapsed() < DEADLINE =>
                {
                    let wait = match &e {
                        Error::RateLimited {
                            retry_after: Some(d),
                            ..
                        } => {
                            let d = (*d).min(MAX_RETRY_AFTER);
                            // The whole registry waits, not just this request.
                            self.gate.pause(d);
                            d
                        }
                        _ => backoff(attempt),
                    };
                    tracing::debug!(%url, error = %e, wait_ms = wait.as_millis() as u64, "retrying");
                    self.stats.retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(wait).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The registry refused our credentials: drop tokens obtained with them and ask the
    /// source for fresh ones. False when that cannot help (none sent, a fixed source).
    async fn refresh(&self, scope: &str, used: Option<&InUse>) -> bool {
        let Some(used) = used else {
            return false;
        };
        if !self.credentials.refresh(used).await {
            return false;
        }
        self.auth.lock().await.tokens.remove(scope);
        true
    }

    async fn in_use(&self) -> Result<InUse, Error> {
        self.credentials
            .get()
            .await
            .map_err(|reason| Error::Credentials {
                host: self.host.clone(),
                reason,
            })
    }

    async fn credential(&self) -> Result<Option<Credential>, Error> {
        self.in_use().await.map(|used| used.credential)
    }

    async fn attempt(
        &self,
        method: Method,
        url: &str,
        scope: &str,
        accept: &str,
        limit: usize,
        used: &mut Option<InUse>,
    ) -> Result<Attempt, Error> {
        let mut req = self
            .http
            .request(method.clone(), url)
            .header(ACCEPT, accept);
        // Credentials go only to the registry's own origin, never to a host a `Link` names.
        if origin(url) == origin(&self.endpoint) {
            if let Some(h) = self.auth_header(scope, used).await? {
                req = req.header(AUTHORIZATION, h);
            }
        }
        let resp = req.send().await.map_err(|e| transport(url, &e))?;
        let status = resp.status();
        let headers = resp.headers().clone();
        self.gate.observe(&headers);
        match status {
            s if s.is_success() => {
                let body = if method == Method::HEAD {
                    Vec::new()
                } else {
                    read_capped(resp, url, limit).await?
                };
                Ok(Attempt::Done(headers, body))
            }
            StatusCode::UNAUTHORIZED => {
                let challenge = headers
                    .get(WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .and_then(auth::parse_challenge);
                match challenge {
                    Some(c) => Ok(Attempt::Challenge(c)),
                    None => Err(Error::Unauthorized {
                        url: url.to_string(),
                        status: 401,
                    }),
                }
            }
            StatusCode::FORBIDDEN => Err(Error::Unauthorized {
                url: url.to_string(),
                status: 403,
            }),
            StatusCode::NOT_FOUND => Err(Error::NotFound {
                url: url.to_string(),
            }),
            StatusCode::TOO_MANY_REQUESTS => Err(Error::RateLimited {
                url: url.to_string(),
                retry_after: headers
                    .get(RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(parse_retry_after),
            }),
            s if s.is_server_error() => Err(Error::Server {
                url: url.to_string(),
                status: s.as_u16(),
            }),
            s => Err(Error::Status {
                url: url.to_string(),
                status: s.as_u16(),
            }),
        }
    }

    /// The `Authorization` header for a request, and in `used` the credentials behind it.
    async fn auth_header(
        &self,
        scope: &str,
        used: &mut Option<InUse>,
    ) -> Result<Option<String>, Error> {
        let scheme = self.auth.lock().await.scheme.clone();
        match scheme {
            Scheme::Unknown => Ok(None),
            Scheme::Basic => {
                let current = self.in_use().await?;
                let header = current.credential.as_ref().map(Credential::basic_header);
                *used = Some(current);
                Ok(header)
            }
            Scheme::Bearer { realm, service } => {
                let token = self.token(&realm, service.as_deref(), scope, used).await?;
                Ok(Some(format!("Bearer {}", token.expose_secret())))
            }
        }
    }

    /// React to a 401 challenge: remember the scheme, drop a stale token.
    async fn learn(&self, challenge: Challenge, scope: &str, url: &str) -> Result<(), Error> {
        match challenge {
            Challenge::Basic => {
                if self.credential().await?.is_none() {
                    return Err(Error::Unauthorized {
                        url: url.to_string(),
                        status: 401,
                    });
                }
                self.auth.lock().await.scheme = Scheme::Basic;
            }
            Challenge::Bearer { realm, service } => {
                let mut state = self.auth.lock().await;
                state.tokens.remove(scope);
                state.scheme = Scheme::Bearer { realm, service };
            }
        }
        Ok(())
    }

    async fn token(
        &self,
        realm: &str,
        service: Option<&str>,
        scope: &str,
        used: &mut Option<InUse>,
    ) -> Result<SecretString, Error> {
        if let Some((t, expires, with)) = self.auth.lock().await.tokens.get(scope) {
            if Instant::now() < *expires {
                *used = Some(with.clone());
                return Ok(t.clone());
            }
        }
        let mut url = reqwest::Url::parse(realm).map_err(|e| Error::Invalid {
            url: realm.to_string(),
            reason: format!("bad token realm: {e}"),
        })?;
        {
            let mut q = url.query_pairs_mut();
            if let Some(s) = service {
                q.append_pair("service", s);
            }
            // No scope: a token for the registry itself (`registry check` of a prefix).
            if !scope.is_empty() {
                q.append_pair("scope", scope);
            }
        }
        let url_s = url.to_string();
        let mut req = self.http.get(url);
        let current = self.in_use().await?;
        if let Some(c) = &current.credential {
            req = req.header(AUTHORIZATION, c.basic_header());
        }
        *used = Some(current.clone());
        self.stats.tokens.fetch_add(1, Ordering::Relaxed);
        let resp = req.send().await.map_err(|e| transport(&url_s, &e))?;
        let status = resp.status();
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(Error::Unauthorized {
                url: url_s,
                status: status.as_u16(),
            });
        }
        if status == StatusCode::TOO_MANY_REQUESTS {
            return Err(Error::RateLimited {
                url: url_s,
                retry_after: None,
            });
        }
        if status.is_server_error() {
            return Err(Error::Server {
                url: url_s,
                status: status.as_u16(),
            });
        }
        if !status.is_success() {
            return Err(Error::Status {
                url: url_s,
                status: status.as_u16(),
            });
        }
        let body = read_capped(resp, &url_s, TOKEN_LIMIT).await?;
        #[derive(serde::Deserialize)]
        struct TokenResponse {
            token: Option<String>,
            access_token: Option<String>,
            expires_in: Option<u64>,
        }
        let parsed: TokenResponse = serde_json::from_slice(&body).map_err(|e| Error::Invalid {
            url: url_s.clone(),
            reason: format!("token response: {e}"),
        })?;
        let token = parsed
            .token
            .or(parsed.access_token)
            .ok_or_else(|| Error::Invalid {
                url: url_s.clone(),
                reason: "token response has no token".into(),
            })?;
        // Renew a little early; the registry's minimum is 60 s.
        let lifetime = Duration::from_secs(parsed.expires_in.unwrap_or(60).max(60) - 10);
        let secret = SecretString::from(token);
        self.auth.lock().await.tokens.insert(
            scope.to_string(),
            (secret.clone(), Instant::now() + lifetime, current),
        );
        Ok(secret)
    }
}

/// The tags of one `tags/list` page (`"tags": null` is an empty page).
fn tag_page(url: &str, body: &[u8]) -> Result<Vec<String>, Error> {
    #[derive(serde::Deserialize)]
    struct Page {
        tags: Option<Vec<String>>,
    }
    let page: Page = serde_json::from_slice(body).map_err(|e| Error::Invalid {
        url: url.to_string(),
        reason: format!("tag list is not valid JSON: {e}"),
    })?;
    Ok(page.tags.unwrap_or_default())
}

enum Attempt {
    Done(HeaderMap, Vec<u8>),
    Challenge(Challenge),
}

fn transport(url: &str, e: &reqwest::Error) -> Error {
    let mut reason = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        reason = format!("{reason}: {s}");
        source = s.source();
    }
    // A certificate or protocol failure will fail the same way next time.
    let permanent =
        reason.contains("certificate") || reason.contains("InvalidContentType") || e.is_builder();
    Error::Transport {
        url: url.to_string(),
        reason,
        retryable: !permanent,
    }
}

async fn read_capped(
    mut resp: reqwest::Response,
    url: &str,
    limit: usize,
) -> Result<Vec<u8>, Error> {
    if resp.content_length().is_some_and(|n| n as usize > limit) {
        return Err(Error::TooLarge {
            url: url.to_string(),
            limit,
        });
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| transport(url, &e))? {
        if body.len() + chunk.len() > limit {
            return Err(Error::TooLarge {
                url: url.to_string(),
                limit,
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Exponential backoff with jitter: between half and all of 200 ms × 2^attempt, at most 5 s.
fn backoff(attempt: u32) -> Duration {
    let ceiling = (200u64 << attempt.min(5)).min(5_000);
    Duration::from_millis(fastrand::u64(ceiling / 2..=ceiling))
}

/// `Retry-After`: seconds or an HTTP date.
fn parse_retry_after(v: &str) -> Option<Duration> {
    if let Ok(secs) = v.trim().parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(v.trim()).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &str) -> &str {
    match url
        .find("://")
        .and_then(|i| url[i + 3..].find('/').map(|j| i + 3 + j))
    {
        Some(end) => &url[..end],
        None => url,
    }
}

/// The `rel="next"` target of a `Link` header, made absolute against the endpoint.
fn next_link(headers: &HeaderMap, endpoint: &str) -> Option<String> {
    for value in headers.get_all(LINK) {
        let Ok(value) = value.to_str() else { continue };
        for part in value.split(',') {
            let Some((target, params)) = part.split_once(';') else {
                continue;
            };
            if !params.split(';').any(|p| {
                let p = p.trim().to_ascii_lowercase();
                p == "rel=\"next\"" || p == "rel=next"
            }) {
                continue;
            }
            let target = target.trim().trim_start_matches('<').trim_end_matches('>');
            if target.starts_with("http://") || target.starts_with("https://") {
                return Some(target.to_string());
            }
            return Some(format!(
                "{}{}",
                origin(endpoint),
                if target.starts_with('/') {
                    target.to_string()
                } else {
                    format!("/{target}")
                }
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_headers() {
        let mut h = HeaderMap::new();
        h.insert(
            LINK,
            "</v2/a/tags/list?last=x&n=2>; rel=\"next\""
                .parse()
                .unwrap(),
        );
        assert_eq!(
            next_link(&h, "http://127.0.0.1:5000").unwrap(),
            "http://127.0.0.1:5000/v2/a/tags/list?last=x&n=2"
        );
        h.insert(
            LINK,
            "<https://r.example/v2/a/tags/list?last=y>; rel=next"
                .parse()
                .unwrap(),
        );
        assert_eq!(
            next_link(&h, "http://x").unwrap(),
            "https://r.example/v2/a/tags/list?last=y"
        );
        assert_eq!(next_link(&HeaderMap::new(), "http://x"), None);
    }

    #[test]
    fn retry_after() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
    }

    #[test]
    fn backoff_is_bounded() {
        for a in 1..10 {
            assert!(backoff(a) <= Duration::from_secs(5));
        }
    }
}
