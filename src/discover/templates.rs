//! Helm chart `templates/`: Go templates, not YAML. A literal `image:` line in one (a test
//! hook's `busybox`) still deploys that image; it is listed, unmanaged, so that `scan` shows
//! everything a chart runs.
//!
//! An app-of-apps written as a chart keeps its Argo CD Applications here. The documents of
//! such a template that parse as YAML (a `{{ }}` in a quoted value is just a string) are
//! read as Applications (and Flux `HelmRelease`s, for their values): what a template fills in (`'{{ .Values.tag }}'`) is listed as
//! unmanaged with the reason, like any templated value; a document with a line that is not
//! YAML (`{{- if .Values.x }}`) is skipped with a note.

use super::workloads;
use crate::discover::vocab::{FileCtx, ImageRef, RefKind};
use imagebump_model::name::{self, parse_reference};
use imagebump_model::Problem;
use imagebump_yaml::{Doc, LineIndex};
use serde_json::Value;
use std::ops::Range;

/// The literal `image:` values of a template's lines.
pub fn scan(ctx: &FileCtx, refs: &mut Vec<ImageRef>) {
    let unit = ctx.file.to_string();
    let mut offset = 0usize;
    for line in ctx.text.split_inclusive('\n') {
        let at = offset;
        offset = offset.saturating_add(line.len());
        let body = line.trim_start();
        let body = body.strip_prefix("- ").map_or(body, str::trim_start);
        let Some(value) = body.strip_prefix("image:") else {
            continue;
        };
        let value = value.split(" #").next().unwrap_or(value).trim();
        let value = value.trim_matches(['"', '\'']);
        if value.is_empty() || name::placeholder(value).is_some() {
            continue;
        }
        let Ok(r) = parse_reference(value) else {
            continue;
        };
        let column = line.find(value).unwrap_or_default();
        let mut out = ctx.new_ref(RefKind::Workload, &unit, at.saturating_add(column), r);
        out.unmanaged =
            Some(arcstr::literal!("hard-coded in the chart, not a values key: not edited").into());
        refs.push(out);
    }
}

/// A template's documents that parse as YAML, when one of them is read here.
pub struct Parsed {
    /// By document index; `root: None` for a document that does not parse.
    pub docs: Vec<Doc>,
    /// Their values, by document index (`null` for one that does not parse).
    pub json: Vec<Value>,
    /// The lines of the text the resources read here span: their `image:` lines are
    /// theirs, not the chart's.
    pub lines: Vec<Range<usize>>,
}

impl Parsed {
    /// Whether an Argo CD resource is among the documents.
    pub fn has_argo(&self) -> bool {
        self.json.iter().any(is_argo)
    }
}

/// The Argo CD resources and Flux `HelmRelease`s of a template, read from its documents
/// that parse as YAML; a note for each document that does not parse. `None` when the
/// template names neither, or none of its documents that parse is one.
pub fn resources(file: &str, text: &str, notes: &mut Vec<Problem>) -> Option<Parsed> {
    if !text.contains("argoproj.io") && !text.contains("helm.toolkit.fluxcd.io") {
        return None;
    }
    let pieces = workloads::documents(text).unwrap_or_else(|| vec![(0, text)]);
    let (docs, json) = match whole(text) {
        Some(parsed) => parsed,
        None => each(file, text, &pieces, notes),
    };
    if !json.iter().any(is_read) {
        return None;
    }
    let lines = LineIndex::new(text);
    let line = |at: usize| lines.line_col(at).0;
    let span = |(start, doc): &(usize, &str)| {
        line(*start)..line(start.saturating_add(doc.len().saturating_sub(1))).saturating_add(1)
    };
    let lines = if pieces.len() == json.len() {
        (pieces.iter().zip(&json))
            .filter(|(_, v)| is_read(v))
            .map(|(p, _)| span(p))
            .collect()
    } else {
        // Documents libyaml counts otherwise than `---` lines do: all the text is theirs.
        vec![span(&(0, text))]
    };
    Some(Parsed { docs, json, lines })
}

/// The whole template's documents and values, when it parses as YAML.
fn whole(text: &str) -> Option<(Vec<Doc>, Vec<Value>)> {
    let docs = imagebump_yaml::parse_located(text).ok()?;
    let json = imagebump_yaml::json_documents(text).ok()?;
    Some((docs, json))
}

/// Each document parsed alone, at its place; one that does not parse is `null` and noted.
fn each(
    file: &str,
    text: &str,
    pieces: &[(usize, &str)],
    notes: &mut Vec<Problem>,
) -> (Vec<Doc>, Vec<Value>) {
    let (mut docs, mut json) = (Vec::new(), Vec::new());
    for (index, (start, piece)) in pieces.iter().enumerate() {
        let base = text.get(..*start).unwrap_or_default().matches('\n').count();
        let parsed = imagebump_yaml::parse_located(piece).map(|d| {
            let value = imagebump_yaml::json_documents(piece).ok();
            (d, value.and_then(|v| v.into_iter().next()))
        });
        let (parsed, value) = match parsed {
            Ok((d, Some(v))) => (d, v),
            Ok((_, None)) | Err(_) => {
                let (line, column) = parsed.err().map_or((1, 1), |e| (e.line, e.column));
                notes.push(Problem::at_file(
                    file,
                    base.saturating_add(line),
                    column,
                    "this document of the chart template is not YAML (a template line): its Argo CD Applications and Flux HelmReleases are not read",
                ));
                // Kept in its place: the Argo CD scanner finds documents by position.
                json.push(Value::Null);
                docs.push(Doc { index, root: None });
                continue;
            }
        };
        json.push(value);
        docs.extend(parsed.into_iter().take(1).map(|d| Doc {
            index,
            root: d.root.map(|mut n| {
                n.shift(*start);
                n
            }),
        }));
    }
    (docs, json)
}

/// A resource read from a template: an Argo CD resource or a Flux `HelmRelease`.
fn is_read(v: &Value) -> bool {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or_default();
    let api = v
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    is_argo(v) || super::helm_release::is_helm_release(kind, api)
}

/// An Argo CD resource (`argoproj.io`), read by the Argo CD scanner.
fn is_argo(v: &Value) -> bool {
    v.get("apiVersion")
        .and_then(Value::as_str)
        .is_some_and(|a| {
            a.starts_with("argoproj.io/") || a.starts_with("argocd-image-updater.argoproj.io/")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use imagebump_yaml::LineIndex;

    #[test]
    fn literal_images_are_listed_templated_ones_are_not() {
        let text = "spec:\n  containers:\n    - name: wget\n      image: busybox # test hook\n    - image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"\n      {{- if .Values.x }}\n    - image: 'nginx:1.27'\n";
        let ctx = FileCtx {
            file: "charts/a/templates/tests/t.yaml".into(),
            text,
            lines: LineIndex::new(text),
        };
        let mut refs = Vec::new();
        scan(&ctx, &mut refs);
        let got: Vec<String> = refs
            .iter()
            .map(|r| format!("{}:{} {}", r.line, r.column, r.image))
            .collect();
        assert_eq!(
            got,
            [
                "4:14 docker.io/library/busybox",
                "7:15 docker.io/library/nginx"
            ]
        );
        assert!(refs.iter().all(|r| !r.is_managed()));
    }

    #[test]
    fn applications_are_read_from_the_documents_that_parse() {
        let app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec:\n  source: {path: a}\n";
        let text = format!("# head\n{{{{- if .Values.a }}}}\n{app}{{{{- end }}}}\n---\n{app}---\nkind: Pod\nspec: {{image: x}}\n");
        let mut notes = Vec::new();
        let parsed = resources("c/templates/a.yaml", &text, &mut notes).unwrap();
        let notes: Vec<String> = notes.iter().map(ToString::to_string).collect();
        assert_eq!(
            notes,
            ["c/templates/a.yaml:2:3: this document of the chart template is not YAML (a template line): its Argo CD Applications and Flux HelmReleases are not read"]
        );
        assert_eq!(parsed.json.len(), 3);
        assert_eq!(parsed.json[0], Value::Null);
        assert!(parsed.docs[0].root.is_none());
        assert_eq!(parsed.json[1]["metadata"]["name"], "a");
        assert!(parsed.has_argo());
        // The second document's lines (from its `---`), not the Pod's.
        assert_eq!(parsed.lines, vec![Range { start: 9, end: 15 }]);
        // Without an Argo CD resource, or when it parses nowhere: nothing.
        assert!(resources("t.yaml", "kind: Pod\n", &mut Vec::new()).is_none());
        let broken = "{{ if }}\napiVersion: argoproj.io/v1alpha1\nkind: Application\n";
        assert!(resources("t.yaml", broken, &mut Vec::new()).is_none());
    }
}
