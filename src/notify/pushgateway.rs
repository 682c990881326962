//! Pushing the run's metrics to a Prometheus Pushgateway, grouped by job and repository.
//!
//! A POST replaces the pushed metric names of the group and keeps the others: a failed run
//! pushes no `imagebump_last_success_timestamp_seconds`, so the group keeps the last
//! successful run's, and a staleness alert sees how old it is (docs/kubernetes.md).

use base64::Engine as _;
use secrecy::{ExposeSecret, SecretString};

use super::Outgoing;
use imagebump_http::header::{HeaderMap, HeaderValue, CONTENT_TYPE};

/// The grouping key's `job`.
pub const JOB: &str = "imagebump";

/// The push of `text` (the metrics, without `job` or `repository` labels) to the
/// Pushgateway at `base`, under the group (job, repository).
pub fn request(base: &str, repository: &str, text: String) -> Result<Outgoing, super::NotifyError> {
    let secret = SecretString::from(base.trim().trim_end_matches('/').to_string());
    let b64 = base64::engine::general_purpose::URL_SAFE.encode(repository.as_bytes());
    // `@base64`: a repository has slashes, which a path segment may not hold.
    let full = format!(
        "{}/metrics/job/{JOB}/repository@base64/{b64}",
        secret.expose_secret()
    );
    let url = super::parse_url(&SecretString::from(full)).map_err(|e| e.of("--pushgateway"))?;
    let mut headers = HeaderMap::new();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    Ok(Outgoing {
        url,
        headers,
        body: text.into_bytes(),
        secrets: vec![secret],
    })
}
