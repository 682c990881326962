//! Talking to container registries over the OCI distribution API.
//!
//! One [`client::Client`] per configured registry entry (or per host when none is
//! configured), each with its own credentials, TLS settings, token cache and concurrency
//! bound. Tag lists are read with our own pager that follows `Link` headers.

pub mod auth;
pub mod client;
pub mod manifest;
pub mod name;
mod tls;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use crate::config::RegistryConfig;
pub use client::Client;
use name::{ImageName, DOCKER_HUB};

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    #[error("cannot reach {url}: {reason}")]
    Transport {
        url: String,
        reason: String,
        retryable: bool,
    },
    #[error("{url}: HTTP {status} from the registry")]
    Server { url: String, status: u16 },
    #[error("{url}: rate limited (HTTP 429)")]
    RateLimited {
        url: String,
        retry_after: Option<Duration>,
    },
    #[error("{url}: HTTP {status}: not authorized")]
    Unauthorized { url: String, status: u16 },
    #[error("{url}: repository or tag not found (HTTP 404)")]
    NotFound { url: String },
    #[error("{url}: unexpected HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: response larger than {limit} bytes, refused")]
    TooLarge { url: String, limit: usize },
    #[error("{url}: {reason}")]
    Invalid { url: String, reason: String },
    #[error("registry configuration: {0}")]
    Config(String),
}

impl Error {
    /// Timeouts, connection failures, 429 and 5xx are worth another try.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::Transport {
                retryable: true,
                ..
            } | Error::Server { .. }
                | Error::RateLimited { .. }
        )
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Unauthorized { .. } => Some(
                "add credentials: `docker login` (Docker config.json / DOCKER_CONFIG) or registries[].credentials: env:VAR in imagebump.yaml".into(),
            ),
            Error::Transport { reason, .. } if reason.contains("certificate") || reason.contains("tls") => {
                Some("add the registry's CA with registries[].caFile in imagebump.yaml".into())
            }
            Error::Transport { .. } => Some("check the host, or set registries[].url for a mirror or a plain-HTTP registry".into()),
            Error::RateLimited { .. } => Some("lower registries[].concurrency or run less often".into()),
            Error::NotFound { .. } => Some("check the image name; private repositories may also answer 404 without credentials".into()),
            _ => None,
        }
    }
}

/// Requests made during the run, by kind (reported, and asserted by tests).
#[derive(Debug, Default)]
pub struct Stats {
    pub tag_pages: AtomicUsize,
    pub tokens: AtomicUsize,
    pub manifests: AtomicUsize,
    /// Blob GETs (image configs).
    pub blobs: AtomicUsize,
    pub retries: AtomicUsize,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatsSnapshot {
    pub tag_list_pages: usize,
    pub tokens: usize,
    pub manifests: usize,
    pub blobs: usize,
    pub retries: usize,
}

impl Stats {
    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            tag_list_pages: self.tag_pages.load(Ordering::Relaxed),
            tokens: self.tokens.load(Ordering::Relaxed),
            manifests: self.manifests.load(Ordering::Relaxed),
            blobs: self.blobs.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
        }
    }
}

/// All registry clients of a run.
pub struct Registries {
    configs: Vec<RegistryConfig>,
    clients: Mutex<HashMap<String, Arc<Client>>>,
    pub stats: Arc<Stats>,
}

fn default_endpoint(host: &str) -> String {
    if host == DOCKER_HUB {
        "https://registry-1.docker.io".to_string()
    } else {
        format!("https://{host}")
    }
}

/// Does the normalised name `full` fall under `prefix` (on a path-segment boundary)?
fn prefix_matches(prefix: &str, full: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    full == prefix || (full.starts_with(prefix) && full.as_bytes().get(prefix.len()) == Some(&b'/'))
}

impl Registries {
    /// Build a client for every configured entry up front, so a bad `caFile` or credentials
    /// source is a configuration error before any work starts.
    pub fn new(configs: Vec<RegistryConfig>) -> Result<Self, Error> {
        let stats = Arc::new(Stats::default());
        let mut clients = HashMap::new();
        for (i, c) in configs.iter().enumerate() {
            let host = c.prefix.split('/').next().unwrap_or_default();
            let host = match name::parse_name(&format!("{host}/x")) {
                Ok(n) => n.registry,
                Err(_) => host.to_string(),
            };
            let client = Client::new(&host, default_endpoint(&host), Some(c), stats.clone())
                .map_err(|e| {
                    let detail = match e {
                        Error::Config(m) => m,
                        other => other.to_string(),
                    };
                    Error::Config(format!("registries[{i}] (prefix {}): {detail}", c.prefix))
                })?;
            clients.insert(format!("#{i}"), Arc::new(client));
        }
        Ok(Registries {
            configs,
            clients: Mutex::new(clients),
            stats,
        })
    }

    /// The client for an image: the first `registries[]` entry whose prefix matches, else a
    /// default client for its host.
    pub fn client_for(&self, image: &ImageName) -> Result<Arc<Client>, Error> {
        let full = image.to_string();
        let matched = self
            .configs
            .iter()
            .enumerate()
            .find(|(_, c)| prefix_matches(&c.prefix, &full));
        let key = match matched {
            Some((i, _)) => format!("#{i}"),
            None => image.registry.clone(),
        };
        let mut clients = self
            .clients
            .lock()
            .map_err(|_| Error::Config("client cache poisoned".into()))?;
        if let Some(c) = clients.get(&key) {
            return Ok(c.clone());
        }
        let client = Arc::new(Client::new(
            &image.registry,
            default_endpoint(&image.registry),
            matched.map(|(_, c)| c),
            self.stats.clone(),
        )?);
        clients.insert(key, client.clone());
        Ok(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_match_on_segment_boundaries() {
        assert!(prefix_matches("ghcr.io", "ghcr.io/acme/web"));
        assert!(prefix_matches("ghcr.io/acme", "ghcr.io/acme/web"));
        assert!(prefix_matches("ghcr.io/acme/", "ghcr.io/acme/web"));
        assert!(!prefix_matches("ghcr.io/acme", "ghcr.io/acmeco/web"));
        assert!(prefix_matches("ghcr.io/acme/web", "ghcr.io/acme/web"));
    }
}
