//! Which policy applies to a reference: built-in defaults, then `defaults`, then the first
//! `images` rule whose glob matches the repository, then an inline marker on the value's line.

use std::collections::HashMap;

use globset::{GlobBuilder, GlobMatcher};

use super::{ImageRule, Policy, PolicyError, PolicySource, PolicySpec};
use imagebump_model::config::{CredentialsConfig, PullSecret};
use imagebump_model::name::ImageName;

/// The rules that decide a plain reference's policy, by index: the first matching rule,
/// the first matching rule with `verify`, the first with `credentials`.
type Deciders = (Option<usize>, Option<usize>, Option<usize>);

/// Every rule.
fn any_rule(_: &Rule) -> bool {
    true
}

/// The rules that set `verify`.
fn verifying(r: &Rule) -> bool {
    r.spec.verify.is_some()
}

/// The rules that set `credentials` (operator rules only).
fn crediting(r: &Rule) -> bool {
    r.credentials.is_some()
}

/// An `images[].match` or `images[].path` glob that does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad glob {pattern:?}: {message}")]
pub struct GlobError {
    pub pattern: String,
    pub message: String,
}

impl GlobError {
    /// What an `images[].match` glob looks like.
    pub fn hint(&self) -> &'static str {
        "globs such as ghcr.io/acme/* or **/nginx"
    }
}

/// An `images` rule that cannot be used: where it is (`images[2].match`) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {glob}")]
pub struct RuleError {
    pub at: String,
    pub glob: GlobError,
}

/// Compile an `images[].match` glob: `*` stays within a path segment, `**` crosses them.
pub fn rule_glob(pattern: &str) -> Result<GlobMatcher, GlobError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| GlobError {
            pattern: pattern.to_string(),
            message: e.to_string(),
        })
}

struct Rule {
    glob: GlobMatcher,
    /// Only references in files matching this (`images[].path`).
    path: Option<GlobMatcher>,
    spec: PolicySpec,
    /// `images[].credentials`: set only in the operator's rules (the repository's own file
    /// is refused when it sets one).
    credentials: Option<String>,
    label: String,
}

impl Rule {
    /// Does the rule cover the image (`full`: normalised, `written`: as in the file) in
    /// `file`? A rule with a path never matches a reference without a file.
    fn matches(&self, full: &str, written: &str, file: Option<&str>) -> bool {
        let here = match (&self.path, file) {
            (None, _) => true,
            (Some(p), Some(f)) => p.is_match(f),
            (Some(_), None) => false,
        };
        here && (self.glob.is_match(full) || self.glob.is_match(written))
    }
}

/// The configured policies, compiled once; each distinct effective policy is compiled once
/// per run however many references share it.
pub struct Policies {
    defaults: PolicySpec,
    rules: Vec<Rule>,
    cache: HashMap<(PolicySpec, PolicySource, Option<String>), Policy>,
    /// The operator's `credentials.pullSecrets`: what an argocd-image-updater pull secret's
    /// name stands for.
    pull_secrets: std::collections::BTreeMap<String, PullSecret>,
    /// The policies of references without repository settings or another layer, by what
    /// decides them: the first matching rule, the first matching rule with `verify` and the
    /// first with `credentials`.
    /// A run's references share a few, so most are given theirs without merging settings.
    /// Hashed with foldhash: looked up once per reference, by numbers the configuration
    /// decides.
    plain: foldhash::HashMap<Deciders, Policy>,
}

impl Policies {
    /// The `defaults` and `images` rules of `imagebump.yaml`. Globs were checked when the
    /// configuration was loaded; a bad one here is an error too.
    pub fn new(defaults: &PolicySpec, images: &[ImageRule]) -> Result<Policies, RuleError> {
        let rules = images
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let path = r
                    .path
                    .as_deref()
                    .map(rule_glob)
                    .transpose()
                    .map_err(|glob| RuleError {
                        at: format!("images[{i}].path"),
                        glob,
                    })?;
                Ok(Rule {
                    glob: rule_glob(&r.glob).map_err(|glob| RuleError {
                        at: format!("images[{i}].match"),
                        glob,
                    })?,
                    path,
                    spec: r.policy(),
                    credentials: r.credentials.clone(),
                    label: format!("images[{i}] ({})", r.glob),
                })
            })
            .collect::<Result<_, RuleError>>()?;
        Ok(Policies {
            defaults: defaults.clone(),
            rules,
            cache: HashMap::new(),
            pull_secrets: Default::default(),
            plain: Default::default(),
        })
    }

    /// These policies, with the operator's `credentials.pullSecrets` to map
    /// argocd-image-updater pull secrets through.
    pub fn with_pull_secrets(mut self, credentials: &CredentialsConfig) -> Policies {
        self.pull_secrets = credentials.pull_secrets.clone();
        self
    }

    /// The index of the first rule matching `image` (normalised) or `written` (as in the
    /// file), and `file` when the rule names a path (a rule with a path never matches a
    /// reference without a file, such as `imagebump tags`').
    pub fn rule_for(&self, image: &ImageName, written: &str, file: Option<&str>) -> Option<usize> {
        self.first_rule(&image.to_string(), written, file, any_rule)
    }

    /// The index of the first rule matching the image (`full`: normalised, `written`: as in
    /// the file) in `file`, among the rules `wanted` accepts.
    fn first_rule(
        &self,
        full: &str,
        written: &str,
        file: Option<&str>,
        wanted: fn(&Rule) -> bool,
    ) -> Option<usize> {
        self.rules
            .iter()
            .position(|r| wanted(r) && r.matches(full, written, file))
    }

    /// The `verify` of the first rule matching `image` that sets one.
    fn verify_for(
        &self,
        image: &ImageName,
        written: &str,
        file: Option<&str>,
    ) -> Option<imagebump_model::verify::VerifySpec> {
        self.first_rule(&image.to_string(), written, file, verifying)
            .and_then(|i| self.rules.get(i))
            .and_then(|r| r.spec.verify.clone())
    }

    /// The `credentials` of the first rule matching `image` that sets them. Only operator
    /// rules can, so a repository rule that matches first neither takes them away nor
    /// gives others.
    fn credentials_for(
        &self,
        image: &ImageName,
        written: &str,
        file: Option<&str>,
    ) -> Option<String> {
        self.first_rule(&image.to_string(), written, file, crediting)
            .and_then(|i| self.rules.get(i))
            .and_then(|r| r.credentials.clone())
    }

    /// `policy` with the operator's source for the argocd-image-updater pull secret
    /// `name` (the annotation's exact value): when `credentials.pullSecrets` maps it and
    /// allows the image's registry. The credentials of an operator `images` rule win.
    /// `Err` is a note saying why the name is not used.
    pub fn with_pull_secret(
        &mut self,
        policy: Policy,
        image: &ImageName,
        name: &str,
    ) -> Result<Policy, String> {
        if policy.credentials.is_some() {
            return Ok(policy);
        }
        let Some(mapped) = self.pull_secrets.get(name) else {
            return Err(format!(
                "the pull secret {name:?} is not used: the operator's configuration does not map it (credentials.pullSecrets)"
            ));
        };
        let host = image.registry.as_str();
        if !mapped.allows(host) {
            return Err(format!(
                "the pull secret {name:?} is not sent to {host}: the operator's credentials.pullSecrets allows it only for {}",
                mapped.registries.join(", ")
            ));
        }
        let mut source = policy.source.clone();
        source.0.push(format!("credentials.pullSecrets[{name:?}]"));
        self.compiled(policy.spec.clone(), source, Some(mapped.secret.clone()))
            .map_err(|e| format!("credentials.pullSecrets[{name:?}]: {e}"))
    }

    /// The policy of one reference, with the settings of one more layer on top (an inline
    /// marker, or `imagebump tags`' flags), named by `label`.
    pub fn policy_for(
        &mut self,
        image: &ImageName,
        written: &str,
        layer: Option<(&str, &PolicySpec)>,
    ) -> Result<Policy, PolicyError> {
        self.policy_with(image, written, None, None, layer)
    }

    /// As [`Policies::policy_for`], with settings found in the repository itself (Argo CD
    /// annotations, `ImageUpdater` resources) between `defaults` and the `images` rules:
    /// imagebump.yaml's rules are the deliberate configuration and win over legacy ones.
    pub fn policy_with(
        &mut self,
        image: &ImageName,
        written: &str,
        file: Option<&str>,
        repository: Option<(&str, &PolicySpec)>,
        layer: Option<(&str, &PolicySpec)>,
    ) -> Result<Policy, PolicyError> {
        let plain = (repository.is_none() && layer.is_none()).then(|| {
            // No rule to match: the name is not spelled out (once per reference).
            if self.rules.is_empty() {
                return (None, None, None);
            }
            let full = image.to_string();
            (
                self.first_rule(&full, written, file, any_rule),
                self.first_rule(&full, written, file, verifying),
                self.first_rule(&full, written, file, crediting),
            )
        });
        if let Some(p) = plain.and_then(|k| self.plain.get(&k)) {
            return Ok(p.clone());
        }
        let policy = self.compose(image, written, file, repository, layer)?;
        if let Some(k) = plain {
            self.plain.insert(k, policy.clone());
        }
        Ok(policy)
    }

    /// [`Policies::policy_with`], the settings merged level by level.
    fn compose(
        &mut self,
        image: &ImageName,
        written: &str,
        file: Option<&str>,
        repository: Option<(&str, &PolicySpec)>,
        layer: Option<(&str, &PolicySpec)>,
    ) -> Result<Policy, PolicyError> {
        let mut spec = self.defaults.clone();
        let mut source = Vec::new();
        if spec != PolicySpec::default() {
            source.push("defaults".to_string());
        }
        if let Some((label, r)) = repository {
            if *r != PolicySpec::default() {
                spec = spec.overlay(r);
                source.push(label.to_string());
            }
        }
        if let Some(rule) = self
            .rule_for(image, written, file)
            .and_then(|i| self.rules.get(i))
        {
            spec = spec.overlay(&rule.spec);
            source.push(rule.label.clone());
        }
        if spec.verify.as_ref().is_none_or(|v| v.is_empty()) {
            // Only the operator sets keys: a repository rule matching first does not switch
            // them off (docs/security.md). An empty `verify` (an argocd-image-updater
            // `imagesVerification`) asks for them and stays empty, failing, without any.
            let asked = spec.verify.take();
            spec.verify = self
                .verify_for(image, written, file)
                .or_else(|| self.defaults.verify.clone())
                .or(asked);
        }
        if let Some((label, m)) = layer {
            if *m != PolicySpec::default() {
                spec = spec.overlay(m);
                source.push(label.to_string());
            }
        }
        let credentials = self.credentials_for(image, written, file);
        self.compiled(spec, PolicySource(source), credentials)
    }

    /// The compiled policy of these settings, compiled once per run.
    fn compiled(
        &mut self,
        spec: PolicySpec,
        source: PolicySource,
        credentials: Option<String>,
    ) -> Result<Policy, PolicyError> {
        let key = (spec, source, credentials);
        if let Some(p) = self.cache.get(&key) {
            return Ok(p.clone());
        }
        let policy = Policy::compile_with(key.0.clone(), key.1.clone(), key.2.clone())?;
        self.cache.insert(key, policy.clone());
        Ok(policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use imagebump_model::config::Config;
    use imagebump_model::name::parse_name;
    use imagebump_model::policy::Strategy;

    /// A rule with `path` applies only to references in matching files; one without
    /// `match` covers every image.
    #[test]
    fn path_rules_apply_to_their_files_only() {
        let config: Config = yaml_serde::from_str(
            "images:\n- path: apps/*/dev/**\n  delivery: push\n- match: ghcr.io/acme/*\n  pin: true\n",
        )
        .unwrap();
        let p = Policies::new(&config.defaults, &config.images).unwrap();
        let web = parse_name("ghcr.io/acme/web").unwrap();
        let w = "ghcr.io/acme/web";
        assert_eq!(
            p.rule_for(&web, w, Some("apps/web/dev/kustomization.yaml")),
            Some(0)
        );
        assert_eq!(
            p.rule_for(&web, w, Some("apps/web/prod/kustomization.yaml")),
            Some(1)
        );
        assert_eq!(p.rule_for(&web, w, None), Some(1));
        let e = Policies::new(
            &config.defaults,
            &yaml_serde::from_str::<Config>("images:\n- path: '['\n")
                .unwrap()
                .images,
        )
        .err()
        .unwrap();
        assert_eq!(e.at, "images[0].path");
        assert_eq!(e.glob.pattern, "[");
        assert!(
            e.to_string()
                .starts_with("images[0].path: bad glob \"[\": "),
            "{e}"
        );
    }

    /// References decided by the same rules share one policy, given without merging the
    /// settings again; one decided by another rule (here a path rule) gets its own; each is
    /// the same as a fresh merge gives.
    #[test]
    fn policies_are_remembered_by_the_rules_that_decide_them() {
        let text = "defaults:\n  constraint: ^1\nimages:\n- path: apps/dev/**\n  delivery: push\n- match: ghcr.io/acme/*\n  strategy: newest-build\n- match: '**/web'\n  allowTags: regexp:^v\n";
        let mut p = policies(text);
        let web = parse_name("ghcr.io/acme/web").unwrap();
        let api = parse_name("ghcr.io/acme/api").unwrap();
        let cases = [
            (&web, Some("apps/prod/a.yaml")),
            (&api, Some("apps/prod/b.yaml")),
            (&web, Some("apps/dev/a.yaml")),
            (&api, None),
        ];
        let given: Vec<Policy> = cases
            .iter()
            .map(|(image, file)| {
                let written = image.to_string();
                p.policy_with(image, &written, *file, None, None).unwrap()
            })
            .collect();
        // web and api in prod: one rule decides both, one policy.
        assert!(std::sync::Arc::ptr_eq(&given[0].0, &given[1].0));
        assert!(std::sync::Arc::ptr_eq(&given[0].0, &given[3].0));
        // The path rule decides web in dev.
        assert_eq!(given[2].source.to_string(), "defaults + images[0] (**)");
        assert!(!std::sync::Arc::ptr_eq(&given[0].0, &given[2].0));
        // Each is what merging the settings afresh gives.
        for ((image, file), policy) in cases.iter().zip(&given) {
            let written = image.to_string();
            let merged = policies(text)
                .compose(image, &written, *file, None, None)
                .unwrap();
            assert_eq!(policy.spec, merged.spec);
            assert_eq!(policy.source.to_string(), merged.source.to_string());
        }
    }

    /// An image's credentials come from the first operator rule that matches it and sets
    /// them, whichever rule decides the rest of its policy; a repository layer (annotations,
    /// markers) has no way to set them.
    #[test]
    fn credentials_come_from_the_first_rule_that_sets_them() {
        let mut p = policies(
            "images:\n- match: ghcr.io/acme/*\n  pin: true\n- match: ghcr.io/**\n  credentials: env:GHCR\n",
        );
        let web = parse_name("ghcr.io/acme/web").unwrap();
        let hub = parse_name("docker.io/library/nginx").unwrap();
        let given = p.policy_for(&web, "ghcr.io/acme/web", None).unwrap();
        assert!(given.pin);
        assert_eq!(given.credentials.as_deref(), Some("env:GHCR"));
        assert_eq!(p.policy_for(&hub, "nginx", None).unwrap().credentials, None);
    }

    /// A pull secret's name gets the operator's source only when `credentials.pullSecrets`
    /// maps it and allows the image's registry; a rule's own credentials win.
    #[test]
    fn pull_secrets_are_mapped_by_the_operator_for_its_registries() {
        let config: Config = yaml_serde::from_str(
            "images:\n- match: ghcr.io/ruled/*\n  credentials: env:RULE\ncredentials:\n  pullSecrets:\n    pullsecret:argocd/regcred: {secret: \"file:/secrets/regcred\", registries: [ghcr.io]}\n",
        )
        .unwrap();
        let mut p = Policies::new(&config.defaults, &config.images)
            .unwrap()
            .with_pull_secrets(&config.credentials);
        let mut with = |name: &str, image: &str| {
            let image = parse_name(image).unwrap();
            let policy = p.policy_for(&image, &image.to_string(), None).unwrap();
            p.with_pull_secret(policy, &image, name)
                .map(|p| p.credentials.clone())
        };
        assert_eq!(
            with("pullsecret:argocd/regcred", "ghcr.io/acme/web"),
            Ok(Some("file:/secrets/regcred".into()))
        );
        assert_eq!(
            with("pullsecret:argocd/regcred", "evil.example/acme/web"),
            Err("the pull secret \"pullsecret:argocd/regcred\" is not sent to evil.example: the operator's credentials.pullSecrets allows it only for ghcr.io".into())
        );
        assert_eq!(
            with("env:GITHUB_TOKEN", "ghcr.io/acme/web"),
            Err("the pull secret \"env:GITHUB_TOKEN\" is not used: the operator's configuration does not map it (credentials.pullSecrets)".into())
        );
        assert_eq!(
            with("pullsecret:argocd/regcred", "ghcr.io/ruled/web"),
            Ok(Some("env:RULE".into()))
        );
    }

    /// The policies of an `imagebump.yaml` text.
    fn policies(text: &str) -> Policies {
        let config: Config = yaml_serde::from_str(text).unwrap();
        Policies::new(&config.defaults, &config.images).unwrap()
    }

    #[test]
    fn first_matching_rule_wins_and_markers_beat_it() {
        let config: Config = yaml_serde::from_str(
            "defaults:\n  constraint: ^1\nimages:\n- match: ghcr.io/acme/*\n  strategy: newest-build\n- match: nginx\n  constraint: ~1.25\n- match: '**'\n  pin: true\n",
        )
        .unwrap();
        let mut p = Policies::new(&config.defaults, &config.images).unwrap();
        let acme = parse_name("ghcr.io/acme/web").unwrap();
        let policy = p.policy_for(&acme, "ghcr.io/acme/web", None).unwrap();
        assert_eq!(policy.strategy, Strategy::NewestBuild);
        assert_eq!(policy.spec.constraint.as_deref(), Some("^1"));
        assert_eq!(
            policy.source.to_string(),
            "defaults + images[0] (ghcr.io/acme/*)"
        );
        // `*` does not cross `/`.
        let deep = parse_name("ghcr.io/acme/team/web").unwrap();
        assert_eq!(p.rule_for(&deep, "ghcr.io/acme/team/web", None), Some(2));
        // Written and normalised names both match.
        let nginx = parse_name("nginx").unwrap();
        assert_eq!(p.rule_for(&nginx, "nginx", None), Some(1));
        assert_eq!(p.rule_for(&nginx, "docker.io/library/nginx", None), Some(2));
        let marker = PolicySpec {
            constraint: Some("~1.27".into()),
            ..Default::default()
        };
        let policy = p
            .policy_for(&nginx, "nginx", Some(("marker", &marker)))
            .unwrap();
        assert_eq!(policy.spec.constraint.as_deref(), Some("~1.27"));
        assert_eq!(
            policy.source.to_string(),
            "defaults + images[1] (nginx) + marker"
        );
    }
}
