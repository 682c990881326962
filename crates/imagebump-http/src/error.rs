//! What a request through the transport can end in, besides a success.

use std::time::Duration;

use crate::Response;

/// What [`Error::PlainHttp`] says happened.
const PLAIN_HTTP: &str = "the TLS handshake was answered in plain HTTP";

/// A failed request, after the retries the rule allows. Every `url` here went through
/// [`crate::redact::url`]: no credentials in a user part or a query string.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// 429 (or what the dialect counts as a rate limit), still so after the retries, or
    /// asking for a longer wait than the policy sleeps.
    #[error("{url}: rate limited (HTTP {})", response.status.as_u16())]
    RateLimited {
        url: String,
        retry_after: Option<Duration>,
        response: Box<Response>,
    },
    /// A 5xx, still so after the retries (or not retried: a POST).
    #[error("{url}: HTTP {status} from the server")]
    Server {
        url: String,
        status: u16,
        response: Box<Response>,
    },
    /// Any other unsuccessful status: the dialect says what it means.
    #[error("{url}: HTTP {status}")]
    Status {
        url: String,
        status: u16,
        response: Box<Response>,
    },
    /// No answer in time.
    #[error("{url}: timed out: {reason}")]
    Timeout { url: String, reason: String },
    /// The connection failed or broke (refused, reset): worth another try.
    #[error("{url}: {reason}")]
    Connection { url: String, reason: String },
    /// The body ended before its announced length.
    #[error("{url}: the response was cut short: {reason}")]
    Truncated { url: String, reason: String },
    /// A failure that will repeat: TLS certificate, protocol, a request that cannot be built.
    #[error("{url}: {reason}")]
    Transport { url: String, reason: String },
    /// The body is larger than the request's cap.
    #[error("{url}: response larger than {limit} bytes, refused")]
    TooLarge { url: String, limit: usize },
    /// An `https://` request whose TLS handshake was answered in plain HTTP: the server at
    /// `authority` (`host[:port]`) speaks `http://`. It will repeat, so it is not retried.
    #[error("{url}: {PLAIN_HTTP}")]
    PlainHttp { url: String, authority: String },
}

impl Error {
    /// Worth another try later (the same request, unchanged).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::RateLimited { .. }
                | Error::Server { .. }
                | Error::Timeout { .. }
                | Error::Connection { .. }
                | Error::Truncated { .. }
        )
    }

    /// No usable answer came back (the server was not heard, or not fully).
    pub fn is_transport(&self) -> bool {
        matches!(
            self,
            Error::Timeout { .. }
                | Error::Connection { .. }
                | Error::Truncated { .. }
                | Error::Transport { .. }
                | Error::PlainHttp { .. }
        )
    }

    /// The answer, when there was one.
    pub fn response(&self) -> Option<&Response> {
        match self {
            Error::RateLimited { response, .. }
            | Error::Server { response, .. }
            | Error::Status { response, .. } => Some(response),
            _ => None,
        }
    }

    /// The (redacted) URL of the request.
    pub fn url(&self) -> &str {
        match self {
            Error::RateLimited { url, .. }
            | Error::Server { url, .. }
            | Error::Status { url, .. }
            | Error::Timeout { url, .. }
            | Error::Connection { url, .. }
            | Error::Truncated { url, .. }
            | Error::Transport { url, .. }
            | Error::TooLarge { url, .. }
            | Error::PlainHttp { url, .. } => url,
        }
    }

    /// The reason text of a failure without an answer (already redacted).
    pub fn reason(&self) -> Option<&str> {
        match self {
            Error::Timeout { reason, .. }
            | Error::Connection { reason, .. }
            | Error::Truncated { reason, .. }
            | Error::Transport { reason, .. } => Some(reason),
            Error::PlainHttp { .. } => Some(PLAIN_HTTP),
            _ => None,
        }
    }
}
