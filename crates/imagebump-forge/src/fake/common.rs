//! The plumbing the three fakes share: reading a request into what a [`Call`] records, the
//! fake clock, the queue of faults to inject, and the small JSON and paging helpers. What a
//! forge answers (routes, shapes, errors, auth rules) stays in that forge's file.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// A fake's state answering one request (and recording it): the one thing each fake's
/// wiremock responder does.
pub(crate) trait Serve: Send + 'static {
    fn serve(&mut self, request: &Request) -> ResponseTemplate;
}

struct Responder<S>(Arc<Mutex<S>>);

impl<S: Serve> Respond for Responder<S> {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        lock(&self.0).serve(request)
    }
}

/// Makes `server` answer every request from `state`.
pub(crate) async fn answer_all<S: Serve>(server: &MockServer, state: &Arc<Mutex<S>>) {
    Mock::given(any())
        .respond_with(Responder(state.clone()))
        .mount(server)
        .await;
}

/// One request as a fake received it; `C` is the credential as that fake reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Call<C> {
    pub method: String,
    /// The path as received, prefix included and still encoded.
    pub path: String,
    /// Query pairs in order.
    pub query: Vec<(String, String)>,
    /// The JSON body, if there was one.
    pub body: Option<Value>,
    pub credential: C,
    /// The status the fake answered.
    pub status: u16,
}

impl<C> Call<C> {
    /// `"GET /repos/o/r/pulls"`: for compact assertions on the sequence.
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    pub fn query_value(&self, key: &str) -> Option<&str> {
        query_get(&self.query, key)
    }
}

/// The parts of a request every fake records and routes on.
pub(crate) struct Received {
    /// Upper case.
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<Value>,
}

impl Received {
    /// A body that is not JSON is kept as a string (GitHub and Gitea record it so).
    pub fn with_text_bodies(request: &Request) -> Received {
        let body = (!request.body.is_empty()).then(|| {
            serde_json::from_slice(&request.body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&request.body).into()))
        });
        Received::with_body(request, body)
    }

    /// A body that is not JSON counts as none (GitLab's fake reads it so).
    pub fn with_json_bodies(request: &Request) -> Received {
        let body = if request.body.is_empty() {
            None
        } else {
            serde_json::from_slice(&request.body).ok()
        };
        Received::with_body(request, body)
    }

    fn with_body(request: &Request, body: Option<Value>) -> Received {
        Received {
            method: request.method.as_str().to_ascii_uppercase(),
            path: request.url.path().to_string(),
            query: request
                .url
                .query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
            body,
        }
    }

    pub fn into_call<C>(self, credential: C, status: u16) -> Call<C> {
        Call {
            method: self.method,
            path: self.path,
            query: self.query,
            body: self.body,
            credential,
            status,
        }
    }
}

/// A header's value, when it is text.
pub(crate) fn header(request: &Request, name: &str) -> Option<String> {
    request
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The token of an `Authorization: token x` or `Bearer x` header (either scheme, any case).
pub(crate) fn token_or_bearer(header: &str) -> Option<&str> {
    let (scheme, value) = header.trim().split_once(' ')?;
    (scheme.eq_ignore_ascii_case("token") || scheme.eq_ignore_ascii_case("bearer"))
        .then(|| value.trim())
}

/// A fake's state, even after a test thread panicked while holding it (the state is still
/// what the fake answered last, so later assertions may read it).
pub(crate) fn lock<T>(state: &Mutex<T>) -> MutexGuard<'_, T> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The requests that were not GETs, in order.
pub(crate) fn writes<C>(calls: Vec<Call<C>>) -> Vec<Call<C>> {
    calls.into_iter().filter(|c| c.method != "GET").collect()
}

/// The first value of a query parameter.
pub(crate) fn query_get<'a>(query: &'a [(String, String)], key: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// Start of the fake clock: 2024-01-01T00:00:00Z.
pub(crate) const CLOCK_START: i64 = 1_704_067_200;

/// A clock that ticks one second per change from 2024-01-01T00:00:00Z, so "most recently
/// updated" is deterministic.
pub(crate) struct Clock(i64);

impl Clock {
    pub fn new() -> Clock {
        Clock(CLOCK_START)
    }

    /// The next second.
    pub fn tick(&mut self) -> i64 {
        self.0 += 1;
        self.0
    }
}

/// Faults waiting to be answered instead of acting: each matches a method and a route
/// (any for `None`) for so many requests, the first queued first.
pub(crate) struct Faults<F> {
    pending: VecDeque<PendingFault<F>>,
}

struct PendingFault<F> {
    method: Option<String>,
    route: Option<String>,
    remaining: usize,
    fault: F,
}

impl<F: Clone> Faults<F> {
    pub fn new() -> Faults<F> {
        Faults {
            pending: VecDeque::new(),
        }
    }

    /// The next `times` requests matching `method` (upper-cased here) and `route` answer
    /// `fault`.
    pub fn push(&mut self, method: Option<&str>, route: Option<&str>, times: usize, fault: F) {
        self.pending.push_back(PendingFault {
            method: method.map(str::to_ascii_uppercase),
            route: route.map(str::to_string),
            remaining: times,
            fault,
        });
    }

    /// The fault this request answers, if one is due; counts it as used.
    pub fn take(&mut self, method: &str, route: &str) -> Option<F> {
        let index = self.pending.iter().position(|f| {
            f.remaining > 0
                && f.method.as_deref().is_none_or(|m| m == method)
                && f.route.as_deref().is_none_or(|r| r == route)
        })?;
        let pending = &mut self.pending[index];
        pending.remaining -= 1;
        let fault = pending.fault.clone();
        if pending.remaining == 0 {
            self.pending.remove(index);
        }
        Some(fault)
    }
}

/// A `Link` URL for `page`: the request's own query with its `page` replaced.
pub(crate) fn page_url(base: &str, route: &str, query: &[(String, String)], page: usize) -> String {
    let mut pairs: Vec<String> = query
        .iter()
        .filter(|(k, _)| k != "page")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    pairs.push(format!("page={page}"));
    format!("<{base}{route}?{}>", pairs.join("&"))
}

/// `page` (from 1) of a list request; 1 when absent or not a number.
pub(crate) fn page_number(query: &[(String, String)]) -> usize {
    query_get(query, "page")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1)
}

/// `per_page` of a list request: `default` when absent or not a number, within 1 to 100.
pub(crate) fn per_page(query: &[(String, String)], default: usize) -> usize {
    query_get(query, "per_page")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(default)
        .clamp(1, 100)
}

/// The strings of a JSON array (other items skipped); none for anything else.
pub(crate) fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Appends the items `list` lacks, in order.
pub(crate) fn add_unique(list: &mut Vec<String>, items: Vec<String>) {
    for item in items {
        if !list.contains(&item) {
            list.push(item);
        }
    }
}

/// ISO 8601 UTC to the second, as GitHub and Gitea (running in UTC) write it:
/// `2024-01-01T00:00:05Z`.
pub(crate) fn timestamp(seconds: i64) -> String {
    strftime(seconds, "%Y-%m-%dT%H:%M:%SZ")
}

/// ISO 8601 UTC with milliseconds, as GitLab writes it: `2024-01-01T00:00:05.000Z`.
pub(crate) fn timestamp_millis(seconds: i64) -> String {
    strftime(seconds, "%Y-%m-%dT%H:%M:%S.000Z")
}

fn strftime(seconds: i64, format: &str) -> String {
    jiff::Timestamp::from_second(seconds)
        .map(|t| t.strftime(format).to_string())
        .unwrap_or_default()
}

/// The visibility of `repo` (`public`, `private`, `internal`) as a test set it; a
/// repository with releases and none set is `private`; `None`: the fake holds no such
/// repository.
pub(crate) fn visibility_of(
    visibility: &std::collections::BTreeMap<String, String>,
    releases: &std::collections::BTreeMap<String, Vec<Value>>,
    repo: &str,
) -> Option<String> {
    let key = repo.to_ascii_lowercase();
    match visibility.get(&key) {
        Some(v) => Some(v.clone()),
        None => releases.contains_key(&key).then(|| "private".to_string()),
    }
}

/// The answer to `GET …/releases` of `repo`: its releases (newest first), the first
/// `per_page` (or Gitea's `limit`) of them; `None` when the fake holds no such repository
/// (the caller answers 404, as the forges do).
pub(crate) fn releases_page(
    releases: &std::collections::BTreeMap<String, Vec<Value>>,
    repo: &str,
    query: &[(String, String)],
) -> Option<(u16, wiremock::ResponseTemplate)> {
    let list = releases.get(&repo.to_ascii_lowercase())?;
    let limit = query_get(query, "per_page")
        .or_else(|| query_get(query, "limit"))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(30);
    let page: Vec<Value> = list.iter().take(limit).cloned().collect();
    Some((
        200,
        wiremock::ResponseTemplate::new(200).set_body_json(page),
    ))
}
