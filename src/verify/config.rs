//! `verify` in the configuration: key paths relative to the operator's file, checked when
//! it loads, and refused in the repository's own file (trust roots are the operator's).

use std::path::Path;

use imagebump_model::config::Config;
use imagebump_model::verify::VerifySpec;
use imagebump_yaml::PathSeg;

/// Key and trusted-root paths made relative to `base`, the directory of the configuration
/// file.
pub fn relative_keys(spec: &mut Option<VerifySpec>, base: &Path) {
    for s in spec.iter_mut() {
        for path in s.keys.iter_mut().chain(s.trusted_root.iter_mut()) {
            if Path::new(path).is_relative() {
                *path = base.join(&*path).display().to_string();
            }
        }
    }
}

/// Where the repository's `imagebump.yaml` sets `verify` (`defaults` or an `images` rule).
pub fn refused_in_repository(value: &serde_json::Value) -> Vec<Vec<PathSeg>> {
    let key = |k: &str| PathSeg::Key(k.into());
    let mut out = Vec::new();
    if value.pointer("/defaults/verify").is_some() {
        out.push(vec![key("defaults"), key("verify")]);
    }
    let rules = value.get("images").and_then(serde_json::Value::as_array);
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        if rule.get("verify").is_some() {
            out.push(vec![key("images"), PathSeg::Index(i), key("verify")]);
        }
    }
    out
}

/// The first `verify` whose keys are missing or unreadable: where, and why.
pub fn key_problem(config: &Config) -> Option<(Vec<PathSeg>, String)> {
    let key = |k: &str| PathSeg::Key(k.into());
    let specs = std::iter::once((
        vec![key("defaults"), key("verify")],
        &config.defaults.verify,
    ))
    .chain(config.images.iter().enumerate().map(|(i, r)| {
        (
            vec![key("images"), PathSeg::Index(i), key("verify")],
            &r.verify,
        )
    }));
    let verifier = super::Verifier::new();
    for (at, spec) in specs {
        let Some(spec) = spec else { continue };
        if spec.is_empty() {
            return Some((
                at,
                "verify needs keys: [path, ...] (cosign public keys) or identities: [{issuer, subjectRegExp}, ...] (keyless)".into(),
            ));
        }
        if let Some((i, p)) =
            (spec.identities.iter().enumerate()).find_map(|(i, id)| id.problem().map(|p| (i, p)))
        {
            let mut at = at;
            at.extend([key("identities"), PathSeg::Index(i)]);
            return Some((at, p));
        }
        let provenance = spec
            .attestations
            .as_ref()
            .and_then(|a| a.provenance.as_ref());
        if let Some(problem) = provenance.and_then(|p| p.problem()) {
            let mut at = at;
            at.extend([key("attestations"), key("provenance")]);
            return Some((at, problem));
        }
        if spec.trusted_root.is_some() && spec.identities.is_empty() {
            return Some((
                at,
                "trustedRoot is only for keyless identities: add identities or remove it".into(),
            ));
        }
        if let Err(e) = verifier.keys(spec) {
            return Some((at, e.to_string()));
        }
        if let Err(e) = verifier.root(spec) {
            return Some((at, e.to_string()));
        }
    }
    None
}
