//! `imagebump verify-bundle`: one Sigstore bundle verified offline, following the
//! sigstore-conformance client protocol (docs/security.md, "Conformance"). Exit 0 when it
//! verifies, 1 when it is refused (the reason on stderr), 2 when an input cannot be read.

use std::io::Read as _;
use std::path::Path;

use imagebump_model::verify::Identity;

use super::error::{Error, Status};
use crate::cli::VerifyBundleArgs;
use crate::verify::bundle::{self, Input};
use crate::verify::trust::TrustedRoot;
use crate::verify::PublicKey;

/// The largest artifact read: it is held whole for the signature check.
const MAX_ARTIFACT_BYTES: u64 = 256 << 20;
/// The largest bundle or trusted root read.
const MAX_JSON_BYTES: u64 = 4 << 20;

/// Verify the bundle; print who signed it.
pub fn verify_bundle(args: &VerifyBundleArgs) -> Result<Status, Error> {
    let root = root(args)?;
    let json = read(&args.bundle, MAX_JSON_BYTES)?;
    let input = input(&args.input)?;
    let verified = match (
        &args.key,
        &args.certificate_identity,
        &args.certificate_oidc_issuer,
    ) {
        (Some(path), _, _) => {
            let pem = read(path, MAX_JSON_BYTES)?;
            let shown = path.display().to_string();
            let key = PublicKey::from_pem(&shown, &pem)
                .map_err(|e| refused(&format!("--key {shown}: {e}")))?;
            bundle::verify_with_key(&json, &input, &key, &root)
        }
        (None, Some(subject), Some(issuer)) => {
            let identity = Identity {
                issuer: Some(issuer.clone()),
                subject: Some(subject.clone()),
                ..Identity::default()
            };
            bundle::verify(&json, &input, &identity, &root)
        }
        _ => {
            return Err(Error::BundleInput(
                "give --key, or --certificate-identity and --certificate-oidc-issuer".into(),
            ))
        }
    };
    match verified {
        Ok(who) => {
            println!("verified: {}", imagebump_model::escape::terminal(&who));
            Ok(Status::Done)
        }
        Err(e) => Err(refused(&e.to_string())),
    }
}

fn refused(why: &str) -> Error {
    Error::BundleRefused(why.to_string())
}

/// The trusted root of `--trusted-root`, else the built-in public-good root.
fn root(args: &VerifyBundleArgs) -> Result<TrustedRoot, Error> {
    match &args.trusted_root {
        Some(path) => {
            let json = read(path, MAX_JSON_BYTES)?;
            TrustedRoot::from_json(&path.display().to_string(), &json)
                .map_err(|e| refused(&format!("{}: {e}", path.display())))
        }
        None if args.staging => Err(Error::BundleInput(
            "--staging: no staging trusted root is built in; give --trusted-root".into(),
        )),
        None => TrustedRoot::public_good().map_err(|e| refused(&e.to_string())),
    }
}

/// `FILE_OR_DIGEST`: a digest is `sha256:` and 64 hex digits naming no existing file.
fn input(text: &str) -> Result<Input, Error> {
    let path = Path::new(text);
    if !path.exists() {
        if let Some(digest) = text.strip_prefix("sha256:").and_then(bundle::unhex) {
            return Ok(Input::Digest(digest));
        }
    }
    read(path, MAX_ARTIFACT_BYTES).map(Input::Artifact)
}

/// A file, refused whole when larger than `max` bytes (counted while reading).
fn read(path: &Path, max: u64) -> Result<Vec<u8>, Error> {
    let shown = path.display();
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(max.saturating_add(1)).read_to_end(&mut bytes))
        .map_err(|e| Error::BundleInput(format!("cannot read {shown}: {e}")))?;
    if bytes.len() as u64 > max {
        return Err(Error::BundleInput(format!(
            "{shown} is larger than {} MiB",
            max >> 20
        )));
    }
    Ok(bytes)
}
