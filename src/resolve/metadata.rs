//! Image metadata for the policies that need it, fetched once per run: tags are mutable,
//! digests are not, so manifests fetched by digest and config blobs are cached by digest
//! (many tags share one image), and a tag's manifest is fetched once however many
//! references ask for it. Concurrent askers of the same thing share one request.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use crate::policy::evaluate::{Build, Meta};
use crate::registry::client::Client;
use crate::registry::manifest::{ImageConfig, Manifest, Platform};
use crate::registry::Error;

type Cell<T, E> = Arc<OnceCell<Result<T, E>>>;

/// A map from key to a value computed once, by the first asker.
struct Memo<T, E = String>(Mutex<HashMap<(String, String), Cell<T, E>>>);

impl<T: Clone, E: Clone> Memo<T, E> {
    fn new() -> Self {
        Memo(Mutex::new(HashMap::new()))
    }

    async fn get<F, Fut>(&self, key: (String, String), fetch: F) -> Result<T, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let cell = match self.0.lock() {
            Ok(mut map) => map.entry(key).or_default().clone(),
            // A poisoned map only means another task panicked; fetch without caching.
            Err(_) => Arc::new(OnceCell::new()),
        };
        cell.get_or_init(fetch).await.clone()
    }
}

/// What a policy needs to know about a tag.
#[derive(Debug, Clone, Copy)]
pub struct Need<'a> {
    /// Platforms and build dates (`false`: the digest is enough).
    pub builds: bool,
    /// Build dates of the requested platforms' images (needs their config blobs).
    pub created: bool,
    pub platforms: &'a [Platform],
}

pub struct MetaCache {
    /// Kept as registry errors: digest pinning reports them with their hints.
    digests: Memo<String, Error>,
    manifests: Memo<(String, Manifest)>,
    configs: Memo<ImageConfig>,
}

impl Default for MetaCache {
    fn default() -> Self {
        MetaCache {
            digests: Memo::new(),
            manifests: Memo::new(),
            configs: Memo::new(),
        }
    }
}

impl MetaCache {
    /// The metadata of `repo:tag` that `need` asks for. `image` (the normalised name) keys
    /// the cache, since a digest is only fetchable from its own repository.
    pub async fn tag_meta(
        &self,
        client: &Client,
        image: &str,
        repo: &str,
        tag: &str,
        need: Need<'_>,
    ) -> Result<Meta, String> {
        if !need.builds {
            let digest = self
                .digest(client, image, repo, tag)
                .await
                .map_err(|e| e.to_string())?;
            return Ok(Meta {
                digest,
                builds: Vec::new(),
            });
        }
        let (digest, manifest) = self.manifest(client, image, repo, tag).await?;
        let builds = match manifest {
            Manifest::Image { config_digest } => {
                let config = self.config(client, image, repo, &config_digest).await?;
                vec![Build {
                    platform: config.platform,
                    created: config.created,
                }]
            }
            Manifest::Index { manifests } => {
                let mut builds = Vec::with_capacity(manifests.len());
                for entry in manifests {
                    let wanted = need.platforms.is_empty()
                        || entry
                            .platform
                            .as_ref()
                            .is_some_and(|p| need.platforms.iter().any(|w| p.satisfies(w)));
                    let created = if need.created && wanted {
                        self.child_created(client, image, repo, &entry.digest)
                            .await?
                    } else {
                        None
                    };
                    builds.push(Build {
                        platform: entry.platform,
                        created,
                    });
                }
                builds
            }
        };
        Ok(Meta { digest, builds })
    }

    /// The digest `repo:tag` points to: one HEAD per run, however many references (and
    /// which stage: a `digest` policy, or pinning the digest of a chosen tag) ask for it.
    pub async fn digest(
        &self,
        client: &Client,
        image: &str,
        repo: &str,
        tag: &str,
    ) -> Result<String, Error> {
        self.digests
            .get((image.into(), tag.into()), || {
                client.manifest_digest(repo, tag)
            })
            .await
    }

    async fn manifest(
        &self,
        client: &Client,
        image: &str,
        repo: &str,
        reference: &str,
    ) -> Result<(String, Manifest), String> {
        self.manifests
            .get((image.into(), reference.into()), || async {
                client
                    .manifest(repo, reference)
                    .await
                    .map_err(|e| e.to_string())
            })
            .await
    }

    async fn config(
        &self,
        client: &Client,
        image: &str,
        repo: &str,
        digest: &str,
    ) -> Result<ImageConfig, String> {
        self.configs
            .get((image.into(), digest.into()), || async {
                client
                    .image_config(repo, digest)
                    .await
                    .map_err(|e| e.to_string())
            })
            .await
    }

    /// The build date of one platform image inside an index.
    async fn child_created(
        &self,
        client: &Client,
        image: &str,
        repo: &str,
        digest: &str,
    ) -> Result<Option<jiff::Timestamp>, String> {
        match self.manifest(client, image, repo, digest).await?.1 {
            Manifest::Image { config_digest } => Ok(self
                .config(client, image, repo, &config_digest)
                .await?
                .created),
            Manifest::Index { .. } => Err(format!("{digest}: an index nested in an index")),
        }
    }
}

/// The `org.opencontainers.image.source` label of `repo:tag` (of its first image, for an
/// index), for links in pull requests. Two or three requests; `None` on any failure.
pub async fn source_label(client: &Client, repo: &str, tag: &str) -> Option<String> {
    let (_, manifest) = client.manifest(repo, tag).await.ok()?;
    let config = match manifest {
        Manifest::Image { config_digest } => config_digest,
        Manifest::Index { manifests } => {
            let first = manifests.first()?;
            match client.manifest(repo, &first.digest).await.ok()?.1 {
                Manifest::Image { config_digest } => config_digest,
                Manifest::Index { .. } => return None,
            }
        }
    };
    client.image_config(repo, &config).await.ok()?.source
}
