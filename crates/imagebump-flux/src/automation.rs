//! `ImageUpdateAutomation`: which directory of the repository Flux updates
//! (`spec.update.path`, the root when unset) with the policies of its own namespace. Its
//! git settings (`sourceRef`, `git.commit`, `git.push`) are replaced by imagebump's own
//! delivery (`--write`, pull requests, `delivery: push`).

use super::{Fields, Invalid, Meta, Note};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Automation {
    pub meta: Meta,
    /// `spec.update.path` relative to the repository root, `/`-separated, without `.`
    /// and `..` (Flux joins it under the root the same way); empty for the root.
    pub path: String,
}

impl Automation {
    /// Does Flux's walk of `spec.update.path` reach `file` (relative to the root)?
    pub fn covers(&self, file: &str) -> bool {
        self.path.is_empty()
            || file == self.path
            || file
                .strip_prefix(self.path.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
    }
}

pub fn read(fields: &Fields, meta: Meta, notes: &mut Vec<Note>) -> Result<Automation, Invalid> {
    let label = meta.id("ImageUpdateAutomation");
    match fields.string(&["spec", "update", "strategy"])?.as_deref() {
        None | Some("Setters") => {}
        Some(other) => {
            return Err(Invalid {
                offset: fields.offset(&["spec", "update", "strategy"]),
                message: format!(
                    "spec.update.strategy {other:?} is not Setters, the only strategy Flux has"
                ),
            })
        }
    }
    if fields.node(&["spec", "policySelector"]).is_some() {
        notes.push(Note {
            offset: fields.offset(&["spec", "policySelector"]),
            message: format!("{label}: spec.policySelector is not read: every ImagePolicy of its namespace that a setter in its path names applies"),
        });
    }
    let path = fields
        .string(&["spec", "update", "path"])?
        .unwrap_or_default();
    Ok(Automation {
        meta,
        path: normalise(&path),
    })
}

/// `./clusters/prod/` → `clusters/prod`; `..` never climbs above the root.
pub fn normalise(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn automation(spec: &str) -> (Result<Automation, Invalid>, Vec<String>) {
        let text = format!("apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n{spec}");
        let docs = imagebump_yaml::parse_located(&text).unwrap();
        let fields = Fields::new(docs[0].root.as_ref().unwrap());
        let meta = Meta {
            name: "flux-system".into(),
            namespace: Some("flux-system".into()),
            file: "a.yaml".into(),
            line: 1,
        };
        let mut notes = Vec::new();
        let a = read(&fields, meta, &mut notes);
        (a, notes.into_iter().map(|n| n.message).collect())
    }

    /// As Flux's image automation guide writes it.
    #[test]
    fn reads_the_update_path() {
        let (a, notes) = automation("  interval: 30m\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  git:\n    checkout:\n      ref:\n        branch: main\n    commit:\n      author:\n        email: fluxcdbot@users.noreply.github.com\n        name: fluxcdbot\n      messageTemplate: '{{range .Changed.Changes}}{{print .OldValue}} -> {{println .NewValue}}{{end}}'\n    push:\n      branch: main\n  update:\n    path: ./clusters/my-cluster\n    strategy: Setters\n");
        let a = a.unwrap();
        assert!(notes.is_empty());
        assert_eq!(a.path, "clusters/my-cluster");
        assert!(a.covers("clusters/my-cluster/podinfo-deployment.yaml"));
        assert!(!a.covers("clusters/my-cluster-2/podinfo-deployment.yaml"));
        assert!(!a.covers("apps/podinfo.yaml"));
        let (a, _) = automation("  update:\n    strategy: Setters\n");
        assert!(a.unwrap().covers("anything/at/all.yaml"));
    }

    #[test]
    fn paths_stay_in_the_repository() {
        assert_eq!(normalise("./"), "");
        assert_eq!(normalise("/apps//dev/"), "apps/dev");
        assert_eq!(normalise("../../etc"), "etc");
        assert_eq!(normalise("apps/../infra/./x"), "infra/x");
    }

    #[test]
    fn other_strategies_are_invalid_and_selectors_noted() {
        let (a, _) = automation("  update:\n    strategy: Kustomize\n");
        assert_eq!(
            a.unwrap_err().message,
            "spec.update.strategy \"Kustomize\" is not Setters, the only strategy Flux has"
        );
        let (_, notes) = automation("  policySelector:\n    matchLabels:\n      app: podinfo\n");
        assert_eq!(notes.len(), 1);
    }
}
