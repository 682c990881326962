//! Helm values files: `image:` maps (`registry`?, `repository`, `tag`?, `digest`?) at any
//! depth, and `image: "repo:tag"` strings.

use super::{FileCtx, ImageRef, RefKind, SlotFormat};
use imagebump_model::name::{self, parse_name, parse_reference, Reference};
use imagebump_model::Problem;
use imagebump_yaml::{Doc, Node, PathSeg, Scalar};

pub fn scan(ctx: &FileCtx, docs: &[Doc], refs: &mut Vec<ImageRef>, problems: &mut Vec<Problem>) {
    for doc in docs {
        if let Some(root) = &doc.root {
            walk(ctx, doc.index, root, &mut Vec::new(), refs, problems);
        }
    }
}

pub(super) fn walk(
    ctx: &FileCtx,
    doc: usize,
    node: &Node,
    path: &mut Vec<PathSeg>,
    refs: &mut Vec<ImageRef>,
    problems: &mut Vec<Problem>,
) {
    match node {
        Node::Map { entries, .. } => {
            for (key, value) in entries {
                path.push(PathSeg::Key(key.name.clone()));
                if key.name == "image" {
                    match image_value(ctx, doc, path, value) {
                        Ok(Some(r)) => refs.push(r),
                        Ok(None) => walk(ctx, doc, value, path, refs, problems),
                        Err(p) => problems.push(p),
                    }
                } else {
                    walk(ctx, doc, value, path, refs, problems);
                }
                path.pop();
            }
        }
        Node::Seq { items, .. } => {
            for (i, item) in items.iter().enumerate() {
                path.push(PathSeg::Index(i));
                walk(ctx, doc, item, path, refs, problems);
                path.pop();
            }
        }
        Node::Scalar(_) | Node::Other { .. } => {}
    }
}

fn child(path: &[PathSeg], key: &str) -> Vec<PathSeg> {
    let mut p = path.to_vec();
    p.push(PathSeg::Key(key.into()));
    p
}

/// `Ok(None)`: not an image value after all (e.g. `image: {pullPolicy: Always}`).
fn image_value(
    ctx: &FileCtx,
    doc: usize,
    path: &[PathSeg],
    value: &Node,
) -> Result<Option<ImageRef>, Problem> {
    match value {
        Node::Scalar(s) => image_string(ctx, doc, path, s),
        Node::Map { .. } if value.get("repository").is_some() => {
            image_map(ctx, doc, path, value).map(Some)
        }
        _ => Ok(None),
    }
}

fn unit(ctx: &FileCtx) -> String {
    ctx.file.to_string()
}

fn image_string(
    ctx: &FileCtx,
    doc: usize,
    path: &[PathSeg],
    s: &Scalar,
) -> Result<Option<ImageRef>, Problem> {
    if s.value.is_empty() || s.value == "null" || s.value.contains("{{") {
        return Ok(None);
    }
    let r = parse_reference(&s.value).map_err(|e| ctx.problem(s.span.start, e.to_string()))?;
    let written = r.written.clone();
    let mut out = ctx.new_ref(RefKind::HelmImageString, &unit(ctx), s.span.start, r);
    if out.tag.is_none() {
        out.unmanaged = Some(if out.digest.is_some() {
            "pinned by digest only".into()
        } else {
            "no tag (the runtime pulls latest)".into()
        });
    } else {
        out.slots.push(ctx.slot(
            doc,
            path.to_vec(),
            s,
            SlotFormat::Reference { name: written },
        ));
    }
    Ok(Some(out))
}

fn scalar_field<'a>(
    ctx: &FileCtx,
    map: &'a Node,
    key: &str,
) -> Result<Option<&'a Scalar>, Problem> {
    match map.get(key) {
        None => Ok(None),
        Some(Node::Scalar(s)) => Ok(Some(s)),
        Some(other) => Err(ctx.problem(other.offset(), format!("`image.{key}` must be a string"))),
    }
}

fn image_map(ctx: &FileCtx, doc: usize, path: &[PathSeg], map: &Node) -> Result<ImageRef, Problem> {
    let repo = scalar_field(ctx, map, "repository")?
        .ok_or_else(|| ctx.problem(map.offset(), "`image.repository` must be a string"))?;
    let registry = scalar_field(ctx, map, "registry")?.filter(|r| !r.value.is_empty());
    let tag = scalar_field(ctx, map, "tag")?;
    // An empty `digest:` key is still a place to write one (the `digest` strategy).
    let digest_key = scalar_field(ctx, map, "digest")?;
    let digest = digest_key.filter(|d| !d.value.is_empty() && d.value != "null");

    let written = match registry {
        Some(r) => format!("{}/{}", r.value.trim_end_matches('/'), repo.value),
        None => repo.value.clone(),
    };
    let image = parse_name(&written).map_err(|e| ctx.problem(repo.span.start, e.to_string()))?;
    let tag_value = tag
        .map(|t| t.value.clone())
        .filter(|t| !t.is_empty() && t != "null");
    let (tag_only, tag_digest) = match tag_value.as_deref().map(|t| t.split_once('@')) {
        Some(Some((t, d))) => (Some(t.to_string()), Some(d.to_string())),
        _ => (tag_value.clone(), None),
    };
    if let Some(t) = &tag_only {
        if !name::is_valid_tag(t) {
            return Err(ctx.problem(
                tag.map_or(repo.span.start, |t| t.span.start),
                format!("invalid tag {t:?}"),
            ));
        }
    }
    let digest_value = tag_digest
        .clone()
        .or_else(|| digest.map(|d| d.value.clone()));
    let at = tag.map_or(repo.span.start, |t| t.span.start);
    let r = Reference {
        name: image,
        written,
        tag: tag_only,
        digest: digest_value,
    };
    let mut out = ctx.new_ref(RefKind::HelmValues, &unit(ctx), at, r);
    match (tag, &out.tag) {
        (Some(t), Some(_)) => {
            let format = if tag_digest.is_some() {
                SlotFormat::TagAtDigest
            } else {
                SlotFormat::Tag
            };
            out.slots.push(ctx.slot(doc, child(path, "tag"), t, format));
            if let (Some(d), None) = (digest_key, &tag_digest) {
                out.slots
                    .push(ctx.slot(doc, child(path, "digest"), d, SlotFormat::Digest));
            }
        }
        (Some(_), None) => {
            out.unmanaged = Some("tag is empty: the chart's appVersion applies".into())
        }
        (None, _) => out.unmanaged = Some("no tag key: the chart's appVersion applies".into()),
    }
    Ok(out)
}
