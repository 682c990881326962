//! `verify`: is a candidate image signed by a key the operator trusts? Signatures are
//! fetched here, through imagebump's own registry client, from the three places cosign
//! keeps them (the OCI 1.1 referrers API, its `sha256-<hex>` fallback tag, the legacy
//! `sha256-<hex>.sig` tag); the payload must name the candidate's exact digest. A registry
//! error while fetching is an error, never "unsigned": the caller proposes nothing (fail
//! closed). With `verify.attestations`, a candidate whose signature verifies must also
//! pass the attestation gates (attest.rs finds and verifies attestations, gates.rs judges
//! them). docs/tag-selection.md ("Signed images", "Attestation gates") and
//! docs/security.md.

pub mod attest;
pub mod bundle;
pub mod config;
pub mod cosign;
pub mod fulcio;
pub mod gates;
pub mod keyless;
pub mod keys;
pub mod rekor;
pub mod sct;
pub mod trust;
pub mod tsa;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use sha2::Digest as _;

use crate::registry::client::Client;
use crate::registry::Error as RegistryError;
use imagebump_model::verify::VerifySpec;
pub use keys::PublicKey;
use trust::TrustedRoot;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("verify key {path}: {reason}")]
    Key { path: String, reason: LoadError },
    #[error("verify trustedRoot {path}: {reason}")]
    TrustedRoot { path: String, reason: LoadError },
    #[error("signature verification is required (argocd-image-updater imagesVerification), but the operator's configuration names no verify.keys or verify.identities for this image; add an images rule with verify (docs/tag-selection.md, Signed images)")]
    NoKeys,
    #[error("signatures of {digest}: {source}")]
    Registry {
        digest: String,
        #[source]
        source: RegistryError,
    },
}

/// Why a key or trusted-root file cannot be used; cloneable, as a run keeps it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Read(#[from] crate::registry::ReadError),
    #[error(transparent)]
    Key(#[from] keys::KeyError),
    #[error(transparent)]
    Root(#[from] trust::RootError),
}

/// Why the `tags` command's verify flags name no verification.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    #[error("{0:?}: expected ISSUER=SUBJECT_REGEXP")]
    NotPair(String),
    #[error("{flag:?}: {problem}")]
    Identity { flag: String, problem: String },
    #[error("--verify-trusted-root is for keyless identities: add --verify-identity")]
    RootWithoutIdentity,
}

/// The `verify` settings from `imagebump tags --verify-key`, `--verify-identity
/// ISSUER=SUBJECT_REGEXP` and `--verify-trusted-root`.
pub fn flag_keys(
    keys: &[std::path::PathBuf],
    identities: &[String],
    trusted_root: Option<&Path>,
) -> Result<Option<VerifySpec>, FlagError> {
    let identities = identities
        .iter()
        .map(|flag| {
            let (issuer, subject) = flag
                .split_once('=')
                .ok_or_else(|| FlagError::NotPair(flag.clone()))?;
            let id = imagebump_model::verify::Identity {
                issuer: Some(issuer.to_string()),
                subject_reg_exp: Some(subject.to_string()),
                ..Default::default()
            };
            match id.problem() {
                Some(problem) => Err(FlagError::Identity {
                    flag: flag.clone(),
                    problem,
                }),
                None => Ok(id),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    if trusted_root.is_some() && identities.is_empty() {
        return Err(FlagError::RootWithoutIdentity);
    }
    let spec = VerifySpec {
        keys: keys.iter().map(|k| k.display().to_string()).collect(),
        identities,
        trusted_root: trusted_root.map(|p| p.display().to_string()),
        attestations: None,
    };
    Ok((!spec.is_empty()).then_some(spec))
}

/// Who signed a verified image, and where the signature was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signer {
    /// `key cosign.pub (ecdsa-p256 sha256:1a2b…)`: the key's file name, kind and the start
    /// of the SHA-256 of its DER form (a report never carries the operator's paths).
    pub signer: String,
    /// `referrers`, `referrers tag` or `sig tag`.
    pub layout: &'static str,
    /// The attestation gates passed (`provenance: builder …, signed by …`); empty without
    /// `verify.attestations`.
    pub gates: Vec<String>,
}

/// What a report and a pull request say about a verified update.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Verified {
    /// The digest whose signature verified (the one written when the reference carries a
    /// digest).
    pub digest: String,
    /// The key that signed it (`key cosign.pub (ecdsa-p256 sha256:…)`) and where the
    /// signature was (`sig tag`, `referrers`, `referrers tag`).
    pub signer: String,
    /// The attestation gates it passed, each with what the attestation said and who signed
    /// it (`provenance: builder …, source …, ref …, signed by …`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<String>,
}

/// A candidate's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Verified(Signer),
    /// Unsigned, signed by another key, or signed for another digest: why.
    Refused(String),
}

/// A digest's verdict with what it rests on.
#[derive(Debug)]
pub struct Inspection {
    /// The signature's own verdict.
    pub signature: Verdict,
    /// Each signature examined (every one found with `always`), in order.
    pub signatures: Vec<Examined>,
    /// The signature's and the gates' verdict together.
    pub verdict: Verdict,
    /// The attestations found (empty without `verify.attestations` or an unsigned image).
    pub found: attest::Found,
    /// Each gate's verdict, in the configuration's order.
    pub gates: Vec<gates::Verdict>,
}

/// Why a candidate failing a gate is refused: the gate, and the first attestation ignored.
fn gate_refusal(failed: &gates::Verdict, found: &attest::Found) -> String {
    let mut why = format!("attestation gate {}", failed.describe());
    if let Some(first) = found.ignored.first() {
        why.push_str(&format!(" ({} ignored; {first})", found.ignored.len()));
    }
    why
}

/// A run's verification state: keys and trusted roots read once, and which registries
/// lack the referrers API (asked once per registry).
#[derive(Default)]
pub struct Verifier {
    keys: Mutex<HashMap<String, Loaded<PublicKey>>>,
    roots: Mutex<HashMap<Option<String>, Loaded<TrustedRoot>>>,
    no_referrers: Mutex<HashSet<String>>,
}

/// A file read once per run: what it holds, or why not.
type Loaded<T> = Result<Arc<T>, LoadError>;

/// What the signatures seen so far say, for the reason of a refusal.
#[derive(Default)]
struct Seen {
    /// The referrers index read (the API's answer, or the fallback tag's), with where it
    /// was: the attestations are read from it too.
    index: Option<(Vec<u8>, &'static str)>,
    /// Walk every signature (the `verify` command), keeping the first that verifies.
    all: bool,
    first: Option<Signer>,
    /// Each signature examined, in order (at most [`MAX_EXAMINED`]).
    each: Vec<Examined>,
    signatures: usize,
    other_digest: Option<String>,
    /// A bundle this version does not verify (message signature): why.
    unsupported: Option<String>,
    unreadable: Option<String>,
    /// Why the last keyless (certificate) signature was not trusted.
    keyless: Option<String>,
}

/// The most signatures the `verify` command lists.
const MAX_EXAMINED: usize = 64;

/// One signature examined: where it was, and who signed it or why it does not count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Examined {
    pub layout: &'static str,
    pub verdict: Result<String, String>,
}

impl Seen {
    /// `signer` verified at `layout`: the signer to return now, or `None` to walk on
    /// (every signature is listed, the first one kept).
    fn verified(&mut self, layout: &'static str, signer: String) -> Option<Signer> {
        self.keyless = None;
        self.note(layout, Ok(signer.clone()));
        let found = Signer {
            signer,
            layout,
            gates: Vec::new(),
        };
        if !self.all {
            return Some(found);
        }
        self.first.get_or_insert(found);
        None
    }

    /// A signature at `layout` that does not count, and why.
    fn refused(&mut self, layout: &'static str, why: String) {
        self.note(layout, Err(why));
    }

    /// A keyless signature at `layout` not trusted, for the reason `keyless` holds.
    fn keyless_refused(&mut self, layout: &'static str) {
        let why = self.keyless.clone().unwrap_or_default();
        self.refused(layout, format!("keyless signature not trusted: {why}"));
    }

    /// A signature at `layout` of another image's digest.
    fn other(&mut self, layout: &'static str, digest: Option<String>) {
        let shown = digest.as_deref().unwrap_or("no digest").to_string();
        self.refused(
            layout,
            format!("the signature is for another image ({shown})"),
        );
        self.other_digest = digest;
    }

    /// A signature at `layout` whose signed payload cannot be read.
    fn unreadable_payload(&mut self, layout: &'static str, why: String) {
        self.refused(layout, format!("unreadable: {why}"));
        self.unreadable = Some(why);
    }

    fn note(&mut self, layout: &'static str, verdict: Result<String, String>) {
        if self.each.len() < MAX_EXAMINED {
            self.each.push(Examined { layout, verdict });
        }
    }

    fn reason(&self, spec: &VerifySpec) -> String {
        if let Some(d) = &self.other_digest {
            return format!("the signature is for another image ({d})");
        }
        if let Some(why) = &self.keyless {
            return format!("keyless signature not trusted: {why}");
        }
        if self.signatures > 0 {
            let mut keys: Vec<String> = spec.keys.iter().map(|k| file_name(k)).collect();
            keys.extend(spec.identities.iter().map(|i| i.describe()));
            return format!(
                "{} signature(s), none by {}",
                self.signatures,
                keys.join(", ")
            );
        }
        if let Some(why) = &self.unsupported {
            return format!("only {why}");
        }
        if let Some(e) = &self.unreadable {
            return format!("unreadable signature: {e}");
        }
        "unsigned (no cosign signature)".into()
    }
}

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string())
}

impl Verifier {
    pub fn new() -> Verifier {
        Verifier::default()
    }

    /// The keys of `spec`, each file read once per run (size-capped).
    pub fn keys(&self, spec: &VerifySpec) -> Result<Vec<Arc<PublicKey>>, Error> {
        spec.keys.iter().map(|path| self.key(path)).collect()
    }

    /// The trusted root of `spec` (its file read once per run, size-capped; the public-good
    /// root when it names none), or `None` when it verifies no identities.
    pub fn root(&self, spec: &VerifySpec) -> Result<Option<Arc<TrustedRoot>>, Error> {
        if spec.identities.is_empty() {
            return Ok(None);
        }
        let path = spec.trusted_root.clone();
        let load = || match &path {
            None => Ok(Arc::new(TrustedRoot::public_good()?)),
            Some(p) => {
                let json = crate::registry::read_small(Path::new(p))?;
                Ok(Arc::new(TrustedRoot::from_json(&file_name(p), &json)?))
            }
        };
        let result = match self.roots.lock() {
            Ok(mut map) => map.entry(path.clone()).or_insert_with(load).clone(),
            Err(_) => load(),
        };
        result.map(Some).map_err(|reason| Error::TrustedRoot {
            path: path.unwrap_or_else(|| "(built-in public-good root)".into()),
            reason,
        })
    }

    fn key(&self, path: &str) -> Result<Arc<PublicKey>, Error> {
        let load = || -> Loaded<PublicKey> {
            let pem = crate::registry::read_small(Path::new(path))?;
            Ok(Arc::new(PublicKey::from_pem(&file_name(path), &pem)?))
        };
        let result = match self.keys.lock() {
            Ok(mut map) => map.entry(path.to_string()).or_insert_with(load).clone(),
            // Poisoned: another task panicked; read without caching.
            Err(_) => load(),
        };
        result.map_err(|reason| Error::Key {
            path: path.to_string(),
            reason,
        })
    }

    /// Verify `repo@digest` against `spec`: its signature, then its attestation gates.
    /// `listed` is the repository's tag list when the run has it: a signature or
    /// attestation tag it lacks costs no request.
    pub async fn verify(
        &self,
        client: &Client,
        repo: &str,
        digest: &str,
        spec: &VerifySpec,
        listed: Option<&[String]>,
    ) -> Result<Verdict, Error> {
        Ok(self
            .inspect(client, repo, digest, spec, listed, false)
            .await?
            .verdict)
    }

    /// [`Self::verify`], with every attestation found and each gate's verdict (the
    /// `verify` command shows them). With `always`, attestations are read and gates judged
    /// even when the signature does not verify (the verdict stays the signature's).
    pub async fn inspect(
        &self,
        client: &Client,
        repo: &str,
        digest: &str,
        spec: &VerifySpec,
        listed: Option<&[String]>,
        always: bool,
    ) -> Result<Inspection, Error> {
        let mut seen = Seen {
            all: always,
            ..Seen::default()
        };
        let signature = self
            .signature(client, repo, digest, spec, listed, &mut seen)
            .await?;
        let unsigned = matches!(signature, Verdict::Refused(_));
        let Some(gates) = spec.attestations.as_ref().filter(|_| always || !unsigned) else {
            return Ok(Inspection {
                signature: signature.clone(),
                signatures: seen.each,
                verdict: signature,
                found: attest::Found::default(),
                gates: Vec::new(),
            });
        };
        let found = self
            .attestations(client, repo, digest, spec, listed, seen.index.take())
            .await?;
        let verdicts = gates::judge(gates, &found.verified);
        let verdict = match (&signature, verdicts.iter().find(|v| !v.passed)) {
            (Verdict::Refused(_), _) => signature.clone(),
            (Verdict::Verified(_), Some(failed)) => Verdict::Refused(gate_refusal(failed, &found)),
            (Verdict::Verified(signer), None) => {
                let mut signer = signer.clone();
                signer.gates = verdicts.iter().map(gates::Verdict::describe).collect();
                Verdict::Verified(signer)
            }
        };
        Ok(Inspection {
            signature,
            signatures: seen.each,
            verdict,
            found,
            gates: verdicts,
        })
    }

    /// The attestations of `repo@digest`; `index` is the referrers index the signature
    /// check read (the API's answer, or the fallback tag's), with where it was.
    async fn attestations(
        &self,
        client: &Client,
        repo: &str,
        digest: &str,
        spec: &VerifySpec,
        listed: Option<&[String]>,
        index: Option<(Vec<u8>, &'static str)>,
    ) -> Result<attest::Found, Error> {
        let (keys, root) = (self.keys(spec)?, self.root(spec)?);
        let check = Check {
            client,
            repo,
            digest,
            keys: &keys,
            root: root.as_deref(),
            identities: &spec.identities,
        };
        let may_exist = |tag: &str| listed.is_none_or(|l| l.iter().any(|t| t == tag));
        check.attestations(index, may_exist).await
    }

    /// The signature's verdict; `index` keeps the referrers index it read (the API's
    /// answer, or the fallback tag's) for the attestations.
    async fn signature(
        &self,
        client: &Client,
        repo: &str,
        digest: &str,
        spec: &VerifySpec,
        listed: Option<&[String]>,
        seen: &mut Seen,
    ) -> Result<Verdict, Error> {
        let keys = self.keys(spec)?;
        let root = self.root(spec)?;
        if keys.is_empty() && root.is_none() {
            return Err(Error::NoKeys);
        }
        let fail = |source| Error::Registry {
            digest: digest.to_string(),
            source,
        };
        let check = Check {
            client,
            repo,
            digest,
            keys: &keys,
            root: root.as_deref(),
            identities: &spec.identities,
        };
        // 1. The referrers API, unless this registry answered 404 to it before.
        let lacks = |host: &str| self.no_referrers.lock().is_ok_and(|s| s.contains(host));
        if !lacks(&client.host) {
            match client.referrers(repo, digest).await.map_err(fail)? {
                Some(api) => {
                    let verified = check.index(&api, "referrers", seen).await?;
                    seen.index = Some((api, "referrers"));
                    if let Some(s) = verified {
                        return Ok(Verdict::Verified(s));
                    }
                }
                None => {
                    if let Ok(mut set) = self.no_referrers.lock() {
                        set.insert(client.host.clone());
                    }
                }
            }
        }
        let (sig_tag, fallback) = cosign::tags_for(digest);
        let may_exist = |tag: &str| listed.is_none_or(|l| l.iter().any(|t| t == tag));
        // 2. The referrers fallback tag, where the API is missing.
        if lacks(&client.host) && may_exist(&fallback) {
            if let Some(tagged) = check.tagged(&fallback).await? {
                let verified = check.index(&tagged, "referrers tag", seen).await?;
                seen.index = Some((tagged, "referrers tag"));
                if let Some(s) = verified {
                    return Ok(Verdict::Verified(s));
                }
            }
        }
        // 3. The legacy `.sig` tag.
        if may_exist(&sig_tag) {
            if let Some(manifest) = check.tagged(&sig_tag).await? {
                if let Some(s) = check.manifest(&manifest, "sig tag", seen).await? {
                    return Ok(Verdict::Verified(s));
                }
            }
        }
        Ok(match seen.first.take() {
            Some(s) => Verdict::Verified(s),
            None => Verdict::Refused(seen.reason(spec)),
        })
    }
}

/// One digest's verification: where it reads and what it checks against.
struct Check<'a> {
    client: &'a Client,
    repo: &'a str,
    digest: &'a str,
    keys: &'a [Arc<PublicKey>],
    /// Keyless: the trusted root and the identities (`None` without identities).
    root: Option<&'a TrustedRoot>,
    identities: &'a [imagebump_model::verify::Identity],
}

impl Check<'_> {
    fn fail(&self, source: RegistryError) -> Error {
        Error::Registry {
            digest: self.digest.to_string(),
            source,
        }
    }

    /// The manifest `tag` names, or `None` when there is no such tag.
    async fn tagged(&self, tag: &str) -> Result<Option<Vec<u8>>, Error> {
        match self.client.manifest_bytes(self.repo, tag).await {
            Ok(f) => Ok(Some(f.body)),
            Err(RegistryError::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// The cosign signatures an index of referrers lists, each manifest fetched by digest.
    async fn index(
        &self,
        index: &[u8],
        layout: &'static str,
        seen: &mut Seen,
    ) -> Result<Option<Signer>, Error> {
        let found = match cosign::referrers(index) {
            Ok(r) => r,
            Err(e) => {
                seen.refused(layout, format!("unreadable: {e}"));
                seen.unreadable = Some(e.to_string());
                return Ok(None);
            }
        };
        for d in &found.bundles {
            let fetched = self
                .client
                .manifest_bytes(self.repo, d)
                .await
                .map_err(|e| self.fail(e))?;
            let layout = match layout {
                "referrers" => "referrers, bundle",
                _ => "referrers tag, bundle",
            };
            if let Some(s) = self.bundle(&fetched.body, layout, seen).await? {
                return Ok(Some(s));
            }
        }
        for d in &found.signatures {
            let fetched = self
                .client
                .manifest_bytes(self.repo, d)
                .await
                .map_err(|e| self.fail(e))?;
            if let Some(s) = self.manifest(&fetched.body, layout, seen).await? {
                return Ok(Some(s));
            }
        }
        Ok(None)
    }

    /// The first key-signed Sigstore bundle of a bundle manifest that verifies for the
    /// digest: a DSSE envelope around cosign's in-toto signing statement.
    async fn bundle(
        &self,
        manifest: &[u8],
        layout: &'static str,
        seen: &mut Seen,
    ) -> Result<Option<Signer>, Error> {
        let layers = match cosign::bundle_layers(manifest) {
            Ok(l) => l,
            Err(e) => {
                seen.refused(layout, format!("unreadable: {e}"));
                seen.unreadable = Some(e.to_string());
                return Ok(None);
            }
        };
        for digest in layers {
            let blob = self
                .client
                .config_bytes(self.repo, &digest)
                .await
                .map_err(|e| self.fail(e))?;
            let envelope = match cosign::envelope(&blob) {
                Ok(e) => e,
                Err(why) => {
                    seen.refused(layout, format!("not verified here: {why}"));
                    seen.unsupported = Some(why.to_string());
                    continue;
                }
            };
            seen.signatures = seen.signatures.saturating_add(1);
            let by_key = |k: &PublicKey| {
                envelope
                    .signatures
                    .iter()
                    .any(|sig| k.verifies(&envelope.signed, sig))
            };
            let signer = match self.keys.iter().find(|k| by_key(k)) {
                Some(key) => describe(key),
                None => {
                    let Some(material) = &envelope.keyless else {
                        seen.refused(layout, "signed by none of the keys".into());
                        continue;
                    };
                    let signed = rekor::Signed::Dsse {
                        payload: &envelope.payload,
                        pae: &envelope.signed,
                        signatures: &envelope.signatures,
                        certificate: &material.leaf,
                    };
                    match self.keyless(material, &signed, by_key, seen) {
                        Some(s) => s,
                        None => {
                            seen.keyless_refused(layout);
                            continue;
                        }
                    }
                }
            };
            match cosign::statement_digests(&envelope.payload) {
                Ok(ds) if ds.iter().any(|d| d == self.digest) => {
                    if let Some(s) = seen.verified(layout, signer) {
                        return Ok(Some(s));
                    }
                }
                Ok(ds) => seen.other(layout, ds.into_iter().next()),
                Err(e) => seen.unreadable_payload(layout, e.to_string()),
            }
        }
        Ok(None)
    }

    /// The first signature of a signature manifest that verifies for the digest.
    async fn manifest(
        &self,
        manifest: &[u8],
        layout: &'static str,
        seen: &mut Seen,
    ) -> Result<Option<Signer>, Error> {
        let layers = match cosign::signature_layers(manifest) {
            Ok(l) => l,
            Err(e) => {
                seen.refused(layout, format!("unreadable: {e}"));
                seen.unreadable = Some(e.to_string());
                return Ok(None);
            }
        };
        for layer in layers {
            seen.signatures = seen.signatures.saturating_add(1);
            let payload = self
                .client
                .config_bytes(self.repo, &layer.digest)
                .await
                .map_err(|e| self.fail(e))?;
            let by_key = |k: &PublicKey| k.verifies(&payload, &layer.signature);
            let signer = match self.keys.iter().find(|k| by_key(k)) {
                Some(key) => describe(key),
                None => {
                    let Some(cert) = &layer.certificate else {
                        seen.refused(layout, "signed by none of the keys".into());
                        continue;
                    };
                    let material = keyless::Material::from_annotations(
                        cert,
                        layer.chain.as_deref(),
                        layer.bundle.as_deref(),
                    );
                    let material = match material {
                        Ok(m) => m,
                        Err(e) => {
                            seen.refused(layout, format!("keyless signature not trusted: {e}"));
                            seen.keyless = Some(e.to_string());
                            continue;
                        }
                    };
                    let signed = rekor::Signed::Hashed {
                        payload: &payload,
                        signature: &layer.signature,
                        certificate: &material.leaf,
                    };
                    match self.keyless(&material, &signed, by_key, seen) {
                        Some(s) => s,
                        None => {
                            seen.keyless_refused(layout);
                            continue;
                        }
                    }
                }
            };
            match cosign::signed_digest(&payload) {
                Ok(d) if d == self.digest => {
                    if let Some(s) = seen.verified(layout, signer) {
                        return Ok(Some(s));
                    }
                }
                Ok(d) => seen.other(layout, Some(d)),
                Err(e) => seen.unreadable_payload(layout, e.to_string()),
            }
        }
        Ok(None)
    }
}

impl Check<'_> {
    /// A keyless signature's signer, or `None` with why in `seen`.
    fn keyless(
        &self,
        material: &keyless::Material,
        signed: &rekor::Signed,
        verifies: impl Fn(&PublicKey) -> bool,
        seen: &mut Seen,
    ) -> Option<String> {
        let Some(root) = self.root else {
            seen.keyless = Some("verify names no identities to trust".into());
            return None;
        };
        match keyless::check(material, root, self.identities, signed, verifies) {
            Ok(s) => Some(s),
            Err(why) => {
                seen.keyless = Some(why.to_string());
                None
            }
        }
    }
}

/// `key cosign.pub (ecdsa-p256 sha256:1a2b3c4d5e6f7a8b)`.
fn describe(key: &PublicKey) -> String {
    let mut hex = format!("{:x}", sha2::Sha256::digest(key.fingerprint_source()));
    hex.truncate(16);
    format!("key {} ({} sha256:{hex})", key.name, key.kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_errors_name_the_flag_and_what_is_missing() {
        let none: &[std::path::PathBuf] = &[];
        let e = flag_keys(none, &["no-equals".into()], None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"no-equals\": expected ISSUER=SUBJECT_REGEXP"
        );
        let e = flag_keys(none, &[], Some(Path::new("root.json"))).unwrap_err();
        assert!(matches!(e, FlagError::RootWithoutIdentity), "{e:?}");
        let spec = flag_keys(none, &["https://issuer=^me$".into()], None).unwrap();
        assert_eq!(spec.map(|s| s.identities.len()), Some(1));
        assert_eq!(flag_keys(none, &[], None).unwrap(), None);
    }
}
