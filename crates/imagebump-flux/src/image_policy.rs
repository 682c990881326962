//! `ImagePolicy`: which tag of an `ImageRepository` is the latest, mapped to an imagebump
//! policy.
//!
//! | Flux | imagebump |
//! |---|---|
//! | `policy.semver.range` | `strategy: semver`, `constraint`, `semverMode: masterminds` |
//! | `policy.alphabetical` (`order: asc`) | `strategy: alphabetical` |
//! | `policy.numerical` (`order: asc`) | `strategy: numeric` |
//! | `filterTags.pattern` | `allowTags: regexp:<pattern>` |
//! | `filterTags.pattern` + `extract: $group` | `strategy: regex`, the group renamed `version`, `ts` or `num` |
//!
//! `order: desc` selects the *lowest* tag; imagebump never proposes a lower version, so a
//! value under such a policy is listed and left alone.

use super::{Fields, Invalid, Meta, Note};
use imagebump_model::policy::{PolicySpec, SemverMode, Strategy};
use imagebump_policy::patterns::PatternError;

/// How the latest tag is chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    Semver { range: String },
    Alphabetical { desc: bool },
    Numerical { desc: bool },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagePolicy {
    pub meta: Meta,
    /// `spec.imageRepositoryRef`: namespace (the policy's own when unset) and name.
    pub repository: (Option<String>, String),
    pub rule: Rule,
    /// The imagebump policy; `Err` says why Flux's rule cannot be followed.
    pub spec: Result<PolicySpec, RuleError>,
    /// `digestReflectionPolicy` is `Always` or `IfNotPresent`.
    pub reflects_digest: bool,
}

pub fn read(fields: &Fields, meta: Meta, notes: &mut Vec<Note>) -> Result<ImagePolicy, Invalid> {
    let name = fields.required(&["spec", "imageRepositoryRef", "name"])?;
    let namespace = fields
        .string(&["spec", "imageRepositoryRef", "namespace"])?
        .or_else(|| meta.namespace.clone());
    let rule = rule(fields)?;
    let reflects_digest = reflects_digest(fields)?;
    let spec = match (&rule, filtered(fields, &rule)?) {
        (Rule::Alphabetical { desc: true } | Rule::Numerical { desc: true }, _) => {
            Err(RuleError::Descending)
        }
        (_, spec) => spec,
    };
    if let Err(why) = &spec {
        notes.push(Note {
            offset: fields.offset(&["spec", "policy"]),
            message: format!(
                "{}: {why}; the values it marks are left alone",
                meta.id("ImagePolicy")
            ),
        });
    }
    Ok(ImagePolicy {
        meta,
        repository: (namespace, name),
        rule,
        spec,
        reflects_digest,
    })
}

/// `spec.digestReflectionPolicy`: is the digest of the latest tag reflected?
fn reflects_digest(fields: &Fields) -> Result<bool, Invalid> {
    match fields
        .string(&["spec", "digestReflectionPolicy"])?
        .as_deref()
    {
        None | Some("Never") => Ok(false),
        Some("Always" | "IfNotPresent") => Ok(true),
        Some(other) => Err(Invalid {
            offset: fields.offset(&["spec", "digestReflectionPolicy"]),
            message: format!(
                "spec.digestReflectionPolicy {other:?} is not Always, IfNotPresent or Never"
            ),
        }),
    }
}

/// The policy of `rule` with `spec.filterTags` applied.
fn filtered(fields: &Fields, rule: &Rule) -> Result<Result<PolicySpec, RuleError>, Invalid> {
    let pattern = fields.string(&["spec", "filterTags", "pattern"])?;
    let extract = fields.string(&["spec", "filterTags", "extract"])?;
    let Some(p) = pattern.filter(|p| !p.is_empty()) else {
        return Ok(Ok(plain(rule)));
    };
    if let Err(e) = imagebump_policy::patterns::compile(&p) {
        let message = match e {
            PatternError::Invalid { message, .. } => {
                format!("spec.filterTags.pattern is not a regular expression: {message}")
            }
            other => format!("spec.filterTags.pattern: {other}"),
        };
        return Err(Invalid {
            offset: fields.offset(&["spec", "filterTags", "pattern"]),
            message,
        });
    }
    Ok(match extract.filter(|e| !e.is_empty()) {
        None => Ok(PolicySpec {
            allow_tags: Some(format!("regexp:{p}")),
            ..plain(rule)
        }),
        Some(e) => extracted(rule, &p, &e),
    })
}

/// `spec.policy`: exactly one of `semver`, `alphabetical`, `numerical`.
fn rule(fields: &Fields) -> Result<Rule, Invalid> {
    let order = |kind: &str| -> Result<bool, Invalid> {
        match fields
            .string(&["spec", "policy", kind, "order"])?
            .as_deref()
        {
            None | Some("asc") => Ok(false),
            Some("desc") => Ok(true),
            Some(other) => Err(Invalid {
                offset: fields.offset(&["spec", "policy", kind, "order"]),
                message: format!("spec.policy.{kind}.order {other:?} is not asc or desc"),
            }),
        }
    };
    let mut rules = Vec::new();
    if fields.node(&["spec", "policy", "semver"]).is_some() {
        let range = fields.required(&["spec", "policy", "semver", "range"])?;
        rules.push(Rule::Semver { range });
    }
    if fields.node(&["spec", "policy", "alphabetical"]).is_some() {
        rules.push(Rule::Alphabetical {
            desc: order("alphabetical")?,
        });
    }
    if fields.node(&["spec", "policy", "numerical"]).is_some() {
        rules.push(Rule::Numerical {
            desc: order("numerical")?,
        });
    }
    match <[Rule; 1]>::try_from(rules) {
        Ok([rule]) => Ok(rule),
        Err(_) => Err(Invalid {
            offset: fields.offset(&["spec", "policy"]),
            message: "spec.policy must hold exactly one of semver, alphabetical, numerical".into(),
        }),
    }
}

/// The policy of a rule on whole tags.
fn plain(rule: &Rule) -> PolicySpec {
    match rule {
        Rule::Semver { range } => PolicySpec {
            strategy: Some(Strategy::Semver),
            constraint: Some(range.clone()),
            semver_mode: Some(SemverMode::Masterminds),
            ..Default::default()
        },
        Rule::Alphabetical { .. } => PolicySpec {
            strategy: Some(Strategy::Alphabetical),
            ..Default::default()
        },
        Rule::Numerical { .. } => PolicySpec {
            strategy: Some(Strategy::Numeric),
            ..Default::default()
        },
    }
}

/// Why Flux's rule cannot be followed: imagebump never moves to a lower version, and
/// orders tags by one named group of the pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error(
        "its order is desc, which selects the lowest tag: imagebump never moves to a lower version"
    )]
    Descending,
    #[error("filterTags.extract {extract:?} is more than one group (`$name`, `${{name}}` or `$1`); imagebump orders tags by one group")]
    NotOneGroup { extract: String },
    #[error("filterTags.pattern has no group {extract} to extract")]
    NoSuchGroup { extract: String },
}

impl RuleError {
    /// What to write instead.
    pub fn hint(&self) -> &'static str {
        match self {
            RuleError::Descending => "use order: asc, or pin the image where it is",
            RuleError::NotOneGroup { .. } => {
                "extract one group: `$name`, `${name}` or `$1`, and keep the rest of the tag in the pattern"
            }
            RuleError::NoSuchGroup { .. } => {
                "name the group in filterTags.pattern, e.g. (?P<ts>[0-9]+) for extract: $ts"
            }
        }
    }
}

/// `pattern` + `extract: $group`: the `regex` strategy ordering by that group, renamed
/// for how the rule compares it.
fn extracted(rule: &Rule, pattern: &str, extract: &str) -> Result<PolicySpec, RuleError> {
    let (group, constraint, mode) = match rule {
        Rule::Semver { range } => (
            "version",
            Some(range.clone()),
            Some(SemverMode::Masterminds),
        ),
        Rule::Alphabetical { .. } => ("ts", None, None),
        Rule::Numerical { .. } => ("num", None, None),
    };
    let Some(which) = extract_group(extract) else {
        return Err(RuleError::NotOneGroup {
            extract: extract.to_string(),
        });
    };
    let Some(pattern) = rename_group(pattern, &which, group) else {
        return Err(RuleError::NoSuchGroup {
            extract: extract.to_string(),
        });
    };
    Ok(PolicySpec {
        strategy: Some(Strategy::Regex),
        pattern: Some(pattern),
        constraint,
        semver_mode: mode,
        ..Default::default()
    })
}

/// A group as Go's `Regexp.Expand` names it in a template that is nothing but that group.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Group {
    Named(String),
    Numbered(usize),
}

fn extract_group(extract: &str) -> Option<Group> {
    let body = extract.trim().strip_prefix('$')?;
    let name = match body.strip_prefix('{') {
        Some(b) => b.strip_suffix('}')?,
        None => body,
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    Some(match name.parse::<usize>() {
        Ok(n) => Group::Numbered(n),
        Err(_) => Group::Named(name.to_string()),
    })
}

/// `pattern` with the capturing group `which` named `to`; `None` when there is no such
/// group, or another group is already called `to`.
fn rename_group(pattern: &str, which: &Group, to: &str) -> Option<String> {
    let mut out = String::with_capacity(pattern.len().saturating_add(8));
    let (mut escaped, mut class, mut count, mut done) = (false, false, 0usize, false);
    let mut rest = pattern;
    while let Some(c) = rest.chars().next() {
        rest = rest.get(c.len_utf8()..)?;
        out.push(c);
        if escaped || c == '\\' {
            escaped = !escaped && c == '\\';
            continue;
        }
        match c {
            '[' => class = true,
            ']' => class = false,
            '(' if !class => {
                let named = rest
                    .strip_prefix("?P<")
                    .or_else(|| rest.strip_prefix("?<"))
                    .and_then(|r| r.split_once('>'));
                if rest.starts_with('?') && named.is_none() {
                    continue;
                }
                count = count.saturating_add(1);
                let this = match (&named, which) {
                    (Some((name, _)), Group::Named(want)) => name == want,
                    (_, Group::Numbered(n)) => count == *n,
                    (None, Group::Named(_)) => false,
                };
                match named {
                    Some((_, after)) if this => {
                        out.push_str(&format!("?P<{to}>"));
                        rest = after;
                        done = true;
                    }
                    Some((name, _)) if name == to => return None,
                    None if this => {
                        out.push_str(&format!("?P<{to}>"));
                        done = true;
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    done.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(spec: &str) -> (Result<ImagePolicy, Invalid>, Vec<String>) {
        let text = format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: podinfo\n  namespace: flux-system\nspec:\n{spec}"
        );
        let docs = imagebump_yaml::parse_located(&text).unwrap();
        let fields = Fields::new(docs[0].root.as_ref().unwrap());
        let meta = Meta {
            name: "podinfo".into(),
            namespace: Some("flux-system".into()),
            file: "p.yaml".into(),
            line: 1,
        };
        let mut notes = Vec::new();
        let p = read(&fields, meta, &mut notes);
        (p, notes.into_iter().map(|n| n.message).collect())
    }

    fn spec(spec: &str) -> PolicySpec {
        let (p, notes) = policy(spec);
        assert!(notes.is_empty(), "{notes:?}");
        p.unwrap().spec.unwrap()
    }

    /// The policies of Flux's ImagePolicy documentation and image automation guide.
    #[test]
    fn maps_the_documented_policies() {
        let s = spec("  imageRepositoryRef:\n    name: podinfo\n  policy:\n    semver:\n      range: 5.0.x\n");
        assert_eq!(s.strategy, Some(Strategy::Semver));
        assert_eq!(s.constraint.as_deref(), Some("5.0.x"));
        assert_eq!(s.semver_mode, Some(SemverMode::Masterminds));

        let s = spec("  imageRepositoryRef:\n    name: podinfo\n  filterTags:\n    pattern: '.*-rc.*'\n  policy:\n    semver:\n      range: '^1.x-0'\n");
        assert_eq!(s.allow_tags.as_deref(), Some("regexp:.*-rc.*"));
        assert_eq!(s.constraint.as_deref(), Some("^1.x-0"));

        let s = spec("  imageRepositoryRef:\n    name: minio\n  filterTags:\n    pattern: '^RELEASE\\.(?P<timestamp>.*)Z$'\n    extract: '$timestamp'\n  policy:\n    alphabetical:\n      order: asc\n");
        assert_eq!(s.strategy, Some(Strategy::Regex));
        assert_eq!(s.pattern.as_deref(), Some("^RELEASE\\.(?P<ts>.*)Z$"));

        let s = spec("  imageRepositoryRef:\n    name: podinfo\n  filterTags:\n    pattern: '^main-[a-fA-F0-9]+-(?P<ts>.*)'\n    extract: '$ts'\n  policy:\n    numerical:\n      order: asc\n");
        assert_eq!(s.strategy, Some(Strategy::Regex));
        assert_eq!(s.pattern.as_deref(), Some("^main-[a-fA-F0-9]+-(?P<num>.*)"));

        let s = spec("  imageRepositoryRef:\n    name: podinfo\n  policy:\n    numerical: {}\n");
        assert_eq!(s.strategy, Some(Strategy::Numeric));
        let s = spec("  imageRepositoryRef:\n    name: podinfo\n  policy:\n    alphabetical: {}\n");
        assert_eq!(s.strategy, Some(Strategy::Alphabetical));
    }

    #[test]
    fn reads_the_repository_reference_and_digest_reflection() {
        let (p, _) = policy("  imageRepositoryRef:\n    name: podinfo\n    namespace: images\n  digestReflectionPolicy: IfNotPresent\n  policy:\n    semver:\n      range: '>=1.0.0'\n");
        let p = p.unwrap();
        assert_eq!(p.repository, (Some("images".into()), "podinfo".into()));
        assert!(p.reflects_digest);
        let (p, _) = policy("  imageRepositoryRef:\n    name: podinfo\n  policy:\n    semver:\n      range: '>=1.0.0'\n");
        assert_eq!(
            p.unwrap().repository,
            (Some("flux-system".into()), "podinfo".into())
        );
    }

    #[test]
    fn desc_order_is_noted_and_not_followed() {
        let (p, notes) = policy("  imageRepositoryRef:\n    name: podinfo\n  policy:\n    numerical:\n      order: desc\n");
        assert!(p
            .unwrap()
            .spec
            .unwrap_err()
            .to_string()
            .contains("selects the lowest tag"));
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with("ImagePolicy flux-system/podinfo: its order is desc"),
            "{}",
            notes[0]
        );
    }

    #[test]
    fn malformed_policies_are_invalid() {
        let cases = [
            ("  policy:\n    semver:\n      range: 1.x\n", "spec.imageRepositoryRef.name is required"),
            ("  imageRepositoryRef: {name: p}\n", "spec.policy must hold exactly one of semver, alphabetical, numerical"),
            ("  imageRepositoryRef: {name: p}\n  policy:\n    semver: {}\n", "spec.policy.semver.range is required"),
            ("  imageRepositoryRef: {name: p}\n  policy:\n    semver: {range: 1.x}\n    numerical: {}\n", "spec.policy must hold exactly one of semver, alphabetical, numerical"),
            ("  imageRepositoryRef: {name: p}\n  policy:\n    alphabetical: {order: up}\n", "spec.policy.alphabetical.order \"up\" is not asc or desc"),
            ("  imageRepositoryRef: {name: p}\n  digestReflectionPolicy: Sometimes\n  policy:\n    alphabetical: {}\n", "spec.digestReflectionPolicy \"Sometimes\" is not Always, IfNotPresent or Never"),
        ];
        for (text, want) in cases {
            assert_eq!(policy(text).0.unwrap_err().message, want, "{text}");
        }
        let e = policy("  imageRepositoryRef: {name: p}\n  filterTags: {pattern: '^(v'}\n  policy:\n    alphabetical: {}\n").0.unwrap_err();
        assert!(
            e.message
                .starts_with("spec.filterTags.pattern is not a regular expression"),
            "{}",
            e.message
        );
    }

    #[test]
    fn extract_names_one_group() {
        assert_eq!(extract_group("$ts"), Some(Group::Named("ts".into())));
        assert_eq!(
            extract_group("${build}"),
            Some(Group::Named("build".into()))
        );
        assert_eq!(extract_group("$1"), Some(Group::Numbered(1)));
        assert_eq!(extract_group("$a-$b"), None);
        assert_eq!(extract_group("v$1"), None);
        assert_eq!(
            rename_group(r"^main-(\d+)-([a-f0-9]+)$", &Group::Numbered(1), "num").as_deref(),
            Some(r"^main-(?P<num>\d+)-([a-f0-9]+)$")
        );
        assert_eq!(
            rename_group(r"^(?:x)-[(](a)$", &Group::Numbered(1), "ts").as_deref(),
            Some(r"^(?:x)-[(](?P<ts>a)$")
        );
        assert_eq!(
            rename_group(r"\(a\)(b)", &Group::Numbered(1), "ts").as_deref(),
            Some(r"\(a\)(?P<ts>b)")
        );
        assert_eq!(
            rename_group(r"(?<v>[0-9.]+)", &Group::Named("v".into()), "version").as_deref(),
            Some(r"(?P<version>[0-9.]+)")
        );
        assert_eq!(rename_group(r"(a)", &Group::Numbered(2), "ts"), None);
        assert_eq!(
            rename_group(r"(?P<num>a)(b)", &Group::Numbered(2), "num"),
            None
        );
        let s = extracted(&Rule::Alphabetical { desc: false }, "(a)", "$a-$b").unwrap_err();
        assert_eq!(
            s.to_string(),
            "filterTags.extract \"$a-$b\" is more than one group (`$name`, `${name}` or `$1`); imagebump orders tags by one group"
        );
        assert!(s.hint().starts_with("extract one group"));
        let s = extracted(&Rule::Alphabetical { desc: false }, "(a)", "$b").unwrap_err();
        assert_eq!(
            s.to_string(),
            "filterTags.pattern has no group $b to extract"
        );
    }
}
