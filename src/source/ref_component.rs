//! One component of a ref name below `refs/imagebump/`, built from untrusted text (a tag,
//! an image's path component, a directory): escaped so that git accepts it whatever the
//! text, and read back exactly.

/// `s` as one ref component git accepts (`git check-ref-format`): letters, digits, `-`, `_`
/// and single dots stay; everything else, a dot after a dot, a leading dot and the dot of a
/// trailing `.lock` become `%XX`.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev = None;
    for (i, c) in s.char_indices() {
        let rest = s.get(i..).unwrap_or_default();
        let dot_ok = c == '.' && i > 0 && prev != Some('.') && rest != ".lock";
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' || dot_ok {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        prev = Some(c);
    }
    out
}

/// The inverse of [`escape`]; `None` for a malformed escape or bytes that are not UTF-8.
pub fn unescape(s: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(s.len());
    let mut it = s.bytes();
    while let Some(b) = it.next() {
        if b == b'%' {
            let hex = [it.next()?, it.next()?];
            let hex = std::str::from_utf8(&hex).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
        } else {
            bytes.push(b);
        }
    }
    String::from_utf8(bytes).ok()
}
