//! The references' vocabulary: what every file-kind scanner produces ([`ImageRef`] with its
//! [`Slot`]s, [`Creation`]s and [`Extra`]) and reads a file through ([`FileCtx`]). Every
//! scanner imports these from here.

use arcstr::ArcStr;
use std::ops::Range;

use serde::Serialize;

use imagebump_model::name::{ImageName, Reference};
use imagebump_model::Problem;
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
/// at a few paths, each shared by thousands of slots (`Names` in `fold.rs`), so the second allocation
/// this costs is made a few times, not once a slot. Read as a slice.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SlotPath(pub(super) std::sync::Arc<Box<[PathSeg]>>);

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
    /// when it gives that text up ([`SourceTexts::NeededOnly`](super::SourceTexts::NeededOnly)), so that the plan proves the
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
/// discovery's `Names` (`fold.rs`) would then find a duplicate and free (from another thread: 90,000
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

/// The largest file read. Upstream install bundles of CRDs reach a few megabytes; a
/// file far larger is a mistake or an attack, and would cost memory many times its size.
pub const MAX_FILE_BYTES: u64 = 32 << 20;

/// How a note about an include outside the tree ends (`../../base is outside the
/// repository: not read`); the commands say, when the tree is a subdirectory of a git
/// repository, where to run to read it (`app::subdir`).
pub const OUTSIDE_TREE: &str = "is outside the repository: not read";

#[cfg(test)]
mod tests {
    use super::*;

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
}
