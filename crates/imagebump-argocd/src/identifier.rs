//! argocd-image-updater's reading of an image identifier `name[:constraint][@digest]`
//! (`image.NewFromIdentifier` in registry-scanner/pkg/image/image.go).
//!
//! AIU first tries the Docker reference grammar (`reference.ParseNormalizedNamed` from
//! github.com/distribution/reference). A constraint that is also a valid tag (`1.x`, `1.2`)
//! passes, and a registry host with a port is read correctly (`localhost:5000/app:1.x`).
//! A constraint with other characters (`~1.2`, `^1`, `>=1.0 <2`) fails that grammar, and
//! AIU falls back to its legacy split: the first path component is the registry only if it
//! contains a `.`, then the text is cut at the first `:` (or, with an `@`, at the last `:`
//! after the last `/` before the `@`). So `localhost:5000/app:~1.2` is read as image
//! `localhost` with constraint `5000/app:~1.2`. [`parse`] reproduces both paths.

use std::sync::LazyLock;

use regex::Regex;

/// The parts AIU finds in an identifier (the alias already removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identifier {
    /// The image as written, without the tag (constraint) and digest.
    pub name: String,
    /// The tag part: a constraint (semver) or the tag to follow (digest). Never empty.
    pub tag: Option<String>,
    pub digest: Option<String>,
    /// True when the Docker reference grammar rejected the text and AIU's legacy split
    /// was used.
    pub legacy: bool,
}

const DOMAIN_COMPONENT: &str = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const PATH_COMPONENT: &str = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*";
const TAG: &str = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}";
const DIGEST: &str = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}";

/// The anchored reference grammar of github.com/distribution/reference (regexp.go):
/// `name[:tag][@digest]`, the name optionally starting with `domain[:port]/`.
static REFERENCE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let domain = format!(r"{DOMAIN_COMPONENT}(?:\.{DOMAIN_COMPONENT})*");
    let host = format!(r"(?:{domain}|\[(?:[a-fA-F0-9:]+)\])");
    let name = format!(r"(?:{host}(?::[0-9]+)?/)?{PATH_COMPONENT}(?:/{PATH_COMPONENT})*");
    Regex::new(&format!(r"^({name})(?::({TAG}))?(?:@({DIGEST}))?$")).ok()
});

/// A bare 64-character hex string is an image ID, which the grammar refuses as a name.
static IDENTIFIER: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^[a-f0-9]{64}$").ok());

/// AIU's reading of `text` (no alias).
pub fn parse(text: &str) -> Identifier {
    docker_reference(text).unwrap_or_else(|| legacy(text))
}

/// `reference.ParseNormalizedNamed`, or `None` where it returns an error.
fn docker_reference(text: &str) -> Option<Identifier> {
    if IDENTIFIER.as_ref().is_none_or(|re| re.is_match(text)) {
        return None;
    }
    let (domain, remainder) = split_docker_domain(text);
    // The repository (up to the first `:`) must be lowercase.
    let remote = remainder.split(':').next().unwrap_or_default();
    if remote.to_lowercase() != remote {
        return None;
    }
    let full = format!("{domain}/{remainder}");
    let caps = REFERENCE.as_ref()?.captures(&full)?;
    let name_len = caps.get(1).map_or(0, |m| m.as_str().len());
    if name_len > 255 {
        return None;
    }
    let tag = caps.get(2).map(|m| m.as_str().to_string());
    let digest = caps.get(3).map(|m| m.as_str().to_string());
    if let Some(d) = &digest {
        if !valid_digest(d) {
            return None;
        }
    }
    let name = without_suffixes(text, tag.as_deref(), digest.as_deref())?;
    Some(Identifier {
        name: name.to_string(),
        tag,
        digest,
        legacy: false,
    })
}

/// `splitDockerDomain`: the first component is a registry host if it has a `.` or `:`, is
/// `localhost`, or has an uppercase letter; otherwise the image is on Docker Hub.
fn split_docker_domain(name: &str) -> (String, String) {
    let (mut domain, mut remainder) = match name.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.to_lowercase() != first =>
        {
            (first.to_string(), rest.to_string())
        }
        _ => ("docker.io".to_string(), name.to_string()),
    };
    if domain == "index.docker.io" {
        domain = "docker.io".to_string();
    }
    if domain == "docker.io" && !remainder.contains('/') {
        remainder = format!("library/{remainder}");
    }
    (domain, remainder)
}

/// go-digest's validation: a registered algorithm with its exact lowercase hex length.
fn valid_digest(digest: &str) -> bool {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return false;
    };
    let len = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == len
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Tag and digest are suffixes of `text`, so the name as written is what precedes
/// `:tag@digest`.
fn without_suffixes<'a>(text: &'a str, tag: Option<&str>, digest: Option<&str>) -> Option<&'a str> {
    let mut name = text;
    if let Some(d) = digest {
        name = name.strip_suffix(d)?.strip_suffix('@')?;
    }
    if let Some(t) = tag {
        name = name.strip_suffix(t)?.strip_suffix(':')?;
    }
    Some(name)
}

/// `getRegistryFromIdentifier` + `getImageTagFromIdentifier`.
fn legacy(text: &str) -> Identifier {
    let (registry, rest) = match text.split_once('/') {
        Some((first, rest)) if first.contains('.') => (Some(first), rest),
        _ => (None, text),
    };
    let (name, tag, digest) = match rest.split_once('@') {
        // A `:` after the last `/` starts the tag.
        Some((before, digest)) => match before.rsplit_once(':') {
            Some((name, tag)) if !tag.contains('/') => (name, Some(tag), Some(digest)),
            _ => (before, None, Some(digest)),
        },
        None => match rest.split_once(':') {
            Some((name, tag)) => (name, Some(tag), None),
            None => (rest, None, None),
        },
    };
    let name = match registry {
        Some(r) => format!("{r}/{name}"),
        None => name.to_string(),
    };
    Identifier {
        name,
        tag: tag.filter(|t| !t.is_empty()).map(str::to_string),
        digest: digest.filter(|d| !d.is_empty()).map(str::to_string),
        legacy: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> (String, Option<String>, Option<String>, bool) {
        let i = parse(s);
        (i.name, i.tag, i.digest, i.legacy)
    }

    fn some(s: &str) -> Option<String> {
        Some(s.to_string())
    }

    #[test]
    fn regexes_compile() {
        assert!(REFERENCE.is_some());
        assert!(IDENTIFIER.is_some());
    }

    #[test]
    fn docker_grammar() {
        assert_eq!(p("nginx"), ("nginx".into(), None, None, false));
        assert_eq!(p("nginx:1.x"), ("nginx".into(), some("1.x"), None, false));
        assert_eq!(p("nginx:1.2"), ("nginx".into(), some("1.2"), None, false));
        assert_eq!(
            p("localhost:5000/app:1.x"),
            ("localhost:5000/app".into(), some("1.x"), None, false)
        );
        assert_eq!(
            p("ghcr.io/org/app:v1.2.3"),
            ("ghcr.io/org/app".into(), some("v1.2.3"), None, false)
        );
        let d = format!("sha256:{}", "a".repeat(64));
        assert_eq!(
            p(&format!("quay.io/x/y:latest@{d}")),
            ("quay.io/x/y".into(), some("latest"), Some(d.clone()), false)
        );
        assert_eq!(p(&format!("x/y@{d}")), ("x/y".into(), None, Some(d), false));
        assert_eq!(
            p("[::1]:5000/app:1.0"),
            ("[::1]:5000/app".into(), some("1.0"), None, false)
        );
    }

    #[test]
    fn legacy_split_for_constraints_that_are_not_tags() {
        assert_eq!(p("nginx:~1.2"), ("nginx".into(), some("~1.2"), None, true));
        assert_eq!(
            p("nginx:>=1.0 <2.0"),
            ("nginx".into(), some(">=1.0 <2.0"), None, true)
        );
        assert_eq!(
            p("ghcr.io/org/app:^1.0"),
            ("ghcr.io/org/app".into(), some("^1.0"), None, true)
        );
        assert_eq!(
            p("registry.example.com:5000/app:^1.0"),
            (
                "registry.example.com:5000/app".into(),
                some("^1.0"),
                None,
                true
            )
        );
        // AIU's own misreading: a dotless host with a port is not a registry in the
        // legacy split, so the text is cut at the port's colon.
        assert_eq!(
            p("localhost:5000/app:~1.2"),
            ("localhost".into(), some("5000/app:~1.2"), None, true)
        );
        // An invalid digest algorithm fails the grammar too.
        assert_eq!(
            p("org/app:1.0@md5:0123456789abcdef0123456789abcdef"),
            (
                "org/app".into(),
                some("1.0"),
                some("md5:0123456789abcdef0123456789abcdef"),
                true
            )
        );
        // Uppercase repository names are refused by the grammar.
        assert_eq!(p("Nginx:1.0"), ("Nginx".into(), some("1.0"), None, true));
        assert_eq!(p("nginx:"), ("nginx".into(), None, None, true));
    }
}
