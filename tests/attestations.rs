//! `verify.attestations`: attestation gates end to end. A real `docker-registry` holds
//! images signed and attested by an independent signer (tests/support/cosign_signer.py, on
//! PyPI's `cryptography`): DSSE envelopes in cosign's `sha256-<hex>.att` tag, DSSE
//! referrers listed in the referrers fallback tag, and Sigstore bundles served by the OCI
//! 1.1 referrers API (a wiremock proxy in front of the registry answers it). Each test
//! asserts every candidate's verdict, the chosen version and the gates it passed.

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
use support::cli::imagebump;
use support::{sha256_digest, tree, Registry, RegistryMode, OCI_CONFIG, OCI_INDEX, OCI_MANIFEST};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const HOST: &str = "registry.test";
const REPO: &str = "team/web";
const DSSE: &str = "application/vnd.dsse.envelope.v1+json";
const BUNDLE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
const SLSA_V1: &str = "https://slsa.dev/provenance/v1";
const SLSA_V02: &str = "https://slsa.dev/provenance/v0.2";
const SPDX: &str = "https://spdx.dev/Document";
const VULN: &str = "https://cosign.sigstore.dev/attestation/vuln/v1";
const BUILDER: &str = "https://github.com/slsa-framework/slsa-github-generator/.github/workflows/generator_container_slsa3.yml@refs/tags/v2.0.0";
const GITHUB: &str = "https://token.actions.githubusercontent.com";
const RELEASE: &str = "https://github.com/acme/web/.github/workflows/release.yml@refs/tags/v1.2.0";

/// The independent signer: keys, signatures and attestations from Python's `cryptography`.
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

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn call(&self, args: &[&str]) -> String {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/cosign_signer.py");
        let out = Command::new(&self.python)
            .arg(script)
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

    /// A new ECDSA P-256 key pair named `name`; returns the public key's path.
    fn keygen(&self, name: &str) -> PathBuf {
        let private = self.path(&format!("{name}.key"));
        let public = self.path(&format!("{name}.pub"));
        self.call(&[
            "keygen",
            "ecdsa-p256",
            private.to_str().unwrap(),
            public.to_str().unwrap(),
        ]);
        public
    }

    /// The simple-signing payload for `digest` and its signature by key `name`.
    fn sign(&self, name: &str, digest: &str) -> (Vec<u8>, String) {
        let payload = self.call(&["payload", digest, &format!("{HOST}/{REPO}")]);
        let file = self.path("payload.json");
        fs::write(&file, &payload).unwrap();
        let private = self.path(&format!("{name}.key"));
        let sig = self.call(&["sign", private.to_str().unwrap(), file.to_str().unwrap()]);
        (payload.into_bytes(), sig)
    }

    /// An attestation of `digest` by key `key` (`command`: `attest` for a bare DSSE
    /// envelope, `attest-bundle` for a Sigstore bundle).
    fn attest(
        &self,
        command: &str,
        key: &str,
        digest: &str,
        kind: &str,
        predicate: &Value,
    ) -> String {
        let file = self.path("predicate.json");
        fs::write(&file, predicate.to_string()).unwrap();
        let private = self.path(&format!("{key}.key"));
        let reference = format!("{HOST}/{REPO}");
        self.call(&[
            command,
            private.to_str().unwrap(),
            digest,
            &reference,
            kind,
            file.to_str().unwrap(),
        ])
    }
}

/// Pushes `name`'s cosign signature of `digest` to its `.sig` tag.
fn push_signature(reg: &Registry, signer: &Signer, name: &str, digest: &str) {
    let (payload, sig) = signer.sign(name, digest);
    let (payload_digest, payload_size) = reg.push_blob(REPO, &payload);
    let (config_digest, config_size) = reg.push_blob(REPO, b"{}");
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": config_size},
        "layers": [{
            "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
            "digest": payload_digest, "size": payload_size,
            "annotations": {"dev.cosignproject.cosign/signature": sig}
        }]
    });
    let tag = format!("{}.sig", digest.replacen(':', "-", 1));
    reg.put_manifest(REPO, &tag, OCI_MANIFEST, manifest.to_string().as_bytes());
}

/// A manifest of `layers` (blob bytes, media type, predicate type) as cosign writes
/// attestations, with `artifact_type` when it is a referrer.
fn attestation_manifest(
    reg: &Registry,
    layers: &[(String, &str, &str)],
    artifact_type: Option<&str>,
) -> Vec<u8> {
    let (config_digest, config_size) = reg.push_blob(REPO, b"{}");
    let layers: Vec<Value> = layers
        .iter()
        .map(|(blob, media_type, kind)| {
            let (digest, size) = reg.push_blob(REPO, blob.as_bytes());
            json!({"mediaType": media_type, "digest": digest, "size": size, "annotations": {
                "dev.cosignproject.cosign/signature": "", "predicateType": kind}})
        })
        .collect();
    let mut manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": config_size},
        "layers": layers,
    });
    if let Some(a) = artifact_type {
        manifest["artifactType"] = json!(a);
    }
    let body = manifest.to_string().into_bytes();
    reg.put_manifest(REPO, &sha256_digest(&body), OCI_MANIFEST, &body);
    body
}

/// Pushes DSSE envelopes to cosign's `sha256-<hex>.att` tag of `digest`.
fn push_att(reg: &Registry, digest: &str, envelopes: &[(String, &str)]) {
    let layers: Vec<(String, &str, &str)> = envelopes
        .iter()
        .map(|(e, kind)| (e.clone(), DSSE, *kind))
        .collect();
    let body = attestation_manifest(reg, &layers, None);
    let tag = format!("{}.att", digest.replacen(':', "-", 1));
    reg.put_manifest(REPO, &tag, OCI_MANIFEST, &body);
}

/// An OCI index listing `manifests` as referrers of `artifact_type`.
fn referrers_index(manifests: &[(&[u8], &str)]) -> Vec<u8> {
    let list: Vec<Value> = manifests
        .iter()
        .map(|(m, kind)| {
            json!({"mediaType": OCI_MANIFEST, "digest": sha256_digest(m), "size": m.len(),
                "artifactType": kind})
        })
        .collect();
    json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": list})
        .to_string()
        .into_bytes()
}

fn provenance(source: &str, reference: &str) -> Value {
    json!({
        "buildDefinition": {
            "buildType": "https://slsa-framework.github.io/github-actions-buildtypes/workflow/v1",
            "externalParameters": {"workflow": {
                "ref": reference, "repository": source, "path": ".github/workflows/release.yml"}},
            "resolvedDependencies": [{"uri": format!("git+{source}@{reference}")}]
        },
        "runDetails": {"builder": {"id": BUILDER}}
    })
}

fn trivy(findings: &[(&str, &str)]) -> Value {
    let list: Vec<Value> = findings
        .iter()
        .map(|(id, severity)| json!({"VulnerabilityID": id, "Severity": severity}))
        .collect();
    json!({"scanner": {"uri": "pkg:github/aquasecurity/trivy", "version": "0.50.0",
        "result": {"Results": [{"Target": "web", "Vulnerabilities": list}]}}})
}

const GATES: &str = "    attestations:
      provenance:
        builderId: https://github.com/slsa-framework/slsa-github-generator/.github/workflows/generator_container_slsa3.yml@refs/tags/v2.0.0
        sourceRepository: https://github.com/acme/web
        refRegExp: ^refs/tags/v
        workflow: .github/workflows/release.yml
      sbom: true
      vulnerabilities:
        maxSeverity: high
        allowCves: [CVE-2024-0002]
";

/// An operator configuration sending `registry.test` to `url`, verifying `team/web` with
/// `verify` (YAML lines under `verify:`).
fn operator_config(dir: &Path, url: &str, verify: &str) -> PathBuf {
    let path = dir.join("operator.yaml");
    fs::write(
        &path,
        format!(
            "registries:\n- prefix: {HOST}\n  url: {url}\nimages:\n- match: {HOST}/team/*\n  verify:\n{verify}"
        ),
    )
    .unwrap();
    path
}

/// `imagebump tags registry.test/team/web:1.0.0` as JSON: the report and each candidate's
/// verdict (cosign's own tags left out).
fn tags(cfg: &Path) -> (Value, Vec<String>) {
    let run = imagebump()
        .args(["tags", &format!("{HOST}/{REPO}:1.0.0"), "--output", "json"])
        .arg("--config")
        .arg(cfg)
        .run();
    let report = run.json();
    let verdicts = report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["tag"].as_str().unwrap().starts_with("sha256-"))
        .map(|c| {
            format!(
                "{}: {}",
                c["tag"].as_str().unwrap(),
                c["reason"].as_str().unwrap()
            )
        })
        .collect();
    (report, verdicts)
}

/// Six signed versions, newest first: no attestation; a provenance by a stranger's key; a
/// provenance naming another image; a provenance from another repository; a critical
/// vulnerability; and one passing every gate (its SBOM a DSSE referrer in the referrers
/// fallback tag, the rest in the `.att` tag), which is chosen.
struct Versions {
    reg: Registry,
    digests: Vec<String>,
    cfg_dir: tempfile::TempDir,
    cfg: PathBuf,
}

fn versions() -> Versions {
    let reg = Registry::start(RegistryMode::Plain);
    let signer = Signer::new();
    let key = signer.keygen("cosign");
    signer.keygen("stranger");
    let mut digests = Vec::new();
    for (i, tag) in [
        "1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0",
    ]
    .iter()
    .enumerate()
    {
        let created = format!("2024-01-0{}T00:00:00Z", i + 1);
        digests.push(reg.push_tag_created_digest(REPO, tag, &created));
    }
    for d in &digests[1..] {
        push_signature(&reg, &signer, "cosign", d);
    }
    let good = provenance("https://github.com/acme/web", "refs/tags/v1.1.0");
    let att = |key: &str, d: &str, kind: &str, p: &Value| signer.attest("attest", key, d, kind, p);
    let d = |i: usize| digests[i].as_str();
    // 1.1.0: everything, the SBOM as a DSSE referrer in the fallback tag.
    let clean = trivy(&[("CVE-2024-0002", "CRITICAL"), ("CVE-2024-0003", "HIGH")]);
    push_att(
        &reg,
        d(1),
        &[
            (att("cosign", d(1), SLSA_V1, &good), SLSA_V1),
            (att("cosign", d(1), VULN, &clean), VULN),
        ],
    );
    let sbom = att("cosign", d(1), SPDX, &json!({"spdxVersion": "SPDX-2.3"}));
    let referrer = attestation_manifest(&reg, &[(sbom, DSSE, SPDX)], Some(DSSE));
    let index = referrers_index(&[(&referrer, DSSE)]);
    let fallback = d(1).replacen(':', "-", 1);
    reg.put_manifest(REPO, &fallback, OCI_INDEX, &index);
    // 1.2.0: a critical vulnerability outside the allow-list.
    let sbom2 = att("cosign", d(2), SPDX, &json!({}));
    let critical = trivy(&[("CVE-2024-0001", "CRITICAL")]);
    push_att(
        &reg,
        d(2),
        &[
            (att("cosign", d(2), SLSA_V1, &good), SLSA_V1),
            (sbom2, SPDX),
            (att("cosign", d(2), VULN, &critical), VULN),
        ],
    );
    // 1.3.0: built from another repository (SLSA v0.2).
    let v02 = json!({"builder": {"id": BUILDER}, "invocation": {"configSource": {
        "uri": "git+https://github.com/evil/web@refs/tags/v1.3.0",
        "entryPoint": ".github/workflows/release.yml"}}});
    push_att(
        &reg,
        d(3),
        &[(att("cosign", d(3), SLSA_V02, &v02), SLSA_V02)],
    );
    // 1.4.0: a good provenance, but of 1.1.0's digest.
    push_att(
        &reg,
        d(4),
        &[(att("cosign", d(1), SLSA_V1, &good), SLSA_V1)],
    );
    // 1.5.0: a good provenance signed by a key nobody trusts.
    push_att(
        &reg,
        d(5),
        &[(att("stranger", d(5), SLSA_V1, &good), SLSA_V1)],
    );
    let cfg_dir = tempfile::tempdir().unwrap();
    fs::copy(&key, cfg_dir.path().join("cosign.pub")).unwrap();
    let verify = format!("    keys: [cosign.pub]\n{GATES}");
    let cfg = operator_config(cfg_dir.path(), &reg.base_url(), &verify);
    Versions {
        reg,
        digests,
        cfg_dir,
        cfg,
    }
}

#[test]
fn tags_drops_each_candidate_failing_a_gate_and_names_the_gate() {
    let v = versions();
    let (report, verdicts) = tags(&v.cfg);
    let d = |i: usize| v.digests[i].as_str();
    assert_eq!(
        verdicts,
        [
            "1.6.0: not verified: attestation gate provenance failed: no signed SLSA provenance attestation".to_string(),
            "1.5.0: not verified: attestation gate provenance failed: no signed SLSA provenance attestation (1 ignored; att tag: an attestation signed by none of the keys)".into(),
            format!("1.4.0: not verified: attestation gate provenance failed: no signed SLSA provenance attestation (1 ignored; att tag: https://slsa.dev/provenance/v1 attestation for another image ({}))", d(1)),
            "1.3.0: not verified: attestation gate provenance failed: source https://github.com/evil/web, not https://github.com/acme/web".into(),
            "1.2.0: not verified: attestation gate vulnerabilities failed: CVE-2024-0001 is critical, above high".into(),
            "1.1.0: chosen".into(),
            "1.0.0: the current tag".into(),
        ],
        "{report:#}"
    );
    assert_eq!(report["chosen"], json!("1.1.0"));
    assert_eq!(report["digest"], json!(d(1)));
    let signer = report["signer"].as_str().unwrap();
    assert!(
        signer.starts_with("key cosign.pub (ecdsa-p256 sha256:"),
        "{signer}"
    );
    let by = &signer[..signer.find(") (").unwrap() + 1];
    assert_eq!(
        report["gates"],
        json!([
            format!("provenance: builder {BUILDER}, source https://github.com/acme/web, ref refs/tags/v1.1.0, workflow .github/workflows/release.yml, signed by {by}"),
            format!("sbom: SPDX, signed by {by}"),
            format!("vulnerabilities: 1 report(s), nothing above high but CVE-2024-0002 (allowed), signed by {by}"),
        ])
    );
    drop(v.cfg_dir);
}

/// A run proposes the attested version; the report's `verified.gates` says which gates it
/// passed, and the refused newer versions are run warnings naming the gate.
#[test]
fn a_run_records_the_gates_the_chosen_version_passed() {
    let v = versions();
    let dir = tree(&[("deploy.yaml", &pod("1.0.0"))]);
    let run = imagebump()
        .args(["run", "--dry-run", "--output", "json"])
        .arg(dir.path())
        .arg("--config")
        .arg(&v.cfg)
        .run();
    let report = run.json();
    assert_eq!(report["errors"], json!([]), "{run}");
    assert_eq!(report["updates"][0]["to"], json!("1.1.0"), "{report:#}");
    let gates: Vec<String> = report["updates"][0]["verified"]["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap().split(':').next().unwrap().to_string())
        .collect();
    assert_eq!(gates, ["provenance", "sbom", "vulnerabilities"]);
    // Each candidate: HEAD for its digest, its `.sig` manifest and payload; the first also
    // the referrers API (404: not asked again). Then its listed attestation tags, each
    // envelope one blob: 1.6.0 none; 1.5.0, 1.4.0, 1.3.0 the `.att` manifest and one
    // envelope; 1.2.0 the `.att` manifest and three; 1.1.0 the fallback tag's index (read
    // once, for signatures and attestations alike), its referrer and one envelope, the
    // `.att` manifest and two. The platform check adds the current version's manifest and
    // the config of each single-platform image it compares (the current and six candidates).
    assert_eq!(
        report["requests"],
        json!({"tagListPages": 1, "tokens": 0, "manifests": 21, "blobs": 22, "retries": 0})
    );
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["message"].as_str().unwrap())
        .collect();
    assert_eq!(warnings.len(), 5, "{warnings:?}");
    assert_eq!(
        warnings[0],
        "1.6.0 not proposed: attestation gate provenance failed: no signed SLSA provenance attestation"
    );
    drop(v.reg);
}

fn pod(version: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n    image: {HOST}/{REPO}:{version}\n"
    )
}

/// Forwards every request to the real registry, except the referrers API, which it answers
/// from `referrers` (digest → index).
struct Proxy {
    registry: String,
    referrers: Vec<(String, Vec<u8>)>,
}

impl Respond for Proxy {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let path = request.url.path();
        if let Some(digest) = path.strip_prefix(&format!("/v2/{REPO}/referrers/")) {
            let index = self.referrers.iter().find(|(d, _)| d == digest);
            let body = index.map_or_else(|| referrers_index(&[]), |(_, b)| b.clone());
            return ResponseTemplate::new(200)
                .insert_header("Content-Type", OCI_INDEX)
                .set_body_bytes(body);
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

/// Keyless attestations in Sigstore bundles served by the referrers API: the provenance
/// of an allowed identity passes, one by an identity the policy does not allow is ignored,
/// and a key-signed bundle verifies by key.
#[tokio::test(flavor = "multi_thread")]
async fn keyless_bundles_from_the_referrers_api() {
    let reg = Registry::start(RegistryMode::Plain);
    let signer = Signer::new();
    let key = signer.keygen("cosign");
    for (command, dir) in [("ca", "fulcio"), ("rekor", "rekor")] {
        signer.call(&[command, signer.path(dir).to_str().unwrap()]);
    }
    let root = signer.call(&[
        "trusted-root",
        signer.path("fulcio").to_str().unwrap(),
        signer.path("rekor").to_str().unwrap(),
    ]);
    reg.push_tag_created_digest(REPO, "1.0.0", "2024-01-01T00:00:00Z");
    let good = reg.push_tag_created_digest(REPO, "1.1.0", "2024-01-02T00:00:00Z");
    let other = reg.push_tag_created_digest(REPO, "1.2.0", "2024-01-03T00:00:00Z");
    let keyless = |digest: &str, subject: &str| {
        let file = signer.path("predicate.json");
        let p = provenance("https://github.com/acme/web", "refs/tags/v1.2.0");
        fs::write(&file, p.to_string()).unwrap();
        let (fulcio, rekor) = (signer.path("fulcio"), signer.path("rekor"));
        let reference = format!("{HOST}/{REPO}");
        signer.call(&[
            "attest-keyless",
            fulcio.to_str().unwrap(),
            rekor.to_str().unwrap(),
            digest,
            &reference,
            subject,
            GITHUB,
            SLSA_V1,
            file.to_str().unwrap(),
        ])
    };
    let mut referrers = Vec::new();
    for (digest, subject) in [(&good, RELEASE), (&other, "https://github.com/evil/x")] {
        push_signature(&reg, &signer, "cosign", digest);
        let bundle = keyless(digest, subject);
        let sbom = signer.attest("attest-bundle", "cosign", digest, SPDX, &json!({}));
        let manifests = [
            attestation_manifest(&reg, &[(bundle, BUNDLE, SLSA_V1)], Some(BUNDLE)),
            attestation_manifest(&reg, &[(sbom, BUNDLE, SPDX)], Some(BUNDLE)),
        ];
        let index = referrers_index(&[(&manifests[0], BUNDLE), (&manifests[1], BUNDLE)]);
        referrers.push((digest.clone(), index));
    }
    let proxy = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(Proxy {
            registry: format!("127.0.0.1:{}", reg.port()),
            referrers,
        })
        .mount(&proxy)
        .await;
    let cfg_dir = tempfile::tempdir().unwrap();
    fs::copy(&key, cfg_dir.path().join("cosign.pub")).unwrap();
    fs::write(cfg_dir.path().join("trusted_root.json"), root).unwrap();
    let verify = format!(
        "    keys: [cosign.pub]\n    identities:\n    - issuer: {GITHUB}\n      subjectRegExp: ^https://github\\.com/acme/\n    trustedRoot: trusted_root.json\n    attestations:\n      provenance: {{sourceRepository: https://github.com/acme/web}}\n      sbom: true\n"
    );
    let cfg = operator_config(cfg_dir.path(), &proxy.uri(), &verify);
    let cfg2 = cfg.clone();
    let (report, verdicts) = tokio::task::spawn_blocking(move || tags(&cfg2))
        .await
        .unwrap();
    assert_eq!(
        verdicts,
        [
            "1.2.0: not verified: attestation gate provenance failed: no signed SLSA provenance attestation (1 ignored; referrers, bundle: keyless attestation not trusted: signed by https://github.com/evil/x from https://token.actions.githubusercontent.com, not /^https://github\\.com/acme// from https://token.actions.githubusercontent.com)".to_string(),
            "1.1.0: chosen".into(),
            "1.0.0: the current tag".into(),
        ],
        "{report:#}"
    );
    let gates = report["gates"].as_array().unwrap();
    assert_eq!(
        gates[0],
        json!(format!("provenance: builder {BUILDER}, source https://github.com/acme/web, ref refs/tags/v1.2.0, workflow .github/workflows/release.yml, signed by identity {RELEASE} (issuer {GITHUB}, logged 2024-02-01T12:01:00Z)"))
    );
    assert!(gates[1]
        .as_str()
        .unwrap()
        .starts_with("sbom: SPDX, signed by key cosign.pub (ecdsa-p256 sha256:"));
}

/// `imagebump verify IMAGE`: the digest, each signature, each attestation found (verified
/// or ignored, with why), each gate's verdict and the overall verdict; exit 0 only when
/// the image satisfies the operator's policy, 1 when it does not, 2 without a policy.
#[test]
fn verify_prints_every_finding_and_exits_by_the_verdict() {
    let v = versions();
    let d = |i: usize| v.digests[i].clone();
    let verify = |image: String, code: i32| {
        imagebump()
            .arg("verify")
            .arg(image)
            .arg("--config")
            .arg(&v.cfg)
            .filter(r"sha256:[0-9a-f]{16}\)", "sha256:KEY)")
            .code(code)
            .run()
            .filtered_stdout()
    };
    let key = "key cosign.pub (ecdsa-p256 sha256:KEY)";
    assert_eq!(
        verify(format!("{HOST}/{REPO}:1.1.0"), 0),
        format!(
            "image:       {HOST}/{REPO}:1.1.0
digest:      {d1}
signature:   verified, {key} (sig tag)
attestation: https://spdx.dev/Document (referrers tag), signed by {key}
attestation: https://slsa.dev/provenance/v1 (att tag), signed by {key}
attestation: https://cosign.sigstore.dev/attestation/vuln/v1 (att tag), signed by {key}
gate:        provenance passed, builder {BUILDER}, source https://github.com/acme/web, ref refs/tags/v1.1.0, workflow .github/workflows/release.yml, signed by {key}
gate:        sbom passed, SPDX, signed by {key}
gate:        vulnerabilities passed, 1 report(s), nothing above high but CVE-2024-0002 (allowed), signed by {key}
verdict:     satisfies the verify policy
",
            d1 = d(1)
        )
    );
    // By digest: the same image, no tag read.
    let by_digest = verify(format!("{HOST}/{REPO}@{}", d(1)), 0);
    assert!(by_digest.ends_with("verdict:     satisfies the verify policy\n"));
    assert_eq!(
        verify(format!("{HOST}/{REPO}:1.5.0"), 1),
        format!(
            "image:       {HOST}/{REPO}:1.5.0
digest:      {d5}
signature:   verified, {key} (sig tag)
ignored:     att tag: an attestation signed by none of the keys
gate:        provenance failed, no signed SLSA provenance attestation
gate:        sbom failed, no signed SBOM attestation (SPDX or CycloneDX)
gate:        vulnerabilities failed, no signed vulnerability report attestation
verdict:     does not satisfy the verify policy: attestation gate provenance failed: no signed SLSA provenance attestation (1 ignored; att tag: an attestation signed by none of the keys)
",
            d5 = d(5)
        )
    );
    // Unsigned: the gates are judged all the same, the verdict is the signature's.
    let unsigned = verify(format!("{HOST}/{REPO}:1.0.0"), 1);
    assert!(
        unsigned.contains("signatures:  none verifies: unsigned (no cosign signature)\n"),
        "{unsigned}"
    );
    assert!(unsigned.ends_with(
        "verdict:     does not satisfy the verify policy: unsigned (no cosign signature)\n"
    ));
    // An image the configuration gives no verify: a usage error.
    let run = imagebump()
        .args(["verify", "registry.test/other/app:1.0.0", "--config"])
        .arg(&v.cfg)
        .code(2)
        .run();
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "error: registry.test/other/app: the configuration names no verify (keys or identities) for this image; add an images rule with verify (docs/tag-selection.md, Signed images)\n"
    );
}

/// Pushes one DSSE envelope with cosign's keyless `annotations` to the `.att` tag of
/// `digest`.
fn push_keyless_att(reg: &Registry, digest: &str, envelope: &str, annotations: &Value) {
    let (config_digest, config_size) = reg.push_blob(REPO, b"{}");
    let (blob, size) = reg.push_blob(REPO, envelope.as_bytes());
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": DSSE, "digest": blob, "size": size, "annotations": annotations}],
    });
    let tag = format!("{}.att", digest.replacen(':', "-", 1));
    reg.put_manifest(REPO, &tag, OCI_MANIFEST, manifest.to_string().as_bytes());
}

/// `cosign attest`'s legacy keyless layout: a `.att` layer with the certificate, chain and
/// an `intoto` Rekor entry. An allowed identity's provenance passes; another identity's,
/// and an envelope carrying another attestation's log entry, are ignored with why.
#[test]
fn keyless_attestations_in_the_att_tag() {
    let reg = Registry::start(RegistryMode::Plain);
    let signer = Signer::new();
    let key = signer.keygen("cosign");
    for (command, dir) in [("ca", "fulcio"), ("rekor", "rekor")] {
        signer.call(&[command, signer.path(dir).to_str().unwrap()]);
    }
    let (fulcio, rekor) = (signer.path("fulcio"), signer.path("rekor"));
    let root = signer.call(&[
        "trusted-root",
        fulcio.to_str().unwrap(),
        rekor.to_str().unwrap(),
    ]);
    let mut digests = Vec::new();
    for (i, tag) in ["1.0.0", "1.1.0", "1.2.0", "1.3.0"].iter().enumerate() {
        let created = format!("2024-01-0{}T00:00:00Z", i + 1);
        digests.push(reg.push_tag_created_digest(REPO, tag, &created));
    }
    let file = signer.path("predicate.json");
    let p = provenance("https://github.com/acme/web", "refs/tags/v1.2.0");
    fs::write(&file, p.to_string()).unwrap();
    let attest = |digest: &str, subject: &str| -> Value {
        let reference = format!("{HOST}/{REPO}");
        let out = signer.call(&[
            "attest-keyless-att",
            fulcio.to_str().unwrap(),
            rekor.to_str().unwrap(),
            digest,
            &reference,
            subject,
            GITHUB,
            SLSA_V1,
            file.to_str().unwrap(),
        ]);
        serde_json::from_str(&out).unwrap()
    };
    for d in &digests[1..] {
        push_signature(&reg, &signer, "cosign", d);
    }
    let good = attest(&digests[1], RELEASE);
    let envelope = |a: &Value| a["envelope"].as_str().unwrap().to_string();
    push_keyless_att(&reg, &digests[1], &envelope(&good), &good["annotations"]);
    let evil = attest(&digests[2], "https://github.com/evil/x");
    push_keyless_att(&reg, &digests[2], &envelope(&evil), &evil["annotations"]);
    // 1.3.0: its own envelope, with 1.1.0's certificate and log entry.
    let mine = attest(&digests[3], RELEASE);
    push_keyless_att(&reg, &digests[3], &envelope(&mine), &good["annotations"]);

    let cfg_dir = tempfile::tempdir().unwrap();
    fs::copy(&key, cfg_dir.path().join("cosign.pub")).unwrap();
    fs::write(cfg_dir.path().join("trusted_root.json"), root).unwrap();
    let verify = format!(
        "    keys: [cosign.pub]\n    identities:\n    - issuer: {GITHUB}\n      subjectRegExp: ^https://github\\.com/acme/\n    trustedRoot: trusted_root.json\n    attestations:\n      provenance: {{refRegExp: ^refs/tags/}}\n"
    );
    let cfg = operator_config(cfg_dir.path(), &reg.base_url(), &verify);
    let (report, verdicts) = tags(&cfg);
    let failed = "1.x.0: not verified: attestation gate provenance failed: no signed SLSA provenance attestation (1 ignored; att tag: keyless attestation not trusted: ";
    assert_eq!(
        verdicts,
        [
            format!("{}the transparency log entry is for another payload)", failed.replace("1.x.0", "1.3.0")),
            format!("{}signed by https://github.com/evil/x from {GITHUB}, not /^https://github\\.com/acme// from {GITHUB})", failed.replace("1.x.0", "1.2.0")),
            "1.1.0: chosen".into(),
            "1.0.0: the current tag".into(),
        ],
        "{report:#}"
    );
    assert_eq!(
        report["gates"],
        json!([format!("provenance: builder {BUILDER}, source https://github.com/acme/web, ref refs/tags/v1.2.0, workflow .github/workflows/release.yml, signed by identity {RELEASE} (issuer {GITHUB}, logged 2024-02-01T12:01:00Z)")])
    );
}

/// A gate that cannot work is a configuration error at its file, line and key (exit 2).
#[test]
fn a_gate_that_cannot_work_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "provenance: {refRegExp: \"(\"}",
            "op.yaml:6:19: images[0].verify.attestations.provenance: refRegExp: regex parse error:\\u{a}    (\\u{a}    ^\\u{a}error: unclosed group (hint: see docs/tag-selection.md (Signed images))",
        ),
        (
            "sboms: true",
            "op.yaml:6:7: images[0].verify.attestations: unknown field `sboms`, expected one of `provenance`, `sbom`, `vulnerabilities` (hint: see docs/configuration.md for every key)",
        ),
        (
            "vulnerabilities: {maxSeverity: severe}",
            "op.yaml:6:38: images[0].verify.attestations.vulnerabilities.maxSeverity: unknown variant `severe`, expected one of `none`, `low`, `medium`, `high`, `critical` (hint: see docs/configuration.md for every key)",
        ),
    ];
    for (gate, error) in cases {
        let cfg = dir.path().join("op.yaml");
        fs::write(
            &cfg,
            format!("images:\n- match: {HOST}/team/*\n  verify:\n    identities: [{{issuer: x, subject: y}}]\n    attestations:\n      {gate}\n"),
        )
        .unwrap();
        let run = imagebump()
            .args([
                "verify",
                &format!("{HOST}/{REPO}:1.0.0"),
                "--config",
                "op.yaml",
            ])
            .current_dir(dir.path())
            .code(2)
            .run();
        assert_eq!(run.stdout, "");
        assert_eq!(run.stderr, format!("error: {error}\n"));
    }
}

/// The pull request lists each gate the proposed version passed, under its update, with
/// what the attestation said and who signed it (escaped for Markdown).
#[tokio::test(flavor = "multi_thread")]
async fn the_pull_request_names_the_gates_the_version_passed() {
    use support::github::FakeGitHub;
    let v = versions();
    let work = support::make_worktree(&[("deploy.yaml", &pod("1.0.0"))]);
    let server = support::GitServer::http_with_token(work.path(), "gitops", FakeGitHub::TOKEN);
    let forge = FakeGitHub::start().await;
    let run = imagebump()
        .arg("run")
        .arg(server.url())
        .arg("--config")
        .arg(&v.cfg)
        .args(["--forge", "github", "--forge-url"])
        .arg(forge.api_url())
        .arg("--forge-repo")
        .arg(format!("{}/{}", FakeGitHub::OWNER, FakeGitHub::REPO))
        .env("GITHUB_TOKEN", FakeGitHub::TOKEN)
        .run_async()
        .await;
    let pulls = forge.pulls();
    assert_eq!(pulls.len(), 1, "{run}");
    let body = pulls[0].body.clone().unwrap();
    let fingerprint = regex::Regex::new(r"sha256&#58;[0-9a-f]{16}&#41;").unwrap();
    let body = fingerprint.replace_all(&body, "sha256&#58;KEY&#41;");
    let gates: Vec<&str> = body
        .lines()
        .filter(|l| l.starts_with("- Attestation gate passed: "))
        .collect();
    let by = "signed by key cosign&#46;pub &#40;ecdsa&#45;p256 sha256&#58;KEY&#41;";
    assert_eq!(
        gates,
        [
            format!("- Attestation gate passed: provenance&#58; builder https&#58;//github&#46;com/slsa&#45;framework/slsa&#45;github&#45;generator/&#46;github/workflows/generator&#95;container&#95;slsa3&#46;yml&#64;refs/tags/v2&#46;0&#46;0, source https&#58;//github&#46;com/acme/web, ref refs/tags/v1&#46;1&#46;0, workflow &#46;github/workflows/release&#46;yml, {by}"),
            format!("- Attestation gate passed: sbom&#58; SPDX, {by}"),
            format!("- Attestation gate passed: vulnerabilities&#58; 1 report&#40;s&#41;, nothing above high but CVE&#45;2024&#45;0002 &#40;allowed&#41;, {by}"),
        ],
        "{body}"
    );
    // Right after the update's signature line.
    let signature = body.find("- Signature: verified at").unwrap();
    assert!(body[signature..]
        .lines()
        .nth(1)
        .unwrap()
        .starts_with("- Attestation gate passed: provenance"));
}

/// What an attestation says is untrusted text: a builder id with a terminal escape and a
/// line break passes a gate that does not compare it, and is shown escaped by `verify` and
/// `tags`, never as raw control characters.
#[test]
fn attestation_text_is_escaped_on_the_terminal() {
    let reg = Registry::start(RegistryMode::Plain);
    let signer = Signer::new();
    let key = signer.keygen("cosign");
    reg.push_tag_created_digest(REPO, "1.0.0", "2024-01-01T00:00:00Z");
    let d = reg.push_tag_created_digest(REPO, "1.1.0", "2024-01-02T00:00:00Z");
    push_signature(&reg, &signer, "cosign", &d);
    let mut p = provenance("https://github.com/acme/web", "refs/tags/v1.1.0");
    p["runDetails"]["builder"]["id"] = json!("evil\u{1b}[2J\nverdict: fine");
    let envelope = signer.attest("attest", "cosign", &d, SLSA_V1, &p);
    push_att(&reg, &d, &[(envelope, SLSA_V1)]);
    let cfg_dir = tempfile::tempdir().unwrap();
    fs::copy(&key, cfg_dir.path().join("cosign.pub")).unwrap();
    let verify = "    keys: [cosign.pub]\n    attestations:\n      provenance: {sourceRepository: https://github.com/acme/web}\n";
    let cfg = operator_config(cfg_dir.path(), &reg.base_url(), verify);
    let shown = imagebump()
        .args(["verify", &format!("{HOST}/{REPO}:1.1.0"), "--config"])
        .arg(&cfg)
        .run()
        .stdout;
    let gate = shown.lines().find(|l| l.starts_with("gate:")).unwrap();
    assert!(
        gate.starts_with("gate:        provenance passed, builder evil\\u{1b}[2J\\u{a}verdict: fine, source https://github.com/acme/web,"),
        "{shown}"
    );
    assert_eq!(shown.lines().count(), 6, "{shown}");
    let tags = imagebump()
        .args(["tags", &format!("{HOST}/{REPO}:1.0.0"), "--config"])
        .arg(&cfg)
        .run()
        .stdout;
    let gate = tags.lines().find(|l| l.starts_with("gate:")).unwrap();
    assert!(
        gate.starts_with("gate:    provenance: builder evil\\u{1b}[2J\\u{a}verdict: fine,"),
        "{tags}"
    );
    assert!(!shown.contains('\u{1b}') && !tags.contains('\u{1b}'));
}

/// `imagebump verify` lists every signature it finds: one by a key nobody trusts is shown
/// as ignored with why, next to the one that verifies.
#[test]
fn verify_lists_every_signature_found() {
    let reg = Registry::start(RegistryMode::Plain);
    let signer = Signer::new();
    let key = signer.keygen("cosign");
    signer.keygen("stranger");
    let digest = reg.push_tag_created_digest(REPO, "2.0.0", "2024-02-01T00:00:00Z");
    let mut layers = Vec::new();
    for name in ["stranger", "cosign"] {
        let (payload, sig) = signer.sign(name, &digest);
        let (payload_digest, payload_size) = reg.push_blob(REPO, &payload);
        layers.push(json!({
            "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
            "digest": payload_digest, "size": payload_size,
            "annotations": {"dev.cosignproject.cosign/signature": sig}
        }));
    }
    let (config_digest, config_size) = reg.push_blob(REPO, b"{}");
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": config_size},
        "layers": layers,
    });
    let tag = format!("{}.sig", digest.replacen(':', "-", 1));
    reg.put_manifest(REPO, &tag, OCI_MANIFEST, manifest.to_string().as_bytes());
    let cfg_dir = tempfile::tempdir().unwrap();
    fs::copy(&key, cfg_dir.path().join("cosign.pub")).unwrap();
    let cfg = operator_config(cfg_dir.path(), &reg.base_url(), "    keys: [cosign.pub]\n");
    let run = imagebump()
        .args(["verify", &format!("{HOST}/{REPO}:2.0.0"), "--config"])
        .arg(&cfg)
        .filter(r"sha256:[0-9a-f]{16}\)", "sha256:KEY)")
        .run();
    assert_eq!(
        run.filtered_stdout(),
        format!(
            "image:       {HOST}/{REPO}:2.0.0
digest:      {digest}
signature:   ignored (sig tag): signed by none of the keys
signature:   verified, key cosign.pub (ecdsa-p256 sha256:KEY) (sig tag)
verdict:     satisfies the verify policy
"
        )
    );
}
