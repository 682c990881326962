//! Tag filters that run before any ordering or metadata fetch: `allowTags` and
//! `ignoreTags` (`minAge`'s duration syntax is `imagebump_model::duration`).

use globset::{Glob, GlobSet, GlobSetBuilder};
use regex::Regex;

use crate::patterns::PatternError;

/// Why an `allowTags` or `ignoreTags` setting cannot filter tags.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("{text:?} is not a tag filter: expected `regexp:<RE>` or `any`")]
    NotAFilter { text: String },
    #[error(transparent)]
    Pattern(#[from] PatternError),
    #[error("bad glob {glob:?}: {message}")]
    Glob { glob: String, message: String },
    #[error("{0}")]
    Set(String),
}

impl FilterError {
    /// What to write instead.
    pub fn hint(&self) -> &'static str {
        match self {
            FilterError::NotAFilter { .. } | FilterError::Pattern(_) => {
                "write `regexp:<RE>` or `any`"
            }
            FilterError::Glob { .. } | FilterError::Set(_) => "globs such as latest, *-rc*, sha-*",
        }
    }
}

/// `allowTags`: `regexp:<RE>` (unanchored, as in argocd-image-updater) or `any`.
#[derive(Debug, Clone)]
pub struct AllowTags(Regex);

impl AllowTags {
    /// `Ok(None)` for `any` (no filter).
    pub fn parse(text: &str) -> Result<Option<AllowTags>, FilterError> {
        let text = text.trim();
        if text == "any" {
            return Ok(None);
        }
        let Some(re) = text.strip_prefix("regexp:") else {
            return Err(FilterError::NotAFilter {
                text: text.to_string(),
            });
        };
        Ok(Some(AllowTags(crate::patterns::compile(re)?)))
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
    pub fn parse(globs: &[String]) -> Result<IgnoreTags, FilterError> {
        let mut b = GlobSetBuilder::new();
        for g in globs {
            b.add(Glob::new(g).map_err(|e| FilterError::Glob {
                glob: g.clone(),
                message: e.to_string(),
            })?);
        }
        Ok(IgnoreTags {
            set: b.build().map_err(|e| FilterError::Set(e.to_string()))?,
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
        assert_eq!(
            AllowTags::parse("^v1").unwrap_err().to_string(),
            "\"^v1\" is not a tag filter: expected `regexp:<RE>` or `any`"
        );
        let e = AllowTags::parse("regexp:(").unwrap_err();
        assert!(matches!(e, FilterError::Pattern(_)), "{e}");
        assert!(e.to_string().starts_with("bad regular"));
        assert_eq!(e.hint(), "write `regexp:<RE>` or `any`");
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
