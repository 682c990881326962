//! Go's `path/filepath.Match` (Unix), which argocd-image-updater uses for
//! `applicationRefs[].namePattern` and for ignore-tags.
//!
//! `*` is any run of characters other than `/`, `?` one such character, `[...]` a class
//! (`[^...]` negated, ranges `a-z`, `\` escapes), `\c` the character `c`. No `{a,b}`, no
//! `**`. A malformed pattern (unclosed `[`, empty class, trailing `\`, reversed range) is an
//! error. Unlike `globset`, which the rest of imagebump uses, these rules are exactly Go's.

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Star,
    Any,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Lit(char),
}

/// A compiled Go glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoGlob(Vec<Token>);

/// Why Go's `path.Match` refuses a pattern (its `ErrBadPattern`), which AIU then never
/// matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BadPattern {
    #[error("pattern ends with `\\`")]
    TrailingBackslash,
    #[error("unclosed `[`")]
    UnclosedClass,
    #[error("empty or malformed character class")]
    MalformedClass,
    #[error("reversed range {lo}-{hi}")]
    ReversedRange { lo: char, hi: char },
}

impl GoGlob {
    /// Whether this is the pattern `**` (which Go reads as `*`, and a git directory
    /// generator path as any number of directories).
    pub fn is_double_star(&self) -> bool {
        self.0 == [Token::Star, Token::Star]
    }

    /// Compile `pattern`; `Err` is Go's `ErrBadPattern`, with the reason.
    pub fn new(pattern: &str) -> Result<GoGlob, BadPattern> {
        let mut tokens = Vec::new();
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            tokens.push(match c {
                '*' => Token::Star,
                '?' => Token::Any,
                '\\' => Token::Lit(chars.next().ok_or(BadPattern::TrailingBackslash)?),
                '[' => {
                    let negated = chars.next_if_eq(&'^').is_some();
                    let mut ranges = Vec::new();
                    loop {
                        if chars.peek() == Some(&']') && !ranges.is_empty() {
                            chars.next();
                            break;
                        }
                        let lo = class_char(&mut chars)?;
                        let hi = if chars.next_if_eq(&'-').is_some() {
                            class_char(&mut chars)?
                        } else {
                            lo
                        };
                        if hi < lo {
                            return Err(BadPattern::ReversedRange { lo, hi });
                        }
                        ranges.push((lo, hi));
                    }
                    Token::Class { negated, ranges }
                }
                c => Token::Lit(c),
            });
        }
        Ok(GoGlob(tokens))
    }

    pub fn is_match(&self, name: &str) -> bool {
        let name: Vec<char> = name.chars().collect();
        matches(&self.0, &name)
    }
}

/// One character of a class: `\c`, or any character except `-` and `]`.
fn class_char(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<char, BadPattern> {
    match chars.next() {
        None => Err(BadPattern::UnclosedClass),
        Some('-') | Some(']') => Err(BadPattern::MalformedClass),
        Some('\\') => chars.next().ok_or(BadPattern::UnclosedClass),
        Some(c) => Ok(c),
    }
}

/// Whether `tokens` match all of `name`: the positions of `name` each prefix of the
/// pattern can reach, token by token. A pattern of `t` tokens costs `t` passes over the
/// name, whatever its stars: trying every split of the name at every star instead costs
/// time exponential in the stars (`*a*a*a*a*a*a*b` against a long tag of `a`s).
fn matches(tokens: &[Token], name: &[char]) -> bool {
    let mut reach = vec![false; name.len().saturating_add(1)];
    if let Some(first) = reach.first_mut() {
        *first = true;
    }
    for token in tokens {
        reach = match token {
            // `*` never crosses a `/`: from a reached position to any later one before it.
            Token::Star => {
                let mut active = false;
                let mut next = Vec::with_capacity(reach.len());
                for (q, &reached) in reach.iter().enumerate() {
                    let after_slash = q
                        .checked_sub(1)
                        .and_then(|i| name.get(i))
                        .is_some_and(|&c| c == '/');
                    active = reached || (active && !after_slash);
                    next.push(active);
                }
                next
            }
            _ => std::iter::once(false)
                .chain(
                    reach
                        .iter()
                        .zip(name)
                        .map(|(&reached, &c)| reached && one(token, c)),
                )
                .collect(),
        };
        if !reach.contains(&true) {
            return false;
        }
    }
    reach.last().copied().unwrap_or(false)
}

fn one(token: &Token, c: char) -> bool {
    match token {
        Token::Lit(l) => *l == c,
        Token::Any => c != '/',
        Token::Class { negated, ranges } => {
            c != '/' && ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
        }
        Token::Star => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_stars_cost_time_linear_in_the_pattern() {
        let g = GoGlob::new(&format!("{}b", "*a".repeat(40))).unwrap();
        let tag = "a".repeat(128);
        let started = std::time::Instant::now();
        assert!(!g.is_match(&tag));
        assert!(g.is_match(&format!("{tag}b")));
        assert!(!g.is_match(&format!("{}/{}b", "a".repeat(20), "a".repeat(40))));
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        let slash = GoGlob::new("a*/b?c").unwrap();
        assert!(slash.is_match("ax/bxc") && slash.is_match("a/bxc"));
        assert!(!slash.is_match("ax/y/bxc") && !slash.is_match("ax/b/c"));
    }

    #[test]
    fn bad_patterns_say_why() {
        assert_eq!(
            GoGlob::new("a\\").unwrap_err(),
            BadPattern::TrailingBackslash
        );
        assert_eq!(GoGlob::new("[a").unwrap_err(), BadPattern::UnclosedClass);
        assert_eq!(GoGlob::new("[]").unwrap_err(), BadPattern::MalformedClass);
        assert_eq!(
            GoGlob::new("[z-a]").unwrap_err().to_string(),
            "reversed range z-a"
        );
    }

    fn m(p: &str, n: &str) -> Result<bool, BadPattern> {
        GoGlob::new(p).map(|g| g.is_match(n))
    }

    #[test]
    fn go_match_table() {
        // From Go's path/filepath match_test.go.
        let cases: &[(&str, &str, bool)] = &[
            ("abc", "abc", true),
            ("*", "abc", true),
            ("*c", "abc", true),
            ("a*", "a", true),
            ("a*", "abc", true),
            ("a*", "ab/c", false),
            ("a*/b", "abc/b", true),
            ("a*/b", "a/c/b", false),
            ("a*b*c*d*e*/f", "axbxcxdxe/f", true),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/f", true),
            ("a*b*c*d*e*/f", "axbxcxdxe/xxx/f", false),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/fff", false),
            ("a*b?c*x", "abxbbxdbxebxczzx", true),
            ("a*b?c*x", "abxbbxdbxebxczzy", false),
            ("ab[c]", "abc", true),
            ("ab[b-d]", "abc", true),
            ("ab[e-g]", "abc", false),
            ("ab[^c]", "abc", false),
            ("ab[^b-d]", "abc", false),
            ("ab[^e-g]", "abc", true),
            ("a\\*b", "a*b", true),
            ("a\\*b", "ab", false),
            ("a?b", "a☺b", true),
            ("a[^a]b", "a☺b", true),
            ("a???b", "a☺b", false),
            ("a[^a][^a][^a]b", "a☺b", false),
            ("[a-ζ]*", "α", true),
            ("*[a-ζ]", "A", false),
            ("a?b", "a/b", false),
            ("a*b", "a/b", false),
            ("[\\]a]", "]", true),
            ("[\\-]", "-", true),
            ("[x\\-]", "x", true),
            ("[x\\-]", "-", true),
            ("[x\\-]", "z", false),
            ("[\\-x]", "x", true),
            ("[\\-x]", "-", true),
            ("[\\-x]", "a", false),
            ("*x", "xxx", true),
        ];
        for (p, n, want) in cases {
            assert_eq!(m(p, n), Ok(*want), "{p} vs {n}");
        }
    }

    #[test]
    fn bad_patterns() {
        for p in [
            "[]a]", "[-]", "[x-]", "[-x]", "\\", "[a-b-c]", "[", "[^", "[^bc", "a[", "[z-a]",
        ] {
            assert!(GoGlob::new(p).is_err(), "{p}");
        }
    }
}
