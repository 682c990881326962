//! What a pull request tells about an update beyond its two versions, read from the
//! registry: the OCI annotations and labels of the old and the new image, their build
//! dates, platforms and compressed sizes. At most three requests per image (its manifest
//! or index, one platform's manifest for an index, that image's config), none of them
//! repeated for another reference of the same update. Failures leave facts out; they
//! never fail the run.

use jiff::Timestamp;

use crate::registry::client::Client;
use crate::registry::manifest::{parse_manifest_notes, IndexEntry, Manifest, OciLabels};
use imagebump_model::platform::Platform;

/// One image's facts (the old or the new one of an update).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Side {
    /// Index annotations first, then the platform manifest's, then the config's labels.
    pub labels: OciLabels,
    /// The config's `created` (of the platform image read, for an index).
    pub created: Option<Timestamp>,
    /// The platforms it offers (an index's entries without attestations; a single
    /// image's config platform).
    pub platforms: Vec<Platform>,
    /// The compressed size (sum of the layers) of one platform's image.
    pub size: Option<Sized>,
}

/// A compressed size and the platform it is of (`None`: a single image whose config
/// names none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sized {
    pub platform: Option<Platform>,
    pub bytes: u64,
}

/// The facts of an update: its old and its new image, as far as they could be read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Facts {
    pub old: Option<Side>,
    pub new: Option<Side>,
    /// The clock `minAge` judged the new tag by, when it did (set by the run, not read
    /// from the registry).
    pub age: Option<imagebump_policy::age::Clock>,
}

/// The facts of the move of `repo` from `from` to `to` (each a tag, or a digest when the
/// value pins one): both images read at once, sizes compared on one platform both offer.
pub async fn facts(client: &Client, repo: &str, from: &str, to: &str) -> Facts {
    let (old, new) = futures::join!(top(client, repo, from), top(client, repo, to));
    let pick = size_platform(old.as_ref().map(|t| &t.0), new.as_ref().map(|t| &t.0));
    let (old, new) = futures::join!(
        side(client, repo, old, pick.as_ref()),
        side(client, repo, new, pick.as_ref())
    );
    Facts {
        old,
        new,
        age: None,
    }
}

/// A tag's (or digest's) manifest or index, its own annotations and its layers' size.
async fn top(client: &Client, repo: &str, tag: &str) -> Option<(Manifest, OciLabels, Option<u64>)> {
    let fetched = client.manifest_bytes(repo, tag).await.ok()?;
    let manifest = fetched.parse(repo, tag).ok()?;
    let notes = parse_manifest_notes(&fetched.body);
    Some((manifest, notes.labels, notes.layers_size))
}

/// The platform whose sizes are compared: `linux/amd64` when the indexes offer it, else
/// the first of the new index's platforms the old one offers too (or any, when only one
/// side is an index: its single image's platform is known only from its config).
pub fn size_platform(old: Option<&Manifest>, new: Option<&Manifest>) -> Option<Platform> {
    let platforms = |m: Option<&Manifest>| match m {
        Some(Manifest::Index { manifests }) => Some(
            manifests
                .iter()
                .filter_map(|e| e.platform.clone())
                .collect::<Vec<_>>(),
        ),
        _ => None,
    };
    let amd64 = Platform {
        os: "linux".into(),
        architecture: "amd64".into(),
        variant: None,
    };
    let candidates: Vec<Platform> = match (platforms(old), platforms(new)) {
        (Some(old), Some(new)) => new.into_iter().filter(|p| old.contains(p)).collect(),
        (Some(one), None) | (None, Some(one)) => one,
        (None, None) => return None,
    };
    if candidates.contains(&amd64) {
        return Some(amd64);
    }
    candidates.into_iter().next()
}

/// One image's facts from its manifest or index: for an index, the entry of `pick` (else
/// its first) is read for its size and config.
async fn side(
    client: &Client,
    repo: &str,
    top: Option<(Manifest, OciLabels, Option<u64>)>,
    pick: Option<&Platform>,
) -> Option<Side> {
    let (manifest, labels, size) = top?;
    let (config_digest, labels, size, entries) = match manifest {
        Manifest::Image { config_digest } => (config_digest, labels, size, None),
        Manifest::Index { manifests } => {
            let entry = manifests
                .iter()
                .find(|e| pick.is_some_and(|p| e.platform.as_ref() == Some(p)))
                .or_else(|| manifests.first())?;
            let fetched = client.manifest_bytes(repo, &entry.digest).await.ok()?;
            let Manifest::Image { config_digest } = fetched.parse(repo, &entry.digest).ok()? else {
                return None;
            };
            let notes = parse_manifest_notes(&fetched.body);
            let sized = notes
                .layers_size
                .map(|bytes| (entry.platform.clone(), bytes));
            (
                config_digest,
                labels.or(notes.labels),
                None,
                Some((manifests, sized)),
            )
        }
    };
    let config = client
        .image_config(repo, &config_digest)
        .await
        .ok()
        .unwrap_or_default();
    let labels = labels.or(config.labels);
    Some(match entries {
        None => Side {
            labels,
            created: config.created,
            platforms: config.platform.clone().into_iter().collect(),
            size: size.map(|bytes| Sized {
                platform: config.platform,
                bytes,
            }),
        },
        Some((manifests, sized)) => Side {
            labels,
            created: config.created,
            platforms: platforms_of(&manifests),
            size: sized.map(|(platform, bytes)| Sized { platform, bytes }),
        },
    })
}

/// An index's platforms, in its order, each once.
fn platforms_of(entries: &[IndexEntry]) -> Vec<Platform> {
    let mut out: Vec<Platform> = Vec::new();
    for p in entries.iter().filter_map(|e| e.platform.as_ref()) {
        if !out.contains(p) {
            out.push(p.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(platforms: &[&str]) -> Manifest {
        Manifest::Index {
            manifests: platforms
                .iter()
                .map(|p| IndexEntry {
                    digest: "sha256:00".into(),
                    platform: Some(p.parse().unwrap()),
                })
                .collect(),
        }
    }

    #[test]
    fn sizes_are_compared_on_amd64_else_the_first_common_platform() {
        let image = Manifest::Image {
            config_digest: "sha256:00".into(),
        };
        let show = |p: Option<Platform>| p.map(|p| p.to_string());
        let both = index(&["linux/arm64", "linux/amd64"]);
        let arm = index(&["linux/s390x", "linux/arm64"]);
        assert_eq!(
            show(size_platform(Some(&both), Some(&both))).as_deref(),
            Some("linux/amd64")
        );
        assert_eq!(
            show(size_platform(Some(&both), Some(&arm))).as_deref(),
            Some("linux/arm64")
        );
        assert_eq!(
            show(size_platform(Some(&image), Some(&arm))).as_deref(),
            Some("linux/s390x")
        );
        assert_eq!(show(size_platform(Some(&image), Some(&image))), None);
        assert_eq!(
            show(size_platform(None, Some(&both))).as_deref(),
            Some("linux/amd64")
        );
        let other = index(&["windows/amd64"]);
        assert_eq!(show(size_platform(Some(&other), Some(&arm))), None);
    }
}
