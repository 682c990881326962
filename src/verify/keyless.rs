//! Keyless (Sigstore) verification of one signature: its transparency-log entry is
//! checked offline against the trusted root's Rekor keys (rekor.rs), which proves when it
//! was signed; the Fulcio certificate must chain to the trusted root at that time
//! (fulcio.rs); the signature must verify with the certificate's key; and the
//! certificate's identity must be one the operator trusts.

use imagebump_model::verify::Identity;

use super::fulcio;
use super::rekor::{self, Entry, Signed};
use super::trust::TrustedRoot;
use super::PublicKey;

/// The most log entries read for one signature.
const MAX_ENTRIES: usize = 4;

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
    Certificate(#[from] fulcio::Error),
    #[error("the signature does not verify with its certificate's key")]
    KeyMismatch,
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
        let entries = entries(material);
        Ok(Some(Material {
            leaf,
            chain: certs,
            entries,
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
    let mut why = Refusal::Unlogged;
    for entry in &material.entries {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                why = Refusal::Log(e.clone());
                continue;
            }
        };
        let time = match rekor::verify(entry, root, signed) {
            Ok(t) => t,
            Err(e) => {
                why = Refusal::Log(e);
                continue;
            }
        };
        let (id, key) = fulcio::verify(&material.leaf, &material.chain, root, time)?;
        if !verifies(&key) {
            return Err(Refusal::KeyMismatch);
        }
        if !identities
            .iter()
            .any(|i| i.matches(&id.issuer, &id.subject))
        {
            let trusted: Vec<String> = identities.iter().map(Identity::describe).collect();
            return Err(Refusal::OtherSigner {
                subject: id.subject,
                issuer: id.issuer,
                trusted: trusted.join(" or "),
            });
        }
        return Ok(format!(
            "identity {} (issuer {}, logged {})",
            id.subject,
            id.issuer,
            fulcio::show_time(time)
        ));
    }
    Err(why)
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
