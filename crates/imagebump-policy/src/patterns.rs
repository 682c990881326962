//! Every regular expression the repository writes (a marker's or a rule's `allowTags` and
//! `pattern`, Argo CD's `allow-tags`, a Flux ImagePolicy's `filterTags`, an ImageUpdater's
//! `allowTags`) is compiled here: once per distinct text for the whole run, each under a
//! size limit, and all of them under one budget, so that neither one big pattern nor many
//! different ones can take the memory of the job (docs/security.md, "Bad input costs
//! little").
//!
//! The `regex` crate does not say how much memory a compiled pattern holds, so a pattern
//! is charged by the smallest of a few size limits it compiles under: the limit bounds
//! each of its compiled programs (forward and reverse) and each of its lazy DFAs' caches.

use std::sync::{LazyLock, Mutex};

use ::regex::{Regex, RegexBuilder};

/// The size limits a pattern is tried under, smallest first; one that needs more than the
/// last is refused.
const TIERS: [usize; 4] = [8 << 10, 64 << 10, 256 << 10, LARGEST];

/// A compiled pattern holds up to four structures its size limit bounds (two programs,
/// two lazy DFA caches): it is charged four times its tier.
const PARTS: usize = 4;

/// What all the distinct patterns of a run may be charged together.
pub const BUDGET: usize = 64 << 20;

/// Why a pattern of the repository is not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("bad regular expression {text:?}: {message}")]
    Invalid { text: String, message: String },
    #[error("regular expression {text:?} is too big: it compiles to more than {} KiB", LARGEST >> 10)]
    TooBig { text: String },
    #[error("regular expression {text:?} not compiled: the run's regular expressions have used their memory budget ({} MiB)", BUDGET >> 20)]
    OverBudget { text: String },
}

/// The largest size limit a pattern may compile under.
const LARGEST: usize = 1 << 20;

/// The patterns compiled so far, by their text, and what they have been charged.
pub struct Patterns {
    compiled: foldhash::HashMap<String, Result<Regex, PatternError>>,
    charged: usize,
    budget: usize,
}

impl Patterns {
    pub fn new(budget: usize) -> Patterns {
        Patterns {
            compiled: foldhash::HashMap::default(),
            charged: 0,
            budget,
        }
    }

    /// The pattern `text` compiled, or why not: it does not compile, needs more than the
    /// largest size limit, or the run's patterns have used the budget.
    pub fn compile(&mut self, text: &str) -> Result<Regex, PatternError> {
        if let Some(done) = self.compiled.get(text) {
            return done.clone();
        }
        let left = self.budget.saturating_sub(self.charged);
        let result = compile_within(text, left).map(|(re, cost)| {
            self.charged = self.charged.saturating_add(cost);
            re
        });
        self.compiled.insert(text.to_string(), result.clone());
        result
    }
}

/// `text` compiled under the smallest size limit it fits, and what it is charged; refused
/// when that charge is more than `left`. The smallest and the largest limits are tried
/// first, so a pattern past every limit costs two attempts, not one per limit.
fn compile_within(text: &str, left: usize) -> Result<(Regex, usize), PatternError> {
    let (first, middle) = TIERS.split_first().unwrap_or((&LARGEST, &[]));
    if let Some(done) = attempt(text, *first, left)? {
        return Ok(done);
    }
    if attempt(text, LARGEST, usize::MAX)?.is_none() {
        return Err(PatternError::TooBig { text: text.into() });
    }
    for limit in middle {
        if let Some(done) = attempt(text, *limit, left)? {
            return Ok(done);
        }
    }
    Err(PatternError::TooBig { text: text.into() })
}

/// `text` compiled under `limit` and its charge, `None` when it needs more than `limit`;
/// refused when the charge is more than `left`.
fn attempt(text: &str, limit: usize, left: usize) -> Result<Option<(Regex, usize)>, PatternError> {
    let cost = limit.saturating_mul(PARTS);
    if cost > left {
        return Err(PatternError::OverBudget { text: text.into() });
    }
    match RegexBuilder::new(text)
        .size_limit(limit)
        .dfa_size_limit(limit)
        .build()
    {
        Ok(re) => Ok(Some((re, cost))),
        Err(::regex::Error::CompiledTooBig(_)) => Ok(None),
        Err(e) => Err(PatternError::Invalid {
            text: text.into(),
            message: e.to_string(),
        }),
    }
}

/// The run's patterns: one process runs one command.
static RUN: LazyLock<Mutex<Patterns>> = LazyLock::new(|| Mutex::new(Patterns::new(BUDGET)));

/// A pattern the repository wrote, compiled through the run's [`Patterns`].
pub fn compile(text: &str) -> Result<Regex, PatternError> {
    // A thread that panicked while holding the lock left the map whole (every insert is
    // one call), so its contents stay usable.
    let mut patterns = RUN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    patterns.compile(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_is_compiled_once_and_charged_by_its_size() {
        let mut p = Patterns::new(BUDGET);
        let re = p.compile("^v[0-9]+$").unwrap();
        assert!(re.is_match("v12"));
        assert_eq!(p.charged, TIERS[0] * PARTS);
        p.compile("^v[0-9]+$").unwrap();
        assert_eq!(
            p.charged,
            TIERS[0] * PARTS,
            "the same text again costs nothing"
        );
        // Unicode word characters repeated: past the smallest limit, within the largest.
        p.compile(r"^\w{1,3}$").unwrap();
        assert!(p.charged > TIERS[0] * PARTS * 2, "{}", p.charged);
    }

    #[test]
    fn a_pattern_past_the_largest_limit_is_refused() {
        let mut p = Patterns::new(BUDGET);
        let e = p.compile(r"^\w{1,100}$").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"regular expression "^\\w{1,100}$" is too big: it compiles to more than 1024 KiB"#
        );
        assert_eq!(p.charged, 0);
        let bad = p.compile("(").unwrap_err().to_string();
        assert_eq!(
            bad.lines().next().unwrap(),
            "bad regular expression \"(\": regex parse error:"
        );
    }

    #[test]
    fn many_different_patterns_share_one_budget() {
        let mut p = Patterns::new(TIERS[0] * PARTS * 3);
        for i in 0..3 {
            p.compile(&format!("^a{i}$")).unwrap();
        }
        let e = p.compile("^a3$").unwrap_err();
        assert_eq!(
            e,
            PatternError::OverBudget {
                text: "^a3$".into()
            }
        );
        assert!(
            e.to_string()
                .contains("have used their memory budget (64 MiB)"),
            "{e}"
        );
        // What was compiled before stays usable.
        assert!(p.compile("^a1$").unwrap().is_match("a1"));
    }
}
