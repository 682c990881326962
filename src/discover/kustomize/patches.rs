//! Patches (`patches:` with or without `target:`, `patchesStrategicMerge:`,
//! `patchesJson6902:`, files and inline) and `replacements:`: what each one does to a
//! container's image, so that placement knows which file the render reads an image from.
//!
//! Kustomize applies a kustomization's patches to everything it includes, before its own
//! `images:` entries, and its replacements after them. A patch that writes `image:` for a
//! container replaces whatever the bases wrote there; a patch document with `$patch:
//! delete` removes the resource from everything above it, a `$patch: replace` the
//! containers the patch does not write. A JSON 6902 `replace`/`add` of
//! `…/containers/N/image` sets the image of the container at that place of its target.

use arcstr::ArcStr;
use imagebump_yaml::{Node, PathSeg};

/// A container of a resource: what an image's value belongs to, and what patches match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    pub kind: Box<str>,
    pub name: Box<str>,
    pub container: Box<str>,
    /// Its place in `containers[]` (or `initContainers[]`, `init`): what a JSON 6902
    /// path names.
    pub init: bool,
    pub index: usize,
}

/// One patch as a kustomization lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// The patch file as written (`None`: inline).
    pub path: Option<Box<str>>,
    /// The line of the list item in the kustomization.
    pub line: u32,
    pub target: Option<Target>,
    /// What an inline patch does (a file's effects are read once every file is known).
    pub inline: Box<[Effect]>,
}

/// A `target:`: the resources a patch applies to, whatever its own `metadata.name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub kind: Option<Box<str>>,
    /// A regular expression, as kustomize reads it (`None`: any name, also when a label or
    /// annotation selector picks the resources: imagebump cannot evaluate those, so it
    /// assumes the patch reaches every resource of the kind and never edits under it).
    pub name: Option<Box<str>>,
}

/// What one patch document does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    pub kind: Box<str>,
    /// `None`: any name (a `target:` without one).
    pub name: Option<Box<str>>,
    pub what: What,
    /// The file that holds the patch (the kustomization for an inline one) and the line of
    /// what it writes.
    pub file: ArcStr,
    pub line: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// It writes the image of this container.
    SetsImage(Box<str>),
    /// A JSON 6902 `replace` or `add` of `…/containers/N/image`, or a `replace` of
    /// `…/containers/N` with a container that has an image (`init`: of `initContainers`).
    SetsImageAt { init: bool, index: usize },
    /// `$patch: delete`: the resource is not rendered.
    Deletes,
    /// A `$patch: replace` of a containers list (or of a map above it): every container of
    /// the list but those the patch writes (`keep`) is gone from the render.
    Replaces { init: bool, keep: Box<[Box<str>]> },
    /// A container item with `$patch: delete`: that container is gone from the render.
    DeletesContainer { init: bool, container: Box<str> },
    /// A JSON 6902 `remove` of `…/containers/N`.
    RemovesAt { init: bool, index: usize },
    /// A replacement into `…containers.*.image`: every container of the list.
    SetsEveryImage { init: bool },
    /// The `image:` of a container item that carries a `$patch` directive: kustomize does
    /// not render it (the item is deleted, or its `replace` leaves the base's container as
    /// it was).
    NotRendered,
}

impl What {
    /// It removes the container it reaches from the render.
    pub fn removes(&self) -> bool {
        matches!(
            self,
            What::Deletes
                | What::Replaces { .. }
                | What::DeletesContainer { .. }
                | What::RemovesAt { .. }
        )
    }

    /// Why a container it reaches is not rendered, for the report.
    pub fn removal(&self) -> &'static str {
        match self {
            What::Replaces { .. } => "$patch: replace",
            What::RemovesAt { .. } => "op: remove",
            _ => "$patch: delete",
        }
    }
}

impl Effect {
    /// It applies to `c` (a delete to any container of the resource).
    pub fn reaches(&self, c: &Container) -> bool {
        // The name last: it may be a regular expression.
        let named = || match &self.name {
            None => true,
            Some(n) => names_match(n, &c.name),
        };
        let kind = *self.kind == *c.kind || &*self.kind == "*";
        kind && self.what_reaches(c) && named()
    }

    fn what_reaches(&self, c: &Container) -> bool {
        match &self.what {
            What::Deletes => true,
            What::SetsImage(container) => *container == c.container,
            What::SetsImageAt { init, index } => *init == c.init && *index == c.index,
            What::Replaces { init, keep } => *init == c.init && !keep.contains(&c.container),
            What::DeletesContainer { init, container } => {
                *init == c.init && *container == c.container
            }
            What::RemovesAt { init, index } => *init == c.init && *index == c.index,
            What::SetsEveryImage { init } => *init == c.init,
            What::NotRendered => false,
        }
    }
}

impl Effect {
    /// The container it writes the image of, as far as the patch alone says (the
    /// container's name, or its place in the list).
    pub fn container(&self) -> Option<Container> {
        let (container, init, index) = match &self.what {
            What::SetsImage(name) => (name.clone(), false, usize::MAX),
            What::SetsImageAt { init, index } => (Box::default(), *init, *index),
            _ => return None,
        };
        Some(Container {
            kind: self.kind.clone(),
            name: self.name.clone().unwrap_or_default(),
            container,
            init,
            index,
        })
    }
}

/// A target name is an anchored regular expression; a name that is not one is compared as
/// written.
fn names_match(pattern: &str, name: &str) -> bool {
    if pattern == name {
        return true;
    }
    // A name without a metacharacter matches only itself: no expression to build.
    if !pattern.contains(|ch: char| "\\.+*?()|[]{}^$".contains(ch)) {
        return false;
    }
    regex::Regex::new(&format!("^(?:{pattern})$")).is_ok_and(|re| re.is_match(name))
}

/// The effects of one patch document `root`, found in `file`; `line_of` gives a node's
/// line in that file.
pub fn effects(
    root: &Node,
    target: Option<&Target>,
    file: &ArcStr,
    line_of: &dyn Fn(usize) -> u32,
) -> Vec<Effect> {
    if let Node::Seq { items, .. } = root {
        return json6902(items, target, file, line_of);
    }
    let own_kind = root.get("kind").and_then(Node::str_value);
    let own_name = (root.get("metadata"))
        .and_then(|m| m.get("name"))
        .and_then(Node::str_value);
    let (kind, name) = match target {
        Some(t) => (
            t.kind.as_deref().or(own_kind).unwrap_or("*"),
            t.name.as_deref(),
        ),
        None => match (own_kind, own_name) {
            (Some(k), Some(n)) => (k, Some(n)),
            _ => return Vec::new(),
        },
    };
    let effect = |what, offset| Effect {
        kind: kind.into(),
        name: name.map(Box::from),
        what,
        file: ArcStr::clone(file),
        line: line_of(offset),
    };
    if root.get("$patch").and_then(Node::str_value) == Some("delete") {
        return vec![effect(What::Deletes, root.offset())];
    }
    let mut out = Vec::new();
    containers(root, &mut |name, item, image| {
        let what = match item.get("$patch") {
            Some(_) => What::NotRendered,
            None => What::SetsImage(name.into()),
        };
        out.push(effect(what, image.offset()));
    });
    removals(root, false, &mut |what, offset| {
        out.push(effect(what, offset))
    });
    out
}

/// The `$patch: replace` and `$patch: delete` directives below the patch's root that drop
/// containers: a replaced pod spec (or a map above it; kustomize ignores one at the root)
/// keeps only the containers of the patch, a replaced list only its own items, a deleted
/// item drops its container. `replaced`: a map at or above `node` is replaced.
fn removals(node: &Node, replaced: bool, found: &mut dyn FnMut(What, usize)) {
    let Node::Map { entries, .. } = node else {
        return;
    };
    let replaces = |n: &Node| n.get("$patch").and_then(Node::str_value) == Some("replace");
    let name = |i: &Node| i.get("name").and_then(Node::str_value).map(Box::from);
    // The list's directive is an item of its own, without a name.
    let directive = |i: &Node| replaces(i) && i.get("name").is_none();
    let pod_spec = node.get("containers").is_some() || node.get("initContainers").is_some();
    for (init, key) in [(false, "containers"), (true, "initContainers")] {
        let value = node.get(key);
        let items = match value {
            Some(Node::Seq { items, .. }) => items.as_slice(),
            _ => &[],
        };
        if (replaced && pod_spec) || items.iter().any(directive) {
            let kept = |i: &&Node| i.get("$patch").is_none();
            let keep = items.iter().filter(kept).filter_map(name).collect();
            found(
                What::Replaces { init, keep },
                value.unwrap_or(node).offset(),
            );
        }
        for item in items {
            let deletes = item.get("$patch").and_then(Node::str_value) == Some("delete");
            if let (true, Some(container)) = (deletes, name(item)) {
                found(What::DeletesContainer { init, container }, item.offset());
            }
        }
    }
    for (key, value) in entries {
        if key.name != "containers" && key.name != "initContainers" {
            removals(value, replaced || replaces(value), found);
        }
    }
}

/// The image writes of a JSON 6902 patch (a list of operations), which always has a
/// `target:`.
fn json6902(
    ops: &[Node],
    target: Option<&Target>,
    file: &ArcStr,
    line_of: &dyn Fn(usize) -> u32,
) -> Vec<Effect> {
    let Some(t) = target else {
        return Vec::new();
    };
    let effect = |what, offset| Effect {
        kind: t.kind.as_deref().unwrap_or("*").into(),
        name: t.name.clone(),
        what,
        file: ArcStr::clone(file),
        line: line_of(offset),
    };
    // Operations without a value: a `remove` drops a container, a `copy` or `move` into an
    // image writes it from elsewhere in the resource.
    let others = ops.iter().filter_map(|op| {
        let kind = op.get("op").and_then(Node::str_value)?;
        let path = op.get("path").and_then(Node::str_value)?;
        let what = match (kind, container_pointer(path)?) {
            (
                "remove",
                Pointer::Container {
                    init,
                    index: Some(index),
                },
            ) => What::RemovesAt { init, index },
            ("copy" | "move", Pointer::Image { init, index }) => What::SetsImageAt { init, index },
            _ => return None,
        };
        Some(effect(what, op.offset()))
    });
    (json6902_images(ops).into_iter())
        .map(|op| effect(op.what, op.image.span.start))
        .chain(others)
        .collect()
}

/// One JSON 6902 operation that writes a container's image.
pub struct ImageOp<'n> {
    /// The operation's place in the list.
    pub index: usize,
    /// Where the image is below the operation: `value`, or `value.image`.
    pub path: Vec<PathSeg>,
    pub image: &'n imagebump_yaml::Scalar,
    pub what: What,
}

/// The operations of a JSON 6902 patch that write a container's image: a `replace` or
/// `add` of `…/containers/N/image`, a `replace` of `…/containers/N` (the image of the
/// container it puts there), an `add` of `…/containers/N` or `…/containers/-` (a new
/// container, by its name).
pub fn json6902_images(ops: &[Node]) -> Vec<ImageOp<'_>> {
    let mut out = Vec::new();
    for (index, op) in ops.iter().enumerate() {
        let kind = op.get("op").and_then(Node::str_value);
        let (Some(path), Some(value)) = (op.get("path").and_then(Node::str_value), op.get("value"))
        else {
            continue;
        };
        let Some(pointer) = container_pointer(path) else {
            continue;
        };
        let key = |k: &str| PathSeg::Key(k.into());
        let found = match (kind, pointer) {
            (Some("replace" | "add"), Pointer::Image { init, index }) => value
                .as_scalar()
                .map(|s| (vec![key("value")], s, What::SetsImageAt { init, index })),
            (
                Some("replace"),
                Pointer::Container {
                    init,
                    index: Some(index),
                },
            ) => (value.get("image").and_then(Node::as_scalar)).map(|s| {
                (
                    vec![key("value"), key("image")],
                    s,
                    What::SetsImageAt { init, index },
                )
            }),
            (Some("add"), Pointer::Container { .. }) => {
                let name = value.get("name").and_then(Node::str_value);
                (value.get("image").and_then(Node::as_scalar).zip(name)).map(|(s, n)| {
                    (
                        vec![key("value"), key("image")],
                        s,
                        What::SetsImage(n.into()),
                    )
                })
            }
            _ => None,
        };
        if let Some((path, image, what)) = found {
            out.push(ImageOp {
                index,
                path,
                image,
                what,
            });
        }
    }
    out
}

/// The container images that replacements (each with `source` and `targets`) copy a value
/// into, by their targets' `select` and `fieldPaths`.
pub fn replacement_targets(
    replacements: &[Node],
    file: &ArcStr,
    line_of: &dyn Fn(usize) -> u32,
) -> Vec<Effect> {
    let mut out = Vec::new();
    let targets = replacements.iter().filter_map(|r| match r.get("targets") {
        Some(Node::Seq { items, .. }) => Some(items),
        _ => None,
    });
    for target in targets.flatten() {
        let select = target.get("select");
        let text = |key: &str| {
            (select.and_then(|s| s.get(key)))
                .and_then(Node::str_value)
                .map(Box::from)
        };
        let paths = match target.get("fieldPaths") {
            Some(Node::Seq { items, .. }) => items.as_slice(),
            _ => &[],
        };
        for path in paths.iter().filter_map(Node::as_scalar) {
            let Some(what) = field_path_image(&path.value) else {
                continue;
            };
            out.push(Effect {
                kind: text("kind").unwrap_or_else(|| "*".into()),
                name: text("name"),
                what,
                file: ArcStr::clone(file),
                line: line_of(path.span.start),
            });
        }
    }
    out
}

/// The container image a kustomize field path (`replacements:` targets) names:
/// `…containers.[name=app].image`, `…containers.0.image` or `…containers.*.image` (and
/// `initContainers`).
pub fn field_path_image(path: &str) -> Option<What> {
    let mut parts = path.rsplit('.');
    (parts.next()? == "image").then_some(())?;
    let item = parts.next()?;
    let init = match parts.next()? {
        "containers" => false,
        "initContainers" => true,
        _ => return None,
    };
    if item == "*" {
        return Some(What::SetsEveryImage { init });
    }
    if let Some(name) = (item.strip_prefix("[name=")).and_then(|n| n.strip_suffix(']')) {
        return Some(What::SetsImage(name.into()));
    }
    Some(What::SetsImageAt {
        init,
        index: item.parse().ok()?,
    })
}

/// What a JSON pointer names in a containers list.
#[derive(Debug, PartialEq, Eq)]
enum Pointer {
    /// `…/containers/N/image`.
    Image { init: bool, index: usize },
    /// `…/containers/N` (`None`: `-`, the end of the list).
    Container { init: bool, index: Option<usize> },
}

fn container_pointer(path: &str) -> Option<Pointer> {
    let list = |name: &str| match name {
        "containers" => Some(false),
        "initContainers" => Some(true),
        _ => None,
    };
    let mut parts = path.rsplit('/');
    let last = parts.next()?;
    if last == "image" {
        let index = parts.next()?.parse().ok()?;
        let init = list(parts.next()?)?;
        return Some(Pointer::Image { init, index });
    }
    let index = match last {
        "-" => None,
        i => Some(i.parse().ok()?),
    };
    let init = list(parts.next()?)?;
    Some(Pointer::Container { init, index })
}

/// Every `containers[]`/`initContainers[]` item below `node` that writes `image:`, by its
/// `name` (the key strategic merge merges them by), with the item and its image.
fn containers(node: &Node, found: &mut dyn FnMut(&str, &Node, &Node)) {
    match node {
        Node::Map { entries, .. } => {
            for (key, value) in entries {
                let is_list = key.name == "containers" || key.name == "initContainers";
                if let (true, Node::Seq { items, .. }) = (is_list, value) {
                    for item in items {
                        let name = item.get("name").and_then(Node::str_value);
                        if let (Some(name), Some(image)) = (name, item.get("image")) {
                            found(name, item, image);
                        }
                    }
                } else {
                    containers(value, found);
                }
            }
        }
        Node::Seq { items, .. } => items.iter().for_each(|i| containers(i, found)),
        Node::Scalar(_) | Node::Other { .. } => {}
    }
}

/// The container the image at `path` in document `root` belongs to: the innermost
/// resource on the path (a `List` item, or the document), and the `name` of the
/// `containers[]`/`initContainers[]` item.
pub fn container_at(root: &Node, path: &[PathSeg]) -> Option<Container> {
    let [.., PathSeg::Key(list), PathSeg::Index(index), PathSeg::Key(image)] = path else {
        return None;
    };
    if image != "image" || (list != "containers" && list != "initContainers") {
        return None;
    }
    let mut node = root;
    let mut resource = root;
    let item_at = path.len().saturating_sub(1);
    for seg in path.get(..item_at)? {
        node = match (seg, node) {
            (PathSeg::Key(k), n) => n.get(k)?,
            (PathSeg::Index(i), Node::Seq { items, .. }) => items.get(*i)?,
            _ => return None,
        };
        if node.get("kind").is_some() && node.get("apiVersion").is_some() {
            resource = node;
        }
    }
    let text = |n: &Node, key: &str| n.get(key).and_then(Node::str_value).map(Box::from);
    Some(Container {
        kind: text(resource, "kind")?,
        name: resource.get("metadata").and_then(|m| text(m, "name"))?,
        container: text(node, "name")?,
        init: list == "initContainers",
        index: *index,
    })
}

/// The `target:` of a `patches:` item.
pub fn target(item: &Node) -> Option<Target> {
    let t = item.get("target")?;
    let text = |key: &str| t.get(key).and_then(Node::str_value).map(Box::from);
    Some(Target {
        kind: text("kind"),
        name: text("name"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Node {
        let docs = imagebump_yaml::parse_located(text).unwrap();
        docs[0].root.clone().unwrap()
    }

    const PATCH: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: app:3.0\n";

    #[test]
    fn a_patch_sets_the_image_of_its_container() {
        let file = ArcStr::from("envs/prod/version.yaml");
        let e = effects(&doc(PATCH), None, &file, &|o| o as u32);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].what, What::SetsImage("app".into()));
        assert_eq!(e[0].line, PATCH.find("app:3.0").unwrap() as u32);
        let c = |kind: &str, name: &str, container: &str| Container {
            kind: kind.into(),
            name: name.into(),
            container: container.into(),
            init: false,
            index: 0,
        };
        assert!(e[0].reaches(&c("Deployment", "app", "app")));
        assert!(!e[0].reaches(&c("Deployment", "app", "sidecar")));
        assert!(!e[0].reaches(&c("Deployment", "web", "app")));
        assert!(!e[0].reaches(&c("StatefulSet", "app", "app")));
        // A target replaces the patch's own name; its name is a regular expression.
        let t = Target {
            kind: Some("Deployment".into()),
            name: Some("web-.*".into()),
        };
        let e = effects(&doc(PATCH), Some(&t), &file, &|_| 1);
        assert!(e[0].reaches(&c("Deployment", "web-eu", "app")));
        assert!(!e[0].reaches(&c("Deployment", "app", "app")));
        // A plain name is compared as written; one with a metacharacter is an expression.
        assert!(!names_match("app", "app2"));
        assert!(names_match("app|web", "web"));
        assert!(names_match("my.app", "myxapp"));
    }

    #[test]
    fn a_delete_reaches_every_container_of_its_resource() {
        let text =
            "$patch: delete\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n";
        let e = effects(&doc(text), None, &"p.yaml".into(), &|_| 1);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].what, What::Deletes);
        let any = Container {
            kind: "Deployment".into(),
            name: "app".into(),
            container: "whatever".into(),
            init: false,
            index: 3,
        };
        assert!(e[0].reaches(&any));
    }

    #[test]
    fn the_container_of_an_image() {
        let root = doc(PATCH);
        let path: Vec<PathSeg> = ["spec", "template", "spec", "containers"]
            .iter()
            .map(|k| PathSeg::Key(k.to_string()))
            .chain([PathSeg::Index(0), PathSeg::Key("image".into())])
            .collect();
        let c = container_at(&root, &path).unwrap();
        assert_eq!(
            (&*c.kind, &*c.name, &*c.container),
            ("Deployment", "app", "app")
        );
        assert_eq!((c.init, c.index), (false, 0));
        assert_eq!(container_at(&root, &path[..3]), None);
    }

    #[test]
    fn a_json_6902_patch_sets_an_image_by_its_place() {
        let text = "- op: test\n  path: /spec/template/spec/containers/1/image\n  value: x\n- op: replace\n  path: /spec/template/spec/containers/1/image\n  value: app:3.0\n- op: replace\n  path: /spec/replicas\n  value: 2\n";
        let t = Target {
            kind: Some("Deployment".into()),
            name: Some("app".into()),
        };
        let e = effects(&doc(text), Some(&t), &"k.yaml".into(), &|o| o as u32);
        assert_eq!(e.len(), 1);
        assert_eq!(
            e[0].what,
            What::SetsImageAt {
                init: false,
                index: 1
            }
        );
        assert_eq!(e[0].line, text.find("app:3.0").unwrap() as u32);
        // Without a target it is not a patch kustomize applies.
        assert!(effects(&doc(text), None, &"k.yaml".into(), &|_| 1).is_empty());
        assert_eq!(
            container_pointer("/spec/initContainers/0/image"),
            Some(Pointer::Image {
                init: true,
                index: 0
            })
        );
        assert_eq!(container_pointer("/spec/containers/x/image"), None);
        assert_eq!(
            container_pointer("/spec/jobTemplate/spec/template/spec/containers/-"),
            Some(Pointer::Container {
                init: false,
                index: None
            })
        );
    }

    #[test]
    fn replaced_and_deleted_containers_are_dropped() {
        let list = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n        - $patch: replace\n        - name: app\n          image: app:2.0\n      initContainers:\n        - name: init\n          $patch: delete\n";
        let e = effects(&doc(list), None, &"p.yaml".into(), &|_| 1);
        let what: Vec<&What> = e.iter().map(|e| &e.what).collect();
        assert_eq!(
            what,
            [
                &What::SetsImage("app".into()),
                &What::Replaces {
                    init: false,
                    keep: Box::new(["app".into()])
                },
                &What::DeletesContainer {
                    init: true,
                    container: "init".into()
                },
            ]
        );
        let c = |container: &str, init: bool| Container {
            kind: "Deployment".into(),
            name: "app".into(),
            container: container.into(),
            init,
            index: 0,
        };
        assert!(e[1].reaches(&c("sidecar", false)));
        assert!(!e[1].reaches(&c("app", false)));
        assert!(!e[1].reaches(&c("sidecar", true)));
        assert!(e[2].reaches(&c("init", true)));
        assert!(!e[2].reaches(&c("init", false)));
        // A replaced map above the pod spec replaces both lists; one at the root is
        // ignored by kustomize.
        let map = list.replace(
            "      containers:\n        - $patch: replace\n",
            "      $patch: replace\n      containers:\n",
        );
        let e = effects(&doc(&map), None, &"p.yaml".into(), &|_| 1);
        assert!(e.iter().any(|e| e.what
            == What::Replaces {
                init: true,
                keep: Box::default()
            }));
        let item = list.replace(
            "        - $patch: replace\n        - name: app\n",
            "        - name: app\n          $patch: replace\n",
        );
        let e = effects(&doc(&item), None, &"p.yaml".into(), &|_| 1);
        assert_eq!(e[0].what, What::NotRendered);
        let list_replaced = |e: &Effect| matches!(e.what, What::Replaces { init: false, .. });
        assert!(!e.iter().any(list_replaced), "{e:?}");
        let root = format!(
            "$patch: replace\n{}",
            list.replace("        - $patch: replace\n", "")
        );
        let e = effects(&doc(&root), None, &"p.yaml".into(), &|_| 1);
        assert!(
            !e.iter().any(|e| matches!(e.what, What::Replaces { .. })),
            "{e:?}"
        );
    }

    #[test]
    fn a_replacement_target_names_a_container_image() {
        assert_eq!(
            field_path_image("spec.jobTemplate.spec.template.spec.containers.[name=job].image"),
            Some(What::SetsImage("job".into()))
        );
        assert_eq!(
            field_path_image("spec.template.spec.initContainers.1.image"),
            Some(What::SetsImageAt {
                init: true,
                index: 1
            })
        );
        assert_eq!(
            field_path_image("spec.template.spec.containers.[name=a].env"),
            None
        );
        assert_eq!(
            field_path_image("spec.template.spec.containers.*.image"),
            Some(What::SetsEveryImage { init: false })
        );
        assert_eq!(field_path_image("data.image"), None);
    }

    #[test]
    fn json_6902_whole_containers() {
        let text = "- op: replace\n  path: /spec/containers/2\n  value: {name: a, image: x:1}\n- op: add\n  path: /spec/template/spec/initContainers/-\n  value:\n    name: b\n    image: y:1\n- op: remove\n  path: /spec/containers/0\n- op: copy\n  from: /spec/containers/1/image\n  path: /spec/containers/3/image\n";
        let Node::Seq { items, .. } = doc(text) else {
            panic!("not a list")
        };
        let ops = json6902_images(&items);
        let got: Vec<(usize, &str, &What)> = (ops.iter())
            .map(|o| (o.index, o.image.value.as_str(), &o.what))
            .collect();
        assert_eq!(
            got,
            [
                (
                    0,
                    "x:1",
                    &What::SetsImageAt {
                        init: false,
                        index: 2
                    }
                ),
                (1, "y:1", &What::SetsImage("b".into())),
            ]
        );
        let t = Target {
            kind: Some("Deployment".into()),
            name: None,
        };
        let e = effects(&doc(text), Some(&t), &"k.yaml".into(), &|_| 1);
        let what: Vec<&What> = e.iter().skip(2).map(|e| &e.what).collect();
        assert_eq!(
            what,
            [
                &What::RemovesAt {
                    init: false,
                    index: 0
                },
                &What::SetsImageAt {
                    init: false,
                    index: 3
                }
            ]
        );
        let key = |k: &str| PathSeg::Key(k.into());
        assert_eq!(ops[1].path, [key("value"), key("image")]);
    }
}
