//! Image names: parsing `[host/]path[:tag][@digest]` and Docker Hub normalisation.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

pub const DOCKER_HUB: &str = "docker.io";

/// A registry repository, normalised: `docker.io/library/nginx`, `ghcr.io/acme/web`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct ImageName {
    /// Registry host (with port), `docker.io` for Docker Hub.
    pub registry: String,
    /// Repository path inside the registry, `library/nginx` for Docker Hub's official images.
    pub repository: String,
}

impl fmt::Display for ImageName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.registry.is_empty() {
            return f.write_str(&self.repository);
        }
        write!(f, "{}/{}", self.registry, self.repository)
    }
}

impl ImageName {
    /// A value listed as an image though it is not one (a placeholder), kept as written;
    /// it has no registry and is never looked up.
    pub fn unparsed(value: &str) -> ImageName {
        ImageName {
            registry: String::new(),
            repository: value.to_string(),
        }
    }
}

/// A parsed reference as written in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub name: ImageName,
    /// The name exactly as written (without tag and digest), for writing back.
    pub written: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid image reference {input:?}: {reason}")]
pub struct NameError {
    pub input: String,
    pub reason: &'static str,
}

#[cfg(test)]
static TAG: LazyLock<Regex> = LazyLock::new(|| pattern(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"));
#[cfg(test)]
static COMPONENT: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$"));
static DIGEST: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$"));
#[cfg(test)]
static HOST: LazyLock<Regex> = LazyLock::new(|| {
    pattern(r"^(?:[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?$")
});

/// One of the constant patterns above.
// why: each is a literal in this file, and `tests::patterns_compile` compiles every one, so a
// typo fails the tests rather than a run.
#[allow(clippy::expect_used)]
fn pattern(re: &str) -> Regex {
    Regex::new(re).expect("a constant pattern")
}

/// The distribution spec's tag grammar, `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`, checked byte
/// by byte: every listed tag of every repository passes here (the same answer as the
/// `TAG` pattern, which the tests compare it with).
pub fn is_valid_tag(tag: &str) -> bool {
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    match tag.as_bytes().split_first() {
        Some((first, rest)) => {
            word(first)
                && rest.len() <= 127
                && rest.iter().all(|b| word(b) || *b == b'.' || *b == b'-')
        }
        None => false,
    }
}

/// A registry host, `host[:port]`: labels of letters, digits and `-` joined by dots, or an
/// IPv6 address in brackets; the port digits. Checked byte by byte (the same answer as the
/// `HOST` pattern, which the tests compare it with): every reference's name with a host
/// passes here.
fn is_valid_host(host: &str) -> bool {
    let bytes = host.as_bytes();
    let (name, port) = if bytes.first() == Some(&b'[') {
        let Some(close) = bytes.iter().position(|&b| b == b']') else {
            return false;
        };
        let inside = bytes.get(1..close).unwrap_or_default();
        if inside.is_empty() || !inside.iter().all(|b| b.is_ascii_hexdigit() || *b == b':') {
            return false;
        }
        (
            inside,
            bytes.get(close.saturating_add(1)..).unwrap_or_default(),
        )
    } else {
        let colon = bytes.iter().position(|&b| b == b':').unwrap_or(bytes.len());
        let name = bytes.get(..colon).unwrap_or_default();
        let label =
            |l: &[u8]| !l.is_empty() && l.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-');
        if !name.split(|&b| b == b'.').all(label) {
            return false;
        }
        (name, bytes.get(colon..).unwrap_or_default())
    };
    !name.is_empty()
        && match port.split_first() {
            None => true,
            Some((b':', digits)) => !digits.is_empty() && digits.iter().all(u8::is_ascii_digit),
            Some(_) => false,
        }
}

/// A path component of a repository name by the distribution spec's grammar,
/// `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`, checked byte by byte: every reference's name
/// passes here (the same answer as the `COMPONENT` pattern, which the tests compare it with).
fn is_valid_component(component: &str) -> bool {
    let bytes = component.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let mut at = 0usize;
    loop {
        // A run of letters and digits, then a separator, or the end.
        let run = bytes.get(at..).unwrap_or_default();
        let letters = run.iter().take_while(|b| alnum(b)).count();
        if letters == 0 {
            return false;
        }
        at = at.saturating_add(letters);
        let Some(&sep) = bytes.get(at) else {
            return true;
        };
        let rest = bytes.get(at..).unwrap_or_default();
        let seps = rest.iter().take_while(|&&b| b == sep).count();
        let allowed = match sep {
            b'.' => seps == 1,
            b'_' => seps <= 2,
            b'-' => true,
            _ => false,
        };
        if !allowed {
            return false;
        }
        at = at.saturating_add(seps);
    }
}

pub fn is_valid_digest(digest: &str) -> bool {
    DIGEST.is_match(digest)
}

/// A digest imagebump accepts from a registry and writes into a manifest: `sha256:` and
/// exactly 64 lower-case hexadecimal digits. (References read from files may name other
/// algorithms, see [`is_valid_digest`]; a registry's answer may not.)
pub fn is_sha256_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Why `value` is a placeholder for an image rather than an image, if it is one: a template
/// (`{{ .Values.image }}`, `${TAG}`, `$(IMAGE)`, `$IMAGE`), an angle-bracket slot (`<OWNER>/app`), or an
/// upper-case or underscore-wrapped word (`CONTAINER_IMAGES_REGISTRY/app`, `_image_`,
/// `IMAGE`), a pattern matching many images (`public.ecr.aws/*`, `!*:latest`, a policy
/// engine's), or an expression (`string | default=nginx`, a kro schema field). Upstream
/// charts, kustomize bases and policies are full of them; they are listed as unmanaged,
/// never reported as broken references. None of these characters can be in a reference.
pub fn placeholder(value: &str) -> Option<&'static str> {
    let v = value.trim();
    if v.is_empty() {
        return Some("empty");
    }
    // One pass over the bytes (every value of every values file comes here): `%{` holds
    // a brace too.
    let (mut template, mut angle, mut pattern, mut expression) = (false, false, false, false);
    for b in v.bytes() {
        template |= matches!(b, b'{' | b'}' | b'$');
        angle |= matches!(b, b'<' | b'>');
        pattern |= matches!(b, b'*' | b'?');
        expression |= matches!(b, b'|' | b'=' | b' ' | b'\t' | b'(' | b')');
    }
    if template {
        return Some("a template, filled in at deploy time");
    }
    if angle {
        return Some("a placeholder (`<...>`)");
    }
    if pattern || v.starts_with('!') {
        return Some("a pattern matching images (`*`, `?`, `!`), not one image");
    }
    if expression {
        return Some("an expression or schema type (`|`, `=`, spaces), not an image");
    }
    placeholder_words(v).then_some("a placeholder, filled in at deploy time")
}

/// Whether a path component of `value`'s name (before `@`), up to its `:`, is a word in
/// capitals (`REPLACE_ME`, `IMAGE-1`) or wrapped in underscores (`_image_`). Byte by byte:
/// a non-ASCII character is none of these, as a character or as its bytes.
fn placeholder_words(value: &str) -> bool {
    let bytes = value.as_bytes();
    let name = bytes.split(|&b| b == b'@').next().unwrap_or(bytes);
    let word_like = |c: &[u8]| {
        let word = c.split(|&b| b == b':').next().unwrap_or(c);
        let upper = word.iter().any(u8::is_ascii_uppercase)
            && (word.iter())
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-');
        let wrapped = word.len() > 2 && word.starts_with(b"_") && word.ends_with(b"_");
        upper || wrapped
    };
    name.split(|&b| b == b'/').any(word_like)
}

/// Parse a repository name without tag or digest.
pub fn parse_name(input: &str) -> Result<ImageName, NameError> {
    let err = |reason| NameError {
        input: input.to_string(),
        reason,
    };
    if input.is_empty() {
        return Err(err("empty name"));
    }
    let (first, rest) = match input.split_once('/') {
        Some((first, rest)) => (first, Some(rest)),
        None => (input, None),
    };
    let is_host =
        rest.is_some() && (first.contains('.') || first.contains(':') || first == "localhost");
    let (registry, path) = if is_host {
        if !is_valid_host(first) {
            return Err(err("bad registry host"));
        }
        (first.to_string(), rest.unwrap_or_default().to_string())
    } else {
        (DOCKER_HUB.to_string(), input.to_string())
    };
    let registry = match registry.as_str() {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => {
            DOCKER_HUB.to_string()
        }
        _ => registry,
    };
    if path.is_empty() || !path.split('/').all(is_valid_component) {
        return Err(err("repository must be lowercase path components"));
    }
    let repository = if registry == DOCKER_HUB && !path.contains('/') {
        format!("library/{path}")
    } else {
        path
    };
    Ok(ImageName {
        registry,
        repository,
    })
}

/// Parse `name[:tag][@digest]`.
pub fn parse_reference(input: &str) -> Result<Reference, NameError> {
    let err = |reason| NameError {
        input: input.to_string(),
        reason,
    };
    let (rest, digest) = match input.split_once('@') {
        Some((rest, d)) => {
            if !is_valid_digest(d) {
                return Err(err("bad digest"));
            }
            (rest, Some(d.to_string()))
        }
        None => (input, None),
    };
    // The tag follows the last `:` of the last path component (a `:` before a `/` is the
    // registry's port).
    let (written, tag) = match rest.rsplit_once(':') {
        Some((written, tag)) if !tag.contains('/') => {
            if !is_valid_tag(tag) {
                return Err(err("bad tag"));
            }
            (written, Some(tag.to_string()))
        }
        _ => (rest, None),
    };
    let name = parse_name(written)?;
    Ok(Reference {
        name,
        written: written.to_string(),
        tag,
        digest,
    })
}

/// Whether two image names name the same repository, however they are spelled: equal as
/// written, or equal once normalised (`nginx`, `library/nginx`, `docker.io/library/nginx`
/// and `index.docker.io/library/nginx` are one image). Kustomize's `name` and Argo CD's
/// override entries are matched this way.
pub fn same_repository(a: &str, b: &str) -> bool {
    a == b || matches!((parse_name(a), parse_name(b)), (Ok(x), Ok(y)) if x == y)
}

#[cfg(test)]
mod tests {
    #[test]
    fn registry_digests_are_sha256_and_64_lower_hex() {
        let good = format!("sha256:{}", "0123456789abcdef".repeat(4));
        assert!(super::is_sha256_digest(&good));
        for bad in [
            good.to_uppercase(),
            format!("sha256:{}", "0123456789ABCDEF".repeat(4)),
            format!("sha256:{}", "0".repeat(63)),
            format!("sha256:{}", "0".repeat(65)),
            format!("sha512:{}", "0".repeat(64)),
            "md5:d41d8cd98f00b204e9800998ecf8427e".to_string(),
            format!("sha256:{}g", "0".repeat(63)),
            format!("{good}\n"),
            String::new(),
        ] {
            assert!(!super::is_sha256_digest(&bad), "{bad:?}");
        }
    }

    proptest::proptest! {
        /// The byte-wise tag check answers as the distribution spec's pattern does.
        #[test]
        fn tag_check_is_the_pattern(tag in "[A-Za-z0-9_.:/@ é-]{0,3}|[a-z0-9_.-]{120,135}") {
            proptest::prop_assert_eq!(is_valid_tag(&tag), super::TAG.is_match(&tag));
        }

        /// The byte-wise host check answers as the host pattern does.
        #[test]
        fn host_check_is_the_pattern(h in "[a-zA-Z0-9.:\\[\\]é-]{0,10}|\\[[0-9a-f:]{0,6}\\]?(:[0-9]{0,3})?|[a-z0-9-]{1,4}(\\.[a-z0-9-]{0,3}){0,2}(:[0-9a-z]{0,3})?") {
            proptest::prop_assert_eq!(is_valid_host(&h), super::HOST.is_match(&h));
        }

        /// The byte-wise component check answers as the distribution spec's pattern does.
        #[test]
        fn component_check_is_the_pattern(c in "[a-c0-9._A/-]{0,8}|[a-z]{1,3}(__|___|--|-_|_-|\\.\\.|\\._)[a-z]{0,2}") {
            proptest::prop_assert_eq!(is_valid_component(&c), super::COMPONENT.is_match(&c));
        }
    }

    #[test]
    fn docker_hub_spellings_are_one_repository() {
        for (a, b) in [
            ("jannfis/foobar", "docker.io/jannfis/foobar"),
            ("jannfis/foobar", "index.docker.io/jannfis/foobar"),
            ("nginx", "docker.io/library/nginx"),
            ("library/nginx", "registry-1.docker.io/library/nginx"),
        ] {
            assert!(same_repository(a, b), "{a} {b}");
        }
        assert!(!same_repository("jannfis/foobar", "ghcr.io/jannfis/foobar"));
        assert!(!same_repository("nginx", "nginx/nginx"));
    }

    use super::*;

    #[test]
    fn patterns_compile() {
        for re in [&TAG, &COMPONENT, &DIGEST, &HOST] {
            LazyLock::force(re);
        }
    }

    /// The words' check as it was written over characters: the oracle of
    /// [`placeholder_words`].
    fn placeholder_words_by_chars(value: &str) -> bool {
        let name = value.split(['@']).next().unwrap_or(value);
        let word_like = |c: &str| {
            let word = c.split(':').next().unwrap_or(c);
            let upper = word.chars().any(|ch| ch.is_ascii_uppercase())
                && word.chars().all(|ch| {
                    ch.is_ascii_uppercase() || ch.is_ascii_digit() || ch == '_' || ch == '-'
                });
            let wrapped = word.len() > 2 && word.starts_with('_') && word.ends_with('_');
            upper || wrapped
        };
        name.split('/').any(word_like)
    }

    proptest::proptest! {
        #[test]
        fn placeholder_words_are_found_byte_by_byte_as_by_characters(
            v in "[A-Za-z0-9_:/@.éÉ-]{0,16}"
        ) {
            proptest::prop_assert_eq!(placeholder_words(&v), placeholder_words_by_chars(&v));
        }
    }

    #[test]
    fn placeholders_are_not_images() {
        for p in [
            "{{ .Values.image }}",
            "ghcr.io/acme/web:${TAG}",
            "$(IMAGE)",
            "{IMAGE}",
            "$IMAGE:latest",
            "ghcr.io/acme/web:$TAG",
            "<OWNER>/app:1.0",
            "CONTAINER_IMAGES_REGISTRY/app:1.0",
            "_image_",
            "IMAGE",
            "registry.example.com/REPLACE_ME:latest",
            "",
            "public.ecr.aws/*",
            "eu.foo.io/* | bar.io/*",
            "nginx:1.?",
            "!*:latest",
            "string | default=nginx",
            "string default=nginx",
            "integer(3)",
        ] {
            assert!(placeholder(p).is_some(), "{p}");
        }
        for i in [
            "nginx:1.27",
            "ghcr.io/acme/web_app:v1.2.3",
            "registry.example.com:5000/a/b@sha256:0123",
            "quay.io/prometheus/node-exporter:v1.8.2",
            "Registry.Example.com/app:1.0",
        ] {
            assert_eq!(placeholder(i), None, "{i}");
        }
    }

    #[test]
    fn docker_hub_normalisation() {
        assert_eq!(
            parse_name("nginx").unwrap().to_string(),
            "docker.io/library/nginx"
        );
        assert_eq!(
            parse_name("bitnami/redis").unwrap().to_string(),
            "docker.io/bitnami/redis"
        );
        assert_eq!(
            parse_name("index.docker.io/library/nginx")
                .unwrap()
                .to_string(),
            "docker.io/library/nginx"
        );
        assert_eq!(
            parse_name("docker.io/nginx").unwrap().to_string(),
            "docker.io/library/nginx"
        );
        assert_eq!(
            parse_name("127.0.0.1:5000/a/b").unwrap().registry,
            "127.0.0.1:5000"
        );
        assert_eq!(parse_name("localhost/a").unwrap().registry, "localhost");
    }

    #[test]
    fn references() {
        let r = parse_reference("ghcr.io/acme/web:1.2.3@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef").unwrap();
        assert_eq!(r.written, "ghcr.io/acme/web");
        assert_eq!(r.tag.as_deref(), Some("1.2.3"));
        assert!(r.digest.is_some());
        let r = parse_reference("127.0.0.1:5000/app").unwrap();
        assert_eq!(r.tag, None);
        assert_eq!(r.name.repository, "app");
        assert!(parse_reference("Nginx:1").is_err());
        assert!(parse_reference("nginx:-bad").is_err());
        assert!(parse_reference("nginx@sha256:short").is_err());
    }
}
