//! Image metadata for the policies that need it, fetched once per run: tags are mutable,
//! digests are not, so manifests fetched by digest and config blobs are cached by digest
//! (many tags share one image), and a tag's manifest is fetched once however many
//! references ask for it. Concurrent askers of the same thing share one request.
//!
//! With `--cache-dir`, what is fetched by digest also outlives the run
//! ([`DiskCache`]): a tag the cache has seen before costs one HEAD (its digest may have
//! moved), and its manifest and config are read from disk when that digest is there.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use imagebump_model::name::is_valid_digest;

use crate::registry::cache::DiskCache;
use crate::registry::client::Client;
use crate::registry::manifest::{parse_config, parse_manifest, ImageConfig, Manifest};
use crate::registry::Error;
use imagebump_model::platform::Platform;
use imagebump_policy::candidate::{Build, Meta};

type Cell<T, E> = Arc<OnceCell<Result<T, E>>>;

/// Why a tag's metadata could not be read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MetaError {
    #[error(transparent)]
    Registry(#[from] Error),
    /// An index whose entry is an index again: imagebump reads one level.
    #[error("{digest}: an index nested in an index")]
    NestedIndex { digest: String },
}

/// A map from key to a value computed once, by the first asker.
struct Memo<T, E>(Mutex<HashMap<(String, String), Cell<T, E>>>);

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
    manifests: Memo<(String, Manifest), Error>,
    configs: Memo<ImageConfig, Error>,
    /// `--cache-dir`: manifests and configs by digest, kept between runs.
    disk: Option<Arc<DiskCache>>,
}

impl Default for MetaCache {
    fn default() -> Self {
        MetaCache::new(None)
    }
}

impl MetaCache {
    /// A run's cache, over the content-addressed cache on disk when there is one.
    pub fn new(disk: Option<Arc<DiskCache>>) -> Self {
        MetaCache {
            digests: Memo::new(),
            manifests: Memo::new(),
            configs: Memo::new(),
            disk,
        }
    }

    /// The metadata of `repo:tag` that `need` asks for. `image` (the normalised name) keys
    /// the cache, since a digest is only fetchable from its own repository.
    pub async fn tag_meta(
        &self,
        client: &Client,
        image: &str,
        repo: &str,
        tag: &str,
        need: Need<'_>,
    ) -> Result<Meta, MetaError> {
        if !need.builds {
            let digest = self.digest(client, image, repo, tag).await?;
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
                    digest: Some(digest.clone()),
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
                        digest: Some(entry.digest),
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

    /// The manifest of `reference` (a tag or a digest) and its digest, once per run. With
    /// the disk cache: by digest, read from disk when there; a tag the cache has seen is
    /// asked for its digest only (a HEAD, shared with digest pinning), then read by digest.
    async fn manifest(
        &self,
        client: &Client,
        image: &str,
        repo: &str,
        reference: &str,
    ) -> Result<(String, Manifest), Error> {
        self.manifests
            .get((image.into(), reference.into()), || async {
                let Some(disk) = &self.disk else {
                    return client.manifest(repo, reference).await;
                };
                if is_valid_digest(reference) {
                    return self.manifest_by_digest(client, disk, repo, reference).await;
                }
                if disk.tag_hint(image, reference).is_some() {
                    let digest = self.digest(client, image, repo, reference).await?;
                    disk.set_tag_hint(image, reference, &digest);
                    return self
                        .manifests
                        .get((image.into(), digest.clone()), || {
                            self.manifest_by_digest(client, disk, repo, &digest)
                        })
                        .await;
                }
                // Not seen before: one GET by tag, kept under its digest.
                let fetched = client.manifest_bytes(repo, reference).await?;
                let manifest = fetched.parse(repo, reference)?;
                keep_manifest(disk, &fetched.digest, &fetched.body, &manifest);
                disk.set_tag_hint(image, reference, &fetched.digest);
                Ok((fetched.digest, manifest))
            })
            .await
    }

    /// A manifest by digest: from disk (verified), else fetched and kept.
    async fn manifest_by_digest(
        &self,
        client: &Client,
        disk: &DiskCache,
        repo: &str,
        digest: &str,
    ) -> Result<(String, Manifest), Error> {
        if let Some(bytes) = disk.get(digest) {
            match parse_manifest(None, &bytes) {
                Ok(manifest) => return Ok((digest.to_string(), manifest)),
                Err(_) => disk.forget(digest),
            }
        }
        let fetched = client.manifest_bytes(repo, digest).await?;
        let manifest = fetched.parse(repo, digest)?;
        keep_manifest(disk, digest, &fetched.body, &manifest);
        Ok((fetched.digest, manifest))
    }

    /// A config blob by digest, once per run; with the disk cache, read from disk when
    /// there, else fetched and kept.
    async fn config(
        &self,
        client: &Client,
        image: &str,
        repo: &str,
        digest: &str,
    ) -> Result<ImageConfig, Error> {
        self.configs
            .get((image.into(), digest.into()), || async {
                let Some(disk) = &self.disk else {
                    return client.image_config(repo, digest).await;
                };
                if let Some(bytes) = disk.get(digest) {
                    match parse_config(&bytes) {
                        Ok(config) => return Ok(config),
                        Err(_) => disk.forget(digest),
                    }
                }
                let bytes = client.config_bytes(repo, digest).await?;
                let config = client.parse_config(repo, digest, &bytes)?;
                disk.put(digest, &bytes);
                Ok(config)
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
    ) -> Result<Option<jiff::Timestamp>, MetaError> {
        match self.manifest(client, image, repo, digest).await?.1 {
            Manifest::Image { config_digest } => Ok(self
                .config(client, image, repo, &config_digest)
                .await?
                .created),
            Manifest::Index { .. } => Err(MetaError::NestedIndex {
                digest: digest.to_string(),
            }),
        }
    }
}

/// Keep a manifest's bytes on disk when they read the same without the response's media
/// type (the cache keeps bytes only): a body that needs its header to be understood is
/// fetched again next time rather than read differently.
fn keep_manifest(disk: &DiskCache, digest: &str, body: &[u8], manifest: &Manifest) {
    if parse_manifest(None, body).as_ref() == Ok(manifest) {
        disk.put(digest, body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metadata_error_reads_as_its_cause() {
        let registry = Error::NotFound {
            url: "https://r.example/v2/a/manifests/1".into(),
        };
        assert_eq!(
            MetaError::from(registry.clone()).to_string(),
            registry.to_string()
        );
        let nested = MetaError::NestedIndex {
            digest: "sha256:ab".into(),
        };
        assert_eq!(nested.to_string(), "sha256:ab: an index nested in an index");
    }
}
