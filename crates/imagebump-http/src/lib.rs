//! The only way imagebump speaks HTTP.
//!
//! One [`Transport`] (reqwest over rustls) with one retry loop, used by the registry client
//! and the three forge clients alike:
//!
//! - a 429 is retried for any method (the server did not act on it): after its
//!   `Retry-After` when that is at most [`RetryPolicy::max_retry_after`], after a jittered
//!   backoff when it names no wait, and not at all when it asks for longer (the error then
//!   carries the wait, so the caller can report it);
//! - a 5xx or a transport failure (timeout, refused or reset connection, truncated body) is
//!   retried only for idempotent methods (GET, HEAD, PUT, DELETE; PATCH where the dialect
//!   says its PATCHes only set fields), never a POST, which may have taken effect;
//! - at most [`RetryPolicy::max_attempts`] attempts, of which at most
//!   [`RetryPolicy::max_timeouts`] timed out, none started after [`RetryPolicy::budget`].
//!
//! Timeouts ([`Options::with_request_timeout`]) bound connecting and each read, not a whole
//! body that keeps arriving; an attempt taking longer than a few seconds is logged at `-v`.
//!
//! What differs per server is a small [`Dialect`]: how an error response becomes its typed
//! error, whether an answer is a rate limit, and a per-attempt hook (the registry's gate).
//! Header parsers ([`link`], [`retry_after`], [`rate_limit`]) and the [`redact`]or exist once.

// Unit tests may count, slice and call `unreachable!`; clippy.toml lets them unwrap, expect,
// panic and index (Cargo.toml holds the library to the no-panic set).
#![cfg_attr(
    test,
    allow(
        clippy::arithmetic_side_effects,
        clippy::string_slice,
        clippy::unreachable
    )
)]

mod error;
pub mod headers;
pub mod redact;
mod retry;
mod transport;

pub use error::Error;
pub use headers::{next_link, rate_limit, retry_after, RateLimit};
pub use redact::{error_chain, hold, redact, Redactor};
pub use retry::{is_idempotent, RetryPolicy};
pub use transport::{
    Dialect, Options, Plain, Request, Response, Slot, Transport, DEFAULT_REQUEST_TIMEOUT,
};

pub use reqwest::header;
pub use reqwest::{Method, StatusCode, Url};
