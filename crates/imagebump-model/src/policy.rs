//! Policy vocabulary: the strategies, the semver modes, and the policy keys, written once and shared by `defaults`, every `images` rule and inline
//! markers, so the three cannot drift apart (serde's `flatten` cannot be combined with
//! `deny_unknown_fields`, hence the macro).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use std::fmt;

/// `images[].match` when a rule names none: every image.
fn any_image() -> String {
    "**".to_string()
}

/// How an update reaches the base branch.
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
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Delivery {
    /// Through a pull request a human merges (the default).
    #[default]
    PullRequest,
    /// Committed to the base branch directly, in the same run (for environments that
    /// follow new images without review, such as dev).
    Push,
}

/// How the next tag is chosen.
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
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Highest version that satisfies the constraint (tag list only).
    #[default]
    Semver,
    /// The tag whose image was built last (config `created`); needs image metadata.
    NewestBuild,
    /// Follow the current (mutable) tag and pin its digest when it changes.
    Digest,
    /// Greatest tag by byte order (calendar versions such as `2026-05-01`).
    Alphabetical,
    /// Greatest tag that is an integer (build numbers).
    Numeric,
    /// Greatest value of the named group of `pattern` (`version`, `num` or `ts`).
    Regex,
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Strategy::Semver => "semver",
            Strategy::NewestBuild => "newest-build",
            Strategy::Digest => "digest",
            Strategy::Alphabetical => "alphabetical",
            Strategy::Numeric => "numeric",
            Strategy::Regex => "regex",
        })
    }
}

/// How `semver` reads tag suffixes.
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
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum SemverMode {
    /// A non-pre-release suffix (`-alpine`) is a variant that must match; precision kept.
    #[default]
    Variant,
    /// Strict Masterminds semver (argocd-image-updater): every suffix is a pre-release.
    Masterminds,
}

macro_rules! policy_keys {
    ($( $(#[$doc:meta])* $field:ident : $ty:ty ),* $(,)?) => {
        /// Update policy settings. Every key is optional; unset keys inherit from the level
        /// above (built-in defaults → `defaults` → the first matching `images` rule → an
        /// inline marker). Repository content produces these, so they never say which
        /// credentials are sent anywhere: that is [`ImageRule::credentials`], the operator's.
        #[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize, JsonSchema)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        pub struct PolicySpec {
            $( $(#[$doc])* #[serde(default, skip_serializing_if = "Option::is_none")] pub $field: Option<$ty>, )*
        }

        /// A policy for the images whose repository matches `match`. The first matching
        /// rule wins.
        #[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        pub struct ImageRule {
            /// Glob on the image repository, compared with both the normalised name
            /// (`docker.io/library/nginx`) and the name as written (`nginx`). `*` stays
            /// within one path segment, `**` crosses them.
            #[serde(rename = "match", default = "any_image")]
            pub glob: String,
            /// Glob on the file that holds the reference, relative to the repository root
            /// (`apps/*/overlays/dev/**`): the rule applies only there. `*` stays within one
            /// directory, `**` crosses them. Unset: every file.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub path: Option<String>,
            /// Take the versions another environment has run, from the base branch's
            /// history, instead of the registry's tags (docs/promotion.md).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub promote_from: Option<crate::promotion::PromoteFrom>,
            /// This image's own registry credentials, beating its `registries` entry's: any
            /// source `registries[].credentials` takes (`env:VAR`, `file:PATH`, `ext:PATH`,
            /// ...). Operator's configuration only: the first operator rule matching the
            /// image that sets one gives it, whichever rule decides the policy. Not a policy
            /// key, so no marker, annotation or repository setting can carry it.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub credentials: Option<String>,
            $( $(#[$doc])* #[serde(default, skip_serializing_if = "Option::is_none")] pub $field: Option<$ty>, )*
        }

        impl ImageRule {
            /// The rule's policy keys.
            pub fn policy(&self) -> PolicySpec {
                PolicySpec { $( $field: self.$field.clone(), )* }
            }
        }

        impl PolicySpec {
            /// `self` with every key that `over` sets replaced by `over`'s value.
            pub fn overlay(&self, over: &PolicySpec) -> PolicySpec {
                PolicySpec { $( $field: over.$field.clone().or_else(|| self.$field.clone()), )* }
            }

            /// The keys that are set, as written in `imagebump.yaml`.
            pub fn keys(&self) -> Vec<&'static str> {
                let mut keys = Vec::new();
                $( if self.$field.is_some() { keys.push(policy_key_name(stringify!($field))); } )*
                keys
            }
        }
    };
}

/// `allow_tags` → `allowTags`.
fn policy_key_name(field: &'static str) -> &'static str {
    match field {
        "semver_mode" => "semverMode",
        "allow_tags" => "allowTags",
        "ignore_tags" => "ignoreTags",
        "min_age" => "minAge",
        "allow_downgrade" => "allowDowngrade",
        other => other,
    }
}

policy_keys! {
    /// How the next tag is chosen (default `semver`).
    strategy: Strategy,
    /// Masterminds semver constraint on the version, e.g. `~1.4`, `>=2.0 <3.0 || 4.x`,
    /// `^1`. Applies to `semver` and to `regex` patterns with a `version` group.
    constraint: String,
    /// `variant` (default): a suffix after `-` that is not a pre-release word is a variant
    /// that must match, and precision is kept. `masterminds`: strict Masterminds semver, as
    /// argocd-image-updater reads tags (every suffix is a pre-release).
    semver_mode: SemverMode,
    /// Only tags matching this filter are candidates: `regexp:<RE>` (unanchored) or `any`.
    allow_tags: String,
    /// Tags never chosen: globs such as `latest`, `*-rc*`, `sha-*`.
    ignore_tags: Vec<String>,
    /// `regex` strategy: a regular expression with a named group `version` (sorted as
    /// semver), `num` (as a number) or `ts` (as text), e.g. `^main-[0-9a-f]+-(?P<ts>\d+)$`.
    pattern: String,
    /// The platforms the repository runs (`os/arch[/variant]`): a candidate must offer every
    /// one of them. Unset (or empty), a candidate must offer every platform the current
    /// version offers; `[any]`: no platform is required.
    platforms: Vec<String>,
    /// A tag must be at least this old to be chosen, e.g. `3d`, `12h`, `1h30m`, `2w`:
    /// counted from its image's `created` date when plausible (from 2000, not in the
    /// future), else from when imagebump first saw the tag (recorded in the repository).
    min_age: String,
    /// Allow moving to a lower version than the current one (e.g. to get back inside a
    /// constraint). Default false: never downgrade.
    allow_downgrade: bool,
    /// Never change this reference (it is still checked and reported as pinned).
    pin: bool,
    /// Leave this reference alone entirely (reported as unmanaged).
    ignore: bool,
    /// `pull-request` (default): updates are proposed in pull requests. `push`: in
    /// pull-request mode, they are committed to the base branch in the same run instead
    /// (dev environments that follow every new image), while the rest still gets pull
    /// requests.
    delivery: Delivery,
    /// Turn on the forge's own auto-merge for the pull requests of these updates: the forge
    /// merges once the required checks pass (the repository must allow it). Never for a
    /// version that was rejected before. A pull request with several updates auto-merges
    /// only when every one of them says so.
    automerge: bool,
    /// The change set (branch `imagebump/<group>`, one pull request) every update of these
    /// images goes to, whatever `pullRequests.groupBy` says, so that related images move
    /// together: lowercase letters, digits, `-`, `_`, `.` and `/`, at most 64 characters,
    /// no `/`-separated part empty, starting or ending with `.`, holding `..` or ending with
    /// `.lock` (what git takes in a branch name). Major updates still get their own
    /// (`pullRequests.separateMajor`).
    group: String,
    /// Propose only candidates whose cosign signature verifies (`keys`, `identities`) and
    /// that pass the attestation gates (`attestations`): the best candidate that verifies
    /// wins. Operator's configuration only (docs/security.md).
    verify: crate::verify::VerifySpec,
    /// Windows in which new updates are proposed: 5-field cron expressions (minute, hour,
    /// day of month, month, day of week), each read as the set of minutes it matches, e.g.
    /// `* 6-9 * * 1-5` (any minute of hours 6 to 9, Monday to Friday). A run that starts
    /// outside every window proposes nothing new for these images and keeps their open pull
    /// requests current. Unset or empty: any time.
    schedule: Vec<String>,
    /// IANA time zone (`Europe/Berlin`) that `schedule` and `freeze` dates are read in.
    /// Default `UTC`.
    timezone: String,
    /// Date ranges in which nothing new is proposed for these images (release weeks),
    /// each `{from: 2026-12-14, until: 2026-12-18, reason: release week}`: both days
    /// included, read in `timezone`. A rule's list replaces the one of `defaults`.
    freeze: Vec<Freeze>,
}

/// A freeze: no new update is proposed from the start of `from` to the end of `until`.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Freeze {
    /// First frozen day, `YYYY-MM-DD`.
    pub from: String,
    /// Last frozen day, `YYYY-MM-DD` (included).
    pub until: String,
    /// Why, shown in the report (at most 200 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_takes_set_keys_only() {
        let base = PolicySpec {
            strategy: Some(Strategy::Semver),
            constraint: Some("^1".into()),
            ..Default::default()
        };
        let over = PolicySpec {
            constraint: Some("~1.4".into()),
            pin: Some(true),
            ..Default::default()
        };
        let merged = base.overlay(&over);
        assert_eq!(merged.strategy, Some(Strategy::Semver));
        assert_eq!(merged.constraint.as_deref(), Some("~1.4"));
        assert_eq!(merged.pin, Some(true));
        assert_eq!(merged.keys(), vec!["strategy", "constraint", "pin"]);
    }
}
