//! Update policies: which tag a reference should move to, given the registry's tags and,
//! for some strategies and filters, image metadata.
//!
//! A [`Policy`] is the compiled form of the effective [`PolicySpec`] of one reference.
//! Strategies live one per file behind the [`strategy::Strategy`] trait and only read and
//! order tags; [`evaluate::Evaluation`]
//! runs the filters and keeps every candidate's verdict, so a choice can be explained.
//! Metadata (digests, build dates, platforms) is asked for by the evaluation and fetched by
//! the resolve stage; policies never call a registry themselves.

// Unit tests may count, slice and call `unreachable!`; clippy.toml lets them unwrap, expect,
// panic and index (Cargo.toml holds the library to the no-panic set).
#![cfg_attr(
    test,
    allow(
        clippy::arithmetic_side_effects,
        clippy::string_slice,
        clippy::unreachable
    )
)]

pub mod age;
pub mod alphabetical;
pub mod candidate;
pub mod constraint;
pub mod digest;
pub mod evaluate;
pub mod filters;
pub mod kind;
pub mod newest_build;
pub mod numeric;
pub mod patterns;
pub mod platforms;
pub mod regex;
pub mod rules;
pub mod schedule;
pub mod semver;
pub mod strategy;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use constraint::Constraint;
use filters::{AllowTags, IgnoreTags};
use imagebump_model::platform::Platform;
use imagebump_model::policy::{ImageRule, PolicySpec, SemverMode, Strategy};

/// Where the settings of a reference's policy came from, least specific first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PolicySource(pub Vec<String>);

impl fmt::Display for PolicySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("built-in")
        } else {
            f.write_str(&self.0.join(" + "))
        }
    }
}

/// A setting that does not compile: the key as written in `imagebump.yaml` and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct PolicyError {
    pub key: &'static str,
    pub message: String,
    pub hint: Option<String>,
}

impl PolicyError {
    fn new(key: &'static str, message: impl Into<String>) -> Self {
        PolicyError {
            key,
            message: message.into(),
            hint: None,
        }
    }

    fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// The compiled policy of one reference. Cheap to clone; compared by its settings.
#[derive(Debug, Clone)]
pub struct Policy(Arc<Compiled>);

#[derive(Debug)]
pub struct Compiled {
    /// The effective settings (every level merged).
    pub spec: PolicySpec,
    pub source: PolicySource,
    pub strategy: Strategy,
    pub semver_mode: SemverMode,
    pub constraint: Option<Constraint>,
    pub allow: Option<AllowTags>,
    pub ignore_tags: Option<IgnoreTags>,
    pub pattern: Option<regex::TagPattern>,
    pub platforms: Vec<Platform>,
    /// `platforms: [any]`: no platform is required, not even those the current version
    /// offers (see [`platforms`]).
    pub any_platform: bool,
    pub min_age: Option<Duration>,
    pub allow_downgrade: bool,
    pub pin: bool,
    pub ignore: bool,
    /// The image's own credentials source (`env:VAR`, `file:PATH`...), beating its
    /// `registries` entry's. Only [`rules::Policies`] sets it, from the operator's `images`
    /// rules and `credentials.pullSecrets`: nothing the repository writes reaches it.
    pub credentials: Option<String>,
    /// `schedule`, `timezone` and `freeze` (`None`: proposed at any time).
    pub calendar: Option<schedule::Calendar>,
    /// Notes for the user that are not errors (e.g. an exact-version constraint).
    pub warnings: Vec<String>,
}

impl std::ops::Deref for Policy {
    type Target = Compiled;
    fn deref(&self) -> &Compiled {
        &self.0
    }
}

impl PartialEq for Policy {
    fn eq(&self, other: &Self) -> bool {
        self.0.spec == other.0.spec
            && self.0.source == other.0.source
            && self.0.credentials == other.0.credentials
    }
}

impl Eq for Policy {}

impl std::hash::Hash for Policy {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.spec.hash(state);
        self.0.credentials.hash(state);
    }
}

impl Default for Policy {
    // why: the built-in defaults always compile (every test that builds a default policy
    // shows it), and `Default` has no way to report an error.
    #[allow(clippy::unreachable)]
    fn default() -> Self {
        // Compiled once and shared: every reference starts with it (tens of thousands in a
        // large tree) until discovery gives it its own.
        static DEFAULT: std::sync::OnceLock<Policy> = std::sync::OnceLock::new();
        DEFAULT
            .get_or_init(|| {
                Policy::compile(PolicySpec::default(), PolicySource::default())
                    .unwrap_or_else(|_| unreachable!("empty policy compiles"))
            })
            .clone()
    }
}

impl Serialize for Policy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Shown<'a> {
            strategy: Strategy,
            #[serde(flatten)]
            spec: &'a PolicySpec,
            #[serde(skip_serializing_if = "Option::is_none")]
            credentials: Option<&'a str>,
            source: String,
        }
        let mut spec = self.spec.clone();
        spec.strategy = None;
        Shown {
            strategy: self.strategy,
            spec: &spec,
            credentials: self.credentials.as_deref(),
            source: self.source.to_string(),
        }
        .serialize(s)
    }
}

impl Policy {
    /// Compile `spec`; every error names the key as written in `imagebump.yaml`.
    pub fn compile(spec: PolicySpec, source: PolicySource) -> Result<Policy, PolicyError> {
        Policy::compile_with(spec, source, None)
    }

    /// `spec` compiled, with the operator's `credentials` for the image (a source that
    /// does not parse is an error on the `credentials` key).
    pub fn compile_with(
        spec: PolicySpec,
        source: PolicySource,
        credentials: Option<String>,
    ) -> Result<Policy, PolicyError> {
        if let Some(c) = credentials.as_deref() {
            imagebump_model::credentials::Source::parse(c).map_err(|m| {
                PolicyError::new("credentials", m.to_string()).hint("see docs/registries.md")
            })?;
        }
        let strategy = spec.strategy.unwrap_or_default();
        let mut warnings = Vec::new();
        let constraint = compile_constraint(spec.constraint.as_deref(), &mut warnings)?;
        let (allow, ignore_tags) = compile_tag_filters(&spec)?;
        let pattern = compile_pattern(spec.pattern.as_deref(), strategy)?;
        let any_platform = platforms::compile_any(spec.platforms.as_deref())?;
        let (platforms, min_age) = compile_metadata_filters(&spec)?;
        let calendar = schedule::Calendar::compile(&spec)?;
        if let Some(group) = spec.group.as_deref() {
            check_group(group)?;
        }
        Ok(Policy(Arc::new(Compiled {
            strategy,
            semver_mode: spec.semver_mode.unwrap_or_default(),
            constraint,
            allow,
            ignore_tags,
            pattern,
            platforms,
            any_platform,
            min_age,
            allow_downgrade: spec.allow_downgrade.unwrap_or(false),
            pin: spec.pin.unwrap_or(false),
            ignore: spec.ignore.unwrap_or(false),
            credentials,
            calendar,
            warnings,
            spec,
            source,
        })))
    }

    /// What image metadata the policy needs beyond the tag list.
    pub fn needs_metadata(&self) -> bool {
        self.strategy == Strategy::NewestBuild
            || self.min_age.is_some()
            || !self.platforms.is_empty()
    }

    /// Whether the policy needs build dates (not just digests and platforms).
    pub fn needs_created(&self) -> bool {
        self.strategy == Strategy::NewestBuild || self.min_age.is_some()
    }

    /// Whether the repository's tag list is needed (`digest` follows one tag instead).
    pub fn needs_tag_list(&self) -> bool {
        self.strategy != Strategy::Digest
    }

    /// A one-line summary for tables: `semver ~1.4`, `newest-build allow regexp:^main-`.
    pub fn summary(&self) -> String {
        let mut s = self.strategy.to_string();
        if self.pin {
            return "pin".into();
        }
        // Only the strategies that read versions use the constraint.
        if let (Some(c), Strategy::Semver | Strategy::Regex) = (&self.constraint, self.strategy) {
            s.push(' ');
            s.push_str(c.as_str());
        }
        if self.semver_mode == SemverMode::Masterminds && self.strategy == Strategy::Semver {
            s.push_str(" (masterminds)");
        }
        if let Some(p) = &self.spec.pattern {
            s.push_str(&format!(" /{p}/"));
        }
        if let Some(a) = &self.spec.allow_tags {
            s.push_str(&format!(" allow {a}"));
        }
        if let Some(i) = self.spec.ignore_tags.as_ref().filter(|i| !i.is_empty()) {
            s.push_str(&format!(" ignore {}", i.join(",")));
        }
        if let Some(p) = self.spec.platforms.as_ref().filter(|p| !p.is_empty()) {
            s.push_str(&format!(" {}", p.join(",")));
        }
        if let Some(a) = &self.spec.min_age {
            s.push_str(&format!(" age>={a}"));
        }
        if self.allow_downgrade {
            s.push_str(" downgrade-ok");
        }
        s
    }
}

/// The `constraint` setting, with a warning when it means one exact version.
fn compile_constraint(
    text: Option<&str>,
    warnings: &mut Vec<String>,
) -> Result<Option<Constraint>, PolicyError> {
    let Some(text) = text else {
        return Ok(None);
    };
    let c = Constraint::parse(text).map_err(|e| {
        PolicyError::new("constraint", e.to_string())
            .hint("Masterminds syntax, e.g. ~1.4, ^1, 1.x, >=1.2 <2, >=2 || 1.9.x")
    })?;
    if let Some(v) = c.exact_version() {
        warnings.push(format!(
            "constraint {text:?} means exactly {v}, so nothing will be updated; \
             use \"~{}.{}\" or \"{}.{}\" for a range",
            v.major, v.minor, v.major, v.minor
        ));
    }
    Ok(Some(c))
}

/// The `allowTags` and `ignoreTags` settings.
fn compile_tag_filters(
    spec: &PolicySpec,
) -> Result<(Option<AllowTags>, Option<IgnoreTags>), PolicyError> {
    let allow = match spec.allow_tags.as_deref() {
        None => None,
        Some(text) => AllowTags::parse(text)
            .map_err(|e| PolicyError::new("allowTags", e.to_string()).hint(e.hint()))?,
    };
    let ignore_tags = match &spec.ignore_tags {
        None => None,
        Some(globs) => Some(
            IgnoreTags::parse(globs)
                .map_err(|e| PolicyError::new("ignoreTags", e.to_string()).hint(e.hint()))?,
        ),
    };
    Ok((allow, ignore_tags))
}

/// The `pattern` setting, which strategy `regex` cannot do without.
fn compile_pattern(
    text: Option<&str>,
    strategy: Strategy,
) -> Result<Option<regex::TagPattern>, PolicyError> {
    const HINT: &str = "e.g. pattern: '^main-[0-9a-f]+-(?P<ts>[0-9]+)$'";
    let pattern = match text {
        None => None,
        Some(text) => Some(
            regex::TagPattern::parse(text)
                .map_err(|e| PolicyError::new("pattern", e.to_string()).hint(e.hint()))?,
        ),
    };
    if strategy == Strategy::Regex && pattern.is_none() {
        return Err(PolicyError::new("pattern", "strategy `regex` needs a `pattern`").hint(HINT));
    }
    Ok(pattern)
}

/// The longest `group` name: a branch name holds it whole.
pub const GROUP_NAME_LIMIT: usize = 64;

/// A `group` name: it becomes a branch (`imagebump/<group>`) and a title as it is, so only
/// lowercase letters, digits, `-`, `_`, `.` and `/` between names, at most
/// [`GROUP_NAME_LIMIT`] characters, and each `/`-separated part a name git takes in a
/// branch (`git check-ref-format`: not empty, no `.` at either end, no `..`, no `.lock` at
/// its end; the other characters git refuses are not allowed at all).
fn check_group(group: &str) -> Result<(), PolicyError> {
    let hint = "a name such as monitoring or team-a/databases";
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_./".contains(c);
    let why = if group.is_empty() {
        Some("an empty group name".to_string())
    } else if group.len() > GROUP_NAME_LIMIT {
        Some(format!(
            "group name longer than {GROUP_NAME_LIMIT} characters"
        ))
    } else if let Some(c) = group.chars().find(|&c| !allowed(c)) {
        Some(format!(
            "group name {group:?} holds {c:?}: only lowercase letters, digits, -, _, . and / are allowed"
        ))
    } else if group.split('/').any(|part| {
        part.is_empty() || part.starts_with('.') || part.ends_with('.') || part.contains("..")
    }) {
        Some(format!(
            "group name {group:?} has an empty part, or a part starting or ending with ."
        ))
    } else if group.split('/').any(|part| part.ends_with(".lock")) {
        Some(format!(
            "group name {group:?} has a part ending with .lock, which git refuses in a branch name"
        ))
    } else {
        None
    };
    match why {
        Some(message) => Err(PolicyError::new("group", message).hint(hint)),
        None => Ok(()),
    }
}

/// The `platforms` and `minAge` settings (a zero age is none).
fn compile_metadata_filters(
    spec: &PolicySpec,
) -> Result<(Vec<Platform>, Option<Duration>), PolicyError> {
    let platforms = spec
        .platforms
        .iter()
        .flatten()
        .filter(|p| !platforms::is_any(p))
        .map(|p| p.parse::<Platform>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|m| PolicyError::new("platforms", m).hint("e.g. linux/amd64, linux/arm64/v8"))?;
    let min_age = match spec.min_age.as_deref() {
        None => None,
        Some(text) => Some(imagebump_model::duration::parse_age(text).map_err(|m| {
            PolicyError::new("minAge", m.to_string()).hint("e.g. 3d, 12h, 1h30m, 2w")
        })?)
        .filter(|d| !d.is_zero()),
    };
    Ok((platforms, min_age))
}

/// Why `policy` cannot judge `current` at all, decided before any registry work (so a
/// reference such as `latest` under `semver` costs no request).
pub fn cannot_judge(policy: &Policy, current: &str) -> Option<String> {
    evaluate::Evaluation::precheck(policy, current)
}

#[cfg(test)]
mod group_tests {
    use super::*;

    #[test]
    fn group_names_are_branch_safe() {
        for good in ["monitoring", "team-a/db", "v1.2_x", "db.locked", "lock/x"] {
            assert!(check_group(good).is_ok(), "{good}");
        }
        let long = "a".repeat(GROUP_NAME_LIMIT + 1);
        for bad in [
            "",
            "Team A",
            "a//b",
            "../x",
            "x.",
            "a b",
            "ü",
            "db.lock",
            "team/db.lock/x",
            "a@{1}",
            "x~1",
            "a:b",
            long.as_str(),
        ] {
            let e = check_group(bad)
                .err()
                .unwrap_or_else(|| panic!("{bad:?} passed"));
            assert_eq!(e.key, "group");
        }
    }
}
