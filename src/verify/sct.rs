//! Certificate transparency for keyless certificates (RFC 6962): Fulcio logs every
//! certificate it issues in a CT log and embeds the log's signed certificate timestamps
//! (SCTs) in the certificate (extension 1.3.6.1.4.1.11129.2.4.2). An SCT signs the
//! *precertificate*: the certificate's TBS without that extension, with the SHA-256 of the
//! issuer's public key. A keyless certificate needs at least one SCT that verifies with the
//! key of a CT log the trusted root lists (`ctlogs`, matched by log id = SHA-256 of the key),
//! valid at the SCT's time; cosign and sigstore-python apply the same rule. The signature
//! math is ring's (through [`PublicKey`]); this file reads the TLS encoding and rebuilds the
//! signed bytes.

use sha2::{Digest as _, Sha256};
use x509_cert::der::asn1::{AnyRef, ObjectIdentifier, OctetString};
use x509_cert::der::{Decode, Encode, Tag, TagNumber, Tagged as _};
use x509_cert::Certificate;

use super::trust::TrustedRoot;

/// The embedded SCT list extension.
const SCT_LIST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.11129.2.4.2");
/// The most SCTs read from one certificate (Fulcio embeds one).
const MAX_SCTS: usize = 16;
/// TLS `HashAlgorithm.sha256` and `SignatureAlgorithm.rsa` / `.ecdsa` (RFC 5246 7.4.1.4.1).
const SHA256: u8 = 4;
const RSA: u8 = 1;
const ECDSA: u8 = 3;

/// Why a keyless certificate's certificate transparency is not proven.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("the signing certificate's SCT list cannot be read: {0}")]
    Unreadable(String),
    #[error("the signing certificate carries no SCT (signed certificate timestamp): no certificate transparency log vouches for it")]
    Missing,
    #[error("the signing certificate's SCTs are from no certificate transparency log the trusted root ({0}) lists (ctlogs)")]
    UnknownLog(String),
    #[error("the signing certificate's SCT from certificate transparency log {log} {why}")]
    Refused { log: String, why: &'static str },
}

/// One SCT (RFC 6962 3.2), borrowed from the list.
#[derive(Debug, PartialEq, Eq)]
struct Sct<'a> {
    log_id: &'a [u8],
    /// Milliseconds since the epoch.
    timestamp: u64,
    extensions: &'a [u8],
    hash: u8,
    algorithm: u8,
    signature: &'a [u8],
}

/// Check the embedded SCTs of `leaf`, issued by the certificate whose SubjectPublicKeyInfo
/// (DER) is `issuer_spki`: at least one must verify with a CT log of `root`.
pub fn verify(leaf: &[u8], issuer_spki: &[u8], root: &TrustedRoot) -> Result<(), Error> {
    let (list, tbs) = precertificate(leaf)?;
    let issuer_key_hash: [u8; 32] = Sha256::digest(issuer_spki).into();
    check_list(&list, &tbs, &issuer_key_hash, root)
}

/// The TLS-encoded SCT list of a certificate and its precertificate TBS (DER).
fn precertificate(leaf: &[u8]) -> Result<(Vec<u8>, Vec<u8>), Error> {
    let der = |e: x509_cert::der::Error| Error::Unreadable(e.to_string());
    let cert = Certificate::from_der(leaf).map_err(der)?;
    let extensions = cert
        .tbs_certificate()
        .extensions()
        .cloned()
        .unwrap_or_default();
    let (sct, kept): (Vec<_>, Vec<_>) = extensions.into_iter().partition(|e| e.extn_id == SCT_LIST);
    let list = match sct.as_slice() {
        [] => return Err(Error::Missing),
        [one] => OctetString::from_der(one.extn_value.as_bytes()).map_err(der)?,
        _ => return Err(Error::Unreadable("two SCT list extensions".into())),
    };
    // The TBS as signed, field by field, with its extensions ([3]) re-encoded without the
    // SCT list (and left out when nothing else remains).
    let outer = Vec::<AnyRef>::from_der(leaf).map_err(der)?;
    let tbs = outer
        .first()
        .ok_or_else(|| Error::Unreadable("no TBS".into()))?;
    let tbs = tbs.to_der().map_err(der)?;
    let fields = Vec::<AnyRef>::from_der(&tbs).map_err(der)?;
    let explicit3 = Tag::ContextSpecific {
        constructed: true,
        number: TagNumber(3),
    };
    let kept = kept.to_der().map_err(der)?;
    let rebuilt = AnyRef::new(explicit3, &kept).map_err(der)?;
    let fields: Vec<AnyRef> = fields
        .into_iter()
        .filter_map(|f| match f.tag() == explicit3 {
            false => Some(f),
            true if kept.len() > 2 => Some(rebuilt),
            true => None,
        })
        .collect();
    Ok((list.into_bytes().into(), fields.to_der().map_err(der)?))
}

/// At least one SCT of the TLS-encoded `list` signs `tbs` for the issuer with a CT log of
/// `root`; the most telling refusal otherwise.
fn check_list(
    list: &[u8],
    tbs: &[u8],
    issuer_key_hash: &[u8; 32],
    root: &TrustedRoot,
) -> Result<(), Error> {
    let scts = parse_list(list).ok_or_else(|| Error::Unreadable("not an SCT list".into()))?;
    let mut why = match scts.is_empty() {
        true => Error::Missing,
        false => Error::UnknownLog(root.name.clone()),
    };
    for sct in &scts {
        match check_one(sct, tbs, issuer_key_hash, root) {
            Ok(()) => return Ok(()),
            Err(Error::UnknownLog(_)) => {}
            Err(e) => why = e,
        }
    }
    Err(why)
}

fn check_one(
    sct: &Sct,
    tbs: &[u8],
    issuer_key_hash: &[u8; 32],
    root: &TrustedRoot,
) -> Result<(), Error> {
    let Some(log) = root
        .ctlogs
        .iter()
        .find(|l| Sha256::digest(l.key.fingerprint_source()).as_slice() == sct.log_id)
    else {
        return Err(Error::UnknownLog(root.name.clone()));
    };
    let refused = |why| Error::Refused {
        log: sct.log_id.iter().map(|b| format!("{b:02x}")).collect(),
        why,
    };
    let seconds = sct
        .timestamp
        .checked_div(1000)
        .and_then(|s| i64::try_from(s).ok());
    if !seconds.is_some_and(|s| log.valid.contains(s)) {
        return Err(refused(
            "is from a time outside its key's validity (ctlogs validFor)",
        ));
    }
    let algorithm_fits = match (sct.algorithm, log.key.kind) {
        (ECDSA, "ecdsa-p256") | (RSA, "rsa") => sct.hash == SHA256,
        _ => false,
    };
    if !algorithm_fits {
        return Err(refused(
            "is signed with another algorithm than the log's key",
        ));
    }
    let message = signed_data(sct, tbs, issuer_key_hash)
        .ok_or_else(|| refused("signs a precertificate too large to be one"))?;
    if !log.key.verifies(&message, sct.signature) {
        return Err(refused("does not verify with the log's key"));
    }
    Ok(())
}

/// The bytes an SCT signs for a precertificate entry (RFC 6962 3.2, `digitally-signed`).
fn signed_data(sct: &Sct, tbs: &[u8], issuer_key_hash: &[u8; 32]) -> Option<Vec<u8>> {
    let tbs_len = u32::try_from(tbs.len()).ok().filter(|l| *l < 1 << 24)?;
    let [_, a, b, c] = tbs_len.to_be_bytes();
    let ext_len = u16::try_from(sct.extensions.len()).ok()?;
    let mut m = Vec::with_capacity(
        tbs.len()
            .saturating_add(sct.extensions.len())
            .saturating_add(64),
    );
    // v1, certificate_timestamp, the time, precert_entry.
    m.extend_from_slice(&[0, 0]);
    m.extend_from_slice(&sct.timestamp.to_be_bytes());
    m.extend_from_slice(&[0, 1]);
    m.extend_from_slice(issuer_key_hash);
    m.extend_from_slice(&[a, b, c]);
    m.extend_from_slice(tbs);
    m.extend_from_slice(&ext_len.to_be_bytes());
    m.extend_from_slice(sct.extensions);
    Some(m)
}

/// Bytes read front to back; `None` past the end.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1)?.first().copied()
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }
    /// A TLS `opaque<0..2^16-1>`: a two-byte length, then that many bytes.
    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = u16::from_be_bytes(self.take(2)?.try_into().ok()?);
        self.take(usize::from(n))
    }
}

/// A `SignedCertificateTimestampList`: every SCT of version 1 in it (others are skipped, as
/// RFC 6962 asks), at most [`MAX_SCTS`]; `None` when it is not one.
fn parse_list(bytes: &[u8]) -> Option<Vec<Sct<'_>>> {
    let mut outer = Reader(bytes);
    let mut list = Reader(outer.vec16()?);
    if !outer.0.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    while !list.0.is_empty() {
        let mut one = Reader(list.vec16()?);
        if out.len() == MAX_SCTS {
            return None;
        }
        if one.u8()? != 0 {
            continue;
        }
        let sct = Sct {
            log_id: one.take(32)?,
            timestamp: one.u64()?,
            extensions: one.vec16()?,
            hash: one.u8()?,
            algorithm: one.u8()?,
            signature: one.vec16()?,
        };
        if !one.0.is_empty() {
            return None;
        }
        out.push(sct);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The leaf of a real Fulcio certificate (sigstore-python's test assets), its issuer's
    /// key (the public-good intermediate) and its SCT list.
    fn real() -> (Vec<u8>, Vec<u8>) {
        let bundle: serde_json::Value = serde_json::from_str(include_str!(
            "testdata/public-good-github-actions.sigstore.json"
        ))
        .unwrap();
        let material =
            super::super::keyless::Material::from_bundle(&bundle["verificationMaterial"])
                .unwrap()
                .unwrap();
        let root = TrustedRoot::public_good().unwrap();
        let intermediate = Certificate::from_der(&root.authorities[1].chain[0]).unwrap();
        let spki = intermediate
            .tbs_certificate()
            .subject_public_key_info()
            .to_der()
            .unwrap();
        (material.leaf, spki)
    }

    #[test]
    fn a_real_fulcio_certificate_has_a_valid_sct_from_the_public_good_ct_log() {
        let (leaf, spki) = real();
        let root = TrustedRoot::public_good().unwrap();
        assert_eq!(verify(&leaf, &spki, &root), Ok(()));
        let (list, _) = precertificate(&leaf).unwrap();
        let scts = parse_list(&list).unwrap();
        assert_eq!(scts.len(), 1);
        assert_eq!(scts[0].timestamp, 1_710_888_075_966);
        // Another issuer key: the SCT signs another precertificate.
        let e = verify(&leaf, b"another issuer", &root).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the signing certificate's SCT from certificate transparency log \
             dd3d306ac6c7113263191e1c99673702a24a5eb8de3cadff878a72802f29ee8e \
             does not verify with the log's key"
        );
    }

    #[test]
    fn an_sct_needs_a_ct_log_of_the_trusted_root_valid_at_its_time() {
        let (leaf, spki) = real();
        let mut root = TrustedRoot::public_good().unwrap();
        // The 2022 log's key, valid only until the SCT's time minus a second.
        root.ctlogs[1].valid.end = 1_710_888_074;
        let e = verify(&leaf, &spki, &root).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("is from a time outside its key's validity (ctlogs validFor)"),
            "{e}"
        );
        root.ctlogs.remove(1);
        let e = verify(&leaf, &spki, &root).unwrap_err();
        assert_eq!(e, Error::UnknownLog("public-good".into()));
        assert_eq!(
            e.to_string(),
            "the signing certificate's SCTs are from no certificate transparency log \
             the trusted root (public-good) lists (ctlogs)"
        );
        // A CA certificate carries no SCT.
        let ca = root.authorities[1].chain[0].clone();
        assert_eq!(verify(&ca, &spki, &root), Err(Error::Missing));
    }

    #[test]
    fn reads_sct_lists_with_extensions_and_skips_other_versions() {
        let sct = |version: u8, ext: &[u8]| {
            let mut s = vec![version];
            s.extend([7u8; 32]);
            s.extend(5u64.to_be_bytes());
            s.extend((ext.len() as u16).to_be_bytes());
            s.extend(ext);
            s.extend([SHA256, ECDSA, 0, 2, 0xAA, 0xBB]);
            s
        };
        let list = |scts: &[Vec<u8>]| {
            let mut body = Vec::new();
            for s in scts {
                body.extend((s.len() as u16).to_be_bytes());
                body.extend(s);
            }
            let mut out = (body.len() as u16).to_be_bytes().to_vec();
            out.extend(body);
            out
        };
        let bytes = list(&[sct(0, b"ext"), sct(1, b"")]);
        let parsed = parse_list(&bytes).unwrap();
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].extensions, b"ext");
        assert_eq!(parsed[0].signature, [0xAA, 0xBB]);
        // Trailing bytes, a short SCT, too many SCTs: not a list.
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert_eq!(parse_list(&trailing), None);
        let mut short = sct(0, b"");
        short.pop();
        assert_eq!(parse_list(&list(&[short])), None);
        assert_eq!(parse_list(&list(&vec![sct(0, b""); MAX_SCTS + 1])), None);
        assert_eq!(
            parse_list(&list(&vec![sct(0, b""); MAX_SCTS]))
                .unwrap()
                .len(),
            MAX_SCTS
        );
    }

    /// sigstore-conformance's bundle-with-sct-with-extensions: an SCT carrying extensions,
    /// from a Fulcio whose certificates the CA root issues directly (no intermediate), checked
    /// through fulcio.rs at the SCT's time.
    #[test]
    fn an_sct_with_extensions_from_a_root_issued_certificate_verifies() {
        use base64::Engine as _;
        let bundle: serde_json::Value = serde_json::from_str(include_str!(concat!(
            "../../tests/conformance/bundle-verify/bundle-with-sct-with-extensions",
            "/bundle.sigstore.json"
        )))
        .unwrap();
        let root = TrustedRoot::from_json(
            "trusted_root.json",
            include_bytes!(concat!(
                "../../tests/conformance/bundle-verify/bundle-with-sct-with-extensions",
                "/trusted_root.json"
            )),
        )
        .unwrap();
        let leaf = base64::engine::general_purpose::STANDARD
            .decode(
                bundle["verificationMaterial"]["certificate"]["rawBytes"]
                    .as_str()
                    .unwrap(),
            )
            .unwrap();
        let (list, _) = precertificate(&leaf).unwrap();
        let scts = parse_list(&list).unwrap();
        assert_eq!(scts[0].extensions, [0, 0, 5, 0, 0, 0, 0, 112]);
        let at = i64::try_from(scts[0].timestamp / 1000).unwrap();
        let (_, key) = super::super::fulcio::verify(&leaf, &[], &root, at).unwrap();
        assert_eq!(key.kind, "ecdsa-p256");
        let mut untrusted = root;
        untrusted.ctlogs.clear();
        let e = super::super::fulcio::verify(&leaf, &[], &untrusted, at).unwrap_err();
        assert!(
            e.to_string()
                .contains("from no certificate transparency log"),
            "{e}"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Any byte of a real SCT list changed: an error or the same verdict, never a panic.
        #[test]
        fn a_changed_sct_list_never_panics(at in 0usize..200, byte in any::<u8>()) {
            let (leaf, spki) = real();
            let root = TrustedRoot::public_good().unwrap();
            let (mut list, tbs) = precertificate(&leaf).unwrap();
            let at = at % list.len();
            let same = list[at] == byte;
            list[at] = byte;
            let hash: [u8; 32] = Sha256::digest(&spki).into();
            let verdict = check_list(&list, &tbs, &hash, &root);
            prop_assert!(verdict.is_err() || same, "{verdict:?}");
        }
    }
}
