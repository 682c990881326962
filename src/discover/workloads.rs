//! Kubernetes manifests: every document with `apiVersion` and `kind`. An image is any
//! `image:` key holding a string (the pod spec's `containers`, `initContainers` and
//! `ephemeralContainers` of every workload kind, and the `image:` fields of custom
//! resources), the fields named by field specs (`scan.imageFields`, kustomize
//! `configurations:`), and any scalar on a line marked `# imagebump: image`. `kind: List`
//! items are manifests of their own.
//!
//! Where the new value goes is decided later, with the kustomize graph
//! ([`super::kustomize::graph`]): here every image is an in-place edit of its own line.

use super::markers;
use crate::discover::vocab::{FileCtx, ImageRef, RefKind, SlotFormat, Slots};
use arcstr::ArcStr;
use imagebump_model::config::ImageField;
use imagebump_model::name::{self, parse_reference, ImageName, Reference};
use imagebump_model::Problem;
use imagebump_yaml::{BlockText, Doc, Node, ParseError, PathSeg, Scalar, Style};

/// Kinds whose documents are never read for images: their schemas are full of `image`
/// property names, and they deploy nothing.
const NOT_WORKLOADS: &[&str] = &["CustomResourceDefinition"];

/// API groups of policy engines: their `image:` values are patterns a rule matches or
/// sets in other resources' pods, not images the repository deploys (Kyverno, Gatekeeper,
/// Kubewarden). Each is listed as unmanaged with why, never an error; a value marked
/// `# imagebump: image` is read as any marked value.
const POLICY_GROUPS: &[(&str, &str)] = &[
    ("kyverno.io", "Kyverno"),
    ("gatekeeper.sh", "Gatekeeper"),
    ("kubewarden.io", "Kubewarden"),
];

/// API groups of build and development tools: their images are built or run on a
/// developer's machine (Skaffold's `build.artifacts[].image`, a kind or k3d node image, a
/// kpt function), never deployed by the repository, so they are not read at all (a value
/// marked `# imagebump: image` still is). A group without a dot is matched as the whole
/// `apiVersion` prefix (`skaffold/v4beta6`).
const BUILD_TOOL_GROUPS: &[&str] = &[
    "skaffold",
    "garden.io",
    "kpt.dev",
    "kind.x-k8s.io",
    "k3d.io",
    "ctlptl.dev",
];

/// The group of an `apiVersion` (`kyverno.io` of `kyverno.io/v1`; empty for `v1`).
fn api_group(api: &str) -> &str {
    api.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Whether `group` is `domain` or one of its subgroups (`constraints.gatekeeper.sh`).
fn in_domain(group: &str, domain: &str) -> bool {
    group == domain
        || group
            .strip_suffix(domain)
            .is_some_and(|sub| sub.ends_with('.'))
}

/// Whether a manifest of `api` is a build or development tool's configuration.
pub fn is_build_config(api: &str) -> bool {
    let group = api_group(api);
    BUILD_TOOL_GROUPS.iter().any(|d| in_domain(group, d))
}

/// Why a manifest's `image:` values are not deployed images, for a policy engine's kind.
fn policy_engine(kind: &str, api: &str) -> Option<ArcStr> {
    let group = api_group(api);
    let (_, engine) = POLICY_GROUPS.iter().find(|(d, _)| in_domain(group, d))?;
    Some(
        format!("in a {engine} {kind}: a policy's pattern, not an image the repository deploys")
            .into(),
    )
}

/// Why the images under a kro ResourceGraphDefinition's `spec.schema` are not images: they
/// are the types and defaults of the API it defines (`string | default=nginx`). Its
/// `resources[].template`s are manifests like any other.
const KRO_SCHEMA: &str = "in a kro ResourceGraphDefinition's schema: a field's type, not an image";

/// Argo CD resources, read by [`super::argocd`]. (An ApplicationSet's template is read
/// like any manifest: the images written in it literally.)
const ARGO_KINDS: &[&str] = &["Application", "ImageUpdater"];

/// A field spec, parsed: the kind it applies to and its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldSpec {
    pub kind: String,
    pub group: Option<String>,
    pub path: Vec<Step>,
    /// From a kustomization's `configurations:`: kustomize's `images:` entries rewrite it.
    pub kustomize: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(String),
    /// `key[]`: every item of the list under `key`.
    Each(String),
}

/// An image field path that is not keys separated by `/`; holds the path as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad image field path {0:?}: write keys separated by `/`, `[]` after a list (`spec/steps[]/image`)")]
pub struct BadFieldPath(pub String);

impl FieldSpec {
    pub fn parse(field: &ImageField, kustomize: bool) -> Result<FieldSpec, BadFieldPath> {
        let mut path = Vec::new();
        for part in field.path.split('/') {
            let step = match part.strip_suffix("[]") {
                Some(k) => Step::Each(k.to_string()),
                None => Step::Key(part.to_string()),
            };
            if matches!(&step, Step::Key(k) | Step::Each(k) if k.is_empty() || k.contains(['[', ']']))
            {
                return Err(BadFieldPath(field.path.clone()));
            }
            path.push(step);
        }
        Ok(FieldSpec {
            kind: field.kind.clone(),
            group: field.group.clone(),
            path,
            kustomize,
        })
    }

    fn applies(&self, kind: &str, api_version: &str) -> bool {
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        self.kind == kind && self.group.as_deref().is_none_or(|g| g == group)
    }
}

/// What a cheap look at a file's text says it may hold, before parsing it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Interest {
    /// An Argo CD Application, ApplicationSet or `ImageUpdater`.
    pub argo: bool,
    /// A manifest that may name an image.
    pub workloads: bool,
}

/// The first look at a manifest, with its documents and what each may hold, which
/// [`parse`] takes: each document is split off and looked at once. It looks at each
/// document's top-level `kind:` line without parsing: a file of CustomResourceDefinitions
/// (Argo CD's repository has 13 MB of them) or of resources without any `image` is never
/// parsed. A document whose kind cannot be seen this way (flow style, JSON) is parsed when
/// it mentions `kind` at all.
pub struct Look<'t> {
    pub interest: Interest,
    /// Each document's offset and text, and whether it may hold an image; `None` when the
    /// documents cannot be told apart by their `---` lines.
    docs: Option<Vec<(usize, &'t str, bool)>>,
}

pub fn look<'t>(text: &'t str, specs: &[FieldSpec]) -> Look<'t> {
    let marked = text.contains("imagebump:");
    let mut interest = Interest::default();
    let mut add = |doc: &str| {
        let i = doc_interest(doc, specs, marked);
        interest.argo |= i.argo;
        interest.workloads |= i.workloads;
        i.workloads
    };
    let docs = match documents(text) {
        Some(docs) => Some(
            docs.into_iter()
                .map(|(start, doc)| (start, doc, add(doc)))
                .collect(),
        ),
        None => {
            add(text);
            None
        }
    };
    Look { interest, docs }
}

fn doc_interest(doc: &str, specs: &[FieldSpec], marked: bool) -> Interest {
    let has_image = marked || doc.contains("image") || doc.contains("Image");
    match top_level(doc, "kind:") {
        // An ApplicationSet is also read for the Applications it generates.
        Some(k) if ARGO_KINDS.contains(&k) || k == "List" || k == "ApplicationSet" => Interest {
            argo: doc.contains("argoproj.io"),
            workloads: has_image,
        },
        Some(k) if NOT_WORKLOADS.contains(&k) => Interest::default(),
        Some(k) => Interest {
            argo: false,
            workloads: (has_image && top_level(doc, "apiVersion:").is_some())
                || specs.iter().any(|s| s.kind == k),
        },
        // A JSON 6902 patch file: a list of operations, some on a container's image.
        None if (doc.contains("op:") || doc.contains("\"op\"")) && may_hold_images(doc) => {
            Interest {
                argo: false,
                workloads: true,
            }
        }
        None if doc.contains("kind") => Interest {
            argo: doc.contains("argoproj.io"),
            workloads: has_image,
        },
        None => Interest::default(),
    }
}

/// Parse only the documents that may hold an image: a Deployment next to megabytes of
/// CRDs (an upstream `install.yaml`) costs what the Deployment costs. Each document is
/// parsed on its own and placed at its offset and index in the file; a stream whose
/// documents cannot be told apart by its `---` lines alone (`...` ends, `%` directives) is
/// parsed whole. With the fingerprint of the file's values when the parse read them all
/// (a stream parsed whole, or its only document).
pub fn parse(
    text: &str,
    look: Look<'_>,
) -> Result<(Vec<Doc>, Option<imagebump_yaml::Fingerprint>), ParseError> {
    let Some(docs) = look.docs else {
        return imagebump_yaml::parse_located_fingerprinted(text).map(|(d, f)| (d, Some(f)));
    };
    let only = docs.len() == 1;
    let mut fingerprint = None;
    let mut out = Vec::new();
    for (index, (start, doc, workloads)) in docs.into_iter().enumerate() {
        if !workloads {
            continue;
        }
        let (parsed, f) = imagebump_yaml::parse_located_fingerprinted(doc).map_err(|mut e| {
            let before = text.get(..start).unwrap_or_default();
            e.line = e.line.saturating_add(before.matches('\n').count());
            e
        })?;
        fingerprint = only.then_some(f);
        for d in parsed.into_iter().take(1) {
            out.push(Doc {
                index,
                root: d.root.map(|mut n| {
                    n.shift(start);
                    n
                }),
            });
        }
    }
    Ok((out, fingerprint))
}

/// The documents of a YAML stream with their byte offsets, as libyaml counts them: text
/// before the first `---` line is a document only when it has content. `None` when the
/// stream uses document end markers or directives.
pub fn documents(text: &str) -> Option<Vec<(usize, &str)>> {
    let marker = |l: &[u8]| {
        l.strip_prefix(b"---").is_some_and(|rest| {
            rest.first()
                .is_none_or(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        })
    };
    let mut starts = Vec::new();
    let mut at = 0usize;
    // Lines as bytes: a byte loop finds the line ends of a short line sooner than a
    // character searcher (every manifest comes here).
    for line in text.as_bytes().split_inclusive(|&b| b == b'\n') {
        if line.starts_with(b"...") || line.starts_with(b"%") {
            return None;
        }
        if marker(line) {
            starts.push(at);
        }
        at = at.saturating_add(line.len());
    }
    let content = |l: &str| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#')
    };
    // The starts are those of lines, so never inside a character.
    let head = text.get(..starts.first().copied().unwrap_or(text.len()))?;
    let mut out = Vec::new();
    if head.lines().any(content) {
        out.push((0, head));
    }
    let ends = starts.iter().skip(1).copied().chain([text.len()]);
    for (&start, end) in starts.iter().zip(ends) {
        out.push((start, text.get(start..end)?));
    }
    Some(out)
}

/// The value of a top-level `key:` line (`kind: Deployment`), quotes and comments removed.
fn top_level<'t>(doc: &'t str, key: &str) -> Option<&'t str> {
    doc.lines().find_map(|l| {
        let v = l.strip_prefix(key)?;
        let v = v.split(" #").next().unwrap_or(v).trim();
        Some(v.trim_matches(['"', '\'']))
    })
}

/// An image found in a manifest, with whether kustomize's `images:` transformer rewrites
/// it (a `containers[]`/`initContainers[]` image, or a field of a kustomize field spec).
#[derive(Debug, Clone)]
pub struct ManifestImage {
    pub r: ImageRef,
    pub kustomizable: bool,
    /// The resource and container it is the image of, for the patches that may set it.
    pub container: Option<super::kustomize::patches::Container>,
}

/// Every image of every manifest document in the file.
pub fn scan(
    ctx: &FileCtx,
    docs: &[Doc],
    specs: &[FieldSpec],
    out: &mut Vec<ManifestImage>,
    problems: &mut Vec<Problem>,
) {
    let marked = ctx.text.contains("imagebump:");
    for doc in docs {
        let Some(root) = &doc.root else { continue };
        let mut scanner = Scanner {
            ctx,
            specs,
            found: Vec::new(),
            blocks: Vec::new(),
            why: None,
            skip: Vec::new(),
        };
        scanner.json_patch(root);
        scanner.manifests(root, &mut Vec::new());
        if marked {
            scanner.marked(root, &mut Vec::new());
        }
        for (path, scalar, kustomizable, why) in scanner.found {
            let container = super::kustomize::patches::container_at(root, &path);
            match (image(ctx, doc.index, path, scalar), why) {
                (Ok(r), None) => out.extend(r.map(|r| ManifestImage {
                    r,
                    kustomizable,
                    container,
                })),
                (Err(bad), None) => {
                    let (r, p) = *bad;
                    out.push(ManifestImage {
                        r,
                        kustomizable,
                        container,
                    });
                    problems.push(p);
                }
                (Ok(Some(r)), Some(why)) => out.push(not_deployed(r, why)),
                (Err(bad), Some(why)) => out.push(not_deployed(bad.0, why)),
                (Ok(None), Some(_)) => {}
            }
        }
        for (path, scalar) in scanner.blocks {
            in_block(ctx, doc.index, path, scalar, out);
        }
    }
}

/// `r`, listed as unmanaged for `why`, with nothing to edit.
fn not_deployed(mut r: ImageRef, why: ArcStr) -> ManifestImage {
    r.unmanaged = Some(why.into());
    r.slots = Slots::default();
    ManifestImage {
        r,
        kustomizable: false,
        container: None,
    }
}

/// The images of YAML written inside a literal block string of a manifest (a ConfigMap
/// holding a pod template, a kustomization's inline patch): edited inside the string, byte
/// for byte. A string that is not YAML is not an error: it is just a string.
fn in_block(ctx: &FileCtx, doc: usize, at: Vec<PathSeg>, s: &Scalar, out: &mut Vec<ManifestImage>) {
    let Some(block) = BlockText::literal(ctx.text, s.span.clone(), &s.value) else {
        return;
    };
    let Ok(docs) = imagebump_yaml::parse_located(&block.text) else {
        return;
    };
    let inner_ctx = FileCtx {
        file: ctx.file.clone(),
        text: &block.text,
        lines: block.line_index(),
    };
    for d in &docs {
        let Some(root) = &d.root else { continue };
        let mut scanner = Scanner {
            ctx: &inner_ctx,
            specs: &[],
            found: Vec::new(),
            blocks: Vec::new(),
            why: None,
            skip: Vec::new(),
        };
        scanner.image_keys(root, &mut Vec::new());
        scanner.json_patch(root);
        for (path, scalar, _, _) in scanner.found {
            // A bad reference in a string is reported by nothing that reads the string.
            let Ok(Some(mut r)) = image(&inner_ctx, d.index, path, scalar) else {
                continue;
            };
            for slot in std::mem::take(&mut r.slots) {
                if let Some(slot) = slot.in_block(&block, doc, at.as_slice().into()) {
                    r.slots.push(slot);
                }
            }
            out.push(ManifestImage {
                r,
                kustomizable: false,
                container: None,
            });
        }
    }
}

/// The images in the literal block strings of a file that is not a manifest (a
/// kustomization's inline patches, a values file's embedded config).
pub fn strings(ctx: &FileCtx, docs: &[Doc], out: &mut Vec<ManifestImage>) {
    for doc in docs {
        let Some(root) = &doc.root else { continue };
        let mut scanner = Scanner {
            ctx,
            specs: &[],
            found: Vec::new(),
            blocks: Vec::new(),
            why: None,
            skip: Vec::new(),
        };
        scanner.image_keys(root, &mut Vec::new());
        for (path, scalar) in scanner.blocks {
            in_block(ctx, doc.index, path, scalar, out);
        }
    }
}

struct Scanner<'a> {
    ctx: &'a FileCtx<'a>,
    specs: &'a [FieldSpec],
    /// Image scalars: path, value, kustomizable, and why it is not a deployed image.
    found: Vec<(Vec<PathSeg>, &'a Scalar, bool, Option<ArcStr>)>,
    /// Block strings that may hold YAML with images.
    blocks: Vec<(Vec<PathSeg>, &'a Scalar)>,
    /// Why the images being read are not deployed images (a policy engine's resource).
    why: Option<ArcStr>,
    /// Helm values inside the manifest being read (a `HelmRelease`'s `spec.values`): read as
    /// Helm values by [`super::helm_release`], never as manifest fields.
    skip: Vec<&'a Node>,
}

impl<'a> Scanner<'a> {
    /// The manifests in a document: the document itself, or maps with `apiVersion` and
    /// `kind` below it (test data and tools nest resources in lists and wrappers).
    fn manifests(&mut self, node: &'a Node, path: &mut Vec<PathSeg>) {
        let is_manifest = node.get("kind").and_then(Node::str_value).is_some()
            && node.get("apiVersion").and_then(Node::str_value).is_some();
        if is_manifest {
            return self.manifest(node, path);
        }
        for (seg, child) in node.children() {
            path.push(seg);
            self.manifests(child, path);
            path.pop();
        }
    }

    /// A document (or a `List` item): images when it is a manifest.
    fn manifest(&mut self, node: &'a Node, path: &mut Vec<PathSeg>) {
        let (Some(kind), Some(api)) = (
            node.get("kind").and_then(Node::str_value),
            node.get("apiVersion").and_then(Node::str_value),
        ) else {
            return;
        };
        if NOT_WORKLOADS.contains(&kind)
            || (ARGO_KINDS.contains(&kind) && api.starts_with("argoproj.io/"))
            || api.starts_with("argocd-image-updater.argoproj.io/")
            || imagebump_flux::is_flux_kind(kind, api)
            || is_build_config(api)
        {
            return;
        }
        if let Some(why) = policy_engine(kind, api) {
            // Its block strings are rules (Rego, JSON patches), not manifests.
            let blocks = self.blocks.len();
            self.why = Some(why);
            self.image_keys(node, path);
            self.why = None;
            self.blocks.truncate(blocks);
            return;
        }
        if api_group(api) == "kro.run" && kind == "ResourceGraphDefinition" {
            self.kro_schema(node, path);
        }
        if kind == "List" {
            if let Some(Node::Seq { items, .. }) = node.get("items") {
                for (i, item) in items.iter().enumerate() {
                    path.extend([PathSeg::Key("items".into()), PathSeg::Index(i)]);
                    self.manifest(item, path);
                    path.truncate(path.len().saturating_sub(2));
                }
            }
            return;
        }
        self.skip = super::helm_release::values_nodes(kind, api, node)
            .into_iter()
            .map(|(_, n)| n)
            .collect();
        self.image_keys(node, path);
        self.skip.clear();
        for spec in self.specs.iter().filter(|s| s.applies(kind, api)) {
            self.field(node, &spec.path, path, spec.kustomize);
        }
    }

    /// Every `image: <string>` below `node`. A key's path segment is made only where it is
    /// used: most values are scalars of other keys, with nothing below them.
    fn image_keys(&mut self, node: &'a Node, path: &mut Vec<PathSeg>) {
        match node {
            Node::Map { entries, .. } => {
                for (key, value) in entries {
                    if self.skip.iter().any(|n| std::ptr::eq(*n, value)) {
                        continue;
                    }
                    let seg = || PathSeg::Key(key.name.clone());
                    match value {
                        Node::Scalar(s) if key.name == "image" => {
                            path.push(seg());
                            let k = in_containers(path);
                            self.add(path.clone(), s, k);
                            path.pop();
                        }
                        Node::Scalar(s) if s.style == Style::Block && may_hold_images(&s.value) => {
                            path.push(seg());
                            self.blocks.push((path.clone(), s));
                            path.pop();
                        }
                        Node::Scalar(_) | Node::Other { .. } => {}
                        Node::Map { .. } | Node::Seq { .. } => {
                            path.push(seg());
                            self.image_keys(value, path);
                            path.pop();
                        }
                    }
                }
            }
            Node::Seq { items, .. } => {
                for (i, value) in items.iter().enumerate() {
                    match value {
                        Node::Map { .. } | Node::Seq { .. } => {
                            path.push(PathSeg::Index(i));
                            self.image_keys(value, path);
                            path.pop();
                        }
                        // An inline `patchesStrategicMerge:` item.
                        Node::Scalar(s) if s.style == Style::Block && may_hold_images(&s.value) => {
                            path.push(PathSeg::Index(i));
                            self.blocks.push((path.clone(), s));
                            path.pop();
                        }
                        Node::Scalar(_) | Node::Other { .. } => {}
                    }
                }
            }
            Node::Scalar(_) | Node::Other { .. } => {}
        }
    }

    /// The images a JSON 6902 patch (a list of operations) writes into containers: what
    /// kustomize's `images:` entries then rewrite.
    fn json_patch(&mut self, node: &'a Node) {
        let Node::Seq { items, .. } = node else {
            return;
        };
        for op in super::kustomize::patches::json6902_images(items) {
            let mut path = vec![PathSeg::Index(op.index)];
            path.extend(op.path);
            self.add(path, op.image, true);
        }
    }

    /// The scalars a field spec's `steps` reach from `node`.
    fn field(&mut self, node: &'a Node, steps: &[Step], path: &mut Vec<PathSeg>, k: bool) {
        let Some((step, rest)) = steps.split_first() else {
            if let Node::Scalar(s) = node {
                self.add(path.clone(), s, k);
            }
            return;
        };
        let key = match step {
            Step::Key(key) | Step::Each(key) => key,
        };
        let Some(child) = node.get(key) else { return };
        path.push(PathSeg::Key(key.clone()));
        match (step, child) {
            (Step::Each(_), Node::Seq { items, .. }) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(PathSeg::Index(i));
                    self.field(item, rest, path, k);
                    path.pop();
                }
            }
            (Step::Key(_), _) => self.field(child, rest, path, k),
            _ => {}
        }
        path.pop();
    }

    /// Any scalar whose line carries an `imagebump:` marker, but a chart's version: its
    /// marker is the chart reference's (`targetRevision: 4.11.2 # imagebump: pin`).
    fn marked(&mut self, node: &'a Node, path: &mut Vec<PathSeg>) {
        if let Node::Scalar(s) = node {
            if markers::find(self.ctx.text, s.span.end).is_some() && !chart_version(path) {
                self.add_marked(path.clone(), s, in_containers(path));
            }
        }
        for (seg, child) in node.children() {
            path.push(seg);
            self.marked(child, path);
            path.pop();
        }
    }

    fn add(&mut self, path: Vec<PathSeg>, s: &'a Scalar, kustomizable: bool) {
        match self.found.iter_mut().find(|(_, f, _, _)| f.span == s.span) {
            Some(seen) => seen.2 |= kustomizable,
            None => self.found.push((path, s, kustomizable, self.why.clone())),
        }
    }

    /// A marked value: an image whatever the resource it is in says.
    fn add_marked(&mut self, path: Vec<PathSeg>, s: &'a Scalar, kustomizable: bool) {
        self.add(path, s, kustomizable);
        if let Some(seen) = self.found.iter_mut().find(|(_, f, _, _)| f.span == s.span) {
            seen.3 = None;
        }
    }

    /// The `image:` values under a kro ResourceGraphDefinition's `spec.schema`, listed as
    /// its types ([`KRO_SCHEMA`]) before the rest of it is read as any manifest.
    fn kro_schema(&mut self, node: &'a Node, path: &mut Vec<PathSeg>) {
        let Some(schema) = node.get("spec").and_then(|s| s.get("schema")) else {
            return;
        };
        let depth = path.len();
        path.extend([PathSeg::Key("spec".into()), PathSeg::Key("schema".into())]);
        let blocks = self.blocks.len();
        self.why = Some(arcstr::literal!(KRO_SCHEMA));
        self.image_keys(schema, path);
        self.why = None;
        self.blocks.truncate(blocks);
        path.truncate(depth);
    }
}

/// A string that may hold an image: an `image:` key (also written as JSON), or a JSON
/// pointer into a containers list (a JSON 6902 patch's operations).
fn may_hold_images(text: &str) -> bool {
    ["image:", "\"image\"", "/containers/", "/initContainers/"]
        .iter()
        .any(|needle| text.contains(needle))
}

/// `…containers[i].image` or `…initContainers[i].image`: the fields kustomize's `images:`
/// transformer rewrites, at any depth.
fn in_containers(path: &[PathSeg]) -> bool {
    matches!(
        path,
        [.., PathSeg::Key(list), PathSeg::Index(_), PathSeg::Key(image)]
            if image == "image" && (list == "containers" || list == "initContainers")
    )
}

/// The reference an image scalar holds; `None` for an empty value. A value that is not a
/// reference is listed (unmanaged, with why) and reported.
fn image(
    ctx: &FileCtx,
    doc: usize,
    path: Vec<PathSeg>,
    s: &Scalar,
) -> Result<Option<ImageRef>, Box<(ImageRef, Problem)>> {
    let one_line = ctx.one_line(s);
    let value = one_line.unwrap_or(&s.value).trim();
    if value.is_empty() || value == "null" || value == "~" {
        return Ok(None);
    }
    let unit = ctx
        .file
        .rsplit_once('/')
        .map_or(".", |(d, _)| d)
        .to_string();
    let unparsed = |why: String| {
        let r = Reference {
            name: ImageName::unparsed(value),
            written: value.to_string(),
            tag: None,
            digest: None,
        };
        let mut out = ctx.new_ref(RefKind::Workload, &unit, s.span.start, r);
        out.unmanaged = Some(why.into());
        out
    };
    if let Some(why) = name::placeholder(value) {
        return Ok(Some(unparsed(format!("not an image: {why}"))));
    }
    if let Err(why) = one_line {
        return Ok(Some(unparsed(why.to_string())));
    }
    let r = match parse_reference(value) {
        Ok(r) => r,
        Err(e) => {
            let listed = unparsed(format!("not an image reference ({})", e.reason));
            return Err(Box::new((listed, ctx.problem(s.span.start, e.to_string()))));
        }
    };
    let mut out = ctx.new_ref(RefKind::Workload, &unit, s.span.start, r);
    if out.tag.is_none() {
        out.unmanaged = Some(if out.digest.is_some() {
            arcstr::literal!("pinned by digest only").into()
        } else {
            arcstr::literal!("no tag (the runtime pulls latest)").into()
        });
    }
    out.slots.push(ctx.slot(
        doc,
        path,
        s,
        SlotFormat::Reference {
            name: arcstr::ArcStr::clone(&out.written),
        },
    ));
    Ok(Some(out))
}

/// Where a chart's version is written: an Argo CD source's `targetRevision`, a Flux
/// `HelmRelease`'s `spec.chart.spec.version`, a `Chart.yaml` dependency's `version`.
fn chart_version(path: &[PathSeg]) -> bool {
    let key = |i: usize| match path.get(i) {
        Some(PathSeg::Key(k)) => Some(k.as_str()),
        _ => None,
    };
    let n = path.len();
    match n.checked_sub(1).and_then(key) {
        Some("targetRevision") => true,
        Some("version") => {
            let tail: Vec<Option<&str>> = (n.saturating_sub(4)..n).map(key).collect();
            tail == [Some("spec"), Some("chart"), Some("spec"), Some("version")]
                || (n == 3 && key(0) == Some("dependencies"))
        }
        _ => false,
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use imagebump_yaml::{parse_located, LineIndex};

    fn found(text: &str, specs: &[FieldSpec]) -> (Vec<String>, Vec<String>) {
        let ctx = FileCtx {
            file: "m.yaml".into(),
            text,
            lines: LineIndex::new(text),
        };
        let docs = parse_located(text).unwrap();
        let (mut out, mut problems) = (Vec::new(), Vec::new());
        scan(&ctx, &docs, specs, &mut out, &mut problems);
        let refs = out
            .iter()
            .map(|f| {
                let path = f.r.slots.first().map_or_else(
                    || "-".to_string(),
                    |s| imagebump_yaml::path_to_string(&s.path),
                );
                let k = if f.kustomizable { " (kustomize)" } else { "" };
                match &f.r.unmanaged {
                    None => format!(
                        "{}:{} {} {path}{k}",
                        f.r.line,
                        f.r.image,
                        f.r.tag.as_deref().unwrap_or("-")
                    ),
                    Some(why) => format!("{}:{} {path}{k}: {why}", f.r.line, f.r.written),
                }
            })
            .collect();
        (refs, problems.iter().map(|p| p.to_string()).collect())
    }

    const WORKLOADS: &str = r#"apiVersion: batch/v1
kind: CronJob
metadata: {name: backup}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          initContainers:
            - name: wait
              image: busybox:1.36
          containers:
            - name: backup
              image: "ghcr.io/acme/backup:v2.1.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
---
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Pod
    metadata: {name: debug}
    spec:
      containers: [{name: a, image: nginx}]
      ephemeralContainers:
        - {name: dbg, image: "busybox:1.36"}
---
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
spec:
  image: quay.io/prometheus/prometheus:v2.54.1
  thanos:
    baseImage: quay.io/thanos/thanos
    version: v0.36.1
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  image: not/read:1.0
---
apiVersion: v1
kind: ConfigMap
data:
  image: "{{ .Values.image }}"
  other: registry.example.com/tools/kubectl:1.31.0 # imagebump: image
"#;

    #[test]
    fn finds_every_image_of_every_manifest() {
        let (refs, problems) = found(WORKLOADS, &[]);
        insta::assert_snapshot!(refs.join("\n"), @r###"
        11:docker.io/library/busybox 1.36 spec.jobTemplate.spec.template.spec.initContainers[0].image (kustomize)
        14:ghcr.io/acme/backup v2.1.0 spec.jobTemplate.spec.template.spec.containers[0].image (kustomize)
        23:nginx items[0].spec.containers[0].image (kustomize): no tag (the runtime pulls latest)
        25:docker.io/library/busybox 1.36 items[0].spec.ephemeralContainers[0].image
        30:quay.io/prometheus/prometheus v2.54.1 spec.image
        43:{{ .Values.image }} -: not an image: a template, filled in at deploy time
        44:registry.example.com/tools/kubectl 1.31.0 data.other
        "###);
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn a_marker_on_a_charts_version_is_the_charts_not_an_image() {
        let text = r#"apiVersion: argoproj.io/v1alpha1
kind: Application
spec:
  source:
    chart: ingress-nginx
    targetRevision: 4.11.2 # imagebump: pin
  sources:
    - chart: cert-manager
      targetRevision: v1.15.0 # imagebump: ignore
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
spec:
  chart:
    spec:
      version: 1.2.3 # imagebump: pin
  values:
    version: ghcr.io/acme/tool:1.0.0 # imagebump: image
"#;
        let (refs, problems) = found(text, &[]);
        assert_eq!(refs, ["18:ghcr.io/acme/tool 1.0.0 spec.values.version"]);
        assert!(problems.is_empty(), "{problems:?}");
        let chart = "dependencies:\n  - name: redis\n    version: 19.0.1 # imagebump: pin\n";
        assert_eq!(found(chart, &[]).0, Vec::<String>::new());
    }

    #[test]
    fn field_specs_name_other_fields() {
        let spec = FieldSpec::parse(
            &ImageField {
                kind: "Prometheus".into(),
                group: Some("monitoring.coreos.com".into()),
                path: "spec/thanos/baseImage".into(),
            },
            true,
        )
        .unwrap();
        let (refs, _) = found(WORKLOADS, std::slice::from_ref(&spec));
        let line = "32:quay.io/thanos/thanos spec.thanos.baseImage (kustomize): no tag (the runtime pulls latest)";
        assert!(refs.iter().any(|r| r == line), "{refs:?}");
        let other_group = FieldSpec {
            group: Some("example.com".into()),
            ..spec
        };
        let (refs, _) = found(WORKLOADS, &[other_group]);
        assert!(!refs.iter().any(|r| r.contains("baseImage")), "{refs:?}");
        let bad = FieldSpec::parse(
            &ImageField {
                kind: "X".into(),
                group: None,
                path: "spec//image".into(),
            },
            false,
        );
        assert_eq!(
            bad.unwrap_err().to_string(),
            "bad image field path \"spec//image\": write keys separated by `/`, `[]` after a list (`spec/steps[]/image`)"
        );
    }

    #[test]
    fn bad_references_are_reported_at_their_line() {
        let text = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - image: nginx:1.2:3\n";
        let (refs, problems) = found(text, &[]);
        assert_eq!(
            refs,
            ["5:nginx:1.2:3 - (kustomize): not an image reference (repository must be lowercase path components)"]
        );
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("m.yaml:5:14"), "{problems:?}");
    }

    #[test]
    fn images_in_yaml_strings_and_nested_manifests() {
        let text = r#"apiVersion: v1
kind: ConfigMap
data:
  template: |
    apiVersion: batch/v1
    kind: Job
    spec:
      template:
        spec:
          containers:
            - name: train
              image: ghcr.io/kubeflow/trainer:v0.19.0
  notes: |
    image: this is prose, not YAML: [
---
- k8sOperation: create
  unstructuredObj:
    apiVersion: argoproj.io/v1alpha1
    kind: Workflow
    spec:
      templates:
        - container: {image: "docker/whalesay:latest"}
"#;
        let (refs, problems) = found(text, &[]);
        assert_eq!(
            refs,
            [
                "12:ghcr.io/kubeflow/trainer v0.19.0 data.template",
                "22:docker.io/docker/whalesay latest [0].unstructuredObj.spec.templates[0].container.image",
            ]
        );
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn an_application_set_template_is_read_for_literal_images() {
        let text = r#"apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
spec:
  template:
    spec:
      source:
        helm:
          values: |
            initContainers:
              - name: velero-plugin-for-aws
                image: velero/velero-plugin-for-aws:v1.7.1
            image:
              repository: "{{ .values.repo }}"
"#;
        let (refs, problems) = found(text, &[]);
        assert_eq!(
            refs,
            ["11:docker.io/velero/velero-plugin-for-aws v1.7.1 spec.template.spec.source.helm.values"]
        );
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn a_first_look_decides_what_is_parsed() {
        let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: {image: x}\n";
        assert_eq!(look(crd, &[]).interest, Interest::default());
        let both = format!(
            "{crd}---\n{}",
            "apiVersion: v1\nkind: Pod\nspec: {containers: [{image: x}]}\n"
        );
        assert!(look(&both, &[]).interest.workloads);
        let no_image = "apiVersion: v1\nkind: Service\nspec: {}\n";
        assert!(!look(no_image, &[]).interest.workloads);
        let app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nspec: {}\n";
        assert!(look(app, &[]).interest.argo);
        let crd_mentioning_argo = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: applications.argoproj.io}\n";
        assert!(!look(crd_mentioning_argo, &[]).interest.argo);
        let flow = "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"spec\": {\"containers\": [{\"image\": \"x:1\"}]}}\n";
        assert!(look(flow, &[]).interest.workloads);
        assert_eq!(
            documents("a: 1\n---\nb: 2\n--- \nc\n").map(|d| d.len()),
            Some(3)
        );
    }

    #[test]
    fn documents_are_parsed_alone_at_their_place() {
        let crd = "kind: CustomResourceDefinition\nspec: {image: x}\n";
        let pod = "apiVersion: v1\nkind: Pod\nspec:\n  containers: [{image: 'nginx:1.2'}]\n";
        let text = format!("# head\n---\n{crd}---\n{pod}--- # third\n{pod}");
        let (docs, fingerprint) = parse(&text, look(&text, &[])).unwrap();
        // Not every document was read: no fingerprint of the file's values.
        assert_eq!(fingerprint, None);
        let full = imagebump_yaml::parse_located(&text).unwrap();
        assert_eq!(docs.iter().map(|d| d.index).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(docs[0].root, full[1].root);
        assert_eq!(docs[1].root, full[2].root);
        let broken = format!("{pod}---\n{pod}  bad: [\n");
        let err = parse(&broken, look(&broken, &[])).unwrap_err();
        let whole = imagebump_yaml::parse_located(&broken).unwrap_err();
        assert_eq!((err.line, err.column), (whole.line, whole.column), "{err}");
        // Document end markers: parsed whole.
        let ended = format!("{pod}...\n---\n{pod}");
        let (docs, fingerprint) = parse(&ended, look(&ended, &[])).unwrap();
        assert_eq!(docs.len(), 2);
        let whole = imagebump_yaml::parse_located_fingerprinted(&ended)
            .unwrap()
            .1;
        assert_eq!(fingerprint, Some(whole));
        // One document: read whole, so its fingerprint is the file's.
        let (_, fingerprint) = parse(pod, look(pod, &[])).unwrap();
        let whole = imagebump_yaml::parse_located_fingerprinted(pod).unwrap().1;
        assert_eq!(fingerprint, Some(whole));
    }
}
