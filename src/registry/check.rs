//! The probes behind `imagebump registry check` (the command is `app/registry_check.rs`):
//! for each registry, which credentials source answered, whether the registry accepted it,
//! and how much rate-limit headroom is left. Never a secret: sources are named, user names
//! shown, passwords and tokens never.

use std::sync::Arc;

use serde::Serialize;

use super::client::Client;
use super::{prefix_host, Error, Registries, DEFAULT_CONCURRENCY};
use imagebump_model::credentials::Source;
use imagebump_model::name::{self, ImageName, DOCKER_HUB};

/// The outcome for one registry prefix or image.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Checked {
    pub target: String,
    pub registry: String,
    pub endpoint: String,
    /// The source and where its answer came from, e.g. `ecr (ECR GetAuthorizationToken
    /// (eu-west-1) with AWS environment keys, user AWS)`.
    pub credentials: String,
    /// Did the registry accept the credentials (`GET /v2/`, with a token for the image)?
    pub ok: bool,
    pub auth: String,
    /// For an image: reading its first page of tags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    pub concurrency: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<f64>,
    /// The pull allowance the registry announced (Docker Hub's `ratelimit-remaining`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowance: Option<String>,
}

/// A target as the user named it: the registry host and, if given, a repository path.
fn split_target(target: &str) -> (String, Option<String>) {
    let target = target.trim().trim_end_matches('/');
    let host = prefix_host(target);
    let first = target.split('/').next().unwrap_or_default();
    let names_host = first.contains('.') || first.contains(':') || first == "localhost";
    if !names_host {
        // `nginx`, `acme/web`: Docker Hub images.
        return match name::parse_name(target) {
            Ok(n) => (n.registry, Some(n.repository)),
            Err(_) => (host, None),
        };
    }
    let rest = target
        .split_once('/')
        .map_or("", |(_, rest)| rest)
        .trim_start_matches('/');
    (host, (!rest.is_empty()).then(|| rest.to_string()))
}

/// The image a target is checked as: its repository, or a placeholder under a bare
/// registry prefix; and the repository when the target names one.
pub fn target_image(target: &str) -> (ImageName, Option<String>) {
    let (host, repo) = split_target(target);
    let image = ImageName {
        registry: host,
        repository: repo.clone().unwrap_or_else(|| "imagebump-check".into()),
    };
    (image, repo)
}

/// Check one target with the client a run would use for it: `rule_credentials` is the
/// credentials source of the `images` rule that applies to it, if any.
pub async fn check_one(
    registries: &Registries,
    target: &str,
    rule_credentials: Option<&str>,
) -> Checked {
    let (image, repo) = target_image(target);
    let host = image.registry.clone();
    let entry = registries.entry_for(&image);
    let mut out = Checked {
        target: target.to_string(),
        registry: host.clone(),
        endpoint: String::new(),
        credentials: String::new(),
        ok: false,
        auth: String::new(),
        read: None,
        concurrency: entry
            .and_then(|e| e.concurrency)
            .unwrap_or(DEFAULT_CONCURRENCY),
        rate_limit: entry.and_then(|e| e.rate_limit),
        allowance: None,
    };
    let client = match registries.client_with(&image, rule_credentials) {
        Ok(c) => c,
        Err(e) => {
            out.auth = format!("failed: {e}");
            return out;
        }
    };
    out.endpoint = client.endpoint.clone();
    if let Err(reason) = client.credentials().get().await {
        out.credentials = client.credentials().source().describe();
        out.auth = format!("failed: {reason}");
        return out;
    }
    out.credentials = client.credentials().describe_current().await;
    match client.probe(repo.as_deref()).await {
        Ok(how) => {
            out.ok = true;
            out.auth = format!("ok ({how})");
        }
        Err(e) => out.auth = failure(&e, client.credentials().source()),
    }
    if let (true, Some(repo)) = (out.ok, &repo) {
        out.read = Some(match client.first_tags(repo, 5).await {
            Ok(tags) => format!("ok ({} tag(s) on the first page)", tags.len()),
            Err(Error::NotFound { .. }) => {
                "no such repository (or no access to it); a prefix is fine".to_string()
            }
            Err(e) => {
                out.ok = false;
                format!("failed: {e}")
            }
        });
    }
    out.allowance = allowance(&client, &host).await;
    out
}

/// Docker Hub announces its pull allowance on a manifest HEAD of its preview image, which
/// does not count as a pull; other registries announce it (if at all) on any response.
async fn allowance(client: &Arc<Client>, host: &str) -> Option<String> {
    if host == DOCKER_HUB && client.gate().allowance().is_none() {
        let _ = client
            .manifest_digest("ratelimitpreview/test", "latest")
            .await;
    }
    client.gate().allowance().map(|a| a.to_string())
}

fn failure(e: &Error, source: &Source) -> String {
    match e {
        Error::Unauthorized { .. } if *source == Source::Anonymous => {
            format!(
                "failed: {e} (anonymous: the registry wants credentials; see docs/registries.md)"
            )
        }
        Error::Unauthorized { sent_from: None, .. } => format!(
            "failed: {e} (no credentials were sent: {} has none for this host; see docs/registries.md)",
            source.describe()
        ),
        other => format!("failed: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_name_a_host_and_maybe_a_repository() {
        assert_eq!(split_target("ghcr.io"), ("ghcr.io".into(), None));
        assert_eq!(
            split_target("ghcr.io/acme/web/"),
            ("ghcr.io".into(), Some("acme/web".into()))
        );
        assert_eq!(
            split_target("127.0.0.1:5000/team"),
            ("127.0.0.1:5000".into(), Some("team".into()))
        );
        assert_eq!(
            split_target("nginx"),
            (DOCKER_HUB.into(), Some("library/nginx".into()))
        );
        assert_eq!(split_target("docker.io"), (DOCKER_HUB.into(), None));
    }
}
