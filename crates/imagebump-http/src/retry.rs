//! The one retry rule.

use std::time::Duration;

use reqwest::Method;

use crate::Error;

/// How hard the transport tries. The defaults are the registry's documented numbers
/// (docs/architecture.md, "Retries"), which the forges share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per request, the first included.
    pub max_attempts: u32,
    /// Timed-out attempts per request: a server silent for a whole request timeout is
    /// asked again once, not until `max_attempts`.
    pub max_timeouts: u32,
    /// No retry starts later than this after the first attempt.
    pub budget: Duration,
    /// A rate limit asking for a longer wait is reported rather than waited out.
    pub max_retry_after: Duration,
    /// The backoff of the first retry is between half and all of twice this; it doubles
    /// with each attempt.
    pub first_backoff: Duration,
    /// No backoff is longer.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            max_timeouts: 2,
            budget: Duration::from_secs(120),
            max_retry_after: Duration::from_secs(30),
            first_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
        }
    }
}

/// Sending it twice does no more than sending it once. PATCH is not: a server may apply
/// it relative to the current state, and POST may have taken effect.
pub fn is_idempotent(method: &Method) -> bool {
    [
        Method::GET,
        Method::HEAD,
        Method::PUT,
        Method::DELETE,
        Method::OPTIONS,
    ]
    .contains(method)
}

impl RetryPolicy {
    /// How long to wait before another attempt after `error` (attempt number `attempt`,
    /// `elapsed` since the first) of a request that is `idempotent` or not, or `None` to give
    /// up.
    pub fn wait(
        &self,
        idempotent: bool,
        error: &Error,
        attempt: u32,
        elapsed: Duration,
    ) -> Option<Duration> {
        if attempt >= self.max_attempts {
            return None;
        }
        let wait = match error {
            // The server did not act on it, whatever the method.
            Error::RateLimited {
                retry_after: Some(wait),
                ..
            } if *wait > self.max_retry_after => return None,
            Error::RateLimited {
                retry_after: Some(wait),
                ..
            } => *wait,
            Error::RateLimited { .. } => self.backoff(attempt),
            e if e.is_retryable() && idempotent => self.backoff(attempt),
            _ => return None,
        };
        (elapsed.saturating_add(wait) < self.budget).then_some(wait)
    }

    /// Jittered exponential backoff: between half and all of `first_backoff × 2^attempt`,
    /// at most `max_backoff`.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let ceiling = self
            .first_backoff
            .saturating_mul(1 << attempt.min(16))
            .min(self.max_backoff)
            .as_millis() as u64;
        Duration::from_millis(fastrand::u64(ceiling / 2..=ceiling))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Response;

    fn answer(status: u16) -> Box<Response> {
        Box::new(Response::synthetic(status))
    }

    fn rate_limited(retry_after: Option<u64>) -> Error {
        Error::RateLimited {
            url: "u".into(),
            retry_after: retry_after.map(Duration::from_secs),
            response: answer(429),
        }
    }

    #[test]
    fn the_rule() {
        let p = RetryPolicy::default();
        let zero = Duration::ZERO;
        let server = Error::Server {
            url: "u".into(),
            status: 502,
            response: answer(502),
        };
        let timeout = Error::Timeout {
            url: "u".into(),
            reason: "t".into(),
        };
        for e in [&server, &timeout] {
            for m in [Method::GET, Method::HEAD, Method::PUT, Method::DELETE] {
                assert!(p.wait(is_idempotent(&m), e, 1, zero).is_some(), "{m} {e}");
            }
            for m in [Method::POST, Method::PATCH] {
                assert_eq!(p.wait(is_idempotent(&m), e, 1, zero), None, "{m} {e}");
            }
            assert_eq!(p.wait(true, e, 4, zero), None, "attempts");
            assert_eq!(p.wait(true, e, 1, Duration::from_secs(120)), None, "budget");
        }
        for m in [Method::GET, Method::POST, Method::PATCH] {
            assert_eq!(
                p.wait(is_idempotent(&m), &rate_limited(Some(2)), 1, zero),
                Some(Duration::from_secs(2))
            );
            let idempotent = is_idempotent(&m);
            assert!(p.wait(idempotent, &rate_limited(None), 1, zero).unwrap() <= p.max_backoff);
            assert_eq!(p.wait(idempotent, &rate_limited(Some(3600)), 1, zero), None);
        }
        let refused = Error::Status {
            url: "u".into(),
            status: 409,
            response: answer(409),
        };
        assert_eq!(p.wait(true, &refused, 1, zero), None);
        let cert = Error::Transport {
            url: "u".into(),
            reason: "invalid peer certificate".into(),
        };
        assert_eq!(p.wait(true, &cert, 1, zero), None);
    }

    #[test]
    fn backoff_is_bounded_and_grows() {
        let p = RetryPolicy::default();
        for a in 0..40 {
            assert!(p.backoff(a) <= Duration::from_secs(5));
        }
        let first = p.backoff(1);
        assert!(first >= Duration::from_millis(200) && first <= Duration::from_millis(400));
    }
}
