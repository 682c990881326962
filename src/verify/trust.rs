//! The Sigstore trusted root (`trusted_root.json`, media type
//! `application/vnd.dev.sigstore.trustedroot+json;version=0.1`): the Fulcio certificate
//! authorities keyless certificates must chain to, and the Rekor logs whose keys sign
//! their entries. Read from the operator's file, or the public-good root built in.

use base64::Engine as _;
use serde::Deserialize;

use super::PublicKey;

/// The Sigstore public-good trusted root, as its TUF repository served it (see
/// docs/security.md, "Keyless"): the default when `verify.trustedRoot` is not set.
const PUBLIC_GOOD: &str = include_str!("public_good_trusted_root.json");

/// Media types of the trusted root this reads.
const MEDIA_TYPE: &str = "application/vnd.dev.sigstore.trustedroot+json;version=0.1";

/// What keyless verification trusts.
#[derive(Debug)]
pub struct TrustedRoot {
    /// `public-good` or the file's name, for messages.
    pub name: String,
    pub authorities: Vec<Authority>,
    pub logs: Vec<Log>,
    /// The certificate transparency logs whose SCTs keyless certificates carry (sct.rs).
    pub ctlogs: Vec<Log>,
    /// RFC 3161 timestamp authorities (tsa.rs): each chain starts with the TSA's signing
    /// certificate.
    pub timestamp_authorities: Vec<Authority>,
}

/// A Fulcio CA: its chain (issuing certificate first, the root last), valid for a window.
#[derive(Debug)]
pub struct Authority {
    pub chain: Vec<Vec<u8>>,
    pub valid: Window,
}

/// A Rekor log: its key and id (the SHA-256 of the key's DER), valid for a window.
#[derive(Debug)]
pub struct Log {
    pub key: PublicKey,
    pub id: Vec<u8>,
    pub valid: Window,
}

/// `[start, end]` in Unix seconds; an open end is `i64::MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: i64,
    pub end: i64,
}

impl Window {
    pub fn contains(&self, t: i64) -> bool {
        self.start <= t && t <= self.end
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRoot {
    media_type: String,
    #[serde(default)]
    tlogs: Vec<RawLog>,
    #[serde(default)]
    certificate_authorities: Vec<RawAuthority>,
    #[serde(default)]
    ctlogs: Vec<RawLog>,
    #[serde(default)]
    timestamp_authorities: Vec<RawAuthority>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawLog {
    public_key: RawKey,
    log_id: RawLogId,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawKey {
    raw_bytes: String,
    #[serde(default)]
    valid_for: Option<RawWindow>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawLogId {
    key_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawAuthority {
    cert_chain: RawChain,
    #[serde(default)]
    valid_for: Option<RawWindow>,
}

#[derive(Deserialize)]
struct RawChain {
    certificates: Vec<RawCert>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawCert {
    raw_bytes: String,
}

#[derive(Deserialize)]
struct RawWindow {
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    end: Option<String>,
}

/// Why a file is not a trusted root keyless signatures can be checked against.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RootError {
    #[error("not a Sigstore trusted root (trusted_root.json): {0}")]
    NotJson(String),
    #[error("a trusted root of media type {0:?}, not {MEDIA_TYPE:?}")]
    MediaType(String),
    #[error("{at}: not base64: {reason}")]
    Base64 { at: String, reason: String },
    #[error("{at}: {key}")]
    Key {
        at: String,
        key: super::keys::KeyError,
    },
    /// A `validFor` whose start or end is not a timestamp.
    #[error("{at}: {value:?}: {reason}")]
    Window {
        at: String,
        value: String,
        reason: String,
    },
    #[error("{0}: a validity period without a start")]
    NoStart(String),
    /// `certificateAuthorities[i]` or `timestampAuthorities[i]`.
    #[error("{0}: no certificates")]
    EmptyChain(String),
    #[error("keyless verification needs certificateAuthorities and tlogs")]
    Incomplete,
}

impl RootError {
    /// Where a trusted root comes from.
    pub fn hint(&self) -> Option<String> {
        Some(
            "give the trusted_root.json of the Sigstore instance (`cosign trusted-root create`, \
             or the one its TUF repository publishes), or leave trustedRoot out for the \
             public-good instance"
                .into(),
        )
    }
}

impl TrustedRoot {
    /// The public-good root built into imagebump.
    pub fn public_good() -> Result<TrustedRoot, RootError> {
        Self::from_json("public-good", PUBLIC_GOOD.as_bytes())
    }

    /// Read a `trusted_root.json`; `name` names it in messages.
    pub fn from_json(name: &str, json: &[u8]) -> Result<TrustedRoot, RootError> {
        let raw: RawRoot =
            serde_json::from_slice(json).map_err(|e| RootError::NotJson(e.to_string()))?;
        if raw.media_type != MEDIA_TYPE {
            return Err(RootError::MediaType(raw.media_type));
        }
        let logs = read_logs(&raw.tlogs, "tlogs").collect::<Result<Vec<_>, _>>()?;
        // A CT log key imagebump cannot read (the staging root lists a PKCS#1 RSA key) is
        // left out: no SCT verifies with it, so its SCTs count as from an unknown log.
        let ctlogs = read_logs(&raw.ctlogs, "ctlogs").flatten().collect();
        let authorities = chains(&raw.certificate_authorities, "certificateAuthorities")?;
        let timestamp_authorities = chains(&raw.timestamp_authorities, "timestampAuthorities")?;
        if authorities.is_empty() || logs.is_empty() {
            return Err(RootError::Incomplete);
        }
        Ok(TrustedRoot {
            name: name.to_string(),
            authorities,
            logs,
            ctlogs,
            timestamp_authorities,
        })
    }

    /// The log whose id is `id`.
    pub fn log(&self, id: &[u8]) -> Option<&Log> {
        self.logs.iter().find(|l| l.id == id)
    }
}

/// The logs of `field` (`tlogs` or `ctlogs`): each key, its id and its window, or why not.
fn read_logs<'a>(
    raw: &'a [RawLog],
    field: &'a str,
) -> impl Iterator<Item = Result<Log, RootError>> + 'a {
    let b64 = base64::engine::general_purpose::STANDARD;
    let decode = move |at: String, s: &str| {
        b64.decode(s.trim()).map_err(|e| RootError::Base64 {
            at,
            reason: e.to_string(),
        })
    };
    raw.iter().enumerate().map(move |(i, l)| {
        let at = format!("{field}[{i}].publicKey");
        let der = decode(at.clone(), &l.public_key.raw_bytes)?;
        let key =
            PublicKey::from_der(&format!("{field}[{i}]"), &der).map_err(|key| RootError::Key {
                at: at.clone(),
                key,
            })?;
        Ok(Log {
            key,
            id: decode(format!("{field}[{i}].logId"), &l.log_id.key_id)?,
            valid: window(l.public_key.valid_for.as_ref(), || format!("{at}.validFor"))?,
        })
    })
}

/// The certificate chains of `raw`, named `what` (`certificateAuthorities`) in errors.
fn chains(raw: &[RawAuthority], what: &str) -> Result<Vec<Authority>, RootError> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut out = Vec::new();
    for (i, a) in raw.iter().enumerate() {
        let at = || format!("{what}[{i}]");
        let chain = a
            .cert_chain
            .certificates
            .iter()
            .map(|c| {
                b64.decode(c.raw_bytes.trim())
                    .map_err(|e| RootError::Base64 {
                        at: at(),
                        reason: e.to_string(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if chain.is_empty() {
            return Err(RootError::EmptyChain(at()));
        }
        out.push(Authority {
            chain,
            valid: window(a.valid_for.as_ref(), || format!("{}.validFor", at()))?,
        });
    }
    Ok(out)
}

/// The window `raw` gives: none is open at both ends, one without an end is open at its
/// end, and one without a start is refused (a key or CA valid since the beginning of time
/// is a malformed root, as the Sigstore clients read it). `at` names it in errors.
fn window(raw: Option<&RawWindow>, at: impl Fn() -> String) -> Result<Window, RootError> {
    if raw.is_some_and(|r| r.start.is_none()) {
        return Err(RootError::NoStart(at()));
    }
    let at = |s: &Option<String>, default: i64| match s {
        None => Ok(default),
        Some(s) => s
            .parse::<jiff::Timestamp>()
            .map(|t| t.as_second())
            .map_err(|e| RootError::Window {
                at: at(),
                value: s.clone(),
                reason: e.to_string(),
            }),
    };
    Ok(Window {
        start: at(&raw.and_then(|r| r.start.clone()), i64::MIN)?,
        end: at(&raw.and_then(|r| r.end.clone()), i64::MAX)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_public_good_root() {
        let root = TrustedRoot::public_good().unwrap();
        assert_eq!(root.authorities.len(), 2);
        assert_eq!(root.authorities[1].chain.len(), 2);
        // The first CA retired at the end of 2022; the current one is open-ended.
        assert_eq!(root.authorities[0].valid.end, 1_672_531_199);
        assert_eq!(root.authorities[1].valid.end, i64::MAX);
        // The public-good TSA, since 2025-07-04: its signing certificate, then its root.
        assert_eq!(root.timestamp_authorities.len(), 1);
        assert_eq!(root.timestamp_authorities[0].chain.len(), 2);
        assert_eq!(root.timestamp_authorities[0].valid.start, 1_751_587_200);
        // rekor.sigstore.dev, and the first Rekor v2 shard (Ed25519).
        assert_eq!(root.logs.len(), 2);
        assert_eq!(root.logs[0].key.kind, "ecdsa-p256");
        assert_eq!(root.logs[1].key.kind, "ed25519");
        // rekor.sigstore.dev's log id is the SHA-256 of its key.
        use sha2::Digest as _;
        assert_eq!(
            sha2::Sha256::digest(root.logs[0].key.fingerprint_source()).to_vec(),
            root.logs[0].id
        );
        // ctfe.sigstore.dev's 2021 test log (retired in 2022) and its 2022 log, open-ended.
        assert_eq!(root.ctlogs.len(), 2);
        assert_eq!(root.ctlogs[0].valid.end, 1_667_260_799);
        assert_eq!(root.ctlogs[1].valid.end, i64::MAX);
        for log in &root.ctlogs {
            assert_eq!(
                sha2::Sha256::digest(log.key.fingerprint_source()).to_vec(),
                log.id
            );
        }
    }

    /// A CT log key that is not a SubjectPublicKeyInfo (the staging root's PKCS#1 RSA key,
    /// here from a sigstore-conformance case) is left out; the others are read.
    #[test]
    fn an_unreadable_ct_log_key_is_left_out() {
        let root = TrustedRoot::from_json(
            "t",
            include_bytes!(
                "../../tests/conformance/bundle-verify/rekor2-happy-path/trusted_root.json"
            ),
        )
        .unwrap();
        assert_eq!(root.ctlogs.len(), 2);
        assert!(root.ctlogs.iter().all(|l| l.key.kind == "ecdsa-p256"));
    }

    #[test]
    fn refuses_what_is_not_a_trusted_root() {
        let e = TrustedRoot::from_json("t", b"{}").unwrap_err();
        assert!(matches!(e, RootError::NotJson(_)), "{e:?}");
        assert!(
            e.to_string().starts_with("not a Sigstore trusted root"),
            "{e}"
        );
        let e = TrustedRoot::from_json("t", br#"{"mediaType":"x"}"#).unwrap_err();
        assert!(e.to_string().contains("media type \"x\""), "{e}");
        let empty = format!(r#"{{"mediaType":"{MEDIA_TYPE}"}}"#);
        let e = TrustedRoot::from_json("t", empty.as_bytes()).unwrap_err();
        assert_eq!(e, RootError::Incomplete);
        assert_eq!(
            e.to_string(),
            "keyless verification needs certificateAuthorities and tlogs"
        );
    }

    #[test]
    fn a_timestamp_authority_needs_certificates_and_a_start() {
        let mut root: serde_json::Value = serde_json::from_str(PUBLIC_GOOD).unwrap();
        root["timestampAuthorities"][0]["certChain"]["certificates"] = serde_json::json!([]);
        let e = TrustedRoot::from_json("t", &serde_json::to_vec(&root).unwrap()).unwrap_err();
        assert_eq!(e.to_string(), "timestampAuthorities[0]: no certificates");
        let mut root: serde_json::Value = serde_json::from_str(PUBLIC_GOOD).unwrap();
        root["timestampAuthorities"][0]["validFor"] =
            serde_json::json!({"end": "2030-01-01T00:00:00Z"});
        let e = TrustedRoot::from_json("t", &serde_json::to_vec(&root).unwrap()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "timestampAuthorities[0].validFor: a validity period without a start"
        );
    }

    #[test]
    fn a_validity_period_needs_its_start() {
        let root: serde_json::Value = serde_json::from_str(PUBLIC_GOOD).unwrap();
        let mut root = root;
        root["tlogs"][0]["publicKey"]["validFor"] = serde_json::json!({});
        let json = serde_json::to_vec(&root).unwrap();
        let e = TrustedRoot::from_json("t", &json).unwrap_err();
        assert_eq!(e, RootError::NoStart("tlogs[0].publicKey.validFor".into()));
        assert_eq!(
            e.to_string(),
            "tlogs[0].publicKey.validFor: a validity period without a start"
        );
        // Without a validFor at all, the key is valid at any time.
        root["tlogs"][0]["publicKey"]
            .as_object_mut()
            .unwrap()
            .remove("validFor");
        let json = serde_json::to_vec(&root).unwrap();
        let root = TrustedRoot::from_json("t", &json).unwrap();
        assert_eq!(root.logs[0].valid.start, i64::MIN);
    }
}
