//! Text from the repository, registries and forges (file names, image names, tags, labels,
//! titles, error bodies) escaped for the medium it lands in. Every place that puts such a
//! value into a terminal line, a log, a pull-request body or title, a step summary or a
//! commit message goes through one of these, so that a value is only ever shown, never
//! read as markup, a link, a control sequence or another line.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Characters never written as they are: C0 controls (newline and tab too), DEL, C1
/// controls, the bidirectional marks, embeddings, overrides and isolates (which make a
/// terminal or a browser show text in another order than it is), and the Unicode line and
/// paragraph separators.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// `s` for a terminal or a log line: each hidden character as `\u{…}` (ESC as `\u{1b}`),
/// everything else as it is. A value is one line, whatever it holds.
pub fn terminal(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_hidden) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len().saturating_add(8));
    for c in s.chars() {
        push_visible(&mut out, c);
    }
    Cow::Owned(out)
}

/// `s` as [`terminal`] writes it, but keeping its line breaks: for a text of several lines
/// made by imagebump around values already escaped (an error with its causes).
pub fn terminal_lines(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && is_hidden(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len().saturating_add(8));
    for c in s.chars() {
        if c == '\n' {
            out.push(c);
        } else {
            push_visible(&mut out, c);
        }
    }
    Cow::Owned(out)
}

fn push_visible(out: &mut String, c: char) {
    if is_hidden(c) {
        let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
    } else {
        out.push(c);
    }
}

/// A JSON text with the hidden characters JSON leaves raw (DEL, C1 controls, the
/// bidirectional and separator characters) written as `\uXXXX` escapes. Those can only
/// stand inside strings, where the escape means the same character: the document reads
/// back the same, and shows nothing hidden on a terminal. (JSON escapes the C0 controls
/// itself; its own line breaks between values stay.)
pub fn json(s: &str) -> Cow<'_, str> {
    // ASCII without DEL (nearly every report) has nothing to show: a byte scan, not a
    // character decode.
    if s.is_ascii() && !s.as_bytes().contains(&0x7f) {
        return Cow::Borrowed(s);
    }
    let wide = |c: char| c >= '\u{7f}' && is_hidden(c);
    if !s.chars().any(wide) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len().saturating_add(8));
    for c in s.chars() {
        if wide(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` as plain text in Markdown (GitHub's, GitLab's, Gitea's) and in HTML: every ASCII
/// punctuation character as a numeric character reference, hidden characters as `\u{…}`
/// (escaped the same way). CommonMark never reads a character reference as syntax, so
/// the result opens no link, image, emphasis, code span, HTML tag or comment and no table
/// cell, whatever `s` holds; it is one line; and the raw text holds no `<`, so it can never
/// spell imagebump's hidden marker.
pub fn markdown_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len().saturating_add(8));
    for c in s.chars() {
        if is_hidden(c) {
            let mut visible = String::new();
            push_visible(&mut visible, c);
            for v in visible.chars() {
                push_reference(&mut out, v);
            }
        } else {
            push_reference(&mut out, c);
        }
    }
    out
}

fn push_reference(out: &mut String, c: char) {
    // These are syntax in no inline position (the text is one line, never at a line's
    // start where `=` or `#` could matter), so they stay readable.
    let inert = matches!(c, ',' | '/' | ';' | '=' | '%' | '?' | '\'' | '"' | '#');
    if c.is_ascii_punctuation() && !inert {
        let _ = write!(out, "&#{};", u32::from(c));
    } else {
        out.push(c);
    }
}

/// Characters that a Markdown code span shows as they are, in a table cell too: no
/// backtick, no `|`, no `<` or `>`, nothing hidden.
fn plain_in_code(c: char) -> bool {
    c.is_alphanumeric()
        || matches!(
            c,
            '.' | '_' | '-' | '/' | ':' | '@' | '+' | '=' | ',' | '~' | '%' | '#'
        )
}

/// `s` shown as code in Markdown (a table cell too): a code span when every character is
/// plain (the usual image name, tag, digest or path), else an HTML `<code>` element holding
/// [`markdown_text`]. Neither opens a link, a mention or markup.
pub fn markdown_code(s: &str) -> String {
    if !s.is_empty() && s.chars().all(plain_in_code) {
        format!("`{s}`")
    } else {
        format!("<code>{}</code>", markdown_text(s))
    }
}

/// `s` escaped for HTML text and attribute values: `&`, `<`, `>`, `"` and `'` as
/// references, hidden characters as `\u{…}`.
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len().saturating_add(8));
    for c in terminal(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` as a link target for Markdown and HTML when it is one imagebump links to: an
/// `https://` URL with a host name (letters, digits, `.`, `-`, an optional port), no user
/// name or password, and nothing after the host but printable ASCII without spaces. The
/// characters that could end a Markdown link or an HTML attribute (`( ) [ ] < > " ' `` ` ``
/// `\` `|` `{` `}` `^`) are percent-encoded. Anything else (`http:`, `javascript:`,
/// credentials, spaces, control characters, other schemes) is `None`: show it as text.
pub fn https_link(s: &str) -> Option<String> {
    let rest = s.strip_prefix("https://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (host, port) = match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    let host_ok = !host.is_empty()
        && !host.starts_with(['.', '-'])
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    if !host_ok || !port_ok || !tail.chars().all(|c| c.is_ascii_graphic()) {
        return None;
    }
    let mut out = format!("https://{authority}");
    for c in tail.chars() {
        if matches!(
            c,
            '(' | ')' | '[' | ']' | '<' | '>' | '"' | '\'' | '`' | '\\' | '|' | '{' | '}' | '^'
        ) {
            let _ = write!(out, "%{:02X}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_terminal_sees_no_control_character() {
        assert_eq!(terminal("apps/web.yaml"), "apps/web.yaml");
        assert_eq!(
            terminal("a\u{1b}[2Jb\nc\td\u{7f}\u{9b}e"),
            "a\\u{1b}[2Jb\\u{a}c\\u{9}d\\u{7f}\\u{9b}e"
        );
        assert_eq!(
            terminal("x\u{202e}gpj.exe\u{2066}\u{2069}\u{200f}"),
            "x\\u{202e}gpj.exe\\u{2066}\\u{2069}\\u{200f}"
        );
        assert_eq!(
            terminal_lines("one\u{1b}]0;x\u{7}\ntwo"),
            "one\\u{1b}]0;x\\u{7}\ntwo"
        );
        assert_eq!(terminal("é☃"), "é☃");
    }

    #[test]
    fn markdown_text_is_never_markup() {
        assert_eq!(
            markdown_text("![pixel](https://evil/p.png)"),
            "&#33;&#91;pixel&#93;&#40;https&#58;//evil/p&#46;png&#41;"
        );
        assert_eq!(
            markdown_text("<img src=x onerror=alert(1)>"),
            "&#60;img src=x onerror=alert&#40;1&#41;&#62;"
        );
        assert_eq!(markdown_text("a|b\nc"), "a&#124;b&#92;u&#123;a&#125;c");
        let marker = markdown_text("<!-- imagebump:updates [] -->");
        assert!(!marker.contains('<') && !marker.contains("-->"), "{marker}");
    }

    #[test]
    fn code_is_a_code_span_only_for_plain_values() {
        assert_eq!(markdown_code("ghcr.io/acme/web"), "`ghcr.io/acme/web`");
        assert_eq!(markdown_code("1.3.0@sha256:ab"), "`1.3.0@sha256:ab`");
        assert_eq!(markdown_code("a`b"), "<code>a&#96;b</code>");
        assert_eq!(markdown_code("x -->"), "<code>x &#45;&#45;&#62;</code>");
        assert_eq!(
            markdown_code("my apps/v.yaml"),
            "<code>my apps/v&#46;yaml</code>"
        );
        assert_eq!(markdown_code(""), "<code></code>");
    }

    #[test]
    fn json_reads_back_the_same_and_shows_nothing_hidden() {
        let value = serde_json::json!({"file": "a\u{7f}b\u{9b}c\u{202e}d\u{2028}é\n"});
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        let shown = json(&text);
        assert_eq!(
            shown,
            "{\n  \"file\": \"a\\u007fb\\u009bc\\u202ed\\u2028é\\n\"\n}"
        );
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap_or_default();
        assert_eq!(back, value);
    }

    #[test]
    fn json_of_plain_ascii_is_borrowed_and_a_lone_del_is_shown() {
        assert!(matches!(json("{\"a\": \"b\"}"), Cow::Borrowed(_)));
        assert_eq!(json("\"a\u{7f}b\""), "\"a\\u007fb\"");
    }

    #[test]
    fn html_escapes_the_five() {
        assert_eq!(
            html("<a href=\"x\" title='y'>&\u{1b}"),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;\\u{1b}"
        );
    }

    #[test]
    fn only_plain_https_urls_are_links() {
        assert_eq!(
            https_link("https://github.com/acme/web").as_deref(),
            Some("https://github.com/acme/web")
        );
        assert_eq!(
            https_link("https://example.com:8443/a_(b)[c]?q=<x>#\"'`|").as_deref(),
            Some("https://example.com:8443/a_%28b%29%5Bc%5D?q=%3Cx%3E#%22%27%60%7C")
        );
        for refused in [
            "http://example.com/",
            "javascript:alert(1)",
            "HTTPS://example.com",
            "https://user:pass@example.com/",
            "https://token@example.com/",
            "https://example.com/a b",
            "https://example.com/a\u{1b}b",
            "https://example.com/\nx",
            "https:///path",
            "https://exa mple.com",
            "https://example.com:80a/",
            "https://.example.com/",
            "https://example.com/é",
            " https://example.com/",
        ] {
            assert_eq!(https_link(refused), None, "{refused:?}");
        }
    }
}
