//! One component of a ref name below `refs/imagebump/`, built from untrusted text (a tag,
//! an image's path component, a directory): escaped so that git accepts it whatever the
//! text, and read back exactly. A text whose escape would be longer than
//! [`MAX_ESCAPED`] bytes (git keeps a ref as a file, one component a file name of at most
//! 255 bytes) gets a fixed-length form instead, [`capped`]: found again from the same
//! text, never read back.

use sha2::{Digest, Sha256};

/// The longest escaped component [`capped`] keeps; longer ones are hashed.
pub const MAX_ESCAPED: usize = 200;

/// How a hashed component begins: `%` followed by a letter that is not a hex digit, which
/// [`escape`] never writes, so no escaped text is mistaken for a hashed one.
pub const HASHED: &str = "%sha256-";

/// `s` as one ref component of at most [`MAX_ESCAPED`] bytes: [`escape`]d when that fits,
/// else [`HASHED`] and the SHA-256 of `s` in lower-case hex.
pub fn capped(s: &str) -> String {
    let escaped = escape(s);
    if escaped.len() <= MAX_ESCAPED {
        return escaped;
    }
    let digest = Sha256::digest(s.as_bytes());
    let mut out = String::from(HASHED);
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The canonical form of a component read back from a ref name (as [`capped`] writes it
/// for the text it stands for), `None` for a malformed one: a hashed component stays as
/// it is, any other is unescaped and capped again.
pub fn canonical(component: &str) -> Option<String> {
    if let Some(hex) = component.strip_prefix(HASHED) {
        let lower = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
        return (hex.len() == 64 && hex.chars().all(lower)).then(|| component.to_string());
    }
    unescape(component).map(|s| capped(&s))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_gets_a_fixed_form_git_accepts_and_short_ones_stay_escaped() {
        let long = format!("a{}", ".".repeat(127));
        assert!(escape(&long).len() > 255);
        let c = capped(&long);
        assert_eq!(c.len(), HASHED.len() + 64);
        assert!(c.starts_with(HASHED), "{c}");
        assert_ne!(c, capped(&format!("b{}", ".".repeat(127))));
        let name = format!("refs/imagebump/x/{c}");
        let ok = std::process::Command::new("git")
            .args(["check-ref-format", &name])
            .status()
            .unwrap();
        assert!(ok.success(), "{name}");
        assert_eq!(canonical(&c), Some(c.clone()));
        assert_eq!(capped("1.2.0"), "1.2.0");
        // Another escape of the same text reads back as the one `capped` writes.
        assert_eq!(canonical("1%2E2.0"), Some("1.2.0".to_string()));
        assert_eq!(canonical("%sha256-00"), None);
        assert_eq!(canonical(&c.to_uppercase()), None);
    }
}
