//! Rekor transparency-log entries, checked offline against the trusted root's log keys:
//! the signed entry timestamp (SET, the log's signature over the canonical JSON of
//! `{body, integratedTime, logID, logIndex}`), the RFC 6962 inclusion proof up to a
//! checkpoint the log signed, and the entry body, which must be the signature being
//! verified. Rekor v2 entries (`hashedrekord` 0.0.2) have no SET and no integrated time:
//! their inclusion proof and checkpoint are required, and their time is only what RFC 3161
//! timestamps prove (tsa.rs). The signatures are ring's (through [`PublicKey`]); SHA-256 is
//! sha2's.

use base64::Engine as _;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use super::trust::TrustedRoot;

/// The most audit-path hashes read (a tree of 2^64 leaves needs 64).
const MAX_PATH: usize = 64;

/// One log entry as a signature carries it (legacy annotation or bundle v0.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The canonicalized entry body (JSON).
    pub body: Vec<u8>,
    /// 0 when the entry has none (Rekor v2); a time only when a verified SET signs it.
    pub integrated_time: i64,
    pub log_index: i64,
    /// The log's id: the SHA-256 of its public key.
    pub log_id: Vec<u8>,
    /// The signed entry timestamp, when present.
    pub set: Option<Vec<u8>>,
    pub proof: Option<Proof>,
}

/// An inclusion proof and the checkpoint it leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    pub log_index: u64,
    pub tree_size: u64,
    pub root_hash: Vec<u8>,
    pub hashes: Vec<Vec<u8>>,
    /// The signed note (`origin\nsize\nroot\n\n— name sig\n`).
    pub checkpoint: String,
}

/// What the entry's body must say.
pub enum Signed<'a> {
    /// `hashedrekord`: the SHA-256 of the payload, the signature, the certificate.
    Hashed {
        payload: &'a [u8],
        signature: &'a [u8],
        certificate: &'a [u8],
    },
    /// `hashedrekord` of a signature over a SHA-256 digest (`verify-bundle` with a digest
    /// or an artifact).
    Digest {
        digest: &'a [u8],
        signature: &'a [u8],
        certificate: &'a [u8],
    },
    /// `dsse`: the SHA-256 of the envelope's payload, its signatures and the certificate;
    /// or `hashedrekord` 0.0.2 of the SHA-256 of its pre-authentication encoding `pae`.
    Dsse {
        payload: &'a [u8],
        pae: &'a [u8],
        signatures: &'a [Vec<u8>],
        certificate: &'a [u8],
    },
}

/// Why a transparency log entry does not prove a signature, or could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("the transparency log entry is from a log the trusted root ({root}) does not list")]
    UnknownLog { root: String },
    #[error("the transparency log's key was not valid at the entry's time")]
    KeyNotValid,
    #[error(
        "the transparency log entry has neither a signed entry timestamp nor an inclusion proof"
    )]
    NoTimestamp,
    #[error("the transparency log entry has no signed entry timestamp, and the bundle no RFC 3161 timestamp: its time is unproven")]
    NoTime,
    #[error(
        "the transparency log entry's signed entry timestamp does not verify with the log's key"
    )]
    TimestampRefused,
    #[error("the transparency log entry's inclusion proof does not lead to its root hash")]
    Inclusion,
    /// The checkpoint is not a signed note, is for another tree, or is not the log's.
    #[error("the transparency log entry's checkpoint {0}")]
    Checkpoint(&'static str),
    #[error("the transparency log entry's body: {0}")]
    Body(String),
    #[error("a transparency log entry of kind {0:?}, not the signature's")]
    Kind(String),
    /// The entry logs another payload, signature or certificate than the one verified.
    #[error("the transparency log entry is for another {0}")]
    Mismatch(&'static str),
    /// The entry as the signature carries it (annotation or bundle) cannot be read.
    #[error("{0}")]
    Unreadable(String),
}

impl Error {
    /// What the operator can do; `None` where the entry itself is wrong (the signature
    /// is refused, as it should be).
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::UnknownLog { .. } => Some(
                "set verify.trustedRoot to the trusted_root.json of the Sigstore instance \
                 that signed the image"
                    .into(),
            ),
            Error::NoTimestamp => {
                Some("sign with cosign's transparency log upload (its default)".into())
            }
            _ => None,
        }
    }
}

impl Signed<'_> {
    /// The signature RFC 3161 timestamps stamp (a DSSE envelope's first).
    pub fn timestamped(&self) -> &[u8] {
        match self {
            Signed::Hashed { signature, .. } | Signed::Digest { signature, .. } => signature,
            Signed::Dsse { signatures, .. } => signatures.first().map_or(&[], Vec::as_slice),
        }
    }
}

/// Check `entry` against the trusted root's logs and `signed`, given `timestamps` (the
/// times RFC 3161 timestamps of the same signature proved): the entry's integrated time
/// when a SET signs it. Without one, at least one timestamp is required.
pub fn verify(
    entry: &Entry,
    root: &TrustedRoot,
    signed: &Signed,
    timestamps: &[i64],
) -> Result<Option<i64>, Error> {
    let integrated = logged(entry, root, timestamps)?;
    body_matches(&entry.body, signed)?;
    if integrated.is_none() && timestamps.is_empty() {
        return Err(Error::NoTime);
    }
    Ok(integrated)
}

/// The entry is in a log of the trusted root: its SET verifies, and its inclusion proof
/// and checkpoint when it has them (an entry without a SET must have them). Its integrated
/// time when a SET signs it. The log's key must be valid at that time, or, without one, at
/// every time of `timestamps`.
fn logged(entry: &Entry, root: &TrustedRoot, timestamps: &[i64]) -> Result<Option<i64>, Error> {
    let Some(log) = root.log(&entry.log_id) else {
        return Err(Error::UnknownLog {
            root: root.name.clone(),
        });
    };
    let integrated = match &entry.set {
        Some(set) => {
            if !log.valid.contains(entry.integrated_time) {
                return Err(Error::KeyNotValid);
            }
            if !log.key.verifies(&set_payload(entry), set) {
                return Err(Error::TimestampRefused);
            }
            Some(entry.integrated_time)
        }
        None if entry.proof.is_none() => return Err(Error::NoTimestamp),
        None => {
            if !timestamps.iter().all(|t| log.valid.contains(*t)) {
                return Err(Error::KeyNotValid);
            }
            None
        }
    };
    if let Some(proof) = &entry.proof {
        inclusion(&entry.body, proof)?;
        checkpoint(proof, &log.key, &entry.log_id)?;
    }
    Ok(integrated)
}

/// The canonical JSON the SET signs: keys sorted, no spaces.
fn set_payload(entry: &Entry) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let hex: String = entry.log_id.iter().map(|b| format!("{b:02x}")).collect();
    serde_json::json!({
        "body": b64.encode(&entry.body),
        "integratedTime": entry.integrated_time,
        "logID": hex,
        "logIndex": entry.log_index,
    })
    .to_string()
    .into_bytes()
}

fn node(left: &[u8], right: &[u8]) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().to_vec()
}

/// RFC 9162 2.1.3.2: the audit path from the leaf to the root of a tree of `tree_size`.
fn inclusion(body: &[u8], p: &Proof) -> Result<(), Error> {
    let bad = || Error::Inclusion;
    if p.log_index >= p.tree_size || p.hashes.len() > MAX_PATH {
        return Err(bad());
    }
    let mut leaf = Sha256::new();
    leaf.update([0u8]);
    leaf.update(body);
    let mut r = leaf.finalize().to_vec();
    let (mut f, mut s) = (p.log_index, p.tree_size.saturating_sub(1));
    for h in &p.hashes {
        if s == 0 {
            return Err(bad());
        }
        if f & 1 == 1 || f == s {
            r = node(h, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node(&r, h);
        }
        f >>= 1;
        s >>= 1;
    }
    if s == 0 && r == p.root_hash {
        Ok(())
    } else {
        Err(bad())
    }
}

/// The checkpoint names the proof's tree size and root, and the log signed it.
fn checkpoint(p: &Proof, key: &super::PublicKey, log_id: &[u8]) -> Result<(), Error> {
    let bad = Error::Checkpoint;
    let Some((note, sigs)) = p.checkpoint.split_once("\n\n") else {
        return Err(bad("is not a signed note"));
    };
    let mut lines = note.lines();
    let (origin, size, root) = (lines.next(), lines.next(), lines.next());
    let b64 = base64::engine::general_purpose::STANDARD;
    if size.and_then(|s| s.parse::<u64>().ok()) != Some(p.tree_size)
        || root.and_then(|r| b64.decode(r).ok()).as_deref() != Some(&p.root_hash[..])
    {
        return Err(bad("is for another tree than the inclusion proof"));
    }
    let signed = format!("{note}\n");
    // C2SP signed note: `— <name> <base64(key hint || signature)>`. Only lines of the log
    // (named as the note's origin, with the log's key hint) count; witness cosignatures and
    // lines of other keys are ignored. A Rekor v1 origin is `<name> - <tree id>`.
    let of_log = |name: &str| {
        origin.is_some_and(|o| {
            o == name
                || o.strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix(" - "))
                    .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    let ok = sigs.lines().take(16).any(|line| {
        let Some(sig) = line
            .strip_prefix("\u{2014} ")
            .and_then(|l| l.rsplit_once(' '))
            .filter(|(name, _)| of_log(name))
            .and_then(|(_, s)| b64.decode(s).ok())
        else {
            return false;
        };
        // Four bytes of key hint (the start of the log id), then the signature.
        match (sig.split_at_checked(4), log_id.get(..4)) {
            (Some((hint, sig)), Some(id)) => hint == id && key.verifies(signed.as_bytes(), sig),
            _ => false,
        }
    });
    if ok {
        Ok(())
    } else {
        Err(bad("is not signed by the log's key"))
    }
}

#[derive(Deserialize)]
struct Body {
    kind: String,
    #[serde(default, rename = "apiVersion")]
    api_version: String,
    spec: serde_json::Value,
}

/// The entry body logs this very signature, of this payload, by this certificate.
fn body_matches(body: &[u8], signed: &Signed) -> Result<(), Error> {
    let b: Body = serde_json::from_slice(body).map_err(|e| Error::Body(e.to_string()))?;
    // Rekor v2 (0.0.2) bodies keep their fields under one key of the spec.
    let v2 = b
        .spec
        .get("hashedRekordV002")
        .or_else(|| b.spec.get("dsseV002"));
    let mismatch = match (signed, b.kind.as_str(), v2) {
        (_, "hashedrekord", Some(v2)) => hashed_v2_mismatch(v2, signed),
        (
            Signed::Hashed {
                payload,
                signature,
                certificate,
            },
            "hashedrekord",
            None,
        ) => hashed_mismatch(&b.spec, &sha256_hex(payload), signature, certificate),
        (
            Signed::Digest {
                digest,
                signature,
                certificate,
            },
            "hashedrekord",
            None,
        ) => hashed_mismatch(&b.spec, &hex(digest), signature, certificate),
        (
            Signed::Dsse {
                payload,
                signatures,
                certificate,
                ..
            },
            "dsse",
            Some(v2),
        ) => dsse_v2_mismatch(v2, payload, signatures, certificate),
        (
            Signed::Dsse {
                payload,
                signatures,
                certificate,
                ..
            },
            "dsse",
            None,
        ) => dsse_mismatch(&b.spec, payload, signatures, certificate),
        (
            Signed::Dsse {
                payload,
                signatures,
                certificate,
                ..
            },
            "intoto",
            None,
        ) if b.api_version == "0.0.2" => intoto_mismatch(&b.spec, payload, signatures, certificate),
        (_, kind, _) => return Err(Error::Kind(kind.to_string())),
    };
    match mismatch {
        Some(what) => Err(Error::Mismatch(what)),
        None => Ok(()),
    }
}

/// What a `hashedrekord` entry's `spec` logs other than `signed` (payload, signature,
/// certificate); `None` when it logs this very signature.
fn hashed_mismatch(
    spec: &serde_json::Value,
    digest_hex: &str,
    signature: &[u8],
    certificate: &[u8],
) -> Option<&'static str> {
    if text_at(spec, "/data/hash/value").as_deref() != Some(digest_hex) {
        return Some("payload");
    }
    if base64_at(spec, "/signature/content").as_deref() != Some(signature) {
        return Some("signature");
    }
    if certificate_of(base64_at(spec, "/signature/publicKey/content")).as_deref()
        != Some(certificate)
    {
        return Some("certificate");
    }
    None
}

/// What a `hashedrekord` 0.0.2 entry's `hashedRekordV002` logs other than `signed`: the
/// SHA-256 digest (of the payload, or of a DSSE envelope's pre-authentication encoding),
/// the signature (every signature of an envelope is that one), and the certificate (or
/// the public key, as DER). `None` when it logs this very signature.
fn hashed_v2_mismatch(spec: &serde_json::Value, signed: &Signed) -> Option<&'static str> {
    let (digest, signatures, certificate): (Vec<u8>, Vec<&[u8]>, &[u8]) = match signed {
        Signed::Hashed {
            payload,
            signature,
            certificate,
        } => (
            Sha256::digest(payload).to_vec(),
            vec![signature],
            certificate,
        ),
        Signed::Digest {
            digest,
            signature,
            certificate,
        } => (digest.to_vec(), vec![signature], certificate),
        Signed::Dsse {
            pae,
            signatures,
            certificate,
            ..
        } => (
            Sha256::digest(pae).to_vec(),
            signatures.iter().map(Vec::as_slice).collect(),
            certificate,
        ),
    };
    if text_at(spec, "/data/algorithm").as_deref() != Some("SHA2_256")
        || base64_at(spec, "/data/digest").as_deref() != Some(&digest[..])
    {
        return Some("payload");
    }
    let logged = base64_at(spec, "/signature/content");
    if signatures.is_empty() || signatures.iter().any(|s| logged.as_deref() != Some(*s)) {
        return Some("signature");
    }
    let verifier = base64_at(spec, "/signature/verifier/x509Certificate/rawBytes")
        .or_else(|| base64_at(spec, "/signature/verifier/publicKey/rawBytes"));
    (verifier.as_deref() != Some(certificate)).then_some("certificate")
}

/// What a `dsse` 0.0.2 entry's `dsseV002` logs other than `signed`: the SHA-256 of the
/// envelope's payload, and every signature of the envelope with the certificate (or the
/// public key, as DER). `None` when it logs them.
fn dsse_v2_mismatch(
    spec: &serde_json::Value,
    payload: &[u8],
    signatures: &[Vec<u8>],
    certificate: &[u8],
) -> Option<&'static str> {
    if text_at(spec, "/payloadHash/algorithm").as_deref() != Some("SHA2_256")
        || base64_at(spec, "/payloadHash/digest").as_deref() != Some(&Sha256::digest(payload)[..])
    {
        return Some("payload");
    }
    type Logged = (Option<Vec<u8>>, Option<Vec<u8>>);
    let logged: Vec<Logged> = spec
        .get("signatures")
        .and_then(|s| s.as_array())
        .into_iter()
        .flatten()
        .take(8)
        .map(|s| {
            let verifier = base64_at(s, "/verifier/x509Certificate/rawBytes")
                .or_else(|| base64_at(s, "/verifier/publicKey/rawBytes"));
            (base64_at(s, "/content"), verifier)
        })
        .collect();
    let all = !signatures.is_empty()
        && signatures.iter().all(|sig| {
            logged
                .iter()
                .any(|(s, c)| s.as_deref() == Some(sig) && c.as_deref() == Some(certificate))
        });
    (!all).then_some("signature or certificate")
}

/// What a `dsse` entry's `spec` logs other than `signed`: every signature of the envelope
/// must be logged with the certificate. `None` when it logs them.
fn dsse_mismatch(
    spec: &serde_json::Value,
    payload: &[u8],
    signatures: &[Vec<u8>],
    certificate: &[u8],
) -> Option<&'static str> {
    if text_at(spec, "/payloadHash/value") != Some(sha256_hex(payload)) {
        return Some("payload");
    }
    type Logged = (Option<Vec<u8>>, Option<Vec<u8>>);
    let logged: Vec<Logged> = spec
        .get("signatures")
        .and_then(|s| s.as_array())
        .into_iter()
        .flatten()
        .take(8)
        .map(|s| {
            (
                base64_at(s, "/signature"),
                certificate_of(base64_at(s, "/verifier")),
            )
        })
        .collect();
    let all = !signatures.is_empty()
        && signatures.iter().all(|sig| {
            logged
                .iter()
                .any(|(s, c)| s.as_deref() == Some(sig) && c.as_deref() == Some(certificate))
        });
    (!all).then_some("signature or certificate")
}

/// What an `intoto` 0.0.2 entry's `spec` logs other than `signed`: the payload's SHA-256
/// (and the payload, when logged), and every signature of the envelope with the
/// certificate. Rekor writes the envelope's payload and signatures base64 twice, its
/// verifier as a base64 PEM. The entry's `hash` is Rekor's SHA-256 of the envelope as Rekor
/// serialized it, which the payload hash and the signatures already bind; it is not
/// recomputed. `None` when it logs this very envelope.
fn intoto_mismatch(
    spec: &serde_json::Value,
    payload: &[u8],
    signatures: &[Vec<u8>],
    certificate: &[u8],
) -> Option<&'static str> {
    let Some(content) = spec.get("content") else {
        return Some("payload");
    };
    if text_at(content, "/payloadHash/algorithm").as_deref() != Some("sha256")
        || text_at(content, "/payloadHash/value") != Some(sha256_hex(payload))
    {
        return Some("payload");
    }
    let twice = |v: &serde_json::Value, at: &str| {
        let once = base64_at(v, at)?;
        let b64 = base64::engine::general_purpose::STANDARD;
        b64.decode(once.trim_ascii()).ok()
    };
    if content.pointer("/envelope/payload").is_some()
        && twice(content, "/envelope/payload").as_deref() != Some(payload)
    {
        return Some("payload");
    }
    type Logged = (Option<Vec<u8>>, Option<Vec<u8>>);
    let logged: Vec<Logged> = content
        .pointer("/envelope/signatures")
        .and_then(|s| s.as_array())
        .into_iter()
        .flatten()
        .take(8)
        .map(|s| (twice(s, "/sig"), certificate_of(base64_at(s, "/publicKey"))))
        .collect();
    let all = !signatures.is_empty()
        && signatures.iter().all(|sig| {
            logged
                .iter()
                .any(|(s, c)| s.as_deref() == Some(sig) && c.as_deref() == Some(certificate))
        });
    (!all).then_some("signature or certificate")
}

/// The string at JSON pointer `at`.
fn text_at(v: &serde_json::Value, at: &str) -> Option<String> {
    v.pointer(at).and_then(|v| v.as_str()).map(str::to_string)
}

/// The bytes of the base64 string at JSON pointer `at`.
fn base64_at(v: &serde_json::Value, at: &str) -> Option<Vec<u8>> {
    let b64 = base64::engine::general_purpose::STANDARD;
    text_at(v, at).and_then(|s| b64.decode(s.trim()).ok())
}

/// The DER of the first certificate in `pem`.
/// The DER of the PEM certificate an entry logs, or of its PEM public key (a key-signed
/// entry logs the SubjectPublicKeyInfo).
fn certificate_of(pem: Option<Vec<u8>>) -> Option<Vec<u8>> {
    let pem = pem?;
    if let Ok(("PUBLIC KEY", der)) = pem_rfc7468::decode_vec(&pem) {
        return Some(der);
    }
    let pem = String::from_utf8(pem).ok()?;
    super::fulcio::pem_certificates(&pem)
        .ok()
        .and_then(|c| c.into_iter().next())
        .or_else(|| long_line_pem(&pem))
}

/// The DER of a PEM certificate whose base64 is not cut in 64-character lines (some Rekor
/// bodies hold it on one line, which Go's PEM reader accepts and RFC 7468's strict form
/// does not).
fn long_line_pem(pem: &str) -> Option<Vec<u8>> {
    let body = pem
        .trim()
        .strip_prefix("-----BEGIN CERTIFICATE-----")?
        .strip_suffix("-----END CERTIFICATE-----")?;
    let b64: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD.decode(b64).ok()
}

fn sha256_hex(d: &[u8]) -> String {
    format!("{:x}", Sha256::digest(d))
}

/// Lowercase hex of `d`.
fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// The legacy layout's `dev.sigstore.cosign/bundle` annotation.
pub fn from_annotation(json: &str) -> Result<Entry, Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Legacy {
        signed_entry_timestamp: String,
        payload: LegacyPayload,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct LegacyPayload {
        body: String,
        integrated_time: i64,
        log_index: i64,
        #[serde(rename = "logID")]
        log_id: String,
    }
    let unreadable =
        |what: &str, e: &dyn std::fmt::Display| Error::Unreadable(format!("{what}: {e}"));
    let l: Legacy =
        serde_json::from_str(json).map_err(|e| unreadable("the cosign bundle annotation", &e))?;
    let b64 = base64::engine::general_purpose::STANDARD;
    Ok(Entry {
        body: b64
            .decode(l.payload.body.trim())
            .map_err(|e| unreadable("the log entry body", &e))?,
        integrated_time: l.payload.integrated_time,
        log_index: l.payload.log_index,
        log_id: unhex(&l.payload.log_id)
            .ok_or_else(|| Error::Unreadable("the log id is not hex".into()))?,
        set: Some(
            b64.decode(l.signed_entry_timestamp.trim())
                .map_err(|e| unreadable("the signed entry timestamp", &e))?,
        ),
        proof: None,
    })
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || s.len() > 128 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i.saturating_add(2))?, 16).ok())
        .collect()
}

/// A bundle v0.3 `tlogEntries` item.
pub fn from_bundle(v: &serde_json::Value) -> Result<Entry, Error> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let text = |at: &str| v.pointer(at).and_then(|x| x.as_str());
    let missing = |at: &str| Error::Unreadable(format!("tlog entry: no {at}"));
    let int = |at: &str| -> Result<i64, Error> {
        text(at)
            .and_then(|s| s.parse().ok())
            .or_else(|| v.pointer(at).and_then(|x| x.as_i64()))
            .ok_or_else(|| missing(at))
    };
    let bytes = |at: &str| -> Result<Vec<u8>, Error> {
        b64.decode(text(at).ok_or_else(|| missing(at))?)
            .map_err(|e| Error::Unreadable(format!("tlog entry {at}: {e}")))
    };
    let set = match text("/inclusionPromise/signedEntryTimestamp") {
        Some(_) => Some(bytes("/inclusionPromise/signedEntryTimestamp")?),
        None => None,
    };
    let proof = match v.get("inclusionProof") {
        None | Some(serde_json::Value::Null) => None,
        Some(_) => {
            let hashes = v
                .pointer("/inclusionProof/hashes")
                .and_then(|h| h.as_array())
                .into_iter()
                .flatten()
                .take(MAX_PATH + 1)
                .map(|h| {
                    h.as_str().and_then(|h| b64.decode(h).ok()).ok_or_else(|| {
                        Error::Unreadable(
                            "tlog entry: an inclusion proof hash is not base64".into(),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let unsigned = |at: &str| {
                int(at).and_then(|i| {
                    u64::try_from(i)
                        .map_err(|_| Error::Unreadable(format!("tlog entry: a negative {at}")))
                })
            };
            Some(Proof {
                log_index: unsigned("/inclusionProof/logIndex")?,
                tree_size: unsigned("/inclusionProof/treeSize")?,
                root_hash: bytes("/inclusionProof/rootHash")?,
                hashes,
                checkpoint: text("/inclusionProof/checkpoint/envelope")
                    .unwrap_or_default()
                    .to_string(),
            })
        }
    };
    Ok(Entry {
        body: bytes("/canonicalizedBody")?,
        // Rekor v2 entries have none (their time is a timestamp authority's).
        integrated_time: match v.get("integratedTime") {
            None | Some(serde_json::Value::Null) => 0,
            Some(_) => int("/integratedTime")?,
        },
        log_index: int("/logIndex")?,
        log_id: bytes("/logId/keyId")?,
        set,
        proof,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real entry of rekor.sigstore.dev (from sigstore-python's test assets: a wheel
    /// signed in GitHub Actions), checked offline against the public-good root: its SET, its
    /// inclusion proof of 75 million leaves and its checkpoint; any changed byte fails.
    #[test]
    fn a_real_public_good_entry_verifies_offline() {
        let bundle: serde_json::Value = serde_json::from_str(include_str!(
            "testdata/public-good-github-actions.sigstore.json"
        ))
        .unwrap();
        let entry = from_bundle(&bundle["verificationMaterial"]["tlogEntries"][0]).unwrap();
        let root = TrustedRoot::public_good().unwrap();
        assert_eq!(logged(&entry, &root, &[]), Ok(Some(1_710_888_076)));
        assert_eq!(entry.proof.as_ref().unwrap().tree_size, 75_441_653);

        let mut bad = entry.clone();
        bad.integrated_time += 1;
        assert_eq!(logged(&bad, &root, &[]), Err(Error::TimestampRefused));
        let mut bad = entry.clone();
        bad.proof.as_mut().unwrap().hashes[3][0] ^= 1;
        assert_eq!(logged(&bad, &root, &[]), Err(Error::Inclusion));
        let mut bad = entry.clone();
        let p = bad.proof.as_mut().unwrap();
        p.checkpoint = p
            .checkpoint
            .replace("rekor.sigstore.dev - ", "rekor.example - ");
        let refused = logged(&bad, &root, &[]).unwrap_err();
        assert_eq!(refused, Error::Checkpoint("is not signed by the log's key"));
        assert_eq!(
            refused.to_string(),
            "the transparency log entry's checkpoint is not signed by the log's key"
        );
        let mut bad = entry;
        bad.log_id[0] ^= 1;
        let unknown = logged(&bad, &root, &[]).unwrap_err();
        assert!(matches!(unknown, Error::UnknownLog { .. }), "{unknown:?}");
        assert!(unknown.to_string().contains("does not list"), "{unknown}");
        assert!(unknown.hint().unwrap().contains("verify.trustedRoot"));
    }

    const REKOR2: &str = include_str!(
        "../../tests/conformance/bundle-verify/rekor2-happy-path/bundle.sigstore.json"
    );
    const REKOR2_ROOT: &str =
        include_str!("../../tests/conformance/bundle-verify/rekor2-happy-path/trusted_root.json");

    /// A real Rekor v2 entry (sigstage's log2025-alpha1, Ed25519), its bundle and root.
    fn rekor2() -> (Entry, serde_json::Value, TrustedRoot) {
        let bundle: serde_json::Value = serde_json::from_str(REKOR2).unwrap();
        let entry = from_bundle(&bundle["verificationMaterial"]["tlogEntries"][0]).unwrap();
        let root = TrustedRoot::from_json("staging", REKOR2_ROOT.as_bytes()).unwrap();
        (entry, bundle, root)
    }

    /// Its time is only the timestamps': without a SET, the proof and checkpoint are
    /// required, the log's key must be valid at every timestamp, and one is required.
    #[test]
    fn a_rekor_v2_entry_has_no_time_of_its_own() {
        let (entry, bundle, root) = rekor2();
        assert_eq!((entry.integrated_time, entry.set.is_none()), (0, true));
        let stamped = 1_749_729_740;
        assert_eq!(logged(&entry, &root, &[stamped]), Ok(None));
        // Before the log's key was valid (2025-04-16).
        assert_eq!(
            logged(&entry, &root, &[stamped, 1_744_000_000]),
            Err(Error::KeyNotValid)
        );
        let mut unproven = entry.clone();
        unproven.proof = None;
        assert_eq!(
            logged(&unproven, &root, &[stamped]),
            Err(Error::NoTimestamp)
        );

        let b64 = base64::engine::general_purpose::STANDARD;
        let cert = b64
            .decode(
                bundle["verificationMaterial"]["certificate"]["rawBytes"]
                    .as_str()
                    .unwrap(),
            )
            .unwrap();
        let sig = b64
            .decode(bundle["messageSignature"]["signature"].as_str().unwrap())
            .unwrap();
        let digest = b64
            .decode(
                bundle["messageSignature"]["messageDigest"]["digest"]
                    .as_str()
                    .unwrap(),
            )
            .unwrap();
        let signed = |digest: &[u8], signature: &[u8], certificate: &[u8]| {
            let s = Signed::Digest {
                digest,
                signature,
                certificate,
            };
            verify(&entry, &root, &s, &[stamped])
        };
        assert_eq!(signed(&digest, &sig, &cert), Ok(None));
        let s = Signed::Digest {
            digest: &digest,
            signature: &sig,
            certificate: &cert,
        };
        assert_eq!(verify(&entry, &root, &s, &[]), Err(Error::NoTime));
        assert_eq!(
            signed(&[0; 32], &sig, &cert),
            Err(Error::Mismatch("payload"))
        );
        assert_eq!(
            signed(&digest, &sig[1..], &cert),
            Err(Error::Mismatch("signature"))
        );
        assert_eq!(
            signed(&digest, &sig, &cert[1..]),
            Err(Error::Mismatch("certificate"))
        );
    }

    /// A Rekor v2 `dsse` 0.0.2 body logs the payload's SHA-256 and every signature with
    /// its certificate.
    #[test]
    fn a_dsse_v2_body_logs_the_envelope() {
        let b64 = base64::engine::general_purpose::STANDARD;
        let body = |digest: &[u8], sig: &[u8], cert: &[u8]| {
            serde_json::json!({
                "apiVersion": "0.0.2",
                "kind": "dsse",
                "spec": {"dsseV002": {
                    "payloadHash": {"algorithm": "SHA2_256", "digest": b64.encode(digest)},
                    "signatures": [{
                        "content": b64.encode(sig),
                        "verifier": {"x509Certificate": {"rawBytes": b64.encode(cert)}},
                    }],
                }},
            })
            .to_string()
            .into_bytes()
        };
        let payload = b"{}";
        let sigs = vec![b"sig".to_vec()];
        let signed = Signed::Dsse {
            payload,
            pae: b"",
            signatures: &sigs,
            certificate: b"cert",
        };
        let digest = Sha256::digest(payload);
        assert_eq!(
            body_matches(&body(&digest, b"sig", b"cert"), &signed),
            Ok(())
        );
        assert_eq!(
            body_matches(&body(&[0; 32], b"sig", b"cert"), &signed),
            Err(Error::Mismatch("payload"))
        );
        for (sig, cert) in [(&b"other"[..], &b"cert"[..]), (b"sig", b"other")] {
            assert_eq!(
                body_matches(&body(&digest, sig, cert), &signed),
                Err(Error::Mismatch("signature or certificate"))
            );
        }
    }

    /// C2SP signed notes: the log's line counts wherever it is; witness lines and lines of
    /// another name or key hint do not.
    #[test]
    fn checkpoint_lines_are_the_logs_own() {
        let (entry, _, root) = rekor2();
        let log = root.log(&entry.log_id).unwrap();
        let proof = entry.proof.clone().unwrap();
        let (note, sigs) = proof.checkpoint.split_once("\n\n").unwrap();
        let with = |sigs: &str| {
            let mut p = proof.clone();
            p.checkpoint = format!("{note}\n\n{sigs}");
            checkpoint(&p, &log.key, &entry.log_id)
        };
        let witness = "\u{2014} witness.example O8PH5AAAAABopO8+4O9uzScQrNEnGdKLYXSPoUjH1Se4n92W+wT/j5Kel/4J2XWE4bEe9bpIVUD6EGOeUDFkSWz/rbDhvVcJ/2OrDw==\n";
        assert_eq!(with(sigs), Ok(()));
        assert_eq!(with(&format!("{witness}{sigs}")), Ok(()));
        assert_eq!(with(&format!("{sigs}{witness}")), Ok(()));
        let refused = Err(Error::Checkpoint("is not signed by the log's key"));
        assert_eq!(with(witness), refused);
        assert_eq!(with(""), refused);
        // The log's signature under another name.
        let renamed = sigs.replace(
            "log2025-alpha1.rekor.sigstage.dev ",
            "log2025-alpha1.rekor.example ",
        );
        assert_eq!(with(&renamed), refused);
        // (A Rekor v1 origin, `<name> - <tree id>`, is the public-good entry's above.)
    }

    fn leaf(d: &[u8]) -> Vec<u8> {
        let mut h = Sha256::new();
        h.update([0u8]);
        h.update(d);
        h.finalize().to_vec()
    }

    /// Every leaf of trees of 1 to 9 leaves, proven against the root built level by level
    /// (the RFC 6962 tree: the left subtree is the largest power of two below the size).
    #[test]
    fn inclusion_proofs_follow_rfc_6962() {
        fn root(leaves: &[Vec<u8>]) -> Vec<u8> {
            if leaves.len() == 1 {
                return leaves[0].clone();
            }
            let k = leaves.len().next_power_of_two() / 2;
            node(&root(&leaves[..k]), &root(&leaves[k..]))
        }
        fn path(leaves: &[Vec<u8>], i: usize) -> Vec<Vec<u8>> {
            if leaves.len() == 1 {
                return Vec::new();
            }
            let k = leaves.len().next_power_of_two() / 2;
            if i < k {
                let mut p = path(&leaves[..k], i);
                p.push(root(&leaves[k..]));
                p
            } else {
                let mut p = path(&leaves[k..], i - k);
                p.push(root(&leaves[..k]));
                p
            }
        }
        for n in 1..10u64 {
            let bodies: Vec<Vec<u8>> = (0..n).map(|i| format!("entry {i}").into_bytes()).collect();
            let leaves: Vec<Vec<u8>> = bodies.iter().map(|b| leaf(b)).collect();
            let r = root(&leaves);
            for i in 0..n {
                let mut p = Proof {
                    log_index: i,
                    tree_size: n,
                    root_hash: r.clone(),
                    hashes: path(&leaves, i as usize),
                    checkpoint: String::new(),
                };
                assert_eq!(inclusion(&bodies[i as usize], &p), Ok(()), "{i} of {n}");
                assert!(inclusion(b"another entry", &p).is_err());
                p.log_index = n;
                assert!(inclusion(&bodies[i as usize], &p).is_err());
            }
        }
    }

    #[test]
    fn the_set_signs_sorted_compact_json() {
        let e = Entry {
            body: b"{}".to_vec(),
            integrated_time: 1_700_000_000,
            log_index: 7,
            log_id: vec![0xab, 0x01],
            set: None,
            proof: None,
        };
        assert_eq!(
            String::from_utf8(set_payload(&e)).unwrap(),
            r#"{"body":"e30=","integratedTime":1700000000,"logID":"ab01","logIndex":7}"#
        );
        assert_eq!(unhex("ab01"), Some(vec![0xab, 1]));
        assert_eq!(unhex("abc"), None);
    }

    /// A real `intoto` 0.0.2 body (sigstore-conformance's intoto-with-custom-trust-root):
    /// the envelope's payload and signature match, base64 twice as Rekor writes them, with a
    /// PEM certificate on one line; another payload, signature, certificate or API version
    /// does not.
    #[test]
    fn intoto_0_0_2_bodies_log_the_envelope() {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let bundle: serde_json::Value = serde_json::from_str(include_str!(
            "../../tests/conformance/bundle-verify/intoto-with-custom-trust-root/bundle.sigstore.json"
        ))
        .unwrap();
        let body = b64
            .decode(
                bundle["verificationMaterial"]["tlogEntries"][0]["canonicalizedBody"]
                    .as_str()
                    .unwrap(),
            )
            .unwrap();
        let envelope = &bundle["dsseEnvelope"];
        let payload = b64.decode(envelope["payload"].as_str().unwrap()).unwrap();
        let sig = b64
            .decode(envelope["signatures"][0]["sig"].as_str().unwrap())
            .unwrap();
        let cert = b64
            .decode(
                bundle["verificationMaterial"]["x509CertificateChain"]["certificates"][0]
                    ["rawBytes"]
                    .as_str()
                    .unwrap(),
            )
            .unwrap();
        let signed = |payload: &[u8], sig: &[u8], cert: &[u8]| {
            body_matches(
                &body,
                &Signed::Dsse {
                    payload,
                    pae: &[],
                    signatures: &[sig.to_vec()],
                    certificate: cert,
                },
            )
        };
        assert_eq!(signed(&payload, &sig, &cert), Ok(()));
        assert_eq!(signed(b"{}", &sig, &cert), Err(Error::Mismatch("payload")));
        let mut other = sig.clone();
        other[10] ^= 1;
        let e = signed(&payload, &other, &cert).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the transparency log entry is for another signature or certificate"
        );
        assert!(signed(&payload, &sig, &cert[1..]).is_err());
        // An entry that logs no content logs nothing this envelope could match.
        let empty = br#"{"kind":"intoto","apiVersion":"0.0.2","spec":{}}"#;
        let dsse = Signed::Dsse {
            payload: &payload,
            pae: &[],
            signatures: std::slice::from_ref(&sig),
            certificate: &cert,
        };
        assert_eq!(body_matches(empty, &dsse), Err(Error::Mismatch("payload")));
        let v1 = String::from_utf8(body.clone())
            .unwrap()
            .replace("\"0.0.2\"", "\"0.0.1\"");
        assert_eq!(
            body_matches(
                v1.as_bytes(),
                &Signed::Dsse {
                    payload: &payload,
                    pae: &[],
                    signatures: std::slice::from_ref(&sig),
                    certificate: &cert
                }
            ),
            Err(Error::Kind("intoto".into()))
        );
    }
}
