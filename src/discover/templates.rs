//! Helm chart `templates/`: Go templates, not YAML, so never parsed or edited. A literal
//! `image:` line in one (a test hook's `busybox`) still deploys that image; it is listed,
//! unmanaged, so that `scan` shows everything a chart runs.

use super::{FileCtx, ImageRef, RefKind};
use imagebump_model::name::{self, parse_reference};

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
}
