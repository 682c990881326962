//! Edits of a file that is not YAML as a whole but whose documents are read one by one (a
//! Helm chart template holding Argo CD Applications, with `{{- if }}` lines between them):
//! each document holding an edit is edited and proven on its own, exactly as
//! `imagebump_yaml::apply_edits` proves a file's edits; every other byte is kept.

use imagebump_yaml::{self as yaml, Edit, EditError};

use crate::discover::workloads::documents;

/// The edited text; an error when an edit falls outside the document it names, or a
/// document's edit is not proven.
pub fn apply(text: &str, edits: &[Edit]) -> Result<String, EditError> {
    let pieces = documents(text).unwrap_or_else(|| vec![(0, text)]);
    let mut out = String::with_capacity(text.len());
    let mut at = 0usize;
    let mut applied = 0usize;
    for (index, (start, piece)) in pieces.iter().enumerate() {
        out.push_str(text.get(at..*start).unwrap_or_default());
        let end = start.saturating_add(piece.len());
        let mut mine = Vec::new();
        for e in edits.iter().filter(|e| e.doc == index) {
            if e.span.start < *start || e.span.end > end {
                return Err(EditError::Reparse(format!(
                    "an edit at byte {} is outside its document",
                    e.span.start
                )));
            }
            // Inside the document, checked above.
            let span = e.span.start.saturating_sub(*start)..e.span.end.saturating_sub(*start);
            mine.push(Edit {
                doc: 0,
                span,
                ..e.clone()
            });
        }
        applied = applied.saturating_add(mine.len());
        match mine.is_empty() {
            true => out.push_str(piece),
            false => out.push_str(&yaml::apply_edits(piece, &mine)?),
        }
        at = end;
    }
    if applied != edits.len() {
        return Err(EditError::Reparse(
            "an edit names a document the file does not have".into(),
        ));
    }
    out.push_str(text.get(at..).unwrap_or_default());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use imagebump_yaml::PathSeg;

    const TEXT: &str = "{{- if .Values.a }}\napiVersion: v1\nkind: X\nspec: {tag: '1.0'}\n{{- end }}\n---\napiVersion: v1\nkind: Y\nspec:\n  tag: 2.0 # keep\n";

    fn edit(doc: usize, old: &str, new_raw: &str, new_value: &str) -> Edit {
        let start = TEXT.find(old).unwrap();
        Edit {
            doc,
            path: vec![PathSeg::Key("spec".into()), PathSeg::Key("tag".into())],
            span: start..start + old.len(),
            new_raw: new_raw.into(),
            new_value: new_value.into(),
            inner: None,
        }
    }

    #[test]
    fn each_edited_document_is_proven_alone_and_the_rest_kept() {
        assert!(yaml::parse_located(TEXT).is_err());
        let got = apply(TEXT, &[edit(1, "2.0", "2.1", "2.1")]).unwrap();
        assert_eq!(got, TEXT.replace("tag: 2.0", "tag: 2.1"));
    }

    #[test]
    fn an_edit_of_a_document_that_is_not_yaml_is_refused() {
        assert!(apply(TEXT, &[edit(0, "'1.0'", "'1.1'", "1.1")]).is_err());
        // Outside its document, or in a document the file does not have.
        assert!(apply(TEXT, &[edit(0, "2.0", "2.1", "2.1")]).is_err());
        assert!(apply(TEXT, &[edit(5, "2.0", "2.1", "2.1")]).is_err());
        // A value that would change what else the document says.
        assert!(apply(TEXT, &[edit(1, "2.0", "2.1\n  x: 1", "2.1")]).is_err());
    }
}
