//! Chart archives: downloaded once per chart version per run, size-capped and checked
//! against their digest, never unpacked to disk or executed. Only the chart's own
//! `Chart.yaml` and `values.yaml` are read (not its templates, not its subcharts').

use std::io::Read;
use std::sync::Arc;

use super::{index, ChartName};
use crate::registry::manifest::sha256_digest;
use crate::registry::{Error, Registries};
use imagebump_model::name::ImageName;

/// The largest chart archive downloaded (the largest public charts are a few MiB).
pub const ARCHIVE_LIMIT: usize = 16 << 20;
/// The most read of the archive's unpacked bytes, and of one file in it.
const UNPACKED_LIMIT: u64 = 64 << 20;
const FILE_LIMIT: u64 = 4 << 20;
// Positions in a chart's default values are kept in 32 bits (discovery's slots).
const _: () = assert!(FILE_LIMIT <= u32::MAX as u64);

/// Helm's media type of the chart layer of an OCI chart.
pub const CHART_LAYER: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";

/// What imagebump reads of a chart version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartFiles {
    pub app_version: Option<String>,
    /// The chart's default values (empty when it has none).
    pub values: String,
}

/// Why a chart archive was not read.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("not a chart archive: {0}")]
    NotAnArchive(std::io::Error),
    #[error("not a chart archive: no Chart.yaml")]
    NoChartYaml,
    /// A file of the archive, by its path in it.
    #[error("{path}: {error}")]
    Unreadable { path: String, error: std::io::Error },
    #[error("{path}: larger than {} MiB", FILE_LIMIT >> 20)]
    TooLarge { path: String },
    #[error("Chart.yaml: {0}")]
    ChartYaml(imagebump_yaml::ParseError),
}

/// `<chart>/Chart.yaml` and `<chart>/values.yaml` of a `.tgz` chart archive.
pub fn read_archive(bytes: &[u8]) -> Result<ChartFiles, ArchiveError> {
    let gz = flate2::read::GzDecoder::new(bytes).take(UNPACKED_LIMIT);
    let mut archive = tar::Archive::new(gz);
    let entries = archive.entries().map_err(ArchiveError::NotAnArchive)?;
    let (mut chart, mut values) = (None, None);
    for entry in entries {
        let mut entry = entry.map_err(ArchiveError::NotAnArchive)?;
        let path = entry
            .path()
            .map_err(ArchiveError::NotAnArchive)?
            .to_string_lossy()
            .to_string();
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let wanted = match parts.as_slice() {
            [_, "Chart.yaml"] => &mut chart,
            [_, "values.yaml"] => &mut values,
            _ => continue,
        };
        if wanted.is_some() || !entry.header().entry_type().is_file() {
            continue;
        }
        let mut text = String::new();
        (&mut entry)
            .take(FILE_LIMIT.saturating_add(1))
            .read_to_string(&mut text)
            .map_err(|error| ArchiveError::Unreadable {
                path: path.clone(),
                error,
            })?;
        if text.len() as u64 > FILE_LIMIT {
            return Err(ArchiveError::TooLarge { path });
        }
        *wanted = Some(text);
    }
    let chart = chart.ok_or(ArchiveError::NoChartYaml)?;
    let meta: serde_json::Value =
        imagebump_yaml::from_str(&chart).map_err(ArchiveError::ChartYaml)?;
    let app_version = match meta.get("appVersion") {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(v) if !v.is_null() => Some(v.to_string()),
        _ => None,
    };
    Ok(ChartFiles {
        app_version,
        values: values.unwrap_or_default(),
    })
}

/// Download version `version` of `chart` (its archive is fetched once per run) and read it.
pub async fn fetch(
    registries: &Registries,
    chart: &ChartName,
    version: &str,
    credentials: Option<&str>,
) -> Result<ChartFiles, Error> {
    let (url, bytes) = match super::classic_repository(&chart.written) {
        Some(repo) => classic(registries, chart, version, credentials, repo).await?,
        None => oci(registries, chart, version, credentials).await?,
    };
    read_archive(&bytes).map_err(|e| Error::Invalid {
        url,
        reason: e.to_string(),
    })
}

/// The archive of a classic repository's chart version: the index's first URL (relative
/// to the repository, or absolute), checked against the index's digest.
async fn classic(
    registries: &Registries,
    chart: &ChartName,
    version: &str,
    credentials: Option<&str>,
    repo: &str,
) -> Result<(String, Arc<Vec<u8>>), Error> {
    let idx = index::fetch(registries, &chart.image, credentials, repo).await?;
    let name = index::chart_of(&chart.image);
    let index_url = format!("{repo}/index.yaml");
    let invalid = |reason: String| Error::Invalid {
        url: index_url.clone(),
        reason,
    };
    let entry = idx
        .entries
        .get(name)
        .and_then(|list| list.iter().find(|e| e.version == version))
        .ok_or_else(|| invalid(format!("the repository has no chart {name} {version}")))?;
    let first = entry
        .urls
        .first()
        .ok_or_else(|| invalid(format!("{name} {version} has no archive URL")))?;
    let url = if first.starts_with("https://") || first.starts_with("http://") {
        first.clone()
    } else {
        format!("{repo}/{}", first.trim_start_matches('/'))
    };
    if let Some(bytes) = registries.fetched(&url, credentials) {
        return Ok((url, bytes?));
    }
    let client = registries.client_with(&chart.image, credentials)?;
    let bytes = client
        .fetch_file(&url, ARCHIVE_LIMIT)
        .await
        .and_then(|bytes| checked(&url, bytes, entry.digest.as_deref()))
        .map(Arc::new);
    registries.keep_fetched(&url, credentials, bytes.clone());
    Ok((url, bytes?))
}

/// The archive `bytes` from `url`, if they hash to the index's digest (when it has one).
fn checked(url: &str, bytes: Vec<u8>, want: Option<&str>) -> Result<Vec<u8>, Error> {
    if let Some(want) = want.filter(|d| !d.is_empty()) {
        let got = sha256_digest(&bytes);
        if got.trim_start_matches("sha256:") != want.trim_start_matches("sha256:") {
            return Err(Error::Invalid {
                url: url.to_string(),
                reason: format!("the archive hashes to {got}, the index says {want}"),
            });
        }
    }
    Ok(bytes)
}

/// The chart layer of an OCI chart's manifest, fetched by its digest (and checked).
async fn oci(
    registries: &Registries,
    chart: &ChartName,
    version: &str,
    credentials: Option<&str>,
) -> Result<(String, Arc<Vec<u8>>), Error> {
    let (url, manifest) = oci_manifest(registries, &chart.image, version, credentials).await?;
    let digest = manifest
        .get("layers")
        .and_then(serde_json::Value::as_array)
        .and_then(|layers| {
            layers.iter().find(|l| {
                l.get("mediaType").and_then(serde_json::Value::as_str) == Some(CHART_LAYER)
            })
        })
        .and_then(|l| l.get("digest"))
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| Error::Invalid {
            url,
            reason: format!("not a Helm chart: no {CHART_LAYER} layer"),
        })?
        .to_string();
    oci_blob(registries, &chart.image, &digest, credentials).await
}

/// Version `version` of the OCI chart `image`: its manifest as JSON, and where it was read.
/// Asked once per run (chart defaults and appVersions read the same one), kept with the
/// other files of the run.
pub async fn oci_manifest(
    registries: &Registries,
    image: &ImageName,
    version: &str,
    credentials: Option<&str>,
) -> Result<(String, serde_json::Value), Error> {
    // Helm writes `+` of a version as `_` in a tag.
    let tag = version.replace('+', "_");
    let key = format!("oci://{image}:{tag}");
    let bytes = match registries.fetched(&key, credentials) {
        Some(bytes) => bytes?,
        None => {
            let client = registries.client_with(image, credentials)?;
            let fetched =
                (client.manifest_bytes(&image.repository, &tag).await).map(|f| Arc::new(f.body));
            registries.keep_fetched(&key, credentials, fetched.clone());
            fetched?
        }
    };
    let manifest = serde_json::from_slice(&bytes).map_err(|e| Error::Invalid {
        url: key.clone(),
        reason: format!("manifest: {e}"),
    })?;
    Ok((key, manifest))
}

/// Blob `digest` of the OCI chart `image` (its archive or its config), asked once per run.
pub async fn oci_blob(
    registries: &Registries,
    image: &ImageName,
    digest: &str,
    credentials: Option<&str>,
) -> Result<(String, Arc<Vec<u8>>), Error> {
    let key = format!("oci://{image}@{digest}");
    if let Some(bytes) = registries.fetched(&key, credentials) {
        return Ok((key, bytes?));
    }
    let client = registries.client_with(image, credentials)?;
    let bytes = client
        .config_bytes(&image.repository, digest)
        .await
        .map(Arc::new);
    registries.keep_fetched(&key, credentials, bytes.clone());
    Ok((key, bytes?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tgz(files: &[(&str, &str)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, text) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(text.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder
                .append_data(&mut header, path, text.as_bytes())
                .unwrap();
        }
        let tar = builder.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &tar).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn only_the_charts_own_chart_yaml_and_values_are_read() {
        let bytes = tgz(&[
            ("web/charts/sub/values.yaml", "image: {tag: sub}\n"),
            (
                "web/Chart.yaml",
                "apiVersion: v2\nname: web\nversion: 1.0.0\nappVersion: 1.25.0\n",
            ),
            (
                "web/values.yaml",
                "image: {repository: nginx, tag: 1.25.0}\n",
            ),
            ("web/templates/x.yaml", "{{ .Values }}"),
        ]);
        let files = read_archive(&bytes).unwrap();
        assert_eq!(files.app_version.as_deref(), Some("1.25.0"));
        assert_eq!(files.values, "image: {repository: nginx, tag: 1.25.0}\n");
    }

    #[test]
    fn what_is_not_a_chart_is_an_error() {
        assert!(read_archive(b"not gzip").is_err());
        let bytes = tgz(&[("web/values.yaml", "a: 1\n")]);
        assert_eq!(
            read_archive(&bytes).unwrap_err().to_string(),
            "not a chart archive: no Chart.yaml"
        );
        let big = "a".repeat((FILE_LIMIT + 1) as usize);
        let bytes = tgz(&[("web/Chart.yaml", "name: web\n"), ("web/values.yaml", &big)]);
        assert_eq!(
            read_archive(&bytes).unwrap_err().to_string(),
            "web/values.yaml: larger than 4 MiB"
        );
    }
}
