//! One Sigstore bundle checked on its own, as `imagebump verify-bundle` does (the
//! sigstore-conformance client protocol): a message signature over an artifact (or its
//! SHA-256 digest), logged in Rekor v1 and signed by a Fulcio certificate whose identity
//! must be exactly the one given; or a DSSE envelope around an in-toto statement whose
//! subjects name the artifact. The log and certificate checks are keyless.rs's.

use base64::Engine as _;
use imagebump_model::verify::Identity;
use sha2::Digest as _;
use x509_cert::der::Decode;
use x509_cert::Certificate;

use super::keyless::{self, Material};
use super::rekor::Signed;
use super::trust::TrustedRoot;

/// The bundle media types read: 0.1, 0.2, 0.3 and the 0.3 form without a parameter.
const MEDIA_TYPES: [&str; 4] = [
    "application/vnd.dev.sigstore.bundle+json;version=0.1",
    "application/vnd.dev.sigstore.bundle+json;version=0.2",
    "application/vnd.dev.sigstore.bundle+json;version=0.3",
    "application/vnd.dev.sigstore.bundle.v0.3+json",
];

/// What was signed: the artifact's bytes, or its SHA-256 digest.
pub enum Input {
    Artifact(Vec<u8>),
    Digest([u8; 32]),
}

impl Input {
    fn digest(&self) -> [u8; 32] {
        match self {
            Input::Artifact(bytes) => sha2::Sha256::digest(bytes).into(),
            Input::Digest(d) => *d,
        }
    }
}

/// Why a bundle is refused.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the bundle is not JSON: {0}")]
    Json(String),
    #[error("a bundle of media type {0:?}: only Sigstore bundles 0.1, 0.2 and 0.3")]
    MediaType(String),
    #[error("the bundle's DSSE envelope is not readable: {0}")]
    Dsse(String),
    #[error("the bundle's DSSE payload is not an in-toto statement")]
    NotStatement,
    #[error("the artifact is not a subject of the bundle's in-toto statement")]
    NotSubject,
    #[error("the bundle's DSSE envelope holds no signature")]
    NoDsseSignature,
    #[error("the bundle holds no message signature")]
    NoSignature,
    #[error("the bundle's message signature is not base64")]
    SignatureBase64,
    #[error("the bundle's message digest is not the artifact's SHA-256")]
    DigestMismatch,
    #[error(
        "the bundle holds a public key, not a certificate: key-signed bundles are not verified"
    )]
    PublicKeyBundle,
    #[error(transparent)]
    Material(#[from] keyless::MaterialError),
    #[error("a transparency log entry with a negative log index")]
    NegativeLogIndex,
    #[error("a bundle of version 0.2 or later without an inclusion proof")]
    NoInclusionProof,
    #[error("a transparency log entry integrated at {0}, after the present time")]
    FutureEntry(String),
    #[error("the bundle's certificate chain holds a self-signed (root) certificate")]
    RootInChain,
    #[error(transparent)]
    Refused(#[from] keyless::Refusal),
    #[error("the bundle holds a certificate, not a public key: --key verifies key-signed bundles")]
    CertificateBundle,
    #[error("a key-signed DSSE bundle: --key verifies message signatures only")]
    KeyedDsse,
    #[error("the bundle's signature does not verify with the key given")]
    KeySignature,
    #[error(transparent)]
    Log(#[from] super::rekor::Error),
    #[error(transparent)]
    Timestamp(#[from] super::tsa::Error),
    #[error("the bundle holds no transparency log entry")]
    Unlogged,
    #[error("the signature over a digest is verified for ECDSA P-256 keys only")]
    PrehashKey,
}

/// The parts of a message-signature bundle.
struct Message {
    digest: Option<Vec<u8>>,
    signature: Vec<u8>,
}

/// Verify `json` (a bundle) for `input`, signed by exactly `identity`, against `root`.
/// Returns who signed and when, for the operator.
pub fn verify(
    json: &[u8],
    input: &Input,
    identity: &Identity,
    root: &TrustedRoot,
) -> Result<String, Error> {
    let bundle: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| Error::Json(e.to_string()))?;
    let version_01 = media_type(&bundle)?;
    let dsse = bundle.get("dsseEnvelope").is_some();
    let message = if dsse { None } else { Some(message(&bundle)?) };
    let digest = input.digest();
    if let Some(m) = message.as_ref() {
        if m.digest.as_deref().is_some_and(|d| d != digest) {
            return Err(Error::DigestMismatch);
        }
    }
    let material = bundle
        .get("verificationMaterial")
        .unwrap_or(&serde_json::Value::Null);
    if material.get("publicKey").is_some() {
        return Err(Error::PublicKeyBundle);
    }
    let material = Material::from_bundle(material)?.ok_or(keyless::MaterialError::NoCertificate)?;
    checked_material(&material, version_01, jiff::Timestamp::now().as_second())?;
    match message {
        Some(m) => verify_message(&m, &material, input, identity, root),
        None => verify_dsse(json, &material, &digest, identity, root),
    }
}

/// Verify `json` (a bundle holding `verificationMaterial.publicKey`) for `input`, signed
/// with `key` and logged in a log of `root`. Returns when it was logged.
pub fn verify_with_key(
    json: &[u8],
    input: &Input,
    key: &super::PublicKey,
    root: &TrustedRoot,
) -> Result<String, Error> {
    let bundle: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| Error::Json(e.to_string()))?;
    let version_01 = media_type(&bundle)?;
    if bundle.get("dsseEnvelope").is_some() {
        return Err(Error::KeyedDsse);
    }
    let message = message(&bundle)?;
    let digest = input.digest();
    if message.digest.as_deref().is_some_and(|d| d != digest) {
        return Err(Error::DigestMismatch);
    }
    let material = bundle
        .get("verificationMaterial")
        .unwrap_or(&serde_json::Value::Null);
    if material.get("publicKey").is_none() {
        return Err(Error::CertificateBundle);
    }
    let material = Material {
        leaf: key.fingerprint_source().to_vec(),
        chain: Vec::new(),
        entries: keyless::entries(material),
        timestamps: keyless::timestamps(material),
    };
    checked_material(&material, version_01, jiff::Timestamp::now().as_second())?;
    let signed = Signed::Digest {
        digest: &digest,
        signature: &message.signature,
        certificate: &material.leaf,
    };
    let stamped = keyless::stamped(&material, root, &signed)?;
    let mut why = Error::Unlogged;
    for entry in &material.entries {
        let logged = match entry {
            Ok(e) => super::rekor::verify(e, root, &signed, &stamped),
            Err(e) => Err(e.clone()),
        };
        match logged {
            Ok(integrated) => {
                let when = keyless::when(integrated, &stamped);
                return keyed_signature(&message, input, key, &when);
            }
            Err(e) => why = Error::Log(e),
        }
    }
    Err(why)
}

/// The message signature verifies with `key`; who signed, for the operator.
fn keyed_signature(
    message: &Message,
    input: &Input,
    key: &super::PublicKey,
    when: &str,
) -> Result<String, Error> {
    let verifies = match input {
        Input::Artifact(bytes) => key.verifies(bytes, &message.signature),
        Input::Digest(d) => key
            .verifies_prehash(d, &message.signature)
            .ok_or(Error::PrehashKey)?,
    };
    if !verifies {
        return Err(Error::KeySignature);
    }
    Ok(format!("key {} ({when})", key.name))
}

/// A message signature over the artifact (or over its digest, ECDSA P-256 only).
fn verify_message(
    message: &Message,
    material: &Material,
    input: &Input,
    identity: &Identity,
    root: &TrustedRoot,
) -> Result<String, Error> {
    let digest = input.digest();
    let signed = Signed::Digest {
        digest: &digest,
        signature: &message.signature,
        certificate: &material.leaf,
    };
    let prehash_key = std::cell::Cell::new(false);
    let verifies = |key: &super::PublicKey| match input {
        Input::Artifact(bytes) => key.verifies(bytes, &message.signature),
        Input::Digest(d) => key.verifies_prehash(d, &message.signature).unwrap_or(false),
    };
    let who = keyless::check(
        material,
        root,
        std::slice::from_ref(identity),
        &signed,
        |k| {
            if matches!(input, Input::Digest(_)) && k.kind != "ecdsa-p256" {
                prehash_key.set(true);
            }
            verifies(k)
        },
    );
    match who {
        Err(keyless::Refusal::KeyMismatch) if prehash_key.get() => Err(Error::PrehashKey),
        other => Ok(other?),
    }
}

/// A DSSE envelope: its statement names the input's digest as a subject, and every
/// signature of the envelope verifies over its pre-authentication encoding.
fn verify_dsse(
    json: &[u8],
    material: &Material,
    digest: &[u8; 32],
    identity: &Identity,
    root: &TrustedRoot,
) -> Result<String, Error> {
    let envelope = super::cosign::envelope(json).map_err(|e| Error::Dsse(e.to_string()))?;
    if envelope.signatures.is_empty() {
        return Err(Error::NoDsseSignature);
    }
    if !subjects(&envelope.payload)?.contains(digest) {
        return Err(Error::NotSubject);
    }
    let signed = Signed::Dsse {
        payload: &envelope.payload,
        pae: &envelope.signed,
        signatures: &envelope.signatures,
        certificate: &material.leaf,
    };
    let who = keyless::check(
        material,
        root,
        std::slice::from_ref(identity),
        &signed,
        |k| {
            envelope
                .signatures
                .iter()
                .all(|sig| k.verifies(&envelope.signed, sig))
        },
    )?;
    Ok(who)
}

/// The SHA-256 digests an in-toto statement names as its subjects.
fn subjects(payload: &[u8]) -> Result<Vec<[u8; 32]>, Error> {
    let statement: serde_json::Value =
        serde_json::from_slice(payload).map_err(|_| Error::NotStatement)?;
    let kind = statement
        .get("_type")
        .and_then(|t| t.as_str())
        .unwrap_or_default();
    if !kind.starts_with("https://in-toto.io/Statement/") {
        return Err(Error::NotStatement);
    }
    let subjects = statement
        .get("subject")
        .and_then(|s| s.as_array())
        .ok_or(Error::NotStatement)?;
    Ok(subjects
        .iter()
        .filter_map(|s| s.pointer("/digest/sha256")?.as_str())
        .filter_map(|hex| unhex(&hex.to_ascii_lowercase()))
        .collect())
}

/// 64 hex digits as 32 bytes.
pub fn unhex(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(hex.as_bytes().chunks(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

/// The bundle's media type is one read; true for version 0.1.
fn media_type(bundle: &serde_json::Value) -> Result<bool, Error> {
    let media = bundle
        .get("mediaType")
        .and_then(|m| m.as_str())
        .unwrap_or_default();
    if !MEDIA_TYPES.contains(&media) {
        return Err(Error::MediaType(media.to_string()));
    }
    Ok(media == MEDIA_TYPES[0])
}

/// The bundle's message signature.
fn message(bundle: &serde_json::Value) -> Result<Message, Error> {
    let sig = bundle.get("messageSignature").ok_or(Error::NoSignature)?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let signature = sig
        .get("signature")
        .and_then(|s| s.as_str())
        .and_then(|s| b64.decode(s).ok())
        .ok_or(Error::SignatureBase64)?;
    let digest = match sig.pointer("/messageDigest/digest") {
        None => None,
        Some(d) => Some(
            d.as_str()
                .and_then(|d| b64.decode(d).ok())
                .ok_or(Error::DigestMismatch)?,
        ),
    };
    Ok(Message { digest, signature })
}

/// Rules of the bundle format keyless.rs does not check: log indexes are not negative,
/// entries are not integrated after `now`, bundles after 0.1 carry inclusion proofs, and a
/// chain never holds its root.
fn checked_material(material: &Material, version_01: bool, now: i64) -> Result<(), Error> {
    for entry in material.entries.iter().flatten() {
        if entry.log_index < 0 {
            return Err(Error::NegativeLogIndex);
        }
        if entry.integrated_time > now {
            return Err(Error::FutureEntry(super::fulcio::show_time(
                entry.integrated_time,
            )));
        }
        if !version_01 && entry.proof.is_none() {
            return Err(Error::NoInclusionProof);
        }
    }
    let self_signed = |der: &Vec<u8>| {
        Certificate::from_der(der)
            .is_ok_and(|c| c.tbs_certificate().issuer() == c.tbs_certificate().subject())
    };
    if material.chain.iter().any(self_signed) {
        return Err(Error::RootInChain);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::rekor::{Entry, Proof};

    fn with_entry(log_index: i64, integrated_time: i64, proof: bool) -> Material {
        let proof = proof.then(|| Proof {
            log_index: 0,
            tree_size: 1,
            root_hash: vec![0; 32],
            hashes: Vec::new(),
            checkpoint: String::new(),
        });
        Material {
            leaf: Vec::new(),
            chain: Vec::new(),
            timestamps: Vec::new(),
            entries: vec![Ok(Entry {
                body: Vec::new(),
                integrated_time,
                log_index,
                log_id: Vec::new(),
                set: None,
                proof,
            })],
        }
    }

    #[test]
    fn entries_follow_the_bundle_rules() {
        let now = 1_800_000_000;
        assert!(checked_material(&with_entry(1, now, true), false, now).is_ok());
        assert!(checked_material(&with_entry(1, now, false), true, now).is_ok());
        let e = checked_material(&with_entry(1, now, false), false, now).unwrap_err();
        assert!(matches!(e, Error::NoInclusionProof), "{e:?}");
        let e = checked_material(&with_entry(-1, now, true), false, now).unwrap_err();
        assert!(matches!(e, Error::NegativeLogIndex), "{e:?}");
        let e = checked_material(&with_entry(1, now + 1, true), false, now).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a transparency log entry integrated at 2027-01-15T08:00:01Z, after the present time"
        );
    }

    #[test]
    fn only_the_four_bundle_media_types_are_read() {
        let bundle = |media: &str| {
            serde_json::json!({
                "mediaType": media,
                "messageSignature": {"signature": "AAAA"},
            })
        };
        for media in MEDIA_TYPES {
            assert!(media_type(&bundle(media)).is_ok(), "{media}");
            assert!(message(&bundle(media)).is_ok(), "{media}");
        }
        for media in [
            "application/vnd.dev.sigstore.bundle+json;version=0.4",
            "application/vnd.dev.sigstore.bundle+json;version=0.3.1",
            "application/vnd.dev.sigstore.bundle.v0.2+json",
            "",
        ] {
            let e = media_type(&bundle(media)).err().unwrap();
            assert!(matches!(e, Error::MediaType(_)), "{media}: {e:?}");
        }
        let mut unpadded = bundle(MEDIA_TYPES[2]);
        unpadded["messageSignature"]["signature"] = "AAA".into();
        assert!(matches!(message(&unpadded), Err(Error::SignatureBase64)));
    }

    #[test]
    fn statement_subjects_are_sha256_digests() {
        let hex = "AB".repeat(32);
        let statement = format!(
            r#"{{"_type":"https://in-toto.io/Statement/v1","subject":[{{"name":"a","digest":{{"sha256":"{hex}"}}}},{{"digest":{{"sha512":"00"}}}}]}}"#
        );
        assert_eq!(subjects(statement.as_bytes()).unwrap(), vec![[0xab; 32]]);
        for bad in [
            r#"{"_type":"https://example.com/Statement","subject":[]}"#,
            r#"{"_type":"https://in-toto.io/Statement/v1"}"#,
            "not json",
        ] {
            let e = subjects(bad.as_bytes()).unwrap_err();
            assert!(matches!(e, Error::NotStatement), "{bad}: {e:?}");
        }
        assert_eq!(unhex(&"0".repeat(63)), None);
        assert_eq!(unhex(&"g".repeat(64)), None);
    }
}
