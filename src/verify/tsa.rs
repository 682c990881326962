//! RFC 3161 timestamps (`timestampVerificationData.rfc3161Timestamps` of a bundle): a
//! timestamp authority's signed statement that a signature existed at its `genTime`. The
//! token is CMS SignedData (RFC 5652) around a TSTInfo; it proves a time only when its
//! message imprint is the hash of the signature verified, its signed attributes name the
//! TSTInfo's digest, its signer's certificate chains to a `timestampAuthorities` entry of
//! the trusted root valid at `genTime` (with the timeStamping EKU), and that certificate's
//! key signed the attributes. The structures are read with der (as x509-cert reads
//! certificates), the chain is rustls-webpki's, the signature math ring's.

use der::asn1::{Any, ObjectIdentifier, OctetString};
use der::{Decode, Encode, Sequence, Tag, Tagged};
use rustls_pki_types::{CertificateDer, UnixTime};
use sha2::Digest as _;
use x509_cert::spki::AlgorithmIdentifierOwned;
use x509_cert::Certificate;

use super::keys::SignatureAlgorithm;
use super::trust::TrustedRoot;
use super::PublicKey;

/// The largest token read (real ones are a few kilobytes).
pub const MAX_TOKEN: usize = 64 * 1024;
/// The most certificates a token may embed.
const MAX_CERTS: usize = 8;

/// id-kp-timeStamping (1.3.6.1.5.5.7.3.8), as webpki wants it: the OID's content bytes.
const TIME_STAMPING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x08];

const SIGNED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.2");
const TST_INFO: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.1.4");
const CONTENT_TYPE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.3");
const MESSAGE_DIGEST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.4");
const SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.1");
const SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.2");
const SHA512: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.3");
const ECDSA_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.2");
const ECDSA_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.3");
const RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const RSA_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");
const RSA_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.12");
const RSA_SHA512: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.13");
const ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");

/// Why an RFC 3161 timestamp proves no time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("an RFC 3161 timestamp is not base64")]
    Base64,
    #[error("an RFC 3161 timestamp of more than {MAX_TOKEN} bytes")]
    TooLarge,
    #[error("an RFC 3161 timestamp cannot be read: {0}")]
    Unreadable(String),
    #[error("an RFC 3161 timestamp response with status {0} (not granted)")]
    NotGranted(u32),
    #[error("an RFC 3161 timestamp hashes with an algorithm other than SHA-256, SHA-384 or SHA-512 ({0})")]
    Hash(String),
    #[error("the RFC 3161 timestamp is for another signature (its message imprint)")]
    Imprint,
    #[error("the RFC 3161 timestamp's signed attributes do not name its TSTInfo")]
    Attributes,
    #[error("an RFC 3161 timestamp signed with algorithm {0}: only ECDSA, RSA PKCS#1 v1.5 and Ed25519 with SHA-256/384/512")]
    Algorithm(String),
    #[error("no timestamp authority of the trusted root ({root}) signed the RFC 3161 timestamp")]
    NoSigner { root: String },
    #[error("no timestamp authority of the trusted root ({root}) was valid at the RFC 3161 timestamp's time {when}")]
    NoAuthority { root: String, when: String },
    #[error(
        "the timestamp authority's certificate was not valid at the RFC 3161 timestamp's time {0}"
    )]
    CertificateTime(String),
    #[error("the RFC 3161 timestamp's signing certificate was not issued by a timestamp authority of the trusted root ({0})")]
    NotIssued(String),
    #[error("the RFC 3161 timestamp's signing certificate is not for timestamping (no timeStamping EKU)")]
    NotTimestamping,
    #[error("the RFC 3161 timestamp's signing certificate does not chain to a timestamp authority of the trusted root ({root}): {reason}")]
    NoChain { root: String, reason: String },
    #[error("the RFC 3161 timestamp's signature does not verify with its authority's key")]
    Signature,
}

/// `TimeStampResp` (RFC 3161 2.4.2): what timestamp authorities answer, and what Sigstore
/// bundles hold.
#[derive(Sequence)]
struct Response {
    status: StatusInfo,
    token: Option<ContentInfo>,
}

#[derive(Sequence)]
struct StatusInfo {
    status: u32,
    text: Option<Vec<Any>>,
    fail_info: Option<der::asn1::BitString>,
}

/// `ContentInfo` (RFC 5652 3): the token itself.
#[derive(Sequence)]
struct ContentInfo {
    content_type: ObjectIdentifier,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT")]
    content: Any,
}

/// `SignedData` (RFC 5652 5.1).
#[derive(Sequence)]
struct SignedData {
    version: u8,
    digest_algorithms: Any,
    encap: EncapContentInfo,
    #[asn1(context_specific = "0", tag_mode = "IMPLICIT", optional = "true")]
    certificates: Option<Vec<Any>>,
    #[asn1(context_specific = "1", tag_mode = "IMPLICIT", optional = "true")]
    crls: Option<Vec<Any>>,
    /// A SET OF SignerInfo; a timestamp has exactly one.
    signer_infos: Any,
}

#[derive(Sequence)]
struct EncapContentInfo {
    content_type: ObjectIdentifier,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    content: Option<OctetString>,
}

/// `SignerInfo` (RFC 5652 5.3).
#[derive(Sequence)]
struct SignerInfo {
    version: u8,
    /// `IssuerAndSerialNumber` or `[0] SubjectKeyIdentifier`.
    sid: Any,
    digest_algorithm: AlgorithmIdentifierOwned,
    /// `[0] IMPLICIT SET OF Attribute`: required in a timestamp, and kept as read, since
    /// the signature is over its DER with the SET tag.
    signed_attrs: Any,
    signature_algorithm: AlgorithmIdentifierOwned,
    signature: OctetString,
    #[asn1(context_specific = "1", tag_mode = "IMPLICIT", optional = "true")]
    unsigned_attrs: Option<Vec<Any>>,
}

#[derive(Sequence)]
struct IssuerSerial {
    issuer: Any,
    serial: Any,
}

/// An attribute with its SET OF values as read (a signed attribute has one value).
#[derive(Sequence)]
struct Attribute {
    oid: ObjectIdentifier,
    values: Any,
}

/// `TSTInfo` (RFC 3161 2.4.2).
#[derive(Sequence)]
struct TstInfo {
    version: u8,
    policy: ObjectIdentifier,
    imprint: MessageImprint,
    serial: der::asn1::Int,
    /// A GeneralizedTime, read here: it may carry fractions of a second.
    gen_time: Any,
    accuracy: Option<Vec<Any>>,
    ordering: Option<bool>,
    nonce: Option<der::asn1::Int>,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    tsa: Option<Any>,
    #[asn1(context_specific = "1", tag_mode = "IMPLICIT", optional = "true")]
    extensions: Option<Vec<Any>>,
}

#[derive(Sequence)]
struct MessageImprint {
    algorithm: AlgorithmIdentifierOwned,
    hashed: OctetString,
}

/// A token read: what was signed and by whom.
struct Token {
    tst_der: Vec<u8>,
    tst: TstInfo,
    certificates: Vec<Vec<u8>>,
    signer: SignerInfo,
}

fn unreadable(e: impl std::fmt::Display) -> Error {
    Error::Unreadable(e.to_string())
}

/// The time (Unix seconds) `token` (DER: a `TimeStampResp` or a bare token) proves
/// `signature` existed at, checked against the trusted root's timestamp authorities.
pub fn verify(token: &[u8], signature: &[u8], root: &TrustedRoot) -> Result<i64, Error> {
    if token.len() > MAX_TOKEN {
        return Err(Error::TooLarge);
    }
    let token = read(token)?;
    if digest(&token.tst.imprint.algorithm, signature)? != token.tst.imprint.hashed.as_bytes() {
        return Err(Error::Imprint);
    }
    let signed_attrs = attributes_match(&token)?;
    let time = gen_time(&token.tst.gen_time)?;
    let algorithm = signature_algorithm(&token.signer)?;
    let leaf = signer(&token, root, time)?;
    let key = Certificate::from_der(&leaf)
        .and_then(|c| c.tbs_certificate().subject_public_key_info().to_der())
        .map_err(unreadable)
        .and_then(|spki| {
            PublicKey::from_der("timestamp authority", &spki).map_err(|e| unreadable(&e))
        })?;
    match key.verifies_with(algorithm, &signed_attrs, token.signer.signature.as_bytes()) {
        Some(true) => Ok(time),
        Some(false) => Err(Error::Signature),
        None => Err(Error::Algorithm(format!(
            "{:?} with a {} key",
            algorithm, key.kind
        ))),
    }
}

/// The token's parts: a `TimeStampResp` (status granted) or a bare `ContentInfo`.
fn read(der: &[u8]) -> Result<Token, Error> {
    let info = match Response::from_der(der) {
        Ok(r) => {
            if r.status.status > 1 {
                return Err(Error::NotGranted(r.status.status));
            }
            r.token
                .ok_or_else(|| unreadable("a response without a token"))?
        }
        Err(_) => ContentInfo::from_der(der).map_err(unreadable)?,
    };
    if info.content_type != SIGNED_DATA {
        return Err(unreadable("not CMS SignedData"));
    }
    let data: SignedData = info.content.decode_as().map_err(unreadable)?;
    if data.encap.content_type != TST_INFO {
        return Err(unreadable("its content is not a TSTInfo"));
    }
    let tst_der = data
        .encap
        .content
        .ok_or_else(|| unreadable("no TSTInfo"))?
        .into_bytes()
        .into_vec();
    let tst = TstInfo::from_der(&tst_der).map_err(unreadable)?;
    if tst.version != 1 {
        return Err(unreadable(format!("TSTInfo version {}", tst.version)));
    }
    if data.signer_infos.tag() != Tag::Set {
        return Err(unreadable("signerInfos is not a SET"));
    }
    // `from_der` reads exactly one SignerInfo: a second is trailing data.
    let signer = SignerInfo::from_der(data.signer_infos.value()).map_err(unreadable)?;
    let certificates = data.certificates.unwrap_or_default();
    if certificates.len() > MAX_CERTS {
        return Err(unreadable("more than 8 certificates"));
    }
    Ok(Token {
        tst_der,
        tst,
        certificates: certificates
            .iter()
            .filter(|c| c.tag() == Tag::Sequence)
            .map(|c| c.to_der().map_err(unreadable))
            .collect::<Result<_, _>>()?,
        signer,
    })
}

/// The hash of `data` with the algorithm `alg` names (SHA-256, SHA-384 or SHA-512).
fn digest(alg: &AlgorithmIdentifierOwned, data: &[u8]) -> Result<Vec<u8>, Error> {
    // The parameters are absent or NULL.
    if alg.parameters.as_ref().is_some_and(|p| !p.is_null()) {
        return Err(Error::Hash(format!("{} with parameters", alg.oid)));
    }
    Ok(match alg.oid {
        SHA256 => sha2::Sha256::digest(data).to_vec(),
        SHA384 => sha2::Sha384::digest(data).to_vec(),
        SHA512 => sha2::Sha512::digest(data).to_vec(),
        other => return Err(Error::Hash(other.to_string())),
    })
}

/// The signed attributes name the TSTInfo (content type, and its digest with the signer's
/// digest algorithm); the DER the signature is over.
fn attributes_match(token: &Token) -> Result<Vec<u8>, Error> {
    let attrs = &token.signer.signed_attrs;
    if attrs.tag()
        != (Tag::ContextSpecific {
            constructed: true,
            number: der::TagNumber(0),
        })
    {
        return Err(unreadable("no signed attributes"));
    }
    let mut reader = der::SliceReader::new(attrs.value()).map_err(unreadable)?;
    let (mut content_type, mut message_digest) = (None, None);
    while !der::Reader::is_finished(&reader) {
        let attr: Attribute = der::Reader::decode(&mut reader).map_err(unreadable)?;
        // A SET of exactly one value.
        let value = Any::from_der(attr.values.value()).map_err(unreadable)?;
        let slot = match attr.oid {
            CONTENT_TYPE => &mut content_type,
            MESSAGE_DIGEST => &mut message_digest,
            _ => continue,
        };
        if slot.replace(value).is_some() {
            return Err(Error::Attributes);
        }
    }
    let named_type = content_type
        .and_then(|v| v.decode_as::<ObjectIdentifier>().ok())
        .is_some_and(|oid| oid == TST_INFO);
    let named_digest = message_digest.and_then(|v| v.decode_as::<OctetString>().ok());
    let tst_digest = digest(&token.signer.digest_algorithm, &token.tst_der)?;
    if !named_type || named_digest.as_ref().map(OctetString::as_bytes) != Some(&tst_digest[..]) {
        return Err(Error::Attributes);
    }
    Any::new(Tag::Set, attrs.value())
        .and_then(|set| set.to_der())
        .map_err(unreadable)
}

/// The allow-listed signature algorithm the signer names.
fn signature_algorithm(signer: &SignerInfo) -> Result<SignatureAlgorithm, Error> {
    use SignatureAlgorithm as A;
    let oid = signer.signature_algorithm.oid;
    Ok(match oid {
        ECDSA_SHA256 => A::EcdsaSha256,
        ECDSA_SHA384 => A::EcdsaSha384,
        RSA_SHA256 => A::RsaPkcs1Sha256,
        RSA_SHA384 => A::RsaPkcs1Sha384,
        RSA_SHA512 => A::RsaPkcs1Sha512,
        ED25519 => A::Ed25519,
        // rsaEncryption: the hash is the digest algorithm's.
        RSA => match signer.digest_algorithm.oid {
            SHA256 => A::RsaPkcs1Sha256,
            SHA384 => A::RsaPkcs1Sha384,
            SHA512 => A::RsaPkcs1Sha512,
            other => return Err(Error::Algorithm(format!("{oid} with {other}"))),
        },
        other => return Err(Error::Algorithm(other.to_string())),
    })
}

/// `YYYYMMDDHHMMSS[.fraction]Z` as Unix seconds (a fraction is dropped).
fn gen_time(t: &Any) -> Result<i64, Error> {
    let bad = || unreadable("genTime is not a GeneralizedTime in UTC");
    if t.tag() != Tag::GeneralizedTime {
        return Err(bad());
    }
    let text = std::str::from_utf8(t.value()).map_err(|_| bad())?;
    let text = text.strip_suffix('Z').ok_or_else(bad)?;
    let (whole, fraction) = text.split_once('.').unwrap_or((text, "0"));
    if whole.len() != 14
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || fraction.is_empty()
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let num = |from: usize, to: usize| whole.get(from..to).and_then(|s| s.parse::<i16>().ok());
    let at = (|| {
        jiff::civil::DateTime::new(
            num(0, 4)?,
            i8::try_from(num(4, 6)?).ok()?,
            i8::try_from(num(6, 8)?).ok()?,
            i8::try_from(num(8, 10)?).ok()?,
            i8::try_from(num(10, 12)?).ok()?,
            i8::try_from(num(12, 14)?).ok()?,
            0,
        )
        .ok()?
        .to_zoned(jiff::tz::TimeZone::UTC)
        .ok()
    })()
    .ok_or_else(bad)?;
    Ok(at.timestamp().as_second())
}

/// Does `cert` (DER) have the issuer and serial, or subject key identifier, `sid` names?
fn is_signer(sid: &Any, cert: &[u8]) -> bool {
    let Ok(c) = Certificate::from_der(cert) else {
        return false;
    };
    let tbs = c.tbs_certificate();
    if sid.tag() == Tag::Sequence {
        let Ok(named) = sid.decode_as::<IssuerSerial>() else {
            return false;
        };
        return tbs.issuer().to_der().ok() == named.issuer.to_der().ok()
            && tbs.serial_number().to_der().ok() == named.serial.to_der().ok();
    }
    let key_id = tbs
        .get_extension::<x509_cert::ext::pkix::SubjectKeyIdentifier>()
        .ok()
        .flatten()
        .map(|(_, id)| id.0.as_bytes().to_vec());
    sid.tag()
        == (Tag::ContextSpecific {
            constructed: false,
            number: der::TagNumber(0),
        })
        && key_id.as_deref() == Some(sid.value())
}

/// The signer's certificate (embedded, or a trusted root's TSA leaf), checked: it chains to
/// a timestamp authority of `root` valid at `time`, was valid then, and has the
/// timeStamping EKU.
fn signer(token: &Token, root: &TrustedRoot, time: i64) -> Result<Vec<u8>, Error> {
    let sid = &token.signer.sid;
    let leaf = token
        .certificates
        .iter()
        .chain(
            root.timestamp_authorities
                .iter()
                .filter_map(|a| a.chain.first()),
        )
        .find(|c| is_signer(sid, c))
        .ok_or_else(|| Error::NoSigner {
            root: root.name.clone(),
        })?;
    let at = u64::try_from(time)
        .map(|s| UnixTime::since_unix_epoch(std::time::Duration::from_secs(s)))
        .map_err(|_| unreadable("a genTime before 1970"))?;
    let der = CertificateDer::from(leaf.as_slice());
    let ee = webpki::EndEntityCert::try_from(&der).map_err(unreadable)?;
    let mut last = Error::NoAuthority {
        root: root.name.clone(),
        when: super::fulcio::show_time(time),
    };
    for tsa in root
        .timestamp_authorities
        .iter()
        .filter(|a| a.valid.contains(time))
    {
        let Some((anchor, rest)) = tsa.chain.split_last() else {
            continue;
        };
        let anchor_der = CertificateDer::from(anchor.as_slice());
        let Ok(anchor) = webpki::anchor_from_trusted_cert(&anchor_der) else {
            continue;
        };
        let inter: Vec<CertificateDer> = rest
            .iter()
            .chain(&token.certificates)
            .filter(|c| *c != leaf)
            .map(|c| CertificateDer::from(c.as_slice()))
            .collect();
        match ee.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &[anchor.to_owned()],
            &inter,
            at,
            webpki::KeyUsage::required(TIME_STAMPING),
            None,
            None,
        ) {
            Ok(_) => return Ok(leaf.clone()),
            Err(e) => last = chain_error(&e, time, &root.name),
        }
    }
    Err(last)
}

fn chain_error(e: &webpki::Error, time: i64, root: &str) -> Error {
    use webpki::Error as W;
    match e {
        W::CertExpired { .. } | W::CertNotValidYet { .. } => {
            Error::CertificateTime(super::fulcio::show_time(time))
        }
        W::UnknownIssuer | W::InvalidSignatureForPublicKey => Error::NotIssued(root.to_string()),
        W::RequiredEkuNotFoundContext(_) => Error::NotTimestamping,
        other => Error::NoChain {
            root: root.to_string(),
            reason: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use proptest::prelude::*;

    const BUNDLE: &str = include_str!(
        "../../tests/conformance/bundle-verify/rekor2-happy-path/bundle.sigstore.json"
    );
    const ROOT: &str =
        include_str!("../../tests/conformance/bundle-verify/rekor2-happy-path/trusted_root.json");

    /// The real timestamp, the signature it stamps, and the trusted root of its TSA.
    fn real() -> (Vec<u8>, Vec<u8>, TrustedRoot) {
        let b64 = base64::engine::general_purpose::STANDARD;
        let bundle: serde_json::Value = serde_json::from_str(BUNDLE).unwrap();
        let token = bundle["verificationMaterial"]["timestampVerificationData"]
            ["rfc3161Timestamps"][0]["signedTimestamp"]
            .as_str()
            .unwrap();
        let sig = bundle["messageSignature"]["signature"].as_str().unwrap();
        let root = TrustedRoot::from_json("t", ROOT.as_bytes()).unwrap();
        (b64.decode(token).unwrap(), b64.decode(sig).unwrap(), root)
    }

    #[test]
    fn a_real_timestamp_proves_its_time() {
        let (token, sig, root) = real();
        // 2025-06-12T12:02:20Z, by sigstage's TSA (P-384 key, ecdsa-with-SHA256).
        assert_eq!(verify(&token, &sig, &root), Ok(1_749_729_740));
        let mut other = sig.clone();
        other[10] ^= 1;
        assert_eq!(verify(&token, &other, &root), Err(Error::Imprint));
        let public_good = TrustedRoot::public_good().unwrap();
        // It embeds its certificate, which chains to no TSA of the public-good root.
        assert_eq!(
            verify(&token, &sig, &public_good),
            Err(Error::NoAuthority {
                root: "public-good".into(),
                when: "2025-06-12T12:02:20Z".into()
            })
        );
    }

    /// A token without embedded certificates: its signer is the trusted root's TSA leaf.
    #[test]
    fn a_timestamp_without_certificates_is_signed_by_the_roots_tsa() {
        let bundle: serde_json::Value = serde_json::from_str(include_str!(
            "../../tests/conformance/bundle-verify/rekor2-timestamp-without-embedded-cert/bundle.sigstore.json"
        ))
        .unwrap();
        let b64 = base64::engine::general_purpose::STANDARD;
        let token = bundle["verificationMaterial"]["timestampVerificationData"]
            ["rfc3161Timestamps"][0]["signedTimestamp"]
            .as_str()
            .unwrap()
            .replace('\n', "");
        let token = b64.decode(token).unwrap();
        let sig = b64
            .decode(bundle["messageSignature"]["signature"].as_str().unwrap())
            .unwrap();
        assert!(read(&token).unwrap().certificates.is_empty());
        let (_, _, root) = real();
        // 2025-08-06T19:03:51Z.
        assert_eq!(verify(&token, &sig, &root), Ok(1_754_507_031));
        let public_good = TrustedRoot::public_good().unwrap();
        assert_eq!(
            verify(&token, &sig, &public_good),
            Err(Error::NoSigner {
                root: "public-good".into()
            })
        );
    }

    #[test]
    fn gen_time_reads_fractions_and_refuses_other_forms() {
        let t = |s: &str| gen_time(&Any::new(Tag::GeneralizedTime, s.as_bytes()).unwrap());
        assert_eq!(t("20250612120220Z"), Ok(1_749_729_740));
        assert_eq!(t("20250612120220.999Z"), Ok(1_749_729_740));
        for bad in [
            "20250612120220",
            "2025061212022Z",
            "20250612120220.Z",
            "20251312120220Z",
        ] {
            assert!(t(bad).is_err(), "{bad}");
        }
        let utc = Any::new(Tag::UtcTime, b"250612120220Z".as_slice()).unwrap();
        assert!(gen_time(&utc).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Any byte of a real timestamp changed: an error, or the same time (a byte the
        /// structure does not sign, as an unsigned certificate field), never a panic.
        #[test]
        fn a_changed_timestamp_never_panics_or_moves(at in 0..1258usize, byte in any::<u8>()) {
            let (mut token, sig, root) = real();
            prop_assume!(at < token.len());
            token[at] = byte;
            if let Ok(t) = verify(&token, &sig, &root) {
                prop_assert_eq!(t, 1_749_729_740);
            }
        }
    }
}
