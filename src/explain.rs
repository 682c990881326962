//! `imagebump tags`: apply a policy to one image and say, for every candidate tag, why it
//! was kept or dropped. Uses the same evaluation as `run`.

use std::io::Write;

use serde::Serialize;

use crate::cli::{Output, TagsArgs};
use crate::config::{self, Config, PolicySpec};
use crate::exit;
use crate::policy::evaluate::{Choice, Evaluation};
use crate::policy::rules::Policies;
use crate::registry::Registries;
use crate::report::table;
use crate::resolve::metadata::MetaCache;
use imagebump_model::name::parse_reference;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Explained<'a> {
    version: u32,
    image: String,
    current: Option<&'a str>,
    policy: &'a crate::policy::Policy,
    /// `null` when nothing beats the current tag.
    chosen: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    digest: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped: Option<&'a str>,
    candidates: Vec<CandidateOut<'a>>,
    warnings: Vec<&'a str>,
    errors: &'a [String],
}

#[derive(Serialize)]
struct CandidateOut<'a> {
    tag: &'a str,
    kept: bool,
    reason: String,
}

/// The settings given on the command line, as a policy layer on top of the configuration.
fn flags(args: &TagsArgs) -> PolicySpec {
    let list = |v: &Vec<String>| (!v.is_empty()).then(|| v.clone());
    PolicySpec {
        strategy: args.strategy,
        constraint: args.constraint.clone(),
        semver_mode: args.semver_mode,
        allow_tags: args.allow_tags.clone(),
        ignore_tags: list(&args.ignore_tags),
        pattern: args.pattern.clone(),
        platforms: list(&args.platforms),
        min_age: args.min_age.clone(),
        allow_downgrade: args.allow_downgrade.then_some(true),
        pin: None,
        ignore: None,
        credentials: None,
    }
}

fn read_tags(path: &std::path::Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect())
}

pub async fn tags(args: &TagsArgs) -> i32 {
    let reference = match parse_reference(&args.image) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    let config_path = config::locate(args.config.as_deref(), std::path::Path::new("."));
    let config = match &config_path {
        Some(p) => match config::load(p) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {e}");
                return exit::USAGE;
            }
        },
        None => Config::default(),
    };
    let policy = match Policies::new(&config).and_then(|mut p| {
        p.policy_for(
            &reference.name,
            &reference.written,
            Some(("command line", &flags(args))),
        )
        .map_err(|e| {
            let hint = e
                .hint
                .as_deref()
                .map(|h| format!(" (hint: {h})"))
                .unwrap_or_default();
            format!("--{}: {}{hint}", flag_name(e.key), e.message)
        })
    }) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    let current = args.current.clone().or(reference.tag.clone());
    let current_digest = args.digest.clone().or(reference.digest.clone());
    let registries = match Registries::new(config.registries.clone()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    let client = match &args.tags_from {
        Some(_) => None,
        None => match registries.client_with(&reference.name, policy.spec.credentials.as_deref()) {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("error: {e}");
                return exit::ERRORS;
            }
        },
    };
    let tags = match (&args.tags_from, &client) {
        (Some(path), _) => read_tags(path),
        (None, Some(c)) => c
            .list_tags(&reference.name.repository)
            .await
            .map(|l| l.tags)
            .map_err(|e| {
                let hint = e
                    .hint()
                    .map(|h| format!(" (hint: {h})"))
                    .unwrap_or_default();
                format!("{}: {e}{hint}", reference.name)
            }),
        (None, None) => Ok(Vec::new()),
    };
    let tags = match tags {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::ERRORS;
        }
    };
    let current_tag = current.as_deref().unwrap_or("");
    let own;
    let tags: &[String] = if policy.needs_tag_list() {
        &tags
    } else {
        own = [current_tag.to_string()];
        &own
    };
    let mut eval = Evaluation::new(&policy, current_tag, current_digest.as_deref(), tags);
    let cache = MetaCache::default();
    let source = client.as_deref().map(|c| (c, &cache));
    let errors = crate::resolve::settle(&mut eval, &reference.name, &policy, source, 8).await;
    let choice = eval.decide();
    let (chosen, digest, skipped) = match &choice {
        Choice::Update { tag, digest } => (Some(tag.as_str()), digest.as_deref(), None),
        Choice::Current => (None, None, None),
        Choice::Skip(why) => (None, None, Some(why.as_str())),
    };
    let candidates: Vec<CandidateOut> = eval
        .candidates()
        .into_iter()
        .map(|c| CandidateOut {
            tag: c.tag,
            kept: c.verdict.kept(),
            reason: eval.reason(c),
        })
        .collect();
    let warnings: Vec<&str> = eval.warnings().map(String::as_str).collect();
    let report = Explained {
        version: 1,
        image: reference.name.to_string(),
        current: current.as_deref(),
        policy: &policy,
        chosen,
        digest,
        skipped,
        candidates,
        warnings,
        errors: &errors,
    };
    match args.output {
        Output::Json => match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => eprintln!("error: {e}"),
        },
        Output::Text => print_text(&report),
    }
    for e in &errors {
        eprintln!("error: {}: {e}", reference.name);
    }
    if errors.is_empty() {
        exit::OK
    } else {
        exit::ERRORS
    }
}

fn print_text(r: &Explained) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "image:   {}", r.image);
    let _ = writeln!(out, "policy:  {} ({})", r.policy.summary(), r.policy.source);
    let _ = writeln!(out, "current: {}", r.current.unwrap_or("(none)"));
    let chosen = match (r.chosen, r.digest, r.skipped) {
        (Some(t), Some(d), _) => format!("{t}@{d}"),
        (Some(t), None, _) => t.to_string(),
        (None, _, Some(why)) => format!("none: {why}"),
        (None, _, None) if !r.errors.is_empty() => "none: undecided, see the errors".into(),
        (None, _, None) => "none (nothing beats the current tag)".into(),
    };
    let _ = writeln!(out, "chosen:  {chosen}");
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    if !r.candidates.is_empty() {
        let rows: Vec<Vec<String>> = r
            .candidates
            .iter()
            .map(|c| {
                vec![
                    c.tag.to_string(),
                    if c.kept { "yes" } else { "no" }.to_string(),
                    c.reason.clone(),
                ]
            })
            .collect();
        let _ = writeln!(out);
        let _ = write!(out, "{}", table(&["TAG", "KEPT", "REASON"], &rows));
    }
}

/// The command-line flag for a policy key.
fn flag_name(key: &str) -> &str {
    match key {
        "semverMode" => "semver-mode",
        "allowTags" => "allow-tags",
        "ignoreTags" => "ignore-tags",
        "minAge" => "min-age",
        "platforms" => "platform",
        other => other,
    }
}
