//! Find every image reference in the manifest tree, with the exact location of its value(s).

pub mod argocd;
pub mod chart_values;
pub mod charts;
pub mod flux;
pub mod generated;
pub mod helm;
pub mod helm_release;
pub mod kustomize;
pub mod markers;
pub mod placement;
pub mod templates;
pub mod workloads;

use arcstr::ArcStr;
use std::collections::BTreeMap;
use std::ops::Range;

use crate::source::tree::Tree;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Serialize;

use crate::chunked::Chunked;
use crate::config::{Config, ScanConfig};
use imagebump_model::name::{ImageName, Reference};
use imagebump_model::Problem;
use imagebump_policy::rules::Policies;
use imagebump_policy::Policy;
use imagebump_yaml::{LineIndex, PathSeg, Scalar, Style};

/// Which kind of file entry a reference comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RefKind {
    /// A kustomization's `images:` entry.
    Kustomize,
    /// A Helm values `image:` map (`registry`, `repository`, `tag`, `digest`).
    HelmValues,
    /// A Helm values `image: "repo:tag"` string.
    HelmImageString,
    /// An Argo CD `kustomize.images` string (Application or override file).
    ArgoKustomizeImage,
    /// An Argo CD `helm.parameters` value (Application or override file).
    ArgoHelmParameter,
    /// An Argo CD `plugin.env` value.
    ArgoPluginEnv,
    /// An image named by argocd-image-updater configuration whose version is not in git.
    ArgoAnnotation,
    /// A value marked with a Flux image policy setter (`# {"$imagepolicy": "ns:policy"}`).
    FluxSetter,
    /// An `image:` in a Kubernetes manifest (a container of any workload kind, a custom
    /// resource's field, a marked value).
    Workload,
    /// A Helm chart's version (Argo CD `targetRevision`, a `Chart.yaml` dependency,
    /// kustomize `helmCharts[].version`, a Flux `HelmRelease`): its "image" is the chart
    /// (`chart/`).
    HelmChart,
    /// An image of a chart's own default `values.yaml` (not in git) that an Argo CD
    /// Application installing the chart does not override: its new tag is written to the
    /// app's `helm.valuesObject` (`discover/chart_values.rs`).
    ChartDefault,
}

/// A reference's slots, in a box of exactly their number: 16 bytes in the reference instead
/// of a vector's 24, and no room to spare. A reference is kept to the end of the run (45,000
/// at 10,000 apps), gets its one or two slots while it is read, and each of its bytes
/// reaches the run's resident peak (docs/performance.md, "What a byte of a reference
/// costs"). Read as a slice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Slots(Box<[Slot]>);

impl Slots {
    /// Add `slot` after the others (the box grown by exactly one: a reference has few).
    pub fn push(&mut self, slot: Slot) {
        let mut all = std::mem::take(&mut self.0).into_vec();
        all.reserve_exact(1);
        all.push(slot);
        self.0 = all.into_boxed_slice();
    }

    /// No slots.
    pub fn clear(&mut self) {
        self.0 = Box::default();
    }
}

impl std::ops::Deref for Slots {
    type Target = [Slot];
    fn deref(&self) -> &[Slot] {
        &self.0
    }
}

impl std::ops::DerefMut for Slots {
    fn deref_mut(&mut self) -> &mut [Slot] {
        &mut self.0
    }
}

impl From<Vec<Slot>> for Slots {
    fn from(slots: Vec<Slot>) -> Slots {
        Slots(slots.into_boxed_slice())
    }
}

impl IntoIterator for Slots {
    type Item = Slot;
    type IntoIter = std::vec::IntoIter<Slot>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_vec().into_iter()
    }
}

impl<'a> IntoIterator for &'a Slots {
    type Item = &'a Slot;
    type IntoIter = std::slice::Iter<'a, Slot>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a mut Slots {
    type Item = &'a mut Slot;
    type IntoIter = std::slice::IterMut<'a, Slot>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter_mut()
    }
}

/// Where a slot's scalar is in its document, in one pointer: a fat `Arc<[PathSeg]>` is 16
/// bytes, and a slot is kept per reference to the end of the run. A tree writes its images
/// at a few paths, each shared by thousands of slots ([`Names`]), so the second allocation
/// this costs is made a few times, not once a slot. Read as a slice.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SlotPath(std::sync::Arc<Box<[PathSeg]>>);

impl std::ops::Deref for SlotPath {
    type Target = [PathSeg];
    fn deref(&self) -> &[PathSeg] {
        &self.0
    }
}

impl std::borrow::Borrow<[PathSeg]> for SlotPath {
    fn borrow(&self) -> &[PathSeg] {
        &self.0
    }
}

impl From<Vec<PathSeg>> for SlotPath {
    fn from(path: Vec<PathSeg>) -> SlotPath {
        SlotPath(std::sync::Arc::new(path.into_boxed_slice()))
    }
}

impl From<&[PathSeg]> for SlotPath {
    fn from(path: &[PathSeg]) -> SlotPath {
        SlotPath(std::sync::Arc::new(path.into()))
    }
}

impl SlotPath {
    /// Whether `a` and `b` are one copy.
    pub fn ptr_eq(a: &SlotPath, b: &SlotPath) -> bool {
        std::sync::Arc::ptr_eq(&a.0, &b.0)
    }
}

/// Where a slot's bytes are in its file, in 32 bits: a file is read up to
/// [`MAX_FILE_BYTES`] (see [`saturating_u32`]). With its document's index in 32 bits too, a
/// slot is 48 bytes, and a reference's one-slot box falls in mimalloc's 48-byte bin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    start: u32,
    end: u32,
}

impl Span {
    /// `r` in 32 bits, each end saturating (see [`saturating_u32`]).
    pub fn saturating(r: &Range<usize>) -> Span {
        Span {
            start: saturating_u32(r.start),
            end: saturating_u32(r.end),
        }
    }

    pub fn range(self) -> Range<usize> {
        self.start()..self.end()
    }

    pub fn start(self) -> usize {
        self.start as usize
    }

    pub fn end(self) -> usize {
        self.end as usize
    }
}

/// One scalar imagebump may rewrite. Its bytes as written are the file's text at `span`
/// (the plan reads them there: a copy per slot would be kept to the end of the run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// The document's index in its file (a file holds fewer than `u32::MAX`).
    pub doc: u32,
    pub path: SlotPath,
    pub span: Span,
    pub style: Style,
    pub format: SlotFormat,
    /// Set when the scalar lies inside the YAML text of a literal block scalar (an Argo CD
    /// `helm.values` string): `doc` and `path` then locate that block scalar, `inner` the
    /// scalar inside its text; `span` is still the scalar's bytes in the file.
    /// Boxed: rare, and a slot is kept per reference to the end of the run.
    pub inner: Option<Box<imagebump_yaml::Inner>>,
    /// Its value is the whole value of its line in a text whose edits are proven in their
    /// lines (`imagebump_yaml::alone_in_its_line`, `provable_in_lines`): set by discovery
    /// when it gives that text up ([`SourceTexts::NeededOnly`]), so that the plan proves the
    /// slot's edit without it. In the room the slot's other fields leave.
    pub alone: bool,
}

impl Slot {
    /// This slot, read in the YAML text of the literal block string `block` (at `at` in the
    /// file's document `doc`), as a slot of the file: its span the file's bytes, its place
    /// in the block kept as `inner`. `None` when its value spans lines of the block.
    pub fn in_block(
        self,
        block: &imagebump_yaml::BlockText,
        doc: usize,
        at: SlotPath,
    ) -> Option<Slot> {
        let span = block.file_span(self.span.range())?;
        Some(Slot {
            inner: Some(Box::new(imagebump_yaml::Inner {
                doc: self.doc as usize,
                path: self.path.to_vec(),
                span: self.span.range(),
            })),
            doc: saturating_u32(doc),
            path: at,
            span: Span::saturating(&span),
            ..self
        })
    }
}

/// What a slot holds, so the new value can be spelled the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotFormat {
    /// Just the tag (`newTag: 1.2.3`, `tag: 1.2.3`).
    Tag,
    /// `tag@digest` in one scalar (kustomize `newTag: 1.2.3@sha256:…`).
    TagAtDigest,
    /// Just the digest (`digest: sha256:…`).
    Digest,
    /// A whole reference `name:tag[@digest]`; `name` is kept as written (shared with the
    /// reference's `written`).
    Reference { name: ArcStr },
}

/// A value that does not exist yet and is created when the reference moves: Argo CD
/// write-back into an override file, a kustomization or a values file.
#[derive(Debug, Clone, PartialEq)]
pub struct Creation {
    /// The file that receives it (it may not exist yet).
    pub file: String,
    pub doc: usize,
    /// The list or the mapping key that receives the value.
    pub path: Vec<PathSeg>,
    pub what: Created,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Created {
    /// An item of a list that Argo CD replaces wholesale: when the file has no such list
    /// yet, it is written complete, `base` (the items in effect so far) first. An item
    /// whose `key` matches an existing one replaces it.
    ListItem {
        base: Vec<serde_json::Value>,
        key: ItemKey,
        value: Template,
    },
    /// A mapping key, created with its parents.
    Key { value: Template },
}

/// How list items are matched, so that an entry is replaced rather than duplicated.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemKey {
    /// A kustomize image string whose name (before `=`, or the image) is this.
    KustomizeImage(String),
    /// A mapping whose `field` equals `value` (`name` of a Helm parameter or a kustomize
    /// `images:` entry).
    Field { field: String, value: String },
}

/// The value to write, given the new tag (and digest).
#[derive(Debug, Clone, PartialEq)]
pub enum Template {
    /// Fixed text (an image repository).
    Text(String),
    /// The tag (`tag@digest` when pinned).
    Tag,
    /// `prefix:tag[@digest]` (a kustomize image string, `name=new:tag`, or `repo:tag`).
    Reference { prefix: String },
    /// A Helm parameter `{name, value, forcestring: true}`.
    HelmParam { name: String, value: Box<Template> },
    /// A plugin environment variable `{name, value}`.
    EnvVar { name: String, value: Box<Template> },
    /// A kustomize `images:` entry `{name, newName?, newTag}`.
    KustomizeEntry {
        name: String,
        new_name: Option<String>,
    },
}

/// An image reference found in a file.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageRef {
    /// Path relative to the root, `/`-separated.
    pub file: ArcStr,
    /// Where its value is, from 1 (`u32`, [`saturating_u32`]: 8 bytes fewer in a reference
    /// kept to the end of the run; `at()` gives them as `usize`).
    pub line: u32,
    pub column: u32,
    pub kind: RefKind,
    pub image: std::sync::Arc<ImageName>,
    /// The image name as written in the file (shared by the references that write it the
    /// same way: discovery keeps one copy of each name).
    pub written: ArcStr,
    /// The tag as written (shared by the references that hold the same tag).
    pub tag: Option<ArcStr>,
    pub digest: Option<ArcStr>,
    /// The unit that owns the reference: a kustomization directory or a values file.
    pub unit: ArcStr,
    pub policy: Policy,
    /// Why imagebump leaves this reference alone; `None` when it is managed. Shared with
    /// its outcome.
    pub unmanaged: Option<Unmanaged>,
    pub slots: Slots,
    /// What few references have (Argo CD write-back, an app): boxed, as a reference is
    /// kept to the end of the run (`creations()`, `writes_to()`, `app()`, `extra_mut()`).
    pub extra: Option<Box<Extra>>,
}

/// Why imagebump leaves a reference alone ([`ImageRef::unmanaged`]): in words, or, for a
/// reference that a kustomization's `images:` entry overrides (a base's image, in every
/// overlay), that entry's file (the name the kustomization's references share) and line,
/// spelled `overridden by FILE:LINE` when the reason is read, rather than a string of its
/// own for each such reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unmanaged {
    Why(ArcStr),
    OverriddenBy { file: ArcStr, line: u32 },
}

/// The words before what overrides a reference, in every reason that says so (the JSON
/// report writes an overriding entry's reason in its pieces).
pub const OVERRIDDEN_BY: &str = "overridden by ";

impl std::fmt::Display for Unmanaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unmanaged::Why(why) => f.write_str(why),
            Unmanaged::OverriddenBy { file, line } => write!(f, "{OVERRIDDEN_BY}{file}:{line}"),
        }
    }
}

impl From<ArcStr> for Unmanaged {
    fn from(why: ArcStr) -> Unmanaged {
        Unmanaged::Why(why)
    }
}

/// A reason made from text is a string of its own: a reason that is always the same words
/// is an `arcstr::literal!` (no allocation), as every manifest image without a tag (15,000
/// at 10,000 apps, until placement finds them overridden) once held a copy of
/// `no tag (the runtime pulls latest)` at discovery's peak.
impl From<&str> for Unmanaged {
    fn from(why: &str) -> Unmanaged {
        Unmanaged::Why(why.into())
    }
}

impl From<String> for Unmanaged {
    fn from(why: String) -> Unmanaged {
        Unmanaged::Why(why.into())
    }
}

/// The parts of a reference that only Argo CD's references and kustomize write-back have.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extra {
    /// Values created when it moves (where `slots` cannot hold the new value).
    pub creations: Vec<Creation>,
    /// Where the new value is written, when not where the current one is read (Argo CD
    /// write-back).
    pub writes_to: Option<String>,
    /// The Argo CD Application the reference belongs to (its `unit` then is the app too).
    pub app: Option<String>,
}

/// A position kept in 32 bits (a line, a column, a slot's span and document, where a
/// kustomization's directory ends): a file is read up to [`MAX_FILE_BYTES`] (the other
/// readers' limits are smaller, each with its own assertion), so it fits; saturating all
/// the same.
pub fn saturating_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

const _: () = assert!(MAX_FILE_BYTES <= u32::MAX as u64);

impl ImageRef {
    /// Where its value is: line and column, from 1.
    pub fn at(&self) -> (usize, usize) {
        (self.line as usize, self.column as usize)
    }

    /// A problem at its value.
    pub fn problem(&self, message: impl Into<String>) -> Problem {
        let (line, column) = self.at();
        Problem::at_file(&self.file, line, column, message)
    }

    /// Its value is at `line` and `column`.
    pub fn set_at(&mut self, (line, column): (usize, usize)) {
        (self.line, self.column) = (saturating_u32(line), saturating_u32(column));
    }

    pub fn is_managed(&self) -> bool {
        self.unmanaged.is_none()
    }

    /// Values created when it moves (where `slots` cannot hold the new value).
    pub fn creations(&self) -> &[Creation] {
        self.extra.as_ref().map_or(&[], |e| &e.creations)
    }

    /// Where the new value is written, when not where the current one is read (Argo CD
    /// write-back).
    pub fn writes_to(&self) -> Option<&str> {
        self.extra.as_ref().and_then(|e| e.writes_to.as_deref())
    }

    /// The Argo CD Application the reference belongs to.
    pub fn app(&self) -> Option<&str> {
        self.extra.as_ref().and_then(|e| e.app.as_deref())
    }

    /// The rarer parts, made when first written.
    pub fn extra_mut(&mut self) -> &mut Extra {
        self.extra.get_or_insert_default()
    }

    /// Give back the room its vectors grew into: a reference is kept to the end of the run,
    /// and a vector grown by one push holds room for four (its slots are boxed at their
    /// number already, docs/performance.md).
    pub fn shrink_to_fit(&mut self) {
        if let Some(e) = &mut self.extra {
            e.creations.shrink_to_fit();
        }
    }

    /// The file an update of this reference writes its new value to: the last of
    /// [`touched_files`](Self::touched_files), or its own file when it touches none.
    pub fn written_file(&self) -> &str {
        self.with_touched_files(|files| files.last().copied().unwrap_or(&self.file))
    }

    /// `f` of [`touched_files`](Self::touched_files), the list made only when the reference
    /// creates values (a few references in most trees): the plan and the report ask for
    /// every update.
    pub fn with_touched_files<'a, R>(&'a self, f: impl FnOnce(&[&'a str]) -> R) -> R {
        match (self.creations(), self.slots.is_empty()) {
            ([], true) => f(&[]),
            ([], false) => f(&[&*self.file]),
            _ => f(&self.touched_files()),
        }
    }

    /// The files an update of this reference changes, its own file first (when it has
    /// slots there), without repeats.
    pub fn touched_files(&self) -> Vec<&str> {
        let mut files: Vec<&str> = Vec::new();
        if !self.slots.is_empty() {
            files.push(&self.file);
        }
        for c in self.creations() {
            if !files.contains(&c.file.as_str()) {
                files.push(&c.file);
            }
        }
        files
    }
}

/// Everything discovery found.
#[derive(Debug, Default)]
pub struct Discovery {
    /// In chunks: read in as discovery goes, a list grown in one block would be copied
    /// into larger blocks, each left to the allocator as the next is made (`chunked.rs`).
    pub refs: Chunked<ImageRef>,
    /// Text of every file that holds a managed reference, for the edit stage (by the file's
    /// name, shared with its references), but those given up for a report-only run
    /// ([`SourceTexts::NeededOnly`]: their fingerprints are kept, their texts are not).
    pub sources: BTreeMap<ArcStr, ArcStr>,
    /// The fingerprints of the files with managed references whose values discovery read
    /// whole (see `Scanned`), held texts or not.
    pub fingerprints: Fingerprints,
    pub problems: Vec<Problem>,
    /// Things the user should know that are not errors (settings honoured differently).
    pub notes: Vec<Problem>,
    pub files_scanned: usize,
    /// Argo CD Applications that install a chart, for the images of its default values.
    pub chart_apps: Vec<charts::ChartApp>,
}

impl Discovery {
    /// Give up where the references imagebump does not manage are written: nothing edits
    /// them, and the report names them by file and line. For the run, once promotion has
    /// read the tree (a source environment's value is read through its slots): a tree of
    /// kustomize overlays holds about one such reference for every two it manages (the
    /// base images its `images:` entries override), each with its slots' paths and text.
    /// The texts of the files no managed reference is written to go too: only the plan
    /// reads them (a tree of kustomize overlays: every base's manifest).
    pub fn release_unmanaged(&mut self) {
        for r in self.refs.iter_mut().filter(|r| !r.is_managed()) {
            r.slots = Slots::default();
            if let Some(e) = &mut r.extra {
                e.creations = Vec::new();
            }
        }
        // foldhash, as in `Names`: a lookup for each of 45,000 references at 10,000 apps.
        let written: foldhash::HashSet<&str> =
            self.refs.iter().flat_map(ImageRef::touched_files).collect();
        self.sources.retain(|f, _| written.contains(&**f));
        self.fingerprints.retain(|f| written.contains(f));
    }

    /// Give up where every value is, once nothing edits them any more (a report-only run's
    /// plan, once its edits are verified: 45,000 references' slots at 10,000 apps). Not
    /// those of a reference that creates values: the file its new value is written to is
    /// found from its slots and creations together ([`ImageRef::written_file`]).
    pub fn release_slots(&mut self) {
        for r in self.refs.iter_mut().filter(|r| r.creations().is_empty()) {
            r.slots = Slots::default();
        }
    }

    /// Only what lies under `scope` (a directory relative to `root`): the references read
    /// and written there, the problems and notes of its files. What is outside was read
    /// for its settings (Argo CD Applications, ImageUpdaters, Flux policies) only.
    pub fn limit_to(&mut self, tree: &Tree, scope: &str) {
        let prefix = format!("{}/", scope.trim_end_matches('/'));
        let inside = |f: &str| f.starts_with(&prefix);
        self.refs.retain(|r| within(r, &prefix));
        self.sources.retain(|f, _| inside(f));
        self.fingerprints.retain(inside);
        // A problem at a file of the tree outside the scope is not this run's.
        let ours = |p: &Problem| {
            let file = p.location.split(':').next().unwrap_or_default();
            inside(file) || file.is_empty() || !tree.exists(file)
        };
        self.problems.retain(ours);
        self.notes.retain(ours);
    }
}

/// Is `r` read and written only under `scope` (a directory relative to the root)?
pub fn in_scope(r: &ImageRef, scope: &str) -> bool {
    within(r, &format!("{}/", scope.trim_end_matches('/')))
}

/// [`in_scope`] with the scope's `prefix` (`dir/`) made once.
fn within(r: &ImageRef, prefix: &str) -> bool {
    let inside = |f: &str| f.starts_with(prefix);
    inside(&r.file)
        && r.writes_to().is_none_or(inside)
        && r.creations().iter().all(|c| inside(&c.file))
}

/// Why an image written as a block scalar that is not one line of text is not edited.
pub const BLOCK_LINES: &str = "a block scalar over several lines (or with `+` or an \
     indentation indicator): not edited; write the image on one line (`>-` and one line is \
     fine)";

/// Per-file context handed to the file-kind scanners.
pub struct FileCtx<'a> {
    /// Shared by the references of the file: one allocation per file, not per reference.
    pub file: ArcStr,
    pub text: &'a str,
    pub lines: LineIndex,
}

impl FileCtx<'_> {
    pub fn at(&self, offset: usize) -> (usize, usize) {
        self.lines.line_col(offset)
    }

    pub fn problem(&self, offset: usize, message: impl Into<String>) -> Problem {
        let (line, column) = self.at(offset);
        Problem::at_file(&self.file, line, column, message)
    }

    /// The text an image scalar holds: its value, or the line of a block scalar written on
    /// one line, without the line break `>` and `|` add after it (an edit keeps that break:
    /// `imagebump_yaml::OneLineBlock`). `Err` with why it is not edited for a block scalar
    /// that is not one line of text.
    pub fn one_line<'s>(&self, s: &'s Scalar) -> Result<&'s str, &'static str> {
        imagebump_yaml::one_line_value(s, self.text).ok_or(BLOCK_LINES)
    }

    /// `s` read as [`FileCtx::one_line`] reads it: its value is its line's text (a copy
    /// only for a block scalar, whose span and style stay its own).
    pub fn one_line_scalar<'s>(
        &self,
        s: &'s Scalar,
    ) -> Result<std::borrow::Cow<'s, Scalar>, &'static str> {
        let line = self.one_line(s)?;
        Ok(if line.len() == s.value.len() {
            std::borrow::Cow::Borrowed(s)
        } else {
            std::borrow::Cow::Owned(Scalar {
                value: line.to_string(),
                ..s.clone()
            })
        })
    }

    pub fn slot(&self, doc: usize, path: Vec<PathSeg>, s: &Scalar, format: SlotFormat) -> Slot {
        Slot {
            doc: saturating_u32(doc),
            path: LATELY.with_borrow_mut(|lately| lately.path(path)),
            span: Span::saturating(&s.span),
            style: s.style,
            format,
            inner: None,
            alone: false,
        }
    }

    /// A reference whose tag lives at `s`; the caller fills in the slots and kind.
    pub fn new_ref(&self, kind: RefKind, unit: &str, at: usize, r: Reference) -> ImageRef {
        let (line, column) = self.at(at);
        let (line, column) = (saturating_u32(line), saturating_u32(column));
        let (image, written, tag) =
            LATELY.with_borrow_mut(|lately| lately.names(r.name, r.written, r.tag));
        ImageRef {
            file: self.file.clone(),
            line,
            column,
            kind,
            image,
            written,
            tag,
            digest: r.digest.map(Into::into),
            unit: unit.into(),
            policy: Policy::default(),
            unmanaged: None,
            slots: Slots::default(),
            extra: None,
        }
    }
}

thread_local! {
    /// The names and tags this thread gave references lately ([`Lately`]).
    static LATELY: std::cell::RefCell<Lately> = std::cell::RefCell::default();
}

/// The names and tags a thread gave references lately, by how they are written: a tree
/// writes a few hundred images at a few versions in thousands of files, so the references
/// a thread makes share one copy of each instead of each allocating its own, which
/// discovery's [`Names`] would then find a duplicate and free (from another thread: 90,000
/// at 10,000 apps, docs/performance.md). At most [`Lately::MAX`] of each are remembered;
/// the parse threads end with discovery, and their memory with them.
#[derive(Default)]
struct Lately {
    names: foldhash::HashMap<ArcStr, std::sync::Arc<ImageName>>,
    tags: foldhash::HashSet<ArcStr>,
    /// Slots' paths (`spec.template.spec.containers[0].image`).
    paths: foldhash::HashSet<SlotPath>,
}

impl Lately {
    const MAX: usize = 1024;

    /// `path` as the copy shared with the thread's other slots at the same path.
    fn path(&mut self, path: Vec<PathSeg>) -> SlotPath {
        if let Some(kept) = self.paths.get(path.as_slice()) {
            return kept.clone();
        }
        if self.paths.len() >= Self::MAX {
            self.paths.clear();
        }
        let path = SlotPath::from(path);
        self.paths.insert(path.clone());
        path
    }

    /// `name` written as `written`, and `tag`, as copies shared with the thread's other
    /// references that hold the same.
    #[allow(clippy::type_complexity)]
    fn names(
        &mut self,
        name: ImageName,
        written: String,
        tag: Option<String>,
    ) -> (std::sync::Arc<ImageName>, ArcStr, Option<ArcStr>) {
        let (image, written) = match self.names.get_key_value(written.as_str()) {
            Some((w, n)) if **n == name => (n.clone(), w.clone()),
            _ => {
                if self.names.len() >= Self::MAX {
                    self.names.clear();
                }
                let (w, n): (ArcStr, std::sync::Arc<ImageName>) = (written.into(), name.into());
                self.names.insert(w.clone(), n.clone());
                (n, w)
            }
        };
        let tag = tag.map(|t| match self.tags.get(t.as_str()) {
            Some(kept) => kept.clone(),
            None => {
                if self.tags.len() >= Self::MAX {
                    self.tags.clear();
                }
                let t: ArcStr = t.into();
                self.tags.insert(t.clone());
                t
            }
        });
        (image, written, tag)
    }
}

fn globset(patterns: &[String]) -> Result<GlobSet, Problem> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let g = Glob::new(p).map_err(|e| Problem::config(format!("bad glob {p:?}: {e}")))?;
        b.add(g);
    }
    b.build().map_err(|e| Problem::config(e.to_string()))
}

struct Filters {
    include: GlobSet,
    exclude: GlobSet,
    helm_values: GlobSet,
}

impl Filters {
    fn new(scan: &ScanConfig) -> Result<Self, Problem> {
        Ok(Filters {
            include: globset(&scan.include)?,
            exclude: globset(&scan.exclude)?,
            helm_values: globset(&scan.helm_values)?,
        })
    }

    fn wanted(&self, rel: &str) -> bool {
        (self.include.is_empty() || self.include.is_match(rel)) && !self.exclude.is_match(rel)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FileKind {
    Kustomization,
    /// A file under a Helm chart's `templates/`: Go template text, read line by line.
    ChartTemplate,
    HelmValues,
    /// Any other YAML file: Kubernetes manifests, Argo CD Applications and `ImageUpdater`s.
    Manifest,
}

fn classify(rel: &str, filters: &Filters) -> Option<FileKind> {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    if matches!(
        name,
        "kustomization.yaml" | "kustomization.yml" | "Kustomization"
    ) {
        return Some(FileKind::Kustomization);
    }
    if filters.helm_values.is_match(rel) {
        return Some(FileKind::HelmValues);
    }
    // Override files are read with their Application.
    let yaml = name.ends_with(".yaml") || name.ends_with(".yml");
    (yaml && !name.starts_with(".argocd-source")).then_some(FileKind::Manifest)
}

/// The name of the last component of `rel`, and the directory it is in (`""`: the root).
fn split_name(rel: &str) -> (&str, &str) {
    match rel.rsplit_once('/') {
        Some((dir, name)) => (dir, name),
        None => ("", rel),
    }
}

/// Directories never scanned: VCS metadata, vendored dependencies.
fn skip_dir(rel: &str) -> bool {
    let name = split_name(rel).1;
    name == ".git" || name == "node_modules"
}

/// A Helm chart's `templates/` (Go templates, not YAML).
fn chart_templates(tree: &Tree, rel: &str) -> bool {
    let (dir, name) = split_name(rel);
    name == "templates" && tree.is_file(&argocd::in_dir(dir, "Chart.yaml"))
}

/// The files to scan, in name order, with their kind.
/// Symbolic links are never followed (the tree is a jail); one that would be read is
/// noted. A file name that is not UTF-8 is reported, not guessed at.
/// Each file's text comes with it when the walk read it ([`first_look`] reads the others).
fn files(tree: &Tree, filters: &Filters, out: &mut Discovery) -> (Vec<Listed>, Texts) {
    use crate::source::tree::{Kind, Reading};
    let problems = &mut out.problems;
    let notes = &mut out.notes;
    let mut files = Vec::new();
    let mut texts = Vec::new();
    // Chart `templates/` directories seen so far (a directory comes before its files).
    let mut templates: Vec<String> = Vec::new();
    let reading = Reading {
        wanted: &|rel| filters.wanted(rel) && classify(rel, filters).is_some(),
        max: MAX_FILE_BYTES,
        budget: READ_AHEAD_BYTES,
    };
    tree.walk_reading(skip_dir, Some(&reading), |entry| {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                problems.push(Problem::general(format!(
                    "cannot read directory entry: {e}"
                )));
                return;
            }
        };
        let rel = entry.rel;
        if !entry.utf8 {
            problems.push(Problem::general(format!(
                "{rel}: the file name is not UTF-8: not read"
            )));
            return;
        }
        if entry.kind == Kind::Link && filters.wanted(rel) && classify(rel, filters).is_some() {
            notes.push(Problem::at_file(
                rel,
                0,
                0,
                "a symbolic link: not followed (imagebump reads only the repository's own files)",
            ));
            return;
        }
        if entry.kind == Kind::Dir && chart_templates(tree, rel) {
            templates.push(format!("{rel}/"));
        }
        if entry.kind != Kind::File || !filters.wanted(rel) {
            return;
        }
        let in_templates = templates.iter().any(|t| rel.starts_with(t.as_str()));
        let kind = match classify(rel, filters) {
            Some(_) if in_templates => FileKind::ChartTemplate,
            Some(kind) => kind,
            None => return,
        };
        files.push((ArcStr::from(rel), kind));
        texts.push(entry.text);
    });
    (files, texts)
}

/// A file to scan, with its kind. Its name is the one its references hold (the list is
/// held until every file is read: 15,000 names at 10,000 apps, not copied again).
type Listed = (ArcStr, FileKind);

/// The texts a walk read, one per file (`None`: not read).
type Texts = Vec<Option<Result<String, String>>>;

/// Walk `tree` and collect every reference.
pub fn discover(tree: &Tree, config: &Config) -> Discovery {
    discover_with(tree, config, None, SourceTexts::All)
}

/// What discovery keeps of the texts of the files its managed references are in, for the
/// plan ([`Discovery::sources`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceTexts {
    /// Every one: the plan writes new texts (a diff, `--write`, a push, pull requests).
    All,
    /// Only those the plan cannot prove its edits in without the text, for a run whose
    /// output is the report: a text the one-pass reader read, without aliases or merge keys,
    /// whose every slot's value is the whole value of its line, is given up as soon as it is
    /// read (its fingerprint kept, its slots marked [`Slot::alone`]); the plan proves
    /// those edits from the new values alone, and reads the text again where a new value
    /// does not read alone (`plan::plan_giving_up_texts`).
    NeededOnly,
}

/// Told of each reference no later pass of discovery can change (its image, policy, unit and
/// place are final), as soon as it is read: `run` starts listing its repository's tags
/// while the rest of the tree is still being parsed.
pub type Early<'a> = &'a mut dyn FnMut(&ImageRef);

/// As [`discover`], telling `early` of the references that are final when they are read.
/// Only a tree without Argo CD or Flux resources has such references (those resources are
/// applied after every file is read, and may claim any reference); manifest images are
/// placed after every kustomization is read, so they are never early.
pub fn discover_with(
    tree: &Tree,
    config: &Config,
    early: Option<Early>,
    kept: SourceTexts,
) -> Discovery {
    let mut out = Discovery::default();
    let filters = match Filters::new(&config.scan) {
        Ok(f) => f,
        Err(p) => {
            out.problems.push(p);
            return out;
        }
    };
    let helm_keys = match helm::ImageKeys::compile(&config.helm) {
        Ok(k) => k,
        Err(p) => {
            out.problems.push(p);
            return out;
        }
    };
    let policies = match Policies::new(&config.defaults, &config.images) {
        Ok(p) => p.with_pull_secrets(&config.credentials),
        Err(e) => {
            out.problems.push(Problem::config(e.to_string()));
            return out;
        }
    };
    tracing::debug!("walking the tree");
    let (files, texts) = files(tree, &filters, &mut out);
    tracing::debug!(files = files.len(), "walked the tree");
    let (claims, ahead) = first_look(tree, &files, texts);
    let mut early = early.filter(|_| !claims);
    tracing::debug!(
        early = early.is_some(),
        "looked for Argo CD and Flux resources"
    );
    // The kustomizations that may name `configurations:` (image fields of custom resources
    // that the manifests are then read with) or `helmCharts:` values files are read first;
    // every other file, the other kustomizations among them, is read in the one pass below.
    let is_k = |f: &Listed| f.1 == FileKind::Kustomization;
    let kfiles: Vec<(usize, &Listed)> = (files.iter().enumerate())
        .filter(|&(i, f)| is_k(f) && read_first(ahead.get(i)))
        .collect();
    let kkeys = Keys {
        specs: &[],
        helm: &helm_keys,
        charts: config.helm.charts,
        texts: kept,
    };
    let kread = crate::parallel::map(&kfiles, |(i, (rel, kind))| {
        read_file(tree, (rel, *kind), &kkeys, ahead.get(*i))
    });
    let read_k: Vec<&kustomize::Kustomization> = kread
        .iter()
        .filter_map(|r| match r {
            (Read::Scanned(s), _) => s.kustomization.as_ref(),
            _ => None,
        })
        .collect();
    let specs = placement::field_specs(tree, &config.scan, &read_k, &mut out.problems);
    // Values files named by `helmCharts:` or generated into a Flux values ConfigMap are
    // Helm values, whatever their name.
    let values_files: std::collections::BTreeSet<String> = read_k
        .iter()
        .flat_map(|k| {
            k.values_files
                .iter()
                .filter_map(|f| kustomize::graph::join(k.dir(), f))
        })
        .collect();
    // Chart versions (`helm.charts`) are found by the same reads and scanned after every file:
    // they are new references and change none read before, so they do not hold listing back.
    tracing::debug!(kustomizations = kfiles.len(), "read the kustomizations");
    // Each read above by its index among the files, taken when its turn comes.
    let kread: std::collections::HashMap<usize, std::sync::Mutex<Option<FileRead>>> = kfiles
        .iter()
        .map(|(i, _)| *i)
        .zip(kread.into_iter().map(|r| std::sync::Mutex::new(Some(r))))
        .collect();
    let mut fold = Fold {
        tree,
        texts: kept,
        out,
        policies,
        argo: argocd::Found::default(),
        marked: flux::Found::default(),
        layout: placement::Layout::with_kustomizations(files.iter().filter(|f| is_k(f)).count()),
        charts: Vec::new(),
        names: Names::default(),
        generated: generated::Generated::default(),
        edit_generated: config.scan.edit_generated,
    };
    // Reading and parsing each file is independent of the others: done on every core,
    // while this thread gives policies, reads Argo CD resources and keeps the books in
    // file order, each file as soon as those before it are done.
    let all: Vec<(usize, &Listed)> = files.iter().enumerate().collect();
    crate::parallel::for_each_ordered(
        &all,
        |&(i, (rel, kind))| {
            let kind = match kind {
                FileKind::Manifest if values_files.contains(rel.as_str()) => FileKind::HelmValues,
                k => *k,
            };
            let read = match (kind, kread.get(&i)) {
                (_, Some(above)) => {
                    (above.lock().ok().and_then(|mut r| r.take())).unwrap_or((Read::Skipped, None))
                }
                (FileKind::Kustomization, None) => {
                    read_file(tree, (rel, kind), &kkeys, ahead.get(i))
                }
                _ => {
                    let keys = Keys {
                        specs: &specs,
                        helm: &helm_keys,
                        charts: config.helm.charts,
                        texts: kept,
                    };
                    read_file(tree, (rel, kind), &keys, ahead.get(i))
                }
            };
            (rel, read)
        },
        |(rel, read)| fold.file(rel, read, &mut early),
    );
    // Every file is folded: the list of them and the read-ahead slots go before the passes
    // over the whole tree, the peak of discovery (15,000 names at 10,000 apps).
    drop((all, kfiles, kread));
    drop((ahead, files));
    fold.finish(config)
}

/// Must this kustomization be read before the other files? When it may name
/// `configurations:`, `helmCharts:`, `configMapGenerator:` or `secretGenerator:` (their
/// image fields and values files change how the manifests are read). A key can be spelled
/// without its letters only in a double-quoted scalar's escapes, so a text with neither
/// name nor a backslash names neither. A text the first look did not keep is read first,
/// as one that cannot be told.
fn read_first(ahead: Option<&std::sync::Mutex<Option<String>>>) -> bool {
    let names = |t: &str| {
        ["configurations", "helmCharts", "Generator", "\\"]
            .iter()
            .any(|n| t.contains(n))
    };
    ahead
        .and_then(|slot| slot.lock().ok().map(|t| t.as_deref().is_none_or(names)))
        .unwrap_or(true)
}

/// Texts the first look read, kept for the parse so that a file is read once, at most
/// [`READ_AHEAD_BYTES`] of them in all: one slot per file, in the order of the files.
type ReadAhead = Vec<std::sync::Mutex<Option<String>>>;

/// The most text the first look keeps for the parse, far more than a repository of
/// manifests holds; past it, a file is read again when it is parsed, so that a huge tree
/// never sits in memory whole.
const READ_AHEAD_BYTES: usize = 16 << 20;

/// The first look at every file, on every core: could an Argo CD or Flux resource in the
/// tree claim a reference after it is read? Every file that mentions their API groups (or a
/// Flux setter) is taken to hold one; a read error is a yes (the parse reports it). The
/// texts the walk read (`texts`) are looked at, the others read; all are kept for the parse
/// (see [`ReadAhead`]).
fn first_look(tree: &Tree, files: &[Listed], texts: Texts) -> (bool, ReadAhead) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let walked: usize = (texts.iter().flatten().flatten()).map(String::len).sum();
    let kept = AtomicUsize::new(walked);
    let claims = |text: &str| text.contains("argoproj.io") || imagebump_flux::mentioned(text);
    let look = |read: Result<String, String>| match read {
        Ok(text) => {
            let before = kept.fetch_add(text.len(), Ordering::Relaxed);
            let fits = before.saturating_add(text.len()) <= READ_AHEAD_BYTES;
            (claims(&text), fits.then_some(text))
        }
        Err(_) => (true, None),
    };
    let looked = if tree.from_objects() {
        // One stream of blobs beats a round trip to git per file.
        let rels: Vec<&str> = files.iter().map(|(rel, _)| rel.as_str()).collect();
        let mut looked = vec![(true, None); files.len()];
        tree.read_each(&rels, MAX_FILE_BYTES, |i, read| {
            if let Some(slot) = looked.get_mut(i) {
                *slot = look(read);
            }
        });
        looked
    } else {
        let work: Vec<_> = files.iter().zip(&texts).collect();
        let looked = crate::parallel::map(&work, |((rel, _), text)| match text {
            // Read by the walk (within the budget): looked at here, kept below.
            Some(Ok(text)) => (claims(text), None),
            Some(Err(_)) => (true, None),
            None => look(tree.read(rel, MAX_FILE_BYTES)),
        });
        drop(work);
        (looked.into_iter().zip(texts))
            .map(|((claims, read), walked)| (claims, read.or(walked.and_then(Result::ok))))
            .collect()
    };
    let claims = looked.iter().any(|(c, _)| *c);
    let texts = looked
        .into_iter()
        .map(|(_, t)| std::sync::Mutex::new(t))
        .collect();
    (claims, texts)
}

/// What discovery builds up file by file, in file order.
struct Fold<'a> {
    tree: &'a Tree,
    /// Whether texts are given up where the plan can read them again.
    texts: SourceTexts,
    out: Discovery,
    policies: Policies,
    argo: argocd::Found,
    marked: flux::Found,
    layout: placement::Layout,
    /// The files that hold chart versions (`helm.charts`), parsed, in file order.
    charts: Vec<Result<charts::ChartFile, Problem>>,
    /// One copy of each name, unit and path, shared by the references.
    names: Names,
    /// The files that say they are generated (`scan.editGenerated`).
    generated: generated::Generated,
    edit_generated: bool,
}

/// One copy of each repository's name and each image name as written (a tree deploys a
/// few hundred images from tens of thousands of places), of each unit (an app's references
/// share it), of each tag and of each slot's path: strings that are kept to the end of the
/// run. The names as written are also the whole-reference slots' names.
#[derive(Default)]
struct Names {
    images: Shared<std::sync::Arc<ImageName>>,
    written: Shared<ArcStr>,
    units: Shared<ArcStr>,
    /// Tags: a repository's references are written at a few versions.
    tags: Shared<ArcStr>,
    /// Slots' paths: a tree writes its images at a few paths (`spec.template.spec.
    /// containers[0].image`) in thousands of files, each a vector of strings.
    paths: Shared<SlotPath>,
}

/// The copies `Names` keeps of one kind of value, and their addresses. Hashed with foldhash
/// (already in the tree through serde_json), not SipHash: every reference is hashed here
/// five times or more, one file after another on the thread that folds them. Each map is
/// seeded at random, and the repository, written before the run, sees no hash: it cannot
/// be written to collide (docs/security.md).
struct Shared<P> {
    copies: foldhash::HashSet<P>,
    /// Where each kept copy lives (they live as long as `copies`, so no other value takes
    /// an address from them): the pass at the end of discovery finds most values shared
    /// already, by address, without hashing what they hold.
    kept_at: foldhash::HashSet<usize>,
}

impl<P> Default for Shared<P> {
    fn default() -> Self {
        Shared {
            copies: Default::default(),
            kept_at: Default::default(),
        }
    }
}

/// A pointer to a shared value, known by the address of the one allocation it shares.
trait Kept: Clone + Eq + std::hash::Hash {
    fn address(&self) -> usize;
}

impl<T: ?Sized + Eq + std::hash::Hash> Kept for std::sync::Arc<T> {
    fn address(&self) -> usize {
        std::sync::Arc::as_ptr(self).cast::<()>().addr()
    }
}

impl Kept for ArcStr {
    /// Where its text is (in its allocation; the empty string and literals are static, and
    /// equal wherever they share an address).
    fn address(&self) -> usize {
        self.as_ptr().addr()
    }
}

impl Kept for SlotPath {
    fn address(&self) -> usize {
        self.0.address()
    }
}

impl Names {
    fn share(&mut self, r: &mut ImageRef) {
        shared(&mut self.images, &mut r.image);
        shared(&mut self.written, &mut r.written);
        shared(&mut self.units, &mut r.unit);
        if let Some(tag) = &mut r.tag {
            shared(&mut self.tags, tag);
        }
        for s in &mut r.slots {
            shared(&mut self.paths, &mut s.path);
            if let SlotFormat::Reference { name } = &mut s.format {
                shared(&mut self.written, name);
            }
        }
    }

    /// A kustomization's `images:` names: the same few hundred images in every overlay.
    fn share_entries(&mut self, k: &mut kustomize::Kustomization) {
        for e in k.images.iter_mut() {
            shared(&mut self.written, &mut e.name);
            if let Some(n) = &mut e.new_name {
                shared(&mut self.written, n);
            }
        }
    }
}

/// `value` as the copy `kept` holds, which keeps it when it holds none.
fn shared<P: Kept>(kept: &mut Shared<P>, value: &mut P) {
    if kept.kept_at.contains(&value.address()) {
        return;
    }
    match kept.copies.get(value) {
        Some(copy) => *value = P::clone(copy),
        None => {
            kept.kept_at.insert(value.address());
            kept.copies.insert(P::clone(value));
        }
    }
}

impl Fold<'_> {
    /// One file read: its references get their policies; its Argo CD, Flux and kustomize
    /// resources are kept for the passes over the whole tree.
    fn file(&mut self, rel: &ArcStr, (read, chart): FileRead, early: &mut Option<Early>) {
        self.charts.extend(chart);
        let out = &mut self.out;
        let scanned = match read {
            Read::Skipped => return,
            Read::Problem(p) => {
                out.files_scanned = out.files_scanned.saturating_add(1);
                out.problems.push(p);
                return;
            }
            Read::Scanned(s) => s,
        };
        out.files_scanned = out.files_scanned.saturating_add(1);
        let Scanned {
            text,
            lines,
            refs,
            workloads,
            problems,
            notes,
            kustomization,
            argo: loaded,
            flux: flux_loaded,
            fingerprint,
            proven_without_text,
        } = *scanned;
        out.problems.extend(problems);
        out.notes.extend(notes);
        // One copy of the text, shared by the sources and the kustomize layout.
        let text: ArcStr = text.into();
        let generated = (self.generated.look(rel, &text)).filter(|_| !self.edit_generated);
        if let Some(loaded) = flux_loaded {
            self.marked.add(rel, &text, loaded, out);
        }
        if let Some(loaded) = loaded {
            self.argo.add(loaded, &mut out.problems);
        }
        if let Some(mut k) = kustomization {
            self.names.share_entries(&mut k);
            let kept = match fingerprint {
                Some(f) if self.texts == SourceTexts::NeededOnly && f.read_in_one_pass() => {
                    placement::KeptText::ReadAgain(f)
                }
                _ => placement::KeptText::Text(text.clone()),
            };
            self.layout.add_kustomization(k, kept);
        }
        // The file's name as its references hold it (the list's), for the maps beside them.
        let file = ArcStr::clone(rel);
        let ctx = FileCtx {
            file: ArcStr::clone(&file),
            text: &text,
            lines,
        };
        let before = out.refs.len();
        out.refs.extend(refs);
        let placed_later = out.refs.len();
        for w in workloads {
            self.layout
                .add_workload(out.refs.len(), w.kustomizable, w.container);
            out.refs.push(w.r);
        }
        for (i, r) in (before..).zip(out.refs.iter_mut_from(before)) {
            self.names.share(r);
            if let Err(p) = apply_policy(&ctx, &mut self.policies, r, None) {
                out.problems.push(p);
            }
            // Before it is told early (placement decides where a manifest image's value
            // goes: those are judged once every file is read).
            if let Some(line) = generated.filter(|_| i < placed_later && r.is_managed()) {
                if r.touched_files().contains(&&**rel) {
                    r.unmanaged = Some(generated::why(rel, line));
                }
            }
            if let Some(tell) = early.as_mut().filter(|_| i < placed_later) {
                tell(r);
            }
        }
        if out.refs.iter_from(before).any(ImageRef::is_managed) {
            if !proven_without_text {
                out.sources.insert(ArcStr::clone(&file), text);
            }
            if let Some(f) = fingerprint {
                out.fingerprints.insert(file, f);
            }
        }
    }

    /// The passes over the whole tree: ApplicationSets, kustomize placement, Argo CD
    /// Applications, Flux setters.
    fn finish(self, config: &Config) -> Discovery {
        let Fold {
            tree,
            texts: _,
            mut out,
            mut policies,
            mut argo,
            marked,
            layout,
            charts: chart_files,
            mut names,
            generated,
            edit_generated,
        } = self;
        // Chart versions: `Chart.yaml` dependencies, `helmCharts:`, Flux `HelmRelease`s.
        if config.helm.charts {
            charts::scan(tree, chart_files, &mut policies, &mut out);
        }
        // ApplicationSets in the repository become the Applications they generate.
        argo.generate(tree, &mut out);
        let rendering = layout.place(tree, &mut out, &argo, config.scan.shared_bases);
        if !argo.apps.is_empty() {
            argocd::scan(tree, config, argo, rendering, &mut out, &mut policies);
        }
        // Flux setters last: their policies may be written in any file.
        flux::scan(marked, &mut policies, &mut out);
        if !edit_generated {
            generated.leave_alone(tree, &mut out);
        }
        // The references are kept to the end of the run with one copy of each name, unit
        // and path (placement, Argo CD and Flux may have made theirs since the fold shared
        // them).
        for r in out.refs.iter_mut() {
            names.share(r);
        }
        out.fingerprints.sort();
        out
    }
}

/// Each file's fingerprint, by the file's name (shared with its references): a list, sorted
/// once discovery is done and then found by binary search. A hash map of them was half a
/// megabyte at 10,000 apps (16,384 places for 10,000 files), held from discovery to the
/// plan's end.
#[derive(Debug, Default, Clone)]
pub struct Fingerprints {
    list: Vec<(ArcStr, imagebump_yaml::Fingerprint)>,
    /// Whether `list` is in the names' order (bytewise), each name once.
    sorted: bool,
}

impl Fingerprints {
    /// The fingerprint of `file`, in place of any it had.
    pub fn insert(&mut self, file: ArcStr, print: imagebump_yaml::Fingerprint) {
        let in_order = self.list.last().is_none_or(|(last, _)| *last < file);
        self.sorted = (self.sorted || self.list.is_empty()) && in_order;
        self.list.push((file, print));
    }

    /// Sorted by name, the last one given for a name kept, at its exact length.
    fn sort(&mut self) {
        if !self.sorted {
            // Stable: of one name's fingerprints, the last one given comes last, and takes
            // the place of those before it.
            self.list.sort_by(|a, b| a.0.cmp(&b.0));
            self.list.dedup_by(|later, kept| {
                let same = later.0 == kept.0;
                if same {
                    std::mem::swap(later, kept);
                }
                same
            });
            self.sorted = true;
        }
        self.list.shrink_to_fit();
    }

    pub fn get(&self, file: &str) -> Option<&imagebump_yaml::Fingerprint> {
        if self.sorted {
            let at = self.list.binary_search_by(|(f, _)| (**f).cmp(file)).ok()?;
            self.list.get(at).map(|(_, print)| print)
        } else {
            self.list
                .iter()
                .rev()
                .find(|(f, _)| **f == *file)
                .map(|(_, p)| p)
        }
    }

    pub fn contains_key(&self, file: &str) -> bool {
        self.get(file).is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Only the files `keep` keeps (the order is kept).
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.list.retain(|(f, _)| keep(f));
    }
}

/// One file read, parsed and scanned.
enum Read {
    /// A manifest that a first look shows holds nothing to read: not parsed, not counted.
    Skipped,
    /// The file cannot be read, or is not valid YAML.
    Problem(Problem),
    Scanned(Box<Scanned>),
}

/// What a file holds: its references (policies not given yet) and the problems its
/// scanner found; for a kustomization, what the graph needs; Argo CD resources to read in
/// file order.
struct Scanned {
    text: String,
    lines: LineIndex,
    refs: Vec<ImageRef>,
    workloads: Vec<workloads::Found>,
    problems: Vec<Problem>,
    /// What the scan left out and the user may want to know (a chart template's documents
    /// that are not YAML).
    notes: Vec<Problem>,
    kustomization: Option<kustomize::Kustomization>,
    argo: Option<argocd::Loaded>,
    /// Flux image automation resources and setters.
    flux: Option<imagebump_flux::Loaded>,
    /// The fingerprint of all the file's values, when the parse read them all: it spares
    /// the plan's verification a second parse of the text (`imagebump_yaml::apply_edits_known`).
    fingerprint: Option<imagebump_yaml::Fingerprint>,
    /// Its edits are proven without its text ([`SourceTexts::NeededOnly`]): every slot of
    /// its references is marked [`Slot::alone`]. Judged where the file is parsed (on every
    /// core), not in the fold.
    proven_without_text: bool,
}

/// What every file is read with: the image fields of custom resources, the Helm image keys.
struct Keys<'a> {
    specs: &'a [workloads::FieldSpec],
    helm: &'a helm::ImageKeys,
    /// `helm.charts`: each file is also looked at for chart versions.
    charts: bool,
    /// Whether a file's edits are judged provable without its text, as it is read.
    texts: SourceTexts,
}

/// A file read once: what the scanners found, and its chart versions (`helm.charts`).
type FileRead = (Read, Option<Result<charts::ChartFile, Problem>>);

/// Whether every slot of `refs` (a file's, read from `text`) holds the whole value of its
/// line: the file's edits are then proven without its text ([`SourceTexts::NeededOnly`],
/// its slots marked [`Slot::alone`] by the caller). A slot inside a block scalar's text, or
/// of a block scalar, never is; a file with a reference that creates a value (in it or
/// elsewhere) keeps its text.
fn alone_in_their_lines<'r>(text: &str, mut refs: impl Iterator<Item = &'r ImageRef>) -> bool {
    refs.all(|r| {
        // A value created in the file needs its text (few do).
        r.creations().is_empty()
            && r.slots.iter().all(|slot| {
                slot.inner.is_none()
                    && slot.style != Style::Block
                    && imagebump_yaml::alone_in_its_line(text, &slot.span.range())
            })
    })
}

/// Read and scan one file: the text the first look kept (`ahead`), else from the tree.
fn read_file(
    tree: &Tree,
    (rel, kind): (&ArcStr, FileKind),
    keys: &Keys,
    ahead: Option<&std::sync::Mutex<Option<String>>>,
) -> FileRead {
    let kept = ahead.and_then(|slot| slot.lock().ok().and_then(|mut t| t.take()));
    let read = kept.map_or_else(|| tree.read(rel, MAX_FILE_BYTES), Ok);
    let text = match read {
        Ok(t) => t,
        Err(e) => return (Read::Problem(Problem::at_file(rel, 0, 0, e)), None),
    };
    let chart = keys
        .charts
        .then(|| charts::read(rel, kind, &text))
        .flatten();
    (scan_text(rel, kind, keys, text), chart)
}

/// One file's text read by its scanners.
fn scan_text(rel: &ArcStr, kind: FileKind, keys: &Keys, text: String) -> Read {
    let (specs, helm_keys) = (keys.specs, keys.helm);
    if kind == FileKind::ChartTemplate {
        return scan_template(rel, text, helm_keys);
    }
    // Cheap first look: most YAML files hold no manifest with an image and no Argo CD
    // or Flux resource, and are never parsed.
    let flux_wanted = imagebump_flux::mentioned(&text);
    let look = match kind {
        FileKind::Manifest => {
            let l = workloads::look(&text, specs);
            if !l.interest.argo && !l.interest.workloads && !flux_wanted {
                return Read::Skipped;
            }
            Some(l)
        }
        _ => None,
    };
    let interest = look.as_ref().map(|l| l.interest).unwrap_or_default();
    // A manifest that is not an Argo CD or Flux resource needs only its documents with
    // images.
    let parsed = match look {
        Some(l) if !interest.argo && !flux_wanted => workloads::parse(&text, l),
        _ => imagebump_yaml::parse_located_fingerprinted(&text).map(|(d, f)| (d, Some(f))),
    };
    let (docs, fingerprint) = match parsed {
        Ok(d) => d,
        Err(e) => return Read::Problem(Problem::at_file(rel, e.line, e.column, e.reason())),
    };
    let ctx = FileCtx {
        file: ArcStr::clone(rel),
        text: &text,
        lines: LineIndex::new(&text),
    };
    let mut refs = Vec::new();
    let mut found = Vec::new();
    let mut problems = Vec::new();
    let mut kustomization = None;
    match kind {
        FileKind::Kustomization => {
            kustomize::scan(&ctx, &docs, helm_keys, &mut refs, &mut problems);
            kustomization = Some(kustomize::read(&ctx, &docs));
            workloads::strings(&ctx, &docs, &mut found);
        }
        FileKind::HelmValues => {
            helm::scan(&ctx, &docs, helm_keys, &mut refs, &mut problems);
            // Charts that take a whole config file as a value (`katibConfig: |`).
            workloads::strings(&ctx, &docs, &mut found);
        }
        FileKind::Manifest if interest.workloads => {
            workloads::scan(&ctx, &docs, specs, &mut found, &mut problems);
            helm_release::scan(&ctx, &docs, helm_keys, &mut refs, &mut problems);
            // A marked line inside HelmRelease values is that values reference.
            let values: Vec<_> = refs
                .iter()
                .flat_map(|r| &r.slots)
                .map(|s| s.span.range())
                .collect();
            found.retain(|w| !flux::marks(&values, &w.r));
        }
        FileKind::Manifest | FileKind::ChartTemplate => {}
    }
    let flux = flux_wanted
        .then(|| imagebump_flux::read(rel, &text, &docs))
        .filter(|f| !f.is_empty());
    if let Some(f) = &flux {
        // A value a setter marks is what the setter says it is.
        refs.retain(|r| !flux::marks(&f.marked, r) && !flux::marks_at(&ctx, &f.marked, r));
        found.retain(|w| !flux::marks(&f.marked, &w.r) && !flux::marks_at(&ctx, &f.marked, &w.r));
    }
    for r in refs.iter_mut().chain(found.iter_mut().map(|w| &mut w.r)) {
        r.shrink_to_fit();
    }
    let proven_without_text = keys.texts == SourceTexts::NeededOnly
        && (!refs.is_empty() || !found.is_empty())
        && imagebump_yaml::provable_in_lines(&text, fingerprint)
        && alone_in_their_lines(&text, refs.iter().chain(found.iter().map(|w| &w.r)));
    if proven_without_text {
        for r in refs.iter_mut().chain(found.iter_mut().map(|w| &mut w.r)) {
            r.slots.iter_mut().for_each(|slot| slot.alone = true);
        }
    }
    let lines = ctx.lines;
    let argo = interest
        .argo
        .then(|| argocd::Loaded::from_parsed(rel, text.clone(), docs));
    Read::Scanned(Box::new(Scanned {
        text,
        lines,
        refs,
        workloads: found,
        problems,
        notes: Vec::new(),
        kustomization,
        argo,
        flux,
        fingerprint,
        proven_without_text,
    }))
}

/// A chart template: its literal images, and the Argo CD resources and Flux `HelmRelease`
/// values of its documents that parse as YAML (an app-of-apps written as a chart).
fn scan_template(rel: &ArcStr, text: String, helm_keys: &helm::ImageKeys) -> Read {
    let ctx = FileCtx {
        file: ArcStr::clone(rel),
        text: &text,
        lines: LineIndex::new(&text),
    };
    let mut refs = Vec::new();
    templates::scan(&ctx, &mut refs);
    let (mut notes, mut problems) = (Vec::new(), Vec::new());
    let mut argo = None;
    if let Some(parsed) = templates::resources(rel, &text, &mut notes) {
        // The `image:` lines of the resources read here are theirs.
        let lines = &parsed.lines;
        refs.retain(|r| !lines.iter().any(|l| l.contains(&(r.line as usize))));
        helm_release::scan(&ctx, &parsed.docs, helm_keys, &mut refs, &mut problems);
        argo = parsed
            .has_argo()
            .then(|| argocd::Loaded::from_documents(rel, text.clone(), parsed.docs, parsed.json));
    }
    if refs.is_empty() && argo.is_none() && notes.is_empty() && problems.is_empty() {
        return Read::Skipped;
    }
    let lines = ctx.lines;
    Read::Scanned(Box::new(Scanned {
        text,
        lines,
        refs,
        workloads: Vec::new(),
        problems,
        notes,
        kustomization: None,
        argo,
        flux: None,
        fingerprint: None,
        // Not YAML: its edits are verified with its text.
        proven_without_text: false,
    }))
}

/// The largest file read. Upstream install bundles of CRDs reach a few megabytes; a
/// file far larger is a mistake or an attack, and would cost memory many times its size.
pub const MAX_FILE_BYTES: u64 = 32 << 20;

/// Give `r` its policy: configuration (with `repository` settings, from Argo CD
/// annotations, under the `images` rules), then an inline marker on the value's line. A bad
/// marker leaves the reference unmanaged (untouched) and is reported at its position.
fn apply_policy(
    ctx: &FileCtx,
    policies: &mut Policies,
    r: &mut ImageRef,
    repository: Option<(&str, &imagebump_model::policy::PolicySpec)>,
) -> Result<(), Problem> {
    let marker = r
        .slots
        .first()
        .and_then(|s| markers::find(ctx.text, s.span.end()));
    let spec = match &marker {
        None => None,
        Some(m) => match &m.spec {
            Ok(spec) => Some(spec),
            Err(e) => {
                // Still show the configured policy; the reference itself is left alone.
                let file = Some(&*r.file);
                if let Ok(policy) =
                    policies.policy_with(&r.image, &r.written, file, repository, None)
                {
                    r.policy = policy;
                }
                r.unmanaged = Some(arcstr::literal!("invalid imagebump marker").into());
                return Err(ctx.problem(m.offset, e.clone()));
            }
        },
    };
    match policies.policy_with(
        &r.image,
        &r.written,
        Some(&*r.file),
        repository,
        spec.map(|s| ("marker", s)),
    ) {
        Ok(policy) => {
            if policy.ignore && r.unmanaged.is_none() {
                r.unmanaged = Some(format!("ignored ({})", policy.source).into());
            }
            r.policy = policy;
            Ok(())
        }
        Err(e) => {
            r.unmanaged = Some(arcstr::literal!("invalid policy").into());
            let at = marker.map_or(r.slots.first().map_or(0, |s| s.span.start()), |m| m.offset);
            let mut p = ctx.problem(at, e.to_string());
            p.hint = e.hint;
            Err(p)
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Fingerprints are found by name whether they came in order or not, the last one
    /// given for a name wins (as a map's insert), and what is kept stays found.
    #[test]
    fn fingerprints_are_found_by_name_in_any_order() {
        let print = |text: &str| imagebump_yaml::parse_located_fingerprinted(text).unwrap().1;
        let (a, b, c) = (print("a: 1\n"), print("b: 2\n"), print("c: 3\n"));
        assert!(a != b && b != c && a != c);
        for names in [
            ["x/a", "x/b", "y"],
            ["y", "x/b", "x/a"],
            ["x/b", "y", "x/a"],
        ] {
            let mut f = Fingerprints::default();
            for (name, p) in names.iter().zip([a, b, c]) {
                f.insert(ArcStr::from(*name), p);
            }
            // The same name again: its new fingerprint holds.
            f.insert(ArcStr::from(names[0]), c);
            for sorted in [false, true] {
                if sorted {
                    f.sort();
                    assert_eq!(f.list.len(), 3, "one entry per name");
                }
                assert_eq!(f.get(names[0]), Some(&c), "{names:?} {sorted}");
                assert_eq!(f.get(names[1]), Some(&b), "{names:?} {sorted}");
                assert_eq!(f.get(names[2]), Some(&c), "{names:?} {sorted}");
                assert_eq!(f.get("x"), None);
                assert!(!f.contains_key("z"));
            }
            f.retain(|name| name != "x/b");
            assert_eq!((f.get("x/b"), f.get("x/a").is_some()), (None, true));
            assert!(f.get("y").is_some());
        }
        assert!(Fingerprints::default().is_empty());
    }

    /// Each byte of a reference reaches a run's resident peak (45,000 references at 10,000
    /// apps; docs/performance.md, "What a byte of a reference costs"): a reference that
    /// grows is a choice, made here.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_reference_stays_as_small_as_it_is() {
        // The reason a reference is not managed is an `Unmanaged`, so that the references
        // an overlay overrides hold no string of their own: this pins the size it gives.
        assert_eq!(std::mem::size_of::<ImageRef>(), 112);
        assert_eq!(std::mem::size_of::<Option<Unmanaged>>(), 16);
        assert_eq!(std::mem::size_of::<Slots>(), 16);
        assert_eq!(std::mem::size_of::<Slot>(), 48);
        // Its span too, in 32 bits.
        let span = Span::saturating(&(u32::MAX as usize + 3..u32::MAX as usize + 9));
        assert_eq!(
            (span.start(), span.end()),
            (u32::MAX as usize, u32::MAX as usize)
        );
        assert_eq!(Span::saturating(&(5..9)).range(), 5..9);
        // Its line and column are kept in 32 bits, saturating.
        assert_eq!(
            (saturating_u32(7), saturating_u32(u32::MAX as usize)),
            (7, u32::MAX)
        );
        assert_eq!(saturating_u32(u32::MAX as usize + 1), u32::MAX);
        // Slots pushed one after another keep their order; cleared, none are left.
        let mut slots = Slots::default();
        assert!(slots.is_empty());
        let slot = |doc| Slot {
            doc,
            path: SlotPath::from(Vec::new()),
            span: Span::saturating(&(0..1)),
            style: Style::Plain,
            format: SlotFormat::Tag,
            inner: None,
            alone: false,
        };
        slots.push(slot(1));
        slots.push(slot(2));
        let docs: Vec<u32> = slots.iter().map(|s| s.doc).collect();
        assert_eq!(docs, [1, 2]);
        slots.clear();
        assert!(slots.is_empty());
    }

    #[test]
    fn the_written_file_is_the_last_file_an_update_touches_listed_or_not() {
        let name = imagebump_model::name::parse_reference("nginx:1.0").unwrap();
        let mut r = ImageRef {
            file: "a/d.yaml".into(),
            line: 1,
            column: 1,
            kind: RefKind::Kustomize,
            image: name.name.into(),
            written: name.written.into(),
            tag: name.tag.map(Into::into),
            digest: None,
            unit: "a".into(),
            policy: Policy::default(),
            unmanaged: None,
            slots: Slots::default(),
            extra: None,
        };
        let create = |file: &str| Creation {
            file: file.into(),
            doc: 0,
            path: Vec::new(),
            what: Created::Key {
                value: Template::Tag,
            },
        };
        let slot = Slot {
            doc: 0,
            path: Vec::new().into(),
            span: Span::saturating(&(0..1)),
            style: Style::Plain,
            format: SlotFormat::Tag,
            inner: None,
            alone: false,
        };
        let mut seen = Vec::new();
        let mut check = |r: &ImageRef| {
            assert_eq!(r.with_touched_files(<[&str]>::to_vec), r.touched_files());
            let listed = r.touched_files().last().copied().unwrap_or(&r.file);
            assert_eq!(r.written_file(), listed);
            seen.push(listed.to_string());
        };
        // Nothing to write, then its own file's slots.
        check(&r);
        r.slots.push(slot);
        check(&r);
        // Values created elsewhere, one of them in its own file again: the last new file.
        r.extra_mut().creations = vec![create("b/k.yaml"), create("a/d.yaml")];
        check(&r);
        r.slots.clear();
        r.extra_mut().creations = vec![create("c/x.yaml"), create("c/y.yaml"), create("c/x.yaml")];
        check(&r);
        assert_eq!(seen, ["a/d.yaml", "a/d.yaml", "b/k.yaml", "c/y.yaml"]);
    }

    /// `files` written in a new directory, removed when the result is dropped.
    pub(crate) fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    /// The references `discover_with` tells early, by file and name, and the discovery.
    fn told(dir: &std::path::Path) -> (Vec<(String, String)>, Discovery) {
        let mut told = Vec::new();
        let mut tell = |r: &ImageRef| told.push((r.file.to_string(), r.written.to_string()));
        let found = discover_with(
            &Tree::disk(dir),
            &Config::default(),
            Some(&mut tell),
            SourceTexts::All,
        );
        (told, found)
    }

    const APP: [(&str, &str); 3] = [
        (
            "app/kustomization.yaml",
            "resources: [deploy.yaml]\nimages:\n- name: r.io/web\n  newTag: 1.0.0\n",
        ),
        (
            "app/deploy.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: r.io/web:0.9.0\n",
        ),
        ("chart/values.yaml", "image:\n  repository: r.io/api\n  tag: 2.0.0\n"),
    ];

    #[test]
    fn a_charts_templates_are_known_by_its_chart_yaml_file_or_a_link_to_one_inside() {
        let t = "kind: Deployment\nimage: {{ .Values.image }}\n";
        let dir = tree(&[
            ("chart/Chart.yaml", "name: chart\n"),
            ("chart/templates/deploy.yaml", t),
            ("chart/templates/tests/t.yaml", t),
            ("chart/templates.yaml", "a: 1\n"),
            ("plain/templates/deploy.yaml", "a: 1\n"),
            ("folder/Chart.yaml/x.yaml", "a: 1\n"),
            ("folder/templates/deploy.yaml", "a: 1\n"),
            ("linked/templates/deploy.yaml", t),
            ("outside/templates/deploy.yaml", "a: 1\n"),
        ]);
        std::os::unix::fs::symlink("../chart/Chart.yaml", dir.path().join("linked/Chart.yaml"))
            .unwrap();
        std::os::unix::fs::symlink("../gone.yaml", dir.path().join("outside/Chart.yaml")).unwrap();
        let config = Config::default();
        let filters = Filters::new(&config.scan).unwrap();
        let (found, texts) = files(&Tree::disk(dir.path()), &filters, &mut Discovery::default());
        // The walk read every file it listed, from the disk as it is.
        for ((rel, _), text) in found.iter().zip(&texts) {
            let want = std::fs::read_to_string(dir.path().join(rel.as_str())).unwrap();
            assert_eq!(text.as_ref(), Some(&Ok(want)), "{rel}");
        }
        let templates: Vec<&str> = (found.iter())
            .filter(|(_, kind)| *kind == FileKind::ChartTemplate)
            .map(|(rel, _)| rel.as_str())
            .collect();
        assert_eq!(
            templates,
            [
                "chart/templates/deploy.yaml",
                "chart/templates/tests/t.yaml",
                "linked/templates/deploy.yaml",
            ]
        );
        let read: Vec<&str> = found.iter().map(|(rel, _)| rel.as_str()).collect();
        for manifest in [
            "chart/templates.yaml",
            "plain/templates/deploy.yaml",
            "folder/templates/deploy.yaml",
            "outside/templates/deploy.yaml",
        ] {
            assert!(read.contains(&manifest), "{manifest}: {read:?}");
        }
    }

    #[test]
    fn references_final_when_read_are_told_early_and_placed_manifests_are_not() {
        let dir = tree(&APP);
        let (told, found) = told(dir.path());
        assert_eq!(
            told,
            [
                ("app/kustomization.yaml".to_string(), "r.io/web".to_string()),
                ("chart/values.yaml".to_string(), "r.io/api".to_string()),
            ]
        );
        // The same discovery as without being told.
        let plain = discover(&Tree::disk(dir.path()), &Config::default());
        assert_eq!(found.refs, plain.refs);
        assert_eq!(found.refs.len(), 3);
    }

    #[test]
    fn released_references_keep_what_the_report_needs_and_managed_ones_their_slots() {
        let dir = tree(&APP);
        let mut found = discover(&Tree::disk(dir.path()), &Config::default());
        let before = found.refs.clone();
        assert!(found.sources.contains_key("app/deploy.yaml"));
        found.release_unmanaged();
        // The base's manifest is no managed reference's: its text goes; those written keep it.
        let kept: Vec<&str> = found.sources.keys().map(|f| &**f).collect();
        assert_eq!(kept, ["app/kustomization.yaml", "chart/values.yaml"]);
        let overridden = |r: &ImageRef| &*r.file == "app/deploy.yaml";
        for (r, b) in found.refs.iter().zip(&before) {
            if overridden(b) {
                // The base's image, overridden by the kustomization's `images:` entry.
                assert!(!b.is_managed() && !b.slots.is_empty());
                assert!(r.slots.is_empty() && r.creations().is_empty());
                let (file, line, tag) = (&r.file, r.line, r.tag.as_deref());
                assert_eq!((file, line, tag), (&b.file, b.line, Some("0.9.0")));
                assert_eq!(r.unmanaged, b.unmanaged);
            } else {
                assert!(r.is_managed());
                assert_eq!(r, b);
            }
        }
        assert_eq!(found.refs.iter().filter(|r| overridden(r)).count(), 1);
    }

    #[test]
    fn nothing_is_told_early_in_a_tree_with_argo_cd_or_flux_resources() {
        let app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web}\nspec:\n  source: {repoURL: https://git.example/x, path: app}\n";
        let flux = "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\nmetadata: {name: web}\nspec: {imageRepositoryRef: {name: web}, policy: {semver: {range: '>=1.0.0'}}}\n";
        for extra in [("argo/app.yaml", app), ("flux/policy.yaml", flux)] {
            let mut files = APP.to_vec();
            files.push(extra);
            let dir = tree(&files);
            let (told, found) = told(dir.path());
            assert!(told.is_empty(), "{}: {told:?}", extra.0);
            assert!(!found.refs.is_empty());
        }
    }

    #[test]
    fn equal_values_are_kept_once_and_a_kept_copy_is_known_by_its_address() {
        use std::sync::Arc;
        let mut kept: Shared<ArcStr> = Shared::default();
        let mut first = ArcStr::from("apps/web");
        shared(&mut kept, &mut first);
        // An equal value made elsewhere becomes the kept copy.
        let mut again = ArcStr::from("apps/web");
        assert!(!ArcStr::ptr_eq(&first, &again));
        shared(&mut kept, &mut again);
        assert!(ArcStr::ptr_eq(&first, &again));
        // The kept copy itself is found by its address and left as it is.
        let before = ArcStr::clone(&first);
        shared(&mut kept, &mut first);
        assert!(ArcStr::ptr_eq(&first, &before));
        let mut other = ArcStr::from("apps/api");
        shared(&mut kept, &mut other);
        assert_eq!((kept.copies.len(), kept.kept_at.len()), (2, 2));
        assert_eq!(&*other, "apps/api");
        // So is a slot's path: equal paths made apart, and an empty one after another.
        let mut paths: Shared<SlotPath> = Shared::default();
        let image = || vec![PathSeg::Key("image".into())];
        let (mut one, mut two) = (SlotPath::from(image()), SlotPath::from(image()));
        shared(&mut paths, &mut one);
        shared(&mut paths, &mut two);
        assert!(SlotPath::ptr_eq(&one, &two));
        let (mut none, mut empty) = (SlotPath::from(Vec::new()), SlotPath::from(Vec::new()));
        shared(&mut paths, &mut none);
        shared(&mut paths, &mut empty);
        assert!(SlotPath::ptr_eq(&none, &empty));
        assert_eq!(paths.copies.len(), 2);

        // Through discovery: two apps writing the same image and tag at the same path hold
        // one copy of each.
        let deploy = APP[1].1;
        let dir = tree(&[("a/deploy.yaml", deploy), ("b/deploy.yaml", deploy)]);
        let found = discover(&Tree::disk(dir.path()), &Config::default());
        let [a, b] = &found.refs.iter().collect::<Vec<_>>()[..] else {
            panic!("{:?}", found.refs)
        };
        assert!(Arc::ptr_eq(&a.image, &b.image) && ArcStr::ptr_eq(&a.written, &b.written));
        let tags = (a.tag.as_ref().unwrap(), b.tag.as_ref().unwrap());
        assert!(ArcStr::ptr_eq(tags.0, tags.1));
        assert!(SlotPath::ptr_eq(&a.slots[0].path, &b.slots[0].path));
    }

    #[test]
    fn many_shared_bases_are_placed_in_the_order_of_their_references() {
        // 520 bases of two images each, every one in two overlays: 1,040 manifest
        // references, each becoming one reference per overlay, in the references' order
        // (placement replaces each by its overlays' in one pass at the end, by index).
        let bases: Vec<String> = (0..520).map(|i| format!("bases/b{i:03}")).collect();
        let resources: String = bases.iter().map(|b| format!("- ../../{b}\n")).collect();
        let overlay = format!("resources:\n{resources}");
        let mut files: Vec<(String, String)> = vec![
            ("overlays/dev/kustomization.yaml".into(), overlay.clone()),
            ("overlays/prod/kustomization.yaml".into(), overlay),
        ];
        for (i, b) in bases.iter().enumerate() {
            files.push((
                format!("{b}/kustomization.yaml"),
                "resources: [deploy.yaml]\n".into(),
            ));
            let deploy = format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: b{i}}}\nspec:\n  template:\n    spec:\n      containers:\n      - {{name: a, image: r.io/a{i}:1.0.0}}\n      - {{name: b, image: r.io/b{i}:1.0.0}}\n"
            );
            files.push((format!("{b}/deploy.yaml"), deploy));
        }
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        let dir = tree(&borrowed);
        let found = discover(&Tree::disk(dir.path()), &Config::default());
        let got: Vec<(String, Option<String>, String)> = (found.refs.iter())
            .map(|r| {
                let writes_to = r.writes_to().map(str::to_string);
                (r.written.to_string(), writes_to, r.unit.to_string())
            })
            .collect();
        let mut want = Vec::new();
        for i in 0..520 {
            for image in [format!("r.io/a{i}"), format!("r.io/b{i}")] {
                for leaf in ["overlays/dev", "overlays/prod"] {
                    let file = format!("{leaf}/kustomization.yaml");
                    want.push((image.clone(), Some(file), leaf.to_string()));
                }
            }
        }
        assert_eq!(got.len(), 2080);
        assert!(
            got == want,
            "first difference: {:?}",
            got.iter().zip(&want).find(|(g, w)| g != w)
        );
    }

    /// A kustomization is read before the other files when it may name `configurations:`
    /// or `helmCharts:` values files, however the key is spelled; every other one is read in
    /// the one pass, in its turn. Each layout finds the custom resource's image (through the
    /// configuration's field) and reads the chart's values file as Helm values.
    #[test]
    fn kustomizations_that_change_how_manifests_are_read_are_read_first() {
        let config = "images:\n- path: spec/runner\n  kind: Job2\n";
        let resource = "apiVersion: x.io/v1\nkind: Job2\nmetadata: {name: j}\nspec:\n  runner: r.io/job:1.0.0\n";
        let values = "image:\n  repository: r.io/api\n  tag: 2.0.0\n";
        for key in ["configurations", "\"config\\u0075rations\""] {
            let kustomization = format!(
                "resources: [a-job.yaml]\n{key}: [kc.yaml]\nhelmCharts:\n- name: api\n  valuesFile: prod.yaml\n"
            );
            let dir = tree(&[
                // Before the kustomization in file order: read with its field already known.
                ("app/a-job.yaml", resource),
                ("app/kc.yaml", config),
                ("app/kustomization.yaml", &kustomization),
                ("app/prod.yaml", values),
                ("other/kustomization.yaml", "resources: []\n"),
            ]);
            let found = discover(&Tree::disk(dir.path()), &Config::default());
            let got: Vec<(&str, &str, RefKind)> = (found.refs.iter())
                .map(|r| (&*r.file, &*r.written, r.kind))
                .collect();
            assert_eq!(
                got,
                [
                    ("app/a-job.yaml", "r.io/job", RefKind::Workload),
                    ("app/prod.yaml", "r.io/api", RefKind::HelmValues),
                ],
                "{key}"
            );
            assert!(found.problems.is_empty(), "{:?}", found.problems);
        }
        // Which texts are read first: a name, a backslash, or a text the first look did not
        // keep.
        let first = |t: Option<&str>| read_first(Some(&std::sync::Mutex::new(t.map(String::from))));
        assert!(first(Some("configurations: [kc.yaml]\n")));
        assert!(first(Some("helmCharts: []\n")));
        assert!(first(Some("configMapGenerator: []\n")));
        assert!(first(Some("secretGenerator: []\n")));
        assert!(first(Some("\"images\": [\"\\x61\"]\n")));
        assert!(first(None));
        assert!(read_first(None));
        assert!(!first(Some(
            "resources: [deploy.yaml]\nimages:\n- name: r.io/web\n"
        )));
    }
}
