//! Keyless `verify` end to end. The independent signer (tests/support/cosign_signer.py, on
//! PyPI's `cryptography`) plays Fulcio (a root and an intermediate CA issuing ten-minute
//! certificates with the SAN URI, the OIDC issuer extension and the code-signing EKU) and
//! Rekor (a log key that signs entry timestamps and checkpoints over a real RFC 6962 tree,
//! and Rekor v2 entries without them) and a timestamp authority (RFC 3161 timestamps).
//! A real `docker-registry` holds the signatures in the legacy `.sig` layout (annotations)
//! and as Sigstore bundles v0.3 behind the referrers fallback tag. Each test asserts every
//! candidate's verdict, the signer, and the exact registry requests; no request reaches a
//! log (it is checked offline).

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
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use support::cli::{dry_run, imagebump};
use support::{sha256_digest, tree, Registry, RegistryMode, OCI_CONFIG, OCI_INDEX, OCI_MANIFEST};

const HOST: &str = "registry.test";
const REPO: &str = "team/web";
const GITHUB: &str = "https://token.actions.githubusercontent.com";
const RELEASE: &str = "https://github.com/acme/web/.github/workflows/release.yml@refs/tags/v1.2.0";
const RELEASE_RE: &str =
    r"^https://github\.com/acme/.+/\.github/workflows/release\.yml@refs/tags/.+$";
const BUNDLE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// The test Fulcio and Rekor, and another CA nobody trusts.
struct Sigstore {
    python: PathBuf,
    dir: tempfile::TempDir,
}

impl Sigstore {
    fn new() -> Sigstore {
        let s = Sigstore {
            python: support::ci_python_with_cryptography(),
            dir: tempfile::tempdir().unwrap(),
        };
        for (command, dir) in [("ca", "fulcio"), ("ca", "stranger"), ("rekor", "rekor")] {
            s.call(&[command, s.path(dir).to_str().unwrap()]);
        }
        s
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

    /// The trusted_root.json trusting the test Fulcio and Rekor, written in `dir`.
    fn trusted_root(&self, dir: &Path) -> PathBuf {
        let fulcio = self.path("fulcio");
        let rekor = self.path("rekor");
        let json = self.call(&[
            "trusted-root",
            fulcio.to_str().unwrap(),
            rekor.to_str().unwrap(),
        ]);
        let path = dir.join("trusted_root.json");
        fs::write(&path, json).unwrap();
        path
    }

    /// A keyless signature of `digest` by `subject` from `issuer`, issued by CA `ca`, in
    /// `layout` (`sig` or `bundle`), with the signer's `options`.
    fn sign(
        &self,
        ca: &str,
        layout: &str,
        digest: &str,
        subject: &str,
        issuer: &str,
        options: &[&str],
    ) -> Value {
        let ca = self.path(ca);
        let rekor = self.path("rekor");
        let mut args = vec![
            "keyless",
            ca.to_str().unwrap(),
            rekor.to_str().unwrap(),
            layout,
            digest,
        ];
        let reference = format!("{HOST}/{REPO}");
        args.extend([reference.as_str(), subject, issuer]);
        args.extend(options);
        serde_json::from_str(&self.call(&args)).unwrap()
    }
}

/// Pushes a keyless signature as cosign does in the legacy layout: a `sha256-<hex>.sig`
/// manifest whose simple-signing layer carries the certificate, chain and log entry.
fn push_sig(reg: &Registry, subject_digest: &str, signed: &Value) {
    use base64::Engine as _;
    let payload = base64::engine::general_purpose::STANDARD
        .decode(signed["payload"].as_str().unwrap())
        .unwrap();
    let (payload_digest, payload_size) = reg.push_blob(REPO, &payload);
    let (config_digest, config_size) = reg.push_blob(REPO, b"{}");
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": config_size},
        "layers": [{
            "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
            "digest": payload_digest, "size": payload_size,
            "annotations": signed["annotations"]
        }]
    });
    let hex = subject_digest.strip_prefix("sha256:").unwrap();
    let tag = format!("sha256-{hex}.sig");
    reg.put_manifest(REPO, &tag, OCI_MANIFEST, manifest.to_string().as_bytes());
}

/// Pushes a Sigstore bundle as a referrer of `subject_digest`, listed in the referrers
/// fallback tag `sha256-<hex>` (docker-registry 2.8 has no referrers API).
fn push_bundle(reg: &Registry, subject_digest: &str, signed: &Value) {
    let bundle = signed["bundle"].as_str().unwrap();
    let (blob, size) = reg.push_blob(REPO, bundle.as_bytes());
    let (config, config_size) = reg.push_blob(REPO, b"{}");
    let manifest = json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": BUNDLE,
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": config, "size": config_size},
        "layers": [{"mediaType": BUNDLE, "digest": blob, "size": size}],
        "subject": {"mediaType": OCI_MANIFEST, "digest": subject_digest, "size": 1}
    })
    .to_string()
    .into_bytes();
    reg.put_manifest(REPO, &sha256_digest(&manifest), OCI_MANIFEST, &manifest);
    let index = json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [
        {"mediaType": OCI_MANIFEST, "digest": sha256_digest(&manifest), "size": manifest.len(), "artifactType": BUNDLE}
    ]});
    let hex = subject_digest.strip_prefix("sha256:").unwrap();
    reg.put_manifest(
        REPO,
        &format!("sha256-{hex}"),
        OCI_INDEX,
        index.to_string().as_bytes(),
    );
}

fn registry_config(dir: &Path, url: &str, verify: &str) -> PathBuf {
    let path = dir.join("operator.yaml");
    fs::write(
        &path,
        format!("registries:\n- prefix: {HOST}\n  url: {url}\n{verify}"),
    )
    .unwrap();
    path
}

fn pod(version: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n    image: {HOST}/{REPO}:{version}\n"
    )
}

fn verdicts(report: &Value) -> Vec<String> {
    report["candidates"]
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
        .collect()
}

/// Every way a keyless signature can fail, one candidate each, newest first, as `imagebump
/// tags --verify-identity … --verify-trusted-root …` shows them; the first good one (a
/// bundle v0.3 whose inclusion proof and checkpoint verify) is chosen.
#[test]
fn tags_shows_why_each_keyless_signature_is_trusted_or_not() {
    let reg = Registry::start(RegistryMode::Plain);
    let sigstore = Sigstore::new();
    let tags = [
        "1.0.0", "1.1.0", "1.2.0", "1.2.5", "1.3.0", "1.4.0", "1.5.0", "1.6.0", "1.7.0", "1.8.0",
        "1.9.0",
    ];
    let mut digests = Vec::new();
    for (i, tag) in tags.iter().enumerate() {
        let created = format!("2024-01-{:02}T00:00:00Z", i + 1);
        digests.push(reg.push_tag_created_digest(REPO, tag, &created));
    }
    let d = |tag: &str| digests[tags.iter().position(|t| *t == tag).unwrap()].clone();
    let evil = RELEASE.replace("acme", "evil");
    let signed = format!("signed={}", d("1.1.0"));
    // (tag, CA, layout, subject, issuer, the signer's options)
    type Case<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str, &'a [&'a str]);
    let cases: [Case; 9] = [
        ("1.2.0", "fulcio", "bundle", RELEASE, GITHUB, &[]),
        ("1.2.5", "fulcio", "sig", RELEASE, GITHUB, &["no-tlog"]),
        (
            "1.3.0",
            "fulcio",
            "sig",
            RELEASE,
            GITHUB,
            &[signed.as_str()],
        ),
        ("1.4.0", "fulcio", "sig", &evil, GITHUB, &[]),
        (
            "1.5.0",
            "fulcio",
            "sig",
            RELEASE,
            "https://accounts.google.com",
            &[],
        ),
        ("1.6.0", "stranger", "sig", RELEASE, GITHUB, &[]),
        ("1.7.0", "fulcio", "sig", RELEASE, GITHUB, &["expired"]),
        ("1.8.0", "fulcio", "sig", RELEASE, GITHUB, &["tamper-set"]),
        (
            "1.9.0",
            "fulcio",
            "bundle",
            RELEASE,
            GITHUB,
            &["tamper-proof"],
        ),
    ];
    for (tag, ca, layout, subject, issuer, options) in cases {
        let s = sigstore.sign(ca, layout, &d(tag), subject, issuer, options);
        match layout {
            "sig" => push_sig(&reg, &d(tag), &s),
            _ => push_bundle(&reg, &d(tag), &s),
        }
    }
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = registry_config(cfg_dir.path(), &reg.base_url(), "");
    let root = sigstore.trusted_root(cfg_dir.path());
    let run = imagebump()
        .args(["tags", &format!("{HOST}/{REPO}:1.0.0"), "--output", "json"])
        .arg("--config")
        .arg(&cfg)
        .arg("--verify-identity")
        .arg(format!("{GITHUB}={RELEASE_RE}"))
        .arg("--verify-trusted-root")
        .arg(&root)
        .run();
    let report = run.json();
    let not = |why: &str| format!("not verified: keyless signature not trusted: {why}");
    let trusted = format!("/{RELEASE_RE}/ from {GITHUB}");
    assert_eq!(
        verdicts(&report),
        [
            format!("1.9.0: {}", not("the transparency log entry's inclusion proof does not lead to its root hash")),
            format!("1.8.0: {}", not("the transparency log entry's signed entry timestamp does not verify with the log's key")),
            format!("1.7.0: {}", not("the signing certificate had expired at its log time 2024-02-01T12:20:00Z")),
            format!("1.6.0: {}", not("the signing certificate was not issued by a CA of the trusted root (trusted_root.json)")),
            format!("1.5.0: {}", not(&format!("signed by {RELEASE} from https://accounts.google.com, not {trusted}"))),
            format!("1.4.0: {}", not(&format!("signed by {evil} from {GITHUB}, not {trusted}"))),
            format!("1.3.0: not verified: the signature is for another image ({})", d("1.1.0")),
            format!("1.2.5: {}", not("no transparency log entry (cosign --tlog-upload=false): its time and certificate cannot be checked")),
            "1.2.0: chosen".into(),
            "1.1.0: passed the tag filters; not examined further (a better tag qualified)".into(),
            "1.0.0: the current tag".into(),
        ],
        "{run}"
    );
    assert_eq!(report["digest"], json!(d("1.2.0")));
    assert_eq!(
        report["signer"],
        json!(format!(
            "identity {RELEASE} (issuer {GITHUB}, logged 2024-02-01T12:01:00Z) (referrers tag, bundle)"
        ))
    );
}

/// RFC 3161 timestamps and Rekor v2 entries (no SET): a timestamp of the trusted root's TSA
/// proves the time the certificate is checked at; a Rekor v2 entry without one proves no
/// time; a timestamp after the certificate's ten minutes refuses it; a timestamp next to a
/// SET must verify too. The newest good one is chosen, timestamped.
#[test]
fn timestamps_prove_the_time_of_rekor_v2_entries() {
    let reg = Registry::start(RegistryMode::Plain);
    let sigstore = Sigstore::new();
    let tags = ["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0"];
    let mut digests = Vec::new();
    for (i, tag) in tags.iter().enumerate() {
        let created = format!("2024-01-{:02}T00:00:00Z", i + 1);
        digests.push(reg.push_tag_created_digest(REPO, tag, &created));
    }
    let d = |tag: &str| digests[tags.iter().position(|t| *t == tag).unwrap()].clone();
    let cases: [(&str, &[&str]); 5] = [
        ("1.1.0", &["timestamp"]),
        ("1.2.0", &["rekor-v2", "timestamp"]),
        ("1.3.0", &["rekor-v2"]),
        ("1.4.0", &["rekor-v2", "late-timestamp"]),
        ("1.5.0", &["late-timestamp"]),
    ];
    for (tag, options) in cases {
        let s = sigstore.sign("fulcio", "bundle", &d(tag), RELEASE, GITHUB, options);
        push_bundle(&reg, &d(tag), &s);
    }
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = registry_config(cfg_dir.path(), &reg.base_url(), "");
    let root = sigstore.trusted_root(cfg_dir.path());
    let run = imagebump()
        .args(["tags", &format!("{HOST}/{REPO}:1.0.0"), "--output", "json"])
        .arg("--config")
        .arg(&cfg)
        .arg("--verify-identity")
        .arg(format!("{GITHUB}={RELEASE_RE}"))
        .arg("--verify-trusted-root")
        .arg(&root)
        .run();
    let report = run.json();
    let not = |why: &str| format!("not verified: keyless signature not trusted: {why}");
    let expired = not("the signing certificate had expired at its log time 2024-02-01T12:20:00Z");
    assert_eq!(
        verdicts(&report),
        [
            format!("1.5.0: {expired}"),
            format!("1.4.0: {expired}"),
            format!("1.3.0: {}", not("the transparency log entry has no signed entry timestamp, and the bundle no RFC 3161 timestamp: its time is unproven")),
            "1.2.0: chosen".into(),
            "1.1.0: passed the tag filters; not examined further (a better tag qualified)".into(),
            "1.0.0: the current tag".into(),
        ],
        "{run}"
    );
    assert_eq!(
        report["signer"],
        json!(format!(
            "identity {RELEASE} (issuer {GITHUB}, timestamped 2024-02-01T12:01:00Z) (referrers tag, bundle)"
        ))
    );
}

/// A run with the operator's `identities` and `trustedRoot`: the keyless-signed candidate
/// (legacy `.sig` layout) is proposed at its digest, the report names the identity, and the
/// requests are exact. The repository cannot set identities; a bad identity is exit 2 at
/// its file and line.
#[test]
fn a_run_proposes_the_keyless_signed_candidate_and_names_its_identity() {
    let reg = Registry::start(RegistryMode::Plain);
    let sigstore = Sigstore::new();
    reg.push_tag_created_digest(REPO, "1.0.0", "2024-01-01T00:00:00Z");
    let good = reg.push_tag_created_digest(REPO, "1.1.0", "2024-02-01T00:00:00Z");
    let s = sigstore.sign("fulcio", "sig", &good, RELEASE, GITHUB, &[]);
    push_sig(&reg, &good, &s);
    let cfg_dir = tempfile::tempdir().unwrap();
    sigstore.trusted_root(cfg_dir.path());
    let verify = format!(
        "images:\n- match: {HOST}/team/*\n  verify:\n    trustedRoot: trusted_root.json\n    identities:\n    - issuer: {GITHUB}\n      subjectRegExp: '{RELEASE_RE}'\n"
    );
    let cfg = registry_config(cfg_dir.path(), &reg.base_url(), &verify);
    let before = pod("1.0.0");
    let dir = tree(&[("deploy.yaml", before.as_str())]);
    let run = imagebump()
        .args(["run", "--dry-run", "--output", "json"])
        .arg(dir.path())
        .arg("--config")
        .arg(&cfg)
        .run();
    let report = run.json();
    assert_eq!(report["errors"], json!([]), "{run}");
    assert_eq!(report["updates"][0]["to"], json!("1.1.0"), "{report:#}");
    assert_eq!(
        report["updates"][0]["verified"],
        json!({"digest": good, "signer": format!("identity {RELEASE} (issuer {GITHUB}, logged 2024-02-01T12:01:00Z) (sig tag)")})
    );
    // For the platforms, 1.0.0's and 1.1.0's manifests and configs (1.1.0's digest comes
    // with its manifest); the referrers API (404), the `.sig` manifest; the payload.
    assert_eq!(
        report["requests"],
        json!({"tagListPages": 1, "tokens": 0, "manifests": 4, "blobs": 3, "retries": 0})
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("deploy.yaml")).unwrap(),
        before
    );

    // The repository's own file may not name identities.
    let own = format!("images:\n- match: {HOST}/**\n  verify:\n    identities:\n    - issuer: x\n      subject: y\n");
    fs::write(dir.path().join("imagebump.yaml"), own).unwrap();
    let run = dry_run(dir.path(), &cfg).code(2).run();
    assert!(
        run.stderr
            .contains("images[0].verify can only be set in the operator's configuration"),
        "{run}"
    );
    fs::remove_file(dir.path().join("imagebump.yaml")).unwrap();

    // An identity with two subjects: exit 2, at the operator file's line.
    let bad = verify.replace(
        "      subjectRegExp:",
        "      subject: x\n      subjectRegExp:",
    );
    let cfg = registry_config(cfg_dir.path(), &reg.base_url(), &bad);
    let run = dry_run(dir.path(), &cfg).code(2).run();
    assert!(run.stderr.contains("operator.yaml:"), "{run}");
    assert!(
        run.stderr
            .contains("set subject or subjectRegExp, not both"),
        "{run}"
    );

    // A trusted root that is not one: exit 2, naming the file.
    fs::write(cfg_dir.path().join("trusted_root.json"), "{}").unwrap();
    let cfg = registry_config(cfg_dir.path(), &reg.base_url(), &verify);
    let run = dry_run(dir.path(), &cfg).code(2).run();
    assert!(run.stderr.contains("operator.yaml:"), "{run}");
    assert!(
        run.stderr
            .contains("trusted_root.json: not a Sigstore trusted root"),
        "{run}"
    );

    // `tags`: a trusted root without an identity is a usage error.
    let cfg = registry_config(cfg_dir.path(), &reg.base_url(), "");
    let run = imagebump()
        .args([
            "tags",
            &format!("{HOST}/{REPO}:1.0.0"),
            "--verify-trusted-root",
            "x.json",
        ])
        .arg("--config")
        .arg(&cfg)
        .code(2)
        .run();
    assert!(
        run.stderr
            .contains("--verify-identity: --verify-trusted-root is for keyless identities"),
        "{run}"
    );
}

/// Certificate transparency: a certificate without an SCT, and one whose SCT is from a CT
/// log the trusted root does not list, are refused; the one with an SCT of the trusted
/// root's CT log (an SCT carrying an extension) is chosen.
#[test]
fn a_certificate_needs_an_sct_of_a_ct_log_of_the_trusted_root() {
    let reg = Registry::start(RegistryMode::Plain);
    let sigstore = Sigstore::new();
    let tags = ["1.0.0", "1.1.0", "1.2.0", "1.3.0"];
    let mut digests = Vec::new();
    for (i, tag) in tags.iter().enumerate() {
        let created = format!("2024-01-{:02}T00:00:00Z", i + 1);
        digests.push(reg.push_tag_created_digest(REPO, tag, &created));
    }
    let cases: [(usize, &str, &[&str]); 3] = [
        (1, "sig", &[]),
        (2, "bundle", &["no-sct"]),
        (3, "sig", &["sct-unknown-log"]),
    ];
    for (i, layout, options) in cases {
        let s = sigstore.sign("fulcio", layout, &digests[i], RELEASE, GITHUB, options);
        match layout {
            "sig" => push_sig(&reg, &digests[i], &s),
            _ => push_bundle(&reg, &digests[i], &s),
        }
    }
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = registry_config(cfg_dir.path(), &reg.base_url(), "");
    let root = sigstore.trusted_root(cfg_dir.path());
    let run = imagebump()
        .args(["tags", &format!("{HOST}/{REPO}:1.0.0"), "--output", "json"])
        .arg("--config")
        .arg(&cfg)
        .arg("--verify-identity")
        .arg(format!("{GITHUB}={RELEASE_RE}"))
        .arg("--verify-trusted-root")
        .arg(&root)
        .run();
    let report = run.json();
    let not = |why: &str| format!("not verified: keyless signature not trusted: {why}");
    assert_eq!(
        verdicts(&report),
        [
            format!("1.3.0: {}", not("the signing certificate's SCTs are from no certificate transparency log the trusted root (trusted_root.json) lists (ctlogs)")),
            format!("1.2.0: {}", not("the signing certificate carries no SCT (signed certificate timestamp): no certificate transparency log vouches for it")),
            "1.1.0: chosen".into(),
            "1.0.0: the current tag".into(),
        ],
        "{run}"
    );
    assert_eq!(report["digest"], json!(digests[1]));
}
