//! Manifests, indexes and image configs: plain types and their parsing.
//!
//! Registries send OCI and Docker schema 2 documents (image manifests, indexes / manifest
//! lists, config blobs), often with fields this module does not know: every private serde
//! struct here ignores unknown fields. Docker schema 1 is refused with a message saying so.

use std::collections::HashMap;

use serde::Deserialize;

use imagebump_model::name::is_sha256_digest;

pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const DOCKER_MANIFEST_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
const DOCKER_SCHEMA1: &str = "application/vnd.docker.distribution.manifest.v1+json";
const DOCKER_SCHEMA1_SIGNED: &str = "application/vnd.docker.distribution.manifest.v1+prettyjws";

use imagebump_model::platform::Platform;

/// A manifest as the registry served it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Manifest {
    /// An OCI image manifest or a Docker schema 2 manifest.
    Image { config_digest: String },
    /// An OCI index or a Docker manifest list, without attestation entries.
    Index { manifests: Vec<IndexEntry> },
}

/// One entry of an index: a child manifest and the platform it is for (when given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    pub digest: String,
    pub platform: Option<Platform>,
}

/// What imagebump reads from an image's config blob.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImageConfig {
    /// `created`; `None` when absent, unparsable, or Go's zero time (`0001-01-01T00:00:00Z`).
    pub created: Option<jiff::Timestamp>,
    /// `os`/`architecture`/`variant`; `None` when os or architecture is missing.
    pub platform: Option<Platform>,
    /// The `org.opencontainers.image.*` labels pull requests show.
    pub labels: OciLabels,
}

/// The `org.opencontainers.image.{source,revision,version,url}` annotations or labels of
/// an image, as written (untrusted: shown escaped, linked only when plain `https://`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OciLabels {
    pub source: Option<String>,
    pub revision: Option<String>,
    pub version: Option<String>,
    pub url: Option<String>,
}

/// The longest label value kept; a longer one is not a URL, revision or version anyone
/// reads whole, and is dropped.
const LABEL_KEPT: usize = 1024;

impl OciLabels {
    /// The four keys from a manifest's annotations or a config's labels: non-empty
    /// strings only.
    fn from_map(map: Option<&HashMap<String, serde_json::Value>>) -> OciLabels {
        let get = |key: &str| {
            map?.get(&format!("org.opencontainers.image.{key}"))?
                .as_str()
                .filter(|s| !s.is_empty() && s.len() <= LABEL_KEPT)
                .map(str::to_string)
        };
        OciLabels {
            source: get("source"),
            revision: get("revision"),
            version: get("version"),
            url: get("url"),
        }
    }

    /// Each key from `self`, else from `other`.
    pub fn or(self, other: OciLabels) -> OciLabels {
        OciLabels {
            source: self.source.or(other.source),
            revision: self.revision.or(other.revision),
            version: self.version.or(other.version),
            url: self.url.or(other.url),
        }
    }
}

/// What release notes read from a manifest or an index beside its structure.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ManifestNotes {
    /// Its own `annotations`.
    pub labels: OciLabels,
    /// An image manifest's compressed size: the sum of its layers' `size`s.
    pub layers_size: Option<u64>,
}

#[derive(Deserialize)]
struct RawNotes {
    annotations: Option<HashMap<String, serde_json::Value>>,
    layers: Option<Vec<RawLayer>>,
}

#[derive(Deserialize)]
struct RawLayer {
    size: Option<u64>,
}

/// The annotations and layer sizes of a manifest body already read by [`parse_manifest`];
/// empty when they are malformed.
pub fn parse_manifest_notes(body: &[u8]) -> ManifestNotes {
    let Ok(raw) = serde_json::from_slice::<RawNotes>(body) else {
        return ManifestNotes::default();
    };
    let layers_size = raw.layers.and_then(|layers| {
        layers
            .iter()
            .try_fold(0u64, |sum, l| sum.checked_add(l.size?))
    });
    ManifestNotes {
        labels: OciLabels::from_map(raw.annotations.as_ref()),
        layers_size,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Image,
    Index,
    Schema1,
}

fn kind_of(media_type: &str) -> Option<Kind> {
    match media_type {
        OCI_MANIFEST | DOCKER_MANIFEST => Some(Kind::Image),
        OCI_INDEX | DOCKER_MANIFEST_LIST => Some(Kind::Index),
        DOCKER_SCHEMA1 | DOCKER_SCHEMA1_SIGNED => Some(Kind::Schema1),
        _ => None,
    }
}

/// `type/subtype` of a Content-Type value, lowercased, without parameters.
fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// A manifest-specific media type we do not read (artifact manifests, Helm's own types...).
/// Generic types (`application/json`, `text/plain`) say nothing and are not refused.
fn is_foreign_manifest_type(media_type: &str) -> bool {
    media_type.starts_with("application/vnd.") && kind_of(media_type).is_none()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawManifest {
    schema_version: Option<serde_json::Value>,
    media_type: Option<String>,
    config: Option<RawDescriptor>,
    manifests: Option<Vec<RawDescriptor>>,
    // Schema 1 only.
    fs_layers: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct RawDescriptor {
    digest: Option<String>,
    platform: Option<RawPlatform>,
    #[serde(default)]
    annotations: Option<HashMap<String, serde_json::Value>>,
}

#[derive(Deserialize)]
struct RawPlatform {
    os: Option<String>,
    architecture: Option<String>,
    variant: Option<String>,
}

impl RawPlatform {
    fn into_platform(self) -> Option<Platform> {
        let os = self.os.filter(|s| !s.is_empty())?;
        let architecture = self.architecture.filter(|s| !s.is_empty())?;
        Some(Platform {
            os,
            architecture,
            variant: self.variant.filter(|s| !s.is_empty()),
        })
    }
}

/// Why a registry's manifest or image config cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    #[error("manifest is not a valid JSON object: {0}")]
    NotJson(String),
    #[error("unsupported manifest media type {0}")]
    MediaType(String),
    #[error("Docker schema 1 manifest (deprecated, no longer supported by Docker or by imagebump); push the image again with a current Docker or buildx")]
    Schema1,
    #[error("manifest has both `manifests` and `config` and no media type")]
    Ambiguous,
    #[error("not a manifest: no media type, no `manifests`, no `config`")]
    NotAManifest,
    #[error("image manifest has no `config` descriptor")]
    NoConfig,
    #[error("image manifest's `config` has no digest")]
    NoConfigDigest,
    #[error(
        "image manifest's config digest {0:?} is not sha256: and 64 lower-case hexadecimal digits"
    )]
    ConfigDigest(String),
    #[error("index has no `manifests` list")]
    NoManifests,
    #[error("index has {0} entries, more than the {MAX_INDEX_ENTRIES} imagebump reads")]
    TooManyEntries(usize),
    #[error("index entry {0} has no digest")]
    NoEntryDigest(usize),
    #[error("index entry {entry} has a digest {digest:?} that is not sha256: and 64 lower-case hexadecimal digits")]
    EntryDigest { entry: usize, digest: String },
    #[error("image config is not a valid JSON object: {0}")]
    ConfigNotJson(String),
}

impl ManifestError {
    /// What to do about it, where the operator can do something.
    pub fn hint(&self) -> Option<String> {
        match self {
            ManifestError::Schema1 => {
                Some("push the image again with a current Docker or buildx".into())
            }
            _ => None,
        }
    }
}

/// Parse a manifest body. The kind comes from `media_type` (the response's Content-Type),
/// else from the body's own `mediaType`, else from its fields (`manifests` or `config`).
pub fn parse_manifest(media_type: Option<&str>, body: &[u8]) -> Result<Manifest, ManifestError> {
    let raw: RawManifest =
        serde_json::from_slice(body).map_err(|e| ManifestError::NotJson(e.to_string()))?;
    let header = media_type.map(essence).filter(|t| !t.is_empty());
    let declared = raw.media_type.as_deref().map(essence);
    let kind = match (header.as_deref(), declared.as_deref()) {
        (Some(h), _) if kind_of(h).is_some() => kind_of(h),
        (Some(h), _) if is_foreign_manifest_type(h) => {
            return Err(ManifestError::MediaType(h.to_string()))
        }
        (_, Some(d)) if kind_of(d).is_some() => kind_of(d),
        (_, Some(d)) if is_foreign_manifest_type(d) => {
            return Err(ManifestError::MediaType(d.to_string()))
        }
        _ => None,
    };
    let is_schema1 = kind == Some(Kind::Schema1)
        || raw.fs_layers.is_some()
        || raw.schema_version.as_ref().and_then(|v| v.as_u64()) == Some(1);
    if is_schema1 {
        return Err(ManifestError::Schema1);
    }
    let kind = match kind {
        Some(k) => k,
        None => match (&raw.manifests, &raw.config) {
            (Some(_), None) => Kind::Index,
            (None, Some(_)) => Kind::Image,
            (Some(_), Some(_)) => return Err(ManifestError::Ambiguous),
            (None, None) => return Err(ManifestError::NotAManifest),
        },
    };
    match kind {
        Kind::Image => image_manifest(raw),
        Kind::Index => index(raw),
        Kind::Schema1 => Err(ManifestError::Schema1),
    }
}

/// An image manifest: its config's digest.
fn image_manifest(raw: RawManifest) -> Result<Manifest, ManifestError> {
    let config = raw.config.ok_or(ManifestError::NoConfig)?;
    let digest = config.digest.ok_or(ManifestError::NoConfigDigest)?;
    if !is_sha256_digest(&digest) {
        return Err(ManifestError::ConfigDigest(digest));
    }
    Ok(Manifest::Image {
        config_digest: digest,
    })
}

/// The most entries an index may hold (attestations included). A real multi-arch image
/// lists a few dozen; every platform read is one the platform check compares, so an index
/// of made-up platforms is refused rather than judged.
pub const MAX_INDEX_ENTRIES: usize = 256;

/// An index: its entries' digests and platforms, attestations left out.
fn index(raw: RawManifest) -> Result<Manifest, ManifestError> {
    let entries = raw.manifests.ok_or(ManifestError::NoManifests)?;
    if entries.len() > MAX_INDEX_ENTRIES {
        return Err(ManifestError::TooManyEntries(entries.len()));
    }
    let mut manifests = Vec::with_capacity(entries.len());
    for (i, entry) in entries.into_iter().enumerate() {
        let digest = entry.digest.ok_or(ManifestError::NoEntryDigest(i))?;
        if !is_sha256_digest(&digest) {
            return Err(ManifestError::EntryDigest { entry: i, digest });
        }
        if is_attestation(&entry.annotations, entry.platform.as_ref()) {
            continue;
        }
        manifests.push(IndexEntry {
            digest,
            platform: entry.platform.and_then(RawPlatform::into_platform),
        });
    }
    Ok(Manifest::Index { manifests })
}

/// BuildKit's provenance/SBOM entries: `unknown/unknown`, annotated as attestations.
fn is_attestation(
    annotations: &Option<HashMap<String, serde_json::Value>>,
    platform: Option<&RawPlatform>,
) -> bool {
    let annotated = annotations
        .as_ref()
        .and_then(|a| a.get("vnd.docker.reference.type"))
        .and_then(|v| v.as_str())
        == Some("attestation-manifest");
    let unknown = platform.is_some_and(|p| {
        p.os.as_deref() == Some("unknown") && p.architecture.as_deref() == Some("unknown")
    });
    annotated || unknown
}

#[derive(Deserialize)]
struct RawConfig {
    created: Option<serde_json::Value>,
    os: Option<String>,
    architecture: Option<String>,
    variant: Option<String>,
    config: Option<RawContainerConfig>,
}

#[derive(Deserialize)]
struct RawContainerConfig {
    #[serde(rename = "Labels")]
    labels: Option<HashMap<String, serde_json::Value>>,
}

/// Parse an image config blob. Fields that are missing or malformed become `None`; only a
/// body that is not a JSON object (or has mistyped os/architecture) is an error.
pub fn parse_config(body: &[u8]) -> Result<ImageConfig, ManifestError> {
    let raw: RawConfig =
        serde_json::from_slice(body).map_err(|e| ManifestError::ConfigNotJson(e.to_string()))?;
    let created = raw
        .created
        .as_ref()
        .and_then(|v| v.as_str())
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
        // Go writes its zero time when nothing set the date; it is not a build date.
        .filter(|t| t.as_second() != GO_ZERO_TIME);
    let platform = RawPlatform {
        os: raw.os,
        architecture: raw.architecture,
        variant: raw.variant,
    }
    .into_platform();
    let labels = OciLabels::from_map(raw.config.and_then(|c| c.labels).as_ref());
    Ok(ImageConfig {
        created,
        platform,
        labels,
    })
}

/// `0001-01-01T00:00:00Z` in Unix seconds.
const GO_ZERO_TIME: i64 = -62_135_596_800;

/// `sha256:<hex>` of `body`.
pub fn sha256_digest(body: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{:x}", sha2::Sha256::digest(body))
}

/// Does `body` hash to `digest`? `None` when the algorithm is neither sha256 nor sha512.
pub fn digest_matches(digest: &str, body: &[u8]) -> Option<bool> {
    use sha2::Digest;
    let (algorithm, encoded) = digest.split_once(':')?;
    match algorithm {
        "sha256" => Some(encoded == format!("{:x}", sha2::Sha256::digest(body))),
        "sha512" => Some(encoded == format!("{:x}", sha2::Sha512::digest(body))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> Platform {
        s.parse().unwrap()
    }

    const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
    const D3: &str = "sha256:3333333333333333333333333333333333333333333333333333333333333333";

    #[test]
    fn platforms_parse_and_print() {
        let arm = p("linux/arm/v7");
        assert_eq!(
            arm,
            Platform {
                os: "linux".into(),
                architecture: "arm".into(),
                variant: Some("v7".into())
            }
        );
        assert_eq!(arm.to_string(), "linux/arm/v7");
        assert_eq!(p("linux/amd64").to_string(), "linux/amd64");
        assert_eq!(p("linux/arm64/v8").to_string(), "linux/arm64/v8");
        assert_eq!(p("windows/amd64").os, "windows");
        assert_eq!(p("linux/x86_64"), p("linux/amd64"));
        assert_eq!(p("linux/aarch64"), p("linux/arm64"));
        assert_eq!(p(" linux/amd64 "), p("linux/amd64"));
    }

    #[test]
    fn bad_platforms_say_what_is_expected() {
        for bad in [
            "",
            "linux",
            "linux/",
            "/amd64",
            "linux/arm/v7/x",
            "Linux/amd64",
            "linux/amd 64",
        ] {
            let err = bad.parse::<Platform>().unwrap_err();
            assert!(err.contains(&format!("{bad:?}")), "{err}");
            assert!(err.contains("os/architecture[/variant]"), "{err}");
        }
        assert!("linux"
            .parse::<Platform>()
            .unwrap_err()
            .contains("missing architecture"));
    }

    #[test]
    fn satisfies() {
        // (image, wanted, expected)
        let table = [
            ("linux/amd64", "linux/amd64", true),
            ("linux/amd64", "linux/arm64", false),
            ("windows/amd64", "linux/amd64", false),
            ("linux/arm64", "linux/arm64/v8", true),
            ("linux/arm64/v8", "linux/arm64", true),
            ("linux/arm64/v8", "linux/arm64/v8", true),
            ("linux/arm64/v9", "linux/arm64/v8", false),
            ("linux/arm/v7", "linux/arm/v7", true),
            ("linux/arm/v6", "linux/arm/v7", false),
            ("linux/arm/v7", "linux/arm/v6", false),
            ("linux/arm", "linux/arm/v7", true),
            ("linux/arm/v6", "linux/arm", true),
            ("linux/amd64/v3", "linux/amd64", true),
            ("linux/amd64/v2", "linux/amd64/v2", true),
            ("linux/amd64", "linux/amd64/v2", false),
            ("linux/amd64", "linux/amd64/v1", true),
            ("linux/amd64/v3", "linux/amd64/v2", false),
            ("linux/riscv64", "linux/riscv64/rva22", false),
        ];
        for (image, wanted, expected) in table {
            assert_eq!(
                p(image).satisfies(&p(wanted)),
                expected,
                "{image} satisfies {wanted}"
            );
        }
    }

    fn oci_index() -> Vec<u8> {
        json!({
            "schemaVersion": 2,
            "mediaType": OCI_INDEX,
            "manifests": [
                {"mediaType": OCI_MANIFEST, "digest": D1, "size": 1,
                 "platform": {"os": "linux", "architecture": "amd64"}},
                {"mediaType": OCI_MANIFEST, "digest": D2, "size": 1,
                 "platform": {"os": "linux", "architecture": "arm64", "variant": "v8",
                              "os.features": ["x"], "os.version": "1"},
                 "annotations": {"org.example": "x"}},
                {"mediaType": OCI_MANIFEST, "digest": D3, "size": 1,
                 "platform": {"os": "unknown", "architecture": "unknown"},
                 "annotations": {"vnd.docker.reference.type": "attestation-manifest",
                                 "vnd.docker.reference.digest": D1}}
            ],
            "annotations": {"org.opencontainers.image.created": "2024-01-01T00:00:00Z"},
            "somethingNew": {"a": 1}
        })
        .to_string()
        .into_bytes()
    }

    fn two_entries() -> Manifest {
        Manifest::Index {
            manifests: vec![
                IndexEntry {
                    digest: D1.into(),
                    platform: Some(p("linux/amd64")),
                },
                IndexEntry {
                    digest: D2.into(),
                    platform: Some(p("linux/arm64/v8")),
                },
            ],
        }
    }

    /// An index of 50,000 made-up platforms is refused at once, naming its size; one of
    /// 256 entries is read.
    #[test]
    fn a_huge_index_is_refused() {
        let entries = |n: usize| -> Vec<serde_json::Value> {
            (0..n)
                .map(|i| {
                    json!({
                        "mediaType": OCI_MANIFEST,
                        "digest": D1,
                        "size": 1,
                        "platform": {"os": "linux", "architecture": format!("arch{i}")},
                    })
                })
                .collect()
        };
        let body = |n: usize| {
            json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries(n)})
                .to_string()
                .into_bytes()
        };
        let err = parse_manifest(Some(OCI_INDEX), &body(50_000)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "index has 50000 entries, more than the 256 imagebump reads"
        );
        match parse_manifest(Some(OCI_INDEX), &body(256)).unwrap() {
            Manifest::Index { manifests } => assert_eq!(manifests.len(), 256),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn index_by_content_type_body_or_fields() {
        let body = oci_index();
        assert_eq!(
            parse_manifest(Some(OCI_INDEX), &body).unwrap(),
            two_entries()
        );
        assert_eq!(
            parse_manifest(
                Some("application/vnd.oci.image.index.v1+json; charset=utf-8"),
                &body
            )
            .unwrap(),
            two_entries()
        );
        assert_eq!(parse_manifest(None, &body).unwrap(), two_entries());
        assert_eq!(
            parse_manifest(Some("application/json"), &body).unwrap(),
            two_entries()
        );
        // No media type anywhere: inferred from `manifests`.
        let mut bare: serde_json::Value = serde_json::from_slice(&body).unwrap();
        bare.as_object_mut().unwrap().remove("mediaType");
        assert_eq!(
            parse_manifest(None, bare.to_string().as_bytes()).unwrap(),
            two_entries()
        );
    }

    #[test]
    fn docker_manifest_list_and_entries_without_platform() {
        let body = json!({
            "schemaVersion": 2,
            "mediaType": DOCKER_MANIFEST_LIST,
            "manifests": [
                {"mediaType": DOCKER_MANIFEST, "digest": D1, "size": 1,
                 "platform": {"os": "linux", "architecture": "arm", "variant": "v7"}},
                {"mediaType": DOCKER_MANIFEST, "digest": D2, "size": 1}
            ]
        })
        .to_string();
        assert_eq!(
            parse_manifest(Some(DOCKER_MANIFEST_LIST), body.as_bytes()).unwrap(),
            Manifest::Index {
                manifests: vec![
                    IndexEntry {
                        digest: D1.into(),
                        platform: Some(p("linux/arm/v7"))
                    },
                    IndexEntry {
                        digest: D2.into(),
                        platform: None
                    },
                ]
            }
        );
    }

    #[test]
    fn attestation_by_platform_alone_is_skipped() {
        let body = json!({"manifests": [
            {"digest": D1, "platform": {"os": "unknown", "architecture": "unknown"}},
            {"digest": D2, "annotations": {"vnd.docker.reference.type": "attestation-manifest"}},
            {"digest": D3, "platform": {"os": "linux", "architecture": "s390x"}}
        ]})
        .to_string();
        assert_eq!(
            parse_manifest(None, body.as_bytes()).unwrap(),
            Manifest::Index {
                manifests: vec![IndexEntry {
                    digest: D3.into(),
                    platform: Some(p("linux/s390x"))
                }]
            }
        );
    }

    #[test]
    fn image_manifests_oci_and_docker() {
        for media_type in [OCI_MANIFEST, DOCKER_MANIFEST] {
            let body = json!({
                "schemaVersion": 2,
                "mediaType": media_type,
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": D1, "size": 7},
                "layers": [{"mediaType": "x", "digest": D2, "size": 3}],
                "annotations": {"a": "b"}
            })
            .to_string();
            let want = Manifest::Image {
                config_digest: D1.into(),
            };
            assert_eq!(
                parse_manifest(Some(media_type), body.as_bytes()).unwrap(),
                want
            );
            assert_eq!(parse_manifest(None, body.as_bytes()).unwrap(), want);
        }
        // OCI manifests may omit mediaType: inferred from `config`.
        let bare = json!({"schemaVersion": 2, "config": {"digest": D1}, "layers": []}).to_string();
        assert_eq!(
            parse_manifest(None, bare.as_bytes()).unwrap(),
            Manifest::Image {
                config_digest: D1.into()
            }
        );
    }

    #[test]
    fn schema1_is_refused_clearly() {
        let body = json!({
            "schemaVersion": 1,
            "name": "team/app",
            "tag": "1.0",
            "architecture": "amd64",
            "fsLayers": [{"blobSum": D1}],
            "history": [{"v1Compatibility": "{}"}],
            "signatures": []
        })
        .to_string();
        for media_type in [
            Some(DOCKER_SCHEMA1_SIGNED),
            Some(DOCKER_SCHEMA1),
            Some("application/json"),
            None,
        ] {
            let err = parse_manifest(media_type, body.as_bytes()).unwrap_err();
            assert_eq!(err, ManifestError::Schema1);
            let err = err.to_string();
            assert!(err.contains("schema 1"), "{err}");
            assert!(err.contains("push the image again"), "{err}");
        }
    }

    #[test]
    fn malformed_manifests_are_errors() {
        let cases: [(Option<&str>, String, &str); 10] = [
            (None, "not json".into(), "not a valid JSON object"),
            (None, "[1,2]".into(), "not a valid JSON object"),
            (None, "{}".into(), "not a manifest"),
            (
                Some(OCI_MANIFEST),
                json!({"layers": []}).to_string(),
                "no `config`",
            ),
            (
                Some(OCI_MANIFEST),
                json!({"config": {"digest": "md5:x"}}).to_string(),
                "config digest \"md5:x\" is not sha256: and 64 lower-case hexadecimal digits",
            ),
            (
                Some(OCI_INDEX),
                json!({"manifests": [{"digest": "SHA256:AB"}]}).to_string(),
                "entry 0 has a digest",
            ),
            (
                Some(OCI_INDEX),
                json!({"manifests": [{"digest": format!("sha512:{}", "a".repeat(128))}]}).to_string(),
                "is not sha256: and 64 lower-case",
            ),
            (
                Some(OCI_INDEX),
                json!({"manifests": [{"size": 1}]}).to_string(),
                "entry 0 has no digest",
            ),
            (
                Some("application/vnd.oci.artifact.manifest.v1+json"),
                json!({"blobs": []}).to_string(),
                "unsupported manifest media type application/vnd.oci.artifact.manifest.v1+json",
            ),
            (
                None,
                json!({"mediaType": "application/vnd.cncf.helm.chart.v1+json", "config": {"digest": D1}}).to_string(),
                "unsupported manifest media type",
            ),
        ];
        for (media_type, body, want) in cases {
            let err = parse_manifest(media_type, body.as_bytes())
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{body}: {err}");
        }
    }

    #[test]
    fn configs() {
        let body = json!({
            "created": "2024-02-01T12:30:00.123456789Z",
            "architecture": "arm64",
            "os": "linux",
            "variant": "v8",
            "config": {"Env": ["PATH=/bin"], "Labels": {
                "org.opencontainers.image.source": "https://github.com/acme/web",
                "org.opencontainers.image.revision": "abc"}},
            "rootfs": {"type": "layers", "diff_ids": []},
            "history": [],
            "unknown": true
        })
        .to_string();
        let c = parse_config(body.as_bytes()).unwrap();
        assert_eq!(
            c.created,
            Some("2024-02-01T12:30:00.123456789Z".parse().unwrap())
        );
        assert_eq!(c.platform, Some(p("linux/arm64/v8")));
        assert_eq!(
            c.labels,
            OciLabels {
                source: Some("https://github.com/acme/web".into()),
                revision: Some("abc".into()),
                version: None,
                url: None,
            }
        );

        // Offsets are fine; the instant is what counts.
        let c = parse_config(br#"{"created":"2024-01-01T02:00:00+02:00"}"#).unwrap();
        assert_eq!(c.created, Some("2024-01-01T00:00:00Z".parse().unwrap()));
    }

    #[test]
    fn manifest_notes_read_annotations_and_sum_the_layers() {
        let body = json!({
            "schemaVersion": 2,
            "config": {"digest": D1, "size": 7},
            "layers": [{"size": 1000}, {"size": 24}],
            "annotations": {
                "org.opencontainers.image.version": "1.3.0",
                "org.opencontainers.image.url": "https://acme.example",
                "org.opencontainers.image.revision": 7,
                "org.opencontainers.image.source": "x".repeat(2000),
            }
        })
        .to_string();
        let n = parse_manifest_notes(body.as_bytes());
        assert_eq!(n.layers_size, Some(1024));
        assert_eq!(
            n.labels,
            OciLabels {
                version: Some("1.3.0".into()),
                url: Some("https://acme.example".into()),
                ..OciLabels::default()
            }
        );
        // A layer without a size leaves the sum unknown; an index has no layers.
        let n = parse_manifest_notes(br#"{"layers":[{"size":1},{}]}"#);
        assert_eq!(n.layers_size, None);
        assert_eq!(parse_manifest_notes(b"[]"), ManifestNotes::default());
        let first = OciLabels {
            source: Some("a".into()),
            ..OciLabels::default()
        };
        let second = OciLabels {
            source: Some("b".into()),
            revision: Some("r".into()),
            ..OciLabels::default()
        };
        assert_eq!(
            first.or(second),
            OciLabels {
                source: Some("a".into()),
                revision: Some("r".into()),
                ..OciLabels::default()
            }
        );
    }

    #[test]
    fn lenient_configs() {
        for body in [
            r#"{}"#,
            r#"{"created":"yesterday"}"#,
            r#"{"created":12345}"#,
            r#"{"created":null,"config":null}"#,
            r#"{"created":"0001-01-01T00:00:00Z"}"#,
            r#"{"os":"linux"}"#,
            r#"{"os":"","architecture":"amd64"}"#,
            r#"{"config":{"Labels":null}}"#,
            r#"{"config":{"Labels":{"org.opencontainers.image.source":""}}}"#,
            r#"{"config":{"Labels":{"org.opencontainers.image.source":7}}}"#,
        ] {
            assert_eq!(
                parse_config(body.as_bytes()).unwrap(),
                ImageConfig::default(),
                "{body}"
            );
        }
        // The Unix epoch is a real (reproducible-build) date, kept as such.
        let c = parse_config(br#"{"created":"1970-01-01T00:00:00Z"}"#).unwrap();
        assert_eq!(c.created, Some(jiff::Timestamp::UNIX_EPOCH));
        assert!(parse_config(b"not json").is_err());
        assert!(parse_config(b"[]").is_err());
    }

    #[test]
    fn digests() {
        let body = b"hello";
        let d = sha256_digest(body);
        assert_eq!(
            d,
            "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(digest_matches(&d, body), Some(true));
        assert_eq!(digest_matches(&d, b"hello!"), Some(false));
        assert_eq!(
            digest_matches(&d.to_uppercase().replace("SHA256", "sha256"), body),
            Some(false)
        );
        assert_eq!(digest_matches("sha512:9b71d224bd62f3785d96d46ad3ea3d73319bfbc2890caadae2dff72519673ca72323c3d99ba5c11d7c7acc6e14b8c5da0c4663475c2e5c3adef46f73bcdec043", body), Some(true));
        assert_eq!(digest_matches("blake3:abc", body), None);
        assert_eq!(digest_matches("nocolon", body), None);
    }
}
