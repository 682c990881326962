//! `verify` in the resolve stage: the evaluation's choice is verified at its digest; a
//! candidate whose signature does not verify is refused with the reason and the next best
//! is chosen, until one verifies or none is left. Signatures that cannot be fetched are an
//! error: nothing is proposed for the image (fail closed).

use crate::verify::{Signer, Verdict, Verifier};
use imagebump_model::name::ImageName;
use imagebump_policy::candidate::Choice;
use imagebump_policy::evaluate::Evaluation;
use imagebump_policy::Policy;

use super::{settle, MetaSource};

/// The decision after verification.
pub struct Signed {
    pub choice: Choice,
    /// Who signed the chosen image (`None` without `verify`).
    pub signer: Option<Signer>,
    /// Why nothing could be decided (signatures or digests not read): the image fails.
    pub errors: Vec<String>,
    /// The candidates refused, each with why (`1.3.0 not proposed: …`): run warnings.
    pub refused: Vec<String>,
}

/// Decide `eval`, verifying the choice when the policy says `verify`. `listed` is the
/// repository's tag list when the run read it (a signature tag it lacks is not asked for).
pub async fn decide(
    eval: &mut Evaluation<'_>,
    image: &ImageName,
    policy: &Policy,
    source: MetaSource<'_>,
    verifier: &Verifier,
    listed: Option<&[String]>,
    concurrency: usize,
) -> Signed {
    let mut errors = Vec::new();
    let mut refused = Vec::new();
    loop {
        let choice = eval.decide();
        let (Some(spec), Choice::Update { tag, digest }) = (&policy.spec.verify, &choice) else {
            return Signed {
                choice,
                signer: None,
                errors,
                refused,
            };
        };
        let refuse = |eval: &mut Evaluation, why: String| {
            if let Some(i) = eval.chosen() {
                eval.refuse(i, why);
            }
        };
        let Some((client, cache)) = source else {
            let why = "signatures need a registry (a tag list file has names only)".to_string();
            refuse(eval, why.clone());
            errors.push(why);
            return failed(errors, refused);
        };
        let digest = match digest {
            Some(d) => d.clone(),
            None => match cache
                .digest(client, &image.to_string(), &image.repository, tag)
                .await
            {
                Ok(d) => d,
                Err(e) => {
                    refuse(eval, format!("digest not read: {e}"));
                    errors.push(format!("digest of {tag}: {e}"));
                    return failed(errors, refused);
                }
            },
        };
        let verdict = verifier
            .verify(client, &image.repository, &digest, spec, listed)
            .await;
        match verdict {
            Ok(Verdict::Verified(signer)) => {
                return Signed {
                    choice: Choice::Update {
                        tag: tag.clone(),
                        digest: Some(digest),
                    },
                    signer: Some(signer),
                    errors,
                    refused,
                }
            }
            Ok(Verdict::Refused(why)) => {
                refused.push(format!("{tag} not proposed: {why}"));
                refuse(eval, why);
                errors.extend(settle(eval, image, policy, source, concurrency).await);
            }
            Err(e) => {
                refuse(eval, format!("signatures not read: {e}"));
                errors.push(e.to_string());
                return failed(errors, refused);
            }
        }
    }
}

impl Signed {
    /// What the report records for the chosen update, when it was verified.
    pub fn verified(&self) -> Option<crate::verify::Verified> {
        let s = self.signer.as_ref()?;
        let Choice::Update {
            digest: Some(digest),
            ..
        } = &self.choice
        else {
            return None;
        };
        Some(crate::verify::Verified {
            digest: digest.clone(),
            signer: format!("{} ({})", s.signer, s.layout),
            gates: s.gates.clone(),
        })
    }
}

fn failed(errors: Vec<String>, refused: Vec<String>) -> Signed {
    Signed {
        choice: Choice::Current,
        signer: None,
        errors,
        refused,
    }
}
