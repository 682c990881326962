//! The Sigstore conformance bundle cases, run the way the suite's own runner runs a client.
//!
//! `tests/conformance/bundle-verify/` is `test/assets/bundle-verify/` of
//! sigstore/sigstore-conformance at commit a73de4970176d258e0154c530b89d20b89444e4d
//! (Apache-2.0, unmodified; tests/conformance/NOTICE.md). Every case directory runs twice, as
//! `test_verify[PATH-…]` and `test_verify[DIGEST-…]` do: with the artifact's path and with
//! `sha256:<hex>` of it. The arguments are built as the suite's `client.py`
//! (`build_verify_args`) and `BundleMaterials.from_dir` build them, in the same order.
//!
//! The suite passes a `_fail` case on any non-zero exit; here a refusal must be exit 1 with
//! the reason of [`REFUSED`], so a bundle refused for the wrong reason (or a usage error)
//! fails the test. [`PENDING`] lists the cases `verify-bundle` does not support yet, each
//! with the refusal it gives today: a pending case that verifies, or whose refusal changes,
//! fails the test until it is moved out of the table (a strict xfail).

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

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use sha2::Digest as _;
use support::cli::imagebump;

/// The identity `from_dir` uses when a case has no `identity` file.
const BEACON_IDENTITY: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
/// The issuer `from_dir` uses when a case has no `issuer` file.
const BEACON_ISSUER: &str = "https://token.actions.githubusercontent.com";

/// Every refused (`_fail`) case that `verify-bundle` supports, and a fragment of the reason
/// it must give.
const REFUSED: &[(&str, &str)] = &[
    (
        "bundle-empty-certificate-chain_fail",
        "empty certificate chain",
    ),
    (
        "bundle-from-wrong-instance_fail",
        "from a log the trusted root (public-good) does not list",
    ),
    (
        "bundle-invalid-base64-signature_fail",
        "message signature is not base64",
    ),
    ("bundle-malformed-json_fail", "the bundle is not JSON"),
    // The envelope's signature is checked after the log entry, which holds the valid one.
    (
        "dsse-invalid-sig_fail",
        "entry is for another signature or certificate",
    ),
    (
        "dsse-mismatch-envelope_fail",
        "entry is for another payload",
    ),
    (
        "dsse-mismatch-sig_fail",
        "entry is for another signature or certificate",
    ),
    ("bundle-negative-log-index_fail", "negative log index"),
    (
        "managed-key-no-key_fail",
        "holds a public key, not a certificate",
    ),
    ("managed-key-wrong-key_fail", "not a PEM public key"),
    (
        "intoto-expired-certificate_fail",
        "signing certificate was not yet valid at its log time",
    ),
    (
        "intoto-log-entry-mismatch_fail",
        "entry is for another signature or certificate",
    ),
    (
        "intoto-set-outside-signing-cert-validity_fail",
        "signing certificate had expired at its log time",
    ),
    (
        "intoto-missing-inclusion-proof_fail",
        "version 0.2 or later without an inclusion proof",
    ),
    (
        "bundle-unknown-version_fail",
        "version=99.9\": only Sigstore bundles",
    ),
    (
        "bundle-with-root-cert_fail",
        "certificate chain holds a self-signed (root) certificate",
    ),
    (
        "checkpoint-bad-keyhint_fail",
        "checkpoint is not signed by the log's key",
    ),
    (
        "checkpoint-wrong-roothash_fail",
        "checkpoint is for another tree",
    ),
    (
        "inclusion-proof-corrupted-hash_fail",
        "inclusion proof does not lead to its root hash",
    ),
    // The entry's body is altered: its signed entry timestamp does not sign it.
    (
        "incorrect-public-key_fail",
        "signed entry timestamp does not verify",
    ),
    (
        "integrated-time-in-future_fail",
        "signing certificate had expired at its log time",
    ),
    (
        "invalid-ct-key_fail",
        "SCTs are from no certificate transparency log the trusted root",
    ),
    (
        "invalid-checkpoint-signature_fail",
        "checkpoint is not signed by the log's key",
    ),
    (
        "invalid-inclusion-proof_fail",
        "inclusion proof does not lead to its root hash",
    ),
    (
        "message-digest-mismatch_fail",
        "message digest is not the artifact's SHA-256",
    ),
    (
        "set-invalid-signature_fail",
        "signed entry timestamp does not verify",
    ),
    ("signature-mismatch_fail", "entry is for another signature"),
    (
        "trust-root-tlog-missing-validity-start_fail",
        "validFor: a validity period without a start",
    ),
    (
        "wrong-hashedrekord-artifact_fail",
        "entry is for another payload",
    ),
    (
        "wrong-hashedrekord-cert-and-sig_fail",
        "entry is for another signature",
    ),
    (
        "wrong-hashedrekord-entry_fail",
        "entry is for another payload",
    ),
    (
        "wrong-material_fail",
        "message digest is not the artifact's SHA-256",
    ),
    // Rekor v2: checkpoints (C2SP signed notes).
    (
        "rekor2-checkpoint-missing-log-signature_fail",
        "checkpoint is not signed by the log's key",
    ),
    // Without its origin line, the note's size and root are read from the wrong lines.
    (
        "rekor2-checkpoint-missing-origin_fail",
        "checkpoint is for another tree",
    ),
    (
        "rekor2-checkpoint-missing-root-hash_fail",
        "checkpoint is for another tree",
    ),
    (
        "rekor2-checkpoint-missing-size_fail",
        "checkpoint is for another tree",
    ),
    (
        "rekor2-checkpoint-no-matching-signature_fail",
        "checkpoint is not signed by the log's key",
    ),
    // Rekor v2 `hashedrekord` 0.0.2 over a DSSE envelope; the envelope's signature is
    // checked after the log entry, which holds the valid one.
    (
        "rekor2-dsse-invalid-sig_fail",
        "entry is for another signature",
    ),
    (
        "rekor2-dsse-mismatch-envelope_fail",
        "entry is for another payload",
    ),
    (
        "rekor2-dsse-mismatch-sig_fail",
        "entry is for another signature",
    ),
    (
        "rekor2-no-inclusion-proof_fail",
        "version 0.2 or later without an inclusion proof",
    ),
    (
        "rekor2-no-timestamp_fail",
        "no signed entry timestamp, and the bundle no RFC 3161 timestamp",
    ),
    // RFC 3161 timestamps.
    (
        "rekor2-timestamp-outside-trust-root-tsa-validity_fail",
        "was valid at the RFC 3161 timestamp's time 2025-06-12T12:02:20Z",
    ),
    (
        "rekor2-timestamp-outside-tsa-cert-validity_fail",
        "timestamp authority's certificate was not valid at the RFC 3161 timestamp's time",
    ),
    (
        "rekor2-timestamp-payload-mismatch_fail",
        "the RFC 3161 timestamp is for another signature",
    ),
    // The foreign TSA's certificate is embedded: it is no timestamping certificate of the
    // trusted root's authorities.
    (
        "rekor2-timestamp-untrusted-tsa-with-embedded-cert_fail",
        "signing certificate is not for timestamping",
    ),
    (
        "rekor2-timestamp-untrusted-tsa-without-embedded-cert_fail",
        "signed the RFC 3161 timestamp",
    ),
    // The timestamp's time is after the signing certificate's ten minutes.
    (
        "rekor2-timestamp-with-incorrect-time_fail",
        "signing certificate had expired at its log time 2025-07-15",
    ),
    (
        "intoto-tsa-timestamp-outside-cert-validity_fail",
        "signing certificate had expired at its log time 2023-02-02",
    ),
];

/// Cases not supported yet: the case, the refusal it gets today, and what it needs
/// (docs/security.md, "Conformance").
const PENDING: &[(&str, &str, &str)] = &[];

/// `_fail` cases `verify-bundle` accepts today because it lacks the check they test: each
/// must still verify (so the table stays true), and fails the test once it is refused,
/// until it moves to [`REFUSED`].
const ACCEPTED_WITHOUT_CHECK: &[(&str, &str)] = &[];

fn assets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/bundle-verify")
}

/// The case directories, by name.
fn cases() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(assets())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[derive(Clone, Copy, Debug)]
enum Mode {
    Path,
    Digest,
}

/// `verify-bundle`'s arguments for a case, as `client.py` builds them from `from_dir`.
fn args(case: &Path, mode: Mode) -> Vec<String> {
    let file = |name: &str| Some(case.join(name)).filter(|p| p.exists());
    let text = |name: &str| file(name).map(|p| std::fs::read_to_string(p).unwrap());
    let shown = |p: PathBuf| p.to_string_lossy().into_owned();
    let mut args = vec!["verify-bundle".to_string(), "--bundle".into()];
    args.push(shown(case.join("bundle.sigstore.json")));
    if let Some(key) = file("key.pub") {
        args.extend(["--key".into(), shown(key)]);
    } else {
        let identity = text("identity").unwrap_or_else(|| BEACON_IDENTITY.into());
        let issuer = text("issuer").unwrap_or_else(|| BEACON_ISSUER.into());
        args.extend(["--certificate-identity".into(), identity]);
        args.extend(["--certificate-oidc-issuer".into(), issuer]);
    }
    if let Some(root) = file("trusted_root.json") {
        args.extend(["--trusted-root".into(), shown(root)]);
    }
    let artifact = file("artifact").unwrap_or_else(|| assets().join("a.txt"));
    args.push(match mode {
        Mode::Path => shown(artifact),
        Mode::Digest => format!(
            "sha256:{:x}",
            sha2::Sha256::digest(std::fs::read(artifact).unwrap())
        ),
    });
    args
}

/// What a case must do: verify, be refused with a reason, or still lack a check.
enum Expect {
    Verify,
    Refuse(&'static str),
    Pending(&'static str),
    Accepted,
}

fn expect(case: &str) -> Expect {
    if let Some((_, why)) = REFUSED.iter().find(|(c, _)| *c == case) {
        return Expect::Refuse(why);
    }
    if let Some((_, why, _)) = PENDING.iter().find(|(c, _, _)| *c == case) {
        return Expect::Pending(why);
    }
    if ACCEPTED_WITHOUT_CHECK.iter().any(|(c, _)| *c == case) {
        return Expect::Accepted;
    }
    assert!(!case.ends_with("fail"), "{case}: a _fail case in no table");
    Expect::Verify
}

/// Run every case in `mode`; the mismatches, one line each.
fn run_all(mode: Mode) -> Vec<String> {
    let mut wrong = Vec::new();
    for case in cases() {
        let run = imagebump()
            .args(args(&assets().join(&case), mode))
            .any_code()
            .run();
        let refused = |why: &str| run.code == 1 && run.stderr.contains(why);
        let ok = match expect(&case) {
            Expect::Verify | Expect::Accepted => {
                run.code == 0 && run.stdout.starts_with("verified: ")
            }
            Expect::Refuse(why) | Expect::Pending(why) => refused(why),
        };
        if !ok {
            wrong.push(format!(
                "{mode:?}-{case}: exit {}, stdout {:?}, stderr {:?}",
                run.code, run.stdout, run.stderr
            ));
        }
    }
    wrong
}

#[test]
fn every_case_by_path_gets_its_verdict() {
    let wrong = run_all(Mode::Path);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_case_by_digest_gets_its_verdict() {
    let wrong = run_all(Mode::Digest);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The tables name each case directory once, and only those; the vendored set is whole.
#[test]
fn the_tables_cover_the_vendored_cases() {
    let cases: BTreeSet<String> = cases().into_iter().collect();
    assert_eq!(cases.len(), 70, "the snapshot has 70 case directories");
    let named: Vec<&str> = REFUSED
        .iter()
        .map(|(c, _)| *c)
        .chain(PENDING.iter().map(|(c, _, _)| *c))
        .chain(ACCEPTED_WITHOUT_CHECK.iter().map(|(c, _)| *c))
        .collect();
    let unique: BTreeSet<&str> = named.iter().copied().collect();
    assert_eq!(unique.len(), named.len(), "a case named twice");
    for case in &unique {
        assert!(cases.contains(*case), "{case}: no such case directory");
    }
    let happy = cases.iter().filter(|c| !c.ends_with("fail")).count();
    let verified = cases
        .iter()
        .filter(|c| matches!(expect(c), Expect::Verify))
        .count();
    assert_eq!((happy, verified), (21, 21));
    assert_eq!(REFUSED.len(), 49);
}

/// The suite's protocol details `verify-bundle` keeps: a `sha256:` text naming an existing
/// file is that file, an unreadable bundle is a usage error (exit 2), and `--staging` needs
/// a trusted root.
#[test]
fn inputs_follow_the_protocol() {
    let case = assets().join("happy-path-v0.3");
    let mut path_args = args(&case, Mode::Path);
    let dir = tempfile::tempdir().unwrap();
    let digest_args = args(&case, Mode::Digest);
    let named = dir.path().join(digest_args.last().unwrap());
    std::fs::copy(assets().join("a.txt"), &named).unwrap();
    *path_args.last_mut().unwrap() = digest_args.last().unwrap().clone();
    let run = imagebump().args(&path_args).current_dir(dir.path()).run();
    assert!(
        run.stdout.starts_with("verified: identity "),
        "{}",
        run.stdout
    );
    std::fs::write(&named, b"other bytes").unwrap();
    let run = imagebump()
        .args(&path_args)
        .current_dir(dir.path())
        .code(1)
        .run();
    assert_eq!(
        run.stderr,
        "error: refused: the bundle's message digest is not the artifact's SHA-256\n"
    );
    let mut missing = args(&case, Mode::Path);
    missing[2] = dir.path().join("none.json").to_string_lossy().into_owned();
    let run = imagebump().args(&missing).code(2).run();
    assert!(
        run.stderr.starts_with("error: verify-bundle: cannot read "),
        "{}",
        run.stderr
    );
    let mut staging = args(&case, Mode::Path);
    staging.insert(1, "--staging".into());
    let run = imagebump().args(&staging).code(2).run();
    assert_eq!(
        run.stderr,
        "error: verify-bundle: --staging: no staging trusted root is built in; give --trusted-root\n"
    );
}

/// `--key` refuses a bundle logged with another valid key, a bundle signed by a
/// certificate, and a signature that is not the artifact's.
#[test]
fn key_signed_bundles_need_their_own_key() {
    let bundle = |case: &str| assets().join(case).join("bundle.sigstore.json");
    // A P-256 key that signed none of the cases: the public-good Rekor key.
    let dir = tempfile::tempdir().unwrap();
    let other_key = dir.path().join("other.pub");
    std::fs::write(
        &other_key,
        "-----BEGIN PUBLIC KEY-----\n\
         MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE2G2Y+2tabdTV5BcGiBIx0a9fAFwr\n\
         kBbmLSGtks4L3qX6yYY0zufBnhC8Ur/iy55GhWP/9A/bY2LhC30M9+RYtw==\n\
         -----END PUBLIC KEY-----\n",
    )
    .unwrap();
    let key_args = |bundle: PathBuf, key: &Path, artifact: &Path| {
        let mut args: Vec<String> = vec!["verify-bundle".into(), "--bundle".into()];
        args.push(bundle.to_string_lossy().into_owned());
        args.push("--key".into());
        args.push(key.to_string_lossy().into_owned());
        args.push(artifact.to_string_lossy().into_owned());
        args
    };
    let artifact = assets().join("a.txt");
    let run = imagebump()
        .args(key_args(
            bundle("managed-key-happy-path"),
            &other_key,
            &artifact,
        ))
        .code(1)
        .run();
    assert_eq!(
        run.stderr,
        "error: refused: the transparency log entry is for another certificate\n"
    );
    let run = imagebump()
        .args(key_args(bundle("happy-path-v0.3"), &other_key, &artifact))
        .code(1)
        .run();
    assert_eq!(
        run.stderr,
        "error: refused: the bundle holds a certificate, not a public key: --key verifies key-signed bundles\n"
    );
    let other = dir.path().join("other.txt");
    std::fs::write(&other, b"other bytes").unwrap();
    let key = assets().join("managed-key-happy-path/key.pub");
    let run = imagebump()
        .args(key_args(bundle("managed-key-happy-path"), &key, &other))
        .code(1)
        .run();
    assert!(run.stderr.starts_with("error: refused: "), "{}", run.stderr);
}

/// A keyless DSSE envelope carries exactly one signature: its log entry and timestamps
/// vouch for that one, and a second signature may not borrow their time.
#[test]
fn a_keyless_envelope_carries_one_signature() {
    let case = assets().join("happy-path-intoto-in-dsse-v3");
    let mut bundle: serde_json::Value =
        serde_json::from_slice(&std::fs::read(case.join("bundle.sigstore.json")).unwrap()).unwrap();
    let sigs = bundle["dsseEnvelope"]["signatures"].as_array_mut().unwrap();
    let first = sigs[0].clone();
    sigs.push(first);
    let dir = tempfile::tempdir().unwrap();
    let doubled = dir.path().join("bundle.sigstore.json");
    std::fs::write(&doubled, serde_json::to_vec(&bundle).unwrap()).unwrap();
    let mut args = args(&case, Mode::Path);
    args[2] = doubled.to_string_lossy().into_owned();
    let run = imagebump().args(&args).code(1).run();
    assert_eq!(
        run.stderr,
        "error: refused: a keyless DSSE envelope with 2 signatures: Sigstore's carry exactly one, the one its log entry and timestamps vouch for\n"
    );
}
