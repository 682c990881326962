//! The `appVersion` a chart version declares, shown with a chart bump (pull-request body,
//! dry-run table, JSON report) so that a reviewer sees which release of the application
//! the new chart installs. It is read from the classic repository's `index.yaml` that the
//! run already read to list the chart's versions: no request of its own. An OCI chart's
//! appVersion is in each version's config blob (Helm's Chart.yaml as JSON): a manifest and
//! a blob for each distinct version a bump moves from or to ([`oci`]), never for the other
//! versions of the listing.

use std::collections::HashMap;

use imagebump_model::name::ImageName;
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

/// The entries of each chart of the run's classic repositories (by index URL and chart),
/// each parsed at most once, and the appVersions of OCI chart versions fetched by [`oci`].
pub struct AppVersions<'a> {
    registries: &'a Registries,
    indexes: HashMap<(String, String), Option<Index>>,
    oci: OciAppVersions,
}

/// The appVersion of OCI chart versions, by (chart as written, version); `None`: the
/// version declares none, or it could not be read.
pub type OciAppVersions = HashMap<(String, String), Option<String>>;

/// An OCI chart version whose appVersion is wanted: the chart as written, its name, the
/// credentials its versions are listed with, a version.
pub type OciVersion = (String, ImageName, Option<String>, String);

/// The appVersions of `versions`: per distinct version, its manifest and the config blob it
/// names (read once per run, shared with the chart-defaults download), `concurrency` at a
/// time. A version that cannot be read has none (the bump is still shown, without it).
pub async fn oci(
    registries: &Registries,
    versions: impl IntoIterator<Item = OciVersion>,
    concurrency: usize,
) -> OciAppVersions {
    use futures::stream::{self, StreamExt};
    use std::collections::BTreeMap;
    // One read per chart version, however many ways the manifests write the chart.
    type Wanted = BTreeMap<(String, Option<String>, String), (ImageName, Vec<String>)>;
    let mut distinct = Wanted::new();
    for (written, name, credentials, version) in versions {
        let entry = distinct.entry((name.to_string(), credentials, version));
        entry.or_insert_with(|| (name, Vec::new())).1.push(written);
    }
    let found: Vec<_> = stream::iter(distinct)
        .map(|((_, credentials, version), (name, written))| async move {
            let found = oci_app_version(registries, &name, credentials.as_deref(), &version);
            let found = found.await;
            if let Err(e) = &found {
                tracing::debug!("appVersion of {name} {version}: {e}");
            }
            (written, version, found.ok().flatten())
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let mut all = OciAppVersions::new();
    for (written, version, app_version) in found {
        for w in written {
            all.insert((w, version.clone()), app_version.clone());
        }
    }
    all
}

/// Why an OCI chart version's appVersion was not read (logged, not reported).
#[derive(Debug, thiserror::Error)]
enum OciAppVersionError {
    #[error(transparent)]
    Registry(#[from] crate::registry::Error),
    #[error("the manifest names no config")]
    NoConfig,
    #[error("chart config: {0}")]
    Config(serde_json::Error),
}

/// Version `version` of the OCI chart `name`: its manifest's config blob, read as Helm
/// writes it (the chart's metadata as JSON).
async fn oci_app_version(
    registries: &Registries,
    name: &ImageName,
    credentials: Option<&str>,
    version: &str,
) -> Result<Option<String>, OciAppVersionError> {
    let (_, manifest) =
        super::archive::oci_manifest(registries, name, version, credentials).await?;
    let digest = manifest
        .pointer("/config/digest")
        .and_then(serde_json::Value::as_str)
        .ok_or(OciAppVersionError::NoConfig)?;
    let (_, config) = super::archive::oci_blob(registries, name, digest, credentials).await?;
    let config: serde_json::Value =
        serde_json::from_slice(&config).map_err(OciAppVersionError::Config)?;
    Ok(config
        .get("appVersion")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string))
}

impl<'a> AppVersions<'a> {
    pub fn new(registries: &'a Registries, oci: OciAppVersions) -> Self {
        AppVersions {
            registries,
            indexes: HashMap::new(),
            oci,
        }
    }

    /// The appVersion change of the chart written as `written` (its reference as the
    /// manifests have it) moving from version `from` to `to`; `None` for a repository whose
    /// index this run did not read, an OCI version [`oci`] did not read, or versions that
    /// declare no appVersion.
    pub fn change(&mut self, written: &str, from: &str, to: &str) -> Option<AppVersionChange> {
        let Some(repo) = super::classic_repository(written) else {
            let of = |v: &str| {
                let key = (written.to_string(), v.to_string());
                self.oci.get(&key).cloned().flatten()
            };
            let change = AppVersionChange {
                from: of(from),
                to: of(to),
            };
            return (change.from.is_some() || change.to.is_some()).then_some(change);
        };
        let chart = written.rsplit('/').next()?;
        let url = format!("{repo}/index.yaml");
        let registries = self.registries;
        let index = self
            .indexes
            .entry((url.clone(), chart.to_string()))
            .or_insert_with(|| {
                let body = registries.fetched_any(&url)?;
                index::parse(&url, &body, &[chart]).ok()
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
        let mut versions = AppVersions::new(&registries, OciAppVersions::new());
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
