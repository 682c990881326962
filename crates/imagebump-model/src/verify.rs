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
    /// Attestation gates: in-toto attestations attached to the candidate's digest, signed
    /// with the same trust as its signature (`keys` or `identities`), that it must carry.
    /// A candidate failing a gate is dropped with the reason, like an unsigned one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attestations: Option<Gates>,
}

/// The attestations a candidate must carry (docs/tag-selection.md, "Attestation gates").
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Gates {
    /// A SLSA provenance attestation (`https://slsa.dev/provenance/v0.2` or `/v1`) whose
    /// fields match every one set here; `{}`: any SLSA provenance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// An SBOM attestation (SPDX or CycloneDX predicate) must be present.
    #[serde(default)]
    pub sbom: bool,
    /// Every vulnerability report attestation (cosign's
    /// `https://cosign.sigstore.dev/attestation/vuln/v1`, Trivy or Grype results) must
    /// list no finding above `maxSeverity` outside `allowCves`; at least one must exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vulnerabilities: Option<Vulnerabilities>,
}

/// What a SLSA provenance must say; each field unset is not compared.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Provenance {
    /// The exact builder id (v1 `runDetails.builder.id`, v0.2 `builder.id`), e.g.
    /// `https://github.com/slsa-framework/slsa-github-generator/.github/workflows/generator_container_slsa3.yml@refs/tags/v2.0.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builder_id: Option<String>,
    /// The exact source repository, e.g. `https://github.com/acme/web` (v1
    /// `externalParameters.workflow.repository` or a `resolvedDependencies` URI, v0.2
    /// `invocation.configSource.uri`; a `git+` prefix, an `@ref` suffix and a `.git`
    /// suffix are not compared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_repository: Option<String>,
    /// The source ref as a regular expression (unanchored: write `^…$`), e.g.
    /// `^refs/tags/v.+$` (v1 `externalParameters.workflow.ref`, v0.2 the `@ref` of
    /// `invocation.configSource.uri`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ref_reg_exp: Option<String>,
    /// The exact workflow path, e.g. `.github/workflows/release.yml` (v1
    /// `externalParameters.workflow.path`, v0.2 `invocation.configSource.entryPoint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
}

/// The vulnerability report gate.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Vulnerabilities {
    /// The highest severity a finding may have: `none` (no finding at all), `low`,
    /// `medium`, `high` or `critical`. A severity the report does not name (`unknown`)
    /// counts as `critical`.
    pub max_severity: Severity,
    /// Vulnerability ids allowed whatever their severity (`CVE-2024-1234`, `GHSA-…`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_cves: Vec<String>,
}

/// A vulnerability severity, lowest first (`negligible` findings count as `low`).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Deserialize,
    Serialize,
    JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    #[default]
    None,
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    /// A report's severity (any case); `negligible` is `low`, anything unnamed `critical`.
    pub fn of_finding(text: &str) -> Severity {
        match text.to_ascii_lowercase().as_str() {
            "negligible" | "low" => Severity::Low,
            "medium" | "moderate" => Severity::Medium,
            "high" => Severity::High,
            _ => Severity::Critical,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Severity::None => "none",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }
}

impl Provenance {
    /// Why this provenance gate cannot be used (a `refRegExp` that does not compile).
    pub fn problem(&self) -> Option<String> {
        let re = self.ref_reg_exp.as_deref()?;
        regex::Regex::new(re)
            .err()
            .map(|e| format!("refRegExp: {e}"))
    }
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
