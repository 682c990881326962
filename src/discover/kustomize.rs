//! Kustomize `images:` entries: `name`, `newName`, `newTag` (also `tag@digest`), `digest`.

use super::{FileCtx, ImageRef, RefKind, SlotFormat};
use imagebump_model::name::{self, parse_name, Reference};
use imagebump_model::Problem;
use imagebump_yaml::{Doc, Node, PathSeg};

pub fn scan(ctx: &FileCtx, docs: &[Doc], refs: &mut Vec<ImageRef>, problems: &mut Vec<Problem>) {
    let unit = ctx.file.rsplit_once('/').map_or(".", |(dir, _)| dir);
    for doc in docs {
        let Some(root) = &doc.root else { continue };
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

fn entry(
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
    let field = |key: &str| -> Result<Option<&imagebump_yaml::Scalar>, Problem> {
        match item.get(key) {
            None => Ok(None),
            Some(Node::Scalar(s)) => Ok(Some(s)),
            Some(other) => Err(ctx.problem(other.offset(), format!("`{key}` must be a string"))),
        }
    };
    let name =
        field("name")?.ok_or_else(|| ctx.problem(name_node.offset(), "`name` must be a string"))?;
    let new_name = field("newName")?;
    let new_tag = field("newTag")?;
    let digest = field("digest")?;
    let written = new_name.unwrap_or(name);
    let image =
        parse_name(&written.value).map_err(|e| ctx.problem(written.span.start, e.to_string()))?;
    let at = new_tag.map_or(written.span.start, |t| t.span.start);
    let path = |key: &str| {
        let mut p = base.clone();
        p.push(PathSeg::Key(key.into()));
        p
    };

    let (tag, tag_digest) = match new_tag {
        Some(t) => match t.value.split_once('@') {
            Some((tag, d)) => (Some(tag.to_string()), Some(d.to_string())),
            None => (Some(t.value.clone()), None),
        },
        None => (None, None),
    };
    if let Some(t) = &tag {
        if !name::is_valid_tag(t) {
            return Err(ctx.problem(at, format!("invalid tag {t:?} in newTag")));
        }
    }
    let digest_value = tag_digest
        .clone()
        .or_else(|| digest.map(|d| d.value.clone()));
    if let Some(d) = &digest_value {
        if !name::is_valid_digest(d) {
            return Err(ctx.problem(at, format!("invalid digest {d:?}")));
        }
    }
    let r = Reference {
        name: image,
        written: written.value.clone(),
        tag,
        digest: digest_value,
    };
    let mut out = ctx.new_ref(RefKind::Kustomize, unit, at, r);
    match new_tag {
        None if digest.is_some() => {
            out.unmanaged = Some("pinned by digest only (no newTag)".into())
        }
        None => out.unmanaged = Some("no newTag: the tag comes from the resources".into()),
        Some(t) => {
            let format = if tag_digest.is_some() {
                SlotFormat::TagAtDigest
            } else {
                SlotFormat::Tag
            };
            out.slots.push(ctx.slot(doc, path("newTag"), t, format));
            if let (Some(d), None) = (digest, &tag_digest) {
                out.slots
                    .push(ctx.slot(doc, path("digest"), d, SlotFormat::Digest));
            }
        }
    }
    Ok(out)
}
