//! Untrusted text into HTML: every string from the repository, registries and forges goes
//! through [`text`] (element content and quoted attribute values alike); links through
//! [`https`].

/// `s` safe for HTML text and double- or single-quoted attribute values: `& < > " '`
/// escaped, and control, bidirectional and other invisible format characters replaced by
/// U+FFFD, so no name can reorder or hide what the page shows.
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if hidden(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Control characters (C0, DEL, C1) and the format characters that steer or hide text:
/// bidirectional marks, embeddings, overrides and isolates, zero-width characters, the
/// byte-order mark.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{061C}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2069}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}')
}

/// `url` escaped for an `href`, when it is an `https://` URL with nothing hidden or
/// blank in it; `None` otherwise (the page then shows no link).
pub fn https(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://")?;
    let clean = !rest.is_empty() && !url.chars().any(|c| hidden(c) || c.is_whitespace());
    clean.then(|| text(url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_quotes_and_direction_characters_are_neutral() {
        assert_eq!(
            text("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(text("web\u{202E}gnp.exe"), "web\u{FFFD}gnp.exe");
        assert_eq!(
            text("a\u{2066}b\u{200B}c\u{1b}[31md\nx"),
            "a\u{FFFD}b\u{FFFD}c\u{FFFD}[31md\u{FFFD}x"
        );
        assert_eq!(text("ünïcödé 1.2.3"), "ünïcödé 1.2.3");
    }

    #[test]
    fn only_clean_https_links_are_kept() {
        assert_eq!(
            https("https://github.com/acme/gitops/pull/7?a=1&b=2").as_deref(),
            Some("https://github.com/acme/gitops/pull/7?a=1&amp;b=2")
        );
        assert_eq!(
            https("https://x/\"onmouseover=\"a").as_deref(),
            Some("https://x/&quot;onmouseover=&quot;a")
        );
        for bad in [
            "http://github.com/acme/gitops/pull/7",
            "javascript:alert(1)",
            "HTTPS://upper.example",
            " https://lead.example",
            "https://",
            "https://a.example/\u{202E}x",
            "https://a.example/ x",
            "//scheme-relative.example",
        ] {
            assert_eq!(https(bad), None, "{bad}");
        }
    }
}
