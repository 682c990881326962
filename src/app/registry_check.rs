//! `imagebump registry check [TARGET...]`: probe each registry with the client a run would
//! use (`registry::check`) and print what answered. Without targets: every `registries`
//! entry and the other registries the current repository's references use.

use std::collections::BTreeSet;
use std::path::Path;

use super::source::load_config;
use super::{Error, Output, Status};
use crate::cli::{Format, RegistryCheckArgs};
use crate::registry::check::{check_one, target_image, Checked};
use crate::registry::Registries;
use imagebump_model::config::Config;
use imagebump_policy::rules::Policies;

pub async fn check(args: &RegistryCheckArgs, out: &Output) -> Result<Status, Error> {
    let configured = load_config(args.config.as_deref(), Path::new("."))?;
    for w in &configured.warnings {
        out.warning(w);
    }
    let config = configured.config;
    let registries =
        Registries::with_request_timeout(config.registries.clone(), out.request_timeout)
            .map_err(|source| Error::Registries { file: None, source })?;
    let targets: Vec<String> = if args.targets.is_empty() {
        every_registry(&config, &registries, Path::new("."))
    } else {
        args.targets.clone()
    };
    if targets.is_empty() {
        return Err(Error::NoRegistries);
    }
    let mut results = Vec::new();
    for t in &targets {
        let credentials = rule_credentials(&config, t);
        results.push(check_one(&registries, t, credentials.as_deref()).await);
    }
    match out.format {
        Format::Json => super::output::print(format_args!(
            "{}\n",
            imagebump_model::escape::json(&serde_json::to_string_pretty(&results)?)
        )),
        Format::Text => super::output::print(format_args!("{}", text(&results))),
    }
    Ok(if results.iter().all(|r| r.ok) {
        Status::Done
    } else {
        Status::Problems
    })
}

/// What a bare `registry check` checks: every `registries` entry, then, when `dir` is a
/// repository (it holds imagebump.yaml or `.git`), the registry of each managed reference
/// there that no entry covers: what a run in that directory would ask. Elsewhere (a home
/// directory, `/`) the tree is not walked.
fn every_registry(config: &Config, registries: &Registries, dir: &Path) -> Vec<String> {
    let mut targets: Vec<String> = config.registries.iter().map(|r| r.prefix.clone()).collect();
    let repository = dir.join(".git").exists() || crate::config::locate(None, dir).is_some();
    if !repository {
        return targets;
    }
    let found = crate::discover::discover(&crate::source::tree::Tree::disk(dir), config);
    let hosts: BTreeSet<String> = found
        .refs
        .iter()
        .filter(|r| r.is_managed() && registries.entry_for(&r.image).is_none())
        // A classic Helm repository is no registry: it has no `/v2/` to probe.
        .filter(|r| crate::chart::classic_repository(&r.written).is_none())
        .map(|r| r.image.registry.clone())
        .collect();
    targets.extend(hosts);
    targets
}

/// The credentials source of the `images` rule for a target that names a repository.
fn rule_credentials(config: &Config, target: &str) -> Option<String> {
    let (image, repo) = target_image(target);
    repo?;
    let policy = Policies::new(&config.defaults, &config.images)
        .ok()?
        .policy_for(&image, target, None)
        .ok()?;
    policy.credentials.clone()
}

fn text(results: &[Checked]) -> String {
    let mut out = String::new();
    for r in results {
        let limits = {
            let mut l = format!("concurrency {}", r.concurrency);
            if let Some(rate) = r.rate_limit {
                l.push_str(&format!(", at most {rate}/s"));
            }
            if let Some(a) = &r.allowance {
                l.push_str(&format!(", {a}"));
            }
            l
        };
        // A registry's answers (an error body) are shown, never sent to the terminal raw.
        let mut line = |s: String| {
            out.push_str(&imagebump_model::escape::terminal(&s));
            out.push('\n');
        };
        line(format!("{} ({})", r.target, r.endpoint));
        line(format!("  credentials: {}", r.credentials));
        line(format!("  auth:        {}", r.auth));
        if let Some(read) = &r.read {
            line(format!("  read:        {read}"));
        }
        line(format!("  limits:      {limits}"));
    }
    out
}
