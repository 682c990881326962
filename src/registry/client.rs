//! The HTTP side of one registry: auth handshake, retries, paging, size caps.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use imagebump_http::header::{
    HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE,
};
use imagebump_http::{
    Dialect, Method, Options, Request, Response, Slot, StatusCode, Transport, Url,
};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::Mutex;

use super::auth::{self, Challenge};
use super::credentials::{Credential, Environment, InUse, Provider, ProviderOptions};
use super::gate::Gate;
use super::manifest::{
    digest_matches, parse_config, parse_manifest, sha256_digest, ImageConfig, Manifest,
};
use super::{Error, Stats};
use imagebump_model::config::RegistryConfig;
use imagebump_model::credentials::Source;
use imagebump_model::name::{is_sha256_digest, is_valid_digest, is_valid_tag};

/// A repository's tag list, all pages together: bytes read and tags kept. A million tags
/// (a legitimate, if extreme, repository) fit; an endless or bloated listing stops here.
const TAG_LIST_LIMIT: usize = 32 * 1024 * 1024;
pub const MAX_TAGS: usize = 1_000_000;
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

impl TagList {
    /// A page's names, sorted into valid tags and the rest; the first page is kept as it
    /// came (no second vector of a million names).
    fn add(&mut self, mut page: Vec<String>) {
        self.invalid
            .extend(page.iter().filter(|t| !is_valid_tag(t)).cloned());
        page.retain(|t| is_valid_tag(t));
        if self.tags.is_empty() {
            self.tags = page;
        } else {
            self.tags.append(&mut page);
        }
    }
}

/// A manifest as fetched: its verified digest, the response's media type and the bytes.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The URL it was fetched from, for messages.
    pub url: String,
    pub digest: String,
    pub media_type: Option<String>,
    pub body: Vec<u8>,
}

impl Fetched {
    /// The manifest these bytes hold (`repo` and `reference` name it in messages).
    pub fn parse(&self, repo: &str, reference: &str) -> Result<Manifest, Error> {
        parse_manifest(self.media_type.as_deref(), &self.body).map_err(|e| Error::Invalid {
            url: self.url.clone(),
            reason: format!("manifest of {repo}:{reference}: {e}"),
        })
    }
}

pub struct Client {
    transport: Transport,
    pub host: String,
    pub endpoint: String,
    credentials: Provider,
    /// The operator marked the registry `insecure`: plain HTTP may carry its credentials.
    insecure: bool,
    auth: Mutex<AuthState>,
    gate: Arc<Gate>,
    stats: Arc<Stats>,
}

impl Client {
    /// A client for `host`, configured by its `registries[]` entry if any. `source` (an
    /// image's own credentials) beats the entry's `credentials`; with neither, the source
    /// is chosen from the host and the environment ([`credentials::implicit`](super::credentials::implicit)).
    #[allow(clippy::too_many_arguments)] // Each is a separate concern the caller owns.
    pub fn new(
        host: &str,
        default_endpoint: String,
        config: Option<&RegistryConfig>,
        source: Option<Source>,
        gate: Arc<Gate>,
        env: Arc<Environment>,
        stats: Arc<Stats>,
        mut options: Options,
    ) -> Result<Client, Error> {
        let mut endpoint = default_endpoint;
        let mut provider = ProviderOptions::default();
        let mut configured = None;
        if let Some(c) = config {
            if let Some(url) = &c.url {
                endpoint = url.trim_end_matches('/').to_string();
            }
            // `insecure` wins: a preconfigured TLS set-up would ignore it.
            options.insecure = c.insecure;
            if let (false, Some(ca)) = (c.insecure, &c.ca_file) {
                let pem = super::read_small(ca)
                    .map_err(|e| Error::Config(format!("caFile {}: {e}", ca.display())))?;
                let tls = super::tls::client_config(&pem)
                    .map_err(|e| Error::Config(format!("caFile {}: {e}", ca.display())))?;
                options.tls = Some(tls);
            }
            if let Some(spec) = &c.credentials {
                configured = Some(Source::parse(spec).map_err(|e| Error::Config(e.to_string()))?);
            }
            provider.expire = c
                .credentials_expire()
                .map_err(|e| Error::Config(e.to_string()))?;
            if let Some(t) = c
                .credentials_timeout()
                .map_err(|e| Error::Config(e.to_string()))?
            {
                provider.timeout = t;
            }
        }
        let insecure = options.insecure;
        let transport = Transport::new(options).map_err(Error::Config)?;
        let (source, seed) = match source.or(configured) {
            Some(s) => (s, None),
            None => super::credentials::implicit(host, &env),
        };
        // The cloud credential sources speak their own token protocols over the same client.
        let http = transport.reqwest().clone();
        let credentials = Provider::new(source, provider, http, env, host, &endpoint, seed);
        Ok(Client {
            transport,
            host: host.to_string(),
            endpoint,
            credentials,
            insecure,
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
                reason: reason.to_string(),
            })
    }

    pub fn credentials(&self) -> &Provider {
        &self.credentials
    }

    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// Every tag of `repo`, following `Link: <…>; rel="next"` until there is none, within
    /// [`TAG_LIST_LIMIT`] bytes and [`MAX_TAGS`] tags over all pages.
    pub async fn list_tags(&self, repo: &str) -> Result<TagList, Error> {
        let scope = format!("repository:{repo}:pull");
        let mut url = format!("{}/v2/{repo}/tags/list?n={PAGE_SIZE}", self.endpoint);
        let mut out = TagList::default();
        let mut seen = std::collections::HashSet::new();
        let mut read = 0usize;
        for _ in 0..MAX_PAGES {
            if !seen.insert(url.clone()) {
                return Err(Error::Invalid {
                    url,
                    reason: "pagination loops back to a page already read".into(),
                });
            }
            self.stats.tag_pages.fetch_add(1, Ordering::Relaxed);
            let left = TAG_LIST_LIMIT.saturating_sub(read);
            let (headers, body) = self
                .request(Method::GET, &url, &scope, "application/json", left)
                .await
                .map_err(|e| match e {
                    Error::TooLarge { url, .. } if read > 0 => Error::Invalid {
                        url,
                        reason: format!(
                            "the tag list is larger than {} MiB over {} pages, refused",
                            TAG_LIST_LIMIT >> 20,
                            seen.len()
                        ),
                    },
                    e => e,
                })?;
            read = read.saturating_add(body.len());
            let page = tag_page(&url, &body)?;
            drop(body);
            out.add(page);
            if out.tags.len() > MAX_TAGS {
                return Err(Error::Invalid {
                    url,
                    reason: format!("the registry lists more than {MAX_TAGS} tags, refused"),
                });
            }
            match self.next_page(&headers) {
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
        if let Some(d) = header_digest(&headers, &url)? {
            return Ok(d);
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
        let fetched = self.manifest_bytes(repo, reference).await?;
        let manifest = fetched.parse(repo, reference)?;
        Ok((fetched.digest, manifest))
    }

    /// GET a manifest by tag or digest, as [`Client::manifest`], unparsed: its verified
    /// digest, media type and bytes (which the cache of `--cache-dir` keeps).
    pub async fn manifest_bytes(&self, repo: &str, reference: &str) -> Result<Fetched, Error> {
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
            match header_digest(&headers, &url)? {
                Some(d) if d == sha256_digest(&body) => d,
                Some(d) => {
                    return Err(invalid(format!(
                        "Docker-Content-Digest {d} does not match the manifest of {repo}:{reference} (it hashes to {})",
                        sha256_digest(&body)
                    )))
                }
                // No header: our own hash.
                None => sha256_digest(&body),
            }
        };
        let media_type = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        Ok(Fetched {
            url,
            digest,
            media_type,
            body,
        })
    }

    /// The OCI 1.1 referrers of `digest` (`GET /v2/<repo>/referrers/<digest>`): the index's
    /// bytes, or `None` when the registry does not offer the API (it answers 404). Counted
    /// as a manifest request.
    pub async fn referrers(&self, repo: &str, digest: &str) -> Result<Option<Vec<u8>>, Error> {
        let scope = format!("repository:{repo}:pull");
        let url = format!("{}/v2/{repo}/referrers/{digest}", self.endpoint);
        if !is_valid_digest(digest) {
            return Err(Error::Invalid {
                url,
                reason: format!("{digest:?} is not a digest"),
            });
        }
        self.stats.manifests.fetch_add(1, Ordering::Relaxed);
        let accept = "application/vnd.oci.image.index.v1+json";
        match self
            .request(Method::GET, &url, &scope, accept, MANIFEST_LIMIT)
            .await
        {
            Ok((_, body)) => Ok(Some(body)),
            Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// GET a config blob by digest, verify its digest, parse it. Registries often answer with
    /// a redirect to storage on another host; reqwest drops `Authorization` on a redirect to
    /// another host or port, so the registry's credentials do not follow it.
    pub async fn image_config(&self, repo: &str, digest: &str) -> Result<ImageConfig, Error> {
        let body = self.config_bytes(repo, digest).await?;
        self.parse_config(repo, digest, &body)
    }

    /// A config blob's bytes read (`repo` and `digest` name it in messages).
    pub fn parse_config(
        &self,
        repo: &str,
        digest: &str,
        body: &[u8],
    ) -> Result<ImageConfig, Error> {
        parse_config(body).map_err(|e| Error::Invalid {
            url: format!("{}/v2/{repo}/blobs/{digest}", self.endpoint),
            reason: format!("config {digest} of {repo}: {e}"),
        })
    }

    /// GET a config blob by digest, as [`Client::image_config`], unparsed: its verified bytes.
    pub async fn config_bytes(&self, repo: &str, digest: &str) -> Result<Vec<u8>, Error> {
        self.blob_bytes(repo, digest, CONFIG_LIMIT).await
    }

    /// GET a blob by digest, at most `limit` bytes: its verified bytes.
    pub async fn blob_bytes(
        &self,
        repo: &str,
        digest: &str,
        limit: usize,
    ) -> Result<Vec<u8>, Error> {
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
            .request(Method::GET, &url, &scope, "*/*", limit)
            .await?;
        let invalid = |reason: String| Error::Invalid {
            url: url.clone(),
            reason,
        };
        match digest_matches(digest, &body) {
            Some(true) => Ok(body),
            Some(false) => Err(invalid(format!(
                "blob {digest} of {repo} does not match its digest (it hashes to {})",
                sha256_digest(&body)
            ))),
            None => Err(invalid(format!(
                "cannot verify blob {digest} of {repo}: unsupported digest algorithm"
            ))),
        }
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

    /// A file of a Helm chart repository served by this host (`index.yaml`, a chart
    /// archive), at most `limit` bytes: the same credentials (only to the client's own
    /// origin), CA, gate and retries as the registry's own requests.
    pub async fn fetch_file(&self, url: &str, limit: usize) -> Result<Vec<u8>, Error> {
        let (_, body) = self.request(Method::GET, url, "", "*/*", limit).await?;
        Ok(body)
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

    /// One logical request: authenticated, then sent through the transport (retried,
    /// size-capped) and the registry's gate (concurrency, rate, pause after 429, circuit
    /// breaker). A 401 challenge teaches the scheme and sends it again; refused credentials
    /// are asked for again once.
    async fn request(
        &self,
        method: Method,
        url: &str,
        scope: &str,
        accept: &str,
        limit: usize,
    ) -> Result<(HeaderMap, Vec<u8>), Error> {
        let target = Url::parse(url).map_err(|e| Error::Invalid {
            url: url.to_string(),
            reason: format!("not a URL: {e}"),
        })?;
        let dialect = Registry {
            gate: &self.gate,
            stats: &self.stats,
            // Docker Hub counts manifest GETs as pulls; HEADs and tag lists are free.
            counts_as_pull: method == Method::GET && url.contains("/manifests/"),
            url,
        };
        let mut learned = false;
        let mut refreshed = false;
        loop {
            // The credentials behind this request's Authorization header, if any.
            let mut used = None;
            let request = Request::new(method.clone(), target.clone())
                .header(ACCEPT, accept)
                .limit(limit);
            let sent = self
                .send_authorized(&dialect, request, url, scope, &mut used)
                .await;
            let refusal = match sent {
                Ok(response) => return Ok((response.headers, response.body)),
                Err(refusal) => refusal,
            };
            let refused = match &refusal {
                Refusal::Challenge(_) => learned,
                Refusal::Error(Error::Unauthorized { status: 401, .. }) => true,
                Refusal::Error(_) => false,
            };
            if refused && !refreshed {
                // Credentials were sent and refused: ask their source again, once.
                refreshed = true;
                if self.refresh(scope, used.as_ref()).await {
                    continue;
                }
            }
            match refusal {
                Refusal::Challenge(challenge) if !learned => {
                    learned = true;
                    self.learn(challenge, scope, url).await?;
                }
                Refusal::Challenge(_) => {
                    return Err(self.refused(unauthorized(url, 401), used.as_ref()))
                }
                Refusal::Error(e) => return Err(self.refused(e, used.as_ref())),
            }
        }
    }

    /// A 401 or 403 to a request that carried credentials names their source: they were
    /// refused, and adding credentials is not the fix.
    fn refused(&self, e: Error, used: Option<&InUse>) -> Error {
        match e {
            Error::Unauthorized { url, status, .. }
                if used.is_some_and(|u| u.credential.is_some()) =>
            {
                Error::Unauthorized {
                    url,
                    status,
                    sent_from: Some(self.credentials.source().describe()),
                }
            }
            other => other,
        }
    }

    /// `request` with the registry's credentials, through the transport. Credentials go only
    /// to the registry's own origin, never to a host a `Link` names; a token service refusing
    /// them is a refusal like the registry's.
    async fn send_authorized(
        &self,
        dialect: &Registry<'_>,
        request: Request,
        url: &str,
        scope: &str,
        used: &mut Option<InUse>,
    ) -> Result<Response, Refusal> {
        let header = if origin(url) == origin(&self.endpoint) {
            self.auth_header(scope, used).await
        } else {
            Ok(None)
        };
        match header {
            Ok(Some(h)) => {
                let request = request.secret_header(AUTHORIZATION, h);
                self.transport.send(dialect, &request).await
            }
            Ok(None) => self.transport.send(dialect, &request).await,
            Err(e) => Err(Refusal::Error(e)),
        }
    }

    /// A token realm gets the registry's credentials over HTTPS; over plain HTTP only when
    /// it is the registry's own origin and the registry itself is spoken to over plain HTTP
    /// (the operator's `url: http://…`) or marked `insecure`. An HTTPS registry's challenge
    /// cannot have them sent in clear text, and a plain-HTTP registry's challenge cannot
    /// send them in clear text to any other host or port.
    fn may_carry_credentials(&self, realm: &Url) -> Result<(), Error> {
        let plain_registry = self.endpoint.starts_with("http://");
        if realm.scheme() == "https" {
            return Ok(());
        }
        let own_origin = Url::parse(&self.endpoint).is_ok_and(|e| e.origin() == realm.origin());
        if (plain_registry || self.insecure) && own_origin {
            return Ok(());
        }
        if plain_registry || self.insecure {
            return Err(Error::Invalid {
                url: format!("{}{}", origin(realm.as_str()), realm.path()),
                reason: format!(
                    "the registry {} asks for its credentials at another origin over plain \
                     HTTP; they are not sent (serve the token service over HTTPS, or on \
                     the registry's own origin)",
                    self.host
                ),
            });
        }
        Err(Error::Invalid {
            url: format!("{}{}", origin(realm.as_str()), realm.path()),
            reason: format!(
                "the HTTPS registry {} asks for its credentials over plain HTTP; they are not \
                 sent (mark the registry `insecure: true` in the operator's configuration if \
                 that is intended)",
                self.host
            ),
        })
    }

    /// The next tag page a `Link` header names, on the registry's origin when relative.
    fn next_page(&self, headers: &HeaderMap) -> Option<String> {
        let base = Url::parse(&format!("{}/", origin(&self.endpoint))).ok()?;
        imagebump_http::next_link(headers, &base).map(String::from)
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
                reason: reason.to_string(),
            })
    }

    async fn credential(&self) -> Result<Option<Credential>, Error> {
        self.in_use().await.map(|used| used.credential)
    }

    /// The `Authorization` header for a request, and in `used` the credentials behind it.
    async fn auth_header(
        &self,
        scope: &str,
        used: &mut Option<InUse>,
    ) -> Result<Option<HeaderValue>, Error> {
        let scheme = self.auth.lock().await.scheme.clone();
        match scheme {
            Scheme::Unknown => Ok(None),
            Scheme::Basic => {
                let current = self.in_use().await?;
                let header = current.credential.as_ref().map(Credential::basic_header);
                *used = Some(current);
                header.map(|h| header_value(&h, &self.host)).transpose()
            }
            Scheme::Bearer { realm, service } => {
                let token = self.token(&realm, service.as_deref(), scope, used).await?;
                let h = format!("Bearer {}", token.expose_secret());
                header_value(&h, &self.host).map(Some)
            }
        }
    }

    /// React to a 401 challenge: remember the scheme, drop a stale token.
    async fn learn(&self, challenge: Challenge, scope: &str, url: &str) -> Result<(), Error> {
        match challenge {
            Challenge::Basic => {
                if self.credential().await?.is_none() {
                    return Err(unauthorized(url, 401));
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
        let url = token_url(realm, service, scope)?;
        let url_s = url.to_string();
        let current = self.in_use().await?;
        if current.credential.is_some() {
            self.may_carry_credentials(&url)?;
        }
        let mut request = Request::get(url).limit(TOKEN_LIMIT);
        if let Some(c) = &current.credential {
            request =
                request.secret_header(AUTHORIZATION, header_value(&c.basic_header(), &self.host)?);
        }
        *used = Some(current.clone());
        self.stats.tokens.fetch_add(1, Ordering::Relaxed);
        let dialect = Registry {
            gate: &self.gate,
            stats: &self.stats,
            counts_as_pull: false,
            url: &url_s,
        };
        let body = match self.transport.send(&dialect, &request).await {
            Ok(response) => response.body,
            // A token service has no challenge of its own to answer.
            Err(Refusal::Challenge(_)) => return Err(unauthorized(&url_s, 401)),
            Err(Refusal::Error(e)) => return Err(e),
        };
        let (token, lifetime) = token_response(&url_s, &body)?;
        // A registry's token is a secret in every message from now on.
        imagebump_http::hold(&token);
        let secret = SecretString::from(token);
        // A day from now is always on the clock; were it not, the token counts as expired.
        let now = Instant::now();
        let until = now.checked_add(lifetime).unwrap_or(now);
        self.auth
            .lock()
            .await
            .tokens
            .insert(scope.to_string(), (secret.clone(), until, current));
        Ok(secret)
    }
}

/// The token service's URL for `scope` (none: a token for the registry itself, as
/// `registry check` of a prefix asks), on the `realm` a challenge named.
fn token_url(realm: &str, service: Option<&str>, scope: &str) -> Result<reqwest::Url, Error> {
    let mut url = reqwest::Url::parse(realm).map_err(|e| Error::Invalid {
        url: realm.to_string(),
        reason: format!("bad token realm: {e}"),
    })?;
    {
        let mut q = url.query_pairs_mut();
        if let Some(s) = service {
            q.append_pair("service", s);
        }
        if !scope.is_empty() {
            q.append_pair("scope", scope);
        }
    }
    Ok(url)
}

/// A token service's answer: the token and how long to use it.
fn token_response(url: &str, body: &[u8]) -> Result<(String, Duration), Error> {
    #[derive(serde::Deserialize)]
    struct TokenResponse {
        token: Option<String>,
        access_token: Option<String>,
        expires_in: Option<u64>,
    }
    let parsed: TokenResponse = serde_json::from_slice(body).map_err(|e| Error::Invalid {
        url: url.to_string(),
        reason: format!("token response: {e}"),
    })?;
    let token = parsed
        .token
        .or(parsed.access_token)
        .ok_or_else(|| Error::Invalid {
            url: url.to_string(),
            reason: "token response has no token".into(),
        })?;
    // Renew a little early; the registry's minimum is 60 s.
    // A registry's word on the lifetime is kept to a day: `u64::MAX` must not overflow
    // the clock.
    let lifetime = Duration::from_secs(
        parsed
            .expires_in
            .unwrap_or(60)
            .clamp(60, 86_400)
            .saturating_sub(10),
    );
    Ok((token, lifetime))
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

/// `scheme://host[:port]` of a URL.
fn origin(url: &str) -> &str {
    url.split_once("://")
        .and_then(|(_, rest)| rest.find('/').and_then(|j| rest.get(j..)))
        .and_then(|path| url.strip_suffix(path))
        .unwrap_or(url)
}

/// What a request to the registry ends in when it does not succeed: a challenge to answer,
/// or the registry's error.
enum Refusal {
    Challenge(Challenge),
    Error(Error),
}

impl From<Error> for Refusal {
    fn from(e: Error) -> Refusal {
        Refusal::Error(e)
    }
}

/// The registry as the transport sees it: its gate around each attempt, its errors, and the
/// request counters.
struct Registry<'a> {
    gate: &'a Gate,
    stats: &'a Arc<Stats>,
    counts_as_pull: bool,
    /// As the caller wrote it, for messages.
    url: &'a str,
}

#[async_trait::async_trait]
impl Dialect for Registry<'_> {
    type Error = Refusal;

    fn classify(&self, error: imagebump_http::Error) -> Refusal {
        use imagebump_http::Error as E;
        let url = self.url.to_string();
        match error {
            E::RateLimited { retry_after, .. } => Error::RateLimited { url, retry_after },
            E::Server { status, .. } => Error::Server { url, status },
            E::Status { response, .. } => return status_refusal(&url, &response),
            E::TooLarge { limit, .. } => Error::TooLarge { url, limit },
            E::Timeout { reason, .. } => Error::Timeout { url, reason },
            E::Connection { reason, .. } | E::Truncated { reason, .. } => Error::Transport {
                url,
                reason,
                retryable: true,
            },
            E::Transport { reason, .. } => Error::Transport {
                url,
                reason,
                retryable: false,
            },
            E::PlainHttp { authority, .. } => Error::PlainHttp { url, authority },
        }
        .into()
    }

    async fn enter(&self, request: &Request) -> Result<Slot, Refusal> {
        let permit = self.gate.enter(self.counts_as_pull).await?;
        let what = asked_for(request.url.path());
        let flying = super::InFlight::start(self.stats, self.gate.host(), what);
        Ok(Slot::holding((permit, flying)))
    }

    /// Recorded before the slot is released, so that the next attempt already sees an
    /// opened breaker.
    fn attempted(&self, outcome: Result<&Response, &imagebump_http::Error>) {
        let response = outcome.map_or_else(|e| e.response(), Some);
        if let Some(r) = response {
            self.gate.observe(&r.headers);
        }
        if let Err(imagebump_http::Error::Timeout { reason, .. }) = outcome {
            self.gate.timed_out(reason);
        }
        let label = match (response, outcome) {
            (Some(r), _) => r.status.as_u16().to_string(),
            (None, Err(e)) => outcome_label(e).to_string(),
            (None, Ok(_)) => "error".to_string(),
        };
        self.stats.count(self.gate.host(), label);
        let result = match outcome {
            Ok(_) => Ok(()),
            Err(e) => match self.classify(e.clone()) {
                Refusal::Error(e) => Err(e),
                Refusal::Challenge(_) => Ok(()),
            },
        };
        self.gate.record(&result);
    }

    fn may_retry(&self) -> bool {
        !self.gate.gave_up_unheard()
    }

    fn retrying(&self, error: &imagebump_http::Error, wait: Duration) {
        if let imagebump_http::Error::RateLimited {
            retry_after: Some(_),
            ..
        } = error
        {
            // The whole registry waits, not just this request.
            self.gate.pause(wait);
            let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
            self.stats
                .rate_limit_wait_ms
                .fetch_add(ms, Ordering::Relaxed);
        }
        self.stats.retries.fetch_add(1, Ordering::Relaxed);
    }
}

/// What a request asks for, as the progress line says it: `tags of acme/web`, `manifest
/// acme/web:1.2`, `blob of acme/web`, `a token` (paths other than the registry API's).
fn asked_for(path: &str) -> String {
    let Some(rest) = path.strip_prefix("/v2/") else {
        return "a token".into();
    };
    if let Some(repo) = rest.strip_suffix("/tags/list") {
        return format!("tags of {repo}");
    }
    if let Some((repo, reference)) = rest.rsplit_once("/manifests/") {
        let sep = if reference.contains(':') { "@" } else { ":" };
        return format!("manifest {repo}{sep}{reference}");
    }
    if let Some((repo, _)) = rest.rsplit_once("/blobs/") {
        return format!("blob of {repo}");
    }
    if let Some((repo, _)) = rest.rsplit_once("/referrers/") {
        return format!("referrers of {repo}");
    }
    if rest.is_empty() {
        return "its API check".into();
    }
    rest.to_string()
}

/// Why an attempt has no HTTP status, as the metrics label it.
fn outcome_label(e: &imagebump_http::Error) -> &'static str {
    use imagebump_http::Error as E;
    match e {
        E::Timeout { .. } => "timeout",
        E::Connection { .. } => "connection",
        E::PlainHttp { .. } => "tls",
        E::Truncated { .. } => "truncated",
        E::TooLarge { .. } => "too-large",
        _ => "error",
    }
}

/// A 4xx as the registry's error (a 401 with a challenge is one to answer).
fn status_refusal(url: &str, response: &Response) -> Refusal {
    let url = url.to_string();
    match response.status {
        StatusCode::UNAUTHORIZED => match response
            .header(WWW_AUTHENTICATE.as_str())
            .and_then(auth::parse_challenge)
        {
            Some(c) => Refusal::Challenge(c),
            None => unauthorized(&url, 401).into(),
        },
        StatusCode::FORBIDDEN => unauthorized(&url, 403).into(),
        StatusCode::NOT_FOUND => Error::NotFound { url }.into(),
        s => Error::Status {
            url,
            status: s.as_u16(),
        }
        .into(),
    }
}

fn unauthorized(url: &str, status: u16) -> Error {
    Error::Unauthorized {
        url: url.to_string(),
        status,
        sent_from: None,
    }
}

/// An `Authorization` value, marked sensitive.
fn header_value(value: &str, host: &str) -> Result<HeaderValue, Error> {
    HeaderValue::from_str(value).map_err(|_| Error::Credentials {
        host: host.to_string(),
        reason: "the credentials hold characters an HTTP header cannot carry".into(),
    })
}

/// The `Docker-Content-Digest` of an answer from `url`: `None` without one; an error
/// naming the registry and repository (in `url`) for one that is not `sha256:` and 64
/// lower-case hexadecimal digits (upper case, short, `md5:`), which is never used, written
/// or repeated anywhere.
fn header_digest(headers: &HeaderMap, url: &str) -> Result<Option<String>, Error> {
    let Some(value) = headers.get("docker-content-digest") else {
        return Ok(None);
    };
    match value.to_str().ok().filter(|d| is_sha256_digest(d)) {
        Some(d) => Ok(Some(d.to_string())),
        None => Err(Error::Invalid {
            url: url.to_string(),
            reason: "its Docker-Content-Digest is not sha256: and 64 lower-case hexadecimal digits: not used".into(),
        }),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn what_a_request_asks_for() {
        let cases = [
            ("/v2/acme/web/tags/list", "tags of acme/web"),
            ("/v2/acme/web/manifests/1.2", "manifest acme/web:1.2"),
            (
                "/v2/acme/web/manifests/sha256:ab",
                "manifest acme/web@sha256:ab",
            ),
            ("/v2/acme/web/blobs/sha256:ab", "blob of acme/web"),
            ("/v2/acme/web/referrers/sha256:ab", "referrers of acme/web"),
            ("/v2/", "its API check"),
            ("/token", "a token"),
        ];
        for (path, what) in cases {
            assert_eq!(asked_for(path), what, "{path}");
        }
    }
    use super::*;

    #[test]
    fn a_token_url_asks_for_the_service_and_scope_given() {
        let url = token_url(
            "https://auth.example/token?a=b",
            Some("registry.example"),
            "repository:acme/web:pull",
        )
        .unwrap();
        assert_eq!(
            url.as_str(),
            "https://auth.example/token?a=b&service=registry.example&scope=repository%3Aacme%2Fweb%3Apull"
        );
        // The query is opened even when nothing is added to it.
        let url = token_url("https://auth.example/token", None, "").unwrap();
        assert_eq!(url.as_str(), "https://auth.example/token?");
        let bad = token_url("not a url", None, "").unwrap_err().to_string();
        assert!(bad.starts_with("not a url: bad token realm: "), "{bad}");
    }

    #[test]
    fn a_token_response_gives_the_token_and_a_lifetime_kept_within_a_day() {
        let url = "https://auth.example/token";
        let (token, lifetime) = token_response(url, br#"{"token":"t1"}"#).unwrap();
        assert_eq!((token.as_str(), lifetime), ("t1", Duration::from_secs(50)));
        let body = br#"{"access_token":"t2","expires_in":18446744073709551615}"#;
        let (token, lifetime) = token_response(url, body).unwrap();
        assert_eq!(
            (token.as_str(), lifetime),
            ("t2", Duration::from_secs(86_390))
        );
        let none = token_response(url, br#"{"expires_in":300}"#).unwrap_err();
        assert_eq!(
            none.to_string(),
            "https://auth.example/token: token response has no token"
        );
        assert!(token_response(url, b"<html>").is_err());
    }

    #[test]
    fn a_registry_digest_is_sha256_and_64_lower_hex_or_an_error() {
        let url = "https://registry.example/v2/acme/web/manifests/1.0";
        let good = format!("sha256:{}", "ab".repeat(32));
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert("docker-content-digest", v.parse().unwrap());
            header_digest(&h, url)
        };
        assert_eq!(with(&good).unwrap(), Some(good.clone()));
        assert_eq!(header_digest(&HeaderMap::new(), url).unwrap(), None);
        for bad in [
            good.to_uppercase(),
            format!("sha256:{}", "AB".repeat(32)),
            "sha256:abc".to_string(),
            "md5:d41d8cd98f00b204e9800998ecf8427e".to_string(),
            format!("{good} "),
        ] {
            let e = with(&bad).unwrap_err().to_string();
            assert_eq!(
                e,
                format!("{url}: its Docker-Content-Digest is not sha256: and 64 lower-case hexadecimal digits: not used"),
                "{bad}"
            );
        }
    }

    #[test]
    fn tag_pages_follow_links_on_the_registry_origin() {
        let mut h = HeaderMap::new();
        h.insert(
            imagebump_http::header::LINK,
            "</v2/a/tags/list?last=x&n=2>; rel=\"next\""
                .parse()
                .unwrap(),
        );
        let base = Url::parse("http://127.0.0.1:5000/").unwrap();
        assert_eq!(
            imagebump_http::next_link(&h, &base).unwrap().as_str(),
            "http://127.0.0.1:5000/v2/a/tags/list?last=x&n=2"
        );
        assert_eq!(
            origin("http://127.0.0.1:5000/v2/a"),
            "http://127.0.0.1:5000"
        );
    }
}
