//! Tag filters that run before any ordering or metadata fetch: `allowTags` and
//! `ignoreTags` (`minAge`'s duration syntax is `imagebump_model::duration`).

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
        super::patterns::compile(re)
            .map(|r| Some(AllowTags(r)))
            .map_err(|e| e.to_string())
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
            .and_then(|&i| self.globs.get(i))
            .map(String::as_str)
    }
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
}
