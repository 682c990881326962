//! Telling others about a run: the `notify:` receivers (a generic webhook, Slack) and the
//! Prometheus Pushgateway. Everything goes through the one HTTP transport.
//!
//! A receiver hears only of changes: pull requests opened, updated or closed, commits
//! pushed, and failures; a rerun that changes nothing sends nothing. A notification is sent
//! again after a 5xx, a 429 or a broken connection (with the transport's backoff), under one
//! delivery id, so a receiver can drop a repeat. One that cannot be delivered is reported;
//! it never fails the run's work (docs/configuration.md, "notify").

pub mod pushgateway;
pub mod slack;
pub mod webhook;

use std::collections::BTreeSet;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;

use crate::report::{NotificationReport, RunReport};
use imagebump_http::{header, Method, Plain, Redactor, Request, RetryPolicy, Transport, Url};
use imagebump_model::config::{NotifyEvent, NotifyTarget};
use imagebump_model::env::EnvVars;
use imagebump_model::Problem;

/// What a run has to tell, as plain data (the webhook body is made from it).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct News {
    /// The repository, without credentials (a local directory: its path).
    pub repository: String,
    pub mode: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    pub pull_requests: Vec<PullNews>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pushed: Option<Pushed>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<Failed>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PullNews {
    pub event: NotifyEvent,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub title: String,
    pub branch: String,
    pub updates: Vec<UpdateNews>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateNews {
    pub image: String,
    pub from: String,
    pub to: String,
    pub file: String,
    pub line: usize,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pushed {
    pub commit: String,
    pub updates: Vec<UpdateNews>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Failed {
    /// Why the run stopped, when it could not run to its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    pub errors: Vec<Problem>,
}

impl News {
    /// The news of a run that got to its report.
    pub fn of(report: &RunReport, repository: &str) -> News {
        let update = |u: std::borrow::Cow<crate::plan::Update>| UpdateNews {
            image: u.name.to_string(),
            from: u.from.to_string(),
            to: u.to.to_string(),
            file: u.written_to.as_deref().unwrap_or(&u.file).to_string(),
            line: u.line as usize,
        };
        let pull_requests = crate::report::pull_events(report)
            .into_iter()
            .map(|(event, p)| PullNews {
                event: event_named(event),
                number: p.number,
                url: p.url.clone(),
                title: p.title.clone(),
                branch: p.branch.clone(),
                updates: report
                    .updates
                    .iter()
                    .filter(|u| *u.group == *p.group)
                    .map(update)
                    .collect(),
            })
            .collect();
        let pushed = report
            .pushed
            .filter(|_| report.mode != "dry-run")
            .map(|sha| Pushed {
                commit: sha.to_string(),
                updates: crate::report::pushed_updates(report)
                    .into_iter()
                    .map(update)
                    .collect(),
            });
        News {
            repository: repository.to_string(),
            mode: report.mode.to_string(),
            commit: report.commit.map(str::to_string),
            pull_requests,
            pushed,
            failed: (!report.errors.is_empty()).then(|| Failed {
                stopped: None,
                errors: report.errors.to_vec(),
            }),
        }
    }

    /// The news of a run that could not run to its end.
    pub fn stopped(repository: &str, mode: &str, why: String) -> News {
        News {
            repository: repository.to_string(),
            mode: mode.to_string(),
            failed: Some(Failed {
                stopped: Some(why),
                errors: Vec::new(),
            }),
            ..News::default()
        }
    }

    /// The events this news holds.
    pub fn events(&self) -> BTreeSet<NotifyEvent> {
        let mut events: BTreeSet<NotifyEvent> =
            self.pull_requests.iter().map(|p| p.event).collect();
        if self.pushed.is_some() {
            events.insert(NotifyEvent::Pushed);
        }
        if self.failed.is_some() {
            events.insert(NotifyEvent::Failed);
        }
        events
    }

    /// Only what a receiver listening to `on` hears.
    pub fn only(&self, on: &BTreeSet<NotifyEvent>) -> News {
        let mut news = self.clone();
        news.pull_requests.retain(|p| on.contains(&p.event));
        if !on.contains(&NotifyEvent::Pushed) {
            news.pushed = None;
        }
        if !on.contains(&NotifyEvent::Failed) {
            news.failed = None;
        }
        news
    }
}

fn event_named(name: &str) -> NotifyEvent {
    match name {
        "opened" => NotifyEvent::Opened,
        "updated" => NotifyEvent::Updated,
        _ => NotifyEvent::Closed,
    }
}

/// Tell every receiver what it listens to; one report per receiver that had something to
/// hear. Receivers are told one after another (there are few).
pub async fn send_all(targets: &[NotifyTarget], news: &News) -> Vec<NotificationReport> {
    let mut reports = Vec::new();
    for (i, target) in targets.iter().enumerate() {
        let on: BTreeSet<NotifyEvent> = target.on.iter().copied().collect();
        let events: Vec<NotifyEvent> = news.events().intersection(&on).copied().collect();
        if events.is_empty() {
            continue;
        }
        let news = news.only(&on);
        let kind = if target.slack.is_some() {
            "slack"
        } else {
            "webhook"
        };
        let label = format!("{kind} notify[{i}]");
        let (attempts, result) = match prepare(target, &news, &events) {
            Ok(sent) => post(&sent).await,
            Err(e) => (0, Err(e)),
        };
        reports.push(NotificationReport {
            target: label,
            events: events.iter().map(|e| e.name().to_string()).collect(),
            delivered: result.is_ok(),
            attempts,
            error: result.err().map(|e| e.to_string()),
        });
    }
    reports
}

/// A request ready to go, with what must never be shown.
pub struct Outgoing {
    pub url: Url,
    pub headers: header::HeaderMap,
    pub body: Vec<u8>,
    /// The URL and key, for the redactor.
    pub secrets: Vec<SecretString>,
}

/// Why a notification was not sent. No variant holds a secret: a URL or key is named by
/// where it is read from (`env:VAR`, `file:PATH`), never by its value.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error("env:{0} is not set")]
    Unset(String),
    #[error("file:{path}: {source}")]
    Unreadable {
        path: String,
        source: std::io::Error,
    },
    #[error("file:{0} is empty")]
    Empty(String),
    /// `receiver`: `webhook`, `slack` or `--pushgateway`.
    #[error("{receiver}: {error}")]
    Url {
        receiver: &'static str,
        error: UrlError,
    },
    #[error("neither webhook nor slack")]
    NoReceiver,
    #[error("the request could not be built: {0}")]
    Build(String),
    /// The transport could not be made, or the receiver did not take the request (the
    /// text redacted).
    #[error("{0}")]
    Delivery(String),
}

/// Why a URL is refused; the URL itself is not quoted (a Slack webhook's path is its secret).
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    #[error("not a URL ({0})")]
    Malformed(String),
    #[error("not an http(s) URL")]
    NotHttp,
}

impl UrlError {
    /// The error of a URL read for `receiver`.
    pub fn of(self, receiver: &'static str) -> NotifyError {
        NotifyError::Url {
            receiver,
            error: self,
        }
    }
}

fn prepare(
    target: &NotifyTarget,
    news: &News,
    events: &[NotifyEvent],
) -> Result<Outgoing, NotifyError> {
    match (&target.webhook, &target.slack) {
        (Some(url), _) => {
            let url = secret_value(url)?;
            let key = target.secret.as_deref().map(secret_value).transpose()?;
            webhook::request(url, key, news, events)
        }
        (None, Some(url)) => slack::request(secret_value(url)?, news),
        (None, None) => Err(NotifyError::NoReceiver),
    }
}

/// `env:VAR` (the variable's value), `file:PATH` (the file's first line) or the text itself.
/// Errors name the variable or file, never a value.
pub fn secret_value(spec: &str) -> Result<SecretString, NotifyError> {
    let value = read_secret_value(spec)?;
    // A webhook URL or key is a secret in every message of the run.
    imagebump_http::hold(value.expose_secret());
    Ok(value)
}

/// [`secret_value`], read.
fn read_secret_value(spec: &str) -> Result<SecretString, NotifyError> {
    if let Some(var) = spec.strip_prefix("env:") {
        let value = EnvVars::get(var).unwrap_or_default();
        if value.trim().is_empty() {
            return Err(NotifyError::Unset(var.to_string()));
        }
        return Ok(SecretString::from(value.trim().to_string()));
    }
    if let Some(path) = spec.strip_prefix("file:") {
        let text = std::fs::read_to_string(path).map_err(|source| NotifyError::Unreadable {
            path: path.to_string(),
            source,
        })?;
        let line = text.lines().next().unwrap_or_default().trim().to_string();
        if line.is_empty() {
            return Err(NotifyError::Empty(path.to_string()));
        }
        return Ok(SecretString::from(line));
    }
    Ok(SecretString::from(spec.to_string()))
}

/// A URL from its secret text; the error does not quote it.
pub fn parse_url(url: &SecretString) -> Result<Url, UrlError> {
    let parsed =
        Url::parse(url.expose_secret().trim()).map_err(|e| UrlError::Malformed(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(UrlError::NotHttp);
    }
    Ok(parsed)
}

/// The transport for notifications and pushes: each request sent once by the transport, so
/// that [`post`] can send a POST again (see there); 10 s an attempt.
fn transport() -> Result<Transport, NotifyError> {
    Transport::new(imagebump_http::Options {
        timeout: Duration::from_secs(10),
        retry: RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        },
        ..imagebump_http::Options::default()
    })
    .map_err(NotifyError::Delivery)
}

/// POST `sent`, again after a 5xx, a 429 or a broken connection, with the transport's
/// backoff and limits (4 attempts). The transport never repeats a POST because it may have
/// taken effect; here a repeat is what the receiver is told to expect: each carries the
/// same delivery id (webhook) or replaces the same series (Pushgateway). Returns the
/// attempts made and, on failure, why (redacted).
pub async fn post(sent: &Outgoing) -> (u32, Result<(), NotifyError>) {
    let redactor = sent.secrets.iter().fold(Redactor::default(), |r, s| {
        let r = r.with(s.expose_secret());
        // A long path is the secret of a Slack-like URL; a short one ("/") is no secret.
        match Url::parse(s.expose_secret()) {
            Ok(u) if u.path().len() > 8 => r.with(u.as_str()).with(u.path()),
            Ok(u) => r.with(u.as_str()),
            Err(_) => r,
        }
    });
    let transport = match transport() {
        Ok(t) => t,
        Err(e) => {
            return (
                0,
                Err(NotifyError::Delivery(redactor.apply(&e.to_string()))),
            )
        }
    };
    let request = Request {
        method: Method::POST,
        url: sent.url.clone(),
        headers: sent.headers.clone(),
        body: Some(sent.body.clone()),
        limit: 64 * 1024,
    };
    let policy = RetryPolicy::default();
    let started = tokio::time::Instant::now();
    let mut attempt: u32 = 0;
    loop {
        attempt = attempt.saturating_add(1);
        let error = match transport.send(&Plain, &request).await {
            Ok(_) => return (attempt, Ok(())),
            Err(e) => e,
        };
        let why = redactor.apply(&describe(&error));
        match policy.wait(true, &error, attempt, started.elapsed()) {
            Some(wait) => {
                tracing::debug!(
                    attempt,
                    wait_ms = wait.as_millis() as u64,
                    "notification not delivered ({why}); retrying"
                );
                tokio::time::sleep(wait).await;
            }
            None => return (attempt, Err(NotifyError::Delivery(why))),
        }
    }
}

/// What went wrong, without the URL (a Slack webhook's path is its secret).
fn describe(e: &imagebump_http::Error) -> String {
    use imagebump_http::Error as E;
    match e {
        E::RateLimited { .. } => "rate limited (HTTP 429)".into(),
        E::Server { status, .. } => format!("HTTP {status} from the receiver"),
        E::Status { status, .. } => format!("HTTP {status}"),
        E::Timeout { reason, .. } => format!("timed out: {reason}"),
        E::Connection { reason, .. }
        | E::Truncated { reason, .. }
        | E::Transport { reason, .. } => reason.clone(),
        E::TooLarge { limit, .. } => format!("answer larger than {limit} bytes"),
        E::PlainHttp { .. } => "the receiver speaks plain HTTP: use an http:// URL".into(),
    }
}

/// `receiver: why` warnings for the notifications that were not delivered.
pub fn warnings(reports: &[NotificationReport]) -> Vec<String> {
    reports
        .iter()
        .filter(|r| !r.delivered)
        .map(|r| {
            format!(
                "{}: {} not delivered after {} attempt(s): {} (the run's work is done; see docs/configuration.md, \"notify\")",
                r.target,
                r.events.join(", "),
                r.attempts,
                r.error.as_deref().unwrap_or_default()
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn news_keeps_what_a_receiver_listens_to() {
        let news = News {
            pull_requests: vec![PullNews {
                event: NotifyEvent::Opened,
                number: Some(1),
                url: None,
                title: "t".into(),
                branch: "b".into(),
                updates: vec![],
            }],
            failed: Some(Failed {
                stopped: Some("x".into()),
                errors: vec![],
            }),
            ..News::default()
        };
        assert_eq!(
            news.events(),
            [NotifyEvent::Opened, NotifyEvent::Failed].into()
        );
        let only = news.only(&[NotifyEvent::Failed].into());
        assert!(only.pull_requests.is_empty());
        assert!(only.failed.is_some());
        assert!(
            News::default().events().is_empty(),
            "no change, nothing to send"
        );
    }

    #[test]
    fn secrets_come_from_the_environment_and_errors_name_only_the_variable() {
        let e = secret_value("env:IMAGEBUMP_TEST_SURELY_UNSET_VARIABLE").unwrap_err();
        assert_eq!(
            e.to_string(),
            "env:IMAGEBUMP_TEST_SURELY_UNSET_VARIABLE is not set"
        );
        assert_eq!(
            secret_value("https://x.test/a").unwrap().expose_secret(),
            "https://x.test/a"
        );
    }
}
