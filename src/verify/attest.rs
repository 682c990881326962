//! Attestations of a candidate: in-toto statements in DSSE envelopes, found where cosign
//! keeps them (the OCI 1.1 referrers API or its `sha256-<hex>` fallback tag: DSSE
//! envelopes and Sigstore bundles; cosign's `sha256-<hex>.att` tag: DSSE layers with the
//! signature's certificate annotations). Each envelope must verify with the trust of the
//! policy's `verify` (a key, or keylessly by an allowed identity logged in Rekor) and its
//! statement must name the candidate's digest; anything else is ignored, with why. Reads
//! are capped: [`MAX_MANIFESTS`] manifests, [`cosign::MAX_SIGNATURES`] layers each,
//! [`MAX_ENVELOPES`] envelopes of at most [`MAX_BLOB`] bytes and [`MAX_TOTAL`] bytes in
//! all; only the predicates a gate reads are kept (an SBOM's presence is what counts).

use serde::Deserialize;

use super::gates::Attestation;
use super::{cosign, keyless, rekor, Check, Error, PublicKey, RegistryError};
use imagebump_model::name::is_sha256_digest;

/// The media type (and referrer artifact type) of a DSSE envelope cosign attaches.
pub const DSSE_ENVELOPE: &str = "application/vnd.dsse.envelope.v1+json";
/// Sigstore bundles as referrers and as their layer's media type.
const BUNDLE_PREFIX: &str = "application/vnd.dev.sigstore.bundle";
/// The most attestation manifests read for one digest.
pub const MAX_MANIFESTS: usize = 16;
/// The largest attestation blob read: an SBOM of a large image, base64 in its envelope,
/// fits (one beyond it is ignored, with why).
pub const MAX_BLOB: u64 = 32 * 1024 * 1024;
/// The most envelopes, and bytes of them, read for one digest.
pub const MAX_ENVELOPES: usize = 32;
pub const MAX_TOTAL: u64 = 64 * 1024 * 1024;

/// The attestations of one digest: those that verified, and why the others do not count.
#[derive(Debug, Default)]
pub struct Found {
    pub verified: Vec<Attestation>,
    /// `<layout>: <why>` for each envelope ignored.
    pub ignored: Vec<String>,
    /// Envelopes and bytes read so far (against [`MAX_ENVELOPES`] and [`MAX_TOTAL`]).
    read: (usize, u64),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    #[serde(default)]
    media_type: String,
    digest: String,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    artifact_type: Option<String>,
    #[serde(default)]
    annotations: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct Manifests {
    #[serde(default)]
    manifests: Vec<Descriptor>,
    #[serde(default)]
    layers: Vec<Descriptor>,
}

/// cosign's attestation tag for `digest`: `sha256-<hex>.att`.
pub fn att_tag(digest: &str) -> String {
    format!("{}.att", digest.replacen(':', "-", 1))
}

/// The attestation manifests an index of referrers lists (DSSE envelopes and Sigstore
/// bundles), at most [`MAX_MANIFESTS`].
fn attestation_referrers(index: &[u8]) -> Result<Vec<String>, serde_json::Error> {
    let index: Manifests = serde_json::from_slice(index)?;
    Ok(index
        .manifests
        .into_iter()
        .filter(|d| {
            let kind = d.artifact_type.as_deref().unwrap_or_default();
            (kind == DSSE_ENVELOPE || kind.starts_with(BUNDLE_PREFIX))
                && is_sha256_digest(&d.digest)
        })
        .map(|d| d.digest)
        .take(MAX_MANIFESTS)
        .collect())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Statement {
    #[serde(rename = "_type")]
    kind: String,
    predicate_type: String,
    #[serde(default)]
    subject: Vec<Subject>,
    #[serde(default)]
    predicate: serde_json::Value,
}

#[derive(Deserialize)]
struct Subject {
    #[serde(default)]
    digest: std::collections::BTreeMap<String, String>,
}

/// The statement's predicate type and predicate when it is an in-toto statement naming
/// `digest` as a subject; otherwise why not.
fn statement(payload: &[u8], digest: &str) -> Result<(String, serde_json::Value), String> {
    let s: Statement =
        serde_json::from_slice(payload).map_err(|e| format!("not an in-toto statement: {e}"))?;
    if !s.kind.starts_with("https://in-toto.io/Statement/") {
        return Err(format!("a payload of type {:?}, not in-toto", s.kind));
    }
    let names = |x: &Subject| {
        x.digest
            .get("sha256")
            .is_some_and(|hex| digest.strip_prefix("sha256:") == Some(hex.as_str()))
    };
    if !s.subject.iter().any(names) {
        let other = s.subject.iter().find_map(|x| x.digest.get("sha256"));
        let other = other.map_or_else(|| "no sha256 subject".into(), |h| format!("sha256:{h}"));
        return Err(format!(
            "{} attestation for another image ({other})",
            s.predicate_type
        ));
    }
    Ok((s.predicate_type, s.predicate))
}

impl Check<'_> {
    /// The attestations of the digest: those the referrers `index` lists (the signature
    /// check's: the API's answer or the fallback tag's, with where it was), then the
    /// `.att` tag's. `may_exist` says whether a tag may be in the repository (its tag
    /// listing).
    pub(super) async fn attestations(
        &self,
        index: Option<(Vec<u8>, &'static str)>,
        may_exist: impl Fn(&str) -> bool,
    ) -> Result<Found, Error> {
        let mut found = Found::default();
        if let Some((index, layout)) = index {
            match attestation_referrers(&index) {
                Ok(list) => {
                    for d in list {
                        let manifest = self.fetch_manifest(&d).await?;
                        self.attested(&manifest, layout, &mut found).await?;
                    }
                }
                Err(e) => found.ignored.push(format!("{layout}: index: {e}")),
            }
        }
        let att = att_tag(self.digest);
        if may_exist(&att) {
            if let Some(manifest) = self.tagged(&att).await? {
                self.attested(&manifest, "att tag", &mut found).await?;
            }
        }
        Ok(found)
    }

    async fn fetch_manifest(&self, digest: &str) -> Result<Vec<u8>, Error> {
        match self.client.manifest_bytes(self.repo, digest).await {
            Ok(f) => Ok(f.body),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// The envelopes of one attestation manifest (DSSE layers or Sigstore bundle layers),
    /// each verified and read into `found`.
    async fn attested(
        &self,
        manifest: &[u8],
        layout: &'static str,
        found: &mut Found,
    ) -> Result<(), Error> {
        let layers = match serde_json::from_slice::<Manifests>(manifest) {
            Ok(m) => m.layers,
            Err(e) => {
                found.ignored.push(format!("{layout}: manifest: {e}"));
                return Ok(());
            }
        };
        let wanted = layers.into_iter().filter(|l| {
            (l.media_type == DSSE_ENVELOPE || l.media_type.starts_with(BUNDLE_PREFIX))
                && is_sha256_digest(&l.digest)
        });
        for layer in wanted.take(cosign::MAX_SIGNATURES) {
            let bundle = layer.media_type.starts_with(BUNDLE_PREFIX);
            let layout = match (bundle, layout) {
                (true, "referrers") => "referrers, bundle",
                (true, "att tag") => "att tag, bundle",
                (true, _) => "referrers tag, bundle",
                (false, l) => l,
            };
            if layer.size > MAX_BLOB {
                let why = format!("{layout}: an attestation of {} bytes", layer.size);
                found
                    .ignored
                    .push(format!("{why}, above the {MAX_BLOB} read"));
                continue;
            }
            let (count, bytes) = found.read;
            if count >= MAX_ENVELOPES || bytes.saturating_add(layer.size) > MAX_TOTAL {
                let why = format!("{MAX_ENVELOPES} attestations or {MAX_TOTAL} bytes read");
                found
                    .ignored
                    .push(format!("{layout}: not read, {why} already"));
                return Ok(());
            }
            found.read.0 = count.saturating_add(1);
            let blob = match self
                .client
                .blob_bytes(self.repo, &layer.digest, MAX_BLOB as usize)
                .await
            {
                Ok(b) => b,
                Err(RegistryError::TooLarge { limit, .. }) => {
                    let why = format!("{layout}: an attestation above the {limit} bytes read");
                    found.ignored.push(why);
                    continue;
                }
                Err(e) => return Err(self.fail(e)),
            };
            // The bytes read, not the size the registry declared.
            let len = u64::try_from(blob.len()).unwrap_or(u64::MAX);
            found.read.1 = found.read.1.saturating_add(len);
            match self.envelope_of(&blob, bundle, &layer.annotations) {
                Ok(env) => self.judged(&env, layout, found),
                Err(why) => found.ignored.push(format!("{layout}: {why}")),
            }
        }
        Ok(())
    }

    /// The DSSE envelope of a layer: a Sigstore bundle's, or a bare one with the keyless
    /// material of cosign's annotations.
    fn envelope_of(
        &self,
        blob: &[u8],
        bundle: bool,
        annotations: &std::collections::BTreeMap<String, String>,
    ) -> Result<cosign::Envelope, String> {
        if bundle {
            return cosign::envelope(blob).map_err(|e| e.to_string());
        }
        let material = match annotations.get(cosign::CERTIFICATE_ANNOTATION) {
            Some(cert) => Some(
                keyless::Material::from_annotations(
                    cert,
                    annotations
                        .get(cosign::CHAIN_ANNOTATION)
                        .map(String::as_str),
                    annotations
                        .get(cosign::BUNDLE_ANNOTATION)
                        .map(String::as_str),
                )
                .map_err(|e| e.to_string())?,
            ),
            None => None,
        };
        cosign::bare_envelope(blob, material).map_err(|e| e.to_string())
    }

    /// One envelope verified, and its statement read, into `found`.
    fn judged(&self, env: &cosign::Envelope, layout: &'static str, found: &mut Found) {
        let signer = match self.dsse_signer(env) {
            Ok(s) => s,
            Err(why) => {
                found.ignored.push(format!("{layout}: {why}"));
                return;
            }
        };
        match statement(&env.payload, self.digest) {
            Ok((predicate_type, predicate)) => found.verified.push(Attestation {
                predicate: match super::gates::reads_predicate(&predicate_type) {
                    true => predicate,
                    false => serde_json::Value::Null,
                },
                predicate_type,
                signer,
                layout,
            }),
            Err(why) => found.ignored.push(format!("{layout}: {why}")),
        }
    }

    /// Who signed a DSSE envelope, with the trust of `verify`: one of its keys, or
    /// keylessly an allowed identity logged in a trusted Rekor log.
    fn dsse_signer(&self, env: &cosign::Envelope) -> Result<String, String> {
        let by_key = |k: &PublicKey| env.signatures.iter().any(|s| k.verifies(&env.signed, s));
        if let Some(key) = self.keys.iter().find(|k| by_key(k)) {
            return Ok(super::describe(key));
        }
        let Some(material) = &env.keyless else {
            return Err("an attestation signed by none of the keys".into());
        };
        let Some(root) = self.root else {
            return Err("a keyless attestation, and verify names no identities".into());
        };
        let signed = rekor::Signed::Dsse {
            payload: &env.payload,
            pae: &env.signed,
            signatures: &env.signatures,
            certificate: &material.leaf,
        };
        keyless::check(material, root, self.identities, &signed, by_key)
            .map_err(|e| format!("keyless attestation not trusted: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000001";

    #[test]
    fn statements_must_name_the_digest() {
        let s = |hex: &str| {
            format!(
                r#"{{"_type":"https://in-toto.io/Statement/v1","subject":[{{"name":"a","digest":{{"sha256":"{hex}"}}}}],"predicateType":"https://spdx.dev/Document","predicate":{{"x":1}}}}"#
            )
        };
        let (kind, predicate) = statement(s(&D[7..]).as_bytes(), D).unwrap();
        assert_eq!(kind, "https://spdx.dev/Document");
        assert_eq!(predicate["x"], 1);
        let other = "f".repeat(64);
        assert_eq!(
            statement(s(&other).as_bytes(), D).unwrap_err(),
            format!("https://spdx.dev/Document attestation for another image (sha256:{other})")
        );
        assert!(statement(b"{}", D).is_err());
        assert_eq!(att_tag(D), format!("sha256-{}.att", &D[7..]));
    }

    #[test]
    fn referrers_keep_envelopes_and_bundles_only() {
        let index = format!(
            r#"{{"manifests":[{{"digest":"{D}","artifactType":"{DSSE_ENVELOPE}"}},
            {{"digest":"{D}","artifactType":"application/vnd.dev.sigstore.bundle.v0.3+json"}},
            {{"digest":"{D}","artifactType":"application/vnd.dev.cosign.artifact.sig.v1+json"}},
            {{"digest":"sha256:AB","artifactType":"{DSSE_ENVELOPE}"}}]}}"#
        );
        assert_eq!(
            attestation_referrers(index.as_bytes()).unwrap(),
            vec![D.to_string(), D.to_string()]
        );
        let many = format!(
            r#"{{"manifests":[{}]}}"#,
            vec![format!(r#"{{"digest":"{D}","artifactType":"{DSSE_ENVELOPE}"}}"#); 40].join(",")
        );
        assert_eq!(
            attestation_referrers(many.as_bytes()).unwrap().len(),
            MAX_MANIFESTS
        );
    }
}
