//! Keyless certificates: a Fulcio-issued leaf must chain to a CA of the trusted root, be
//! valid at the signing time (the log's integrated time: Fulcio certificates live ten
//! minutes), and carry the code-signing EKU. rustls-webpki checks the chain, validity and
//! EKU; x509-cert reads the identity (SAN) and the OIDC issuer extension. No math here.

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

/// A leaf certificate checked against the trusted root at `time` (Unix seconds): its
/// identity and its public key.
pub fn verify(
    leaf: &[u8],
    chain: &[Vec<u8>],
    root: &TrustedRoot,
    time: i64,
) -> Result<(CertIdentity, PublicKey), String> {
    let der = CertificateDer::from(leaf);
    let ee = webpki::EndEntityCert::try_from(&der)
        .map_err(|e| format!("the signing certificate cannot be read: {e}"))?;
    let at = UnixTime::since_unix_epoch(std::time::Duration::from_secs(
        u64::try_from(time).map_err(|_| format!("a log time before 1970 ({time})"))?,
    ));
    let mut last = format!(
        "no certificate authority of the trusted root ({}) was valid at the log time {}",
        root.name,
        show_time(time)
    );
    for ca in root.authorities.iter().filter(|a| a.valid.contains(time)) {
        let Some((anchor, intermediates)) = ca.chain.split_last() else {
            continue;
        };
        let anchor_der = CertificateDer::from(anchor.as_slice());
        let anchor = match webpki::anchor_from_trusted_cert(&anchor_der) {
            Ok(a) => a.to_owned(),
            Err(e) => return Err(format!("trusted root {}: a CA root: {e}", root.name)),
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
            Ok(_) => return identity(leaf).map_err(|e| format!("the signing certificate: {e}")),
            Err(e) => last = chain_error(&e, time, &root.name),
        }
    }
    Err(last)
}

fn chain_error(e: &webpki::Error, time: i64, root: &str) -> String {
    let when = show_time(time);
    match e {
        webpki::Error::CertExpired { .. } => {
            format!("the signing certificate had expired at its log time {when}")
        }
        webpki::Error::CertNotValidYet { .. } => {
            format!("the signing certificate was not yet valid at its log time {when}")
        }
        // No issuer of that name, or one of that name whose key did not sign it.
        webpki::Error::UnknownIssuer | webpki::Error::InvalidSignatureForPublicKey => {
            format!("the signing certificate was not issued by a CA of the trusted root ({root})")
        }
        webpki::Error::RequiredEkuNotFoundContext(_) => {
            "the signing certificate is not for code signing (no code-signing EKU)".into()
        }
        other => {
            format!("the signing certificate does not chain to the trusted root ({root}): {other}")
        }
    }
}

/// `2024-02-01T00:00:00Z`.
pub fn show_time(t: i64) -> String {
    jiff::Timestamp::from_second(t)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| t.to_string())
}

/// The SAN and OIDC issuer of a certificate, and its public key.
fn identity(der: &[u8]) -> Result<(CertIdentity, PublicKey), String> {
    let cert = Certificate::from_der(der).map_err(|e| e.to_string())?;
    let tbs = cert.tbs_certificate();
    let san = tbs
        .get_extension::<SubjectAltName>()
        .map_err(|e| format!("its subject alternative name: {e}"))?
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
        .ok_or("no URI or email subject alternative name (not a Fulcio certificate)")?;
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
            .map_err(|e| format!("its OIDC issuer extension: {e}"))?,
        (None, Some(v)) => String::from_utf8(v).map_err(|_| "its OIDC issuer is not UTF-8")?,
        (None, None) => return Err("no OIDC issuer extension (not a Fulcio certificate)".into()),
    };
    let spki = tbs
        .subject_public_key_info()
        .to_der()
        .map_err(|e| format!("its public key: {e}"))?;
    let key =
        PublicKey::from_der("certificate", &spki).map_err(|e| format!("its public key: {e}"))?;
    Ok((CertIdentity { subject, issuer }, key))
}

/// The DER certificates of a PEM text (`dev.sigstore.cosign/certificate` and `/chain`), at
/// most eight.
pub fn pem_certificates(pem: &str) -> Result<Vec<Vec<u8>>, String> {
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
                    let (_, der) = pem_rfc7468::decode_vec(b.as_bytes())
                        .map_err(|e| format!("a PEM certificate: {e}"))?;
                    out.push(der);
                    block = None;
                    if out.len() > 8 {
                        return Err("more than 8 certificates in a chain".into());
                    }
                }
            }
        }
    }
    match block {
        Some(_) => Err("an unterminated PEM certificate".into()),
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
        assert!(pem_certificates("-----BEGIN CERTIFICATE-----\nAQID\n").is_err());
        let root = TrustedRoot::public_good().unwrap();
        let e = verify(&[1, 2, 3], &[], &root, 1_700_000_000).unwrap_err();
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
        let e = verify(&material.leaf, &material.chain, &root, logged + 600).unwrap_err();
        assert_eq!(
            e,
            "the signing certificate had expired at its log time 2024-03-19T22:51:16Z"
        );
        // The public-good root's retired CA alone (valid until 2022) does not issue it.
        let e = verify(&material.leaf, &material.chain, &root, 1_640_000_000).unwrap_err();
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
        let e = verify(&intermediate, &[], &root, 1_700_000_000).unwrap_err();
        assert!(e.contains("trusted root (public-good)"), "{e}");
    }
}
