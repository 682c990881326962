//! Keyless (Sigstore) verification of one signature: its transparency-log entry is
//! checked offline against the trusted root's Rekor keys (rekor.rs), which proves when it
//! was signed; the Fulcio certificate must chain to the trusted root at that time
//! (fulcio.rs); the signature must verify with the certificate's key; and the
//! certificate's identity must be one the operator trusts. RFC 3161 timestamps (tsa.rs)
//! prove times too: each must verify, and the certificate must be valid at every verified
//! time (the SET's integrated time and each timestamp's).

use imagebump_model::verify::Identity;

use super::fulcio;
use super::rekor::{self, Entry, Signed};
use super::trust::TrustedRoot;
use super::PublicKey;

/// The most log entries read for one signature.
const MAX_ENTRIES: usize = 4;
/// The most RFC 3161 timestamps read for one signature.
const MAX_TIMESTAMPS: usize = 4;

/// Why a keyless signature's certificate cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum MaterialError {
    #[error(transparent)]
    Pem(#[from] fulcio::PemError),
    #[error("the certificate annotation holds no certificate")]
    NoCertificate,
    #[error("a bundle certificate is not base64 DER")]
    NotBase64Der,
    #[error("a bundle with an empty certificate chain")]
    EmptyChain,
}

/// Why a keyless signature is not trusted.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("verify names no identities to trust")]
    NoIdentities,
    #[error("no transparency log entry (cosign --tlog-upload=false): its time and certificate cannot be checked")]
    Unlogged,
    #[error(transparent)]
    Log(#[from] rekor::Error),
    #[error(transparent)]
    Timestamp(#[from] super::tsa::Error),
    #[error(transparent)]
    Certificate(#[from] fulcio::Error),
    #[error("the signature does not verify with its certificate's key")]
    KeyMismatch,
    #[error("a keyless DSSE envelope with {0} signatures: Sigstore's carry exactly one, the one its log entry and timestamps vouch for")]
    Signatures(usize),
    #[error("signed by {subject} from {issuer}, not {trusted}")]
    OtherSigner {
        subject: String,
        issuer: String,
        /// The identities trusted, joined with `or`.
        trusted: String,
    },
}

/// What a keyless signature carries besides the signature: its certificate, the chain
/// the signer sent, and its log entries.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Material {
    pub leaf: Vec<u8>,
    pub chain: Vec<Vec<u8>>,
    pub entries: Vec<Result<Entry, rekor::Error>>,
    /// The DER RFC 3161 timestamps (`timestampVerificationData`), each read or why not.
    pub timestamps: Vec<Result<Vec<u8>, super::tsa::Error>>,
}

/// The bundle's RFC 3161 timestamps; more than [`MAX_TIMESTAMPS`] is an error.
pub fn timestamps(material: &serde_json::Value) -> Vec<Result<Vec<u8>, super::tsa::Error>> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let list: Vec<&serde_json::Value> = material
        .pointer("/timestampVerificationData/rfc3161Timestamps")
        .and_then(|t| t.as_array())
        .into_iter()
        .flatten()
        .take(MAX_TIMESTAMPS.saturating_add(1))
        .collect();
    if list.len() > MAX_TIMESTAMPS {
        return vec![Err(super::tsa::Error::Unreadable(format!(
            "more than {MAX_TIMESTAMPS} timestamps"
        )))];
    }
    list.into_iter()
        .map(|t| {
            t.get("signedTimestamp")
                .and_then(|s| s.as_str())
                .filter(|s| s.len() <= super::tsa::MAX_TOKEN.saturating_mul(2))
                // Line breaks are skipped, as Go's and protobuf's base64 readers skip them
                // (`base64` wraps its output at 76 columns).
                .map(|s| s.replace(['\n', '\r'], ""))
                .and_then(|s| b64.decode(s.trim()).ok())
                .ok_or(super::tsa::Error::Base64)
        })
        .collect()
}

/// The bundle's transparency log entries (the first few), each read or why not.
pub fn entries(material: &serde_json::Value) -> Vec<Result<rekor::Entry, rekor::Error>> {
    material
        .get("tlogEntries")
        .and_then(|t| t.as_array())
        .into_iter()
        .flatten()
        .take(MAX_ENTRIES)
        .map(rekor::from_bundle)
        .collect()
}

impl Material {
    /// From the legacy `.sig` layer annotations (`dev.sigstore.cosign/certificate`,
    /// `/chain`, `/bundle`).
    pub fn from_annotations(
        certificate: &str,
        chain: Option<&str>,
        bundle: Option<&str>,
    ) -> Result<Material, MaterialError> {
        let leaf = fulcio::pem_certificates(certificate)?
            .into_iter()
            .next()
            .ok_or(MaterialError::NoCertificate)?;
        Ok(Material {
            leaf,
            chain: chain
                .map(fulcio::pem_certificates)
                .transpose()?
                .unwrap_or_default(),
            entries: bundle.map(rekor::from_annotation).into_iter().collect(),
            timestamps: Vec::new(),
        })
    }

    /// From a bundle's `verificationMaterial` (`certificate` or `x509CertificateChain`,
    /// and `tlogEntries`); `None` when it holds no certificate.
    pub fn from_bundle(material: &serde_json::Value) -> Result<Option<Material>, MaterialError> {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let raw = |v: &serde_json::Value| {
            v.get("rawBytes")
                .and_then(|r| r.as_str())
                .and_then(|r| b64.decode(r.trim()).ok())
                .ok_or(MaterialError::NotBase64Der)
        };
        let mut certs = match (
            material.get("certificate"),
            material.pointer("/x509CertificateChain/certificates"),
        ) {
            (Some(c), _) => vec![raw(c)?],
            (None, Some(serde_json::Value::Array(list))) => {
                list.iter().take(8).map(raw).collect::<Result<_, _>>()?
            }
            _ => return Ok(None),
        };
        if certs.is_empty() {
            return Err(MaterialError::EmptyChain);
        }
        let leaf = certs.remove(0);
        Ok(Some(Material {
            leaf,
            chain: certs,
            entries: entries(material),
            timestamps: timestamps(material),
        }))
    }
}

/// Who verified a keyless signature, for reports: `identity <subject> (issuer <issuer>)`.
pub fn check(
    material: &Material,
    root: &TrustedRoot,
    identities: &[Identity],
    signed: &Signed,
    verifies: impl Fn(&PublicKey) -> bool,
) -> Result<String, Refusal> {
    if identities.is_empty() {
        return Err(Refusal::NoIdentities);
    }
    // A timestamp stamps one signature; a second one would borrow its time.
    if let Signed::Dsse { signatures, .. } = signed {
        if signatures.len() != 1 {
            return Err(Refusal::Signatures(signatures.len()));
        }
    }
    let stamped = stamped(material, root, signed)?;
    let mut why = Refusal::Unlogged;
    for entry in &material.entries {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                why = Refusal::Log(e.clone());
                continue;
            }
        };
        let integrated = match rekor::verify(entry, root, signed, &stamped) {
            Ok(t) => t,
            Err(e) => {
                why = Refusal::Log(e);
                continue;
            }
        };
        // The certificate is checked at every verified time.
        let mut checked = None;
        for time in integrated.iter().chain(&stamped) {
            checked = Some(fulcio::verify(
                &material.leaf,
                &material.chain,
                root,
                *time,
            )?);
        }
        let Some((id, key)) = checked else {
            why = Refusal::Log(rekor::Error::NoTime);
            continue;
        };
        if !verifies(&key) {
            return Err(Refusal::KeyMismatch);
        }
        trusted(identities, &id)?;
        return Ok(format!(
            "identity {} (issuer {}, {})",
            id.subject,
            id.issuer,
            when(integrated, &stamped)
        ));
    }
    Err(why)
}

/// One of `identities` names the certificate's signer.
fn trusted(identities: &[Identity], id: &fulcio::CertIdentity) -> Result<(), Refusal> {
    if identities
        .iter()
        .any(|i| i.matches(&id.issuer, &id.subject))
    {
        return Ok(());
    }
    let trusted: Vec<String> = identities.iter().map(Identity::describe).collect();
    Err(Refusal::OtherSigner {
        subject: id.subject.clone(),
        issuer: id.issuer.clone(),
        trusted: trusted.join(" or "),
    })
}

/// The times the material's RFC 3161 timestamps prove for `signed`: every one must verify.
pub fn stamped(
    material: &Material,
    root: &TrustedRoot,
    signed: &Signed,
) -> Result<Vec<i64>, super::tsa::Error> {
    material
        .timestamps
        .iter()
        .map(|t| {
            t.clone()
                .and_then(|der| super::tsa::verify(&der, signed.timestamped(), root))
        })
        .collect()
}

/// `logged <time>` (a SET's integrated time), else `timestamped <time>`.
pub fn when(integrated: Option<i64>, stamped: &[i64]) -> String {
    match (integrated, stamped.first()) {
        (Some(t), _) => format!("logged {}", fulcio::show_time(t)),
        (None, Some(t)) => format!("timestamped {}", fulcio::show_time(*t)),
        (None, None) => "no time".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const REAL: &str = include_str!("testdata/public-good-github-actions.sigstore.json");

    /// The real bundle's own signature is over a file this test does not have: any key
    /// "verifies" here, so everything else is what decides.
    fn checked(json: &[u8]) -> Result<String, String> {
        let bundle: serde_json::Value = serde_json::from_slice(json).map_err(|e| e.to_string())?;
        let material = Material::from_bundle(&bundle["verificationMaterial"])
            .map_err(|e| e.to_string())?
            .ok_or("none")?;
        let root = TrustedRoot::public_good().map_err(|e| e.to_string())?;
        let id = Identity {
            issuer: Some("https://token.actions.githubusercontent.com".into()),
            subject_reg_exp: Some("^https://github.com/trailofbits/".into()),
            ..Identity::default()
        };
        let payload = b"not the file";
        let signed = Signed::Hashed {
            payload,
            signature: &[],
            certificate: &material.leaf,
        };
        check(&material, &root, &[id], &signed, |_| true).map_err(|e| e.to_string())
    }

    #[test]
    fn a_real_bundle_gets_as_far_as_its_body() {
        // Log, then body: the body names the real file's hash, not this payload's.
        assert_eq!(
            checked(REAL.as_bytes()),
            Err("the transparency log entry is for another payload".into())
        );
    }

    const REKOR2: &str = include_str!(
        "../../tests/conformance/bundle-verify/rekor2-happy-path/bundle.sigstore.json"
    );
    const REKOR2_ROOT: &str =
        include_str!("../../tests/conformance/bundle-verify/rekor2-happy-path/trusted_root.json");

    /// A real Rekor v2 bundle (no SET: its time is its RFC 3161 timestamp's), checked for
    /// its own message signature and digest.
    fn checked_v2(json: &[u8]) -> Result<String, String> {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let bundle: serde_json::Value = serde_json::from_slice(json).map_err(|e| e.to_string())?;
        let material = Material::from_bundle(&bundle["verificationMaterial"])
            .map_err(|e| e.to_string())?
            .ok_or("none")?;
        let root =
            TrustedRoot::from_json("staging", REKOR2_ROOT.as_bytes()).map_err(|e| e.to_string())?;
        let field = |at: &str| {
            bundle
                .pointer(at)
                .and_then(|v| v.as_str())
                .and_then(|v| b64.decode(v).ok())
                .ok_or(format!("no {at}"))
        };
        let signature = field("/messageSignature/signature")?;
        let digest = field("/messageSignature/messageDigest/digest")?;
        let id = Identity {
            issuer: Some("https://token.actions.githubusercontent.com".into()),
            subject_reg_exp: Some("^https://github.com/sigstore-conformance/".into()),
            ..Identity::default()
        };
        let signed = Signed::Digest {
            digest: &digest,
            signature: &signature,
            certificate: &material.leaf,
        };
        check(&material, &root, &[id], &signed, |_| true).map_err(|e| e.to_string())
    }

    #[test]
    fn a_real_rekor_v2_bundle_is_timestamped() {
        assert_eq!(
            checked_v2(REKOR2.as_bytes()),
            Ok("identity https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main (issuer https://token.actions.githubusercontent.com, timestamped 2025-06-12T12:02:20Z)".into())
        );
        // Without its timestamp, nothing proves its time.
        let mut bundle: serde_json::Value = serde_json::from_str(REKOR2).unwrap();
        bundle["verificationMaterial"]
            .as_object_mut()
            .unwrap()
            .remove("timestampVerificationData");
        let e = checked_v2(&serde_json::to_vec(&bundle).unwrap()).unwrap_err();
        assert!(e.contains("its time is unproven"), "{e}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Any byte of a real Rekor v2 bundle changed: an error, or the same verdict (a byte
        /// nothing signs or reads, as `kindVersion`), never a panic.
        #[test]
        fn a_changed_rekor_v2_bundle_never_panics_or_changes(
            at in 0..REKOR2.len(),
            byte in any::<u8>(),
        ) {
            let mut json = REKOR2.as_bytes().to_vec();
            json[at] = byte;
            if let Ok(who) = checked_v2(&json) {
                prop_assert_eq!(Ok(who), checked_v2(REKOR2.as_bytes()));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Any byte of a real bundle changed: an error (unreadable, or refused at some step),
        /// never a panic. (Which step catches which change: rekor.rs and fulcio.rs tests.)
        #[test]
        fn a_changed_bundle_never_panics_or_passes(at in 0..REAL.len(), byte in any::<u8>()) {
            let mut json = REAL.as_bytes().to_vec();
            json[at] = byte;
            prop_assert!(checked(&json).is_err());
        }
    }
}
