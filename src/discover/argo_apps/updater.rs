//! An image argocd-image-updater is configured to manage: its name, where its current
//! version is read, and the reference made of it.

use super::app::source_for;
use super::resources::ParsedFile;
use super::{key, Current, Now, Scan, SourceState};
use crate::discover::vocab::{ImageRef, RefKind, SlotFormat};
use imagebump_argocd::app::parse_kustomize_image;
use imagebump_argocd::{App, HelmKeys, SourceKind, UpdaterConfig, UpdaterImage, WriteBackTarget};
use imagebump_model::name::{parse_name, parse_reference, Reference};
use imagebump_yaml::{Node, PathSeg};

/// The name, tag and digest a value at `c` writes: a kustomize image string, a whole
/// reference, or a tag (`tag@digest`) of the repository `c` names; `None` when it reads as
/// none of them.
#[allow(clippy::type_complexity)]
fn written_parts(c: &Current, value: &str) -> Option<(String, Option<String>, Option<String>)> {
    Some(match (&c.format, &c.kind) {
        (SlotFormat::Reference { .. }, RefKind::ArgoKustomizeImage) => {
            let k = parse_kustomize_image(value)?;
            (k.new_name, k.tag, k.digest)
        }
        (SlotFormat::Reference { .. }, _) => {
            let r = parse_reference(value).ok()?;
            (r.written, r.tag, r.digest)
        }
        (_, _) => {
            let (t, d) = split_digest(value);
            (c.repository.clone().unwrap_or_default(), t, d)
        }
    })
}

/// How the value is written back: a tag with a digest as `tag@digest`; a `repo:tag` value
/// keeps the repository as written in it (`written`).
fn slot_format(format: &SlotFormat, digest: bool, written: &arcstr::ArcStr) -> SlotFormat {
    match format {
        SlotFormat::Tag if digest => SlotFormat::TagAtDigest,
        SlotFormat::Reference { name } if name.is_empty() => SlotFormat::Reference {
            name: arcstr::ArcStr::clone(written),
        },
        f => f.clone(),
    }
}

impl Scan<'_> {
    /// A reference whose current value is the scalar `c` (edited in place).
    pub(super) fn current_ref(&mut self, c: &Current, app_key: &str) -> Option<ImageRef> {
        let relocated = match self.locate(c) {
            Ok(r) => r,
            Err(why) => {
                self.template_note(c, &why.to_string());
                return None;
            }
        };
        let c = relocated.as_ref().unwrap_or(c);
        let loaded = self.files.get(&c.file)?;
        let Some(Node::Scalar(s)) = loaded.node(c.doc, &c.at) else {
            return None;
        };
        let ctx = loaded.ctx();
        let one_line = ctx.one_line(s);
        let value = one_line.unwrap_or(s.value.as_str());
        let (name, tag, digest) = written_parts(c, value)?;
        // A tag whose image is named elsewhere (annotations) gets its name from the caller.
        let image = parse_name(if name.is_empty() { "unnamed" } else { &name }).ok()?;
        let mut r = ctx.new_ref(
            c.kind,
            app_key,
            s.span.start,
            Reference {
                name: image,
                written: name,
                tag: tag.clone(),
                digest: digest.clone(),
            },
        );
        r.extra_mut().app = Some(app_key.to_string());
        let format = slot_format(&c.format, digest.is_some(), &r.written);
        if value.contains("{{") {
            // An Application kept in a chart's `templates/`: Helm fills the value in.
            r.unmanaged = Some(
                arcstr::literal!(
                    "a template (`{{ }}`), filled in when the chart is rendered: not edited"
                )
                .into(),
            );
            return Some(r);
        }
        if let Err(why) = one_line {
            r.unmanaged = Some(why.into());
            return Some(r);
        }
        if tag.is_none() {
            r.unmanaged = Some(arcstr::literal!("no tag").into());
        } else {
            r.slots.push(ctx.slot(c.doc, c.at.clone(), s, format));
        }
        entry_digest(loaded, c, &mut r);
        Some(r)
    }

    /// The configured image's name; a variable or a pattern names none (a note), a name
    /// that does not parse is an error.
    pub(super) fn image_name(
        &mut self,
        app: &App,
        app_key: &str,
        img: &UpdaterImage,
    ) -> Option<imagebump_model::name::ImageName> {
        let e = match parse_name(&img.name) {
            Ok(n) => return Some(n),
            Err(e) => e,
        };
        if let Some(why) = imagebump_model::name::placeholder(&img.name) {
            let message = format!(
                "Application {app_key}: image {} is {why}: left alone",
                img.name
            );
            let p = self.at_app(app, message);
            self.out.notes.push(p);
        } else {
            let p = self.at_app(
                app,
                format!("Application {app_key}: image {:?}: {e}", img.name),
            );
            self.out.problems.push(p);
        }
        None
    }

    /// Where the value of `img` is now: what Argo CD renders, else the files of its source
    /// `st` (among `states`): a plugin's variable, kustomize's rendering, or Helm's keys.
    fn now(
        &mut self,
        app: &App,
        (st, states): (&SourceState, &[SourceState]),
        config: &UpdaterConfig,
        img: &UpdaterImage,
        (kname, keys): (&str, &HelmKeys),
    ) -> Option<Now> {
        // A plugin app written back to a kustomization (a kustomize-based plugin) is read
        // the way kustomize renders it.
        let to_kustomization =
            matches!(config.write_back.target, WriteBackTarget::Kustomization(_));
        let is_kustomize = st.kind == SourceKind::Kustomize
            || (st.kind == SourceKind::Plugin && img.plugin.is_none() && to_kustomization);
        if let Some(pk) = &img.plugin {
            self.plugin_current(app, st, pk).map(Now::At)
        } else if is_kustomize {
            self.kustomize_current(app, st, kname, &img.name)
        } else {
            self.helm_current(app, st, states, keys, &img.name)
                .map(Now::At)
        }
    }

    /// One image argocd-image-updater is configured to manage.
    pub(super) fn managed_image(
        &mut self,
        app: &App,
        app_key: &str,
        config: &UpdaterConfig,
        img: &UpdaterImage,
        states: &[SourceState],
    ) {
        let Some(image) = self.image_name(app, app_key, img) else {
            return;
        };
        let Some(st) = source_for(img, states) else {
            return;
        };
        let kname = img
            .kustomize_name
            .clone()
            .unwrap_or_else(|| img.name.clone());
        let keys = img.helm.clone().unwrap_or(HelmKeys::NameTag {
            name: "image.name".into(),
            tag: "image.tag".into(),
        });
        if st.broken {
            return;
        }
        let current = self.now(app, (st, states), config, img, (&kname, &keys));
        let (found, why) = self.found_ref(app, app_key, img, current);
        let mut r = match found {
            Some(r) => r,
            None => self.unread_ref(app, app_key, &image, img, why),
        };
        self.replace_generic(&r);
        r.image = image.into();
        r.written = img.name.as_str().into();
        if r.is_managed() {
            match self.resolve_target(app, st, states, config, &r.file) {
                Ok(target) => self.write_back(st, target, img, &kname, &keys, &mut r),
                Err(why) => r.unmanaged = Some(why.to_string().into()),
            }
        }
        let label = format!(
            "{} ({})",
            config.origin,
            img.alias.as_deref().unwrap_or(&img.name)
        );
        let secret = img.pull_secret.as_ref().map(|s| (app, s));
        if r.tag.is_some() || r.digest.is_some() {
            let at = format!("{}:{}", r.file, r.line);
            self.rendered_at.push(((*r.image).clone(), at));
        }
        self.push_with(r, Some((&label, &img.policy)), secret);
    }

    /// The reference of the current version found, made the app's; else why none.
    pub(super) fn found_ref(
        &mut self,
        app: &App,
        app_key: &str,
        img: &UpdaterImage,
        current: Option<Now>,
    ) -> (Option<ImageRef>, String) {
        let not_in_git = "its current version is not in git (argocd-image-updater read it from the cluster): set it once in the app's source, values or override file";
        match current {
            Some(Now::At(c)) => (self.current_ref(&c, app_key), not_in_git.to_string()),
            Some(Now::Found(r)) => (Some(self.adopt(r, app_key)), not_in_git.to_string()),
            Some(Now::Unknown(why)) => {
                let message = format!("Application {app_key}: image {}: {why}", img.name);
                let p = self.at_app(app, message);
                self.out.problems.push(p);
                (None, why)
            }
            None => (None, not_in_git.to_string()),
        }
    }

    /// The reference of a configured image whose current version cannot be read (`why`),
    /// at the app's annotations: listed, never updated.
    pub(super) fn unread_ref(
        &self,
        app: &App,
        app_key: &str,
        image: &imagebump_model::name::ImageName,
        img: &UpdaterImage,
        why: String,
    ) -> ImageRef {
        let (line, column) = self.files.get(&app.file).map_or((0, 0), |m| {
            m.position(app.doc, &[key("metadata"), key("annotations")])
        });
        ImageRef {
            file: app.file.as_str().into(),
            line: crate::discover::vocab::saturating_u32(line),
            column: crate::discover::vocab::saturating_u32(column),
            kind: RefKind::ArgoAnnotation,
            image: image.clone().into(),
            written: img.name.as_str().into(),
            tag: None,
            digest: None,
            unit: app_key.into(),
            policy: Default::default(),
            unmanaged: Some(why.into()),
            slots: crate::discover::vocab::Slots::default(),
            extra: Some(Box::new(crate::discover::vocab::Extra {
                app: Some(app_key.to_string()),
                ..Default::default()
            })),
        }
    }
}

/// Whether a repository value (possibly the short form without the registry, as Helm
/// charts often split it) names `image`.
pub(super) fn same_image(repo: &str, image: &str) -> bool {
    repo == image
        || image.ends_with(&format!("/{repo}"))
        || matches!((parse_name(repo), parse_name(image)), (Ok(a), Ok(b)) if a == b)
}

/// `tag@sha256:…` → (tag, digest).
pub(super) fn split_digest(value: &str) -> (Option<String>, Option<String>) {
    match value.split_once('@') {
        Some((t, d)) => (
            Some(t.to_string()).filter(|t| !t.is_empty()),
            Some(d.to_string()),
        ),
        None => (Some(value.to_string()).filter(|t| !t.is_empty()), None),
    }
}

/// A kustomization entry's `digest:` beside its `newTag:` is what kustomize deploys: it is
/// the current digest of `r`, and the new one is written there (the tag stays a tag).
pub(super) fn entry_digest(loaded: &ParsedFile, c: &Current, r: &mut ImageRef) {
    let Some((PathSeg::Key(last), parent)) = c.at.split_last() else {
        return;
    };
    let mut at = parent.to_vec();
    at.push(key("digest"));
    if let (true, Some(Node::Scalar(d))) = (last == "newTag", loaded.node(c.doc, &at)) {
        r.digest = Some(d.value.as_str().into());
        r.slots
            .push(loaded.ctx().slot(c.doc, at, d, SlotFormat::Digest));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(format: SlotFormat, kind: RefKind, repository: Option<&str>) -> Current {
        Current {
            file: "app.yaml".into(),
            doc: 0,
            at: Vec::new(),
            format,
            kind,
            repository: repository.map(Into::into),
        }
    }

    #[test]
    fn a_value_is_read_as_its_place_writes_it() {
        let spec = || SlotFormat::Reference { name: "".into() };
        let some = |s: &str| Some(s.to_string());
        let kustomize = at(spec(), RefKind::ArgoKustomizeImage, None);
        assert_eq!(
            written_parts(&kustomize, "web=r.io/web:1.0"),
            Some(("r.io/web".into(), some("1.0"), None))
        );
        let whole = at(spec(), RefKind::ArgoHelmParameter, None);
        assert_eq!(
            written_parts(&whole, "r.io/api:2.0"),
            Some(("r.io/api".into(), some("2.0"), None))
        );
        assert_eq!(written_parts(&whole, "not a reference"), None);
        let tag = at(SlotFormat::Tag, RefKind::HelmValues, Some("r.io/api"));
        let digest = "sha256:".to_string() + &"a".repeat(64);
        assert_eq!(
            written_parts(&tag, &format!("2.0@{digest}")),
            Some(("r.io/api".into(), some("2.0"), Some(digest)))
        );
    }

    #[test]
    fn a_value_is_written_back_as_it_is_written() {
        let written = arcstr::ArcStr::from("r.io/api");
        let empty = SlotFormat::Reference { name: "".into() };
        assert_eq!(
            slot_format(&empty, false, &written),
            SlotFormat::Reference {
                name: written.clone()
            }
        );
        assert_eq!(
            slot_format(&SlotFormat::Tag, true, &written),
            SlotFormat::TagAtDigest
        );
        assert_eq!(
            slot_format(&SlotFormat::Tag, false, &written),
            SlotFormat::Tag
        );
    }
}
