//! Git-style unified diffs of the planned file changes.

use similar::{ChangeTag, TextDiff};

use crate::plan::FileChange;

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// A `diff --git` style patch of every change, coloured when `color` is set. Lines keep
/// their own endings, so CRLF files show as CRLF. File names and lines are the
/// repository's: their hidden characters (an escape sequence in a comment or a name) are
/// shown as `\u{…}`, never sent to the terminal.
pub fn render(files: &[FileChange], color: bool) -> String {
    use imagebump_model::escape::terminal;
    let mut out = String::new();
    for f in files {
        let name = terminal(&f.file);
        let paint = |code: &str, s: &str| {
            if color {
                format!("{code}{s}{RESET}")
            } else {
                s.to_string()
            }
        };
        let header = if f.created {
            format!(
                "diff --git a/{0} b/{0}\nnew file mode 100644\n--- /dev/null\n+++ b/{0}\n",
                name
            )
        } else {
            format!("diff --git a/{0} b/{0}\n--- a/{0}\n+++ b/{0}\n", name)
        };
        out.push_str(&paint(BOLD, &header));
        let diff = TextDiff::from_lines(&*f.before, &f.after);
        for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
            out.push_str(&paint(CYAN, &hunk.header().to_string()));
            out.push('\n');
            for change in hunk.iter_changes() {
                let (sign, code) = match change.tag() {
                    ChangeTag::Delete => ("-", Some(RED)),
                    ChangeTag::Insert => ("+", Some(GREEN)),
                    ChangeTag::Equal => (" ", None),
                };
                let line = change.value();
                let (body, ending) = match line.strip_suffix('\n') {
                    Some(b) => (b, "\n"),
                    None => (line, "\n\\ No newline at end of file\n"),
                };
                let (body, cr) = match body.strip_suffix('\r') {
                    Some(b) => (b, "\r"),
                    None => (body, ""),
                };
                let text = format!("{sign}{}{cr}", terminal(body));
                match code {
                    Some(c) => out.push_str(&paint(c, &text)),
                    None => out.push_str(&text),
                }
                out.push_str(ending);
            }
        }
    }
    out
}
