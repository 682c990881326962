//! What cosign writes to a registry, read without I/O: the referrers index (OCI 1.1 API or
//! its `sha256-<hex>` tag), a signature manifest's simple-signing layers, and the signed
//! payload, which names the image digest it is for.

use base64::Engine as _;
use serde::Deserialize;

use imagebump_model::name::is_valid_digest;

/// The artifact type of a cosign signature manifest stored as a referrer.
pub const SIGNATURE_ARTIFACT: &str = "application/vnd.dev.cosign.artifact.sig.v1+json";
/// The media type of a simple-signing payload layer.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// Sigstore bundles as referrers (cosign 3's default): recognised, not read yet.
const BUNDLE_PREFIX: &str = "application/vnd.dev.sigstore.bundle";

/// The most signature manifests, and layers in each, read for one digest: a registry that
/// lists thousands cannot make a run fetch them all.
pub const MAX_SIGNATURES: usize = 8;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    #[serde(default)]
    media_type: String,
    digest: String,
    #[serde(default)]
    artifact_type: Option<String>,
    #[serde(default)]
    annotations: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct Index {
    #[serde(default)]
    manifests: Vec<Descriptor>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImageManifest {
    #[serde(default)]
    artifact_type: Option<String>,
    #[serde(default)]
    config: Option<Descriptor>,
    #[serde(default)]
    layers: Vec<Descriptor>,
}

/// The referrers of an index (the API's answer, or the fallback tag's index).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Referrers {
    /// Digests of cosign signature manifests, at most [`MAX_SIGNATURES`].
    pub signatures: Vec<String>,
    /// How many Sigstore bundles were listed (not read by this version).
    pub bundles: usize,
}

/// The cosign signatures and Sigstore bundles an index of referrers lists.
pub fn referrers(index: &[u8]) -> Result<Referrers, String> {
    let index: Index =
        serde_json::from_slice(index).map_err(|e| format!("referrers index: {e}"))?;
    let mut out = Referrers::default();
    for d in index.manifests {
        let kind = d.artifact_type.as_deref().unwrap_or_default();
        if kind == SIGNATURE_ARTIFACT && is_valid_digest(&d.digest) {
            if out.signatures.len() < MAX_SIGNATURES {
                out.signatures.push(d.digest);
            }
        } else if kind.starts_with(BUNDLE_PREFIX) {
            out.bundles = out.bundles.saturating_add(1);
        }
    }
    Ok(out)
}

/// One signature: the payload blob's digest and the signature over its bytes.
#[derive(Debug, PartialEq, Eq)]
pub struct Layer {
    pub digest: String,
    pub signature: Vec<u8>,
}

/// The simple-signing layers of a cosign signature manifest (a `.sig` tag's, or a
/// referrer's), at most [`MAX_SIGNATURES`]. A manifest that is no cosign signature gives
/// none.
pub fn signature_layers(manifest: &[u8]) -> Result<Vec<Layer>, String> {
    let m: ImageManifest =
        serde_json::from_slice(manifest).map_err(|e| format!("signature manifest: {e}"))?;
    let artifact = m
        .artifact_type
        .as_deref()
        .or(m.config.as_ref().map(|c| c.media_type.as_str()));
    if artifact.is_some_and(|a| a.starts_with(BUNDLE_PREFIX)) {
        return Ok(Vec::new());
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    Ok(m.layers
        .into_iter()
        .filter(|l| l.media_type == SIMPLE_SIGNING && is_valid_digest(&l.digest))
        .filter_map(|l| {
            let sig = l.annotations.get(SIGNATURE_ANNOTATION)?;
            let signature = b64.decode(sig.trim()).ok()?;
            Some(Layer {
                digest: l.digest,
                signature,
            })
        })
        .take(MAX_SIGNATURES)
        .collect())
}

#[derive(Deserialize)]
struct Payload {
    critical: Critical,
}

#[derive(Deserialize)]
struct Critical {
    #[serde(rename = "type")]
    kind: String,
    image: PayloadImage,
}

#[derive(Deserialize)]
struct PayloadImage {
    #[serde(rename = "docker-manifest-digest")]
    digest: String,
}

/// The image digest a simple-signing payload signs (`critical.image.docker-manifest-digest`).
pub fn signed_digest(payload: &[u8]) -> Result<String, String> {
    let p: Payload = serde_json::from_slice(payload)
        .map_err(|e| format!("not a cosign simple-signing payload: {e}"))?;
    if p.critical.kind != "cosign container image signature" {
        return Err(format!(
            "a payload of type {:?}, not a cosign container image signature",
            p.critical.kind
        ));
    }
    Ok(p.critical.image.digest)
}

/// The tag cosign writes a digest's signatures to (`sha256-<hex>.sig`), and the referrers
/// fallback tag (`sha256-<hex>`).
pub fn tags_for(digest: &str) -> (String, String) {
    let fallback = digest.replacen(':', "-", 1);
    (format!("{fallback}.sig"), fallback)
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000001";

    #[test]
    fn reads_the_payload_cosign_signs() {
        let payload = format!(
            r#"{{"critical":{{"identity":{{"docker-reference":"r.example/a"}},"image":{{"docker-manifest-digest":"{D}"}},"type":"cosign container image signature"}},"optional":null}}"#
        );
        assert_eq!(signed_digest(payload.as_bytes()).unwrap(), D);
        let other = payload.replace(
            "cosign container image signature",
            "atomic container signature",
        );
        assert!(signed_digest(other.as_bytes())
            .unwrap_err()
            .contains("atomic"));
        assert!(signed_digest(b"{}").is_err());
    }

    #[test]
    fn keeps_signature_layers_and_counts_bundles() {
        let manifest = format!(
            r#"{{"schemaVersion":2,"config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{D}","size":2}},
            "layers":[{{"mediaType":"{SIMPLE_SIGNING}","digest":"{D}","size":1,"annotations":{{"{SIGNATURE_ANNOTATION}":"AQID"}}}},
            {{"mediaType":"{SIMPLE_SIGNING}","digest":"{D}","size":1}},
            {{"mediaType":"application/octet-stream","digest":"{D}","size":1,"annotations":{{"{SIGNATURE_ANNOTATION}":"AQID"}}}}]}}"#
        );
        assert_eq!(
            signature_layers(manifest.as_bytes()).unwrap(),
            vec![Layer {
                digest: D.into(),
                signature: vec![1, 2, 3]
            }]
        );
        let index = format!(
            r#"{{"manifests":[{{"mediaType":"m","digest":"{D}","artifactType":"{SIGNATURE_ARTIFACT}"}},
            {{"mediaType":"m","digest":"{D}","artifactType":"application/vnd.dev.sigstore.bundle.v0.3+json"}},
            {{"mediaType":"m","digest":"{D}","artifactType":"application/spdx+json"}}]}}"#
        );
        assert_eq!(
            referrers(index.as_bytes()).unwrap(),
            Referrers {
                signatures: vec![D.into()],
                bundles: 1
            }
        );
        assert_eq!(
            tags_for(D),
            (
                format!("sha256-{}.sig", &D[7..]),
                format!("sha256-{}", &D[7..])
            )
        );
    }
}
