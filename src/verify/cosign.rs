//! What cosign writes to a registry, read without I/O: the referrers index (OCI 1.1 API or
//! its `sha256-<hex>` tag), a signature manifest's simple-signing layers, and the signed
//! payload, which names the image digest it is for.

use base64::Engine as _;
use serde::Deserialize;

use imagebump_model::name::is_sha256_digest;

/// The artifact type of a cosign signature manifest stored as a referrer.
pub const SIGNATURE_ARTIFACT: &str = "application/vnd.dev.cosign.artifact.sig.v1+json";
/// The media type of a simple-signing payload layer.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// Keyless signatures' layer annotations: the Fulcio certificate and chain (PEM) and the
/// Rekor entry with its signed entry timestamp (JSON).
pub const CERTIFICATE_ANNOTATION: &str = "dev.sigstore.cosign/certificate";
pub const CHAIN_ANNOTATION: &str = "dev.sigstore.cosign/chain";
pub const BUNDLE_ANNOTATION: &str = "dev.sigstore.cosign/bundle";
/// Sigstore bundles (v0.3 and later) as referrers and as their layer's media type.
const BUNDLE_PREFIX: &str = "application/vnd.dev.sigstore.bundle";
/// The in-toto predicate cosign signs an image with in a bundle.
const COSIGN_SIGN_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";

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

/// Why a signature, bundle or payload cosign wrote cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("referrers index: {0}")]
    Index(serde_json::Error),
    #[error("referrers index: a signature's digest {0:?} is not sha256: and 64 lower-case hexadecimal digits")]
    IndexDigest(String),
    #[error("signature manifest: {0}")]
    SignatureManifest(serde_json::Error),
    #[error("bundle manifest: {0}")]
    BundleManifest(serde_json::Error),
    #[error("not a Sigstore bundle: {0}")]
    NotBundle(serde_json::Error),
    #[error("a bundle of media type {0:?}")]
    BundleType(String),
    #[error(transparent)]
    Keyless(#[from] super::keyless::MaterialError),
    #[error("a bundle without a DSSE envelope, which this version does not read")]
    NoDsse,
    #[error("not a DSSE envelope: {0}")]
    NotEnvelope(serde_json::Error),
    #[error("bundle payload: {0}")]
    BundlePayload(base64::DecodeError),
    #[error("not an in-toto statement: {0}")]
    NotStatement(serde_json::Error),
    #[error("a payload of type {0:?}, not an in-toto statement")]
    StatementType(String),
    #[error("an attestation of {0:?}, not a cosign signature ({COSIGN_SIGN_PREDICATE})")]
    Predicate(String),
    #[error("not a cosign simple-signing payload: {0}")]
    NotSimpleSigning(serde_json::Error),
    #[error("a payload of type {0:?}, not a cosign container image signature")]
    PayloadType(String),
}

/// The referrers of an index (the API's answer, or the fallback tag's index).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Referrers {
    /// Digests of cosign signature manifests, at most [`MAX_SIGNATURES`].
    pub signatures: Vec<String>,
    /// Digests of Sigstore bundle manifests, at most [`MAX_SIGNATURES`].
    pub bundles: Vec<String>,
}

/// The cosign signatures and Sigstore bundles an index of referrers lists.
pub fn referrers(index: &[u8]) -> Result<Referrers, Error> {
    let index: Index = serde_json::from_slice(index).map_err(Error::Index)?;
    let mut out = Referrers::default();
    for d in index.manifests {
        let kind = d.artifact_type.as_deref().unwrap_or_default();
        let wanted = kind == SIGNATURE_ARTIFACT || kind.starts_with(BUNDLE_PREFIX);
        if wanted && !is_sha256_digest(&d.digest) {
            return Err(Error::IndexDigest(d.digest));
        }
        if kind == SIGNATURE_ARTIFACT {
            if out.signatures.len() < MAX_SIGNATURES {
                out.signatures.push(d.digest);
            }
        } else if wanted && out.bundles.len() < MAX_SIGNATURES {
            out.bundles.push(d.digest);
        }
    }
    Ok(out)
}

/// One signature: the payload blob's digest and the signature over its bytes; a keyless
/// one also carries its certificate (the annotations, unread until needed).
#[derive(Debug, PartialEq, Eq)]
pub struct Layer {
    pub digest: String,
    pub signature: Vec<u8>,
    /// `dev.sigstore.cosign/certificate`, `/chain`, `/bundle`.
    pub certificate: Option<String>,
    pub chain: Option<String>,
    pub bundle: Option<String>,
}

/// The simple-signing layers of a cosign signature manifest (a `.sig` tag's, or a
/// referrer's), at most [`MAX_SIGNATURES`]. A manifest that is no cosign signature gives
/// none.
pub fn signature_layers(manifest: &[u8]) -> Result<Vec<Layer>, Error> {
    let m: ImageManifest = serde_json::from_slice(manifest).map_err(Error::SignatureManifest)?;
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
        .filter(|l| l.media_type == SIMPLE_SIGNING && is_sha256_digest(&l.digest))
        .filter_map(|l| {
            let sig = l.annotations.get(SIGNATURE_ANNOTATION)?;
            let signature = b64.decode(sig.trim()).ok()?;
            let get = |k: &str| l.annotations.get(k).cloned();
            Some(Layer {
                certificate: get(CERTIFICATE_ANNOTATION),
                chain: get(CHAIN_ANNOTATION),
                bundle: get(BUNDLE_ANNOTATION),
                digest: l.digest,
                signature,
            })
        })
        .take(MAX_SIGNATURES)
        .collect())
}

/// The bundle blobs of a bundle manifest (layers of a Sigstore bundle media type).
pub fn bundle_layers(manifest: &[u8]) -> Result<Vec<String>, Error> {
    let m: ImageManifest = serde_json::from_slice(manifest).map_err(Error::BundleManifest)?;
    Ok(m.layers
        .into_iter()
        .filter(|l| l.media_type.starts_with(BUNDLE_PREFIX) && is_sha256_digest(&l.digest))
        .map(|l| l.digest)
        .take(MAX_SIGNATURES)
        .collect())
}

/// What a bundle asks to verify: DSSE's pre-authentication encoding of its envelope (what
/// the signatures sign), the signatures, the payload (an in-toto statement), and for a
/// keyless bundle its certificate and log entries.
#[derive(Debug, PartialEq, Eq)]
pub struct Envelope {
    pub signed: Vec<u8>,
    pub signatures: Vec<Vec<u8>>,
    pub payload: Vec<u8>,
    pub keyless: Option<super::keyless::Material>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Bundle {
    media_type: String,
    #[serde(default)]
    verification_material: serde_json::Value,
    #[serde(default)]
    dsse_envelope: Option<Dsse>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Dsse {
    payload: String,
    payload_type: String,
    #[serde(default)]
    signatures: Vec<DsseSignature>,
}

#[derive(Deserialize)]
struct DsseSignature {
    sig: String,
}

/// A Sigstore bundle around a DSSE envelope: signed with a key
/// (`verificationMaterial.publicKey`, with or without a transparency-log entry, which is
/// not checked) or keyless (a certificate and its log entries). A message-signature
/// bundle is refused with why.
pub fn envelope(bundle: &[u8]) -> Result<Envelope, Error> {
    let b: Bundle = serde_json::from_slice(bundle).map_err(Error::NotBundle)?;
    if !b.media_type.starts_with(BUNDLE_PREFIX) {
        return Err(Error::BundleType(b.media_type));
    }
    let keyless = super::keyless::Material::from_bundle(&b.verification_material)?;
    let Some(dsse) = b.dsse_envelope else {
        return Err(Error::NoDsse);
    };
    let b64 = base64::engine::general_purpose::STANDARD;
    let payload = b64
        .decode(dsse.payload.trim())
        .map_err(Error::BundlePayload)?;
    let signatures = dsse
        .signatures
        .iter()
        .take(MAX_SIGNATURES)
        .filter_map(|s| b64.decode(s.sig.trim()).ok())
        .collect();
    Ok(Envelope {
        signed: pae(&dsse.payload_type, &payload),
        signatures,
        payload,
        keyless,
    })
}

/// A DSSE envelope stored on its own (a `.att` layer, a DSSE referrer), with the keyless
/// material its layer's annotations carry.
pub fn bare_envelope(
    blob: &[u8],
    keyless: Option<super::keyless::Material>,
) -> Result<Envelope, Error> {
    let dsse: Dsse = serde_json::from_slice(blob).map_err(Error::NotEnvelope)?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let payload = b64
        .decode(dsse.payload.trim())
        .map_err(Error::BundlePayload)?;
    let signatures = dsse
        .signatures
        .iter()
        .take(MAX_SIGNATURES)
        .filter_map(|s| b64.decode(s.sig.trim()).ok())
        .collect();
    Ok(Envelope {
        signed: pae(&dsse.payload_type, &payload),
        signatures,
        payload,
        keyless,
    })
}

/// DSSE's pre-authentication encoding: `DSSEv1 <len> <type> <len> <body>`.
fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Statement {
    #[serde(rename = "_type")]
    kind: String,
    predicate_type: String,
    #[serde(default)]
    subject: Vec<Subject>,
}

#[derive(Deserialize)]
struct Subject {
    #[serde(default)]
    digest: std::collections::BTreeMap<String, String>,
}

/// The image digests an in-toto statement of cosign's signing predicate names.
pub fn statement_digests(payload: &[u8]) -> Result<Vec<String>, Error> {
    let s: Statement = serde_json::from_slice(payload).map_err(Error::NotStatement)?;
    if !s.kind.starts_with("https://in-toto.io/Statement/") {
        return Err(Error::StatementType(s.kind));
    }
    if s.predicate_type != COSIGN_SIGN_PREDICATE {
        return Err(Error::Predicate(s.predicate_type));
    }
    Ok(s.subject
        .iter()
        .filter_map(|x| x.digest.get("sha256"))
        .map(|hex| format!("sha256:{hex}"))
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
pub fn signed_digest(payload: &[u8]) -> Result<String, Error> {
    let p: Payload = serde_json::from_slice(payload).map_err(Error::NotSimpleSigning)?;
    if p.critical.kind != "cosign container image signature" {
        return Err(Error::PayloadType(p.critical.kind));
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
            .to_string()
            .contains("atomic"));
        assert!(signed_digest(b"{}").is_err());
    }

    #[test]
    fn reads_key_signed_dsse_bundles_and_refuses_the_rest() {
        // DSSE's encoding, from the DSSE specification's protocol description.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
        );
        let statement = |predicate: &str| {
            format!(
                r#"{{"_type":"https://in-toto.io/Statement/v1","subject":[{{"name":"r/a","digest":{{"sha256":"{}"}}}}],"predicateType":"{predicate}","predicate":{{}}}}"#,
                &D[7..]
            )
        };
        assert_eq!(
            statement_digests(statement(COSIGN_SIGN_PREDICATE).as_bytes()).unwrap(),
            vec![D.to_string()]
        );
        let slsa = statement("https://slsa.dev/provenance/v1");
        assert!(statement_digests(slsa.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("an attestation of"));
        let bundle = |material: &str, content: &str| {
            format!(
                r#"{{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{material},{content}}}"#
            )
        };
        let dsse = r#""dsseEnvelope":{"payload":"aGk=","payloadType":"t","signatures":[{"sig":"AQID","keyid":""}]}"#;
        let env = envelope(bundle(r#"{"publicKey":{"hint":""}}"#, dsse).as_bytes()).unwrap();
        assert_eq!(
            env,
            Envelope {
                signed: b"DSSEv1 1 t 2 hi".to_vec(),
                signatures: vec![vec![1, 2, 3]],
                payload: b"hi".to_vec(),
                keyless: None,
            }
        );
        let keyless = envelope(bundle(r#"{"certificate":{"rawBytes":"AQI="}}"#, dsse).as_bytes());
        let material = keyless.unwrap().keyless.unwrap();
        assert_eq!((material.leaf, material.entries.len()), (vec![1, 2], 0));
        let bad = envelope(bundle(r#"{"certificate":{"rawBytes":"?"}}"#, dsse).as_bytes());
        assert_eq!(
            bad.unwrap_err().to_string(),
            "a bundle certificate is not base64 DER"
        );
        let message = r#""messageSignature":{"messageDigest":{"algorithm":"SHA2_256","digest":"AA=="},"signature":"AA=="}"#;
        let message = envelope(bundle(r#"{"publicKey":{"hint":""}}"#, message).as_bytes());
        assert!(matches!(message.unwrap_err(), Error::NoDsse));
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
                signature: vec![1, 2, 3],
                certificate: None,
                chain: None,
                bundle: None,
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
                bundles: vec![D.into()]
            }
        );
        let bad_digest = r#"{"manifests":[{"mediaType":"m","digest":"sha256:AB","artifactType":"application/vnd.dev.cosign.artifact.sig.v1+json"}]}"#;
        assert_eq!(
            referrers(bad_digest.as_bytes()).unwrap_err().to_string(),
            "referrers index: a signature's digest \"sha256:AB\" is not sha256: and 64 lower-case hexadecimal digits"
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
