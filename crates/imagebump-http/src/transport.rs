//! The transport: one reqwest client, one retry loop, capped body reads.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use reqwest::{Method, StatusCode, Url};
use tokio::time::Instant;

use crate::redact::{self, error_chain};
use crate::retry::RetryPolicy;
use crate::Error;

/// What an error response's body is read to, at most: enough for a message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;
/// A request's body cap unless it says otherwise.
pub const DEFAULT_LIMIT: usize = 16 * 1024 * 1024;
/// How long a connection, and each read on it, may stay silent unless the operator says
/// otherwise (`--request-timeout`).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// One attempt, body included, is cut off after this many request timeouts: a body that keeps
/// arriving is not a hang, but it does not arrive forever.
const ATTEMPT_TIMEOUTS: u32 = 10;
/// An attempt that takes longer than this is logged at `-v` (host and duration).
const SLOW: Duration = Duration::from_secs(3);

/// How a transport is built.
#[derive(Debug, Clone)]
pub struct Options {
    /// Connecting, TLS handshake included.
    pub connect_timeout: Duration,
    /// Each read: the wait for the answer's headers, and between two pieces of its body.
    pub read_timeout: Duration,
    /// Per attempt, body included.
    pub timeout: Duration,
    /// Redirects followed (0: none; reqwest drops `Authorization` on one to another origin).
    pub redirects: usize,
    /// A TLS set-up of the caller's (the registry's `caFile` pinning).
    pub tls: Option<rustls::ClientConfig>,
    /// Accept any certificate (the registry's `insecure`).
    pub insecure: bool,
    pub retry: RetryPolicy,
}

impl Default for Options {
    fn default() -> Self {
        Options::with_request_timeout(DEFAULT_REQUEST_TIMEOUT)
    }
}

impl Options {
    /// The defaults, with `timeout` for connecting and for each read; one attempt ends after
    /// [`ATTEMPT_TIMEOUTS`] of them, however its body is arriving.
    pub fn with_request_timeout(timeout: Duration) -> Options {
        Options {
            connect_timeout: timeout,
            read_timeout: timeout,
            timeout: timeout.saturating_mul(ATTEMPT_TIMEOUTS),
            redirects: 5,
            tls: None,
            insecure: false,
            retry: RetryPolicy::default(),
        }
    }
}

/// The HTTP client every part of imagebump uses.
#[derive(Debug, Clone)]
pub struct Transport {
    client: reqwest::Client,
    retry: RetryPolicy,
    /// The connect and read timeouts, for messages.
    connect_timeout: Duration,
    read_timeout: Duration,
}

/// One request as the caller wants it sent (each attempt sends it again as is).
#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    pub url: Url,
    pub headers: HeaderMap,
    pub body: Option<Vec<u8>>,
    /// The body cap: a longer answer is [`Error::TooLarge`].
    pub limit: usize,
}

/// An answer, read.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    /// Where it came from (after redirects).
    pub url: Url,
}

/// What differs per server: the seam between the one retry loop and a registry or forge.
#[async_trait::async_trait]
pub trait Dialect: Send + Sync {
    /// The server's typed error.
    type Error: Send;

    /// The typed error for a failed request (after the retries).
    fn classify(&self, error: Error) -> Self::Error;

    /// Is this unsuccessful answer a rate limit, and what wait does it ask for (`Some(None)`:
    /// none named)? Standard: a 429 and its `Retry-After`.
    fn rate_limited(&self, response: &Response) -> Option<Option<Duration>> {
        (response.status == StatusCode::TOO_MANY_REQUESTS)
            .then(|| crate::headers::retry_after(&response.headers))
    }

    /// May `method` be sent again after a 5xx or a transport failure? Standard: GET, HEAD,
    /// PUT, DELETE, OPTIONS. A dialect whose PATCHes only set fields to given values may add
    /// PATCH; none may add POST.
    fn idempotent(&self, method: &Method) -> bool {
        crate::retry::is_idempotent(method)
    }

    /// Before each attempt: wait for a turn. The slot is held for the attempt only, never
    /// through a retry's sleep.
    async fn enter(&self, _request: &Request) -> Result<Slot, Self::Error> {
        Ok(Slot::default())
    }

    /// After each attempt, before its slot is released.
    fn attempted(&self, _outcome: Result<&Response, &Error>) {}

    /// A retry will wait `wait` after `error`.
    fn retrying(&self, _error: &Error, _wait: Duration) {}

    /// May a failed attempt be tried again at all (asked after the retry rule says yes)?
    /// The registry's says no once it has given up a registry that never answered.
    fn may_retry(&self) -> bool {
        true
    }
}

/// Whatever a [`Dialect::enter`] holds during one attempt (a semaphore permit).
#[derive(Default)]
pub struct Slot {
    /// Held for its `Drop` (a permit returns when the attempt ends).
    _held: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl Slot {
    pub fn holding(held: impl std::any::Any + Send + Sync) -> Slot {
        Slot {
            _held: Some(Box::new(held)),
        }
    }
}

/// The dialect of a server with nothing special: its errors are the transport's.
#[derive(Debug, Clone, Copy, Default)]
pub struct Plain;

impl Dialect for Plain {
    type Error = Error;
    fn classify(&self, error: Error) -> Error {
        error
    }
}

/// Follow at most `limit` redirects, never from `https://` down to `http://` on the same
/// host and port: reqwest drops `Authorization` only when the host or port changes, so such
/// a redirect would send the credentials in clear text. The 3xx answer is returned instead.
fn redirect_policy(limit: usize) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        let downgrade = attempt
            .previous()
            .last()
            .is_some_and(|from| keeps_credentials_in_clear(from, attempt.url()));
        if downgrade {
            attempt.stop()
        } else if attempt.previous().len() > limit {
            attempt.error("too many redirects")
        } else {
            attempt.follow()
        }
    })
}

/// Would a redirect from `from` to `to` carry `Authorization` over plain HTTP? reqwest
/// keeps it on the same host and port, whatever the scheme.
fn keeps_credentials_in_clear(from: &reqwest::Url, to: &reqwest::Url) -> bool {
    from.scheme() == "https"
        && to.scheme() == "http"
        && from.host_str() == to.host_str()
        && from.port_or_known_default() == to.port_or_known_default()
}

impl Transport {
    pub fn new(options: Options) -> Result<Transport, String> {
        let redirect = match options.redirects {
            0 => reqwest::redirect::Policy::none(),
            n => redirect_policy(n),
        };
        let mut builder = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .read_timeout(options.read_timeout)
            .timeout(options.timeout)
            .user_agent(concat!("imagebump/", env!("CARGO_PKG_VERSION")))
            .redirect(redirect);
        if options.insecure {
            builder = builder.danger_accept_invalid_certs(true);
        } else if let Some(tls) = options.tls {
            builder = builder.use_preconfigured_tls(tls);
        }
        let client = builder
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {}", error_chain(&e)))?;
        Ok(Transport {
            client,
            retry: options.retry,
            connect_timeout: options.connect_timeout,
            read_timeout: options.read_timeout,
        })
    }

    /// The underlying client, for the cloud credential sources' own token protocols
    /// (single requests that do not page or retry).
    pub fn reqwest(&self) -> &reqwest::Client {
        &self.client
    }

    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    /// Sends `request` until it succeeds or the retry rule gives up (see the crate's docs).
    /// A success is a 2xx; anything else goes through [`Dialect::classify`].
    pub async fn send<D: Dialect>(
        &self,
        dialect: &D,
        request: &Request,
    ) -> Result<Response, D::Error> {
        let started = Instant::now();
        let mut attempt: u32 = 0;
        let mut timeouts: u32 = 0;
        loop {
            attempt = attempt.saturating_add(1);
            let result = {
                let _slot = dialect.enter(request).await?;
                let result = self.timed_attempt(dialect, request).await;
                dialect.attempted(result.as_ref());
                result
            };
            let error = match result {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            if matches!(error, Error::Timeout { .. }) {
                timeouts = timeouts.saturating_add(1);
            }
            let elapsed = started.elapsed();
            let idempotent = dialect.idempotent(&request.method) && request.method != Method::POST;
            let wait = self
                .retry
                .wait(idempotent, &error, attempt, elapsed)
                .filter(|_| timeouts < self.retry.max_timeouts && dialect.may_retry());
            let Some(wait) = wait else {
                return Err(dialect.classify(error));
            };
            tracing::debug!(
                method = %request.method,
                %error,
                wait_ms = wait.as_millis() as u64,
                attempt,
                "retrying"
            );
            dialect.retrying(&error, wait);
            tokio::time::sleep(wait).await;
        }
    }

    /// [`Transport::attempt`], logged at `-v` when it took long or timed out (host and
    /// duration; the URL
    /// is never logged, its path may name private repositories and its query secrets).
    async fn timed_attempt<D: Dialect>(
        &self,
        dialect: &D,
        request: &Request,
    ) -> Result<Response, Error> {
        let started = Instant::now();
        let result = self.attempt(dialect, request).await;
        let took = started.elapsed();
        if took >= SLOW || matches!(result, Err(Error::Timeout { .. })) {
            let outcome = match &result {
                Ok(r) => r.status.as_u16().to_string(),
                Err(Error::Timeout { .. }) => "timed out".to_string(),
                Err(e) => e
                    .response()
                    .map_or_else(|| "failed".to_string(), |r| r.status.as_u16().to_string()),
            };
            tracing::info!(
                host = request.url.host_str().unwrap_or_default(),
                method = %request.method,
                seconds = format!("{:.1}", took.as_secs_f64()),
                outcome,
                "slow request"
            );
        }
        result
    }

    /// One attempt: a 2xx read within the cap, or the failure.
    async fn attempt<D: Dialect>(&self, dialect: &D, request: &Request) -> Result<Response, Error> {
        let shown = redact::url(request.url.as_str());
        let mut builder = self
            .client
            .request(request.method.clone(), request.url.clone())
            .headers(request.headers.clone());
        if let Some(body) = &request.body {
            builder = builder.body(body.clone());
        }
        let answer = builder.send().await.map_err(|e| self.failure(&shown, &e))?;
        let status = answer.status();
        let headers = answer.headers().clone();
        let url = answer.url().clone();
        let body = if request.method == Method::HEAD {
            Vec::new()
        } else if status.is_success() {
            self.read_capped(answer, &shown, request.limit).await?
        } else {
            // Only for a message: a cut-off or unreadable error body is not a failure.
            self.read_capped(answer, &shown, ERROR_BODY_LIMIT)
                .await
                .unwrap_or_default()
        };
        let response = Response {
            status,
            headers,
            body,
            url,
        };
        if status.is_success() {
            return Ok(response);
        }
        let response = Box::new(response);
        Err(if let Some(retry_after) = dialect.rate_limited(&response) {
            Error::RateLimited {
                url: shown,
                retry_after,
                response,
            }
        } else if status.is_server_error() {
            Error::Server {
                url: shown,
                status: status.as_u16(),
                response,
            }
        } else {
            Error::Status {
                url: shown,
                status: status.as_u16(),
                response,
            }
        })
    }

    /// A reqwest failure as ours: timeouts, broken connections and cut bodies may go better
    /// next time; certificate, protocol and redirect failures will not.
    fn failure(&self, url: &str, e: &reqwest::Error) -> Error {
        if e.is_timeout() {
            let (what, limit) = if e.is_connect() {
                ("no connection", self.connect_timeout)
            } else {
                ("no answer", self.read_timeout)
            };
            return Error::Timeout {
                url: url.to_string(),
                reason: format!("{what} within {}", seconds(limit)),
            };
        }
        failure(url, e)
    }

    /// The body, refused once it grows past `limit` (before reading, when the length is
    /// announced).
    async fn read_capped(
        &self,
        mut answer: reqwest::Response,
        url: &str,
        limit: usize,
    ) -> Result<Vec<u8>, Error> {
        let too_large = || Error::TooLarge {
            url: url.to_string(),
            limit,
        };
        if answer.content_length().is_some_and(|n| n > limit as u64) {
            return Err(too_large());
        }
        // Sized once when announced: a body grown by doubling holds two copies at its peak.
        let announced = answer
            .content_length()
            .and_then(|n| usize::try_from(n).ok());
        let mut body = Vec::with_capacity(announced.unwrap_or(0));
        while let Some(chunk) = answer.chunk().await.map_err(|e| self.failure(url, &e))? {
            if body.len().saturating_add(chunk.len()) > limit {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

/// `30s`, `1.5s`: a timeout as people write it.
fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// What went wrong, without reqwest's `for url (…)` (the caller names the URL once) and,
/// for a failed connection, only the innermost cause (`Connection refused (os error 111)`),
/// not the layers that wrap it.
fn reason_of(e: &reqwest::Error) -> String {
    let mut chain = Vec::new();
    let mut current = std::error::Error::source(e);
    while let Some(link) = current {
        chain.push(link.to_string());
        current = link.source();
    }
    if e.is_connect() {
        if let Some(innermost) = chain.last() {
            return redact::redact(innermost);
        }
    }
    let top = e.to_string();
    let top = match e.url() {
        Some(u) => top.replace(&format!(" for url ({u})"), ""),
        None => top,
    };
    let rest = std::error::Error::source(e).map(error_chain);
    match rest {
        Some(rest) if !rest.is_empty() && !top.contains(&rest) => {
            redact::redact(&format!("{top}: {rest}"))
        }
        _ => redact::redact(&top),
    }
}

/// A reqwest failure other than a timeout as ours (see [`Transport::failure`]).
fn failure(url: &str, e: &reqwest::Error) -> Error {
    let reason = reason_of(e);
    let url = url.to_string();
    if answered_in_plain_http(e) {
        let parsed = Url::parse(&url).ok();
        let authority = parsed
            .as_ref()
            .and_then(|u| Some(format!("{}{}", u.host_str()?, port_suffix(u))))
            .unwrap_or_default();
        return Error::PlainHttp { url, authority };
    }
    let permanent = reason.contains("certificate")
        || reason.contains("InvalidContentType")
        || e.is_builder()
        || e.is_redirect();
    if permanent {
        Error::Transport { url, reason }
    } else if e.is_body() || e.is_decode() {
        Error::Truncated { url, reason }
    } else {
        Error::Connection { url, reason }
    }
}

/// Did the TLS handshake get a plain-HTTP answer? rustls reads the first byte of an HTTP
/// response (`H`) as a record type it does not know. The rustls error sits inside nested
/// `io::Error`s, whose `source()` skips what they wrap, so those are opened with `get_ref`.
fn answered_in_plain_http(e: &reqwest::Error) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(link) = current {
        if let Some(rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType)) =
            link.downcast_ref::<rustls::Error>()
        {
            return true;
        }
        current = match link
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => link.source(),
        };
    }
    false
}

/// `:port` when the URL names one, else nothing.
fn port_suffix(url: &Url) -> String {
    url.port().map(|p| format!(":{p}")).unwrap_or_default()
}

impl Request {
    pub fn new(method: Method, url: Url) -> Request {
        Request {
            method,
            url,
            headers: HeaderMap::new(),
            body: None,
            limit: DEFAULT_LIMIT,
        }
    }

    pub fn get(url: Url) -> Request {
        Request::new(Method::GET, url)
    }

    /// Adds a header; a value that cannot be one is left out (callers check secrets
    /// beforehand, see [`Request::secret_header`]).
    pub fn header(mut self, name: HeaderName, value: &str) -> Request {
        if let Ok(v) = HeaderValue::from_str(value) {
            self.headers.append(name, v);
        }
        self
    }

    /// Adds a header that carries a credential: marked sensitive, so it is never printed.
    pub fn secret_header(mut self, name: HeaderName, mut value: HeaderValue) -> Request {
        value.set_sensitive(true);
        self.headers.insert(name, value);
        self
    }

    /// A JSON body.
    pub fn json(mut self, body: &impl serde::Serialize) -> Request {
        // Serializing a `serde_json::Value` or a plain struct cannot fail.
        self.body = serde_json::to_vec(body).ok();
        self.headers
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        self
    }

    pub fn limit(mut self, limit: usize) -> Request {
        self.limit = limit;
        self
    }
}

impl Response {
    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// A header's value, when it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// An answer with a status and nothing else (for tests and dialects' own checks).
    pub fn synthetic(status: u16) -> Response {
        // why: a constant URL, which parses.
        #[allow(clippy::unreachable)]
        let url = Url::parse("http://localhost/").unwrap_or_else(|_| unreachable!());
        Response {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            headers: HeaderMap::new(),
            body: Vec::new(),
            url,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::keeps_credentials_in_clear;

    /// Only a redirect from HTTPS down to plain HTTP on the same host and port is stopped:
    /// anywhere else reqwest drops `Authorization`, or the scheme stays encrypted.
    #[test]
    fn only_a_same_origin_downgrade_is_stopped() {
        let url = |u: &str| reqwest::Url::parse(u).unwrap();
        let cases = [
            (
                "https://r.example:5000/v2/",
                "http://r.example:5000/x",
                true,
            ),
            ("https://r.example/v2/", "http://r.example:443/x", true),
            ("https://r.example/v2/", "http://r.example/x", false),
            ("https://r.example/v2/", "https://r.example:8443/x", false),
            ("https://r.example/v2/", "http://storage.example/x", false),
            (
                "http://r.example:5000/v2/",
                "http://r.example:5000/x",
                false,
            ),
        ];
        for (from, to, stopped) in cases {
            assert_eq!(
                keeps_credentials_in_clear(&url(from), &url(to)),
                stopped,
                "{from} -> {to}"
            );
        }
    }
}
