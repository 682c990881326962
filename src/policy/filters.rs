//! Tag filters that run before any ordering or metadata fetch: `allowTags`, `ignoreTags`,
//! and the `minAge` duration syntax.

use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};
use regex::Regex;

/// `allowTags`: `regexp:<RE>` (unanchored, as in argocd-image-updater) or `any`.
#[derive(Debug, Clone)]
pub struct AllowTags(Regex);

impl AllowTags {
    /// `Ok(None)` for `any` (no filter).
    pub fn parse(text: &str) -> Result<Option<AllowTags>, String> {
        let text = text.trim();
        if text == "any" {
            return Ok(None);
        }
        let Some(re) = text.strip_prefix("regexp:") else {
            return Err(format!(
                "{text:?} is not a tag filter: expected `regexp:<RE>` or `any`"
            ));
        };
        Regex::new(re)
            .map(|r| Some(AllowTags(r)))
            .map_err(|e| format!("bad regular expression {re:?}: {e}"))
    }

    pub fn allows(&self, tag: &str) -> bool {
        self.0.is_match(tag)
    }
}

/// `ignoreTags`: globs (`latest`, `*-rc*`); a tag matching any of them is never chosen.
#[derive(Debug, Clone)]
pub struct IgnoreTags {
    set: GlobSet,
    globs: Vec<String>,
}

impl IgnoreTags {
    pub fn parse(globs: &[String]) -> Result<IgnoreTags, String> {
        let mut b = GlobSetBuilder::new();
        for g in globs {
            b.add(Glob::new(g).map_err(|e| format!("bad glob {g:?}: {e}"))?);
        }
        Ok(IgnoreTags {
            set: b.build().map_err(|e| e.to_string())?,
            globs: globs.to_vec(),
        })
    }

    /// The first glob that matches `tag`.
    pub fn matching(&self, tag: &str) -> Option<&str> {
        self.set
            .matches(tag)
            .first()
            .map(|&i| self.globs[i].as_str())
    }
}

/// A duration such as `3d`, `12h`, `1h30m`, `90s`, `2w` or `0`.
pub fn parse_age(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let bad = || format!("{text:?} is not a duration (use a number and a unit: s, m, h, d, w)");
    let mut total: u64 = 0;
    let mut rest = text;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = match &rest[..unit_len] {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            "d" => 86_400,
            "w" => 7 * 86_400,
            _ => return Err(bad()),
        };
        rest = rest[unit_len..].trim_start();
        total = n
            .checked_mul(unit)
            .and_then(|s| total.checked_add(s))
            .ok_or_else(bad)?;
    }
    Ok(Duration::from_secs(total))
}

/// `3d`, `1h30m` — the shortest spelling of a duration, for reasons shown to users.
pub fn format_age(d: Duration) -> String {
    let mut secs = d.as_secs();
    if secs == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)] {
        if secs >= size {
            out.push_str(&format!("{}{unit}", secs / size));
            secs %= size;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_tags() {
        assert!(AllowTags::parse("any").unwrap().is_none());
        let a = AllowTags::parse("regexp:^v?[0-9]+\\.[0-9]+$")
            .unwrap()
            .unwrap();
        assert!(a.allows("v1.2") && !a.allows("1.2.3"));
        // Unanchored, as in argocd-image-updater.
        assert!(AllowTags::parse("regexp:main-")
            .unwrap()
            .unwrap()
            .allows("x-main-1"));
        assert!(AllowTags::parse("^v1").unwrap_err().contains("regexp:"));
        assert!(AllowTags::parse("regexp:(")
            .unwrap_err()
            .contains("bad regular"));
    }

    #[test]
    fn ignore_tags() {
        let i = IgnoreTags::parse(&["latest".into(), "*-rc*".into()]).unwrap();
        assert_eq!(i.matching("1.2.0-rc1"), Some("*-rc*"));
        assert_eq!(i.matching("latest"), Some("latest"));
        assert_eq!(i.matching("1.2.0"), None);
        assert!(IgnoreTags::parse(&["a[".into()]).is_err());
    }

    #[test]
    fn ages() {
        assert_eq!(parse_age("3d").unwrap(), Duration::from_secs(3 * 86_400));
        assert_eq!(parse_age("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_age("1h 30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_age("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_age("0h").unwrap(), Duration::ZERO);
        for bad in ["", "3", "d", "3x", "1.5h", "-1h"] {
            assert!(parse_age(bad).is_err(), "{bad}");
        }
        assert_eq!(format_age(Duration::from_secs(5400)), "1h30m");
        assert_eq!(format_age(Duration::from_secs(3 * 86_400 + 7)), "3d7s");
    }
}
