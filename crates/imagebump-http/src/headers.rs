//! The response headers every server shares a meaning for: `Link` (pagination),
//! `Retry-After`, and the rate-limit families of GitHub (`x-ratelimit-*`), GitLab
//! (`ratelimit-*`) and Docker Hub (`ratelimit-remaining: 76;w=21600`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, LINK, RETRY_AFTER};
use reqwest::Url;

/// The `rel="next"` target of the `Link` headers, resolved against `base` (a relative
/// target such as `/v2/a/tags/list?last=x` is on `base`'s origin).
pub fn next_link(headers: &HeaderMap, base: &Url) -> Option<Url> {
    headers
        .get_all(LINK)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(next_target)
        .and_then(|target| base.join(target).ok())
}

/// The `rel="next"` target of one `Link` value, as written.
fn next_target(value: &str) -> Option<&str> {
    value.split(',').find_map(|part| {
        let (target, params) = part.trim().split_once(';')?;
        let is_next = params.split(';').any(|p| {
            let p = p.trim().replace(' ', "").to_ascii_lowercase();
            p == "rel=\"next\"" || p == "rel=next"
        });
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        is_next.then_some(target)
    })
}

/// `Retry-After`: seconds, or an HTTP date (one in the past is no wait).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?;
    parse_retry_after(value, SystemTime::now())
}

/// A `Retry-After` value at `now`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or_default())
}

/// A server's announced request (or pull) allowance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateLimit {
    pub limit: Option<u64>,
    pub remaining: Option<u64>,
    /// Until the allowance is renewed (`*-reset`, a Unix time), at least a second.
    pub reset_in: Option<Duration>,
    /// The window in seconds (Docker Hub's `;w=21600`).
    pub window: Option<u64>,
}

impl RateLimit {
    /// The allowance is used up.
    pub fn exhausted(&self) -> bool {
        self.remaining == Some(0)
    }
}

/// The rate-limit headers of a response, GitHub's `x-ratelimit-*` or the `ratelimit-*` of
/// GitLab and Docker Hub; `None` when it has none.
pub fn rate_limit(headers: &HeaderMap) -> Option<RateLimit> {
    rate_limit_at(headers, SystemTime::now())
}

fn rate_limit_at(headers: &HeaderMap, now: SystemTime) -> Option<RateLimit> {
    let field = |name: &str| -> Option<(u64, Option<u64>)> {
        let value = headers
            .get(format!("x-{name}"))
            .or_else(|| headers.get(name))?
            .to_str()
            .ok()?;
        let mut parts = value.split(';');
        let n = parts.next()?.trim().parse().ok()?;
        let window = parts
            .filter_map(|p| p.trim().strip_prefix("w="))
            .find_map(|w| w.trim().parse().ok());
        Some((n, window))
    };
    let limit = field("ratelimit-limit");
    let remaining = field("ratelimit-remaining");
    let reset = field("ratelimit-reset").map(|(at, _)| {
        let now = now.duration_since(UNIX_EPOCH).unwrap_or_default();
        // At least a second: the reset is whole seconds and servers ask to wait past it.
        Duration::from_secs(at)
            .saturating_sub(now)
            .max(Duration::from_secs(1))
    });
    if limit.is_none() && remaining.is_none() && reset.is_none() {
        return None;
    }
    Some(RateLimit {
        limit: limit.map(|l| l.0),
        remaining: remaining.map(|r| r.0),
        reset_in: reset,
        window: remaining.and_then(|r| r.1).or(limit.and_then(|l| l.1)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn link_next_relative_absolute_and_absent() {
        let base = Url::parse("http://127.0.0.1:5000/").unwrap();
        let h = headers(&[("link", "</v2/a/tags/list?last=x&n=2>; rel=\"next\"")]);
        assert_eq!(
            next_link(&h, &base).unwrap().as_str(),
            "http://127.0.0.1:5000/v2/a/tags/list?last=x&n=2"
        );
        let h = headers(&[(
            "link",
            r#"<https://api.github.com/repositories/1/pulls?page=2>; rel="next", <https://api.github.com/repositories/1/pulls?page=5>; rel="last""#,
        )]);
        assert_eq!(
            next_link(&h, &base).unwrap().as_str(),
            "https://api.github.com/repositories/1/pulls?page=2"
        );
        let h = headers(&[("link", "<https://r.example/x?last=y>; REL=next")]);
        assert_eq!(
            next_link(&h, &base).unwrap().as_str(),
            "https://r.example/x?last=y"
        );
        let h = headers(&[(
            "link",
            r#"<https://x/?page=1>; rel="prev", <https://x/?page=1>; rel="first""#,
        )]);
        assert_eq!(next_link(&h, &base), None);
        // Two headers: the second has it.
        let h = headers(&[
            ("link", r#"<https://x/?page=1>; rel="prev""#),
            ("link", r#"<https://x/?page=3>; rel = "next""#),
        ]);
        assert_eq!(next_link(&h, &base).unwrap().as_str(), "https://x/?page=3");
        assert_eq!(next_link(&HeaderMap::new(), &base), None);
        assert_eq!(next_link(&headers(&[("link", "garbage")]), &base), None);
    }

    #[test]
    fn retry_after_seconds_dates_and_junk() {
        let now = SystemTime::now();
        assert_eq!(parse_retry_after(" 7 ", now), Some(Duration::from_secs(7)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(120));
        let wait = parse_retry_after(&later, now).unwrap();
        assert!(wait > Duration::from_secs(118) && wait <= Duration::from_secs(120));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(
            retry_after(&headers(&[("retry-after", "3")])),
            Some(Duration::from_secs(3))
        );
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn rate_limit_families() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let github = headers(&[
            ("x-ratelimit-limit", "5000"),
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1000020"),
        ]);
        let r = rate_limit_at(&github, now).unwrap();
        assert_eq!(r.limit, Some(5000));
        assert!(r.exhausted());
        assert_eq!(r.reset_in, Some(Duration::from_secs(20)));
        let gitlab = headers(&[
            ("ratelimit-limit", "600"),
            ("ratelimit-remaining", "599"),
            ("ratelimit-reset", "999999"),
        ]);
        let r = rate_limit_at(&gitlab, now).unwrap();
        assert_eq!((r.limit, r.remaining), (Some(600), Some(599)));
        assert_eq!(
            r.reset_in,
            Some(Duration::from_secs(1)),
            "a past reset is 1 s"
        );
        let hub = headers(&[
            ("ratelimit-limit", "100;w=21600"),
            ("ratelimit-remaining", "76;w=21600"),
        ]);
        assert_eq!(
            rate_limit_at(&hub, now),
            Some(RateLimit {
                limit: Some(100),
                remaining: Some(76),
                reset_in: None,
                window: Some(21600)
            })
        );
        assert_eq!(rate_limit_at(&HeaderMap::new(), now), None);
        assert_eq!(
            rate_limit_at(&headers(&[("ratelimit-remaining", "x")]), now),
            None
        );
    }
}
