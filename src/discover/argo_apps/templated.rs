//! Applications an `ApplicationSet` generates: where a value their template takes from a
//! parameter is written (a list element's field), so that it is read and edited there.
//!
//! A template value written literally is the same for every generated Application: it is
//! one reference, edited in the template. A value that is exactly one parameter
//! (`'{{tag}}'`, `'{{ .image.tag }}'`), or an image name followed by one (`nginx:{{tag}}`),
//! is edited in the list element that sets the parameter. Anything else built by the
//! template (a directory's name, two parameters, a function) cannot be edited without
//! changing what the template means: it is noted and left alone.

use super::{Current, Scan};
use crate::discover::vocab::{ImageRef, RefKind, SlotFormat};
use imagebump_argocd::app::parse_kustomize_image;
use imagebump_argocd::appset::{go_field, pieces, Piece};
use imagebump_model::Problem;
use imagebump_yaml::{Node, PathSeg};

/// Why a value of an ApplicationSet's template is not edited where a list element sets
/// it; `raw` is the value as the template writes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum TemplateError {
    #[error("`{raw}` is built from several template parameters")]
    SeveralParameters { raw: String },
    #[error("`{raw}` takes its value from {{{{{action}}}}}, which no list element of the ApplicationSet writes literally")]
    NotWrittenLiterally { raw: String, action: String },
    #[error("`{raw}` mixes text and a template parameter in a way imagebump cannot edit")]
    Mixed { raw: String },
}

impl Scan<'_> {
    /// Where the value at `c` is written when the app being read is generated and `c` is
    /// in its set's template: `Ok(None)` when it is written there (or the app is not
    /// generated), `Ok(Some(place))` for the list element that sets it, `Err(why)` when
    /// the template builds it.
    pub(super) fn locate(&self, c: &Current) -> Result<Option<Current>, TemplateError> {
        let Some((file, doc, t)) = &self.template else {
            return Ok(None);
        };
        if c.file != *file || c.doc != *doc {
            return Ok(None);
        }
        let Some(Node::Scalar(s)) = self.files.get(file).and_then(|l| l.node(c.doc, &c.at)) else {
            return Ok(None);
        };
        let raw = s.value.as_str();
        let parts = pieces(raw);
        let actions: Vec<&str> = parts
            .iter()
            .filter_map(|p| match p {
                Piece::Action(a) => Some(*a),
                Piece::Text(_) => None,
            })
            .collect();
        let action = match actions.as_slice() {
            [] => return Ok(None),
            [a] => *a,
            _ => {
                let raw = raw.to_string();
                return Err(TemplateError::SeveralParameters { raw });
            }
        };
        let name = if t.go {
            go_field(action)
        } else {
            Some(action.trim().to_string())
        };
        let Some(origin) = name.as_ref().and_then(|n| t.origins.get(n)) else {
            let (raw, action) = (raw.to_string(), action.to_string());
            return Err(TemplateError::NotWrittenLiterally { raw, action });
        };
        let at = origin.path.clone();
        let (file, doc) = (&origin.file, &origin.doc);
        match parts.as_slice() {
            [Piece::Action(_)] => Ok(Some(Current {
                file: file.clone(),
                doc: *doc,
                at,
                format: c.format.clone(),
                kind: c.kind,
                repository: c.repository.clone(),
            })),
            [Piece::Text(prefix), Piece::Action(_)] if prefix.ends_with(':') => {
                let name = match c.kind {
                    RefKind::ArgoKustomizeImage => {
                        parse_kustomize_image(&format!("{prefix}x")).map(|k| k.new_name)
                    }
                    _ => Some(prefix.trim_end_matches(':').to_string()),
                };
                Ok(Some(Current {
                    file: file.clone(),
                    doc: *doc,
                    at,
                    format: SlotFormat::Tag,
                    kind: c.kind,
                    repository: name,
                }))
            }
            _ => Err(TemplateError::Mixed {
                raw: raw.to_string(),
            }),
        }
    }

    /// Say once why a value of an ApplicationSet's template is left alone.
    pub(super) fn template_note(&mut self, c: &Current, why: &str) {
        let (line, column) = self
            .files
            .get(&c.file)
            .map_or((0, 0), |l| l.position(c.doc, &c.at));
        let p = Problem::at_file(
            &c.file,
            line,
            column,
            format!(
                "ApplicationSet template: {why}; not updated (write the value in a list element, or literally)"
            ),
        );
        if !self.out.notes.contains(&p) {
            self.out.notes.push(p);
        }
    }

    /// A `helm.valuesObject` reference of a generated app: its slots in the template moved
    /// to the list elements that set them, with the values written there; `None` (and a
    /// note) when the template builds one of them.
    pub(super) fn relocate(&mut self, mut r: ImageRef) -> Option<ImageRef> {
        let Some((file, _, _)) = &self.template else {
            return Some(r);
        };
        if *r.file != **file {
            return Some(r);
        }
        for i in 0..r.slots.len() {
            let Some(slot) = r.slots.get(i) else { continue };
            let c = Current {
                file: r.file.to_string(),
                doc: slot.doc as usize,
                at: slot.path.to_vec(),
                format: slot.format.clone(),
                kind: r.kind,
                repository: None,
            };
            let place = match self.locate(&c) {
                Ok(None) => continue,
                Ok(Some(p)) if p.format == c.format => p,
                Ok(Some(_)) => {
                    self.template_note(&c, "an image name and a parameter in one value");
                    return None;
                }
                Err(why) => {
                    self.template_note(&c, &why.to_string());
                    return None;
                }
            };
            let loaded = self.files.get(&place.file)?;
            let Some(Node::Scalar(s)) = loaded.node(place.doc, &place.at) else {
                return None;
            };
            let value = s.value.clone();
            r.set_at(loaded.position(place.doc, &place.at));
            let new = loaded
                .ctx()
                .slot(place.doc, place.at.clone(), s, place.format);
            match &new.format {
                SlotFormat::Tag => r.tag = Some(value.into()),
                SlotFormat::Digest => r.digest = Some(value.into()),
                SlotFormat::TagAtDigest => {
                    let (t, d) = super::split_digest(&value);
                    r.tag = t.map(Into::into);
                    r.digest = d.map(Into::into);
                }
                SlotFormat::Reference { .. } => {
                    let parsed = imagebump_model::name::parse_reference(&value).ok()?;
                    r.tag = parsed.tag.map(Into::into);
                    r.digest = parsed.digest.map(Into::into);
                }
                // Any other part (an image name) stays as the element has it.
                #[allow(unreachable_patterns)]
                _ => {}
            }
            if let Some(old) = r.slots.get_mut(i) {
                *old = new;
            }
        }
        Some(r)
    }
}

/// Whether two references read the same values (the same slots of the same file).
pub(super) fn same_place(a: &ImageRef, b: &ImageRef) -> bool {
    let places = |r: &ImageRef| -> Vec<(u32, Vec<PathSeg>)> {
        r.slots.iter().map(|s| (s.doc, s.path.to_vec())).collect()
    };
    a.file == b.file && !b.slots.is_empty() && places(a) == places(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_is_named_in_its_braces() {
        let e = TemplateError::NotWrittenLiterally {
            raw: "{{tag}}".into(),
            action: "tag".into(),
        };
        let want = "`{{tag}}` takes its value from {{tag}}, which no list element of the ApplicationSet writes literally";
        assert_eq!(e.to_string(), want);
    }
}
