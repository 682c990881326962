//! The plan stage, a pure function: references + outcomes → verified file edits, grouped
//! into change sets.

use arcstr::ArcStr;
use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;

mod by_document;
mod chart_lock;
mod creation;
mod in_lines;

use crate::chunked::Chunked;
use crate::discover::{saturating_u32, Creation, Discovery, ImageRef, RefKind, Slot, SlotFormat};
use crate::resolve::Outcome;
use crate::source::tree::Tree;
use imagebump_model::config::GroupBy;
use imagebump_model::name::ImageName;
use imagebump_model::policy::Strategy;
use imagebump_model::Problem;
use imagebump_yaml::{self as yaml, Edit, Scalar};

/// One value that changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Update {
    // Shared with the reference (and every other update of the file).
    #[schemars(with = "String")]
    pub file: ArcStr,
    // `u32` (`discover::saturating_u32`): the rows are kept to the end of the run. The
    // schema says a number, as it does for any line.
    #[schemars(with = "usize")]
    pub line: u32,
    #[schemars(with = "usize")]
    pub column: u32,
    pub kind: RefKind,
    /// The normalised repository (`docker.io/library/nginx`).
    // One allocation per repository in a plan, shared by its updates.
    #[schemars(with = "String")]
    pub image: ArcStr,
    /// The image name as written in the file.
    // Shared with the reference.
    #[schemars(with = "String")]
    pub name: ArcStr,
    // Versions as spelled: one string per distinct value in a plan, shared by its updates.
    #[schemars(with = "String")]
    pub from: ArcStr,
    #[schemars(with = "String")]
    pub to: ArcStr,
    // Shared by the updates of one change set.
    #[schemars(with = "String")]
    pub group: ArcStr,
    /// The file the new value is written to, when it is not `file` (Argo CD write-back).
    #[serde(skip_serializing_if = "Option::is_none")]
    // One pointer, not a `String`: 30,000 updates at 10,000 apps are held to the end of the run.
    #[schemars(with = "Option<String>")]
    pub written_to: Option<ArcStr>,
    /// Its policy asks for the forge's auto-merge (`automerge: true`).
    #[serde(skip)]
    pub automerge: bool,
    /// `verify`: the digest whose signature verified, and who signed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<Box<crate::verify::Verified>>,
    /// A chart bump: the appVersion of the chart before and after, when known
    /// (`chart/app_version.rs`, filled after planning by `fill_app_versions`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_version: Option<Box<crate::chart::app_version::AppVersionChange>>,
}

/// Give every chart bump of `plan` the appVersion change `lookup` knows of (the chart as
/// written, the version before, the version after). `found` and `outcomes` are what the
/// plan was made from.
pub fn fill_app_versions(
    plan: &mut Plan,
    (found, outcomes): (&Discovery, &Chunked<Outcome>),
    mut lookup: impl FnMut(&str, &str, &str) -> Option<crate::chart::app_version::AppVersionChange>,
) {
    if plan.later.is_some() {
        // The chart bumps' rows, made as a report would make them.
        let mut spellings = Spellings::default();
        let known: BTreeMap<usize, Box<_>> = made_rows(found, outcomes, plan)
            .filter(|(_, ((r, _, _), _), _)| r.kind == RefKind::HelmChart)
            .filter_map(|(at, moved, group)| {
                let u = spellings.row(moved, group);
                lookup(&u.name, &u.from, &u.to).map(|v| (at, Box::new(v)))
            })
            .collect();
        if let Some(later) = &mut plan.later {
            later.app_versions = known;
        }
        return;
    }
    for u in plan
        .updates
        .iter_mut()
        .filter(|u| u.kind == RefKind::HelmChart)
    {
        u.app_version = lookup(&u.name, &u.from, &u.to).map(Box::new);
    }
}

/// A file's text before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub file: String,
    /// Shared with the discovery's sources: the text is not copied.
    pub before: ArcStr,
    pub after: String,
    /// The file does not exist yet.
    pub created: bool,
}

/// The unit of one future pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangeSet {
    // Shared with its updates' `group`.
    #[schemars(with = "String")]
    pub group: ArcStr,
    // Shared with the references' file names.
    #[schemars(with = "Vec<String>")]
    pub files: Vec<ArcStr>,
    /// Indexes into [`Plan::updates`].
    pub updates: Vec<usize>,
    /// The files of this change set alone (its branch's content).
    #[serde(skip)]
    pub changes: Vec<FileChange>,
}

#[derive(Debug, Default)]
pub struct Plan {
    /// The report's rows, one per planned update whose edit is not refused, when the plan
    /// keeps them: every plan but a report-only run's ([`plan_giving_up_texts`]), whose
    /// rows are made when they are read. Read them with [`Plan::rows`], which gives both;
    /// delivery (which only kept plans reach) reads them here. In chunks: made at the end
    /// of the plan, after discovery's texts are given up, in the room they leave
    /// (`chunked.rs`).
    pub updates: Chunked<Update>,
    /// A report-only run's rows, not kept (one per update, made at the run's peak): what
    /// makes them again from the references and their outcomes.
    later: Option<Later>,
    /// Every changed file's texts, when the plan keeps them ([`Keep`]).
    pub files: Vec<FileChange>,
    /// How many files change (whether their texts are kept or not).
    pub files_changed: usize,
    /// In the order of their groups. In chunks (`chunked.rs`): 10,000 at 10,000 apps.
    pub change_sets: Chunked<ChangeSet>,
    pub problems: Vec<Problem>,
    /// Files whose edits were refused (left unchanged; the reason is in `problems`).
    pub refused: std::collections::BTreeSet<String>,
}

fn spell(tag: &str, digest: Option<&str>) -> String {
    match digest {
        Some(d) => format!("{tag}@{d}"),
        None => tag.to_string(),
    }
}

/// The new decoded value of a slot; `None` leaves the slot as it is.
fn slot_value(
    slot: &Slot,
    tag: &str,
    digest: Option<&str>,
    digest_elsewhere: bool,
) -> Option<String> {
    Some(match &slot.format {
        // A tag-only slot carries the digest when no other slot of the reference does.
        SlotFormat::Tag if !digest_elsewhere => spell(tag, digest),
        SlotFormat::Tag => tag.to_string(),
        SlotFormat::TagAtDigest => format!("{tag}@{}", digest?),
        SlotFormat::Digest => digest?.to_string(),
        SlotFormat::Reference { name } => format!("{name}:{}", spell(tag, digest)),
    })
}

/// What makes a report-only plan's rows again, with the references and outcomes it was made
/// from ([`Plan::rows`]).
#[derive(Debug, Default)]
struct Later {
    /// Each planned update's change set, in the order of [`planned_verified`] (`None`: its
    /// file's edit is refused, and it has no row).
    set_of: Vec<Option<SetIndex>>,
    /// How many rows: the planned updates in a change set.
    rows: usize,
    /// The appVersion changes of chart bumps, by row ([`fill_app_versions`]).
    app_versions: BTreeMap<usize, Box<crate::chart::app_version::AppVersionChange>>,
}

/// A plan's rows ([`Plan::rows`]): kept by the plan, or made as they are read from the
/// references and outcomes the plan was made from, one at a time, in the same order and
/// the same as a kept plan's (`plan::tests`).
#[derive(Debug, Clone, Copy)]
pub enum Rows<'a> {
    Kept(&'a Chunked<Update>),
    Made(&'a Discovery, &'a Chunked<Outcome>, &'a Plan),
}

impl<'a> Rows<'a> {
    pub fn len(&self) -> usize {
        match self {
            Rows::Kept(kept) => kept.len(),
            Rows::Made(_, _, plan) => plan.later.as_ref().map_or(0, |l| l.rows),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows in order: a kept row borrowed, a row not kept made as it is read.
    pub fn iter(&self) -> impl Iterator<Item = Cow<'a, Update>> + 'a {
        let (kept, made) = match *self {
            Rows::Kept(kept) => (Some(kept), None),
            Rows::Made(found, outcomes, plan) => (None, Some((found, outcomes, plan))),
        };
        let kept = kept.into_iter().flat_map(|k| k.iter().map(Cow::Borrowed));
        let made = made.into_iter().flat_map(|(found, outcomes, plan)| {
            let later = plan.later.as_ref();
            let mut spellings = Spellings::default();
            made_rows(found, outcomes, plan).map(move |(at, moved, group)| {
                let mut u = spellings.row(moved, group);
                u.app_version = later.and_then(|l| l.app_versions.get(&at)).cloned();
                Cow::Owned(u)
            })
        });
        kept.chain(made)
    }
}

/// The rows of a plan that does not keep them, before they are made: each row's index, its
/// planned update (with what `verify` recorded of it) and its change set's group.
fn made_rows<'a>(
    found: &'a Discovery,
    outcomes: &'a Chunked<Outcome>,
    plan: &'a Plan,
) -> impl Iterator<
    Item = (
        usize,
        (Planned<'a>, Option<&'a crate::verify::Verified>),
        &'a ArcStr,
    ),
> + 'a {
    let set_of = plan.later.as_ref().map_or(&[][..], |l| &l.set_of[..]);
    (planned_verified(found, outcomes).zip(set_of))
        .filter_map(|(moved, set)| Some((moved, &plan.change_sets.get(set.as_ref()?.get())?.group)))
        .enumerate()
        .map(|(at, (moved, group))| (at, moved, group))
}

impl Serialize for Rows<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl Plan {
    /// The plan's rows ([`Rows`]): `found` and `outcomes` are those it was made from.
    pub fn rows<'a>(&'a self, found: &'a Discovery, outcomes: &'a Chunked<Outcome>) -> Rows<'a> {
        match self.later {
            Some(_) => Rows::Made(found, outcomes, self),
            None => Rows::Kept(&self.updates),
        }
    }

    /// How many rows it has, kept or not.
    pub fn update_count(&self) -> usize {
        self.later.as_ref().map_or(self.updates.len(), |l| l.rows)
    }
}

/// The digest to write for `r`: only where the file already pins one, or under the
/// `digest` strategy, whose whole point is pinning it.
fn written_digest<'a>(r: &ImageRef, digest: Option<&'a str>) -> Option<&'a str> {
    if r.digest.is_some() || r.policy.strategy == Strategy::Digest {
        digest
    } else {
        None
    }
}

fn group_of(file: &str) -> &str {
    file.rsplit_once('/').map_or(".", |(d, _)| d)
}

/// Why the slots of a reference could not be edited.
#[derive(Debug, Clone, thiserror::Error)]
enum SlotEditError {
    #[error("the value is not where discovery found it in the file")]
    Moved,
    #[error("no text to edit")]
    NoText,
    #[error("the new digest is unknown")]
    DigestUnknown,
    #[error(transparent)]
    Render(#[from] yaml::EditError),
}

/// The edits of `r`'s slots in `text`, the text of its file.
fn edits_for(
    r: &ImageRef,
    text: &str,
    tag: &str,
    digest: Option<&str>,
) -> Result<Vec<Edit>, SlotEditError> {
    let render = |slot: &Slot, value: &str| {
        let old = Scalar {
            value: String::new(),
            span: slot.span.range(),
            style: slot.style,
        };
        let raw = (text.get(slot.span.range())).ok_or(SlotEditError::Moved)?;
        let value = match block_suffix(slot, raw) {
            "" => Cow::Borrowed(value),
            suffix => Cow::Owned(format!("{value}{suffix}")),
        };
        Ok(yaml::render_scalar(&old, raw, &value)?)
    };
    let edits = edits_rendered(r, (tag, digest), |slot, value| Some(render(slot, value)));
    edits.unwrap_or(Err(SlotEditError::NoText))
}

/// What a block scalar on one line holds after its line's text (the line break of `>` and
/// `|`), given its raw text: discovery read the line's text alone, and the edit keeps the
/// break ([`yaml::OneLineBlock`]). Nothing for any other scalar.
fn block_suffix(slot: &Slot, raw: &str) -> &'static str {
    match slot.style {
        yaml::Style::Block => yaml::OneLineBlock::of(raw).map_or("", |b| b.suffix()),
        _ => "",
    }
}

/// The edits of `r`'s slots to `tag` and `digest`, each slot's new text spelled by
/// `render` (`None`: it cannot be spelled that way; so are the edits).
fn edits_rendered(
    r: &ImageRef,
    (tag, digest): (&str, Option<&str>),
    render: impl Fn(&Slot, &str) -> Option<Result<String, SlotEditError>>,
) -> Option<Result<Vec<Edit>, SlotEditError>> {
    let digest_elsewhere = r.slots.iter().any(|s| s.format == SlotFormat::Digest);
    if r.digest.is_some() && digest.is_none() {
        return Some(Err(SlotEditError::DigestUnknown));
    }
    let mut edits = Vec::with_capacity(r.slots.len());
    for slot in r.slots.iter() {
        let Some(value) = slot_value(slot, tag, digest, digest_elsewhere) else {
            continue;
        };
        let new_raw = match render(slot, &value)? {
            Ok(raw) => raw,
            Err(e) => return Some(Err(e)),
        };
        let new_value = match block_suffix(slot, &new_raw) {
            "" => value,
            suffix => value + suffix,
        };
        edits.push(Edit {
            doc: slot.doc as usize,
            path: slot.path.to_vec(),
            span: slot.span.range(),
            new_raw,
            new_value,
            inner: slot.inner.as_deref().cloned(),
        });
    }
    Some(Ok(edits))
}

/// A reference with its new tag and digest.
type Planned<'a> = (&'a ImageRef, &'a str, Option<&'a str>);

/// A planned update named by its reference's index in the discovery (and its outcome's in
/// the outcomes): the plan's lists of updates hold these, not [`Planned`]s, and read each
/// update where it is used ([`Moves::get`]). A discovery holds fewer than `u32::MAX`
/// references: each is over a hundred bytes, so that many would not fit in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct RefIndex(u32);

impl RefIndex {
    fn get(self) -> usize {
        self.0 as usize
    }
}

/// A change set named by its place in [`Plan::change_sets`] (in the order of the groups).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct SetIndex(u32);

impl SetIndex {
    fn get(self) -> usize {
        self.0 as usize
    }
}

/// The references and their outcomes a plan is made from, read by index ([`RefIndex`]).
#[derive(Clone, Copy)]
struct Moves<'a> {
    refs: &'a Chunked<ImageRef>,
    outcomes: &'a Chunked<Outcome>,
}

impl<'a> Moves<'a> {
    fn new(discovery: &'a Discovery, outcomes: &'a Chunked<Outcome>) -> Moves<'a> {
        Moves {
            refs: &discovery.refs,
            outcomes,
        }
    }

    /// The planned update of the reference at `at`; `None` when it does not move.
    fn get(&self, at: RefIndex) -> Option<Planned<'a>> {
        let at = at.get();
        moving(self.refs.get(at)?, self.outcomes.get(at)?).map(|(p, _)| p)
    }

    /// How many updates are planned (their outcomes are updates).
    fn count(&self) -> usize {
        (self.outcomes.iter())
            .filter(|o| matches!(o, Outcome::Update { .. }))
            .count()
    }

    /// Every planned update with its reference's index, in the references' order.
    fn iter(self) -> impl Iterator<Item = (RefIndex, Planned<'a>)> + 'a {
        (0..)
            .map(RefIndex)
            .zip(self.refs.iter().zip(self.outcomes))
            .filter_map(|(at, (r, o))| Some((at, moving(r, o)?.0)))
    }
}

/// The planned update of `r` whose outcome is `o` (with what `verify` recorded of it), or
/// `None` when it does not move.
fn moving<'a>(
    r: &'a ImageRef,
    o: &'a Outcome,
) -> Option<(Planned<'a>, Option<&'a crate::verify::Verified>)> {
    match o {
        Outcome::Update {
            tag,
            digest,
            verified,
        } => Some((
            (r, &**tag, written_digest(r, digest.as_deref())),
            verified.as_deref(),
        )),
        _ => None,
    }
}

/// What changes in one file: its planned updates with slots there, and the values to create
/// in it, each named by index (read where they are used), in the plan's order.
struct FileWork<'a> {
    moves: Moves<'a>,
    /// References whose slots are in this file.
    slots: Vec<RefIndex>,
    /// Values to create in this file (few), with the reference that asks for each.
    creations: Vec<(RefIndex, &'a Creation)>,
}

impl<'a> FileWork<'a> {
    fn new(moves: Moves<'a>) -> FileWork<'a> {
        FileWork {
            moves,
            slots: Vec::new(),
            creations: Vec::new(),
        }
    }

    fn size(&self) -> Size {
        Size {
            slots: saturating_u32(self.slots.len()),
            creations: saturating_u32(self.creations.len()),
        }
    }

    /// The planned updates with slots in this file, in the plan's order.
    fn slots(&self) -> impl Iterator<Item = Planned<'a>> + '_ {
        self.slots.iter().filter_map(|&at| self.moves.get(at))
    }

    /// The values to create in this file, in the plan's order.
    fn creations(&self) -> impl Iterator<Item = (Planned<'a>, &'a Creation)> + '_ {
        (self.creations.iter()).filter_map(|&(at, c)| Some((self.moves.get(at)?, c)))
    }
}

/// The work of `planned`, a list of planned updates in the plan's order, by file: in the
/// files' order (bytewise) and, within a file, in the order of the list. A reference's
/// slots are work on its own file; each value it creates is work on the file receiving it.
fn work_by_file<'a>(moves: Moves<'a>, planned: Vec<RefIndex>) -> Vec<(&'a str, FileWork<'a>)> {
    let mut files: BTreeMap<&'a str, FileWork<'a>> = BTreeMap::new();
    for at in planned {
        let Some(r) = moves.refs.get(at.get()) else {
            continue;
        };
        if !r.slots.is_empty() {
            let work = files.entry(&r.file).or_insert_with(|| FileWork::new(moves));
            work.slots.push(at);
        }
        for c in r.creations() {
            let work = files.entry(&c.file).or_insert_with(|| FileWork::new(moves));
            work.creations.push((at, c));
        }
    }
    files.into_iter().collect()
}

/// How a plan groups its updates into change sets: `pullRequests.groupBy`, and whether
/// major updates go apart (`pullRequests.separateMajor`). A bare [`GroupBy`] keeps them
/// with the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Groups {
    pub by: GroupBy,
    pub separate_major: bool,
}

impl From<GroupBy> for Groups {
    fn from(by: GroupBy) -> Groups {
        Groups {
            by,
            separate_major: false,
        }
    }
}

/// What the group key of a change set of major updates ends with (its branch then ends
/// with `-major`).
pub const MAJOR_SUFFIX: &str = " (major)";

/// Whether `group` is a change set of major updates ([`MAJOR_SUFFIX`]).
pub fn is_major_group(group: &str) -> bool {
    group.ends_with(MAJOR_SUFFIX)
}

/// The group a change set of major updates is apart from (itself for any other): the
/// shards split by it, so a group's majors are in its shard.
pub fn base_group(group: &str) -> &str {
    group.strip_suffix(MAJOR_SUFFIX).unwrap_or(group)
}

/// Whether `r`'s move to `tag` is a major update: semver versions (image tags and chart
/// versions) whose major differs, or for a `0.x` version the minor.
pub fn is_major(r: &ImageRef, tag: &str) -> bool {
    r.policy.strategy == Strategy::Semver
        && r.tag
            .as_deref()
            .is_some_and(|from| imagebump_policy::constraint::is_major_update(from, tag))
}

/// The key of the change set a reference's update belongs to (borrowed where it is a
/// name the reference holds: the plan looks it up for every update): the `group` its
/// policy names, else the one `by` gives.
pub fn group_key<'a>(r: &'a ImageRef, written: &'a str, by: GroupBy) -> Cow<'a, str> {
    if let Some(group) = r.policy.spec.group.as_deref() {
        return Cow::Borrowed(group);
    }
    match by {
        GroupBy::App => Cow::Borrowed(&r.unit),
        GroupBy::Directory => Cow::Borrowed(group_of(written)),
        GroupBy::Image => Cow::Owned(r.image.to_string()),
        GroupBy::All => Cow::Borrowed("all"),
    }
}

/// The change-set group a reference falls in, before anything is resolved (its written file
/// is known from discovery).
pub fn group_of_ref(r: &ImageRef, by: GroupBy) -> Cow<'_, str> {
    group_key(r, r.written_file(), by)
}

/// Which of `n` shards a group belongs to: a stable hash of its key (the same on every
/// machine and run).
pub fn shard_of(group: &str, n: u64) -> u64 {
    use sha2::Digest;
    let hash = sha2::Sha256::digest(group.as_bytes());
    // A SHA-256 digest has 32 bytes.
    let first = hash.first_chunk::<8>().copied().unwrap_or_default();
    // `n == 0` counts as one shard: every group is in shard 0.
    u64::from_be_bytes(first).checked_rem(n).unwrap_or(0)
}

/// A file whose edit is refused: file, line, column, why.
type Refusal<'a> = (&'a str, usize, usize, String);

/// How much work a file had: its slot edits and its created values. A change set's work on
/// a file is a subsequence of the whole plan's (its members are a subsequence of the plan's
/// updates, each with the same new value), so the same size is the same work; the plan
/// keeps the sizes, not the work, while it goes through the change sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Size {
    slots: u32,
    creations: u32,
}

/// What a plan keeps of the new texts it verifies. Verifying every edit is the same in each
/// case (the same refusals); keeping the texts is for the outputs that use them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// No texts: a run whose output is the report (a local JSON dry run). A 10,000-app
    /// tree's new texts are megabytes that nothing would read. Nor the rows: they are made
    /// as the report reads them ([`Plan::rows`]).
    Nothing,
    /// The whole plan's texts: the diff, `--write`, a push.
    Files,
    /// And each change set's own (its branch's content): pull requests.
    Branches,
}

/// What [`changes_for`] did for every file, in the files' order (bytewise): the size of
/// its work and its new text (`None`: verified, not kept), or a refusal. Boxed: most plans
/// keep none, and a file's entry is then a few words, not a whole `FileChange`. A list,
/// not a map: 10,000 files' entries are held through the rest of the plan, and a map's
/// nodes were half as large again.
struct Done<'a>(Vec<(&'a str, Size, FileDone)>);

/// A file's new text (`None`: verified, not kept), or `Err`: its edit is refused.
type FileDone = Result<Option<Box<FileChange>>, ()>;

impl<'a> Done<'a> {
    /// The entry of `file`, found by binary search.
    fn get(&self, file: &str) -> Option<(Size, &FileDone)> {
        let i = self.index(file)?;
        self.0.get(i).map(|(_, size, done)| (*size, done))
    }

    /// Where `file` is in the list.
    fn index(&self, file: &str) -> Option<usize> {
        self.0.binary_search_by(|(f, _, _)| (*f).cmp(file)).ok()
    }

    /// How many files' edits are made (not refused).
    fn made(&self) -> usize {
        self.0.iter().filter(|(_, _, c)| c.is_ok()).count()
    }

    /// The new texts kept, by file.
    fn changes(self) -> Vec<FileChange> {
        (self.0.into_iter())
            .filter_map(|(_, _, c)| c.ok().flatten().map(|c| *c))
            .collect()
    }
}

/// The file changes for `planned` (the new text of every file they touch), and the files
/// whose edits are refused. A file whose work is the same as in `earlier` is not edited and
/// verified again: [`change_file`] is a pure function of the text and the work. `planned`
/// is a subsequence of what `earlier` was made from, so the same [`Size`] is the same
/// work. The new texts of the files `keep` refuses are only verified (for the refusals),
/// not kept.
fn changes_for<'a>(
    sources: &Sources,
    moves: Moves<'a>,
    planned: Vec<RefIndex>,
    earlier: Option<&Done<'a>>,
    keep: &(dyn Fn(&str) -> bool + Sync),
) -> (Done<'a>, Vec<Refusal<'a>>) {
    let files = work_by_file(moves, planned);
    // Each file on its own, on every core (editing and verifying is most of the plan).
    let results = crate::parallel::map(&files, |(file, work)| {
        if let Some((_, Ok(change))) = earlier
            .and_then(|e| e.get(file))
            .filter(|(done, _)| *done == work.size())
        {
            return Ok(change.as_ref().filter(|_| keep(file)).cloned());
        }
        file_change(sources, file, work, keep).map_err(Box::new)
    });
    let mut refused = Vec::new();
    // In the files' order already.
    let mut done = Vec::with_capacity(files.len());
    for ((file, work), result) in files.iter().zip(results) {
        let result = result.map_err(|e| {
            let (line, column, e) = *e;
            refused.push((*file, line, column, e));
        });
        done.push((*file, work.size(), result));
    }
    (Done(done), refused)
}

/// The new text of `file` under `work` (`None`: verified, not kept), read from `sources`.
fn file_change(
    sources: &Sources,
    file: &str,
    work: &FileWork,
    keep: &(dyn Fn(&str) -> bool + Sync),
) -> Result<Option<Box<FileChange>>, (usize, usize, String)> {
    let fingerprint = sources.fingerprint(file);
    let read_again: ArcStr;
    let source = match (sources.text(file), sources.files(), fingerprint) {
        (Some(text), _, _) => Some(text),
        // Given up by discovery: proven without it, or read again.
        (None, Some(files), Some(print)) => match without_text(files, file, print, work, keep)? {
            Some(text) => {
                read_again = text;
                Some(&read_again)
            }
            None => return Ok(None),
        },
        // Given up, and nothing to read it from (a discovery that gives texts up is
        // planned by `plan_giving_up_texts` only): refused, never taken for a new file.
        (None, None, Some(_)) => {
            debug_assert!(false, "{file}: a text given up, planned without its files");
            let (line, column) = edits_at(work);
            return Err((line, column, "its text was not kept".to_string()));
        }
        (None, _, None) => None,
    };
    change_file(source.map(|t| &**t), fingerprint, work).map(|after| {
        keep(file).then(|| {
            Box::new(FileChange {
                file: file.to_string(),
                before: source.cloned().unwrap_or_default(),
                after,
                created: source.is_none(),
            })
        })
    })
}

/// Plan the edits: every file's new text with all updates (dry run, `--write`), and the
/// change sets grouped by `group_by`, each with its own file contents (one branch each).
pub fn plan(
    discovery: &Discovery,
    outcomes: &Chunked<Outcome>,
    group_by: impl Into<Groups>,
) -> Plan {
    plan_with(discovery, outcomes, group_by, Keep::Branches)
}

/// As [`plan`], keeping the texts `keep` says: every file is verified alike (the refusals
/// are the same), but only pull requests and pushes build branches from the change sets'
/// texts, and only the diff, `--write` and pushes read the whole plan's.
pub fn plan_with(
    discovery: &Discovery,
    outcomes: &Chunked<Outcome>,
    group_by: impl Into<Groups>,
    keep: Keep,
) -> Plan {
    make(
        discovery,
        Sources::Shared(discovery),
        outcomes,
        (group_by.into(), keep),
    )
}

/// As [`plan_with`] keeping no text ([`Keep::Nothing`]), for a run whose output is the
/// report: the discovery's texts (and their fingerprints) are taken from it and given up
/// as soon as every edit is verified (docs/performance.md), and so are the references'
/// slots (where their values are: nothing edits after the plan,
/// [`Discovery::release_slots`]). The plan keeps no rows: [`Plan::rows`] makes them as
/// they are read. The texts discovery did not hold
/// ([`crate::discover::SourceTexts::NeededOnly`]) are proven without, or read again from
/// `files` where a proof needs them (refused if they changed meanwhile).
pub fn plan_giving_up_texts(
    discovery: &mut Discovery,
    outcomes: &Chunked<Outcome>,
    group_by: impl Into<Groups>,
    files: &dyn Files,
) -> Plan {
    let group_by = group_by.into();
    let sources = Sources::Taken(
        std::mem::take(&mut discovery.sources),
        std::mem::take(&mut discovery.fingerprints),
        files,
    );
    let (mut out, sets) = verified(discovery, sources, outcomes, (group_by, Keep::Nothing));
    // Nothing after the plan edits: where the values are goes too.
    discovery.release_slots();
    rows(discovery, outcomes, sets, (&mut out, Keep::Nothing));
    out
}

/// Where a plan reads again a file whose text discovery gave up: the plan itself reads
/// nothing, its caller hands it this ([`plan_giving_up_texts`]).
pub trait Files: Sync {
    /// The text of `file` (a normalised path in the repository) as it is at this moment.
    fn read_again(&self, file: &str) -> Result<String, crate::source::jail::Error>;
}

/// The repository's tree: the file read a second time, following no link
/// ([`Tree::read_again`]), at most as large as discovery reads one.
impl Files for Tree {
    fn read_again(&self, file: &str) -> Result<String, crate::source::jail::Error> {
        Tree::read_again(self, file, crate::discover::MAX_FILE_BYTES)
    }
}

/// The texts a plan edits, with their fingerprints: the discovery's, or taken from it with
/// the files to read again those it gave up ([`crate::discover::SourceTexts::NeededOnly`]).
enum Sources<'d> {
    Shared(&'d Discovery),
    Taken(
        BTreeMap<ArcStr, ArcStr>,
        crate::discover::Fingerprints,
        &'d dyn Files,
    ),
}

/// For `file`, whose text discovery gave up: `None` when `work`'s edits are proven without
/// it (and its new text is not kept), else the text read again.
fn without_text(
    files: &dyn Files,
    file: &str,
    fingerprint: yaml::Fingerprint,
    work: &FileWork,
    keep: &(dyn Fn(&str) -> bool + Sync),
) -> Result<Option<ArcStr>, (usize, usize, String)> {
    if !keep(file) {
        if let Some(proven) = in_lines::proven(work) {
            // Every test (a debug build) also makes the proof with the text, read again
            // (unless it changed or went meanwhile: then there is nothing to compare).
            if cfg!(debug_assertions) {
                if let Ok(text) = again(files, file, fingerprint, work) {
                    let with = change_file(Some(&text), Some(fingerprint), work);
                    assert_eq!(
                        proven,
                        with.map(|_| ()),
                        "{file}: proven without its text, not with it"
                    );
                }
            }
            return proven.map(|()| None);
        }
    }
    again(files, file, fingerprint, work).map(Some)
}

/// The text of `file`, which discovery read and gave up, read again ([`Files`]): refused
/// when it is not the text discovery read (`fingerprint` holds a keyed hash of it).
fn again(
    files: &dyn Files,
    file: &str,
    fingerprint: yaml::Fingerprint,
    work: &FileWork,
) -> Result<ArcStr, (usize, usize, String)> {
    let (line, column) = edits_at(work);
    let text = files
        .read_again(file)
        .map_err(|e| (line, column, format!("cannot read the file again: {e}")))?;
    if !fingerprint.read_in_one_pass_from(&text) {
        return Err((
            line,
            column,
            "the file changed while imagebump ran".to_string(),
        ));
    }
    Ok(text.into())
}

impl Sources<'_> {
    /// Where to read given-up texts from.
    fn files(&self) -> Option<&dyn Files> {
        match self {
            Sources::Shared(_) => None,
            Sources::Taken(_, _, files) => Some(*files),
        }
    }

    fn text(&self, file: &str) -> Option<&ArcStr> {
        match self {
            Sources::Shared(d) => d.sources.get(file),
            Sources::Taken(texts, _, _) => texts.get(file),
        }
    }

    fn fingerprint(&self, file: &str) -> Option<yaml::Fingerprint> {
        match self {
            Sources::Shared(d) => d.fingerprints.get(file).copied(),
            Sources::Taken(_, prints, _) => prints.get(file).copied(),
        }
    }
}

/// The plan, in two steps: every edit made and verified (the whole plan's, then each change
/// set's), with the texts; then, the texts given up when they were taken, the rows of the
/// report (the updates, and each change set's).
fn make(
    discovery: &Discovery,
    sources: Sources,
    outcomes: &Chunked<Outcome>,
    (group_by, keep): (Groups, Keep),
) -> Plan {
    let (mut out, sets) = verified(discovery, sources, outcomes, (group_by, keep));
    rows(discovery, outcomes, sets, (&mut out, keep));
    out
}

/// The plan's first step: every edit made and verified, the whole plan's and each change
/// set's; the texts (and the list of planned updates) are given up on return.
fn verified(
    discovery: &Discovery,
    sources: Sources,
    outcomes: &Chunked<Outcome>,
    (group_by, keep): (Groups, Keep),
) -> (Plan, Grouping) {
    let moves = Moves::new(discovery, outcomes);
    // Sized once (30,000 at 10,000 apps): grown by doubling, it held up to twice the room.
    let mut moved: Vec<RefIndex> = Vec::with_capacity(moves.count());
    moved.extend(moves.iter().map(|(at, _)| at));
    let mut out = Plan::default();
    let now = chart_lock::generated_time();
    // A chart's lock is completed from its chart's new text, whatever is kept (its
    // problems are the run's).
    let keep_file = |file: &str| keep != Keep::Nothing || chart_lock::involved(file);
    let (changed, refused) = changes_for(&sources, moves, moved, None, &keep_file);
    out.files_changed = changed.made();
    for (file, line, column, e) in refused {
        out.refused.insert(file.to_string());
        out.problems.push(Problem::at_file(
            file,
            line,
            column,
            format!("edit refused, file left unchanged: {e}"),
        ));
    }
    let mut sets = Grouping::of(moves, &out.refused, group_by);
    let branches = |_: &str| keep == Keep::Branches;
    sets.verify(
        &sources,
        (moves, &changed),
        &branches,
        (&now, &mut out.problems),
    );
    out.files = changed.changes();
    for (file, e) in chart_lock::complete(&mut out.files, &now) {
        out.problems.push(Problem::at_file(
            &file,
            0,
            0,
            format!("not regenerated: {e}; run `helm dependency update`"),
        ));
    }
    if keep == Keep::Nothing {
        out.files = Vec::new();
    }
    // Every edit is verified: texts taken from the discovery are given up on return, and
    // the list of planned updates (30,000 at 10,000 apps): rows a plan keeps are made in
    // their room, from the same updates found again.
    (out, sets)
}

/// The references that move, with their new tag and digest and what `verify` recorded of
/// each (few or none), in the references' order.
fn planned_verified<'a>(
    discovery: &'a Discovery,
    outcomes: &'a Chunked<Outcome>,
) -> impl Iterator<Item = (Planned<'a>, Option<&'a crate::verify::Verified>)> {
    (discovery.refs.iter().zip(outcomes)).filter_map(|(r, o)| moving(r, o))
}

/// The change sets of a plan's updates, and each update's: a few words per update, so that
/// the plan holds little more than its rows while it makes them.
struct Grouping {
    /// In the order of their groups (and so their problems).
    sets: Chunked<ChangeSet>,
    /// Each planned update's change set (`None`: its file's edit is refused).
    set_of: Vec<Option<SetIndex>>,
}

/// Who touches a file among the change sets: the plan's updates that touch it (as
/// [`work_by_file`] counts them) are all one change set's, or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Touchers {
    /// No update seen yet.
    NoneYet,
    One(SetIndex),
    /// Several change sets, or an update in none (its edit refused elsewhere): the whole
    /// plan's work on the file holds edits no one change set has.
    Many,
}

impl Touchers {
    /// As it is once an update of `set` is seen too.
    fn and(self, set: Option<SetIndex>) -> Touchers {
        match (self, set) {
            (Touchers::NoneYet, Some(set)) => Touchers::One(set),
            (Touchers::One(one), Some(set)) if one == set => self,
            _ => Touchers::Many,
        }
    }
}

impl Grouping {
    fn of(
        moves: Moves,
        refused: &std::collections::BTreeSet<String>,
        group_by: Groups,
    ) -> Grouping {
        // Each update's group, one string per group (a set of them, in the groups' order).
        let mut groups: std::collections::BTreeSet<ArcStr> = Default::default();
        let group_of: Vec<Option<ArcStr>> = (moves.iter())
            .map(|(_, (r, tag, _))| update_group(r, tag, refused, group_by, &mut groups))
            .collect();
        let index: BTreeMap<ArcStr, SetIndex> =
            groups.into_iter().zip((0..).map(SetIndex)).collect();
        let set_of: Vec<Option<SetIndex>> = (group_of.iter())
            .map(|g| index.get(g.as_ref()?).copied())
            .collect();
        drop(group_of);
        let mut sets: Chunked<ChangeSet> = (index.into_keys())
            .map(|group| ChangeSet {
                group,
                // Most change sets change one file.
                files: Vec::with_capacity(1),
                updates: Vec::new(),
                changes: Vec::new(),
            })
            .collect();
        for ((_, (r, _, _)), set) in moves.iter().zip(&set_of) {
            if let Some(change_set) = set.and_then(|set| sets.get_mut(set.get())) {
                add_touched_files(change_set, r);
            }
        }
        Grouping { sets, set_of }
    }

    /// Each change set's own file changes (its branch's content): its files hold only its
    /// own updates. They passed verification with all updates together (`changed`); alone
    /// they are verified again, unless a file's updates are all this change set's: then it
    /// is the same edit. The texts `keep` refuses are only verified.
    fn verify(
        &mut self,
        sources: &Sources,
        (moves, changed): (Moves, &Done),
        keep: &(dyn Fn(&str) -> bool + Sync),
        (now, problems): (&str, &mut Vec<Problem>),
    ) {
        for set in self.sets.iter_mut() {
            set.files.sort();
        }
        let nothing_to_do = self.nothing_to_do(moves, changed, keep);
        // A change set with nothing to do makes no pass, but in debug builds (so every
        // test), which make it anyway and check that it finds nothing.
        let passes = |set: SetIndex| {
            cfg!(debug_assertions) || !nothing_to_do.get(set.get()).copied().unwrap_or(true)
        };
        // The members of each change set that makes a pass, together, in update order: none
        // at all when no change set makes one.
        let mut members: Vec<(SetIndex, RefIndex)> = (moves.iter().map(|(at, _)| at))
            .zip(&self.set_of)
            .filter_map(|(at, &set)| Some((set.filter(|&s| passes(s))?, at)))
            .collect();
        members.sort_unstable();
        let mut rest = members.as_slice();
        for (at, set) in (0..).map(SetIndex).zip(self.sets.iter_mut()) {
            if !passes(at) {
                continue;
            }
            let n = rest.iter().take_while(|(s, _)| *s == at).count();
            let (mine, later) = rest.split_at(n);
            rest = later;
            let own: Vec<RefIndex> = mine.iter().map(|&(_, m)| m).collect();
            let (own, refused) = changes_for(sources, moves, own, Some(changed), keep);
            let nothing = nothing_to_do.get(at.get()).copied().unwrap_or(false);
            debug_assert!(
                !nothing
                    || (refused.is_empty() && own.0.iter().all(|(_, _, c)| matches!(c, Ok(None)))),
                "change set {} had work the whole plan did not verify",
                set.group
            );
            for (file, line, column, e) in refused {
                problems.push(Problem::at_file(
                    file,
                    line,
                    column,
                    format!("edit refused for change set {}: {e}", set.group),
                ));
            }
            set.changes = own.changes();
            chart_lock::complete(&mut set.changes, now);
        }
    }

    /// Whether each change set, by its index, has nothing to do of its own: every file it
    /// touches is touched by its updates alone, so its edit there is the whole plan's,
    /// verified already, and its text is not to be kept. Most change sets of a tree whose
    /// groups follow its directories are such.
    fn nothing_to_do(
        &self,
        moves: Moves,
        changed: &Done,
        keep: &(dyn Fn(&str) -> bool + Sync),
    ) -> Vec<bool> {
        let touched = self.touched(moves, changed);
        let touched_by = |file: &str| changed.index(file).and_then(|i| touched.get(i)).copied();
        ((0..).map(SetIndex).zip(self.sets.iter()))
            .map(|(at, set)| {
                let mine_alone = |f: &ArcStr| touched_by(f) == Some(Touchers::One(at)) && !keep(f);
                set.files.iter().all(mine_alone)
            })
            .collect()
    }

    /// Who touches each file the planned updates touch, by the file's place in `changed`
    /// (the whole plan's files, every one of them).
    fn touched(&self, moves: Moves, changed: &Done) -> Vec<Touchers> {
        let mut touched = vec![Touchers::NoneYet; changed.0.len()];
        let mut see = |at: Option<usize>, set: Option<SetIndex>| {
            if let Some(t) = at.and_then(|i| touched.get_mut(i)) {
                *t = t.and(set);
            }
        };
        // The references come file by file: their file is looked up once per run of them.
        let mut last: Option<(&ArcStr, Option<usize>)> = None;
        for ((_, (r, _, _)), &set) in moves.iter().zip(&self.set_of) {
            if !r.slots.is_empty() {
                let at = match last {
                    Some((file, at)) if ArcStr::ptr_eq(file, &r.file) => at,
                    _ => changed.index(&r.file),
                };
                last = Some((&r.file, at));
                see(at, set);
            }
            for c in r.creations() {
                see(changed.index(&c.file), set);
            }
        }
        touched
    }
}

/// The group of `r`'s update, `None` when a file it touches is `refused`: one string per
/// group, kept in `groups`. A group by app is the reference's unit, and a kustomization's
/// directory is too: shared with the reference, not copied.
fn update_group(
    r: &ImageRef,
    tag: &str,
    refused: &std::collections::BTreeSet<String>,
    group_by: Groups,
    groups: &mut std::collections::BTreeSet<ArcStr>,
) -> Option<ArcStr> {
    r.with_touched_files(|files| {
        if files.iter().any(|f| refused.contains(*f)) {
            return None;
        }
        let written = files.last().copied().unwrap_or(&*r.file);
        let mut key = group_key(r, written, group_by.by);
        if group_by.separate_major && is_major(r, tag) {
            key = Cow::Owned(format!("{key}{MAJOR_SUFFIX}"));
        }
        if let Some(group) = groups.get(&*key) {
            return Some(ArcStr::clone(group));
        }
        let group = if *key == *r.unit {
            ArcStr::clone(&r.unit)
        } else {
            ArcStr::from(key)
        };
        groups.insert(ArcStr::clone(&group));
        Some(group)
    })
}

/// Add the files `r`'s update touches to `change_set`'s, each once.
fn add_touched_files(change_set: &mut ChangeSet, r: &ImageRef) {
    r.with_touched_files(|files| {
        for &f in files {
            if !change_set.files.iter().any(|x| **x == *f) {
                // The reference's own file is shared; a created value's is not.
                let f = if *f == *r.file {
                    ArcStr::clone(&r.file)
                } else {
                    ArcStr::from(f)
                };
                change_set.files.push(f);
            }
        }
    });
}

/// The plan's rows, in the order of [`planned_verified`] (each with its change set's group,
/// but those `set_of` refuses), and each change set's indexes into them; a plan that keeps
/// no texts keeps only the indexes and what makes the rows again ([`Later`], [`Plan::rows`]).
fn rows(
    discovery: &Discovery,
    outcomes: &Chunked<Outcome>,
    grouping: Grouping,
    (out, keep): (&mut Plan, Keep),
) {
    let Grouping { mut sets, set_of } = grouping;
    if keep == Keep::Nothing {
        // Not kept: each change set's indexes only, the rows made when they are read.
        let mut count = 0usize;
        for set in &set_of {
            if let Some(set) = set.and_then(|set| sets.get_mut(set.get())) {
                set.updates.push(count);
                count = count.saturating_add(1);
            }
        }
        out.later = Some(Later {
            set_of,
            rows: count,
            app_versions: BTreeMap::new(),
        });
        out.change_sets = sets;
        return;
    }
    let mut spellings = Spellings::default();
    for (moved, set) in planned_verified(discovery, outcomes).zip(&set_of) {
        let Some(change_set) = set.and_then(|set| sets.get_mut(set.get())) else {
            continue;
        };
        change_set.updates.push(out.updates.len());
        out.updates.push(spellings.row(moved, &change_set.group));
    }
    out.change_sets = sets;
}

/// What [`Spellings`] spells once: a repository's name, or a version (a tag and digest).
#[derive(PartialEq, Eq, Hash)]
enum Spelled<'a> {
    Image(&'a ImageName),
    Version(&'a str, Option<&'a str>),
}

/// One string per repository and per version as spelled, shared by the rows that name it
/// (kept rows hold them to the end of the run; rows made as they are read do not spell
/// them again). Looked up for every row (foldhash, as discovery's names).
#[derive(Default)]
struct Spellings<'a>(foldhash::HashMap<Spelled<'a>, ArcStr>);

impl<'a> Spellings<'a> {
    /// The one string of `what`.
    fn spell(&mut self, what: Spelled<'a>) -> ArcStr {
        let spelled = self.0.entry(what).or_insert_with_key(|what| match what {
            Spelled::Image(image) => image.to_string().into(),
            Spelled::Version(tag, digest) => spell(tag, *digest).into(),
        });
        ArcStr::clone(spelled)
    }

    /// The row of a planned update (with what `verify` recorded of it) in the change set
    /// `group`.
    fn row(
        &mut self,
        ((r, tag, digest), verified): (Planned<'a>, Option<&'a crate::verify::Verified>),
        group: &ArcStr,
    ) -> Update {
        let written = r.written_file();
        let from = Spelled::Version(r.tag.as_deref().unwrap_or_default(), r.digest.as_deref());
        Update {
            file: ArcStr::clone(&r.file),
            line: r.line,
            column: r.column,
            kind: r.kind,
            image: self.spell(Spelled::Image(&r.image)),
            name: ArcStr::clone(&r.written),
            from: self.spell(from),
            to: self.spell(Spelled::Version(tag, digest)),
            group: ArcStr::clone(group),
            written_to: (*written != *r.file).then(|| written.into()),
            automerge: r.policy.spec.automerge == Some(true),
            verified: verified.map(|v| Box::new(v.clone())),
            app_version: None,
        }
    }
}

/// Where a refusal of `work`'s edits as a whole is reported: its first reference.
fn edits_at(work: &FileWork) -> (usize, usize) {
    let first = work.slots().next().map(|p| p.0);
    let first = first.or_else(|| work.creations().next().map(|(p, _)| p.0));
    first.map_or((0, 0), ImageRef::at)
}

/// The new text of one file: slot edits first, then created values. The error carries the
/// line and column to report.
/// `fingerprint`: of `before`'s values, from discovery's parse.
fn change_file(
    before: Option<&str>,
    fingerprint: Option<yaml::Fingerprint>,
    work: &FileWork,
) -> Result<String, (usize, usize, String)> {
    let text = before.unwrap_or_default();
    let mut edits = Vec::new();
    for (r, tag, digest) in work.slots() {
        let e = edits_for(r, text, tag, digest).map_err(|e| {
            let (line, column) = r.at();
            (line, column, e.to_string())
        })?;
        edits.extend(e);
    }
    let (line, column) = edits_at(work);
    let after = if edits.is_empty() {
        text.to_string()
    } else {
        yaml::apply_edits_known(text, &edits, fingerprint)
            .or_else(|e| match e {
                // A chart template's documents were read one by one.
                yaml::EditError::Reparse(_) if yaml::parse_located(text).is_err() => {
                    by_document::apply(text, &edits)
                }
                e => Err(e),
            })
            .map_err(|e| (line, column, e.to_string()))?
    };
    if work.creations.is_empty() {
        return Ok(after);
    }
    let creations: Vec<_> = work.creations().collect();
    let upserts =
        creation::upserts(&after, &creations).map_err(|e| (line, column, e.to_string()))?;
    yaml::apply_upserts(&after, &upserts).map_err(|e| (line, column, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Beside each reference, its outcome, and when it moves its planned update, are kept to
    /// the end of the run (docs/performance.md, "A shared string in one pointer"): one that
    /// grows is a choice, made here.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn an_outcome_and_an_update_stay_as_small_as_they_are() {
        assert_eq!(std::mem::size_of::<Outcome>(), 32);
        assert_eq!(std::mem::size_of::<Update>(), 88);
    }

    /// A tree of `files` in a new directory (kept while the result lives), discovered with
    /// the default configuration.
    fn discovered(files: &[(&str, &str)]) -> (tempfile::TempDir, Discovery) {
        let dir = crate::discover::tests::tree(files);
        let found = crate::discover::discover(
            &crate::source::tree::Tree::disk(dir.path()),
            &imagebump_model::config::Config::default(),
        );
        (dir, found)
    }

    /// A kustomization at `k` setting two images, and a values file at `v` naming two, each
    /// image `NAME:TAG`; discovered.
    fn kustomization_and_values(
        (k, k_images): (&str, [&str; 2]),
        (v, v_images): (&str, [&str; 2]),
    ) -> (tempfile::TempDir, Discovery) {
        let entries = k_images.map(|i| {
            let (name, tag) = i.split_once(':').unwrap();
            format!("- name: {name}\n  newTag: {tag}\n")
        });
        let kustomization = format!("images:\n{}", entries.concat());
        let [x, y] = v_images;
        let values = format!("x:\n  image: {x}\ny:\n  image: {y}\n");
        discovered(&[(k, &kustomization), (v, &values)])
    }

    /// Every reference of `found` updated to `tag`.
    /// A plan's rows, kept or made as they are read, as values.
    pub(super) fn rows_of(p: &Plan, found: &Discovery, outcomes: &Chunked<Outcome>) -> Vec<Update> {
        (p.rows(found, outcomes).iter())
            .map(Cow::into_owned)
            .collect()
    }

    /// Each change set's indexes into its plan's rows.
    fn indexes(p: &Plan) -> Vec<Vec<usize>> {
        p.change_sets.iter().map(|c| c.updates.clone()).collect()
    }

    pub(super) fn all_updated(found: &Discovery, tag: &str) -> Chunked<Outcome> {
        found.refs.iter().map(|_| updated_to(tag)).collect()
    }

    /// An update to `tag`, with no digest.
    fn updated_to(tag: &str) -> Outcome {
        Outcome::Update {
            tag: tag.into(),
            digest: None,
            verified: None,
        }
    }

    #[test]
    fn a_plan_keeping_fewer_texts_is_the_same_plan() {
        let (_dir, found) = kustomization_and_values(
            (
                "apps/a/kustomization.yaml",
                ["r.io/x:1.0.0", "r.io/y:2.0.0"],
            ),
            ("apps/b/values.yaml", ["r.io/x:1.0.0", "r.io/y:2.0.0"]),
        );
        assert_eq!(found.refs.len(), 4);
        let outcomes = all_updated(&found, "9.9.9");
        // By image: each file's updates fall in two change sets.
        let full = plan(&found, &outcomes, GroupBy::Image);
        let lean = plan_with(&found, &outcomes, GroupBy::Image, Keep::Files);
        assert_eq!(lean.updates, full.updates);
        assert_eq!(lean.files, full.files);
        assert_eq!(lean.problems, full.problems);
        assert_eq!(lean.refused, full.refused);
        // Without texts: the same plan, its files counted, not kept.
        let bare = plan_with(&found, &outcomes, GroupBy::Image, Keep::Nothing);
        // Its rows are not kept: made as they are read, the same rows.
        let rows = |p: &Plan| rows_of(p, &found, &outcomes);
        assert!(bare.updates.is_empty());
        assert_eq!(rows(&bare), rows(&full));
        assert_eq!((bare.update_count(), rows(&full).len()), (4, 4));
        assert_eq!(indexes(&bare), indexes(&full));
        assert_eq!(bare.problems, full.problems);
        assert_eq!(bare.refused, full.refused);
        assert_eq!(full.files_changed, 2);
        assert_eq!(bare.files_changed, full.files_changed);
        assert!(bare.files.is_empty());
        assert!(bare.change_sets.iter().all(|c| c.changes.is_empty()));
        assert_eq!(full.change_sets.len(), 2);
        assert_eq!(lean.change_sets.len(), 2);
        for (l, f) in lean.change_sets.iter().zip(&full.change_sets) {
            assert_eq!(
                (&l.group, &l.files, &l.updates),
                (&f.group, &f.files, &f.updates)
            );
            assert_eq!(f.changes.len(), 2, "{}", f.group);
            assert!(l.changes.is_empty(), "{}", l.group);
            // A change set's branch holds its own update only, not the whole plan's text
            // of the same file (its work there is smaller, so it is edited again).
            for c in &f.changes {
                let whole = full.files.iter().find(|w| w.file == c.file).unwrap();
                assert_ne!(c.after, whole.after, "{} {}", f.group, c.file);
                assert_eq!(c.after.matches("9.9.9").count(), 1, "{}", c.after);
            }
        }
        // By app, each file's updates are one change set's: its branch is the whole plan's
        // text of the file.
        let by_app = plan(&found, &outcomes, GroupBy::App);
        for set in &by_app.change_sets {
            for c in &set.changes {
                let whole = by_app.files.iter().find(|w| w.file == c.file).unwrap();
                assert_eq!(c.after, whole.after);
            }
        }
    }

    /// Change sets come in the order of their groups, whatever order their updates come
    /// in, and each lists exactly the updates of its group (by their index in the plan).
    #[test]
    fn change_sets_are_in_group_order_and_each_holds_its_own_updates() {
        let (_dir, found) = kustomization_and_values(
            (
                "apps/b/kustomization.yaml",
                ["r.io/z:1.0.0", "r.io/a:1.0.0"],
            ),
            ("apps/c/values.yaml", ["r.io/m:1.0.0", "r.io/a:1.0.0"]),
        );
        let outcomes = all_updated(&found, "2.0.0");
        for keep in [Keep::Nothing, Keep::Files, Keep::Branches] {
            // By image, the groups first appear as z, a, m: sorted, they are a, m, z.
            let made = plan_with(&found, &outcomes, GroupBy::Image, keep);
            assert_eq!(made.update_count(), 4, "{keep:?}");
            let groups: Vec<&str> = made.change_sets.iter().map(|c| &*c.group).collect();
            assert_eq!(groups, ["r.io/a", "r.io/m", "r.io/z"], "{keep:?}");
            let rows: Vec<Cow<Update>> = made.rows(&found, &outcomes).iter().collect();
            assert_eq!(rows.len(), 4, "{keep:?}");
            let mut listed: Vec<usize> = Vec::new();
            for set in &made.change_sets {
                assert!(!set.updates.is_empty(), "{}", set.group);
                for &i in &set.updates {
                    let u = &rows[i];
                    assert_eq!((&*u.group, &*u.image), (&*set.group, &*set.group));
                    assert!(set.files.iter().any(|f| **f == *u.file), "{}", set.group);
                }
                // A branch holds its own updates' new tags, and no other change set's.
                if keep == Keep::Branches {
                    assert_eq!(set.changes.len(), set.files.len(), "{}", set.group);
                }
                for c in &set.changes {
                    let own = (set.updates.iter())
                        .filter(|&&i| *rows[i].file == *c.file)
                        .count();
                    assert_eq!(c.after.matches("2.0.0").count(), own, "{}", c.after);
                }
                listed.extend(&set.updates);
            }
            listed.sort_unstable();
            assert_eq!(
                listed,
                (0..made.update_count()).collect::<Vec<_>>(),
                "{keep:?}"
            );
            let a = made.change_sets.get(0).expect("a change set");
            let a_files: Vec<&str> = a.files.iter().map(|f| &**f).collect();
            assert_eq!(a_files, ["apps/b/kustomization.yaml", "apps/c/values.yaml"]);
        }
    }

    /// The plan's work comes file by file in the files' bytewise order, each file's
    /// references in the order they were planned, however they were planned.
    #[test]
    fn work_is_grouped_by_file_in_file_order_keeping_the_planned_order() {
        let files = [
            (
                "b/values.yaml",
                "x:\n  image: r.io/x:1.0.0\ny:\n  image: r.io/y:1.0.0\n",
            ),
            ("a/values.yaml", "x:\n  image: r.io/x:1.0.0\n"),
            // '-' sorts before '/': bytewise, this file comes first.
            ("a-b/values.yaml", "x:\n  image: r.io/x:1.0.0\n"),
        ];
        let (_dir, found) = discovered(&files);
        let of = |file: &str, i: usize| {
            let at = (0..)
                .map(RefIndex)
                .zip(found.refs.iter())
                .filter(|(_, r)| &*r.file == file)
                .nth(i);
            let (at, _) = at.unwrap_or_else(|| panic!("{file} #{i}: {:?}", found.refs));
            at
        };
        let planned: Vec<RefIndex> = vec![
            of("b/values.yaml", 1),
            of("a/values.yaml", 0),
            of("b/values.yaml", 0),
            of("a-b/values.yaml", 0),
        ];
        let outcomes = all_updated(&found, "9.9.9");
        let work = work_by_file(Moves::new(&found, &outcomes), planned.clone());
        let order: Vec<&str> = work.iter().map(|(f, _)| *f).collect();
        assert_eq!(order, ["a-b/values.yaml", "a/values.yaml", "b/values.yaml"]);
        let slots: Vec<Vec<usize>> = work
            .iter()
            .map(|(_, w)| {
                let at = |p: &RefIndex| planned.iter().position(|q| q == p);
                w.slots.iter().filter_map(at).collect()
            })
            .collect();
        assert_eq!(slots, [vec![3], vec![1], vec![0, 2]]);
        assert!(work.iter().all(|(_, w)| w.creations.is_empty()));
        // Each file's slots are the planned updates of its references.
        for (file, w) in &work {
            assert!(w
                .slots()
                .all(|(r, tag, _)| &*r.file == *file && tag == "9.9.9"));
            assert_eq!(w.slots().count(), w.slots.len(), "{file}");
        }
    }

    /// The reference of `found` in `file`, creating a value in each file of `into`.
    fn creating_in(found: &Discovery, file: &str, into: &[&str]) -> ImageRef {
        let mut r = found.refs.iter().find(|r| &*r.file == file).cloned();
        let r = r
            .as_mut()
            .unwrap_or_else(|| panic!("{file}: {:?}", found.refs));
        for &f in into {
            r.extra_mut().creations.push(Creation {
                file: f.to_string(),
                doc: 0,
                path: Vec::new(),
                what: crate::discover::Created::Key {
                    value: crate::discover::Template::Tag,
                },
            });
        }
        r.clone()
    }

    /// Values to create join their file's work, after its slots and in the order they were
    /// planned; a file that only receives created values gets work of its own, in the
    /// files' order (bytewise).
    #[test]
    fn created_values_join_their_files_work_in_the_planned_order() {
        let files = [
            ("b/values.yaml", "x:\n  image: r.io/x:1.0.0\n"),
            ("d/values.yaml", "x:\n  image: r.io/x:1.0.0\n"),
        ];
        let (_dir, found) = discovered(&files);
        let creating = |file: &str, into: &[&str]| creating_in(&found, file, into);
        // `b`'s reference creates in `d` (which has slots) and in `c` and `a` (which have
        // none); `d`'s reference creates in `a` and `d`.
        let refs = [
            creating(
                "b/values.yaml",
                &["d/values.yaml", "c/values.yaml", "a/values.yaml"],
            ),
            creating("d/values.yaml", &["a/values.yaml", "d/values.yaml"]),
        ];
        let refs: Chunked<ImageRef> = refs.into_iter().collect();
        let outcomes: Chunked<Outcome> = refs.iter().map(|_| updated_to("9.9.9")).collect();
        let moves = Moves {
            refs: &refs,
            outcomes: &outcomes,
        };
        let work = work_by_file(moves, vec![RefIndex(0), RefIndex(1)]);
        let order: Vec<&str> = work.iter().map(|(f, _)| *f).collect();
        let all = [
            "a/values.yaml",
            "b/values.yaml",
            "c/values.yaml",
            "d/values.yaml",
        ];
        assert_eq!(order, all);
        // Each file's work: the planned index of each slot's reference, then of each created
        // value's.
        let index = |r: &ImageRef| refs.iter().position(|q| std::ptr::eq(q, r));
        type Indexes = Vec<Option<usize>>;
        let shape: Vec<(Indexes, Indexes)> = work
            .iter()
            .map(|(_, w)| {
                let slots = w.slots().map(|p| index(p.0)).collect();
                let made = w.creations().map(|(p, _)| index(p.0)).collect();
                (slots, made)
            })
            .collect();
        assert_eq!(
            shape,
            [
                (vec![], vec![Some(0), Some(1)]),
                (vec![Some(0)], vec![]),
                (vec![], vec![Some(0)]),
                (vec![Some(1)], vec![Some(0), Some(1)]),
            ]
        );
        for (file, w) in &work {
            assert!(w.creations().all(|(_, c)| c.file == *file), "{file}");
        }
    }

    /// The strings kept per reference and per update are shared, not copied: one tag per
    /// distinct tag, one version per distinct spelling, and a slot reads its bytes in the
    /// file's text (a text that no longer holds them refuses the file's edit, no panic).
    #[test]
    fn tags_and_versions_are_shared_and_slots_read_the_text() {
        let files = [
            ("a/values.yaml", "x:\n  image: r.io/x:1.0.0\n"),
            ("b/values.yaml", "y:\n  image: r.io/x:1.0.0\n"),
        ];
        let (_dir, mut found) = discovered(&files);
        let [a, b] = &found.refs.iter().collect::<Vec<_>>()[..] else {
            panic!("{:?}", found.refs)
        };
        let (ta, tb) = (a.tag.as_ref().unwrap(), b.tag.as_ref().unwrap());
        assert!(ArcStr::ptr_eq(ta, tb), "one copy of the tag 1.0.0");
        let new = Outcome::Update {
            tag: "2.0.0".into(),
            digest: None,
            verified: None,
        };
        let outcomes = Chunked::from(vec![new.clone(), new]);
        let made = plan_with(&found, &outcomes, GroupBy::App, Keep::Files);
        let [u, v] = &made.updates.iter().collect::<Vec<_>>()[..] else {
            panic!("{:?}", made.updates)
        };
        assert!(ArcStr::ptr_eq(&u.from, &v.from) && ArcStr::ptr_eq(&u.to, &v.to));
        assert_eq!((&*u.from, &*u.to), ("1.0.0", "2.0.0"));
        assert_eq!(made.files[0].after, "x:\n  image: r.io/x:2.0.0\n");
        // The text kept for the plan is shorter than where discovery found the value.
        found
            .sources
            .insert("a/values.yaml".into(), "x: 1\n".into());
        let made = plan_with(&found, &outcomes, GroupBy::App, Keep::Files);
        assert_eq!(made.refused.len(), 1, "{:?}", made.problems);
        assert!(
            made.problems
                .iter()
                .any(|p| p.location.starts_with("a/values.yaml")
                    && p.message.contains("not where discovery found it")),
            "{:?}",
            made.problems
        );
        assert_eq!(made.updates.len(), 1);
    }

    /// Every reference of `found` updated: a chart to 1.1.0, an image to 2.0.0 (with
    /// `new_digest` where a digest is pinned), `r.io/y`'s signature verified.
    fn charts_and_images_updated(found: &Discovery, new_digest: &str) -> Chunked<Outcome> {
        (found.refs.iter())
            .map(|r| Outcome::Update {
                tag: if r.kind == RefKind::HelmChart {
                    "1.1.0"
                } else {
                    "2.0.0"
                }
                .into(),
                digest: r.digest.as_ref().map(|_| new_digest.into()),
                verified: (*r.written == *"r.io/y").then(|| {
                    Box::new(crate::verify::Verified {
                        digest: new_digest.to_string(),
                        signer: "key cosign.pub".into(),
                        gates: Vec::new(),
                    })
                }),
            })
            .collect()
    }

    /// A plan that does not keep its rows makes them as they are read, each as the plan that
    /// keeps them holds it: with a digest, a signature verified, a chart's appVersion change,
    /// and none for a file whose edit is refused.
    #[test]
    fn rows_made_when_read_are_the_rows_a_plan_keeps() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let chart = "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n  - name: web\n    version: 1.0.0\n    repository: https://charts.example.com\n";
        let pinned = format!("x:\n  image: r.io/x:1.0.0@{digest}\ny:\n  image: r.io/y:1.0.0\n");
        let (_dir, found) = discovered(&[
            ("umbrella/Chart.yaml", chart),
            ("apps/a/values.yaml", &pinned),
            ("apps/b/values.yaml", "z:\n  image: r.io/z:1.0.0\n"),
        ]);
        assert_eq!(found.refs.len(), 4, "{:?}", found.problems);
        let new_digest = format!("sha256:{}", "b".repeat(64));
        let outcomes = charts_and_images_updated(&found, &new_digest);
        let lookup = |chart: &str, from: &str, to: &str| {
            Some(crate::chart::app_version::AppVersionChange {
                from: Some(format!("{chart} {from}")),
                to: Some(to.to_string()),
            })
        };
        let rows = |p: &Plan| rows_of(p, &found, &outcomes);
        for keep in [Keep::Files, Keep::Nothing] {
            let mut made = plan_with(&found, &outcomes, GroupBy::App, keep);
            fill_app_versions(&mut made, (&found, &outcomes), lookup);
            assert_eq!(made.update_count(), 4, "{keep:?} {:?}", made.problems);
            assert_eq!(made.updates.is_empty(), keep == Keep::Nothing);
        }
        let mut kept = plan_with(&found, &outcomes, GroupBy::App, Keep::Files);
        let mut made = plan_with(&found, &outcomes, GroupBy::App, Keep::Nothing);
        fill_app_versions(&mut kept, (&found, &outcomes), lookup);
        fill_app_versions(&mut made, (&found, &outcomes), lookup);
        let all = rows(&made);
        assert_eq!(all, rows(&kept));
        assert!(all.iter().any(|u| u.to.ends_with(&new_digest)));
        assert!(all.iter().any(|u| u.verified.is_some()));
        assert!(all.iter().any(|u| u.app_version.is_some()));
        assert_eq!(made.rows(&found, &outcomes).len(), 4);
        // The file of `x` is refused (its new digest is unknown): no row for `x`, nor for
        // `y` in the same file.
        let refused = Chunked::from(
            (found.refs.iter().zip(&outcomes))
                .map(|(r, o)| match &*r.written {
                    "r.io/x" => Outcome::Update {
                        tag: "2.0.0".into(),
                        digest: None,
                        verified: None,
                    },
                    _ => o.clone(),
                })
                .collect::<Vec<_>>(),
        );
        let kept = plan_with(&found, &refused, GroupBy::App, Keep::Files);
        let made = plan_with(&found, &refused, GroupBy::App, Keep::Nothing);
        assert_eq!(made.refused.len(), 1, "{:?}", made.problems);
        assert_eq!(
            rows_of(&made, &found, &refused),
            rows_of(&kept, &found, &refused)
        );
        assert_eq!(made.update_count(), 2);
        assert_eq!(indexes(&made), indexes(&kept));
    }

    /// A file is one change set's while every update that touches it is that change set's;
    /// a second change set, or an update in none, makes it no one change set's for good.
    #[test]
    fn a_file_is_touched_by_one_change_set_only_while_every_update_is_its() {
        let (a, b) = (Some(SetIndex(0)), Some(SetIndex(1)));
        let seen = |sets: &[Option<SetIndex>]| {
            (sets.iter()).fold(Touchers::NoneYet, |touched, &set| touched.and(set))
        };
        assert_eq!(seen(&[]), Touchers::NoneYet);
        assert_eq!(seen(&[a, a, a]), Touchers::One(SetIndex(0)));
        assert_eq!(seen(&[a, b]), Touchers::Many);
        assert_eq!(seen(&[a, b, a]), Touchers::Many);
        assert_eq!(seen(&[None]), Touchers::Many);
        assert_eq!(seen(&[b, None, b]), Touchers::Many);
    }

    /// One string per image and per version, whichever row names it first; a version as
    /// from and as to is the same string.
    #[test]
    fn spellings_give_one_string_per_image_and_version() {
        let image = ImageName {
            registry: "r.io".into(),
            repository: "x".into(),
        };
        let mut spellings = Spellings::default();
        let one = spellings.spell(Spelled::Version("1.0.0", None));
        let pinned = spellings.spell(Spelled::Version("1.0.0", Some("sha256:a")));
        let x = spellings.spell(Spelled::Image(&image));
        assert_eq!(
            (&*one, &*pinned, &*x),
            ("1.0.0", "1.0.0@sha256:a", "r.io/x")
        );
        let again = spellings.spell(Spelled::Version("1.0.0", None));
        assert!(ArcStr::ptr_eq(&one, &again));
        assert!(ArcStr::ptr_eq(&x, &spellings.spell(Spelled::Image(&image))));
        assert_eq!(spellings.0.len(), 3);
    }

    #[test]
    fn a_lock_that_cannot_be_completed_is_reported_whatever_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let chart = "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n  - name: web\n    version: 1.0.0\n    repository: https://charts.example.com\n";
        // No `digest:` to update.
        let lock = "dependencies:\n- name: web\n  repository: https://charts.example.com\n  version: 1.0.0\ngenerated: \"2024-01-01T00:00:00Z\"\n";
        std::fs::create_dir_all(dir.path().join("umbrella")).unwrap();
        std::fs::write(dir.path().join("umbrella/Chart.yaml"), chart).unwrap();
        std::fs::write(dir.path().join("umbrella/Chart.lock"), lock).unwrap();
        let found = crate::discover::discover(
            &crate::source::tree::Tree::disk(dir.path()),
            &imagebump_model::config::Config::default(),
        );
        assert!(!found.refs.is_empty(), "{:?}", found.problems);
        let outcomes = all_updated(&found, "1.1.0");
        let files = plan_with(&found, &outcomes, GroupBy::App, Keep::Files);
        let bare = plan_with(&found, &outcomes, GroupBy::App, Keep::Nothing);
        assert!(
            files
                .problems
                .iter()
                .any(|p| p.message.contains("not regenerated")),
            "{:?}",
            files.problems
        );
        assert_eq!(bare.problems, files.problems);
        assert_eq!(bare.files_changed, files.files.len());
        assert!(bare.files.is_empty());
    }
}
