//! `verify`: the signatures a candidate image must carry before imagebump proposes it
//! (docs/tag-selection.md, "Signed images"). Trust roots are the operator's alone: the
//! repository's own `imagebump.yaml` may not set them (docs/security.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerifySpec {
    /// cosign public keys (PEM: ECDSA P-256/P-384, Ed25519 or RSA), as files; relative
    /// paths are relative to the operator's configuration file. A candidate passes when a
    /// cosign signature of its digest verifies with any of them.
    #[serde(default)]
    pub keys: Vec<String>,
    /// Keyless (Sigstore) signers: a candidate also passes when a signature verifies with a
    /// Fulcio certificate of the trusted root whose identity matches one of these, logged in
    /// a trusted Rekor log.
    #[serde(default)]
    pub identities: Vec<Identity>,
    /// A Sigstore `trusted_root.json` (Fulcio CAs and Rekor keys) for `identities`; relative
    /// to the operator's configuration file. Default: the Sigstore public-good root built
    /// into imagebump.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_root: Option<String>,
}

/// Who may sign keylessly: the certificate's OIDC issuer and subject (its SAN, a URI or an
/// email), each exact or a regular expression (unanchored, as cosign's
/// `--certificate-identity-regexp`: write `^…$`).
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Identity {
    /// The exact OIDC issuer, e.g. `https://token.actions.githubusercontent.com`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The OIDC issuer as a regular expression (instead of `issuer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer_reg_exp: Option<String>,
    /// The exact subject: a workflow URI or an email.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The subject as a regular expression (instead of `subject`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject_reg_exp: Option<String>,
}

impl VerifySpec {
    /// Nothing to verify against (an empty list is refused when the configuration loads).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.identities.is_empty()
    }
}

impl Identity {
    /// Why this identity cannot be used (exactly one issuer and one subject form, regular
    /// expressions that compile), or `None`.
    pub fn problem(&self) -> Option<String> {
        let one = |exact: &Option<String>, re: &Option<String>, what: &str| match (exact, re) {
            (Some(_), Some(_)) => Some(format!("set {what} or {what}RegExp, not both")),
            (None, None) => Some(format!("an identity needs {what} or {what}RegExp")),
            (None, Some(re)) => regex::Regex::new(re)
                .err()
                .map(|e| format!("{what}RegExp: {e}")),
            (Some(_), None) => None,
        };
        one(&self.issuer, &self.issuer_reg_exp, "issuer")
            .or_else(|| one(&self.subject, &self.subject_reg_exp, "subject"))
    }

    /// Does a certificate of `issuer` for `subject` match? (Checked with [`Self::problem`]
    /// first; a pattern that does not compile matches nothing.)
    pub fn matches(&self, issuer: &str, subject: &str) -> bool {
        let ok = |exact: &Option<String>, re: &Option<String>, value: &str| match (exact, re) {
            (Some(e), _) => e == value,
            (None, Some(re)) => regex::Regex::new(re).is_ok_and(|r| r.is_match(value)),
            (None, None) => false,
        };
        ok(&self.issuer, &self.issuer_reg_exp, issuer)
            && ok(&self.subject, &self.subject_reg_exp, subject)
    }

    /// `issuer=subject` as written, for messages.
    pub fn describe(&self) -> String {
        let pick = |e: &Option<String>, r: &Option<String>| {
            e.clone()
                .or_else(|| r.as_ref().map(|r| format!("/{r}/")))
                .unwrap_or_default()
        };
        format!(
            "{} from {}",
            pick(&self.subject, &self.subject_reg_exp),
            pick(&self.issuer, &self.issuer_reg_exp)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(issuer: &str, subject_re: &str) -> Identity {
        Identity {
            issuer: Some(issuer.into()),
            subject_reg_exp: Some(subject_re.into()),
            ..Identity::default()
        }
    }

    #[test]
    fn identities_match_issuer_exactly_and_subject_by_pattern() {
        let gha = "https://token.actions.githubusercontent.com";
        let i = id(
            gha,
            r"^https://github\.com/acme/.+/\.github/workflows/release\.yml@refs/tags/.+$",
        );
        let ok = "https://github.com/acme/web/.github/workflows/release.yml@refs/tags/v1.2.0";
        assert!(i.matches(gha, ok));
        assert!(!i.matches("https://accounts.google.com", ok));
        assert!(!i.matches(gha, &ok.replace("acme", "evil")));
        assert!(!i.matches(gha, &ok.replace("refs/tags", "refs/heads")));
        assert_eq!(i.problem(), None);
        assert_eq!(
            Identity::default().problem().unwrap(),
            "an identity needs issuer or issuerRegExp"
        );
        let both = Identity {
            subject: Some("a".into()),
            ..i.clone()
        };
        assert_eq!(
            both.problem().unwrap(),
            "set subject or subjectRegExp, not both"
        );
        assert!(id(gha, "(")
            .problem()
            .unwrap()
            .starts_with("subjectRegExp: "));
        assert!(!id(gha, "(").matches(gha, "("));
    }
}
