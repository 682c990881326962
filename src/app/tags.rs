//! `imagebump tags`: apply a policy to one image and say, for every candidate tag, why it
//! was kept or dropped. Uses the same evaluation as `run`.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::source::load_config;
use super::{Error, Output, Status};
use crate::cli::{Format, TagsArgs};
use crate::registry::Registries;
use crate::report::{fitted, Cut};
use crate::resolve::metadata::MetaCache;
use imagebump_model::config::{Config, PolicySpec};
use imagebump_model::name::{parse_reference, ImageName, Reference};
use imagebump_policy::candidate::Choice;
use imagebump_policy::evaluate::Evaluation;
use imagebump_policy::rules::Policies;
use imagebump_policy::Policy;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Explained<'a> {
    version: u32,
    image: String,
    current: Option<&'a str>,
    policy: &'a Policy,
    /// `null` when nothing beats the current tag.
    chosen: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    digest: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped: Option<&'a str>,
    /// With no current tag: the tag whose shape the candidates were judged by (`semver`:
    /// the newest version the constraint and filters accept).
    #[serde(skip_serializing_if = "Option::is_none")]
    assumed: Option<&'a str>,
    /// `verify`: who signed the chosen image, and where the signature was.
    #[serde(skip_serializing_if = "Option::is_none")]
    signer: Option<String>,
    /// `verify.attestations`: the gates the chosen image passed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    gates: Vec<String>,
    candidates: Vec<CandidateOut<'a>>,
    warnings: Vec<&'a str>,
    errors: &'a [String],
}

#[derive(Serialize)]
struct CandidateOut<'a> {
    tag: &'a str,
    kept: bool,
    reason: String,
    /// `minAge`: the clock this candidate's age counted from, for candidates whose image
    /// was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    age: Option<AgeOut>,
}

/// The clock `minAge` judged a candidate by.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AgeOut {
    /// `built` (the image's plausible build date) or `firstSeen`.
    clock: &'static str,
    /// The time the age counts from.
    since: String,
    /// `firstSeen`: whether a record in the repository says so (false: first seen now).
    #[serde(skip_serializing_if = "Option::is_none")]
    recorded: Option<bool>,
    /// "built 3d ago", "first seen 9d ago", "first seen now (no earlier record)".
    said: String,
}

/// The settings given on the command line, as a policy layer on top of the configuration.
fn flags(args: &TagsArgs) -> Result<PolicySpec, Error> {
    let list = |v: &Vec<String>| (!v.is_empty()).then(|| v.clone());
    let verify = crate::verify::flag_keys(
        &args.verify_keys,
        &args.verify_identities,
        args.verify_trusted_root.as_deref(),
    )
    .map_err(|e| Error::PolicyFlag {
        flag: "verify-identity".into(),
        message: e.to_string(),
        hint: None,
    })?;
    Ok(PolicySpec {
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
        delivery: None,
        automerge: None,
        group: None,
        verify,
        // When updates are proposed is not a question of which tag is chosen.
        schedule: None,
        timezone: None,
        freeze: None,
    })
}

fn read_tags(path: &std::path::Path) -> Result<Vec<String>, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::TagsFile {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect())
}

pub async fn tags(args: &TagsArgs, out: &Output) -> Result<Status, Error> {
    let (reference, index) = target(args)?;
    let configured = load_config(args.config.as_deref(), Path::new("."))?;
    for w in &configured.warnings {
        out.warning(w);
    }
    let config = configured.config;
    let policy = policy(&config, &reference, args)?;
    let current = args.current.clone().or(reference.tag.clone());
    let current_digest = args.digest.clone().or(reference.digest.clone());
    let registries =
        Registries::with_request_timeout(config.registries.clone(), out.request_timeout)
            .map_err(|source| Error::Registries { file: None, source })?;
    let client = match &args.tags_from {
        Some(_) => None,
        None => Some(
            registries
                .client_with(&reference.name, policy.credentials.as_deref())
                .map_err(Error::Client)?,
        ),
    };
    let tags = candidate_tags(args, &reference, index.as_deref(), &registries, &policy).await?;
    let current_tag = current.as_deref().unwrap_or("");
    let own;
    let tags: &[String] = if policy.needs_tag_list() {
        &tags
    } else {
        own = [current_tag.to_string()];
        &own
    };
    let mut eval = evaluation(&policy, current.as_deref(), current_digest.as_deref(), tags);
    let now = set_clocks(&mut eval, args, &policy, &reference.name, tags);
    if args.chart.is_some() {
        eval.ignore_current_platforms();
    }
    if let Some(dir) = &args.repo {
        reject_as_in(&mut eval, dir, &config, &reference.name);
    }
    let cache = MetaCache::default();
    // A classic Helm repository has versions only, no image metadata.
    let source = client
        .as_deref()
        .filter(|_| index.is_none())
        .map(|c| (c, &cache));
    let mut errors = crate::resolve::settle(&mut eval, &reference.name, &policy, source, 8).await;
    let verifier = crate::verify::Verifier::new();
    let listed = policy.needs_tag_list().then_some(tags);
    let signed = crate::resolve::signed::decide(
        &mut eval,
        &reference.name,
        &policy,
        source,
        &verifier,
        listed,
        8,
    )
    .await;
    let verified = signed.verified();
    errors.extend(signed.errors);
    let choice = signed.choice;
    let current = current.as_deref();
    let mut explained = explained(&reference.name, current, &policy, &eval, &choice, &errors);
    explained.verified(verified);
    add_ages(&mut explained, &eval, now);
    print(&explained, out);
    for e in &errors {
        let e = imagebump_http::redact(&e.to_string());
        eprintln!("error: {}", term(&format!("{}: {e}", reference.name)));
    }
    Ok(if errors.is_empty() {
        Status::Done
    } else {
        Status::Problems
    })
}

/// The rejections the clone at `dir` holds for `image`, as a run there would honour them.
fn reject_as_in(eval: &mut Evaluation, dir: &Path, config: &Config, image: &ImageName) {
    let git = crate::source::git::Git::new(None);
    let changes = |sha: &str, file: &str| git.changes_path(dir, sha, file).unwrap_or(true);
    let bot = crate::deliver::pulls::Author {
        email: &config.pull_requests.author.email,
        by_api: config.signing.as_ref().is_some_and(|s| s.by_api()),
        changes: &changes,
    };
    eval.reject(&rejected_in(dir, image, bot));
}

impl Explained<'_> {
    /// Who signed the chosen image, and the attestation gates it passed.
    fn verified(&mut self, verified: Option<crate::verify::Verified>) {
        if let Some(v) = verified {
            self.signer = Some(v.signer);
            self.gates = v.gates;
        }
    }
}

/// The evaluation of `tags` for `current`; without a current tag, every candidate judged as
/// new.
fn evaluation<'t>(
    policy: &Policy,
    current: Option<&'t str>,
    digest: Option<&str>,
    tags: &'t [String],
) -> Evaluation<'t> {
    match current {
        Some(current) => Evaluation::new(policy, current, digest, tags),
        None => Evaluation::judged_as_new(policy, tags),
    }
}

/// The tags (or chart versions) to judge: from `--tags-from`, a classic Helm repository's
/// index, or the registry's tag list.
async fn candidate_tags(
    args: &TagsArgs,
    reference: &Reference,
    index: Option<&str>,
    registries: &Registries,
    policy: &Policy,
) -> Result<Vec<String>, Error> {
    if let Some(path) = &args.tags_from {
        return read_tags(path);
    }
    let creds = policy.credentials.as_deref();
    let client = registries
        .client_with(&reference.name, creds)
        .map_err(Error::Client)?;
    match index {
        Some(repo) => {
            crate::chart::index::chart_versions(registries, &reference.name, creds, repo).await
        }
        None => client
            .list_tags(&reference.name.repository)
            .await
            .map(|l| l.tags),
    }
    .map_err(|source| Error::TagList {
        image: reference.name.to_string(),
        source,
    })
}

/// What `tags` explains: the image, or the chart of `--chart` (with its classic
/// repository's URL when its versions come from an index).
fn target(args: &TagsArgs) -> Result<(Reference, Option<String>), Error> {
    let Some(arg) = &args.chart else {
        let image = args.image.as_deref().unwrap_or_default();
        return Ok((parse_reference(image)?, None));
    };
    let (chart, version) = crate::chart::parse_chart_arg(arg).map_err(|e| Error::Flag {
        flag: "--chart",
        message: e.to_string(),
    })?;
    let index = crate::chart::classic_repository(&chart.written).map(str::to_string);
    let reference = Reference {
        name: chart.image,
        written: chart.written,
        tag: version,
        digest: None,
    };
    Ok((reference, index))
}

/// The versions of `image` reviewers rejected in the clone at `dir`, anywhere in it: tag →
/// who said no (and where). Reverts come from its history, closed pull requests from the
/// refs pull-request runs record on its `origin` (read without the token, never over plain
/// `http://`); what cannot be read is said on stderr.
fn rejected_in(
    dir: &Path,
    image: &ImageName,
    bot: crate::deliver::pulls::Author<'_>,
) -> std::collections::BTreeMap<String, String> {
    use crate::deliver::pulls::{by_image, lifted, recorded, rejected, NAMESPACE};
    let git = crate::source::git::Git::new(None);
    let history = match git.log(dir, "HEAD", 1000) {
        Ok(h) => h,
        Err(e) => {
            eprintln!(
                "warning: {}",
                term(&format!("{}: no history read: {e}", dir.display()))
            );
            Vec::new()
        }
    };
    let mut all = rejected(&[], "", &history, bot);
    match crate::source::git::Git::local_origin_refs(dir, NAMESPACE) {
        Ok(names) => all.extend(recorded(&names, &lifted(&history)).0),
        Err(e) => eprintln!(
            "warning: {}",
            term(&format!(
                "{}: the rejections recorded on origin ({NAMESPACE}*) were not read: {e}",
                dir.display()
            ))
        ),
    }
    let mut held = std::collections::BTreeMap::new();
    for r in by_image(&all).remove(image).unwrap_or_default() {
        let why = match &r.file {
            Some(file) => format!("{} (in {file})", r.why),
            None => r.why.clone(),
        };
        held.entry(r.tag).or_insert(why);
    }
    held
}

/// Judge `eval` at [`test_now`] (returned), with `--repo`'s first sightings of `image`
/// when the policy has `minAge`.
fn set_clocks(
    eval: &mut Evaluation<'_>,
    args: &TagsArgs,
    policy: &Policy,
    image: &ImageName,
    tags: &[String],
) -> jiff::Timestamp {
    let now = test_now();
    eval.set_now(now);
    if let Some(dir) = args.repo.as_ref().filter(|_| policy.min_age.is_some()) {
        eval.set_first_seen(first_seen_in(dir, image, tags));
    }
    now
}

/// The clock, or `IMAGEBUMP_TEST_NOW` (tests); a bad one is the clock.
fn test_now() -> jiff::Timestamp {
    crate::promote::now()
        .ok()
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .unwrap_or_else(jiff::Timestamp::now)
}

/// When `tags` of `image` were first seen, as the refs pull-request runs record on the
/// `origin` of the clone at `dir` say (`minAge`), read without the token and never over
/// plain `http://`; what cannot be read is said on stderr.
fn first_seen_in(
    dir: &Path,
    image: &ImageName,
    tags: &[String],
) -> std::collections::BTreeMap<String, jiff::Timestamp> {
    use crate::resolve::first_seen::{FirstSeen, NAMESPACE};
    match crate::source::git::Git::local_origin_refs(dir, NAMESPACE) {
        Ok(names) => FirstSeen::from_refs(&names).of(&image.to_string(), tags),
        Err(e) => {
            eprintln!(
                "warning: {}",
                term(&format!(
                    "{}: the first sightings recorded on origin ({NAMESPACE}*) were not read: {e}",
                    dir.display()
                ))
            );
            std::collections::BTreeMap::new()
        }
    }
}

/// Each candidate's `minAge` clock.
fn add_ages(explained: &mut Explained<'_>, eval: &Evaluation<'_>, now: jiff::Timestamp) {
    use imagebump_policy::age::Clock;
    let clocks: std::collections::HashMap<&str, Clock> = eval.clocks().into_iter().collect();
    for c in &mut explained.candidates {
        let Some(clock) = clocks.get(c.tag) else {
            continue;
        };
        let said = clock.describe(now);
        c.age = Some(AgeOut {
            clock: clock.name(),
            since: clock.since().to_string(),
            recorded: match clock {
                Clock::Built(_) => None,
                Clock::FirstSeen(_) => Some(true),
                Clock::SeenNow(_) => Some(false),
            },
            said,
        });
    }
}

/// The policy for the image: the configuration's, with the flags on top.
fn policy(config: &Config, reference: &Reference, args: &TagsArgs) -> Result<Policy, Error> {
    let mut policies =
        Policies::new(&config.defaults, &config.images).map_err(|e| Error::Rules(e.to_string()))?;
    policies
        .policy_for(
            &reference.name,
            &reference.written,
            Some(("command line", &flags(args)?)),
        )
        .map_err(|e| Error::PolicyFlag {
            flag: flag_name(e.key).to_string(),
            message: e.message,
            hint: e.hint,
        })
}

/// What the evaluation decided and why, for printing.
fn explained<'a>(
    image: &ImageName,
    current: Option<&'a str>,
    policy: &'a Policy,
    eval: &'a Evaluation,
    choice: &'a Choice,
    errors: &'a [String],
) -> Explained<'a> {
    let (chosen, digest, skipped) = match choice {
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
            age: None,
        })
        .collect();
    Explained {
        version: 1,
        image: image.to_string(),
        current,
        policy,
        chosen,
        digest,
        skipped,
        assumed: eval.assumed(),
        signer: None,
        gates: Vec::new(),
        candidates,
        warnings: eval.warnings().map(String::as_str).collect(),
        errors,
    }
}

fn print(report: &Explained, out: &Output) {
    match out.format {
        Format::Json => match serde_json::to_string_pretty(report) {
            Ok(s) => super::output::print(format_args!("{}\n", imagebump_model::escape::json(&s))),
            Err(e) => eprintln!("error: {e}"),
        },
        Format::Text => print_text(report, out.width),
    }
}

fn print_text(r: &Explained, width: Option<usize>) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "image:   {}", term(&r.image.to_string()));
    let policy = format!("{} ({})", r.policy.summary(), r.policy.source);
    let _ = writeln!(out, "policy:  {}", term(&policy));
    let current = match (r.current, r.assumed) {
        (Some(c), _) => c.to_string(),
        (None, Some(a)) => format!(
            "(none: every candidate judged as new; tags shaped like {a}, the newest version the policy accepts)"
        ),
        (None, None) => "(none: every candidate judged as new)".to_string(),
    };
    let _ = writeln!(out, "current: {}", term(&current));
    let chosen = match (r.chosen, r.digest, r.skipped) {
        (Some(t), Some(d), _) => format!("{t}@{d}"),
        (Some(t), None, _) => t.to_string(),
        (None, _, Some(why)) => format!("none: {why}"),
        (None, _, None) if !r.errors.is_empty() => "none: undecided, see the errors".into(),
        (None, _, None) => "none (nothing beats the current tag)".into(),
    };
    let _ = writeln!(out, "chosen:  {}", term(&chosen));
    if let Some(signer) = &r.signer {
        let _ = writeln!(out, "signed:  {}", term(&signer.to_string()));
    }
    for gate in &r.gates {
        let _ = writeln!(out, "gate:    {}", term(gate));
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {}", term(w));
    }
    if !r.candidates.is_empty() {
        let rows: Vec<Vec<String>> = r
            .candidates
            .iter()
            .map(|c| {
                // A kept candidate's reason does not name its clock; a dropped one's does.
                let reason = match (&c.age, c.kept) {
                    (Some(age), true) => format!("{} ({})", c.reason, age.said),
                    _ => c.reason.clone(),
                };
                vec![
                    c.tag.to_string(),
                    if c.kept { "yes" } else { "no" }.to_string(),
                    reason,
                ]
            })
            .collect();
        let _ = writeln!(out);
        let header = ["TAG", "KEPT", "REASON"];
        let cuts = [Cut::Middle, Cut::Keep, Cut::End];
        let _ = write!(out, "{}", fitted(&header, &rows, width, &cuts));
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

/// A value for the terminal: its hidden characters (an escape sequence, a newline from a
/// registry's answer) shown as `\u{…}`.
fn term(s: &str) -> std::borrow::Cow<'_, str> {
    imagebump_model::escape::terminal(s)
}
