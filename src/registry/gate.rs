//! What all requests to one registry share, whatever credentials they carry: the
//! concurrency bound, the request rate, a pause after a 429, the pull allowance a registry
//! announces (Docker Hub's `ratelimit-remaining`), and the circuit breaker that stops asking
//! a registry that keeps failing.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use imagebump_http::header::HeaderMap;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::Error;

/// Failed attempts in a row (any request, retries included) after which a registry is
/// skipped for the rest of the run: two requests' worth of retries. Counted per attempt, so
/// that many requests failing at once open it as soon as a single request retrying would.
pub const BREAKER_THRESHOLD: usize = 8;

/// How the reason starts when a registry is skipped because it never answered.
pub const DID_NOT_ANSWER: &str = "it did not answer";

/// How long the requests after a registry's first one wait for its answer before they go
/// anyway (a registry slow to answer gets its connections opened in parallel, as before).
const FIRST_CONTACT_WAIT: Duration = Duration::from_secs(1);

/// The first request to a registry goes alone: the others wait for its answer, so that they
/// find its connection open. Over HTTP/2 they all share that one instead of each opening its
/// own (the benchmark's 300 tag lists: 8 TLS handshakes with the registry became 1; curl
/// multiplexes the same way). Over HTTP/1.1 they then open theirs, after that answer.
#[derive(Debug, Default)]
struct FirstContact {
    state: AtomicU8,
    answered: tokio::sync::Notify,
}

const UNTRIED: u8 = 0;
const TRYING: u8 = 1;
const ANSWERED: u8 = 2;

/// Held by the first request for its attempt; dropped when the attempt ends, however it
/// ends (answered, failed, given up), and then the waiting requests go.
#[derive(Debug)]
struct Contacting(Arc<FirstContact>);

impl Drop for Contacting {
    fn drop(&mut self) {
        self.0.state.store(ANSWERED, Ordering::Release);
        self.0.answered.notify_waiters();
    }
}

/// A turn to send one attempt: held until the attempt ends.
#[derive(Debug)]
pub struct Turn {
    _permit: OwnedSemaphorePermit,
    _first: Option<Contacting>,
}

/// A registry's announced pull allowance (`ratelimit-limit` / `ratelimit-remaining`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowance {
    pub limit: Option<u64>,
    pub remaining: u64,
    /// The window in seconds (`;w=21600`).
    pub window: Option<u64>,
}

impl std::fmt::Display for Allowance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.remaining)?;
        if let Some(l) = self.limit {
            write!(f, " of {l}")?;
        }
        write!(f, " pulls left")?;
        if let Some(w) = self.window {
            if w % 3600 == 0 {
                write!(f, " per {}h", w / 3600)?;
            } else {
                write!(f, " per {w}s")?;
            }
        }
        Ok(())
    }
}

pub struct Gate {
    host: String,
    /// Shared with the permits, which live in the transport's attempt slot.
    permits: Arc<Semaphore>,
    /// `rateLimit`: the gap between request starts, and the next free start.
    pace: Option<(Duration, tokio::sync::Mutex<Instant>)>,
    paused_until: Mutex<Option<Instant>>,
    failures: AtomicUsize,
    open: OnceLock<String>,
    /// Requests refused because the breaker was open.
    refused: AtomicUsize,
    allowance: Mutex<Option<Allowance>>,
    first: Arc<FirstContact>,
    /// The registry has answered a request this run (any HTTP status).
    heard: AtomicBool,
}

impl Gate {
    pub fn new(host: &str, concurrency: usize, rate_limit: Option<f64>) -> Gate {
        // Configuration keeps the rate in range; a pace that does not fit a Duration is
        // no pace rather than a panic.
        let pace = rate_limit
            .filter(|r| r.is_finite() && *r > 0.0)
            .and_then(|r| Duration::try_from_secs_f64(1.0 / r).ok())
            .map(|pace| (pace, tokio::sync::Mutex::new(Instant::now())));
        Gate {
            host: host.to_string(),
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
            pace,
            paused_until: Mutex::new(None),
            failures: AtomicUsize::new(0),
            open: OnceLock::new(),
            refused: AtomicUsize::new(0),
            allowance: Mutex::new(None),
            first: Arc::default(),
            heard: AtomicBool::new(false),
        }
    }

    /// Wait for a turn: not while the registry is skipped, not before a 429's
    /// `Retry-After`, at most `rateLimit` starts per second, at most `concurrency` at once.
    /// A request Docker Hub counts as a pull (`counts_as_pull`) is refused once the
    /// announced allowance is used up. The registry's first request goes alone (see
    /// [`FirstContact`]).
    pub async fn enter(&self, counts_as_pull: bool) -> Result<Turn, Error> {
        self.check(counts_as_pull)?;
        let first = self.first_contact().await;
        let paused = *self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(until) = paused {
            tokio::time::sleep_until(until).await;
        }
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| Error::Config("registry client closed".into()))?;
        if let Some((gap, next)) = &self.pace {
            let start = {
                let mut next = next.lock().await;
                let start = (*next).max(Instant::now());
                // A gap too long for the clock paces nothing.
                *next = start.checked_add(*gap).unwrap_or(start);
                start
            };
            tokio::time::sleep_until(start).await;
        }
        self.check(counts_as_pull)?;
        Ok(Turn {
            _permit: permit,
            _first: first,
        })
    }

    /// The first caller gets the [`Contacting`] to hold; the others wait until it is
    /// dropped, [`FIRST_CONTACT_WAIT`] at most.
    async fn first_contact(&self) -> Option<Contacting> {
        let deadline = Instant::now().checked_add(FIRST_CONTACT_WAIT)?;
        loop {
            // Made before the state is read, so that a drop in between still wakes it.
            let answered = self.first.answered.notified();
            match self.first.state.compare_exchange(
                UNTRIED,
                TRYING,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(Contacting(Arc::clone(&self.first))),
                Err(ANSWERED) => return None,
                Err(_) => {
                    if tokio::time::timeout_at(deadline, answered).await.is_err() {
                        return None;
                    }
                }
            }
        }
    }

    fn check(&self, counts_as_pull: bool) -> Result<(), Error> {
        if let Some(reason) = self.open.get() {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Err(Error::Skipped {
                host: self.host.clone(),
                reason: reason.clone(),
            });
        }
        if counts_as_pull {
            if let Some(a) = self.allowance() {
                if a.remaining == 0 {
                    return Err(Error::Skipped {
                        host: self.host.clone(),
                        reason: format!("its pull limit is used up ({a})"),
                    });
                }
            }
        }
        Ok(())
    }

    /// Hold every request to this registry until `wait` has passed (a 429's `Retry-After`).
    pub fn pause(&self, wait: Duration) {
        let Some(until) = Instant::now().checked_add(wait) else {
            return;
        };
        let mut paused = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        if paused.is_none_or(|p| p < until) {
            *paused = Some(until);
        }
    }

    /// An attempt timed out (`reason`: how long it waited). A registry that has not
    /// answered anything this run is skipped for the rest of it: its other requests would each
    /// wait as long, so the run waits for it about one request timeout, not one per
    /// reference. One that has answered before gets the usual streak.
    pub fn timed_out(&self, reason: &str) {
        if self.heard.load(Ordering::Relaxed) {
            return;
        }
        let reason = format!("{DID_NOT_ANSWER} ({reason})");
        if self.open.set(reason.clone()).is_ok() {
            tracing::debug!(registry = %self.host, "{reason}; skipping this registry for the rest of the run");
        }
    }

    /// Has the registry answered any request this run?
    pub fn heard(&self) -> bool {
        self.heard.load(Ordering::Relaxed)
    }

    /// Is the registry given up because it never answered ([`Gate::timed_out`])? Then the
    /// request that timed out is not retried either (a retry would be refused anyway, and
    /// its timeout says more than "skipped").
    pub fn gave_up_unheard(&self) -> bool {
        self.open
            .get()
            .is_some_and(|r| r.starts_with(DID_NOT_ANSWER))
    }

    /// Read the allowance headers of any response.
    pub fn observe(&self, headers: &HeaderMap) {
        self.heard.store(true, Ordering::Relaxed);
        if let Some(a) = allowance(headers) {
            *self.allowance.lock().unwrap_or_else(|p| p.into_inner()) = Some(a);
        }
    }

    pub fn allowance(&self) -> Option<Allowance> {
        *self.allowance.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An attempt finished: any answer closes the failure streak; a failure that says the
    /// registry itself is unwell (unreachable, 5xx, 429) extends it, and a long enough
    /// streak opens the breaker.
    pub fn record<T>(&self, result: &Result<T, Error>) {
        match result {
            Ok(_) => self.failures.store(0, Ordering::Relaxed),
            Err(e) if e.is_registry_down() => {
                let n = self
                    .failures
                    .fetch_add(1, Ordering::Relaxed)
                    .saturating_add(1);
                if n >= BREAKER_THRESHOLD {
                    let reason = format!("{n} attempts in a row failed (last: {})", e.short());
                    if self.open.set(reason.clone()).is_ok() {
                        tracing::debug!(registry = %self.host, "{reason}; skipping this registry for the rest of the run");
                    }
                }
            }
            Err(_) => {}
        }
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    /// Why requests to the registry were refused, if any were.
    pub fn skipped(&self) -> Option<&str> {
        if self.refused.load(Ordering::Relaxed) == 0 {
            return None;
        }
        self.open.get().map(String::as_str)
    }
}

/// The pull allowance a registry announces (Docker Hub's `ratelimit-remaining: 76;w=21600`).
fn allowance(headers: &HeaderMap) -> Option<Allowance> {
    let announced = imagebump_http::rate_limit(headers)?;
    Some(Allowance {
        limit: announced.limit,
        remaining: announced.remaining?,
        window: announced.window,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn reads_docker_hub_allowance() {
        let a = allowance(&headers(&[
            ("ratelimit-limit", "100;w=21600"),
            ("ratelimit-remaining", "76;w=21600"),
        ]))
        .unwrap();
        assert_eq!(
            a,
            Allowance {
                limit: Some(100),
                remaining: 76,
                window: Some(21600)
            }
        );
        assert_eq!(a.to_string(), "76 of 100 pulls left per 6h");
        assert_eq!(allowance(&headers(&[("ratelimit-limit", "100")])), None);
    }

    #[tokio::test]
    async fn breaker_opens_after_a_streak_and_a_success_resets_it() {
        let gate = Gate::new("r.example", 2, None);
        let down = || -> Result<(), Error> {
            Err(Error::Server {
                url: "u".into(),
                status: 503,
            })
        };
        for _ in 1..BREAKER_THRESHOLD {
            gate.record(&down());
        }
        gate.record(&Ok::<(), Error>(()));
        for _ in 2..BREAKER_THRESHOLD {
            gate.record(&down());
        }
        gate.record(&Err::<(), _>(Error::NotFound { url: "u".into() }));
        gate.record(&down());
        assert!(
            gate.enter(false).await.is_ok(),
            "a success resets the streak, and a 404 is not the registry being down"
        );
        gate.record(&down());
        let e = gate.enter(false).await.unwrap_err();
        assert!(matches!(e, Error::Skipped { .. }), "{e}");
        assert!(e.to_string().contains("8 attempts in a row failed"), "{e}");
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limit_spaces_request_starts() {
        let gate = Gate::new("r.example", 8, Some(4.0));
        let t0 = tokio::time::Instant::now();
        for _ in 0..5 {
            drop(gate.enter(false).await.unwrap());
        }
        // Five starts at 4/s: the fifth starts one second after the first.
        assert_eq!(t0.elapsed(), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_request_goes_alone_and_the_others_after_its_answer() {
        let gate = Gate::new("r.example", 8, None);
        let first = gate.enter(false).await.unwrap();
        let waiting = tokio::time::timeout(Duration::from_millis(500), gate.enter(false)).await;
        assert!(
            waiting.is_err(),
            "a second request went before the first's answer"
        );
        drop(first);
        let t0 = tokio::time::Instant::now();
        let (a, b) = tokio::join!(gate.enter(false), gate.enter(false));
        assert!(a.is_ok() && b.is_ok());
        assert_eq!(
            t0.elapsed(),
            Duration::ZERO,
            "after the answer, nobody waits"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_first_request_that_takes_long_holds_the_others_a_second_at_most() {
        let gate = Gate::new("r.example", 8, None);
        let _first = gate.enter(false).await.unwrap();
        let t0 = tokio::time::Instant::now();
        assert!(gate.enter(false).await.is_ok());
        assert_eq!(t0.elapsed(), FIRST_CONTACT_WAIT);
    }

    #[tokio::test]
    async fn an_exhausted_allowance_refuses_pulls_only() {
        let gate = Gate::new("registry-1.docker.io", 2, None);
        gate.observe(&headers(&[
            ("ratelimit-limit", "100;w=21600"),
            ("ratelimit-remaining", "0;w=21600"),
        ]));
        assert!(gate.enter(false).await.is_ok());
        let e = gate.enter(true).await.unwrap_err();
        assert!(e.to_string().contains("0 of 100 pulls left per 6h"), "{e}");
    }
}
