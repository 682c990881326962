//! Flux `HelmRelease` values kept in the repository, read as Helm values (the image keys of
//! [`super::helm`]): a `HelmRelease`'s `spec.values` (`helm.toolkit.fluxcd.io/v2`, `v2beta1`,
//! `v2beta2`), edited in place, and the values a `ConfigMap` (a `Secret`'s `stringData`)
//! holds for a release's `valuesFrom` as a YAML string under a values key
//! (`data: {values.yaml: |}`), edited inside the string. Values files a kustomize
//! `configMapGenerator` or `secretGenerator` turns into such a resource are
//! read as Helm values files (`kustomize::read` lists them). A release's
//! `spec.postRenderers[].kustomize.images` entries are references of their own, as a
//! kustomization's `images:` entries, and override the values images they name.
//!
//! These values reach the chart as they are written: no kustomize `images:` entry rewrites
//! them, so each image is edited where it is.

use super::helm;
use crate::discover::vocab::{FileCtx, ImageRef, RefKind, Unmanaged};
use imagebump_model::Problem;
use imagebump_yaml::{BlockText, Doc, Node, PathSeg, Scalar};

/// The API group of Flux's `HelmRelease`, every version.
const API_GROUP: &str = "helm.toolkit.fluxcd.io/";

/// Is a document of this kind and apiVersion a Flux `HelmRelease`?
pub fn is_helm_release(kind: &str, api_version: &str) -> bool {
    kind == "HelmRelease" && api_version.starts_with(API_GROUP)
}

/// A `ConfigMap` data key holding Helm values: Flux's default `valuesKey` (`values.yaml`)
/// and the names a values file has (`values-prod.yaml`, `podinfo-values.yml`).
pub fn is_values_key(name: &str) -> bool {
    let yaml = name.ends_with(".yaml") || name.ends_with(".yml");
    yaml && name.contains("values")
}

/// The nodes of a manifest that hold Helm values, each with its key below `node`: read
/// here, so the manifest reader leaves them out.
pub fn values_nodes<'n>(
    kind: &str,
    api_version: &str,
    node: &'n Node,
) -> Vec<(Vec<&'n str>, &'n Node)> {
    if is_helm_release(kind, api_version) {
        let values = node.get("spec").and_then(|s| s.get("values"));
        return values
            .filter(|v| matches!(v, Node::Map { .. }))
            .map(|v| vec![(vec!["spec", "values"], v)])
            .unwrap_or_default();
    }
    // `valuesFrom` reads a ConfigMap's `data` or a Secret's; a Secret's values are in git
    // as text only under `stringData`.
    let field = match (kind, api_version) {
        ("ConfigMap", "v1") => "data",
        ("Secret", "v1") => "stringData",
        _ => return Vec::new(),
    };
    let Some(Node::Map { entries, .. }) = node.get(field) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter(|(k, v)| is_values_key(&k.name) && matches!(v, Node::Scalar(_)))
        .map(|(k, v)| (vec![field, k.name.as_str()], v))
        .collect()
}

/// Every image of the HelmRelease values and ConfigMap values strings of a manifest file.
pub fn scan(
    ctx: &FileCtx,
    docs: &[Doc],
    keys: &helm::ImageKeys,
    refs: &mut Vec<ImageRef>,
    problems: &mut Vec<Problem>,
) {
    for doc in docs {
        let Some(root) = &doc.root else { continue };
        let mut found = DocumentScan {
            ctx,
            doc: doc.index,
            keys,
            refs: Vec::new(),
            problems: Vec::new(),
        };
        found.manifests(root, &mut Vec::new());
        refs.extend(found.refs);
        problems.extend(found.problems);
    }
}

/// The images of one document's manifests.
struct DocumentScan<'a> {
    ctx: &'a FileCtx<'a>,
    doc: usize,
    keys: &'a helm::ImageKeys,
    refs: Vec<ImageRef>,
    problems: Vec<Problem>,
}

impl DocumentScan<'_> {
    /// The manifests at or below `node`, as the manifest reader finds them: a map with
    /// `kind` and `apiVersion`, the items of a `List`, manifests nested in wrappers.
    fn manifests(&mut self, node: &Node, path: &mut Vec<PathSeg>) {
        let kind = node.get("kind").and_then(Node::str_value);
        let api = node.get("apiVersion").and_then(Node::str_value);
        let (Some(kind), Some(api)) = (kind, api) else {
            for (seg, child) in node.children() {
                path.push(seg);
                self.manifests(child, path);
                path.pop();
            }
            return;
        };
        if kind == "List" {
            if let Some(Node::Seq { items, .. }) = node.get("items") {
                for (i, item) in items.iter().enumerate() {
                    path.extend([PathSeg::Key("items".into()), PathSeg::Index(i)]);
                    self.manifests(item, path);
                    path.truncate(path.len().saturating_sub(2));
                }
            }
            return;
        }
        let first = self.refs.len();
        for (at, values) in values_nodes(kind, api, node) {
            let mut path = path.clone();
            path.extend(at.iter().map(|k| PathSeg::Key((*k).into())));
            let (ctx, doc, keys) = (self.ctx, self.doc, self.keys);
            let (refs, problems) = (&mut self.refs, &mut self.problems);
            match values {
                Node::Scalar(s) => {
                    let name = at.last().copied().unwrap_or_default();
                    in_config_map(ctx, (doc, &path, name), s, keys, refs, problems);
                }
                _ => helm::values(ctx, doc, values, &path, keys, refs, problems),
            }
        }
        if is_helm_release(kind, api) {
            self.post_renderers(node, path, first);
        }
    }

    /// A release's `spec.postRenderers[].kustomize.images` entries: references of their own
    /// (`newTag`, `digest`, edited in place, as a kustomization's), applied by Flux after
    /// the chart renders. A values image (from `first` on) whose name, as the values write
    /// it, an entry with `newTag` or `digest` names is what the entry sets: overridden.
    fn post_renderers(&mut self, node: &Node, path: &[PathSeg], first: usize) {
        let Some(Node::Seq { items, .. }) = node.get("spec").and_then(|s| s.get("postRenderers"))
        else {
            return;
        };
        for (i, renderer) in items.iter().enumerate() {
            let images = renderer.get("kustomize").and_then(|k| k.get("images"));
            let Some(Node::Seq { items: entries, .. }) = images else {
                continue;
            };
            for (j, item) in entries.iter().enumerate() {
                let mut base = path.to_vec();
                base.extend([
                    PathSeg::Key("spec".into()),
                    PathSeg::Key("postRenderers".into()),
                    PathSeg::Index(i),
                    PathSeg::Key("kustomize".into()),
                    PathSeg::Key("images".into()),
                    PathSeg::Index(j),
                ]);
                match super::kustomize::entry(self.ctx, self.doc, base, &self.ctx.file, item) {
                    Ok(entry) => self.override_values(item, entry, first),
                    Err(p) => self.problems.push(p),
                }
            }
        }
    }

    /// Mark the values images `entry` (read from `item`) sets: overridden by an entry
    /// with `newTag` or `digest`; renamed by a `newName`-only entry (the registry is asked
    /// for the image deployed, the tag still written in the values). Then keep the entry.
    fn override_values(&mut self, item: &Node, entry: ImageRef, first: usize) {
        let sets = item.get("newTag").is_some() || item.get("digest").is_some();
        let Some(name) = item.get("name").and_then(Node::str_value) else {
            self.refs.push(entry);
            return;
        };
        let named = |r: &ImageRef| *r.written == *name && r.kind != RefKind::Kustomize;
        for r in self.refs.iter_mut().skip(first).filter(|r| named(r)) {
            if sets {
                r.slots.clear();
                r.unmanaged = Some(Unmanaged::OverriddenBy {
                    file: arcstr::ArcStr::clone(&self.ctx.file),
                    line: entry.line,
                });
            } else {
                r.image = entry.image.clone();
            }
        }
        self.refs.push(entry);
    }
}

/// The values a ConfigMap holds as a string: a literal block is edited inside the string;
/// a quoted or folded one is listed, unmanaged. A string that is not YAML cannot be values
/// for Flux either: an error at the key.
fn in_config_map(
    ctx: &FileCtx,
    (doc, path, name): (usize, &[PathSeg], &str),
    s: &Scalar,
    keys: &helm::ImageKeys,
    refs: &mut Vec<ImageRef>,
    problems: &mut Vec<Problem>,
) {
    if let Err(e) = imagebump_yaml::parse_located(&s.value) {
        let message = format!(
            "ConfigMap data {name} is not valid YAML values: {}",
            e.message
        );
        problems.push(ctx.problem(s.span.start, message));
        return;
    }
    let (found, bad) = match BlockText::literal(ctx.text, s.span.clone(), &s.value) {
        Some(block) => helm::in_block(&ctx.file, doc, path, &block, keys),
        None => helm::in_string(&ctx.file, ctx.at(s.span.start), &s.value, keys),
    };
    refs.extend(found);
    problems.extend(bad);
}

#[cfg(test)]
mod tests {
    use super::*;
    use imagebump_yaml::LineIndex;

    fn found(text: &str) -> (Vec<String>, Vec<String>) {
        let ctx = FileCtx {
            file: "apps/podinfo.yaml".into(),
            text,
            lines: LineIndex::new(text),
        };
        let docs = imagebump_yaml::parse_located(text).unwrap();
        let (mut refs, mut problems) = (Vec::new(), Vec::new());
        scan(
            &ctx,
            &docs,
            &helm::ImageKeys::default(),
            &mut refs,
            &mut problems,
        );
        let refs = refs
            .iter()
            .map(|r| {
                let spans: Vec<&str> = r.slots.iter().map(|s| &text[s.span.range()]).collect();
                let why = r
                    .unmanaged
                    .as_ref()
                    .map_or("managed".to_string(), ToString::to_string);
                format!("{}:{} {} {spans:?} {why}", r.line, r.column, r.image)
            })
            .collect();
        (refs, problems.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn helm_release_values_are_read_as_helm_values_in_every_version() {
        for api in ["v2", "v2beta1", "v2beta2"] {
            let text = format!(
                "apiVersion: helm.toolkit.fluxcd.io/{api}\nkind: HelmRelease\nmetadata: {{name: podinfo}}\nspec:\n  chart:\n    spec: {{chart: podinfo, version: 6.5.0}}\n  values:\n    image:\n      registry: ghcr.io\n      repository: stefanprodan/podinfo\n      tag: \"6.5.0\" # pinned\n    redis:\n      image: \"docker.io/library/redis:7.2\"\n    sidecar:\n      image: {{repository: busybox, tag: '1.36'}}\n"
            );
            let (refs, problems) = found(&text);
            assert_eq!(
                refs,
                [
                    r#"11:12 ghcr.io/stefanprodan/podinfo ["\"6.5.0\""] managed"#,
                    r#"13:14 docker.io/library/redis ["\"docker.io/library/redis:7.2\""] managed"#,
                    r#"15:41 docker.io/library/busybox ["'1.36'"] managed"#,
                ],
                "{api}"
            );
            assert!(problems.is_empty(), "{problems:?}");
        }
    }

    #[test]
    fn releases_in_lists_and_wrappers_are_read() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: helm.toolkit.fluxcd.io/v2\n  kind: HelmRelease\n  spec:\n    values:\n      image: {repository: nginx, tag: '1.27'}\n";
        assert_eq!(
            found(text).0,
            [r#"8:39 docker.io/library/nginx ["'1.27'"] managed"#]
        );
        let wrapped = "tests:\n- manifest:\n    apiVersion: helm.toolkit.fluxcd.io/v2beta2\n    kind: HelmRelease\n    spec:\n      values:\n        image: nginx:1.27\n";
        assert_eq!(
            found(wrapped).0,
            [r#"7:16 docker.io/library/nginx ["nginx:1.27"] managed"#]
        );
    }

    #[test]
    fn post_renderer_images_override_the_values_images_they_name() {
        let text = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nspec:\n  values:\n    image: {repository: ghcr.io/acme/a, tag: 1.0.0}\n    b:\n      image: {repository: ghcr.io/acme/b, tag: 1.0.0}\n    c:\n      image: ghcr.io/acme/c:1.0.0\n  postRenderers:\n    - kustomize:\n        images:\n          - name: ghcr.io/acme/a\n            newTag: 1.1.0\n          - name: ghcr.io/acme/b\n            newName: mirror.example.com/acme/b\n          - name: ghcr.io/acme/c\n            digest: sha256:0000000000000000000000000000000000000000000000000000000000000000\n";
        let (refs, problems) = found(text);
        assert_eq!(
            refs,
            [
                "5:46 ghcr.io/acme/a [] overridden by apps/podinfo.yaml:14",
                // Renamed: the mirror is asked, the tag in the values edited.
                r#"7:48 mirror.example.com/acme/b ["1.0.0"] managed"#,
                "9:14 ghcr.io/acme/c [] overridden by apps/podinfo.yaml:17",
                r#"14:21 ghcr.io/acme/a ["1.1.0"] managed"#,
                "16:22 mirror.example.com/acme/b [] no newTag: the tag is the resources' (listed at their line)",
                "17:19 ghcr.io/acme/c [] pinned by digest only (no newTag)",
            ]
        );
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn other_groups_and_kinds_are_not_helm_releases() {
        let text = "apiVersion: example.com/v1\nkind: HelmRelease\nspec:\n  values:\n    image: {repository: nginx, tag: '1.27'}\n";
        assert_eq!(found(text).0, Vec::<String>::new());
        let cm = "apiVersion: v1\nkind: ConfigMap\ndata:\n  config.yaml: |\n    image: {repository: nginx, tag: '1.27'}\n";
        assert_eq!(found(cm).0, Vec::<String>::new());
        let encoded =
            "apiVersion: v1\nkind: Secret\ndata:\n  values.yaml: aW1hZ2U6IG5naW54OjEuMjcK\n";
        assert_eq!(found(encoded).0, Vec::<String>::new());
    }

    #[test]
    fn config_map_values_strings_are_edited_inside_the_string() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: podinfo-values}\ndata:\n  values.yaml: |\n    image:\n      repository: ghcr.io/stefanprodan/podinfo\n      tag: 6.5.0\n  other-values.yaml: \"image: {repository: nginx, tag: '1.27'}\"\n";
        let (refs, problems) = found(text);
        assert_eq!(
            refs,
            [
                r#"8:12 ghcr.io/stefanprodan/podinfo ["6.5.0"] managed"#,
                "9:22 docker.io/library/nginx [] inside helm.values written as a folded or quoted string: write it as a literal block (`values: |`) to have it updated",
            ]
        );
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn secret_string_data_values_are_read() {
        let text = "apiVersion: v1\nkind: Secret\nstringData:\n  values.yaml: |\n    image: {repository: nginx, tag: '1.27'}\n";
        assert_eq!(
            found(text).0,
            [r#"5:37 docker.io/library/nginx ["'1.27'"] managed"#]
        );
    }

    #[test]
    fn a_values_string_that_is_not_yaml_is_an_error_at_its_key() {
        let text =
            "apiVersion: v1\nkind: ConfigMap\ndata:\n  values.yaml: |\n    image: [unclosed\n";
        let (refs, problems) = found(text);
        assert!(refs.is_empty());
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("apps/podinfo.yaml:4:16")
                && problems[0].contains("ConfigMap data values.yaml is not valid YAML values"),
            "{problems:?}"
        );
    }
}
