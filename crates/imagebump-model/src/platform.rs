//! Platforms: `os/architecture[/variant]`.

use std::fmt;
use std::str::FromStr;

/// os/architecture[/variant], e.g. linux/amd64, linux/arm64/v8, linux/arm/v7.
///
/// Equality is literal (`linux/arm64` != `linux/arm64/v8`); use [`Platform::satisfies`] to
/// decide whether an image fits a requested platform.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Platform {
    pub os: String,
    pub architecture: String,
    pub variant: Option<String>,
}

impl Platform {
    /// Does an image built for `self` satisfy a request for `wanted`? os and architecture
    /// must be equal; a requested variant must equal the image's. An image without a
    /// variant has its architecture's default one, as containerd normalises it (arm64: v8,
    /// arm: v7, amd64: v1), so `linux/arm64` satisfies `linux/arm64/v8`. An unrequested
    /// variant is ignored: `linux/amd64/v3` satisfies `linux/amd64`.
    pub fn satisfies(&self, wanted: &Platform) -> bool {
        if self.os != wanted.os || self.architecture != wanted.architecture {
            return false;
        }
        match &wanted.variant {
            None => true,
            Some(v) => self
                .variant
                .as_deref()
                .or_else(|| default_variant(&self.architecture))
                .is_some_and(|mine| mine == v),
        }
    }
}

fn default_variant(architecture: &str) -> Option<&'static str> {
    match architecture {
        "arm64" => Some("v8"),
        "arm" => Some("v7"),
        "amd64" => Some("v1"),
        _ => None,
    }
}

impl FromStr for Platform {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| {
            format!("invalid platform {s:?}: {why}; expected os/architecture[/variant], e.g. linux/amd64 or linux/arm/v7")
        };
        let parts: Vec<&str> = s.trim().split('/').collect();
        let (os, architecture, variant) = match parts.as_slice() {
            [] | [_] => return Err(bad("missing architecture")),
            [os, architecture] => (*os, *architecture, None),
            [os, architecture, variant] => (*os, *architecture, Some(*variant)),
            _ => return Err(bad("too many parts")),
        };
        if let Some(p) = parts.iter().find(|p| !is_platform_word(p)) {
            return Err(bad(&format!(
                "{p:?} is not a lowercase name (letters, digits, '_', '.', '-')"
            )));
        }
        // The names `uname -m` gives are common in hand-written configuration.
        let architecture = match architecture {
            "x86_64" | "x86-64" => "amd64",
            "aarch64" => "arm64",
            a => a,
        };
        Ok(Platform {
            os: os.to_string(),
            architecture: architecture.to_string(),
            variant: variant.map(str::to_string),
        })
    }
}

fn is_platform_word(p: &str) -> bool {
    !p.is_empty()
        && p.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'.' | b'-')
        })
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}
