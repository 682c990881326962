//! Kustomizations: their `images:` entries (`name`, `newName`, `newTag` (also
//! `tag@digest`), `digest`) are references; what they include (`resources`, `bases`,
//! `components`) builds the [`graph`] that says where a manifest image's new version goes.

pub mod graph;
pub mod patches;

use crate::discover::vocab::{saturating_u32, FileCtx, ImageRef, RefKind, SlotFormat};
use arcstr::ArcStr;
use imagebump_model::name::{self, parse_name, ImageName, Reference};
use imagebump_model::Problem;
use imagebump_yaml::{Doc, Node, PathSeg, Scalar};

/// What the graph needs from one kustomization file: held for every kustomization until
/// the manifests are placed (5,000 at 10,000 apps), so in boxed slices of their exact
/// length, the file's name shared with its references and `images:` names shared with the
/// run's other copies of them (docs/performance.md).
#[derive(Debug, Clone, Default)]
pub struct Kustomization {
    file: ArcStr,
    /// Where the file's directory ends in its name (`None`: at the root), found once: the
    /// graph asks for a kustomization's directory at every step of every chain.
    dir_end: Option<u32>,
    /// `resources`, `bases` and `components` entries as written, with their line.
    pub includes: Box<[(Box<str>, u32)]>,
    /// `components` entries as written (also in `includes`): their `images:` apply to
    /// everything this kustomization renders.
    pub components: Box<[Box<str>]>,
    pub images: Box<[Entry]>,
    /// `configurations:` files as written (field specs for custom resources).
    pub configurations: Box<[Box<str>]>,
    /// `helmCharts:` values files and `configMapGenerator` files under a Helm values key, as
    /// written: read as Helm values, whatever their name.
    pub values_files: Box<[Box<str>]>,
    /// Patches (`patchesStrategicMerge:`, `patches:`, `patchesJson6902:`), in the order
    /// kustomize applies them.
    pub patches: Box<[patches::Patch]>,
    /// The container images its `replacements:` write (applied after its `images:`), those
    /// of its replacement files once placement has read them.
    pub replacements: Box<[patches::Effect]>,
    /// `replacements:` files (`path:` items), as written.
    pub replacement_files: Box<[Box<str>]>,
    /// It renders what imagebump does not read (a Helm chart, a generator or transformer
    /// plugin, field specs of its own): what its `images:` entries reach is not known.
    pub opaque: bool,
}

impl Kustomization {
    /// The kustomization in `file`, with nothing read yet.
    pub fn new(file: ArcStr) -> Kustomization {
        Kustomization {
            dir_end: file.rfind('/').map(saturating_u32),
            file,
            ..Default::default()
        }
    }

    pub fn file(&self) -> &ArcStr {
        &self.file
    }

    /// Its directory, `/`-separated from the root (`.` for the root).
    pub fn dir(&self) -> &str {
        (self.dir_end)
            .and_then(|end| self.file.get(..end as usize))
            .unwrap_or(".")
    }
}

/// One `images:` entry, as kustomize applies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its line (a file is at most `MAX_FILE_BYTES`, see `saturating_u32`).
    pub line: u32,
    pub name: ArcStr,
    pub new_name: Option<ArcStr>,
    /// It sets the tag or the digest (`newTag`, `digest`).
    pub sets_version: bool,
}

/// The scalars of a list-valued key.
fn scalars<'n>(root: &'n Node, key: &str) -> impl Iterator<Item = &'n Scalar> {
    let items = match root.get(key) {
        Some(Node::Seq { items, .. }) => items.as_slice(),
        _ => &[],
    };
    items.iter().filter_map(Node::as_scalar)
}

/// The strings of a list-valued key.
fn names(root: &Node, key: &str) -> Box<[Box<str>]> {
    scalars(root, key)
        .map(|s| s.value.as_str().into())
        .collect()
}

/// The kustomization's includes and `images:` entries.
pub fn read(ctx: &FileCtx, docs: &[Doc]) -> Kustomization {
    let mut k = Kustomization::new(ArcStr::clone(&ctx.file));
    let Some(root) = docs.first().and_then(|d| d.root.as_ref()) else {
        return k;
    };
    k.includes = ["resources", "bases", "components"]
        .into_iter()
        .flat_map(|key| scalars(root, key))
        .map(|s| {
            let line = ctx.at(s.span.start).0;
            (s.value.as_str().into(), saturating_u32(line))
        })
        .collect();
    k.components = names(root, "components");
    k.values_files = values_files(root);
    k.configurations = names(root, "configurations");
    k.opaque = OPAQUE.iter().any(|key| root.get(key).is_some());
    k.patches = read_patches(ctx, root);
    (k.replacements, k.replacement_files) = replacements(ctx, root);
    if let Some(Node::Seq { items, .. }) = root.get("images") {
        k.images = (items.iter())
            .filter_map(|item| {
                let field = |f: &str| item.get(f).and_then(Node::str_value).map(ArcStr::from);
                Some(Entry {
                    line: saturating_u32(ctx.at(item.offset()).0),
                    name: field("name")?,
                    new_name: field("newName"),
                    sets_version: item.get("newTag").is_some() || item.get("digest").is_some(),
                })
            })
            .collect();
    }
    k
}

/// The fields by which a kustomization renders resources, or changes images, beyond the
/// files it lists.
const OPAQUE: [&str; 5] = [
    "helmCharts",
    "helmChartInflationGenerator",
    "generators",
    "transformers",
    "configurations",
];

pub fn scan(
    ctx: &FileCtx,
    docs: &[Doc],
    helm_keys: &super::helm::ImageKeys,
    refs: &mut Vec<ImageRef>,
    problems: &mut Vec<Problem>,
) {
    let unit = ctx.file.rsplit_once('/').map_or(".", |(dir, _)| dir);
    for doc in docs {
        let Some(root) = &doc.root else { continue };
        helm_charts(ctx, doc.index, root, helm_keys, refs, problems);
        let Some(images) = root.get("images") else {
            continue;
        };
        let items = match images {
            Node::Seq { items, .. } => items,
            // `images:` with nothing under it is an empty list.
            Node::Scalar(s) if s.value.is_empty() || s.value == "null" => continue,
            other => {
                problems.push(ctx.problem(
                    other.offset(),
                    "`images:` must be a list of {name, newName, newTag, digest}",
                ));
                continue;
            }
        };
        for (i, item) in items.iter().enumerate() {
            let base = vec![PathSeg::Key("images".into()), PathSeg::Index(i)];
            match entry(ctx, doc.index, base, unit, item) {
                Ok(r) => refs.push(r),
                Err(p) => problems.push(p),
            }
        }
    }
}

/// `patchesStrategicMerge:`, `patches:` then `patchesJson6902:` (the order kustomize
/// applies them in), files and inline.
fn read_patches(ctx: &FileCtx, root: &Node) -> Box<[patches::Patch]> {
    let mut out = Vec::new();
    for s in scalars(root, "patchesStrategicMerge") {
        let inline = s.value.contains('\n') || s.value.trim_start().starts_with(['{', '[']);
        out.push(match inline {
            true => patch(ctx, s, None),
            false => patches::Patch {
                path: Some(s.value.as_str().into()),
                line: saturating_u32(ctx.at(s.span.start).0),
                target: None,
                inline: Box::default(),
            },
        });
    }
    for key in ["patches", "patchesJson6902"] {
        let Some(Node::Seq { items, .. }) = root.get(key) else {
            continue;
        };
        for item in items {
            let target = patches::target(item);
            let text = |key| item.get(key).and_then(Node::as_scalar);
            if let Some(s) = text("path") {
                let line = saturating_u32(ctx.at(item.offset()).0);
                out.push(patches::Patch {
                    path: Some(s.value.as_str().into()),
                    line,
                    target,
                    inline: Box::default(),
                });
            } else if let Some(s) = text("patch") {
                out.push(patch(ctx, s, target));
            }
        }
    }
    out.into_boxed_slice()
}

/// The container images the `replacements:` written in the kustomization copy a value
/// into, and the files of replacements it lists (`path:` items, read at placement).
fn replacements(ctx: &FileCtx, root: &Node) -> (Box<[patches::Effect]>, Box<[Box<str>]>) {
    let items = match root.get("replacements") {
        Some(Node::Seq { items, .. }) => items.as_slice(),
        _ => &[],
    };
    let line_of = |offset: usize| saturating_u32(ctx.at(offset).0);
    let inline = patches::replacement_targets(items, &ctx.file, &line_of);
    let files = (items.iter())
        .filter_map(|i| i.get("path").and_then(Node::str_value))
        .map(Box::from)
        .collect();
    (inline.into_boxed_slice(), files)
}

/// An inline patch: `patches[].patch` (always the patch itself), or a
/// `patchesStrategicMerge:` item that is one (YAML or JSON in a string).
fn patch(ctx: &FileCtx, s: &Scalar, target: Option<patches::Target>) -> patches::Patch {
    let line = saturating_u32(ctx.at(s.span.start).0);
    // A block string's text starts on the line after its indicator.
    let first = match s.style {
        imagebump_yaml::Style::Block => line.saturating_add(1),
        _ => line,
    };
    let text = s.value.as_str();
    let lines = imagebump_yaml::LineIndex::shifted(text, first.saturating_sub(1) as usize, 0);
    let line_of = |offset: usize| saturating_u32(lines.line_col(offset).0);
    let docs = imagebump_yaml::parse_located(text).unwrap_or_default();
    let inline = (docs.iter())
        .filter_map(|d| d.root.as_ref())
        .flat_map(|root| patches::effects(root, target.as_ref(), &ctx.file, &line_of))
        .collect();
    patches::Patch {
        path: None,
        line,
        target,
        inline,
    }
}

/// `helmCharts[].valuesInline`: Helm values written in the kustomization.
fn helm_charts(
    ctx: &FileCtx,
    doc: usize,
    root: &Node,
    keys: &super::helm::ImageKeys,
    refs: &mut Vec<ImageRef>,
    problems: &mut Vec<Problem>,
) {
    let Some(Node::Seq { items, .. }) = root.get("helmCharts") else {
        return;
    };
    for (i, chart) in items.iter().enumerate() {
        if let Some(values) = chart.get("valuesInline") {
            let path = [
                PathSeg::Key("helmCharts".into()),
                PathSeg::Index(i),
                PathSeg::Key("valuesInline".into()),
            ];
            super::helm::values(ctx, doc, values, &path, keys, refs, problems);
        }
    }
}

/// `helmCharts[].valuesFile` and `additionalValuesFiles`, and the files a
/// `configMapGenerator` puts under a Helm values key (a Flux `HelmRelease`'s `valuesFrom`),
/// as written.
fn values_files(root: &Node) -> Box<[Box<str>]> {
    let mut out = generated_values(root);
    let Some(Node::Seq { items, .. }) = root.get("helmCharts") else {
        return out.into_boxed_slice();
    };
    for chart in items {
        if let Some(f) = chart.get("valuesFile").and_then(Node::str_value) {
            out.push(f.into());
        }
        if let Some(Node::Seq { items, .. }) = chart.get("additionalValuesFiles") {
            out.extend(items.iter().filter_map(Node::str_value).map(Box::from));
        }
    }
    out.into_boxed_slice()
}

/// `configMapGenerator[].files` and `secretGenerator[].files` entries whose data key is a
/// Helm values key: `values.yaml`, or `values.yaml=podinfo.yaml` (the key before `=`, the
/// file after it).
fn generated_values(root: &Node) -> Vec<Box<str>> {
    let generators = ["configMapGenerator", "secretGenerator"]
        .into_iter()
        .filter_map(|k| match root.get(k) {
            Some(Node::Seq { items, .. }) => Some(items),
            _ => None,
        });
    let files = generators.flatten().filter_map(|g| match g.get("files") {
        Some(Node::Seq { items, .. }) => Some(items),
        _ => None,
    });
    files
        .flatten()
        .filter_map(Node::str_value)
        .filter_map(|f| {
            let (data_key, file) = f
                .split_once('=')
                .unwrap_or_else(|| (f.rsplit_once('/').map_or(f, |(_, name)| name), f));
            super::helm_release::is_values_key(data_key.trim()).then(|| file.trim().into())
        })
        .collect()
}

pub(super) fn entry(
    ctx: &FileCtx,
    doc: usize,
    base: Vec<PathSeg>,
    unit: &str,
    item: &Node,
) -> Result<ImageRef, Problem> {
    let Node::Map { .. } = item else {
        return Err(ctx.problem(
            item.offset(),
            "kustomize image entry must be a mapping with `name`",
        ));
    };
    let name_node = item
        .get("name")
        .ok_or_else(|| ctx.problem(item.offset(), "kustomize image entry has no `name`"))?;
    if let Some(r) = not_one_line(ctx, unit, item) {
        return Ok(r);
    }
    let field = |key: &str| entry_field(ctx, item, key);
    let name =
        field("name")?.ok_or_else(|| ctx.problem(name_node.offset(), "`name` must be a string"))?;
    let (new_name, new_tag, digest) = (field("newName")?, field("newTag")?, field("digest")?);
    let (new_name, new_tag, digest) = (new_name.as_deref(), new_tag.as_deref(), digest.as_deref());
    let written = new_name.unwrap_or(&name);
    let at = new_tag.map_or(written.span.start, |t| t.span.start);
    if let Some(why) = not_an_image(written, new_tag) {
        let r = Reference {
            name: ImageName::unparsed(&written.value),
            written: written.value.clone(),
            tag: None,
            digest: None,
        };
        let mut out = ctx.new_ref(RefKind::Kustomize, unit, at, r);
        out.unmanaged = Some(why.into());
        return Ok(out);
    }
    let image =
        parse_name(&written.value).map_err(|e| ctx.problem(written.span.start, e.to_string()))?;
    let (tag, tag_digest) = match new_tag {
        Some(t) => match t.value.split_once('@') {
            Some((tag, d)) => (Some(tag.to_string()), Some(d.to_string())),
            None => (Some(t.value.clone()), None),
        },
        None => (None, None),
    };
    let in_tag = tag_digest.is_some();
    let digest_value = tag_digest.or_else(|| digest.map(|d| d.value.clone()));
    check_versions(ctx, at, tag.as_deref(), digest_value.as_deref())?;
    let r = Reference {
        name: image,
        written: written.value.clone(),
        tag,
        digest: digest_value,
    };
    let mut out = ctx.new_ref(RefKind::Kustomize, unit, at, r);
    entry_slots(ctx, (doc, &base), &mut out, new_tag, digest, in_tag);
    Ok(out)
}

/// An entry's `key` as its line's text: a block scalar on one line is read without the
/// line break it ends with (`FileCtx::one_line`); `Err` when it is not a string.
fn entry_field<'n>(
    ctx: &FileCtx,
    item: &'n Node,
    key: &str,
) -> Result<Option<std::borrow::Cow<'n, Scalar>>, Problem> {
    match item.get(key) {
        None => Ok(None),
        Some(Node::Scalar(s)) => Ok(Some(
            ctx.one_line_scalar(s)
                .unwrap_or(std::borrow::Cow::Borrowed(s)),
        )),
        Some(other) => Err(ctx.problem(other.offset(), format!("`{key}` must be a string"))),
    }
}

/// An entry's tag and digest must be valid ones; `Err` at `at` names the bad one.
fn check_versions(
    ctx: &FileCtx,
    at: usize,
    tag: Option<&str>,
    digest: Option<&str>,
) -> Result<(), Problem> {
    if let Some(t) = tag.filter(|t| !name::is_valid_tag(t)) {
        return Err(ctx.problem(at, format!("invalid tag {t:?} in newTag")));
    }
    if let Some(d) = digest.filter(|d| !name::is_valid_digest(d)) {
        return Err(ctx.problem(at, format!("invalid digest {d:?}")));
    }
    Ok(())
}

/// Where an entry's version is edited: its `newTag` (a `tag@digest` there when `in_tag`),
/// and its `digest:` beside it; without a `newTag` the entry is not managed, and says why.
fn entry_slots(
    ctx: &FileCtx,
    (doc, base): (usize, &[PathSeg]),
    out: &mut ImageRef,
    new_tag: Option<&Scalar>,
    digest: Option<&Scalar>,
    in_tag: bool,
) {
    let path = |key: &str| {
        let mut p = base.to_vec();
        p.push(PathSeg::Key(key.into()));
        p
    };
    match new_tag {
        None if digest.is_some() => {
            out.unmanaged = Some(arcstr::literal!("pinned by digest only (no newTag)").into())
        }
        None => {
            out.unmanaged =
                Some("no newTag: the tag is the resources' (listed at their line)".into())
        }
        Some(t) => {
            let format = if in_tag {
                SlotFormat::TagAtDigest
            } else {
                SlotFormat::Tag
            };
            out.slots.push(ctx.slot(doc, path("newTag"), t, format));
            if let (Some(d), false) = (digest, in_tag) {
                out.slots
                    .push(ctx.slot(doc, path("digest"), d, SlotFormat::Digest));
            }
        }
    }
}

/// An `images:` entry with a value written as a block scalar that is not one line, listed
/// as unmanaged with why: what such a value deploys is not one line to edit.
fn not_one_line(ctx: &FileCtx, unit: &str, item: &Node) -> Option<ImageRef> {
    let (at, why) = ["name", "newName", "newTag", "digest"]
        .iter()
        .find_map(|key| {
            let s = item.get(key)?.as_scalar()?;
            ctx.one_line(s).err().map(|why| (s.span.start, why))
        })?;
    let written = item.get("newName").or(item.get("name"));
    let written = written.and_then(Node::str_value).unwrap_or_default();
    let r = Reference {
        name: ImageName::unparsed(written),
        written: written.to_string(),
        tag: None,
        digest: None,
    };
    let mut out = ctx.new_ref(RefKind::Kustomize, unit, at, r);
    out.unmanaged = Some(why.into());
    Some(out)
}

/// Why an `images:` entry whose name or `newTag` is no name or tag at all is listed as
/// unmanaged, not reported: a variable filled in at deploy time (`${TAG}`, Flux's post-build
/// substitution), a pattern (`1.*`). A valid name or tag is never one of these.
fn not_an_image(
    written: &imagebump_yaml::Scalar,
    new_tag: Option<&imagebump_yaml::Scalar>,
) -> Option<String> {
    let bad_name = parse_name(&written.value).is_err();
    if let Some(why) = name::placeholder(&written.value).filter(|_| bad_name) {
        return Some(format!("the image name is {why}"));
    }
    let t = new_tag?;
    let tag = t
        .value
        .split_once('@')
        .map_or(t.value.as_str(), |(tag, _)| tag);
    (!name::is_valid_tag(tag))
        .then(|| name::placeholder(tag))
        .flatten()
        .map(|why| format!("newTag is {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_files_under_a_values_key_are_values_files() {
        let text = "configMapGenerator:\n- name: a\n  files:\n  - values.yaml=podinfo.yaml\n  - dir/prod-values.yml\n  - config.yaml\n  - app.yaml=values.yaml\n- name: b\n  literals: [x=y]\nsecretGenerator:\n- name: s\n  files: [secret-values.yaml]\nhelmCharts:\n- name: c\n  valuesFile: chart.yaml\n";
        let docs = imagebump_yaml::parse_located(text).unwrap();
        let root = docs[0].root.as_ref().unwrap();
        let files = values_files(root);
        let got: Vec<&str> = files.iter().map(|f| &**f).collect();
        assert_eq!(
            got,
            [
                "podinfo.yaml",
                "dir/prod-values.yml",
                "secret-values.yaml",
                "chart.yaml"
            ]
        );
    }
}
