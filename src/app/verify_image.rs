//! `imagebump verify IMAGE[:TAG|@DIGEST]`: does one image satisfy the `verify` policy
//! the operator's configuration gives it? Prints the digest, each signature and
//! attestation found, who signed them (or why one does not count), each gate's verdict and the overall verdict. Exit
//! 0 when it satisfies the policy, 1 when it does not (or cannot be read), 2 on usage and
//! configuration errors (docs/tag-selection.md, "Attestation gates").

use std::fmt::Write as _;
use std::path::Path;

use super::source::load_config;
use super::{Error, Output, Status};
use crate::cli::VerifyArgs;
use crate::registry::Registries;
use crate::resolve::metadata::MetaCache;
use crate::verify::{Inspection, Verdict, Verifier};
use imagebump_model::escape::terminal;
use imagebump_model::name::parse_reference;
use imagebump_policy::rules::Policies;

pub async fn verify(args: &VerifyArgs, out: &Output) -> Result<Status, Error> {
    let reference = parse_reference(&args.image)?;
    let configured = load_config(args.config.as_deref(), Path::new("."))?;
    for w in &configured.warnings {
        out.warning(w);
    }
    let config = configured.config;
    let mut policies =
        Policies::new(&config.defaults, &config.images).map_err(|e| Error::Rules(e.to_string()))?;
    let policy = policies
        .policy_for(&reference.name, &reference.written, None)
        .map_err(|e| Error::Rules(format!("{}: {}", e.key, e.message)))?;
    let image = reference.name.to_string();
    let Some(spec) = policy.spec.verify.clone().filter(|s| !s.is_empty()) else {
        return Err(Error::NoVerifyPolicy(image));
    };
    let registries =
        Registries::with_request_timeout(config.registries.clone(), out.request_timeout)
            .map_err(|source| Error::Registries { file: None, source })?;
    let client = registries
        .client_with(&reference.name, policy.credentials.as_deref())
        .map_err(Error::Client)?;
    let read = |message: String| Error::VerifyRead {
        image: image.clone(),
        message,
    };
    let repo = &reference.name.repository;
    let digest = match (&reference.digest, &reference.tag) {
        (Some(d), _) => d.clone(),
        (None, tag) => {
            let tag = tag.as_deref().unwrap_or("latest");
            let cache = MetaCache::default();
            let digest = cache.digest(&client, &image, repo, tag).await;
            digest.map_err(|e| read(format!("digest of {tag}: {e}")))?
        }
    };
    let inspection = Verifier::new()
        .inspect(&client, repo, &digest, &spec, None, true)
        .await
        .map_err(|e| read(e.to_string()))?;
    print!("{}", shown(&args.image, &digest, &inspection));
    Ok(match inspection.verdict {
        Verdict::Verified(_) => Status::Done,
        Verdict::Refused(_) => Status::Problems,
    })
}

/// The inspection as lines of `label: text`, each text escaped for the terminal.
fn shown(image: &str, digest: &str, i: &Inspection) -> String {
    let mut s = String::new();
    let mut line = |label: &str, text: &str| {
        let _ = writeln!(s, "{label:<12} {}", terminal(text));
    };
    line("image:", image);
    line("digest:", digest);
    for e in &i.signatures {
        let text = match &e.verdict {
            Ok(signer) => format!("verified, {signer} ({})", e.layout),
            Err(why) => format!("ignored ({}): {why}", e.layout),
        };
        line("signature:", &text);
    }
    if let Verdict::Refused(why) = &i.signature {
        line("signatures:", &format!("none verifies: {why}"));
    }
    for a in &i.found.verified {
        let text = format!(
            "{} ({}), signed by {}",
            a.predicate_type, a.layout, a.signer
        );
        line("attestation:", &text);
    }
    for why in &i.found.ignored {
        line("ignored:", why);
    }
    for g in &i.gates {
        let verdict = if g.passed { "passed" } else { "failed" };
        line("gate:", &format!("{} {verdict}, {}", g.gate, g.detail));
    }
    match &i.verdict {
        Verdict::Verified(_) => line("verdict:", "satisfies the verify policy"),
        Verdict::Refused(why) => line(
            "verdict:",
            &format!("does not satisfy the verify policy: {why}"),
        ),
    }
    s
}
