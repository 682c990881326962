//! `ImageRepository`: the image whose tags a policy chooses from. What only a cluster can
//! use (a pull secret, a cloud provider's workload identity, a CA from a Secret, a proxy)
//! is noted: imagebump takes credentials and TLS from the operator's `registries[]`.

use super::{Fields, Invalid, Meta, Note};
use imagebump_model::name::{parse_name, placeholder};

/// Flux's exclusion list when none is written: cosign signatures.
const DEFAULT_EXCLUSION: &str = r"^.*\.sig$";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRepository {
    pub meta: Meta,
    /// `spec.image` as written (Flux writes it as the name of the new reference).
    pub image: String,
    /// `spec.exclusionList` as `ignoreTags` globs (the ones that translate).
    pub ignore_tags: Vec<String>,
}

/// Fields whose value lives in the cluster: noted once per resource.
const CLUSTER_ONLY: &[(&str, &str)] = &[
    ("secretRef", "its pull secret lives in the cluster"),
    ("certSecretRef", "its CA lives in a cluster Secret"),
    ("proxySecretRef", "its proxy lives in a cluster Secret"),
    (
        "serviceAccountName",
        "its service account's pull secrets live in the cluster",
    ),
];

pub fn read(
    fields: &Fields,
    meta: Meta,
    notes: &mut Vec<Note>,
) -> Result<ImageRepository, Invalid> {
    let image = fields.required(&["spec", "image"])?;
    let label = meta.id("ImageRepository");
    // A post-build variable (`${IMAGE_URI}`) is filled in by the cluster: the repository
    // is read, and the setters of its policies are listed as unmanaged with why.
    if let Some(why) = placeholder(&image) {
        notes.push(Note {
            offset: fields.offset(&["spec", "image"]),
            message: format!(
                "{label}: spec.image {image} is {why}: the setters of its policies are left alone"
            ),
        });
    } else if let Err(e) = parse_name(&image) {
        return Err(Invalid {
            offset: fields.offset(&["spec", "image"]),
            message: format!("spec.image: {e}"),
        });
    }
    for (key, why) in CLUSTER_ONLY {
        if fields.node(&["spec", key]).is_some() {
            notes.push(Note {
                offset: fields.offset(&["spec", key]),
                message: format!("{label}: spec.{key} is not read ({why}): give imagebump the registry's credentials or CA with registries[] in the operator's configuration"),
            });
        }
    }
    if let Some(provider) = fields.string(&["spec", "provider"])? {
        if provider != "generic" {
            notes.push(Note {
                offset: fields.offset(&["spec", "provider"]),
                message: format!("{label}: spec.provider {provider} is the cluster's workload identity: give imagebump the registry's credentials with registries[].credentials ({})", credentials_hint(&provider)),
            });
        }
    }
    let ignore_tags = exclusions(fields, &label, notes)?;
    Ok(ImageRepository {
        meta,
        image,
        ignore_tags,
    })
}

fn credentials_hint(provider: &str) -> &'static str {
    match provider {
        "aws" => "ecr",
        "gcp" => "gcp",
        "azure" => "acr",
        _ => "see docs/registries.md",
    }
}

/// `spec.exclusionList` (Flux's default when unset) as globs; a pattern that is not a
/// plain prefix/suffix/literal match is noted and not honoured.
fn exclusions(fields: &Fields, label: &str, notes: &mut Vec<Note>) -> Result<Vec<String>, Invalid> {
    let path = ["spec", "exclusionList"];
    let patterns: Vec<(usize, String)> = match fields.node(&path) {
        None => vec![(0, DEFAULT_EXCLUSION.to_string())],
        Some(imagebump_yaml::Node::Seq { items, .. }) => items
            .iter()
            .map(|i| match i.str_value() {
                Some(v) => Ok((i.offset(), v.to_string())),
                None => Err(Invalid {
                    offset: i.offset(),
                    message: "spec.exclusionList holds something that is not a string".into(),
                }),
            })
            .collect::<Result<_, _>>()?,
        Some(n) => {
            return Err(Invalid {
                offset: n.offset(),
                message: "spec.exclusionList is not a list".into(),
            })
        }
    };
    let mut globs = Vec::new();
    for (offset, re) in patterns {
        match glob_of(&re) {
            Some(g) => globs.push(g),
            None => notes.push(Note {
                offset,
                message: format!("{label}: the exclusion {re:?} has no glob equivalent and is not honoured: add ignoreTags for this image in imagebump.yaml"),
            }),
        }
    }
    Ok(globs)
}

/// The glob matching exactly the tags a simple regular expression finds (`^.*\.sig$` →
/// `*.sig`, `^sha-` → `sha-*`); `None` for anything with more than literals, `.` and `.*`.
pub fn glob_of(re: &str) -> Option<String> {
    let (start, body) = match re.strip_prefix('^') {
        Some(b) => (true, b),
        None => (false, re),
    };
    let (end, body) = match body.strip_suffix('$') {
        Some(b) if !b.ends_with('\\') => (true, b),
        _ => (false, body),
    };
    let mut glob = String::new();
    if !start {
        glob.push('*');
    }
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' if chars.peek() == Some(&'*') => {
                chars.next();
                glob.push('*');
            }
            '.' => glob.push('?'),
            '\\' => match chars.next()? {
                e if e.is_ascii_punctuation() && !"*?[]{}!\\".contains(e) => glob.push(e),
                _ => return None,
            },
            c if c.is_alphanumeric() || "-_:@".contains(c) => glob.push(c),
            _ => return None,
        }
    }
    if !end {
        glob.push('*');
    }
    Some(glob)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_exclusions_become_globs() {
        assert_eq!(glob_of(DEFAULT_EXCLUSION).as_deref(), Some("*.sig"));
        assert_eq!(glob_of("^sha-").as_deref(), Some("sha-*"));
        assert_eq!(glob_of("-rc$").as_deref(), Some("*-rc"));
        assert_eq!(glob_of("^v1\\.2\\..$").as_deref(), Some("v1.2.?"));
        assert_eq!(glob_of("^[0-9]+$"), None);
        assert_eq!(glob_of("^(a|b)$"), None);
        assert_eq!(glob_of("x\\d"), None);
    }

    fn read_one(text: &str) -> (Result<ImageRepository, Invalid>, Vec<String>) {
        let docs = imagebump_yaml::parse_located(text).unwrap();
        let root = docs[0].root.as_ref().unwrap();
        let fields = Fields::new(root);
        let meta = Meta {
            name: "podinfo".into(),
            namespace: Some("flux-system".into()),
            file: "repo.yaml".into(),
            line: 1,
        };
        let mut notes = Vec::new();
        let r = read(&fields, meta, &mut notes);
        (r, notes.into_iter().map(|n| n.message).collect())
    }

    /// As in Flux's ImageRepository documentation.
    #[test]
    fn reads_the_image_and_notes_what_lives_in_the_cluster() {
        let (r, notes) = read_one(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: podinfo\n  namespace: flux-system\nspec:\n  image: 123456789000.dkr.ecr.us-east-2.amazonaws.com/podinfo\n  interval: 5m\n  provider: aws\n  secretRef:\n    name: regcred\n  exclusionList:\n    - \"^.*\\\\.sig$\"\n    - \"^[0-9]+$\"\n",
        );
        let r = r.unwrap();
        assert_eq!(
            r.image,
            "123456789000.dkr.ecr.us-east-2.amazonaws.com/podinfo"
        );
        assert_eq!(r.ignore_tags, ["*.sig"]);
        assert_eq!(notes.len(), 3, "{notes:#?}");
        assert!(
            notes[0].contains("spec.secretRef is not read"),
            "{}",
            notes[0]
        );
        assert!(notes[1].contains("spec.provider aws"), "{}", notes[1]);
        assert!(
            notes[2].contains("\"^[0-9]+$\" has no glob equivalent"),
            "{}",
            notes[2]
        );
    }

    #[test]
    fn an_image_flux_would_refuse_is_invalid() {
        let (r, _) = read_one("spec:\n  interval: 5m\n");
        assert_eq!(r.unwrap_err().message, "spec.image is required");
        let (r, _) = read_one("spec:\n  image: [a]\n");
        assert_eq!(r.unwrap_err().message, "spec.image is not a string");
        let (r, _) = read_one("spec:\n  image: ghcr.io/acme/-x\n");
        assert!(r.unwrap_err().message.starts_with("spec.image: "));
        let (r, notes) = read_one("spec:\n  image: nginx\n");
        assert_eq!(r.unwrap().ignore_tags, ["*.sig"]);
        assert!(notes.is_empty());
    }

    #[test]
    fn a_post_build_variable_is_read_and_noted() {
        let (r, notes) = read_one("spec:\n  image: ${IMAGE_URI}\n");
        assert_eq!(r.unwrap().image, "${IMAGE_URI}");
        assert_eq!(notes, ["ImageRepository flux-system/podinfo: spec.image ${IMAGE_URI} is a template, filled in at deploy time: the setters of its policies are left alone"]);
    }
}
