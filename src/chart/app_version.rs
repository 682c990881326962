//! The `appVersion` a chart version declares, shown with a chart bump (pull-request body,
//! dry-run table, JSON report) so that a reviewer sees which release of the application
//! the new chart installs. It is read from the classic repository's `index.yaml` that the
//! run already read to list the chart's versions: no request of its own. An OCI chart's
//! appVersion is in each version's config blob, which would cost a manifest and a blob
//! per version: it is not shown.

use std::collections::HashMap;

use serde::Serialize;

use super::index::{self, Index};
use crate::registry::Registries;

/// The appVersion before and after a chart bump (`None`: the index entry has none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppVersionChange {
    pub from: Option<String>,
    pub to: Option<String>,
}

impl std::fmt::Display for AppVersionChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".into());
        if self.from == self.to {
            write!(f, "appVersion {} (unchanged)", show(&self.to))
        } else {
            write!(f, "appVersion {} → {}", show(&self.from), show(&self.to))
        }
    }
}

/// The indexes of the run's classic repositories, each parsed at most once.
pub struct AppVersions<'a> {
    registries: &'a Registries,
    indexes: HashMap<String, Option<Index>>,
}

impl<'a> AppVersions<'a> {
    pub fn new(registries: &'a Registries) -> Self {
        AppVersions {
            registries,
            indexes: HashMap::new(),
        }
    }

    /// The appVersion change of the chart written as `written` (its reference as the
    /// manifests have it) moving from version `from` to `to`; `None` for an OCI chart, a
    /// repository whose index this run did not read, or versions it declares no appVersion
    /// for.
    pub fn change(&mut self, written: &str, from: &str, to: &str) -> Option<AppVersionChange> {
        let repo = super::classic_repository(written)?;
        let chart = written.rsplit('/').next()?;
        let url = format!("{repo}/index.yaml");
        let registries = self.registries;
        let index = self
            .indexes
            .entry(url.clone())
            .or_insert_with(|| {
                let body = registries.fetched_any(&url)?;
                index::parse(&url, &body).ok()
            })
            .as_ref()?;
        let list = index.entries.get(chart)?;
        let app_version = |v: &str| {
            list.iter()
                .find(|e| e.version == v)
                .and_then(|e| e.app_version.clone())
        };
        let change = AppVersionChange {
            from: app_version(from),
            to: app_version(to),
        };
        (change.from.is_some() || change.to.is_some()).then_some(change)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_says_both_versions_or_that_it_is_unchanged() {
        let c = AppVersionChange {
            from: Some("1.10.0".into()),
            to: Some("1.11.0".into()),
        };
        assert_eq!(c.to_string(), "appVersion 1.10.0 → 1.11.0");
        let c = AppVersionChange {
            from: Some("2".into()),
            to: Some("2".into()),
        };
        assert_eq!(c.to_string(), "appVersion 2 (unchanged)");
        let c = AppVersionChange {
            from: None,
            to: Some("3".into()),
        };
        assert_eq!(c.to_string(), "appVersion (none) → 3");
    }

    #[test]
    fn read_from_the_index_the_run_read() {
        let registries = Registries::new(Vec::new()).unwrap();
        let url = "https://charts.example.com/stable/index.yaml";
        let index = "entries:\n  web:\n  - version: 1.1.0\n    appVersion: \"1.26.0\"\n  - version: 1.0.0\n    appVersion: \"1.25.0\"\n  - version: 0.9.0\n";
        registries.keep_fetched(
            url,
            None,
            Ok(std::sync::Arc::new(index.as_bytes().to_vec())),
        );
        let mut versions = AppVersions::new(&registries);
        let web = "https://charts.example.com/stable/web";
        assert_eq!(
            versions.change(web, "1.0.0", "1.1.0").unwrap().to_string(),
            "appVersion 1.25.0 → 1.26.0"
        );
        assert_eq!(
            versions.change(web, "0.9.0", "1.1.0").unwrap().to_string(),
            "appVersion (none) → 1.26.0"
        );
        // No appVersion at all, an OCI chart, a repository the run did not read.
        assert_eq!(versions.change(web, "0.9.0", "0.9.0"), None);
        assert_eq!(
            versions.change("oci://ghcr.io/acme/web", "1.0.0", "1.1.0"),
            None
        );
        assert_eq!(
            versions.change("https://other.example.com/web", "1.0.0", "1.1.0"),
            None
        );
    }
}
