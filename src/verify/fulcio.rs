//! Keyless certificates: a Fulcio-issued leaf must chain to a CA of the trusted root, be
//! valid at the signing time (the log's integrated time: Fulcio certificates live ten
//! minutes), carry the code-signing EKU, and carry an SCT of a CT log of the trusted root
//! (sct.rs). rustls-webpki checks the chain, validity and EKU; x509-cert reads the identity
//! (SAN) and the OIDC issuer extension. No math here.

use rustls_pki_types::{CertificateDer, UnixTime};
use x509_cert::der::asn1::{Ia5String, ObjectIdentifier, Utf8StringRef};
use x509_cert::der::{Decode, Encode};
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::SubjectAltName;
use x509_cert::Certificate;

use super::trust::TrustedRoot;
use super::PublicKey;

/// id-kp-codeSigning (1.3.6.1.5.5.7.3.3), as webpki wants it: the OID's content bytes.
const CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];
/// Fulcio's OIDC issuer extension (a DER UTF8String), and the deprecated one (raw bytes).
const ISSUER_V2: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.8");
const ISSUER_V1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.1");

/// Who a verified certificate names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertIdentity {
    /// The SAN: a URI (a CI workflow) or an email.
    pub subject: String,
    /// The OIDC issuer that vouched for it.
    pub issuer: String,
}

/// Why a signing certificate is not trusted at its log time.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the signing certificate cannot be read: {0}")]
    Unreadable(webpki::Error),
    #[error("a log time before 1970 ({0})")]
    BeforeEpoch(i64),
    #[error(
        "no certificate authority of the trusted root ({root}) was valid at the log time {when}"
    )]
    NoAuthority { root: String, when: String },
    #[error("trusted root {root}: a CA root: {source}")]
    CaRoot { root: String, source: webpki::Error },
    #[error("the signing certificate: {0}")]
    Identity(#[from] IdentityError),
    #[error("the signing certificate had expired at its log time {0}")]
    Expired(String),
    #[error("the signing certificate was not yet valid at its log time {0}")]
    NotYetValid(String),
    #[error("the signing certificate was not issued by a CA of the trusted root ({0})")]
    NotIssued(String),
    #[error("the signing certificate is not for code signing (no code-signing EKU)")]
    NotCodeSigning,
    #[error("the signing certificate does not chain to the trusted root ({root}): {source}")]
    NoChain { root: String, source: webpki::Error },
    #[error(transparent)]
    Sct(#[from] super::sct::Error),
    #[error("the signing certificate's issuer cannot be read: {0}")]
    Issuer(x509_cert::der::Error),
}

/// Why a chained certificate names no identity or key that Fulcio would have written.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("{0}")]
    Der(x509_cert::der::Error),
    #[error("its subject alternative name: {0}")]
    San(x509_cert::der::Error),
    #[error("no URI or email subject alternative name (not a Fulcio certificate)")]
    NoSubject,
    #[error("its OIDC issuer extension: {0}")]
    Issuer(x509_cert::der::Error),
    #[error("its OIDC issuer is not UTF-8")]
    IssuerNotUtf8,
    #[error("no OIDC issuer extension (not a Fulcio certificate)")]
    NoIssuer,
    #[error("its public key: {0}")]
    KeyDer(x509_cert::der::Error),
    #[error("its public key: {0}")]
    Key(super::keys::KeyError),
}

/// Why a PEM text is no list of certificates.
#[derive(Debug, thiserror::Error)]
pub enum PemError {
    #[error("a PEM certificate: {0}")]
    Decode(pem_rfc7468::Error),
    #[error("more than 8 certificates in a chain")]
    TooMany,
    #[error("an unterminated PEM certificate")]
    Unterminated,
}

/// A leaf certificate checked against the trusted root at `time` (Unix seconds): its
/// identity and its public key.
pub fn verify(
    leaf: &[u8],
    chain: &[Vec<u8>],
    root: &TrustedRoot,
    time: i64,
) -> Result<(CertIdentity, PublicKey), Error> {
    let der = CertificateDer::from(leaf);
    let ee = webpki::EndEntityCert::try_from(&der).map_err(Error::Unreadable)?;
    let at = UnixTime::since_unix_epoch(std::time::Duration::from_secs(
        u64::try_from(time).map_err(|_| Error::BeforeEpoch(time))?,
    ));
    let mut last = Error::NoAuthority {
        root: root.name.clone(),
        when: show_time(time),
    };
    for ca in root.authorities.iter().filter(|a| a.valid.contains(time)) {
        let Some((anchor, intermediates)) = ca.chain.split_last() else {
            continue;
        };
        let anchor_der = CertificateDer::from(anchor.as_slice());
        let anchor = match webpki::anchor_from_trusted_cert(&anchor_der) {
            Ok(a) => a.to_owned(),
            Err(source) => {
                return Err(Error::CaRoot {
                    root: root.name.clone(),
                    source,
                })
            }
        };
        // The bundle's own chain may add intermediates; they must still lead to a root of
        // the trusted root.
        let inter: Vec<CertificateDer> = intermediates
            .iter()
            .chain(chain)
            .map(|c| CertificateDer::from(c.as_slice()))
            .collect();
        match ee.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &[anchor],
            &inter,
            at,
            webpki::KeyUsage::required(CODE_SIGNING),
            None,
            None,
        ) {
            Ok(path) => {
                // The issuer's key is part of what the SCTs sign.
                let issuer = path.intermediate_certificates().next().map(|c| c.der());
                let issuer = issuer.as_deref().unwrap_or(anchor_der.as_ref());
                super::sct::verify(leaf, &spki_of(issuer)?, root)?;
                return Ok(identity(leaf)?);
            }
            Err(e) => last = chain_error(&e, time, &root.name),
        }
    }
    Err(last)
}

/// The DER SubjectPublicKeyInfo of a certificate.
fn spki_of(cert: &[u8]) -> Result<Vec<u8>, Error> {
    Certificate::from_der(cert)
        .and_then(|c| c.tbs_certificate().subject_public_key_info().to_der())
        .map_err(Error::Issuer)
}

fn chain_error(e: &webpki::Error, time: i64, root: &str) -> Error {
    match e {
        webpki::Error::CertExpired { .. } => Error::Expired(show_time(time)),
        webpki::Error::CertNotValidYet { .. } => Error::NotYetValid(show_time(time)),
        // No issuer of that name, or one of that name whose key did not sign it.
        webpki::Error::UnknownIssuer | webpki::Error::InvalidSignatureForPublicKey => {
            Error::NotIssued(root.to_string())
        }
        webpki::Error::RequiredEkuNotFoundContext(_) => Error::NotCodeSigning,
        other => Error::NoChain {
            root: root.to_string(),
            source: other.clone(),
        },
    }
}

/// `2024-02-01T00:00:00Z`.
pub fn show_time(t: i64) -> String {
    jiff::Timestamp::from_second(t)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| t.to_string())
}

/// The SAN and OIDC issuer of a certificate, and its public key.
fn identity(der: &[u8]) -> Result<(CertIdentity, PublicKey), IdentityError> {
    let cert = Certificate::from_der(der).map_err(IdentityError::Der)?;
    let tbs = cert.tbs_certificate();
    let san = tbs
        .get_extension::<SubjectAltName>()
        .map_err(IdentityError::San)?
        .map(|(_, san)| san.0)
        .unwrap_or_default();
    let ia5 = |s: &Ia5String| s.to_string();
    let subject = san
        .iter()
        .find_map(|n| match n {
            GeneralName::UniformResourceIdentifier(u) => Some(ia5(u)),
            _ => None,
        })
        .or_else(|| {
            san.iter().find_map(|n| match n {
                GeneralName::Rfc822Name(m) => Some(ia5(m)),
                _ => None,
            })
        })
        .ok_or(IdentityError::NoSubject)?;
    let ext = |oid: ObjectIdentifier| {
        tbs.extensions()
            .into_iter()
            .flatten()
            .find(|e| e.extn_id == oid)
            .map(|e| e.extn_value.as_bytes().to_vec())
    };
    let issuer = match (ext(ISSUER_V2), ext(ISSUER_V1)) {
        (Some(v), _) => Utf8StringRef::from_der(&v)
            .map(|s| s.as_str().to_string())
            .map_err(IdentityError::Issuer)?,
        (None, Some(v)) => String::from_utf8(v).map_err(|_| IdentityError::IssuerNotUtf8)?,
        (None, None) => return Err(IdentityError::NoIssuer),
    };
    let spki = tbs
        .subject_public_key_info()
        .to_der()
        .map_err(IdentityError::KeyDer)?;
    let key = PublicKey::from_der("certificate", &spki).map_err(IdentityError::Key)?;
    Ok((CertIdentity { subject, issuer }, key))
}

/// The DER certificates of a PEM text (`dev.sigstore.cosign/certificate` and `/chain`), at
/// most eight.
pub fn pem_certificates(pem: &str) -> Result<Vec<Vec<u8>>, PemError> {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    for line in pem.lines().map(str::trim) {
        match &mut block {
            None if line == BEGIN => block = Some(format!("{BEGIN}\n")),
            None => {}
            Some(b) => {
                b.push_str(line);
                b.push('\n');
                if line == END {
                    let (_, der) =
                        pem_rfc7468::decode_vec(b.as_bytes()).map_err(PemError::Decode)?;
                    out.push(der);
                    block = None;
                    if out.len() > 8 {
                        return Err(PemError::TooMany);
                    }
                }
            }
        }
    }
    match block {
        Some(_) => Err(PemError::Unterminated),
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pem_chains_and_refuses_what_is_no_certificate() {
        assert_eq!(pem_certificates("").unwrap(), Vec::<Vec<u8>>::new());
        let one = "-----BEGIN CERTIFICATE-----\nAQID\n-----END CERTIFICATE-----\n";
        assert_eq!(
            pem_certificates(&format!("{one}{one}")).unwrap(),
            vec![vec![1, 2, 3], vec![1, 2, 3]]
        );
        assert!(matches!(
            pem_certificates("-----BEGIN CERTIFICATE-----\nAQID\n"),
            Err(PemError::Unterminated)
        ));
        let root = TrustedRoot::public_good().unwrap();
        let e = verify(&[1, 2, 3], &[], &root, 1_700_000_000)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("the signing certificate cannot be read"),
            "{e}"
        );
    }

    /// A real Fulcio certificate (from sigstore-python's test assets: a wheel signed in
    /// GitHub Actions) against the public-good root: valid at its log time, expired ten
    /// minutes later, unknown to another root.
    #[test]
    fn a_real_fulcio_certificate_verifies_at_its_log_time() {
        let bundle: serde_json::Value = serde_json::from_str(include_str!(
            "testdata/public-good-github-actions.sigstore.json"
        ))
        .unwrap();
        let material =
            super::super::keyless::Material::from_bundle(&bundle["verificationMaterial"])
                .unwrap()
                .unwrap();
        let root = TrustedRoot::public_good().unwrap();
        let logged = 1_710_888_076;
        let (id, key) = verify(&material.leaf, &material.chain, &root, logged).unwrap();
        assert_eq!(
            id,
            CertIdentity {
                subject: "https://github.com/trailofbits/rfc8785.py/.github/workflows/release.yml@refs/tags/v0.1.2".into(),
                issuer: "https://token.actions.githubusercontent.com".into(),
            }
        );
        assert_eq!(key.kind, "ecdsa-p256");
        let e = verify(&material.leaf, &material.chain, &root, logged + 600)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "the signing certificate had expired at its log time 2024-03-19T22:51:16Z"
        );
        // The public-good root's retired CA alone (valid until 2022) does not issue it.
        let e = verify(&material.leaf, &material.chain, &root, 1_640_000_000)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("not issued by a CA") || e.contains("not yet valid"),
            "{e}"
        );
    }

    #[test]
    fn a_public_good_ca_certificate_is_not_a_signing_certificate() {
        // The public-good intermediate chains to the root, but it is a CA: not a leaf.
        let root = TrustedRoot::public_good().unwrap();
        let intermediate = root.authorities[1].chain[0].clone();
        let e = verify(&intermediate, &[], &root, 1_700_000_000)
            .unwrap_err()
            .to_string();
        assert!(e.contains("trusted root (public-good)"), "{e}");
    }
}
