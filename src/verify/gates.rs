//! Attestation gates judged without I/O: the verified in-toto statements of a candidate
//! (attest.rs finds and verifies them) against the operator's `verify.attestations`.
//! A gate without a matching attestation fails (fail closed).

use imagebump_model::verify::{Gates, Provenance, Severity, Vulnerabilities};
use serde_json::Value;

/// The SLSA provenance predicate types read.
const SLSA_V02: &str = "https://slsa.dev/provenance/v0.2";
const SLSA_V1: &str = "https://slsa.dev/provenance/v1";
/// The predicate type prefixes of SBOMs: SPDX (`/Document`, `/Document/v2.3`) and
/// CycloneDX (`/bom`, `/bom/v1.5`).
const SBOMS: [(&str, &str); 2] = [
    ("https://spdx.dev/Document", "SPDX"),
    ("https://cyclonedx.org/bom", "CycloneDX"),
];
/// cosign's vulnerability report predicate.
pub const VULN: &str = "https://cosign.sigstore.dev/attestation/vuln/v1";
/// The most findings of one report read (a report with more is refused, not truncated).
const MAX_FINDINGS: usize = 10_000;

/// Whether a gate reads the predicate of this type (provenance, vulnerability reports);
/// of the others only the type counts, and their predicates are not kept.
pub fn reads_predicate(predicate_type: &str) -> bool {
    [SLSA_V02, SLSA_V1, VULN].contains(&predicate_type)
}

/// A verified attestation of the candidate: its predicate, who signed it, where it was.
#[derive(Debug, Clone)]
pub struct Attestation {
    pub predicate_type: String,
    pub predicate: Value,
    /// `key cosign.pub (…)` or `identity … (issuer …)`.
    pub signer: String,
    /// `att tag`, `referrers`, `referrers tag`, each with `, bundle` for a Sigstore bundle.
    pub layout: &'static str,
}

/// One gate's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// `provenance`, `sbom` or `vulnerabilities`.
    pub gate: &'static str,
    pub passed: bool,
    /// What passed (`builder …, source …, ref …`) or why not.
    pub detail: String,
}

impl Verdict {
    /// `provenance: builder …` / `provenance failed: …`, for messages.
    pub fn describe(&self) -> String {
        let verb = if self.passed { "" } else { " failed" };
        format!("{}{verb}: {}", self.gate, self.detail)
    }
}

/// Every configured gate's verdict, in the order provenance, sbom, vulnerabilities.
pub fn judge(gates: &Gates, found: &[Attestation]) -> Vec<Verdict> {
    let mut out = Vec::new();
    if let Some(p) = &gates.provenance {
        out.push(provenance(p, found));
    }
    if gates.sbom {
        out.push(sbom(found));
    }
    if let Some(v) = &gates.vulnerabilities {
        out.push(vulnerabilities(v, found));
    }
    out
}

fn verdict(gate: &'static str, passed: bool, detail: String) -> Verdict {
    Verdict {
        gate,
        passed,
        detail,
    }
}

/// What a SLSA provenance says about where an image was built.
#[derive(Debug, Default, PartialEq, Eq)]
struct Facts {
    builder: Option<String>,
    source: Option<String>,
    reference: Option<String>,
    workflow: Option<String>,
}

fn text(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// A source URI without `git+`, an `@ref`/`@commit` suffix, `.git` or a final `/`; and
/// the ref or commit it named.
fn split_source(uri: &str) -> (String, Option<String>) {
    let uri = uri.strip_prefix("git+").unwrap_or(uri);
    let (repo, reference) = match uri.rsplit_once('@') {
        Some((repo, r))
            if r.starts_with("refs/")
                || (r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit())) =>
        {
            (repo, Some(r.to_string()))
        }
        _ => (uri, None),
    };
    let repo = repo.trim_end_matches('/');
    let repo = repo.strip_suffix(".git").unwrap_or(repo);
    (repo.to_string(), reference)
}

fn facts(a: &Attestation) -> Option<Facts> {
    let p = &a.predicate;
    match a.predicate_type.as_str() {
        SLSA_V1 => {
            let dep = p
                .pointer("/buildDefinition/resolvedDependencies/0/uri")
                .and_then(Value::as_str)
                .map(split_source);
            let wf = "/buildDefinition/externalParameters/workflow";
            let repo = text(p, &format!("{wf}/repository")).map(|r| split_source(&r).0);
            Some(Facts {
                builder: text(p, "/runDetails/builder/id"),
                source: repo.or_else(|| dep.as_ref().map(|d| d.0.clone())),
                reference: text(p, &format!("{wf}/ref")).or_else(|| dep.and_then(|d| d.1)),
                workflow: text(p, &format!("{wf}/path")),
            })
        }
        SLSA_V02 => {
            let source = text(p, "/invocation/configSource/uri").map(|u| split_source(&u));
            Some(Facts {
                builder: text(p, "/builder/id"),
                reference: source.as_ref().and_then(|s| s.1.clone()),
                source: source.map(|s| s.0),
                workflow: text(p, "/invocation/configSource/entryPoint"),
            })
        }
        _ => None,
    }
}

/// Why `facts` do not satisfy `want`, or `None`.
fn provenance_mismatch(want: &Provenance, facts: &Facts) -> Option<String> {
    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".into());
    let exact = |name: &str, want: &Option<String>, got: &Option<String>| match want {
        Some(w) if got.as_ref() != Some(w) => Some(format!("{name} {}, not {w}", show(got))),
        _ => None,
    };
    let reference = want.ref_reg_exp.as_ref().and_then(|re| {
        let ok = facts
            .reference
            .as_deref()
            .is_some_and(|r| regex::Regex::new(re).is_ok_and(|re| re.is_match(r)));
        (!ok).then(|| format!("ref {} does not match /{re}/", show(&facts.reference)))
    });
    exact("builder", &want.builder_id, &facts.builder)
        .or_else(|| exact("source", &want.source_repository, &facts.source))
        .or(reference)
        .or_else(|| exact("workflow", &want.workflow, &facts.workflow))
}

fn provenance(want: &Provenance, found: &[Attestation]) -> Verdict {
    let mut why = None;
    for a in found {
        let Some(f) = facts(a) else { continue };
        match provenance_mismatch(want, &f) {
            None => {
                let mut parts = vec![format!("builder {}", f.builder.unwrap_or_default())];
                parts.extend(f.source.map(|s| format!("source {s}")));
                parts.extend(f.reference.map(|r| format!("ref {r}")));
                parts.extend(f.workflow.map(|w| format!("workflow {w}")));
                let detail = format!("{}, signed by {}", parts.join(", "), a.signer);
                return verdict("provenance", true, detail);
            }
            Some(w) => why = why.or(Some(w)),
        }
    }
    let detail = why.unwrap_or_else(|| "no signed SLSA provenance attestation".into());
    verdict("provenance", false, detail)
}

fn sbom(found: &[Attestation]) -> Verdict {
    let kind = |a: &Attestation| {
        SBOMS
            .iter()
            .find(|(base, _)| {
                // The type itself or a versioned one (`…/bom/v1.5`), not `…/bomb`.
                (a.predicate_type.strip_prefix(base))
                    .is_some_and(|r| r.is_empty() || r.starts_with('/'))
            })
            .map(|(_, name)| *name)
    };
    match found.iter().find_map(|a| kind(a).map(|k| (k, a))) {
        Some((k, a)) => verdict("sbom", true, format!("{k}, signed by {}", a.signer)),
        None => verdict(
            "sbom",
            false,
            "no signed SBOM attestation (SPDX or CycloneDX)".into(),
        ),
    }
}

/// A report's findings (id, severity): Trivy's `Results[].Vulnerabilities[]` or Grype's
/// `matches[].vulnerability`; `None` when the report is neither.
fn findings(predicate: &Value) -> Option<Vec<(String, String)>> {
    let result = predicate.pointer("/scanner/result")?;
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let list = |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
    if let Some(results) = result.get("Results") {
        let mut out = Vec::new();
        for r in results.as_array()? {
            for v in list(r.get("Vulnerabilities")) {
                out.push((field(&v, "VulnerabilityID"), field(&v, "Severity")));
            }
            if out.len() > MAX_FINDINGS {
                return None;
            }
        }
        return Some(out);
    }
    let matches = result.get("matches")?.as_array()?;
    if matches.len() > MAX_FINDINGS {
        return None;
    }
    Some(
        matches
            .iter()
            .filter_map(|m| m.get("vulnerability"))
            .map(|v| (field(v, "id"), field(v, "severity")))
            .collect(),
    )
}

fn vulnerabilities(want: &Vulnerabilities, found: &[Attestation]) -> Verdict {
    let reports: Vec<&Attestation> = found.iter().filter(|a| a.predicate_type == VULN).collect();
    if reports.is_empty() {
        let why = "no signed vulnerability report attestation".to_string();
        return verdict("vulnerabilities", false, why);
    }
    let mut total = 0usize;
    let mut allowed = Vec::new();
    for a in &reports {
        let Some(list) = findings(&a.predicate) else {
            let why = "a vulnerability report whose results are neither Trivy's nor Grype's";
            return verdict("vulnerabilities", false, why.into());
        };
        for (id, severity) in list {
            let s = Severity::of_finding(&severity);
            if s <= want.max_severity {
                continue;
            }
            if want.allow_cves.contains(&id) {
                if !allowed.contains(&id) {
                    allowed.push(id);
                }
                continue;
            }
            let why = format!("{id} is {}, above {}", s.name(), want.max_severity.name());
            return verdict("vulnerabilities", false, why);
        }
        total = total.saturating_add(1);
    }
    let mut detail = format!(
        "{total} report(s), nothing above {}",
        want.max_severity.name()
    );
    if !allowed.is_empty() {
        detail.push_str(&format!(" but {} (allowed)", allowed.join(", ")));
    }
    let signers: Vec<&str> = reports.iter().map(|a| a.signer.as_str()).collect();
    detail.push_str(&format!(", signed by {}", signers.join(", ")));
    verdict("vulnerabilities", true, detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn att(kind: &str, predicate: Value) -> Attestation {
        Attestation {
            predicate_type: kind.into(),
            predicate,
            signer: "key k.pub".into(),
            layout: "att tag",
        }
    }

    fn v1(repo: &str, r: &str) -> Attestation {
        att(
            SLSA_V1,
            json!({"buildDefinition": {"externalParameters": {"workflow": {
                "ref": r, "repository": repo, "path": ".github/workflows/release.yml"}}},
                "runDetails": {"builder": {"id": "https://builder/x"}}}),
        )
    }

    #[test]
    fn provenance_v1_and_v02_are_read_and_compared() {
        let want = Provenance {
            builder_id: Some("https://builder/x".into()),
            source_repository: Some("https://github.com/acme/web".into()),
            ref_reg_exp: Some("^refs/tags/v".into()),
            workflow: Some(".github/workflows/release.yml".into()),
        };
        let good = v1("https://github.com/acme/web", "refs/tags/v1.2.0");
        let v = provenance(&want, &[good]);
        assert_eq!(v.describe(), "provenance: builder https://builder/x, source https://github.com/acme/web, ref refs/tags/v1.2.0, workflow .github/workflows/release.yml, signed by key k.pub");
        let evil = v1("https://github.com/evil/web", "refs/tags/v1.2.0");
        assert_eq!(
            provenance(&want, &[evil]).describe(),
            "provenance failed: source https://github.com/evil/web, not https://github.com/acme/web"
        );
        let branch = v1("https://github.com/acme/web", "refs/heads/main");
        assert_eq!(
            provenance(&want, &[branch]).detail,
            "ref refs/heads/main does not match /^refs/tags/v/"
        );
        let v02 = att(
            SLSA_V02,
            json!({"builder": {"id": "https://builder/x"}, "invocation": {"configSource": {
                "uri": "git+https://github.com/acme/web.git@refs/tags/v1.2.0",
                "entryPoint": ".github/workflows/release.yml"}}}),
        );
        assert!(provenance(&want, &[v02]).passed);
        let deps = att(
            SLSA_V1,
            json!({"buildDefinition": {"resolvedDependencies": [{"uri": "git+https://github.com/acme/web@refs/tags/v2"}]},
                "runDetails": {"builder": {"id": "https://builder/x"}}}),
        );
        let loose = Provenance {
            workflow: None,
            ..want.clone()
        };
        assert!(provenance(&loose, &[deps]).passed);
        assert_eq!(
            provenance(&want, &[att(VULN, json!({}))]).detail,
            "no signed SLSA provenance attestation"
        );
    }

    #[test]
    fn sbom_and_vulnerability_reports() {
        let spdx = att("https://spdx.dev/Document/v2.3", json!({}));
        assert_eq!(sbom(&[spdx]).describe(), "sbom: SPDX, signed by key k.pub");
        assert!(!sbom(&[]).passed);
        let cdx = att("https://cyclonedx.org/bom", json!({}));
        assert!(sbom(&[cdx]).passed);
        let other = att("https://cyclonedx.org/bomb", json!({}));
        assert!(!sbom(&[other]).passed);
        let trivy = |sev: &str| {
            att(
                VULN,
                json!({"scanner": {"result": {"Results": [{"Vulnerabilities": [
                    {"VulnerabilityID": "CVE-1", "Severity": sev}]}, {}]}}}),
            )
        };
        let want = |max, allow: &[&str]| Vulnerabilities {
            max_severity: max,
            allow_cves: allow.iter().map(|s| s.to_string()).collect(),
        };
        let high = want(Severity::High, &[]);
        assert!(vulnerabilities(&high, &[trivy("HIGH")]).passed);
        assert_eq!(
            vulnerabilities(&high, &[trivy("CRITICAL")]).detail,
            "CVE-1 is critical, above high"
        );
        assert_eq!(
            vulnerabilities(&high, &[trivy("UNKNOWN")]).detail,
            "CVE-1 is critical, above high"
        );
        let allowed = vulnerabilities(&want(Severity::None, &["CVE-1"]), &[trivy("LOW")]);
        assert_eq!(
            allowed.detail,
            "1 report(s), nothing above none but CVE-1 (allowed), signed by key k.pub"
        );
        // Every report must pass: a clean one does not hide a failing one.
        let clean = att(VULN, json!({"scanner": {"result": {"matches": []}}}));
        assert!(vulnerabilities(&high, std::slice::from_ref(&clean)).passed);
        assert!(!vulnerabilities(&high, &[clean, trivy("CRITICAL")]).passed);
        let grype = att(
            VULN,
            json!({"scanner": {"result": {"matches": [{"vulnerability": {"id": "GHSA-1", "severity": "Medium"}}]}}}),
        );
        assert!(!vulnerabilities(&want(Severity::Low, &[]), &[grype]).passed);
        let other = att(VULN, json!({"scanner": {"result": {"runs": []}}}));
        assert!(!vulnerabilities(&high, &[other]).passed);
        assert!(!vulnerabilities(&high, &[]).passed);
    }
}
