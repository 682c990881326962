//! Flux image automation kept in the repository: every value marked with a setter
//! (`# {"$imagepolicy": "flux-system:podinfo"}`, `…:tag`, `…:name`, `…:digest`) becomes a
//! reference whose image is the named ImagePolicy's ImageRepository and whose policy is the
//! ImagePolicy's rule (`imagebump_flux` reads the resources). The value is edited in place, the
//! part Flux would write: the whole reference, the tag, the name or the digest.
//!
//! A setter counts where an ImageUpdateAutomation of the policy's namespace would reach it
//! (`spec.update.path`); when the repository holds no ImageUpdateAutomation, every setter
//! counts, since imagebump is what replaces it. Setters of one policy in one mapping
//! (`repository:` + `tag:`) make one reference.

use std::collections::BTreeMap;

use super::Discovery;
use crate::discover::vocab::{FileCtx, ImageRef, RefKind, SlotFormat};
use imagebump_flux::{self as flux, Automation, Field, ImagePolicy, ImageRepository, Meta, Setter};
use imagebump_model::name::{
    is_valid_tag, parse_name, parse_reference, placeholder, ImageName, Reference,
};
use imagebump_model::policy::PolicySpec;
use imagebump_model::Problem;
use imagebump_policy::rules::Policies;
use imagebump_yaml::{LineIndex, PathSeg};

/// The Flux resources of the repository and the marked files, in file order.
#[derive(Default)]
pub struct FluxResources {
    repositories: Vec<ImageRepository>,
    policies: Vec<ImagePolicy>,
    automations: Vec<Automation>,
    broken: Vec<(&'static str, Meta)>,
    marked: Vec<(String, String, Vec<Setter>)>,
}

impl FluxResources {
    /// Take what one file holds; its problems and notes go to `out`.
    pub fn add(&mut self, file: &str, text: &str, loaded: flux::Loaded, out: &mut Discovery) {
        out.problems.extend(loaded.problems);
        out.notes.extend(loaded.notes);
        self.repositories.extend(loaded.repositories);
        self.policies.extend(loaded.policies);
        self.automations.extend(loaded.automations);
        self.broken.extend(loaded.broken);
        if !loaded.setters.is_empty() {
            self.marked
                .push((file.to_string(), text.to_string(), loaded.setters));
        }
    }
}

/// Does a setter mark one of `r`'s values? Then the setter, not the file's own reading,
/// says what the value is.
pub fn marks(marked: &[std::ops::Range<usize>], r: &ImageRef) -> bool {
    r.slots.iter().any(|slot| {
        marked
            .iter()
            .any(|m| slot.span.start() < m.end && m.start < slot.span.end())
    })
}

/// Does a setter mark the value `r` (listed without slots: a template, a placeholder)
/// starts at? Then the setter's reference lists it, once.
pub fn marks_at(ctx: &FileCtx, marked: &[std::ops::Range<usize>], r: &ImageRef) -> bool {
    r.slots.is_empty() && marked.iter().any(|m| ctx.at(m.start) == r.at())
}

/// Turn every setter into a reference (or a problem, or a note) in `out`.
pub fn scan(found: FluxResources, policies: &mut Policies, out: &mut Discovery) {
    for (file, text, setters) in &found.marked {
        let ctx = FileCtx {
            file: file.as_str().into(),
            text,
            lines: LineIndex::new(text),
        };
        let before = out.refs.len();
        for group in groups(setters) {
            match reference(&found, &ctx, &group, policies, out) {
                Ok(r) => out.refs.push(r),
                Err(p) => out.problems.push(p),
            }
        }
        if out.refs.iter_from(before).any(ImageRef::is_managed) {
            out.sources
                .insert(file.as_str().into(), text.as_str().into());
        }
    }
}

/// Setters of one policy in one mapping, in file order; a whole-reference setter alone.
fn groups(setters: &[Setter]) -> Vec<Vec<&Setter>> {
    let mut keyed: BTreeMap<(usize, &[PathSeg], &flux::PolicyName, usize), Vec<&Setter>> =
        BTreeMap::new();
    for (i, s) in setters.iter().enumerate() {
        let parent = s.path.split_last().map_or(&[][..], |(_, p)| p);
        let alone = if s.field == Field::Full {
            i
        } else {
            usize::MAX
        };
        keyed
            .entry((s.doc, parent, &s.policy, alone))
            .or_default()
            .push(s);
    }
    let mut groups: Vec<Vec<&Setter>> = keyed.into_values().collect();
    groups.sort_by_key(|g| g.first().map(|s| s.scalar.span.start));
    groups
}

/// The reference a group of setters makes; an error when it names what is not there.
fn reference(
    found: &FluxResources,
    ctx: &FileCtx,
    group: &[&Setter],
    policies: &mut Policies,
    out: &mut Discovery,
) -> Result<ImageRef, Problem> {
    let first = group
        .first()
        .ok_or_else(|| Problem::general("empty setter group"))?;
    let at = |message: String| ctx.problem(first.offset, message);
    let wanted = &first.policy;
    let policy = lookup(
        &found.policies,
        &found.broken,
        "ImagePolicy",
        wanted,
        &ctx.file,
    )
    .map_err(|why| at(format!("the Flux setter names {why}")))?;
    let repo_ns = policy.repository.0.as_deref().unwrap_or(&wanted.namespace);
    let repo_name = flux::PolicyName {
        namespace: repo_ns.to_string(),
        name: policy.repository.1.clone(),
    };
    let repo = lookup(
        &found.repositories,
        &found.broken,
        "ImageRepository",
        &repo_name,
        &policy.meta.file,
    )
    .map_err(|why| at(format!("{} names {why}", policy.meta.label("ImagePolicy"))))?;
    let mut r = current(ctx, group, repo)?;
    if let Some(why) = imagebump_model::name::placeholder(&repo.image) {
        let label = repo.meta.id("ImageRepository");
        r.unmanaged = Some(format!("{label}: spec.image is {why}").into());
        return Ok(r);
    }
    if let Err(p) = give_policy(&mut r, policy, repo, policies, ctx, first.offset) {
        out.problems.push(p);
    }
    if r.is_managed() && !in_scope(found, policy, wanted, &ctx.file) {
        let why = format!("outside the update.path of every ImageUpdateAutomation of namespace {}: Flux would not update it", wanted.namespace);
        let label = policy.meta.id("ImagePolicy");
        out.notes.push(at(format!(
            "the Flux setter for {label} is {why}; left alone"
        )));
        r.unmanaged = Some(why.into());
    }
    if r.is_managed() && r.policy.ignore {
        r.unmanaged = Some(format!("ignored ({})", r.policy.source).into());
    }
    Ok(r)
}

/// Give `r` the ImagePolicy's rule (with the repository's exclusions), under
/// imagebump.yaml's `images` rules, which are the deliberate configuration.
fn give_policy(
    r: &mut ImageRef,
    policy: &ImagePolicy,
    repo: &ImageRepository,
    policies: &mut Policies,
    ctx: &FileCtx,
    offset: usize,
) -> Result<(), Problem> {
    let label = policy.meta.id("ImagePolicy");
    let spec = match &policy.spec {
        Ok(spec) => Some(PolicySpec {
            ignore_tags: Some(repo.ignore_tags.clone()).filter(|t| !t.is_empty()),
            ..spec.clone()
        }),
        Err(why) => {
            r.unmanaged = Some(format!("{label}: {why}").into());
            None
        }
    };
    let layer = spec.as_ref().map(|s| (label.as_str(), s));
    match policies.policy_with(&r.image, &r.written, Some(&ctx.file), layer, None) {
        Ok(p) => {
            r.policy = p;
            Ok(())
        }
        Err(e) => {
            r.unmanaged = Some(arcstr::literal!("invalid policy").into());
            let mut p = ctx.problem(offset, format!("{label}: {e}"));
            p.hint = e.hint;
            Err(p)
        }
    }
}

/// The reference as the marked values hold it now: the image of the ImageRepository,
/// the tag and digest of the values, a slot per value that moves.
fn current(ctx: &FileCtx, group: &[&Setter], repo: &ImageRepository) -> Result<ImageRef, Problem> {
    let first = group
        .first()
        .ok_or_else(|| Problem::general("empty setter group"))?;
    let image = match imagebump_model::name::placeholder(&repo.image) {
        Some(_) => ImageName::unparsed(&repo.image),
        None => parse_name(&repo.image)
            .map_err(|e| ctx.problem(first.offset, format!("ImageRepository: {e}")))?,
    };
    let parts = parts(ctx, group, repo, &image)?;
    let reference = Reference {
        name: image,
        written: repo.image.clone(),
        tag: parts.tag,
        digest: parts.digest,
    };
    let unit = ctx
        .file
        .rsplit_once('/')
        .map_or(".", |(d, _)| d)
        .to_string();
    // Listed where the value that moves is (the tag rather than a `:name` line above it).
    let at = parts
        .slots
        .first()
        .map_or(first.scalar.span.start, |s| s.span.start());
    let mut r = ctx.new_ref(RefKind::FluxSetter, &unit, at, reference);
    r.slots = parts.slots.into();
    r.unmanaged = match parts.other_name {
        _ if parts.placeholder.is_some() => parts.placeholder.map(|why| {
            format!("the value the Flux setter marks, {why}: not edited").into()
        }),
        Some(name) => Some(format!(
            "the `:name` value {name} is not the ImageRepository's image {}: Flux would write that name here, imagebump does not rewrite names (write it)",
            repo.image
        ).into()),
        None if r.tag.is_none() => Some(
            "no tag is marked (a `:tag` or whole-reference setter): imagebump moves tags".into(),
        ),
        None => None,
    };
    Ok(r)
}

/// What a group of marked values holds.
struct Parts {
    tag: Option<String>,
    digest: Option<String>,
    slots: Vec<crate::discover::vocab::Slot>,
    /// A `:name` value that is not the ImageRepository's image.
    other_name: Option<String>,
    /// Why a marked value is no reference or tag at all (`${TAG}`, filled in at deploy time).
    placeholder: Option<String>,
}

fn parts(
    ctx: &FileCtx,
    group: &[&Setter],
    repo: &ImageRepository,
    image: &ImageName,
) -> Result<Parts, Problem> {
    let mut parts = Parts {
        tag: None,
        digest: None,
        slots: Vec::new(),
        other_name: None,
        placeholder: None,
    };
    for s in group {
        let value = match ctx.one_line(&s.scalar) {
            Ok(value) => value.trim(),
            Err(_) => {
                parts.placeholder = Some(
                    "a block scalar over several lines (or with `+` or an indentation indicator); write it on one line".into(),
                );
                continue;
            }
        };
        let format = match s.field {
            Field::Full if parse_reference(value).is_err() && placeholder(value).is_some() => {
                parts.placeholder = placeholder(value).map(|why| format!("{value} is {why}"));
                continue;
            }
            Field::Tag if !is_valid_tag(value) && placeholder(value).is_some() => {
                parts.placeholder = placeholder(value).map(|why| format!("{value} is {why}"));
                continue;
            }
            Field::Full => {
                let parsed = parse_reference(value).map_err(|e| {
                    ctx.problem(
                        s.scalar.span.start,
                        format!("the value of a Flux setter is not an image reference: {e}"),
                    )
                })?;
                (parts.tag, parts.digest) = (parsed.tag, parsed.digest);
                SlotFormat::Reference {
                    name: repo.image.as_str().into(),
                }
            }
            Field::Tag => {
                parts.tag = Some(value.to_string()).filter(|t| !t.is_empty());
                SlotFormat::Tag
            }
            Field::Digest => {
                parts.digest = Some(value.to_string()).filter(|d| !d.is_empty());
                SlotFormat::Digest
            }
            // The name never changes while it is the ImageRepository's image; one that is
            // not would be rewritten by Flux, imagebump only says so.
            Field::Name => {
                if !same_image(value, image) {
                    parts.other_name = Some(value.to_string());
                }
                continue;
            }
        };
        parts
            .slots
            .push(ctx.slot(s.doc, s.path.clone(), &s.scalar, format));
    }
    Ok(parts)
}

/// Is `value` the image `repo` (compared normalised: `nginx` is `docker.io/library/nginx`)?
fn same_image(value: &str, repo: &ImageName) -> bool {
    parse_name(value).is_ok_and(|n| n == *repo)
}

/// Is `file` in the path of an ImageUpdateAutomation that uses this policy (one of the
/// policy's namespace)? Always, when the repository holds no automation at all.
fn in_scope(
    found: &FluxResources,
    policy: &ImagePolicy,
    wanted: &flux::PolicyName,
    file: &str,
) -> bool {
    let ns = policy
        .meta
        .namespace
        .as_deref()
        .unwrap_or(&wanted.namespace);
    // An automation Flux would refuse updates nothing, and does not make every setter count.
    let none = found.automations.is_empty()
        && !found
            .broken
            .iter()
            .any(|(kind, _)| *kind == "ImageUpdateAutomation");
    none || found
        .automations
        .iter()
        .any(|a| a.meta.namespace.as_deref().is_none_or(|n| n == ns) && a.covers(file))
}

/// Resources that are named by `name` and `namespace` (or written without a namespace).
trait Named {
    fn meta(&self) -> &Meta;
    /// Two resources with the same name that mean the same thing are not ambiguous.
    fn same(&self, other: &Self) -> bool;
}

impl Named for ImagePolicy {
    fn meta(&self) -> &Meta {
        &self.meta
    }
    fn same(&self, other: &Self) -> bool {
        (&self.repository, &self.spec) == (&other.repository, &other.spec)
    }
}

impl Named for ImageRepository {
    fn meta(&self) -> &Meta {
        &self.meta
    }
    fn same(&self, other: &Self) -> bool {
        (&self.image, &self.ignore_tags) == (&other.image, &other.ignore_tags)
    }
}

/// Why a Flux resource a setter or policy names was not found; it completes "… names ".
/// `id` is the resource as named (`ImageRepository flux-system/podinfo`), each place a
/// `file:line`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum LookupError {
    #[error("{id}, which is invalid ({at})")]
    Invalid { id: String, at: String },
    #[error("{id}, which is not in the repository")]
    Missing { id: String },
    #[error(
        "{id}, which is written twice with different settings ({first} and {second}), equally near"
    )]
    Twice {
        id: String,
        first: String,
        second: String,
    },
}

/// The resource `kind` named `wanted`: one with that namespace, else one without any; of
/// several (one cluster directory each), the one whose file shares the most directories
/// with `near`.
fn lookup<'a, T: Named>(
    all: &'a [T],
    broken: &[(&str, Meta)],
    kind: &str,
    wanted: &flux::PolicyName,
    near: &str,
) -> Result<&'a T, LookupError> {
    let id = format!("{kind} {}/{}", wanted.namespace, wanted.name);
    let named = |ns: Option<&str>| -> Vec<&'a T> {
        all.iter()
            .filter(|t| t.meta().name == wanted.name && t.meta().namespace.as_deref() == ns)
            .collect()
    };
    let mut found = named(Some(&wanted.namespace));
    if found.is_empty() {
        found = named(None);
    }
    let best = found
        .iter()
        .map(|t| shared_dirs(&t.meta().file, near))
        .max();
    let closest: Vec<&T> = found
        .into_iter()
        .filter(|t| Some(shared_dirs(&t.meta().file, near)) == best)
        .collect();
    match closest.as_slice() {
        [one] => Ok(*one),
        [] => match broken.iter().find(|(k, m)| {
            *k == kind
                && m.name == wanted.name
                && m.namespace.as_deref().is_none_or(|n| n == wanted.namespace)
        }) {
            Some((_, m)) => Err(LookupError::Invalid {
                id,
                at: format!("{}:{}", m.file, m.line),
            }),
            None => Err(LookupError::Missing { id }),
        },
        [one, rest @ ..] if rest.iter().all(|t| t.same(one)) => Ok(*one),
        [one, other, ..] => {
            let at = |m: &Meta| format!("{}:{}", m.file, m.line);
            let (first, second) = (at(one.meta()), at(other.meta()));
            Err(LookupError::Twice { id, first, second })
        }
    }
}

/// How many leading directories two files share.
fn shared_dirs(a: &str, b: &str) -> usize {
    let dirs = |f: &str| -> Vec<String> {
        let mut parts: Vec<String> = f.split('/').map(str::to_string).collect();
        parts.pop();
        parts
    };
    dirs(a)
        .iter()
        .zip(dirs(b).iter())
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(ns: Option<&str>, file: &str, image: &str) -> ImageRepository {
        ImageRepository {
            meta: Meta {
                name: "podinfo".into(),
                namespace: ns.map(str::to_string),
                file: file.into(),
                line: 1,
            },
            image: image.into(),
            ignore_tags: vec!["*.sig".into()],
        }
    }

    fn wanted() -> flux::PolicyName {
        flux::PolicyName {
            namespace: "flux-system".into(),
            name: "podinfo".into(),
        }
    }

    /// One ImageRepository per cluster directory, as a fleet repository keeps them.
    #[test]
    fn lookup_takes_the_namespace_then_the_nearest_file() {
        let all = [
            repo(
                Some("flux-system"),
                "clusters/prod/images.yaml",
                "ghcr.io/a/prod",
            ),
            repo(
                Some("flux-system"),
                "clusters/dev/images.yaml",
                "ghcr.io/a/dev",
            ),
            repo(
                Some("other"),
                "clusters/dev/apps/images.yaml",
                "ghcr.io/a/other",
            ),
            repo(None, "clusters/dev/apps/x/images.yaml", "ghcr.io/a/none"),
        ];
        let get = |near: &str| {
            lookup(&all, &[], "ImageRepository", &wanted(), near).map(|r| r.image.clone())
        };
        assert_eq!(
            get("clusters/dev/apps/x/deploy.yaml").unwrap(),
            "ghcr.io/a/dev"
        );
        assert_eq!(get("clusters/prod/deploy.yaml").unwrap(), "ghcr.io/a/prod");
        assert_eq!(
            get("apps/deploy.yaml").unwrap_err().to_string(),
            "ImageRepository flux-system/podinfo, which is written twice with different settings (clusters/prod/images.yaml:1 and clusters/dev/images.yaml:1), equally near"
        );
        // Without a namespaced one, one written without a namespace is taken.
        let none = [repo(None, "images.yaml", "ghcr.io/a/none")];
        assert_eq!(
            lookup(&none, &[], "ImageRepository", &wanted(), "x.yaml")
                .unwrap()
                .image,
            "ghcr.io/a/none"
        );
        let broken = [(
            "ImageRepository",
            repo(Some("flux-system"), "b.yaml", "x").meta,
        )];
        assert_eq!(
            lookup::<ImageRepository>(&[], &broken, "ImageRepository", &wanted(), "x.yaml")
                .unwrap_err()
                .to_string(),
            "ImageRepository flux-system/podinfo, which is invalid (b.yaml:1)"
        );
        assert_eq!(
            lookup::<ImageRepository>(&[], &[], "ImageRepository", &wanted(), "x.yaml")
                .unwrap_err()
                .to_string(),
            "ImageRepository flux-system/podinfo, which is not in the repository"
        );
    }

    #[test]
    fn nearest_directories_decide_between_clusters() {
        assert_eq!(
            shared_dirs("clusters/prod/a.yaml", "clusters/prod/apps/x.yaml"),
            2
        );
        assert_eq!(
            shared_dirs("clusters/dev/a.yaml", "clusters/prod/apps/x.yaml"),
            1
        );
        assert_eq!(shared_dirs("a.yaml", "b.yaml"), 0);
    }
}
