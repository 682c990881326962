//! Helm values: images at every key whose name ends in `image`, in any case (`image`,
//! `sysctlImage`, `bootstrap_image`, `IMAGE`), at any depth, and at the key paths of
//! `helm.imageKeys`. An image is a mapping (`registry`?, `repository`, `tag`?, `digest`?;
//! or `name` + `tag`) or a `repo:tag` string.
//!
//! Upstream charts are full of values that stand for an image without being one: templates
//! (`{{ .Values.x }}`), placeholders (`<OWNER>/app`), an empty `repository`. They are listed
//! as unmanaged with the reason. Keys that merely end in `image` without holding one
//! (`useImage: true`, `kubectlImage: {}`, `image: null`) are not references at all, and
//! `registry: null` or `~` is no registry. Only a value that is clearly meant as an image
//! and cannot be one (`repository: ghcr.io/Acme/Web` with a tag) is an error.

use crate::discover::vocab::{FileCtx, ImageRef, RefKind, SlotFormat};
use imagebump_argocd::helm_path;
use imagebump_model::config::{HelmConfig, HelmImageKey, HelmKeyPath};
use imagebump_model::name::{self, parse_name, parse_reference, ImageName, Reference};
use imagebump_model::Problem;
use imagebump_yaml::{BlockText, Doc, LineIndex, Node, PathSeg, Scalar, Style};

/// `helm.imageKeys`, as YAML paths from the root of the values.
#[derive(Debug, Clone, Default)]
pub struct ImageKeys(Vec<KeyPath>);

#[derive(Debug, Clone)]
enum KeyPath {
    /// A key holding a whole image (a mapping or a string).
    Image(Vec<PathSeg>),
    /// An image spread over keys of any name.
    Parts {
        registry: Option<KeyField>,
        repository: KeyField,
        tag: KeyField,
        digest: Option<KeyField>,
    },
}

/// One configured key: as written (for messages) and as a path.
#[derive(Debug, Clone)]
struct KeyField {
    text: String,
    path: Vec<PathSeg>,
}

impl ImageKeys {
    /// Parse the key paths; an error names the entry and the key.
    pub fn compile(config: &HelmConfig) -> Result<ImageKeys, Problem> {
        let mut out = Vec::new();
        for (i, k) in config.image_keys.iter().enumerate() {
            let field = |name: &str, p: &HelmKeyPath| {
                let path = helm_path::parse(p.as_str())
                    .map_err(|e| Problem::config(format!("helm.imageKeys[{i}].{name}: {e}")))?;
                Ok::<_, Problem>(KeyField {
                    text: p.as_str().to_string(),
                    path,
                })
            };
            let opt = |name: &str, p: &Option<HelmKeyPath>| p.as_ref().map(|p| field(name, p));
            out.push(match k {
                HelmImageKey::Image { image } => KeyPath::Image(field("image", image)?.path),
                HelmImageKey::Parts {
                    repository,
                    tag,
                    registry,
                    digest,
                } => KeyPath::Parts {
                    registry: opt("registry", registry).transpose()?,
                    repository: field("repository", repository)?,
                    tag: field("tag", tag)?,
                    digest: opt("digest", digest).transpose()?,
                },
            });
        }
        Ok(ImageKeys(out))
    }
}

/// Every image of a values file.
pub fn scan(
    ctx: &FileCtx,
    docs: &[Doc],
    keys: &ImageKeys,
    refs: &mut Vec<ImageRef>,
    problems: &mut Vec<Problem>,
) {
    for doc in docs {
        if let Some(root) = &doc.root {
            values(ctx, doc.index, root, &[], keys, refs, problems);
        }
    }
}

/// Every image of one values document: a file's, an Argo CD `helm.valuesObject` (at
/// `base`), or the text of a `helm.values` string. References are in file order.
pub(super) fn values(
    ctx: &FileCtx,
    doc: usize,
    root: &Node,
    base: &[PathSeg],
    keys: &ImageKeys,
    refs: &mut Vec<ImageRef>,
    problems: &mut Vec<Problem>,
) {
    let mut v = Values {
        ctx,
        doc,
        global_registry: root.at(&[key("global"), key("imageRegistry")]),
        default_registry: root.at(&[key("global"), key("image"), key("registry")]),
        claimed: Vec::new(),
        refs: Vec::new(),
        problems: Vec::new(),
    };
    for k in &keys.0 {
        v.configured(root, base, k);
    }
    v.walk(root, &mut base.to_vec());
    v.refs.sort_by_key(|r| (r.line, r.column));
    refs.extend(v.refs);
    problems.extend(v.problems);
}

/// The images inside `helm.values`, a literal block scalar of the file at `doc`/`at`
/// holding YAML: their slots are spans of the file inside the block, and the edit is
/// verified inside the string too (see `imagebump_yaml::Inner`).
pub(super) fn in_block(
    file: &str,
    doc: usize,
    at: &[PathSeg],
    block: &BlockText,
    keys: &ImageKeys,
) -> (Vec<ImageRef>, Vec<Problem>) {
    let ctx = FileCtx {
        file: file.into(),
        text: &block.text,
        lines: block.line_index(),
    };
    let (mut refs, mut problems) = (Vec::new(), Vec::new());
    let docs = match imagebump_yaml::parse_located(&block.text) {
        Ok(d) => d,
        Err(e) => {
            let (line, column) = block.position(e.line, e.column);
            let message = format!("helm.values is not valid YAML: {}", e.message);
            return (refs, vec![Problem::at_file(file, line, column, message)]);
        }
    };
    for d in &docs {
        if let Some(root) = &d.root {
            values(&ctx, d.index, root, &[], keys, &mut refs, &mut problems);
        }
    }
    for r in &mut refs {
        for slot in std::mem::take(&mut r.slots) {
            let Some(slot) = slot.in_block(block, doc, at.into()) else {
                r.unmanaged =
                    Some(arcstr::literal!("its value spans lines inside helm.values").into());
                r.slots.clear();
                break;
            };
            r.slots.push(slot);
        }
    }
    (refs, problems)
}

/// The images in `helm.values` written as a folded or quoted string: listed at the key
/// (`at`, its line and column), unmanaged, since the string's bytes are not the file's.
pub(super) fn in_string(
    file: &str,
    at: (usize, usize),
    text: &str,
    keys: &ImageKeys,
) -> (Vec<ImageRef>, Vec<Problem>) {
    let ctx = FileCtx {
        file: file.into(),
        text,
        lines: LineIndex::new(text),
    };
    let (mut refs, mut problems) = (Vec::new(), Vec::new());
    match imagebump_yaml::parse_located(text) {
        Ok(docs) => {
            for d in &docs {
                if let Some(root) = &d.root {
                    values(&ctx, d.index, root, &[], keys, &mut refs, &mut problems);
                }
            }
        }
        Err(e) => {
            problems.push(ctx.problem(0, format!("helm.values is not valid YAML: {}", e.message)))
        }
    }
    for r in &mut refs {
        r.set_at(at);
        r.slots.clear();
        r.unmanaged.get_or_insert_with(|| {
            "inside helm.values written as a folded or quoted string: write it as a literal block (`values: |`) to have it updated".into()
        });
    }
    let problems = problems
        .into_iter()
        .map(|p| Problem::at_file(file, at.0, at.1, p.message))
        .collect();
    (refs, problems)
}

fn key(k: &str) -> PathSeg {
    PathSeg::Key(k.into())
}

fn joined(base: &[PathSeg], rel: &[PathSeg]) -> Vec<PathSeg> {
    base.iter().chain(rel).cloned().collect()
}

/// `image`, `sysctlImage`, `bootstrap_image`, `IMAGE`.
fn is_image_key(name: &str) -> bool {
    name.len()
        .checked_sub(5)
        .and_then(|start| name.get(start..))
        .is_some_and(|end| end.eq_ignore_ascii_case("image"))
}

/// A plain `null`, `~` or nothing.
fn is_null(s: &Scalar) -> bool {
    s.style == Style::Plain && matches!(s.value.as_str(), "" | "~" | "null" | "Null" | "NULL")
}

/// A plain boolean or number (`useImage: true`).
fn is_bool_or_number(s: &Scalar) -> bool {
    s.style == Style::Plain
        && (matches!(
            s.value.as_str(),
            "true" | "false" | "True" | "False" | "TRUE" | "FALSE"
        ) || s.value.parse::<f64>().is_ok())
}

/// One image key's value, by name, in the values and where it is.
#[derive(Clone, Copy)]
struct Field<'n> {
    /// How the user knows it (`repository`, `global.imageRegistry`, a configured path).
    label: &'n str,
    node: &'n Node,
}

/// The keys of one image.
struct Fields<'n> {
    /// The path of the mapping holding them, or of each (configured parts).
    paths: FieldPaths,
    registry: Option<Field<'n>>,
    repository: Field<'n>,
    tag: Option<Field<'n>>,
    digest: Option<Field<'n>>,
    /// Grafana's `sha`: a digest without its algorithm, written by no strategy here.
    sha: Option<Field<'n>>,
    /// Whether `global.imageRegistry` comes before the repository (a chart's image map,
    /// as the common chart helpers of Bitnami, Grafana and others render it).
    global: bool,
}

enum FieldPaths {
    /// The keys of the mapping at this path.
    Map(Vec<PathSeg>),
    /// Configured paths.
    Each {
        repository: Vec<PathSeg>,
        tag: Vec<PathSeg>,
        digest: Option<Vec<PathSeg>>,
    },
}

impl FieldPaths {
    fn repository(&self, label: &str) -> Vec<PathSeg> {
        match self {
            FieldPaths::Map(p) => joined(p, &[key(label)]),
            FieldPaths::Each { repository, .. } => repository.clone(),
        }
    }

    fn tag(&self) -> Vec<PathSeg> {
        match self {
            FieldPaths::Map(p) => joined(p, &[key("tag")]),
            FieldPaths::Each { tag, .. } => tag.clone(),
        }
    }

    fn digest(&self) -> Option<Vec<PathSeg>> {
        match self {
            FieldPaths::Map(p) => Some(joined(p, &[key("digest")])),
            FieldPaths::Each { digest, .. } => digest.clone(),
        }
    }
}

impl<'n> Fields<'n> {
    /// The keys of an image mapping; `None` when `map` is no image mapping (it has no
    /// `repository` string, nor a `name` string next to a `tag`).
    fn of_map(map: &'n Node, path: &[PathSeg]) -> Option<Fields<'n>> {
        let field = |label: &'n str| map.get(label).map(|node| Field { label, node });
        let repository = match (map.get("repository"), map.get("name"), map.get("tag")) {
            (Some(n @ Node::Scalar(_)), _, _) => Field {
                label: "repository",
                node: n,
            },
            (None, Some(n @ Node::Scalar(_)), Some(_)) => Field {
                label: "name",
                node: n,
            },
            // ingress-nginx: `image: {registry, image: ingress-nginx/controller, tag}`.
            (None, None, Some(_)) => match map.get("image") {
                Some(n @ Node::Scalar(_)) => Field {
                    label: "image",
                    node: n,
                },
                _ => return None,
            },
            _ => return None,
        };
        // The common chart helpers that put `global.imageRegistry` first read `repository`.
        let global = matches!(repository.label, "repository" | "image");
        Some(Fields {
            paths: FieldPaths::Map(path.to_vec()),
            registry: field("registry"),
            repository,
            tag: field("tag"),
            digest: field("digest"),
            sha: field("sha"),
            global,
        })
    }

    /// Where the reference is reported: its tag, else its repository.
    fn at(&self) -> usize {
        self.tag.map_or(self.repository.node, |t| t.node).offset()
    }
}

/// Why an image's keys are not a reference imagebump edits (the reason it is unmanaged);
/// `label` is the key as the user knows it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Unmanaged {
    #[error("`{label}` is not a string")]
    NotAString { label: String },
    /// `what`: the kind of value it is ([`crate::discover::vocab::BLOCK_LINES`], a
    /// placeholder's description).
    #[error("`{label}` is {what}")]
    Unusable { label: String, what: &'static str },
    #[error("pinned by `sha` (a digest imagebump does not write)")]
    PinnedBySha,
}

/// The scalar of a field: `Ok(None)` when absent, null or empty, `Err` (the reason it is
/// unmanaged) when it is no string or stands for one.
fn text<'n>(field: Option<Field<'n>>, file: &str) -> Result<Option<&'n Scalar>, Unmanaged> {
    let Some(f) = field else {
        return Ok(None);
    };
    let label = || f.label.to_string();
    let Node::Scalar(s) = f.node else {
        return Err(Unmanaged::NotAString { label: label() });
    };
    if is_null(s) || s.value.is_empty() {
        return Ok(None);
    }
    if imagebump_yaml::one_line_value(s, file).is_none() {
        let what = crate::discover::vocab::BLOCK_LINES;
        return Err(Unmanaged::Unusable {
            label: label(),
            what,
        });
    }
    match name::placeholder(&s.value) {
        Some(what) => Err(Unmanaged::Unusable {
            label: label(),
            what,
        }),
        None => Ok(Some(s)),
    }
}

/// The current values of an image's keys that hold one.
struct Parts<'n> {
    registry: Option<&'n Scalar>,
    repository: &'n Scalar,
    tag: Option<&'n Scalar>,
    digest: Option<&'n Scalar>,
}

/// One values document being read.
struct Values<'a> {
    ctx: &'a FileCtx<'a>,
    doc: usize,
    /// `global.imageRegistry`, which chart helpers put before every image mapping's
    /// repository when it is set.
    global_registry: Option<&'a Node>,
    /// `global.image.registry` (ingress-nginx): for image mappings without a registry.
    default_registry: Option<&'a Node>,
    /// Paths read through `helm.imageKeys`, not read again by name.
    claimed: Vec<Vec<PathSeg>>,
    refs: Vec<ImageRef>,
    problems: Vec<Problem>,
}

impl<'a> Values<'a> {
    fn walk(&mut self, node: &'a Node, path: &mut Vec<PathSeg>) {
        for (seg, value) in node.children() {
            let image_key = match &seg {
                PathSeg::Key(k) => Some(is_image_key(k)),
                PathSeg::Index(_) => None,
            };
            path.push(seg);
            // An image key holding no image is walked into like any other key.
            let done = image_key.is_some_and(|image| {
                self.claimed.contains(path) || (image && self.image(path, value))
            });
            if !done {
                self.walk(value, path);
            }
            path.pop();
        }
    }

    /// Read the value of an image key; `false` when it holds no image.
    fn image(&mut self, path: &[PathSeg], value: &'a Node) -> bool {
        let found = match value {
            Node::Scalar(s) => self.string(path, s),
            Node::Map { .. } => match Fields::of_map(value, path) {
                Some(f) => Some(self.image_of(&f)),
                None => self.tag_only(value).map(Ok),
            },
            _ => None,
        };
        match found {
            None => return false,
            Some(Ok(r)) => self.refs.push(r),
            Some(Err(p)) => self.problems.push(p),
        }
        true
    }

    /// An image at a key path of `helm.imageKeys`. An entry applies where the values have
    /// its shape (the same paths may mean something else in another chart's values): a
    /// string or an image mapping at `image`; a string at `repository` and a `tag` key.
    fn configured(&mut self, root: &'a Node, base: &[PathSeg], k: &'a KeyPath) {
        let found = match k {
            KeyPath::Image(rel) => self.configured_image(root, base, rel),
            KeyPath::Parts {
                registry,
                repository,
                tag,
                digest,
            } => self.configured_parts(
                root,
                base,
                [registry.as_ref(), digest.as_ref()],
                repository,
                tag,
            ),
        };
        match found {
            None => {}
            Some(Ok(r)) => self.refs.push(r),
            Some(Err(p)) => self.problems.push(p),
        }
    }

    fn configured_image(
        &mut self,
        root: &'a Node,
        base: &[PathSeg],
        rel: &[PathSeg],
    ) -> Option<Result<ImageRef, Problem>> {
        let node = root.at(rel)?;
        let path = joined(base, rel);
        let found = match node {
            Node::Scalar(s) => self.string(&path, s),
            _ => Fields::of_map(node, &path).map(|f| self.image_of(&f)),
        };
        if found.is_some() {
            self.claimed.push(path);
        }
        found
    }

    fn configured_parts(
        &mut self,
        root: &'a Node,
        base: &[PathSeg],
        [registry, digest]: [Option<&'a KeyField>; 2],
        repository: &'a KeyField,
        tag: &'a KeyField,
    ) -> Option<Result<ImageRef, Problem>> {
        let field = |k: &'a KeyField| {
            root.at(&k.path).map(|node| Field {
                label: &k.text,
                node,
            })
        };
        let repo = field(repository).filter(|f| matches!(f.node, Node::Scalar(_)))?;
        let tag_field = Some(field(tag)?);
        let path = joined(base, &repository.path);
        // A mapping at an image key holding these keys is this image, not another one.
        if let Some((_, parent)) = path.split_last() {
            if matches!(parent.last(), Some(PathSeg::Key(k)) if is_image_key(k)) {
                self.claimed.push(parent.to_vec());
            }
        }
        self.claimed.push(path.clone());
        let f = Fields {
            paths: FieldPaths::Each {
                repository: path,
                tag: joined(base, &tag.path),
                digest: digest.map(|d| joined(base, &d.path)),
            },
            registry: registry.and_then(field),
            repository: repo,
            tag: tag_field,
            digest: digest.and_then(field),
            sha: None,
            global: false,
        };
        Some(self.image_of(&f))
    }

    /// An image mapping with a tag and no repository (`image: {tag: 11.3.0}` over a chart's
    /// default image): which image it is, only the chart knows.
    fn tag_only(&self, map: &Node) -> Option<ImageRef> {
        let tag = map.get("tag")?.as_scalar().filter(|t| !is_null(t))?;
        let why = "a tag without a repository: the image is the chart's default".to_string();
        let mut r = self.unmanaged(RefKind::HelmValues, tag.span.start, "", why);
        r.tag = Some(tag.value.as_str().into());
        Some(r)
    }

    fn unit(&self) -> String {
        self.ctx.file.to_string()
    }

    /// A reference imagebump leaves alone, named `written` as far as it is known.
    fn unmanaged(&self, kind: RefKind, at: usize, written: &str, why: String) -> ImageRef {
        let name = parse_name(written).unwrap_or_else(|_| ImageName {
            registry: String::new(),
            repository: written.to_string(),
        });
        let r = Reference {
            name,
            written: written.to_string(),
            tag: None,
            digest: None,
        };
        let mut out = self.ctx.new_ref(kind, &self.unit(), at, r);
        out.unmanaged = Some(why.into());
        out
    }

    /// A `repo:tag` string at an image key; `None` when it is no image at all (null,
    /// empty, a boolean or a number).
    fn string(&self, path: &[PathSeg], s: &Scalar) -> Option<Result<ImageRef, Problem>> {
        if is_null(s) || s.value.is_empty() || is_bool_or_number(s) {
            return None;
        }
        let kind = RefKind::HelmImageString;
        let at = s.span.start;
        if let Some(why) = name::placeholder(&s.value) {
            return Some(Ok(self.unmanaged(kind, at, &s.value, why.to_string())));
        }
        let value = match self.ctx.one_line(s) {
            Ok(value) => value,
            Err(why) => return Some(Ok(self.unmanaged(kind, at, "", why.to_string()))),
        };
        let r = match parse_reference(value) {
            Ok(r) => r,
            // Meant as a reference (it has a path, tag or digest): a mistake to report.
            Err(e) if value.contains(['/', ':', '@']) => {
                return Some(Err(self.ctx.problem(at, e.to_string())))
            }
            Err(e) => {
                let why = format!("not an image reference ({})", e.reason);
                return Some(Ok(self.unmanaged(kind, at, value, why)));
            }
        };
        let mut out = self.ctx.new_ref(kind, &self.unit(), at, r);
        if out.tag.is_none() {
            out.unmanaged = Some(if out.digest.is_some() {
                arcstr::literal!("pinned by digest only").into()
            } else {
                arcstr::literal!("no tag (the runtime pulls latest)").into()
            });
        } else {
            let format = SlotFormat::Reference {
                name: arcstr::ArcStr::clone(&out.written),
            };
            out.slots
                .push(self.ctx.slot(self.doc, path.to_vec(), s, format));
        }
        Some(Ok(out))
    }

    /// A `global.imageRegistry` with a path (`ghcr.io/kubeflow/katib`) over an image map
    /// without a registry of its own: whether the chart prefixes it is unknowable here.
    fn path_registry(&self, f: &Fields<'a>) -> Option<&'a str> {
        let own = f
            .registry
            .and_then(|r| r.node.as_scalar())
            .filter(|s| !is_null(s) && !s.value.is_empty());
        let global = self.global_registry?.as_scalar()?;
        (f.global && own.is_none() && global.value.trim_end_matches('/').contains('/'))
            .then_some(global.value.as_str())
    }

    /// The registry that applies to `f`: `global.imageRegistry` when set, else its own.
    fn registry(&self, f: &Fields<'a>) -> Option<Field<'a>> {
        let host = |n: &&'a Node| {
            matches!(n, Node::Scalar(s) if !is_null(s) && !s.value.is_empty()
                && !s.value.trim_end_matches('/').contains('/'))
        };
        // Bitnami's mirror setting: a registry host put before every repository. (A path
        // prefix, `ghcr.io/org`, is the chart's own business: see `path_registry`.)
        if let Some(node) = self.global_registry.filter(|g| f.global && host(g)) {
            return Some(Field {
                label: "global.imageRegistry",
                node,
            });
        }
        let own = f
            .registry
            .filter(|r| matches!(r.node, Node::Scalar(s) if !is_null(s) && !s.value.is_empty()));
        match self.default_registry.filter(|g| f.global && host(g)) {
            Some(node) if own.is_none() => Some(Field {
                label: "global.image.registry",
                node,
            }),
            _ => f.registry,
        }
    }

    /// `registry/repository` as written, for an image that is not managed.
    fn as_written(&self, f: &Fields<'a>) -> String {
        let value =
            |f: Option<Field<'a>>| f.and_then(|f| f.node.as_scalar()).filter(|s| !is_null(s));
        match (value(self.registry(f)), value(Some(f.repository))) {
            (Some(reg), Some(repo)) => {
                format!("{}/{}", reg.value.trim_end_matches('/'), repo.value)
            }
            (None, Some(repo)) => repo.value.clone(),
            (_, None) => String::new(),
        }
    }

    /// An image from its keys: managed, unmanaged with the reason, or an error.
    fn image_of(&self, f: &Fields<'a>) -> Result<ImageRef, Problem> {
        if let Some(global) = self.path_registry(f) {
            let why = format!(
                "`global.imageRegistry: {global}` is a path, which charts put before some \
                 repositories and not others: name the registry in the image's `registry` key \
                 or with helm.imageKeys"
            );
            let written = f.repository.node.str_value().unwrap_or_default();
            return Ok(self.unmanaged(RefKind::HelmValues, f.at(), written, why));
        }
        let parts = (|| {
            let file = self.ctx.text;
            if text(f.sha, file)?.is_some() {
                return Err(Unmanaged::PinnedBySha);
            }
            Ok((
                text(self.registry(f), file)?,
                text(Some(f.repository), file)?,
                text(f.tag, file)?,
                text(f.digest, file)?,
            ))
        })();
        let kind = RefKind::HelmValues;
        match parts {
            Err(why) => Ok(self.unmanaged(kind, f.at(), &self.as_written(f), why.to_string())),
            Ok((_, None, _, _)) => {
                let why = format!("`{}` is empty", f.repository.label);
                let at = f.repository.node.offset();
                Ok(self.unmanaged(kind, at, "", why))
            }
            Ok((registry, Some(repository), tag, digest)) => self.image_ref(
                f,
                Parts {
                    registry,
                    repository,
                    tag,
                    digest,
                },
            ),
        }
    }

    /// A reference from the values of an image's keys.
    fn image_ref(&self, f: &Fields<'a>, p: Parts<'a>) -> Result<ImageRef, Problem> {
        let ctx = self.ctx;
        let repo = p.repository;
        let line = |s: &'a Scalar| imagebump_yaml::one_line_value(s, ctx.text).unwrap_or(&s.value);
        let written = match p.registry {
            Some(r) => format!("{}/{}", line(r).trim_end_matches('/'), line(repo)),
            None => line(repo).to_string(),
        };
        let image = match parse_name(&written) {
            Ok(image) => image,
            Err(e) => {
                return match self.whole_reference(f, &p) {
                    Some(r) => Ok(r),
                    None => Err(ctx.problem(repo.span.start, e.to_string())),
                }
            }
        };
        let tag_value = p.tag.map(|t| line(t).to_string());
        let (tag_only, tag_digest) = match tag_value.as_deref().map(|t| t.split_once('@')) {
            Some(Some((t, d))) => (Some(t.to_string()), Some(d.to_string())),
            _ => (tag_value.clone(), None),
        };
        if let Some(t) = &tag_only {
            if !name::is_valid_tag(t) {
                let at = p.tag.map_or(repo.span.start, |t| t.span.start);
                return Err(ctx.problem(at, format!("invalid tag {t:?}")));
            }
        }
        let r = Reference {
            name: image,
            written,
            tag: tag_only,
            digest: tag_digest
                .clone()
                .or_else(|| p.digest.map(|d| line(d).to_string())),
        };
        let mut out = ctx.new_ref(RefKind::HelmValues, &self.unit(), f.at(), r);
        self.tag_slots(&mut out, f, p.tag, tag_digest.is_some());
        Ok(out)
    }

    /// Where the new tag (and digest) go; unmanaged when there is no tag to move from.
    fn tag_slots(&self, out: &mut ImageRef, f: &Fields<'a>, tag: Option<&Scalar>, at_digest: bool) {
        let Some(t) = tag else {
            out.unmanaged = Some(match f.tag {
                Some(_) => arcstr::literal!("tag is empty: the chart's appVersion applies").into(),
                None => arcstr::literal!("no tag key: the chart's appVersion applies").into(),
            });
            return;
        };
        let format = if at_digest {
            SlotFormat::TagAtDigest
        } else {
            SlotFormat::Tag
        };
        out.slots
            .push(self.ctx.slot(self.doc, f.paths.tag(), t, format));
        // An empty `digest:` key is still a place to write one (the `digest` strategy),
        // unless it has no text at all to replace.
        let digest = f.digest.and_then(|d| d.node.as_scalar());
        if let (Some(d), Some(path), false) = (digest, f.paths.digest(), at_digest) {
            if !d.span.is_empty() {
                out.slots
                    .push(self.ctx.slot(self.doc, path, d, SlotFormat::Digest));
            }
        }
    }

    /// A repository that holds the whole reference (`repository: nginx:1.27`, no `tag`
    /// key): the repository is the slot.
    fn whole_reference(&self, f: &Fields<'a>, p: &Parts<'a>) -> Option<ImageRef> {
        if f.tag.is_some() {
            return None;
        }
        let repo = p.repository;
        let line =
            |s: &'a Scalar| imagebump_yaml::one_line_value(s, self.ctx.text).unwrap_or(&s.value);
        let r = parse_reference(line(repo))
            .ok()
            .filter(|r| r.tag.is_some())?;
        let written = match p.registry {
            Some(reg) => format!("{}/{}", line(reg).trim_end_matches('/'), r.written),
            None => r.written.clone(),
        };
        let name = parse_name(&written).ok()?;
        let format = SlotFormat::Reference {
            name: r.written.as_str().into(),
        };
        let path = f.paths.repository(f.repository.label);
        let reference = Reference {
            name,
            written,
            tag: r.tag,
            digest: r.digest,
        };
        let mut out = self.ctx.new_ref(
            RefKind::HelmValues,
            &self.unit(),
            repo.span.start,
            reference,
        );
        out.slots.push(self.ctx.slot(self.doc, path, repo, format));
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use imagebump_model::config::HelmImageKey;

    #[test]
    fn unmanaged_keys_say_which_and_why() {
        let e = Unmanaged::Unusable {
            label: "image.tag".into(),
            what: "a placeholder",
        };
        assert_eq!(e.to_string(), "`image.tag` is a placeholder");
        let e = Unmanaged::NotAString {
            label: "repository".into(),
        };
        assert_eq!(e.to_string(), "`repository` is not a string");
    }

    /// Every reference of a values text, one line each: `line:column written tag` and
    /// its slots (`path=format`) or why it is unmanaged; then the problems.
    fn scan_with(text: &str, keys: &[HelmImageKey]) -> Vec<String> {
        let keys = ImageKeys::compile(&HelmConfig {
            image_keys: keys.to_vec(),
            ..HelmConfig::default()
        })
        .unwrap();
        let ctx = FileCtx {
            file: "values.yaml".into(),
            text,
            lines: LineIndex::new(text),
        };
        let docs = imagebump_yaml::parse_located(text).unwrap();
        let (mut refs, mut problems) = (Vec::new(), Vec::new());
        scan(&ctx, &docs, &keys, &mut refs, &mut problems);
        let mut out: Vec<String> = refs.iter().map(summary).collect();
        out.extend(problems.iter().map(|p| format!("error {p}")));
        out
    }

    fn scan_text(text: &str) -> Vec<String> {
        scan_with(text, &[])
    }

    fn summary(r: &ImageRef) -> String {
        let what = match &r.unmanaged {
            Some(why) => format!("unmanaged: {why}"),
            None => r
                .slots
                .iter()
                .map(|s| {
                    let f = match &s.format {
                        SlotFormat::Reference { name } => format!("ref {name}"),
                        f => format!("{f:?}"),
                    };
                    format!("{}={f}", imagebump_yaml::path_to_string(&s.path))
                })
                .collect::<Vec<_>>()
                .join(" "),
        };
        format!(
            "{}:{} {} {} {} | {what}",
            r.line,
            r.column,
            r.image,
            r.written,
            r.tag.as_deref().unwrap_or("-"),
        )
    }

    #[test]
    fn every_key_ending_in_image_in_any_case() {
        let text = "\
sysctlImage:
  repository: docker.io/library/busybox
  tag: \"1.36\"
bootstrap_image: busybox:1.36
initImage: alpine:3.19
IMAGE: ghcr.io/acme/tool:v1
images: [nginx:1.0]
imageTag: nginx:1.0
";
        assert_eq!(
            scan_text(text),
            [
                "3:8 docker.io/library/busybox docker.io/library/busybox 1.36 | sysctlImage.tag=Tag",
                "4:18 docker.io/library/busybox busybox 1.36 | bootstrap_image=ref busybox",
                "5:12 docker.io/library/alpine alpine 3.19 | initImage=ref alpine",
                "6:8 ghcr.io/acme/tool ghcr.io/acme/tool v1 | IMAGE=ref ghcr.io/acme/tool",
            ]
        );
    }

    #[test]
    fn keys_ending_in_image_without_one_are_no_reference_and_no_error() {
        let text = "\
useImage: true
kubectlImage: {}
pullImage: 3
image: {}
a: {image: null}
b: {image: ~}
c:
  image:
d:
  image:
    pullPolicy: Always
    pullSecrets: []
  imagePullPolicy: IfNotPresent
  imagePullSecrets: []
e:
  image: [x]
";
        assert_eq!(scan_text(text), Vec::<String>::new());
    }

    #[test]
    fn a_null_or_empty_registry_is_no_registry() {
        for registry in ["~", "null", "", "\"\"", "Null"] {
            let text = format!(
                "image:\n  registry: {registry}\n  repository: bitnami/redis\n  tag: 7.4.1\n"
            );
            assert_eq!(
                scan_text(&text),
                ["4:8 docker.io/bitnami/redis bitnami/redis 7.4.1 | image.tag=Tag"],
                "{registry}"
            );
        }
    }

    #[test]
    fn values_that_stand_for_an_image_are_listed_with_the_reason() {
        let text = "\
a:
  image:
    repository: \"{{ .Values.global.registry }}/api\"
    tag: 1.0.0
b:
  image:
    registry: CONTAINER_IMAGES_REGISTRY
    repository: app
    tag: 1.0.0
c:
  image:
    repository: acme/api
    tag: \"{{ .Chart.AppVersion }}\"
d:
  image:
    repository: \"\"
    tag: 1.0.0
e:
  image:
    repository: acme/api
    tag: 1.0.0
    sha: 0123abcd
f:
  image: {tag: 2.0.0}
operatorImage: CONTAINER_IMAGES_REGISTRY/operator:1.0.0
agentImage: <OWNER>/agent:latest
jobImage: _image_
shellImage: $IMAGE
policyImage: Always
";
        assert_eq!(
            scan_text(text),
            [
                "4:10 {{ .Values.global.registry }}/api {{ .Values.global.registry }}/api - | unmanaged: `repository` is a template, filled in at deploy time",
                "9:10 CONTAINER_IMAGES_REGISTRY/app CONTAINER_IMAGES_REGISTRY/app - | unmanaged: `registry` is a placeholder, filled in at deploy time",
                "13:10 docker.io/acme/api acme/api - | unmanaged: `tag` is a template, filled in at deploy time",
                "16:17   - | unmanaged: `repository` is empty",
                "21:10 docker.io/acme/api acme/api - | unmanaged: pinned by `sha` (a digest imagebump does not write)",
                "24:16   2.0.0 | unmanaged: a tag without a repository: the image is the chart's default",
                "25:16 CONTAINER_IMAGES_REGISTRY/operator:1.0.0 CONTAINER_IMAGES_REGISTRY/operator:1.0.0 - | unmanaged: a placeholder, filled in at deploy time",
                "26:13 <OWNER>/agent:latest <OWNER>/agent:latest - | unmanaged: a placeholder (`<...>`)",
                "27:11 _image_ _image_ - | unmanaged: a placeholder, filled in at deploy time",
                "28:13 $IMAGE $IMAGE - | unmanaged: a template, filled in at deploy time",
                "29:14 Always Always - | unmanaged: not an image reference (repository must be lowercase path components)",
            ]
        );
    }

    #[test]
    fn chart_shapes_name_and_tag_whole_reference_and_global_registry() {
        let text = "\
global:
  imageRegistry: mirror.example.com
a:
  image:
    registry: docker.io
    repository: bitnami/redis
    tag: 7.4.1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    digest: \"\"
b:
  image:
    name: ghcr.io/acme/migrate
    tag: 0.4.0
c:
  image:
    name: not-an-image
d:
  image:
    repository: nginx:1.26.2
e:
  image:
    repository: acme/web
    tag: 1.0.0
    digest: \"\"
";
        assert_eq!(
            scan_text(text),
            [
                "7:10 mirror.example.com/bitnami/redis mirror.example.com/bitnami/redis 7.4.1 | a.image.tag=TagAtDigest",
                "12:10 ghcr.io/acme/migrate ghcr.io/acme/migrate 0.4.0 | b.image.tag=Tag",
                "18:17 mirror.example.com/nginx mirror.example.com/nginx 1.26.2 | d.image.repository=ref nginx",
                "22:10 mirror.example.com/acme/web mirror.example.com/acme/web 1.0.0 | e.image.tag=Tag e.image.digest=Digest",
            ]
        );
    }

    #[test]
    fn an_image_meant_as_one_that_cannot_be_is_an_error() {
        let text = "\
a:
  image:
    repository: ghcr.io/Acme/Web
    tag: 1.0.0
b:
  image:
    repository: acme/web
    tag: -bad
c:
  image: ghcr.io/Acme/web:1.0
";
        assert_eq!(
            scan_text(text),
            [
                "error values.yaml:3:17: invalid image reference \"ghcr.io/Acme/Web\": repository must be lowercase path components",
                "error values.yaml:8:10: invalid tag \"-bad\"",
                "error values.yaml:10:10: invalid image reference \"ghcr.io/Acme/web\": repository must be lowercase path components",
            ]
        );
    }

    #[test]
    fn configured_keys_apply_where_the_values_have_their_shape() {
        let keys = [
            HelmImageKey::Parts {
                repository: "proxy.image.repo".to_string().try_into().unwrap(),
                tag: "proxy.image.version".to_string().try_into().unwrap(),
                registry: Some("proxy.image.host".to_string().try_into().unwrap()),
                digest: None,
            },
            HelmImageKey::Image {
                image: "sidecars[1].container".to_string().try_into().unwrap(),
            },
            HelmImageKey::Parts {
                repository: "image".to_string().try_into().unwrap(),
                tag: "imageTag".to_string().try_into().unwrap(),
                registry: None,
                digest: None,
            },
        ];
        let text = "\
proxy:
  image:
    host: ghcr.io
    repo: acme/proxy
    version: 1.2.0
sidecars:
  - container: ignored:1.0
  - container: fluent/fluent-bit:3.1.0
image: docker.elastic.co/elasticsearch/elasticsearch
imageTag: 8.5.1
";
        assert_eq!(
            scan_with(text, &keys),
            [
                "5:14 ghcr.io/acme/proxy ghcr.io/acme/proxy 1.2.0 | proxy.image.version=Tag",
                "8:16 docker.io/fluent/fluent-bit fluent/fluent-bit 3.1.0 | sidecars[1].container=ref fluent/fluent-bit",
                "10:11 docker.elastic.co/elasticsearch/elasticsearch docker.elastic.co/elasticsearch/elasticsearch 8.5.1 | imageTag=Tag",
            ]
        );
        // Another chart's values, where `image` is a mapping: read by name, as usual.
        let other = "image:\n  repository: bitnami/redis\n  tag: 7.4.1\n";
        assert_eq!(
            scan_with(other, &keys),
            ["3:8 docker.io/bitnami/redis bitnami/redis 7.4.1 | image.tag=Tag"]
        );
    }

    #[test]
    fn images_inside_a_block_scalar_have_file_positions_and_inner_paths() {
        let file = "\
spec:
  source:
    helm:
      values: |
        # comment
        image:
          repository: bitnami/redis
          tag: 7.4.1 # pinned
        extra:
          - image: busybox:1.36
";
        let docs = imagebump_yaml::parse_located(file).unwrap();
        let at: Vec<PathSeg> = ["spec", "source", "helm", "values"].map(key).to_vec();
        let s = docs[0]
            .root
            .as_ref()
            .unwrap()
            .at(&at)
            .unwrap()
            .as_scalar()
            .unwrap();
        let decoded = "# comment\nimage:\n  repository: bitnami/redis\n  tag: 7.4.1 # pinned\nextra:\n  - image: busybox:1.36\n";
        let block = BlockText::literal(file, s.span.clone(), decoded).unwrap();
        let (refs, problems) = in_block("app.yaml", 0, &at, &block, &ImageKeys::default());
        assert_eq!(problems, []);
        let found: Vec<(usize, usize, &str, Vec<PathSeg>)> = refs
            .iter()
            .map(|r| {
                let slot = &r.slots[0];
                let inner = slot.inner.as_ref().unwrap();
                assert_eq!(&*slot.path, at);
                (
                    r.line as usize,
                    r.column as usize,
                    &file[slot.span.range()],
                    inner.path.clone(),
                )
            })
            .collect();
        assert_eq!(
            found,
            [
                (8, 16, "7.4.1", vec![key("image"), key("tag")]),
                (
                    10,
                    20,
                    "busybox:1.36",
                    vec![key("extra"), PathSeg::Index(0), key("image")]
                ),
            ]
        );
        let broken = BlockText::literal("values: |\n  a: [1\n", 8..18, "a: [1\n").unwrap();
        let (_, problems) = in_block(
            "app.yaml",
            0,
            &[key("values")],
            &broken,
            &ImageKeys::default(),
        );
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].to_string().starts_with("app.yaml:3:"),
            "{}",
            problems[0]
        );
    }

    #[test]
    fn ingress_nginx_and_path_prefixed_global_registries() {
        // ingress-nginx: `image:` inside the map, the registry in `global.image.registry`.
        let nginx = "global:\n  image:\n    registry: registry.k8s.io\ncontroller:\n  image:\n    image: ingress-nginx/controller\n    tag: \"v1.15.1\"\n";
        let got = scan_text(nginx);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].contains("registry.k8s.io/ingress-nginx/controller"),
            "{got:?}"
        );
        // A global registry that is a path prefix is the chart's own business.
        let katib = "global:\n  imageRegistry: ghcr.io/kubeflow/katib\ndb:\n  image:\n    repository: mysql\n    tag: \"8.0\"\n";
        let got = scan_text(katib);
        assert!(
            got[0].contains("unmanaged: `global.imageRegistry: ghcr.io/kubeflow/katib` is a path"),
            "{got:?}"
        );
    }
}
