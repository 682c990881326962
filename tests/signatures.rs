//! `verify`: cosign signatures end to end. A real `docker-registry` holds images signed by an
//! independent signer (tests/support/cosign_signer.py, on PyPI's `cryptography`) in each
//! layout cosign uses: the legacy `sha256-<hex>.sig` tag, the referrers fallback tag
//! `sha256-<hex>`, and the OCI 1.1 referrers API (distribution 2.8 lacks that API, so a
//! wiremock proxy in front of the real registry answers it). Each test asserts the choice,
//! every refused candidate's reason, the exact edit, and the exact registry requests.

// A test crate may panic, count, slice and read the environment: the no-panic lints of
// Cargo.toml are for the library.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::string_slice,
    clippy::disallowed_methods
)]

mod support;

use std::fs;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use support::cli::{dry_run, imagebump};
use support::{sha256_digest, tree, Registry, RegistryMode, OCI_CONFIG, OCI_INDEX, OCI_MANIFEST};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const HOST: &str = "registry.test";
const REPO: &str = "team/web";
const SIG_ARTIFACT: &str = "application/vnd.dev.cosign.artifact.sig.v1+json";
const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";

/// The independent signer: keys and signatures from Python's `cryptography`.
struct Signer {
    python: PathBuf,
    dir: tempfile::TempDir,
}

impl Signer {
    fn new() -> Signer {
        Signer {
            python: support::ci_python_with_cryptography(),
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn script() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/cosign_signer.py")
    }

    fn call(&self, args: &[&str]) -> String {
        let out = Command::new(&self.python)
            .arg(Self::script())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// A new key pair of `kind` named `name`; returns the public key's path.
    fn keygen(&self, kind: &str, name: &str) -> PathBuf {
        let private = self.dir.path().join(format!("{name}.key"));
        let public = self.dir.path().join(format!("{name}.pub"));
        self.call(&[
            "keygen",
            kind,
            private.to_str().unwrap(),
            public.to_str().unwrap(),
        ]);
        public
    }

    /// The simple-signing payload for `digest` and its signature by key `name`.
    fn sign(&self, name: &str, digest: &str) -> (Vec<u8>, String) {
        let payload = self.call(&["payload", digest, &format!("{HOST}/{REPO}")]);
        let file = self.dir.path().join("payload.json");
        fs::write(&file, &payload).unwrap();
        let private = self.dir.path().join(format!("{name}.key"));
        let sig = self.call(&["sign", private.to_str().unwrap(), file.to_str().unwrap()]);
        (payload.into_bytes(), sig)
    }
}

#[derive(Clone, Copy)]
enum Layout {
    SigTag,
    ReferrersTag,
    /// Stored by digest only; a proxy lists it in its referrers API answer.
    Referrer,
}

/// Pushes a cosign signature of `signed` (the digest the payload names) by key `key`, stored
/// for `subject` in `layout`; returns the signature manifest's bytes.
fn push_signature(
    reg: &Registry,
    signer: &Signer,
    key: &str,
    subject: &str,
    signed: &str,
    layout: Layout,
) -> Vec<u8> {
    let (payload, sig) = signer.sign(key, signed);
    let (payload_digest, payload_size) = reg.push_blob(REPO, &payload);
    let config = b"{}".to_vec();
    let (config_digest, config_size) = reg.push_blob(REPO, &config);
    let mut manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": config_size},
        "layers": [{
            "mediaType": SIMPLE_SIGNING, "digest": payload_digest, "size": payload_size,
            "annotations": {"dev.cosignproject.cosign/signature": sig}
        }]
    });
    let hex = subject.strip_prefix("sha256:").unwrap();
    match layout {
        Layout::SigTag => {
            let body = manifest.to_string().into_bytes();
            reg.put_manifest(REPO, &format!("sha256-{hex}.sig"), OCI_MANIFEST, &body);
            body
        }
        Layout::ReferrersTag | Layout::Referrer => {
            manifest["artifactType"] = json!(SIG_ARTIFACT);
            let body = manifest.to_string().into_bytes();
            let digest = sha256_digest(&body);
            reg.put_manifest(REPO, &digest, OCI_MANIFEST, &body);
            if let Layout::ReferrersTag = layout {
                let index = referrers_index(&[&body], SIG_ARTIFACT);
                reg.put_manifest(REPO, &format!("sha256-{hex}"), OCI_INDEX, &index);
            }
            body
        }
    }
}

/// The artifact type of a Sigstore bundle referrer.
const BUNDLE_ARTIFACT: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// An OCI index listing `manifests` as referrers of `artifact_type` (cosign signatures,
/// Sigstore bundles).
fn referrers_index(manifests: &[&[u8]], artifact_type: &str) -> Vec<u8> {
    let list: Vec<Value> = manifests
        .iter()
        .map(|m| {
            json!({"mediaType": OCI_MANIFEST, "digest": sha256_digest(m), "size": m.len(),
                "artifactType": artifact_type})
        })
        .collect();
    json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": list})
        .to_string()
        .into_bytes()
}

/// An operator configuration sending `registry.test` to `url` and verifying `team/web`
/// with `keys` (paths, written relative to the configuration's directory).
fn operator_config(dir: &Path, url: &str, keys: &[&Path]) -> PathBuf {
    let mut text = format!(
        "registries:\n- prefix: {HOST}\n  url: {url}\nimages:\n- match: {HOST}/team/*\n  verify:\n    keys:\n"
    );
    for k in keys {
        let name = k.file_name().unwrap().to_str().unwrap();
        fs::copy(k, dir.join(name)).unwrap();
        text.push_str(&format!("    - {name}\n"));
    }
    let path = dir.join("operator.yaml");
    fs::write(&path, text).unwrap();
    path
}

/// A Pod running `registry.test/team/web:<version>`.
fn pod(version: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n    image: {HOST}/{REPO}:{version}\n"
    )
}

fn requests(manifests: usize, blobs: usize) -> Value {
    json!({"tagListPages": 1, "tokens": 0, "manifests": manifests, "blobs": blobs, "retries": 0})
}

fn messages(report: &Value, key: &str) -> Vec<String> {
    report[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{}: {}",
                p["location"].as_str().unwrap(),
                p["message"].as_str().unwrap()
            )
        })
        .collect()
}

/// `imagebump tags registry.test/team/web:1.0.0 --verify-key …` as JSON: the candidates
/// as `tag: reason` and the signer.
fn tags_verdicts(cfg: &Path, keys: &[&Path], code: i32) -> (Vec<String>, Value) {
    let mut cli = imagebump()
        .args(["tags", &format!("{HOST}/{REPO}:1.0.0"), "--output", "json"])
        .arg("--config")
        .arg(cfg);
    for k in keys {
        cli = cli.arg("--verify-key").arg(k);
    }
    let run = cli.code(code).run();
    let report = run.json();
    let verdicts = report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}: {}",
                c["tag"].as_str().unwrap(),
                c["reason"].as_str().unwrap()
            )
        })
        .collect();
    (verdicts, report)
}

/// The legacy `.sig` layout with an ECDSA P-256 key, on a multi-arch index pinned by digest:
/// the best signed candidate is proposed at the index digest it was verified at, the
/// unsigned newer one is refused with the reason, and the requests are exact.
#[test]
fn a_run_proposes_the_best_signed_candidate_at_its_verified_digest() {
    let reg = Registry::start(RegistryMode::Plain);
    let signer = Signer::new();
    let key = signer.keygen("ecdsa-p256", "cosign");
    let old = reg.push_tag_created_digest(REPO, "1.0.0", "2024-01-01T00:00:00Z");
    let signed = reg.push_index(
        REPO,
        "1.2.0",
        &[
            ("linux/amd64", "2024-02-01T00:00:00Z"),
            ("linux/arm64", "2024-02-01T00:00:00Z"),
        ],
    );
    reg.push_tag_created_digest(REPO, "1.3.0", "2024-03-01T00:00:00Z");
    push_signature(&reg, &signer, "cosign", &signed, &signed, Layout::SigTag);

    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = operator_config(cfg_dir.path(), &reg.base_url(), &[&key]);
    let before = pod(&format!("1.0.0@{old}"));
    let dir = tree(&[("deploy.yaml", before.as_str())]);
    let run = imagebump()
        .args(["run", "--dry-run", "--output", "json"])
        .arg(dir.path())
        .arg("--config")
        .arg(&cfg)
        .run();
    let report = run.json();
    assert_eq!(report["errors"], json!([]), "{run}");
    assert_eq!(
        report["updates"][0]["to"],
        json!(format!("1.2.0@{signed}")),
        "{report:#}"
    );
    assert_eq!(report["updates"].as_array().unwrap().len(), 1);
    // The report records the digest verified and the key, by file name and fingerprint.
    let verified = &report["updates"][0]["verified"];
    assert_eq!(verified["digest"], json!(signed));
    let by = verified["signer"].as_str().unwrap();
    assert!(by.starts_with("key cosign.pub (ecdsa-p256 sha256:"), "{by}");
    assert!(by.ends_with(") (sig tag)"), "{by}");
    assert!(!by.contains(cfg_dir.path().to_str().unwrap()), "{by}");
    assert_eq!(
        messages(&report, "warnings"),
        [format!(
            "{HOST}/{REPO}: 1.3.0 not proposed: unsigned (no cosign signature)"
        )]
    );
    // For the platforms, 1.0.0's manifest and config (amd64). 1.3.0: its manifest and
    // config (amd64, and its digest), the referrers API (404: remembered for the
    // registry), no signature tag listed. 1.2.0: its index (amd64 and arm64), its `.sig`
    // manifest, the payload blob.
    assert_eq!(report["requests"], requests(5, 3));
    assert_eq!(
        fs::read_to_string(dir.path().join("deploy.yaml")).unwrap(),
        before
    );
}

/// Every key kind and the refusals: another key, a signature naming another digest,
/// unsigned; and the referrers fallback tag, as `imagebump tags` shows them.
#[test]
fn tags_shows_each_candidates_verdict_for_every_key_kind_and_layout() {
    let reg = Registry::start(RegistryMode::Plain);
    let signer = Signer::new();
    let ecdsa = signer.keygen("ecdsa-p256", "ecdsa");
    let ed = signer.keygen("ed25519", "ed");
    let rsa = signer.keygen("rsa", "rsa");
    signer.keygen("ecdsa-p256", "stranger");
    let mut digests = Vec::new();
    for (i, tag) in ["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0"]
        .iter()
        .enumerate()
    {
        digests.push(reg.push_tag_created_digest(
            REPO,
            tag,
            &format!("2024-01-0{}T00:00:00Z", i + 1),
        ));
    }
    let d = |i: usize| digests[i].as_str();
    push_signature(&reg, &signer, "ed", d(1), d(1), Layout::ReferrersTag);
    push_signature(&reg, &signer, "rsa", d(2), d(2), Layout::SigTag);
    push_signature(&reg, &signer, "stranger", d(3), d(3), Layout::SigTag);
    push_signature(&reg, &signer, "ecdsa", d(4), d(1), Layout::SigTag);

    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = cfg_dir.path().join("imagebump.yaml");
    fs::write(
        &cfg,
        format!("registries:\n- prefix: {HOST}\n  url: {}\n", reg.base_url()),
    )
    .unwrap();
    let all = [ecdsa.as_path(), ed.as_path(), rsa.as_path()];
    let (verdicts, report) = tags_verdicts(&cfg, &all, 0);
    // cosign's own tags are listed too: three `.sig` tags and one referrers fallback tag.
    let (cosign_tags, verdicts): (Vec<String>, Vec<String>) =
        verdicts.into_iter().partition(|v| v.starts_with("sha256-"));
    assert_eq!(cosign_tags.len(), 4, "{cosign_tags:?}");
    assert!(
        cosign_tags.iter().all(|v| v.ends_with(
            ": a signature, attestation or SBOM stored as a tag (sha256-<digest>…), not an image version"
        )),
        "{cosign_tags:?}"
    );
    assert_eq!(
        verdicts,
        [
            "1.5.0: not verified: unsigned (no cosign signature)".to_string(),
            format!(
                "1.4.0: not verified: the signature is for another image ({})",
                d(1)
            ),
            "1.3.0: not verified: 1 signature(s), none by ecdsa.pub, ed.pub, rsa.pub".into(),
            "1.2.0: chosen".into(),
            "1.1.0: passed the tag filters; not examined further (a better tag qualified)".into(),
            "1.0.0: the current tag".into(),
        ]
    );
    assert_eq!(report["chosen"], json!("1.2.0"));
    assert_eq!(report["digest"], json!(d(2)));
    let signer_of = report["signer"].as_str().unwrap();
    assert!(
        signer_of.starts_with("key rsa.pub (rsa sha256:"),
        "{signer_of}"
    );
    assert!(signer_of.ends_with(") (sig tag)"), "{signer_of}");

    // Only the Ed25519 key: the RSA signature is now a stranger's, and 1.1.0's signature in
    // the referrers fallback tag verifies.
    let (verdicts, report) = tags_verdicts(&cfg, &[&ed], 0);
    assert_eq!(
        verdicts[3],
        "1.2.0: not verified: 1 signature(s), none by ed.pub"
    );
    assert_eq!(verdicts[4], "1.1.0: chosen");
    assert_eq!(report["chosen"], json!("1.1.0"));
    assert!(report["signer"]
        .as_str()
        .unwrap()
        .ends_with(" (referrers tag)"));
}

/// Forwards every request to the real registry, except the referrers API, which it answers
/// from `referrers` (digest → index), or with `status` when set.
struct Proxy {
    registry: String,
    referrers: Vec<(String, Vec<u8>)>,
    status: Option<u16>,
}

impl Respond for Proxy {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let path = request.url.path();
        if let Some(digest) = path.strip_prefix(&format!("/v2/{REPO}/referrers/")) {
            if let Some(status) = self.status {
                return ResponseTemplate::new(status);
            }
            let index = self.referrers.iter().find(|(d, _)| d == digest);
            return match index {
                Some((_, body)) => ResponseTemplate::new(200)
                    .insert_header("Content-Type", OCI_INDEX)
                    .set_body_bytes(body.clone()),
                None => ResponseTemplate::new(200)
                    .insert_header("Content-Type", OCI_INDEX)
                    .set_body_bytes(referrers_index(&[], SIG_ARTIFACT)),
            };
        }
        forward(&self.registry, request)
    }
}

/// `request` sent to the plain-HTTP registry at `addr` (HTTP/1.0, so the body ends with
/// the connection).
fn forward(addr: &str, request: &Request) -> ResponseTemplate {
    let mut target = request.url.path().to_string();
    if let Some(q) = request.url.query() {
        target = format!("{target}?{q}");
    }
    let mut stream = TcpStream::connect(addr).unwrap();
    let accept = request
        .headers
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("*/*");
    write!(
        stream,
        "{} {target} HTTP/1.0\r\nHost: {addr}\r\nAccept: {accept}\r\n\r\n",
        request.method
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let body = raw[split + 4..].to_vec();
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let mut out = ResponseTemplate::new(status);
    for line in lines {
        let (name, value) = line.split_once(':').unwrap();
        let name = name.trim().to_ascii_lowercase();
        if ["content-type", "docker-content-digest"].contains(&name.as_str()) {
            out = out.insert_header(name.as_str(), value.trim());
        }
    }
    out.set_body_bytes(body)
}

/// The OCI 1.1 referrers API: a signature listed there verifies with one referrers request,
/// one manifest and one blob.
#[tokio::test(flavor = "multi_thread")]
async fn the_referrers_api_is_read_first() {
    let reg = Registry::start(RegistryMode::Plain);
    let signer = Signer::new();
    let key = signer.keygen("ecdsa-p256", "cosign");
    reg.push_tag_created_digest(REPO, "1.0.0", "2024-01-01T00:00:00Z");
    let signed = reg.push_tag_created_digest(REPO, "1.1.0", "2024-02-01T00:00:00Z");
    let sig = push_signature(&reg, &signer, "cosign", &signed, &signed, Layout::Referrer);
    let proxy = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(Proxy {
            registry: format!("127.0.0.1:{}", reg.port()),
            referrers: vec![(signed.clone(), referrers_index(&[&sig], SIG_ARTIFACT))],
            status: None,
        })
        .mount(&proxy)
        .await;
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = operator_config(cfg_dir.path(), &proxy.uri(), &[&key]);
    let dir = tree(&[("deploy.yaml", pod("1.0.0"))]);
    let run = imagebump()
        .args(["run", "--dry-run", "--output", "json"])
        .arg(dir.path())
        .arg("--config")
        .arg(&cfg)
        .run_async()
        .await;
    let report = run.json();
    assert_eq!(report["errors"], json!([]), "{run}");
    assert_eq!(report["updates"][0]["to"], json!("1.1.0"));
    // For the platforms, 1.0.0's and 1.1.0's manifests and configs (1.1.0's digest comes
    // with its manifest); the referrers index, the signature manifest; the payload blob.
    assert_eq!(report["requests"], requests(4, 3));
}

/// Pushes a Sigstore bundle (v0.3, DSSE) signing `digest` with key `key` (`keyless`: with a
/// certificate instead) as a referrer manifest; returns the manifest's bytes.
fn push_bundle(reg: &Registry, signer: &Signer, key: &str, digest: &str, mode: &str) -> Vec<u8> {
    let private = signer.dir.path().join(format!("{key}.key"));
    let bundle = signer.call(&[
        "bundle",
        private.to_str().unwrap(),
        digest,
        &format!("{HOST}/{REPO}"),
        mode,
    ]);
    let media = BUNDLE_ARTIFACT;
    let (blob, size) = reg.push_blob(REPO, bundle.as_bytes());
    let (config, config_size) = reg.push_blob(REPO, b"{}");
    let manifest = json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": media,
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": config, "size": config_size},
        "layers": [{"mediaType": media, "digest": blob, "size": size}]
    })
    .to_string()
    .into_bytes();
    reg.put_manifest(REPO, &sha256_digest(&manifest), OCI_MANIFEST, &manifest);
    manifest
}

/// A key-signed Sigstore bundle without a transparency-log entry (`cosign sign --key
/// --tlog-upload=false`) verifies by key; a keyless bundle is refused with the reason when
/// the operator names keys only (tests/keyless.rs verifies keyless ones).
#[tokio::test(flavor = "multi_thread")]
async fn a_key_signed_bundle_verifies_by_key_and_a_keyless_one_is_refused() {
    let reg = Registry::start(RegistryMode::Plain);
    let signer = Signer::new();
    let key = signer.keygen("ecdsa-p256", "cosign");
    signer.keygen("ecdsa-p256", "ephemeral");
    reg.push_tag_created_digest(REPO, "1.0.0", "2024-01-01T00:00:00Z");
    let keyed = reg.push_tag_created_digest(REPO, "1.1.0", "2024-02-01T00:00:00Z");
    let keyless = reg.push_tag_created_digest(REPO, "1.2.0", "2024-03-01T00:00:00Z");
    let keyed_bundle = push_bundle(&reg, &signer, "cosign", &keyed, "key");
    let keyless_bundle = push_bundle(&reg, &signer, "ephemeral", &keyless, "keyless");
    let proxy = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(Proxy {
            registry: format!("127.0.0.1:{}", reg.port()),
            referrers: vec![
                (
                    keyed.clone(),
                    referrers_index(&[&keyed_bundle], BUNDLE_ARTIFACT),
                ),
                (
                    keyless.clone(),
                    referrers_index(&[&keyless_bundle], BUNDLE_ARTIFACT),
                ),
            ],
            status: None,
        })
        .mount(&proxy)
        .await;
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = cfg_dir.path().join("imagebump.yaml");
    fs::write(
        &cfg,
        format!("registries:\n- prefix: {HOST}\n  url: {}\n", proxy.uri()),
    )
    .unwrap();
    let run = imagebump()
        .args(["tags", &format!("{HOST}/{REPO}:1.0.0"), "--output", "json"])
        .arg("--config")
        .arg(&cfg)
        .arg("--verify-key")
        .arg(&key)
        .run_async()
        .await;
    let report = run.json();
    let verdicts: Vec<String> = report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .take(2)
        .map(|c| {
            format!(
                "{}: {}",
                c["tag"].as_str().unwrap(),
                c["reason"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            "1.2.0: not verified: keyless signature not trusted: verify names no identities to trust",
            "1.1.0: chosen",
        ]
    );
    assert_eq!(report["digest"], json!(keyed));
    assert!(
        report["signer"]
            .as_str()
            .unwrap()
            .ends_with(" (referrers, bundle)"),
        "{report:#}"
    );
}

/// A registry error while fetching signatures is not "unsigned": nothing is proposed for the
/// image, the run exits 1, and the files are left as they were.
#[tokio::test(flavor = "multi_thread")]
async fn signatures_that_cannot_be_read_fail_closed() {
    let reg = Registry::start(RegistryMode::Plain);
    let signer = Signer::new();
    let key = signer.keygen("ecdsa-p256", "cosign");
    reg.push_tag_created_digest(REPO, "1.0.0", "2024-01-01T00:00:00Z");
    let signed = reg.push_tag_created_digest(REPO, "1.1.0", "2024-02-01T00:00:00Z");
    push_signature(&reg, &signer, "cosign", &signed, &signed, Layout::SigTag);
    let proxy = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(Proxy {
            registry: format!("127.0.0.1:{}", reg.port()),
            referrers: Vec::new(),
            status: Some(403),
        })
        .mount(&proxy)
        .await;
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = operator_config(cfg_dir.path(), &proxy.uri(), &[&key]);
    let before = pod("1.0.0");
    let dir = tree(&[("deploy.yaml", before.as_str())]);
    let run = imagebump()
        .args(["run", "--write", "--output", "json"])
        .arg(dir.path())
        .arg("--config")
        .arg(&cfg)
        .code(1)
        .run_async()
        .await;
    let report = run.json();
    assert_eq!(report["updates"], json!([]), "{run}");
    let errors = messages(&report, "errors");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with(&format!("{HOST}/{REPO}: signatures of {signed}: ")),
        "{errors:?}"
    );
    assert!(errors[0].contains("403"), "{errors:?}");
    assert_eq!(
        fs::read_to_string(dir.path().join("deploy.yaml")).unwrap(),
        before
    );
}

/// Trust roots are the operator's: the repository's own imagebump.yaml and its inline
/// markers may not set `verify`, and a repository rule matching first does not switch the
/// operator's `verify` off. A key that cannot be read is a configuration error.
#[test]
fn the_repository_cannot_choose_or_drop_the_keys() {
    let reg = Registry::start(RegistryMode::Plain);
    let signer = Signer::new();
    let key = signer.keygen("ecdsa-p256", "cosign");
    reg.push_tag_created_digest(REPO, "1.0.0", "2024-01-01T00:00:00Z");
    reg.push_tag_created_digest(REPO, "1.1.0", "2024-02-01T00:00:00Z");
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = operator_config(cfg_dir.path(), &reg.base_url(), &[&key]);

    let own =
        "images:\n- match: registry.test/**\n  constraint: ^1\n  verify:\n    keys: [evil.pub]\n";
    let dir = tree(&[
        ("deploy.yaml", pod("1.0.0")),
        ("imagebump.yaml", own.to_string()),
    ]);
    let run = dry_run(dir.path(), &cfg).code(2).run();
    assert!(
        run.stderr.contains("imagebump.yaml:5:")
            && run
                .stderr
                .contains("images[0].verify can only be set in the operator's configuration"),
        "{run}"
    );

    // A repository rule without `verify` matches first: the operator's still applies, so the
    // unsigned 1.1.0 is refused.
    fs::write(
        dir.path().join("imagebump.yaml"),
        "images:\n- match: registry.test/**\n  constraint: ^1\n",
    )
    .unwrap();
    let run = imagebump()
        .args(["run", "--dry-run", "--output", "json"])
        .arg(dir.path())
        .arg("--config")
        .arg(&cfg)
        .run();
    let report = run.json();
    assert_eq!(report["updates"], json!([]), "{run}");
    assert_eq!(
        messages(&report, "warnings"),
        [format!(
            "{HOST}/{REPO}: 1.1.0 not proposed: unsigned (no cosign signature)"
        )]
    );

    // A marker cannot set it either.
    fs::remove_file(dir.path().join("imagebump.yaml")).unwrap();
    let marked = pod("1.0.0").replace(
        ":1.0.0\n",
        ":1.0.0 # imagebump: {\"verify\": {\"keys\": [\"x.pub\"]}}\n",
    );
    fs::write(dir.path().join("deploy.yaml"), &marked).unwrap();
    let run = dry_run(dir.path(), &cfg).code(1).run();
    assert!(
        run.stderr
            .contains("verify can only be set in the operator's configuration"),
        "{run}"
    );

    // The operator's key file missing: exit 2, naming the file and line.
    fs::remove_file(cfg_dir.path().join("cosign.pub")).unwrap();
    let run = dry_run(dir.path(), &cfg).code(2).run();
    assert!(run.stderr.contains("operator.yaml:7:"), "{run}");
    assert!(run.stderr.contains("cosign.pub"), "{run}");
}

/// argocd-image-updater 1.3's `imagesVerification` in an `ImageUpdater` of the repository:
/// imagebump verifies those images too, with the operator's keys (the cosignKey secret is a
/// cluster secret it does not read). Without operator keys the image fails closed; the
/// repository's `enabled: false` does not switch the operator's `verify` off.
#[test]
fn argocd_image_updater_images_verification_is_honoured_with_the_operators_keys() {
    let reg = Registry::start(RegistryMode::Plain);
    let signer = Signer::new();
    let key = signer.keygen("ecdsa-p256", "cosign");
    reg.push_tag_created_digest(REPO, "1.0.0", "2024-01-01T00:00:00Z");
    let signed = reg.push_tag_created_digest(REPO, "1.1.0", "2024-02-01T00:00:00Z");
    reg.push_tag_created_digest(REPO, "1.2.0", "2024-03-01T00:00:00Z");
    push_signature(&reg, &signer, "cosign", &signed, &signed, Layout::SigTag);
    let app = format!("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\nspec:\n  source:\n    path: apps/web\n    kustomize:\n      images:\n      - {HOST}/{REPO}:1.0.0\n");
    let updater = |image_level: &str| {
        format!("apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\nmetadata:\n  name: iu\n  namespace: argocd\nspec:\n  imagesVerification:\n    cosignKey:\n      secretName: web-cosign\n      key: cosign.pub\n  applicationRefs:\n  - namePattern: web\n    images:\n    - alias: web\n      imageName: {HOST}/{REPO}\n{image_level}")
    };
    let dir = tree(&[
        ("argocd/web.yaml", app),
        ("argocd/iu.yaml", updater("")),
        ("apps/web/kustomization.yaml", "resources: []\n".to_string()),
    ]);
    let run_with = |cfg: &Path, code: i32| {
        let run = imagebump()
            .args(["run", "--dry-run", "--output", "json"])
            .arg(dir.path())
            .arg("--config")
            .arg(cfg)
            .code(code)
            .run();
        run.json()
    };

    // No keys in the operator's configuration: nothing proposed, an error, exit 1.
    let plain_dir = tempfile::tempdir().unwrap();
    let plain = plain_dir.path().join("operator.yaml");
    fs::write(
        &plain,
        format!("registries:\n- prefix: {HOST}\n  url: {}\n", reg.base_url()),
    )
    .unwrap();
    let report = run_with(&plain, 1);
    assert_eq!(report["updates"], json!([]));
    let errors = messages(&report, "errors");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("signature verification is required (argocd-image-updater imagesVerification), but the operator's configuration names no verify.keys"),
        "{errors:?}"
    );

    // The operator's keys: the signed 1.1.0 is proposed, the unsigned 1.2.0 refused.
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = operator_config(cfg_dir.path(), &reg.base_url(), &[&key]);
    let report = run_with(&cfg, 0);
    assert_eq!(report["updates"][0]["to"], json!("1.1.0"), "{report:#}");
    assert_eq!(report["updates"][0]["verified"]["digest"], json!(signed));

    // `enabled: false` on the image opts out of AIU's check, not of the operator's.
    fs::write(
        dir.path().join("argocd/iu.yaml"),
        updater("      imagesVerification:\n        enabled: false\n"),
    )
    .unwrap();
    let report = run_with(&cfg, 0);
    assert_eq!(report["updates"][0]["to"], json!("1.1.0"), "{report:#}");
    let report = run_with(&plain, 0);
    assert_eq!(report["updates"][0]["to"], json!("1.2.0"), "{report:#}");
}
